"""Logic and shift (PTX ISA, "Logic and Shift Instructions"): and, or, xor, not, cnot, lop3, shf, shl,
shr, bmsk, szext; and the 16x2 SIMD forms NVRTC emits for the CUDA SIMD intrinsics (add.u16x2 ...)
and the video instructions (vadd4, vabsdiff4, ...; PTX ISA "Video Instructions").

and/or/xor/not/cnot/shl/shr are semantics for `arith.arithmetic`; the rest are decoders. Bit-exact
through `bwlab.hw.ints` (shift counts of the width or more, clamp/wrap modes)."""
from __future__ import annotations

import numpy as np

from ...hw import ints as hi
from ..errors import UnsupportedInstruction
from ..values import from_bits
from .operands import bits_reader, types, writer

__all__ = ["and_", "or_", "xor", "not_", "cnot", "shl", "shr", "lop3", "shf", "bmsk", "szext", "simd16", "video"]


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


def cnot(ty, mods, out_ty):
    """Logic and Shift: cnot (1 if a == 0, else 0)."""
    return lambda a: (a == 0).astype(a.dtype)


_NATIVE = {"b32": np.uint32, "u32": np.uint32, "s32": np.int32, "b64": np.uint64, "u64": np.uint64, "s64": np.int64}


def shl(ty, mods, out_ty):
    """Logic and Shift: shl (a count of the width or more gives 0)."""
    def general(a, b):
        return from_bits(hi.shl(a, b, ty).astype(np.uint64), ty)
    dt = _NATIVE.get(ty)
    if dt is None:
        return general
    width = np.dtype(dt).itemsize * 8

    def native(a, b):   # every count below the width: NumPy's shift of the lanes' values is the PTX one
        if a.dtype == dt and int(b.max()) < width:
            return (a << b.astype(dt)).astype(dt, copy=False)
        return general(a, b)
    return native


def shr(ty, mods, out_ty):
    """Logic and Shift: shr (arithmetic for .s types; counts of the width or more give 0 or the sign)."""
    def general(a, b):
        return from_bits(hi.shr(a, b, ty).astype(np.uint64), ty)
    dt = _NATIVE.get(ty)
    if dt is None:
        return general
    width = np.dtype(dt).itemsize * 8

    def native(a, b):   # counts below the width: NumPy's >> (arithmetic on signed lanes) is the PTX one
        if a.dtype == dt and int(b.max()) < width:
            return (a >> b.astype(dt)).astype(dt, copy=False)
        return general(a, b)
    return native


def lop3(ctx, ins, base, mods):
    """Logic and Shift: lop3.b32 (any function of three inputs by its truth table)."""
    d, a, b, c, imm = ins.args
    ra, rb, rc = (bits_reader(ctx, x, "b32") for x in (a, b, c))
    lut = int(imm[1], 0)
    wr = writer(ctx, d, "b32")
    return lambda w, m: wr(w, hi.lop3(ra(w), rb(w), rc(w), lut), m)


def shf(ctx, ins, base, mods):
    """Logic and Shift: shf.{l,r}.{wrap,clamp}.b32 (funnel shift)."""
    direction = "l" if "l" in mods else "r"
    mode = "wrap" if "wrap" in mods else "clamp"
    d, a, b, c = ins.args
    ra, rb, rc = (bits_reader(ctx, x, "b32") for x in (a, b, c))
    wr = writer(ctx, d, "b32")
    return lambda w, m: wr(w, hi.shf(ra(w), rb(w), rc(w), direction, mode), m)


def bmsk(ctx, ins, base, mods):
    """Logic and Shift: bmsk.{clamp,wrap}.b32 d, a, b (b ones from bit a)."""
    mode = "wrap" if "wrap" in mods else "clamp"
    d, a, b = ins.args
    ra, rb = bits_reader(ctx, a, "b32"), bits_reader(ctx, b, "b32")
    wr = writer(ctx, d, "b32")
    return lambda w, m: wr(w, hi.bmsk(ra(w), rb(w), mode), m)


def szext(ctx, ins, base, mods):
    """Logic and Shift: szext.{clamp,wrap}.{s32,u32} d, a, b (sign- or zero-extend a's low b bits)."""
    mode = "wrap" if "wrap" in mods else "clamp"
    ty = types(mods)[-1]
    d, a, b = ins.args
    ra, rb = bits_reader(ctx, a, "b32"), bits_reader(ctx, b, "b32")
    wr = writer(ctx, d, "b32")
    return lambda w, m: wr(w, hi.szext(ra(w), rb(w), ty, mode), m)


def simd16(ctx, ins, base, mods):
    """The 16x2 SIMD forms: add/sub/min/max{.relu}.{s16x2,u16x2}, neg.s16x2 (each half wraps)."""
    ty = next(m for m in mods if m in ("s16x2", "u16x2"))
    relu = "relu" in mods
    rs = [bits_reader(ctx, x, "b32") for x in ins.args[1:]]
    wr = writer(ctx, ins.args[0], "b32")
    if base not in ("add", "sub", "min", "max", "neg"):
        raise UnsupportedInstruction(f"`{ins.op}`: {base} has no .{ty} form the emulator models")
    return lambda w, m: wr(w, hi.simd16(base, *[r(w) for r in rs], typ=ty[:3], relu=relu), m)


def video(ctx, ins, base, mods):
    """Video Instructions: vadd2/4, vsub2/4, vavrg2/4, vabsdiff2/4, vmin2/4, vmax2/4, vset2/4
    (d, a, b, c; .sat; .add accumulates into c; the merge form keeps c's lanes outside d's mask)."""
    op, lanes = base[1:-1], int(base[-1])
    tys = [m for m in mods if m in ("u32", "s32")]
    if len(tys) != 3:
        raise UnsupportedInstruction(f"`{ins.op}`: expected dtype.atype.btype")
    cmp = next((m for m in mods if m in ("eq", "ne", "lt", "le", "gt", "ge")), None)
    if ins.args[0][0] != "reg" or any(x[0] not in ("reg", "imm") for x in ins.args[1:]):
        raise UnsupportedInstruction(f"`{ins.text}`: lane selectors and masks on video operands are not modelled")
    rs = [bits_reader(ctx, x, "b32") for x in ins.args[1:]]
    wr = writer(ctx, ins.args[0], "b32")
    kw = dict(dtype=tys[0], atype=tys[1], btype=tys[2], sat="sat" in mods, accumulate="add" in mods, cmp=cmp)
    return lambda w, m: wr(w, hi.vop(op, lanes, *[r(w) for r in rs], **kw), m)
