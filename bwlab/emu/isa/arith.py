"""The decoder shared by the arithmetic, logic and shift instructions of every chapter.

`arithmetic(integer=..., floating=..., src=...)` returns a decoder for an instruction whose operands
are `d, a, b, ...` of the instruction's type: it builds one reader per source (of the type in `src`
where an operand has its own, e.g. a shift count is .u32; "out" means the destination's type, as in
`mad.wide`'s addend), one writer, and calls the semantics `make(ty, mods, out_ty) -> f(*values)`
from the chapter module: `integer` for integer, bit and predicate types, `floating` for f32/f64.
16-bit floats and their pairs go to `float.half_arith`. `.ftz` (f32) and `.sat` (float) are applied
here, around the semantics, as the PTX ISA defines them for every floating-point instruction.
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedInstruction
from .operands import bits_reader, types, writer

__all__ = ["arithmetic", "is_float", "ftz"]

_WIDE = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}


def is_float(ty):
    return ty in ("f32", "f64", "f16")


def ftz(v):
    """.ftz: f32 subnormal inputs and results flushed to sign-preserving zero."""
    v = np.asarray(v, np.float32)
    return np.where(np.abs(v) < np.float32(1.1754944e-38), np.copysign(np.float32(0), v), v).astype(np.float32)


def arithmetic(integer=None, floating=None, src=()):
    def decode(ctx, ins, base, mods):
        from .float import half_arith
        ty = types(mods)[-1]
        if ty in ("f16x2", "bf16x2", "bf16") or ty == "f16":
            return half_arith(ctx, ins, base, mods, ty)
        make = floating if is_float(ty) else integer
        if make is None:
            raise UnsupportedInstruction(f"`{ins.op}`: {base} has no .{ty} form the emulator models")
        rnd = next((m for m in mods if m in ("rn", "rz", "rm", "rp")), None)
        if is_float(ty) and rnd not in (None, "rn"):
            raise UnsupportedInstruction(f"`{ins.op}`: directed rounding .{rnd} is not modelled (only .rn)")
        flush = "ftz" in mods and ty == "f32"
        sat = "sat" in mods and is_float(ty)
        out_ty = _WIDE[ty] if "wide" in mods else ty
        rs = []
        for k, s in enumerate(ins.args[1:]):
            sty = src[k] if k < len(src) and src[k] else ty
            rs.append(bits_reader(ctx, s, out_ty if sty == "out" and "wide" in mods else
                                  ty if sty == "out" else sty))
        wr = writer(ctx, ins.args[0], out_ty)
        f = make(ty, mods, out_ty)

        def body(w, m):
            vals = [r(w) for r in rs]
            if flush:
                vals = [ftz(v) for v in vals]
            out = f(*vals)           # NumPy's floating-point warnings are off for the whole launch
            if flush:
                out = ftz(out)
            if sat:
                out = np.where(np.isnan(out), 0, np.clip(out, 0, 1)).astype(out.dtype)
            wr(w, out, m)
        return body
    return decode
