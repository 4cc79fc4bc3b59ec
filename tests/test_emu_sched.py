"""bwlab.emu's scheduler and control flow on small ordinary CUDA kernels: calls with frames of their
own (recursion, function pointers, lanes returning at different times), member masks read per lane,
independent thread scheduling inside a warp, CTA residency, nanosleep as time, and the seeded
exploration of interleavings. No GPU needed."""
import numpy as np
import pytest

from bwlab import emu

pytestmark = pytest.mark.usefixtures("emulated_tier")


def _run(src, name, grid, block, args, **kw):
    mod = emu.RawModule(code=src)
    return mod.get_function(name)(grid, block, args, **kw)


def _fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


# ---- calls -----------------------------------------------------------------------------------------
def test_recursion_gets_a_frame_per_activation():
    src = r'''
    __device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
    __device__ __noinline__ int walk(int n) {      // a local array indexed at run time: a local depot per activation
        volatile int buf[4];
        buf[n & 3] = n * 10;
        int below = n > 0 ? walk(n - 1) : 0;
        return below + buf[n & 3];
    }
    extern "C" __global__ void k(int* o) {
        int t = threadIdx.x;
        o[t] = fib(t % 12);                            // lanes recurse to different depths and return apart
        o[64 + t] = walk(t % 7);
    }'''
    o = emu.zeros(128, np.int32)
    _run(src, "k", (1,), (64,), (o,))
    got = o.get()
    assert got[10] == 55 and got[6] == 8                  # fib(10), fib(6)
    assert list(got[:64]) == [_fib(t % 12) for t in range(64)]
    assert list(got[64:]) == [10 * sum(range(t % 7 + 1)) for t in range(64)]


def test_function_pointers_call_through_a_register_per_lane():
    src = r'''
    __device__ __noinline__ int twice(int x) { return 2 * x; }
    __device__ __noinline__ int plus3(int x) { return x + 3; }
    __device__ __noinline__ int square(int x) { return x * x; }
    typedef int (*fn_t)(int);
    extern "C" __global__ void k(int* o, int sel) {
        int t = threadIdx.x;
        int c = (t + sel) % 3;
        fn_t f = c == 0 ? twice : c == 1 ? plus3 : square;   // three targets in one warp
        o[t] = f(t);
    }'''
    o = emu.zeros(64, np.int32)
    _run(src, "k", (1,), (64,), (o, np.int32(1)))
    exp = [[2 * t, t + 3, t * t][(t + 1) % 3] for t in range(64)]
    assert list(o.get()) == exp


def test_lanes_return_from_a_call_at_different_times():
    src = r'''
    __device__ __noinline__ int find(const int* a, int n, int key) {
        for (int i = 0; i < n; ++i)
            if (a[i] == key) return i;                 // each lane leaves the loop, and the call, when it finds
        return -1;
    }
    extern "C" __global__ void k(const int* a, int* o) {
        int t = threadIdx.x;
        int r = find(a, 40, t * 3 % 50);
        o[t] = r + __shfl_sync(0xffffffffu, r, (t + 1) & 31) * 1000;   // the warp is whole again after the call
    }'''
    rng = np.random.default_rng(3)
    a = rng.permutation(50)[:40].astype(np.int32)
    o = emu.zeros(32, np.int32)
    _run(src, "k", (1,), (32,), (emu.asarray(a), o))
    pos = {int(v): i for i, v in enumerate(a)}
    r = [pos.get(t * 3 % 50, -1) for t in range(32)]
    assert list(o.get()) == [r[t] + r[(t + 1) & 31] * 1000 for t in range(32)]


# ---- member masks per lane ---------------------------------------------------------------------------
def test_a_ballot_over_the_active_mask_in_a_branch_lane_0_skips_runs():
    src = r'''extern "C" __global__ void k(const int* a, unsigned* o) {
        int t = threadIdx.x, x = a[t];
        unsigned r = 0xdeadu;
        if (t % 32 != 0 && x > 0) {                      // lane 0 never gets here
            unsigned m = __activemask();
            r = __ballot_sync(m, x > 50) ^ (m << 1);
        }
        o[t] = r;
    }'''
    rng = np.random.default_rng(5)
    a = rng.integers(-100, 100, 64).astype(np.int32)
    o = emu.zeros(64, np.uint32)
    _run(src, "k", (1,), (64,), (emu.asarray(a), o))
    for wbase in (0, 32):
        act = [l for l in range(1, 32) if a[wbase + l] > 0]
        m = sum(1 << l for l in act)
        ballot = sum(1 << l for l in act if a[wbase + l] > 50)
        exp = [(ballot ^ (m << 1)) & 0xFFFFFFFF if l in act else 0xdead for l in range(32)]
        assert list(o.get()[wbase:wbase + 32]) == exp


