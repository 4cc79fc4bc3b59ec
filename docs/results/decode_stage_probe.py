"""When does each stage of each CTA land? The decode rung built with -DDECODE_STAGE_STAMPS writes %globaltimer as its
first consumer sees each stage's `full` barrier complete, for every CTA (the per-CTA stamps of decode_tail_probe.py
give only the first and the last). Each stamped launch runs right behind ten unstamped ones, as in a stream of
launches; 20 such launches per M. From the stamps:

* B's bytes landed across the GPU per 2 us (TB/s), from the first CTA's start: the ramp, the plateau and the tail,
  beside the read stream launched with PDL (its rate is the plateau the stream holds);
* the plateau: B's rate between 6 us and the moment the first CTA is done, against that stream;
* the slowest tenth of the CTAs: their time per stage while every CTA still streams, and after half are done;
* each SM's side of the L2 (which half of the addresses it reaches fast; docs/results/l2_partition_probe.py's
  test, on every SM): the CTAs' spans on each side;
* launch to launch: how much of the rung's back-to-back time lies outside its CTAs' span, against a read stream
  stamped the same way.

Each stage's stamp is the SM's clock64, mapped to %globaltimer's ns by the CTA's own first and last stamps (which
take both): a %globaltimer read stored at once, as the stamps first were, costs time on the first consumer's path,
enough at M = 256 to stretch the kernel by a quarter (decode_probe_h200.txt, 41; the recording decode_stage_h200.txt
was made with those).

    python docs/results/decode_stage_probe.py [--m 16 64 128] [--config MT:FIELD=V,...] [--out F]
"""
from __future__ import annotations

import argparse
import sys

import numpy as np


def sides(info):
    """Each SM's side of the L2: +1 if the chunks it reaches slowly are those SM 0 reaches slowly, -1 if the others."""
    import cupy as cp
    from l2_partition_probe import SRC, two_means
    kern = cp.RawKernel(SRC, "l2_map")
    chunks = 2048   # 512 KiB of 256-byte chunks
    buf = cp.random.default_rng(4).integers(0, 2**31, chunks * 64, dtype=cp.uint32)
    claim = cp.zeros(2, cp.uint32)
    lat = cp.zeros(chunks, cp.uint32)
    flush = cp.zeros(64 * 2**20, cp.uint32)   # 256 MiB read between the SMs: the buffer leaves L2
    ref, out = None, {}
    for sm in range(info.sm_count):
        flush.sum()
        claim.fill(0)
        kern((4 * info.sm_count,), (32,), (buf, np.uint32(chunks), np.uint32(64), np.uint32(sm), claim, lat))
        cp.cuda.Device().synchronize()
        if int(claim[0].get()) != 1:
            continue
        slow, _, _ = two_means(lat.get().astype(np.float64))
        if ref is None:
            ref = slow
        out[sm] = 1 if np.corrcoef(ref.astype(float), slow.astype(float))[0, 1] > 0 else -1
    return out


SPAN_SRC = r"""
// The read stream of decode_protocol.py with its span stamped: the earliest block start and the latest block end
// (%globaltimer, ns) of one launch, in t[0] and t[1] (the host sets t[0] to ~0 and t[1] to 0 first).
extern "C" __global__ void __launch_bounds__(512)
read_stream_span(const uint4* __restrict__ p, unsigned long long n16, unsigned sentinel, unsigned* out,
                 unsigned long long* t) {
    unsigned long long t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    if (threadIdx.x == 0) atomicMin(&t[0], t0);
    unsigned acc = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n16; i += stride) {
        const uint4 a = __ldg(p + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == sentinel) out[0] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long t1;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
        atomicMax(&t[1], t1);
    }
}
"""


