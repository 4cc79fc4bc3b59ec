// bwlab-targets: sm_100a
// The whole trip on Blackwell (notebook 06_full_flow, Python side bwlab/flow/): one CTA, four warps,
// D (128 x 128 f32) = A (128 x 64 f16) * B (128 x 64 f16)^T.
//
//   setup       warp 0 allocates 128 TMEM columns; one thread initialises the two mbarriers
//   1 TMA load  warp 0's elected thread: arrive.expect_tx(32 KiB) -> two cp.async.bulk.tensor loads
//               (A and B, 128B swizzle); every thread waits (bounded) on `full`
//   2 MMA       warp 1's elected thread: four tcgen05.mma (K = 16 each) reading SMEM through descriptors
//               built here, writing D into TMEM
//   3 commit    the same thread: tcgen05.commit -> one arrival on `mma_done`; every thread waits on it,
//               then tcgen05.fence::after_thread_sync before touching TMEM
//   4 tcgen05.ld  every warp reads its lane quarter: 4 x tcgen05.ld.32x32b.x32 (thread t <- lane t)
//   5 st.shared   every thread writes its row into the 128B-swizzled D tile (four 128 x 32 boxes)
//   6 fence       fence.proxy.async.shared::cta in every writer, then a barrier
//   7 TMA store   warp 0's elected thread: four cp.async.bulk.tensor stores, commit, wait until read
//   teardown    warp 0 frees TMEM (only once the MMAs are known complete)
//
// The `tap_*` pointers (may be null) copy what each hop left behind to GMEM for bwlab's trace; the
// teaching path is the same with them null.
#include "ptx.cuh"

enum { BAR_FULL = 0, BAR_MMA_DONE = 1 };  // FLOW_BARRIERS in bwlab/flow/runner.py names them

// Offsets from the 1024-byte aligned start of dynamic SMEM (bwlab/flow/problem.py: SMEM_A, SMEM_B, SMEM_D).
constexpr u32 SMEM_A = 0x0000, SMEM_B = 0x4000, SMEM_D = 0x8000, TILE_BYTES = 0x4000;
constexpr u32 K_BLOCKS = 4;      // K = 64 = 4 instructions of K = 16 (f16)
constexpr u32 TMEM_COLS = 128;   // N f32 columns of D

// SMEM matrix descriptor of a K-major, 128B-swizzled operand (PTX ISA tcgen05 "Shared Memory
// Descriptor"): start address >> 4 in bits 0-13, LBO = 1 (unused by swizzled K-major layouts),
// SBO = 1024 B (eight 128-byte rows) >> 4 in bits 32-45, version 1 in bits 46-48, layout 2 (128B
// swizzle) in bits 61-63. bwlab.umma.smem_desc_for_tile('K', '128B', ...) encodes the same.
constexpr u64 DESC_LBO = 1ull << 16;
constexpr u64 DESC_SBO = (1024ull >> 4) << 32;
constexpr u64 DESC_VERSION = 1ull << 46;
constexpr u64 DESC_SWIZZLE_128B = 2ull << 61;
__device__ __forceinline__ u64 smem_desc_k_sw128(u32 smem_addr) {
    return ((smem_addr >> 4) & 0x3FFFull) | DESC_LBO | DESC_SBO | DESC_VERSION | DESC_SWIZZLE_128B;
}

// Instruction descriptor (PTX ISA tcgen05 "Instruction descriptor"), kind::f16: D format F32 = 1 in
// bits 4-5, A and B format F16 = 0, both K-major, N >> 3 in bits 17-22, M >> 4 in bits 24-28.
// bwlab.umma.make_instr_desc('f16', 'f16', 'f32', 128, 128) gives the same value.
constexpr u32 IDESC_F16_F32_M128_N128 = (1u << 4) | ((128u >> 3) << 17) | ((128u >> 4) << 24);

