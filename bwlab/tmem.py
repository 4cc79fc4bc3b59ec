"""Stage 4 — Tensor Memory (TMEM): allocation, addresses, and tcgen05.ld / tcgen05.st as thread maps.

TMEM is a per-SM memory of 128 lanes x 512 columns of 32-bit cells that exists only on sm_100. The
tensor core writes its accumulator there (stage 3); the epilogue warps read it into registers with
`tcgen05.ld` (this stage) before the TMA store (stage 5).

What this module mirrors:
* PTX ISA 9.7.16 "TensorCore 5th Generation Family Instructions": Tensor Memory and its addresses
  (lane in bits 31-16, column in bits 15-0), tcgen05.alloc / dealloc / relinquish_alloc_permit,
  9.7.16.2.3 "Data Movement Shape" with its "Matrix fragments for shape ..." figures, tcgen05.ld /
  tcgen05.st / tcgen05.wait.
* CuTe include/cute/atom/copy_traits_sm100.hpp (the `SM100_TMEM_LOAD_16dp256b1x`... traits: which thread
  holds which (datapath lane, bit) element), include/cute/arch/copy_sm100.hpp (the PTX strings, register
  counts, and the half-split offset CuTe passes to .16x32bx2) and include/cute/arch/tmem_allocator_sm100.hpp
  (the allocator's preconditions).

The TMEM image shared with the UMMA stage is a NumPy uint32 array of shape (128, 512): [lane, column],
raw 32-bit words.

What is here:
1. `TmemAccess` (shape, num, pack) validated on construction, and `ld_fragment_map`: for thread t and
   register j, the (lane, column) it reads, relative to the TMEM address the warp passes.
2. The model: `tcgen05_ld` / `tcgen05_st` on an image, `TensorMemory` (an image plus an allocator that
   follows the ISA's rules and raises `TmemError` naming the rule that was broken).
3. Round trips: `model_ld_roundtrip` / `model_st_roundtrip` and the GPU runners `gpu_ld_roundtrip` /
   `gpu_st_roundtrip` for `cuda_src/tmem_sm100.cu` (sm_100 only; `python -m bwlab.tmem validate`).
4. The epilogue's view: `epilogue_loads`, `accumulator_owners` (who holds D[m][n]), `read_accumulator`.
5. Pictures (`draw_*`, `ld_widget`) and the generator of cuda_src/ptx/tcgen05_ldst.cuh.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from .runtime import Report

__all__ = [
    "LANES", "COLUMNS", "SHAPES", "NUMS", "REGS_PER_NUM", "MAX_REGS_PER_THREAD", "TmemError",
    "TmemAccess", "all_accesses", "encode_address", "decode_address", "format_address",
    "warp_lane_range", "ld_fragment_map", "new_image", "tcgen05_ld", "tcgen05_st",
    "Allocation", "TensorMemory",
    "kernel_name", "all_kernel_names", "compile_kernels", "instructions_per_warp", "pattern_image",
    "register_pattern", "model_ld_roundtrip", "model_st_roundtrip", "st_cells_mask",
    "compare_st_images", "gpu_ld_roundtrip", "gpu_st_roundtrip", "validate_main",
    "accumulator_layout", "example_accumulator", "LoadStep", "epilogue_loads", "accumulator_owners",
    "read_accumulator", "draw_tmem", "draw_warp_quarters", "draw_ld_map", "draw_gallery",
    "draw_accumulator_owners", "ld_widget", "ldst_header_text",
]

LANES = 128      # TMEM lanes (rows) per SM
COLUMNS = 512    # TMEM columns per SM, 32 bits each
SHAPES = ("32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2")
NUMS = (1, 2, 4, 8, 16, 32, 64, 128)
# Registers per thread for .num = x1 (PTX ISA, tcgen05.ld/st "Table 49"; CuTe DRegisters).
REGS_PER_NUM = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4, "16x32bx2": 1}
# A vector operand holds at most 128 registers: ptxas rejects 16x128b.x128 / 16x256b.x64
# with "Illegal vector size: 256".
MAX_REGS_PER_THREAD = 128
# TMEM lanes a warp touches in one instruction.
LANES_PER_SHAPE = {"32x32b": 32, "16x64b": 16, "16x128b": 16, "16x256b": 16, "16x32bx2": 16}
# 32-bit columns per lane for .x1 (the "b" of the shape / 32); .16x32bx2 per half-warp.
COLUMNS_PER_NUM = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8, "16x32bx2": 1}
# Shape codes shared with cuda_src/tmem_sm100.cu (template parameter kShape).
SHAPE_CODE = {s: i for i, s in enumerate(SHAPES)}


class TmemError(ValueError):
    """A TMEM rule was broken (allocation, address, warp/lane access, or an invalid ld/st form).
    The message names the rule and the limit."""


# ---------------------------------------------------------------------------------------------
# Addresses
# ---------------------------------------------------------------------------------------------

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


# ---------------------------------------------------------------------------------------------
# Access forms: shape, num, pack
# ---------------------------------------------------------------------------------------------

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
        if self.shape not in SHAPES:
            raise TmemError(f"tcgen05.ld/st shape must be one of {', '.join(SHAPES)}; got {self.shape!r}"
                            " (there is no .32x1x32b: the 32-lane shape is .32x32b)")
        if self.num not in NUMS:
            raise TmemError(f".num must be one of x{', x'.join(map(str, NUMS))}; got x{self.num}")
        regs = self.num * REGS_PER_NUM[self.shape]
        if regs > MAX_REGS_PER_THREAD:
            top = MAX_REGS_PER_THREAD // REGS_PER_NUM[self.shape]
            raise TmemError(f".{self.shape}.x{self.num} would need {regs} registers per thread; an "
                            f"instruction moves at most {MAX_REGS_PER_THREAD}, so .{self.shape} "
                            f"stops at .x{top}")
        object.__setattr__(self, "pack16", bool(self.pack16))
        if self.shape == "16x32bx2":
            off = self.half_width if self.half_split_off is None else self.half_split_off
            if int(off) != off or off < 0:
                raise TmemError(f"the .16x32bx2 half-split offset is a non-negative immediate number "
                                f"of columns, got {off!r}")
            object.__setattr__(self, "half_split_off", int(off))
            if self.width > COLUMNS:
                raise TmemError(f"half-split offset {off} puts the second half at columns {off}.."
                                f"{off + self.half_width - 1}, past TMEM's {COLUMNS} columns")
        elif self.half_split_off is not None:
            raise TmemError(f"only .16x32bx2 takes a half-split offset; .{self.shape} does not")

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
            for n in NUMS:
                if n * REGS_PER_NUM[s] <= MAX_REGS_PER_THREAD:
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


# ---------------------------------------------------------------------------------------------
# tcgen05.ld / tcgen05.st on a TMEM image
# ---------------------------------------------------------------------------------------------

def new_image(fill: int = 0) -> np.ndarray:
    """A (128, 512) uint32 TMEM image: [lane, column], raw 32-bit words."""
    return np.full((LANES, COLUMNS), fill, dtype=np.uint32)


def _check_image(image) -> np.ndarray:
    if not isinstance(image, np.ndarray) or image.shape != (LANES, COLUMNS) or image.dtype != np.uint32:
        raise TmemError(f"a TMEM image is a uint32 array of shape ({LANES}, {COLUMNS}); got "
                        f"{type(image).__name__} {getattr(image, 'shape', '')} {getattr(image, 'dtype', '')}")
    return image


def _cells(taddr: int, access: TmemAccess, warp: int, op: str):
    """Absolute (lane, column) of every register (half) after checking the warp's lane quarter."""
    lane0, col0 = decode_address(taddr)
    lo, hi = warp_lane_range(warp)
    if not (lo <= lane0 and lane0 + access.lanes <= hi):
        raise TmemError(
            f"warp {warp} may access TMEM lanes {lo}..{hi - 1} only (lanes 32*(warp % 4) .. +31); "
            f"tcgen05.{op}{access.label()} at lane {lane0} would touch lanes {lane0}.."
            f"{lane0 + access.lanes - 1}")
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
    image = _check_image(image)
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
    image = _check_image(image)
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


