// bwlab PTX wrappers: tcgen05 (PTX ISA 9.7.16 "TensorCore 5th Generation Family Instructions").
// sm_100a / sm_103a / sm_110a only (the PTX ISA's targets for tcgen05). Tensor Memory (TMEM): 128 lanes
// x 512 columns x 32 bit per SM; a TMEM address holds the lane in bits 31-16 and the column in bits 15-0.
#pragma once
#include "common.cuh"
#include "mbarrier.cuh"

// tcgen05.alloc: one whole warp allocates `ncols` columns (a power of two in [32, 512], never more than
// the CTA's previous allocation) and the TMEM address is written to SMEM at `smem_dst`.
__device__ __forceinline__ void tcgen05_alloc(u32* smem_dst, u32 ncols) {
    asm volatile("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%0], %1;"
                 ::"r"(smem_u32(smem_dst)), "r"(ncols) : "memory");
}
__device__ __forceinline__ void tcgen05_alloc_cta_group2(u32* smem_dst, u32 ncols) {
    asm volatile("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%0], %1;"
                 ::"r"(smem_u32(smem_dst)), "r"(ncols) : "memory");
}

// tcgen05.dealloc: one warp of the CTA frees an earlier allocation (bwlab frees from the warp that
// allocated, which both the PTX ISA and CuTe's allocator accept).
__device__ __forceinline__ void tcgen05_dealloc(u32 taddr, u32 ncols) {
    asm volatile("tcgen05.dealloc.cta_group::1.sync.aligned.b32 %0, %1;" ::"r"(taddr), "r"(ncols)
                 : "memory");
}
__device__ __forceinline__ void tcgen05_dealloc_cta_group2(u32 taddr, u32 ncols) {
    asm volatile("tcgen05.dealloc.cta_group::2.sync.aligned.b32 %0, %1;" ::"r"(taddr), "r"(ncols)
                 : "memory");
}

// tcgen05.relinquish_alloc_permit: the CTA gives up its right to allocate TMEM (a later tcgen05.alloc
// of this CTA is illegal).
__device__ __forceinline__ void tcgen05_relinquish_alloc_permit() {
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::1.sync.aligned;" ::: "memory");
}
// The CTA pair's form (a kernel uses one .cta_group in every tcgen05 instruction; PTX ISA tcgen05.alloc).
__device__ __forceinline__ void tcgen05_relinquish_alloc_permit_cta_group2() {
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;" ::: "memory");
}

// tcgen05.mma.cta_group::1.kind::f16: D[tmem] (+)= A[smem desc] * B[smem desc]. Issued by ONE
// thread; asynchronous. Types, shape and majors are in the 32-bit instruction descriptor
// `idesc`; accumulate = 0 overwrites D (first K step), 1 accumulates.
__device__ __forceinline__ void tcgen05_mma_f16_ss(u32 d_tmem, u64 a_desc, u64 b_desc, u32 idesc,
                                                   u32 accumulate) {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "setp.ne.b32 p, %4, 0;\n\t"
        "tcgen05.mma.cta_group::1.kind::f16 [%0], %1, %2, %3, p;\n\t}"
        ::"r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate)
        : "memory");
}
__device__ __forceinline__ void tcgen05_mma_tf32_ss(u32 d_tmem, u64 a_desc, u64 b_desc, u32 idesc,
                                                    u32 accumulate) {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "setp.ne.b32 p, %4, 0;\n\t"
        "tcgen05.mma.cta_group::1.kind::tf32 [%0], %1, %2, %3, p;\n\t}"
        ::"r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate)
        : "memory");
}
// cta_group::2: one thread of the CTA pair issues for both CTAs (PTX ISA); CUTLASS issues from the
// even CTA of the pair, a convention, not a rule. M spans the pair.
__device__ __forceinline__ void tcgen05_mma_f16_ss_cta_group2(u32 d_tmem, u64 a_desc, u64 b_desc,
                                                              u32 idesc, u32 accumulate) {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "setp.ne.b32 p, %4, 0;\n\t"
        "tcgen05.mma.cta_group::2.kind::f16 [%0], %1, %2, %3, p;\n\t}"
        ::"r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(accumulate)
        : "memory");
}

// tcgen05.commit: the mbarrier receives one arrival when every tcgen05 operation this thread
// issued before it has completed. This is how a CTA learns that the MMA has finished.
__device__ __forceinline__ void tcgen05_commit(u64* bar) {
    asm volatile("tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%0];"
                 ::"r"(smem_u32(bar)) : "memory");
}
// Multicast commit: the same-offset mbarrier in every CTA of `cta_mask` receives the arrival.
__device__ __forceinline__ void tcgen05_commit_multicast_cta_group2(u64* bar, u16 cta_mask) {
    asm volatile(
        "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [%0], %1;"
        ::"r"(smem_u32(bar)), "h"(cta_mask) : "memory");
}

// tcgen05.fence::before_thread_sync / after_thread_sync: order tcgen05 operations against
// thread synchronisation (mbarrier wait, __syncthreads, cluster barrier).
__device__ __forceinline__ void tcgen05_fence_before_thread_sync() {
    asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}
__device__ __forceinline__ void tcgen05_fence_after_thread_sync() {
    asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}

