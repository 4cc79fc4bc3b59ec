"""One tile's phases in the model against the GEMM_STAMPS timelines measured on GPUs.

    python -m bwlab.timing phases --out docs/results/timing_phases.txt

The ladder's kernels built with -DGEMM_STAMPS record CTA 0's timeline in clock64 cycles (bwlab.gemm.timeline):
the consumer's k-slice period (from one slice's data landing to the next's) and the epilogue (writing C).
The model's are read off the replayed timeline of the emulated tiles the prediction uses: the k-slice
period is the slope of the round (or tile) time in K, the epilogue the span of the first consumer warp
from its last wgmma.wait_group to its last store. The point prediction ('drift'): the SMs start together
and drift apart as a random walk (the machine's `kslice_jitter`, measured in step 3's tile logs on an
H200: `measured_kslice_jitter`), so the SMs storing while CTA 0 stores fall tile by tile
(bwlab.timing.gemm.drift_storing, with the model's own epilogue as the window; the median over CTA 0's
tiles, as the GEMM_STAMPS epilogue is); an SM's CTAs (steps 1 and 2) out of step, CTA 0 storing while the
others run their main loops. Beside it: the same with an SM's CTAs in step, the SMs storing counted in the
tile logs measured on an H200 (`drift_storing`, a measurement), the SMs' tiles at independent phases
('spread') and every SM storing at once ('lockstep'). Measured: docs/results/recordings/gemm_ladder.npz
(H100, 4096^3, one launch) and docs/results/timing_probe_h200.txt (H200, 8192^3). docs/timing.md,
sections 5 and 7.
"""
from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from ..gemm import ladder
from . import gemm, machine as machines
from .hopper import RESULTS
from .model import Env, replay, store_sector_cycles

__all__ = ["model_phases", "recorded_h100", "probed_h200", "drift_storing", "measured_kslice_jitter", "table"]

TOLERANCE = 0.20


