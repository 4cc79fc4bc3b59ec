"""Integer arithmetic (PTX ISA, "Integer Arithmetic Instructions" and "Extended-Precision Integer
Arithmetic Instructions").

The functions named like instructions are semantics `make(ty, mods, out_ty) -> f(*lane_values)` that
`arith.arithmetic(integer=...)` calls once at decode; `f` runs on NumPy vectors of the 32 lanes and
computes bit for bit through `bwlab.hw.ints` (wrap-around, .sat, truncating division with the
GPU's x/0 = all ones, 64-bit fields without Python integers). The wrap-around add/sub/mul.lo of the
hot paths stay plain NumPy. The carry chain (`add.cc`, `addc`, `sub.cc`, `subc`, `mad.cc`, `madc`)
and the instructions with operands of their own types (`dp4a`, `dp2a`, `bfind`, `sad`, `mul24`,
`mad24`) are decoders.
"""
from __future__ import annotations

import numpy as np

from ...hw import ints as hi
from ..errors import UnsupportedInstruction
from ..values import WIDTH, from_bits
from .operands import bits_reader, types, writer

__all__ = ["add", "sub", "mul", "mad", "div", "rem", "minimum", "maximum", "abs_", "neg", "popc", "clz",
           "brev", "bfe", "bfi", "bfind", "sad", "mul24", "mad24", "dp4a", "dp2a", "carry", "fns"]


def _t(out, ty):
    """hw.ints raw bits -> the lanes' values of type ty."""
    return from_bits(np.asarray(out).astype(np.uint64), ty)


def add(ty, mods, out_ty):
    """Integer Arithmetic: add{.sat} (wraps modulo 2^n; .sat.s32 clamps)."""
    if "sat" in mods:
        return lambda a, b: _t(hi.add(a, b, ty, sat=True), ty)
    if ty == "pred":
        raise UnsupportedInstruction("add on predicates")
    return lambda a, b: (a + b).astype(a.dtype)


def sub(ty, mods, out_ty):
    """Integer Arithmetic: sub{.sat}."""
    if "sat" in mods:
        return lambda a, b: _t(hi.sub(a, b, ty, sat=True), ty)
    return lambda a, b: (a - b).astype(a.dtype)


def _mode(mods):
    return next((m for m in mods if m in ("lo", "hi", "wide")), "lo")


_WIDE_NATIVE = {"s32": np.int64, "u32": np.uint64, "s16": np.int32, "u16": np.uint32}


def mul(ty, mods, out_ty):
    """Integer Arithmetic: mul{.hi,.lo,.wide}."""
    mode = _mode(mods)
    if mode == "lo":
        return lambda a, b: (a * b).astype(a.dtype)
    wide = _WIDE_NATIVE.get(ty) if mode == "wide" else None
    if wide is not None:   # the full product of two N-bit values fits the 2N-bit type: NumPy's is exact
        return lambda a, b: a.astype(wide) * b.astype(wide)
    return lambda a, b: _t(hi.mul(a, b, ty, mode), out_ty)


def mad(ty, mods, out_ty):
    """Integer Arithmetic: mad{.hi,.lo,.wide}{.sat}."""
    mode, sat = _mode(mods), "sat" in mods
    if mode == "lo" and not sat:
        return lambda a, b, c: (a * b + c).astype(a.dtype)
    return lambda a, b, c: _t(hi.mad(a, b, c, ty, mode, sat=sat), out_ty)


def div(ty, mods, out_ty):
    """Integer Arithmetic: div (truncating; x/0 gives all ones, as the GPU does)."""
    return lambda a, b: _t(hi.div(a, b, ty), ty)


def rem(ty, mods, out_ty):
    """Integer Arithmetic: rem (the sign of the dividend; x%0 gives all ones)."""
    return lambda a, b: _t(hi.rem(a, b, ty), ty)


def minimum(ty, mods, out_ty):
    """Integer Arithmetic: min{.relu}."""
    relu = "relu" in mods
    if ty == "pred" or not relu:
        return np.minimum
    return lambda a, b: _t(hi.imin(a, b, ty, relu=True), ty)