def stream_span(info, nbytes, plain):
    """The read stream's span from its first block's start to its last block's end (us, median of 20 launches, each
    right behind ten launches of `plain`), and its back-to-back time per launch (us)."""
    import cupy as cp
    from decode_protocol import event_ms
    kern = cp.RawKernel(SPAN_SRC, "read_stream_span")
    n16 = nbytes // 16
    buf = cp.random.default_rng(9).integers(0, 2**31, 4 * n16, dtype=cp.uint32)
    out, t = cp.zeros(1, cp.uint32), cp.zeros(2, cp.uint64)
    grid = (info.sm_count * 4,)
    call = lambda: kern(grid, (512,), (buf, np.uint64(n16), np.uint32(0x9E3779B9), out, t))   # noqa: E731
    back = event_ms([call]) * 1e3
    spans = []
    for _ in range(20):
        for i in range(10):
            plain[i % len(plain)]()
        t[0], t[1] = cp.uint64(2**64 - 1), cp.uint64(0)
        call()
        cp.cuda.Device().synchronize()
        h = t.get().astype(np.int64)
        spans.append((h[1] - h[0]) / 1e3)
    return float(np.median(spans)), back


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--m", type=int, nargs="*", default=[16, 64, 128])
    ap.add_argument("--launches", type=int, default=20)
    ap.add_argument("--config", action="append", default=None, metavar="MT:FIELD=V,...",
                    help="the table's configuration at MT changed so (as decode_protocol.py probe --config)")
    args = ap.parse_args(argv)
    import cupy as cp
    sys.path.insert(0, "docs/results")
    from decode_protocol import event_ms, parse_config, stream_calls, write_report
    from bwlab.checks.common import gpu_line
    from bwlab.device import gpu_info
    from bwlab.gemm import decode, runner
    info = gpu_info()
    n = k = 8192
    r = decode.SWAP_AB
    for mt, fields, _, _ in (parse_config(c) for c in args.config or ()):
        from dataclasses import replace
        r = replace(r, table=tuple((t, replace(c, **fields) if t == mt else c) for t, c in r.table))
    side = sides(info)
    lines = [gpu_line(), f"every stage of every CTA (the rung's table configuration, N = K = 8192), each stamped launch "
             f"right behind ten unstamped ones, {args.launches} launches per M; L2 sides of the SMs: "
             f"{sum(v > 0 for v in side.values())} and {sum(v < 0 for v in side.values())}"
             + ("; the table here: " + "; ".join(f"MT {mt}: {c}" for mt, c in r.table) if args.config else "")]
    for m in args.m:
        sets = [runner.random_operands(m, n, k, seed=m + i) for i in range(2)]
        plain = [decode.prepare(r, a, b) for a, b in sets]
        t_plain = event_ms(plain)
        st_calls, keep = stream_calls(decode.bytes_moved(m, n, k), 2, info.sm_count, pdl=True)
        t_stream = event_ms(st_calls)
        cfg = r.config(m)
        ctas = r.grid(m, n)[0]
        iters = k // (64 * cfg.kb * cfg.split)
        b_stage = cfg.kb * cfg.consumers * 64 * 64 * 2   # bytes of B per stage
        head = decode.STAMP_WORDS + decode.CTA_WORDS * ctas
        st_span, st_back = stream_span(info, decode.bytes_moved(m, n, k), st_calls)
        stamps = cp.zeros(head + ctas * iters, cp.uint64)
        st = decode.prepare(r, *sets[0], stamps=stamps, defines={"DECODE_STAGE_STAMPS": 1})
        bins, plateau, slow_before, slow_after, span_side = [], [], [], [], {1: [], -1: []}
        spans, last_done, grid_span = [], [], []
        for _ in range(args.launches):
            stamps.fill(0)
            for i in range(10):
                plain[i % 2]()
            st()
            cp.cuda.Device().synchronize()
            h = stamps.get()
            per = h[decode.STAMP_WORDS:head].reshape(ctas, decode.CTA_WORDS).astype(np.int64)
            clk = h[head:].reshape(ctas, iters).astype(np.float64)   # clock64 at each stage, per CTA
            # each CTA's clock64 to %globaltimer through its start and end stamps (words 0 and 3, clocks 5 and 6)
            rate = (per[:, 3] - per[:, 0]) / np.maximum(per[:, 6] - per[:, 5], 1)   # ns per clock
            t0 = per[:, 0].min()
            land = ((per[:, 0, None] - t0) + (clk - per[:, 5, None]) * rate[:, None]) / 1e3   # us from the first CTA's start
            done = (per[:, 3] - t0) / 1e3
            hist, _ = np.histogram(land.ravel(), bins=np.arange(0, 50, 2.0))
            bins.append(hist * b_stage / 2e-6 / 1e12)   # TB/s of B landed per 2 us
            first_done = done.min()
            inside = (land > 6) & (land <= first_done)
            plateau.append(inside.sum() * b_stage / ((first_done - 6) * 1e-6) / 1e12)
            span = land[:, -1] - land[:, 0]
            spans.extend(span)
            last_done.append(done.max())
            grid_span.append(done.max())   # from the first CTA's start
            slow = np.argsort(span)[-max(1, ctas // 10):]
            half_done = np.median(done)
            for c in slow:
                t = land[c]
                d = np.diff(t)
                mid = t[1:]
                slow_before.extend(d[(mid > 6) & (mid <= first_done)])
                slow_after.extend(d[mid > half_done])
            for c in range(ctas):
                s = side.get(int(per[c, 4]))
                if s:
                    span_side[s].append(span[c])
        b = np.median(np.array(bins), axis=0)
        last = int(np.max(np.flatnonzero(b > 0.05))) + 1 if (b > 0.05).any() else len(b)
        stream_rate = (decode.bytes_moved(m, n, k)) / t_stream / 1e9   # TB/s (t in ms)
        lines.append(
            f"M = {m:3d} ({cfg.consumers} consumer(s), K split {cfg.split}, {cfg.kb} boxes per stage, {iters} stages per "
            f"CTA, {ctas} CTAs, {b_stage // 1024} KiB of B per stage; back to back, unstamped: {t_plain * 1e3:.1f} us; the "
            f"read stream launched with PDL: {t_stream * 1e3:.1f} us, {stream_rate:.2f} TB/s)\n"
            f"    B landed per 2 us from the first CTA's start (TB/s): " + " ".join(f"{x:.2f}" for x in b[:last]) + "\n"
            f"    plateau (6 us to the first CTA done): {np.median(plateau):.2f} TB/s of B, {np.median(plateau) / stream_rate:.3f} "
            f"of the PDL stream's rate\n"
            f"    the slowest tenth of the CTAs: median time per stage {np.median(slow_before):.3f} us while all stream, "
            f"{np.median(slow_after):.3f} us after half are done ({len(slow_after)} stages)\n"
            f"    span (first to last stage): median {np.median(spans):.1f} us, fastest tenth {np.percentile(spans, 10):.1f}, "
            f"slowest tenth {np.percentile(spans, 90):.1f}; the last CTA done at {np.median(last_done):.1f} us\n"
            f"    launch to launch: the rung back to back {t_plain * 1e3:.1f} us, its first CTA's start to its last CTA's "
            f"end {np.median(grid_span):.1f} us (the rest, {t_plain * 1e3 - np.median(grid_span):.1f} us, outside its "
            f"CTAs); the read stream (one 16-byte load per step) back to back {st_back:.1f} us, its first block's start "
            f"to its last block's end {st_span:.1f} us ({st_back - st_span:.1f} outside)\n"
            f"    span by L2 side of the SM: "
            + "; ".join(f"side {'+' if s > 0 else '-'}: {len(v)} CTAs, median {np.median(v):.1f} us, "
                        f"p90 {np.percentile(v, 90):.1f}" for s, v in span_side.items() if v))
        print(lines[-1], flush=True)
        del sets, plain, st, keep
        cp.get_default_memory_pool().free_all_blocks()
    write_report(lines, "decode_stage_probe.py", argv, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
