"""The 64-bit shared-memory matrix descriptor, and the reader that turns one back into addresses.

A descriptor does not list addresses: it gives the start address, two byte offsets and the swizzle,
and the tensor core walks the canonical layout (`bwlab.umma.canonical`) from there. SM90 (wgmma) and
SM100 (tcgen05) encode the same fields, except for the version field, the LBO mode bit and where the
swizzle code sits, so one reader serves both, and the H100 validates it through wgmma.

PTX ISA: "Matrix Descriptor Format" of wgmma (Asynchronous Warpgroup Level Matrix Shared Memory
Layout) and "Shared Memory Descriptor" of tcgen05 (Matrix Descriptors). CuTe:
include/cute/arch/mma_sm90_desc.hpp (`GMMA::DescriptorIterator`, `make_gmma_desc` in
mma_traits_sm90_gmma.hpp) and include/cute/arch/mma_sm100_desc.hpp (`UMMA::SmemDescriptor`,
`make_umma_desc` in mma_traits_sm100.hpp).

* **LBO / SBO** — leading / stride byte offsets: the distances the hardware jumps between core
  matrices (K-major: SBO between 8-row groups along MN, LBO between core matrices along K when there
  is no swizzle; MN-major: LBO between swizzle atoms along MN, SBO between 8-row groups along K, and
  the other way round without swizzle).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .canonical import (BASE32B, MAJORS, atom_rows, canonical_layout, require_choice, elem_bytes, instr_k,
                        layout_row_bytes, swizzle_with_base_offset)

__all__ = ["ARCHS", "LAYOUT_CODES_SM100", "LAYOUT_CODES_SM90", "SmemDesc", "make_smem_desc",
           "decode_smem_desc", "tile_desc", "smem_desc_for_tile", "gmma_desc_for_tile",
           "descriptor_addresses", "read_operand", "format_fields", "edit_descs", "WHY_UNCHANGED"]

ARCHS = ("sm100", "sm90")
# Swizzling-mode codes of the descriptor. SM100: bits 61-63 (cute::UMMA::LayoutType); SM90: bits
# 62-63 (cute::GMMA::LayoutType). These are encodings, not a list of swizzles: the same swizzle sets
# the same top bits in both (128B: bit 62, 64B: bit 63, 32B: 62+63); only SM100's code 1 (128B
# swizzle with 32-byte atoms, MN-major tf32) has no SM90 twin.
LAYOUT_CODES_SM100 = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}
LAYOUT_CODES_SM90 = {"none": 0, "128B": 1, "64B": 2, "32B": 3}

# Why changing one of these choices may leave every field of a descriptor as it was (the descriptor
# widget of notebook 03 says so when it happens).
WHY_UNCHANGED = {
    "dtype": "a descriptor holds no element type: one instruction reads 32 bytes of K whatever the type "
             "(16 f16/bf16, 8 tf32, 32 e4m3/s8); the type is in the instruction descriptor",
    "tile MN": "LBO and SBO are strides between core matrices / atoms, not sizes: more rows along MN repeat "
               "the same stride (SBO is 0 only when the tile has a single 8-row group)",
    "tile K": "a descriptor describes one instruction's 32-byte K slice; the tile's K sets how many k_blocks "
              "there are, and a stride only where K steps cross atoms (MN-major, or no swizzle)",
    "k_block": "this layout's K steps differ in the start address only",
    "base": "the start address moves with the base; nothing else depends on it",
}


def _codes(arch: str) -> dict:
    return LAYOUT_CODES_SM100 if arch == "sm100" else LAYOUT_CODES_SM90


def _enc(x: int) -> int:
    """PTX: matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4."""
    return (x & 0x3FFFF) >> 4


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
        require_choice("arch", self.arch, ARCHS)
        require_choice(f"{self.arch} swizzling mode", self.swizzle, _codes(self.arch))
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
        return _codes(self.arch)[self.swizzle]

    def encode(self) -> int:
        d = _enc(self.start_address) | (_enc(self.leading_byte_offset) << 16) | \
            (_enc(self.stride_byte_offset) << 32) | (self.base_offset << 49)
        if self.arch == "sm100":
            d |= (1 << 46) | (self.lbo_mode << 52) | (self.layout_type << 61)
        else:
            d |= self.layout_type << 62
        return d

    def fields(self) -> list[tuple[str, str, int, str]]:
        """(bits, name, encoded value, meaning) rows, for a field table."""
        rows = [("0-13", "matrix start address >> 4", _enc(self.start_address), f"{self.start_address} B"),
                ("16-29", "leading dimension byte offset >> 4", _enc(self.leading_byte_offset),
                 f"{self.leading_byte_offset} B"),
                ("32-45", "stride dimension byte offset >> 4", _enc(self.stride_byte_offset),
                 f"{self.stride_byte_offset} B")]
        if self.arch == "sm100":
            rows.append(("46-48", "fixed constant (version)", 1, "0b001: SM100 format"))
        rows.append(("49-51", "matrix base offset", self.base_offset,
                     "0: aligned start"))
        if self.arch == "sm100":
            rows.append(("52", "leading dimension stride mode", self.lbo_mode,
                         "0: LBO is relative"))
            rows.append(("61-63", "swizzling mode", self.layout_type, self.swizzle))
        else:
            rows.append(("62-63", "swizzling mode", self.layout_type, self.swizzle))
        return rows


def format_fields(rows, title: str = "") -> str:
    """A text table of (bits, name, value, meaning) rows (SmemDesc.fields(), InstrDesc.fields()), its
    lines short enough (68 characters) not to wrap in a widget of a notebook shown at 1000 px."""
    out = [title] if title else []
    width = max([len("field")] + [len(n) for _, n, _, _ in rows])
    out.append(f"{'bits':>5s}  {'field':{width}s} {'value':>5s}  meaning")
    out += [f"{b:>5s}  {n:{width}s} {v:>5d}  {m}" for b, n, v, m in rows]
    return "\n".join(out)


def make_smem_desc(start_address: int, leading_byte_offset: int, stride_byte_offset: int,
                   swizzle: str = "none", base_offset: int = 0, lbo_mode: int = 0,
                   arch: str = "sm100") -> int:
    """Encode a 64-bit SMEM matrix descriptor (offsets in bytes) for 'sm100' (tcgen05) or 'sm90' (wgmma)."""
    return SmemDesc(int(start_address), int(leading_byte_offset), int(stride_byte_offset), swizzle,
                    int(base_offset), int(lbo_mode), 1, arch).encode()


def decode_smem_desc(desc: int, arch: str = "sm100") -> SmemDesc:
    """Decode a 64-bit SMEM matrix descriptor into named fields (offsets in bytes)."""
    require_choice("arch", arch, ARCHS)
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
        names = {v: k for k, v in LAYOUT_CODES_SM100.items()}
        if code not in names:
            raise ValueError(f"SM100 swizzling mode {code} is invalid (PTX: values 3, 5 and 7 are invalid)")
        return SmemDesc(start, lbo, sbo, names[code], base, (desc >> 52) & 1, 1, "sm100")
    code = (desc >> 62) & 0x3
    names = {v: k for k, v in LAYOUT_CODES_SM90.items()}
    return SmemDesc(start, lbo, sbo, names[code], base, 0, 1, "sm90")


def edit_descs(descs, arch: str, **fields) -> np.ndarray:
    """A copy of an array of descriptors (one per K step) with the named fields replaced in every
    one, e.g. `edit_descs(a_descs, "sm90", stride_byte_offset=512)` or `swizzle="64B"`. Field names
    are SmemDesc's; offsets in bytes. The other fields, the start address included, stay."""
    from dataclasses import replace
    return np.array([replace(decode_smem_desc(int(d), arch), **fields).encode() for d in descs], np.uint64)


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
    n_mn = lay.atoms[0]
    start = base_address + int(lay.offset_unswizzled(0, k_block * ki))
    mn_stride = lay.atom_bytes if n_mn > 1 else 0              # next atom (8 rows / W bytes) along MN
    if major == "K":
        # K within one slice: 32 bytes = two 16-byte core-matrix columns (no swizzle) or one row
        # segment of a swizzle atom (swizzled: LBO unused).
        k_stride = n_mn * lay.atom_bytes if swizzle == "none" else 16
        lbo, sbo = k_stride, mn_stride
    else:
        k_groups = ki // atom_rows(swizzle)                   # 8-row (4-row) groups along K in one slice
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


