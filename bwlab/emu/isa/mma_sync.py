"""Warp-level matrix multiply-accumulate (PTX ISA, "Warp Level Matrix Multiply-Accumulate
Instructions"): mma.sync.aligned.{m16n8k16, m16n8k8, m16n8k32}.row.col and ldmatrix.sync.aligned.m8n8.

Fragments (PTX ISA "Matrix Fragments for mma.m16n8k*"): with g = lane / 4 and t = lane % 4,
* C/D (16 x 8, f32/s32: 4 registers; f16: 2 registers of f16x2): element i of a lane is row
  g + 8 * (i // 2), column 2t + i % 2.
* A (row-major 16 x K) and B (column-major K x 8) as the ISA's tables give them per shape/type
  (`_A_LAYOUT`, `_B_LAYOUT` below: (row, column) of element i of lane (g, t)).

Accumulation (floating point), the rule the H200 recordings of the corpus satisfy bit for bit (every
mma kernel of cuda_src/corpus/mma.cu: f16/bf16 k16 and f16/tf32 k8 into f32, f16 into f16, and a
ldmatrix-fed GEMM): Hopper's block FMA, as wgmma's (`bwlab.umma.model.wgmma_block_fma`, branch
mmanum's `bwlab.umma.numerics`): per block of 32 bytes of K (16 f16/bf16, 8 tf32 elements: the whole
K of these shapes), every product takes the sum of its operands' exponents (before normalising; a
subnormal operand the smallest normal exponent), C its own, a zero term -133; all are aligned to the
largest, cut toward zero to F = 25 fraction bits below it, summed exactly, and the sum truncated to
f32 (f16 D: rounded to nearest f16, zero terms at -21). Measured alternatives: F = 24..30 with each
product's normalised exponent, blocks of 2/4/8, round-to-nearest sums: 8 to 110 of 128 accumulators
differ. Integers (s8/u8 -> s32): exact, wrapping modulo 2^32 (.satfinite: clamped to the s32 range).
"""
from __future__ import annotations

import numpy as np

from ...hw import floats as hf
from ..errors import UnsupportedInstruction
from .operands import addr_reader, bits_reader, writer

__all__ = ["mma", "ldmatrix", "block_fma", "ALIGN_BITS"]

ALIGN_BITS = 25      # F: fraction bits kept below the block's largest exponent
BLOCK = None          # k per block (None: 32 bytes of K)

_G = np.arange(32) // 4
_T = np.arange(32) % 4


