// bwlab-targets: sm_90a
// The same 128 x 128 x 64 GEMM on Hopper (notebook 06_full_flow, Python side bwlab/flow/runner.py).
//
// full_flow_hopper — Hopper's native path, one CTA = one warpgroup (four warps):
//   1 TMA load   warp 0's elected thread: arrive.expect_tx(32 KiB) -> TMA loads of A and B (128B
//                swizzle, the same boxes as on Blackwell); every thread waits (bounded) on `full`
//   2 wgmma      the whole warpgroup: 4 K steps x 2 halves of M (wgmma is m64): 8 wgmma.mma_async
//                m64n128k16 reading SMEM through SM90 descriptors; D stays in REGISTERS
//   3 wait       wgmma.commit_group + wgmma.wait_group 0 (no mbarrier, no TMEM, no tcgen05.ld)
//   5 st.shared  each thread writes its accumulator fragment into the 128B-swizzled D tile
//   6 fence      fence.proxy.async.shared::cta, barrier
//   7 TMA store  warp 0's elected thread: four boxes, commit, wait until read
// What tcgen05 changes: D lives in TMEM instead of 128 registers per thread, one thread issues the
// MMA instead of the warpgroup, completion is an mbarrier (tcgen05.commit) instead of wait_group, and
// the epilogue reads D with tcgen05.ld in a layout it chooses (thread t <- row t).
// `stamps` (may be null): %globaltimer and %clock64 of lane 0 of every warp at each event (EV_*).
//
// The hybrid tier's two halves of the Blackwell kernel, for a GPU without tcgen05:
// flow_load_dump        step 1 exactly as full_flow (cuda_src/full_flow_sm100.cu) does it, then the SMEM
//                       holding A and B goes to GMEM (Python runs tcgen05.mma / tcgen05.ld in the model)
// flow_store_registers  steps 5-7 exactly as full_flow does them, from registers uploaded by Python
//                       (thread t, register j = what tcgen05.ld.32x32b put there); the D tile is dumped.
#include "ptx.cuh"

enum { BAR_FULL = 0 };
constexpr u32 SMEM_A = 0x0000, SMEM_B = 0x4000, SMEM_D = 0x8000, TILE_BYTES = 0x4000;
constexpr u32 K_BLOCKS = 4;

// Events stamped by full_flow_hopper (FLOW_EVENTS in bwlab/flow/timeline.py lists the same names).
enum { EV_START = 0, EV_LOAD_ISSUED, EV_LOAD_DONE, EV_MMA_ISSUED, EV_MMA_DONE, EV_ST_SHARED_DONE,
       EV_FENCED, EV_STORE_ISSUED, EV_STORE_READ, EV_END, EV_COUNT };

__device__ __forceinline__ void stamp(u64* stamps, u32 ev) {
    if (stamps && laneid() == 0) {
        const u32 w = warpid_in_cta();
        stamps[(w * EV_COUNT + ev) * 2] = globaltimer_ns();
        stamps[(w * EV_COUNT + ev) * 2 + 1] = clock64();
    }
}

// SM90 SMEM matrix descriptor, K-major 128B swizzle (PTX ISA wgmma "Matrix Descriptor Format"):
// start >> 4 in bits 0-13, LBO = 1 (unused), SBO = 1024 >> 4 in bits 32-45, swizzle 128B = 1 in bits
// 62-63. Unlike SM100 there is no version field and the swizzle code differs (1, not 2).
__device__ __forceinline__ u64 gmma_desc_k_sw128(u32 smem_addr) {
    return ((smem_addr >> 4) & 0x3FFFull) | (1ull << 16) | ((1024ull >> 4) << 32) | (1ull << 62);
}

// The tile in SMEM holds D row-major in four 128 x 32 f32 boxes (128 bytes per row), 128B swizzle.
__device__ __forceinline__ u32 d_tile_address(u32 base, u32 m, u32 n) {
    const u32 logical = base + SMEM_D + (n / 32u) * TILE_BYTES + m * 128u + (n % 32u) * 4u;
    return swizzle_address(logical, 3);
}

__device__ __forceinline__ bool load_a_b(u8* smem, const TmaDescriptor* ta, const TmaDescriptor* tb, u64* full) {
    if (threadIdx.x == 0) {
        mbarrier_init(full, 1);
        fence_mbarrier_init_release_cluster();
    }
    __syncthreads();
    if (warpid_in_cta() == 0 && elect_one_sync()) {
        mbarrier_arrive_expect_tx(full, 2 * TILE_BYTES);
        tma_load_2d(smem + SMEM_A, ta, full, 0, 0);
        tma_load_2d(smem + SMEM_B, tb, full, 0, 0);
    }
    const bool loaded = mbarrier_wait(full, 0, BAR_FULL, 2 * TILE_BYTES);
    return __syncthreads_or(loaded) != 0;
}

__device__ __forceinline__ void store_d(u8* smem, const TmaDescriptor* td) {
    if (warpid_in_cta() == 0 && elect_one_sync()) {
        for (u32 c = 0; c < 4; ++c) tma_store_2d(td, smem + SMEM_D + c * TILE_BYTES, 32 * c, 0);
        bulk_commit_group();
        bulk_wait_group_read<0>();
    }
}

