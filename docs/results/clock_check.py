"""The SM clock NVML reports against the clock the SMs count (clock64 over %globaltimer), during
sustained blocks of each Hopper ladder step at the power cap.

    python docs/results/clock_check.py --out clock_check_h200.txt      # on the GPU, 8192^3
    python docs/results/clock_check.py --shapes 4096x4096x4096 512x8192x8192 --out clock_check_shapes_h200.txt
    python docs/results/clock_check.py --emulate                        # no GPU

The timing model turns predicted cycles into time with "the SM clock measured during the rung's
blocks"; the sustained protocol measures it with NVML. This script runs each step (built with
-DGEMM_STAMPS: CTA 0 stamps %globaltimer and clock64 as it goes) in a block of back-to-back launches
after a warm-up with the library GEMM (torch.mm), as the protocol does; every 20 launches it reads CTA 0's
stamps of the last launch: (last clock64 - first clock64) / (last ns - first ns) is the clock that SM
ran at. NVML is sampled through the same block (bwlab.checks.clocks). Per launch: the time (CUDA
events), and cycles = that time x each clock. --emulate runs two steps small in bwlab's PTX emulator:
it proves the stamps' reading, not the numbers (the emulator's clock is virtual).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bwlab.checks.common import probe_header as header  # noqa: E402
from bwlab.gemm.timeline import stamp_mhz  # noqa: E402

STEPS = ("s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "sk")
SHAPES = ((8192, 8192, 8192),)
EVERY = 20


def _shape(text):
    try:
        m, n, k = (int(x) for x in text.split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"a shape is MxNxK, e.g. 512x8192x8192; got {text!r}") from None
    return m, n, k


def run_gpu(say, shapes=SHAPES, block_s=2.0, warm_s=2.0):
    import cupy as cp
    from bwlab.checks.clocks import ClockLog
    clocks = ClockLog(cp.cuda.Device().pci_bus_id).start()
    try:
        for shape in shapes:
            if shapes != SHAPES:
                say(f"\n== {'x'.join(map(str, shape))}")
            run_shape(say, clocks, shape, block_s, warm_s)
    finally:
        clocks.stop()


def run_shape(say, clocks, shape, block_s, warm_s):
    import cupy as cp
    import torch
    from bwlab.checks.clocks import summarize
    from bwlab.gemm import runner
    from bwlab.gemm.ladder import step
    m, n, k = shape
    sets = [runner.random_operands(m, n, k, seed=m + n + k + i) for i in range(2)]
    lib = []
    for a, b in sets:
        ta, tb = torch.from_dlpack(a).view(torch.bfloat16), torch.from_dlpack(b).view(torch.bfloat16)
        tc = torch.empty((m, n), dtype=torch.bfloat16, device=ta.device)
        lib.append(lambda ta=ta, tb=tb, tc=tc: torch.mm(ta, tb.t(), out=tc))
    say(f"  clock log: {clocks.source}; {m}x{n}x{k}, 2 operand sets rotated; each block {block_s:g} s after "
        f"{warm_s:g} s of the library; CTA 0's clock read every {EVERY} launches")
    say(f"  {'step':22s} {'ms':>8s} {'NVML MHz':>16s} {'clock64 MHz':>18s} {'clock64/NVML':>12s} "
        f"{'Mcycles (NVML)':>14s} {'Mcycles (clock64)':>17s}")
    rows = []
    for short in STEPS:
        s = step(short)
        bufs = [cp.zeros(runner.STAMP_SHAPE, dtype=cp.uint64) for _ in sets]
        lns = [runner.prepare(s.name, a, b, stamps=buf) for (a, b), buf in zip(sets, bufs)]
        lns[0]()
        cp.cuda.Device().synchronize()
        res = runner.check(*sets[0], lns[0].c, s.name)
        if not res.ok:
            say(f"  {s.name}: {res}")
            continue
        t0 = time.perf_counter()
        i = 0
        while time.perf_counter() - t0 < warm_s:
            lib[i % 2]()
            i += 1
            if i % 8 == 0:
                cp.cuda.Device().synchronize()
        cp.cuda.Device().synchronize()
        clocks.mark(("block", s.name, shape))
        mhz, ms = [], []
        t0, i = time.perf_counter(), 0
        while time.perf_counter() - t0 < block_s:
            e0 = cp.cuda.Event()
            e0.record()
            for _ in range(EVERY):
                lns[i % 2]()
                i += 1
            e1 = cp.cuda.Event()
            e1.record()
            e1.synchronize()
            ms.append(cp.cuda.get_elapsed_time(e0, e1) / EVERY)
            mhz.append(stamp_mhz(cp.asnumpy(bufs[(i - 1) % 2])))
        clocks.mark(None)
        nv = summarize([c for c in clocks.samples if c[1] == ("block", s.name, shape)])
        skip = len(mhz) // 4            # the first quarter: the clock settling after the library's blocks
        t = statistics.median(ms[skip:])
        f = statistics.median(mhz[skip:])
        rows.append((s.name, t, nv.sm_mhz, f))
        say(f"  {s.name:22s} {t:8.4f} {nv.sm_mhz:6.0f} ({nv.sm_min:4.0f}-{nv.sm_max:4.0f}) "
            f"{f:6.0f} ({min(mhz[skip:]):4.0f}-{max(mhz[skip:]):4.0f}) {f / nv.sm_mhz:12.3f} "
            f"{t * nv.sm_mhz / 1e3:14.3f} {t * f / 1e3:17.3f}   ({i} launches; {nv.watts:.0f} W, "
            f"{', '.join(nv.reasons) or 'no throttle'})")
    if rows:
        r = [f / nv for _, _, nv, f in rows]
        say(f"  clock64 / NVML over the steps: median {statistics.median(r):.3f} ({min(r):.3f}-{max(r):.3f})")


def run_emulated(say):
    from bwlab.gemm import runner
    from bwlab.hw.dtypes import from_float
    rng = np.random.default_rng(1)
    for short, (m, n, k) in (("s3", (128, 256, 256)), ("s4", (256, 256, 256))):
        a = from_float(rng.random((m, k), dtype=np.float32) * 2 - 1, "bf16")
        b = from_float(rng.random((n, k), dtype=np.float32) * 2 - 1, "bf16")
        c, run = runner.run_step_emulated(short, a, b, stamps=True)
        say(f"  {short} {m}x{n}x{k}: {runner.check(a, b, c, short)}; CTA 0's clock64 / globaltimer "
            f"{stamp_mhz(run.stamps):.0f} MHz (the emulator: one tick of each per warp-instruction)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--emulate", action="store_true", help="run two steps small in the PTX emulator (no GPU)")
    ap.add_argument("--shapes", type=_shape, nargs="+", default=list(SHAPES), help="MxNxK shapes (default 8192^3)")
    ap.add_argument("--block-s", type=float, default=2.0, help="seconds of each step's block")
    ap.add_argument("--warm-s", type=float, default=2.0, help="seconds of the library before each block")
    ap.add_argument("--out", help="also write the report here")
    args = ap.parse_args(argv)
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)
    say(header(args.emulate))
    if args.emulate:
        run_emulated(say)
    else:
        run_gpu(say, tuple(args.shapes), args.block_s, args.warm_s)
    extra = ""
    if tuple(args.shapes) != SHAPES:
        extra += " --shapes " + " ".join("x".join(map(str, sh)) for sh in args.shapes)
    extra += (f" --block-s {args.block_s:g}" if args.block_s != 2.0 else "") + \
        (f" --warm-s {args.warm_s:g}" if args.warm_s != 2.0 else "")
    lines.append("# command: python docs/results/clock_check.py" + (" --emulate" if args.emulate else "") + extra +
                 (f" --out {Path(args.out).name}" if args.out else ""))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
