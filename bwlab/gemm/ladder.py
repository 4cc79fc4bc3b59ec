"""The steps of the Hopper GEMM ladder (cuda_src/gemm_sm90/), one mechanism each.

Every step computes C[M x N] = A[M x K] * B[N x K]^T (bf16 in, f32 accumulation, bf16 out, row-major)
with the kernel signature `gemm(tma_a, tma_b, tma_c, C, M, N, K, stamps)`. A step's entry says what
its kernel needs from the host (tile, threads, cluster, SMEM, B's box rows), what it adds to the step
before, and the fraction of the best library GEMM at 8192^3 it is predicted to reach, predicted by the
timing model (H100 SXM description): bwlab.timing, read from bwlab/gemm/model_fractions.py (the measured
numbers are in docs/results/gemm_h100.txt and gemm_protocol*_h100.txt).

`BEYOND` holds the rungs after the recorded ladder (a tile-order table, the epilogue overlapped with
the next tile's main loop, split-K for skinny shapes), each naming the step it builds on and carrying
the prediction written before its first measurement (`prediction`); they are measured under the
sustained protocol (bwlab.gemm.protocol; docs/results/gemm_protocol*_h100.txt). `ALL_STEPS` is both.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..util import ceil_div
from .model_fractions import FRACTIONS as _MODEL

__all__ = ["Step", "STEPS", "BEYOND", "ALL_STEPS", "step", "require_shape", "ShapeError", "split_count"]

BK = 64          # K per stage (gemm_common.cuh)
SMEM_SLACK = 1024  # the kernels move their dynamic SMEM up to a 1024-byte boundary


class ShapeError(ValueError):
    """A problem shape a step's kernel cannot compute (it has no bounds checks: whole tiles only)."""


