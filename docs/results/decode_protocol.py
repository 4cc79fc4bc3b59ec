"""Decode-shaped GEMMs (M = 16 .. 256 rows of A against N = K = 8192) on a Hopper GPU: the decode rung
(bwlab.gemm.decode, cuda_src/gemm_sm90/sd_swap_ab.cu) against cuBLAS (torch.matmul), the ladder's
split-K rung, and a read-only stream of the same bytes (A + B + C) measured in the same run: the
roofline of the shape.

    python docs/results/decode_protocol.py probe [--out F]      # a few variants, short CUDA-event timings
    python docs/results/decode_protocol.py protocol [--out F]   # the sustained protocol (bwlab.gemm.protocol)

Every candidate's C is checked against the f32 reference before it is timed (runner.check). The stream
reads a buffer of exactly bytes_moved(M, N, K) bytes with 16-byte loads from every SM; its buffers
rotate like the operand sets, so no launch finds its bytes left in L2. Fractions of the roofline are
stream time / candidate time (the same bytes); library ratios are library time / candidate time.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys

import numpy as np

STREAM_SRC = r"""
extern "C" __global__ void __launch_bounds__(512)
read_stream(const uint4* __restrict__ p, unsigned long long n16, unsigned sentinel, unsigned* out) {
    unsigned acc = 0;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n16; i += 4 * stride) {   // four independent 16-byte loads in flight per thread
        const uint4 a = __ldg(p + i), b = __ldg(p + i + stride), c = __ldg(p + i + 2 * stride),
                    d = __ldg(p + i + 3 * stride);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n16; i += stride) {
        const uint4 a = __ldg(p + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc == sentinel) out[0] = acc;   // never true for random data: keeps the loads alive
}
"""

SHAPES = [(16, 8192, 8192), (32, 8192, 8192), (64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192)]
SQUARE = (4096, 4096, 4096)
# probe variants: (consumer warpgroups, K pieces across the cluster, boxes of 64 K per stage[, (producer,
# consumer) setmaxnreg registers, (0, 0): none])
VARIANTS = [(4, 4, 1), (4, 4, 1, (0, 0)), (4, 4, 1, (40, 104)), (4, 4, 2), (4, 2, 1), (4, 2, 2), (2, 4, 1)]


def stream_calls(nbytes, nsets, sms, per_sm=4):
    """A read-only stream of `nbytes` (rounded up to 16) per set, one buffer per set (random bytes)."""
    import cupy as cp
    kern = cp.RawKernel(STREAM_SRC, "read_stream")
    n16 = (nbytes + 15) // 16
    rng = cp.random.default_rng(7)
    bufs = [rng.integers(0, 2**31, size=4 * n16, dtype=cp.uint32) for _ in range(nsets)]
    out = cp.zeros(1, cp.uint32)
    grid = (sms * per_sm,)
    calls = [lambda b=b: kern(grid, (512,), (b, np.uint64(n16), np.uint32(0x9E3779B9), out)) for b in bufs]
    return calls, (bufs, out)


def candidates(m, n, k, sets, variants, with_sk=True, with_s8=False):
    """(name, calls per set, C of set 0, after-check) for the ladder rungs and the decode variants."""
    from bwlab.gemm import decode, runner
    out = []
    steps = (["sk_split_k"] if with_sk else []) + (["s8_epilogue_overlap"] if with_s8 else [])
    for name in steps:
        try:
            ls = [runner.prepare(name, a, b) for a, b in sets]
        except ValueError as e:
            out.append((name, None, str(e), None))
            continue
        out.append((name, ls, ls[0].c, lambda l=ls[0]: runner.raise_on_status(l)))
    for label, r in variants:
        try:
            ls = [decode.prepare(r, a, b) for a, b in sets]
        except ValueError as e:
            out.append((label, None, str(e), None))
            continue
        out.append((label, ls, ls[0].c, lambda l=ls[0]: runner.raise_on_status(l)))
    return out


def event_ms(calls, launches=40, reps=5):
    import cupy as cp
    for c in calls:
        c()
    cp.cuda.Device().synchronize()
    res = []
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for i in range(launches):
            calls[i % len(calls)]()
        e.record()
        e.synchronize()
        res.append(cp.cuda.get_elapsed_time(s, e) / launches)
    return statistics.median(res)


def variants_for(mode, extra=False, only=None):
    from bwlab.gemm import decode
    r = decode.SWAP_AB
    if mode == "protocol" and not extra:
        return [(r.name, r)]
    out = [(r.name, r)]
    for v in (only or VARIANTS):
        label = "sd w{} s{} kb{}".format(*v[:3]) + (" r{}/{}".format(*v[3]) if len(v) > 3 else "")
        out.append((label, r.with_config(*v)))
    return out


def probe(say, shapes, only=None):
    import cupy as cp
    from bwlab.checks.gemm_sustained import _library
    from bwlab.device import gpu_info
    from bwlab.gemm import decode, runner
    from bwlab.gemm import protocol as P
    info = gpu_info()
    for m, n, k in shapes:
        nsets = P.operand_sets(2 * (m * k + n * k), info.l2_bytes, 2.0)
        sets = [runner.random_operands(m, n, k, seed=m + i) for i in range(nsets)]
        ref = runner.reference(*sets[0])
        nbytes = decode.bytes_moved(m, n, k)
        lib_name, lib_calls, lib_c = _library(sets, True)
        st_calls, keep = stream_calls(nbytes, nsets, info.sm_count)
        t_st = event_ms(st_calls)
        t_lib = event_ms(lib_calls)
        t_st16 = event_ms(stream_calls(nbytes, nsets, info.sm_count, 16)[0])
        say(f"  (stream with 16 CTAs of 512 threads per SM: {t_st16 * 1e3:.1f} us)")
        say(f"\n== {m}x{n}x{k}: {nbytes / 2**20:.1f} MiB must move; {nsets} sets; stream {t_st * 1e3:.1f} us "
            f"({nbytes / t_st / 1e9:.2f} TB/s); library {t_lib * 1e3:.1f} us ({t_st / t_lib:.3f} of stream); "
            f"{runner.check(*sets[0], lib_c, 'library', ref=ref).ok}")
        for name, calls, c, after in candidates(m, n, k, sets, variants_for("probe", only=only)):
            if calls is None:
                say(f"  {name:<14s} not run: {c}")
                continue
            calls[0]()
            cp.cuda.Device().synchronize()
            ok = runner.check(*sets[0], c, name, ref=ref)
            if not ok.ok:
                say(f"  {name:<14s} {ok}")
                continue
            t = event_ms(calls)
            after()
            extra = ""
            if name.startswith("sd"):
                cfg = calls[0].step.config(m)
                extra = f" stages {int(calls[0].args[-1])}, {calls[0].grid[0] // cfg.split} clusters of {cfg.split}"
            say(f"  {name:<22s} {t * 1e3:7.1f} us  {nbytes / t / 1e9:5.2f} TB/s  {t_st / t:.3f} of stream  "
                f"{t_lib / t:.3f} x lib  {2 * m * n * k / t / 1e9:6.1f} TFLOP/s{extra}")
        del sets, ref, keep
        cp.get_default_memory_pool().free_all_blocks()


def sustained(say, shapes, dump, extra=False):
    """Each shape under bwlab.gemm.protocol: checks, warm-up with the library, rounds of alternating
    sustained blocks (library, candidate, library, ...) with the stream as one more candidate."""
    import cupy as cp
    from bwlab.checks.clocks import ClockLog, summarize
    from bwlab.checks.gemm_sustained import _library, launch_time_ms, time_block, warm_up
    from bwlab.device import gpu_info
    from bwlab.gemm import decode, runner
    from bwlab.gemm import protocol as P
    info = gpu_info()
    proto = P.SUSTAINED
    clocks = ClockLog(cp.cuda.Device().pci_bus_id).start()
    say(f"GPU {info.name}, {info.sm_count} SMs, L2 {info.l2_bytes / 2**20:.0f} MiB; clock log: {clocks.source}")
    say(proto.describe())
    rows = []
    try:
        for m, n, k in shapes:
            square = m == n == k
            nsets = P.operand_sets(2 * (m * k + n * k), info.l2_bytes, proto.l2_multiple)
            sets = [runner.random_operands(m, n, k, seed=m + n + k + i) for i in range(nsets)]
            ref = runner.reference(*sets[0])
            nbytes = decode.bytes_moved(m, n, k)
            shape = f"{m}x{n}x{k}"
            say(f"\n== {m} x {n} x {k} (C = A B^T, bf16 in, f32 accumulation, bf16 out); {nsets} operand sets; "
                f"bytes that must move (A + B + C, bf16): {nbytes / 2**20:.2f} MiB")
            lib_name, lib_calls, lib_c = _library(sets, True)
            lib_calls[0]()
            cp.cuda.Device().synchronize()
            say(f"  library: {lib_name}; {runner.check(*sets[0], lib_c, 'library', ref=ref)}")
            cands = []
            if not square:
                st_calls, keep = stream_calls(nbytes, nsets, info.sm_count)
                cands.append(("read stream", st_calls, None))
            for name, calls, c, after in candidates(m, n, k, sets, variants_for("protocol", extra), with_sk=not square,
                                                    with_s8=square):
                if calls is None:
                    say(f"  {name:<20s} not run: {c}")
                    continue
                runner.clear_status(calls[0])
                calls[0]()
                after()
                res = runner.check(*sets[0], c, name, ref=ref)
                say(f"  check before timing: {res}" + (f" (ring of {int(calls[0].args[-1])} stages, "
                                                     f"{calls[0].smem} B of SMEM, grid {calls[0].grid})"
                                                     if name.startswith("sd") else ""))
                if res.ok:
                    cands.append((name, calls, after))
            del ref
            spent, mhz, per_lib = warm_up(lib_calls, proto, clocks, shape)
            say(f"  warm-up {spent:.1f} s; window medians (MHz): {', '.join(f'{x:.0f}' for x in mhz[-4:])}")
            per = {nm: P.samples_per_launch(launch_time_ms(cl), proto.sample_ms) for nm, cl, _ in cands}
            lib_blocks, cand_blocks = [], {nm: [] for nm, _, _ in cands}
            for r in range(proto.rounds):
                for nm, cl, _ in cands:
                    clocks.mark(("library", shape, r, nm))
                    lib_blocks.append(time_block(lib_calls, proto.block_s, per_lib))
                    clocks.mark((nm, shape, r))
                    cand_blocks[nm].append((len(lib_blocks) - 1, time_block(cl, proto.block_s, per[nm])))
                for nm, cl, after in cands:
                    if after is not None:
                        after()
            clocks.mark(("library", shape, proto.rounds, "end"))
            lib_blocks.append(time_block(lib_calls, proto.block_s, per_lib))
            clocks.mark(None)
            lib_all = P.block_stats([x for blk in lib_blocks for x in blk])
            lib_ck = summarize([c for c in clocks.samples if c[1] and c[1][0] == "library" and c[1][1] == shape])
            summ = {}
            for nm, _, _ in cands:
                blocks = cand_blocks[nm]
                summ[nm] = (P.compare([b for _, b in blocks], [lib_blocks[i] for i, _ in blocks],
                                      [lib_blocks[i + 1] for i, _ in blocks]),
                            P.block_stats([x for _, b in blocks for x in b]),
                            summarize([c for c in clocks.samples if c[1] and c[1][0] == nm and c[1][1] == shape]))
            t_stream = summ["read stream"][0].candidate_ms if "read stream" in summ else None
            flop = 2.0 * m * n * k

            def line(nm, ms, ratio, spread, iqr, ck):
                frac = f"{t_stream / ms:6.3f}" if t_stream else f"{'-':>6s}"
                rr = f"{ratio:8.3f} {spread[0]:6.3f}-{spread[1]:6.3f}" if ratio else f"{'1':>8s} {'':13s}"
                return (f"  {nm:<20s} {ms * 1e3:8.2f} us {flop / ms / 1e9:7.1f} {nbytes / ms / 1e9:6.2f}  {frac}  {rr}  "
                        f"{100 * iqr:4.1f}%  {ck}")
            say(f"  {'':<20s} {'time':>11s} {'TFLOP/s':>7s} {'TB/s':>6s}  {'roofl.':>6s}  {'lib/x':>8s} {'rounds':>13s}  "
                f"{'IQR':>5s}  clocks during the blocks")
            say(line("library (cuBLAS)", lib_all.median, None, None, lib_all.iqr_rel, lib_ck))
            row = {"shape": shape, "bytes": nbytes, "library_ms": lib_all.median, "library_blocks": lib_blocks}
            for nm, _, _ in cands:
                s, st, ck = summ[nm]
                say(line(nm, s.candidate_ms, s.ratio, s.spread, st.iqr_rel, ck))
                row[nm] = {"ms": s.candidate_ms, "ratio": s.ratio, "per_round": s.per_round,
                           "blocks": [b for _, b in cand_blocks[nm]]}
            if t_stream:
                say(f"  roofline: {nbytes / 2**20:.2f} MiB / {nbytes / t_stream / 1e9:.2f} TB/s (the read stream, this run) "
                    f"= {t_stream * 1e3:.2f} us; cuBLAS at {t_stream / lib_all.median:.3f} of it")
            rows.append(row)
            del sets
            if not square:
                del keep
            cp.get_default_memory_pool().free_all_blocks()
    finally:
        clocks.stop()
    dump["rows"] = rows
    dump["protocol"] = dataclasses.asdict(proto)
    names = [nm for nm in ("read stream", "sk_split_k", "sd_swap_ab", "s8_epilogue_overlap")]
    say("\n== summary (sustained protocol): library time / candidate time (> 1: faster than cuBLAS); "
        "[fraction of the read stream of the same bytes]")
    say(f"  {'shape':<16s}" + "".join(f"{nm:>24s}" for nm in names))
    for row in rows:
        t_st = row.get("read stream", {}).get("ms")
        cells = []
        for nm in names:
            if nm not in row:
                cells.append(f"{'-':>24s}")
                continue
            fr = f" [{t_st / row[nm]['ms']:.3f}]" if t_st else ""
            cells.append(f"{row[nm]['ratio']:.3f}{fr}".rjust(24))
        say(f"  {row['shape']:<16s}" + "".join(cells))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["probe", "protocol"])
    ap.add_argument("--out", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--m", type=int, nargs="*", default=None, help="only these M (N = K = 8192)")
    ap.add_argument("--no-square", action="store_true", help="protocol: leave out the square shape")
    ap.add_argument("--variants", action="store_true", help="protocol: the probe's variants as candidates too")
    ap.add_argument("--n", type=int, default=None, help="probe: this N instead of 8192 (K stays 8192)")
    ap.add_argument("--variant", type=int, nargs=3, action="append", metavar=("C", "S", "KB"),
                    help="probe: these variants (consumers, K pieces, boxes per stage) instead of VARIANTS")
    args = ap.parse_args(argv)
    from bwlab.checks.common import gpu_line
    out = open(args.out, "w") if args.out else None

    def say(s=""):   # printed and written as it comes, so a run cut short keeps what it measured
        print(s, flush=True)
        if out:
            out.write(s + "\n")
            out.flush()
    say(gpu_line())
    shapes = [s for s in SHAPES if args.m is None or s[0] in args.m]
    dump = {}
    if args.mode == "probe":
        if args.n:
            shapes = [(m, args.n, k) for m, _, k in shapes]
        probe(say, shapes, [tuple(v) for v in args.variant] if args.variant else None)
    else:
        sustained(say, shapes + ([] if args.no_square else [SQUARE]), dump, args.variants)
    say("")
    say("command: python docs/results/decode_protocol.py " + " ".join(sys.argv[1:] if argv is None else argv))
    if out:
        out.close()
    if args.json:
        import gzip
        import json
        with gzip.open(args.json, "wt") as f:
            json.dump(dump, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