// tcgen05.wait::ld / wait::st: the registers of earlier tcgen05.ld are ready / earlier
// tcgen05.st have finished writing TMEM.
__device__ __forceinline__ void tcgen05_wait_ld() {
    asm volatile("tcgen05.wait::ld.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void tcgen05_wait_st() {
    asm volatile("tcgen05.wait::st.sync.aligned;" ::: "memory");
}

// tcgen05.cp.cta_group::1.128x256b: copy a 128-row x 256-bit block from SMEM (described by a
// 64-bit SMEM matrix descriptor) into TMEM at `taddr`.
__device__ __forceinline__ void tcgen05_cp_128x256b(u32 taddr, u64 s_desc) {
    asm volatile("tcgen05.cp.cta_group::1.128x256b [%0], %1;" ::"r"(taddr), "l"(s_desc) : "memory");
}

// tcgen05.cp.cta_group::1.32x128b.warpx4: 32 rows x 128 bits from SMEM, each row written to the same lane of
// all four lane quarters (lanes r, 32 + r, 64 + r, 96 + r), 4 columns from `taddr`. With CUTLASS's 512-byte
// scale-factor atom this leaves row m's 4 scales at lane m % 32 (every quarter), column m / 32: where a
// block-scaled tcgen05.mma reads them.
__device__ __forceinline__ void tcgen05_cp_32x128b_warpx4(u32 taddr, u64 s_desc) {
    asm volatile("tcgen05.cp.cta_group::1.32x128b.warpx4 [%0], %1;" ::"r"(taddr), "l"(s_desc) : "memory");
}

// Block-scaled tcgen05.mma.cta_group::1: D[tmem] (+)= (A * scale_A) * (B * scale_B)^T, the scale factors read
// from TMEM at scale_a / scale_b. The instruction descriptor carries the scale type (bit 23) and which byte of
// each TMEM word holds this instruction's scales (scale factor A ID bits 29-30, B ID bits 4-5).
#define BW_TCGEN05_MMA_BLOCK_SCALED(NAME, FORM)                                                              \
    __device__ __forceinline__ void NAME(u32 d_tmem, u64 a_desc, u64 b_desc, u32 idesc, u32 scale_a,       \
                                         u32 scale_b, u32 accumulate) {                                     \
        asm volatile(                                                                                       \
            "{\n\t.reg .pred p;\n\t"                                                                        \
            "setp.ne.b32 p, %6, 0;\n\t"                                                                     \
            "tcgen05.mma.cta_group::1." FORM " [%0], %1, %2, %3, [%4], [%5], p;\n\t}"                         \
            ::"r"(d_tmem), "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(scale_a), "r"(scale_b), "r"(accumulate)  \
            : "memory");                                                                                    \
    }
// MXFP8 (and MXFP6 / MXFP4 in 8-bit containers): one ue8m0 scale per 32 elements of K, K = 32.
BW_TCGEN05_MMA_BLOCK_SCALED(tcgen05_mma_mxf8f6f4_block32, "kind::mxf8f6f4.block_scale.scale_vec::1X")
// MXFP4 (dense e2m1): one ue8m0 scale per 32 elements, K = 64.
BW_TCGEN05_MMA_BLOCK_SCALED(tcgen05_mma_mxf4_block32, "kind::mxf4.block_scale.scale_vec::2X")
// NVFP4 (dense e2m1): one ue4m3 (or ue8m0) scale per 16 elements, K = 64.
BW_TCGEN05_MMA_BLOCK_SCALED(tcgen05_mma_mxf4nvf4_block16, "kind::mxf4nvf4.block_scale.scale_vec::4X")

#ifndef BW_DRAIN_TIMEOUT_NS
// Budget of tcgen05_wait_drained, in nanoseconds of %globaltimer (default 200 ms).
#define BW_DRAIN_TIMEOUT_NS 200000000ull
#endif

// Before TMEM is freed, every MMA that writes it must have completed; and it must be freed on every
// path, the timeout path included (PTX ISA tcgen05.alloc: all TMEM allocated must be deallocated
// before the kernel exits; a CTA that exits holding it leaves the next CTA on the SM blocked in
// tcgen05.alloc forever). `drained` is a barrier that a tcgen05.commit issued after the last MMA
// arrives on; the warp that frees TMEM waits for that phase here. Unlike mbarrier_wait this wait ignores
// bw_status (on the abort path another wait has already given up: this is when it matters) and records
// nothing. If its own budget runs out the columns are freed anyway: a launch already reported as failed
// may then hold wrong numbers, but no later launch hangs. Returns whether the MMAs were seen complete.
template <bool ClusterScope = false>
__device__ __forceinline__ bool tcgen05_wait_drained(u64* drained, u32 parity) {
    const u64 start = globaltimer_ns();
    while (!(ClusterScope ? mbarrier_try_wait_parity_cluster(drained, parity)
                          : mbarrier_try_wait_parity(drained, parity)))
        if (globaltimer_ns() - start > BW_DRAIN_TIMEOUT_NS) return false;
    return true;
}

// tcgen05.ld / tcgen05.st (every shape, .num and pack): tcgen05_ldst.cuh, generated from bwlab.
