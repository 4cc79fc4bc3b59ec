"""Conversion (PTX ISA, "Data Movement and Conversion Instructions: cvt").

Every form runs through `bwlab.hw.floats.cvt` on raw bits: float <-> float (f64 f32 tf32 f16 bf16 and
the 8-bit e4m3/e5m2, the 6- and 4-bit formats of sm_100a), float <-> integer (saturating, NaN as the
GPU gives it), integer <-> integer (wrap, or clamp with .sat), every rounding modifier, .ftz, .sat,
.relu, .satfinite; the packed forms `cvt.{f16x2,bf16x2,e4m3x2,...}.f32 d, a, b` (a to the upper
half), `cvt.*x2.f16x2` (two 16-bit values) and `cvt.f16x2.{e4m3x2,...}` (widening a pair).
"""
from __future__ import annotations

import numpy as np

from ...hw import floats as hf
from ..errors import UnsupportedInstruction
from .operands import ALL, bits_reader, writer
from .operands import _special as is_special

__all__ = ["cvt", "bf16x2_rn"]

_INTS = {f"{k}{w}" for k in "su" for w in (8, 16, 32, 64)}
_FLOATS = {"f16", "bf16", "f32", "f64", "tf32", "e4m3", "e5m2", "e2m1", "e2m3", "e3m2", "ue8m0"}
_WIDTH = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "tf32": 32, "e4m3": 8, "e5m2": 8, "e2m1": 4,
          "e2m3": 8, "e3m2": 8, "ue8m0": 8}
