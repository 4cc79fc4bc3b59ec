"""The approximate instructions: what ptxas makes of them, and how close the emulator gets to the GPU.

PTX ISA: `ex2`, `lg2`, `rcp`, `rsqrt`, `sqrt`, `sin`, `cos`, `tanh` `.approx`, `div.approx`, `div.full`. The
ISA gives only error bounds; the hardware behind them is the SM's multi-function unit (MUFU). On sm_90a ptxas
turns each instruction into one MUFU operation, which flushes subnormal inputs and results, and for the forms
without `.ftz` wraps it in exact scalings (read from `cuobjdump -sass` of cuda_src/approx_probe.cu):

| PTX                      | SASS around the MUFU operation                                                     |
|--------------------------|------------------------------------------------------------------------------------|
| ex2.approx.f32           | x < -126: MUFU.EX2(x * 0.5) squared (FMUL), else MUFU.EX2(x)                        |
| lg2.approx.f32           | |x| < 2^-126: MUFU.LG2(x * 2^24) - 24, else MUFU.LG2(x)                              |
| rcp.approx.f32           | s = 2^24 if |x| < 2^-126, 0.25 if |x| > 2^126, else 1: s * MUFU.RCP(x * s)          |
| rsqrt.approx.f32         | |x| < 2^-126: MUFU.RSQ(x * 2^24) * 2^12                                             |
| sqrt.approx.f32          | |x| < 2^-126: MUFU.SQRT(x * 2^24) * 2^-12                                           |
| sin/cos.approx{.ftz}.f32 | MUFU.SIN/COS(x * f32(1/(2 pi)) rounded toward zero): the unit works in turns         |
| div.approx{.ftz}.f32     | a * MUFU.RCP(b) (non-.ftz: both scaled by 2^24 when |b| < 2^-126)                   |
| div.full{.ftz}.f32       | as div.approx, and both scaled by 0.25 when |b| > 2^126                              |
| rcp/rsqrt.approx.ftz.f64 | MUFU.RCP64H/RSQ64H of the high word; the result's low word is 0                      |
| ex2/tanh .f16/.bf16(x2)  | MUFU.EX2.F16/BF16, MUFU.TANH.F16/BF16 per half                                       |

The `.ftz` f32 forms and tanh.approx.f32 are the bare MUFU operation. The emulator computes the wrappers
exactly and each f32/f64 MUFU operation as the exact function of the (flushed) input rounded once to
nearest. That rule and the H200 were compared on every input (all 2^32 f32 codes; every f64 high word; 2^32
hashed operand pairs for div): docs/results/approx_h200.txt gives, per instruction, the share that is
bit-identical and the largest distance, which `BOUNDS` holds and the emulator states when a kernel uses
one of these instructions. The 16-bit forms are tables of every input recorded on the H200
(bwlab/hw/data/approx16_h200.npz): there the emulator is bit-exact. Not measured on an sm_100 GPU.
"""
from __future__ import annotations

import json
from functools import lru_cache

import numpy as np

from . import floats as hf
from ..package_data import data_dir

__all__ = ["F32_OPS", "mufu", "f32", "div", "f64", "table16", "bounds", "bound_words"]

F32_OPS = ("ex2", "lg2", "rcp", "rsqrt", "sqrt", "sin", "cos", "tanh")
_MIN_NORMAL = np.float32(2.0 ** -126)
_BIG = np.float32(2.0 ** 126)
_TWO24 = np.float32(16777216.0)
_INV_2PI = np.uint32(0x3E22F983)               # f32(1 / (2 pi)), the constant ptxas multiplies by
_CANON = np.uint32(0x7FFFFFFF)



def _u32(x):
    return np.asarray(x, dtype=np.uint32)


def _ftz(bits):
    """Subnormal f32 codes become zeros of their sign (MUFU's inputs and results)."""
    bits = _u32(bits)
    sub = ((bits & 0x7F800000) == 0) & ((bits & 0x007FFFFF) != 0)
    return np.where(sub, bits & np.uint32(0x80000000), bits)


def _f(bits):
    return _u32(bits).view(np.float32)


def _b(vals):
    return np.asarray(vals, dtype=np.float32).view(np.uint32)


def _mul(a, b):
    """FMUL (round to nearest, subnormals kept, NaN canonical) on f32 codes."""
    a, b = np.broadcast_arrays(_u32(a), _u32(b))
    return hf.mul(a, b, "f32")


def _mul_ftz(a, b):
    a, b = np.broadcast_arrays(_u32(a), _u32(b))
    return hf.mul(a, b, "f32", ftz=True)


