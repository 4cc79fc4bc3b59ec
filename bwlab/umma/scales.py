"""The scale factors' trip of a block-scaled tcgen05.mma: GMEM -> SMEM -> TMEM, and where the MMA reads them.

* in GMEM and SMEM (`sf_gmem_offsets`, `sf_smem_offsets`, `sf_to_layout`): CUTLASS's block-scaled layout
  (include/cutlass/detail/sm100_blockscaled_layout.hpp, `Sm1xxBlockScaledBasicChunk`): an indivisible atom
  of 512 bytes holds the 4 scale factors (along K) of 128 rows; row r, scale j of the atom sits at byte
  16 * (r % 32) + 4 * (r // 32) + j, so one 32-bit word holds one row's 4 scales and 16 bytes hold the words
  of rows r, r + 32, r + 64, r + 96. GMEM tiles the atoms K first (`tile_to_shape(..., Step<_2,_1,_3>)`), one
  MMA tile's SMEM MN first (`deduce_smem_layoutSFA/B`);
* `tcgen05.cp` (`tcgen05_cp`): SMEM -> TMEM, shapes .128x256b, .4x256b, .128x128b, .64x128b (with
  .warpx2::02_13 or ::01_23) and .32x128b (with .warpx4), optional decompression .b8x16.b6x16_p32 /
  .b8x16.b4x16_p64 (the forms and their rules are `bwlab.tmem.tables.CP_TABLE`); the source is read through
  an SMEM descriptor as a K-major matrix of 16-byte rows (8-row core matrices, SBO between 8-row groups, LBO
  between the two 16-byte halves of a 256-bit row). `.32x128b.warpx4` of one atom puts row r's 4 scales at
  lane r % 32 of every lane quarter, column r // 32;
* in TMEM (`read_tmem_scales`, `place_tmem_scales`): PTX ISA tcgen05.mma "Block Scaling": the scales "need
  to be duplicated to all 32 lane partitions" (the four lane quarters); the scale factor ID selects the byte
  (1X: byte ID of the word), the half word (2X: ID 0 or 2) or the whole word (4X: ID 0) of each 32-bit cell;
  row r of A (of B) is at lane r % 32 (of each quarter), column r // 32 of the address given to the MMA.
  bwlab refuses scales that differ between the quarters (the ISA's duplication rule), naming the first row.

The ISA shows the TMEM placement as figures; bwlab follows CUTLASS's layouts (the SF atom, UTCCP's
4x32dp128bit copy). Where a 6-/4-bit code lands in its byte after decompression (the low bits) and where the
padding sits (the high bytes of each 16) are bwlab's reading. Nothing here is measured (no sm_100 GPU).
"""
from __future__ import annotations

import numpy as np

from ..hw.dtypes import unpack_fp4, unpack_fp6
from ..hw.tmem import COLUMNS, decode_address
from ..util import ceil_div
from .descriptors import decode_smem_desc, descriptor_addresses
from .rules import MmaRuleError

__all__ = ["ScaleLayoutError", "SF_ATOM_BYTES", "sf_atom_offset", "sf_gmem_offsets", "sf_smem_offsets",
           "sf_to_layout", "sf_from_layout", "sf_tmem_columns", "CP_SHAPES", "CP_MULTICAST", "CP_FORMATS",
           "cp_destination", "tcgen05_cp", "place_tmem_scales", "read_tmem_scales"]

SEC_SF_TMEM = ("PTX ISA tcgen05.mma, Block Scaling: scale factors for A and B need to be duplicated to all "
               "four 32-lane partitions of Tensor Memory")
SEC_CP = "PTX ISA tcgen05.cp (shapes, multicast and decompression)"


class ScaleLayoutError(MmaRuleError):
    """Scale factors in TMEM that break the ISA's placement rule (not duplicated to the four lane quarters)."""



def _rule(ok, message, section, cls=MmaRuleError):
    if not ok:
        raise cls(message, section)

