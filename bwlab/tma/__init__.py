"""Stage 1 — the TMA load: tensor maps, the mbarrier handshake, swizzle, out-of-bounds fill.

A TMA load (`cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes`, PTX ISA
"Data Movement and Conversion Instructions: cp.async.bulk.tensor"; tensor semantics in PTX ISA 5.5
"Tensors") copies one *box* of a tensor in global memory into shared memory. Everything about the
tensor lives in a 128-byte *tensor map* built on the host by `cuTensorMapEncodeTiled` (CUDA driver
API "Tensor Map Object Management"); the instruction names only the tensor map, the box's starting
coordinates, the SMEM destination and an mbarrier.

The package, file by file:

* `tensor_map` — `TensorMap`, the parameters validated on construction against the rules of
  `cuTensorMapEncodeTiled` (`TensorMapError` names the rule and the values); `tx_bytes` (what
  `expect_tx` must announce) and `smem_footprint` (the SMEM the box takes).
* `model`      — `tma_load_model(gmem, tmap, coords, smem_address)`: which bytes land at which SMEM
  address (NumPy and bwlab.hw only); the handshake through bwlab.hw.mbarrier.
* `runner`     — `launch_teach(gmem, tmap, coords, kernel=None)`: one 2D box through the teaching kernel
  `cuda_src/teach_tma.cu` (or a learner's edit of it); `run_tma_load(gmem, tmap, coords,
  smem_address)`: any load through the validation harness (`cuda_src/tma_load.cu`, kernel
  `tma_load_dump`); the only file that imports CuPy / cuda.bindings.
* `case`       — `TmaLoad(gmem, tmap, coords, smem_address)`: model() / run() / check() / show();
  `run_teach(gmem, tmap, coords, kernel=None)`, the `TmaLoad` of the teaching kernel, run.
* `pictures`   — the figures and the explorer of notebook 01 (matplotlib, ipywidgets).
* `exercises`  — the checks of notebook 01's graded exercises (`from bwlab.tma import exercises`), each
  computing its expected value from the model above.

Validation, diagnosis and the copy benchmark live in bwlab/checks/ (`python -m bwlab.validate tma`,
`python -m bwlab.bench tma_copy`).

CuTe counterparts: include/cute/atom/copy_traits_sm90_tma.hpp (make_tma_copy, the tensor-map
encoder) and include/cute/arch/copy_sm90_tma.hpp (SM90_TMA_LOAD_{1..5}D).

Conventions: shapes and coordinates are innermost-first, as the driver and PTX number them (dim 0
is the contiguous one); `global_strides` are the byte strides of dims 1..rank-1.
"""

from .case import run_teach, TmaLoad
from .model import oob_fill_bits, smem_chunks, tma_load_model
from .tensor_map import TensorMap, TensorMapError

# What the notebooks, the docs and the command lines use from the package's top, and nothing else
# (tests/test_interface.py reads them).
__all__ = ["bank_conflict_table", "cta_tiles", "handshake_events", "oob_fill_bits", "plot_bank_conflicts",
           "plot_cta_tiles", "plot_handshake", "plot_oob_box", "plot_smem_image", "plot_swizzle_modes", "RULES",
           "run_teach", "smem_chunks", "swizzle_explorer", "TensorMap", "TensorMapError", "tma_load_model",
           "TmaLoad"]

# The one lazy mechanism: the names of __all__ not imported above, and the other names code written
# against the package's top still reaches, are imported from their module on first use (the
# pictures load matplotlib only then). New code imports a name from its module.
from ..util import names_elsewhere as _names_elsewhere  # noqa: E402

_ELSEWHERE = {
    "bwlab.tma.model": ("bank_conflict_table column_read_addresses cta_tiles handshake_events require_modelled "
                        "TF32_ROUNDS_ON_LOAD tma_load_window tma_load_writes"),
    "bwlab.tma.pictures": ("plot_bank_conflicts plot_cta_tiles plot_handshake plot_oob_box plot_smem_image "
                           "plot_swizzle_modes swizzle_explorer"),
    "bwlab.tma.rules": "RULES",
    "bwlab.tma.runner": "PREFETCH_BOX PREFETCH_TENSORMAP require_teach_args run_tma_load TEACH_BARRIERS",
    "bwlab.tma.tensor_map": "is_narrow_swizzle MAX_BOX MAX_RANK SMEM_ALIGNMENT TMAP_DTYPES",
}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
