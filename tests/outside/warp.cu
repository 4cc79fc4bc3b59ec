// Warp-level intrinsics, partial masks, cooperative-group tiles, wmma.
#include <cooperative_groups.h>
#include <mma.h>
namespace cg = cooperative_groups;

extern "C" __global__ void shfl_variants(const int* a, int* out) {
    int t = threadIdx.x, x = a[t];
    int* o = out + 5 * t;
    o[0] = __shfl_xor_sync(0xffffffffu, x, 5);
    o[1] = __shfl_sync(0xffffffffu, x, (t * 7) & 7, 8);
    o[2] = __shfl_up_sync(0xffffffffu, x, 3, 16);
    o[3] = __shfl_down_sync(0xffffffffu, x, 9, 16);
    o[4] = __shfl_sync(0xffffffffu, x, x & 63);
}

extern "C" __global__ void partial_mask(const int* a, int* out) {
    int t = threadIdx.x, x = a[t];
    int r = -1;
    if (t & 1) {
        unsigned m = 0xAAAAAAAAu;
        int v = x;
        for (int o = 2; o < 32; o <<= 1) v += __shfl_xor_sync(m, v, o);
        __syncwarp(m);
        r = v + (int)__ballot_sync(m, x > 0);
    } else if ((t & 3) == 0) {
        unsigned m = 0x11111111u;
        r = __shfl_sync(m, x, 4 * ((t / 4 + 1) & 7)) * 2 + __popc(__ballot_sync(m, x & 4));
    }
    out[t] = r;
}

extern "C" __global__ void vote(const int* a, unsigned* out) {
    int t = threadIdx.x, x = a[t];
    out[4 * t + 0] = __ballot_sync(0xffffffffu, x > 0);
    out[4 * t + 1] = __any_sync(0xffffffffu, x == 17);
    out[4 * t + 2] = __all_sync(0xffffffffu, x != 0);
    unsigned m = 0;
    if (x & 1) m = __ballot_sync(__activemask(), x & 2);
    out[4 * t + 3] = m;
}

extern "C" __global__ void match_sync(const int* a, const long long* b, unsigned* out) {
    int t = threadIdx.x;
    int pred;
    out[4 * t + 0] = __match_any_sync(0xffffffffu, a[t]);
    out[4 * t + 1] = __match_all_sync(0xffffffffu, a[t] & 0x10, &pred);
    out[4 * t + 2] = pred;
    out[4 * t + 3] = __match_any_sync(0xffffffffu, b[t]);
}

extern "C" __global__ void warp_reduce_ops(const unsigned* a, unsigned* out) {
    int t = threadIdx.x;
    unsigned x = a[t];
    out[6 * t + 0] = __reduce_add_sync(0xffffffffu, x);
    out[6 * t + 1] = __reduce_min_sync(0xffffffffu, x);
    out[6 * t + 2] = (unsigned)__reduce_max_sync(0xffffffffu, (int)x);
    out[6 * t + 3] = __reduce_and_sync(0xffffffffu, x | 0x01010101u);
    out[6 * t + 4] = __reduce_or_sync(0xffffffffu, x & 0x00FF00FFu);
    unsigned r = 0;
    if (t & 2) r = __reduce_xor_sync(0xCCCCCCCCu, x);
    out[6 * t + 5] = r;
}

extern "C" __global__ void cg_tiles(const int* a, int* out) {
    cg::thread_block blk = cg::this_thread_block();
    auto t4 = cg::tiled_partition<4>(blk);
    auto t8 = cg::tiled_partition<8>(blk);
    int x = a[blk.thread_rank()];
    int s = x;
    for (int o = 1; o < 4; o <<= 1) s += t4.shfl_xor(s, o);
    int* o = out + 6 * blk.thread_rank();
    o[0] = s;
    o[1] = (int)t4.ballot(x > 0);
    o[2] = t4.any(x == 3);
    o[3] = t8.shfl(x, 7 - (int)t8.thread_rank());
    o[4] = (int)t8.meta_group_rank() * 100 + (int)t8.thread_rank();
    int c = -1;
    if (x & 1) {
        cg::coalesced_group g = cg::coalesced_threads();
        c = (int)g.size() * 100 + (int)g.thread_rank() + g.shfl(x, 0) * 10000;
    }
    o[5] = c;
}

extern "C" __global__ void wmma_gemm(const __half* A, const __half* B, float* C, __half* Ch) {
    using namespace nvcuda;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fragment<wmma::accumulator, 16, 16, 16, __half> acch;
    wmma::fill_fragment(acc, 0.5f);
    wmma::fill_fragment(acch, __float2half(0.0f));
    for (int k = 0; k < 32; k += 16) {
        wmma::load_matrix_sync(fa, A + k, 32);
        wmma::load_matrix_sync(fb, B + k, 32);
        wmma::mma_sync(acc, fa, fb, acc);
        wmma::mma_sync(acch, fa, fb, acch);
    }
    wmma::store_matrix_sync(C, acc, 16, wmma::mem_row_major);
    wmma::store_matrix_sync(Ch, acch, 16, wmma::mem_col_major);
}
