"""Can plain 16-byte loads stream B, in the access pattern a decode GEMM with B's fragments in registers
would use, as fast as the read stream? (H200 probe; no MMA: every loaded word is XOR-folded into a sink.)

    python docs/results/decode_ldg_probe.py [--out F]

Pattern 'rows': each CTA owns R = 64 W rows of B (W warpgroups, each warp 16 rows, lanes (g, q): rows g and
g + 8), a piece of K (K / S; S CTAs per row block), and walks it in blocks of 64 K: per block a thread loads 16 B
at column chunk q and q + 4 of each of its two rows (two 64-byte runs per row per warp instruction), D blocks
ahead of its fold. Against the read stream (decode_protocol.STREAM_SRC) of the same bytes, in the same run.
Then the same loads in a decode kernel's frame, a piece at a time ('framed'), and B through a TMA ring whose
consumers free each stage as soon as it lands (no MMA): the ring's own streaming rate."""
from __future__ import annotations

import argparse
import sys

import numpy as np

SRC = r"""
template <int D>
__device__ __forceinline__ void body(const uint4* __restrict__ b, int n, int k, int split, unsigned* out, int threads) {
    // uint4 index of (row r, 16-byte chunk c): r * (k / 8) + c
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, q = lane % 4;
    const int rows_per_cta = threads / 2;   // 16 rows per loading warp
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
// The same loads in the frame of a decode kernel, one piece at a time: `frame` bit 1 asks for 200 KiB of dynamic
// SMEM (the launch), bit 2 an idle extra warp (288 threads), bit 4 barrier set-up (mbarrier.init + a CTA barrier),
// bit 8 a store of a 16 x 8192 bf16 C at the end (each CTA its columns, as the rung's epilogue does).
template <int D>
__device__ __forceinline__ void framed(const uint4* b, int n, int k, int split, unsigned* out, int frame,
                                       unsigned short* c) {
    __shared__ alignas(8) unsigned long long bar[8];
    if (frame & 4) {
        if (threadIdx.x == 0)
            for (int i = 0; i < 8; ++i)
                asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"((unsigned)__cvta_generic_to_shared(&bar[i])));
        __syncthreads();
    }
    if (threadIdx.x < 256) body<D>(b, n, k, split, out, 256);
    if ((frame & 8) && threadIdx.x < 256) {
        const int rows = 128, col = blockIdx.x / split * rows + threadIdx.x % rows;
        for (int m = threadIdx.x / rows + 2 * (blockIdx.x % split); m < 16; m += 2 * split)
            c[(size_t)m * n + col] = (unsigned short)m;
    }
}
extern "C" __global__ void __launch_bounds__(288) framed4(const uint4* b, int n, int k, int s, unsigned* o, int f,
                                                          unsigned short* c) { framed<4>(b, n, k, s, o, f, c); }

// B through a TMA ring and nothing else: one thread loads boxes of 64 rows x 64 K (128B swizzle) into `stages`
// stages of KB boxes per 64-row slab (W slabs per CTA), the W consumer warpgroups wait for each stage and free it
// (no MMA): the ring's own streaming rate, in the rung's CTA shape (S CTAs per row block split K). `late` = 1:
// a stage is freed only once the next one has landed (as the rung frees stage it - 1 after issuing stage it's
// wgmma); `a_rows` > 0: each stage also holds KB boxes of A (a_rows x 64 K, read by every CTA), as the rung's do.
#include "gemm_sm90/gemm_common.cuh"
template <int KB, int W>
__device__ __forceinline__ void tma_ring(const TmaDescriptor* tb, const TmaDescriptor* ta, int n, int k, int split,
                                         int stages, int late, int a_rows, unsigned* out) {
    using namespace ladder;
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    __shared__ alignas(8) u64 full[32], empty[32];
    constexpr u32 BOX = 64 * 128;
    const u32 stage_bytes = KB * W * BOX + KB * a_rows * 128;
    const int n0 = blockIdx.x / split * 64 * W, iters = k / (64 * KB * split), it0 = blockIdx.x % split * iters;
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) { mbarrier_init(&full[s], 1); mbarrier_init(&empty[s], W * 4); }
        fence_mbarrier_init_release_cluster();
    }
    __syncthreads();
    if (threadIdx.x / 128 == W) {
        if (threadIdx.x % 128 == 0)
            for (int it = 0; it < iters; ++it) {
                const int s = it % stages;
                if (it >= stages && !mbarrier_wait(&empty[s], (it / stages + 1) & 1, 2, 0)) break;
                mbarrier_arrive_expect_tx(&full[s], stage_bytes);
                u8* st = smem + s * stage_bytes;
                for (int kb = 0; kb < KB; ++kb) {
                    for (int w = 0; w < W; ++w)
                        tma_load_2d(st + (kb * W + w) * BOX, tb, &full[s], (it0 + it) * KB * 64 + kb * 64, n0 + 64 * w);
                    if (a_rows)
                        tma_load_2d(st + KB * W * BOX + kb * a_rows * 128, ta, &full[s], (it0 + it) * KB * 64 + kb * 64, 0);
                }
            }
        return;
    }
    for (int it = 0; it < iters; ++it) {
        const int s = it % stages;
        if (!mbarrier_wait(&full[s], (it / stages) & 1, 1, stage_bytes)) break;
        __syncwarp();
        if (threadIdx.x % 32 == 0 && (!late || it > 0)) mbarrier_arrive(&empty[(it - late + stages) % stages]);
    }
}
#define RING(NAME, KB, W, T)                                                                                           \
    extern "C" __global__ void __launch_bounds__(T) NAME(const __grid_constant__ TmaDescriptor tb,                     \
                                                         const __grid_constant__ TmaDescriptor ta, int n, int k, int s, \
                                                         int st, int late, int a_rows, unsigned* o) {                  \
        tma_ring<KB, W>(&tb, &ta, n, k, s, st, late, a_rows, o);                                                      \
    }
RING(ring_kb4_w1, 4, 1, 256)
RING(ring_kb2_w1, 2, 1, 256)
RING(ring_kb2_w2, 2, 2, 384)
RING(ring_kb8_w1, 8, 1, 256)

extern "C" __global__ void __launch_bounds__(512) rows2(const uint4* b, int n, int k, int s, unsigned* o) { body<2>(b, n, k, s, o, blockDim.x); }
extern "C" __global__ void __launch_bounds__(512) rows4(const uint4* b, int n, int k, int s, unsigned* o) { body<4>(b, n, k, s, o, blockDim.x); }
extern "C" __global__ void __launch_bounds__(512) rows8(const uint4* b, int n, int k, int s, unsigned* o) { body<8>(b, n, k, s, o, blockDim.x); }
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
    import os
    mod = cp.RawModule(code=SRC, options=("-std=c++17", "-I" + os.path.join(os.getcwd(), "cuda_src")))
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
    # the loads of W2 S2 D4 in a decode kernel's frame, one piece at a time, then all of it
    f4 = mod.get_function("framed4")
    f4.max_dynamic_shared_size_bytes = 200 * 1024
    cbuf = cp.zeros(16 * n, cp.uint16)
    for frame, what in ((0, "the loads alone (288 threads, one warp idle)"), (1, "+ 200 KiB of dynamic SMEM"),
                        (4, "+ mbarrier.init and a CTA barrier"), (8, "+ C stored at the end"), (13, "all three")):
        calls = [lambda b=b, frame=frame: f4((128,), (288,), (b, np.int32(n), np.int32(k), np.int32(2), out,
                                                            np.int32(frame), cbuf),
                                             shared_mem=200 * 1024 if frame & 1 else 0) for b in bufs]
        t = event_ms(calls)
        lines.append(f"  framed W2 S2 D4, {what}: {t * 1e3:6.1f} us  {nbytes / t / 1e9:5.2f} TB/s  {t_st / t:.3f} of the stream")
        print(lines[-1], flush=True)
    # B through a TMA ring with no MMA: the ring's own rate in the rung's CTA shapes; then, at the first rung's
    # M = 16 and M = 128 stages, its depth, a late release and A's boxes in each stage, one at a time
    from bwlab.runtime import encode_tensor_map, tensor_map_arg
    from bwlab.tma.tensor_map import TensorMap
    abuf = cp.asarray(rng.integers(0, 2**31, 128 * k // 2, dtype=cp.uint32))
    amaps = {r: tensor_map_arg(encode_tensor_map(TensorMap("bfloat16", (k, r), (64, r), swizzle="128B"), abuf.data.ptr))
             for r in (16, 128)}
    cases = [("ring_kb4_w1", 4, 1, 1, None, 0, 0), ("ring_kb2_w1", 2, 1, 1, None, 0, 0), ("ring_kb8_w1", 8, 1, 1, None, 0, 0),
             ("ring_kb2_w2", 2, 2, 2, None, 0, 0)]
    cases += [("ring_kb4_w1", 4, 1, 1, st, late, a) for st, late, a in
              ((5, 0, 0), (4, 0, 0), (3, 0, 0), (5, 1, 0), (5, 0, 16), (5, 1, 16))]   # the rung's M = 16: 5 stages
    cases += [("ring_kb2_w2", 2, 2, 2, st, late, a) for st, late, a in
              ((4, 0, 0), (3, 0, 0), (4, 1, 0), (3, 0, 128), (3, 1, 128))]   # the rung's M = 128 ring: 4 stages
    for name, kb, w, split, stages, late, a_rows in cases:
        f = mod.get_function(name)
        stage = kb * w * 8192 + kb * a_rows * 128
        stages = stages or min(32, (227 * 1024 - 2048) // stage)
        f.max_dynamic_shared_size_bytes = stages * stage + 1024
        maps = [tensor_map_arg(encode_tensor_map(TensorMap("bfloat16", (k, n), (64, 64), swizzle="128B"), b.data.ptr))
                for b in bufs]
        am = amaps[a_rows or 16]
        ctas = n // (64 * w) * split
        calls = [lambda m=m, f=f, ctas=ctas, w=w, split=split, stages=stages, stage=stage, late=late, a_rows=a_rows:
                 f((ctas,), (128 * (w + 1),), (m, am, np.int32(n), np.int32(k), np.int32(split), np.int32(stages),
                                               np.int32(late), np.int32(a_rows), out),
                   shared_mem=stages * stage + 1024) for m in maps]
        t = event_ms(calls)
        lines.append(f"  TMA ring, no MMA: {kb} boxes x {w} slab(s) of 64 rows per stage, {stages} stages, {ctas} CTAs"
                     + (", freed late" if late else "") + (f", A's {a_rows}-row boxes in each stage" if a_rows else "")
                     + f": {t * 1e3:6.1f} us  {nbytes / t / 1e9:5.2f} TB/s  {t_st / t:.3f} of the stream")
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
