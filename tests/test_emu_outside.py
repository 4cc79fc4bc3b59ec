"""The outside corpus (tests/outside/*.cu: 73 ordinary kernels written without reading the project's own corpus)
against its H200 recording: the emulator runs the PTX the GPU's cubin was built from, with the inputs
tests/outside/run.py generates, and every output must equal the GPU's byte for byte (printf: the same lines per
warp; order-independent multisets sorted). Kernels whose results go through approximate instructions
(MUFU: expf, rsqrtf, __sinf, powf's reciprocal, ...) are held to the distance from the H200 the emulator
showed when this recording was made; `KNOWN` lists what the emulator does not yet reproduce.
wmma_gemm (nvcuda::wmma, f32 and f16 accumulators) checks bwlab/emu/isa/wmma.py.

Re-record on a GPU: python tests/outside/run.py build B && python tests/outside/run.py gpu B G && python tests/outside/run.py
pack G B tests/data/emu_outside/h200.npz HEADER (docs/results/emu_outside_h200.txt).
"""
from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

from bwlab import emu

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "emu_outside" / "h200.npz"

_spec = importlib.util.spec_from_file_location("outside_run", ROOT / "tests" / "outside" / "run.py")
run = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(run)

KERNELS = {k["name"]: k for k in run.kernels() if k["src"] in run.FIRST}   # the second set: test_emu_outside2.py

# kernel -> (ulp, absolute, relative): an approximate instruction feeds the result; each element within
# max(ulp * ulp(GPU value), absolute, relative * |GPU value|) of the GPU's, NaN where the GPU has NaN
APPROX = {
    "softmax_f32": (2, 0.0, 0.0),          # expf: ex2.approx.ftz.f32
    "math_special_f": (2, 0.0, 0.0),  # tgammaf/erfcf/normcdff through expf, j0f through rsqrt, cbrtf through rcp
    "math_trig_f": (1, 0.0, 0.0),          # tanf, atanf: rcp.approx.ftz.f32
    "math_exp_log_f": (2, 0.0, 0.0),       # expf, exp2f, asinhf, tanhf, coshf
    "math_norms_f": (1, 0.0, 0.0),         # rnorm3df, rhypotf, rcbrtf, rsqrtf
    # __sinf/__cosf/__logf: 2^-21.4 absolute near their zeros; __powf 44 ulp; __tanf = __sinf/__cosf, whose
    # absolute errors a small cosine magnifies near the pole (-15.08: 4.8e-6 relative)
    "fast_intrinsics": (44, 3.6e-7, 1e-5),
    "fm_expr": (2, 3.6e-7, 0.0),           # --use_fast_math: sin/log/div/sqrt .approx.ftz
}

# kernel -> why the emulator does not reproduce it yet (the test expects the difference: strict xfail)
KNOWN: dict[str, str] = {}


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    if not DATA.is_file():
        pytest.skip("tests/data/emu_outside/h200.npz is absent")
    d = tmp_path_factory.mktemp("outside_ptx")
    with np.load(DATA) as z:
        rec = {k: z[k] for k in z.files}
    for src in run.FIRST:
        (d / f"{src}.ptx").write_bytes(rec[f"ptx/{src}"].tobytes())
    return d, rec


def _outputs(rec, name):
    keys = sorted((k for k in rec if k.startswith(name + "/out")), key=lambda k: int(k.rsplit("out", 1)[1]))
    return [rec[k] for k in keys], rec[f"{name}/printf"].tobytes().decode()


def _emulate(d, kd):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = run.run_one(kd, "emu", d, {})
    outs = [got[f"out{j}"] for j in range(sum(1 for k in got if k.startswith("out")))]
    return outs, str(got["printf"])


