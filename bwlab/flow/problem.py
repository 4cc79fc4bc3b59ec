"""The capstone's one GEMM and where each of its pieces lives: a 128 x 128 x 64 D = A @ B^T, f16 in,
f32 out, one CTA of four warps. NumPy and the stage packages' parameter objects only (no GPU).

Shared memory, offsets from the 1024-byte aligned start of the kernel's dynamic SMEM:

    0x00000  A  128 rows x 64 f16 (K contiguous), 16 KiB, as TMA's 128B swizzle lays it out
    0x04000  B  128 rows x 64 f16, 16 KiB, same layout
    0x08000  D  128 x 128 f32, four 128 x 32 boxes of 16 KiB (128B swizzle), the TMA store's source

The A and B boxes land exactly in the K-major SW128 canonical layout tcgen05.mma reads (bwlab.umma),
and the values are those of `bwlab.umma.UmmaCase('f16', 'f32', 128, 128, 64, b_base=0x4000)`: exact
multiples of 1/4, so every sum of products is exact in f32 and the model, the hardware and NumPy
agree bit for bit.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..epilogue.problem import EpilogueProblem
from ..epilogue.tile import SmemTile
from ..hw.dtypes import from_float
from ..tma.tensor_map import TensorMap
from ..tmem.forms import TmemAccess
from ..umma.case import UmmaCase
from ..umma.descriptors import decode_smem_desc, smem_desc_for_tile
from ..umma.idesc import make_instr_desc

__all__ = ["FlowProblem", "SMEM_A", "SMEM_B", "SMEM_D", "SMEM_BYTES", "THREADS", "LD_ACCESS"]

SMEM_A, SMEM_B, SMEM_D = 0x0000, 0x4000, 0x8000
SMEM_BYTES = SMEM_D + 4 * 0x4000          # 96 KiB (the kernel asks for 1 KiB more to align)
THREADS = 128                             # four warps: one warpgroup, one TMEM lane quarter each
LD_ACCESS = TmemAccess("32x32b", 32)      # thread t of warp w <- lane 32w+t, register j <- column j


@dataclass(frozen=True)
class FlowProblem:
    """The GEMM of the whole trip. `seed` picks the values (those of the matching UmmaCase)."""

    seed: int = 0
    M: int = 128
    N: int = 128
    K: int = 64

    def __post_init__(self):
        if (self.M, self.N, self.K) != (128, 128, 64):
            raise ValueError("the traced flow is one 128 x 128 x 64 tile (one CTA, one TMEM quarter per "
                             "warp, one 128-byte swizzle row of K); bwlab.flow.FlowGrid tiles larger GEMMs")

    # ---- the values -------------------------------------------------------------------------
    @property
    def umma_case(self) -> UmmaCase:
        """Stage 3's case with the same operands at the same SMEM addresses."""
        return UmmaCase("f16", "f32", self.M, self.N, self.K, a_base=SMEM_A, b_base=SMEM_B, seed=self.seed)

    def values(self):
        """A (M x K) and B (N x K) as float64, exact in f16."""
        a, b, _ = self.umma_case.values()
        return a, b

    def gmem_inputs(self):
        """A and B as they sit in global memory: row-major f16 (K contiguous)."""
        a, b = self.values()
        return np.ascontiguousarray(from_float(a, "f16")), np.ascontiguousarray(from_float(b, "f16"))

    def reference(self) -> np.ndarray:
        """NumPy: A @ B^T in float32 (exact for these inputs)."""
        a, b = self.values()
        return (a @ b.T).astype(np.float32)

    # ---- the parameters every hop needs -------------------------------------------------------
    @property
    def tmap_a(self) -> TensorMap:
        """A: dims (K, M) innermost first, one box = the whole 64 x 128 tile, 128B swizzle."""
        return TensorMap("float16", (self.K, self.M), (self.K, self.M), swizzle="128B")

    @property
    def tmap_b(self) -> TensorMap:
        return TensorMap("float16", (self.K, self.N), (self.K, self.N), swizzle="128B")

    @property
    def expect_tx(self) -> int:
        """Bytes the load barrier expects: both boxes (32768)."""
        return self.tmap_a.tx_bytes + self.tmap_b.tx_bytes

    @property
    def k_blocks(self) -> int:
        return self.K // 16

    @property
    def idesc(self) -> int:
        return make_instr_desc("f16", "f16", "f32", self.M, self.N)

    def descriptors(self, k_step_bytes: int | None = None):
        """(a_desc, b_desc) per K block, start addresses relative to the dynamic SMEM base.

        With `k_step_bytes`, K block kb starts `kb * k_step_bytes` bytes after the tile instead of
        where the canonical layout puts it (32 bytes per K block: a learner's edit of the kernel's K
        loop, `smem_desc_k_sw128(base + SMEM_A + 32 * kb)`); the other fields stay."""
        descs = [(smem_desc_for_tile("K", "128B", "f16", (self.M, self.K), kb, SMEM_A),
                  smem_desc_for_tile("K", "128B", "f16", (self.N, self.K), kb, SMEM_B))
                 for kb in range(self.k_blocks)]
        if k_step_bytes is None:
            return descs
        step = int(k_step_bytes)
        if step != k_step_bytes or step < 0 or step % 16:
            raise ValueError(f"k_step_bytes must be a non-negative multiple of 16 (the descriptor holds the "
                             f"start address >> 4), got {k_step_bytes!r}")

        def moved(desc, base, kb):
            d = decode_smem_desc(desc)
            return replace(d, start_address=base + kb * step).encode()
        return [(moved(ad, SMEM_A, kb), moved(bd, SMEM_B, kb)) for kb, (ad, bd) in enumerate(descs)]

    @property
    def tmem_columns(self) -> int:
        return 128

    @property
    def epilogue(self) -> EpilogueProblem:
        """Stage 5's problem: D (M x N f32, row-major, a guard row below) stored from a 128B-swizzled
        tile of four 128 x 32 boxes."""
        return EpilogueProblem(self.M, self.N, "float32", bm=self.M, bn=self.N, swizzle="128B",
                               smem_offset=0)

    @property
    def d_tile(self) -> SmemTile:
        return SmemTile(self.M, self.N, "float32", "128B", base=SMEM_D)

    @property
    def tmap_d(self) -> TensorMap:
        return self.epilogue.tensor_map()

    def store_boxes(self):
        """((x, y) coordinates, SMEM address) of the four TMA stores."""
        t = self.d_tile
        return [((b * t.box_cols, 0), t.box_address(b)) for b in range(t.n_boxes)]
