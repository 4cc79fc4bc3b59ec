// A gallery of broken kernels: what a learner's mistake does, and what bwlab turns it into.
// Each one runs in a worker process (bwlab.sandbox.run_isolated), so none of them can poison the
// notebook's CUDA context or hang it.
//
//   missing_arrival    : the mbarrier expects 2 arrivals, one thread arrives   -> MbarrierTimeout (bounded wait)
//   oob_store          : a store far past the end of its buffer                  -> illegal address (KernelFault)
//   spin_forever       : a loop on a flag nobody sets, no bounded wait          -> KernelHang
//   divergent_barrier  : __syncthreads() reached by half of the block            -> KernelHang or undefined
#include "ptx.cuh"

extern "C" __global__ void missing_arrival(u32* out) {
    __shared__ alignas(8) u64 bar;  // barrier id 0
    if (threadIdx.x == 0) {
        mbarrier_init(&bar, 2);     // two arrivals expected ...
        fence_mbarrier_init_release_cluster();
    }
    __syncthreads();
    if (threadIdx.x == 0) mbarrier_arrive(&bar);  // ... one arrives
    if (!mbarrier_wait(&bar, 0, 0, 0)) return;
    out[threadIdx.x] = 1;
}

extern "C" __global__ void oob_store(u32* out, u64 offset_words) {
    out[offset_words + threadIdx.x] = threadIdx.x;  // offset far past the allocation
}

extern "C" __global__ void spin_forever(volatile u32* flag, u32* out) {
    while (*flag == 0) {
    }  // nothing ever sets the flag, and nothing bounds the wait
    out[threadIdx.x] = 1;
}

extern "C" __global__ void divergent_barrier(u32* out) {
    if (threadIdx.x < 32) {
        __syncthreads();  // only one warp of the block gets here
    }
    out[threadIdx.x] = threadIdx.x;
}
