"""bwlab.emu, the PTX emulator: instructions against NumPy and exact arithmetic, the suite's kernels
against their models, and the diagnoses it gives for broken kernels. No GPU needed."""
import os
from fractions import Fraction

import numpy as np
import pytest

from bwlab import emu
from bwlab.emu import tensormap
from bwlab.runtime import encode_tensor_map

pytestmark = pytest.mark.usefixtures("emulated_tier")


def _run(src, name, grid, block, args, **kw):
    mod = emu.RawModule(code=src)
    return mod.get_function(name)(grid, block, args, **kw)


# ---- instructions ---------------------------------------------------------------------------------
def test_fma_is_fused_and_rounded_once():
    src = r'''extern "C" __global__ void k(const float* a, const float* b, const float* c, float* d) {
        int i = blockIdx.x * blockDim.x + threadIdx.x; d[i] = fmaf(a[i], b[i], c[i]); }'''
    rng = np.random.default_rng(1)
    n = 256
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = (-(a.astype(np.float64) * b)).astype(np.float32)   # cancellation: only a fused op keeps the low bits
    c[::3] = rng.standard_normal(n)[::3].astype(np.float32) * 1e-3
    # halfway cases: a*b exactly halfway between two floats before c's tiny contribution
    a[:8] = np.float32(1 + 2 ** -12)
    b[:8] = np.float32(1 + 2 ** -12)
    c[:8] = np.float32([2 ** -60, -2 ** -60, 0, 2 ** -40, -2 ** -40, 1e-30, -1e-30, 0])
    d = emu.zeros(n, np.float32)
    _run(src, "k", (2,), (128,), (emu.asarray(a), emu.asarray(b), emu.asarray(c), d))
    # float(Fraction) rounds correctly to double; the result must be the correctly rounded float32
    ref = np.array([_round_f32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
                    for x, y, z in zip(a, b, c)], np.float32)
    assert np.array_equal(d.get().view(np.uint32), ref.view(np.uint32))


def _round_f32(q: Fraction) -> np.float32:
    """Correct round-to-nearest-even of an exact rational to float32."""
    lo = np.float32(float(q))
    cands = [np.nextafter(lo, np.float32(-np.inf)), lo, np.nextafter(lo, np.float32(np.inf))]
    best = min(cands, key=lambda x: (abs(Fraction(float(x)) - q), int(np.array([x]).view(np.uint32)[0]) & 1))
    return np.float32(best)


def test_integer_operations_equal_numpy():
    src = r'''extern "C" __global__ void k(const int* a, const int* b, int* o) {
        int t = threadIdx.x; int x = a[t], y = b[t] | 1; unsigned ux = x, uy = y;
        o[t * 10 + 0] = __mulhi(x, y);       o[t * 10 + 1] = x / y;
        o[t * 10 + 2] = x % y;               o[t * 10 + 3] = (int)(ux >> (uy & 31));
        o[t * 10 + 4] = x >> (y & 31);       o[t * 10 + 5] = __popc(ux);
        o[t * 10 + 6] = __clz(x);            o[t * 10 + 7] = __brev(ux);
        o[t * 10 + 8] = __byte_perm(x, y, 0x5140); o[t * 10 + 9] = __funnelshift_l(ux, uy, y & 63); }'''
    rng = np.random.default_rng(2)
    a = rng.integers(-2 ** 31, 2 ** 31, 64, dtype=np.int64).astype(np.int32)
    b = rng.integers(-2 ** 31, 2 ** 31, 64, dtype=np.int64).astype(np.int32)
    a[:4] = [0, -1, 2 ** 31 - 1, -2 ** 31]
    o = emu.zeros(640, np.int32)
    _run(src, "k", (1,), (64,), (emu.asarray(a), emu.asarray(b), o))
    got = o.get().reshape(64, 10)
    for t in range(64):
        x, y = int(a[t]), int(b[t]) | 1
        ux, uy = x & 0xFFFFFFFF, y & 0xFFFFFFFF
        q = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
        exp = [(x * y) >> 32, q, x - q * y, ux >> (uy & 31), x >> (y & 31), bin(ux).count("1"),
               32 - ux.bit_length(), int(f"{ux:032b}"[::-1], 2), _byte_perm(ux, uy, 0x5140),
               _funnel_l(ux, uy, y & 63)]
        exp = [np.int64(v & 0xFFFFFFFF).astype(np.uint32).view(np.int32) for v in exp]
        assert list(got[t]) == exp, (t, x, y, list(got[t]), exp)


def _byte_perm(x, y, s):
    b = (y << 32 | x).to_bytes(8, "little")
    return int.from_bytes(bytes(b[(s >> (4 * k)) & 7] for k in range(4)), "little")


