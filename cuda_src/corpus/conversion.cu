// Conversions: float <-> int in every rounding mode, f32/f64 -> f16/bf16, rounding functions,
// saturation, and the 8-bit float formats (e4m3, e5m2) with satfinite, written as the PTX cvt
// that cuda_fp8.h itself issues on sm_89 and later.
#include <cuda_fp16.h>
#include <cuda_bf16.h>

#define LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

extern "C" __global__ void cvt_f2i(const float* a, int* out, int n) {
    LOOP(i, n) {
        int* o = out + 8 * i;
        o[0] = __float2int_rn(a[i]); o[1] = __float2int_rz(a[i]); o[2] = __float2int_rd(a[i]);
        o[3] = __float2int_ru(a[i]); o[4] = (int)__float2uint_rn(a[i]); o[5] = (int)__float2uint_rz(a[i]);
        o[6] = (int)__float2uint_rd(a[i]); o[7] = (int)__float2uint_ru(a[i]);
    }
}

extern "C" __global__ void cvt_f2ll(const float* a, long long* out, int n) {
    LOOP(i, n) {
        long long* o = out + 6 * i;
        o[0] = __float2ll_rn(a[i]); o[1] = __float2ll_rz(a[i]); o[2] = __float2ll_rd(a[i]);
        o[3] = __float2ll_ru(a[i]); o[4] = (long long)__float2ull_rn(a[i]); o[5] = (long long)a[i];
    }
}

extern "C" __global__ void cvt_d2i(const double* a, long long* out, int n) {
    LOOP(i, n) {
        long long* o = out + 6 * i;
        o[0] = __double2int_rn(a[i]); o[1] = __double2int_rd(a[i]); o[2] = __double2uint_ru(a[i]);
        o[3] = __double2ll_rn(a[i]); o[4] = __double2ll_rz(a[i]); o[5] = (long long)__double2ull_rd(a[i]);
    }
}

extern "C" __global__ void cvt_i2f(const long long* a, float* out, int n) {
    LOOP(i, n) {
        long long x = a[i];
        int x32 = (int)x;
        float* o = out + 12 * i;
        o[0] = __int2float_rn(x32); o[1] = __int2float_rz(x32); o[2] = __int2float_rd(x32); o[3] = __int2float_ru(x32);
        o[4] = __uint2float_rz((unsigned)x32); o[5] = __uint2float_ru((unsigned)x32);
        o[6] = __ll2float_rn(x); o[7] = __ll2float_rz(x); o[8] = __ll2float_rd(x); o[9] = __ll2float_ru(x);
        o[10] = __ull2float_rn((unsigned long long)x); o[11] = __ull2float_rd((unsigned long long)x);
    }
}

extern "C" __global__ void cvt_i2d(const long long* a, double* out, int n) {
    LOOP(i, n) {
        double* o = out + 5 * i;
        o[0] = __ll2double_rn(a[i]); o[1] = __ll2double_rz(a[i]); o[2] = __ll2double_rd(a[i]);
        o[3] = __ll2double_ru(a[i]); o[4] = __ull2double_rd((unsigned long long)a[i]);
    }
}

extern "C" __global__ void cvt_d2f(const double* a, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 4 * i;
        o[0] = __double2float_rn(a[i]); o[1] = __double2float_rz(a[i]);
        o[2] = __double2float_rd(a[i]); o[3] = __double2float_ru(a[i]);
    }
}

extern "C" __global__ void cvt_f2d_roundtrip(const float* a, float* out, int n) {
    LOOP(i, n) {
        double d = a[i];
        out[2 * i] = (float)(d * 3.0);
        out[2 * i + 1] = (float)(d / 3.0);
    }
}

extern "C" __global__ void cvt_f2h(const float* a, unsigned short* out, int n) {
    LOOP(i, n) {
        unsigned short* o = out + 4 * i;
        o[0] = __half_as_ushort(__float2half_rn(a[i])); o[1] = __half_as_ushort(__float2half_rz(a[i]));
        o[2] = __half_as_ushort(__float2half_rd(a[i])); o[3] = __half_as_ushort(__float2half_ru(a[i]));
    }
}

extern "C" __global__ void cvt_f2bf(const float* a, unsigned short* out, int n) {
    LOOP(i, n) {
        unsigned short* o = out + 4 * i;
        o[0] = __bfloat16_as_ushort(__float2bfloat16_rn(a[i])); o[1] = __bfloat16_as_ushort(__float2bfloat16_rz(a[i]));
        o[2] = __bfloat16_as_ushort(__float2bfloat16_rd(a[i])); o[3] = __bfloat16_as_ushort(__float2bfloat16_ru(a[i]));
    }
}

