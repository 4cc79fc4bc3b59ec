// 64- and 128-bit integers, bit tricks, SIMD-in-a-word, integer conversions.
#define INT_MIN (-2147483647 - 1)
#define LLONG_MIN (-9223372036854775807LL - 1)

extern "C" __global__ void int64_arith(const long long* a, const long long* b, long long* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long long x = a[i], y = b[i];
    unsigned long long ux = x, uy = y;
    out[10 * i + 0] = x + y;
    out[10 * i + 1] = x * y;
    out[10 * i + 2] = (y != 0 && !(x == LLONG_MIN && y == -1)) ? x / y : 7;
    out[10 * i + 3] = (y != 0 && !(x == LLONG_MIN && y == -1)) ? x % y : 7;
    out[10 * i + 4] = uy ? (long long)(ux / uy) : 7;
    out[10 * i + 5] = uy ? (long long)(ux % uy) : 7;
    out[10 * i + 6] = x / 3;
    out[10 * i + 7] = (long long)(ux % 1000000007ull);
    out[10 * i + 8] = __mul64hi(x, y);
    out[10 * i + 9] = (long long)__umul64hi(ux, uy);
}

extern "C" __global__ void shifts(const int* a, const unsigned* s, int* out, long long* out64) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = a[i];
    unsigned n = s[i];
    // the PTX shift instructions clamp counts past the width; asm so C++ does not call it undefined
    int r1, r2; unsigned r3;
    asm("shl.b32 %0, %1, %2;" : "=r"(r1) : "r"(x), "r"(n));
    asm("shr.s32 %0, %1, %2;" : "=r"(r2) : "r"(x), "r"(n));
    asm("shr.u32 %0, %1, %2;" : "=r"(r3) : "r"(x), "r"(n));
    out[6 * i + 0] = r1;
    out[6 * i + 1] = r2;
    out[6 * i + 2] = (int)r3;
    out[6 * i + 3] = x << (n & 31);
    out[6 * i + 4] = __funnelshift_l((unsigned)x, 0x9E3779B9u, n);
    out[6 * i + 5] = __funnelshift_rc((unsigned)x, 0x85EBCA6Bu, n);
    long long y = ((long long)x << 32) | (unsigned)(x * 0x2545F491);
    long long q1, q2;
    asm("shl.b64 %0, %1, %2;" : "=l"(q1) : "l"(y), "r"(n));
    asm("shr.s64 %0, %1, %2;" : "=l"(q2) : "l"(y), "r"(n));
    out64[2 * i + 0] = q1;
    out64[2 * i + 1] = q2;
}

extern "C" __global__ void int128_arith(const unsigned long long* a, unsigned long long* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned __int128 x = ((unsigned __int128)a[4 * i] << 64) | a[4 * i + 1];
    unsigned __int128 y = ((unsigned __int128)a[4 * i + 2] << 64) | a[4 * i + 3];
    unsigned __int128 s = x + y, d = x - y, p = x * y;
    __int128 sx = (__int128)x, sy = (__int128)y;
    __int128 sp = sx * (sy >> 70);
    unsigned __int128 sh = x >> (a[4 * i + 3] & 127);
    unsigned __int128 q = (y >> 64) ? x / (y >> 64 | 1) : x / (y | 1);
    unsigned long long* o = out + 12 * i;
    o[0] = (unsigned long long)s; o[1] = (unsigned long long)(s >> 64);
    o[2] = (unsigned long long)d; o[3] = (unsigned long long)(d >> 64);
    o[4] = (unsigned long long)p; o[5] = (unsigned long long)(p >> 64);
    o[6] = (unsigned long long)sp; o[7] = (unsigned long long)((unsigned __int128)sp >> 64);
    o[8] = (unsigned long long)sh; o[9] = (unsigned long long)(sh >> 64);
    o[10] = (unsigned long long)q; o[11] = (unsigned long long)(q >> 64);
}

extern "C" __global__ void bit_tricks(const unsigned* a, const unsigned long long* b, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = a[i];
    unsigned long long y = b[i];
    int* o = out + 14 * i;
    o[0] = __popc(x);
    o[1] = __popcll(y);
    o[2] = __clz((int)x);
    o[3] = __clzll((long long)y);
    o[4] = (int)__brev(x);
    o[5] = (int)(__brevll(y) >> 17);
    o[6] = __ffs((int)x);
    o[7] = __ffsll((long long)y);
    o[8] = (int)__byte_perm(x, (unsigned)y, 0x5140);
    o[9] = (int)__byte_perm(x, (unsigned)y, (unsigned)(y >> 32));
    o[10] = (int)__fns(x, 0, (int)(y & 31) + 1);
    o[11] = (int)__fns(x, 31, -((int)(y & 15) + 1));
    o[12] = 31 - __clz((int)(x | 1));
    o[13] = (int)((x >> (y & 15)) & ((1u << ((y >> 8) & 15)) - 1));
}

