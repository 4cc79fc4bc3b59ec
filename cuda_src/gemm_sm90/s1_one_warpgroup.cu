// bwlab-targets: sm_90a
// GEMM ladder, Hopper, step 1 — one warpgroup, one stage.
//
// A CTA of one warpgroup (128 threads) computes a 128 x 128 tile of C. For each 64-wide slice of K:
// thread 0 announces the bytes and starts two TMA loads (A's 128 x 64 box, B's 128 x 64 box) onto one
// mbarrier; every thread waits for the phase; the warpgroup issues 2 x 4 wgmma m64n128k16 (two 64-row
// slabs of A, four k16 steps each) and waits for them; a __syncthreads frees the buffer for the next
// load. Loads and math never overlap: the tensor cores idle while TMA fetches, and TMA idles while
// they compute. The accumulator (2 x 64 floats per thread) goes straight from registers to C.
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

constexpr int BM = 128, BN = 128;
constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2;

extern "C" __global__ void __launch_bounds__(128, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K, u64* stamps) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    u8* sA = smem;                 // 128 rows x 128 bytes, swizzled
    u8* sB = smem + A_BYTES;       // 128 rows x 128 bytes, swizzled
    __shared__ alignas(8) u64 full;

    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN, k_tiles = K / BK;
    if (threadIdx.x == 0) {
        mbarrier_init(&full, 1);
        fence_mbarrier_init_release_cluster();
    }
    __syncthreads();

    float d0[BN / 2], d1[BN / 2];
    zero(d0);
    zero(d1);
    for (int kt = 0; kt < k_tiles; ++kt) {
        if (threadIdx.x == 0) {
            stamp(stamps, 0, kt, 0);
            mbarrier_arrive_expect_tx(&full, A_BYTES + B_BYTES);
            tma_load_2d(sA, &tma_a, &full, kt * BK, m0);
            tma_load_2d(sB, &tma_b, &full, kt * BK, n0);
            stamp(stamps, 0, kt, 1);
        }
        if (!mbarrier_wait(&full, kt & 1, 1, A_BYTES + B_BYTES)) return;
        if (threadIdx.x == 0) stamp(stamps, 1, kt, 0);
        wgmma_fence();
        mma_stage<BN>(d0, smem_u32(sA), smem_u32(sB));
        mma_stage<BN>(d1, smem_u32(sA) + 64 * 128, smem_u32(sB));
        wgmma_commit_group();
        wgmma_wait_group<0>();
        if (threadIdx.x == 0) stamp(stamps, 1, kt, 1);
        __syncthreads();  // every warp's wgmma has read the stage before thread 0 loads over it
    }
    if (threadIdx.x == 0) stamp(stamps, 3, 0, 0);
    store_rows<BN>(d0, C, N, m0, n0);
    store_rows<BN>(d1, C, N, m0 + 64, n0);
    if (threadIdx.x == 0) stamp(stamps, 3, 0, 1);
}
