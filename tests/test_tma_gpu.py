"""bwlab.tma on a GPU with TMA (sm_90+): the SMEM bytes the hardware writes equal the model's,
the transaction count is exact, a wrong expect_tx comes back as MbarrierTimeout, and the
streaming copy copies."""
import numpy as np
import pytest

from bwlab import tma
from bwlab.tma import TensorMap, tma_load_model

pytestmark = pytest.mark.sm90


def test_random_cases_are_bit_exact():
    cases = tma.random_cases(120, seed=11)
    lines = []
    assert tma.validate_cases(cases, say=lines.append) == 0, "\n".join(lines)


@pytest.mark.parametrize("swizzle,offset", [("none", 0), ("128B", 0), ("128B", 384), ("64B", 640), ("32B", 128)])
def test_one_swizzled_box_equals_the_model(swizzle, offset):
    rng = np.random.default_rng(5)
    g = rng.standard_normal((96, 80)).astype(np.float16)
    inner = {"none": 64, "32B": 16, "64B": 32, "128B": 64}[swizzle]
    t = TensorMap("float16", (80, 96), (inner, 24), swizzle=swizzle)
    for coords in ((8, 5), (-8, 80), (72, -3)):
        got = tma.run_tma_load(t, g, coords, smem_offset=offset)
        np.testing.assert_array_equal(got, tma_load_model(g, t, coords, smem_address=offset))


def test_prefetch_variant_loads_the_same_bytes():
    g = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    t = TensorMap("float32", (64, 64), (32, 16), swizzle="128B", oob_fill="nan")
    got = tma.run_tma_load(t, g, (48, 56), prefetch=tma.PREFETCH_BOX)
    np.testing.assert_array_equal(got, tma_load_model(g, t, (48, 56)))


@pytest.mark.parametrize("extra", [16, -16])
def test_a_wrong_expect_tx_is_reported_not_hung(extra):
    from bwlab.runtime import MbarrierTimeout
    g = np.arange(64 * 64, dtype=np.uint16)
    t = TensorMap("uint16", (64, 64), (64, 16))
    r = tma.run_cases([tma.LoadCase(t, g, (0, 0), expect_tx=t.box_bytes + extra)])
    assert isinstance(r.timeout, MbarrierTimeout) and not r.done[0]
    # Too many bytes announced: phase 0 never completes. Too few: phase 0 completes early and the
    # leftover bytes keep phase 1 from completing -> the exactness barrier reports it.
    msg = str(r.timeout)
    assert ("smem_full" in msg) if extra > 0 else ("tx_exact" in msg or "smem_full" in msg), msg
    # The context is still usable.
    ok = tma.run_tma_load(t, g, (0, 0))
    np.testing.assert_array_equal(ok, tma_load_model(g, t, (0, 0)))


def test_streaming_copy_copies():
    import cupy as cp
    n = 64 << 20
    src = cp.arange(n // 4, dtype=cp.uint32) * cp.uint32(2654435761)
    dst = cp.zeros_like(src)
    copy = tma.make_tma_copy(src, dst, tma.CopyConfig(16, 6, 2))
    assert bool(cp.array_equal(src, dst))
    dst.fill(0)
    copy()
    copy.check_status()
    assert bool(cp.array_equal(src, dst))
