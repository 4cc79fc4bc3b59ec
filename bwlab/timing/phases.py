"""One tile's phases in the model against the GEMM_STAMPS timelines measured on GPUs.

    python -m bwlab.timing phases --out docs/results/timing_phases.txt

The ladder's kernels built with -DGEMM_STAMPS record CTA 0's timeline in clock64 cycles (bwlab.gemm.timeline):
the consumer's k-slice period (from one slice's data landing to the next's) and the epilogue (writing C).
The model's are read off the replayed timeline of the emulated tiles the prediction uses: the k-slice
period is the slope of the round (or tile) time in K, the epilogue the span of the first consumer warp
from its last wgmma.wait_group to its last store. Measured: docs/results/recordings/gemm_ladder.npz
(H100, 4096^3, one launch) and docs/results/timing_probe_h200.txt (H200, 8192^3).
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..gemm import ladder
from . import gemm, machine as machines
from .hopper import RESULTS
from .model import Env, replay

__all__ = ["model_phases", "recorded_h100", "probed_h200", "table"]

TOLERANCE = 0.20


def model_phases(step, m, n, k, mach="h100_sxm", clock_mhz=1500.0) -> dict:
    """{'kslice': cycles per k-slice of one CTA, 'epilogue': cycles} in the model at shape m x n x k."""
    s = ladder.step(step)
    mp = machines.load(mach).at()
    sms = int(mp["sms"])
    tiles = (m // s.bm) * (n // s.bn)
    if s.persistent:
        dram, l2 = gemm.dram_bytes(s, m, n, k, min(s.grid(m, n, sms, k)[0], tiles))
        env = Env(clock_mhz, sms, min(1.0, dram / l2))
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
    t1 = replay(gemm.emulated_trace(s, *shape, gemm.K1), mp, env, sm_of)
    t2 = replay(gemm.emulated_trace(s, *shape, gemm.K2), mp, env, sm_of)
    kslice = (t2.cycles - t1.cycles) / ((gemm.K2 - gemm.K1) // ladder.BK)
    consumer = (0, 4) if s.threads > 128 else (0, 0)
    log = t2.warps[consumer]
    waits = [x for x in log if x[1] == "mma_wait"]
    stores = [x for x in log if x[1] in ("st_global", "st_shared", "tma_store", "bulk_wait_read", "bulk_wait")]
    epi = (stores[-1][2] - waits[-1][3]) if waits and stores else float("nan")
    return {"kslice": kslice, "epilogue": epi}


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


def table() -> str:
    lines = ["One tile's phases: the model's timeline vs CTA 0's GEMM_STAMPS timeline on a GPU (clock64 cycles)",
             f"{'step':22s} {'GPU, shape':18s} {'MHz':>5s} {'k-slice: GPU':>13s} {'model':>7s} {'ratio':>6s}   "
             f"{'epilogue: GPU':>13s} {'model':>7s} {'ratio':>6s}"]
    n = ok = 0
    for label, mach, shape, meas in (("H100, 4096^3", "h100_sxm", (4096,) * 3, recorded_h100()),
                                     ("H200, 8192^3", "h200", (8192,) * 3, probed_h200())):
        for name, (ks, ep, mhz) in meas.items():
            p = model_phases(name, *shape, mach=mach, clock_mhz=mhz)
            r1, r2 = p["kslice"] / ks, p["epilogue"] / ep
            for r in (r1, r2):
                n += 1
                ok += abs(r - 1) <= TOLERANCE
            lines.append(f"{name:22s} {label:18s} {mhz:5.0f} {ks:13.0f} {p['kslice']:7.0f} {r1:6.2f}   "
                         f"{ep:13.0f} {p['epilogue']:7.0f} {r2:6.2f}")
    lines.append(f"\nwithin +-{TOLERANCE:.0%}: {ok} of {n} phases")
    return "\n".join(lines)
