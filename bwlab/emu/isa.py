"""The instruction set: each PTX instruction decoded once into a closure over NumPy lane vectors.

`decode_instruction(ctx, instr)` returns a `Code` whose `run(warp, group)` executes the instruction
for the lanes in `group` (the lanes of the warp at this program counter; the guard predicate is
applied here). Plain instructions advance those lanes' program counters; branches, calls, returns
and blocking waits set them themselves. Semantics follow the PTX ISA sections named per family;
the asynchronous units (mbarrier, TMA, bulk groups, wgmma, barriers) live in `bwlab.emu.machine`.
"""
from __future__ import annotations

import numpy as np

from .errors import EmuError, UnsupportedInstruction
from .program import Code, bits_reader
from .values import WIDTH, bf16_bits, f16_bits, fma_f32, from_bits, to_bits

__all__ = ["decode_instruction"]

_TYPES = set(WIDTH) | {"b128"}
HANDLED = "handled"   # a body's return value: it set the program counters itself
LANES = np.arange(32, dtype=np.uint64)


def _mods(op: str):
    parts = op.split(".")
    return parts[0], parts[1:]


def _types(mods):
    return [m for m in mods if m in _TYPES]


def _space(mods):
    for m in mods:
        if m in ("global", "local", "param", "const"):
            return m
        if m.startswith("shared"):
            return "shared::cluster" if m == "shared::cluster" else "shared"
    return "generic"


def _writer(ctx, op, ty):
    """callable(warp, values, mask) writing `values` of type `ty` into operand `op`."""
    if op[0] == "sink":
        return lambda w, v, m: None
    if op[0] != "reg":
        raise UnsupportedInstruction(f"cannot write to operand {op!r}")
    idx = ctx.reg(op[1])
    width = ctx.prog.reg_width[idx]

    def write(w, vals, m, idx=idx, width=width, ty=ty):
        if w.inflight and idx in w.inflight:
            w.machine.inflight_read(w, idx, write=True)
        bits = to_bits(np.broadcast_to(vals, (32,)), ty, width)
        row = w.R[idx]
        row[m] = bits[m]
    return write


def _addr_reader(ctx, op):
    """callable(warp) -> (space of a symbol base or None, uint64 addresses) for an address operand."""
    if op[0] != "addr":
        raise UnsupportedInstruction(f"expected an address operand, got {op!r}")
    base, off = op[1], op[2]
    if base[0] == "sym":
        space, val = ctx.symbol(base[1])
        if space == "shared":
            return space, (lambda w, v=val + off: np.full(32, w.cta.shared_base + v, np.uint64))
        a = np.full(32, (val + off) & 0xFFFFFFFFFFFFFFFF, np.uint64)
        return space, (lambda w, a=a: a)
    if base[0] == "imm":
        a = np.full(32, int(base[1], 0) + off, np.uint64)
        return None, (lambda w, a=a: a)
    ty = "u64" if ctx.prog.reg_width[ctx.reg(base[1])] == 64 else "u32"
    r = bits_reader(ctx, base, ty)
    if off == 0:
        return None, (lambda w: r(w).astype(np.uint64))
    o = np.uint64(off & 0xFFFFFFFFFFFFFFFF)
    return None, (lambda w: r(w).astype(np.uint64) + o)


def _value_dtype(ty):
    return {"b8": np.uint8, "u8": np.uint8, "s8": np.int8, "b16": np.uint16, "u16": np.uint16,
            "s16": np.int16, "f16": np.float16, "bf16": np.uint16, "b32": np.uint32, "u32": np.uint32,
            "s32": np.int32, "f32": np.float32, "f16x2": np.uint32, "bf16x2": np.uint32,
            "b64": np.uint64, "u64": np.uint64, "s64": np.int64, "f64": np.float64}[ty]


def decode_instruction(ctx, ins) -> Code:
    base, mods = _mods(ins.op)
    maker = _DECODERS.get(base)
    if maker is None:
        raise UnsupportedInstruction(f"the emulator does not execute `{ins.op}` (PTX line {ins.line}: {ins.text})")
    body, kind = maker(ctx, ins, base, mods)
    converge = 0
    member = None
    if "aligned" in mods or ins.op in ("bar.sync", "bar.arrive", "bar.red") or base == "bar" and "warp" not in mods \
            or (base == "barrier" and "cluster" not in mods and "aligned" in mods):
        converge = 1
    if base in ("shfl", "vote", "elect", "bar") and "sync" in mods and "warp" in mods:
        converge = 2
    if base in ("shfl", "vote", "match", "redux") and "sync" in mods:
        converge = 2
    if base == "elect":
        converge = 2
    if converge == 2:
        mop = ins.args[-1]
        r = bits_reader(ctx, mop, "u32")
        member = lambda w, r=r: int(r(w)[0])  # noqa: E731
    guard = None
    if ins.guard is not None:
        g = bits_reader(ctx, ("reg", ins.guard[0]), "pred")
        guard = (lambda w, g=g: ~g(w)) if ins.guard[1] else g

    if kind == "plain":
        def run(w, group, body=body, guard=guard):
            em = group if guard is None else group & guard(w)
            if em.any():
                body(w, em)
            w.pc[group] += 1
    else:  # 'control': the body sees the group and the guarded mask and sets the pcs
        def run(w, group, body=body, guard=guard):
            em = group if guard is None else group & guard(w)
            body(w, group, em)
    return Code(run, ins, ctx.func.name, converge, member)


