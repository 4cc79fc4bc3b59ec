// The approximate instructions measured: every f32 input of ex2 / lg2 / rcp / rsqrt / sqrt / sin / cos / tanh
// .approx, every input of the 16-bit forms, and every high word of the f64 forms, each compared with the
// emulator's rule computed here in double precision (bwlab/hw/approx.py is the same rule in NumPy).
//
// What ptxas makes of these instructions for sm_90a (read from cuobjdump -sass): one MUFU operation, which
// flushes subnormals, wrapped for the forms without .ftz in exact scalings; sin/cos multiply by 1/(2 pi) with
// round-toward-zero first. The wrapper below (`wrap`) is that SASS; `mufu_ref` is the emulator's MUFU: the
// exact function, rounded once to nearest. A harness kernel (no teaching content): driven by
// bwlab/checks/approx.py.

typedef unsigned int u32;
typedef unsigned long long u64;

enum Op {
    EX2_FTZ, EX2, LG2_FTZ, LG2, RCP_FTZ, RCP, RSQRT_FTZ, RSQRT, SQRT_FTZ, SQRT,
    SIN_FTZ, SIN, COS_FTZ, COS, TANH, RCP_F64, RSQRT_F64,
    DIV_APPROX_FTZ, DIV_APPROX, DIV_FULL_FTZ, DIV_FULL, N_OPS        // binary: a / b
};