def descriptor_addresses(desc: SmemDesc, major: str, dtype: str, mn: int, k: int | None = None) -> np.ndarray:
    """(mn, k) array: the SMEM byte address the tensor core reads for element (i, j) of an operand
    slice of `mn` rows and `k` (default: one instruction) elements of K, described by `desc`.

    K-major:  row i = 8*g + r, K byte b:   r*W + g*SBO + b            (swizzled, b < 32 <= W)
                                           r*16 + g*SBO + (b//16)*LBO + b%16   (no swizzle)
    MN-major: K row j = R*g + r, MN byte b: r*W + g*SBO + (b//W)*LBO + b%W  (swizzled; R = 8, or 4
                                           rows for 128B_base32B)
                                           r*16 + g*LBO + (b//16)*SBO + b%16   (no swizzle)
    then start address + that, through the swizzle with the descriptor's base offset.
    """
    key = (desc, major, dtype, mn, k)
    got = _ADDRESSES.get(key)
    if got is None:
        if len(_ADDRESSES) > 4096:
            _ADDRESSES.clear()
        got = _ADDRESSES[key] = _addresses(desc, major, dtype, mn, k)
        got.flags.writeable = False
    return got.copy()


_ADDRESSES = {}   # (desc, major, dtype, mn, k) -> addresses: a kernel's wgmma/tcgen05.mma reread the same slices


def _addresses(desc: SmemDesc, major: str, dtype: str, mn: int, k: int | None) -> np.ndarray:
    require_choice("major", major, MAJORS)
    if desc.swizzle == BASE32B and major == "K":
        raise ValueError("the 128B swizzle with 32B atomicity (SM100 layout type 1) describes MN-major "
                         "operands only (CuTe make_umma_desc: invalid for Major-K)")
    if desc.swizzle == BASE32B and desc.base_offset:
        raise ValueError("a base offset with the 128B swizzle with 32B atomicity is not modelled by bwlab")
    if desc.lbo_mode:
        raise ValueError("the absolute leading-dimension address mode (bit 52, sm_103a) is not "
                         "modelled by bwlab")
    eb = elem_bytes(dtype)
    k = instr_k(dtype) if k is None else int(k)
    w = layout_row_bytes(desc.swizzle)
    rows = atom_rows(desc.swizzle)
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
            off = (j % rows) * w + (j // rows) * sbo + (b // w) * lbo + b % w
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
