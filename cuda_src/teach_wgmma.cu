// bwlab-targets: sm_90a
// Stage 3 on Hopper, whole: D (64 x 64, f32) = A (64 x K) * B (64 x K)^T with one chain of
// wgmma.mma_async.m64n64k16, f16 operands, both K-major. Python lays A and B out in a canonical
// SMEM layout and builds one SMEM descriptor per 16 of K for each; this kernel only moves the bytes
// and issues the instructions. Change a descriptor in Python (LBO, SBO, the swizzle code) and D
// shows what the tensor core read instead.
//
//   1. every thread : the operand image (A and B) from global into shared memory
//   2. every thread : fence.proxy.async, then __syncthreads — wgmma reads SMEM through the async
//                     proxy, which does not see ordinary stores until the fence
//   3. warpgroup    : wgmma.fence -> one wgmma.mma_async per 16 of K -> commit_group -> wait_group 0
//   4. every thread : its 32 accumulator registers to global memory
//
// No mbarrier here: the warpgroup waits for its own wgmma with wait_group, which always returns.
#include "ptx.cuh"

#ifndef TEACH_SMEM_BYTES
#define TEACH_SMEM_BYTES 32768
#endif

extern "C" __global__ void __launch_bounds__(128, 1)
teach_wgmma(const uint4* __restrict__ image, u32 image_bytes, const u64* __restrict__ a_descs,
            const u64* __restrict__ b_descs, u32 k_blocks, float* __restrict__ d_out) {
    // A swizzle is a function of the SMEM address: the operands start on a 1024-byte boundary, so
    // the offsets Python swizzled are the addresses the tensor core swizzles.
    __shared__ alignas(1024) uint4 smem[TEACH_SMEM_BYTES / 16];

    // 1-2. Operand bytes into SMEM, made visible to the async proxy.
    // The rest of the buffer is zeroed: a wrong descriptor that reads past the operands reads zeros,
    // as bwlab's model does.
    for (u32 i = threadIdx.x; i < TEACH_SMEM_BYTES / 16; i += blockDim.x)
        smem[i] = i < image_bytes / 16 ? image[i] : make_uint4(0, 0, 0, 0);
    fence_proxy_async_shared_cta();
    __syncthreads();

    // 3. The descriptors hold start addresses relative to the image: add where the image sits,
    //    in the descriptor's unit (16 bytes) and its 14-bit start-address field.
    const u64 base = (smem_u32(smem) >> 4) & 0x3FFF;
    // Thread t holds d[i] = D[16*(t/32) + (t%32)/4 + 8*((i/2)%2)][8*(i/4) + 2*(t%4) + i%2].
    float d[32];
    for (int i = 0; i < 32; ++i) d[i] = 0.0f;
    wgmma_fence();  // the writes to d above come before the wgmma that accumulate into d
    for (u32 kb = 0; kb < k_blocks; ++kb)
        wgmma_mma_async_m64n64k16_f32_f16_f16</*TransA=*/0, /*TransB=*/0>(
            d, a_descs[kb] + base, b_descs[kb] + base, /*scale_d=*/kb > 0 ? 1u : 0u);
    wgmma_commit_group();
    wgmma_wait_group<0>();  // until it returns, d holds no defined value

    // 4. Registers out in (thread, register) order; Python maps them back to D[m][n].
    for (int i = 0; i < 32; ++i) d_out[threadIdx.x * 32 + i] = d[i];
}
