// bwlab-targets: sm_100a
// Stage 3 on Blackwell: one thread issues tcgen05.mma; the tensor core reads A and B from shared
// memory through the descriptors Python built, and writes D into Tensor Memory (TMEM).
//
//   all 128 threads : copy the operand bytes (already in a canonical layout) into SMEM
//                     -> fence.proxy.async (tcgen05.mma reads SMEM through the async proxy)
//   warp 0          : tcgen05.alloc (TMEM columns; the address lands in SMEM) -> relinquish
//   every warp      : (optional) tcgen05.st of the initial D into its 32 lanes, for accumulate
//   thread 0        : the K loop: one tcgen05.mma per K block (accumulate = 0 on the first unless
//                     the initial D is kept) -> tcgen05.commit to the mbarrier `mma_done`
//   every thread    : bounded wait on mma_done -> the CTA agrees the MMAs completed
//                     (__syncthreads_or) -> tcgen05.fence::after_thread_sync
//                     -> tcgen05.ld.32x32b of its warp's 32 lanes -> write the TMEM image out
//   warp 0          : tcgen05.dealloc on every path (after a timeout, once the commit has arrived)
//
// The kernel copies back the whole allocated TMEM image (128 lanes x `tmem_cols` words); Python
// finds D in it with bwlab.umma.d_tmem_layout, the same function its model writes through.
#include "ptx.cuh"

#ifndef UMMA_MAX_K_BLOCKS
#define UMMA_MAX_K_BLOCKS 16
#endif

extern "C" __global__ void __launch_bounds__(128, 1)
umma_validate(const u8* __restrict__ image, u32 image_bytes, const u64* __restrict__ a_descs,
              const u64* __restrict__ b_descs, u32 k_blocks, u32 idesc, u32 kind_tf32,
              u32 accumulate, const u32* __restrict__ d_init, u32* __restrict__ d_out,
              u32 tmem_cols) {
    extern __shared__ u8 smem_raw[];
    __shared__ alignas(8) u64 mma_done;  // barrier id 0: tcgen05.commit arrives here
    __shared__ alignas(16) u32 tmem_slot;
    // Swizzles are functions of the shared address: put the operand image on a 1024-byte boundary.
    u8* smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    const u32 warp = warpid_in_cta(), lane = laneid();

    const uint4* src = reinterpret_cast<const uint4*>(image);
    uint4* dst = reinterpret_cast<uint4*>(smem);
    for (u32 i = threadIdx.x; i < image_bytes / 16; i += blockDim.x) dst[i] = src[i];
    fence_proxy_async_shared_cta();

    if (threadIdx.x == 0) {
        mbarrier_init(&mma_done, 1);
        fence_mbarrier_init_release_cluster();
    }
    if (warp == 0) {
        tcgen05_alloc(&tmem_slot, tmem_cols);  // the whole warp; power of two in [32, 512]
        tcgen05_relinquish_alloc_permit();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const u32 tmem = tmem_slot;
    const u32 my_lanes = tmem + ((32u * (warp % 4u)) << 16);  // a warp reaches only its lane quarter

    if (accumulate) {
        for (u32 col = 0; col < tmem_cols; col += 8) {
            u32 r[8];
            for (int j = 0; j < 8; ++j) r[j] = d_init[(32u * warp + lane) * tmem_cols + col + j];
            tcgen05_st_32x32b_x8(my_lanes + col, r);
        }
        tcgen05_wait_st();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();

    if (threadIdx.x == 0) {
        // Descriptors carry start addresses relative to the operand image; add its SMEM address.
        const u64 base16 = (smem_u32(smem) >> 4) & 0x3FFF;
        const u32 n = k_blocks < UMMA_MAX_K_BLOCKS ? k_blocks : UMMA_MAX_K_BLOCKS;
        for (u32 kb = 0; kb < n; ++kb) {
            const u32 acc = (kb > 0 || accumulate) ? 1u : 0u;
            if (kind_tf32)
                tcgen05_mma_tf32_ss(tmem, a_descs[kb] + base16, b_descs[kb] + base16, idesc, acc);
            else
                tcgen05_mma_f16_ss(tmem, a_descs[kb] + base16, b_descs[kb] + base16, idesc, acc);
        }
        tcgen05_commit(&mma_done);  // one arrival once every MMA above has completed
    }

    // Bounded wait for the commit (a timeout is recorded for Python, which raises MbarrierTimeout).
    // `done` may differ between threads: one can see the phase complete just as another gives up.
    // The CTA therefore agrees on one outcome before touching TMEM: tcgen05.ld and tcgen05.wait::ld
    // are .sync.aligned (every thread of the warp executes the same instruction), so they never sit
    // behind a per-thread condition. One thread that saw the phase complete proves the commit
    // arrived, i.e. every MMA above has completed; __syncthreads_or makes that the CTA's outcome and
    // tcgen05.fence::after_thread_sync orders each thread's TMEM reads after it.
    const bool done = mbarrier_wait(&mma_done, /*parity=*/0, /*barrier_id=*/0, /*expected_tx=*/0);
    const bool mma_complete = __syncthreads_or(done) != 0;
    tcgen05_fence_after_thread_sync();
    if (mma_complete) {  // uniform across the CTA
        for (u32 col = 0; col < tmem_cols; col += 8) {
            u32 r[8];
            tcgen05_ld_32x32b_x8(r, my_lanes + col);
            tcgen05_wait_ld();
            for (int j = 0; j < 8; ++j) d_out[(32u * warp + lane) * tmem_cols + col + j] = r[j];
        }
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();  // the dealloc comes after every warp's TMEM reads
    // Free the columns on every path: a CTA that exits holding TMEM leaves the next CTA on this SM
    // blocked in tcgen05.alloc forever. After a timeout an MMA may still be writing them, so warp 0
    // first waits for the commit once more on its own budget (tcgen05_wait_drained); only if even that
    // runs out are the columns freed under a possibly running MMA, in a launch already reported failed.
    if (warp == 0) {
        if (!mma_complete) tcgen05_wait_drained(&mma_done, 0);
        tcgen05_dealloc(tmem, tmem_cols);
    }
}
