"""Tensor-core arithmetic: one MMA instruction's D as the hardware computes it, bit for bit.

`mma_numerics(instr, a, b, c, sf_a=None, sf_b=None)` takes raw element codes and returns D. One fused
block step does all the arithmetic, for Hopper's wgmma and Blackwell's tcgen05.mma alike:

1. every product of one block of K (and the incoming C) is split into a significand s and an exponent e;
   a product's exponent is the sum of its operands' exponents (scale factors' too), taken before the product
   is normalised; an operand below its type's normal range keeps the smallest normal exponent (its s < 1);
   a term that is zero takes the exponent `e_zero`;
2. every term is aligned to the largest exponent among them and cut toward zero to F fraction bits below it;
3. the cut terms are added exactly (an integer sum);
4. the sum is rounded once to D: toward zero to f32 (or to 13 fraction bits, "e8m13", for Hopper FP8), or to
   nearest even to f16. A NaN anywhere gives the canonical NaN (f32 0x7fffffff, f16 0x7fff); ±inf propagate
   as in IEEE arithmetic (inf - inf is NaN); a zero result is +0; a value past the format's range is infinity.

Block-scaled kinds multiply each product by its two scale factors. kind::mxf4 and kind::mxf4nvf4 first add
16 fp4 products exactly (a group) and align the groups by their scales' exponents (F = 35, e_zero = -139).

| instruction                              | K block | F  | D rounding          | e_zero (f32 D / f16 D) |
|------------------------------------------|---------|----|---------------------|------------------------|
| wgmma f16, bf16 (k16), tf32 (k8)         | 32 B    | 25 | RZ f32 / RNE f16    | -133 / -21             |
| wgmma e4m3, e5m2 (k32)                   | 32      | 13 | RZ e8m13 / RNE f16  | -133 / -21             |
| tcgen05 kind::f16, tf32, f8f6f4          | 32 B    | 25 | RZ f32 / RNE f16    | -133 / -21             |
| tcgen05 kind::mxf8f6f4 (block32, ue8m0)  | 32      | 25 | RZ f32              | -133                   |
| tcgen05 kind::mxf4, mxf4nvf4             | 64      | 35 | RZ f32 (groups 16)  | -139                   |

(K block: what one fused step adds. 6- and 4-bit elements count as one byte each in kind::f8f6f4 and
mxf8f6f4, as the tensor core holds them there.) What is measured on silicon and what is not:

* **Hopper (measured).** wgmma bf16/f16: an H100 equals this rule on 98,304 of 98,304 accumulators
  (operands spread over 2^±12, K = 16 and 32, with and without an incoming D) and on every element of a
  256 x 512 x 192 GEMM (docs/results/wgmma_accumulation_h100.txt). wgmma e4m3/e5m2 with F = 13 and the e8m13
  result: an H200 equals this rule on 786,432 of 786,432 accumulators (m64n64k32, all four e4m3/e5m2 pairings;
  random, cancelling, small, large-C sets, K = 32, 64, 128 chained), where F = 25 or an exact sum rounded once
  match under 0.1 % of a random set and at most 38 % of a cancelling one (cuda_src/wgmma_fp8_probe.cu,
  bwlab/checks/wgmma_fp8.py, docs/results/wgmma_fp8_h200.txt). Not measured: f16 D, NaN/inf codes; nor the
  two MMA-Sim rules the H100 bf16 data never reach (subnormals aligned at the smallest normal exponent;
  zero terms at e_zero).
* **Blackwell (not measured here: no sm_100 GPU was available).** tcgen05 follows MMA-Sim (Microsoft
  Research's bit-accurate models, arXiv 2511.10909, `pip install mmasim` 2.1.1, built from probe kernels on
  each architecture), checked bit for bit (tests/test_mma_numerics.py, vectors in tests/data/mmasim/); the
  fp6/fp4 decoding, the scale-factor rules and the f16-D bounds come from it, not from a GPU.
* Edge rules that are MMA-Sim's reading and unmeasured anywhere here: infinity (not the largest finite
  value) when a round-toward-zero result passes f32's range; ue4m3's bit 7 ignored; NaN canonical.
Element codes (what `mma_numerics` takes): one code per element, in the low bits of its container:
uint16 for f16/bf16, uint32 for tf32 (its 13 low bits are ignored), uint8 for e4m3/e5m2/e3m2/e2m3/e2m1
(a 6-bit code in bits 5..0, a 4-bit code in bits 3..0: `bwlab.hw.dtypes.pack_fp4` / `pack_fp6` make the
packed SMEM forms). Scale factors: uint8 ue8m0 (2^(code - 127), 0xff NaN) or ue4m3 (unsigned e4m3: bit 7
ignored, 0x7f NaN). C and D: float32 values for f32 (C may also be its uint32 bits), float16 values for f16
(or uint16 bits); D comes back as float32 / float16 values — `.view(np.uint32)` gives the bits.
PTX ISA: wgmma.mma_async ("Matrix shape", "Matrix data types"), tcgen05.mma ("Matrix shape",
"Instruction descriptor", "Block scaling": kind::mxf8f6f4 .scale_vec::1X, kind::mxf4 ::2X, kind::mxf4nvf4 ::2X
and ::4X). CuTe: include/cute/arch/mma_sm100_desc.hpp (UMMA::ScaleIn, the block-scaled kinds).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ..hw.dtypes import element_type, scale_to_float, to_float
from .blocksum import finite_mma, pow2 as _pow2
from .rules import MmaRuleError, kind_of_types, require_mma_types

__all__ = ["MmaInstr", "parse_instr", "mma_numerics", "fused_mma", "SUBNORMAL_EXPONENT"]

SEC_WGMMA = "PTX ISA wgmma.mma_async, Matrix shape and Matrix data types"
SEC_SHAPE = "PTX ISA tcgen05.mma, Matrix shape"
SEC_IDESC = "PTX ISA tcgen05.mma, Instruction descriptor"
SEC_SCALE = "PTX ISA tcgen05.mma, Block scaling (scale_vec and scale types per kind)"

# Each type's smallest normal exponent: an element below it (a subnormal) is aligned as if it had this
# exponent, with a significand below 1. The 6- and 4-bit types' come from their OCP MX definitions.
SUBNORMAL_EXPONENT = {"f32": -126, "tf32": -126, "bf16": -126, "f16": -14, "e5m2": -14, "e4m3": -6,
                      "e3m2": -2, "e2m3": 0, "e2m1": 0, "ue8m0": -127, "ue4m3": -6}
_F8F6F4 = ("e5m2", "e4m3", "e3m2", "e2m3", "e2m1")
_FP8 = ("e4m3", "e5m2")
# K of one instruction per tcgen05 kind and per wgmma input type
_TCGEN05_K = {"f16": 16, "tf32": 8, "f8f6f4": 32, "mxf8f6f4": 32, "mxf4": 64, "mxf4nvf4": 64}
_WGMMA_K = {"f16": 16, "bf16": 16, "tf32": 8, "e4m3": 32, "e5m2": 32}
# block-scaled kind -> ({block: legal scale types}, A/B types, the ISA's scale_vec name per block)
_SCALED = {
    "mxf8f6f4": ({32: ("ue8m0",)}, _F8F6F4, {32: "1X"}),
    "mxf4": ({32: ("ue8m0",)}, ("e2m1",), {32: "2X"}),
    "mxf4nvf4": ({32: ("ue8m0",), 16: ("ue8m0", "ue4m3")}, ("e2m1",), {32: "2X", 16: "4X"}),
}


@dataclass(frozen=True)
class MmaInstr:
    """One MMA instruction as MMA-Sim spells it, and the arithmetic it implies."""

    name: str
    family: str               # "wgmma" | "tcgen05"
    M: int
    N: int
    K: int                    # K of one instruction
    kind: str | None          # tcgen05 .kind (f16, tf32, f8f6f4, mxf8f6f4, mxf4, mxf4nvf4); None for wgmma
    d_type: str
    a_type: str
    b_type: str
    block: int | None = None  # K elements per scale factor (block-scaled kinds)
    scale_type: str | None = None

    @property
    def scaled(self) -> bool:
        return self.block is not None

    @property
    def F(self) -> int:
        """Fraction bits kept below the largest exponent of a fused block."""
        if self.kind in ("mxf4", "mxf4nvf4"):
            return 35
        return 13 if self.family == "wgmma" and self.a_type in _FP8 else 25

    @property
    def group(self) -> int | None:
        """fp4 products added exactly before alignment (kind::mxf4, mxf4nvf4)."""
        return 16 if self.kind in ("mxf4", "mxf4nvf4") else None

    @property
    def e_zero(self) -> int:
        """The exponent a zero term is aligned with."""
        if self.group:
            return -139
        return -21 if self.d_type == "f16" else -133

    @property
    def rounding(self) -> str:
        """How the exact block sum becomes D: 'rz-f32', 'rz-e8m13' or 'rne-f16'."""
        if self.d_type == "f16":
            return "rne-f16"
        return "rz-e8m13" if self.family == "wgmma" and self.a_type in _FP8 else "rz-f32"

    @property
    def k_block(self) -> int:
        """K elements one fused step adds: 32 bytes of each operand (a 6-/4-bit element counts as a byte),
        64 elements for the fp4 kinds."""
        if self.group:
            return 64
        return 32 // max(1, element_type(self.a_type).bits // 8)


_SHAPE = re.compile(r"m(\d+)n(\d+)k(\d+)$")


def _rule(ok: bool, message: str, section: str) -> None:
    if not ok:
        raise MmaRuleError(message, section)


def parse_instr(instr: str) -> MmaInstr:
    """`instr` as MMA-Sim names it -> MmaInstr, or MmaRuleError (a ValueError) naming the broken rule.

    wgmma:   m64nNkK.D.A.B                       e.g. m64n64k32.f32.e4m3.e4m3
    tcgen05: mMnNkK.kind::KIND.D.A.B             e.g. m128n64k16.kind::f16.f32.bf16.bf16
    scaled:  mMnNkK.kind::KIND.blockB.D.A.B.S    e.g. m128n64k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3
    """
    if not isinstance(instr, str):
        raise TypeError(f"instr is a string such as 'm128n64k16.kind::f16.f32.bf16.bf16', got {type(instr).__name__}")
    parts = instr.split(".")
    form = ("wgmma: mMnNkK.D.A.B; tcgen05: mMnNkK.kind::KIND.D.A.B; block-scaled: "
            "mMnNkK.kind::KIND.blockB.D.A.B.SCALE")
    shape = _SHAPE.match(parts[0])
    if shape is None or len(parts) not in (4, 5, 7):
        raise ValueError(f"cannot read the instruction {instr!r}: the forms are {form}")
    M, N, K = (int(x) for x in shape.groups())
    if len(parts) == 4:
        d, a, b = parts[1:]
        for t in (a, b):
            _rule(t in _WGMMA_K, f"wgmma multiplies f16, bf16, tf32, e4m3 or e5m2, got {t!r}", SEC_WGMMA)
        fp8 = a in _FP8 and b in _FP8
        _rule(a == b or fp8, f"wgmma's A and B have one type (e4m3 and e5m2 mix), got {a} x {b}", SEC_WGMMA)
        _rule(d in ("f32", "f16"), f"wgmma accumulates into f32 or f16, got {d!r}", SEC_WGMMA)
        _rule(d == "f32" or a in ("f16",) + _FP8, f"wgmma with {a} inputs accumulates into f32 only, got {d}",
              SEC_WGMMA)
        _rule(M == 64, f"wgmma's M is 64, got {M}", SEC_WGMMA)
        _rule(N % 8 == 0 and 8 <= N <= 256, f"wgmma's N is a multiple of 8 in [8, 256], got {N}", SEC_WGMMA)
        _rule(K == _WGMMA_K[a], f"wgmma with {a} inputs has K = {_WGMMA_K[a]}, got {K}", SEC_WGMMA)
        return MmaInstr(instr, "wgmma", M, N, K, None, d, a, b)
    kind = parts[1]
    if not kind.startswith("kind::"):
        raise ValueError(f"cannot read the instruction {instr!r}: the second field is kind::KIND ({form})")
    kind = kind[len("kind::"):]
    _rule(kind in _TCGEN05_K, f"tcgen05.mma kind must be one of {list(_TCGEN05_K)}, got kind::{kind}", SEC_IDESC)
    block = stype = None
    if kind in _SCALED:
        _rule(len(parts) == 7, f"kind::{kind} is block-scaled: name it as mMnNkK.kind::{kind}.blockB.D.A.B.SCALE",
              SEC_SCALE)
        blocks, ab, vec = _SCALED[kind]
        bname, d, a, b, stype = parts[2:]
        m = re.fullmatch(r"block(\d+)", bname)
        if m is None:
            raise ValueError(f"cannot read the instruction {instr!r}: the third field is blockB (block16 or block32)")
        block = int(m.group(1))
        _rule(block in blocks, f"kind::{kind} takes scale blocks of {sorted(blocks)} elements, got block{block}",
              SEC_SCALE)
        _rule(stype in blocks[block], f"kind::{kind} with blocks of {block} (scale_vec::{vec[block]}) takes "
              f"{' or '.join(blocks[block])} scale factors, got {stype!r}", SEC_SCALE)
        for t in (a, b):
            _rule(t in ab, f"kind::{kind} multiplies {', '.join(ab)}, got {t!r}", SEC_SCALE)
        _rule(d == "f32", f"block-scaled kind::{kind} accumulates into f32, got {d!r}", SEC_SCALE)
        _rule(M in (128, 256), f"block-scaled tcgen05.mma takes M = 128 (cta_group::1) or 256 (cta_group::2), "
              f"got {M}", SEC_SHAPE)
    else:
        _rule(len(parts) == 5, f"kind::{kind} takes no scale factors: name it as mMnNkK.kind::{kind}.D.A.B",
              SEC_SCALE)
        d, a, b = parts[2:]
        require_mma_types(a, b, d)
        _rule(kind_of_types(a, b) == kind, f"kind::{kind} does not multiply {a} x {b} "
              f"(that is kind::{kind_of_types(a, b)})", SEC_IDESC)
        _rule(M in (64, 128, 256), f"tcgen05.mma takes M = 64 or 128 (cta_group::1), 128 or 256 (cta_group::2), "
              f"got {M}", SEC_SHAPE)
    step = 16 if M == 256 else 8
    _rule(N % step == 0 and step <= N <= 256, f"tcgen05.mma with M = {M} needs N a multiple of {step} in "
          f"[{step}, 256], got {N}", SEC_SHAPE)
    _rule(K == _TCGEN05_K[kind], f"tcgen05.mma kind::{kind} has K = {_TCGEN05_K[kind]}, got {K}", SEC_SHAPE)
    return MmaInstr(instr, "tcgen05", M, N, K, kind, d, a, b, block, stype)


# ------------------------------------------------------------------------------------------------
# The shared core
# ------------------------------------------------------------------------------------------------

def _split(x: np.ndarray, e_sub: int):
    """Values -> (s, e) with x = s * 2^e, 1 <= |s| < 2 for a normal x; a value below 2^e_sub keeps e = e_sub
    (its |s| < 1), zero too. Non-finite values come back with e = e_sub (their exponent never matters)."""
    m, e = np.frexp(x)
    s, e = 2.0 * m, e.astype(np.int64) - 1
    low = (e < e_sub) | ~np.isfinite(x)
    s = np.where(low & np.isfinite(x), np.ldexp(s, np.where(low, e - e_sub, 0)), s)
    return s, np.where(low, e_sub, e)


def _round(v: np.ndarray, rounding: str) -> np.ndarray:
    """Exact float64 values -> D (float32 or float16) by `rounding`: RZ to 23 or 13 fraction bits with the
    f32 subnormal range, or RNE to f16 with its subnormals. Past the range: infinity."""
    if rounding == "rne-f16":
        bits, e_min, top, out_t = 10, -14, 2.0 ** 16, np.float16
    else:
        bits, e_min, top, out_t = (23 if rounding == "rz-f32" else 13), -126, 2.0 ** 128, np.float32
    fin = np.isfinite(v)
    vf = np.where(fin, v, 0.0)
    e = np.maximum(np.frexp(vf)[1].astype(np.int64) - 1, e_min)
    scaled = np.ldexp(vf, bits - e)
    q = np.rint(scaled) if rounding == "rne-f16" else np.trunc(scaled)
    r = np.ldexp(q, e - bits)
    r = np.where(np.abs(r) >= top, np.copysign(np.inf, r), r)
    r = np.where(fin, r, v)
    with np.errstate(over="ignore", invalid="ignore"):
        out = (r + 0.0).astype(out_t)                   # + 0.0: a zero result is +0
    nan = np.isnan(out)
    if nan.any():
        ui = np.uint16 if out_t is np.float16 else np.uint32
        out = out.view(ui).copy()
        out[nan] = ui(0x7FFF) if out_t is np.float16 else ui(0x7FFFFFFF)
        out = out.view(out_t)
    return out


def _fused_sum(ts: np.ndarray, te: np.ndarray, sc: np.ndarray, ec: np.ndarray, F: int, rounding: str) -> np.ndarray:
    """The block step on the terms ts * 2^te (last axis) and C = sc * 2^ec: align to the largest exponent, cut
    toward zero F bits below it, add exactly, round once. Non-finite terms make the IEEE result (inf or NaN).
    Every shift stays inside float64's normal range (exponents here lie within ±600), so each step is exact."""
    emax = np.maximum(te.max(axis=-1), ec)
    base = F - emax
    with np.errstate(invalid="ignore"):
        q = np.trunc(ts * _pow2(te + base[..., None]))    # integers below 2^(F + 12): their sum is exact
        qc = np.trunc(sc * _pow2(ec + base))
        total = q.sum(axis=-1) + qc
    v = total * _pow2(-base)
    bad = ~np.isfinite(v)                               # a non-finite term: the IEEE sum of those terms
    if bad.any():
        tb = ~np.isfinite(ts)
        with np.errstate(invalid="ignore"):
            special = np.where(tb, ts, 0.0).sum(axis=-1) + np.where(np.isfinite(sc), 0.0, sc)
        v = np.where(bad, special, v)
    return _round(v, rounding)


