// bwlab-targets: sm_90a sm_100a
// GEMM from scratch, step 5 — tensor cores: ldmatrix + mma.sync.
//
// The tile of step 4 (64 x 64, K in slices of 16), now computed by the tensor cores. Four warps each
// own a 32 x 32 quarter of the tile: 2 x 4 accumulators of mma.sync.m16n8k16 (16 x 8 floats each, 4
// per thread). The slices stay f16 in SMEM; `ldmatrix` hands each warp its A fragment (x4: a 16 x 16
// block) and its B fragments (x4.trans: two 16 x 8 blocks, transposed from B's row-major slice into the
// K-pairs mma.sync wants). One mma.sync does 16 x 8 x 16 FMAs for the whole warp.
#include "scratch/scratch_common.cuh"

using namespace scratch;

constexpr int BM = 64, BN = 64, BK = 16, THREADS = 128;
constexpr int WM = 32, WN = 32;                  // one warp's part of the tile
constexpr int MI = WM / 16, NI = WN / 8;         // its 2 x 4 mma tiles

extern "C" __global__ void __launch_bounds__(THREADS)
gemm(const u16* __restrict__ A, const u16* __restrict__ B, float* __restrict__ C, int M, int N, int K) {
    __shared__ alignas(16) u16 As[BM][BK];       // 32-byte rows: ldmatrix reads 16 of them
    __shared__ alignas(16) u16 Bs[BK][BN];
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const int wm = (warp / 2) * WM, wn = (warp % 2) * WN;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    float acc[MI][NI][4] = {};
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = tid; i < BM * BK; i += THREADS)                 // 8 elements of A per thread
            As[i / BK][i % BK] = A[(m0 + i / BK) * K + k0 + i % BK];
        for (int i = tid; i < BK * BN; i += THREADS)                 // 8 elements of B per thread
            Bs[i / BN][i % BN] = B[(k0 + i / BN) * N + n0 + i % BN];
        __syncthreads();
        u32 a[MI][4], b[NI][2];
        for (int mi = 0; mi < MI; ++mi)          // lanes 0-15: rows 0-15 at k 0; lanes 16-31: at k 8
            ldmatrix_x4(a[mi], &As[wm + mi * 16 + lane % 16][(lane / 16) * 8]);
        for (int nj = 0; nj < NI; nj += 2) {     // lanes 0-15: k rows 0-15 of 8 columns; 16-31: the next 8
            u32 r[4];
            ldmatrix_x4_trans(r, &Bs[lane % 16][wn + nj * 8 + (lane / 16) * 8]);
            b[nj][0] = r[0]; b[nj][1] = r[1]; b[nj + 1][0] = r[2]; b[nj + 1][1] = r[3];
        }
        for (int mi = 0; mi < MI; ++mi)
            for (int nj = 0; nj < NI; ++nj) mma_m16n8k16_f16_f32(acc[mi][nj], a[mi], b[nj][0], b[nj][1]);
        __syncthreads();
    }
    for (int mi = 0; mi < MI; ++mi)              // lane holds D[g][2t, 2t+1] and D[g+8][2t, 2t+1]
        for (int nj = 0; nj < NI; ++nj)
            for (int i = 0; i < 4; ++i)
                C[(m0 + wm + mi * 16 + lane / 4 + 8 * (i / 2)) * N + n0 + wn + nj * 8 + 2 * (lane % 4) + i % 2] =
                    acc[mi][nj][i];
}
