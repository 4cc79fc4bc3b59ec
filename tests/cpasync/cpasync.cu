#include <cuda_pipeline.h>
#include <cooperative_groups.h>
#include <cooperative_groups/memcpy_async.h>
#include <cuda/barrier>
namespace cg = cooperative_groups;

// a double-buffered tile copy: tile t+1 in flight while tile t is used
extern "C" __global__ void pipe_double(const float* in, float* out, int tiles) {
    __shared__ __align__(16) float buf[2][128];
    int t = threadIdx.x;
    __pipeline_memcpy_async(&buf[0][4 * t], &in[4 * t], 16);
    __pipeline_commit();
    for (int k = 0; k < tiles; ++k) {
        if (k + 1 < tiles)
            __pipeline_memcpy_async(&buf[(k + 1) & 1][4 * t], &in[(k + 1) * 128 + 4 * t], 16);
        __pipeline_commit();
        __pipeline_wait_prior(1);
        __syncthreads();
        for (int j = 0; j < 4; ++j) {
            int i = 4 * t + j;
            out[k * 128 + i] = buf[k & 1][i] * 2.0f + buf[k & 1][127 - i];
        }
        __syncthreads();
    }
}

// zero-fill at the tail: n valid floats, the rest of each 16-byte piece filled with zeros
extern "C" __global__ void zfill_tail(const float* in, float* out, int n) {
    __shared__ __align__(16) float buf[128];
    int t = threadIdx.x;
    int have = n - 4 * t;
    have = have < 0 ? 0 : (have > 4 ? 4 : have);
    __pipeline_memcpy_async(&buf[4 * t], &in[4 * t], 16, 16 - 4 * have);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    for (int j = 0; j < 4; ++j) out[4 * t + j] = buf[127 - 4 * t - j] + 1.0f;
}

// cuda::memcpy_async with cuda::barrier: the copy completes on the barrier (cp.async.mbarrier.arrive)
extern "C" __global__ void barrier_copy(const int* in, int* out) {
    __shared__ __align__(16) int buf[256];
    #pragma nv_diag_suppress static_var_with_dynamic_init
    __shared__ cuda::barrier<cuda::thread_scope_block> bar;
    int t = threadIdx.x;
    if (t == 0) init(&bar, blockDim.x);
    __syncthreads();
    cuda::memcpy_async(&buf[4 * t], &in[4 * t], cuda::aligned_size_t<8>(16), bar);
    bar.arrive_and_wait();
    for (int j = 0; j < 4; ++j) out[4 * t + j] = buf[255 - 4 * t - j] * 3 + t;
}

// cooperative_groups::memcpy_async + cg::wait: the block copies a tile together
extern "C" __global__ void cg_copy(const float* in, float* out, int n) {
    __shared__ __align__(16) float buf[512];
    cg::thread_block b = cg::this_thread_block();
    cg::memcpy_async(b, buf, in + blockIdx.x * n, sizeof(float) * n);
    cg::wait(b);
    int t = threadIdx.x;
    for (int i = t; i < n; i += blockDim.x) out[blockIdx.x * n + i] = buf[n - 1 - i] - buf[i];
}

// cp.async.mbarrier.arrive.noinc: the async arrival is one of the 2 per thread the barrier expects
extern "C" __global__ void noinc_copy(const int* in, int* out) {
    __shared__ __align__(16) int buf[128];
    __shared__ unsigned long long bar;
    int t = threadIdx.x;
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    if (t == 0) asm volatile("mbarrier.init.shared.b64 [%0], %1;" :: "r"(b), "r"(2 * blockDim.x) : "memory");
    __syncthreads();
    __pipeline_memcpy_async(&buf[4 * t], &in[4 * t], 16);
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];" :: "r"(b) : "memory");
    unsigned long long st;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];" : "=l"(st) : "r"(b) : "memory");
    unsigned ok = 0;
    while (!ok)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                     : "=r"(ok) : "r"(b) : "memory");
    for (int j = 0; j < 4; ++j) out[4 * t + j] = buf[127 - 4 * t - j] - t;
}

// three groups in flight, retired one at a time: wait_group 2, 1, 0
extern "C" __global__ void three_groups(const float* in, float* out) {
    __shared__ __align__(16) float buf[3][128];
    int t = threadIdx.x;
    for (int g = 0; g < 3; ++g) {
        __pipeline_memcpy_async(&buf[g][4 * t], &in[g * 128 + 4 * t], 16);
        __pipeline_commit();
    }
    __pipeline_wait_prior(2);
    float a = buf[0][4 * t] + buf[0][4 * t + 3];
    __pipeline_wait_prior(1);
    float b = buf[1][4 * t + 1] * 2.0f;
    __pipeline_wait_prior(0);
    float c = buf[2][4 * t + 2] - a;
    out[3 * t] = a; out[3 * t + 1] = b; out[3 * t + 2] = c;
}

// cuda::pipeline (thread scope): the same copy through the libcu++ pipeline
#include <cuda/pipeline>
extern "C" __global__ void pipeline_copy(const float* in, float* out) {
    __shared__ __align__(16) float buf[2][128];
    cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
    int t = threadIdx.x;
    for (int s = 0; s < 2; ++s) {
        pipe.producer_acquire();
        cuda::memcpy_async(&buf[s][4 * t], &in[s * 128 + 4 * t], cuda::aligned_size_t<16>(16), pipe);
        pipe.producer_commit();
    }
    float acc = 0.0f;
    for (int s = 0; s < 2; ++s) {
        pipe.consumer_wait();
        for (int j = 0; j < 4; ++j) acc += buf[s][4 * t + j] * (s + 1);
        pipe.consumer_release();
    }
    out[t] = acc;
}

// broken: reads the destination before waiting
extern "C" __global__ void read_early(const float* in, float* out) {
    __shared__ __align__(16) float buf[128];
    int t = threadIdx.x;
    __pipeline_memcpy_async(&buf[4 * t], &in[4 * t], 16);
    __pipeline_commit();
    float x = buf[4 * t];
    __pipeline_wait_prior(0);
    out[t] = x + buf[4 * t + 1];
}

// broken: wait_group 1 leaves the newest group in flight, and the kernel reads it
extern "C" __global__ void read_newest(const float* in, float* out) {
    __shared__ __align__(16) float buf[2][128];
    int t = threadIdx.x;
    for (int g = 0; g < 2; ++g) {
        __pipeline_memcpy_async(&buf[g][4 * t], &in[g * 128 + 4 * t], 16);
        __pipeline_commit();
    }
    __pipeline_wait_prior(1);
    out[t] = buf[0][4 * t] + buf[1][4 * t];
    __pipeline_wait_prior(0);
}

// broken: another thread's copy read after this thread's own wait, with no __syncthreads
extern "C" __global__ void read_other(const float* in, float* out) {
    __shared__ __align__(16) float buf[256];
    int t = threadIdx.x;
    __pipeline_memcpy_async(&buf[4 * t], &in[4 * t], 16);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    out[t] = buf[(4 * t + 128) % 256];
}