# ---------------------------------------------------------------------------------------------
# Allocation
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Allocation:
    cta: int
    warp: int
    column: int
    ncols: int

    @property
    def taddr(self) -> int:
        return encode_address(0, self.column)


@dataclass
class _CtaState:
    alloc_warp: int | None = None
    relinquished: bool = False


@dataclass
class TensorMemory:
    """One SM's TMEM: the (128, 512) image, and an allocator shared by the CTAs resident on the SM.

    Rules (PTX ISA tcgen05.alloc / tcgen05.dealloc / tcgen05.relinquish_alloc_permit, and the
    preconditions of CuTe's TMEM::Allocator1Sm):
    * `tcgen05.alloc` is issued by one whole warp; the column count is a power of two in [32, 512];
      the address (lane 0, first column) is written to shared memory, not returned in a register.
    * A CTA allocates from one warp: repeated allocations come from the same warp.
    * The same warp deallocates, giving back exactly what it allocated.
    * After `tcgen05.relinquish_alloc_permit` the CTA may not allocate again.
    * Everything allocated must be deallocated before the CTA exits.
    * CTAs on the same SM share the 512 columns. On hardware an allocation that does not fit
      blocks until another CTA deallocates; the model cannot wait, so it raises.
    Where an allocation lands is not specified by the ISA; the model takes the lowest free range
    aligned to the allocation's size (kernels must use the address written to SMEM, never assume).
    """

    image: np.ndarray = field(default_factory=new_image)
    allocations: list = field(default_factory=list)
    _ctas: dict = field(default_factory=dict)

    # --- allocator -------------------------------------------------------------------------
    def _cta(self, cta: int) -> _CtaState:
        return self._ctas.setdefault(int(cta), _CtaState())

    def owner_map(self) -> np.ndarray:
        """int array (512,): the CTA owning each column, -1 where free."""
        owner = np.full(COLUMNS, -1, dtype=np.int64)
        for a in self.allocations:
            owner[a.column:a.column + a.ncols] = a.cta
        return owner

    @property
    def free_columns(self) -> int:
        return COLUMNS - sum(a.ncols for a in self.allocations)

    def alloc(self, cta: int, warp: int, ncols: int, smem: np.ndarray | None = None,
              smem_offset: int = 0) -> int:
        """tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [smem + offset], ncols.

        Returns the TMEM address and, when `smem` (a uint8 array standing for the CTA's shared
        memory) is given, writes it there little-endian, as the instruction does.
        """
        warp_lane_range(warp)
        ncols = int(ncols)
        if ncols < 32 or ncols > COLUMNS or ncols & (ncols - 1):
            raise TmemError(f"tcgen05.alloc: the column count must be a power of two in [32, {COLUMNS}]"
                            f", got {ncols}")
        st = self._cta(cta)
        if st.relinquished:
            raise TmemError(f"tcgen05.alloc after tcgen05.relinquish_alloc_permit: CTA {cta} gave up "
                            "its right to allocate TMEM")
        if st.alloc_warp is not None and st.alloc_warp != warp:
            raise TmemError(f"tcgen05.alloc from warp {warp}, but CTA {cta} allocates from warp "
                            f"{st.alloc_warp}: one warp allocates (and deallocates) for the CTA")
        if smem is not None:
            if (not isinstance(smem, np.ndarray) or smem.dtype != np.uint8 or smem.ndim != 1):
                raise TmemError("smem must be a 1-D uint8 array standing for shared memory")
            if smem_offset % 4 or not 0 <= smem_offset <= smem.size - 4:
                raise TmemError(f"the SMEM destination of tcgen05.alloc is a 4-byte aligned b32 slot "
                                f"inside shared memory ({smem.size} B); got offset {smem_offset}")
        owner = self.owner_map()
        start = next((c for c in range(0, COLUMNS, ncols) if (owner[c:c + ncols] < 0).all()), None)
        if start is None:
            raise TmemError(
                f"TMEM exhausted: CTA {cta} asks for {ncols} columns, {self.free_columns} of "
                f"{COLUMNS} are free and no free {ncols}-column range is left (held: "
                + ", ".join(f"CTA {a.cta} {a.ncols} at column {a.column}" for a in self.allocations)
                + "). On hardware tcgen05.alloc would block until another CTA deallocates.")
        st.alloc_warp = int(warp)
        a = Allocation(int(cta), int(warp), start, ncols)
        self.allocations.append(a)
        if smem is not None:
            smem[smem_offset:smem_offset + 4] = np.frombuffer(
                np.uint32(a.taddr).tobytes(), dtype=np.uint8)
        return a.taddr

    def dealloc(self, cta: int, warp: int, taddr: int, ncols: int) -> None:
        """tcgen05.dealloc.cta_group::1.sync.aligned.b32 taddr, ncols."""
        warp_lane_range(warp)
        lane, column = decode_address(taddr)
        match = [a for a in self.allocations if a.column == column and a.cta == int(cta)]
        if lane != 0 or not match:
            held = [a for a in self.allocations if a.cta == int(cta)]
            raise TmemError(
                f"tcgen05.dealloc of {taddr:#010x} (lane {lane}, column {column}): CTA {cta} holds no "
                "allocation starting there (freed twice, or never allocated?); it holds "
                + (", ".join(f"{a.ncols} columns at {a.taddr:#010x}" for a in held) or "nothing"))
        a = match[0]
        if a.warp != int(warp):
            raise TmemError(f"tcgen05.dealloc from warp {warp}: the allocation at {taddr:#010x} was "
                            f"made by warp {a.warp}, and the allocating warp must free it")
        if int(ncols) != a.ncols:
            raise TmemError(f"tcgen05.dealloc of {ncols} columns at {taddr:#010x}: the allocation there "
                            f"has {a.ncols} columns; free exactly what was allocated")
        self.allocations.remove(a)

    def relinquish_alloc_permit(self, cta: int) -> None:
        """tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned."""
        self._cta(cta).relinquished = True

    def exit(self, cta: int) -> None:
        """The CTA exits: every TMEM allocation it made must have been freed."""
        held = [a for a in self.allocations if a.cta == int(cta)]
        if held:
            raise TmemError(f"CTA {cta} exits holding TMEM ("
                            + ", ".join(f"{a.ncols} columns at {a.taddr:#010x}" for a in held)
                            + "): all TMEM must be deallocated before the kernel exits")
        self._ctas.pop(int(cta), None)

    # --- ld / st with allocation checks -----------------------------------------------------
    def _check_owned(self, cta: int, taddr: int, access: TmemAccess, op: str):
        _, col0 = decode_address(taddr)
        owner = self.owner_map()[col0:col0 + access.width]
        if owner.size < access.width or (owner != int(cta)).any():
            raise TmemError(f"tcgen05.{op}{access.label()} at column {col0} touches columns {col0}.."
                            f"{col0 + access.width - 1}, not all allocated by CTA {cta}")

    def ld(self, cta: int, warp: int, taddr: int, access: TmemAccess) -> np.ndarray:
        self._check_owned(cta, taddr, access, "ld")
        return tcgen05_ld(self.image, taddr, access, warp=warp)

    def st(self, cta: int, warp: int, taddr: int, regs, access: TmemAccess) -> None:
        self._check_owned(cta, taddr, access, "st")
        tcgen05_st(self.image, taddr, regs, access, warp=warp)


