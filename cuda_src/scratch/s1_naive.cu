// bwlab-targets: sm_90a sm_100a
// GEMM from scratch, step 1 — naive: one thread per element of C.
//
// Thread (x, y) of the grid computes C[m][n] with m from x and n from y: a K-long dot product of row m
// of A with column n of B, straight from global memory. The 32 threads of a warp have consecutive x,
// so they hold 32 different rows m: each of their loads of A touches 32 rows K elements apart (32
// sectors for 64 useful bytes), and their stores of C land N floats apart.
#include "scratch/scratch_common.cuh"

using namespace scratch;

extern "C" __global__ void gemm(const u16* __restrict__ A, const u16* __restrict__ B, float* __restrict__ C,
                                int M, int N, int K) {
    const int m = blockIdx.x * blockDim.x + threadIdx.x;   // neighbouring threads: neighbouring ROWS
    const int n = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += f16_to_f32(A[m * K + k]) * f16_to_f32(B[k * N + n]);
    C[m * N + n] = acc;
}
