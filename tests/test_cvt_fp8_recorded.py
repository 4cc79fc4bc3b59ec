"""The packed low-precision conversions: bwlab against the H200's recording (every e4m3x2/e5m2x2 form Hopper
executes), the emulator's cvt against the same model, and the sm_100a-only forms against ml_dtypes (unmeasured:
no sm_100 GPU). The recording: docs/results/cvt_fp8_h200.txt, made by `python -m bwlab.checks.cvt_fp8`."""
from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from bwlab.checks import cvt_fp8
from bwlab.hw import floats as hf

RECORDING = Path(__file__).resolve().parents[1] / "docs" / "results" / "cvt_fp8_h200.txt"
ROW = re.compile(r"^\s+(cvt\.\S+ d, a(?:, b)?)\s+(\d+) elements; equal\s+(\d+); gpu ([0-9a-f]{16})$")


def _recorded():
    rows = {}
    for line in RECORDING.read_text().splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = (int(m.group(2)), int(m.group(3)), m.group(4))
    return rows


def test_recording_names_every_form_with_its_command():
    lines = RECORDING.read_text().splitlines()
    assert "GPU NVIDIA H" in lines[0] and lines[-1].startswith("command: ")
    assert set(_recorded()) == {cvt_fp8.ptx_form(*f) for f in cvt_fp8.forms()}


@pytest.mark.parametrize("form", list(cvt_fp8.forms()), ids=lambda f: cvt_fp8.kernel_name(*f))
def test_bwlab_equals_the_h200_bit_for_bit(form):
    """bwlab's bits, recomputed from the seeded inputs, have the digest of the GPU's output bytes."""
    n, equal, gpu = _recorded()[cvt_fp8.ptx_form(*form)]
    ins = cvt_fp8.inputs(form[0])
    got = cvt_fp8.model(*form, ins)
    assert got.size == n == equal
    assert cvt_fp8.digest(got) == gpu


def test_the_sample_reaches_every_class():
    """The f32 sample holds NaNs, infinities, zeros, f32 subnormals and values past both formats' range."""
    a, _ = cvt_fp8.f32_sample()
    v = a.view(np.float32)
    assert np.isnan(v).any() and np.isinf(v).any() and (v == 0).any()
    assert ((a & 0x7F800000) == 0).sum() > 100          # subnormals
    assert (np.abs(v) > 57344).sum() > 1000 and ((np.abs(v) > 0) & (np.abs(v) < 2.0 ** -16)).sum() > 1000


def test_the_emulator_executes_the_probe_as_the_model_says():
    """cuda_src/cvt_fp8_probe.cu (sm_90a PTX) in the emulator: each form on 512 inputs (specials included)
    equals `cvt_fp8.model`, the function the recorded digests were compared with."""
    from bwlab import emu
    from bwlab.runtime import EMULATED
    mod = EMULATED.load("cvt_fp8_probe.cu", arch="sm_90a")
    rng = np.random.default_rng(3)
    for kind, t, relu in cvt_fp8.forms():
        full = cvt_fp8.inputs(kind)
        idx = np.concatenate([np.arange(full[0].size - 64 * 14, full[0].size - 64 * 14 + 14),   # the specials
                              rng.integers(0, full[0].size, 498)]) if kind == "f32" else \
            rng.integers(0, full[0].size, 512)
        ins = tuple(x[idx] for x in full)
        out = emu.zeros(idx.size, np.uint32 if kind == "to_f16x2" else np.uint16)
        fn = mod.get_function(cvt_fp8.kernel_name(kind, t, relu))
        fn((idx.size // 128,), (128,), tuple(emu.asarray(x) for x in ins) + (out, np.uint32(idx.size)))
        assert np.array_equal(out.get(), cvt_fp8.model(kind, t, relu, ins)), (kind, t, relu)


# ------------------------------------------------------------------------------------------------
# the sm_100a-only forms (not executed by Hopper): against ml_dtypes
# ------------------------------------------------------------------------------------------------

ML = {"e2m1": ml_dtypes.float4_e2m1fn, "e2m3": ml_dtypes.float6_e2m3fn, "e3m2": ml_dtypes.float6_e3m2fn}


def _wide_f32():
    a, b = cvt_fp8.f32_sample()
    return np.concatenate([a, b[:1000]])


@pytest.mark.parametrize("t", list(ML))
@pytest.mark.parametrize("relu", [False, True])
def test_sm100_forms_equal_ml_dtypes(t, relu):
    """cvt.rn.satfinite{.relu}.{e2m1x2,e2m3x2,e3m2x2}.f32 (sm_100a; unmeasured): round to nearest even,
    saturate to the largest finite value (these formats have no infinity), as ml_dtypes converts.
    NaN inputs are left out (the formats have no NaN; ml_dtypes and PTX need not agree there)."""
    bits = _wide_f32()
    v = bits.view(np.float32)
    keep = ~np.isnan(v)
    if relu:
        keep &= ~(v == 0)        # the sign of a zero through .relu is the PTX rule, not ml_dtypes'
    bits, v = bits[keep], v[keep]
    got = hf.cvt_x2(bits, bits, "f32", t, "rn", relu=relu, satfinite=True).astype(np.uint32)
    width = 4 if t == "e2m1" else 8
    lo = got & np.uint32((1 << width) - 1)
    hi = got >> np.uint32(width)
    x = np.maximum(v, np.float32(0)) if relu else v
    with np.errstate(over="ignore"):
        want = np.clip(x, -np.float32(ml_dtypes.finfo(ML[t]).max), np.float32(ml_dtypes.finfo(ML[t]).max)) \
            .astype(ML[t]).view(np.uint8).astype(np.uint32)
    assert np.array_equal(lo, want) and np.array_equal(hi, want)


@pytest.mark.parametrize("rnd", ["rz", "rp"])
def test_sm100_ue8m0_form_equals_its_power_of_two(rnd):
    """cvt.{rz,rp}.satfinite.ue8m0x2.f32 (sm_100a; unmeasured) on positive finite values in ue8m0's range:
    the power of two at or below (rz) / at or above (rp) the value, decoded by ml_dtypes' float8_e8m0fnu."""
    bits = _wide_f32()
    with np.errstate(invalid="ignore"):
        v = bits.view(np.float32).astype(np.float64)
    keep = np.isfinite(v) & (v >= 2.0 ** -127) & (v <= 2.0 ** 127)
    bits, v = bits[keep], v[keep]
    got = hf.cvt_x2(bits, bits, "f32", "ue8m0", rnd, satfinite=True).astype(np.uint32)
    m, e = np.frexp(v)                    # v = m * 2^e, m in [0.5, 1)
    p = e - 1 + ((m > 0.5) if rnd == "rp" else 0)
    want = np.ldexp(1.0, p)
    decoded = (got & 0xFF).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)
    assert np.array_equal(decoded, want)
    assert np.array_equal(got >> 8, got & 0xFF)
