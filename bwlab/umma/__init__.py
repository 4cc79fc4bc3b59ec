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
* `blockscale`  — the block-scaled kinds (kind::mxf8f6f4, mxf4, mxf4nvf4): their instruction descriptor and
  rules (PTX ISA Tables 46, 47, 54, 55), the operands' SMEM forms, `tcgen05_mma_block_scaled`.
* `scales`      — the scale factors' trip: CUTLASS's GMEM/SMEM layouts, `tcgen05_cp` into TMEM, where the
  MMA reads them; `blockscaled_case` — quantising to MXFP8/NVFP4 and cuda_src/teach_blockscaled.cu
  (notebook 09 draws them: `bwlab.lowprec`).
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

# What the notebooks, the docs and the command lines use from the package's top, and nothing else
# (tests/test_interface.py reads them).
__all__ = ["BLOCK_KINDS", "block_of", "BlockScaledCase", "canonical_layout", "cta_pair_mma", "d_tmem_layout",
           "decode_block_scaled_idesc", "decode_instr_desc", "decode_smem_desc", "dequantize", "descriptor_widget",
           "edit_descs", "format_fields", "instr_desc_widget", "layout_cases", "layout_survey",
           "make_block_scaled_idesc", "make_instr_desc", "make_smem_desc", "plot_canonical_layouts",
           "plot_core_matrices", "plot_d_tmem_layouts", "plot_k_steps", "plot_smem_layout", "quantize",
           "read_tmem_scales", "run_teach_wgmma", "run_where_possible", "sf_to_layout", "SHAPES",
           "smem_desc_for_tile", "swizzle_with_base_offset", "tcgen05_cp", "tile_desc", "tma_fed_mma", "UmmaCase",
           "wgmma_d_fragment", "WgmmaCase"]

# The one lazy mechanism: the names of __all__ not imported above, and the other names code written
# against the package's top still reaches, are imported from their module on first use (the
# pictures load matplotlib only then). New code imports a name from its module.
from ..util import names_elsewhere as _names_elsewhere  # noqa: E402

_ELSEWHERE = {
    "bwlab.umma.blockscale": "BLOCK_KINDS block_of decode_block_scaled_idesc make_block_scaled_idesc",
    "bwlab.umma.blockscaled_case": "BlockScaledCase dequantize quantize run_where_possible",
    "bwlab.umma.canonical": ("atom_shape CanonicalLayout elem_bytes instr_k MAJORS OPERAND_TYPES "
                             "swizzle_with_base_offset"),
    "bwlab.umma.case": "operand_hint umma_model wgmma_model",
    "bwlab.umma.descriptors": ("ARCHS descriptor_addresses edit_descs format_fields gmma_desc_for_tile "
                               "LAYOUT_CODES_SM100 LAYOUT_CODES_SM90 read_operand smem_desc_for_tile SmemDesc "
                               "tile_desc"),
    "bwlab.umma.hybrid": "cta_pair_mma tma_fed_mma TmaFedMma",
    "bwlab.umma.idesc": "InstrDesc kind_of KINDS MmaRuleError require_mma_shape",
    "bwlab.umma.model": ("CtaState d_from_words d_tmem_layout mma_operands operand_values SMEM_BYTES "
                         "tcgen05_commit tcgen05_mma TmemLayout wgmma_d_fragment wgmma_mma_async WGMMA_NS "
                         "words_from_d"),
    "bwlab.umma.numerics": "fused_mma mma_numerics MmaInstr parse_instr",
    "bwlab.umma.pictures": ("descriptor_widget instr_desc_widget plot_canonical_layouts plot_case "
                            "plot_core_matrices plot_d_tmem_layout plot_d_tmem_layouts plot_k_steps "
                            "plot_smem_layout smem_chunk_map"),
    "bwlab.umma.recorded": "layout_cases",
    "bwlab.umma.rules": "LAYOUTS legal_mma_configs require_mma require_mma_cute SHAPES",
    "bwlab.umma.runner": ("launch_wgmma run_teach_umma run_umma run_wgmma TEACH_SMEM_BYTES UMMA_BARRIERS "
                          "WGMMA_BARRIERS"),
    "bwlab.umma.scales": "read_tmem_scales sf_to_layout tcgen05_cp",
    "bwlab.umma.survey": "layout_survey LayoutSurvey OPERAND_LAYOUTS wgmma_cases",
}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
