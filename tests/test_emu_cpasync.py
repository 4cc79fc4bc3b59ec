"""Ampere's asynchronous copy (cp.async) in bwlab.emu: each CUDA API that emits it (tests/cpasync/cpasync.cu:
`__pipeline_memcpy_async`, `cuda::memcpy_async` with `cuda::barrier` and `cuda::pipeline`,
`cooperative_groups::memcpy_async` + `cg::wait`, `cp.async.mbarrier.arrive.noinc`) gives the H200's bytes
(tests/data/emu_cpasync_h200.npz, docs/results/emu_cpasync_h200.txt) and NumPy's; a kernel that reads the
destination before it observed the copy complete is diagnosed under every seed, naming both source lines."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from bwlab import emu
from bwlab.emu.errors import AsyncWriteNotObserved, EmuFault, EmuHang

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "emu_cpasync_h200.npz"
_spec = importlib.util.spec_from_file_location("cpasync_run", ROOT / "tests" / "cpasync" / "run.py")
run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run)
KERNELS = run.kernels()


@pytest.fixture(scope="module")
def rec():
    with np.load(DATA) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def mod(rec):
    """The PTX the H200 ran (recorded with its outputs: no CUDA headers needed here)."""
    return emu.RawModule(ptx=rec["ptx"].tobytes().decode(), name="cpasync.cu")


def _expected(name: str) -> np.ndarray:
    """What each kernel computes, in NumPy (the inputs are multiples of 1/8: every f32 sum is exact)."""
    _, _, args = KERNELS[name]
    x = args[0][1]
    if name == "pipe_double":
        t = x.reshape(5, 128)
        return (t * 2 + t[:, ::-1]).reshape(-1)
    if name == "zfill_tail":
        buf = np.zeros(128, np.float32)
        buf[:101] = x
        return buf[::-1] + np.float32(1)
    if name == "barrier_copy":
        return x[::-1] * 3 + np.arange(256, dtype=np.int32) // 4
    if name == "cg_copy":
        b = x.reshape(2, 300)
        return (b[:, ::-1] - b).reshape(-1)
    if name == "noinc_copy":
        return x[::-1] - np.arange(128, dtype=np.int32) // 4
    if name == "three_groups":
        t = np.arange(32)
        a = x[4 * t] + x[4 * t + 3]
        return np.stack([a, x[128 + 4 * t + 1] * 2, x[256 + 4 * t + 2] - a], 1).reshape(-1)
    if name == "pipeline_copy":
        s = x.reshape(2, 32, 4)
        acc = np.zeros(32, np.float32)
        for k in range(2):
            for j in range(4):
                acc = acc + s[k, :, j] * np.float32(k + 1)
        return acc
    raise KeyError(name)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_each_api_gives_the_h200s_bytes_and_numpys(name, rec, mod):
    seeds = (0, 1, 2) if name in ("pipe_double", "three_groups", "barrier_copy") else (0,)
    for seed in seeds:
        (got,) = run.run_one(emu, mod, name, KERNELS[name], seed=seed)
        gpu = rec[f"{name}/0"]
        assert got.dtype == gpu.dtype and got.tobytes() == gpu.tobytes(), (name, seed)
        assert np.array_equal(got, _expected(name)), name


@pytest.mark.parametrize("name", sorted(run.BROKEN))
def test_a_read_before_the_copy_is_observed_is_diagnosed_under_every_seed(name, mod):
    for seed in range(6):
        with pytest.raises(AsyncWriteNotObserved) as e:
            run.run_one(emu, mod, name, run.BROKEN[name], seed=seed)
        msg = str(e.value)
        # the read and the cp.async, each with its source line in cpasync.cu
        assert msg.count("cpasync.cu:") >= 2 and "ld.shared" in msg and "cp.async.cg" in msg, msg
        assert "cp.async.wait_group" in msg and "has not observed that copy complete" in msg, msg
        if name == "read_other":
            assert "__syncthreads" in msg


def test_wait_group_n_leaves_exactly_the_n_newest_groups_in_flight(mod):
    """three_groups reads group g after wait_group (2 - g): exact. read_newest reads the newest of two groups after
    wait_group 1: the read names the second cp.async (the first group's bytes were fine)."""
    (got,) = run.run_one(emu, mod, "three_groups", KERNELS["three_groups"], seed=3)
    assert np.array_equal(got, _expected("three_groups"))
    with pytest.raises(AsyncWriteNotObserved) as e:
        run.run_one(emu, mod, "read_newest", run.BROKEN["read_newest"], seed=0)
    assert "(buf+512)" in str(e.value) or "buf+5" in str(e.value), str(e.value)


_ASM = r'''
extern "C" __global__ void k(const float* in, float* out, int ssize) {
    __shared__ __align__(16) float buf[64];
    unsigned d = (unsigned)__cvta_generic_to_shared(&buf[4 * threadIdx.x]) + OFF;
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" :: "r"(d), "l"(in + 4 * threadIdx.x), "r"(ssize) : "memory");
    asm volatile("cp.async.wait_all;" ::: "memory");
    out[2 * threadIdx.x] = buf[4 * threadIdx.x];
    out[2 * threadIdx.x + 1] = buf[4 * threadIdx.x + 1];
}
'''


def test_src_size_zero_fills_and_bad_operands_name_the_rule():
    x = np.arange(1, 129, dtype=np.float32)
    f = emu.RawModule(code=_ASM, options=("-DOFF=0",), name="cpa_asm.cu").get_function("k")
    for ssize, want in ((8, [1, 2]), (4, [1, 0]), (0, [0, 0])):
        out = emu.zeros(32, np.float32)
        f((1,), (16,), (emu.asarray(x), out, np.int32(ssize)))
        got = out.get().reshape(16, 2)
        assert np.array_equal(got[:, 0], np.where(want[0], x[0::4][:16], 0)), ssize
        assert np.array_equal(got[:, 1], np.where(want[1], x[1::4][:16], 0)), ssize
    with pytest.raises(EmuFault, match="src-size 12 is larger than cp-size 8"):
        f((1,), (16,), (emu.asarray(x), emu.zeros(64, np.float32), np.int32(12)))
    g = emu.RawModule(code=_ASM, options=("-DOFF=4",), name="cpa_asm.cu").get_function("k")
    with pytest.raises(EmuFault, match="aligned to 8 bytes"):
        g((1,), (16,), (emu.asarray(x), emu.zeros(64, np.float32), np.int32(8)))


_ARRIVE = r'''
extern "C" __global__ void k(const int* in, int* out) {
    __shared__ __align__(16) int buf[64];
    __shared__ unsigned long long bar;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar), t = threadIdx.x;
    unsigned d = (unsigned)__cvta_generic_to_shared(&buf[4 * t]);
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(b), "r"(COUNT * blockDim.x) : "memory");
    __syncthreads();
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(d), "l"(in + 4 * t) : "memory");
    asm volatile("cp.async.mbarrier.arrive" NOINC ".shared.b64 [%0];" :: "r"(b) : "memory");
    unsigned long long st;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(st) : "r"(b) : "memory");
    unsigned ok = 0;
    while (!ok)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                     : "=r"(ok) : "r"(b) : "memory");
    out[t] = buf[(4 * t + 17) % 64];
}
'''


@pytest.mark.parametrize("noinc, count, completes", [("", 1, True), (".noinc", 2, True), ("", 2, False)])
def test_cp_async_mbarrier_arrive_counts_one_arrival_only_with_noinc(noinc, count, completes):
    """Without .noinc the async arrive-on nets to zero (pending + 1 at issue): a barrier of one arrival per thread
    completes once every copy landed; with .noinc it is one of the arrivals init expects (2 per thread here); the
    incrementing form on a barrier that expects 2 per thread never completes."""
    x = np.arange(64, dtype=np.int32) * 7 - 100
    f = emu.RawModule(code=_ARRIVE, options=(f"-DCOUNT={count}", f'-DNOINC="{noinc}"'),
                      name="cpa_arrive.cu").get_function("k")
    out = emu.zeros(16, np.int32)
    if completes:
        for seed in (0, 1):
            f((1,), (16,), (emu.asarray(x), out), seed=seed)
            assert np.array_equal(out.get(), x[(4 * np.arange(16) + 17) % 64])
    else:
        with pytest.raises(EmuHang):
            f((1,), (16,), (emu.asarray(x), out))


def test_a_double_buffered_tiled_sgemm_with_cp_async_is_exact():
    """16 CTAs of 256 threads, each prefetching the next k-tile with 4-byte cp.async.ca while it computes on this
    one (wait_group 1 + __syncthreads): the product equals NumPy's (inputs exact in f32)."""
    inc = Path(np.__file__).parents[1] / "nvidia" / "cuda_runtime" / "include"
    if not (inc / "cuda_pipeline.h").is_file():
        pytest.skip("cuda_pipeline.h (the nvidia-cuda-runtime wheel's headers) is absent")
    from bwlab.compile import compile_cuda
    c = compile_cuda(ROOT / "tests" / "cpasync" / "sgemm.cu", arch="sm_90a", extra_options=(f"-I{inc}", "-lineinfo"))
    f = emu.RawModule(ptx=c.ptx, name="sgemm.cu").get_function("sgemm")
    n = 64
    rng = np.random.default_rng(5)
    a, b = ((rng.integers(-8, 8, (n, n)) / 4).astype(np.float32) for _ in range(2))
    out = emu.zeros(n * n, np.float32)
    f((n // 16, n // 16), (16, 16), (emu.asarray(a), emu.asarray(b), out, np.int32(n)), seed=4)
    assert np.array_equal(out.get().reshape(n, n), a @ b)
