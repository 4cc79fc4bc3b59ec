// Second outside set: shared memory, block and warp synchronisation, atomics, grids.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda_fp16.h>
namespace cg = cooperative_groups;

extern "C" __global__ void dyn_shared_carve(const float* a, const int* b, float* out, int* iout) {
    extern __shared__ unsigned char smem[];
    int n = blockDim.x;
    float* fs = reinterpret_cast<float*>(smem);
    double* ds = reinterpret_cast<double*>(smem + ((n * sizeof(float) + 7) & ~7));
    int* is = reinterpret_cast<int*>(ds + n);
    short* ss = reinterpret_cast<short*>(is + n);
    int t = threadIdx.x, g = blockIdx.x * n + t;
    fs[t] = a[g]; ds[t] = (double)a[g] * 3.0; is[t] = b[g]; ss[t] = (short)(b[g] >> 4);
    __syncthreads();
    int r = n - 1 - t;
    out[2 * g] = fs[r] + (float)ds[(t + 1) % n];
    out[2 * g + 1] = (float)ds[r];
    iout[g] = is[r] ^ ss[(t + 3) % n];
}

extern "C" __global__ void dyn_shared_reduce(const double* a, double* out) {
    extern __shared__ double sd[];
    int t = threadIdx.x;
    sd[t] = a[blockIdx.x * blockDim.x + t];
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (t < s) sd[t] += sd[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = sd[0];
}

extern "C" __global__ void cg_tile16(const int* a, int* out) {
    cg::thread_block blk = cg::this_thread_block();
    cg::thread_block_tile<16> t16 = cg::tiled_partition<16>(blk);
    int v = a[blk.thread_rank()];
    int r = blk.thread_rank();
    out[6 * r] = t16.shfl(v, 3);
    out[6 * r + 1] = t16.shfl_down(v, 5);
    out[6 * r + 2] = t16.shfl_xor(v, 9);
    out[6 * r + 3] = cg::reduce(t16, v, cg::plus<int>());
    out[6 * r + 4] = cg::reduce(t16, v, cg::greater<int>());
    out[6 * r + 5] = t16.meta_group_rank() * 100 + t16.thread_rank() + (int)t16.ballot(v > 0);
}

extern "C" __global__ void cg_tile8(const float* a, float* out, unsigned* votes) {
    cg::thread_block blk = cg::this_thread_block();
    cg::thread_block_tile<8> t8 = cg::tiled_partition<8>(blk);
    int r = blk.thread_rank();
    float v = a[r];
    out[3 * r] = cg::reduce(t8, v, cg::plus<float>());
    out[3 * r + 1] = cg::reduce(t8, v, cg::less<float>());
    out[3 * r + 2] = t8.shfl_up(v, 2);
    votes[2 * r] = t8.any(v > 1.0f) | (t8.all(v > -2.0f) << 1);
    votes[2 * r + 1] = t8.ballot(v < 0.f);
}

extern "C" __global__ void cg_coalesced(const int* a, int* out) {
    int t = threadIdx.x;
    out[t] = -1;
    if (a[t] % 3 != 0) {
        cg::coalesced_group g = cg::coalesced_threads();
        int x = cg::reduce(g, a[t], cg::plus<int>());
        out[t] = x * 1000 + (int)g.thread_rank() * 10 + (int)(g.size() & 0xF);
    }
}

extern "C" __global__ void sync_count(const int* a, int* out) {
    int t = threadIdx.x;
    int p = a[t] > 0;
    int c = __syncthreads_count(p);
    int all = __syncthreads_and(a[t] > -15);
    int any = __syncthreads_or(a[t] == 7);
    out[t] = c * 100 + all * 10 + any;
}

extern "C" __global__ void warp_votes(const int* a, unsigned* out) {
    int t = threadIdx.x;
    unsigned full = 0xffffffffu;
    int v = a[t];
    out[6 * t] = __any_sync(full, v > 15);
    out[6 * t + 1] = __all_sync(full, v > -20);
    out[6 * t + 2] = __ballot_sync(full, v & 1);
    out[6 * t + 3] = __match_any_sync(full, v & 3);
    int pred = 0;
    out[6 * t + 4] = __match_all_sync(full, v >> 5, &pred) ^ (pred << 31);
    out[6 * t + 5] = __popc(__activemask());
    if ((t & 3) == 1) out[6 * t + 5] = __ballot_sync(0x22222222u, v > 0);
}

extern "C" __global__ void atomic_double(const double* a, double* acc, int* seen) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    // sums of small dyadic numbers are exact in any order; an old value is one of the partial sums
    double old = atomicAdd(&acc[0], a[t]);
    seen[t] = old == __longlong_as_double(0x7ff8000000000000ll) ? -1 : (int)(old != old);
    atomicMax((unsigned long long*)&acc[1], (unsigned long long)(t * 37 % 101));
    atomicAdd(&acc[2], -a[t] * 0.5);
}

