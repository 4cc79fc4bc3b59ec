"""Register-direct bodies for the commonest integer instructions: fewer NumPy calls per warp-instruction.

The chapter modules compute through typed readers and writers (`operands`): read each source's row,
convert it to the instruction's type, compute, convert back to register bits, store. For the plain
integer forms that dominate ordinary code (moves, 32/64-bit add/sub, bitwise logic, shifts by a
constant, widening/narrowing `cvt` between u32 and u64, integer `setp`), the same bits come straight
from the rows: a register of width W holds its value zero-extended (`values.to_bits`), so on sources
and destination whose registers are exactly the type's width

    add/sub.{u,s}32     (a +/- b) & 0xFFFFFFFF          add/sub.{u,s}64   a +/- b (uint64 wraps)
    and/or/xor.b32/b64  a op b                          shl.b32/b64 a, k  (a << k) & mask   (k < width)
    shr.{u,b}32/64 a, k a >> k                          mov               a (a register or a constant)
    cvt.u64.u32         a                               cvt.u32.u64       a & 0xFFFFFFFF
    cvt.s64.s32         (a ^ 2^31) - 2^31 (sign-extended)
    setp.cmp.{u,b}T     a cmp b                         setp.cmp.sT       (a ^ 2^(T-1)) cmp (b ^ 2^(T-1))
    mul/mad.lo.{u,s}32  (a * b [+ c]) & 0xFFFFFFFF      mul/mad.wide.u32  a * b [+ c]
    mul/mad.wide.s32    the same on the sign-extended sources (the low 64 bits of the signed product)
    selp.T d, a, b, p   where(p, a, b)                  mov.{u,b}32/64 d, %special   Warp.special & mask

`fast_body(ctx, ins, base, mods, slow)` returns such a body, or None where the instruction is not one
of these forms. The body falls back to `slow` (the chapter's own) when a register it names is one an
asynchronous operation still owns (`w.inflight`), so every diagnosis of those reads and writes stays.
tests/test_emu_fastalu.py checks each form against the chapter's body on random register contents.
"""
from __future__ import annotations

import numpy as np

from ..values import WIDTH, imm_value, to_bits
from .operands import ALL, _special

__all__ = ["fast_body"]

U64 = np.uint64
_CMPS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
         "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}
_INT = {"u32", "s32", "b32", "u64", "s64", "b64"}


def _operand(ctx, op, ty):
    """('r', register index) for a register of exactly ty's width, ('k', uint64 bits) for a literal,
    None for anything else (special registers, symbols, vectors, other widths)."""
    w = WIDTH[ty]
    if op[0] == "reg" and _special(op[1]) is None:
        idx = ctx.reg(op[1])
        return ("r", idx) if ctx.prog.reg_width[idx] == w else None
    if op[0] == "imm":
        return ("k", U64(int(to_bits(imm_value(op[1], ty), ty, w)[0])))
    return None


def _dest(ctx, op, width):
    if op[0] == "reg" and _special(op[1]) is None:
        idx = ctx.reg(op[1])
        if ctx.prog.reg_width[idx] == width:
            return idx
    return None


def registers_of(ctx, ins):
    """callable(inflight) -> whether an asynchronous operation owns a register `ins` names (then the chapter's
    body runs, with its diagnosis)."""
    regs = tuple({ctx.reg(a[1]) for a in ins.args if a[0] == "reg" and _special(a[1]) is None})

    def owned(inflight):
        for r in regs:
            if r in inflight:
                return True
        return False
    return owned


def _getter(src):
    kind, v = src
    if kind == "k":
        return lambda R, v=v: v
    return lambda R, v=v: R[v]


def fast_body(ctx, ins, base, mods, slow):
    """A register-direct body(w, m) for `ins`, equal in effect to `slow`, or None."""
    special = _special_move(ctx, ins, base, mods, slow)
    if special is not None:
        return special
    compute, d = _form(ctx, ins, base, mods)
    if compute is None or d is None:
        return None
    owned = registers_of(ctx, ins)

    def body(w, m):
        inf = w.inflight
        if inf and owned(inf):
            slow(w, m)
            return
        R = w.R
        out = compute(R)
        if m is ALL:
            R[d] = out
        else:
            np.copyto(R[d], out, where=m, casting="unsafe")
    body.slow = slow   # the chapter's body (tests compare the two)
    return body


