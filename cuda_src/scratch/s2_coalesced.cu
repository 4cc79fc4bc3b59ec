// bwlab-targets: sm_90a sm_100a
// GEMM from scratch, step 2 — coalesced: neighbouring threads take neighbouring COLUMNS.
//
// The same dot product as step 1; only the mapping of threads to C changes (n from x, m from y). A warp
// now shares one row m: its load of A[m][k] is one address for all 32 threads (one sector, broadcast),
// its load of B[k][n .. n+31] is 64 contiguous bytes (two sectors), and its store of C 128 contiguous
// bytes. Same arithmetic, a fraction of the memory traffic.
#include "scratch/scratch_common.cuh"

using namespace scratch;

extern "C" __global__ void gemm(const u16* __restrict__ A, const u16* __restrict__ B, float* __restrict__ C,
                                int M, int N, int K) {
    const int n = blockIdx.x * blockDim.x + threadIdx.x;   // neighbouring threads: neighbouring COLUMNS
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    if (m >= M || n >= N) return;
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += f16_to_f32(A[m * K + k]) * f16_to_f32(B[k * N + n]);
    C[m * N + n] = acc;
}
