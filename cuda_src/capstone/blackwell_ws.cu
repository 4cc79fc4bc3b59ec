// bwlab-targets: sm_100a
// The capstone, Blackwell: the Hopper capstone's twin on tcgen05, with its pipeline left out.
//
// C[M x N] = A[M x K] * B[N x K]^T, bf16 in, f32 accumulation in Tensor Memory, bf16 out (the problem
// of gemm_sm100/ladder.cuh). Persistent CTAs walk the tiles t = blockIdx.x, + gridDim.x, ...; three
// roles, each with its own loop, meet only at mbarriers:
//
//   warp 0 (TMA)        k-slice `it` (counted over all tiles) into stage s = it % STAGES
//   warp 1 (MMA)        tcgen05.mma of slice `it` into accumulator buf = acc % 2 (TMEM columns
//                       256 * buf); a stage is released by tcgen05.commit, which arrives on the
//                       mbarrier once the MMAs issued before it have completed (they read SMEM
//                       asynchronously: the issuing thread's program order says nothing about that)
//   warps 2-5 (epilogue) tile number `acc`: read accumulator buf out (tcgen05.ld, lane quarter warp % 4)
//                       and store C, then hand the accumulator back to the MMA warp
//
//   full[s]        count 1: the TMA warp's arrive.expect_tx plus the announced bytes
//   empty[s]       count 1: the MMA warp's tcgen05.commit
//   tmem_full[b]   count 1: the MMA warp's tcgen05.commit once a tile's MMAs are all issued
//   tmem_empty[b]  count 4: one arrival per epilogue warp
//
// `phase` and `acc_phase` are the parity of the current use of a stage / an accumulator. A wait on
// parity p passes once the phase with parity p has completed; on a fresh barrier parity 1 passes at
// once (PTX ISA, "mbarrier.test_wait / mbarrier.try_wait"). tcgen05 work of two threads is ordered
// by a thread synchronisation (an mbarrier wait, __syncthreads) only with tcgen05.fence::before_thread_sync
// in the thread before it and tcgen05.fence::after_thread_sync in the thread after it (PTX ISA,
// "tcgen05 memory consistency model"). wait() is ladder.cuh's bounded wait: false when it gives up.
#include "gemm_sm100/ladder.cuh"

using namespace ladder100;

