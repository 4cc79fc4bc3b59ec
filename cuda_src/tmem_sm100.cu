// bwlab-targets: sm_100a
// Stage 4 (notebook 04): TMEM round trips through every tcgen05.ld / tcgen05.st form.
//
// One CTA of 4 warps (a warpgroup: warp w owns TMEM lanes 32w .. 32w+31):
//   warp 0     tcgen05.alloc 512 columns; the address lands in SMEM
//   all        tcgen05 fences around __syncthreads, then read the address from SMEM
//   each warp  fill its 32 lanes x 512 columns from `image` (row-major [lane][column]) with
//              tcgen05.st.32x32b.x32, then tcgen05.wait::st
//   tmem_ld_roundtrip: each warp issues the load under test at column `col0` (twice for the 16-lane
//              shapes: lanes 32w and 32w+16), tcgen05.wait::ld, registers -> `regs_out`
//              laid out [warp][half][thread][register]
//   tmem_st_roundtrip: each warp stores `regs_in` (same layout) with the store under test,
//              tcgen05.wait::st, then reads its whole quarter back with .32x32b -> `image_out`
//   warp 0     tcgen05.dealloc, tcgen05.relinquish_alloc_permit
// No mbarrier is waited on: tcgen05.ld/st complete through tcgen05.wait::ld / ::st in the warp that
// issued them, and the warps share nothing but the address.
//
// The form under test is a template: <kShape, kNum, kPack, kOff>, kShape indexing
// {32x32b, 16x64b, 16x128b, 16x256b, 16x32bx2} (bwlab.tmem.SHAPE_CODE), kPack selecting
// .pack::16b / .unpack::16b, kOff the .16x32bx2 half-split offset. bwlab.tmem compiles every form
// through NVRTC name expressions; the defaults below give one instantiation of each kernel.
#include "ptx.cuh"

#ifndef TMEM_SHAPE
#define TMEM_SHAPE 3   // .16x256b
#endif
#ifndef TMEM_NUM
#define TMEM_NUM 8
#endif
#ifndef TMEM_PACK
#define TMEM_PACK 0
#endif
#ifndef TMEM_OFF
#define TMEM_OFF 0
#endif

constexpr u32 kTmemColumns = 512;

template <int kShape>
__host__ __device__ constexpr int regs_per_num() { return kShape == 2 ? 2 : (kShape == 3 ? 4 : 1); }
template <int kShape>
__host__ __device__ constexpr int lanes_per_instr() { return kShape == 0 ? 32 : 16; }

// The load under test, by template parameters.
template <int kShape, int kNum, int kPack, u32 kOff, int R>
__device__ __forceinline__ void ld_form(u32 (&r)[R], u32 taddr) {
    if constexpr (kShape == 0) {
        if constexpr (kPack) tcgen05_ld_32x32b_pack_16b<kNum>(r, taddr);
        else tcgen05_ld_32x32b<kNum>(r, taddr);
    } else if constexpr (kShape == 1) {
        if constexpr (kPack) tcgen05_ld_16x64b_pack_16b<kNum>(r, taddr);
        else tcgen05_ld_16x64b<kNum>(r, taddr);
    } else if constexpr (kShape == 2) {
        if constexpr (kPack) tcgen05_ld_16x128b_pack_16b<kNum>(r, taddr);
        else tcgen05_ld_16x128b<kNum>(r, taddr);
    } else if constexpr (kShape == 3) {
        if constexpr (kPack) tcgen05_ld_16x256b_pack_16b<kNum>(r, taddr);
        else tcgen05_ld_16x256b<kNum>(r, taddr);
    } else {
        if constexpr (kPack) tcgen05_ld_16x32bx2_pack_16b<kNum, kOff>(r, taddr);
        else tcgen05_ld_16x32bx2<kNum, kOff>(r, taddr);
    }
}

// The store under test.
template <int kShape, int kNum, int kPack, u32 kOff, int R>
__device__ __forceinline__ void st_form(u32 taddr, const u32 (&r)[R]) {
    if constexpr (kShape == 0) {
        if constexpr (kPack) tcgen05_st_32x32b_unpack_16b<kNum>(taddr, r);
        else tcgen05_st_32x32b<kNum>(taddr, r);
    } else if constexpr (kShape == 1) {
        if constexpr (kPack) tcgen05_st_16x64b_unpack_16b<kNum>(taddr, r);
        else tcgen05_st_16x64b<kNum>(taddr, r);
    } else if constexpr (kShape == 2) {
        if constexpr (kPack) tcgen05_st_16x128b_unpack_16b<kNum>(taddr, r);
        else tcgen05_st_16x128b<kNum>(taddr, r);
    } else if constexpr (kShape == 3) {
        if constexpr (kPack) tcgen05_st_16x256b_unpack_16b<kNum>(taddr, r);
        else tcgen05_st_16x256b<kNum>(taddr, r);
    } else {
        if constexpr (kPack) tcgen05_st_16x32bx2_unpack_16b<kNum, kOff>(taddr, r);
        else tcgen05_st_16x32bx2<kNum, kOff>(taddr, r);
    }
}

