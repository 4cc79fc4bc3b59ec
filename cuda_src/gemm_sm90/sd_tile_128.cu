// bwlab-targets: sm_90a
// GEMM ladder, Hopper, a decode probe at M = 256: cuBLAS's layout with one MMA warpgroup.
//
// At 256 x 8192 x 8192 cuBLAS runs 128 CTAs, each one 128 x 128 tile of C over the whole of K, in clusters of
// two along M that share B's slice by TMA multicast (step 5's mechanism), 64 K per stage, 6 stages
// (docs/results/decode_ncu_h200.txt). Its SASS (Nsight Compute's source page) issues every wgmma of the tile
// from ONE warpgroup: two m64n128 accumulators (rows 0-63 and 64-127 of the tile, 128 registers a thread),
// eight wgmma per stage. Step 5 with the same tile and ring splits the rows between two consumer warpgroups
// of 64 registers each and runs at about 0.85 of cuBLAS there, its consumers waiting on `full` where
// cuBLAS's wait on the tensor pipe (docs/results/decode_probe_h200.txt, 45). This kernel is step 5 with
// that one change: a producer warpgroup (one thread issues the loads) and one MMA warpgroup that holds the
// whole tile, keeps one stage's wgmma in flight (wait_group 1) and hands back the stage before.
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

#ifndef TILE_STAGES
#define TILE_STAGES 6
#endif
constexpr int BM = 128, BN = 128, STAGES = TILE_STAGES;
constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr u32 B_HALF = B_BYTES / 2;
static_assert(STAGES >= 2 && STAGES * STAGE_BYTES <= 7 * 32768, "a ring of 2 to 7 stages of 32 KiB");

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(256, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K, u64* stamps) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    __shared__ alignas(8) u64 full[STAGES], empty[STAGES];

    const int wg = threadIdx.x / WG, k_tiles = K / BK;
    const u32 rank = cluster_ctarank(), peer = rank ^ 1;
    const int pairs_m = M / (2 * BM), tiles_n = N / BN, pairs = pairs_m * tiles_n;
    const int cluster = blockIdx.x / 2, clusters = gridDim.x / 2;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], 2 * 4);   // every MMA warp of both CTAs
        }
        fence_mbarrier_init_release_cluster();
    }
    cluster_sync();

    if (wg == 0) {
        if (threadIdx.x == 0) {
            int it = 0;
            bool ok = true;
            for (int p = cluster; ok && p < pairs; p += clusters) {
                const int m0 = (2 * (p % pairs_m) + rank) * BM, n0 = (p / pairs_m) * BN;
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    if (it >= STAGES && !mbarrier_wait(&empty[s], (it / STAGES + 1) & 1, 2, 0)) {
                        ok = false;
                        break;
                    }
                    u8* sA = smem + s * STAGE_BYTES;
                    mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);   // A + both halves of B
                    tma_load_2d(sA, &tma_a, &full[s], kt * BK, m0);
                    tma_load_multicast_2d(sA + A_BYTES + rank * B_HALF, &tma_b, &full[s], 0x3,
                                          kt * BK, n0 + rank * (BN / 2));
                }
            }
        }
    } else {
        float d0[BN / 2], d1[BN / 2];   // rows 0-63 and 64-127 of the tile
        int it = 0;
        bool ok = true;
        auto release = [&](int slice) {
            if (laneid() == 0) {
                const int s = slice % STAGES;
                mbarrier_arrive(&empty[s]);
                mbarrier_arrive_remote(mapa_shared_cluster(smem_u32(&empty[s]), peer));
            }
        };
        for (int p = cluster; ok && p < pairs; p += clusters) {
            const int m0 = (2 * (p % pairs_m) + rank) * BM, n0 = (p / pairs_m) * BN;
            zero(d0);
            zero(d1);
            wgmma_fence();
            for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                const int s = it % STAGES;
                if (!mbarrier_wait(&full[s], (it / STAGES) & 1, 1, STAGE_BYTES)) {
                    ok = false;
                    break;
                }
                const u32 sA = smem_u32(smem + s * STAGE_BYTES);
                wgmma_fence();   // (without it ptxas serializes the wgmma: C7520)
                mma_stage<BN>(d0, sA, sA + A_BYTES);
                mma_stage<BN>(d1, sA + 64 * 128, sA + A_BYTES);
                wgmma_commit_group();
                wgmma_wait_group<1>();
                if (kt > 0) release(it - 1);
            }
            wgmma_wait_group<0>();
            if (!ok) break;
            release(it - 1);
            store_rows<BN>(d0, C, N, m0, n0);
            store_rows<BN>(d1, C, N, m0 + 64, n0);
        }
    }
    cluster_sync();   // the partner may still arrive on our barriers until it is done
}
