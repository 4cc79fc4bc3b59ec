// bwlab-targets: sm_90a sm_100a
// Stage 1 — the TMA load (notebook 01_tma_load, Python side bwlab/tma/, runner.py).
//
// tma_load_dump: one CTA per test case. The CTA
//   1. paints its SMEM window with a known background (so stray writes show), or with zeros,
//   2. thread 0: mbarrier.init(count 1) -> arrive.expect_tx(box bytes) -> cp.async.bulk.tensor.Nd
//      (optionally first a cp.async.bulk.prefetch.tensor of the same box into L2, and/or a
//      prefetch.tensormap of the descriptor),
//   3. every thread: bounded wait for phase 0 (the TMA engine's complete_tx brings the transaction
//      count to zero, the phase flips),
//   4. a plain arrival must then complete phase 1 at once: it does only if no more bytes were
//      reported than expect_tx announced (the transaction count is exactly zero),
//   5. the raw SMEM window goes to global memory, swizzle and all, for the host to compare with
//      bwlab.tma's model (bwlab/tma/model.py).
// The rank, the coordinates and the SMEM offset are run-time values, so one build serves
// every 1D..5D case and many cases share one launch. Tensor maps live in a global array.
//
// tma_copy_stream: the benchmark. A persistent grid; one thread per CTA keeps STAGES boxes in
// flight: TMA load -> SMEM -> TMA store, each stage reused once its store has read it.
#include "ptx.cuh"

#ifndef TMA_MAX_STAGES
#define TMA_MAX_STAGES 8
#endif

// Mirrors TMA_CASE_DTYPE in bwlab/tma/runner.py; tests/test_struct_mirrors.py reads these static_asserts and
// compares them with the NumPy dtype, so a change on either side fails a test.
struct TmaCase {
    int rank;
    int coords[5];
    u32 smem_offset;   // destination = 1024-aligned window base + smem_offset
    u32 box_bytes;     // what expect_tx announces
    u32 window_bytes;  // SMEM bytes dumped (a multiple of 16)
    u32 flags;         // bit 0: prefetch.tensormap; bit 1: prefetch the box into L2 before loading it;
                       // bit 2: paint the window with zeros instead of the background
    u64 out_offset;    // where the window goes in `out` (a multiple of 16)
};
static_assert(sizeof(TmaCase) == 48, "TmaCase must match TMA_CASE_DTYPE (itemsize 48)");
static_assert(BW_OFFSETOF(TmaCase, rank) == 0, "TmaCase.rank");
static_assert(BW_OFFSETOF(TmaCase, coords) == 4, "TmaCase.coords");
static_assert(BW_OFFSETOF(TmaCase, smem_offset) == 24, "TmaCase.smem_offset");
static_assert(BW_OFFSETOF(TmaCase, box_bytes) == 28, "TmaCase.box_bytes");
static_assert(BW_OFFSETOF(TmaCase, window_bytes) == 32, "TmaCase.window_bytes");
static_assert(BW_OFFSETOF(TmaCase, flags) == 36, "TmaCase.flags");
static_assert(BW_OFFSETOF(TmaCase, out_offset) == 40, "TmaCase.out_offset");

__device__ __forceinline__ u8 background_byte(u32 i) { return static_cast<u8>(i * 151u + 89u); }

__device__ __forceinline__ void tma_load_any(int rank, void* dst, const void* tmap, u64* bar, const int* c) {
    switch (rank) {
        case 1: tma_load_1d(dst, tmap, bar, c[0]); break;
        case 2: tma_load_2d(dst, tmap, bar, c[0], c[1]); break;
        case 3: tma_load_3d(dst, tmap, bar, c[0], c[1], c[2]); break;
        case 4: tma_load_4d(dst, tmap, bar, c[0], c[1], c[2], c[3]); break;
        default: tma_load_5d(dst, tmap, bar, c[0], c[1], c[2], c[3], c[4]); break;
    }
}

__device__ __forceinline__ void tma_prefetch_any(int rank, const void* tmap, const int* c) {
    switch (rank) {
        case 1: tma_prefetch_1d(tmap, c[0]); break;
        case 2: tma_prefetch_2d(tmap, c[0], c[1]); break;
        case 3: tma_prefetch_3d(tmap, c[0], c[1], c[2]); break;
        case 4: tma_prefetch_4d(tmap, c[0], c[1], c[2], c[3]); break;
        default: tma_prefetch_5d(tmap, c[0], c[1], c[2], c[3], c[4]); break;
    }
}

// Barrier ids for bounded waits (LOAD_BARRIERS in bwlab/tma/runner.py names them).
enum { BAR_SMEM_FULL = 0, BAR_TX_EXACT = 1 };

