"""Second calibration run of the timing model on a Hopper GPU: what the first (timing_calibrate.py) left open.

    python docs/results/timing_probe.py --out docs/results/timing_probe_h200.txt     # on the GPU
    python docs/results/timing_probe.py --emulate                                    # no GPU: proves the kernels
    python docs/results/timing_probe.py --steps s1 s2 s3 s4 s5 s6 s7 s8 sk --ladder-only --out docs/results/timing_probe_more_h200.txt

1. the ladder's direct epilogue (st.global.u32, 8 sectors per warp instruction): cycles per sector for
   one SM alone and for every SM at once;
2. L2 streaming right after 6 s of cuBLAS bf16 GEMMs (the power cap has lowered the clock): does the L2
   deliver the same bytes per second, or the same bytes per SM-cycle, when the SMs slow down?
3. the ladder's steps s2, s3, s4, s6 at 8192^3 on this GPU: CTA 0's GEMM_STAMPS timeline (cycles per
   k-slice, epilogue) and the time of 5 launches with the SM clock from clock64 / globaltimer.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bwlab.runtime import EMULATED, GPU, encode_tensor_map, launch, tensor_map_arg  # noqa: E402
from bwlab.tma.tensor_map import TensorMap  # noqa: E402
from timing_calibrate import header  # noqa: E402

SRC = "timing/calibrate_sm90.cu"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--emulate", action="store_true")
    ap.add_argument("--out")
    ap.add_argument("--steps", nargs="+", default=["s2", "s3", "s4", "s6"], help="section 3's ladder steps")
    ap.add_argument("--ladder-only", action="store_true", help="section 3 alone (the ladder steps' timelines)")
    args = ap.parse_args(argv)
    emu = args.emulate
    be = EMULATED if emu else GPU
    xp = be.xp
    mod = be.load(SRC)
    lines = [header(emu)]

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    def get(a):
        return np.asarray(a.get())
    if emu:
        sms, reps = 2, 1
    else:
        import cupy
        sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
        reps = 8

    if not args.ladder_only:   # sections 1 and 2
        # ---- 1. epilogue stores ------------------------------------------------------------------------
        say("== the ladder's direct epilogue: 2 warpgroups x 64 st.global.u32 per thread per 128 x 256 tile")
        for ctas in (1, sms):
            rows = 128 * ctas * reps
            c = xp.zeros((rows, 256), np.uint16)
            out = xp.zeros(4 * ctas, np.uint64)
            for _ in range(1 if emu else 3):
                launch(mod, "store_epilogue", (ctas, 1, 1), (256, 1, 1), (c, np.int32(256), np.int32(reps), out))
            o = get(out).reshape(ctas, 4).astype(float)
            cyc = np.median(o[:, 0]) / reps
            sectors = 8 * 64 * 8
            say(f"  {ctas:3d} CTA(s), one per SM: {cyc:8.0f} cycles per tile = {cyc / sectors:5.2f} cycles per sector "
                f"(SM clock {np.median(o[:, 0] / np.maximum(o[:, 1], 1)) * 1e3:.0f} MHz)")

        # ---- 2. L2 streaming at the power cap ------------------------------------------------------------
        say("\n== L2 streaming (64 x 256 bf16 boxes, 6 in flight per SM, all SMs) right after 6 s of 8192^3 bf16 GEMMs")
        box_rows, nbytes = 256, 128 * 256
        l2_rows = 8 * 2**20 // 128 if not emu else 8 * box_rows
        buf = xp.zeros((l2_rows, 64), np.uint16)
        tm = tensor_map_arg(encode_tensor_map(TensorMap("bfloat16", (64, l2_rows), (64, box_rows), swizzle="128B"),
                                              buf.data.ptr))
        loads = 12 if emu else 3000
        for hot in ((False, True) if not emu else (False,)):
            if hot:
                import time
                import torch
                a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
                b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
                t0 = time.time()
                while time.time() - t0 < 6.0:
                    for _ in range(20):
                        a @ b
                    torch.cuda.synchronize()
            out = xp.zeros(4 * sms, np.uint64)
            launch(mod, "stream", (sms, 1, 1), (32, 1, 1),
                   (tm, out, np.int32(loads), np.int32(l2_rows), np.int32(box_rows), np.int32(1)), shared_mem=6 * nbytes + 1024)
            o = get(out).reshape(sms, 4).astype(float)
            cyc, ns = o[:, 1] - o[:, 0], o[:, 3] - o[:, 2]
            per_sm = loads * nbytes / cyc
            chip = sms * loads * nbytes / (o[:, 3].max() - o[:, 2].min())
            mhz = np.median(cyc / np.maximum(ns, 1)) * 1e3
            say(f"  {'after GEMMs' if hot else 'idle GPU   '}: {np.median(per_sm):5.1f} bytes/SM-cycle per SM, "
                f"{chip / 1e3:5.2f} TB/s, SM clock {mhz:.0f} MHz")

        # ---- 3. the ladder on this GPU ----------------------------------------------------------------------

    if not emu:
        import cupy as cp
        from bwlab.gemm import runner
        from bwlab.gemm.timeline import step_timeline
        say("\n== ladder steps at 8192^3 on this GPU: 5 launches (CUDA events), CTA 0's GEMM_STAMPS timeline")
        a, b = runner.random_operands(8192, 8192, 8192)
        for name in args.steps:
          try:
            launch_ = runner.prepare(name, a, b)
            launch_()
            ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
            ev0.record()
            for _ in range(5):
                launch_()
            ev1.record()
            ev1.synchronize()
            ms = cp.cuda.get_elapsed_time(ev0, ev1) / 5
            _, st = runner.run_stamps(name, a, b)

            class Rec(dict):
                params = {"stamp_shape": [8192, 8192, 8192]}
            tl = step_timeline(Rec(steps=np.array([runner.step(name).name]), stamps=st[None]), name)
            bars = tl.bars[1]
            ok = ~np.isnan(bars[:, 0])
            per = np.diff(bars[ok][:, 0])
            epi = tl.bars[3]
            say(f"  {runner.step(name).name:22s} {ms:7.4f} ms  SM clock {tl.clock_ghz * 1e3:5.0f} MHz "
                f"({ms * tl.clock_ghz * 1e6:10,.0f} cycles); k-slice period median {np.median(per[4:]):6.0f} cycles "
                f"(first landing {bars[ok][0, 0]:6.0f}); epilogue median "
                f"{np.nanmedian(epi[:, 1] - epi[:, 0]) if len(epi) else float('nan'):6.0f} cycles")
          except Exception as e:   # one step's failure is reported, the others still run
            say(f"  {name}: failed: {type(e).__name__}: {e}")
    cmd = "python docs/results/timing_probe.py" + (" --emulate" if emu else "") + \
          (" --steps " + " ".join(args.steps) if args.steps != ["s2", "s3", "s4", "s6"] else "") + \
          (" --ladder-only" if args.ladder_only else "") + \
          (f" --out {Path(args.out).name}" if args.out else "")
    say(f"\n# command: {cmd}")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
