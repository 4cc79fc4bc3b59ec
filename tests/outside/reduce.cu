// Reductions, scans, transpose, sort, histogram, stencils, matrix-vector: the exercises of a first CUDA course.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void red_shared(const float* x, float* out, int n) {
    __shared__ float s[256];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x * 2 + t;
    float v = 0.f;
    if (i < n) v += x[i];
    if (i + blockDim.x < n) v += x[i + blockDim.x];
    s[t] = v;
    __syncthreads();
    for (int st = blockDim.x / 2; st > 0; st >>= 1) {
        if (t < st) s[t] += s[t + st];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = s[0];
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void red_shfl(const float* x, float* out, int n) {
    __shared__ float part[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = 0.f;
    for (int k = i; k < n; k += gridDim.x * blockDim.x) v += x[k];
    v = warp_sum(v);
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    if (lane == 0) part[w] = v;
    __syncthreads();
    if (w == 0) {
        v = lane < (blockDim.x >> 5) ? part[lane] : 0.f;
        v = warp_sum(v);
        if (lane == 0) out[blockIdx.x] = v;
    }
}

extern "C" __global__ void red_cg_tile(const int* x, int* out, int* tilemax) {
    cg::thread_block blk = cg::this_thread_block();
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(blk);
    int v = x[blk.thread_rank()];
    int s = cg::reduce(tile, v, cg::plus<int>());
    int m = cg::reduce(tile, v, cg::greater<int>());
    if (tile.thread_rank() == 0) {
        out[blk.thread_rank() / 16] = s;
        tilemax[blk.thread_rank() / 16] = m;
    }
}

extern "C" __global__ void red_atomic_int(const int* x, int* out, unsigned long long* out64, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        atomicAdd(out, x[i]);
        atomicAdd(out64, (unsigned long long)(unsigned)x[i] * 1000003ull);
        atomicMax(out + 1, x[i]);
        atomicMin(out + 2, x[i]);
        atomicAnd(out + 3, x[i] | 0x0F0F0000);
        atomicOr(out + 4, x[i] & 0x00F000F0);
        atomicXor(out + 5, x[i]);
        atomicMax((unsigned*)(out + 6), (unsigned)x[i]);
    }
}

__device__ float atomic_max_float(float* addr, float v) {
    int* a = (int*)addr;
    int old = *a, assumed;
    do {
        assumed = old;
        if (__int_as_float(assumed) >= v) break;
        old = atomicCAS(a, assumed, __float_as_int(v));
    } while (old != assumed);
    return __int_as_float(old);
}

__device__ double atomic_add_double_cas(double* addr, double v) {
    unsigned long long* a = (unsigned long long*)addr;
    unsigned long long old = *a, assumed;
    do {
        assumed = old;
        old = atomicCAS(a, assumed, __double_as_longlong(__longlong_as_double(assumed) + v));
    } while (old != assumed);
    return __longlong_as_double(old);
}

// every value is a multiple of 1/4 below 2^20: any summation order is exact
extern "C" __global__ void atomic_cas_loops(const float* x, float* fmax_out, double* dsum, float* fsum, double* dnative) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomic_max_float(fmax_out, x[i]);
    atomic_add_double_cas(dsum, (double)x[i]);
    atomicAdd(fsum, x[i]);
    atomicAdd(dnative, (double)x[i] * 0.5);
}

extern "C" __global__ void atomic_inc_dec(unsigned* c, unsigned* olds_inc, unsigned* olds_dec) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    olds_inc[i] = atomicInc(c, 6u);
    olds_dec[i] = atomicDec(c + 1, 4u);
}

extern "C" __global__ void scan_hillis(const int* x, int* y) {
    __shared__ int buf[2][256];
    int t = threadIdx.x, p = 0;
    buf[0][t] = x[t];
    __syncthreads();
    for (int o = 1; o < 256; o <<= 1) {
        int v = buf[p][t];
        if (t >= o) v += buf[p][t - o];
        buf[p ^ 1][t] = v;
        p ^= 1;
        __syncthreads();
    }
    y[t] = buf[p][t];
}