def _difference(kd, want, have, printf_want, printf_have):
    if kd["cmp"] == "printf":
        return None if run.per_warp(printf_want) == run.per_warp(printf_have) else \
            f"printf lines differ:\nGPU {sorted(printf_want.splitlines())[:3]}\nemu {sorted(printf_have.splitlines())[:3]}"
    for j, (r, h) in enumerate(zip(want, have)):
        if j in kd["sorted_outs"]:
            r, h = np.sort(r), np.sort(h)
        if r.tobytes() == h.tobytes():
            continue
        if kd["name"] in APPROX and r.dtype.kind == "f":
            ulp, absolute, relative = APPROX[kd["name"]]
            rr, hh = r.astype(np.float64), h.astype(np.float64)
            nan_ok = np.isnan(rr) == np.isnan(hh)
            u = run.ulps(r, h)
            with np.errstate(invalid="ignore"):
                close = ((u <= ulp) | (np.abs(rr - hh) <= absolute) | (np.abs(rr - hh) <= relative * np.abs(rr))
                     | (np.isnan(rr) & np.isnan(hh)))
            bad = np.nonzero(~(close & nan_ok))[0]
            if len(bad) == 0:
                continue
            i = int(bad[0])
            return f"out{j}[{i}]: GPU {r[i]!r} emu {h[i]!r}, beyond {ulp} ulp / {absolute} ({len(bad)} elements)"
        bad = np.nonzero((r.view(np.uint8).reshape(len(r), -1) != h.view(np.uint8).reshape(len(h), -1)).any(1))[0]
        i = int(bad[0])
        return (f"out{j}[{i}]: GPU 0x{r[i:i + 1].tobytes()[::-1].hex()} emu 0x{h[i:i + 1].tobytes()[::-1].hex()} "
                f"({len(bad)} of {len(r)} differ)")
    return None


def _params():
    out = []
    for name in KERNELS:
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN[name])] if name in KNOWN else []
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.mark.parametrize("name", _params())
def test_outside_kernel_matches_h200(recording, name):
    d, rec = recording
    kd = KERNELS[name]
    want, printf_want = _outputs(rec, name)
    have, printf_have = _emulate(d, kd)
    diff = _difference(kd, want, have, printf_want, printf_have)
    assert diff is None, f"{name}: {diff}"


def test_wmma_shape_not_modelled_is_named(recording):
    """wmma_gemm's PTX with its m16n16k16 turned into m32n8k16 (a shape the emulator does not model): the
    refusal names the shape and the CUDA construct."""
    d, _ = recording
    ptx = run.only_entry((d / "warp.ptx").read_text(), "wmma_gemm").replace("m16n16k16", "m32n8k16")
    with pytest.raises(emu.UnsupportedInstruction, match=r"m32n8k16.*nvcuda::wmma"):
        emu.RawModule(ptx=ptx, name="warp.cu").get_function("wmma_gemm")


def test_comparison_catches_a_one_bit_change(recording):
    d, rec = recording
    kd = KERNELS["int128_arith"]
    want, _ = _outputs(rec, "int128_arith")
    bent = [w.copy() for w in want]
    bent[0][10] ^= np.uint64(1)
    assert _difference(kd, want, bent, "", "") is not None
    assert _difference(kd, want, [w.copy() for w in want], "", "") is None


def test_recording_says_where_it_came_from(recording):
    _, rec = recording
    head = rec["header"].tobytes().decode()
    assert "H200" in head and "command:" in head


def test_approx_note_names_only_what_the_kernel_can_reach(recording):
    """fma_modes is exact (fmaf, __fmaf_r*): the module's other kernels' helpers hold rcp.approx.ftz.f64,
    which fma_modes never calls, so loading it gives no ApproxNote; math_norms_f (rsqrtf) gets one."""
    d, _ = recording
    for name, expect in (("fma_modes", False), ("math_norms_f", True)):
        kd = KERNELS[name]
        ptx = (d / f"{kd['src']}.ptx").read_text()
        with warnings.catch_warnings(record=True) as ws:
            warnings.simplefilter("always")
            emu.RawModule(ptx=run.only_entry(ptx, name), name="mathlib.cu").get_function(name)
        assert any(isinstance(w.message, emu.ApproxNote) for w in ws) == expect, name
