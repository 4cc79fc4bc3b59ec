"""Which addresses does an SM reach quickly? One thread on one SM times a load of every 256-byte chunk of a 16 MiB
buffer after L2 has been emptied of it (a 256 MiB stream read in between: the load goes to DRAM). The question behind it: the decode rung's CTAs stream their rows of B at rates that repeat
launch to launch and depend on the SM and on the rows together (docs/results/decode_probe_h200.txt, 28-29). If the
H200's L2 serves each address from a partition near some SMs and far from others, and if that choice is coarse
(long runs of chunks on one side), a CTA's rate could depend on where its rows live; if the sides alternate every
few chunks, every CTA's rows are half near and half far and the rows cannot matter that way.

    python docs/results/l2_partition_probe.py [--sms 0 1 2 ...] [--out F]

Per SM: the median latency (SM clocks) of a load that misses L2, how the chunks split into a fast and a
slow group (two-means on each SM's latencies), how long the runs of consecutive chunks in one group are, and how
well each SM's grouping agrees with the first SM's (+1: the same chunks fast, -1: the opposite ones).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

SRC = r"""
__device__ __forceinline__ unsigned ld_cg(const unsigned* p) {
    unsigned v;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
// One thread of one block on SM `target` times each chunk: two loads of its first two words (the host emptied L2 of
// the buffer before this launch, so the first goes to DRAM and the second waits on the same line), from before the
// first is issued until both values have been added into `sink` (the warp issues in order: the add of a value
// waits for it). Other blocks leave at once.
extern "C" __global__ void l2_map(const unsigned* __restrict__ buf, unsigned chunks, unsigned stride_words,
                                  unsigned target, unsigned* claim, unsigned* lat) {
    unsigned smid;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
    if (smid != target || threadIdx.x != 0 || atomicCAS(claim, 0u, 1u) != 0u) return;
    unsigned sink = 0;
    for (unsigned c = 0; c < chunks; ++c) {
        const unsigned* p = buf + (size_t)c * stride_words;
        const long long t0 = clock64();
        const unsigned v = ld_cg(p), w = ld_cg(p + 1);
        asm volatile("add.u32 %0, %0, %1;\n\tadd.u32 %0, %0, %2;" : "+r"(sink) : "r"(v), "r"(w));
        const long long t1 = clock64();
        lat[c] = unsigned(t1 - t0);
    }
    if (sink == 0x9E3779B9u) claim[1] = sink;
}
"""


def two_means(x):
    """Split x into a low and a high group (1-D two-means); returns the boolean 'high' mask and the two means."""
    lo, hi = np.percentile(x, 10), np.percentile(x, 90)
    for _ in range(50):
        cut = (lo + hi) / 2
        high = x > cut
        if high.all() or not high.any():
            break
        nlo, nhi = x[~high].mean(), x[high].mean()
        if abs(nlo - lo) < 1e-3 and abs(nhi - hi) < 1e-3:
            break
        lo, hi = nlo, nhi
    return x > (lo + hi) / 2, lo, hi


def runs(mask):
    """Lengths of the runs of equal values in a boolean array."""
    edges = np.flatnonzero(np.diff(mask.astype(np.int8))) + 1
    return np.diff(np.concatenate([[0], edges, [mask.size]]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--sms", type=int, nargs="*", default=[0, 1, 2, 3, 16, 17, 32, 33, 48, 64, 80, 96, 112, 128])
    ap.add_argument("--mib", type=int, default=16, help="buffer size (MiB)")
    ap.add_argument("--stride", type=int, default=256, help="bytes between the chunks timed")
    args = ap.parse_args(argv)
    import cupy as cp
    sys.path.insert(0, "docs/results")
    from decode_protocol import stream_calls, write_report
    from bwlab.checks.common import gpu_line
    from bwlab.device import gpu_info
    info = gpu_info()
    kern = cp.RawKernel(SRC, "l2_map")
    chunks = args.mib * 2**20 // args.stride
    buf = cp.random.default_rng(3).integers(0, 2**31, args.mib * 2**20 // 4, dtype=cp.uint32)
    flush, _keep = stream_calls(256 * 2**20, 1, info.sm_count)
    claim = cp.zeros(2, cp.uint32)
    lat = cp.zeros(chunks, cp.uint32)
    lines = [gpu_line(), f"one thread on one SM times a load of each {args.stride}-byte chunk of a {args.mib} MiB buffer "
             "that misses L2 (emptied of it by a 256 MiB read stream just before), until its value is used; SM clocks"]
    groups = {}
    for sm in args.sms:
        if sm >= info.sm_count:
            continue
        flush[0]()
        claim.fill(0)
        kern((4 * info.sm_count,), (32,), (buf, np.uint32(chunks), np.uint32(args.stride // 4), np.uint32(sm), claim,
                                          lat))
        cp.cuda.Device().synchronize()
        if int(claim[0].get()) != 1:
            lines.append(f"  SM {sm:3d}: no block of the launch ran there")
            continue
        for name, x in (("miss", lat.get().astype(np.float64)),):
            high, lo, hi = two_means(x)
            groups[(sm, name)] = high
            r = runs(high)
            blocks = high.reshape(args.mib, -1).mean(axis=1)
            line = (f"  SM {sm:3d} {name}: median {np.median(x):6.0f}, p10 {np.percentile(x, 10):6.0f}, p90 "
                    f"{np.percentile(x, 90):6.0f}; two groups {lo:6.0f} / {hi:6.0f} ({100 * high.mean():4.1f} % slow); "
                    f"runs of one group: median {np.median(r):.0f} chunks, mean {r.mean():.1f}, longest {r.max()}; "
                    f"slow share per MiB {blocks.min():.2f}-{blocks.max():.2f}")
            first = groups.get((args.sms[0], name))
            if first is not None and sm != args.sms[0]:
                agree = np.corrcoef(first.astype(float), high.astype(float))[0, 1]
                line += f"; agreement with SM {args.sms[0]}: {agree:+.2f}"
            lines.append(line)
            print(lines[-1], flush=True)
    write_report(lines, "l2_partition_probe.py", argv, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
