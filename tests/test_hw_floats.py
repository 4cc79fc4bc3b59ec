"""bwlab.hw.floats against an independent exact reference.

The reference decodes with NumPy / ml_dtypes (not with the module's decoder), computes exactly with
`fractions.Fraction` and rounds with `ref_round`, a round-to-format routine written here on
Fractions (binade search, scaled quotient) that shares no code with the module's integer
rounding. The fast paths are also compared with NumPy (IEEE rn for f16/f32/f64) and ml_dtypes.
"""
from __future__ import annotations

import functools
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from bwlab.hw import floats as F
from bwlab.hw import ints as I

RNG = np.random.default_rng(29)

# name: (exponent bits, mantissa bits, kind, storage dtype, NumPy/ml_dtypes value type)
SPEC = {
    "f64": (11, 52, "ieee", np.uint64, np.float64),
    "f32": (8, 23, "ieee", np.uint32, np.float32),
    "f16": (5, 10, "ieee", np.uint16, np.float16),
    "bf16": (8, 7, "ieee", np.uint16, ml_dtypes.bfloat16),
    "e5m2": (5, 2, "ieee", np.uint8, ml_dtypes.float8_e5m2),
    "e4m3": (4, 3, "e4m3", np.uint8, ml_dtypes.float8_e4m3fn),
    "e3m2": (3, 2, "none", np.uint8, ml_dtypes.float6_e3m2fn),
    "e2m3": (2, 3, "none", np.uint8, ml_dtypes.float6_e2m3fn),
    "e2m1": (2, 1, "none", np.uint8, ml_dtypes.float4_e2m1fn),
}
CANON = {"f32": 0x7FFFFFFF, "f16": 0x7FFF, "bf16": 0x7FFF}


def ref_decode(bits, name):
    """Raw bits -> list of Fraction / 'nan' / ('inf', sign) / ('zero', sign), via NumPy/ml_dtypes."""
    if name == "tf32":
        return ref_decode(np.asarray(bits, np.uint32), "f32")
    e, m, kind, st, vt = SPEC[name]
    vals = np.asarray(bits).astype(st).view(vt) if st != np.uint8 else np.asarray(bits, np.uint8).view(vt)
    out = []
    with np.errstate(invalid="ignore"):
        vals = vals.astype(np.float64)
    for v, b in zip(vals, np.ravel(bits)):
        w = 1 + e + m
        neg = (int(b) >> (w - 1)) & 1 if kind != "none" or True else 0
        if math.isnan(v):
            out.append("nan")
        elif math.isinf(v):
            out.append(("inf", v < 0))
        elif v == 0:
            out.append(("zero", bool(neg)))
        else:
            out.append(Fraction(float(v)))
    return out


@functools.lru_cache(None)
def ref_max(name):
    e, m, kind, *_ = SPEC.get(name, (8, 10, "ieee")) if name != "tf32" else (8, 10, "ieee", None, None)
    bias = 2 ** (e - 1) - 1
    if kind == "ieee":
        top = 2 ** e - 2 - bias
        return (2 - Fraction(1, 2 ** m)) * Fraction(2) ** top
    if kind == "e4m3":
        return Fraction(448)
    return (2 - Fraction(1, 2 ** m)) * Fraction(2) ** (2 ** e - 1 - bias)


@functools.lru_cache(None)
def ref_max_exp(name):
    m = ref_max(name)
    k = 0
    while Fraction(2) ** (k + 1) <= m:
        k += 1
    return k


def _fmt(name):
    if name == "tf32":
        return 8, 10, "ieee"
    return SPEC[name][:3]


def ref_round(q, name, rnd, neg_zero=False, satfinite=False):
    """Exact value q (Fraction, or ('zero', sign)) -> raw bits of `name`, rounded once."""
    e, m, kind = _fmt(name)
    w = 1 + e + m
    bias = 2 ** (e - 1) - 1
    emin = 1 - bias
    shift = 13 if name == "tf32" else 0
    if isinstance(q, tuple):
        return (int(q[1]) << (w - 1)) << shift
    neg = q < 0
    a = abs(q)
    if a == 0:
        return (int(neg_zero) << (w - 1)) << shift
    k = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** k > a:
        k -= 1
    while Fraction(2) ** (k + 1) <= a:
        k += 1
    k = max(k, emin)
    ulp = Fraction(2) ** (k - m)
    t = a / ulp
    n = t.numerator // t.denominator
    frac = t - n
    up = {"rn": frac > Fraction(1, 2) or (frac == Fraction(1, 2) and n % 2 == 1),
          "rna": frac >= Fraction(1, 2), "rz": False,
          "rm": neg and frac > 0, "rp": (not neg) and frac > 0}[rnd]
    n += int(up)
    val = n * ulp
    if val > ref_max(name):
        big = satfinite or kind == "none" or rnd == "rz" or (rnd == "rm" and not neg) or (rnd == "rp" and neg)
        if kind == "e4m3" and not satfinite:
            code = 0x7F
        elif big:
            val = ref_max(name)
            code = None
        else:
            code = ((2 ** e - 1) << m)
        if code is not None:
            return ((int(neg) << (w - 1)) | code) << shift
    # encode val
    if val < Fraction(2) ** emin:
        code = int(val / Fraction(2) ** (emin - m))
    else:
        kk = min(k, ref_max_exp(name))
        while Fraction(2) ** (kk + 1) <= val:
            kk += 1
        mant = val / Fraction(2) ** kk - 1
        code = ((kk + bias) << m) | int(mant * 2 ** m)
    return ((int(neg) << (w - 1)) | code) << shift


