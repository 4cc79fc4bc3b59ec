"""The corpus's arithmetic chapters: integer, float, float_ftz, half, conversion, compare, logic, and the
approximate instructions with the error bounds the GPU documents for them."""
from __future__ import annotations

import numpy as np

from .inputs import (BF16_EDGES, F32_EDGES, F64_EDGES, H16_EDGES, f32, f64, fma_triples_f32, half_bits, half_pairs,
                     pairs_f32, pairs_f64, pairs_i32, pairs_i64, rand_bits32, rand_f32, rng_for, unary_f32,
                     unary_i32, unary_i64)
from .manifest import In, K, Out, Val, Within, elem


def _integer():
    c = "integer"
    a, b = pairs_i32("int32")
    elem("int_add_sub_s32", c, [a, b], "i4", 2)
    elem("int_mul_s32", c, [a, b], "i4", 3)
    elem("int_mul_wide", c, [a, b], "i8", 2)
    r = rng_for("mad")
    elem("int_mad_s32", c, [a, b, r.integers(-(1 << 31), 1 << 31, len(a)).astype(np.int32)], "i4", 1)
    elem("int_div_rem_s32", c, [a, b], "i4", 2)
    elem("int_div_rem_u32", c, [a.view(np.uint32), b.view(np.uint32)], "u4", 2)
    elem("int_div_edge_asm", c, [a, b], "i4", 4, note="division by zero and INT_MIN/-1: the machine's value")
    x, y = pairs_i64("int64")
    elem("int_div_rem_s64", c, [x, y], "i8", 2)
    elem("int_div_rem_u64", c, [x.view(np.uint64), y.view(np.uint64)], "u8", 2)
    elem("int_div_const", c, [unary_i64("divc")], "i8", 6)
    elem("int_mul_s64", c, [x, y], "i8", 4)
    elem("int_add_sub_s64", c, [x, y], "i8", 3)
    elem("int_mul24", c, [a, b], "i4", 4)
    elem("int_sad", c, [a, b, np.roll(a, 3)], "u4", 2)
    u = unary_i32("bits").view(np.uint32)
    elem("int_bitcount32", c, [u], "i4", 4)
    u64 = unary_i64("bits64").view(np.uint64)
    elem("int_bitcount64", c, [u64], "i8", 4)
    elem("int_bfind", c, [u64], "u4", 6)
    r = rng_for("bfe")
    pl = np.array([p | (ln << 8) for p in (0, 1, 7, 16, 24, 31, 32, 33, 63, 64, 200, 255)
                   for ln in (0, 1, 5, 8, 16, 31, 32, 33, 64, 255)], np.uint32)
    v32 = np.resize(unary_i32("bfe32"), len(pl)).view(np.uint32)
    v64 = np.resize(unary_i64("bfe64"), len(pl)).view(np.uint64)
    elem("int_bfe32", c, [v32, pl], "u4", 2)
    elem("int_bfe64", c, [v64, pl], "u8", 2)
    elem("int_bfi32", c, [v32, np.roll(v32, 7), pl], "u4", 1)
    elem("int_bfi64", c, [v64, np.roll(v64, 7), pl], "u8", 1)
    elem("int_bitfield_c", c, [u], "u4", 3)
    sel = np.concatenate([np.array([0x3210, 0x7654, 0x0123, 0x4567, 0x1111, 0x7777, 0x5140, 0x8888, 0x9ABC,
                                    0xFFFF, 0xF0E1, 0x12345678, 0x0000, 0x6420, 0x7531, 0xBA98], np.uint32),
                          r.integers(0, 1 << 32, 48, dtype=np.uint64).astype(np.uint32)])
    pa = np.resize(u, len(sel)); pb = np.resize(u[::-1], len(sel))
    elem("int_byte_perm", c, [pa, pb, sel], "u4", 1)
    modes = np.resize(np.arange(4, dtype=np.uint32), len(sel)) | (sel & 0xFFFC)
    elem("int_prmt_modes", c, [pa, pb, modes], "u4", 6)
    elem("int_dp4a_dp2a", c, [a, b, np.roll(a, 1)], "i4", 6)
    q = unary_i64("int128", 96).view(np.uint64)
    K("int_int128", c, [In(q), In(np.roll(q, 11)), Out("u8", 8 * 48), Val(np.int32(48))], block=(64, 1, 1))
    aw = np.resize(np.concatenate([np.array([0xFFFFFFFF] * 8 + [0, 1, 0x80000000, 0x7FFFFFFF], np.uint32),
                                   rand_bits32(rng_for("addc"), 116)]), 128)
    K("int_addc_chain", c, [In(aw), In(np.roll(aw, 3) ^ np.uint32(0x1)), Out("u4", 320), Val(np.int32(32))],
      block=(32, 1, 1))
    elem("int_add_sat", c, [a, b], "i4", 2)
    elem("int_simd_video", c, [a.view(np.uint32), b.view(np.uint32)], "u4", 12)
    sh = np.resize(np.array([0, 1, 5, 31, 32, 33, 63, 64, 65, 100, 255, 0xFFFFFFFF, 0x80000000], np.uint32), len(a))
    elem("int_funnel", c, [a.view(np.uint32), b.view(np.uint32), sh], "u4", 4)
    elem("int_shift_wide", c, [np.resize(u64, len(sh)), sh], "u8", 6)
    elem("int_min_max_abs", c, [a, b], "i4", 6)
    elem("int_min_max_s64", c, [x, y], "i8", 5)
    elem("int_hadd_u32", c, [a.view(np.uint32), b.view(np.uint32)], "u4", 2)
    elem("int_collatz", c, [np.arange(1, 65, dtype=np.uint32) * 7919], "u4", 1, block=32)
    elem("int_hash_mix", c, [u], "u4", 1)


