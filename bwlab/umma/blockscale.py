"""Block-scaled tcgen05.mma: the data path of kind::mxf8f6f4, kind::mxf4 and kind::mxf4nvf4.

    D (M x N, f32, TMEM) (+)= (A * scale_A) . (B * scale_B)^T

A and B come from shared memory through SMEM descriptors, as for every tcgen05.mma; the scale factors come
from Tensor Memory, where `tcgen05.cp` put them. This module models every step of that trip and the rules of
each, one function per step:

* the instruction descriptor of the block-scaled kinds (`BlockScaledIdesc`, `make_block_scaled_idesc`,
  `decode_block_scaled_idesc`): PTX ISA tcgen05 "Instruction descriptor", Table 46 (.kind::mxf8f6f4) and
  Table 47 (.kind::mxf4, .kind::mxf4nvf4). It differs from kind::f16's: bits 4-5 hold the scale factor B ID,
  bit 23 the scale type (0 ue4m3, 1 ue8m0), bits 27-28 M >> 7 (M is 128 or 256), bits 29-30 the scale
  factor A ID; mxf4/mxf4nvf4 have a 2-bit B type, no transpose and a K bit (31; K = 96 is cta_group::2 only);
* `.scale_vectorsize` and the scale types (`require_block_scaled`): PTX ISA tcgen05.mma "Block Scaling",
  Tables 54 and 55 (`.scale_vec::1X` = `.block32` for mxf8f6f4, `::2X` = `.block32` for mxf4 / mxf4nvf4,
  `::4X` = `.block16` for mxf4nvf4, the only one that takes ue4m3), and Table 39's block-scaled rows
  (cta_group::1: M = 128, N a multiple of 8 in [8, 256], f32 D);
* the operands in SMEM (`block_scaled_codes`): 32 bytes of K per row per instruction, as for every kind. An
  8-bit element is a byte; kind::mxf8f6f4's 6- and 4-bit elements sit in the padded forms, 16 elements per
  16 bytes (`.b6x16_p32`: 12 bytes of packed 6-bit codes then 4 of padding; `.b4x16_p64`: 8 bytes of packed
  nibbles then 8 of padding; the TMA's 16U6_ALIGN16B / 16U4_ALIGN16B), so K = 32 is 32 bytes; mxf4 and
  mxf4nvf4 read dense nibbles (two per byte, K = 64 in 32 bytes). 6-/4-bit operands are K-major only here;
* the scale factors' trip GMEM -> SMEM -> TMEM (CUTLASS's layouts, tcgen05.cp, the placement the MMA reads
  and its duplication rule): `bwlab.umma.scales`;
* the MMA (`tcgen05_mma_block_scaled`): D through `bwlab.umma.numerics.mma_numerics` (MMA-Sim's rule).

What is the ISA's text and what is bwlab's reading: the bit layouts, shapes, scale_vec combinations and ID
ranges are the ISA's tables; the position of the padding in the sub-byte forms (the high bytes of each 16)
is bwlab's reading. Nothing here is measured: no sm_100 GPU was available.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hw.dtypes import unpack_fp4, unpack_fp6
from ..hw.tmem import COLUMNS, LANES, decode_address
from .descriptors import decode_smem_desc, descriptor_addresses
from .numerics import mma_numerics, parse_instr
from .rules import MmaRuleError
from .scales import read_tmem_scales

__all__ = ["BLOCK_KINDS", "SCALE_VECS", "SF_IDS", "SCALE_TYPES", "BlockScaledIdesc", "require_block_scaled",
           "make_block_scaled_idesc", "decode_block_scaled_idesc", "scale_vec_of", "scales_per_mma", "block_of",
           "instr_name", "block_scaled_codes", "operand_bytes", "operand_to_bytes", "block_scaled_operands",
           "tcgen05_mma_block_scaled"]

SEC_IDESC = "PTX ISA tcgen05, Instruction descriptor (Table 46 .kind::mxf8f6f4, Table 47 .kind::mxf4/mxf4nvf4)"
SEC_SHAPE = "PTX ISA tcgen05, Matrix Shape (Table 39, block-scaled rows)"
SEC_VEC = "PTX ISA tcgen05.mma, Block Scaling (Tables 54 and 55: scale_vectorsize, kinds and scale types)"
SEC_SFID = "PTX ISA tcgen05.mma, Block Scaling: Scale Factor A ID / Scale Factor B ID"
SEC_SUBBYTE = "PTX ISA tcgen05, packed 6-/4-bit elements in SMEM (.b6x16_p32, .b4x16_p64)"
SEC_TRANSPOSE = "PTX ISA tcgen05, Instruction descriptor: .kind::mxf4/mxf4nvf4 take no transpose"


@dataclass(frozen=True)
class BlockKind:
    types: dict          # A/B type -> code
    K: int               # K of one dense instruction (elements)
    vecs: dict           # scale_vec -> legal scale types
    type_bits: int       # width of the B type field (3, or 2 for mxf4/mxf4nvf4)
    transpose: bool      # transpose A/B allowed
    default_vec: str | None


BLOCK_KINDS = {
    "mxf8f6f4": BlockKind({"e4m3": 0, "e5m2": 1, "e2m3": 3, "e3m2": 4, "e2m1": 5}, 32, {"1X": ("ue8m0",)}, 3,
                          True, "1X"),
    "mxf4": BlockKind({"e2m1": 1}, 64, {"2X": ("ue8m0",)}, 2, False, "2X"),
    "mxf4nvf4": BlockKind({"e2m1": 1}, 64, {"2X": ("ue8m0",), "4X": ("ue8m0", "ue4m3")}, 2, False, None),
}
SCALE_VECS = {"1X": 1, "2X": 2, "4X": 4}         # scale factors per row per instruction
SF_IDS = {"1X": (0, 1, 2, 3), "2X": (0, 2), "4X": (0,)}
SCALE_TYPES = {"ue4m3": 0, "ue8m0": 1}
_SUB_BYTE = {"e2m3": 6, "e3m2": 6, "e2m1": 4}
_SIGN_BIT = {"e4m3": 7, "e5m2": 7, "e2m3": 5, "e3m2": 5, "e2m1": 3}


def _rule(ok, message, section, cls=MmaRuleError):
    if not ok:
        raise cls(message, section)


def scale_vec_of(kind: str, qualifier: str | None) -> str:
    """The .scale_vectorsize of an instruction from its qualifier: 'scale_vec::1X' / '1X', 'block32',
    'block16', or None (kind::mxf8f6f4 defaults to 1X, kind::mxf4 to 2X; kind::mxf4nvf4 must say)."""
    _rule(kind in BLOCK_KINDS, f"the block-scaled kinds are {list(BLOCK_KINDS)}, got kind::{kind}", SEC_VEC)
    bk = BLOCK_KINDS[kind]
    if qualifier is None:
        _rule(bk.default_vec is not None, f"kind::{kind} needs .scale_vec::2X / ::4X (or .block32 / .block16): "
              "it has no default", SEC_VEC)
        return bk.default_vec
    q = qualifier[len("scale_vec::"):] if qualifier.startswith("scale_vec::") else qualifier
    if q == "block16":
        q = "4X"
    elif q == "block32":
        q = "1X" if kind == "mxf8f6f4" else "2X"
    _rule(q in bk.vecs, f"kind::{kind} takes .scale_vec::{' / ::'.join(bk.vecs)}, got {qualifier!r}", SEC_VEC)
    return q


def scales_per_mma(scale_vec: str) -> int:
    return SCALE_VECS[scale_vec]


def block_of(kind: str, scale_vec: str) -> int:
    """K elements one scale factor covers: 32 (1X, 2X) or 16 (4X)."""
    return BLOCK_KINDS[kind].K // SCALE_VECS[scale_vec]


@dataclass(frozen=True)
class BlockScaledIdesc:
    """The fields of a 32-bit instruction descriptor of kind::mxf8f6f4 / mxf4 / mxf4nvf4 (dense)."""

    kind: str
    a_type: str
    b_type: str
    scale_type: str
    M: int
    N: int
    sf_a_id: int = 0
    sf_b_id: int = 0
    a_major: str = "K"
    b_major: str = "K"
    negate_a: bool = False
    negate_b: bool = False

    def encode(self) -> int:
        bk = BLOCK_KINDS[self.kind]
        return ((self.sf_b_id << 4) | (bk.types[self.a_type] << 7) | (bk.types[self.b_type] << 10) |
                (int(self.negate_a) << 13) | (int(self.negate_b) << 14) | ((self.a_major == "MN") << 15) |
                ((self.b_major == "MN") << 16) | ((self.N >> 3) << 17) | (SCALE_TYPES[self.scale_type] << 23) |
                ((self.M >> 7) << 27) | (self.sf_a_id << 29))

    def fields(self) -> list[tuple[str, str, int, str]]:
        """(bits, name, value, meaning) rows for a field table."""
        bk = BLOCK_KINDS[self.kind]
        bb = "10-12" if bk.type_bits == 3 else "10-11"
        return [
            ("2", "sparsity", 0, "dense"),
            ("4-5", "scale factor B ID", self.sf_b_id, f"byte {self.sf_b_id} of each TMEM word of scale_B"),
            ("7-9", "A format", bk.types[self.a_type], self.a_type),
            (bb, "B format", bk.types[self.b_type], self.b_type),
            ("13", "negate A", int(self.negate_a), "A -> -A" if self.negate_a else "no"),
            ("14", "negate B", int(self.negate_b), "B -> -B" if self.negate_b else "no"),
            ("15", "transpose A (major)", int(self.a_major == "MN"), f"{self.a_major}-major"),
            ("16", "transpose B (major)", int(self.b_major == "MN"), f"{self.b_major}-major"),
            ("17-22", "N >> 3", self.N >> 3, f"N = {self.N}"),
            ("23", "scale type", SCALE_TYPES[self.scale_type], self.scale_type),
            ("27-28", "M >> 7", self.M >> 7, f"M = {self.M}"),
            ("29-30", "scale factor A ID", self.sf_a_id, f"byte {self.sf_a_id} of each TMEM word of scale_A"),
        ]


def require_block_scaled(kind: str, a_type: str, b_type: str, scale_type: str, scale_vec: str, M: int, N: int,
                         sf_a_id: int = 0, sf_b_id: int = 0, a_major: str = "K", b_major: str = "K",
                         cta_group: int = 1) -> None:
    """Every ISA rule of one dense block-scaled tcgen05.mma, or MmaRuleError naming the table it breaks."""
    _rule(kind in BLOCK_KINDS, f"the block-scaled kinds are {list(BLOCK_KINDS)}, got kind::{kind}", SEC_VEC)
    bk = BLOCK_KINDS[kind]
    for op, t in (("A", a_type), ("B", b_type)):
        _rule(t in bk.types, f"kind::{kind} takes A/B of {list(bk.types)}, got {op} = {t!r}", SEC_IDESC)
    _rule(scale_vec in bk.vecs, f"kind::{kind} takes .scale_vec::{' / ::'.join(bk.vecs)}, got {scale_vec!r}",
          SEC_VEC)
    _rule(scale_type in bk.vecs[scale_vec], f"kind::{kind} with .scale_vec::{scale_vec} takes "
          f"{' or '.join(bk.vecs[scale_vec])} scale factors, got {scale_type!r}"
          + (" (ue4m3 scales need .scale_vec::4X / .block16)" if scale_type == "ue4m3" else ""), SEC_VEC)
    _rule(cta_group == 1, f"bwlab models the block-scaled kinds with cta_group::1 only, got cta_group::{cta_group}",
          SEC_SHAPE)
    _rule(M == 128, f"block-scaled tcgen05.mma.cta_group::1 takes M = 128, got M = {M}", SEC_SHAPE)
    _rule(N % 8 == 0 and 8 <= N <= 256, f"block-scaled tcgen05.mma.cta_group::1 takes N a multiple of 8 in "
          f"[8, 256], got N = {N}", SEC_SHAPE)
    for op, sid in (("A", sf_a_id), ("B", sf_b_id)):
        what = {"1X": "the byte", "2X": "the half word", "4X": "all four bytes"}[scale_vec]
        _rule(sid in SF_IDS[scale_vec], f"the scale factor {op} ID with .scale_vec::{scale_vec} is one of "
              f"{SF_IDS[scale_vec]} (it selects {what} of each 32-bit TMEM word that holds this instruction's "
              f"scales), got {sid}", SEC_SFID)
    for op, t, major in (("A", a_type, a_major), ("B", b_type, b_major)):
        _rule(major in ("K", "MN"), f"{op} major is 'K' or 'MN', got {major!r}", SEC_IDESC)
        if major == "MN":
            _rule(bk.transpose, f"kind::{kind} takes no transpose: {op} must be K-major", SEC_TRANSPOSE)
            _rule(t not in _SUB_BYTE, f"{op} of type {t} MN-major: bwlab's table has no row for transposed "
                  "6-/4-bit operands", SEC_TRANSPOSE)


def make_block_scaled_idesc(kind: str, a_type: str, b_type: str, scale_type: str, N: int, M: int = 128,
                            scale_vec: str | None = None, sf_a_id: int = 0, sf_b_id: int = 0, a_major: str = "K",
                            b_major: str = "K", negate_a: bool = False, negate_b: bool = False) -> int:
    """The 32-bit instruction descriptor of a dense block-scaled tcgen05.mma.cta_group::1; raises MmaRuleError
    naming the broken rule. `scale_vec` as `scale_vec_of` reads it (default: the kind's own, or 4X for
    kind::mxf4nvf4 with ue4m3 scales)."""
    if scale_vec is None and kind == "mxf4nvf4":
        scale_vec = "4X" if scale_type == "ue4m3" else None
    vec = scale_vec_of(kind, scale_vec)
    require_block_scaled(kind, a_type, b_type, scale_type, vec, M, N, sf_a_id, sf_b_id, a_major, b_major)
    return BlockScaledIdesc(kind, a_type, b_type, scale_type, M, N, sf_a_id, sf_b_id, a_major, b_major,
                            bool(negate_a), bool(negate_b)).encode()


def decode_block_scaled_idesc(idesc: int, kind: str) -> BlockScaledIdesc:
    """Named fields of a block-scaled instruction descriptor; MmaRuleError for a reserved bit set, a type code
    the kind does not have, or what bwlab does not model (sparsity, K = 96)."""
    idesc = int(idesc)
    _rule(0 <= idesc < 1 << 32, f"an instruction descriptor is 32 bits, got {idesc:#x}", SEC_IDESC)
    _rule(kind in BLOCK_KINDS, f"the block-scaled kinds are {list(BLOCK_KINDS)}, got kind::{kind}", SEC_IDESC)
    bk = BLOCK_KINDS[kind]
    reserved = {0: "0-1", 1: "0-1", 3: "3", 6: "6", 24: "24-26", 25: "24-26", 26: "24-26"}
    if bk.type_bits == 2:
        reserved[12] = "12"
    else:
        reserved[31] = "31"
    for bit, name in reserved.items():
        _rule(not (idesc >> bit) & 1, f"bit {bit} of a kind::{kind} instruction descriptor is reserved (bits {name} "
              f"must be 0), got {idesc:#010x}", SEC_IDESC)
    _rule(not (idesc >> 2) & 1, "sparse block-scaled MMAs (bit 2) are not modelled by bwlab", SEC_IDESC)
    if bk.type_bits == 2:
        _rule(not (idesc >> 31) & 1, "bit 31 (K = 96) is the cta_group::2 form, not modelled by bwlab", SEC_SHAPE)
    inv = {v: k for k, v in bk.types.items()}
    ca, cb = (idesc >> 7) & 7, (idesc >> 10) & ((1 << bk.type_bits) - 1)
    for op, code in (("A", ca), ("B", cb)):
        _rule(code in inv, f"{op} format code {code} is not a kind::{kind} type ({bk.types})", SEC_IDESC)
    stype = "ue8m0" if (idesc >> 23) & 1 else "ue4m3"
    return BlockScaledIdesc(kind, inv[ca], inv[cb], stype, ((idesc >> 27) & 3) << 7, ((idesc >> 17) & 0x3F) << 3,
                            (idesc >> 29) & 3, (idesc >> 4) & 3, "MN" if (idesc >> 15) & 1 else "K",
                            "MN" if (idesc >> 16) & 1 else "K", bool((idesc >> 13) & 1), bool((idesc >> 14) & 1))


def instr_name(f: BlockScaledIdesc, scale_vec: str) -> str:
    """MMA-Sim's name of the instruction (what `mma_numerics` takes)."""
    k = BLOCK_KINDS[f.kind].K
    return f"m{f.M}n{f.N}k{k}.kind::{f.kind}.block{block_of(f.kind, scale_vec)}.f32.{f.a_type}.{f.b_type}.{f.scale_type}"


