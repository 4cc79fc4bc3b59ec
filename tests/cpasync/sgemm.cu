// a tiled SGEMM whose next k-tile is fetched with cp.async while this one is used (tests/test_emu_cpasync.py)
#include <cuda_pipeline.h>
#define T 16
extern "C" __global__ void sgemm(const float* A, const float* B, float* C, int n) {
    __shared__ __align__(16) float As[2][T][T], Bs[2][T][T];
    int tx = threadIdx.x, ty = threadIdx.y, row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;
    float acc = 0.f;
    int tiles = n / T;
    __pipeline_memcpy_async(&As[0][ty][tx], &A[row * n + tx], 4);
    __pipeline_memcpy_async(&Bs[0][ty][tx], &B[ty * n + col], 4);
    __pipeline_commit();
    for (int k = 0; k < tiles; ++k) {
        if (k + 1 < tiles) {
            __pipeline_memcpy_async(&As[(k + 1) & 1][ty][tx], &A[row * n + (k + 1) * T + tx], 4);
            __pipeline_memcpy_async(&Bs[(k + 1) & 1][ty][tx], &B[((k + 1) * T + ty) * n + col], 4);
        }
        __pipeline_commit();
        __pipeline_wait_prior(1);
        __syncthreads();
        for (int j = 0; j < T; ++j) acc += As[k & 1][ty][j] * Bs[k & 1][j][tx];
        __syncthreads();
    }
    C[row * n + col] = acc;
}
