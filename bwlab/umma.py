"""Stage 3 — UMMA: `tcgen05.mma`, its instruction descriptor, and a model of it that executes from
raw shared-memory bytes, validated on the H100 through wgmma.

One thread issues `tcgen05.mma.cta_group::1.kind::f16 [d_tmem], a_desc, b_desc, idesc, p`; the tensor
core reads A and B from shared memory through two 64-bit SMEM descriptors (`bwlab.canonical`), takes
types, shape and majors from the 32-bit instruction descriptor `idesc`, and writes D into Tensor Memory.
Completion is observed through `tcgen05.commit` to an mbarrier.

What is here:
* `make_instr_desc` / `decode_instr_desc` — the instruction descriptor (PTX ISA 9.7.16.4.2
  "Instruction descriptor"; CuTe `UMMA::InstrDescriptor` / `make_instr_desc` in
  include/cute/arch/mma_sm100_desc.hpp), with the shape rules of 9.7.16.2.1 "Matrix Shape".
* `d_tmem_layout` — where each D element lands in TMEM (PTX "Data path layout organization",
  layouts A, B, D, F; CuTe `tmem_frg` in include/cute/atom/mma_traits_sm100_frag.hpp).
* `tcgen05_mma`, `tcgen05_commit`, `MbarrierModel`, `CtaState` — the model (kind::f16, kind::tf32,
  cta_group::1 and ::2).
* `wgmma_model`, `wgmma_d_fragment` — the same SMEM-operand reader driven by SM90 descriptors, and the
  wgmma accumulator fragment layout (PTX 9.7.15.5.1.1), for the hardware check on Hopper.
* `WgmmaCase` / `run_wgmma` / `validate_wgmma_main` and `UmmaCase` / `run_umma_sm100` — GPU runners
  that take the same parameter objects as the model (cuda_src/wgmma_sm90.cu, cuda_src/umma_sm100.cu).

Numerics of the model: products are exact (as in the tensor core) and each instruction's sum is formed
in float64 and rounded once to the D type. The hardware adds in its own order and precision, so bwlab
agrees with it bit for bit whenever the exact sum is representable in D — the validation inputs are
chosen that way, so what they test is which element is read from which byte and lands where.
"""
from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass, field

import numpy as np

from . import canonical as cn
from .runtime import Report
from .hw.swizzle import SWIZZLES, span_bytes
from .canonical import (SmemDesc, canonical_layout, decode_smem_desc, elem_bytes, instr_k,
                        read_operand, tile_desc)

__all__ = [
    "KINDS", "make_instr_desc", "decode_instr_desc", "InstrDesc", "check_mma_shape", "kind_of",
    "TmemLayout", "d_tmem_layout", "tmem_address", "new_tmem", "CtaState", "MbarrierModel",
    "tcgen05_mma", "tcgen05_commit", "mma_operands", "decode_values", "encode_values",
    "wgmma_model", "wgmma_d_fragment", "WGMMA_NS", "WgmmaCase", "wgmma_cases", "run_wgmma",
    "validate_wgmma_main", "UmmaCase", "run_umma_sm100", "bench_model", "SMEM_BYTES",
    "WGMMA_BARRIERS", "UMMA_BARRIERS", "tma_fed_mma", "TmaFedMma", "format_fields", "smem_chunk_map",
    "plot_smem_layout", "plot_core_matrices", "cta_pair_mma", "plot_k_steps", "plot_d_tmem_layout", "descriptor_widget",
    "instr_desc_widget",
]

SMEM_BYTES = 232448           # 227 KiB: the most one CTA may use on sm_90 / sm_100
TMEM_LANES, TMEM_COLUMNS = 128, 512

# ------------------------------------------------------------------------------------------------
# Instruction descriptor
# ------------------------------------------------------------------------------------------------

# kind -> (A/B type codes, D type codes). Codes from the PTX ISA instruction-descriptor table.
KINDS = {
    "f16": ({"f16": 0, "bf16": 1}, {"f16": 0, "f32": 1}),
    "tf32": ({"tf32": 2}, {"f32": 1}),
    "f8f6f4": ({"e4m3": 0, "e5m2": 1}, {"f16": 0, "f32": 1}),
    "i8": ({"u8": 0, "s8": 1}, {"s32": 2}),
}
_D_CODES = {0: "f16", 1: "f32", 2: "s32"}


def kind_of(a: str, b: str) -> str:
    """The tcgen05.mma .kind that multiplies A of type `a` by B of type `b`."""
    for kind, (ab, _) in KINDS.items():
        if a in ab and b in ab:
            return kind
    names = sorted({t for ab, _ in KINDS.values() for t in ab})
    if a not in names or b not in names:
        raise ValueError(f"A/B types must be among {names}, got {a!r} and {b!r}")
    raise ValueError(f"no tcgen05.mma kind multiplies {a} by {b}: kind::f16 takes f16/bf16, "
                     f"kind::tf32 tf32, kind::f8f6f4 e4m3/e5m2, kind::i8 s8/u8")


