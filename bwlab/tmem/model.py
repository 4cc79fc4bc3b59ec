"""The NumPy model of tcgen05.ld / tcgen05.st on a TMEM image, and of the round trips that
cuda_src/tmem_sm100.cu runs (PTX ISA "tcgen05.ld", "tcgen05.st", "Tensor Memory access restrictions").
NumPy and `bwlab.hw` only.
"""
from __future__ import annotations

import numpy as np

from ..hw.tmem import COLUMNS, LANES, TmemError, require_image, decode_address, encode_address, warp_lane_range
from .forms import TmemAccess, instructions_per_warp
from .tables import require_lanes

__all__ = ["tcgen05_ld", "tcgen05_st", "pattern_image", "register_pattern", "require_roundtrip",
           "ld_roundtrip_model", "st_roundtrip_model", "roundtrip_taddr", "st_cells_mask",
           "defined_st_bits", "compare_st_images"]


def _cells(taddr: int, access: TmemAccess, warp: int, op: str):
    """Absolute (lane, column) of every register (half) after checking the warp's lane quarter."""
    lane0, col0 = decode_address(taddr)
    warp_lane_range(warp)
    require_lanes(op, warp, lane0, access.lanes, access.label())
    if col0 + access.width > COLUMNS:
        raise TmemError(f"tcgen05.{op}{access.label()} at column {col0} spans {access.width} columns "
                        f"and would run past column {COLUMNS - 1}")
    m = access.map()
    return lane0 + m[..., 0], col0 + m[..., 1]


def _as_access(shape_or_access, num=None, pack16=False, half_split_off=None) -> TmemAccess:
    if isinstance(shape_or_access, TmemAccess):
        return shape_or_access
    return TmemAccess(shape_or_access, num, pack16, half_split_off)


def tcgen05_ld(image: np.ndarray, taddr: int, access, num: int | None = None, *, warp: int,
               pack16: bool = False, half_split_off: int | None = None) -> np.ndarray:
    """Model of `tcgen05.ld.sync.aligned.<shape>.<num>[.pack::16b].b32` issued by warp `warp`.

    `access` is a TmemAccess or a shape name (then give num, pack16, half_split_off).
    Returns the registers of the 32 threads: uint32 (32, registers).
    """
    acc = _as_access(access, num, pack16, half_split_off)
    image = require_image(image)
    lanes, cols = _cells(taddr, acc, warp, "ld")
    if not acc.pack16:
        return image[lanes, cols].copy()
    lo = image[lanes[..., 0], cols[..., 0]] & np.uint32(0xFFFF)
    hi = image[lanes[..., 1], cols[..., 1]] & np.uint32(0xFFFF)
    return (lo | (hi << np.uint32(16))).astype(np.uint32)


def tcgen05_st(image: np.ndarray, taddr: int, regs, access, num: int | None = None, *, warp: int,
               unpack16: bool = False, half_split_off: int | None = None) -> np.ndarray:
    """Model of `tcgen05.st.sync.aligned.<shape>.<num>[.unpack::16b].b32`: writes `image` in place
    (and returns it). `regs` is (32, registers) uint32, one row per thread of the warp.

    With unpack16 each register's two 16-bit halves go to the low 16 bits of two adjacent cells; the
    ISA does not say what the upper 16 bits of those cells become, and the model sets them to zero
    (the sm100 test compares only the low halves).
    """
    acc = _as_access(access, num, unpack16, half_split_off)
    image = require_image(image)
    regs = np.asarray(regs)
    if regs.shape != (32, acc.registers):
        raise TmemError(f"tcgen05.st{acc.label()} takes {acc.registers} registers from each of 32 "
                        f"threads: shape (32, {acc.registers}); got {regs.shape}")
    regs = regs.astype(np.uint32)
    if acc.halves_overlap:
        raise TmemError(f"half-split offset {acc.half_split_off} < {acc.half_width} columns: the two "
                        "half-warps of this .16x32bx2 store would write the same cells (the model "
                        "refuses a store whose result depends on which write lands last)")
    lanes, cols = _cells(taddr, acc, warp, "st")
    if not acc.pack16:
        image[lanes, cols] = regs
    else:
        image[lanes[..., 0], cols[..., 0]] = regs & np.uint32(0xFFFF)
        image[lanes[..., 1], cols[..., 1]] = regs >> np.uint32(16)
    return image


