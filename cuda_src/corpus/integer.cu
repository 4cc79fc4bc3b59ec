// Integer arithmetic as people write it: 32/64/128-bit, the intrinsics of the CUDA math API,
// and a few instructions only reachable through inline PTX (bfind, bfe/bfi, prmt modes, add.sat).
// Each kernel walks its inputs with a block-stride loop and writes everything it computes.

#define LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

extern "C" __global__ void int_add_sub_s32(const int* a, const int* b, int* out, int n) {
    LOOP(i, n) {
        unsigned ua = a[i], ub = b[i];
        out[2 * i] = (int)(ua + ub);
        out[2 * i + 1] = (int)(ua - ub);
    }
}

extern "C" __global__ void int_mul_s32(const int* a, const int* b, int* out, int n) {
    LOOP(i, n) {
        out[3 * i] = (int)((unsigned)a[i] * (unsigned)b[i]);
        out[3 * i + 1] = __mulhi(a[i], b[i]);
        out[3 * i + 2] = (int)__umulhi((unsigned)a[i], (unsigned)b[i]);
    }
}

extern "C" __global__ void int_mul_wide(const int* a, const int* b, long long* out, int n) {
    LOOP(i, n) {
        out[2 * i] = (long long)a[i] * (long long)b[i];
        out[2 * i + 1] = (long long)((unsigned long long)(unsigned)a[i] * (unsigned)b[i]);
    }
}

extern "C" __global__ void int_mad_s32(const int* a, const int* b, const int* c, int* out, int n) {
    LOOP(i, n) out[i] = (int)((unsigned)a[i] * (unsigned)b[i] + (unsigned)c[i]);
}

extern "C" __global__ void int_div_rem_s32(const int* a, const int* b, int* out, int n) {
    LOOP(i, n) {
        int x = a[i], y = b[i];
        if (y == 0 || (x == (-2147483647 - 1) && y == -1)) { out[2 * i] = 0x7eadbeef; out[2 * i + 1] = 0; continue; }
        out[2 * i] = x / y;
        out[2 * i + 1] = x % y;
    }
}

extern "C" __global__ void int_div_rem_u32(const unsigned* a, const unsigned* b, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned x = a[i], y = b[i];
        out[2 * i] = y ? x / y : 0xdeadu;
        out[2 * i + 1] = y ? x % y : 0xbeefu;
    }
}

// Division by zero and INT_MIN / -1 in PTX: the ISA leaves the value to the machine; record it.
extern "C" __global__ void int_div_edge_asm(const int* a, const int* b, int* out, int n) {
    LOOP(i, n) {
        int q, r; unsigned uq, ur;
        asm("div.s32 %0, %1, %2;" : "=r"(q) : "r"(a[i]), "r"(b[i]));
        asm("rem.s32 %0, %1, %2;" : "=r"(r) : "r"(a[i]), "r"(b[i]));
        asm("div.u32 %0, %1, %2;" : "=r"(uq) : "r"(a[i]), "r"(b[i]));
        asm("rem.u32 %0, %1, %2;" : "=r"(ur) : "r"(a[i]), "r"(b[i]));
        out[4 * i] = q; out[4 * i + 1] = r; out[4 * i + 2] = (int)uq; out[4 * i + 3] = (int)ur;
    }
}

extern "C" __global__ void int_div_rem_s64(const long long* a, const long long* b, long long* out, int n) {
    LOOP(i, n) {
        long long x = a[i], y = b[i];
        if (y == 0) { out[2 * i] = 1; out[2 * i + 1] = 2; continue; }
        if (x == (-9223372036854775807LL - 1) && y == -1) {
            long long q, r;  // C++ calls this undefined; PTX div.s64 gives the machine's answer
            asm("div.s64 %0, %1, %2;" : "=l"(q) : "l"(x), "l"(y));
            asm("rem.s64 %0, %1, %2;" : "=l"(r) : "l"(x), "l"(y));
            out[2 * i] = q; out[2 * i + 1] = r; continue;
        }
        out[2 * i] = x / y;
        out[2 * i + 1] = x % y;
    }
}

