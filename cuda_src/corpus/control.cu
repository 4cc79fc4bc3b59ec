// Control flow: recursion, function pointers, divergent early returns, loops with break and
// continue, switch statements (jump tables), and non-inlined calls with many arguments.
#define LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

__device__ __noinline__ int fib(int k) { return k < 2 ? k : fib(k - 1) + fib(k - 2); }

extern "C" __global__ void ctl_fib_recursive(const int* a, int* out, int n) {
    LOOP(i, n) out[i] = fib(a[i]);
}

__device__ __noinline__ unsigned long long ackermann_like(unsigned m, unsigned long long x) {
    if (m == 0) return x + 1;
    if (x == 0) return ackermann_like(m - 1, 1);
    return ackermann_like(m - 1, ackermann_like(m, x - 1));
}

extern "C" __global__ void ctl_deep_recursion(const unsigned* a, unsigned long long* out, int n) {
    LOOP(i, n) out[i] = ackermann_like(a[i] % 3, a[i] % 4);
}

__device__ __noinline__ float op_add(float x, float y) { return x + y; }
__device__ __noinline__ float op_mul(float x, float y) { return x * y; }
__device__ __noinline__ float op_max(float x, float y) { return fmaxf(x, y); }
__device__ __noinline__ float op_sub(float x, float y) { return x - y; }

extern "C" __global__ void ctl_function_pointers(const int* sel, const float* a, float* out, int n) {
    float (*ops[4])(float, float) = {op_add, op_mul, op_max, op_sub};
    LOOP(i, n) {
        float (*f)(float, float) = ops[sel[i] & 3];
        out[i] = f(a[i], a[(i + 1) % n]);
    }
}

extern "C" __global__ void ctl_divergent_return(const int* a, int* out, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    out[i] = -1;
    if (a[i] < 0) return;
    out[i] = 1;
    if (a[i] % 3 == 0) { out[i] = 3; return; }
    for (int k = 0; k < a[i] % 17; ++k) {
        if (k == 11) return;
        out[i] += k;
    }
    out[i] *= 2;
}

extern "C" __global__ void ctl_break_continue(const int* a, int* out, int n) {
    LOOP(i, n) {
        int s = 0, x = a[i];
        for (int k = 0; k < 64; ++k) {
            if ((x >> (k & 31)) & 1) continue;
            s += k;
            if (s > (x & 0x1ff)) break;
            while (s % 7 == 3) { s += 2; if (s > 400) break; }
        }
        out[i] = s;
    }
}

extern "C" __global__ void ctl_switch(const int* a, int* out, int n) {
    LOOP(i, n) {
        int x = a[i], r;
        switch (x & 15) {
            case 0: r = x; break;
            case 1: r = x * 3; break;
            case 2: case 3: r = -x; break;
            case 4: r = x >> 2; /* fall through */
            case 5: r = x ^ 0x55; break;
            case 7: r = 77; break;
            case 8: r = x + 8; break;
            case 9: r = x - 9; break;
            case 10: r = x * x; break;
            case 11: r = ~x; break;
            case 13: r = 13; break;
            default: r = 0;
        }
        out[i] = r;
    }
}

__device__ __noinline__ long long many_args(int a, long long b, float c, double d, int e, short f, char g,
                                            unsigned h, float i, double j, int k, long long l) {
    return a + b + (long long)c + (long long)d + e + f + g + h + (long long)(i * 2) + (long long)j + k * l;
}

extern "C" __global__ void ctl_call_many_args(const int* a, long long* out, int n) {
    LOOP(i, n) {
        int x = a[i];
        out[i] = many_args(x, (long long)x << 33, x * 0.5f, x * 0.25, x ^ 7, (short)x, (char)x, (unsigned)x,
                           1.5f * x, -2.0 * x, i, (long long)x - 1);
    }
}

struct Pair { double x; int k; };
__device__ __noinline__ Pair make_pair(int i, const float* a) { return Pair{a[i] * 2.0, i * 3}; }

extern "C" __global__ void ctl_struct_return(const float* a, double* out, int n) {
    LOOP(i, n) { Pair p = make_pair(i, a); out[i] = p.x + p.k; }
}

extern "C" __global__ void ctl_nested_divergence(const int* a, int* out, int n) {
    int i = threadIdx.x, x = a[i % n], r = 0;
    if (x & 1) {
        if (x & 2) { for (int k = 0; k < (x & 7); ++k) r += k; }
        else { r = -x; }
    } else if (x & 4) {
        int k = 0;
        do { r += x >> k; ++k; } while (k < (x & 15));
    } else {
        r = 42;
    }
    out[i] = r;
}

extern "C" __global__ void ctl_goto_loop(const int* a, int* out, int n) {
    LOOP(i, n) {
        int x = a[i] & 0xffff, steps = 0;
    again:
        if (x > 1) { x = (x % 2) ? x * 3 + 1 : x / 2; if (++steps < 100) goto again; }
        out[i] = steps;
    }
}

extern "C" __global__ void ctl_exit_asm(const int* a, int* out, int n) {
    int i = threadIdx.x;
    out[i] = 5;
    if (a[i % n] & 1) asm volatile("exit;");
    out[i] = 6 + a[i % n];
}
