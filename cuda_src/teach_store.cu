// bwlab-targets: sm_90a sm_100a
// Notebook 05's teaching kernel: the epilogue of one 128 x 32 fp32 tile of D per CTA.
//
//   every thread : its row of the accumulator in registers -> st.shared.v4 into the swizzled D tile
//                  -> fence.proxy.async.shared::cta
//   all threads  : barrier
//   thread 0     : TMA store of the tile -> commit_group -> wait_group.read 0 -> exit
//
// There is no tcgen05.ld on Hopper, so the row comes from GMEM: thread t gets row t of the tile, one
// column per register, as tcgen05.ld .32x32b would have left it. The host encodes the D tensor map with
// CU_TENSOR_MAP_SWIZZLE_128B and a box of 32 x 128 elements (bwlab.epilogue.run_teach).
#include "ptx.cuh"

constexpr u32 BM = 128;           // rows of the tile = threads of the CTA
constexpr u32 BN = 32;            // fp32 columns: 128 bytes per row, exactly one 128B swizzle row
constexpr u32 SWIZZLE_BITS = 3;   // CuTe Swizzle<3,4,3> = the tensor map's 128B swizzle

extern "C" __global__ void __launch_bounds__(BM)
teach_store(const __grid_constant__ TmaDescriptor tmap_d, const float* __restrict__ acc, u32 lda) {
    // The TMA engine reads SMEM 128-byte aligned; 1024 keeps the model's addresses (base 0) exact.
    __shared__ alignas(1024) float tile[BM * BN];
    const u32 row = threadIdx.x;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    // 1. The accumulators: row `row` of the tile, 32 registers.
    float r[BN];
    const float* src = acc + static_cast<size_t>(m0 + row) * lda + n0;
#pragma unroll
    for (u32 j = 0; j < BN; ++j) r[j] = src[j];

    // 2. Registers -> SMEM, 16 bytes (4 columns) per st.shared.v4. The TMA store will read chunk c of
    //    this row from the swizzled address, so the threads must write it there: chunk c ^ (row % 8).
    //    Without the swizzle the 8 rows of a quarter-warp would hit the same 4 banks (8-way conflict).
    const u32 row_addr = smem_u32(tile) + row * BN * 4;
#pragma unroll
    for (u32 c = 0; c < BN / 4; ++c)
        st_shared_v4_b32(swizzle_address(row_addr + 16 * c, SWIZZLE_BITS), __float_as_uint(r[4 * c]),
                         __float_as_uint(r[4 * c + 1]), __float_as_uint(r[4 * c + 2]),
                         __float_as_uint(r[4 * c + 3]));

    // 3. st.shared wrote through the generic proxy; the TMA engine reads through the async proxy.
    //    Each writing thread makes its writes visible to the async proxy ...
    fence_proxy_async_shared_cta();
    // 4. ... and the barrier puts every thread's fence before thread 0's store.
    __syncthreads();

    // 5. One thread stores the whole tile. Rows past the tensor's last row are skipped; columns run to
    //    the end of the 16-byte granule holding a row's last element.
    if (threadIdx.x == 0) {
        tma_store_2d(&tmap_d, tile, n0, m0);
        bulk_commit_group();
        // The CTA's SMEM is freed when it exits: wait until the store has finished READING the tile.
        // (The GMEM writes finish on their own; wait_group 0 would also wait for them.)
        bulk_wait_group_read<0>();
    }
}
