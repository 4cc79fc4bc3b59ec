"""Floating-point arithmetic (PTX ISA, "Floating-Point Instructions" and "Half Precision Floating-Point
Instructions").

Every function here is a semantics `make(ty, mods, out_ty) -> f(*raw_bits) -> raw_bits` for
`arith.arithmetic(floating=...)`: operands arrive as the lanes' raw bits (uint16 for f16/bf16, uint32
for f32, uint64 for f64; an f16x2/bf16x2 instruction runs as two scalar ones) and the result is raw
bits, computed bit for bit by `bwlab.hw.floats` (every rounding mode, `.ftz`, `.sat`, `.relu`,
`.NaN`, `.xorsign.abs`, the GPU's canonical NaNs). The common case - f32/f64 `.rn` without
modifiers - runs through NumPy's IEEE arithmetic directly, and only a vector whose result holds a
NaN goes the exact way (for the GPU's NaN rules).

The `.approx` instructions (`ex2 lg2 rcp rsqrt sqrt sin cos tanh .approx`, `div.approx`,
`div.full`) run as `bwlab.hw.approx` models them: ptxas's SASS around one MUFU operation, the wrapper
exact and the MUFU operation the exact function rounded once. The 16-bit forms (ex2/tanh .f16/.bf16)
are bit-identical (the H200's result for every input, recorded); the f32/f64 forms are not, and their
distance from an H200, measured over every input, is in docs/results/approx_h200.txt (ex2 2 ulp, rcp and
sqrt 1, rsqrt 2, lg2/sin/cos 2 ulp or 2^-22 / 2^-21.4 absolute, tanh 134 ulp, div 2 ulp). A kernel that
uses one is told so when it is loaded (`bwlab.emu.ApproxNote`).
"""
from __future__ import annotations

import numpy as np

from ...hw import approx as ha
from ...hw import floats as hf
from ..errors import UnsupportedInstruction
from .operands import types, writer, bits_reader

__all__ = ["add", "sub", "mul", "mad", "fma", "div", "minimum", "maximum", "abs_", "neg", "copysign",
           "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh", "testp", "rounding", "BITS", "NP"]

BITS = {"f16": "b16", "bf16": "b16", "f32": "b32", "f64": "b64", "f16x2": "b32", "bf16x2": "b32"}
NP = {"f32": (np.float32, np.uint32), "f64": (np.float64, np.uint64)}
_CANON = {"f32": np.uint32(0x7FFFFFFF), "f16": np.uint16(0x7FFF), "bf16": np.uint16(0x7FFF)}


def rounding(mods, default="rn"):
    return next((m for m in mods if m in hf.RND), default)


def _flags(ty, mods):
    return rounding(mods), "ftz" in mods, "sat" in mods


def _fast(np_op, exact, ty, mods, n):
    """f32/f64 .rn without .ftz/.sat: NumPy's IEEE result; a vector with a NaN result goes `exact`."""
    rnd, ftz, sat = _flags(ty, mods)
    if ty not in NP or rnd != "rn" or ftz or sat:
        return lambda *xs: exact(*xs, ty, rnd=rnd, ftz=ftz, sat=sat)
    fdt, udt = NP[ty]

    # (no errstate here: a launch runs under errstate(all="ignore") already, and the values do not depend on it)
    if n == 2:
        def f2(x, y):
            out = np_op(x.view(fdt), y.view(fdt))
            if np.isnan(out).any():
                return exact(x, y, ty)
            return out.view(udt)
        return f2

    def f(*xs):
        out = np_op(*[x.view(fdt) for x in xs])
        if np.isnan(out).any():
            return exact(*xs, ty)
        return out.view(udt)
    return f


def add(ty, mods, out_ty):
    """Floating-Point: add{.rnd}{.ftz}{.sat}."""
    return _fast(np.add, hf.add, ty, mods, 2)


def sub(ty, mods, out_ty):
    """Floating-Point: sub{.rnd}{.ftz}{.sat}."""
    return _fast(np.subtract, hf.sub, ty, mods, 2)


def mul(ty, mods, out_ty):
    """Floating-Point: mul{.rnd}{.ftz}{.sat}."""
    return _fast(np.multiply, hf.mul, ty, mods, 2)


_M29, _H28, _TINY = np.uint64((1 << 29) - 1), np.uint64(1 << 28), 2.0 ** -126
_U52, _E11, _E897, _E1149 = np.uint64(52), np.uint64(0x7FF), np.uint64(897), np.uint64(2046 - 897)


