"""The epilogue's view of TMEM: where UMMA left D[m][n] (`bwlab.umma.d_tmem_layout`), which loads a
warpgroup issues to read it, and which thread and register end up holding each element.
NumPy and `bwlab.hw` (and the UMMA stage's model) only.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hw.tmem import COLUMNS, LANES, TmemError, require_image, decode_address, encode_address, new_image
from ..umma.case import UmmaCase
from ..umma.model import d_tmem_layout
from .forms import TmemAccess, instructions_per_warp
from .model import tcgen05_ld

__all__ = ["accumulator_layout", "example_accumulator", "LoadStep", "epilogue_loads", "accumulator_owners",
           "read_accumulator"]


def accumulator_layout(M: int = 128, N: int = 64, cta_group: int = 1):
    """(lane, column) of every accumulator element D[m][n]: int arrays of shape (M, N) each, as the
    UMMA stage lays D out (`bwlab.umma.d_tmem_layout`, one 32-bit cell per element). For M = 128,
    cta_group::1 (the PTX data-path layout D) that is lane m, column n."""
    if cta_group != 1:
        raise TmemError("the read-out here is per CTA; give cta_group=1")
    lay = d_tmem_layout(M, N, cta_group)
    return lay.lane, lay.column


def example_accumulator(N: int = 64, seed: int = 0):
    """A 128 x N f32 accumulator in a TMEM image, for the read-out demo.

    Returns (image, D as float64, where it came from): D is what the UMMA stage's tcgen05.mma model
    computed from SMEM bytes (kind::f16, f16 x f16 -> f32, K = 64), and the image is that model's
    TMEM."""
    image = new_image()
    case = UmmaCase("f16", "f32", 128, N, 64, seed=seed)
    tm = case.model()
    image[:, :tm.shape[1]] = tm
    return image, case.reference(), "bwlab.umma tcgen05.mma model (f16 x f16 -> f32, K = 64)"


@dataclass(frozen=True)
class LoadStep:
    """One tcgen05.ld of an epilogue: `warp` issues `access` at TMEM address `taddr`."""
    warp: int
    index: int          # the warp's instruction number (half-warp lane block, then column chunk)
    taddr: int


def epilogue_loads(access: TmemAccess, N: int, col0: int = 0) -> list[LoadStep]:
    """The loads a warpgroup (warps 0-3) issues to read 128 lanes x N accumulator columns in `access`:
    each warp covers its lane quarter (two lane blocks for the 16-lane shapes) and the columns in
    chunks of `access.width` (for .16x32bx2 the two halves must sit side by side)."""
    if access.shape == "16x32bx2" and access.half_split_off != access.half_width:
        raise TmemError("to tile the accumulator, the .16x32bx2 halves must be adjacent "
                        f"(half-split offset {access.half_width})")
    if N % access.width or not 0 <= col0 <= COLUMNS - N:
        raise TmemError(f"{access.label()} reads {access.width} columns at a time: N = {N} must be a "
                        f"multiple of it and fit in TMEM from column {col0}")
    steps = []
    for w in range(4):
        i = 0
        for h in range(instructions_per_warp(access)):
            for c in range(col0, col0 + N, access.width):
                steps.append(LoadStep(w, i, encode_address(32 * w + access.lanes * h, c)))
                i += 1
    return steps


def accumulator_owners(access: TmemAccess, M: int = 128, N: int = 64) -> np.ndarray:
    """For every D[m][n]: (warp, load index, thread, register, half) of the epilogue that holds it,
    int array (M, N, 5). `half` is the 16-bit half of the register (0 without pack16)."""
    lanes, cols = accumulator_layout(M, N)
    where = np.full((LANES, COLUMNS, 5), -1, dtype=np.int64)
    m = access.map()
    if not access.pack16:
        m = m[:, :, None, :]
    t, j, h = np.meshgrid(np.arange(32), np.arange(access.registers), np.arange(m.shape[2]),
                          indexing="ij")
    for s in epilogue_loads(access, int(cols.max()) + 1):
        lane0, c0 = decode_address(s.taddr)
        where[lane0 + m[..., 0], c0 + m[..., 1]] = np.stack(
            [np.full_like(t, s.warp), np.full_like(t, s.index), t, j, h], axis=-1)
    return where[lanes, cols]


def read_accumulator(image: np.ndarray, access: TmemAccess, M: int = 128, N: int = 64):
    """Read D out of a TMEM image the way an epilogue does: every warp of the warpgroup issues its
    `epilogue_loads` through the tcgen05.ld model, and each thread's registers are put back at the
    (m, n) they hold. Returns (D as raw 32-bit words (M, N), registers {(warp, index): (32, R)}).
    With pack16 each value is the 16-bit content of its cell (an f16 accumulator)."""
    require_image(image)
    owners = accumulator_owners(access, M, N)
    regs = {}
    lanes, cols = accumulator_layout(M, N)
    for s in epilogue_loads(access, int(cols.max()) + 1):
        regs[(s.warp, s.index)] = tcgen05_ld(image, s.taddr, access, warp=s.warp)
    words = np.zeros((M, N), dtype=np.uint32)
    for (w, i), r in regs.items():
        sel = (owners[..., 0] == w) & (owners[..., 1] == i)
        vals = r[owners[sel][:, 2], owners[sel][:, 3]]
        words[sel] = (vals >> (16 * owners[sel][:, 4]).astype(np.uint32)) & np.uint32(
            0xFFFF if access.pack16 else 0xFFFFFFFF)
    return words, regs
