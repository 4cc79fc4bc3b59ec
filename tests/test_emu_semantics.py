"""The emulator's plain-instruction semantics: the exact arithmetic wired into the chapters, the
instructions ordinary CUDA emits that had no row, mma.sync/ldmatrix with their fragment layouts and
Hopper's block FMA, and printf. (The GPU recordings of the corpus check the same byte for byte;
these are small, self-contained checks against Python/NumPy and C's printf.)"""
from __future__ import annotations

import numpy as np
import pytest

from bwlab import emu
from bwlab.emu.isa import mma_sync, printf

N = 32


def _run(code, name, args, block=(N, 1, 1), options=()):
    mod = emu.RawModule(code=code, name=f"{name}.cu", options=options)
    mod.get_function(name)((1,), block, args)


def test_directed_rounding_and_float_to_int_rounding():
    a = np.array([2.5, -2.5, 1.5, 0.49999997, -0.5, 3.0, 1e30, -7.25] * 4, np.float32)
    out = emu.zeros(4 * N, np.float32)
    _run("""extern "C" __global__ void k(const float* a, float* o) { int t = threadIdx.x;
        o[4*t] = floorf(a[t]); o[4*t+1] = roundf(a[t]); o[4*t+2] = __fadd_rz(a[t], 1e-3f); o[4*t+3] = ceilf(a[t]); }""",
         "k", (emu.asarray(a), out))
    got = out.get().reshape(N, 4)
    assert np.array_equal(got[:, 0], np.floor(a)) and np.array_equal(got[:, 3], np.ceil(a))
    rnd = np.where(a >= 0, np.floor(a.astype(np.float64) + 0.5), -np.floor(-a.astype(np.float64) + 0.5))
    assert np.array_equal(got[:, 1], rnd.astype(np.float32))
    exact = a.astype(np.float64) + np.float64(np.float32(1e-3))
    rz = exact.astype(np.float32)
    rz = np.where(np.abs(rz.astype(np.float64)) > np.abs(exact), np.nextafter(rz, np.float32(0)), rz)
    assert np.array_equal(got[:, 2], rz)


def test_int128_carry_chain_and_64_bit_fields():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2**63, (N, 2), dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = rng.integers(0, 2**63, (N, 2), dtype=np.uint64) * np.uint64(3)
    out = emu.zeros(2 * N, np.uint64)
    bf = emu.zeros(N, np.int64)
    _run("""extern "C" __global__ void k(const unsigned __int128* a, const unsigned __int128* b,
                                           unsigned __int128* o, long long* f) { int t = threadIdx.x;
        o[t] = a[t] * b[t] + (a[t] - b[t]);
        long long v; asm("bfe.s64 %0, %1, %2, %3;" : "=l"(v) : "l"((long long)a[t]), "r"(t * 3), "r"(40));
        f[t] = v; }""", "k", (emu.asarray(a), emu.asarray(b), out, bf), options=("--device-int128",))
    M = (1 << 128) - 1
    got = out.get().reshape(N, 2)
    for t in range(N):
        x = int(a[t, 0]) | int(a[t, 1]) << 64
        y = int(b[t, 0]) | int(b[t, 1]) << 64
        want = (x * y + (x - y)) & M
        assert int(got[t, 0]) | int(got[t, 1]) << 64 == want, t
        lo, pos, ln = int(a[t, 0]), t * 3, 40          # PTX ISA bfe.s64, bit by bit
        sbit = (lo >> min(pos + ln - 1, 63)) & 1
        field = sum((((lo >> (pos + i)) & 1) if pos + i <= 63 else sbit) << i if i < ln else sbit << i
                    for i in range(64))
        assert int(bf.get()[t]) == field - (1 << 64) * (field >= 1 << 63), t