__device__ __forceinline__ float gpu_div(int op, float a, float b) {
    float r = 0.0f;
    switch (op) {
    case DIV_APPROX_FTZ: asm("div.approx.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); break;
    case DIV_APPROX:     asm("div.approx.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); break;
    case DIV_FULL_FTZ:   asm("div.full.ftz.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); break;
    case DIV_FULL:       asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); break;
    }
    return r;
}

__device__ __forceinline__ float gpu_f32(int op, float x) {
    float r = 0.0f;
    switch (op) {
    case EX2_FTZ:   asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case EX2:       asm("ex2.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case LG2_FTZ:   asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case LG2:       asm("lg2.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case RCP_FTZ:   asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case RCP:       asm("rcp.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case RSQRT_FTZ: asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case RSQRT:     asm("rsqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case SQRT_FTZ:  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case SQRT:      asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case SIN_FTZ:   asm("sin.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case SIN:       asm("sin.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case COS_FTZ:   asm("cos.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case COS:       asm("cos.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    case TANH:      asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); break;
    }
    return r;
}

__device__ __forceinline__ u64 gpu_f64(int op, u32 hi) {
    double x = __hiloint2double((int)hi, 0), r = 0.0;
    if (op == RCP_F64) asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x));
    else               asm("rsqrt.approx.ftz.f64 %0, %1;" : "=d"(r) : "d"(x));
    return (u64)__double_as_longlong(r);
}

// ---- the emulator's rule ----------------------------------------------------------------------------------
__device__ __forceinline__ bool is_sub(float x) { return x != 0.0f && fabsf(x) < 1.17549435e-38f; }
__device__ __forceinline__ float ftz(float x) { return is_sub(x) ? copysignf(0.0f, x) : x; }
__device__ __forceinline__ float canon(double r, float f) { return isnan(r) ? __uint_as_float(0x7fffffffu) : f; }

// sin(2 pi f) and cos(2 pi f) for f in [-1/2, 1/2], exact at the quarter turns
__device__ double sin_turn(double f) {
    double g = 2.0 * f, a = fabs(g);              // sin(pi g), |g| <= 1
    if (a > 0.5) a = 1.0 - a;                     // sin(pi - t) = sin(t)
    double s = (a == 0.0) ? 0.0 : sin(3.141592653589793 * a);
    return g < 0 ? -s : s;
}
__device__ double cos_turn(double f) { return sin_turn(0.25 - fabs(f)); }   // cos(2 pi f) = sin(2 pi (1/4 - |f|))

// MUFU: the exact function of a flushed input, rounded once to nearest f32, flushed
__device__ float mufu_ref(int op, float x) {
    if (op == TANH) { double t = tanh((double)x); return canon(t, (float)t); }   // MUFU.TANH keeps subnormals
    x = ftz(x);
    double d = (double)x, r;
    switch (op) {
    case EX2_FTZ:   r = exp2(d); break;
    case LG2_FTZ:   r = log2(d); break;
    case RCP_FTZ:   r = 1.0 / d; break;
    case RSQRT_FTZ: r = 1.0 / sqrt(d); break;      // sqrt in double is exact-rounded; the quotient too: 2 roundings
    case SQRT_FTZ:  r = sqrt(d); break;
    case SIN_FTZ:   r = isinf(d) ? nan("") : sin_turn(d - rint(d));          // MUFU.SIN: sin of turns,
                    if (r == 0.0) r = copysign(0.0, d); break;               // a zero with the turn's sign
    case COS_FTZ:   r = isinf(d) ? nan("") : cos_turn(d - rint(d)); break;
    case TANH:      r = tanh(d); break;
    default:        r = 0.0;
    }
    return ftz(canon(r, (float)r));
}

// the SASS ptxas emits around MUFU for each PTX form
__device__ float wrap(int op, float x) {
    bool small = !(fabsf(x) >= 1.17549435e-38f);  // FSETP.GEU |x|, 2^-126 (NaN: false)
    switch (op) {
    case EX2: {
        bool lo = !(x >= -126.0f);                 // FSETP.GEU x, -126
        if (lo) { float h = mufu_ref(EX2_FTZ, __fmul_rn(x, 0.5f)); return __fmul_rn(h, h); }
        return mufu_ref(EX2_FTZ, x);
    }
    case LG2:   return small ? __fadd_rn(mufu_ref(LG2_FTZ, __fmul_rn(x, 16777216.0f)), -24.0f) : mufu_ref(LG2_FTZ, x);
    case RCP: {
        float s = small ? 16777216.0f : 1.0f;
        if (fabsf(x) > 8.50705917e+37f) s = 0.25f;
        return __fmul_rn(s, mufu_ref(RCP_FTZ, __fmul_rn(x, s)));
    }
    case RSQRT: return small ? __fmul_rn(mufu_ref(RSQRT_FTZ, __fmul_rn(x, 16777216.0f)), 4096.0f) : mufu_ref(RSQRT_FTZ, x);
    case SQRT:  return small ? __fmul_rn(mufu_ref(SQRT_FTZ, __fmul_rn(x, 16777216.0f)), 0.000244140625f) : mufu_ref(SQRT_FTZ, x);
    case SIN_FTZ: case SIN: return mufu_ref(SIN_FTZ, __fmul_rz(x, 0.15915493667125701904f));
    case COS_FTZ: case COS: return mufu_ref(COS_FTZ, __fmul_rz(x, 0.15915493667125701904f));
    default:    return mufu_ref(op, x);
    }
}

__device__ __forceinline__ float fmul_ftz(float a, float b) { return ftz(__fmul_rn(ftz(a), ftz(b))); }

// div.approx / div.full: a times MUFU.RCP(b), with the scalings of each form (SASS)
__device__ float wrap_div(int op, float a, float b) {
    bool big = fabsf(b) > 8.50705917e+37f, small = !(fabsf(b) >= 1.17549435e-38f);
    switch (op) {
    case DIV_APPROX_FTZ: return fmul_ftz(a, mufu_ref(RCP_FTZ, b));
    case DIV_APPROX:
        if (small) { a = __fmul_rn(a, 16777216.0f); b = __fmul_rn(b, 16777216.0f); }
        return __fmul_rn(mufu_ref(RCP_FTZ, b), a);
    case DIV_FULL_FTZ:
        if (big) { b = fmul_ftz(b, 0.25f); a = fmul_ftz(a, 0.25f); }
        return fmul_ftz(mufu_ref(RCP_FTZ, b), a);
    default:                                                      // DIV_FULL
        if (big) { b = __fmul_rn(b, 0.25f); a = __fmul_rn(a, 0.25f); }
        if (small) { b = __fmul_rn(b, 16777216.0f); a = __fmul_rn(a, 16777216.0f); }
        return __fmul_rn(mufu_ref(RCP_FTZ, b), a);
    }
}

// the binary forms' operands: input i gives the pair (a, b) of two hashed words
__device__ __forceinline__ u32 mix(u32 x) {
    x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16; return x;
}
__device__ __forceinline__ void operands(u32 i, u32& a, u32& b) { a = mix(i); b = mix(i ^ 0x9e3779b9u); }

__device__ u64 ref_f64(int op, u32 hi) {
    double x = __hiloint2double((int)hi, 0);
    if ((hi & 0x7ff00000u) == 0) x = copysign(0.0, x);                      // .ftz
    double r = (op == RCP_F64) ? 1.0 / x : 1.0 / sqrt(x);
    if (isnan(r)) return 0x7fffffff00000000ull;                             // the unit's NaN
    u64 b = (u64)__double_as_longlong(r) & 0xffffffff00000000ull;           // the high word, the low word 0
    return (b & 0x7ff0000000000000ull) ? b : (b & 0x8000000000000000ull);  // a subnormal result flushed
}

// ---- the comparison --------------------------------------------------------------------------------------
// bins: [0] equal bits, [1..30] |ulp distance| 1..30, [31] >= 31, [32] both NaN with different bits,
// [33] one NaN, [34] +0 vs -0, [35] GPU above the rule, [36] GPU below, [37] f64 forms: low word not 0
#define NBINS 40

__device__ __forceinline__ long long ordered(u32 b) {
    return (b & 0x80000000u) ? -(long long)(b & 0x7fffffffu) : (long long)b;
}

// worst: the largest |d| (with its input); worst_abs: the largest absolute difference where |d| > 2;
// worst_rel: the largest |GPU - rule| / |rule| where the rule's result is normal
extern "C" __global__ void sweep(int op, u64* bins, u64* worst, u64* worst_abs, u64* worst_rel) {
    __shared__ u64 h[NBINS];
    for (int i = threadIdx.x; i < NBINS; i += blockDim.x) h[i] = 0;
    __syncthreads();
    u64 my_worst = 0, my_abs = 0, my_rel = 0, my_equal = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < (1ull << 32); i += (u64)gridDim.x * blockDim.x) {
        u32 x = (u32)i, g, r;
        if (op >= DIV_APPROX_FTZ) {
            u32 a, b; operands(x, a, b);
            g = __float_as_uint(gpu_div(op, __uint_as_float(a), __uint_as_float(b)));
            r = __float_as_uint(wrap_div(op, __uint_as_float(a), __uint_as_float(b)));
        } else if (op >= RCP_F64) {
            u64 gg = gpu_f64(op, x), rr = ref_f64(op, x);
            if ((u32)gg) atomicAdd(&h[37], 1ull);
            g = (u32)(gg >> 32); r = (u32)(rr >> 32);
        } else {
            float xf = __uint_as_float(x);
            g = __float_as_uint(gpu_f32(op, xf));
            r = __float_as_uint(wrap(op, xf));
        }
        if (g == r) { ++my_equal; continue; }
        bool gn = (g & 0x7fffffffu) > 0x7f800000u, rn = (r & 0x7fffffffu) > 0x7f800000u;
        if (op == RCP_F64 || op == RSQRT_F64) { gn = (g & 0x7ff00000u) == 0x7ff00000u && (g & 0xfffffu);     // the high word's NaN
                             rn = (r & 0x7ff00000u) == 0x7ff00000u && (r & 0xfffffu); }
        if (gn && rn) { atomicAdd(&h[32], 1ull); continue; }
        if (gn || rn) { atomicAdd(&h[33], 1ull); continue; }
        long long d = ordered(g) - ordered(r);
        if (d == 0) { atomicAdd(&h[34], 1ull); continue; }
        atomicAdd(&h[d > 0 ? 35 : 36], 1ull);
        u64 ad = (u64)(d < 0 ? -d : d);
        atomicAdd(&h[ad >= 31 ? 31 : ad], 1ull);
        u64 w = (ad > 0xffffffffull ? 0xffffffffull : ad) << 32 | x;
        if (w > my_worst) my_worst = w;
        if (op != RCP_F64 && op != RSQRT_F64) {
            double gd = (double)__uint_as_float(g), rd = (double)__uint_as_float(r);
            float e = (float)fabs(gd - rd);
            u64 wa = (u64)__float_as_uint(e) << 32 | x;
            if (ad > 2 && e == e && wa > my_abs) my_abs = wa;
            if (fabs(rd) >= 1.17549435e-38 && !isinf(rd)) {
                float q = (float)(fabs(gd - rd) / fabs(rd));
                u64 wr = (u64)__float_as_uint(q) << 32 | x;
                if (q == q && wr > my_rel) my_rel = wr;
            }
        }
    }
    atomicAdd(&h[0], my_equal);
    atomicMax(worst, my_worst);
    atomicMax(worst_abs, my_abs);
    atomicMax(worst_rel, my_rel);
    __syncthreads();
    for (int i = threadIdx.x; i < NBINS; i += blockDim.x) if (h[i]) atomicAdd(&bins[i], h[i]);
}

// GPU results of chosen inputs (the committed sample the CPU tests compare the NumPy rule with); the binary
// forms take a = x[i], b = y[i]
extern "C" __global__ void sample(int op, const u32* x, const u32* y, u32* out_gpu, u32* out_ref, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (op >= DIV_APPROX_FTZ) {
        float a = __uint_as_float(x[i]), b = __uint_as_float(y[i]);
        out_gpu[i] = __float_as_uint(gpu_div(op, a, b));
        out_ref[i] = __float_as_uint(wrap_div(op, a, b));
    } else if (op >= RCP_F64) {
        out_gpu[i] = (u32)(gpu_f64(op, x[i]) >> 32);
        out_ref[i] = (u32)(ref_f64(op, x[i]) >> 32);
    } else {
        float xf = __uint_as_float(x[i]);
        out_gpu[i] = __float_as_uint(gpu_f32(op, xf));
        out_ref[i] = __float_as_uint(wrap(op, xf));
    }
}

// the 16-bit forms: every code (a table of 65536 per form)
extern "C" __global__ void table16(unsigned short* ex2_f16, unsigned short* ex2_bf16,
                                   unsigned short* tanh_f16, unsigned short* tanh_bf16) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 65536u) return;
    unsigned short x = (unsigned short)i, r;
    asm("ex2.approx.f16 %0, %1;" : "=h"(r) : "h"(x));       ex2_f16[i] = r;
    asm("ex2.approx.ftz.bf16 %0, %1;" : "=h"(r) : "h"(x));   ex2_bf16[i] = r;
    asm("tanh.approx.f16 %0, %1;" : "=h"(r) : "h"(x));      tanh_f16[i] = r;
    asm("tanh.approx.bf16 %0, %1;" : "=h"(r) : "h"(x));     tanh_bf16[i] = r;
}

// the paired forms lane by lane: each half of an f16x2 / bf16x2 result equals the scalar form of that half
extern "C" __global__ void table16x2(u32* ex2_f16x2, u32* tanh_bf16x2) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= 65536u) return;
    u32 x = i | ((i ^ 0x5a5au) << 16), r;
    asm("ex2.approx.f16x2 %0, %1;" : "=r"(r) : "r"(x));     ex2_f16x2[i] = r;
    asm("tanh.approx.bf16x2 %0, %1;" : "=r"(r) : "r"(x));   tanh_bf16x2[i] = r;
}
