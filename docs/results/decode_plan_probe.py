"""A plan of segments for the decode rung (Config.plan, bwlab/gemm/decode_plan.py): each CTA's time for its own
tile measured by its own clock (the stamped build, every tile's segments its own), a plan that moves the last
segments of the slowest CTAs to the fastest (decode_plan.balanced_plan), then short CUDA-event timings of the
table, the plan's build with every segment its own, and with the balanced plan (plain and with PDL), each checked
against the f32 reference before it is timed, and the balanced plan's spread by the same stamps.

    python docs/results/decode_plan_probe.py [--m 16 64] [--plan T SEG ...] [--out F]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace

import numpy as np


def spans(r, a, b, launches=20, plan=None):
    """Per CTA the median over launches of (start -> last stage) and (first CTA's start -> its end), us."""
    import cupy as cp
    from bwlab.gemm import decode
    m, n = a.shape[0], b.shape[0]
    ctas = r.grid(m, n)[0]
    stamps = cp.zeros(decode.STAMP_WORDS + decode.CTA_WORDS * ctas, cp.uint64)
    st = decode.prepare(r, a, b, stamps=stamps, plan=plan)
    work, ends = [], []
    for _ in range(launches):
        stamps.fill(0)
        st()
        cp.cuda.Device().synchronize()
        per = stamps.get()[decode.STAMP_WORDS:].reshape(ctas, decode.CTA_WORDS).astype(np.int64)
        work.append((per[:, 2] - per[:, 0]) / 1e3)
        ends.append((per[:, 3] - per[:, 0].min()) / 1e3)
    return np.median(work, axis=0), np.median(ends, axis=0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--m", type=int, nargs="*", default=[16, 32, 64])
    ap.add_argument("--plan", type=int, nargs=2, action="append", metavar=("T", "SEG"))
    args = ap.parse_args(argv)
    import cupy as cp
    sys.path.insert(0, "docs/results")
    from decode_protocol import event_ms
    from bwlab.checks.common import gpu_line
    from bwlab.gemm import decode, runner
    from bwlab.gemm.decode_plan import balanced_plan
    lines = [gpu_line(), "the decode rung with a plan of segments, N = K = 8192; CUDA events, 40 launches x 5, median "
             "(not the sustained protocol); spans by each CTA's own clock, median of 20 launches alone"]

    def say(s):
        print(s, flush=True)
        lines.append(s)
    n = k = 8192
    base = decode.SWAP_AB
    for m in args.m:
        sets = [runner.random_operands(m, n, k, seed=m + i) for i in range(2)]
        ref = runner.reference(*sets[0])
        cfg = base.config(m)
        k_iters = k // (64 * cfg.kb)
        say(f"== M = {m}: {cfg}, {k_iters} stages per tile")

        def timed(label, r, pdl=False, plan=None):
            ls = [decode.prepare(r, a, b, pdl=pdl, plan=plan) for a, b in sets]
            ls[0]()
            cp.cuda.Device().synchronize()
            ok = runner.check(*sets[0], ls[0].c, label, ref=ref)
            if not ok.ok:
                say(f"  {label:<34s} {ok}")
                return None
            t = event_ms(ls)
            say(f"  {label:<34s} {t * 1e3:6.2f} us")
            return t
        timed("table", base)
        timed("table (PDL)", base, pdl=True)
        for t_segs, seg in args.plan or [(8, 1), (4, 2)]:
            if cfg.split != 1:
                continue
            rp = replace(base, table=tuple((mt, replace(c, plan=t_segs, seg=seg) if mt == base.mt(m) else c)
                                           for mt, c in base.table))
            work, ends = spans(rp, *sets[0])
            own, jobs = balanced_plan(work, k_iters, t_segs, seg)
            moved = sum(len(j) for j in jobs)
            say(f"  plan {t_segs} x {seg}: own tiles by the CTAs' clocks: start to last stage {work.min():.1f}-"
                f"{work.max():.1f} us (median {np.median(work):.1f}), ends {ends.min():.1f}-{ends.max():.1f}; the "
                f"balanced plan moves {moved} segments from {sum(1 for o in own if o < t_segs)} CTAs to "
                f"{sum(1 for j in jobs if j)}")
            timed(f"plan {t_segs}x{seg}, every segment own", rp)
            timed(f"plan {t_segs}x{seg}, balanced", rp, plan=(own, jobs))
            timed(f"plan {t_segs}x{seg}, balanced (PDL)", rp, pdl=True, plan=(own, jobs))
            w2, e2 = spans(rp, *sets[0], plan=(own, jobs))
            say(f"    balanced, by the CTAs' clocks: start to end job {w2.min():.1f}-{w2.max():.1f} us, ends "
                f"{e2.min():.1f}-{e2.max():.1f}")
        cp.get_default_memory_pool().free_all_blocks()
    text = "\n".join(lines) + "\n\ncommand: python docs/results/decode_plan_probe.py " + " ".join(
        sys.argv[1:] if argv is None else argv)
    if args.out:
        open(args.out, "w").write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
