// Second outside set: printf with many formats, cuda::std numerics, mixed small programs.
#include <cuda/std/limits>
#include <cuda/std/cmath>
#include <cuda/std/bit>
#include <cuda/std/complex>

extern "C" __global__ void printf_many(const int* a, const float* f, const long long* l) {
    int t = threadIdx.x, w = t >> 5;
    if (t % 5 != 1) return;
    float y = f[t];
    printf("w%d t%d |%5.2f|%e|%g|%x|%lld|%c|%s|%%|\n", w, t, y, y, y, (unsigned)a[t], l[t], 'a' + t % 26,
           t & 2 ? "two" : "none");
    printf("w%d t%d |%-8.3e|%+.4g|%08.3f|%#x|%#o|%5s|%-5s|%3c|\n", w, t, y * 1e5f, y, y, a[t] & 0xFFF, a[t] & 0777,
           "ab", "cd", 'Z');
    printf("w%d t%d |%llu|%lli|%hd|%hhu|%.0e|%G|%E|\n", w, t, (unsigned long long)l[t], l[t] / 3, (short)a[t],
           (unsigned char)a[t], (double)y, y * 1e-20f, (double)y);
}

extern "C" __global__ void printf_pointer(const int* a) {
    int t = threadIdx.x;
    if (t == 3) printf("w0 t3 null=%p one=%d\n", (void*)0, a[t] == a[t]);
    if (t == 40) printf("w1 t40 %s %d %s\n", "many", 3, "strings");
}

extern "C" __global__ void printf_loop(const int* a) {
    int t = threadIdx.x;
    if (t >= 4) return;
    for (int i = 0; i < a[t] % 4 + 1; ++i) printf("w0 t%d i%d v%d\n", t, i, a[t] * i);
}

extern "C" __global__ void custd_numerics(const float* a, const int* b, float* out, int* iout) {
    int t = threadIdx.x;
    float x = a[t];
    unsigned u = (unsigned)b[t];
    out[4 * t] = cuda::std::numeric_limits<float>::epsilon() * x + cuda::std::numeric_limits<float>::denorm_min();
    out[4 * t + 1] = cuda::std::fabs(x) + cuda::std::fmax(x, 0.5f);
    out[4 * t + 2] = cuda::std::isnan(x) ? -1.f : cuda::std::copysign(2.f, x);
    cuda::std::complex<float> z(x, 1.5f), w(0.5f, -x);
    cuda::std::complex<float> p = z * w + z;
    out[4 * t + 3] = p.real() - p.imag();
    iout[4 * t] = cuda::std::popcount(u);
    iout[4 * t + 1] = cuda::std::countl_zero(u) + 100 * cuda::std::countr_zero(u | 0x80000000u);
    iout[4 * t + 2] = (int)cuda::std::bit_width(u) + ((int)cuda::std::has_single_bit(u) << 8);
    iout[4 * t + 3] = (int)cuda::std::rotl(u, t % 37) ^ cuda::std::numeric_limits<int>::min();
}

struct Node { int key; int left, right; };
extern "C" __global__ void local_tree(const int* keys, int* out) {
    int t = threadIdx.x;
    Node tree[16];
    int n = 0;
    for (int i = 0; i < 12; ++i) {
        int k = keys[(t + i * 5) & 127];
        tree[n] = {k, -1, -1};
        if (n > 0) {
            int c = 0;
            while (true) {
                int& nxt = k < tree[c].key ? tree[c].left : tree[c].right;
                if (nxt < 0) { nxt = n; break; }
                c = nxt;
            }
        }
        ++n;
    }
    // depth of the last node and in-order first key
    int c = 0, d = 0;
    while (tree[c].left >= 0) { c = tree[c].left; ++d; }
    out[2 * t] = tree[c].key;
    out[2 * t + 1] = d;
}

extern "C" __global__ void bit_matrix(const unsigned* a, unsigned* out) {
    int t = threadIdx.x;
    unsigned m[8];
    for (int i = 0; i < 8; ++i) m[i] = a[(t + i) & 63];
    for (int i = 0; i < 8; ++i)
        for (int j = i + 1; j < 8; ++j) { unsigned x = m[i] & ~m[j]; m[j] ^= __funnelshift_r(x, x, j); }
    unsigned h = 2166136261u;
    for (int i = 0; i < 8; ++i) h = (h ^ m[i]) * 16777619u;
    out[t] = h;
}

extern "C" __global__ void mixed_types(const signed char* c, const short* s, const unsigned short* us, float* out,
                                       int* iout) {
    int t = threadIdx.x;
    signed char a = c[t];
    short b = s[t];
    unsigned short u = us[t];
    iout[3 * t] = a * b + u;
    iout[3 * t + 1] = (unsigned char)a + (short)(b * 3) - (signed char)(u >> 1);
    iout[3 * t + 2] = (int)(unsigned short)(u * u) ^ ((int)(char)(b >> 4));
    out[2 * t] = (float)a / 3.f + (float)b;
    out[2 * t + 1] = (float)(u * 65537u) + (double)b * 1e-3;
}
