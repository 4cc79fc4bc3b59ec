// bwlab-targets: sm_100a
// GEMM ladder, Blackwell, step 4 — persistent CTAs, a tile scheduler, two TMEM accumulators.
//
// What changed since step 3: the grid holds one CTA per SM (at most), and each CTA walks the tiles
// t = blockIdx.x, blockIdx.x + gridDim.x, ... in the grouped order of `tile_of` (GROUP_M tile rows
// down a column of tiles, then the next column). The three roles each run that same sequence:
//   warp 0 (TMA)   keeps the ring full across tile boundaries (one running slice count `it`);
//   warp 1 (MMA)   accumulates tile i into TMEM buffer i % 2 (columns 256 * (i % 2), 512 in all),
//                  after waiting for tmem_empty[i % 2]; when the tile's last MMAs are issued,
//                  tcgen05.commit -> tmem_full[i % 2];
//   warps 2-5      wait for tmem_full[i % 2], read the accumulator out and store it to C; once
//                  their last tcgen05.ld of the tile has completed, each arrives on tmem_empty[i % 2]
//                  (one arrival per warp, count 4).
// Why it should help: in step 3 the tensor core stood still while a tile's epilogue ran, and every
// CTA paid its launch, TMEM allocation and pipeline fill. Now the epilogue of tile i runs while the
// MMAs of tile i + 1 fill the other accumulator, and setup is paid once per SM.
#include "gemm_sm100/ladder.cuh"

using namespace ladder100;