def test_two_halves_of_a_warp_shuffle_within_their_own_masks():
    src = r'''extern "C" __global__ void k(const int* a, int* o) {
        int l = threadIdx.x;
        unsigned m = a[l] ? 0x0000ffffu : 0xffff0000u;      // one instruction, two member masks
        o[l] = __shfl_xor_sync(m, l * 10, 1) + (int)__ballot_sync(m, l % 3 == 0);
    }'''
    a = (np.arange(32) < 16).astype(np.int32)
    o = emu.zeros(32, np.int32)
    _run(src, "k", (1,), (32,), (emu.asarray(a), o))
    lo = sum(1 << l for l in range(16) if l % 3 == 0)
    hi = sum(1 << l for l in range(16, 32) if l % 3 == 0)
    exp = [(l ^ 1) * 10 + np.uint32(lo if l < 16 else hi).view(np.int32) for l in range(32)]
    assert list(o.get()) == exp


def test_a_member_mask_naming_an_exited_lane_is_reported():
    src = r'''extern "C" __global__ void k(int* o) {
        int l = threadIdx.x;
        if (l == 5) return;
        o[l] = __shfl_sync(0xffffffffu, l, 0);
    }'''
    with pytest.raises(emu.DivergenceError) as e:
        _run(src, "k", (1,), (32,), (emu.zeros(32, np.int32),))
    assert "0xffffffff" in str(e.value) and "[5]" in str(e.value) and "exited" in str(e.value)


# ---- independent thread scheduling ----------------------------------------------------------------
def test_an_intra_warp_spin_lock_completes():
    """Every lane takes one lock in turn: the lane that holds it must run on while its warp-mates spin
    (they are at a lower pc, so lowest-pc-first alone would spin forever)."""
    src = r'''extern "C" __global__ void k(int* lock, int* total, int* order) {
        int t = threadIdx.x;
        if (t % 2 == 0) {                                   // a divergent branch: half the warp takes part
            while (atomicCAS(lock, 0, 1) != 0) { }           // spin until the lock is free
            int n = *(volatile int*)total;                   // critical section: a non-atomic increment
            order[n] = t;
            *(volatile int*)total = n + 1;
            __threadfence();
            atomicExch(lock, 0);
        }
    }'''
    lock, total, order = emu.zeros(1, np.int32), emu.zeros(1, np.int32), emu.full(64, -1, np.int32)
    _run(src, "k", (1,), (64,), (lock, total, order))
    assert total.get()[0] == 32 and sorted(order.get()[:32]) == list(range(0, 64, 2))


def test_syncthreads_inside_a_per_thread_branch_is_a_named_error():
    src = r'''extern "C" __global__ void k(int* o) {
        if (threadIdx.x == 0) __syncthreads();
        o[threadIdx.x] = 1;
    }'''
    with pytest.raises(emu.DivergentBarrier) as e:
        _run(src, "k", (1,), (64,), (emu.zeros(64, np.int32),))
    assert "bar.sync" in str(e.value) and "threadIdx.x == 0" in str(e.value)
    assert isinstance(e.value, emu.DivergenceError)


def test_a_whole_warp_may_skip_syncthreads():
    """Diverged lanes of one warp are an error; whole warps skipping the barrier are what the GPU counts
    as arrived (the warning), and a warp-uniform branch around it is fine."""
    src = r'''extern "C" __global__ void k(int* o) {
        __shared__ int s[64];
        s[threadIdx.x] = threadIdx.x;
        if (threadIdx.x / 32 < 2) __syncthreads();          // every warp of the block, whole
        o[threadIdx.x] = s[63 - threadIdx.x];
    }'''
    o = emu.zeros(64, np.int32)
    _run(src, "k", (1,), (64,), (o,))
    assert list(o.get()) == list(range(63, -1, -1))


