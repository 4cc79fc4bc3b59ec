"""The capstone's predicted speed: how fast the learner's Hopper kernel would run on an H100, without a GPU.

The kernel is run in the emulator on one SM - one tile at two depths and two tiles at the first - and each run's
trace is replayed by bwlab.timing on the H100 SXM description; the full GEMM is extrapolated as bwlab.timing.gemm
does for the ladder's persistent steps (docs/timing.md): a fixed cost plus the busiest CTA's tiles, the DRAM traffic
estimated from the tiles running at once (the capstone walks its tiles in step 4's order, with step 4's tile). A
prediction, never a measurement: notebook 07 and docs/results/timing_hopper.txt say how close the model comes to
the measured ladder (step 4 within its +-15 %).
"""
from __future__ import annotations

import math

from .runner import constants, random_operands, run_emulated

__all__ = ["predict"]

_TRACES: dict = {}


def _trace(asm, m: int, n: int, k: int):
    from ..timing.trace import Recorder
    key = (asm.text, m, n, k)
    if key not in _TRACES:
        a, b = random_operands(m, n, k, 0)
        rec = Recorder()
        run_emulated(asm, a, b, sms=1, seed=0, timing=rec)
        _TRACES[key] = rec.trace
    return _TRACES[key]


def predict(asm, m: int = 8192, n: int = 8192, k: int = 8192, machine: str = "h100_sxm", which: str = "value"):
    """The predicted time of the assembled Hopper capstone kernel `asm` at m x n x k (a
    bwlab.timing.gemm.Prediction, named 'capstone'). Raises what the emulator raises when the kernel is wrong."""
    from ..gemm import ladder
    from ..timing import machine as machines
    from ..timing.gemm import K1, K2, Prediction, dram_bytes
    from ..timing.model import Env, replay
    if asm.kernel != "hopper":
        raise ValueError("the timing model describes Hopper GPUs and the Hopper capstone; the Blackwell twin's speed "
                         "is not predicted here (docs/results/timing_b200.txt has the sm_100a ladder's ranges)")
    c = constants("hopper")
    s4 = ladder.step("s4")
    if (c["BM"], c["BN"]) != (s4.bm, s4.bn):
        raise ValueError(f"the capstone's tile {c['BM']} x {c['BN']} is not step 4's {s4.bm} x {s4.bn}: the DRAM "
                         "estimate borrows step 4's tile order")
    ladder.require_shape(s4, m, n, k)
    mp = machines.load(machine).at(which)
    clock, sms = float(mp["max_clock_mhz"]), int(mp["sms"])
    tiles = (m // c["BM"]) * (n // c["BN"])
    grid = min(sms, tiles)
    per_cta = math.ceil(tiles / grid)
    dram, l2 = dram_bytes(s4, m, n, k, grid)
    env = Env(clock, grid, min(1.0, dram / l2))
    r11 = replay(_trace(asm, c["BM"], c["BN"], K1), mp, env, keep_log=False).cycles
    r12 = replay(_trace(asm, c["BM"], c["BN"], K2), mp, env, keep_log=False).cycles
    r21 = replay(_trace(asm, c["BM"], 2 * c["BN"], K1), mp, env, keep_log=False).cycles
    slope = (r12 - r11) / (K2 - K1)
    per_tile_fixed = r21 - r11 - slope * K1
    fixed = r11 - (per_tile_fixed + slope * K1)
    per_tile = per_tile_fixed + slope * k
    cycles = fixed + per_cta * per_tile + mp["launch_us"] * clock
    ms = cycles / (clock * 1e3)
    return Prediction("capstone", (m, n, k), machines.load(machine).name, clock, cycles, ms,
                      2.0 * m * n * k / (ms * 1e-3) / 1e12,
                      {"how": f"{per_cta} tiles on the busiest of {grid} CTAs, {per_tile:,.0f} cycles each + "
                              f"{fixed:,.0f}; L2 miss {env.miss:.2f}", "per_cta": per_cta, "per_tile": per_tile})
