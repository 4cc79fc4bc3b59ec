// The fast, approximate math: CUDA's __expf/__logf/__sinf/... intrinsics and the .approx PTX
// instructions behind them. Recorded exactly on the GPU; compared within the documented bound.
#include <cuda_fp16.h>

#define LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

extern "C" __global__ void apx_exp(const float* a, float* out, int n) {
    LOOP(i, n) { out[2 * i] = __expf(a[i]); out[2 * i + 1] = exp2f(a[i]); }
}

extern "C" __global__ void apx_ex2_asm(const float* a, float* out, int n) {
    LOOP(i, n) {
        float r, f;
        asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(a[i]));
        asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(f) : "f"(a[i]));
        out[2 * i] = r; out[2 * i + 1] = f;
    }
}

extern "C" __global__ void apx_log(const float* a, float* out, int n) {
    LOOP(i, n) { out[3 * i] = __logf(a[i]); out[3 * i + 1] = __log2f(a[i]); out[3 * i + 2] = __log10f(a[i]); }
}

extern "C" __global__ void apx_sin_cos(const float* a, float* out, int n) {
    LOOP(i, n) {
        float s, c;
        __sincosf(a[i], &s, &c);
        out[4 * i] = __sinf(a[i]); out[4 * i + 1] = __cosf(a[i]); out[4 * i + 2] = s; out[4 * i + 3] = c;
    }
}

extern "C" __global__ void apx_rsqrt_rcp(const float* a, float* out, int n) {
    LOOP(i, n) {
        float r, q;
        asm("rcp.approx.f32 %0, %1;" : "=f"(r) : "f"(a[i]));
        asm("sqrt.approx.f32 %0, %1;" : "=f"(q) : "f"(a[i]));
        out[3 * i] = rsqrtf(a[i]); out[3 * i + 1] = r; out[3 * i + 2] = q;
    }
}

extern "C" __global__ void apx_fdividef(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) { out[2 * i] = __fdividef(a[i], b[i]); out[2 * i + 1] = __frcp_rn(b[i]) * a[i]; }
}

extern "C" __global__ void apx_tanh_asm(const float* a, float* out, int n) {
    LOOP(i, n) {
        float r;
        asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(a[i]));
        out[i] = r;
    }
}

extern "C" __global__ void apx_powf_fast(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) { out[2 * i] = __powf(a[i], b[i]); out[2 * i + 1] = __tanf(b[i]); }
}

extern "C" __global__ void apx_half_ex2_tanh(const unsigned* a, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned e, t;
        asm("ex2.approx.f16x2 %0, %1;" : "=r"(e) : "r"(a[i]));
        asm("tanh.approx.f16x2 %0, %1;" : "=r"(t) : "r"(a[i]));
        out[2 * i] = e; out[2 * i + 1] = t;
    }
}

extern "C" __global__ void apx_softmax_row(const float* a, float* out) {
    // one warp, 32 values: max, sum of __expf, normalise with __fdividef
    int l = threadIdx.x;
    float v = a[l], m = v;
    for (int s = 16; s > 0; s >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, s));
    float e = __expf(v - m), sum = e;
    for (int s = 16; s > 0; s >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, s);
    out[l] = __fdividef(e, sum);
}
