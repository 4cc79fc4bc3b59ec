// bwlab PTX wrappers: mbarrier (PTX ISA 9.7.13.15 "Parallel Synchronization and Communication
// Instructions: mbarrier"). A 64-bit object in SMEM holding a phase, a pending-arrival count and
// a transaction-byte count; the phase completes when both counts reach zero.
#pragma once
#include "common.cuh"
#include "cluster.cuh"

// mbarrier.init.shared::cta.b64: expected arrival count for every phase.
__device__ __forceinline__ void mbarrier_init(u64* bar, u32 arrival_count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(arrival_count)
                 : "memory");
}

// mbarrier.arrive.expect_tx.shared::cta.b64: arrive once and raise the transaction count by
// `tx_bytes`; the TMA engine's complete_tx brings it back down as bytes land.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(u64* bar, u32 tx_bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
                 "r"(tx_bytes)
                 : "memory");
}

// mbarrier.expect_tx.relaxed.cta: raise the transaction count without arriving.
__device__ __forceinline__ void mbarrier_expect_tx(u64* bar, u32 tx_bytes) {
    asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)),
                 "r"(tx_bytes)
                 : "memory");
}

// mbarrier.arrive.shared::cta.b64: a plain arrival.
__device__ __forceinline__ void mbarrier_arrive(u64* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_u32(bar)) : "memory");
}

// mbarrier.arrive.release.cluster.shared::cluster.b64: arrive on a barrier in another CTA of
// the cluster (address from mapa_shared_cluster).
__device__ __forceinline__ void mbarrier_arrive_cluster(u32 cluster_bar_addr) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(
                     cluster_bar_addr)
                 : "memory");
}

// mbarrier.arrive.shared::cluster.b64 with the default .release.cta semantics: the cheaper remote
// arrival CUTLASS's ClusterBarrier::arrive(cta_id) uses (a consumer releasing a producer's slot).
__device__ __forceinline__ void mbarrier_arrive_remote(u32 cluster_bar_addr) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(cluster_bar_addr) : "memory");
}

// mbarrier.try_wait.parity.shared::cta.b64: true once the phase with this parity has completed.
// try_wait may suspend the thread for a system-dependent time before returning false.
__device__ __forceinline__ bool mbarrier_try_wait_parity(u64* bar, u32 parity) {
    u32 done;
    asm volatile(
        "{\n\t.reg .pred P;\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 P, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, P;\n\t}"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
    return done != 0;
}

// Same wait with cluster-scope acquire: use it when the arrivals come from other CTAs.
__device__ __forceinline__ bool mbarrier_try_wait_parity_cluster(u64* bar, u32 parity) {
    u32 done;
    asm volatile(
        "{\n\t.reg .pred P;\n\t"
        "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 P, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, P;\n\t}"
        : "=r"(done)
        : "r"(smem_u32(bar)), "r"(parity)
        : "memory");
    return done != 0;
}

// A bounded wait. Never spin forever: after BW_WAIT_TIMEOUT_NS of %globaltimer the first thread
// to give up records (barrier_id, parity, expected_tx, who) in bw_status and every waiter
// returns false. The caller must then leave the kernel without touching the barrier again.
__device__ __noinline__ bool bw_record_timeout(u32 barrier_id, u32 parity, u32 expected_tx,
                                               u64 waited_ns) {
    if (atomicCAS(&bw_status.code, 0u, 1u) == 0u) {
        bw_status.barrier_id = barrier_id;
        bw_status.phase_parity = parity;
        bw_status.expected_tx = expected_tx;
        bw_status.block_x = blockIdx.x;
        bw_status.block_y = blockIdx.y;
        bw_status.block_z = blockIdx.z;
        bw_status.thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
        bw_status.cta_rank = cluster_ctarank();
        bw_status.waited_ns = waited_ns;
        __threadfence_system();
    }
    return false;
}

#ifndef BW_WAIT_POLL
#define BW_WAIT_POLL 0   // 0: timer and status read around every try; 1: only after a miss, every 32nd; 2: no limit (probe only)
#endif
template <bool ClusterScope = false>
__device__ __forceinline__ bool mbarrier_wait(u64* bar, u32 parity, u32 barrier_id,
                                              u32 expected_tx) {
#if BW_WAIT_POLL == 0
    const u64 start = globaltimer_ns();
    while (true) {
        const bool done = ClusterScope ? mbarrier_try_wait_parity_cluster(bar, parity)
                                       : mbarrier_try_wait_parity(bar, parity);
        if (done) return true;
        const u64 waited = globaltimer_ns() - start;
        if (waited > BW_WAIT_TIMEOUT_NS || *reinterpret_cast<volatile u32*>(&bw_status.code) != 0u)
            return bw_record_timeout(barrier_id, parity, expected_tx, waited);
    }
#else
    if (ClusterScope ? mbarrier_try_wait_parity_cluster(bar, parity) : mbarrier_try_wait_parity(bar, parity))
        return true;
#if BW_WAIT_POLL == 2
    while (!(ClusterScope ? mbarrier_try_wait_parity_cluster(bar, parity) : mbarrier_try_wait_parity(bar, parity))) {
    }
    return true;
#else
    const u64 start = globaltimer_ns();
    for (u32 n = 1;; ++n) {
        if (ClusterScope ? mbarrier_try_wait_parity_cluster(bar, parity) : mbarrier_try_wait_parity(bar, parity))
            return true;
        if ((n & 31u) == 0u) {
            const u64 waited = globaltimer_ns() - start;
            if (waited > BW_WAIT_TIMEOUT_NS || *reinterpret_cast<volatile u32*>(&bw_status.code) != 0u)
                return bw_record_timeout(barrier_id, parity, expected_tx, waited);
        }
    }
#endif
#endif
}