def edge_f32(n=400):
    """f32 bit patterns of every edge class plus random ones."""
    special = [0, 0x80000000, 1, 0x80000001, 0x7FFFFF, 0x800000, 0x00400000, 0x00400001, 0x3F800000,
               0x3F800001, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
               0xFFC12345, 0x3FC00000, 0x40200000, 0x33800000, 0x4B000001, 0x00000003, 0x0C000000]
    r = RNG.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
    # random values of modest exponent (so sums meet), some subnormal
    near = (RNG.integers(0x30000000, 0x50000000, n, dtype=np.uint64) |
            (RNG.integers(0, 2, n, dtype=np.uint64) << np.uint64(31))).astype(np.uint32)
    sub = RNG.integers(0, 0x01000000, n // 4, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([np.array(special, np.uint32), r, near, sub])


# ------------------------------------------------------------------ cvt


def _cvt_inputs_f64():
    vals = [0.0, -0.0, 1.0, -1.0, 1 / 3, -2 / 3, 65504.0, 65520.0, 65519.999, 1e-8, -1e-8, 2.0 ** -24,
            2.0 ** -25, 3 * 2.0 ** -26, 448.0, 464.0, 480.0, 57344.0, 61440.0, 6.0, 7.0, 0.25, 0.75,
            7.5, 28.0, 30.0, 3.4028235e38, 3.4028236e38, 1e300, -1e300, 5e-324, 1e-310, 2.0 ** -149,
            2.0 ** -150, 3 * 2.0 ** -151, 1.0 + 2.0 ** -24, 1.0 + 2.0 ** -11, 1.0 + 2.0 ** -8 + 2.0 ** -40]
    rnd = RNG.standard_normal(300) * np.exp2(RNG.integers(-40, 40, 300))
    small = RNG.standard_normal(200) * 4
    return np.concatenate([np.array(vals), rnd, small])


@pytest.mark.parametrize("dst", ["f32", "f16", "bf16", "tf32"])
@pytest.mark.parametrize("rnd", ["rn", "rz", "rm", "rp"])
def test_cvt_f64_to_narrow_all_modes(dst, rnd):
    x = _cvt_inputs_f64()
    # also the exact midpoints of the target (and one f64 ulp either side)
    e, m, _ = _fmt(dst)
    mids = np.ldexp(2.0 * RNG.integers(2 ** m, 2 ** (m + 1), 60) + 1, -(m + 1)) * np.exp2(RNG.integers(-10, 10, 60))
    x = np.concatenate([x, mids, np.nextafter(mids, 0), np.nextafter(mids, 10)])
    got = F.cvt(x.view(np.uint64), "f64", dst, rnd)
    want = [ref_round(q, dst, rnd) for q in ref_decode(x.view(np.uint64), "f64")]
    assert [int(g) for g in got] == want


@pytest.mark.parametrize("dst", ["f16", "bf16", "tf32", "e4m3", "e5m2", "e2m1"])
def test_cvt_f32_sources_all_modes(dst):
    x = edge_f32(100)
    modes = ["rn"] if dst in ("e4m3", "e5m2", "e2m1") else ["rn", "rz", "rm", "rp"]
    for rnd in modes:
        sf = dst in ("e4m3", "e5m2", "e2m1")
        got = F.cvt(x, "f32", dst, rnd, satfinite=sf)
        for q, g, b in zip(ref_decode(x, "f32"), got, x):
            if q == "nan":
                continue
            if isinstance(q, tuple) and q[0] == "inf":
                continue
            assert int(g) == ref_round(q, dst, rnd, satfinite=sf), (dst, rnd, hex(int(b)))
    with pytest.raises(ValueError, match="rounding modifier"):
        F.cvt(x, "f32", "f16")


def test_cvt_rn_matches_numpy_and_ml_dtypes():
    x = _cvt_inputs_f64()
    with np.errstate(over="ignore"):
        h, f = x.astype(np.float16), x.astype(np.float32)
    assert np.array_equal(F.cvt(x.view(np.uint64), "f64", "f16", "rn"), h.view(np.uint16))
    assert np.array_equal(F.cvt(x.view(np.uint64), "f64", "f32", "rn"), f.view(np.uint32))
    with np.errstate(over="ignore"):
        f = x.astype(np.float32)
    f = f[np.isfinite(f)]
    assert np.array_equal(F.cvt(f.view(np.uint32), "f32", "bf16", "rn"),
                          f.astype(ml_dtypes.bfloat16).view(np.uint16))
    for name in ("e5m2", "e4m3", "e2m3", "e3m2", "e2m1"):
        lim = float(ref_max(name))
        g = f[np.abs(f) <= lim]
        got = F.cvt(g.view(np.uint32), "f32", name, "rn", satfinite=True)
        want = g.astype(SPEC[name][4]).view(np.uint8)
        assert np.array_equal(got, want), name


def test_no_double_rounding_f64_to_f16_and_bf16():
    # 1 + 2^-11 + 2^-40: above the f16 tie; through f32 it would become the tie and round to even (1.0)
    x = np.array([1.0 + 2.0 ** -11 + 2.0 ** -40, 1.0 + 2.0 ** -8 + 2.0 ** -40])
    assert F.cvt(x[:1].view(np.uint64), "f64", "f16", "rn")[0] == 0x3C01
    assert F.cvt(x[1:].view(np.uint64), "f64", "bf16", "rn")[0] == 0x3F81
    # s32 -> bf16 directly: 2^24 + 2^16 + 1 is above the bf16 tie; via f32 it is a tie -> even
    assert F.cvt(np.array([2 ** 24 + 2 ** 16 + 1], np.uint32), "s32", "bf16", "rn")[0] == 0x4B81


def test_cvt_satfinite_relu_sat_nan():
    f32 = lambda *v: np.array(v, np.float32).view(np.uint32)
    x = f32(1e6, -1e6, np.inf, -np.inf, np.nan, -2.5, 0.5, 2.0)
    assert list(F.cvt(x, "f32", "f16", "rn", satfinite=True)) == [0x7BFF, 0xFBFF, 0x7BFF, 0xFBFF, 0x7FFF, 0xC100, 0x3800, 0x4000]
    assert list(F.cvt(x, "f32", "f16", "rn", relu=True)) == [0x7C00, 0, 0x7C00, 0, 0x7FFF, 0, 0x3800, 0x4000]
    assert list(F.cvt(x, "f32", "f32", "rni", sat=True).view(np.float32)) == [1, 0, 1, 0, 0, 0, 0, 1]
    assert list(F.cvt(x, "f32", "bf16", "rz")) == [0x4974, 0xC974, 0x7F80, 0xFF80, 0x7FFF, 0xC020, 0x3F00, 0x4000]
    assert list(F.cvt(x, "f32", "e4m3", "rn", satfinite=True)) == [0x7E, 0xFE, 0x7E, 0xFE, 0x7F, 0xC2, 0x30, 0x40]
    assert list(F.cvt(x, "f32", "e2m1", "rn", satfinite=True)) == [0x7, 0xF, 0x7, 0xF, 0x7, 0xC, 0x1, 0x4]
    with pytest.raises(ValueError, match="satfinite"):
        F.cvt(x, "f32", "e4m3", "rn")
    with pytest.raises(ValueError, match="ftz"):
        F.cvt(x, "f32", "f16", "rn", ftz=False) if False else F.cvt(x.astype(np.uint64), "f64", "f16", "rn", ftz=True)


def test_cvt_ftz_and_integer_rounding():
    x = np.array([0x00000001, 0x80000001, 0x3FC00000, 0xC0200000, 0x40100000], np.uint32)  # 1.5, -2.5, 2.25
    assert list(F.cvt(x, "f32", "s32", "rpi")) == [1, 0, 2, 0xFFFFFFFE, 3]
    assert list(F.cvt(x, "f32", "s32", "rpi", ftz=True)) == [0, 0, 2, 0xFFFFFFFE, 3]
    floor = F.cvt(x, "f32", "f32", "rmi").view(np.float32)
    assert list(floor[2:]) == [1.0, -3.0, 2.0] and floor[1] == -1.0
    assert list(F.cvt(x, "f32", "f32", "rni").view(np.float32)[2:]) == [2.0, -2.0, 2.0]
    assert F.cvt(x, "f32", "f32", "rmi", ftz=True)[1] == 0x80000000
    assert F.cvt(x, "f32", "f64", ftz=True)[0] == 0


@pytest.mark.parametrize("dst", ["s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64"])
@pytest.mark.parametrize("rnd", ["rni", "rzi", "rmi", "rpi"])
def test_cvt_float_to_int(dst, rnd):
    signed, w = dst[0] == "s", int(dst[1:])
    lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    x = np.concatenate([_cvt_inputs_f64(), [2.5, -2.5, 0.5, -0.5, 127.5, 128.0, -128.5, 255.5, 2.0 ** 31, -2.0 ** 31 - 1.0,
                                            2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 2.0 ** 63 - 1024, np.inf, -np.inf, np.nan]])
    got = F.cvt(x.view(np.uint64), "f64", dst, rnd)
    op = {"rni": lambda q: round(q), "rzi": lambda q: math.trunc(q), "rmi": math.floor, "rpi": math.ceil}[rnd]
    for v, g in zip(x, got):
        if math.isnan(v):
            want = 1 << (w - 1)              # from an f64 source (H200); f32 sources: test_gpu_nan_rules
        elif math.isinf(v):
            want = (hi if v > 0 else lo) % (1 << w)
        else:
            want = min(max(op(Fraction(float(v))), lo), hi) % (1 << w)
        assert int(g) == want, (v, dst, rnd)


@pytest.mark.parametrize("src", ["s32", "u32", "s64", "u64", "s16"])
@pytest.mark.parametrize("dst", ["f16", "bf16", "f32", "f64"])
def test_cvt_int_to_float(src, dst):
    signed, w = src[0] == "s", int(src[1:])
    vals = [0, 1, -1, 2 ** (w - 1) - 1, -2 ** (w - 1), 2 ** w - 1, 2 ** 24 + 1, 2 ** 53 + 1, 65520, 65519,
            2 ** 24 + 2 ** 16 + 1] + [int(v) for v in RNG.integers(-2 ** 62, 2 ** 62, 60)]
    vals = [v % (1 << w) for v in vals]
    bits = np.array(vals, np.uint64)
    for rnd in ("rn", "rz", "rm", "rp"):
        got = F.cvt(bits, src, dst, rnd)
        for v, g in zip(vals, got):
            q = Fraction(v - (1 << w) if signed and v >> (w - 1) else v)
            assert int(g) == ref_round(q, dst, rnd), (src, dst, rnd, v)


def test_cvt_int_to_int():
    x = np.array([0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 300, 0xFFFFFF00], np.uint32)
    assert list(F.cvt(x, "s32", "s8", sat=True)) == [0x7F, 0x80, 0xFF, 0x7F, 0x80]
    assert list(F.cvt(x, "s32", "u8", sat=True)) == [0xFF, 0, 0, 0xFF, 0]
    assert list(F.cvt(x, "s32", "s8")) == [0xFF, 0, 0xFF, 44, 0]
    assert list(F.cvt(x, "s32", "s64")) == [0x7FFFFFFF, 0xFFFFFFFF80000000, 0xFFFFFFFFFFFFFFFF, 300, 0xFFFFFFFFFFFFFF00]
    assert list(F.cvt(x, "u32", "u64")) == [int(v) for v in x]


def test_cvt_packed_forms_and_small_formats():
    f32 = lambda *v: np.array(v, np.float32).view(np.uint32)
    # a -> upper half, b -> lower half
    assert F.cvt_x2(f32(1.0), f32(2.0), "f32", "f16")[0] == 0x3C004000
    assert F.cvt_x2(f32(1.0), f32(-2.0), "f32", "e4m3", satfinite=True)[0] == 0x38C0
    assert F.cvt_x2(f32(1.0), f32(-2.0), "f32", "e5m2", satfinite=True)[0] == 0x3CC0
    assert F.cvt_x2(f32(6.0), f32(0.5), "f32", "e2m1", satfinite=True)[0] == 0x71
    # f16x2 <- e4m3x2: element 0 (low byte) -> low half; every code exact, NaN -> 0x7fff
    codes = np.arange(256, dtype=np.uint16)
    packed = (codes << np.uint16(8)) | codes
    out = F.cvt_from_x2(packed, "e4m3")
    lo = (out & np.uint32(0xFFFF)).astype(np.uint16)
    want = codes.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float16).view(np.uint16)
    nan = np.isin(codes, [0x7F, 0xFF])
    assert np.array_equal(lo[~nan], want[~nan]) and set(lo[nan]) == {0x7FFF}
    assert np.array_equal(out >> np.uint32(16), lo.astype(np.uint32))
    e2 = F.cvt_from_x2(np.arange(256, dtype=np.uint8), "e2m1")
    w2 = (np.arange(256) & 0xF).astype(np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float16).view(np.uint16)
    assert np.array_equal((e2 & np.uint32(0xFFFF)).astype(np.uint16), w2)