# ---- residency ---------------------------------------------------------------------------------------
HANDSHAKE = r'''extern "C" __global__ void k(volatile int* flag, int* o) {
    // every block but the last waits for a flag the LAST block sets: only works while they are resident together
    if (blockIdx.x < gridDim.x - 1) { if (threadIdx.x == 0) { while (flag[0] == 0) { } o[blockIdx.x] = flag[0]; } }
    else if (threadIdx.x == 0) { o[blockIdx.x] = 7; __threadfence(); flag[0] = 42; }
}'''


def test_blocks_resident_together_complete_a_flag_handshake():
    from bwlab.emu.residency import current_gpu
    f, o = emu.zeros(1, np.int32), emu.zeros(8, np.int32)
    run = _run(HANDSHAKE, "k", (8,), (64,), (f, o))
    assert list(o.get()) == [42] * 7 + [7] and not run.warnings
    assert current_gpu().sms == 132 and run.gpu.name == "H100"


def test_a_grid_larger_than_the_gpu_holds_runs_in_waves_with_a_warning():
    from bwlab.emu.residency import emulated_gpu
    src = r'''extern "C" __global__ void k(int* o, unsigned* sm) {
        o[blockIdx.x * blockDim.x + threadIdx.x] = blockIdx.x;
        if (threadIdx.x == 0) asm volatile("mov.u32 %0, %%smid;" : "=r"(sm[blockIdx.x]));
    }'''
    o, sm = emu.zeros(10 * 64, np.int32), emu.zeros(10, np.uint32)
    with emulated_gpu(sms=2, ctas_per_sm=2):
        run = _run(src, "k", (10,), (64,), (o, sm))
    assert np.array_equal(o.get(), np.repeat(np.arange(10), 64))
    assert set(sm.get().tolist()) == {0, 1}
    assert any("at most 4 are resident at once" in w and "2 CTA(s) per SM, limited by 2 CTAs" in w and "waves" in w
               for w in run.warnings)
    # shared memory limits residency too: 100 KiB per CTA -> 2 per SM of 228 KiB
    src2 = r'''extern "C" __global__ void k(int* o) {
        extern __shared__ int s[]; s[threadIdx.x] = threadIdx.x; __syncthreads(); o[blockIdx.x] = s[5]; }'''
    mod = emu.RawModule(code=src2)
    fn = mod.get_function("k")
    fn.max_dynamic_shared_size_bytes = 100 * 1024
    with emulated_gpu(sms=3):
        run = fn((7,), (32,), (emu.zeros(7, np.int32),), shared_mem=100 * 1024)
    assert any("at most 6 are resident" in w and "KiB of shared memory" in w for w in run.warnings)


def test_a_handshake_across_waves_hangs_as_on_a_gpu():
    from bwlab.emu.residency import emulated_gpu
    f, o = emu.zeros(1, np.int32), emu.zeros(3, np.int32)
    with emulated_gpu(sms=2, ctas_per_sm=1), pytest.raises(emu.EmuHang) as e:
        _run(HANDSHAKE, "k", (3,), (32,), (f, o))
    assert "not resident yet" in str(e.value)


TMEM_PAIR = r'''
#include "ptx.cuh"
extern "C" __global__ void k(int* holders, int* seen, unsigned* sm, int handshake) {
    __shared__ u32 slot;
    if (threadIdx.x < 32) {                                     // warp 0 allocates all 512 columns
        tcgen05_alloc(&slot, 512);
        if (threadIdx.x == 0) {
            int n = atomicAdd(holders, 1) + 1;                  // CTAs holding TMEM right now
            if (handshake) {                                    // wait for the other CTA to hold TMEM too
                atomicAdd(holders + 1, 1);
                while (*(volatile int*)(holders + 1) < 2) { }
            }
            seen[blockIdx.x] = n;
            asm volatile("mov.u32 %0, %%smid;" : "=r"(sm[blockIdx.x]));
            atomicSub(holders, 1);
        }
        __syncwarp();
        tcgen05_dealloc(slot, 512);
        tcgen05_relinquish_alloc_permit();
    }
}'''


