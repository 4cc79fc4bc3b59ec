// bwlab-targets: sm_90a
// Hopper's FP8 accumulator, measured: wgmma.mma_async.m64n64k32.f32.{e4m3,e5m2}.{e4m3,e5m2}, both operands
// from SMEM, K-major, no swizzle. bwlab/checks/wgmma_fp8.py launches it on many independent 64 x 64 tiles and
// compares every D element with bwlab.umma.numerics (F = 13 fraction bits, the sum cut to e8m13).
//
//   all 128 threads : copy the tile's A (64 x K bytes) and B (64 x K bytes), row-major with K contiguous, into
//                     SMEM in the canonical no-swizzle K-major layout -> fence.proxy.async -> __syncthreads
//   the warpgroup   : wgmma.fence -> one wgmma.mma_async per 32 bytes of K (D += A.B^T, the first one on C)
//                     -> commit_group -> wait_group 0
//   every thread    : write its 32 accumulator registers out (Python maps them back with the m64nN fragment)
//
// SMEM layout per K step (PTX ISA wgmma "Shared Memory Matrix Layout", no swizzle, K-major): an 8-row x 16-byte
// core matrix is 128 contiguous bytes; the two core matrices along K (32 bytes) are LBO = 128 B apart, the
// 8-row groups along M/N SBO = 256 B apart: byte b of row r sits at (r/8)*256 + (b/16)*128 + (r%8)*16 + b%16.
#include "ptx.cuh"

#define FP8_PROBE_MAX_K_STEPS 8
#define FP8_PROBE_STEP_BYTES 2048   // 64 rows x 32 bytes

// wgmma.mma_async.sync.aligned.m64n64k32.f32.AT.BT: D[64 x 64] = (scale_d ? D : 0) + A[64 x 32] . B[64 x 32]^T.
// FP8 operands take no transpose immediates (K-major only); imm-scale-a/b = 1.
#define BW_FP8_WGMMA(AT, BT)                                                                                    \
    __device__ __forceinline__ void wgmma_m64n64k32_f32_##AT##_##BT(float (&d)[32], u64 a_desc, u64 b_desc,     \
                                                                    u32 scale_d) {                              \
        asm volatile(                                                                                           \
            "{\n\t.reg .pred p;\n\t"                                                                            \
            "setp.ne.b32 p, %34, 0;\n\t"                                                                        \
            "wgmma.mma_async.sync.aligned.m64n64k32.f32." #AT "." #BT " "                                       \
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                            \
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "                 \
            "%32, %33, p, 1, 1;\n\t}"                                                                           \
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),   \
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),          \
              "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]),        \
              "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]),        \
              "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                                                             \
            : "l"(a_desc), "l"(b_desc), "r"(scale_d)                                                            \
            : "memory");                                                                                        \
    }

BW_FP8_WGMMA(e4m3, e4m3)
BW_FP8_WGMMA(e4m3, e5m2)
BW_FP8_WGMMA(e5m2, e4m3)
BW_FP8_WGMMA(e5m2, e5m2)

// SM90 matrix descriptor, no swizzle: start address, LBO and SBO in 16-byte units (bits 0-13, 16-29, 32-45).
__device__ __forceinline__ u64 fp8_probe_desc(u32 smem_addr) {
    return (u64)((smem_addr >> 4) & 0x3FFF) | ((u64)(128 >> 4) << 16) | ((u64)(256 >> 4) << 32);
}

// Row r, 16-byte chunk h (of K) of K step s -> its SMEM offset in the layout above.
__device__ __forceinline__ u32 fp8_probe_offset(u32 r, u32 s, u32 h) {
    return s * FP8_PROBE_STEP_BYTES + (r / 8) * 256 + h * 128 + (r % 8) * 16;
}

template <int V>
__device__ __forceinline__ void fp8_probe_body(const u8* __restrict__ a, const u8* __restrict__ b,
                                               const float* __restrict__ c, float* __restrict__ d_out,
                                               u32 k_steps) {
    __shared__ __align__(128) u8 smem[2 * FP8_PROBE_MAX_K_STEPS * FP8_PROBE_STEP_BYTES];
    k_steps = k_steps < FP8_PROBE_MAX_K_STEPS ? k_steps : FP8_PROBE_MAX_K_STEPS;
    const u32 K = 32 * k_steps;
    const u8* ta = a + (size_t)blockIdx.x * 64 * K;
    const u8* tb = b + (size_t)blockIdx.x * 64 * K;
    u8* sb = smem + FP8_PROBE_MAX_K_STEPS * FP8_PROBE_STEP_BYTES;
    for (u32 i = threadIdx.x; i < 64 * K / 16; i += blockDim.x) {      // one 16-byte chunk per iteration
        const u32 r = i / (K / 16), kc = i % (K / 16);
        const u32 off = fp8_probe_offset(r, kc / 2, kc % 2);
        *reinterpret_cast<uint4*>(smem + off) = reinterpret_cast<const uint4*>(ta)[i];
        *reinterpret_cast<uint4*>(sb + off) = reinterpret_cast<const uint4*>(tb)[i];
    }
    fence_proxy_async_shared_cta();   // wgmma reads SMEM through the async proxy
    __syncthreads();

    float d[32];
    const float* tc = c + (size_t)blockIdx.x * 128 * 32;
    for (int i = 0; i < 32; ++i) d[i] = tc[threadIdx.x * 32 + i];
    const u32 a0 = smem_u32(smem), b0 = smem_u32(sb);
    wgmma_fence();
    for (u32 s = 0; s < k_steps; ++s) {
        const u64 ad = fp8_probe_desc(a0 + s * FP8_PROBE_STEP_BYTES), bd = fp8_probe_desc(b0 + s * FP8_PROBE_STEP_BYTES);
        if constexpr (V == 0) wgmma_m64n64k32_f32_e4m3_e4m3(d, ad, bd, 1u);
        if constexpr (V == 1) wgmma_m64n64k32_f32_e4m3_e5m2(d, ad, bd, 1u);
        if constexpr (V == 2) wgmma_m64n64k32_f32_e5m2_e4m3(d, ad, bd, 1u);
        if constexpr (V == 3) wgmma_m64n64k32_f32_e5m2_e5m2(d, ad, bd, 1u);
    }
    wgmma_commit_group();
    wgmma_wait_group<0>();
    float* td = d_out + (size_t)blockIdx.x * 128 * 32;
    for (int i = 0; i < 32; ++i) td[threadIdx.x * 32 + i] = d[i];
}

#define BW_FP8_PROBE_KERNEL(V, AT, BT)                                                                    \
    extern "C" __global__ void __launch_bounds__(128, 1) wgmma_fp8_probe_##AT##_##BT(                    \
        const u8* __restrict__ a, const u8* __restrict__ b, const float* __restrict__ c,                   \
        float* __restrict__ d_out, u32 k_steps) {                                                         \
        fp8_probe_body<V>(a, b, c, d_out, k_steps);                                                       \
    }

BW_FP8_PROBE_KERNEL(0, e4m3, e4m3)
BW_FP8_PROBE_KERNEL(1, e4m3, e5m2)
BW_FP8_PROBE_KERNEL(2, e5m2, e4m3)
BW_FP8_PROBE_KERNEL(3, e5m2, e5m2)
