"""Stage 3 — UMMA: `tcgen05.mma`, its two descriptors, the canonical SMEM layouts, and a model of it
that executes from raw shared-memory bytes, validated on the H100 through `wgmma`.

One thread issues `tcgen05.mma.cta_group::1.kind::f16 [d_tmem], a_desc, b_desc, idesc, p`; the tensor
core reads A and B from shared memory through two 64-bit SMEM descriptors, takes types, shape and
majors from the 32-bit instruction descriptor, and writes D into Tensor Memory. Completion is
observed through `tcgen05.commit` to an mbarrier.

The files, in the order of the data path:

* `canonical`   — the canonical layouts (core matrix, swizzle atom, tile): PTX ISA "Shared Memory
  Matrix Layout" (wgmma and tcgen05); CuTe mma_traits_sm90_gmma.hpp / mma_traits_sm100.hpp
  (`Layout_{K,MN}_{INTER,SW32,SW64,SW128}_Atom`, `Layout_MN_SW128_32B_Atom`).
* `descriptors` — the 64-bit SMEM matrix descriptor (SM90 and SM100 encodings) and the reader that
  walks it: PTX ISA wgmma "Matrix Descriptor Format", tcgen05 "Shared Memory Descriptor"; CuTe
  include/cute/arch/mma_sm90_desc.hpp, mma_sm100_desc.hpp.
* `rules`       — the tcgen05.mma rule tables, one per PTX ISA table (Instruction descriptor, Matrix
  Shape, Transpose and Negate / Shared Memory Matrix Layouts), CuTe's stricter rules kept apart.
* `idesc`       — the 32-bit instruction descriptor: PTX ISA tcgen05 "Instruction descriptor"; CuTe
  `UMMA::make_instr_desc` (include/cute/arch/mma_sm100_desc.hpp).
* `model`       — `tcgen05_mma`, `tcgen05_commit`, where D lands in TMEM (`d_tmem_layout`, PTX "Data
  path layout organization"; CuTe mma_traits_sm100_frag.hpp), and `wgmma_mma_async` with its
  register fragment.
* `numerics`    — one MMA instruction's arithmetic, bit for bit (`mma_numerics`): the fused block step
  shared by wgmma and every tcgen05.mma kind, block-scaled ones included (docs/numerics.md).
* `case`        — `UmmaCase` (sm_100) and `WgmmaCase` (sm_90): `model()`, `run()`, `check()`, `show()`.
* `runner`      — the GPU side: the teaching kernels cuda_src/teach_umma.cu and teach_wgmma.cu, and the
  validation kernels cuda_src/umma_sm100.cu and wgmma_sm90.cu.
* `hybrid`      — TMA-loaded operands multiplied by the model; a CTA pair (`cta_group::2`).
* `survey`      — every pair of operand layouts for A and B through the rule tables and the model.
* `pictures`    — figures and widgets of notebook 03.
* `exercises`   — the checks of notebook 03's graded exercises.

Validation and benchmarks live in `bwlab/checks/umma.py` (`python -m bwlab.validate wgmma`,
`python -m bwlab.bench umma_model`).
"""

from .canonical import canonical_layout
from .case import UmmaCase, WgmmaCase
from .descriptors import decode_smem_desc, make_smem_desc
from .idesc import decode_instr_desc, make_instr_desc
from .runner import run_teach_wgmma
from . import canonical, descriptors, idesc, model, rules  # noqa: F401
from . import canonical, descriptors, idesc, model, rules  # noqa: F401
from . import canonical, descriptors, idesc, model, rules  # noqa: F401
from . import canonical, descriptors, idesc, model, rules  # noqa: F401
from . import canonical, descriptors, idesc, model, rules  # noqa: F401

# What the notebooks, the docs and the command lines use from the package's top, and nothing else
# (tests/test_interface.py reads them).
__all__ = ["canonical_layout", "cta_pair_mma", "d_tmem_layout", "decode_instr_desc", "decode_smem_desc",
           "descriptor_widget", "edit_descs", "format_fields", "instr_desc_widget", "layout_survey",
           "make_instr_desc", "make_smem_desc", "plot_canonical_layouts", "plot_core_matrices",
           "plot_d_tmem_layouts", "plot_k_steps", "plot_smem_layout", "run_teach_wgmma", "smem_desc_for_tile",
           "swizzle_with_base_offset", "tile_desc", "tma_fed_mma", "UmmaCase", "wgmma_d_fragment", "WgmmaCase"]