# ------------------------------------------------------------------------------------------------
# data movement and conversion (PTX ISA 9.7.9)
# ------------------------------------------------------------------------------------------------
def _mov(ctx, ins, base, mods):
    ty = _types(mods)[0]
    d, a = ins.args
    if a[0] == "sym":
        space, val = ctx.symbol(a[1])
        if space == "func":
            raise UnsupportedInstruction("function addresses are not modelled")
        wr = _writer(ctx, d, "u64")
        if space == "shared":
            return (lambda w, m: wr(w, np.full(32, w.cta.shared_base + val, np.uint64), m)), "plain"
        v = np.full(32, val, np.uint64)
        return (lambda w, m: wr(w, v, m)), "plain"
    if a[0] == "vec":   # mov.b64 %rd, {%r1, %r2}: pack
        parts = [bits_reader(ctx, x, "b32" if ty == "b64" else "b16") for x in a[1]]
        sh = 64 // len(parts)
        wr = _writer(ctx, d, ty)

        def pack(w, m):
            out = np.zeros(32, np.uint64)
            for k, p in enumerate(parts):
                out |= p(w).astype(np.uint64) << np.uint64(sh * k)
            wr(w, from_bits(out, ty), m)
        return pack, "plain"
    if d[0] == "vec":   # mov.b64 {%r1, %r2}, %rd: unpack
        src = bits_reader(ctx, a, ty)
        n = len(d[1])
        sh = WIDTH[ty] // n
        pty = {16: "b16", 32: "b32", 8: "b8"}[sh]
        wrs = [_writer(ctx, x, pty) for x in d[1]]

        def unpack(w, m):
            v = src(w).astype(np.uint64)
            for k, wr in enumerate(wrs):
                wr(w, (v >> np.uint64(sh * k)) & np.uint64((1 << sh) - 1), m)
        return unpack, "plain"
    src = bits_reader(ctx, a, ty)
    wr = _writer(ctx, d, ty)
    return (lambda w, m: wr(w, src(w), m)), "plain"


def _ld(ctx, ins, base, mods):
    tys = _types(mods)
    ty = tys[0]
    vec = next((int(m[1:]) for m in mods if m in ("v2", "v4", "v8")), 1)
    space = _space(mods)
    d, a = ins.args
    sym_space, addr = _addr_reader(ctx, a)
    if space == "param" and sym_space in ("kparam", "cparam"):
        space = sym_space
    elif space == "param":
        space = "kparam" if ctx.func.entry else "cparam"
    n = WIDTH[ty] // 8
    dst = d[1] if d[0] == "vec" else [d]
    wrs = [_writer(ctx, x, ty) for x in dst]
    dt = _value_dtype(ty)
    sign = ty[0] == "s"

    def body(w, m):
        raw = w.machine.mem_read(w, space, addr(w), n * vec, m, ins)
        vals = raw.view(dt).reshape(32, vec)
        for k, wr in enumerate(wrs):
            v = vals[:, k]
            wr(w, v.astype(np.int64) if sign else v, m)
    return body, "plain"


def _st(ctx, ins, base, mods):
    ty = _types(mods)[0]
    vec = next((int(m[1:]) for m in mods if m in ("v2", "v4", "v8")), 1)
    space = _space(mods)
    a, s = ins.args
    sym_space, addr = _addr_reader(ctx, a)
    if space == "param":
        space = sym_space if sym_space in ("kparam", "cparam") else "cparam"
    n = WIDTH[ty] // 8
    srcs = [bits_reader(ctx, x, ty) for x in (s[1] if s[0] == "vec" else [s])]
    dt = _value_dtype(ty)

    def body(w, m):
        data = np.empty((32, vec), dt)
        for k, r in enumerate(srcs):
            data[:, k] = r(w)
        w.machine.mem_write(w, space, addr(w), data.view(np.uint8).reshape(32, n * vec), m, ins)
    return body, "plain"


def _cvta(ctx, ins, base, mods):
    to = "to" in mods
    space = next(m for m in mods if m in ("global", "shared", "param", "local", "const") or m.startswith("shared"))
    space = "shared" if space.startswith("shared") else space
    ty = _types(mods)[0]
    d, a = ins.args
    src = bits_reader(ctx, a, ty)
    wr = _writer(ctx, d, ty)

    def body(w, m):
        v = src(w).astype(np.uint64)
        wr(w, w.machine.cvta(space, v, to), m)
    return body, "plain"


_INT_RANGE = {"u8": (0, 255), "s8": (-128, 127), "u16": (0, 65535), "s16": (-32768, 32767),
              "u32": (0, 2**32 - 1), "s32": (-2**31, 2**31 - 1), "u64": (0, 2**64 - 1), "s64": (-2**63, 2**63 - 1)}