def _turns_sin(f):
    """sin(2 pi f) for f in [-1/2, 1/2] in float64, exact at the quarter turns."""
    g = 2.0 * f
    a = np.abs(g)
    a = np.where(a > 0.5, 1.0 - a, a)
    s = np.where(a == 0.0, 0.0, np.sin(np.pi * a))
    return np.where(g < 0, -s, s)


def mufu(op: str, bits) -> np.ndarray:
    """One f32 MUFU operation as the emulator computes it: the exact function of the flushed input, rounded
    once to nearest, flushed; NaN results canonical. `op` names the unit's function (sin/cos take turns)."""
    if op == "tanh":                            # MUFU.TANH keeps subnormal inputs (tanh(x) = x there)
        with np.errstate(all="ignore"):
            r = np.tanh(_f(bits).astype(np.float64))
            return np.where(np.isnan(r), _CANON, _b(r.astype(np.float32)))
    with np.errstate(all="ignore"):
        x = _f(_ftz(bits)).astype(np.float64)
        if op == "ex2":
            r = np.exp2(x)
        elif op == "lg2":
            r = np.log2(x)
        elif op == "rcp":
            r = 1.0 / x
        elif op == "rsqrt":
            r = 1.0 / np.sqrt(x)
        elif op == "sqrt":
            r = np.sqrt(x)
        elif op in ("sin", "cos"):
            f = x - np.rint(x)
            r = _turns_sin(f) if op == "sin" else _turns_sin(0.25 - np.abs(f))
            if op == "sin":                     # a zero result carries the turn's sign
                r = np.where(r == 0.0, np.copysign(0.0, x), r)
            r = np.where(np.isinf(x), np.nan, r)
        else:
            raise ValueError(f"no MUFU operation {op!r}; known: {F32_OPS}")
        out = _b(r.astype(np.float32))
    out = np.where(np.isnan(r), _CANON, out)
    return _ftz(out)


def f32(op: str, bits, ftz: bool = False) -> np.ndarray:
    """`<op>.approx{.ftz}.f32` on f32 codes (uint32), as ptxas's SASS computes it around the MUFU model."""
    if op not in F32_OPS:
        raise ValueError(f"{op}.approx.f32 is not an approximate instruction; known: {F32_OPS}")
    x = _u32(bits)
    if op in ("sin", "cos"):                    # FMUL.RZ by 1/(2 pi), then the unit (turns); .ftz: the same SASS
        t = hf.mul(x, np.full_like(x, _INV_2PI), "f32", rnd="rz")
        return mufu(op, t)
    if ftz or op == "tanh":
        return mufu(op, x)
    xv = _f(x)
    with np.errstate(invalid="ignore"):
        small = ~(np.abs(xv) >= _MIN_NORMAL)   # FSETP.GEU |x|, 2^-126 (false for NaN)
        small &= ~np.isnan(xv)
    if op == "ex2":
        with np.errstate(invalid="ignore"):
            lo = ~(xv >= np.float32(-126.0)) & ~np.isnan(xv)
        h = mufu("ex2", np.where(lo, _mul(x, _b(np.float32(0.5))), x))
        return np.where(lo, _mul(h, h), h)
    if op == "lg2":
        r = mufu("lg2", np.where(small, _mul(x, _b(_TWO24)), x))
        return np.where(small, hf.add(r, np.full_like(r, 0xC1C00000), "f32"), r)
    if op == "rcp":
        with np.errstate(invalid="ignore"):
            s = np.where(np.abs(xv) > _BIG, np.float32(0.25), np.where(small, _TWO24, np.float32(1.0)))
        return _mul(_b(s), mufu("rcp", _mul(x, _b(s))))
    scale = {"rsqrt": np.float32(4096.0), "sqrt": np.float32(2.0 ** -12)}[op]
    r = mufu(op, np.where(small, _mul(x, _b(_TWO24)), x))
    return np.where(small, _mul(r, _b(scale)), r)


def div(a, b, full: bool = False, ftz: bool = False) -> np.ndarray:
    """`div.approx{.ftz}.f32` / `div.full{.ftz}.f32` on f32 codes: a times MUFU.RCP(b), with each form's scalings."""
    a, b = _u32(a), _u32(b)
    bv = _f(b)
    with np.errstate(invalid="ignore"):
        big = np.abs(bv) > _BIG
        small = ~(np.abs(bv) >= _MIN_NORMAL) & ~np.isnan(bv)
    mul = _mul_ftz if ftz else _mul
    if full:
        q = _b(np.where(big, np.float32(0.25), np.float32(1.0)))
        a, b = mul(a, q), mul(b, q)
    if not ftz:
        s = _b(np.where(small, _TWO24, np.float32(1.0)))
        a, b = _mul(a, s), _mul(b, s)
    return mul(mufu("rcp", b), a)


