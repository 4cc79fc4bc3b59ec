"""Floating-point arithmetic (PTX ISA, "Floating-Point Instructions" and "Half Precision Floating-Point
Instructions").

The f32/f64 functions are semantics `make(ty, mods, out_ty) -> f(*lane_values)` for
`arith.arithmetic(floating=...)`; `half_arith` is the decoder of the f16/bf16 forms and `testp` a
decoder of its own.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np

from ..errors import UnsupportedInstruction
from ..values import bf16_bits, f16_bits, fma_f32
from .operands import bits_reader, types, writer

__all__ = ["mul", "mad", "fma", "div", "minimum", "maximum", "copysign", "rcp", "sqrt", "rsqrt", "ex2", "lg2",
           "sin", "cos", "tanh", "half_arith", "testp", "fma_f64"]


def mul(ty, mods, out_ty):
    """Floating-Point: mul."""
    return lambda a, b: (a * b).astype(a.dtype)


def mad(ty, mods, out_ty):
    """Floating-Point: mad (mad.rn.f32 is fma.rn.f32: PTX ISA, mad.f32 with a rounding modifier)."""
    if ty == "f32":
        return fma_f32
    return lambda a, b, c: fma_f64(a, b, c)


def fma(ty, mods, out_ty):
    """Floating-Point: fma (one rounding)."""
    return fma_f32 if ty == "f32" else (lambda a, b, c: fma_f64(a, b, c))


def div(ty, mods, out_ty):
    """Floating-Point: div."""
    return lambda a, b: (a / b).astype(a.dtype)


def _minmax(fn):
    def make(ty, mods, out_ty):
        nanp = "NaN" in mods

        def f(a, b):
            # PTX min/max.f32: if one input is NaN the other is returned (unless .NaN)
            if nanp:
                return fn(a, b)
            r = np.where(np.isnan(a), b, np.where(np.isnan(b), a, fn(a, b)))
            return r.astype(a.dtype)
        return f
    return make


minimum = _minmax(np.minimum)
minimum.__doc__ = "Floating-Point: min."
maximum = _minmax(np.maximum)
maximum.__doc__ = "Floating-Point: max."


def copysign(ty, mods, out_ty):
    """Floating-Point: copysign (the sign of a, the magnitude of b)."""
    return lambda a, b: np.copysign(b, a).astype(b.dtype)


def _unary(fn, name):
    def make(ty, mods, out_ty):
        return lambda a: fn(a).astype(a.dtype)
    make.__doc__ = f"Floating-Point: {name}."
    return make


rcp = _unary(lambda a: 1 / a, "rcp")
sqrt = _unary(np.sqrt, "sqrt")
rsqrt = _unary(lambda a: 1 / np.sqrt(a), "rsqrt")
ex2 = _unary(np.exp2, "ex2")
lg2 = _unary(np.log2, "lg2")
sin = _unary(np.sin, "sin")
cos = _unary(np.cos, "cos")
tanh = _unary(np.tanh, "tanh")


def fma_f64(a, b, c):
    """fma.rn.f64 per lane: the exact product-sum (Fractions) rounded once."""
    out = []
    for x, y, z in zip(a, b, c):
        if not (np.isfinite(x) and np.isfinite(y) and np.isfinite(z)):
            out.append(x * y + z)
        else:
            out.append(float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))))
    return np.array(out, np.float64)


def half_arith(ctx, ins, base, mods, ty):
    """add/sub/mul/fma/neg/abs/min/max on f16, bf16 and their x2 packs: computed in float32 (exact
    for one operation of two 16-bit values) and rounded once to the format."""
    if base not in ("add", "sub", "mul", "fma", "neg", "abs", "min", "max", "mov"):
        raise UnsupportedInstruction(f"`{ins.op}` on {ty} is not modelled")
    pair = ty.endswith("x2")
    bf = ty.startswith("bf16")
    rs = [bits_reader(ctx, s, "b32" if pair else "b16") for s in ins.args[1:]]
    wr = writer(ctx, ins.args[0], "b32" if pair else "b16")

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
    return body


def testp(ctx, ins, base, mods):
    """Floating-Point: testp (finite, infinite, number, notanumber, normal, subnormal)."""
    ty = types(mods)[-1]
    what = mods[0]
    ra = bits_reader(ctx, ins.args[1], ty)
    wr = writer(ctx, ins.args[0], "pred")
    fn = {"finite": np.isfinite, "infinite": np.isinf, "number": lambda v: ~np.isnan(v), "notanumber": np.isnan,
          "normal": lambda v: np.isfinite(v) & (np.abs(v) >= np.finfo(v.dtype).tiny),
          "subnormal": lambda v: (v != 0) & (np.abs(v) < np.finfo(v.dtype).tiny)}[what]
    return lambda w, m: wr(w, fn(ra(w)), m)
