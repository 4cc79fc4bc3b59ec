// bwlab-targets: sm_90a sm_100a
// The packed FP8 conversions, measured: every form of cvt to and from .e4m3x2 / .e5m2x2 that Hopper executes.
// bwlab/checks/cvt_fp8.py launches each kernel over every f16 pair code / every 16-bit e4m3x2 or e5m2x2 code /
// a wide f32 sample and compares every result with bwlab.hw.floats (the emulator's cvt) bit for bit.
//
//   cvt_f32_<T>[_relu]   cvt.rn.satfinite{.relu}.<T>x2.f32 d, a, b      (a -> the upper byte of d)
//   cvt_f16x2_<T>[_relu] cvt.rn.satfinite{.relu}.<T>x2.f16x2 d, a       (the upper half of a -> the upper byte)
//   cvt_to_f16x2_<T>[_relu] cvt.rn{.relu}.f16x2.<T>x2 d, a               (the low byte of a -> the low half of d)
// One thread per element; n elements; inputs and outputs are raw bits.
#include "ptx.cuh"

#define BW_CVT_F32(NAME, FORM)                                                                                \
    extern "C" __global__ void NAME(const u32 *a, const u32 *b, unsigned short *d, u32 n) {                 \
        u32 i = blockIdx.x * blockDim.x + threadIdx.x;                                                       \
        if (i >= n) return;                                                                                  \
        unsigned short r;                                                                                    \
        asm volatile("cvt." FORM ".f32 %0, %1, %2;" : "=h"(r) : "f"(__uint_as_float(a[i])),                 \
                     "f"(__uint_as_float(b[i])));                                                            \
        d[i] = r;                                                                                            \
    }

#define BW_CVT_F16X2(NAME, FORM)                                                                              \
    extern "C" __global__ void NAME(const u32 *a, unsigned short *d, u32 n) {                                \
        u32 i = blockIdx.x * blockDim.x + threadIdx.x;                                                       \
        if (i >= n) return;                                                                                  \
        unsigned short r;                                                                                    \
        asm volatile("cvt." FORM ".f16x2 %0, %1;" : "=h"(r) : "r"(a[i]));                                   \
        d[i] = r;                                                                                            \
    }

#define BW_CVT_TO_F16X2(NAME, FORM)                                                                           \
    extern "C" __global__ void NAME(const unsigned short *a, u32 *d, u32 n) {                                \
        u32 i = blockIdx.x * blockDim.x + threadIdx.x;                                                       \
        if (i >= n) return;                                                                                  \
        u32 r;                                                                                               \
        asm volatile("cvt." FORM " %0, %1;" : "=r"(r) : "h"(a[i]));                                         \
        d[i] = r;                                                                                            \
    }

BW_CVT_F32(cvt_f32_e4m3, "rn.satfinite.e4m3x2")
BW_CVT_F32(cvt_f32_e4m3_relu, "rn.satfinite.relu.e4m3x2")
BW_CVT_F32(cvt_f32_e5m2, "rn.satfinite.e5m2x2")
BW_CVT_F32(cvt_f32_e5m2_relu, "rn.satfinite.relu.e5m2x2")
BW_CVT_F16X2(cvt_f16x2_e4m3, "rn.satfinite.e4m3x2")
BW_CVT_F16X2(cvt_f16x2_e4m3_relu, "rn.satfinite.relu.e4m3x2")
BW_CVT_F16X2(cvt_f16x2_e5m2, "rn.satfinite.e5m2x2")
BW_CVT_F16X2(cvt_f16x2_e5m2_relu, "rn.satfinite.relu.e5m2x2")
BW_CVT_TO_F16X2(cvt_to_f16x2_e4m3, "rn.f16x2.e4m3x2")
BW_CVT_TO_F16X2(cvt_to_f16x2_e4m3_relu, "rn.relu.f16x2.e4m3x2")
BW_CVT_TO_F16X2(cvt_to_f16x2_e5m2, "rn.f16x2.e5m2x2")
BW_CVT_TO_F16X2(cvt_to_f16x2_e5m2_relu, "rn.relu.f16x2.e5m2x2")
