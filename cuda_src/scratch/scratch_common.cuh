// GEMM from scratch: what every step shares.
//
// C = A * B with A (M x K) and B (K x N) in f16, row-major (the layout NumPy's `A @ B` assumes), and
// C (M x N) in f32, row-major. Elements travel as their 16-bit patterns (u16); `f16_to_f32` widens one
// with the PTX `cvt` the compiler would emit for __half2float. The tensor-core step (s5) adds its
// own wrappers (ldmatrix, mma.sync) below, each named after its PTX instruction.
#pragma once
#include "ptx.cuh"

namespace scratch {

typedef unsigned short u16;
typedef unsigned int u32;

// PTX ISA, "cvt" (data movement and conversion instructions; 9.7.9.21 in ISA 8.x): f16 -> f32 is exact (every f16 is an f32).
__device__ __forceinline__ float f16_to_f32(u16 h) {
    float f;
    asm("{ .reg .f16 t; mov.b16 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "h"(h));
    return f;
}

// PTX ISA, "ldmatrix" (warp-level matrix load, with the mma.sync instructions): four 8 x 8 matrices of 16-bit elements from shared memory, one
// register (two elements) of each per thread. Threads 8i .. 8i+7 give the addresses of matrix i's
// eight rows (16 bytes each); thread t receives row t / 4, elements 2 (t % 4) and 2 (t % 4) + 1.
__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], const void* smem_row) {
    u32 a = (u32)__cvta_generic_to_shared(smem_row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

// The same, each matrix transposed on the way (.trans): thread t receives column t / 4, rows 2 (t % 4)
// and 2 (t % 4) + 1 — a K-major fragment out of a row-major (N-contiguous) B tile.
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], const void* smem_row) {
    u32 a = (u32)__cvta_generic_to_shared(smem_row);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}

// PTX ISA, "mma" and "Matrix Fragments for mma.m16n8k16 with floating point type": D (16 x 8, f32) = A (16 x 16) * B (16 x 8) + C,
// one warp. Fragments (g = lane / 4, t = lane % 4): a[0] = A[g][2t, 2t+1], a[1] = A[g+8][2t, 2t+1],
// a[2] = A[g][2t+8, 2t+9], a[3] = A[g+8][2t+8, 2t+9]; b[0] = B[2t, 2t+1][g], b[1] = B[2t+8, 2t+9][g];
// d[0..1] = D[g][2t, 2t+1], d[2..3] = D[g+8][2t, 2t+1].
__device__ __forceinline__ void mma_m16n8k16_f16_f32(float (&d)[4], const u32 (&a)[4], u32 b0, u32 b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

}  // namespace scratch