def test_ue8m0():
    f32 = lambda *v: np.array(v, np.float32).view(np.uint32)
    x = f32(1.0, 1.5, 3.0, 0.75, 2.0 ** -127, 2.0 ** -130, -4.0, np.inf, np.nan, 3e38)
    rz = F.cvt(x, "f32", "ue8m0", "rz")
    rp = F.cvt(x, "f32", "ue8m0", "rp")
    assert list(rz) == [127, 127, 128, 126, 0, 0, 129, 0xFF, 0xFF, 254]
    assert list(rp) == [127, 128, 129, 127, 0, 0, 129, 0xFF, 0xFF, 255]
    assert F.cvt(x, "f32", "ue8m0", "rp", satfinite=True)[-1] == 254
    assert F.cvt(x, "f32", "ue8m0", "rz", satfinite=True)[7] == 254
    # the reference: code = floor/ceil(log2 |x|) + 127 for normal inputs
    v = np.abs(RNG.standard_normal(200) * np.exp2(RNG.integers(-60, 60, 200))).astype(np.float32)
    got_z = F.cvt(v.view(np.uint32), "f32", "ue8m0", "rz")
    for val, g in zip(v, got_z):
        k = math.floor(math.log2(Fraction(float(val)))) if val else None
        assert int(g) == k + 127
    back = F.cvt_from_x2(np.array([0x00FF, 0x7F80], np.uint16), "ue8m0", "bf16")
    assert [hex(b) for b in back] == ["0x407fff", "0x3f804000"]


# ------------------------------------------------------------------ arithmetic


def _ref_arith(op, qs, rnd, typ):
    if any(q == "nan" for q in qs):
        return CANON.get(typ, None)
    inf = [q for q in qs if isinstance(q, tuple) and q[0] == "inf"]
    val = [Fraction(0) if isinstance(q, tuple) and q[0] == "zero" else q for q in qs]
    zsign = [q[1] if isinstance(q, tuple) else (q < 0) for q in qs]
    w = 1 + _fmt(typ)[0] + _fmt(typ)[1]
    if inf:
        return None                      # infinities are checked against NumPy below
    if op == "add":
        r = val[0] + val[1]
        if r == 0:
            both = val[0] == 0 and val[1] == 0 and zsign[0] == zsign[1]
            nz = zsign[0] if both else rnd == "rm"
            return int(nz) << w - 1
    elif op == "mul":
        r = val[0] * val[1]
        if r == 0:
            return int(zsign[0] ^ zsign[1]) << w - 1
    elif op == "fma":
        p = val[0] * val[1]
        r = p + val[2]
        if r == 0:
            pz = zsign[0] ^ zsign[1]
            nz = pz if (p == 0 and val[2] == 0 and pz == zsign[2]) else rnd == "rm"
            return int(nz) << w - 1
    elif op == "div":
        if val[1] == 0:
            return None
        r = val[0] / val[1]
        if r == 0:
            return int(zsign[0] ^ zsign[1]) << w - 1
    elif op == "sqrt":
        if val[0] < 0:
            return CANON.get(typ)
        if val[0] == 0:
            return int(zsign[0]) << w - 1
        # exact sqrt is irrational in general: round the bracketing Fraction at high precision
        n = val[0]
        scale = 2 ** 1200
        s = math.isqrt(int(n * scale * scale))
        exact = Fraction(s, scale)
        r = exact if exact * exact == n else exact + Fraction(1, 2 ** 2400)
    return ref_round(r, typ, rnd)


def _check_op(op, typ, arrays, rnd, fn):
    got = fn(*arrays, typ, rnd)
    dec = [ref_decode(a, typ) for a in arrays]
    bad = []
    for i, g in enumerate(got):
        want = _ref_arith(op, [d[i] for d in dec], rnd, typ)
        if want is not None and int(g) != want:
            bad.append((i, [hex(int(a[i])) for a in arrays], hex(int(g)), hex(want)))
    assert not bad, bad[:5]


@pytest.mark.parametrize("rnd", ["rn", "rz", "rm", "rp"])
def test_f32_arith_all_modes(rnd):
    x = edge_f32(80)
    a = RNG.permutation(x)
    b = RNG.permutation(x)
    c = RNG.permutation(x)
    _check_op("add", "f32", [a, b], rnd, F.add)
    _check_op("mul", "f32", [a, b], rnd, F.mul)
    _check_op("div", "f32", [a, b], rnd, F.div)
    _check_op("fma", "f32", [a, b, c], rnd, F.fma)
    _check_op("sqrt", "f32", [a], rnd, F.sqrt)


@pytest.mark.parametrize("typ", ["f16", "bf16"])
@pytest.mark.parametrize("rnd", ["rn", "rz", "rm", "rp"])
def test_half_arith_all_modes(typ, rnd):
    x = RNG.integers(0, 2 ** 16, 500, dtype=np.uint64).astype(np.uint16)
    x = np.concatenate([x, np.array([0, 0x8000, 1, 0x8001, 0x3C00, 0x7BFF, 0x0400, 0x7F7F, 0x0080], np.uint16)])
    a, b, c = RNG.permutation(x), RNG.permutation(x), RNG.permutation(x)
    _check_op("add", typ, [a, b], rnd, F.add)
    _check_op("mul", typ, [a, b], rnd, F.mul)
    _check_op("fma", typ, [a, b, c], rnd, F.fma)