# ------------------------------------------------------------------------------------------------
# the operands and the MMA
# ------------------------------------------------------------------------------------------------

def operand_bytes(desc: int, major: str, mn: int) -> np.ndarray:
    """(mn, 32) SMEM byte addresses one block-scaled instruction reads for an operand: 32 bytes of K per row."""
    return descriptor_addresses(decode_smem_desc(desc, "sm100"), major, "e4m3", mn, 32)


def block_scaled_codes(smem, desc: int, major: str, dtype: str, kind: str, mn: int) -> np.ndarray:
    """The (mn, K) element codes (one per byte) of an operand of a block-scaled instruction read from SMEM."""
    addr = operand_bytes(desc, major, mn)
    smem = np.asarray(smem, np.uint8)
    if addr.max() >= smem.size:
        raise ValueError(f"the descriptor reads up to byte {int(addr.max())}, past the {smem.size}-byte shared memory")
    raw = smem[addr]
    if kind in ("mxf4", "mxf4nvf4"):
        return unpack_fp4(raw)                        # dense nibbles: K = 64 in 32 bytes
    if dtype in _SUB_BYTE:                            # padded: 16 codes per 16 bytes
        chunks = raw.reshape(mn, 2, 16)
        codes = unpack_fp6(chunks[..., :12]) if _SUB_BYTE[dtype] == 6 else unpack_fp4(chunks[..., :8])
        return codes.reshape(mn, 32)
    return raw