def _special_move(ctx, ins, base, mods, slow):
    """mov.{u,b}32/64 d, %special (%tid.x, %ctaid.y, %laneid, ...): the warp's value of it (Warp.special, kept
    per warp for the ones that do not change) into d's row, cut to 32 bits for a 32-bit move."""
    args = ins.args
    if base != "mov" or len(mods) != 1 or mods[0] not in _INT or mods[0][0] == "s" or len(args) != 2 \
            or args[1][0] != "reg" or _special(args[1][1]) is None:
        return None
    width = WIDTH[mods[0]]
    d = _dest(ctx, args[0], width)
    if d is None:
        return None
    name = args[1][1]
    mask = U64((1 << width) - 1)

    def body(w, m):
        if w.inflight and d in w.inflight:
            slow(w, m)
            return
        v = w.special(name)
        if m is ALL:
            w.R[d] = v & mask
        else:
            np.copyto(w.R[d], v & mask, where=m)
    body.slow = slow
    return body


def _form(ctx, ins, base, mods):
    """(compute(R) -> the destination row's new bits, destination register index), or (None, None)."""
    args = ins.args
    if not args or any(a is None or not isinstance(a, tuple) for a in args):
        return None, None
    if base == "mov" and len(mods) == 1 and mods[0] in WIDTH and mods[0] != "pred" and len(args) == 2:
        ty = mods[0]
        if WIDTH[ty] not in (32, 64) or args[1][0] not in ("reg", "imm"):
            return None, None
        if args[1][0] == "reg" and _special(args[1][1]) is not None and ty[0] in "ub":
            return None, None   # special registers: Code-level (they need the warp), see fast_body
        a = _operand(ctx, args[1], ty)
        if a is None:
            return None, None
        if a[0] == "k":
            k = np.full(32, a[1], U64)
            return (lambda R: k), _dest(ctx, args[0], WIDTH[ty])
        return _getter(a), _dest(ctx, args[0], WIDTH[ty])
    if base == "cvt" and len(args) == 2 and mods in (["u64", "u32"], ["u32", "u64"], ["s64", "s32"]):
        a = _operand(ctx, args[1], mods[1])
        if a is None or a[0] != "r":
            return None, None
        i = a[1]
        if mods == ["u64", "u32"]:
            f = (lambda R: R[i])
        elif mods == ["u32", "u64"]:
            f = (lambda R: R[i] & U64(0xFFFFFFFF))
        else:
            f = (lambda R: (R[i] ^ U64(1 << 31)) - U64(1 << 31))
        return f, _dest(ctx, args[0], WIDTH[mods[0]])
    if base in ("add", "sub", "and", "or", "xor", "shl", "shr") and len(mods) == 1 and mods[0] in _INT \
            and len(args) == 3:
        ty = mods[0]
        width = WIDTH[ty]
        if base in ("and", "or", "xor", "shl") and ty[0] != "b" or base == "shr" and ty[0] == "s":
            return None, None
        a = _operand(ctx, args[1], ty)
        if a is None or a[0] != "r":
            return None, None
        i = a[1]
        mask = U64((1 << width) - 1)
        if base in ("shl", "shr"):
            if args[2][0] != "imm":
                return None, None
            k = int(args[2][1].rstrip("uU"), 0)
            if not 0 <= k < width:
                return None, None
            k = U64(k)
            if base == "shr":
                return (lambda R: R[i] >> k), _dest(ctx, args[0], width)
            if width == 64:
                return (lambda R: R[i] << k), _dest(ctx, args[0], width)
            return (lambda R: (R[i] << k) & mask), _dest(ctx, args[0], width)
        b = _operand(ctx, args[2], ty)
        if b is None:
            return None, None
        gb = _getter(b)
        if base == "add":
            f = (lambda R: R[i] + gb(R)) if width == 64 else (lambda R: (R[i] + gb(R)) & mask)
        elif base == "sub":
            f = (lambda R: R[i] - gb(R)) if width == 64 else (lambda R: (R[i] - gb(R)) & mask)
        else:
            op = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[base]
            f = (lambda R: op(R[i], gb(R)))
        return f, _dest(ctx, args[0], width)
    if base in ("mul", "mad") and len(mods) == 2 and mods[0] in ("lo", "wide") and mods[1] in ("u32", "s32") \
            and len(args) == (3 if base == "mul" else 4):
        ty, wide = mods[1], mods[0] == "wide"
        a, b = _operand(ctx, args[1], ty), _operand(ctx, args[2], ty)
        if a is None or b is None or a[0] != "r":
            return None, None
        i, gb = a[1], _getter(b)
        if wide and ty == "s32":   # the 32-bit values sign-extended: the product's low 64 bits are the signed product
            bias = U64(1 << 31)
            ga = (lambda R: (R[i] ^ bias) - bias)
            if b[0] == "k":
                kb = U64(((int(b[1]) ^ (1 << 31)) - (1 << 31)) & ((1 << 64) - 1))
                gb = (lambda R: kb)
            else:
                j = b[1]
                gb = (lambda R: (R[j] ^ bias) - bias)
        else:
            ga = (lambda R: R[i])
        if base == "mad":
            c = _operand(ctx, args[3], ("s64" if ty == "s32" else "u64") if wide else ty)
            if c is None:
                return None, None
            gc = _getter(c)
        m32 = U64(0xFFFFFFFF)
        if base == "mul":
            f = (lambda R: ga(R) * gb(R)) if wide else (lambda R: (ga(R) * gb(R)) & m32)
        else:
            f = (lambda R: ga(R) * gb(R) + gc(R)) if wide else (lambda R: (ga(R) * gb(R) + gc(R)) & m32)
        return f, _dest(ctx, args[0], 64 if wide else 32)
    if base == "selp" and len(mods) == 1 and mods[0] in _INT | {"f32", "f64"} and len(args) == 4:
        ty = mods[0]
        bty = {"f32": "b32", "f64": "b64"}.get(ty, ty)
        a, b = _operand(ctx, args[1], bty), _operand(ctx, args[2], bty)
        c = args[3]
        if a is None or b is None or c[0] != "reg" or _special(c[1]) is not None:
            return None, None
        if ty in ("f32", "f64") and (args[1][0] == "imm" or args[2][0] == "imm"):
            return None, None   # float literals: the chapter's reader encodes them
        p = ctx.reg(c[1])
        if ctx.prog.reg_type[p] != "pred":
            return None, None
        ga, gb = _getter(a), _getter(b)
        return (lambda R: np.where(R[p] != 0, ga(R), gb(R))), _dest(ctx, args[0], WIDTH[ty])
    if base == "setp" and len(mods) == 2 and mods[0] in _CMPS and mods[1] in _INT and len(args) == 3 \
            and args[0][0] == "reg":
        ty = mods[1]
        a, b = _operand(ctx, args[1], ty), _operand(ctx, args[2], ty)
        if a is None or b is None or a[0] != "r":
            return None, None
        d = _dest(ctx, args[0], 1)
        if d is None or ctx.prog.reg_type[d] != "pred":
            return None, None
        fn = _CMPS[mods[0]]
        i = a[1]
        if ty[0] == "s":   # signed order: flip the sign bit, then compare as unsigned
            bias = U64(1 << (WIDTH[ty] - 1))
            if b[0] == "k":
                kb = b[1] ^ bias
                return (lambda R: fn(R[i] ^ bias, kb)), d
            j = b[1]
            return (lambda R: fn(R[i] ^ bias, R[j] ^ bias)), d
        gb = _getter(b)
        return (lambda R: fn(R[i], gb(R))), d
    return None, None
