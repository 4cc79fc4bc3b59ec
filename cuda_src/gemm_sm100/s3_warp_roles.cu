// bwlab-targets: sm_100a
// GEMM ladder, Blackwell, step 3 — warp specialisation: a TMA warp, an MMA warp, four epilogue warps.
//
// What changed since step 2: the two jobs the single thread interleaved go to two warps, each running
// its own loop over the ring, synchronised only through the barriers:
//   warp 0 (TMA producer, one elected lane): for each slice, wait until its stage is empty, announce
//          the bytes on full[s], start the two loads;
//   warp 1 (MMA issuer, one elected lane; it also allocates and frees TMEM): for each slice, wait for
//          full[s], issue the four MMAs, tcgen05.commit -> empty[s]; after the last slice one more
//          commit -> mma_done;
//   warps 2-5 (epilogue): wait for mma_done, then each reads the TMEM lane quarter warp % 4 may
//          access and stores its 32 rows straight to C.
// Why it should help: the producer now waits only for free stages and the issuer only for landed
// bytes. Neither wait stalls the other side, so the ring stays full and the tensor core's queue is
// refilled as soon as a stage lands. The epilogue still runs after the mainloop, not beside it: one
// tile per CTA, one accumulator (step 4 overlaps them).
#include "gemm_sm100/ladder.cuh"

using namespace ladder100;

constexpr u32 BM = 128, BN = 256;            // the CTA's tile of C
constexpr u32 STAGES = 4;
constexpr u32 THREADS = 192;                 // warp 0 TMA, warp 1 MMA, warps 2-5 epilogue
constexpr u32 CLUSTER = 1;
constexpr u32 A_BYTES = BM * BK * 2;
constexpr u32 B_BYTES = BN * BK * 2;
constexpr u32 STAGE_BYTES = A_BYTES + B_BYTES;
constexpr u32 SMEM_A = 0;
constexpr u32 SMEM_B = SMEM_A + A_BYTES;
constexpr u32 SMEM_BYTES = STAGES * STAGE_BYTES + 1024;
constexpr u32 TMEM_COLS = BN;
constexpr u32 LD_COLS = 32;
constexpr u32 IDESC = 0x08400490u;            // as in step 1: kind::f16, bf16 -> f32, M 128, N 256
constexpr u64 DESC_HI = 0x4000404000010000ull;  // K-major 128B swizzle, SBO 1024 B
constexpr u32 WARP_TMA = 0, WARP_MMA = 1, WARP_EPILOGUE = 2;
static_assert(CLUSTER == 1, "one CTA per tile");
static_assert(THREADS == 32 * (WARP_EPILOGUE + 4), "four epilogue warps after the TMA and MMA warps");
static_assert(SMEM_BYTES <= 232448, "a CTA may use at most 227 KiB of shared memory");

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K,
     unsigned* error, u64* stamps) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    const u32 base = smem_u32(smem);
    __shared__ alignas(8) u64 full[STAGES];
    __shared__ alignas(8) u64 empty[STAGES];
    __shared__ alignas(8) u64 mma_done;
    __shared__ alignas(8) u64 drained;  // the MMA thread's last tcgen05.commit: every MMA completed
    __shared__ alignas(16) u32 tmem_slot;
    const u32 warp = warpid_in_cta(), lane = laneid();
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, k_blocks = K / BK;
    u64* const st = (blockIdx.x == 0 && blockIdx.y == 0) ? stamps : nullptr;

    if (warp == WARP_MMA) {  // the warp that issues the MMAs owns the accumulator's columns
        tcgen05_alloc(&tmem_slot, TMEM_COLS);
        tcgen05_relinquish_alloc_permit();
    }
    if (threadIdx.x == 0) {
        for (u32 s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], 1);
        }
        mbarrier_init(&mma_done, 1);
        mbarrier_init(&drained, 1);
        fence_mbarrier_init_release_cluster();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const u32 tmem = tmem_slot;
    bool ok = true;  // false once a bounded wait of this thread gave up

    if (warp == WARP_TMA) {
        // ---- producer: a stage is free once the MMAs that read it completed (empty[s]). The first
        // pass waits for parity 1 of a fresh barrier, which counts as the completed phase before
        // phase 0: it returns at once.
        if (elect_one_sync()) {
            for (int kb = 0; kb < k_blocks; ++kb) {
                const u32 s = kb % STAGES, phase = (kb / STAGES) & 1;
                stamp(st, TRACK_TMA, kb, 0);
                if (!(ok = wait(&empty[s], phase ^ 1, BAR_EMPTY, 0, error))) break;
                mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);
                tma_load_2d(smem + s * STAGE_BYTES + SMEM_A, &tma_a, &full[s], kb * BK, m0);
                tma_load_2d(smem + s * STAGE_BYTES + SMEM_B, &tma_b, &full[s], kb * BK, n0);
                stamp(st, TRACK_TMA, kb, 1);
            }
        }
        __syncwarp();
    } else if (warp == WARP_MMA) {
        // ---- MMA issuer: wait for the bytes, multiply, release the stage ---------------------------
        if (elect_one_sync()) {
            for (int kb = 0; kb < k_blocks; ++kb) {
                const u32 s = kb % STAGES, phase = (kb / STAGES) & 1;
                stamp(st, TRACK_MMA, kb, 0);
                if (!(ok = wait(&full[s], phase, BAR_FULL, STAGE_BYTES, error))) break;
                const u32 a = base + s * STAGE_BYTES + SMEM_A, b = base + s * STAGE_BYTES + SMEM_B;
#pragma unroll
                for (u32 k = 0; k < BK / UMMA_K; ++k)
                    tcgen05_mma_f16_ss(tmem, smem_desc(DESC_HI, a + 32 * k), smem_desc(DESC_HI, b + 32 * k),
                                       IDESC, (kb | k) != 0);
                tcgen05_commit(&empty[s]);
                stamp(st, TRACK_MMA, kb, 1);
            }
            if (ok) tcgen05_commit(&mma_done);
            tcgen05_commit(&drained);  // on every path (the teardown waits for it)
        }
        __syncwarp();
    } else {
        // ---- epilogue warps: lane quarter q = warp % 4 (a warp may touch only lanes 32q .. 32q + 31)
        const u32 q = warp % 4;
        if (lane == 0) stamp(st, TRACK_EPILOGUE + q, 0, 0);
        // The lanes agree on one outcome: tcgen05.ld is .sync.aligned.
        ok = __any_sync(0xffffffffu, wait(&mma_done, 0, BAR_MMA_DONE, 0, error)) != 0;
        tcgen05_fence_after_thread_sync();
        if (ok)
            tmem_rows_to_gmem<BN, LD_COLS>(tmem + ((32 * q) << 16), C + size_t(m0 + 32 * q + lane) * N + n0);
        if (lane == 0) stamp(st, TRACK_EPILOGUE + q, 0, 1);
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
