// Logic and shifts: three-input boolean expressions (lop3), funnel shifts by data, and the
// bmsk/szext instructions (inline PTX, sm_70+).
#define LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

extern "C" __global__ void logic_lop3_exprs(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned x = a[i], y = b[i], z = c[i];
        unsigned* o = out + 6 * i;
        o[0] = (x & y) | (~x & z); o[1] = x ^ y ^ z; o[2] = (x & y) | (x & z) | (y & z);
        o[3] = ~(x | y) & z; o[4] = (x | ~y) ^ z; o[5] = x & ~(y ^ z);
    }
}

extern "C" __global__ void logic_lop3_asm(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned r0, r1, r2, r3;
        asm("lop3.b32 %0, %1, %2, %3, 0x96;" : "=r"(r0) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
        asm("lop3.b32 %0, %1, %2, %3, 0xe8;" : "=r"(r1) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
        asm("lop3.b32 %0, %1, %2, %3, 0x1b;" : "=r"(r2) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
        asm("lop3.b32 %0, %1, %2, %3, 0x00;" : "=r"(r3) : "r"(a[i]), "r"(b[i]), "r"(c[i]));
        unsigned* o = out + 4 * i;
        o[0] = r0; o[1] = r1; o[2] = r2; o[3] = r3;
    }
}

extern "C" __global__ void logic_shf_asm(const unsigned* a, const unsigned* b, const unsigned* s, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned r0, r1, r2, r3;
        asm("shf.l.wrap.b32 %0, %1, %2, %3;" : "=r"(r0) : "r"(a[i]), "r"(b[i]), "r"(s[i]));
        asm("shf.r.wrap.b32 %0, %1, %2, %3;" : "=r"(r1) : "r"(a[i]), "r"(b[i]), "r"(s[i]));
        asm("shf.l.clamp.b32 %0, %1, %2, %3;" : "=r"(r2) : "r"(a[i]), "r"(b[i]), "r"(s[i]));
        asm("shf.r.clamp.b32 %0, %1, %2, %3;" : "=r"(r3) : "r"(a[i]), "r"(b[i]), "r"(s[i]));
        unsigned* o = out + 4 * i;
        o[0] = r0; o[1] = r1; o[2] = r2; o[3] = r3;
    }
}

extern "C" __global__ void logic_rotate64(const unsigned long long* a, const unsigned* s, unsigned long long* out, int n) {
    LOOP(i, n) {
        unsigned k = s[i] & 63;
        unsigned long long x = a[i];
        out[2 * i] = (x << k) | (x >> ((64 - k) & 63));
        out[2 * i + 1] = (x >> k) | (x << ((64 - k) & 63));
    }
}

extern "C" __global__ void logic_bmsk_szext(const unsigned* a, const unsigned* s, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned pos = s[i] & 0xff, len = (s[i] >> 8) & 0xff, m0, m1, z0, z1;
        asm("bmsk.clamp.b32 %0, %1, %2;" : "=r"(m0) : "r"(pos), "r"(len));
        asm("bmsk.wrap.b32 %0, %1, %2;" : "=r"(m1) : "r"(pos), "r"(len));
        asm("szext.clamp.s32 %0, %1, %2;" : "=r"(z0) : "r"(a[i]), "r"(len));
        asm("szext.wrap.u32 %0, %1, %2;" : "=r"(z1) : "r"(a[i]), "r"(len));
        unsigned* o = out + 4 * i;
        o[0] = m0; o[1] = m1; o[2] = z0; o[3] = z1;
    }
}

extern "C" __global__ void logic_not_cnot(const unsigned* a, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned c;
        asm("cnot.b32 %0, %1;" : "=r"(c) : "r"(a[i]));
        out[3 * i] = ~a[i]; out[3 * i + 1] = c; out[3 * i + 2] = !a[i];
    }
}

extern "C" __global__ void logic_bitset64(const unsigned long long* a, const unsigned* s, unsigned long long* out, int n) {
    LOOP(i, n) {
        unsigned k = s[i] & 63;
        unsigned long long x = a[i];
        out[3 * i] = x | (1ull << k); out[3 * i + 1] = x & ~(1ull << k); out[3 * i + 2] = (x >> k) & 1ull;
    }
}

extern "C" __global__ void logic_gray_parity(const unsigned* a, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned g = a[i] ^ (a[i] >> 1), v = a[i];
        v ^= v >> 16; v ^= v >> 8; v ^= v >> 4; v ^= v >> 2; v ^= v >> 1;
        out[2 * i] = g; out[2 * i + 1] = v & 1;
    }
}