# ---------------------------------------------------------------------------------------------
# Round trips: the model, and cuda_src/tmem_sm100.cu on an sm_100 GPU
# ---------------------------------------------------------------------------------------------

KERNEL_SOURCE = "tmem_sm100"


def kernel_name(op: str, access: TmemAccess) -> str:
    """The NVRTC name expression of the round-trip kernel for one form, e.g.
    `tmem_ld_roundtrip<1, 8, 0, 0>` (template parameters: shape code, num, pack, half-split offset)."""
    if op not in ("ld", "st"):
        raise ValueError(f"op must be 'ld' or 'st', got {op!r}")
    off = access.half_split_off if access.shape == "16x32bx2" else 0
    return f"tmem_{op}_roundtrip<{SHAPE_CODE[access.shape]}, {access.num}, {int(access.pack16)}, {off}>"


def all_kernel_names(accesses=None) -> list[str]:
    accesses = all_accesses() if accesses is None else accesses
    return [kernel_name(op, a) for a in accesses for op in ("ld", "st")]


def compile_kernels(arch: str = "sm_100a", accesses=None):
    """Build tmem_sm100.cu with every form instantiated (no GPU needed; ptxas checks each one)."""
    from .compile import compile_cuda
    return compile_cuda(KERNEL_SOURCE, arch=arch, name_expressions=all_kernel_names(accesses))


def instructions_per_warp(access: TmemAccess) -> int:
    """A warp covers its 32 lanes with one .32x32b instruction or two of a 16-lane shape."""
    return 32 // access.lanes


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


