"""Warp-level matrix multiply-accumulate through fragments (PTX ISA, "Warp Level Matrix Multiply-Accumulate
Instructions": wmma.load, wmma.mma, wmma.store), what `nvcuda::wmma` (mma.h) compiles to: the m16n16k16
shape with f16 or bf16 A/B and f16 or f32 C/D.

The ISA leaves the distribution of a fragment's elements over the lanes unspecified; the emulator keeps
them as mma.m16n8k16 places them (isa/mma_sync.py), the 16 x 16 tile as two 16 x 8 halves: with
g = lane / 4, t = lane % 4,
* C/D (f32: 8 registers; f16: 4 registers of two halves): element e is row g + 8 * ((e // 2) % 2), column
  2t + e % 2 + 8 * (e // 4);
* A (8 registers, 16 halves): elements 0..7 as mma.m16n8k16's A, elements 8..15 a copy of them;
* B (8 registers, 16 halves): element e < 8 is k 2t + e % 2 + 8 * ((e // 2) % 2), column g + 8 * (e // 4);
  elements 8..15 a copy.
So load -> mma -> store, fill_fragment and element-wise loops over `frag.x[i]` give the GPU's results; code
that reads a particular element position of a fragment depends on a layout the ISA does not fix.

wmma.mma accumulates as mma.sync does on Hopper (mma_sync.block_fma: one block of the whole K = 16); an
H200 recording (tests/outside/warp.cu's wmma_gemm: two k-steps into f32 and into f16) agrees bit for bit.
"""
from __future__ import annotations

import numpy as np

from ..errors import UnsupportedInstruction
from .mma_sync import _elements, block_fma
from .operands import addr_reader, bits_reader, state_space, writer

__all__ = ["load", "mma", "store"]

