"""Warp-level matrix multiply-accumulate (PTX ISA, "Warp Level Matrix Multiply-Accumulate
Instructions"): mma.sync.aligned.{m16n8k16, m16n8k8, m16n8k32}.row.col and ldmatrix.sync.aligned.m8n8.

Fragments (PTX ISA "Matrix Fragments for mma.m16n8k*"): with g = lane / 4 and t = lane % 4,
* C/D (16 x 8, f32/s32: 4 registers; f16: 2 registers of f16x2): element i of a lane is row
  g + 8 * (i // 2), column 2t + i % 2.
* A (row-major 16 x K) and B (column-major K x 8) as the ISA's tables give them per shape/type
  (`_A_LAYOUT`, `_B_LAYOUT` below: (row, column) of element i of lane (g, t)).

Accumulation (floating point): the products of one k-block and the incoming accumulator are aligned
to the largest exponent among them, truncated to F bits below it, summed exactly and truncated to
f32 (`block_fma`, the Hopper block FMA of `bwlab.umma.model.wgmma_block_fma` with F = 25 over the
whole K of the instruction: F and the block size are what the H200 recordings of the corpus satisfy,
checked in tests/test_emu_semantics.py). f16 accumulators: the f32 result rounded to nearest f16.
Integers (s8/u8 -> s32): exact, wrapping modulo 2^32 (.satfinite: clamped to the s32 range).
"""
from __future__ import annotations

import numpy as np

from ...hw import floats as hf
from ..errors import UnsupportedInstruction
from .operands import addr_reader, bits_reader, writer

__all__ = ["mma", "ldmatrix", "block_fma", "ALIGN_BITS"]

ALIGN_BITS = 26      # F: fraction bits kept below the block's largest exponent
_NEG_BIG = -(1 << 30)

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


def _exp(x):
    return np.where(x != 0, np.frexp(x)[1] - 1, _NEG_BIG)


def _rz_f32(x):
    with np.errstate(over="ignore"):
        r = x.astype(np.float32)
        over = np.abs(r.astype(np.float64)) > np.abs(x)
        return np.where(over, np.nextafter(r, np.float32(0)), r).astype(np.float32)


BLOCK = None          # k per block (None: all of the instruction's K)
ROUND = "rz"          # how a block's exact sum becomes f32


def block_fma(a, b, c, F=None, block=None):
    """D = A (M x K) @ B (K x N) + C (M x N, float32) in blocks of `block` k (all of K by default): per
    block, the products and the accumulator aligned to their largest exponent, truncated to F bits
    below it, summed exactly, truncated to f32. Non-finite terms follow IEEE arithmetic."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    acc = np.asarray(c, np.float32)
    K = a.shape[1]
    F = ALIGN_BITS if F is None else F
    block = block or BLOCK or K
    for k0 in range(0, K, block):
        t = a[:, None, k0:k0 + block] * b.T[None, :, k0:k0 + block]          # (M, N, kb), exact
        cc = acc.astype(np.float64)
        terms = np.concatenate([t, cc[:, :, None]], axis=2)
        e = _exp(terms)
        emax = e.max(axis=2)
        live = emax > _NEG_BIG // 2
        scale = np.exp2(np.where(live, emax - F, 0).astype(np.float64))
        with np.errstate(invalid="ignore", over="ignore"):
            q = np.trunc(terms / scale[:, :, None])
            s = q.sum(axis=2) * scale
            out = np.where(live, _rz_f32(s) if ROUND == "rz" else s.astype(np.float32), np.float32(0))
            finite = np.isfinite(terms).all(axis=2)
            if not finite.all():
                out = np.where(finite, out, terms.sum(axis=2).astype(np.float32))
        acc = out.astype(np.float32)
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
        C = np.zeros((16, 8), np.int64 if integer else np.float32)
        if cf:
            C[crow, ccol] = cregs.view(np.int32) if integer else cregs.view(np.float32)
        else:
            C[crow, ccol] = _elements(cregs, 2, 16).astype(np.uint16).view(np.float16).astype(np.float32)
        if integer:
            D = A @ B + C
            D = (np.clip(D, -2**31, 2**31 - 1) if satfinite else D) & 0xFFFFFFFF
            D = D.astype(np.uint32)
            out = D[crow, ccol]
        else:
            D = block_fma(A, B, C)
            out = D[crow, ccol].view(np.uint32)
            if dty == "f16":
                h = hf.cvt(out, "f32", "f16", "rn").astype(np.uint32).reshape(32, 2, 2)
                out = h[:, :, 0] | (h[:, :, 1] << np.uint32(16))
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
