"""Where the decode rung's time goes, from inside: every CTA's own timestamps (the kernel built with -DGEMM_STAMPS:
%globaltimer at its start, its first and last stage's arrival, and when its stores of C are issued). Per M: how far
apart the CTAs start, how long each waits for its first stage, how long the fastest and the slowest take from first
to last stage, the tail after the last stage, and when the first and the last CTA are done; for a launch alone
(docs/results/decode_probe_h200.txt, 24) and for one right behind ten unstamped launches of the same kernel, as in a
stream of launches (not yet run).

    python docs/results/decode_tail_probe.py [--out F]
"""
from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--m", type=int, nargs="*", default=[16, 64, 128, 256])
    ap.add_argument("--early", action="store_true", help="the table with Config.early = 1")
    ap.add_argument("--a64", type=int, default=None, help="A's ring depth at MT = 64")
    ap.add_argument("--sm", type=int, default=0, metavar="LAUNCHES",
                    help="instead: per SM (%%smid), over this many launches alone, how long its CTA streams its share")
    args = ap.parse_args(argv)
    import cupy as cp
    sys.path.insert(0, "docs/results")
    from decode_protocol import event_ms, write_report
    from bwlab.checks.common import gpu_line
    from bwlab.gemm import decode, runner
    lines = [gpu_line(), "every CTA's stamps (globaltimer) of the decode rung's table configuration, N = K = 8192, a launch "
             "alone and one right behind ten others; each figure the median over 20 launches (times from the first "
             "CTA's start)"]
    n = k = 8192
    r = decode.SWAP_AB
    if args.early or args.a64:
        from dataclasses import replace
        r = r.with_each(early=1) if args.early else r
        if args.a64:
            r = replace(r, table=tuple((mt, replace(c, a_stages=args.a64) if mt == 64 else c) for mt, c in r.table))
        lines.append("the table here: " + "; ".join(f"MT {mt}: {c}" for mt, c in r.table))
    if args.sm:
        return by_sm(args, [lines[0]] + lines[2:], r, n, k)
    for m in args.m:
        sets = [runner.random_operands(m, n, k, seed=m + i) for i in range(2)]
        plain = [decode.prepare(r, a, b) for a, b in sets]
        t_plain = event_ms(plain)
        ctas = r.grid(m, n)[0]
        stamps = cp.zeros(decode.STAMP_WORDS + decode.CTA_WORDS * ctas, cp.uint64)
        st = decode.prepare(r, *sets[0], stamps=stamps)
        cfg = r.config(m)
        iters = k // (64 * cfg.kb * cfg.split)
        for alone in (True, False):
            rows = []
            for _ in range(20):
                stamps.fill(0)
                if not alone:   # ten unstamped launches right ahead of the stamped one, as in a stream of launches
                    for i in range(10):
                        plain[i % 2]()
                st()
                cp.cuda.Device().synchronize()
                per = stamps.get()[decode.STAMP_WORDS:].reshape(ctas, decode.CTA_WORDS)[:, :4].astype(np.int64)
                # (start, first stage, last stage, end; then the SM, unused here)
                t0 = per[:, 0].min()
                rows.append((per[:, 0].max() - t0, np.median(per[:, 1] - per[:, 0]), np.median(per[:, 2] - per[:, 1]),
                             (per[:, 2] - per[:, 1]).min(), (per[:, 2] - per[:, 1]).max(),
                             np.median(per[:, 3] - per[:, 2]), per[:, 3].max() - t0, per[:, 3].min() - t0,
                             per[:, 2].max() - t0))
            q = np.median(np.array(rows, np.float64), axis=0) / 1e3   # us
            lines.append(
                f"M = {m:3d} ({cfg.consumers} consumer(s), K split {cfg.split}, {cfg.kb} boxes per stage, {iters} stages "
                f"per CTA, {ctas} CTAs; back to back, unstamped: {t_plain * 1e3:5.1f} us), "
                + ("launched alone" if alone else "right behind ten launches") + f": CTAs start within {q[0]:4.2f} us; "
                f"first stage after {q[1]:4.2f} us; first to last stage {q[2]:5.1f} us (fastest CTA {q[3]:5.1f}, slowest "
                f"{q[4]:5.1f}); last stage to the stores issued {q[5]:4.2f} us; the first CTA done at {q[7]:5.1f} us, "
                f"the last at {q[6]:5.1f} us (its last stage landed at {q[8]:5.1f} us)")
            print(lines[-1], flush=True)
        del sets, plain, st
        cp.get_default_memory_pool().free_all_blocks()
    write_report(lines, "decode_tail_probe.py", argv, args.out)
    return 0


