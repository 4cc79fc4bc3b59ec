// bwlab-targets: sm_100a
// Stage 4 teaching kernel (notebook 04): a warpgroup writes TMEM with tcgen05.st and reads it back
// with tcgen05.ld.32x32b, the way an epilogue reads the accumulator the tensor core left there.
//
//   warp 0     tcgen05.alloc kColumns columns: the TMEM address lands in SMEM; relinquish the permit
//   all        fence, __syncthreads, fence; every thread reads the address from SMEM
//   each warp  tcgen05.st its 32 lanes x kNum columns, tcgen05.wait::st
//   each warp  tcgen05.ld the same cells, tcgen05.wait::ld, registers -> out[warp][thread][register]
//   warp 0     tcgen05.dealloc, once every warp is done with TMEM
//
// bwlab.tmem.teach_plan reads three things from this text, so the model follows your edits:
// kColumns, kNum and the line `const u32 lane0 = ...;`.
#include "ptx.cuh"

constexpr u32 kColumns = 32;  // tcgen05.alloc: a power of two in [32, 512]
constexpr int kNum = 8;       // .32x32b.x<kNum>: kNum columns, one register per column per thread

extern "C" __global__ void __launch_bounds__(128, 1) teach_tmem(u32* __restrict__ out) {
    __shared__ alignas(16) u32 tmem_base_slot;  // tcgen05.alloc writes the TMEM address here
    // The .sync.aligned instructions below must be executed by all 32 threads of a warp together:
    // broadcasting the warp index from lane 0 tells the compiler every branch on it is warp-uniform.
    const u32 warp = __shfl_sync(0xffffffff, threadIdx.x / 32, 0);
    const u32 t = threadIdx.x % 32;

    // 1. One warp allocates. The address goes to shared memory, not to a register.
    if (warp == 0) {
        tcgen05_alloc(&tmem_base_slot, kColumns);
        tcgen05_relinquish_alloc_permit();  // this CTA allocates nothing more; other CTAs may
    }
    // 2. The allocation is a tcgen05 operation: fence it around the barrier that publishes it.
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    const u32 tmem_base = tmem_base_slot;

    // 3. A warp reaches only its quarter of the 128 lanes (warp w: lanes 32 * (w % 4) .. +31);
    //    thread t of the warp is lane lane0 + t.
    const u32 lane0 = 32 * (warp % 4);
    const u32 taddr = tmem_base + (lane0 << 16);  // lane in bits 31-16, column in bits 15-0

    // 4. Write: register j of thread t -> (lane lane0 + t, column j). Each cell receives its own
    //    (lane, column) relative to the allocation, so a value read back says where it was read.
    u32 v[kNum];
    for (int j = 0; j < kNum; ++j) v[j] = ((lane0 + t) << 16) | j;
    tcgen05_st_32x32b<kNum>(taddr, v);  // tcgen05.st.sync.aligned.32x32b.x<kNum>.b32
    tcgen05_wait_st();                  // the stores have landed before this warp reads the cells

    // 5. Read: tcgen05.ld is asynchronous; the registers are valid only after tcgen05.wait::ld.
    u32 r[kNum];
    tcgen05_ld_32x32b<kNum>(r, taddr);  // tcgen05.ld.sync.aligned.32x32b.x<kNum>.b32
    tcgen05_wait_ld();
    for (int j = 0; j < kNum; ++j) out[(warp * 32 + t) * kNum + j] = r[j];

    // 6. Free: every warp has finished with TMEM before the allocating warp deallocates.
    tcgen05_fence_before_thread_sync();
    __syncthreads();
    tcgen05_fence_after_thread_sync();
    if (warp == 0) tcgen05_dealloc(tmem_base, kColumns);
}