def test_warp_match_and_redux():
    v = (np.arange(N) % 5).astype(np.uint32)
    out = emu.zeros(3 * N, np.uint32)
    _run("""extern "C" __global__ void k(const unsigned* v, unsigned* o) { int t = threadIdx.x;
        o[3*t] = __match_any_sync(0xffffffffu, v[t]); o[3*t+1] = __reduce_add_sync(0xffffffffu, v[t]);
        o[3*t+2] = __reduce_max_sync(0xffffffffu, v[t] * 7u); }""", "k", (emu.asarray(v), out))
    got = out.get().reshape(N, 3)
    for t in range(N):
        assert got[t, 0] == sum(1 << j for j in range(N) if v[j] == v[t])
    assert (got[:, 1] == v.sum()).all() and (got[:, 2] == 28).all()


def test_mma_sync_fragments_equal_a_matrix_product():
    """Small integers: every block-FMA step is exact, so D must equal A @ B + C; a wrong layout fails."""
    rng = np.random.default_rng(2)
    A = rng.integers(-4, 5, (16, 16)).astype(np.float16)
    B = rng.integers(-4, 5, (16, 8)).astype(np.float16)
    C = rng.integers(-8, 9, (16, 8)).astype(np.float32)
    g, t = np.arange(N) // 4, np.arange(N) % 4
    ar, ac = mma_sync._a_layout("m16n8k16", "f16")
    br, bc = mma_sync._b_layout("m16n8k16", "f16")
    cr, cc = mma_sync._cd_layout()
    af = A[ar, ac].view(np.uint16).reshape(N, 4, 2)
    a_regs = (af[:, :, 0].astype(np.uint32) | af[:, :, 1].astype(np.uint32) << 16)
    bf = B[br, bc].view(np.uint16).reshape(N, 2, 2)
    b_regs = (bf[:, :, 0].astype(np.uint32) | bf[:, :, 1].astype(np.uint32) << 16)
    assert (cr[:, 0] == g).all() and (cc[:, 1] == 2 * t + 1).all()
    d = emu.zeros(4 * N, np.float32)
    _run("""extern "C" __global__ void k(const unsigned* a, const unsigned* b, const float* c, float* d) {
        int l = threadIdx.x; float r[4];
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                     "{%10,%11,%12,%13};" : "=f"(r[0]), "=f"(r[1]), "=f"(r[2]), "=f"(r[3])
                     : "r"(a[4*l]), "r"(a[4*l+1]), "r"(a[4*l+2]), "r"(a[4*l+3]), "r"(b[2*l]), "r"(b[2*l+1]),
                       "f"(c[4*l]), "f"(c[4*l+1]), "f"(c[4*l+2]), "f"(c[4*l+3]));
        for (int i = 0; i < 4; i++) d[4*l+i] = r[i]; }""", "k",
         (emu.asarray(a_regs.ravel()), emu.asarray(b_regs.ravel()), emu.asarray(C[cr, cc].ravel()), d))
    D = np.zeros((16, 8), np.float32)
    D[cr, cc] = d.get().reshape(N, 4)
    assert np.array_equal(D, A.astype(np.float32) @ B.astype(np.float32) + C)


def test_block_fma_truncates_at_F_bits_below_the_largest_term():
    """1 + 2^-30 + 2^-30: the small products fall below F = 25 bits of the largest term and vanish
    (an exact sum rounded once would give 1 + 2^-29 -> 1.0000000019 -> f32 1.0 too, so use a larger
    spread that f32 can hold: 2^-20 survives, 2^-26 does not)."""
    a = np.zeros((16, 16)); b = np.zeros((16, 8))  # noqa: E702
    a[0, :3] = [1.0, 2.0 ** -20, 2.0 ** -26]
    b[:3, 0] = 1.0
    d = mma_sync.block_fma(a, b, np.zeros((16, 8), np.float32), "f16")
    assert d[0, 0] == np.float32(1 + 2.0 ** -20)
    assert mma_sync.block_fma(a, b, np.zeros((16, 8), np.float32), "f16", F=30)[0, 0] == np.float32(1 + 2.0 ** -20)


