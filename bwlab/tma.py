"""Stage 1 — the TMA load: tensor maps, the mbarrier handshake, swizzle, out-of-bounds fill.

A TMA load (`cp.async.bulk.tensor.Nd.shared::cluster.global.mbarrier::complete_tx::bytes`, PTX ISA
9.7.9.25; tensor semantics in PTX ISA 5.5 "Tensors") copies one *box* of a tensor in global memory
into shared memory. Everything about the tensor lives in a 128-byte *tensor map* built on the host
by `cuTensorMapEncodeTiled` (CUDA driver API 6.30 "Tensor Map Object Management"); the instruction
names only the tensor map, the box's starting coordinates, the SMEM destination and an mbarrier.

This module has the shape every bwlab stage has:

* `TensorMap` — the tensor-map parameters, validated on construction against the rules of
  `cuTensorMapEncodeTiled` (each violation raises `TensorMapError`, a ValueError naming the rule and
  the values), and `.encode(address)` which calls the driver through `cuda.bindings`.
* `tma_load_model` — a NumPy model of the load: which bytes land at which SMEM address (element
  order, element strides, swizzle as a function of the SMEM address, out-of-bounds fill),
  `TensorMap.tx_bytes` (= box_bytes), the transaction count the mbarrier must expect, and
  `TensorMap.smem_footprint`, the SMEM the box takes (more than box_bytes when swizzled rows are
  narrower than the swizzle span: each row then takes a whole span).
* a GPU runner (`run_tma_load`, `run_cases`) over `cuda_src/tma_load.cu`, the hardware validation
  (`python -m bwlab.validate tma`) and the streaming-copy benchmark (`python -m bwlab.bench tma_copy`).
* pictures for notebook 01 (`plot_*`).

CuTe counterparts: include/cute/atom/copy_traits_sm90_tma.hpp (make_tma_copy, the tensor-map
encoder) and include/cute/arch/copy_sm90_tma.hpp (SM90_TMA_LOAD_{1..5}D).

Conventions: shapes and coordinates are innermost-first, as the driver and PTX number them (dim 0
is the contiguous one); `global_strides` are the byte strides of dims 1..rank-1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .hw.swizzle import SWIZZLES

__all__ = [
    "DTYPES", "TensorMap", "TensorMapError", "tma_load_model", "tma_load_writes", "tma_load_window",
    "oob_fill_bits", "np_dtype", "check_modelled", "SMEM_ALIGNMENT", "MAX_TX_BYTES",
]

# name -> (CUtensorMapDataType enumerator, bytes per element, is floating point).
# The driver has no signed 8/16-bit enumerators; a copy moves bits, so int8/int16 travel as
# UINT8/UINT16. bfloat16 and tf32 are carried as raw bits of their size.
DTYPES = {
    "uint8": ("CU_TENSOR_MAP_DATA_TYPE_UINT8", 1, False),
    "int8": ("CU_TENSOR_MAP_DATA_TYPE_UINT8", 1, False),
    "uint16": ("CU_TENSOR_MAP_DATA_TYPE_UINT16", 2, False),
    "int16": ("CU_TENSOR_MAP_DATA_TYPE_UINT16", 2, False),
    "float16": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT16", 2, True),
    "bfloat16": ("CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", 2, True),
    "uint32": ("CU_TENSOR_MAP_DATA_TYPE_UINT32", 4, False),
    "int32": ("CU_TENSOR_MAP_DATA_TYPE_INT32", 4, False),
    "float32": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT32", 4, True),
    "tf32": ("CU_TENSOR_MAP_DATA_TYPE_TFLOAT32", 4, True),
    "uint64": ("CU_TENSOR_MAP_DATA_TYPE_UINT64", 8, False),
    "int64": ("CU_TENSOR_MAP_DATA_TYPE_INT64", 8, False),
    "float64": ("CU_TENSOR_MAP_DATA_TYPE_FLOAT64", 8, True),
}
_NP = {"uint8": np.uint8, "int8": np.int8, "uint16": np.uint16, "int16": np.int16,
       "float16": np.float16, "bfloat16": np.uint16, "uint32": np.uint32, "int32": np.int32,
       "float32": np.float32, "tf32": np.uint32, "uint64": np.uint64, "int64": np.int64,
       "float64": np.float64}

SWIZZLE_ENUM = {"none": "CU_TENSOR_MAP_SWIZZLE_NONE", "32B": "CU_TENSOR_MAP_SWIZZLE_32B",
                "64B": "CU_TENSOR_MAP_SWIZZLE_64B", "128B": "CU_TENSOR_MAP_SWIZZLE_128B"}
SWIZZLE_BYTES = {"none": 0, "32B": 32, "64B": 64, "128B": 128}
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
# An mbarrier's transaction count is a 20-bit signed quantity: one phase can expect at most 2^20 - 1.
MAX_TX_BYTES = (1 << 20) - 1


class TensorMapError(ValueError):
    """A tensor-map parameter breaks a rule of cuTensorMapEncodeTiled (or of the TMA instruction).

    `.rule` is a short name of the rule, e.g. 'box-inner-bytes'; the message gives the values.
    """

    def __init__(self, rule: str, message: str):
        self.rule = rule
        super().__init__(f"[{rule}] {message}")


def np_dtype(name: str):
    """The NumPy dtype that holds one element of `name` (bfloat16/tf32 as raw unsigned bits)."""
    if name not in _NP:
        raise TensorMapError("dtype", f"dtype must be one of {', '.join(DTYPES)}; got {name!r}")
    return np.dtype(_NP[name])


def _as_int_tuple(values, what: str) -> tuple:
    try:
        out = tuple(int(v) for v in values)
    except TypeError:
        raise TensorMapError("shape-lengths", f"{what} must be a sequence of integers, got {values!r}")
    for v, orig in zip(out, values):
        if v != orig:
            raise TensorMapError("shape-lengths", f"{what} must hold integers, got {values!r}")
    return out


@dataclass(frozen=True)
class TensorMap:
    """The parameters of one `cuTensorMapEncodeTiled` call, validated on construction.

    dtype           element type name (see DTYPES)
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
        if self.dtype not in DTYPES:
            raise TensorMapError("dtype", f"dtype must be one of {', '.join(DTYPES)}; got {self.dtype!r}")
        elem = DTYPES[self.dtype][1]
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
                    f"the packed byte strides {strides} of global_shape {shape} ({self.dtype}, {elem} B) "
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
        span = SWIZZLE_BYTES[self.swizzle]
        if self.interleave == "none" and span and box[0] * elem > span:
            raise TensorMapError("swizzle-span",
                                 f"box inner dimension {box[0]} * {elem} = {box[0] * elem} bytes exceeds the "
                                 f"{self.swizzle} swizzle span ({span} bytes): with swizzle the inner box must "
                                 f"be <= {span} bytes ({span // elem} elements of {self.dtype})")
        if self.interleave == "32B" and self.swizzle != "32B":
            raise TensorMapError("interleave-swizzle",
                                 f"interleave='32B' requires swizzle='32B', got swizzle={self.swizzle!r}")
        if self.oob_fill == "nan" and not DTYPES[self.dtype][2]:
            raise TensorMapError("oob-fill-nan", f"oob_fill='nan' (FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) needs a "
                                                 f"floating-point dtype; {self.dtype} is not one")
        object.__setattr__(self, "global_shape", shape)
        object.__setattr__(self, "box_shape", box)
        object.__setattr__(self, "global_strides", tuple(strides))
        object.__setattr__(self, "element_strides", es)

    # ---- derived quantities ---------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.global_shape)

    @property
    def elem_bytes(self) -> int:
        return DTYPES[self.dtype][1]

    @property
    def byte_strides(self) -> tuple:
        """Byte stride of every dimension, dim 0 included (= the element size)."""
        return (self.elem_bytes,) + tuple(self.global_strides)

    @property
    def box_counts(self) -> tuple:
        """Elements the load brings per dimension: ceil(box / element stride), innermost first."""
        return tuple(-(-b // e) for b, e in zip(self.box_shape, self.element_strides))

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
        span = SWIZZLE_BYTES[self.swizzle]
        if self.interleave == "none" and span and self.inner_box_bytes < span and NARROW_SWIZZLE_PITCH == "span":
            return span
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
            strides = [-(-self.global_shape[0] * self.elem_bytes // 16) * 16]
        return {
            "tensorDataType": DTYPES[self.dtype][0],
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
        a = self.encode_args(global_address)
        from cuda.bindings import driver as drv
        err, tmap = drv.cuTensorMapEncodeTiled(
            getattr(drv.CUtensorMapDataType, a["tensorDataType"]), a["tensorRank"], a["globalAddress"],
            [drv.cuuint64_t(v) for v in a["globalDim"]], [drv.cuuint64_t(v) for v in a["globalStrides"]],
            [drv.cuuint32_t(v) for v in a["boxDim"]], [drv.cuuint32_t(v) for v in a["elementStrides"]],
            getattr(drv.CUtensorMapInterleave, a["interleave"]), getattr(drv.CUtensorMapSwizzle, a["swizzle"]),
            getattr(drv.CUtensorMapL2promotion, a["l2Promotion"]),
            getattr(drv.CUtensorMapFloatOOBfill, a["oobFill"]))
        if int(err) != 0:
            raise RuntimeError(f"cuTensorMapEncodeTiled rejected {self!r}: {err!r}")
        return np.array([int(v) for v in tmap.opaque], dtype=np.uint64).tobytes()

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


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------
# The OOB-NaN written by CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA, as raw bits: read off
# an H100 (`python -m bwlab.validate tma --probe`), the 16-bit pattern 0x7FF7 repeated to fill the
# element — a NaN in every float format (f16, bf16, f32, f64).
_OOB_NAN_BITS = {"float16": 0x7FF7, "bfloat16": 0x7FF7, "float32": 0x7FF77FF7, "tf32": 0x7FF77FF7,
                 "float64": 0x7FF77FF77FF77FF7}
# A TFLOAT32 load rounds each 32-bit value to tf32 (10 mantissa bits, nearest even, denormals
# kept, infinities kept) and turns every NaN into 0x7FFFE000; seen on the H100 (--probe).
TF32_ROUNDS_ON_LOAD = True
TF32_CANONICAL_NAN = 0x7FFFE000


def oob_fill_bits(tmap: TensorMap) -> int:
    """Raw bits of one out-of-bounds element: 0, or the OOB-NaN for oob_fill='nan'."""
    return _OOB_NAN_BITS[tmap.dtype] if tmap.oob_fill == "nan" else 0


def _tf32_round(bits: np.ndarray) -> np.ndarray:
    """What a TFLOAT32 load makes of float32 bit patterns: round to 10 mantissa bits, nearest even
    (overflow to infinity), infinities unchanged, every NaN -> TF32_CANONICAL_NAN."""
    b = bits.astype(np.uint64)
    finite = (b & 0x7F800000) != 0x7F800000
    nan = ~finite & ((b & 0x007FFFFF) != 0)
    lsb = (b >> 13) & 1
    r = ((b + 0xFFF + lsb) & ~np.uint64(0x1FFF)) & 0xFFFFFFFF
    return np.where(finite, r, np.where(nan, TF32_CANONICAL_NAN, b)).astype(np.uint32)


# A swizzled box whose rows are narrower than the swizzle span (legal: cuTensorMapEncodeTiled asks
# only for inner box bytes <= span). Its rows sit one whole span apart in SMEM, the bytes between
# them untouched, and the mbarrier counts only the box bytes. Seen on the H100
# (docs/results/tma_validate_h100.txt): 357 random narrow boxes bit-exact with background-painted
# margins, and in `probe_narrow_main` expect_tx = box bytes completed exactly while expect_tx =
# rows x span never completed. The TMA store reads such boxes with the same pitch
# (bwlab.epilogue.smem_box_pitch).
NARROW_SWIZZLE_PITCH = "span"   # 'span' | 'packed'
NARROW_SWIZZLE_TX = "box"       # 'box' (box bytes) | 'footprint' (rows x span)


def is_narrow_swizzle(tmap: TensorMap) -> bool:
    """A swizzled box whose rows are narrower than the swizzle span."""
    span = SWIZZLE_BYTES[tmap.swizzle]
    return tmap.interleave == "none" and bool(span) and tmap.inner_box_bytes < span


def check_modelled(tmap: TensorMap) -> None:
    """Raise unless bwlab's model covers this tensor map: interleaved layouts are validated by
    TensorMap and the driver, but their SMEM image is not modelled."""
    if tmap.interleave != "none":
        raise NotImplementedError("the model covers interleave='none'; interleaved layouts are validated "
                                  "by TensorMap and the driver but their SMEM image is not modelled")


def _check_coords(tmap: TensorMap, coords) -> tuple:
    coords = tuple(int(c) for c in coords)
    if len(coords) != tmap.rank:
        raise TensorMapError("coords", f"a rank-{tmap.rank} load takes {tmap.rank} coordinates, got {coords}")
    for i, c in enumerate(coords):
        if not -(1 << 31) <= c < (1 << 31):
            raise TensorMapError("coords", f"coordinate {i} = {c} is not a signed 32-bit integer")
    if tmap.interleave == "none" and (coords[0] * tmap.elem_bytes) % 16:
        # PTX ISA 5.5.3.1: the bounding box's address must be 16-byte aligned. The H100 enforces it:
        # a box starting mid-way through a 16-byte chunk faults with an illegal instruction.
        raise TensorMapError("coords-inner-alignment",
                             f"coordinate 0 = {coords[0]} starts the box at byte {coords[0] * tmap.elem_bytes} of "
                             f"its row; it must be a multiple of 16 bytes ({16 // tmap.elem_bytes} elements of "
                             f"{tmap.dtype})")
    return coords


def _gmem_bytes(gmem, tmap: TensorMap) -> np.ndarray:
    gb = np.ascontiguousarray(gmem).reshape(-1).view(np.uint8)
    if gb.size < tmap.global_extent_bytes:
        raise TensorMapError("gmem-extent", f"global_shape {tmap.global_shape} with byte strides "
                                            f"{tmap.byte_strides} spans {tmap.global_extent_bytes} bytes; "
                                            f"the array given has {gb.size}")
    return gb


def _box_targets(tmap: TensorMap, coords, smem_address: int, pitch: int):
    """For every box element, innermost first: global element offsets (bytes), in bounds?, and the
    unswizzled SMEM byte address of its first byte with rows `pitch` bytes apart."""
    n = tmap.box_counts
    # j[i] for every box element, element 0 first, dim 0 fastest.
    j = np.indices(n[::-1], dtype=np.int64).reshape(tmap.rank, -1)[::-1]
    g = np.asarray(coords, dtype=np.int64)[:, None] + j * np.asarray(tmap.element_strides, dtype=np.int64)[:, None]
    dims = np.asarray(tmap.global_shape, dtype=np.int64)[:, None]
    inb = np.all((g >= 0) & (g < dims), axis=0)
    goff = (np.where(inb, g, 0) * np.asarray(tmap.byte_strides, dtype=np.int64)[:, None]).sum(axis=0)
    row = np.arange(j.shape[1], dtype=np.int64) // n[0]  # rows of all dims above 0, dim 1 fastest
    start = smem_address + row * pitch + j[0] * tmap.elem_bytes
    return goff, inb, start


def tma_load_writes(gmem, tmap: TensorMap, coords, smem_address: int = 0, *, _check_alignment: bool = True,
                    _pitch: int | None = None):
    """Every byte one TMA load writes: (SMEM byte addresses, byte values), in box order.

    Element (j0, j1, ...) of the box (j_i < ceil(box_i / elementStride_i)) is global element
    c_i + j_i * elementStride_i; it is in bounds when 0 <= that < global_shape[i] in every
    dimension, otherwise its bytes are the fill. Unswizzled, it sits at byte
    smem_address + r * pitch + elem * j0, where r = j1 + n1 * (j2 + n2 * ...) is its row and the
    pitch is the row's bytes (or a whole swizzle span for narrower swizzled rows: `smem_pitch`);
    the swizzle then permutes 16-byte chunks by the address bits (CuTe Swizzle<B,4,3> on the
    absolute SMEM address).
    """
    check_modelled(tmap)
    coords = _check_coords(tmap, coords)
    smem_address = int(smem_address)
    if smem_address < 0 or (_check_alignment and smem_address % SMEM_ALIGNMENT):
        raise TensorMapError("smem-alignment", f"the SMEM destination 0x{smem_address:x} must be "
                                               f"{SMEM_ALIGNMENT}-byte aligned")
    gb = _gmem_bytes(gmem, tmap)
    elem = tmap.elem_bytes
    goff, inb, start = _box_targets(tmap, coords, smem_address, tmap.smem_pitch if _pitch is None else _pitch)
    vals = gb[goff[:, None] + np.arange(elem)]  # (elements, elem) bytes
    if tmap.dtype == "tf32" and TF32_ROUNDS_ON_LOAD:
        vals = _tf32_round(vals.copy().view("<u4").reshape(-1)).view(np.uint8).reshape(-1, elem)
    fill = np.frombuffer(int(oob_fill_bits(tmap)).to_bytes(elem, "little"), dtype=np.uint8)
    vals = np.where(inb[:, None], vals, fill[None, :]).reshape(-1)
    addr = (start[:, None] + np.arange(elem)).reshape(-1)
    return SWIZZLES[tmap.swizzle](addr), vals


def tma_load_window(gmem, tmap: TensorMap, coords, smem_address: int, window_start: int,
                    window_len: int, background=None) -> np.ndarray:
    """SMEM bytes [window_start, window_start + window_len) after the load, on top of `background`
    (zeros by default). The hardware validation compares such windows, margins included, so a
    byte written outside the box is caught as well as a wrong one inside it."""
    addr, vals = tma_load_writes(gmem, tmap, coords, smem_address)
    out = np.zeros(window_len, np.uint8) if background is None else np.array(background, np.uint8).copy()
    rel = addr - int(window_start)
    if rel.size and (rel.min() < 0 or rel.max() >= window_len):
        raise ValueError(f"the load writes SMEM [{addr.min()}, {addr.max()}], outside the window "
                         f"[{window_start}, {window_start + window_len})")
    out[rel] = vals
    return out


def tma_load_model(gmem, tmap: TensorMap, coords, smem_address: int = 0) -> np.ndarray:
    """The bytes of the box as they land in SMEM starting at `smem_address`: `smem_footprint`
    bytes (= box_bytes, except for a swizzled box narrower than its span, whose rows sit one span
    apart: the bytes between them are not written by the TMA and are 0 here).

    `gmem` is the whole global tensor (any dtype and shape: its raw bytes are what the tensor map
    addresses, base at byte 0). The swizzle is applied as a function of the absolute SMEM address,
    so the same box looks different at 0x0000 and at 0x0080 unless the swizzle is 'none'.
    """
    addr, vals = tma_load_writes(gmem, tmap, coords, smem_address)
    rel = addr - int(smem_address)
    size = tmap.smem_footprint
    # Each row starts at a multiple of its pitch from a 128-byte aligned destination and the
    # swizzle permutes 16-byte chunks inside one span, so the image stays inside the footprint;
    # this guards that invariant.
    if rel.size and (rel.min() < 0 or rel.max() >= size):
        raise TensorMapError(
            "swizzle-image",
            f"with swizzle {tmap.swizzle} at SMEM 0x{int(smem_address):x}, bytes of this {size}-byte box land "
            f"outside [{int(smem_address)}, {int(smem_address) + size}); use tma_load_window to see them")
    out = np.zeros(size, np.uint8)
    out[rel] = vals
    return out


# ---------------------------------------------------------------------------------------------
# The GPU runner (cuda_src/tma_load.cu)
# ---------------------------------------------------------------------------------------------
# Mirrors struct TmaCase in cuda_src/tma_load.cu.
TMA_CASE_DTYPE = np.dtype({
    "names": ["rank", "coords", "smem_offset", "box_bytes", "window_bytes", "flags", "out_offset"],
    "formats": ["<i4", ("<i4", 5), "<u4", "<u4", "<u4", "<u4", "<u8"],
    "offsets": [0, 4, 24, 28, 32, 36, 40], "itemsize": 48})
LOAD_BARRIERS = {0: "smem_full (phase 0: expect_tx = box bytes)",
                 1: "tx_exact (phase 1: completes only if no bytes beyond expect_tx arrived)"}
COPY_BARRIERS = {s: f"full[{s}]" for s in range(8)}
SMEM_SLACK = 1024  # the kernel rounds its window up to a 1024-byte boundary


def background(n: int) -> np.ndarray:
    """The bytes tma_load_dump paints its SMEM window with before the load (byte i = 151 i + 89)."""
    return ((np.arange(n, dtype=np.int64) * 151 + 89) & 0xFF).astype(np.uint8)


@dataclass
class LoadCase:
    """One TMA load to run on the GPU: a tensor map over `gmem`, a box position, an SMEM offset.

    `smem_offset` is the destination relative to a 1024-byte aligned window (a multiple of 128);
    `gmem_offset` shifts the tensor's base address by a multiple of 16 from a 256-byte boundary.
    """
    tmap: TensorMap
    gmem: np.ndarray
    coords: tuple
    smem_offset: int = 0
    gmem_offset: int = 0
    prefetch: int = 0  # bit 1: cp.async.bulk.prefetch.tensor of the box first; bit 0: prefetch.tensormap
    zero_background: bool = False  # paint the window with zeros instead of `background`
    expect_tx: int | None = None  # default: tmap.tx_bytes

    @property
    def tx(self) -> int:
        """What the kernel's expect_tx announces."""
        return self.tmap.tx_bytes if self.expect_tx is None else int(self.expect_tx)

    @property
    def window_bytes(self) -> int:
        """SMEM bytes dumped: the destination offset, the box's footprint, then at least 1 KiB of margin."""
        reach = max(self.tx, self.tmap.smem_footprint)
        return -(-(self.smem_offset + reach) // 1024) * 1024 + 1024

    def model_window(self) -> np.ndarray:
        """What the GPU's window should hold: the background with the model's writes on top."""
        bg = np.zeros(self.window_bytes, np.uint8) if self.zero_background else background(self.window_bytes)
        return tma_load_window(self.gmem, self.tmap, self.coords, self.smem_offset, 0, self.window_bytes, bg)


def _round_up(x: int, m: int) -> int:
    return -(-x // m) * m


@dataclass
class RunResult:
    windows: list          # the raw SMEM window of every case (background + what the TMA wrote)
    done: np.ndarray       # per case: completed both barrier phases
    timeout: object        # the MbarrierTimeout of the launch, if a bounded wait gave up
    errors: list           # per case: the driver's refusal to encode the tensor map, or None


def run_cases(cases, block: int = 128) -> RunResult:
    """Run many TMA loads in one launch of tma_load_dump, one CTA each.

    A bounded wait that gives up makes bwlab.runtime.launch raise MbarrierTimeout after the
    launch; it is caught here and returned, and `done` says which cases finished. A tensor map
    the driver refuses is reported in `errors` and its CTA does nothing.
    """
    import cupy as cp

    from . import device
    from .compile import load_module
    from .runtime import MbarrierTimeout, launch, LaunchConfigError

    device.require("tma")
    info = device.gpu_info()
    cases = list(cases)
    for c in cases:
        if c.smem_offset % SMEM_ALIGNMENT or c.smem_offset < 0:
            raise TensorMapError("smem-alignment", f"smem_offset {c.smem_offset} must be a multiple of {SMEM_ALIGNMENT}")
        if c.gmem_offset % 16 or not 0 <= c.gmem_offset < 256:
            raise TensorMapError("global-address-alignment", f"gmem_offset {c.gmem_offset} must be a multiple "
                                                             "of 16 in [0, 256)")
        if c.tx > MAX_TX_BYTES:
            raise TensorMapError("box-bytes", f"a box of {c.tx} bytes exceeds the mbarrier's transaction "
                                              f"range ({MAX_TX_BYTES})")
    smem = max(c.window_bytes for c in cases) + SMEM_SLACK
    if smem > info.smem_per_block_optin:
        raise LaunchConfigError(f"the largest case needs {smem} bytes of SMEM; {info.name} allows "
                                f"{info.smem_per_block_optin} per CTA")
    # One device buffer holds every tensor, each at a 256-byte boundary plus its gmem_offset.
    offs, total = [], 0
    for c in cases:
        offs.append(total + c.gmem_offset)
        total = _round_up(total + c.gmem_offset + np.asarray(c.gmem).nbytes, 256)
    host = np.zeros(max(total, 256), np.uint8)
    for c, o in zip(cases, offs):
        b = np.ascontiguousarray(c.gmem).reshape(-1).view(np.uint8)
        host[o:o + b.size] = b
    dev = cp.asarray(host)
    base = dev.data.ptr
    encoded, errors = [], [None] * len(cases)
    for i, (c, o) in enumerate(zip(cases, offs)):
        try:
            encoded.append(c.tmap.encode(base + o))
        except RuntimeError as e:  # the driver refused what TensorMap accepted: report, skip
            errors[i] = str(e)
            encoded.append(bytes(128))
    tmaps = np.frombuffer(b"".join(encoded), np.uint8)
    rec = np.zeros(len(cases), TMA_CASE_DTYPE)
    out_total = 0
    for i, c in enumerate(cases):
        coords = list(_check_coords(c.tmap, c.coords)) + [0] * (5 - c.tmap.rank)
        rec[i] = (0 if errors[i] else c.tmap.rank, coords, c.smem_offset, c.tx, c.window_bytes,
                  (int(c.prefetch) & 3) | (4 if c.zero_background else 0), out_total)
        out_total += c.window_bytes
    d_tmaps = cp.asarray(tmaps)
    d_cases = cp.asarray(rec.view(np.uint8))
    d_out = cp.zeros(out_total, cp.uint8)
    d_done = cp.zeros(len(cases), cp.uint32)
    mod = load_module("tma_load")
    timeout = None
    try:
        launch(mod, "tma_load_dump", (len(cases),), (block,), (d_tmaps, d_cases, d_out, d_done),
               shared_mem=smem, barrier_names=LOAD_BARRIERS)
    except MbarrierTimeout as e:
        timeout = e
    out = cp.asnumpy(d_out)
    done = cp.asnumpy(d_done).astype(bool)
    windows = [out[int(r["out_offset"]):int(r["out_offset"]) + int(r["window_bytes"])] for r in rec]
    return RunResult(windows, done, timeout, errors)


def run_tma_load(tmap: TensorMap, gmem, coords, smem_offset: int = 0, prefetch: int = 0) -> np.ndarray:
    """Load one box on the GPU into zeroed SMEM; the bytes [smem_offset, smem_offset + smem_footprint)
    it produced.

    The same arguments as `tma_load_model`, so `np.array_equal(run_tma_load(...), tma_load_model(...))`
    is the whole comparison. Raises MbarrierTimeout if the handshake did not complete.
    """
    case = LoadCase(tmap, np.asarray(gmem), tuple(coords), smem_offset=smem_offset, prefetch=prefetch,
                    zero_background=True)
    r = run_cases([case])
    if r.errors[0]:
        raise RuntimeError(r.errors[0])
    if r.timeout is not None:
        raise r.timeout
    return r.windows[0][smem_offset:smem_offset + tmap.smem_footprint]


# ---------------------------------------------------------------------------------------------
# Hardware validation: python -m bwlab.validate tma --cases 1000 --seed 0 --out FILE
# ---------------------------------------------------------------------------------------------
SWIZZLE_MODES = ("none", "32B", "64B", "128B")
PREFETCH_TENSORMAP, PREFETCH_BOX = 1, 2
MAX_CASE_BOX_BYTES = 32 * 1024


def random_case(rng: np.random.Generator, dtype: str, rank: int, swizzle: str) -> LoadCase:
    """A random valid TMA load of the given dtype, rank and swizzle.

    Odd global sizes with padded rows, boxes that hang off either edge (now and then entirely
    outside), element strides, NaN fill, every SMEM offset mod 1024 (multiples of 128), base
    addresses at every multiple of 16 mod 256, the four prefetch variants, and random bytes (NaN
    and denormal bit patterns included) as data. Swizzled rows are one span wide or (half the
    time) narrower; unswizzled ones 16..512 bytes.
    """
    elem = DTYPES[dtype][1]
    span = SWIZZLE_BYTES[swizzle]
    if span:
        narrow = rng.random() < 0.5
        inner_bytes = 16 * int(rng.integers(1, span // 16)) if narrow else span
    else:
        inner_bytes = 16 * int(rng.integers(1, min(256 * elem, 512) // 16 + 1))
    pitch = span or inner_bytes  # SMEM bytes per box row (smem_pitch)
    box = [inner_bytes // elem]
    budget = int(np.exp(rng.uniform(np.log(pitch), np.log(MAX_CASE_BOX_BYTES))))
    es = [1]
    for _ in range(1, rank):
        e = int(rng.integers(1, 9)) if rng.random() < 0.3 else 1
        room = max(1, budget // (pitch * math.prod(-(-b // s) for b, s in zip(box[1:], es[1:]))))
        n = int(rng.integers(1, min(room, 256) + 1)) if rng.random() < 0.9 else 1
        box.append(min(256, n * e - int(rng.integers(0, e))))  # ceil(box/e) == n, box not always a multiple
        es.append(e)
    shape = []
    for i in range(rank):
        reach = box[i] if i == 0 else box[i]
        hi = max(2, min(2 * reach + 7, 600 if i == 0 else 300))
        shape.append(int(rng.integers(1, hi + 1)))
    # keep the tensor under ~2 MB
    while math.prod(shape) * elem > (2 << 20):
        k = int(np.argmax(shape))
        shape[k] = max(1, shape[k] // 2)
    strides, pitch = [], _round_up(shape[0] * elem, 16) + 16 * int(rng.integers(0, 3))
    for i in range(1, rank):
        strides.append(pitch)
        pitch = pitch * shape[i] + 16 * int(rng.integers(0, 2))
    oob = "nan" if DTYPES[dtype][2] and rng.random() < 0.3 else "zero"
    tmap = TensorMap(dtype, shape, box, global_strides=strides, element_strides=es, swizzle=swizzle,
                     l2_promotion=str(rng.choice(list(L2_ENUM))), oob_fill=oob)
    coords = []
    inside = rng.random() < 0.4  # the whole box in bounds (where the tensor is large enough)
    for i in range(rank):
        reach = (tmap.box_counts[i] - 1) * es[i] + 1
        r = 0.0 if inside else rng.random()
        if r < 0.3:  # inside
            c = int(rng.integers(0, max(1, shape[i] - reach + 1)))
        elif r < 0.9:  # straddling an edge
            c = int(rng.integers(-reach + 1, shape[i]))
        else:  # possibly entirely outside
            c = int(rng.integers(-reach - 8, shape[i] + 8))
        if i == 0:
            c = (c // (16 // elem)) * (16 // elem)  # the box must start on a 16-byte boundary
        coords.append(c)
    gmem = rng.integers(0, 256, size=tmap.global_extent_bytes, dtype=np.uint8)
    return LoadCase(tmap, gmem, tuple(coords), smem_offset=128 * int(rng.integers(0, 8)) + 1024 * int(rng.integers(0, 2)),
                    gmem_offset=16 * int(rng.integers(0, 16)),
                    prefetch=int(rng.choice(4, p=[0.55, 0.15, 0.15, 0.15])))


def random_cases(n: int, seed: int = 0):
    """`n` random cases covering every (dtype, rank, swizzle) combination in turn."""
    rng = np.random.default_rng(seed)
    combos = [(d, r, s) for d in DTYPES for r in range(1, 6) for s in SWIZZLE_MODES]
    order = rng.permutation(len(combos))
    return [random_case(rng, *combos[order[i % len(combos)]]) for i in range(n)]


def describe_case(c: LoadCase) -> str:
    t = c.tmap
    pitch = f" pitch={t.smem_pitch}" if t.smem_pitch != t.inner_box_bytes else ""
    return (f"{t.dtype} shape={t.global_shape} strides={t.global_strides} box={t.box_shape} "
            f"es={t.element_strides} swz={t.swizzle}{pitch} oob={t.oob_fill} l2={t.l2_promotion} "
            f"coords={tuple(c.coords)} smem+{c.smem_offset} gmem+{c.gmem_offset} "
            f"prefetch={int(c.prefetch)} tx={c.tx}")


def _is_oob(c: LoadCase) -> bool:
    t = c.tmap
    return any(co < 0 or co + (n - 1) * e >= d for co, n, e, d in
               zip(c.coords, t.box_counts, t.element_strides, t.global_shape))


def variant_window(c: LoadCase, pitch: int, gap_fill=None) -> np.ndarray:
    """The window under another hypothesis about the SMEM layout, for diagnosis: rows `pitch`
    bytes apart and, if `gap_fill` is a byte value, the bytes between rows written with it."""
    bg = np.zeros(c.window_bytes, np.uint8) if c.zero_background else background(c.window_bytes)
    addr, vals = tma_load_writes(c.gmem, c.tmap, c.coords, c.smem_offset, _pitch=pitch)
    if gap_fill is not None:
        rows = math.prod(c.tmap.box_counts[1:])
        every = SWIZZLES[c.tmap.swizzle](c.smem_offset + np.arange(rows * pitch, dtype=np.int64))
        every = every[every < bg.size]
        bg[every] = gap_fill
    if addr.size and addr.max() >= bg.size:
        return np.zeros(0, np.uint8)  # this hypothesis writes past the window: it cannot match
    bg[addr] = vals
    return bg


def diagnose_window(c: LoadCase, w: np.ndarray) -> str:
    """Which layout hypothesis the GPU's window does match, if any (for failed cases)."""
    t = c.tmap
    span = SWIZZLE_BYTES[t.swizzle]
    hyp = {"packed rows": (t.inner_box_bytes, None)}
    if span and t.inner_box_bytes < span:
        hyp.update({"rows one span apart, gaps untouched": (span, None),
                    "rows one span apart, gaps zeroed": (span, 0)})
    hits = [name for name, (pitch, fill) in hyp.items() if np.array_equal(variant_window(c, pitch, fill), w)]
    return "matches: " + (", ".join(hits) if hits else "none of " + "; ".join(hyp))


def classify(c: LoadCase, w: np.ndarray, done: bool, err) -> tuple:
    """(status, detail) of one case: 'exact', 'mismatch', 'incomplete' (a bounded wait gave up) or
    'refused' (the driver refused a tensor map TensorMap accepted)."""
    if err:
        return "refused", str(err)[:300]
    if not done:
        return "incomplete", "did not complete the handshake"
    want = c.model_window()
    if np.array_equal(w, want):
        return "exact", ""
    diff = np.flatnonzero(w != want)
    return "mismatch", (f"{diff.size} bytes differ (first at window byte {diff[0]}: gpu {w[diff[0]]:#04x} "
                        f"model {want[diff[0]]:#04x}); {diagnose_window(c, w)}")


def run_and_classify(cases, say=None, batch: int = 512, rerun_limit: int = 32):
    """Run `cases` in launches of `batch`; [(status, detail, window)] per case.

    A bounded wait that gives up makes every CTA still waiting give up too (one status record per
    launch), so the unfinished cases are run again one per launch (up to `rerun_limit`) to find
    which of them really fail."""
    out = []
    for start in range(0, len(cases), batch):
        chunk = cases[start:start + batch]
        r = run_cases(chunk)
        if r.timeout is not None:
            again = [i for i in range(len(chunk)) if not r.done[i] and not r.errors[i]]
            if say:
                say(f"  launch of cases {start}..{start + len(chunk) - 1}: {r.timeout}; re-running "
                    f"{min(len(again), rerun_limit)} of {len(again)} unfinished case(s) one per launch")
            for i in again[:rerun_limit]:
                one = run_cases([chunk[i]])
                r.windows[i], r.done[i] = one.windows[0], one.done[0]
        for c, w, ok, err in zip(chunk, r.windows, r.done, r.errors):
            out.append(classify(c, w, bool(ok), err) + (w,))
    return out


def validate_cases(cases, say=print, batch: int = 512, dump=None) -> int:
    """Run `cases` on the GPU in this process, compare every SMEM window with the model; return the
    failure count (a GPU fault raises: `validate_isolated` runs cases in child processes instead)."""
    res = run_and_classify(cases, say=say, batch=batch)
    bad = [(k, s, d, w) for k, (s, d, w) in enumerate(res) if s != "exact"]
    for k, s, d, _ in bad[:20]:
        say(f"  case {k}: {s}: {d}: {describe_case(cases[k])}")
    if dump and bad:
        _save_dump(dump, cases, [(k, s, w) for k, s, _, w in bad], say)
    return len(bad)


def npy_headers_intact() -> bool:
    """Whether np.save in this process still pads .npy headers with spaces.

    On Python 3.12+ a one-byte bytes literal such as numpy's b' ' is the interpreter's shared
    singleton for that byte; C code that writes into a one-byte bytes buffer made as b" " * 1
    (bwlab.compile does this for an empty NVRTC log) turns it into b'\\x00' for the whole process,
    and every .npy/.npz header written afterwards is padded with NUL bytes that np.load rejects."""
    import io
    f = io.BytesIO()
    np.save(f, np.zeros(1, np.uint8), allow_pickle=False)
    raw = f.getvalue()
    return b"\0" not in raw[10:raw.index(b"\n")]


def _save_dump(path, cases, bad, say=print):
    import os
    if not npy_headers_intact():
        say(f"  failure windows NOT written to {path}: this process's np.save pads headers with NUL bytes "
            f"(the shared b' ' was overwritten, see npy_headers_intact), so np.load could not read them")
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savez_compressed(path, **{f"case{k}": w for k, _, w in bad},
                        descriptions=np.array([f"{k} {s} {describe_case(cases[k])}" for k, s, _ in bad]))


def _save_window(path: str, w) -> None:
    """Write one SMEM window as raw bytes (no .npy header, so nothing this process's numpy pads can
    spoil it), whole or not at all: a child killed by its timeout can leave a stray .part, never a
    truncated window for the parent to read."""
    import os
    with open(path + ".part", "wb") as f:
        f.write(np.ascontiguousarray(w, dtype=np.uint8).tobytes())
    os.replace(path + ".part", path)


def _load_window(path: str) -> np.ndarray:
    return np.fromfile(path, dtype=np.uint8)


def _print_flushed(s: str) -> None:
    print(s, flush=True)  # on the pipe before anything at teardown can kill the child


def _group_main(argv, emit=_print_flushed) -> int:
    """Child process: run cases --indices of random_cases(--cases, --seed) in one launch (unfinished
    ones again one by one); `emit` one JSON line (stdout by default, which the parent reads);
    windows of failures go to --out-dir/caseK.bin."""
    import argparse
    import json
    import os
    ap = argparse.ArgumentParser(prog="python -m bwlab.tma group")
    ap.add_argument("--cases", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--indices", required=True)
    ap.add_argument("--out-dir")
    a = ap.parse_args(argv)
    cases = random_cases(a.cases, a.seed)
    idx = [int(x) for x in a.indices.split(",") if x]
    res = run_and_classify([cases[i] for i in idx])
    out = []
    for k, (s, d, w) in zip(idx, res):
        out.append([k, s, d])
        if s != "exact" and a.out_dir:
            _save_window(os.path.join(a.out_dir, f"case{k}.bin"), w)
    emit(json.dumps({"status": "ran", "results": out}))
    return 0


def _child_json(cmd: list, timeout: float) -> dict:
    """Run `python -m bwlab.tma CMD...` in a child; its last JSON line, or why there was none."""
    import json
    import subprocess
    import sys
    try:
        p = subprocess.run([sys.executable, "-m", "bwlab.tma"] + cmd, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "crash", "error": f"child timed out after {timeout:.0f} s"}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    return {"status": "crash", "error": (tail or [f"exit {p.returncode}, no output"])[-1][:200]}


def validate_isolated(n: int, seed: int = 0, say=print, group: int = 125, dump=None,
                      time_limit: float = 240.0, max_faults: int = 8) -> dict:
    """Run random_cases(n, seed) on the GPU in child processes, `group` cases per child, so that a
    GPU fault (which poisons the CUDA context) costs only its own group: a crashed group is split in
    halves and run again until each fault is pinned to one case. Returns {case index: (status,
    detail)} with status 'exact', 'mismatch', 'incomplete', 'refused', 'fault' or 'not run' (after
    `time_limit` seconds, or once `max_faults` faults are pinned)."""
    import os
    import shutil
    import tempfile
    import time
    t0 = time.perf_counter()
    cases = random_cases(n, seed)
    tmp = tempfile.mkdtemp(prefix="bwlab_tma_")
    try:
        todo = [list(range(s, min(s + group, n))) for s in range(0, n, group)]
        result, faults = {}, 0
        while todo:
            idx = todo.pop(0)
            if time.perf_counter() - t0 > time_limit or faults >= max_faults:
                for k in idx:
                    result[k] = ("not run", "time limit" if faults < max_faults else "fault limit")
                continue
            r = _child_json(["group", "--cases", str(n), "--seed", str(seed), "--out-dir", tmp,
                             "--indices", ",".join(map(str, idx))], timeout=60)
            if r.get("status") == "ran":
                for k, s, d in r["results"]:
                    result[k] = (s, d)
                continue
            if len(idx) == 1:
                faults += 1
                result[idx[0]] = ("fault", r.get("error", "?"))
                say(f"  case {idx[0]}: GPU fault ({r.get('error')}): {describe_case(cases[idx[0]])}")
                continue
            say(f"  cases {idx[0]}..{idx[-1]} ({len(idx)}): the child crashed ({r.get('error')}); splitting")
            todo[:0] = [idx[:len(idx) // 2], idx[len(idx) // 2:]]
        if dump:
            bad = [(k, s, _load_window(os.path.join(tmp, f"case{k}.bin")))
                   for k, (s, _) in sorted(result.items())
                   if s != "exact" and os.path.exists(os.path.join(tmp, f"case{k}.bin"))]
            if bad:
                _save_dump(dump, cases, bad, say)
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def coverage_lines(cases) -> list:
    """What a set of cases covers, one line per aspect."""
    from collections import Counter
    by = lambda f: dict(sorted(Counter(f(c) for c in cases).items()))  # noqa: E731
    narrow = [c for c in cases if is_narrow_swizzle(c.tmap)]
    return [
        f"  element bytes: {by(lambda c: c.tmap.elem_bytes)}",
        f"  dtypes: {by(lambda c: c.tmap.dtype)}",
        f"  ranks: {by(lambda c: c.tmap.rank)}",
        f"  swizzles: {by(lambda c: c.tmap.swizzle)}",
        f"  swizzled boxes narrower than the span: {len(narrow)}, by (swizzle, row bytes): "
        f"{dict(sorted(Counter((c.tmap.swizzle, c.tmap.inner_box_bytes) for c in narrow).items()))}",
        f"  SMEM offset mod 1024: {by(lambda c: c.smem_offset % 1024)} (+1024 in {sum(c.smem_offset >= 1024 for c in cases)})",
        f"  base address mod 256: {len(by(lambda c: c.gmem_offset))} distinct multiples of 16",
        f"  prefetch variants (0 none, 1 prefetch.tensormap, 2 box into L2, 3 both): {by(lambda c: int(c.prefetch))}",
        f"  L2 promotion: {by(lambda c: c.tmap.l2_promotion)}",
        f"  boxes out of bounds (partly or wholly): {sum(_is_oob(c) for c in cases)}; "
        f"NaN fill: {sum(c.tmap.oob_fill == 'nan' for c in cases)}; "
        f"element strides > 1: {sum(max(c.tmap.element_strides) > 1 for c in cases)}; "
        f"odd global dim 0: {sum(c.tmap.global_shape[0] % 2 == 1 for c in cases)}; "
        f"odd outer dims: {sum(any(d % 2 for d in c.tmap.global_shape[1:]) for c in cases)}",
        f"  box bytes: min {min(c.tmap.box_bytes for c in cases)}, max {max(c.tmap.box_bytes for c in cases)}; "
        f"SMEM footprint max {max(c.tmap.smem_footprint for c in cases)}",
    ]


def validate_main(argv=None) -> int:
    import argparse
    import time
    from collections import Counter

    from . import device
    ap = argparse.ArgumentParser(prog="python -m bwlab.validate tma",
                                 description="Random TMA loads on the GPU, SMEM bytes compared with bwlab.tma's model")
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--group", type=int, default=125, help="cases per child process (one launch each)")
    ap.add_argument("--time-limit", type=float, default=240.0, help="stop starting groups after this many seconds")
    ap.add_argument("--out", help="also write the report to this file")
    ap.add_argument("--dump", help="save the GPU windows of failing cases to this .npz")
    ap.add_argument("--probe", action="store_true",
                    help="also probe what the documentation leaves open (see probe_main)")
    ap.add_argument("--probe-narrow", action="store_true",
                    help="first probe swizzled boxes narrower than the span (see probe_narrow_main)")
    args = ap.parse_args(argv)
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    say(device.banner(print_it=False))
    if device.tier("tma") != "hardware":
        say("TMA loads need an sm_90+ GPU: nothing to validate here")
        return 1
    if args.probe_narrow:
        probe_narrow_main([], say=say)
    t0 = time.perf_counter()
    cases = random_cases(args.cases, args.seed)
    say(f"validation: {args.cases} random loads (seed {args.seed}), {args.group} per child process "
        "(one launch each; a GPU fault is pinned to its case by splitting its group)")
    res = validate_isolated(args.cases, args.seed, say=say, group=args.group, dump=args.dump,
                            time_limit=args.time_limit)
    t1 = time.perf_counter()
    counts = Counter(s for s, _ in res.values())
    bad = sorted(k for k, (s, _) in res.items() if s != "exact")
    for k in bad[:25]:
        s, d = res[k]
        say(f"  case {k}: {s}: {d}: {describe_case(cases[k])}")
    say(f"cases: {len(cases)} (seed {args.seed}); run and compared in {t1 - t0:.1f} s")
    for line in coverage_lines(cases):
        say(line)
    by_kind = Counter((cases[k].tmap.swizzle, is_narrow_swizzle(cases[k].tmap), res[k][0]) for k in res)
    say("  status by (swizzle, narrower than the span): " +
        ", ".join(f"{sw}{' narrow' if nw else ''} {st} {n}" for (sw, nw, st), n in sorted(by_kind.items())))
    say(f"  status by rank: " + ", ".join(f"rank {r} {st} {n}" for (r, st), n in
                                          sorted(Counter((cases[k].tmap.rank, res[k][0]) for k in res).items())))
    exact = counts.get("exact", 0)
    say(f"result: {exact}/{len(cases)} bit-exact {dict(sorted(counts.items()))} (SMEM windows incl. >= 1 KiB "
        "margins painted with a known background; expect_tx = the model's tx_bytes, and a second mbarrier "
        "phase must complete with no bytes outstanding)")
    if args.probe:
        probe_main([], say=say)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if exact == len(cases) else 1


# ---- swizzled boxes narrower than the swizzle span: python -m bwlab.tma narrow ----------------
def narrow_probe_cases():
    """Small swizzled boxes whose rows are narrower than the span: every narrow row width of each
    mode, element sizes 1..8, two destinations, one box hanging off an edge, one of rank 1."""
    rng = np.random.default_rng(7)
    out = []
    dts = ("uint8", "float16", "float32", "float64")
    k = 0
    for swz in ("32B", "64B", "128B"):
        span = SWIZZLE_BYTES[swz]
        for inner in range(16, span, 16):
            dt = dts[k % 4]
            elem = DTYPES[dt][1]
            k += 1
            shape = (inner // elem * 3, 9)
            t = TensorMap(dt, shape, (inner // elem, 5), swizzle=swz)
            g = rng.integers(0, 256, size=t.global_extent_bytes, dtype=np.uint8)
            for coords, off in (((inner // elem, 2), 0), ((2 * inner // elem, 6), 384)):
                out.append(LoadCase(t, g, coords, smem_offset=off))
    t = TensorMap("uint16", (40,), (8,), swizzle="64B")
    out.append(LoadCase(t, rng.integers(0, 256, size=80, dtype=np.uint8), (16,), smem_offset=128))
    t = TensorMap("float32", (200,), (32,), swizzle="128B")
    out.append(LoadCase(t, rng.integers(0, 256, size=800, dtype=np.uint8), (64,), smem_offset=256))
    t = TensorMap("float32", (10,), (4,))
    out.append(LoadCase(t, rng.integers(0, 256, size=40, dtype=np.uint8), (4,), smem_offset=0))
    return out


def _narrow_child(argv) -> int:
    """Child: run narrow_probe_cases() --which (comma list) one per launch with expect_tx = the box
    bytes ('box') or rows x span ('footprint'); one JSON line."""
    import json
    which = [int(x) for x in argv[0].split(",")]
    mode = argv[1]
    cases = narrow_probe_cases()
    out = []
    for i in which:
        c = cases[i]
        c.expect_tx = c.tmap.box_bytes if mode == "box" else math.prod(c.tmap.box_counts[1:]) * max(
            SWIZZLE_BYTES[c.tmap.swizzle], c.tmap.inner_box_bytes)
        r = run_cases([c])
        w = r.windows[0]
        changed = np.flatnonzero(w != background(w.size))
        out.append({"i": i, "done": bool(r.done[0]), "err": r.errors[0],
                    "timeout": str(r.timeout).splitlines()[0][:120] if r.timeout else None,
                    "exact": bool(np.array_equal(w, c.model_window())), "diag": diagnose_window(c, w),
                    "changed": int(changed.size), "last": int(changed.max()) if changed.size else None})
    print(json.dumps({"status": "ran", "results": out}), flush=True)
    return 0


def probe_narrow_main(argv=None, say=print) -> int:
    """Ask the GPU how a swizzled box narrower than its span lands in SMEM and what it counts:
    each case with expect_tx = box bytes and = rows x span, windows with >= 1 KiB of margin,
    one child process per (swizzle, tx) group (a fault costs only that group)."""
    cases = narrow_probe_cases()
    say("probe: swizzled boxes narrower than the swizzle span (and rank 1); model: rows one span apart, "
        f"gaps untouched, tx = box bytes (NARROW_SWIZZLE_PITCH={NARROW_SWIZZLE_PITCH!r}, "
        f"NARROW_SWIZZLE_TX={NARROW_SWIZZLE_TX!r})")
    groups = {}
    for i, c in enumerate(cases):
        groups.setdefault(c.tmap.swizzle, []).append(i)
    got = {}
    for swz, idx in groups.items():
        for mode in ("box", "footprint"):
            r = _child_json(["narrow", ",".join(map(str, idx)), mode], timeout=120)
            if r.get("status") != "ran":
                say(f"  {swz} cases {idx}, expect_tx = {mode}: the child crashed: {r.get('error')}")
                continue
            for x in r["results"]:
                got[(x["i"], mode)] = x
    for i, c in enumerate(cases):
        t = c.tmap
        say(f"  [{i:2d}] {t.dtype:8s} swizzle {t.swizzle:4s} rows of {t.inner_box_bytes:3d} B x "
            f"{math.prod(t.box_counts[1:])}, coords {tuple(c.coords)}, SMEM +{c.smem_offset}: box {t.box_bytes} B, "
            f"rows x span {math.prod(t.box_counts[1:]) * max(SWIZZLE_BYTES[t.swizzle], t.inner_box_bytes)} B")
        for mode in ("box", "footprint"):
            x = got.get((i, mode))
            if x is None:
                say(f"       expect_tx = {mode:9s}: no result (child crashed)")
                continue
            say(f"       expect_tx = {mode:9s}: handshake done={x['done']}, window == model: {x['exact']}; "
                f"{x['changed']} bytes changed (last at {x['last']}); {x['diag']}"
                + (f"; driver: {x['err']}" if x["err"] else "") + (f"; {x['timeout']}" if x["timeout"] else ""))
    return 0


# ---------------------------------------------------------------------------------------------
# Benchmark: python -m bwlab.bench tma_copy --out FILE
# ---------------------------------------------------------------------------------------------
COPY_ROW_BYTES = 1024  # the buffers are viewed as [rows][256 x uint32]: one box row = one 1 KiB row


@dataclass(frozen=True)
class CopyConfig:
    tile_rows: int = 16      # box = 256 uint32 x tile_rows rows = tile_rows KiB per stage
    stages: int = 6          # boxes in flight per CTA
    ctas_per_sm: int = 2
    l2_promotion: str = "256B"

    @property
    def tile_bytes(self) -> int:
        return self.tile_rows * COPY_ROW_BYTES


def make_tma_copy(src, dst, cfg: CopyConfig = CopyConfig()):
    """Prepare a copy of `src` to `dst` (CuPy arrays, same byte size, a multiple of the tile) with
    cuda_src/tma_copy_stream on a persistent grid of sm_count * ctas_per_sm CTAs.

    Runs it once through bwlab.runtime.launch (bounded waits checked, MbarrierTimeout on a stall)
    and returns a function that enqueues further copies with no host work beyond the launch
    itself, for timing; `check_status()` on that function reports a stall in those.
    """
    from . import device
    from .compile import load_module
    from .runtime import launch, LaunchConfigError, tensor_map_arg, STATUS_DTYPE, MbarrierTimeout
    import cupy as cp
    nbytes = src.nbytes
    if dst.nbytes != nbytes or nbytes % cfg.tile_bytes:
        raise ValueError(f"src and dst must have the same size, a multiple of the {cfg.tile_bytes}-byte tile")
    if not 1 <= cfg.stages <= 8:
        raise ValueError(f"stages must be 1..8 (TMA_MAX_STAGES), got {cfg.stages}")
    info = device.require("tma")
    rows = nbytes // COPY_ROW_BYTES
    maps = [TensorMap("uint32", (COPY_ROW_BYTES // 4, rows), (COPY_ROW_BYTES // 4, cfg.tile_rows),
                      l2_promotion=cfg.l2_promotion).encode(a.data.ptr) for a in (src, dst)]
    tiles = rows // cfg.tile_rows
    smem = cfg.stages * cfg.tile_bytes + SMEM_SLACK
    if smem > info.smem_per_block_optin or (smem + 1024) * cfg.ctas_per_sm > info.smem_per_sm:
        raise LaunchConfigError(f"{cfg} needs {smem} bytes of SMEM per CTA")
    grid = (min(tiles, info.sm_count * cfg.ctas_per_sm),)
    mod = load_module("tma_load")
    args = (tensor_map_arg(maps[0]), tensor_map_arg(maps[1]), np.uint32(1), np.uint32(tiles),
            np.uint32(COPY_ROW_BYTES // 4), np.uint32(cfg.tile_rows), np.uint32(cfg.tile_bytes),
            np.uint32(cfg.stages))
    launch(mod, "tma_copy_stream", grid, (32,), args, shared_mem=smem, barrier_names=COPY_BARRIERS)
    kernel = mod.get_function("tma_copy_stream")

    def run():
        kernel(grid, (32,), args, shared_mem=smem)

    def check_status():
        cp.cuda.Device().synchronize()
        rec = np.zeros(1, dtype=STATUS_DTYPE)
        st = mod.get_global("bw_status")
        cp.cuda.runtime.memcpy(rec.ctypes.data, st.ptr, STATUS_DTYPE.itemsize, cp.cuda.runtime.memcpyDeviceToHost)
        if rec["code"][0]:
            raise MbarrierTimeout("tma_copy_stream", COPY_BARRIERS.get(int(rec["barrier_id"][0]), "?"), rec[0])

    run.check_status = check_status
    return run


def bench_main(argv=None) -> int:
    import argparse

    import cupy as cp

    from . import device
    from .runtime import bench
    ap = argparse.ArgumentParser(prog="python -m bwlab.bench tma_copy",
                                 description="TMA streaming copy (load -> SMEM -> store) vs cupy device-to-device copy")
    ap.add_argument("--sizes-mib", default="256,512,1024,2048,4096")
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    info = device.gpu_info()
    if device.tier("tma") != "hardware":
        say("the TMA copy needs an sm_90+ GPU")
        return 1
    say(f"GPU: {info.name} ({info.sm}, {info.sm_count} SMs, L2 {info.l2_bytes >> 20} MiB)")
    say("GB/s counts bytes read + bytes written (2 x size) per copy; median of "
        f"{args.repeat} timed samples (each max(1, 2048/size_MiB) back-to-back copies) after 3 warm-ups, "
        "CUDA events; baseline = cupy device-to-device copy (cudaMemcpyAsync) in the same process; "
        "'copy exact' = dst equals src after the first TMA copy")

    def measure(mib, cfgs):
        n = mib << 20
        src = cp.arange(n // 4, dtype=cp.uint32) * cp.uint32(2654435761)
        dst = cp.zeros_like(src)
        inner = max(1, 2048 // mib)  # copies per timed sample, so launch latency stays hidden

        def baseline():
            for _ in range(inner):
                dst.data.copy_from_device_async(src.data, n)
        base = bench("cupy d2d", baseline, repeat=args.repeat, bytes_moved=2 * n * inner)
        res = []
        for cfg in cfgs:
            dst.fill(0)
            copy = make_tma_copy(src, dst, cfg)
            ok = bool(cp.array_equal(src, dst))

            def timed():
                for _ in range(inner):
                    copy()
            r = bench(f"tma {cfg}", timed, repeat=args.repeat, bytes_moved=2 * n * inner)
            copy.check_status()
            res.append((cfg, r, ok))
        return base, res

    sweep = [CopyConfig(t, s, c) for t, s, c in ((16, 4, 2), (16, 6, 2), (32, 3, 2), (32, 6, 1), (8, 8, 3),
                                                (16, 8, 1), (32, 4, 1))]
    say("")
    say("configuration sweep at 1024 MiB (tile = 256 x uint32 x tile_rows, stages in flight per CTA):")
    base, res = measure(1024, sweep)
    cp.get_default_memory_pool().free_all_blocks()
    say(f"  {'tile KiB':>8} {'stages':>6} {'CTAs/SM':>7} {'GB/s':>9} {'vs cupy':>8} {'copy exact':>10}")
    for cfg, r, ok in res:
        say(f"  {cfg.tile_bytes >> 10:8d} {cfg.stages:6d} {cfg.ctas_per_sm:7d} {r.gbps:9.1f} "
            f"{r.gbps / base.gbps:8.3f} {str(ok):>10}")
    say(f"  cupy d2d: {base.gbps:.1f} GB/s")
    best = max((x for x in res if x[2]), key=lambda x: x[1].gbps)[0]
    say(f"chosen: {best}")
    say("")
    say(f"{'size MiB':>8} {'cupy GB/s':>10} {'TMA GB/s':>9} {'ratio':>6} {'copy exact':>10}")
    worst = None
    for mib in [int(x) for x in args.sizes_mib.split(",")]:
        base, res = measure(mib, [best])
        cp.get_default_memory_pool().free_all_blocks()
        cfg, r, ok = res[0]
        ratio = r.gbps / base.gbps
        worst = ratio if worst is None else min(worst, ratio)
        say(f"{mib:8d} {base.gbps:10.1f} {r.gbps:9.1f} {ratio:6.3f} {str(ok):>10}")
    say(f"lowest ratio {worst:.3f} (goal >= 0.9)")
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0


# ---------------------------------------------------------------------------------------------
# The mbarrier handshake, as a state machine (PTX ISA 9.7.13.15 "mbarrier")
# ---------------------------------------------------------------------------------------------
class Mbarrier:
    """An mbarrier's state: expected arrivals per phase, pending arrivals, the transaction count
    and the current phase. A phase completes when pending arrivals and tx-count are both zero;
    the barrier then moves to the next phase with `expected` arrivals pending again."""

    def __init__(self, count: int):
        self.expected = self.pending = int(count)
        self.tx = 0
        self.phase = 0

    def _advance(self) -> bool:
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.expected
            return True
        return False

    def arrive_expect_tx(self, tx_bytes: int) -> bool:
        self.tx += int(tx_bytes)  # expect-tx happens before the arrive-on
        self.pending -= 1
        return self._advance()

    def arrive(self) -> bool:
        self.pending -= 1
        return self._advance()

    def complete_tx(self, nbytes: int) -> bool:
        self.tx -= int(nbytes)
        return self._advance()

    def try_wait_parity(self, parity: int) -> bool:
        """True once the phase with this parity has completed (the current phase has the other one)."""
        return (self.phase & 1) != (parity & 1)


def handshake_events(box_bytes: int, pieces: int = 4, extra_tx: int = 0):
    """Steps of one TMA load's handshake as (actor, action, pending, tx, phase, waiter sees).

    The TMA engine's complete_tx is drawn as `pieces` equal parts; how finely the hardware really
    reports bytes is not architectural, only the sum is. `extra_tx` > 0 announces more bytes than
    the box has, which is the classic hang: the phase never completes.
    """
    bar = Mbarrier(1)
    ev = []

    def note(actor, action):
        ev.append((actor, action, bar.pending, bar.tx, bar.phase, bar.try_wait_parity(0)))

    note("thread 0", "mbarrier.init(count=1)")
    note("all threads", "try_wait.parity(0)")
    bar.arrive_expect_tx(box_bytes + extra_tx)
    note("thread 0", f"arrive.expect_tx({box_bytes + extra_tx})")
    note("thread 0", "cp.async.bulk.tensor (issue)")
    step = box_bytes // pieces
    sizes = [step] * (pieces - 1) + [box_bytes - step * (pieces - 1)]
    for s in sizes:
        flipped = bar.complete_tx(s)
        note("TMA engine", f"complete_tx({s})" + ("  -> phase 0 complete" if flipped else ""))
    note("all threads", "try_wait.parity(0)")
    return ev


def plot_handshake(box_bytes: int = 8192, pieces: int = 4, extra_tx: int = 0, ax=None):
    """The handshake as a timeline: one lane per actor, the mbarrier's tx-count and phase below."""
    import matplotlib.pyplot as plt

    from .plotting import add_legend, warp_color
    ev = handshake_events(box_bytes, pieces, extra_tx)
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 3.8))
    lanes = {"thread 0": 3, "TMA engine": 2, "all threads": 1}
    colors = {"thread 0": warp_color(0), "TMA engine": warp_color(1), "all threads": warp_color(2)}
    for i, (actor, action, pending, tx, phase, seen) in enumerate(ev):
        y = lanes[actor]
        ax.scatter([i], [y], s=90, color=colors[actor], edgecolor="black", zorder=3)
        label = action if actor != "all threads" else f"{action} -> {seen}"
        ax.annotate(label, (i, y), textcoords="offset points", xytext=(0, 9), ha="center", fontsize=7, rotation=12)
        ax.text(i, 0.25, f"pending {pending}\ntx {tx}\nphase {phase}", ha="center", va="center", fontsize=7,
                bbox=dict(boxstyle="round", fc="#fff2cc" if tx else "#e2f0d9", ec="gray"))
    ax.set_yticks([0.25, 1, 2, 3])
    ax.set_yticklabels(["mbarrier state", "all threads (wait)", "TMA engine", "thread 0"])
    ax.set_xlim(-0.6, len(ev) - 0.4)
    ax.set_ylim(-0.35, 3.9)
    ax.set_xticks(range(len(ev)))
    ax.set_xlabel("step (order of events, not to scale)")
    what = "expect_tx matches the box" if not extra_tx else f"expect_tx announces {extra_tx} bytes too many"
    ax.set_title(f"mbarrier handshake of one {box_bytes}-byte TMA load: {what}")
    add_legend(ax, [(k, v) for k, v in colors.items()] + [("tx pending", "#fff2cc"), ("tx zero", "#e2f0d9")])
    return ax


# ---------------------------------------------------------------------------------------------
# Pictures for notebook 01
# ---------------------------------------------------------------------------------------------
def cta_tiles(tmap: TensorMap):
    """For a 2D tensor map: the CTA grid that covers the tensor with one box per CTA, as a list
    of (blockIdx.x, blockIdx.y, (c0, c1)) and the (rows, cols) owner index of every element."""
    if tmap.rank != 2:
        raise ValueError(f"cta_tiles draws 2D tensor maps; this one has rank {tmap.rank}")
    (w, h), (bw, bh) = tmap.global_shape, tmap.box_shape
    gx, gy = -(-w // bw), -(-h // bh)
    tiles = [(x, y, (x * bw, y * bh)) for y in range(gy) for x in range(gx)]
    owner = (np.arange(h)[:, None] // bh) * gx + (np.arange(w)[None, :] // bw)
    return tiles, owner, (gx, gy)


def plot_cta_tiles(tmap: TensorMap):
    """The global matrix coloured by the CTA whose box covers each element, next to the CTA grid."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from .plotting import add_legend, cta_color
    tiles, owner, (gx, gy) = cta_tiles(tmap)
    (w, h), (bw, bh) = tmap.global_shape, tmap.box_shape
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [w / h * 1.2 + 0.2, 1]})
    img = np.array([[plt.matplotlib.colors.to_rgb(cta_color(o)) for o in row] for row in owner])
    a0.imshow(img, interpolation="nearest", aspect="auto", extent=(-0.5, w - 0.5, h - 0.5, -0.5))
    for x, y, (c0, c1) in tiles:
        a0.add_patch(Rectangle((c0 - 0.5, c1 - 0.5), bw, bh, fill=False, lw=1.2, ec="black",
                               ls="-" if c0 + bw <= w and c1 + bh <= h else "--", clip_on=False))
    a0.set_xlim(-0.5, gx * bw - 0.5)
    a0.set_ylim(gy * bh - 0.5, -0.5)
    a0.set_xlabel(f"dim 0 (contiguous), {w} elements; dashed boxes hang off the edge (zero fill)")
    a0.set_ylabel(f"dim 1, {h} rows")
    a0.set_title(f"global {tmap.dtype} tensor {w} x {h}, box {bw} x {bh}: one box per CTA")
    for x, y, (c0, c1) in tiles:
        k = y * gx + x
        a1.add_patch(Rectangle((x, y), 0.95, 0.95, color=cta_color(k)))
        a1.text(x + 0.47, y + 0.47, f"CTA ({x},{y})\ncoords\n({c0}, {c1})", ha="center", va="center", fontsize=8)
    a1.set_xlim(0, gx)
    a1.set_ylim(gy, 0)
    a1.set_xticks([])
    a1.set_yticks([])
    a1.set_title(f"CTA grid {gx} x {gy} (blockIdx.x, blockIdx.y)")
    add_legend(a1, [(f"CTA ({x},{y})", cta_color(y * gx + x)) for x, y, _ in tiles])
    fig.tight_layout()
    return fig


def smem_chunks(tmap: TensorMap, smem_address: int = 0):
    """Which 16-byte chunk of the box sits in each 16-byte SMEM chunk: arrays (box row, chunk in
    row), one entry per SMEM chunk from smem_address on, after the swizzle. -1 marks none."""
    check_modelled(tmap)
    inner, pitch = tmap.inner_box_bytes, tmap.smem_pitch
    chunk = np.arange(tmap.box_bytes // 16, dtype=np.int64)
    r, k = chunk // (inner // 16), chunk % (inner // 16)  # box row, 16-byte chunk inside the row
    dest = (SWIZZLES[tmap.swizzle](smem_address + r * pitch + k * 16) - smem_address) // 16
    row = np.full(-(-int(dest.max() + 1) // 8) * 8, -1)
    col = row.copy()
    row[dest] = r
    col[dest] = k
    return row, col


def plot_smem_image(tmap: TensorMap, smem_address: int = 0, ax=None, title=None, max_lines: int = 16):
    """SMEM as 128-byte lines x 8 chunks of 16 bytes; each chunk labelled with the box row and the
    16-byte chunk of that row it holds, coloured by its chunk index inside the row."""
    import matplotlib.pyplot as plt

    from .plotting import add_legend, draw_grid, thread_color
    row, col = smem_chunks(tmap, smem_address)
    lines = min(len(row) // 8, max_lines)
    r, c = row[:lines * 8].reshape(lines, 8), col[:lines * 8].reshape(lines, 8)
    colors = np.empty((lines, 8), dtype=object)
    text = np.empty((lines, 8), dtype=object)
    for i in range(lines):
        for j in range(8):
            colors[i, j] = thread_color(c[i, j] * 4, 32) if r[i, j] >= 0 else "#e6e6e6"
            text[i, j] = f"r{r[i, j]}\nc{c[i, j]}" if r[i, j] >= 0 else ""
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 0.42 * lines + 1.2))
    draw_grid(ax, colors, text, fontsize=6,
              title=title or f"{tmap.swizzle} swizzle, SMEM 0x{smem_address:04x}",
              xlabel="16-byte chunk of the 128-byte SMEM line (4 banks each)", ylabel="SMEM line",
              xticks=[f"{j}" for j in range(8)],
              yticks=[f"0x{smem_address + 128 * i:04x}" for i in range(lines)])
    ncol = max(1, tmap.inner_box_bytes // 16)
    add_legend(ax, [(f"chunk c{k} of a box row", thread_color(k * 4, 32)) for k in range(min(ncol, 8))]
               + [("not written by the load", "#e6e6e6")], title="rK = box row K")
    return ax


def plot_swizzle_modes(dtype: str = "float16", smem_address: int = 0):
    """One picture per swizzle mode of a box whose rows are as wide as the mode allows, 8 lines."""
    import matplotlib.pyplot as plt
    elem = DTYPES[dtype][1]
    fig, axes = plt.subplots(1, 4, figsize=(20, 5.2))
    for ax, mode in zip(axes, SWIZZLE_MODES):
        inner = SWIZZLE_BYTES[mode] or 128
        t = TensorMap(dtype, (inner // elem, 64), (inner // elem, 1024 // inner), swizzle=mode)
        plot_smem_image(t, smem_address, ax=ax,
                        title=f"{mode}: box {inner // elem} x {1024 // inner} {dtype}\n({inner}-byte rows)")
        if ax is not axes[-1]:
            ax.get_legend().remove()
    fig.suptitle(f"Where each 16-byte chunk of the box lands in SMEM (destination 0x{smem_address:04x})")
    fig.tight_layout()
    return fig


def bank_wavefronts(addresses, access_bytes: int) -> int:
    """Shared-memory wavefronts a warp needs for one access of `access_bytes` per thread at these
    byte addresses: 32 banks of 4 bytes; 8-byte accesses are served 16 threads at a time and
    16-byte ones 8 at a time; within a group, a bank serves one 4-byte word per wavefront."""
    addresses = np.asarray(addresses, dtype=np.int64)
    group = {4: 32, 8: 16, 16: 8}[access_bytes]
    total = 0
    for g in range(0, addresses.size, group):
        words = set()
        for a in addresses[g:g + group]:
            words.update(range(a // 4, (a + access_bytes) // 4))
        per_bank = {}
        for w in words:
            per_bank.setdefault(w % 32, set()).add(w)
        total += max(len(v) for v in per_bank.values())
    return total


def column_read_addresses(tmap: TensorMap, column_byte: int, access_bytes: int, smem_address: int = 0):
    """SMEM byte addresses at which thread t of a warp finds `access_bytes` at byte `column_byte` of
    box row t (rows 0..31), given where the TMA put them (the swizzle applied)."""
    rows = np.arange(32, dtype=np.int64)
    lin = rows * tmap.smem_pitch + column_byte
    return SWIZZLES[tmap.swizzle](smem_address + lin)


def bank_conflict_table(dtype: str = "float16"):
    """Wavefronts of a warp reading one column (4- and 16-byte accesses) of 32 box rows, for rows
    as wide as each swizzle mode allows, with that swizzle and without it."""
    elem = DTYPES[dtype][1]
    out = []
    for mode in ("32B", "64B", "128B"):
        inner = SWIZZLE_BYTES[mode]
        for access in (4, 16):
            row = []
            for swz in ("none", mode):
                t = TensorMap(dtype, (inner // elem, 64), (inner // elem, 32), swizzle=swz)
                row.append(bank_wavefronts(column_read_addresses(t, 0, access), access))
            out.append((mode, inner, access, row[0], row[1]))
    return out


def plot_bank_conflicts(dtype: str = "float16", access_bytes: int = 16):
    """Banks touched by a warp's column read of a 128-byte-row box, without and with 128B swizzle."""
    import matplotlib.pyplot as plt

    from .plotting import add_legend, thread_color
    elem = DTYPES[dtype][1]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), sharey=True)
    for ax, swz in zip(axes, ("none", "128B")):
        t = TensorMap(dtype, (128 // elem, 64), (128 // elem, 32), swizzle=swz)
        addr = column_read_addresses(t, 0, access_bytes)
        wf = bank_wavefronts(addr, access_bytes)
        for th, a in enumerate(addr):
            b0 = (a // 4) % 32
            ax.barh(th, access_bytes // 4, left=b0, color=thread_color(th), edgecolor="black", lw=0.3)
        ax.set_xlim(0, 32)
        ax.set_ylim(31.5, -0.5)
        ax.set_xlabel("bank (4 bytes each)")
        ax.set_title(f"swizzle {swz}: {wf} wavefronts")
    axes[0].set_ylabel("thread t reads box row t, column 0")
    add_legend(axes[1], [(f"thread {k}", thread_color(k)) for k in (0, 1, 7, 8, 31)], title="colour = thread")
    fig.suptitle(f"A warp reads column 0 of a {dtype} box with 128-byte rows, {access_bytes} bytes per thread")
    fig.tight_layout()
    return fig


def plot_oob_box(tmap: TensorMap, gmem, coords):
    """A 2D box that hangs off the tensor: where it sits, and its SMEM image (loaded vs fill)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from .plotting import BYTE_COLORS, add_legend
    if tmap.rank != 2 or tmap.swizzle != "none":
        raise ValueError("plot_oob_box draws unswizzled 2D boxes")
    (w, h), (bw, bh) = tmap.global_shape, tmap.box_counts
    smem = tma_load_model(gmem, tmap, coords).view(np_dtype(tmap.dtype)).reshape(bh, bw)
    c0, c1 = coords
    es1 = tmap.element_strides[1]
    inside = ((np.arange(bw) + c0 >= 0) & (np.arange(bw) + c0 < w))[None, :] & \
             ((np.arange(bh) * es1 + c1 >= 0) & (np.arange(bh) * es1 + c1 < h))[:, None]
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(12, 4.4))
    a0.imshow(np.ones((h, w, 3)) * 0.92, extent=(-0.5, w - 0.5, h - 0.5, -0.5))
    a0.add_patch(Rectangle((-0.5, -0.5), w, h, fill=False, ec="black", lw=1.5))
    a0.add_patch(Rectangle((c0 - 0.5, c1 - 0.5), bw, (bh - 1) * es1 + 1, fill=True, alpha=0.35,
                           color=BYTE_COLORS["loaded"], ec="black"))
    a0.set_xlim(min(-1, c0 - 1), max(w, c0 + bw) + 0.5)
    a0.set_ylim(max(h, c1 + bh * es1) + 0.5, min(-1, c1 - 1))
    a0.set_title(f"tensor {w} x {h} and the box at coordinates {tuple(coords)}")
    a0.set_xlabel("dim 0")
    a0.set_ylabel("dim 1")
    img = np.where(inside[..., None], np.array(plt.matplotlib.colors.to_rgb(BYTE_COLORS["loaded"])),
                   np.array(plt.matplotlib.colors.to_rgb(BYTE_COLORS["oob fill"])))
    a1.imshow(img, interpolation="nearest", aspect="auto")
    for i in range(bh):
        for j in range(bw):
            v = smem[i, j]
            a1.text(j, i, "NaN" if isinstance(v, np.floating) and np.isnan(v) else f"{v:g}",
                    ha="center", va="center", fontsize=6, color="white" if inside[i, j] else "black")
    a1.set_title(f"SMEM image, {tmap.box_bytes} bytes (oob_fill={tmap.oob_fill!r})")
    a1.set_xlabel("box column")
    a1.set_ylabel("box row")
    add_legend(a1, [("loaded from the tensor", BYTE_COLORS["loaded"]), ("out-of-bounds fill", BYTE_COLORS["oob fill"])])
    fig.tight_layout()
    return fig


def swizzle_explorer():
    """An ipywidgets control (box shape, swizzle, dtype, destination) that redraws the SMEM image;
    an invalid combination shows the TensorMapError instead of a picture."""
    import ipywidgets as W
    import matplotlib.pyplot as plt

    def show(dtype, inner_elems, rows, swizzle, smem_line):
        try:
            t = TensorMap(dtype, (inner_elems, 256), (inner_elems, rows), swizzle=swizzle)
            check_modelled(t)
        except TensorMapError as e:
            print(e)
            return
        plot_smem_image(t, smem_line * 128, max_lines=16)
        plt.show()
        print(f"box {inner_elems} x {rows} {dtype}: {t.box_bytes} bytes, expect_tx({t.tx_bytes}); rows "
              f"{t.smem_pitch} bytes apart in SMEM ({t.smem_footprint} bytes from the first to the end of the last)")

    return W.interactive(show, dtype=W.Dropdown(options=list(DTYPES), value="float16"),
                         inner_elems=W.IntSlider(value=64, min=1, max=256), rows=W.IntSlider(value=8, min=1, max=32),
                         swizzle=W.Dropdown(options=list(SWIZZLE_MODES), value="128B"),
                         smem_line=W.IntSlider(value=0, min=0, max=7, description="dst / 128"))


# ---------------------------------------------------------------------------------------------
# Finding what makes a case fault: python -m bwlab.tma diagnose --cases 1000 --seed 0
# A fault (illegal instruction, misaligned address) poisons the CUDA context, so every trial
# runs in a child process (python -m bwlab.tma subset ...).
# ---------------------------------------------------------------------------------------------
STRIPS = ("prefetch", "l2", "gmem_offset", "smem_offset", "coords_inside", "element_strides", "nan_fill",
          "swizzle", "box_le_dims", "dtype_uint", "grow_dims")
_UINT = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}


def strip_case(c: LoadCase, what: str) -> LoadCase:
    """The same case with one feature taken away (used to find which one makes it fault)."""
    t = c.tmap
    kw = dict(dtype=t.dtype, global_shape=t.global_shape, box_shape=t.box_shape, global_strides=t.global_strides,
              element_strides=t.element_strides, swizzle=t.swizzle, l2_promotion=t.l2_promotion, oob_fill=t.oob_fill)
    coords, smem, goff, pf = tuple(c.coords), c.smem_offset, c.gmem_offset, c.prefetch
    if what == "prefetch":
        pf = 0
    elif what == "l2":
        kw["l2_promotion"] = "none"
    elif what == "gmem_offset":
        goff = 0
    elif what == "smem_offset":
        smem = 0
    elif what == "coords_inside":
        coords = tuple(max(0, min(co, d - ((n - 1) * e + 1))) for co, n, e, d in
                       zip(coords, t.box_counts, t.element_strides, t.global_shape))
        g0 = 16 // t.elem_bytes
        coords = ((coords[0] // g0) * g0,) + coords[1:]
    elif what == "element_strides":
        kw["element_strides"] = (1,) * t.rank
    elif what == "nan_fill":
        kw["oob_fill"] = "zero"
    elif what == "swizzle":
        kw["swizzle"] = "none"
    elif what == "box_le_dims":
        box = [min(b, d) if i else b for i, (b, d) in enumerate(zip(t.box_shape, t.global_shape))]
        kw["box_shape"] = tuple(box)
    elif what == "dtype_uint":
        kw["dtype"] = _UINT[t.elem_bytes]
        kw["oob_fill"] = "zero"
    elif what == "grow_dims":  # every dim at least as long as the box reaches, rows >= 16 bytes
        shape = [max(d, b * e, 16 // t.elem_bytes if i == 0 else 1) for i, (d, b, e) in
                 enumerate(zip(t.global_shape, t.box_shape, t.element_strides))]
        strides, pitch = [], _round_up(shape[0] * t.elem_bytes, 16)
        for d in shape[1:]:
            strides.append(pitch)
            pitch *= d
        kw["global_shape"], kw["global_strides"] = tuple(shape), tuple(strides)
        t2 = TensorMap(**kw)
        return LoadCase(t2, np.zeros(t2.global_extent_bytes, np.uint8), coords, smem_offset=smem,
                        gmem_offset=goff, prefetch=pf)
    else:
        raise ValueError(f"unknown strip {what!r}; one of {STRIPS}")
    return LoadCase(TensorMap(**kw), c.gmem, coords, smem_offset=smem, gmem_offset=goff, prefetch=pf)


def _subset_main(argv) -> int:
    import argparse
    import json
    ap = argparse.ArgumentParser(prog="python -m bwlab.tma subset")
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--indices", default="all")
    ap.add_argument("--prefetch", default="asis")
    ap.add_argument("--strip", default="")
    a = ap.parse_args(argv)
    cases = random_cases(a.cases, a.seed)
    idx = list(range(len(cases))) if a.indices == "all" else [int(x) for x in a.indices.split(",") if x]
    sel = []
    for i in idx:
        c = cases[i]
        for s in filter(None, a.strip.split(",")):
            c = strip_case(c, s)
        if a.prefetch != "asis":
            c.prefetch = int(a.prefetch)
        sel.append(c)
    try:
        r = run_cases(sel)
        bad = [(i, "driver-refused" if err else "incomplete" if not ok else "mismatch")
               for i, c, w, ok, err in zip(idx, sel, r.windows, r.done, r.errors)
               if err or not ok or not np.array_equal(w, c.model_window())]
        kinds = {}
        for _, why in bad:
            kinds[why] = kinds.get(why, 0) + 1
        print(json.dumps({"status": "ok" if not bad else "bad", "bad": [i for i, _ in bad[:50]],
                          "nbad": len(bad), "kinds": kinds}))
        return 0
    except Exception as e:  # noqa: BLE001 - a fault is the result we are looking for
        print(json.dumps({"status": "crash", "error": f"{type(e).__name__}: {str(e).splitlines()[0][:150]}"}))
        return 3


def _trial(args) -> dict:
    import json
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "bwlab.tma", "subset"] + args, capture_output=True, text=True,
                       timeout=120)
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"status": "crash", "error": (p.stderr.strip().splitlines() or ["no output"])[-1][:150]}


def diagnose_main(argv=None, say=print) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m bwlab.tma diagnose")
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    base = ["--cases", str(a.cases), "--seed", str(a.seed)]
    say("diagnose: all cases with each prefetch mode (0 none, 1 tensormap, 2 box, 3 both), one child each")
    res = {}
    for mode in ("0", "1", "2", "3"):
        res[mode] = _trial(base + ["--prefetch", mode])
        say(f"  prefetch={mode}: {res[mode]}")
    if res["0"]["status"] != "crash":
        return 0
    say("diagnose: all cases, prefetch 0, one feature taken away from every case")
    for s in STRIPS[1:]:
        say(f"  without {s:16s}: {_trial(base + ['--prefetch', '0', '--strip', s])}")
    cases = random_cases(a.cases, a.seed)
    pool = list(range(a.cases))
    while len(pool) > 1:
        half = pool[:len(pool) // 2]
        if _trial(base + ["--prefetch", "0", "--indices", ",".join(map(str, half))])["status"] == "crash":
            pool = half
        else:
            pool = pool[len(pool) // 2:]
    k = pool[0]
    alone = _trial(base + ["--prefetch", "0", "--indices", str(k)])
    say(f"  bisected to case {k} (alone: {alone['status']}): {describe_case(cases[k])}")
    for s in STRIPS[1:]:
        say(f"    without {s:16s}: {_trial(base + ['--prefetch', '0', '--indices', str(k), '--strip', s])['status']}")
    return 0


if __name__ == "__main__":
    import sys
    cmd, rest = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if cmd == "subset":
        raise SystemExit(_subset_main(rest))
    if cmd == "diagnose":
        raise SystemExit(diagnose_main(rest))
    if cmd == "group":
        raise SystemExit(_group_main(rest))
    if cmd == "narrow":
        raise SystemExit(_narrow_child(rest))
    print("usage: python -m bwlab.tma diagnose [--cases N --seed S] | subset ... | group ... | narrow ...")
    raise SystemExit(2)
