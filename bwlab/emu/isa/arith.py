"""The decoder shared by the arithmetic, logic and shift instructions of every chapter.

`arithmetic(integer=..., floating=..., src=...)` returns a decoder for an instruction whose operands
are `d, a, b, ...` of the instruction's type: it builds one reader per source (of the type in `src`
where an operand has its own, e.g. a shift count is .u32; "out" means the destination's type, as in
`mad.wide`'s addend), one writer, and calls the semantics `make(ty, mods, out_ty) -> f(*values)`
from the chapter module:

* `integer` for integer, bit and predicate types: `f` gets the lanes' typed values (int32, uint64, ...);
* `floating` for f16, bf16, f32, f64 and the f16x2/bf16x2 pairs: `f` gets and returns the lanes' RAW
  BITS (uint16/uint32/uint64) and applies every modifier itself (`bwlab.hw.floats` semantics); a
  pair instruction runs `f` on the low and the high halves (`hw.floats.packed2`).
"""
from __future__ import annotations

import numpy as np

from ...hw.floats import packed2
from ..errors import UnsupportedInstruction
from ..values import imm_value
from .operands import bits_reader, types, writer

__all__ = ["arithmetic", "is_float", "float_reader", "FLOAT_TYPES"]

_WIDE = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}
FLOAT_TYPES = {"f16": "b16", "bf16": "b16", "f32": "b32", "f64": "b64", "f16x2": "b32", "bf16x2": "b32"}


def is_float(ty):
    return ty in FLOAT_TYPES


def float_reader(ctx, op, ty):
    """The raw bits of a float operand of type `ty` (a literal written as a decimal or 0f/0d is
    encoded in `ty`'s format)."""
    bty = FLOAT_TYPES[ty]
    if op[0] == "imm" and ty in ("f32", "f64"):
        v = imm_value(op[1], ty)
        bits = v.view(np.uint32 if ty == "f32" else np.uint64)
        return lambda w, bits=bits: bits
    return bits_reader(ctx, op, bty)


def arithmetic(integer=None, floating=None, src=()):
    def decode(ctx, ins, base, mods):
        if any(m in ("s16x2", "u16x2") for m in mods):
            from .logic import simd16
            return simd16(ctx, ins, base, mods)
        ty = types(mods)[-1]
        if is_float(ty):
            if floating is None:
                raise UnsupportedInstruction(f"`{ins.op}`: {base} has no .{ty} form the emulator models")
            return _float_body(ctx, ins, mods, ty, floating)
        if integer is None:
            raise UnsupportedInstruction(f"`{ins.op}`: {base} has no .{ty} form the emulator models")
        out_ty = _WIDE[ty] if "wide" in mods else ty
        rs = []
        for k, s in enumerate(ins.args[1:]):
            sty = src[k] if k < len(src) and src[k] else ty
            rs.append(bits_reader(ctx, s, out_ty if sty == "out" and "wide" in mods else
                                  ty if sty == "out" else sty))
        wr = writer(ctx, ins.args[0], out_ty)
        f = integer(ty, mods, out_ty)
        if len(rs) == 1:
            r0 = rs[0]
            return lambda w, m: wr(w, f(r0(w)), m)
        if len(rs) == 2:
            r0, r1 = rs
            return lambda w, m: wr(w, f(r0(w), r1(w)), m)

        def body(w, m):
            wr(w, f(*[r(w) for r in rs]), m)
        return body
    return decode


def _uses(ctx):
    """(position of each instruction by id, {register: [indices writing it]}, {register: [indices
    reading it]}) of the function being decoded, computed once per function (kept on its context)."""
    func = ctx.func
    cache = getattr(ctx, "_bwlab_uses", None)
    if cache is None or cache[0] is not func:
        pos, writes, reads = {}, {}, {}
        for k, i in enumerate(func.body):
            pos[id(i)] = k
            if not i.args:
                continue
            for x in _regs(i.args[0]):
                writes.setdefault(x, []).append(k)
            for a in i.args[1:]:
                for x in _regs(a):
                    reads.setdefault(x, []).append(k)
        cache = (func, pos, writes, reads)
        ctx._bwlab_uses = cache
    return cache[1:]


def _regs(op):
    if isinstance(op, list):        # a call's return and parameter lists
        return [x for o in op for x in _regs(o)]
    if op[0] == "reg":
        return [op[1]]
    if op[0] == "vec":
        return [x for o in op[1] for x in _regs(o)]
    if op[0] in ("neg", "addr"):
        return _regs(op[1])
    return []

_RND = ("rn", "rz", "rm", "rp")
# the types ptxas contracts mul + add/sub into an fma for (H200: cuda_fp16's mul.f16 then sub.f16, as
# x*x*3 - x*2 compiles, gave the fused result: tests/outside/second_calls.cu templ_half; f16x2 by the same
# rule, not measured)
_CONTRACTED = ("f16", "f16x2", "f32", "f64")
_SIGN = {"f16": np.uint16(1 << 15), "f16x2": np.uint32(0x80008000), "f32": np.uint32(1 << 31),
         "f64": np.uint64(1 << 63)}