def _roundtrip_taddr(access: TmemAccess, warp: int, half: int, col0: int) -> int:
    return encode_address(32 * warp + access.lanes * half, col0)


def _check_roundtrip(access: TmemAccess, image, col0: int, regs=None, op: str = "ld"):
    if not isinstance(access, TmemAccess):
        raise TmemError(f"access must be a TmemAccess, got {type(access).__name__}")
    _check_image(image)
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


def model_ld_roundtrip(access: TmemAccess, image: np.ndarray, col0: int = 0) -> np.ndarray:
    """What tmem_ld_roundtrip returns: every warp of a warpgroup loads its quarter at `col0`.
    Shape (4, instructions per warp, 32, registers)."""
    _check_roundtrip(access, image, col0)
    halves = instructions_per_warp(access)
    out = np.zeros((4, halves, 32, access.registers), dtype=np.uint32)
    for w in range(4):
        for h in range(halves):
            out[w, h] = tcgen05_ld(image, _roundtrip_taddr(access, w, h, col0), access, warp=w)
    return out


def model_st_roundtrip(access: TmemAccess, image: np.ndarray, regs: np.ndarray,
                       col0: int = 0) -> np.ndarray:
    """What tmem_st_roundtrip returns: the TMEM image after every warp stored its registers."""
    _check_roundtrip(access, image, col0, regs, "st")
    out = image.copy()
    for w in range(4):
        for h in range(instructions_per_warp(access)):
            tcgen05_st(out, _roundtrip_taddr(access, w, h, col0), regs[w, h], access, warp=w)
    return out


def st_cells_mask(access: TmemAccess, col0: int = 0) -> np.ndarray:
    """bool (128, 512): the cells the warpgroup's stores write."""
    mask = np.zeros((LANES, COLUMNS), dtype=bool)
    m = access.map().reshape(-1, 2)
    for w in range(4):
        for h in range(instructions_per_warp(access)):
            lane0, c0 = decode_address(_roundtrip_taddr(access, w, h, col0))
            mask[lane0 + m[:, 0], c0 + m[:, 1]] = True
    return mask


def compare_st_images(access: TmemAccess, model: np.ndarray, gpu: np.ndarray, col0: int = 0):
    """Number of mismatching cells. For unpack::16b only the low 16 bits of written cells count
    (the ISA does not define the upper halves); everything else must be identical."""
    written = st_cells_mask(access, col0)
    diff = model != gpu
    if access.pack16:
        low = (model & np.uint32(0xFFFF)) != (gpu & np.uint32(0xFFFF))
        diff = np.where(written, low, diff)
    return int(diff.sum())


_MODULE_CACHE = {}


def _module():
    from .compile import load_module
    if "m" not in _MODULE_CACHE:
        _MODULE_CACHE["m"] = load_module(KERNEL_SOURCE, name_expressions=all_kernel_names())
    return _MODULE_CACHE["m"]


def gpu_ld_roundtrip(access: TmemAccess, image: np.ndarray, col0: int = 0) -> np.ndarray:
    """Run tmem_ld_roundtrip on an sm_100 GPU; returns what model_ld_roundtrip computes."""
    from . import device
    _check_roundtrip(access, image, col0)
    device.require("tmem")
    import cupy as cp
    from .runtime import launch
    img = cp.asarray(image)
    out = cp.zeros((4, instructions_per_warp(access), 32, access.registers), dtype=cp.uint32)
    launch(_module(), kernel_name("ld", access), (1,), (128,), (img, out, np.uint32(col0)))
    return cp.asnumpy(out)


def gpu_st_roundtrip(access: TmemAccess, image: np.ndarray, regs: np.ndarray,
                     col0: int = 0) -> np.ndarray:
    """Run tmem_st_roundtrip on an sm_100 GPU; returns what model_st_roundtrip computes."""
    from . import device
    _check_roundtrip(access, image, col0, regs, "st")
    device.require("tmem")
    import cupy as cp
    from .runtime import launch
    img = cp.asarray(image)
    regs_d = cp.asarray(np.ascontiguousarray(regs, dtype=np.uint32))
    out = cp.zeros_like(img)
    launch(_module(), kernel_name("st", access), (1,), (128,), (img, regs_d, out, np.uint32(col0)))
    return cp.asnumpy(out)


