// bwlab-targets: sm_90a
// GEMM ladder, Hopper, the second decode rung — B copied by threads (cp.async), not by TMA.
//
// The first decode rung (sd_swap_ab.cu) streams each CTA's rows of B through a TMA ring. On an H200 it
// tops out near 0.89 of a read-only stream of the same bytes, whatever the ring's depth and stage size,
// while 16-byte loads by threads that walk the same rows reach 0.97-0.99 of it (docs/results/
// decode_ldg_probe.txt). Loading B into the consumers' own registers (wgmma with A from registers) does not
// work: before a wgmma that reads registers, the warp waits for every load still in flight into any of its
// registers (SASS WARPGROUP.ARRIVE), so each 64-K block cost a whole memory latency (decode_probe_h200.txt,
// 18). So here the producer warpgroup's 128 threads copy B with cp.async (16 bytes each, global -> SMEM, no
// register in between) into the same 128B-swizzled ring the TMA would fill, and the consumers are
// sd_swap_ab's: wgmma with both operands from SMEM, B's 64-row slabs as wgmma's A, A's MT rows as its N.
// A, which every CTA reads and L2 serves, still comes by TMA into each stage (thread 0).
//
// The copy pattern: warp w of the producer copies rows 16 w + g and 16 w + g + 8 of each 64-row box, lane
// (g, q) = (lane / 4, lane % 4) the 16-byte chunks q and q + 4 of each 128-byte row piece, so each copy
// instruction of a warp reads 8 rows x 64 contiguous bytes. Chunk c of box row r lands where TMA's 128B
// swizzle puts it: r * 128 + ((c ^ (r % 8)) * 16).
// Completion: cp.async writes SMEM through the generic proxy and wgmma reads it through the async proxy,
// so each producer thread waits for its own copies (cp.async.wait_group), fences the proxies
// (fence.proxy.async) and only then arrives on the stage's `full` barrier (count: the 128 producer threads
// and thread 0's expect-tx arrival for A). It signals stage it - LAG after issuing stage it, so that LAG
// stages of copies are in flight while the consumers read the ones signalled.
// K split over a cluster of SPLIT CTAs and the DSMEM sum of the partials are sd_swap_ab's.
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

#ifndef DECODE_MT
#define DECODE_MT 128      // wgmma's N: the host builds the smallest of 16 .. 256 that holds M
#endif
#ifndef DECODE_CONSUMERS
#define DECODE_CONSUMERS 2 // consumer warpgroups, 64 rows of B each (1 or 2)
#endif
#ifndef DECODE_SPLIT
#define DECODE_SPLIT 2     // CTAs of a cluster splitting K (1, 2 or 4)
#endif
#ifndef DECODE_KB
#define DECODE_KB 2        // boxes of 64 K per stage
#endif
#ifndef DECODE_LAG
#define DECODE_LAG 2       // stages of copies a producer thread has issued past the last one it signalled
#endif
#ifndef DECODE_GRID_WAIT
#define DECODE_GRID_WAIT 1 // 0: griddepcontrol.wait left out (a negative control: a PDL chain must then fail)
#endif
constexpr int BN = 64, MT = DECODE_MT, CONSUMERS = DECODE_CONSUMERS, SPLIT = DECODE_SPLIT, KB = DECODE_KB;
constexpr int LAG = DECODE_LAG, MAX_STAGES = 32, THREADS = WG * (1 + CONSUMERS);
constexpr u32 B_BOX = BN * BK * 2, B_BYTES = KB * CONSUMERS * B_BOX, A_BYTES = KB * MT * BK * 2;
constexpr u32 STAGE_BYTES = B_BYTES + A_BYTES;
static_assert(MT == 16 || MT == 32 || MT == 64 || MT == 128 || MT == 256, "wgmma's N");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups");
static_assert(SPLIT == 1 || SPLIT == 2 || SPLIT == 4, "K in one piece, two or four (a cluster of that many)");
static_assert(LAG >= 0 && LAG <= 7, "cp.async.wait_group takes 0 to 7 here");
static_assert(MT / 8 % SPLIT == 0, "each CTA of the cluster stores whole 8-column groups of the accumulator");
// Registers: the producer gives some back, the consumers take them (setmaxnreg), from 65536 / THREADS each
constexpr int PRODUCER_REGS = CONSUMERS == 1 ? 0 : 40, CONSUMER_REGS = CONSUMERS == 1 ? 0 : 232;

