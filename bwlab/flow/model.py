"""The trip in the model tier, hop by hop, each hop computed by its stage's model from the bytes the
previous hop left (no GPU):

    GMEM --bwlab.tma.tma_load_model--> SMEM --bwlab.umma.tcgen05_mma (x4), tcgen05_commit--> TMEM
    --bwlab.tmem.tcgen05_ld (32x32b.x32, 4 per warp)--> registers --st.shared.v4 as
    bwlab.epilogue.RegisterStorePlan places it--> SMEM D tile --bwlab.epilogue.tma_store_model--> GMEM

The hybrid tier (Hopper) reuses the middle functions (`mma_from_smem`, `registers_from_tmem`) on the
bytes the GPU loaded. PTX ISA: cp.async.bulk.tensor, tcgen05.mma / commit / ld, st, membar/fence
(proxy), cp.async.bulk.tensor (store); CuTe: examples/cute/tutorial/blackwell/01_mma_sm100.cu.
"""
from __future__ import annotations

import numpy as np

from ..epilogue.store import tma_store_model
from ..epilogue.tile import RegisterStorePlan
from ..hw.mbarrier import Mbarrier
from ..hw.tmem import encode_address, new_image
from ..tma.model import tma_load_model
from ..tmem.model import tcgen05_ld
from ..umma.model import CtaState, tcgen05_commit, tcgen05_mma
from .problem import LD_ACCESS, SMEM_A, SMEM_B, SMEM_D, FlowProblem
from .trace import Trace

__all__ = ["load_model", "mma_from_smem", "registers_from_tmem", "st_shared_model", "store_from_smem",
           "flow_model", "mma_k_steps"]


def load_model(p: FlowProblem):
    """SMEM after the two TMA loads: (A image, B image), 16 KiB each, swizzled by address."""
    a16, b16 = p.gmem_inputs()
    bar = Mbarrier(1)
    bar.arrive_expect_tx(p.expect_tx)
    smem_a = tma_load_model(a16, p.tmap_a, (0, 0), SMEM_A)
    bar.complete_tx(smem_a.size)
    smem_b = tma_load_model(b16, p.tmap_b, (0, 0), SMEM_B)
    bar.complete_tx(smem_b.size)
    assert bar.try_wait_parity(0), "the load barrier's phase 0 completes when both boxes have landed"
    return smem_a, smem_b


def _cta_with(p: FlowProblem, smem_a, smem_b) -> CtaState:
    cta = CtaState()
    cta.smem[SMEM_A:SMEM_A + smem_a.size] = smem_a
    cta.smem[SMEM_B:SMEM_B + smem_b.size] = smem_b
    return cta


def mma_from_smem(p: FlowProblem, smem_a, smem_b, descriptors=None):
    """TMEM (128 lanes x 128 columns, raw f32 words) after the K loop of tcgen05.mma read through the
    SMEM descriptors (`descriptors`: [(a_desc, b_desc)] per K block, default `p.descriptors()`), and
    the phases the commit's mbarrier completed (1)."""
    cta = _cta_with(p, smem_a, smem_b)
    for kb, (ad, bd) in enumerate(p.descriptors() if descriptors is None else descriptors):
        tcgen05_mma(cta, 0, ad, bd, p.idesc, accumulate=kb > 0)
    mma_done = Mbarrier(1)
    tcgen05_commit(cta, mma_done)
    return cta.tmem[:, :p.tmem_columns].copy(), np.array([mma_done.completed], np.uint32)


def mma_k_steps(p: FlowProblem, smem_a, smem_b) -> np.ndarray:
    """TMEM after each tcgen05.mma of the K loop: (k_blocks, 128, 128) raw words (for the pictures)."""
    cta = _cta_with(p, smem_a, smem_b)
    out = []
    for kb, (ad, bd) in enumerate(p.descriptors()):
        tcgen05_mma(cta, 0, ad, bd, p.idesc, accumulate=kb > 0)
        out.append(cta.tmem[:, :p.tmem_columns].copy())
    return np.stack(out)


def registers_from_tmem(p: FlowProblem, tmem: np.ndarray) -> np.ndarray:
    """Every thread's registers after its warp's four tcgen05.ld.32x32b.x32 (columns 0, 32, 64, 96 of
    its lane quarter): uint32 (128 threads, 128 registers); register 32c + j comes from load c."""
    image = new_image()
    image[:, :tmem.shape[1]] = tmem
    regs = np.zeros((128, p.N), np.uint32)
    for w in range(4):
        for c in range(0, p.N, LD_ACCESS.width):
            regs[32 * w:32 * w + 32, c:c + LD_ACCESS.width] = tcgen05_ld(
                image, encode_address(32 * w, c), LD_ACCESS, warp=w)
    return regs


def st_shared_model(p: FlowProblem, regs: np.ndarray) -> np.ndarray:
    """The D tile's SMEM bytes (64 KiB from SMEM_D) after every thread's st.shared.v4: at step k
    thread 32w + l writes its registers 4k..4k+3 where `RegisterStorePlan` (row per thread, 128B
    swizzle) puts them."""
    regs = np.asarray(regs, np.uint32)
    tile = p.d_tile
    out = np.zeros(tile.nbytes, np.uint8)
    for w in range(4):
        plan = RegisterStorePlan(tile, "row_per_thread", w)
        for k in range(plan.steps):
            rows, cols, addr = plan.rows[k], plan.cols[k], plan.addresses[k] - SMEM_D
            words = regs[rows[:, None], cols[:, None] + np.arange(4)]         # (32 lanes, 4 words)
            out[addr[:, None] + np.arange(16)] = words.view(np.uint8).reshape(32, 16)
    return out


def store_from_smem(p: FlowProblem, smem_d: np.ndarray) -> np.ndarray:
    """The D buffer in GMEM (M + 1 rows: a guard row below D, float32) after the four TMA stores."""
    ep = p.epilogue
    g = np.zeros(ep.buffer_shape, np.float32)
    for coords, addr in p.store_boxes():
        g = tma_store_model(g, p.tmap_d, coords, smem_d, addr, window_start=SMEM_D)
    return g


def flow_model(p: FlowProblem, descriptors=None) -> Trace:
    """The whole trip in the model tier (`descriptors`: the K loop's, default `p.descriptors()`)."""
    a16, b16 = p.gmem_inputs()
    smem_a, smem_b = load_model(p)
    tmem, done = mma_from_smem(p, smem_a, smem_b, descriptors)
    regs = registers_from_tmem(p, tmem)
    smem_d = st_shared_model(p, regs)
    gmem_d = store_from_smem(p, smem_d)
    arrays = dict(a_gmem=a16.view(np.uint16), b_gmem=b16.view(np.uint16), smem_a=smem_a, smem_b=smem_b,
                  tmem=tmem, mma_done=done, regs=regs, smem_d=smem_d, gmem_d=gmem_d)
    return Trace("model", p, arrays, {h: "model" for h in
                                      ("gmem", "tma_load", "mma", "commit", "tmem_ld", "st_shared",
                                       "fence", "tma_store")})
