// The same operations compiled with -ftz=true (the manifest gives this file that option):
// subnormal inputs and results are flushed to sign-preserving zero.
#define LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

extern "C" __global__ void ftz_arith(const float* a, const float* b, const float* c, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 6 * i;
        o[0] = a[i] + b[i]; o[1] = a[i] * b[i]; o[2] = fmaf(a[i], b[i], c[i]);
        o[3] = a[i] - c[i]; o[4] = __fmul_rz(a[i], b[i]); o[5] = __fadd_ru(a[i], c[i]);
    }
}

extern "C" __global__ void ftz_div_sqrt(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 3 * i;
        o[0] = a[i] / b[i]; o[1] = sqrtf(a[i]); o[2] = __frcp_rn(a[i]);
    }
}

extern "C" __global__ void ftz_min_max_abs(const float* a, const float* b, float* out, int n) {
    LOOP(i, n) {
        float* o = out + 4 * i;
        o[0] = fminf(a[i], b[i]); o[1] = fmaxf(a[i], b[i]); o[2] = fabsf(a[i]); o[3] = -a[i];
    }
}

extern "C" __global__ void ftz_compare(const float* a, const float* b, int* out, int n) {
    LOOP(i, n) {
        int* o = out + 4 * i;
        o[0] = a[i] < b[i]; o[1] = a[i] == b[i]; o[2] = a[i] != 0.0f; o[3] = a[i] >= b[i];
    }
}

extern "C" __global__ void ftz_convert(const float* a, double* out, int n) {
    LOOP(i, n) {
        double* o = out + 3 * i;
        o[0] = (double)a[i]; o[1] = (double)(float)(a[i] * 1.0f); o[2] = (double)(int)(a[i] * 1e38f);
    }
}
