"""Floating-point arithmetic and conversions bit for bit as the GPU does them, over raw bits.

Every function here takes and returns NumPy arrays of raw bits (uint16 for f16/bf16, uint32 for
f32/tf32, uint64 for f64, uint8 for the 8-, 6- and 4-bit codes, unsigned integers of the type's
width for s8..s64/u8..u64) with PTX's modifiers as arguments, so that an emulator instruction is
"decode the operands, call one function, write the bits".

Rules we follow (PTX ISA 8.x/9.x section numbers; CUDA 13 headers where the ISA leaves a gap;
"H200" marks what the emulator corpus recorded on one, the ISA leaving it to the machine):

* One rounding, always (ISA 9.7.3 "Floating Point Instructions", 9.7.9.21 `cvt`): every result is
  the exact value rounded once to the destination format. The exact value is formed without
  rounding: for f16/bf16/f32 in float64 plus the sign of the error term (TwoSum, Dekker's product:
  error-free transformations), for f64 with Python integers. f64 -> f16/bf16, s64 -> bf16,
  `fma.rn.f16` never pass through f32. Fast paths: f32 `.rn` through NumPy's IEEE float32 (an fma
  whose float64 sum sits on an f32 midpoint goes the exact way), f32 directed modes by one
  `nextafter` step, `.rn` casts among f16/f32/f64/bf16 by NumPy and ml_dtypes.
* Rounding modifiers (ISA 9.7.9.21 table "Floating-point rounding modifiers"): `.rn` nearest-even,
  `.rna` nearest-away (tf32 only), `.rz`, `.rm`, `.rp`; integer rounding `.rni/.rzi/.rmi/.rpi`
  (to an integral value, for float->int and float->float of the same width: `floorf` = `cvt.rmi`).
* Overflow by mode: `.rn/.rna` give inf, `.rz` the largest finite, `.rm/.rp` inf on their side and
  the largest finite on the other. An exact zero sum of opposite signs is +0, -0 under `.rm`.
* `.ftz` (ISA 9.7.3, subnormal numbers) for f32 (and the f16 arithmetic forms that take it):
  subnormal inputs become zeros of their sign, subnormal results after rounding likewise (H200:
  the `-ftz=true` kernels of the corpus match).
* `.sat` clamps a float result to [0.0, 1.0]; a NaN result becomes +0.0. `.relu` (f16/bf16 fma,
  cvt): negative results and -0 become +0 (H200), NaN results the canonical NaN.
* NaN results of f32, f16 and bf16 arithmetic are canonical: 0x7fffffff, 0x7fff, 0x7fff; so are
  `abs`/`neg` of a NaN (H200). f64 arithmetic returns its first NaN operand, quieted, and a NaN it
  generates (0*inf, inf-inf, 0/0, sqrt(-1)) is F64_NAN = 0xfff8000000000000; `neg.f64` leaves a
  NaN as it is; `min/max.f64` of two NaNs return the first (H200).
* NaNs through `cvt` (H200; see `_cvt_nan`): f64 -> f32/f16/bf16 keep the sign and the payload's
  top bits; f32 -> f64 keeps them too, but `cvt.ftz.f64.f32` gives 0x7fffffffe0000000; f16 -> f32
  gives 0x7fffffff, bf16 -> f32 shifts the bits; f32 -> f16/bf16 gives 0x7fff; f32 -> tf32 rounds
  the bits as an integer (.satfinite then takes one tf32 ulp off an all-ones exponent).
* Float -> integer conversions saturate to the destination range (ISA 9.7.9.21: "the result is
  clamped to the destination range by default"). A NaN gives 0x8000000000000000 into 64 bits; into
  32 bits 0 from f32/f16/bf16 but 0x80000000 from f64 (H200).
* `.satfinite` (ISA 9.7.9.21): a finite overflow or an infinity becomes the largest finite of its
  sign; a NaN stays NaN (e4m3/e5m2 0x7f, f16/bf16 canonical).
* The 8-, 6- and 4-bit codes (ISA 5.2.5 "Alternate Floating Point Data Formats"): e4m3 has no inf
  (S.1111.111 is NaN), e2m3/e3m2/e2m1 have neither inf nor NaN (a NaN input converts to +max, as
  cuda_fp4.hpp/cuda_fp6.hpp's host paths do), ue8m0 is an unsigned power of two 2^(code-127) with
  0xff as NaN, converted with `.rz` or `.rp` only, the sign of the input ignored (cuda_fp8.hpp,
  `__nv_cvt_bfloat16raw_to_e8m0`). The e2m1/e2m3/e3m2/ue8m0 conversions exist on sm_100a only and
  are unmeasured: checked against ml_dtypes and those headers.
* `min`/`max` (ISA 9.7.3.10/11): one NaN operand gives the other operand, two give the canonical
  NaN; `.NaN` makes any NaN operand give the canonical NaN; -0 is less than +0 whatever the order;
  `.xorsign.abs` returns the min/max of |a|, |b| with sign(a) xor sign(b).
* `setp` (ISA 9.7.4.1 table "Floating-point comparison operators"): ordered comparisons are false
  with a NaN, the `u` forms true; `.ftz` flushes subnormal f32 inputs first.
* Not here: the `.approx` instructions (ex2, lg2, rcp/rsqrt/sqrt.approx, sin, cos, tanh), `div.full`,
  and `cvt.rs` (stochastic rounding with random bits).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import isqrt

import numpy as np

__all__ = [
    "FloatFormat", "FORMATS", "fmt", "RND", "IRND",
    "to_f64", "from_f64", "round_value",
    "cvt", "cvt_x2", "cvt_from_x2", "packed2",
    "add", "sub", "mul", "fma", "div", "sqrt", "rcp",
    "fmin", "fmax", "abs_", "neg", "copysign", "testp", "setp",
    "F64_NAN",
]

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


# ---------------------------------------------------------------- rounding core


def _bitlen(x):
    x = x.astype(np.uint64).copy()
    n = np.zeros(x.shape, np.int64)
    for s in (32, 16, 8, 4, 2, 1):
        m = (x >> _U64(s)) != 0
        n = np.where(m, n + s, n)
        x = np.where(m, x >> _U64(s), x)
    return n + (x != 0)


def _round_core(neg, sig, exp, sticky, f: FloatFormat, rnd: str, overflow: str = "ieee"):
    """Round value = (sig + (0, 1 if sticky)) * 2**exp, sig < 2**64, to format f.

    `sticky` says the exact value lies strictly between sig and sig+1 (times 2**exp); sig is
    widened to 62 bits first, so the rounding position always lies above the sticky bit.
    `overflow`: 'ieee' (inf or max by mode; e4m3: NaN) or 'satfinite' (max of the sign).
    Returns raw bits in f's storage."""
    neg = np.asarray(neg, bool)
    sig = np.asarray(sig, np.uint64)
    exp = np.asarray(exp, np.int64)
    sticky = np.broadcast_to(np.asarray(sticky, bool), sig.shape)
    zero = (sig == 0) & ~sticky
    n = _bitlen(sig)
    # Normalise to 62+ bits: no information lost, and every shift below is positive.
    up = np.clip(62 - n, 0, 62)
    sig = np.where(zero, sig, sig << up.astype(np.uint64))
    exp = exp - up
    n = np.maximum(n, 62)
    E = exp + n - 1
    lsb = np.maximum(E, f.emin) - f.mbits
    shift = lsb - exp                                          # >= 9
    sh = np.clip(shift, 1, 63).astype(np.uint64)
    big = shift >= 64
    kept = np.where(big, _U64(0), sig >> sh)
    rem = np.where(big, sig, sig & ((_U64(1) << sh) - _U64(1)))
    half = np.where(shift == 64, _U64(1 << 63), _U64(1) << (sh - _U64(1)))
    above_big = shift > 64                                     # half exceeds any 64-bit rem
    gt = np.where(above_big, False, (rem > half) | ((rem == half) & sticky))
    eq = np.where(above_big, False, (rem == half) & ~sticky)
    inexact = (rem != 0) | sticky
    odd = (kept & _U64(1)) == 1
    if rnd == "rn":
        inc = gt | (eq & odd)
    elif rnd == "rna":
        inc = gt | eq
    elif rnd == "rz":
        inc = np.zeros(kept.shape, bool)
    elif rnd == "rm":
        inc = neg & inexact
    elif rnd == "rp":
        inc = ~neg & inexact
    else:
        raise ValueError(f"unknown rounding mode .{rnd}")
    kept = kept + inc.astype(np.uint64)
    base = np.maximum(lsb - (f.emin - f.mbits), 0).astype(np.uint64)
    code = (base << _U64(f.mbits)) + kept
    code = np.where(zero, _U64(0), code)
    over = code > _U64(f.max_code)
    if over.any():
        maxc = _U64(f.max_code)
        if overflow == "satfinite" or f.nan == "none":
            oc = np.full(code.shape, maxc)
        elif f.nan == "e4m3":                                  # no inf: overflow is NaN
            oc = np.full(code.shape, _U64(0x7F))
        else:
            to_inf = {"rn": np.ones(code.shape, bool), "rna": np.ones(code.shape, bool),
                      "rz": np.zeros(code.shape, bool), "rm": neg, "rp": ~neg}[rnd]
            oc = np.where(to_inf, _U64(f.inf_code), maxc)
        code = np.where(over, oc, code)
    return _with_sign(neg, code, f)


