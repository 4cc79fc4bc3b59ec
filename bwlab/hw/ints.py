"""Integer and bit instructions bit for bit, over raw bits (PTX ISA 9.7.1 "Integer Arithmetic
Instructions", 9.7.2 "Extended-Precision Integer Arithmetic", 9.7.8 "Logic and Shift", 9.7.9.20
"prmt", 9.7.15 "Video Instructions").

Every operand and result is a NumPy array of unsigned raw bits of the type's width (uint8 for
s8/u8, ..., uint64 for s64/u64/b64); the signedness is an argument, as PTX spells it in the type
(`typ='s32'`). Nothing here goes through Python's unbounded integers on the common paths, so a
64-bit field never raises OverflowError; 128-bit values are (lo, hi) pairs of uint64.

Rules we follow:

* Wrap-around by default; `add.sat.s32`/`sub.sat.s32`/`mad.hi.sat.s32` clamp to [INT_MIN, INT_MAX].
* Carries (9.7.2): `add.cc`/`addc{.cc}` write CC.CF = carry out; `sub.cc`/`subc{.cc}` write the
  borrow into CC.CF and `subc` subtracts it (d = a - (b + CF)). `mad.lo.cc`/`madc` likewise.
* `div`/`rem` (9.7.1.8/9): truncate toward zero (`LLONG_MIN / 3 == -3074457345618258602`);
  division by zero is "unspecified" in the ISA: an H200 gives all ones for both x/0 and x%0,
  signed or unsigned (measured for 32 bits; 16 and 64 bits assumed alike); INT_MIN / -1 = INT_MIN,
  INT_MIN % -1 = 0 (measured).
* Shifts (9.7.8.7/8): `shl`/`shr` take the whole unsigned count: counts >= width give 0 (`shr.s`:
  all sign bits). `shf.l/.r.clamp` clamp the count at 32, `.wrap` take it mod 32 (9.7.8.9).
* `bfe`/`bfi` (9.7.1.18/19): position and length are the low 8 bits of their operands; `bfe.s`
  fills with the sign of the last extracted bit (0 when len == 0).
* `bfind` (9.7.1.16): the position of the most significant non-sign bit, 0xffffffff if none;
  `.shiftamt` gives width-1-position instead.
* `prmt` (9.7.9.20): the default mode picks bytes of {b, a} (a = bytes 0..3) by the four low
  nibbles of c, bit 3 of a nibble replicating the picked byte's sign; f4e, b4e, rc8, ecl, ecr,
  rc16 use c[1:0] and the ISA's table.
* `dp4a`/`dp2a` (9.7.1.23/24): wrap-around sums into 32 bits; each operand signed or unsigned.
* `bmsk` (9.7.8.10) and `szext` (9.7.8.11): `.clamp` limits position and length at 32, `.wrap`
  takes them mod 32.
* Video SIMD (9.7.15.2 `vadd2`...`vset4`): bytes or halves extended by their types, `.sat`
  clamps each lane to the destination lane's range, the merge form keeps c's lanes outside the
  mask, `.add` sums the lanes into c.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "add", "sub", "add_cc", "addc", "sub_cc", "subc", "mul", "mad", "mad_cc", "mul24", "mad24",
    "div", "rem", "abs_", "neg", "imin", "imax", "sad", "bfind", "clz", "popc", "brev", "bfe", "bfi",
    "prmt", "dp4a", "dp2a", "bmsk", "szext", "shf", "shl", "shr", "lop3", "vop", "simd16",
    "to_signed", "u128_split", "u128_join", "add128", "mul128",
]

_U64 = np.uint64
_UDT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_SDT = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def _typ(typ: str):
    """'s32' -> (signed, 32). b-types are unsigned."""
    if len(typ) < 2 or typ[0] not in "sub" or typ[1:] not in ("8", "16", "32", "64"):
        raise ValueError(f"{typ!r} is not an integer type (s8..s64, u8..u64, b8..b64)")
    return typ[0] == "s", int(typ[1:])


def _mask(w):
    return _U64((1 << w) - 1) if w < 64 else _U64(0xFFFFFFFFFFFFFFFF)


def _u(x, w=64):
    """Any integer array -> uint64 holding its low w bits."""
    a = np.asarray(x)
    if a.dtype.kind not in "uib":
        raise TypeError(f"integer operands are integer arrays of raw bits, got {a.dtype}")
    return a.astype(np.int64 if a.dtype.kind == "i" else np.uint64).astype(np.uint64) & _mask(w)


def _out(x, w):
    return (np.asarray(x, np.uint64) & _mask(w)).astype(_UDT[w])


def to_signed(x, w):
    """Raw bits -> signed NumPy values (int8..int64) of width w."""
    return _u(x, w).astype(_UDT[w]).view(_SDT[w])


def _sext64(x, w):
    """Low w bits, sign-extended, as int64."""
    return to_signed(x, w).astype(np.int64)


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


# ---------------------------------------------------------------- bit counts and fields


def _bitlen(x):
    x = np.asarray(x, np.uint64).copy()
    n = np.zeros(x.shape, np.int64)
    for sft in (32, 16, 8, 4, 2, 1):
        m = (x >> _U64(sft)) != 0
        n = np.where(m, n + sft, n)
        x = np.where(m, x >> _U64(sft), x)
    return n + (x != 0)


def clz(a, typ):
    """clz.b32/.b64 -> u32 count of leading zeros."""
    s, w = _typ(typ)
    return (w - _bitlen(_u(a, w))).astype(np.uint32)


_POPC8 = np.array([bin(i).count("1") for i in range(256)], np.uint32)
_REV8 = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], np.uint64)


def _bytes_of(x, w):
    b = np.ascontiguousarray(x.astype(_UDT[w])).view(np.uint8).reshape(x.shape + (w // 8,))
    return b if np.little_endian else b[..., ::-1]


def popc(a, typ):
    """popc.b32/.b64 -> u32."""
    s, w = _typ(typ)
    return _POPC8[_bytes_of(_u(a, w), w)].sum(axis=-1, dtype=np.uint32)


def brev(a, typ):
    """brev.b32/.b64: bit i -> bit w-1-i."""
    s, w = _typ(typ)
    bs = _REV8[_bytes_of(_u(a, w), w)]
    r = np.zeros(bs.shape[:-1], np.uint64)
    for i in range(w // 8):
        r |= bs[..., i] << _U64(w - 8 - 8 * i)
    return _out(r, w)


def bfind(a, typ, shiftamt=False):
    """bfind{.shiftamt}.typ -> u32: most significant non-sign bit, 0xffffffff if none."""
    s, w = _typ(typ)
    x = _u(a, w)
    if s:
        x = np.where((x >> _U64(w - 1)) & _U64(1) == 1, (~x) & _mask(w), x)
    pos = _bitlen(x) - 1
    none = pos < 0
    r = np.where(shiftamt, (w - 1) - pos, pos)
    return np.where(none, np.uint32(0xFFFFFFFF), r.astype(np.uint32)).astype(np.uint32)


def bfe(a, pos, length, typ):
    """bfe.typ d, a, pos, len (9.7.1.18); pos and len: the low 8 bits of their operands."""
    s, w = _typ(typ)
    if w not in (32, 64):
        raise ValueError("bfe: types .u32/.s32/.u64/.s64")
    x = _u(a, w)
    p = _u(pos, 32) & _U64(0xFF)
    ln = _u(length, 32) & _U64(0xFF)
    msb = _U64(w - 1)
    # bits copied: i < len and pos + i <= msb  ->  count = min(len, max(0, w - pos))
    avail = np.where(p > msb, _U64(0), _U64(w) - np.minimum(p, _U64(w)))
    cnt = np.minimum(ln, avail)
    shifted = np.where(p > msb, _U64(0), x >> np.minimum(p, msb))
    field = np.where(cnt >= _U64(64), shifted, shifted & ((_U64(1) << np.minimum(cnt, _U64(63))) - _U64(1)))
    if s:
        sidx = np.minimum(p + ln - _U64(1), msb)
        sbit = np.where(ln == 0, _U64(0), (x >> np.where(ln == 0, _U64(0), sidx)) & _U64(1))
        fill = np.where(cnt >= _U64(w), _U64(0), (_mask(w) << np.minimum(cnt, _U64(w - 1))) & _mask(w))
        fill = np.where(cnt >= _U64(w), _U64(0), fill)
        field = np.where(sbit == 1, field | fill, field)
    return _out(field, w)


def bfi(a, b, pos, length, typ):
    """bfi.b32/.b64 d, a, b, pos, len: a's low len bits inserted into b at pos (9.7.1.19)."""
    s, w = _typ(typ)
    if w not in (32, 64):
        raise ValueError("bfi: types .b32/.b64")
    x, y = _u(a, w), _u(b, w)
    p = _u(pos, 32) & _U64(0xFF)
    ln = _u(length, 32) & _U64(0xFF)
    avail = np.where(p >= _U64(w), _U64(0), _U64(w) - np.minimum(p, _U64(w)))
    cnt = np.minimum(ln, avail)
    m = np.where(cnt >= _U64(64), _mask(64), (_U64(1) << np.minimum(cnt, _U64(63))) - _U64(1))
    ps = np.minimum(p, _U64(w - 1))
    m = np.where(cnt == 0, _U64(0), m << ps) & _mask(w)
    ins = (x << ps) & m
    return _out((y & ~m) | ins, w)