extern "C" __global__ void tma_load_dump(const TmaDescriptor* __restrict__ tmaps,
                                         const TmaCase* __restrict__ cases, u8* __restrict__ out,
                                         u32* __restrict__ done) {
    extern __shared__ u8 smem_raw[];
    __shared__ alignas(8) u64 smem_full;

    const TmaCase p = cases[blockIdx.x];
    if (p.rank < 1 || p.rank > 5) return;  // the host could not encode this case's tensor map
    const TmaDescriptor* tmap = tmaps + blockIdx.x;
    // The window starts on a 1024-byte boundary, so smem_offset alone sets the address bits the
    // swizzle reads (the host allocates 1024 bytes of slack).
    const u32 raw = smem_u32(smem_raw);
    u8* window = smem_raw + (((raw + 1023u) & ~1023u) - raw);

    const bool zeros = (p.flags & 4u) != 0u;
    for (u32 i = threadIdx.x; i < p.window_bytes; i += blockDim.x) window[i] = zeros ? u8(0) : background_byte(i);
    // The background was written by the generic proxy; the TMA writes through the async proxy.
    fence_proxy_async_shared_cta();
    if (threadIdx.x == 0) {
        mbarrier_init(&smem_full, 1);
        fence_mbarrier_init_release_cluster();
    }
    __syncthreads();

    if (threadIdx.x == 0) {
        if (p.flags & 1u) prefetch_tensormap(tmap);
        if (p.flags & 2u) tma_prefetch_any(p.rank, tmap, p.coords);
        mbarrier_arrive_expect_tx(&smem_full, p.box_bytes);
        tma_load_any(p.rank, window + p.smem_offset, tmap, &smem_full, p.coords);
    }
    bool ok = mbarrier_wait(&smem_full, /*parity=*/0, BAR_SMEM_FULL, p.box_bytes);

    // Phase 1 has one pending arrival and (if the count was exact) no transaction bytes.
    if (ok) {
        if (threadIdx.x == 0) {
            __nanosleep(2000);  // let any late complete_tx land first
            mbarrier_arrive(&smem_full);
        }
        ok = mbarrier_wait(&smem_full, /*parity=*/1, BAR_TX_EXACT, 0);
    }
    // The window goes out even after a wait gave up (done stays 0): what did arrive is the clue.
    const uint4* src = reinterpret_cast<const uint4*>(window);
    uint4* dst = reinterpret_cast<uint4*>(out + p.out_offset);
    for (u32 i = threadIdx.x; i < p.window_bytes / 16; i += blockDim.x) dst[i] = src[i];
    if (ok && threadIdx.x == 0) done[blockIdx.x] = 1;
}

// ---------------------------------------------------------------------------------------------
// Streaming copy: src and dst are viewed as 2D tensors [rows][row_elems] with the same tensor-map
// shape; tile t is the box at (x, y) = ((t % tiles_x) * box_x, (t / tiles_x) * box_y).
// ---------------------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(32, 1)
tma_copy_stream(const __grid_constant__ TmaDescriptor src_map, const __grid_constant__ TmaDescriptor dst_map,
                u32 tiles_x, u32 tiles_total, u32 box_x, u32 box_y, u32 tile_bytes, u32 stages) {
    extern __shared__ u8 smem_raw[];
    __shared__ alignas(8) u64 full[TMA_MAX_STAGES];
    if (threadIdx.x != 0) return;

    const u32 raw = smem_u32(smem_raw);
    u8* buf = smem_raw + (((raw + 1023u) & ~1023u) - raw);
    const u32 n_mine = blockIdx.x < tiles_total ? (tiles_total - 1 - blockIdx.x) / gridDim.x + 1 : 0;

    prefetch_tensormap(&src_map);
    prefetch_tensormap(&dst_map);
    for (u32 s = 0; s < stages; ++s) mbarrier_init(&full[s], 1);
    fence_mbarrier_init_release_cluster();

    auto load = [&](u32 k) {  // k-th tile of this CTA into stage k % stages
        const u32 t = blockIdx.x + k * gridDim.x, s = k % stages;
        mbarrier_arrive_expect_tx(&full[s], tile_bytes);
        tma_load_2d(buf + s * tile_bytes, &src_map, &full[s], (t % tiles_x) * box_x, (t / tiles_x) * box_y);
    };
    for (u32 k = 0; k < stages && k < n_mine; ++k) load(k);
    for (u32 k = 0; k < n_mine; ++k) {
        const u32 t = blockIdx.x + k * gridDim.x, s = k % stages;
        if (!mbarrier_wait(&full[s], (k / stages) & 1u, s, tile_bytes)) return;
        fence_proxy_async_shared_cta();
        tma_store_2d(&dst_map, buf + s * tile_bytes, (t % tiles_x) * box_x, (t / tiles_x) * box_y);
        bulk_commit_group();
        // Refill the stage of tile k-1 once its store has finished reading SMEM; keeping one
        // store group open lets the store of tile k overlap the next load.
        if (k >= 1 && k - 1 + stages < n_mine) {
            bulk_wait_group_read<1>();
            load(k - 1 + stages);
        }
    }
    bulk_wait_group<0>();
}
