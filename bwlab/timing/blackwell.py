"""Predicting the Blackwell ladder (cuda_src/gemm_sm100/, s1-s6) on a B200, beside published ladders.

    python -m bwlab.timing blackwell --out docs/results/timing_b200.txt

No B200 was measured by this project: the prediction is a range, from the B200 description's numbers
at the ends of their ranges ('fast' / 'slow', bwlab/timing/machines/b200.py), with the point value
between. The method is bwlab.timing.gemm's (emulate a few tiles, replay them on the machine, extrapolate
linearly in K and in tiles per CTA); the emulator runs the kernels' sm_100a PTX, tcgen05 included.

Published ladders are compared as ratios to each source's own cuBLAS (the sources' cuBLAS figures differ
by ~30 %, 1,359 to 1,761 TFLOP/s at 4096^3): see PUBLISHED.
"""
from __future__ import annotations

import math

import numpy as np

from ..gemm import order as tile_order
from ..gemm import sm100
from . import machine as machines
from .gemm import K1, K2, Prediction, launch_rounds
from .model import Env, replay
from .trace import Recorder

__all__ = ["predict_sm100", "PUBLISHED", "table", "beside_published", "parse_table", "committed_summary", "COMMITTED"]

_TRACES: dict = {}
CLOCK_MHZ = 1850     # a B200 under a bf16 GEMM's sustained load: the datasheet's 2.25 PF / (148 x 8192) = 1.86 GHz

# Published B200 bf16/fp16 GEMM ladders: (source, shape, cuBLAS TFLOP/s, [(step, TFLOP/s)], the bwlab step
# each is closest to). Ratios to each source's own cuBLAS are what can be compared.
PUBLISHED = [
    ("gau-nernst, learn-cuda 02e tcgen05 ladder (B200, bf16; github.com/gau-nernst/learn-cuda)", 4096, 1358.7,
     [("128B swizzle, one stage", 699.0, "s1"), ("pipelining", 914.0, "s2"), ("warp specialisation", 1054.0, "s3"),
      ("2-SM MMA", 1170.0, "s5"), ("persistent", 1273.0, "s4"), ("last version", 1326.0, "s6")]),
    ("Modular, Matrix Multiplication on Blackwell part 4 (B200; modular.com/blog)", 4096, 1772.0 / 1.006,
     [("CLC-scheduled persistent kernel", 1772.0, "s6")]),
    ("NVIDIA Tilus, Matmul (Blackwell) tutorial (B200, fp16, 8192^3; nvidia.github.io/tilus)", 8192, 1610.0,
     [("V0 minimal kernel", 491.0, "s1"), ("V6 (matches cuBLAS)", 1610.0, "s6")]),
]


def _trace(step, m, n, k, seed=0):
    key = (step, m, n, k, seed)
    tr = _TRACES.get(key)
    if tr is None:
        from ..hw.dtypes import from_float
        rng = np.random.default_rng(seed)
        a = from_float(rng.random((m, k), dtype=np.float32) * 2 - 1, "bf16")
        b = from_float(rng.random((n, k), dtype=np.float32) * 2 - 1, "bf16")
        rec = Recorder()
        sm100.run_sm100_emulated(step, a, b, sms=1, seed=seed, timing=rec)
        tr = _TRACES[key] = rec.trace
    return tr


def _dram(info, m, n, k, concurrent):
    bm, bn = info["tile"]
    tiles_m, tiles_n = m // bm, n // bn
    if info["persistent"]:
        order = tile_order.grouped_order(tiles_m, tiles_n, 8)
    else:
        rows, cols = np.divmod(np.arange(tiles_m * tiles_n), tiles_n)
        order = np.stack([rows, cols], axis=1)
    dram = 0
    for i in range(0, len(order), concurrent):
        w = order[i:i + concurrent]
        dram += (len(np.unique(w[:, 0])) * bm + len(np.unique(w[:, 1])) * bn) * k * 2
    l2 = tiles_m * tiles_n * (bm + bn) * k * 2     # a pair's tile: each CTA loads half of A and half of B
    return dram, l2


