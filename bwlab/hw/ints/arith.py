"""Integer arithmetic (PTX ISA 9.7.1, 9.7.2): add/sub with saturation and carries, mul/mad in every mode,
div/rem, abs/neg/min/max/sad, and 128-bit values as (lo, hi) pairs."""
from __future__ import annotations

import numpy as np

from .common import _mask, _out, _sext64, _typ, _u, _U64


# ---------------------------------------------------------------- add / sub / carries


def add(a, b, typ, sat=False):
    """add{.sat}.typ; .sat only for s32 (PTX ISA 9.7.1.1)."""
    s, w = _typ(typ)
    if sat:
        if typ != "s32":
            raise ValueError(f"add.sat: PTX defines .sat for .s32 only, not .{typ}")
        r = _sext64(a, 32) + _sext64(b, 32)
        return _out(np.clip(r, -2**31, 2**31 - 1).view(np.uint64), 32)
    return _out(_u(a, w) + _u(b, w), w)


def sub(a, b, typ, sat=False):
    s, w = _typ(typ)
    if sat:
        if typ != "s32":
            raise ValueError(f"sub.sat: PTX defines .sat for .s32 only, not .{typ}")
        r = _sext64(a, 32) - _sext64(b, 32)
        return _out(np.clip(r, -2**31, 2**31 - 1).view(np.uint64), 32)
    return _out(_u(a, w) - _u(b, w), w)


def _cc_w(typ):
    s, w = _typ(typ)
    if w not in (32, 64):
        raise ValueError(f"carry instructions take 32- or 64-bit types (PTX ISA 9.7.2), not .{typ}")
    return w


def addc(a, b, carry_in, typ):
    """addc.cc.typ: (a + b + CF, carry out). `carry_in` is a 0/1 (or bool) array."""
    w = _cc_w(typ)
    a, b = _u(a, w), _u(b, w)
    c = np.asarray(carry_in).astype(np.uint64) & _U64(1)
    if w == 32:
        t = a + b + c
        return _out(t, 32), (t >> _U64(32)).astype(bool)
    t = a + b
    c1 = t < a
    r = t + c
    return _out(r, 64), c1 | (r < t)


def add_cc(a, b, typ):
    """add.cc.typ: (a + b, carry out)."""
    return addc(a, b, 0, typ)


def subc(a, b, borrow_in, typ):
    """subc.cc.typ: (a - (b + CF), borrow out in CF)."""
    w = _cc_w(typ)
    a, b = _u(a, w), _u(b, w)
    c = np.asarray(borrow_in).astype(np.uint64) & _U64(1)
    t = (a - b) & _mask(w)
    b1 = a < b
    r = (t - c) & _mask(w)
    return _out(r, w), b1 | (t < c)


def sub_cc(a, b, typ):
    return subc(a, b, 0, typ)


# ---------------------------------------------------------------- multiply


def _mul_u64_full(a, b):
    """uint64 x uint64 -> (lo, hi) of the 128-bit product, by 32-bit limbs."""
    M = _U64(0xFFFFFFFF)
    a0, a1 = a & M, a >> _U64(32)
    b0, b1 = b & M, b >> _U64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> _U64(32)) + (p01 & M) + (p10 & M)
    hi = p11 + (p01 >> _U64(32)) + (p10 >> _U64(32)) + (mid >> _U64(32))
    lo = (mid << _U64(32)) | (p00 & M)
    return lo, hi


def _mul_full(a, b, s, w):
    """Full 2w-bit product as (lo w bits, hi w bits) in uint64."""
    if w <= 32:
        if s:
            p = (_sext64(a, w) * _sext64(b, w)).view(np.uint64)
        else:
            p = _u(a, w) * _u(b, w)
        return p & _mask(w), (p >> _U64(w)) & _mask(w)
    ua, ub = _u(a, 64), _u(b, 64)
    lo, hi = _mul_u64_full(ua, ub)
    if s:
        hi = hi - np.where(ua >> _U64(63) == 1, ub, _U64(0)) - np.where(ub >> _U64(63) == 1, ua, _U64(0))
    return lo, hi


def mul(a, b, typ, mode="lo"):
    """mul.{lo,hi,wide}.typ (PTX ISA 9.7.1.3). .wide (16/32-bit types) returns 2w-bit bits."""
    s, w = _typ(typ)
    lo, hi = _mul_full(a, b, s, w)
    if mode == "lo":
        return _out(lo, w)
    if mode == "hi":
        return _out(hi, w)
    if mode == "wide":
        if w > 32:
            raise ValueError("mul.wide: PTX defines .wide for 16- and 32-bit types only")
        return _out(lo | (hi << _U64(w)), 2 * w)
    raise ValueError(f"mul.{mode}: modes are .lo, .hi, .wide")


def mad(a, b, c, typ, mode="lo", sat=False):
    """mad.{lo,hi,wide}{.sat}.typ: the product's part plus c; .sat only for mad.hi.sat.s32.
    With .wide, c and the result are 2w bits wide (raw bits of that width)."""
    s, w = _typ(typ)
    if sat:
        if not (typ == "s32" and mode == "hi"):
            raise ValueError("mad.sat: PTX defines .sat for mad.hi.s32 only")
        p = _sext64(a, 32) * _sext64(b, 32)
        r = (p >> np.int64(32)) + _sext64(c, 32)
        return _out(np.clip(r, -2**31, 2**31 - 1).view(np.uint64), 32)
    if mode == "wide":
        return add(mul(a, b, typ, "wide"), c, ("s" if s else "u") + str(2 * w))
    return add(mul(a, b, typ, mode), c, typ)


