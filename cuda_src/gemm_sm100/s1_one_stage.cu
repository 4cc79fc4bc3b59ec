// bwlab-targets: sm_100a
// GEMM ladder, Blackwell, step 1 — one CTA per 128 x 256 tile, one stage.
//
// A CTA of four warps computes one 128 x 256 tile of C in a Tensor Memory accumulator (128 lanes x
// 256 columns of f32). For each 64-wide slice of K, one thread (warp 0's elected lane):
//   1. announces 48 KiB on `full` and starts two TMA loads (A: a 64 x 128 box, B: a 64 x 256 box,
//      128B swizzle), which land in the K-major SW128 layout tcgen05.mma reads;
//   2. waits for `full`, issues four tcgen05.mma.cta_group::1.kind::f16 (K = 16 each; the first one
//      of the tile overwrites D) and tcgen05.commit -> one arrival on `mma_done` once they complete;
//   3. waits for `mma_done`: only then may the next loads overwrite the stage.
// Then every warp reads its lane quarter of the accumulator (tcgen05.ld.32x32b.x32: thread t <- the row
// in lane t), rounds pairs to bf16 and stores its row straight to C.
// Nothing overlaps: the tensor core idles while the TMA loads, the TMA idles while it multiplies, and
// both idle during the epilogue. Each later step removes one of these waits.
//
// The model tier runs this kernel's step 1 from the constants below (bwlab.gemm.sm100.model_step1
// reads them from this file): the tile, the SMEM offsets, IDESC, DESC_HI and the tcgen05.ld shape.
#include "gemm_sm100/ladder.cuh"

using namespace ladder100;

constexpr u32 BM = 128, BN = 256;            // the CTA's tile of C
constexpr u32 STAGES = 1;
constexpr u32 THREADS = 128;                 // four warps: one TMEM lane quarter each
constexpr u32 CLUSTER = 1;
constexpr u32 A_BYTES = BM * BK * 2;         // 16 KiB: 128 rows x 128 bytes
constexpr u32 B_BYTES = BN * BK * 2;         // 32 KiB: 256 rows x 128 bytes
constexpr u32 SMEM_A = 0;                    // offsets from the 1024-byte aligned start of dynamic SMEM
constexpr u32 SMEM_B = SMEM_A + A_BYTES;
constexpr u32 SMEM_BYTES = SMEM_B + B_BYTES + 1024;  // what the launch asks for: + room to align
constexpr u32 TMEM_COLS = BN;                // f32 accumulator: one column per column of the tile
constexpr u32 LD_COLS = 32;                  // tcgen05.ld.32x32b.x32: 32 columns per load

// The tcgen05.mma instruction descriptor (PTX ISA tcgen05 "Instruction descriptor", kind::f16):
// D format F32 = 1 (bits 4-5), A and B format BF16 = 1 (bits 7-9, 10-12), both K-major (bits 15,
// 16 = 0), N >> 3 = 32 (bits 17-22), M >> 4 = 8 (bits 24-28). bwlab.umma.make_instr_desc('bf16',
// 'bf16', 'f32', 128, 256) gives the same value (tests/test_gemm_sm100.py checks it).
constexpr u32 IDESC = 0x08400490u;
// The SMEM matrix descriptor of a K-major, 128B-swizzled operand, every field but the start address
// (PTX ISA tcgen05 "Shared Memory Descriptor"): LBO 16 B (unused by swizzled K-major layouts, bits
// 16-29 = 1), SBO 1024 B between 8-row groups (bits 32-45 = 64), version 1 (bits 46-48), base offset
// 0, swizzle 2 = 128B (bits 61-63). bwlab.umma.smem_desc_for_tile('K', '128B', 'bf16', ...) agrees.
constexpr u64 DESC_HI = 0x4000404000010000ull;
static_assert(CLUSTER == 1 && STAGES == 1, "step 1: one CTA, one stage");
static_assert(SMEM_BYTES <= 232448, "a CTA may use at most 227 KiB of shared memory");

extern "C" __global__ void __launch_bounds__(THREADS, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K,
     unsigned* error, u64* stamps) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    const u32 base = smem_u32(smem);
    __shared__ alignas(8) u64 full;      // the stage's bytes have landed
    __shared__ alignas(8) u64 mma_done;  // tcgen05.commit: the MMAs of the stage have completed
    __shared__ alignas(8) u64 drained;  // the MMA thread's last tcgen05.commit: every MMA completed
    __shared__ alignas(16) u32 tmem_slot;
    const u32 warp = warpid_in_cta(), lane = laneid();
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, k_blocks = K / BK;
    u64* const st = (blockIdx.x == 0 && blockIdx.y == 0) ? stamps : nullptr;

    // ---- setup: warp 0 allocates the accumulator's columns, one thread initialises the barriers ----
    if (warp == 0) {
        tcgen05_alloc(&tmem_slot, TMEM_COLS);
        tcgen05_relinquish_alloc_permit();
    }
    if (threadIdx.x == 32) {
        mbarrier_init(&full, 1);
        mbarrier_init(&mma_done, 1);
        mbarrier_init(&drained, 1);
        fence_mbarrier_init_release_cluster();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const u32 tmem = tmem_slot;

    // ---- the K loop: load, wait, multiply, wait — one thread, one stage ---------------------------
    bool ok = true;  // false once a bounded wait of this thread gave up
    if (warp == 0) {
        if (elect_one_sync()) {
            for (int kb = 0; kb < k_blocks && ok; ++kb) {
                stamp(st, TRACK_TMA, kb, 0);
                mbarrier_arrive_expect_tx(&full, A_BYTES + B_BYTES);
                tma_load_2d(smem + SMEM_A, &tma_a, &full, kb * BK, m0);
                tma_load_2d(smem + SMEM_B, &tma_b, &full, kb * BK, n0);
                stamp(st, TRACK_TMA, kb, 1);
                stamp(st, TRACK_MMA, kb, 0);
                if (!(ok = wait(&full, kb & 1, BAR_FULL, A_BYTES + B_BYTES, error))) break;
#pragma unroll
                for (u32 k = 0; k < BK / UMMA_K; ++k)
                    tcgen05_mma_f16_ss(tmem, smem_desc(DESC_HI, base + SMEM_A + 32 * k),
                                       smem_desc(DESC_HI, base + SMEM_B + 32 * k), IDESC, (kb | k) != 0);
                tcgen05_commit(&mma_done);
                stamp(st, TRACK_MMA, kb, 1);
                ok = wait(&mma_done, kb & 1, BAR_MMA_DONE, 0, error);  // the stage is free again
            }
            tcgen05_commit(&drained);  // on every path: arrives once every MMA above has completed
        }
        __syncwarp();
    }

    // ---- epilogue: every warp, its lane quarter, straight to C ----------------------------------------
    // The other warps cannot simply wait on `mma_done`: it completes one phase per slice, and a
    // parity wait cannot tell the last phase from earlier ones (parity 0 is satisfied by slice 0's).
    // The loop's thread has seen the last slice's MMAs complete; the CTA barrier hands that on and
    // makes the outcome one for the CTA (tcgen05.ld is .sync.aligned: no per-thread condition).
    if (lane == 0) stamp(st, TRACK_EPILOGUE + warp, 0, 0);
    tcgen05_fence_before_thread_sync();
    const bool acc_ready = __syncthreads_and(ok) != 0;
    tcgen05_fence_after_thread_sync();
    if (acc_ready) {
        const u32 row = 32 * warp + lane;  // TMEM lane = row of the tile
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
