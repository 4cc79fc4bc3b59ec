"""Element types: one table for every stage.

Each element type has one entry that says how wide it is, which NumPy dtype holds it, which
`CUtensorMapDataType` a tensor map names it by (CUDA driver API, "Tensor Map Object Management"),
and how PTX spells it (PTX ISA "Fundamental Types" and the tcgen05/wgmma type tables). A stage looks
its types up here instead of keeping its own list.

Two spellings are accepted for the same entry: the PTX one (`f16`, `bf16`, `tf32`, `s8`, ...) and
the NumPy one (`float16`, `int8`, ...; `bfloat16` for bf16). `element_type()` takes either and
returns the entry; `.name` is the PTX spelling. Types NumPy cannot compute in (bf16, tf32, the 8-,
6- and 4-bit floats) are held as raw bits in an unsigned integer of their width: `storage` is that
dtype, and `to_float` / `from_float` convert. The conversions of bf16 and of the 8-, 6- and 4-bit
floats are ml_dtypes' (`bfloat16`, `float8_e4m3fn`, `float8_e5m2`, `float6_e2m3fn`, `float6_e3m2fn`,
`float4_e2m1fn`: `.ml_dtype`); a 6- or 4-bit element is one code per byte, in its low bits, as
ml_dtypes holds it. tf32 (no ml_dtypes type) is rounded here: `tf32_round`.

Scale factors of the block-scaled MMAs (PTX ISA tcgen05.mma "Block scaling"): ue8m0 (2^(code - 127), 0xff
NaN; ml_dtypes' `float8_e8m0fnu`) and ue4m3 (e4m3 without its sign bit; ml_dtypes has no such type, so its
7 bits decode through `float8_e4m3fn`; 0x7f is NaN). `scale_to_float` decodes either as the tensor core
reads it. `pack_fp4` / `pack_fp6` (and their inverses) make the packed forms of 4- and 6-bit codes: two
e2m1 per byte, element 2i in bits 3..0; four 6-bit codes in three bytes, element i at bits 6i..6i+5 of
the little-endian bit stream (CUTLASS's sub-byte arrays, cutlass/subbyte_reference.h).
"""
from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

__all__ = ["ElementType", "ELEMENT_TYPES", "element_type", "to_float", "from_float", "tf32_round",
           "TF32_CANONICAL_NAN", "CANONICAL_NAN16", "scale_to_float", "pack_fp4", "unpack_fp4", "pack_fp6",
           "unpack_fp6"]