extern "C" __global__ void scan_blelloch(const int* x, int* y) {
    __shared__ int s[512];
    int t = threadIdx.x;
    s[2 * t] = x[2 * t];
    s[2 * t + 1] = x[2 * t + 1];
    int off = 1;
    for (int d = 256; d > 0; d >>= 1) {
        __syncthreads();
        if (t < d) {
            int a = off * (2 * t + 1) - 1, b = off * (2 * t + 2) - 1;
            s[b] += s[a];
        }
        off <<= 1;
    }
    if (t == 0) s[511] = 0;
    for (int d = 1; d < 512; d <<= 1) {
        off >>= 1;
        __syncthreads();
        if (t < d) {
            int a = off * (2 * t + 1) - 1, b = off * (2 * t + 2) - 1;
            int tmp = s[a];
            s[a] = s[b];
            s[b] += tmp;
        }
    }
    __syncthreads();
    y[2 * t] = s[2 * t];
    y[2 * t + 1] = s[2 * t + 1];
}

extern "C" __global__ void scan_warp_float(const float* x, float* y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x & 31;
    float v = x[i];
    for (int o = 1; o < 32; o <<= 1) {
        float u = __shfl_up_sync(0xffffffffu, v, o);
        if (lane >= o) v += u;
    }
    y[i] = v;
}

extern "C" __global__ void transpose_tiled(const float* in, float* out, int w, int h) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < w && y + j < h) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * w + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8)
        if (x < h && y + j < w) out[(y + j) * h + x] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" __global__ void histogram(const unsigned char* data, unsigned* hist, int n) {
    __shared__ unsigned h[64];
    for (int b = threadIdx.x; b < 64; b += blockDim.x) h[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&h[data[i] >> 2], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 64; b += blockDim.x) atomicAdd(&hist[b], h[b]);
}

extern "C" __global__ void bitonic_sort(const float* in, float* out, int* perm) {
    __shared__ float k[256];
    __shared__ int v[256];
    int t = threadIdx.x;
    k[t] = in[t];
    v[t] = t;
    __syncthreads();
    for (int size = 2; size <= 256; size <<= 1) {
        for (int stride = size >> 1; stride > 0; stride >>= 1) {
            int p = t ^ stride;
            if (p > t) {
                bool up = (t & size) == 0;
                float a = k[t], b = k[p];
                if ((a > b) == up) {
                    k[t] = b; k[p] = a;
                    int tmp = v[t]; v[t] = v[p]; v[p] = tmp;
                }
            }
            __syncthreads();
        }
    }
    out[t] = k[t];
    perm[t] = v[t];
}

extern "C" __global__ void stencil_1d(const float* in, float* out, int n) {
    __shared__ float s[128 + 6];
    int g = blockIdx.x * blockDim.x + threadIdx.x, l = threadIdx.x + 3;
    s[l] = g < n ? in[g] : 0.f;
    if (threadIdx.x < 3) {
        s[l - 3] = g >= 3 ? in[g - 3] : 0.f;
        s[l + blockDim.x] = g + blockDim.x < n ? in[g + blockDim.x] : 0.f;
    }
    __syncthreads();
    const float w[7] = {0.0625f, -0.125f, 0.25f, 0.6f, 0.25f, -0.125f, 0.0625f};
    float acc = 0.f;
    #pragma unroll
    for (int r = -3; r <= 3; ++r) acc += w[r + 3] * s[l + r];
    if (g < n) out[g] = acc;
}

extern "C" __global__ void stencil_2d(const float* in, float* out, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    float c = in[y * w + x];
    float l = x > 0 ? in[y * w + x - 1] : c, r = x < w - 1 ? in[y * w + x + 1] : c;
    float u = y > 0 ? in[(y - 1) * w + x] : c, d = y < h - 1 ? in[(y + 1) * w + x] : c;
    out[y * w + x] = c + 0.2f * (l + r + u + d - 4.f * c);
}

extern "C" __global__ void matvec_warp(const float* A, const float* x, float* y, int rows, int cols) {
    int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x & 31;
    if (row >= rows) return;
    float acc = 0.f;
    for (int c = lane; c < cols; c += 32) acc = fmaf(A[row * cols + c], x[c], acc);
    acc = warp_sum(acc);
    if (lane == 0) y[row] = acc;
}

extern "C" __global__ void matvec_f64(const double* A, const double* x, double* y, int rows, int cols) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= rows) return;
    double acc = 0.0;
    for (int c = 0; c < cols; ++c) acc += A[row * cols + c] * x[c];
    y[row] = acc;
}