def _cvt(ctx, ins, base, mods):
    tys = _types(mods)
    rnd = next((m for m in mods if m in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna", "rs")), None)
    sat = "sat" in mods or "satfinite" in mods
    dty, aty = tys[0], tys[-1]
    args = ins.args
    if dty in ("bf16x2", "f16x2"):   # cvt.rn.bf16x2.f32 d, a, b: a -> upper half, b -> lower
        if rnd != "rn" or aty != "f32":
            raise UnsupportedInstruction(f"`{ins.op}` (only .rn from two f32 values is modelled)")
        ra, rb = bits_reader(ctx, args[1], "f32"), bits_reader(ctx, args[2], "f32")
        conv = bf16_bits if dty == "bf16x2" else f16_bits
        wr = _writer(ctx, args[0], "b32")

        def pack(w, m):
            hi = conv(ra(w)).astype(np.uint32)
            lo = conv(rb(w)).astype(np.uint32)
            wr(w, (hi << np.uint32(16)) | lo, m)
        return pack, "plain"
    src = bits_reader(ctx, args[1], aty if aty != "bf16" else "b16")
    wr_ty = dty if dty not in ("bf16", "f16") else "b16"
    wr = _writer(ctx, args[0], wr_ty)
    dfloat, afloat = dty[0] in "f" or dty == "bf16", aty[0] in "f" or aty == "bf16"

    def to_f32(v):
        if aty == "bf16":
            return (v.astype(np.uint32) << np.uint32(16)).view(np.float32)
        return v

    if dfloat and afloat:
        def body(w, m):
            v = to_f32(src(w))
            if dty == "bf16":
                if rnd not in ("rn", None) and aty != "bf16":
                    raise UnsupportedInstruction(f"`{ins.op}`: only .rn to bf16 is modelled")
                out = bf16_bits(np.asarray(v, np.float32)) if aty in ("f32", "f64") else v
            elif dty == "f16":
                out = f16_bits(np.asarray(v, np.float32)) if aty != "f16" else v.view(np.uint16)
            elif dty == "f32":
                out = np.asarray(v, np.float64).astype(np.float32)
            else:
                out = np.asarray(v, np.float64)
            if sat and dty in ("f32", "f16", "f64"):
                out = np.clip(np.nan_to_num(out, nan=0.0), 0, 1).astype(out.dtype)
            wr(w, out, m)
        return body, "plain"
    if dfloat and not afloat:
        def body(w, m):
            v = src(w)
            if dty == "f32":
                out = v.astype(np.float64).astype(np.float32) if WIDTH[aty] < 64 else _int_to_f32(v)
            elif dty == "f64":
                out = v.astype(np.float64)
            elif dty == "f16":
                out = f16_bits(v.astype(np.float64).astype(np.float32))
            else:
                out = bf16_bits(v.astype(np.float64).astype(np.float32))
            wr(w, out, m)
        return body, "plain"
    if afloat and not dfloat:
        lo, hi = _INT_RANGE[dty]

        def body(w, m):
            v = np.asarray(to_f32(src(w)), np.float64)
            f = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil, None: np.trunc}[rnd]
            with np.errstate(invalid="ignore"):
                r = np.nan_to_num(f(v), nan=0.0, posinf=hi, neginf=lo)
                r = np.clip(r, lo, hi)
            out = np.array([int(x) for x in r], dtype=object)
            wr(w, np.array([x & ((1 << 64) - 1) for x in out], np.uint64) if dty[0] == "s" and WIDTH[dty] == 64
               else (r.astype(np.int64) if dty[0] == "s" else np.array([int(x) for x in r], np.uint64)), m)
        return body, "plain"
    # integer -> integer: truncate or extend by the source type's signedness; .sat clamps
    lo, hi = _INT_RANGE[dty] if dty in _INT_RANGE else (0, (1 << WIDTH[dty]) - 1)

    def body(w, m):
        v = src(w)
        if sat:
            v = np.clip(v.astype(np.float64), lo, hi).astype(np.int64) if WIDTH[aty] < 64 else v
        if aty[0] == "s":
            out = v.astype(np.int64).view(np.uint64)
        else:
            out = v.astype(np.uint64)
        wd = WIDTH[dty]
        out = out & np.uint64((1 << wd) - 1) if wd < 64 else out
        wr(w, from_bits(out, dty) if dty[0] == "s" else out, m)
    return body, "plain"


def _int_to_f32(v):
    # 64-bit integers round to nearest even when they do not fit float32's mantissa
    return np.array([np.float32(float(int(x))) for x in v], np.float32)


# ------------------------------------------------------------------------------------------------
# integer and floating-point arithmetic (PTX ISA 9.7.1-9.7.4, 9.7.7)
# ------------------------------------------------------------------------------------------------
def _is_float(ty):
    return ty in ("f32", "f64", "f16")


def _arith(ctx, ins, base, mods):
    ty = _types(mods)[-1]
    if ty in ("f16x2", "bf16x2", "bf16") or (ty == "f16" and base not in ("mov",)):
        return _half_arith(ctx, ins, base, mods, ty)
    rnd = next((m for m in mods if m in ("rn", "rz", "rm", "rp")), None)
    if _is_float(ty) and rnd not in (None, "rn") and base in ("add", "sub", "mul", "fma", "div", "sqrt", "rcp"):
        raise UnsupportedInstruction(f"`{ins.op}`: directed rounding .{rnd} is not modelled (only .rn)")
    ftz = "ftz" in mods
    sat = "sat" in mods
    d = ins.args[0]
    srcs = ins.args[1:]
    wide = "wide" in mods
    hi = "hi" in mods
    in_ty = ty
    out_ty = ty
    if wide:
        out_ty = {"u16": "u32", "s16": "s32", "u32": "u64", "s32": "s64"}[ty]
    if base in ("mad", "mul") and (wide or hi or "lo" in mods) and base == "mad":
        pass
    rs = []
    for k, s in enumerate(srcs):
        sty = in_ty
        if base in ("shl", "shr") and k == 1:
            sty = "u32"
        if base == "mad" and wide and k == 2:
            sty = out_ty
        if base in ("bfe",) and k > 0:
            sty = "u32"
        if base == "bfi" and k > 1:
            sty = "u32"
        rs.append(bits_reader(ctx, s, sty))
    wr = _writer(ctx, d, out_ty)
    f = _ARITH_FN[base](ty, mods, out_ty)

    def body(w, m):
        vals = [r(w) for r in rs]
        if ftz and ty == "f32":
            vals = [_ftz(v) for v in vals]
        with np.errstate(all="ignore"):
            out = f(*vals)
        if ftz and ty == "f32":
            out = _ftz(out)
        if sat:
            if _is_float(ty):
                out = np.where(np.isnan(out), 0, np.clip(out, 0, 1)).astype(out.dtype)
        wr(w, out, m)
    return body, "plain"


def _ftz(v):
    v = np.asarray(v, np.float32)
    return np.where(np.abs(v) < np.float32(1.1754944e-38), np.copysign(np.float32(0), v), v).astype(np.float32)


def _width(ty):
    return WIDTH[ty]


def _mulhi(ty):
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


def _mul(ty, mods, out_ty):
    if _is_float(ty):
        return lambda a, b: (a * b).astype(a.dtype)
    if "hi" in mods:
        return _mulhi(ty)
    if "wide" in mods:
        odt = _value_dtype(out_ty)
        return lambda a, b: a.astype(odt) * b.astype(odt)
    return lambda a, b: a * b


def _mad(ty, mods, out_ty):
    if ty == "f32":
        return fma_f32   # mad.rn.f32 is fma.rn.f32 (PTX ISA: mad.f32 with rounding == fma.f32)
    if ty == "f64":
        return lambda a, b, c: _fma_f64(a, b, c)
    if "hi" in mods:
        h = _mulhi(ty)
        return lambda a, b, c: h(a, b) + c
    if "wide" in mods:
        odt = _value_dtype(out_ty)
        return lambda a, b, c: a.astype(odt) * b.astype(odt) + c.astype(odt)
    return lambda a, b, c: a * b + c


def _fma_f64(a, b, c):
    from fractions import Fraction
    out = []
    for x, y, z in zip(a, b, c):
        if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)):
            out.append(x * y + z)
        else:
            out.append(float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))))
    return np.array(out, np.float64)


