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
many those are depends on how the SMs' tiles are aligned in time. `align="drift"` (the point
prediction): the SMs start together and drift apart as a random walk, each tile's time varying by the
machine's `kslice_jitter` / sqrt(k-slices) of it (measured on an H200: tile_drift_h200.txt), so the
SMs storing while one stores fall round by round (`drift_storing`). `align="spread"` takes the SMs' tiles
at independent phases (another SM is storing for the fraction of its period its store path is busy),
`align="lockstep"` every running SM storing at once (the 'slow' end of a range).
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
           "storing_sms", "aligned_env", "window_overlap", "drift_storing", "epilogue_cycles", "drifted_env",
           "drift_env", "round_counts"]

K1, K2 = 8 * ladder.BK, 16 * ladder.BK      # the two emulated depths: 8 and 16 K-slices (past any ring's fill)
ALIGNS = ("spread", "lockstep", "drift")     # how the SMs' tiles sit in time against each other (storing_sms)
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
    if align == "drift":
        raise ValueError("align='drift' takes the SMs' phases round by round: drift_env / drift_storing, not storing_sms")
    if align == "lockstep":
        return float(active)
    if not period > 0:
        raise ValueError(f"the period a store fraction is taken over must be positive, got {period}")
    return 1.0 + (active - 1) * min(1.0, max(0.0, store_busy) / period)


def window_overlap(window: float, sigma: float) -> float:
    """The expected fraction of a window of `window` cycles that another window as long overlaps when their ends
    differ by d ~ N(0, sigma^2): E[max(0, 1 - |d| / window)]."""
    if not window > 0:
        raise ValueError(f"an epilogue window is a positive number of cycles, got {window}")
    if sigma < 0:
        raise ValueError(f"a spread (sigma) is not negative, got {sigma}")
    if sigma == 0:
        return 1.0
    a = window / sigma
    return math.erf(a / math.sqrt(2.0)) - 2.0 / (a * math.sqrt(2.0 * math.pi)) * (1.0 - math.exp(-a * a / 2.0))


def drift_storing(active_by_tile, epilogue: float, tile: float, kslices: int, jitter: float) -> list:
    """SMs (CTA 0's included) storing C while CTA 0 stores its r-th tile's, r = 1, 2, ... (`active_by_tile[r-1]`:
    the SMs that have an r-th tile). The SMs start together; each tile's time varies by `jitter` / sqrt(`kslices`)
    of `tile` (its k-slices vary independently by `jitter` of theirs: the machine's `kslice_jitter`), so the end of
    an SM's r-th tile has drifted by sigma_r = sqrt(r) x that from the launch's rhythm, a random walk (measured:
    step 3's round starts on an H200, tile_drift_h200.txt). Another SM's r-th epilogue (the last `epilogue` cycles
    of its tile) ends d ~ N(0, 2 sigma_r^2) from CTA 0's, and overlaps `window_overlap` of it on average."""
    if not tile > 0 or kslices < 1 or jitter < 0:
        raise ValueError(f"a tile's time is positive, its k-slices at least 1 and the jitter not negative; got "
                         f"{tile}, {kslices}, {jitter}")
    sigma = jitter * tile / math.sqrt(kslices)
    return [1.0 + (max(1, int(n)) - 1) * window_overlap(epilogue, math.sqrt(2.0 * r) * sigma)
            for r, n in enumerate(active_by_tile, 1)]


def epilogue_cycles(tl, threads: int) -> float:
    """CTA 0's epilogue in replay `tl` (kept log): its first consumer warp's span from its last wgmma.wait_group
    to its last store (the GEMM_STAMPS epilogue: bwlab.gemm.timeline)."""
    log = tl.warps[(0, 4) if threads > 128 else (0, 0)]
    waits = [x for x in log if x[1] == "mma_wait"]
    stores = [x for x in log if x[1] in ("st_global", "st_shared", "tma_store", "bulk_wait_read", "bulk_wait")]
    return (stores[-1][2] - waits[-1][3]) if waits and stores else float("nan")


