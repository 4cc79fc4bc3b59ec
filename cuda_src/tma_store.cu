// bwlab-targets: sm_90a sm_100a
// Stage 5, the epilogue: registers -> SMEM (st.shared.v4, with or without swizzle) ->
// fence.proxy.async.shared::cta -> barrier -> TMA store (or TMA reduce-add) -> bulk commit/wait.
//
// Kernels, in the order notebook 05 uses them:
//   epilogue_tile      one CTA per D tile: thread t holds row t of the accumulator tile (the
//                      tcgen05.ld .32x32b mapping), optionally brings C in with a TMA load (bounded
//                      mbarrier wait), computes D = alpha*acc + beta*C, packs, st.shared.v4 into the
//                      (swizzled) D tile, fences, and one thread TMA-stores (or reduce-adds) each box.
//   tma_store_box      the TMA store alone, any rank: threads copy an SMEM image in, one thread
//                      stores one box at given coordinates (validation of bwlab.epilogue's model).
//   smem_store_cycles  clock64 cost of st.shared.v4 for a given per-lane address pattern (banks).
//   tma_store_stream / st_global_stream   store bandwidth: TMA store vs plain st.global.v4.
//
// On Hopper the accumulators come from GMEM (what tcgen05.ld would have put in registers): the
// hybrid tier. Every wait on an mbarrier is bounded (mbarrier_wait, ptx/mbarrier.cuh).
#include "ptx.cuh"

#ifndef EPI_THREADS
#define EPI_THREADS 128
#endif

enum : u32 {
    EPI_USE_C = 1u,        // D = alpha*acc + beta*C, C brought in by TMA load
    EPI_REDUCE_ADD = 2u,   // cp.reduce.async.bulk.tensor .add instead of the plain store
    EPI_SKIP_FENCE = 4u,   // leave out fence.proxy.async.shared::cta: WRONG, for notebook 05 only
    EPI_EXTRA_TX = 8u,     // announce 16 bytes too many on the C barrier: exercises the bounded wait
};
enum : u32 { DT_F32 = 0u, DT_F16 = 1u, DT_BF16 = 2u };

// The 1024-byte aligned start of dynamic shared memory (the swizzle patterns repeat every 256, 512
// or 1024 bytes, so offsets from here are what the model's SMEM addresses mean). The host asks for
// 1024 bytes of slack.
extern __shared__ u8 bw_dyn_smem[];
__device__ __forceinline__ u32 dyn_smem_base_1024() {
    return (smem_u32(bw_dyn_smem) + 1023u) & ~1023u;
}
__device__ __forceinline__ void* smem_ptr(u32 addr) {
    // generic pointer for a shared-state-space address (the tma_* wrappers take pointers)
    return bw_dyn_smem + (addr - smem_u32(bw_dyn_smem));
}

// Pack four 32-bit words (16 bytes) of D from `v`, which holds 16/elem_bytes floats.
__device__ __forceinline__ void pack16(const float* v, u32 dtype, u32 (&w)[4]) {
    if (dtype == DT_F32) {
#pragma unroll
        for (int i = 0; i < 4; ++i) w[i] = __float_as_uint(v[i]);
    } else if (dtype == DT_F16) {
#pragma unroll
        for (int i = 0; i < 4; ++i) w[i] = cvt_rn_f16x2_f32(v[2 * i], v[2 * i + 1]);
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) w[i] = cvt_rn_bf16x2_f32(v[2 * i], v[2 * i + 1]);
    }
}

