// bwlab-targets: sm_90a
// GEMM ladder, Hopper, the skinny rung — split-K with the reduction inside the kernel.
//
// Step 4 gives each CTA whole 128 x 256 tiles. For C = 128 x 8192 there are 32 of them: 32 SMs work
// and 100 wait, and the time is that of 32 SMs streaming B (128 MB) through their TMA units. Here
// each tile's K range is cut into `splits` pieces and a work unit is (tile, piece): 32 tiles x 4
// pieces = 128 units fill the SMs, and B streams through all of them. A unit's partial sum goes to a
// workspace in f32 (in the accumulator's own fragment order: register i of thread t at [i][t], so a
// warp's stores are whole 128-byte lines); then one thread counts the unit in on the tile's arrival
// counter (an atomic add). The unit that arrives last adds the pieces' partials in piece order 0, 1,
// ... (so C does not depend on which unit finished last), writes C, and sets the counter back to 0
// for the next launch. Nobody waits for anybody: a unit that is not last moves on.
// Ordering: the partial stores, __threadfence, the warpgroup barrier, then the atomic; the last unit
// reads the partials after its atomic, a barrier and __threadfence, with ld.global.cg (L2, not L1).
// splits = 1 is step 4 with the pieces' loop bounds.
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

constexpr int BM = 128, BN = 256, STAGES = 4, CONSUMERS = 2, GROUP_M = 16;
constexpr u32 A_BYTES = BM * BK * 2, B_BYTES = BN * BK * 2, STAGE_BYTES = A_BYTES + B_BYTES;
constexpr int HALF_FLOATS = WG * BN / 2;   // one consumer's 64 x 256 accumulator

// Unit u: piece u / tiles of tile u % tiles, so the units running together share their A piece.
struct Unit {
    int2 tile;
    int index, piece, kt0, kt1;
};
__device__ __forceinline__ Unit unit_of(int u, int tiles, int tiles_m, int tiles_n, int k_tiles, int splits) {
    Unit w;
    w.index = u % tiles;
    w.piece = u / tiles;
    w.tile = tile_of<GROUP_M>(w.index, tiles_m, tiles_n);
    w.kt0 = w.piece * k_tiles / splits;
    w.kt1 = (w.piece + 1) * k_tiles / splits;
    return w;
}

// The last unit of a tile: the sum of every piece's partial, its own included (read back from L2),
// written to C in store_rows's fragment layout. The loads go out in batches of J x P = 16 float4 before
// any is added: one at a time, each waited its full L2 latency (~128 in a row per thread), and the
// fix-up took longer than the main loop. A function of its own (not inlined): inlined, its loops made
// ptxas serialize the main loop's wgmma chain (warning C7520).
__device__ __noinline__ void add_pieces(u16* __restrict__ C, int N, const float* __restrict__ partial, Unit w,
                                        int tiles, int splits, int c, int t) {
    constexpr int J = 4, P = 4;
    __threadfence();
    const int row = w.tile.x * BM + 64 * c + 16 * (t / 32) + (t % 32) / 4;
    const int col = w.tile.y * BN + 2 * (t % 4);
    const float4* base = reinterpret_cast<const float4*>(partial) + t;
    for (int j0 = 0; j0 < BN / 8; j0 += J) {
        float4 sum[J];
#pragma unroll
        for (int jj = 0; jj < J; ++jj) sum[jj] = make_float4(0.f, 0.f, 0.f, 0.f);
        for (int p0 = 0; p0 < splits; p0 += P) {
            float4 v[P][J];
#pragma unroll
            for (int q = 0; q < P; ++q)
#pragma unroll
                for (int jj = 0; jj < J; ++jj) {
                    const size_t unit = size_t(min(p0 + q, splits - 1)) * tiles + w.index;
                    v[q][jj] = __ldcg(base + (unit * CONSUMERS + c) * (HALF_FLOATS / 4) + (j0 + jj) * WG);
                }
#pragma unroll
            for (int q = 0; q < P; ++q)       // in piece order, so C does not depend on who came last
#pragma unroll
                for (int jj = 0; jj < J; ++jj)
                    if (p0 + q < splits) {
                        sum[jj].x += v[q][jj].x;
                        sum[jj].y += v[q][jj].y;
                        sum[jj].z += v[q][jj].z;
                        sum[jj].w += v[q][jj].w;
                    }
        }
#pragma unroll
        for (int jj = 0; jj < J; ++jj) {   // store_rows's layout: rows r, r + 8; columns 8 j + 2 (t % 4) + 0, 1
            const int j = j0 + jj;
            *reinterpret_cast<u32*>(C + size_t(row) * N + col + 8 * j) = cvt_rn_bf16x2_f32(sum[jj].x, sum[jj].y);
            *reinterpret_cast<u32*>(C + size_t(row + 8) * N + col + 8 * j) = cvt_rn_bf16x2_f32(sum[jj].z, sum[jj].w);
        }
    }
}