__device__ __forceinline__ void grid_launch_dependents() {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
__device__ __forceinline__ void grid_wait() {
    if (DECODE_GRID_WAIT) asm volatile("griddepcontrol.wait;" ::: "memory");
}
// cp.async.cg.shared.global (PTX ISA, cp.async): 16 bytes from global to shared memory, through L2 only
__device__ __forceinline__ void cp_async_16(u32 dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// This thread's copies of one stage: KB x CONSUMERS boxes of 64 rows x 64 K from row n0, K column k0.
// `row_g`: row n0 + 16 w + g of B; the thread copies that row and the one 8 below, chunks q and q + 4.
__device__ __forceinline__ void copy_b(u32 stage, const u16* row_g, int K, int k0, int w, int g, int q) {
#pragma unroll
    for (int kb = 0; kb < KB; ++kb)
#pragma unroll
        for (int c = 0; c < CONSUMERS; ++c)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const int r = 16 * w + g + 8 * h;   // row in the box
                const u16* src = row_g + size_t(BN * c + 8 * h) * K + k0 + kb * BK;
                const u32 box = stage + u32(kb * CONSUMERS + c) * B_BOX + u32(r) * 128u;
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int chunk = q + 4 * e;
                    cp_async_16(box + u32((chunk ^ (r & 7)) * 16), src + 8 * chunk);
                }
            }
}

// One stage for one consumer: KB boxes x 4 k16 steps of wgmma m64nNk16, B's 64 rows as the A operand,
// A's N rows as the B operand, both K-major in 128B-swizzled SMEM (sd_swap_ab.cu's mma_stage_t).
template <int N>
__device__ __forceinline__ void mma_stage_swapped(float (&d)[N / 2], u32 b_slab, u32 a_stage) {
#pragma unroll
    for (int kb = 0; kb < KB; ++kb)
#pragma unroll
        for (int k = 0; k < BK / 16; ++k) {
            const u64 db = desc_k128(b_slab + kb * CONSUMERS * B_BOX + 32 * k);
            const u64 da = desc_k128(a_stage + kb * N * 128 + 32 * k);
            if constexpr (N == 16) wgmma_mma_async_m64n16k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
            else if constexpr (N == 32) wgmma_mma_async_m64n32k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
            else if constexpr (N == 64) wgmma_mma_async_m64n64k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
            else if constexpr (N == 128) wgmma_mma_async_m64n128k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
            else wgmma_mma_async_m64n256k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
        }
}

