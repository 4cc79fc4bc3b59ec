// The first kernel of the suite (notebook 00): one bulk copy GMEM -> SMEM completed through an
// mbarrier, then every thread copies SMEM back out so the host can compare.
//
//   thread 0: mbarrier.init(count = 1) -> fence -> arrive.expect_tx(bytes + EXTRA) -> cp.async.bulk
//   all     : bounded mbarrier wait (phase 0) -> read SMEM -> write GMEM
//
// `extra_tx` exists to break it on purpose: announcing more bytes than the copy brings means the
// transaction count never reaches zero, the phase never completes, and the bounded wait reports
// barrier 'smem_full' to Python instead of hanging.
#include "ptx.cuh"

#ifndef HELLO_MAX_BYTES
#define HELLO_MAX_BYTES 16384
#endif

extern "C" __global__ void hello_bulk_roundtrip(const u32* __restrict__ src, u32* __restrict__ dst,
                                                u32 bytes, u32 extra_tx) {
    __shared__ alignas(128) u32 smem[HELLO_MAX_BYTES / 4];
    __shared__ alignas(8) u64 smem_full;  // barrier id 0

    if (threadIdx.x == 0) {
        mbarrier_init(&smem_full, 1);
        fence_mbarrier_init_release_cluster();  // init visible to the async proxy (TMA engine)
    }
    __syncthreads();

    if (threadIdx.x == 0) {
        mbarrier_arrive_expect_tx(&smem_full, bytes + extra_tx);
        bulk_load(smem, src + blockIdx.x * (bytes / 4), bytes, &smem_full);
    }
    if (!mbarrier_wait(&smem_full, /*parity=*/0, /*barrier_id=*/0, bytes + extra_tx)) return;

    for (u32 i = threadIdx.x; i < bytes / 4; i += blockDim.x)
        dst[blockIdx.x * (bytes / 4) + i] = smem[i];
}