extern "C" __global__ void __launch_bounds__(384, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K, u64* stamps,
     float* __restrict__ partial, u32* __restrict__ arrivals, int splits) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);
    __shared__ alignas(8) u64 full[STAGES], empty[STAGES];
    __shared__ int last[CONSUMERS];

    const int wg = threadIdx.x / WG, k_tiles = K / BK;
    const int tiles_m = M / BM, tiles_n = N / BN, tiles = tiles_m * tiles_n, units = tiles * splits;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], CONSUMERS * 4);
        }
        fence_mbarrier_init_release_cluster();
    }
    __syncthreads();

    if (wg == 0) {
        setmaxnreg_dec<40>();
        if (threadIdx.x == 0) {
            int it = 0;
            for (int u = blockIdx.x; u < units; u += gridDim.x) {
                const Unit w = unit_of(u, tiles, tiles_m, tiles_n, k_tiles, splits);
                for (int kt = w.kt0; kt < w.kt1; ++kt, ++it) {
                    const int s = it % STAGES;
                    stamp(stamps, 0, it, 0);
                    if (it >= STAGES && !mbarrier_wait(&empty[s], (it / STAGES + 1) & 1, 2, 0)) return;
                    u8* sA = smem + s * STAGE_BYTES;
                    mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);
                    tma_load_2d(sA, &tma_a, &full[s], kt * BK, w.tile.x * BM);
                    tma_load_2d(sA + A_BYTES, &tma_b, &full[s], kt * BK, w.tile.y * BN);
                    stamp(stamps, 0, it, 1);
                }
            }
        }
        return;
    }

    setmaxnreg_inc<232>();
    const int c = wg - 1, t = threadIdx.x % WG;
    const bool lead = t == 0;
    float d[BN / 2];
    int it = 0, n_tile = 0;
    for (int u = blockIdx.x; u < units; u += gridDim.x, ++n_tile) {
        const Unit w = unit_of(u, tiles, tiles_m, tiles_n, k_tiles, splits);
        zero(d);
        wgmma_fence();
        for (int kt = w.kt0; kt < w.kt1; ++kt, ++it) {
            const int s = it % STAGES;
            if (!mbarrier_wait(&full[s], (it / STAGES) & 1, 1, STAGE_BYTES)) return;
            if (lead) stamp(stamps, 1 + c, it, 0);
            const u32 sA = smem_u32(smem + s * STAGE_BYTES);
            mma_stage<BN>(d, sA + c * 64 * 128, sA + A_BYTES);
            wgmma_commit_group();
            wgmma_wait_group<1>();
            if (kt > w.kt0) {
                if (lead) stamp(stamps, 1 + c, it - 1, 1);
                if (laneid() == 0) mbarrier_arrive(&empty[(it - 1) % STAGES]);
            }
        }
        wgmma_wait_group<0>();
        if (lead) stamp(stamps, 1 + c, it - 1, 1);
        if (laneid() == 0) mbarrier_arrive(&empty[(it - 1) % STAGES]);
        if (lead) stamp(stamps, 3, 2 * n_tile + c, 0);
        if (splits == 1) {
            store_rows<BN>(d, C, N, w.tile.x * BM + 64 * c, w.tile.y * BN);
        } else {
            // this unit's half-tile partial, then count it in
            float4* mine = reinterpret_cast<float4*>(partial + (size_t(u) * CONSUMERS + c) * HALF_FLOATS);
#pragma unroll
            for (int j = 0; j < BN / 8; ++j)
                __stcg(mine + j * WG + t, make_float4(d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]));
            __threadfence();
            named_barrier_sync(1 + c, WG);
            if (lead) {
                u32* counter = arrivals + w.index * CONSUMERS + c;
                const bool is_last = atomicAdd(counter, 1u) == u32(splits - 1);
                if (is_last) *counter = 0;   // ready for the next launch
                __threadfence();
                last[c] = is_last;
            }
            named_barrier_sync(1 + c, WG);
            const bool is_last = last[c];
            named_barrier_sync(1 + c, WG);   // everyone has read last[c] before the next unit writes it
            if (is_last) add_pieces(C, N, partial, w, tiles, splits, c, t);
        }
        if (lead) stamp(stamps, 3, 2 * n_tile + c, 1);
    }
}