template <int R>
__device__ __forceinline__ void pin(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

extern "C" __global__ void __cluster_dims__(SPLIT, 1, 1) __launch_bounds__(THREADS, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K, u64* stamps,
     int stages, int groups, const u16* __restrict__ B) {
    // (tma_b, tma_c and groups are the first rung's: the host passes the same arguments to both)
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);   // stage s: KB x CONSUMERS boxes of B, then KB boxes of A (MT x 64)
    __shared__ alignas(8) u64 full[MAX_STAGES], empty[MAX_STAGES];
    const int wg = threadIdx.x / WG, piece = SPLIT > 1 ? int(cluster_ctarank()) : 0;
    const int n0 = blockIdx.x / SPLIT * (BN * CONSUMERS);       // this CTA's rows of B (columns of C)
    const int k_iters = K / (KB * BK * SPLIT), it0 = piece * k_iters;   // its piece of K, in stages
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbarrier_init(&full[s], WG + 1);               // the producer threads' copies, and A's bytes
            mbarrier_init(&empty[s], CONSUMERS * 4);       // one arrival per consumer warp
        }
        fence_mbarrier_init_release_cluster();
    }
    grid_launch_dependents();   // the next grid may be scheduled: it reads only B until this one completes
    __syncthreads();

    if (wg == 0) {
        if constexpr (PRODUCER_REGS > 0) setmaxnreg_dec<PRODUCER_REGS>();
        const int t = threadIdx.x, w = t / 32, g = (t % 32) / 4, q = t % 4;
        const u16* row_g = B + size_t(n0 + 16 * w + g) * K;
        for (int it = 0; it < k_iters + LAG; ++it) {
            if (it < k_iters) {
                const int s = it % stages;
                if (it >= stages && !mbarrier_wait(&empty[s], (it / stages + 1) & 1, 2, 0)) break;
                const u32 stage = smem_u32(smem + s * STAGE_BYTES);
                copy_b(stage, row_g, K, (it0 + it) * KB * BK, w, g, q);
                if (t == 0) {   // A (the activations an earlier grid may write): after the wait on that grid
                    if (it == 0) grid_wait();
                    mbarrier_arrive_expect_tx(&full[s], A_BYTES);
#pragma unroll
                    for (int kb = 0; kb < KB; ++kb)
                        tma_load_2d(smem + s * STAGE_BYTES + B_BYTES + kb * MT * 128, &tma_a, &full[s],
                                    ((it0 + it) * KB + kb) * BK, 0);
                }
            }
            cp_async_commit();   // (an empty group past the last stage: the waits below count groups)
            if (it >= LAG) {     // stage it - LAG's copies by this thread have landed: fence, then signal
                cp_async_wait<LAG>();
                fence_proxy_async_shared_cta();
                mbarrier_arrive(&full[(it - LAG) % stages]);
            }
        }
        if (SPLIT > 1) {   // the consumers' two cluster barriers (every thread of the cluster meets them)
            cluster_sync();
            cluster_sync();
        }
        return;
    }

    if constexpr (CONSUMER_REGS > 0) setmaxnreg_inc<CONSUMER_REGS>();
    const int c = wg - 1, t = threadIdx.x % WG;
    const bool lead = t == 0;
    float d[MT / 2];
    zero(d);
    wgmma_fence();
    bool ok = true;
    for (int it = 0; it < k_iters; ++it) {
        const int s = it % stages;
        if (!mbarrier_wait(&full[s], (it / stages) & 1, 1, A_BYTES)) {
            ok = false;
            break;
        }
        const u32 st = smem_u32(smem + s * STAGE_BYTES);
        mma_stage_swapped<MT>(d, st + c * B_BOX, st + B_BYTES);
        wgmma_commit_group();
        wgmma_wait_group<1>();   // keep this stage's wgmma in flight; hand back the stage before
        if (it > 0 && laneid() == 0) mbarrier_arrive(&empty[(it - 1) % stages]);
    }
    wgmma_wait_group<0>();
    pin(d);
    grid_wait();   // before C is written (C may be read by the grid ahead)
    if (lead) stamp(stamps, 3, c, 0);

    // Columns j in [j0, j1) of the accumulator (8 of C's rows each) are this CTA's to store; the other
    // CTAs of the cluster send their partials of them (sd_swap_ab.cu's exchange, the ring reused).
    constexpr int J = MT / 8, Q = J / SPLIT;
    const int j0 = piece * Q, j1 = j0 + Q;
    if (SPLIT > 1) {
        const u32 xbuf = smem_u32(smem) + u32(c * (SPLIT - 1) * Q * WG) * 16u;
        cluster_sync();
        if (ok) {
#pragma unroll
            for (int j = 0; j < J; ++j) {
                const int owner = j / Q;
                if (owner == piece) continue;
                const u32 slot = u32((piece - owner - 1 + SPLIT) % SPLIT);
                const u32 peer = mapa_shared_cluster(xbuf, u32(owner));
                st_shared_cluster_v4_b32(peer + u32((slot * Q + j % Q) * WG + t) * 16u, __float_as_uint(d[4 * j]),
                                         __float_as_uint(d[4 * j + 1]), __float_as_uint(d[4 * j + 2]),
                                         __float_as_uint(d[4 * j + 3]));
            }
        }
        cluster_sync();
        if (ok) {
#pragma unroll
            for (int j = 0; j < J; ++j)
                if (j >= j0 && j < j1) {   // add.rn in the order of the pieces, (p0 + p1) + ..., in every CTA
                    float sum[4];
#pragma unroll
                    for (int p = 0; p < SPLIT; ++p) {
                        float v[4] = {d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]};
                        if (p != piece) {
                            u32 w[4];
                            const u32 slot = u32((p - piece - 1 + SPLIT) % SPLIT);
                            ld_shared_v4_b32(xbuf + u32((slot * Q + j % Q) * WG + t) * 16u, w);
#pragma unroll
                            for (int e = 0; e < 4; ++e) v[e] = __uint_as_float(w[e]);
                        }
#pragma unroll
                        for (int e = 0; e < 4; ++e) sum[e] = p == 0 ? v[e] : __fadd_rn(sum[e], v[e]);
                    }
#pragma unroll
                    for (int e = 0; e < 4; ++e) d[4 * j + e] = sum[e];
                }
        }
    }
    if (ok) {
        // the store transposes C^T back (sd_swap_ab.cu): lanes g and g ^ 1 swap one value, each writes a
        // bf16 pair of one row of C
        const int lane = t % 32, g = lane / 4, q = lane % 4;
        const bool odd = g & 1;
        const int n = n0 + BN * c + 16 * (t / 32) + (g & ~1);
#pragma unroll
        for (int j = 0; j < J; ++j) {
            if (j < j0 || j >= j1) continue;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float lo = d[4 * j + 2 * h], hi = d[4 * j + 2 * h + 1];
                const float got = __shfl_xor_sync(0xffffffffu, odd ? lo : hi, 4);
                const int m = 8 * j + 2 * q + (odd ? 1 : 0);
                const u32 pair = odd ? cvt_rn_bf16x2_f32(got, hi) : cvt_rn_bf16x2_f32(lo, got);
                if (m < M) *reinterpret_cast<u32*>(C + size_t(m) * N + n + 8 * h) = pair;
            }
        }
    }
    if (lead) stamp(stamps, 3, c, 1);
}
