"""Run the outside corpus (tests/outside/*.cu) on a GPU (CuPy) or in bwlab.emu, save every output, compare.

    python tests/outside/run.py build  BUILD_DIR           # NVRTC sm_90a: PTX + cubin per source file (no GPU needed)
    python tests/outside/run.py gpu    BUILD_DIR OUT_DIR   # load the cubins with CuPy, run, save OUT_DIR/<kernel>.npz
    python tests/outside/run.py emu    BUILD_DIR OUT_DIR [names...]   # the same kernels in bwlab.emu
    python tests/outside/run.py compare GPU_DIR EMU_DIR BUILD_DIR      # the table
    python tests/outside/run.py pack GPU_DIR BUILD_DIR DEST.npz HEADER # the recording tests/test_emu_outside*.py read
    (GPU_DIR may hold one set: the first set is h200.npz, the second set (second_*.cu) h200_second.npz)

Inputs are generated here from fixed seeds and explicit edge values (NaN payloads, infinities, subnormals,
ties, INT_MIN, LLONG_MIN, shift counts past the width); every output buffer is prefilled with 0xA5.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import traceback
import types
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SOURCES = {"reduce": (), "half": (), "ints": (), "mathlib": (), "misc": (), "warp": (),
           "fastmath": ("--use_fast_math",)}
FIRST = tuple(SOURCES)  # the first set, recorded in tests/data/emu_outside/h200.npz
_spec2 = importlib.util.spec_from_file_location("outside_second", HERE / "second.py")
second = importlib.util.module_from_spec(_spec2)
_spec2.loader.exec_module(second)
SOURCES.update(second.SOURCES)  # the second set (tests/outside/second_*.cu), in h200_second.npz
INC = os.environ.get("CUDA_INC", str(Path(np.__file__).parents[1] / "nvidia/cuda_runtime/include"))
CCCL = "-I" + os.environ.get("CUDA_CCCL", "/usr/local/cuda/include/cccl")


# ------------------------------------------------------------------------------------------------ inputs
def bits32(*codes):
    return np.array(codes, np.uint32).view(np.float32)


F32_EDGE = np.concatenate([
    np.array([0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.5, 0.49999997, 8388609.0, 16777217.0, 2.0 ** 31,
              -2.0 ** 31, 2.0 ** 32, 4294967040.0, -2147483904.0, 1e10, -1e10, 65504.0, 65520.0, 65519.0, 448.0,
              464.0, 480.0, 57344.0, 61440.0, 1.0 / 3, -7.25, 100.5, 1e-3, 3.0, -3.0, 0.25, 126.0, 127.0,
              88.7, -87.5, -103.0, 9.2e18, 1.8e19, -9.3e18, 6.1e-5, 5.96e-8, 2.98e-8, 1.0009765625, 1.00048828125,
              -1.00146484375, 3.14159265, 1e30, -1e-30], np.float32),
    bits32(0x00000001, 0x80000001, 0x007FFFFF, 0x00400000, 0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF,
           0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA12345, 0xFFC54321, 0x33800000,
           0x33800001, 0x337FFFFF, 0x3F808000, 0x3F818000, 0x3F800001, 0x477FF000, 0x477FF001, 0x43E00000,
           0x43E80000, 0x43F00000),
])


def f32_inputs(seed, n, spread=6.0):
    rng = np.random.default_rng(seed)
    r = (rng.standard_normal(n) * rng.choice([0.01, 1, 10, 1000], n) * spread / 6).astype(np.float32)
    k = min(n, len(F32_EDGE))
    r[:k] = F32_EDGE[:k]
    return r


def f32_pairs(seed, n):
    rng = np.random.default_rng(seed)
    a, b = f32_inputs(seed, n), f32_inputs(seed + 1, n)
    m = len(F32_EDGE)
    # edge x edge for a stretch, then random pairs
    if n >= 2 * m:
        a[m:2 * m] = F32_EDGE[rng.permutation(m)]
        b[m:2 * m] = F32_EDGE
    return a, b


def f64_inputs(seed, n):
    rng = np.random.default_rng(seed)
    r = rng.standard_normal(n) * rng.choice([0.01, 1, 10, 1e6], n)
    edge = np.concatenate([np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.5, 1e300, -1e-300, 2.0 ** 63, -2.0 ** 63,
                                     2.0 ** 64, 4.5e15, 2.0 ** 53 + 1, 1.0000000596046448, 1.0000000298023224,
                                     65519.99999, 3.4028235677973366e38, 3.4028235677973362e38, 1e-45, 7e-46,
                                     1.401298464324817e-45, 2.0 ** -1074, -2.0 ** -1022, 1.0 / 3, 4294967295.5,
                                     -2147483648.5, 2147483647.5]),
                           np.array([0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
                                     0x7FF0000000000001, 0xFFF8000000012345], np.uint64).view(np.float64)])
    k = min(n, len(edge))
    r[:k] = edge[:k]
    return r


def i32_inputs(seed, n):
    rng = np.random.default_rng(seed)
    r = rng.integers(-2 ** 31, 2 ** 31, n, dtype=np.int64).astype(np.int32)
    small = rng.integers(-300, 300, n // 2).astype(np.int32)
    r[n // 4:n // 4 + len(small) // 2] = small[:len(small) // 2]
    edge = np.array([0, 1, -1, 2, -2, 3, -3, 7, -7, 2 ** 31 - 1, -2 ** 31, -2 ** 31 + 1, 0x7FFF, 0x8000, 0xFFFF,
                     0x10000, 0x01010101, -0x01010101, 0x7F7F7F7F, -0x7F7F7F80, 0x00FF00FF, 255, 128, -128, 127,
                     0x55555555, -0x55555556], np.int64).astype(np.int32)
    r[:len(edge)] = edge
    return r


def i64_inputs(seed, n):
    rng = np.random.default_rng(seed)
    r = rng.integers(-2 ** 63, 2 ** 63, n, dtype=np.int64)
    r[n // 4:n // 2] = rng.integers(-2 ** 40, 2 ** 40, n // 2 - n // 4)
    r[n // 2:n // 2 + n // 8] = rng.integers(-1000, 1000, n // 8)
    edge = np.array([0, 1, -1, 2, -2, 3, -3, 7, 2 ** 63 - 1, -2 ** 63, -2 ** 63 + 1, 2 ** 32, -2 ** 32, 2 ** 31,
                     -2 ** 31, 2 ** 53 + 1, -(2 ** 53) - 1, 2 ** 24 + 1, 2 ** 62, 0x00000000FFFFFFFF,
                     1000000007, -1000000007, 2 ** 63 - 1025, 2 ** 63 - 512], np.int64)
    r[:len(edge)] = edge
    return r


def f16_bits(seed, n, kind="f16"):
    rng = np.random.default_rng(seed)
    r = rng.integers(0, 65536, n).astype(np.uint16)
    if kind == "f16":
        edge = [0x0000, 0x8000, 0x3C00, 0xBC00, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7D01, 0xFE7F, 0x0001,
                0x8001, 0x03FF, 0x0400, 0x3800, 0x3E00, 0x4100, 0xC100, 0x4900, 0x5BFF, 0x7800, 0x3555, 0x2E66,
                0x4248, 0xC248, 0x1400, 0x0200]
    else:
        edge = [0x0000, 0x8000, 0x3F80, 0xBF80, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFC1, 0x0001,
                0x8001, 0x007F, 0x0080, 0x3F00, 0x3FC0, 0x4020, 0xC020, 0x4F00, 0x4F80, 0xCF00, 0x3EAB, 0x5F00]
    r[:len(edge)] = edge
    # keep most random halves finite and moderate
    if kind == "f16":
        mid = slice(len(edge), n)
        r[mid] = (r[mid] & 0x83FF) | ((rng.integers(9, 21, n - len(edge)).astype(np.uint16)) << 10)
    else:
        mid = slice(len(edge), n)
        r[mid] = (r[mid] & 0x807F) | ((rng.integers(110, 140, n - len(edge)).astype(np.uint16)) << 7)
    return r


def In(a):
    return ("in", np.ascontiguousarray(a))


def Out(dtype, n):
    return ("out", np.dtype(dtype).str, int(n))


def InOut(a):
    return ("inout", np.ascontiguousarray(a))


def quarters(seed, n):
    rng = np.random.default_rng(seed)
    return (rng.integers(-4000, 4000, n) / 4.0).astype(np.float32)


def kernels():
    K = []

    def k(name, src, grid, block, args, cmp="bytes", shared=0, sorted_outs=()):
        K.append(dict(name=name, src=src, grid=grid, block=block, args=args, cmp=cmp, shared=shared,
                      sorted_outs=tuple(sorted_outs)))

    rng = np.random.default_rng(7)
    # ---- reduce.cu
    x = rng.standard_normal(2000).astype(np.float32)
    k("red_shared", "reduce", (4,), (256,), [In(x), Out("f4", 4), np.int32(2000)])
    k("red_shfl", "reduce", (3,), (128,), [In(x), Out("f4", 3), np.int32(2000)])
    xi = i32_inputs(11, 128) >> 8
    k("red_cg_tile", "reduce", (1,), (128,), [In(xi), Out("i4", 8), Out("i4", 8)])
    xa = i32_inputs(12, 300)
    init = np.array([0, -2 ** 31, 2 ** 31 - 1, -1, 0, 0, 0], np.int32)
    k("red_atomic_int", "reduce", (3,), (128,), [In(xa), InOut(init), InOut(np.zeros(1, np.uint64)), np.int32(300)])
    q = quarters(13, 256)
    q[:4] = [-1e-3 * 0, 999.75, -1000.0, 0.25]
    k("atomic_cas_loops", "reduce", (2,), (128,), [In(q), InOut(np.array([-np.inf], np.float32)),
                                                   InOut(np.zeros(1)), InOut(np.zeros(1, np.float32)),
                                                   InOut(np.array([0.125]))])
    k("atomic_inc_dec", "reduce", (2,), (96,), [InOut(np.array([3, 0], np.uint32)), Out("u4", 192), Out("u4", 192)],
      sorted_outs=(1, 2))
    k("scan_hillis", "reduce", (1,), (256,), [In(i32_inputs(14, 256)), Out("i4", 256)])
    k("scan_blelloch", "reduce", (1,), (256,), [In(i32_inputs(15, 512) >> 4), Out("i4", 512)])
    k("scan_warp_float", "reduce", (2,), (64,), [In(f32_inputs(16, 128, spread=1.0)), Out("f4", 128)])
    tw, th = 70, 45
    k("transpose_tiled", "reduce", (3, 2), (32, 8), [In(np.arange(tw * th, dtype=np.float32) * 0.5 - 7), Out("f4", tw * th),
                                                     np.int32(tw), np.int32(th)])
    k("histogram", "reduce", (3,), (128,), [In(rng.integers(0, 256, 5000).astype(np.uint8)), InOut(np.zeros(64, np.uint32)),
                                             np.int32(5000)])
    s = rng.standard_normal(256).astype(np.float32)
    s[:8] = [0.0, -0.0, np.inf, -np.inf, 1.0, 1.0, -0.0, 0.0]
    k("bitonic_sort", "reduce", (1,), (256,), [In(s), Out("f4", 256), Out("i4", 256)])
    k("stencil_1d", "reduce", (3,), (128,), [In(f32_inputs(17, 300, spread=1.0)), Out("f4", 300), np.int32(300)])
    k("stencil_2d", "reduce", (3, 3), (16, 16), [In(rng.standard_normal(40 * 37).astype(np.float32)), Out("f4", 40 * 37),
                                                 np.int32(40), np.int32(37)])
    k("matvec_warp", "reduce", (3,), (128,), [In(rng.standard_normal(10 * 100).astype(np.float32)),
                                             In(rng.standard_normal(100).astype(np.float32)), Out("f4", 10),
                                             np.int32(10), np.int32(100)])
    k("matvec_f64", "reduce", (1,), (64,), [In(rng.standard_normal(50 * 33)), In(rng.standard_normal(33)), Out("f8", 50),
                                           np.int32(50), np.int32(33)])
    # ---- half.cu
    sm = (rng.standard_normal(4 * 128) * 4).astype(np.float32)
    sm[5], sm[130] = 80.0, -200.0
    k("softmax_f32", "half", (4,), (128,), [In(sm), Out("f4", 512)], cmp="approx")
    k("softmax_half", "half", (4,), (128,), [In(sm.astype(np.float16)), Out("f2", 512)])
    ln = (rng.standard_normal(4 * 128) * 3 + 1).astype(np.float32)
    ln[128:256] = 2.5  # a constant row: variance 0
    k("layernorm_f32", "half", (4,), (128,), [In(ln), In(rng.standard_normal(128).astype(np.float32)),
                                             In(rng.standard_normal(128).astype(np.float32)), Out("f4", 512), Out("f4", 8)], cmp="approx")
    k("rmsnorm_bf16", "half", (4,), (128,), [In(f16_bits(18, 512, "bf16")), In(f16_bits(19, 128, "bf16")),
                                            Out("u2", 512), Out("f4", 4)])
    n = 128
    k("half2_math", "half", (2,), (64,), [In(f16_bits(20, 2 * n)), In(f16_bits(21, 2 * n)[::-1].copy()),
                                          In(f16_bits(22, 2 * n)), Out("u4", 8 * n)])
    k("half_scalar", "half", (2,), (64,), [In(f16_bits(23, n)), In(f16_bits(24, n)[::-1].copy()), Out("u2", 6 * n),
                                           Out("i4", n)])
    k("half_approx", "half", (2,), (64,), [In(f16_bits(25, 2 * n)), Out("u4", 4 * n), Out("u2", 2 * n)], cmp="approx")
    k("half_convert", "half", (2,), (64,), [In(f32_inputs(26, n)), In(f64_inputs(27, n)), Out("u2", 8 * n)])
    k("bf16_convert", "half", (2,), (64,), [In(f32_inputs(28, n)), In(f64_inputs(29, n)), Out("u2", 8 * n)])
    k("half_to_int", "half", (2,), (64,), [In(f16_bits(30, n)), In(f16_bits(31, n, "bf16")), Out("i4", 8 * n)])
    k("bf16x2_math", "half", (2,), (64,), [In(f16_bits(32, 2 * n, "bf16")), In(f16_bits(33, 2 * n, "bf16")[::-1].copy()),
                                           In(f16_bits(34, 2 * n, "bf16")), Out("u4", 6 * n)])
    k("fp8_convert", "half", (2,), (64,), [In(f32_inputs(35, n)), Out("u1", 6 * n), Out("u2", 2 * n)])
    k("fp8x2_convert", "half", (2,), (64,), [In(f32_inputs(36, 2 * n)), Out("u2", 4 * n), Out("u4", 2 * n)])
    af, bf_ = f32_pairs(37, 128)
    k("atomic_edges", "half", (2,), (64,), [InOut(np.concatenate([af, af])), In(bf_), InOut(f64_inputs(38, 128)),
                                            In(f64_inputs(39, 128)[::-1].copy()), InOut(f16_bits(97, 2 * n)),
                                            In(f16_bits(98, 2 * n)[::-1].copy()), InOut(f16_bits(99, 2 * n, "bf16")),
                                            In(f16_bits(100, 2 * n, "bf16")[::-1].copy()), Out("f4", 2 * n),
                                            InOut(f16_bits(101, n)), In(f16_bits(102, n)[::-1].copy())])
    # ---- ints.cu
    a64, b64 = i64_inputs(40, n), i64_inputs(41, n)
    b64[:24] = b64[:24][::-1]
    k("int64_arith", "ints", (2,), (64,), [In(a64), In(b64), Out("i8", 10 * n)])
    sh = np.random.default_rng(42).integers(0, 300, n).astype(np.uint32)
    sh[:12] = [0, 1, 31, 32, 33, 63, 64, 65, 127, 255, 0xFFFFFFFF, 0x80000000]
    k("shifts", "ints", (2,), (64,), [In(i32_inputs(43, n)), In(sh), Out("i4", 6 * n), Out("i8", 2 * n)])
    w = np.random.default_rng(44).integers(0, 2 ** 64, 4 * n, dtype=np.uint64)
    w[:16] = [2 ** 64 - 1, 2 ** 64 - 1, 0, 1, 2 ** 63, 0, 2 ** 63, 0, 0, 5, 0, 3, 1, 0, 2 ** 64 - 1, 2 ** 64 - 1]
    w[16:32] &= np.uint64(0xFFFFFFFF)
    k("int128_arith", "ints", (2,), (64,), [In(w), Out("u8", 12 * n)])
    bt = i32_inputs(45, n).view(np.uint32)
    bb = np.random.default_rng(46).integers(0, 2 ** 64, n, dtype=np.uint64)
    bb[:6] = [0, 1, 2 ** 63, 2 ** 64 - 1, 0x0000000100000000, 0x7654321000003210]
    k("bit_tricks", "ints", (2,), (64,), [In(bt), In(bb), Out("i4", 14 * n)])
    k("simd_video", "ints", (2,), (64,), [In(i32_inputs(47, n).view(np.uint32)),
                                         In(i32_inputs(48, n)[::-1].copy().view(np.uint32)), Out("u4", 14 * n)])
    k("dp_sad_mul", "ints", (2,), (64,), [In(i32_inputs(49, n)), In(i32_inputs(50, n)[::-1].copy()), Out("i4", 12 * n)])
    da, db = i32_inputs(51, n), i32_inputs(52, n)
    db[:27] = np.array([1, -1, 3, -3, 7, 0, 2, -2, 1, -1, 2 ** 31 - 1, -2 ** 31, 5, 3, 10, 11, 12, 13, 14, 15, 16, 17,
                        -7, 9, 100, -1000, 6], np.int64).astype(np.int32)
    k("int_div", "ints", (2,), (64,), [In(da), In(db), Out("i4", 6 * n)])
    k("sat_add", "ints", (2,), (64,), [In(i32_inputs(53, n)), In(i32_inputs(54, n)[::-1].copy()), Out("i4", 3 * n)])
    k("float_to_int", "ints", (2,), (64,), [In(f32_inputs(55, n)), In(f64_inputs(56, n)), Out("i4", 10 * n), Out("i8", 5 * n)])
    k("int_to_float", "ints", (2,), (64,), [In(i64_inputs(57, n)), Out("f4", 10 * n), Out("f8", 3 * n)])
    # ---- mathlib.cu
    fa, fb = f32_pairs(60, 256)
    k("math_special_f", "mathlib", (2,), (128,), [In(f32_inputs(61, 256, spread=8)), Out("f4", 8 * 256)], cmp="approx")
    k("math_binary_f", "mathlib", (2,), (128,), [In(fa), In(fb), Out("f4", 10 * 256)], cmp="approx")
    ya, yb = f32_pairs(62, 256)
    yb[200:] = np.random.default_rng(63).integers(-40, 40, 56)
    k("math_decompose_f", "mathlib", (2,), (128,), [In(ya), In(yb), Out("f4", 6 * 256), Out("i4", 3 * 256)])
    k("math_round_f", "mathlib", (2,), (128,), [In(f32_inputs(64, 256, spread=40)), Out("f4", 6 * 256), Out("i8", 3 * 256)])
    k("math_trig_f", "mathlib", (2,), (128,), [In(f32_inputs(65, 256, spread=30)), Out("f4", 9 * 256)], cmp="approx")
    k("math_exp_log_f", "mathlib", (2,), (128,), [In(f32_inputs(66, 256, spread=20)), Out("f4", 10 * 256)], cmp="approx")
    k("math_norms_f", "mathlib", (2,), (64,), [In(f32_inputs(67, 3 * 128)), Out("f4", 6 * 128)], cmp="approx")
    fm = f32_inputs(68, 3 * 128)
    fm[300:] = np.array([1 + 2 ** -23, 1 - 2 ** -24, -1, 2 ** -63, 2 ** -63, -0.0, 2 ** -70, 2 ** -70, 1e-45, 3.0, 1 / 3,
                         -1.0, 2 ** 64, 2 ** 64, -np.inf, 2 ** -126, 0.5, -2 ** -150] * 4 + [0.0] * 12, np.float32)
    k("fma_modes", "mathlib", (2,), (64,), [In(fm), Out("f4", 8 * 128)])
    k("float_intrinsics", "mathlib", (2,), (128,), [In(fa), In(fb), Out("f4", 10 * 256)], cmp="approx")
    k("fast_intrinsics", "mathlib", (2,), (128,), [In(f32_inputs(69, 256, spread=10)), Out("f4", 9 * 256)], cmp="approx")
    k("math_double", "mathlib", (2,), (64,), [In(f64_inputs(70, 128)), In(f64_inputs(71, 128)[::-1].copy()),
                                             Out("f8", 12 * 128)], cmp="approx")
    k("double_intrinsics", "mathlib", (2,), (64,), [In(f64_inputs(72, 128)), In(f64_inputs(73, 128)[::-1].copy()),
                                                   Out("f8", 10 * 128), Out("f4", 4 * 128)], cmp="approx")
    nanin = np.random.default_rng(74).integers(0, 2 ** 32, 256, dtype=np.uint64).astype(np.uint32)
    nanin[:24] = [0x7FA00001, 0x3F800000, 0x3F800000, 0xFFC00123, 0x7F800001, 0xFF812345, 0x7FC00000, 0x7F800000,
                  0xFF800000, 0x7F800000, 0x00000000, 0x7F800000, 0xFF800000, 0xFF800000, 0x80000000, 0x00000000,
                  0x7FB00000, 0x00000001, 0x80000001, 0x7FC01234, 0xFFFFFFFF, 0x00000000, 0x00000001, 0x00000002]
    k("nan_payloads", "mathlib", (2,), (64,), [In(nanin), Out("u4", 8 * 128), Out("u8", 2 * 128)])
    # ---- misc.cu
    k("printf_formats", "misc", (1,), (64,), [In(i32_inputs(80, 64)), In(f32_inputs(81, 64)), In(f64_inputs(82, 64))],
      cmp="printf")
    k("printf_special", "misc", (1,), (64,), [In(f32_inputs(83, 64))], cmp="printf")
    k("recursion", "misc", (1,), (64,), [In(np.arange(64, dtype=np.int32) * 7 % 61), Out("i4", 3 * 64), Out("i8", 64)])
    k("fn_pointers", "misc", (1,), (64,), [In(np.random.default_rng(84).integers(0, 100, 64).astype(np.int32)),
                                          In(f32_inputs(85, 64, spread=3)), Out("f4", 64)])
    k("structs_templates", "misc", (1,), (64,), [In(rng.standard_normal(256).astype(np.float32)), Out("f4", 192),
                                                Out("f8", 64), Out("i4", 128)])
    k("local_array", "misc", (1,), (256,), [In(np.random.default_rng(86).integers(0, 10000, 256).astype(np.int32)),
                                           In(rng.standard_normal(256).astype(np.float32)), Out("f4", 256)])
    k("vector_loads", "misc", (2,), (64,), [In(f32_inputs(87, 512)), In(i32_inputs(88, 512)), In(f64_inputs(89, 256)),
                                           Out("f4", 4 * 256), Out("i4", 4 * 128), Out("f8", 2 * 128)])
    k("volatile_warp", "misc", (1,), (64,), [In(i32_inputs(90, 64) >> 8), Out("i4", 2)])
    k("nanosleep_order", "misc", (1,), (64,), [Out("i4", 64)])
    k("device_global", "misc", (1,), (128,), [In(i32_inputs(91, 128) >> 10), Out("i4", 1)])
    k("divergent_returns", "misc", (1,), (128,), [In(np.random.default_rng(92).integers(-500, 500, 128).astype(np.int32)),
                                                 Out("i4", 128)])
    # ---- warp.cu
    wi = np.random.default_rng(93).integers(-20, 20, 64).astype(np.int32)
    k("shfl_variants", "warp", (1,), (64,), [In(wi), Out("i4", 5 * 64)])
    k("partial_mask", "warp", (1,), (64,), [In(wi), Out("i4", 64)])
    k("vote", "warp", (1,), (64,), [In(wi), Out("u4", 4 * 64)])
    k("match_sync", "warp", (1,), (64,), [In(wi % 5), In(np.repeat(np.array([2 ** 40, 3, -2 ** 40, 3]), 16)),
                                         Out("u4", 4 * 64)])
    wu = np.random.default_rng(94).integers(0, 2 ** 32, 64, dtype=np.uint64).astype(np.uint32)
    k("warp_reduce_ops", "warp", (1,), (64,), [In(wu), Out("u4", 6 * 64)])
    k("cg_tiles", "warp", (1,), (64,), [In(wi), Out("i4", 6 * 64)])
    A = (rng.standard_normal(16 * 32)).astype(np.float16)
    B = (rng.standard_normal(16 * 32)).astype(np.float16)
    k("wmma_gemm", "warp", (1,), (32,), [In(A), In(B), Out("f4", 256), Out("f2", 256)])
    # ---- fastmath.cu
    ga, gb = f32_pairs(95, 256)
    k("fm_expr", "fastmath", (2,), (128,), [In(ga), In(gb), Out("f4", 8 * 256)], cmp="approx")
    k("fm_ftz_exact", "fastmath", (2,), (128,), [In(ga), In(gb), Out("f4", 4 * 256), Out("i4", 256)])
    second.add(k, types.SimpleNamespace(**globals()))
    return K


# ------------------------------------------------------------------------------------------------ build
def build(bdir: Path):
    sys.path.insert(0, str(HERE.parent))
    from bwlab.compile import compile_cuda
    bdir.mkdir(parents=True, exist_ok=True)
    for src, opts in SOURCES.items():
        c = compile_cuda(HERE / f"{src}.cu", arch="sm_90a", extra_options=(f"-I{INC}", CCCL, "-I/usr/local/cuda/include",
                                                                     "--device-int128") + opts)
        (bdir / f"{src}.ptx").write_text(c.ptx)
        (bdir / f"{src}.cubin").write_bytes(c.cubin)
        print(f"built {src}: {len(c.ptx)} chars PTX, {len(c.cubin)} bytes cubin")


from bwlab.checks.emu_corpus.running import capture_stdout, only_entry  # noqa: E402 (printf capture; one kernel's PTX)


def run_one(kd, backend, bdir: Path, mods: dict):
    if backend == "gpu":
        import cupy as xp
        if kd["src"] not in mods:
            mods[kd["src"]] = xp.RawModule(path=str(bdir / f"{kd['src']}.cubin"))
        fn = mods[kd["src"]].get_function(kd["name"])
    else:
        from bwlab import emu as xp
        ptx = (bdir / f"{kd['src']}.ptx").read_text()
        fn = xp.RawModule(ptx=only_entry(ptx, kd["name"]), name=f"{kd['src']}.cu").get_function(kd["name"])
    args, outs = [], []
    for a in kd["args"]:
        if isinstance(a, tuple) and a[0] == "in":
            args.append(xp.asarray(a[1]))
        elif isinstance(a, tuple) and a[0] == "inout":
            d = xp.asarray(a[1].copy())
            args.append(d)
            outs.append(d)
        elif isinstance(a, tuple) and a[0] == "out":
            dt = np.dtype(a[1])
            d = xp.asarray(np.full(a[2] * dt.itemsize, 0xA5, np.uint8).view(dt))
            args.append(d)
            outs.append(d)
        else:
            args.append(a)
    text: list = []
    notes = []
    with capture_stdout(text):
        if backend == "gpu":
            fn(kd["grid"], kd["block"], tuple(args), shared_mem=kd["shared"])
            xp.cuda.Device().synchronize()
        else:
            with np.errstate(all="ignore"), warnings.catch_warnings(record=True) as ws:
                warnings.simplefilter("always")
                fn(kd["grid"], kd["block"], tuple(args), shared_mem=kd["shared"])
            notes = [str(w.message) for w in ws if type(w.message).__name__ == "ApproxNote"]
    res = {f"out{j}": np.asarray(o.get()) for j, o in enumerate(outs)}
    res["printf"] = np.array(text[0])
    res["notes"] = np.array("\n".join(notes))
    return res


def run_all(backend, bdir: Path, odir: Path, only=()):
    odir.mkdir(parents=True, exist_ok=True)
    mods: dict = {}
    status = {}
    for kd in kernels():
        if only and kd["name"] not in only:
            continue
        try:
            res = run_one(kd, backend, bdir, mods)
            np.savez(odir / f"{kd['name']}.npz", **res)
            status[kd["name"]] = "ok"
        except Exception as e:  # noqa: BLE001 - recorded per kernel
            status[kd["name"]] = f"{type(e).__name__}: {e}"[:2000] + "\n" + traceback.format_exc()[-3000:]
        print(kd["name"], status[kd["name"]].splitlines()[0][:300], flush=True)
    prev = {}
    if (odir / "status.json").exists() and only:
        prev = json.loads((odir / "status.json").read_text())
    prev.update(status)
    (odir / "status.json").write_text(json.dumps(prev, indent=1))


# ------------------------------------------------------------------------------------------------ compare
def ulps(r, g):
    """Distance in units in the last place between two float arrays of one dtype (NaN vs NaN: 0)."""
    it = {2: np.int16, 4: np.int32, 8: np.int64}[r.dtype.itemsize]
    ri, gi = r.view(it).astype(np.float64), g.view(it).astype(np.float64)
    # map to a monotonic integer line
    big = float(2 ** (8 * r.dtype.itemsize - 1))
    ri = np.where(ri < 0, -big - ri, ri)
    gi = np.where(gi < 0, -big - gi, gi)
    d = np.abs(ri - gi)
    both_nan = np.isnan(r.astype(np.float64)) & np.isnan(g.astype(np.float64))
    return np.where(both_nan, 0, d)


def per_warp(text):
    d = {}
    for ln in text.splitlines():
        d.setdefault(ln.split(" ", 1)[0], []).append(ln)
    return {k: sorted(v) for k, v in d.items()}


def compare_one(kd, g, e):
    if kd["cmp"] == "printf":
        pg, pe = per_warp(str(g["printf"])), per_warp(str(e["printf"]))
        if pg == pe:
            return "match", ""
        for w in sorted(set(pg) | set(pe)):
            a, b = pg.get(w, []), pe.get(w, [])
            if a != b:
                miss = [x for x in a if x not in b][:1]
                extra = [x for x in b if x not in a][:1]
                return "differs", f"{w}: GPU {len(a)} lines, emu {len(b)}; GPU {miss!r} emu {extra!r}"
    worst = []
    for key in sorted(k for k in g.files if k.startswith("out")):
        r, h = g[key], e[key]
        j = int(key[3:])
        if j in kd["sorted_outs"]:
            r, h = np.sort(r), np.sort(h)
        if r.tobytes() == h.tobytes():
            continue
        rb = r.view(np.uint8).reshape(len(r), -1)
        hb = h.view(np.uint8).reshape(len(h), -1)
        bad = np.nonzero((rb != hb).any(axis=1))[0]
        i = int(bad[0])
        desc = f"{key}[{i}] GPU {r[i:i+1].tobytes()[::-1].hex()} emu {h[i:i+1].tobytes()[::-1].hex()} " \
               f"({len(bad)}/{len(r)} differ)"
        if r.dtype.kind == "f" or r.dtype in (np.uint16, np.uint32) and kd["cmp"] == "approx":
            fr = r if r.dtype.kind == "f" else r.view({2: np.float16, 4: np.float32}[r.dtype.itemsize])
            fh = h if h.dtype.kind == "f" else h.view(fr.dtype)
            u = ulps(fr, fh)
            desc += f", max {int(u.max())} ulp at [{int(np.argmax(u))}]"
        worst.append(desc)
    if not worst:
        return "match", ""
    return ("approx" if kd["cmp"] == "approx" else "differs"), "; ".join(worst)


def compare_all(gdir: Path, edir: Path, bdir: Path):
    gs = json.loads((gdir / "status.json").read_text())
    es = json.loads((edir / "status.json").read_text())
    counts = {}
    rows = []
    for kd in kernels():
        n = kd["name"]
        if gs.get(n) != "ok":
            verdict, why = "gpu-failed", gs.get(n, "absent").splitlines()[0]
        elif es.get(n) != "ok":
            msg = es.get(n, "absent")
            first = msg.splitlines()[0]
            verdict = "refuses" if first.startswith(("UnsupportedInstruction", "Emu", "Divergence", "Protocol")) \
                else "crashes"
            why = first[:400]
        else:
            verdict, why = compare_one(kd, np.load(gdir / f"{n}.npz"), np.load(edir / f"{n}.npz"))
            if verdict == "approx":
                ptx = only_entry((bdir / f"{kd['src']}.ptx").read_text(), n)
                ops = sorted(set(re.findall(r"\b([a-z0-9]+\.approx[.a-z0-9]*)", ptx)))
                why = f"[approx ops: {' '.join(ops) or 'none'}] " + why
        counts[verdict] = counts.get(verdict, 0) + 1
        rows.append((n, kd["src"], verdict, why))
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} |")
    print(counts)


def pack(gdir: Path, bdir: Path, dest: Path, header: Path):
    """One compressed file for the tests: every kernel's GPU outputs and printf text, the PTX each source
    compiled to (what the emulator runs; the GPU ran the cubin of the same build) and the GPU's header."""
    z = {}
    status = json.loads((gdir / "status.json").read_text())
    ran = {kd["src"] for kd in kernels() if status.get(kd["name"]) == "ok"}   # the sources the GPU run covered
    for src in SOURCES:
        if src in ran:
            z[f"ptx/{src}"] = np.frombuffer((bdir / f"{src}.ptx").read_bytes(), np.uint8)
    for kd in kernels():
        if status.get(kd["name"]) != "ok":
            continue
        with np.load(gdir / f"{kd['name']}.npz") as r:
            for key in r.files:
                if key.startswith("out"):
                    z[f"{kd['name']}/{key}"] = r[key]
            z[f"{kd['name']}/printf"] = np.frombuffer(str(r["printf"]).encode(), np.uint8)
    z["header"] = np.frombuffer(header.read_bytes(), np.uint8)
    dest.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(dest, **z)
    print(f"wrote {dest}: {dest.stat().st_size} bytes, {len(z)} arrays")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "build":
        build(Path(sys.argv[2]))
    elif cmd in ("gpu", "emu"):
        if cmd == "emu":
            sys.path.insert(0, str(HERE.parent))
        run_all(cmd, Path(sys.argv[2]), Path(sys.argv[3]), tuple(sys.argv[4:]))
    elif cmd == "compare":
        sys.path.insert(0, str(HERE.parent))
        compare_all(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]))
    elif cmd == "pack":
        pack(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), Path(sys.argv[5]))
    elif cmd == "list":
        print(len(kernels()), "kernels")
