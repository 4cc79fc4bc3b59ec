"""Rounding an exact value once to a format under a PTX rounding mode, the modifiers applied after it
(.ftz, .sat, .relu), and the error-free helpers that form exact values (TwoSum, Dekker's product, f64 with
Python integers)."""
from __future__ import annotations

from math import isqrt

import numpy as np

from .formats import _fields, _sig_exp, _U64, FloatFormat, fmt, FORMATS, to_f64


# ---------------------------------------------------------------- rounding core


def _bitlen(x):
    x = x.astype(np.uint64).copy()
    n = np.zeros(x.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        m = (x >> _U64(s)) != 0
        n = np.where(m, n + s, n)
        x = np.where(m, x >> _U64(s), x)
    return n + (x != 0)


def _round_core(neg, sig, exp, sticky, f: FloatFormat, rnd: str, overflow: str = "ieee"):
    """Round value = (sig + (0, 1 if sticky)) * 2**exp, sig < 2**64, to format f.

    `sticky` says the exact value lies strictly between sig and sig+1 (times 2**exp); sig is
    widened to 62 bits first, so the rounding position always lies above the sticky bit.
    `overflow`: 'ieee' (inf or max by mode; e4m3: NaN) or 'satfinite' (max of the sign).
    Returns raw bits in f's storage."""
    neg = np.asarray(neg, bool)
    sig = np.asarray(sig, np.uint64)
    exp = np.asarray(exp, np.int64)
    sticky = np.broadcast_to(np.asarray(sticky, bool), sig.shape)
    zero = (sig == 0) & ~sticky
    n = _bitlen(sig)
    # Normalise to 62+ bits: no information lost, and every shift below is positive.
    up = np.clip(62 - n, 0, 62)
    sig = np.where(zero, sig, sig << up.astype(np.uint64))
    exp = exp - up
    n = np.maximum(n, 62)
    E = exp + n - 1
    lsb = np.maximum(E, f.emin) - f.mbits
    shift = lsb - exp                                          # >= 9
    sh = np.clip(shift, 1, 63).astype(np.uint64)
    big = shift >= 64
    kept = np.where(big, _U64(0), sig >> sh)
    rem = np.where(big, sig, sig & ((_U64(1) << sh) - _U64(1)))
    half = np.where(shift == 64, _U64(1 << 63), _U64(1) << (sh - _U64(1)))
    above_big = shift > 64                                     # half exceeds any 64-bit rem
    gt = np.where(above_big, False, (rem > half) | ((rem == half) & sticky))
    eq = np.where(above_big, False, (rem == half) & ~sticky)
    inexact = (rem != 0) | sticky
    odd = (kept & _U64(1)) == 1
    if rnd == "rn":
        inc = gt | (eq & odd)
    elif rnd == "rna":
        inc = gt | eq
    elif rnd == "rz":
        inc = np.zeros(kept.shape, bool)
    elif rnd == "rm":
        inc = neg & inexact
    elif rnd == "rp":
        inc = ~neg & inexact
    else:
        raise ValueError(f"unknown rounding mode .{rnd}")
    kept = kept + inc.astype(np.uint64)
    base = np.maximum(lsb - (f.emin - f.mbits), 0).astype(np.uint64)
    code = (base << _U64(f.mbits)) + kept
    code = np.where(zero, _U64(0), code)
    over = code > _U64(f.max_code)
    if over.any():
        maxc = _U64(f.max_code)
        if overflow == "satfinite" or f.nan == "none":
            oc = np.full(code.shape, maxc)
        elif f.nan == "e4m3":                                  # no inf: overflow is NaN
            oc = np.full(code.shape, _U64(0x7F))
        else:
            to_inf = {"rn": np.ones(code.shape, bool), "rna": np.ones(code.shape, bool),
                      "rz": np.zeros(code.shape, bool), "rm": neg, "rp": ~neg}[rnd]
            oc = np.where(to_inf, _U64(f.inf_code), maxc)
        code = np.where(over, oc, code)
    return _with_sign(neg, code, f)


def _with_sign(neg, code, f: FloatFormat):
    out = (np.asarray(code, np.uint64) | (np.asarray(neg, bool).astype(np.uint64) << _U64(f.width - 1)))
    return (out << _U64(f.shift)).astype(f.storage)


def _special(f: FloatFormat, kind: str, neg=False):
    """Raw bits of +-inf / +-max / canonical NaN of f, as a scalar uint64."""
    if kind == "nan":
        return int(f.canon_nan if f.canon_nan is not None else f.max_code) << f.shift
    code = f.inf_code if kind == "inf" else f.max_code
    return ((int(neg) << (f.width - 1)) | code) << f.shift


def _f64_parts(x):
    """Finite float64 -> (neg, sig, exp) exactly."""
    b = np.asarray(x, np.float64).view(np.uint64)
    neg, mag = _fields(b, FORMATS["f64"])
    sig, exp = _sig_exp(mag, FORMATS["f64"])
    return neg, sig, exp


def round_value(x, tail, dst: str, rnd: str = "rn", overflow: str = "ieee"):
    """Round the exact value x + t to `dst`, where x is float64 and t is a tiny error term known only
    by its sign `tail` (-1, 0, +1; |t| < half an f64 ulp of x). Infinities and NaNs of x pass as
    the destination's inf / canonical NaN. Returns raw bits."""
    f = fmt(dst)
    x = np.asarray(x, np.float64)
    tail = np.broadcast_to(np.asarray(tail, np.int64), x.shape)
    finite = np.isfinite(x)
    xs = np.where(finite, x, 0.0)
    neg, sig, exp = _f64_parts(xs)
    # x + t as 4*sig +- 1 (times 2**(exp-2)): rounds like x + t for any target of <= 52 bits.
    s4 = (sig << _U64(2))
    s4 = np.where(tail > 0, s4 + _U64(1), np.where(tail < 0, s4 - _U64(1), s4))
    # a negative x with tail > 0 moves toward zero: flip the tail's meaning by the sign
    s4 = np.where(neg & (tail != 0), np.where(tail > 0, s4 - _U64(2), s4 + _U64(2)), s4)
    out = _round_core(neg, s4, exp - 2, False, f, rnd, overflow)
    if not finite.all():
        inf = np.isinf(x)
        if f.inf_code is not None and overflow != "satfinite":
            infb = np.where(x < 0, _U64(_special(f, "inf", True)), _U64(_special(f, "inf")))
        else:
            infb = np.where(x < 0, _U64(_special(f, "max", True)), _U64(_special(f, "max")))
        out = np.where(inf, infb.astype(f.storage), out)
        out = np.where(np.isnan(x), f.storage(_special(f, "nan")), out)
    return out.astype(f.storage)


def from_f64(x, dst: str, rnd: str = "rn", overflow: str = "ieee"):
    """float64 values rounded once to `dst` raw bits."""
    return round_value(x, 0, dst, rnd, overflow)


# ---------------------------------------------------------------- modifiers


def _is_sub(bits, f: FloatFormat):
    _, mag = _fields(bits, f)
    return (mag != 0) & (mag < _U64(1 << f.mbits))


def _ftz(bits, f: FloatFormat):
    """Subnormals -> zero of their sign."""
    b = np.asarray(bits).astype(f.storage)
    neg, _ = _fields(b, f)
    z = _with_sign(neg, np.zeros(b.shape, np.uint64), f)
    return np.where(_is_sub(b, f), z, b).astype(f.storage)


def _check_ftz(ftz, f, what, allow=("f32", "f16")):
    if ftz and f.name not in allow:
        raise ValueError(f"{what}: .ftz applies to {'/'.join('.' + a for a in allow)} only "
                         f"(PTX ISA 9.7.3, 9.7.4), not .{f.name}")


def _sat(bits, f: FloatFormat):
    """.sat: clamp to [0.0, 1.0]; NaN -> +0.0."""
    v = to_f64(bits, f.name)
    one = f.storage(_with_sign(False, np.array((f.bias) << f.mbits, np.uint64), f))
    out = np.where(np.isnan(v) | (v <= 0), f.storage(0), np.where(v >= 1, one, bits))
    return out.astype(f.storage)


def _relu(bits, f: FloatFormat):
    v = to_f64(bits, f.name)
    out = np.where(np.isnan(v), f.storage(_special(f, "nan")), np.where(np.signbit(v), f.storage(0), bits))
    return out.astype(f.storage)


def _finish(out, f, ftz=False, sat=False, relu=False):
    if ftz:
        out = _ftz(out, f)
    if sat:
        out = _sat(out, f)
    if relu:
        out = _relu(out, f)
    return out.astype(f.storage)


# ---------------------------------------------------------------- exact helpers (error-free)


def _two_sum(a, b):
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    return s, err


def _split(a):
    c = 134217729.0 * a
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _sign(x):
    return np.sign(np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)).astype(np.int64)


