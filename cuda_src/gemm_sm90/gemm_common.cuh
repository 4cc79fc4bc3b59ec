// bwlab GEMM ladder, Hopper (sm_90a): what every step shares.
//
// The problem of every step: C[M x N] = A[M x K] * B[N x K]^T, bf16 in, f32 accumulation, bf16 out,
// all three row-major (A and B are K-major: K is the contiguous dimension). The tensor maps are
// built in Python (bwlab/gemm/runner.py): A and B with a box of 64 (K) x rows and 128B swizzle, so one
// box row is one 128-byte swizzle row; C (TMA-store steps) with a box of 64 x 64, 128B swizzle.
#pragma once
#include "ptx.cuh"

namespace ladder {

constexpr int BK = 64;             // K per pipeline stage: 64 bf16 = 128 bytes, one swizzle row
constexpr u32 WG = 128;            // threads in a warpgroup

// The dynamic shared memory, moved up to the next 1024-byte boundary: the 128B swizzle is a function
// of address bits 4-9, so a tile that starts on 1024 bytes is swizzled the way the descriptor says
// (base offset 0). The launch asks for 1024 bytes more than the kernel uses.
__device__ __forceinline__ u8* align_1024(u8* p) {
    return p + ((1024u - (smem_u32(p) & 1023u)) & 1023u);
}

// SM90 shared-memory matrix descriptor (PTX ISA 9.7.15.5.1.2.2) of a K-major bf16 tile with 128-byte
// rows written by TMA with 128B swizzle: start address >> 4 (bits 0-13), leading byte offset unused
// for swizzled K-major (1, bits 16-29), stride byte offset = 1024 bytes between 8-row groups (>> 4,
// bits 32-45), layout type 1 = 128B swizzle (bits 62-63). The k-th 16-element slice of a row is 32
// bytes further: its descriptor is this one with the start address + 2 (the hardware swizzles the
// address it computes, so the slices inside a swizzled row are found by plain addition).
__device__ __forceinline__ u64 desc_k128(u32 smem_addr) {
    return (u64((smem_addr & 0x3FFFF) >> 4)) | (1ull << 16) | (64ull << 32) | (1ull << 62);
}

// One wgmma.mma_async m64nNk16 bf16 -> f32 with both operands K-major in SMEM, accumulating.
template <int N> __device__ __forceinline__ void wgmma_bf16(float (&d)[N / 2], u64 a, u64 b);
template <> __device__ __forceinline__ void wgmma_bf16<128>(float (&d)[64], u64 a, u64 b) {
    wgmma_mma_async_m64n128k16_f32_bf16_bf16<0, 0>(d, a, b, 1u);
}
template <> __device__ __forceinline__ void wgmma_bf16<256>(float (&d)[128], u64 a, u64 b) {
    wgmma_mma_async_m64n256k16_f32_bf16_bf16<0, 0>(d, a, b, 1u);
}

// The four k16 steps of one stage for one 64-row slab of A against the N rows of B.
template <int N>
__device__ __forceinline__ void mma_stage(float (&d)[N / 2], u32 a_slab, u32 b_tile) {
#pragma unroll
    for (int k = 0; k < BK / 16; ++k)
        wgmma_bf16<N>(d, desc_k128(a_slab + 32 * k), desc_k128(b_tile + 32 * k));
}

template <int R>
__device__ __forceinline__ void zero(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) d[i] = 0.0f;
}

// A warpgroup's m64nN accumulator straight to C (bf16 pairs). Thread t of the warpgroup holds
// d[i] = D[16*(t/32) + (t%32)/4 + 8*((i/2)%2)][8*(i/4) + 2*(t%4) + i%2]: four threads share a row,
// so each store instruction of a warp writes 8 rows x 16 bytes.
template <int N>
__device__ __forceinline__ void store_rows(const float (&d)[N / 2], u16* C, int ldc, int row0, int col0) {
    const int t = threadIdx.x % WG, r = row0 + 16 * (t / 32) + (t % 32) / 4, c = col0 + 2 * (t % 4);
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
        *reinterpret_cast<u32*>(C + size_t(r) * ldc + c + 8 * j) = cvt_rn_bf16x2_f32(d[4 * j], d[4 * j + 1]);
        *reinterpret_cast<u32*>(C + size_t(r + 8) * ldc + c + 8 * j) = cvt_rn_bf16x2_f32(d[4 * j + 2], d[4 * j + 3]);
    }
}

// The grouped tile order of the persistent steps: consecutive tile indices walk GROUP_M tile rows
// down a column band before moving right, so the CTAs working at the same time share A and B tiles
// in L2. Returns (tile row, tile column).
template <int GROUP_M>
__device__ __forceinline__ int2 tile_of(int t, int tiles_m, int tiles_n) {
    const int per_group = GROUP_M * tiles_n, first_m = (t / per_group) * GROUP_M;
    const int rows = min(tiles_m - first_m, GROUP_M), in_group = t % per_group;
    return make_int2(first_m + in_group % rows, in_group / rows);
}

// Timeline stamps (compiled in with -DGEMM_STAMPS; the benchmark builds leave them out). CTA 0 only:
// stamps[track][event][begin/end][globaltimer ns, clock64] for up to EVENTS events per track.
// Tracks: 0 the TMA producer, 1 and 2 the consumer warpgroups (1 alone before warp specialisation),
// 3 the epilogue.
constexpr int TRACKS = 4, EVENTS = 512;
__device__ __forceinline__ void stamp(u64* stamps, int track, int event, int which) {
#ifdef GEMM_STAMPS
    if (stamps != nullptr && blockIdx.x == 0 && blockIdx.y == 0 && event < EVENTS) {
        u64* s = stamps + 2 * ((track * EVENTS + event) * 2 + which);
        s[0] = globaltimer_ns();
        s[1] = clock64();
    }
#endif
}

// Per-CTA stamps, after the per-track ones: stamps[TRACKS * EVENTS * 4 + CTA_WORDS * CTA + which] = %globaltimer
// (ns) for which = 0-3, for kernels whose every CTA marks a few moments of its own; at word 4 the SM it ran on
// (%smid, with which = 0), and at words 5 and 6 its clock64 at which = 0 and 3 (with the %globaltimer of those two
// moments, the pair that turns a stamp taken with clock64 into ns; the host sizes the buffer for the grid).
constexpr int CTA_WORDS = 8;
__device__ __forceinline__ void cta_stamp(u64* stamps, int which) {
#ifdef GEMM_STAMPS
    if (stamps != nullptr) {
        u64* s = stamps + TRACKS * EVENTS * 4 + CTA_WORDS * blockIdx.x;
        s[which] = globaltimer_ns();
        if (which == 0 || which == 3) s[which == 0 ? 5 : 6] = clock64();
        if (which == 0) {
            u32 sm;
            asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
            s[4] = sm;
        }
    }
#endif
}

}  // namespace ladder
