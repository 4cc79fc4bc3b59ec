"""Integer arithmetic (PTX ISA, "Integer Arithmetic Instructions").

Each function is the semantics `make(ty, mods, out_ty) -> f(*lane_values)` that
`arith.arithmetic(integer=...)` calls once at decode; `f` runs on NumPy vectors of the 32 lanes.
"""
from __future__ import annotations

import numpy as np

from ..values import WIDTH, from_bits
from .operands import value_dtype

__all__ = ["add", "sub", "mul", "mad", "div", "rem", "minimum", "maximum", "abs_", "neg", "popc", "clz",
           "brev", "bfe", "bfi"]


def add(ty, mods, out_ty):
    """Integer Arithmetic: add (wraps modulo 2^n)."""
    return lambda a, b: (a + b).astype(a.dtype)


def sub(ty, mods, out_ty):
    """Integer Arithmetic: sub."""
    return lambda a, b: (a - b).astype(a.dtype)


def mulhi(ty):
    w = WIDTH[ty]
    if w <= 32:
        big = np.int64 if ty[0] == "s" else np.uint64

        def f(a, b):
            return ((a.astype(big) * b.astype(big)) >> big(w)).astype(a.dtype)
        return f

    def f(a, b):
        out = [((int(x) * int(y)) >> 64) for x, y in zip(a, b)]
        return np.array([o & ((1 << 64) - 1) for o in out], np.uint64).view(a.dtype)
    return f


def mul(ty, mods, out_ty):
    """Integer Arithmetic: mul{.hi,.lo,.wide}."""
    if "hi" in mods:
        return mulhi(ty)
    if "wide" in mods:
        odt = value_dtype(out_ty)
        return lambda a, b: a.astype(odt) * b.astype(odt)
    return lambda a, b: a * b


def mad(ty, mods, out_ty):
    """Integer Arithmetic: mad{.hi,.lo,.wide}."""
    if "hi" in mods:
        h = mulhi(ty)
        return lambda a, b, c: h(a, b) + c
    if "wide" in mods:
        odt = value_dtype(out_ty)
        return lambda a, b, c: a.astype(odt) * b.astype(odt) + c.astype(odt)
    return lambda a, b, c: a * b + c


def div(ty, mods, out_ty):
    """Integer Arithmetic: div (division by zero gives all ones, as the GPU does)."""
    if ty[0] == "s":
        def f(a, b):
            bb = np.where(b == 0, 1, b)
            q = np.abs(a.astype(np.int64)) // np.abs(bb.astype(np.int64))
            q = np.where((a < 0) ^ (bb < 0), -q, q)
            return np.where(b == 0, -1, q).astype(a.dtype)
        return f
    return lambda a, b: np.where(b == 0, a.dtype.type(~0 & ((1 << (8 * a.dtype.itemsize)) - 1)),
                                 a // np.where(b == 0, 1, b)).astype(a.dtype)


def rem(ty, mods, out_ty):
    """Integer Arithmetic: rem (the sign of the dividend)."""
    if ty[0] == "s":
        def f(a, b):
            bb = np.where(b == 0, 1, b).astype(np.int64)
            r = np.abs(a.astype(np.int64)) % np.abs(bb)
            return np.where(a < 0, -r, r).astype(a.dtype)
        return f
    return lambda a, b: np.where(b == 0, a, a % np.where(b == 0, 1, b)).astype(a.dtype)


def minimum(ty, mods, out_ty):
    """Integer Arithmetic: min."""
    return np.minimum


def maximum(ty, mods, out_ty):
    """Integer Arithmetic: max."""
    return np.maximum


def abs_(ty, mods, out_ty):
    """Integer Arithmetic: abs."""
    return lambda a: np.abs(a).astype(a.dtype)


def neg(ty, mods, out_ty):
    """Integer Arithmetic: neg."""
    return lambda a: (-a).astype(a.dtype)


def popc(ty, mods, out_ty):
    """Integer Arithmetic: popc."""
    return lambda a: np.array([bin(int(x)).count("1") for x in a.astype(np.uint64)], np.uint32)


def clz(ty, mods, out_ty):
    """Integer Arithmetic: clz."""
    w = WIDTH[ty]
    return lambda a: np.array([w - int(x).bit_length() for x in a.astype(np.uint64)], np.uint32)


def brev(ty, mods, out_ty):
    """Integer Arithmetic: brev."""
    w = WIDTH[ty]
    return lambda a: from_bits(np.array([int(format(int(x), f"0{w}b")[::-1], 2) for x in a.astype(np.uint64)],
                                        np.uint64), ty)


def bfe(ty, mods, out_ty):
    """Integer Arithmetic: bfe (bit field extract; .s types sign-extend from the field's last bit)."""
    w = WIDTH[ty]

    def f(a, b, c):
        out = []
        for x, pos, ln in zip(a.astype(np.uint64) & np.uint64((1 << w) - 1 if w < 64 else ~0), b, c):
            x, pos, ln = int(x), int(pos) & 0xFF, int(ln) & 0xFF
            msb = w - 1
            sbit = 0
            if ty[0] == "s":
                sbit = (x >> msb) & 1 if pos >= w or ln == 0 else (x >> min(pos + ln - 1, msb)) & 1
                if ln == 0:
                    sbit = 0
            v = 0
            for i in range(w):
                if i < ln and pos + i <= msb:
                    v |= ((x >> (pos + i)) & 1) << i
                elif i >= ln or pos + i > msb:
                    v |= sbit << i
            out.append(v)
        return from_bits(np.array(out, np.uint64), ty)
    return f


def bfi(ty, mods, out_ty):
    """Integer Arithmetic: bfi (bit field insert)."""
    w = WIDTH[ty]

    def f(a, b, c, d):
        out = []
        for x, y, pos, ln in zip(a, b, c, d):
            x, y, pos, ln = int(x) & ((1 << w) - 1), int(y) & ((1 << w) - 1), int(pos) & 0xFF, int(ln) & 0xFF
            for i in range(ln):
                if pos + i >= w:
                    break
                y = (y & ~(1 << (pos + i))) | (((x >> i) & 1) << (pos + i))
            out.append(y)
        return from_bits(np.array(out, np.uint64), ty)
    return f
