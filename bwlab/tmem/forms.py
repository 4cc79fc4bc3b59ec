"""The forms of tcgen05.ld / tcgen05.st (shape, .num, pack) and which TMEM cell each thread's register
holds: PTX ISA "tcgen05.ld", "tcgen05.st" and "Matrix fragments for tcgen05.ld/st" (Data Movement
Shape); CuTe include/cute/atom/copy_traits_sm100.hpp (`SM100_TMEM_LOAD_*` traits) and
include/cute/arch/copy_sm100.hpp (PTX strings, register counts, the .16x32bx2 half-split offset).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hw.tmem import COLUMNS, TmemError
from .tables import LD_NUM_TABLE, LDST_PACK, LDST_SHAPES, MAX_REGS, require_ldst

__all__ = ["SHAPES", "NUMS", "REGS_PER_NUM", "MAX_REGS_PER_THREAD", "LANES_PER_SHAPE", "COLUMNS_PER_NUM",
           "SHAPE_CODE", "TmemAccess", "all_accesses", "ld_fragment_map", "instructions_per_warp", "legal_nums"]

# Derived from the ISA's tables (bwlab.tmem.tables): shape names, .num values, registers per thread
# for .x1, lanes per instruction, 32-bit columns per lane for .x1 (per half-warp for .16x32bx2).
SHAPES = tuple(LDST_SHAPES)
NUMS = tuple(LD_NUM_TABLE)
REGS_PER_NUM = {s: LD_NUM_TABLE[1][row.table_column] for s, row in LDST_SHAPES.items()}
MAX_REGS_PER_THREAD = MAX_REGS
LANES_PER_SHAPE = {s: row.lanes for s, row in LDST_SHAPES.items()}
COLUMNS_PER_NUM = {s: row.bits // 32 for s, row in LDST_SHAPES.items()}
# Shape codes shared with cuda_src/tmem_sm100.cu (template parameter kShape).
SHAPE_CODE = {s: i for i, s in enumerate(SHAPES)}


@dataclass(frozen=True)
class TmemAccess:
    """One form of tcgen05.ld / tcgen05.st: `.shape`, `.num` (x1..x128), `.pack::16b` (ld) /
    `.unpack::16b` (st), and for `.16x32bx2` the immediate half-split offset in columns.

    With pack16, each 32-bit register holds two 16-bit values from two adjacent columns (the low 16
    bits of each cell): the register count stays `num x REGS_PER_NUM`, the columns touched double.
    The half-split offset defaults to what CuTe passes (copy_sm100.hpp): the width of one half, i.e.
    num columns, or 2*num with pack16, so the two halves sit side by side.
    """

    shape: str
    num: int
    pack16: bool = False
    half_split_off: int | None = None

    def __post_init__(self):
        if self.shape == "16x32bx2" and self.half_split_off is None:
            off = self.num * (2 if self.pack16 else 1)       # CuTe's default: the halves side by side
        else:
            off = self.half_split_off
        for op in ("ld", "st"):   # the two instructions share Table 49
            require_ldst(op, self.shape, self.num, LDST_PACK[op] if self.pack16 else None, off)
        object.__setattr__(self, "pack16", bool(self.pack16))
        if self.shape == "16x32bx2":
            if int(off) != off or off < 0:
                raise TmemError(f"the .16x32bx2 half-split offset is a non-negative immediate number "
                                f"of columns, got {off!r}")
            object.__setattr__(self, "half_split_off", int(off))
            if self.width > COLUMNS:
                raise TmemError(f"half-split offset {off} puts the second half at columns {off}.."
                                f"{off + self.half_width - 1}, past TMEM's {COLUMNS} columns")

    # --- sizes -----------------------------------------------------------------------------
    @property
    def registers(self) -> int:
        """32-bit registers per thread."""
        return self.num * REGS_PER_NUM[self.shape]

    @property
    def lanes(self) -> int:
        """TMEM lanes one instruction touches (32 for .32x32b, 16 otherwise)."""
        return LANES_PER_SHAPE[self.shape]

    @property
    def half_width(self) -> int:
        """Columns per lane of one half-warp of .16x32bx2 (num, doubled by pack16)."""
        return self.num * (2 if self.pack16 else 1)

    @property
    def width(self) -> int:
        """Columns spanned, relative to the address's column (for .16x32bx2: up to the end of the
        second half)."""
        if self.shape == "16x32bx2":
            return max(self.half_width, self.half_split_off + self.half_width)
        return self.num * COLUMNS_PER_NUM[self.shape] * (2 if self.pack16 else 1)

    @property
    def bytes_per_warp(self) -> int:
        return 32 * self.registers * 4

    @property
    def halves_overlap(self) -> bool:
        return self.shape == "16x32bx2" and self.half_split_off < self.half_width

    # --- names -----------------------------------------------------------------------------
    def ptx(self, op: str = "ld") -> str:
        """The instruction, e.g. `tcgen05.ld.sync.aligned.16x64b.x8.pack::16b.b32`."""
        if op not in ("ld", "st"):
            raise ValueError(f"op must be 'ld' or 'st', got {op!r}")
        pack = ""
        if self.pack16:
            pack = ".pack::16b" if op == "ld" else ".unpack::16b"
        return f"tcgen05.{op}.sync.aligned.{self.shape}.x{self.num}{pack}.b32"

    def wrapper(self, op: str = "ld") -> str:
        """The bwlab wrapper's name in cuda_src/ptx (`tcgen05_ld_16x64b_x8_pack_16b`)."""
        self.ptx(op)
        suffix = ("_pack_16b" if op == "ld" else "_unpack_16b") if self.pack16 else ""
        name = f"tcgen05_{op}_{self.shape}_x{self.num}{suffix}"
        if self.shape == "16x32bx2":
            name += f"<{self.half_split_off}>"
        return name

    def label(self) -> str:
        s = f".{self.shape}.x{self.num}" + (".pack::16b" if self.pack16 else "")
        if self.shape == "16x32bx2":
            s += f", {self.half_split_off}"
        return s

    def map(self) -> np.ndarray:
        return ld_fragment_map(self.shape, self.num, self.pack16, self.half_split_off)