def by_sm(args, lines, r, n, k) -> int:
    """--sm: is a CTA's streaming rate a property of the SM it runs on? Per launch (alone), each CTA's SM and its
    time from first to last stage; per SM the mean over the first and the second half of the launches and how
    well the two halves agree (Pearson r), the fastest and slowest SMs, and the CTAs whose TPC partner (SM id
    xor 1) ran no CTA in that launch against those whose partner did."""
    import cupy as cp
    from bwlab.gemm import decode, runner
    lines.append(f"per SM, {args.sm} launches alone, N = K = 8192; a CTA's span: first to last stage (us)")
    for m in args.m:
        a, b = runner.random_operands(m, n, k, seed=m)
        ctas = r.grid(m, n)[0]
        stamps = cp.zeros(decode.STAMP_WORDS + decode.CTA_WORDS * ctas, cp.uint64)
        st = decode.prepare(r, a, b, stamps=stamps)
        spans = {}   # sm -> [(launch, span us, partner idle)]
        for i in range(args.sm):
            stamps.fill(0)
            st()
            cp.cuda.Device().synchronize()
            per = stamps.get()[decode.STAMP_WORDS:].reshape(ctas, decode.CTA_WORDS).astype(np.int64)
            used = set(int(x) for x in per[:, 4])
            for row in per:
                sm = int(row[4])
                spans.setdefault(sm, []).append((i, (row[2] - row[1]) / 1e3, (sm ^ 1) not in used))
        lines.append(sm_summary(m, spans, args.sm))
        print(lines[-1], flush=True)
        del a, b, st
        cp.get_default_memory_pool().free_all_blocks()
    from decode_protocol import write_report
    write_report(lines, "decode_tail_probe.py", None, args.out)
    return 0


def sm_summary(m, spans, launches) -> str:
    """One line for --sm from {sm: [(launch, span us, TPC partner idle)]}."""
    half = launches // 2
    sms = sorted(sm for sm, v in spans.items() if any(j < half for j, *_ in v) and any(j >= half for j, *_ in v))
    m1 = np.array([np.mean([x for j, x, _ in spans[sm] if j < half]) for sm in sms])
    m2 = np.array([np.mean([x for j, x, _ in spans[sm] if j >= half]) for sm in sms])
    allx = np.array([x for v in spans.values() for _, x, _ in v])
    alone = [x for v in spans.values() for _, x, idle in v if idle]
    paired = [x for v in spans.values() for _, x, idle in v if not idle]
    mean = (m1 + m2) / 2
    order = np.argsort(mean)
    within = np.mean([np.std([x for _, x, _ in spans[sm]]) for sm in sms])
    return (
        f"M = {m:3d}: {len(spans)} SMs ran a CTA ({len(sms)} in both halves); spans {allx.min():.1f}-{allx.max():.1f} "
        f"us, median {np.median(allx):.1f}; per-SM means of the two halves agree with r = "
        f"{np.corrcoef(m1, m2)[0, 1]:.2f}; spread of the per-SM means {mean.min():.1f}-{mean.max():.1f} us against a "
        f"typical {within:.2f} us from launch to launch on one SM; fastest SMs "
        + ", ".join(f"{sms[i]} ({mean[i]:.1f})" for i in order[:6]) + "; slowest "
        + ", ".join(f"{sms[i]} ({mean[i]:.1f})" for i in order[-6:]) + f"; TPC partner idle: {len(alone)} CTAs, "
        f"median span {np.median(alone) if alone else float('nan'):.1f} us, partner busy: median "
        f"{np.median(paired):.1f} us")


if __name__ == "__main__":
    sys.exit(main())
