// bwlab PTX wrappers: thread block clusters (PTX ISA 10 "Special registers" %cluster_*,
// 9.7.13.4 barrier.cluster, 9.7.9.21 mapa). sm_90+.
#pragma once
#include "common.cuh"

// %cluster_ctarank: this CTA's rank in its cluster, 0 .. %cluster_nctarank-1.
__device__ __forceinline__ u32 cluster_ctarank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ u32 cluster_nctarank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(r));
    return r;
}

// %cluster_ctaid.{x,y,z}: this CTA's coordinate inside the cluster.
__device__ __forceinline__ uint3 cluster_ctaid() {
    uint3 c;
    asm volatile("mov.u32 %0, %%cluster_ctaid.x;" : "=r"(c.x));
    asm volatile("mov.u32 %0, %%cluster_ctaid.y;" : "=r"(c.y));
    asm volatile("mov.u32 %0, %%cluster_ctaid.z;" : "=r"(c.z));
    return c;
}

// barrier.cluster.arrive.release + barrier.cluster.wait.acquire: every thread of every CTA of
// the cluster meets here; SMEM writes before it are visible cluster-wide after it.
__device__ __forceinline__ void barrier_cluster_arrive_release() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void barrier_cluster_wait_acquire() {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void cluster_sync() {
    barrier_cluster_arrive_release();
    barrier_cluster_wait_acquire();
}

// mapa.shared::cluster: the shared::cluster address of the same variable in CTA `rank`.
__device__ __forceinline__ u32 mapa_shared_cluster(u32 smem_addr, u32 rank) {
    u32 r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem_addr), "r"(rank));
    return r;
}

// st.shared::cluster.v4.b32 (PTX ISA 9.7.9.10 "st"): 16 bytes into the SMEM of any CTA of the cluster,
// at a shared::cluster address (from mapa_shared_cluster): distributed shared memory. Visible to that
// CTA after a cluster barrier (barrier.cluster.arrive.release / wait.acquire).
__device__ __forceinline__ void st_shared_cluster_v4_b32(u32 cluster_addr, u32 a, u32 b, u32 c, u32 d) {
    asm volatile("st.shared::cluster.v4.b32 [%0], {%1, %2, %3, %4};"
                 ::"r"(cluster_addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}