def _fma_f32_rn(a, b, c):
    """fma.rn.f32 through float64: the product of two f32 is exact, the sum rounds once to f64, and
    rounding that to f32 is the single rounding of the exact value unless the f64 sum was itself rounded
    and sits exactly on an f32 midpoint (or lies in f32's subnormal range, or is a NaN): those vectors take
    the exact path. An f64 sum on a midpoint that is exact (TwoSum's error is 0, as when the addends'
    exponents are close) rounds once, correctly; an exact zero keeps IEEE's sign rule in f64 as in f32."""
    # (no errstate here: a launch runs under errstate(all="ignore") already, and the values do not depend on it)
    p = a.view(np.float32).astype(np.float64) * b.view(np.float32)
    cc = c.view(np.float32).astype(np.float64)
    s = p + cc
    r = s.astype(np.float32)
    u = s.view(np.uint64)
    mid = (u & _M29) == _H28
    # s's exponent field outside [897, 2046]: below 2^-126 (zero included), or infinite or NaN
    odd = ((u >> _U52) & _E11) - _E897 > _E1149
    if not (mid | odd).any():
        return r.view(np.uint32)                      # the common case: every lane an ordinary number
    if mid.any():
        bb = s - p
        err = (p - (s - bb)) + (cc - bb)              # TwoSum: s + err == p + cc exactly
        if (mid & (err != 0)).any():
            return hf.fma(a, b, c, "f32")
    # a NaN or a sum below 2^-126 has its exponent field outside [897, 2046]: only with `odd` somewhere
    if odd.any() and (np.isnan(r).any() or ((np.abs(s) < _TINY) & (s != 0)).any()):
        return hf.fma(a, b, c, "f32")
    return r.view(np.uint32)


def fma(ty, mods, out_ty):
    """Floating-Point: fma.rnd{.ftz}{.sat}{.relu} (one rounding)."""
    rnd, ftz, sat = _flags(ty, mods)
    relu = "relu" in mods
    if ty == "f32" and rnd == "rn" and not (ftz or sat or relu):
        return _fma_f32_rn
    return lambda a, b, c: hf.fma(a, b, c, ty, rnd=rnd, ftz=ftz, sat=sat, relu=relu)


def mad(ty, mods, out_ty):
    """Floating-Point: mad.rnd.f32/f64 is fma (PTX ISA: mad with a rounding modifier is fused)."""
    return fma(ty, mods, out_ty)


def div(ty, mods, out_ty):
    """Floating-Point: div.rnd (IEEE, bit-exact); div.approx / div.full: see the module docstring."""
    if "approx" in mods or "full" in mods:
        if ty != "f32":
            raise UnsupportedInstruction(f"div.{'full' if 'full' in mods else 'approx'}.{ty}: the PTX ISA has "
                                         "these for .f32 only")
        full, ftz = "full" in mods, "ftz" in mods
        return lambda a, b: ha.div(a, b, full=full, ftz=ftz)
    return _fast(np.divide, hf.div, ty, mods, 2)


def _minmax(fn):
    def make(ty, mods, out_ty):
        nan, xs, ftz = "NaN" in mods, "xorsign" in mods, "ftz" in mods
        return lambda a, b: fn(a, b, ty, nan=nan, xorsign_abs=xs, ftz=ftz)
    return make


minimum = _minmax(hf.fmin)
minimum.__doc__ = "Floating-Point: min{.ftz}{.NaN}{.xorsign.abs} (-0 < +0; one NaN gives the other operand)."
maximum = _minmax(hf.fmax)
maximum.__doc__ = "Floating-Point: max{.ftz}{.NaN}{.xorsign.abs}."


def abs_(ty, mods, out_ty):
    """Floating-Point: abs{.ftz}."""
    ftz = "ftz" in mods
    return lambda a: hf.abs_(a, ty, ftz=ftz)


def neg(ty, mods, out_ty):
    """Floating-Point: neg{.ftz}."""
    ftz = "ftz" in mods
    return lambda a: hf.neg(a, ty, ftz=ftz)


def copysign(ty, mods, out_ty):
    """Floating-Point: copysign d, a, b (the sign of a, the magnitude of b)."""
    return lambda a, b: hf.copysign(a, b, ty)


def rcp(ty, mods, out_ty):
    """Floating-Point: rcp.rnd (IEEE, bit-exact); rcp.approx: see the module docstring."""
    if "approx" in mods:
        return _approx("rcp", ty, mods)
    rnd, ftz, _ = _flags(ty, mods)
    return lambda a: hf.rcp(a, ty, rnd=rnd, ftz=ftz)


def sqrt(ty, mods, out_ty):
    """Floating-Point: sqrt.rnd (IEEE, bit-exact); sqrt.approx: see the module docstring."""
    if "approx" in mods:
        return _approx("sqrt", ty, mods)
    rnd, ftz, sat = _flags(ty, mods)
    return lambda a: hf.sqrt(a, ty, rnd=rnd, ftz=ftz, sat=sat)


# the PTX ISA's approximate forms: instruction -> the types it has
_APPROX_TYPES = {"ex2": ("f32", "f16", "bf16"), "tanh": ("f32", "f16", "bf16"), "rcp": ("f32", "f64"),
                 "rsqrt": ("f32", "f64"), "sqrt": ("f32",), "lg2": ("f32",), "sin": ("f32",), "cos": ("f32",)}