def _funnel_l(lo, hi, n):
    n &= 31   # __funnelshift_l wraps the shift amount (shf.l.wrap); __funnelshift_lc would clamp
    return (((hi << 32 | lo) << n) >> 32) & 0xFFFFFFFF


def test_conversions_to_bf16_half_and_int():
    src = r'''extern "C" __global__ void k(const float* a, unsigned* o, int* r) {
        int t = threadIdx.x; float x = a[t], nx = -x; unsigned p; unsigned short h;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(x), "f"(nx));
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
        o[2 * t] = p; o[2 * t + 1] = h;
        r[4 * t] = __float2int_rn(x); r[4 * t + 1] = __float2int_rz(x);
        r[4 * t + 2] = __float2int_rd(x); r[4 * t + 3] = __float2int_ru(x); }'''
    from bwlab.hw.dtypes import from_float
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(96) * 1000).astype(np.float32)
    a[:8] = np.float32([0.5, 1.5, 2.5, -2.5, np.inf, np.nan, 3e38, -1e-40])
    o, r = emu.zeros(192, np.uint32), emu.zeros(384, np.int32)
    try:
        _run(src, "k", (1,), (96,), (emu.asarray(a), o, r))
    except emu.EmuError as e:
        pytest.fail(str(e))
    got = o.get().reshape(96, 2)
    bf = from_float(a, "bf16").astype(np.uint32)
    nbf = from_float(-a, "bf16").astype(np.uint32)
    assert np.array_equal(got[:, 0], (bf << 16) | nbf)
    assert np.array_equal(got[:, 1], from_float(a, "f16").astype(np.uint32))
    ri = r.get().reshape(96, 4)
    fin = np.isfinite(a) & (np.abs(a) < 2 ** 31)
    for col, fn in enumerate((np.rint, np.trunc, np.floor, np.ceil)):
        assert np.array_equal(ri[fin, col], fn(a[fin].astype(np.float64)).astype(np.int32))
    assert ri[5, 0] == 0 and ri[4, 0] == 2 ** 31 - 1   # NaN -> 0, +inf saturates


def test_warp_shuffles_votes_and_reconvergence():
    src = r'''extern "C" __global__ void k(const int* a, int* o) {
        int t = threadIdx.x, l = t % 32, x = a[t];
        int s = 0;
        for (int i = 0; i < (x & 7); ++i) s += i * l;          // lanes loop a different number of times
        if (l & 1) s = -s; else s += 1000;                      // and branch apart
        o[t * 6 + 0] = s;
        o[t * 6 + 1] = __shfl_sync(0xffffffffu, x, (l * 7) & 31);
        o[t * 6 + 2] = __shfl_down_sync(0xffffffffu, x, 3);
        o[t * 6 + 3] = __shfl_xor_sync(0xffffffffu, x, 5);
        o[t * 6 + 4] = (int)__ballot_sync(0xffffffffu, x > 0);
        o[t * 6 + 5] = __all_sync(0xffffffffu, x > -100000) + 2 * __any_sync(0xffffffffu, x == 12345); }'''
    rng = np.random.default_rng(4)
    a = rng.integers(-1000, 1000, 64).astype(np.int32)
    a[40] = 12345
    o = emu.zeros(64 * 6, np.int32)
    _run(src, "k", (1,), (64,), (emu.asarray(a), o))
    got = o.get().reshape(64, 6)
    for t in range(64):
        l, w = t % 32, t // 32
        x = int(a[t])
        s = sum(i * l for i in range(x & 7))
        s = -s if l & 1 else s + 1000
        lanes = a[32 * w:32 * w + 32]
        ballot = sum(1 << k for k in range(32) if lanes[k] > 0)
        exp = [s, lanes[(l * 7) & 31], lanes[l + 3] if l + 3 < 32 else x, lanes[l ^ 5],
               np.uint32(ballot).view(np.int32), 1 + 2 * int((lanes == 12345).any())]
        assert list(got[t]) == [int(v) for v in exp], (t, list(got[t]), exp)


def test_atomics_and_global_variables():
    src = r'''__device__ unsigned total;
    extern "C" __global__ void k(unsigned* o) { atomicAdd(&total, threadIdx.x + 1); __syncthreads();
        if (threadIdx.x == 0) o[0] = total; }'''
    o = emu.zeros(1, np.uint32)
    _run(src, "k", (1,), (256,), (o,))
    assert o.get()[0] == 256 * 257 // 2


