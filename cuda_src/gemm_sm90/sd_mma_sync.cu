// bwlab-targets: sm_90a
// GEMM ladder, Hopper, the second decode rung — every warp streams its own rows of B, mma.sync on registers.
//
// The first decode rung (sd_swap_ab.cu) streams B through a TMA ring; on an H200 it stays near 0.89 of a
// read-only stream of the same bytes. Threads' 16-byte loads that walk the same rows reach 0.97-0.99 of it
// (docs/results/decode_ldg_probe.txt): there each warp uses its own bytes as they land, while a ring hands a
// stage on, and refills it, only once all of it has landed (decode_probe_h200.txt, 18-20). wgmma cannot take
// B that way: its operands come from SMEM, or, for A, from registers behind a WARPGROUP.ARRIVE that waits for
// every load in flight into the warp's registers. mma.sync has no such wait. So here each warp owns 16 rows
// of B and loads them itself, AHEAD blocks of 64 K ahead of its MMA, straight into registers; a quad of lanes
// transposes its words with shuffles into mma.sync's A fragment (B's rows are the MMA's M: C^T = B A^T, as in
// the first rung), and A's MT rows (the activations, which every warp needs) come through SMEM: a TMA ring
// of 64-K boxes, loaded by one producer warp and read with ldmatrix as the MMA's B fragment. mma.sync runs at
// a fraction of wgmma's rate, which is enough while M is small (the table below stops at M = 64).
//
// Warps: CONSUMERS groups of 4 (64 rows of B each), then the producer warp. In warp w of a group, lane
// (g, q) = (lane / 4, lane % 4) loads rows 16 w + g and + 8, 16-byte chunks q and q + 4 of each 128-byte
// block row (each load instruction of the warp reads 8 rows x 64 contiguous bytes), and after the quad's
// transpose holds word q of every chunk: its fragment for the block's four k16 steps. The accumulator of
// one warp, 16 rows x MT columns in MT / 8 m16n8 tiles, has the layout of a wgmma m64nMT accumulator's part
// for that warp, so the first rung's DSMEM sum of the K pieces (SPLIT CTAs of a cluster) and its transposed
// store of C apply as they are.
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

#ifndef DECODE_MT
#define DECODE_MT 64       // the MMA's N: the host builds the smallest of 16 .. 128 that holds M
#endif
#ifndef DECODE_CONSUMERS
#define DECODE_CONSUMERS 2 // groups of four warps, 64 rows of B each (1 or 2)
#endif
#ifndef DECODE_SPLIT
#define DECODE_SPLIT 2     // CTAs of a cluster splitting K (1, 2 or 4)
#endif
#ifndef DECODE_AHEAD
#define DECODE_AHEAD 4     // blocks of 64 K of B each thread has in flight
#endif
#ifndef DECODE_SKIP
#define DECODE_SKIP 0      // timing probes only (C is wrong): 1 no ldmatrix/mma (the fragments folded into d),
#endif                     // 2 no shuffles, 4 no A ring (no TMA, no waits on it)
#ifndef DECODE_GRID_WAIT
#define DECODE_GRID_WAIT 1 // 0: griddepcontrol.wait left out (a negative control: a PDL chain must then fail)
#endif
constexpr int BN = 64, MT = DECODE_MT, CONSUMERS = DECODE_CONSUMERS, SPLIT = DECODE_SPLIT, AHEAD = DECODE_AHEAD;
constexpr int MAX_STAGES = 32, WARPS = 4 * CONSUMERS, THREADS = 32 * WARPS + 32;   // the consumers, the producer
constexpr u32 A_BYTES = MT * BK * 2;                                               // one stage: A's MT rows x 64 K
static_assert(MT == 16 || MT == 32 || MT == 64 || MT == 128, "the MMA's N: 16 to 128 (two m16n8 tiles per ldmatrix.x4)");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two groups of four warps");
static_assert(SPLIT == 1 || SPLIT == 2 || SPLIT == 4, "K in one piece, two or four (a cluster of that many)");
static_assert(AHEAD >= 1 && AHEAD <= 8, "1 to 8 blocks of B in flight per thread");
static_assert(MT / 8 % SPLIT == 0, "each CTA of the cluster stores whole 8-column groups of the accumulator");

