"""The approximate instructions: the emulator's rule (bwlab.hw.approx) against what an H200 computed.

The recordings (docs/results/approx/, tests/data/approx/samples_h200.npz) come from
`python -m bwlab.checks.approx --record` on an H200 (docs/results/approx_h200.txt): the distance of every
input, the 16-bit forms' tables and a sample of inputs with the GPU's results.
"""
import warnings

import numpy as np
import pytest

from bwlab import emu
from bwlab.checks import approx as check
from bwlab.compile import compile_text
from bwlab.hw import approx as ha

SAMPLES = np.load(check.SAMPLES)


@pytest.mark.parametrize("name", check.OPS)
def test_the_numpy_rule_is_the_rule_the_gpu_was_compared_with(name):
    """The same rule written twice (NumPy here, double precision on the GPU in the probe) gives the same bits,
    so the distances measured on the GPU over every input hold for the emulator."""
    mine = check.rule(name, SAMPLES["x"], SAMPLES["y"])
    assert np.array_equal(mine, SAMPLES[f"ref:{name}"])


@pytest.mark.parametrize("name", check.OPS)
def test_the_gpu_lies_within_the_measured_bound(name):
    b = ha.bounds()[name]
    gpu, mine = SAMPLES[f"gpu:{name}"], check.rule(name, SAMPLES["x"], SAMPLES["y"])
    assert check.within(name, gpu, mine, b)
    # and the bound is not loose: on the sample too the rule is mostly bit-identical, never further than needed
    assert (gpu == mine).mean() > min(b["identical"], 0.9) - 0.1


def test_the_bounds_are_the_measured_ones():
    b = ha.bounds()
    assert set(b) == set(check.OPS)
    assert b["ex2.approx.ftz.f32"]["ulp"] == 2 and b["rcp.approx.f32"]["ulp"] == 1
    assert b["sin.approx.f32"]["abs_beyond_2ulp"] < 2 ** -21
    assert all(0.4 < v["identical"] < 1 for v in b.values())


def test_a_wrong_rule_is_caught():
    """The comparison can fail: the emulator's former rule for sin (the exact sine of x, no turns, no RZ
    multiply) is far outside the bound on the recorded sample."""
    x = SAMPLES["x"]
    with np.errstate(all="ignore"):
        exact = np.sin(x.view(np.float32).astype(np.float64)).astype(np.float32).view(np.uint32)
    assert not check.within("sin.approx.f32", SAMPLES["gpu:sin.approx.f32"], exact, ha.bounds()["sin.approx.f32"])


KERNEL = r'''
extern "C" __global__ void approx16(const unsigned short* x, unsigned short* e, unsigned short* t,
                                    unsigned short* eb, unsigned short* tb) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned short r, h = x[i];
    asm("ex2.approx.f16 %0, %1;" : "=h"(r) : "h"(h));       e[i] = r;
    asm("tanh.approx.f16 %0, %1;" : "=h"(r) : "h"(h));      t[i] = r;
    asm("ex2.approx.ftz.bf16 %0, %1;" : "=h"(r) : "h"(h));  eb[i] = r;
    asm("tanh.approx.bf16 %0, %1;" : "=h"(r) : "h"(h));     tb[i] = r;
}
extern "C" __global__ void approx32(const float* x, float* y) {
    unsigned i = threadIdx.x;
    y[i] = __sinf(x[i]) + __fdividef(1.0f, x[i]);
}
'''


@pytest.fixture(scope="module")
def module():
    return emu.RawModule(ptx=compile_text(KERNEL, "approx_kernels.cu", arch="sm_90a").ptx, name="approx_kernels.cu")


def test_the_16_bit_forms_run_bit_identical_to_the_h200_in_the_emulator(module):
    codes = np.random.default_rng(3).integers(0, 65536, 2048).astype(np.uint16)
    outs = [emu.zeros(codes.size, np.uint16) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", emu.ApproxNote)
        module.get_function("approx16")((codes.size // 128,), (128,), (emu.asarray(codes), *outs))
    with np.load(check.HERE / "docs" / "results" / "approx" / "approx16_h200.npz") as z:
        for out, key in zip(outs, ("ex2_f16", "tanh_f16", "ex2_bf16", "tanh_bf16")):
            assert np.array_equal(emu.asnumpy(out), z[key][codes]), key


def test_a_kernel_using_approximate_instructions_is_told_how_close_it_runs(module):
    with pytest.warns(emu.ApproxNote) as got:
        f = module.get_function("approx32")
    text = str(got[0].message)
    assert "sin.approx" in text and "not bit-identical" in text and "ulp" in text
    x = np.linspace(0.5, 40, 32, dtype=np.float32)
    y = emu.zeros(32, np.float32)
    f((1,), (32,), (emu.asarray(x), y))
    assert np.allclose(emu.asnumpy(y), np.sin(x) + 1 / x, atol=1e-5)
