// bwlab-targets: sm_100a
// GEMM ladder, Blackwell, step 5 — the 2-SM MMA: tcgen05.mma.cta_group::2 on a cluster of two CTAs.
//
// What changed since step 4: CTAs come in pairs (a cluster of 2), and the pair computes one 256 x 256
// tile with M = 256 instructions issued by the even CTA alone. CTA r of the pair holds rows
// 128r .. 128r + 127 of the tile's A slice and rows 128r .. 128r + 127 of its B slice (half of the
// 256 columns); the tensor cores of both SMs read both halves of B through the cluster, and CTA r's
// TMEM receives rows 128r .. of D (all 256 columns: PTX data-path layout A). So:
//   * the operand both halves of the tile share, B, is loaded once for the pair, half by each CTA:
//     per CTA a stage is 32 KiB (A 16 + B 16) instead of 48, for the same 128 x 256 of C;
//   * both CTAs' loads use cp.async.bulk.tensor .cta_group::2 and report their bytes to the even CTA's
//     full[s], which announces the pair's 64 KiB; only the even CTA's MMA warp waits on it;
//   * the even CTA's tcgen05.commit.cta_group::2 ... .multicast::cluster (mask 0b11) arrives on
//     empty[s] / tmem_full[b] in both CTAs, so each producer and each epilogue waits on its own barrier;
//   * the epilogue warps of both CTAs arrive remotely on the even CTA's tmem_empty[b] (count 8);
//   * TMEM is allocated and freed with .cta_group::2 by warp 1 of both CTAs (one .cta_group per kernel).
// With a cluster of exactly two there is no third CTA to multicast an operand to: the sharing of B is
// the split itself (a cluster of four would add TMA multicast of A between two pairs).
// Why it should help: per CTA, SMEM traffic and capacity per stage drop by a third, and the L2 -> SMEM
// bytes per output fall from 48 KiB to 32 KiB per 128 x 256 x 64 step, the bottleneck once the
// pipeline of step 4 keeps the tensor core busy.
#include "gemm_sm100/ladder.cuh"

using namespace ladder100;

constexpr u32 BM = 128, BN = 256;            // per CTA: 128 rows of the pair's 256 x 256 tile
constexpr u32 STAGES = 4;
constexpr u32 THREADS = 192;                 // warp 0 TMA, warp 1 MMA, warps 2-5 epilogue
constexpr u32 CLUSTER = 2;                   // the CTA pair
constexpr u32 A_BYTES = BM * BK * 2;         // 16 KiB: this CTA's 128 rows of A
constexpr u32 B_BYTES = (BN / 2) * BK * 2;   // 16 KiB: this CTA's half of B
constexpr u32 STAGE_BYTES = A_BYTES + B_BYTES;
constexpr u32 SMEM_A = 0;
constexpr u32 SMEM_B = SMEM_A + A_BYTES;
constexpr u32 SMEM_BYTES = STAGES * STAGE_BYTES + 1024;
constexpr u32 ACC_BUFS = 2;
constexpr u32 TMEM_COLS = ACC_BUFS * BN;     // 512 in each CTA of the pair
constexpr u32 LD_COLS = 32;
constexpr u32 GROUP_M = 8;
// kind::f16, bf16 x bf16 -> f32, both K-major, N >> 3 = 32, M >> 4 = 16 (M = 256 across the pair):
// bwlab.umma.make_instr_desc('bf16', 'bf16', 'f32', 256, 256, cta_group=2).
constexpr u32 IDESC = 0x10400490u;
constexpr u64 DESC_HI = 0x4000404000010000ull;  // K-major 128B swizzle, SBO 1024 B (each CTA's slices)
constexpr u32 WARP_TMA = 0, WARP_MMA = 1, WARP_EPILOGUE = 2;
constexpr u16 PAIR_MASK = 0x3;               // both CTAs of the cluster
static_assert(THREADS == 32 * (WARP_EPILOGUE + 4), "four epilogue warps after the TMA and MMA warps");
static_assert(SMEM_BYTES <= 232448, "a CTA may use at most 227 KiB of shared memory");
static_assert(TMEM_COLS <= 512, "TMEM has 512 columns");

