"""Element types: one table for every stage.

Each element type has one entry that says how wide it is, which NumPy dtype holds it, which
`CUtensorMapDataType` a tensor map names it by (CUDA driver API, "Tensor Map Object Management"),
and how PTX spells it (PTX ISA "Fundamental Types" and the tcgen05/wgmma type tables). A stage looks
its types up here instead of keeping its own list.

Two spellings are accepted for the same entry: the PTX one (`f16`, `bf16`, `tf32`, `s8`, ...) and
the NumPy one (`float16`, `int8`, ...; `bfloat16` for bf16). `element_type()` takes either and
returns the entry; `.name` is the PTX spelling. Types NumPy cannot compute in (bf16, tf32, the 8-,
6- and 4-bit floats) are held as raw bits in an unsigned integer of their width: `storage` is that
dtype, and `to_float` / `from_float` convert.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ElementType", "ELEMENT_TYPES", "element_type", "to_float", "from_float", "tf32_round",
           "TF32_CANONICAL_NAN", "CANONICAL_NAN16"]


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
)}
_ALIASES = {t.numpy_name: t for t in ELEMENT_TYPES.values() if t.numpy_name}


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


def to_float(raw, dtype) -> np.ndarray:
    """Stored elements -> float64 values. bf16 is the high half of an f32; tf32 ignores the 13 low
    mantissa bits of its 32-bit word (the tensor core does)."""
    t = element_type(dtype)
    raw = np.asarray(raw)
    if t.name == "bf16":
        return (raw.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if t.name == "tf32":
        return (raw.astype(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    if t.name in ("f16", "f32", "f64"):
        return raw.astype(t.storage, copy=False).astype(np.float64)
    if t.is_float:
        raise ValueError(f"bwlab does not convert {t.name} values (only their raw bits move)")
    return raw.astype(np.float64)


def from_float(values, dtype) -> np.ndarray:
    """float values -> stored elements of `dtype`, rounded to nearest even as `cvt.rn` does (PTX ISA
    "cvt"); a 16-bit NaN becomes CANONICAL_NAN16, a tf32 NaN TF32_CANONICAL_NAN. f16 and bf16 come
    back as uint16 bits, tf32 as uint32 bits, f32/f64 as values."""
    t = element_type(dtype)
    v = np.asarray(values, dtype=np.float64)
    if t.name == "f32":
        return v.astype(np.float32)
    if t.name == "f64":
        return v.copy()
    if t.name == "tf32":
        return tf32_round(v.astype(np.float32).view(np.uint32))
    if t.name in ("f16", "bf16"):
        x = v.astype(np.float32)
        nan = np.isnan(x)
        if t.name == "f16":
            with np.errstate(over="ignore"):
                out = x.astype(np.float16).view(np.uint16)
        else:
            u = x.view(np.uint32).astype(np.uint64)
            out = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        return np.where(nan, np.uint16(CANONICAL_NAN16), out).astype(np.uint16)
    if t.is_float:
        raise ValueError(f"bwlab does not convert values to {t.name}")
    return np.rint(v).astype(t.storage)