def maximum(ty, mods, out_ty):
    """Integer Arithmetic: max{.relu}."""
    relu = "relu" in mods
    if ty == "pred" or not relu:
        return np.maximum
    return lambda a, b: _t(hi.imax(a, b, ty, relu=True), ty)


def abs_(ty, mods, out_ty):
    """Integer Arithmetic: abs (INT_MIN stays INT_MIN)."""
    return lambda a: _t(hi.abs_(a, ty), ty)


def neg(ty, mods, out_ty):
    """Integer Arithmetic: neg."""
    return lambda a: _t(hi.neg(a, ty), ty)


def popc(ty, mods, out_ty):
    """Integer Arithmetic: popc (-> u32)."""
    return lambda a: hi.popc(a, ty)


def clz(ty, mods, out_ty):
    """Integer Arithmetic: clz (-> u32)."""
    return lambda a: hi.clz(a, ty)


def brev(ty, mods, out_ty):
    """Integer Arithmetic: brev."""
    return lambda a: _t(hi.brev(a, ty), ty)


def bfe(ty, mods, out_ty):
    """Integer Arithmetic: bfe (bit field extract; .s types sign-extend from the field's last bit)."""
    return lambda a, b, c: _t(hi.bfe(a, b, c, ty), ty)


def bfi(ty, mods, out_ty):
    """Integer Arithmetic: bfi (bit field insert)."""
    return lambda a, b, c, d: _t(hi.bfi(a, b, c, d, ty), ty)


# ---------------------------------------------------------------- decoders with operands of their own types


def _ops(ctx, ins, tys, dty):
    rs = [bits_reader(ctx, s, t) for s, t in zip(ins.args[1:], tys)]
    return rs, writer(ctx, ins.args[0], dty)


def bfind(ctx, ins, base, mods):
    """Integer Arithmetic: bfind{.shiftamt}.type d, a (-> u32; 0xffffffff when no such bit)."""
    ty = types(mods)[-1]
    (ra,), wr = _ops(ctx, ins, [ty], "u32")
    sh = "shiftamt" in mods
    return lambda w, m: wr(w, hi.bfind(ra(w), ty, shiftamt=sh), m)


def sad(ctx, ins, base, mods):
    """Integer Arithmetic: sad.type d, a, b, c = |a - b| + c."""
    ty = types(mods)[-1]
    (ra, rb, rc), wr = _ops(ctx, ins, [ty] * 3, ty)
    return lambda w, m: wr(w, _t(hi.sad(ra(w), rb(w), rc(w), ty), ty), m)


def mul24(ctx, ins, base, mods):
    """Integer Arithmetic: mul24.{lo,hi}.{s32,u32} (24-bit operands; .hi = bits 47..16 of the product)."""
    ty, mode = types(mods)[-1], _mode(mods)
    (ra, rb), wr = _ops(ctx, ins, [ty] * 2, ty)
    return lambda w, m: wr(w, _t(hi.mul24(ra(w), rb(w), ty, mode), ty), m)


def mad24(ctx, ins, base, mods):
    """Integer Arithmetic: mad24.{lo,hi}.{s32,u32}."""
    ty, mode = types(mods)[-1], _mode(mods)
    (ra, rb, rc), wr = _ops(ctx, ins, [ty] * 3, ty)
    return lambda w, m: wr(w, _t(hi.mad24(ra(w), rb(w), rc(w), ty, mode), ty), m)


def _dot(fn):
    def dec(ctx, ins, base, mods):
        at, bt = types(mods)[-2:]
        (ra, rb, rc), wr = _ops(ctx, ins, ["b32", "b32", "b32"], "b32")
        part = {"part": "hi"} if "hi" in mods else ({"part": "lo"} if fn is hi.dp2a else {})
        return lambda w, m: wr(w, fn(ra(w), rb(w), rc(w), at, bt, **part), m)
    dec.__doc__ = f"Integer Arithmetic: {fn.__name__}.atype.btype d, a, b, c (byte / half-word dot product into c)."
    return dec