extern "C" __global__ void __cluster_dims__(CLUSTER, 1, 1) __launch_bounds__(THREADS, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K,
     unsigned* error, u64* stamps) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);  // the same offset in both CTAs: the MMA's descriptors name both
    const u32 base = smem_u32(smem);
    __shared__ alignas(8) u64 full[STAGES];          // used in the even CTA: both CTAs' bytes land here
    __shared__ alignas(8) u64 empty[STAGES];         // each CTA's own, released by the multicast commit
    __shared__ alignas(8) u64 tmem_full[ACC_BUFS];   // each CTA's own, multicast commit
    __shared__ alignas(8) u64 tmem_empty[ACC_BUFS];  // used in the even CTA: 8 epilogue warps arrive
    __shared__ alignas(8) u64 drained;  // each CTA's own: the even CTA's last multicast commit (teardown)
    __shared__ alignas(16) u32 tmem_slot;
    const u32 warp = warpid_in_cta(), lane = laneid();
    const u32 rank = cluster_ctarank(), pair = blockIdx.x / CLUSTER, pairs = gridDim.x / CLUSTER;
    const bool leader = rank == 0;
    const u32 tiles_m = M / (CLUSTER * BM), tiles_n = N / BN, tiles = tiles_m * tiles_n, k_blocks = K / BK;
    u64* const st = blockIdx.x == 0 ? stamps : nullptr;

    if (threadIdx.x == 0) {
        for (u32 s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);   // the even CTA's arrive.expect_tx
            mbarrier_init(&empty[s], 1);  // one multicast commit
        }
        for (u32 b = 0; b < ACC_BUFS; ++b) {
            mbarrier_init(&tmem_full[b], 1);
            mbarrier_init(&tmem_empty[b], 4 * CLUSTER);
        }
        mbarrier_init(&drained, 1);
        fence_mbarrier_init_release_cluster();
    }
    cluster_sync();  // both CTAs run and their barriers exist before anything crosses the pair
    if (warp == WARP_MMA) {  // the same warp in both CTAs allocates, collectively
        tcgen05_alloc_cta_group2(&tmem_slot, TMEM_COLS);
        tcgen05_relinquish_alloc_permit_cta_group2();
    }
    tcgen05_fence_before_thread_sync();
    cluster_sync();  // both CTAs hold their columns before the even CTA's first MMA writes them
    tcgen05_fence_after_thread_sync();
    const u32 tmem = tmem_slot;
    bool ok = true;

    if (warp == WARP_TMA) {
        if (elect_one_sync()) {
            u32 it = 0;
            for (u32 t = pair; t < tiles && ok; t += pairs) {
                const uint2 tile = tile_of<GROUP_M>(t, tiles_m, tiles_n);
                for (u32 kb = 0; kb < k_blocks; ++kb, ++it) {
                    const u32 s = it % STAGES, phase = (it / STAGES) & 1;
                    stamp(st, TRACK_TMA, it, 0);
                    if (!(ok = wait<true>(&empty[s], phase ^ 1, BAR_EMPTY, 0, error))) break;
                    if (leader) mbarrier_arrive_expect_tx(&full[s], CLUSTER * STAGE_BYTES);
                    const u32 bar = mapa_shared_cluster(smem_u32(&full[s]), 0);  // the even CTA's full[s]
                    tma_load_2d_cta_group2(smem + s * STAGE_BYTES + SMEM_A, &tma_a, bar, kb * BK,
                                           tile.x * CLUSTER * BM + rank * BM);
                    tma_load_2d_cta_group2(smem + s * STAGE_BYTES + SMEM_B, &tma_b, bar, kb * BK,
                                           tile.y * BN + rank * (BN / 2));
                    stamp(st, TRACK_TMA, it, 1);
                }
            }
        }
        __syncwarp();
    } else if (warp == WARP_MMA) {
        if (leader && elect_one_sync()) {  // one thread issues for the pair
            u32 it = 0, acc = 0;
            for (u32 t = pair; t < tiles && ok; t += pairs, ++acc) {
                const u32 buf = acc % ACC_BUFS, acc_phase = (acc / ACC_BUFS) & 1;
                if (!(ok = wait<true>(&tmem_empty[buf], acc_phase ^ 1, BAR_TMEM_EMPTY, 0, error))) break;
                tcgen05_fence_after_thread_sync();
                const u32 d = tmem + buf * BN;
                for (u32 kb = 0; kb < k_blocks; ++kb, ++it) {
                    const u32 s = it % STAGES, phase = (it / STAGES) & 1;
                    stamp(st, TRACK_MMA, it, 0);
                    if (!(ok = wait<true>(&full[s], phase, BAR_FULL, CLUSTER * STAGE_BYTES, error))) break;
                    const u32 a = base + s * STAGE_BYTES + SMEM_A, b = base + s * STAGE_BYTES + SMEM_B;
#pragma unroll
                    for (u32 k = 0; k < BK / UMMA_K; ++k)
                        tcgen05_mma_f16_ss_cta_group2(d, smem_desc(DESC_HI, a + 32 * k),
                                                      smem_desc(DESC_HI, b + 32 * k), IDESC, (kb | k) != 0);
                    tcgen05_commit_multicast_cta_group2(&empty[s], PAIR_MASK);  // both CTAs' stage s
                    stamp(st, TRACK_MMA, it, 1);
                }
                if (ok) tcgen05_commit_multicast_cta_group2(&tmem_full[buf], PAIR_MASK);
            }
            // On every path: both CTAs' `drained` complete once every MMA above has (the teardown waits).
            tcgen05_commit_multicast_cta_group2(&drained, PAIR_MASK);
        }
        __syncwarp();
    } else {
        const u32 q = warp % 4;
        u32 acc = 0;
        for (u32 t = pair; t < tiles && ok; t += pairs, ++acc) {
            const u32 buf = acc % ACC_BUFS, acc_phase = (acc / ACC_BUFS) & 1;
            const uint2 tile = tile_of<GROUP_M>(t, tiles_m, tiles_n);
            if (lane == 0) stamp(st, TRACK_EPILOGUE + q, acc, 0);
            ok = __any_sync(0xffffffffu, wait<true>(&tmem_full[buf], acc_phase, BAR_TMEM_FULL, 0, error)) != 0;
            if (!ok) break;
            tcgen05_fence_after_thread_sync();
            const u32 row = tile.x * CLUSTER * BM + rank * BM + 32 * q + lane;
            tmem_rows_to_gmem<BN, LD_COLS>(tmem + buf * BN + ((32 * q) << 16), C + size_t(row) * N + tile.y * BN);
            tcgen05_fence_before_thread_sync();
            __syncwarp();
            if (lane == 0) mbarrier_arrive_cluster(mapa_shared_cluster(smem_u32(&tmem_empty[buf]), 0));
            if (lane == 0) stamp(st, TRACK_EPILOGUE + q, acc, 1);
        }
    }

    // ---- teardown: both CTAs free TMEM together (tcgen05.dealloc.cta_group::2 is collective), on every
    //      path: a CTA that exits holding TMEM blocks the next one on its SM in tcgen05.alloc. Each MMA warp
    //      first waits for `drained` (the even CTA's last multicast commit): no MMA still writes either
    //      CTA's columns, and every commit arrival into this CTA has landed before it can exit.
    pair_sync();
    if (warp == WARP_MMA) {
        tcgen05_wait_drained<true>(&drained, 0);
        tcgen05_dealloc_cta_group2(tmem, TMEM_COLS);
    }
}