def test_ctas_on_one_sm_share_its_tmem_and_an_allocation_waits():
    from bwlab.emu.residency import emulated_gpu
    mod = emu.RawModule(code=TMEM_PAIR, arch="sm_100a")
    holders, seen, sm = emu.zeros(2, np.int32), emu.zeros(2, np.int32), emu.full(2, 99, np.uint32)
    with emulated_gpu(sms=1):
        mod.get_function("k")((2,), (64,), (holders, seen, sm, np.int32(0)))
    assert list(sm.get()) == [0, 0] and list(seen.get()) == [1, 1]   # never both holding the 512 columns
    with emulated_gpu(sms=2):                                    # one SM each: TMEM of their own
        holders.set(np.zeros(2, np.int32))
        mod.get_function("k")((2,), (64,), (holders, seen, sm, np.int32(1)))
    assert sorted(sm.get()) == [0, 1] and sorted(seen.get()) in ([1, 2], [2, 2])


def test_an_allocation_that_can_never_be_satisfied_is_tmem_alloc_hang():
    from bwlab.emu.residency import emulated_gpu
    mod = emu.RawModule(code=TMEM_PAIR, arch="sm_100a")
    args = (emu.zeros(2, np.int32), emu.zeros(2, np.int32), emu.zeros(2, np.uint32), np.int32(1))
    with emulated_gpu(sms=1), pytest.raises(emu.TmemAllocHang) as e:
        mod.get_function("k")((2,), (64,), args)
    assert "waits in tcgen05.alloc of 512 columns" in str(e.value) and "co-resident CTA" in str(e.value)


# ---- nanosleep -----------------------------------------------------------------------------------------
def test_nanosleep_is_time_and_a_cluster_handshake_with_back_off_completes():
    """Rank 1 computes (~80 000 warp-instructions, no store) before raising a flag; rank 0 polls it with
    nanosleep back-off and gives up after 1 ms of %globaltimer. On the GPU the work takes well under
    1 ms, so the handshake completes: the emulator must neither take the polling for a hang nor the
    computation for a spin."""
    src = r'''
    extern "C" __global__ void __cluster_dims__(2, 1, 1) k(int* flag, unsigned long long* t, int* o, int n) {
        unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
        if (threadIdx.x != 0) return;
        unsigned long long t0, t1; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        if (r == 1) {
            int acc = 0;
            for (int i = 0; i < n; ++i) acc = acc * 7 + (i ^ o[1]);
            o[1] = acc; __threadfence(); atomicExch(flag, 1);
        } else {
            unsigned ns = 32; int ok = 0;
            for (;;) {
                if (*(volatile int*)flag) { ok = 1; break; }
                asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
                if (t1 - t0 > 1000000ull) break;
                __nanosleep(ns); if (ns < 4096) ns *= 2;
            }
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t1));
            o[0] = ok; t[0] = t1 - t0;
            __nanosleep(200000);                                 // a long sleep: 200 us pass
            asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
            t[1] = t0 - t1;
        }
    }'''
    f, t, o = emu.zeros(1, np.int32), emu.zeros(2, np.uint64), emu.zeros(2, np.int32)
    _run(src, "k", (2,), (32,), (f, t, o, np.int32(20000)))
    assert o.get()[0] == 1 and 20000 < t.get()[0] < 1000000
    assert t.get()[1] >= 200000


# ---- the seeded scheduler explores interleavings ---------------------------------------------------------
def test_a_racy_kernel_gives_different_results_under_different_seeds():
    src = r'''extern "C" __global__ void k(volatile int* last, volatile int* count) {
        if (threadIdx.x % 32 == 0) {
            *last = threadIdx.x / 32 + 1;                       // four warps write one word: the last one wins
            for (int i = 0; i < 5; ++i) { int v = *count; *count = v + 1; }   // a non-atomic increment
        }
    }'''
    mod = emu.RawModule(code=src)
    lasts, counts = [], []
    for seed in range(12):
        last, count = emu.zeros(1, np.int32), emu.zeros(1, np.int32)
        mod.get_function("k")((1,), (128,), (last, count), seed=seed)
        lasts.append(int(last.get()[0]))
        counts.append(int(count.get()[0]))
        if seed < 2:                                            # one seed, one interleaving
            again_l, again_c = emu.zeros(1, np.int32), emu.zeros(1, np.int32)
            mod.get_function("k")((1,), (128,), (again_l, again_c), seed=seed)
            assert (int(again_l.get()[0]), int(again_c.get()[0])) == (lasts[-1], counts[-1])
    assert len(set(lasts)) >= 2 and set(lasts) <= {1, 2, 3, 4}
    assert len(set(counts)) >= 2 and all(5 <= c <= 20 for c in counts) and min(counts) < 20
