"""The steps of the Hopper GEMM ladder (cuda_src/gemm_sm90/), one mechanism each.

Every step computes C[M x N] = A[M x K] * B[N x K]^T (bf16 in, f32 accumulation, bf16 out, row-major)
with the kernel signature `gemm(tma_a, tma_b, tma_c, C, M, N, K, stamps)`. A step's entry says what
its kernel needs from the host (tile, threads, cluster, SMEM, B's box rows), what it adds to the step
before, and what we predicted it would reach, as a fraction of the best library GEMM at 8192^3,
before it was first measured (the measured numbers are in docs/results/gemm_h100.txt).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..util import ceil_div

__all__ = ["Step", "STEPS", "step", "check_shape", "ShapeError"]

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
    predicted: float = 0.0  # fraction of the best library GEMM at 8192^3, predicted before measuring

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

    def grid(self, m: int, n: int, sms: int) -> tuple:
        tiles = (m // self.bm) * (n // self.bn)
        if not self.persistent:
            return (n // self.bn, m // self.bm, 1)
        ctas = min(sms, tiles)
        return (ctas - ctas % self.cluster, 1, 1)


STEPS = [
    Step("s1_one_warpgroup", "s1_one_warpgroup.cu",
         "one warpgroup, one SMEM buffer: TMA load, wait, wgmma, wait — nothing overlaps",
         bm=128, bn=128, threads=128, stages=1, predicted=0.35),
    Step("s2_pipeline", "s2_pipeline.cu",
         "a ring of 3 buffers with full/empty mbarriers: TMA runs 2 k-slices ahead of the math",
         bm=128, bn=128, threads=128, stages=3, predicted=0.55),
    Step("s3_warp_specialized", "s3_warp_specialized.cu",
         "a producer warpgroup (setmaxnreg.dec 40) and two consumers (setmaxnreg.inc 232), 128 x 256 tile",
         bm=128, bn=256, threads=384, stages=4, predicted=0.70),
    Step("s4_persistent", "s4_persistent.cu",
         "one CTA per SM walking tiles in a grouped order; the ring never drains between tiles",
         bm=128, bn=256, threads=384, stages=4, persistent=True, predicted=0.78),
    Step("s5_cluster_multicast", "s5_cluster_multicast.cu",
         "clusters of 2 CTAs share each B slice by TMA multicast; empty barriers count both CTAs",
         bm=128, bn=256, threads=384, stages=4, persistent=True, cluster=2, b_box_rows=128, predicted=0.83),
    Step("s6_tma_store", "s6_tma_store.cu",
         "the epilogue through 128B-swizzled SMEM pieces and TMA stores, double-buffered",
         bm=128, bn=256, threads=384, stages=4, persistent=True, cluster=2, b_box_rows=128,
         staging=2 * 2 * 64 * 64 * 2, predicted=0.88),
]

BY_NAME = {s.name: s for s in STEPS}


def step(name_or_index) -> Step:
    """A step by name ('s3_warp_specialized'), by short name ('s3'), or by number (3)."""
    if isinstance(name_or_index, Step):
        return name_or_index
    if isinstance(name_or_index, int):
        if not 1 <= name_or_index <= len(STEPS):
            raise KeyError(f"steps are numbered 1..{len(STEPS)}, got {name_or_index}")
        return STEPS[name_or_index - 1]
    for s in STEPS:
        if name_or_index in (s.name, s.name.split("_")[0]):
            return s
    raise KeyError(f"no step {name_or_index!r}; the steps are {', '.join(s.name for s in STEPS)}")


def check_shape(s: Step, m: int, n: int, k: int) -> None:
    """Raise ShapeError naming the rule when (m, n, k) is not whole tiles for step `s`."""
    for name, v, mult, why in (("M", m, s.m_multiple, f"tile rows {s.bm}" + (f" x cluster {s.cluster}"
                                                                        if s.cluster > 1 else "")),
                               ("N", n, s.bn, f"tile columns {s.bn}"),
                               ("K", k, BK, f"the K slice of one stage ({BK})")):
        if v <= 0 or v % mult:
            raise ShapeError(f"{s.name}: {name} = {v} must be a positive multiple of {mult} ({why}); "
                             f"the ladder's kernels compute whole tiles only (next valid: "
                             f"{max(mult, ceil_div(v, mult) * mult)})")