@dataclass(frozen=True)
class Step:
    name: str
    file: str
    added: str            # the one mechanism this step adds
    bm: int
    bn: int
    threads: int
    stages: int
    persistent: bool = False
    cluster: int = 1      # CTAs per cluster (along M)
    b_box_rows: int = 0   # rows of B one TMA box brings (default: bn)
    staging: int = 0      # SMEM bytes of the epilogue's staging buffers
    predicted: float = 0.0  # fraction of the best library GEMM at 8192^3, predicted by the timing model (H100 SXM)
    base: str = ""        # the step this one adds its mechanism to (default: the one before it)
    split_k: bool = False  # takes (partial, arrivals, splits) after `stamps`: see split_count
    tile_order: str = ""  # "hilbert": takes the host's tile-order table after `stamps`
    prediction: str = ""  # the written prediction, with the shapes it speaks of

    @property
    def path(self) -> str:
        return f"gemm_sm90/{self.file}"

    @property
    def b_rows(self) -> int:
        return self.b_box_rows or self.bn

    @property
    def stage_bytes(self) -> int:
        return (self.bm + self.bn) * BK * 2

    @property
    def smem_bytes(self) -> int:
        return self.stages * self.stage_bytes + self.staging + SMEM_SLACK

    @property
    def m_multiple(self) -> int:
        return self.bm * self.cluster

    def grid(self, m: int, n: int, sms: int, k: int = 0, splits: int | None = None) -> tuple:
        tiles = (m // self.bm) * (n // self.bn)
        if self.split_k:
            tiles *= splits or split_count(m, n, k, sms, self.bm, self.bn)
        if not self.persistent:
            return (n // self.bn, m // self.bm, 1)
        ctas = min(sms, tiles)
        return (ctas - ctas % self.cluster, 1, 1)


STEPS = [
    Step("s1_one_warpgroup", "s1_one_warpgroup.cu",
         "one warpgroup, one SMEM buffer: TMA load, wait, wgmma, wait — nothing overlaps",
         bm=128, bn=128, threads=128, stages=1, predicted=_MODEL["s1_one_warpgroup"]),
    Step("s2_pipeline", "s2_pipeline.cu",
         "a ring of 3 buffers with full/empty mbarriers: TMA runs 2 k-slices ahead of the math",
         bm=128, bn=128, threads=128, stages=3, predicted=_MODEL["s2_pipeline"]),
    Step("s3_warp_specialized", "s3_warp_specialized.cu",
         "a producer warpgroup (setmaxnreg.dec 40) and two consumers (setmaxnreg.inc 232), 128 x 256 tile",
         bm=128, bn=256, threads=384, stages=4, predicted=_MODEL["s3_warp_specialized"]),
    Step("s4_persistent", "s4_persistent.cu",
         "one CTA per SM walking tiles in a grouped order; the ring never drains between tiles",
         bm=128, bn=256, threads=384, stages=4, persistent=True, predicted=_MODEL["s4_persistent"]),
    Step("s5_cluster_multicast", "s5_cluster_multicast.cu",
         "clusters of 2 CTAs share each B slice by TMA multicast; empty barriers count both CTAs",
         bm=128, bn=256, threads=384, stages=4, persistent=True, cluster=2, b_box_rows=128,
         predicted=_MODEL["s5_cluster_multicast"]),
    Step("s6_tma_store", "s6_tma_store.cu",
         "the epilogue through 128B-swizzled SMEM pieces and TMA stores, double-buffered",
         bm=128, bn=256, threads=384, stages=4, persistent=True, cluster=2, b_box_rows=128,
         staging=2 * 2 * 64 * 64 * 2, predicted=_MODEL["s6_tma_store"]),
]

# Beyond the recorded ladder: rungs measured under the sustained protocol (bwlab.gemm.protocol), each
# with its prediction written down before its first measurement.
BEYOND = [
    Step("s7_hilbert_order", "s7_hilbert_order.cu",
         "the tile order as a host-computed table: the Hilbert curve over the cluster tiles",
         bm=128, bn=256, threads=384, stages=4, persistent=True, cluster=2, b_box_rows=128,
         staging=2 * 2 * 64 * 64 * 2, tile_order="hilbert", base="s6_tma_store", predicted=_MODEL["s7_hilbert_order"],
         prediction="no gain: bwlab.gemm.order.footprint counts the A row- and B column-slabs each wave of "
                    "66 clusters touches; the Hilbert order touches 19.6 per wave at 8192^3 against step 6's "
                    "18.3 (16 waves: 313 vs 292 slabs, +7 % DRAM reads), 19.0 vs 18.2 at 6144^3 and 18.0 vs "
                    "17.8 at 4096^3. Step 6's bands already keep a wave inside an 8 x 8 block, and at "
                    "~0.7 TB/s DRAM is not what bounds it: 0.99-1.00 x step 6 at every square shape."),
    Step("s8_epilogue_overlap", "s8_epilogue_overlap.cu",
         "the epilogue of tile i overlapped with the main loop of tile i+1: C kept as bf16 pairs in "
         "registers, one piece stored per k-slice while that slice's wgmma run",
         bm=128, bn=256, threads=384, stages=4, persistent=True, cluster=2, b_box_rows=128,
         staging=2 * 2 * 64 * 64 * 2, base="s6_tma_store", predicted=_MODEL["s8_epilogue_overlap"],
         prediction="step 6's consumers idle the tensor cores for ~2,000 cycles per tile in the epilogue "
                    "(4 pieces of 16 cvt + 16 st.shared.b32 per thread, 2 bar.sync and a proxy fence each, the "
                    "wgmma pipe drained and refilled); a tile's main loop is K/64 x 1,024 cycles: ~3.0 % at "
                    "4096^3, ~2.0 % at 6144^3, ~1.5 % at 8192^3. At the power cap about half of it comes "
                    "back: step 8 / step 6 = 1.015, 1.010, 1.007 (512 x 8192^2: 1.015), i.e. ~0.98-1.00, "
                    "~1.01, ~1.02-1.03 x cuBLAS; the 1.05 x goal is out of this mechanism's reach."),
    Step("sk_split_k", "sk_split_k.cu",
         "split-K for skinny shapes: (tile, K piece) work units fill the SMs; the last unit of a tile "
         "adds the pieces' f32 partials in piece order (an arrival counter per tile, no waiting)",
         bm=128, bn=256, threads=384, stages=4, persistent=True, split_k=True, base="s4_persistent",
         predicted=_MODEL["sk_split_k"],
         prediction="128x8192x8192: 4 pieces x 32 tiles = 128 units on 132 SMs instead of 32; B (128 MiB) "
                    "streams at ~3 TB/s: ~45 us + ~3 us for the last units' fix-up (384 KiB of partials "
                    "each from L2) -> ~48 us, 1.08x cuBLAS's 52 us (step 4: 81 us, 0.64x). 512x8192x8192: "
                    "128 tiles already fill the SMs, one piece: step 4 again (0.96x). Square shapes: one "
                    "piece, step 4's speed (0.90-0.96x)."),
]
ALL_STEPS = STEPS + BEYOND
BY_NAME = {s.name: s for s in ALL_STEPS}


def split_count(m: int, n: int, k: int, sms: int, bm: int = 128, bn: int = 256, most: int = 16) -> int:
    """K pieces per tile for a split-K launch: the fewest that bring the last wave of (tile, piece)
    units within 5 % of the best fill of `sms` SMs (at most `most`, at most one piece per K slice): a
    piece more costs a round trip of f32 partials, worth it only for a clearly fuller last wave."""
    tiles = (m // bm) * (n // bn)
    if tiles <= 0 or sms <= 0:
        raise ValueError(f"split_count needs whole tiles and SMs: {m}x{n} in {bm}x{bn} tiles on {sms} SMs")
    k_slices = max(1, k // BK)

    def fill(s):
        units = tiles * s
        return units / (ceil_div(units, sms) * sms)
    choices = range(1, min(most, k_slices) + 1)
    best = max(fill(s) for s in choices)
    return next(s for s in choices if fill(s) >= 0.95 * best)


def step(name_or_index) -> Step:
    """A step by name ('s3_warp_specialized'), by short name ('s3'), or by number (3)."""
    if isinstance(name_or_index, Step):
        return name_or_index
    if isinstance(name_or_index, int):
        if not 1 <= name_or_index <= len(STEPS):
            raise KeyError(f"steps are numbered 1..{len(STEPS)}, got {name_or_index}")
        return STEPS[name_or_index - 1]
    for s in ALL_STEPS:
        if name_or_index in (s.name, s.name.split("_")[0]):
            return s
    raise KeyError(f"no step {name_or_index!r}; the steps are {', '.join(s.name for s in ALL_STEPS)}")


def require_shape(s: Step, m: int, n: int, k: int) -> None:
    """Raise ShapeError naming the rule when (m, n, k) is not whole tiles for step `s`."""
    for name, v, mult, why in (("M", m, s.m_multiple, f"tile rows {s.bm}" + (f" x cluster {s.cluster}"
                                                                        if s.cluster > 1 else "")),
                               ("N", n, s.bn, f"tile columns {s.bn}"),
                               ("K", k, BK, f"the K slice of one stage ({BK})")):
        if v <= 0 or v % mult:
            raise ShapeError(f"{s.name}: {name} = {v} must be a positive multiple of {mult} ({why}); "
                             f"the ladder's kernels compute whole tiles only (next valid: "
                             f"{max(mult, ceil_div(v, mult) * mult)})")