extern "C" __global__ void simd_video(const unsigned* a, const unsigned* b, unsigned* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned x = a[i], y = b[i];
    unsigned* o = out + 14 * i;
    o[0] = __vabsdiffu4(x, y) ^ __vabsdiffs2(x, y);
    o[1] = __vadd4(x, y);
    o[2] = __vsub2(x, y);
    o[3] = __vmaxs4(x, y);
    o[4] = __vminu2(x, y);
    o[5] = __vcmpeq4(x, y);
    o[6] = __vcmpgts2(x, y);
    o[7] = __vavgu4(x, y);
    o[8] = __vhaddu2(x, y);
    o[9] = __vsads4(x, y);
    o[10] = __vaddss2(x, y);
    o[11] = __vsubus4(x, y);
    o[12] = __vabsss4(x);
    o[13] = __vneg2(x);
}

extern "C" __global__ void dp_sad_mul(const int* a, const int* b, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = a[i], y = b[i];
    int* o = out + 12 * i;
    o[0] = __dp4a(x, y, 17);
    o[1] = (int)__dp4a((unsigned)x, (unsigned)y, 5u);
    o[2] = __dp2a_lo(x, y, -3);
    o[3] = __dp2a_hi(x, y, 100);
    o[4] = (int)__sad(x, y, 9u);
    o[5] = (int)__usad((unsigned)x, (unsigned)y, 1u);
    o[6] = __mul24(x, y);
    o[7] = (int)__umul24((unsigned)x, (unsigned)y);
    o[8] = __mulhi(x, y);
    o[9] = (int)__umulhi((unsigned)x, (unsigned)y);
    o[10] = __rhadd(x, y);
    o[11] = (int)__urhadd((unsigned)x, (unsigned)y) ^ __hadd(x, y);
}

extern "C" __global__ void int_div(const int* a, const int* b, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = a[i], y = b[i];
    bool ok = y != 0 && !(x == INT_MIN && y == -1);
    out[6 * i + 0] = ok ? x / y : 0;
    out[6 * i + 1] = ok ? x % y : 0;
    out[6 * i + 2] = y ? (int)((unsigned)x / (unsigned)y) : 0;
    out[6 * i + 3] = y ? (int)((unsigned)x % (unsigned)y) : 0;
    out[6 * i + 4] = x / 7 + x % 10;
    out[6 * i + 5] = abs(x) + min(x, y) - max(x, y) + umin((unsigned)x, (unsigned)y);
}

extern "C" __global__ void sat_add(const int* a, const int* b, int* out) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = a[i], y = b[i], r1, r2, r3;
    asm("add.sat.s32 %0, %1, %2;" : "=r"(r1) : "r"(x), "r"(y));
    asm("sub.sat.s32 %0, %1, %2;" : "=r"(r2) : "r"(x), "r"(y));
    asm("mad.hi.sat.s32 %0, %1, %2, %1;" : "=r"(r3) : "r"(x), "r"(y));
    out[3 * i + 0] = r1;
    out[3 * i + 1] = r2;
    out[3 * i + 2] = r3;
}

extern "C" __global__ void float_to_int(const float* f, const double* d, int* out, long long* out64) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float x = f[i];
    double y = d[i];
    int* o = out + 10 * i;
    o[0] = (int)x;
    o[1] = (int)(unsigned)x;
    o[2] = __float2int_rn(x);
    o[3] = __float2int_rd(x);
    o[4] = __float2int_ru(x);
    o[5] = (int)__float2uint_rn(x);
    o[6] = (int)__float2uint_rz(x);
    o[7] = __double2int_rz(y);
    o[8] = __double2int_rn(y);
    o[9] = (int)__double2uint_ru(y);
    long long* p = out64 + 5 * i;
    p[0] = (long long)x;
    p[1] = __float2ll_rd(x);
    p[2] = (long long)__float2ull_rz(x);
    p[3] = __double2ll_rn(y);
    p[4] = (long long)__double2ull_ru(y);
}

extern "C" __global__ void int_to_float(const long long* a, float* out, double* outd) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    long long x = a[i];
    int xi = (int)(x >> 16);
    float* o = out + 10 * i;
    o[0] = (float)xi;
    o[1] = __int2float_rz(xi);
    o[2] = __int2float_rd(xi);
    o[3] = __int2float_ru(xi);
    o[4] = __uint2float_rd((unsigned)xi);
    o[5] = (float)x;
    o[6] = __ll2float_rz(x);
    o[7] = __ull2float_ru((unsigned long long)x);
    o[8] = __ll2float_rd(x);
    o[9] = (float)(unsigned long long)x;
    outd[3 * i + 0] = (double)x;
    outd[3 * i + 1] = __ll2double_rz(x);
    outd[3 * i + 2] = __ull2double_ru((unsigned long long)x);
}