def _with_sign(neg, code, f: FloatFormat):
    out = (np.asarray(code, np.uint64) | (np.asarray(neg, bool).astype(np.uint64) << _U64(f.width - 1)))
    return (out << _U64(f.shift)).astype(f.storage)


def _special(f: FloatFormat, kind: str, neg=False):
    """Raw bits of +-inf / +-max / canonical NaN of f, as a scalar uint64."""
    if kind == "nan":
        return int(f.canon_nan if f.canon_nan is not None else f.max_code) << f.shift
    code = f.inf_code if kind == "inf" else f.max_code
    return ((int(neg) << (f.width - 1)) | code) << f.shift


def _f64_parts(x):
    """Finite float64 -> (neg, sig, exp) exactly."""
    b = np.asarray(x, np.float64).view(np.uint64)
    neg, mag = _fields(b, FORMATS["f64"])
    sig, exp = _sig_exp(mag, FORMATS["f64"])
    return neg, sig, exp


def round_value(x, tail, dst: str, rnd: str = "rn", overflow: str = "ieee"):
    """Round the exact value x + t to `dst`, where x is float64 and t is a tiny error term known only
    by its sign `tail` (-1, 0, +1; |t| < half an f64 ulp of x). Infinities and NaNs of x pass as
    the destination's inf / canonical NaN. Returns raw bits."""
    f = fmt(dst)
    x = np.asarray(x, np.float64)
    tail = np.broadcast_to(np.asarray(tail, np.int64), x.shape)
    finite = np.isfinite(x)
    xs = np.where(finite, x, 0.0)
    neg, sig, exp = _f64_parts(xs)
    # x + t as 4*sig +- 1 (times 2**(exp-2)): rounds like x + t for any target of <= 52 bits.
    s4 = (sig << _U64(2))
    s4 = np.where(tail > 0, s4 + _U64(1), np.where(tail < 0, s4 - _U64(1), s4))
    # a negative x with tail > 0 moves toward zero: flip the tail's meaning by the sign
    s4 = np.where(neg & (tail != 0), np.where(tail > 0, s4 - _U64(2), s4 + _U64(2)), s4)
    out = _round_core(neg, s4, exp - 2, False, f, rnd, overflow)
    if not finite.all():
        inf = np.isinf(x)
        if f.inf_code is not None and overflow != "satfinite":
            infb = np.where(x < 0, _U64(_special(f, "inf", True)), _U64(_special(f, "inf")))
        else:
            infb = np.where(x < 0, _U64(_special(f, "max", True)), _U64(_special(f, "max")))
        out = np.where(inf, infb.astype(f.storage), out)
        out = np.where(np.isnan(x), f.storage(_special(f, "nan")), out)
    return out.astype(f.storage)


def from_f64(x, dst: str, rnd: str = "rn", overflow: str = "ieee"):
    """float64 values rounded once to `dst` raw bits."""
    return round_value(x, 0, dst, rnd, overflow)


# ---------------------------------------------------------------- modifiers


def _is_sub(bits, f: FloatFormat):
    _, mag = _fields(bits, f)
    return (mag != 0) & (mag < _U64(1 << f.mbits))


def _ftz(bits, f: FloatFormat):
    """Subnormals -> zero of their sign."""
    b = np.asarray(bits).astype(f.storage)
    neg, _ = _fields(b, f)
    z = _with_sign(neg, np.zeros(b.shape, np.uint64), f)
    return np.where(_is_sub(b, f), z, b).astype(f.storage)


def _check_ftz(ftz, f, what, allow=("f32", "f16")):
    if ftz and f.name not in allow:
        raise ValueError(f"{what}: .ftz applies to {'/'.join('.' + a for a in allow)} only "
                         f"(PTX ISA 9.7.3, 9.7.4), not .{f.name}")


def _sat(bits, f: FloatFormat):
    """.sat: clamp to [0.0, 1.0]; NaN -> +0.0."""
    v = to_f64(bits, f.name)
    one = f.storage(_with_sign(False, np.array((f.bias) << f.mbits, np.uint64), f))
    out = np.where(np.isnan(v) | (v <= 0), f.storage(0), np.where(v >= 1, one, bits))
    return out.astype(f.storage)


