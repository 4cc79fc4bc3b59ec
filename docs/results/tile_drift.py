"""How the tiles of the ladder's non-persistent step 3 and persistent step 4 sit in time on a Hopper GPU,
and the DRAM bytes and L2 hit rate they cause (Nsight Compute).

    python docs/results/tile_drift.py --out tile_drift_h200.txt --npz tile_drift_h200.npz    # on the GPU
    python docs/results/tile_drift.py --emulate                                               # no GPU
    python docs/results/tile_drift.py --analyze docs/results/tile_drift_h200.npz              # no GPU

Each step's kernel file is run with a few lines added (nothing else changed; C is checked): every tile
records when it starts and ends (%globaltimer, and %clock64 of its SM) and on which SM (%smid). Step 3
launches one CTA per tile, and the block scheduler hands the next CTA (in blockIdx order) to whichever
SM frees first; step 4's 132 CTAs walk their own tiles. After about a second of back-to-back launches
(the power cap reached), three launches of each are logged. Then, where Nsight Compute is installed,
one launch of each (after one unprofiled) is measured: DRAM bytes read and written, the L2 hit rate,
the time and the SM clock.

--analyze replays the logged tiles' loads through an ideal LRU cache of a given capacity (each tile
reads its A and B k-slices evenly over its time), which turns the measured schedule into DRAM bytes:
the question it answers is how many bytes that schedule costs with 60 MiB of L2 (the H200) and with 50
(the H100). --emulate runs small problems in bwlab's PTX emulator: it proves the added lines and the
script, not the numbers (the emulator's clock is virtual).
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import subprocess
import sys
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bwlab.checks.common import probe_header as header  # noqa: E402

CASES = (("s3_warp_specialized", 8192), ("s4_persistent", 8192), ("s3_warp_specialized", 4096),
         ("s4_persistent", 4096))
EMU_CASES = (("s3_warp_specialized", 256, 512, 128), ("s4_persistent", 256, 1024, 128))
METRICS = ("dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum,"
           "sm__cycles_elapsed.avg.per_second")
FIELDS = 8      # per tile: start ns, start clock64, smid, end ns (consumer 0), end ns (consumer 1), end clock64, CTA, 0
LOGGED = 3

# The lines added to each step (the kernel's `stamps` argument carries the log; the benchmark builds and
# GEMM_STAMPS never see these lines). Step 3: the tile is the CTA.
S3_EDITS = (
    ("const int wg = threadIdx.x / WG, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, k_tiles = K / BK;",
     "const int wg = threadIdx.x / WG, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, k_tiles = K / BK;\n"
     "    u64* tlog = stamps + 8 * (blockIdx.y * gridDim.x + blockIdx.x);\n"
     "    if (threadIdx.x == 0) { u32 sm; asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(sm)); "
     "tlog[0] = globaltimer_ns(); tlog[1] = clock64(); tlog[2] = sm; tlog[6] = blockIdx.x; }"),
    ("    store_rows<BN>(d, C, N, m0 + 64 * c, n0);\n",
     "    store_rows<BN>(d, C, N, m0 + 64 * c, n0);\n"
     "    if (lead) { tlog[3 + c] = globaltimer_ns(); if (c == 0) tlog[5] = clock64(); }\n"),
)
# Step 4: the tile is tile index t of the grouped order; its start is when consumer 0 begins it.
S4_EDITS = (
    ("        const int2 tile = tile_of<GROUP_M>(t, tiles_m, tiles_n);\n        zero(d);",
     "        const int2 tile = tile_of<GROUP_M>(t, tiles_m, tiles_n);\n"
     "        u64* tlog = stamps + 8 * t;\n"
     "        if (lead && c == 0) { u32 sm; asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(sm)); "
     "tlog[0] = globaltimer_ns(); tlog[1] = clock64(); tlog[2] = sm; tlog[6] = blockIdx.x; }\n"
     "        zero(d);"),
    ("        store_rows<BN>(d, C, N, tile.x * BM + 64 * c, tile.y * BN);\n",
     "        store_rows<BN>(d, C, N, tile.x * BM + 64 * c, tile.y * BN);\n"
     "        if (lead) { tlog[3 + c] = globaltimer_ns(); if (c == 0) tlog[5] = clock64(); }\n"),
)


def logged_kernel(name):
    """The step's kernel file with the tile log added (bwlab.lab.TeachingKernel)."""
    from bwlab.gemm.ladder import step
    from bwlab.lab import TeachingKernel
    s = step(name)
    k = TeachingKernel(s.path)
    for old, new in (S3_EDITS if name.startswith("s3") else S4_EDITS):
        k = k.replace(old, new)
    return k


