// bwlab-targets: sm_90a
// GEMM ladder, Hopper, the decode rung — swap A and B, stream B once.
//
// At decode shapes (M = 16 .. 256 rows of A against N = K = 8192) the work is reading B: 128 MiB of it
// for 2-34 GFLOP, so the time is B's bytes over the HBM bandwidth, not the math. The ladder's 128-row
// tiles waste most of the MMA on rows A does not have, and split-K (sk) pays a round trip of f32
// partials. Here the roles swap: C^T = B A^T. B's rows fill wgmma's M = 64 (one 64-row slab of B per
// CTA, its whole K range), and A's M rows are wgmma's N (n = 16, 32, 64, 128 or 256: MT, the smallest
// that holds M; the rows past M come in as zeros from TMA's out-of-bounds fill and are never stored).
// N / 64 = 128 CTAs at N = 8192, about one per SM, each streaming its 1 MiB of B through a ring as
// deep as the SMEM holds (`stages`, from the host), each stage KB boxes of 64 K.
// A is read by every CTA: CLUSTER CTAs side by side along N share it by TMA multicast (each loads a
// slice of A's rows into all of them), so L2 serves A CLUSTER times less often; a stage is free again
// only when the consumer warps of every CTA of the cluster have released it (remote arrivals), since
// any of them may write into it next.
// The accumulator is C^T (64 rows of N x MT columns of M); the store transposes it back: lanes t and
// t ^ 4 hold rows n, n + 1 of the same columns, swap one value (shfl) and each writes a bf16 pair of
// one row of C.
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

#ifndef DECODE_CLUSTER
#define DECODE_CLUSTER 2   // CTAs along N sharing A by multicast
#endif
#ifndef DECODE_MT
#define DECODE_MT 128      // wgmma's N: the host builds the smallest of 16 .. 256 that holds M
#endif
#ifndef DECODE_KB
#define DECODE_KB 2        // boxes of 64 K per stage
#endif
constexpr int BN = 64, MT = DECODE_MT, CLUSTER = DECODE_CLUSTER, KB = DECODE_KB, MAX_STAGES = 32;
constexpr u32 B_BOX = BN * BK * 2;   // one 64-row box of B: 8 KiB
static_assert(MT == 16 || MT == 32 || MT == 64 || MT == 128 || MT == 256, "wgmma n");
static_assert(CLUSTER == 1 || CLUSTER == 2 || CLUSTER == 4 || CLUSTER == 8, "the cluster is 1, 2, 4 or 8 CTAs");

