"""Dot products (dp4a, dp2a; PTX ISA 9.7.1.23/24) and the video SIMD instructions (9.7.15.2): lanes of
bytes or halves, each extended by its type."""
from __future__ import annotations

import numpy as np

from .common import _out, _typ, _u, _U64


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