def _relu(bits, f: FloatFormat):
    v = to_f64(bits, f.name)
    out = np.where(np.isnan(v), f.storage(_special(f, "nan")), np.where(np.signbit(v), f.storage(0), bits))
    return out.astype(f.storage)


def _finish(out, f, ftz=False, sat=False, relu=False):
    if ftz:
        out = _ftz(out, f)
    if sat:
        out = _sat(out, f)
    if relu:
        out = _relu(out, f)
    return out.astype(f.storage)


# ---------------------------------------------------------------- exact helpers (error-free)


def _two_sum(a, b):
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    return s, err


def _split(a):
    c = 134217729.0 * a
    hi = c - (c - a)
    return hi, a - hi


def _two_prod(a, b):
    p = a * b
    ah, al = _split(a)
    bh, bl = _split(b)
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _sign(x):
    return np.sign(np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)).astype(np.int64)


# ---------------------------------------------------------------- f64: exact with integers


def _exact_parts(bits):
    """f64 raw bits -> Python (neg, sig, exp) per element (finite only)."""
    neg, mag = _fields(bits, FORMATS["f64"])
    sig, exp = _sig_exp(mag, FORMATS["f64"])
    return [(bool(n), int(s), int(e)) for n, s, e in zip(neg.ravel(), sig.ravel(), exp.ravel())]


def _pack62(M: int, e: int):
    """A Python integer magnitude M * 2**e as (sig <= 64 bits, exp, sticky)."""
    n = M.bit_length()
    if n <= 62:
        return M, e, False
    d = n - 62
    return M >> d, e + d, (M & ((1 << d) - 1)) != 0


def _round_exact(items, f, rnd, overflow="ieee"):
    """items: list of (neg, M, e, sticky) Python ints -> raw bits array."""
    neg = np.array([i[0] for i in items], bool)
    sig, exp, st = [], [], []
    for _, M, e, s in items:
        a, b, c = _pack62(M, e)
        sig.append(a)
        exp.append(b)
        st.append(c or s)
    return _round_core(neg, np.array(sig, np.uint64), np.array(exp, np.int64), np.array(st, bool),
                       f, rnd, overflow)