def _edge_f64(n):
    special = np.array([0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                        1.5, 2.0 ** -1074 * 3, 1 + 2.0 ** -52, 3.0, 0.1], np.float64)
    r = RNG.standard_normal(n) * np.exp2(RNG.integers(-1070, 1020, n))
    m = RNG.standard_normal(n) * np.exp2(RNG.integers(-30, 30, n))
    return np.concatenate([special, r, m]).view(np.uint64)


@pytest.mark.parametrize("rnd", ["rn", "rz", "rm", "rp"])
def test_f64_arith_exact_path(rnd):
    x = _edge_f64(40)
    a, b, c = RNG.permutation(x), RNG.permutation(x), RNG.permutation(x)
    _check_op("fma", "f64", [a, b, c], rnd, F.fma)
    if rnd != "rn":
        _check_op("add", "f64", [a, b], rnd, F.add)
        _check_op("mul", "f64", [a, b], rnd, F.mul)
        _check_op("div", "f64", [a, b], rnd, F.div)
        _check_op("sqrt", "f64", [a], rnd, F.sqrt)


def test_rn_fast_paths_match_numpy():
    a = RNG.integers(0, 2 ** 32, 100_000, dtype=np.uint64).astype(np.uint32)
    b = RNG.integers(0, 2 ** 32, 100_000, dtype=np.uint64).astype(np.uint32)
    fa, fb = a.view(np.float32), b.view(np.float32)
    with np.errstate(all="ignore"):
        for fn, ref in ((F.add, fa + fb), (F.mul, fa * fb), (F.div, fa / fb)):
            got = fn(a, b, "f32")
            want = np.where(np.isnan(ref), np.uint32(0x7FFFFFFF), ref.view(np.uint32))
            assert np.array_equal(got, want), fn.__name__
        got = F.sqrt(a, "f32")
        r = np.sqrt(fa)
        assert np.array_equal(got, np.where(np.isnan(r), np.uint32(0x7FFFFFFF), r.view(np.uint32)))
        d = RNG.standard_normal(50_000) * np.exp2(RNG.integers(-200, 200, 50_000))
        e = RNG.standard_normal(50_000)
        for fn, ref in ((F.add, d + e), (F.mul, d * e), (F.div, d / e)):
            assert np.array_equal(fn(d.view(np.uint64), e.view(np.uint64), "f64"), ref.view(np.uint64))
        h = RNG.integers(0, 2 ** 16, 50_000, dtype=np.uint64).astype(np.uint16)
        k = RNG.integers(0, 2 ** 16, 50_000, dtype=np.uint64).astype(np.uint16)
        ref = (h.view(np.float16) + k.view(np.float16))
        assert np.array_equal(F.add(h, k, "f16"), np.where(np.isnan(ref), np.uint16(0x7FFF), ref.view(np.uint16)))


def test_f32_directed_fast_path_equals_exact_path():
    # the NumPy nextafter path for f32 against the integer rounding core, on values at and near f32
    # midpoints, subnormals, overflow, with every tail sign
    m = RNG.integers(2 ** 23, 2 ** 24, 3000).astype(np.float64)
    e = RNG.integers(-160, 130, 3000)
    x = np.ldexp(m + RNG.choice([0.0, 0.5, 0.25, 0.75], 3000), e - 23) * RNG.choice([-1.0, 1.0], 3000)
    x = np.concatenate([x, [0.0, -0.0, 2.0 ** -150, -(2.0 ** -150), 2.0 ** 128, -(2.0 ** 128), 3.5e38, 1e-46]])
    tail = RNG.integers(-1, 2, len(x))
    tail[x == 0] = 0
    for rnd in ("rn", "rz", "rm", "rp"):
        assert np.array_equal(F._round_f32(x, tail, rnd), F.round_value(x, tail, "f32", rnd)), rnd


def test_fma_f64_fast_path_equals_exact_path():
    # the float64 fma emulation (rounding to odd) against the integer path: random operands,
    # cancellation (c near -a*b), ties built from 1 + k ulp products, tiny and zero addends
    n = 3000
    def f64s(n, lo, hi):
        m = RNG.integers(2 ** 52, 2 ** 53, n).astype(np.float64)
        return np.ldexp(m, RNG.integers(lo, hi, n) - 52) * RNG.choice([-1.0, 1.0], n)
    a, b = f64s(n, -60, 60), f64s(n, -60, 60)
    c = np.where(RNG.random(n) < 0.5, -(a * b) * (1 + RNG.integers(-3, 4, n) * 2.0 ** -52), f64s(n, -120, 120))
    c[:300] = f64s(300, -350, -250)
    c[300:400] = 0.0
    k = RNG.integers(1, 64, 400).astype(np.float64)
    a[400:800] = 1 + k * 2.0 ** -52
    b[400:800] = 1 + RNG.integers(1, 64, 400) * 2.0 ** -52
    c[400:800] = RNG.choice([2.0 ** -53, -(2.0 ** -53), 3 * 2.0 ** -53, 2.0 ** -54], 400)
    A, B, C = (v.view(np.uint64) for v in (a, b, c))
    fast, safe = F._fma_f64_rn(A, B, C)
    assert safe.all()
    assert np.array_equal(fast, F._f64_exact_op("fma", [A, B, C], "rn"))


def test_fma_subnormal_tie_is_one_rounding():
    # a*b = 2^-150 - 2^-196, c = 2^-127 + 2^-149: the exact sum lies just below a tie of the subnormal
    # grid, so it rounds down to c; rounding through f64 first makes it the tie, then even (up).
    a = np.array([(1 + 2.0 ** -23) * 2.0 ** -75], np.float32).view(np.uint32)
    b = np.array([(1 - 2.0 ** -23) * 2.0 ** -75], np.float32).view(np.uint32)
    c = np.array([2.0 ** -127 + 2.0 ** -149], np.float32).view(np.uint32)
    assert F.fma(a, b, c, "f32")[0] == 0x00400001
    assert F.fma(a, b, c, "f32", "rp")[0] == 0x00400002
    assert F.fma(a, b, c, "f32", ftz=True)[0] == 0           # subnormal result flushed


def test_fma_f16_bf16_single_rounding():
    # (1+u)^2 + u/2 with u the format's ulp at 1: the exact sum is just above a tie -> rounds up;
    # mul then add (two roundings) lands on the tie and stays even.
    for typ, x, c, want, two_step in (("bf16", 0x3F81, 0x3B80, 0x3F83, 0x3F82),
                                      ("f16", 0x3C01, 0x1000, 0x3C03, 0x3C02)):
        a, cc = np.array([x], np.uint16), np.array([c], np.uint16)
        assert F.fma(a, a, cc, typ)[0] == want, typ
        assert F.add(F.mul(a, a, typ), cc, typ)[0] == two_step, typ