def _float():
    c = "float"
    a, b = pairs_f32("f32")
    elem("flt_add_modes", c, [a, b], "f4", 4)
    elem("flt_sub_modes", c, [a, b], "f4", 4)
    elem("flt_mul_modes", c, [a, b], "f4", 4)
    fa, fb, fc = fma_triples_f32("fma")
    elem("flt_fma_modes", c, [fa, fb, fc], "f4", 5)
    elem("flt_fma_contract", c, [fa, fb, fc], "f4", 2)
    elem("flt_div", c, [a, b], "f4", 6)
    u = unary_f32("f32u")
    elem("flt_rcp_modes", c, [u], "f4", 4)
    elem("flt_sqrt", c, [np.abs(u) * np.where(np.arange(len(u)) % 9 == 0, -1, 1).astype(np.float32)], "f4", 5)
    elem("flt_min_max", c, [a, b], "f4", 4)
    elem("flt_min_max_nan_asm", c, [a, b], "f4", 4)
    elem("flt_sign_ops", c, [a, b], "f4", 4)
    elem("flt_nan_results", c, [a, b], "f4", 6)
    elem("flt_fmod_rem", c, [a, b], "f4", 3)
    ex = np.resize(np.array([0, 1, -1, 23, -126, -149, -150, 127, 128, 254, -300, 300], np.int32), len(u))
    elem("flt_frexp_ldexp", c, [u, ex], "f4", 5)
    elem("flt_nextafter_modf", c, [a, b], "f4", 3)
    K("flt_sum_in_order", c, [In(rand_f32(rng_for("sum"), 256, 4)), Out("f4", 32), Val(np.int32(256))])
    elem("flt_poly_horner", c, [rand_f32(rng_for("horner"), 128, 1)], "f4", 1)
    d, e = pairs_f64("f64")
    elem("dbl_add_mul_modes", c, [d, e], "f8", 8)
    r = rng_for("dfma")
    elem("dbl_fma_modes", c, [d, e, r.standard_normal(len(d)) * 10.0 ** r.uniform(-30, 30, len(d))], "f8", 5)
    elem("dbl_div_sqrt", c, [d, e], "f8", 8)
    elem("dbl_min_max_sign", c, [d, e], "f8", 6)
    elem("dbl_nan_results", c, [d, e], "f8", 4)
    elem("dbl_fmod_trunc", c, [d, e], "f8", 3)
    elem("mixed_float_double", c, [u, np.resize(F64_EDGES, len(u))], "f8", 3)
    elem("flt_zero_sign_modes", c, [a, b], "f4", 8)


def _float_ftz():
    c = "float_ftz"
    fa, fb, fc = fma_triples_f32("ftz")
    elem("ftz_arith", c, [fa, fb, fc], "f4", 6)
    a, b = pairs_f32("ftz2")
    elem("ftz_div_sqrt", c, [a, b], "f4", 3)
    elem("ftz_min_max_abs", c, [a, b], "f4", 4)
    elem("ftz_compare", c, [a, b], "i4", 4)
    elem("ftz_convert", c, [unary_f32("ftzc")], "f8", 3)


