"""Predicting a Hopper ladder rung's time at a full GEMM shape from a few emulated tiles.

    from bwlab.timing import gemm
    p = gemm.predict("s6", 8192, 8192, 8192, "h100_sxm", clock_mhz=1350)
    print(p)            # cycles, ms, TFLOP/s, and how they were put together

A full 8192^3 GEMM is 2,048 tiles of 128 K-slices each: too much to run instruction by instruction. What
one SM does is periodic, so the prediction runs a few small problems in the emulator, replays them on
the machine description (`bwlab.timing.model`) with the bandwidth shares and L2 miss rate of the full
problem, and extrapolates (docs/timing.md):

* non-persistent steps (s1-s3): the CTAs that fit on one SM at once (`occupancy.ctas_per_sm`; fewer when
  the launch has fewer CTAs than the GPU has slots: the block scheduler spreads them over every SM first)
  run one tile each, side by side on one simulated SM, at two depths K1 < K2; the time of a round is
  linear in K (the K-loop repeats), and the launch takes `launch_rounds` rounds: ceil(tiles / slots)
  with one CTA per SM, tiles / slots with several (the SM's CTAs end at different moments, and each
  freed slot takes the next CTA at once, so the last wave fills in instead of costing a whole round);
* persistent steps (s4-s8, split-K): one CTA (one cluster) walks 1 tile at K1 and K2, and 2 tiles at K1;
  T(t, K) = a + t (b + c K) through those three points, at the real K and the real number of tiles of
  the busiest CTA.

The rest of the GPU enters through `model.Env`: every SM running at once takes an equal share of L2 and
DRAM bandwidth, and the fraction of TMA-loaded bytes that miss L2 comes from the tile order
(`dram_bytes`: the A and B slabs each wave of tiles running together touches, read once per wave).
A direct-store epilogue shares the chip's store rate with the SMs storing at the same moment, and how
many those are depends on how the SMs' tiles are aligned in time, which the model cannot know (it has
no spread of latencies to drift them apart): `align="spread"` (the point prediction) takes the SMs'
tiles at independent phases (another SM is storing for the fraction of its period its store path is
busy), `align="lockstep"` takes every running SM storing at once (the tiles of a launch's first wave
start together; the 'slow' end of a range).
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from ..gemm import ladder
from ..gemm import order as tile_order
from . import machine as machines
from .model import Env, replay, store_sector_cycles
from .trace import Recorder

__all__ = ["Prediction", "predict", "dram_bytes", "emulated_trace", "emulated_check", "K1", "K2", "ALIGNS",
           "storing_sms", "aligned_env"]

K1, K2 = 8 * ladder.BK, 16 * ladder.BK      # the two emulated depths: 8 and 16 K-slices (past any ring's fill)
ALIGNS = ("spread", "lockstep")     # how the SMs' tiles sit in time against each other (storing_sms)
_TRACES: dict = {}
_CHECKS: dict = {}     # the same key: the emulated run's C checked against the f32 reference


@dataclass
class Prediction:
    step: str
    shape: tuple
    machine: str
    clock_mhz: float
    cycles: float
    ms: float
    tflops: float
    parts: dict = field(default_factory=dict)

    def __str__(self):
        m, n, k = self.shape
        p = self.parts
        return (f"{self.step} {m}x{n}x{k} on {self.machine} at {self.clock_mhz:.0f} MHz: {self.cycles:,.0f} cycles = "
                f"{self.ms:.4f} ms, {self.tflops:.1f} TFLOP/s ({p.get('how', '')})")


def emulated_trace(step, m: int, n: int, k: int, seed: int = 0, kernel=None):
    """The recorded trace of `step` run in the emulator on an m x n x k problem (cached per process).
    `kernel`: an edit of the step's file (`bwlab.lab.TeachingKernel`) to run instead of the file."""
    from ..gemm import runner
    from ..hw.dtypes import from_float
    s = ladder.step(step)
    key = (s, m, n, k, seed, kernel.text if kernel is not None else None)
    tr = _TRACES.get(key)
    if tr is None:
        rng = np.random.default_rng(seed)
        a = from_float(rng.random((m, k), dtype=np.float32) * 2 - 1, "bf16")
        b = from_float(rng.random((n, k), dtype=np.float32) * 2 - 1, "bf16")
        rec = Recorder()
        c, _ = runner.run_step_emulated(s, a, b, sms=1, seed=seed, timing=rec, kernel=kernel)
        _CHECKS[key] = runner.check(a, b, c, s.name)
        tr = _TRACES[key] = rec.trace
    return tr


