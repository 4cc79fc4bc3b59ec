// bwlab-targets: sm_90a
// GEMM ladder, Hopper, the second decode rung — B straight from global memory into wgmma's registers.
//
// The first decode rung (sd_swap_ab.cu) streams B through a TMA ring into SMEM and reads it back with
// wgmma. On an H200 it tops out near 0.89 of a read-only stream of the same bytes, whatever the ring's
// depth and stage size; plain 16-byte loads that walk each CTA's rows of B the way this kernel does reach
// 0.97-0.99 of the stream (docs/results/decode_ldg_probe.txt). So here B never touches SMEM: each consumer
// thread loads its part of B with ld.global.nc into registers, AHEAD blocks of 64 K before it needs them,
// rearranges them with warp shuffles into wgmma's A-operand fragment, and wgmma takes A from registers
// (C^T = B A^T as before: B's 64 rows are wgmma's M, A's MT rows its N). Only A, which every CTA reads
// and L2 serves, comes through SMEM: a ring of `stages` boxes of MT x 64, loaded by TMA from one producer
// warp. K split over a cluster of SPLIT CTAs and the DSMEM sum of the partials are sd_swap_ab's.
//
// The fragment (PTX ISA, wgmma register fragment for A, .bf16): in warp w of the warpgroup, lane (g, q) =
// (lane / 4, lane % 4) holds rows 16 w + g and 16 w + g + 8, and of each k16 step the columns 2q, 2q + 1 and
// 2q + 8, 2q + 9. A 64-K block of a row is 128 bytes, eight 16-byte chunks; chunk c holds step c / 2's
// columns 8 (c % 2) .. 8 (c % 2) + 7, and its word (column pair) j belongs to lane q = j. So lane q loads
// chunks q and q + 4 of its two rows (each warp load instruction: 8 rows x 64 contiguous bytes), and the
// four lanes of a quad transpose their 4 x 4 words (two shuffle rounds, xor 1 and xor 2): afterwards lane q
// holds word q of every chunk, which is its fragment for all four steps.
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

#ifndef DECODE_MT
#define DECODE_MT 128      // wgmma's N: the host builds the smallest of 16 .. 256 that holds M
#endif
#ifndef DECODE_CONSUMERS
#define DECODE_CONSUMERS 2 // consumer warpgroups, 64 rows of B each (1 or 2)
#endif
#ifndef DECODE_SPLIT
#define DECODE_SPLIT 2     // CTAs of a cluster splitting K (1, 2 or 4)
#endif
#ifndef DECODE_AHEAD
#define DECODE_AHEAD 4     // 64-K blocks of B each thread has in flight (loaded ahead into registers)
#endif
#ifndef DECODE_GRID_WAIT
#define DECODE_GRID_WAIT 1 // 0: griddepcontrol.wait left out (a negative control: a PDL chain must then fail)
#endif
constexpr int BN = 64, MT = DECODE_MT, CONSUMERS = DECODE_CONSUMERS, SPLIT = DECODE_SPLIT, AHEAD = DECODE_AHEAD;
constexpr int MAX_STAGES = 32, THREADS = WG * CONSUMERS + 32;   // the consumers, then the producer warp
constexpr u32 A_BYTES = MT * BK * 2;                            // one stage: A's MT rows x 64 K
static_assert(MT == 16 || MT == 32 || MT == 64 || MT == 128 || MT == 256, "wgmma's N");
static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups");
static_assert(SPLIT == 1 || SPLIT == 2 || SPLIT == 4, "K in one piece, two or four (a cluster of that many)");
static_assert(AHEAD >= 2 && AHEAD <= 8, "2 to 8 blocks of B in flight per thread");
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
    const int c = block * 8;   // 16-byte chunks from the row's start
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

// The four k16 steps' A fragments of one block: f[s] = {row g cols 2q.. of step s, row g+8 the same,
// row g cols 2q+8.., row g+8 the same}. Chunk c (step c / 2, half c % 2) of row g is t[0][c] after the
// transpose of chunks 0..3 (c < 4) or t[1][c - 4] (chunks 4..7); of row g + 8, t[2] and t[3].
__device__ __forceinline__ void fragments(u32 (&f)[4][4], const Raw& r, int q) {
    u32 t[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        t[i][0] = r.x[i].x; t[i][1] = r.x[i].y; t[i][2] = r.x[i].z; t[i][3] = r.x[i].w;
        quad_transpose(t[i], q);
    }
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        const int c0 = 2 * s, c1 = 2 * s + 1, lo = c0 < 4 ? 0 : 1;
        f[s][0] = t[lo][c0 % 4];
        f[s][1] = t[2 + lo][c0 % 4];
        f[s][2] = t[lo][c1 % 4];
        f[s][3] = t[2 + lo][c1 % 4];
    }
}