constexpr u32 BM = 128, BN = 256;            // a tile of C
constexpr u32 STAGES = 4;
constexpr u32 THREADS = 192;                 // warp 0 TMA, warp 1 MMA, warps 2-5 epilogue
constexpr u32 A_BYTES = BM * BK * 2;
constexpr u32 B_BYTES = BN * BK * 2;
constexpr u32 STAGE_BYTES = A_BYTES + B_BYTES;
constexpr u32 SMEM_A = 0;
constexpr u32 SMEM_B = SMEM_A + A_BYTES;
constexpr u32 ACC_BUFS = 2;                  // accumulators in TMEM: one filling, one draining
constexpr u32 TMEM_COLS = ACC_BUFS * BN;     // 512: all of TMEM
constexpr u32 LD_COLS = 32;
constexpr u32 GROUP_M = 8;
constexpr u32 IDESC = 0x08400490u;            // kind::f16, bf16 -> f32, M 128, N 256
constexpr u64 DESC_HI = 0x4000404000010000ull;  // K-major 128B swizzle, SBO 1024 B
constexpr u32 WARP_TMA = 0, WARP_MMA = 1;

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     u16* __restrict__ C, int M, int N, int K, unsigned* error) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    const u32 base = smem_u32(smem);
    __shared__ alignas(8) u64 full[STAGES];
    __shared__ alignas(8) u64 empty[STAGES];
    __shared__ alignas(8) u64 tmem_full[ACC_BUFS];
    __shared__ alignas(8) u64 tmem_empty[ACC_BUFS];
    __shared__ alignas(8) u64 drained;  // the MMA thread's last tcgen05.commit: every MMA completed
    __shared__ alignas(16) u32 tmem_slot;
    const u32 warp = warpid_in_cta(), lane = laneid();
    const u32 tiles_m = M / BM, tiles_n = N / BN, tiles = tiles_m * tiles_n, k_blocks = K / BK;

    if (warp == WARP_MMA) {
        tcgen05_alloc(&tmem_slot, TMEM_COLS);
        tcgen05_relinquish_alloc_permit();
    }
    if (threadIdx.x == 0) {
        for (u32 s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], 1);
        }
        for (u32 b = 0; b < ACC_BUFS; ++b) {
            mbarrier_init(&tmem_full[b], 1);
            mbarrier_init(&tmem_empty[b], 4);
        }
        mbarrier_init(&drained, 1);
        fence_mbarrier_init_release_cluster();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const u32 tmem = tmem_slot;
    bool ok = true;   // false once a bounded wait gave up: every loop then stops

    if (warp == WARP_TMA) {
        if (elect_one_sync()) {
            u32 it = 0;
            for (u32 t = blockIdx.x; t < tiles && ok; t += gridDim.x) {
                const uint2 tile = tile_of<GROUP_M>(t, tiles_m, tiles_n);
                for (u32 kb = 0; kb < k_blocks; ++kb, ++it) {
                    const u32 s = it % STAGES, phase = (it / STAGES) & 1;
                    // TODO(tma_acquire) -----------------------------------------------------------
                    // Wait until the MMAs of stage s's previous fill have completed (on failure:
                    // ok = false and break), then announce on full[s] the bytes of the two loads.
                    // END TODO --------------------------------------------------------------------
                    tma_load_2d(smem + s * STAGE_BYTES + SMEM_A, &tma_a, &full[s], kb * BK, tile.x * BM);
                    tma_load_2d(smem + s * STAGE_BYTES + SMEM_B, &tma_b, &full[s], kb * BK, tile.y * BN);
                }
            }
        }
        __syncwarp();
    } else if (warp == WARP_MMA) {
        if (elect_one_sync()) {
            u32 it = 0, acc = 0;   // slices consumed, tiles accumulated
            for (u32 t = blockIdx.x; t < tiles && ok; t += gridDim.x, ++acc) {
                const u32 buf = acc % ACC_BUFS, acc_phase = (acc / ACC_BUFS) & 1;
                // TODO(mma_acc_acquire) -----------------------------------------------------------
                // Wait until the epilogue has read accumulator buf out (the tile two before this
                // one), then order the MMAs below after that wait.
                // END TODO ------------------------------------------------------------------------
                const u32 d = tmem + buf * BN;
                for (u32 kb = 0; kb < k_blocks; ++kb, ++it) {
                    const u32 s = it % STAGES, phase = (it / STAGES) & 1;
                    // TODO(mma_wait_full) ---------------------------------------------------------
                    // Wait until this fill of stage s has landed.
                    // END TODO --------------------------------------------------------------------
                    const u32 a = base + s * STAGE_BYTES + SMEM_A, b = base + s * STAGE_BYTES + SMEM_B;
#pragma unroll
                    for (u32 k = 0; k < BK / UMMA_K; ++k)
                        tcgen05_mma_f16_ss(d, smem_desc(DESC_HI, a + 32 * k), smem_desc(DESC_HI, b + 32 * k),
                                           IDESC, (kb | k) != 0);
                    // TODO(mma_release_stage) -----------------------------------------------------
                    // Release stage s to the TMA warp once the MMAs just issued have read it.
                    // END TODO --------------------------------------------------------------------
                }
                // TODO(mma_acc_commit) ------------------------------------------------------------
                // Tell the epilogue that accumulator buf holds a finished tile (if ok).
                // END TODO ------------------------------------------------------------------------
            }
            tcgen05_commit(&drained);  // on every path (the teardown waits for it)
        }
        __syncwarp();
    } else {
        const u32 q = warp % 4;  // the TMEM lane quarter this warp may access
        u32 acc = 0;
        for (u32 t = blockIdx.x; t < tiles && ok; t += gridDim.x, ++acc) {
            const u32 buf = acc % ACC_BUFS, acc_phase = (acc / ACC_BUFS) & 1;
            const uint2 tile = tile_of<GROUP_M>(t, tiles_m, tiles_n);
            // TODO(epi_acc_wait) ------------------------------------------------------------------
            // Wait until accumulator buf holds this tile (on failure: ok = false and break), then
            // order the tcgen05.ld below after that wait.
            // END TODO ----------------------------------------------------------------------------
            const u32 row = tile.x * BM + 32 * q + lane;
            tmem_rows_to_gmem<BN, LD_COLS>(tmem + buf * BN + ((32 * q) << 16), C + size_t(row) * N + tile.y * BN);
            // TODO(epi_acc_release) ---------------------------------------------------------------
            // Every tcgen05.ld of this warp has completed (tcgen05.wait::ld): hand accumulator buf
            // back to the MMA warp, one arrival per warp, its reads ordered before the arrival.
            // END TODO ----------------------------------------------------------------------------
        }
    }

    // teardown: free TMEM on every path, after the MMA thread's last commit (no MMA still writes it)
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    if (warp == WARP_MMA) {
        tcgen05_wait_drained(&drained, 0);
        tcgen05_dealloc(tmem, TMEM_COLS);
    }
}