extern "C" __global__ void cvt_d2h_bf(const double* a, unsigned short* out, int n) {
    LOOP(i, n) {
        out[2 * i] = __half_as_ushort(__double2half(a[i]));
        out[2 * i + 1] = __bfloat16_as_ushort(__double2bfloat16(a[i]));
    }
}

extern "C" __global__ void cvt_h2f_bf2f(const unsigned short* a, float* out, int n) {
    LOOP(i, n) {
        out[2 * i] = __half2float(__ushort_as_half(a[i]));
        out[2 * i + 1] = __bfloat162float(__ushort_as_bfloat16(a[i]));
    }
}

extern "C" __global__ void cvt_i2h_bf(const int* a, unsigned short* out, int n) {
    LOOP(i, n) {
        unsigned short* o = out + 6 * i;
        o[0] = __half_as_ushort(__int2half_rn(a[i])); o[1] = __half_as_ushort(__int2half_rz(a[i]));
        o[2] = __half_as_ushort(__short2half_rd((short)a[i])); o[3] = __bfloat16_as_ushort(__int2bfloat16_rn(a[i]));
        o[4] = __bfloat16_as_ushort(__int2bfloat16_rz(a[i])); o[5] = (unsigned short)__half2int_rn(__ushort_as_half((unsigned short)a[i]));
    }
}

extern "C" __global__ void cvt_h2i(const unsigned short* a, int* out, int n) {
    LOOP(i, n) {
        __half h = __ushort_as_half(a[i]);
        __nv_bfloat16 b = __ushort_as_bfloat16(a[i]);
        int* o = out + 6 * i;
        o[0] = __half2int_rz(h); o[1] = __half2int_rd(h); o[2] = (int)__half2uint_ru(h);
        o[3] = __half2short_rn(h); o[4] = __bfloat162int_rz(b); o[5] = __bfloat162int_rn(b);
    }
}

extern "C" __global__ void cvt_pack2(const float* a, const float* b, unsigned* out, int n) {
    LOOP(i, n) {
        __half2 h = __floats2half2_rn(a[i], b[i]);
        __nv_bfloat162 bf = __floats2bfloat162_rn(a[i], b[i]);
        out[2 * i] = *reinterpret_cast<unsigned*>(&h);
        out[2 * i + 1] = *reinterpret_cast<unsigned*>(&bf);
    }
}

extern "C" __global__ void cvt_round_fns(const float* a, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 6 * i;
        o[0] = floorf(a[i]); o[1] = ceilf(a[i]); o[2] = truncf(a[i]);
        o[3] = roundf(a[i]); o[4] = rintf(a[i]); o[5] = nearbyintf(a[i]);
    }
}

extern "C" __global__ void cvt_round_fns_f64(const double* a, double* out, int n) {
    LOOP(i, n) {
        double* o = out + 6 * i;
        o[0] = floor(a[i]); o[1] = ceil(a[i]); o[2] = trunc(a[i]);
        o[3] = round(a[i]); o[4] = rint(a[i]); o[5] = nearbyint(a[i]);
    }
}

extern "C" __global__ void cvt_lround(const float* a, long long* out, int n) {
    LOOP(i, n) {
        out[3 * i] = lrintf(a[i]); out[3 * i + 1] = llroundf(a[i]); out[3 * i + 2] = (long long)(int)a[i];
    }
}

extern "C" __global__ void cvt_saturate(const float* a, float* out, int n) {
    LOOP(i, n) {
        float r;
        asm("cvt.sat.f32.f32 %0, %1;" : "=f"(r) : "f"(a[i]));
        out[2 * i] = __saturatef(a[i]);
        out[2 * i + 1] = r;
    }
}

extern "C" __global__ void cvt_int_narrow(const long long* a, int* out, int n) {
    LOOP(i, n) {
        long long x = a[i];
        int* o = out + 5 * i;
        o[0] = (signed char)x; o[1] = (unsigned char)x; o[2] = (short)x; o[3] = (unsigned short)x; o[4] = (int)x;
    }
}

extern "C" __global__ void cvt_int_sat_asm(const long long* a, int* out, int n) {
    LOOP(i, n) {
        long long x = a[i];
        int s8, u8, s16, s32; unsigned u32;
        asm("cvt.sat.s8.s64 %0, %1;" : "=r"(s8) : "l"(x));
        asm("cvt.sat.u8.s64 %0, %1;" : "=r"(u8) : "l"(x));
        asm("cvt.sat.s16.s64 %0, %1;" : "=r"(s16) : "l"(x));
        asm("cvt.sat.s32.s64 %0, %1;" : "=r"(s32) : "l"(x));
        asm("cvt.sat.u32.s64 %0, %1;" : "=r"(u32) : "l"(x));
        int* o = out + 5 * i;
        o[0] = s8; o[1] = u8; o[2] = s16; o[3] = s32; o[4] = (int)u32;
    }
}

