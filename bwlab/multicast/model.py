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

__all__ = ["FILL_BYTE", "make_operands", "multicast_model", "masked_multicast_model", "expected_smem",
           "require_smem_address", "slice_chunks", "TEACH_KERNEL", "teach_config", "require_teach_config", "teach_masks",
           "barrier_outcome", "barrier_table"]

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


def require_smem_address(smem_address: int) -> int:
    """A TMA destination must be 128-byte aligned (bwlab.tma.SMEM_ALIGNMENT)."""
    from ..tma.tensor_map import SMEM_ALIGNMENT
    a = int(smem_address)
    if a < 0 or a % SMEM_ALIGNMENT:
        raise ValueError(f"the tile area's SMEM address 0x{a:x} must be a non-negative multiple of "
                         f"{SMEM_ALIGNMENT}: every TMA destination is {SMEM_ALIGNMENT}-byte aligned")
    return a


def multicast_model(cfg, operands: dict, smem_address: int = 0) -> np.ndarray:
    """Every CTA's tile area after every issued multicast has landed: uint8 [n_ctas, smem_bytes],
    FILL_BYTE where nothing lands. `smem_address` is where the tile area starts in SMEM (the same
    in every CTA); the swizzle is applied to the absolute address of each slice."""
    return masked_multicast_model(cfg, operands, None, smem_address)


def masked_multicast_model(cfg, operands: dict, masks, smem_address: int = 0) -> np.ndarray:
    """`multicast_model` with other masks: `masks`, uint16 [cluster rank][A, B] (a learner's, a
    broken one; None: the plan's), replaces the mask each rank multicasts with. Each slice then lands
    in the CTAs those masks name, the later sender's bytes over the earlier's where they meet."""
    from ..tma.model import tma_load_model
    base = require_smem_address(smem_address)
    if masks is not None:
        masks = np.asarray(masks)
        if masks.shape != (cfg.cluster_size, 2) or masks.min() < 0 or int(masks.max()) >> cfg.cluster_size:
            raise ValueError(f"masks are [cluster rank][A, B], shape {(cfg.cluster_size, 2)}, each naming "
                             f"ranks 0..{cfg.cluster_size - 1} only; got shape {masks.shape}")
    out = np.full((cfg.n_ctas, cfg.smem_bytes), FILL_BYTE, dtype=np.uint8)
    gx = cfg.grid[0]
    tmaps = {op: cfg.tensor_map(op) for op in cfg.operands}
    for p in plan(cfg):
        for iss in p.issues:
            data = tma_load_model(operands[iss.operand], tmaps[iss.operand], iss.coords,
                                  base + iss.smem_offset)
            mask = iss.mask if masks is None else int(masks[p.rank, "AB".index(iss.operand)])
            for r in mask_ranks(mask):
                bx, by = block_of_rank(cfg, p.cluster, r)
                out[bx + gx * by, iss.smem_offset:iss.smem_offset + data.size] = data
    return out


