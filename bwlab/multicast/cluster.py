"""Cluster layouts and multicast masks: which CTAs a multicast reaches.

A cluster's CTAs, as CUTLASS's Blackwell kernels see them, form a CuTe layout (V,M,N,K) -> CTA rank
(`cluster_layout_vmnk`). `create_tma_multicast_mask<Modes...>` replaces the CTA's coordinate in the
listed modes by `_`; the ranks of that slice are the bits of the 16-bit `ctaMask` operand of
`cp.async.bulk.tensor ... .multicast::cluster` (PTX ISA "Data Movement and Conversion Instructions:
cp.async.bulk.tensor").

CuTe: include/cute/atom/copy_traits_sm90_tma.hpp (create_tma_multicast_mask),
examples/cute/tutorial/blackwell/03_*.cu and 04_*.cu (cluster_layout_vmnk, the A, B and C masks).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..layout import Layout, format_tuple, make_layout, tiled_divide

__all__ = ["MAX_CLUSTER_CTAS", "PORTABLE_CLUSTER_CTAS", "MODE_NAMES", "cluster_layout_vmnk", "cta_coord",
           "MaskSteps", "mask_steps", "create_tma_multicast_mask", "CtaMasks", "cta_masks", "mask_ranks",
           "format_mask", "mask_table"]

MAX_CLUSTER_CTAS = 16      # the mask is 16 bits; 16 is also the non-portable hardware limit
PORTABLE_CLUSTER_CTAS = 8  # what every sm_90/sm_100 GPU runs without opting in
MODE_NAMES = ("V", "M", "N", "K")


def _cluster_shape(cluster_shape) -> tuple:
    shape = tuple(int(s) for s in cluster_shape)
    if len(shape) == 2:
        shape += (1,)
    if len(shape) != 3 or any(s < 1 for s in shape):
        raise ValueError(f"a cluster shape is (M, N) or (M, N, K) with positive extents, got {cluster_shape!r}")
    return shape


def cluster_layout_vmnk(cluster_shape=(4, 4, 1), peers: int = 1) -> Layout:
    """(V,M,N,K) -> CTA rank, as CUTLASS builds it:
    `tiled_divide(make_layout(cluster_shape), make_tile(AtomThrID))`.

    `cluster_shape` is (M, N[, K]) in CTAs, x (M) fastest, matching %cluster_ctarank = x + X*y.
    `peers` is the size of the MMA atom's ThrID: 1 (`1:0`, one-SM MMA) or 2 (`2:1`, two-SM MMA,
    where CTAs 2i and 2i+1 along M form one MMA). Examples (CUTLASS tutorials 03 and 04):
    (4,4,1), peers 1 -> ((1),4,4,1):((0),1,4,0); peers 2 -> ((2),2,4,1):((1),2,4,0).
    """
    shape = _cluster_shape(cluster_shape)
    if peers not in (1, 2):
        raise ValueError(f"peers (the MMA's CTA count, CuTe AtomThrID) must be 1 or 2, got {peers}")
    if shape[0] % peers:
        raise ValueError(f"a two-SM MMA pairs CTAs along M: the cluster's M extent {shape[0]} must be "
                         f"a multiple of peers={peers}")
    n = math.prod(shape)
    if n > MAX_CLUSTER_CTAS:
        raise ValueError(f"a cluster holds at most {MAX_CLUSTER_CTAS} CTAs (16-bit multicast mask); "
                         f"{shape} has {n}")
    thr = Layout(1, 0) if peers == 1 else Layout(2, 1)
    return tiled_divide(make_layout(shape), (thr,))


def _check_cluster_layout(layout: Layout) -> None:
    if not isinstance(layout, Layout):
        raise ValueError(f"expected a bwlab.layout.Layout, got {type(layout).__name__}")
    ranks = layout.values()
    if max(ranks) >= MAX_CLUSTER_CTAS or min(ranks) < 0:
        raise ValueError(f"cluster layout {layout} maps to ranks {min(ranks)}..{max(ranks)}; a 16-bit "
                         f"multicast mask can name ranks 0..{MAX_CLUSTER_CTAS - 1} only")


def cta_coord(layout: Layout, rank: int) -> tuple:
    """The flat (v, m, n, k) coordinate of CTA `rank` (CuTe: cluster_layout_vmnk.get_flat_coord)."""
    if not 0 <= int(rank) < layout.size():
        raise ValueError(f"rank {rank} is outside the cluster {layout} (0..{layout.size() - 1})")
    c = layout.get_flat_coord(int(rank))
    if layout(c) != rank:
        raise ValueError(f"layout {layout} is not a bijection onto 0..{layout.size() - 1}: rank {rank} "
                         f"has no coordinate")
    return c


def _check_coord(layout: Layout, coord) -> tuple:
    coord = tuple(coord)
    if len(coord) != layout.rank:
        raise ValueError(f"a coordinate of {layout} has {layout.rank} entries (one per mode), got {coord}")
    return coord


@dataclass(frozen=True)
class MaskSteps:
    """CuTe's create_tma_multicast_mask, one step at a time (for the notebook)."""

    layout: Layout
    coord: tuple
    modes: tuple
    projected: tuple   # the coordinate with the projected modes replaced by _ (None)
    slice: Layout      # the layout of the CTAs that differ from `coord` only in those modes
    offset: int        # the layout at `coord` with the projected modes set to 0: the base rank
    ranks: tuple       # offset + slice(i) for every i
    mask: int

    def __str__(self):
        names = ",".join(MODE_NAMES[m] if self.layout.rank == 4 else str(m) for m in self.modes)
        base = format_tuple(tuple(0 if c is None else c for c in self.projected))
        return "\n".join([
            f"cluster layout      {self.layout}",
            f"CTA coordinate      {format_tuple(self.coord)}",
            f"project mode(s) {format_tuple(self.modes)} ({names}) -> {format_tuple(self.projected)}",
            f"slice               {self.slice}   (the CTAs that share everything but those modes)",
            f"offset              {self.offset}   (= layout{base})",
            f"ranks               offset + slice(i) = {list(self.ranks)}",
            f"mask                {format_mask(self.mask, self.layout.size())}",
        ])