def _cd_layout():
    i = np.arange(4)
    return _G[:, None] + 8 * (i[None, :] // 2), 2 * _T[:, None] + i[None, :] % 2


def _a_layout(shape, ab):
    """(rows, cols) arrays [lane, element] of A's fragment."""
    if shape == "m16n8k16" and ab in ("f16", "bf16"):
        i = np.arange(8)
        row = _G[:, None] + 8 * ((i[None, :] // 2) % 2)
        col = 2 * _T[:, None] + i[None, :] % 2 + 8 * (i[None, :] // 4)
        return row, col
    if shape == "m16n8k8" and ab in ("f16", "bf16"):
        i = np.arange(4)
        return _G[:, None] + 8 * (i[None, :] // 2), 2 * _T[:, None] + i[None, :] % 2
    if shape == "m16n8k8" and ab == "tf32":
        i = np.arange(4)
        return _G[:, None] + 8 * (i[None, :] % 2), _T[:, None] + 4 * (i[None, :] // 2)
    if shape == "m16n8k32" and ab in ("s8", "u8"):
        i = np.arange(16)
        row = _G[:, None] + 8 * ((i[None, :] // 4) % 2)
        col = 4 * _T[:, None] + i[None, :] % 4 + 16 * (i[None, :] // 8)
        return row, col
    raise UnsupportedInstruction(f"mma.sync.{shape} with .{ab} operands is not modelled")


def _b_layout(shape, ab):
    """(k rows, n cols) arrays [lane, element] of B's fragment."""
    if shape == "m16n8k16" and ab in ("f16", "bf16"):
        i = np.arange(4)
        return 2 * _T[:, None] + i[None, :] % 2 + 8 * (i[None, :] // 2), np.repeat(_G[:, None], 4, 1)
    if shape == "m16n8k8" and ab in ("f16", "bf16"):
        i = np.arange(2)
        return 2 * _T[:, None] + i[None, :], np.repeat(_G[:, None], 2, 1)
    if shape == "m16n8k8" and ab == "tf32":
        i = np.arange(2)
        return _T[:, None] + 4 * i[None, :], np.repeat(_G[:, None], 2, 1)
    if shape == "m16n8k32" and ab in ("s8", "u8"):
        i = np.arange(8)
        return 4 * _T[:, None] + i[None, :] % 4 + 16 * (i[None, :] // 4), np.repeat(_G[:, None], 8, 1)
    raise UnsupportedInstruction(f"mma.sync.{shape} with .{ab} operands is not modelled")


# Each operand type's smallest normal exponent: a subnormal operand is aligned as if it had it.
_SUBNORMAL_EXPONENT = {"f16": -14, "bf16": -126, "tf32": -126, "f32": -126}
E_ZERO = -133         # the exponent a zero term takes (f32 D)


def _exp(x, ty):
    """floor(log2 |x|) per element, at least the type's smallest normal exponent; zeros: E_ZERO."""
    e = np.frexp(x)[1] - 1
    return np.where(x != 0, np.maximum(e, _SUBNORMAL_EXPONENT[ty]), E_ZERO)


def _rz_f32(x):
    with np.errstate(over="ignore"):
        r = x.astype(np.float32)
        over = np.abs(r.astype(np.float64)) > np.abs(x)
        return np.where(over, np.nextafter(r, np.float32(0)), r).astype(np.float32)


def block_fma(a, b, c, ty, F=None, block=None, f16_out=False):
    """D = A (M x K) @ B (K x N) + C (M x N, float32), A and B of type `ty`, in blocks of `block` k
    (32 bytes of K: 16 f16/bf16, 8 tf32): per block, every product takes the sum of its operands'
    exponents (before normalising) and C its own; all are aligned to the largest, cut toward zero to
    F bits below it, summed exactly, and the sum truncated to f32 (`f16_out`: rounded to nearest f16,
    zero terms at exponent -21; returns float16 values). A NaN gives the canonical NaN; infinities
    follow IEEE arithmetic."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    acc = np.asarray(c, np.float32)
    K = a.shape[1]
    F = ALIGN_BITS if F is None else F
    block = block or BLOCK or (8 if ty == "tf32" else 16)
    ea, eb = _exp(a, ty), _exp(b, ty)
    for k0 in range(0, K, block):
        t = a[:, None, k0:k0 + block] * b.T[None, :, k0:k0 + block]          # (M, N, kb), exact
        et = ea[:, None, k0:k0 + block] + eb.T[None, :, k0:k0 + block]
        ez = -21 if f16_out else E_ZERO
        et = np.where(t != 0, et, ez)
        cc = acc.astype(np.float64)
        ec = np.where(cc != 0, _exp(cc, "f16" if f16_out else "f32"), ez)
        emax = np.maximum(et.max(axis=2), ec)
        scale = np.exp2((emax - F).astype(np.float64))
        with np.errstate(invalid="ignore", over="ignore"):
            q = np.trunc(t / scale[:, :, None]).sum(axis=2) + np.trunc(cc / scale)
            finite = np.isfinite(t).all(axis=2) & np.isfinite(cc)
            if f16_out:
                out = hf.from_f64(q * scale, "f16", "rn").view(np.float16)
                if not finite.all():
                    out = np.where(finite, out, (t.sum(axis=2) + cc).astype(np.float16))
                out = np.where(np.isnan(out), np.uint16(0x7FFF).view(np.float16), out)
            else:
                out = _rz_f32(q * scale)
                if not finite.all():
                    out = np.where(finite, out, (t.sum(axis=2) + cc).astype(np.float32))
                out = np.where(np.isnan(out), np.uint32(0x7FFFFFFF).view(np.float32), out)
        acc = np.where(out == 0, out.dtype.type(0), out)
    return acc


def _elements(regs, per_reg, width):
    """[lane, register] uint32 bits -> [lane, element] unsigned codes of `width` bits."""
    regs = regs.astype(np.uint64)
    parts = [(regs >> np.uint64(width * j)) & np.uint64((1 << width) - 1) for j in range(per_reg)]
    return np.stack(parts, axis=2).reshape(regs.shape[0], -1)


def _to_f64(codes, ty):
    if ty == "f16":
        return codes.astype(np.uint16).view(np.float16).astype(np.float64)
    if ty == "bf16":
        return (codes.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)
    if ty == "tf32":
        return (codes.astype(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)
    if ty == "s8":
        return codes.astype(np.uint8).view(np.int8).astype(np.int64)
    return codes.astype(np.int64)


def mma(ctx, ins, base, mods):
    """Warp Level MMA: mma.sync.aligned.shape.row.col.dtype.atype.btype.ctype d, a, b, c (the whole warp)."""
    shape = next((m for m in mods if m.startswith("m") and "n" in m and "k" in m), None)
    tys = [m for m in mods if m in ("f32", "f16", "bf16", "tf32", "s32", "s8", "u8", "f64")]
    if "row" not in mods or "col" not in mods or len(tys) != 4 or shape is None:
        raise UnsupportedInstruction(f"`{ins.op}`: only the .row.col forms with four types are modelled")
    if any(m in mods for m in ("sp", "kind")) or ("satfinite" in mods and tys[0] != "s32"):
        raise UnsupportedInstruction(f"`{ins.op}`: sparse forms and float .satfinite are not modelled")
    satfinite = "satfinite" in mods
    dty, aty, bty, cty = tys
    arow, acol = _a_layout(shape, aty)
    brow, bcol = _b_layout(shape, bty)
    crow, ccol = _cd_layout()
    K = int(shape.split("k")[1])
    d, a, b, c = ins.args
    ra = [bits_reader(ctx, x, "b32") for x in a[1]]
    rb = [bits_reader(ctx, x, "b32") for x in b[1]]
    cf = cty in ("f32", "s32")
    rc = [bits_reader(ctx, x, "b32") for x in c[1]]
    wd = [writer(ctx, x, "b32") for x in d[1]]
    width = {"f16": 16, "bf16": 16, "tf32": 32, "s8": 8, "u8": 8}[aty]
    per = 32 // width
    integer = aty in ("s8", "u8")

    def body(w, m):
        if not m.all():
            raise UnsupportedInstruction(f"`{ins.op}` with lanes of the warp not executing it "
                                         "(mma.sync.aligned needs the whole warp)")
        A = np.zeros((16, K), np.int64 if integer else np.float64)
        B = np.zeros((K, 8), np.int64 if integer else np.float64)
        ea = _to_f64(_elements(np.stack([r(w) for r in ra], 1), per, width), aty)
        eb = _to_f64(_elements(np.stack([r(w) for r in rb], 1), per, width), bty)
        A[arow, acol] = ea
        B[brow, bcol] = eb
        cregs = np.stack([r(w) for r in rc], 1).astype(np.uint32)
        C = np.zeros((16, 8), np.int64 if integer else np.float32 if cf else np.float16)
        if cf:
            C[crow, ccol] = cregs.view(np.int32) if integer else cregs.view(np.float32)
        else:
            C[crow, ccol] = _elements(cregs, 2, 16).astype(np.uint16).view(np.float16)
        if integer:
            D = A @ B + C
            D = (np.clip(D, -2**31, 2**31 - 1) if satfinite else D) & 0xFFFFFFFF
            D = D.astype(np.uint32)
            out = D[crow, ccol]
        else:
            D = block_fma(A, B, C, aty, f16_out=dty == "f16")
            if dty == "f16":
                h = D[crow, ccol].view(np.uint16).astype(np.uint32).reshape(32, 2, 2)
                out = h[:, :, 0] | (h[:, :, 1] << np.uint32(16))
            else:
                out = D[crow, ccol].view(np.uint32)
        for k, wr in enumerate(wd):
            wr(w, out[:, k], m)
    return body


def ldmatrix(ctx, ins, base, mods):
    """ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{.trans}.shared.b16 d, [a]: lanes 8i..8i+7 give the row
    addresses of matrix i; lane l receives, of each matrix, the 32 bits at row l/4, elements 2(l%4),
    2(l%4)+1 (with .trans: the transposed matrix)."""
    num = next((int(m[1:]) for m in mods if m in ("x1", "x2", "x4")), 1)
    trans = "trans" in mods
    if "m8n8" not in mods or "b16" not in mods:
        raise UnsupportedInstruction(f"`{ins.op}`: only ldmatrix .m8n8 .b16 is modelled")
    d, a = ins.args
    _, addr = addr_reader(ctx, a)
    wd = [writer(ctx, x, "b32") for x in d[1]]
    space = "shared"
    lane = np.arange(32)

    def body(w, m):
        if not m.all():
            raise UnsupportedInstruction(f"`{ins.op}` with lanes of the warp not executing it "
                                         "(ldmatrix.sync.aligned needs the whole warp)")
        rows = addr(w)
        for i, wr in enumerate(wd):
            src = rows[8 * i:8 * i + 8]
            full = np.zeros(32, bool)
            full[:8] = True
            addrs = np.zeros(32, np.uint64)
            addrs[:8] = src
            raw = w.machine.mem.read(w, space, addrs, 16, full, ins)[:8]
            mat = raw.view(np.uint16).reshape(8, 8)          # [row, column]
            if trans:
                mat = mat.T
            r, c = lane // 4, 2 * (lane % 4)
            out = mat[r, c].astype(np.uint32) | (mat[r, c + 1].astype(np.uint32) << np.uint32(16))
            wr(w, out, m)
    return body