def pattern_image(seed: int = 0) -> np.ndarray:
    """A (128, 512) image whose every cell differs, in its low 16 bits too (so pack::16b loads
    still tell lanes and columns apart)."""
    idx = np.arange(LANES * COLUMNS, dtype=np.uint64).reshape(LANES, COLUMNS)
    mixed = (idx + np.uint64(seed) * np.uint64(0x10001)) * np.uint64(0x9E3779B1)
    return (mixed % np.uint64(1 << 32)).astype(np.uint32)


def register_pattern(access: TmemAccess, seed: int = 1) -> np.ndarray:
    """Registers for the store round trip: (4 warps, instructions per warp, 32 threads, registers)."""
    rng = np.random.default_rng(seed)
    shape = (4, instructions_per_warp(access), 32, access.registers)
    return rng.integers(0, 1 << 32, size=shape, dtype=np.uint32)


def roundtrip_taddr(access: TmemAccess, warp: int, half: int, col0: int) -> int:
    return encode_address(32 * warp + access.lanes * half, col0)


def require_roundtrip(access: TmemAccess, image, col0: int, regs=None, op: str = "ld"):
    if not isinstance(access, TmemAccess):
        raise TmemError(f"access must be a TmemAccess, got {type(access).__name__}")
    require_image(image)
    if not 0 <= int(col0) <= COLUMNS - access.width:
        raise TmemError(f"{access.label()} spans {access.width} columns: the start column must be in "
                        f"[0, {COLUMNS - access.width}], got {col0}")
    if op == "st":
        if access.halves_overlap:
            raise TmemError(f"{access.label()}: the two halves of a .16x32bx2 store overlap")
        want = (4, instructions_per_warp(access), 32, access.registers)
        if regs is None or np.shape(regs) != want:
            raise TmemError(f"registers for {access.label()} have shape {want} "
                            f"(warp, instruction, thread, register); got {np.shape(regs)}")


def ld_roundtrip_model(access: TmemAccess, image: np.ndarray, col0: int = 0) -> np.ndarray:
    """What tmem_ld_roundtrip returns: every warp of a warpgroup loads its quarter at `col0`.
    Shape (4, instructions per warp, 32, registers)."""
    require_roundtrip(access, image, col0)
    halves = instructions_per_warp(access)
    out = np.zeros((4, halves, 32, access.registers), dtype=np.uint32)
    for w in range(4):
        for h in range(halves):
            out[w, h] = tcgen05_ld(image, roundtrip_taddr(access, w, h, col0), access, warp=w)
    return out


def st_roundtrip_model(access: TmemAccess, image: np.ndarray, regs: np.ndarray,
                       col0: int = 0) -> np.ndarray:
    """What tmem_st_roundtrip returns: the TMEM image after every warp stored its registers."""
    require_roundtrip(access, image, col0, regs, "st")
    out = image.copy()
    for w in range(4):
        for h in range(instructions_per_warp(access)):
            tcgen05_st(out, roundtrip_taddr(access, w, h, col0), regs[w, h], access, warp=w)
    return out


def st_cells_mask(access: TmemAccess, col0: int = 0) -> np.ndarray:
    """bool (128, 512): the cells the warpgroup's stores write."""
    mask = np.zeros((LANES, COLUMNS), dtype=bool)
    m = access.map().reshape(-1, 2)
    for w in range(4):
        for h in range(instructions_per_warp(access)):
            lane0, c0 = decode_address(roundtrip_taddr(access, w, h, col0))
            mask[lane0 + m[:, 0], c0 + m[:, 1]] = True
    return mask


def defined_st_bits(access: TmemAccess, image: np.ndarray, col0: int = 0) -> np.ndarray:
    """`image` with only the bits the ISA defines after the round-trip stores: for unpack::16b the
    upper 16 bits of every written cell are not defined, so they read as 0 here; every other bit is
    kept."""
    if not access.pack16:
        return image
    written = st_cells_mask(access, col0)
    return np.where(written, image & np.uint32(0xFFFF), image).astype(np.uint32)


def compare_st_images(access: TmemAccess, model: np.ndarray, gpu: np.ndarray, col0: int = 0) -> int:
    """Number of mismatching cells. For unpack::16b only the low 16 bits of written cells count
    (the ISA does not define the upper halves); everything else must be identical."""
    return int((defined_st_bits(access, model, col0) != defined_st_bits(access, gpu, col0)).sum())
