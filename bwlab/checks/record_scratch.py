"""The recording of notebook 00a (GEMM from scratch): every step's C and its speed on a GPU.

* `scratch_steps` — C (f32) of each step on the notebook's problem (`c_<step>`, the case
  `ScratchGemm(step, *EMU_SHAPE)` of bwlab/scratch/recorded.py), and every step timed at a large shape
  beside cupy.matmul (cuBLAS) of the same f16 operands (`steps`, `ms`, `shape`, `err`: each step's worst
  |C - C_f32| / (|A||B|) at that shape).

    python -m bwlab.checks.record scratch --out DIR      (on a GPU that runs sm_90a code)

`replay(rec)` compares the model computed now with each recorded C.
"""
from __future__ import annotations

import numpy as np

from ..results import save_recording
from ..scratch import EMU_SHAPE, STEPS, ScratchGemm

__all__ = ["record", "replay", "BENCH_SHAPE"]

BENCH_SHAPE = (4096, 4096, 4096)


def record(out_dir, meta, shape=BENCH_SHAPE, say=print) -> list:
    """Run every step on this GPU: C on the notebook's problem (checked against the model), then the
    timings at `shape` (median of 5 launches after 2 warm-ups, CUDA events, cuBLAS in the same run)."""
    from ..scratch import runner
    meta = dict(meta, stage="scratch")
    arrays, ok = {}, []
    say(f"each step on {EMU_SHAPE[0]} x {EMU_SHAPE[1]} x {EMU_SHAPE[2]} (seed 0), compared with the model:")
    for s in STEPS:
        case = ScratchGemm(s, *EMU_SHAPE)
        c = case.run()
        arrays[f"c_{s.name}"] = c
        r = case.check(c, source=meta.get("device", "this GPU"))
        ok.append(r.ok)
        say(f"  {r}")
    M, N, K = shape
    res = runner.bench(M, N, K, warmup=2, repeat=5)
    names = [s.name for s in STEPS] + ["cublas"]
    ms = np.array([res["ms"][n] for n in names])
    say(f"\n{M} x {N} x {K}, f16 in, f32 accumulate (cuBLAS: cupy.matmul, f16 out); median of 5 launches "
        "after 2 warm-up, CUDA events:")
    for n, t in zip(names, ms):
        err = res["err"].get(n)
        e = f"  max |C - C_f32| / (|A||B|) = {err:.2e}" if err is not None else ""
        say(f"  {n:<20s} {t:10.3f} ms {2 * M * N * K / t / 1e9:9.2f} TFLOP/s  {t / ms[-1]:8.1f} x cuBLAS's time{e}")
    arrays.update(steps=np.array(names), ms=ms, shape=np.array([M, N, K]),
                  err=np.array([res["err"][n] for n in names[:-1]]), check_ok=np.array(ok))
    p = save_recording(out_dir, "scratch_steps", arrays,
                       params={"emu_shape": list(EMU_SHAPE), "bench_shape": [M, N, K], "warmup": 2, "repeat": 5},
                       **meta)
    return [p]


def replay(rec):
    """The model now against each recorded C: the first disagreement, else the last check."""
    last = None
    for s in STEPS:
        case = ScratchGemm(s, *rec.params["emu_shape"])
        last = case.check(rec[f"c_{s.name}"], source=rec.label)
        if not last.ok:
            return last
    return last
