// Single and double precision with every rounding mode the CUDA math API exposes, NaN payloads,
// signed zeros, infinities and subnormals. Compiled without -ftz: subnormals are kept.

#define LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

extern "C" __global__ void flt_add_modes(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 4 * i;
        o[0] = __fadd_rn(a[i], b[i]); o[1] = __fadd_rz(a[i], b[i]);
        o[2] = __fadd_rd(a[i], b[i]); o[3] = __fadd_ru(a[i], b[i]);
    }
}

extern "C" __global__ void flt_sub_modes(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 4 * i;
        o[0] = __fsub_rn(a[i], b[i]); o[1] = __fsub_rz(a[i], b[i]);
        o[2] = __fsub_rd(a[i], b[i]); o[3] = __fsub_ru(a[i], b[i]);
    }
}

extern "C" __global__ void flt_mul_modes(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 4 * i;
        o[0] = __fmul_rn(a[i], b[i]); o[1] = __fmul_rz(a[i], b[i]);
        o[2] = __fmul_rd(a[i], b[i]); o[3] = __fmul_ru(a[i], b[i]);
    }
}

extern "C" __global__ void flt_fma_modes(const float* a, const float* b, const float* c, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 5 * i;
        o[0] = __fmaf_rn(a[i], b[i], c[i]); o[1] = __fmaf_rz(a[i], b[i], c[i]);
        o[2] = __fmaf_rd(a[i], b[i], c[i]); o[3] = __fmaf_ru(a[i], b[i], c[i]);
        o[4] = __fmaf_ieee_rn(a[i], b[i], c[i]);
    }
}

// a*b+c written as an expression: the compiler contracts it into one fma.rn.
extern "C" __global__ void flt_fma_contract(const float* a, const float* b, const float* c, float* out, int n) {
    LOOP(i, n) {
        out[2 * i] = a[i] * b[i] + c[i];
        out[2 * i + 1] = fmaf(a[i], -b[i], c[i]);
    }
}

extern "C" __global__ void flt_div(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 6 * i;
        o[0] = a[i] / b[i]; o[1] = __fdiv_rn(a[i], b[i]); o[2] = __fdiv_rz(a[i], b[i]);
        o[3] = __fdiv_rd(a[i], b[i]); o[4] = __fdiv_ru(a[i], b[i]); o[5] = __frcp_rn(b[i]);
    }
}

extern "C" __global__ void flt_rcp_modes(const float* a, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 4 * i;
        o[0] = __frcp_rn(a[i]); o[1] = __frcp_rz(a[i]); o[2] = __frcp_rd(a[i]); o[3] = __frcp_ru(a[i]);
    }
}

extern "C" __global__ void flt_sqrt(const float* a, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 5 * i;
        o[0] = sqrtf(a[i]); o[1] = __fsqrt_rn(a[i]); o[2] = __fsqrt_rz(a[i]);
        o[3] = __fsqrt_rd(a[i]); o[4] = __fsqrt_ru(a[i]);
    }
}

extern "C" __global__ void flt_min_max(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 4 * i;
        o[0] = fminf(a[i], b[i]); o[1] = fmaxf(a[i], b[i]);
        o[2] = fminf(b[i], a[i]); o[3] = fmaxf(b[i], a[i]);
    }
}

extern "C" __global__ void flt_min_max_nan_asm(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float r0, r1, r2, r3;
        asm("min.NaN.f32 %0, %1, %2;" : "=f"(r0) : "f"(a[i]), "f"(b[i]));
        asm("max.NaN.f32 %0, %1, %2;" : "=f"(r1) : "f"(a[i]), "f"(b[i]));
        asm("max.xorsign.abs.f32 %0, %1, %2;" : "=f"(r2) : "f"(a[i]), "f"(b[i]));
        asm("min.xorsign.abs.f32 %0, %1, %2;" : "=f"(r3) : "f"(a[i]), "f"(b[i]));
        float* o = out + 4 * i;
        o[0] = r0; o[1] = r1; o[2] = r2; o[3] = r3;
    }
}

extern "C" __global__ void flt_sign_ops(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 4 * i;
        o[0] = copysignf(a[i], b[i]); o[1] = fabsf(a[i]); o[2] = -a[i]; o[3] = fdimf(a[i], b[i]);
    }
}

// Results that are NaN: which NaN comes out (canonical or an input's payload).
extern "C" __global__ void flt_nan_results(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 6 * i;
        o[0] = a[i] + b[i]; o[1] = a[i] * b[i]; o[2] = a[i] - b[i];
        o[3] = fmaf(a[i], b[i], 1.0f); o[4] = a[i] / b[i]; o[5] = sqrtf(a[i]);
    }
}

extern "C" __global__ void flt_fmod_rem(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 3 * i;
        o[0] = fmodf(a[i], b[i]); o[1] = remainderf(a[i], b[i]); o[2] = truncf(a[i] / b[i]);
    }
}

