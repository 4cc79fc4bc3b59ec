// bwlab-targets: sm_90a sm_100a
// Stage 2: a cluster of CTAs shares tiles through TMA multicast.
//
// tma_multicast_tile: each CTA issues the slice(s) of its A and/or B tile that bwlab.multicast's
// tma_partition model assigned to it, with the multicast mask create_tma_multicast_mask computed
// in Python (CuTe: tutorial 03's tma_partition + create_tma_multicast_mask<2> / <1>). Every slice
// lands at the same SMEM offset in every CTA of its mask and counts down the mbarrier at the same
// offset there. Then every CTA dumps its tile area so the host can compare it, CTA by CTA, with
// the model.
//
//   all     : fill the tile area with 0xEE (a byte nobody wrote stands out), fence.proxy.async
//   thread 0: mbarrier.init(1) -> fence.mbarrier_init.release.cluster
//   all     : cluster_sync  (every barrier in the cluster exists before anyone can complete_tx on it)
//   thread 0: arrive.expect_tx(bytes this CTA will RECEIVE) -> cp.async.bulk.tensor...multicast::cluster
//   all     : bounded wait (cluster-scope acquire: the bytes were sent by other CTAs) -> dump SMEM
//   all     : cluster_sync  (no CTA exits while a slice it issued may still be landing elsewhere)
//
// tma_multicast_bench: a persistent pipelined loop timing how fast a cluster fills every CTA with
// one tile after another, with multicast (each CTA issues 1/c of the boxes, mask = the whole
// cluster) or without (every CTA issues every box itself). Its consumers release a stage the way
// CUTLASS's PipelineTmaAsync does: one lane per CTA to be told, a plain remote arrival each.
#include "ptx.cuh"

#ifndef CLUSTER_X
#define CLUSTER_X 2  // CTAs of the cluster along x: the MMA's M mode (and its peer CTAs)
#endif
#ifndef CLUSTER_Y
#define CLUSTER_Y 2  // CTAs of the cluster along y: the MMA's N mode
#endif
#ifndef MC_THREADS
#define MC_THREADS 128
#endif

// One TMA load a CTA issues: cta_mask == 0 means "this CTA issues nothing for this operand".
struct TmaIssue {
    int cta_mask;     // bit r set: the box lands in the CTA of cluster rank r
    int c0, c1;       // box coordinates in the tensor, innermost first (elements)
    int smem_offset;  // bytes from the 1024-byte-aligned tile area, the same in every receiving CTA
};
// The host builds these with NumPy (bwlab.multicast.TMA_ISSUE_DTYPE); tests/test_multicast.py reads
// these lines and checks that dtype's itemsize and field offsets against them. NVRTC has no offsetof
// (__builtin_offsetof included), so the offsets follow from the sizes: the field sizes add up to
// sizeof(TmaIssue), so there is no padding and each field sits at the sum of the sizes declared
// before it (0, 4, 8, 12).
static_assert(sizeof(TmaIssue) == 16, "TmaIssue must match TMA_ISSUE_DTYPE: 16 bytes");
static_assert(sizeof(TmaIssue::cta_mask) == 4, "TmaIssue.cta_mask: 4 bytes");
static_assert(sizeof(TmaIssue::c0) == 4, "TmaIssue.c0: 4 bytes");
static_assert(sizeof(TmaIssue::c1) == 4, "TmaIssue.c1: 4 bytes");
static_assert(sizeof(TmaIssue::smem_offset) == 4, "TmaIssue.smem_offset: 4 bytes");
static_assert(sizeof(TmaIssue::cta_mask) + sizeof(TmaIssue::c0) + sizeof(TmaIssue::c1) +
              sizeof(TmaIssue::smem_offset) == sizeof(TmaIssue), "TmaIssue has no padding");

// Dynamic SMEM starts wherever the driver puts it; round up so that the tile area sits on a
// 1024-byte boundary, where the 128-byte swizzle pattern starts.
__device__ __forceinline__ u8* align_1024(u8* p) {
    const u32 a = smem_u32(p);
    return p + (((a + 1023u) & ~1023u) - a);
}

