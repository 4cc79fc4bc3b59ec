"""Measure on a Hopper GPU what the timing model's machine description cannot take from a datasheet:
TMA load latency (L2 hit and DRAM), the mbarrier round trip, the wgmma issue rate and latency, the L2
bandwidth one SM and all SMs reach with TMA, the DRAM bandwidth, and the SM clock while streaming.

    python docs/results/timing_calibrate.py --out docs/results/timing_calibrate_h200.txt     # on the GPU
    python docs/results/timing_calibrate.py --emulate                                         # no GPU

--emulate runs the same kernels (cuda_src/timing/calibrate_sm90.cu), small, in bwlab's PTX emulator: it
proves the script and the kernels (every load lands, every wait ends), not the numbers — the emulator's
clock is virtual. Prints every number; the machine descriptions (bwlab/timing/machines/) cite the file.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bwlab.checks.common import probe_header as header  # noqa: E402
from bwlab.runtime import EMULATED, GPU, encode_tensor_map, launch, tensor_map_arg  # noqa: E402
from bwlab.tma.tensor_map import TensorMap  # noqa: E402

SRC = "timing/calibrate_sm90.cu"
WGMMA_FLOP = 2 * 64 * 256 * 16


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--emulate", action="store_true", help="run small in the PTX emulator (no GPU)")
    ap.add_argument("--out", help="also write the report here")
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
        sms, reps_lat, reps_pp, reps_mma, loads = 2, 4, 8, 4, 12
    else:
        import cupy
        sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
        reps_lat, reps_pp, reps_mma, loads = 64, 2000, 512, 3000
    say(f"SMs: {sms}")

    def tmap(rows, box_rows):
        buf = xp.zeros((rows, 64), np.uint16)
        enc = encode_tensor_map(TensorMap("bfloat16", (64, rows), (64, box_rows), swizzle="128B"), buf.data.ptr)
        return buf, tensor_map_arg(enc)

    def flush_l2():
        if not emu:
            junk = xp.zeros(64 * 2**20, np.float32)    # 256 MiB written: L2 (50 MiB) holds none of the tensors after
            junk.fill(1.0)
            xp.cuda.Device().synchronize()

    # ---- 1. TMA load latency ---------------------------------------------------------------------
    say("\n== TMA load latency: one thread, one box in flight, clock64 from arrive.expect_tx to the wait's success")
    say(f"  {'box':>14s} {'L2 hit (median)':>16s} {'min':>6s} {'DRAM (median)':>14s} {'min':>6s}")
    lat = {}
    for box_rows in (64, 128, 256):
        nbytes = 128 * box_rows
        buf, tm = tmap(reps_lat * box_rows, box_rows)
        out = xp.zeros(reps_lat, np.uint64)
        launch(mod, "tma_latency", (1, 1, 1), (32, 1, 1), (tm, out, np.int32(reps_lat), np.int32(0), np.int32(nbytes)),
               shared_mem=nbytes + 1024)
        hit = get(out)[1:].astype(float)
        flush_l2()
        out2 = xp.zeros(reps_lat, np.uint64)
        launch(mod, "tma_latency", (1, 1, 1), (32, 1, 1),
               (tm, out2, np.int32(reps_lat), np.int32(box_rows), np.int32(nbytes)), shared_mem=nbytes + 1024)
        miss = get(out2).astype(float)
        if not (hit > 0).all() or not (miss > 0).all():
            raise SystemExit(f"tma_latency: a load reported no time ({hit}, {miss})")
        lat[box_rows] = (np.median(hit), np.median(miss))
        say(f"  64 x {box_rows:3d} ({nbytes // 1024:2d} KiB) {np.median(hit):16.0f} {hit.min():6.0f} "
            f"{np.median(miss):14.0f} {miss.min():6.0f}")

    # ---- 2. mbarrier round trip ----------------------------------------------------------------------
    out = xp.zeros(1, np.uint64)
    launch(mod, "mbar_pingpong", (1, 1, 1), (64, 1, 1), (out, np.int32(reps_pp)))
    rt = float(get(out)[0]) / reps_pp
    say(f"\n== mbarrier round trip (two warps, arrive -> try_wait succeeds, and back): {rt:.1f} cycles "
        f"({reps_pp} round trips); one hop ~ {rt / 2:.1f}")

    # ---- 3. wgmma rate and latency ---------------------------------------------------------------
    say("\n== wgmma m64n256k16 bf16 (both operands from SMEM)")
    for wgs in (1, 2, 3):
        out = xp.zeros(2 * wgs, np.uint64)
        launch(mod, "wgmma_rate", (1, 1, 1), (128 * wgs, 1, 1), (out, np.int32(reps_mma), np.int32(0)),
               shared_mem=8192 + 32768 + 1024)
        cyc = get(out)[0::2].astype(float)
        per = cyc.max() / (4 * reps_mma)
        flops = wgs * 4 * reps_mma * WGMMA_FLOP / cyc.max()
        say(f"  {wgs} warpgroup(s), 2 groups of 4 in flight: {per:7.1f} cycles per wgmma per warpgroup, "
            f"{flops:7.0f} FLOP per SM-cycle")
    out = xp.zeros(2, np.uint64)
    launch(mod, "wgmma_rate", (1, 1, 1), (128, 1, 1), (out, np.int32(max(4, reps_mma // 8)), np.int32(1)),
           shared_mem=8192 + 32768 + 1024)
    say(f"  one wgmma, commit, wait_group 0, repeated: {float(get(out)[0]) / max(4, reps_mma // 8):.1f} cycles each "
        "(issue + latency)")

    # ---- 4. bandwidth ------------------------------------------------------------------------------
    say("\n== TMA streaming (boxes of 64 x 256 bf16 = 32 KiB, 6 in flight per CTA, one CTA per SM)")
    box_rows = 256
    nbytes = 128 * box_rows

    def stream(ctas, rows_per_cta, total_rows, shared, n_loads):
        buf, tm = tmap(total_rows, box_rows)
        flush_l2()
        out = xp.zeros(4 * ctas, np.uint64)
        launch(mod, "stream", (ctas, 1, 1), (32, 1, 1),
               (tm, out, np.int32(n_loads), np.int32(rows_per_cta), np.int32(box_rows), np.int32(int(shared))),
               shared_mem=6 * nbytes + 1024)
        o = get(out).reshape(ctas, 4).astype(float)
        cyc = o[:, 1] - o[:, 0]
        ns = o[:, 3] - o[:, 2]
        if not (cyc > 0).all():
            raise SystemExit("stream: a CTA reported no time")
        per_sm = n_loads * nbytes / cyc                  # bytes per SM-cycle, per CTA
        span_ns = o[:, 3].max() - o[:, 2].min()
        chip = ctas * n_loads * nbytes / span_ns         # bytes per ns = GB/s
        mhz = np.median(cyc / np.maximum(ns, 1)) * 1e3
        return per_sm, chip, mhz

    l2_rows = 8 * 2**20 // 128 if not emu else 8 * box_rows       # 8 MiB read over and over: L2 hits
    warm = l2_rows
    per_sm, chip, mhz = stream(1, l2_rows, l2_rows, True, loads)
    say(f"  L2 hits, 1 SM alone:   {np.median(per_sm):6.1f} bytes/SM-cycle  ({chip / 1e3:6.2f} TB/s; SM clock {mhz:.0f} MHz)")
    per_sm, chip, mhz = stream(sms, l2_rows, warm, True, loads)
    say(f"  L2 hits, {sms} SMs:      {np.median(per_sm):6.1f} bytes/SM-cycle per SM (min {per_sm.min():.1f}), "
        f"{np.median(per_sm) * sms:7.0f} bytes/cycle for the chip; {chip / 1e3:6.2f} TB/s at SM clock {mhz:.0f} MHz")
    if emu:
        dram_rows = 16 * box_rows
    else:
        dram_rows = (4 * 2**30 // 128 // sms) // box_rows * box_rows    # 4 GiB in all, each CTA its own slice
    n = dram_rows // box_rows
    per_sm, chip, mhz = stream(sms, dram_rows, dram_rows * sms, False, n)
    say(f"  DRAM, {sms} SMs, each box once: {np.median(per_sm):6.1f} bytes/SM-cycle per SM, {chip / 1e3:6.2f} TB/s "
        f"at SM clock {mhz:.0f} MHz ({n} boxes per SM, {dram_rows * sms * 128 / 2**30:.2f} GiB)")

    cmd = "python docs/results/timing_calibrate.py" + (" --emulate" if emu else "") + \
          (f" --out {Path(args.out).name}" if args.out else "")
    say(f"\n# command: {cmd}")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
