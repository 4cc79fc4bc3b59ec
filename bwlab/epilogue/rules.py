"""The epilogue's rules: the rules every TMA store obeys whatever tensor map encodes it, which element
types a D tile and a reduce-add take, and why a proxy fence is needed. `STORE_RULES` is the one table;
each row names its source (a PTX ISA section, a measurement on the H100, or bwlab's own limit), and
every refusal in the package names its row.

The tensor-map rules themselves (box sizes, strides, swizzle span: `cuTensorMapEncodeTiled`) live
with `bwlab.tma.TensorMap`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hw.dtypes import ElementType, element_type, from_float, to_float

__all__ = ["bits_to_float32", "float32_to_bits", "StoreRule", "STORE_RULES", "StoreRuleError", "refuse", "D_DTYPES", "d_dtype", "raw_dtype",
           "REDUCE_ADD_DTYPES", "STORE_GRANULE", "TF32_ROUNDS_ON_STORE", "PROXY_FENCE_RULE",
           "require_reduce_add_dtype"]

# Element types a D (and C) tile of this epilogue can have, spelt as tensor maps take them ('f32',
# 'f16', 'bf16' are accepted too: bwlab.hw.dtypes).
D_DTYPES = ("float32", "float16", "bfloat16")

# cp.reduce.async.bulk.tensor .add element types (PTX ISA 9.7.9.27.1.3: .u32 .s32 .u64 .f32 .f16 .bf16).
REDUCE_ADD_DTYPES = ("uint32", "int32", "uint64", "float32", "float16", "bfloat16")

# A TMA store writes dimension 0 in whole 16-byte granules (the 'store-granule' row below).
STORE_GRANULE = 16

# Whether a TFLOAT32 tensor map rounds on the way out as it does on the way in (bwlab.tma):
# None = not established on hardware, so the model refuses tf32 stores rather than guess.
TF32_ROUNDS_ON_STORE = None


@dataclass(frozen=True)
class StoreRule:
    name: str     # what refusals and hints call it
    rule: str     # the rule, in one sentence
    limit: str    # the number or set it fixes
    source: str   # where it comes from
    kind: str     # 'PTX ISA' | 'CUDA guide' | 'measured (H100)' | 'bwlab' (a limit of this model/kernel)


STORE_RULES = {r.name: r for r in (
    StoreRule("box-start", "a store's box starts at non-negative coordinates; only its far side may "
              "hang over the tensor's edge", "coordinates >= 0",
              "PTX ISA 9.7.9.27.1.1 (cp.async.bulk.tensor, restrictions of the .global.shared::cta "
              "direction)", "PTX ISA"),
    StoreRule("box-start-16B", "the box starts on a 16-byte boundary of dimension 0",
              "coords[0] * element bytes % 16 == 0",
              "PTX ISA 5.5.3.1 (the bounding box's address must be 16-byte aligned); on the H100 a store "
              "from a misaligned start stops the kernel with an illegal instruction", "PTX ISA"),
    StoreRule("smem-alignment", "the SMEM source of the box is 128-byte aligned", "128 bytes",
              "CUDA C++ Programming Guide, 'Using TMA to transfer multi-dimensional arrays' "
              "(shared-memory address aligned to 128 bytes); bwlab.tma.SMEM_ALIGNMENT", "CUDA guide"),
    StoreRule("store-granule", "dimension 0 is written in whole 16-byte granules: an element past the "
              "tensor's last column is written when it shares a 16-byte granule of its row with an "
              "element inside; rows, planes (dimensions 1..4) stop exactly at the edge",
              f"{STORE_GRANULE} bytes",
              "measured on the H100: a bf16 tensor 100 columns wide with a 224-byte row pitch got "
              "columns 100..103 written and 104..111 left alone; docs/results/store_validate_h100.txt "
              "checks it on every case", "measured (H100)"),
    StoreRule("narrow-swizzle-pitch", "with a swizzle, every row of a box narrower than the swizzle "
              "row (32/64/128 B) takes a whole swizzle row in SMEM", "pitch = 32, 64 or 128 bytes",
              "measured on the H100 (12 of 12 narrow swizzled stores; docs/results/"
              "store_validate_h100.txt); bwlab.tma sees the same for loads", "measured (H100)"),
    StoreRule("reduce-add-dtype", "cp.reduce.async.bulk.tensor .add takes .u32 .s32 .u64 .f32 .f16 "
              ".bf16; floats round to nearest even, integers wrap", ", ".join(REDUCE_ADD_DTYPES),
              "PTX ISA 9.7.9.27.1.3 (cp.reduce.async.bulk.tensor)", "PTX ISA"),
    StoreRule("tf32-store", "stores through a TFLOAT32 map are not modelled: whether they round is "
              "not established (the H100 stored the raw bits in 12 of 12 probes)", "dtype != tf32",
              "bwlab; docs/results/store_validate_h100.txt (tf32 probe)", "bwlab"),
    StoreRule("store-model-scope", "the store model covers interleave 'none' and traversal strides of "
              "1 (what bwlab validated on hardware)", "interleave none, element_strides 1",
              "bwlab", "bwlab"),
    StoreRule("d-dtype", "a D or C tile of the epilogue kernel is f32, f16 or bf16 (pack16/unpack16 "
              "in cuda_src/tma_store.cu)", ", ".join(D_DTYPES), "bwlab (tma_store.cu)", "bwlab"),
)}


class StoreRuleError(ValueError):
    """A store that breaks a row of `STORE_RULES`; `.rule` is the row's name."""

    def __init__(self, rule: str, message: str):
        self.rule = rule
        r = STORE_RULES[rule]
        super().__init__(f"{message} [rule '{rule}', limit: {r.limit}; source: {r.source}]")


