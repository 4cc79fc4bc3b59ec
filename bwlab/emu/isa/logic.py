"""Logic and shift (PTX ISA, "Logic and Shift Instructions"): and, or, xor, not, lop3, shf, shl, shr.

and/or/xor/not/shl/shr are semantics for `arith.arithmetic`; lop3 and shf are decoders."""
from __future__ import annotations

import numpy as np

from ..values import WIDTH, from_bits
from .operands import bits_reader, writer


def and_(ty, mods, out_ty):
    """Logic and Shift: and (bits, or predicates)."""
    return lambda a, b: a & b


def or_(ty, mods, out_ty):
    """Logic and Shift: or."""
    return lambda a, b: a | b


def xor(ty, mods, out_ty):
    """Logic and Shift: xor."""
    return lambda a, b: a ^ b


def not_(ty, mods, out_ty):
    """Logic and Shift: not."""
    return lambda a: ~a


def shl(ty, mods, out_ty):
    """Logic and Shift: shl (a count of the width or more gives 0)."""
    w = WIDTH[ty]

    def f(a, b):
        b = b.astype(np.uint64)
        a64 = a.astype(np.uint64)
        out = np.where(b >= w, np.uint64(0), a64 << np.minimum(b, np.uint64(w - 1)))
        return from_bits(out & np.uint64((1 << w) - 1) if w < 64 else out, ty)
    return f


def shr(ty, mods, out_ty):
    """Logic and Shift: shr (arithmetic for .s types; counts clamp to the width)."""
    w = WIDTH[ty]
    if ty[0] == "s":
        def f(a, b):
            b = np.minimum(b.astype(np.int64), w - 1)
            return (a.astype(np.int64) >> b).astype(a.dtype)
        return f

    def f(a, b):
        b = b.astype(np.uint64)
        return np.where(b >= w, 0, a.astype(np.uint64) >> np.minimum(b, np.uint64(w - 1))).astype(a.dtype)
    return f


def lop3(ctx, ins, base, mods):
    """Logic and Shift: lop3.b32 (any function of three inputs by its truth table)."""
    d, a, b, c, imm = ins.args
    ra, rb, rc = (bits_reader(ctx, x, "b32") for x in (a, b, c))
    lut = int(imm[1], 0)
    wr = writer(ctx, d, "b32")

    def body(w, m):
        x, y, z = ra(w), rb(w), rc(w)
        out = np.zeros(32, np.uint32)
        for k in range(8):
            if lut >> k & 1:
                tx = x if k & 4 else ~x
                ty_ = y if k & 2 else ~y
                tz = z if k & 1 else ~z
                out |= tx & ty_ & tz
        wr(w, out, m)
    return body


def shf(ctx, ins, base, mods):
    """Logic and Shift: shf.{l,r}.{wrap,clamp}.b32 (funnel shift)."""
    left = "l" in mods
    wrap = "wrap" in mods
    d, a, b, c = ins.args
    ra, rb, rc = (bits_reader(ctx, x, "b32") for x in (a, b, c))
    wr = writer(ctx, d, "b32")

    def body(w, m):
        n = rc(w).astype(np.uint64)
        n = n & np.uint64(31) if wrap else np.minimum(n, np.uint64(32))
        x = (rb(w).astype(np.uint64) << np.uint64(32)) | ra(w).astype(np.uint64)
        if left:
            out = (x << n) >> np.uint64(32)
        else:
            out = x >> n
        wr(w, (out & np.uint64(0xFFFFFFFF)).astype(np.uint32), m)
    return body
