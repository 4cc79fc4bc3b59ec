"""The PTX ISA's tables for TMEM, one table in code per table (or rule list) of the ISA, each row naming
its section: tcgen05.alloc / dealloc / relinquish_alloc_permit, tcgen05.ld / tcgen05.st (shapes, .num,
pack / unpack, warp lane quarters) and tcgen05.cp (shapes, multicast, decompression).

Section numbers are those of the PTX ISA 9.0 documentation (later editions renumber the tcgen05
chapter to 9.7.17 / 9.7.18; the titles stay). Where CuTe is stricter than the ISA, the row says which
source asks for what. Every check raises `TmemError` naming the rule, the limit and the section.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..hw.tmem import COLUMNS, TmemError

__all__ = ["SEC_TMEM_ALLOC", "SEC_ALLOC", "SEC_ACCESS", "SEC_SHAPE", "SEC_LD", "SEC_ST", "SEC_PACK", "SEC_CP",
           "AllocForm", "ALLOC_TABLE", "ALLOC_RULES", "AllocRule", "ALLOC_NCOLS", "require_alloc",
           "LD_NUM_TABLE", "LdStShape", "LDST_SHAPES", "LDST_PACK", "MAX_REGS", "require_ldst",
           "LANE_QUARTERS", "require_lanes", "CpForm", "CP_TABLE", "CP_FORMATS", "require_cp"]

SEC_TMEM_ALLOC = 'PTX ISA 9.7.16.1.2 "Tensor Memory Allocation"'
SEC_ALLOC = 'PTX ISA 9.7.16.7.1 "tcgen05.alloc, tcgen05.dealloc, tcgen05.relinquish_alloc_permit"'
SEC_ACCESS = 'PTX ISA "Tensor Memory" access restrictions (tcgen05, Tensor Memory)'
SEC_SHAPE = 'PTX ISA "Data Movement Shape" (tcgen05, Matrix fragments for tcgen05.ld/st)'
SEC_LD = 'PTX ISA 9.7.16.8.3 "tcgen05.ld", Table 49'
SEC_ST = 'PTX ISA 9.7.16.8.4 "tcgen05.st" (the .shape/.num table of tcgen05.ld)'
SEC_PACK = 'PTX ISA "Packing and Unpacking" (tcgen05.ld/st)'
SEC_CP = 'PTX ISA 9.7.16.9.2 "tcgen05.cp"'
CUTE_ALLOC = "CuTe include/cute/arch/tmem_allocator_sm100.hpp (TMEM::Allocator1Sm)"


# ---- tcgen05.alloc / dealloc / relinquish_alloc_permit ------------------------------------------

@dataclass(frozen=True)
class AllocForm:
    instruction: str
    operands: str
    section: str = SEC_ALLOC

    def ptx(self, cta_group: int) -> str:
        tail = {"alloc": ".sync.aligned.shared::cta.b32", "dealloc": ".sync.aligned.b32",
                "relinquish_alloc_permit": ".sync.aligned"}[self.instruction]
        return f"tcgen05.{self.instruction}.cta_group::{cta_group}{tail}"


ALLOC_TABLE = {
    "alloc": AllocForm("alloc", "[dst], nCols"),
    "dealloc": AllocForm("dealloc", "taddr, nCols"),
    "relinquish_alloc_permit": AllocForm("relinquish_alloc_permit", ""),
}
ALLOC_CTA_GROUPS = (1, 2)
ALLOC_NCOLS = tuple(1 << k for k in range(5, 10))      # 32, 64, 128, 256, 512


@dataclass(frozen=True)
class AllocRule:
    rule: str
    source: str
    kind: str = "error"       # 'error': the model refuses; 'note': the model warns and goes on


ALLOC_RULES = {
    "ncols": AllocRule("nCols is a power of two in [32, 512] (the unit of allocation is 32 columns, all "
                       "128 lanes)", SEC_ALLOC),
    "non_increasing": AllocRule("the number of columns allocated must not increase between any two "
                                "allocations in the execution order within the CTA", SEC_ALLOC),
    "one_warp": AllocRule("one warp of the CTA performs the allocations (.cta_group::1); CuTe's allocator "
                          "asks that repeated allocations come from the same warp",
                          f"{SEC_ALLOC}; {SEC_TMEM_ALLOC}; {CUTE_ALLOC}"),
    "dealloc_warp": AllocRule("the ISA asks that one warp of the CTA perform allocation and de-allocation; it "
                              "does not say the de-allocating warp must be the one that allocated, and CuTe "
                              "asks for the same warp only for repeated allocations. Freeing from the "
                              "allocating warp is the reading every source agrees with",
                              f"{SEC_ALLOC}; {CUTE_ALLOC}", kind="note"),
    "previous_allocation": AllocRule("tcgen05.dealloc's taddr must point to a previous allocation (the "
                                     "model also asks for the same nCols)", SEC_ALLOC),
    "relinquish": AllocRule("after tcgen05.relinquish_alloc_permit the CTA has given up its right to "
                            "allocate: a later tcgen05.alloc is illegal", SEC_ALLOC),
    "free_before_exit": AllocRule("all TMEM a kernel allocated must be deallocated before it exits", SEC_ALLOC),
    "same_cta_group": AllocRule("all tcgen05 instructions of a kernel use the same .cta_group", SEC_ALLOC),
}


def require_alloc(instruction: str, cta_group: int = 1, ncols: int | None = None) -> AllocForm:
    """The row of `instruction` ('alloc', 'dealloc', 'relinquish_alloc_permit'), after checking
    .cta_group and nCols against the table."""
    if instruction not in ALLOC_TABLE:
        raise TmemError(f"tcgen05.{instruction} is not an allocation instruction; the table has "
                        f"{', '.join(ALLOC_TABLE)} ({SEC_ALLOC})")
    if cta_group not in ALLOC_CTA_GROUPS:
        raise TmemError(f".cta_group must be ::1 or ::2, got ::{cta_group} ({SEC_ALLOC})")
    form = ALLOC_TABLE[instruction]
    if instruction == "relinquish_alloc_permit":
        if ncols is not None:
            raise TmemError(f"tcgen05.relinquish_alloc_permit takes no nCols ({SEC_ALLOC})")
        return form
    if ncols is None or int(ncols) != ncols or int(ncols) not in ALLOC_NCOLS:
        raise TmemError(f"tcgen05.{instruction}: the column count must be a power of two in [32, {COLUMNS}]"
                        f", got {ncols} ({SEC_ALLOC})")
    return form


# ---- tcgen05.ld / tcgen05.st --------------------------------------------------------------------

# Table 49 of tcgen05.ld, as the ISA prints it: registers per thread for each .num, in three column
# groups of shapes; None where the ISA writes NA. tcgen05.st takes the same combinations.
LD_NUM_TABLE = {
    #       .16x32bx2/.16x64b/.32x32b  .16x128b  .16x256b
    1: (1, 2, 4),
    2: (2, 4, 8),
    4: (4, 8, 16),
    8: (8, 16, 32),
    16: (16, 32, 64),
    32: (32, 64, 128),
    64: (64, 128, None),
    128: (128, None, None),
}
MAX_REGS = 128


@dataclass(frozen=True)
class LdStShape:
    """One .shape of tcgen05.ld/st (Data Movement Shape): lanes x bits per lane for .x1, the column of
    Table 49 it reads, and whether it takes the immediate half-split offset (shape2 of the syntax)."""
    shape: str
    lanes: int
    bits: int                 # bits per lane for .x1 (per half-warp for .16x32bx2)
    table_column: int         # 0, 1, 2: the column group of LD_NUM_TABLE
    half_split: bool = False
    section: str = SEC_SHAPE

    @property
    def nums(self) -> tuple[int, ...]:
        return tuple(n for n, regs in LD_NUM_TABLE.items() if regs[self.table_column] is not None)

    def registers(self, num: int) -> int | None:
        return LD_NUM_TABLE[num][self.table_column]


LDST_SHAPES = {
    "32x32b": LdStShape("32x32b", 32, 32, 0),
    "16x64b": LdStShape("16x64b", 16, 64, 0),
    "16x128b": LdStShape("16x128b", 16, 128, 1),
    "16x256b": LdStShape("16x256b", 16, 256, 2),
    "16x32bx2": LdStShape("16x32bx2", 16, 32, 0, half_split=True),
}
# The optional 16-bit qualifier: .pack::16b on loads, .unpack::16b on stores (never the other way).
LDST_PACK = {"ld": ".pack::16b", "st": ".unpack::16b"}


def require_ldst(op: str, shape: str, num: int, qualifier: str | None = None,
                 half_split_off: int | None = None) -> LdStShape:
    """Check one tcgen05.ld/st form against the tables: op, .shape, .num (Table 49), the pack/unpack
    qualifier, and the immediate half-split offset (required by .16x32bx2, refused by the others)."""
    if op not in LDST_PACK:
        raise TmemError(f"op must be 'ld' or 'st', got {op!r}")
    sec = SEC_LD if op == "ld" else SEC_ST
    if shape not in LDST_SHAPES:
        raise TmemError(f"tcgen05.{op} shape must be one of .{', .'.join(LDST_SHAPES)}; got .{shape} ({sec}; "
                        "there is no .32x1x32b: the 32-lane shape is .32x32b)")
    row = LDST_SHAPES[shape]
    if num not in LD_NUM_TABLE:
        raise TmemError(f".num must be one of x{', x'.join(map(str, LD_NUM_TABLE))}; got x{num} ({sec})")
    if row.registers(num) is None:
        regs = num * LD_NUM_TABLE[1][row.table_column]
        raise TmemError(f".{shape}.x{num} would need {regs} registers per thread; Table 49 marks it NA "
                        f"(at most {MAX_REGS} registers), so .{shape} stops at .x{row.nums[-1]} ({sec})")
    if qualifier is not None and qualifier != LDST_PACK[op]:
        raise TmemError(f"tcgen05.{op} takes {LDST_PACK[op]} only, not {qualifier} ({sec}; {SEC_PACK})")
    if row.half_split and half_split_off is None:
        raise TmemError(f".16x32bx2 needs the immediate half-split offset (immHalfSplitoff) ({sec})")
    if not row.half_split and half_split_off is not None:
        raise TmemError(f"only .16x32bx2 takes a half-split offset; .{shape} does not ({sec})")
    return row


# Warp w of a CTA reaches only the lanes of its quarter: warp % 4 -> [lo, hi).
LANE_QUARTERS = {q: (32 * q, 32 * q + 32) for q in range(4)}


def require_lanes(op: str, warp: int, lane0: int, lanes: int, label: str = "") -> None:
    """The access restriction: the lanes [lane0, lane0 + lanes) must lie in warp `warp`'s quarter."""
    lo, hi = LANE_QUARTERS[int(warp) % 4]
    if not (lo <= lane0 and lane0 + lanes <= hi):
        raise TmemError(
            f"warp {warp} may access TMEM lanes {lo}..{hi - 1} only (lanes 32*(warp % 4) .. +31, "
            f"{SEC_ACCESS}); tcgen05.{op}{label} at lane {lane0} would touch lanes {lane0}.."
            f"{lane0 + lanes - 1}")


