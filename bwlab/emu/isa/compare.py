"""Comparison and selection (PTX ISA, "Comparison and Selection Instructions"): setp, set, selp, and
the half-precision set/setp forms. Float comparisons go through `bwlab.hw.floats.setp` on raw bits
(ordered/unordered, num/nan, .ftz)."""
from __future__ import annotations

import numpy as np

from ...hw import floats as hf
from ..errors import UnsupportedInstruction
from .arith import FLOAT_TYPES, float_reader
from .operands import bits_reader, types, writer

__all__ = ["setp", "set_", "selp"]

_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}
_COMB = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}


def selp(ctx, ins, base, mods):
    """Comparison and Selection: selp."""
    ty = types(mods)[0]
    d, a, b, c = ins.args
    if ty in FLOAT_TYPES:
        ra, rb = float_reader(ctx, a, ty), float_reader(ctx, b, ty)
        ty = FLOAT_TYPES[ty]
    else:
        ra, rb = bits_reader(ctx, a, ty), bits_reader(ctx, b, ty)
    rc = bits_reader(ctx, c, "pred")
    wr = writer(ctx, d, ty)
    return (lambda w, m: wr(w, np.where(rc(w), ra(w), rb(w)), m))


def _comparison(ctx, ins, cmp, ty, ftz, a, b):
    """A callable(w) -> the comparison's result per lane (bool; for a pair type, shape (2, 32): low, high)."""
    if ty in FLOAT_TYPES:
        ra, rb = float_reader(ctx, a, ty), float_reader(ctx, b, ty)
        if ty.endswith("x2"):
            s = ty[:-2]

            def pair(w):
                x, y = ra(w).astype(np.uint32), rb(w).astype(np.uint32)
                lo = hf.setp(x & np.uint32(0xFFFF), y & np.uint32(0xFFFF), s, cmp, ftz=ftz)
                hi = hf.setp(x >> np.uint32(16), y >> np.uint32(16), s, cmp, ftz=ftz)
                return np.stack([lo, hi])
            return pair
        return lambda w: hf.setp(ra(w), rb(w), ty, cmp, ftz=ftz)
    if cmp not in _CMP:
        raise UnsupportedInstruction(f"`{ins.op}`: comparison .{cmp} on integers")
    fn = _CMP[cmp]
    ra, rb = bits_reader(ctx, a, ty), bits_reader(ctx, b, ty)
    return lambda w: fn(ra(w), rb(w))


def setp(ctx, ins, base, mods):
    """Comparison and Selection: setp.cmp{.ftz}{.bop}.type p[|q], a, b{, c}; the f16x2/bf16x2 forms
    write the low half's result to p and the high half's to q."""
    ty = types(mods)[-1]
    cmp = mods[0]
    boolop = next((m for m in mods if m in _COMB), None)
    t = _comparison(ctx, ins, cmp, ty, "ftz" in mods, ins.args[1], ins.args[2])
    d = ins.args[0]
    dp, dq = (d[1][0], d[1][1]) if d[0] == "vec" else (d, None)
    rc = bits_reader(ctx, ins.args[3], "pred") if boolop else None
    wp = writer(ctx, dp, "pred")
    wq = writer(ctx, dq, "pred") if dq is not None else None
    comb = _COMB.get(boolop)
    pair = ty.endswith("x2")

    def body(w, m):
        r = t(w)
        p, q = (r[0], r[1]) if pair else (r, ~r)
        if comb is not None:
            c = rc(w)
            p, q = comb(p, c), comb(q, c)
        wp(w, p, m)
        if wq is not None:
            wq(w, q, m)
    return body


def set_(ctx, ins, base, mods):
    """Comparison and Selection: set.cmp{.ftz}{.bop}.dtype.stype d, a, b{, c}: d is all ones (integer
    dtype) or 1.0 (f32) when true, 0 when false; set.cmp.f16x2.f16x2 gives 1.0 / 0.0 per half
    (0xffff / 0 per half for .u32 destinations)."""
    tys = types(mods)
    dty, sty = tys[0], tys[-1]
    cmp = mods[0]
    boolop = next((m for m in mods if m in _COMB), None)
    t = _comparison(ctx, ins, cmp, sty, "ftz" in mods, ins.args[1], ins.args[2])
    rc = bits_reader(ctx, ins.args[3], "pred") if boolop else None
    comb = _COMB.get(boolop)
    wr = writer(ctx, ins.args[0], "b32")
    if sty.endswith("x2"):
        one = {"f16x2": 0x3C00, "bf16x2": 0x3F80}.get(dty, 0xFFFF)
    else:
        one = 0x3F800000 if dty == "f32" else 0xFFFFFFFF

    def body(w, m):
        r = t(w)
        if comb is not None:
            r = comb(r, rc(w))
        if sty.endswith("x2"):
            lo, hi = (np.where(x, np.uint32(one), np.uint32(0)) for x in r)
            out = lo | (hi << np.uint32(16))
        else:
            out = np.where(r, np.uint32(one), np.uint32(0))
        wr(w, out, m)
    return body
