// bwlab-targets: sm_90a
// bwlab timing model: what an mbarrier wait costs the warp that waits, with a bare try_wait loop and
// with the ladder's bounded wait (`mbarrier_wait` in ptx/mbarrier.cuh: a %globaltimer read before the
// loop; after every failed try_wait, another %globaltimer read and a volatile load of bw_status).
// docs/results/timing_waits.py launches these and prints the numbers.
//
//   waits_pingpong  two warps hand a token back and forth over two mbarriers: cycles per round trip
//   waits_gather    4 warps: lane 0 of each arrives on one mbarrier (count 4), thread 0 waits; the
//                   warps meet at __syncthreads before each round: cycles from the round's start to
//                   thread 0's wait returning (step 2's `empty` rendezvous)
//   waits_ready     one thread arrives on an mbarrier of count 1 and waits for the phase it completed:
//                   the cost of a wait that succeeds at once (step 2's `full` wait on data long landed)
// `bounded` = 0: `while (!mbarrier_try_wait_parity(...)) {}`; 1: `mbarrier_wait(...)`.
#include "gemm_sm90/gemm_common.cuh"
using namespace ladder;

__device__ __forceinline__ void wait_on(u64* bar, u32 parity, int bounded) {
    if (bounded) {
        mbarrier_wait(bar, parity, 90, 0);
    } else {
        while (!mbarrier_try_wait_parity(bar, parity)) {}
    }
}

extern "C" __global__ void waits_pingpong(u64* out, int reps, int bounded) {
    __shared__ alignas(8) u64 ping, pong;
    if (threadIdx.x == 0) {
        mbarrier_init(&ping, 1);
        mbarrier_init(&pong, 1);
        fence_mbarrier_init_release_cluster();
    }
    __syncthreads();
    if (laneid() != 0) return;
    if (threadIdx.x == 0) {
        const u64 t0 = clock64();
        for (int i = 0; i < reps; ++i) {
            mbarrier_arrive(&ping);
            wait_on(&pong, i & 1, bounded);
        }
        out[0] = clock64() - t0;
    } else if (threadIdx.x == 32) {
        for (int i = 0; i < reps; ++i) {
            wait_on(&ping, i & 1, bounded);
            mbarrier_arrive(&pong);
        }
    }
}

extern "C" __global__ void waits_gather(u64* out, int reps, int bounded) {
    __shared__ alignas(8) u64 bar;
    if (threadIdx.x == 0) {
        mbarrier_init(&bar, 4);
        fence_mbarrier_init_release_cluster();
    }
    u64 total = 0;
    for (int i = 0; i < reps; ++i) {
        __syncthreads();
        const u64 t0 = clock64();
        if (laneid() == 0) mbarrier_arrive(&bar);
        if (threadIdx.x == 0) {
            wait_on(&bar, i & 1, bounded);
            total += clock64() - t0;
        }
    }
    if (threadIdx.x == 0) out[0] = total;
}

extern "C" __global__ void waits_ready(u64* out, int reps, int bounded) {
    __shared__ alignas(8) u64 bar;
    if (threadIdx.x != 0) return;
    mbarrier_init(&bar, 1);
    fence_mbarrier_init_release_cluster();
    u64 total = 0;
    for (int i = 0; i < reps; ++i) {
        mbarrier_arrive(&bar);
        const u64 t0 = clock64();
        wait_on(&bar, i & 1, bounded);
        total += clock64() - t0;
    }
    out[0] = total;
}