def check_mma_shape(kind: str, M: int, N: int, cta_group: int = 1) -> None:
    """Raise ValueError unless M x N is a dense tcgen05.mma shape for `kind` and `cta_group`.

    PTX ISA 9.7.16.2.1 (Matrix Shape, no .ws, dense): cta_group::1 takes M = 64 or 128 with N a
    multiple of 8 in [8, 256]; cta_group::2 takes M = 128 or 256 with N a multiple of 16 in
    [16, 256]. kind::i8 follows CuTe's SM100_MMA_S8_SS / _2x1SM_SS: N = 8 or a multiple of 16 in
    [16, 256] (one CTA), a multiple of 32 in [32, 256] (two). (CuTe's TS atoms, with A in TMEM, and
    older CuTe SS atoms also require N % 16 for M = 128 with one CTA; the current ISA table and CuTe's
    SS atoms allow steps of 8, and both operands here come from SMEM.)
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    if cta_group not in (1, 2):
        raise ValueError(f"cta_group is 1 or 2, got {cta_group}")
    ms = (64, 128) if cta_group == 1 else (128, 256)
    if M not in ms:
        raise ValueError(f"tcgen05.mma.cta_group::{cta_group} takes M in {ms} (PTX ISA, Matrix "
                         f"Shape), got M = {M}")
    if kind == "i8":
        ok = (N == 8 or (N % 16 == 0 and 16 <= N <= 256)) if cta_group == 1 else \
             (N % 32 == 0 and 32 <= N <= 256)
        rule = ("N = 8 or a multiple of 16 in [16, 256]" if cta_group == 1
                else "N a multiple of 32 in [32, 256]")
    else:
        step = 8 if cta_group == 1 else 16
        ok = N % step == 0 and step <= N <= 256
        rule = f"N a multiple of {step} in [{step}, 256]"
    if not ok:
        raise ValueError(f"kind::{kind} cta_group::{cta_group} with M = {M} needs {rule} "
                         f"(PTX ISA, Matrix Shape), got N = {N}")


@dataclass(frozen=True)
class InstrDesc:
    """The fields of a 32-bit tcgen05.mma instruction descriptor (kind::f16/tf32/f8f6f4/i8)."""

    kind: str
    a_type: str
    b_type: str
    d_type: str
    M: int
    N: int
    a_major: str = "K"
    b_major: str = "K"
    negate_a: bool = False
    negate_b: bool = False
    saturate: bool = False
    sparse: bool = False
    sparse_id2: int = 0
    max_shift: int = 0

    def encode(self) -> int:
        ab, d = KINDS[self.kind]
        return (self.sparse_id2 | (int(self.sparse) << 2) | (int(self.saturate) << 3) |
                (d[self.d_type] << 4) | (ab[self.a_type] << 7) | (ab[self.b_type] << 10) |
                (int(self.negate_a) << 13) | (int(self.negate_b) << 14) |
                ((self.a_major == "MN") << 15) | ((self.b_major == "MN") << 16) |
                ((self.N >> 3) << 17) | ((self.M >> 4) << 24) | (self.max_shift << 30))

    def fields(self) -> list[tuple[str, str, int, str]]:
        """(bits, name, value, meaning) rows for a field table."""
        ab, d = KINDS[self.kind]
        return [
            ("0-1", "sparsity selector", self.sparse_id2, "sparse metadata id (dense: 0)"),
            ("2", "sparsity", int(self.sparse), "dense" if not self.sparse else "sparse"),
            ("3", "saturate", int(self.saturate), "kind::i8 only"),
            ("4-5", "D format", d[self.d_type], self.d_type),
            ("7-9", "A format", ab[self.a_type], self.a_type),
            ("10-12", "B format", ab[self.b_type], self.b_type),
            ("13", "negate A", int(self.negate_a), "A -> -A" if self.negate_a else "no"),
            ("14", "negate B", int(self.negate_b), "B -> -B" if self.negate_b else "no"),
            ("15", "transpose A (major)", int(self.a_major == "MN"), f"{self.a_major}-major"),
            ("16", "transpose B (major)", int(self.b_major == "MN"), f"{self.b_major}-major"),
            ("17-22", "N >> 3", self.N >> 3, f"N = {self.N}"),
            ("24-28", "M >> 4", self.M >> 4, f"M = {self.M}"),
            ("30-31", "max shift (.ws only)", self.max_shift, "0"),
        ]


def make_instr_desc(a: str, b: str, c: str, M: int, N: int, a_major: str = "K", b_major: str = "K",
                    negate_a: bool = False, negate_b: bool = False, cta_group: int = 1) -> int:
    """The 32-bit instruction descriptor of tcgen05.mma (dense, no .ws).

    `a`, `b`: "f16" "bf16" "tf32" "e4m3" "e5m2" "s8" "u8"; `c` (the D type): "f32" "f16" "s32".
    Example (CuTe make_instr_desc<half_t, half_t, float, 128, 256, K, K>): 0x08400010.
    Raises ValueError naming the broken rule: types per kind, M per cta_group, N step per kind.
    """
    kind = kind_of(a, b)
    ab, d = KINDS[kind]
    if kind == "f16" and a != b:
        # The ISA's kind::f16 rows list f16 and bf16 as one "atype/btype" column; bwlab reads that as
        # one type for both operands (as wgmma's .f32.bf16.bf16 spells out) and refuses a mix.
        raise ValueError(f"kind::f16 multiplies f16 by f16 or bf16 by bf16, got {a} x {b}")
    if c not in d:
        raise ValueError(f"kind::{kind} with {a} x {b} accumulates into {sorted(d)}, got {c!r}")
    if kind == "f16" and c == "f16" and a != "f16":
        raise ValueError("kind::f16 with an f16 accumulator takes f16 inputs only (bf16 needs f32 D)")
    for name, m in (("a_major", a_major), ("b_major", b_major)):
        if m not in ("K", "MN"):
            raise ValueError(f"{name} must be 'K' or 'MN', got {m!r}")
    if kind == "i8" and (negate_a or negate_b):
        raise ValueError("negate A/B is valid only for kind::f16, kind::tf32 and kind::f8f6f4, not kind::i8")
    check_mma_shape(kind, M, N, cta_group)
    return InstrDesc(kind, a, b, c, M, N, a_major, b_major, bool(negate_a), bool(negate_b)).encode()


def decode_instr_desc(idesc: int, kind: str = "f16") -> InstrDesc:
    """Named fields of a 32-bit instruction descriptor. The type codes mean different types per
    kind (code 0 is f16, e4m3 or u8), so say which `kind` the instruction is."""
    idesc = int(idesc)
    if not 0 <= idesc < (1 << 32):
        raise ValueError(f"an instruction descriptor is 32 bits, got {idesc:#x}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    ab, d = KINDS[kind]
    inv_ab = {v: k for k, v in ab.items()}
    inv_d = {v: k for k, v in d.items()}
    codes = {"A": (idesc >> 7) & 7, "B": (idesc >> 10) & 7}
    for op, code in codes.items():
        if code not in inv_ab:
            raise ValueError(f"{op} format code {code} is not a kind::{kind} type ({ab})")
    dcode = (idesc >> 4) & 3
    if dcode not in inv_d:
        raise ValueError(f"D format code {dcode} is not a kind::{kind} accumulator ({d})")
    return InstrDesc(kind, inv_ab[codes["A"]], inv_ab[codes["B"]], inv_d[dcode],
                     ((idesc >> 24) & 0x1F) << 4, ((idesc >> 17) & 0x3F) << 3,
                     "MN" if (idesc >> 15) & 1 else "K", "MN" if (idesc >> 16) & 1 else "K",
                     bool((idesc >> 13) & 1), bool((idesc >> 14) & 1), bool((idesc >> 3) & 1),
                     bool((idesc >> 2) & 1), idesc & 3, (idesc >> 30) & 3)


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
    check_mma_shape("f16", M, N, cta_group)
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


def tmem_address(lane: int, column: int) -> int:
    """A TMEM address: lane in bits 31-16, column in bits 15-0."""
    if not (0 <= lane < TMEM_LANES and 0 <= column < TMEM_COLUMNS):
        raise ValueError(f"TMEM has {TMEM_LANES} lanes x {TMEM_COLUMNS} columns; got lane {lane}, column {column}")
    return (lane << 16) | column


def new_tmem() -> np.ndarray:
    """A TMEM image: uint32[128 lanes, 512 columns] of raw 32-bit words (the TMEM stage's convention)."""
    return np.zeros((TMEM_LANES, TMEM_COLUMNS), dtype=np.uint32)


# ------------------------------------------------------------------------------------------------
# Element encodings
# ------------------------------------------------------------------------------------------------

def decode_values(raw: np.ndarray, dtype: str) -> np.ndarray:
    """Raw operand bits -> float64 values. tf32 drops the 13 low mantissa bits of the 32-bit word
    (the tensor core ignores them)."""
    raw = np.asarray(raw)
    if dtype == "f16":
        return raw.astype(np.uint16).view(np.float16).astype(np.float64)
    if dtype == "bf16":
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if dtype == "tf32":
        return (raw.astype(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    raise ValueError(f"bwlab's MMA model executes f16, bf16 and tf32 operands, not {dtype!r}")


def encode_values(values: np.ndarray, dtype: str) -> np.ndarray:
    """float values -> raw operand bits (uint16 for f16/bf16, uint32 for tf32). bf16 and tf32 are
    truncated, so pass values they hold exactly."""
    v = np.asarray(values, dtype=np.float64)
    if dtype == "f16":
        return v.astype(np.float16).view(np.uint16)
    if dtype == "bf16":
        return (v.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    if dtype == "tf32":
        return v.astype(np.float32).view(np.uint32) & np.uint32(0xFFFFE000)
    raise ValueError(f"bwlab's MMA model executes f16, bf16 and tf32 operands, not {dtype!r}")


def _d_from_words(words: np.ndarray, d_type: str) -> np.ndarray:
    if d_type == "f32":
        return words.astype(np.uint32).view(np.float32).astype(np.float64)
    # An f16 accumulator takes one 32-bit column per element (CuTe tmem_frg_1sm<half_t> stores
    # half_t in uint32_t); bwlab keeps the value in the low 16 bits.
    return (words.astype(np.uint32) & 0xFFFF).astype(np.uint16).view(np.float16).astype(np.float64)


def _words_from_d(d: np.ndarray, d_type: str) -> np.ndarray:
    if d_type == "f32":
        return d.astype(np.float32).view(np.uint32)
    return d.astype(np.float16).view(np.uint16).astype(np.uint32)


# ------------------------------------------------------------------------------------------------
# The tcgen05 model
# ------------------------------------------------------------------------------------------------

@dataclass
class CtaState:
    """What the tensor core of one CTA sees: its shared memory (bytes) and its TMEM image."""

    smem: np.ndarray = field(default_factory=lambda: np.zeros(SMEM_BYTES, dtype=np.uint8))
    tmem: np.ndarray = field(default_factory=new_tmem)
    issued: int = 0           # tcgen05.mma issued since the last tcgen05.commit


class MbarrierModel:
    """An mbarrier with an arrival count (no transaction bytes: tcgen05.commit only arrives)."""

    def __init__(self, arrival_count: int = 1):
        if arrival_count < 1:
            raise ValueError(f"an mbarrier expects at least one arrival, got {arrival_count}")
        self.arrival_count = arrival_count
        self.pending = arrival_count
        self.completed_phases = 0

    def arrive(self, count: int = 1) -> None:
        if count > self.pending:
            raise ValueError(f"{count} arrivals on an mbarrier that expects {self.pending} more this phase")
        self.pending -= count
        if self.pending == 0:
            self.completed_phases += 1
            self.pending = self.arrival_count

    def try_wait_parity(self, parity: int) -> bool:
        """mbarrier.try_wait.parity: true once the phase with this parity has completed."""
        return (self.completed_phases & 1) != (parity & 1)


def mma_operands(ctas, a_desc: int, b_desc: int, idesc: int, kind: str = "f16", cta_group: int = 1):
    """The A (M x K) and B (N x K) values one tcgen05.mma reads, as float64, and the decoded idesc.
    With cta_group::2 CTA 0 of the pair supplies rows [0, M/2) of A and [0, N/2) of B, CTA 1 the
    rest, each from its own SMEM at the same descriptor addresses (CuTe SM100 2x1SM A/B layouts)."""
    f = decode_instr_desc(idesc, kind)
    if kind not in ("f16", "tf32"):
        raise ValueError(f"bwlab models kind::f16 and kind::tf32, not kind::{kind}")
    if f.sparse or f.max_shift:
        raise ValueError("bwlab models dense tcgen05.mma without .ws (sparsity and max shift must be 0)")
    check_mma_shape(kind, f.M, f.N, cta_group)
    ctas = [ctas] if isinstance(ctas, CtaState) else list(ctas)
    if len(ctas) != cta_group:
        raise ValueError(f"cta_group::{cta_group} runs on {cta_group} CTA(s); got {len(ctas)}")
    ad, bd = decode_smem_desc(a_desc, "sm100"), decode_smem_desc(b_desc, "sm100")
    k = instr_k(f.a_type)
    a = np.concatenate([read_operand(c.smem, ad, f.a_major, f.a_type, f.M // cta_group, k) for c in ctas])
    b = np.concatenate([read_operand(c.smem, bd, f.b_major, f.b_type, f.N // cta_group, k) for c in ctas])
    a, b = decode_values(a, f.a_type), decode_values(b, f.b_type)
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
    ctas = [ctas] if isinstance(ctas, CtaState) else list(ctas)
    lay = d_tmem_layout(f.M, f.N, cta_group)
    lane0, col0 = (int(d_tmem) >> 16) & 0xFFFF, int(d_tmem) & 0xFFFF
    if lane0 not in ((0, 16) if lay.name == "F" else (0,)):
        raise ValueError(f"d_tmem lane must be 0 for layout {lay.name}"
                         + (" (or 16: the other half of each warp quarter)" if lay.name == "F" else "")
                         + f", got {lane0}")
    if col0 + lay.columns > TMEM_COLUMNS:
        raise ValueError(f"D needs columns [{col0}, {col0 + lay.columns}) but TMEM has {TMEM_COLUMNS}")
    prod = a @ b.T
    for v, cta in enumerate(ctas):
        sel = lay.cta == v
        lanes, cols = lane0 + lay.lane[sel], col0 + lay.column[sel]
        d = prod[sel]
        if accumulate:
            d = d + _d_from_words(cta.tmem[lanes, cols], f.d_type)
        cta.tmem[lanes, cols] = _words_from_d(d, f.d_type)
        cta.issued += 1


def tcgen05_commit(cta: CtaState, *mbarriers: MbarrierModel) -> None:
    """`tcgen05.commit ... mbarrier::arrive::one`: every barrier given receives one arrival once the
    MMAs this thread issued have completed. (The model executes an MMA when it is issued, so they
    have.) Pass two barriers for the multicast form that signals both CTAs of a pair."""
    if not mbarriers:
        raise ValueError("tcgen05.commit needs an mbarrier to arrive on")
    cta.issued = 0
    for bar in mbarriers:
        bar.arrive()


# ------------------------------------------------------------------------------------------------
# wgmma: the same reader, SM90 descriptors, the result in registers
# ------------------------------------------------------------------------------------------------

WGMMA_NS = (8, 16, 32, 64, 128, 256)   # the N values cuda_src/wgmma_sm90.cu instantiates


def wgmma_model(smem: np.ndarray, a_descs, b_descs, N: int, dtype: str, a_major: str = "K",
                b_major: str = "K", d_init: np.ndarray | None = None, accumulate: bool = False) -> np.ndarray:
    """D (64 x N, float32) after one wgmma.mma_async.m64nNk16.f32 per (a_desc, b_desc) pair, read
    from the byte array `smem` through SM90 descriptors. The first instruction scales the incoming D
    by `accumulate` (scale-d); later ones accumulate."""
    if dtype not in ("f16", "bf16"):
        raise ValueError(f"the wgmma check runs f16 and bf16, got {dtype!r}")
    if N % 8 or not 8 <= N <= 256:
        raise ValueError(f"wgmma m64nNk16 takes N a multiple of 8 in [8, 256], got {N}")
    d = np.zeros((64, N), np.float32) if d_init is None else np.asarray(d_init, np.float32).copy()
    for i, (ad, bd) in enumerate(zip(a_descs, b_descs)):
        a = decode_values(read_operand(smem, decode_smem_desc(ad, "sm90"), a_major, dtype, 64), dtype)
        b = decode_values(read_operand(smem, decode_smem_desc(bd, "sm90"), b_major, dtype, N), dtype)
        acc = d.astype(np.float64) if (i > 0 or accumulate) else 0.0
        d = (acc + a @ b.T).astype(np.float32)
    return d


def wgmma_d_fragment(N: int):
    """(thread, register) of every D[m][n] of an m64nN f32 accumulator (PTX 9.7.15.5.1.1, "Register
    fragments"): warp w holds rows 16w..16w+15; lane l holds rows l/4 and l/4 + 8 and columns
    2*(l%4) + {0, 1} of every 8-column block; register i covers (block i/4, row half (i/2)%2, i%2)."""
    m, n = np.meshgrid(np.arange(64), np.arange(N), indexing="ij")
    warp, r = m // 16, m % 16
    lane = 4 * (r % 8) + (n % 8) // 2
    reg = 4 * (n // 8) + 2 * (r // 8) + n % 2
    return 32 * warp + lane, reg


# ------------------------------------------------------------------------------------------------
# Parameter objects shared by the model and the GPU runners
# ------------------------------------------------------------------------------------------------

def _grid_values(rng, shape, step: float, limit: int) -> np.ndarray:
    """Random multiples of `step` in [-limit*step, limit*step]: sums of products stay exact."""
    return rng.integers(-limit, limit + 1, size=shape).astype(np.float64) * step


def _check_regions(regions, limit=SMEM_BYTES - 1024):
    spans = sorted((lay.base_address, lay.base_address + lay.atoms[0] * lay.atoms[1] * lay.atom_bytes, name)
                   for name, lay in regions)
    for (s0, e0, n0), (s1, e1, n1) in zip(spans, spans[1:]):
        if s1 < e0:
            raise ValueError(f"operand {n1} at {s1} overlaps operand {n0} ending at {e0}")
    if spans[-1][1] > limit:
        raise ValueError(f"the operands end at byte {spans[-1][1]}; keep them below {limit} "
                         "(227 KiB of SMEM, less the 1 KiB used to align the buffer)")
    return spans[-1][1]


@dataclass(frozen=True)
class WgmmaCase:
    """One wgmma check: A (64 x K) and B (N x K) stored in canonical layouts at given SMEM offsets,
    one m64nNk16 per 16 of K. `a_base_offset`/`b_base_offset` set the descriptors' base-offset field."""

    dtype: str
    N: int
    K: int
    a_major: str
    a_swizzle: str
    b_major: str
    b_swizzle: str
    a_base: int = 0
    b_base: int = 16384
    accumulate: bool = False
    a_base_offset: int = 0
    b_base_offset: int = 0
    seed: int = 0

    def __post_init__(self):
        if self.dtype not in ("f16", "bf16"):
            raise ValueError(f"the wgmma check runs f16 and bf16, got {self.dtype!r}")
        if self.N not in WGMMA_NS:
            raise ValueError(f"cuda_src/wgmma_sm90.cu instantiates N in {WGMMA_NS}, got {self.N}")
        if self.K % 16 or not 16 <= self.K <= 16 * 16:
            raise ValueError(f"K must be a multiple of 16 (one m64nNk16 each) up to 256, got {self.K}")
        _check_regions([("A", self.a_layout), ("B", self.b_layout)])

    @property
    def a_layout(self):
        return canonical_layout(self.a_major, self.a_swizzle, self.dtype, (64, self.K), self.a_base)

    @property
    def b_layout(self):
        return canonical_layout(self.b_major, self.b_swizzle, self.dtype, (self.N, self.K), self.b_base)

    @property
    def k_blocks(self) -> int:
        return self.K // 16

    @property
    def variant(self) -> int:
        return int(self.dtype == "bf16") | (int(self.a_major == "MN") << 1) | (int(self.b_major == "MN") << 2)

    def values(self):
        """A (64 x K), B (N x K) and the initial D as float64, exact in the element types."""
        rng = np.random.default_rng(self.seed)
        a = _grid_values(rng, (64, self.K), 0.25, 8)
        b = _grid_values(rng, (self.N, self.K), 0.25, 8)
        d0 = _grid_values(rng, (64, self.N), 1 / 16, 128) if self.accumulate else np.zeros((64, self.N))
        return a, b, d0

    def smem_image(self) -> np.ndarray:
        a, b, _ = self.values()
        end = _check_regions([("A", self.a_layout), ("B", self.b_layout)])
        img = np.zeros((end + 15) // 16 * 16, np.uint8)
        self.a_layout.store(img, encode_values(a, self.dtype))
        self.b_layout.store(img, encode_values(b, self.dtype))
        return img

    def descriptors(self):
        """SM90 descriptors per K block (start addresses relative to the operand image)."""
        def descs(lay, bo):
            out = []
            for kb in range(self.k_blocks):
                d = tile_desc(lay.major, lay.swizzle, lay.dtype, lay.tile, kb, lay.base_address, "sm90")
                out.append(SmemDesc(d.start_address, d.leading_byte_offset, d.stride_byte_offset,
                                    d.swizzle, bo, 0, 1, "sm90").encode())
            return np.array(out, dtype=np.uint64)
        return descs(self.a_layout, self.a_base_offset), descs(self.b_layout, self.b_base_offset)

    def model(self) -> np.ndarray:
        """What the H100 should return, from the image bytes and descriptors alone."""
        ad, bd = self.descriptors()
        img = np.zeros(SMEM_BYTES, np.uint8)
        raw = self.smem_image()
        img[:raw.size] = raw
        return wgmma_model(img, ad, bd, self.N, self.dtype, self.a_major, self.b_major,
                           self.values()[2], self.accumulate)

    def reference(self) -> np.ndarray:
        """Plain NumPy: D0 + A @ B^T (an independent path that never touches the layouts)."""
        a, b, d0 = self.values()
        return (d0 + a @ b.T).astype(np.float32)

    def label(self) -> str:
        return (f"{self.dtype:4s} N={self.N:<3d} K={self.K:<3d} A {self.a_major:>2s}-major {self.a_swizzle:>4s} "
                f"@{self.a_base:<6d} B {self.b_major:>2s}-major {self.b_swizzle:>4s} @{self.b_base:<6d}"
                + (" acc" if self.accumulate else "")
                + (f" base_offset A{self.a_base_offset}/B{self.b_base_offset}"
                   if self.a_base_offset or self.b_base_offset else ""))


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def wgmma_cases(seed: int = 0):
    """Every layout x swizzle for A and for B, in f16 and bf16 (128 cases), with N and the number of
    K blocks varied, both tiles at non-zero offsets aligned to their swizzle span; then the
    exploratory cases with tiles off their span boundary (returned separately)."""
    rng = np.random.default_rng(seed)
    regular, n_cycle, k_cycle = [], [256, 8, 64, 16, 128, 32], [64, 128, 32, 16]
    i = 0
    for dtype in ("f16", "bf16"):
        for a_major in cn.MAJORS:
            for a_sw in cn.SWIZZLE_NAMES:
                for b_major in cn.MAJORS:
                    for b_sw in cn.SWIZZLE_NAMES:
                        b_min_n = cn.atom_shape(b_major, b_sw, dtype)[0]
                        n = next(x for x in n_cycle[i % 6:] + n_cycle if x % b_min_n == 0)
                        k_atom = max(cn.atom_shape(a_major, a_sw, dtype)[1], cn.atom_shape(b_major, b_sw, dtype)[1], 16)
                        k = _round_up(k_cycle[i % 4], k_atom)
                        span_a = span_bytes(a_sw) if a_sw != "none" else 16
                        span_b = span_bytes(b_sw) if b_sw != "none" else 16
                        a_base = span_a * int(rng.integers(1, 4)) if a_sw != "none" else 16 * int(rng.integers(1, 64))
                        a_end = a_base + 64 * k * 2
                        b_base = _round_up(a_end + int(rng.integers(0, 3)) * 1024 + 16 * int(rng.integers(0, 8)), span_b)
                        regular.append(WgmmaCase(dtype, n, k, a_major, a_sw, b_major, b_sw, a_base, b_base,
                                                 accumulate=bool(i % 3 == 1), seed=seed * 1000 + i))
                        i += 1
    exploratory = []
    for j, (sw, major) in enumerate([(s, m) for s in ("128B", "64B", "32B") for m in cn.MAJORS]):
        span = span_bytes(sw)
        shift = 128 * (1 + j % (span // 128 - 1))        # a whole number of 128-byte rows, not of the span
        k = _round_up(64, cn.atom_shape(major, sw, "f16")[1])
        a_base = 4096 + shift
        bo = (a_base >> 7) & 7
        for a_bo in (0, bo):
            exploratory.append(WgmmaCase("f16", 64, k, major, sw, "K", "none", a_base,
                                         _round_up(a_base + 64 * k * 2, 1024), a_base_offset=a_bo,
                                         seed=seed * 1000 + 500 + j))
    return regular, exploratory


# ------------------------------------------------------------------------------------------------
# GPU runners
# ------------------------------------------------------------------------------------------------

WGMMA_BARRIERS: dict = {}          # the wgmma kernel waits on no mbarrier (wgmma.wait_group)
UMMA_BARRIERS = {0: "mma_done"}


def run_wgmma(case: WgmmaCase, module=None):
    """Run `case` on a Hopper GPU (cuda_src/wgmma_sm90.cu). Returns (D 64 x N float32, the SMEM
    address where the operand image started)."""
    import cupy as cp
    from . import device
    from .compile import load_module
    from .runtime import launch
    info = device.require("tma")
    if not info.has_wgmma:
        raise device.UnsupportedGPU(f"wgmma.mma_async needs sm_90a (Hopper); this GPU is {info.name} ({info.sm})")
    module = module or load_module("wgmma_sm90")
    img = case.smem_image()
    ad, bd = case.descriptors()
    frag_t, frag_r = wgmma_d_fragment(case.N)
    d0 = case.values()[2].astype(np.float32)
    d_init = np.zeros((128, case.N // 2), np.float32)
    d_init[frag_t, frag_r] = d0
    d_img, d_ad, d_bd = cp.asarray(img), cp.asarray(ad), cp.asarray(bd)
    d_in, d_out = cp.asarray(d_init), cp.zeros((128, case.N // 2), cp.float32)
    base = cp.zeros(1, cp.uint32)
    launch(module, f"wgmma_m64n{case.N}k16_validate", (1,), (128,),
           (d_img, np.uint32(img.size), d_ad, d_bd, np.uint32(case.k_blocks), np.uint32(case.variant),
            np.uint32(case.accumulate), d_in, d_out, base),
           shared_mem=img.size + 1024, barrier_names=WGMMA_BARRIERS)
    regs = cp.asnumpy(d_out)
    return regs[frag_t, frag_r], int(base.get()[0])


def _compare_bits(x: np.ndarray, y: np.ndarray) -> int:
    return int(np.count_nonzero(np.asarray(x, np.float32).view(np.uint32) != np.asarray(y, np.float32).view(np.uint32)))


def _hypothesis_model(case: WgmmaCase, rule: str) -> np.ndarray:
    """The model with an alternative reading of the descriptor base offset (for the exploratory
    cases): 'ignored' (the row is address bits 7-9 as they are), 'subtract' (bwlab's model: the row
    counts from the pattern start the base offset names), 'relative' (the row counts from the
    descriptor's start address plus the base offset)."""
    ad, bd = case.descriptors()
    img = np.zeros(SMEM_BYTES, np.uint8)
    raw = case.smem_image()
    img[:raw.size] = raw

    def read(desc_word, major, mn):
        desc = decode_smem_desc(desc_word, "sm90")
        if desc.swizzle == "none":
            addr = cn.descriptor_addresses(desc, major, case.dtype, mn)
        else:
            plain = _unswizzled(desc, major, case.dtype, mn)
            mask = (1 << SWIZZLES[desc.swizzle].bits) - 1
            row = {"ignored": plain >> 7,
                   "subtract": (plain >> 7) - desc.base_offset,
                   "relative": ((plain - desc.start_address) >> 7) + desc.base_offset}[rule]
            addr = plain ^ ((row & mask) << 4)
        return decode_values(img.view(np.uint16)[addr // 2], case.dtype)

    d = case.values()[2].astype(np.float32) if case.accumulate else np.zeros((64, case.N), np.float32)
    for i, (a_w, b_w) in enumerate(zip(ad, bd)):
        a, b = read(a_w, case.a_major, 64), read(b_w, case.b_major, case.N)
        acc = d.astype(np.float64) if (i > 0 or case.accumulate) else 0.0
        d = (acc + a @ b.T).astype(np.float32)
    return d


def _unswizzled(desc: SmemDesc, major: str, dtype: str, mn: int) -> np.ndarray:
    """Addresses a swizzled descriptor walks before the swizzle is applied."""
    w = cn.SWIZZLE_WIDTH[desc.swizzle]
    eb = elem_bytes(dtype)
    i, j = np.meshgrid(np.arange(mn, dtype=np.int64), np.arange(instr_k(dtype), dtype=np.int64), indexing="ij")
    lbo, sbo = desc.leading_byte_offset, desc.stride_byte_offset
    if major == "K":
        off = (i % 8) * w + (i // 8) * sbo + j * eb
    else:
        b = i * eb
        off = (j % 8) * w + (j // 8) * sbo + (b // w) * lbo + b % w
    return desc.start_address + off


def validate_wgmma_main(argv=None) -> int:
    """python -m bwlab.validate wgmma [--seed S] [--out FILE]: every canonical layout x swizzle x
    f16/bf16 through wgmma on the H100, compared bit for bit with bwlab's model."""
    ap = argparse.ArgumentParser(prog="python -m bwlab.validate wgmma")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="also write the report to this file")
    ap.add_argument("--no-exploratory", action="store_true",
                    help="skip the cases with tiles off their swizzle-span boundary")
    args = ap.parse_args(argv)
    from . import device
    from .compile import load_module
    say = Report()

    say(device.banner(print_it=False))
    info = device.gpu_info()
    if info is None or not info.has_wgmma:
        say("wgmma needs an sm_90a GPU (Hopper); nothing to validate here")
        return 1
    t0 = time.perf_counter()
    module = load_module("wgmma_sm90")
    say(f"compiled cuda_src/wgmma_sm90.cu for {device.native_arch()} in {time.perf_counter() - t0:.1f} s")
    regular, exploratory = wgmma_cases(args.seed)
    failures, bases = 0, set()
    say(f"{len(regular)} cases: D(hardware) vs D(model from SMEM bytes + SM90 descriptors), bit for bit; "
        "and D(model) vs NumPy D0 + A @ B^T")
    for case in regular:
        hw, base = run_wgmma(case, module)
        bases.add(base)
        model, ref = case.model(), case.reference()
        bad_hw, bad_ref = _compare_bits(hw, model), _compare_bits(model, ref)
        ok = bad_hw == 0 and bad_ref == 0
        failures += not ok
        say(f"  {'ok  ' if ok else 'FAIL'} {case.label()}  hw!=model: {bad_hw:5d}  model!=numpy: {bad_ref:5d}")
    say(f"regular cases: {len(regular) - failures}/{len(regular)} exact "
        f"(operand image at SMEM address {sorted(bases)})")
    if not args.no_exploratory:
        say("")
        say("exploratory: swizzled A tiles that start off their 256/512/1024-byte pattern boundary, with the "
            "descriptor base offset 0 and (start >> 7) & 7. Which reading of the base offset does the "
            "hardware follow? (bwlab's model: 'subtract')")
        tally = {"ignored": 0, "subtract": 0, "relative": 0}
        exp_fail = 0
        for case in exploratory:
            hw, _ = run_wgmma(case, module)
            match = [rule for rule in tally if _compare_bits(hw, _hypothesis_model(case, rule)) == 0]
            for rule in match:
                tally[rule] += 1
            ok = _compare_bits(hw, case.model()) == 0
            exp_fail += not ok
            say(f"  {'ok  ' if ok else 'FAIL'} {case.label()}  matches: {', '.join(match) or 'none'}")
        say(f"exploratory: model exact on {len(exploratory) - exp_fail}/{len(exploratory)}; "
            f"hypotheses matching every case: {[r for r, n in tally.items() if n == len(exploratory)]}")
        failures += exp_fail
    say(f"wgmma validation: {'PASS' if failures == 0 else f'{failures} FAILURE(S)'}")
    say.save(args.out)
    return 0 if failures == 0 else 1


# ------------------------------------------------------------------------------------------------
# tcgen05 on Blackwell
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class UmmaCase:
    """One tcgen05.mma.cta_group::1 run: A (M x K), B (N x K) in canonical layouts, one instruction
    per instruction-K slice, D in TMEM at column 0. `ab` is the A/B type ('f16', 'bf16', 'tf32'),
    `d` the accumulator type ('f32', or 'f16' with f16 inputs)."""

    ab: str
    d: str
    M: int
    N: int
    K: int
    a_major: str = "K"
    a_swizzle: str = "128B"
    b_major: str = "K"
    b_swizzle: str = "128B"
    a_base: int = 0
    b_base: int = 32768
    accumulate: bool = False
    seed: int = 0

    def __post_init__(self):
        self.idesc  # validates types, M and N
        ki = instr_k(self.ab)
        if self.K % ki or not ki <= self.K <= 16 * ki:
            raise ValueError(f"K must be a multiple of {ki} ({self.ab}: one instruction each), at most 16 of them")
        _check_regions([("A", self.a_layout), ("B", self.b_layout)])

    @property
    def kind(self) -> str:
        return kind_of(self.ab, self.ab)

    @property
    def idesc(self) -> int:
        return make_instr_desc(self.ab, self.ab, self.d, self.M, self.N, self.a_major, self.b_major)

    @property
    def a_layout(self):
        return canonical_layout(self.a_major, self.a_swizzle, self.ab, (self.M, self.K), self.a_base)

    @property
    def b_layout(self):
        return canonical_layout(self.b_major, self.b_swizzle, self.ab, (self.N, self.K), self.b_base)

    @property
    def k_blocks(self) -> int:
        return self.K // instr_k(self.ab)

    @property
    def tmem_columns(self) -> int:
        """Columns to allocate: a power of two >= 32 covering D."""
        n = 32
        while n < d_tmem_layout(self.M, self.N).columns:
            n *= 2
        return n

    def values(self):
        rng = np.random.default_rng(self.seed)
        step, lim = (0.25, 8) if self.d == "f32" else (0.5, 3)
        a = _grid_values(rng, (self.M, self.K), step, lim)
        b = _grid_values(rng, (self.N, self.K), step, lim)
        d0 = _grid_values(rng, (self.M, self.N), 1 / 16, 128 if self.d == "f32" else 16) \
            if self.accumulate else np.zeros((self.M, self.N))
        return a, b, d0

    def smem_image(self) -> np.ndarray:
        a, b, _ = self.values()
        end = _check_regions([("A", self.a_layout), ("B", self.b_layout)])
        img = np.zeros((end + 15) // 16 * 16, np.uint8)
        self.a_layout.store(img, encode_values(a, self.ab))
        self.b_layout.store(img, encode_values(b, self.ab))
        return img

    def descriptors(self):
        a = [cn.smem_desc_for_tile(self.a_major, self.a_swizzle, self.ab, (self.M, self.K), kb, self.a_base)
             for kb in range(self.k_blocks)]
        b = [cn.smem_desc_for_tile(self.b_major, self.b_swizzle, self.ab, (self.N, self.K), kb, self.b_base)
             for kb in range(self.k_blocks)]
        return np.array(a, np.uint64), np.array(b, np.uint64)

    def tmem_init(self) -> np.ndarray:
        """TMEM image (128 x tmem_columns words) holding D0 where the layout puts it."""
        tm = np.zeros((TMEM_LANES, self.tmem_columns), np.uint32)
        lay = d_tmem_layout(self.M, self.N)
        tm[lay.lane, lay.column] = _words_from_d(self.values()[2], self.d)
        return tm

    def model(self) -> np.ndarray:
        """The TMEM image (128 x tmem_columns) after the K loop, computed by tcgen05_mma."""
        cta = CtaState()
        img = self.smem_image()
        cta.smem[:img.size] = img
        cta.tmem[:, :self.tmem_columns] = self.tmem_init()
        bar = MbarrierModel(1)
        for kb, (ad, bd) in enumerate(zip(*self.descriptors())):
            tcgen05_mma(cta, 0, int(ad), int(bd), self.idesc, kb > 0 or self.accumulate, self.kind)
        tcgen05_commit(cta, bar)
        assert bar.try_wait_parity(0)
        return cta.tmem[:, :self.tmem_columns].copy()

    def d_from_tmem(self, tmem: np.ndarray) -> np.ndarray:
        lay = d_tmem_layout(self.M, self.N)
        return _d_from_words(tmem[lay.lane, lay.column], self.d)

    def reference(self) -> np.ndarray:
        a, b, d0 = self.values()
        return d0 + a @ b.T


def run_umma_sm100(case: UmmaCase, module=None) -> np.ndarray:
    """Run `case` on an sm_100 GPU (cuda_src/umma_sm100.cu); returns the TMEM image (128 lanes x
    case.tmem_columns) that tcgen05.ld read back after the K loop."""
    import cupy as cp
    from . import device
    from .compile import load_module
    from .runtime import launch
    device.require("umma")            # raises UnsupportedGPU (before any driver call) off sm_100
    module = module or load_module("umma_sm100")
    img = case.smem_image()
    ad, bd = case.descriptors()
    cols = case.tmem_columns
    out = cp.zeros((TMEM_LANES, cols), cp.uint32)
    launch(module, "umma_validate", (1,), (128,),
           (cp.asarray(img), np.uint32(img.size), cp.asarray(ad), cp.asarray(bd), np.uint32(case.k_blocks),
            np.uint32(case.idesc), np.uint32(case.kind == "tf32"), np.uint32(case.accumulate),
            cp.asarray(case.tmem_init()), out, np.uint32(cols)),
           shared_mem=img.size + 1024, barrier_names=UMMA_BARRIERS)
    return cp.asnumpy(out)


# ------------------------------------------------------------------------------------------------
# The hybrid path: operands that TMA loaded, multiplied by the model
# ------------------------------------------------------------------------------------------------

@dataclass
class TmaFedMma:
    """Result of `tma_fed_mma`: where the bytes came from, the D the model computed from them, and
    NumPy's D from the same values."""

    source: str
    d_model: np.ndarray
    d_numpy: np.ndarray
    a_bytes: np.ndarray
    b_bytes: np.ndarray
    descriptors: list

    @property
    def exact(self) -> bool:
        return bool(np.array_equal(self.d_model, self.d_numpy))


def tma_fed_mma(M: int = 128, N: int = 256, K: int = 64, dtype: str = "f16", seed: int = 0,
                use_gpu: bool | None = None) -> TmaFedMma:
    """Load A (M x K) and B (N x K), both row-major in global memory with K contiguous, by TMA with the
    128-byte swizzle — for real when the GPU has TMA (`use_gpu` None: when tier('tma') is
    'hardware'), else through bwlab.tma's model — then run the K loop of tcgen05.mma in the model on
    those SMEM bytes. The box {64, rows} of 64 f16 = 128 bytes per row lands exactly in the K-major
    SW128 canonical layout, so the descriptors are `smem_desc_for_tile('K', '128B', ...)`."""
    from . import device
    from . import tma
    if K != 64 or dtype not in ("f16", "bf16"):
        raise ValueError("this demonstration loads one 128-byte-wide box per operand: K = 64 of f16/bf16")
    check_mma_shape("f16", M, N)
    if use_gpu is None:
        use_gpu = device.tier("tma") == "hardware"
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 9, (M, K)) / 4
    b = rng.integers(-8, 9, (N, K)) / 4
    tdt = {"f16": "float16", "bf16": "bfloat16"}[dtype]
    loads = []
    for vals in (a, b):
        gmem = encode_values(vals, dtype)                       # (rows, K) row-major: K contiguous
        tmap = tma.TensorMap(tdt, (K, vals.shape[0]), (K, vals.shape[0]), swizzle="128B")
        loads.append(tma.run_tma_load(tmap, gmem, (0, 0)) if use_gpu else tma.tma_load_model(gmem, tmap, (0, 0)))
    cta = CtaState()
    a_base, b_base = 0, _round_up(loads[0].size, 1024)
    cta.smem[a_base:a_base + loads[0].size] = loads[0]
    cta.smem[b_base:b_base + loads[1].size] = loads[1]
    idesc = make_instr_desc(dtype, dtype, "f32", M, N)
    descs = []
    for kb in range(K // 16):
        ad = cn.smem_desc_for_tile("K", "128B", dtype, (M, K), kb, a_base)
        bd = cn.smem_desc_for_tile("K", "128B", dtype, (N, K), kb, b_base)
        descs.append((ad, bd))
        tcgen05_mma(cta, 0, ad, bd, idesc, kb > 0)
    bar = MbarrierModel()
    tcgen05_commit(cta, bar)
    lay = d_tmem_layout(M, N)
    d = _d_from_words(cta.tmem[lay.lane, lay.column], "f32")
    source = "TMA on the GPU" if use_gpu else "bwlab.tma model"
    return TmaFedMma(source, d, a @ b.T, loads[0], loads[1], descs)


def cta_pair_mma(M: int = 256, N: int = 64, K: int = 64, seed: int = 0):
    """cta_group::2 in the model: each CTA of the pair stages its half of A (rows) and its half of B
    (columns of D) at the same SMEM addresses; one instruction stream computes the whole M x N.
    Returns (D gathered from both CTAs' TMEM, NumPy A @ B^T)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 9, (M, K)) / 4
    b = rng.integers(-8, 9, (N, K)) / 4
    pair = [CtaState(), CtaState()]
    b_base = _round_up(M // 2 * K * 2, 1024)
    for v, cta in enumerate(pair):
        canonical_layout("K", "128B", "f16", (M // 2, K), 0).store(cta.smem, encode_values(a[v * M // 2:(v + 1) * M // 2], "f16"))
        canonical_layout("K", "128B", "f16", (N // 2, K), b_base).store(cta.smem, encode_values(b[v * N // 2:(v + 1) * N // 2], "f16"))
    idesc = make_instr_desc("f16", "f16", "f32", M, N, cta_group=2)
    for kb in range(K // 16):
        tcgen05_mma(pair, 0, cn.smem_desc_for_tile("K", "128B", "f16", (M // 2, K), kb, 0),
                    cn.smem_desc_for_tile("K", "128B", "f16", (N // 2, K), kb, b_base), idesc, kb > 0, cta_group=2)
    bars = [MbarrierModel(), MbarrierModel()]
    tcgen05_commit(pair[0], *bars)          # the multicast commit signals both CTAs
    lay = d_tmem_layout(M, N, 2)
    d = np.zeros((M, N))
    for v, cta in enumerate(pair):
        sel = lay.cta == v
        d[sel] = _d_from_words(cta.tmem[lay.lane[sel], lay.column[sel]], "f32")
    return d, a @ b.T


# ------------------------------------------------------------------------------------------------
# Pictures and tables for notebook 03
# ------------------------------------------------------------------------------------------------

def format_fields(rows, title: str = "") -> str:
    """A text table of (bits, name, value, meaning) rows."""
    out = [title] if title else []
    out.append(f"{'bits':>6s}  {'field':38s} {'value':>6s}  meaning")
    out += [f"{b:>6s}  {n:38s} {v:>6d}  {m}" for b, n, v, m in rows]
    return "\n".join(out)


def smem_chunk_map(major: str, swizzle: str, dtype: str = "f16", tile=(16, 64), base_address: int = 0):
    """For each 16-byte chunk of the tile's SMEM span: the (mn, k) of its first element."""
    lay = canonical_layout(major, swizzle, dtype, tile, base_address)
    addr = lay.addresses()
    n_chunks = lay.nbytes // 16
    first = np.full((n_chunks, 2), -1, np.int64)
    mn, k = np.meshgrid(np.arange(tile[0]), np.arange(tile[1]), indexing="ij")
    chunk = (addr - base_address) // 16
    at_start = (addr % 16) == 0
    first[chunk[at_start], 0] = mn[at_start]
    first[chunk[at_start], 1] = k[at_start]
    return first


def plot_smem_layout(major: str, swizzle: str, dtype: str = "f16", tile=None, ax=None, lines: int = 8):
    """SMEM as 128-byte lines of eight 16-byte chunks; each chunk says which row and which 16-byte
    piece of the operand it holds, coloured by that piece (K-major: the K chunk; MN-major: the K row),
    so the swizzle shows as a permutation of colours along each line."""
    import matplotlib.pyplot as plt
    from .plotting import add_legend, draw_grid, thread_color
    tile = tile or ((16, 64) if major == "K" else (64, 16))
    first = smem_chunk_map(major, swizzle, dtype, tile)
    lines = min(lines, len(first) // 8)
    per16 = 16 // elem_bytes(dtype)
    colors = np.empty((lines, 8), dtype=object)
    text = np.empty((lines, 8), dtype=object)
    for i in range(lines):
        for j in range(8):
            mn, k = first[8 * i + j]
            key = k // per16 if major == "K" else k
            colors[i, j] = thread_color(4 * (key % 8), 32)
            text[i, j] = f"m{mn}\nk{k}"
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 0.45 * lines + 1.2))
    what = "K chunk (16 B of K)" if major == "K" else "K row"
    draw_grid(ax, colors, text, fontsize=6, title=f"{major}-major, swizzle {swizzle} ({dtype} {tile[0]}x{tile[1]})",
              xlabel="16-byte chunk of the 128-byte SMEM line", ylabel="SMEM byte",
              xticks=[str(j) for j in range(8)], yticks=[f"{128 * i}" for i in range(lines)])
    add_legend(ax, [(f"{what} {c} (mod 8)", thread_color(4 * c, 32)) for c in range(8)],
               title="chunk holds m=row, k=first K")
    return ax


def plot_core_matrices(major: str = "K", dtype: str = "f16", tile=(16, 32), ax=None):
    """The logical operand tile, each element coloured by the core matrix (8 rows x 16 bytes) it
    belongs to: the unit the descriptors' LBO and SBO step between."""
    import matplotlib.pyplot as plt
    from .plotting import add_legend, draw_grid, cta_color
    per16 = 16 // elem_bytes(dtype)
    mn, k = np.meshgrid(np.arange(tile[0]), np.arange(tile[1]), indexing="ij")
    if major == "K":
        cm = (mn // 8) + (tile[0] // 8) * (k // per16)
    else:
        cm = (mn // per16) + (tile[0] // per16) * (k // 8)
    colors = np.vectorize(cta_color, otypes=[object])(cm)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.25 * tile[0] + 1.5))
    draw_grid(ax, colors, None, title=f"{major}-major {dtype} {tile[0]}x{tile[1]} tile: core matrices",
              xlabel="k", ylabel="m (or n)")
    add_legend(ax, [(f"core matrix {i}", cta_color(i)) for i in range(int(cm.max()) + 1)][:10])
    return ax


def plot_k_steps(major: str = "K", swizzle: str = "128B", dtype: str = "f16", tile=(8, 64), ax=None):
    """Which SMEM chunks each instruction of the K loop reads (coloured by K step), with each
    step's descriptor start address: inside a 128-byte swizzle atom the start moves 32 bytes per
    step while the swizzle scatters the chunks it names."""
    import matplotlib.pyplot as plt
    from .plotting import add_legend, draw_grid, cta_color
    lay = canonical_layout(major, swizzle, dtype, tile)
    ki = instr_k(dtype)
    owner = np.full(lay.nbytes // 16, -1)
    starts = []
    for kb in range(tile[1] // ki):
        d = tile_desc(major, swizzle, dtype, tile, kb)
        starts.append(d.start_address)
        addr = cn.descriptor_addresses(d, major, dtype, tile[0])
        owner[np.unique(addr // 16)] = kb
    lines = len(owner) // 8
    colors = np.vectorize(lambda o: cta_color(o) if o >= 0 else "#e6e6e6", otypes=[object])(owner.reshape(lines, 8))
    text = owner.reshape(lines, 8).astype(object)
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 0.45 * lines + 1.2))
    draw_grid(ax, colors, text, fontsize=7, title=f"K loop over a {major}-major {swizzle} tile: chunks read per step",
              xlabel="16-byte chunk of the 128-byte SMEM line", ylabel="SMEM byte",
              xticks=[str(j) for j in range(8)], yticks=[f"{128 * i}" for i in range(lines)])
    add_legend(ax, [(f"step {kb}: start address {s}", cta_color(kb)) for kb, s in enumerate(starts)],
               title="descriptor of each step")
    return ax


def plot_d_tmem_layout(M: int, N: int, cta_group: int = 1, ax=None):
    """Which TMEM lane and column each accumulator row lands in (coloured by the row's 16-row
    group); lanes a warp cannot reach stay grey."""
    import matplotlib.pyplot as plt
    from .plotting import add_legend, draw_grid, warp_color
    lay = d_tmem_layout(M, N, cta_group)
    sel = lay.cta == 0
    cols = lay.columns
    grid = np.full((TMEM_LANES, cols), -1)
    m = np.broadcast_to(np.arange(M)[:, None], (M, N))
    grid[lay.lane[sel], lay.column[sel]] = m[sel]
    step = max(1, cols // 32)
    shown = grid[:, ::step]
    colors = np.vectorize(lambda r: warp_color(r // 32) if r >= 0 else "#e6e6e6", otypes=[object])(shown)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 6))
    draw_grid(ax, colors, None, title=f"D of M={M} N={N} cta_group::{cta_group}: layout {lay.name}"
              + (" (CTA 0 of the pair)" if cta_group == 2 else ""),
              xlabel=f"TMEM column (every {step})" if step > 1 else "TMEM column", ylabel="TMEM lane")
    present = sorted({int(r) // 32 for r in m[sel].ravel()})
    add_legend(ax, [(f"D rows {32 * w}-{32 * w + 31}", warp_color(w)) for w in present]
               + [("not written", "#e6e6e6")], title="which D row")
    return ax


def descriptor_widget():
    """An ipywidgets encoder/decoder: pick a layout and see both descriptors and their fields; or
    type a 64-bit descriptor and see it decoded."""
    import ipywidgets as w
    from IPython.display import display
    major = w.Dropdown(options=list(cn.MAJORS), value="K", description="major")
    swz = w.Dropdown(options=list(cn.SWIZZLE_NAMES), value="128B", description="swizzle")
    dt = w.Dropdown(options=["f16", "bf16", "tf32", "e4m3", "s8"], value="f16", description="dtype")
    mn = w.IntText(value=128, description="tile MN")
    kk = w.IntText(value=64, description="tile K")
    kb = w.IntText(value=0, description="k_block")
    base = w.IntText(value=0, description="base addr")
    raw = w.Text(value="0x4000404000010000", description="decode")
    out = w.Output()

    def show(*_):
        out.clear_output()
        with out:
            try:
                for arch in cn.ARCHS:
                    d = tile_desc(major.value, swz.value, dt.value, (mn.value, kk.value), kb.value, base.value, arch)
                    print(format_fields(d.fields(), f"{arch}: {d.encode():#018x}"))
                    print()
            except ValueError as e:
                print(f"ValueError: {e}")
            try:
                v = int(raw.value, 0)
                for arch in cn.ARCHS:
                    try:
                        print(format_fields(cn.decode_smem_desc(v, arch).fields(), f"{v:#018x} read as {arch}"))
                    except ValueError as e:
                        print(f"{v:#018x} as {arch}: ValueError: {e}")
            except ValueError:
                print(f"not a number: {raw.value!r}")

    for c in (major, swz, dt, mn, kk, kb, base, raw):
        c.observe(show, names="value")
    show()
    box = w.VBox([w.HBox([major, swz, dt]), w.HBox([mn, kk, kb, base]), raw, out])
    display(box)
    return box


def instr_desc_widget():
    """An ipywidgets encoder for the instruction descriptor, with the rule broken when invalid."""
    import ipywidgets as w
    from IPython.display import display
    ab = w.Dropdown(options=["f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"], value="f16", description="A, B")
    c = w.Dropdown(options=["f32", "f16", "s32"], value="f32", description="D")
    M = w.Dropdown(options=[64, 128, 256], value=128, description="M")
    N = w.IntText(value=256, description="N")
    am = w.Dropdown(options=["K", "MN"], value="K", description="A major")
    bm = w.Dropdown(options=["K", "MN"], value="K", description="B major")
    cg = w.Dropdown(options=[1, 2], value=1, description="cta_group")
    out = w.Output()

    def show(*_):
        out.clear_output()
        with out:
            try:
                v = make_instr_desc(ab.value, ab.value, c.value, M.value, N.value, am.value, bm.value,
                                    cta_group=cg.value)
                print(format_fields(decode_instr_desc(v, kind_of(ab.value, ab.value)).fields(), f"idesc = {v:#010x}"))
            except ValueError as e:
                print(f"ValueError: {e}")

    for x in (ab, c, M, N, am, bm, cg):
        x.observe(show, names="value")
    show()
    box = w.VBox([w.HBox([ab, c, cg]), w.HBox([M, N, am, bm]), out])
    display(box)
    return box


# ------------------------------------------------------------------------------------------------
# Benchmark of the model
# ------------------------------------------------------------------------------------------------

def bench_model(M: int = 128, N: int = 256, repeat: int = 50) -> dict:
    """Median wall time of one modelled tcgen05.mma (kind::f16, f16 x f16 -> f32, K-major SW128),
    from SMEM bytes and descriptors to the TMEM image."""
    case = UmmaCase("f16", "f32", M, N, 64, a_base=0, b_base=_round_up(M * 64 * 2, 1024))
    cta = CtaState()
    img = case.smem_image()
    cta.smem[:img.size] = img
    ad, bd = (int(x[0]) for x in case.descriptors())
    times = []
    for i in range(repeat + 3):
        t0 = time.perf_counter()
        tcgen05_mma(cta, 0, ad, bd, case.idesc, False)
        if i >= 3:
            times.append(time.perf_counter() - t0)
    a, b, _ = case.values()
    ok = np.array_equal(case.d_from_tmem(cta.tmem), a[:, :16] @ b[:, :16].T)
    return {"shape": (M, N, 16), "median_ms": statistics.median(times) * 1e3,
            "min_ms": min(times) * 1e3, "repeat": repeat, "exact": ok}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bwlab.umma",
                                 description="bench-model: time the NumPy tcgen05.mma model")
    ap.add_argument("command", choices=["bench-model"])
    ap.add_argument("--repeat", type=int, default=50)
    args = ap.parse_args(argv)
    r = bench_model(repeat=args.repeat)
    m, n, k = r["shape"]
    print(f"tcgen05.mma model, {m}x{n}x{k} kind::f16 f16->f32, K-major SW128: median {r['median_ms']:.2f} ms "
          f"(min {r['min_ms']:.2f} ms, n={r['repeat']}); D equals NumPy A @ B^T: {r['exact']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
