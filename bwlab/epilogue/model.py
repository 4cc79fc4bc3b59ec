"""The epilogue end to end, computed by NumPy: D = alpha * acc + beta * C rounded as the kernel
rounds it, and a whole M x N epilogue tile by tile (C in by `bwlab.tma.tma_load_model`, D laid out
by `SmemTile`, out by `tma_store_model` / `tma_reduce_add_model`). CuTe: the SM90/SM100 collective
epilogues (include/cutlass/epilogue/collective/sm90_epilogue_tma_warpspecialized.hpp).
"""
from __future__ import annotations

import numpy as np

from .problem import EpilogueProblem
from .rules import bits_to_float32, d_dtype, float32_to_bits, raw_dtype
from .store import tma_reduce_add_model, tma_store_model, tma_store_writes

__all__ = ["bits_to_float32", "float32_to_bits", "epilogue_alpha_beta", "epilogue_model",
           "store_coverage"]


def epilogue_alpha_beta(acc: np.ndarray, alpha: float, beta: float = 0.0, c_bits=None,
                        dtype: str = "float32") -> np.ndarray:
    """D = alpha * acc + beta * C, in float32 as the kernel computes it, returned as raw `dtype` bits.

    Each operation is rounded to float32 separately (the kernel uses __fmul_rn / __fadd_rn, so no
    fused multiply-add changes the rounding): d = rn(rn(alpha * acc) + rn(beta * c)), then one
    rn conversion to `dtype`. C (raw bits of the same `dtype`) is not read when beta == 0, so a NaN
    in C does not leak into D; CUTLASS skips the C load in that case too.
    """
    acc = np.asarray(acc, dtype=np.float32)
    a = np.float32(alpha)
    b = np.float32(beta)
    with np.errstate(over="ignore", invalid="ignore"):
        d = a * acc
        if b != 0:
            if c_bits is None:
                raise ValueError("beta != 0 needs C (c_bits)")
            c = bits_to_float32(c_bits, d_dtype(dtype))
            if c.shape != acc.shape:
                raise ValueError(f"C has shape {c.shape}, acc {acc.shape}")
            d = (d + b * c).astype(np.float32)
    return float32_to_bits(d, d_dtype(dtype))




def epilogue_model(p: EpilogueProblem, acc, c_bits=None, d_init=None,
                   smem_swizzle: str | None = None, box_coords=None) -> np.ndarray:
    """The D buffer after the epilogue kernel, computed from the stage models end to end: for every
    tile, C comes in through `bwlab.tma.tma_load_model` (OOB zero-filled), D = `epilogue_alpha_beta`,
    the tile is laid out in SMEM by `SmemTile.pack` (swizzle), and each box leaves through
    `tma_store_model` (or `tma_reduce_add_model`).

    `smem_swizzle` is the swizzle the threads write the D tile through (default: the tensor map's).
    A different one models a kernel whose st.shared addresses and tensor map disagree: the TMA
    engine still reads through the map's swizzle, so 16-byte chunks land in the wrong columns.

    `box_coords(tm, tn)` says where tile (tm, tn)'s stores go: [((x, y), SMEM address), ...] as
    `p.box_coords` gives them (the default). Another function models a kernel that passes other
    coordinates to its TMA stores (a store the rules refuse raises `StoreRuleError`)."""
    from ..tma.model import tma_load_model
    from .tile import SmemTile
    raw = raw_dtype(p.dtype)
    acc = np.asarray(acc, dtype=np.float32)
    if acc.shape != p.acc_shape:
        raise ValueError(f"acc must be {p.acc_shape} (whole tiles), got {acc.shape}")
    d = (np.zeros(p.buffer_shape, raw) if d_init is None else np.array(d_init, dtype=raw, copy=True))
    if d.shape != p.buffer_shape:
        raise ValueError(f"D buffer must be {p.buffer_shape}, got {d.shape}")
    if p.use_c:
        c_bits = np.asarray(c_bits, dtype=raw)
        if c_bits.shape != p.buffer_shape:
            raise ValueError(f"C buffer must be {p.buffer_shape}, got {c_bits.shape}")
    tmap = p.tensor_map()
    tile, ctile = p.tile, p.c_tile
    written = tile
    if smem_swizzle is not None and smem_swizzle != p.swizzle:
        written = SmemTile(p.bm, p.bn, p.dtype, smem_swizzle, base=tile.base,
                           box_cols=tile.box_cols if smem_swizzle == "none" else None)
        if written.box_cols != tile.box_cols:
            raise ValueError(f"a {smem_swizzle} tile has {written.box_cols}-column boxes, the tensor "
                             f"map's {p.swizzle} tile {tile.box_cols}: not the same boxes")
    store = tma_reduce_add_model if p.reduce_add else tma_store_model
    for tm in range(p.tiles[0]):
        for tn in range(p.tiles[1]):
            a = acc[tm * p.bm:(tm + 1) * p.bm, tn * p.bn:(tn + 1) * p.bn]
            c_tile_bits = None
            if p.use_c:
                img = np.zeros(ctile.nbytes, np.uint8)
                for b, ((x, y), _) in enumerate(p.box_coords(tm, tn)):
                    addr = ctile.box_address(b)
                    img[addr - ctile.base: addr - ctile.base + tile.box_bytes] = \
                        tma_load_model(c_bits, tmap, (x, y), addr)
                c_tile_bits = ctile.unpack(img)
            dt = epilogue_alpha_beta(a, p.alpha, p.beta, c_tile_bits, p.dtype)
            img = written.pack(dt)
            for (x, y), addr in (box_coords or p.box_coords)(tm, tn):
                d = store(d, tmap, (x, y), img, addr, window_start=tile.base)
    return d




def store_coverage(p: EpilogueProblem) -> np.ndarray:
    """(M + 1, ld) array: the index of the tile (CTA) whose TMA stores write each element, -1 where
    nothing is written. Computed from `tma_store_writes`, i.e. from the store model itself."""
    cov = -np.ones(p.buffer_shape, np.int64)
    tmap = p.tensor_map()
    tile = p.tile
    eb = p.elem_bytes
    for tm in range(p.tiles[0]):
        for tn in range(p.tiles[1]):
            for (x, y), addr in p.box_coords(tm, tn):
                off, _ = tma_store_writes(tmap, (x, y), np.zeros(tile.nbytes, np.uint8), addr,
                                          window_start=tile.base)
                cov.reshape(-1)[np.unique(off // eb)] = tm * p.tiles[1] + tn
    return cov