extern "C" __global__ void __launch_bounds__(128, 1)
full_flow_hopper(const __grid_constant__ TmaDescriptor tmap_a, const __grid_constant__ TmaDescriptor tmap_b,
                 const __grid_constant__ TmaDescriptor tmap_d, u64* stamps) {
    extern __shared__ u8 smem_raw[];
    __shared__ alignas(8) u64 full;
    u8* smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    const u32 base = smem_u32(smem);
    stamp(stamps, EV_START);

    // 1. TMA load
    if (threadIdx.x == 0) {
        mbarrier_init(&full, 1);
        fence_mbarrier_init_release_cluster();
    }
    __syncthreads();
    if (warpid_in_cta() == 0 && elect_one_sync()) {
        mbarrier_arrive_expect_tx(&full, 2 * TILE_BYTES);
        tma_load_2d(smem + SMEM_A, &tmap_a, &full, 0, 0);
        tma_load_2d(smem + SMEM_B, &tmap_b, &full, 0, 0);
    }
    stamp(stamps, EV_LOAD_ISSUED);
    const bool loaded = mbarrier_wait(&full, 0, BAR_FULL, 2 * TILE_BYTES);
    if (!__syncthreads_or(loaded)) return;
    stamp(stamps, EV_LOAD_DONE);

    // 2. wgmma: the warpgroup computes rows 0-63 into d0 and rows 64-127 into d1
    float d0[64], d1[64];
    for (int i = 0; i < 64; ++i) d0[i] = d1[i] = 0.0f;
    wgmma_fence();
#pragma unroll
    for (u32 kb = 0; kb < K_BLOCKS; ++kb) {
        const u64 b = gmma_desc_k_sw128(base + SMEM_B + 32 * kb);
        wgmma_mma_async_m64n128k16_f32_f16_f16<0, 0>(d0, gmma_desc_k_sw128(base + SMEM_A + 32 * kb), b, kb > 0);
        wgmma_mma_async_m64n128k16_f32_f16_f16<0, 0>(d1, gmma_desc_k_sw128(base + SMEM_A + 64 * 128 + 32 * kb), b,
                                                    kb > 0);
    }
    wgmma_commit_group();
    stamp(stamps, EV_MMA_ISSUED);
    // 3. wait for the warpgroup's MMAs (D is in this thread's registers afterwards)
    wgmma_wait_group<0>();
    stamp(stamps, EV_MMA_DONE);

    // 5. st.shared: d[i] = D[16*warp + lane/4 + 8*((i/2)%2)][8*(i/4) + 2*(lane%4) + i%2]
    const u32 warp = warpid_in_cta(), lane = laneid();
#pragma unroll
    for (u32 i = 0; i < 64; i += 2) {
        const u32 m = 16 * warp + lane / 4 + 8 * ((i / 2) % 2), n = 8 * (i / 4) + 2 * (lane % 4);
        st_shared_v2_b32(d_tile_address(base, m, n), __float_as_uint(d0[i]), __float_as_uint(d0[i + 1]));
        st_shared_v2_b32(d_tile_address(base, m + 64, n), __float_as_uint(d1[i]), __float_as_uint(d1[i + 1]));
    }
    stamp(stamps, EV_ST_SHARED_DONE);
    // 6. fence + barrier
    fence_proxy_async_shared_cta();
    __syncthreads();
    stamp(stamps, EV_FENCED);
    // 7. TMA store
    if (warp == 0 && elect_one_sync()) {
        for (u32 c = 0; c < 4; ++c) tma_store_2d(&tmap_d, smem + SMEM_D + c * TILE_BYTES, 32 * c, 0);
        bulk_commit_group();
        stamp(stamps, EV_STORE_ISSUED);
        bulk_wait_group_read<0>();
        stamp(stamps, EV_STORE_READ);
    }
    __syncwarp();
    stamp(stamps, EV_END);
}

extern "C" __global__ void __launch_bounds__(128, 1)
flow_load_dump(const __grid_constant__ TmaDescriptor tmap_a, const __grid_constant__ TmaDescriptor tmap_b,
               u8* smem_ab_out) {
    extern __shared__ u8 smem_raw[];
    __shared__ alignas(8) u64 full;
    u8* smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    if (!load_a_b(smem, &tmap_a, &tmap_b, &full)) return;
    for (u32 i = threadIdx.x; i < 2 * TILE_BYTES / 16; i += blockDim.x)
        reinterpret_cast<uint4*>(smem_ab_out)[i] = reinterpret_cast<const uint4*>(smem + SMEM_A)[i];
}

extern "C" __global__ void __launch_bounds__(128, 1)
flow_store_registers(const __grid_constant__ TmaDescriptor tmap_d, const u32* __restrict__ regs,
                     u8* smem_d_out) {
    extern __shared__ u8 smem_raw[];
    u8* smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    const u32 base = smem_u32(smem), row = threadIdx.x;
#pragma unroll
    for (u32 c = 0; c < 4; ++c) {
        u32 r[32];  // what tcgen05.ld.32x32b.x32 at column 32c put in this thread's registers
        for (int j = 0; j < 32; ++j) r[j] = regs[row * 128u + 32u * c + j];
        const u32 line = base + SMEM_D + c * TILE_BYTES + row * 128u;
#pragma unroll
        for (u32 q = 0; q < 8; ++q)
            st_shared_v4_b32(swizzle_address(line + 16u * q, 3), r[4 * q], r[4 * q + 1], r[4 * q + 2], r[4 * q + 3]);
    }
    fence_proxy_async_shared_cta();
    __syncthreads();
    store_d(smem, &tmap_d);
    __syncthreads();
    for (u32 i = threadIdx.x; i < 4 * TILE_BYTES / 16; i += blockDim.x)
        reinterpret_cast<uint4*>(smem_d_out)[i] = reinterpret_cast<const uint4*>(smem + SMEM_D)[i];
}
