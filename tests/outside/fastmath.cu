// The same ordinary code compiled with --use_fast_math (.ftz and .approx throughout).

extern "C" __global__ void fm_expr(const float* a, const float* b, float* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i], y = b[i];
    float* o = out + 8 * i;
    o[0] = x / y;
    o[1] = sqrtf(fabsf(x));
    o[2] = expf(x * 0.1f);
    o[3] = sinf(x);
    o[4] = logf(fabsf(y) + 1e-30f);
    o[5] = x * y + 1.0f;
    o[6] = x + y;
    o[7] = 1.0f / x;
}

extern "C" __global__ void fm_ftz_exact(const float* a, const float* b, float* out, int* cmp) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = a[i], y = b[i];
    out[4 * i + 0] = x * y;
    out[4 * i + 1] = x + y;
    out[4 * i + 2] = fmaf(x, y, -x);
    out[4 * i + 3] = fminf(x, y);
    cmp[i] = (x < y) | ((x == y) << 1) | ((x != 0.0f) << 2) | ((x > 0.0f) << 3);
}
