// bwlab-targets: sm_90a
// GEMM ladder, Hopper, the decode rung — swap A and B, stream B once.
//
// At decode shapes (M = 16 .. 256 rows of A against N = K = 8192) the work is reading B: 128 MiB of it
// for 2-34 GFLOP, so the time is B's bytes over the HBM bandwidth, not the math. The ladder's 128-row
// tiles waste most of the MMA on rows A does not have, and split-K (sk) pays a round trip of f32
// partials through a global workspace. Here the roles swap: C^T = B A^T. B's rows fill wgmma's M = 64
// (CONSUMERS warpgroups, one 64-row slab of B each), and A's M rows are wgmma's N (MT = 16, 32, 64, 128
// or 256, the smallest that holds M; the rows past M come in as zeros from TMA's out-of-bounds fill and
// are never stored). Each CTA streams its slab of B once, through a ring as deep as the SMEM holds
// (`stages`, from the host), each stage KB boxes of 64 K. The host picks CONSUMERS, SPLIT and KB per MT
// (bwlab/gemm/decode.py, from the H200 probes in docs/results/decode_probe_h200.txt): larger boxes per
// stage read B in longer runs of each row and stream faster, as long as the ring keeps 3 or more stages.
// A_STAGES = R > 0 (the table's choice at M = 64, 128, 256): A in a ring of its own, R stages deep, loaded
// by a second producer thread, and B's ring as deep as the rest of the SMEM holds. With one ring, A's
// boxes take as much of each stage as B's (MT = 64, 128) or twice as much (256), so B, which comes from
// DRAM, had only 3-4 stages in flight; A comes from L2. A ring of 2 for A was far slower (every CTA
// reads the same A boxes at once: they arrive late), 3-5 won: M = 128 from 46 to 42 us on the H200
// (decode_probe_h200.txt, 13-15). Each consumer step waits on both rings' `full` and frees both.
// A_SHARE = 2: the two CTAs of a cluster (rows of B of their own, the same K) share A's ring, each
// multicasting every other box into both, a slot refilled once both CTAs' consumers have freed it. A's
// traffic out of L2 halves, yet it was slower at M = 16-64 (the pair's slots pace both CTAs; 16): the
// table keeps A_SHARE = 1.
// SPLIT = 2 or 4: the CTAs of a cluster take the pieces of K for the same rows of B, so SPLIT times as
// many CTAs stream B and each reads only its piece of A. With 4 consumers (256 rows of B sharing each
// A tile) and 4 pieces, A's traffic out of L2 is a quarter of one consumer's, yet on the H200 that is
// slower at M = 64 and 128 (and at N = 8192 its 32 clusters of 4 do not all fit at once): the table
// keeps 1 or 2 consumers and SPLIT <= 2 (docs/results/decode_probe_h200.txt, 6-7). The partial sums meet
// through distributed shared memory, not a global workspace: once every ring of the cluster is drained
// (a cluster barrier), each CTA writes the columns each other CTA stores into that CTA's SMEM
// (st.shared::cluster), a second cluster barrier, and each adds the partials of its columns in the
// order of the pieces, ((p0 + p1) + p2) + p3, and stores them: C does not depend on which CTA stores
// which columns.
// With `groups` = G > 0 (even rows) the grid is G CTAs (clusters), not one per 64 x CONSUMERS rows of B:
// at N = 8192 the tile grid is 128 CTAs and leaves 4 of an H200's 132 SMs idle, while 132 CTAs of 62 or
// 64 rows each (boxes still 64 rows, wgmma's M) keep every SM streaming; each stores only its own rows.
// On the H200 that came within 1.4 % of the tile grid at M = 16 .. 128 (decode_probe_h200.txt, 9): what
// holds the rung back is each CTA's streaming rate, not the 4 idle SMs; the table keeps the tile grid.
// STAGGER = 1: cluster q of Q starts its piece of K at stage q k_iters / Q and wraps round, so that the
// clusters do not all ask for the same A box and the same 128-byte column of their rows at once; on the
// H200 it was slightly slower at every M (decode_probe_h200.txt, 17): the table keeps STAGGER = 0.
// EARLY_RELEASE = 1 (the table's choice at M <= 128): a consumer waits for its own wgmma on a stage
// (wait_group 0) and hands the stage back at once, instead of keeping one stage's wgmma in flight and
// handing back the stage before only once the next one's are issued (wait_group 1). When B is what the
// consumer waits for, the wait_group-1 loop holds a stage whose math is long done while the next one is
// still on its way: one stage of the ring is never in flight. Handing it back early puts the whole ring
// in flight; the wgmma chain drains between stages, which costs little where the math is a small part of
// a stage (M = 16: 37.4 -> 36.2 us on the H200, M = 128: 41.8 -> 40.8) and more than the stage buys where
// it is most of it (M = 256: 58.1 -> 60.6; decode_probe_h200.txt, 26).
// The accumulator is C^T (64 rows of N x MT columns of M); the store transposes it back: lanes t and
// t ^ 4 hold rows n, n + 1 of the same columns, swap one value (shfl) and each writes a bf16 pair of
// one row of C.
// MSPLIT = 2 (cuBLAS's shape at M = 256): the two CTAs of a cluster split M, not K. Both own the same
// 64 x CONSUMERS rows of B and each its half of A's MT rows (wgmma's N = MT / 2), over the whole of K, so
// no partials meet: each stores its own rows of C. B's stage is shared: each CTA loads half of its boxes
// with one TMA multicast that lands in both CTAs' SMEM at the same offset and completes bytes on both
// CTAs' `full` barriers (each expects the whole stage). A stage is refilled only once the consumers of
// both CTAs have released it: every consumer warp arrives on its own CTA's `empty` barrier and on its
// partner's (mapa + a remote arrive), as the ladder's s5 does. The CTAs meet at a cluster barrier after
// set-up (no multicast before the partner's barriers exist) and before exit (no remote arrival or
// multicast into a CTA that has left). L2 serves each byte of B once per pair, and each CTA's ring
// holds only half of A per stage: finer stages (KB = 1) in a deeper ring. On the H200 it ran at 0.65
// (KB = 1) to 0.92 (KB = 2) of the table's K split over the pair at M = 128 and 256, plain and with PDL
// (docs/results/decode_probe_h200.txt, 10), though cuBLAS's kernel of this shape is faster than the
// table's. With A in a ring of its own (A_STAGES, each CTA its own half of A's rows) and the early
// hand-back it is still far slower (30), and as slow with each CTA loading all of B itself, no multicast
// (31): not the pair's shared ring, then; nor the bytes it brings into each SM (all of its rows of B
// and half of A over all of K, 4 MiB at M = 256 against 3 with K split), which rings with no MMA take
// in in about 44 us (32). Where its time goes is not measured. The table keeps the K split.
// Launched with programmatic dependent launch (bwlab.pdl), a grid starts before the one ahead of it in
// the stream has finished: every CTA lets the next grid be scheduled at once (launch_dependents), the
// producer loads B (the weights, which no earlier kernel writes) for the first pass round the ring,
// then waits (griddepcontrol.wait) for the grid ahead to complete before it loads A (the activations
// an earlier kernel may write) and before C is written. Launched plainly both are no-ops. DECODE_MINB
// = 2 sizes the registers (and the host the ring) for two CTAs per SM, so that a CTA of the next grid
// fits beside one of this grid; on the H200 the half-deep rings lost far more than the overlap gained
// (decode_probe_h200.txt, 8), so the table keeps one CTA per SM.
#include "gemm_sm90/gemm_common.cuh"