dp4a = _dot(hi.dp4a)
dp2a = _dot(hi.dp2a)


def _cc_register(ctx):
    """The index of the function's condition-code register (CC.CF, one bit per lane), added to the
    program's registers the first time a carry instruction of the function is decoded."""
    prog, key = ctx.prog, (ctx.func.name, "%cc.cf")
    if key not in prog.reg_index:
        prog.reg_index[key] = len(prog.reg_width)
        prog.reg_width.append(1)
        prog.reg_type.append("pred")
        prog.nregs = len(prog.reg_width)
    return prog.reg_index[key]


def carry(ctx, ins, base, mods):
    """Extended-Precision Integer Arithmetic: add.cc, addc{.cc}, sub.cc, subc{.cc}, mad{c}.{lo,hi}{.cc}
    (32- and 64-bit): CC.CF, a per-lane bit of the function's state, holds the carry out of an addition and,
    after a subtraction, the carry of a + ~b + 1 (1 when nothing was borrowed; subc computes a - b - (1 - CF)).
    The ISA's text calls it a borrow; the H200 and NVVM's own __int128 division (a sub.cc read by addc) agree
    on the carry (outside corpus, int128_arith)."""
    ty = types(mods)[-1]
    if WIDTH[ty] not in (32, 64):
        raise UnsupportedInstruction(f"`{ins.op}`: carry instructions take 32- or 64-bit types")
    cc = _cc_register(ctx)
    write_cc = "cc" in mods
    use_cc = base in ("addc", "subc", "madc")
    n = 3 if base in ("mad", "madc") else 2
    rs, wr = _ops(ctx, ins, ["b" + ty[1:]] * n, "b" + ty[1:])
    mode = _mode(mods)

    def body(w, m):
        cin = w.R[cc] if use_cc else 0
        v = [r(w) for r in rs]
        if base in ("add", "addc"):
            out, cout = hi.addc(v[0], v[1], cin, ty)
        elif base in ("sub", "subc"):
            # CC.CF after a subtraction is the carry of a + ~b + 1, i.e. NOT the borrow, and subc reads it so
            # (a - b - (1 - CF)): the hardware's, and what NVVM's own code relies on when it reads the flag
            # of a sub.cc with addc (unsigned __int128 division); a plain sub.cc/subc chain is the same either way
            out, borrow = hi.subc(v[0], v[1], (1 - np.asarray(cin, np.uint64)) if use_cc else 0, ty)
            cout = ~np.asarray(borrow, bool)
        else:
            out, cout = hi.mad_cc(v[0], v[1], v[2], ty, mode, carry_in=cin)
        wr(w, out, m)
        if write_cc:
            row = w.R[cc]
            row[m] = np.asarray(cout, bool).astype(np.uint64)[m]
    return body


def fns(ctx, ins, base, mods):
    """Integer Arithmetic: fns.b32 d, mask, base, offset: the position of the |offset|-th set bit of
    mask counting from bit `base` (inclusive) upward for offset > 0, downward for offset < 0;
    offset 0: base itself if that bit is set; 0xffffffff when there is none (PTX ISA pseudocode)."""
    (rm, rb, ro), wr = _ops(ctx, ins, ["b32", "u32", "s32"], "b32")

    def one(mask, b, off):
        if off == 0:
            return b if b < 32 and (mask >> b) & 1 else 0xFFFFFFFF
        pos, count, inc = b, abs(off) - 1, 1 if off > 0 else -1
        while 0 <= pos < 32:
            if (mask >> pos) & 1:
                if count == 0:
                    return pos
                count -= 1
            pos += inc
        return 0xFFFFFFFF

    def body(w, m):
        ms, bs, os_ = rm(w), rb(w), ro(w)
        wr(w, np.array([one(int(x), int(y), int(z)) for x, y, z in zip(ms, bs, os_)], np.uint32), m)
    return body
