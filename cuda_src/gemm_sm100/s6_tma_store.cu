// bwlab-targets: sm_100a
// GEMM ladder, Blackwell, step 6 — the epilogue stores C through SMEM with the TMA.
//
// What changed since step 5: the epilogue no longer writes C from registers. In steps 1-5 thread t
// stored its own row, 16 bytes at a time: one st.global of a warp touched 32 rows, 32 separate
// 16-byte pieces, and the warp waited on those stores' issue. Now each epilogue warp, for every
// 64 columns of its 32 rows:
//   1. reads them from TMEM (two tcgen05.ld.32x32b.x32), rounds them to bf16;
//   2. writes them into a 4 KiB staging box in SMEM with st.shared.v4, in the 128B-swizzled layout
//      the TMA expects (16-byte chunk c of row r at chunk c ^ (r % 8): no bank conflicts);
//   3. fence.proxy.async.shared::cta (its generic-proxy writes before the TMA's async-proxy reads),
//      __syncwarp, and one lane issues cp.async.bulk.tensor (tma_c: a 64 x 32 box of C) and
//      cp.async.bulk.commit_group.
// Each warp has two staging boxes and alternates: before refilling one it waits until at most one
// store is still reading (cp.async.bulk.wait_group.read 1).
// Why it should help: the TMA writes C in whole 128-byte rows, a full line per row instead of 32
// scattered 16-byte pieces per instruction, and the warp goes on to the next columns (and hands the
// accumulator back sooner) while the stores drain in the background.
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
constexpr u32 EPI_COLS = 64;                 // columns per staging box: 64 bf16 = one 128-byte row
constexpr u32 BOX_BYTES = 32 * EPI_COLS * 2;  // 4 KiB: a warp's 32 rows x 64 columns
constexpr u32 SMEM_D = STAGES * STAGE_BYTES;  // staging: warp q's boxes at SMEM_D + (2q + b) * BOX_BYTES
constexpr u32 SMEM_BYTES = SMEM_D + 4 * 2 * BOX_BYTES + 1024;
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
static_assert(SMEM_D % 1024 == 0 && BOX_BYTES % 1024 == 0, "staging boxes on the 128B swizzle's 1024-byte span");
static_assert(BN % EPI_COLS == 0 && EPI_COLS == 2 * LD_COLS, "two tcgen05.ld per staging box");

// 64 accumulator columns of this thread's row as bf16, written as row `r` of a 128B-swizzled box at
// `box` (1024-byte aligned): 16-byte chunk c (columns 8c .. 8c + 7) goes to chunk c ^ (r % 8).
__device__ __forceinline__ void row_to_swizzled_box(const u32 (&lo)[32], const u32 (&hi)[32], u32 box, u32 r) {
#pragma unroll
    for (u32 c = 0; c < 8; ++c) {
        const u32* v = c < 4 ? lo + 8 * c : hi + 8 * (c - 4);
        st_shared_v4_b32(swizzle_address(box + 128 * r + 16 * c, 3), bf16x2(v[0], v[1]), bf16x2(v[2], v[3]),
                         bf16x2(v[4], v[5]), bf16x2(v[6], v[7]));
    }
}

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
        const u32 staging = base + SMEM_D + 2 * q * BOX_BYTES;
        u32 acc = 0, boxes = 0;
        for (u32 t = pair; t < tiles && ok; t += pairs, ++acc) {
            const u32 buf = acc % ACC_BUFS, acc_phase = (acc / ACC_BUFS) & 1;
            const uint2 tile = tile_of<GROUP_M>(t, tiles_m, tiles_n);
            if (lane == 0) stamp(st, TRACK_EPILOGUE + q, acc, 0);
            ok = __any_sync(0xffffffffu, wait<true>(&tmem_full[buf], acc_phase, BAR_TMEM_FULL, 0, error)) != 0;
            if (!ok) break;
            tcgen05_fence_after_thread_sync();
            const u32 taddr = tmem + buf * BN + ((32 * q) << 16);
            const int row0 = tile.x * CLUSTER * BM + rank * BM + 32 * q;  // the warp's first row of C
            for (u32 c = 0; c < BN; c += EPI_COLS, ++boxes) {
                const u32 box = staging + (boxes % 2) * BOX_BYTES;
                if (lane == 0) bulk_wait_group_read<1>();  // the store from this box two boxes ago has read it
                __syncwarp();
                u32 lo[LD_COLS], hi[LD_COLS];
                tcgen05_ld_32x32b<int(LD_COLS)>(lo, taddr + c);
                tcgen05_ld_32x32b<int(LD_COLS)>(hi, taddr + c + LD_COLS);
                tcgen05_wait_ld();
                row_to_swizzled_box(lo, hi, box, lane);
                fence_proxy_async_shared_cta();  // these st.shared before the TMA engine reads the box
                __syncwarp();
                if (lane == 0) {
                    tma_store_2d(&tma_c, smem + (box - base), tile.y * BN + c, row0);
                    bulk_commit_group();
                }
            }
            tcgen05_fence_before_thread_sync();
            __syncwarp();
            if (lane == 0) mbarrier_arrive_cluster(mapa_shared_cluster(smem_u32(&tmem_empty[buf]), 0));
            if (lane == 0) stamp(st, TRACK_EPILOGUE + q, acc, 1);
        }
        if (lane == 0) bulk_wait_group<0>();  // every store has finished before the CTA may exit
        __syncwarp();
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