def test_zero_signs_ftz_sat_nan():
    f32 = lambda *v: np.array(v, np.float32).view(np.uint32)
    a, b = f32(1.0, -0.0, 0.0), f32(-1.0, -0.0, -0.0)
    assert list(F.add(a, b, "f32", "rn")) == [0, 0x80000000, 0]
    assert list(F.add(a, b, "f32", "rm")) == [0x80000000, 0x80000000, 0x80000000]
    assert list(F.sub(f32(2.0), f32(2.0), "f32", "rm")) == [0x80000000]
    sub = np.array([0x00000005, 0x80000005], np.uint32)
    assert list(F.mul(sub, f32(1.0, 1.0), "f32", ftz=True)) == [0, 0x80000000]
    assert list(F.mul(sub, f32(1.0, 1.0), "f32")) == [5, 0x80000005]
    assert list(F.add(f32(0.75, -3.0, np.nan, 0.5), f32(0.5, 1.0, 1.0, 0.0), "f32", sat=True).view(np.float32)) == [1, 0, 0, 0.5]
    assert list(F.add(f32(np.inf, np.nan), f32(-np.inf, 1.0), "f32")) == [0x7FFFFFFF, 0x7FFFFFFF]
    assert F.add(np.array([0x7C00], np.uint16), np.array([0xFC00], np.uint16), "f16")[0] == 0x7FFF
    assert list(F.div(f32(1.0, 0.0, -1.0), f32(0.0, 0.0, 0.0), "f32")) == [0x7F800000, 0x7FFFFFFF, 0xFF800000]
    assert list(F.sqrt(f32(-0.0, -1.0), "f32")) == [0x80000000, 0x7FFFFFFF]
    assert list(F.rcp(f32(3.0, 0.0, -np.inf), "f32", "rz").view(np.float32)) == [np.float32(0.3333333), np.inf, -0.0]
    # overflow by mode
    big = f32(3e38)
    assert [int(F.add(big, big, "f32", r)[0]) for r in ("rn", "rz", "rm", "rp")] == [0x7F800000, 0x7F7FFFFF, 0x7F7FFFFF, 0x7F800000]
    with pytest.raises(ValueError, match="ftz"):
        F.add(a, b, "bf16", ftz=True)


def test_min_max_rules():
    f32 = lambda *v: np.array(v, np.float32).view(np.uint32)
    pz, nz, nan = 0, 0x80000000, 0x7FC00001
    a = np.array([pz, nz, nan, nan, 0x3F800000], np.uint32)
    b = np.array([nz, pz, 0x40000000, nan, 0xC0000000], np.uint32)
    assert list(F.fmin(a, b, "f32")) == [nz, nz, 0x40000000, 0x7FFFFFFF, 0xC0000000]
    assert list(F.fmax(a, b, "f32")) == [pz, pz, 0x40000000, 0x7FFFFFFF, 0x3F800000]
    assert list(F.fmin(a, b, "f32", nan=True)) == [nz, nz, 0x7FFFFFFF, 0x7FFFFFFF, 0xC0000000]
    # xorsign.abs: min(|1|, |-2|) = 1 with sign 0 xor 1
    assert F.fmin(f32(1.0), f32(-2.0), "f32", xorsign_abs=True)[0] == 0xBF800000
    assert F.fmax(np.array([0x3C00], np.uint16), np.array([0xC000], np.uint16), "f16", xorsign_abs=True)[0] == 0xC000
    assert F.fmin(np.array([0x8000], np.uint16), np.array([0x0000], np.uint16), "bf16")[0] == 0x8000


def test_gpu_nan_rules():
    """The NaN behaviours an H200 recorded (PTX leaves them to the machine)."""
    f32 = lambda *v: np.array(v, np.uint32)
    f64 = lambda *v: np.array(v, np.uint64)
    nan64 = f64(0x7FF8000000012345)
    one64 = np.array([1.0]).view(np.uint64)
    # f64 arithmetic propagates a NaN operand (sub does not flip it); generated NaNs are 0xfff8...
    for fn in (F.add, F.sub, F.mul, F.div):
        assert fn(one64, nan64, "f64")[0] == 0x7FF8000000012345
        assert fn(nan64, one64, "f64", "rz")[0] == 0x7FF8000000012345
    assert F.fma(one64, nan64, one64, "f64", "rp")[0] == 0x7FF8000000012345
    inf64, zero64 = f64(0x7FF0000000000000), f64(0)
    assert F.mul(zero64, inf64, "f64")[0] == 0xFFF8000000000000
    assert F.div(zero64, zero64, "f64")[0] == 0xFFF8000000000000
    assert F.sqrt(np.array([-1.5]).view(np.uint64), "f64", "rz")[0] == 0xFFF8000000000000
    assert F.fmin(nan64, nan64, "f64")[0] == 0x7FF8000000012345
    assert F.neg(nan64, "f64")[0] == 0x7FF8000000012345
    # f32/f16/bf16: canonical NaNs, also from abs and neg
    assert F.add(f32(0x7FC12345), f32(0), "f32")[0] == 0x7FFFFFFF
    assert F.neg(f32(0x7FC12345), "f32")[0] == 0x7FFFFFFF
    assert F.abs_(np.array([0xFE55], np.uint16), "f16")[0] == 0x7FFF
    # conversions
    assert F.cvt(f64(0xFFF8000000000001), "f64", "f32", "rz")[0] == 0xFFC00000
    assert F.cvt(f64(0x7FF8000000012345), "f64", "f16", "rn")[0] == 0x7E00
    assert F.cvt(f64(0xFFF8000000000001), "f64", "bf16", "rn")[0] == 0xFFC0
    assert F.cvt(f32(0x7FC12345), "f32", "f64")[0] == 0x7FF82468A0000000
    assert F.cvt(f32(0x7FC12345), "f32", "f64", ftz=True)[0] == 0x7FFFFFFFE0000000
    assert F.cvt(np.array([0xFFC1], np.uint16), "bf16", "f32")[0] == 0xFFC10000
    assert F.cvt(np.array([0x7E55], np.uint16), "f16", "f32")[0] == 0x7FFFFFFF
    assert F.cvt(f32(0x7FC12345), "f32", "f16", "rn")[0] == 0x7FFF
    assert F.cvt(f64(0x7FF0000000000001), "f64", "f64", "rmi")[0] == 0x7FF8000000000001
    assert list(F.cvt(f32(0x7FC12345, 0x7F800001), "f32", "tf32", "rna")) == [0x7FC12000, 0x7F800000]
    assert list(F.cvt(f32(0x7FC00000, 0x7F800000), "f32", "tf32", "rna", satfinite=True)) == [0x7FBFE000, 0x7F7FE000]
    # float -> int: 0 from f32 into 32 bits, INT_MIN-like from f64, 1<<63 into 64 bits
    assert F.cvt(f32(0x7FC00000), "f32", "s32", "rni")[0] == 0
    assert F.cvt(f32(0x7FC00000), "f32", "u64", "rzi")[0] == 1 << 63
    assert F.cvt(f64(0x7FF8000000000000), "f64", "u32", "rpi")[0] == 0x80000000
    # .relu turns -0 into +0
    assert F.cvt_x2(f32(0x80000000), f32(0x80000000), "f32", "e4m3", relu=True, satfinite=True)[0] == 0
    assert F.cvt_x2(f32(0x80000000), f32(0), "f32", "f16", "rz", relu=True)[0] == 0


def test_setp_testp_copysign_abs_neg():
    f32 = lambda *v: np.array(v, np.float32).view(np.uint32)
    a, b = f32(1.0, np.nan, 2.0, 0.0), f32(1.0, 1.0, np.nan, -0.0)
    assert list(F.setp(a, b, "f32", "eq")) == [True, False, False, True]
    assert list(F.setp(a, b, "f32", "ne")) == [False, False, False, False]
    assert list(F.setp(a, b, "f32", "neu")) == [False, True, True, False]
    assert list(F.setp(a, b, "f32", "ltu")) == [False, True, True, False]
    assert list(F.setp(a, b, "f32", "nan")) == [False, True, True, False]
    s = np.array([0x00000001], np.uint32)
    assert F.setp(s, f32(0.0), "f32", "gt")[0] and not F.setp(s, f32(0.0), "f32", "gt", ftz=True)[0]
    t = f32(1.0, np.inf, np.nan, 1e-45, 0.0)
    assert list(F.testp(t, "f32", "subnormal")) == [False, False, False, True, False]
    assert list(F.testp(t, "f32", "normal")) == [True, False, False, False, False]
    assert list(F.testp(t, "f32", "finite")) == [True, False, False, True, True]
    assert F.copysign(f32(-1.0), f32(2.0), "f32")[0] == f32(-2.0)[0]
    assert F.abs_(f32(-1e-45), "f32", ftz=True)[0] == 0
    assert list(F.neg(np.array([0x3C00, 0x7FFF], np.uint16), "f16")) == [0xBC00, 0x7FFF]