extern "C" __global__ void int_div_rem_u64(const unsigned long long* a, const unsigned long long* b,
                                           unsigned long long* out, int n) {
    LOOP(i, n) {
        unsigned long long x = a[i], y = b[i];
        out[2 * i] = y ? x / y : 7ull;
        out[2 * i + 1] = y ? x % y : 9ull;
    }
}

extern "C" __global__ void int_div_const(const long long* a, long long* out, int n) {
    LOOP(i, n) {
        long long x = a[i];
        int x32 = (int)x;
        out[6 * i] = x / 3;
        out[6 * i + 1] = x % 3;
        out[6 * i + 2] = x / 10;
        out[6 * i + 3] = x32 / 7;
        out[6 * i + 4] = x32 % -5;
        out[6 * i + 5] = (long long)((unsigned long long)x / 1000000007ull);
    }
}

extern "C" __global__ void int_mul_s64(const long long* a, const long long* b, long long* out, int n) {
    LOOP(i, n) {
        unsigned long long x = a[i], y = b[i];
        out[4 * i] = (long long)(x * y);
        out[4 * i + 1] = __mul64hi(a[i], b[i]);
        out[4 * i + 2] = (long long)__umul64hi(x, y);
        out[4 * i + 3] = (long long)(x * y + (unsigned long long)b[(i + 1) % n]);
    }
}

extern "C" __global__ void int_add_sub_s64(const long long* a, const long long* b, long long* out, int n) {
    LOOP(i, n) {
        unsigned long long x = a[i], y = b[i];
        out[3 * i] = (long long)(x + y);
        out[3 * i + 1] = (long long)(x - y);
        out[3 * i + 2] = (long long)(0ull - x);
    }
}

extern "C" __global__ void int_mul24(const int* a, const int* b, int* out, int n) {
    LOOP(i, n) {
        int hi; unsigned uhi;
        asm("mul24.hi.s32 %0, %1, %2;" : "=r"(hi) : "r"(a[i]), "r"(b[i]));
        asm("mul24.hi.u32 %0, %1, %2;" : "=r"(uhi) : "r"(a[i]), "r"(b[i]));
        out[4 * i] = __mul24(a[i], b[i]);
        out[4 * i + 1] = (int)__umul24((unsigned)a[i], (unsigned)b[i]);
        out[4 * i + 2] = hi;
        out[4 * i + 3] = (int)uhi;
    }
}

extern "C" __global__ void int_sad(const int* a, const int* b, const int* c, unsigned* out, int n) {
    LOOP(i, n) {
        out[2 * i] = __sad(a[i], b[i], (unsigned)c[i]);
        out[2 * i + 1] = __usad((unsigned)a[i], (unsigned)b[i], (unsigned)c[i]);
    }
}

extern "C" __global__ void int_bitcount32(const unsigned* a, int* out, int n) {
    LOOP(i, n) {
        unsigned x = a[i];
        out[4 * i] = __clz((int)x);
        out[4 * i + 1] = __ffs((int)x);
        out[4 * i + 2] = __popc(x);
        out[4 * i + 3] = (int)__brev(x);
    }
}

extern "C" __global__ void int_bitcount64(const unsigned long long* a, long long* out, int n) {
    LOOP(i, n) {
        unsigned long long x = a[i];
        out[4 * i] = __clzll((long long)x);
        out[4 * i + 1] = __ffsll((long long)x);
        out[4 * i + 2] = __popcll(x);
        out[4 * i + 3] = (long long)__brevll(x);
    }
}

extern "C" __global__ void int_bfind(const unsigned long long* a, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned long long x = a[i];
        unsigned lo = (unsigned)x, r0, r1, r2, r3, r4, r5;
        asm("bfind.u32 %0, %1;" : "=r"(r0) : "r"(lo));
        asm("bfind.s32 %0, %1;" : "=r"(r1) : "r"(lo));
        asm("bfind.shiftamt.u32 %0, %1;" : "=r"(r2) : "r"(lo));
        asm("bfind.u64 %0, %1;" : "=r"(r3) : "l"(x));
        asm("bfind.s64 %0, %1;" : "=r"(r4) : "l"(x));
        asm("bfind.shiftamt.s64 %0, %1;" : "=r"(r5) : "l"(x));
        unsigned* o = out + 6 * i;
        o[0] = r0; o[1] = r1; o[2] = r2; o[3] = r3; o[4] = r4; o[5] = r5;
    }
}

