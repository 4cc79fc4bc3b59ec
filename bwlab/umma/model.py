"""The MMA model: `tcgen05.mma` and `wgmma.mma_async` executed from raw shared-memory bytes.

One thread issues `tcgen05.mma.cta_group::1.kind::f16 [d_tmem], a_desc, b_desc, idesc, p`; the tensor
core reads A and B from shared memory through two SMEM descriptors (`descriptors.read_operand`),
takes types, shape and majors from the instruction descriptor (`idesc`), and writes D into Tensor
Memory where `d_tmem_layout` says. Completion is observed through `tcgen05.commit`, one arrival on an
mbarrier (`bwlab.hw.mbarrier.Mbarrier`). `wgmma_mma_async` is the same reader driven by SM90
descriptors, with D in a warpgroup's registers (`wgmma_d_fragment`).

PTX ISA: tcgen05 "Data path layout organization" (layouts A, B, D, F), "Packing formats of D",
tcgen05.mma, tcgen05.commit; wgmma "Register Fragments" of the m64nNk16 accumulator. CuTe:
include/cute/atom/mma_traits_sm100_frag.hpp (`tmem_frg_1sm` / `tmem_frg_2sm`).

Numerics: one instruction's arithmetic is `bwlab.umma.numerics` (one fused block step shared by Hopper
and Blackwell: products aligned to the largest exponent, cut to F fraction bits, added exactly, rounded
once — toward zero for f32 D, to nearest even for f16 D). For wgmma it is measured on an H100; for
tcgen05 it follows MMA-Sim's Blackwell model (not measured here). See that module and docs/numerics.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ..hw.dtypes import element_type, from_float, to_float
from ..hw.mbarrier import Mbarrier
from ..hw.tmem import COLUMNS, decode_address, new_image
from .canonical import instr_k
from .descriptors import decode_smem_desc, read_operand
from .idesc import require_mma_shape, decode_instr_desc
from .numerics import fused_mma, parse_instr
from .rules import require_mma_majors

__all__ = ["SMEM_BYTES", "TmemLayout", "d_tmem_layout", "operand_values", "d_from_words", "words_from_d", "CtaState",
           "mma_operands", "tcgen05_mma", "tcgen05_commit", "WGMMA_NS", "wgmma_mma_async",
           "wgmma_mma_async_rs", "wgmma_a_fragment", "wgmma_d_fragment"]

SMEM_BYTES = 232448           # 227 KiB: the most one CTA may use on sm_90 / sm_100


# ------------------------------------------------------------------------------------------------
# Where D lives in TMEM
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TmemLayout:
    """For every D[m][n]: the CTA of the pair, the TMEM lane and the column, relative to the
    d_tmem address the instruction was given. `name` is the PTX data-path layout letter."""

    M: int
    N: int
    cta_group: int
    name: str
    cta: np.ndarray
    lane: np.ndarray
    column: np.ndarray

    @property
    def columns(self) -> int:
        """32-bit TMEM columns one CTA's share of D occupies."""
        return int(self.column.max()) + 1


