// Tensor cores through inline PTX: mma.sync for f16/bf16 -> f32, f16 -> f16, tf32 and s8, and
// ldmatrix in its x1/x2/x4 and .trans forms. The mma kernels take each lane's fragment registers
// as given (the fragment layouts are the emulator's business); mma_ldmatrix_gemm builds them from
// row-major tiles in shared memory as a from-scratch GEMM does.

extern "C" __global__ void mma_f16_f32_m16n8k16(const unsigned* a, const unsigned* b, const float* c, float* d) {
    int l = threadIdx.x;
    const unsigned* A = a + 4 * l; const unsigned* B = b + 2 * l; const float* C = c + 4 * l;
    float r0, r1, r2, r3;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};"
                 : "=f"(r0), "=f"(r1), "=f"(r2), "=f"(r3)
                 : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]),
                   "f"(C[0]), "f"(C[1]), "f"(C[2]), "f"(C[3]));
    d[4 * l] = r0; d[4 * l + 1] = r1; d[4 * l + 2] = r2; d[4 * l + 3] = r3;
}

extern "C" __global__ void mma_bf16_f32_m16n8k16(const unsigned* a, const unsigned* b, const float* c, float* d) {
    int l = threadIdx.x;
    const unsigned* A = a + 4 * l; const unsigned* B = b + 2 * l; const float* C = c + 4 * l;
    float r0, r1, r2, r3;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};"
                 : "=f"(r0), "=f"(r1), "=f"(r2), "=f"(r3)
                 : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]),
                   "f"(C[0]), "f"(C[1]), "f"(C[2]), "f"(C[3]));
    d[4 * l] = r0; d[4 * l + 1] = r1; d[4 * l + 2] = r2; d[4 * l + 3] = r3;
}

extern "C" __global__ void mma_f16_f16_m16n8k16(const unsigned* a, const unsigned* b, const unsigned* c, unsigned* d) {
    int l = threadIdx.x;
    const unsigned* A = a + 4 * l; const unsigned* B = b + 2 * l; const unsigned* C = c + 2 * l;
    unsigned r0, r1;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};"
                 : "=r"(r0), "=r"(r1)
                 : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]), "r"(C[0]), "r"(C[1]));
    d[2 * l] = r0; d[2 * l + 1] = r1;
}

extern "C" __global__ void mma_f16_f32_m16n8k8(const unsigned* a, const unsigned* b, const float* c, float* d) {
    int l = threadIdx.x;
    const unsigned* A = a + 2 * l; const float* C = c + 4 * l;
    float r0, r1, r2, r3;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
                 : "=f"(r0), "=f"(r1), "=f"(r2), "=f"(r3)
                 : "r"(A[0]), "r"(A[1]), "r"(b[l]), "f"(C[0]), "f"(C[1]), "f"(C[2]), "f"(C[3]));
    d[4 * l] = r0; d[4 * l + 1] = r1; d[4 * l + 2] = r2; d[4 * l + 3] = r3;
}

extern "C" __global__ void mma_tf32_m16n8k8(const unsigned* a, const unsigned* b, const float* c, float* d) {
    int l = threadIdx.x;
    const unsigned* A = a + 4 * l; const unsigned* B = b + 2 * l; const float* C = c + 4 * l;
    float r0, r1, r2, r3;
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};"
                 : "=f"(r0), "=f"(r1), "=f"(r2), "=f"(r3)
                 : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]),
                   "f"(C[0]), "f"(C[1]), "f"(C[2]), "f"(C[3]));
    d[4 * l] = r0; d[4 * l + 1] = r1; d[4 * l + 2] = r2; d[4 * l + 3] = r3;
}

extern "C" __global__ void mma_s8_s32_m16n8k32(const unsigned* a, const unsigned* b, const int* c, int* d) {
    int l = threadIdx.x;
    const unsigned* A = a + 4 * l; const unsigned* B = b + 2 * l; const int* C = c + 4 * l;
    int r[4], s[4];
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]),
                   "r"(C[0]), "r"(C[1]), "r"(C[2]), "r"(C[3]));
    asm volatile("mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%10,%11,%12,%13};"
                 : "=r"(s[0]), "=r"(s[1]), "=r"(s[2]), "=r"(s[3])
                 : "r"(A[0]), "r"(A[1]), "r"(A[2]), "r"(A[3]), "r"(B[0]), "r"(B[1]),
                   "r"(C[0]), "r"(C[1]), "r"(C[2]), "r"(C[3]));
    for (int k = 0; k < 4; ++k) { d[8 * l + k] = r[k]; d[8 * l + 4 + k] = s[k]; }
}

