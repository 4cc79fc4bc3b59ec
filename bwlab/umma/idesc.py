"""The tcgen05.mma instruction descriptor (32 bits) and the rules of its shape and types.

PTX ISA: tcgen05 "Instruction descriptor" (Instruction Descriptor Format for .kind::f16, .kind::tf32,
.kind::f8f6f4 and .kind::i8) and "Matrix Shape" (Table 39: valid M x N x K per kind and cta_group).
CuTe: `UMMA::InstrDescriptor` and `UMMA::make_instr_desc` in include/cute/arch/mma_sm100_desc.hpp.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KINDS", "kind_of", "check_mma_shape", "InstrDesc", "make_instr_desc", "decode_instr_desc"]

# kind -> (A/B type codes, D type codes). Codes from the PTX ISA instruction-descriptor table.
KINDS = {
    "f16": ({"f16": 0, "bf16": 1}, {"f16": 0, "f32": 1}),
    "tf32": ({"tf32": 2}, {"f32": 1}),
    "f8f6f4": ({"e4m3": 0, "e5m2": 1}, {"f16": 0, "f32": 1}),
    "i8": ({"u8": 0, "s8": 1}, {"s32": 2}),
}


def kind_of(a: str, b: str) -> str:
    """The tcgen05.mma .kind that multiplies A of type `a` by B of type `b`."""
    for kind, (ab, _) in KINDS.items():
        if a in ab and b in ab:
            return kind
    names = sorted({t for ab, _ in KINDS.values() for t in ab})
    if a not in names or b not in names:
        raise ValueError(f"A/B types must be among {names}, got {a!r} and {b!r}")
    raise ValueError(f"no tcgen05.mma kind multiplies {a} by {b}: kind::f16 takes f16/bf16, "
                     f"kind::tf32 tf32, kind::f8f6f4 e4m3/e5m2, kind::i8 s8/u8")


def check_mma_shape(kind: str, M: int, N: int, cta_group: int = 1) -> None:
    """Raise ValueError unless M x N is a dense tcgen05.mma shape for `kind` and `cta_group`.

    PTX ISA 9.7.16.2.1 (Matrix Shape, no .ws, dense): cta_group::1 takes M = 64 or 128 with N a
    multiple of 8 in [8, 256]; cta_group::2 takes M = 128 or 256 with N a multiple of 16 in
    [16, 256]. kind::i8 follows CuTe's SM100_MMA_S8_SS / _2x1SM_SS: N = 8 or a multiple of 16 in
    [16, 256] (one CTA), a multiple of 32 in [32, 256] (two). (CuTe's TS atoms, with A in TMEM, and
    older CuTe SS atoms also require N % 16 for M = 128 with one CTA; the current ISA table and CuTe's
    SS atoms allow steps of 8, and both operands here come from SMEM.)
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {list(KINDS)}, got {kind!r}")
    if cta_group not in (1, 2):
        raise ValueError(f"cta_group is 1 or 2, got {cta_group}")
    ms = (64, 128) if cta_group == 1 else (128, 256)
    if M not in ms:
        raise ValueError(f"tcgen05.mma.cta_group::{cta_group} takes M in {ms} (PTX ISA, Matrix "
                         f"Shape), got M = {M}")
    if kind == "i8":
        ok = (N == 8 or (N % 16 == 0 and 16 <= N <= 256)) if cta_group == 1 else \
             (N % 32 == 0 and 32 <= N <= 256)
        rule = ("N = 8 or a multiple of 16 in [16, 256]" if cta_group == 1
                else "N a multiple of 32 in [32, 256]")
    else:
        step = 8 if cta_group == 1 else 16
        ok = N % step == 0 and step <= N <= 256
        rule = f"N a multiple of {step} in [{step}, 256]"
    if not ok:
        raise ValueError(f"kind::{kind} cta_group::{cta_group} with M = {M} needs {rule} "
                         f"(PTX ISA, Matrix Shape), got N = {N}")


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
            ("0-1", "sparsity selector", self.sparse_id2, "sparse metadata id (dense: 0)"),
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

    `a`, `b`: "f16" "bf16" "tf32" "e4m3" "e5m2" "s8" "u8"; `c` (the D type): "f32" "f16" "s32".
    Example (CuTe make_instr_desc<half_t, half_t, float, 128, 256, K, K>): 0x08400010.
    Raises ValueError naming the broken rule: types per kind, M per cta_group, N step per kind.
    """
    kind = kind_of(a, b)
    ab, d = KINDS[kind]
    if kind == "f16" and a != b:
        # The ISA's kind::f16 rows list f16 and bf16 as one "atype/btype" column; bwlab reads that as
        # one type for both operands (as wgmma's .f32.bf16.bf16 spells out) and refuses a mix.
        raise ValueError(f"kind::f16 multiplies f16 by f16 or bf16 by bf16, got {a} x {b}")
    if c not in d:
        raise ValueError(f"kind::{kind} with {a} x {b} accumulates into {sorted(d)}, got {c!r}")
    if kind == "f16" and c == "f16" and a != "f16":
        raise ValueError("kind::f16 with an f16 accumulator takes f16 inputs only (bf16 needs f32 D)")
    for name, m in (("a_major", a_major), ("b_major", b_major)):
        if m not in ("K", "MN"):
            raise ValueError(f"{name} must be 'K' or 'MN', got {m!r}")
    if kind == "i8" and (negate_a or negate_b):
        raise ValueError("negate A/B is valid only for kind::f16, kind::tf32 and kind::f8f6f4, not kind::i8")
    check_mma_shape(kind, M, N, cta_group)
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
