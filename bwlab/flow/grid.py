"""The flow tiled over a grid (the size CuTe's Blackwell tutorials use: 512 x 1024 x 256), in the model
tier, three ways:

* '1sm'       — one CTA per 128 x 128 tile of D, each loading its own A and B tiles (K loop of 4 tiles of 64);
* 'multicast' — CTAs grouped in clusters (cluster_m x cluster_n); the CTAs of a cluster row share A, those
  of a column share B: each issues one slice with a multicast mask (bwlab.multicast's
  `create_tma_multicast_mask`, `tma_partition`) and every receiver gets the whole tile;
* '2sm'       — CTA pairs along M run `tcgen05.mma.cta_group::2` (M = 256): each CTA stages its half of A
  (128 rows) and half of B (64 rows), and holds its 128 rows of D in its own TMEM (PTX ISA layout A).

PTX ISA: cp.async.bulk.tensor (.multicast::cluster), tcgen05.mma (.cta_group::2), "Data path layout
organization"; CuTe examples/cute/tutorial/blackwell/03_mma_tma_multicast_sm100.cu, 04_mma_tma_2sm_sm100.cu.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hw.dtypes import from_float
from ..multicast.cluster import cluster_layout_vmnk, create_tma_multicast_mask, cta_coord
from ..multicast.partition import tma_partition
from ..tma.model import tma_load_model
from ..tma.tensor_map import TensorMap
from ..umma.descriptors import smem_desc_for_tile
from ..umma.idesc import make_instr_desc
from ..umma.model import CtaState, d_tmem_layout, tcgen05_mma

__all__ = ["FlowGrid", "VARIANTS", "CtaLoads"]

VARIANTS = ("1sm", "multicast", "2sm")
TILE_K = 64


@dataclass(frozen=True)
class CtaLoads:
    """What one CTA issues and receives for one K tile."""
    cta: tuple                 # (bx, by): bx along M, by along N
    rank: int                  # %cluster_ctarank (0 without clusters)
    a_rows: tuple              # rows of A its SMEM holds (first, last + 1)
    b_rows: tuple              # rows of B (= columns of D)
    a_issue: tuple             # (first row, rows) of the A slice it issues
    b_issue: tuple
    a_mask: int                # multicast masks of its A and B issues (1 << rank without multicast)
    b_mask: int
    d_rows: tuple              # D rows its TMEM holds
    d_cols: tuple


@dataclass(frozen=True)
class FlowGrid:
    M: int = 512
    N: int = 1024
    K: int = 256
    variant: str = "1sm"
    cluster: tuple = (2, 2)    # (CTAs along M, along N) for 'multicast'; '2sm' pairs along M
    seed: int = 0

    def __post_init__(self):
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if self.M % 256 or self.N % 128 or self.K % TILE_K:
            raise ValueError("M must be a multiple of 256, N of 128, K of 64")
        if self.variant == "multicast" and (self.grid[0] % self.cluster[0] or self.grid[1] % self.cluster[1]):
            raise ValueError(f"the grid {self.grid} must be a whole number of clusters {self.cluster}")

    @property
    def grid(self) -> tuple:
        """CTAs along M and along N (one 128 x 128 tile of D each; a pair per 256 x 128 for '2sm')."""
        return (self.M // 128, self.N // 128)

    @property
    def cluster_shape(self) -> tuple:
        return {"1sm": (1, 1), "multicast": tuple(self.cluster), "2sm": (2, 1)}[self.variant]

    def values(self):
        rng = np.random.default_rng(self.seed)
        a = rng.integers(-8, 9, (self.M, self.K)) / 4
        b = rng.integers(-8, 9, (self.N, self.K)) / 8
        return a, b

    def reference(self) -> np.ndarray:
        a, b = self.values()
        return (a @ b.T).astype(np.float32)

    def layout(self):
        cm, cn = self.cluster_shape
        return cluster_layout_vmnk((cm, cn, 1), peers=2 if self.variant == "2sm" else 1)

    def rank_of(self, bx: int, by: int) -> int:
        cm, cn = self.cluster_shape
        return (bx % cm) + cm * (by % cn)

    # ---- who loads what ------------------------------------------------------------------------
    def loads(self, bx: int, by: int) -> CtaLoads:
        cm, cn = self.cluster_shape
        rank = self.rank_of(bx, by)
        if self.variant == "2sm":
            pair0 = bx - bx % 2
            v = bx % 2
            a_rows = (128 * bx, 128 * bx + 128)
            b_rows = (128 * by + 64 * v, 128 * by + 64 * v + 64)
            return CtaLoads((bx, by), rank, a_rows, b_rows, (a_rows[0], 128), (b_rows[0], 64), 1 << rank,
                            1 << rank, (128 * (pair0 + v), 128 * (pair0 + v) + 128), (128 * by, 128 * by + 128))
        a_rows, b_rows = (128 * bx, 128 * bx + 128), (128 * by, 128 * by + 128)
        if self.variant == "1sm":
            return CtaLoads((bx, by), 0, a_rows, b_rows, (a_rows[0], 128), (b_rows[0], 128), 1, 1, a_rows, b_rows)
        lay = self.layout()
        coord = cta_coord(lay, rank)
        a_mask = create_tma_multicast_mask(lay, coord, (2,))     # every N of this M shares A
        b_mask = create_tma_multicast_mask(lay, coord, (1,))     # every M of this N shares B
        a_slice = tma_partition((TILE_K, 128), cn, coord[2], 2)  # split among the cn CTAs that share A
        b_slice = tma_partition((TILE_K, 128), cm, coord[1], 2)
        return CtaLoads((bx, by), rank, a_rows, b_rows, (a_rows[0] + a_slice.origin[1], a_slice.box[1]),
                        (b_rows[0] + b_slice.origin[1], b_slice.box[1]), a_mask, b_mask, a_rows, b_rows)

    def all_loads(self) -> list:
        return [self.loads(bx, by) for by in range(self.grid[1]) for bx in range(self.grid[0])]

    def l2_reads_per_k_tile(self) -> int:
        """Bytes the TMA engines read from L2 per K tile for the whole grid."""
        return sum((ld.a_issue[1] + ld.b_issue[1]) * TILE_K * 2 for ld in self.all_loads())

    # ---- the model -------------------------------------------------------------------------------
    def _tile_image(self, op: np.ndarray, rows: tuple, issues, k0: int) -> np.ndarray:
        """SMEM image (rows x 64 f16, 128B swizzle at address 0) of one operand tile for K tile k0,
        assembled from the TMA boxes `issues` = [(first row, rows)] that land in it."""
        g = np.ascontiguousarray(from_float(op, "f16"))
        n = rows[1] - rows[0]
        img = np.zeros(n * 128, np.uint8)
        for r0, cnt in issues:
            tmap = TensorMap("float16", (op.shape[1], op.shape[0]), (TILE_K, cnt), swizzle="128B")
            off = (r0 - rows[0]) * 128
            img[off:off + cnt * 128] = tma_load_model(g, tmap, (k0, r0), off)
        return img

    def _received(self, ld: CtaLoads, op: str):
        """The slices that land in CTA `ld` for operand `op` (its own and its cluster peers')."""
        if self.variant != "multicast":
            return [ld.a_issue if op == "a" else ld.b_issue]
        out = []
        bx, by = ld.cta
        cm, cn = self.cluster_shape
        for peer in self.all_loads():
            px, py = peer.cta
            if px // cm != bx // cm or py // cn != by // cn:
                continue
            mask, issue = (peer.a_mask, peer.a_issue) if op == "a" else (peer.b_mask, peer.b_issue)
            if mask >> ld.rank & 1:
                out.append(issue)
        return out

    def smem_of(self, bx: int, by: int, k_tile: int = 0):
        """(A image, B image) in CTA (bx, by)'s SMEM for K tile `k_tile`."""
        a, b = self.values()
        ld = self.loads(bx, by)
        k0 = TILE_K * k_tile
        return (self._tile_image(a, ld.a_rows, self._received(ld, "a"), k0),
                self._tile_image(b, ld.b_rows, self._received(ld, "b"), k0))

    def model(self):
        """D (M x N f32) gathered from every CTA's TMEM, and {(bx, by): TMEM image of D's columns}."""
        d = np.zeros((self.M, self.N), np.float32)
        tmem = {}
        if self.variant == "2sm":
            idesc = make_instr_desc("f16", "f16", "f32", 256, 128, cta_group=2)
            assert d_tmem_layout(256, 128, 2).name == "A"
            for bx in range(0, self.grid[0], 2):
                for by in range(self.grid[1]):
                    pair = [CtaState(), CtaState()]
                    for kt in range(self.K // TILE_K):
                        for v in range(2):
                            sa, sb = self.smem_of(bx + v, by, kt)
                            pair[v].smem[:sa.size] = sa
                            pair[v].smem[16384:16384 + sb.size] = sb
                        for kb in range(TILE_K // 16):
                            tcgen05_mma(pair, 0, smem_desc_for_tile("K", "128B", "f16", (128, 64), kb, 0),
                                        smem_desc_for_tile("K", "128B", "f16", (64, 64), kb, 16384), idesc,
                                        kt > 0 or kb > 0, cta_group=2)
                    for v in range(2):  # layout A: D row m of the pair sits in CTA m // 128, lane m % 128
                        words = pair[v].tmem[:, :128].copy()
                        tmem[(bx + v, by)] = words
                        d[128 * (bx + v):128 * (bx + v) + 128, 128 * by:128 * by + 128] = words.view(np.float32)
            return d, tmem
        idesc = make_instr_desc("f16", "f16", "f32", 128, 128)
        for by in range(self.grid[1]):
            for bx in range(self.grid[0]):
                cta = CtaState()
                for kt in range(self.K // TILE_K):
                    sa, sb = self.smem_of(bx, by, kt)
                    cta.smem[:sa.size] = sa
                    cta.smem[16384:16384 + sb.size] = sb
                    for kb in range(TILE_K // 16):
                        tcgen05_mma(cta, 0, smem_desc_for_tile("K", "128B", "f16", (128, 64), kb, 0),
                                    smem_desc_for_tile("K", "128B", "f16", (128, 64), kb, 16384), idesc,
                                    kt > 0 or kb > 0)
                words = cta.tmem[:, :128].copy()
                tmem[(bx, by)] = words
                d[128 * bx:128 * bx + 128, 128 * by:128 * by + 128] = words.view(np.float32)
        return d, tmem

    def describe(self, bx: int, by: int) -> str:
        ld = self.loads(bx, by)
        cm, cn = self.cluster_shape
        return (f"CTA ({bx}, {by}) rank {ld.rank} of cluster ({bx // cm}, {by // cn}): issues A rows "
                f"{ld.a_issue[0]}..{sum(ld.a_issue) - 1} (mask 0x{ld.a_mask:04x}) and B rows {ld.b_issue[0]}.."
                f"{sum(ld.b_issue) - 1} (mask 0x{ld.b_mask:04x}); SMEM holds A rows {ld.a_rows[0]}..{ld.a_rows[1] - 1}"
                f", B rows {ld.b_rows[0]}..{ld.b_rows[1] - 1} (64 K columns per K tile); TMEM holds D rows "
                f"{ld.d_rows[0]}..{ld.d_rows[1] - 1} x columns {ld.d_cols[0]}..{ld.d_cols[1] - 1}")