extern "C" __global__ void __launch_bounds__(128, 1)
full_flow(const __grid_constant__ TmaDescriptor tmap_a, const __grid_constant__ TmaDescriptor tmap_b,
          const __grid_constant__ TmaDescriptor tmap_d, u8* tap_smem_ab, u32* tap_regs, u8* tap_smem_d,
          u32* tap_mma_done) {
    extern __shared__ u8 smem_raw[];
    __shared__ alignas(8) u64 full;      // barrier 0: the TMA loads' bytes
    __shared__ alignas(8) u64 mma_done;  // barrier 1: tcgen05.commit's arrival
    __shared__ alignas(16) u32 tmem_slot;
    // The swizzle is a function of the SMEM address: start the tiles on a 1024-byte boundary.
    u8* smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    const u32 base = smem_u32(smem);
    const u32 warp = warpid_in_cta(), row = threadIdx.x;  // thread t owns TMEM lane t = D row t

    // ---- setup ----------------------------------------------------------------------------------
    if (warp == 0) {
        tcgen05_alloc(&tmem_slot, TMEM_COLS);  // the whole warp; the address lands in tmem_slot
        tcgen05_relinquish_alloc_permit();
    }
    if (threadIdx.x == 32) {
        mbarrier_init(&full, 1);
        mbarrier_init(&mma_done, 1);
        fence_mbarrier_init_release_cluster();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const u32 tmem = tmem_slot;

    // ---- 1. TMA load -----------------------------------------------------------------------------
    if (warp == 0 && elect_one_sync()) {
        mbarrier_arrive_expect_tx(&full, 2 * TILE_BYTES);
        tma_load_2d(smem + SMEM_A, &tmap_a, &full, 0, 0);
        tma_load_2d(smem + SMEM_B, &tmap_b, &full, 0, 0);
    }
    const bool loaded = mbarrier_wait(&full, 0, BAR_FULL, 2 * TILE_BYTES);
    // One thread that saw the phase complete proves the bytes landed: the CTA agrees on one outcome.
    if (!__syncthreads_or(loaded)) {
        tcgen05_fence_after_thread_sync();
        if (warp == 0) tcgen05_dealloc(tmem, TMEM_COLS);  // no MMA was issued: safe to free
        return;
    }

    // ---- 2. MMA, 3. commit -----------------------------------------------------------------------
    if (warp == 1 && elect_one_sync()) {
        for (u32 kb = 0; kb < K_BLOCKS; ++kb)  // K advances 16 f16 = 32 bytes inside the swizzle atom
            tcgen05_mma_f16_ss(tmem, smem_desc_k_sw128(base + SMEM_A + 32 * kb),
                               smem_desc_k_sw128(base + SMEM_B + 32 * kb), IDESC_F16_F32_M128_N128,
                               kb > 0 ? 1u : 0u);
        tcgen05_commit(&mma_done);  // one arrival once every MMA above has completed
    }
    const bool done = mbarrier_wait(&mma_done, 0, BAR_MMA_DONE, 0);
    const bool mma_complete = __syncthreads_or(done) != 0;  // uniform: .sync.aligned loads follow
    tcgen05_fence_after_thread_sync();
    if (tap_mma_done && threadIdx.x == 0) *tap_mma_done = mma_complete ? 1u : 0u;

    if (mma_complete) {
        // ---- 4. tcgen05.ld, 5. st.shared ---------------------------------------------------------
        const u32 my_lanes = tmem + ((32u * (warp % 4u)) << 16);  // a warp reaches only its quarter
#pragma unroll
        for (u32 c = 0; c < 4; ++c) {  // 32 columns = one 128-byte box row at a time
            u32 r[32];
            tcgen05_ld_32x32b_x32(r, my_lanes + 32u * c);
            tcgen05_wait_ld();
            if (tap_regs)
                for (int j = 0; j < 32; ++j) tap_regs[row * 128u + 32u * c + j] = r[j];
            const u32 line = base + SMEM_D + c * TILE_BYTES + row * 128u;
#pragma unroll
            for (u32 q = 0; q < 8; ++q)  // 16-byte chunk q of the row goes to chunk q ^ (row % 8)
                st_shared_v4_b32(swizzle_address(line + 16u * q, 3), r[4 * q], r[4 * q + 1], r[4 * q + 2],
                                 r[4 * q + 3]);
        }
        // ---- 6. fence: these generic-proxy writes before the TMA engine's async-proxy reads -------
        fence_proxy_async_shared_cta();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();

    // ---- 7. TMA store ----------------------------------------------------------------------------
    if (mma_complete && warp == 0 && elect_one_sync()) {
        for (u32 c = 0; c < 4; ++c) tma_store_2d(&tmap_d, smem + SMEM_D + c * TILE_BYTES, 32 * c, 0);
        bulk_commit_group();
        bulk_wait_group_read<0>();  // the stores have read SMEM: it may be reused (or the CTA exit)
    }
    __syncthreads();

    // ---- taps for the trace (not part of the GEMM) --------------------------------------------------
    if (tap_smem_ab)
        for (u32 i = threadIdx.x; i < 2 * TILE_BYTES / 16; i += blockDim.x)
            reinterpret_cast<uint4*>(tap_smem_ab)[i] = reinterpret_cast<const uint4*>(smem + SMEM_A)[i];
    if (tap_smem_d)
        for (u32 i = threadIdx.x; i < 4 * TILE_BYTES / 16; i += blockDim.x)
            reinterpret_cast<uint4*>(tap_smem_d)[i] = reinterpret_cast<const uint4*>(smem + SMEM_D)[i];

    // ---- teardown: the allocating warp frees TMEM on every path; after a timeout it first waits for the
    //      commit (tcgen05_wait_drained) so that no MMA can still write the columns it frees ------------
    tcgen05_fence_after_thread_sync();
    if (warp == 0) {
        if (!mma_complete) tcgen05_wait_drained(&mma_done, 0);
        tcgen05_dealloc(tmem, TMEM_COLS);
    }
}
