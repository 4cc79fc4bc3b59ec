"""What each step moves through global memory, counted from its own indexing (NumPy only).

For one CTA, every global load and store instruction of a step's kernel is replayed as the byte
addresses its threads give it (the index arithmetic of cuda_src/scratch/sN_*.cu, written once more
here in NumPy), warp by warp (32 consecutive threads, x fastest). A warp's access costs the 32-byte
sectors it touches (the unit the L1/L2 move; CUDA C++ Best Practices Guide, "Coalesced Access to Global
Memory"). Every CTA of a step does the same, so the kernel's bytes are one CTA's times the grid.

No cache is counted: the bytes are what the kernel asks of the memory system, as if each sector came
from DRAM every time. That is the x axis of the roofline (FLOP per byte); a GPU's L1 and L2 catch part
of it, which is why a measured point can sit above its roof.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .steps import Step, require_shape, step

__all__ = ["Traffic", "traffic", "warp_sectors", "accesses", "SECTOR", "compulsory_bytes"]

SECTOR = 32      # bytes


@dataclass(frozen=True)
class Traffic:
    step: str
    shape: tuple            # (M, N, K)
    load_bytes: int         # sectors loaded x 32, the whole grid
    store_bytes: int
    useful_bytes: int       # the distinct bytes each warp access asked for
    flops: int              # 2 M N K

    @property
    def bytes(self) -> int:
        return self.load_bytes + self.store_bytes

    @property
    def intensity(self) -> float:
        """FLOP per byte moved: the roofline's x."""
        return self.flops / self.bytes

    @property
    def efficiency(self) -> float:
        """The fraction of the moved bytes the threads used."""
        return self.useful_bytes / self.bytes

    def __str__(self):
        M, N, K = self.shape
        return (f"{self.step} {M}x{N}x{K}: loads {self.load_bytes / 1e6:,.1f} MB, stores "
                f"{self.store_bytes / 1e6:,.1f} MB, {self.flops / self.bytes:.3g} FLOP/byte, "
                f"{100 * self.efficiency:.0f}% of each sector used")


def warp_sectors(addresses, unit: int = SECTOR) -> int:
    """Sectors touched, summed over warps: `addresses` (..., threads) of byte addresses, one access
    instruction per leading index; threads grouped 32 at a time (`unit`: the granule counted)."""
    a = np.asarray(addresses, dtype=np.int64)
    a = a.reshape(*a.shape[:-1], a.shape[-1] // 32, 32) // unit
    a = np.sort(a, axis=-1)
    return int(a[..., :1].size + np.count_nonzero(np.diff(a, axis=-1)))


def accesses(s: Step, M: int, N: int, K: int):
    """One CTA's global accesses (the CTA at blockIdx 0): [(kind 'load'|'store', operand, addresses
    (instructions..., threads) in bytes from the operand's start, element bytes)]."""
    s = step(s)
    bx, by = s.block
    tid = np.arange(bx * by)
    tx, ty = tid % bx, tid // bx
    if s.name in ("s1_naive", "s2_coalesced"):
        m, n = (tx, ty) if s.name == "s1_naive" else (ty, tx)
        k = np.arange(K)[:, None]
        return [("load", "A", (m * K + k) * 2, 2), ("load", "B", (k * N + n) * 2, 2),
                ("store", "C", (m * N + n)[None] * 4, 4)]
    if s.name == "s3_smem_tiling":
        k0 = np.arange(0, K, s.bk)[:, None]
        return [("load", "A", (ty * K + k0 + tx) * 2, 2), ("load", "B", ((k0 + ty) * N + tx) * 2, 2),
                ("store", "C", (ty * N + tx)[None] * 4, 4)]
    # s4, s5: the CTA's threads copy the BM x BK slice of A and the BK x BN slice of B in turns of
    # `threads` elements, then store the tile of C from registers
    bm, bn = s.tile
    k0 = np.arange(0, K, s.bk)[:, None, None]
    ia = tid[None, :] + s.threads * np.arange(bm * s.bk // s.threads)[:, None]
    ib = tid[None, :] + s.threads * np.arange(s.bk * bn // s.threads)[:, None]
    out = [("load", "A", ((ia // s.bk) * K + k0 + ia % s.bk) * 2, 2),
           ("load", "B", ((k0 + ib // bn) * N + ib % bn) * 2, 2)]
    if s.name == "s4_register_tiling":
        row0, col0 = (tid // 16) * 4, (tid % 16) * 4
        c = [(row0 + i) * N + col0 + j for i in range(4) for j in range(4)]
    else:
        warp, lane = tid // 32, tid % 32
        wm, wn, g, t = (warp // 2) * 32, (warp % 2) * 32, lane // 4, lane % 4
        c = [(wm + mi * 16 + g + 8 * h) * N + wn + nj * 8 + 2 * t + e
             for mi in range(2) for nj in range(4) for h in range(2) for e in range(2)]
    return out + [("store", "C", np.stack(c) * 4, 4)]


def traffic(which, M: int, N: int, K: int) -> Traffic:
    """The global-memory bytes of a step's whole grid on an M x N x K problem (see the module)."""
    s = step(which)
    require_shape(s, M, N, K)
    bm, bn = s.tile
    ctas = (M // bm) * (N // bn)
    load = store = useful = 0
    for kind, _, addr, size in accesses(s, M, N, K):
        moved = warp_sectors(addr) * SECTOR * ctas
        useful += warp_sectors(addr, 1) * size * ctas     # distinct elements per warp access
        if kind == "load":
            load += moved
        else:
            store += moved
    return Traffic(s.name, (M, N, K), load, store, useful, 2 * M * N * K)


def compulsory_bytes(M: int, N: int, K: int) -> int:
    """Every element of A and B read once and C written once: the least any kernel can move."""
    return 2 * (M * K + K * N) + 4 * M * N
