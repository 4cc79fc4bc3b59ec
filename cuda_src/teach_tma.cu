// bwlab-targets: sm_90a sm_100a
// The TMA load, to read and to change (notebook 01; Python side: bwlab.tma.run_teach).
// One CTA loads one 2D box of a tensor into shared memory, then copies it out so Python can compare
// the bytes with bwlab.tma's model:
//
//   thread 0   : mbarrier.init(1) -> fence -> arrive.expect_tx(tx_bytes) -> cp.async.bulk.tensor.2d
//   all threads: bounded wait for phase 0 -> copy SMEM to `out`
//
// The validation harness (tma_load.cu, kernel tma_load_dump) does the same for every rank and option.
#include "ptx.cuh"

#ifndef TEACH_SMEM_BYTES
#define TEACH_SMEM_BYTES 16384
#endif

extern "C" __global__ void teach_tma_load(const __grid_constant__ TmaDescriptor tmap,  // 128 bytes, built on the host
                                          int c0, int c1,                              // box start: dim 0, dim 1
                                          u32 box_bytes, u8* __restrict__ out) {
    // The swizzle is a function of SMEM address bits 4-9: a box placed on a 1024-byte boundary
    // lands exactly as the model draws it at address 0.
    __shared__ alignas(1024) u8 smem[TEACH_SMEM_BYTES];
    __shared__ alignas(8) u64 smem_full;  // barrier id 0: "the box is in SMEM"

    if (threadIdx.x == 0) {
        mbarrier_init(&smem_full, 1);           // one arrival (thread 0's) per phase
        fence_mbarrier_init_release_cluster();  // the TMA engine (async proxy) must see the init
    }
    __syncthreads();  // nobody waits on the barrier before it exists

    // The bytes phase 0 waits for: they must equal what the load brings (the whole box).
    const u32 tx_bytes = box_bytes;
    if (threadIdx.x == 0) {
        // Arrive, and announce the bytes still to come: the phase needs both before it completes.
        mbarrier_arrive_expect_tx(&smem_full, tx_bytes);
        // One instruction for the whole box; the TMA engine retires the bytes with complete_tx.
        tma_load_2d(smem, &tmap, &smem_full, c0, c1);
    }
    // Phase 0 completes when the arrival is in and the transaction count is back to zero.
    // Bounded: after 200 ms the host gets MbarrierTimeout naming 'smem_full' instead of a hang.
    if (!mbarrier_wait(&smem_full, /*parity=*/0, /*barrier_id=*/0, tx_bytes)) return;

    for (u32 i = threadIdx.x; i < box_bytes; i += blockDim.x) out[i] = smem[i];
}