template <int N>
__device__ __forceinline__ void mma_block(float (&d)[N / 2], const u32 (&f)[4][4], u32 a_stage) {
#pragma unroll
    for (int s = 0; s < 4; ++s) {
        const u64 da = desc_k128(a_stage + 32 * s);
        if constexpr (N == 16) wgmma_rs_m64n16k16_f32_bf16_bf16<0>(d, f[s], da, 1u);
        else if constexpr (N == 32) wgmma_rs_m64n32k16_f32_bf16_bf16<0>(d, f[s], da, 1u);
        else if constexpr (N == 64) wgmma_rs_m64n64k16_f32_bf16_bf16<0>(d, f[s], da, 1u);
        else if constexpr (N == 128) wgmma_rs_m64n128k16_f32_bf16_bf16<0>(d, f[s], da, 1u);
        else wgmma_rs_m64n256k16_f32_bf16_bf16<0>(d, f[s], da, 1u);
    }
}

// Registers "rewritten" by an empty asm: the compiler must have their values in place here, and may not
// move their definitions (or copies of them) past this point. Around wgmma.fence .. commit this keeps every
// instruction that defines a fragment or accumulator register out of the wgmma pipeline stage (ptxas
// would otherwise serialize the wgmma: C7513) and keeps reads of the accumulator after the wait.
template <int R>
__device__ __forceinline__ void pin(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
__device__ __forceinline__ void pin(u32 (&f)[4][4]) {
#pragma unroll
    for (int s = 0; s < 4; ++s)
#pragma unroll
        for (int r = 0; r < 4; ++r) asm volatile("" : "+r"(f[s][r])::"memory");
}

extern "C" __global__ void __cluster_dims__(SPLIT, 1, 1) __launch_bounds__(THREADS, 1)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K, u64* stamps,
     int stages, int groups, const u16* __restrict__ B) {
    extern __shared__ u8 smem_raw[];
    u8* smem = align_1024(smem_raw);   // A's ring: `stages` boxes of MT x 64 (128B swizzle)
    __shared__ alignas(8) u64 full[MAX_STAGES], empty[MAX_STAGES];
    const int wg = threadIdx.x / WG, piece = SPLIT > 1 ? int(cluster_ctarank()) : 0;
    const int n0 = blockIdx.x / SPLIT * (BN * CONSUMERS);   // this CTA's rows of B (columns of C)
    const int blocks = K / (BK * SPLIT), b0 = piece * blocks;   // its 64-K blocks: [b0, b0 + blocks)
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], CONSUMERS * 4);   // one arrival per consumer warp
        }
        fence_mbarrier_init_release_cluster();
    }
    grid_launch_dependents();   // the next grid may be scheduled: it reads only B until this one completes
    __syncthreads();

    if (wg == CONSUMERS) {   // the producer warp: A (the activations an earlier grid may write) after the wait
        if (threadIdx.x % 32 == 0) {
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

    const int c = wg, t = threadIdx.x % WG, lane = t % 32, g = lane / 4, q = lane % 4;
    const bool lead = t == 0;
    // B's rows n0 + 64 c + 16 w + g and + 8, from the first chunk of this CTA's piece, in 16-byte units
    const size_t row = size_t(n0 + BN * c + 16 * (t / 32) + g);
    const uint4* row_g = reinterpret_cast<const uint4*>(B + row * K) + b0 * 8 + q;
    const uint4* row_g8 = row_g + size_t(8) * (K / 8);
    Raw raw[AHEAD];
#pragma unroll
    for (int j = 0; j < AHEAD; ++j)   // B (the weights): loaded before any wait on the grid ahead
        if (j < blocks) load_block(raw[j], row_g, row_g8, j);
    float d[MT / 2];
    zero(d);
    u32 frag[4][4];
    bool ok = true;
    // Blocks in rounds of AHEAD, so that the register arrays are indexed by constants: block i's raw
    // registers are raw[i % AHEAD]. Each block's wgmma are waited for (wait_group 0) before the next
    // block's fragments are written: ptxas serializes every wgmma of a kernel that defines a wgmma's
    // input registers while others are in flight (C7513), which costs more than this wait. The other
    // consumer warpgroup keeps the tensor core busy meanwhile.
    for (int i0 = 0; i0 < blocks && ok; i0 += AHEAD) {
#pragma unroll
        for (int j = 0; j < AHEAD; ++j) {
            const int i = i0 + j;
            if (i >= blocks) break;
            const int s = i % stages;
            fragments(frag, raw[j], q);
            if (i + AHEAD < blocks) load_block(raw[j], row_g, row_g8, i + AHEAD);
            if (!mbarrier_wait(&full[s], (i / stages) & 1, 1, A_BYTES)) {
                ok = false;
                break;
            }
            pin(frag);
            pin(d);
            wgmma_fence();   // the fragments were written by ordinary code
            mma_block<MT>(d, frag, smem_u32(smem + s * A_BYTES));
            wgmma_commit_group();
            pin(d);
            wgmma_wait_group<0>();   // block i's wgmma are done: its A stage and its fragments are free
            if (lane == 0) mbarrier_arrive(&empty[s]);
        }
    }
    pin(d);
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
        const int n = n0 + BN * c + 16 * (t / 32) + (g & ~1);
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