__device__ __forceinline__ void grid_launch_dependents() {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
__device__ __forceinline__ void grid_wait() {
    if (DECODE_GRID_WAIT) asm volatile("griddepcontrol.wait;" ::: "memory");
}

// One 64-K block of one thread's two rows: chunks q and q + 4 of row g (x[0], x[1]) and of row g + 8 (x[2], x[3]).
struct Raw {
    uint4 x[4];
};

__device__ __forceinline__ void load_block(Raw& r, const uint4* row_g, const uint4* row_g8, int block) {
    const int c = block * 8;   // 16-byte chunks from the piece's first
    r.x[0] = __ldg(row_g + c);
    r.x[1] = __ldg(row_g + c + 4);
    r.x[2] = __ldg(row_g8 + c);
    r.x[3] = __ldg(row_g8 + c + 4);
}

// Lanes q = 0..3 of a quad hold v_q[0..3]; afterwards lane q holds (v_0[q], v_1[q], v_2[q], v_3[q]).
__device__ __forceinline__ void quad_transpose(u32 (&v)[4], int q) {
    const bool odd = q & 1, high = q & 2;
#pragma unroll
    for (int p = 0; p < 2; ++p) {   // 2 x 2 blocks: swap with lane q ^ 1 the word of the other parity
        const u32 got = __shfl_xor_sync(0xffffffffu, odd ? v[2 * p] : v[2 * p + 1], 1);
        if (odd) v[2 * p] = got; else v[2 * p + 1] = got;
    }
#pragma unroll
    for (int p = 0; p < 2; ++p) {   // then the 2 x 2 blocks themselves, with lane q ^ 2
        const u32 got = __shfl_xor_sync(0xffffffffu, high ? v[p] : v[p + 2], 2);
        if (high) v[p] = got; else v[p + 2] = got;
    }
}

// The four k16 steps' A fragments of one block (PTX ISA, mma.m16n8k16 .bf16 fragment of A): f[s] = {row g
// columns 2q, 2q+1 of step s; row g+8 the same; row g columns 2q+8, 2q+9; row g+8 the same}. Chunk c (step
// c / 2, half c % 2) of row g is t[0][c] after the transpose of chunks 0..3, t[1][c - 4] of chunks 4..7;
// of row g + 8, t[2] and t[3].
__device__ __forceinline__ void fragments(u32 (&f)[4][4], const Raw& r, int q) {
    u32 t[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        t[i][0] = r.x[i].x; t[i][1] = r.x[i].y; t[i][2] = r.x[i].z; t[i][3] = r.x[i].w;
        if (!(DECODE_SKIP & 2)) quad_transpose(t[i], q);
    }
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        const int c0 = 2 * s, c1 = 2 * s + 1, hi = c0 < 4 ? 0 : 1;
        f[s][0] = t[hi][c0 % 4];
        f[s][1] = t[2 + hi][c0 % 4];
        f[s][2] = t[hi][c1 % 4];
        f[s][3] = t[2 + hi][c1 % 4];
    }
}

// ldmatrix.sync.aligned.m8n8.x4.shared.b16: four 8 x 8 matrices of 16-bit elements, lanes 8i .. 8i + 7 giving
// the row addresses of matrix i; lane (g, q) gets the pair (row g, columns 2q, 2q + 1) of each.
__device__ __forceinline__ void ldmatrix_x4(u32 (&b)[4], u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(b[0]), "=r"(b[1]), "=r"(b[2]), "=r"(b[3]) : "r"(addr) : "memory");
}

// mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32: d (16 x 8, f32) += a (16 x 16) b (16 x 8)
__device__ __forceinline__ void mma_16816(float* d, const u32 (&a)[4], u32 b0, u32 b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// One block: four k16 steps x MT / 8 tiles. A's stage is MT rows x 128 bytes, 128B-swizzled as TMA wrote it
// (16-byte chunk c of row r at r * 128 + (c ^ (r % 8)) * 16). For the tile pair (2p, 2p + 1) and step s,
// ldmatrix.x4's matrices are (tile 2p, chunk 2s), (tile 2p, chunk 2s + 1), (tile 2p + 1, chunk 2s), (tile
// 2p + 1, chunk 2s + 1): lane l gives row 16 p + l % 8 + 8 (l / 16), chunk 2 s + (l / 8) % 2.
__device__ __forceinline__ void mma_block(float (&d)[MT / 2], const u32 (&f)[4][4], u32 a_stage, int lane) {
    const int lr = lane % 8 + 8 * (lane / 16), lc = (lane / 8) % 2;
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int p = 0; p < MT / 16; ++p) {
            const int r = 16 * p + lr, c = 2 * s + lc;
            u32 b[4];
            ldmatrix_x4(b, a_stage + u32(r * 128 + ((c ^ (r % 8)) * 16)));
            mma_16816(&d[8 * p], f[s], b[0], b[1]);
            mma_16816(&d[8 * p + 4], f[s], b[2], b[3]);
        }
}

extern "C" __global__ void __cluster_dims__(SPLIT, 1, 1) __launch_bounds__(THREADS, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K, u64* stamps,
     int stages, int groups, const u16* __restrict__ B) {
    // (tma_b, tma_c and groups are the first rung's: the host passes both rungs the same arguments, and B)
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);   // A's ring: `stages` boxes of MT x 64 (128B swizzle)
    __shared__ alignas(8) u64 full[MAX_STAGES], empty[MAX_STAGES];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int piece = SPLIT > 1 ? int(cluster_ctarank()) : 0;
    const int n0 = blockIdx.x / SPLIT * (BN * CONSUMERS);      // this CTA's rows of B (columns of C)
    const int blocks = K / (BK * SPLIT), b0 = piece * blocks;   // its 64-K blocks: [b0, b0 + blocks)
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], WARPS);   // one arrival per consumer warp
        }
        fence_mbarrier_init_release_cluster();
    }
    grid_launch_dependents();   // the next grid may be scheduled: it reads only B until this one completes
    __syncthreads();

    if (warp == WARPS) {   // the producer warp: A (the activations an earlier grid may write) after the wait
        if (lane == 0 && !(DECODE_SKIP & 4)) {
            grid_wait();
            for (int i = 0; i < blocks; ++i) {
                const int s = i % stages;
                if (i >= stages && !mbarrier_wait(&empty[s], (i / stages + 1) & 1, 2, 0)) break;
                mbarrier_arrive_expect_tx(&full[s], A_BYTES);
                tma_load_2d(smem + s * A_BYTES, &tma_a, &full[s], (b0 + i) * BK, 0);
            }
        }
        if (SPLIT > 1) {   // the consumers' two cluster barriers (every thread of the cluster meets them)
            cluster_sync();
            cluster_sync();
        }
        return;
    }

    const int c = warp / 4, t = threadIdx.x % WG, g = lane / 4, q = lane % 4;
    const bool lead = t == 0;
    // B's rows n0 + 64 c + 16 w + g and + 8 (w = warp % 4), from the first chunk of this CTA's piece, in 16 bytes
    const size_t row = size_t(n0 + BN * c + 16 * (warp % 4) + g);
    const uint4* row_g = reinterpret_cast<const uint4*>(B + row * K) + size_t(b0) * 8 + q;
    const uint4* row_g8 = row_g + size_t(8) * (K / 8);
    Raw raw[AHEAD];
