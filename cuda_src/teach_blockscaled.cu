// bwlab-targets: sm_100a
// A block-scaled MMA on Blackwell, whole: one CTA, one 128 x N tile, D (f32, in Tensor Memory) =
// (A * scale_A) (128 x K) * (B * scale_B)^T (N x K). MXFP8 by default (e4m3 x e4m3, one ue8m0 scale per 32
// elements, kind::mxf8f6f4, K = 32 per instruction); -DBS_NVFP4 for NVFP4 (e2m1 x e2m1 packed two per byte,
// one ue4m3 scale per 16 elements, kind::mxf4nvf4, K = 64 per instruction). Python lays A and B out in a
// canonical SMEM layout, builds their SMEM descriptors and the instruction descriptor (scale factor IDs 0),
// and stores the scale factors in CUTLASS's block-scaled layout: 512-byte atoms of 128 rows x 4 scales.
//
//   1. every thread : operand image, scale_A and scale_B atoms from global into shared memory, then
//                     fence.proxy.async — the tensor core (tcgen05.cp and tcgen05.mma) reads SMEM through
//                     the async proxy
//   2. thread 0     : mbarrier.init(mma_done, 1);  warp 0: tcgen05.alloc of 256 columns: D in columns
//                     [0, N), scale_A from column 128, scale_B from column 128 + 4 * sf_atoms
//   3. one thread   : tcgen05.cp.32x128b.warpx4 of every atom into TMEM (4 columns each, duplicated to the
//                     four lane quarters), then the MMAs: instruction i uses scales s = i * SCALES_PER_MMA
//                     .. +SCALES_PER_MMA - 1 of each row, in atom s / 4 at byte s % 4 (the scale factor ID
//                     in the instruction descriptor); then tcgen05.commit -> mma_done. cp and mma issued by
//                     one thread execute in order: no wait between them
//   4. every thread : wait on mma_done, then tcgen05.ld.32x32b of its warp's 32 lanes of D
//   5. warp 0       : tcgen05.dealloc on every path
#include "ptx.cuh"

#ifdef BS_NVFP4
#define BS_SCALES_PER_MMA 4                        // .scale_vec::4X: 64 elements of K / 16
#define BS_MMA tcgen05_mma_mxf4nvf4_block16
#else
#define BS_SCALES_PER_MMA 1                        // .scale_vec::1X: 32 elements of K / 32
#define BS_MMA tcgen05_mma_mxf8f6f4_block32
#endif
#define BS_SMEM_BYTES 32768                        // A (128 x 128 bytes) and B (up to 128 x 128 bytes)
#define BS_MAX_ATOMS 4                             // scale atoms per operand: 16 scales of K per row
#define BS_TMEM_COLS 256
#define BS_SFA_COL 128

// An SMEM descriptor of one 512-byte scale atom as tcgen05.cp reads it: 32 rows of 16 bytes, K-major, no
// swizzle; an 8-row core matrix is 128 contiguous bytes, so the stride between 8-row groups (SBO) is 128 B.
__device__ __forceinline__ u64 scale_atom_desc(const void* atom) {
    return ((u64)((smem_u32(atom) & 0x3FFFF) >> 4))     // bits 0-13: start address >> 4
           | ((u64)(128 >> 4) << 32)                     // bits 32-45: SBO >> 4
           | (1ull << 46);                               // bits 46-48: 0b001, the SM100 descriptor
}

extern "C" __global__ void __launch_bounds__(128, 1)
teach_blockscaled(const uint4* __restrict__ image, u32 image_bytes, const uint4* __restrict__ sfa_atoms,
                  const uint4* __restrict__ sfb_atoms, u32 sf_atoms, const u64* __restrict__ a_descs,
                  const u64* __restrict__ b_descs, u32 n_mma, u32 idesc, u32* __restrict__ d_out, u32 n) {
    __shared__ alignas(1024) uint4 smem[BS_SMEM_BYTES / 16];
    __shared__ alignas(128) uint4 sfa_smem[BS_MAX_ATOMS * 32];
    __shared__ alignas(128) uint4 sfb_smem[BS_MAX_ATOMS * 32];
    __shared__ alignas(8) u64 mma_done;  // barrier id 0
    __shared__ u32 tmem_slot;
    const u32 warp = warpid_in_cta(), lane = laneid();

    // 1. Operands and scale factors into SMEM, made visible to the async proxy.
    for (u32 i = threadIdx.x; i < BS_SMEM_BYTES / 16; i += blockDim.x)
        smem[i] = i < image_bytes / 16 ? image[i] : make_uint4(0, 0, 0, 0);
    for (u32 i = threadIdx.x; i < sf_atoms * 32; i += blockDim.x) {  // 32 x 16 bytes per atom
        sfa_smem[i] = sfa_atoms[i];
        sfb_smem[i] = sfb_atoms[i];
    }
    fence_proxy_async_shared_cta();

    // 2. The barrier and 256 TMEM columns.
    if (threadIdx.x == 0) {
        mbarrier_init(&mma_done, 1);
        fence_mbarrier_init_release_cluster();
    }
    if (warp == 0) {
        tcgen05_alloc(&tmem_slot, BS_TMEM_COLS);
        tcgen05_relinquish_alloc_permit();
    }
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const u32 tmem = tmem_slot;
    const u32 tsfa = tmem + BS_SFA_COL, tsfb = tsfa + 4 * sf_atoms;

    // 3. One thread: the scales' last step (SMEM -> TMEM), then the MMAs.
    if (warp == 0) {
        if (elect_one_sync()) {
            for (u32 a = 0; a < sf_atoms; ++a) {
                tcgen05_cp_32x128b_warpx4(tsfa + 4 * a, scale_atom_desc(sfa_smem + 32 * a));
                tcgen05_cp_32x128b_warpx4(tsfb + 4 * a, scale_atom_desc(sfb_smem + 32 * a));
            }
            const u64 base = (smem_u32(smem) >> 4) & 0x3FFF;
            for (u32 i = 0; i < n_mma; ++i) {
                const u32 s = i * BS_SCALES_PER_MMA, atom = s / 4, id = s % 4;
                const u32 idesc_i = idesc | (id << 29) | (id << 4);  // scale factor A ID, B ID
                BS_MMA(tmem, a_descs[i] + base, b_descs[i] + base, idesc_i, tsfa + 4 * atom, tsfb + 4 * atom,
                       /*accumulate=*/i > 0 ? 1u : 0u);
            }
            tcgen05_commit(&mma_done);
        }
        __syncwarp();
    }

    // 4. Wait for the MMAs, read D back.
    const bool done = mbarrier_wait(&mma_done, /*parity=*/0, /*barrier_id=*/0, /*expected_tx=*/0);
    const bool mma_complete = __syncthreads_or(done) != 0;
    tcgen05_fence_after_thread_sync();
    if (mma_complete) {
        const u32 my_lanes = tmem + ((32u * warp) << 16);
        for (u32 col = 0; col < n; col += 8) {
            u32 r[8];
            tcgen05_ld_32x32b_x8(r, my_lanes + col);
            tcgen05_wait_ld();
            for (int j = 0; j < 8; ++j) d_out[(32u * warp + lane) * n + col + j] = r[j];
        }
    }

    // 5. Free the columns on every path.
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    if (warp == 0) {
        if (!mma_complete) tcgen05_wait_drained(&mma_done, 0);
        tcgen05_dealloc(tmem, BS_TMEM_COLS);
    }
}
