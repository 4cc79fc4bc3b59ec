"""python -m bwlab.timing: predictions from the command line.

    python -m bwlab.timing predict s6 8192 8192 8192 --clock 1350          # one rung, one shape
    python -m bwlab.timing machine h100_sxm                                 # a machine description
    python -m bwlab.timing hopper --out docs/results/timing_hopper.txt      # the ladder vs its measurements
    python -m bwlab.timing hopper --machine h200 --report gemm_protocol_stamped_h200.txt   # an H200 run, at the SMs' clocks counted in its blocks
    python -m bwlab.timing hopper --machine h200 --report gemm_protocol_h200.txt   --clocks clock_check_h200.txt clock_check_shapes_h200.txt     # an H200 run, at the SMs' clocks
    python -m bwlab.timing blackwell --out docs/results/timing_b200.txt     # the sm_100a ladder, predicted
    python -m bwlab.timing fractions --write     # Step.predicted from the Hopper table (bwlab/gemm/model_fractions.py)
"""
from __future__ import annotations

import argparse
import sys
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bwlab.timing", description="speed without a GPU")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("predict", help="predict one ladder rung at one shape")
    p.add_argument("step")
    p.add_argument("m", type=int)
    p.add_argument("n", type=int)
    p.add_argument("k", type=int)
    p.add_argument("--machine", default="h100_sxm")
    p.add_argument("--clock", type=float, default=None, help="SM clock in MHz (default: the machine's highest)")
    q = sub.add_parser("machine", help="print a machine description with its sources")
    q.add_argument("name")
    bl = sub.add_parser("blackwell", help="predict the sm_100a ladder on a B200, beside published ladders")
    bl.add_argument("--out", default=None)
    ph = sub.add_parser("phases", help="one tile's phases in the model vs GEMM_STAMPS timelines measured on GPUs")
    ph.add_argument("--out", default=None)
    h = sub.add_parser("hopper", help="the Hopper ladder's predictions against the recorded measurements")
    h.add_argument("--steps", nargs="*", default=None)
    h.add_argument("--out", default=None)
    h.add_argument("--h200", action="store_true", help="the H200 probe's measurements instead")
    h.add_argument("--report", default=None, help="every rung and shape of this sustained-protocol report "
                   "(a file in docs/results, or a path) instead of the ladder's own reports")
    h.add_argument("--machine", default="h100_sxm", help="the machine description to predict with")
    h.add_argument("--clocks", nargs="+", default=None, help="clock checks (docs/results/clock_check.py's reports): "
                   "predict at NVML's clock times each rung's clock64 / NVML ratio measured at its shape")
    fr = sub.add_parser("fractions", help="the ladder steps' predicted fractions of the library at 8192^3 "
                        "(bwlab/gemm/model_fractions.py, read by ladder.Step.predicted)")
    fr.add_argument("--write", action="store_true", help="write bwlab/gemm/model_fractions.py")
    a = ap.parse_args(argv)
    if a.cmd == "fractions":
        from .hopper import FRACTIONS_FILE, fractions_module
        text = fractions_module()
        print(text)
        if a.write:
            FRACTIONS_FILE.write_text(text)
        return 0
    if a.cmd == "predict":
        from .gemm import predict
        for which, align in (("value", "drift"), ("fast", "drift"), ("slow", "lockstep")):
            print(f"{which:5s}", predict(a.step, a.m, a.n, a.k, a.machine, a.clock, which, align=align))
        return 0
    if a.cmd == "machine":
        from .machine import load
        print(load(a.name).describe())
        return 0
    if a.cmd == "phases":
        from .phases import table as ptable
        text = ptable() + "\n# command: python -m bwlab.timing phases" + (f" --out {a.out}" if a.out else "") + "\n"
        print(text)
        if a.out:
            with open(a.out, "w") as f:
                f.write(text)
        return 0
    if a.cmd == "blackwell":
        from .blackwell import table as btable
        t0 = time.time()
        text = btable() + f"\n({time.time() - t0:.0f} s wall on a shared 2-core machine)\n# command: python -m bwlab.timing blackwell" + \
            (f" --out {a.out}" if a.out else "") + "\n"
        print(text)
        if a.out:
            with open(a.out, "w") as f:
                f.write(text)
        return 0
    from .hopper import h200_check, table
    t0 = time.time()
    text = h200_check() if a.h200 else table(a.steps, machine=a.machine, report=a.report, clocks=a.clocks)
    cmd = "python -m bwlab.timing hopper" + (" --h200" if a.h200 else "") + \
        (f" --machine {a.machine}" if a.machine != "h100_sxm" else "") + (f" --report {a.report}" if a.report else "") + (f" --clocks {' '.join(a.clocks)}" if a.clocks else "") + \
        (f" --steps {' '.join(a.steps)}" if a.steps else "") + \
          (f" --out {a.out}" if a.out else "")
    text += f"\n({time.time() - t0:.0f} s wall on a shared 2-core machine, the emulations included)\n# command: {cmd}\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
