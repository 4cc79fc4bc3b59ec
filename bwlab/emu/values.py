"""Register bits <-> typed lane vectors (the arithmetic itself is bwlab.hw.floats / bwlab.hw.ints).

Every register of a warp is a row of 32 uint64 bit patterns (one per lane); an instruction reads
its operands as the type it names and writes bits back, truncated to the register's width (signed
narrow values sign-extended first, as `ld.s8` into a 32-bit register does).
"""
from __future__ import annotations

import numpy as np

__all__ = ["from_bits", "to_bits", "imm_value", "WIDTH"]

WIDTH = {"pred": 1, "b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "bf16": 16,
         "b32": 32, "u32": 32, "s32": 32, "f32": 32, "f16x2": 32, "bf16x2": 32,
         "b64": 64, "u64": 64, "s64": 64, "f64": 64}

_U = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_S = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}


def from_bits(bits: np.ndarray, ty: str) -> np.ndarray:
    """The lanes' values of type `ty` from uint64 register bits."""
    if ty == "pred":
        return bits != 0
    w = WIDTH[ty]
    if ty[0] in "ub" or ty in ("bf16", "bf16x2", "f16x2"):
        return bits.astype(_U[w]) if w < 64 else bits
    if ty[0] == "s":
        return bits.astype(_U[w]).view(_S[w]) if w < 64 else bits.view(np.int64)
    if ty == "f32":
        return bits.astype(np.uint32).view(np.float32)
    if ty == "f64":
        return bits.view(np.float64)
    if ty == "f16":
        return bits.astype(np.uint16).view(np.float16)
    raise TypeError(f"the emulator has no register type {ty!r}")


def to_bits(vals, ty: str, reg_width: int = 64) -> np.ndarray:
    """uint64 register bits of `vals` (of type `ty`) for a register `reg_width` bits wide."""
    v = np.asarray(vals)
    if ty == "pred":
        return v.astype(bool).astype(np.uint64)
    if ty == "f32":
        out = np.asarray(v, np.float32).view(np.uint32).astype(np.uint64)
    elif ty == "f64":
        out = np.asarray(v, np.float64).view(np.uint64).copy()
    elif ty == "f16":
        out = np.asarray(v, np.float16).view(np.uint16).astype(np.uint64)
    elif ty[0] == "s":
        out = v.astype(np.int64).view(np.uint64) if v.dtype != np.uint64 else v.copy()
    else:
        out = v.astype(np.uint64)
    if reg_width < 64:
        out = out & np.uint64((1 << reg_width) - 1)
    return out


def imm_value(text: str, ty: str) -> np.ndarray:
    """A literal operand as a 32-lane vector of type `ty`."""
    t = text.rstrip("uU")
    if t[:2] in ("0f", "0F"):
        bits = int(t[2:], 16)
        val = np.array([bits], np.uint32).view(np.float32)[0]
        if ty == "f32":
            return np.full(32, val, np.float32)
        if ty == "f64":
            return np.full(32, float(val), np.float64)
        return from_bits(np.full(32, bits, np.uint64), ty)
    if t[:2] in ("0d", "0D"):
        bits = int(t[2:], 16)
        val = np.array([bits], np.uint64).view(np.float64)[0]
        if ty == "f64":
            return np.full(32, val, np.float64)
        if ty == "f32":
            return np.full(32, val, np.float32)
        return from_bits(np.full(32, bits, np.uint64), ty)
    if "." in t or "e" in t.lower() and not t.lower().startswith("0x"):
        x = float(t)
        return np.full(32, x, np.float64 if ty == "f64" else np.float32)
    x = int(t, 0)
    if ty in ("f32", "f64", "f16"):
        return np.full(32, float(x), {"f32": np.float32, "f64": np.float64, "f16": np.float16}[ty])
    if ty == "pred":
        return np.full(32, x != 0)
    w = WIDTH[ty]
    x &= (1 << w) - 1
    return from_bits(np.full(32, x, np.uint64), ty)
