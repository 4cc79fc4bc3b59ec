"""Bit instructions (PTX ISA 9.7.1.15-19, 9.7.8, 9.7.9.20): counts, fields, prmt, masks, sign/zero
extension, shifts and lop3."""
from __future__ import annotations

import numpy as np

from .common import _mask, _out, _sext64, _typ, _u, _U64, _UDT


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