def test_ldmatrix_x4_trans_delivers_the_transposed_fragments():
    m = np.arange(4 * 64, dtype=np.uint16)
    out = emu.zeros(8 * N, np.uint32)
    _run("""extern "C" __global__ void k(const unsigned short* m, unsigned* o) {
        __shared__ unsigned short s[256]; int l = threadIdx.x;
        for (int i = l; i < 256; i += 32) s[i] = m[i];
        __syncwarp();
        unsigned a = (unsigned)__cvta_generic_to_shared(&s[(l / 8) * 64 + (l % 8) * 8]);
        unsigned r[4], q[4];
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(q[0]), "=r"(q[1]), "=r"(q[2]), "=r"(q[3]) : "r"(a));
        for (int i = 0; i < 4; i++) { o[8*l+i] = r[i]; o[8*l+4+i] = q[i]; } }""", "k", (emu.asarray(m), out))
    got = out.get().reshape(N, 8)
    mats = m.reshape(4, 8, 8)
    for lane in range(N):
        r, c = lane // 4, 2 * (lane % 4)
        for i in range(4):
            assert got[lane, i] == int(mats[i, r, c]) | int(mats[i, r, c + 1]) << 16
            assert got[lane, 4 + i] == int(mats[i, c, r]) | int(mats[i, c + 1, r]) << 16


@pytest.mark.parametrize("fmt,args,want", [
    ("%d|%5d|%-5d|%05d|%+d|% d", [(-7, 4)] + [(42, 4)] * 5, "-7|   42|42   |00042|+42| 42"),
    ("%u %x %X %#x %o %#o", [(0xFFFFFFFF, 4), (255, 4), (255, 4), (255, 4), (8, 4), (8, 4)],
     "4294967295 ff FF 0xff 10 010"),
    ("%lld %llx", [(-(1 << 63) & (2**64 - 1), 8), (2**64 - 1, 8)], "-9223372036854775808 ffffffffffffffff"),
    ("%f %.2f %e %g %10.3e", [1.5, 2.345, 1234.5, 0.0001, -1.0], "1.500000 2.35 1.234500e+03 0.0001 -1.000e+00"),
    ("%a %a %a", [1.0, 0.1, -3.0], "0x1p+0 0x1.999999999999ap-4 -0x1.8p+1"),
    ("[%f] [%6.1f] [%e]", [float("inf"), float("-inf"), -float("nan")], "[inf] [  -inf] [-nan]"),
    ("%c%c %% %.3d", [(65, 4), (66, 4), (7, 4)], "AB % 007"),
])
def test_printf_formats_as_c(fmt, args, want):
    pieces, total = printf.parse(fmt)
    specs = [p for p in pieces if not isinstance(p, str)]
    assert len(specs) == len(args)
    out, k = [], 0
    for p in pieces:
        if isinstance(p, str):
            out.append(p)
            continue
        a = args[k]
        k += 1
        raw = int(np.float64(a).view(np.uint64)) if isinstance(a, float) else a[0]
        if isinstance(a, tuple):
            assert p[6] == a[1], (fmt, p)
        out.append(printf.format_c(p, raw))
    assert "".join(out) == want


def test_printf_from_a_kernel_reaches_stdout_in_lane_order_per_warp(capfd):
    a = np.arange(64, dtype=np.int32) * 3
    mod = emu.RawModule(code="""extern "C" __global__ void k(const int* a) { int t = threadIdx.x;
            if (t % 2 == 0) printf("t%d %s %d %.1f\\n", t, t < 32 ? "lo" : "hi", a[t], a[t] * 0.5f); }""",
                        name="printf_k.cu")
    launch = mod.get_function("k")((1,), (64,), (emu.asarray(a),))
    text = capfd.readouterr().out
    lines = text.splitlines()
    assert len(lines) == 32 and launch.printf == [ln + "\n" for ln in lines]
    for w in (0, 1):
        mine = [ln for ln in lines if ("lo" if w == 0 else "hi") in ln]
        assert mine == [f"t{t} {'lo' if w == 0 else 'hi'} {3 * t} {1.5 * t:.1f}" for t in range(32 * w, 32 * w + 32, 2)]


