// Second outside set: calls. Non-inlined device functions (void and value-returning, structs by value,
// pointers to local arrays), recursion with arrays on the stack, switch statements, __launch_bounds__,
// templates over int/float/double/half.
#include <cuda_fp16.h>

struct Vec3 { float x, y, z; };
struct Box { Vec3 lo, hi; int tag; };
struct Stats { double sum; float mn, mx; int n; };

__device__ __noinline__ void store_pair(float* out, int i, float a, float b) { out[2 * i] = a; out[2 * i + 1] = b; }
__device__ __noinline__ void bump(int* p, int by) { *p += by; }

extern "C" __global__ void call_void_mixed(const float* a, float* out, int* cnt) {
    int t = threadIdx.x;
    float x = a[t] + 1.5f;              // a plain float add beside void calls
    float y = a[t] * a[(t + 1) & 63] + x;
    store_pair(out, t, x, y);
    int c = t;
    bump(&c, 3);
    bump(&c, t & 7);
    cnt[t] = c;
}

__device__ __noinline__ float box_volume(Box b) {
    return (b.hi.x - b.lo.x) * (b.hi.y - b.lo.y) * (b.hi.z - b.lo.z) + (float)b.tag;
}
__device__ __noinline__ Vec3 centre(const Box& b) {
    Vec3 c = {0.5f * (b.lo.x + b.hi.x), 0.5f * (b.lo.y + b.hi.y), 0.5f * (b.lo.z + b.hi.z)};
    return c;
}

extern "C" __global__ void call_struct_byval(const float* a, float* out) {
    int t = threadIdx.x;
    Box b = {{a[t], a[t + 64], a[t + 128]}, {a[t] + 2.f, a[t + 64] + 3.f, a[t + 128] + 0.5f}, t};
    out[4 * t] = box_volume(b);
    Vec3 c = centre(b);
    out[4 * t + 1] = c.x; out[4 * t + 2] = c.y; out[4 * t + 3] = c.z;
}

__device__ __noinline__ int sum_local(const int* v, int n) { int s = 0; for (int i = 0; i < n; ++i) s += v[i] * (i + 1); return s; }
__device__ __noinline__ void fill_local(int* v, int n, int seed) { for (int i = 0; i < n; ++i) v[i] = (seed * 31 + i * 7) % 101; }

extern "C" __global__ void call_local_ptr(const int* a, int* out) {
    int t = threadIdx.x;
    int buf[12];
    fill_local(buf, 12, a[t]);
    buf[a[t] & 7] += 1000;
    out[2 * t] = sum_local(buf, 12);
    out[2 * t + 1] = sum_local(buf + 3, 5);
}

__device__ __noinline__ Stats stats_of(const float* p, int n) {
    Stats s = {0.0, 1e30f, -1e30f, 0};
    for (int i = 0; i < n; ++i) { s.sum += p[i]; s.mn = fminf(s.mn, p[i]); s.mx = fmaxf(s.mx, p[i]); s.n++; }
    return s;
}
extern "C" __global__ void call_struct_return(const float* a, double* sums, float* mm, int* ns) {
    int t = threadIdx.x;
    Stats s = stats_of(a + t, 1 + (t % 9));
    sums[t] = s.sum; mm[2 * t] = s.mn; mm[2 * t + 1] = s.mx; ns[t] = s.n;
}

__device__ __noinline__ double mix(int a, long long b, float c, double d, unsigned char e, short f, bool g) {
    return g ? a * d + (double)b - c + e : f * c - (double)a + d / (e + 1);
}
extern "C" __global__ void call_many_params(const int* a, const long long* b, const float* c, const double* d, double* out) {
    int t = threadIdx.x;
    out[t] = mix(a[t], b[t], c[t], d[t], (unsigned char)(a[t] >> 3), (short)(a[t] * 3), t & 1);
}

// recursion with an array on the stack of each activation
__device__ __noinline__ int rec_sum(int depth, int seed) {
    int arr[6];
    for (int i = 0; i < 6; ++i) arr[i] = seed + i * depth;
    int below = depth > 0 ? rec_sum(depth - 1, arr[seed & 3] % 97) : 0;
    int s = below;
    for (int i = 0; i < 6; ++i) s += arr[i] * (i + 1);
    return s % 100003;
}
__device__ __noinline__ void rec_fill(int* buf, int lo, int hi) {  // recursion over a caller's local array
    if (hi - lo < 2) { if (lo < hi) buf[lo] = lo * lo; return; }
    int mid = (lo + hi) / 2;
    rec_fill(buf, lo, mid);
    rec_fill(buf, mid, hi);
    buf[lo] += buf[mid];
}
extern "C" __global__ void recursion_stack(const int* a, int* out) {
    int t = threadIdx.x;
    out[2 * t] = rec_sum(a[t] % 7, a[t]);
    int buf[16];
    rec_fill(buf, 0, 16);
    out[2 * t + 1] = buf[a[t] & 15] + buf[0];
}