# ---------------------------------------------------------------- prmt


_PRMT_MODES = {   # c[1:0] -> source byte for d.b0, d.b1, d.b2, d.b3 (PTX ISA 9.7.9.20 table)
    "f4e": ((0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)),
    "b4e": ((0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)),
    "rc8": ((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),
    "ecl": ((0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)),
    "ecr": ((0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)),
    "rc16": ((0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)),
}


def prmt(a, b, c, mode=None):
    """prmt.b32{.mode} d, a, b, c (9.7.9.20)."""
    x = _u(a, 32) | (_u(b, 32) << _U64(32))              # bytes 0..3 from a, 4..7 from b
    sel = _u(c, 32)
    x, sel = np.broadcast_arrays(x, sel)
    d = np.zeros(x.shape, np.uint64)
    if mode is None:
        for i in range(4):
            nib = (sel >> _U64(4 * i)) & _U64(0xF)
            byte = (x >> ((nib & _U64(7)) * _U64(8))) & _U64(0xFF)
            rep = (nib & _U64(8)) != 0
            byte = np.where(rep, np.where(byte & _U64(0x80) != 0, _U64(0xFF), _U64(0)), byte)
            d |= byte << _U64(8 * i)
        return _out(d, 32)
    if mode not in _PRMT_MODES:
        raise ValueError(f"prmt.{mode}: modes are {', '.join(_PRMT_MODES)} (or none)")
    tab = np.array(_PRMT_MODES[mode], np.uint64)
    idx = (sel & _U64(3)).astype(np.int64)
    for i in range(4):
        src = tab[idx, i]
        d |= ((x >> (src * _U64(8))) & _U64(0xFF)) << _U64(8 * i)
    return _out(d, 32)


# ---------------------------------------------------------------- dot products


def _lanes(x, n, width, signed):
    """Split uint32 bits into n lanes of `width` bits, extended to int64."""
    x = _u(x, 32)
    out = []
    for i in range(n):
        v = ((x >> _U64(width * i)) & _U64((1 << width) - 1)).astype(np.int64)
        if signed:
            v = np.where(v >= (1 << (width - 1)), v - (1 << width), v)
        out.append(v)
    return out


def dp4a(a, b, c, atype="u32", btype="u32"):
    """dp4a.atype.btype d, a, b, c: c + sum of the four byte products (9.7.1.23)."""
    la = _lanes(a, 4, 8, atype == "s32")
    lb = _lanes(b, 4, 8, btype == "s32")
    acc = _u(c, 32).astype(np.int64)
    for x, y in zip(la, lb):
        acc = acc + x * y
    return _out(acc.view(np.uint64), 32)


def dp2a(a, b, c, atype="u32", btype="u32", part="lo"):
    """dp2a.{lo,hi}.atype.btype: c + a.h0*b.byte(k) + a.h1*b.byte(k+1), k = 0 (.lo) or 2 (.hi)."""
    la = _lanes(a, 2, 16, atype == "s32")
    lb = _lanes(b, 4, 8, btype == "s32")
    k = {"lo": 0, "hi": 2}[part]
    acc = _u(c, 32).astype(np.int64) + la[0] * lb[k] + la[1] * lb[k + 1]
    return _out(acc.view(np.uint64), 32)


# ---------------------------------------------------------------- masks, extension, shifts


def _clampwrap(x, mode):
    x = _u(x, 32)
    if mode == "clamp":
        return np.minimum(x, _U64(32))
    if mode == "wrap":
        return x & _U64(31)
    raise ValueError(f"mode .{mode}: PTX modes are .clamp and .wrap")


def bmsk(a, b, mode="clamp"):
    """bmsk.mode.b32 d, a, b: b ones starting at bit a (9.7.8.10)."""
    p, n = _clampwrap(a, mode), _clampwrap(b, mode)
    ones = np.where(n >= _U64(32), _mask(64), (_U64(1) << n) - _U64(1))
    return _out(np.where(p >= _U64(32), _U64(0), ones << np.minimum(p, _U64(31))), 32)


def szext(a, b, typ, mode="clamp"):
    """szext.mode.{s32,u32} d, a, b: extend the low b bits of a (9.7.8.11)."""
    s, w = _typ(typ)
    n = _clampwrap(b, mode)
    x = _u(a, 32)
    low = np.where(n >= _U64(32), x, x & ((_U64(1) << n) - _U64(1)))
    if s:
        top = np.where((n > 0) & (n < 32), (x >> np.maximum(n, _U64(1)) - _U64(1)) & _U64(1), _U64(0))
        fill = (_mask(32) << n) & _mask(32)
        low = np.where(top == 1, low | fill, low)
    return _out(low, 32)


def shf(a, b, c, direction, mode="clamp"):
    """shf.{l,r}.{clamp,wrap}.b32 d, a, b, c: funnel shift of the 64-bit {b:a} (9.7.8.9)."""
    n = _clampwrap(c, mode)
    x = _u(a, 32) | (_u(b, 32) << _U64(32))
    if direction == "l":
        return _out(((x << n) >> _U64(32)), 32)
    if direction == "r":
        return _out(x >> n, 32)
    raise ValueError("shf: direction 'l' or 'r'")


def shl(a, n, typ):
    """shl.bN: counts >= N give 0."""
    s, w = _typ(typ)
    cnt = _u(n, 32)
    return _out(np.where(cnt >= _U64(w), _U64(0), _u(a, w) << np.minimum(cnt, _U64(63))), w)


def shr(a, n, typ):
    """shr.{s,u,b}N: counts >= N give 0 (unsigned) or all sign bits (signed)."""
    s, w = _typ(typ)
    cnt = np.minimum(_u(n, 32), _U64(w - 1 if s else 63))
    if s:
        v = _sext64(a, w)
        return _out((v >> cnt.astype(np.int64)).view(np.uint64), w)
    return _out(np.where(_u(n, 32) >= _U64(w), _U64(0), _u(a, w) >> cnt), w)


def lop3(a, b, c, lut):
    """lop3.b32 d, a, b, c, immLut: bit i of d = bit (a<<2|b<<1|c) of immLut (9.7.8.6)."""
    if not 0 <= int(lut) <= 255:
        raise ValueError(f"lop3: immLut must be 0..255, got {lut}")
    x, y, z = np.broadcast_arrays(_u(a, 32), _u(b, 32), _u(c, 32))
    d = np.zeros(x.shape, np.uint64)
    M = _mask(32)
    for i in range(8):
        if (int(lut) >> i) & 1:
            d |= (x if i & 4 else ~x & M) & (y if i & 2 else ~y & M) & (z if i & 1 else ~z & M)
    return _out(d, 32)


# ---------------------------------------------------------------- SIMD


_VOPS = ("add", "sub", "avrg", "absdiff", "min", "max", "set")
_VSET = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
         "gt": np.greater, "ge": np.greater_equal}


