// printf, recursion, function pointers, templates, structs by value, local arrays, vector loads, volatile.
// printf is built into NVRTC

extern "C" __global__ void printf_formats(const int* a, const float* f, const double* d) {
    int t = threadIdx.x, w = t >> 5;
    if ((t & 7) != 3) return;
    int x = a[t];
    float y = f[t];
    printf("w%d t%d d=%d i=%i u=%u x=%x X=%X o=%o c=%c |%5d|%-6d|%08x|%+d %%\n", w, t, x, x, (unsigned)x, x, x,
           (unsigned)x & 0777, 'A' + (t % 26), x % 1000, x % 100, x, x % 50);
    printf("w%d t%d f=%f e=%e g=%g %.3f %10.2e %-12g| %s\n", w, t, y, y, y, y, y, y, t % 2 ? "odd" : "even");
    printf("w%d t%d ld=%ld lld=%lld llu=%llu llx=%llx lf=%.17g\n", w, t, (long)x * 3, (long long)x * 100003LL,
           (unsigned long long)(long long)x * 7ull, (unsigned long long)x << 20, d[t]);
}

extern "C" __global__ void printf_special(const float* f) {
    int t = threadIdx.x;
    float y = f[t];
    printf("w%d t%d %f %e %g %.0f %5.1f %a\n", t >> 5, t, y, y, y, y, y, (double)y);
}

__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__device__ __noinline__ long long fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }
__device__ __noinline__ int ackermann(int m, int n) {
    if (m == 0) return n + 1;
    if (n == 0) return ackermann(m - 1, 1);
    return ackermann(m - 1, ackermann(m, n - 1));
}
__device__ __noinline__ int gcd(int a, int b) { return b == 0 ? a : gcd(b, a % b); }

extern "C" __global__ void recursion(const int* a, int* out, long long* f) {
    int t = threadIdx.x, n = a[t];
    out[3 * t + 0] = fib(n % 16);
    out[3 * t + 1] = ackermann(n % 3, n % 4);
    out[3 * t + 2] = gcd(n * 12, n * 18 + 6);
    f[t] = fact(n % 21);
}

__device__ __noinline__ float op_add(float a, float b) { return a + b; }
__device__ __noinline__ float op_mul(float a, float b) { return a * b; }
__device__ __noinline__ float op_max(float a, float b) { return fmaxf(a, b); }
__device__ __noinline__ float op_sub(float a, float b) { return a - b; }
typedef float (*binop)(float, float);
__device__ binop table[4] = {op_add, op_mul, op_max, op_sub};

extern "C" __global__ void fn_pointers(const int* sel, const float* a, float* out) {
    int t = threadIdx.x;
    binop f = table[sel[t] & 3];
    float acc = a[t];
    for (int k = 0; k < 4; ++k) acc = f(acc, a[(t + k + 1) & 63]);
    out[t] = acc;
}

struct Particle { float3 pos; float mass; int id; short flag; };
struct Pair { Particle a; double energy; };

template <typename T, int N>
struct Acc {
    T v[N];
    __device__ T total() const { T s = T(0); for (int i = 0; i < N; ++i) s += v[i] * T(i + 1); return s; }
};

__device__ __noinline__ Pair step(Particle p, float dt, Acc<float, 3> f) {
    Pair r;
    r.a = p;
    r.a.pos.x += dt * f.v[0] / p.mass;
    r.a.pos.y += dt * f.v[1] / p.mass;
    r.a.pos.z += dt * f.v[2] / p.mass;
    r.a.flag = (short)(p.flag * 3 - 1);
    r.energy = 0.5 * p.mass * ((double)f.total() * f.total());
    return r;
}

template <typename T>
__device__ T clampv(T x, T lo, T hi) { return x < lo ? lo : (x > hi ? hi : x); }

