"""What a wait on an mbarrier costs the waiting warp on a Hopper GPU (a bare try_wait loop, and the
ladder's bounded wait `mbarrier_wait`), and, where Nsight Compute is installed, the DRAM bytes the
ladder's steps 3 and 4 read at 8192^3 and steps 4 and 5 at 512 x 8192 x 8192.

    python docs/results/timing_waits.py --out docs/results/timing_waits_h200.txt     # on the GPU
    python docs/results/timing_waits.py --emulate                                     # no GPU

--emulate runs the wait kernels (cuda_src/timing/waits_sm90.cu) in bwlab's PTX emulator: it proves the
script and the kernels (every wait ends), not the numbers (the emulator's clock is virtual).
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bwlab.checks.common import probe_header as header  # noqa: E402
from bwlab.runtime import EMULATED, GPU, launch  # noqa: E402

SRC = "timing/waits_sm90.cu"
GEMMS = (("s3_warp_specialized", 8192, 8192, 8192), ("s4_persistent", 8192, 8192, 8192),
         ("s4_persistent", 512, 8192, 8192), ("s5_cluster_multicast", 512, 8192, 8192))
METRICS = "dram__bytes_read.sum,lts__t_sector_hit_rate.pct,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"


def gemms():
    """Each GEMM of GEMMS launched twice (the second is the one profiled), checked once."""
    from bwlab.gemm import runner
    for name, m, n, k in GEMMS:
        a, b = runner.random_operands(m, n, k, seed=5)
        ln = runner.prepare(name, a, b)
        ln()
        res = runner.check(a, b, ln.c, f"{name} {m}x{n}x{k}")
        print(res, flush=True)
        ln()
        import cupy
        cupy.cuda.Device().synchronize()


def profile(say):
    ncu = shutil.which("ncu")
    if ncu is None:
        say("\n== DRAM bytes of ladder steps: Nsight Compute (ncu) is not installed here; not measured")
        return
    cmd = [ncu, "--clock-control", "none", "-k", "regex:^gemm$", "--metrics", METRICS,
           sys.executable, str(Path(__file__).resolve()), "--gemms"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    vals = []
    cur = {}
    for line in p.stdout.splitlines():
        if re.match(r"^\s+gemm \(", line):
            cur = {}
            vals.append(cur)
        g = re.match(r"^\s+(\S+)\s+(\S+)\s+([\d.,]+)\s*$", line)
        if g and cur is not None:
            cur[g.group(1)] = (g.group(2), float(g.group(3).replace(",", "")))
    say("\n== DRAM bytes read by ladder steps (ncu --clock-control none; the second of two launches of each)")
    if len(vals) != 2 * len(GEMMS):
        say(f"  ncu gave {len(vals)} kernel reports, expected {2 * len(GEMMS)}; its output's tail:")
        for line in (p.stdout + p.stderr).splitlines()[-25:]:
            say("  | " + line)
        return
    for (name, m, n, k), v in zip(GEMMS, vals[1::2]):
        unique = 2 * (m * k + n * k)
        parts = "  ".join(f"{key.split('__')[1]} {val:g} {unit}" for key, (unit, val) in v.items())
        say(f"  {name:22s} {m}x{n}x{k}: {parts}   (A + B: {unique / 1e6:.1f} MB)")
    for line in p.stdout.splitlines():
        if "PASS" in line or "FAIL" in line:
            say("  " + line.strip())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--emulate", action="store_true", help="run small in the PTX emulator (no GPU)")
    ap.add_argument("--gemms", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help="also write the report here")
    args = ap.parse_args(argv)
    if args.gemms:
        gemms()
        return
    emu = args.emulate
    be = EMULATED if emu else GPU
    xp = be.xp
    mod = be.load(SRC)
    lines = [header(emu)]
    print(lines[0], flush=True)

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    reps = 8 if emu else 4000
    say("\n== mbarrier waits: cycles (clock64), bare try_wait loop vs the ladder's bounded wait (mbarrier_wait)")
    for kern, block, what in (("waits_pingpong", 64, "round trip, two warps handing a token back and forth"),
                              ("waits_gather", 128, "4 warps arrive together, thread 0 waits: round start to wait done"),
                              ("waits_ready", 32, "a wait on a phase already complete")):
        got = []
        for bounded in (0, 1):
            out = xp.zeros(1, np.uint64)
            launch(mod, kern, (1, 1, 1), (block, 1, 1), (out, np.int32(reps), np.int32(bounded)))
            got.append(float(np.asarray(out.get())[0]) / reps)
        say(f"  {kern:15s} bare {got[0]:7.1f}  bounded {got[1]:7.1f}   ({what})")
    if not emu:
        profile(say)
    lines.append(f"# command: python docs/results/timing_waits.py" + (" --emulate" if emu else "") +
                 (f" --out {Path(args.out).name}" if args.out else ""))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
