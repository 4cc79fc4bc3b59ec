// bwlab-targets: sm_90a
// GEMM ladder, Hopper, step 5 — a cluster of two CTAs sharing B through TMA multicast.
//
// The two CTAs of a cluster compute vertically adjacent tiles (rows 256*p .. +128 and +128 .. +256,
// the same 256 columns), so they need the same B slice at every k. Each CTA loads half of it (128 of
// its 256 rows) with one multicast TMA that lands in BOTH CTAs' SMEM at the same offset and completes
// bytes on both CTAs' `full` barriers: L2 serves each B byte once per cluster instead of twice. A
// buffer may be refilled only when both CTAs are done with it, so every consumer warp arrives on its
// own CTA's `empty` barrier and on its partner's (mapa + a remote mbarrier.arrive). The CTAs meet at a
// cluster barrier after set-up (no multicast before the partner's barriers exist) and before exit (no
// remote arrival into a CTA that has left).
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

constexpr int BM = 128, BN = 256, STAGES = 4, CONSUMERS = 2, GROUP_M = 16;
constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr u32 B_HALF = B_BYTES / 2;

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)
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
            mbarrier_init(&empty[s], 2 * CONSUMERS * 4);   // every consumer warp of both CTAs
        }
        fence_mbarrier_init_release_cluster();
    }
    cluster_sync();

    if (wg == 0) {
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            int it = 0;
            bool ok = true;
            for (int p = cluster; ok && p < pairs; p += clusters) {
                const int2 pair = tile_of<GROUP_M / 2>(p, pairs_m, tiles_n);
                const int m0 = (2 * pair.x + rank) * BM, n0 = pair.y * BN;
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    stamp(stamps, 0, it, 0);
                    if (it >= STAGES && !mbarrier_wait(&empty[s], (it / STAGES + 1) & 1, 2, 0)) {
                        ok = false;
                        break;
                    }
                    u8* sA = smem + s * STAGE_BYTES;
                    mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);   // A + both halves of B
                    tma_load_2d(sA, &tma_a, &full[s], kt * BK, m0);
                    tma_load_multicast_2d(sA + A_BYTES + rank * B_HALF, &tma_b, &full[s], 0x3,
                                          kt * BK, n0 + rank * (BN / 2));
                    stamp(stamps, 0, it, 1);
                }
            }
        }
    } else {
        setmaxnreg_inc<232>();
        const int c = wg - 1;
        const bool lead = threadIdx.x % WG == 0;
        float d[BN / 2];
        int it = 0, n_tile = 0;
        bool ok = true;
        auto release = [&](int slice) {
            if (laneid() == 0) {
                const int s = slice % STAGES;
                mbarrier_arrive(&empty[s]);
                mbarrier_arrive_remote(mapa_shared_cluster(smem_u32(&empty[s]), peer));
            }
        };
        for (int p = cluster; ok && p < pairs; p += clusters, ++n_tile) {
            const int2 pair = tile_of<GROUP_M / 2>(p, pairs_m, tiles_n);
            const int m0 = (2 * pair.x + rank) * BM, n0 = pair.y * BN;
            zero(d);
            wgmma_fence();
            for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                const int s = it % STAGES;
                if (!mbarrier_wait(&full[s], (it / STAGES) & 1, 1, STAGE_BYTES)) {
                    ok = false;
                    break;
                }
                if (lead) stamp(stamps, 1 + c, it, 0);
                const u32 sA = smem_u32(smem + s * STAGE_BYTES);
                mma_stage<BN>(d, sA + c * 64 * 128, sA + A_BYTES);
                wgmma_commit_group();
                wgmma_wait_group<1>();
                if (kt > 0) {
                    if (lead) stamp(stamps, 1 + c, it - 1, 1);
                    release(it - 1);
                }
            }
            wgmma_wait_group<0>();
            if (!ok) break;
            if (lead) stamp(stamps, 1 + c, it - 1, 1);
            release(it - 1);
            if (lead) stamp(stamps, 3, 2 * n_tile + c, 0);
            store_rows<BN>(d, C, N, m0 + 64 * c, n0);
            if (lead) stamp(stamps, 3, 2 * n_tile + c, 1);
        }
    }
    cluster_sync();   // the partner may still arrive on our barriers until it is done
}
