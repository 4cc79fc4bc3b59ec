// Warp-level primitives: shuffles in every mode and width, votes, match, redux, block-wide
// counting barriers, and tile reductions written with shuffles of width < 32.
#define FULL 0xffffffffu

extern "C" __global__ void warp_shfl_idx(const int* a, const int* src, int* out) {
    int t = threadIdx.x, v = a[t];
    out[4 * t] = __shfl_sync(FULL, v, src[t]);
    out[4 * t + 1] = __shfl_sync(FULL, v, src[t], 16);
    out[4 * t + 2] = __shfl_sync(FULL, v, src[t], 8);
    out[4 * t + 3] = __shfl_sync(FULL, v, 31 - (t & 31), 4);
}

extern "C" __global__ void warp_shfl_up_down(const int* a, int* out) {
    int t = threadIdx.x, v = a[t];
    int* o = out + 6 * t;
    o[0] = __shfl_up_sync(FULL, v, 1); o[1] = __shfl_up_sync(FULL, v, 5, 16); o[2] = __shfl_down_sync(FULL, v, 3);
    o[3] = __shfl_down_sync(FULL, v, 2, 8); o[4] = __shfl_up_sync(FULL, v, 0); o[5] = __shfl_down_sync(FULL, v, 31, 32);
}

extern "C" __global__ void warp_shfl_xor(const float* a, float* out) {
    int t = threadIdx.x; float v = a[t];
    float* o = out + 4 * t;
    o[0] = __shfl_xor_sync(FULL, v, 1); o[1] = __shfl_xor_sync(FULL, v, 16); o[2] = __shfl_xor_sync(FULL, v, 5, 8);
    o[3] = __shfl_xor_sync(FULL, v, 31, 16);
}

extern "C" __global__ void warp_shfl_64bit(const double* a, const long long* b, double* out, long long* out2) {
    int t = threadIdx.x;
    out[t] = __shfl_sync(FULL, a[t], (t * 7) & 31);
    out2[t] = __shfl_down_sync(FULL, b[t], 4) + __shfl_xor_sync(FULL, b[t], 2);
}

extern "C" __global__ void warp_shfl_asm_clamp(const int* a, unsigned* out) {
    int t = threadIdx.x; unsigned r0, r1, r2; unsigned v = a[t];
    asm volatile("shfl.sync.idx.b32 %0, %1, %2, 0x1c1f, 0xffffffff;" : "=r"(r0) : "r"(v), "r"((unsigned)(t + 9)));
    asm volatile("{\n\t.reg .pred p;\n\tshfl.sync.up.b32 %0|p, %2, 3, 0, 0xffffffff;\n\tselp.u32 %1, 1, 0, p;\n\t}"
                 : "=r"(r1), "=r"(r2) : "r"(v));
    out[3 * t] = r0; out[3 * t + 1] = r1; out[3 * t + 2] = r2;
}

extern "C" __global__ void warp_ballot_in_branch(const int* a, unsigned* out) {
    int t = threadIdx.x, lane = t & 31;
    unsigned r = 0xdead;
    if (lane != 0 && a[t] != 7) {
        unsigned m = __activemask();
        r = __ballot_sync(m, a[t] > 0) ^ (m << 1);
    }
    out[t] = r;
}

extern "C" __global__ void warp_votes(const int* a, unsigned* out) {
    int t = threadIdx.x;
    bool p = a[t] > 0;
    out[5 * t] = __ballot_sync(FULL, p);
    out[5 * t + 1] = __any_sync(FULL, p);
    out[5 * t + 2] = __all_sync(FULL, p);
    out[5 * t + 3] = __uni_sync(FULL, a[t] > -100);
    out[5 * t + 4] = (t & 31) < 16 ? __all_sync(0x0000ffffu, p) : 2u;
}

extern "C" __global__ void warp_match(const int* a, const long long* b, unsigned* out) {
    int t = threadIdx.x;
    int pred32, pred64;
    out[4 * t] = __match_any_sync(FULL, a[t]);
    out[4 * t + 1] = __match_all_sync(FULL, a[t] & 1, &pred32);
    out[4 * t + 2] = __match_any_sync(FULL, b[t]);
    out[4 * t + 3] = __match_all_sync(FULL, b[t] >> 40, &pred64) | (pred32 << 30) | (pred64 << 31);
}