# ---- the suite's kernels ---------------------------------------------------------------------------
@pytest.mark.parametrize("swizzle,inner", [("none", 64), ("32B", 16), ("64B", 32), ("128B", 64)])
def test_teach_tma_equals_the_model(swizzle, inner):
    from bwlab.tma import TensorMap, run_teach, tma_load_model
    rng = np.random.default_rng(7)
    g = rng.integers(0, 2 ** 16, (96, 80), dtype=np.uint16)
    t = TensorMap("uint16", (80, 96), (inner, 24), swizzle=swizzle)
    for coords in ((8, 5), (16, 80), (-16 if inner < 80 else 0, -3)):
        assert np.array_equal(run_teach(g, t, coords), tma_load_model(g, t, coords))


def test_a_tensor_map_for_an_emulator_pointer_round_trips():
    from bwlab.tma import TensorMap
    t = TensorMap("bfloat16", (64, 32, 5), (32, 8, 2), swizzle="64B", oob_fill="nan", l2_promotion="128B")
    d = emu.zeros(64 * 32 * 5, np.uint16)
    raw = encode_tensor_map(t, d.data.ptr)
    assert len(raw) == 128 and tensormap.is_emu_map(raw)
    assert tensormap.decode(raw) == (t, d.data.ptr)


def test_hello_bulk_round_trip():
    from bwlab.hello import hello_roundtrip
    src, dst = hello_roundtrip(4096, blocks=3)
    assert np.array_equal(src, dst)


def test_teach_wgmma_equals_the_model():
    from bwlab import umma
    case = umma.WgmmaCase("f16", 64, 32, "K", "none", "K", "none", seed=1)
    got = umma.run_teach_wgmma(case)
    assert case.check(got).ok


def test_full_flow_hopper_equals_numpy():
    from bwlab.flow import FlowProblem
    from bwlab.flow.runner import run_hopper
    p = FlowProblem(0)
    d, stamps = run_hopper(p, repeat=1)
    assert np.array_equal(d[:p.M], p.reference()) and not d[p.M:].any()
    assert (stamps != np.uint64(0xFFFFFFFFFFFFFFFF)).any()   # %globaltimer stamps from the virtual clock