def validate_main(argv=None) -> int:
    """`python -m bwlab.tmem validate`: every ld and st form on the GPU against the model."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m bwlab.tmem validate")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args(argv)
    from . import device
    say = Report()

    say(device.banner(print_it=False))
    try:
        device.require("tmem")
    except device.UnsupportedGPU as e:
        say(f"nothing to validate here: {e}")
        return 2
    image = pattern_image(args.seed)
    failures = 0
    for acc in all_accesses():
        for col0 in sorted({0, min(96, COLUMNS - acc.width)}):
            got = gpu_ld_roundtrip(acc, image, col0)
            bad_ld = int((got != model_ld_roundtrip(acc, image, col0)).sum())
            regs = register_pattern(acc, args.seed + 1)
            bad_st = compare_st_images(acc, model_st_roundtrip(acc, image, regs, col0),
                                       gpu_st_roundtrip(acc, image, regs, col0), col0)
            failures += (bad_ld > 0) + (bad_st > 0)
            say(f"{acc.label():28s} col0 {col0:3d}: ld {'exact' if not bad_ld else f'{bad_ld} registers differ'}"
                f", st {'exact' if not bad_st else f'{bad_st} cells differ'}")
    say(f"tmem: {'PASS' if failures == 0 else f'{failures} FAILURE(S)'}")
    say.save(args.out)
    return 0 if failures == 0 else 1


# ---------------------------------------------------------------------------------------------
# The accumulator: from TMEM to registers
# ---------------------------------------------------------------------------------------------

def accumulator_layout(M: int = 128, N: int = 64, cta_group: int = 1):
    """(lane, column) of every accumulator element D[m][n]: int arrays of shape (M, N) each.

    Taken from the UMMA stage (`bwlab.umma.d_tmem_layout`) when that module is present; without it
    only M = 128, cta_group::1 is known here, where D[m][n] sits at lane m, column n (PTX data-path
    layout D, one 32-bit cell per element)."""
    try:
        from .umma import d_tmem_layout
    except Exception:  # no UMMA stage here (or a broken one): fall back to what the ISA fixes
        if (M, cta_group) != (128, 1) or not (N % 16 == 0 and 16 <= N <= 256):
            raise TmemError("without bwlab.umma only the M = 128, cta_group::1 accumulator is known "
                            f"(N a multiple of 16 up to 256); got M={M}, N={N}, cta_group={cta_group}")
        m, n = np.meshgrid(np.arange(M), np.arange(N), indexing="ij")
        return m, n
    lay = d_tmem_layout(M, N, cta_group)
    if cta_group != 1:
        raise TmemError("the read-out here is per CTA; give cta_group=1")
    return lay.lane, lay.column


def example_accumulator(N: int = 64, seed: int = 0):
    """A 128 x N f32 accumulator in a TMEM image, for the read-out demo.

    Returns (image, D as float64, where it came from). With the UMMA stage present, D is what
    `bwlab.umma`'s tcgen05.mma model computed from SMEM bytes (kind::f16, f16 x f16 -> f32, K = 64)
    and the image is that model's TMEM; otherwise D = A @ B^T of small integer-valued matrices
    (exact in f32), placed at lane m, column n."""
    image = new_image()
    try:
        from .umma import UmmaCase
        case = UmmaCase("f16", "f32", 128, N, 64, seed=seed)
        tm = case.model()
        image[:, :tm.shape[1]] = tm
        return image, case.reference(), "bwlab.umma tcgen05.mma model (f16 x f16 -> f32, K = 64)"
    except Exception:
        rng = np.random.default_rng(seed)
        a = rng.integers(-4, 5, size=(128, 16)).astype(np.float64)
        b = rng.integers(-4, 5, size=(N, 16)).astype(np.float64)
        d = a @ b.T
        lanes, cols = accumulator_layout(128, N)
        image[lanes, cols] = d.astype(np.float32).view(np.uint32)
        return image, d, "NumPy A @ B^T placed at lane m, column n (bwlab.umma not available)"


@dataclass(frozen=True)
class LoadStep:
    """One tcgen05.ld of an epilogue: `warp` issues `access` at TMEM address `taddr`."""
    warp: int
    index: int          # the warp's instruction number (half-warp lane block, then column chunk)
    taddr: int


def epilogue_loads(access: TmemAccess, N: int, col0: int = 0) -> list[LoadStep]:
    """The loads a warpgroup (warps 0-3) issues to read 128 lanes x N accumulator columns in `access`:
    each warp covers its lane quarter (two lane blocks for the 16-lane shapes) and the columns in
    chunks of `access.width` (for .16x32bx2 the two halves must sit side by side)."""
    if access.shape == "16x32bx2" and access.half_split_off != access.half_width:
        raise TmemError("to tile the accumulator, the .16x32bx2 halves must be adjacent "
                        f"(half-split offset {access.half_width})")
    if N % access.width or not 0 <= col0 <= COLUMNS - N:
        raise TmemError(f"{access.label()} reads {access.width} columns at a time: N = {N} must be a "
                        f"multiple of it and fit in TMEM from column {col0}")
    steps = []
    for w in range(4):
        i = 0
        for h in range(instructions_per_warp(access)):
            for c in range(col0, col0 + N, access.width):
                steps.append(LoadStep(w, i, encode_address(32 * w + access.lanes * h, c)))
                i += 1
    return steps


def accumulator_owners(access: TmemAccess, M: int = 128, N: int = 64) -> np.ndarray:
    """For every D[m][n]: (warp, load index, thread, register, half) of the epilogue that holds it,
    int array (M, N, 5). `half` is the 16-bit half of the register (0 without pack16)."""
    lanes, cols = accumulator_layout(M, N)
    where = np.full((LANES, COLUMNS, 5), -1, dtype=np.int64)
    m = access.map()
    if not access.pack16:
        m = m[:, :, None, :]
    t, j, h = np.meshgrid(np.arange(32), np.arange(access.registers), np.arange(m.shape[2]),
                          indexing="ij")
    for s in epilogue_loads(access, int(cols.max()) + 1):
        lane0, c0 = decode_address(s.taddr)
        where[lane0 + m[..., 0], c0 + m[..., 1]] = np.stack(
            [np.full_like(t, s.warp), np.full_like(t, s.index), t, j, h], axis=-1)
    return where[lanes, cols]


def read_accumulator(image: np.ndarray, access: TmemAccess, M: int = 128, N: int = 64):
    """Read D out of a TMEM image the way an epilogue does: every warp of the warpgroup issues its
    `epilogue_loads` through the tcgen05.ld model, and each thread's registers are put back at the
    (m, n) they hold. Returns (D as raw 32-bit words (M, N), registers {(warp, index): (32, R)}).
    With pack16 each value is the 16-bit content of its cell (an f16 accumulator)."""
    _check_image(image)
    owners = accumulator_owners(access, M, N)
    regs = {}
    lanes, cols = accumulator_layout(M, N)
    for s in epilogue_loads(access, int(cols.max()) + 1):
        regs[(s.warp, s.index)] = tcgen05_ld(image, s.taddr, access, warp=s.warp)
    words = np.zeros((M, N), dtype=np.uint32)
    for (w, i), r in regs.items():
        sel = (owners[..., 0] == w) & (owners[..., 1] == i)
        vals = r[owners[sel][:, 2], owners[sel][:, 3]]
        words[sel] = (vals >> (16 * owners[sel][:, 4]).astype(np.uint32)) & np.uint32(
            0xFFFF if access.pack16 else 0xFFFFFFFF)
    return words, regs


# ---------------------------------------------------------------------------------------------
# Pictures
# ---------------------------------------------------------------------------------------------

def draw_tmem(tm: TensorMemory, ax=None, title: str | None = None):
    """TMEM as a 128-lane x 512-column grid, each allocation coloured by the CTA that holds it."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba
    from .plotting import BYTE_COLORS, add_legend, cta_color
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3.2))
    owner = tm.owner_map()
    img = np.zeros((LANES, COLUMNS, 4))
    img[:] = to_rgba(BYTE_COLORS["untouched"])
    for a in tm.allocations:
        img[:, a.column:a.column + a.ncols] = to_rgba(cta_color(a.cta))
        ax.text(a.column + a.ncols / 2, LANES / 2,
                f"CTA {a.cta}\n{a.ncols} cols\n{a.taddr:#010x}", ha="center", va="center", fontsize=8)
    ax.imshow(img, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(0, COLUMNS + 1, 64))
    ax.set_yticks([0, 32, 64, 96, 127])
    ax.set_xlabel("column (32 bits each)")
    ax.set_ylabel("lane")
    ax.set_title(title or f"TMEM of one SM: {LANES} lanes x {COLUMNS} columns x 32 bit "
                 f"({COLUMNS - int((owner < 0).sum())} columns allocated)")
    items = [(f"CTA {c}", cta_color(c)) for c in sorted({a.cta for a in tm.allocations})]
    add_legend(ax, items + [("free", BYTE_COLORS["untouched"])], title="owner")
    return ax


