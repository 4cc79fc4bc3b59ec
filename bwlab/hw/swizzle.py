"""Shared-memory swizzles, as CuTe's `Swizzle<B, M, S>` acting on byte addresses.

TMA (CU_TENSOR_MAP_SWIZZLE_32B/64B/128B), wgmma and tcgen05 SMEM descriptors all use the same three
patterns. Each XORs address bits [M, M+B) with bits [M+S, M+S+B): with M = 4 (16-byte chunks) and
S = 3, the 16-byte chunk index inside a 128-byte row is XORed with the row index (mod 2^B) of the
128-byte row within the pattern's span (256 B / 512 B / 1024 B).

The swizzle is a function of the shared-memory ADDRESS, not of an index inside your buffer: a buffer
that does not start on a multiple of the span sees a shifted pattern. CuTe: include/cute/swizzle.hpp.
"""
from __future__ import annotations

import numpy as np

__all__ = ["MODES", "SWIZZLES", "Swizzle", "swizzle_of", "swizzle_address", "span_bytes", "row_bytes",
           "require_mode"]

# The one list of swizzle modes, in the order the driver and CuTe number them.
MODES = ("none", "32B", "64B", "128B")


class Swizzle:
    """CuTe Swizzle<B, M, S>: addr ^ ((addr >> S) & (((1 << B) - 1) << M))."""

    def __init__(self, bits: int, base: int, shift: int):
        self.bits, self.base, self.shift = int(bits), int(base), int(shift)

    def __call__(self, addr):
        addr = np.asarray(addr, dtype=np.int64) if not isinstance(addr, int) else addr
        mask = ((1 << self.bits) - 1) << (self.base + self.shift)
        return addr ^ ((addr & mask) >> self.shift)

    def __repr__(self):
        return f"Swizzle<{self.bits},{self.base},{self.shift}>"

    @property
    def span(self) -> int:
        """Bytes after which the pattern repeats (256, 512, 1024; 16 for the identity)."""
        return 1 << (self.base + self.shift + self.bits) if self.bits else 16


SWIZZLES = {
    "none": Swizzle(0, 4, 3),
    "32B": Swizzle(1, 4, 3),
    "64B": Swizzle(2, 4, 3),
    "128B": Swizzle(3, 4, 3),
}


def require_mode(mode: str, what: str = "swizzle") -> str:
    """`mode` if it names a swizzle mode, else ValueError listing the modes."""
    if mode not in SWIZZLES:
        raise ValueError(f"{what} must be one of {list(MODES)}, got {mode!r}")
    return mode


def swizzle_of(mode: str) -> Swizzle:
    return SWIZZLES[require_mode(mode)]


def swizzle_address(mode: str, addr):
    """The byte address where the byte that would sit at `addr` without swizzle actually lands."""
    return swizzle_of(mode)(addr)


def span_bytes(mode: str) -> int:
    """Repeat period of the pattern: 'none' 16, '32B' 256, '64B' 512, '128B' 1024."""
    return swizzle_of(mode).span


def row_bytes(mode: str) -> int:
    """Bytes in one row of the swizzle atom (8 such rows make the atom): 'none' 16 (one 16-byte
    chunk: the core-matrix row), '32B' 32, '64B' 64, '128B' 128. TMA's inner box row may be at most
    this wide when swizzled; the MMA descriptors call it the swizzle width."""
    sw = swizzle_of(mode)
    return 16 << sw.bits
