// Comparisons and selection: ordered and unordered float compares with NaN, isnan/isinf/signbit,
// integer compares across the signed/unsigned boundary, and selects.

#define LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

extern "C" __global__ void cmp_float_ordered(const float* a, const float* b, unsigned char* out, int n) {
    LOOP(i, n) {
        unsigned char* o = out + 6 * i;
        o[0] = a[i] < b[i]; o[1] = a[i] <= b[i]; o[2] = a[i] == b[i];
        o[3] = a[i] != b[i]; o[4] = a[i] > b[i]; o[5] = a[i] >= b[i];
    }
}

extern "C" __global__ void cmp_float_unordered_asm(const float* a, const float* b, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned r;
        asm("{\n\t.reg .pred p0, p1, p2, p3, p4, p5;\n\t"
            "setp.ltu.f32 p0, %1, %2;\n\tsetp.geu.f32 p1, %1, %2;\n\tsetp.equ.f32 p2, %1, %2;\n\t"
            "setp.nan.f32 p3, %1, %2;\n\tsetp.num.f32 p4, %1, %2;\n\tsetp.neu.f32 p5, %1, %2;\n\t"
            "selp.u32 %0, 1, 0, p0;\n\t"
            "@p1 or.b32 %0, %0, 2;\n\t@p2 or.b32 %0, %0, 4;\n\t@p3 or.b32 %0, %0, 8;\n\t"
            "@p4 or.b32 %0, %0, 16;\n\t@p5 or.b32 %0, %0, 32;\n\t}"
            : "=r"(r) : "f"(a[i]), "f"(b[i]));
        out[i] = r;
    }
}

extern "C" __global__ void cmp_double(const double* a, const double* b, unsigned char* out, int n) {
    LOOP(i, n) {
        unsigned char* o = out + 5 * i;
        o[0] = a[i] < b[i]; o[1] = a[i] == b[i]; o[2] = !(a[i] >= b[i]); o[3] = isnan(a[i] - b[i]);
        o[4] = a[i] != a[i];
    }
}

extern "C" __global__ void cmp_classify(const float* a, int* out, int n) {
    LOOP(i, n) {
        int* o = out + 5 * i;
        o[0] = isnan(a[i]); o[1] = isinf(a[i]); o[2] = isfinite(a[i]); o[3] = signbit(a[i]) != 0;
        o[4] = __isinf(a[i]) | (__isnan(a[i]) << 1) | (__finitef(a[i]) << 2) | ((__signbitf(a[i]) != 0) << 3);
    }
}

extern "C" __global__ void cmp_int_mixed(const int* a, const int* b, unsigned char* out, int n) {
    LOOP(i, n) {
        unsigned char* o = out + 6 * i;
        o[0] = a[i] < b[i]; o[1] = (unsigned)a[i] < (unsigned)b[i]; o[2] = a[i] >= b[i];
        o[3] = (long long)a[i] * 2 > (long long)b[i]; o[4] = (unsigned)a[i] >= (unsigned)b[i] ; o[5] = a[i] == ~b[i];
    }
}

extern "C" __global__ void cmp_select(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 4 * i;
        o[0] = a[i] > b[i] ? a[i] : b[i];
        o[1] = a[i] < b[i] ? a[i] : b[i];
        o[2] = (a[i] == a[i]) ? a[i] : 0.0f;
        o[3] = a[i] >= 0.0f ? b[i] : -b[i];
    }
}

extern "C" __global__ void cmp_selp_asm(const int* a, const int* b, int* out, int n) {
    LOOP(i, n) {
        int r, s;
        asm("{\n\t.reg .pred p;\n\tsetp.lt.s32 p, %2, %3;\n\tselp.b32 %0, %2, %3, p;\n\t"
            "setp.lo.u32 p, %2, %3;\n\tselp.b32 %1, %2, %3, p;\n\t}" : "=r"(r), "=r"(s) : "r"(a[i]), "r"(b[i]));
        out[2 * i] = r; out[2 * i + 1] = s;
    }
}

extern "C" __global__ void cmp_set_asm(const float* a, const float* b, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned r0, r1; float f;
        asm("set.lt.u32.f32 %0, %1, %2;" : "=r"(r0) : "f"(a[i]), "f"(b[i]));
        asm("set.gtu.u32.f32 %0, %1, %2;" : "=r"(r1) : "f"(a[i]), "f"(b[i]));
        asm("set.le.f32.f32 %0, %1, %2;" : "=f"(f) : "f"(a[i]), "f"(b[i]));
        out[3 * i] = r0; out[3 * i + 1] = r1; out[3 * i + 2] = __float_as_uint(f);
    }
}

extern "C" __global__ void cmp_pred_logic(const int* a, const int* b, int* out, int n) {
    LOOP(i, n) {
        bool p = a[i] > 0, q = b[i] < 0, r = (a[i] ^ b[i]) & 1;
        out[i] = ((p && q) || (!p && r)) ? (p ^ r ? 3 : 2) : (q ? 1 : 0);
    }
}
