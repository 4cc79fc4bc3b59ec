"""The NumPy model of a multicast: every CTA's tile area after every issued slice has landed.

The model follows the plan literally: each issued box (its bytes from `bwlab.tma.tma_load_model` at the
destination's SMEM address, so the swizzle is that of the address) is written into every CTA whose
bit is set in its mask. `expected_smem` computes the same thing without masks or slices (each CTA
loads its whole tiles in one box); the two agree when the masks and slices are right.
"""
from __future__ import annotations

import numpy as np

from ..hw.dtypes import element_type
from .cluster import mask_ranks
from .partition import block_of_rank, plan

__all__ = ["FILL_BYTE", "make_operands", "multicast_model", "expected_smem", "check_smem_address",
           "slice_chunks"]

FILL_BYTE = 0xEE  # what the kernel writes into its tile area before any slice lands


def make_operands(cfg, seed: int = 0) -> dict:
    """Random A and B tensors (raw element bits), row-major: rows x tile_k."""
    rng = np.random.default_rng(seed)
    storage = element_type(cfg.dtype).storage
    out = {}
    for op in ("A", "B"):
        k, rows = cfg.global_shape(op)
        raw = rng.integers(0, 256, size=rows * k * cfg.elem_bytes, dtype=np.uint8)
        out[op] = raw.view(storage).reshape(rows, k)
    return out


def check_smem_address(smem_address: int) -> int:
    """A TMA destination must be 128-byte aligned (bwlab.tma.SMEM_ALIGNMENT)."""
    from ..tma import SMEM_ALIGNMENT
    a = int(smem_address)
    if a < 0 or a % SMEM_ALIGNMENT:
        raise ValueError(f"the tile area's SMEM address 0x{a:x} must be a non-negative multiple of "
                         f"{SMEM_ALIGNMENT}: every TMA destination is {SMEM_ALIGNMENT}-byte aligned")
    return a


def multicast_model(cfg, operands: dict, smem_address: int = 0) -> np.ndarray:
    """Every CTA's tile area after every issued multicast has landed: uint8 [n_ctas, smem_bytes],
    FILL_BYTE where nothing lands. `smem_address` is where the tile area starts in SMEM (the same
    in every CTA); the swizzle is applied to the absolute address of each slice."""
    from ..tma import tma_load_model
    base = check_smem_address(smem_address)
    out = np.full((cfg.n_ctas, cfg.smem_bytes), FILL_BYTE, dtype=np.uint8)
    gx = cfg.grid[0]
    tmaps = {op: cfg.tensor_map(op) for op in cfg.operands}
    for p in plan(cfg):
        for iss in p.issues:
            data = tma_load_model(operands[iss.operand], tmaps[iss.operand], iss.coords,
                                  base + iss.smem_offset)
            for r in mask_ranks(iss.mask):
                bx, by = block_of_rank(cfg, p.cluster, r)
                out[bx + gx * by, iss.smem_offset:iss.smem_offset + data.size] = data
    return out


def expected_smem(cfg, operands: dict, smem_address: int = 0) -> np.ndarray:
    """What every CTA must end up holding, computed without masks or slices: its whole A and/or B
    tile, loaded with one box the size of the tile. `multicast_model` must equal this."""
    from ..tma import tma_load_model
    base = check_smem_address(smem_address)
    out = np.full((cfg.n_ctas, cfg.smem_bytes), FILL_BYTE, dtype=np.uint8)
    gx, gy = cfg.grid
    for op in cfg.operands:
        tmap = cfg.tensor_map(op, box=cfg.tile_box(op))
        start = cfg.smem_base(op)
        for by in range(gy):
            for bx in range(gx):
                out[bx + gx * by, start:start + cfg.tile_bytes(op)] = tma_load_model(
                    operands[op], tmap, cfg.tile_origin(op, (bx, by)), base + start)
    return out


def slice_chunks(cfg, op: str, index: int, dst: int | None = None) -> np.ndarray:
    """Where the 16-byte chunks of one slice land: int [lines, 8], one row per 128-byte SMEM line
    the slice covers, entry j = which chunk of its box row sits in chunk j of that line (-1 where
    the TMA writes nothing). The slice is slice `index` of operand `op`; `dst` is the SMEM address
    it is loaded to (default: where it lands in a tile area at address 0). The swizzle is that of
    each line's absolute address."""
    from ..tma import TensorMap, tma_load_model
    s = cfg.slice_of(op, index)
    dst = check_smem_address(cfg.smem_base(op) + s.smem_offset if dst is None else dst)
    eb = cfg.elem_bytes
    k, rows = cfg.global_shape(op)
    # A byte tensor whose every byte says which 16-byte chunk of its row it belongs to (+1, so
    # that 0 marks bytes the TMA leaves alone).
    gmem = np.tile((np.arange(k * eb) // 16 + 1).astype(np.uint8), (rows, 1))
    tmap = TensorMap("uint8", (k * eb, rows), (s.box[0] * eb, s.box[1]), swizzle=cfg.swizzle)
    image = tma_load_model(gmem, tmap, (s.origin[0] * eb, s.origin[1]), dst)
    image = np.concatenate([image, np.zeros(-image.size % 128, np.uint8)])
    return image.reshape(-1, 8, 16)[:, :, 0].astype(int) - 1