// bfe/bfi: position and length come from data, including len 0, pos >= width, pos + len > width.
extern "C" __global__ void int_bfe32(const unsigned* a, const unsigned* pl, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned pos = pl[i] & 0xff, len = (pl[i] >> 8) & 0xff, u, s;
        asm("bfe.u32 %0, %1, %2, %3;" : "=r"(u) : "r"(a[i]), "r"(pos), "r"(len));
        asm("bfe.s32 %0, %1, %2, %3;" : "=r"(s) : "r"(a[i]), "r"(pos), "r"(len));
        out[2 * i] = u; out[2 * i + 1] = s;
    }
}

extern "C" __global__ void int_bfe64(const unsigned long long* a, const unsigned* pl, unsigned long long* out, int n) {
    LOOP(i, n) {
        unsigned pos = pl[i] & 0xff, len = (pl[i] >> 8) & 0xff;
        unsigned long long u, s;
        asm("bfe.u64 %0, %1, %2, %3;" : "=l"(u) : "l"(a[i]), "r"(pos), "r"(len));
        asm("bfe.s64 %0, %1, %2, %3;" : "=l"(s) : "l"(a[i]), "r"(pos), "r"(len));
        out[2 * i] = u; out[2 * i + 1] = s;
    }
}

extern "C" __global__ void int_bfi32(const unsigned* a, const unsigned* b, const unsigned* pl, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned pos = pl[i] & 0xff, len = (pl[i] >> 8) & 0xff, r;
        asm("bfi.b32 %0, %1, %2, %3, %4;" : "=r"(r) : "r"(a[i]), "r"(b[i]), "r"(pos), "r"(len));
        out[i] = r;
    }
}

extern "C" __global__ void int_bfi64(const unsigned long long* a, const unsigned long long* b, const unsigned* pl,
                                     unsigned long long* out, int n) {
    LOOP(i, n) {
        unsigned pos = pl[i] & 0xff, len = (pl[i] >> 8) & 0xff;
        unsigned long long r;
        asm("bfi.b64 %0, %1, %2, %3, %4;" : "=l"(r) : "l"(a[i]), "l"(b[i]), "r"(pos), "r"(len));
        out[i] = r;
    }
}

// Plain C bit-field code: the compiler picks bfe/bfi or shifts itself.
extern "C" __global__ void int_bitfield_c(const unsigned* a, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned x = a[i];
        out[3 * i] = (x >> 7) & 0x1f;
        out[3 * i + 1] = (unsigned)(((int)x << 3) >> 27);
        out[3 * i + 2] = (x & ~0xff0u) | ((x >> 20) & 0xff) << 4;
    }
}

extern "C" __global__ void int_byte_perm(const unsigned* a, const unsigned* b, const unsigned* s, unsigned* out, int n) {
    LOOP(i, n) out[i] = __byte_perm(a[i], b[i], s[i]);
}

extern "C" __global__ void int_prmt_modes(const unsigned* a, const unsigned* b, const unsigned* s, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned x = a[i], y = b[i], c = s[i], r[6];
        asm("prmt.b32.f4e %0, %1, %2, %3;" : "=r"(r[0]) : "r"(x), "r"(y), "r"(c));
        asm("prmt.b32.b4e %0, %1, %2, %3;" : "=r"(r[1]) : "r"(x), "r"(y), "r"(c));
        asm("prmt.b32.rc8 %0, %1, %2, %3;" : "=r"(r[2]) : "r"(x), "r"(y), "r"(c));
        asm("prmt.b32.ecl %0, %1, %2, %3;" : "=r"(r[3]) : "r"(x), "r"(y), "r"(c));
        asm("prmt.b32.ecr %0, %1, %2, %3;" : "=r"(r[4]) : "r"(x), "r"(y), "r"(c));
        asm("prmt.b32.rc16 %0, %1, %2, %3;" : "=r"(r[5]) : "r"(x), "r"(y), "r"(c));
        for (int k = 0; k < 6; ++k) out[6 * i + k] = r[k];
    }
}