@dataclass(frozen=True)
class ElementType:
    name: str                 # PTX spelling: f16, bf16, tf32, f32, s8, u8, e4m3 ...
    bits: int                 # width of one element in memory
    storage: np.dtype         # the NumPy dtype that holds one element (value or raw bits)
    family: str               # 'float' | 'int' | 'uint'
    numpy_name: str | None    # the NumPy-style spelling also accepted ('float16', 'int8', ...)
    tmap_enum: str | None     # CU_TENSOR_MAP_DATA_TYPE_* that carries it (None: no tensor-map type)

    @property
    def bytes(self) -> int:
        """Bytes per element (sub-byte types report 1; they are packed two or more per byte)."""
        return max(1, self.bits // 8)

    @property
    def is_float(self) -> bool:
        return self.family == "float"

    @property
    def raw_bits(self) -> bool:
        """True where NumPy holds the element's bits, not its value (bf16, tf32, fp8/6/4)."""
        return self.is_float and self.storage.kind != "f"

    @property
    def ptx(self) -> str:
        return "." + self.name

    @property
    def ml_dtype(self) -> np.dtype | None:
        """The ml_dtypes type that computes with it (bf16, e4m3, e5m2, e2m3, e3m2, e2m1), else None."""
        return ML_DTYPES.get(self.name)

    def __str__(self):
        return self.name


def _t(name, bits, storage, family, numpy_name, tmap):
    return ElementType(name, bits, np.dtype(storage), family, numpy_name,
                       None if tmap is None else "CU_TENSOR_MAP_DATA_TYPE_" + tmap)


# The driver has no signed 8/16-bit tensor-map types: a copy moves bits, so s8/s16 travel as
# UINT8/UINT16. bf16 and tf32 have their own tensor-map types (TFLOAT32 rounds on load, as the
# H100 showed). fp8/6/4 travel as UINT8 bytes.
ELEMENT_TYPES = {t.name: t for t in (
    _t("u8", 8, np.uint8, "uint", "uint8", "UINT8"),
    _t("s8", 8, np.int8, "int", "int8", "UINT8"),
    _t("u16", 16, np.uint16, "uint", "uint16", "UINT16"),
    _t("s16", 16, np.int16, "int", "int16", "UINT16"),
    _t("u32", 32, np.uint32, "uint", "uint32", "UINT32"),
    _t("s32", 32, np.int32, "int", "int32", "INT32"),
    _t("u64", 64, np.uint64, "uint", "uint64", "UINT64"),
    _t("s64", 64, np.int64, "int", "int64", "INT64"),
    _t("f16", 16, np.float16, "float", "float16", "FLOAT16"),
    _t("bf16", 16, np.uint16, "float", "bfloat16", "BFLOAT16"),
    _t("tf32", 32, np.uint32, "float", None, "TFLOAT32"),
    _t("f32", 32, np.float32, "float", "float32", "FLOAT32"),
    _t("f64", 64, np.float64, "float", "float64", "FLOAT64"),
    _t("e4m3", 8, np.uint8, "float", None, "UINT8"),
    _t("e5m2", 8, np.uint8, "float", None, "UINT8"),
    _t("e2m3", 6, np.uint8, "float", None, None),
    _t("e3m2", 6, np.uint8, "float", None, None),
    _t("e2m1", 4, np.uint8, "float", None, None),
    # scale factors of the block-scaled MMAs (unsigned; no tensor-map type of their own)
    _t("ue8m0", 8, np.uint8, "float", None, "UINT8"),
    _t("ue4m3", 8, np.uint8, "float", None, "UINT8"),
)}
_ALIASES = {t.numpy_name: t for t in ELEMENT_TYPES.values() if t.numpy_name}

# The ml_dtypes type of each raw-bits float that ml_dtypes knows (the OCP 8-bit formats and the MX 6-
# and 4-bit ones are the same encodings as PTX's e4m3, e5m2, e2m3, e3m2, e2m1).
ML_DTYPES = {name: np.dtype(t) for name, t in (
    ("bf16", ml_dtypes.bfloat16), ("e4m3", ml_dtypes.float8_e4m3fn), ("e5m2", ml_dtypes.float8_e5m2),
    ("e2m3", ml_dtypes.float6_e2m3fn), ("e3m2", ml_dtypes.float6_e3m2fn), ("e2m1", ml_dtypes.float4_e2m1fn),
    ("ue8m0", ml_dtypes.float8_e8m0fnu),
    # ue4m3 is e4m3 with no sign: its codes 0..0x7f decode as float8_e4m3fn's (to_float refuses bit 7)
    ("ue4m3", ml_dtypes.float8_e4m3fn))}
# Types with no NaN encoding: a NaN has nothing to become.
_NO_NAN = ("e2m3", "e3m2", "e2m1")


def element_type(name) -> ElementType:
    """The entry for `name` in either spelling ('f16' or 'float16'); ValueError listing the names."""
    if isinstance(name, ElementType):
        return name
    t = ELEMENT_TYPES.get(name) or _ALIASES.get(name)
    if t is None:
        raise ValueError(f"unknown element type {name!r}; known: {', '.join(ELEMENT_TYPES)} "
                         f"(or the NumPy names {', '.join(_ALIASES)})")
    return t


# A TFLOAT32 tensor-map load turns every NaN into this pattern (seen on the H100).
TF32_CANONICAL_NAN = 0x7FFFE000
# cvt.rn.f16.f32 / cvt.rn.bf16.f32 turn every NaN into this canonical 16-bit NaN.
CANONICAL_NAN16 = 0x7FFF


def tf32_round(bits: np.ndarray) -> np.ndarray:
    """float32 bit patterns rounded to tf32 (10 mantissa bits, nearest even, overflow to infinity),
    infinities kept, every NaN -> TF32_CANONICAL_NAN. What a TFLOAT32 TMA load does."""
    b = np.asarray(bits).astype(np.uint64)
    finite = (b & 0x7F800000) != 0x7F800000
    nan = ~finite & ((b & 0x007FFFFF) != 0)
    lsb = (b >> 13) & 1
    r = ((b + 0xFFF + lsb) & ~np.uint64(0x1FFF)) & 0xFFFFFFFF
    return np.where(finite, r, np.where(nan, TF32_CANONICAL_NAN, b)).astype(np.uint32)


def _codes(raw, t: ElementType) -> np.ndarray:
    """Raw elements of a raw-bits float as its ml_dtypes type (a view of the storage bits)."""
    raw = np.asarray(raw)
    if t.name == "ue4m3" and raw.size and (raw.min() < 0 or raw.max() > 0x7F):
        raise ValueError("ue4m3 is unsigned: its codes are 0..127 (bit 7 is not part of the format)")
    if t.bits < 8 and raw.size and (raw.min() < 0 or raw.max() >= 1 << t.bits):
        bad = raw[(raw < 0) | (raw >= 1 << t.bits)].ravel()[0]
        raise ValueError(f"{t.name} is a {t.bits}-bit type: its codes are 0..{(1 << t.bits) - 1} (one per byte), "
                         f"got {int(bad)}")
    return np.ascontiguousarray(raw.astype(t.storage)).view(t.ml_dtype)


def to_float(raw, dtype) -> np.ndarray:
    """Stored elements -> float64 values. bf16 is the high half of an f32; tf32 ignores the 13 low
    mantissa bits of its 32-bit word (the tensor core does); fp8/fp6/fp4 codes decode as ml_dtypes
    decodes them (the OCP/MX encodings; a 6- or 4-bit code one per byte)."""
    t = element_type(dtype)
    raw = np.asarray(raw)
    if t.ml_dtype is not None:
        with np.errstate(invalid="ignore"):          # signalling NaN patterns are values here
            return _codes(raw, t).astype(np.float64)
    if t.name == "tf32":
        return (raw.astype(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    if t.name in ("f16", "f32", "f64"):
        return raw.astype(t.storage, copy=False).astype(np.float64)
    return raw.astype(np.float64)


def _f32(values) -> np.ndarray:
    """`values` as float32: a float32 array as it is, anything else through float64 (one rounding to f32
    for every input that float64 holds exactly)."""
    v = np.asarray(values)
    if v.dtype == np.float32:
        return v
    with np.errstate(over="ignore"):                 # beyond f32's range is infinity, as cvt makes it
        return np.asarray(v, dtype=np.float64).astype(np.float32)


def from_float(values, dtype) -> np.ndarray:
    """float values -> stored elements of `dtype`, rounded to nearest even from f32 as `cvt.rn` does
    (PTX ISA "cvt"; the values are first made f32, what cvt takes). f16 and bf16 come back as uint16
    bits (a NaN as CANONICAL_NAN16), tf32 as uint32 bits (a NaN as TF32_CANONICAL_NAN), f32/f64 as
    values. fp8/fp6/fp4 come back as uint8 codes, saturated to the largest finite value of the sign
    as `cvt.rn.satfinite` (the only form PTX has for them) does, infinities included; a NaN becomes
    ml_dtypes' NaN of the type (e4m3, e5m2) and is refused by e2m3, e3m2 and e2m1, which have none."""
    t = element_type(dtype)
    if t.name == "f32":
        return np.asarray(values, dtype=np.float64).astype(np.float32)
    if t.name == "f64":
        return np.array(values, dtype=np.float64)
    if t.name == "tf32":
        return tf32_round(_f32(values).view(np.uint32))
    if t.name in ("f16", "bf16"):
        x = _f32(values)
        nan = np.isnan(x)
        with np.errstate(over="ignore", invalid="ignore"):   # NaNs are replaced below
            out = x.astype(np.float16 if t.name == "f16" else t.ml_dtype).view(np.uint16)
        return np.where(nan, np.uint16(CANONICAL_NAN16), out).astype(np.uint16)
    if t.ml_dtype is not None:
        x = _f32(values)
        if t.name in _NO_NAN and np.isnan(x).any():
            raise ValueError(f"{t.name} has no NaN: a NaN cannot be converted to it")
        top = np.float32(ml_dtypes.finfo(t.ml_dtype).max)
        return np.clip(x, -top, top).astype(t.ml_dtype).view(np.uint8)
    return np.rint(np.asarray(values, dtype=np.float64)).astype(t.storage)


def scale_to_float(codes, scale_type: str) -> np.ndarray:
    """Scale-factor codes (uint8) -> float64 values as tcgen05.mma's block scaling reads them: ue8m0 is
    2^(code - 127) (0xff NaN); ue4m3 is e4m3 without the sign, bit 7 ignored (as MMA-Sim reads it; 0x7f NaN)."""
    if scale_type not in ("ue8m0", "ue4m3"):
        raise ValueError(f"scale factors are ue8m0 or ue4m3, got {scale_type!r}")
    codes = np.asarray(codes)
    if codes.size and (codes.min() < 0 or codes.max() > 0xFF):
        raise ValueError(f"{scale_type} codes are bytes (0..255), got {int(codes.max())}")
    codes = codes.astype(np.uint8)
    if scale_type == "ue4m3":
        codes = codes & np.uint8(0x7F)
    return to_float(codes, scale_type)


def _sub_byte(codes, bits: int, name: str) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.size and (codes.min() < 0 or codes.max() >= 1 << bits):
        raise ValueError(f"{name} packs {bits}-bit codes (0..{(1 << bits) - 1}), got {int(codes.max())}")
    return codes.astype(np.uint8)


def pack_fp4(codes) -> np.ndarray:
    """4-bit codes (one per byte, last axis even) -> bytes, two per byte: element 2i in bits 3..0, 2i+1 in 7..4."""
    c = _sub_byte(codes, 4, "pack_fp4")
    if c.shape[-1] % 2:
        raise ValueError(f"pack_fp4 packs pairs: the last axis must be even, got {c.shape[-1]}")
    return (c[..., 0::2] | (c[..., 1::2] << 4)).astype(np.uint8)


def unpack_fp4(packed) -> np.ndarray:
    """Inverse of pack_fp4: bytes -> 4-bit codes, one per byte (twice as many along the last axis)."""
    p = np.asarray(packed).astype(np.uint8)
    out = np.empty(p.shape[:-1] + (2 * p.shape[-1],), np.uint8)
    out[..., 0::2], out[..., 1::2] = p & 0xF, p >> 4
    return out


def pack_fp6(codes) -> np.ndarray:
    """6-bit codes (one per byte, last axis a multiple of 4) -> bytes, four codes in three: element i at
    bits 6i..6i+5 of the little-endian bit stream."""
    c = _sub_byte(codes, 6, "pack_fp6").astype(np.uint32)
    if c.shape[-1] % 4:
        raise ValueError(f"pack_fp6 packs groups of 4: the last axis must be a multiple of 4, got {c.shape[-1]}")
    g = c.reshape(c.shape[:-1] + (-1, 4))
    w = g[..., 0] | (g[..., 1] << 6) | (g[..., 2] << 12) | (g[..., 3] << 18)
    out = np.stack([w & 0xFF, (w >> 8) & 0xFF, (w >> 16) & 0xFF], axis=-1).astype(np.uint8)
    return out.reshape(c.shape[:-1] + (-1,))


def unpack_fp6(packed) -> np.ndarray:
    """Inverse of pack_fp6: bytes (last axis a multiple of 3) -> 6-bit codes, one per byte."""
    p = np.asarray(packed).astype(np.uint32)
    if p.shape[-1] % 3:
        raise ValueError(f"unpack_fp6 reads groups of 3 bytes: the last axis must be a multiple of 3, "
                         f"got {p.shape[-1]}")
    g = p.reshape(p.shape[:-1] + (-1, 3))
    w = g[..., 0] | (g[..., 1] << 8) | (g[..., 2] << 16)
    out = np.stack([(w >> (6 * i)) & 0x3F for i in range(4)], axis=-1).astype(np.uint8)
    return out.reshape(p.shape[:-1] + (-1,))
