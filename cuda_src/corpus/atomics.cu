// Atomics: integer, float and double adds (subnormals included), CAS loops, exchange chains,
// min/max/and/or/xor, inc/dec with wrap, 64-bit forms, shared-memory atomics. Kernels whose result
// depends on the order the atomics happened in also return each thread's old value, from which the
// comparison reconstructs an order and checks it.
#include <cuda_fp16.h>

extern "C" __global__ void atom_histogram(const int* a, int* hist, int n) {
    for (int i = threadIdx.x + blockIdx.x * blockDim.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&hist[a[i] & 15], 1 + (a[i] >> 28));
}

extern "C" __global__ void atom_add_float_slots(float* slot, const float* v, float* old) {
    int t = threadIdx.x;
    old[t] = atomicAdd(&slot[t], v[t]);
}

extern "C" __global__ void atom_add_double_slots(double* slot, const double* v, double* old) {
    int t = threadIdx.x;
    old[t] = atomicAdd(&slot[t], v[t]);
}

extern "C" __global__ void atom_add_half2_slots(__half2* slot, const __half2* v, unsigned* old) {
    int t = threadIdx.x;
    __half2 o = atomicAdd(&slot[t], v[t]);
    old[t] = *reinterpret_cast<unsigned*>(&o);
}

extern "C" __global__ void atom_ticket(int* counter, int* ticket) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    ticket[t] = atomicAdd(counter, 1);
}

extern "C" __global__ void atom_float_order(float* acc, const float* v, float* old) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    old[t] = atomicAdd(acc, v[t]);
}

extern "C" __global__ void atom_exch_chain(int* slot, int* old) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    old[t] = atomicExch(slot, t + 100);
}

extern "C" __global__ void atom_cas_increment(unsigned* counter, unsigned* seen) {
    int t = threadIdx.x;
    unsigned cur = *((volatile unsigned*)counter), prev;
    do {
        prev = cur;
        cur = atomicCAS(counter, prev, prev * 3 + 1);
    } while (cur != prev);
    seen[t] = prev;
}

extern "C" __global__ void atom_cas_edges(unsigned long long* slot, const unsigned long long* cmp,
                                          const unsigned long long* val, unsigned long long* old) {
    int t = threadIdx.x;
    old[2 * t] = atomicCAS(&slot[t], cmp[t], val[t]);
    old[2 * t + 1] = (unsigned long long)atomicCAS((int*)&slot[t] + 1, (int)(cmp[t] >> 32), (int)val[t]);
}

extern "C" __global__ void atom_min_max(int* s, unsigned* u, long long* l, unsigned long long* ul, const int* a) {
    int t = threadIdx.x;
    atomicMin(&s[0], a[t]); atomicMax(&s[1], a[t]);
    atomicMin(&u[0], (unsigned)a[t]); atomicMax(&u[1], (unsigned)a[t]);
    atomicMin(&l[0], (long long)a[t] << 31); atomicMax(&l[1], (long long)a[t] * -3);
    atomicMin(&ul[0], (unsigned long long)(long long)a[t]); atomicMax(&ul[1], (unsigned long long)a[t] << 32);
}

extern "C" __global__ void atom_bitwise(unsigned* w, unsigned long long* w64, const unsigned* a) {
    int t = threadIdx.x;
    atomicAnd(&w[0], a[t] | (1u << (t & 31)));
    atomicOr(&w[1], a[t] & 0x01010101u);
    atomicXor(&w[2], a[t]);
    atomicOr(&w64[0], (unsigned long long)a[t] << (t & 31));
    atomicXor(&w64[1], (unsigned long long)a[t] * 0x100000001ull);
    atomicAnd(&w[3], ~(1u << (t & 31)));
}

extern "C" __global__ void atom_inc_dec(unsigned* c, unsigned* old) {
    int t = threadIdx.x;
    old[2 * t] = atomicInc(&c[0], 9u);
    old[2 * t + 1] = atomicDec(&c[1], 5u);
}

extern "C" __global__ void atom_add_u64(unsigned long long* acc, const unsigned long long* v) {
    int t = threadIdx.x;
    atomicAdd(&acc[0], v[t]);
    atomicAdd(&acc[1], v[t] >> 33);
    atomicAdd(&acc[2], 1ull);
}

extern "C" __global__ void atom_shared_hist(const int* a, int* out, int n) {
    __shared__ int h[32];
    __shared__ unsigned m[2];
    int t = threadIdx.x;
    if (t < 32) h[t] = 0;
    if (t == 0) { m[0] = 0xffffffffu; m[1] = 0; }
    __syncthreads();
    for (int i = t; i < n; i += blockDim.x) {
        atomicAdd(&h[(a[i] >> 3) & 31], a[i] & 7);
        atomicMin(&m[0], (unsigned)a[i]);
        atomicMax(&m[1], (unsigned)a[i]);
    }
    __syncthreads();
    if (t < 32) out[t] = h[t];
    if (t == 0) { out[32] = (int)m[0]; out[33] = (int)m[1]; }
}

extern "C" __global__ void atom_add_float_sum_exact(float* acc, const float* v) {
    // every value is a small integer or a power of two that sums exactly in any order
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    atomicAdd(&acc[0], v[t]);
    atomicAdd(&acc[1], -v[t] * 0.5f);
}

extern "C" __global__ void atom_block_scope(int* c, int* old) {
    int t = threadIdx.x;
    old[blockIdx.x * blockDim.x + t] = atomicAdd_block(&c[blockIdx.x], 2) + 1000 * blockIdx.x;
}

extern "C" __global__ void atom_shared_float_subnormal(const float* v, float* out) {
    // shared-memory float atomics on subnormal operands and results
    __shared__ float s[64];
    int t = threadIdx.x;
    s[t] = v[t];
    __syncthreads();
    float old = atomicAdd(&s[t], v[(t + 7) & 63]);
    __syncthreads();
    out[2 * t] = old;
    out[2 * t + 1] = s[t];
}

extern "C" __global__ void atom_double_order(double* acc, const double* v, double* old) {
    int t = threadIdx.x + blockIdx.x * blockDim.x;
    old[t] = atomicAdd(acc, v[t]);
}