extern "C" __global__ void int_dp4a_dp2a(const int* a, const int* b, const int* c, int* out, int n) {
    LOOP(i, n) {
        out[6 * i] = __dp4a(a[i], b[i], c[i]);
        out[6 * i + 1] = (int)__dp4a((unsigned)a[i], (unsigned)b[i], (unsigned)c[i]);
        out[6 * i + 2] = __dp2a_lo(a[i], b[i], c[i]);
        out[6 * i + 3] = __dp2a_hi(a[i], b[i], c[i]);
        out[6 * i + 4] = (int)__dp2a_lo((unsigned)a[i], (unsigned)b[i], (unsigned)c[i]);
        out[6 * i + 5] = (int)__dp2a_hi((unsigned)a[i], (unsigned)b[i], (unsigned)c[i]);
    }
}

extern "C" __global__ void int_int128(const unsigned long long* a, const unsigned long long* b,
                                      unsigned long long* out, int n) {
    LOOP(i, n) {
        unsigned __int128 x = ((unsigned __int128)a[2 * i] << 64) | a[2 * i + 1];
        unsigned __int128 y = ((unsigned __int128)b[2 * i] << 64) | b[2 * i + 1];
        unsigned __int128 s = x + y, d = x - y, p = x * y;
        __int128 q = (__int128)x * (__int128)(long long)b[2 * i + 1];
        unsigned long long* o = out + 8 * i;
        o[0] = (unsigned long long)(s >> 64); o[1] = (unsigned long long)s;
        o[2] = (unsigned long long)(d >> 64); o[3] = (unsigned long long)d;
        o[4] = (unsigned long long)(p >> 64); o[5] = (unsigned long long)p;
        o[6] = (unsigned long long)((unsigned __int128)q >> 64); o[7] = (unsigned long long)q;
    }
}

extern "C" __global__ void int_addc_chain(const unsigned* a, const unsigned* b, unsigned* out, int n) {
    LOOP(i, n) {
        const unsigned* x = a + 4 * i; const unsigned* y = b + 4 * i;
        unsigned s0, s1, s2, s3, c, d0, d1, d2, d3, bo;
        asm("add.cc.u32 %0, %5, %9;\n\taddc.cc.u32 %1, %6, %10;\n\taddc.cc.u32 %2, %7, %11;\n\t"
            "addc.cc.u32 %3, %8, %12;\n\taddc.u32 %4, 0, 0;"
            : "=r"(s0), "=r"(s1), "=r"(s2), "=r"(s3), "=r"(c)
            : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]), "r"(y[2]), "r"(y[3]));
        asm("sub.cc.u32 %0, %5, %9;\n\tsubc.cc.u32 %1, %6, %10;\n\tsubc.cc.u32 %2, %7, %11;\n\t"
            "subc.cc.u32 %3, %8, %12;\n\tsubc.u32 %4, 0, 0;"
            : "=r"(d0), "=r"(d1), "=r"(d2), "=r"(d3), "=r"(bo)
            : "r"(x[0]), "r"(x[1]), "r"(x[2]), "r"(x[3]), "r"(y[0]), "r"(y[1]), "r"(y[2]), "r"(y[3]));
        unsigned* o = out + 10 * i;
        o[0] = s0; o[1] = s1; o[2] = s2; o[3] = s3; o[4] = c;
        o[5] = d0; o[6] = d1; o[7] = d2; o[8] = d3; o[9] = bo;
    }
}

extern "C" __global__ void int_add_sat(const int* a, const int* b, int* out, int n) {
    LOOP(i, n) {
        int s, d;
        asm("add.sat.s32 %0, %1, %2;" : "=r"(s) : "r"(a[i]), "r"(b[i]));
        asm("sub.sat.s32 %0, %1, %2;" : "=r"(d) : "r"(a[i]), "r"(b[i]));
        out[2 * i] = s; out[2 * i + 1] = d;
    }
}

