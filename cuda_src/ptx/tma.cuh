// bwlab PTX wrappers: the Tensor Memory Accelerator (PTX ISA 9.7.9.25 "Data Movement and
// Conversion Instructions: cp.async.bulk.tensor", 9.7.9.24 cp.async.bulk, cp.reduce.async.bulk.tensor,
// cp.async.bulk.prefetch.tensor, cp.async.bulk.commit_group / wait_group). sm_90+.
//
// `tmap` is the generic address of a 128-byte CUtensorMap: a __grid_constant__ kernel parameter,
// or a copy in global memory. Coordinates are in elements, innermost first (c0 is the contiguous dim).
#pragma once
#include "common.cuh"

// The 128-byte, 64-byte-aligned tensor map as a kernel parameter type (the host passes the bytes
// cuTensorMapEncodeTiled produced). Declare the parameter `const __grid_constant__ TmaDescriptor`.
struct alignas(64) TmaDescriptor {
    u64 v[16];
};

// prefetch.tensormap: pull the descriptor itself into the cache ahead of the first copy.
__device__ __forceinline__ void prefetch_tensormap(const void* tmap) {
    asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(tmap)) : "memory");
}

// Non-tensor bulk copy GMEM -> SMEM (cp.async.bulk, 16-byte aligned, size a multiple of 16).
__device__ __forceinline__ void bulk_load(void* smem_dst, const void* gmem_src, u32 bytes, u64* bar) {
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
        ::"r"(smem_u32(smem_dst)), "l"(reinterpret_cast<u64>(gmem_src)), "r"(bytes), "r"(smem_u32(bar))
        : "memory");
}

// Non-tensor bulk copy SMEM -> GMEM, completed through a bulk async-group.
__device__ __forceinline__ void bulk_store(void* gmem_dst, const void* smem_src, u32 bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                 ::"l"(reinterpret_cast<u64>(gmem_dst)), "r"(smem_u32(smem_src)), "r"(bytes)
                 : "memory");
}

// cp.async.bulk.commit_group: close the group of bulk stores issued so far by this thread.
__device__ __forceinline__ void bulk_commit_group() {
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// cp.async.bulk.wait_group.read N: at most N groups still READING their SMEM source
// (the SMEM may be reused; the GMEM writes need not be visible yet).
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// cp.async.bulk.wait_group N: at most N groups pending at all (writes complete).
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
    asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

// ---- 1D ------------------------------------------------------------------------------------
// TMA load: box at (c0) -> SMEM, bytes reported to `bar` via complete_tx.
__device__ __forceinline__ void tma_load_1d(void* smem_dst, const void* tmap, u64* bar, int c0) {
    asm volatile(
        "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3}], [%2];"
        ::"r"(smem_u32(smem_dst)), "l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(bar)), "r"(c0)
        : "memory");
}

// TMA load multicast: the same box lands at the same SMEM offset (and complete_tx hits the
// same-offset mbarrier) in every CTA whose rank bit is set in `cta_mask`.
__device__ __forceinline__ void tma_load_multicast_1d(void* smem_dst, const void* tmap, u64* bar,
                                                       u16 cta_mask, int c0) {
    asm volatile(
        "cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%4}], [%2], %3;"
        ::"r"(smem_u32(smem_dst)), "l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0)
        : "memory");
}

// TMA prefetch of a box into L2 (no SMEM, no mbarrier).
__device__ __forceinline__ void tma_prefetch_1d(const void* tmap, int c0) {
    asm volatile("cp.async.bulk.prefetch.tensor.1d.L2.global [%0, {%1}];"
                 ::"l"(reinterpret_cast<u64>(tmap)), "r"(c0)
                 : "memory");
}

// TMA store: SMEM box -> GMEM at (c0). At the tensor's far edges the store does not stop at the
// last element: dimension 0 is written in whole 16-byte granules, so row padding that shares the
// granule of a row's last element is overwritten with the box's bytes (seen on the H100); rows and
// planes past the edge are skipped. The box starts at non-negative coordinates, c0 on a 16-byte
// boundary; the SMEM source is 128-byte aligned (bwlab.epilogue STORE_RULES).
__device__ __forceinline__ void tma_store_1d(const void* tmap, const void* smem_src, int c0) {
    asm volatile("cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%2}], [%1];"
                 ::"l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(smem_src)), "r"(c0)
                 : "memory");
}

// TMA reduce-add: GMEM[box] += SMEM box, element-wise, performed at L2; it covers what the store
// covers (the 16-byte granules of dimension 0 included).
__device__ __forceinline__ void tma_reduce_add_1d(const void* tmap, const void* smem_src, int c0) {
    asm volatile(
        "cp.reduce.async.bulk.tensor.1d.global.shared::cta.add.tile.bulk_group [%0, {%2}], [%1];"
        ::"l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(smem_src)), "r"(c0)
        : "memory");
}

// ---- 2D ------------------------------------------------------------------------------------
// TMA load: box at (c0, c1) -> SMEM, bytes reported to `bar` via complete_tx.
__device__ __forceinline__ void tma_load_2d(void* smem_dst, const void* tmap, u64* bar, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];"
        ::"r"(smem_u32(smem_dst)), "l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(bar)), "r"(c0), "r"(c1)
        : "memory");
}

