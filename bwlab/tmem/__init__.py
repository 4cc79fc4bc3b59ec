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
                  `launch_teach`: cuda_src/teach_tmem.cu
  teach.py        the teaching kernel cuda_src/teach_tmem.cu as the model sees it: `teach_plan`,
                  `teach_model`
  case.py         `TmemLoad`, `TmemStore`: model() / run() / check() / show(); the teaching kernel's
                  `teach_case`, `run_teach` (its run) and `try_teach`
  pictures.py     `plot_*`, `ld_widget`
Validation (`python -m bwlab.validate tmem`) and the generator of cuda_src/ptx/tcgen05_ldst.cuh
(`python -m bwlab.tmem header`) live in `bwlab/checks/`.

The TMEM image shared with the UMMA stage is a NumPy uint32 array of shape (128, 512): [lane, column].
"""
from __future__ import annotations

from ..hw.tmem import decode_address, encode_address, TmemError
from .alloc import TensorMemory
from .case import teach_case, TmemLoad
from .forms import SHAPES, TmemAccess
from . import tables  # noqa: F401

# What the notebooks, the docs and the command lines use from the package's top, and nothing else
# (tests/test_interface.py reads them).
__all__ = ["accumulator_layout", "accumulator_owners", "attempt", "COLUMNS", "compile_kernels",
           "decode_address", "encode_address", "epilogue_loads", "example_accumulator", "format_address",
           "kernel_name", "LANES", "ld_widget", "NUMS", "pattern_image", "plot_accumulator_owners",
           "plot_gallery", "plot_ld_map", "plot_tmem", "plot_warp_quarters", "read_accumulator", "SHAPES",
           "tcgen05_ld", "teach_case", "teach_model", "teach_plan", "teach_sass", "TensorMemory", "TmemAccess",
           "TmemError", "TmemLoad", "try_teach"]

# The one lazy mechanism: the names of __all__ not imported above, and the other names code written
# against the package's top still reaches, are imported from their module on first use (the
# pictures load matplotlib only then). New code imports a name from its module.
from ..util import names_elsewhere as _names_elsewhere  # noqa: E402

_ELSEWHERE = {
    "bwlab.hw.tmem": "COLUMNS format_address LANES new_image warp_lane_range",
    "bwlab.tmem.accumulator": ("accumulator_layout accumulator_owners epilogue_loads example_accumulator "
                               "LoadStep read_accumulator"),
    "bwlab.tmem.alloc": "Allocation attempt brief TmemNote",
    "bwlab.tmem.case": "run_teach TmemStore try_teach",
    "bwlab.tmem.forms": ("all_accesses COLUMNS_PER_NUM instructions_per_warp LANES_PER_SHAPE ld_fragment_map "
                         "legal_nums MAX_REGS_PER_THREAD NUMS REGS_PER_NUM SHAPE_CODE"),
    "bwlab.tmem.model": ("compare_st_images defined_st_bits ld_roundtrip_model pattern_image register_pattern "
                         "st_cells_mask st_roundtrip_model tcgen05_ld tcgen05_st"),
    "bwlab.tmem.pictures": ("ld_widget plot_accumulator_owners plot_gallery plot_ld_map plot_tmem "
                            "plot_warp_quarters"),
    "bwlab.tmem.runner": ("all_kernel_names compile_kernels kernel_name require_configurations "
                          "run_ld_roundtrip run_st_roundtrip"),
    "bwlab.tmem.tables": "CP_TABLE require_alloc require_cp require_ldst",
    "bwlab.tmem.teach": "address_image TEACH_FILE teach_model teach_plan teach_sass TeachPlan",
}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
