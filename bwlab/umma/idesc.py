"""The tcgen05.mma instruction descriptor (32 bits) and the rules of its shape and types.

PTX ISA: tcgen05 "Instruction descriptor" (Instruction Descriptor Format for .kind::f16, .kind::tf32,
.kind::f8f6f4 and .kind::i8) and "Matrix Shape" (Table 39: valid M x N x K per kind and cta_group); the rules live in
`bwlab.umma.rules`, one table per ISA table.
CuTe: `UMMA::InstrDescriptor` and `UMMA::make_instr_desc` in include/cute/arch/mma_sm100_desc.hpp.
"""
from __future__ import annotations

from dataclasses import dataclass

from .rules import KIND_TYPES, MmaRuleError, require_mma, require_mma_shape, kind_of_types

__all__ = ["KINDS", "kind_of", "require_mma_shape", "InstrDesc", "make_instr_desc", "decode_instr_desc",
           "MmaRuleError"]

# kind -> (A/B type codes, D type codes): the PTX ISA instruction-descriptor table (rules.KIND_TYPES).
KINDS = {kind: (row.ab, row.d) for kind, row in KIND_TYPES.items()}


def kind_of(a: str, b: str) -> str:
    """The tcgen05.mma .kind that multiplies A of type `a` by B of type `b`."""
    return kind_of_types(a, b)


@dataclass(frozen=True)
class InstrDesc:
    """The fields of a 32-bit tcgen05.mma instruction descriptor (kind::f16/tf32/f8f6f4/i8)."""

    kind: str
    a_type: str
    b_type: str
    d_type: str
    M: int
    N: int
    a_major: str = "K"
    b_major: str = "K"
    negate_a: bool = False
    negate_b: bool = False
    saturate: bool = False
    sparse: bool = False
    sparse_id2: int = 0
    max_shift: int = 0

    def encode(self) -> int:
        ab, d = KINDS[self.kind]
        return (self.sparse_id2 | (int(self.sparse) << 2) | (int(self.saturate) << 3) |
                (d[self.d_type] << 4) | (ab[self.a_type] << 7) | (ab[self.b_type] << 10) |
                (int(self.negate_a) << 13) | (int(self.negate_b) << 14) |
                ((self.a_major == "MN") << 15) | ((self.b_major == "MN") << 16) |
                ((self.N >> 3) << 17) | ((self.M >> 4) << 24) | (self.max_shift << 30))

    def fields(self) -> list[tuple[str, str, int, str]]:
        """(bits, name, value, meaning) rows for a field table."""
        ab, d = KINDS[self.kind]
        return [
            ("0-1", "sparsity selector", self.sparse_id2, "sparse only (dense: 0)"),
            ("2", "sparsity", int(self.sparse), "dense" if not self.sparse else "sparse"),
            ("3", "saturate", int(self.saturate), "kind::i8 only"),
            ("4-5", "D format", d[self.d_type], self.d_type),
            ("7-9", "A format", ab[self.a_type], self.a_type),
            ("10-12", "B format", ab[self.b_type], self.b_type),
            ("13", "negate A", int(self.negate_a), "A -> -A" if self.negate_a else "no"),
            ("14", "negate B", int(self.negate_b), "B -> -B" if self.negate_b else "no"),
            ("15", "transpose A (major)", int(self.a_major == "MN"), f"{self.a_major}-major"),
            ("16", "transpose B (major)", int(self.b_major == "MN"), f"{self.b_major}-major"),
            ("17-22", "N >> 3", self.N >> 3, f"N = {self.N}"),
            ("24-28", "M >> 4", self.M >> 4, f"M = {self.M}"),
            ("30-31", "max shift (.ws only)", self.max_shift, "0"),
        ]


def make_instr_desc(a: str, b: str, c: str, M: int, N: int, a_major: str = "K", b_major: str = "K",
                    negate_a: bool = False, negate_b: bool = False, cta_group: int = 1) -> int:
    """The 32-bit instruction descriptor of tcgen05.mma (dense, no .ws).

    `a`, `b`: "f16" "bf16" "tf32" "e4m3" "e5m2" "e2m3" "e3m2" "e2m1" "s8" "u8"; `c` (the D type):
    "f32" "f16" "s32". Example (CuTe make_instr_desc<half_t, half_t, float, 128, 256, K, K>): 0x08400010.
    Raises MmaRuleError (a ValueError) naming the broken rule of `bwlab.umma.rules`: types per kind,
    M per cta_group, N per kind, the N step of a transposed 8-bit B. (The SMEM layout rules need the
    descriptors too: `rules.require_mma(..., a_layout, b_layout)`, which UmmaCase applies.)
    """
    kind = require_mma(a, b, c, M, N, cta_group, a_major, b_major, negate_a=negate_a, negate_b=negate_b)
    return InstrDesc(kind, a, b, c, M, N, a_major, b_major, bool(negate_a), bool(negate_b)).encode()


def decode_instr_desc(idesc: int, kind: str = "f16") -> InstrDesc:
    """Named fields of a 32-bit instruction descriptor. The type codes mean different types per
    kind (code 0 is f16, e4m3 or u8), so say which `kind` the instruction is."""
    idesc = int(idesc)
    if not 0 <= idesc < (1 << 32):
        raise ValueError(f"an instruction descriptor is 32 bits, got {idesc:#x}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    ab, d = KINDS[kind]
    inv_ab = {v: k for k, v in ab.items()}
    inv_d = {v: k for k, v in d.items()}
    codes = {"A": (idesc >> 7) & 7, "B": (idesc >> 10) & 7}
    for op, code in codes.items():
        if code not in inv_ab:
            raise ValueError(f"{op} format code {code} is not a kind::{kind} type ({ab})")
    dcode = (idesc >> 4) & 3
    if dcode not in inv_d:
        raise ValueError(f"D format code {dcode} is not a kind::{kind} accumulator ({d})")
    return InstrDesc(kind, inv_ab[codes["A"]], inv_ab[codes["B"]], inv_d[dcode],
                     ((idesc >> 24) & 0x1F) << 4, ((idesc >> 17) & 0x3F) << 3,
                     "MN" if (idesc >> 15) & 1 else "K", "MN" if (idesc >> 16) & 1 else "K",
                     bool((idesc >> 13) & 1), bool((idesc >> 14) & 1), bool((idesc >> 3) & 1),
                     bool((idesc >> 2) & 1), idesc & 3, (idesc >> 30) & 3)
