"""The tensor map: the parameters of one `cuTensorMapEncodeTiled` call, validated on construction.

CUDA driver API "Tensor Map Object Management" (cuTensorMapEncodeTiled) lists the rules; PTX ISA
"Tensors" (5.5: bounding box, traversal stride, swizzle) says what the instruction does with them.
Each broken rule raises `TensorMapError`, a ValueError naming the rule and the values.

Conventions: shapes and coordinates are innermost-first, as the driver and PTX number them (dim 0
is the contiguous one); `global_strides` are the byte strides of dims 1..rank-1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..hw.dtypes import ELEMENT_TYPES, element_type
from ..hw.swizzle import MODES as SWIZZLE_MODES
from ..hw.swizzle import row_bytes
from ..util import ceil_div, round_up

__all__ = ["TensorMap", "TensorMapError", "TMAP_DTYPES", "SMEM_ALIGNMENT", "MAX_BOX", "MAX_RANK",
           "is_narrow_swizzle", "swizzle_width"]

# The element types a tensor map takes, by their NumPy-style names (PTX spellings such as 'f16' are
# accepted too and stored under these names). The facts about each (width, driver enumerator) come
# from bwlab.hw.dtypes; the order is the order the validation's random cases walk them in.
TMAP_DTYPES = ("uint8", "int8", "uint16", "int16", "float16", "bfloat16", "uint32", "int32", "float32",
               "tf32", "uint64", "int64", "float64")
_BY_NAME = {n: element_type(n) for n in TMAP_DTYPES}
_PTX_TO_NAME = {t.name: n for n, t in _BY_NAME.items()}
assert all(t.tmap_enum for t in _BY_NAME.values()) and set(_BY_NAME.values()) <= set(ELEMENT_TYPES.values())

SWIZZLE_ENUM = {m: f"CU_TENSOR_MAP_SWIZZLE_{m.upper()}" for m in SWIZZLE_MODES}
INTERLEAVE_ENUM = {"none": "CU_TENSOR_MAP_INTERLEAVE_NONE", "16B": "CU_TENSOR_MAP_INTERLEAVE_16B",
                   "32B": "CU_TENSOR_MAP_INTERLEAVE_32B"}
L2_ENUM = {"none": "CU_TENSOR_MAP_L2_PROMOTION_NONE", "64B": "CU_TENSOR_MAP_L2_PROMOTION_L2_64B",
           "128B": "CU_TENSOR_MAP_L2_PROMOTION_L2_128B", "256B": "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"}
OOB_ENUM = {"zero": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE",
            "nan": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"}

MAX_RANK = 5
MAX_BOX = 256
MAX_ELEMENT_STRIDE = 8
MAX_GLOBAL_DIM = 1 << 32
MAX_GLOBAL_STRIDE = 1 << 40  # exclusive
# The SMEM destination of a tiled TMA load must be 128-byte aligned (CUDA programming guide, TMA
# section; the PTX ISA's swizzle base offset formula (dstMem / 128) % N presumes it too).
SMEM_ALIGNMENT = 128

# A swizzled box whose rows are narrower than the swizzle span (legal: cuTensorMapEncodeTiled asks
# only for inner box bytes <= span). Its rows sit one whole span apart in SMEM, the bytes between
# them untouched, and the mbarrier counts only the box bytes. Seen on the H100
# (docs/results/tma_validate_h100.txt): 357 random narrow boxes bit-exact with background-painted
# margins, and in the narrow probe expect_tx = box bytes completed exactly while expect_tx =
# rows x span never completed. The TMA store reads such boxes with the same pitch
# (bwlab.epilogue.smem_box_pitch).
NARROW_SWIZZLE_PITCH = "span"   # 'span' | 'packed'
NARROW_SWIZZLE_TX = "box"       # 'box' (box bytes) | 'footprint' (rows x span)


def swizzle_width(mode: str) -> int:
    """Bytes one box row may take under this swizzle (32/64/128); 0 for 'none' (no limit)."""
    return 0 if mode == "none" else row_bytes(mode)


class TensorMapError(ValueError):
    """A tensor-map parameter breaks a rule of cuTensorMapEncodeTiled (or of the TMA instruction).

    `.rule` is a short name of the rule, e.g. 'box-inner-bytes'; the message gives the values.
    """

    def __init__(self, rule: str, message: str):
        self.rule = rule
        super().__init__(f"[{rule}] {message}")


def _as_int_tuple(values, what: str) -> tuple:
    try:
        out = tuple(int(v) for v in values)
    except TypeError:
        raise TensorMapError("shape-lengths", f"{what} must be a sequence of integers, got {values!r}")
    for v, orig in zip(out, values):
        if v != orig:
            raise TensorMapError("shape-lengths", f"{what} must hold integers, got {values!r}")
    return out


def _dtype_name(name) -> str:
    if isinstance(name, str) and name in _BY_NAME:
        return name
    key = getattr(name, "name", name)
    if isinstance(key, str) and key in _PTX_TO_NAME:
        return _PTX_TO_NAME[key]
    raise TensorMapError("dtype", f"dtype must be one of {', '.join(TMAP_DTYPES)}; got {name!r}")


@dataclass(frozen=True)
class TensorMap:
    """The parameters of one `cuTensorMapEncodeTiled` call, validated on construction.

    dtype           element type name (TMAP_DTYPES: 'float16', 'bfloat16', 'tf32', 'int8', ...;
                    the PTX spellings 'f16', 'bf16', 's8', ... are stored under those names)
    global_shape    elements per dimension, innermost first (1..5 dims, each 1..2^32)
    box_shape       box extent per dimension in elements (each 1..256) — what one load traverses
    global_strides  byte strides of dims 1..rank-1 (default: packed); multiples of 16, < 2^40
    element_strides traversal step per dimension (1..8); the load brings ceil(box/step) elements
    swizzle         'none' | '32B' | '64B' | '128B' (SMEM bank swizzle, a function of the address)
    interleave      'none' | '16B' | '32B' (NC/8HWC8-style layouts; rank >= 3)
    l2_promotion    'none' | '64B' | '128B' | '256B' (L2 fill granularity; no effect on the bytes)
    oob_fill        'zero' | 'nan' (the OOB-NaN of FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA; floats only)
    """

    dtype: str
    global_shape: tuple
    box_shape: tuple
    global_strides: tuple | None = None
    element_strides: tuple | None = None
    swizzle: str = "none"
    interleave: str = "none"
    l2_promotion: str = "none"
    oob_fill: str = "zero"

    def __post_init__(self):
        dtype = _dtype_name(self.dtype)
        object.__setattr__(self, "dtype", dtype)
        elem = _BY_NAME[dtype].bytes
        shape = _as_int_tuple(self.global_shape, "global_shape")
        rank = len(shape)
        if not 1 <= rank <= MAX_RANK:
            raise TensorMapError("rank", f"tensor rank must be 1..{MAX_RANK}; global_shape {shape} has {rank}")
        box = _as_int_tuple(self.box_shape, "box_shape")
        if len(box) != rank:
            raise TensorMapError("shape-lengths", f"box_shape {box} must have one entry per dimension "
                                                  f"of global_shape {shape} ({rank})")
        es = (1,) * rank if self.element_strides is None else _as_int_tuple(self.element_strides, "element_strides")
        if len(es) != rank:
            raise TensorMapError("shape-lengths", f"element_strides {es} must have {rank} entries")
        for name, table in (("swizzle", SWIZZLE_ENUM), ("interleave", INTERLEAVE_ENUM),
                            ("l2_promotion", L2_ENUM), ("oob_fill", OOB_ENUM)):
            if getattr(self, name) not in table:
                raise TensorMapError(name.replace("_", "-"), f"{name} must be one of "
                                     f"{', '.join(repr(k) for k in table)}; got {getattr(self, name)!r}")
        if self.interleave != "none" and rank < 3:
            raise TensorMapError("interleave-rank", f"interleave={self.interleave!r} needs a tensor of rank "
                                                    f">= 3 (NC/8HWC8-style layouts); this one has rank {rank}")
        for i, d in enumerate(shape):
            if not 1 <= d <= MAX_GLOBAL_DIM:
                raise TensorMapError("global-dim", f"global_shape[{i}] = {d} must be in 1..2^32")
        if self.global_strides is None:
            strides, acc = [], shape[0] * elem
            for i in range(1, rank):
                strides.append(acc)
                acc *= shape[i]
            strides = tuple(strides)
            if any(s % 16 for s in strides):
                raise TensorMapError(
                    "global-stride-multiple",
                    f"the packed byte strides {strides} of global_shape {shape} ({dtype}, {elem} B) "
                    "are not all multiples of 16; pass global_strides with each row padded to 16 bytes")
        else:
            strides = _as_int_tuple(self.global_strides, "global_strides")
            if len(strides) != rank - 1:
                raise TensorMapError("shape-lengths", f"global_strides {strides} must have rank-1 = {rank - 1} "
                                                      "entries (the byte strides of dims 1..rank-1)")
        align = 32 if self.interleave == "32B" else 16
        for i, s in enumerate(strides, start=1):
            if s <= 0 or s % align:
                raise TensorMapError("global-stride-multiple",
                                     f"global stride of dim {i} = {s} bytes must be a positive multiple of "
                                     f"{align}" + (" (interleave='32B')" if align == 32 else ""))
            if s >= MAX_GLOBAL_STRIDE:
                raise TensorMapError("global-stride-limit", f"global stride of dim {i} = {s} bytes must be < 2^40")
        for i, b in enumerate(box):
            if not 1 <= b <= MAX_BOX:
                raise TensorMapError("box-dim", f"box_shape[{i}] = {b} must be in 1..{MAX_BOX}")
        if (box[0] * elem) % 16:
            # Documented for interleave 'none'; with interleave the H100's driver (580) refused an
            # 8-byte inner box too (CUDA_ERROR_INVALID_VALUE), so bwlab asks for it always.
            raise TensorMapError("box-inner-bytes",
                                 f"box_shape[0] * element size = {box[0]} * {elem} = {box[0] * elem} bytes "
                                 "must be a multiple of 16")
        for i, e in enumerate(es):
            if not 1 <= e <= MAX_ELEMENT_STRIDE:
                raise TensorMapError("element-stride", f"element_strides[{i}] = {e} must be in 1..{MAX_ELEMENT_STRIDE}")
        if self.interleave == "none" and es[0] != 1:
            # The driver ignores it, the PTX ISA (5.5.3.2 Traversal-Stride) says it must be 1.
            raise TensorMapError("element-stride-dim0",
                                 f"element_strides[0] = {es[0]}: without interleave the traversal stride "
                                 "of dimension 0 must be 1 (PTX ISA 5.5.3.2; the driver ignores it)")
        span = swizzle_width(self.swizzle)
        if self.interleave == "none" and span and box[0] * elem > span:
            raise TensorMapError("swizzle-span",
                                 f"box inner dimension {box[0]} * {elem} = {box[0] * elem} bytes exceeds the "
                                 f"{self.swizzle} swizzle span ({span} bytes): with swizzle the inner box must "
                                 f"be <= {span} bytes ({span // elem} elements of {dtype})")
        if self.interleave == "32B" and self.swizzle != "32B":
            raise TensorMapError("interleave-swizzle",
                                 f"interleave='32B' requires swizzle='32B', got swizzle={self.swizzle!r}")
        if self.oob_fill == "nan" and not _BY_NAME[dtype].is_float:
            raise TensorMapError("oob-fill-nan", f"oob_fill='nan' (FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) needs a "
                                                 f"floating-point dtype; {dtype} is not one")
        object.__setattr__(self, "global_shape", shape)
        object.__setattr__(self, "box_shape", box)
        object.__setattr__(self, "global_strides", tuple(strides))
        object.__setattr__(self, "element_strides", es)

    # ---- derived quantities ---------------------------------------------------------------
    @property
    def element(self):
        """The bwlab.hw.dtypes entry of the element type."""
        return _BY_NAME[self.dtype]

    @property
    def rank(self) -> int:
        return len(self.global_shape)

    @property
    def elem_bytes(self) -> int:
        return self.element.bytes

    @property
    def byte_strides(self) -> tuple:
        """Byte stride of every dimension, dim 0 included (= the element size)."""
        return (self.elem_bytes,) + tuple(self.global_strides)

    @property
    def box_counts(self) -> tuple:
        """Elements the load brings per dimension: ceil(box / element stride), innermost first."""
        return tuple(ceil_div(b, e) for b, e in zip(self.box_shape, self.element_strides))

    @property
    def box_elements(self) -> int:
        return math.prod(self.box_counts)

    @property
    def box_bytes(self) -> int:
        """Bytes of box data one load writes to SMEM, out-of-bounds fill included (elements x size)."""
        return self.box_elements * self.elem_bytes

    @property
    def inner_box_bytes(self) -> int:
        return self.box_counts[0] * self.elem_bytes

    @property
    def smem_pitch(self) -> int:
        """Bytes from one box row (a dimension-0 line) to the next in SMEM.

        The inner box bytes, except for a swizzled box narrower than its swizzle span: each of its
        rows then takes a whole span (32, 64 or 128 bytes) and the rest of the span is left alone
        (`NARROW_SWIZZLE_PITCH`; seen on the H100 for loads here and for stores in bwlab.epilogue)."""
        if is_narrow_swizzle(self) and NARROW_SWIZZLE_PITCH == "span":
            return swizzle_width(self.swizzle)
        return self.inner_box_bytes

    @property
    def smem_footprint(self) -> int:
        """SMEM bytes from the destination to the end of the box's last row: rows x `smem_pitch`."""
        return math.prod(self.box_counts[1:]) * self.smem_pitch

    @property
    def tx_bytes(self) -> int:
        """The transaction bytes one load reports to its mbarrier: what `expect_tx` must announce.

        The box bytes (padding rows to the swizzle span adds nothing: `NARROW_SWIZZLE_TX`)."""
        return self.box_bytes if NARROW_SWIZZLE_TX == "box" else self.smem_footprint

    @property
    def smem_shape(self) -> tuple:
        """Shape of the box in SMEM, outermost first (for `.reshape` of the unswizzled bytes)."""
        return tuple(reversed(self.box_counts))

    @property
    def global_extent_bytes(self) -> int:
        """Bytes from the tensor's base address to the end of its last element."""
        return sum((d - 1) * s for d, s in zip(self.global_shape, self.byte_strides)) + self.elem_bytes

    # ---- the driver call ------------------------------------------------------------------
    def encode_args(self, global_address: int) -> dict:
        """The arguments of cuTensorMapEncodeTiled as plain values (enumerator names as strings).

        Checks the base-address rule first: 16-byte aligned (32 with interleave='32B').
        """
        global_address = int(global_address)
        align = 32 if self.interleave == "32B" else 16
        if global_address <= 0 or global_address % align:
            raise TensorMapError("global-address-alignment",
                                 f"globalAddress 0x{global_address:x} must be non-zero and {align}-byte aligned")
        strides = list(self.global_strides)
        if not strides:
            # Rank 1 has no stride to give, but the driver refuses a NULL array and cuda.bindings
            # turns an empty list into NULL: pass one valid stride it never uses.
            strides = [round_up(self.global_shape[0] * self.elem_bytes, 16)]
        return {
            "tensorDataType": self.element.tmap_enum,
            "tensorRank": self.rank,
            "globalAddress": global_address,
            "globalDim": list(self.global_shape),
            "globalStrides": strides,
            "boxDim": list(self.box_shape),
            "elementStrides": list(self.element_strides),
            "interleave": INTERLEAVE_ENUM[self.interleave],
            "swizzle": SWIZZLE_ENUM[self.swizzle],
            "l2Promotion": L2_ENUM[self.l2_promotion],
            "oobFill": OOB_ENUM[self.oob_fill],
        }

    def encode(self, global_address: int) -> bytes:
        """The 128-byte CUtensorMap for a tensor at `global_address` (needs the CUDA driver)."""
        from .runner import encode_tensor_map
        return encode_tensor_map(self, global_address)

    def describe(self) -> str:
        """The fields of the tensor map as the driver receives them, one per line."""
        a = self.encode_args(1 << 20)
        lines = [f"{'tensorDataType':<15} {a['tensorDataType']}  ({self.elem_bytes} B per element)",
                 f"{'tensorRank':<15} {self.rank}",
                 f"{'globalDim':<15} {a['globalDim']}   (elements, innermost first)",
                 f"{'globalStrides':<15} {a['globalStrides']}   (bytes, dims 1..rank-1)",
                 f"{'boxDim':<15} {a['boxDim']}",
                 f"{'elementStrides':<15} {a['elementStrides']}",
                 f"{'interleave':<15} {a['interleave']}",
                 f"{'swizzle':<15} {a['swizzle']}",
                 f"{'l2Promotion':<15} {a['l2Promotion']}",
                 f"{'oobFill':<15} {a['oobFill']}",
                 f"-> one load brings {' x '.join(map(str, self.smem_shape))} elements = "
                 f"{self.box_bytes} bytes (the expect_tx count is {self.tx_bytes})"
                 + (f"; rows {self.smem_pitch} bytes apart in SMEM, {self.smem_footprint} bytes in all"
                    if self.smem_pitch != self.inner_box_bytes else "")]
        return "\n".join(lines)


def is_narrow_swizzle(tmap: TensorMap) -> bool:
    """A swizzled box whose rows are narrower than the swizzle span."""
    span = swizzle_width(tmap.swizzle)
    return tmap.interleave == "none" and bool(span) and tmap.inner_box_bytes < span
