// bwlab-targets: sm_90a sm_100a
// Stage 2, the teaching kernel: a cluster of CLUSTER_X x CLUSTER_Y CTAs, each needing one A tile
// (shared by the CTAs of its row, same m) and one B tile (shared by its column, same n). Each CTA
// loads only its SLICE of each tile and multicasts it to every CTA that needs the tile, so every
// tile is read from L2 once per cluster. The masks come from Python
// (bwlab.multicast.create_tma_multicast_mask), indexed by cluster rank.
#include "ptx.cuh"

#ifndef CLUSTER_X
#define CLUSTER_X 2  // CTAs along M (%cluster_ctaid.x): they share a B tile
#endif
#ifndef CLUSTER_Y
#define CLUSTER_Y 2  // CTAs along N (%cluster_ctaid.y): they share an A tile
#endif
#ifndef TILE_M
#define TILE_M 64    // rows of the A tile each CTA holds
#endif
#ifndef TILE_N
#define TILE_N 64    // rows of the B tile
#endif
#ifndef TILE_K
#define TILE_K 64    // 16-bit elements per row: 128 bytes
#endif

#define A_BYTES (TILE_M * TILE_K * 2)
#define B_BYTES (TILE_N * TILE_K * 2)
#define A_ROWS_EACH (TILE_M / CLUSTER_Y)  // the CLUSTER_Y CTAs of a row each load this many rows of A
#define B_ROWS_EACH (TILE_N / CLUSTER_X)

extern "C" __global__ void __cluster_dims__(CLUSTER_X, CLUSTER_Y, 1)
teach_multicast(const __grid_constant__ TmaDescriptor tmap_a,  // box: TILE_K x A_ROWS_EACH
                const __grid_constant__ TmaDescriptor tmap_b,  // box: TILE_K x B_ROWS_EACH
                const u16* __restrict__ masks,                 // [cluster rank][A, B]
                u8* __restrict__ out)                          // [CTA][A_BYTES + B_BYTES]
{
    // Multicast writes the same offset in every CTA of the mask: the tiles and the barrier sit at
    // the same place in every CTA because every CTA runs this same code.
    __shared__ alignas(128) u8 tiles[A_BYTES + B_BYTES];  // A tile, then B tile
    __shared__ alignas(8) u64 full;                       // barrier 0
    const u32 rank = cluster_ctarank();                   // = m + CLUSTER_X * n
    const uint3 mn = cluster_ctaid();                     // (m, n) inside the cluster

    // 1. Each CTA initialises its own barrier and publishes it to the cluster...
    if (threadIdx.x == 0) {
        mbarrier_init(&full, 1);
        fence_mbarrier_init_release_cluster();
    }
    // 2. ...and no CTA multicasts before EVERY barrier of the cluster exists: another CTA's
    //    slice may land here (and count down `full`) as soon as this sync is passed.
    cluster_sync();

    if (threadIdx.x == 0) {
        // 3. Expect the WHOLE tiles, not the slices this CTA issues: the other slices come from
        //    the other CTAs of the row and of the column.
        mbarrier_arrive_expect_tx(&full, A_BYTES + B_BYTES);
        // 4. This CTA's slice of A is slice n of its row's tile; it lands at slice n's offset in
        //    every CTA of the A mask. Likewise slice m of B for the column.
        const u16 a_mask = masks[2 * rank + 0];
        const u16 b_mask = masks[2 * rank + 1];
        tma_load_multicast_2d(tiles + mn.y * (A_BYTES / CLUSTER_Y), &tmap_a, &full, a_mask,
                              0, blockIdx.x * TILE_M + mn.y * A_ROWS_EACH);
        tma_load_multicast_2d(tiles + A_BYTES + mn.x * (B_BYTES / CLUSTER_X), &tmap_b, &full, b_mask,
                              0, blockIdx.y * TILE_N + mn.x * B_ROWS_EACH);
    }

    // 5. Bounded wait (200 ms, then MbarrierTimeout in Python). Cluster-scope acquire: the bytes
    //    were sent by other CTAs.
    if (mbarrier_wait<true>(&full, /*parity=*/0, /*barrier_id=*/0, A_BYTES + B_BYTES)) {
        const u32 cta = blockIdx.x + gridDim.x * blockIdx.y;
        for (u32 i = threadIdx.x * 16; i < A_BYTES + B_BYTES; i += blockDim.x * 16)
            *reinterpret_cast<uint4*>(out + (u64)cta * (A_BYTES + B_BYTES) + i) =
                *reinterpret_cast<const uint4*>(tiles + i);
    }
    // 6. No CTA exits while a slice it issued may still be landing in another CTA.
    __syncwarp();
    cluster_sync();
}
