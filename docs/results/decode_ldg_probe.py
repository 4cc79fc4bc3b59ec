"""Can plain 16-byte loads stream B, in the access pattern a decode GEMM with B's fragments in registers
would use, as fast as the read stream? (H200 probe; no MMA: every loaded word is XOR-folded into a sink.)

    python docs/results/decode_ldg_probe.py [--out F]

Pattern 'rows': each CTA owns R = 64 W rows of B (W warpgroups, each warp 16 rows, lanes (g, q): rows g and
g + 8), a piece of K (K / S; S CTAs per row block), and walks it in blocks of 64 K: per block a thread loads 16 B
at column chunk q and q + 4 of each of its two rows (two 64-byte runs per row per warp instruction), D blocks
ahead of its fold. Against the read stream (decode_protocol.STREAM_SRC) of the same bytes, in the same run."""
from __future__ import annotations

import argparse
import sys

import numpy as np

SRC = r"""
template <int D>
__device__ __forceinline__ void body(const uint4* __restrict__ b, int n, int k, int split, unsigned* out) {
    // uint4 index of (row r, 16-byte chunk c): r * (k / 8) + c
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    const int rows_per_cta = blockDim.x / 2;   // 16 rows per warp
    const int rb = blockIdx.x / split, piece = blockIdx.x % split;
    const long row0 = (long)rb * rows_per_cta + 16 * warp + g;
    const int kc = k / 8, blocks = k / 64 / split, c0 = piece * blocks * 8;
    const uint4* p0 = b + row0 * kc + c0 + q;
    const uint4* p1 = p0 + 8L * kc;
    uint4 buf[D][4];
    unsigned acc = 0;
#pragma unroll
    for (int d = 0; d < D; ++d) {
        buf[d][0] = __ldg(p0 + 8 * d); buf[d][1] = __ldg(p0 + 8 * d + 4);
        buf[d][2] = __ldg(p1 + 8 * d); buf[d][3] = __ldg(p1 + 8 * d + 4);
    }
    for (int i = 0; i < blocks; i += D) {
#pragma unroll
        for (int d = 0; d < D; ++d) {
#pragma unroll
            for (int j = 0; j < 4; ++j) acc ^= buf[d][j].x ^ buf[d][j].y ^ buf[d][j].z ^ buf[d][j].w;
            const int nx = i + d + D;
            if (nx < blocks) {
                buf[d][0] = __ldg(p0 + 8 * nx); buf[d][1] = __ldg(p0 + 8 * nx + 4);
                buf[d][2] = __ldg(p1 + 8 * nx); buf[d][3] = __ldg(p1 + 8 * nx + 4);
            }
        }
    }
    if (acc == 0x9E3779B9u) out[0] = acc;
}
extern "C" __global__ void __launch_bounds__(512) rows2(const uint4* b, int n, int k, int s, unsigned* o) { body<2>(b, n, k, s, o); }
extern "C" __global__ void __launch_bounds__(512) rows4(const uint4* b, int n, int k, int s, unsigned* o) { body<4>(b, n, k, s, o); }
extern "C" __global__ void __launch_bounds__(512) rows8(const uint4* b, int n, int k, int s, unsigned* o) { body<8>(b, n, k, s, o); }
"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import cupy as cp
    sys.path.insert(0, "docs/results")
    from decode_protocol import event_ms, stream_calls
    from bwlab.checks.common import gpu_line
    from bwlab.device import gpu_info
    lines = [gpu_line()]
    info = gpu_info()
    n = k = 8192
    nbytes = n * k * 2
    nsets = 2
    mod = cp.RawModule(code=SRC, options=("-std=c++17",))
    rng = cp.random.default_rng(3)
    bufs = [rng.integers(0, 2**31, size=nbytes // 4, dtype=cp.uint32) for _ in range(nsets)]
    out = cp.zeros(1, cp.uint32)
    st, _ = stream_calls(nbytes, nsets, info.sm_count, bufs=[b for b in bufs])
    t_st = event_ms(st)
    lines.append(f"B only: {n} x {k} bf16 = {nbytes / 2**20:.0f} MiB, {nsets} buffers; read stream {t_st * 1e3:.1f} us "
                 f"({nbytes / t_st / 1e9:.2f} TB/s)")
    for w in (1, 2, 4):
        for s in (1, 2, 4):
            ctas = n // (64 * w) * s
            if ctas > 2 * info.sm_count or ctas < info.sm_count // 2:
                continue
            for d in (2, 4, 8):
                f = mod.get_function(f"rows{d}")
                calls = [lambda b=b, f=f, ctas=ctas, w=w, s=s: f((ctas,), (128 * w,), (b, np.int32(n), np.int32(k), np.int32(s), out))
                         for b in bufs]
                t = event_ms(calls)
                lines.append(f"  rows W{w} S{s} D{d}: {ctas} CTAs x {128 * w} threads, {D_BYTES(d, w)} KiB in flight per CTA: "
                             f"{t * 1e3:6.1f} us  {nbytes / t / 1e9:5.2f} TB/s  {t_st / t:.3f} of the stream")
                print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n\ncommand: python docs/results/decode_ldg_probe.py" + (f" --out {args.out}" if args.out else "")
    print(text)
    if args.out:
        open(args.out, "w").write(text + "\n")
    return 0


def D_BYTES(d, w):
    return d * 64 * 128 * w // 1024


if __name__ == "__main__":
    sys.exit(main())
