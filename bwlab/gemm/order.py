"""Tile orders of the persistent steps, computed on the host (NumPy), and what they mean for L2.

`grouped_order` is the order gemm_common.cuh's `tile_of<GROUP_M>` computes inside steps 4-6 (bands of
GROUP_M tile rows, walked column by column); `hilbert_order` is the table step 7 reads (the Hilbert
curve over the smallest power-of-two square holding the grid, cells outside the grid left out).
`footprint` counts, for each wave of tiles running together, the A row-slabs and B column-slabs it
touches: the bytes a wave must bring from DRAM if the L2 keeps nothing from the wave before.
"""
from __future__ import annotations

import numpy as np

__all__ = ["grouped_order", "hilbert_order", "footprint"]


def grouped_order(rows: int, cols: int, group: int) -> np.ndarray:
    """(index -> (row, col)) of tile_of<group>: `group` rows per band, column by column inside it."""
    if rows <= 0 or cols <= 0 or group <= 0:
        raise ValueError(f"a grid of {rows} x {cols} tiles in bands of {group}: all must be positive")
    t = np.arange(rows * cols)
    per_group = group * cols
    first = (t // per_group) * group
    height = np.minimum(rows - first, group)
    inside = t % per_group
    return np.stack([first + inside % height, inside // height], axis=1).astype(np.int32)


def _hilbert_xy(side: int, d: np.ndarray) -> tuple:
    """Cell (x, y) of position d on the Hilbert curve filling a side x side square (side a power of 2):
    at each scale s the two bits of d pick the quadrant, and the lower-left and lower-right quadrants'
    sub-curves are reflected so that the pieces join end to end."""
    x = np.zeros_like(d)
    y = np.zeros_like(d)
    t = d.copy()
    s = 1
    while s < side:
        rx = (t // 2) & 1
        ry = (t ^ rx) & 1
        flip = (ry == 0) & (rx == 1)
        x = np.where(flip, s - 1 - x, x)
        y = np.where(flip, s - 1 - y, y)
        swap = ry == 0
        x, y = np.where(swap, y, x), np.where(swap, x, y)
        x = x + s * rx
        y = y + s * ry
        t //= 4
        s *= 2
    return x, y


def hilbert_order(rows: int, cols: int) -> np.ndarray:
    """(index -> (row, col)) along the Hilbert curve of the covering power-of-two square; every cell of
    the rows x cols grid exactly once. int32, shape (rows * cols, 2): the kernel reads it as int2."""
    if rows <= 0 or cols <= 0:
        raise ValueError(f"a grid of {rows} x {cols} tiles: both must be positive")
    side = 1
    while side < max(rows, cols):
        side *= 2
    x, y = _hilbert_xy(side, np.arange(side * side))
    keep = (x < rows) & (y < cols)
    return np.ascontiguousarray(np.stack([x[keep], y[keep]], axis=1).astype(np.int32))


def footprint(order: np.ndarray, wave: int) -> dict:
    """For consecutive waves of `wave` tiles of `order`: the distinct rows and columns each touches
    (mean), and the total of row- plus column-slabs over all waves (DRAM slabs if L2 keeps nothing
    between waves; each slab is one tile row of A or one tile column of B over all of K)."""
    if wave <= 0:
        raise ValueError("a wave has at least one tile")
    per = []
    for i in range(0, len(order), wave):
        w = order[i:i + wave]
        per.append(len(np.unique(w[:, 0])) + len(np.unique(w[:, 1])))
    return {"waves": len(per), "mean_slabs": float(np.mean(per)), "total_slabs": int(np.sum(per))}