#pragma unroll
    for (int j = 0; j < AHEAD; ++j)   // B (the weights): loaded before any wait on the grid ahead
        if (j < blocks) load_block(raw[j], row_g, row_g8, j);
    float d[MT / 2];
    zero(d);
    u32 frag[4][4];
    bool ok = true;
    // blocks in rounds of AHEAD, so that the raw registers are indexed by constants (block i's: raw[i % AHEAD])
    for (int i0 = 0; i0 < blocks && ok; i0 += AHEAD) {
#pragma unroll
        for (int j = 0; j < AHEAD; ++j) {
            const int i = i0 + j;
            if (i >= blocks) break;
            const int s = i % stages;
            fragments(frag, raw[j], q);
            if (i + AHEAD < blocks) load_block(raw[j], row_g, row_g8, i + AHEAD);
            if (!(DECODE_SKIP & 4) && !mbarrier_wait(&full[s], (i / stages) & 1, 1, A_BYTES)) {
                ok = false;
                break;
            }
            if (DECODE_SKIP & 1) {
#pragma unroll
                for (int e = 0; e < 16; ++e) d[e % (MT / 2)] += __uint_as_float(frag[e / 4][e % 4] & 0x3f800000u);
            } else {
                mma_block(d, frag, smem_u32(smem + s * A_BYTES), lane);
            }
            __syncwarp();   // every lane's ldmatrix of this stage is done before the warp frees it
            if (lane == 0 && !(DECODE_SKIP & 4)) mbarrier_arrive(&empty[s]);
        }
    }
    grid_wait();   // before C is written (C may be read by the grid ahead)
    if (lead) stamp(stamps, 3, c, 0);

    // Columns j in [j0, j1) of the accumulator (8 of C's rows each) are this CTA's to store; the other
    // CTAs of the cluster send their partials of them (sd_swap_ab.cu's exchange, A's ring reused).
    constexpr int J = MT / 8, Q = J / SPLIT;
    const int j0 = piece * Q, j1 = j0 + Q;
    if (SPLIT > 1) {
        const u32 xbuf = smem_u32(smem) + u32(c * (SPLIT - 1) * Q * WG) * 16u;
        cluster_sync();
        if (ok) {
#pragma unroll
            for (int j = 0; j < J; ++j) {
                const int owner = j / Q;
                if (owner == piece) continue;
                const u32 slot = u32((piece - owner - 1 + SPLIT) % SPLIT);
                const u32 peer = mapa_shared_cluster(xbuf, u32(owner));
                st_shared_cluster_v4_b32(peer + u32((slot * Q + j % Q) * WG + t) * 16u, __float_as_uint(d[4 * j]),
                                         __float_as_uint(d[4 * j + 1]), __float_as_uint(d[4 * j + 2]),
                                         __float_as_uint(d[4 * j + 3]));
            }
        }
        cluster_sync();
        if (ok) {
#pragma unroll
            for (int j = 0; j < J; ++j)
                if (j >= j0 && j < j1) {   // add.rn in the order of the pieces, (p0 + p1) + ..., in every CTA
                    float sum[4];
#pragma unroll
                    for (int p = 0; p < SPLIT; ++p) {
                        float v[4] = {d[4 * j], d[4 * j + 1], d[4 * j + 2], d[4 * j + 3]};
                        if (p != piece) {
                            u32 w[4];
                            const u32 slot = u32((p - piece - 1 + SPLIT) % SPLIT);
                            ld_shared_v4_b32(xbuf + u32((slot * Q + j % Q) * WG + t) * 16u, w);
#pragma unroll
                            for (int e = 0; e < 4; ++e) v[e] = __uint_as_float(w[e]);
                        }
#pragma unroll
                        for (int e = 0; e < 4; ++e) sum[e] = p == 0 ? v[e] : __fadd_rn(sum[e], v[e]);
                    }
#pragma unroll
                    for (int e = 0; e < 4; ++e) d[4 * j + e] = sum[e];
                }
        }
    }
    if (ok) {
        // the store transposes C^T back (sd_swap_ab.cu): lanes g and g ^ 1 swap one value, each writes a
        // bf16 pair of one row of C
        const bool odd = g & 1;
        const int n = n0 + BN * c + 16 * (warp % 4) + (g & ~1);
#pragma unroll
        for (int j = 0; j < J; ++j) {
            if (j < j0 || j >= j1) continue;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float lo = d[4 * j + 2 * h], hi = d[4 * j + 2 * h + 1];
                const float got = __shfl_xor_sync(0xffffffffu, odd ? lo : hi, 4);
                const int m = 8 * j + 2 * q + (odd ? 1 : 0);
                const u32 pair = odd ? cvt_rn_bf16x2_f32(got, hi) : cvt_rn_bf16x2_f32(lo, got);
                if (m < M) *reinterpret_cast<u32*>(C + size_t(m) * N + n + 8 * h) = pair;
            }
        }
    }
    if (lead) stamp(stamps, 3, c, 1);
}