_REG = {8: "b8", 16: "b16", 32: "b32", 64: "b64"}
_RND = ("rn", "rna", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rs")


def _cvt_types(mods):
    out = [m for m in mods if m in _INTS or m in _FLOATS or m.endswith("x2") or m in ("b8", "b16", "b32", "b64")]
    if len(out) != 2:
        raise UnsupportedInstruction(f"cvt with types {out}: expected a destination and a source type")
    return out


def _width(t):
    if t in _WIDTH:
        return _WIDTH[t]
    return int(t[1:])


def cvt(ctx, ins, base, mods):
    """Data Movement and Conversion: cvt{.rnd}{.ftz}{.sat}{.relu}{.satfinite}.dtype.atype."""
    dty, aty = _cvt_types(mods)
    rnd = next((m for m in mods if m in _RND), None)
    if rnd == "rs":
        raise UnsupportedInstruction(f"`{ins.op}`: stochastic rounding (.rs, random bits) is not modelled")
    kw = dict(sat="sat" in mods, ftz="ftz" in mods, relu="relu" in mods, satfinite="satfinite" in mods)
    args = ins.args
    if aty.startswith("b") and aty[1:].isdigit():   # cvt.f32.b16 and friends: the bits as the other type
        aty = {"b16": "f16", "b32": "f32", "b64": "f64"}.get(aty, aty)
    if dty.endswith("x2") and aty in ("f16x2", "bf16x2"):    # cvt.rn.satfinite.e4m3x2.f16x2 d, a (a pair of halves)
        d, s = dty[:-2], aty[:-2]
        ra = bits_reader(ctx, args[1], "b32")
        wr = writer(ctx, args[0], "b16" if d != "e2m1" else "b8")

        def pair(w, m):
            v = ra(w).astype(np.uint32)
            hi = (v >> np.uint32(16)).astype(np.uint16)
            lo = (v & np.uint32(0xFFFF)).astype(np.uint16)
            wr(w, hf.cvt_x2(_widen(hi, s), _widen(lo, s), "f32", d, rnd or "rn",
                            relu=kw["relu"], satfinite=kw["satfinite"]), m)
        return pair
    if aty.endswith("x2"):                           # cvt.rn.f16x2.e4m3x2 d, a: widen a pair
        s = aty[:-2]
        ra = bits_reader(ctx, args[1], "b16" if s != "e2m1" else "b8")
        wr = writer(ctx, args[0], "b32")
        return lambda w, m: wr(w, hf.cvt_from_x2(ra(w), s, dty[:-2], relu=kw["relu"]), m)
    if dty.endswith("x2"):                           # cvt.rn.f16x2.f32 d, a, b: a -> the upper half
        d = dty[:-2]
        ra, rb = bits_reader(ctx, args[1], "b32"), bits_reader(ctx, args[2], "b32")
        wr = writer(ctx, args[0], "b32" if d in ("f16", "bf16") else "b16" if d != "e2m1" else "b8")
        if d == "bf16" and aty == "f32" and rnd in ("rn", None) and not kw["relu"] and not kw["satfinite"] \
                and all(_reg32(ctx, x) for x in args[:3]):
            return _bf16x2_regs(ctx, args, ra, rb, wr)
        return lambda w, m: wr(w, hf.cvt_x2(ra(w), rb(w), aty, d, rnd or "rn", relu=kw["relu"],
                                            satfinite=kw["satfinite"]), m)
    sw, dw = _width(aty), _width(dty)
    src = bits_reader(ctx, args[1], _REG[max(sw, 8)])
    dreg = _REG[max(dw, 8)]
    sext = dty in _INTS and dty[0] == "s" and ctx.prog.reg_width[ctx.reg(args[0][1])] > dw \
        if args[0][0] == "reg" else False
    wr = writer(ctx, args[0], dty if sext else dreg)
    if sext:   # cvt.s8.s32 into a 32-bit register: the narrow signed result sign-extended
        from ..values import from_bits

        def body(w, m):
            out = hf.cvt(src(w), aty, dty, rnd, **kw)
            wr(w, from_bits(np.asarray(out).astype(np.uint64), dty), m)
        return body
    fast = _fast(ctx, args, aty, dty, rnd, kw)
    if fast is not None:
        return fast
    return lambda w, m: wr(w, hf.cvt(src(w), aty, dty, rnd, **kw), m)


_NP = {"f32": np.float32, "f64": np.float64}
_IRND = {"rzi": np.trunc, "rni": np.rint, "rmi": np.floor, "rpi": np.ceil, None: np.trunc}


def _fast(ctx, args, aty, dty, rnd, kw):
    """The common conversions straight through NumPy where its one rounding is the GPU's: integer
    widening/narrowing (wrap), integers of up to 32 bits (or 64 into f64) to f32/f64 by .rn, f32/f64
    to 32/64-bit integers with .rzi/.rni/.rmi/.rpi when every lane is in range (else the exact path)."""
    if any(kw.values()):
        return None
    from ..values import from_bits
    if aty in _INTS and dty in _INTS:
        src, wr = bits_reader(ctx, args[1], aty), writer(ctx, args[0], dty)
        signed = aty[0] == "s"

        def widen(w, m):
            v = src(w)
            wr(w, from_bits(v.astype(np.int64).view(np.uint64) if signed else v.astype(np.uint64), dty), m)
        return widen
    if aty in _INTS and dty in _NP and rnd in ("rn", None) and (int(aty[1:]) <= 32 or dty == "f64"):
        src, wr = bits_reader(ctx, args[1], aty), writer(ctx, args[0], dty)
        return lambda w, m: wr(w, src(w).astype(np.float64).astype(_NP[dty]), m)
    if aty in _NP and dty in _INTS and int(dty[1:]) >= 32 and rnd in _IRND:
        src, wr = bits_reader(ctx, args[1], aty), writer(ctx, args[0], dty)
        signed, width = dty[0] == "s", int(dty[1:])
        lo, hi = (-2.0 ** (width - 1), 2.0 ** (width - 1)) if signed else (0.0, 2.0 ** width)
        fn, idt = _IRND[rnd], (np.int64 if signed else np.uint64)
        raw = bits_reader(ctx, args[1], _REG[_width(aty)])

        def toint(w, m):
            with np.errstate(invalid="ignore"):
                v = fn(src(w).astype(np.float64))
                ok = (v >= lo) & (v < hi)
            if not ok.all():
                wr(w, from_bits(hf.cvt(raw(w), aty, dty, rnd).astype(np.uint64), dty), m)
                return
            wr(w, v.astype(idt), m)
        return toint
    return None


def _widen(bits16, s):
    """A 16-bit float of a pair as f32 bits, exactly (f16/bf16 -> f32 is exact)."""
    return hf.cvt(bits16, s, "f32")


_U32 = np.uint32


def _reg32(ctx, op) -> bool:
    """`op` is a 32-bit register of the kernel (not a special register, an immediate or a vector)."""
    return op[0] == "reg" and is_special(op[1]) is None and ctx.prog.reg_width[ctx.reg(op[1])] == 32


def _bf16x2_regs(ctx, args, ra, rb, wr):
    """`cvt.rn.bf16x2.f32 d, a, b` with d, a and b 32-bit registers: both sources' rows (which hold
    zero-extended 32-bit values) rounded together, the result written to d's row. Registers an
    asynchronous operation still owns go through the readers and writer (and their diagnosis)."""
    ia, ib, idst = ctx.reg(args[1][1]), ctx.reg(args[2][1]), ctx.reg(args[0][1])
    pair = [ia, ib]

    def body(w, m):
        inf = w.inflight
        if inf and (ia in inf or ib in inf or idst in inf):
            wr(w, bf16x2_rn(ra(w), rb(w)), m)
            return
        R = w.R
        u = R[pair]
        r = u >> _U64(16)
        r &= _U64(1)
        r += u
        r += _U64(0x7FFF)
        r >>= _U64(16)
        u &= _U64(0x7FFFFFFF)
        nan = u > _U64(0x7F800000)
        if nan.any():
            r[nan] = 0x7FFF
        out = r[0] << _U64(16)
        out |= r[1]
        if m is ALL:
            R[idst] = out
        else:
            np.copyto(R[idst], out, where=m)
    return body


_U64 = np.uint64


def _bf16_rn(u):
    r = u >> _U32(16)
    r &= _U32(1)
    r += u
    r += _U32(0x7FFF)
    r >>= _U32(16)
    if (u.view(np.float32) != u.view(np.float32)).any():
        r[(u & _U32(0x7FFFFFFF)) > _U32(0x7F800000)] = 0x7FFF
    return r


def bf16x2_rn(a, b):
    """`cvt.rn.bf16x2.f32 d, a, b` on f32 bits (uint32), as `hw.floats.cvt_x2` gives it, in a few integer
    operations: bf16 keeps f32's exponent range, so rounding to nearest even is adding 0x7FFF plus the
    kept part's lowest bit and dropping the low 16 bits (finite values, subnormals and overflow to
    infinity alike); a NaN becomes the canonical bf16 NaN 0x7FFF."""
    hi = _bf16_rn(np.asarray(a, _U32))
    hi <<= _U32(16)
    hi |= _bf16_rn(np.asarray(b, _U32))
    return hi
