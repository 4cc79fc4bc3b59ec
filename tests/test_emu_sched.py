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
