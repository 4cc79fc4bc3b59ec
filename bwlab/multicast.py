"""Stage 2 — clusters and TMA multicast: cluster layouts, multicast masks, tma_partition.

A *cluster* is a group of up to 8 (portable) or 16 CTAs that run at the same time on one GPC and
can write into each other's shared memory. `cp.async.bulk.tensor...multicast::cluster` (PTX ISA
9.7.9.25) takes a 16-bit `ctaMask`: the box lands at the same SMEM offset in every CTA whose cluster
rank has its bit set, and each of them sees `complete_tx` on the mbarrier at the same offset.

In a GEMM, all CTAs of a cluster row need the same A tile and all CTAs of a column the same B tile.
CUTLASS lets each of them issue a *slice* of the shared tile with a mask naming everyone who needs
it, so each tile is read from L2 once per cluster instead of once per CTA.

This module has the shape of every bwlab stage:

* `cluster_layout_vmnk` — the cluster as CUTLASS's Blackwell kernels see it, a layout (V,M,N,K) ->
  CTA rank, built with `tiled_divide(make_layout(cluster_shape), AtomThrID)` (V = the MMA's peer
  CTAs: 1 for a one-SM MMA, 2 for `tcgen05.mma.cta_group::2`).
* `create_tma_multicast_mask(layout, coord, modes)` — CuTe's mask: the listed modes are replaced by
  `_`, the slice's ranks become bits, shifted by the slice's offset.
* `tma_partition` — which slice of a tile each CTA issues (CuTe truncates the TMA box by the number
  of multicasting CTAs, outermost dimension first) and where it lands; `MulticastConfig` and
  `plan()` extend that to a whole grid of clusters: every CTA's issues, what lands in every CTA and
  the transaction bytes each mbarrier must expect; `model_smem` is the NumPy model of the result.
* the GPU runner (`run_multicast`, `check_multicast`) over `cuda_src/tma_multicast.cu`, the hardware
  validation (`python -m bwlab.validate multicast`), the benchmark (`python -m bwlab.bench
  multicast`), and pictures for notebook 02 (`draw_*`).

CuTe counterparts: include/cute/atom/copy_traits_sm90_tma.hpp (create_tma_multicast_mask,
tma_partition, make_tma_copy_desc's box truncation), examples/cute/tutorial/blackwell/03_*.cu and
04_*.cu (cluster layout, masks, transaction bytes).
"""
from __future__ import annotations

import argparse
import math
import statistics
from dataclasses import dataclass, field

import numpy as np

from .layout import Layout, format_tuple, make_layout, tiled_divide
from .runtime import Report

__all__ = [
    "MAX_CLUSTER_CTAS", "PORTABLE_CLUSTER_CTAS", "cluster_layout_vmnk", "cta_coord",
    "create_tma_multicast_mask", "mask_steps", "MaskSteps", "cta_masks", "CtaMasks", "mask_ranks",
    "format_mask", "multicast_box", "tma_partition", "TmaSlice", "MulticastConfig", "Issue",
    "CtaPlan", "plan", "model_smem", "expected_smem", "make_operands", "run_multicast",
    "check_multicast", "MulticastCheck", "validate_main", "bench_main", "FILL_BYTE", "BARRIERS",
    "mask_table", "l2_read_bytes", "explain_cta", "draw_cluster", "draw_mask", "draw_masks_of",
    "draw_every_mask", "draw_landing", "draw_smem_check", "draw_savings", "BenchConfig", "run_bench",
    "validation_configs", "ncu_sectors", "plan_arrays", "parse_depth",
]

MAX_CLUSTER_CTAS = 16      # the mask is 16 bits; 16 is also the non-portable hardware limit
PORTABLE_CLUSTER_CTAS = 8  # what every sm_90/sm_100 GPU runs without opting in
FILL_BYTE = 0xEE           # what the kernel writes into its tile area before any slice lands
BARRIERS = {0: "tile_full"}
MODE_NAMES = ("V", "M", "N", "K")


