"""Tensor memory (TMEM): addresses and images, shared by the UMMA and TMEM stages.

TMEM is 128 lanes x 512 columns of 32-bit cells per SM (PTX ISA "Tensor Memory"). An address is 32
bits: the lane in bits 31-16, the column in bits 15-0. A warp may access only the 32 lanes of its
quarter, 32 * (warp id % 4) .. +31 ("Tensor Memory access restrictions"). bwlab holds one CTA's TMEM
as an *image*: a uint32 array [lane, column] of raw words; `tcgen05.mma` writes D into it and
`tcgen05.ld/st` read and write it.
"""
from __future__ import annotations

import numpy as np

__all__ = ["LANES", "COLUMNS", "TmemError", "encode_address", "decode_address", "format_address",
           "warp_lane_range", "new_image", "require_image"]

LANES = 128      # TMEM lanes (rows) per SM
COLUMNS = 512    # TMEM columns per SM, 32 bits each


class TmemError(ValueError):
    """A TMEM rule was broken (allocation, address, warp/lane access, or an invalid ld/st form).
    The message names the rule and the limit."""


def encode_address(lane: int, column: int) -> int:
    """The 32-bit TMEM address of (lane, column): lane in bits 31-16, column in bits 15-0."""
    lane, column = int(lane), int(column)
    if not 0 <= lane < LANES:
        raise TmemError(f"TMEM lane must be in [0, {LANES}), got {lane}")
    if not 0 <= column < COLUMNS:
        raise TmemError(f"TMEM column must be in [0, {COLUMNS}), got {column}")
    return (lane << 16) | column


def decode_address(taddr: int) -> tuple[int, int]:
    """(lane, column) of a 32-bit TMEM address; raises TmemError when it points outside TMEM."""
    taddr = int(taddr)
    if not 0 <= taddr < 1 << 32:
        raise TmemError(f"a TMEM address is a 32-bit value, got {taddr:#x}")
    lane, column = taddr >> 16, taddr & 0xFFFF
    if lane >= LANES or column >= COLUMNS:
        raise TmemError(f"TMEM address {taddr:#010x} = lane {lane}, column {column} lies outside "
                        f"TMEM ({LANES} lanes x {COLUMNS} columns)")
    return lane, column


def format_address(taddr: int) -> str:
    """`0x00200040 = lane 32 (bits 31-16) | column 64 (bits 15-0)`, with both fields in binary."""
    lane, column = decode_address(taddr)
    return (f"{taddr:#010x} = lane {lane} (bits 31-16: {lane:016b}) | "
            f"column {column} (bits 15-0: {column:016b})")


def warp_lane_range(warp: int) -> tuple[int, int]:
    """The TMEM lanes [lo, hi) warp `warp` of a CTA may access: 32*(warp % 4) .. +31.
    (PTX ISA, tcgen05 "Tensor Memory access restrictions": each warp of a warpgroup owns a quarter.)"""
    warp = int(warp)
    if not 0 <= warp < 32:
        raise TmemError(f"warp index must be in [0, 32) (a CTA has at most 1024 threads), got {warp}")
    lo = 32 * (warp % 4)
    return lo, lo + 32


def new_image(fill: int = 0) -> np.ndarray:
    """A (128, 512) uint32 TMEM image: [lane, column], raw 32-bit words."""
    return np.full((LANES, COLUMNS), fill, dtype=np.uint32)


def require_image(image) -> np.ndarray:
    if not isinstance(image, np.ndarray) or image.shape != (LANES, COLUMNS) or image.dtype != np.uint32:
        raise TmemError(f"a TMEM image is a uint32 array of shape ({LANES}, {COLUMNS}); got "
                        f"{type(image).__name__} {getattr(image, 'shape', '')} {getattr(image, 'dtype', '')}")
    return image
