"""One tile's phases in the model against the GEMM_STAMPS timelines measured on GPUs.

    python -m bwlab.timing phases --out docs/results/timing_phases.txt

The ladder's kernels built with -DGEMM_STAMPS record CTA 0's timeline in clock64 cycles (bwlab.gemm.timeline):
the consumer's k-slice period (from one slice's data landing to the next's) and the epilogue (writing C).
The model's are read off the replayed timeline of the emulated tiles the prediction uses: the k-slice
period is the slope of the round (or tile) time in K, the epilogue the span of the first consumer warp
from its last wgmma.wait_group to its last store, with the SMs' tiles at independent phases ('spread', the
point prediction) and with every SM storing C at once ('lockstep'; bwlab.timing.gemm.storing_sms). Measured: docs/results/recordings/gemm_ladder.npz
(H100, 4096^3, one launch) and docs/results/timing_probe_h200.txt (H200, 8192^3). A third epilogue column
takes the number of SMs storing at once from the tile logs measured on an H200 (`drift_storing`), as a
check of the alignment; it is not the point prediction (docs/timing.md, section 7).
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

__all__ = ["model_phases", "recorded_h100", "probed_h200", "drift_storing", "table"]

TOLERANCE = 0.20


def model_phases(step, m, n, k, mach="h100_sxm", clock_mhz=1500.0, align="spread", storing=None) -> dict:
    """{'kslice': cycles per k-slice of one CTA, 'epilogue': cycles, 'storing_sms': SMs storing at once} in the
    model at shape m x n x k, with the SMs' tiles aligned as `align` says (bwlab.timing.gemm.storing_sms), or,
    given `storing`, that many SMs storing at once (e.g. `drift_storing`'s count, measured)."""
    s = ladder.step(step)
    mp = machines.load(mach).at()
    sms = int(mp["sms"])
    tiles = (m // s.bm) * (n // s.bn)
    if s.persistent:
        dram, l2 = gemm.dram_bytes(s, m, n, k, min(s.grid(m, n, sms, k)[0], tiles))
        env = Env(clock_mhz, min(sms, s.grid(m, n, sms, k)[0]), min(1.0, dram / l2))
        shape = (s.bm * s.cluster, s.bn)
        sm_of = None
    else:
        from ..gemm.occupancy import ctas_per_sm
        occ = min(ctas_per_sm(s).ctas, math.ceil(tiles / sms))
        dram, l2 = gemm.dram_bytes(s, m, n, k, min(sms * occ, tiles))
        env = Env(clock_mhz, min(sms, tiles), min(1.0, dram / l2))
        shape = (s.bm, s.bn * occ)

        def sm_of(cta, cid, rank):
            return 0
    tr1, tr2 = gemm.emulated_trace(s, *shape, gemm.K1), gemm.emulated_trace(s, *shape, gemm.K2)
    t1, t2 = replay(tr1, mp, env, sm_of), replay(tr2, mp, env, sm_of)
    # a round (one tile of each CTA on the SM) at the real K, and the SMs storing at the same moment
    period = t1.cycles + (k - gemm.K1) * (t2.cycles - t1.cycles) / (gemm.K2 - gemm.K1)
    env2 = gemm.aligned_env(env, align, gemm.store_busy(t2), period)
    if storing is not None:
        env2 = dataclasses.replace(env, storing_sms=min(float(env.active_sms), max(1.0, float(storing))))
    if store_sector_cycles(mp, env2) != store_sector_cycles(mp, env):
        t1, t2 = replay(tr1, mp, env2, sm_of), replay(tr2, mp, env2, sm_of)
    kslice = (t2.cycles - t1.cycles) / ((gemm.K2 - gemm.K1) // ladder.BK)
    consumer = (0, 4) if s.threads > 128 else (0, 0)
    log = t2.warps[consumer]
    waits = [x for x in log if x[1] == "mma_wait"]
    stores = [x for x in log if x[1] in ("st_global", "st_shared", "tma_store", "bulk_wait_read", "bulk_wait")]
    epi = (stores[-1][2] - waits[-1][3]) if waits and stores else float("nan")
    return {"kslice": kslice, "epilogue": epi, "storing_sms": env2.storing_sms}


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


def probed_h200() -> dict:
    """{step name: (k-slice period, epilogue, MHz)} from docs/results/timing_probe_h200.txt (8192^3)."""
    out = {}
    pat = re.compile(r"^\s+(s\w+)\s+[\d.]+ ms\s+SM clock\s+(\d+) MHz.*period median\s+(\d+) cycles.*epilogue median\s+(\d+)")
    for line in (RESULTS / "timing_probe_h200.txt").read_text().splitlines():
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


def table() -> str:
    lines = ["One tile's phases: the model's timeline vs CTA 0's GEMM_STAMPS timeline on a GPU (clock64 cycles)",
             "epilogue: the model with the SMs' tiles at independent phases (spread: the point prediction) and with "
             "every SM storing C at once (lockstep); SMs: how many store at the same moment; drift: the model with "
             "the SMs storing during CTA 0's epilogues counted in the tile logs of steps 3 (non-persistent rows) and 4 "
             "(persistent rows) measured on an H200 at the row's shape (tile_drift_h200.npz; not the point prediction)",
             f"{'step':22s} {'GPU, shape':14s} {'MHz':>5s} {'k-slice: GPU':>13s} {'model':>6s} {'ratio':>5s}   "
             f"{'epilogue: GPU':>13s} {'spread':>6s} {'SMs':>5s} {'ratio':>5s}   {'lockstep':>8s} {'SMs':>4s} "
             f"{'ratio':>5s}  {'closer':8s}   {'drift':>6s} {'SMs':>5s} {'ratio':>5s}"]
    n = ok = 0
    lock_ok = either = drift_ok = 0
    for label, mach, shape, meas in (("H100, 4096^3", "h100_sxm", (4096,) * 3, recorded_h100()),
                                     ("H200, 8192^3", "h200", (8192,) * 3, probed_h200())):
        for name, (ks, ep, mhz) in meas.items():
            p = model_phases(name, *shape, mach=mach, clock_mhz=mhz)
            q = model_phases(name, *shape, mach=mach, clock_mhz=mhz, align="lockstep")
            dsms = drift_storing(ladder.step(name).persistent, shape[0], ep)
            d = model_phases(name, *shape, mach=mach, clock_mhz=mhz, storing=dsms)
            r1, r2, r3 = p["kslice"] / ks, p["epilogue"] / ep, q["epilogue"] / ep
            r4 = d["epilogue"] / ep
            drift_ok += abs(r4 - 1) <= TOLERANCE
            for r in (r1, r2):
                n += 1
                ok += abs(r - 1) <= TOLERANCE
            lock_ok += abs(r3 - 1) <= TOLERANCE
            either += min(abs(r2 - 1), abs(r3 - 1)) <= TOLERANCE
            same = abs(p["epilogue"] - q["epilogue"]) < 0.5
            closer = "either" if same else ("spread" if abs(math.log(r2)) < abs(math.log(r3)) else "lockstep")
            lines.append(f"{name:22s} {label:14s} {mhz:5.0f} {ks:13.0f} {p['kslice']:6.0f} {r1:5.2f}   "
                         f"{ep:13.0f} {p['epilogue']:6.0f} {p['storing_sms']:5.1f} {r2:5.2f}   "
                         f"{q['epilogue']:8.0f} {q['storing_sms']:4.0f} {r3:5.2f}  {closer:8s}   "
                         f"{d['epilogue']:6.0f} {d['storing_sms']:5.1f} {r4:5.2f}")
    lines.append(f"\nwithin +-{TOLERANCE:.0%}: {ok} of {n} phases (the point prediction: epilogues at spread)")
    lines.append(f"epilogues within +-{TOLERANCE:.0%} with every SM storing at once (lockstep): {lock_ok} of {n // 2}; "
                 f"at one of the two alignments: {either} of {n // 2}")
    lines.append(f"epilogues within +-{TOLERANCE:.0%} with the SMs storing at once counted in the tile logs measured "
                 f"on an H200 (drift): {drift_ok} of {n // 2}")
    return "\n".join(lines)