def predict_sm100(step: int, m: int, n: int, k: int, machine="b200", clock_mhz: float | None = None,
                  which: str = "value") -> Prediction:
    info = sm100.step_info(step)
    sm100.require_problem(step, m, n, k)
    mach = machines.load(machine) if isinstance(machine, str) else machine
    if mach.arch != "sm_100a":
        raise ValueError(f"the Blackwell ladder is sm_100a; {mach.name} is {mach.arch}")
    mp = mach.at(which)
    clock = float(clock_mhz or CLOCK_MHZ)
    sms = int(mp["sms"])
    bm, bn = info["tile"]
    tiles = (m // bm) * (n // bn)
    parts = {}
    if not info["persistent"]:
        occ = max(1, min(int(mp["smem_per_sm"]) // (info["smem_bytes"] + 1024), 512 // info["tmem_cols"],
                         2048 // info["threads"]))
        slots = sms * occ
        rounds = launch_rounds(tiles, sms, occ)
        dram, l2 = _dram(info, m, n, k, min(slots, tiles))
        env = Env(clock, min(sms, math.ceil(tiles / occ)), min(1.0, dram / l2))
        one_sm = (lambda cta, cid, rank: 0)
        t1 = replay(_trace(step, bm, bn * occ, K1), mp, env, one_sm, keep_log=False).cycles
        t2 = replay(_trace(step, bm, bn * occ, K2), mp, env, one_sm, keep_log=False).cycles
        per_round = t1 + (k - K1) * (t2 - t1) / (K2 - K1)
        cycles = rounds * per_round
        parts.update(how=f"{rounds:.4g} rounds of {occ} CTA(s) per SM, {per_round:,.0f} cycles each; L2 miss {env.miss:.2f}")
    else:
        cl = info["cluster"]
        units = min(tiles, sms // cl)
        per_cta = math.ceil(tiles / units)
        dram, l2 = _dram(info, m, n, k, units)
        env = Env(clock, min(sms, units * cl), min(1.0, dram / l2))
        r11 = replay(_trace(step, bm, bn, K1), mp, env, keep_log=False).cycles
        r12 = replay(_trace(step, bm, bn, K2), mp, env, keep_log=False).cycles
        r21 = replay(_trace(step, bm, 2 * bn, K1), mp, env, keep_log=False).cycles
        c = (r12 - r11) / (K2 - K1)
        b = r21 - r11 - c * K1
        a = r11 - (b + c * K1)
        per_tile = b + c * k
        cycles = a + per_cta * per_tile
        parts.update(how=f"{per_cta} tiles on the busiest of {units} CTA{'s' if cl == 1 else ' pairs'}, "
                         f"{per_tile:,.0f} cycles each + {a:,.0f}; L2 miss {env.miss:.2f}")
    cycles += mp["launch_us"] * clock
    ms = cycles / (clock * 1e3)
    return Prediction(info["name"], (m, n, k), mach.name, clock, cycles, ms, 2.0 * m * n * k / (ms * 1e-3) / 1e12, parts)


def table(shapes=((4096, 4096, 4096), (8192, 8192, 8192))) -> str:
    lines = [f"Blackwell ladder (cuda_src/gemm_sm100/) on a B200: PREDICTED by bwlab.timing (no B200 measured here), "
             f"at an SM clock of {CLOCK_MHZ} MHz; range: the B200 description's uncertain numbers at their fast / slow ends",
             f"{'step':16s} {'shape':>16s} {'TFLOP/s':>8s} {'range':>15s}  how"]
    pred = {}
    for shape in shapes:
        for st in range(1, 7):
            p = predict_sm100(st, *shape)
            f = predict_sm100(st, *shape, which="fast")
            s = predict_sm100(st, *shape, which="slow")
            lo, hi = sorted((s.tflops, f.tflops))
            pred[(f"s{st}", shape[0])] = (p.tflops, lo, hi)
            lines.append(f"{p.step:16s} {'x'.join(map(str, shape)):>16s} {p.tflops:8.0f} {lo:6.0f}-{hi:6.0f}  {p.parts['how']}")
    lines.append("")
    lines += beside_published(pred)
    return "\n".join(lines)


def beside_published(pred: dict) -> list:
    """Lines setting the predictions {("sN", size): (TFLOP/s, lo, hi)} beside the published ladders (PUBLISHED),
    each as a fraction of its source's own cuBLAS."""
    lines = ["Beside published ladders, as fractions of each source's own cuBLAS (the bwlab prediction divided by "
             "the source's cuBLAS figure at the same shape: the sources' cuBLAS differ by ~30 %)",
             f"{'source step':44s} {'TFLOP/s':>8s} {'/cuBLAS':>8s}   {'bwlab step':10s} "
             f"{'predicted/cuBLAS (range)':>26s}"]
    for src, size, cublas, steps in PUBLISHED:
        lines.append(f"{src} (cuBLAS {cublas:.0f} at {size}^3)")
        for name, tf, ours in steps:
            got = pred.get((ours, size))
            mine = (f"{got[0] / cublas:5.2f} ({got[1] / cublas:4.2f}-{got[2] / cublas:4.2f})" if got else "n/a")
            lines.append(f"  {name:42s} {tf:8.0f} {tf / cublas:8.2f}   {ours:10s} {mine:>26s}")
    return lines


COMMITTED = "timing_b200.txt"      # docs/results/: `python -m bwlab.timing blackwell --out docs/results/timing_b200.txt`


def parse_table(text: str) -> dict:
    """{("sN", size): (TFLOP/s, lo, hi)} from a table `table()` wrote (its square shapes)."""
    out = {}
    for line in text.splitlines():
        f = line.replace("-", " ").split()
        if len(f) > 5 and f[0][:1] == "s" and f[0][1:2].isdigit() and f[1].count("x") == 2:
            size = int(f[1].split("x")[0])
            out[(f[0].split("_")[0], size)] = (float(f[2]), float(f[3]), float(f[4]))
    return out


def committed_summary(text: str | None = None) -> str:
    """The committed B200 predictions (docs/results/timing_b200.txt) as a short table per step, with their
    ranges, and beside the published ladders: what notebook 07 prints (the table takes minutes to compute)."""
    if text is None:
        from ..results import report_text
        text = report_text(COMMITTED)
    pred = parse_table(text)
    sizes = sorted({size for _, size in pred})
    names = {f"s{i}": sm100.step_info(i)["name"] for i in range(1, 7)}
    lines = [f"PREDICTED by the timing model (B200 description) at an SM clock of {CLOCK_MHZ} MHz, not measured:",
             "TFLOP/s (range: the description's uncertain numbers at their fast / slow ends)",
             f"{'step':16s}" + "".join(f"{f'{s}^3':>22s}" for s in sizes)]
    for short, name in names.items():
        cells = "".join(f"{'%.0f (%.0f-%.0f)' % pred[(short, s)]:>22s}" if (short, s) in pred else f"{'n/a':>22s}"
                        for s in sizes)
        lines.append(f"{name:16s}{cells}")
    lines.append("")
    lines += beside_published(pred)
    return "\n".join(lines)