constexpr u32 BM = 128, BN = 256;            // a tile of C
constexpr u32 STAGES = 4;
constexpr u32 THREADS = 192;                 // warp 0 TMA, warp 1 MMA, warps 2-5 epilogue
constexpr u32 CLUSTER = 1;
constexpr u32 A_BYTES = BM * BK * 2;
constexpr u32 B_BYTES = BN * BK * 2;
constexpr u32 STAGE_BYTES = A_BYTES + B_BYTES;
constexpr u32 SMEM_A = 0;
constexpr u32 SMEM_B = SMEM_A + A_BYTES;
constexpr u32 SMEM_BYTES = STAGES * STAGE_BYTES + 1024;
constexpr u32 ACC_BUFS = 2;                  // accumulators in TMEM: one filling, one draining
constexpr u32 TMEM_COLS = ACC_BUFS * BN;     // 512: all of TMEM
constexpr u32 LD_COLS = 32;
constexpr u32 GROUP_M = 8;                   // the tile order's group height, in tiles
constexpr u32 IDESC = 0x08400490u;            // as in step 1: kind::f16, bf16 -> f32, M 128, N 256
constexpr u64 DESC_HI = 0x4000404000010000ull;  // K-major 128B swizzle, SBO 1024 B
constexpr u32 WARP_TMA = 0, WARP_MMA = 1, WARP_EPILOGUE = 2;
static_assert(CLUSTER == 1, "one CTA per tile");
static_assert(THREADS == 32 * (WARP_EPILOGUE + 4), "four epilogue warps after the TMA and MMA warps");
static_assert(SMEM_BYTES <= 232448, "a CTA may use at most 227 KiB of shared memory");
static_assert(TMEM_COLS <= 512, "TMEM has 512 columns");

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K,
     unsigned* error, u64* stamps) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    const u32 base = smem_u32(smem);
    __shared__ alignas(8) u64 full[STAGES];
    __shared__ alignas(8) u64 empty[STAGES];
    __shared__ alignas(8) u64 tmem_full[ACC_BUFS];   // the accumulator holds a finished tile
    __shared__ alignas(8) u64 tmem_empty[ACC_BUFS];  // the epilogue has read it out
    __shared__ alignas(8) u64 drained;  // the MMA thread's last tcgen05.commit: every MMA completed
    __shared__ alignas(16) u32 tmem_slot;
    const u32 warp = warpid_in_cta(), lane = laneid();
    const u32 tiles_m = M / BM, tiles_n = N / BN, tiles = tiles_m * tiles_n, k_blocks = K / BK;
    u64* const st = blockIdx.x == 0 ? stamps : nullptr;

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
            mbarrier_init(&tmem_full[b], 1);   // tcgen05.commit
            mbarrier_init(&tmem_empty[b], 4);  // one arrival per epilogue warp
        }
        mbarrier_init(&drained, 1);
        fence_mbarrier_init_release_cluster();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const u32 tmem = tmem_slot;
    bool ok = true;

    if (warp == WARP_TMA) {
        if (elect_one_sync()) {
            u32 it = 0;  // slices loaded so far by this CTA: stage it % STAGES, its (it / STAGES)-th use
            for (u32 t = blockIdx.x; t < tiles && ok; t += gridDim.x) {
                const uint2 tile = tile_of<GROUP_M>(t, tiles_m, tiles_n);
                for (u32 kb = 0; kb < k_blocks; ++kb, ++it) {
                    const u32 s = it % STAGES, phase = (it / STAGES) & 1;
                    stamp(st, TRACK_TMA, it, 0);
                    if (!(ok = wait(&empty[s], phase ^ 1, BAR_EMPTY, 0, error))) break;
                    mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);
                    tma_load_2d(smem + s * STAGE_BYTES + SMEM_A, &tma_a, &full[s], kb * BK, tile.x * BM);
                    tma_load_2d(smem + s * STAGE_BYTES + SMEM_B, &tma_b, &full[s], kb * BK, tile.y * BN);
                    stamp(st, TRACK_TMA, it, 1);
                }
            }
        }
        __syncwarp();
    } else if (warp == WARP_MMA) {
        if (elect_one_sync()) {
            u32 it = 0, acc = 0;  // slices consumed, tiles accumulated
            for (u32 t = blockIdx.x; t < tiles && ok; t += gridDim.x, ++acc) {
                const u32 buf = acc % ACC_BUFS, acc_phase = (acc / ACC_BUFS) & 1;
                // The epilogue must have read this accumulator out (two tiles ago) before we overwrite it.
                if (!(ok = wait(&tmem_empty[buf], acc_phase ^ 1, BAR_TMEM_EMPTY, 0, error))) break;
                tcgen05_fence_after_thread_sync();
                const u32 d = tmem + buf * BN;
                for (u32 kb = 0; kb < k_blocks; ++kb, ++it) {
                    const u32 s = it % STAGES, phase = (it / STAGES) & 1;
                    stamp(st, TRACK_MMA, it, 0);
                    if (!(ok = wait(&full[s], phase, BAR_FULL, STAGE_BYTES, error))) break;
                    const u32 a = base + s * STAGE_BYTES + SMEM_A, b = base + s * STAGE_BYTES + SMEM_B;
#pragma unroll
                    for (u32 k = 0; k < BK / UMMA_K; ++k)
                        tcgen05_mma_f16_ss(d, smem_desc(DESC_HI, a + 32 * k), smem_desc(DESC_HI, b + 32 * k),
                                           IDESC, (kb | k) != 0);
                    tcgen05_commit(&empty[s]);
                    stamp(st, TRACK_MMA, it, 1);
                }
                if (ok) tcgen05_commit(&tmem_full[buf]);  // the tile's accumulator is complete
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
            if (lane == 0) stamp(st, TRACK_EPILOGUE + q, acc, 0);
            ok = __any_sync(0xffffffffu, wait(&tmem_full[buf], acc_phase, BAR_TMEM_FULL, 0, error)) != 0;
            if (!ok) break;
            tcgen05_fence_after_thread_sync();
            const u32 row = tile.x * BM + 32 * q + lane;
            tmem_rows_to_gmem<BN, LD_COLS>(tmem + buf * BN + ((32 * q) << 16), C + size_t(row) * N + tile.y * BN);
            // Every tcgen05.ld of this warp has completed (tcgen05.wait::ld): hand the buffer back.
            tcgen05_fence_before_thread_sync();
            __syncwarp();
            if (lane == 0) mbarrier_arrive(&tmem_empty[buf]);
            if (lane == 0) stamp(st, TRACK_EPILOGUE + q, acc, 1);
        }
    }

    // ---- teardown: free TMEM on every path (a CTA that exits holding it blocks the next one on this SM
    //      in tcgen05.alloc); first wait for the MMA thread's last commit, so no MMA still writes it ------
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    if (warp == WARP_MMA) {
        tcgen05_wait_drained(&drained, 0);
        tcgen05_dealloc(tmem, TMEM_COLS);
    }
}