def d_tmem_layout(M: int, N: int, cta_group: int = 1) -> TmemLayout:
    """Where each element of an M x N accumulator sits in TMEM (one 32-bit cell per element).

    * cta_group::1, M = 128 (layout D): D[m][n] at lane m, column n.
    * cta_group::1, M = 64 (layout F): 16 rows per 32-lane warp quarter — lane (m % 16) + 32*(m // 16).
    * cta_group::2, M = 256 (layout A): CTA m // 128 of the pair, lane m % 128, column n.
    * cta_group::2, M = 128 (layout B): CTA m // 64; within it row r = m % 64 sits at lane r for the
      first N/2 columns and at lane 64 + r for the second half: lane r + 64*(n // (N/2)), column n % (N/2).
    Same as CuTe's tmem_frg_1sm / tmem_frg_2sm atoms (mma_traits_sm100_frag.hpp).
    """
    require_mma_shape("f16", M, N, cta_group)
    m, n = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
    zero = np.zeros_like(m)
    if cta_group == 1 and M == 128:
        return TmemLayout(M, N, 1, "D", zero, m, n)
    if cta_group == 1:
        return TmemLayout(M, N, 1, "F", zero, m % 16 + 32 * (m // 16), n)
    if M == 256:
        return TmemLayout(M, N, 2, "A", m // 128, m % 128, n)
    half = N // 2
    return TmemLayout(M, N, 2, "B", m // 64, m % 64 + 64 * (n // half), n % half)


def operand_values(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Raw operand bits as read from SMEM (uint16 for f16/bf16, uint32 for tf32) -> float64 values.
    tf32 ignores the 13 low mantissa bits of its 32-bit word, as the tensor core does."""
    t = element_type(dtype)
    raw = np.asarray(raw)
    return to_float(raw.view(t.storage) if t.storage.kind == "f" else raw, t)


def d_from_words(words: np.ndarray, d_type: str) -> np.ndarray:
    """TMEM words -> D values (float64). A 16-bit D element occupies the low 16 bits of its 32-bit
    word (PTX "Packing formats of D"; CuTe tmem_frg_1sm<half_t> stores half_t in uint32_t); the
    upper half is not defined, so it is ignored here."""
    words = np.asarray(words).astype(np.uint32)
    if d_type == "f32":
        return to_float(words.view(np.float32), "f32")
    return to_float((words & 0xFFFF).astype(np.uint16).view(np.float16), "f16")


def _words(d: np.ndarray, d_type: str) -> np.ndarray:
    """D as the tensor core wrote it (float32 / float16, bits kept: a canonical NaN stays canonical) -> words."""
    return d.view(np.uint32) if d_type == "f32" else d.view(np.uint16).astype(np.uint32)


def words_from_d(d: np.ndarray, d_type: str) -> np.ndarray:
    """D values -> TMEM words (f16 in the low half, the high half 0)."""
    if d_type == "f32":
        return from_float(d, "f32").view(np.uint32)
    return from_float(d, "f16").astype(np.uint32)


# ------------------------------------------------------------------------------------------------
# The tcgen05 model
# ------------------------------------------------------------------------------------------------

@dataclass
class CtaState:
    """What the tensor core of one CTA sees: its shared memory (bytes) and its TMEM image."""

    smem: np.ndarray = field(default_factory=lambda: np.zeros(SMEM_BYTES, dtype=np.uint8))
    tmem: np.ndarray = field(default_factory=new_image)
    issued: int = 0           # tcgen05.mma issued since the last tcgen05.commit


def _ctas(ctas) -> list:
    return [ctas] if isinstance(ctas, CtaState) else list(ctas)


def mma_operands(ctas, a_desc: int, b_desc: int, idesc: int, kind: str = "f16", cta_group: int = 1):
    """The A (M x K) and B (N x K) values one tcgen05.mma reads, as float64, and the decoded idesc.
    With cta_group::2 CTA 0 of the pair supplies rows [0, M/2) of A and [0, N/2) of B, CTA 1 the
    rest, each from its own SMEM at the same descriptor addresses (CuTe SM100 2x1SM A/B layouts)."""
    f = decode_instr_desc(idesc, kind)
    if kind not in ("f16", "tf32"):
        raise ValueError(f"bwlab models kind::f16 and kind::tf32, not kind::{kind}")
    if f.sparse or f.max_shift:
        raise ValueError("bwlab models dense tcgen05.mma without .ws (sparsity and max shift must be 0)")
    require_mma_shape(kind, f.M, f.N, cta_group)
    ctas = _ctas(ctas)
    if len(ctas) != cta_group:
        raise ValueError(f"cta_group::{cta_group} runs on {cta_group} CTA(s); got {len(ctas)}")
    ad, bd = decode_smem_desc(a_desc, "sm100"), decode_smem_desc(b_desc, "sm100")
    require_mma_majors(kind, f.N, cta_group, f.a_type, f.b_type, f.a_major, f.b_major, ad.swizzle, bd.swizzle)
    k = instr_k(f.a_type)
    a = np.concatenate([read_operand(c.smem, ad, f.a_major, f.a_type, f.M // cta_group, k) for c in ctas])
    b = np.concatenate([read_operand(c.smem, bd, f.b_major, f.b_type, f.N // cta_group, k) for c in ctas])
    a, b = operand_values(a, f.a_type), operand_values(b, f.b_type)
    if f.negate_a:
        a = -a
    if f.negate_b:
        b = -b
    return a, b, f


def tcgen05_mma(ctas, d_tmem: int, a_desc: int, b_desc: int, idesc: int, accumulate: bool,
                kind: str = "f16", cta_group: int = 1) -> None:
    """Execute one `tcgen05.mma.cta_group::{1,2}.kind::{f16,tf32} [d_tmem], a_desc, b_desc, idesc, p`.

    `ctas` is a CtaState (cta_group 1) or the pair (cta_group 2). D = A * B^T (B is stored N x K),
    or D += A * B^T when `accumulate`; D lands in TMEM as `d_tmem_layout` says, offset by the lane
    and column of `d_tmem`.
    """
    a, b, f = mma_operands(ctas, a_desc, b_desc, idesc, kind, cta_group)
    ctas = _ctas(ctas)
    lay = d_tmem_layout(f.M, f.N, cta_group)
    lane0, col0 = decode_address(d_tmem)
    if lane0 not in ((0, 16) if lay.name == "F" else (0,)):
        raise ValueError(f"d_tmem lane must be 0 for layout {lay.name}"
                         + (" (or 16: the other half of each warp quarter)" if lay.name == "F" else "")
                         + f", got {lane0}")
    if col0 + lay.columns > COLUMNS:
        raise ValueError(f"D needs columns [{col0}, {col0 + lay.columns}) but TMEM has {COLUMNS}")
    # the incoming D (zero when not accumulating) gathered into M x N, then one instruction's arithmetic
    ins = parse_instr(f"m{f.M}n{f.N}k{a.shape[1]}.kind::{kind}.{f.d_type}.{f.a_type}.{f.b_type}")
    c = np.zeros((f.M, f.N), np.float16 if f.d_type == "f16" else np.float32)
    if accumulate:
        for v, cta in enumerate(ctas):
            sel = lay.cta == v
            c[sel] = d_from_words(cta.tmem[lane0 + lay.lane[sel], col0 + lay.column[sel]], f.d_type)
    d = fused_mma(ins, a, b, c)
    for v, cta in enumerate(ctas):
        sel = lay.cta == v
        cta.tmem[lane0 + lay.lane[sel], col0 + lay.column[sel]] = _words(d[sel], f.d_type)
        cta.issued += 1


def tcgen05_commit(cta: CtaState, *mbarriers: Mbarrier) -> None:
    """`tcgen05.commit ... mbarrier::arrive::one`: every barrier given receives one arrival once the
    MMAs this thread issued have completed. (The model executes an MMA when it is issued, so they
    have.) Pass two barriers for the multicast form that signals both CTAs of a pair."""
    if not mbarriers:
        raise ValueError("tcgen05.commit needs an mbarrier to arrive on")
    cta.issued = 0
    for bar in mbarriers:
        bar.arrive(1)


# ------------------------------------------------------------------------------------------------
# wgmma: the same reader, SM90 descriptors, the result in registers
# ------------------------------------------------------------------------------------------------

WGMMA_NS = (8, 16, 32, 64, 128, 256)   # the N values cuda_src/wgmma_sm90.cu instantiates


@lru_cache(maxsize=64)
def _wgmma_instr(name: str):
    """parse_instr, once per instruction name (an emulated kernel issues the same wgmma many times)."""
    return parse_instr(name)


def wgmma_mma_async(smem: np.ndarray, a_descs, b_descs, N: int, dtype: str, a_major: str = "K",
                    b_major: str = "K", d_init: np.ndarray | None = None,
                    accumulate: bool = False, b_dtype: str | None = None) -> np.ndarray:
    """D (64 x N, float32) after one `wgmma.mma_async.m64nNkK.f32.{dtype}.{b_dtype}` per (a_desc, b_desc) pair,
    read from the byte array `smem` through SM90 descriptors. `dtype` is A's type (f16, bf16, tf32, e4m3, e5m2;
    K = 32 bytes per instruction), `b_dtype` B's (default: the same; e4m3 and e5m2 mix). The first instruction
    scales the incoming D by `accumulate` (scale-d); later ones accumulate. The arithmetic is
    `bwlab.umma.numerics` (F = 25, or 13 with the e8m13 result for FP8: both measured on Hopper)."""
    b_dtype = dtype if b_dtype is None else b_dtype
    if N % 8 or not 8 <= N <= 256:
        raise ValueError(f"wgmma m64nNkK takes N a multiple of 8 in [8, 256], got {N}")
    for name, t in (("A", dtype), ("B", b_dtype)):
        if t not in ("f16", "bf16", "tf32", "e4m3", "e5m2"):
            raise ValueError(f"wgmma's {name} is f16, bf16, tf32, e4m3 or e5m2, got {t!r}")
    ins = _wgmma_instr(f"m64n{N}k{instr_k(dtype)}.f32.{dtype}.{b_dtype}")     # the type rules, named
    if dtype not in ("f16", "bf16") and (a_major, b_major) != ("K", "K"):
        raise ValueError(f"wgmma with {dtype} operands reads A and B K-major only (the transpose immediates are "
                         f"for f16/bf16; PTX ISA wgmma.mma_async), got A {a_major}, B {b_major}")
    d = np.zeros((64, N), np.float32) if d_init is None else np.asarray(d_init, np.float32).copy()
    for i, (ad, bd) in enumerate(zip(a_descs, b_descs)):
        a = operand_values(read_operand(smem, decode_smem_desc(ad, "sm90"), a_major, dtype, 64), dtype)
        b = operand_values(read_operand(smem, decode_smem_desc(bd, "sm90"), b_major, b_dtype, N), b_dtype)
        acc = d if (i > 0 or accumulate) else np.zeros_like(d)
        d = fused_mma(ins, a, b, acc)
    return d


def wgmma_mma_async_rs(smem: np.ndarray, a_bits: np.ndarray, b_desc: int, N: int, dtype: str, b_major: str = "K",
                       d_init: np.ndarray | None = None, accumulate: bool = False) -> np.ndarray:
    """D (64 x N, float32) after one `wgmma.mma_async.m64nNk16.f32.{dtype}.{dtype}` whose A comes from registers:
    `a_bits` the 64 x 16 raw f16/bf16 codes (uint16) the warpgroup's fragment registers hold, B read from `smem`
    through the SM90 descriptor `b_desc`; the same arithmetic as `wgmma_mma_async`."""
    if dtype not in ("f16", "bf16"):
        raise ValueError(f"wgmma with A from registers is modelled for f16 and bf16, got {dtype!r}")
    if N % 8 or not 8 <= N <= 256:
        raise ValueError(f"wgmma m64nNk16 takes N a multiple of 8 in [8, 256], got {N}")
    ins = _wgmma_instr(f"m64n{N}k16.f32.{dtype}.{dtype}")
    a = operand_values(np.asarray(a_bits, np.uint16).reshape(64, 16), dtype)
    b = operand_values(read_operand(smem, decode_smem_desc(b_desc, "sm90"), b_major, dtype, N), dtype)
    d = np.zeros((64, N), np.float32) if d_init is None else np.asarray(d_init, np.float32).copy()
    return fused_mma(ins, a, b, d if accumulate else np.zeros_like(d))


@lru_cache(maxsize=1)
def wgmma_a_fragment():
    """(thread, register, half) of every A[m][k] of an m64k16 f16/bf16 fragment in registers (PTX wgmma
    "Register Fragments", matrix A): warp w holds rows 16w..16w+15; lane l holds rows l/4 and l/4 + 8 and
    columns 2*(l%4) + {0, 1} and + 8; register i covers (column half i/2, row half i%2), two elements to a
    register (`half` 0: bits 0-15, the lower column)."""
    m, k = np.meshgrid(np.arange(64), np.arange(16), indexing="ij")
    warp, r = m // 16, m % 16
    lane = 4 * (r % 8) + (k % 8) // 2
    reg = 2 * (k // 8) + r // 8
    return 32 * warp + lane, reg, k % 2


# Hopper's tensor core adds the 16 products of one m64nNk16 f16/bf16 instruction and the incoming f32
# accumulator in one step (bwlab.umma.numerics): every term is aligned to the largest exponent among them (a
# product's exponent is the sum of its operands' exponents, before normalisation), cut toward zero to
# WGMMA_ALIGN_BITS bits below that exponent, the cut terms are added exactly, and the sum is cut toward zero
# to float32. Measured on an H100 (docs/results/wgmma_accumulation_h100.txt): 98,304 of 98,304 accumulators
# over random bf16 operands spread across 2^-12..2^12 (K = 16 and 32, with and without an incoming D) and every
# element of a 256 x 512 x 192 ladder GEMM equal this model bit for bit; exact addition rounded once to
# nearest (the model before) differed in 31,005 of them, by up to 10,024 ulp when exponents spread widely.
WGMMA_ALIGN_BITS = 25


def wgmma_block_fma(a: np.ndarray, b: np.ndarray, acc: np.ndarray, dtype: str = "bf16") -> np.ndarray:
    """acc (M x N float32) + a (M x K) @ b (N x K)^T as Hopper's wgmma computes it, K/16 k16 steps in order
    (see WGMMA_ALIGN_BITS): `bwlab.umma.numerics.fused_mma` for wgmma.m64nNk16.f32.{dtype}. `a` and `b` are
    the element values (float64) of `dtype` (f16 or bf16: it says where an operand's subnormal range begins)."""
    a = np.asarray(a, np.float64)
    if dtype not in ("f16", "bf16"):
        raise ValueError(f"wgmma_block_fma models wgmma k16 with f16 or bf16 operands, got {dtype!r}")
    if a.shape[1] % 16:
        raise ValueError(f"wgmma k16 steps need K a multiple of 16, got {a.shape[1]}")
    ins = parse_instr(f"m64n8k16.f32.{dtype}.{dtype}")        # the arithmetic does not depend on M and N
    assert ins.F == WGMMA_ALIGN_BITS
    return fused_mma(ins, a, b, np.asarray(acc, np.float32))


def wgmma_d_fragment(N: int):
    """(thread, register) of every D[m][n] of an m64nN f32 accumulator (PTX wgmma "Register
    Fragments"): warp w holds rows 16w..16w+15; lane l holds rows l/4 and l/4 + 8 and columns
    2*(l%4) + {0, 1} of every 8-column block; register i covers (block i/4, row half (i/2)%2, i%2)."""
    m, n = np.meshgrid(np.arange(64), np.arange(N), indexing="ij")
    warp, r = m // 16, m % 16
    lane = 4 * (r % 8) + (n % 8) // 2
    reg = 4 * (n // 8) + 2 * (r // 8) + n % 2
    return 32 * warp + lane, reg