# ---------------------------------------------------------------------------------------------
# Cluster layouts and multicast masks
# ---------------------------------------------------------------------------------------------
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
        return "\n".join([
            f"cluster layout      {self.layout}",
            f"CTA coordinate      {format_tuple(self.coord)}",
            f"project mode(s) {format_tuple(self.modes)} ({names}) -> {format_tuple(self.projected)}",
            f"slice               {self.slice}   (the CTAs that share everything but those modes)",
            f"offset              {self.offset}   (= layout{format_tuple(tuple(0 if c is None else c for c in self.projected))})",
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


# ---------------------------------------------------------------------------------------------
# tma_partition: which slice each CTA issues, where it lands
# ---------------------------------------------------------------------------------------------
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
        new_mult = -(-mult // box[i])
        box[i] = -(-box[i] // mult)
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


# ---------------------------------------------------------------------------------------------
# A whole grid of clusters loading A and B tiles
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MulticastConfig:
    """One experiment: a grid of clusters in which every CTA needs an A tile and/or a B tile.

    cluster        (M, N): CTAs of a cluster along x (M, peers included) and y (N)
    peers          1 (one-SM MMA) or 2 (two-SM MMA: CTAs 2i, 2i+1 along M share one MMA)
    operands       'A', 'B' or 'AB': which tiles are loaded (A multicast along N, B along M)
    tile_m, tile_n rows of the A and B tile each CTA holds
    tile_k         elements per row (the contiguous dimension; K-major operands)
    dtype          element type (a bwlab.tma dtype name)
    swizzle        'none' | '32B' | '64B' | '128B'
    grid_clusters  clusters along x and y

    CTA (bx, by) of the grid has cluster rank (bx % M) + M * (by % N). Its A tile starts at row
    bx * tile_m of A; its B tile at row (by * peers + v) * tile_n of B, v = (bx % M) % peers — with
    two-SM MMA each peer holds one half of the MMA's B tile.
    """

    cluster: tuple = (2, 2)
    peers: int = 1
    operands: str = "AB"
    tile_m: int = 128
    tile_n: int = 128
    tile_k: int = 64
    dtype: str = "float16"
    swizzle: str = "128B"
    grid_clusters: tuple = (1, 1)

    def __post_init__(self):
        from .tma import DTYPES, MAX_BOX, MAX_TX_BYTES
        cluster = tuple(int(c) for c in self.cluster)
        if len(cluster) != 2:
            raise ValueError(f"cluster is (M, N) in CTAs, got {self.cluster!r}")
        object.__setattr__(self, "cluster", cluster)
        object.__setattr__(self, "grid_clusters", tuple(int(g) for g in self.grid_clusters))
        if len(self.grid_clusters) != 2 or min(self.grid_clusters) < 1:
            raise ValueError(f"grid_clusters is (x, y), both >= 1, got {self.grid_clusters!r}")
        cluster_layout_vmnk(cluster + (1,), self.peers)  # validates peers and the cluster size
        if self.operands not in ("A", "B", "AB"):
            raise ValueError(f"operands must be 'A', 'B' or 'AB', got {self.operands!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        for name in ("tile_m", "tile_n", "tile_k"):
            v = getattr(self, name)
            if not 1 <= v <= MAX_BOX:
                raise ValueError(f"{name} = {v}: each tile dimension is one TMA box dimension, 1..{MAX_BOX}")
        for op in self.operands:
            s = self.slice_of(op, 0)
            align = 1024 if self.swizzle != "none" else 128
            if s.nbytes % align:
                raise ValueError(f"operand {op}: each CTA's slice is {s.nbytes} bytes; slices must be "
                                 f"multiples of {align} bytes so that every slice starts where "
                                 f"{'the ' + self.swizzle + ' swizzle pattern starts' if align == 1024 else 'TMA needs (128-byte SMEM alignment)'}")
            self.tensor_map(op)  # the slice box must satisfy cuTensorMapEncodeTiled's rules
        if self.expect_tx_bytes > MAX_TX_BYTES:
            raise ValueError(f"one mbarrier phase counts at most {MAX_TX_BYTES} bytes; this CTA expects "
                             f"{self.expect_tx_bytes}")
        if self.smem_bytes + 1024 > 227 * 1024:
            raise ValueError(f"the tiles need {self.smem_bytes} bytes (+1024 for alignment) of SMEM; "
                             f"a CTA may have at most {227 * 1024}")

    # -- derived ------------------------------------------------------------------------------
    @property
    def layout(self) -> Layout:
        return cluster_layout_vmnk(self.cluster + (1,), self.peers)

    @property
    def cluster_size(self) -> int:
        return self.cluster[0] * self.cluster[1]

    @property
    def grid(self) -> tuple:
        return (self.cluster[0] * self.grid_clusters[0], self.cluster[1] * self.grid_clusters[1])

    @property
    def n_ctas(self) -> int:
        return self.grid[0] * self.grid[1]

    @property
    def elem_bytes(self) -> int:
        from .tma import DTYPES
        return DTYPES[self.dtype][1]

    def tile_box(self, op: str) -> tuple:
        return (self.tile_k, self.tile_m if op == "A" else self.tile_n)

    def tile_bytes(self, op: str) -> int:
        return math.prod(self.tile_box(op)) * self.elem_bytes

    def num_multicast(self, op: str) -> int:
        """A is shared by the CTAs along N (mode 2), B by those along M (mode 1)."""
        return self.layout[2].size() if op == "A" else self.layout[1].size()

    def slice_of(self, op: str, index: int) -> TmaSlice:
        return tma_partition(self.tile_box(op), self.num_multicast(op), index, self.elem_bytes)

    def smem_base(self, op: str) -> int:
        """Offset of the operand's tile inside the CTA's tile area (A first, B after it)."""
        if op == "A" or "A" not in self.operands:
            return 0
        return -(-self.tile_bytes("A") // 1024) * 1024

    @property
    def smem_bytes(self) -> int:
        return max(self.smem_base(op) + self.tile_bytes(op) for op in self.operands)

    @property
    def expect_tx_bytes(self) -> int:
        """What each CTA's own mbarrier must expect: every byte of every tile it holds."""
        return sum(self.tile_bytes(op) for op in self.operands)

    def global_shape(self, op: str) -> tuple:
        rows = self.grid[0] * self.tile_m if op == "A" else self.grid[1] * self.peers * self.tile_n
        return (self.tile_k, rows)

    def tensor_map(self, op: str, box=None):
        """The tensor map each CTA issues its slice through (box = the slice's box)."""
        from .tma import TensorMap
        box = self.slice_of(op, 0).box if box is None else box
        return TensorMap(self.dtype, self.global_shape(op), box, swizzle=self.swizzle)

    def tile_origin(self, op: str, block) -> tuple:
        """Where CTA `block` = (bx, by)'s whole tile starts in the tensor (innermost first)."""
        bx, by = block
        if op == "A":
            return (0, bx * self.tile_m)
        v = (bx % self.cluster[0]) % self.peers
        return (0, (by * self.peers + v) * self.tile_n)

    def describe(self) -> str:
        parts = [f"cluster {self.cluster[0]}x{self.cluster[1]} (peers {self.peers}) -> layout {self.layout}",
                 f"grid {self.grid[0]}x{self.grid[1]} CTAs ({self.grid_clusters[0]}x{self.grid_clusters[1]} clusters)"]
        for op in self.operands:
            s = self.slice_of(op, 0)
            parts.append(f"{op}: tile {self.tile_box(op)} ({self.tile_bytes(op)} B) split among "
                         f"{self.num_multicast(op)} CTAs -> box {s.box} = {s.nbytes} B per CTA")
        parts.append(f"every CTA's mbarrier expects {self.expect_tx_bytes} B")
        return "\n".join(parts)


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
    expect_tx_2sm: int  # sm_100 two-SM TMA: the leader's barrier counts both peers' bytes, peers 0


def _block_of_rank(cfg: MulticastConfig, cluster_xy, rank: int) -> tuple:
    cm, cn = cfg.cluster
    return (cluster_xy[0] * cm + rank % cm, cluster_xy[1] * cn + rank // cm)


def plan(cfg: MulticastConfig) -> tuple:
    """Every CTA's part, indexed by the linear block id bx + grid_x * by."""
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
                receives[_block_of_rank(cfg, cl, r)].append((iss.operand, rank, iss.smem_offset, iss.slice.nbytes))
    out = []
    for by in range(gy):
        for bx in range(gx):
            cl, rank, coord, masks = meta[(bx, by)]
            rec = tuple(sorted(receives[(bx, by)], key=lambda t: (t[0], t[2])))
            tx = sum(t[3] for t in rec)
            out.append(CtaPlan((bx, by), cl, rank, coord, masks, issues_of[(bx, by)], rec, tx, 0))
    # Two-SM TMA (sm_100, SM100_TMA_2SM_LOAD_*): the complete_tx of both peers goes to the leader
    # (v = 0), which expects size<0>(layout) times its own bytes (tutorial 04); the peer expects none.
    if cfg.peers > 1:
        fixed = []
        for p in out:
            tx2 = p.expect_tx * cfg.peers if p.coord[0] == 0 else 0
            fixed.append(CtaPlan(p.block, p.cluster, p.rank, p.coord, p.masks, p.issues, p.receives,
                                 p.expect_tx, tx2))
        out = fixed
    else:
        out = [CtaPlan(p.block, p.cluster, p.rank, p.coord, p.masks, p.issues, p.receives,
                       p.expect_tx, p.expect_tx) for p in out]
    return tuple(out)


def make_operands(cfg: MulticastConfig, seed: int = 0) -> dict:
    """Random A and B tensors (raw element bits), row-major: rows x tile_k."""
    from .tma import np_dtype
    rng = np.random.default_rng(seed)
    out = {}
    for op in ("A", "B"):
        k, rows = cfg.global_shape(op)
        raw = rng.integers(0, 256, size=rows * k * cfg.elem_bytes, dtype=np.uint8)
        out[op] = raw.view(np_dtype(cfg.dtype)).reshape(rows, k)
    return out


def model_smem(cfg: MulticastConfig, operands: dict, smem_address: int = 0) -> np.ndarray:
    """The tile area of every CTA after every issued multicast has landed: [n_ctas, smem_bytes].

    Follows the plan literally: each issue's box (bwlab.tma.tma_load_model at the destination
    address, so the swizzle is right) is written into every CTA whose bit is set in its mask.
    `smem_address` is where the kernel's tile area starts (a multiple of 1024)."""
    from .tma import tma_load_model
    plans = plan(cfg)
    out = np.full((cfg.n_ctas, cfg.smem_bytes), FILL_BYTE, dtype=np.uint8)
    gx = cfg.grid[0]
    tmaps = {op: cfg.tensor_map(op) for op in cfg.operands}
    for p in plans:
        for iss in p.issues:
            data = tma_load_model(operands[iss.operand], tmaps[iss.operand], iss.coords,
                                  smem_address + iss.smem_offset)
            for r in mask_ranks(iss.mask):
                bx, by = _block_of_rank(cfg, p.cluster, r)
                out[bx + gx * by, iss.smem_offset:iss.smem_offset + data.size] = data
    return out


def expected_smem(cfg: MulticastConfig, operands: dict, smem_address: int = 0) -> np.ndarray:
    """What every CTA must end up holding, computed without masks or slices: its whole A and/or B
    tile, loaded with one box the size of the tile. `model_smem` must equal this."""
    from .tma import tma_load_model
    out = np.full((cfg.n_ctas, cfg.smem_bytes), FILL_BYTE, dtype=np.uint8)
    gx, gy = cfg.grid
    for op in cfg.operands:
        tmap = cfg.tensor_map(op, box=cfg.tile_box(op))
        base = cfg.smem_base(op)
        for by in range(gy):
            for bx in range(gx):
                out[bx + gx * by, base:base + cfg.tile_bytes(op)] = tma_load_model(
                    operands[op], tmap, cfg.tile_origin(op, (bx, by)), smem_address + base)
    return out


# ---------------------------------------------------------------------------------------------
# The GPU runner (cuda_src/tma_multicast.cu)
# ---------------------------------------------------------------------------------------------
# Mirrors struct TmaIssue in cuda_src/tma_multicast.cu.
TMA_ISSUE_DTYPE = np.dtype([("cta_mask", "<i4"), ("c0", "<i4"), ("c1", "<i4"), ("smem_offset", "<i4")])
THREADS = 128


def plan_arrays(cfg: MulticastConfig, extra_tx: int = 0):
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


@dataclass
class MulticastRun:
    """What the GPU produced: every CTA's tile area, and what each CTA said about itself."""

    config: MulticastConfig
    smem: np.ndarray          # [n_ctas, smem_bytes]
    ranks: np.ndarray         # %cluster_ctarank per CTA
    smem_address: np.ndarray  # where each CTA's tile area sat
    cluster_ctaid: np.ndarray # [n_ctas, 2] %cluster_ctaid.x, .y
    operands: dict


def run_multicast(cfg: MulticastConfig, operands: dict | None = None, seed: int = 0,
                  extra_tx: int = 0) -> MulticastRun:
    """Launch tma_multicast_tile for `cfg` on this GPU. `extra_tx` > 0 announces more bytes than
    arrive, on purpose: the bounded wait then raises MbarrierTimeout instead of hanging."""
    import cupy as cp
    from . import device
    from .compile import load_module
    from .runtime import launch, tensor_map_arg
    if cfg.cluster_size > PORTABLE_CLUSTER_CTAS:
        raise ValueError(f"the GPU runner launches portable clusters of at most {PORTABLE_CLUSTER_CTAS} "
                         f"CTAs; {cfg.cluster} has {cfg.cluster_size}")
    if int(extra_tx) < 0:
        raise ValueError(f"extra_tx must be >= 0, got {extra_tx}")
    device.require("multicast")
    operands = make_operands(cfg, seed) if operands is None else operands
    dev = {op: cp.asarray(np.ascontiguousarray(operands[op])) for op in ("A", "B")}
    maps = {}
    for op in ("A", "B"):
        use = op if op in cfg.operands else cfg.operands[0]
        maps[op] = tensor_map_arg(cfg.tensor_map(use).encode(dev[use].data.ptr))
    issues, tx = plan_arrays(cfg, extra_tx)
    d_issues = cp.asarray(issues.view(np.int32))
    d_tx = cp.asarray(tx)
    out = cp.zeros(cfg.n_ctas * cfg.smem_bytes, dtype=cp.uint8)
    info = cp.zeros(cfg.n_ctas * 4, dtype=cp.uint32)
    mod = load_module("tma_multicast", defines={"CLUSTER_X": cfg.cluster[0], "CLUSTER_Y": cfg.cluster[1]})
    launch(mod, "tma_multicast_tile", cfg.grid, (THREADS,),
           (maps["A"], maps["B"], d_issues, d_tx, np.uint32(cfg.smem_bytes), out, info),
           shared_mem=cfg.smem_bytes + 1024, barrier_names=BARRIERS, cluster=cfg.cluster + (1,))
    info = cp.asnumpy(info).reshape(cfg.n_ctas, 4)
    return MulticastRun(cfg, cp.asnumpy(out).reshape(cfg.n_ctas, cfg.smem_bytes), info[:, 0].copy(),
                        info[:, 1].copy(), info[:, 2:4].copy(), operands)


@dataclass
class MulticastCheck:
    config: MulticastConfig
    ranks_ok: bool
    aligned: bool
    bad_ctas: list = field(default_factory=list)   # linear ids whose SMEM differs from the model
    bad_bytes: int = 0
    model_is_expected: bool = True                 # the model equals "every CTA holds its tiles"

    @property
    def ok(self) -> bool:
        return self.ranks_ok and self.aligned and not self.bad_ctas and self.model_is_expected

    def line(self) -> str:
        c = self.config
        what = (f"cluster {c.cluster[0]}x{c.cluster[1]} peers {c.peers} {c.operands:2s} "
                f"grid {c.grid[0]}x{c.grid[1]} swizzle {c.swizzle:4s}")
        if self.ok:
            return f"{what}: {c.n_ctas} CTAs x {c.smem_bytes} B exact, ranks as modelled"
        return (f"{what}: MISMATCH ranks_ok={self.ranks_ok} aligned={self.aligned} "
                f"bad CTAs {self.bad_ctas[:8]} ({self.bad_bytes} bytes) model==expected {self.model_is_expected}")


def compare(run: MulticastRun) -> MulticastCheck:
    """Compare a GPU run with the model, CTA by CTA."""
    cfg = run.config
    base = int(run.smem_address[0]) if len(run.smem_address) else 0
    aligned = bool(np.all(run.smem_address % 1024 == 0))
    model = model_smem(cfg, run.operands, smem_address=base)
    expect = expected_smem(cfg, run.operands, smem_address=base)
    plans = plan(cfg)
    ranks_ok = all(int(run.ranks[i]) == p.rank for i, p in enumerate(plans)) and all(
        tuple(int(x) for x in run.cluster_ctaid[i]) == (p.block[0] % cfg.cluster[0], p.block[1] % cfg.cluster[1])
        for i, p in enumerate(plans))
    diff = run.smem != model
    bad = [int(i) for i in np.flatnonzero(diff.any(axis=1))]
    return MulticastCheck(cfg, ranks_ok, aligned, bad, int(diff.sum()), bool(np.array_equal(model, expect)))


def check_multicast(cfg: MulticastConfig, seed: int = 0) -> MulticastCheck:
    """Run on the GPU and compare every CTA's SMEM with the model."""
    return compare(run_multicast(cfg, seed=seed))


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


def l2_read_bytes(cfg: MulticastConfig) -> dict:
    """Bytes the TMA reads from L2 for one round of tiles, derived from the plan: with multicast
    every issued slice is read once; without it every CTA reads each of its tiles itself."""
    plans = plan(cfg)
    with_mc = sum(i.slice.nbytes for p in plans for i in p.issues)
    own = sum(p.expect_tx for p in plans)
    return {"multicast": with_mc, "own": own, "saved": own - with_mc, "ratio": own / with_mc}


# ---------------------------------------------------------------------------------------------
# Pictures (notebook 02)
# ---------------------------------------------------------------------------------------------
def _grid_of(layout: Layout):
    """Cluster layout -> (rows = CTAs along x/M, cols = CTAs along y/N), rank at each cell."""
    v, m, n = layout[0].size(), layout[1].size(), layout[2].size()
    rows, cols = v * m, n
    ranks = np.zeros((rows, cols), dtype=int)
    for r in range(layout.size()):
        c = cta_coord(layout, r)
        ranks[c[0] + v * c[1], c[2]] = r
    return ranks


def draw_cluster(ax, layout: Layout, title=None, highlight=None):
    """The cluster as a grid of CTAs: x (M) down, y (N) across; each cell shows rank and (v,m,n)."""
    from .plotting import add_legend, cta_color, draw_grid
    ranks = _grid_of(layout)
    colors = np.empty(ranks.shape, dtype=object)
    text = np.empty(ranks.shape, dtype=object)
    for (i, j), r in np.ndenumerate(ranks):
        colors[i, j] = cta_color(r)
        c = cta_coord(layout, r)
        text[i, j] = f"rank {r}\n({c[0]},{c[1]},{c[2]})"
    draw_grid(ax, colors, text, title=title or f"cluster {layout}: rank and (v,m,n)",
              xlabel="cluster y = N mode", ylabel="cluster x = (V, M) modes",
              xticks=list(range(ranks.shape[1])), yticks=list(range(ranks.shape[0])), fontsize=7)
    if highlight is not None:
        _outline(ax, ranks, highlight)
    add_legend(ax, [(f"CTA rank {r}", cta_color(r)) for r in range(layout.size())], title="colour = CTA",
               ncol=1 if layout.size() <= 8 else 2)
    return ax


def _outline(ax, ranks, rank):
    from matplotlib.patches import Rectangle
    (i,), (j,) = np.nonzero(ranks == rank)
    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=3))


def draw_mask(ax, layout: Layout, rank: int, kind: str, legend: bool = True):
    """One CTA's A, B or C mask on the cluster grid: CTAs in the mask coloured, the CTA outlined."""
    from .plotting import BYTE_COLORS, add_legend, draw_grid
    m = cta_masks(layout, rank)
    mask = {"A": m.a, "B": m.b, "C": m.c}[kind]
    ranks = _grid_of(layout)
    on = {"A": "#4c72b0", "B": "#dd8452", "C": "#55a868"}[kind]
    colors = np.where(np.vectorize(lambda r: bool(mask >> r & 1))(ranks), on, BYTE_COLORS["untouched"])
    text = np.vectorize(lambda r: str(r))(ranks).astype(object)
    draw_grid(ax, colors.astype(object), text, title=f"{kind} mask of rank {rank}: 0x{mask:04X}",
              fontsize=7)
    ax.set_xticks([])
    ax.set_yticks([])
    _outline(ax, ranks, rank)
    if legend:
        add_legend(ax, [(f"in the {kind} mask", on), ("not in it", BYTE_COLORS["untouched"])],
                   title="black box = the CTA")
    return ax


def draw_masks_of(layout: Layout, rank: int):
    """A, B and C masks of one CTA side by side, with the bits in the titles."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.4))
    for ax, kind in zip(axes, "ABC"):
        draw_mask(ax, layout, rank, kind, legend=(kind == "C"))
    m = cta_masks(layout, rank)
    fig.suptitle(f"cluster {layout}, CTA rank {rank} = (v,m,n,k) {format_tuple(m.coord)}: "
                 f"A <2> 0x{m.a:04X}, B <1> 0x{m.b:04X}, C <0,1>|<0,2> 0x{m.c:04X}")
    fig.tight_layout()
    return fig


def draw_every_mask(layout: Layout, kind: str):
    """Small multiples: the `kind` mask of every CTA, each panel placed where that CTA sits."""
    import matplotlib.pyplot as plt
    from .plotting import BYTE_COLORS
    ranks = _grid_of(layout)
    rows, cols = ranks.shape
    fig, axes = plt.subplots(rows, cols, figsize=(1.6 * cols + 1.8, 1.35 * rows + 0.9), squeeze=False)
    for (i, j), r in np.ndenumerate(ranks):
        draw_mask(axes[i, j], layout, int(r), kind, legend=False)
        axes[i, j].set_title(f"rank {r}: 0x{getattr(cta_masks(layout, int(r)), kind.lower()):04X}", fontsize=8)
    on = {"A": "#4c72b0", "B": "#dd8452", "C": "#55a868"}[kind]
    from matplotlib.patches import Patch
    fig.legend(handles=[Patch(facecolor=on, label=f"in the {kind} mask"),
                        Patch(facecolor=BYTE_COLORS["untouched"], label="not in it"),
                        Patch(facecolor="white", edgecolor="black", linewidth=2, label="the CTA itself")],
               loc="lower center", ncol=3, fontsize="small")
    fig.suptitle(f"{kind} mask of every CTA of {layout}")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def draw_landing(cfg: MulticastConfig, block=(0, 0)):
    """Where each slice lands in one CTA's tile area, coloured by the rank of the CTA that issued it."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    from .plotting import add_legend, cta_color
    gx = cfg.grid[0]
    p = plan(cfg)[block[0] + gx * block[1]]
    fig, ax = plt.subplots(figsize=(10, 1.9))
    for op, src, off, nbytes in p.receives:
        ax.add_patch(Rectangle((off, 0), nbytes, 1, facecolor=cta_color(src), edgecolor="black"))
        ax.text(off + nbytes / 2, 0.5, f"{op}{src}", ha="center", va="center", fontsize=8)
    ax.set_xlim(0, cfg.smem_bytes)
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    ax.set_xlabel("byte offset in the CTA's tile area")
    ax.set_title(f"CTA {block} (rank {p.rank}): what lands where; label = operand + issuing rank; "
                 f"mbarrier expects {p.expect_tx} B")
    senders = sorted({s for _, s, _, _ in p.receives})
    add_legend(ax, [(f"issued by rank {s}", cta_color(s)) for s in senders], title="colour = issuer")
    fig.tight_layout()
    return fig


def draw_smem_check(run: MulticastRun):
    """Per CTA, per 128-byte line: does the GPU's tile area equal the model's?"""
    import matplotlib.pyplot as plt
    from .plotting import BYTE_COLORS, add_legend, draw_grid
    cfg = run.config
    model = model_smem(cfg, run.operands, smem_address=int(run.smem_address[0]))
    lines = cfg.smem_bytes // 128
    ok = (run.smem == model).reshape(cfg.n_ctas, lines, 128).all(axis=2)
    colors = np.where(ok, BYTE_COLORS["loaded"], BYTE_COLORS["mismatch"]).astype(object)
    fig, ax = plt.subplots(figsize=(10, 0.35 * cfg.n_ctas + 1.2))
    draw_grid(ax, colors, title=f"GPU vs model, cluster {cfg.cluster[0]}x{cfg.cluster[1]} {cfg.operands}: "
                                f"{int(ok.sum())}/{ok.size} 128-byte lines equal",
              xlabel="128-byte line of the tile area", ylabel="CTA (linear id)",
              yticks=[f"{i} r{int(run.ranks[i])}" for i in range(cfg.n_ctas)])
    add_legend(ax, [("equal to the model", BYTE_COLORS["loaded"]), ("differs", BYTE_COLORS["mismatch"])])
    fig.tight_layout()
    return fig


def draw_savings(configs):
    """Bars: L2 bytes read per round of tiles, every CTA loading its own tiles vs multicast."""
    import matplotlib.pyplot as plt
    from .plotting import add_legend
    labels = [f"{c.cluster[0]}x{c.cluster[1]}" + (" 2SM" if c.peers == 2 else "") for c in configs]
    own = [l2_read_bytes(c)["own"] / 1024 for c in configs]
    mc = [l2_read_bytes(c)["multicast"] / 1024 for c in configs]
    x = np.arange(len(configs))
    fig, ax = plt.subplots(figsize=(9, 3.4))
    ax.bar(x - 0.2, own, 0.4, color="#c44e52")
    ax.bar(x + 0.2, mc, 0.4, color="#4c72b0")
    for xi, o, m in zip(x, own, mc):
        ax.text(xi + 0.2, m, f"{m / o:.3g}x", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x)
    ax.set_xticklabels(labels)
    ax.set_xlabel("cluster (M x N CTAs)")
    ax.set_ylabel("KiB read from L2 per cluster")
    ax.set_title("L2 reads for one A and one B tile per CTA (derived from the plan); label = multicast / own")
    add_legend(ax, [("every CTA loads its own tiles", "#c44e52"), ("multicast", "#4c72b0")])
    fig.tight_layout()
    return fig


def explain_cta(cluster_m: int, cluster_n: int, peers: int, rank: int, draw: bool = True) -> None:
    """For the notebook's widget: CuTe's steps for the A, B and C masks of one CTA, and a picture.
    Bad combinations print the ValueError's message (the rule and the limit)."""
    try:
        layout = cluster_layout_vmnk((cluster_m, cluster_n, 1), peers)
        coord = cta_coord(layout, rank)
    except ValueError as e:
        print(f"not a valid choice: {e}")
        return
    print(f"cluster layout {layout}; CTA rank {rank} has (v,m,n,k) = {format_tuple(coord)}\n")
    for title, modes in (("A mask: project N (mode 2)", (2,)), ("B mask: project M (mode 1)", (1,)),
                         ("C mask, part 1: project V and M (modes 0,1)", (0, 1)),
                         ("C mask, part 2: project V and N (modes 0,2)", (0, 2))):
        print(f"-- {title}\n{mask_steps(layout, coord, modes)}\n")
    print(f"C = part 1 | part 2 = {format_mask(cta_masks(layout, rank).c, layout.size())}")
    if draw:
        import matplotlib.pyplot as plt
        draw_masks_of(layout, rank)
        plt.show()


# ---------------------------------------------------------------------------------------------
# Hardware validation: python -m bwlab.validate multicast
# ---------------------------------------------------------------------------------------------
def validation_configs(quick: bool = False) -> list:
    """Every portable 2D cluster shape the issue asks for, A-style, B-style and both, one-SM and
    two-SM cluster layouts, two swizzles, and a grid of several clusters."""
    shapes = [(2, 2), (2, 4), (4, 2)] if quick else [(1, 2), (2, 1), (2, 2), (2, 4), (4, 2), (1, 8), (8, 1)]
    out = []
    for cl in shapes:
        for ops in ("A", "B", "AB"):
            out.append(MulticastConfig(cluster=cl, operands=ops))
        if cl[0] % 2 == 0:
            out.append(MulticastConfig(cluster=cl, peers=2, operands="AB"))
    if not quick:
        out.append(MulticastConfig(cluster=(2, 4), operands="AB", swizzle="none", grid_clusters=(2, 2)))
        out.append(MulticastConfig(cluster=(4, 2), operands="AB", swizzle="64B", tile_k=32, grid_clusters=(3, 1)))
        out.append(MulticastConfig(cluster=(2, 2), operands="AB", dtype="float32", tile_k=32,
                                   tile_m=64, tile_n=256, grid_clusters=(2, 3)))
    return out


def validate_main(argv=None) -> int:
    from . import device
    from .runtime import MbarrierTimeout
    ap = argparse.ArgumentParser(prog="python -m bwlab.validate multicast")
    ap.add_argument("--quick", action="store_true", help="only the 2x2, 2x4 and 4x2 clusters")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args(argv)
    say = Report()

    say(device.banner(print_it=False))
    if device.tier("multicast") != "hardware":
        say("multicast is not on hardware here: nothing to validate")
        return 1
    failures = 0
    for i, cfg in enumerate(validation_configs(args.quick)):
        res = check_multicast(cfg, seed=args.seed + i)
        failures += not res.ok
        say(res.line())
    # The bounded wait under a cluster: announce 16 bytes too many in every CTA.
    cfg = MulticastConfig(cluster=(2, 2))
    try:
        run_multicast(cfg, extra_tx=16)
        say("deliberately wrong expect_tx in a 2x2 cluster: NO EXCEPTION (failure)")
        failures += 1
    except MbarrierTimeout as e:
        say(f"deliberately wrong expect_tx (+16 B) in a 2x2 cluster: MbarrierTimeout: {e}")
    res = check_multicast(cfg, seed=args.seed)
    failures += not res.ok
    say(f"next launch in the same process: {res.line()}")
    say(f"multicast: {'PASS' if failures == 0 else f'{failures} FAILURE(S)'}")
    say.save(args.out)
    return 0 if failures == 0 else 1


# ---------------------------------------------------------------------------------------------
# Benchmark: python -m bwlab.bench multicast
# ---------------------------------------------------------------------------------------------
BENCH_MODES = {0: "own", 1: "multicast", 2: "sync-only", 3: "sync-serial"}
BENCH_BARRIERS = {0: "stage_full", 1: "stage_empty"}
BENCH_STAGES = 3  # default pipeline depth (MC_STAGES in cuda_src/tma_multicast.cu)


@dataclass(frozen=True)
class BenchConfig:
    """Every CTA receives `iters` tiles of `boxes_per_tile` boxes of `box_rows` x 128 B, through a
    pipeline of `stages` buffers. Cluster k reads tile (k + it) % tiles_in_source of a source
    small enough to stay in L2 (8 MB by default, L2 is 50 MB on an H100), so different clusters read
    different tiles and the CTAs of one cluster the same one."""

    cluster: int = 4
    ctas: int = 120
    iters: int = 2000
    box_rows: int = 64
    boxes_per_tile: int = 8
    tiles_in_source: int = 128
    row_bytes: int = 128
    stages: int = BENCH_STAGES

    def __post_init__(self):
        if not 2 <= self.stages <= 8:
            raise ValueError(f"the pipeline has 2..8 stages, got {self.stages}")
        if self.cluster not in (1, 2, 4, 8):
            raise ValueError(f"benchmark clusters are 1, 2, 4 or 8 CTAs (portable), got {self.cluster}")
        if self.ctas % self.cluster:
            raise ValueError(f"{self.ctas} CTAs are not a whole number of {self.cluster}-CTA clusters")
        if self.boxes_per_tile % self.cluster:
            raise ValueError(f"the {self.boxes_per_tile} boxes of a tile must split evenly among "
                             f"{self.cluster} CTAs")
        if not 1 <= self.box_rows <= 256:
            raise ValueError(f"box_rows is a TMA box dimension, 1..256, got {self.box_rows}")
        if self.smem_bytes > 227 * 1024:
            raise ValueError(f"{self.stages} stages of {self.tile_bytes} B (+1024 for alignment) do not "
                             f"fit in one CTA's {227 * 1024} B of SMEM")
        if self.tile_bytes >= 1 << 20:
            raise ValueError("one mbarrier phase counts at most 2^20 - 1 bytes")

    @property
    def box_bytes(self) -> int:
        return self.box_rows * self.row_bytes

    @property
    def tile_bytes(self) -> int:
        return self.box_bytes * self.boxes_per_tile

    @property
    def smem_bytes(self) -> int:
        return self.stages * self.tile_bytes + 1024

    @property
    def source_bytes(self) -> int:
        return self.tiles_in_source * self.tile_bytes

    def bytes_into_smem(self) -> int:
        """Bytes that land in SMEM over the whole launch (the same with or without multicast)."""
        return self.ctas * self.iters * self.tile_bytes

    def bytes_from_l2(self, mode: int) -> int:
        """Bytes read from L2 by TMA, DERIVED: without multicast every CTA reads the tile; with it,
        each box is read once per cluster and copied on the way to the SMs."""
        if mode not in (0, 1):
            return 0
        per_cluster = self.tile_bytes * (1 if mode == 1 else self.cluster)
        return (self.ctas // self.cluster) * self.iters * per_cluster

    def label(self) -> str:
        return f"{self.stages} x {self.tile_bytes // 1024} KiB"


def parse_depth(text: str, **kw) -> BenchConfig:
    """'4x48' -> a BenchConfig with 4 stages of tiles made of boxes of 48 rows (x 128 B)."""
    try:
        stages, rows = (int(t) for t in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"a pipeline depth is STAGESxBOX_ROWS, e.g. 4x48, got {text!r}") from None
    return BenchConfig(stages=stages, box_rows=rows, **kw)


def _max_active_clusters(fn, cfg: BenchConfig):
    """cuOccupancyMaxActiveClusters for this kernel, or None where the query is unavailable."""
    try:
        from cuda.bindings import driver as drv
        ptr = getattr(getattr(fn, "kernel", fn), "ptr", None)
        if ptr is None:
            return None
        conf = drv.CUlaunchConfig()
        conf.gridDimX, conf.gridDimY, conf.gridDimZ = cfg.ctas, 1, 1
        conf.blockDimX, conf.blockDimY, conf.blockDimZ = THREADS, 1, 1
        conf.sharedMemBytes = cfg.smem_bytes
        err, n = drv.cuOccupancyMaxActiveClusters(drv.CUfunction(ptr), conf)
        return int(n) if int(err) == 0 else None
    except Exception:
        return None


def run_bench(cfg: BenchConfig, modes=(0, 1, 2), warmup: int = 3, repeat: int = 15, single: bool = False):
    """Time each mode with CUDA events (median of `repeat` launches after `warmup`). Returns
    ({mode: (BenchResult, every CTA resident at once)}, max active clusters or None)."""
    import cupy as cp
    from . import device
    from .compile import load_module
    from .runtime import bench, launch, tensor_map_arg
    from .tma import TensorMap
    device.require("multicast")
    rows = cfg.tiles_in_source * cfg.boxes_per_tile * cfg.box_rows
    src = cp.asarray(np.random.default_rng(0).integers(0, 256, size=rows * cfg.row_bytes, dtype=np.uint8))
    tmap = TensorMap("uint8", (cfg.row_bytes, rows), (cfg.row_bytes, cfg.box_rows), swizzle="128B")
    targ = tensor_map_arg(tmap.encode(src.data.ptr))
    mod = load_module("tma_multicast", defines={"CLUSTER_X": cfg.cluster, "CLUSTER_Y": 1,
                                                "MC_STAGES": cfg.stages})
    clocks = cp.zeros(cfg.ctas * 2, dtype=cp.uint64)
    results = {}
    for mode in modes:
        args = (targ, np.uint32(mode), np.uint32(cfg.iters), np.uint32(cfg.boxes_per_tile),
                np.uint32(cfg.box_rows), np.uint32(cfg.box_bytes), np.uint32(cfg.tiles_in_source), clocks)

        def go(sync=False):
            launch(mod, "tma_multicast_bench", (cfg.ctas,), (THREADS,), args, shared_mem=cfg.smem_bytes,
                   barrier_names=BENCH_BARRIERS, cluster=(cfg.cluster, 1, 1), sync=sync)
        go(sync=True)  # checks the status record: no wait timed out
        if single:
            results[mode] = None
            continue
        r = bench(f"c={cfg.cluster} {BENCH_MODES[mode]}", go, warmup=warmup, repeat=repeat,
                  bytes_moved=cfg.bytes_into_smem())
        go(sync=True)
        c = cp.asnumpy(clocks).reshape(cfg.ctas, 2).astype(np.int64)
        resident = bool(c[:, 0].max() < c[:, 1].min())  # every CTA started before any finished
        results[mode] = (r, resident)
    occ = _max_active_clusters(mod.get_function("tma_multicast_bench"), cfg)
    return results, occ


def ncu_sectors(csv_text: str, metric: str = "lts__t_sectors_srcunit_tex_op_read.sum") -> list:
    """The values of one metric for every tma_multicast_bench launch in an `ncu --csv` report."""
    import csv
    rows = [r for r in csv.reader(l for l in csv_text.splitlines() if l.startswith('"'))]
    if not rows:
        return []
    head, out = rows[0], []
    try:
        k, m, v = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
    except ValueError:
        return []
    for r in rows[1:]:
        if len(r) > max(k, m, v) and r[k].startswith("tma_multicast_bench") and r[m] == metric:
            out.append(int(r[v].replace(",", "")))
    return out


def _bench_row(cfg: BenchConfig, mode: int, r, resident, occ, own_ms) -> str:
    ms = r.median_ms
    fill = cfg.bytes_into_smem() / (ms * 1e-3) / 1e9 if mode in (0, 1) else 0.0
    l2 = cfg.bytes_from_l2(mode) / (ms * 1e-3) / 1e9
    speed = f"{own_ms / ms:6.2f}x" if mode != 0 else ""
    return (f"{cfg.ctas:4d} {cfg.cluster:2d} {BENCH_MODES[mode]:>11s} {ms:10.4f} {r.min_ms:8.4f} "
            f"{ms * 1e6 / cfg.iters:9.0f} {fill:15.1f} {l2:22.1f} {speed:>7s} {str(resident):>8s} "
            f"{str(occ):>12s}")


BENCH_HEADER = (f"{'ctas':>4s} {'c':>2s} {'mode':>11s} {'median ms':>10s} {'min ms':>8s} {'ns/tile':>9s} "
                f"{'SMEM fill GB/s':>15s} {'L2->SM GB/s (derived)':>22s} {'vs own':>7s} {'resident':>8s} "
                f"{'max clusters':>12s}")


def bench_main(argv=None) -> int:
    import json
    from . import device
    ap = argparse.ArgumentParser(prog="python -m bwlab.bench multicast")
    ap.add_argument("--clusters", default="1,2,4,8", help="cluster sizes (CTAs) to measure")
    ap.add_argument("--ctas", default="32,120",
                    help="CTA counts (one CTA per SM: 193 KB of SMEM each); 120 = 15 clusters of 8, "
                         "what an H100 holds at once")
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--depths", default="4x48,6x32",
                    help="further pipeline depths STAGESxBOX_ROWS (8 boxes a tile) measured with own and "
                         "multicast at the largest CTA count, after the main table ('' for none)")
    ap.add_argument("--ncu-pass", metavar="PLAN_JSON",
                    help="launch own and multicast once each per configuration, untimed, for Nsight "
                         "Compute, and write the launch order to PLAN_JSON")
    ap.add_argument("--ncu-csv", nargs=2, metavar=("CSV", "PLAN_JSON"),
                    help="add the L2 sectors Nsight Compute measured in a --ncu-pass run to the report")
    ap.add_argument("--skip-timing", action="store_true",
                    help="only the Nsight Compute table of --ncu-csv (when the timings were taken by an "
                         "earlier run)")
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args(argv)
    if args.skip_timing and not args.ncu_csv:
        ap.error("--skip-timing only makes sense with --ncu-csv")
    clusters = [int(c) for c in args.clusters.split(",")]
    ctas_list = [int(c) for c in args.ctas.split(",")]
    depths = [parse_depth(d, ctas=max(ctas_list), iters=args.iters) for d in args.depths.split(",") if d]
    for ctas in ctas_list:  # every configuration is checked before the first launch
        for c in clusters:
            BenchConfig(cluster=c, ctas=ctas, iters=args.iters)
            for d in depths:
                BenchConfig(cluster=c, ctas=ctas, iters=args.iters, stages=d.stages, box_rows=d.box_rows)
    say = Report()

    say(device.banner(print_it=False))
    if device.tier("multicast") != "hardware":
        say("multicast is not on hardware here: nothing to measure")
        return 1
    if args.ncu_pass:
        launches = []
        for ctas in ctas_list:
            for c in clusters:
                cfg = BenchConfig(cluster=c, ctas=ctas, iters=args.iters)
                run_bench(cfg, modes=(0, 1), single=True)
                launches += [{"ctas": ctas, "cluster": c, "mode": m, "iters": args.iters,
                              "derived_l2_bytes": cfg.bytes_from_l2(m), "smem_bytes": cfg.bytes_into_smem()}
                             for m in (0, 1)]
        with open(args.ncu_pass, "w") as f:
            json.dump(launches, f)
        say(f"ncu pass: {len(launches)} launches written to {args.ncu_pass}")
        return 0
    base = BenchConfig(iters=args.iters)
    if args.skip_timing:
        clusters, depths = [], []
    else:
        say(f"every CTA receives {args.iters} tiles of {base.tile_bytes} B ({base.boxes_per_tile} TMA boxes of "
            f"{base.box_rows} x {base.row_bytes} B, 128B swizzle) through a {base.stages}-stage "
            f"full/empty mbarrier pipeline; cluster k reads tile (k + it) % {base.tiles_in_source} of a "
            f"{base.source_bytes // 2**20} MB source (L2-resident)")
        say("modes: own = every CTA loads the whole tile itself; multicast = each CTA issues 1/c of the boxes "
            "with the whole cluster in the mask; sync-only = the multicast handshake with no data (lane k of "
            "the consumer warp releases CTA k, plain remote arrive, cta-scope waits); sync-serial = the first "
            "version's handshake with no data (one thread, c arrive.release.cluster in a row, cluster-scope "
            "waits)")
        say("ns/tile = median time / tiles per CTA; SMEM fill = bytes landing in SMEM / time (measured time); "
            "L2->SM GB/s is DERIVED from the bytes the design reads (own: c tiles per cluster, multicast: 1), "
            "not measured; 'vs own' = own's median / this row's median")
        say("CUDA events, median of %d launches after 3 warm-up launches; 'resident' = every CTA started "
            "before any finished; 'max clusters' = cuOccupancyMaxActiveClusters" % args.repeat)
        say(BENCH_HEADER)
    from .runtime import MbarrierTimeout
    failures = 0
    for ctas in ctas_list:
        for c in clusters:
            cfg = BenchConfig(cluster=c, ctas=ctas, iters=args.iters)
            try:
                res, occ = run_bench(cfg, modes=(0, 1, 2, 3), repeat=args.repeat)
            except MbarrierTimeout as e:
                failures += 1
                say(f"{ctas:4d} {c:2d} FAILED: {e}")
                continue
            own_ms = res[0][0].median_ms
            for mode, (r, resident) in res.items():
                say(_bench_row(cfg, mode, r, resident, occ, own_ms))
    if depths:
        say("")
        say(f"pipeline depth: the same measurement (own and multicast) with other stage counts and tile sizes "
            f"at {max(ctas_list)} CTAs; SMEM per CTA = stages x tile + 1024 B")
        say(f"{'depth':>14s} " + BENCH_HEADER)
        for d in [BenchConfig(stages=base.stages, box_rows=base.box_rows)] + depths:
            for c in clusters:
                cfg = BenchConfig(cluster=c, ctas=max(ctas_list), iters=args.iters, stages=d.stages,
                                  box_rows=d.box_rows)
                try:
                    res, occ = run_bench(cfg, modes=(0, 1), repeat=args.repeat)
                except MbarrierTimeout as e:
                    failures += 1
                    say(f"{cfg.label():>14s} {cfg.ctas:4d} {c:2d} FAILED: {e}")
                    continue
                own_ms = res[0][0].median_ms
                for mode, (r, resident) in res.items():
                    say(f"{cfg.label():>14s} " + _bench_row(cfg, mode, r, resident, occ, own_ms))
    if args.ncu_csv:
        csv_path, plan_path = args.ncu_csv
        with open(plan_path) as f:
            launches = json.load(f)
        with open(csv_path) as f:
            text = f.read()
        tex = ncu_sectors(text)
        allr = ncu_sectors(text, "lts__t_sectors_op_read.sum")
        say("")
        say("Nsight Compute (MEASURED, one untimed launch each): L2 read sectors (32 B) of the benchmark kernel")
        if len(tex) != len(launches):
            say(f"  ncu reported {len(tex)} launches for {len(launches)} planned: not matched, raw values {tex}")
        else:
            say(f"{'ctas':>4s} {'c':>2s} {'mode':>10s} {'iters':>5s} {'derived L2 bytes':>17s} "
                f"{'lts srcunit_tex read B':>23s} {'lts all read B':>15s} {'measured/derived':>16s}")
            for i, (l, t) in enumerate(zip(launches, tex)):
                a = allr[i] * 32 if i < len(allr) else -1
                say(f"{l['ctas']:4d} {l['cluster']:2d} {BENCH_MODES[l['mode']]:>10s} {l['iters']:5d} "
                    f"{l['derived_l2_bytes']:17d} {t * 32:23d} {a:15d} {t * 32 / l['derived_l2_bytes']:16.3f}")
    say.save(args.out)
    return 0 if failures == 0 else 1
