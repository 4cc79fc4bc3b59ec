"""Stage 5 on an sm_90+ GPU: cuda_src/tma_store.cu against bwlab.epilogue's model, byte for byte."""
import time

import numpy as np
import pytest

from bwlab import epilogue as E
from bwlab.checks.store import random_store_case
from bwlab.hw.dtypes import element_type
from bwlab.hw.swizzle import row_bytes
from bwlab.tma import TensorMap, tma_load_model

pytestmark = [pytest.mark.sm90, pytest.mark.emulated]


@pytest.mark.parametrize("swizzle,box_w", [("none", 64), ("32B", 16), ("64B", 32), ("128B", 64)])
@pytest.mark.parametrize("coords", [(0, 0), (64, 50), (96, 69)])
def test_store_matches_model(swizzle, box_w, coords):
    rng = np.random.default_rng(1)
    t = TensorMap("bfloat16", (100, 70), (box_w, 40), global_strides=(224,), swizzle=swizzle)
    g = rng.integers(0, 1 << 16, (70, 112)).astype(np.uint16)
    smem = rng.integers(0, 256, t.box_bytes + 512, dtype=np.uint8)
    for addr in (0, 384):
        got = E.run_tma_store(g, t, coords, smem, addr, window_start=0, gmem_offset=48)
        np.testing.assert_array_equal(got, E.tma_store_model(g, t, coords, smem, addr, window_start=0))


def test_misaligned_store_is_refused_before_the_gpu():
    t = TensorMap("bfloat16", (100, 70), (64, 40), global_strides=(224,))
    with pytest.raises(ValueError, match="16-byte boundary"):
        E.run_tma_store(np.zeros((70, 112), np.uint16), t, (99, 0), np.zeros(t.box_bytes, np.uint8))


def test_load_then_store_roundtrip_on_gpu():
    rng = np.random.default_rng(2)
    t = TensorMap("float32", (50, 33), (32, 16), global_strides=(208,), swizzle="128B")
    g = rng.integers(0, 1 << 32, (33, 52), dtype=np.uint64).astype(np.uint32)
    smem = tma_load_model(g, t, (32, 16), 128)
    out = E.run_tma_store(np.zeros_like(g), t, (32, 16), smem, 128)
    want = np.zeros_like(g)
    want[16:32, 32:50] = g[16:32, 32:50]  # 50 fp32 = 200 B: columns 50, 51 get the load's zero fill
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("dtype", E.REDUCE_ADD_DTYPES)
def test_reduce_add_matches_model(dtype):
    rng = np.random.default_rng(5)
    for rank, swizzle in ((2, "none"), (2, "128B"), (3, "64B"), (4, "32B")):
        c = random_store_case(rng, dtype, rank, swizzle, op="add")
        c.check().assert_ok()  # every GMEM element of the buffer, GPU against the model


@pytest.mark.parametrize("dtype", list(E.D_DTYPES))
@pytest.mark.parametrize("swizzle", ["none", "32B", "64B", "128B"])
def test_epilogue_with_c_edge_tiles(dtype, swizzle):
    eb = element_type(dtype).bytes
    bn = 128 // eb if swizzle in ("none", "128B") else 2 * (row_bytes(swizzle) // eb)
    p = E.EpilogueProblem(150, 2 * bn + 3, dtype, bm=64, bn=bn, swizzle=swizzle, alpha=1.5, beta=-0.5,
                          smem_offset=256)
    acc, c, d0 = p.random_inputs(np.random.default_rng(3))
    np.testing.assert_array_equal(E.run_epilogue(p, acc, c, d0), E.epilogue_model(p, acc, c, d0))


def test_epilogue_reduce_add():
    p = E.EpilogueProblem(100, 70, "float32", bm=32, bn=32, swizzle="128B", alpha=0.5, reduce_add=True)
    acc, _, d0 = p.random_inputs(np.random.default_rng(4))
    np.testing.assert_array_equal(E.run_epilogue(p, acc, None, d0), E.epilogue_model(p, acc, None, d0))


def test_bounded_wait_on_the_c_barrier():
    from bwlab.runtime import MbarrierTimeout
    p = E.EpilogueProblem(64, 64, "float32", bm=64, bn=32, beta=1.0)
    acc, c, d0 = p.random_inputs(np.random.default_rng(6))
    t0 = time.perf_counter()
    with pytest.raises(MbarrierTimeout) as e:
        E.run_epilogue(p, acc, c, d0, extra_tx=True)
    assert time.perf_counter() - t0 < 1.0
    assert e.value.barrier.startswith("c_full") and e.value.expected_tx == 64 * 128 + 16
    np.testing.assert_array_equal(E.run_epilogue(p, acc, c, d0), E.epilogue_model(p, acc, c, d0))


@pytest.mark.not_emulated
def test_bank_model_predicts_the_cost_order():
    # Measured cycles must rise with the model's wavefronts: 4 < 8 < 16 < 32.
    pats = E.bank_patterns()
    cyc = {k: E.measure_store_cycles(a) for k, (a, _) in pats.items()}
    strides = [cyc[f"lane stride {s} B"] for s in (16, 32, 64, 128)]
    assert all(b >= 0.9 * a for a, b in zip(strides, strides[1:])), strides
    assert strides[-1] > 3 * strides[0], strides
    assert cyc["row_per_thread, fp32 32 cols, 128B swizzle"] < cyc["row_per_thread, fp32 32 cols, no swizzle"] / 3


def test_teaching_kernel_matches_the_model():
    from bwlab.lab import TeachingKernel
    case = E.Epilogue(*_teach_inputs(150, 70))
    case.check(E.run_teach(case.problem, case.acc, case.d_init)).assert_ok()
    # The wrong edit that leaves the swizzle out gives exactly what the model of that edit says.
    noswz = TeachingKernel("teach_store.cu").replace(*E.TEACH_EDITS["no swizzle"])
    got = E.run_teach(case.problem, case.acc, case.d_init, kernel=noswz)
    want = E.epilogue_model(case.problem, case.acc, None, case.d_init, smem_swizzle="none")
    np.testing.assert_array_equal(got, want)
    r = case.check(got)
    assert r.first.index == (1, 0) and "swizzle" in r.hint


def _teach_inputs(M, N):
    p = E.teach_problem(M, N)
    acc, _, d0 = p.random_inputs(np.random.default_rng(0))
    return p, acc, None, d0