def draw_warp_quarters(ax=None, warps: int = 8):
    """Which TMEM lanes each warp of a CTA may touch: lanes 32*(warp % 4) .. +31."""
    import matplotlib.pyplot as plt
    from .plotting import add_legend, warp_color
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3))
    for q in range(4):
        ax.barh(0, 32, left=32 * q, color=warp_color(q), edgecolor="black")
        names = ", ".join(str(w) for w in range(warps) if w % 4 == q)
        ax.text(32 * q + 16, 0, f"lanes {32 * q}..{32 * q + 31}\nwarps {names}", ha="center",
                va="center", fontsize=9)
    ax.set_xlim(0, LANES)
    ax.set_yticks([])
    ax.set_xlabel("TMEM lane")
    ax.set_title(f"Warp quarters of a CTA with {warps} warps: warp w reaches lanes 32*(w % 4) .. +31")
    add_legend(ax, [(f"warp % 4 = {q}", warp_color(q)) for q in range(4)], title="quarter")
    return ax


def _thread_legend(ax):
    from .plotting import add_legend, thread_color
    add_legend(ax, [(f"T{t}", thread_color(t)) for t in range(32)], title="thread", ncol=2)


def draw_ld_map(access: TmemAccess, warp: int = 0, ax=None, legend: bool = True, text=None):
    """One tcgen05.ld of warp `warp` at its first lane: TMEM lanes x columns, each cell coloured by
    the thread whose register receives it (labels: thread and register)."""
    import matplotlib.pyplot as plt
    from .plotting import BYTE_COLORS, draw_grid, thread_color
    lo, _ = warp_lane_range(warp)
    m = access.map()
    if not access.pack16:
        m = m[:, :, None, :]
    colors = np.full((access.lanes, access.width), BYTE_COLORS["untouched"], dtype=object)
    labels = np.full((access.lanes, access.width), "", dtype=object)
    show = access.width <= 16 if text is None else text
    for t in range(32):
        for j in range(access.registers):
            for h in range(m.shape[2]):
                lane, col = m[t, j, h]
                colors[lane, col] = thread_color(t)
                if show:
                    half = ("lo", "hi")[h] if access.pack16 else ""
                    sep = " " if access.lanes == 32 else "\n"
                    labels[lane, col] = f"T{t}{sep}r{j}{half}" if access.width <= 8 else f"{t}"
    if ax is None:
        _, ax = plt.subplots(figsize=(min(14, 2 + 0.45 * access.width), 0.32 * access.lanes + 1))
    draw_grid(ax, colors, text=labels if show else None, fontsize=6,
              title=f"tcgen05.ld{access.label()}: warp {warp}, {access.registers} register"
                    f"{'s' if access.registers > 1 else ''}/thread",
              xlabel="column (relative to the address)",
              ylabel=f"lane (from {lo}, warp {warp}'s quarter)",
              xticks=list(range(access.width)) if access.width <= 32 else None)
    if legend:
        _thread_legend(ax)
    return ax


def draw_gallery(num: int = 1, pack16: bool = False):
    """The five shapes side by side for one .num: who reads which cell."""
    import matplotlib.pyplot as plt
    accs = [TmemAccess(s, num, pack16) for s in SHAPES]
    widths = [a.width for a in accs]
    fig, axes = plt.subplots(1, 5, figsize=(17, 5.6),
                             gridspec_kw={"width_ratios": [max(2.5, w) for w in widths]})
    for ax, a in zip(axes, accs):
        draw_ld_map(a, 0, ax=ax, legend=False)
        ax.set_title(f".{a.shape}.x{num}\n{a.registers} reg/thread\n{a.lanes} lanes x {a.width} col",
                     fontsize=9)
        ax.set_ylabel("lane" if a is accs[0] else "")
        ax.set_xlabel("column")
    _thread_legend(axes[-1])
    fig.suptitle(f"tcgen05.ld shapes at .x{num}{' .pack::16b' if pack16 else ''}: "
                 "cell colour = the thread that receives it (label: thread, register)")
    fig.tight_layout()
    return fig


