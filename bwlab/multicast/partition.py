"""tma_partition and the plan of a grid of clusters: which slice of a tile each CTA issues, with
which mask, where it lands, and what every CTA's mbarrier must expect.

For a tile shared by n CTAs CuTe truncates the TMA box by n, outermost dimension first
(`make_tma_copy_desc`), and CTA i along the multicast mode issues the i-th such box; it lands at
the same SMEM offset in every CTA of its mask (PTX ISA "cp.async.bulk.tensor", `.multicast::cluster`).

CuTe: include/cute/atom/copy_traits_sm90_tma.hpp (tma_partition, make_tma_copy_desc),
examples/cute/tutorial/blackwell/03_*.cu and 04_*.cu (transaction bytes).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..util import ceil_div
from .cluster import CtaMasks, cta_coord, cta_masks, mask_ranks

__all__ = ["multicast_box", "TmaSlice", "tma_partition", "Issue", "CtaPlan", "plan", "block_of_rank",
           "TMA_ISSUE_DTYPE", "plan_arrays", "l2_read_bytes"]


def multicast_box(tile_box, num_multicast: int) -> tuple:
    """The TMA box each multicasting CTA loads: the tile's box truncated by `num_multicast`,
    outermost dimension first (CuTe make_tma_copy_desc). Innermost-first shapes, in elements."""
    box = [int(b) for b in tile_box]
    n = int(num_multicast)
    if n < 1 or any(b < 1 for b in box):
        raise ValueError(f"num_multicast and the tile box must be positive, got {n} and {tuple(tile_box)}")
    mult, i = n, len(box) - 1
    while mult > 1:
        if i < 0:
            raise ValueError(f"a tile of {math.prod(box)} elements cannot be split among {n} CTAs")
        if box[i] % mult and mult % box[i]:
            raise ValueError(f"CuTe splits the tile's outermost dimensions among the multicasting CTAs: "
                             f"dimension {i} of {box[i]} elements and {mult} CTAs must divide one another "
                             f"(tile {tuple(tile_box)}, {n} CTAs)")
        new_mult = ceil_div(mult, box[i])
        box[i] = ceil_div(box[i], mult)
        mult, i = new_mult, i - 1
    return tuple(box)


@dataclass(frozen=True)
class TmaSlice:
    """One multicasting CTA's share of a tile (innermost-first coordinates, in elements)."""

    index: int         # the issuing CTA's coordinate along the multicast mode
    box: tuple         # the box one TMA instruction loads
    origin: tuple      # where the box starts inside the tile
    smem_offset: int   # bytes from the tile's start, in every receiving CTA
    nbytes: int


def tma_partition(tile_box, num_multicast: int, index: int, elem_bytes: int) -> TmaSlice:
    """CuTe tma_partition for a tile whose SMEM order is its innermost-first order (no gaps):
    CTA `index` of `num_multicast` issues the elements [index, index+1) * size/num_multicast of the
    tile (multicast_offset = cta_layout(cta_coord) * size(tile)/cosize(cta_layout)), as one box."""
    box = multicast_box(tile_box, num_multicast)
    if not 0 <= int(index) < int(num_multicast):
        raise ValueError(f"slice index {index} is outside 0..{num_multicast - 1}")
    tile = tuple(int(t) for t in tile_box)
    per = math.prod(tile) // int(num_multicast)
    e0, origin = int(index) * per, []
    for t in tile:
        origin.append(e0 % t)
        e0 //= t
    if any(o % b for o, b in zip(origin, box)):  # cannot happen after multicast_box; keep the proof
        raise ValueError(f"slice {index} of {tile} at {tuple(origin)} is not a box of {box}")
    return TmaSlice(int(index), box, tuple(origin), int(index) * per * int(elem_bytes), per * int(elem_bytes))


@dataclass(frozen=True)
class Issue:
    """One TMA multicast a CTA issues."""

    operand: str
    slice: TmaSlice
    coords: tuple       # the box's coordinates in the tensor, innermost first
    mask: int
    smem_offset: int    # bytes into the tile area of every receiving CTA


@dataclass(frozen=True)
class CtaPlan:
    block: tuple        # (blockIdx.x, blockIdx.y)
    cluster: tuple      # which cluster of the grid (x, y)
    rank: int           # %cluster_ctarank
    coord: tuple        # (v, m, n, k) in the cluster layout
    masks: CtaMasks
    issues: tuple       # Issue, one per loaded operand
    receives: tuple     # (operand, from rank, smem offset, bytes) landing in this CTA
    expect_tx: int      # what its mbarrier must expect when each CTA waits for its own tiles (sm_90)
    expect_tx_2sm: int  # sm_100 `.cta_group::2` TMA (CuTe SM100_TMA_2SM_LOAD): the leader's barrier
                        # counts both peers' bytes, the peer's none (= expect_tx with one-SM MMA)


