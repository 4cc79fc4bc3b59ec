"""The TMA loads notebook 01 shows, each defined once: the recorder (`bwlab/checks/record_tma.py`) runs
these cases on a GPU and saves what they produced; `TmaLoad(...).result()` / `.results()` find the
recording of the very case asked for (`bwlab.results.find_recorded`).

* `tma_teach`               — the teaching kernel (cuda_src/teach_tma.cu) on two 2D boxes: unswizzled
                              and 128B-swizzled.
* `tma_teach_bad_expect_tx` — the teaching kernel with expect_tx BAD_EXPECT_TX bytes too high (its
                              MbarrierTimeout), then the original kernel again.
* `tma_load_modes`          — the harness kernel (tma_load_dump) on a bf16 box under every swizzle, full
                              and narrow rows, at two positions.
* `tma_load_oob`            — boxes hanging off the tensor: zero fill and NaN fill.
"""
from __future__ import annotations

import numpy as np

from ..results import Recorded
from .case import TmaLoad
from .tensor_map import TensorMap

__all__ = ["RECORDED", "GMEM_SEED", "TEACH_CASES", "MODE_CASES", "OOB_CASES", "BAD_EXPECT_TX", "tma_gmem",
           "oob_gmem", "bad_expect_tx_kernel", "mode_tmap", "teach_case", "mode_case", "oob_case"]

GMEM_SEED = 0
# (key, tensor-map arguments, coords): the teaching kernel's boxes, in notebook 01's 80 x 48 bf16 tensor.
TEACH_CASES = (("smem_plain", dict(dtype="bfloat16", global_shape=(80, 48), box_shape=(32, 16)), (32, 16)),
               ("smem_swizzled", dict(dtype="bfloat16", global_shape=(80, 48), box_shape=(64, 16),
                                      swizzle="128B"), (0, 16)))
# (swizzle, box row in elements, coords, SMEM offset): section 8 of notebook 01.
MODE_CASES = tuple((mode, inner, coords, offset)
                   for mode, inner in (("none", 64), ("32B", 16), ("64B", 32), ("128B", 64), ("64B", 8), ("128B", 24))
                   for coords, offset in (((32, 16), 0), ((64, 40), 384)))
# (key, tensor-map arguments, coords): section 7, a float32 tensor 20 x 12 holding 0, 1, 2, ...
OOB_CASES = (("smem_zero", dict(dtype="float32", global_shape=(20, 12), box_shape=(8, 6)), (16, 9)),
             ("smem_nan", dict(dtype="float32", global_shape=(20, 12), box_shape=(8, 6), oob_fill="nan"), (-4, -2)))
BAD_EXPECT_TX = 16  # the deliberate mistake: announce this many bytes more than the box holds


def tma_gmem() -> np.ndarray:
    """Notebook 01's tensor: 48 rows x 80 bf16 bit patterns."""
    return np.random.default_rng(GMEM_SEED).integers(0, 2**16, size=(48, 80), dtype=np.uint16)


def oob_gmem() -> np.ndarray:
    return np.arange(12 * 20, dtype=np.float32).reshape(12, 20)


def bad_expect_tx_kernel():
    """teach_tma.cu with expect_tx BAD_EXPECT_TX bytes too high (the edit notebook 01 makes)."""
    from ..lab import TeachingKernel
    return TeachingKernel("teach_tma.cu").replace("const u32 tx_bytes = box_bytes;",
                                                  f"const u32 tx_bytes = box_bytes + {BAD_EXPECT_TX};")


def mode_tmap(mode: str, inner: int) -> TensorMap:
    return TensorMap("bfloat16", (80, 48), (inner, 16), swizzle=mode)


def teach_case(i: int, kernel="teach_tma.cu") -> TmaLoad:
    _, args, coords = TEACH_CASES[i]
    return TmaLoad(tma_gmem(), TensorMap(**args), coords, kernel=kernel)


def mode_case(i: int) -> TmaLoad:
    mode, inner, coords, offset = MODE_CASES[i]
    return TmaLoad(tma_gmem(), mode_tmap(mode, inner), coords, smem_address=offset)


def oob_case(i: int) -> TmaLoad:
    _, args, coords = OOB_CASES[i]
    return TmaLoad(oob_gmem(), TensorMap(**args), coords)


RECORDED = (
    *(Recorded("tma_teach", key, lambda i=i: teach_case(i)) for i, (key, _, _) in enumerate(TEACH_CASES)),
    Recorded("tma_teach_bad_expect_tx", "message", lambda: teach_case(0, bad_expect_tx_kernel()),
             error="MbarrierTimeout", seconds_key="call_ms"),
    Recorded("tma_teach_bad_expect_tx", "smem_plain_after", lambda: teach_case(0)),
    *(Recorded("tma_load_modes", f"smem_{i}", lambda i=i: mode_case(i)) for i in range(len(MODE_CASES))),
    *(Recorded("tma_load_oob", key, lambda i=i: oob_case(i)) for i, (key, _, _) in enumerate(OOB_CASES)),
)
