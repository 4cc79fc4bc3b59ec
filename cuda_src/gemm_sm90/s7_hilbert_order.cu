// bwlab-targets: sm_90a
// GEMM ladder, Hopper, step 7 — the tile order as a table: a Hilbert curve over the cluster tiles.
//
// Step 6 walks its 256 x 256 cluster tiles in bands: consecutive indices go down 8 cluster rows, then
// one column right. The clusters running at one time cover a block of about 8 x 8, and the blocks of
// consecutive waves touch along one side. Here the order is a table the host computes (one int2
// (cluster row, tile column) per index, bwlab/gemm/order.py): the Hilbert curve over the smallest
// power-of-two square that holds the grid, cells outside the grid left out. Every stretch of the
// curve is a compact patch; whether its waves share more A rows and B columns than step 6's bands (what
// the L2 could reuse) is counted by bwlab.gemm.order.footprint: they do not, and step 7 is no faster.
// The producer and the consumers read the same entry; nothing else changes.
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

constexpr int BM = 128, BN = 256, STAGES = 4, CONSUMERS = 2;
constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr u32 B_HALF = B_BYTES / 2;
constexpr u32 PIECE_BYTES = 64 * 64 * 2;   // one 64 x 64 bf16 piece of C, 128-byte rows

extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(384, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K, u64* stamps,
     const int2* __restrict__ order) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    u8* staging = smem + STAGES * STAGE_BYTES;   // 2 consumers x 2 buffers x one piece
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
                const int2 pair = order[p];   // (cluster row, tile column)
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
            const int2 pair = order[p];   // (cluster row, tile column)
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
            const int t = threadIdx.x % WG, r = 16 * (t / 32) + (t % 32) / 4;
#pragma unroll
            for (int j = 0; j < BN / 64; ++j) {
                u8* buf = staging + (2 * c + (j & 1)) * PIECE_BYTES;
                if (lead) bulk_wait_group_read<1>();
                named_barrier_sync(1 + c, WG);
#pragma unroll
                for (int q = 0; q < 8; ++q) {   // the 8 chunks of 16 bytes (8 columns) of each row
                    const int i = 4 * (8 * j + q);
                    const u32 at = (q ^ (r & 7)) * 16 + 4 * (t % 4);   // r and r + 8 share r & 7
                    *reinterpret_cast<u32*>(buf + r * 128 + at) = cvt_rn_bf16x2_f32(d[i], d[i + 1]);
                    *reinterpret_cast<u32*>(buf + (r + 8) * 128 + at) = cvt_rn_bf16x2_f32(d[i + 2], d[i + 3]);
                }
                fence_proxy_async_shared_cta();
                named_barrier_sync(1 + c, WG);
                if (lead) {
                    tma_store_2d(&tma_c, buf, n0 + 64 * j, m0 + 64 * c);
                    bulk_commit_group();
                }
            }
            if (lead) stamp(stamps, 3, 2 * n_tile + c, 1);
        }
        if (lead) bulk_wait_group<0>();   // every store has written C before the CTA exits
    }
    cluster_sync();   // the partner may still arrive on our barriers until it is done
}