__device__ __noinline__ void qsort_rec(float* v, int lo, int hi) {
    if (lo >= hi) return;
    float p = v[(lo + hi) / 2];
    int i = lo, j = hi;
    while (i <= j) {
        while (v[i] < p) ++i;
        while (v[j] > p) --j;
        if (i <= j) { float tmp = v[i]; v[i] = v[j]; v[j] = tmp; ++i; --j; }
    }
    qsort_rec(v, lo, j);
    qsort_rec(v, i, hi);
}
extern "C" __global__ void recursion_qsort(const float* a, float* out) {
    int t = threadIdx.x;
    float v[10];
    for (int i = 0; i < 10; ++i) v[i] = a[(t * 10 + i) % 320];
    qsort_rec(v, 0, 9);
    for (int i = 0; i < 10; ++i) out[t * 10 + i] = v[i];
}

__device__ int classify(int x) {
    switch (x) {
        case 0: return 11;
        case 1: return -4;
        case 2: return 17;
        case 3: return 5;
        case 4: return 99;
        case 5: return -70;
        case 6: return 3;
        case 7: return 1234;
        case 8: return 8;
        case 9: return -9;
        case 10: return 77;
        case 11: return 0;
        default: return x * 2;
    }
}
extern "C" __global__ void switch_dense(const int* a, int* out) {
    int t = threadIdx.x;
    out[t] = classify(a[t] % 14);
}

extern "C" __global__ void switch_sparse(const int* a, float* out) {
    int t = threadIdx.x;
    float v = (float)a[t];
    switch (a[t] & 0xFF) {
        case 3: v = v * 2.f; break;
        case 17: v = v - 100.f;  // fall through
        case 18: v = v * 0.5f; break;
        case 100: case 101: case 102: v = -v; break;
        case 200: v = 1e6f; break;
        case 255: return;
        default: v = v + 0.25f;
    }
    out[t] = v;
}

__device__ __noinline__ float op_switch(int op, float a, float b) {
    switch (op) {
        case 0: return a + b;
        case 1: return a - b;
        case 2: return a * b;
        case 3: return a / b;
        case 4: return fminf(a, b);
        case 5: return fmaxf(a, b);
        case 6: return fabsf(a - b);
        case 7: return a * a + b;
        default: return 0.f;
    }
}
extern "C" __global__ void switch_in_call(const int* op, const float* a, float* out) {
    int t = threadIdx.x;
    float acc = a[t];
    for (int k = 0; k < 5; ++k) acc = op_switch((op[t] + k) % 9, acc, a[(t + k) & 63]);
    out[t] = acc;
}

extern "C" __global__ void __launch_bounds__(128, 4) bounded(const float* a, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] * a[i] - 2.f * a[i];
}
extern "C" __global__ void __launch_bounds__(64) bounded_regs(const float* a, float* out) {
    int t = threadIdx.x;
    float r[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) r[k] = a[(t + k) & 63] * (k + 1);
    float s = 0;
#pragma unroll
    for (int k = 0; k < 16; ++k) s = fmaf(r[k], r[15 - k], s);
    out[t] = s;
}

template <typename T> __device__ __noinline__ T poly(T x) { return x * x * T(3) - x * T(2) + T(1); }
template <typename T> __device__ T tmax3(T a, T b, T c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }
template <typename T>
__device__ void templ_body(const T* a, T* out, int t) {
    out[2 * t] = poly(a[t]);
    out[2 * t + 1] = tmax3(a[t], a[(t + 1) & 63], a[(t + 2) & 63]);
}
extern "C" __global__ void templ_int(const int* a, int* out) { templ_body(a, out, threadIdx.x); }
extern "C" __global__ void templ_float(const float* a, float* out) { templ_body(a, out, threadIdx.x); }
extern "C" __global__ void templ_double(const double* a, double* out) { templ_body(a, out, threadIdx.x); }
extern "C" __global__ void templ_half(const __half* a, __half* out) { templ_body(a, out, threadIdx.x); }

template <int N>
__device__ __noinline__ int unrolled_dot(const int* a, const int* b) { int s = 0; for (int i = 0; i < N; ++i) s += a[i] * b[N - 1 - i]; return s; }
extern "C" __global__ void templ_nontype(const int* a, int* out) {
    int t = threadIdx.x;
    out[3 * t] = unrolled_dot<3>(a + t, a + 64);
    out[3 * t + 1] = unrolled_dot<8>(a + t, a + 64);
    out[3 * t + 2] = unrolled_dot<17>(a + t, a + 64);
}

__device__ __noinline__ int early_exit(int x) {
    if (x < 0) return -1;
    for (int i = 0; i < 40; ++i) { if (x % (i + 2) == 0) return i; x += 3; }
    return 1000;
}
extern "C" __global__ void call_divergent(const int* a, int* out) {
    int t = threadIdx.x;
    int r = (t & 1) ? early_exit(a[t]) : early_exit(-a[t]);
    if (t % 3 == 0) r += early_exit(t * 7);
    out[t] = r;
}