// ldmatrix: 32 rows of 16 bytes in shared memory; each lane names one row (rows[lane]).
extern "C" __global__ void mma_ldmatrix_forms(const unsigned* src, const int* rows, unsigned* out) {
    __shared__ __align__(16) unsigned short tile[32 * 8];
    int l = threadIdx.x;
    for (int k = l; k < 32 * 8 / 2; k += 32) reinterpret_cast<unsigned*>(tile)[k] = src[k];
    __syncwarp();
    unsigned addr = (unsigned)__cvta_generic_to_shared(tile + 8 * rows[l]);
    unsigned r[15];
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(addr));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r[1]), "=r"(r[2]) : "r"(addr));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[3]), "=r"(r[4]), "=r"(r[5]), "=r"(r[6]) : "r"(addr));
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r[7]) : "r"(addr));
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(r[8]), "=r"(r[9]) : "r"(addr));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[10]), "=r"(r[11]), "=r"(r[12]), "=r"(r[13]) : "r"(addr));
    r[14] = addr & 15;
    for (int k = 0; k < 15; ++k) out[15 * l + k] = r[k];
}

// A 16x16 (row-major) times B 16x8 (stored as B^T, 8 rows of 16) in f16, f32 accumulate: the
// fragments come from ldmatrix, as in a hand-written tensor-core GEMM.
extern "C" __global__ void mma_ldmatrix_gemm(const unsigned short* A, const unsigned short* Bt, float* D) {
    __shared__ __align__(16) unsigned short sA[16 * 16];
    __shared__ __align__(16) unsigned short sB[8 * 16];
    int l = threadIdx.x;
    for (int k = l; k < 256; k += 32) sA[k] = A[k];
    for (int k = l; k < 128; k += 32) sB[k] = Bt[k];
    __syncwarp();
    unsigned a0, a1, a2, a3, b0, b1;
    // x4 over A: lanes 0-15 give rows 0-15 at column 0, lanes 16-31 rows 0-15 at column 8
    unsigned pa = (unsigned)__cvta_generic_to_shared(sA + (l & 15) * 16 + (l >> 4) * 8);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(a0), "=r"(a1), "=r"(a2), "=r"(a3) : "r"(pa));
    unsigned pb = (unsigned)__cvta_generic_to_shared(sB + (l & 7) * 16 + ((l >> 3) & 1) * 8);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(b0), "=r"(b1) : "r"(pb));
    float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};"
                 : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    int g = l >> 2, c = (l & 3) * 2;
    D[g * 8 + c] = d0; D[g * 8 + c + 1] = d1; D[(g + 8) * 8 + c] = d2; D[(g + 8) * 8 + c + 1] = d3;
}

// wgmma with A from registers (sm_90a): one warpgroup computes D (64 x 32, f32) = A (64 x 16, bf16) B^T + C.
// Each thread passes its four A-fragment words as given (two bf16 each) and its 16 accumulator floats; B
// (32 rows x 16 K, bf16, K-major) goes to shared memory the way TMA's 128B swizzle would lay out a 32 x 64
// box (16-byte chunk c of row r at r * 128 + ((c ^ (r % 8)) * 16); only chunks 0 and 1 hold data), is
// fenced to the async proxy, and is read through a descriptor of that layout.
extern "C" __global__ void __launch_bounds__(128) wgmma_rs_bf16_m64n32k16(const unsigned* a, const unsigned* b,
                                                                          const float* c, float* d) {
    __shared__ __align__(1024) unsigned char tile[32 * 128];
    const int t = threadIdx.x;
    for (int i = t; i < 32 * 128 / 16; i += 128) {   // zero it, then B's 32 rows x 2 chunks
        reinterpret_cast<uint4*>(tile)[i] = make_uint4(0, 0, 0, 0);
    }
    __syncthreads();
    if (t < 64) {
        const int r = t / 2, ch = t % 2;
        const uint4 v = reinterpret_cast<const uint4*>(b)[r * 2 + ch];
        *reinterpret_cast<uint4*>(tile + r * 128 + ((ch ^ (r % 8)) * 16)) = v;
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    unsigned long long desc = (unsigned long long)((s & 0x3FFFF) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);
    unsigned a0 = a[4 * t], a1 = a[4 * t + 1], a2 = a[4 * t + 2], a3 = a[4 * t + 3];
    float x[16];
    for (int i = 0; i < 16; ++i) x[i] = c[16 * t + i];
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    asm volatile(
        "{\n\t.reg .pred p;\n\tsetp.ne.b32 p, 1, 0;\n\t"
        "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, "
        "%12, %13, %14, %15}, {%16, %17, %18, %19}, %20, p, 1, 1, 0;\n\t}"
        : "+f"(x[0]), "+f"(x[1]), "+f"(x[2]), "+f"(x[3]), "+f"(x[4]), "+f"(x[5]), "+f"(x[6]), "+f"(x[7]),
          "+f"(x[8]), "+f"(x[9]), "+f"(x[10]), "+f"(x[11]), "+f"(x[12]), "+f"(x[13]), "+f"(x[14]), "+f"(x[15])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(desc)
        : "memory");
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    for (int i = 0; i < 16; ++i) d[16 * t + i] = x[i];
}
