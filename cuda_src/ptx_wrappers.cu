// bwlab-targets: sm_90a sm_100a
// Calls every wrapper in ptx.cuh once, so that ptxas checks each PTX string for every target
// (tests/test_compile.py). Not meant to be launched: the operands are placeholders.
#include "ptx.cuh"

extern "C" __global__ void __cluster_dims__(2, 1, 1)
wrappers_sm90(const __grid_constant__ TmaDescriptor tmap, u32* out, const u32* in) {
    __shared__ alignas(1024) u8 smem[1024];
    __shared__ alignas(8) u64 bar;
    u32 acc = 0;
    if (elect_one_sync()) acc += 1;
    acc += laneid() + warpid_in_cta() + cluster_ctarank() + cluster_nctarank() + cluster_ctaid().x;
    mbarrier_init(&bar, 1);
    fence_mbarrier_init_release_cluster();
    cluster_sync();
    prefetch_tensormap(&tmap);
    mbarrier_expect_tx(&bar, 16);
    mbarrier_arrive_expect_tx(&bar, 16);
    bulk_load(smem, in, 16, &bar);
    tma_load_1d(smem, &tmap, &bar, 0);
    tma_load_2d(smem, &tmap, &bar, 0, 1);
    tma_load_3d(smem, &tmap, &bar, 0, 1, 2);
    tma_load_4d(smem, &tmap, &bar, 0, 1, 2, 3);
    tma_load_5d(smem, &tmap, &bar, 0, 1, 2, 3, 4);
    tma_load_multicast_1d(smem, &tmap, &bar, 0x3, 0);
    tma_load_multicast_2d(smem, &tmap, &bar, 0x3, 0, 1);
    tma_load_multicast_3d(smem, &tmap, &bar, 0x3, 0, 1, 2);
    tma_load_multicast_4d(smem, &tmap, &bar, 0x3, 0, 1, 2, 3);
    tma_load_multicast_5d(smem, &tmap, &bar, 0x3, 0, 1, 2, 3, 4);
    tma_prefetch_1d(&tmap, 0);
    tma_prefetch_2d(&tmap, 0, 1);
    tma_prefetch_3d(&tmap, 0, 1, 2);
    tma_prefetch_4d(&tmap, 0, 1, 2, 3);
    tma_prefetch_5d(&tmap, 0, 1, 2, 3, 4);
    mbarrier_arrive(&bar);
    mbarrier_arrive_cluster(mapa_shared_cluster(smem_u32(&bar), 1));
    mbarrier_arrive_remote(mapa_shared_cluster(smem_u32(&bar), 1));
    if (!mbarrier_wait(&bar, 0, 0, 16)) return;
    if (!mbarrier_wait<true>(&bar, 1, 1, 16)) return;
    fence_proxy_async_shared_cta();
    fence_proxy_async_global();
    tma_store_1d(&tmap, smem, 0);
    tma_store_2d(&tmap, smem, 0, 1);
    tma_store_3d(&tmap, smem, 0, 1, 2);
    tma_store_4d(&tmap, smem, 0, 1, 2, 3);
    tma_store_5d(&tmap, smem, 0, 1, 2, 3, 4);
    tma_reduce_add_1d(&tmap, smem, 0);
    tma_reduce_add_2d(&tmap, smem, 0, 1);
    tma_reduce_add_3d(&tmap, smem, 0, 1, 2);
    tma_reduce_add_4d(&tmap, smem, 0, 1, 2, 3);
    tma_reduce_add_5d(&tmap, smem, 0, 1, 2, 3, 4);
    bulk_store(out, smem, 16);
    bulk_commit_group();
    bulk_wait_group_read<0>();
    bulk_wait_group<0>();
    out[threadIdx.x] = acc + static_cast<u32>(globaltimer_ns());
}

#if defined(__CUDA_ARCH_FEAT_SM100_ALL) || defined(__CUDA_ARCH_FEAT_SM101_ALL) || \
    defined(__CUDA_ARCH_FEAT_SM103_ALL) || !defined(__CUDA_ARCH__)
extern "C" __global__ void __cluster_dims__(2, 1, 1) wrappers_sm100(u32* out, u64 adesc, u64 bdesc, u32 idesc) {
    __shared__ alignas(16) u32 taddr_slot;
    __shared__ alignas(8) u64 bar;
    tcgen05_alloc(&taddr_slot, 32);
    tcgen05_relinquish_alloc_permit();
    u32 taddr = taddr_slot;
    tcgen05_mma_f16_ss(taddr, adesc, bdesc, idesc, 0);
    tcgen05_mma_tf32_ss(taddr, adesc, bdesc, idesc, 1);
    tcgen05_commit(&bar);
    tcgen05_fence_before_thread_sync();
    tcgen05_fence_after_thread_sync();
    tcgen05_cp_128x256b(taddr, adesc);
    u32 s = 0;
#define BW_LDST(N)                              \
    {                                           \
        u32 r[N];                               \
        tcgen05_ld_32x32b_x##N(r, taddr);       \
        tcgen05_wait_ld();                      \
        for (int i = 0; i < N; ++i) s += r[i];  \
        tcgen05_st_32x32b_x##N(taddr, r);       \
        tcgen05_wait_st();                      \
    }
    BW_LDST(1) BW_LDST(2) BW_LDST(4) BW_LDST(8) BW_LDST(16) BW_LDST(32) BW_LDST(64) BW_LDST(128)
#undef BW_LDST
    out[threadIdx.x] = s;
    tcgen05_dealloc(taddr, 32);
}

// CUDA 13's ptxas refuses a kernel that mixes .cta_group::1 and .cta_group::2 (12.9 accepted it),
// so the CTA-pair wrappers get a kernel of their own.
extern "C" __global__ void __cluster_dims__(2, 1, 1) wrappers_sm100_pair(const __grid_constant__ TmaDescriptor tmap,
                                                                          u32* out, u64 adesc, u64 bdesc, u32 idesc) {
    __shared__ alignas(1024) u8 smem[1024];
    __shared__ alignas(16) u32 taddr_slot;
    __shared__ alignas(8) u64 bar;
    tcgen05_alloc_cta_group2(&taddr_slot, 32);
    tcgen05_relinquish_alloc_permit_cta_group2();
    tma_load_2d_cta_group2(smem, &tmap, mapa_shared_cluster(smem_u32(&bar), 0), 0, 1);
    u32 taddr = taddr_slot;
    tcgen05_mma_f16_ss_cta_group2(taddr, adesc, bdesc, idesc, 1);
    tcgen05_commit_multicast_cta_group2(&bar, 0x3);
    out[threadIdx.x] = taddr;
    tcgen05_dealloc_cta_group2(taddr, 32);
}
#endif
