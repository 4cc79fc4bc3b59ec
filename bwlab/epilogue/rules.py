"""The epilogue's rules: which element types a D tile and a reduce-add take, how a TMA store writes
dimension 0, and why a proxy fence is needed. Each rule says where it comes from.

The tensor-map rules themselves (box sizes, strides, swizzle span) belong to `cuTensorMapEncodeTiled`
and live with `bwlab.tma.TensorMap`; what is here holds for every store, whatever map encodes it.
"""
from __future__ import annotations

import numpy as np

from ..hw.dtypes import ElementType, element_type

__all__ = ["D_DTYPES", "d_dtype", "raw_dtype", "REDUCE_ADD_DTYPES", "STORE_GRANULE",
           "TF32_ROUNDS_ON_STORE", "PROXY_FENCE_RULE", "check_reduce_add_dtype"]

# Element types a D (and C) tile of this epilogue can have, spelt as tensor maps take them ('f32',
# 'f16', 'bf16' are accepted too: bwlab.hw.dtypes).
D_DTYPES = ("float32", "float16", "bfloat16")

# cp.reduce.async.bulk.tensor .add element types (PTX ISA 9.7.9.27.1.3: .u32 .s32 .u64 .f32 .f16 .bf16).
REDUCE_ADD_DTYPES = ("uint32", "int32", "uint64", "float32", "float16", "bfloat16")

# The TMA store writes dimension 0 in whole 16-byte chunks: an element past the tensor's last
# column is written when it shares a 16-byte chunk of its row with an element inside the tensor
# (seen on the H100: a bf16 tensor 100 columns wide with a 224-byte row pitch got columns 100..103
# of the box written, and 104..111 left alone; docs/results/store_validate_h100.txt checks it on
# every case). The other dimensions stop exactly at the edge.
STORE_GRANULE = 16

# Whether a TFLOAT32 tensor map rounds on the way out as it does on the way in (bwlab.tma):
# None = not established on hardware, so the model refuses tf32 stores rather than guess (the H100
# stored the raw bits in 12 of 12 probes: docs/results/store_validate_h100.txt).
TF32_ROUNDS_ON_STORE = None

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
        raise ValueError(f"dtype must be one of {list(D_DTYPES)} (the D/C element types of this "
                         f"epilogue), got {dtype!r}")
    return t


def raw_dtype(dtype) -> np.dtype:
    """The unsigned integer dtype that holds one element's raw bits (uint16 for f16 and bf16)."""
    return np.dtype(f"u{element_type(dtype).bytes}")


def check_reduce_add_dtype(dtype) -> ElementType:
    t = element_type(dtype)
    if t.numpy_name not in REDUCE_ADD_DTYPES:
        raise ValueError(f"cp.reduce.async.bulk.tensor .add supports {REDUCE_ADD_DTYPES} "
                         f"(PTX ISA 9.7.9.27.1.3); the tensor map's dtype is {dtype}")
    return t
