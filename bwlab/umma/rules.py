"""The rule tables of `tcgen05.mma` (dense, no `.ws`) and of the SMEM matrix descriptor: one table in
code per table of the PTX ISA, each row naming its section, and CuTe's stricter rules kept apart.

* `KIND_TYPES`    — PTX ISA tcgen05 "Instruction descriptor" (the format table of .kind::f16, ::tf32,
  ::f8f6f4, ::i8): which A/B and D types each kind takes, and their codes.
* `SHAPES`        — PTX ISA tcgen05 "Matrix Shape" (Table 39): M per cta_group, N per kind.
* `MAJOR_LAYOUTS` — PTX ISA tcgen05 "Transpose and Negate operations" and "Shared Memory Matrix
  Layouts": which SMEM layouts (swizzle modes) a K-major / MN-major operand of each kind may use.
* `TRANSPOSED_B`  — PTX ISA tcgen05 "Matrix Shape", notes: an MN-major (transposed) 8-bit B needs N a
  multiple of 16 (cta_group::1) / 32 (cta_group::2).
* `CUTE_RULES`    — where CuTe is stricter than the ISA (a static_assert in an atom), kept separate:
  `require_mma_cute` applies them, `require_mma` does not.
* `DESC_LAYOUT_CODES` — PTX ISA tcgen05 "Shared Memory Descriptor" / wgmma "Matrix Descriptor Format":
  the swizzling-mode codes of each descriptor encoding.

Every refusal is an `MmaRuleError` whose message names the rule (its section) and the limit.
`legal_mma_configs()` walks the whole table (tests/test_umma_rules.py checks every row of it).
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import product

from ..hw.swizzle import MODES

__all__ = ["MmaRuleError", "KIND_TYPES", "SHAPES", "MAJOR_LAYOUTS", "TRANSPOSED_B", "CUTE_RULES",
           "DESC_LAYOUT_CODES", "LAYOUTS", "kind_of_types", "require_mma_types", "require_mma_shape",
           "require_mma_majors", "require_mma", "require_mma_cute", "legal_n", "legal_mma_configs"]

SEC_IDESC = "PTX ISA tcgen05, Instruction descriptor"
SEC_SHAPE = "PTX ISA tcgen05, Matrix Shape (Table 39)"
SEC_TRANSPOSE = "PTX ISA tcgen05, Transpose and Negate operations"
SEC_SMEM_LAYOUT = "PTX ISA tcgen05, Shared Memory Matrix Layouts"
SEC_DESC = "PTX ISA tcgen05, Shared Memory Descriptor"
SEC_WGMMA_DESC = "PTX ISA wgmma, Matrix Descriptor Format"

# The SMEM layouts an operand can be in: the four swizzle modes (bwlab.hw.swizzle.MODES) and SM100's
# 128-byte swizzle with 32-byte atomicity.
LAYOUTS = MODES + ("128B_base32B",)


class MmaRuleError(ValueError):
    """A tcgen05.mma or SMEM descriptor rule is broken; `rule` names the table row's source."""

    def __init__(self, message: str, rule: str):
        self.rule = rule
        super().__init__(f"{message} ({rule})")


@dataclass(frozen=True)
class KindTypes:
    ab: dict            # A/B type -> code (bits 7-9 / 10-12)
    d: dict             # D type -> code (bits 4-5)
    same_ab: bool       # A and B must be the same type
    negate: bool        # negate A/B (bits 13/14) allowed
    section: str = SEC_IDESC


