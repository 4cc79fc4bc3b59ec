"""Step 5 by NumPy: `ldmatrix` and `mma.sync.m16n8k16` as the PTX ISA lays out their fragments.

PTX ISA "ldmatrix": each 8 x 8 matrix of 16-bit elements has its rows given by eight
threads; thread t receives row t // 4, elements 2 (t % 4) and 2 (t % 4) + 1 (with .trans, the matrix is
transposed first). PTX ISA "Matrix Fragments for mma.m16n8k16 with floating point type" (.f16): with
g = lane // 4 and t = lane % 4, A element i (0..7) of a lane sits at row g + 8 ((i // 2) % 2), column
2 t + i % 2 + 8 (i // 4); B element i (0..3) at row (K) 2 t + i % 2 + 8 (i // 2), column g; C element i
(0..3) at row g + 8 (i // 2), column 2 t + i % 2.

`s5_model(a, b)` runs cuda_src/scratch/s5_mma_sync.cu's algorithm warp by warp with these maps: the
same SMEM slices, the same ldmatrix addresses, each mma adding its 16 products and the incoming
accumulator as Hopper's tensor core does (`bwlab.umma.model.wgmma_block_fma`, measured for wgmma on an
H100: terms aligned to the largest exponent, truncated, summed, truncated to f32). The H200's C of
step 5 (recording scratch_steps) equals it bit for bit.
"""
from __future__ import annotations

import numpy as np

from ..umma.model import wgmma_block_fma
from .steps import STEPS, require_shape

__all__ = ["a_fragment", "b_fragment", "c_fragment", "ldmatrix", "mma_m16n8k16", "s5_model"]


def a_fragment(lane: int, i: int) -> tuple[int, int]:
    """(row, column) of the 16 x 16 A tile that element `i` (0..7) of `lane`'s A fragment holds."""
    g, t = lane // 4, lane % 4
    return g + 8 * ((i // 2) % 2), 2 * t + i % 2 + 8 * (i // 4)


def b_fragment(lane: int, i: int) -> tuple[int, int]:
    """(k, column) of the 16 x 8 B tile that element `i` (0..3) of `lane`'s B fragment holds."""
    g, t = lane // 4, lane % 4
    return 2 * t + i % 2 + 8 * (i // 2), g


def c_fragment(lane: int, i: int) -> tuple[int, int]:
    """(row, column) of the 16 x 8 accumulator that element `i` (0..3) of `lane`'s C fragment holds."""
    g, t = lane // 4, lane % 4
    return g + 8 * (i // 2), 2 * t + i % 2


def ldmatrix(rows: np.ndarray, trans: bool = False) -> np.ndarray:
    """ldmatrix .x4: `rows` (32, 8) the 16-byte rows the 32 lanes point at (lane 8j + r: row r of matrix
    j). Returns (32 lanes, 4 registers, 2 halves): register j of a lane holds two elements of matrix j."""
    mats = np.asarray(rows).reshape(4, 8, 8)
    if trans:
        mats = mats.transpose(0, 2, 1)
    lane = np.arange(32)
    r, c = lane // 4, 2 * (lane % 4)
    return np.stack([np.stack([mats[j, r, c], mats[j, r, c + 1]], axis=-1) for j in range(4)], axis=1)


def mma_m16n8k16(a_regs, b_regs, c):
    """One mma.sync.m16n8k16 of a warp: a_regs (32, 8), b_regs (32, 4) the lanes' fragment elements,
    c (32, 4) f32 accumulators; returns the new (32, 4). Rebuilds A, B and C from the fragments
    (a_fragment, b_fragment, c_fragment) and adds as Hopper's tensor core does (wgmma_block_fma)."""
    A, B, C = np.zeros((16, 16)), np.zeros((16, 8)), np.zeros((16, 8), np.float32)
    for lane in range(32):
        for i in range(8):
            A[a_fragment(lane, i)] = a_regs[lane][i]
        for i in range(4):
            B[b_fragment(lane, i)] = b_regs[lane][i]
            C[c_fragment(lane, i)] = c[lane][i]
    D = wgmma_block_fma(A, B.T, C)
    return np.array([[D[c_fragment(lane, i)] for i in range(4)] for lane in range(32)], np.float32)


def s5_model(a, b) -> np.ndarray:
    """C (f32) by step 5's algorithm: 64 x 64 CTA tiles, K in slices of 16, four warps of 32 x 32, the
    SMEM slices read through `ldmatrix` (A plain, B .trans) and multiplied by `mma_m16n8k16`."""
    a, b = np.asarray(a, np.float16), np.asarray(b, np.float16)
    M, K = a.shape
    N = b.shape[1]
    require_shape(STEPS[4], M, N, K)
    C = np.zeros((M, N), np.float32)
    lane = np.arange(32)
    for m0 in range(0, M, 64):
        for n0 in range(0, N, 64):
            acc = np.zeros((4, 2, 4, 32, 4), np.float32)             # warp, mi, nj, lane, element
            for k0 in range(0, K, 16):
                As, Bs = a[m0:m0 + 64, k0:k0 + 16], b[k0:k0 + 16, n0:n0 + 64]
                for w in range(4):
                    wm, wn = (w // 2) * 32, (w % 2) * 32
                    afr = [ldmatrix(np.stack([As[wm + mi * 16 + l % 16, (l // 16) * 8:(l // 16) * 8 + 8]
                                              for l in lane])).reshape(32, 8) for mi in range(2)]
                    bfr = []
                    for nj in range(0, 4, 2):
                        r = ldmatrix(np.stack([Bs[l % 16, wn + nj * 8 + (l // 16) * 8:wn + nj * 8 + (l // 16) * 8 + 8]
                                               for l in lane]), trans=True)
                        bfr += [r[:, 0:2].reshape(32, 4), r[:, 2:4].reshape(32, 4)]
                    for mi in range(2):
                        for nj in range(4):
                            acc[w, mi, nj] = mma_m16n8k16(afr[mi].astype(np.float64), bfr[nj].astype(np.float64),
                                                          acc[w, mi, nj])
            for w in range(4):
                wm, wn = (w // 2) * 32, (w % 2) * 32
                for mi in range(2):
                    for nj in range(4):
                        for l in range(32):
                            for i in range(4):
                                r, c = c_fragment(l, i)
                                C[m0 + wm + mi * 16 + r, n0 + wn + nj * 8 + c] = acc[w, mi, nj, l, i]
    return C
