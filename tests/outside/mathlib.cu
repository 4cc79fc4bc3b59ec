// The CUDA math library and the rounding intrinsics, float and double.

extern "C" __global__ void math_special_f(const float* a, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i];
    float* o = out + 8 * i;
    o[0] = erff(x);
    o[1] = erfcf(x);
    o[2] = lgammaf(x);
    o[3] = tgammaf(x);
    o[4] = cbrtf(x);
    o[5] = j0f(x);
    o[6] = erfinvf(x * 0.125f);
    o[7] = normcdff(x);
}

extern "C" __global__ void math_binary_f(const float* a, const float* b, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i], y = b[i];
    float* o = out + 10 * i;
    o[0] = powf(x, y);
    o[1] = fmodf(x, y);
    o[2] = remainderf(x, y);
    o[3] = hypotf(x, y);
    o[4] = atan2f(x, y);
    o[5] = nextafterf(x, y);
    o[6] = copysignf(x, y);
    o[7] = fdimf(x, y);
    o[8] = fmaxf(x, y);
    o[9] = fminf(x, y);
}

extern "C" __global__ void math_decompose_f(const float* a, const float* b, float* out, int* iout) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i], y = b[i];
    int q, e;
    float* o = out + 6 * i;
    o[0] = remquof(x, y, &q);
    o[1] = frexpf(x, &e);
    o[2] = ldexpf(x, (int)y);
    float ip;
    o[3] = modff(x, &ip);
    o[4] = ip;
    o[5] = scalbnf(x, (int)y * 7);
    iout[3 * i + 0] = q;
    iout[3 * i + 1] = e;
    iout[3 * i + 2] = ilogbf(x);
}

extern "C" __global__ void math_round_f(const float* a, float* out, long long* lout) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i];
    float* o = out + 6 * i;
    o[0] = floorf(x);
    o[1] = ceilf(x);
    o[2] = truncf(x);
    o[3] = roundf(x);
    o[4] = rintf(x);
    o[5] = nearbyintf(x);
    lout[3 * i + 0] = lrintf(x);
    lout[3 * i + 1] = llrintf(x);
    lout[3 * i + 2] = llroundf(x);
}

extern "C" __global__ void math_trig_f(const float* a, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i];
    float* o = out + 9 * i;
    float s, c, sp, cp;
    sincosf(x, &s, &c);
    sincospif(x, &sp, &cp);
    o[0] = s; o[1] = c; o[2] = sp; o[3] = cp;
    o[4] = tanf(x);
    o[5] = sinpif(x * 0.5f);
    o[6] = asinf(x * 0.01f);
    o[7] = atanf(x);
    o[8] = acosf(x * 0.01f);
}

extern "C" __global__ void math_exp_log_f(const float* a, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i];
    float* o = out + 10 * i;
    o[0] = expf(x);
    o[1] = exp2f(x);
    o[2] = expm1f(x);
    o[3] = logf(x);
    o[4] = log2f(x);
    o[5] = log1pf(x);
    o[6] = log10f(x);
    o[7] = asinhf(x);
    o[8] = tanhf(x);
    o[9] = coshf(x);
}

extern "C" __global__ void math_norms_f(const float* a, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[3 * i], y = a[3 * i + 1], z = a[3 * i + 2];
    float* o = out + 6 * i;
    o[0] = rnorm3df(x, y, z);
    o[1] = norm3df(x, y, z);
    o[2] = rhypotf(x, y);
    o[3] = rcbrtf(x);
    o[4] = sqrtf(x);
    o[5] = rsqrtf(x);
}

extern "C" __global__ void fma_modes(const float* a, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[3 * i], y = a[3 * i + 1], z = a[3 * i + 2];
    float* o = out + 8 * i;
    o[0] = fmaf(x, y, z);
    o[1] = __fmaf_rz(x, y, z);
    o[2] = __fmaf_rd(x, y, z);
    o[3] = __fmaf_ru(x, y, z);
    o[4] = __fmul_rn(x, y) + z;
    o[5] = __fadd_rz(x, z);
    o[6] = __fmul_rd(x, y);
    o[7] = __fsub_ru(x, z);
}

extern "C" __global__ void float_intrinsics(const float* a, const float* b, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i], y = b[i];
    float* o = out + 10 * i;
    o[0] = __fdiv_rn(x, y);
    o[1] = __fdiv_rz(x, y);
    o[2] = __fdiv_ru(x, y);
    o[3] = __frcp_rd(x);
    o[4] = __fsqrt_ru(x);
    o[5] = __fsqrt_rz(x);
    o[6] = __saturatef(x);
    o[7] = __fadd_rd(x, y);
    o[8] = __fmul_ru(x, y);
    o[9] = x / y;
}

extern "C" __global__ void fast_intrinsics(const float* a, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i];
    float* o = out + 9 * i;
    o[0] = __expf(x);
    o[1] = __logf(fabsf(x));
    o[2] = __sinf(x);
    o[3] = __cosf(x);
    o[4] = __log2f(fabsf(x));
    o[5] = __exp10f(x * 0.25f);
    o[6] = __fdividef(x, 3.0f + x * x);
    o[7] = __powf(fabsf(x), 1.5f);
    o[8] = __tanf(x * 0.1f);
}

extern "C" __global__ void math_double(const double* a, const double* b, double* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double x = a[i], y = b[i];
    double* o = out + 12 * i;
    o[0] = exp(x);
    o[1] = log(fabs(x));
    o[2] = sin(x);
    o[3] = pow(fabs(x), y);
    o[4] = erf(x);
    o[5] = lgamma(x);
    o[6] = fmod(x, y);
    o[7] = cbrt(x);
    o[8] = sqrt(x);
    o[9] = rsqrt(x);
    o[10] = hypot(x, y);
    o[11] = remainder(x, y);
}

extern "C" __global__ void double_intrinsics(const double* a, const double* b, double* out, float* fout) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double x = a[i], y = b[i];
    double* o = out + 10 * i;
    o[0] = __dadd_rz(x, y);
    o[1] = __dmul_ru(x, y);
    o[2] = __ddiv_rd(x, y);
    o[3] = __dsqrt_rz(x);
    o[4] = __fma_rd(x, y, 1.0);
    o[5] = __drcp_rn(y);
    o[6] = __dsub_ru(x, y);
    o[7] = floor(x) + ceil(y);
    o[8] = round(x) - trunc(y);
    o[9] = rint(x) * nearbyint(y);
    float* f = fout + 4 * i;
    f[0] = (float)x;
    f[1] = __double2float_rz(x);
    f[2] = __double2float_rd(x);
    f[3] = __double2float_ru(x);
}

extern "C" __global__ void nan_payloads(const unsigned* a, unsigned* out, unsigned long long* out64) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = __uint_as_float(a[2 * i]), y = __uint_as_float(a[2 * i + 1]);
    unsigned* o = out + 8 * i;
    o[0] = __float_as_uint(x + y);
    o[1] = __float_as_uint(x * y);
    o[2] = __float_as_uint(fmaf(x, y, 1.0f));
    o[3] = __float_as_uint(fminf(x, y));
    o[4] = __float_as_uint(fmaxf(y, x));
    o[5] = __float_as_uint(-x);
    o[6] = __float_as_uint(fabsf(y));
    o[7] = __float_as_uint(sqrtf(x));
    double dx = (double)x, dy = (double)y;
    out64[2 * i + 0] = __double_as_longlong(dx + dy);
    out64[2 * i + 1] = __double_as_longlong(fmin(dx, dy));
}