extern "C" __global__ void warp_redux(const int* a, int* out) {
    int t = threadIdx.x; int v = a[t];
    int* o = out + 7 * t;
    o[0] = (int)__reduce_add_sync(FULL, (unsigned)v); o[1] = __reduce_min_sync(FULL, v);
    o[2] = __reduce_max_sync(FULL, v); o[3] = (int)__reduce_min_sync(FULL, (unsigned)v);
    o[4] = (int)__reduce_and_sync(FULL, (unsigned)v); o[5] = (int)__reduce_or_sync(FULL, (unsigned)v);
    o[6] = (int)__reduce_xor_sync(FULL, (unsigned)v);
}

extern "C" __global__ void warp_redux_partial(const int* a, int* out) {
    int t = threadIdx.x; int v = a[t];
    int r = -1;
    if ((t & 31) >= 8) r = __reduce_add_sync(0xffffff00u, v) + __reduce_max_sync(0xffffff00u, (unsigned)v);
    out[t] = r;
}

extern "C" __global__ void warp_tile_reduce(const float* a, float* out) {
    // a tile of 8 threads reduces with xor butterflies; a tile of 16 with down shuffles
    int t = threadIdx.x; float v = a[t], w = a[t];
    for (int s = 4; s > 0; s >>= 1) v += __shfl_xor_sync(FULL, v, s, 8);
    for (int s = 8; s > 0; s >>= 1) w += __shfl_down_sync(FULL, w, s, 16);
    out[2 * t] = v; out[2 * t + 1] = w;
}

extern "C" __global__ void warp_inclusive_scan(const int* a, int* out) {
    int t = threadIdx.x, v = a[t], lane = t & 31;
    for (int s = 1; s < 32; s <<= 1) {
        int u = __shfl_up_sync(FULL, v, s);
        if (lane >= s) v += u;
    }
    out[t] = v;
}

extern "C" __global__ void warp_partial_shfl(const int* a, int* out) {
    int t = threadIdx.x, lane = t & 31, r = -7;
    if (lane < 16) r = __shfl_sync(0x0000ffffu, a[t], (lane + 3) & 15);
    else if (lane & 1) r = __shfl_xor_sync(0xaaaa0000u, a[t], 2);
    out[t] = r;
}

extern "C" __global__ void warp_block_votes(const int* a, int* out) {
    int t = threadIdx.x;
    int c = __syncthreads_count(a[t] > 0), all = __syncthreads_and(a[t] > -1000), any = __syncthreads_or(a[t] == 12345);
    out[t] = c * 100 + all * 10 + any;
}

extern "C" __global__ void warp_lanemask_elect(const int* a, unsigned* out) {
    int t = threadIdx.x; unsigned lt, ge, lane, el;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    asm("mov.u32 %0, %%lanemask_ge;" : "=r"(ge));
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    asm volatile("{\n\t.reg .pred p;\n\t.reg .b32 l;\n\telect.sync l|p, 0xffffffff;\n\tselp.u32 %0, 1, 0, p;\n\t}" : "=r"(el));
    out[4 * t] = lt ^ (unsigned)a[t]; out[4 * t + 1] = ge; out[4 * t + 2] = lane; out[4 * t + 3] = el;
}

extern "C" __global__ void warp_syncwarp_masks(const int* a, int* out) {
    __shared__ int s[128];
    int t = threadIdx.x, lane = t & 31;
    s[t] = a[t];
    __syncwarp();
    if (lane < 16) {
        s[t] += s[t + 16];
        __syncwarp(0x0000ffffu);
        out[t] = s[t ^ 1];
    } else {
        out[t] = s[t] * 2;
    }
}

extern "C" __global__ void warp_ballot_after_exit(const int* a, unsigned* out) {
    // lanes whose value is negative leave; the rest vote with the mask of who is still here
    int t = threadIdx.x;
    out[2 * t] = 0xdead; out[2 * t + 1] = 0xbeef;
    if (a[t] < 0) return;
    unsigned m = __activemask();
    out[2 * t] = __ballot_sync(m, a[t] & 1);
    out[2 * t + 1] = m;
}