using namespace ladder;

#ifndef DECODE_MT
#define DECODE_MT 128      // wgmma's N: the host builds the smallest of 16 .. 256 that holds M
#endif
#ifndef DECODE_CONSUMERS
#define DECODE_CONSUMERS 1 // consumer warpgroups, 64 rows of B each (1, 2 or 4)
#endif
#ifndef DECODE_SPLIT
#define DECODE_SPLIT 1     // CTAs of a cluster splitting K (1, 2 or 4)
#endif
#ifndef DECODE_MSPLIT
#define DECODE_MSPLIT 1    // CTAs of a cluster splitting M (1 or 2; 2 only with SPLIT = 1)
#endif
#ifndef DECODE_KB
#define DECODE_KB 2        // boxes of 64 K per stage
#endif
#ifndef DECODE_MINB
#define DECODE_MINB 1      // CTAs per SM the registers are budgeted for (2: a CTA of the next grid fits beside)
#endif
#ifndef DECODE_A_STAGES
#define DECODE_A_STAGES 0  // 0: A's boxes in B's ring; R > 0: A in a ring of its own, R stages deep
#endif
#ifndef DECODE_STAGGER
#define DECODE_STAGGER 0   // 1: each cluster starts its walk along K at its own offset (see `kstep` below)
#endif
#ifndef DECODE_EARLY_RELEASE
#define DECODE_EARLY_RELEASE 0  // 1: a consumer hands each stage back once its own wgmma are done (see the loop)
#endif
#ifndef DECODE_A_SHARE
#define DECODE_A_SHARE 1   // 2: two CTAs of a cluster (their own rows of B, the same K) share A's ring by multicast
#endif
constexpr int BN = 64, MT = DECODE_MT, CONSUMERS = DECODE_CONSUMERS, SPLIT = DECODE_SPLIT, KB = DECODE_KB;
constexpr bool STAGGER = DECODE_STAGGER != 0, EARLY_RELEASE = DECODE_EARLY_RELEASE != 0;
constexpr int MINB = DECODE_MINB, MSPLIT = DECODE_MSPLIT, A_STAGES = DECODE_A_STAGES, A_SHARE = DECODE_A_SHARE;
constexpr int A_RING = A_STAGES > 0 ? A_STAGES : 1;   // A's barrier arrays and slot arithmetic (1: unused)
constexpr int CL_ROWS = SPLIT * MSPLIT;   // CTAs of a cluster that work on the same rows of B
constexpr int CL = CL_ROWS * A_SHARE;     // CTAs of a cluster
constexpr int NT = MT / MSPLIT;      // wgmma's N in each CTA: its rows of A
static_assert(MINB == 1 || MINB == 2, "registers for one or two CTAs per SM");
static_assert(A_STAGES == 0 || (A_STAGES >= 2 && A_STAGES <= 32), "A's own ring: 2 to 32 stages");
static_assert(A_SHARE == 1 || (A_SHARE == 2 && A_STAGES > 0 && SPLIT == 1 && MSPLIT == 1 && KB % 2 == 0),
              "A shared by a pair: A in its own ring, K and M whole, an even number of boxes per stage");
