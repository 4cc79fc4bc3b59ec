// bwlab-targets: sm_90a
// GEMM ladder, Hopper, step 4 — persistent CTAs with a tile scheduler.
//
// Step 3 launched one CTA per tile: 2048 CTAs for 8192^3, each paying its prologue (barrier set-up,
// the pipeline filling) and its epilogue with the tensor cores idle. Here the grid is one CTA per
// SM and each CTA walks tiles blockIdx.x, blockIdx.x + gridDim.x, ... in a grouped order (16 tile
// rows per band, so the CTAs running together share A and B tiles in L2). The producer runs on
// into the next tile's k-slices while the consumers write the last tile's C: the ring of buffers
// never drains between tiles.
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

constexpr int BM = 128, BN = 256, STAGES = 4, CONSUMERS = 2, GROUP_M = 16;
constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;

extern "C" __global__ void __launch_bounds__(384, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K, u64* stamps) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    __shared__ alignas(8) u64 full[STAGES], empty[STAGES];

    const int wg = threadIdx.x / WG, k_tiles = K / BK;
    const int tiles_m = M / BM, tiles_n = N / BN, tiles = tiles_m * tiles_n;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], CONSUMERS * 4);
        }
        fence_mbarrier_init_release_cluster();
    }
    __syncthreads();

    if (wg == 0) {
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            int it = 0;   // k-slices loaded so far by this CTA, over all its tiles
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                const int2 tile = tile_of<GROUP_M>(t, tiles_m, tiles_n);
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    stamp(stamps, 0, it, 0);
                    if (it >= STAGES && !mbarrier_wait(&empty[s], (it / STAGES + 1) & 1, 2, 0)) return;
                    u8* sA = smem + s * STAGE_BYTES;
                    mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);
                    tma_load_2d(sA, &tma_a, &full[s], kt * BK, tile.x * BM);
                    tma_load_2d(sA + A_BYTES, &tma_b, &full[s], kt * BK, tile.y * BN);
                    stamp(stamps, 0, it, 1);
                }
            }
        }
        return;
    }

    setmaxnreg_inc<232>();
    const int c = wg - 1;
    const bool lead = threadIdx.x % WG == 0;
    float d[BN / 2];
    int it = 0, n_tile = 0;
    for (int t = blockIdx.x; t < tiles; t += gridDim.x, ++n_tile) {
        const int2 tile = tile_of<GROUP_M>(t, tiles_m, tiles_n);
        zero(d);
        wgmma_fence();
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
            const int s = it % STAGES;
            if (!mbarrier_wait(&full[s], (it / STAGES) & 1, 1, STAGE_BYTES)) return;
            if (lead) stamp(stamps, 1 + c, it, 0);
            const u32 sA = smem_u32(smem + s * STAGE_BYTES);
            mma_stage<BN>(d, sA + c * 64 * 128, sA + A_BYTES);
            wgmma_commit_group();
            wgmma_wait_group<1>();
            if (kt > 0) {
                if (lead) stamp(stamps, 1 + c, it - 1, 1);
                if (laneid() == 0) mbarrier_arrive(&empty[(it - 1) % STAGES]);
            }
        }
        wgmma_wait_group<0>();
        if (lead) stamp(stamps, 1 + c, it - 1, 1);
        if (laneid() == 0) mbarrier_arrive(&empty[(it - 1) % STAGES]);
        if (lead) stamp(stamps, 3, 2 * n_tile + c, 0);
        store_rows<BN>(d, C, N, tile.x * BM + 64 * c, tile.y * BN);
        if (lead) stamp(stamps, 3, 2 * n_tile + c, 1);
    }
}
