// Second outside set: integer intrinsics, half/bf16 intrinsics, float math library, division by constants.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void int_intrinsics(const unsigned* a, const unsigned* b, const unsigned long long* c,
                                          unsigned* out, unsigned long long* out64) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = a[t], y = b[t];
    unsigned long long z = c[t], w = c[(t + 7) & 127];
    out[8 * t] = __umulhi(x, y);
    out[8 * t + 1] = (unsigned)__mulhi((int)x, (int)y);
    out[8 * t + 2] = __byte_perm(x, y, y & 0x7777);
    out[8 * t + 3] = __funnelshift_l(x, y, t);
    out[8 * t + 4] = __funnelshift_rc(x, y, t * 3);
    out[8 * t + 5] = __brev(x);
    out[8 * t + 6] = __ffsll((long long)z) | (__popcll(z) << 8) | (__clzll((long long)z) << 16);
    out[8 * t + 7] = __ffs((int)x) | (__clz((int)y) << 8) | (__popc(x ^ y) << 16);
    out64[3 * t] = __umul64hi(z, w);
    out64[3 * t + 1] = (unsigned long long)__mul64hi((long long)z, (long long)w);
    out64[3 * t + 2] = __brevll(z);
}

extern "C" __global__ void div_by_consts(const int* a, const unsigned* u, const long long* l, int* out, long long* out64) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    int x = a[t];
    unsigned y = u[t];
    long long z = l[t];
    out[10 * t] = x / 3;  out[10 * t + 1] = x % 3;
    out[10 * t + 2] = x / 7; out[10 * t + 3] = x % -7;
    out[10 * t + 4] = x / 1000; out[10 * t + 5] = x / -16;
    out[10 * t + 6] = (int)(y / 10u); out[10 * t + 7] = (int)(y % 641u);
    out[10 * t + 8] = (int)(y / 0x80000001u); out[10 * t + 9] = x / 2147483647;
    out64[4 * t] = z / 10; out64[4 * t + 1] = z % 1000000007LL;
    out64[4 * t + 2] = (long long)((unsigned long long)z / 3ull); out64[4 * t + 3] = z / -5;
}

extern "C" __global__ void long_math(const long long* a, const long long* b, long long* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    long long x = a[t], y = b[t];
    out[8 * t] = llabs(x);
    out[8 * t + 1] = llmin(x, y) ^ llmax(x, y);
    out[8 * t + 2] = (long long)((unsigned long long)x * (unsigned long long)y);
    out[8 * t + 3] = y != 0 && !(x == (-0x7fffffffffffffffLL - 1) && y == -1) ? x / y : 0;
    out[8 * t + 4] = y != 0 && !(x == (-0x7fffffffffffffffLL - 1) && y == -1) ? x % y : 0;
    out[8 * t + 5] = (long long)((unsigned long long)x >> (y & 63)) + (x << ((y >> 8) & 63));
    out[8 * t + 6] = __double2ll_rn((double)x * 0.5) + __float2ll_rz((float)y * 1e-10f);
    out[8 * t + 7] = (long long)__ll2double_rn(x) == x;
}

extern "C" __global__ void half_intrinsics(const float* f, const unsigned short* hb, unsigned short* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = f[t];
    out[12 * t] = __half_as_ushort(__float2half_rz(x));
    out[12 * t + 1] = __half_as_ushort(__float2half_rd(x));
    out[12 * t + 2] = __half_as_ushort(__float2half_ru(x));
    out[12 * t + 3] = __half_as_ushort(__float2half_rn(x));
    out[12 * t + 4] = __bfloat16_as_ushort(__float2bfloat16_rz(x));
    out[12 * t + 5] = __bfloat16_as_ushort(__float2bfloat16_rd(x));
    out[12 * t + 6] = __bfloat16_as_ushort(__float2bfloat16_ru(x));
    __half h = __ushort_as_half(hb[t]);
    out[12 * t + 7] = (unsigned short)__half2int_rz(h);
    out[12 * t + 8] = (unsigned short)__half2short_rd(h);
    out[12 * t + 9] = __half2ushort_ru(h);
    out[12 * t + 10] = __half_as_ushort(__int2half_rd((int)(x * 1000.f)));
    out[12 * t + 11] = __half_as_ushort(__uint2half_ru((unsigned)fabsf(x * 70000.f)));
}