extern "C" __global__ void flt_frexp_ldexp(const float* a, const int* e, float* out, int n) {
    LOOP(i, n) {
        int ex;
        float m = frexpf(a[i], &ex);
        float* o = out + 5 * i;
        o[0] = m; o[1] = __int_as_float(ex); o[2] = ldexpf(a[i], e[i]); o[3] = __int_as_float(ilogbf(a[i]));
        o[4] = logbf(a[i]);
    }
}

extern "C" __global__ void flt_nextafter_modf(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float ip;
        float* o = out + 3 * i;
        o[0] = nextafterf(a[i], b[i]); o[1] = modff(a[i], &ip); o[2] = ip;
    }
}

extern "C" __global__ void flt_sum_in_order(const float* a, float* out, int n) {
    // one thread per 8 consecutive values, summed left to right: rounding after every add
    int t = threadIdx.x;
    if (8 * t + 7 < n) {
        float s = 0.0f;
        for (int k = 0; k < 8; ++k) s += a[8 * t + k];
        out[t] = s;
    }
}

extern "C" __global__ void flt_poly_horner(const float* a, float* out, int n) {
    LOOP(i, n) {
        float x = a[i];
        out[i] = ((((0.0083333f * x) - 0.1666667f) * x * x + 1.0f) * x) / (1.0f + x * x);
    }
}

extern "C" __global__ void dbl_add_mul_modes(const double* a, const double* b, double* out, int n) {
    LOOP(i, n) {
        double* o = out + 8 * i;
        o[0] = __dadd_rn(a[i], b[i]); o[1] = __dadd_rz(a[i], b[i]); o[2] = __dadd_rd(a[i], b[i]);
        o[3] = __dadd_ru(a[i], b[i]); o[4] = __dmul_rn(a[i], b[i]); o[5] = __dmul_rz(a[i], b[i]);
        o[6] = __dmul_rd(a[i], b[i]); o[7] = __dmul_ru(a[i], b[i]);
    }
}

extern "C" __global__ void dbl_fma_modes(const double* a, const double* b, const double* c, double* out, int n) {
    LOOP(i, n) {
        double* o = out + 5 * i;
        o[0] = __fma_rn(a[i], b[i], c[i]); o[1] = __fma_rz(a[i], b[i], c[i]);
        o[2] = __fma_rd(a[i], b[i], c[i]); o[3] = __fma_ru(a[i], b[i], c[i]);
        o[4] = a[i] * b[i] - c[i];
    }
}

extern "C" __global__ void dbl_div_sqrt(const double* a, const double* b, double* out, int n) {
    LOOP(i, n) {
        double* o = out + 8 * i;
        o[0] = a[i] / b[i]; o[1] = __ddiv_rz(a[i], b[i]); o[2] = __ddiv_rd(a[i], b[i]); o[3] = __ddiv_ru(a[i], b[i]);
        o[4] = sqrt(a[i]); o[5] = __dsqrt_rz(a[i]); o[6] = __dsqrt_ru(a[i]); o[7] = __drcp_rn(b[i]);
    }
}

extern "C" __global__ void dbl_min_max_sign(const double* a, const double* b, double* out, int n) {
    LOOP(i, n) {
        double* o = out + 6 * i;
        o[0] = fmin(a[i], b[i]); o[1] = fmax(a[i], b[i]); o[2] = fmin(b[i], a[i]);
        o[3] = copysign(a[i], b[i]); o[4] = fabs(a[i]); o[5] = -a[i];
    }
}

extern "C" __global__ void dbl_nan_results(const double* a, const double* b, double* out, int n) {
    LOOP(i, n) {
        double* o = out + 4 * i;
        o[0] = a[i] + b[i]; o[1] = a[i] * b[i]; o[2] = fma(a[i], b[i], 0.5); o[3] = a[i] - b[i];
    }
}

extern "C" __global__ void dbl_fmod_trunc(const double* a, const double* b, double* out, int n) {
    LOOP(i, n) {
        double* o = out + 3 * i;
        o[0] = fmod(a[i], b[i]); o[1] = floor(a[i]); o[2] = ceil(a[i] * 0.5);
    }
}

extern "C" __global__ void mixed_float_double(const float* a, const double* b, double* out, int n) {
    LOOP(i, n) {
        double* o = out + 3 * i;
        o[0] = a[i] * b[i]; o[1] = (double)(a[i] * (float)b[i]); o[2] = a[i] + 1e-30;
    }
}

// The sign of an exact zero result depends on the rounding mode: x - x is -0 only when rounding down.
extern "C" __global__ void flt_zero_sign_modes(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float p = a[i] * b[i];
        float* o = out + 8 * i;
        o[0] = __fsub_rn(a[i], a[i]); o[1] = __fsub_rd(a[i], a[i]); o[2] = __fadd_ru(a[i], -a[i]);
        o[3] = __fmaf_rd(a[i], b[i], -p); o[4] = __fmaf_rn(a[i], b[i], -p); o[5] = __fmul_rd(a[i], 0.0f);
        o[6] = __fadd_rd(-0.0f, 0.0f); o[7] = __fmaf_rz(-a[i], 0.0f, -0.0f);
    }
}