extern "C" __global__ void atomic_half2(__half2* acc, const __half2* a, __half* hacc) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&acc[t & 7], a[t]);
    atomicAdd(&hacc[t & 3], __low2half(a[t]));
}

__device__ unsigned long long cas_max64(unsigned long long* p, unsigned long long v) {
    unsigned long long old = *p, assumed;
    do { assumed = old; if (assumed >= v) break; old = atomicCAS(p, assumed, v); } while (old != assumed);
    return old;
}
__device__ double cas_mul(double* p, double f) {
    unsigned long long* q = (unsigned long long*)p;
    unsigned long long old = *q, assumed;
    do {
        assumed = old;
        old = atomicCAS(q, assumed, __double_as_longlong(__longlong_as_double(assumed) * f));
    } while (old != assumed);
    return __longlong_as_double(old);
}
extern "C" __global__ void atomic_cas64(const unsigned long long* a, unsigned long long* mx, double* prod,
                                        unsigned long long* exch) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    cas_max64(mx, a[t]);
    cas_mul(prod, (t & 1) ? 2.0 : 0.5);  // powers of two: exact in any order
    atomicExch(&exch[1 + t], a[t] ^ 0xFFFF);
    atomicOr(&exch[0], 1ull << (t & 63));
}

extern "C" __global__ void atomic_misc32(unsigned* u, int* s, unsigned* old_inc) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAnd(&u[0], ~(1u << (t & 31)));
    atomicXor(&u[1], 0x9E3779B9u * (unsigned)t);
    atomicMin(&s[0], (t * 7919) % 1013 - 500);
    atomicMax(&s[1], (t * 7919) % 1013 - 500);
    atomicSub(&s[2], t);
    old_inc[t] = atomicInc(&u[2], 50);
}

extern "C" __global__ void ldg_readonly(const float* __restrict__ a, const int* __restrict__ idx, float* __restrict__ out,
                                        int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = __ldg(&a[i]);
    int j = __ldg(&idx[i]) % n;
    float y = __ldg(&a[j < 0 ? -j : j]);
    out[i] = x * 0.75f + y;
}

extern "C" __global__ void volatile_flag(const int* a, int* out) {
    __shared__ volatile int flag;
    __shared__ volatile int data[32];
    int t = threadIdx.x;
    if (t == 0) flag = 0;
    __syncthreads();
    if (t >= 32) {                           // warp 1 produces
        data[t - 32] = a[t] * 2 + 1;
        __threadfence_block();
        if (t == 32) flag = 1;
    } else {                                 // warp 0 spins until it sees the flag
        while (flag == 0) { }
        out[t] = data[t] + data[31 - t];
    }
}

extern "C" __global__ void grid_stride(const float* a, float* out, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        out[i] = a[i] * 2.0f + (float)(i % 7) + (float)blockIdx.x * 0.0f;
}

extern "C" __global__ void grid_stride_reduce(const int* a, long long* out, int n) {
    long long s = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) s += a[i];
    for (int o = 16; o; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if ((threadIdx.x & 31) == 0) atomicAdd((unsigned long long*)out, (unsigned long long)s);
}

extern "C" __global__ void grid3d(int* out) {
    int bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;
    int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    int gx = bx * blockDim.x + tx, gy = by * blockDim.y + ty, gz = bz * blockDim.z + tz;
    int W = gridDim.x * blockDim.x, H = gridDim.y * blockDim.y;
    int lin = (gz * H + gy) * W + gx;
    out[lin] = (bz << 20) | (by << 16) | (bx << 12) | (tz << 8) | (ty << 4) | tx;
}

extern "C" __global__ void block3d_shared(const float* a, float* out) {
    __shared__ float tile[4][4][8];
    int x = threadIdx.x, y = threadIdx.y, z = threadIdx.z;
    int b = blockIdx.x + gridDim.x * blockIdx.y;
    int lin = (z * 4 + y) * 8 + x;
    tile[z][y][x] = a[b * 128 + lin];
    __syncthreads();
    out[b * 128 + lin] = tile[3 - z][y][7 - x] + tile[z][3 - y][x];
}

extern "C" __global__ void shared_atomics(const int* a, int* out) {
    __shared__ int hist[16];
    __shared__ unsigned long long big;
    __shared__ float fs;
    int t = threadIdx.x;
    if (t < 16) hist[t] = 0;
    if (t == 0) { big = 0; fs = 0.f; }
    __syncthreads();
    atomicAdd(&hist[a[t] & 15], 1);
    atomicAdd(&big, (unsigned long long)(a[t] & 0xFFFF) << 20);
    atomicAdd(&fs, (float)(a[t] & 7) * 0.25f);
    atomicMax(&hist[(t + 5) & 15], 3);
    __syncthreads();
    if (t < 16) out[t] = hist[t];
    if (t == 16) { out[16] = (int)(big >> 32); out[17] = (int)big; out[18] = __float_as_int(fs); }
}