def drifted_env(mp: dict, env: Env, counts) -> Env:
    """`env` with the storing SMs that give its store path the mean of the per-sector cycles of `counts` (one count
    of SMs storing per round or tile: `drift_storing`); the model's store cost is max(gst_sector, storing x 32 B /
    the chip's rate), so a plain mean of the counts would miss the rounds below the chip's bound."""
    counts = [min(float(env.active_sms), max(1.0, float(c))) for c in counts]
    per = [store_sector_cycles(mp, dataclasses.replace(env, storing_sms=c)) for c in counts]
    chip = mp["st_l2_bw"] / (env.clock_mhz * 1e6) / 32.0        # sectors per SM cycle, all SMs together
    mean = float(np.mean(per))
    c = mean * chip if mean > mp["gst_sector"] + 1e-12 else float(np.mean(counts))
    return dataclasses.replace(env, storing_sms=min(float(env.active_sms), max(1.0, c)))


def drift_env(mp: dict, env: Env, active_by_tile, tile: float, kslices: int, epilogue_at, pick="mean",
              iterations: int = 4):
    """(Env, counts): the SMs storing at once by `drift_storing`, with the epilogue window the model's own: the
    window sets the count and the count (through the store path's share) the window, so this iterates from
    `env` (`epilogue_at(env)`: the model's epilogue in cycles at an Env). `pick`: 'mean' (the whole launch:
    `drifted_env`, the mean store cost over the tiles) or 'median' (the median over CTA 0's tiles, as the
    GEMM_STAMPS epilogue is; the epilogue grows with the count, so it is the median tile's)."""
    if pick not in ("mean", "median"):
        raise ValueError(f"pick is 'mean' or 'median', not {pick!r}")
    e, out = epilogue_at(env), env
    counts = []
    for _ in range(iterations):
        counts = drift_storing(active_by_tile, e, tile, kslices, mp["kslice_jitter"])
        if pick == "mean":
            out = drifted_env(mp, env, counts)
        else:
            out = dataclasses.replace(env, storing_sms=min(float(env.active_sms), max(1.0, float(np.median(counts)))))
        e2 = epilogue_at(out)
        if abs(e2 - e) < 1.0:
            break
        e = e2
    return out, counts


def round_counts(tiles: int, sms: int, per_sm: int) -> list:
    """SMs busy in each whole round of `tiles` CTAs on `sms` SMs holding `per_sm` each (the last one partial)."""
    slots = sms * per_sm
    return [min(sms, math.ceil((tiles - r * slots) / per_sm)) for r in range(math.ceil(tiles / slots))]


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
    how many SMs store C at once: 'drift' (the tables' point prediction, `bwlab.timing.hopper.ALIGN`: the SMs
    start together and drift apart tile by tile, `drift_storing` with the machine's `kslice_jitter`; the mean
    store cost over the rounds, or over the busiest CTA's tiles), 'spread' (the default, kept for the callers
    outside bwlab.timing, exercise 7.6 and the capstone, whose own step-4 prediction takes one SM storing:
    the SMs' tiles at independent phases; 0-3 % faster than 'drift' on the ladder) or 'lockstep' (every
    running SM at once; `storing_sms`)."""
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
        env2 = aligned_env(env, "spread" if align == "drift" else align, store_busy(x2), per_round)
        if align == "drift":
            # the window: CTA 0's epilogue with the SM's other CTAs out of step (section 4 of docs/timing.md:
            # CTA c starts c / (CTAs per SM) of a round later), as bwlab.timing.phases replays it
            ctas = sorted(tr2.ctas)
            stagger = {c: i * x2.cycles / len(ctas) for i, c in enumerate(ctas)} if len(ctas) > 1 else None
            env2, _ = drift_env(mp, env2, round_counts(tiles, active, occ), per_round, k // ladder.BK,
                                lambda e: epilogue_cycles(replay(tr2, mp, e, one_sm, cta_start=stagger), s.threads))
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
        env2 = aligned_env(env, "spread" if align == "drift" else align, store_busy(x11), per_tile)
        if align == "drift":
            by_tile = [min(env.active_sms, units - r * grid) for r in range(per_cta)]
            env2, _ = drift_env(mp, env2, by_tile, per_tile, max(1, k_unit // ladder.BK),
                                lambda e: epilogue_cycles(replay(trs[0], mp, e), s.threads))
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
