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
from . import canonical, descriptors, idesc, model, rules  # noqa: F401
from .canonical import (MAJORS, OPERAND_TYPES, CanonicalLayout, atom_shape, canonical_layout, elem_bytes,
                        instr_k, swizzle_with_base_offset)
from .case import UmmaCase, WgmmaCase, operand_hint, umma_model, wgmma_cases, wgmma_model
from .descriptors import (ARCHS, LAYOUT_CODES_SM90, LAYOUT_CODES_SM100, SmemDesc, decode_smem_desc,
                          descriptor_addresses, edit_descs, format_fields, gmma_desc_for_tile, make_smem_desc,
                          read_operand, smem_desc_for_tile, tile_desc)
from .hybrid import TmaFedMma, cta_pair_mma, tma_fed_mma
from .idesc import KINDS, InstrDesc, MmaRuleError, check_mma_shape, decode_instr_desc, kind_of, make_instr_desc
from .model import (SMEM_BYTES, WGMMA_NS, CtaState, TmemLayout, d_from_words, d_tmem_layout, mma_operands,
                    operand_values, tcgen05_commit, tcgen05_mma, wgmma_d_fragment, wgmma_mma_async, words_from_d)
from .pictures import (descriptor_widget, instr_desc_widget, plot_canonical_layouts, plot_case, plot_core_matrices,
                       plot_d_tmem_layout, plot_d_tmem_layouts, plot_k_steps, plot_smem_layout, smem_chunk_map)
from .rules import LAYOUTS, check_mma, check_mma_cute, legal_mma_configs
from .survey import OPERAND_LAYOUTS, LayoutSurvey, layout_survey
from .runner import (TEACH_SMEM_BYTES, UMMA_BARRIERS, WGMMA_BARRIERS, launch_wgmma, run_teach_umma,
                     run_teach_wgmma, run_umma, run_wgmma)

__all__ = [
    # layouts and descriptors
    "MAJORS", "OPERAND_TYPES", "CanonicalLayout", "canonical_layout", "atom_shape", "elem_bytes", "instr_k",
    "swizzle_with_base_offset", "ARCHS", "LAYOUT_CODES_SM100", "LAYOUT_CODES_SM90", "SmemDesc",
    "make_smem_desc", "decode_smem_desc", "tile_desc", "smem_desc_for_tile", "gmma_desc_for_tile",
    "descriptor_addresses", "read_operand", "format_fields", "edit_descs",
    # instruction descriptor
    "KINDS", "kind_of", "check_mma_shape", "InstrDesc", "MmaRuleError", "make_instr_desc", "decode_instr_desc",
    # the model
    "SMEM_BYTES", "TmemLayout", "d_tmem_layout", "operand_values", "d_from_words", "words_from_d", "CtaState", "mma_operands",
    "tcgen05_mma", "tcgen05_commit", "WGMMA_NS", "wgmma_mma_async", "wgmma_d_fragment",
    # cases, model/run pairs
    "UmmaCase", "WgmmaCase", "umma_model", "run_umma", "wgmma_model", "run_wgmma", "launch_wgmma",
    "wgmma_cases", "operand_hint", "UMMA_BARRIERS", "WGMMA_BARRIERS",
    # the teaching kernels (cuda_src/teach_wgmma.cu, teach_umma.cu)
    "run_teach_wgmma", "run_teach_umma", "TEACH_SMEM_BYTES",
    # compositions and pictures
    "TmaFedMma", "tma_fed_mma", "cta_pair_mma", "OPERAND_LAYOUTS", "LayoutSurvey", "layout_survey", "smem_chunk_map", "plot_smem_layout", "plot_canonical_layouts",
    "plot_core_matrices", "plot_k_steps", "plot_d_tmem_layout", "plot_d_tmem_layouts", "plot_case", "descriptor_widget", "instr_desc_widget",
    # the rule tables
    "LAYOUTS", "check_mma", "check_mma_cute", "legal_mma_configs",
    # submodules
    "canonical", "descriptors", "idesc", "model", "rules",
]
