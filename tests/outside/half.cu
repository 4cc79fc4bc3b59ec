// Softmax / layernorm / RMSnorm, half and bfloat16 arithmetic, fp8 conversions.
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

__device__ float block_max(float v, float* sh) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    float r = sh[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); ++w) r = fmaxf(r, sh[w]);
    __syncthreads();
    return r;
}

__device__ float block_sum(float v, float* sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = v;
    __syncthreads();
    float r = 0.f;
    for (int w = 0; w < (int)(blockDim.x >> 5); ++w) r += sh[w];
    __syncthreads();
    return r;
}

// one block per row of 128
extern "C" __global__ void softmax_f32(const float* x, float* y) {
    __shared__ float sh[32];
    const float* r = x + blockIdx.x * blockDim.x;
    float v = r[threadIdx.x];
    float m = block_max(v, sh);
    float e = expf(v - m);
    float s = block_sum(e, sh);
    y[blockIdx.x * blockDim.x + threadIdx.x] = e / s;
}

extern "C" __global__ void softmax_half(const __half* x, __half* y) {
    __shared__ float sh[32];
    float v = __half2float(x[blockIdx.x * blockDim.x + threadIdx.x]);
    float m = block_max(v, sh);
    float e = __expf(v - m);
    float s = block_sum(e, sh);
    y[blockIdx.x * blockDim.x + threadIdx.x] = __float2half(e / s);
}

extern "C" __global__ void layernorm_f32(const float* x, const float* g, const float* b, float* y, float* stats) {
    __shared__ float sh[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    float mean = block_sum(v, sh) / blockDim.x;
    float d = v - mean;
    float var = block_sum(d * d, sh) / blockDim.x;
    float inv = rsqrtf(var + 1e-5f);
    y[i] = d * inv * g[threadIdx.x] + b[threadIdx.x];
    if (threadIdx.x == 0) { stats[2 * blockIdx.x] = mean; stats[2 * blockIdx.x + 1] = var; }
}

extern "C" __global__ void rmsnorm_bf16(const __nv_bfloat16* x, const __nv_bfloat16* g, __nv_bfloat16* y, float* ms) {
    __shared__ float sh[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = __bfloat162float(x[i]);
    float m = block_sum(v * v, sh) / blockDim.x;
    float inv = 1.0f / sqrtf(m + 1e-6f);
    y[i] = __float2bfloat16(v * inv * __bfloat162float(g[threadIdx.x]));
    if (threadIdx.x == 0) ms[blockIdx.x] = m;
}

extern "C" __global__ void half2_math(const __half2* a, const __half2* b, const __half2* c, __half2* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half2 x = a[i], y = b[i], z = c[i];
    out[8 * i + 0] = __hadd2(x, y);
    out[8 * i + 1] = __hmul2(x, y);
    out[8 * i + 2] = __hfma2(x, y, z);
    out[8 * i + 3] = __hmax2(x, y);
    out[8 * i + 4] = __hmin2_nan(x, y);
    out[8 * i + 5] = __hsub2_sat(x, y);
    out[8 * i + 6] = __habs2(__hneg2(x));
    out[8 * i + 7] = __hfma2_relu(x, y, z);
}

extern "C" __global__ void half_scalar(const __half* a, const __half* b, __half* out, int* flags) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half x = a[i], y = b[i];
    out[6 * i + 0] = __hmax(x, y);
    out[6 * i + 1] = __hmin(x, y);
    out[6 * i + 2] = __hmax_nan(x, y);
    out[6 * i + 3] = __hdiv(x, y);
    out[6 * i + 4] = __hfma_sat(x, y, __float2half(0.25f));
    out[6 * i + 5] = __hadd_rn(x, y);
    flags[i] = (__hlt(x, y) << 0) | (__hgt(x, y) << 1) | (__heq(x, y) << 2) | (__hequ(x, y) << 3) |
               (__hltu(x, y) << 4) | (__hisnan(x) << 5) | (__hisinf(x) << 6) | (__hne(x, y) << 7) | (__hneu(x, y) << 8);
}

extern "C" __global__ void half_approx(const __half2* a, __half2* out, __half* outs) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half2 x = a[i];
    out[4 * i + 0] = h2exp(x);
    out[4 * i + 1] = h2exp2(x);
    out[4 * i + 2] = h2rcp(x);
    out[4 * i + 3] = h2sqrt(x);
    outs[2 * i + 0] = hexp(__low2half(x));
    outs[2 * i + 1] = htanh(__high2half(x));
}

extern "C" __global__ void half_convert(const float* f, const double* d, unsigned short* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = f[i];
    out[8 * i + 0] = __half_as_ushort(__float2half_rn(x));
    out[8 * i + 1] = __half_as_ushort(__float2half_rz(x));
    out[8 * i + 2] = __half_as_ushort(__float2half_rd(x));
    out[8 * i + 3] = __half_as_ushort(__float2half_ru(x));
    out[8 * i + 4] = __half_as_ushort(__double2half(d[i]));
    out[8 * i + 5] = __half_as_ushort(__int2half_rn(__float_as_int(x) >> 12));
    out[8 * i + 6] = __half_as_ushort(__uint2half_rd((unsigned)__float_as_int(x)));
    out[8 * i + 7] = __half_as_ushort(__ll2half_rz((long long)__float_as_int(x) << 20));
}