def f64(op: str, bits) -> np.ndarray:
    """`rcp.approx.ftz.f64` / `rsqrt.approx.ftz.f64` on f64 codes (uint64): the unit reads the high word (a
    subnormal is a zero) and writes the high word of the result (a subnormal one flushed); the low word is 0.
    NaN results: 0x7fffffff00000000."""
    if op not in ("rcp", "rsqrt"):
        raise ValueError(f"{op}.approx.ftz.f64 is not a PTX instruction (rcp and rsqrt only)")
    hi = np.asarray(bits, dtype=np.uint64) & np.uint64(0xFFFFFFFF00000000)
    sub = (hi & np.uint64(0x7FF0000000000000)) == 0
    hi = np.where(sub, hi & np.uint64(0x8000000000000000), hi)
    x = hi.view(np.float64)
    with np.errstate(all="ignore"):
        r = 1.0 / x if op == "rcp" else 1.0 / np.sqrt(x)
    out = r.view(np.uint64) & np.uint64(0xFFFFFFFF00000000)
    out = np.where((out & np.uint64(0x7FF0000000000000)) == 0, out & np.uint64(0x8000000000000000), out)
    return np.where(np.isnan(r), np.uint64(0x7FFFFFFF00000000), out)


_TABLES = ("ex2_f16", "ex2_bf16", "tanh_f16", "tanh_bf16")


def _recorded(name):
    return data_dir("results") / "approx" / name


@lru_cache(maxsize=None)
def _tables():
    path = _recorded("approx16_h200.npz")
    if not path.is_file():
        return None
    with np.load(path) as z:
        return {k: z[k].astype(np.uint16) for k in _TABLES}


def table16(op: str, ty: str, bits) -> np.ndarray | None:
    """`ex2.approx.f16`, `ex2.approx.ftz.bf16`, `tanh.approx.f16/.bf16` on 16-bit codes: the H200's result for
    every input (bit-exact). None when the recording is absent."""
    key = f"{op}_{ty}"
    if key not in _TABLES:
        raise ValueError(f"{op}.approx.{ty} has no 16-bit form in the PTX ISA (ex2/tanh .f16/.bf16 only)")
    t = _tables()
    return None if t is None else t[key][np.asarray(bits, dtype=np.uint16)]


@lru_cache(maxsize=None)
def bounds() -> dict:
    """Per instruction (`ex2.approx.f32`, `div.full.ftz.f32`, ...), the distance between the emulator's rule and
    an H200 measured over every input: `ulp` (the largest), `identical` (the share bit-identical), `swept`,
    `abs_beyond_2ulp` (the largest absolute difference where more than 2 ulp apart), `rel` (the largest relative
    difference). Empty when the recording is absent."""
    path = _recorded("approx_bounds_h200.json")
    return json.loads(path.read_text()) if path.is_file() else {}


def _key(op, ty, mods):
    if ty in ("f16", "bf16", "f16x2", "bf16x2"):
        return None
    parts = [op, "full" if "full" in mods else "approx"] + (["ftz"] if "ftz" in mods else []) + [ty]
    return ".".join(parts)


def bound_words(op: str, ty: str, mods=()) -> str:
    """How close the emulator's result of an approximate instruction is to the GPU's, in words."""
    if ty in ("f16", "bf16", "f16x2", "bf16x2"):
        ok = _tables() is not None
        return (f"{op}.approx.{ty}: bit-identical to an H200 (its result for every input, recorded)" if ok else
                f"{op}.approx.{ty}: the exact function rounded once (the H200's table is missing)")
    name = _key(op, ty, mods)
    got = bounds().get(name)
    if got is None:
        return f"{name}: the exact function rounded once (not measured against a GPU)"
    words = f"within {got['ulp']} ulp" + (" of the high word" if ty == "f64" else "")
    if got["ulp"] > 2 and got.get("abs_beyond_2ulp") and op in ("lg2", "sin", "cos"):
        words = f"within 2 ulp or {got['abs_beyond_2ulp']:.3g} absolute"
    return (f"{name}: {words} of an H200 ({100 * got['identical']:.1f} % bit-identical over {got['swept']}), "
            "not bit-identical")