def mad_cc(a, b, c, typ, mode="lo", carry_in=0):
    """mad{c}.{lo,hi}.cc.typ: (part of a*b + c + CF, carry out) for 32/64-bit types (9.7.2.5/6)."""
    return addc(mul(a, b, typ, mode), c, carry_in, typ)


def mul24(a, b, typ, mode="lo"):
    """mul24.{lo,hi}.{s32,u32}: 24-bit operands, 48-bit product; .hi = bits 47..16."""
    s, w = _typ(typ)
    if w != 32:
        raise ValueError("mul24: types .s32/.u32 only")
    a24 = _u(a, 24)
    b24 = _u(b, 24)
    if s:
        a24 = ((a24 ^ _U64(0x800000)) - _U64(0x800000))
        b24 = ((b24 ^ _U64(0x800000)) - _U64(0x800000))
    p = a24 * b24
    return _out(p if mode == "lo" else p >> _U64(16), 32)


def mad24(a, b, c, typ, mode="lo", sat=False):
    if sat:
        raise ValueError("mad24.sat is not modelled (hi.sat.s32 only in PTX; no CUDA construct emits it)")
    return add(mul24(a, b, typ, mode), c, typ)


# ---------------------------------------------------------------- div / rem / abs / neg / min / max / sad


def _divmod(a, b, s, w):
    if not s:
        ua, ub = _u(a, w), _u(b, w)
        z = ub == 0
        q = np.where(z, _mask(w), ua // np.where(z, _U64(1), ub))
        r = np.where(z, _mask(w), ua % np.where(z, _U64(1), ub))
        return q, r
    sa, sb = _sext64(a, w), _sext64(b, w)
    na, nb = sa < 0, sb < 0
    ua = np.where(na, (~sa.view(np.uint64)) + _U64(1), sa.view(np.uint64)) & _mask(64)
    ub = np.where(nb, (~sb.view(np.uint64)) + _U64(1), sb.view(np.uint64))
    z = ub == 0
    uq = np.where(z, _mask(w), ua // np.where(z, _U64(1), ub))
    ur = np.where(z, ua, ua % np.where(z, _U64(1), ub))
    q = np.where(na ^ nb, (~uq) + _U64(1), uq)
    r = np.where(na, (~ur) + _U64(1), ur)
    return np.where(z, _mask(w), q), np.where(z, _mask(w), r)


def div(a, b, typ):
    """div.typ: truncating quotient; see the module docstring for /0 and INT_MIN/-1."""
    s, w = _typ(typ)
    return _out(_divmod(a, b, s, w)[0], w)


def rem(a, b, typ):
    """rem.typ: remainder with the sign of a."""
    s, w = _typ(typ)
    return _out(_divmod(a, b, s, w)[1], w)


def abs_(a, typ):
    """abs.sN: |a| with INT_MIN -> INT_MIN."""
    s, w = _typ(typ)
    v = _sext64(a, w)
    return _out(np.where(v < 0, (~v.view(np.uint64)) + _U64(1), v.view(np.uint64)), w)


def neg(a, typ):
    s, w = _typ(typ)
    return _out((~_u(a, w)) + _U64(1), w)


def _minmax(a, b, typ, want_max, relu):
    s, w = _typ(typ)
    if relu and typ != "s32":
        raise ValueError("min/max.relu: .s32 (and .s16x2 via simd16) only")
    if s:
        va, vb = _sext64(a, w), _sext64(b, w)
    else:
        va, vb = _u(a, w), _u(b, w)
    r = np.maximum(va, vb) if want_max else np.minimum(va, vb)
    if relu:
        r = np.maximum(r, 0)
    return _out(r.view(np.uint64) if r.dtype == np.int64 else r, w)


def imin(a, b, typ, relu=False):
    return _minmax(a, b, typ, False, relu)


def imax(a, b, typ, relu=False):
    return _minmax(a, b, typ, True, relu)


def sad(a, b, c, typ):
    """sad.typ: |a - b| + c (9.7.1.12)."""
    s, w = _typ(typ)
    if s:
        va, vb = _sext64(a, w), _sext64(b, w)
        d = np.where(va >= vb, va.view(np.uint64) - vb.view(np.uint64), vb.view(np.uint64) - va.view(np.uint64))
    else:
        va, vb = _u(a, w), _u(b, w)
        d = np.where(va >= vb, va - vb, vb - va)
    return _out(d + _u(c, w), w)



# ---------------------------------------------------------------- 128-bit


def u128_split(values):
    """Python ints (any sign, taken mod 2**128) -> (lo, hi) uint64 arrays."""
    v = [int(x) % (1 << 128) for x in np.ravel(np.asarray(values, dtype=object))]
    return (np.array([x & 0xFFFFFFFFFFFFFFFF for x in v], np.uint64),
            np.array([x >> 64 for x in v], np.uint64))


def u128_join(lo, hi, signed=False):
    """(lo, hi) -> list of Python ints (two's complement read when signed)."""
    out = []
    for a, b in zip(np.ravel(lo), np.ravel(hi)):
        v = int(a) | (int(b) << 64)
        out.append(v - (1 << 128) if signed and v >> 127 else v)
    return out


def add128(a, b):
    """The add.cc.u64 / addc.u64 chain NVRTC emits for __int128 addition."""
    lo, c = add_cc(a[0], b[0], "u64")
    hi, _ = addc(a[1], b[1], c, "u64")
    return lo, hi


def mul128(a, b):
    """The low 128 bits of a 128x128 product, as NVRTC's mul.lo/mul.hi/mad.lo chain computes it."""
    lo = mul(a[0], b[0], "u64", "lo")
    hi = mul(a[0], b[0], "u64", "hi")
    hi = mad(a[0], b[1], hi, "u64", "lo")
    hi = mad(a[1], b[0], hi, "u64", "lo")
    return lo, hi