// TMA load multicast: the same box lands at the same SMEM offset (and complete_tx hits the
// same-offset mbarrier) in every CTA whose rank bit is set in `cta_mask`.
__device__ __forceinline__ void tma_load_multicast_2d(void* smem_dst, const void* tmap, u64* bar,
                                                       u16 cta_mask, int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%4, %5}], [%2], %3;"
        ::"r"(smem_u32(smem_dst)), "l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1)
        : "memory");
}

// TMA prefetch of a box into L2 (no SMEM, no mbarrier).
__device__ __forceinline__ void tma_prefetch_2d(const void* tmap, int c0, int c1) {
    asm volatile("cp.async.bulk.prefetch.tensor.2d.L2.global [%0, {%1, %2}];"
                 ::"l"(reinterpret_cast<u64>(tmap)), "r"(c0), "r"(c1)
                 : "memory");
}

// TMA store: SMEM box -> GMEM at (c0, c1); past the far edges only the padding sharing a row's
// last 16-byte granule is written (see tma_store_1d).
__device__ __forceinline__ void tma_store_2d(const void* tmap, const void* smem_src, int c0, int c1) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 ::"l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(smem_src)), "r"(c0), "r"(c1)
                 : "memory");
}

// TMA reduce-add: GMEM[box] += SMEM box, element-wise, performed at L2; it covers what the store
// covers (the 16-byte granules of dimension 0 included).
__device__ __forceinline__ void tma_reduce_add_2d(const void* tmap, const void* smem_src, int c0, int c1) {
    asm volatile(
        "cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3}], [%1];"
        ::"l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(smem_src)), "r"(c0), "r"(c1)
        : "memory");
}

// ---- 3D ------------------------------------------------------------------------------------
// TMA load: box at (c0, c1, c2) -> SMEM, bytes reported to `bar` via complete_tx.
__device__ __forceinline__ void tma_load_3d(void* smem_dst, const void* tmap, u64* bar, int c0, int c1, int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5}], [%2];"
        ::"r"(smem_u32(smem_dst)), "l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
}

// TMA load multicast: the same box lands at the same SMEM offset (and complete_tx hits the
// same-offset mbarrier) in every CTA whose rank bit is set in `cta_mask`.
__device__ __forceinline__ void tma_load_multicast_3d(void* smem_dst, const void* tmap, u64* bar,
                                                       u16 cta_mask, int c0, int c1, int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%4, %5, %6}], [%2], %3;"
        ::"r"(smem_u32(smem_dst)), "l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
}

// TMA prefetch of a box into L2 (no SMEM, no mbarrier).
__device__ __forceinline__ void tma_prefetch_3d(const void* tmap, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global [%0, {%1, %2, %3}];"
                 ::"l"(reinterpret_cast<u64>(tmap)), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}

// TMA store: SMEM box -> GMEM at (c0, c1, c2); past the far edges only the padding sharing a row's
// last 16-byte granule is written (see tma_store_1d).
__device__ __forceinline__ void tma_store_3d(const void* tmap, const void* smem_src, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];"
                 ::"l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(smem_src)), "r"(c0), "r"(c1), "r"(c2)
                 : "memory");
}

// TMA reduce-add: GMEM[box] += SMEM box, element-wise, performed at L2; it covers what the store
// covers (the 16-byte granules of dimension 0 included).
__device__ __forceinline__ void tma_reduce_add_3d(const void* tmap, const void* smem_src, int c0, int c1, int c2) {
    asm volatile(
        "cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4}], [%1];"
        ::"l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(smem_src)), "r"(c0), "r"(c1), "r"(c2)
        : "memory");
}

// ---- 4D ------------------------------------------------------------------------------------
// TMA load: box at (c0, c1, c2, c3) -> SMEM, bytes reported to `bar` via complete_tx.
__device__ __forceinline__ void tma_load_4d(void* smem_dst, const void* tmap, u64* bar, int c0, int c1, int c2, int c3) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5, %6}], [%2];"
        ::"r"(smem_u32(smem_dst)), "l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
        : "memory");
}

// TMA load multicast: the same box lands at the same SMEM offset (and complete_tx hits the
// same-offset mbarrier) in every CTA whose rank bit is set in `cta_mask`.
__device__ __forceinline__ void tma_load_multicast_4d(void* smem_dst, const void* tmap, u64* bar,
                                                       u16 cta_mask, int c0, int c1, int c2, int c3) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%4, %5, %6, %7}], [%2], %3;"
        ::"r"(smem_u32(smem_dst)), "l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
        : "memory");
}

