"""Conversion (PTX ISA, "Data Movement and Conversion Instructions: cvt")."""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedInstruction
from ..values import WIDTH, bf16_bits, f16_bits, from_bits
from .operands import bits_reader, types, writer


_INT_RANGE = {"u8": (0, 255), "s8": (-128, 127), "u16": (0, 65535), "s16": (-32768, 32767),
              "u32": (0, 2**32 - 1), "s32": (-2**31, 2**31 - 1), "u64": (0, 2**64 - 1), "s64": (-2**63, 2**63 - 1)}


def cvt(ctx, ins, base, mods):
    """Data Movement and Conversion: cvt (float <-> float, float <-> int, int <-> int, packed bf16x2/f16x2)."""
    tys = types(mods)
    rnd = next((m for m in mods if m in ("rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "rna", "rs")), None)
    sat = "sat" in mods or "satfinite" in mods
    dty, aty = tys[0], tys[-1]
    args = ins.args
    if dty in ("bf16x2", "f16x2"):   # cvt.rn.bf16x2.f32 d, a, b: a -> upper half, b -> lower
        if rnd != "rn" or aty != "f32":
            raise UnsupportedInstruction(f"`{ins.op}` (only .rn from two f32 values is modelled)")
        ra, rb = bits_reader(ctx, args[1], "f32"), bits_reader(ctx, args[2], "f32")
        conv = bf16_bits if dty == "bf16x2" else f16_bits
        wr = writer(ctx, args[0], "b32")

        def pack(w, m):
            hi = conv(ra(w)).astype(np.uint32)
            lo = conv(rb(w)).astype(np.uint32)
            wr(w, (hi << np.uint32(16)) | lo, m)
        return pack
    src = bits_reader(ctx, args[1], aty if aty != "bf16" else "b16")
    wr_ty = dty if dty not in ("bf16", "f16") else "b16"
    wr = writer(ctx, args[0], wr_ty)
    dfloat, afloat = dty[0] in "f" or dty == "bf16", aty[0] in "f" or aty == "bf16"

    def to_f32(v):
        if aty == "bf16":
            return (v.astype(np.uint32) << np.uint32(16)).view(np.float32)
        return v

    if dfloat and afloat:
        def body(w, m):
            v = to_f32(src(w))
            if dty == "bf16":
                if rnd not in ("rn", None) and aty != "bf16":
                    raise UnsupportedInstruction(f"`{ins.op}`: only .rn to bf16 is modelled")
                out = bf16_bits(np.asarray(v, np.float32)) if aty in ("f32", "f64") else v
            elif dty == "f16":
                out = f16_bits(np.asarray(v, np.float32)) if aty != "f16" else v.view(np.uint16)
            elif dty == "f32":
                out = np.asarray(v, np.float64).astype(np.float32)
            else:
                out = np.asarray(v, np.float64)
            if sat and dty in ("f32", "f16", "f64"):
                out = np.clip(np.nan_to_num(out, nan=0.0), 0, 1).astype(out.dtype)
            wr(w, out, m)
        return body
    if dfloat and not afloat:
        def body(w, m):
            v = src(w)
            if dty == "f32":
                out = v.astype(np.float64).astype(np.float32) if WIDTH[aty] < 64 else _int_to_f32(v)
            elif dty == "f64":
                out = v.astype(np.float64)
            elif dty == "f16":
                out = f16_bits(v.astype(np.float64).astype(np.float32))
            else:
                out = bf16_bits(v.astype(np.float64).astype(np.float32))
            wr(w, out, m)
        return body
    if afloat and not dfloat:
        lo, hi = _INT_RANGE[dty]

        def body(w, m):
            v = np.asarray(to_f32(src(w)), np.float64)
            f = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil, None: np.trunc}[rnd]
            with np.errstate(invalid="ignore"):
                r = np.nan_to_num(f(v), nan=0.0, posinf=hi, neginf=lo)
                r = np.clip(r, lo, hi)
            out = np.array([int(x) for x in r], dtype=object)
            wr(w, np.array([x & ((1 << 64) - 1) for x in out], np.uint64) if dty[0] == "s" and WIDTH[dty] == 64
               else (r.astype(np.int64) if dty[0] == "s" else np.array([int(x) for x in r], np.uint64)), m)
        return body
    # integer -> integer: truncate or extend by the source type's signedness; .sat clamps
    lo, hi = _INT_RANGE[dty] if dty in _INT_RANGE else (0, (1 << WIDTH[dty]) - 1)

    def body(w, m):
        v = src(w)
        if sat:
            v = np.clip(v.astype(np.float64), lo, hi).astype(np.int64) if WIDTH[aty] < 64 else v
        if aty[0] == "s":
            out = v.astype(np.int64).view(np.uint64)
        else:
            out = v.astype(np.uint64)
        wd = WIDTH[dty]
        out = out & np.uint64((1 << wd) - 1) if wd < 64 else out
        wr(w, from_bits(out, dty) if dty[0] == "s" else out, m)
    return body


def _int_to_f32(v):
    # 64-bit integers round to nearest even when they do not fit float32's mantissa
    return np.array([np.float32(float(int(x))) for x in v], np.float32)