def block_of_rank(cfg, cluster_xy, rank: int) -> tuple:
    """(blockIdx.x, blockIdx.y) of CTA `rank` of cluster `cluster_xy` of the grid."""
    cm, cn = cfg.cluster
    return (cluster_xy[0] * cm + rank % cm, cluster_xy[1] * cn + rank // cm)


def plan(cfg) -> tuple:
    """Every CTA's part (a CtaPlan) for a MulticastConfig, indexed by the linear block id
    bx + grid_x * by."""
    layout = cfg.layout
    cm, cn = cfg.cluster
    gx, gy = cfg.grid
    issues_of, meta = {}, {}
    for by in range(gy):
        for bx in range(gx):
            rank = (bx % cm) + cm * (by % cn)
            coord = cta_coord(layout, rank)
            masks = cta_masks(layout, rank)
            issues = []
            for op in cfg.operands:
                # A: the CTA's coordinate along N picks its slice; B: its coordinate along M.
                index = coord[2] if op == "A" else coord[1]
                s = cfg.slice_of(op, index)
                origin = cfg.tile_origin(op, (bx, by))
                coords = tuple(o + so for o, so in zip(origin, s.origin))
                issues.append(Issue(op, s, coords, masks.a if op == "A" else masks.b,
                                    cfg.smem_base(op) + s.smem_offset))
            issues_of[(bx, by)] = tuple(issues)
            meta[(bx, by)] = ((bx // cm, by // cn), rank, coord, masks)
    receives = {b: [] for b in issues_of}
    for b, issues in issues_of.items():
        cl, rank = meta[b][0], meta[b][1]
        for iss in issues:
            for r in mask_ranks(iss.mask):
                receives[block_of_rank(cfg, cl, r)].append((iss.operand, rank, iss.smem_offset, iss.slice.nbytes))
    out = []
    for by in range(gy):
        for bx in range(gx):
            cl, rank, coord, masks = meta[(bx, by)]
            rec = tuple(sorted(receives[(bx, by)], key=lambda t: (t[0], t[2])))
            tx = sum(t[3] for t in rec)
            # The 2-SM form of the sm_100 TMA (`cp.async.bulk.tensor ... .cta_group::2`, CuTe
            # SM100_TMA_2SM_LOAD_*, used with a two-SM MMA) sends the complete_tx of both peers to
            # the leader's (v = 0) barrier, which expects size<0>(layout) times its own bytes
            # (tutorial 04); the peer expects none. An ordinary TMA load on sm_100 (.cta_group::1,
            # or none) signals the barrier of the CTA it writes to, as on sm_90.
            tx2 = tx if cfg.peers == 1 else (tx * cfg.peers if coord[0] == 0 else 0)
            out.append(CtaPlan((bx, by), cl, rank, coord, masks, issues_of[(bx, by)], rec, tx, tx2))
    return tuple(out)


# Mirrors struct TmaIssue in cuda_src/tma_multicast.cu (its static_asserts give the same size and
# offsets; tests/test_multicast.py reads them and compares).
TMA_ISSUE_DTYPE = np.dtype([("cta_mask", "<i4"), ("c0", "<i4"), ("c1", "<i4"), ("smem_offset", "<i4")])


def plan_arrays(cfg, extra_tx: int = 0):
    """The kernel's arguments: TmaIssue[cta][A, B] and expect_tx[cta]."""
    plans = plan(cfg)
    issues = np.zeros((cfg.n_ctas, 2), dtype=TMA_ISSUE_DTYPE)
    tx = np.zeros(cfg.n_ctas, dtype=np.uint32)
    for i, p in enumerate(plans):
        for iss in p.issues:
            j = 0 if iss.operand == "A" else 1
            issues[i, j] = (iss.mask, iss.coords[0], iss.coords[1], iss.smem_offset)
        tx[i] = p.expect_tx + extra_tx
    return issues, tx


def l2_read_bytes(cfg) -> dict:
    """Bytes the TMA reads from L2 for one round of tiles, derived from the plan: with multicast
    every issued slice is read once; without it every CTA reads each of its tiles itself."""
    plans = plan(cfg)
    with_mc = sum(i.slice.nbytes for p in plans for i in p.issues)
    own = sum(p.expect_tx for p in plans)
    return {"multicast": with_mc, "own": own, "saved": own - with_mc, "ratio": own / with_mc}