def test_sm100a_fp4_and_ue8m0_pair_conversions_run_as_hw_floats_defines_them():
    """sm_100a-only conversions (unmeasured on a GPU: hw.floats checks them against ml_dtypes): the
    packed .b8/.b16 destinations, the b8 pair moves around them, and the widening back to f16x2."""
    from bwlab.hw import floats as hf
    code = r'''extern "C" __global__ void k(const float* a, unsigned* o) { int t = threadIdx.x;
      unsigned short r, u; unsigned h;
      asm("{ .reg .b8 x, z; mov.b16 {z, z}, 0; cvt.rn.satfinite.e2m1x2.f32 x, %1, %2; mov.b16 %0, {x, z}; }"
          : "=h"(r) : "f"(a[t]), "f"(a[t] * -0.5f));
      asm("cvt.rp.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(u) : "f"(a[t]), "f"(a[t] * 3.0f));
      asm("{ .reg .b8 x, z; mov.b16 {x, z}, %1; cvt.rn.f16x2.e2m1x2 %0, x; }" : "=r"(h) : "h"(r));
      o[3*t] = r; o[3*t+1] = u; o[3*t+2] = h; }'''
    mod = emu.RawModule(code=code, arch="sm_100a", name="cvt100.cu")
    a = np.linspace(-7, 7, N).astype(np.float32)
    o = emu.zeros(3 * N, np.uint32)
    mod.get_function("k")((1,), (N, 1, 1), (emu.asarray(a), o))
    g = o.get().reshape(N, 3)
    ab, bb, cb = (x.view(np.uint32) for x in (a, a * np.float32(-0.5), a * np.float32(3.0)))
    w1 = hf.cvt_x2(ab, bb, "f32", "e2m1", "rn", satfinite=True)
    assert np.array_equal(g[:, 0], w1)
    assert np.array_equal(g[:, 1], hf.cvt_x2(ab, cb, "f32", "ue8m0", "rp", satfinite=True))
    assert np.array_equal(g[:, 2], hf.cvt_from_x2(w1, "e2m1", "f16"))
    assert len(set(w1.tolist())) > 8