KIND_TYPES = {
    "f16": KindTypes({"f16": 0, "bf16": 1}, {"f16": 0, "f32": 1}, True, True),
    "tf32": KindTypes({"tf32": 2}, {"f32": 1}, True, True),
    "f8f6f4": KindTypes({"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}, {"f16": 0, "f32": 1},
                        False, True),
    "i8": KindTypes({"u8": 0, "s8": 1}, {"s32": 2}, False, False),
}


@dataclass(frozen=True)
class ShapeRow:
    kinds: tuple
    cta_group: int
    Ms: tuple
    Ns: tuple           # every legal N
    limit: str          # the rule in words
    section: str = SEC_SHAPE


def _steps(lo, hi, step):
    return tuple(range(lo, hi + 1, step))


SHAPES = (
    ShapeRow(("f16", "tf32", "f8f6f4"), 1, (64, 128), _steps(8, 256, 8), "N a multiple of 8 in [8, 256]"),
    ShapeRow(("f16", "tf32", "f8f6f4"), 2, (128, 256), _steps(16, 256, 16), "N a multiple of 16 in [16, 256]"),
    ShapeRow(("i8",), 1, (64, 128), (8, 16, 24, 32) + _steps(48, 256, 16),
             "N = 8, 16, 24, 32 or a multiple of 16 in [48, 256]"),
    # The ISA's i8 cta_group::2 row was not re-read for this table; it follows CuTe's
    # SM100_MMA_S8_2x1SM_SS (N a multiple of 32), the stricter of the two readings.
    ShapeRow(("i8",), 2, (128, 256), _steps(32, 256, 32), "N a multiple of 32 in [32, 256]",
             SEC_SHAPE + "; CuTe SM100_MMA_S8_2x1SM_SS"),
)

# (kind, major) -> layouts an operand may use. tf32 MN-major: only the 128B swizzle with 32B
# atomicity (SEC_TRANSPOSE). K-major never takes 128B_base32B (CuTe make_umma_desc static_assert:
# "SWIZZLE_128B_BASE32B is invalid for Major-K"). bwlab has no row for 128B_base32B with 16- or
# 8-bit operands and none for MN-major 6-/4-bit operands: those are refused as not in the table.
_SWIZZLES = MODES
MAJOR_LAYOUTS = {
    ("f16", "K"): (_SWIZZLES, SEC_SMEM_LAYOUT),
    ("f16", "MN"): (_SWIZZLES, SEC_SMEM_LAYOUT),
    ("tf32", "K"): (_SWIZZLES, SEC_SMEM_LAYOUT),
    ("tf32", "MN"): (("128B_base32B",), SEC_TRANSPOSE + ": .kind::tf32 MN-major needs the 128B swizzle "
                                        "with 32B atomicity"),
    ("f8f6f4", "K"): (_SWIZZLES, SEC_SMEM_LAYOUT),
    ("f8f6f4", "MN"): (_SWIZZLES, SEC_SMEM_LAYOUT),
    ("i8", "K"): (_SWIZZLES, SEC_SMEM_LAYOUT),
    ("i8", "MN"): (_SWIZZLES, SEC_SMEM_LAYOUT),
}
# cta_group -> N step for an MN-major (transposed) B of 8-bit elements.
TRANSPOSED_B = {1: 16, 2: 32}
_EIGHT_BIT = ("e4m3", "e5m2", "s8", "u8")
_SUB_BYTE = ("e2m3", "e3m2", "e2m1")

# CuTe's stricter rules (not the ISA's): (kind, cta_group) -> (legal Ns, limit, source).
CUTE_RULES = {
    ("i8", 1): (tuple(n for n in _steps(8, 256, 8) if n == 8 or n % 16 == 0),
                "N = 8 or a multiple of 16 in [16, 256]",
                "CuTe SM100_MMA_S8_SS static_assert (include/cute/arch/mma_sm100_umma.hpp)"),
}

# The swizzling-mode field of each descriptor encoding: code -> layout.
DESC_LAYOUT_CODES = {
    "sm100": ({0: "none", 1: "128B_base32B", 2: "128B", 4: "64B", 6: "32B"}, 3, 61,
              SEC_DESC + ": bits 61-63; values 3, 5 and 7 are invalid"),
    "sm90": ({0: "none", 1: "128B", 2: "64B", 3: "32B"}, 2, 62, SEC_WGMMA_DESC + ": bits 62-63"),
}


def kind_of_types(a: str, b: str) -> str:
    """The tcgen05.mma .kind that multiplies A of type `a` by B of type `b`."""
    for kind, row in KIND_TYPES.items():
        if a in row.ab and b in row.ab:
            return kind
    names = sorted({t for row in KIND_TYPES.values() for t in row.ab})
    if a not in names or b not in names:
        raise MmaRuleError(f"A/B types must be among {names}, got {a!r} and {b!r}", SEC_IDESC)
    raise MmaRuleError(f"no tcgen05.mma kind multiplies {a} by {b}: kind::f16 takes f16/bf16, "
                       f"kind::tf32 tf32, kind::f8f6f4 e4m3/e5m2/e2m3/e3m2/e2m1, kind::i8 s8/u8", SEC_IDESC)


def require_mma_types(a: str, b: str, d: str, negate_a: bool = False, negate_b: bool = False) -> str:
    """The kind of A x B -> D, or MmaRuleError naming the type rule."""
    kind = kind_of_types(a, b)
    row = KIND_TYPES[kind]
    if row.same_ab and a != b:
        # The ISA's kind::f16 rows list f16 and bf16 as one "atype/btype" column; bwlab reads that as
        # one type for both operands (as wgmma's .f32.bf16.bf16 spells out) and refuses a mix.
        raise MmaRuleError(f"kind::{kind} multiplies f16 by f16 or bf16 by bf16, got {a} x {b}"
                           if kind == "f16" else f"kind::{kind} takes one A/B type, got {a} x {b}", row.section)
    if d not in row.d:
        raise MmaRuleError(f"kind::{kind} with {a} x {b} accumulates into {sorted(row.d)}, got {d!r}", row.section)
    if kind == "f16" and d == "f16" and a != "f16":
        raise MmaRuleError("kind::f16 with an f16 accumulator takes f16 inputs only (bf16 needs f32 D)", row.section)
    if (negate_a or negate_b) and not row.negate:
        raise MmaRuleError("negate A/B is valid only for kind::f16, kind::tf32 and kind::f8f6f4, not "
                           f"kind::{kind}", SEC_TRANSPOSE)
    return kind


def legal_n(kind: str, cta_group: int) -> tuple:
    for row in SHAPES:
        if kind in row.kinds and row.cta_group == cta_group:
            return row.Ns
    raise MmaRuleError(f"no shape row for kind::{kind} cta_group::{cta_group}", SEC_SHAPE)


def require_mma_shape(kind: str, M: int, N: int, cta_group: int = 1) -> None:
    """MmaRuleError unless M x N is a dense tcgen05.mma shape of `kind` and `cta_group` (ISA table)."""
    if kind not in KIND_TYPES:
        raise MmaRuleError(f"kind must be one of {list(KIND_TYPES)}, got {kind!r}", SEC_IDESC)
    if cta_group not in (1, 2):
        raise MmaRuleError(f"cta_group is 1 or 2, got {cta_group}", SEC_SHAPE)
    row = next(r for r in SHAPES if kind in r.kinds and r.cta_group == cta_group)
    if M not in row.Ms:
        raise MmaRuleError(f"tcgen05.mma.cta_group::{cta_group} takes M in {row.Ms}, got M = {M}", row.section)
    if N not in row.Ns:
        raise MmaRuleError(f"kind::{kind} cta_group::{cta_group} with M = {M} needs {row.limit}, got N = {N}",
                           row.section)


def require_mma_majors(kind: str, N: int, cta_group: int, a_type: str, b_type: str, a_major: str,
                       b_major: str, a_layout: str | None = None, b_layout: str | None = None) -> None:
    """The major (transpose) and SMEM layout rules; layouts None skips the layout rows."""
    for name, m in (("a_major", a_major), ("b_major", b_major)):
        if m not in ("K", "MN"):
            raise MmaRuleError(f"{name} must be 'K' or 'MN', got {m!r}", SEC_TRANSPOSE)
    for op, t, major, layout in (("A", a_type, a_major, a_layout), ("B", b_type, b_major, b_layout)):
        if major == "MN" and t in _SUB_BYTE:
            raise MmaRuleError(f"{op} of type {t} MN-major: bwlab's table has no row for transposed "
                               "6-/4-bit operands", SEC_TRANSPOSE)
        if layout is None:
            continue
        if layout not in LAYOUTS:
            raise MmaRuleError(f"{op} layout must be one of {list(LAYOUTS)}, got {layout!r}", SEC_SMEM_LAYOUT)
        allowed, section = MAJOR_LAYOUTS[(kind, major)]
        if layout == "128B_base32B" and major == "MN" and kind != "tf32":
            raise MmaRuleError(f"{op} of kind::{kind} in 128B_base32B: bwlab's table has a row for this "
                               "layout with kind::tf32 MN-major only (not modelled for other kinds)", SEC_TRANSPOSE)
        if layout not in allowed:
            raise MmaRuleError(f"kind::{kind} {op} {major}-major takes the SMEM layouts {list(allowed)}, "
                               f"got {layout}", section)
    if b_major == "MN" and b_type in _EIGHT_BIT and N % TRANSPOSED_B[cta_group]:
        raise MmaRuleError(f"an MN-major (transposed) 8-bit B with cta_group::{cta_group} needs N a multiple "
                           f"of {TRANSPOSED_B[cta_group]}, got N = {N}", SEC_SHAPE + ", transposed 8-bit B")


def require_mma(a_type: str, b_type: str, d_type: str, M: int, N: int, cta_group: int = 1,
                a_major: str = "K", b_major: str = "K", a_layout: str | None = None,
                b_layout: str | None = None, negate_a: bool = False, negate_b: bool = False) -> str:
    """Every ISA rule of one dense tcgen05.mma; returns its kind or raises MmaRuleError."""
    kind = require_mma_types(a_type, b_type, d_type, negate_a, negate_b)
    require_mma_shape(kind, M, N, cta_group)
    require_mma_majors(kind, N, cta_group, a_type, b_type, a_major, b_major, a_layout, b_layout)
    return kind


def require_mma_cute(kind: str, M: int, N: int, cta_group: int = 1) -> None:
    """CuTe's stricter shape rules (after the ISA's): MmaRuleError naming the CuTe source."""
    rule = CUTE_RULES.get((kind, cta_group))
    if rule and N not in rule[0]:
        raise MmaRuleError(f"CuTe's kind::{kind} cta_group::{cta_group} atom needs {rule[1]}, got N = {N} "
                           "(the ISA allows it)", rule[2])


def legal_mma_configs(all_types: bool = False):
    """Every legal (kind, a_type, b_type, d_type, cta_group, M, N, a_major, b_major, a_layout,
    b_layout) of the tables: every kind x cta_group x M x N x A/B major x A/B layout, with the first
    A/B and D type of each kind (`all_types`: every type pair and D type, a much longer walk)."""
    for kind, kt in KIND_TYPES.items():
        pairs = [(a, b) for a, b in product(kt.ab, kt.ab) if not kt.same_ab or a == b]
        types = [(a, b, d) for (a, b), d in product(pairs, kt.d)
                 if not (kind == "f16" and d == "f16" and a != "f16")]
        for a, b, d in (types if all_types else types[:1]):
            for row in (r for r in SHAPES if kind in r.kinds):
                for M, N, am, bm in product(row.Ms, row.Ns, ("K", "MN"), ("K", "MN")):
                    if (am == "MN" and a in _SUB_BYTE) or (bm == "MN" and b in _SUB_BYTE):
                        continue
                    if bm == "MN" and b in _EIGHT_BIT and N % TRANSPOSED_B[row.cta_group]:
                        continue
                    for al, bl in product(MAJOR_LAYOUTS[(kind, am)][0], MAJOR_LAYOUTS[(kind, bm)][0]):
                        yield kind, a, b, d, row.cta_group, M, N, am, bm, al, bl