def tile_rc(name, m, n):
    """(row, col) of each logged tile index: blockIdx order for step 3, the grouped order for step 4."""
    from bwlab.gemm import order
    from bwlab.gemm.ladder import step
    s = step(name)
    tm, tn = m // s.bm, n // s.bn
    if name.startswith("s3"):
        r, c = np.divmod(np.arange(tm * tn), tn)
        return np.stack([r, c], axis=1)
    return order.grouped_order(tm, tn, 16)


def summarize(name, m, n, log, say, sms=132):
    """What one logged launch says: span, the SMs' clocks, the tiles' durations and how far tiles that
    share a B column-slab (same column, next row) start apart."""
    ok = log[:, 0] > 0
    if not ok.all():
        say(f"    {np.count_nonzero(~ok)} tiles not logged")
    start, end = log[:, 0].astype(np.int64), np.maximum(log[:, 3], log[:, 4]).astype(np.int64)
    t0 = start.min()
    dur = end - start
    clk = (log[:, 5].astype(np.float64) - log[:, 1]) / np.maximum(1, log[:, 3].astype(np.float64) - log[:, 0])
    rc = tile_rc(name, m, n)
    where = {(r, c): i for i, (r, c) in enumerate(rc)}
    nxt = [(i, where[(r + 1, c)]) for i, (r, c) in enumerate(rc) if (r + 1, c) in where]
    off = np.array([abs(start[j] - start[i]) for i, j in nxt]) / 1e3
    say(f"    span {(end.max() - t0) / 1e3:8.1f} us; tile {np.median(dur) / 1e3:6.1f} us median "
        f"({np.percentile(dur, 5) / 1e3:.1f}-{np.percentile(dur, 95) / 1e3:.1f} p5-p95); SM clock (clock64 / "
        f"globaltimer per tile) {np.median(clk) * 1e3:.0f} MHz ({np.percentile(clk, 5) * 1e3:.0f}-"
        f"{np.percentile(clk, 95) * 1e3:.0f}); {len(np.unique(log[:, 2]))} SMs")
    say(f"    tiles sharing a B slab (same column, next row) start apart: median {np.median(off):.1f} us, "
        f"p90 {np.percentile(off, 90):.1f}, max {off.max():.1f}")
    if name.startswith("s3"):
        order_ = np.argsort(start, kind="stable")
        inv = np.count_nonzero(np.diff(order_) < 0)
        say(f"    dispatch: tiles sorted by start time are in blockIdx order but for {inv} of {len(order_) - 1} "
            "neighbours")
        for r in sorted({0, 1, 2, 4, 8, len(start) // sms - 1}):
            idx = np.arange(r * sms, min((r + 1) * sms, len(start)))
            if len(idx):
                say(f"    CTAs {idx[0]:4d}-{idx[-1]:4d}: start spread {(start[idx].max() - start[idx].min()) / 1e3:7.1f} us, "
                    f"first start {(start[idx].min() - t0) / 1e3:8.1f} us")


def operands(size, cache={}):
    """Two operand sets of size^3 (A + B of the two: more than the L2 at 8192^3), made once per size."""
    from bwlab.gemm import runner
    if size not in cache:
        cache.clear()
        cache[size] = [runner.random_operands(size, size, size, seed=size + i) for i in range(2)]
    return cache[size]


def run_gpu(say, npz):
    import cupy as cp
    from bwlab.checks.clocks import ClockLog, summarize as clock_summary
    from bwlab.device import gpu_info
    from bwlab.gemm import runner
    sms = gpu_info().sm_count
    clocks = ClockLog(cp.cuda.Device().pci_bus_id).start()
    saved = {}
    try:
        for name, size in CASES:
            m = n = k = size
            kern = logged_kernel(name)
            sets = operands(size)
            tiles = len(tile_rc(name, m, n))
            logs = [cp.zeros((tiles, FIELDS), dtype=cp.uint64) for _ in range(LOGGED)]
            base = [runner.prepare(name, a, b, kernel=kern) for a, b in sets]

            def with_log(ln, buf):
                return dataclasses.replace(ln, args=ln.args[:7] + (buf,) + ln.args[8:])
            plain = [with_log(ln, logs[0]) for ln in base]
            plain[0]()
            cp.cuda.Device().synchronize()
            res = runner.check(*sets[0], base[0].c, f"{name} with the tile log")
            say(f"\n== {name} {m}x{n}x{k}: {res}")
            t0 = time.perf_counter()
            clocks.mark(("warm", name, size))
            i = 0
            while time.perf_counter() - t0 < 1.0:
                plain[i % 2]()
                i += 1
                if i % 8 == 0:
                    cp.cuda.Device().synchronize()
            for buf in logs:
                buf.fill(0)
            clocks.mark(("logged", name, size))
            ev = [cp.cuda.Event() for _ in range(LOGGED + 1)]
            ev[0].record()
            for j in range(LOGGED):
                with_log(base[j % 2], logs[j])()
                ev[j + 1].record()
            ev[-1].synchronize()
            clocks.mark(None)
            ck = clock_summary([c for c in clocks.samples if c[1] in (("warm", name, size), ("logged", name, size))])
            ms = [cp.cuda.get_elapsed_time(ev[j], ev[j + 1]) for j in range(LOGGED)]
            say(f"  warm-up {i} launches in {time.perf_counter() - t0:.1f} s; logged launches "
                f"{', '.join(f'{x:.4f}' for x in ms)} ms; NVML: {ck}")
            for j, buf in enumerate(logs):
                arr = cp.asnumpy(buf)
                saved[f"{name}_{size}_{j}"] = arr
                say(f"  launch {j}:")
                summarize(name, m, n, arr, say, sms)
    finally:
        clocks.stop()
    if npz:
        np.savez_compressed(npz, **saved)
        say(f"\n  the logs: {Path(npz).name} (per tile: {FIELDS} u64: start ns, start clock64, smid, end ns of "
            "each consumer warpgroup, end clock64, CTA, 0)")


def run_emulated(say):
    from bwlab import emu
    from bwlab.gemm import runner
    from bwlab.hw.dtypes import from_float
    for name, m, n, k in EMU_CASES:
        rng = np.random.default_rng(1)
        a = from_float(rng.random((m, k), dtype=np.float32) * 2 - 1, "bf16")
        b = from_float(rng.random((n, k), dtype=np.float32) * 2 - 1, "bf16")
        kern = logged_kernel(name)
        tiles = len(tile_rc(name, m, n))
        log = emu.zeros((tiles, FIELDS), np.uint64)
        c = _emulated_with_log(name, a, b, kern, log)
        say(f"\n== {name} {m}x{n}x{k} (emulated): {runner.check(a, b, c, name + ' with the tile log')}")
        arr = np.asarray(log.get())
        say(f"  tiles logged {np.count_nonzero(arr[:, 0])} of {tiles}; SMs {sorted(set(arr[:, 2].tolist()))}; "
            f"CTAs {sorted(set(arr[:, 6].tolist()))}")
        summarize(name, m, n, arr, say, sms=runner.EMULATED_SMS)


def _emulated_with_log(name, a, b, kern, log):
    """runner.run_step_emulated with the log buffer in the kernel's `stamps` argument."""
    from bwlab import emu
    from bwlab.gemm import runner
    from bwlab.gemm.ladder import BK, step
    from bwlab.runtime import EMULATED, encode_tensor_map, launch as run_launch, tensor_map_arg
    from bwlab.tma.tensor_map import TensorMap
    s = step(name)
    m, k = a.shape
    n = b.shape[0]
    da, db, dc = emu.asarray(a), emu.asarray(b), emu.zeros((m, n), np.uint16)
    maps = [encode_tensor_map(TensorMap("bfloat16", (k, m), (BK, s.bm), swizzle="128B"), da.data.ptr),
            encode_tensor_map(TensorMap("bfloat16", (k, n), (BK, s.b_rows), swizzle="128B"), db.data.ptr),
            encode_tensor_map(TensorMap("bfloat16", (n, m), (64, 64), swizzle="128B"), dc.data.ptr)]
    module = EMULATED.load(kern)
    grid = s.grid(m, n, runner.EMULATED_SMS, k)
    run_launch(module, "gemm", grid, (s.threads, 1, 1),
               (*[tensor_map_arg(t) for t in maps], dc, np.int32(m), np.int32(n), np.int32(k), log),
               shared_mem=s.smem_bytes, barrier_names=runner.BARRIERS)
    return dc.get()


def gemms():
    """Each case launched twice, the second one profiled (ncu -k gemm --launch-skip via the order)."""
    import cupy as cp
    from bwlab.gemm import runner
    for name, size in CASES:
        a, b = operands(size)[0]
        ln = runner.prepare(name, a, b)
        ln()
        ln()
        cp.cuda.Device().synchronize()


def profile(say):
    ncu = shutil.which("ncu")
    if ncu is None:
        say("\n== Nsight Compute (ncu) is not installed here: DRAM bytes not measured")
        return
    cmd = [ncu, "--clock-control", "none", "-k", "regex:^gemm$", "--metrics", METRICS,
           sys.executable, str(Path(__file__).resolve()), "--gemms"]
    say("\n== Nsight Compute: the second of two launches of each (" + " ".join(Path(cmd[0]).name if i == 0 else x
                                                                           for i, x in enumerate(cmd[:-2])) + ")")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    vals, cur = [], None
    for line in p.stdout.splitlines():
        if re.match(r"^\s+gemm \(", line):
            cur = {}
            vals.append(cur)
        g = re.match(r"^\s+(\S+)\s+(\S+)\s+([\d.,]+)\s*$", line)
        if g and cur is not None:
            cur[g.group(1)] = (g.group(2), float(g.group(3).replace(",", "")))
    if len(vals) != 2 * len(CASES):
        say(f"  ncu gave {len(vals)} kernel reports, expected {2 * len(CASES)}; its output's tail:")
        for line in (p.stdout + p.stderr).splitlines()[-25:]:
            say("  | " + line)
        return
    for (name, size), v in zip(CASES, vals[1::2]):
        parts = "  ".join(f"{key} {val:g} {unit}" for key, (unit, val) in v.items())
        say(f"  {name:22s} {size}^3: {parts}   (A + B: {4 * size * size / 1e6:.1f} MB)")


# ---- the analysis of the logs (no GPU) ----

def lru_bytes(name, size, log, capacity, k_step=64):
    """DRAM bytes of the logged schedule's TMA loads through an ideal LRU cache of `capacity` bytes:
    tile i reads its A row-slab's and B column-slab's k-slices in order, evenly spread from its start to
    its end; a block (slab, k-slice) missing from the cache is read from DRAM."""
    from bwlab.gemm.ladder import step
    s = step(name)
    m = n = k = size
    rc = tile_rc(name, m, n)
    kt = k // k_step
    start = log[:, 0].astype(np.float64)
    end = np.maximum(log[:, 3], log[:, 4]).astype(np.float64)
    t = start[:, None] + (end - start)[:, None] * (np.arange(kt)[None, :] + 0.5) / kt
    tiles = np.repeat(np.arange(len(rc)), kt)
    ks = np.tile(np.arange(kt), len(rc))
    order_ = np.argsort(t.ravel(), kind="stable")
    a_bytes, b_bytes = s.bm * k_step * 2, s.bn * k_step * 2
    cache, used, dram = OrderedDict(), 0, 0
    for e in order_:
        i, kk = tiles[e], ks[e]
        for key, nb in ((("A", rc[i, 0], kk), a_bytes), (("B", rc[i, 1], kk), b_bytes)):
            if key in cache:
                cache.move_to_end(key)
                continue
            dram += nb
            cache[key] = nb
            used += nb
            while used > capacity:
                _, v = cache.popitem(last=False)
                used -= v
    return dram


def _ncu_bytes(txt) -> dict:
    """{(step name, size): DRAM bytes read} from the Nsight Compute lines of this script's GPU report."""
    out = {}
    if not Path(txt).exists():
        return out
    pat = re.compile(r"^\s+(s\w+)\s+(\d+)\^3: dram__bytes_read.sum ([\d.]+) (G|M)byte")
    for line in Path(txt).read_text().splitlines():
        g = pat.match(line)
        if g:
            out[(g.group(1), int(g.group(2)))] = float(g.group(3)) * (1e9 if g.group(4) == "G" else 1e6)
    return out


def spread_scaled(log, factor, sms=132):
    """The log with every tile's start moved `factor` times as far from the first start of its round (tiles
    sms*r .. sms*r + sms-1) as it was, durations kept: the measured schedule with its in-round spread
    scaled."""
    st = log[:, 0].astype(np.float64)
    dur = np.maximum(log[:, 3], log[:, 4]).astype(np.float64) - st
    r = np.arange(len(st)) // sms
    first = np.array([st[r == i].min() for i in range(r.max() + 1)])[r]
    new = first + factor * (st - first)
    out = log.copy()
    out[:, 0] = new.astype(np.uint64)
    out[:, 3] = out[:, 4] = (new + dur).astype(np.uint64)
    return out, max(float(np.ptp(new[r == i])) for i in range(r.max() + 1)) / 1e3


def analyze(npz, say):
    from bwlab.gemm.ladder import step
    from bwlab.timing.gemm import dram_bytes
    d = np.load(npz)
    ncu = _ncu_bytes(Path(npz).with_suffix(".txt"))
    say(f"DRAM bytes of the logged schedules ({Path(npz).name}) through an ideal LRU cache (each tile's A and B "
        "k-slices read evenly over its time), beside the timing model's wave estimate (bwlab.timing.gemm."
        "dram_bytes, 132 tiles at once) and Nsight Compute's count (dram__bytes_read.sum, another launch)")
    say(f"  {'step':22s} {'size':>6s} launch  LRU 40 / 50 / 60 MiB       model    ncu     (GB; A + B once: "
        "0.27 at 8192^3, 0.067 at 4096^3)")
    for name, size in CASES:
        model = dram_bytes(step(name), size, size, size, 132)[0] / 1e9
        got_ncu = ncu.get((name, size))
        for j in range(LOGGED):
            key = f"{name}_{size}_{j}"
            if key not in d:
                continue
            got = [lru_bytes(name, size, d[key], mib * 2**20) / 1e9 for mib in (40, 50, 60)]
            say(f"  {name:22s} {size:>5d}^3 {j:5d}   {got[0]:5.2f} / {got[1]:5.2f} / {got[2]:5.2f}      {model:6.2f} "
                + (f"{got_ncu / 1e9:6.2f}" if got_ncu and j == 0 else ""))
    key = "s3_warp_specialized_8192_1"
    if key in d:
        say("\nstep 3 at 8192^3, launch 1, with the spread of its rounds' starts scaled (each tile's start moved "
            "factor x as far from its round's first start; durations kept): how far the in-flight window must "
            "spread before the L2 stops holding B between the rows that share it")
        say(f"  {'factor':>6s} {'widest round spread':>20s}   LRU 50 / 60 MiB (GB)")
        for f in (1, 2, 3, 4, 6, 8):
            log, spread = spread_scaled(d[key], f)
            b50, b60 = (lru_bytes("s3_warp_specialized", 8192, log, mib * 2**20) / 1e9 for mib in (50, 60))
            say(f"  {f:6d} {spread:17.1f} us   {b50:5.2f} / {b60:5.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--emulate", action="store_true", help="run small in the PTX emulator (no GPU)")
    ap.add_argument("--gemms", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-ncu", action="store_true", help="skip the Nsight Compute part")
    ap.add_argument("--analyze", help="an .npz this script wrote (its .txt beside it): the LRU estimate of its "
                    "schedules (no GPU)")
    ap.add_argument("--out", help="also write the report here")
    ap.add_argument("--npz", help="write the tile logs here (GPU)")
    args = ap.parse_args(argv)
    if args.gemms:
        gemms()
        return
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)
    if args.analyze:
        analyze(args.analyze, say)
    else:
        say(header(args.emulate))
        if args.emulate:
            run_emulated(say)
        else:
            run_gpu(say, args.npz)
            if not args.no_ncu:
                profile(say)
    cmd = "python docs/results/tile_drift.py" + (" --emulate" if args.emulate else "") + \
        (f" --analyze {args.analyze}" if args.analyze else "") + (" --no-ncu" if args.no_ncu else "") + \
        (f" --out {Path(args.out).name}" if args.out else "") + (f" --npz {Path(args.npz).name}" if args.npz else "")
    lines.append(f"# command: {cmd}")
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