def refuse(rule: str, message: str):
    raise StoreRuleError(rule, message)


PROXY_FENCE_RULE = (
    "st.shared writes through the generic proxy; the TMA store (cp.async.bulk.tensor) reads SMEM "
    "through the async proxy. 'Accessing the same memory location across multiple proxies needs a "
    "cross-proxy fence. For the async proxy, fence.proxy.async should be used' (PTX ISA 9.7.9.25.2). "
    "So every thread that wrote the tile executes fence.proxy.async.shared::cta after its writes, "
    "then a barrier (bar.sync / named barrier) orders those fences before the one thread that issues "
    "the TMA store. In the other direction nothing is needed: the completion of a bulk operation "
    "'is followed by an implicit generic-async proxy fence' (same section).")


def d_dtype(dtype) -> ElementType:
    """The entry of a D/C element type ('f32' or 'float32', 'f16', 'bf16'); ValueError otherwise."""
    try:
        t = element_type(dtype)
    except ValueError:
        t = None
    if t is None or t.numpy_name not in D_DTYPES:
        refuse("d-dtype", f"dtype must be one of {list(D_DTYPES)} (the D/C element types of this "
                          f"epilogue), got {dtype!r}")
    return t


def raw_dtype(dtype) -> np.dtype:
    """The unsigned integer dtype that holds one element's raw bits (uint16 for f16 and bf16)."""
    return np.dtype(f"u{element_type(dtype).bytes}")


def require_reduce_add_dtype(dtype) -> ElementType:
    t = element_type(dtype)
    if t.numpy_name not in REDUCE_ADD_DTYPES:
        refuse("reduce-add-dtype", f"cp.reduce.async.bulk.tensor .add supports {REDUCE_ADD_DTYPES}; "
                                   f"the tensor map's dtype is {dtype}")
    return t


def bits_to_float32(bits, dtype) -> np.ndarray:
    """Raw element bits -> float32 values (exact for f16 and bf16): `bwlab.hw.dtypes.to_float`."""
    t = element_type(dtype)
    raw = np.asarray(bits).astype(raw_dtype(t), copy=False)
    return to_float(raw.view(t.storage), t).astype(np.float32)


def float32_to_bits(x, dtype) -> np.ndarray:
    """float32 values -> raw bits of `dtype` rounded to nearest even, as ``cvt.rn.f16.f32`` /
    ``cvt.rn.bf16.f32`` do (PTX ISA 9.7.9.21 cvt; NaN becomes 0x7fff): `bwlab.hw.dtypes.from_float`."""
    t = element_type(dtype)
    return np.ascontiguousarray(from_float(np.asarray(x, dtype=np.float32), t)).view(raw_dtype(t))
