"""The five steps of the from-scratch GEMM: which kernel, how it is launched, what it adds.

C = A * B, A (M x K) and B (K x N) f16 row-major, C (M x N) f32 row-major. Each step is one file in
cuda_src/scratch/ and adds one mechanism to the step before it. `require_shape` refuses a problem a
step's tiling does not cover (the kernels check no edges beyond what they say).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Step", "STEPS", "step", "require_shape", "EMU_SHAPE"]

# The problem the notebook runs in the PTX emulator (seconds per step) and that the GPU recorded too.
EMU_SHAPE = (64, 64, 32)


@dataclass(frozen=True)
class Step:
    name: str            # 's1_naive'
    title: str           # 'naive'
    added: str           # the one mechanism it adds
    block: tuple         # threads of a CTA (x, y)
    tile: tuple          # (rows of C, columns of C) one CTA computes
    bk: int              # K elements a CTA stages per slice (1: no staging)
    unit: str            # what does the multiply-adds: 'fp32' (CUDA cores) or 'tensor' (mma.sync)

    @property
    def file(self) -> str:
        return f"scratch/{self.name}.cu"

    @property
    def threads(self) -> int:
        return self.block[0] * self.block[1]

    def grid(self, M: int, N: int) -> tuple:
        """The launch grid for an M x N C: x walks the dimension the kernel maps threadIdx.x to."""
        bm, bn = self.tile
        if self.name == "s1_naive":                   # x -> rows of C
            return (M // bm, N // bn)
        return (N // bn, M // bm)                     # x -> columns of C


STEPS = (
    Step("s1_naive", "naive", "one thread per element of C, a dot product straight from global memory "
         "(neighbouring threads take neighbouring rows)", (32, 8), (32, 8), 1, "fp32"),
    Step("s2_coalesced", "coalesced", "neighbouring threads take neighbouring columns: a warp's loads "
         "share one row of A and read contiguous bytes of B", (32, 8), (8, 32), 1, "fp32"),
    Step("s3_smem_tiling", "SMEM tiling", "a CTA stages 16 x 16 slices of A and B in shared memory; each "
         "loaded element serves 16 threads", (16, 16), (16, 16), 16, "fp32"),
    Step("s4_register_tiling", "register tiling", "a 64 x 64 tile per CTA, a 4 x 4 block of C per thread in "
         "registers: 16 FMAs per 8 SMEM reads", (256, 1), (64, 64), 16, "fp32"),
    Step("s5_mma_sync", "ldmatrix + mma.sync", "the same tile on the tensor cores: ldmatrix loads fragments "
         "from SMEM, mma.sync.m16n8k16 multiplies them (one warp, 16 x 8 x 16 per instruction)",
         (128, 1), (64, 64), 16, "tensor"),
)


def step(which) -> Step:
    """A step by number (1-5), short name ('s3') or full name ('s3_smem_tiling')."""
    if isinstance(which, Step):
        return which
    if isinstance(which, int) and 1 <= which <= len(STEPS):
        return STEPS[which - 1]
    for s in STEPS:
        if which in (s.name, s.name[:2], s.title):
            return s
    raise ValueError(f"no step {which!r}; the steps are 1-{len(STEPS)}: {', '.join(s.name for s in STEPS)}")


def require_shape(s: Step, M: int, N: int, K: int) -> None:
    """Refuse a problem the step's tiling does not cover: M and N multiples of its tile, K of its slice
    (and, for the 16-bit loads of every step, K and N even)."""
    bm, bn = s.tile
    for what, v in (("M", M), ("N", N), ("K", K)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{what} must be a positive integer, got {v!r}")
    if M % bm or N % bn:
        raise ValueError(f"{s.name} computes C in {bm} x {bn} tiles (one per CTA, no edge handling): M must be a "
                         f"multiple of {bm} and N of {bn}, got M = {M}, N = {N}")
    kk = max(s.bk, 2)
    if K % kk or N % 2:
        raise ValueError(f"{s.name} walks K in slices of {kk}: K must be a multiple of {kk} (and N even), "
                         f"got K = {K}, N = {N}")
    if M * K >= 2 ** 31 or K * N >= 2 ** 31 or M * N >= 2 ** 31:
        raise ValueError(f"the kernels index with 32-bit ints: M*K, K*N and M*N must stay below 2^31, "
                         f"got {M} x {N} x {K}")
