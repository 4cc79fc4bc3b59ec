"""The formats (widths, how each spells inf and NaN), the rounding modifiers' names, and decoding raw bits
to sign, class, significand and exponent."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


RND = ("rn", "rna", "rz", "rm", "rp")
IRND = ("rni", "rzi", "rmi", "rpi")

# f64 NaN results (H200 recordings): an f64 operation with a NaN operand returns that NaN (quieted); one
# whose NaN is generated (0*inf, inf-inf, 0/0, sqrt(-1)) returns F64_NAN, sign bit set.
F64_NAN = 0xFFF8000000000000


@dataclass(frozen=True)
class FloatFormat:
    """One binary floating-point format: widths, and how it spells inf and NaN.

    `nan`: 'ieee' (all-ones exponent: inf if mantissa 0 else NaN), 'e4m3' (only S.1111.111 is NaN, no
    inf), 'none' (every code is finite). `shift` places the code in its storage (tf32: 13)."""
    name: str
    ebits: int
    mbits: int
    nan: str
    storage: type
    canon_nan: int | None
    shift: int = 0

    @property
    def width(self) -> int:
        return 1 + self.ebits + self.mbits

    @property
    def bias(self) -> int:
        return (1 << (self.ebits - 1)) - 1

    @property
    def emin(self) -> int:
        return 1 - self.bias

    @property
    def max_code(self) -> int:
        """The largest finite magnitude, as a code (sign bit clear)."""
        allones = (1 << (self.ebits + self.mbits)) - 1
        if self.nan == "ieee":
            return allones - (1 << self.mbits)
        if self.nan == "e4m3":
            return allones - 1
        return allones

    @property
    def inf_code(self) -> int | None:
        return ((1 << self.ebits) - 1) << self.mbits if self.nan == "ieee" else None


FORMATS = {f.name: f for f in (
    FloatFormat("f64", 11, 52, "ieee", np.uint64, F64_NAN),
    FloatFormat("f32", 8, 23, "ieee", np.uint32, 0x7FFFFFFF),
    FloatFormat("tf32", 8, 10, "ieee", np.uint32, 0x7FFFFFFF >> 13, shift=13),
    FloatFormat("f16", 5, 10, "ieee", np.uint16, 0x7FFF),
    FloatFormat("bf16", 8, 7, "ieee", np.uint16, 0x7FFF),
    FloatFormat("e5m2", 5, 2, "ieee", np.uint8, 0x7F),
    FloatFormat("e4m3", 4, 3, "e4m3", np.uint8, 0x7F),
    FloatFormat("e3m2", 3, 2, "none", np.uint8, None),
    FloatFormat("e2m3", 2, 3, "none", np.uint8, None),
    FloatFormat("e2m1", 2, 1, "none", np.uint8, None),
)}
_INTS = {f"{k}{w}": (k == "s", w) for k in "su" for w in (8, 16, 32, 64)}
_UDT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_U64 = np.uint64


def fmt(name: str) -> FloatFormat:
    try:
        return FORMATS[name]
    except KeyError:
        raise ValueError(f"{name!r} is not a float type this module models "
                         f"(float types: {', '.join(FORMATS)}, ue8m0)") from None


def _check_rnd(rnd, allowed, what):
    if rnd not in allowed:
        raise ValueError(f"{what}: rounding modifier .{rnd} is not allowed here "
                         f"(PTX allows {', '.join('.' + r for r in allowed)})")


def _bits(x, f: FloatFormat):
    a = np.asarray(x)
    if a.dtype.kind not in "ui":
        raise TypeError(f"{f.name} operands are raw bits in an unsigned integer array, got {a.dtype}")
    return a.astype(f.storage)


# ---------------------------------------------------------------- decoding


def _fields(bits, f: FloatFormat):
    """(negative, magnitude code) of raw bits, codes as uint64."""
    b = np.asarray(bits).astype(np.uint64) >> _U64(f.shift)
    w = f.width
    neg = ((b >> _U64(w - 1)) & _U64(1)).astype(bool)
    mag = b & _U64((1 << (w - 1)) - 1)
    return neg, mag


def _classify(mag, f: FloatFormat):
    """(is_nan, is_inf) of magnitude codes."""
    if f.nan == "ieee":
        inf = mag == _U64(f.inf_code)
        nan = mag > _U64(f.inf_code)
    elif f.nan == "e4m3":
        inf = np.zeros(mag.shape, bool)
        nan = mag == _U64(0x7F)
    else:
        inf = np.zeros(mag.shape, bool)
        nan = np.zeros(mag.shape, bool)
    return nan, inf


def _sig_exp(mag, f: FloatFormat):
    """Finite magnitude codes as integer significand and exponent: value = sig * 2**exp."""
    e = (mag >> _U64(f.mbits)).astype(np.int64)
    m = mag & _U64((1 << f.mbits) - 1)
    normal = e > 0
    sig = np.where(normal, m | _U64(1 << f.mbits), m)
    exp = np.where(normal, e, 1) - f.bias - f.mbits
    return sig.astype(np.uint64), exp.astype(np.int64)


def to_f64(bits, src: str) -> np.ndarray:
    """The exact value of raw bits as float64 (every format here fits in f64 exactly)."""
    f = fmt(src)
    if f.name == "f64":
        return np.asarray(bits).astype(np.uint64).view(np.float64)
    with np.errstate(invalid="ignore"):                       # signalling NaNs: only their class matters here
        if f.name in ("f32", "tf32"):
            return np.asarray(bits).astype(np.uint32).view(np.float32).astype(np.float64)
        if f.name == "f16":
            return np.asarray(bits).astype(np.uint16).view(np.float16).astype(np.float64)
        if f.name == "bf16":
            return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    neg, mag = _fields(bits, f)
    nan, inf = _classify(mag, f)
    sig, exp = _sig_exp(mag, f)
    v = np.ldexp(sig.astype(np.float64), exp.astype(np.int32))
    v = np.where(inf, np.inf, np.where(nan, np.nan, v))
    return np.where(neg, -v, v)