def _shl(ty, mods, out_ty):
    w = WIDTH[ty]

    def f(a, b):
        b = b.astype(np.uint64)
        a64 = a.astype(np.uint64)
        out = np.where(b >= w, np.uint64(0), a64 << np.minimum(b, np.uint64(w - 1)))
        return from_bits(out & np.uint64((1 << w) - 1) if w < 64 else out, ty)
    return f


def _shr(ty, mods, out_ty):
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


def _div(ty, mods, out_ty):
    if _is_float(ty):
        return lambda a, b: (a / b).astype(a.dtype)
    if ty[0] == "s":
        def f(a, b):
            bb = np.where(b == 0, 1, b)
            q = np.abs(a.astype(np.int64)) // np.abs(bb.astype(np.int64))
            q = np.where((a < 0) ^ (bb < 0), -q, q)
            return np.where(b == 0, -1, q).astype(a.dtype)
        return f
    return lambda a, b: np.where(b == 0, a.dtype.type(~0 & ((1 << (8 * a.dtype.itemsize)) - 1)),
                                 a // np.where(b == 0, 1, b)).astype(a.dtype)


def _rem(ty, mods, out_ty):
    if ty[0] == "s":
        def f(a, b):
            bb = np.where(b == 0, 1, b).astype(np.int64)
            r = np.abs(a.astype(np.int64)) % np.abs(bb)
            return np.where(a < 0, -r, r).astype(a.dtype)
        return f
    return lambda a, b: np.where(b == 0, a, a % np.where(b == 0, 1, b)).astype(a.dtype)


def _minmax(fn):
    def make(ty, mods, out_ty):
        if _is_float(ty):
            nanp = "NaN" in mods

            def f(a, b):
                # PTX min/max.f32: if one input is NaN the other is returned (unless .NaN)
                if nanp:
                    return fn(a, b)
                r = np.where(np.isnan(a), b, np.where(np.isnan(b), a, fn(a, b)))
                # -0.0 < +0.0 for min/max
                return r.astype(a.dtype)
            return f
        return lambda a, b: fn(a, b)
    return make


def _bfe(ty, mods, out_ty):
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


def _bfi(ty, mods, out_ty):
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


def _simple(fn):
    return lambda ty, mods, out_ty: fn


def _not(ty, mods, out_ty):
    if ty == "pred":
        return lambda a: ~a
    return lambda a: ~a


def _popc(ty, mods, out_ty):
    return lambda a: np.array([bin(int(x)).count("1") for x in a.astype(np.uint64)], np.uint32)


def _clz(ty, mods, out_ty):
    w = WIDTH[ty]
    return lambda a: np.array([w - int(x).bit_length() for x in a.astype(np.uint64)], np.uint32)


def _brev(ty, mods, out_ty):
    w = WIDTH[ty]
    return lambda a: from_bits(np.array([int(format(int(x), f"0{w}b")[::-1], 2) for x in a.astype(np.uint64)],
                                        np.uint64), ty)


def _abs(ty, mods, out_ty):
    return lambda a: np.abs(a).astype(a.dtype)


def _neg(ty, mods, out_ty):
    return lambda a: (-a).astype(a.dtype)


def _copysign(ty, mods, out_ty):
    return lambda a, b: np.copysign(b, a).astype(b.dtype)


def _unary_float(fn):
    def make(ty, mods, out_ty):
        return lambda a: fn(a).astype(a.dtype)
    return make


_ARITH_FN = {
    "add": _simple(lambda a, b: (a + b).astype(a.dtype)),
    "sub": _simple(lambda a, b: (a - b).astype(a.dtype)),
    "mul": _mul, "mad": _mad,
    "fma": lambda ty, mods, out_ty: fma_f32 if ty == "f32" else (lambda a, b, c: _fma_f64(a, b, c)),
    "div": _div, "rem": _rem,
    "min": _minmax(np.minimum), "max": _minmax(np.maximum),
    "and": _simple(lambda a, b: a & b), "or": _simple(lambda a, b: a | b),
    "xor": _simple(lambda a, b: a ^ b), "not": _not,
    "shl": _shl, "shr": _shr, "bfe": _bfe, "bfi": _bfi, "popc": _popc, "clz": _clz, "brev": _brev,
    "abs": _abs, "neg": _neg, "copysign": _copysign,
    "rcp": _unary_float(lambda a: 1 / a), "sqrt": _unary_float(np.sqrt),
    "rsqrt": _unary_float(lambda a: 1 / np.sqrt(a)), "ex2": _unary_float(np.exp2),
    "lg2": _unary_float(np.log2), "sin": _unary_float(np.sin), "cos": _unary_float(np.cos),
    "tanh": _unary_float(np.tanh),
}


def _half_arith(ctx, ins, base, mods, ty):
    """add/sub/mul/fma/neg/abs/min/max on f16, bf16 and their x2 packs: computed in float32 (exact
    for one operation of two 16-bit values) and rounded once to the format."""
    if base not in ("add", "sub", "mul", "fma", "neg", "abs", "min", "max", "mov"):
        raise UnsupportedInstruction(f"`{ins.op}` on {ty} is not modelled")
    pair = ty.endswith("x2")
    bf = ty.startswith("bf16")
    rs = [bits_reader(ctx, s, "b32" if pair else "b16") for s in ins.args[1:]]
    wr = _writer(ctx, ins.args[0], "b32" if pair else "b16")

    def dec(bits):
        b = bits.astype(np.uint32)
        return (b << np.uint32(16)).view(np.float32) if bf else b.astype(np.uint16).view(np.float16).astype(np.float32)

    def enc(x):
        return (bf16_bits(x) if bf else f16_bits(x)).astype(np.uint32)

    def op(*xs):
        with np.errstate(all="ignore"):
            if base == "add":
                return xs[0] + xs[1]
            if base == "sub":
                return xs[0] - xs[1]
            if base == "mul":
                return xs[0] * xs[1]
            if base == "fma":
                return (xs[0].astype(np.float64) * xs[1] + xs[2]).astype(np.float32)
            if base == "neg":
                return -xs[0]
            if base == "abs":
                return np.abs(xs[0])
            if base == "min":
                return np.fmin(xs[0], xs[1])
            if base == "max":
                return np.fmax(xs[0], xs[1])
            return xs[0]

    def body(w, m):
        vals = [r(w) for r in rs]
        if pair:
            lo = op(*[dec(v & np.uint32(0xFFFF)) for v in vals])
            hi = op(*[dec(v >> np.uint32(16)) for v in vals])
            wr(w, (enc(hi) << np.uint32(16)) | enc(lo), m)
        else:
            wr(w, enc(op(*[dec(v) for v in vals])), m)
    return body, "plain"


def _selp(ctx, ins, base, mods):
    ty = _types(mods)[0]
    d, a, b, c = ins.args
    ra, rb, rc = bits_reader(ctx, a, ty), bits_reader(ctx, b, ty), bits_reader(ctx, c, "pred")
    wr = _writer(ctx, d, ty)
    return (lambda w, m: wr(w, np.where(rc(w), ra(w), rb(w)), m)), "plain"


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


def _setp(ctx, ins, base, mods):
    ty = _types(mods)[-1]
    cmp = mods[0]
    boolop = next((m for m in mods if m in ("and", "or", "xor")), None)
    if ty in ("f16", "bf16"):
        raise UnsupportedInstruction(f"`{ins.op}` on 16-bit floats is not modelled")
    fn = _compare(cmp, ty)
    d = ins.args[0]
    dp, dq = (d[1][0], d[1][1]) if d[0] == "vec" else (d, None)
    ra, rb = bits_reader(ctx, ins.args[1], ty), bits_reader(ctx, ins.args[2], ty)
    rc = bits_reader(ctx, ins.args[3], "pred") if boolop else None
    wp = _writer(ctx, dp, "pred")
    wq = _writer(ctx, dq, "pred") if dq is not None else None
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
    return body, "plain"


def _pred_logic(ctx, ins, base, mods):
    # and/or/xor/not on .pred go through the same closures as the integer forms
    return _arith(ctx, ins, base, mods)


def _prmt(ctx, ins, base, mods):
    mode = next((m for m in mods if m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), None)
    if mode:
        raise UnsupportedInstruction(f"`{ins.op}` (prmt modes other than the default)")
    d, a, b, c = ins.args
    ra, rb, rc = bits_reader(ctx, a, "b32"), bits_reader(ctx, b, "b32"), bits_reader(ctx, c, "b32")
    wr = _writer(ctx, d, "b32")

    def body(w, m):
        x = (rb(w).astype(np.uint64) << np.uint64(32)) | ra(w).astype(np.uint64)
        sel = rc(w).astype(np.uint64)
        out = np.zeros(32, np.uint64)
        for k in range(4):
            s = (sel >> np.uint64(4 * k)) & np.uint64(0xF)
            byte = (x >> ((s & np.uint64(7)) * np.uint64(8))) & np.uint64(0xFF)
            byte = np.where(s & np.uint64(8), np.where(byte & np.uint64(0x80), np.uint64(0xFF), np.uint64(0)), byte)
            out |= byte << np.uint64(8 * k)
        wr(w, out.astype(np.uint32), m)
    return body, "plain"


def _lop3(ctx, ins, base, mods):
    d, a, b, c, imm = ins.args
    ra, rb, rc = (bits_reader(ctx, x, "b32") for x in (a, b, c))
    lut = int(imm[1], 0)
    wr = _writer(ctx, d, "b32")

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
    return body, "plain"


def _shf(ctx, ins, base, mods):
    left = "l" in mods
    wrap = "wrap" in mods
    d, a, b, c = ins.args
    ra, rb, rc = (bits_reader(ctx, x, "b32") for x in (a, b, c))
    wr = _writer(ctx, d, "b32")

    def body(w, m):
        n = rc(w).astype(np.uint64)
        n = n & np.uint64(31) if wrap else np.minimum(n, np.uint64(32))
        x = (rb(w).astype(np.uint64) << np.uint64(32)) | ra(w).astype(np.uint64)
        if left:
            out = (x << n) >> np.uint64(32)
        else:
            out = x >> n
        wr(w, (out & np.uint64(0xFFFFFFFF)).astype(np.uint32), m)
    return body, "plain"


def _testp(ctx, ins, base, mods):
    ty = _types(mods)[-1]
    what = mods[0]
    ra = bits_reader(ctx, ins.args[1], ty)
    wr = _writer(ctx, ins.args[0], "pred")
    fn = {"finite": np.isfinite, "infinite": np.isinf, "number": lambda v: ~np.isnan(v), "notanumber": np.isnan,
          "normal": lambda v: np.isfinite(v) & (np.abs(v) >= np.finfo(v.dtype).tiny),
          "subnormal": lambda v: (v != 0) & (np.abs(v) < np.finfo(v.dtype).tiny)}[what]
    return (lambda w, m: wr(w, fn(ra(w)), m)), "plain"


# ------------------------------------------------------------------------------------------------
# control flow (PTX ISA 9.7.12)
# ------------------------------------------------------------------------------------------------
def _bra(ctx, ins, base, mods):
    target = ctx.label(ins.label)

    def body(w, group, em):
        w.pc[em] = target
        w.pc[group & ~em] += 1
    return body, "control"


def _call(ctx, ins, base, mods):
    rets, args = ins.args
    target = ins.label
    if target not in ctx.prog.module.functions:
        raise UnsupportedInstruction(f"call to {target}, which this module does not define")
    callee = ctx.prog.module.functions[target]
    start = ctx.prog.func_start[target]
    cp = ctx.prog.callparam
    copies_in = []
    for a, p in zip(args, callee.params):
        copies_in.append((cp[(ctx.func.name, a[1])], cp[(target, p.name)], p.size))
    copies_out = []
    for r, p in zip(rets, callee.rets):
        copies_out.append((cp[(target, p.name)], cp[(ctx.func.name, r[1])], p.size))
    here = ctx.base + ctx.func.body.index(ins) if ins in ctx.func.body else None

    def body(w, group, em):
        for src, dst, n in copies_in:
            w.cparam[em, dst:dst + n] = w.cparam[em, src:src + n]
        w.push_call(em, here, copies_out)
        w.pc[em] = start
        w.pc[group & ~em] += 1
    return body, "control"


def _ret(ctx, ins, base, mods):
    entry = ctx.func.entry

    def body(w, group, em):
        if entry:
            w.machine.exit_lanes(w, em)
        else:
            w.pop_call(em)
        w.pc[group & ~em] += 1
    return body, "control"


def _exit(ctx, ins, base, mods):
    def body(w, group, em):
        w.machine.exit_lanes(w, em)
        w.pc[group & ~em] += 1
    return body, "control"


def _trap(ctx, ins, base, mods):
    def body(w, m):
        raise EmuError(f"{w.who(m)} executed `trap` at {w.machine.where(ins)}: the kernel aborted itself")
    return body, "plain"


def _nop(ctx, ins, base, mods):
    return (lambda w, m: None), "plain"


def _nanosleep(ctx, ins, base, mods):
    r = bits_reader(ctx, ins.args[0], "u32")

    def body(w, m):
        w.machine.sleep(w, int(r(w)[m].max()) if m.any() else 0)
    return body, "plain"


# ------------------------------------------------------------------------------------------------
# warp-level and CTA-level synchronisation (PTX ISA 9.7.13)
# ------------------------------------------------------------------------------------------------
def _bar(ctx, ins, base, mods):
    if "warp" in mods:   # bar.warp.sync membermask: the lanes are together by construction here
        return (lambda w, m: None), "plain"
    red = "red" in mods
    arrive = "arrive" in mods
    args = list(ins.args)
    dst = None
    if red:
        dst = args.pop(0)
    rid = bits_reader(ctx, args[0], "u32")
    rcount = bits_reader(ctx, args[1], "u32") if len(args) > (2 if red else 1) else None
    rc = bits_reader(ctx, args[-1], "pred") if red else None
    redop = next((m for m in mods if m in ("popc", "and", "or")), None)
    wd = _writer(ctx, dst, "u32" if redop == "popc" else "pred") if red else None

    def body(w, group, em):
        bid = int(rid(w)[em].max()) if em.any() else 0
        count = int(rcount(w)[em].max()) if (rcount is not None and em.any()) else None
        w.machine.cta_barrier(w, group, em, bid, count, arrive, (redop, rc, wd))
    return body, "control"


def _barrier(ctx, ins, base, mods):
    if "cluster" in mods:
        arrive = "arrive" in mods

        def body(w, group, em):
            w.machine.cluster_barrier(w, group, em, arrive, ins)
        return body, "control"
    # barrier.sync / barrier.arrive / barrier.red are bar.* spelled the long way
    return _bar(ctx, ins, base, [m if m != "sync" else "sync" for m in mods])


def _membar(ctx, ins, base, mods):
    return (lambda w, m: None), "plain"


def _fence(ctx, ins, base, mods):
    if "proxy" in mods and "async" in mods:
        def body(w, m):
            w.machine.fence_proxy_async(w, m)
            w.machine.fence_mbarrier_init(w)
        return body, "plain"
    if "mbarrier_init" in mods:
        return (lambda w, m: w.machine.fence_mbarrier_init(w)), "plain"
    return (lambda w, m: None), "plain"


def _vote(ctx, ins, base, mods):
    mode = next(m for m in mods if m in ("all", "any", "uni", "ballot"))
    d, a = ins.args[0], ins.args[1]
    ra = bits_reader(ctx, a, "pred")
    wr = _writer(ctx, d, "b32" if mode == "ballot" else "pred")

    def body(w, m):
        p = ra(w) & m
        if mode == "ballot":
            v = np.uint32(int(np.sum((p.astype(np.uint64)) << LANES)))
            wr(w, np.full(32, v, np.uint32), m)
        elif mode == "all":
            wr(w, np.full(32, bool(np.all(p[m]))), m)
        elif mode == "any":
            wr(w, np.full(32, bool(np.any(p[m]))), m)
        else:
            wr(w, np.full(32, bool(np.all(p[m]) or not np.any(p[m]))), m)
    return body, "plain"


def _activemask(ctx, ins, base, mods):
    wr = _writer(ctx, ins.args[0], "b32")

    def body(w, m):
        wr(w, np.full(32, np.uint32(int(np.sum(m.astype(np.uint64) << LANES))), np.uint32), m)
    return body, "plain"


def _shfl(ctx, ins, base, mods):
    mode = next(m for m in mods if m in ("up", "down", "bfly", "idx"))
    d = ins.args[0]
    dp, dq = (d[1][0], d[1][1]) if d[0] == "vec" else (d, None)
    ra, rb, rc = (bits_reader(ctx, x, "b32") for x in ins.args[1:4])
    wr = _writer(ctx, dp, "b32")
    wq = _writer(ctx, dq, "pred") if dq is not None else None
    lane = np.arange(32, dtype=np.int64)

    def body(w, m):
        a = ra(w)
        bval = rb(w).astype(np.int64) & 0x1F
        c = rc(w).astype(np.int64)
        cval = c & 0x1F
        seg = (c >> 8) & 0x1F
        maxl = (lane & seg) | (cval & ~seg)
        minl = lane & seg
        if mode == "up":
            j = lane - bval
            pv = j >= maxl
        elif mode == "down":
            j = lane + bval
            pv = j <= maxl
        elif mode == "bfly":
            j = lane ^ bval
            pv = j <= maxl
        else:
            j = minl | (bval & ~seg)
            pv = j <= maxl
        j = np.where(pv, j, lane).clip(0, 31)
        wr(w, a[j], m)
        if wq is not None:
            wq(w, pv, m)
    return body, "plain"


def _elect(ctx, ins, base, mods):
    d = ins.args[0]
    # 'elect.sync d|P, mask': the parser gives the pair as a vector of two destinations
    dd, dp = (d[1][0], d[1][1]) if d[0] == "vec" else (d, ("sink",))
    wr = None if dd[0] == "sink" else _writer(ctx, dd, "b32")
    wp = None if dp[0] == "sink" else _writer(ctx, dp, "pred")

    def body(w, m):
        leader = int(np.argmax(m))
        if wr is not None:
            wr(w, np.full(32, leader, np.uint32), m)
        if wp is not None:
            wp(w, np.arange(32) == leader, m)
    return body, "plain"


def _atom(ctx, ins, base, mods):
    space = _space(mods)
    ty = _types(mods)[-1]
    opname = next(m for m in mods if m in ("add", "cas", "exch", "min", "max", "and", "or", "xor", "inc", "dec"))
    red = base == "red"
    args = ins.args
    dst = None if red else args[0]
    a = args[0] if red else args[1]
    _, addr = _addr_reader(ctx, a)
    rs = [bits_reader(ctx, x, ty) for x in args[(1 if red else 2):]]
    wr = _writer(ctx, dst, ty) if dst is not None else None
    n = WIDTH[ty] // 8
    dt = _value_dtype(ty)

    def body(w, m):
        ad = addr(w)
        vals = [r(w) for r in rs]
        old_all = np.zeros(32, dt)
        for lane in np.nonzero(m)[0]:
            one = np.zeros(32, bool)
            one[lane] = True
            old = w.machine.mem_read(w, space, ad, n, one, ins)[lane].view(dt)[0]
            b = vals[0][lane]
            with np.errstate(all="ignore"):
                if opname == "add":
                    new = dt(old + b) if ty != "f32" else np.float32(np.float32(old) + np.float32(b))
                elif opname == "cas":
                    new = vals[1][lane] if old == b else old
                elif opname == "exch":
                    new = b
                elif opname == "min":
                    new = min(old, b)
                elif opname == "max":
                    new = max(old, b)
                elif opname == "and":
                    new = old & b
                elif opname == "or":
                    new = old | b
                elif opname == "xor":
                    new = old ^ b
                elif opname == "inc":
                    new = dt(0) if old >= b else dt(old + 1)
                else:
                    new = b if (old == 0 or old > b) else dt(old - 1)
            data = np.zeros((32, n), np.uint8)
            data[lane] = np.array([new], dt).view(np.uint8)
            w.machine.mem_write(w, space, ad, data, one, ins)
            old_all[lane] = old
        if wr is not None:
            wr(w, old_all, m)
    return body, "plain"


def _setmaxnreg(ctx, ins, base, mods):
    r = bits_reader(ctx, ins.args[0], "u32")

    def body(w, m):
        n = int(r(w)[m].max())
        if not (24 <= n <= 256 and n % 8 == 0):
            raise EmuError(f"{w.who(m)}: setmaxnreg {n} at {w.machine.where(ins)} breaks the rule: the count "
                           "must be a multiple of 8 in [24, 256] (PTX ISA, setmaxnreg)")
    return body, "plain"


def _mapa(ctx, ins, base, mods):
    ty = _types(mods)[-1]
    d, a, b = ins.args
    ra, rb = bits_reader(ctx, a, ty), bits_reader(ctx, b, "u32")
    wr = _writer(ctx, d, ty)
    generic = not any(m.startswith("shared") for m in mods)

    def body(w, m):
        wr(w, w.machine.mapa(w, ra(w).astype(np.uint64), rb(w), generic, m, ins), m)
    return body, "plain"


def _getctarank(ctx, ins, base, mods):
    ty = _types(mods)[-1]
    d, a = ins.args
    ra = bits_reader(ctx, a, ty)
    wr = _writer(ctx, d, "u32")
    generic = not any(m.startswith("shared") for m in mods)

    def body(w, m):
        wr(w, w.machine.ctarank_of(w, ra(w).astype(np.uint64), generic), m)
    return body, "plain"


def _isspacep(ctx, ins, base, mods):
    space = mods[0]
    d, a = ins.args
    ra = bits_reader(ctx, a, "u64")
    wr = _writer(ctx, d, "pred")
    return (lambda w, m: wr(w, w.machine.isspacep(space, ra(w)), m)), "plain"


def _async(name):
    """Instructions executed by the asynchronous units: mbarrier, cp.async.bulk, wgmma, ..."""
    def make(ctx, ins, base, mods):
        from . import asyncops
        return asyncops.decode(ctx, ins, base, mods, name)
    return make


def _tcgen05(ctx, ins, base, mods):
    """tcgen05.* (PTX ISA 9.7.16): Tensor Memory and the 5th-generation tensor core, bwlab.emu.tcgen05."""
    from . import tcgen05
    return tcgen05.decode(ctx, ins, base, mods)


_DECODERS = {
    "mov": _mov, "ld": _ld, "ldu": _ld, "st": _st, "cvta": _cvta, "cvt": _cvt,
    "add": _arith, "sub": _arith, "mul": _arith, "mad": _arith, "fma": _arith, "div": _arith, "rem": _arith,
    "min": _arith, "max": _arith, "and": _arith, "or": _arith, "xor": _arith, "not": _arith, "shl": _arith,
    "shr": _arith, "bfe": _arith, "bfi": _arith, "popc": _arith, "clz": _arith, "brev": _arith, "abs": _arith,
    "neg": _arith, "copysign": _arith, "rcp": _arith, "sqrt": _arith, "rsqrt": _arith, "ex2": _arith,
    "lg2": _arith, "sin": _arith, "cos": _arith, "tanh": _arith,
    "selp": _selp, "setp": _setp, "prmt": _prmt, "lop3": _lop3, "shf": _shf, "testp": _testp,
    "bra": _bra, "call": _call, "ret": _ret, "exit": _exit, "trap": _trap, "brkpt": _nop, "pmevent": _nop,
    "nanosleep": _nanosleep, "bar": _bar, "barrier": _barrier, "membar": _membar, "fence": _fence,
    "vote": _vote, "activemask": _activemask, "shfl": _shfl, "elect": _elect, "atom": _atom, "red": _atom,
    "setmaxnreg": _setmaxnreg, "mapa": _mapa, "getctarank": _getctarank, "isspacep": _isspacep,
    "griddepcontrol": _nop, "prefetch": _nop, "prefetchu": _nop, "applypriority": _nop, "discard": _nop,
    "mbarrier": _async("mbarrier"), "cp": _async("cp"), "wgmma": _async("wgmma"), "tcgen05": _tcgen05,
}
