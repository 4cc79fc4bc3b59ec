// bwlab-targets: sm_90a sm_100a
// GEMM from scratch, step 3 — shared-memory tiling.
//
// A CTA of T x T threads computes a T x T tile of C. It walks K in slices of T: every thread copies one
// element of A's T x T slice and one of B's into shared memory, the CTA waits (__syncthreads), and each
// thread then reads its row of the A slice and its column of the B slice from SMEM. Each element
// loaded from global memory now serves T threads instead of one: global traffic drops by T.
#include "scratch/scratch_common.cuh"

using namespace scratch;

#ifndef TILE
#define TILE 16
#endif

extern "C" __global__ void __launch_bounds__(TILE * TILE)
gemm(const u16* __restrict__ A, const u16* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    __shared__ float As[TILE][TILE];    // A[m0 .. m0+T)[k0 .. k0+T), widened to f32 once
    __shared__ float Bs[TILE][TILE];    // B[k0 .. k0+T)[n0 .. n0+T)
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int n = blockIdx.x * TILE + tx, m = blockIdx.y * TILE + ty;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += TILE) {
        As[ty][tx] = f16_to_f32(A[m * K + k0 + tx]);        // a warp reads rows of 32 contiguous bytes
        Bs[ty][tx] = f16_to_f32(B[(k0 + ty) * N + n]);
        __syncthreads();                                    // the slice is complete
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();                                    // everyone is done with it before the next copy
    }
    C[m * N + n] = acc;
}
