"""The emulator's 128-byte tensor map: what `TensorMap.encode(ptr)` returns for an emulator pointer.

A real CUtensorMap is opaque (its layout is the driver's business); the emulator's is its own, in the
same 128 bytes, so host code that encodes a map and passes it as a `const __grid_constant__` kernel
parameter (or copies it to global memory) runs unchanged. `decode` turns the bytes back into the
`bwlab.tma.TensorMap` whose model (`tma_load_writes`, the store model) the TMA unit executes.

Layout (little-endian): magic 'BWEMUTM1' | global address u64 | rank u8, swizzle u8, interleave u8,
l2 u8, oob u8, 3 pad | global dims 5 x u64 | global strides (dims 1..4) 4 x u64 | box 5 x u16 |
element strides 5 x u8 | 1 pad | dtype name, 16 bytes of ASCII.
"""
from __future__ import annotations

import struct

__all__ = ["MAGIC", "encode", "decode", "is_emu_map"]

MAGIC = b"BWEMUTM1"
from ..hw.swizzle import MODES as _SWZ   # the order is the encoding
_INTL = ("none", "16B", "32B")
_L2 = ("none", "64B", "128B", "256B")
_OOB = ("zero", "nan")
_FMT = "<8sQ5B3x5Q4Q5H5Bx16s"


def encode(tmap, global_address: int) -> bytes:
    """128 bytes describing `tmap` over a tensor at `global_address` (checked as the driver checks)."""
    tmap.encode_args(global_address)   # the base-address rules, as cuTensorMapEncodeTiled applies them
    r = tmap.rank
    dims = list(tmap.global_shape) + [1] * (5 - r)
    strides = list(tmap.global_strides) + [0] * (4 - len(tmap.global_strides))
    box = list(tmap.box_shape) + [1] * (5 - r)
    es = list(tmap.element_strides) + [1] * (5 - r)
    raw = struct.pack(_FMT, MAGIC, int(global_address), r, _SWZ.index(tmap.swizzle), _INTL.index(tmap.interleave),
                      _L2.index(tmap.l2_promotion), _OOB.index(tmap.oob_fill), *dims, *strides, *box, *es,
                      tmap.dtype.encode()[:16])
    return raw + bytes(128 - len(raw))


def is_emu_map(raw: bytes) -> bool:
    return bytes(raw[:8]) == MAGIC


_DECODED = {}   # the 128 bytes -> (TensorMap, address): a kernel reads the same maps again and again


def decode(raw: bytes):
    """(TensorMap, global address) from 128 bytes made by `encode`."""
    raw = bytes(raw)
    got = _DECODED.get(raw)
    if got is None:
        if len(_DECODED) > 1024:
            _DECODED.clear()
        got = _DECODED[raw] = _decode(raw)   # TensorMap is frozen: one object can serve every read
    return got


def _decode(raw: bytes):
    from ..tma.tensor_map import TensorMap
    if not is_emu_map(raw):
        raise ValueError("these 128 bytes are not a tensor map encoded for the emulator (encode it with "
                         "TensorMap.encode on an emulator pointer)")
    f = struct.unpack(_FMT, raw[:struct.calcsize(_FMT)])
    _, addr, r, swz, intl, l2, oob = f[:7]
    dims = f[7:12]
    strides = f[12:16]
    box = f[16:21]
    es = f[21:26]
    name = f[26].rstrip(b"\0").decode()
    tmap = TensorMap(name, tuple(dims[:r]), tuple(box[:r]), tuple(strides[:r - 1]), tuple(es[:r]),
                     _SWZ[swz], _INTL[intl], _L2[l2], _OOB[oob])
    return tmap, addr