_G = np.arange(32) // 4
_T = np.arange(32) % 4
_E = np.arange(8)
# [lane, element] (row, column) of the C/D fragment; A's and B's first 8 elements (the rest repeat them)
_CD = (_G[:, None] + 8 * ((_E[None, :] // 2) % 2), 2 * _T[:, None] + _E[None, :] % 2 + 8 * (_E[None, :] // 4))
_A = _CD
_B = (2 * _T[:, None] + _E[None, :] % 2 + 8 * ((_E[None, :] // 2) % 2), _G[:, None] + 8 * (_E[None, :] // 4))
_TYPES = ("f16", "bf16", "f32")


def _shape(ins, mods):
    if "m16n16k16" not in mods:
        shape = next((m for m in mods if m.startswith("m") and "n" in m and "k" in m), "?")
        raise UnsupportedInstruction(f"`{ins.op}`: wmma shape {shape} is not modelled (m16n16k16 only: "
                                     "nvcuda::wmma::fragment<..., 16, 16, 16, half or __nv_bfloat16>)")


def _whole_warp(ins, m):
    if not m.all():
        raise UnsupportedInstruction(f"`{ins.op}` with lanes of the warp not executing it "
                                     "(wmma .sync.aligned needs the whole warp)")


def _places(which, layout, stride):
    """[lane, element] element offsets (in elements) of a fragment's elements in memory."""
    row, col = {"a": _A, "b": _B, "c": _CD, "d": _CD}[which]
    if which in ("a", "b"):
        row, col = np.concatenate([row, row], 1), np.concatenate([col, col], 1)
    # b is K x N: its "row" is k. Row-major: (r, c) at r * stride + c; column-major: c * stride + r
    return row * stride + col if layout == "row" else col * stride + row


def _stride(ctx, ins):
    if len(ins.args) > 2:
        return bits_reader(ctx, ins.args[2], "u32")
    return lambda w: np.full(32, 16, np.uint64)


def load(ctx, ins, base, mods):
    """wmma.load.{a,b,c}.sync.aligned.{row,col}.m16n16k16{.space}.type d, [a]{, stride}."""
    _shape(ins, mods)
    which = next((m for m in mods if m in ("a", "b", "c")), None)
    layout = "row" if "row" in mods else "col"
    ty = next((m for m in mods if m in _TYPES), None)
    if which is None or ty is None or (which == "c" and ty == "bf16"):
        raise UnsupportedInstruction(f"`{ins.op}`: wmma.load of .a/.b (f16, bf16) or .c (f16, f32) only")
    if which in ("a", "b") and ty == "f32":
        raise UnsupportedInstruction(f"`{ins.op}`: f32 A/B fragments are wmma's tf32 shape m16n16k8, not modelled")
    d, a = ins.args[0], ins.args[1]
    _, addr = addr_reader(ctx, a)
    stride = _stride(ctx, ins)
    space = state_space(mods)
    size = 4 if ty == "f32" else 2
    wd = [writer(ctx, x, "b32") for x in d[1]]
    n_el = 8 if which == "c" else 16

    def body(w, m):
        _whole_warp(ins, m)
        base_addr, st = addr(w), stride(w).astype(np.int64)
        offs = _places(which, layout, st[:, None])[:, :n_el]
        codes = np.zeros((32, n_el), np.uint32)
        for e in range(n_el):
            raw = w.machine.mem.read(w, space, base_addr + (offs[:, e] * size).astype(np.uint64), size, m, ins)
            codes[:, e] = raw.view(np.uint32 if size == 4 else np.uint16)[:, 0]
        if size == 4:
            regs = codes
        else:
            regs = codes[:, 0::2] | (codes[:, 1::2] << np.uint32(16))
        if regs.shape[1] != len(wd):
            raise UnsupportedInstruction(f"`{ins.op}`: {len(wd)} destination registers; this fragment has "
                                         f"{regs.shape[1]}")
        for k, wr in enumerate(wd):
            wr(w, regs[:, k], m)
    return body


def mma(ctx, ins, base, mods):
    """wmma.mma.sync.aligned.alayout.blayout.m16n16k16.dtype.ctype d, a, b, c (f16 A/B), or
    .dtype.atype.btype.ctype (bf16 A/B); .satfinite is not modelled."""
    _shape(ins, mods)
    if "satfinite" in mods:
        raise UnsupportedInstruction(f"`{ins.op}`: wmma.mma .satfinite is not modelled")
    tys = [m for m in mods if m in _TYPES]
    if len(tys) == 2:
        dty, aty, cty = tys[0], "f16", tys[1]
    elif len(tys) == 4 and tys[1] == tys[2] and tys[1] in ("f16", "bf16"):
        dty, aty, cty = tys[0], tys[1], tys[3]
    else:
        raise UnsupportedInstruction(f"`{ins.op}`: wmma.mma with f16/bf16 A and B, f16/f32 C and D only")
    if aty == "bf16" and (dty != "f32" or cty != "f32"):
        raise UnsupportedInstruction(f"`{ins.op}`: bf16 wmma accumulates in f32 (PTX ISA)")
    d, a, b, c = ins.args
    ra = [bits_reader(ctx, x, "b32") for x in a[1]]
    rb = [bits_reader(ctx, x, "b32") for x in b[1]]
    rc = [bits_reader(ctx, x, "b32") for x in c[1]]
    wd = [writer(ctx, x, "b32") for x in d[1]]

    def to64(codes):
        if aty == "f16":
            return codes.astype(np.uint16).view(np.float16).astype(np.float64)
        return (codes.astype(np.uint32) << np.uint32(16)).view(np.float32).astype(np.float64)

    def body(w, m):
        _whole_warp(ins, m)
        A = np.zeros((16, 16))
        B = np.zeros((16, 16))
        A[_A] = to64(_elements(np.stack([r(w) for r in ra], 1), 2, 16))[:, :8]
        B[_B] = to64(_elements(np.stack([r(w) for r in rb], 1), 2, 16))[:, :8]
        cregs = np.stack([r(w) for r in rc], 1).astype(np.uint32)
        if cty == "f32":
            C = np.zeros((16, 16), np.float32)
            C[_CD] = cregs.view(np.float32)
        else:
            C = np.zeros((16, 16), np.float16)
            C[_CD] = _elements(cregs, 2, 16).astype(np.uint16).view(np.float16)
        D = block_fma(A, B, C, aty, f16_out=dty == "f16")
        if dty == "f16":
            h = D[_CD].view(np.uint16).astype(np.uint32)
            out = h[:, 0::2] | (h[:, 1::2] << np.uint32(16))
        else:
            out = D[_CD].view(np.uint32)
        for k, wr in enumerate(wd):
            wr(w, out[:, k], m)
    return body


def store(ctx, ins, base, mods):
    """wmma.store.d.sync.aligned.{row,col}.m16n16k16{.space}.type [a], d{, stride}."""
    _shape(ins, mods)
    layout = "row" if "row" in mods else "col"
    ty = next((m for m in mods if m in ("f16", "f32")), None)
    if ty is None or "d" not in mods:
        raise UnsupportedInstruction(f"`{ins.op}`: wmma.store.d of f16 or f32 only")
    a, d = ins.args[0], ins.args[1]
    _, addr = addr_reader(ctx, a)
    stride = _stride(ctx, ins)
    space = state_space(mods)
    size = 4 if ty == "f32" else 2
    rd = [bits_reader(ctx, x, "b32") for x in d[1]]

    def body(w, m):
        _whole_warp(ins, m)
        regs = np.stack([r(w) for r in rd], 1).astype(np.uint32)
        codes = regs if size == 4 else _elements(regs, 2, 16).astype(np.uint32)
        base_addr, st = addr(w), stride(w).astype(np.int64)
        offs = _places("d", layout, st[:, None])
        for e in range(8):
            val = codes[:, e].astype(np.uint32 if size == 4 else np.uint16)
            data = val.view(np.uint8).reshape(32, size)
            w.machine.mem.write(w, space, base_addr + (offs[:, e] * size).astype(np.uint64), data, m, ins)
    return body