def test_carry_flag_after_a_subtraction_is_the_carry_and_int128_division_is_exact():
    """CC.CF after sub.cc is 1 when nothing was borrowed (what NVVM's __int128 division relies on when it
    reads the flag with addc; an H200 agrees: tests/test_emu_outside.py, int128_arith), and subc subtracts
    1 - CF (add.cc then subc below: the same rule read the other way, not measured on a GPU); unsigned
    __int128 division and remainder then come out exact."""
    a = np.array([5, 1, 0, 0xFFFFFFFF] * 8, np.uint32)
    b = np.array([3, 2, 0, 1] * 8, np.uint32)
    flags = emu.zeros(2 * N, np.uint32)
    _run("""extern "C" __global__ void k(const unsigned* a, const unsigned* b, unsigned* o) { int t = threadIdx.x;
        unsigned d, cf, d2;
        asm("sub.cc.u32 %0, %2, %3;\\n\\taddc.u32 %1, 0, 0;" : "=r"(d), "=r"(cf) : "r"(a[t]), "r"(b[t]));
        asm("add.cc.u32 %0, %1, %2;\\n\\tsubc.u32 %0, %1, %2;" : "=r"(d2) : "r"(a[t]), "r"(b[t]));
        o[2*t] = cf; o[2*t+1] = d2; }""", "k", (emu.asarray(a), emu.asarray(b), flags))
    got = flags.get().reshape(N, 2)
    assert np.array_equal(got[:, 0], (a >= b).astype(np.uint32))
    carry = (a.astype(np.uint64) + b) >> 32
    assert np.array_equal(got[:, 1], ((a.astype(np.int64) - b - (1 - carry.astype(np.int64))) & 0xFFFFFFFF))
    rng = np.random.default_rng(5)
    x = rng.integers(0, 2**64, (N, 2), dtype=np.uint64)
    y = rng.integers(1, 2**64, (N, 2), dtype=np.uint64)
    y[: N // 2, 1] = 0                                    # 64-bit divisors take the other path
    q = emu.zeros(4 * N, np.uint64)
    _run("""extern "C" __global__ void k(const unsigned __int128* x, const unsigned __int128* y,
                                           unsigned __int128* o) { int t = threadIdx.x;
        o[2*t] = x[t] / y[t]; o[2*t+1] = x[t] % y[t]; }""", "k", (emu.asarray(x), emu.asarray(y), q),
         options=("--device-int128",))
    got = q.get().reshape(N, 4)
    for t in range(N):
        X = int(x[t, 0]) | int(x[t, 1]) << 64
        Y = int(y[t, 0]) | int(y[t, 1]) << 64
        assert (int(got[t, 0]) | int(got[t, 1]) << 64, int(got[t, 2]) | int(got[t, 3]) << 64) == divmod(X, Y), t


def test_device_variables_initialised_with_addresses():
    """A __device__ table of function pointers and a __device__ pointer to another variable: their PTX
    initializers name symbols (`= {_Z3twoi, ...}`, `= generic(g)+8`), placed as relocations (the reader
    raised a bare ValueError on them before)."""
    code = """__device__ int g[4] = {10, 20, 30, 40};
    __device__ int* p = &g[2];
    __device__ __noinline__ int two(int x) { return 2 * x; }
    __device__ __noinline__ int sq(int x) { return x * x; }
    typedef int (*fn)(int);
    __device__ fn table[2] = {two, sq};
    extern "C" __global__ void k(int* o) { int t = threadIdx.x; o[t] = table[t & 1](t) + *p + p[1]; }"""
    out = emu.zeros(N, np.int32)
    mod = emu.RawModule(code=code, name="relocs.cu")
    mod.get_function("k")((1,), (N, 1, 1), (out,))
    t = np.arange(N)
    assert np.array_equal(out.get(), np.where(t & 1, t * t, 2 * t) + 70)


def test_device_assert():
    """assert() in device code calls __assertfail: a kernel whose assertions hold runs; a failing one prints
    CUDA's line per thread and aborts (a GPU's cudaErrorAssert) with an EmuError naming the assertion."""
    ok = emu.zeros(N, np.int32)
    _run("""extern "C" __global__ void k(int* o) { int t = threadIdx.x; assert(t < 1000); o[t] = t; }""", "k", (ok,))
    assert np.array_equal(ok.get(), np.arange(N))
    mod = emu.RawModule(code="""extern "C" __global__ void k(int* o) { int t = threadIdx.x; assert(t != 5); o[t] = t; }""",
                        name="asserts.cu")
    with pytest.raises(emu.EmuError, match=r"device-side assert failed[\s\S]*asserts.cu:1: void k\(int \*\): "
                                           r"block: \[0,0,0\], thread: \[5,0,0\] Assertion `t != 5` failed\."):
        mod.get_function("k")((1,), (N, 1, 1), (emu.zeros(N, np.int32),))


def test_a_float_add_decodes_beside_a_call_that_returns_nothing():
    """The mul+add fusion looks at every instruction's operands: a `call` whose return list is empty
    (a void __noinline__ function) is a list, not an operand, and must not stop the decode."""
    src = r'''
    __device__ __noinline__ void note(int* flag, int v) { if (v == -100) *flag = v; }
    extern "C" __global__ void k(const float* a, const float* b, float* out, int* flag) {
        int i = threadIdx.x;
        float s = a[i] + b[i];
        note(flag, i - 100);
        out[i] = s;
    }'''
    a = np.arange(32, dtype=np.float32) / 7
    b = np.float32(3) - a
    out = emu.zeros(32, np.float32)
    flag = emu.zeros(1, np.int32)
    emu.RawModule(code=src).get_function("k")((1,), (32,), (emu.asarray(a), emu.asarray(b), out, flag))
    assert np.array_equal(out.get(), a + b)
    assert flag.get()[0] == -100


def test_half_mul_then_sub_is_contracted_like_ptxas():
    """cuda_fp16's __hmul then __hsub (mul.f16, sub.f16 without a rounding modifier) run as one fma, as
    ptxas compiles them: x*x*3 - x*2 + 1 in __half gave the fused result on an H200 (outside corpus,
    templ_half). The inputs are ones where the fused and the unfused results differ."""
    src = r'''
    // what cuda_fp16.h's __hmul/__hsub/__hadd expand to (its header is not on NVRTC's default path)
    __device__ __forceinline__ unsigned short hmul(unsigned short a, unsigned short b) {
        unsigned short r; asm("{mul.f16 %0,%1,%2;}\n" : "=h"(r) : "h"(a), "h"(b)); return r; }
    __device__ __forceinline__ unsigned short hsub(unsigned short a, unsigned short b) {
        unsigned short r; asm("{sub.f16 %0,%1,%2;}\n" : "=h"(r) : "h"(a), "h"(b)); return r; }
    __device__ __forceinline__ unsigned short hadd(unsigned short a, unsigned short b) {
        unsigned short r; asm("{add.f16 %0,%1,%2;}\n" : "=h"(r) : "h"(a), "h"(b)); return r; }
    extern "C" __global__ void k(const unsigned short* a, unsigned short* out) {
        int i = threadIdx.x;
        unsigned short x = a[i];
        unsigned short three = 0x4200, two = 0x4000, one = 0x3C00;
        out[i] = hadd(hsub(hmul(hmul(x, x), three), hmul(x, two)), one);
    }'''
    x = np.resize(np.array([0xCACC, 0xC4A9, 0x4695, 0x3E95, 0xC383], np.uint16).view(np.float16), 32)
    out = emu.zeros(32, np.uint16)
    emu.RawModule(code=src).get_function("k")((1,), (32,), (emu.asarray(x), out))
    h = np.float16
    sq = (x.astype(np.float64) ** 2).astype(h).astype(np.float64)
    two_x = (x.astype(np.float64) * 2).astype(h).astype(np.float64)
    fused = ((sq * 3 - two_x).astype(h).astype(np.float64) + 1).astype(h)
    unfused = (((sq * 3).astype(h).astype(np.float64) - two_x).astype(h).astype(np.float64) + 1).astype(h)
    assert (fused != unfused).all()
    assert np.array_equal(out.get(), fused.view(np.uint16))


def test_shuffle_with_a_width_reads_warp_sz():
    """cuda_fp16.h's __shfl_up_sync(mask, __half2, delta, width) builds the shuffle's segment mask from PTX's
    predefined WARP_SZ in inline asm (`{mov.u32 %r, WARP_SZ;}`, as below): the emulator knows it as 32 (it
    refused the symbol before)."""
    src = r'''
    extern "C" __global__ void k(const unsigned* a, unsigned* o, int* ws) {
        int t = threadIdx.x, width = 8, w;
        asm("{mov.u32 %0, WARP_SZ;}" : "=r"(w));
        unsigned c = ((w - width) << 8), r;
        asm("{shfl.sync.up.b32 %0,%1,%2,%3,%4;}" : "=r"(r) : "r"(a[t]), "r"(1), "r"(c), "r"(0xffffffffu));
        o[t] = r;
        ws[t] = w;
    }'''
    a = np.arange(32, dtype=np.uint32) * 0x10001 + 5
    o, ws = emu.zeros(32, np.uint32), emu.zeros(32, np.int32)
    emu.RawModule(code=src).get_function("k")((1,), (32,), (emu.asarray(a), o, ws))
    lane = np.arange(32)
    assert (ws.get() == 32).all()
    assert np.array_equal(o.get(), np.where(lane % 8 >= 1, a[lane - 1], a))