def emulated_check(step, m: int, n: int, k: int, seed: int = 0, kernel=None):
    """The C check (`runner.check`, against the f32 reference) of the run `emulated_trace` recorded."""
    emulated_trace(step, m, n, k, seed, kernel)
    return _CHECKS[(ladder.step(step), m, n, k, seed, kernel.text if kernel is not None else None)]


def launch_rounds(tiles: int, sms: int, per_sm: int) -> float:
    """Rounds (one tile's time of an SM holding `per_sm` CTAs) a non-persistent launch of `tiles` CTAs takes
    on `sms` SMs. One CTA per SM: ceil(tiles / sms); the SMs' tiles stay nearly in step (the start spread of
    step 3's rounds on an H200 grows to ~20 us of a 113-us tile over 16 rounds, tile_drift_h200.txt), so a
    last, partial wave costs a whole tile. Several CTAs per SM: tiles / slots, at least one round. An SM's
    CTAs share its issue slots and tensor pipe and end at different moments; the block scheduler gives each
    freed slot the next CTA at once, so the slots free and refill one at a time and the last wave fills in:
    the launch's last CTA starts (tiles - slots) / slots rounds in and ends one round later. Measured
    support: step 1 (3 CTAs per SM) has 2.59 waves at 4096^3 and 10.34 at 8192^3; counted as 3 and 11
    rounds its prediction is 1.107 and 1.026 of the measurement on the H200 (1.069, 0.984 on the H100), as
    tiles / slots 0.96 and 0.96 (0.92, 0.93): the same at both shapes; and its CTA 0 writes C faster
    (9,998 cycles, recordings/gemm_ladder.npz) than the model with the SM's three CTAs storing in step
    (11,180)."""
    if tiles < 1 or sms < 1 or per_sm < 1:
        raise ValueError(f"tiles, SMs and CTAs per SM are counts of at least 1, got {tiles}, {sms}, {per_sm}")
    slots = sms * per_sm
    if per_sm == 1 or tiles <= slots:
        return float(math.ceil(tiles / slots))
    return tiles / slots


def storing_sms(align: str, active: int, store_busy: float, period: float) -> float:
    """How many SMs (the simulated one included) store C at the same moment as the simulated SM.
    'lockstep': all `active` SMs (their tiles end together). 'spread': the SMs' tiles at independent phases:
    each other SM is storing for the fraction `store_busy / period` of its time (`store_busy`: the cycles
    one SM's store path is busy per `period`, a round or a tile)."""
    if align not in ALIGNS:
        raise ValueError(f"align is one of {', '.join(map(repr, ALIGNS))}, not {align!r}")
    if align == "lockstep":
        return float(active)
    if not period > 0:
        raise ValueError(f"the period a store fraction is taken over must be positive, got {period}")
    return 1.0 + (active - 1) * min(1.0, max(0.0, store_busy) / period)


def store_busy(tl) -> float:
    """Cycles the store path of one simulated SM was busy in replay `tl` (the mean over its SMs)."""
    sms = sorted(set(tl.sm_of.values()))
    return sum(tl.busy.get(("lsu", sm), 0.0) for sm in sms) / max(1, len(sms))


def aligned_env(env: Env, align: str, busy: float, period: float) -> Env:
    """`env` with its storing_sms for `align` (bwlab.timing.model.Env)."""
    return dataclasses.replace(env, storing_sms=storing_sms(align, env.active_sms, busy, period))