# ---------------------------------------------------------------------------------------------------
# GPU truth: the corpus recordings (an H200 ran these kernels; `python -m bwlab.validate emu-corpus`).
# Each listed kernel's outputs are recomputed here from its inputs with this module's functions, the
# PTX instruction each output comes from spelled out (checked against NVRTC's PTX for sm_90a); None
# marks an output made by a longer sequence (roundf, __hdiv, fdimf...), left to the emulator's corpus
# test. Skipped where the corpus (bwlab/checks/emu_corpus/ and tests/data/emu_corpus) is absent;
# BWLAB_CORPUS_ROOT points at another checkout that has it.

from corpus_truth import _check_against_gpu, _corpus, low, sext, u16, u32, u64  # noqa: E402,F401  (the H200's truth)

_GPU = {}


def _gpu_kernel(name):
    def deco(fn):
        _GPU[name] = fn
        return fn
    return deco


# ------------------------------------------------------------ conversion
@_gpu_kernel("cvt_f2i")
def _k_cvt_f2i(a):
    b = u32(a)
    return [F.cvt(b, "f32", "s32", r) for r in F.IRND] + [F.cvt(b, "f32", "u32", r) for r in F.IRND]


@_gpu_kernel("cvt_f2ll")
def _k_cvt_f2ll(a):
    b = u32(a)
    return [F.cvt(b, "f32", "s64", r) for r in F.IRND] + [F.cvt(b, "f32", "u64", "rni"), F.cvt(b, "f32", "s64", "rzi")]


@_gpu_kernel("cvt_d2i")
def _k_cvt_d2i(a):
    b = u64(a)
    return [sext(F.cvt(b, "f64", "s32", "rni"), 32), sext(F.cvt(b, "f64", "s32", "rmi"), 32),
            F.cvt(b, "f64", "u32", "rpi").astype(np.uint64), F.cvt(b, "f64", "s64", "rni"),
            F.cvt(b, "f64", "s64", "rzi"), F.cvt(b, "f64", "u64", "rmi")]


@_gpu_kernel("cvt_i2f")
def _k_cvt_i2f(a):
    b = u64(a)
    lo = low(b, 32).astype(np.uint32)
    return ([F.cvt(lo, "s32", "f32", r) for r in ("rn", "rz", "rm", "rp")] +
            [F.cvt(lo, "u32", "f32", r) for r in ("rz", "rp")] +
            [F.cvt(b, "s64", "f32", r) for r in ("rn", "rz", "rm", "rp")] +
            [F.cvt(b, "u64", "f32", r) for r in ("rn", "rm")])


@_gpu_kernel("cvt_i2d")
def _k_cvt_i2d(a):
    b = u64(a)
    return [F.cvt(b, "s64", "f64", r) for r in ("rn", "rz", "rm", "rp")] + [F.cvt(b, "u64", "f64", "rm")]


@_gpu_kernel("cvt_d2f")
def _k_cvt_d2f(a):
    return [F.cvt(u64(a), "f64", "f32", r) for r in ("rn", "rz", "rm", "rp")]


@_gpu_kernel("cvt_f2d_roundtrip")
def _k_cvt_f2d_roundtrip(a):
    # NVRTC folds (float)((double)a * 3.0) into mul.f32 / div.rn.f32 (checked in the PTX)
    three = np.full(a.shape, np.float32(3.0)).view(np.uint32)
    return [F.mul(u32(a), three, "f32"), F.div(u32(a), three, "f32")]


@_gpu_kernel("cvt_f2h")
def _k_cvt_f2h(a):
    return [F.cvt(u32(a), "f32", "f16", r) for r in ("rn", "rz", "rm", "rp")]


@_gpu_kernel("cvt_f2bf")
def _k_cvt_f2bf(a):
    return [F.cvt(u32(a), "f32", "bf16", r) for r in ("rn", "rz", "rm", "rp")]


@_gpu_kernel("cvt_d2h_bf")
def _k_cvt_d2h_bf(a):
    return [F.cvt(u64(a), "f64", "f16", "rn"), F.cvt(u64(a), "f64", "bf16", "rn")]


@_gpu_kernel("cvt_h2f_bf2f")
def _k_cvt_h2f_bf2f(a):
    return [F.cvt(u16(a), "f16", "f32"), F.cvt(u16(a), "bf16", "f32")]


@_gpu_kernel("cvt_i2h_bf")
def _k_cvt_i2h_bf(a):
    b = u32(a)
    h = low(b, 16).astype(np.uint16)
    return [F.cvt(b, "s32", "f16", "rn"), F.cvt(b, "s32", "f16", "rz"), F.cvt(h, "s16", "f16", "rm"),
            F.cvt(b, "s32", "bf16", "rn"), F.cvt(b, "s32", "bf16", "rz"), low(F.cvt(h, "f16", "s32", "rni"), 16)]


@_gpu_kernel("cvt_h2i")
def _k_cvt_h2i(a):
    h = u16(a)
    return [F.cvt(h, "f16", "s32", "rzi"), F.cvt(h, "f16", "s32", "rmi"), F.cvt(h, "f16", "u32", "rpi"),
            sext(F.cvt(h, "f16", "s16", "rni"), 16, 32), F.cvt(h, "bf16", "s32", "rzi"), F.cvt(h, "bf16", "s32", "rni")]


@_gpu_kernel("cvt_pack2")
def _k_cvt_pack2(a, b):
    return [F.cvt_x2(u32(b), u32(a), "f32", "f16"), F.cvt_x2(u32(b), u32(a), "f32", "bf16")]


@_gpu_kernel("cvt_round_fns")
def _k_cvt_round_fns(a):
    b = u32(a)
    return [F.cvt(b, "f32", "f32", "rmi"), F.cvt(b, "f32", "f32", "rpi"), F.cvt(b, "f32", "f32", "rzi"), None,
            F.cvt(b, "f32", "f32", "rni"), F.cvt(b, "f32", "f32", "rni")]


@_gpu_kernel("cvt_round_fns_f64")
def _k_cvt_round_fns_f64(a):
    b = u64(a)
    return [F.cvt(b, "f64", "f64", "rmi"), F.cvt(b, "f64", "f64", "rpi"), F.cvt(b, "f64", "f64", "rzi"), None,
            F.cvt(b, "f64", "f64", "rni"), F.cvt(b, "f64", "f64", "rni")]


@_gpu_kernel("cvt_lround")
def _k_cvt_lround(a):
    b = u32(a)
    return [F.cvt(b, "f32", "s64", "rni"), None, sext(F.cvt(b, "f32", "s32", "rzi"), 32)]


@_gpu_kernel("cvt_saturate")
def _k_cvt_saturate(a):
    return [F.cvt(u32(a), "f32", "f32", sat=True)] * 2


@_gpu_kernel("cvt_int_narrow")
def _k_cvt_int_narrow(a):
    b = u64(a)
    return [sext(b, 8, 32), low(b, 8), sext(b, 16, 32), low(b, 16), low(b, 32)]


@_gpu_kernel("cvt_int_sat_asm")
def _k_cvt_int_sat_asm(a):
    b = u64(a)
    return [sext(F.cvt(b, "s64", "s8", sat=True), 8, 32), F.cvt(b, "s64", "u8", sat=True),
            sext(F.cvt(b, "s64", "s16", sat=True), 16, 32), F.cvt(b, "s64", "s32", sat=True),
            F.cvt(b, "s64", "u32", sat=True)]


@_gpu_kernel("cvt_fp8_from_f32")
def _k_cvt_fp8_from_f32(a, b):
    return [F.cvt_x2(u32(a), u32(b), "f32", t, "rn", relu=r, satfinite=True)
            for r, t in ((False, "e4m3"), (False, "e5m2"), (True, "e4m3"), (True, "e5m2"))]