@pytest.mark.parametrize("name", ["s1", "s2", "s3", "s4", "s5", "s6"])
def test_every_hopper_ladder_step_is_exact(name):
    from bwlab.gemm import runner
    from bwlab.gemm.ladder import STEPS
    from bwlab.hw.dtypes import from_float
    s = next(x for x in STEPS if x.name.startswith(name))
    rng = np.random.default_rng(0)
    m, n, k = 256, 512, 192
    a = from_float(rng.random((m, k), dtype=np.float32) * 2 - 1, "bf16")
    b = from_float(rng.random((n, k), dtype=np.float32) * 2 - 1, "bf16")
    c, run = runner.run_step_emulated(s.name, a, b)
    assert runner.check(a, b, c, s.name).ok
    # bit for bit: one k16 block FMA per wgmma (bwlab.umma.model.wgmma_block_fma, measured on an H100),
    # then the epilogue's cvt.rn to bf16
    from bwlab.umma.model import wgmma_block_fma
    fa = (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    fb = (b.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    acc = np.zeros((m, n), np.float32)
    for k0 in range(0, k, 16):
        acc = wgmma_block_fma(fa[:, k0:k0 + 16], fb[:, k0:k0 + 16], acc)
    assert np.array_equal(c, from_float(acc, "bf16"))
    assert not run.warnings


# ---- diagnoses ------------------------------------------------------------------------------------
def test_a_wrong_expect_tx_names_the_waiting_warps_and_the_missing_bytes():
    from bwlab.lab import TeachingKernel
    from bwlab.runtime import MbarrierTimeout
    from bwlab.tma import TensorMap, run_teach
    g = np.arange(64 * 64, dtype=np.uint16).reshape(64, 64)
    t = TensorMap("uint16", (64, 64), (64, 16))
    mine = TeachingKernel("teach_tma.cu").replace("const u32 tx_bytes = box_bytes;",
                                                  "const u32 tx_bytes = box_bytes + 16;")
    with pytest.raises(MbarrierTimeout) as e:
        run_teach(g, t, (0, 0), kernel=mine)
    msg = str(e.value)
    assert e.value.barrier == "smem_full" and e.value.expected_tx == t.box_bytes + 16
    assert "spins in mbarrier.try_wait.parity 0 on 'smem_full'" in msg
    assert "16 transaction bytes still expected" in msg and "nothing in flight" in msg
    assert "Fewer bytes arrived than expect_tx announced" in msg and "16 bytes less than announced" in msg
    assert "warps 0, 1, 2, 3 (threads 0..127)" in msg and "teach_tma.cu:40 (in mbarrier.cuh:57)" in msg


def test_an_expect_tx_too_small_says_more_bytes_arrived_than_announced():
    from bwlab.lab import TeachingKernel
    from bwlab.runtime import MbarrierTimeout
    from bwlab.tma import TensorMap, run_teach
    g = np.arange(64 * 64, dtype=np.uint16).reshape(64, 64)
    t = TensorMap("uint16", (64, 64), (64, 16))
    mine = TeachingKernel("teach_tma.cu").replace("const u32 tx_bytes = box_bytes;",
                                                  "const u32 tx_bytes = box_bytes - 16;")
    with pytest.raises(MbarrierTimeout) as e:
        run_teach(g, t, (0, 0), kernel=mine)
    msg = str(e.value)
    assert "16 transaction bytes more arrived than were expected" in msg
    assert "More bytes arrived than expect_tx announced: expect_tx is 16 bytes too small" in msg
    assert "Fewer bytes arrived than expect_tx announced" not in msg


def _gallery():
    return emu.RawModule(code=open(os.path.join(os.path.dirname(__file__), "..", "cuda_src",
                                                "broken_kernels.cu")).read(), name="broken_kernels.cu")


def test_broken_gallery_missing_arrival():
    from bwlab.runtime import MbarrierTimeout, launch
    mod = _gallery()
    with pytest.raises(MbarrierTimeout) as e:
        launch(mod, "missing_arrival", (1,), (64,), (emu.zeros(64, np.uint32),), barrier_names={0: "bar"})
    assert "1 of 2 arrivals still missing" in str(e.value)


def test_broken_gallery_out_of_bounds_store_names_the_allocation():
    mod = _gallery()
    out = emu.zeros(1024, np.uint32)
    with pytest.raises(emu.EmuFault) as e:
        mod.get_function("oob_store")((1,), (32,), (out, np.uint64(1 << 32)))
    assert isinstance(e.value, emu.EmuError)   # reaches a learner in the short form of every EmuError
    msg = str(e.value)
    assert "thread 0" in msg and "st.global" in msg and "outside every allocation" in msg and "past the end" in msg


def test_broken_gallery_spin_forever_is_a_hang_not_a_hang():
    import time
    mod = _gallery()
    t0 = time.process_time()   # this process's CPU time: a bound that a loaded machine does not stretch
    with pytest.raises(emu.EmuHang) as e:
        mod.get_function("spin_forever")((1,), (32,), (emu.zeros(1, np.uint32), emu.zeros(32, np.uint32)))
    assert time.process_time() - t0 < 30 and "loops at" in str(e.value)


def test_broken_gallery_divergent_barrier_finishes_with_a_warning():
    mod = _gallery()
    out = emu.zeros(128, np.uint32)
    run = mod.get_function("divergent_barrier")((1,), (128,), (out,))
    assert np.array_equal(out.get(), np.arange(128)) and any("exited" in w for w in run.warnings)


def test_an_aligned_barrier_reached_at_two_places_is_divergence():
    src = r'''extern "C" __global__ void k(int* o) {
        if (threadIdx.x % 32 < 16) { asm volatile("bar.sync 1, 64;"); o[threadIdx.x] = 1; }
        else { o[threadIdx.x] = 2; asm volatile("bar.sync 1, 64;"); } }'''
    with pytest.raises(emu.DivergenceError) as e:
        _run(src, "k", (1,), (64,), (emu.zeros(64, np.int32),))
    assert "diverged" in str(e.value) and "lanes [0, 1" in str(e.value)


def test_a_tma_store_without_the_proxy_fence_is_reported():
    from bwlab.epilogue import EpilogueProblem
    from bwlab.epilogue.runner import run_epilogue
    p = EpilogueProblem(128, 64, "bfloat16", bn=64, swizzle="128B")
    acc = np.random.default_rng(0).standard_normal(p.acc_shape).astype(np.float32)
    run_epilogue(p, acc)   # with the fence: fine
    with pytest.raises(emu.ProxyFenceMissing) as e:
        run_epilogue(p, acc, fence=False)
    assert "fence.proxy.async" in str(e.value) and "st.shared" in str(e.value)


def test_reading_the_accumulator_before_wgmma_wait_is_reported():
    from bwlab import umma
    from bwlab.lab import TeachingKernel
    mine = TeachingKernel("teach_wgmma.cu").replace("    wgmma_wait_group<0>();", "")
    case = umma.WgmmaCase("f16", 64, 32, "K", "none", "K", "none", seed=1)
    with pytest.raises(emu.ProtocolError) as e:
        umma.run_teach_wgmma(case, kernel=mine)
    assert "before wgmma.wait_group" in str(e.value)


def test_the_schedule_is_seeded_and_the_result_does_not_depend_on_it():
    from bwlab.tma import TensorMap
    from bwlab.tma.model import tma_load_model
    from bwlab.runtime import tensor_map_arg
    mod = emu.RawModule(code=open(os.path.join(os.path.dirname(__file__), "..", "cuda_src",
                                               "teach_tma.cu")).read(), name="teach_tma.cu")
    g = np.arange(64 * 64, dtype=np.uint16).reshape(64, 64)
    t = TensorMap("uint16", (64, 64), (64, 16), swizzle="128B")
    d = emu.asarray(g)
    clocks = []
    for seed in (0, 0, 1, 2):
        out = emu.zeros(t.box_bytes, np.uint8)
        run = mod.get_function("teach_tma_load")((1,), (128,), (tensor_map_arg(encode_tensor_map(t, d.data.ptr)), np.int32(0),
                                                              np.int32(16), np.uint32(t.box_bytes), out), seed=seed)
        assert np.array_equal(out.get(), tma_load_model(g, t, (0, 16)))
        clocks.append(run.clock)
    assert clocks[0] == clocks[1] and len(set(clocks)) > 1


def test_a_learners_cuda_cell_runs_in_the_emulator(monkeypatch):
    """What a learner on a laptop does in notebook 01: %%cuda teach_tma.cu with an edit, then run_teach —
    their whole kernel runs in the emulator; a broken edit says which warp waits on what."""
    from bwlab import lab
    from bwlab.runtime import MbarrierTimeout, runs_on
    from bwlab.tma import TensorMap, TmaLoad, run_teach
    monkeypatch.setattr(lab, "EDITS", {})
    g = np.random.default_rng(0).integers(0, 2 ** 16, (48, 80), dtype=np.uint16)
    t = TensorMap("bfloat16", (80, 48), (32, 16))
    text = lab.TeachingKernel("teach_tma.cu").text
    lab._cuda_magic("teach_tma.cu", text.replace("out[i] = smem[i];", "out[i] = smem[i] ^ 0xFF;"))
    got = run_teach(g, t, (32, 16))
    res = TmaLoad(g, t, (32, 16)).check(got, source=runs_on("tma"))
    assert not res.ok and "emulated" in str(res)       # their change shows, labelled as emulated
    lab._cuda_magic("teach_tma.cu", text.replace("const u32 tx_bytes = box_bytes;",
                                                 "const u32 tx_bytes = box_bytes + 32;"))
    with pytest.raises(MbarrierTimeout) as e:
        run_teach(g, t, (32, 16))
    assert "32 transaction bytes still expected" in str(e.value) and "teach_tma.cu:40" in str(e.value)


def test_the_emulated_ladder_draws_a_per_warp_timeline():
    """-DGEMM_STAMPS kernels in the emulator stamp %globaltimer/%clock64 from the virtual clock: the
    recording-shaped result feeds the same timeline code as the H100's recording."""
    from bwlab.gemm import runner
    from bwlab.gemm.timeline import step_timeline
    rec = runner.emulated_ladder(steps=("s3",))
    assert rec["check_ok"].all()
    tl = step_timeline(rec, "s3")
    producer, consumer1, consumer2, epilogue = tl.bars
    assert len(producer) == len(consumer1) == 3 and len(epilogue) >= 1   # 3 k-slices of 64 in K = 192
    # each slice is consumed only after the producer issued it
    assert (consumer1[:, 0] >= producer[:, 1]).all() and (consumer2[:, 0] >= producer[:, 1]).all()


ORDINARY = r'''
extern "C" __global__ void reduce(const float* x, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x; float v = 0.f;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x) v += x[i];
    s[t] = v; __syncthreads();
    for (int w = blockDim.x / 2; w >= 32; w >>= 1) { if (t < w) s[t] += s[t + w]; __syncthreads(); }
    if (t < 32) { v = s[t]; for (int o = 16; o; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
                  if (t == 0) atomicAdd(out, v); }
}
extern "C" __global__ void transpose(const int* a, int* b, int rows, int cols) {
    __shared__ int tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = a[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x; y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) if (x < rows && y + j < cols) b[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
extern "C" __global__ void hist(const unsigned char* d, unsigned* h, int n) {
    __shared__ unsigned sh[64];
    if (threadIdx.x < 64) sh[threadIdx.x] = 0; __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&sh[d[i] & 63], 1u);
    __syncthreads();
    if (threadIdx.x < 64) atomicAdd(&h[threadIdx.x], sh[threadIdx.x]);
}
extern "C" __global__ void local_array(const int* idx, int* out) {
    int a[16];
    for (int i = 0; i < 16; ++i) a[i] = i * i + threadIdx.x;
    out[threadIdx.x] = a[idx[threadIdx.x] & 15] + a[(idx[threadIdx.x] >> 4) & 15];
}
extern "C" __global__ void dbl(const double* x, double* y, long long* z) {
    int t = threadIdx.x; double v = x[t];
    y[t] = sqrt(fabs(v)) * 3.0 + v / 7.0; z[t] = (long long)(v * 1e6) / 3 - (t * 12345678901LL) % 1000;
}
'''


def test_ordinary_cuda_kernels_run():
    """Kernels of the kind any CUDA course has (shared-memory reduction with shuffles and atomics, a padded
    transpose tile, a shared histogram, a local array indexed at run time, doubles and 64-bit integers)."""
    mod = emu.RawModule(code=ORDINARY)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(10000).astype(np.float32)
    out = emu.zeros(1, np.float32)
    mod.get_function("reduce")((4,), (256,), (emu.asarray(x), out, np.int32(x.size)))
    assert abs(out.get()[0] - x.sum(dtype=np.float64)) < 1e-3
    a = rng.integers(0, 1000, (70, 45)).astype(np.int32)
    b = emu.zeros((45, 70), np.int32)
    mod.get_function("transpose")((2, 3), (32, 8), (emu.asarray(a), b, np.int32(70), np.int32(45)))
    assert np.array_equal(b.get(), a.T)
    d = rng.integers(0, 256, 5000).astype(np.uint8)
    h = emu.zeros(64, np.uint32)
    mod.get_function("hist")((3,), (128,), (emu.asarray(d), h, np.int32(d.size)))
    assert np.array_equal(h.get(), np.bincount(d & 63, minlength=64))
    idx = rng.integers(0, 256, 64).astype(np.int32)
    o = emu.zeros(64, np.int32)
    mod.get_function("local_array")((1,), (64,), (emu.asarray(idx), o))
    t = np.arange(64)
    assert np.array_equal(o.get(), (idx & 15) ** 2 + t + ((idx >> 4) & 15) ** 2 + t)
    xd = rng.standard_normal(32) * 100
    y, z = emu.zeros(32, np.float64), emu.zeros(32, np.int64)
    mod.get_function("dbl")((1,), (32,), (emu.asarray(xd), y, z))
    assert np.allclose(y.get(), np.sqrt(np.abs(xd)) * 3 + xd / 7, rtol=0, atol=1e-12)
    q = [int(v * 1e6) for v in xd]
    want = [(abs(v) // 3) * (1 if v >= 0 else -1) - (k * 12345678901) % 1000 for k, v in enumerate(q)]
    assert list(z.get()) == want


def _sm90_sources():
    from bwlab.compile import list_sources
    from bwlab.lab import _targets
    # cuda_src/corpus/ compiles with its own options (bwlab.checks.emu_corpus); tests/test_emu_corpus.py runs it
    return [p for p in list_sources() if "sm_90a" in _targets(p.read_text()) and "corpus" not in p.parts]


@pytest.mark.parametrize("path", _sm90_sources(), ids=lambda p: p.name)
def test_every_sm90a_source_decodes(path):
    """Every instruction NVRTC emits for the suite's sm_90a kernels is one the emulator executes."""
    from bwlab.compile import CUDA_SRC, compile_cuda
    defines = {"CLUSTER_X": 2, "CLUSTER_Y": 1} if "multicast" in path.name else None
    mod = emu.RawModule(compiled=compile_cuda(path.relative_to(CUDA_SRC).as_posix(), "sm_90a", defines=defines,
                                              extra_options=("--generate-line-info",)))
    assert mod.kernels and not mod.program.unsupported, mod.program.unsupported


def test_the_tma_streaming_copy_copies():
    from bwlab.checks.tma_copy import COPY_ROW_BYTES
    from bwlab.runtime import EMULATED, launch, tensor_map_arg
    from bwlab.tma import TensorMap
    rows, tile_rows, stages = 96, 16, 3
    src = (np.arange(rows * COPY_ROW_BYTES // 4, dtype=np.uint64) * 2654435761 % (1 << 32)).astype(np.uint32)
    d_src, d_dst = emu.asarray(src), emu.zeros(src.size, np.uint32)
    tmap = TensorMap("uint32", (COPY_ROW_BYTES // 4, rows), (COPY_ROW_BYTES // 4, tile_rows))
    maps = [tensor_map_arg(encode_tensor_map(tmap, a.data.ptr)) for a in (d_src, d_dst)]
    tile_bytes = tile_rows * COPY_ROW_BYTES
    launch(EMULATED.load("tma_load.cu"), "tma_copy_stream", (2,), (32,),
           (*maps, np.uint32(1), np.uint32(rows // tile_rows), np.uint32(COPY_ROW_BYTES // 4), np.uint32(tile_rows),
            np.uint32(tile_bytes), np.uint32(stages)), shared_mem=stages * tile_bytes + 1024)
    assert np.array_equal(d_dst.get(), src)


def test_blackwell_first_contact_dry_run(tmp_path):
    """python -m bwlab.validate blackwell --emulator-only: the report a B200 owner would send back, with the
    emulator and the model columns (the hardware column needs the GPU)."""
    from bwlab.checks.blackwell import validate_main
    out = tmp_path / "report.txt"
    assert validate_main(["--emulator-only", "--quick", "--out", str(out)]) == 0
    text = out.read_text()
    assert "28 cases, 0 with a difference or a failure: PASS" in text and "forced timeout, then a normal launch" in text
    assert validate_main(["--out", str(out)]) == 3    # no sm_100 GPU here: it says so and exits 3


# ---- the instruction table ---------------------------------------------------------------------------
def test_an_instruction_the_table_has_no_row_for_is_refused_at_decode_by_name_line_and_cuda_construct():
    cases = {
        "extern \"C\" __global__ void k() { asm volatile(\"pmevent 1;\"); }": ("`pmevent`", "__prof_trigger()"),
        "extern \"C\" __global__ void k() { __brkpt(); }": ("`brkpt`", "__brkpt()"),
    }
    for code, (op, construct) in cases.items():
        with pytest.raises(emu.UnsupportedInstruction) as e:
            emu.RawModule(code=code, name="unsupported.cu").get_function("k")
        msg = str(e.value)
        assert f"the emulator does not execute {op}" in msg and "PTX line" in msg and construct in msg, msg


def test_an_unsupported_instruction_stops_only_the_kernel_that_has_it():
    mod = emu.RawModule(code="""
extern "C" __global__ void bad() { asm volatile("pmevent 1;"); }
extern "C" __global__ void good(unsigned* o) { o[threadIdx.x] = threadIdx.x * 3u; }
""", name="two.cu")
    with pytest.raises(emu.UnsupportedInstruction, match="pmevent"):
        mod.get_function("bad")
    out = emu.zeros(32, np.uint32)
    mod.get_function("good")((1,), (32,), (out,))
    assert (out.get() == np.arange(32) * 3).all()


def test_the_table_drives_decoding_and_the_convergence_rules():
    from bwlab.emu.isa import table
    assert table.lookup("mbarrier.arrive.expect_tx.shared::cta.b64").key == "mbarrier.arrive"
    assert table.lookup("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes").key \
        == "cp.async.bulk.tensor"
    assert table.lookup("cp.async.bulk.commit_group").kind == "plain"
    assert table.lookup("cp.async.bulk.wait_group.read").kind == "blocking"
    assert table.lookup("pmevent") is None and table.lookup("brkpt") is None
    assert table.lookup("wmma.load.a.sync.aligned.row.m16n16k16.f16").converge == "aligned"
    assert table.lookup("shfl.sync.bfly.b32").converge == "member"
    assert table.lookup("bar.sync").converge == "aligned" and table.lookup("bar.warp.sync").converge == "member"
    # what the decoder gives the scheduler comes from the row
    mod = emu.RawModule(code="""extern "C" __global__ void k(unsigned* o) {
        unsigned v = __shfl_xor_sync(0xffffffffu, threadIdx.x, 1); __syncthreads(); o[threadIdx.x] = v; }""",
                        name="table.cu")
    code = mod.program.code
    shfl = next(c for c in code if c.instr.op.startswith("shfl.sync"))
    bar = next(c for c in code if c.instr.op.startswith("bar"))
    assert (shfl.converge, shfl.row.key) == (2, "shfl.sync") and (bar.converge, bar.row.converge) == (1, "aligned")
    rows = table.listing().splitlines()
    assert len(rows) == len(table.ROWS) + 2 and all(r.section for r in table.ROWS)


def test_the_emulator_package_stays_small_and_imports_models_not_runners():
    import ast
    root = os.path.join(os.path.dirname(__file__), "..", "bwlab", "emu")
    for dp, _, fs in os.walk(root):
        for f in fs:
            if f.endswith(".py"):
                text = open(os.path.join(dp, f)).read()
                assert text.count("\n") <= 600, f"{f} has more than 600 lines"
                for node in ast.walk(ast.parse(text)):
                    if isinstance(node, ast.ImportFrom) and node.module:
                        last = node.module.split(".")[-1]
                        names = {a.name for a in node.names}
                        assert last not in ("runner", "case", "results", "runtime") and \
                            not names & {"runner", "case", "results", "runtime"}, (f, node.module)


def test_shared_atomic_adds_of_a_warp_return_what_the_lanes_before_them_left():
    """atom.shared.add by 32 lanes on 4 addresses: lane order, each lane sees the earlier lanes' sums (the
    emulator's whole-warp path must give what one lane at a time gives)."""
    mod = emu.RawModule(code="""extern "C" __global__ void k(unsigned* old, unsigned* total) {
        __shared__ unsigned s[4];
        if (threadIdx.x < 4) s[threadIdx.x] = 100u * threadIdx.x;
        __syncthreads();
        old[threadIdx.x] = atomicAdd(&s[threadIdx.x % 4], threadIdx.x + 1u);
        __syncthreads();
        if (threadIdx.x < 4) total[threadIdx.x] = s[threadIdx.x]; }""", name="atomics.cu")
    old, total = emu.zeros(64, np.uint32), emu.zeros(4, np.uint32)
    mod.get_function("k")((1,), (64,), (old, total))
    s = [100 * i for i in range(4)]
    got = old.get()             # within a warp, lanes in order; the two warps in either order
    for warp in range(2):
        lanes = range(32 * warp, 32 * warp + 32)
        by_addr = {}
        for t in lanes:
            by_addr.setdefault(t % 4, []).append(t)
        for a, ts in by_addr.items():
            olds = [int(got[t]) for t in ts]
            assert olds == sorted(olds) and all(olds[i + 1] - olds[i] == ts[i] + 1 for i in range(len(ts) - 1))
    assert total.get().tolist() == [s[a] + sum(t + 1 for t in range(64) if t % 4 == a) for a in range(4)]


def test_a_seed_gives_one_interleaving():
    from bwlab.checks.emu import ORDINARY_KERNELS
    mod = emu.RawModule(code=ORDINARY_KERNELS, name="ordinary.cu")
    x = np.random.default_rng(3).random(4096, dtype=np.float32)
    runs = []
    for seed in (5, 5, 6):
        out = emu.zeros(8, np.float32)
        run = mod.get_function("reduce_sum")((8,), (128,), (emu.asarray(x), out, np.int32(x.size)), seed=seed)
        runs.append((run.steps, run.clock, out.get().tobytes()))
    assert runs[0] == runs[1]


# ---- an outside author's kernel: headers, uninitialised shared memory, the words of a fault ------------------
def test_an_outside_kernel_finds_the_cuda_headers_without_options():
    """cuda_fp16.h and cooperative_groups build as CuPy builds them on a GPU (bwlab.compile.header_dirs)."""
    src = r'''
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void k(const float* x, float* y) {
    auto t = cg::tiled_partition<32>(cg::this_thread_block());
    __half h = __float2half_rn(x[threadIdx.x]);
    y[threadIdx.x] = cg::reduce(t, __half2float(__hmul(h, h)), cg::plus<float>());
}'''
    x = np.arange(32, dtype=np.float32) / 8
    dx, dy = emu.asarray(x), emu.zeros(32, np.float32)
    emu.RawModule(code=src).get_function("k")((1,), (32,), (dx, dy))
    assert (dy.get() == np.float32((x.astype(np.float64) ** 2).sum())).all()


def test_shared_memory_starts_uninitialised_not_zero():
    """A CTA's shared memory holds 0xA5 bytes when it starts: a read of a byte never written is not 0."""
    src = r'''extern "C" __global__ void k(unsigned* out) {
    __shared__ unsigned s[64];
    if (threadIdx.x < 32) s[threadIdx.x] = threadIdx.x;   // the upper half is never written
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}'''
    out = emu.zeros(64, np.uint32)
    emu.RawModule(code=src).get_function("k")((1,), (64,), (out,))
    got = out.get()
    assert (got[:32] == np.arange(32)).all() and (got[32:] == 0xA5A5A5A5).all()


def test_a_fault_names_the_kernels_own_shared_bytes_and_the_first_byte_past_an_allocation():
    over = emu.RawModule(code=r'''extern "C" __global__ void k(float* out) {
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x + 1];
}''').get_function("k")
    with pytest.raises(emu.EmuFault, match=r"shared bytes \[256, 260\) of the kernel's window are past its 256 bytes "
                                           r"\(256 static \+ 0 dynamic"):
        over((1,), (64,), (emu.zeros(64, np.float32),))
    past = emu.RawModule(code=r'''extern "C" __global__ void g(const float* a, float* o) { o[0] = a[4]; }''')
    with pytest.raises(emu.EmuFault, match=r"just past the end of <allocation float32\[4\]"):
        past.get_function("g")((1,), (1,), (emu.zeros(4, np.float32), emu.zeros(1, np.float32)))
    null = emu.RawModule(code=r'''extern "C" __global__ void n(const float* a, float* o) { o[0] = a[3]; }''')
    with pytest.raises(emu.EmuFault, match=r"a null pointer or an offset from one \(address 0xc\)"):
        null.get_function("n")((1,), (1,), (np.uint64(0), emu.zeros(1, np.float32)))