# The one lazy mechanism: the names of __all__ not imported above, and the other names code written
# against the package's top still reaches, are imported from their module on first use (the
# pictures load matplotlib only then). New code imports a name from its module.
from ..util import names_elsewhere as _names_elsewhere  # noqa: E402

_ELSEWHERE = {
    "ARCHS": "bwlab.umma.descriptors", "atom_shape": "bwlab.umma.canonical",
    "CanonicalLayout": "bwlab.umma.canonical", "cta_pair_mma": "bwlab.umma.hybrid",
    "CtaState": "bwlab.umma.model", "d_from_words": "bwlab.umma.model", "d_tmem_layout": "bwlab.umma.model",
    "descriptor_addresses": "bwlab.umma.descriptors", "descriptor_widget": "bwlab.umma.pictures",
    "edit_descs": "bwlab.umma.descriptors", "elem_bytes": "bwlab.umma.canonical",
    "format_fields": "bwlab.umma.descriptors", "fused_mma": "bwlab.umma.numerics",
    "gmma_desc_for_tile": "bwlab.umma.descriptors", "instr_desc_widget": "bwlab.umma.pictures",
    "instr_k": "bwlab.umma.canonical", "InstrDesc": "bwlab.umma.idesc", "kind_of": "bwlab.umma.idesc",
    "KINDS": "bwlab.umma.idesc", "launch_wgmma": "bwlab.umma.runner",
    "LAYOUT_CODES_SM100": "bwlab.umma.descriptors", "LAYOUT_CODES_SM90": "bwlab.umma.descriptors",
    "layout_survey": "bwlab.umma.survey", "LAYOUTS": "bwlab.umma.rules", "LayoutSurvey": "bwlab.umma.survey",
    "legal_mma_configs": "bwlab.umma.rules", "MAJORS": "bwlab.umma.canonical",
    "mma_numerics": "bwlab.umma.numerics", "mma_operands": "bwlab.umma.model",
    "MmaInstr": "bwlab.umma.numerics", "MmaRuleError": "bwlab.umma.idesc", "operand_hint": "bwlab.umma.case",
    "OPERAND_LAYOUTS": "bwlab.umma.survey", "OPERAND_TYPES": "bwlab.umma.canonical",
    "operand_values": "bwlab.umma.model", "parse_instr": "bwlab.umma.numerics",
    "plot_canonical_layouts": "bwlab.umma.pictures", "plot_case": "bwlab.umma.pictures",
    "plot_core_matrices": "bwlab.umma.pictures", "plot_d_tmem_layout": "bwlab.umma.pictures",
    "plot_d_tmem_layouts": "bwlab.umma.pictures", "plot_k_steps": "bwlab.umma.pictures",
    "plot_smem_layout": "bwlab.umma.pictures", "read_operand": "bwlab.umma.descriptors",
    "require_mma": "bwlab.umma.rules", "require_mma_cute": "bwlab.umma.rules",
    "require_mma_shape": "bwlab.umma.idesc", "run_teach_umma": "bwlab.umma.runner",
    "run_umma": "bwlab.umma.runner", "run_wgmma": "bwlab.umma.runner", "SMEM_BYTES": "bwlab.umma.model",
    "smem_chunk_map": "bwlab.umma.pictures", "smem_desc_for_tile": "bwlab.umma.descriptors",
    "SmemDesc": "bwlab.umma.descriptors", "swizzle_with_base_offset": "bwlab.umma.canonical",
    "tcgen05_commit": "bwlab.umma.model", "tcgen05_mma": "bwlab.umma.model",
    "TEACH_SMEM_BYTES": "bwlab.umma.runner", "tile_desc": "bwlab.umma.descriptors",
    "tma_fed_mma": "bwlab.umma.hybrid", "TmaFedMma": "bwlab.umma.hybrid", "TmemLayout": "bwlab.umma.model",
    "UMMA_BARRIERS": "bwlab.umma.runner", "umma_model": "bwlab.umma.case",
    "WGMMA_BARRIERS": "bwlab.umma.runner", "wgmma_cases": "bwlab.umma.survey",
    "wgmma_d_fragment": "bwlab.umma.model", "wgmma_mma_async": "bwlab.umma.model",
    "wgmma_model": "bwlab.umma.case", "WGMMA_NS": "bwlab.umma.model", "words_from_d": "bwlab.umma.model",
}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
