// bwlab-targets: sm_90a
// bwlab timing model: what the H100/H200 datasheets do not give, measured on the GPU itself
// (docs/results/timing_calibrate.py launches these kernels and prints the numbers; the same kernels
// run in the emulator first, which proves the script, not the numbers).
//
//   tma_latency    one thread: arrive.expect_tx, one TMA box load, spin on the mbarrier; clock64 around
//                  each, `reps` times (row_step 0: the same box, an L2 hit after the first; row_step =
//                  box rows: a new box each time, from DRAM when L2 was flushed before)
//   mbar_pingpong  two warps hand a token back and forth over two mbarriers: cycles per round trip
//   wgmma_rate     each warpgroup issues `reps` stages of 4 wgmma m64n256k16 (mode 0: 2 groups in flight;
//                  mode 1: one wgmma, then wait 0 — its latency)
//   stream         every CTA (one per SM) streams TMA boxes through a ring of STAGES buffers: bytes per
//                  SM-cycle, and with globaltimer the chip's bandwidth and the SM clock
#include "gemm_sm90/gemm_common.cuh"
using namespace ladder;

extern "C" __global__ void tma_latency(const __grid_constant__ TmaDescriptor tmap, u64* out, int reps,
                                       int row_step, int box_bytes) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    __shared__ alignas(8) u64 bar;
    if (threadIdx.x != 0) return;
    mbarrier_init(&bar, 1);
    fence_mbarrier_init_release_cluster();
    for (int i = 0; i < reps; ++i) {
        const u64 t0 = clock64();
        mbarrier_arrive_expect_tx(&bar, box_bytes);
        tma_load_2d(smem, &tmap, &bar, 0, i * row_step);
        while (!mbarrier_try_wait_parity(&bar, i & 1)) {}
        const u64 t1 = clock64();
        out[i] = t1 - t0;
    }
}

extern "C" __global__ void mbar_pingpong(u64* out, int reps) {
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
            while (!mbarrier_try_wait_parity(&pong, i & 1)) {}
        }
        out[0] = clock64() - t0;
    } else if (threadIdx.x == 32) {
        for (int i = 0; i < reps; ++i) {
            while (!mbarrier_try_wait_parity(&ping, i & 1)) {}
            mbarrier_arrive(&pong);
        }
    }
}

extern "C" __global__ void wgmma_rate(u64* out, int reps, int mode) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);     // A: 64 x 64 bf16 (8 KiB), B: 256 x 64 bf16 (32 KiB), zeros
    for (int i = threadIdx.x; i < (8192 + 32768) / 4; i += blockDim.x) reinterpret_cast<u32*>(smem)[i] = 0u;
    fence_proxy_async_shared_cta();
    __syncthreads();
    float d[128];
    zero(d);
    const u32 sA = smem_u32(smem), sB = sA + 8192;
    wgmma_fence();
    const u64 t0 = clock64();
    if (mode == 0) {
        for (int i = 0; i < reps; ++i) {
            mma_stage<256>(d, sA, sB);
            wgmma_commit_group();
            wgmma_wait_group<1>();
        }
        wgmma_wait_group<0>();
    } else {
        for (int i = 0; i < reps; ++i) {
            wgmma_fence();   // the accumulators were handed back by the wait: fence before reusing them
            wgmma_bf16<256>(d, desc_k128(sA), desc_k128(sB));
            wgmma_commit_group();
            wgmma_wait_group<0>();
        }
    }
    const u64 t1 = clock64();
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 128; ++i) s += d[i];
    if (threadIdx.x % 128 == 0) {
        out[2 * (threadIdx.x / 128)] = t1 - t0;
        out[2 * (threadIdx.x / 128) + 1] = s == 0.0f ? 0u : 1u;
    }
}

constexpr int STREAM_STAGES = 6;
extern "C" __global__ void stream(const __grid_constant__ TmaDescriptor tmap, u64* out, int loads,
                                  int rows_per_cta, int box_rows, int shared_rows) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    __shared__ alignas(8) u64 full[STREAM_STAGES];
    if (threadIdx.x != 0) return;
    for (int s = 0; s < STREAM_STAGES; ++s) mbarrier_init(&full[s], 1);
    fence_mbarrier_init_release_cluster();
    const u32 box_bytes = u32(box_rows) * 128u;
    const int base = shared_rows ? 0 : blockIdx.x * rows_per_cta;
    const int boxes = rows_per_cta / box_rows;
    const int first = shared_rows ? (blockIdx.x * 7) % boxes : 0;
    const u64 g0 = globaltimer_ns(), t0 = clock64();
    for (int i = 0; i < loads; ++i) {
        const int s = i % STREAM_STAGES;
        if (i >= STREAM_STAGES) while (!mbarrier_try_wait_parity(&full[s], ((i / STREAM_STAGES) - 1) & 1)) {}
        mbarrier_arrive_expect_tx(&full[s], box_bytes);
        tma_load_2d(smem + s * box_bytes, &tmap, &full[s], 0, base + ((first + i) % boxes) * box_rows);
    }
    for (int i = loads > STREAM_STAGES ? loads - STREAM_STAGES : 0; i < loads; ++i) {
        const int s = i % STREAM_STAGES;
        while (!mbarrier_try_wait_parity(&full[s], (i / STREAM_STAGES) & 1)) {}
    }
    const u64 t1 = clock64(), g1 = globaltimer_ns();
    out[4 * blockIdx.x + 0] = t0;
    out[4 * blockIdx.x + 1] = t1;
    out[4 * blockIdx.x + 2] = g0;
    out[4 * blockIdx.x + 3] = g1;
}

// The ladder's direct epilogue (gemm_common.cuh store_rows<256>): each of the CTA's 2 warpgroups writes a
// 64 x 256 bf16 part of a 128 x 256 tile with 64 st.global.u32 per thread (each warp instruction: 8 rows
// x 16 bytes = 8 sectors). `reps` tiles per CTA, tile t of CTA b at rows 128 (b + gridDim.x t).
extern "C" __global__ void store_epilogue(u16* C, int ldc, int reps, u64* out) {
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = float(threadIdx.x + i);
    __syncthreads();
    const u64 t0 = clock64(), g0 = globaltimer_ns();
    for (int t = 0; t < reps; ++t) {
        const int row0 = 128 * (blockIdx.x + gridDim.x * t) + 64 * (threadIdx.x / 128);
        store_rows<256>(d, C, ldc, row0, 0);
    }
    __syncthreads();
    const u64 t1 = clock64(), g1 = globaltimer_ns();
    if (threadIdx.x == 0) {
        out[4 * blockIdx.x + 0] = t1 - t0;
        out[4 * blockIdx.x + 1] = g1 - g0;
    }
}