def vop(op, lanes, a, b, c, dtype="u32", atype="u32", btype="u32", sat=False, accumulate=False,
        mask=None, cmp=None):
    """vop2/vop4 (9.7.15.2): op in add, sub, avrg, absdiff, min, max, set (with cmp); lanes 2 or 4.

    Merge form (default): lanes selected by `mask` (all by default) take the result, the others
    keep c's lane. `accumulate` (.add): d = c + the sum of the selected lanes' results."""
    if op not in _VOPS or lanes not in (2, 4):
        raise ValueError(f"v{op}{lanes}: ops are {', '.join(_VOPS)}, lanes 2 or 4")
    width = 32 // lanes
    la = _lanes(a, lanes, width, atype == "s32")
    lb = _lanes(b, lanes, width, btype == "s32")
    lc = _lanes(c, lanes, width, False)
    dsig = dtype == "s32"
    lo, hi = (-(1 << (width - 1)), (1 << (width - 1)) - 1) if dsig else (0, (1 << width) - 1)
    mask = (1 << lanes) - 1 if mask is None else int(mask)
    res = []
    for x, y in zip(la, lb):
        if op == "add":
            t = x + y
        elif op == "sub":
            t = x - y
        elif op == "avrg":
            t = (x + y + 1) >> 1
        elif op == "absdiff":
            t = np.abs(x - y)
        elif op == "min":
            t = np.minimum(x, y)
        elif op == "max":
            t = np.maximum(x, y)
        else:
            if cmp not in _VSET:
                raise ValueError(f"vset: comparison must be one of {', '.join(_VSET)}")
            t = _VSET[cmp](x, y).astype(np.int64)
        if sat and not accumulate:
            t = np.clip(t, lo, hi)
        res.append(t)
    if accumulate:
        acc = _u(c, 32).astype(np.int64)
        for i, t in enumerate(res):
            if (mask >> i) & 1:
                acc = acc + t
        return _out(acc.view(np.uint64), 32)
    d = np.zeros(np.shape(res[0]), np.uint64)
    for i, (t, keep) in enumerate(zip(res, lc)):
        v = t if (mask >> i) & 1 else keep
        d |= (v.view(np.uint64) & _U64((1 << width) - 1)) << _U64(width * i)
    return _out(d, 32)


def simd16(op, a, b=None, typ="s16", relu=False):
    """The 16x2 forms NVRTC emits for the CUDA SIMD intrinsics: add/sub/min/max.{s16x2,u16x2}{.relu},
    neg.s16x2 (each half wraps)."""
    s, w = _typ(typ)
    if w != 16:
        raise ValueError("simd16: types .s16/.u16 (the x2 forms)")
    la = _lanes(a, 2, 16, s)
    lb = _lanes(b, 2, 16, s) if b is not None else [None, None]
    out = []
    for x, y in zip(la, lb):
        t = {"add": lambda: x + y, "sub": lambda: x - y, "min": lambda: np.minimum(x, y),
             "max": lambda: np.maximum(x, y), "neg": lambda: -x}[op]()
        if relu:
            t = np.maximum(t, 0)
        out.append(t.view(np.uint64) & _U64(0xFFFF))
    return _out(out[0] | (out[1] << _U64(16)), 32)


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