def _order(s, tiles_m: int, tiles_n: int) -> np.ndarray:
    """(row, col) of each tile in the order the CTAs take them."""
    if not s.persistent:
        rows, cols = np.divmod(np.arange(tiles_m * tiles_n), tiles_n)    # blockIdx.x over N fastest
        return np.stack([rows, cols], axis=1)
    if s.cluster > 1:
        pairs_m = tiles_m // s.cluster
        po = tile_order.hilbert_order(pairs_m, tiles_n) if s.tile_order == "hilbert" else \
            tile_order.grouped_order(pairs_m, tiles_n, 16 // s.cluster)
        out = np.repeat(po, s.cluster, axis=0)
        out[:, 0] = out[:, 0] * s.cluster + np.tile(np.arange(s.cluster), len(po))
        return out
    return tile_order.grouped_order(tiles_m, tiles_n, 16)


def dram_bytes(s, m: int, n: int, k: int, concurrent: int) -> tuple:
    """(DRAM bytes, L2 bytes) the TMA loads of step `s` read at m x n x k when `concurrent` tiles run at
    once: each wave reads the A row-slabs and B column-slabs it touches once from DRAM (the L2 keeps
    nothing from the wave before: a wave's slabs are K deep and the next wave starts at K = 0 again);
    the L2 serves every tile's loads (a multicast B slice once per cluster)."""
    tiles_m, tiles_n = m // s.bm, n // s.bn
    order = _order(s, tiles_m, tiles_n)
    dram = 0
    for i in range(0, len(order), concurrent):
        w = order[i:i + concurrent]
        dram += len(np.unique(w[:, 0])) * s.bm * k * 2 + len(np.unique(w[:, 1])) * s.bn * k * 2
    tiles = tiles_m * tiles_n
    l2 = tiles * s.bm * k * 2 + (tiles // s.cluster) * s.bn * k * 2
    return dram, l2


def predict(step, m: int, n: int, k: int, machine="h100_sxm", clock_mhz: float | None = None,
            which: str = "value", seed: int = 0, kernel=None, align: str = "spread") -> Prediction:
    """Predicted time of ladder step `step` at m x n x k on `machine` (a name or a Machine) at SM clock
    `clock_mhz` (default: the machine's highest); `which` picks the machine's numbers ('value', or 'fast' /
    'slow': every uncertain number at the end of its range that makes the kernel faster / slower).
    `step` may be a `ladder.Step` changed with `dataclasses.replace` (e.g. another ring depth) and `kernel`
    an edit of its file (`bwlab.lab.TeachingKernel`) that the emulator runs instead of the file. `align`:
    how many SMs store C at once (`storing_sms`): 'spread' (the SMs' tiles at independent phases) or
    'lockstep' (every running SM at once)."""
    if align not in ALIGNS:
        raise ValueError(f"align is one of {', '.join(map(repr, ALIGNS))}, not {align!r}")
    s = ladder.step(step)
    ladder.require_shape(s, m, n, k)
    mach = machines.load(machine) if isinstance(machine, str) else machine
    if mach.arch != "sm_90a":
        raise ValueError(f"the ladder of bwlab.gemm.ladder is sm_90a; {mach.name} is {mach.arch}")
    mp = mach.at(which)
    clock = float(clock_mhz or mp["max_clock_mhz"])
    sms = int(mp["sms"])
    tiles = (m // s.bm) * (n // s.bn)
    parts = {}
    if not s.persistent:
        from ..gemm.occupancy import SMEM_PER_SM, ctas_per_sm
        occ_ = ctas_per_sm(s)
        fit = occ_.ctas
        if fit == 0:
            raise ValueError(f"{s.name} with {s.stages} stages takes {occ_.smem_per_cta / 1024:.1f} KiB of SMEM per "
                             f"CTA (launch and static block): more than an SM's {SMEM_PER_SM / 1024:.0f} KiB, so "
                             "no CTA fits on an SM")
        # the block scheduler spreads a launch over every SM before it doubles up: a launch of fewer CTAs
        # than slots runs ceil(tiles / SMs) per SM, on min(tiles, SMs) SMs
        occ = min(fit, math.ceil(tiles / sms))
        slots = sms * fit
        rounds = launch_rounds(tiles, sms, occ)
        active = min(sms, tiles)
        dram, l2 = dram_bytes(s, m, n, k, min(slots, tiles))
        env = Env(clock, active, min(1.0, dram / l2))
        one_sm = (lambda cta, cid, rank: 0)
        tr1 = emulated_trace(s, s.bm, s.bn * occ, K1, seed, kernel)
        tr2 = emulated_trace(s, s.bm, s.bn * occ, K2, seed, kernel)

        def rounds_at(e):
            x1, x2 = replay(tr1, mp, e, one_sm, keep_log=False), replay(tr2, mp, e, one_sm, keep_log=False)
            return x1.cycles + (k - K1) * (x2.cycles - x1.cycles) / (K2 - K1), x2
        per_round, x2 = rounds_at(env)
        # the SMs storing C at the same moment (a round stores the same C whatever its K)
        env2 = aligned_env(env, align, store_busy(x2), per_round)
        if store_sector_cycles(mp, env2) != store_sector_cycles(mp, env):
            per_round, _ = rounds_at(env2)
        env = env2
        cycles = rounds * per_round
        parts.update(how=f"{rounds:.4g} rounds of {occ} CTA(s) per SM, {per_round:,.0f} cycles each; "
                         f"L2 miss {env.miss:.2f}", rounds=rounds, per_round=per_round, ctas_per_sm=occ)
    else:
        grid = s.grid(m, n, sms, k)[0]
        splits = ladder.split_count(m, n, k, sms, s.bm, s.bn) if s.split_k else 1
        units = tiles * splits
        per_cta = math.ceil(units / grid)
        k_unit = k // splits
        dram, l2 = dram_bytes(s, m, n, k, min(grid, tiles))
        env = Env(clock, min(sms, grid), min(1.0, dram / l2))
        mm, nn = s.bm * s.cluster, s.bn
        trs = [emulated_trace(s, mm, nn, K1, seed, kernel), emulated_trace(s, mm, nn, K2, seed, kernel),
               emulated_trace(s, mm, 2 * nn, K1, seed, kernel)]

        def tiles_at(e):
            x11, x12, x21 = (replay(tr, mp, e, keep_log=False) for tr in trs)
            c = (x12.cycles - x11.cycles) / (K2 - K1)
            b = x21.cycles - x11.cycles - c * K1
            return x11.cycles - (b + c * K1), b + c * k_unit, x11
        a, per_tile, x11 = tiles_at(env)
        # the SMs storing C at the same moment (one tile's stores, whatever its K)
        env2 = aligned_env(env, align, store_busy(x11), per_tile)
        if store_sector_cycles(mp, env2) != store_sector_cycles(mp, env):
            a, per_tile, _ = tiles_at(env2)
        env = env2
        cycles = a + per_cta * per_tile
        parts.update(how=f"{per_cta} tiles on the busiest of {grid} CTAs, {per_tile:,.0f} cycles each + {a:,.0f}; "
                         f"L2 miss {env.miss:.2f}" + (f"; {splits} K pieces" if splits > 1 else ""),
                     per_cta=per_cta, per_tile=per_tile, fixed=a, splits=splits)
    cycles += mp["launch_us"] * clock
    ms = cycles / (clock * 1e3)
    parts.update(miss=env.miss, active_sms=env.active_sms, storing_sms=env.storing_sms, align=align,
                 store_sector_cycles=store_sector_cycles(mp, env))
    return Prediction(s.name, (m, n, k), mach.name, clock, cycles, ms, 2.0 * m * n * k / (ms * 1e-3) / 1e12, parts)
