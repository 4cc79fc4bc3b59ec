// bwlab-targets: sm_90a
// Stage 3 on Hopper: wgmma reads both operands from shared memory through SMEM matrix descriptors,
// the same canonical layouts and almost the same descriptor that Blackwell's tcgen05.mma reads.
// Running it on the H100 is how bwlab checks its descriptor and layout model on real hardware.
//
//   all 128 threads : copy the operand bytes (laid out by Python in a canonical layout) into SMEM
//                     -> fence.proxy.async (make those generic writes visible to the async proxy)
//   the warpgroup   : wgmma.fence -> one wgmma.mma_async per K block (descriptors built in Python,
//                     start addresses relative to the SMEM buffer) -> commit_group -> wait_group 0
//   every thread    : write its N/2 accumulator registers out; Python maps (thread, register) back
//                     to D[m][n] with the wgmma accumulator fragment layout.
//
// One kernel per N (wgmma's N is part of the opcode); `variant` picks the element type and the two
// transpose immediates at run time: bit 0 = bf16 (else f16), bit 1 = A MN-major, bit 2 = B MN-major.
#include "ptx.cuh"

#ifndef WGMMA_MAX_K_BLOCKS
#define WGMMA_MAX_K_BLOCKS 16
#endif

template <int N, bool BF16, int TA, int TB>
__device__ __forceinline__ void wgmma_step(float (&d)[N / 2], u64 a, u64 b, u32 scale_d) {
#define BW_WGMMA_CASE(NN)                                                                   \
    if constexpr (N == NN && BF16) wgmma_mma_async_m64n##NN##k16_f32_bf16_bf16<TA, TB>(d, a, b, scale_d); \
    if constexpr (N == NN && !BF16) wgmma_mma_async_m64n##NN##k16_f32_f16_f16<TA, TB>(d, a, b, scale_d);
    BW_WGMMA_CASE(8)
    BW_WGMMA_CASE(16)
    BW_WGMMA_CASE(32)
    BW_WGMMA_CASE(64)
    BW_WGMMA_CASE(128)
    BW_WGMMA_CASE(256)
#undef BW_WGMMA_CASE
}

template <int N, bool BF16, int TA, int TB>
__device__ __forceinline__ void wgmma_k_loop(float (&d)[N / 2], const u64* a_descs,
                                             const u64* b_descs, u32 k_blocks, u32 smem_base,
                                             u32 accumulate) {
    // The descriptors from Python hold start addresses relative to the SMEM buffer; add the
    // buffer's shared-window address (>> 4, the descriptor's unit) to the 14-bit start field.
    const u64 base16 = (smem_base >> 4) & 0x3FFF;
    for (u32 kb = 0; kb < k_blocks; ++kb)
        wgmma_step<N, BF16, TA, TB>(d, a_descs[kb] + base16, b_descs[kb] + base16,
                              (kb > 0 || accumulate) ? 1u : 0u);
}

template <int N>
__device__ __forceinline__ void wgmma_validate_body(const u8* __restrict__ image, u32 image_bytes,
                                                    const u64* __restrict__ a_descs,
                                                    const u64* __restrict__ b_descs, u32 k_blocks,
                                                    u32 variant, u32 accumulate,
                                                    const float* __restrict__ d_init,
                                                    float* __restrict__ d_out, u32* smem_base_out) {
    extern __shared__ u8 smem_raw[];
    // Swizzles are functions of the shared address: start the operand image on a 1024-byte
    // boundary so the image's own offsets are what Python swizzled.
    u8* smem = smem_raw + ((1024u - (smem_u32(smem_raw) & 1023u)) & 1023u);
    const u32 smem_base = smem_u32(smem);

    const uint4* src = reinterpret_cast<const uint4*>(image);
    uint4* dst = reinterpret_cast<uint4*>(smem);
    for (u32 i = threadIdx.x; i < image_bytes / 16; i += blockDim.x) dst[i] = src[i];
    fence_proxy_async_shared_cta();  // wgmma reads SMEM through the async proxy
    __syncthreads();

    float d[N / 2];
    for (int i = 0; i < N / 2; ++i) d[i] = d_init[threadIdx.x * (N / 2) + i];

    k_blocks = k_blocks < WGMMA_MAX_K_BLOCKS ? k_blocks : WGMMA_MAX_K_BLOCKS;
    wgmma_fence();
#define BW_VARIANT(V, BF, TA, TB) \
    case V: wgmma_k_loop<N, BF, TA, TB>(d, a_descs, b_descs, k_blocks, smem_base, accumulate); break;
    switch (variant & 7u) {
        BW_VARIANT(0, false, 0, 0) BW_VARIANT(1, true, 0, 0)
        BW_VARIANT(2, false, 1, 0) BW_VARIANT(3, true, 1, 0)
        BW_VARIANT(4, false, 0, 1) BW_VARIANT(5, true, 0, 1)
        BW_VARIANT(6, false, 1, 1) BW_VARIANT(7, true, 1, 1)
    }
#undef BW_VARIANT
    wgmma_commit_group();
    wgmma_wait_group<0>();

    for (int i = 0; i < N / 2; ++i) d_out[threadIdx.x * (N / 2) + i] = d[i];
    if (threadIdx.x == 0) *smem_base_out = smem_base;
}

#define BW_WGMMA_KERNEL(N)                                                                        \
    extern "C" __global__ void __launch_bounds__(128, 1) wgmma_m64n##N##k16_validate(             \
        const u8* __restrict__ image, u32 image_bytes, const u64* __restrict__ a_descs,           \
        const u64* __restrict__ b_descs, u32 k_blocks, u32 variant, u32 accumulate,               \
        const float* __restrict__ d_init, float* __restrict__ d_out, u32* smem_base_out) {        \
        wgmma_validate_body<N>(image, image_bytes, a_descs, b_descs, k_blocks, variant, accumulate, \
                               d_init, d_out, smem_base_out);                                     \
    }

BW_WGMMA_KERNEL(8)
BW_WGMMA_KERNEL(16)
BW_WGMMA_KERNEL(32)
BW_WGMMA_KERNEL(64)
BW_WGMMA_KERNEL(128)
BW_WGMMA_KERNEL(256)