def _half():
    c = "half"
    a, b = half_pairs("h", H16_EDGES)
    elem("half_arith", c, [a, b], "u2", 6)
    cc = np.roll(a, 17)
    elem("half_fma", c, [a, b, cc], "u2", 4)
    elem("half_minmax", c, [a, b], "u2", 4)
    elem("half_compare", c, [a, b], "u1", 8)
    w = lambda x: np.ascontiguousarray(x[: len(x) // 2 * 2]).view(np.uint32)  # noqa: E731
    elem("half2_arith", c, [w(a), w(b), w(cc)], "u4", 6)
    elem("half2_compare", c, [w(a), w(b)], "u4", 4)
    p, q = half_pairs("bf", BF16_EDGES, kind="bf16")
    pc = np.roll(p, 17)
    elem("bf16_arith", c, [p, q], "u2", 6)
    elem("bf16_fma", c, [p, q, pc], "u2", 3)
    elem("bf16_minmax_compare", c, [p, q], "u2", 6)
    elem("bf162_arith", c, [w(p), w(q), w(pc)], "u4", 5)
    r = rng_for("hdot")
    hv = (r.standard_normal(256) * 4).astype(np.float16).view(np.uint16)
    K("half_dot_float_acc", c, [In(hv), In(np.roll(hv, 9)), Out("f4", 32), Val(np.int32(256))])
    elem("half_math_fns", c, [half_bits("hm", H16_EDGES)], "u2", 4)
    elem("bf16_math_fns", c, [half_bits("bm", BF16_EDGES, kind="bf16")], "u2", 4)


def _conversion():
    c = "conversion"
    u = unary_f32("cvt", 160, spread=10)
    ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 1e10, -1e10, 2147483520.0, 2147483648.0, -2147483648.0,
                     4294967040.0, 4294967296.0, 9.2233715e18, -9.2233715e18, 0.49999997, 8388609.0, 16777217.0],
                    np.float32)
    fu = np.concatenate([ties, u])
    elem("cvt_f2i", c, [fu], "i4", 8)
    elem("cvt_f2ll", c, [fu], "i8", 6)
    du = np.concatenate([F64_EDGES, ties.astype(np.float64) + 0.0, np.array([2.5, -2.5, 4294967295.5, 1e300, -0.5])])
    elem("cvt_d2i", c, [du], "i8", 6)
    elem("cvt_i2f", c, [unary_i64("i2f")], "f4", 12)
    elem("cvt_i2d", c, [unary_i64("i2d")], "f8", 5)
    r = rng_for("d2f")
    dd = np.concatenate([F64_EDGES, r.standard_normal(64) * 10.0 ** r.uniform(-50, 50, 64),
                         f64(np.array([0x36A0000000000001, 0x369FFFFFFFFFFFFF, 0x3810000000000001,
                                       0x47EFFFFFF0000001, 0x3FF0000010000000, 0x3FF0000030000000], np.uint64))])
    elem("cvt_d2f", c, [dd], "f4", 4)
    elem("cvt_f2d_roundtrip", c, [u], "f4", 2)
    elem("cvt_f2h", c, [fu], "u2", 4)
    elem("cvt_f2bf", c, [fu], "u2", 4)
    hd = np.concatenate([dd, f64(np.array([0x3F50020000000001, 0x3F50020000000000, 0x40FFFE0000000001,
                                           0x3E70000000000001, 0x3FF0080000000001, 0x3FF0080000000000,
                                           0x380FF00000000001, 0x3FF0100000000000], np.uint64))])
    elem("cvt_d2h_bf", c, [hd], "u2", 2)
    elem("cvt_h2f_bf2f", c, [np.concatenate([H16_EDGES, BF16_EDGES, rand_bits32(r, 64).astype(np.uint16)])], "f4", 2)
    ii = np.concatenate([unary_i32("i2h"), np.array([2049, 2051, 4097, 65519, 65520, 65535, 257, 259, -257,
                                                     16777217, 0x7FFFFFFF], np.int32)])
    elem("cvt_i2h_bf", c, [ii], "u2", 6)
    elem("cvt_h2i", c, [np.concatenate([H16_EDGES, BF16_EDGES, rand_bits32(r, 64).astype(np.uint16)])], "i4", 6)
    pa, pb = pairs_f32("pack2")
    elem("cvt_pack2", c, [pa, pb], "u4", 2)
    rf = np.concatenate([ties, np.array([-0.0, 0.49999997, -0.49999997, 8388607.5, -8388607.5, 1.0000001, -3.5,
                                         4.5, 5.5, -4.5], np.float32), u])
    elem("cvt_round_fns", c, [rf], "f4", 6)
    elem("cvt_round_fns_f64", c, [np.concatenate([rf.astype(np.float64), F64_EDGES,
                                                   np.array([4503599627370495.5, -4503599627370495.5, 0.5 - 2**-54])])],
         "f8", 6)
    elem("cvt_lround", c, [np.clip(rf, -1e15, 1e15).astype(np.float32)], "i8", 3)
    elem("cvt_saturate", c, [fu], "f4", 2)
    elem("cvt_int_narrow", c, [unary_i64("narrow")], "i4", 5)
    elem("cvt_int_sat_asm", c, [unary_i64("narrowsat")], "i4", 5)
    e8 = np.concatenate([F32_EDGES, np.array([448, 464, 480, 496, 512, -448, -464, 57344, 61440, 65536, 0.001953125,
                                              0.0009765625, 0.00146484375, 1.0625, 1.125, 1.1875, 2 ** -9, 2 ** -10,
                                              2 ** -16, 2 ** -17, 1.5 * 2 ** -16, 1.5 * 2 ** -17, 2 ** -7 * 1.0625,
                                              240.0, 248.0, 256.0, 272.0], np.float32),
                         rand_f32(r, 64, 3)]).astype(np.float32)
    elem("cvt_fp8_from_f32", c, [e8, np.roll(e8, 7)], "u2", 4)
    h2 = np.concatenate([H16_EDGES, rand_bits32(r, 38).astype(np.uint16), np.array([0x5F00, 0x5F40, 0x5F80, 0x5FA0,
                                                                                  0x7800, 0x7B00, 0x1C00, 0x1800,
                                                                                  0x1A00, 0x0100], np.uint16)])
    elem("cvt_fp8_from_f16x2", c, [np.ascontiguousarray(h2[: len(h2) // 2 * 2]).view(np.uint32)], "u2", 3)
    elem("cvt_fp8_to_f16x2", c, [np.arange(0, 65536, 257, dtype=np.uint32).astype(np.uint16)], "u4", 3)
    elem("cvt_f32_to_f16x2_bf16x2_asm", c, [pa, pb], "u4", 4)
    elem("cvt_tf32", c, [np.concatenate([fu, f32(np.array([0x3F801000, 0x3F800FFF, 0x3F803000, 0x7F7FF000,
                                                           0x7F7FFFFF, 0x00001000], np.uint32))])], "u4", 2)
    elem("cvt_bits", c, [fu], "i4", 3)
    elem("cvt_c_casts_specials", c, [fu, np.resize(du, len(fu))], "i8", 8)
    elem("cvt_half2_pairs", c, [pa, pb], "u4", 4)


def _compare():
    c = "compare"
    a, b = pairs_f32("cmp")
    elem("cmp_float_ordered", c, [a, b], "u1", 6)
    elem("cmp_float_unordered_asm", c, [a, b], "u4", 1)
    d, e = pairs_f64("cmpd")
    elem("cmp_double", c, [d, e], "u1", 5)
    elem("cmp_classify", c, [unary_f32("cls")], "i4", 5)
    x, y = pairs_i32("cmpi")
    elem("cmp_int_mixed", c, [x, y], "u1", 6)
    elem("cmp_select", c, [a, b], "f4", 4)
    elem("cmp_selp_asm", c, [x, y], "i4", 2)
    elem("cmp_set_asm", c, [a, b], "u4", 3)
    elem("cmp_pred_logic", c, [x, y], "i4", 1)


def _logic():
    c = "logic"
    r = rng_for("logic")
    u = np.concatenate([np.array([0, 0xFFFFFFFF, 0x80000000, 1, 0x55555555, 0xAAAAAAAA, 0x0F0F0F0F], np.uint32),
                        rand_bits32(r, 121)])
    v, w = np.roll(u, 5) ^ rand_bits32(r, 128), np.roll(u, 11)
    elem("logic_lop3_exprs", c, [u, v, w], "u4", 6)
    elem("logic_lop3_asm", c, [u, v, w], "u4", 4)
    sh = np.resize(np.array([0, 1, 5, 31, 32, 33, 63, 64, 65, 100, 255, 0xFFFFFFFF, 0x80000000, 16], np.uint32), 128)
    elem("logic_shf_asm", c, [u, v, sh], "u4", 4)
    u64 = unary_i64("rot64", 128).view(np.uint64)
    elem("logic_rotate64", c, [u64, sh], "u8", 2)
    pl = np.array([p | (ln << 8) for p in (0, 1, 7, 16, 31, 32, 33, 200) for ln in (0, 1, 5, 16, 31, 32, 33, 64)],
                  np.uint32)
    elem("logic_bmsk_szext", c, [np.resize(u, len(pl)), pl], "u4", 4)
    elem("logic_not_cnot", c, [u], "u4", 3)
    elem("logic_bitset64", c, [u64, sh], "u8", 3)
    elem("logic_gray_parity", c, [u], "u4", 2)



# The GPU's documented error bounds for the approximate instructions (CUDA C++ Programming Guide,
# "Intrinsic Functions", and the PTX ISA's .approx instructions). The emulator may compute the exact
# value; the bound is the distance the GPU's answer may have from it (plus half an ulp of rounding).
APPROX_BOUNDS = {
    "apx_exp": Within(ulp=2, doc="__expf / exp2f: ex2.approx after an exact multiply; ex2 measured within 2 ulp"),
    "apx_ex2_asm": Within(ulp=2, doc="ex2.approx.f32: measured within 2 ulp"),
    "apx_log": Within(ulp=3, abs=2.4e-7, doc="__logf/__log2f/__log10f: lg2.approx measured within 2 ulp or 2.38e-7 "
                                              "absolute, then one rounded multiply"),
    "apx_sin_cos": Within(ulp=2, abs=3.6e-7, doc="__sinf/__cosf: sin/cos.approx measured within 2 ulp or 3.58e-7 "
                                                  "absolute"),
    "apx_rsqrt_rcp": Within(ulp=2, doc="rsqrt.approx measured 2 ulp; rcp and sqrt .approx 1 ulp"),
    "apx_fdividef": Within(ulp=2, doc="div.approx/div.full: measured within 2 ulp (2^32 operand pairs)"),
    "apx_tanh_asm": Within(ulp=134, doc="tanh.approx.f32: measured within 134 ulp"),
    "apx_powf_fast": Within(rel=2.0 ** -12, abs=2.0 ** -20, doc="__powf = ex2(y lg2 x): lg2's measured error grows "
                                                                "with |y| (composed, not measured as one)"),
    "apx_softmax_row": Within(ulp=6, doc="__expf of values <= 0 and __fdividef: each measured within 2 ulp, "
                                         "composed through the row sum"),
}
# Bounds measured against an H200 over every input: docs/results/approx_h200.txt (bwlab.hw.approx). The
# 16-bit forms (ex2/tanh .f16/.bf16) are the H200's recorded tables: byte for byte.


def _approx():
    c = "approx"
    r = rng_for("approx")
    sp = f32([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001])
    x10 = np.concatenate([sp, r.uniform(-10, 10, 122).astype(np.float32)])
    elem("apx_exp", c, [x10], "f4", 2, cmp=APPROX_BOUNDS["apx_exp"])
    elem("apx_ex2_asm", c, [np.concatenate([sp, r.uniform(-20, 20, 122).astype(np.float32)])], "f4", 2,
         cmp=APPROX_BOUNDS["apx_ex2_asm"])
    pos = np.concatenate([sp, np.float32(2.0) ** r.uniform(-30, 30, 90).astype(np.float32),
                          r.uniform(0.5, 2, 32).astype(np.float32)]).astype(np.float32)
    elem("apx_log", c, [pos], "f4", 3, cmp=APPROX_BOUNDS["apx_log"])
    elem("apx_sin_cos", c, [np.concatenate([sp[:2], r.uniform(-np.pi, np.pi, 126).astype(np.float32)])], "f4", 4,
         cmp=APPROX_BOUNDS["apx_sin_cos"])
    elem("apx_rsqrt_rcp", c, [pos], "f4", 3, cmp=APPROX_BOUNDS["apx_rsqrt_rcp"])
    b = np.float32(2.0) ** r.uniform(-60, 60, 128).astype(np.float32) * np.sign(r.standard_normal(128)).astype(
        np.float32)
    elem("apx_fdividef", c, [rand_f32(r, 128, 8), b.astype(np.float32)], "f4", 2, cmp=APPROX_BOUNDS["apx_fdividef"])
    elem("apx_tanh_asm", c, [np.concatenate([sp, r.uniform(-6, 6, 122).astype(np.float32)])], "f4", 1,
         cmp=APPROX_BOUNDS["apx_tanh_asm"])
    elem("apx_powf_fast", c, [r.uniform(0.1, 4, 128).astype(np.float32), r.uniform(-1.5, 1.5, 128).astype(np.float32)],
         "f4", 2, cmp=APPROX_BOUNDS["apx_powf_fast"])
    hx = r.uniform(-4, 4, 256).astype(np.float16).view(np.uint16)
    elem("apx_half_ex2_tanh", c, [hx.view(np.uint32)], "f2", 4)
    K("apx_softmax_row", c, [In(r.uniform(-8, 8, 32).astype(np.float32)), Out("f4", 32)],
      cmp=APPROX_BOUNDS["apx_softmax_row"])