extern "C" __global__ void bf16_convert(const float* f, const double* d, unsigned short* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = f[i];
    out[8 * i + 0] = __bfloat16_as_ushort(__float2bfloat16_rn(x));
    out[8 * i + 1] = __bfloat16_as_ushort(__float2bfloat16_rz(x));
    out[8 * i + 2] = __bfloat16_as_ushort(__float2bfloat16_rd(x));
    out[8 * i + 3] = __bfloat16_as_ushort(__float2bfloat16_ru(x));
    out[8 * i + 4] = __bfloat16_as_ushort(__double2bfloat16(d[i]));
    out[8 * i + 5] = __bfloat16_as_ushort(__int2bfloat16_rn(__float_as_int(x) >> 3));
    out[8 * i + 6] = __bfloat16_as_ushort(__float2bfloat16(__half2float(__float2half(x))));
    out[8 * i + 7] = __bfloat16_as_ushort(__hmul(__float2bfloat16(x), __float2bfloat16(1.5f)));
}

extern "C" __global__ void half_to_int(const __half* h, const __nv_bfloat16* b, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[8 * i + 0] = __half2int_rn(h[i]);
    out[8 * i + 1] = __half2int_rz(h[i]);
    out[8 * i + 2] = __half2int_rd(h[i]);
    out[8 * i + 3] = (int)__half2uint_ru(h[i]);
    out[8 * i + 4] = (int)__half2short_rn(h[i]);
    out[8 * i + 5] = (int)__bfloat162int_rz(b[i]);
    out[8 * i + 6] = (int)__half2ll_rd(h[i]);
    out[8 * i + 7] = (int)__bfloat162ushort_rn(b[i]);
}

extern "C" __global__ void bf16x2_math(const __nv_bfloat162* a, const __nv_bfloat162* b, const __nv_bfloat162* c,
                                       __nv_bfloat162* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __nv_bfloat162 x = a[i], y = b[i], z = c[i];
    out[6 * i + 0] = __hadd2(x, y);
    out[6 * i + 1] = __hmul2(x, y);
    out[6 * i + 2] = __hfma2(x, y, z);
    out[6 * i + 3] = __hmax2_nan(x, y);
    out[6 * i + 4] = __hmin2(x, y);
    out[6 * i + 5] = __hfma2_relu(x, y, z);
}

extern "C" __global__ void fp8_convert(const float* f, unsigned char* out, unsigned short* back) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = f[i];
    __nv_fp8_storage_t a = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
    __nv_fp8_storage_t b = __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E4M3);
    __nv_fp8_storage_t c = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2);
    __nv_fp8_storage_t d = __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2);
    __nv_fp8_storage_t e = __nv_cvt_double_to_fp8((double)x * 3.0, __NV_SATFINITE, __NV_E4M3);
    __nv_fp8_storage_t g = __nv_cvt_halfraw_to_fp8(__half_raw(__float2half(x)), __NV_NOSAT, __NV_E5M2);
    out[6 * i + 0] = a; out[6 * i + 1] = b; out[6 * i + 2] = c; out[6 * i + 3] = d; out[6 * i + 4] = e; out[6 * i + 5] = g;
    back[2 * i + 0] = __half_raw(__nv_cvt_fp8_to_halfraw(a, __NV_E4M3)).x;
    back[2 * i + 1] = __half_raw(__nv_cvt_fp8_to_halfraw(d, __NV_E5M2)).x;
}

extern "C" __global__ void fp8x2_convert(const float2* f, unsigned short* out, unsigned* back) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float2 x = f[i];
    __nv_fp8x2_storage_t a = __nv_cvt_float2_to_fp8x2(x, __NV_SATFINITE, __NV_E4M3);
    __nv_fp8x2_storage_t b = __nv_cvt_float2_to_fp8x2(x, __NV_SATFINITE, __NV_E5M2);
    __nv_bfloat162 bf = __floats2bfloat162_rn(x.x, x.y);
    __nv_fp8x2_storage_t c = __nv_cvt_bfloat16raw2_to_fp8x2(*(__nv_bfloat162_raw*)&bf, __NV_NOSAT, __NV_E4M3);
    __half2 h = __floats2half2_rn(x.x, x.y);
    __nv_fp8x2_storage_t d = __nv_cvt_halfraw2_to_fp8x2(*(__half2_raw*)&h, __NV_SATFINITE, __NV_E5M2);
    out[4 * i + 0] = a; out[4 * i + 1] = b; out[4 * i + 2] = c; out[4 * i + 3] = d;
    __half2_raw r = __nv_cvt_fp8x2_to_halfraw2(a, __NV_E4M3);
    back[2 * i + 0] = (unsigned)r.x | ((unsigned)r.y << 16);
    __nv_fp8_e4m3 cls(x.x);
    __nv_fp8_e5m2 cl2(x.y);
    back[2 * i + 1] = __float_as_uint((float)cls + (float)cl2);
}

// one thread per address: the result of each atomic does not depend on order (edge values: subnormals, NaN, inf)
extern "C" __global__ void atomic_edges(float* f, const float* fb, double* d, const double* db, __half2* h,
                                        const __half2* hb, __nv_bfloat162* b, const __nv_bfloat162* bb,
                                        float* olds, __half* hs, const __half* hsb) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    olds[2 * i] = atomicAdd(&f[i], fb[i]);
    atomicAdd(&d[i], db[i]);
    __half2 o = atomicAdd(&h[i], hb[i]);
    olds[2 * i + 1] = __low2float(o);
    atomicAdd(&b[i], bb[i]);
    atomicAdd(&hs[i], hsb[i]);
    atomicExch(&f[i + 128], fb[i]);
}