def expected_smem(cfg, operands: dict, smem_address: int = 0) -> np.ndarray:
    """What every CTA must end up holding, computed without masks or slices: its whole A and/or B
    tile, loaded with one box the size of the tile. `multicast_model` must equal this."""
    from ..tma.model import tma_load_model
    base = require_smem_address(smem_address)
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
    from ..tma.model import tma_load_model
    from ..tma.tensor_map import TensorMap
    s = cfg.slice_of(op, index)
    dst = require_smem_address(cfg.smem_base(op) + s.smem_offset if dst is None else dst)
    eb = cfg.elem_bytes
    k, rows = cfg.global_shape(op)
    # A byte tensor whose every byte says which 16-byte chunk of its row it belongs to (+1, so
    # that 0 marks bytes the TMA leaves alone).
    gmem = np.tile((np.arange(k * eb) // 16 + 1).astype(np.uint8), (rows, 1))
    tmap = TensorMap("uint8", (k * eb, rows), (s.box[0] * eb, s.box[1]), swizzle=cfg.swizzle)
    image = tma_load_model(gmem, tmap, (s.origin[0] * eb, s.origin[1]), dst)
    image = np.concatenate([image, np.zeros(-image.size % 128, np.uint8)])
    return image.reshape(-1, 8, 16)[:, :, 0].astype(int) - 1


# -- the teaching kernel (cuda_src/teach_multicast.cu) ----------------------------------------------
TEACH_KERNEL = "teach_multicast.cu"
TEACH_SMEM_LIMIT = 47 * 1024  # its tiles are static __shared__ arrays: 48 KiB in all, barrier included


def teach_config(cluster=(2, 2), tile_m: int = 64, tile_n: int = 64, grid_clusters=(1, 1)):
    """The MulticastConfig the teaching kernel runs: 16-bit K-major A and B tiles of 64 elements
    (128 bytes) per row, no swizzle, one-SM MMA masks."""
    from .params import MulticastConfig
    cfg = MulticastConfig(cluster=cluster, tile_m=tile_m, tile_n=tile_n, tile_k=64, dtype="float16",
                          swizzle="none", operands="AB", grid_clusters=grid_clusters)
    require_teach_config(cfg)
    return cfg


def require_teach_config(cfg) -> None:
    """Raise ValueError naming the rule when the teaching kernel cannot run `cfg` as
    `multicast_model` models it."""
    from .params import MulticastConfig
    if not isinstance(cfg, MulticastConfig):
        raise ValueError(f"the teaching kernel runs a MulticastConfig, got {type(cfg).__name__}")
    if cfg.peers != 1 or cfg.operands != "AB" or cfg.swizzle != "none" or cfg.elem_bytes != 2:
        raise ValueError("the teaching kernel loads A and B tiles of 16-bit elements, no swizzle, with the "
                         f"one-SM masks (peers 1); got peers {cfg.peers}, operands {cfg.operands!r}, swizzle "
                         f"{cfg.swizzle!r}, {cfg.elem_bytes}-byte elements")
    for op in "AB":
        s, rows = cfg.slice_of(op, 0), cfg.tile_box(op)[1]
        if s.box != (cfg.tile_k, rows // cfg.num_multicast(op)) or rows % cfg.num_multicast(op):
            raise ValueError(f"the teaching kernel splits each tile by rows: {op}'s {rows} rows must divide "
                             f"among its {cfg.num_multicast(op)} CTAs")
    if cfg.tile_bytes("A") % 1024:
        raise ValueError(f"the teaching kernel puts the B tile right after the A tile, where the model puts it "
                         f"on the next 1024-byte boundary: the A tile ({cfg.tile_bytes('A')} B) must be a "
                         f"multiple of 1024 bytes")
    if cfg.smem_bytes > TEACH_SMEM_LIMIT:
        raise ValueError(f"the teaching kernel's tiles are static shared memory: {cfg.smem_bytes} B is over "
                         f"{TEACH_SMEM_LIMIT}")


_TEACH_MASKS = {}   # config -> its masks (a config is frozen: the same one gives the same masks)


def teach_masks(cfg) -> np.ndarray:
    """What the teaching kernel reads: uint16 [cluster rank][A mask, B mask], each from
    create_tma_multicast_mask<2> (A) and <1> (B) of the cluster layout."""
    from .cluster import cta_masks
    try:
        got, keep = _TEACH_MASKS.get(cfg), True
    except TypeError:   # a config with an unhashable part: computed each time
        got, keep = None, False
    if got is None:
        masks = [cta_masks(cfg.layout, r) for r in range(cfg.cluster_size)]
        got = np.array([[m.a, m.b] for m in masks], dtype=np.uint16)
        if keep and len(_TEACH_MASKS) < 256:
            _TEACH_MASKS[cfg] = got
    return got.copy()


def barrier_outcome(cfg, masks=None, expect_tx: int | None = None) -> list:
    """Each CTA rank's mbarrier in the teaching kernel, given the masks each rank multicasts with:
    what it expects, which slices reach it (operand, sender rank, bytes), and whether phase 0
    completes (bwlab.hw.mbarrier: it completes when the tx-count returns to zero). A CTA whose
    phase never completes is the one the GPU's bounded wait names in MbarrierTimeout."""
    from ..hw.mbarrier import Mbarrier
    masks = teach_masks(cfg) if masks is None else np.asarray(masks)
    if masks.shape != (cfg.cluster_size, 2):
        raise ValueError(f"masks are [cluster rank][A, B]: shape {(cfg.cluster_size, 2)}, got {masks.shape}")
    expect = cfg.expect_tx_bytes if expect_tx is None else int(expect_tx)
    slice_bytes = {op: cfg.slice_of(op, 0).nbytes for op in "AB"}
    out = []
    for r in range(cfg.cluster_size):
        got = [(op, s, slice_bytes[op]) for j, op in enumerate("AB") for s in range(cfg.cluster_size)
               if int(masks[s, j]) >> r & 1]
        bar = Mbarrier(1)
        bar.arrive_expect_tx(expect)
        done_at = None  # bytes landed when the phase completed
        landed = 0
        for *_, n in got:
            for _ in range(n // 16):  # bytes land (and complete_tx) a 16-byte chunk at a time
                landed += 16
                if bar.complete_tx(16) and done_at is None:
                    done_at = landed
        out.append({"rank": r, "expect_tx": expect, "received": got, "arrived": landed,
                    "completes": bar.completed > 0, "completed_after": done_at})
    return out


def barrier_table(outcomes) -> str:
    """One line per CTA: expected and arrived bytes, who sent them, whether phase 0 completes."""
    lines = []
    for o in outcomes:
        senders = " ".join(f"{op}{s}" for op, s, _ in o["received"])
        if not o["completes"]:
            verdict = f"NEVER completes ({o['expect_tx'] - o['arrived']} B missing): MbarrierTimeout"
        elif o["completed_after"] < o["arrived"]:
            verdict = f"completes EARLY, with {o['arrived'] - o['completed_after']} B still to land"
        else:
            verdict = "completes"
        lines.append(f"CTA rank {o['rank']}: expects {o['expect_tx']} B, receives {o['arrived']} B "
                     f"({senders}): {verdict}")
    return "\n".join(lines)