def draw_accumulator_owners(access: TmemAccess, M: int = 128, N: int = 64, highlight=(0, 0)):
    """Left: the M x N accumulator coloured by the warp that ends up holding each element.
    Right: a zoom around `highlight` = (m, n), coloured by thread and labelled with the register."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba
    from .plotting import add_legend, draw_grid, thread_color, warp_color
    own = accumulator_owners(access, M, N)
    img = np.zeros((M, N, 4))
    for w in range(4):
        img[own[..., 0] == w] = to_rgba(warp_color(w))
    img[own[..., 1] % 2 == 1, :3] *= 0.8
    r, c = highlight
    fig, (ax, zx) = plt.subplots(1, 2, figsize=(13, 5.5), gridspec_kw={"width_ratios": [1, 1.3]})
    ax.imshow(img, aspect="auto", interpolation="nearest")
    ax.plot(c, r, marker="s", markersize=9, markerfacecolor="none", markeredgecolor="black")
    ax.set_xlabel("n (accumulator column)")
    ax.set_ylabel("m (accumulator row)")
    ax.set_title(f"{M} x {N} D read with tcgen05.ld{access.label()}:\nthe warp holding each element "
                 "(darker: its odd-numbered loads)", fontsize=10)
    add_legend(ax, [(f"warp {w}", warp_color(w)) for w in range(4)], title="held by", outside=False,
               loc="lower right")
    r0 = r // access.lanes * access.lanes
    c0 = c // 16 * 16
    rows, cols = slice(r0, min(M, r0 + access.lanes)), slice(c0, min(N, c0 + 16))
    sub = own[rows, cols]
    colors = np.empty(sub.shape[:2], dtype=object)
    labels = np.empty(sub.shape[:2], dtype=object)
    for i in range(sub.shape[0]):
        for k in range(sub.shape[1]):
            w, _, t, j, h = sub[i, k]
            colors[i, k] = thread_color(t)
            labels[i, k] = f"{t}\nr{j}" + (("lo", "hi")[h] if access.pack16 else "")
    draw_grid(zx, colors, text=labels, fontsize=5,
              title=f"zoom: rows {rows.start}..{rows.stop - 1}, columns {cols.start}..{cols.stop - 1} "
                    f"(thread, register)", xlabel="n", ylabel="m",
              xticks=list(range(cols.start, cols.stop)), yticks=list(range(rows.start, rows.stop)))
    zx.add_patch(plt.Rectangle((c - c0 - 0.5, r - r0 - 0.5), 1, 1, fill=False, linewidth=2.5,
                               edgecolor="black"))
    add_legend(zx, [(f"T{t}", thread_color(t)) for t in range(0, 32, 4)]
               + [(f"D[{r}][{c}]", "white")], title="thread (every 4th)")
    fig.tight_layout()
    return fig


def ld_widget():
    """An interactive map: pick the shape, .num, pack and the warp."""
    import ipywidgets as W
    import matplotlib.pyplot as plt

    def show(shape, num, pack16, warp):
        try:
            acc = TmemAccess(shape, num, pack16)
        except TmemError as e:
            print(e)
            return
        draw_ld_map(acc, warp)
        plt.show()
        lo, hi = warp_lane_range(warp)
        print(f"{acc.ptx('ld')}: {acc.registers} registers per thread, {acc.bytes_per_warp} bytes per "
              f"warp; warp {warp} may use lanes {lo}..{hi - 1}")

    return W.interactive(show, shape=W.Dropdown(options=list(SHAPES), value="16x256b"),
                         num=W.Dropdown(options=list(NUMS), value=1),
                         pack16=W.Checkbox(value=False, description="pack::16b"),
                         warp=W.IntSlider(value=0, min=0, max=7))


# ---------------------------------------------------------------------------------------------
# cuda_src/ptx/tcgen05_ldst.cuh is generated from the access forms above
# ---------------------------------------------------------------------------------------------

_HEADER_TOP = """\
// bwlab PTX wrappers: tcgen05.ld / tcgen05.st in the shapes .16x64b, .16x128b, .16x256b, .16x32bx2,
// and the .pack::16b (ld) / .unpack::16b (st) forms of every shape, .32x32b included (its plain forms
// live in tcgen05.cuh). PTX ISA 9.7.16 "tcgen05.ld" / "tcgen05.st"; which thread holds which TMEM
// cell: 9.7.16.2.3 "Data Movement Shape" (bwlab.tmem.ld_fragment_map, notebook 04). Stage 4.
//
// GENERATED by `python -m bwlab.tmem header` from bwlab/tmem.py (ldst_header_text); a test checks
// that this file is what the generator writes, so change the generator, not this file.
//
//   tcgen05_ld_<shape>_x<num>[_pack_16b](u32 (&r)[R], u32 taddr)
//   tcgen05_st_<shape>_x<num>[_unpack_16b](u32 taddr, const u32 (&r)[R])
//   R = num x {1, 1, 2, 4, 1} for .32x32b .16x64b .16x128b .16x256b .16x32bx2 (at most 128).
//   .16x32bx2 wrappers are templates on the immediate half-split offset (columns between the
//   halves of the warp): tcgen05_ld_16x32bx2_x4<4>(r, taddr).
//   tcgen05_ld_<shape>[_pack_16b]<Num>(r, taddr) and the st twins pick .num at compile time.
// Each warp may touch only TMEM lanes 32*(warp % 4) .. +31. Wait with tcgen05_wait_ld() before
// reading the registers, tcgen05_wait_st() before relying on a store.
#pragma once
#include "common.cuh"
#include "tcgen05.cuh"
"""

_SHAPE_NOTES = {
    "32x32b": "thread t <-> lane t; register j <-> column j (pack: columns 2j, 2j+1).",
    "16x64b": "16 lanes x 64 bit per .x1: thread t <-> lane t/4 + 8*(t%2), column (t/2)%2 + 2j.",
    "16x128b": "16 lanes x 128 bit per .x1: lane t/4 + 8*(j%2), column t%4 + 4*(j/2).",
    "16x256b": "16 lanes x 256 bit per .x1 (the mma.m16n8 accumulator fragment):\n"
               "// lane t/4 + 8*((j/2)%2), column 2*(t%4) + j%2 + 8*(j/4).",
    "16x32bx2": "two half-warps over the same 16 lanes: thread t <-> lane t%16, column j,\n"
                "// plus HalfSplitOff columns for threads 16..31.",
}


def _wrapper_text(acc: TmemAccess, op: str) -> str:
    n = acc.registers
    name = acc.wrapper(op).split("<")[0]
    tmpl = "template <u32 HalfSplitOff>\n" if acc.shape == "16x32bx2" else ""
    # ld: registers %0.., taddr %n, immediate %n+1; st: taddr %0, registers %1..%n, immediate %n+1
    imm = f", %{n + 1}" if acc.shape == "16x32bx2" else ""
    imm_in = ', "n"(HalfSplitOff)' if acc.shape == "16x32bx2" else ""
    if op == "ld":
        regs = ", ".join(f"%{i}" for i in range(n))
        outs = ", ".join(f'"=r"(r[{i}])' for i in range(n))
        return (f"{tmpl}__device__ __forceinline__ void {name}(u32 (&r)[{n}], u32 taddr) {{\n"
                f'    asm volatile("{acc.ptx("ld")} {{{regs}}}, [%{n}]{imm};"\n'
                f"                 : {outs}\n"
                f'                 : "r"(taddr){imm_in} : "memory");\n}}\n')
    regs = ", ".join(f"%{i + 1}" for i in range(n))
    ins = ", ".join(f'"r"(r[{i}])' for i in range(n))
    return (f"{tmpl}__device__ __forceinline__ void {name}(u32 taddr, const u32 (&r)[{n}]) {{\n"
            f'    asm volatile("{acc.ptx("st")} [%0]{imm}, {{{regs}}};"\n'
            f'                 :: "r"(taddr), {ins}{imm_in} : "memory");\n}}\n')


def _dispatcher_text(shape: str, pack16: bool, op: str) -> str:
    forms = [a for a in all_accesses(pack16) if a.shape == shape]
    suffix = ("_pack_16b" if op == "ld" else "_unpack_16b") if pack16 else ""
    base = f"tcgen05_{op}_{shape}"
    per = REGS_PER_NUM[shape]
    split = shape == "16x32bx2"
    tparams = "template <int Num, u32 HalfSplitOff, int R>" if split else "template <int Num, int R>"
    targs = "<HalfSplitOff>" if split else ""
    sig = "(u32 (&r)[R], u32 taddr)" if op == "ld" else "(u32 taddr, const u32 (&r)[R])"
    call = "(r, taddr)" if op == "ld" else "(taddr, r)"
    lines = [f"{tparams}\n__device__ __forceinline__ void {base}{suffix}{sig} {{",
             f'    static_assert(R == Num * {per}, "{base}{suffix}: R must be {per} x Num");']
    for i, a in enumerate(forms):
        kw = "if" if i == 0 else "else if"
        lines.append(f"    {kw} constexpr (Num == {a.num}) {base}_x{a.num}{suffix}{targs}{call};")
    lines.append(f'    else static_assert(Num < 0, "{base}{suffix}: .num must be x1 .. '
                 f'x{forms[-1].num}");\n}}\n')
    return "\n".join(lines)


def ldst_header_text() -> str:
    """The text of cuda_src/ptx/tcgen05_ldst.cuh."""
    parts = [_HEADER_TOP]
    for shape in SHAPES:
        for pack in (False, True):
            if shape == "32x32b" and not pack:
                continue  # plain .32x32b wrappers: tcgen05.cuh
            title = f"shape .{shape}" + (", .pack::16b / .unpack::16b" if pack else "")
            parts.append(f"\n// ---- {title} " + "-" * max(4, 92 - len(title)) + "\n")
            parts.append(f"// {_SHAPE_NOTES[shape]}\n")
            if pack:
                parts.append("// pack::16b: each register holds the low 16 bits of two adjacent columns "
                             "(bits 15-0 from the\n// lower one); unpack::16b writes them back there.\n")
            parts.append("\n")
            for a in all_accesses(pack):
                if a.shape == shape:
                    parts.append(_wrapper_text(a, "ld"))
                    parts.append(_wrapper_text(a, "st"))
                    parts.append("\n")
    parts.append("\n// ---- compile-time .num " + "-" * 72 + "\n")
    for shape in SHAPES:
        for pack in (False, True):
            for op in ("ld", "st"):
                parts.append(_dispatcher_text(shape, pack, op))
                parts.append("\n")
    return "".join(parts).rstrip() + "\n"


def main(argv=None) -> int:
    """`python -m bwlab.tmem header` rewrites cuda_src/ptx/tcgen05_ldst.cuh;
    `python -m bwlab.tmem validate [--out FILE]` runs every form on an sm_100 GPU."""
    import sys
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["header"]:
        from .compile import CUDA_SRC
        path = CUDA_SRC / "ptx" / "tcgen05_ldst.cuh"
        path.write_text(ldst_header_text())
        print(f"wrote {path}")
        return 0
    if argv[:1] == ["validate"]:
        return validate_main(argv[1:])
    print(main.__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
