// Data movement: vector loads and stores up to 16 bytes, 8- and 16-bit sign-extending loads,
// local arrays indexed by data, static and dynamic shared memory, read-only and cache-hinted loads.
#define LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

extern "C" __global__ void mem_vec_float4(const float4* a, float4* out, int n) {
    LOOP(i, n) {
        float4 v = a[i];
        out[i] = make_float4(v.w, v.z * 2.0f, v.y, v.x + 1.0f);
    }
}

extern "C" __global__ void mem_vec_int4_longlong2(const int4* a, const longlong2* b, int4* out, longlong2* out2, int n) {
    LOOP(i, n) {
        int4 v = a[i]; longlong2 w = b[i];
        out[i] = make_int4(v.y, v.x ^ v.w, v.z, v.w - 1);
        out2[i] = make_longlong2(w.y + 1, w.x ^ (long long)v.x);
    }
}

extern "C" __global__ void mem_vec_double2_short4(const double2* a, const short4* b, double2* out, short4* out2, int n) {
    LOOP(i, n) {
        double2 d = a[i]; short4 s = b[i];
        out[i] = make_double2(d.y, d.x * 0.5);
        out2[i] = make_short4(s.w, s.z, (short)(s.y + 1), (short)-s.x);
    }
}

extern "C" __global__ void mem_b128_asm(const unsigned long long* a, unsigned long long* out, int n) {
    LOOP(i, n) {
        unsigned long long lo, hi;
        asm volatile("{\n\t.reg .b128 t;\n\tld.global.b128 t, [%2];\n\tmov.b128 {%0, %1}, t;\n\t}"
                     : "=l"(lo), "=l"(hi) : "l"(a + 2 * i));
        hi ^= 0xffull; lo += 3;
        asm volatile("{\n\t.reg .b128 t;\n\tmov.b128 t, {%1, %2};\n\tst.global.b128 [%0], t;\n\t}"
                     :: "l"(out + 2 * i), "l"(hi), "l"(lo) : "memory");
    }
}

extern "C" __global__ void mem_bytes_signext(const signed char* a, const short* b, int* out, int n) {
    LOOP(i, n) {
        out[3 * i] = a[i]; out[3 * i + 1] = b[i];
        out[3 * i + 2] = (unsigned char)a[i] + (unsigned short)b[i];
    }
}

extern "C" __global__ void mem_byte_stores(const unsigned* a, unsigned char* out, int n) {
    LOOP(i, n) {
        unsigned x = a[i];
        out[4 * i + 3] = (unsigned char)x; out[4 * i + 2] = (unsigned char)(x >> 8);
        out[4 * i + 1] = (unsigned char)(x >> 16); out[4 * i] = (unsigned char)(x >> 24);
    }
}

extern "C" __global__ void mem_local_array(const int* idx, int* out, int n) {
    LOOP(i, n) {
        int t[24];
        for (int k = 0; k < 24; ++k) t[k] = k * k - 7 * i;
        int j = idx[i] % 24; if (j < 0) j += 24;
        t[j] += 1000; t[(j * 5) % 24] ^= 0x55;
        int s = 0;
        for (int k = 0; k < 24; ++k) s = s * 31 + t[(k + j) % 24];
        out[i] = s;
    }
}

extern "C" __global__ void mem_local_struct(const float* a, float* out, int n) {
    struct P { float x, y; int k; double d; };
    LOOP(i, n) {
        P p[4];
        for (int k = 0; k < 4; ++k) p[k] = P{a[i] * k, a[i] - k, k * i, (double)a[i] / (k + 1)};
        int j = ((int)fabsf(a[i])) & 3;
        out[2 * i] = p[j].x + p[3 - j].y + p[j].k;
        out[2 * i + 1] = (float)p[j].d;
    }
}

extern "C" __global__ void mem_shared_transpose(const float* a, float* out) {
    __shared__ float tile[32][33];
    int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    for (int r = ty; r < 32; r += blockDim.x / 32) tile[r][tx] = a[r * 32 + tx];
    __syncthreads();
    for (int r = ty; r < 32; r += blockDim.x / 32) out[r * 32 + tx] = tile[tx][r];
}

extern "C" __global__ void mem_shared_dynamic(const int* a, int* out, int n) {
    extern __shared__ int buf[];
    for (int i = threadIdx.x; i < n; i += blockDim.x) buf[i] = a[i];
    __syncthreads();
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = buf[n - 1 - i] + buf[(i * 7) % n];
}

extern "C" __global__ void mem_shared_bytes(const unsigned* a, unsigned* out) {
    __shared__ unsigned char s[256];
    __shared__ unsigned short h[64];
    int t = threadIdx.x;
    s[t] = (unsigned char)(a[t] * 3);
    if (t < 64) h[t] = (unsigned short)(a[t] >> 7);
    __syncthreads();
    out[t] = s[255 - t] | ((unsigned)h[t & 63] << 8) | ((unsigned)s[(t * 13) & 255] << 24);
}

extern "C" __global__ void mem_ldg_hints(const float* __restrict__ a, float* __restrict__ out, int n) {
    LOOP(i, n) {
        float x = __ldg(a + i), y = __ldcs(a + (i + 1) % n), z = __ldcg(a + (i + 2) % n), w = __ldlu(a + (i + 3) % n);
        __stcs(out + 2 * i, x + y);
        __stwt(out + 2 * i + 1, z - w);
    }
}

extern "C" __global__ void mem_struct_copy(const int* a, int* out, int n) {
    struct S { int a; short b; char c; long long d; };
    LOOP(i, n) {
        S s{a[i], (short)(a[i] >> 3), (char)a[i], (long long)a[i] << 20};
        S t = s; t.b ^= 1; t.d += t.c;
        out[3 * i] = t.a + t.b; out[3 * i + 1] = (int)(t.d >> 16); out[3 * i + 2] = t.c;
    }
}

__device__ int g_counter_table[16] = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3};
__constant__ float c_coeffs[8] = {0.5f, -1.25f, 2.0f, 1e-3f, -7.0f, 3.5f, 0.0f, 1e30f};

extern "C" __global__ void mem_globals_const(const int* a, float* out, int n) {
    LOOP(i, n) {
        int j = a[i] & 15;
        out[i] = c_coeffs[j & 7] * g_counter_table[j] + c_coeffs[(j + 1) & 7];
    }
}

extern "C" __global__ void mem_vec_char4_uchar2(const char4* a, const uchar2* b, char4* out, ushort2* out2, int n) {
    LOOP(i, n) {
        char4 c = a[i]; uchar2 u = b[i];
        out[i] = make_char4(c.w, (signed char)(c.z + 1), c.y, (signed char)-c.x);
        out2[i] = make_ushort2((unsigned short)(u.x * 257), (unsigned short)(u.y + c.x));
    }
}