def block_scaled_operands(smem, tmem, a_desc: int, b_desc: int, idesc: int, sfa_tmem: int, sfb_tmem: int,
                          kind: str, scale_vec: str | None = None):
    """What one block-scaled MMA reads: (A codes M x K, B codes N x K, scale_A M x n, scale_B N x n, the idesc
    fields, the scale_vec, MMA-Sim's instruction name). Negation is applied to the codes (sign bit)."""
    f = decode_block_scaled_idesc(idesc, kind)
    vec = scale_vec_of(kind, scale_vec)
    require_block_scaled(kind, f.a_type, f.b_type, f.scale_type, vec, f.M, f.N, f.sf_a_id, f.sf_b_id,
                         f.a_major, f.b_major)
    a = block_scaled_codes(smem, a_desc, f.a_major, f.a_type, kind, f.M)
    b = block_scaled_codes(smem, b_desc, f.b_major, f.b_type, kind, f.N)
    if f.negate_a:
        a = a ^ np.uint8(1 << _SIGN_BIT[f.a_type])
    if f.negate_b:
        b = b ^ np.uint8(1 << _SIGN_BIT[f.b_type])
    n = SCALE_VECS[vec]
    sfa = read_tmem_scales(tmem, sfa_tmem, f.M, n, f.sf_a_id, "A")
    sfb = read_tmem_scales(tmem, sfb_tmem, f.N, n, f.sf_b_id, "B")
    return a, b, sfa, sfb, f, vec, instr_name(f, vec)


