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
  order, element strides, swizzle as a function of the SMEM address, out-of-bounds fill), and
  `TensorMap.box_bytes`, the transaction count the mbarrier must expect.
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

from .swizzle import SWIZZLES

__all__ = [
    "DTYPES", "TensorMap", "TensorMapError", "tma_load_model", "tma_load_writes", "tma_load_window",
    "oob_fill_bits", "np_dtype", "SMEM_ALIGNMENT", "MAX_TX_BYTES",
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
        if self.interleave == "none" and (box[0] * elem) % 16:
            raise TensorMapError("box-inner-bytes",
                                 f"box_shape[0] * element size = {box[0]} * {elem} = {box[0] * elem} bytes "
                                 "must be a multiple of 16 when interleave is 'none'")
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
        """Bytes one load writes to SMEM, out-of-bounds fill included: the mbarrier's expect_tx."""
        return self.box_elements * self.elem_bytes

    @property
    def inner_box_bytes(self) -> int:
        return self.box_counts[0] * self.elem_bytes

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
        return {
            "tensorDataType": DTYPES[self.dtype][0],
            "tensorRank": self.rank,
            "globalAddress": global_address,
            "globalDim": list(self.global_shape),
            "globalStrides": list(self.global_strides),
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
                 f"{self.box_bytes} bytes (the expect_tx count)"]
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------
# The OOB-NaN written by CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA, per dtype, as raw bits.
# (Checked on the H100 by `python -m bwlab.validate tma`; see docs/results/tma_validate_h100.txt.)
_OOB_NAN_BITS = {"float16": 0x7FFF, "bfloat16": 0x7FFF, "float32": 0x7FFFFFFF, "tf32": 0x7FFFFFFF,
                 "float64": 0x7FFFFFFFFFFFFFFF}
# Whether a TFLOAT32 load rounds each 32-bit value to tf32 (10 mantissa bits, nearest even).
TF32_ROUNDS_ON_LOAD = True


def oob_fill_bits(tmap: TensorMap) -> int:
    """Raw bits of one out-of-bounds element: 0, or the OOB-NaN for oob_fill='nan'."""
    return _OOB_NAN_BITS[tmap.dtype] if tmap.oob_fill == "nan" else 0


def _tf32_round(bits: np.ndarray) -> np.ndarray:
    """Round float32 bit patterns to tf32 (keep 10 mantissa bits), nearest even; NaN/Inf untouched."""
    b = bits.astype(np.uint64)
    finite = (b & 0x7F800000) != 0x7F800000
    lsb = (b >> 13) & 1
    r = ((b + 0xFFF + lsb) & ~np.uint64(0x1FFF)) & 0xFFFFFFFF
    return np.where(finite, r, b).astype(np.uint32)


def _check_coords(tmap: TensorMap, coords) -> tuple:
    coords = tuple(int(c) for c in coords)
    if len(coords) != tmap.rank:
        raise TensorMapError("coords", f"a rank-{tmap.rank} load takes {tmap.rank} coordinates, got {coords}")
    for i, c in enumerate(coords):
        if not -(1 << 31) <= c < (1 << 31):
            raise TensorMapError("coords", f"coordinate {i} = {c} is not a signed 32-bit integer")
    return coords


def _gmem_bytes(gmem, tmap: TensorMap) -> np.ndarray:
    gb = np.ascontiguousarray(gmem).reshape(-1).view(np.uint8)
    if gb.size < tmap.global_extent_bytes:
        raise TensorMapError("gmem-extent", f"global_shape {tmap.global_shape} with byte strides "
                                            f"{tmap.byte_strides} spans {tmap.global_extent_bytes} bytes; "
                                            f"the array given has {gb.size}")
    return gb


def tma_load_writes(gmem, tmap: TensorMap, coords, smem_address: int = 0):
    """Every byte one TMA load writes: (SMEM byte addresses, byte values), in box order.

    Element (j0, j1, ...) of the box (j_i < ceil(box_i / elementStride_i)) is global element
    c_i + j_i * elementStride_i; it is in bounds when 0 <= that < global_shape[i] in every
    dimension, otherwise its bytes are the fill. Unswizzled, it sits at byte
    smem_address + elem * (j0 + n0 * (j1 + n1 * (j2 + ...))); the swizzle then permutes 16-byte
    chunks by the address bits (CuTe Swizzle<B,4,3> on the absolute SMEM address).
    """
    if tmap.interleave != "none":
        raise NotImplementedError("the model covers interleave='none'; interleaved layouts are validated "
                                  "by the driver but their SMEM image is not modelled")
    coords = _check_coords(tmap, coords)
    smem_address = int(smem_address)
    if smem_address < 0 or smem_address % SMEM_ALIGNMENT:
        raise TensorMapError("smem-alignment", f"the SMEM destination 0x{smem_address:x} must be "
                                               f"{SMEM_ALIGNMENT}-byte aligned")
    gb = _gmem_bytes(gmem, tmap)
    elem = tmap.elem_bytes
    n = tmap.box_counts
    # j[i] for every box element, element 0 first, dim 0 fastest.
    j = np.indices(n[::-1], dtype=np.int64).reshape(tmap.rank, -1)[::-1]
    g = np.asarray(coords, dtype=np.int64)[:, None] + j * np.asarray(tmap.element_strides, dtype=np.int64)[:, None]
    dims = np.asarray(tmap.global_shape, dtype=np.int64)[:, None]
    inb = np.all((g >= 0) & (g < dims), axis=0)
    goff = (np.where(inb, g, 0) * np.asarray(tmap.byte_strides, dtype=np.int64)[:, None]).sum(axis=0)
    vals = gb[goff[:, None] + np.arange(elem)]  # (elements, elem) bytes
    if tmap.dtype == "tf32" and TF32_ROUNDS_ON_LOAD:
        vals = _tf32_round(vals.copy().view("<u4").reshape(-1)).view(np.uint8).reshape(-1, elem)
    fill = np.frombuffer(int(oob_fill_bits(tmap)).to_bytes(elem, "little"), dtype=np.uint8)
    vals = np.where(inb[:, None], vals, fill[None, :]).reshape(-1)
    addr = smem_address + np.arange(vals.size, dtype=np.int64)
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
    """The bytes of the box as they land in SMEM starting at `smem_address` (length box_bytes).

    `gmem` is the whole global tensor (any dtype and shape: its raw bytes are what the tensor map
    addresses, base at byte 0). The swizzle is applied as a function of the absolute SMEM address,
    so the same box looks different at 0x0000 and at 0x0080 unless the swizzle is 'none'.
    """
    addr, vals = tma_load_writes(gmem, tmap, coords, smem_address)
    rel = addr - int(smem_address)
    if rel.size and (rel.min() < 0 or rel.max() >= tmap.box_bytes):
        raise TensorMapError(
            "swizzle-image",
            f"with swizzle {tmap.swizzle} at SMEM 0x{int(smem_address):x}, the last partial 128-byte line of "
            f"this {tmap.box_bytes}-byte box is permuted past its end; use tma_load_window to see the bytes")
    out = np.empty(tmap.box_bytes, np.uint8)
    out[rel] = vals
    return out