constexpr int MAX_STAGES = 32, THREADS = WG * (1 + CONSUMERS);
constexpr u32 B_BOX = BN * BK * 2;   // one 64-row box of B: 8 KiB
static_assert(MT == 16 || MT == 32 || MT == 64 || MT == 128 || MT == 256, "wgmma's N");
static_assert(CONSUMERS == 1 || CONSUMERS == 2 || CONSUMERS == 4, "one, two or four consumer warpgroups");
static_assert(SPLIT == 1 || SPLIT == 2 || SPLIT == 4, "K in one piece, two or four (a cluster of that many)");
static_assert(MSPLIT == 1 || (MSPLIT == 2 && SPLIT == 1), "M split in two across a cluster, K then in one piece");
static_assert(NT >= 16, "wgmma's N in each CTA: at least 16 rows of A");
static_assert(KB * CONSUMERS % MSPLIT == 0, "each CTA of the pair multicasts the same number of B's boxes");
static_assert(MT / 8 % SPLIT == 0, "each CTA of the cluster stores whole 8-column groups of the accumulator");
// Registers: with setmaxnreg ptxas gives every thread the most __launch_bounds__ allows (65536 / THREADS,
// down to a multiple of 8); the producer gives some back (dec) and the consumers take them (inc) from
// that same CTA pool, so PRODUCER_REGS x 128 + CONSUMER_REGS x 128 x CONSUMERS must fit in it (or the
// inc waits for ever). 0 and 0: no setmaxnreg.
#ifndef DECODE_PRODUCER_REGS
#define DECODE_PRODUCER_REGS (CONSUMERS == 1 ? 0 : CONSUMERS == 2 ? 40 : 24)
#endif
#ifndef DECODE_CONSUMER_REGS
#define DECODE_CONSUMER_REGS (CONSUMERS == 1 ? 0 : CONSUMERS == 2 ? 232 : 112)
#endif
constexpr int PRODUCER_REGS = DECODE_PRODUCER_REGS, CONSUMER_REGS = DECODE_CONSUMER_REGS;
constexpr int POOL_REGS = 65536 / MINB / THREADS / 8 * 8 * THREADS;
static_assert((PRODUCER_REGS == 0) == (CONSUMER_REGS == 0), "setmaxnreg in both roles or in neither");
static_assert(int(WG) * (PRODUCER_REGS + CONSUMERS * CONSUMER_REGS) <= POOL_REGS,
              "the registers the roles ask for exceed the CTA's pool");