extern "C" __global__ void __cluster_dims__(CLUSTER_X, CLUSTER_Y, 1) __launch_bounds__(MC_THREADS)
tma_multicast_tile(const __grid_constant__ TmaDescriptor tmap_a,
                   const __grid_constant__ TmaDescriptor tmap_b,
                   const TmaIssue* __restrict__ plan,   // [cta][operand A, B]
                   const u32* __restrict__ expect_tx,   // [cta] bytes landing in this CTA
                   u32 tile_bytes,                      // bytes of the tile area to dump
                   u8* __restrict__ out,                // [cta][tile_bytes]
                   u32* __restrict__ info)              // [cta][rank, smem address, ctaid.x, ctaid.y]
{
    extern __shared__ u8 smem_raw[];
    __shared__ alignas(8) u64 tile_full;  // barrier 0: at the same offset in every CTA
    u8* tile = align_1024(smem_raw);
    const u32 cta = blockIdx.x + gridDim.x * blockIdx.y;

    for (u32 i = threadIdx.x * 16; i < tile_bytes; i += MC_THREADS * 16)
        *reinterpret_cast<uint4*>(tile + i) = make_uint4(0xEEEEEEEEu, 0xEEEEEEEEu, 0xEEEEEEEEu, 0xEEEEEEEEu);
    // The fill is a generic-proxy write; the slices arrive through the async proxy.
    fence_proxy_async_shared_cta();

    if (threadIdx.x == 0) {
        mbarrier_init(&tile_full, 1);
        fence_mbarrier_init_release_cluster();
    }
    cluster_sync();

    const u32 tx = expect_tx[cta];
    if (threadIdx.x == 0) {
        // Slices from other CTAs may already be landing: the phase cannot complete before this
        // arrival (the pending count is 1), so a transiently negative tx-count is harmless.
        mbarrier_arrive_expect_tx(&tile_full, tx);
        const TmaIssue a = plan[2 * cta + 0];
        const TmaIssue b = plan[2 * cta + 1];
        if (a.cta_mask)
            tma_load_multicast_2d(tile + a.smem_offset, &tmap_a, &tile_full, (u16)a.cta_mask, a.c0, a.c1);
        if (b.cta_mask)
            tma_load_multicast_2d(tile + b.smem_offset, &tmap_b, &tile_full, (u16)b.cta_mask, b.c0, b.c1);
    }

    // On a timeout the thread skips the dump but still reaches the final cluster_sync below, so the
    // other CTAs of the cluster are never left waiting for it there.
    const bool ok = mbarrier_wait<true>(&tile_full, /*parity=*/0, /*barrier_id=*/0, tx);
    if (ok) {
        for (u32 i = threadIdx.x * 16; i < tile_bytes; i += MC_THREADS * 16)
            *reinterpret_cast<uint4*>(out + (u64)cta * tile_bytes + i) = *reinterpret_cast<const uint4*>(tile + i);
    }
    if (threadIdx.x == 0) {
        const uint3 c = cluster_ctaid();
        info[4 * cta + 0] = cluster_ctarank();
        info[4 * cta + 1] = smem_u32(tile);
        info[4 * cta + 2] = c.x;
        info[4 * cta + 3] = c.y;
    }
    __syncwarp();  // barrier.cluster is .aligned: every lane of the warp arrives together
    cluster_sync();
}

// The benchmark: a pipeline of MC_STAGES tile buffers per CTA, a producer thread (warp 0, lane 0)
// and a consumer warp (warp 1), as in CUTLASS's PipelineTmaAsync (include/cutlass/pipeline/sm90_pipeline.hpp).
//   producer: wait stage_empty[s] (every CTA it writes into has released stage s)
//             -> arrive.expect_tx(stage_full[s], tile bytes) -> issue its boxes
//   consumer: wait stage_full[s] (a real consumer would read the tile here)
//             -> release stage s to every producer that wrote into it
// stage_empty[s] of a CTA counts one arrival per CTA that READS what its producer writes: 1 without
// multicast, c with it (the producer's boxes land in all c CTAs, so all c must have let go of
// stage s before the producer may overwrite it there).
//
// The release is where a cluster pipeline spends its time. Lane k of the consumer warp arrives on
// stage_empty[s] of CTA k, so the c arrivals leave as one warp instruction, and with the plain
// mbarrier.arrive.shared::cluster (default .release.cta, as CUTLASS's ClusterBarrier::arrive(cta_id)):
// no cluster-scope fence per arrival. Both waits are the cta-scope try_wait CUTLASS uses.
//
// modes (bwlab.checks.multicast.BENCH_MODES):
//   0 own        : every CTA loads the whole tile itself; its stage_empty counts its own consumer.
//   1 multicast  : CTA r issues boxes r, r+c, ... with the whole cluster in the mask.
//   2 sync-only  : the multicast handshake of mode 1 with no data (expect_tx 0, no copies).
//   3 sync-serial: the first version's handshake, kept as a baseline measured in the same run:
//                  one thread arrives on the c CTAs one after another with
//                  mbarrier.arrive.release.cluster, and both waits acquire at cluster scope.
#ifndef MC_STAGES
#define MC_STAGES 3
#endif