@_gpu_kernel("cvt_fp8_from_f16x2")
def _k_cvt_fp8_from_f16x2(a):
    x = u32(a)
    hi, lo = (x >> np.uint32(16)).astype(np.uint16), (x & np.uint32(0xFFFF)).astype(np.uint16)
    return [F.cvt_x2(hi, lo, "f16", t, "rn", relu=r, satfinite=True)
            for r, t in ((False, "e4m3"), (False, "e5m2"), (True, "e4m3"))]


@_gpu_kernel("cvt_fp8_to_f16x2")
def _k_cvt_fp8_to_f16x2(a):
    return [F.cvt_from_x2(u16(a), "e4m3"), F.cvt_from_x2(u16(a), "e5m2"), F.cvt_from_x2(u16(a), "e4m3", relu=True)]


@_gpu_kernel("cvt_f32_to_f16x2_bf16x2_asm")
def _k_cvt_f32_to_f16x2_bf16x2_asm(a, b):
    return [F.cvt_x2(u32(a), u32(b), "f32", "f16", "rn"), F.cvt_x2(u32(a), u32(b), "f32", "f16", "rz", relu=True),
            F.cvt_x2(u32(a), u32(b), "f32", "bf16", "rn"),
            F.cvt_x2(u32(a), u32(b), "f32", "bf16", "rz", satfinite=True)]


@_gpu_kernel("cvt_tf32")
def _k_cvt_tf32(a):
    return [F.cvt(u32(a), "f32", "tf32", "rna"), F.cvt(u32(a), "f32", "tf32", "rna", satfinite=True)]


# ------------------------------------------------------------ float
def modes(fn, *args, typ="f32", **kw):
    return [fn(*args, typ, r, **kw) for r in ("rn", "rz", "rm", "rp")]


@_gpu_kernel("flt_add_modes")
def _k_flt_add_modes(a, b):
    return modes(F.add, u32(a), u32(b))


@_gpu_kernel("flt_sub_modes")
def _k_flt_sub_modes(a, b):
    return modes(F.sub, u32(a), u32(b))


@_gpu_kernel("flt_mul_modes")
def _k_flt_mul_modes(a, b):
    return modes(F.mul, u32(a), u32(b))


@_gpu_kernel("flt_fma_modes")
def _k_flt_fma_modes(a, b, c):
    return modes(F.fma, u32(a), u32(b), u32(c)) + [F.fma(u32(a), u32(b), u32(c), "f32")]


@_gpu_kernel("flt_fma_contract")
def _k_flt_fma_contract(a, b, c):
    return [F.fma(u32(a), u32(b), u32(c), "f32"), F.fma(u32(a), F.neg(u32(b), "f32"), u32(c), "f32")]


@_gpu_kernel("flt_div")
def _k_flt_div(a, b):
    return [F.div(u32(a), u32(b), "f32")] + modes(F.div, u32(a), u32(b)) + [F.rcp(u32(b), "f32")]


@_gpu_kernel("flt_rcp_modes")
def _k_flt_rcp_modes(a):
    return [F.rcp(u32(a), "f32", r) for r in ("rn", "rz", "rm", "rp")]


@_gpu_kernel("flt_sqrt")
def _k_flt_sqrt(a):
    return [F.sqrt(u32(a), "f32")] + modes(F.sqrt, u32(a))


@_gpu_kernel("flt_min_max")
def _k_flt_min_max(a, b):
    A, B = u32(a), u32(b)
    return [F.fmin(A, B, "f32"), F.fmax(A, B, "f32"), F.fmin(B, A, "f32"), F.fmax(B, A, "f32")]


@_gpu_kernel("flt_min_max_nan_asm")
def _k_flt_min_max_nan_asm(a, b):
    A, B = u32(a), u32(b)
    return [F.fmin(A, B, "f32", nan=True), F.fmax(A, B, "f32", nan=True),
            F.fmax(A, B, "f32", xorsign_abs=True), F.fmin(A, B, "f32", xorsign_abs=True)]


@_gpu_kernel("flt_sign_ops")
def _k_flt_sign_ops(a, b):
    A, B = u32(a), u32(b)
    return [F.copysign(B, A, "f32"), F.abs_(A, "f32"), F.neg(A, "f32"), None]


@_gpu_kernel("flt_nan_results")
def _k_flt_nan_results(a, b):
    A, B = u32(a), u32(b)
    one = np.full(A.shape, 0x3F800000, np.uint32)
    return [F.add(A, B, "f32"), F.mul(A, B, "f32"), F.sub(A, B, "f32"), F.fma(A, B, one, "f32"),
            F.div(A, B, "f32"), F.sqrt(A, "f32")]


@_gpu_kernel("dbl_add_mul_modes")
def _k_dbl_add_mul_modes(a, b):
    return modes(F.add, u64(a), u64(b), typ="f64") + modes(F.mul, u64(a), u64(b), typ="f64")


@_gpu_kernel("dbl_fma_modes")
def _k_dbl_fma_modes(a, b, c):
    A, B, Cc = u64(a), u64(b), u64(c)
    return modes(F.fma, A, B, Cc, typ="f64") + [F.fma(A, B, F.neg(Cc, "f64"), "f64")]


@_gpu_kernel("dbl_div_sqrt")
def _k_dbl_div_sqrt(a, b):
    A, B = u64(a), u64(b)
    return ([F.div(A, B, "f64", r) for r in ("rn", "rz", "rm", "rp")] +
            [F.sqrt(A, "f64", r) for r in ("rn", "rz", "rp")] + [F.rcp(B, "f64")])


@_gpu_kernel("dbl_min_max_sign")
def _k_dbl_min_max_sign(a, b):
    A, B = u64(a), u64(b)
    return [F.fmin(A, B, "f64"), F.fmax(A, B, "f64"), F.fmin(B, A, "f64"), F.copysign(B, A, "f64"),
            F.abs_(A, "f64"), F.neg(A, "f64")]


@_gpu_kernel("dbl_nan_results")
def _k_dbl_nan_results(a, b):
    A, B = u64(a), u64(b)
    half = np.full(A.shape, np.float64(0.5)).view(np.uint64)
    return [F.add(A, B, "f64"), F.mul(A, B, "f64"), F.fma(A, B, half, "f64"), F.sub(A, B, "f64")]


@_gpu_kernel("mixed_float_double")
def _k_mixed_float_double(a, b):
    A, B = F.cvt(u32(a), "f32", "f64"), u64(b)
    bf = F.cvt(B, "f64", "f32", "rn")
    tiny = np.full(A.shape, np.float64(1e-30)).view(np.uint64)
    return [F.mul(A, B, "f64"), F.cvt(F.mul(u32(a), bf, "f32"), "f32", "f64"), F.add(A, tiny, "f64")]


# ------------------------------------------------------------ ftz
@_gpu_kernel("ftz_arith")
def _k_ftz_arith(a, b, c):
    A, B, Cc = u32(a), u32(b), u32(c)
    return [F.add(A, B, "f32", ftz=True), F.mul(A, B, "f32", ftz=True), F.fma(A, B, Cc, "f32", ftz=True),
            F.sub(A, Cc, "f32", ftz=True), F.mul(A, B, "f32", "rz", ftz=True), F.add(A, Cc, "f32", "rp", ftz=True)]


@_gpu_kernel("ftz_div_sqrt")
def _k_ftz_div_sqrt(a, b):
    A, B = u32(a), u32(b)
    return [F.div(A, B, "f32", ftz=True), F.sqrt(A, "f32", ftz=True), F.rcp(A, "f32", ftz=True)]


@_gpu_kernel("ftz_min_max_abs")
def _k_ftz_min_max_abs(a, b):
    A, B = u32(a), u32(b)
    return [F.fmin(A, B, "f32", ftz=True), F.fmax(A, B, "f32", ftz=True), F.abs_(A, "f32", ftz=True),
            F.neg(A, "f32", ftz=True)]