// Programmatic dependent launch (PTX ISA, griddepcontrol; sm_90): launched with the attribute
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, this grid may start while the grid before it in
// the stream still runs, once every CTA of that grid has executed launch_dependents (or exited).
// wait blocks the executing thread until the grids it depends on have completed and their memory
// operations are visible to it. Launched without the attribute both are no-ops (the grid before has
// completed when this one starts), so one kernel serves both launches.
__device__ __forceinline__ void grid_launch_dependents() {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}
#ifndef DECODE_GRID_WAIT
#define DECODE_GRID_WAIT 1   // 0: the waits left out (a negative control: a PDL chain must then fail its check)
#endif
__device__ __forceinline__ void grid_wait() {
    if (DECODE_GRID_WAIT) asm volatile("griddepcontrol.wait;" ::: "memory");
}

// One stage for one consumer: KB boxes x 4 k16 steps of wgmma m64nNk16, B's 64 rows as the A operand,
// A's N rows as the B operand, both K-major in 128B-swizzled SMEM.
template <int N>
__device__ __forceinline__ void mma_stage_t(float (&d)[N / 2], u32 b_slab, u32 a_stage) {
#pragma unroll
    for (int kb = 0; kb < KB; ++kb)
#pragma unroll
        for (int k = 0; k < BK / 16; ++k) {
            const u64 db = desc_k128(b_slab + kb * CONSUMERS * B_BOX + 32 * k);
            const u64 da = desc_k128(a_stage + kb * N * 128 + 32 * k);
            if constexpr (N == 16) wgmma_mma_async_m64n16k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
            else if constexpr (N == 32) wgmma_mma_async_m64n32k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
            else if constexpr (N == 64) wgmma_mma_async_m64n64k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
            else if constexpr (N == 128) wgmma_mma_async_m64n128k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
            else wgmma_mma_async_m64n256k16_f32_bf16_bf16<0, 0>(d, db, da, 1u);
        }
}

