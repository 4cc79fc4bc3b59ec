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
from ..hw.swizzle import SWIZZLES, Swizzle, row_bytes
from .rules import LAYOUTS

__all__ = ["OPERAND_TYPES", "MAJORS", "LAYOUTS", "BASE32B", "layout_swizzle", "layout_row_bytes",
           "atom_rows", "elem_bytes", "instr_k", "atom_shape", "require_choice", "swizzle_with_base_offset",
           "CanonicalLayout", "canonical_layout"]

# A and B element types of tcgen05.mma / wgmma that bwlab lays out in SMEM (PTX names, bwlab.hw.dtypes).
OPERAND_TYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8")
MAJORS = ("K", "MN")

# SM100's "128-byte swizzle with 32-byte atomicity" (descriptor layout code 1), the layout of an
# MN-major tf32 operand. CuTe (include/cute/atom/mma_traits_sm100.hpp): Layout_MN_SW128_32B_Atom =
# Swizzle<2,5,2> o (1024 bits along MN, 4 rows along K): rows of 128 bytes, 4 rows per atom (512 B),
# and on byte addresses the 32-byte unit (bits 5-6) is XORed with the row mod 4 (bits 7-8).
# CuTe's make_umma_desc refuses it for K-major operands.
BASE32B = "128B_base32B"
_BASE32B_SWIZZLE = Swizzle(2, 5, 2)


def layout_swizzle(layout: str) -> Swizzle:
    """The address swizzle of a layout: `bwlab.hw.swizzle` for the four modes, Swizzle<2,5,2> for
    128B_base32B."""
    require_choice("swizzle", layout, LAYOUTS)
    return _BASE32B_SWIZZLE if layout == BASE32B else SWIZZLES[layout]


def layout_row_bytes(layout: str) -> int:
    """Bytes in one row of the layout's atom (the descriptors' swizzle width W)."""
    require_choice("swizzle", layout, LAYOUTS)
    return 128 if layout == BASE32B else row_bytes(layout)


def atom_rows(layout: str) -> int:
    """Rows in one atom: 8, or 4 for 128B_base32B (its 512-byte pattern)."""
    require_choice("swizzle", layout, LAYOUTS)
    return 4 if layout == BASE32B else 8


def require_choice(what, value, allowed):
    if value not in allowed:
        raise ValueError(f"{what} must be one of {list(allowed)}, got {value!r}")


def elem_bytes(dtype: str) -> int:
    """Bytes per operand element ('f16' 2, 'tf32' 4, 'e4m3' 1 ...)."""
    require_choice("operand dtype", dtype, OPERAND_TYPES)
    return element_type(dtype).bytes


def instr_k(dtype: str) -> int:
    """K of one MMA instruction in elements: always 32 bytes of K (256 bits), as CuTe says.
    f16/bf16 16, tf32 8, 8-bit types 32."""
    return 32 // elem_bytes(dtype)


def atom_shape(major: str, swizzle: str, dtype: str) -> tuple[int, int]:
    """(MN, K) extent in elements of one swizzle atom (8 rows, or 4 for 128B_base32B, of
    `layout_row_bytes(swizzle)` bytes)."""
    require_choice("major", major, MAJORS)
    require_choice("swizzle", swizzle, LAYOUTS)
    if swizzle == BASE32B and major == "K":
        raise ValueError("the 128B swizzle with 32B atomicity is an MN-major layout (CuTe make_umma_desc: "
                         "SWIZZLE_128B_BASE32B is invalid for Major-K)")
    per_row = layout_row_bytes(swizzle) // elem_bytes(dtype)
    return (atom_rows(swizzle), per_row) if major == "K" else (per_row, atom_rows(swizzle))


def swizzle_with_base_offset(swizzle: str, addr, base_offset: int = 0):
    """The swizzle the tensor core applies when it reads address `addr` with a descriptor whose
    base offset is `base_offset`.

    The 16-byte chunk bits [4, 4+B) are XORed with the 128-byte row bits [7, 7+B) of the address,
    counted from the start of the repeating pattern (128B_base32B: the 32-byte unit bits [5, 7)
    with the row bits [7, 9)). `base_offset` (PTX: "(pattern start addr >> 7)
    & 7") says where that pattern starts when it is not on a 256/512/1024-byte boundary; bwlab models
    the row as ((addr >> 7) - base_offset) mod 2^B. With base_offset 0 this is `bwlab.hw.swizzle`, the
    pattern TMA writes. On an H100 (wgmma, docs/results/wgmma_validate_h100.txt) this reading
    predicted all 12 tiles placed off their pattern boundary, with base offset 0 and (start >> 7) & 7,
    while "the field is ignored" and "rows count from the start address" each failed some.
    """
    sw = layout_swizzle(swizzle)
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
        require_choice("major", self.major, MAJORS)
        require_choice("swizzle", self.swizzle, LAYOUTS)
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
        return layout_row_bytes(self.swizzle)

    @property
    def atom_bytes(self) -> int:
        return atom_rows(self.swizzle) * self.row_bytes

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
        rows = atom_rows(self.swizzle)
        atom_index = (mn // amn) + (k // ak) * self.atoms[0]   # MN first, then K
        if self.major == "K":
            inner = (mn % rows) * w + (k % ak) * eb
        else:
            inner = (mn % amn) * eb + (k % rows) * w
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