# ---------------------------------------------------------------- f64: exact with integers


def _exact_parts(bits):
    """f64 raw bits -> Python (neg, sig, exp) per element (finite only)."""
    neg, mag = _fields(bits, FORMATS["f64"])
    sig, exp = _sig_exp(mag, FORMATS["f64"])
    return [(bool(n), int(s), int(e)) for n, s, e in zip(neg.ravel(), sig.ravel(), exp.ravel())]


def _pack62(M: int, e: int):
    """A Python integer magnitude M * 2**e as (sig <= 64 bits, exp, sticky)."""
    n = M.bit_length()
    if n <= 62:
        return M, e, False
    d = n - 62
    return M >> d, e + d, (M & ((1 << d) - 1)) != 0


def _round_exact(items, f, rnd, overflow="ieee"):
    """items: list of (neg, M, e, sticky) Python ints -> raw bits array."""
    neg = np.array([i[0] for i in items], bool)
    sig, exp, st = [], [], []
    for _, M, e, s in items:
        a, b, c = _pack62(M, e)
        sig.append(a)
        exp.append(b)
        st.append(c or s)
    return _round_core(neg, np.array(sig, np.uint64), np.array(exp, np.int64), np.array(st, bool),
                       f, rnd, overflow)


def _f64_exact_op(op, args, rnd):
    """Directed-mode / fma f64 arithmetic on finite operands, element by element with integers."""
    f = FORMATS["f64"]
    parts = [_exact_parts(a) for a in args]
    items = []
    for ps in zip(*parts):
        if op in ("add", "fma"):
            if op == "add":
                (na, sa, ea), (nb, sb, eb) = ps
            else:
                (n1, s1, e1), (n2, s2, e2), (nb, sb, eb) = ps
                na, sa, ea = n1 ^ n2, s1 * s2, e1 + e2
            e = min(ea, eb)
            v = (-1) ** na * (sa << (ea - e)) + (-1) ** nb * (sb << (eb - e))
            if v == 0:
                # an exact zero: both addends zeros of one sign keep it, else +0 (-0 under .rm)
                zneg = na if (sa == 0 and sb == 0 and na == nb) else (rnd == "rm")
                items.append((zneg, 0, 0, False))
            else:
                items.append((v < 0, abs(v), e, False))
        elif op == "mul":
            (na, sa, ea), (nb, sb, eb) = ps
            items.append((na ^ nb, sa * sb, ea + eb, False))
        elif op == "div":
            (na, sa, ea), (nb, sb, eb) = ps
            if sa == 0:
                items.append((na ^ nb, 0, 0, False))
                continue
            k = max(0, 64 + sb.bit_length() - sa.bit_length())
            q, r = divmod(sa << k, sb)
            items.append((na ^ nb, q, ea - eb - k, r != 0))
        elif op == "sqrt":
            ((na, sa, ea),) = ps
            if sa == 0:
                items.append((na, 0, 0, False))
                continue
            if ea % 2:
                sa, ea = sa << 1, ea - 1
            k = max(0, 64 - sa.bit_length() // 2 + 2)
            M = sa << (2 * k)
            r = isqrt(M)
            items.append((False, r, (ea - 2 * k) // 2, r * r != M))
        else:  # pragma: no cover
            raise ValueError(op)
    return _round_exact(items, f, rnd)
