// bwlab PTX wrappers: common types, the status record, elect, fences, timers.
//
// One small named function per PTX instruction, named after the instruction, so a kernel reads
// like the data path it teaches and the PTX is one click away. PTX ISA sections are cited per wrapper.
#pragma once

// NVRTC ships no C library headers by default: spell the fixed-width types ourselves.
typedef unsigned char      u8;
typedef unsigned short     u16;
typedef unsigned int       u32;
typedef unsigned long long u64;

#ifndef BW_WAIT_TIMEOUT_NS
// Budget of every bounded mbarrier wait, in nanoseconds of %globaltimer (default 200 ms).
#define BW_WAIT_TIMEOUT_NS 200000000ull
#endif

// offsetof without <cstddef>, which NVRTC does not ship: __INTADDR__ is what the EDG front end's
// own offsetof expands to (NVRTC has no __builtin_offsetof); other compilers have the builtin.
// Used by the static_asserts that tie each struct to the NumPy dtype that mirrors it.
#if defined(__CUDACC_RTC__)
#define BW_OFFSETOF(T, field) __INTADDR__(&(((T*)0)->field))
#else
#define BW_OFFSETOF(T, field) __builtin_offsetof(T, field)
#endif

// ---------------------------------------------------------------------------------------------
// Status record: the first thread that gives up on a barrier writes here; Python reads it after
// every launch (bwlab.runtime) and raises MbarrierTimeout naming the barrier. A global variable at
// namespace scope keeps its unmangled name, so the host finds it with RawModule.get_global.
// ---------------------------------------------------------------------------------------------
struct BwStatus {
    u32 code;         // 0 = ok, 1 = mbarrier wait timed out
    u32 barrier_id;   // which barrier (an index the kernel's Python wrapper names)
    u32 phase_parity; // the parity the thread was waiting for
    u32 expected_tx;  // transaction bytes the waiter was told to expect
    u32 block_x, block_y, block_z;
    u32 thread;
    u32 cta_rank;     // rank in the cluster (0 without clusters)
    u32 pad;
    u64 waited_ns;
};
// Mirrored by STATUS_DTYPE in bwlab/runtime.py; tests/test_struct_mirrors.py compares the two.
static_assert(sizeof(BwStatus) == 48, "BwStatus must match STATUS_DTYPE (itemsize 48)");
static_assert(BW_OFFSETOF(BwStatus, code) == 0, "BwStatus.code");
static_assert(BW_OFFSETOF(BwStatus, barrier_id) == 4, "BwStatus.barrier_id");
static_assert(BW_OFFSETOF(BwStatus, phase_parity) == 8, "BwStatus.phase_parity");
static_assert(BW_OFFSETOF(BwStatus, expected_tx) == 12, "BwStatus.expected_tx");
static_assert(BW_OFFSETOF(BwStatus, block_x) == 16, "BwStatus.block_x");
static_assert(BW_OFFSETOF(BwStatus, block_y) == 20, "BwStatus.block_y");
static_assert(BW_OFFSETOF(BwStatus, block_z) == 24, "BwStatus.block_z");
static_assert(BW_OFFSETOF(BwStatus, thread) == 28, "BwStatus.thread");
static_assert(BW_OFFSETOF(BwStatus, cta_rank) == 32, "BwStatus.cta_rank");
static_assert(BW_OFFSETOF(BwStatus, pad) == 36, "BwStatus.pad");
static_assert(BW_OFFSETOF(BwStatus, waited_ns) == 40, "BwStatus.waited_ns");
__device__ BwStatus bw_status;

__device__ __forceinline__ u64 globaltimer_ns() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__device__ __forceinline__ u32 smem_u32(const void* p) {
    // 32-bit shared-state-space address, as PTX shared:: instructions take it.
    return static_cast<u32>(__cvta_generic_to_shared(p));
}

// elect.sync (PTX ISA 9.7.13.9, sm_90+): one lane of the warp is elected; returns true there.
__device__ __forceinline__ bool elect_one_sync() {
    u32 pred = 0;
    asm volatile(
        "{\n\t.reg .pred P;\n\t"
        "elect.sync _|P, 0xffffffff;\n\t"
        "selp.u32 %0, 1, 0, P;\n\t}"
        : "=r"(pred));
    return pred != 0;
}

// fence.proxy.async.shared::cta: make this thread's generic-proxy SMEM writes visible to the
// async proxy (TMA store reads, tcgen05.mma operand reads) that is issued after it.
__device__ __forceinline__ void fence_proxy_async_shared_cta() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

// fence.proxy.async.global: same for global memory written by generic stores.
__device__ __forceinline__ void fence_proxy_async_global() {
    asm volatile("fence.proxy.async.global;" ::: "memory");
}

// fence.mbarrier_init.release.cluster: publish mbarrier.init to the other CTAs of the cluster
// (and to the async proxy) before anyone can arrive remotely or complete_tx on it.
__device__ __forceinline__ void fence_mbarrier_init_release_cluster() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

__device__ __forceinline__ u32 laneid() {
    u32 r;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(r));
    return r;
}

__device__ __forceinline__ u32 warpid_in_cta() {
    // Warp index computed from threadIdx (%warpid is not stable; the PTX ISA says so).
    return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) / 32;
}

// bar.sync id, count (PTX ISA 9.7.13.1 "bar/barrier"): a named barrier for `count` threads (a
// multiple of 32) — lets one warpgroup synchronise without stopping the others of the CTA.
// Barrier 0 is __syncthreads's; ids 1..15 are free for the kernel.
__device__ __forceinline__ void named_barrier_sync(u32 id, u32 count) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