// TMA prefetch of a box into L2 (no SMEM, no mbarrier).
__device__ __forceinline__ void tma_prefetch_4d(const void* tmap, int c0, int c1, int c2, int c3) {
    asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global [%0, {%1, %2, %3, %4}];"
                 ::"l"(reinterpret_cast<u64>(tmap)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
                 : "memory");
}

// TMA store: SMEM box -> GMEM at (c0, c1, c2, c3); past the far edges only the padding sharing a row's
// last 16-byte granule is written (see tma_store_1d).
__device__ __forceinline__ void tma_store_4d(const void* tmap, const void* smem_src, int c0, int c1, int c2, int c3) {
    asm volatile("cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
                 ::"l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(smem_src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
                 : "memory");
}

// TMA reduce-add: GMEM[box] += SMEM box, element-wise, performed at L2; it covers what the store
// covers (the 16-byte granules of dimension 0 included).
__device__ __forceinline__ void tma_reduce_add_4d(const void* tmap, const void* smem_src, int c0, int c1, int c2, int c3) {
    asm volatile(
        "cp.reduce.async.bulk.tensor.4d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];"
        ::"l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(smem_src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
        : "memory");
}

// ---- 5D ------------------------------------------------------------------------------------
// TMA load: box at (c0, c1, c2, c3, c4) -> SMEM, bytes reported to `bar` via complete_tx.
__device__ __forceinline__ void tma_load_5d(void* smem_dst, const void* tmap, u64* bar, int c0, int c1, int c2, int c3, int c4) {
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4, %5, %6, %7}], [%2];"
        ::"r"(smem_u32(smem_dst)), "l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
        : "memory");
}

// TMA load multicast: the same box lands at the same SMEM offset (and complete_tx hits the
// same-offset mbarrier) in every CTA whose rank bit is set in `cta_mask`.
__device__ __forceinline__ void tma_load_multicast_5d(void* smem_dst, const void* tmap, u64* bar,
                                                       u16 cta_mask, int c0, int c1, int c2, int c3, int c4) {
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
        " [%0], [%1, {%4, %5, %6, %7, %8}], [%2], %3;"
        ::"r"(smem_u32(smem_dst)), "l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(bar)), "h"(cta_mask), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
        : "memory");
}

// TMA prefetch of a box into L2 (no SMEM, no mbarrier).
__device__ __forceinline__ void tma_prefetch_5d(const void* tmap, int c0, int c1, int c2, int c3, int c4) {
    asm volatile("cp.async.bulk.prefetch.tensor.5d.L2.global [%0, {%1, %2, %3, %4, %5}];"
                 ::"l"(reinterpret_cast<u64>(tmap)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
                 : "memory");
}

// TMA store: SMEM box -> GMEM at (c0, c1, c2, c3, c4); past the far edges only the padding sharing a row's
// last 16-byte granule is written (see tma_store_1d).
__device__ __forceinline__ void tma_store_5d(const void* tmap, const void* smem_src, int c0, int c1, int c2, int c3, int c4) {
    asm volatile("cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
                 ::"l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(smem_src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
                 : "memory");
}

// TMA reduce-add: GMEM[box] += SMEM box, element-wise, performed at L2; it covers what the store
// covers (the 16-byte granules of dimension 0 included).
__device__ __forceinline__ void tma_reduce_add_5d(const void* tmap, const void* smem_src, int c0, int c1, int c2, int c3, int c4) {
    asm volatile(
        "cp.reduce.async.bulk.tensor.5d.global.shared::cta.add.tile.bulk_group [%0, {%2, %3, %4, %5, %6}], [%1];"
        ::"l"(reinterpret_cast<u64>(tmap)), "r"(smem_u32(smem_src)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4)
        : "memory");
}

// ---- CTA pair (sm_100a) ----------------------------------------------------------------------
// TMA load of a tcgen05.mma.cta_group::2 pair (cp.async.bulk.tensor .cta_group::2, PTX ISA 9.7.9.25):
// the box lands in this CTA's SMEM, but complete_tx goes to the mbarrier at `bar_cluster_addr`, a
// shared::cluster address (mapa_shared_cluster) in this CTA or its peer. Both CTAs of the pair report
// their bytes to the one barrier the MMA-issuing CTA waits on (CuTe SM100_TMA_2SM_LOAD_2D).
__device__ __forceinline__ void tma_load_2d_cta_group2(void* smem_dst, const void* tmap, u32 bar_cluster_addr,
                                                       int c0, int c1) {
    asm volatile(
        "cp.async.bulk.tensor.2d.cta_group::2.shared::cluster.global.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%3, %4}], [%2];"
        ::"r"(smem_u32(smem_dst)), "l"(reinterpret_cast<u64>(tmap)), "r"(bar_cluster_addr), "r"(c0), "r"(c1)
        : "memory");
}
