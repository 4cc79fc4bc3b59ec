// bwlab PTX wrappers: vectorised shared-memory stores and loads for the epilogue (stage 5), and the
// conversions that pack accumulators into the 32-bit registers those stores write.
//   st.shared / ld.shared: PTX ISA 9.7.9.10 "st", 9.7.9.8 "ld" (.v4.b32: 16 bytes, 16-byte aligned)
//   cvt.rn.f16x2.f32 / cvt.rn.bf16x2.f32 / cvt.f32.f16: PTX ISA 9.7.9.21 "cvt" (bf16x2: sm_80+)
// Addresses are 32-bit shared-state-space addresses (smem_u32 in common.cuh).
#pragma once
#include "common.cuh"

// st.shared.v4.b32: one thread writes 16 bytes. A warp's instruction is served in four phases of
// eight lanes (128 bytes each); lanes of one phase that hit one bank with different words conflict.
__device__ __forceinline__ void st_shared_v4_b32(u32 smem_addr, u32 a, u32 b, u32 c, u32 d) {
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};"
                 ::"r"(smem_addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

// st.shared.v2.b32: one thread writes 8 bytes (e.g. two adjacent f32 of a wgmma accumulator fragment).
__device__ __forceinline__ void st_shared_v2_b32(u32 smem_addr, u32 a, u32 b) {
    asm volatile("st.shared.v2.b32 [%0], {%1, %2};" ::"r"(smem_addr), "r"(a), "r"(b) : "memory");
}

// ld.shared.v4.b32: one thread reads 16 bytes.
__device__ __forceinline__ void ld_shared_v4_b32(u32 smem_addr, u32 (&r)[4]) {
    asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_addr) : "memory");
}

// cvt.rn.f16x2.f32 d, hi, lo: two floats rounded to nearest even, packed; `lo` lands in bits 15..0
// (the lower address in memory), `hi` in bits 31..16.
__device__ __forceinline__ u32 cvt_rn_f16x2_f32(float lo, float hi) {
    u32 d;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}

// cvt.rn.bf16x2.f32 d, hi, lo: the same for bfloat16.
__device__ __forceinline__ u32 cvt_rn_bf16x2_f32(float lo, float hi) {
    u32 d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}

// cvt.f32.f16: one half (raw bits in the low 16 bits of `h`) to float, exactly.
__device__ __forceinline__ float cvt_f32_f16(u32 h) {
    float f;
    asm("{\n\t.reg .b16 t;\n\tcvt.u16.u32 t, %1;\n\tcvt.f32.f16 %0, t;\n\t}" : "=f"(f) : "r"(h));
    return f;
}

// The address a swizzled tile keeps the byte at `addr` at: CuTe Swizzle<B,4,3> on the absolute SMEM
// address (B = 0 none, 1 = 32B, 2 = 64B, 3 = 128B): bits [4, 4+B) ^= bits [7, 7+B). The TMA engine
// applies the same function, so threads that write through it produce exactly the image a TMA store
// with CU_TENSOR_MAP_SWIZZLE_* expects.
__device__ __forceinline__ u32 swizzle_address(u32 addr, u32 bits) {
    return addr ^ ((addr >> 3) & (((1u << bits) - 1u) << 4));
}
