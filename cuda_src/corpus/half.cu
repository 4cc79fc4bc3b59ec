// Half and bfloat16 arithmetic through cuda_fp16.h / cuda_bf16.h, scalar and paired (h2) forms.
// Inputs and outputs travel as raw 16-bit patterns (unsigned short) so every NaN payload survives.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

__device__ __half H(unsigned short u) { return __ushort_as_half(u); }
__device__ unsigned short U(__half h) { return __half_as_ushort(h); }
__device__ __nv_bfloat16 B(unsigned short u) { return __ushort_as_bfloat16(u); }
__device__ unsigned short U(__nv_bfloat16 h) { return __bfloat16_as_ushort(h); }

extern "C" __global__ void half_arith(const unsigned short* a, const unsigned short* b, unsigned short* out, int n) {
    LOOP(i, n) {
        __half x = H(a[i]), y = H(b[i]);
        unsigned short* o = out + 6 * i;
        o[0] = U(__hadd(x, y)); o[1] = U(__hsub(x, y)); o[2] = U(__hmul(x, y));
        o[3] = U(__hdiv(x, y)); o[4] = U(__hneg(x)); o[5] = U(__habs(x));
    }
}

extern "C" __global__ void half_fma(const unsigned short* a, const unsigned short* b, const unsigned short* c,
                                    unsigned short* out, int n) {
    LOOP(i, n) {
        __half x = H(a[i]), y = H(b[i]), z = H(c[i]);
        unsigned short* o = out + 4 * i;
        o[0] = U(__hfma(x, y, z)); o[1] = U(__hfma_relu(x, y, z)); o[2] = U(__hfma_sat(x, y, z));
        o[3] = U(__hadd_sat(x, y));
    }
}

extern "C" __global__ void half_minmax(const unsigned short* a, const unsigned short* b, unsigned short* out, int n) {
    LOOP(i, n) {
        __half x = H(a[i]), y = H(b[i]);
        unsigned short* o = out + 4 * i;
        o[0] = U(__hmin(x, y)); o[1] = U(__hmax(x, y)); o[2] = U(__hmin_nan(x, y)); o[3] = U(__hmax_nan(x, y));
    }
}

extern "C" __global__ void half_compare(const unsigned short* a, const unsigned short* b, unsigned char* out, int n) {
    LOOP(i, n) {
        __half x = H(a[i]), y = H(b[i]);
        unsigned char* o = out + 8 * i;
        o[0] = __hlt(x, y); o[1] = __hle(x, y); o[2] = __heq(x, y); o[3] = __hne(x, y);
        o[4] = __hltu(x, y); o[5] = __hneu(x, y); o[6] = __hisnan(x); o[7] = (unsigned char)__hisinf(x);
    }
}

extern "C" __global__ void half2_arith(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out, int n) {
    LOOP(i, n) {
        __half2 x = *reinterpret_cast<const __half2*>(a + i), y = *reinterpret_cast<const __half2*>(b + i);
        __half2 z = *reinterpret_cast<const __half2*>(c + i);
        __half2 r[6] = {__hadd2(x, y), __hmul2(x, y), __hfma2(x, y, z), __hfma2_relu(x, y, z), __hmax2_nan(x, y),
                        __hmin2(x, y)};
        for (int k = 0; k < 6; ++k) out[6 * i + k] = *reinterpret_cast<unsigned*>(&r[k]);
    }
}

extern "C" __global__ void half2_compare(const unsigned* a, const unsigned* b, unsigned* out, int n) {
    LOOP(i, n) {
        __half2 x = *reinterpret_cast<const __half2*>(a + i), y = *reinterpret_cast<const __half2*>(b + i);
        __half2 lt = __hlt2(x, y), geu = __hgeu2(x, y);
        out[4 * i] = *reinterpret_cast<unsigned*>(&lt);
        out[4 * i + 1] = *reinterpret_cast<unsigned*>(&geu);
        out[4 * i + 2] = __hbeq2(x, y);
        out[4 * i + 3] = __hble2(x, y) | (__hbgtu2(x, y) << 1);
    }
}

extern "C" __global__ void bf16_arith(const unsigned short* a, const unsigned short* b, unsigned short* out, int n) {
    LOOP(i, n) {
        __nv_bfloat16 x = B(a[i]), y = B(b[i]);
        unsigned short* o = out + 6 * i;
        o[0] = U(__hadd(x, y)); o[1] = U(__hsub(x, y)); o[2] = U(__hmul(x, y));
        o[3] = U(__hdiv(x, y)); o[4] = U(__hneg(x)); o[5] = U(__habs(x));
    }
}

extern "C" __global__ void bf16_fma(const unsigned short* a, const unsigned short* b, const unsigned short* c,
                                    unsigned short* out, int n) {
    LOOP(i, n) {
        __nv_bfloat16 x = B(a[i]), y = B(b[i]), z = B(c[i]);
        unsigned short* o = out + 3 * i;
        o[0] = U(__hfma(x, y, z)); o[1] = U(__hfma_relu(x, y, z)); o[2] = U(__hfma_sat(x, y, z));
    }
}

extern "C" __global__ void bf16_minmax_compare(const unsigned short* a, const unsigned short* b, unsigned short* out,
                                               int n) {
    LOOP(i, n) {
        __nv_bfloat16 x = B(a[i]), y = B(b[i]);
        unsigned short* o = out + 6 * i;
        o[0] = U(__hmin(x, y)); o[1] = U(__hmax(x, y)); o[2] = U(__hmax_nan(x, y)); o[3] = U(__hmin_nan(x, y));
        o[4] = __hlt(x, y) | (__hgeu(x, y) << 1) | (__hisnan(x) << 2); o[5] = __heq(x, y);
    }
}

extern "C" __global__ void bf162_arith(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out, int n) {
    LOOP(i, n) {
        __nv_bfloat162 x = *reinterpret_cast<const __nv_bfloat162*>(a + i);
        __nv_bfloat162 y = *reinterpret_cast<const __nv_bfloat162*>(b + i);
        __nv_bfloat162 z = *reinterpret_cast<const __nv_bfloat162*>(c + i);
        __nv_bfloat162 r[5] = {__hadd2(x, y), __hmul2(x, y), __hfma2(x, y, z), __hfma2_relu(x, y, z), __hmax2(x, y)};
        for (int k = 0; k < 5; ++k) out[5 * i + k] = *reinterpret_cast<unsigned*>(&r[k]);
    }
}

// Mixed: the float math a learner writes around half storage.
extern "C" __global__ void half_dot_float_acc(const unsigned short* a, const unsigned short* b, float* out, int n) {
    int t = threadIdx.x;
    if (8 * t + 7 < n) {
        float acc = 0.0f;
        for (int k = 0; k < 8; ++k) acc += __half2float(H(a[8 * t + k])) * __half2float(H(b[8 * t + k]));
        out[t] = acc;
    }
}

extern "C" __global__ void half_math_fns(const unsigned short* a, unsigned short* out, int n) {
    LOOP(i, n) {
        __half x = H(a[i]);
        unsigned short* o = out + 4 * i;
        o[0] = U(hsqrt(x)); o[1] = U(hfloor(x)); o[2] = U(hrint(x)); o[3] = U(htrunc(x));
    }
}

extern "C" __global__ void bf16_math_fns(const unsigned short* a, unsigned short* out, int n) {
    LOOP(i, n) {
        __nv_bfloat16 x = B(a[i]);
        unsigned short* o = out + 4 * i;
        o[0] = U(hsqrt(x)); o[1] = U(hceil(x)); o[2] = U(hrint(x)); o[3] = U(htrunc(x));
    }
}