extern "C" __global__ void int_simd_video(const unsigned* a, const unsigned* b, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned x = a[i], y = b[i];
        unsigned* o = out + 12 * i;
        o[0] = __vadd4(x, y); o[1] = __vsub4(x, y); o[2] = __vaddss4(x, y); o[3] = __vsubus4(x, y);
        o[4] = __vabsdiffu4(x, y); o[5] = __vmaxs4(x, y); o[6] = __vminu4(x, y); o[7] = __vcmpgtu4(x, y);
        o[8] = __vavgu4(x, y); o[9] = __vadd2(x, y); o[10] = __vhaddu2(x, y); o[11] = __vsetles2(x, y);
    }
}

extern "C" __global__ void int_funnel(const unsigned* a, const unsigned* b, const unsigned* s, unsigned* out, int n) {
    LOOP(i, n) {
        out[4 * i] = __funnelshift_l(a[i], b[i], s[i]);
        out[4 * i + 1] = __funnelshift_r(a[i], b[i], s[i]);
        out[4 * i + 2] = __funnelshift_lc(a[i], b[i], s[i]);
        out[4 * i + 3] = __funnelshift_rc(a[i], b[i], s[i]);
    }
}

// Shift counts at and past the width: PTX clamps (shl/shr by >= 32 give 0 or the sign), C++ does not
// define them, so the PTX is written out.
extern "C" __global__ void int_shift_wide(const unsigned long long* a, const unsigned* s, unsigned long long* out, int n) {
    LOOP(i, n) {
        unsigned x = (unsigned)a[i], c = s[i], l, r; int ar;
        unsigned long long y = a[i], l64, r64; long long ar64;
        asm("shl.b32 %0, %1, %2;" : "=r"(l) : "r"(x), "r"(c));
        asm("shr.u32 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(c));
        asm("shr.s32 %0, %1, %2;" : "=r"(ar) : "r"(x), "r"(c));
        asm("shl.b64 %0, %1, %2;" : "=l"(l64) : "l"(y), "r"(c));
        asm("shr.u64 %0, %1, %2;" : "=l"(r64) : "l"(y), "r"(c));
        asm("shr.s64 %0, %1, %2;" : "=l"(ar64) : "l"(y), "r"(c));
        unsigned long long* o = out + 6 * i;
        o[0] = l; o[1] = r; o[2] = (unsigned)ar; o[3] = l64; o[4] = r64; o[5] = (unsigned long long)ar64;
    }
}

extern "C" __global__ void int_min_max_abs(const int* a, const int* b, int* out, int n) {
    LOOP(i, n) {
        int* o = out + 6 * i;
        o[0] = min(a[i], b[i]); o[1] = max(a[i], b[i]);
        o[2] = (int)umin((unsigned)a[i], (unsigned)b[i]); o[3] = (int)umax((unsigned)a[i], (unsigned)b[i]);
        o[4] = abs(a[i]);
        o[5] = __hadd(a[i], b[i]) ^ __rhadd(a[i], b[i]);
    }
}

extern "C" __global__ void int_min_max_s64(const long long* a, const long long* b, long long* out, int n) {
    LOOP(i, n) {
        long long* o = out + 5 * i;
        o[0] = llmin(a[i], b[i]); o[1] = llmax(a[i], b[i]);
        o[2] = (long long)ullmin((unsigned long long)a[i], (unsigned long long)b[i]);
        o[3] = (long long)ullmax((unsigned long long)a[i], (unsigned long long)b[i]);
        o[4] = llabs(a[i]);
    }
}

extern "C" __global__ void int_hadd_u32(const unsigned* a, const unsigned* b, unsigned* out, int n) {
    LOOP(i, n) {
        out[2 * i] = __uhadd(a[i], b[i]);
        out[2 * i + 1] = __urhadd(a[i], b[i]);
    }
}

extern "C" __global__ void int_collatz(const unsigned* a, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned long long x = a[i] | 1u;
        unsigned steps = 0;
        while (x != 1 && steps < 500) { x = (x & 1) ? 3 * x + 1 : x >> 1; ++steps; }
        out[i] = steps;
    }
}

extern "C" __global__ void int_hash_mix(const unsigned* a, unsigned* out, int n) {
    LOOP(i, n) {
        unsigned h = a[i] ^ 0x9e3779b9u;
        for (int r = 0; r < 8; ++r) {
            h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;
            h = (h << 5) | (h >> 27);
        }
        out[i] = h;
    }
}