def _f64_exact_op(op, args, rnd):
    """Directed-mode / fma f64 arithmetic on finite operands, element by element with integers."""
    f = FORMATS["f64"]
    parts = [_exact_parts(a) for a in args]
    items = []
    for ps in zip(*parts):
        if op in ("add", "fma"):
            if op == "add":
                (na, sa, ea), (nb, sb, eb) = ps
            else:
                (n1, s1, e1), (n2, s2, e2), (nb, sb, eb) = ps
                na, sa, ea = n1 ^ n2, s1 * s2, e1 + e2
            e = min(ea, eb)
            v = (-1) ** na * (sa << (ea - e)) + (-1) ** nb * (sb << (eb - e))
            if v == 0:
                # an exact zero: both addends zeros of one sign keep it, else +0 (-0 under .rm)
                zneg = na if (sa == 0 and sb == 0 and na == nb) else (rnd == "rm")
                items.append((zneg, 0, 0, False))
            else:
                items.append((v < 0, abs(v), e, False))
        elif op == "mul":
            (na, sa, ea), (nb, sb, eb) = ps
            items.append((na ^ nb, sa * sb, ea + eb, False))
        elif op == "div":
            (na, sa, ea), (nb, sb, eb) = ps
            if sa == 0:
                items.append((na ^ nb, 0, 0, False))
                continue
            k = max(0, 64 + sb.bit_length() - sa.bit_length())
            q, r = divmod(sa << k, sb)
            items.append((na ^ nb, q, ea - eb - k, r != 0))
        elif op == "sqrt":
            ((na, sa, ea),) = ps
            if sa == 0:
                items.append((na, 0, 0, False))
                continue
            if ea % 2:
                sa, ea = sa << 1, ea - 1
            k = max(0, 64 - sa.bit_length() // 2 + 2)
            M = sa << (2 * k)
            r = isqrt(M)
            items.append((False, r, (ea - 2 * k) // 2, r * r != M))
        else:  # pragma: no cover
            raise ValueError(op)
    return _round_exact(items, f, rnd)


# ---------------------------------------------------------------- arithmetic


_ARITH = ("f16", "bf16", "f32", "f64")


def _prep(what, typ, rnd, ftz, arrays, allowed=RND[:1] + RND[2:]):
    if typ not in _ARITH:
        raise ValueError(f"{what}: type .{typ} not supported (PTX: .f16, .bf16, .f32, .f64)")
    f = FORMATS[typ]
    _check_rnd(rnd, allowed, f"{what}.{typ}")
    _check_ftz(ftz, f, what)
    bs = [_bits(a, f) for a in arrays]
    if ftz:
        bs = [_ftz(b, f) for b in bs]
    return f, bs


def _f32_midpoint(s):
    """Where float64 s lies exactly halfway between two adjacent f32 values (normal or subnormal)."""
    u = np.asarray(s, np.float64).view(np.uint64)
    E = ((u >> _U64(52)) & _U64(0x7FF)).astype(np.int64) - 1023
    m = (u & _U64((1 << 52) - 1)) | _U64(1 << 52)
    shift = np.clip(29 + np.maximum(0, -126 - E), 1, 63).astype(np.uint64)
    return (m & ((_U64(1) << shift) - _U64(1))) == (_U64(1) << (shift - _U64(1)))


def _round_f32(x, tail, rnd):
    """round_value(x, tail, 'f32', rnd) through NumPy: r = RN(x) as float32, then one step of nextafter
    where the exact value x + t lies on the wrong side of r for a directed mode. x - r is exact in
    float64 (both lie within one f32 ulp), so the side is sign(x - r), or sign(t) when x == r."""
    x = np.asarray(x, np.float64)
    tail = np.broadcast_to(np.asarray(tail, np.int64), x.shape)
    with np.errstate(over="ignore"):
        r = x.astype(np.float32)
    if rnd == "rn":
        if np.any(tail != 0):
            return round_value(x, tail, "f32", rnd)             # ties decided by t: the exact path
        out = r.view(np.uint32)
    else:
        fin = np.isfinite(x)
        d = np.where(fin & np.isfinite(r), x - r.astype(np.float64), 0.0)
        side = np.where(d != 0, np.sign(d), tail).astype(np.int64)            # sign(exact - r)
        side = np.where(fin & np.isinf(r), -np.sign(r).astype(np.int64), side)  # overflowed: exact is inside
        if rnd == "rz":
            step = (side * np.where(np.signbit(r), 1, -1) > 0) & (r != 0)   # exact nearer zero than r
            nr = np.nextafter(r, np.float32(0))
        elif rnd == "rm":
            step = side < 0
            nr = np.nextafter(r, np.float32(-np.inf))
        elif rnd == "rp":
            step = side > 0
            nr = np.nextafter(r, np.float32(np.inf))
        else:
            return round_value(x, tail, "f32", rnd)
        out = np.where(step, nr, r).view(np.uint32)
    return np.where(np.isnan(x), np.uint32(0x7FFFFFFF), out).astype(np.uint32)


def _fast_f32(op, bs, ftz):
    """f32 .rn through NumPy's IEEE float32 (and, for fma, an exact f64 product plus TwoSum, with the
    rare f32 midpoints of the f64 sum rounded by the exact path). None where it does not apply."""
    f = FORMATS["f32"]
    v = [b.view(np.float32) for b in bs]
    if op == "add":
        r = v[0] + v[1]
    elif op == "mul":
        r = v[0] * v[1]
    elif op == "div":
        r = v[0] / v[1]
    elif op == "sqrt":
        r = np.sqrt(v[0])
    elif op == "fma":
        a, b, c = (x.astype(np.float64) for x in v)
        p = a * b
        x, err = _two_sum(p, c)
        bad = (err != 0) & np.isfinite(x) & _f32_midpoint(x)
        if bad.any():
            return None
        zero = (x == 0) & (err == 0) & np.isfinite(p)
        both = (p == 0) & (c == 0) & (np.signbit(p) == np.signbit(c))
        x = np.where(zero, np.where(both & np.signbit(p), -0.0, 0.0), x)
        r = x.astype(np.float32)
    else:
        return None
    out = np.where(np.isnan(r), np.uint32(f.canon_nan), r.view(np.uint32))
    return _ftz(out, f) if ftz else out.astype(np.uint32)


def _f64_nan(out, r, operands):
    """NaN results of f64 arithmetic: the first NaN operand, quieted; else the generated F64_NAN."""
    quiet = _U64(1 << 51)
    nan_out = np.full(out.shape, _U64(F64_NAN))
    for b in reversed(operands):
        b = np.asarray(b, np.uint64)
        nan_out = np.where(np.isnan(b.view(np.float64)), b | quiet, nan_out)
    return np.where(np.isnan(r), nan_out, out).astype(np.uint64)


def _fma_f64_rn(a, b, c):
    """fma.rn.f64 in float64 arithmetic (Boldo and Melquiond, "Emulation of a FMA and correctly
    rounded sums: proved algorithms using rounding to odd", IEEE TC 2008): a*b = uh + ul exactly,
    c + uh = th + tl exactly, then RN(th + RO(tl + ul)) is fma's one rounding. Dekker's product is
    exact only away from overflow and underflow: elements outside a safe range return as `None`
    in the mask (False) and take the integer path."""
    x, y, z = (np.asarray(v, np.uint64).view(np.float64) for v in (a, b, c))
    ex = lambda v: ((np.asarray(v).view(np.uint64) >> _U64(52)) & _U64(0x7FF)).astype(np.int64) - 1023  # noqa
    ea, eb, ec = ex(x), ex(y), ex(z)
    safe = ((np.abs(ea) < 400) | (x == 0)) & ((np.abs(eb) < 400) | (y == 0)) & ((np.abs(ec) < 800) | (z == 0))
    safe &= (x == 0) | (y == 0) | (np.abs(ea + eb) < 800)
    xs, ys, zs = (np.where(safe, v, 0.0) for v in (x, y, z))
    uh, ul = _two_prod(xs, ys)
    ul = np.where(uh == 0, 0.0, ul)
    th, tl = _two_sum(zs, uh)
    v, e = _two_sum(tl, ul)
    even = (v.view(np.uint64) & _U64(1)) == 0
    bump = (e != 0) & even
    v = np.where(bump, np.nextafter(v, np.where(e > 0, np.inf, -np.inf)), v)
    r = th + v
    # zeros: an exact zero sum is +0 (-0 when both addends are -0), as IEEE's RN
    p0 = xs * ys
    zero = (r == 0) & (uh == 0) & (zs == 0)
    r = np.where(zero, np.where(np.signbit(p0) & np.signbit(zs), -0.0, 0.0), r)
    return r.view(np.uint64), safe


def _arith(op, typ, arrays, rnd, ftz, sat, relu=False):
    f, bs = _prep(op, typ, rnd, ftz, arrays)
    bs = np.broadcast_arrays(*bs)
    if typ == "f64" and op == "fma" and rnd == "rn" and not sat:
        with np.errstate(all="ignore"):
            r, safe = _fma_f64_rn(*bs)
            if safe.all():
                return r
    if typ == "f32" and rnd == "rn" and not sat:
        with np.errstate(all="ignore"):
            out = _fast_f32(op, bs, ftz)
        if out is not None:
            return out
    vals = [to_f64(b, typ) for b in bs]
    with np.errstate(all="ignore"):
        if typ == "f64" and (rnd != "rn" or op == "fma"):
            if op == "add":
                r = vals[0] + vals[1]
            elif op == "mul":
                r = vals[0] * vals[1]
            elif op == "fma":
                r = vals[0] * vals[1] + vals[2]
            elif op == "div":
                r = vals[0] / vals[1]
            else:
                r = np.sqrt(vals[0])
            fin = np.all([np.isfinite(v) for v in vals], axis=0)
            if op == "div":
                fin &= vals[1] != 0
            if op == "sqrt":
                fin &= vals[0] >= 0
            out = np.zeros(r.shape, np.uint64)
            if fin.any():
                out[fin] = _f64_exact_op(op, [b[fin] for b in bs], rnd)
            spec = ~fin
            if spec.any():
                out[spec] = r[spec].view(np.uint64)
            out = _f64_nan(out, r, bs)
            return _finish(out, f, sat=sat)
        if typ == "f64":
            r = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b,
                 "div": lambda a, b: a / b, "sqrt": np.sqrt}[op](*vals)
            out = _f64_nan(r.view(np.uint64), r, bs)
            return _finish(out, f, sat=sat)
        # f16 / bf16 / f32: the exact result is x + t in float64 (see module docstring)
        if op == "add":
            a, b = vals
            x, err = _two_sum(a, b)
            zero_sum = (x == 0) & (err == 0)
            same = np.signbit(a) == np.signbit(b)
            zsign = np.where((a == 0) & (b == 0) & same, np.signbit(a), rnd == "rm")
            x = np.where(zero_sum, np.where(zsign, -0.0, 0.0), x)
            tail = _sign(err)
        elif op == "mul":
            x = vals[0] * vals[1]
            tail = 0
        elif op == "fma":
            a, b, c = vals
            p = a * b                                          # exact: at most 2*24 bits
            x, err = _two_sum(p, c)
            zero_sum = (x == 0) & (err == 0)
            same = np.signbit(p) == np.signbit(c)
            zsign = np.where((p == 0) & (c == 0) & same, np.signbit(p), rnd == "rm")
            x = np.where(zero_sum & np.isfinite(p), np.where(zsign, -0.0, 0.0), x)
            tail = np.where(np.isfinite(x), _sign(err), 0)
        elif op == "div":
            a, b = vals
            x = a / b
            ok = np.isfinite(x) & (x != 0) & np.isfinite(a)
            xs = np.where(ok, x, 1.0)
            bs_ = np.where(ok, b, 1.0)
            as_ = np.where(ok, a, 1.0)
            p, e = _two_prod(xs, bs_)
            d = as_ - p                                        # exact (Sterbenz)
            r = np.sign(d - e) * np.sign(bs_)                  # sign of a/b - x
            tail = np.where(ok, r, 0).astype(np.int64)
        elif op == "sqrt":
            (a,) = vals
            x = np.sqrt(a)
            ok = np.isfinite(x) & (x > 0)
            xs = np.where(ok, x, 1.0)
            as_ = np.where(ok, a, 1.0)
            p, e = _two_prod(xs, xs)
            d = as_ - p
            tail = np.where(ok, np.sign(d - e), 0).astype(np.int64)
        else:  # pragma: no cover
            raise ValueError(op)
        out = _round_f32(x, tail, rnd) if typ == "f32" else round_value(x, tail, typ, rnd)
    return _finish(out, f, ftz=ftz, sat=sat, relu=relu)


def add(a, b, typ, rnd="rn", ftz=False, sat=False):
    """add{.rnd}{.ftz}{.sat}.typ (PTX ISA 9.7.3.1, 9.7.4.1 half, 9.7.5 bf16)."""
    return _arith("add", typ, [a, b], rnd, ftz, sat)


def sub(a, b, typ, rnd="rn", ftz=False, sat=False):
    """sub = add with b's sign flipped; a NaN b keeps its sign (f64 propagates it, H200)."""
    f = fmt(typ)
    bb = _bits(b, f)
    nb = np.where(np.isnan(to_f64(bb, typ)), bb, bb ^ f.storage(1 << (f.width - 1))).astype(f.storage)
    return _arith("add", typ, [a, nb], rnd, ftz, sat)


def mul(a, b, typ, rnd="rn", ftz=False, sat=False):
    return _arith("mul", typ, [a, b], rnd, ftz, sat)


def fma(a, b, c, typ, rnd="rn", ftz=False, sat=False, relu=False):
    """fma.rnd{.ftz}{.sat}{.relu}.typ: a*b+c rounded once (PTX ISA 9.7.3.5; .relu: f16/bf16, 9.7.4.4)."""
    if relu and typ not in ("f16", "bf16"):
        raise ValueError(f"fma.relu: PTX defines .relu for .f16/.bf16 only, not .{typ}")
    return _arith("fma", typ, [a, b, c], rnd, ftz, sat, relu)


def div(a, b, typ, rnd="rn", ftz=False, sat=False):
    """div.rnd.typ, the IEEE-compliant division (PTX ISA 9.7.3.8; .approx/.full are not this)."""
    return _arith("div", typ, [a, b], rnd, ftz, sat)


def sqrt(a, typ, rnd="rn", ftz=False, sat=False):
    """sqrt.rnd.typ (PTX ISA 9.7.3.13); -0 -> -0, negative -> NaN."""
    return _arith("sqrt", typ, [a], rnd, ftz, sat)


def rcp(a, typ, rnd="rn", ftz=False):
    """rcp.rnd.typ = 1/a correctly rounded (PTX ISA 9.7.3.9; not rcp.approx)."""
    f = fmt(typ)
    one = np.full(np.shape(a), (f.bias << f.mbits) << f.shift, f.storage)
    return _arith("div", typ, [one, a], rnd, ftz, False)


# ---------------------------------------------------------------- min / max / abs / neg / copysign


def _minmax(a, b, typ, want_max, nan=False, xorsign_abs=False, ftz=False):
    if typ not in _ARITH:
        raise ValueError(f"min/max: type .{typ} not supported")
    f = FORMATS[typ]
    _check_ftz(ftz, f, "min/max")
    a, b = np.broadcast_arrays(_bits(a, f), _bits(b, f))
    if ftz:
        a, b = _ftz(a, f), _ftz(b, f)
    sbit = f.storage(1 << (f.width - 1))
    xs = (a ^ b) & sbit
    if xorsign_abs:
        a, b = a & ~sbit, b & ~sbit
    va, vb = to_f64(a, typ), to_f64(b, typ)
    na, nb = np.isnan(va), np.isnan(vb)
    if want_max:
        pick_a = (va > vb) | ((va == vb) & ~np.signbit(va))
    else:
        pick_a = (va < vb) | ((va == vb) & np.signbit(va))
    out = np.where(pick_a, a, b)
    canon = f.storage(_special(f, "nan"))
    if typ == "f64":          # f64 keeps NaN payloads (H200): both NaN -> a, quieted
        canon = a | f.storage(1 << 51)
    if nan:
        out = np.where(na | nb, canon, out)
    else:
        out = np.where(na & ~nb, b, np.where(nb & ~na, a, out))
        out = np.where(na & nb, canon, out)
    if xorsign_abs:
        isnan = np.isnan(to_f64(out, typ))
        out = np.where(isnan, out, out | xs)
    return out.astype(f.storage)


def fmin(a, b, typ, nan=False, xorsign_abs=False, ftz=False):
    """min{.ftz}{.NaN}{.xorsign.abs}.typ (PTX ISA 9.7.3.10)."""
    return _minmax(a, b, typ, False, nan, xorsign_abs, ftz)


def fmax(a, b, typ, nan=False, xorsign_abs=False, ftz=False):
    """max{.ftz}{.NaN}{.xorsign.abs}.typ (PTX ISA 9.7.3.11)."""
    return _minmax(a, b, typ, True, nan, xorsign_abs, ftz)


def abs_(a, typ, ftz=False):
    """abs{.ftz}.typ: clears the sign bit (a NaN: see _abs_neg_nan)."""
    f = fmt(typ)
    _check_ftz(ftz, f, "abs")
    b = _bits(a, f)
    if ftz:
        b = _ftz(b, f)
    out = b & f.storage((1 << (f.width - 1)) - 1)
    return _abs_neg_nan(out, b, f)


def _abs_neg_nan(out, b, f):
    """abs/neg of a NaN (H200 recordings): f32, f16 and bf16 give the canonical NaN; f64 returns
    its operand unchanged (neg.f64 does not flip a NaN's sign; abs.f64 measured on +NaN only)."""
    isnan = np.isnan(to_f64(b, f.name))
    keep = b if f.name == "f64" else np.full(b.shape, f.storage(_special(f, "nan")))
    return np.where(isnan, keep, out).astype(f.storage)


def neg(a, typ, ftz=False):
    """neg{.ftz}.typ: flips the sign bit (a NaN: see _abs_neg_nan)."""
    f = fmt(typ)
    _check_ftz(ftz, f, "neg")
    b = _bits(a, f)
    if ftz:
        b = _ftz(b, f)
    return _abs_neg_nan(b ^ f.storage(1 << (f.width - 1)), b, f)


def copysign(a, b, typ):
    """copysign.typ d, a, b: b's magnitude with a's sign (PTX ISA 9.7.3.3)."""
    f = fmt(typ)
    s = f.storage(1 << (f.width - 1))
    return ((_bits(b, f) & ~s) | (_bits(a, f) & s)).astype(f.storage)


def testp(a, typ, op):
    """testp.op.typ -> bool array (PTX ISA 9.7.3.2)."""
    f = fmt(typ)
    neg_, mag = _fields(_bits(a, f), f)
    isnan, isinf = _classify(mag, f)
    sub_ = (mag != 0) & (mag < _U64(1 << f.mbits))
    zero = mag == 0
    ops = {"finite": ~isnan & ~isinf, "infinite": isinf, "number": ~isnan, "notanumber": isnan,
           "normal": ~isnan & ~isinf & ~sub_ & ~zero, "subnormal": sub_}
    if op not in ops:
        raise ValueError(f"testp.{op}: PTX testp operations are {', '.join(ops)}")
    return ops[op]


_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def setp(a, b, typ, cmp, ftz=False):
    """The comparison of setp.cmp{.ftz}.typ as a bool array (PTX ISA 9.7.3 / table 'Floating-point
    comparison operators'): ordered forms false with a NaN operand, 'u' forms true; num / nan."""
    f = fmt(typ)
    _check_ftz(ftz, f, "setp")
    a, b = _bits(a, f), _bits(b, f)
    if ftz:
        a, b = _ftz(a, f), _ftz(b, f)
    va, vb = to_f64(a, typ), to_f64(b, typ)
    unord = np.isnan(va) | np.isnan(vb)
    if cmp == "num":
        return ~unord
    if cmp == "nan":
        return unord
    base, u = (cmp[:-1], True) if cmp.endswith("u") and cmp[:-1] in _CMP else (cmp, False)
    if base not in _CMP:
        raise ValueError(f"setp.{cmp}: not a float comparison (eq ne lt le gt ge, their u forms, num, nan)")
    with np.errstate(invalid="ignore"):
        r = _CMP[base](va, vb)
    if base == "ne" and not u:
        r = r & ~unord
    return np.where(unord, u, r)


# ---------------------------------------------------------------- cvt


def _int_in(bits, src):
    """Integer raw bits -> (negative, magnitude uint64)."""
    signed, w = _INTS[src]
    u = np.asarray(bits).astype(np.uint64) & _U64((1 << w) - 1 if w < 64 else 0xFFFFFFFFFFFFFFFF)
    if signed:
        neg = (u >> _U64(w - 1)) & _U64(1) == 1
        mag = np.where(neg, ((~u) + _U64(1)) & _U64((1 << w) - 1 if w < 64 else 0xFFFFFFFFFFFFFFFF), u)
    else:
        neg = np.zeros(u.shape, bool)
        mag = u
    return neg, mag


def to_signed_bits(bits, w):
    """Raw bits of a w-bit signed integer -> int64 values."""
    u = np.asarray(bits).astype(np.uint64) & _U64((1 << w) - 1 if w < 64 else 0xFFFFFFFFFFFFFFFF)
    return ((u ^ _U64(1 << (w - 1))) - _U64(1 << (w - 1))).view(np.int64)


def _int_range(dst):
    signed, w = _INTS[dst]
    return (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)


def _to_int(v, dst, src="f32"):
    """Integral float64 values -> saturated raw bits of dst. NaN (H200 recordings): 1<<63 for 64-bit
    destinations; for narrower ones 0 from f32/f16/bf16 sources and 1<<(w-1) from f64 sources
    (0x80000000 measured for s32/u32; narrower than 32 bits unmeasured)."""
    signed, w = _INTS[dst]
    lo, hi = _int_range(dst)
    nan = np.isnan(v)
    vv = np.where(nan, 0.0, v)
    over = vv >= float(hi) + 1 if w < 64 else vv >= 2.0 ** (63 if signed else 64)
    under = vv < float(lo)
    vc = np.where(over | under, 0.0, vv)
    if w == 64 and not signed:
        hi_part = vc >= 2.0 ** 63
        r = np.where(hi_part, (vc - 2.0 ** 63).astype(np.int64).view(np.uint64) + _U64(1 << 63),
                     vc.astype(np.int64).view(np.uint64))
    else:
        r = vc.astype(np.int64).view(np.uint64)
    r = np.where(over, _U64(hi & 0xFFFFFFFFFFFFFFFF), r)
    r = np.where(under, _U64(lo & 0xFFFFFFFFFFFFFFFF), r)
    r = np.where(nan, _U64(1 << 63) if w == 64 else (_U64(1 << (w - 1)) if src == "f64" else _U64(0)), r)
    return (r & _U64((1 << w) - 1 if w < 64 else 0xFFFFFFFFFFFFFFFF)).astype(_UDT[w])


_IROUND = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}


def _ue8m0_from(bits, src, rnd, satfinite):
    """cvt.{rz,rp}{.satfinite}.ue8m0x2.{f32,bf16x2} per element (cuda_fp8.hpp host rule)."""
    _check_rnd(rnd, ("rz", "rp"), "cvt.ue8m0x2")
    if src == "f32":
        # f32 -> bf16 rounding toward zero (rz) or up on |x| (rp); NaN stays NaN
        b = _bits(bits, FORMATS["f32"]) & np.uint32(0x7FFFFFFF)
        v = to_f64(b, "f32")
        bf = round_value(v, 0, "bf16", rnd)
    elif src == "bf16":
        bf = _bits(bits, FORMATS["bf16"])
    else:
        raise ValueError(f"cvt to ue8m0 takes .f32 or .bf16x2 sources, not .{src}")
    bf = bf.astype(np.uint32)
    res = (bf >> np.uint32(7)) & np.uint32(0xFF)
    absx = bf & np.uint32(0x7FFF)
    if rnd == "rp":
        res = np.where((bf & np.uint32(0x7F)) != 0, np.where((absx > 0x40) & (absx < 0x7F80), res + 1, res), res)
    if satfinite:
        res = np.where((absx <= 0x7F80) & (res == 0xFF), res - 1, res)
    return res.astype(np.uint8)


def _ue8m0_to_bf16(codes):
    c = np.asarray(codes).astype(np.uint16)
    return np.where(c == 0xFF, np.uint16(0x7FFF), np.where(c == 0, np.uint16(0x0040), c << np.uint16(7))).astype(np.uint16)


def cvt(bits, src: str, dst: str, rnd=None, sat=False, ftz=False, relu=False, satfinite=False):
    """cvt{.rnd}{.ftz}{.sat}{.relu}{.satfinite}.dst.src on raw bits (PTX ISA 9.7.9.21).

    Floats: f64 f32 tf32 f16 bf16 e4m3 e5m2 e3m2 e2m3 e2m1 ue8m0; integers s8..s64, u8..u64.
    `rnd`: .rn/.rna/.rz/.rm/.rp for a float result that may be inexact, .rni/.rzi/.rmi/.rpi for
    float->int and float->float integral rounding; None where PTX needs none (exact widenings)."""
    with np.errstate(invalid="ignore", over="ignore"):
        return _cvt(bits, src, dst, rnd, sat, ftz, relu, satfinite)


_NP = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def _fast_cvt(bits, src, dst):
    """.rn conversions among f16/f32/f64 (NumPy rounds directly, once) and bf16 <-> f32."""
    if src in _NP and dst in _NP:
        x = np.asarray(bits).astype(FORMATS[src].storage).view(_NP[src])
        r = x.astype(_NP[dst])
    elif src == "f32" and dst == "bf16":
        import ml_dtypes
        x = np.asarray(bits).astype(np.uint32).view(np.float32)
        r = x.astype(ml_dtypes.bfloat16)
    elif src == "bf16" and dst == "f32":
        r = (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)
        x = r
    else:
        return None
    df = FORMATS[dst]
    nan = np.isnan(x)
    out = r.view(df.storage)
    if nan.any():
        out = np.where(nan, _cvt_nan(bits, src, dst), out)
    return out.astype(df.storage)


def _cvt_nan(bits, src, dst, rnd="rn", satfinite=False, ftz=False):
    """The NaN a float->float cvt writes for NaN inputs (H200 recordings; unmeasured pairs use the
    destination's canonical NaN):
      f64 -> f32/f16/bf16: sign, quiet bit and the payload's top bits kept (0xfff8..01 -> 0xffc00000);
      f32 -> f64: sign and payload widened, quiet bit set (0x7fc12345 -> 0x7ff82468a0000000); with
      .ftz the canonical f32 NaN widened, 0x7fffffffe0000000 (so too f16/bf16 -> f64, unmeasured);
      f16 -> f32: 0x7fffffff; bf16 -> f32: the bits shifted (payload and sign kept);
      f32 -> tf32: the bits rounded as integers (.rna adds 0x1000, then the low 13 bits clear),
      and .satfinite takes 0x2000 off any result whose exponent is all ones (0x7fc00000 -> 0x7fbfe000);
      f32 -> f16/bf16 and every other pair: the destination's canonical NaN."""
    df = FORMATS[dst]
    b = np.asarray(bits).astype(np.uint64)
    if src == "f64" and dst in ("f32", "f16", "bf16"):
        sign = (b >> _U64(63)) << _U64(df.width - 1)
        pay = (b & _U64((1 << 52) - 1)) >> _U64(52 - df.mbits)
        return (sign | _U64(df.inf_code) | _U64(1 << (df.mbits - 1)) | pay).astype(df.storage)
    if dst == "f64" and src == "f32" and not ftz:
        sf = FORMATS["f32"]
        sign = (b >> _U64(31)) << _U64(63)
        pay = (b & _U64((1 << 23) - 1)) << _U64(29)
        return (sign | _U64(0x7FF0000000000000) | _U64(1 << 51) | pay).astype(np.uint64)
    if dst == "f64" and src in ("f32", "f16", "bf16"):
        return np.full(b.shape, np.uint64(0x7FFFFFFFE0000000))
    if src == "bf16" and dst == "f32":
        return (b << _U64(16)).astype(np.uint32)
    if src == "f32" and dst == "tf32":
        r = ((b + _U64(0x1000 if rnd == "rna" else 0)) & _U64(0xFFFFE000)) & _U64(0xFFFFFFFF)
        if satfinite:
            r = np.where((r & _U64(0x7F800000)) == _U64(0x7F800000), r - _U64(0x2000), r)
        return r.astype(np.uint32)
    return np.full(b.shape, df.storage(_special(df, "nan")))


def _cvt(bits, src, dst, rnd, sat, ftz, relu, satfinite):
    widen = (src, dst) in (("f16", "f32"), ("f16", "f64"), ("f32", "f64"), ("bf16", "f32"))
    if (rnd == "rn" or (rnd is None and widen)) and not (sat or ftz or relu or satfinite):
        out = _fast_cvt(bits, src, dst)
        if out is not None:
            return out
    what = f"cvt.{dst}.{src}"
    s_int, d_int = src in _INTS, dst in _INTS
    if not s_int and src not in FORMATS and src != "ue8m0":
        raise ValueError(f"{what}: unknown source type .{src}")
    if not d_int and dst not in FORMATS and dst != "ue8m0":
        raise ValueError(f"{what}: unknown destination type .{dst}")
    if ftz and "f32" not in (src, dst):
        raise ValueError(f"{what}: .ftz applies only when .f32 is the source or destination (PTX ISA 9.7.9.21)")
    if dst == "ue8m0":
        return _ue8m0_from(bits, src, rnd, satfinite)
    if src == "ue8m0":
        if dst != "bf16":
            raise ValueError(f"{what}: ue8m0 converts only to .bf16x2 (cvt.rn.bf16x2.ue8m0x2)")
        return _ue8m0_to_bf16(bits)

    # integer -> integer: wrap, or clamp with .sat
    if s_int and d_int:
        if rnd is not None:
            raise ValueError(f"{what}: integer-to-integer cvt takes no rounding modifier")
        neg_, mag = _int_in(bits, src)
        dsig, dw = _INTS[dst]
        m = np.asarray(bits).astype(np.uint64)
        if _INTS[src][0]:
            sw = _INTS[src][1]
            m = np.where(neg_, m | _U64(~((1 << sw) - 1) & 0xFFFFFFFFFFFFFFFF), m & _U64((1 << sw) - 1 if sw < 64 else 0xFFFFFFFFFFFFFFFF))
        if sat:
            lo, hi = _int_range(dst)
            vals = [(-int(x) if n else int(x)) for n, x in zip(neg_.ravel(), mag.ravel())]
            vals = [min(max(v, lo), hi) & ((1 << dw) - 1) for v in vals]
            return np.array(vals, dtype=np.uint64).reshape(np.shape(bits)).astype(_UDT[dw])
        return (m & _U64((1 << dw) - 1 if dw < 64 else 0xFFFFFFFFFFFFFFFF)).astype(_UDT[dw])

    # integer -> float: one rounding of the exact integer
    if s_int:
        if dst not in ("f16", "bf16", "f32", "f64"):
            raise ValueError(f"{what}: PTX converts integers to .f16/.bf16/.f32/.f64 only")
        rnd = rnd or "rn"
        _check_rnd(rnd, ("rn", "rz", "rm", "rp"), what)
        if relu or satfinite:
            raise ValueError(f"{what}: .relu/.satfinite are not defined for integer sources")
        f = FORMATS[dst]
        if _INTS[src][1] <= 32 and (dst == "f64" or (dst == "f32" and not ftz) or (dst == "f16" and rnd == "rn")):
            # exact in float64, then one rounding by NumPy (f16, f32 .rn) or by a nextafter step
            signed, w = _INTS[src]
            v = (to_signed_bits(bits, w) if signed else np.asarray(bits).astype(np.uint64)
                 & _U64((1 << w) - 1)).astype(np.float64)
            if dst == "f64":
                out = v.view(np.uint64)
            elif dst == "f16":
                out = v.astype(np.float16).view(np.uint16)
            else:
                out = _round_f32(v, 0, rnd)
            return _finish(out.astype(f.storage), f, sat=sat)
        neg_, mag = _int_in(bits, src)
        out = _round_core(neg_, mag, np.zeros(mag.shape, np.int64), False, f, rnd)
        return _finish(out, f, ftz=ftz and dst == "f32", sat=sat)

    sf = FORMATS[src]
    b = _bits(bits, sf)
    if ftz and src == "f32":
        b = _ftz(b, sf)
    v = to_f64(b, src)

    # float -> integer: integral rounding, then saturation
    if d_int:
        if rnd not in IRND:
            raise ValueError(f"{what}: float-to-integer cvt needs an integer rounding modifier "
                             f"(.rni/.rzi/.rmi/.rpi), got {rnd!r}")
        with np.errstate(invalid="ignore"):
            return _to_int(_IROUND[rnd](v), dst, src)

    df = FORMATS[dst]
    small = dst in ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
    if small and not satfinite:
        raise ValueError(f"{what}: conversions to .{dst} need .satfinite (PTX ISA 9.7.9.21)")
    if rnd in IRND:
        if dst != src:
            raise ValueError(f"{what}: integral rounding .{rnd} needs the same source and destination type")
        r = _IROUND[rnd](v)
        # a NaN: f64 returns its operand quieted (H200: floor(0x7ff0000000000001) = 0x7ff8000000000001);
        # the others give their canonical NaN
        quieted = b | df.storage(1 << (df.mbits - 1))
        out = np.where(np.isnan(v), quieted if src == "f64" else df.storage(_special(df, "nan")), b)
        fin = np.isfinite(v)
        exact = r.astype(_NP[dst]).view(df.storage) if dst in _NP else from_f64(r, dst)   # r is representable
        out = np.where(fin, exact, out)
        return _finish(out.astype(df.storage), df, ftz=ftz, sat=sat)
    widening = (df.mbits >= sf.mbits and df.ebits >= sf.ebits)
    if rnd is None:
        if not widening:
            raise ValueError(f"{what}: a narrowing float conversion needs a rounding modifier (.rn/.rz/.rm/.rp)")
        rnd = "rn"
    allowed = ("rn", "rna", "rz", "rm", "rp") if dst == "tf32" else ("rn", "rz", "rm", "rp")
    if small:
        allowed = ("rn",)
    _check_rnd(rnd, allowed, what)
    overflow = "satfinite" if satfinite else "ieee"
    out = round_value(v, 0, dst, rnd, overflow)
    nanm = np.isnan(v)
    if small and nanm.any():
        # e4m3/e5m2: 0x7f; formats without NaN: +max (cuda_fp4.hpp / cuda_fp6.hpp host rule)
        nanc = df.max_code if df.nan == "none" else 0x7F
        out = np.where(nanm, df.storage(nanc), out)
    elif nanm.any():
        out = np.where(nanm, _cvt_nan(bits, src, dst, rnd, satfinite, ftz), out)
    return _finish(out.astype(df.storage), df, ftz=ftz and dst == "f32", sat=sat, relu=relu)


def cvt_x2(a, b, src: str, dst: str, rnd="rn", relu=False, satfinite=False):
    """The packed two-element forms `cvt.rnd{.relu}{.satfinite}.{dst}x2.f32 d, a, b`: a goes to the
    upper half of d, b to the lower (PTX ISA 9.7.9.21). f16x2/bf16x2 -> uint32, 8-bit and 6-bit
    codes -> uint16 (one code per byte), e2m1x2 -> uint8 (one code per nibble), ue8m0x2 -> uint16."""
    hi = cvt(a, src, dst, rnd, relu=relu, satfinite=satfinite).astype(np.uint64)
    lo = cvt(b, src, dst, rnd, relu=relu, satfinite=satfinite).astype(np.uint64)
    if dst in ("f16", "bf16"):
        return ((hi << _U64(16)) | lo).astype(np.uint32)
    if dst == "e2m1":
        return ((hi << _U64(4)) | lo).astype(np.uint8)
    return ((hi << _U64(8)) | lo).astype(np.uint16)


def cvt_from_x2(packed, src: str, dst: str = "f16", relu=False):
    """`cvt.rn{.relu}.f16x2.{src}x2 d, a` (and bf16x2.ue8m0x2): unpack and widen, element 0 from the
    low bits into the low half of d. Returns uint32 (two 16-bit results)."""
    p = np.asarray(packed).astype(np.uint64)
    step = 4 if src == "e2m1" else 8
    mask = _U64((1 << step) - 1)
    lo, hi = p & mask, (p >> _U64(step)) & mask
    if src == "ue8m0":
        if dst != "bf16":
            raise ValueError("ue8m0x2 converts to bf16x2 only")
        out = [_ue8m0_to_bf16(x) for x in (lo, hi)]
    else:
        if dst != "f16":
            raise ValueError(f"cvt.{dst}x2.{src}x2: PTX widens the small formats to .f16x2")
        sf, df = FORMATS[src], FORMATS["f16"]
        out = []
        for x in (lo, hi):
            v = to_f64(x.astype(sf.storage), src)
            r = from_f64(v, "f16")
            if relu:
                r = _relu(r, df)
            out.append(r)
    return ((out[1].astype(np.uint32) << np.uint32(16)) | out[0].astype(np.uint32)).astype(np.uint32)


def packed2(fn, *operands, **kw):
    """An .f16x2/.bf16x2 instruction as two scalar ones: each uint32 operand splits into its low and
    high 16-bit halves, `fn` runs on each, and the halves are packed back (low result in the low
    half). E.g. `packed2(fma, a, b, c, typ="bf16", relu=True)` is fma.rn.relu.bf16x2."""
    ops = [np.asarray(x).astype(np.uint32) for x in operands]
    lo = fn(*[(x & np.uint32(0xFFFF)).astype(np.uint16) for x in ops], **kw)
    hi = fn(*[(x >> np.uint32(16)).astype(np.uint16) for x in ops], **kw)
    return (np.asarray(lo).astype(np.uint32) | (np.asarray(hi).astype(np.uint32) << np.uint32(16))).astype(np.uint32)