extern "C" __global__ void structs_templates(const float* a, float* out, double* e, int* ids) {
    int t = threadIdx.x;
    Particle p = {make_float3(a[t], a[t + 64], a[t + 128]), 1.0f + fabsf(a[t + 192]), t * 7, (short)(t - 30)};
    Acc<float, 3> f = {{a[(t + 1) & 63], a[(t + 2) & 63], a[(t + 3) & 63]}};
    Pair r = step(p, 0.01f, f);
    out[3 * t + 0] = r.a.pos.x;
    out[3 * t + 1] = clampv(r.a.pos.y, -1.0f, 1.0f);
    out[3 * t + 2] = r.a.pos.z;
    e[t] = r.energy;
    ids[2 * t] = r.a.id;
    ids[2 * t + 1] = clampv<int>(r.a.flag, -50, 50) + (int)Acc<int, 4>{{t, 1, 2, 3}}.total();
}

extern "C" __global__ void local_array(const int* idx, const float* a, float* out) {
    int t = threadIdx.x;
    float buf[24];
    for (int k = 0; k < 24; ++k) buf[k] = a[(t * 3 + k) % 256];
    for (int k = 0; k < 8; ++k) {
        int j = idx[(t + k) % 256] % 24;
        buf[j] += buf[(j + 5) % 24] * 0.5f;
    }
    float s = 0.f;
    for (int k = 0; k < 6; ++k) s += buf[idx[(t * 5 + k) % 256] % 24];
    out[t] = s;
}

extern "C" __global__ void vector_loads(const float4* a, const int4* b, const double2* c, float4* out, int4* iout,
                                        double2* dout) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = __ldg(&a[t]);
    int4 w = b[t];
    double2 d = __ldg(&c[t]);
    out[t] = make_float4(v.w + v.x, v.z * v.y, v.x - w.x, (float)(w.y ^ w.z));
    iout[t] = make_int4(w.w, w.z + 1, w.y * 3, w.x >> 2);
    dout[t] = make_double2(d.y * 2.0, d.x - d.y);
    float4 u = __ldcs(&a[(t + 1) % 128]);
    __stcs(&out[t + 128], u);
}

extern "C" __global__ void volatile_warp(const int* a, int* out) {
    __shared__ volatile int s[64];
    int t = threadIdx.x;
    s[t] = a[t];
    __syncwarp();
    if (t < 32) {
        for (int o = 16; o > 0; o >>= 1) {
            if (t < o) s[t] += s[t + o];
            __syncwarp();
        }
    } else {
        for (int o = 16; o > 0; o >>= 1) {
            int l = t - 32;
            if (l < o) s[t] = max(s[t], s[t + o]);
            __syncwarp();
        }
    }
    if (t == 0) out[0] = s[0];
    if (t == 32) out[1] = s[32];
}

extern "C" __global__ void nanosleep_order(int* out) {
    int t = threadIdx.x;
    __nanosleep(100 * (t & 3));
    int v = t * t;
    __nanosleep(50);
    out[t] = v + 1;
}

__device__ int g_counter;
extern "C" __global__ void device_global(const int* a, int* out) {
    if (threadIdx.x == 0 && blockIdx.x == 0) g_counter = 0;
    __syncthreads();
    atomicAdd(&g_counter, a[threadIdx.x]);
    __syncthreads();
    __threadfence();
    if (threadIdx.x == 0) out[0] = g_counter;
}

extern "C" __global__ void divergent_returns(const int* a, int* out) {
    int t = threadIdx.x, x = a[t];
    out[t] = -1;
    if (x % 3 == 0) return;
    int acc = 0;
    for (int k = 0; k < (x & 15); ++k) {
        if (k == 7 && (x & 1)) { out[t] = acc * 1000; return; }
        acc += k * x;
        if (acc > 500) break;
    }
    switch (x & 3) {
        case 0: acc += 1; break;
        case 1: acc -= 2;
        case 2: acc *= 3; break;
        default: acc = -acc;
    }
    out[t] = acc;
}