extern "C" __global__ void half2_fma_max(const __half2* a, const __half2* b, const __half2* c, __half2* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    __half2 x = a[t], y = b[t], z = c[t];
    out[8 * t] = __hfma2(x, y, z);
    out[8 * t + 1] = __hmax2_nan(x, y);
    out[8 * t + 2] = __hmin2_nan(x, y);
    out[8 * t + 3] = __hfma2_sat(x, y, z);
    out[8 * t + 4] = __hmax2(x, y);
    out[8 * t + 5] = __hfma2_relu(x, y, z);
    out[8 * t + 6] = __habs2(__hsub2(x, z));
    out[8 * t + 7] = __hmul2_sat(x, z);
}

extern "C" __global__ void bf16_math(const __nv_bfloat16* a, const __nv_bfloat16* b, const __nv_bfloat16* c,
                                     unsigned short* out, float* fout) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    __nv_bfloat16 x = a[t], y = b[t], z = c[t];
    out[8 * t] = __bfloat16_as_ushort(__hfma(x, y, z));
    out[8 * t + 1] = __bfloat16_as_ushort(__hadd(x, y));
    out[8 * t + 2] = __bfloat16_as_ushort(__hmul(x, z));
    out[8 * t + 3] = __bfloat16_as_ushort(__hmax_nan(x, y));
    out[8 * t + 4] = __bfloat16_as_ushort(__hsub_sat(x, y));
    out[8 * t + 5] = __bfloat16_as_ushort(__hneg(__habs(z)));
    out[8 * t + 6] = __bfloat16_as_ushort(__hfma_relu(x, y, z));
    out[8 * t + 7] = (unsigned short)(__hlt(x, y) | (__hge(y, z) << 1) | (__hisnan(x) << 2) | (__hisinf(z) << 3)
                                      | (__hequ(x, y) << 4));
    fout[2 * t] = __bfloat162float(x) * __bfloat162float(y);
    fout[2 * t + 1] = __low2float(__halves2bfloat162(x, z)) + __high2float(__halves2bfloat162(x, z));
}

extern "C" __global__ void saturate_f(const float* a, float* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[t];
    out[4 * t] = __saturatef(x);
    out[4 * t + 1] = __saturatef(x * 0.5f + 0.25f);
    out[4 * t + 2] = fminf(fmaxf(x, 0.f), 1.f);
    out[4 * t + 3] = __fdiv_rn(__saturatef(x), 3.0f);
}

extern "C" __global__ void math_more_f(const float* a, const float* b, const float* c, float* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[t], y = b[t], z = c[t];
    out[8 * t] = norm3df(x, y, z);
    out[8 * t + 1] = rhypotf(x, y);
    out[8 * t + 2] = erfcinvf(fabsf(x) - floorf(fabsf(x)) + 0.25f);
    out[8 * t + 3] = lgammaf(x);
    out[8 * t + 4] = tgammaf(y * 0.1f);
    out[8 * t + 5] = cyl_bessel_i0f(z * 0.5f);
    float v3[3] = {x, y, z};
    out[8 * t + 6] = normf(3, v3) - norm4df(x, y, z, 1.f);
    out[8 * t + 7] = fdimf(x, y) + copysignf(fmodf(x, 3.5f), y) + remainderf(y, 1.25f);
}

extern "C" __global__ void math_exact_f(const float* a, const float* b, float* out, int* iout) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[t], y = b[t];
    out[6 * t] = nextafterf(x, y);
    out[6 * t + 1] = truncf(x) + rintf(y);
    out[6 * t + 2] = ldexpf(x, (int)y % 40);
    out[6 * t + 3] = scalbnf(y, -3) + fmaf(x, y, -x * y);
    int q = 0;
    out[6 * t + 4] = remquof(x, y, &q);
    iout[2 * t] = q;
    out[6 * t + 5] = __fsqrt_rn(fabsf(x)) + __fsqrt_rz(fabsf(y));
    iout[2 * t + 1] = ilogbf(x) ^ (signbit(y) << 20) ^ (isfinite(x) << 21);
}

extern "C" __global__ void double_more(const double* a, const double* b, double* out) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    double x = a[t], y = b[t];
    out[6 * t] = fma(x, y, 1.0);
    out[6 * t + 1] = __dadd_rz(x, y) - __dmul_ru(x, 0.1);
    out[6 * t + 2] = __ddiv_rd(x, y);
    out[6 * t + 3] = __dsqrt_ru(fabs(y));
    out[6 * t + 4] = fmin(x, y) + fmax(x, -y) + trunc(x) + nearbyint(y);
    out[6 * t + 5] = __drcp_rn(x) + __fma_rz(x, y, x);
}