def mask_steps(layout: Layout, coord, modes) -> MaskSteps:
    """Every intermediate value of create_tma_multicast_mask<modes...>(layout, coord)."""
    _check_cluster_layout(layout)
    coord = _check_coord(layout, coord)
    modes = tuple(int(m) for m in (modes if isinstance(modes, (tuple, list)) else (modes,)))
    for m in modes:
        if not 0 <= m < layout.rank:
            raise ValueError(f"mode {m} does not exist in {layout} (modes 0..{layout.rank - 1})")
    projected = tuple(None if i in modes else c for i, c in enumerate(coord))
    sub, offset = layout.slice_and_offset(projected)
    if not modes:  # CuTe: a rank-0 slice is the CTA alone
        ranks = (offset,)
    else:
        ranks = tuple(offset + v for v in sub.values())
    mask = 0
    for r in ranks:
        mask |= 1 << r
    return MaskSteps(layout, coord, modes, projected, sub, offset, ranks, mask)


def create_tma_multicast_mask(layout: Layout, coord, modes=()) -> int:
    """CuTe `create_tma_multicast_mask<Modes...>(cta_layout_vmnk, cta_coord_vmnk)`.

    The coordinate's entries in `modes` are replaced by `_`; the CTAs of that slice of the cluster
    layout are the bits of the 16-bit mask. modes=(2,) is the A mask (every N of this M), (1,) the
    B mask, (0,1) | (0,2) the MMA-completion mask C of tutorials 03/04.
    """
    return mask_steps(layout, coord, modes).mask


@dataclass(frozen=True)
class CtaMasks:
    rank: int
    coord: tuple
    a: int   # create_tma_multicast_mask<2>
    b: int   # create_tma_multicast_mask<1>
    c: int   # create_tma_multicast_mask<0,1> | create_tma_multicast_mask<0,2>


def cta_masks(layout: Layout, rank: int) -> CtaMasks:
    """The A, B and C masks of CTA `rank`, as tutorials 03 and 04 compute them."""
    c = cta_coord(layout, rank)
    return CtaMasks(int(rank), c, create_tma_multicast_mask(layout, c, (2,)),
                    create_tma_multicast_mask(layout, c, (1,)),
                    create_tma_multicast_mask(layout, c, (0, 1)) | create_tma_multicast_mask(layout, c, (0, 2)))


def mask_ranks(mask: int) -> list:
    """The CTA ranks whose bits are set."""
    return [r for r in range(MAX_CLUSTER_CTAS) if mask >> r & 1]


def format_mask(mask: int, n: int = MAX_CLUSTER_CTAS) -> str:
    """'0x2222 = 0b0010001000100010 (ranks 1, 5, 9, 13)': hex, the 16 bits, the ranks."""
    return f"0x{mask:04X} = 0b{mask:016b} (ranks {', '.join(map(str, mask_ranks(mask)))})"


def mask_table(layout: Layout) -> str:
    """Every CTA's coordinate and A, B, C masks, in hex and bits, one line each."""
    n = layout.size()
    out = [f"{'rank':>4s}  {'(v,m,n,k)':10s} {'A <2>':>6s} {'bits':>{n}s}  {'B <1>':>6s} {'bits':>{n}s}  "
           f"{'C':>6s} {'bits':>{n}s}"]
    for r in range(n):
        m = cta_masks(layout, r)
        out.append(f"{r:4d}  {format_tuple(m.coord):10s} 0x{m.a:04X} {m.a:0{n}b}  0x{m.b:04X} {m.b:0{n}b}  "
                   f"0x{m.c:04X} {m.c:0{n}b}")
    return "\n".join(out)
