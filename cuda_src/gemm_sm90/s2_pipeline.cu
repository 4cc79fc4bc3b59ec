// bwlab-targets: sm_90a
// GEMM ladder, Hopper, step 2 — a ring of STAGES buffers (one more mechanism: the mbarrier pipeline).
//
// Step 1 with STAGES buffers instead of one, each with a `full` mbarrier (TMA's bytes have landed) and
// an `empty` mbarrier (all four warps are done reading it). Thread 0 starts the loads of the first
// STAGES k-slices at once; from then on, as soon as the wgmma of slice k-1 have finished
// (wgmma.wait_group 1 leaves only slice k's in flight), each warp arrives on that buffer's `empty`,
// and thread 0 waits for the phase and loads slice k-1+STAGES into it. TMA now runs STAGES-1 slices
// ahead of the tensor cores: the loads hide behind the math.
// Measured on an H100 (docs/results/gemm_explore_h100.txt): the ring costs SMEM, and SMEM decides how
// many CTAs share an SM. Step 1 (33 KiB) fits 3 per SM, whose warpgroups take turns — a pipeline built
// from occupancy; 2 stages still fit 3, 3 stages (97 KiB) fit 2, 4 or more fit one, and at one CTA per
// SM this step runs at about half of step 1's speed. Even at 3 CTAs per SM it stays below step 1: here
// thread 0 issues the loads and waits on `empty` inside the math loop, so warp 0 — and with it every
// wgmma of the warpgroup — waits while it does. Taking the loads off the math warps is the next step.
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

#ifndef GEMM_STAGES
#define GEMM_STAGES 3   // -DGEMM_STAGES=N to try another ring depth (N * 32 KiB of SMEM)
#endif
constexpr int BM = 128, BN = 128, STAGES = GEMM_STAGES;
constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;

extern "C" __global__ void __launch_bounds__(128, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K, u64* stamps) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);   // stage s: A at s * STAGE_BYTES, B right after it
    __shared__ alignas(8) u64 full[STAGES], empty[STAGES];

    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, k_tiles = K / BK;
    auto load = [&](int kt) {
        const int s = kt % STAGES;
        u8* sA = smem + s * STAGE_BYTES;
        stamp(stamps, 0, kt, 0);
        mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);
        tma_load_2d(sA, &tma_a, &full[s], kt * BK, m0);
        tma_load_2d(sA + A_BYTES, &tma_b, &full[s], kt * BK, n0);
        stamp(stamps, 0, kt, 1);
    };
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], 4);   // one arrival per warp
        }
        fence_mbarrier_init_release_cluster();
        for (int kt = 0; kt < STAGES && kt < k_tiles; ++kt) load(kt);
    }
    __syncthreads();

    float d0[BN / 2], d1[BN / 2];
    zero(d0);
    zero(d1);
    wgmma_fence();
    for (int kt = 0; kt < k_tiles; ++kt) {
        const int s = kt % STAGES;
        if (!mbarrier_wait(&full[s], (kt / STAGES) & 1, 1, STAGE_BYTES)) return;
        if (threadIdx.x == 0) stamp(stamps, 1, kt, 0);
        const u32 sA = smem_u32(smem + s * STAGE_BYTES);
        mma_stage<BN>(d0, sA, sA + A_BYTES);
        mma_stage<BN>(d1, sA + 64 * 128, sA + A_BYTES);
        wgmma_commit_group();
        wgmma_wait_group<1>();   // slice kt-1's wgmma are done: its buffer may be refilled
        if (kt > 0) {
            const int prev = kt - 1, ps = prev % STAGES;
            if (threadIdx.x == 0) stamp(stamps, 1, prev, 1);
            if (laneid() == 0) mbarrier_arrive(&empty[ps]);
            if (threadIdx.x == 0 && prev + STAGES < k_tiles) {
                if (!mbarrier_wait(&empty[ps], (prev / STAGES) & 1, 2, 0)) return;
                load(prev + STAGES);
            }
        }
    }
    wgmma_wait_group<0>();
    if (threadIdx.x == 0) stamp(stamps, 1, k_tiles - 1, 1);
    if (threadIdx.x == 0) stamp(stamps, 3, 0, 0);
    store_rows<BN>(d0, C, N, m0, n0);
    store_rows<BN>(d1, C, N, m0 + 64, n0);
    if (threadIdx.x == 0) stamp(stamps, 3, 0, 1);
}
