"""Canonical shared-memory layouts of MMA operands: which SMEM byte holds element (mn, k).

This is the half of stage 3 that Hopper and Blackwell share. `wgmma.mma_async` (SM90) and
`tcgen05.mma` (SM100) both read A and B from shared memory through a 64-bit descriptor
(`bwlab.umma.descriptors`); both expect the operand in one of the *canonical layouts*: K-major or
MN-major, times no swizzle or the 32/64/128-byte swizzle.

Vocabulary (PTX ISA "Shared Memory Matrix Layout" of wgmma and of tcgen05; CuTe
include/cute/atom/mma_traits_sm90_gmma.hpp and mma_traits_sm100.hpp):

* **core matrix** — 8 rows of 16 bytes, the unit the tensor core fetches. For a K-major operand a row
  runs along K; for an MN-major one it runs along M (or N).
* **swizzle atom** — 8 rows of W bytes (W = 16, 32, 64, 128 for none/32B/64B/128B,
  `bwlab.hw.swizzle.row_bytes`): the repeating unit of a layout, `Layout_{K,MN}_{INTER,SW32,SW64,SW128}_Atom`
  in CuTe.
* **canonical tile layout** — atoms repeated along MN first, then K (`tile_to_shape` with CuTe's
  default column-major order), each address then passed through the swizzle (`bwlab.hw.swizzle`).

Addresses here are CTA shared-memory byte addresses (what `cvta.to.shared` gives), so a swizzle is a
function of the address, exactly as TMA writes it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hw.dtypes import element_type
from ..hw.swizzle import MODES, SWIZZLES, row_bytes

__all__ = ["OPERAND_TYPES", "MAJORS", "elem_bytes", "instr_k", "atom_shape", "check_choice",
           "swizzle_with_base_offset", "CanonicalLayout", "canonical_layout"]

# A and B element types of tcgen05.mma / wgmma that bwlab lays out in SMEM (PTX names, bwlab.hw.dtypes).
OPERAND_TYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8")
MAJORS = ("K", "MN")


def check_choice(what, value, allowed):
    if value not in allowed:
        raise ValueError(f"{what} must be one of {list(allowed)}, got {value!r}")


def elem_bytes(dtype: str) -> int:
    """Bytes per operand element ('f16' 2, 'tf32' 4, 'e4m3' 1 ...)."""
    check_choice("operand dtype", dtype, OPERAND_TYPES)
    return element_type(dtype).bytes


def instr_k(dtype: str) -> int:
    """K of one MMA instruction in elements: always 32 bytes of K (256 bits), as CuTe says.
    f16/bf16 16, tf32 8, 8-bit types 32."""
    return 32 // elem_bytes(dtype)


def atom_shape(major: str, swizzle: str, dtype: str) -> tuple[int, int]:
    """(MN, K) extent in elements of one swizzle atom (8 rows of `row_bytes(swizzle)` bytes)."""
    check_choice("major", major, MAJORS)
    check_choice("swizzle", swizzle, MODES)
    per_row = row_bytes(swizzle) // elem_bytes(dtype)
    return (8, per_row) if major == "K" else (per_row, 8)


def swizzle_with_base_offset(swizzle: str, addr, base_offset: int = 0):
    """The swizzle the tensor core applies when it reads address `addr` with a descriptor whose
    base offset is `base_offset`.

    The 16-byte chunk bits [4, 4+B) are XORed with the 128-byte row bits [7, 7+B) of the address,
    counted from the start of the repeating pattern. `base_offset` (PTX: "(pattern start addr >> 7)
    & 7") says where that pattern starts when it is not on a 256/512/1024-byte boundary; bwlab models
    the row as ((addr >> 7) - base_offset) mod 2^B. With base_offset 0 this is `bwlab.hw.swizzle`, the
    pattern TMA writes. On an H100 (wgmma, docs/results/wgmma_validate_h100.txt) this reading
    predicted all 12 tiles placed off their pattern boundary, with base offset 0 and (start >> 7) & 7,
    while "the field is ignored" and "rows count from the start address" each failed some.
    """
    sw = SWIZZLES[swizzle]
    if sw.bits == 0:
        return addr
    a = np.asarray(addr, dtype=np.int64)
    row = ((a >> (sw.base + sw.shift)) - int(base_offset)) & ((1 << sw.bits) - 1)
    out = a ^ (row << sw.base)
    return int(out) if np.ndim(out) == 0 else out


@dataclass(frozen=True)
class CanonicalLayout:
    """A (mn, k) operand tile stored at `base_address` in one canonical layout.

    `address(mn, k)` is the shared-memory byte address of element (mn, k) — vectorised over NumPy
    arrays. The tile must be a whole number of swizzle atoms.
    """

    major: str
    swizzle: str
    dtype: str
    tile: tuple[int, int]
    base_address: int = 0

    def __post_init__(self):
        check_choice("major", self.major, MAJORS)
        check_choice("swizzle", self.swizzle, MODES)
        elem_bytes(self.dtype)
        mn, k = (int(x) for x in self.tile)
        object.__setattr__(self, "tile", (mn, k))
        amn, ak = atom_shape(self.major, self.swizzle, self.dtype)
        if mn <= 0 or k <= 0 or mn % amn or k % ak:
            raise ValueError(
                f"a {self.major}-major {self.swizzle} {self.dtype} tile is made of {amn}x{ak} "
                f"(MN x K) swizzle atoms; tile {self.tile} is not a whole number of them")
        if self.base_address % 16 or not 0 <= self.base_address < (1 << 18):
            raise ValueError(f"base_address must be 16-byte aligned and below 256 KiB (the "
                             f"descriptor keeps address bits 4-17), got {self.base_address}")

    @property
    def atom(self) -> tuple[int, int]:
        return atom_shape(self.major, self.swizzle, self.dtype)

    @property
    def row_bytes(self) -> int:
        """Bytes in one row of the swizzle atom (the descriptors' swizzle width W)."""
        return row_bytes(self.swizzle)

    @property
    def atom_bytes(self) -> int:
        return 8 * self.row_bytes

    @property
    def atoms(self) -> tuple[int, int]:
        """How many atoms along MN and along K."""
        return self.tile[0] // self.atom[0], self.tile[1] // self.atom[1]

    @property
    def nbytes(self) -> int:
        return self.tile[0] * self.tile[1] * elem_bytes(self.dtype)

    @property
    def end(self) -> int:
        """One past the last SMEM byte of the tile."""
        return self.base_address + self.atoms[0] * self.atoms[1] * self.atom_bytes

    def offset_unswizzled(self, mn, k):
        """Byte offset of (mn, k) from base_address before the swizzle (CuTe's inner layout)."""
        mn = np.asarray(mn, dtype=np.int64)
        k = np.asarray(k, dtype=np.int64)
        eb, w = elem_bytes(self.dtype), self.row_bytes
        amn, ak = self.atom
        atom_index = (mn // amn) + (k // ak) * self.atoms[0]   # MN first, then K
        if self.major == "K":
            inner = (mn % 8) * w + (k % ak) * eb
        else:
            inner = (mn % amn) * eb + (k % 8) * w
        return atom_index * self.atom_bytes + inner

    def address(self, mn, k):
        """Shared-memory byte address of element (mn, k) (swizzled as a function of the address)."""
        return swizzle_with_base_offset(self.swizzle, self.base_address + self.offset_unswizzled(mn, k))

    def addresses(self) -> np.ndarray:
        """(mn, k) array of the byte address of every element."""
        mn, k = np.meshgrid(np.arange(self.tile[0]), np.arange(self.tile[1]), indexing="ij")
        return self.address(mn, k)

    def store(self, smem: np.ndarray, values: np.ndarray) -> None:
        """Write the (mn, k) array `values` (raw bits: uint16 for f16/bf16, uint32 for tf32, uint8
        for 8-bit types) into the byte array `smem` at this layout's addresses."""
        eb = elem_bytes(self.dtype)
        values = np.asarray(values)
        if values.shape != self.tile:
            raise ValueError(f"values must have the tile shape {self.tile}, got {values.shape}")
        if values.dtype.itemsize != eb:
            raise ValueError(f"{self.dtype} elements are {eb} bytes; got a {values.dtype} array")
        if self.end > smem.size:
            raise ValueError(f"the tile ends at byte {self.end}, past the {smem.size}-byte buffer")
        view = smem.view(np.dtype(f"<u{eb}"))
        view[self.addresses() // eb] = values.view(np.dtype(f"<u{eb}"))


def canonical_layout(major: str, swizzle: str, dtype: str, tile, base_address: int = 0) -> CanonicalLayout:
    """The canonical layout (element (mn, k) -> SMEM byte address) of a tile; see CanonicalLayout."""
    return CanonicalLayout(major, swizzle, dtype, tuple(tile), int(base_address))