// 16 bytes of C (raw element bits) -> floats (exact).
__device__ __forceinline__ void unpack16(const u32 (&w)[4], u32 dtype, float* v) {
    if (dtype == DT_F32) {
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = __uint_as_float(w[i]);
    } else if (dtype == DT_F16) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            v[2 * i] = cvt_f32_f16(w[i] & 0xffffu);
            v[2 * i + 1] = cvt_f32_f16(w[i] >> 16);
        }
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            v[2 * i] = __uint_as_float(w[i] << 16);
            v[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// epilogue_tile: grid (tiles along N, tiles along M), EPI_THREADS threads.
//   D tile in SMEM: bm rows x bn columns of `dtype`, kept as bn/box_cols boxes of bm x box_cols
//   (box_cols * elem_bytes = 32/64/128 bytes with swizzle), at 1024-aligned base + smem_offset;
//   the C tile the same, one 1024-rounded tile further.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(EPI_THREADS)
epilogue_tile(const __grid_constant__ TmaDescriptor tmap_d, const __grid_constant__ TmaDescriptor tmap_c,
              const float* __restrict__ acc, u32 lda, float alpha, float beta, u32 flags,
              u32 dtype, u32 swz_bits, u32 bm, u32 bn, u32 box_cols, u32 smem_offset) {
    __shared__ alignas(8) u64 c_full;  // barrier id 0
    const u32 elem = dtype == DT_F32 ? 4u : 2u;
    const u32 box_row_bytes = box_cols * elem;
    const u32 box_bytes = bm * box_row_bytes;
    const u32 n_boxes = bn / box_cols;
    const u32 tile_bytes = bm * bn * elem;
    const u32 d_base = dyn_smem_base_1024() + smem_offset;
    const u32 c_base = d_base + ((tile_bytes + 1023u) & ~1023u);
    const int m0 = static_cast<int>(blockIdx.y * bm);
    const int n0 = static_cast<int>(blockIdx.x * bn);
    const u32 row = threadIdx.x;

    // 1. C -> SMEM by TMA load (one box per column block), completion on an mbarrier.
    if (flags & EPI_USE_C) {
        if (threadIdx.x == 0) {
            mbarrier_init(&c_full, 1);
            fence_mbarrier_init_release_cluster();
        }
        __syncthreads();
        const u32 expect = n_boxes * box_bytes + ((flags & EPI_EXTRA_TX) ? 16u : 0u);
        if (threadIdx.x == 0) {
            mbarrier_arrive_expect_tx(&c_full, expect);
            for (u32 b = 0; b < n_boxes; ++b)
                tma_load_2d(smem_ptr(c_base + b * box_bytes), &tmap_c, &c_full,
                            n0 + static_cast<int>(b * box_cols), m0);
        }
        if (!mbarrier_wait(&c_full, 0, /*barrier_id=*/0, expect)) return;
    }

    // 2. Registers -> SMEM: thread `row` writes its row 16 bytes at a time (st.shared.v4).
    if (row < bm) {
        const u32 vec = 16u / elem;  // columns per 16 bytes
        const float* arow = acc + static_cast<size_t>(m0 + static_cast<int>(row)) * lda + n0;
        for (u32 col = 0; col < bn; col += vec) {
            const u32 b = col / box_cols, c = col % box_cols;
            const u32 off = b * box_bytes + row * box_row_bytes + c * elem;
            // Each step rounded on its own (no FMA contraction): the model does the same.
            float v[8];
#pragma unroll
            for (u32 i = 0; i < 8; ++i) v[i] = i < vec ? __fmul_rn(alpha, arow[col + i]) : 0.0f;
            if (flags & EPI_USE_C) {
                u32 w[4];
                float cv[8];
                ld_shared_v4_b32(swizzle_address(c_base + off, swz_bits), w);
                unpack16(w, dtype, cv);
#pragma unroll
                for (u32 i = 0; i < 8; ++i)
                    if (i < vec) v[i] = __fadd_rn(v[i], __fmul_rn(beta, cv[i]));
            }
            u32 w[4];
            pack16(v, dtype, w);
            st_shared_v4_b32(swizzle_address(d_base + off, swz_bits), w[0], w[1], w[2], w[3]);
        }
    }

    // 3. Generic-proxy writes -> async-proxy reads: fence in every writing thread, then a barrier.
    if (!(flags & EPI_SKIP_FENCE)) fence_proxy_async_shared_cta();
    __syncthreads();

    // 4. One thread stores every box; the bulk group must finish reading SMEM before the CTA exits.
    if (threadIdx.x == 0) {
        for (u32 b = 0; b < n_boxes; ++b) {
            const void* src = smem_ptr(d_base + b * box_bytes);
            const int cx = n0 + static_cast<int>(b * box_cols);
            if (flags & EPI_REDUCE_ADD) tma_reduce_add_2d(&tmap_d, src, cx, m0);
            else tma_store_2d(&tmap_d, src, cx, m0);
        }
        bulk_commit_group();
        bulk_wait_group_read<0>();
    }
}

// ---------------------------------------------------------------------------------------------
// tma_store_box: one CTA. Threads copy `window_bytes` of an SMEM image from GMEM into the
// 1024-aligned dynamic SMEM (st.shared.v4), fence, barrier; thread 0 stores (or reduce-adds) the
// box whose SMEM address is base + box_offset at coordinates c[0..rank-1].
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(EPI_THREADS)
tma_store_box(const __grid_constant__ TmaDescriptor tmap, const uint4* __restrict__ image,
              u32 window_bytes, u32 box_offset, u32 rank, int c0, int c1, int c2, int c3, int c4,
              u32 flags) {
    const u32 base = dyn_smem_base_1024();
    for (u32 i = threadIdx.x; i < window_bytes / 16u; i += blockDim.x) {
        const uint4 v = image[i];
        st_shared_v4_b32(base + 16u * i, v.x, v.y, v.z, v.w);
    }
    if (!(flags & EPI_SKIP_FENCE)) fence_proxy_async_shared_cta();
    __syncthreads();
    if (threadIdx.x == 0) {
        const void* src = smem_ptr(base + box_offset);
        const bool add = flags & EPI_REDUCE_ADD;
        switch (rank) {
            case 1: add ? tma_reduce_add_1d(&tmap, src, c0) : tma_store_1d(&tmap, src, c0); break;
            case 2: add ? tma_reduce_add_2d(&tmap, src, c0, c1) : tma_store_2d(&tmap, src, c0, c1); break;
            case 3: add ? tma_reduce_add_3d(&tmap, src, c0, c1, c2) : tma_store_3d(&tmap, src, c0, c1, c2); break;
            case 4: add ? tma_reduce_add_4d(&tmap, src, c0, c1, c2, c3)
                        : tma_store_4d(&tmap, src, c0, c1, c2, c3); break;
            default: add ? tma_reduce_add_5d(&tmap, src, c0, c1, c2, c3, c4)
                         : tma_store_5d(&tmap, src, c0, c1, c2, c3, c4); break;
        }
        bulk_commit_group();
        bulk_wait_group<0>();  // writes done and visible to this thread (not needed to exit; shown)
    }
}

// ---------------------------------------------------------------------------------------------
// smem_store_cycles: EPI_THREADS threads; every warp repeats, `iters` times, 16 st.shared.v4 with
// lane i writing at its own 16 KiB region + lane_offset[i] + 1024 k (k = 0..15, mod 16 KiB): the
// 1024-byte steps keep every lane in its banks, and 16 distinct addresses keep ptxas from dropping
// stores that a later one would overwrite. cycles[0] = clock64 ticks for the whole loop, measured
// by thread 0 between barriers (all warps share the SM's shared-memory pipe).
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(EPI_THREADS)
smem_store_cycles(const u32* __restrict__ lane_offset, u32 iters, unsigned long long* cycles) {
    const u32 warp = threadIdx.x / 32u;
    const u32 base = dyn_smem_base_1024() + warp * 16384u;
    const u32 off = lane_offset[threadIdx.x % 32u];
    const u32 v = threadIdx.x;
    __syncthreads();
    const long long t0 = clock64();
    for (u32 it = 0; it < iters; ++it) {
#pragma unroll
        for (u32 k = 0; k < 16; ++k)
            st_shared_v4_b32(base + ((off + 1024u * k) & 16383u), v + k, v, it, k);
    }
    __syncthreads();
    const long long t1 = clock64();
    if (threadIdx.x == 0) cycles[0] = static_cast<unsigned long long>(t1 - t0);
}

// ---------------------------------------------------------------------------------------------
// Store bandwidth. tma_store_stream: each CTA fills one box in SMEM once, then TMA-stores it to
// every `gridDim.x`-th box position of the tensor (boxes_x along dim 0, boxes_y along dim 1).
// st_global_stream: every thread writes 16-byte vectors, grid-stride.
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(EPI_THREADS)
tma_store_stream(const __grid_constant__ TmaDescriptor tmap, u32 box_bytes, u32 box_w, u32 box_h,
                 u32 boxes_x, u32 boxes_total) {
    const u32 base = dyn_smem_base_1024();
    for (u32 i = threadIdx.x; i < box_bytes / 16u; i += blockDim.x)
        st_shared_v4_b32(base + 16u * i, i, blockIdx.x, 0x3f800000u, i ^ 0x5a5a5a5au);
    fence_proxy_async_shared_cta();
    __syncthreads();
    if (threadIdx.x == 0) {
        for (u32 t = blockIdx.x; t < boxes_total; t += gridDim.x) {
            tma_store_2d(&tmap, smem_ptr(base), static_cast<int>((t % boxes_x) * box_w),
                         static_cast<int>((t / boxes_x) * box_h));
            bulk_commit_group();
        }
        bulk_wait_group<0>();
    }
}

extern "C" __global__ void st_global_stream(uint4* __restrict__ dst, unsigned long long n16) {
    const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
    for (unsigned long long i = blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
         i < n16; i += stride)
        dst[i] = make_uint4(static_cast<u32>(i), 0x3f800000u, static_cast<u32>(i >> 32), 7u);
}