# ---- tcgen05.cp ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class CpForm:
    """One (.shape, .multicast) of tcgen05.cp: lanes x bits copied from SMEM (through a 64-bit SMEM
    matrix descriptor) into TMEM, and the warps the data is multicast to."""
    shape: str
    multicast: str | None
    lanes: int
    bits: int
    section: str = SEC_CP

    def ptx(self, cta_group: int = 1, fmt: str | None = None) -> str:
        mc = f".{self.multicast}" if self.multicast else ""
        return f"tcgen05.cp.cta_group::{cta_group}.{self.shape}{mc}{f'.{fmt}' if fmt else ''}"


# .64x128b requires one of the .warpx2 multicasts, .32x128b requires .warpx4; the others take none.
CP_TABLE = [
    CpForm("128x256b", None, 128, 256),
    CpForm("4x256b", None, 4, 256),
    CpForm("128x128b", None, 128, 128),
    CpForm("64x128b", "warpx2::02_13", 64, 128),
    CpForm("64x128b", "warpx2::01_23", 64, 128),
    CpForm("32x128b", "warpx4", 32, 128),
]
# The optional decompression .dst_fmt.src_fmt (PTX ISA "Optional Decompression").
CP_FORMATS = (None, "b8x16.b6x16_p32", "b8x16.b4x16_p64")


