"""`MulticastConfig`: one multicast experiment (a grid of clusters loading A and/or B tiles), its
parameters checked against the rules when it is built, and the sizes derived from them."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..hw.dtypes import element_type
from ..hw.mbarrier import MAX_TX_BYTES
from ..hw.swizzle import require_mode
from ..layout import Layout
from ..util import round_up
from .cluster import cluster_layout_vmnk
from .partition import TmaSlice, tma_partition

__all__ = ["MulticastConfig", "SMEM_PER_CTA", "TILE_AREA_ALIGN"]

SMEM_PER_CTA = 227 * 1024  # the most dynamic SMEM one CTA may have on sm_90 / sm_100
TILE_AREA_ALIGN = 1024     # the kernel puts the tile area on this boundary (align_1024 in the .cu)


@dataclass(frozen=True)
class MulticastConfig:
    """One experiment: a grid of clusters in which every CTA needs an A tile and/or a B tile.

    cluster        (M, N): CTAs of a cluster along x (M, peers included) and y (N)
    peers          1 (one-SM MMA) or 2 (two-SM MMA: CTAs 2i, 2i+1 along M share one MMA)
    operands       'A', 'B' or 'AB': which tiles are loaded (A multicast along N, B along M)
    tile_m, tile_n rows of the A and B tile each CTA holds
    tile_k         elements per row (the contiguous dimension; K-major operands)
    dtype          element type (a tensor-map type of bwlab.hw.dtypes: 'float16', 'bfloat16', ...)
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
        from ..tma.rules import MAX_BOX
        from ..tma.tensor_map import SMEM_ALIGNMENT
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
        t = element_type(self.dtype)
        if t.tmap_enum is None or t.bits % 8:
            raise ValueError(f"dtype {self.dtype!r} has no tensor-map type; a multicast tile needs one")
        # One spelling from here on: the name the tensor map has always taken ('float16', 'tf32').
        object.__setattr__(self, "dtype", t.numpy_name or t.name)
        require_mode(self.swizzle)
        for name in ("tile_m", "tile_n", "tile_k"):
            v = getattr(self, name)
            if not 1 <= v <= MAX_BOX:
                raise ValueError(f"{name} = {v}: each tile dimension is one TMA box dimension, 1..{MAX_BOX}")
        for op in self.operands:
            s = self.slice_of(op, 0)
            # Slice i lands at the operand's base + i x slice bytes. A TMA destination needs 128-byte
            # alignment only: the swizzle is a function of the SMEM address, so a slice that starts
            # in the middle of the pattern's span is swizzled as its address says, exactly as the
            # same rows of the whole tile would be.
            if s.nbytes % SMEM_ALIGNMENT:
                raise ValueError(f"operand {op}: each CTA's slice is {s.nbytes} bytes, so slice 1 would land "
                                 f"at byte {s.nbytes} of the tile; a TMA destination must be "
                                 f"{SMEM_ALIGNMENT}-byte aligned, so slices must be multiples of "
                                 f"{SMEM_ALIGNMENT} bytes")
            self.tensor_map(op)  # the slice box must satisfy cuTensorMapEncodeTiled's rules
        if self.expect_tx_bytes > MAX_TX_BYTES:
            raise ValueError(f"one mbarrier phase counts at most {MAX_TX_BYTES} bytes; this CTA expects "
                             f"{self.expect_tx_bytes}")
        if self.smem_bytes + TILE_AREA_ALIGN > SMEM_PER_CTA:
            raise ValueError(f"the tiles need {self.smem_bytes} bytes (+{TILE_AREA_ALIGN} for alignment) of "
                             f"SMEM; a CTA may have at most {SMEM_PER_CTA}")

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
        return element_type(self.dtype).bytes

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
        """Offset of the operand's tile inside the CTA's tile area (A first, B after it). Each tile
        starts on a 1024-byte boundary, as CUTLASS's shared storage places swizzled operand tiles for
        the MMA's SMEM descriptors; the TMA alone would need 128 bytes (the slices inside a tile
        need no more)."""
        if op == "A" or "A" not in self.operands:
            return 0
        return round_up(self.tile_bytes("A"), 1024)

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
        from ..tma.tensor_map import TensorMap
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
                 f"grid {self.grid[0]}x{self.grid[1]} CTAs: {self.grid_clusters[0]}x{self.grid_clusters[1]} "
                 f"cluster{'s' if self.grid_clusters != (1, 1) else ''} of {self.cluster[0]}x{self.cluster[1]} CTAs"]
        for op in self.operands:
            s = self.slice_of(op, 0)
            parts.append(f"{op}: tile {self.tile_box(op)} ({self.tile_bytes(op)} B) split among "
                         f"{self.num_multicast(op)} CTAs -> box {s.box} = {s.nbytes} B per CTA")
        parts.append(f"every CTA's mbarrier expects {self.expect_tx_bytes} B")
        return "\n".join(parts)