// After wgmma.wait_group 0: every accumulator register "rewritten" by an empty asm, so that no read of
// it (the exchange's stores, the shuffles) is moved above the wait by the compiler (the registers are
// not operands of the wait itself).
template <int R>
__device__ __forceinline__ void pin(float (&d)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// One stage of B: KB x CONSUMERS boxes of 64 rows x 64 K from row n0, K column k0. MSPLIT = 1: all of them
// into this CTA's SMEM. MSPLIT = 2: this CTA (`half`) loads every other box, multicast to both CTAs of the
// pair (cta mask 0b11) at the same offset, completing bytes on each CTA's barrier at that address.
__device__ __forceinline__ void load_b(u8* sB, const TmaDescriptor* tma_b, u64* bar, int k0, int n0, int half) {
#pragma unroll
    for (int kb = 0; kb < KB; ++kb)
#pragma unroll
        for (int c = 0; c < CONSUMERS; ++c) {
            const int box = kb * CONSUMERS + c;
            if (MSPLIT == 1)
                tma_load_2d(sB + box * B_BOX, tma_b, bar, k0 + kb * BK, n0 + BN * c);
            else if (box % MSPLIT == half)
                tma_load_multicast_2d(sB + box * B_BOX, tma_b, bar, 0x3, k0 + kb * BK, n0 + BN * c);
        }
}

extern "C" __global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(THREADS, MINB)
gemm(const __grid_constant__ TmaDescriptor tma_a, const __grid_constant__ TmaDescriptor tma_b,
     const __grid_constant__ TmaDescriptor tma_c, u16* __restrict__ C, int M, int N, int K, u64* stamps,
     int stages, int groups) {
    extern __shared__ u8 smem_raw[];
    // stage s: KB x (CONSUMERS boxes of B, 64 x 64 each), then KB boxes of A (NT x 64: this CTA's rows).
    // A_STAGES > 0: B's ring holds B alone (`stages` of B_BYTES), then A's own ring (A_STAGES of A_BYTES):
    // B comes from DRAM and needs many bytes in flight, A is read by every CTA and comes from L2 (shorter
    // latency), so a few stages of A free the SMEM for a deeper ring of B.
    u8* smem = align_1024(smem_raw);
    __shared__ alignas(8) u64 full[MAX_STAGES], empty[MAX_STAGES];
    __shared__ alignas(8) u64 full_a[A_RING], empty_a[A_RING];
    constexpr u32 B_BYTES = KB * CONSUMERS * B_BOX, A_BYTES = KB * NT * BK * 2;
    constexpr u32 STAGE_BYTES = A_STAGES ? B_BYTES : B_BYTES + A_BYTES;   // one stage of (B's) ring
    const int wg = threadIdx.x / WG, rank = CL > 1 ? int(cluster_ctarank()) : 0;
    const int piece = SPLIT > 1 ? rank : 0;    // this CTA's piece of K
    const int half = MSPLIT > 1 ? rank : 0;    // this CTA's half of A's rows (MSPLIT = 2)
    const int m0 = half * NT;
    // This CTA's rows of B (and columns of C), [n0, n1): groups = 0, the tile grid: BN x CONSUMERS rows per
    // cluster; groups = G > 0, even rows: G clusters share N's rows, cluster i the even-aligned
    // [2 floor(i (N/2) / G), 2 floor((i + 1) (N/2) / G)) (at most BN x CONSUMERS rows, the host checks). It
    // loads whole boxes from n0 on: the rows past n1 are its neighbour's (read by it at about the same time,
    // so from L2) or past N (TMA's zero fill), and are never stored.
    const int grp = blockIdx.x / CL_ROWS;   // A_SHARE = 2: each CTA of the pair has rows of its own
    const int n0 = groups ? 2 * int((long long)grp * (N / 2) / groups) : grp * (BN * CONSUMERS);
    const int n1 = groups ? 2 * int((long long)(grp + 1) * (N / 2) / groups) : n0 + BN * CONSUMERS;
    const int k_iters = K / (KB * BK * SPLIT), it0 = piece * k_iters;   // this CTA's K piece, in stages
    // STAGGER: cluster q of Q starts its piece of K at stage floor(q k_iters / Q) and wraps round, so that at
    // any moment the clusters read different columns of B and different boxes of A (without it every CTA
    // asks for the same A box, and for the same 128-byte column of its rows of B, at the same time)
    const int rot = STAGGER ? int((long long)(blockIdx.x / CL) * k_iters / (gridDim.x / CL)) : 0;
    auto kstep = [&](int it) { return it0 + (it + rot) % k_iters; };   // the K stage of iteration it
    if (threadIdx.x == 0) {
        for (int s = 0; s < stages; ++s) {
            mbarrier_init(&full[s], 1);
            mbarrier_init(&empty[s], MSPLIT * CONSUMERS * 4);   // one arrival per consumer warp (of both CTAs)
        }
        for (int s = 0; s < A_STAGES; ++s) {
            mbarrier_init(&full_a[s], 1);
            mbarrier_init(&empty_a[s], A_SHARE * CONSUMERS * 4);   // the consumer warps of both CTAs (A_SHARE = 2)
        }
        fence_mbarrier_init_release_cluster();
    }
    // the next grid may be scheduled now: its CTAs take SMs as this grid's leave (or beside them, where
    // SMEM and registers leave room), and read only B until this grid has completed
    grid_launch_dependents();
    if (MSPLIT > 1 || A_SHARE > 1) cluster_sync();   // the partner's barriers exist before any multicast or remote arrival
    else __syncthreads();

    if (wg == 0) {
        if constexpr (PRODUCER_REGS > 0) setmaxnreg_dec<PRODUCER_REGS>();
        if (threadIdx.x == 0) {
            // B (the weights: no grid before this one writes them) for the stages of the first pass
            // round the ring, then wait for the grid before (which may write A, the activations, and
            // read or write C), then A for those stages; from then on B and A together (A_STAGES > 0:
            // B alone, A's own thread waits for the grid before on its own)
            const int first = k_iters < stages ? k_iters : stages;
            for (int it = 0; it < first; ++it) {
                u8* sB = smem + it * STAGE_BYTES;
                mbarrier_arrive_expect_tx(&full[it], STAGE_BYTES);
                load_b(sB, &tma_b, &full[it], kstep(it) * KB * BK, n0, half);
            }
            grid_wait();
            // A's own ring: B alone here, its whole ring ahead of the consumers; A in a thread of its
            // own (below), so that neither ring's wait holds the other's loads back
            for (int it = first; A_STAGES > 0 && it < k_iters; ++it) {
                const int s = it % stages;
                stamp(stamps, 0, it, 0);
                if (!mbarrier_wait(&empty[s], (it / stages + 1) & 1, 2, 0)) break;
                mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);
                load_b(smem + s * STAGE_BYTES, &tma_b, &full[s], kstep(it) * KB * BK, n0, half);
                stamp(stamps, 0, it, 1);
            }
            for (int it = 0; A_STAGES == 0 && it < k_iters; ++it) {
                const int s = it % stages;
                stamp(stamps, 0, it, 0);
                if (it >= stages && !mbarrier_wait(&empty[s], (it / stages + 1) & 1, 2, 0)) break;
                u8* sB = smem + s * STAGE_BYTES;
                if (it >= first) mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);
                if (it >= first) load_b(sB, &tma_b, &full[s], kstep(it) * KB * BK, n0, half);
#pragma unroll
                for (int kb = 0; kb < KB; ++kb)
                    tma_load_2d(sB + B_BYTES + kb * NT * 128, &tma_a, &full[s], (kstep(it) * KB + kb) * BK, m0);
                stamp(stamps, 0, it, 1);
            }
        }
        if (A_STAGES > 0 && threadIdx.x == 32) {   // A's own ring, from the producer warpgroup's second warp
            grid_wait();   // A may be written by the grid before
            for (int it = 0; it < k_iters; ++it) {
                const int sa = it % A_RING;
                if (it >= A_STAGES && !mbarrier_wait(&empty_a[sa], (it / A_RING + 1) & 1, 4, 0)) break;
                u8* sA = smem + stages * STAGE_BYTES + sa * A_BYTES;
                mbarrier_arrive_expect_tx(&full_a[sa], A_BYTES);   // the whole stage, half of it from the partner
#pragma unroll
                for (int kb = 0; kb < KB; ++kb) {
                    if (A_SHARE == 1)
                        tma_load_2d(sA + kb * NT * 128, &tma_a, &full_a[sa], (kstep(it) * KB + kb) * BK, m0);
                    else if (kb % A_SHARE == rank)   // every other box, into both CTAs' rings at the same offset
                        tma_load_multicast_2d(sA + kb * NT * 128, &tma_a, &full_a[sa], 0x3, (kstep(it) * KB + kb) * BK, m0);
                }
            }
        }
        if (SPLIT > 1) {   // the consumers' two cluster barriers (every thread of the cluster meets them)
            cluster_sync();
            cluster_sync();
        }
        if (MSPLIT > 1 || A_SHARE > 1) cluster_sync();   // the partner may still multicast into or arrive on this CTA
        return;
    }

    if constexpr (CONSUMER_REGS > 0) setmaxnreg_inc<CONSUMER_REGS>();
    const int c = wg - 1, t = threadIdx.x % WG;
    const bool lead = t == 0;
    if (lead && c == 0) cta_stamp(stamps, 0);   // (stamped builds: every CTA's start, first and last stage, end)
    float d[NT / 2];
    zero(d);
    wgmma_fence();
    bool ok = true;
    // hand stage i (B's slot, and A's) back to the producer: one arrival per consumer warp
    auto release = [&](int i) {
        if (lead) stamp(stamps, 1 + c, i, 1);
        if (laneid() == 0) {
            mbarrier_arrive(&empty[i % stages]);
            if (A_STAGES > 0) mbarrier_arrive(&empty_a[i % A_RING]);
            if (A_SHARE > 1)   // the partner's copy: it multicast into this CTA's ring of A too
                mbarrier_arrive_remote(mapa_shared_cluster(smem_u32(&empty_a[i % A_RING]), u32(rank ^ 1)));
            if (MSPLIT > 1)   // the partner's copy of the stage's barrier: it multicast into this ring too
                mbarrier_arrive_remote(mapa_shared_cluster(smem_u32(&empty[i % stages]), u32(rank ^ 1)));
        }
    };
    for (int it = 0; it < k_iters; ++it) {
        const int s = it % stages;
        if (!mbarrier_wait(&full[s], (it / stages) & 1, 1, STAGE_BYTES)) {
            ok = false;
            break;
        }
        if (lead) stamp(stamps, 1 + c, it, 0);
        if (lead && c == 0 && (it == 0 || it == k_iters - 1)) cta_stamp(stamps, it == 0 ? 1 : 2);
#ifdef DECODE_STAGE_STAMPS   // (probe builds) when each stage of this CTA landed, after the per-CTA stamps: clock64,
        // cheap to read where %globaltimer is not (the host maps it to ns by the CTA's first and last stamps)
        if (lead && c == 0 && stamps != nullptr)
            stamps[TRACKS * EVENTS * 4 + CTA_WORDS * gridDim.x + size_t(blockIdx.x) * k_iters + it] = clock64();
#endif
        if constexpr (A_STAGES > 0) {
            if (!mbarrier_wait(&full_a[it % A_STAGES], (it / A_STAGES) & 1, 3, A_BYTES)) {
                ok = false;
                break;
            }
        }
        const u32 sB = smem_u32(smem + s * STAGE_BYTES);
        const u32 sA = A_STAGES ? smem_u32(smem + stages * STAGE_BYTES) + u32(it % A_RING) * A_BYTES
                                : sB + B_BYTES;
        mma_stage_t<NT>(d, sB + c * B_BOX, sA);
        wgmma_commit_group();
        if constexpr (EARLY_RELEASE) {   // this stage's wgmma done, its slot back before the next stage lands
            wgmma_wait_group<0>();
            wgmma_fence();   // the accumulators, handed back by the wait, go to the next stage's wgmma
            release(it);
        } else {
            wgmma_wait_group<1>();   // keep this stage's wgmma in flight; hand back the stage before
            if (it > 0) release(it - 1);
        }
    }
    wgmma_wait_group<0>();
    pin(d);
    grid_wait();   // before C is written (here it returns at once: the producer's wait came first)
    if (lead && !EARLY_RELEASE) stamp(stamps, 1 + c, k_iters - 1, 1);
    if (lead) stamp(stamps, 3, c, 0);

    // Columns j in [j0, j1) of the accumulator (8 of C's rows each) are this CTA's to store.
    constexpr int J = NT / 8, Q = J / SPLIT;   // Q: the columns each CTA of the cluster stores
    const int j0 = piece * Q, j1 = j0 + Q;
    if (SPLIT > 1) {
        // The exchange buffer reuses the ring: [consumer][slot][j - j0][thread] float4 for the columns
        // this CTA stores, slot (p - piece - 1) mod SPLIT holding CTA p's partial (SPLIT - 1 slots),
        // written by the other CTAs once every ring of the cluster is drained (the first barrier), read
        // here after the second.
        const u32 xbuf = smem_u32(smem) + u32(c * (SPLIT - 1) * Q * WG) * 16u;
        cluster_sync();
        // (the loops run over every j with a test, so that d is indexed by constants and stays in registers)
        if (ok) {
#pragma unroll
            for (int j = 0; j < J; ++j) {
                const int owner = j / Q;   // the CTA that stores column j
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
                    float s[4];
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
                        for (int e = 0; e < 4; ++e) s[e] = p == 0 ? v[e] : __fadd_rn(s[e], v[e]);
                    }
#pragma unroll
                    for (int e = 0; e < 4; ++e) d[4 * j + e] = s[e];
                }
        }
    }
    if (ok) {
        // d[i] = C^T[16 w + g + 8 h][8 j + 2 q + e] (w = warp, g = lane / 4, q = lane % 4, i = 4 j + 2 h + e):
        // the lane with g even keeps column e = 0 and takes its row-(n + 1) neighbour's value there; the
        // lane with g odd keeps column e = 1 and takes its row-(n - 1) neighbour's value
        const int g = (t % 32) / 4, q = t % 4;
        const bool odd = g & 1;
        const int n = n0 + BN * c + 16 * (t / 32) + (g & ~1);
#pragma unroll
        for (int j = 0; j < J; ++j) {
            if (j < j0 || j >= j1) continue;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const float lo = d[4 * j + 2 * h], hi = d[4 * j + 2 * h + 1];
                const float got = __shfl_xor_sync(0xffffffffu, odd ? lo : hi, 4);
                const int m = m0 + 8 * j + 2 * q + (odd ? 1 : 0);
                const u32 pair = odd ? cvt_rn_bf16x2_f32(got, hi) : cvt_rn_bf16x2_f32(lo, got);
                if (m < M && n + 8 * h < n1) *reinterpret_cast<u32*>(C + size_t(m) * N + n + 8 * h) = pair;
            }
        }
    }
    if (lead) stamp(stamps, 3, c, 1);
    if (lead && c == 0) cta_stamp(stamps, 3);
    if (MSPLIT > 1 || A_SHARE > 1) cluster_sync();   // the partner may still arrive on this CTA's barriers until it is done
}