def tcgen05_mma_block_scaled(cta, d_tmem: int, a_desc: int, b_desc: int, idesc: int, sfa_tmem: int,
                             sfb_tmem: int, accumulate: bool, kind: str, scale_vec: str | None = None) -> None:
    """Execute `tcgen05.mma.cta_group::1.kind::{kind}.block_scale{.scale_vec} [d], a_desc, b_desc, idesc,
    [sfa], [sfb], p` on `cta` (a `bwlab.umma.model.CtaState`): D (layout D: lane m, column n) = A.B^T with
    scales (+ D when `accumulate`), through `mma_numerics`."""
    a, b, sfa, sfb, f, vec, name = block_scaled_operands(cta.smem, cta.tmem, a_desc, b_desc, idesc, sfa_tmem,
                                                         sfb_tmem, kind, scale_vec)
    lane0, col0 = decode_address(d_tmem)
    _rule(lane0 == 0, f"d_tmem lane must be 0 for M = 128 (layout D), got {lane0}", SEC_SHAPE)
    _rule(col0 + f.N <= COLUMNS, f"D needs columns [{col0}, {col0 + f.N}) but TMEM has {COLUMNS}", SEC_SHAPE)
    c = cta.tmem[:LANES, col0:col0 + f.N].copy() if accumulate else np.zeros((f.M, f.N), np.uint32)
    d = mma_numerics(parse_instr(name), a, b, c, sfa, sfb)
    cta.tmem[:LANES, col0:col0 + f.N] = d.view(np.uint32)
    cta.issued += 1


def operand_to_bytes(codes, dtype: str, kind: str) -> np.ndarray:
    """(mn, K) element codes -> the (mn, K bytes) row bytes of the SMEM form a block-scaled kind reads (K-major):
    bytes for 8-bit types, dense nibbles for mxf4/mxf4nvf4, the padded 16-per-16-bytes forms for kind::mxf8f6f4's
    6- and 4-bit types (`block_scaled_codes` reads them back)."""
    from ..hw.dtypes import pack_fp4, pack_fp6
    codes = np.asarray(codes, np.uint8)
    mn, K = codes.shape
    if kind in ("mxf4", "mxf4nvf4"):
        return pack_fp4(codes)
    if dtype not in _SUB_BYTE:
        return codes.copy()
    _rule(K % 16 == 0, f"the padded {dtype} form holds 16 codes per 16 bytes: K must be a multiple of 16, got {K}",
          SEC_SUBBYTE)
    g = codes.reshape(mn, K // 16, 16)
    packed = pack_fp6(g) if _SUB_BYTE[dtype] == 6 else pack_fp4(g)
    out = np.zeros((mn, K // 16, 16), np.uint8)
    out[..., :packed.shape[-1]] = packed
    return out.reshape(mn, K)