def _contraction(ctx, ins, base, mods, ty):
    """ptxas's contraction (PTX ISA, mul/add: "mul/add sequences with no rounding modifiers may be
    optimized to use fused-multiply-add instructions"; ptxas does so by default): an add/sub.f16/f16x2/f32/f64
    without a rounding modifier whose operand is the product of a mul without one, written once, read by
    this instruction alone, in the same basic block and from registers written once, is computed as one fma. Returns the body,
    or None where the instruction is not contracted."""
    if base not in ("add", "sub") or ty not in _CONTRACTED or any(m in _RND or m == "sat" for m in mods):
        return None
    func = ctx.func
    pos, writes, reads = _uses(ctx)
    if id(ins) not in pos:
        return None
    here = pos[id(ins)]
    for k, op in enumerate(ins.args[1:3]):
        # the product must have no other reader: ptxas keeps FMUL + FADD when the product is used again
        # (H200: a layernorm's d*d both shuffled to other lanes and added gave the unfused sum)
        if op[0] != "reg" or len(writes.get(op[1], ())) != 1 or len(reads.get(op[1], ())) != 1:
            continue
        j = writes[op[1]][0]
        mul = func.body[j]
        mbase, *mmods = mul.op.split(".")
        if (mbase != "mul" or j >= here or mul.guard or ins.guard or ty not in mmods
                or any(m in _RND or m == "sat" for m in mmods) or ("ftz" in mmods) != ("ftz" in mods)):
            continue
        if any(j < idx <= here for idx in func.labels.values()):
            continue
        srcs = mul.args[1:3]
        if any(x[0] == "reg" and len(writes.get(x[1], ())) > 1 for x in srcs):
            continue
        other = ins.args[2 - k]
        ra, rb, rc = (float_reader(ctx, x, ty) for x in (*srcs, other))
        wr = writer(ctx, ins.args[0], FLOAT_TYPES[ty])
        from ...hw import floats as hf
        from .float import _fma_f32_rn
        ftz = "ftz" in mods
        scalar = ty[:-2] if ty.endswith("x2") else ty
        if ty == "f32" and not ftz:
            f = _fma_f32_rn
        elif scalar != ty:
            def f(a, b, c):
                return packed2(lambda x, y, z: hf.fma(x, y, z, scalar, ftz=ftz), a, b, c)
        else:
            def f(a, b, c):
                return hf.fma(a, b, c, ty, ftz=ftz)
        sbit = _SIGN[ty]
        if base == "add":
            return lambda w, m: wr(w, f(ra(w), rb(w), rc(w)), m)
        if k == 0:    # a*b - c
            return lambda w, m: wr(w, f(ra(w), rb(w), rc(w) ^ sbit), m)
        return lambda w, m: wr(w, f(ra(w) ^ sbit, rb(w), rc(w)), m)   # c - a*b
    return None


def _folded_sign(ctx, ins, base, mods, ty):
    """neg/abs.f32/f64 whose result only selp reads: ptxas folds it into the select's operand modifier,
    a pure sign-bit operation that keeps a NaN's payload (H200: `x >= 0 ? b : -b` with a NaN b gives
    the flipped NaN, while a stored -b gives the canonical NaN). Returns the body, or None."""
    if base not in ("neg", "abs") or ty not in ("f32", "f64") or "ftz" in mods or ins.args[0][0] != "reg":
        return None
    func, name = ctx.func, ins.args[0][1]
    pos, writes, reads = _uses(ctx)
    if len(writes.get(name, ())) != 1 or id(ins) not in pos:
        return None
    readers = [func.body[k] for k in reads.get(name, ())]
    if not readers or any(not i.op.startswith("selp.") for i in readers):
        return None
    ra = float_reader(ctx, ins.args[1], ty)
    wr = writer(ctx, ins.args[0], FLOAT_TYPES[ty])
    sbit = np.uint32(1 << 31) if ty == "f32" else np.uint64(1 << 63)
    if base == "neg":
        return lambda w, m: wr(w, ra(w) ^ sbit, m)
    return lambda w, m: wr(w, ra(w) & ~sbit, m)


def _float_body(ctx, ins, mods, ty, floating):
    base = ins.op.split(".")[0]
    fused = _contraction(ctx, ins, base, mods, ty) or _folded_sign(ctx, ins, base, mods, ty)
    if fused is not None:
        return fused
    pair = ty.endswith("x2")
    scalar = ty[:-2] if pair else ty
    rs = [float_reader(ctx, s, ty) for s in ins.args[1:]]
    wr = writer(ctx, ins.args[0], FLOAT_TYPES[ty])
    f = floating(scalar, mods, scalar)
    if pair:
        g = f
        f = (lambda *xs: packed2(g, *xs))
    if len(rs) == 2:
        r0, r1 = rs
        return lambda w, m: wr(w, f(r0(w), r1(w)), m)

    def body(w, m):
        wr(w, f(*[r(w) for r in rs]), m)
    return body
