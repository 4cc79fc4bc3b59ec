"""Comparison and selection (PTX ISA, "Comparison and Selection Instructions"): setp, selp."""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedInstruction
from .operands import bits_reader, types, writer


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}


def _compare(cmp, ty):
    if cmp in _CMP:
        fn = _CMP[cmp]
        return fn
    if cmp.endswith("u") and cmp[:-1] in _CMP:   # unordered: true if either is NaN
        fn = _CMP[cmp[:-1]]
        return lambda a, b: fn(a, b) | np.isnan(a) | np.isnan(b)
    if cmp == "num":
        return lambda a, b: ~(np.isnan(a) | np.isnan(b))
    if cmp == "nan":
        return lambda a, b: np.isnan(a) | np.isnan(b)
    raise UnsupportedInstruction(f"comparison .{cmp}")


def selp(ctx, ins, base, mods):
    """Comparison and Selection: selp."""
    ty = types(mods)[0]
    d, a, b, c = ins.args
    ra, rb, rc = bits_reader(ctx, a, ty), bits_reader(ctx, b, ty), bits_reader(ctx, c, "pred")
    wr = writer(ctx, d, ty)
    return (lambda w, m: wr(w, np.where(rc(w), ra(w), rb(w)), m))


def setp(ctx, ins, base, mods):
    """Comparison and Selection: setp (with the optional .and/.or/.xor combine)."""
    ty = types(mods)[-1]
    cmp = mods[0]
    boolop = next((m for m in mods if m in ("and", "or", "xor")), None)
    if ty in ("f16", "bf16"):
        raise UnsupportedInstruction(f"`{ins.op}` on 16-bit floats is not modelled")
    fn = _compare(cmp, ty)
    d = ins.args[0]
    dp, dq = (d[1][0], d[1][1]) if d[0] == "vec" else (d, None)
    ra, rb = bits_reader(ctx, ins.args[1], ty), bits_reader(ctx, ins.args[2], ty)
    rc = bits_reader(ctx, ins.args[3], "pred") if boolop else None
    wp = writer(ctx, dp, "pred")
    wq = writer(ctx, dq, "pred") if dq is not None else None
    comb = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}.get(boolop)

    def body(w, m):
        t = fn(ra(w), rb(w))
        p, q = t, ~t
        if comb is not None:
            c = rc(w)
            p, q = comb(p, c), comb(q, c)
        wp(w, p, m)
        if wq is not None:
            wq(w, q, m)
    return body
