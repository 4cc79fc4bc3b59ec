// bwlab-targets: sm_90a
// GEMM ladder, Hopper, step 3 — warp specialisation with register reallocation.
//
// Three warpgroups. Warpgroup 0 is the producer: it gives most of its registers back
// (setmaxnreg.dec 40) and one of its threads does nothing but wait for a free buffer and start TMA
// loads. Warpgroups 1 and 2 are consumers: they take the registers (setmaxnreg.inc 232) and each
// computes 64 rows of a 128 x 256 tile with wgmma m64n256k16 (128 accumulator floats per thread).
// The loads no longer wait behind the math in one thread's program order, and the tile is twice
// as wide, so every byte brought into SMEM feeds twice the math (B is read once for 128 rows).
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

constexpr int BM = 128, BN = 256, STAGES = 4, CONSUMERS = 2;
constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;

extern "C" __global__ void __launch_bounds__(384, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K, u64* stamps) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);   // stage s: A (128 x 64) then B (256 x 64)
    __shared__ alignas(8) u64 full[STAGES], empty[STAGES];

    const int wg = threadIdx.x / WG, m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, k_tiles = K / BK;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], CONSUMERS * 4);   // one arrival per consumer warp
        }
        fence_mbarrier_init_release_cluster();
    }
    __syncthreads();

    if (wg == 0) {
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            for (int kt = 0; kt < k_tiles; ++kt) {
                const int s = kt % STAGES;
                stamp(stamps, 0, kt, 0);
                if (kt >= STAGES && !mbarrier_wait(&empty[s], (kt / STAGES + 1) & 1, 2, 0)) return;
                u8* sA = smem + s * STAGE_BYTES;
                mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);
                tma_load_2d(sA, &tma_a, &full[s], kt * BK, m0);
                tma_load_2d(sA + A_BYTES, &tma_b, &full[s], kt * BK, n0);
                stamp(stamps, 0, kt, 1);
            }
        }
        return;
    }

    setmaxnreg_inc<232>();
    const int c = wg - 1;              // this consumer's 64-row slab of the tile
    const bool lead = threadIdx.x % WG == 0;
    float d[BN / 2];
    zero(d);
    wgmma_fence();
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % STAGES;
        if (!mbarrier_wait(&full[s], (kt / STAGES) & 1, 1, STAGE_BYTES)) return;
        if (lead) stamp(stamps, 1 + c, kt, 0);
        const u32 sA = smem_u32(smem + s * STAGE_BYTES);
        mma_stage<BN>(d, sA + c * 64 * 128, sA + A_BYTES);
        wgmma_commit_group();
        wgmma_wait_group<1>();
        if (kt > 0) {
            if (lead) stamp(stamps, 1 + c, kt - 1, 1);
            if (laneid() == 0) mbarrier_arrive(&empty[(kt - 1) % STAGES]);
        }
    }
    wgmma_wait_group<0>();
    if (lead) stamp(stamps, 1 + c, k_tiles - 1, 1);
    if (lead) stamp(stamps, 3, c, 0);
    store_rows<BN>(d, C, N, m0 + 64 * c, n0);
    if (lead) stamp(stamps, 3, c, 1);
}