def fused_mma(ins: MmaInstr, a: np.ndarray, b: np.ndarray, c: np.ndarray, alpha=None, beta=None) -> np.ndarray:
    """D = A . B^T + C as the tensor core computes it, from VALUES: a (M x K) and b (N x K) float64 element
    values of `ins`'s types, c (M x N) float32 (or float16 for f16 D); alpha (M x K/block) and beta
    (N x K/block) scale values for the block-scaled kinds. K may be any multiple of the instruction's
    block: the blocks run in order, each adding into the previous D (as chained instructions do).
    `mma_numerics` is the same from raw codes; bwlab.umma.model's tcgen05 and wgmma models call this."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    d = np.asarray(c, np.float16 if ins.d_type == "f16" else np.float32)
    K = a.shape[1]
    L = min(K, ins.k_block)
    if not ins.scaled and np.isfinite(a).all() and np.isfinite(b).all():   # the common case: blocksum.py
        return finite_mma(ins, SUBNORMAL_EXPONENT, a, b, d, L, _round, _block, _split)
    sa, ea = _split(a, SUBNORMAL_EXPONENT[ins.a_type])
    sb, eb = _split(b, SUBNORMAL_EXPONENT[ins.b_type])
    s_al = e_al = s_be = e_be = None
    if ins.scaled:
        s_al, e_al = _split(np.asarray(alpha, np.float64), SUBNORMAL_EXPONENT[ins.scale_type])
        s_be, e_be = _split(np.asarray(beta, np.float64), SUBNORMAL_EXPONENT[ins.scale_type])
    for k0 in range(0, K, L):
        with np.errstate(invalid="ignore"):             # inf * 0 is NaN, as it should be
            d = _block(ins, d, k0, L, a, b, sa, ea, sb, eb, s_al, e_al, s_be, e_be)
    return d


def _block(ins, d, k0, L, a, b, sa, ea, sb, eb, s_al, e_al, s_be, e_be):
    """One fused step over K elements [k0, k0 + L): the terms, then `_fused_sum`."""
    Mr, Nr = a.shape[0], b.shape[0]
    c_sub = SUBNORMAL_EXPONENT[ins.d_type]
    ks = slice(k0, k0 + L)
    sc, ec = _split(d.astype(np.float64), c_sub)
    ec = np.where(sc == 0, ins.e_zero, ec)
    if ins.group:
        # kind::mxf4/mxf4nvf4: 16 fp4 products add exactly; each group is aligned by its scales' exponent
        G = ins.group
        p = a[:, None, ks] * b[None, :, ks]                          # exact (fp4 x fp4)
        p = p.reshape(Mr, Nr, L // G, G)
        none = (p == 0).all(axis=-1)
        rep = ins.block // G
        g0, g1 = k0 // G, (k0 + L) // G
        sal, eal = np.repeat(s_al, rep, axis=1)[:, g0:g1], np.repeat(e_al, rep, axis=1)[:, g0:g1]
        sbe, ebe = np.repeat(s_be, rep, axis=1)[:, g0:g1], np.repeat(e_be, rep, axis=1)[:, g0:g1]
        scale = sal[:, None, :] * sbe[None, :, :]
        ts = p.sum(axis=-1) * scale
        te = np.where(none | (scale == 0), ins.e_zero, eal[:, None, :] + ebe[None, :, :])
    else:
        ts = sa[:, None, ks] * sb[None, :, ks]
        te = ea[:, None, ks] + eb[None, :, ks]
        if ins.scaled:
            j = k0 // ins.block
            ts = ts * (s_al[:, j][:, None, None] * s_be[:, j][None, :, None])
            te = te + (e_al[:, j][:, None, None] + e_be[:, j][None, :, None])
        te = np.where(ts == 0, ins.e_zero, te)
    return _fused_sum(ts, te, sc, ec, ins.F, ins.rounding)


# ------------------------------------------------------------------------------------------------
# From raw codes
# ------------------------------------------------------------------------------------------------

_CODE_DTYPES = {"f16": (np.uint16, np.float16), "bf16": (np.uint16,), "tf32": (np.uint32,)}


def _operand(name: str, codes, t: str, rows: int, K: int) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.shape != (rows, K):
        raise ValueError(f"{name} must be {rows} x {K} element codes ({'M' if name == 'A' else 'N'} x K), "
                         f"got shape {codes.shape}")
    legal = _CODE_DTYPES.get(t, (np.uint8,))
    if codes.dtype.kind in "iu" and codes.dtype != legal[0]:
        # codes in another integer type: accepted when every one fits the container
        bits = 8 * np.dtype(legal[0]).itemsize
        if codes.size and (codes.min() < 0 or codes.max() >= 1 << bits):
            raise ValueError(f"{name} holds {t} codes, {bits}-bit unsigned: got values outside 0..{(1 << bits) - 1}")
        codes = codes.astype(legal[0])
    if codes.dtype not in [np.dtype(x) for x in legal]:
        raise ValueError(f"{name} holds {t} codes as {' or '.join(np.dtype(x).name for x in legal)} "
                         f"(or another integer type), got {codes.dtype}")
    if t == "f16":
        return (codes if codes.dtype == np.float16 else codes.view(np.float16)).astype(np.float64)
    return to_float(codes, t)


def mma_numerics(instr, a, b, c, sf_a=None, sf_b=None) -> np.ndarray:
    """One instruction's D = A . B^T + C from raw codes, as the tensor core computes it (module docstring).

    instr: MMA-Sim's name (`parse_instr`) or an MmaInstr. a: M x K codes, b: N x K codes (uint16 f16/bf16 —
    f16 may also be float16 values —, uint32 tf32, uint8 one fp8/fp6/fp4 code per element). K is the
    instruction's K, or a multiple of it (that many instructions chained). c: M x N, float32 values or uint32
    bits for f32 D; float16 values or uint16 bits for f16 D. sf_a (M x K/block), sf_b (N x K/block): uint8
    scale codes for the block-scaled kinds. Returns D: float32 (f32) or float16 (f16) values."""
    ins = instr if isinstance(instr, MmaInstr) else parse_instr(instr)
    a = np.asarray(a)
    if a.ndim != 2:
        raise ValueError(f"A must be M x K element codes, got shape {a.shape}")
    K = a.shape[1]
    if K == 0 or K % ins.K:
        raise ValueError(f"K must be a positive multiple of the instruction's K = {ins.K}, got {K}")
    av = _operand("A", a, ins.a_type, ins.M, K)
    bv = _operand("B", b, ins.b_type, ins.N, K)
    c = np.asarray(c)
    if c.shape != (ins.M, ins.N):
        raise ValueError(f"C must be M x N = {ins.M} x {ins.N}, got shape {c.shape}")
    ft, ut = (np.float32, np.uint32) if ins.d_type == "f32" else (np.float16, np.uint16)
    if c.dtype == ut:
        c = c.view(ft)
    elif c.dtype.kind == "f" and c.dtype != ft:
        with np.errstate(over="ignore"):
            cf = c.astype(ft)
        same = (cf.astype(c.dtype) == c) | (np.isnan(c) & np.isnan(cf))
        if not same.all():
            raise ValueError(f"C holds {ins.d_type} values: {c.dtype} values that {ins.d_type} cannot hold exactly "
                             f"were given (pass {np.dtype(ft).name} values or {np.dtype(ut).name} bits)")
        c = cf
    elif c.dtype != ft:
        raise ValueError(f"an {ins.d_type} C is {np.dtype(ft).name} values or {np.dtype(ut).name} bits, got {c.dtype}")
    alpha = beta = None
    if ins.scaled:
        if sf_a is None or sf_b is None:
            raise ValueError(f"kind::{ins.kind} is block-scaled: pass sf_a (M x K/{ins.block}) and "
                             f"sf_b (N x K/{ins.block}) as {ins.scale_type} codes")
        alpha = _scales("sf_a", sf_a, ins, ins.M, K)
        beta = _scales("sf_b", sf_b, ins, ins.N, K)
    elif sf_a is not None or sf_b is not None:
        raise ValueError(f"{ins.name} takes no scale factors (only kind::mxf8f6f4, mxf4 and mxf4nvf4 do)")
    return fused_mma(ins, av, bv, c, alpha, beta)


def _scales(name, codes, ins: MmaInstr, rows: int, K: int) -> np.ndarray:
    codes = np.asarray(codes)
    want = (rows, K // ins.block)
    if codes.shape != want:
        raise ValueError(f"{name} must be {want[0]} x {want[1]} {ins.scale_type} codes (one per {ins.block} "
                         f"elements of K), got shape {codes.shape}")
    if codes.dtype.kind not in "iu":
        raise ValueError(f"{name} holds {ins.scale_type} codes as uint8 (bytes 0..255), got {codes.dtype}")
    return scale_to_float(codes, ins.scale_type)
