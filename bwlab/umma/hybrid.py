"""Two compositions for notebook 03: operands that TMA loaded, multiplied by the model (the hybrid tier
on a Hopper), and a CTA pair running `cta_group::2` in the model."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hw.dtypes import element_type, from_float
from ..hw.mbarrier import Mbarrier
from ..util import round_up
from .canonical import canonical_layout
from .descriptors import smem_desc_for_tile
from .idesc import require_mma_shape, make_instr_desc
from .model import CtaState, d_from_words, d_tmem_layout, tcgen05_commit, tcgen05_mma

__all__ = ["TmaFedMma", "tma_fed_mma", "cta_pair_mma"]


@dataclass
class TmaFedMma:
    """Result of `tma_fed_mma`: where the bytes came from, the D the model computed from them, and
    NumPy's D from the same values."""

    source: str
    d_model: np.ndarray
    d_numpy: np.ndarray
    a_bytes: np.ndarray
    b_bytes: np.ndarray
    descriptors: list

    @property
    def exact(self) -> bool:
        return bool(np.array_equal(self.d_model, self.d_numpy))


def tma_fed_mma(M: int = 128, N: int = 256, K: int = 64, dtype: str = "f16", seed: int = 0,
                use_gpu: bool | None = None) -> TmaFedMma:
    """Load A (M x K) and B (N x K), both row-major in global memory with K contiguous, by TMA with the
    128-byte swizzle — for real when the GPU has TMA (`use_gpu` None: when tier('tma') is
    'hardware'), else through bwlab.tma's model — then run the K loop of tcgen05.mma in the model on
    those SMEM bytes. The box {64, rows} of 64 f16 = 128 bytes per row lands exactly in the K-major
    SW128 canonical layout, so the descriptors are `smem_desc_for_tile('K', '128B', ...)`."""
    from .. import device, tma
    if K != 64 or dtype not in ("f16", "bf16"):
        raise ValueError("this demonstration loads one 128-byte-wide box per operand: K = 64 of f16/bf16")
    require_mma_shape("f16", M, N)
    if use_gpu is None:
        use_gpu = device.tier("tma") == "hardware"
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 9, (M, K)) / 4
    b = rng.integers(-8, 9, (N, K)) / 4
    loads = []
    for vals in (a, b):
        gmem = from_float(vals, dtype)                          # (rows, K) row-major: K contiguous
        tmap = tma.TensorMap(element_type(dtype).numpy_name, (K, vals.shape[0]), (K, vals.shape[0]),
                             swizzle="128B")
        load = tma.run_tma_load if use_gpu else tma.tma_load_model
        loads.append(load(gmem, tmap, (0, 0)))
    cta = CtaState()
    a_base, b_base = 0, round_up(loads[0].size, 1024)
    cta.smem[a_base:a_base + loads[0].size] = loads[0]
    cta.smem[b_base:b_base + loads[1].size] = loads[1]
    idesc = make_instr_desc(dtype, dtype, "f32", M, N)
    descs = []
    for kb in range(K // 16):
        ad = smem_desc_for_tile("K", "128B", dtype, (M, K), kb, a_base)
        bd = smem_desc_for_tile("K", "128B", dtype, (N, K), kb, b_base)
        descs.append((ad, bd))
        tcgen05_mma(cta, 0, ad, bd, idesc, kb > 0)
    bar = Mbarrier(1)
    tcgen05_commit(cta, bar)
    lay = d_tmem_layout(M, N)
    d = d_from_words(cta.tmem[lay.lane, lay.column], "f32")
    source = "TMA on the GPU" if use_gpu else "bwlab.tma model"
    return TmaFedMma(source, d, a @ b.T, loads[0], loads[1], descs)


def cta_pair_mma(M: int = 256, N: int = 64, K: int = 64, seed: int = 0):
    """cta_group::2 in the model: each CTA of the pair stages its half of A (rows) and its half of B
    (columns of D) at the same SMEM addresses; one instruction stream computes the whole M x N.
    Returns (D gathered from both CTAs' TMEM, NumPy A @ B^T)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 9, (M, K)) / 4
    b = rng.integers(-8, 9, (N, K)) / 4
    pair = [CtaState(), CtaState()]
    b_base = round_up(M // 2 * K * 2, 1024)
    for v, cta in enumerate(pair):
        canonical_layout("K", "128B", "f16", (M // 2, K), 0).store(
            cta.smem, from_float(a[v * M // 2:(v + 1) * M // 2], "f16"))
        canonical_layout("K", "128B", "f16", (N // 2, K), b_base).store(
            cta.smem, from_float(b[v * N // 2:(v + 1) * N // 2], "f16"))
    idesc = make_instr_desc("f16", "f16", "f32", M, N, cta_group=2)
    for kb in range(K // 16):
        tcgen05_mma(pair, 0, smem_desc_for_tile("K", "128B", "f16", (M // 2, K), kb, 0),
                    smem_desc_for_tile("K", "128B", "f16", (N // 2, K), kb, b_base), idesc, kb > 0,
                    cta_group=2)
    bars = [Mbarrier(1), Mbarrier(1)]
    tcgen05_commit(pair[0], *bars)          # the multicast commit signals both CTAs
    lay = d_tmem_layout(M, N, 2)
    d = np.zeros((M, N))
    for v, cta in enumerate(pair):
        sel = lay.cta == v
        d[sel] = d_from_words(cta.tmem[lay.lane[sel], lay.column[sel]], "f32")
    return d, a @ b.T
