// bwlab-targets: sm_90a
// The capstone, Hopper: a persistent, warp-specialised GEMM whose pipeline you write.
//
// C[M x N] = A[M x K] * B[N x K]^T, bf16 in, f32 accumulation in registers, bf16 out (the ladder's
// problem, gemm_sm90/gemm_common.cuh). Everything is here but the pipeline: the TODO regions hold the
// waits, the arrivals and the expect_tx that make the producer and the consumers meet.
//
//   warpgroup 0 (producer)     one thread walks this CTA's tiles t = blockIdx.x, + gridDim.x, ... and
//                              their k-slices; slice `it` (counted over all its tiles) goes into stage
//                              it % STAGES: that stage's (it / STAGES)-th fill
//   warpgroups 1, 2 (consumers) the same walk; each computes 64 rows of the 128 x 256 tile with wgmma
//
//   full[s]   init count 1: completes a phase when the producer has arrived (arrive.expect_tx) AND
//             every byte it announced has landed (the TMA loads' complete_tx)
//   empty[s]  init count CONSUMERS * 4: completes a phase when every consumer warp has released stage s
//
// A wait on parity p (mbarrier_wait(bar, p, barrier_id, expected_tx)) passes once the phase with
// parity p has completed; on a fresh barrier a wait on parity 1 passes at once: the phase before the
// current one counts as completed (PTX ISA, "mbarrier.test_wait / mbarrier.try_wait"). A bounded wait
// returns false when it gives up; the thread then leaves the kernel.
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

constexpr int BM = 128, BN = 256, STAGES = 4, CONSUMERS = 2, GROUP_M = 16;
constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr u32 BAR_FULL = 1, BAR_EMPTY = 2;   // the barrier ids a wait that gives up reports

extern "C" __global__ void __launch_bounds__(384, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     u16* __restrict__ C, int M, int N, int K) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);   // stage s: A (128 x 64) then B (256 x 64), 128B-swizzled
    __shared__ alignas(8) u64 full[STAGES], empty[STAGES];

    const int wg = threadIdx.x / WG, k_tiles = K / BK;
    const int tiles_m = M / BM, tiles_n = N / BN, tiles = tiles_m * tiles_n;
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
            int it = 0;   // k-slices loaded so far by this CTA, over all its tiles
            for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
                const int2 tile = tile_of<GROUP_M>(t, tiles_m, tiles_n);
                for (int kt = 0; kt < k_tiles; ++kt, ++it) {
                    const int s = it % STAGES;
                    u8* sA = smem + s * STAGE_BYTES;
                    // TODO(producer_acquire) ------------------------------------------------------
                    // Wait until the consumers have released what stage s held before (its previous
                    // fill), then announce on full[s] the bytes the two loads below will bring.
                    // END TODO --------------------------------------------------------------------
                    tma_load_2d(sA, &tma_a, &full[s], kt * BK, tile.x * BM);
                    tma_load_2d(sA + A_BYTES, &tma_b, &full[s], kt * BK, tile.y * BN);
                }
            }
        }
        return;
    }

    setmaxnreg_inc<232>();
    const int c = wg - 1;   // this consumer's 64-row slab of the tile
    float d[BN / 2];
    int it = 0;             // k-slices consumed so far, over all tiles: the producer's count
    for (int t = blockIdx.x; t < tiles; t += gridDim.x) {
        const int2 tile = tile_of<GROUP_M>(t, tiles_m, tiles_n);
        zero(d);
        wgmma_fence();
        for (int kt = 0; kt < k_tiles; ++kt, ++it) {
            const int s = it % STAGES;
            // TODO(consumer_wait) -----------------------------------------------------------------
            // Wait until this fill of stage s has landed.
            // END TODO ----------------------------------------------------------------------------
            const u32 sA = smem_u32(smem + s * STAGE_BYTES);
            mma_stage<BN>(d, sA + c * 64 * 128, sA + A_BYTES);
            wgmma_commit_group();
            wgmma_wait_group<1>();   // every wgmma but this slice's has completed: slice it - 1 is read
            if (kt > 0) {
                // TODO(consumer_release) ----------------------------------------------------------
                // Release stage (it - 1) % STAGES: the wgmma that read it has completed.
                // END TODO ------------------------------------------------------------------------
            }
        }
        wgmma_wait_group<0>();       // this tile's last slice, it - 1, is read too
        // TODO(consumer_release) ------------------------------------------------------------------
        // END TODO --------------------------------------------------------------------------------
        store_rows<BN>(d, C, N, tile.x * BM + 64 * c, tile.y * BN);
    }
}
