"""Integer types and raw bits: a PTX type name to (signed, width), masks, and the conversions between
raw unsigned bits and signed values that every integer instruction shares."""
from __future__ import annotations

import numpy as np


_U64 = np.uint64
_UDT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_SDT = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def _typ(typ: str):
    """'s32' -> (signed, 32). b-types are unsigned."""
    if len(typ) < 2 or typ[0] not in "sub" or typ[1:] not in ("8", "16", "32", "64"):
        raise ValueError(f"{typ!r} is not an integer type (s8..s64, u8..u64, b8..b64)")
    return typ[0] == "s", int(typ[1:])


def _mask(w):
    return _U64((1 << w) - 1) if w < 64 else _U64(0xFFFFFFFFFFFFFFFF)


def _u(x, w=64):
    """Any integer array -> uint64 holding its low w bits."""
    a = np.asarray(x)
    if a.dtype.kind not in "uib":
        raise TypeError(f"integer operands are integer arrays of raw bits, got {a.dtype}")
    return a.astype(np.int64 if a.dtype.kind == "i" else np.uint64).astype(np.uint64) & _mask(w)


def _out(x, w):
    return (np.asarray(x, np.uint64) & _mask(w)).astype(_UDT[w])


def to_signed(x, w):
    """Raw bits -> signed NumPy values (int8..int64) of width w."""
    return _u(x, w).astype(_UDT[w]).view(_SDT[w])


def _sext64(x, w):
    """Low w bits, sign-extended, as int64."""
    return to_signed(x, w).astype(np.int64)
