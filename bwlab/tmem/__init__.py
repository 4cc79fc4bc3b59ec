"""Stage 4 — Tensor Memory (TMEM): allocation, addresses, and tcgen05.ld / tcgen05.st as thread maps.

TMEM is a per-SM memory of 128 lanes x 512 columns of 32-bit cells on the GPUs with tcgen05 (the PTX
ISA lists sm_100a, sm_103a and sm_110a). The tensor core writes its accumulator there (stage 3,
`bwlab.umma`); the epilogue warps read it into registers with `tcgen05.ld` (this stage) before the TMA
store (stage 5).

What this package mirrors:
* PTX ISA "TensorCore 5th Generation Family Instructions": Tensor Memory and its addresses (lane in
  bits 31-16, column in bits 15-0; `bwlab.hw.tmem`), "Tensor Memory access restrictions" (warp
  quarters), tcgen05.alloc / dealloc / relinquish_alloc_permit, "Matrix fragments for tcgen05.ld/st"
  (Data Movement Shape), tcgen05.ld / tcgen05.st / tcgen05.wait.
* CuTe include/cute/atom/copy_traits_sm100.hpp (`SM100_TMEM_LOAD_*` traits: which thread holds which
  (datapath lane, bit)), include/cute/arch/copy_sm100.hpp (PTX strings, register counts, the
  .16x32bx2 half-split offset) and include/cute/arch/tmem_allocator_sm100.hpp (the allocator).

Files:
  tables.py       the ISA's tables (alloc/dealloc/relinquish, ld/st shapes x num x pack, lane
                  quarters, tcgen05.cp shapes x multicast), each row naming its section
  forms.py        `TmemAccess` (shape, num, pack) validated on construction; `ld_fragment_map`
  model.py        `tcgen05_ld` / `tcgen05_st` on a TMEM image; `ld_roundtrip_model`, `st_roundtrip_model`
  alloc.py        `TensorMemory`: an image plus the allocator, raising `TmemError` naming the rule
  accumulator.py  the epilogue's view: `accumulator_owners`, `read_accumulator` (on UMMA's layout)
  runner.py       `run_ld_roundtrip` / `run_st_roundtrip`: cuda_src/tmem_sm100.cu on an sm_100 GPU;
                  `run_teach`: cuda_src/teach_tmem.cu
  case.py         `TmemLoad`, `TmemStore`: model() / run() / check() / show()
  teach.py        the teaching kernel cuda_src/teach_tmem.cu as the model sees it: `teach_plan`,
                  `teach_model`, `teach_case` (its GPU run: `runner.run_teach`)
  pictures.py     `plot_*`, `ld_widget`
Validation (`python -m bwlab.validate tmem`) and the generator of cuda_src/ptx/tcgen05_ldst.cuh
(`python -m bwlab.tmem header`) live in `bwlab/checks/`.

The TMEM image shared with the UMMA stage is a NumPy uint32 array of shape (128, 512): [lane, column].
"""
from __future__ import annotations

from ..hw.tmem import (COLUMNS, LANES, TmemError, decode_address, encode_address, format_address,
                       new_image, warp_lane_range)
from .accumulator import (LoadStep, accumulator_layout, accumulator_owners, epilogue_loads,
                          example_accumulator, read_accumulator)
from . import tables
from .alloc import Allocation, TensorMemory, TmemNote, attempt, brief
from .case import TmemLoad, TmemStore
from .forms import (COLUMNS_PER_NUM, LANES_PER_SHAPE, MAX_REGS_PER_THREAD, NUMS, REGS_PER_NUM, SHAPE_CODE,
                    SHAPES, TmemAccess, all_accesses, instructions_per_warp, ld_fragment_map,
                    legal_nums)
from .model import (compare_st_images, defined_st_bits, ld_roundtrip_model, pattern_image,
                    register_pattern, st_cells_mask, st_roundtrip_model, tcgen05_ld, tcgen05_st)
from .runner import (all_kernel_names, check_configurations, compile_kernels, kernel_name, run_ld_roundtrip,
                     run_st_roundtrip, run_teach)
from .tables import CP_TABLE, check_alloc, check_cp, check_ldst
from .teach import (TEACH_FILE, TeachPlan, address_image, teach_case, teach_model, teach_plan, teach_sass,
                    try_teach)

_PICTURES = ("plot_tmem", "plot_warp_quarters", "plot_ld_map", "plot_gallery", "plot_accumulator_owners",
             "ld_widget")

# the names the pictures had before every picture was called plot_* (deprecated)
_OLD_PICTURE_NAMES = ("draw_tmem", "draw_warp_quarters", "draw_ld_map", "draw_gallery", "draw_accumulator_owners")

__all__ = [
    "LANES", "COLUMNS", "TmemError", "encode_address", "decode_address", "format_address",
    "warp_lane_range", "new_image",
    "SHAPES", "NUMS", "REGS_PER_NUM", "MAX_REGS_PER_THREAD", "LANES_PER_SHAPE", "COLUMNS_PER_NUM",
    "SHAPE_CODE", "TmemAccess", "all_accesses", "ld_fragment_map", "instructions_per_warp", "legal_nums",
    "tcgen05_ld", "tcgen05_st", "Allocation", "TensorMemory", "TmemNote", "attempt", "brief",
    "tables", "check_alloc", "check_ldst", "check_cp", "CP_TABLE", "check_configurations",
    "pattern_image", "register_pattern", "ld_roundtrip_model", "st_roundtrip_model", "st_cells_mask",
    "defined_st_bits", "compare_st_images", "run_ld_roundtrip", "run_st_roundtrip", "TmemLoad", "TmemStore",
    "kernel_name", "all_kernel_names", "compile_kernels",
    "accumulator_layout", "example_accumulator", "LoadStep", "epilogue_loads", "accumulator_owners",
    "read_accumulator", "TEACH_FILE", "TeachPlan", "teach_plan", "teach_model", "teach_case",
    "address_image", "run_teach", "teach_sass", "try_teach", *_PICTURES,
]


def __getattr__(name):
    # The pictures load matplotlib; only a notebook that draws pays for it.
    if name in _PICTURES or name in _OLD_PICTURE_NAMES:
        from . import pictures
        return getattr(pictures, name)
    raise AttributeError(f"module 'bwlab.tmem' has no attribute {name!r}")
