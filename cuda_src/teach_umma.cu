// bwlab-targets: sm_100a
// Stage 3 on Blackwell, whole: one K loop of tcgen05.mma.cta_group::1.kind::f16,
// D (M x N, f32, in Tensor Memory) = A (M x K) * B (N x K)^T. Python lays A and B out in a
// canonical SMEM layout, builds one SMEM descriptor per K step for each and the 32-bit
// instruction descriptor (types, M, N, majors); this kernel moves the bytes and issues.
//
//   1. every thread : the operand image (A and B) from global into shared memory, then
//                     fence.proxy.async — the tensor core reads SMEM through the async proxy
//   2. thread 0     : mbarrier.init(mma_done, 1);  warp 0: tcgen05.alloc (the TMEM address lands
//                     in SMEM) and relinquish the permit; the CTA syncs between tcgen05 fences
//   3. one thread   : the K loop of tcgen05.mma, then tcgen05.commit -> one arrival on mma_done
//                     once every MMA it issued has completed
//   4. every thread : bounded wait on mma_done; the CTA agrees on the outcome; then
//                     tcgen05.fence::after_thread_sync and tcgen05.ld.32x32b of its warp's 32 lanes
//   5. warp 0       : tcgen05.dealloc on every path; after a timeout it first waits for the commit
//                     (tcgen05_wait_drained), so TMEM is never freed under a running MMA
#include "ptx.cuh"

#ifndef TEACH_SMEM_BYTES
#define TEACH_SMEM_BYTES 32768
#endif

extern "C" __global__ void __launch_bounds__(128, 1)
teach_umma(const uint4* __restrict__ image, u32 image_bytes, const u64* __restrict__ a_descs,
           const u64* __restrict__ b_descs, u32 k_blocks, u32 idesc, u32* __restrict__ d_out,
           u32 tmem_cols) {
    // A swizzle is a function of the SMEM address: start the operands on a 1024-byte boundary.
    __shared__ alignas(1024) uint4 smem[TEACH_SMEM_BYTES / 16];
    __shared__ alignas(8) u64 mma_done;  // barrier id 0: tcgen05.commit arrives here
    __shared__ u32 tmem_slot;            // tcgen05.alloc writes the TMEM address here
    const u32 warp = warpid_in_cta(), lane = laneid();

    // 1. Operand bytes into SMEM, made visible to the async proxy.
    // The rest of the buffer is zeroed: a wrong descriptor that reads past the operands reads zeros,
    // as bwlab's model does.
    for (u32 i = threadIdx.x; i < TEACH_SMEM_BYTES / 16; i += blockDim.x)
        smem[i] = i < image_bytes / 16 ? image[i] : make_uint4(0, 0, 0, 0);
    fence_proxy_async_shared_cta();

    // 2. The barrier and the accumulator's columns (a power of two in [32, 512]).
    if (threadIdx.x == 0) {
        mbarrier_init(&mma_done, 1);
        fence_mbarrier_init_release_cluster();  // the init is visible to tcgen05.commit
    }
    if (warp == 0) {  // tcgen05.alloc is .sync.aligned: the whole warp executes it
        tcgen05_alloc(&tmem_slot, tmem_cols);
        tcgen05_relinquish_alloc_permit();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const u32 tmem = tmem_slot;  // lane 0, first allocated column

    // 3. One thread issues the whole K loop; the descriptors hold start addresses relative to the
    //    image, so add where the image sits (in 16-byte units, the 14-bit start-address field).
    if (warp == 0) {
        if (elect_one_sync()) {
            const u64 base = (smem_u32(smem) >> 4) & 0x3FFF;
            for (u32 kb = 0; kb < k_blocks; ++kb)
                tcgen05_mma_f16_ss(tmem, a_descs[kb] + base, b_descs[kb] + base, idesc,
                                   /*accumulate=*/kb > 0 ? 1u : 0u);
            tcgen05_commit(&mma_done);  // arrives once every MMA above has completed
        }
        __syncwarp();
    }

    // 4. Bounded wait (a timeout is reported to Python as MbarrierTimeout 'mma_done'). `done` may
    //    differ between threads (one sees the phase complete just as another gives up), and
    //    tcgen05.ld is .sync.aligned, so it must not sit behind a per-thread condition: one thread
    //    that saw the phase complete proves every MMA completed, and __syncthreads_or makes that
    //    the CTA's outcome.
    const bool done = mbarrier_wait(&mma_done, /*parity=*/0, /*barrier_id=*/0, /*expected_tx=*/0);
    const bool mma_complete = __syncthreads_or(done) != 0;
    tcgen05_fence_after_thread_sync();  // TMEM reads below come after the MMAs' writes
    if (mma_complete) {                 // uniform across the CTA
        const u32 my_lanes = tmem + ((32u * warp) << 16);  // a warp reaches only its 32 lanes
        for (u32 col = 0; col < tmem_cols; col += 8) {
            u32 r[8];
            tcgen05_ld_32x32b_x8(r, my_lanes + col);  // lane 32*warp + l -> thread l, 8 columns
            tcgen05_wait_ld();
            for (int j = 0; j < 8; ++j) d_out[(32u * warp + lane) * tmem_cols + col + j] = r[j];
        }
    }

    // 5. Free the columns, on every path: a CTA that exits holding TMEM leaves the next one on this SM
    //    blocked in tcgen05.alloc. After a timeout an MMA may still be writing them, so warp 0 (whose
    //    thread issued the MMAs and the commit) first waits for mma_done once more, on its own budget.
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();  // the dealloc comes after every warp's TMEM reads
    if (warp == 0) {
        if (!mma_complete) tcgen05_wait_drained(&mma_done, 0);
        tcgen05_dealloc(tmem, tmem_cols);
    }
}