extern "C" __global__ void cvt_fp8_from_f32(const float* a, const float* b, unsigned short* out, int n) {
    LOOP(i, n) {
        unsigned short e4, e5, e4r, e5r;
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(e4) : "f"(a[i]), "f"(b[i]));
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(e5) : "f"(a[i]), "f"(b[i]));
        asm("cvt.rn.satfinite.relu.e4m3x2.f32 %0, %1, %2;" : "=h"(e4r) : "f"(a[i]), "f"(b[i]));
        asm("cvt.rn.satfinite.relu.e5m2x2.f32 %0, %1, %2;" : "=h"(e5r) : "f"(a[i]), "f"(b[i]));
        unsigned short* o = out + 4 * i;
        o[0] = e4; o[1] = e5; o[2] = e4r; o[3] = e5r;
    }
}

extern "C" __global__ void cvt_fp8_from_f16x2(const unsigned* a, unsigned short* out, int n) {
    LOOP(i, n) {
        unsigned short e4, e5, e4s;
        asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(e4) : "r"(a[i]));
        asm("cvt.rn.satfinite.e5m2x2.f16x2 %0, %1;" : "=h"(e5) : "r"(a[i]));
        asm("cvt.rn.satfinite.relu.e4m3x2.f16x2 %0, %1;" : "=h"(e4s) : "r"(a[i]));
        unsigned short* o = out + 3 * i;
        o[0] = e4; o[1] = e5; o[2] = e4s;
    }
}

extern "C" __global__ void cvt_fp8_to_f16x2(const unsigned short* a, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned h4, h5, h4r;
        asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h4) : "h"(a[i]));
        asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h5) : "h"(a[i]));
        asm("cvt.rn.relu.f16x2.e4m3x2 %0, %1;" : "=r"(h4r) : "h"(a[i]));
        out[3 * i] = h4; out[3 * i + 1] = h5; out[3 * i + 2] = h4r;
    }
}

extern "C" __global__ void cvt_f32_to_f16x2_bf16x2_asm(const float* a, const float* b, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned r0, r1, r2, r3;
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r0) : "f"(a[i]), "f"(b[i]));
        asm("cvt.rz.relu.f16x2.f32 %0, %1, %2;" : "=r"(r1) : "f"(a[i]), "f"(b[i]));
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r2) : "f"(a[i]), "f"(b[i]));
        asm("cvt.rz.satfinite.bf16x2.f32 %0, %1, %2;" : "=r"(r3) : "f"(a[i]), "f"(b[i]));
        unsigned* o = out + 4 * i;
        o[0] = r0; o[1] = r1; o[2] = r2; o[3] = r3;
    }
}

extern "C" __global__ void cvt_tf32(const float* a, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned r0, r1;
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r0) : "f"(a[i]));
        asm("cvt.rna.satfinite.tf32.f32 %0, %1;" : "=r"(r1) : "f"(a[i]));
        out[2 * i] = r0; out[2 * i + 1] = r1;
    }
}

extern "C" __global__ void cvt_bits(const float* a, int* out, int n) {
    LOOP(i, n) {
        out[3 * i] = __float_as_int(a[i]);
        out[3 * i + 1] = (int)__double2hiint((double)a[i]);
        out[3 * i + 2] = __float_as_int(__int_as_float(__float_as_int(a[i]) ^ 0x80000000));
    }
}

// Plain C casts on values outside the destination's range and on NaN: cvt.rzi with saturation.
extern "C" __global__ void cvt_c_casts_specials(const float* a, const double* d, long long* out, int n) {
    LOOP(i, n) {
        long long* o = out + 8 * i;
        o[0] = (int)a[i]; o[1] = (unsigned)a[i]; o[2] = (long long)a[i]; o[3] = (long long)(unsigned long long)a[i];
        o[4] = (int)d[i]; o[5] = (unsigned)d[i]; o[6] = (long long)d[i]; o[7] = (short)(int)a[i];
    }
}

extern "C" __global__ void cvt_half2_pairs(const float* a, const float* b, unsigned* out, int n) {
    LOOP(i, n) {
        __half2 h = __float22half2_rn(make_float2(a[i], b[i]));
        __half2 g = __halves2half2(__float2half_rz(a[i]), __float2half_rd(b[i]));
        float2 back = __half22float2(h);
        __nv_bfloat162 bf = __float22bfloat162_rn(make_float2(b[i], a[i]));
        out[4 * i] = *reinterpret_cast<unsigned*>(&h);
        out[4 * i + 1] = *reinterpret_cast<unsigned*>(&g);
        out[4 * i + 2] = __float_as_uint(back.x) ^ __float_as_uint(back.y);
        out[4 * i + 3] = *reinterpret_cast<unsigned*>(&bf);
    }
}