def model_phases(step, m, n, k, mach="h100_sxm", clock_mhz=1500.0, align="drift", storing=None,
                 apart: bool = True) -> dict:
    """{'kslice': cycles per k-slice of one CTA, 'epilogue': cycles, 'storing_sms': SMs storing at once} in the
    model at shape m x n x k, with the SMs' tiles aligned as `align` says: 'drift' (the point prediction: the SMs
    drift apart as a random walk, `gemm.drift_storing`, over the tiles CTA 0 runs: the median of its tiles, as
    the GEMM_STAMPS epilogue is), 'spread' or 'lockstep' (`gemm.storing_sms`); or, given `storing`, that many SMs
    storing at once (e.g. `drift_storing`'s count, measured). `apart`: an SM's CTAs (steps 1 and 2) out of
    step, CTA 0 storing while the others run their main loops (False: all of them in step, storing together).
    Also returned: 'period' (cycles of a round or tile at K), 'kslices', 'by_tile' (the SMs with an r-th tile,
    for each of CTA 0's tiles). Step 8's epilogue is the span its stamps measure (`overlapped_epilogue`)."""
    if align not in gemm.ALIGNS:
        raise ValueError(f"align is one of {', '.join(map(repr, gemm.ALIGNS))}, not {align!r}")
    s = ladder.step(step)
    mp = machines.load(mach).at()
    sms = int(mp["sms"])
    tiles = (m // s.bm) * (n // s.bn)
    if s.persistent:
        grid = min(s.grid(m, n, sms, k)[0], tiles)
        dram, l2 = gemm.dram_bytes(s, m, n, k, grid)
        env = Env(clock_mhz, min(sms, grid), min(1.0, dram / l2))
        shape = (s.bm * s.cluster, s.bn)
        sm_of = None
        # CTA 0's tiles, one per round: the SMs with an r-th tile
        by_tile = [min(env.active_sms, tiles - r * grid) for r in range(math.ceil(tiles / grid))]
    else:
        from ..gemm.occupancy import ctas_per_sm
        occ = min(ctas_per_sm(s).ctas, math.ceil(tiles / sms))
        dram, l2 = gemm.dram_bytes(s, m, n, k, min(sms * occ, tiles))
        env = Env(clock_mhz, min(sms, tiles), min(1.0, dram / l2))
        shape = (s.bm, s.bn * occ)
        by_tile = [env.active_sms]          # CTA 0 runs the first tile of the first round

        def sm_of(cta, cid, rank):
            return 0
    tr1, tr2 = gemm.emulated_trace(s, *shape, gemm.K1), gemm.emulated_trace(s, *shape, gemm.K2)
    t1, t2 = replay(tr1, mp, env, sm_of), replay(tr2, mp, env, sm_of)
    # a round (one tile of each CTA on the SM) at the real K, and the SMs storing at the same moment
    period = t1.cycles + (k - gemm.K1) * (t2.cycles - t1.cycles) / (gemm.K2 - gemm.K1)
    # an SM's CTAs out of step (docs/timing.md, section 4: each freed slot takes the next CTA at once): CTA c
    # of the SM starts c / (CTAs per SM) of a round after CTA 0, so CTA 0 writes C while the others run their
    # main loops, not their epilogues
    ctas = sorted(tr2.ctas)
    stagger = {c: i * t2.cycles / len(ctas) for i, c in enumerate(ctas)} \
        if apart and len(ctas) > 1 and not s.persistent else None

    def epilogue_at(e):
        return gemm.epilogue_cycles(replay(tr2, mp, e, sm_of, cta_start=stagger), s.threads)
    env2 = gemm.aligned_env(env, "spread" if align == "drift" else align, gemm.store_busy(t2), period)
    if align == "drift" and storing is None:
        env2, _ = gemm.drift_env(mp, env2, by_tile, period, k // ladder.BK, epilogue_at, pick="median")
    if storing is not None:
        env2 = dataclasses.replace(env, storing_sms=min(float(env.active_sms), max(1.0, float(storing))))
    if store_sector_cycles(mp, env2) != store_sector_cycles(mp, env):
        t1, t2 = replay(tr1, mp, env2, sm_of), replay(tr2, mp, env2, sm_of)
    kslice = (t2.cycles - t1.cycles) / ((gemm.K2 - gemm.K1) // ladder.BK)
    if s.name in OVERLAPPED_EPILOGUES:   # two tiles: the first one's C goes out under the second's main loop
        two = gemm.emulated_trace(s, shape[0], 2 * shape[1], gemm.K1)
        epilogue = overlapped_epilogue(replay(two, mp, env2, sm_of), s.threads, s.bn // 64)
    else:
        epilogue = epilogue_at(env2)
    return {"kslice": kslice, "epilogue": epilogue, "storing_sms": env2.storing_sms, "period": period,
            "kslices": k // ladder.BK, "by_tile": by_tile}


def recorded_h100() -> dict:
    """{step name: (k-slice period, epilogue)} of CTA 0 in docs/results/recordings/gemm_ladder.npz (H100, 4096^3)."""
    from ..gemm.timeline import step_timeline
    z = np.load(RESULTS / "recordings" / "gemm_ladder.npz", allow_pickle=True)

    class Rec(dict):
        params = {"stamp_shape": [4096, 4096, 4096]}
    rec = Rec(steps=z["steps"], stamps=z["stamps"])
    out = {}
    for name in z["steps"]:
        tl = step_timeline(rec, str(name))
        bars = tl.bars[1]
        ok = bars[~np.isnan(bars[:, 0])]
        epi = tl.bars[3]
        out[str(name)] = (float(np.median(np.diff(ok[:, 0])[4:])),
                          float(np.nanmedian(epi[:, 1] - epi[:, 0])), tl.clock_ghz * 1e3)
    return out


OVERLAPPED_EPILOGUES = ("s8_epilogue_overlap",)   # C stored in pieces under the next tile's main loop


def overlapped_epilogue(tl, threads: int, pieces: int) -> float:
    """The span step 8's GEMM_STAMPS epilogue measures, in replay `tl` of two tiles: from the first tile's last
    wgmma wait (its accumulator done) to the issue of the `pieces`-th TMA store after it, the last piece of C,
    which it stores one per k-slice under the next tile's main loop."""
    log = tl.warps[(0, 4) if threads > 128 else (0, 0)]
    first_store = next(i for i, x in enumerate(log) if x[1] == "tma_store")
    last_wait = max(i for i, x in enumerate(log[:first_store]) if x[1] == "mma_wait")
    stores = [x for x in log[last_wait:] if x[1] == "tma_store"]
    if len(stores) < pieces:
        raise ValueError(f"{len(stores)} TMA stores after the first tile's last wait, not the {pieces} pieces of C")
    return stores[pieces - 1][2] - log[last_wait][3]


def probed_h200(name: str = "timing_probe_h200.txt") -> dict:
    """{step name: (k-slice period, epilogue, MHz)} from an H200 probe at 8192^3 (docs/results/timing_probe.py):
    timing_probe_h200.txt (steps 2, 3, 4, 6) or timing_probe_more_h200.txt (every step, a later run)."""
    out = {}
    pat = re.compile(r"^\s+(s\w+)\s+[\d.]+ ms\s+SM clock\s+(\d+) MHz.*period median\s+(\d+) cycles.*epilogue median\s+(\d+)")
    for line in (RESULTS / name).read_text().splitlines():
        g = pat.match(line)
        if g:
            out[g.group(1)] = (float(g.group(3)), float(g.group(4)), float(g.group(2)))
    return out


def drift_storing(persistent: bool, size: int, epilogue: float, path=None) -> float:
    """SMs (CTA 0's included) writing C at the moments CTA 0 writes its tiles' C, counted in the tile logs
    measured on an H200 (docs/results/tile_drift_h200.npz, tile_drift.py: every tile's start and end, by
    %globaltimer and clock64): each tile's epilogue is taken as the last `epilogue` cycles before its end
    (at the launch's median clock64 rate); for each of CTA 0's tiles, the number of tiles storing is averaged
    over its epilogue; the median over CTA 0's tiles, then over the logged launches. A non-persistent step
    reads step 3's logs (CTA 0 runs the first tile of the first round), a persistent one step 4's (CTA 0's
    tiles, one per round); `size`: 4096 or 8192 (the logged cubes). A measurement, not the model's."""
    if size not in (4096, 8192):
        raise ValueError(f"the tile logs are at 4096^3 and 8192^3, not {size}^3")
    z = np.load(path or RESULTS / "tile_drift_h200.npz")
    key = f"{'s4_persistent' if persistent else 's3_warp_specialized'}_{size}_"
    per_launch = []
    for name in sorted(x for x in z.files if x.startswith(key)):
        log = z[name]
        end = np.maximum(log[:, 3], log[:, 4]).astype(np.float64)
        ghz = np.median((log[:, 5].astype(np.float64) - log[:, 1]) /
                        np.maximum(1.0, log[:, 3].astype(np.float64) - log[:, 0]))
        span = epilogue / ghz
        mine = np.nonzero(log[:, 6] == 0)[0] if persistent else np.array([0])
        counts = []
        for i in mine:
            ts = np.linspace(end[i] - span, end[i], 64)
            counts.append(np.mean([np.count_nonzero((end - span <= t) & (t <= end)) for t in ts]))
        per_launch.append(float(np.median(counts)))
    if not per_launch:
        raise ValueError(f"no tile logs named {key}* in {path or RESULTS / 'tile_drift_h200.npz'}")
    return float(np.median(per_launch))


def measured_kslice_jitter(size: int = 8192, path=None) -> list:
    """The k-slice jitter (the machine's `kslice_jitter`) in each launch of step 3 logged on an H200 at `size`^3
    (docs/results/tile_drift_h200.npz): the variance of a round's start times grows by sigma^2 a round (a
    least-squares line through the origin over the rounds, variance against rounds done), sigma a tile's own
    spread; as a fraction of the median tile over sqrt(its k-slices)."""
    if size not in (4096, 8192):
        raise ValueError(f"the tile logs are at 4096^3 and 8192^3, not {size}^3")
    z = np.load(path or RESULTS / "tile_drift_h200.npz")
    out = []
    for name in sorted(x for x in z.files if x.startswith(f"s3_warp_specialized_{size}_")):
        log = z[name]
        start = log[:, 0].astype(np.float64)
        end = np.maximum(log[:, 3], log[:, 4]).astype(np.float64)
        sms = len(np.unique(log[:, 2]))
        rounds = len(log) // sms
        var = np.array([np.var(start[r * sms:(r + 1) * sms]) for r in range(rounds)])
        done = np.arange(rounds, dtype=np.float64)
        sigma = math.sqrt(float(np.sum(var * done) / np.sum(done * done)))
        out.append(sigma / float(np.median(end - start)) * math.sqrt(size // ladder.BK))
    if not out:
        raise ValueError(f"no step 3 tile logs at {size}^3 in {path or RESULTS / 'tile_drift_h200.npz'}")
    return out


def table() -> str:
    jit = machines.load("h200").kslice_jitter.value
    lines = ["One tile's phases: the model's timeline vs CTA 0's GEMM_STAMPS timeline on a GPU (clock64 cycles)",
             "epilogue: drift, the point prediction: the SMs start together and drift apart tile by tile (each tile "
             f"varying by kslice_jitter = {jit:g} of a k-slice / sqrt(k-slices); gemm.drift_storing), the SMs storing "
             "while CTA 0 stores counted over CTA 0's tiles (their median), with the model's own epilogue as the "
             "window; an SM's CTAs (steps 1, 2) out of step; in step: the same with them in step; logs: the SMs "
             "storing counted in the tile logs measured on an H200 (steps 3 and 4, tile_drift_h200.npz; "
             "drift_storing) with the GPU's epilogue as the window; 'GPU win.': drift's count with the GPU's "
             "epilogue as the window (what the logs count); spread: the SMs' tiles at independent phases; "
             "lockstep: every SM storing at once (logs, spread, lockstep with an SM's CTAs in step, as before)",
             f"{'step':22s} {'GPU, shape':14s} {'MHz':>5s} {'k-slice: GPU':>13s} {'model':>6s} {'ratio':>5s}   "
             f"{'epilogue: GPU':>13s} {'drift':>6s} {'SMs':>5s} {'ratio':>5s}  {'in step':>7s}   "
             f"{'logs: SMs':>9s} {'GPU win.':>8s} {'ratio':>5s}   {'spread':>6s} {'SMs':>5s} {'ratio':>5s}   "
             f"{'lockstep':>8s} {'ratio':>5s}"]
    n = ok = 0
    counts = {"drift": 0, "in step": 0, "logs": 0, "spread": 0, "lockstep": 0}
    for label, mach, shape, meas in (("H100, 4096^3", "h100_sxm", (4096,) * 3, recorded_h100()),
                                     ("H200, 8192^3", "h200", (8192,) * 3, probed_h200()),
                                     ("H200 b, 8192^3", "h200", (8192,) * 3, probed_h200("timing_probe_more_h200.txt"))):
        jitter = machines.load(mach).kslice_jitter.value
        for name, (ks, ep, mhz) in meas.items():
            d = model_phases(name, *shape, mach=mach, clock_mhz=mhz)
            together = model_phases(name, *shape, mach=mach, clock_mhz=mhz, apart=False)
            p = model_phases(name, *shape, mach=mach, clock_mhz=mhz, align="spread", apart=False)
            q = model_phases(name, *shape, mach=mach, clock_mhz=mhz, align="lockstep", apart=False)
            logs = drift_storing(ladder.step(name).persistent, shape[0], ep)
            gpu_win = float(np.median(gemm.drift_storing(d["by_tile"], ep, d["period"], d["kslices"], jitter)))
            r1 = d["kslice"] / ks
            r = {"drift": d["epilogue"] / ep, "in step": together["epilogue"] / ep,
                 "logs": model_phases(name, *shape, mach=mach, clock_mhz=mhz, storing=logs, apart=False)["epilogue"] / ep,
                 "spread": p["epilogue"] / ep, "lockstep": q["epilogue"] / ep}
            for key, x in r.items():
                counts[key] += abs(x - 1) <= TOLERANCE
            for x in (r1, r["drift"]):
                n += 1
                ok += abs(x - 1) <= TOLERANCE
            lines.append(f"{name:22s} {label:14s} {mhz:5.0f} {ks:13.0f} {d['kslice']:6.0f} {r1:5.2f}   "
                         f"{ep:13.0f} {d['epilogue']:6.0f} {d['storing_sms']:5.1f} {r['drift']:5.2f}  "
                         f"{r['in step']:7.2f}   {logs:9.1f} {gpu_win:8.1f} {r['logs']:5.2f}   "
                         f"{p['epilogue']:6.0f} {p['storing_sms']:5.1f} {r['spread']:5.2f}   "
                         f"{q['epilogue']:8.0f} {r['lockstep']:5.2f}")
    lines.append(f"\nwithin +-{TOLERANCE:.0%}: {n and ok} of {n} phases (the point prediction: epilogues at drift)")
    lines.append(f"epilogues within +-{TOLERANCE:.0%}: drift {counts['drift']} of {n // 2}; with an SM's CTAs in step "
                 f"{counts['in step']}; with the SMs storing counted in the tile logs {counts['logs']}; spread "
                 f"{counts['spread']}; lockstep {counts['lockstep']}")
    lines.append("the k-slice jitter measured in step 3's tile logs on an H200 (measured_kslice_jitter): "
                 + ", ".join(f"{x:.3f}" for x in measured_kslice_jitter(8192)) + " at 8192^3, "
                 + ", ".join(f"{x:.3f}" for x in measured_kslice_jitter(4096)) + " at 4096^3")
    return "\n".join(lines)