enum BenchMode : u32 { MODE_OWN = 0, MODE_MULTICAST = 1, MODE_SYNC_ONLY = 2, MODE_SYNC_SERIAL = 3 };

extern "C" __global__ void __cluster_dims__(CLUSTER_X, CLUSTER_Y, 1) __launch_bounds__(MC_THREADS)
tma_multicast_bench(const __grid_constant__ TmaDescriptor tmap,
                    u32 mode, u32 iters, u32 boxes_per_tile, u32 box_rows, u32 box_bytes,
                    u32 tiles_in_source, u64* __restrict__ clocks)  // [cta][start, end] %globaltimer
{
    extern __shared__ u8 smem_raw[];
    __shared__ alignas(8) u64 stage_full[MC_STAGES];   // barrier 0
    __shared__ alignas(8) u64 stage_empty[MC_STAGES];  // barrier 1
    u8* tiles = align_1024(smem_raw);
    const u32 cta = blockIdx.x + gridDim.x * blockIdx.y;
    const u32 c = cluster_nctarank();
    const u32 rank = cluster_ctarank();
    const u32 warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const u16 all_ctas = (u16)((1u << c) - 1u);
    const u32 cluster_id = cta / c;
    const u32 tile_bytes = boxes_per_tile * box_bytes;
    const u32 tx = (mode == MODE_OWN || mode == MODE_MULTICAST) ? tile_bytes : 0u;
    const bool serial = mode == MODE_SYNC_SERIAL;
    const u32 readers = mode == MODE_OWN ? 1u : c;  // arrivals stage_empty counts per phase

    if (threadIdx.x == 0) {
        for (int s = 0; s < MC_STAGES; ++s) {
            mbarrier_init(&stage_full[s], 1);
            mbarrier_init(&stage_empty[s], readers);
        }
        fence_mbarrier_init_release_cluster();
    }
    cluster_sync();

    if (warp == 0 && lane == 0) {  // producer
        for (u32 it = 0; it < iters; ++it) {
            const u32 s = it % MC_STAGES, use = it / MC_STAGES;
            if (use > 0) {
                const u32 parity = (use - 1) & 1u;
                const bool ok = serial ? mbarrier_wait<true>(&stage_empty[s], parity, 1, 0)
                                       : mbarrier_wait<false>(&stage_empty[s], parity, 1, 0);
                if (!ok) break;
            }
            mbarrier_arrive_expect_tx(&stage_full[s], tx);
            u8* dst = tiles + s * tile_bytes;
            // Each cluster reads its own tile of the source, a different one every iteration.
            const int row0 = (int)(((cluster_id + it) % tiles_in_source) * boxes_per_tile * box_rows);
            if (mode == MODE_OWN) {
                for (u32 b = 0; b < boxes_per_tile; ++b)
                    tma_load_2d(dst + b * box_bytes, &tmap, &stage_full[s], 0, row0 + (int)(b * box_rows));
            } else if (mode == MODE_MULTICAST) {
                for (u32 b = rank; b < boxes_per_tile; b += c)
                    tma_load_multicast_2d(dst + b * box_bytes, &tmap, &stage_full[s], all_ctas, 0,
                                          row0 + (int)(b * box_rows));
            }
        }
    } else if (warp == 1) {  // consumer warp
        if (lane == 0) clocks[2 * cta] = globaltimer_ns();
        for (u32 it = 0; it < iters; ++it) {
            const u32 s = it % MC_STAGES, use = it / MC_STAGES;
            if (serial) {
                if (lane == 0) {
                    if (!mbarrier_wait<true>(&stage_full[s], use & 1u, 0, 0)) break;
                    for (u32 k = 0; k < c; ++k)
                        mbarrier_arrive_cluster(mapa_shared_cluster(smem_u32(&stage_empty[s]), k));
                }
                continue;
            }
            if (!mbarrier_wait<false>(&stage_full[s], use & 1u, 0, tx)) break;
            if (mode == MODE_OWN) {
                if (lane == 0) mbarrier_arrive(&stage_empty[s]);
            } else if (lane < c) {
                mbarrier_arrive_remote(mapa_shared_cluster(smem_u32(&stage_empty[s]), lane));
            }
        }
        if (lane == 0) clocks[2 * cta + 1] = globaltimer_ns();
    }
    // No CTA leaves while others may still multicast into it or arrive on its barriers.
    __syncwarp();
    cluster_sync();
}
