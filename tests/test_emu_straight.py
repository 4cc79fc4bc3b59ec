"""The straight-line path (bwlab.emu.straight) runs what `Launch._run_warp` would run one instruction at a time:
the same warp-instructions, the same virtual clock, the same draws of the seeded scheduler, the same bytes."""
import numpy as np
import pytest

from bwlab import emu
from bwlab.emu import machine

KERNELS = r"""
extern "C" __global__ void mixed(const float* x, float* y, unsigned* hist, int n) {
    __shared__ float part[8];
    __shared__ unsigned h[16];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    if (t < 16) h[t] = 0;
    __syncthreads();
    float v = 0.0f;
    for (int k = i; k < n; k += gridDim.x * blockDim.x) {    // uniform loop, then lanes part at the tail
        float a = x[k];
        v += (k & 1) ? a * 2.0f : a - 1.0f;                  // a branch the lanes take differently
        atomicAdd(&h[(k * 7) & 15], 1u);
    }
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((t & 31) == 0) part[t >> 5] = v;
    __syncthreads();
    if (t == 0) {
        float s = 0.0f;
        for (int w = 0; w < (int)(blockDim.x >> 5); ++w) s += part[w];
        y[blockIdx.x] = s;
    }
    if (t < 16) atomicAdd(&hist[t], h[t]);
}

extern "C" __global__ void racy(int* flag, int* out) {
    // warps race on one word: which value is left depends on the interleaving (and so on the seed)
    if ((threadIdx.x & 31) == 0) {
        int seen = atomicAdd(flag, 1);
        out[threadIdx.x >> 5] = seen;
    }
}
"""


def _run(seed):
    mod = emu.RawModule(code=KERNELS, name="straight.cu")
    rng = np.random.default_rng(1)
    n = 3000
    x = emu.asarray(rng.random(n, dtype=np.float32))
    y, hist = emu.zeros(12, np.float32), emu.zeros(16, np.uint32)
    flag, out = emu.zeros(1, np.int32), emu.zeros(8, np.int32)
    got = []
    for name, grid, block, args in (("mixed", (12,), (256,), (x, y, hist, np.int32(n))),
                                    ("racy", (1,), (256,), (flag, out))):
        mod.get_function(name)(grid, block, args, seed=seed)
        L = emu.last_launch()
        got.append((L.steps, L.clock, repr(L.rng.bit_generator.state)))
    return got, y.get().tobytes(), hist.get().tobytes(), out.get().tobytes()


@pytest.mark.parametrize("seed", [0, 5])
def test_straight_path_equals_one_instruction_at_a_time(seed, monkeypatch):
    fast = _run(seed)
    monkeypatch.setattr(machine, "run_straight", lambda *a: None)   # every instruction through Code.run
    slow = _run(seed)
    assert fast == slow


def test_the_straight_path_is_taken():
    calls = []
    real = machine.run_straight

    def counting(*a):
        got = real(*a)
        calls.append(got is not None)
        return got
    mp = pytest.MonkeyPatch()
    mp.setattr(machine, "run_straight", counting)
    try:
        _run(0)
    finally:
        mp.undo()
    assert sum(calls) > 100