# ------------------------------------------------------------------------------------------------
# scale factors in GMEM and SMEM (CUTLASS's block-scaled layout)
# ------------------------------------------------------------------------------------------------
SF_ATOM_BYTES = 512      # 128 rows x 4 scale factors


def sf_atom_offset(row, j):
    """Byte of (row r, scale j) inside one 512-byte atom: 16 * (r % 32) + 4 * (r // 32) + j."""
    row, j = np.asarray(row), np.asarray(j)
    return 16 * (row % 32) + 4 * (row // 32) + j


def _atoms(MN, n_sf):
    if MN <= 0 or n_sf <= 0:
        raise ValueError(f"a scale-factor matrix has MN > 0 rows and n_sf > 0 scales per row, got {MN} x {n_sf}")
    return ceil_div(MN, 128), ceil_div(n_sf, 4)


def sf_gmem_offsets(MN: int, n_sf: int) -> np.ndarray:
    """(MN, n_sf) byte offsets of scale factors in GMEM: atoms tiled along K first, then MN (CUTLASS
    `tile_to_shape(SfAtom, (MN, K), Step<_2,_1,_3>)`). Rows and scales pad up to whole atoms (128 x 4)."""
    mb, kb = _atoms(MN, n_sf)
    r, j = np.meshgrid(np.arange(MN), np.arange(n_sf), indexing="ij")
    return SF_ATOM_BYTES * ((j // 4) + kb * (r // 128)) + sf_atom_offset(r % 128, j % 4)


def sf_smem_offsets(MN: int, n_sf: int) -> np.ndarray:
    """(MN, n_sf) byte offsets inside one MMA tile's SMEM scale buffer: atoms along MN first, then K (CUTLASS
    `deduce_smem_layoutSFA/B`), so each 4 scales of K of the whole tile are one run of MN/128 atoms, which
    tcgen05.cp copies atom by atom."""
    mb, kb = _atoms(MN, n_sf)
    r, j = np.meshgrid(np.arange(MN), np.arange(n_sf), indexing="ij")
    return SF_ATOM_BYTES * ((r // 128) + mb * (j // 4)) + sf_atom_offset(r % 128, j % 4)


def sf_to_layout(sf, where: str = "gmem") -> np.ndarray:
    """Scale codes (MN x n_sf uint8) -> the bytes of the GMEM or SMEM layout (padding bytes 0)."""
    sf = np.asarray(sf)
    if sf.ndim != 2 or sf.dtype != np.uint8:
        raise ValueError(f"scale factors are an MN x n_sf uint8 array of codes, got {sf.dtype} {sf.shape}")
    off = (sf_gmem_offsets if where == "gmem" else sf_smem_offsets)(*sf.shape)
    mb, kb = _atoms(*sf.shape)
    out = np.zeros(SF_ATOM_BYTES * mb * kb, np.uint8)
    out[off] = sf
    return out


def sf_from_layout(buf, MN: int, n_sf: int, where: str = "gmem") -> np.ndarray:
    """Inverse of `sf_to_layout`."""
    off = (sf_gmem_offsets if where == "gmem" else sf_smem_offsets)(MN, n_sf)
    return np.asarray(buf, np.uint8)[off]


def sf_tmem_columns(MN: int, n_sf: int = 4) -> int:
    """TMEM columns the scale factors of MN rows take after tcgen05.cp.32x128b.warpx4 of each atom: 4 per
    128 rows per 4 scales."""
    mb, kb = _atoms(MN, n_sf)
    return 4 * mb * kb


# ------------------------------------------------------------------------------------------------
# tcgen05.cp: SMEM -> TMEM
# ------------------------------------------------------------------------------------------------
def _cp_form(shape: str, multicast: str | None, fmt: str | None = None):
    """The tcgen05.cp row of `bwlab.tmem.tables` (shape x multicast x decompression, checked there: a
    TmemError naming the rule otherwise)."""
    from ..tmem.tables import require_cp
    return require_cp(shape, multicast, fmt, 1)


CP_SHAPES = {"128x256b": (128, 32), "4x256b": (4, 32), "128x128b": (128, 16), "64x128b": (64, 16),
             "32x128b": (32, 16)}          # shape -> (rows, bytes per row): bwlab.tmem.tables.CP_TABLE's lanes, bits
CP_MULTICAST = {"64x128b": ("warpx2::02_13", "warpx2::01_23"), "32x128b": ("warpx4",)}
CP_FORMATS = {"b8x16.b6x16_p32": 6, "b8x16.b4x16_p64": 4}


def cp_destination(shape: str, multicast: str | None = None) -> np.ndarray:
    """(rows, copies) TMEM lane offsets each source row lands in: one copy per row, two for .warpx2 (::02_13:
    rows 0-31 to lane quarters 0 and 2, rows 32-63 to quarters 1 and 3; ::01_23: rows 0-31 to quarters 0 and
    1, rows 32-63 to 2 and 3), four for .warpx4 (rows 0-31 to every quarter)."""
    form = _cp_form(shape, multicast)
    r = np.arange(form.lanes)[:, None]
    if multicast == "warpx4":
        return r + 32 * np.arange(4)[None, :]
    if multicast == "warpx2::02_13":
        return (r % 32) + 32 * ((r // 32) + np.array([0, 2])[None, :])
    if multicast == "warpx2::01_23":
        return (r % 32) + 32 * (2 * (r // 32) + np.array([0, 1])[None, :])
    return r


def _cp_source(smem, s_desc: int, rows: int, row_bytes: int) -> np.ndarray:
    desc = decode_smem_desc(s_desc, "sm100")
    _rule(desc.swizzle != "128B_base32B", "tcgen05.cp reads its source K-major: the 128B swizzle with 32B "
          "atomicity (an MN-major layout) does not describe it", SEC_CP)
    addr = descriptor_addresses(desc, "K", "e4m3", rows, row_bytes)
    if addr.max() >= np.asarray(smem).size:
        raise ValueError(f"the tcgen05.cp source descriptor reads up to byte {int(addr.max())}, past the "
                         f"{np.asarray(smem).size}-byte shared memory")
    return np.asarray(smem, np.uint8)[addr]


def _decompress(raw: np.ndarray, fmt: str | None) -> np.ndarray:
    """.b8x16.b6x16_p32 / .b8x16.b4x16_p64: each 16 source bytes (16 packed codes, then padding) become 16
    bytes of one code each (the code in the low bits)."""
    if fmt is None:
        return raw
    bits = CP_FORMATS[fmt]
    chunks = raw.reshape(raw.shape[0], -1, 16)
    data = chunks[..., :12] if bits == 6 else chunks[..., :8]
    codes = unpack_fp6(data) if bits == 6 else unpack_fp4(data)
    return codes.reshape(raw.shape)


def tcgen05_cp(smem, image, taddr: int, s_desc: int, shape: str, multicast: str | None = None,
               src_fmt: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Execute `tcgen05.cp.cta_group::1.{shape}{.multicast}{.src_fmt} [taddr], s_desc` on a TMEM image.

    Row r of the source (16 or 32 bytes, read through the SMEM descriptor as a K-major matrix) becomes the 4 or
    8 consecutive 32-bit columns from taddr's column at the lanes `cp_destination` gives (offset by taddr's
    lane), little-endian. Returns (lanes, columns) written."""
    _cp_form(shape, multicast, src_fmt)
    rows, row_bytes = CP_SHAPES[shape]
    dest = cp_destination(shape, multicast)
    lane0, col0 = decode_address(taddr)
    ncols = row_bytes // 4
    _rule(col0 + ncols <= COLUMNS, f"tcgen05.cp.{shape} writes columns {col0}..{col0 + ncols - 1}, past TMEM's "
          f"{COLUMNS}", SEC_CP)
    if shape == "4x256b":
        _rule(lane0 % 32 <= 28, f"tcgen05.cp.4x256b at lane {lane0}: its 4 lanes must lie in one lane quarter",
              SEC_CP)
    else:
        _rule(lane0 == 0, f"tcgen05.cp.{shape} spans the lane quarters: taddr's lane must be 0, got {lane0}", SEC_CP)
    raw = _decompress(_cp_source(smem, s_desc, rows, row_bytes), src_fmt)
    words = np.ascontiguousarray(raw).view("<u4").reshape(rows, ncols)
    lanes = lane0 + dest
    for c in range(dest.shape[1]):
        image[lanes[:, c], col0:col0 + ncols] = words
    return np.unique(lanes), np.arange(col0, col0 + ncols)


def place_tmem_scales(image, taddr: int, sf, sf_id: int = 0) -> None:
    """Write scale codes (MN x n, n = 1, 2 or 4 per row) where a block-scaled MMA reads them: row r at lane
    r % 32 of every lane quarter, column r // 32, bytes sf_id .. sf_id + n - 1 (what tcgen05.cp.32x128b.warpx4
    of CUTLASS's atoms leaves there)."""
    sf = np.asarray(sf, np.uint8)
    MN, n = sf.shape
    lane0, col0 = decode_address(taddr)
    r = np.arange(MN)
    for q in range(4):
        for j in range(n):
            word = image[lane0 + 32 * q + r % 32, col0 + r // 32]
            shift = np.uint32(8 * (sf_id + j))
            word = (word & ~(np.uint32(0xFF) << shift)) | (sf[:, j].astype(np.uint32) << shift)
            image[lane0 + 32 * q + r % 32, col0 + r // 32] = word


def read_tmem_scales(image, taddr: int, MN: int, n: int, sf_id: int, operand: str = "A") -> np.ndarray:
    """The MN x n scale codes a block-scaled MMA reads at taddr (see `place_tmem_scales`). Raises
    ScaleLayoutError when the four lane quarters do not hold the same scales (the ISA's duplication rule)."""
    lane0, col0 = decode_address(taddr)
    _rule(lane0 == 0, f"the scale_{operand} address must be at lane 0 (the scales are duplicated to every lane "
          f"quarter), got lane {lane0}", SEC_SF_TMEM)
    ncols = ceil_div(MN, 32)
    _rule(col0 + ncols <= COLUMNS, f"scale_{operand} of {MN} rows takes columns {col0}..{col0 + ncols - 1}, past "
          f"TMEM's {COLUMNS}", SEC_SF_TMEM)
    r = np.arange(MN)
    quarters = np.stack([image[32 * q + r % 32, col0 + r // 32] for q in range(4)])   # (4, MN) words
    sel = np.zeros(MN, np.uint32)
    for j in range(n):
        sel |= np.uint32(0xFF) << np.uint32(8 * (sf_id + j))
    diff = np.nonzero(((quarters & sel) != (quarters[0] & sel)).any(axis=0))[0]
    if diff.size:
        row = int(diff[0])
        qs = [int((quarters[q, row] & sel[row]) >> np.uint32(8 * sf_id)) for q in range(4)]
        raise ScaleLayoutError(
            f"scale_{operand} row {row}: lanes {', '.join(str(32 * q + row % 32) for q in range(4))} of column "
            f"{col0 + row // 32} hold different scales ({', '.join(f'{v:#x}' for v in qs)}); every lane quarter "
            f"needs the same copy (tcgen05.cp.32x128b.warpx4 writes all four)", SEC_SF_TMEM)
    w = quarters[0]
    return np.stack([(w >> np.uint32(8 * (sf_id + j))) & np.uint32(0xFF) for j in range(n)], axis=1).astype(np.uint8)


