"""bwlab.tma on a GPU with TMA (sm_90+): the SMEM bytes the hardware writes equal the model's,
the transaction count is exact, a wrong expect_tx comes back as MbarrierTimeout, and the
streaming copy copies."""
import numpy as np
import pytest

from bwlab import tma
from bwlab.checks import tma as ct
from bwlab.checks.tma_copy import CopyConfig, make_tma_copy
from bwlab.hw.swizzle import row_bytes as swizzle_row_bytes
from bwlab.tma import TensorMap, TmaLoad, tma_load_model
from bwlab.tma.runner import LoadCase, launch_cases

pytestmark = [pytest.mark.sm90, pytest.mark.emulated]


def test_random_cases_are_bit_exact():
    cases = ct.random_cases(120, seed=11)
    lines = []
    assert ct.validate_cases(cases, say=lines.append) == 0, "\n".join(lines)


@pytest.mark.parametrize("swizzle,offset", [("none", 0), ("128B", 0), ("128B", 384), ("64B", 640), ("32B", 128)])
def test_one_swizzled_box_equals_the_model(swizzle, offset):
    rng = np.random.default_rng(5)
    g = rng.standard_normal((96, 80)).astype(np.float16)
    inner = {"none": 64, "32B": 16, "64B": 32, "128B": 64}[swizzle]
    t = TensorMap("float16", (80, 96), (inner, 24), swizzle=swizzle)
    for coords in ((8, 5), (-8, 80), (72, -3)):
        got = tma.run_tma_load(g, t, coords, smem_address=offset)
        np.testing.assert_array_equal(got, tma_load_model(g, t, coords, smem_address=offset))
        TmaLoad(g, t, coords, smem_address=offset).check().assert_ok()


@pytest.mark.parametrize("prefetch", [0, tma.PREFETCH_TENSORMAP, tma.PREFETCH_BOX, 3])
def test_prefetch_variants_load_the_same_bytes(prefetch):
    g = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    t = TensorMap("float32", (64, 64), (32, 16), swizzle="128B", oob_fill="nan")
    got = tma.run_tma_load(g, t, (48, 56), prefetch=prefetch)
    np.testing.assert_array_equal(got, tma_load_model(g, t, (48, 56)))


@pytest.mark.parametrize("dtype,n0", [("float32", 12), ("uint8", 48), ("float64", 2)])
def test_rank1_boxes(dtype, n0):
    # cuda.bindings passes an empty stride list as NULL, which the driver refuses: TensorMap.encode
    # passes one unused stride for rank 1.
    rng = np.random.default_rng(8)
    t = TensorMap(dtype, (100,), (n0,))
    g = rng.integers(0, 256, size=t.global_extent_bytes, dtype=np.uint8)
    step = 16 // t.elem_bytes
    for c0 in (0, 96 - 96 % step, -step):
        np.testing.assert_array_equal(tma.run_tma_load(g, t, (c0,)), tma_load_model(g, t, (c0,)))


@pytest.mark.parametrize("swizzle,row_bytes,offset", [("32B", 16, 0), ("64B", 16, 384), ("64B", 48, 128),
                                                      ("128B", 32, 0), ("128B", 112, 640), ("128B", 16, 896)])
def test_narrow_swizzled_boxes_sit_one_span_apart(swizzle, row_bytes, offset):
    # Rows narrower than the span: one span apart in SMEM, the rest of each span untouched (the
    # window is painted with a background first), and the mbarrier counts only the box bytes.
    rng = np.random.default_rng(6)
    g = rng.integers(0, 2**16, size=(40, 96), dtype=np.uint16)
    t = TensorMap("uint16", (96, 40), (row_bytes // 2, 9), swizzle=swizzle)
    assert t.smem_pitch == swizzle_row_bytes(swizzle) and t.tx_bytes == t.box_bytes
    cases = [LoadCase(t, g, coords, smem_offset=offset) for coords in ((8, 5), (88, 36), (-8, -4))]
    r = launch_cases(cases)
    assert r.timeout is None and r.done.all()
    for c, w in zip(cases, r.windows):
        np.testing.assert_array_equal(w, c.model_window())
    got = tma.run_tma_load(g, t, (8, 5), smem_address=offset)
    np.testing.assert_array_equal(got, tma_load_model(g, t, (8, 5), smem_address=offset))


@pytest.mark.parametrize("extra", [16, -16])
def test_a_wrong_expect_tx_is_reported_not_hung(extra):
    from bwlab.runtime import MbarrierTimeout
    g = np.arange(64 * 64, dtype=np.uint16)
    t = TensorMap("uint16", (64, 64), (64, 16))
    r = launch_cases([LoadCase(t, g, (0, 0), expect_tx=t.box_bytes + extra)])
    assert isinstance(r.timeout, MbarrierTimeout) and not r.done[0]
    # Too many bytes announced: phase 0 never completes. Too few: phase 0 completes early and the
    # leftover bytes keep phase 1 from completing -> the exactness barrier reports it.
    msg = str(r.timeout)
    assert ("smem_full" in msg) if extra > 0 else ("tx_exact" in msg or "smem_full" in msg), msg
    # The context is still usable.
    ok = tma.run_tma_load(g, t, (0, 0))
    np.testing.assert_array_equal(ok, tma_load_model(g, t, (0, 0)))


@pytest.mark.not_emulated
def test_streaming_copy_copies():
    import cupy as cp
    n = 64 << 20
    src = cp.arange(n // 4, dtype=cp.uint32) * cp.uint32(2654435761)
    dst = cp.zeros_like(src)
    copy = make_tma_copy(src, dst, CopyConfig(16, 6, 2))
    assert bool(cp.array_equal(src, dst))
    dst.fill(0)
    copy()
    copy.raise_on_status()
    assert bool(cp.array_equal(src, dst))