def _approx(op, ty, mods):
    """`<op>.approx` as bwlab.hw.approx models it (see the module docstring)."""
    if ty not in _APPROX_TYPES[op]:
        raise UnsupportedInstruction(f"{op}.approx.{ty}: the PTX ISA has {op}.approx for "
                                     f"{', '.join('.' + t for t in _APPROX_TYPES[op])} only")
    ftz = "ftz" in mods
    if ty == "f32":
        return lambda a: ha.f32(op, a, ftz=ftz)
    if ty == "f64" and op == "rsqrt" and not ftz:
        return _rsqrt_f64_exact
    if ty == "f64":
        return lambda a: ha.f64(op, a)
    if ha.table16(op, ty, np.zeros(1, np.uint16)) is None:
        raise UnsupportedInstruction(f"{op}.approx.{ty}: the H200's table (docs/results/approx/approx16_h200.npz) "
                                     "is missing")
    return lambda a: ha.table16(op, ty, a)


def _rsqrt_f64_exact(a):
    """rsqrt.approx.f64 (without .ftz; what CUDA's rsqrt(double) compiles to): ptxas refines the unit's
    high-word estimate to the full f64 result. An H200 gave 1/sqrt(x) correctly rounded for every one of
    66 positive inputs (subnormals to 1e300) of the outside corpus's math_double, and for the rest: +-0 ->
    +-inf, +inf -> +0, x < 0 and -inf -> 0xfff8000000000000, a NaN -> itself quieted. Computed exactly
    (80 decimal digits, one rounding to f64: 1/sqrt of an f64 is never an f64 midpoint)."""
    from decimal import Decimal, localcontext
    bits = np.asarray(a, np.uint64)
    x = bits.view(np.float64)
    out = np.empty_like(bits)
    with localcontext() as c:
        c.prec = 80
        for i, (b, v) in enumerate(zip(bits.tolist(), x.tolist())):
            if v != v:
                out[i] = b | (1 << 51)
            elif v == 0:
                out[i] = 0xFFF0000000000000 if b >> 63 else 0x7FF0000000000000
            elif v < 0:
                out[i] = 0xFFF8000000000000
            elif v == float("inf"):
                out[i] = 0
            else:
                out[i] = np.float64(float(1 / Decimal(v).sqrt())).view(np.uint64)
    return out


def _approx_unary(op):
    def make(ty, mods, out_ty):
        return _approx(op, ty, mods)
    make.__doc__ = f"Floating-Point: {op}.approx (bwlab.hw.approx: see the module docstring)."
    return make


rsqrt = _approx_unary("rsqrt")
ex2 = _approx_unary("ex2")
lg2 = _approx_unary("lg2")
sin = _approx_unary("sin")
cos = _approx_unary("cos")
tanh = _approx_unary("tanh")


def testp(ctx, ins, base, mods):
    """Floating-Point: testp (finite, infinite, number, notanumber, normal, subnormal)."""
    ty = types(mods)[-1]
    what = mods[0]
    ra = bits_reader(ctx, ins.args[1], BITS[ty])
    wr = writer(ctx, ins.args[0], "pred")
    return lambda w, m: wr(w, hf.testp(ra(w), ty, what), m)


def atomic_add(ty, mods):
    """The arithmetic of atom/red.add on a float type: f(old, b) -> new, NumPy scalars of the memory's
    dtype. atom.add.f32 rounds to nearest and flushes subnormal inputs and results in global memory
    (PTX ISA, atom; H200) but keeps them in shared memory (H200: atom.shared.add.f32); .f64 rounds to
    nearest and returns a NaN operand as it is (not quieted); .noftz.f16/.bf16 and their x2 pairs keep subnormals (each half separately)."""
    scalar = ty[:-2] if ty.endswith("x2") else ty
    bits = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32, "f64": np.uint64}[scalar]
    ftz = ty == "f32" and not any(m.startswith("shared") for m in mods)

    def f(old, b):
        dt = np.asarray(old).dtype
        x = np.asarray([old], dt).view(bits if not ty.endswith("x2") else np.uint32)
        y = np.asarray([b]).astype(dt).view(x.dtype)
        if ty.endswith("x2"):
            r = hf.packed2(hf.add, x, y, typ=scalar)
        elif scalar == "f64" and (np.isnan(x.view(np.float64)) | np.isnan(y.view(np.float64))).any():
            # a NaN operand comes back unchanged, a signaling one not quieted (H200: memory sNaN + 1.5 and
            # 1.5 + operand sNaN both left 0x7ff0000000000001); two NaNs: the memory's (not measured)
            r = x if np.isnan(x.view(np.float64)).any() else y
        else:
            r = hf.add(x, y, scalar, ftz=ftz)
        return np.asarray(r).astype(x.dtype).view(dt)[0]
    return f
