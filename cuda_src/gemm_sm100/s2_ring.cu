// bwlab-targets: sm_100a
// GEMM ladder, Blackwell, step 2 — a ring of four stages with full/empty mbarriers.
//
// What changed since step 1: SMEM holds STAGES = 4 slices of K (4 x 48 KiB), each with two barriers:
// full[s] (its TMA bytes have landed; arrive.expect_tx + complete_tx) and empty[s] (the MMAs that read
// it have completed; tcgen05.commit). The same single thread runs the K loop, but the loads run ahead:
// it starts the first four slices at once, and after issuing the MMAs of slice kb it refills the slot
// of slice kb - 1 (waiting on that slot's `empty`, usually already done) with slice kb - 1 + STAGES.
// Why it should help: in step 1 the tensor core waited for every load and the TMA for every MMA; now
// the bytes of the next three slices are in flight while the tensor core multiplies, and the MMA of
// slice kb is queued while the thread waits for slice kb - 1 to retire. One thread still does both
// jobs in program order, so a slow wait on one side still delays the other (step 3 splits them).
// After the loop one more tcgen05.commit, to `mma_done`, tells the epilogue that every MMA completed.
#include "gemm_sm100/ladder.cuh"

using namespace ladder100;

constexpr u32 BM = 128, BN = 256;            // the CTA's tile of C
constexpr u32 STAGES = 4;                    // slices of K in flight
constexpr u32 THREADS = 128;                 // four warps: one TMEM lane quarter each
constexpr u32 CLUSTER = 1;
constexpr u32 A_BYTES = BM * BK * 2;         // 16 KiB per stage
constexpr u32 B_BYTES = BN * BK * 2;         // 32 KiB per stage
constexpr u32 STAGE_BYTES = A_BYTES + B_BYTES;
constexpr u32 SMEM_A = 0;                    // stage s: A at SMEM_A + s * STAGE_BYTES, B after it
constexpr u32 SMEM_B = SMEM_A + A_BYTES;
constexpr u32 SMEM_BYTES = STAGES * STAGE_BYTES + 1024;
constexpr u32 TMEM_COLS = BN;
constexpr u32 LD_COLS = 32;                  // tcgen05.ld.32x32b.x32
// Instruction and SMEM descriptors as in step 1 (kind::f16, bf16 x bf16 -> f32, M = 128, N = 256;
// K-major 128B swizzle, SBO 1024 B).
constexpr u32 IDESC = 0x08400490u;
constexpr u64 DESC_HI = 0x4000404000010000ull;
static_assert(CLUSTER == 1, "one CTA per tile");
static_assert(SMEM_BYTES <= 232448, "a CTA may use at most 227 KiB of shared memory");

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K,
     unsigned* error, u64* stamps) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    const u32 base = smem_u32(smem);
    __shared__ alignas(8) u64 full[STAGES];   // stage s's bytes have landed
    __shared__ alignas(8) u64 empty[STAGES];  // the MMAs reading stage s have completed
    __shared__ alignas(8) u64 mma_done;       // every MMA of the tile has completed
    __shared__ alignas(8) u64 drained;  // the MMA thread's last tcgen05.commit: every MMA completed
    __shared__ alignas(16) u32 tmem_slot;
    const u32 warp = warpid_in_cta(), lane = laneid();
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, k_blocks = K / BK;
    u64* const st = (blockIdx.x == 0 && blockIdx.y == 0) ? stamps : nullptr;

    if (warp == 0) {
        tcgen05_alloc(&tmem_slot, TMEM_COLS);
        tcgen05_relinquish_alloc_permit();
    }
    if (threadIdx.x == 32) {
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

    // Slice kb goes to stage kb % STAGES; it is that stage's (kb / STAGES)-th use, so its barriers
    // complete their phase kb / STAGES: the parity to wait for is (kb / STAGES) & 1.
    auto load = [&](int kb) {
        const u32 s = kb % STAGES;
        mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);
        tma_load_2d(smem + s * STAGE_BYTES + SMEM_A, &tma_a, &full[s], kb * BK, m0);
        tma_load_2d(smem + s * STAGE_BYTES + SMEM_B, &tma_b, &full[s], kb * BK, n0);
        stamp(st, TRACK_TMA, kb, 1);
    };
    if (warp == 0) {
        if (elect_one_sync()) {
            bool ok = true;
            for (int kb = 0; kb < k_blocks && kb < int(STAGES); ++kb) {  // the ring starts empty
                stamp(st, TRACK_TMA, kb, 0);
                load(kb);
            }
            for (int kb = 0; kb < k_blocks && ok; ++kb) {
                const u32 s = kb % STAGES, phase = (kb / STAGES) & 1;
                stamp(st, TRACK_MMA, kb, 0);
                ok = wait(&full[s], phase, BAR_FULL, STAGE_BYTES, error);
                if (!ok) break;
                const u32 a = base + s * STAGE_BYTES + SMEM_A, b = base + s * STAGE_BYTES + SMEM_B;
#pragma unroll
                for (u32 k = 0; k < BK / UMMA_K; ++k)
                    tcgen05_mma_f16_ss(tmem, smem_desc(DESC_HI, a + 32 * k), smem_desc(DESC_HI, b + 32 * k),
                                       IDESC, (kb | k) != 0);
                tcgen05_commit(&empty[s]);  // stage s is free once these MMAs have read it
                stamp(st, TRACK_MMA, kb, 1);
                const int refill = kb - 1 + int(STAGES);  // into the stage slice kb - 1 used
                if (kb >= 1 && refill < k_blocks) {
                    const u32 sp = (kb - 1) % STAGES;
                    stamp(st, TRACK_TMA, refill, 0);
                    ok = wait(&empty[sp], ((kb - 1) / STAGES) & 1, BAR_EMPTY, 0, error);
                    if (ok) load(refill);
                }
            }
            if (ok) tcgen05_commit(&mma_done);  // arrives once every MMA above has completed
            tcgen05_commit(&drained);           // on every path (the teardown waits for it)
        }
        __syncwarp();
    }

    // ---- epilogue: every warp, its lane quarter, straight to C (as in step 1) ----------------------
    if (lane == 0) stamp(st, TRACK_EPILOGUE + warp, 0, 0);
    const bool done = wait(&mma_done, 0, BAR_MMA_DONE, 0, error);
    const bool acc_ready = __syncthreads_or(done) != 0;
    tcgen05_fence_after_thread_sync();
    if (acc_ready) {
        const u32 row = 32 * warp + lane;
        tmem_rows_to_gmem<BN, LD_COLS>(tmem + ((32 * warp) << 16), C + size_t(m0 + row) * N + n0);
    }
    if (lane == 0) stamp(st, TRACK_EPILOGUE + warp, 0, 1);

    // ---- teardown: free TMEM on every path (a CTA that exits holding it blocks the next one on this SM
    //      in tcgen05.alloc); first wait for the MMA thread's last commit, so no MMA still writes it ------
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    if (warp == 0) {
        tcgen05_wait_drained(&drained, 0);
        tcgen05_dealloc(tmem, TMEM_COLS);
    }
}
