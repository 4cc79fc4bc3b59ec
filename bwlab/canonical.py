"""Canonical shared-memory layouts of MMA operands, the 64-bit SMEM matrix descriptors that describe
them, and the reader that turns a descriptor back into element addresses.

This is the half of stage 3 that Hopper and Blackwell share. `wgmma.mma_async` (SM90) and
`tcgen05.mma` (SM100) both read A and B from shared memory through a 64-bit descriptor; both expect
the operand in one of eight *canonical layouts*: K-major or MN-major, times no swizzle or the 32/64/128
byte swizzle. Only the descriptor encodings differ (the version field, the LBO mode bit and where the
swizzle code sits), so one reader serves both, and the H100 validates it through wgmma.

Vocabulary (PTX ISA 9.7.15.5.1 "Shared Memory Matrix Layout", 9.7.16.4 "Shared Memory Descriptor";
CuTe include/cute/atom/mma_traits_sm90_gmma.hpp and mma_traits_sm100.hpp):

* **core matrix** — 8 rows of 16 bytes, the unit the tensor core fetches. For a K-major operand a row
  runs along K; for an MN-major one it runs along M (or N).
* **swizzle atom** — 8 rows of W bytes (W = 16, 32, 64, 128 for none/32B/64B/128B): the repeating
  unit of a layout, `Layout_{K,MN}_{INTER,SW32,SW64,SW128}_Atom` in CuTe.
* **canonical tile layout** — atoms repeated along MN first, then K (`tile_to_shape` with CuTe's
  default column-major order), each address then passed through the swizzle `bwlab.swizzle`.
* **LBO / SBO** — leading / stride byte offsets: the distances the hardware jumps between core
  matrices (K-major: SBO between 8-row groups along MN, LBO between core matrices along K when there
  is no swizzle; MN-major: LBO between swizzle atoms along MN, SBO between 8-row groups along K, and
  the other way round without swizzle).

Addresses here are CTA shared-memory byte addresses (what `cvta.to.shared` gives), so a swizzle is a
function of the address, exactly as TMA writes it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .hw.swizzle import SWIZZLES

__all__ = [
    "OPERAND_DTYPES", "SWIZZLE_NAMES", "MAJORS", "SWIZZLE_WIDTH", "elem_bytes", "atom_shape",
    "CanonicalLayout", "canonical_layout", "SmemDesc", "make_smem_desc", "decode_smem_desc",
    "tile_desc", "smem_desc_for_tile", "gmma_desc_for_tile", "descriptor_addresses",
    "read_operand", "instr_k", "swizzle_with_base_offset",
]

# Operand element types and their width in bits (A and B of tcgen05.mma / wgmma).
OPERAND_DTYPES = {"f16": 16, "bf16": 16, "tf32": 32, "e4m3": 8, "e5m2": 8, "s8": 8, "u8": 8}
SWIZZLE_NAMES = ("none", "32B", "64B", "128B")
MAJORS = ("K", "MN")
# Bytes in one row of the swizzle atom (the "swizzle width"); the atom has 8 such rows.
SWIZZLE_WIDTH = {"none": 16, "32B": 32, "64B": 64, "128B": 128}

# Layout-type codes. SM100: bits 61-63 (cute::UMMA::LayoutType); SM90: bits 62-63 (cute::GMMA::LayoutType).
# The same swizzle sets the same top bits in both encodings (128B: bit 62, 64B: bit 63, 32B: 62+63);
# only SM100's code 1 (128B swizzle with 32-byte atoms, MN-major tf32) has no SM90 twin.
_LAYOUT_SM100 = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}
_LAYOUT_SM90 = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
ARCHS = ("sm100", "sm90")


def _check_choice(what, value, allowed):
    if value not in allowed:
        raise ValueError(f"{what} must be one of {list(allowed)}, got {value!r}")


def elem_bytes(dtype: str) -> int:
    """Bytes per operand element ('f16' 2, 'tf32' 4, 'e4m3' 1 ...)."""
    _check_choice("operand dtype", dtype, OPERAND_DTYPES)
    return OPERAND_DTYPES[dtype] // 8


def instr_k(dtype: str) -> int:
    """K of one MMA instruction in elements: always 32 bytes of K (256 bits), as CuTe says.
    f16/bf16 16, tf32 8, 8-bit types 32."""
    return 32 // elem_bytes(dtype)


def atom_shape(major: str, swizzle: str, dtype: str) -> tuple[int, int]:
    """(MN, K) extent in elements of one swizzle atom (8 rows of SWIZZLE_WIDTH bytes)."""
    _check_choice("major", major, MAJORS)
    _check_choice("swizzle", swizzle, SWIZZLE_NAMES)
    per_row = SWIZZLE_WIDTH[swizzle] // elem_bytes(dtype)
    return (8, per_row) if major == "K" else (per_row, 8)


def swizzle_with_base_offset(swizzle: str, addr, base_offset: int = 0):
    """The swizzle the tensor core applies when it reads address `addr` with a descriptor whose
    base offset is `base_offset`.

    The 16-byte chunk bits [4, 4+B) are XORed with the 128-byte row bits [7, 7+B) of the address,
    counted from the start of the repeating pattern. `base_offset` (PTX: "(pattern start addr >> 7)
    & 7") says where that pattern starts when it is not on a 256/512/1024-byte boundary; bwlab models
    the row as ((addr >> 7) - base_offset) mod 2^B. With base_offset 0 this is `bwlab.swizzle`, the
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
        _check_choice("major", self.major, MAJORS)
        _check_choice("swizzle", self.swizzle, SWIZZLE_NAMES)
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
    def atom_bytes(self) -> int:
        return 8 * SWIZZLE_WIDTH[self.swizzle]

    @property
    def atoms(self) -> tuple[int, int]:
        """How many atoms along MN and along K."""
        return self.tile[0] // self.atom[0], self.tile[1] // self.atom[1]

    @property
    def nbytes(self) -> int:
        return self.tile[0] * self.tile[1] * elem_bytes(self.dtype)

    def offset_unswizzled(self, mn, k):
        """Byte offset of (mn, k) from base_address before the swizzle (CuTe's inner layout)."""
        mn = np.asarray(mn, dtype=np.int64)
        k = np.asarray(k, dtype=np.int64)
        eb, w = elem_bytes(self.dtype), SWIZZLE_WIDTH[self.swizzle]
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
        end = self.base_address + self.atoms[0] * self.atoms[1] * self.atom_bytes
        if end > smem.size:
            raise ValueError(f"the tile ends at byte {end}, past the {smem.size}-byte buffer")
        view = smem.view(np.dtype(f"<u{eb}"))
        view[self.addresses() // eb] = values.view(np.dtype(f"<u{eb}"))


def canonical_layout(major: str, swizzle: str, dtype: str, tile, base_address: int = 0) -> CanonicalLayout:
    """The canonical layout (element (mn, k) -> SMEM byte address) of a tile; see CanonicalLayout."""
    return CanonicalLayout(major, swizzle, dtype, tuple(tile), int(base_address))


# ------------------------------------------------------------------------------------------------
# The 64-bit shared-memory matrix descriptor
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SmemDesc:
    """The fields of a shared-memory matrix descriptor, in bytes (not the >>4 encoded values).

    Field names follow the PTX ISA tables: matrix start address, leading dimension byte offset
    (LBO), stride dimension byte offset (SBO), the fixed version (0b001 on SM100, absent on SM90),
    matrix base offset, leading dimension stride mode (SM100 only; 0 = relative offset) and the
    swizzling mode.
    """

    start_address: int
    leading_byte_offset: int
    stride_byte_offset: int
    swizzle: str = "none"
    base_offset: int = 0
    lbo_mode: int = 0
    version: int = 1
    arch: str = "sm100"

    def __post_init__(self):
        _check_choice("arch", self.arch, ARCHS)
        layouts = _LAYOUT_SM100 if self.arch == "sm100" else _LAYOUT_SM90
        _check_choice(f"{self.arch} swizzling mode", self.swizzle, layouts)
        for name in ("start_address", "leading_byte_offset", "stride_byte_offset"):
            v = getattr(self, name)
            if v % 16 or not 0 <= v < (1 << 18):
                raise ValueError(f"{name} must be a multiple of 16 in [0, 256 KiB) — the descriptor "
                                 f"stores bits 4-17 — got {v}")
        if not 0 <= self.base_offset <= 7:
            raise ValueError(f"base_offset is a 3-bit field (0..7), got {self.base_offset}")
        if self.arch == "sm90" and (self.lbo_mode or self.version not in (0, 1)):
            raise ValueError("SM90 descriptors have no LBO mode bit and no version field")
        if self.arch == "sm100" and self.version != 1:
            raise ValueError(f"SM100 descriptors carry the fixed value 0b001 in bits 46-48, got {self.version}")
        if self.lbo_mode not in (0, 1):
            raise ValueError(f"lbo_mode is one bit, got {self.lbo_mode}")

    @property
    def layout_type(self) -> int:
        return (_LAYOUT_SM100 if self.arch == "sm100" else _LAYOUT_SM90)[self.swizzle]

    def encode(self) -> int:
        enc = lambda x: (x & 0x3FFFF) >> 4  # PTX: matrix-descriptor-encode(x)
        d = enc(self.start_address) | (enc(self.leading_byte_offset) << 16) | \
            (enc(self.stride_byte_offset) << 32) | (self.base_offset << 49)
        if self.arch == "sm100":
            d |= (1 << 46) | (self.lbo_mode << 52) | (self.layout_type << 61)
        else:
            d |= self.layout_type << 62
        return d

    def fields(self) -> list[tuple[str, str, int, str]]:
        """(bits, name, encoded value, meaning) rows, for a field table."""
        enc = lambda x: (x & 0x3FFFF) >> 4
        rows = [("0-13", "matrix start address >> 4", enc(self.start_address), f"{self.start_address} B"),
                ("16-29", "leading dimension byte offset >> 4", enc(self.leading_byte_offset),
                 f"{self.leading_byte_offset} B"),
                ("32-45", "stride dimension byte offset >> 4", enc(self.stride_byte_offset),
                 f"{self.stride_byte_offset} B")]
        if self.arch == "sm100":
            rows.append(("46-48", "fixed constant (version)", 1, "0b001 = SM100 descriptor"))
        rows.append(("49-51", "matrix base offset", self.base_offset,
                     "0: the swizzle pattern starts on its 256/512/1024 B boundary"))
        if self.arch == "sm100":
            rows.append(("52", "leading dimension stride mode", self.lbo_mode,
                         "0: LBO is a relative byte offset"))
            rows.append(("61-63", "swizzling mode", self.layout_type, self.swizzle))
        else:
            rows.append(("62-63", "swizzling mode", self.layout_type, self.swizzle))
        return rows


def make_smem_desc(start_address: int, leading_byte_offset: int, stride_byte_offset: int,
                   swizzle: str = "none", base_offset: int = 0, lbo_mode: int = 0,
                   arch: str = "sm100") -> int:
    """Encode a 64-bit SMEM matrix descriptor (offsets in bytes) for 'sm100' (tcgen05) or 'sm90' (wgmma)."""
    return SmemDesc(int(start_address), int(leading_byte_offset), int(stride_byte_offset), swizzle,
                    int(base_offset), int(lbo_mode), 1, arch).encode()


def decode_smem_desc(desc: int, arch: str = "sm100") -> SmemDesc:
    """Decode a 64-bit SMEM matrix descriptor into named fields (offsets in bytes)."""
    _check_choice("arch", arch, ARCHS)
    desc = int(desc)
    if not 0 <= desc < (1 << 64):
        raise ValueError(f"a descriptor is a 64-bit value, got {desc:#x}")
    start = (desc & 0x3FFF) << 4
    lbo = ((desc >> 16) & 0x3FFF) << 4
    sbo = ((desc >> 32) & 0x3FFF) << 4
    base = (desc >> 49) & 0x7
    if arch == "sm100":
        version = (desc >> 46) & 0x7
        if version != 1:
            raise ValueError(f"bits 46-48 of an SM100 descriptor hold the fixed value 0b001, got "
                             f"{version:#05b} (is this an SM90 descriptor?)")
        code = (desc >> 61) & 0x7
        names = {v: k for k, v in _LAYOUT_SM100.items()}
        if code not in names:
            raise ValueError(f"SM100 swizzling mode {code} is invalid (PTX: values 3, 5 and 7 are invalid)")
        return SmemDesc(start, lbo, sbo, names[code], base, (desc >> 52) & 1, 1, "sm100")
    code = (desc >> 62) & 0x3
    names = {v: k for k, v in _LAYOUT_SM90.items()}
    return SmemDesc(start, lbo, sbo, names[code], base, 0, 1, "sm90")


def tile_desc(major: str, swizzle: str, dtype: str, tile, k_block: int, base_address: int = 0,
              arch: str = "sm100") -> SmemDesc:
    """Descriptor fields for the `k_block`-th instruction-K slice of a canonical tile.

    Mirrors CuTe's make_umma_desc / make_gmma_desc applied to that slice: LBO and SBO are the
    strides between core matrices / atoms in the two directions (see the module docstring); a
    stride across a direction the slice does not repeat in is 0, and the unused LBO of a swizzled
    K-major layout is 16 bytes (encoded 1), exactly as CuTe leaves them.
    """
    lay = canonical_layout(major, swizzle, dtype, tile, base_address)
    ki = instr_k(dtype)
    n_kb = lay.tile[1] // ki
    if not 0 <= k_block < n_kb:
        raise ValueError(f"k_block {k_block} is outside the tile: K = {lay.tile[1]} holds {n_kb} "
                         f"instruction slices of K = {ki} ({dtype})")
    w, eb = SWIZZLE_WIDTH[swizzle], elem_bytes(dtype)
    amn, ak = lay.atom
    n_mn = lay.atoms[0]
    k0 = k_block * ki
    start = base_address + int(lay.offset_unswizzled(0, k0))
    mn_stride = lay.atom_bytes if n_mn > 1 else 0              # next atom (8 rows / W bytes) along MN
    if major == "K":
        # K within one slice: 32 bytes = two 16-byte core-matrix columns (no swizzle) or one row
        # segment of a swizzle atom (swizzled: LBO unused).
        k_stride = n_mn * lay.atom_bytes if swizzle == "none" else 16
        lbo, sbo = k_stride, mn_stride
    else:
        k_groups = ki // 8                                    # 8-row groups along K in one slice
        k_stride = n_mn * lay.atom_bytes if k_groups > 1 else 0
        lbo, sbo = (k_stride, mn_stride) if swizzle == "none" else (mn_stride, k_stride)
    return SmemDesc(start, lbo, sbo, swizzle, 0, 0, 1, arch)


def smem_desc_for_tile(major: str, swizzle: str, dtype: str, tile, k_block: int,
                       base_address: int = 0) -> int:
    """The SM100 (tcgen05) descriptor of the `k_block`-th instruction-K slice of a `tile = (mn, k)`
    operand stored at `base_address` in the canonical layout (atoms along MN first, then K)."""
    return tile_desc(major, swizzle, dtype, tile, k_block, base_address, "sm100").encode()


def gmma_desc_for_tile(major: str, swizzle: str, dtype: str, tile, k_block: int,
                       base_address: int = 0) -> int:
    """The same slice described for SM90's wgmma (CuTe make_gmma_desc)."""
    return tile_desc(major, swizzle, dtype, tile, k_block, base_address, "sm90").encode()


# ------------------------------------------------------------------------------------------------
# The reader: how the tensor core turns a descriptor into element addresses
# ------------------------------------------------------------------------------------------------

def descriptor_addresses(desc: SmemDesc, major: str, dtype: str, mn: int, k: int | None = None) -> np.ndarray:
    """(mn, k) array: the SMEM byte address the tensor core reads for element (i, j) of an operand
    slice of `mn` rows and `k` (default: one instruction) elements of K, described by `desc`.

    K-major:  row i = 8*g + r, K byte b:   r*W + g*SBO + b            (swizzled, b < 32 <= W)
                                           r*16 + g*SBO + (b//16)*LBO + b%16   (no swizzle)
    MN-major: K row j = 8*g + r, MN byte b: r*W + g*SBO + (b//W)*LBO + b%W  (swizzled)
                                           r*16 + g*LBO + (b//16)*SBO + b%16   (no swizzle)
    then start address + that, through the swizzle with the descriptor's base offset.
    """
    _check_choice("major", major, MAJORS)
    if desc.swizzle == "128B_base32B":
        raise ValueError("the 128-byte swizzle with 32-byte atoms (SM100 layout type 1) is not "
                         "modelled by bwlab")
    if desc.lbo_mode:
        raise ValueError("the absolute leading-dimension address mode (bit 52, sm_103a) is not "
                         "modelled by bwlab")
    eb = elem_bytes(dtype)
    k = instr_k(dtype) if k is None else int(k)
    w = SWIZZLE_WIDTH[desc.swizzle]
    i, j = np.meshgrid(np.arange(mn, dtype=np.int64), np.arange(k, dtype=np.int64), indexing="ij")
    lbo, sbo = desc.leading_byte_offset, desc.stride_byte_offset
    if major == "K":
        b = j * eb
        if desc.swizzle == "none":
            off = (i % 8) * 16 + (i // 8) * sbo + (b // 16) * lbo + b % 16
        else:
            off = (i % 8) * w + (i // 8) * sbo + b
    else:
        b = i * eb
        if desc.swizzle == "none":
            off = (j % 8) * 16 + (j // 8) * lbo + (b // 16) * sbo + b % 16
        else:
            off = (j % 8) * w + (j // 8) * sbo + (b // w) * lbo + b % w
    return swizzle_with_base_offset(desc.swizzle, desc.start_address + off, desc.base_offset)


def read_operand(smem: np.ndarray, desc: SmemDesc, major: str, dtype: str, mn: int,
                 k: int | None = None) -> np.ndarray:
    """The raw bits (uint8/16/32 by element size) of an (mn, k) operand slice read from the byte
    array `smem` through `desc` — the shared SMEM-operand reader of the wgmma and tcgen05 models."""
    eb = elem_bytes(dtype)
    addr = descriptor_addresses(desc, major, dtype, mn, k)
    if addr.max() + eb > smem.size:
        raise ValueError(f"the descriptor reads up to byte {int(addr.max()) + eb}, past the "
                         f"{smem.size}-byte shared memory")
    return smem.view(np.dtype(f"<u{eb}"))[addr // eb]
