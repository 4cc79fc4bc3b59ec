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
  `abs`/`neg` of a NaN (H200). f64 arithmetic returns its NaN operand, quieted (of two, the one whose quieted
  payload is larger: what both H200 recordings fit, the corpus and the outside one), and a NaN it
  generates (0*inf, inf-inf, 0/0, sqrt(-1)) is F64_NAN = 0xfff8000000000000; `neg.f64` leaves a
  NaN as it is; `min/max.f64` of two NaNs the same choice (H200).
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

The package, by concern: `formats` (the formats and decoding), `rounding` (one rounding and the modifiers),
`arith` (the arithmetic, min/max and comparisons) and `convert` (cvt and the packed forms).
"""
from .arith import (_fma_f64_rn, _round_f32, abs_, add, copysign, div, fma, fmax, fmin, mul, neg, rcp,  # noqa: F401
                    setp, sqrt, sub, testp)
from .convert import cvt, cvt_from_x2, cvt_x2, packed2, to_signed_bits
from .formats import F64_NAN, FORMATS, IRND, RND, FloatFormat, fmt, to_f64
from .rounding import _f64_exact_op, _ftz, from_f64, round_value  # noqa: F401 - _-names: the emulator's and tests' helpers

__all__ = [
    "FloatFormat", "FORMATS", "fmt", "RND", "IRND",
    "to_f64", "from_f64", "round_value",
    "cvt", "cvt_x2", "cvt_from_x2", "packed2",
    "add", "sub", "mul", "fma", "div", "sqrt", "rcp",
    "fmin", "fmax", "abs_", "neg", "copysign", "testp", "setp",
    "F64_NAN",
]