def require_cp(shape: str, multicast: str | None = None, fmt: str | None = None, cta_group: int = 1) -> CpForm:
    """The row of tcgen05.cp for (shape, multicast), after checking the combination, the decompression
    format and .cta_group."""
    shapes = sorted({f.shape for f in CP_TABLE}, key=[f.shape for f in CP_TABLE].index)
    if shape not in shapes:
        raise TmemError(f"tcgen05.cp shape must be one of .{', .'.join(shapes)}; got .{shape} ({SEC_CP})")
    allowed = [f.multicast for f in CP_TABLE if f.shape == shape]
    if multicast not in allowed:
        need = " or ".join(f".{m}" for m in allowed if m) or "no multicast"
        raise TmemError(f"tcgen05.cp.{shape} takes {need}, got {('.' + multicast) if multicast else 'none'} "
                        f"({SEC_CP})")
    if fmt not in CP_FORMATS:
        raise TmemError(f"tcgen05.cp decompression is .dst_fmt.src_fmt, one of "
                        f"{', '.join('.' + f for f in CP_FORMATS if f)}; got .{fmt} ({SEC_CP})")
    if cta_group not in ALLOC_CTA_GROUPS:
        raise TmemError(f".cta_group must be ::1 or ::2, got ::{cta_group} ({SEC_CP})")
    return next(f for f in CP_TABLE if f.shape == shape and f.multicast == multicast)