// Warp 0 allocates all 512 columns; everyone learns the address through SMEM.
__device__ __forceinline__ u32 alloc_all_columns(u32* taddr_slot) {
    if (warpid_in_cta() == 0) tcgen05_alloc(taddr_slot, kTmemColumns);
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    return *taddr_slot;
}

__device__ __forceinline__ void free_all_columns(u32 tmem_base) {
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    if (warpid_in_cta() == 0) {
        tcgen05_dealloc(tmem_base, kTmemColumns);
        tcgen05_relinquish_alloc_permit();
    }
}

// This warp's 32 lanes x 512 columns <- image[lane][column], 32 columns per tcgen05.st.
__device__ __forceinline__ void fill_quarter(u32 quarter_addr, const u32* image, u32 lane) {
    for (u32 c = 0; c < kTmemColumns; c += 32) {
        u32 v[32];
        for (int j = 0; j < 32; ++j) v[j] = image[lane * kTmemColumns + c + j];
        tcgen05_st_32x32b_x32(quarter_addr + c, v);
    }
    tcgen05_wait_st();
}

template <int kShape, int kNum, int kPack, u32 kOff>
__global__ void __launch_bounds__(128, 1)
tmem_ld_roundtrip(const u32* __restrict__ image, u32* __restrict__ regs_out, u32 col0) {
    constexpr int R = kNum * regs_per_num<kShape>();
    constexpr int kHalves = 32 / lanes_per_instr<kShape>();
    __shared__ alignas(16) u32 taddr_slot;
    const u32 tmem_base = alloc_all_columns(&taddr_slot);
    const u32 warp = warpid_in_cta(), t = laneid();
    const u32 quarter_lane = 32 * (warp % 4);
    fill_quarter(tmem_base + (quarter_lane << 16), image, quarter_lane + t);

    for (int half = 0; half < kHalves; ++half) {
        u32 r[R];
        ld_form<kShape, kNum, kPack, kOff>(r, tmem_base + ((quarter_lane + 16 * half) << 16) + col0);
        tcgen05_wait_ld();  // the registers are not valid before this
        u32* out = regs_out + ((warp * kHalves + half) * 32 + t) * R;
        for (int j = 0; j < R; ++j) out[j] = r[j];
    }
    free_all_columns(tmem_base);
}

template <int kShape, int kNum, int kPack, u32 kOff>
__global__ void __launch_bounds__(128, 1)
tmem_st_roundtrip(const u32* __restrict__ image, const u32* __restrict__ regs_in,
                  u32* __restrict__ image_out, u32 col0) {
    constexpr int R = kNum * regs_per_num<kShape>();
    constexpr int kHalves = 32 / lanes_per_instr<kShape>();
    __shared__ alignas(16) u32 taddr_slot;
    const u32 tmem_base = alloc_all_columns(&taddr_slot);
    const u32 warp = warpid_in_cta(), t = laneid();
    const u32 quarter_lane = 32 * (warp % 4);
    const u32 quarter_addr = tmem_base + (quarter_lane << 16);
    fill_quarter(quarter_addr, image, quarter_lane + t);

    for (int half = 0; half < kHalves; ++half) {
        u32 r[R];
        const u32* in = regs_in + ((warp * kHalves + half) * 32 + t) * R;
        for (int j = 0; j < R; ++j) r[j] = in[j];
        st_form<kShape, kNum, kPack, kOff>(tmem_base + ((quarter_lane + 16 * half) << 16) + col0, r);
    }
    tcgen05_wait_st();  // our stores have landed before we read the quarter back
    for (u32 c = 0; c < kTmemColumns; c += 32) {
        u32 v[32];
        tcgen05_ld_32x32b_x32(v, quarter_addr + c);
        tcgen05_wait_ld();
        for (int j = 0; j < 32; ++j) image_out[(quarter_lane + t) * kTmemColumns + c + j] = v[j];
    }
    free_all_columns(tmem_base);
}

// One instantiation of each kernel with the default macros, so the file builds on its own.
template __global__ void tmem_ld_roundtrip<TMEM_SHAPE, TMEM_NUM, TMEM_PACK, TMEM_OFF>(
    const u32*, u32*, u32);
template __global__ void tmem_st_roundtrip<TMEM_SHAPE, TMEM_NUM, TMEM_PACK, TMEM_OFF>(
    const u32*, const u32*, u32*, u32);
