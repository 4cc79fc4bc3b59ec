// bwlab GEMM ladder, Blackwell (sm_100a): what every step of cuda_src/gemm_sm100/ shares.
//
// The problem of every step: C[M x N] = A[M x K] * B[N x K]^T, bf16 in, f32 accumulation in Tensor
// Memory, bf16 out, all three row-major (A and B are K-major: K is the contiguous dimension). The
// tensor maps come from Python (bwlab/gemm/sm100.py, `tensor_maps`): A and B with boxes of 64 (K) x
// rows and the 128B swizzle, so one box row is one 128-byte swizzle row; C (the TMA-store step) with
// boxes of 64 x 32 and the 128B swizzle.
//
// The timeline. `stamps` may be null; otherwise CTA 0 (the pair's even CTA in the cluster steps)
// writes %globaltimer nanoseconds at
//     stamps[(track * STAMP_SPANS + span) * 2 + edge]
// track  0 the TMA producer, 1 the MMA issuer, 2 + q the epilogue warp of TMEM lane quarter q;
// span   the track's span-th piece of work: a k-block (the producer's and the MMA issuer's count runs
//        on across tiles in the persistent steps), a tile for the epilogue warps; STAMP_SPANS at most;
// edge   0 when it starts waiting for what it needs, 1 when its work has been issued.
// The host fills the buffer with zeros: 0 = not reached. Python names them: STAMP_TRACKS, STAMP_SPANS.
#pragma once
#include "ptx.cuh"

namespace ladder100 {

constexpr u32 BK = 64;      // K per stage: 64 bf16 = 128 bytes = one 128B-swizzle row of a box
constexpr u32 UMMA_K = 16;  // K of one tcgen05.mma .kind::f16 (32 bytes of each row)

// Barrier ids of the bounded waits (bwlab/gemm/sm100.py GEMM_BARRIERS names them). A wait that gives
// up records the id in bwlab's status record and writes 1 + id to `error` (the first one wins).
enum : u32 { BAR_FULL = 0, BAR_EMPTY = 1, BAR_MMA_DONE = 2, BAR_TMEM_FULL = 3, BAR_TMEM_EMPTY = 4 };

template <bool ClusterScope = false>
__device__ __forceinline__ bool wait(u64* bar, u32 parity, u32 id, u32 expected_tx, unsigned* error) {
    if (mbarrier_wait<ClusterScope>(bar, parity, id, expected_tx)) return true;
    if (error != nullptr) atomicCAS(error, 0u, 1u + id);
    return false;
}

// The 128B swizzle is a function of address bits 4-9: a tile that starts on a 1024-byte boundary is
// swizzled the way its descriptor says (base offset 0). The launch asks for 1024 bytes more.
__device__ __forceinline__ u8* align_1024(u8* p) {
    return p + ((1024u - (smem_u32(p) & 1023u)) & 1023u);
}

// A tcgen05 SMEM matrix descriptor: the step's DESC_HI (every field but the start address: LBO,
// SBO, version, base offset, swizzle) with the start address >> 4 in bits 0-13. The k-th K = 16
// slice of a 128-byte swizzled row starts 32 bytes further on; the tensor core swizzles the address
// it computes, so plain addition finds it (bwlab.umma.smem_desc_for_tile encodes the same).
__device__ __forceinline__ u64 smem_desc(u64 desc_hi, u32 smem_addr) {
    return desc_hi | ((smem_addr >> 4) & 0x3FFFu);
}

constexpr u32 STAMP_TRACKS = 6, STAMP_SPANS = 256;
constexpr u32 TRACK_TMA = 0, TRACK_MMA = 1, TRACK_EPILOGUE = 2;
__device__ __forceinline__ void stamp(u64* stamps, u32 track, u32 span, u32 edge) {
    if (stamps != nullptr && span < STAMP_SPANS) stamps[(track * STAMP_SPANS + span) * 2 + edge] = globaltimer_ns();
}

// cvt.rn.bf16x2.f32 on two accumulator words (f32 bits as tcgen05.ld returns them).
__device__ __forceinline__ u32 bf16x2(u32 lo, u32 hi) {
    return cvt_rn_bf16x2_f32(__uint_as_float(lo), __uint_as_float(hi));
}

// One warp's 32 rows of an f32 accumulator straight to C. `taddr` is the warp's TMEM lane quarter
// at the tile's first column: tcgen05.ld.32x32b.x<LD_COLS> gives thread t the row in lane t,
// register j column j; pairs are rounded to bf16 and each thread stores its own row, 16 bytes at a
// time (`c_row` points at the row's first column of the tile in C).
template <u32 BN, u32 LD_COLS>
__device__ __forceinline__ void tmem_rows_to_gmem(u32 taddr, u16* c_row) {
#pragma unroll 1
    for (u32 c = 0; c < BN; c += LD_COLS) {
        u32 r[LD_COLS];
        tcgen05_ld_32x32b<int(LD_COLS)>(r, taddr + c);
        tcgen05_wait_ld();  // the registers are valid only now
        uint4* dst = reinterpret_cast<uint4*>(c_row + c);
#pragma unroll
        for (u32 q = 0; q < LD_COLS / 8; ++q)
            dst[q] = make_uint4(bf16x2(r[8 * q], r[8 * q + 1]), bf16x2(r[8 * q + 2], r[8 * q + 3]),
                                bf16x2(r[8 * q + 4], r[8 * q + 5]), bf16x2(r[8 * q + 6], r[8 * q + 7]));
    }
}

// The tile order of the persistent steps (their tile scheduler): tile index t walks GROUP_M tile
// rows down one column of tiles before moving one column right, so the tiles the CTAs work on at the
// same time share rows of A and columns of B in L2. Returns (tile row, tile column).
template <u32 GROUP_M>
__device__ __forceinline__ uint2 tile_of(u32 t, u32 tiles_m, u32 tiles_n) {
    const u32 group = t / (GROUP_M * tiles_n), first = group * GROUP_M;
    const u32 rows = min(GROUP_M, tiles_m - first), in_group = t - group * GROUP_M * tiles_n;
    return make_uint2(first + in_group % rows, in_group / rows);
}

// The end of a CTA pair (the cluster steps): every thread of both CTAs calls it before the MMA warps free
// TMEM together (tcgen05.dealloc.cta_group::2 is collective). The cluster barrier keeps each CTA's shared
// memory and barriers alive until both CTAs are done with the pair's work; the tcgen05 fences order every
// warp's TMEM reads before the barrier and the dealloc after it.
__device__ __forceinline__ void pair_sync() {
    tcgen05_fence_before_thread_sync();
    cluster_sync();
    tcgen05_fence_after_thread_sync();
}

}  // namespace ladder100
