"""The fast block step of bwlab.umma.numerics (finite operands, no scale factors) equals the term-by-term one.

`fused_mma` takes `blocksum.finite_block_sum` whenever A, B and C are finite and the kind has no scale factors; `_block`
(every term split into s * 2^e, aligned, cut, summed) is the rule as written down. These tests run both on
operands chosen where they could part: zeros (the e_zero rule), subnormals, exponents spread so that terms
are cut, cancellation, C larger and smaller than the products, f16 D, FP8's F = 13, tf32, chained blocks.
"""
import numpy as np
import pytest

from bwlab.hw.dtypes import element_type, from_float, to_float
from bwlab.umma import numerics as nm
from bwlab.umma.blocksum import round_rz_f32

_CASES = [
    "m64n8k16.f32.bf16.bf16", "m64n16k16.f32.f16.f16", "m64n8k16.f16.f16.f16", "m64n8k8.f32.tf32.tf32",
    "m64n8k32.f32.e4m3.e4m3", "m64n8k32.f32.e5m2.e4m3", "m64n8k32.f16.e4m3.e5m2",
    "m128n16k16.kind::f16.f32.bf16.bf16", "m128n16k16.kind::f16.f16.f16.f16", "m128n16k8.kind::tf32.f32.tf32.tf32",
    "m128n16k32.kind::f8f6f4.f32.e2m1.e3m2", "m128n16k32.kind::f8f6f4.f32.e4m3.e2m3",
]


def _reference(ins, a, b, c):
    """fused_mma by `_block` only (the path as the rule reads)."""
    d = np.asarray(c, np.float16 if ins.d_type == "f16" else np.float32)
    sa, ea = nm._split(a, nm.SUBNORMAL_EXPONENT[ins.a_type])
    sb, eb = nm._split(b, nm.SUBNORMAL_EXPONENT[ins.b_type])
    L = min(a.shape[1], ins.k_block)
    for k0 in range(0, a.shape[1], L):
        with np.errstate(invalid="ignore"):
            d = nm._block(ins, d, k0, L, a, b, sa, ea, sb, eb, None, None, None, None)
    return d


def _values(rng, shape, t, spread):
    """Values of type t: random signs, exponents over 2^-spread..2^spread (clipped by the type), some zeros,
    some subnormals (the type's smallest codes)."""
    x = rng.standard_normal(shape) * np.exp2(rng.integers(-spread, spread + 1, shape))
    x[rng.random(shape) < 0.1] = 0.0
    codes = from_float(x, t)
    tiny = rng.random(shape) < 0.05
    if tiny.any():   # the smallest codes of the type (subnormals where it has them), either sign
        small = rng.integers(1, 4, tiny.sum()) | (rng.integers(0, 2, tiny.sum()) << (element_type(t).bits - 1))
        codes[tiny] = small.astype(codes.dtype)
    v = to_float(codes, t)
    v[~np.isfinite(v)] = 0.0
    return v


@pytest.mark.parametrize("name", _CASES)
@pytest.mark.parametrize("spread", [0, 6, 30])
def test_fast_block_equals_term_by_term(name, spread):
    ins = nm.parse_instr(name)
    rng = np.random.default_rng(abs(hash((name, spread))) % 2**32)
    for trial in range(4):
        K = ins.K * (1 + trial % 3)
        a = _values(rng, (ins.M, K), ins.a_type, spread)
        b = _values(rng, (ins.N, K), ins.b_type, spread)
        dt = np.float16 if ins.d_type == "f16" else np.float32
        c = (rng.standard_normal((ins.M, ins.N)) * np.exp2(rng.integers(-spread - 4, spread + 4, (ins.M, ins.N))))
        c[rng.random(c.shape) < 0.2] = 0.0
        c = np.clip(c, -1e4, 1e4).astype(dt)
        if trial == 3:   # cancellation: B's rows repeat A's with the sign flipped, C cancels the first
            b[: min(ins.M, ins.N)] = -a[: min(ins.M, ins.N)] if ins.a_type == ins.b_type else b[: min(ins.M, ins.N)]
        got = nm.fused_mma(ins, a, b, c)
        want = _reference(ins, a, b, c)
        assert got.dtype == want.dtype
        bits = np.uint16 if got.dtype == np.float16 else np.uint32
        assert np.array_equal(got.view(bits), want.view(bits)), (name, spread, trial)


def test_non_finite_operands_take_the_term_by_term_path():
    ins = nm.parse_instr("m64n8k16.f32.bf16.bf16")
    rng = np.random.default_rng(3)
    a = _values(rng, (64, 32), "bf16", 4)
    b = _values(rng, (8, 32), "bf16", 4)
    a[0, 3], b[1, 20], b[2, 5] = np.inf, -np.inf, np.nan
    c = np.zeros((64, 8), np.float32)
    c[5, 5] = np.inf
    got, want = nm.fused_mma(ins, a, b, c), _reference(ins, a, b, c)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    assert np.isnan(got[0, 1]) and got.view(np.uint32)[2, 2] == 0x7FFFFFFF


@pytest.mark.parametrize("name", ["m64n8k16.f32.bf16.bf16", "m64n8k8.f32.tf32.tf32", "m64n8k16.f16.f16.f16"])
def test_products_below_e_zero(name):
    """Every product below 2^e_zero: with C = 0 the block aligns to e_zero and cuts them (to zero or a few bits)."""
    ins = nm.parse_instr(name)
    rng = np.random.default_rng(11)
    lo = -70 if ins.a_type != "f16" else -12
    a = _values(rng, (ins.M, ins.K), ins.a_type, 0) * 2.0 ** lo
    b = _values(rng, (ins.N, ins.K), ins.b_type, 0) * 2.0 ** lo
    a = to_float(from_float(a, ins.a_type), ins.a_type)
    b = to_float(from_float(b, ins.b_type), ins.b_type)
    dt = np.float16 if ins.d_type == "f16" else np.float32
    c = np.zeros((ins.M, ins.N), dt)
    c[::3, ::2] = dt(2.0 ** (lo + 4)) if ins.d_type == "f32" else dt(2.0 ** -14)
    got, want = nm.fused_mma(ins, a, b, c), _reference(ins, a, b, c)
    bits = np.uint16 if dt == np.float16 else np.uint32
    assert np.array_equal(got.view(bits), want.view(bits))
    if ins.d_type == "f32":
        exact = (a @ b.T + c.astype(np.float64)).astype(dt)
        assert not np.array_equal(got.view(bits), exact.view(bits))   # the cut is visible here


def test_round_rz_f32_equals_cut_and_scale():
    rng = np.random.default_rng(5)
    v = np.concatenate([
        rng.standard_normal(4000) * np.exp2(rng.integers(-160, 140, 4000)),          # every range, past f32's too
        np.exp2(rng.integers(-155, -120, 500)) * (1 + rng.random(500)),               # subnormals, ties of them
        [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** 128, -(2.0 ** 128), 2.0 ** 128 * (1 - 2.0 ** -30),
         float(np.finfo(np.float32).max), 2.0 ** -149, 2.0 ** -150, -(2.0 ** -149) * 1.5, 1 + 2.0 ** -24],
        (rng.integers(-2**40, 2**40, 2000) * np.exp2(rng.integers(-190, 90, 2000))).astype(np.float64),
    ])
    with np.errstate(all="ignore"):
        want = nm._round(v, "rz-f32").view(np.uint32)          # shift, cut, scale back: the rule as written
    assert np.array_equal(round_rz_f32(v).view(np.uint32), want)