def all_accesses(pack16: bool | None = None) -> list[TmemAccess]:
    """Every valid (shape, num) with and without pack (or only one of them), default offsets."""
    packs = (False, True) if pack16 is None else (bool(pack16),)
    out = []
    for p in packs:
        for s in SHAPES:
            for n in LDST_SHAPES[s].nums:
                out.append(TmemAccess(s, n, p))
    return out


# ---------------------------------------------------------------------------------------------
# Thread maps
# ---------------------------------------------------------------------------------------------

def ld_fragment_map(shape: str, num: int, pack16: bool = False,
                    half_split_off: int | None = None) -> np.ndarray:
    """Which TMEM cell each thread's register holds, relative to the address the warp passes.

    Returns int32 (32, registers, 2): [t, j] = (lane, column) for thread t of the warp, register j.
    With pack16 it returns (32, registers, 2, 2): [t, j, h] = (lane, column) of the 16-bit half h
    of register j (h = 0: bits 15-0, h = 1: bits 31-16); each half is the low 16 bits of its cell.

    The rules, shape by shape (PTX ISA 9.7.16.2.3.1 figures; .num repeats the x1 pattern to the right):
      .32x32b   thread t reads lane t; register j is column j.
      .16x64b   a lane is 64 bits = 2 columns; thread t reads lane t/4 + 8*(t%2), column (t/2)%2,
                register j moves 2*j columns to the right.
      .16x128b  lane t/4 (registers with j%2 == 0) or t/4 + 8 (j%2 == 1), column t%4 + 4*(j/2).
      .16x256b  the mma.m16n8 accumulator fragment: lane t/4 + 8*((j/2)%2),
                column 2*(t%4) + j%2 + 8*(j/4).
      .16x32bx2 two half-warps over the same 16 lanes: thread t reads lane t%16, column j, and
                threads 16..31 start `half_split_off` columns further right.
    pack16 turns every 32-bit column c of these rules into the two cells 2c (bits 15-0) and
    2c+1 (bits 31-16); the .16x32bx2 offset is then counted in physical columns.
    """
    acc = TmemAccess(shape, num, pack16, half_split_off)
    t = np.arange(32)[:, None]
    j = np.arange(acc.registers)[None, :]
    if shape == "32x32b":
        lane, col = t + 0 * j, j + 0 * t
    elif shape == "16x64b":
        lane = t // 4 + 8 * (t % 2) + 0 * j
        col = (t // 2) % 2 + 2 * j
    elif shape == "16x128b":
        lane = t // 4 + 8 * (j % 2)
        col = t % 4 + 4 * (j // 2)
    elif shape == "16x256b":
        lane = t // 4 + 8 * ((j // 2) % 2)
        col = 2 * (t % 4) + j % 2 + 8 * (j // 4)
    else:  # 16x32bx2
        lane = t % 16 + 0 * j
        col = j + 0 * t
    if not acc.pack16:
        if shape == "16x32bx2":
            col = col + (t // 16) * acc.half_split_off
        return np.stack([lane, col], axis=-1).astype(np.int32)
    h = np.arange(2)[None, None, :]
    lane2 = lane[:, :, None] + 0 * h
    col2 = 2 * col[:, :, None] + h
    if shape == "16x32bx2":
        col2 = col2 + (t[:, :, None] // 16) * acc.half_split_off
    return np.stack([lane2, col2], axis=-1).astype(np.int32)


def instructions_per_warp(access: TmemAccess) -> int:
    """A warp covers its 32 lanes with one .32x32b instruction or two of a 16-lane shape."""
    return 32 // access.lanes


def legal_nums(shape: str, pack16: bool = False) -> list[int]:
    """The .num values the ISA allows for `shape` (at most 128 registers per thread)."""
    ok = []
    for n in NUMS:
        try:
            TmemAccess(shape, n, pack16)
            ok.append(n)
        except TmemError:
            pass
    return ok
