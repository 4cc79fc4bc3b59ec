"""The D tile in shared memory and the st.shared.v4 stores that fill it.

`SmemTile` is where every element of a rows x cols D tile sits in SMEM (the TMA store's source,
swizzle included: PTX ISA 5.5.7 "Tensor swizzling modes"; CuTe include/cute/swizzle.hpp);
`RegisterStorePlan` is which lane writes which 16 bytes at each `st.shared.v4` after a
`tcgen05.ld .32x32b`, and what the shared-memory banks make of it (`bwlab.hw.banks`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..hw.banks import WARP, BankReport, wavefronts
from ..hw.swizzle import row_bytes, swizzle_of
from .rules import d_dtype, raw_dtype

__all__ = ["SmemTile", "MAPPINGS", "RegisterStorePlan", "bank_patterns", "chunk_path"]


@dataclass(frozen=True)
class SmemTile:
    """A rows x cols D tile (row-major: N contiguous) as the TMA store will read it from SMEM.

    With a swizzle, a TMA box may be at most one swizzle row wide (32/64/128 bytes of its inner
    dimension: cuTensorMapEncodeTiled's rule), so the tile is kept as `n_boxes` column blocks of
    `box_cols` columns, one after the other in SMEM, each a (rows x box_row_bytes) box that one TMA
    store writes out; CUTLASS lays out its swizzled epilogue tiles the same way. Without a swizzle a
    box can span the whole row (`box_cols` defaults to `cols`, at most 256 elements).

    `base` is the SMEM byte address of the tile. The swizzle is a function of the address (see
    REFERENCE.md), so a base that is not aligned to the swizzle span shifts the pattern, exactly as
    the TMA engine would; the TMA engine itself needs a 128-byte aligned SMEM box.
    """

    rows: int
    cols: int
    dtype: str = "float32"
    swizzle: str = "none"
    base: int = 0
    box_cols: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "dtype", d_dtype(self.dtype).numpy_name)
        eb = self.elem_bytes
        swizzle_of(self.swizzle)
        if not 1 <= self.rows <= 256:
            raise ValueError(f"rows must be in [1, 256] (a TMA box dimension is at most 256 "
                             f"elements), got {self.rows}")
        if self.cols < 1 or (self.cols * eb) % 16:
            raise ValueError(f"a row must be a positive multiple of 16 bytes (st.shared.v4 and the TMA "
                             f"box both move 16-byte units): {self.cols} x {eb} B = {self.cols * eb} B")
        if self.base < 0 or self.base % 128:
            raise ValueError(f"base must be a non-negative multiple of 128 (the TMA engine's SMEM "
                             f"alignment), got {self.base}")
        if self.swizzle != "none":
            width = row_bytes(self.swizzle)  # bytes of one swizzle row: 32, 64, 128
            want = width // eb
            if self.box_cols not in (None, want):
                raise ValueError(f"with swizzle {self.swizzle} a TMA box row is exactly {width} bytes "
                                 f"= {want} {self.dtype} columns here; got box_cols={self.box_cols}")
            if self.cols % want:
                raise ValueError(f"cols ({self.cols}) must be a multiple of {want}: a {self.swizzle} "
                                 f"swizzled box is {width} bytes = {want} {self.dtype} wide")
            object.__setattr__(self, "box_cols", want)
        else:
            bc = self.cols if self.box_cols is None else int(self.box_cols)
            if bc < 1 or self.cols % bc or (bc * eb) % 16 or bc > 256:
                raise ValueError(f"box_cols must divide cols ({self.cols}), be a multiple of 16 bytes "
                                 f"and at most 256 elements; got {bc}")
            object.__setattr__(self, "box_cols", bc)
        if self.n_boxes > 1 and self.box_bytes % 128:
            raise ValueError(f"every box's SMEM address must be 128-byte aligned (TMA): a box of "
                             f"{self.rows} rows x {self.box_row_bytes} B = {self.box_bytes} B is not a "
                             f"multiple of 128, so the next box would start misaligned")

    # -- geometry ------------------------------------------------------------------------------
    @property
    def elem_bytes(self) -> int:
        return d_dtype(self.dtype).bytes

    @property
    def box_row_bytes(self) -> int:
        return self.box_cols * self.elem_bytes

    @property
    def box_bytes(self) -> int:
        return self.rows * self.box_row_bytes

    @property
    def n_boxes(self) -> int:
        return self.cols // self.box_cols

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.elem_bytes

    def box_address(self, b: int) -> int:
        """SMEM address of column block `b` (what the TMA store of that box is given)."""
        if not 0 <= b < self.n_boxes:
            raise ValueError(f"box index must be in [0, {self.n_boxes}), got {b}")
        return self.base + b * self.box_bytes

    def logical_address(self, row, col):
        """The SMEM byte address of element (row, col) before the swizzle is applied."""
        row = np.asarray(row, dtype=np.int64)
        col = np.asarray(col, dtype=np.int64)
        if np.any((row < 0) | (row >= self.rows)) or np.any((col < 0) | (col >= self.cols)):
            raise ValueError(f"(row, col) outside the {self.rows} x {self.cols} tile")
        b, c = np.divmod(col, self.box_cols)
        return self.base + b * self.box_bytes + row * self.box_row_bytes + c * self.elem_bytes

    def address(self, row, col):
        """The SMEM byte address where element (row, col) lives (swizzle applied)."""
        return swizzle_of(self.swizzle)(self.logical_address(row, col))

    def chunk_of_address(self, addr) -> tuple:
        """Inverse for 16-byte chunks: which (row, first column) the 16 bytes at `addr` hold."""
        addr = np.asarray(addr, dtype=np.int64)
        logical = swizzle_of(self.swizzle)(addr)  # a swizzle is an involution
        off = logical - self.base
        b, rest = np.divmod(off, self.box_bytes)
        row, inner = np.divmod(rest, self.box_row_bytes)
        return row, b * self.box_cols + inner // self.elem_bytes

    def pack(self, d_bits: np.ndarray) -> np.ndarray:
        """The SMEM bytes [base, base + nbytes) holding the rows x cols array of raw element bits."""
        d_bits = np.ascontiguousarray(d_bits).astype(raw_dtype(self.dtype), copy=False)
        if d_bits.shape != (self.rows, self.cols):
            raise ValueError(f"expected a {self.rows} x {self.cols} array, got {d_bits.shape}")
        r, c = np.meshgrid(np.arange(self.rows), np.arange(self.cols), indexing="ij")
        out = np.zeros(self.nbytes, dtype=np.uint8)
        src = d_bits.view(np.uint8).reshape(self.rows, self.cols, self.elem_bytes)
        addr = self.address(r, c) - self.base
        for k in range(self.elem_bytes):
            out[addr + k] = src[..., k]
        return out

    def unpack(self, smem: np.ndarray) -> np.ndarray:
        """Inverse of `pack`: SMEM bytes -> rows x cols raw element bits."""
        smem = np.asarray(smem, dtype=np.uint8)
        if smem.size != self.nbytes:
            raise ValueError(f"expected {self.nbytes} SMEM bytes, got {smem.size}")
        r, c = np.meshgrid(np.arange(self.rows), np.arange(self.cols), indexing="ij")
        addr = self.address(r, c) - self.base
        out = np.zeros((self.rows, self.cols, self.elem_bytes), dtype=np.uint8)
        for k in range(self.elem_bytes):
            out[..., k] = smem[addr + k]
        return out.view(raw_dtype(self.dtype)).reshape(self.rows, self.cols)




# ------------------------------------------------------------------------------------------------
# Registers -> SMEM: which thread writes which 16 bytes
# ------------------------------------------------------------------------------------------------
MAPPINGS = {
    "row_per_thread": "tcgen05.ld .32x32b: thread t of warp w holds row 32*(w%4)+t; step k writes "
                      "bytes [16k, 16k+16) of that row (16/elem_bytes consecutive columns)",
    "chunk_per_thread": "the coalesced alternative: consecutive threads write consecutive 16-byte "
                        "chunks of one row (needs the data re-distributed across the warp first, "
                        "e.g. with shuffles or stmatrix)",
}


@dataclass(frozen=True)
class RegisterStorePlan:
    """Every st.shared.v4 that one warp issues to write its part of `tile`.

    `addresses[k, lane]` is the SMEM byte address lane `lane` writes at step k (-1: idle);
    `rows[k, lane]` and `cols[k, lane]` say which row and first column those 16 bytes hold.
    """

    tile: SmemTile
    mapping: str = "row_per_thread"
    warp: int = 0
    addresses: np.ndarray = field(init=False, repr=False)
    rows: np.ndarray = field(init=False, repr=False)
    cols: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        if self.mapping not in MAPPINGS:
            raise ValueError(f"mapping must be one of {list(MAPPINGS)}, got {self.mapping!r}")
        t = self.tile
        vec = 16 // t.elem_bytes  # columns per st.shared.v4
        chunks_per_row = t.cols // vec
        if not 0 <= self.warp < 4:
            raise ValueError(f"tcgen05.ld .32x32b: warp w reads TMEM lanes 32*(w%4)..+31, so warp "
                             f"must be in [0, 4), got {self.warp}")
        if t.rows < 32 * (self.warp + 1):
            raise ValueError(f"warp {self.warp} owns rows {32 * self.warp}..{32 * self.warp + 31} "
                             f"but the tile has {t.rows} rows")
        lanes = np.arange(WARP)
        if self.mapping == "row_per_thread":
            rows = np.broadcast_to(32 * self.warp + lanes, (chunks_per_row, WARP)).copy()
            cols = np.broadcast_to((np.arange(chunks_per_row) * vec)[:, None],
                                   (chunks_per_row, WARP)).copy()
        else:
            # The same 32 rows, enumerated chunk by chunk along each row: lane = index mod 32.
            idx = np.arange(32 * chunks_per_row).reshape(chunks_per_row, WARP)
            r, ch = np.divmod(idx, chunks_per_row)
            rows, cols = 32 * self.warp + r, ch * vec
        addresses = np.where(rows >= 0, t.address(np.maximum(rows, 0), np.maximum(cols, 0)), -1)
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "cols", cols)
        object.__setattr__(self, "addresses", addresses)

    @property
    def steps(self) -> int:
        return self.addresses.shape[0]

    def report(self, step: int) -> BankReport:
        return wavefronts(self.addresses[step], 16)

    def total_wavefronts(self) -> int:
        return sum(self.report(k).wavefronts for k in range(self.steps))

    def ideal_wavefronts(self) -> int:
        return sum(self.report(k).ideal for k in range(self.steps))

    def writer_map(self) -> np.ndarray:
        """(rows, cols // vec) array: which lane of this warp writes each 16-byte chunk (-1: none)."""
        vec = 16 // self.tile.elem_bytes
        out = -np.ones((self.tile.rows, self.tile.cols // vec), dtype=np.int64)
        for k in range(self.steps):
            for lane in range(WARP):
                if self.rows[k, lane] >= 0:
                    out[self.rows[k, lane], self.cols[k, lane] // vec] = lane
        return out

    def summary(self) -> str:
        return (f"{self.mapping}, {self.tile.dtype} {self.tile.rows}x{self.tile.cols}, swizzle "
                f"{self.tile.swizzle}, warp {self.warp}: {self.steps} x st.shared.v4, "
                f"{self.total_wavefronts()} wavefronts (conflict-free: {self.ideal_wavefronts()})")




def bank_patterns():
    """Named st.shared.v4 lane-address patterns (one warp, offsets from a 1024-aligned base) with
    the model's wavefront count: what notebook 05 and the benchmark compare."""
    pats = {}
    for name, tile, mapping in (
            ("row_per_thread, fp32 32 cols, no swizzle", SmemTile(32, 32, "float32", "none"), "row_per_thread"),
            ("row_per_thread, fp32 32 cols, 128B swizzle", SmemTile(32, 32, "float32", "128B"), "row_per_thread"),
            ("row_per_thread, bf16 64 cols, 64B swizzle", SmemTile(32, 64, "bfloat16", "64B"), "row_per_thread"),
            ("chunk_per_thread, fp32 32 cols, no swizzle", SmemTile(32, 32, "float32", "none"), "chunk_per_thread")):
        plan = RegisterStorePlan(tile, mapping, 0)
        pats[name] = plan.addresses[0]
    for stride in (16, 32, 64, 128):
        pats[f"lane stride {stride} B"] = np.arange(32) * stride
    return {k: (v, wavefronts(v).wavefronts) for k, v in pats.items()}




def chunk_path(tile: SmemTile, rows: int = 8) -> tuple:
    """Follow the 16-byte chunks of a one-box D tile through the epilogue: every element tagged
    row * chunks + chunk, packed into SMEM by `SmemTile.pack` (the swizzle) and stored to GMEM by
    `tma_store_model` through the tensor map's swizzle. Returns the tags of the first `rows` rows
    as (registers: thread t's row t, SMEM: one 128-byte line per row of 16-byte slots, GMEM)."""
    from ..tma.tensor_map import TensorMap
    from .store import tma_store_model
    if tile.n_boxes != 1 or tile.box_row_bytes != 128:
        raise ValueError("chunk_path follows a tile of one TMA box with 128-byte rows (cols x elem_bytes "
                         f"= 128); this one has {tile.n_boxes} box(es) of {tile.box_row_bytes}-byte rows")
    if not 1 <= int(rows) <= tile.rows:
        raise ValueError(f"rows must be in [1, {tile.rows}], got {rows}")
    per, rows = 16 // tile.elem_bytes, int(rows)
    tag = (np.arange(tile.rows)[:, None] * 8 + np.arange(tile.cols)[None, :] // per).astype(raw_dtype(tile.dtype))
    smem = tile.pack(tag)
    tmap = TensorMap(tile.dtype, (tile.cols, tile.rows), (tile.cols, tile.rows), swizzle=tile.swizzle)
    gmem = tma_store_model(np.zeros_like(tag), tmap, (0, 0), smem, smem_address=tile.base)
    lines = smem.view(tag.dtype)[: rows * tile.cols].reshape(rows, 8, per)[..., 0]
    return tag[:rows, ::per], lines, gmem[:rows, ::per]