// One stage: KB boxes x 4 k16 steps of wgmma m64nNk16, B's 64 rows as the A operand, A's N rows as B.
template <int N>
__device__ __forceinline__ void mma_stage_t(float (&d)[N / 2], u32 b_stage, u32 a_stage) {
#pragma unroll
    for (int kb = 0; kb < KB; ++kb)
#pragma unroll
        for (int k = 0; k < BK / 16; ++k) {
            const u64 db = desc_k128(b_stage + kb * B_BOX + 32 * k), da = desc_k128(a_stage + kb * N * 128 + 32 * k);
            if constexpr (N == 16) wgmma_mma_async_m64n16k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
            else if constexpr (N == 32) wgmma_mma_async_m64n32k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
            else if constexpr (N == 64) wgmma_mma_async_m64n64k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
            else if constexpr (N == 128) wgmma_mma_async_m64n128k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
            else wgmma_mma_async_m64n256k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
        }
}

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(256, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K, u64* stamps,
     int stages) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);   // stage s: KB boxes of B (64 x 64), then KB boxes of A (MT x 64)
    __shared__ alignas(8) u64 full[MAX_STAGES], empty[MAX_STAGES];
    constexpr u32 A_BYTES = KB * MT * BK * 2, STAGE_BYTES = KB * B_BOX + A_BYTES;
    constexpr int SLICE = MT / CLUSTER < 8 ? 8 : MT / CLUSTER;   // A rows each CTA loads: whole 8-row atoms
    const int wg = threadIdx.x / WG, k_iters = K / (KB * BK), n0 = blockIdx.x * BN;
    const u32 rank = cluster_ctarank();
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], CLUSTER * 4);   // each consumer warp of each CTA of the cluster
        }
        fence_mbarrier_init_release_cluster();
    }
    cluster_sync();   // no CTA multicasts into a ring whose barriers are not initialised yet

    if (wg == 0) {
        if (threadIdx.x == 0) {
            const u16 mask = u16((1u << CLUSTER) - 1);
            const bool loads_a = int(rank) * SLICE < MT;
            for (int it = 0; it < k_iters; ++it) {
                const int s = it % stages;
                stamp(stamps, 0, it, 0);
                // every consumer warp of the cluster has released this stage's previous use
                if (it >= stages && !mbarrier_wait(&empty[s], (it / stages + 1) & 1, 2, 0)) break;
                u8* sB = smem + s * STAGE_BYTES;
                u8* sA = sB + KB * B_BOX;
                mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);   // own B + all of A (slices from every CTA)
#pragma unroll
                for (int kb = 0; kb < KB; ++kb) {
                    const int k0 = (it * KB + kb) * BK;
                    tma_load_2d(sB + kb * B_BOX, &tma_b, &full[s], k0, n0);
                    if (loads_a) {
                        u8* dst = sA + kb * MT * 128 + rank * SLICE * 128;
                        if (CLUSTER == 1) tma_load_2d(dst, &tma_a, &full[s], k0, 0);
                        else tma_load_multicast_2d(dst, &tma_a, &full[s], mask, k0, int(rank) * SLICE);
                    }
                }
                stamp(stamps, 0, it, 1);
            }
        }
    } else {
        const bool lead = threadIdx.x % WG == 0;
        auto release = [&](int it) {   // this warp is done reading stage it % stages, in every CTA's ring
            if (laneid() == 0) {
                const int s = it % stages;
                if (CLUSTER == 1) {
                    mbarrier_arrive(&empty[s]);
                } else {
#pragma unroll
                    for (int r = 0; r < CLUSTER; ++r)
                        mbarrier_arrive_remote(mapa_shared_cluster(smem_u32(&empty[s]), r));
                }
            }
        };
        float d[MT / 2];
        zero(d);
        wgmma_fence();
        bool ok = true;
        for (int it = 0; it < k_iters; ++it) {
            const int s = it % stages;
            if (!mbarrier_wait(&full[s], (it / stages) & 1, 1, STAGE_BYTES)) {
                ok = false;
                break;
            }
            if (lead) stamp(stamps, 1, it, 0);
            const u32 sB = smem_u32(smem + s * STAGE_BYTES);
            mma_stage_t<MT>(d, sB, sB + KB * B_BOX);
            wgmma_commit_group();
            wgmma_wait_group<1>();
            if (it > 0) {
                if (lead) stamp(stamps, 1, it - 1, 1);
                release(it - 1);
            }
        }
        wgmma_wait_group<0>();
        if (ok) {
            if (lead) stamp(stamps, 1, k_iters - 1, 1);
            release(k_iters - 1);
            if (lead) stamp(stamps, 3, 0, 0);
            // d[i] = C^T[16 w + g + 8 h][8 j + 2 q + e] (w = warp, g = lane / 4, q = lane % 4, i = 4 j + 2 h + e):
            // the lane with g even keeps column e = 0 and takes its row-(n + 1) neighbour's value there;
            // the lane with g odd keeps column e = 1 and takes its row-(n - 1) neighbour's value
            const int t = threadIdx.x % WG, g = (t % 32) / 4, q = t % 4;
            const bool odd = g & 1;
            const int n = n0 + 16 * (t / 32) + (g & ~1);
#pragma unroll
            for (int j = 0; j < MT / 8; ++j)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const float lo = d[4 * j + 2 * h], hi = d[4 * j + 2 * h + 1];
                    const float got = __shfl_xor_sync(0xffffffffu, odd ? lo : hi, 4);
                    const int m = 8 * j + 2 * q + (odd ? 1 : 0);
                    const u32 pair = odd ? cvt_rn_bf16x2_f32(got, hi) : cvt_rn_bf16x2_f32(lo, got);
                    if (m < M) *reinterpret_cast<u32*>(C + size_t(m) * N + n + 8 * h) = pair;
                }
            if (lead) stamp(stamps, 3, 0, 1);
        }
    }
    cluster_sync();   // the others may still multicast into this CTA's ring or arrive on its barriers
}
