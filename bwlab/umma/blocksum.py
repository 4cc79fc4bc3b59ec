"""The fused block step of `bwlab.umma.numerics` in few NumPy passes, for the common case.

`numerics._block` states the rule term by term: every product split into s * 2^e, aligned to the largest
exponent emax of the block, cut toward zero F bits below it, the cut terms added exactly, rounded once.
When A, B and C are finite and there are no scale factors, the same numbers come out of fewer, cheaper
passes: a term's cut value trunc(s * 2^(e + F - emax)) is trunc(a * b * 2^(F - emax)), so the split only
matters for emax (the largest exponent of a non-zero term, e_zero where a term or C is zero, C's own
exponent otherwise). Every product here is exact in float64 (at most 22 significant bits, exponents
within +-600), so each cut value and their sum (an integer below 2^40) equal `_block`'s.
tests/test_numerics_fast.py runs both on operands chosen where they could part.
"""
from __future__ import annotations

import numpy as np

__all__ = ["ZERO_E", "exponents", "finite_mma", "finite_block_sum", "pow2", "round_rz_f32"]

# the exponent a zero operand element gets: every product with it lies far below e_zero (so it never sets the
# block's largest exponent) and its scaled value stays inside float64's normal range
ZERO_E = -300


def pow2(k: np.ndarray) -> np.ndarray:
    """2.0 ** k for integer k in float64's normal range, exactly (built from the exponent bits)."""
    return ((np.asarray(k, np.int64) + 1023) << 52).view(np.float64)


def exponents(x: np.ndarray, zero: np.ndarray, e_sub: int) -> np.ndarray:
    """The exponent e of x = s * 2^e (1 <= |s| < 2; e_sub below the type's normal range) of finite values,
    as int16, with `ZERO_E` where `zero`."""
    e = np.maximum(np.frexp(x)[1] - 1, e_sub)
    e[zero] = ZERO_E
    return e.astype(np.int16)


def finite_mma(ins, sub, a, b, d, L: int, rnd, block, split):
    """`numerics.fused_mma` for finite A and B and no scale factors: the blocks of K (L elements each) in order,
    each adding into the previous D. sub: the smallest normal exponent per type; rnd(v, rounding): the rounding
    of the exact block sums (RZ to f32 here by `round_rz_f32`); block, split: numerics' term-by-term step and
    split, for a block whose incoming D is not finite (an earlier block overflowed)."""
    za, zb = a == 0, b == 0
    ta, tb = exponents(a, za, sub[ins.a_type]), exponents(b, zb, sub[ins.b_type])
    for k0 in range(0, a.shape[1], L):
        if not np.isfinite(d).all():
            (sa, ea), (sb, eb) = split(a, sub[ins.a_type]), split(b, sub[ins.b_type])
            with np.errstate(invalid="ignore"):
                d = block(ins, d, k0, L, a, b, sa, ea, sb, eb, None, None, None, None)
            continue
        ks = slice(k0, k0 + L)
        v = finite_block_sum(ins.F, ins.e_zero, sub[ins.d_type], d.astype(np.float64), a[:, ks], b[:, ks],
                             ta[:, ks], tb[:, ks], za[:, ks].any(axis=1), zb[:, ks].any(axis=1))
        d = round_rz_f32(v) if ins.rounding == "rz-f32" else rnd(v, ins.rounding)
    return d


def finite_block_sum(F: int, e_zero: int, c_sub: int, c, a, b, ta, tb, za, zb) -> np.ndarray:
    """One fused block step before its rounding: the exact sum of the cut terms and of the cut C, as float64
    values (M x N). c: C as float64 (finite); a (M x L), b (N x L): finite element values; ta, tb: their
    `exponents`; za, zb: per row of A and of B, whether any of its L elements is zero (then some term of every
    accumulator in that row is zero). F: fraction bits kept below emax; e_zero: a zero term's exponent;
    c_sub: C's type's smallest normal exponent."""
    ec = np.maximum(np.frexp(c)[1] - 1, c_sub)
    ec[c == 0] = e_zero
    # one M x N plane per k (NumPy's reductions over a short axis cost more than these in-place steps)
    L = a.shape[1]
    ta, tb, a, b = ta.T.copy(), tb.T.copy(), a.T.copy(), b.T.copy()
    te = ta[0][:, None] + tb[0][None, :]                        # int16: exponents stay within +-600
    tmp = np.empty_like(te)
    for k in range(1, L):
        np.add(ta[k][:, None], tb[k][None, :], out=tmp)
        np.maximum(te, tmp, out=te)
    emax = np.maximum(te, ec)
    emax = np.where(za[:, None] | zb[None, :], np.maximum(emax, e_zero), emax)
    scale = pow2(F - emax)                                      # M x N
    total = np.trunc(c * scale)
    t = np.empty_like(total)
    for k in range(L):
        np.multiply(scale, a[k][:, None], out=t)
        t *= b[k]
        np.trunc(t, out=t)
        total += t
    return total * pow2(emax - F)


def round_rz_f32(v: np.ndarray) -> np.ndarray:
    """Exact float64 values cut toward zero to float32 (subnormals included), by NumPy's conversion: it rounds
    to nearest once; where that went away from zero, the next float32 toward zero is the cut value. From 2^128
    up: infinity; NaN: the canonical one (0x7fffffff); a zero: +0."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = v.astype(np.float32)
        away = np.abs(r.astype(np.float64)) > np.abs(v)
        if away.any():
            r = np.where(away, np.nextafter(r, np.float32(0)), r)
        big = np.abs(v) >= 2.0 ** 128
        if big.any():
            r = np.where(big, np.copysign(np.float32(np.inf), r), r)
        r = r + np.float32(0)                           # a zero result is +0
    nan = np.isnan(r)
    if nan.any():
        r = r.view(np.uint32).copy()
        r[nan] = np.uint32(0x7FFFFFFF)
        r = r.view(np.float32)
    return r