@_gpu_kernel("ftz_compare")
def _k_ftz_compare(a, b):
    A, B = u32(a), u32(b)
    z = np.zeros_like(A)
    return [F.setp(A, B, "f32", c, ftz=True).astype(np.uint32) for c in ("lt", "eq")] + \
        [F.setp(A, z, "f32", "neu", ftz=True).astype(np.uint32), F.setp(A, B, "f32", "ge", ftz=True).astype(np.uint32)]


@_gpu_kernel("ftz_convert")
def _k_ftz_convert(a):
    A = u32(a)
    big = np.full(A.shape, np.float32(1e38)).view(np.uint32)
    t = F.cvt(F.mul(A, big, "f32", ftz=True), "f32", "s32", "rzi", ftz=True)
    return [F.cvt(A, "f32", "f64", ftz=True), F.cvt(A, "f32", "f64", ftz=True), F.cvt(t, "s32", "f64")]


# ------------------------------------------------------------ half
@_gpu_kernel("half_arith")
def _k_half_arith(a, b):
    return [F.add(a, b, "f16"), F.sub(a, b, "f16"), F.mul(a, b, "f16"), None, F.neg(a, "f16"), F.abs_(a, "f16")]


@_gpu_kernel("half_fma")
def _k_half_fma(a, b, c):
    return [F.fma(a, b, c, "f16"), F.fma(a, b, c, "f16", relu=True), F.fma(a, b, c, "f16", sat=True),
            F.add(a, b, "f16", sat=True)]


@_gpu_kernel("half_minmax")
def _k_half_minmax(a, b):
    return [F.fmin(a, b, "f16"), F.fmax(a, b, "f16"), F.fmin(a, b, "f16", nan=True), F.fmax(a, b, "f16", nan=True)]


@_gpu_kernel("half_compare")
def _k_half_compare(a, b):
    cm = [F.setp(a, b, "f16", c).astype(np.uint8) for c in ("lt", "le", "eq", "ne", "ltu", "neu")]
    isinf = F.testp(a, "f16", "infinite")
    neg = (a >> np.uint16(15)) == 1
    return cm + [F.testp(a, "f16", "notanumber").astype(np.uint8),
                 np.where(isinf, np.where(neg, 0xFF, 1), 0).astype(np.uint8)]


def pair(fn, *xs):
    lo = [x & np.uint32(0xFFFF) for x in xs]
    hi = [x >> np.uint32(16) for x in xs]
    r0 = fn(*[v.astype(np.uint16) for v in lo]).astype(np.uint32)
    r1 = fn(*[v.astype(np.uint16) for v in hi]).astype(np.uint32)
    return r0 | (r1 << np.uint32(16))


@_gpu_kernel("half2_arith")
def _k_half2_arith(a, b, c):
    P = F.packed2
    return [P(F.add, a, b, typ="f16"), P(F.mul, a, b, typ="f16"), P(F.fma, a, b, c, typ="f16"),
            P(F.fma, a, b, c, typ="f16", relu=True), P(F.fmax, a, b, typ="f16", nan=True),
            P(F.fmin, a, b, typ="f16")]


@_gpu_kernel("bf16_arith")
def _k_bf16_arith(a, b):
    return [F.add(a, b, "bf16"), F.sub(a, b, "bf16"), F.mul(a, b, "bf16"), None, F.neg(a, "bf16"), F.abs_(a, "bf16")]


@_gpu_kernel("bf16_fma")
def _k_bf16_fma(a, b, c):
    return [F.fma(a, b, c, "bf16"), F.fma(a, b, c, "bf16", relu=True), F.fma(a, b, c, "bf16", sat=True)]


@_gpu_kernel("bf16_minmax_compare")
def _k_bf16_minmax_compare(a, b):
    o4 = (F.setp(a, b, "bf16", "lt").astype(np.uint16) | (F.setp(a, b, "bf16", "geu").astype(np.uint16) << 1)
          | (F.testp(a, "bf16", "notanumber").astype(np.uint16) << 2))
    return [F.fmin(a, b, "bf16"), F.fmax(a, b, "bf16"), F.fmax(a, b, "bf16", nan=True), F.fmin(a, b, "bf16", nan=True),
            o4, F.setp(a, b, "bf16", "eq").astype(np.uint16)]


@_gpu_kernel("bf162_arith")
def _k_bf162_arith(a, b, c):
    return [pair(lambda x, y: F.add(x, y, "bf16"), a, b), pair(lambda x, y: F.mul(x, y, "bf16"), a, b),
            pair(lambda x, y, z: F.fma(x, y, z, "bf16"), a, b, c),
            pair(lambda x, y, z: F.fma(x, y, z, "bf16", relu=True), a, b, c),
            pair(lambda x, y: F.fmax(x, y, "bf16"), a, b)]


@_gpu_kernel("half_math_fns")
def _k_half_math_fns(a):
    return [None, F.cvt(a, "f16", "f16", "rmi"), F.cvt(a, "f16", "f16", "rni"), F.cvt(a, "f16", "f16", "rzi")]


@_gpu_kernel("bf16_math_fns")
def _k_bf16_math_fns(a):
    return [None, F.cvt(a, "bf16", "bf16", "rpi"), F.cvt(a, "bf16", "bf16", "rni"), F.cvt(a, "bf16", "bf16", "rzi")]


# ------------------------------------------------------------ compare
@_gpu_kernel("cmp_float_ordered")
def _k_cmp_float_ordered(a, b):
    A, B = u32(a), u32(b)
    return [F.setp(A, B, "f32", c).astype(np.uint8) for c in ("lt", "le", "eq", "neu", "gt", "ge")]


@_gpu_kernel("cmp_float_unordered_asm")
def _k_cmp_float_unordered_asm(a, b):
    A, B = u32(a), u32(b)
    r = np.zeros(A.shape, np.uint32)
    for i, c in enumerate(("ltu", "geu", "equ", "nan", "num", "neu")):
        r |= F.setp(A, B, "f32", c).astype(np.uint32) << np.uint32(i)
    return [r]


@_gpu_kernel("cmp_double")
def _k_cmp_double(a, b):
    A, B = u64(a), u64(b)
    return [F.setp(A, B, "f64", "lt").astype(np.uint8), F.setp(A, B, "f64", "eq").astype(np.uint8),
            (~F.setp(A, B, "f64", "ge")).astype(np.uint8),
            F.testp(F.sub(A, B, "f64"), "f64", "notanumber").astype(np.uint8),
            F.setp(A, A, "f64", "neu").astype(np.uint8)]


@_gpu_kernel("cmp_classify")
def _k_cmp_classify(a):
    A = u32(a)
    nan, inf, fin = (F.testp(A, "f32", t) for t in ("notanumber", "infinite", "finite"))
    sb = (A >> np.uint32(31)).astype(bool)
    return [nan.astype(np.uint32), inf.astype(np.uint32), fin.astype(np.uint32), sb.astype(np.uint32),
            (inf.astype(np.uint32) | (nan.astype(np.uint32) << 1) | (fin.astype(np.uint32) << 2)
             | (sb.astype(np.uint32) << 3))]


@_gpu_kernel("cmp_set_asm")
def _k_cmp_set_asm(a, b):
    A, B = u32(a), u32(b)
    return [F.setp(A, B, "f32", "lt").astype(np.uint32) * np.uint32(0xFFFFFFFF),
            F.setp(A, B, "f32", "gtu").astype(np.uint32) * np.uint32(0xFFFFFFFF),
            np.where(F.setp(A, B, "f32", "le"), np.uint32(0x3F800000), np.uint32(0))]




@pytest.mark.parametrize("name", sorted(_GPU))
def test_matches_gpu_recordings(name):
    _check_against_gpu(name, _GPU[name])
