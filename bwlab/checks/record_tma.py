"""The recordings notebook 01 (the TMA load) shows on machines without a GPU with TMA.

    python -m bwlab.checks.record tma --out DIR

* `tma_teach`               — the teaching kernel (cuda_src/teach_tma.cu) on two 2D boxes: unswizzled
                              and 128B-swizzled; the SMEM bytes it copied out.
* `tma_teach_bad_expect_tx` — the teaching kernel with expect_tx 16 bytes too high: the
                              MbarrierTimeout's message, the bytes it expected, how long it waited.
* `tma_load_modes`          — the harness kernel (tma_load_dump) on a bf16 box under every swizzle,
                              full and narrow rows, at two positions; plus how many of 200 random
                              loads were bit-exact.
* `tma_load_oob`            — boxes hanging off the tensor: zero fill and NaN fill.

`record(out_dir, meta)` makes them on this GPU; `replay(rec)` recomputes each with the model now and
compares (tests/test_recordings.py). `provisional(out_dir)` writes model-made stand-ins for a machine
that has never recorded them; they say so in their device field.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..case import CheckResult
from ..hw.mbarrier import Mbarrier
from ..results import save_recording
from ..tma import TensorMap, TmaLoad, tma_load_model

__all__ = ["record", "replay", "provisional", "GMEM_SEED", "TEACH_CASES", "MODE_CASES", "OOB_CASES",
           "BAD_EXPECT_TX", "bad_expect_tx_kernel", "tma_gmem", "oob_gmem", "mbarrier_after"]

GMEM_SEED = 0
# (key, tensor-map arguments, coords): the teaching kernel's boxes, in notebook 01's 80 x 48 bf16 tensor.
TEACH_CASES = (("smem_plain", dict(dtype="bfloat16", global_shape=(80, 48), box_shape=(32, 16)), (32, 16)),
               ("smem_swizzled", dict(dtype="bfloat16", global_shape=(80, 48), box_shape=(64, 16),
                                      swizzle="128B"), (0, 16)))
# (swizzle, box row in elements) x (coords, SMEM offset): section 7 of notebook 01.
MODE_CASES = tuple((mode, inner, coords, offset)
                   for mode, inner in (("none", 64), ("32B", 16), ("64B", 32), ("128B", 64), ("64B", 8), ("128B", 24))
                   for coords, offset in (((32, 16), 0), ((64, 40), 384)))
# (key, tensor-map arguments, coords): section 6, a float32 tensor 20 x 12 holding 0, 1, 2, ...
OOB_CASES = (("smem_zero", dict(dtype="float32", global_shape=(20, 12), box_shape=(8, 6)), (16, 9)),
             ("smem_nan", dict(dtype="float32", global_shape=(20, 12), box_shape=(8, 6), oob_fill="nan"), (-4, -2)))
BAD_EXPECT_TX = 16  # the deliberate mistake: announce this many bytes more than the box holds
RANDOM_LOADS, RANDOM_SEED = 200, 1


def tma_gmem() -> np.ndarray:
    """Notebook 01's tensor: 48 rows x 80 bf16 bit patterns."""
    return np.random.default_rng(GMEM_SEED).integers(0, 2**16, size=(48, 80), dtype=np.uint16)


def oob_gmem() -> np.ndarray:
    return np.arange(12 * 20, dtype=np.float32).reshape(12, 20)


def bad_expect_tx_kernel():
    """teach_tma.cu with expect_tx BAD_EXPECT_TX bytes too high (the edit notebook 01 makes)."""
    from ..lab import TeachingKernel
    return TeachingKernel("teach_tma.cu").replace("const u32 tx_bytes = box_bytes;",
                                                  f"const u32 tx_bytes = box_bytes + {BAD_EXPECT_TX};")


def mbarrier_after(box_bytes: int, extra_tx: int) -> Mbarrier:
    """The model's mbarrier once thread 0 announced box_bytes + extra_tx and the whole box landed."""
    bar = Mbarrier(1)
    bar.arrive_expect_tx(box_bytes + extra_tx)
    bar.complete_tx(box_bytes)
    return bar


def _mode_tmap(mode, inner):
    return TensorMap("bfloat16", (80, 48), (inner, 16), swizzle=mode)


def _save(out_dir, name, arrays, meta, params):
    return save_recording(out_dir, name, arrays, **{**meta, "stage": "tma", "params": params})


def _files(out_dir, meta, teach, bad, modes, oob, random_ok):
    params_teach = {"cases": [[k, a, list(c)] for k, a, c in TEACH_CASES], "gmem_seed": GMEM_SEED}
    return [
        _save(out_dir, "tma_teach", {"gmem": tma_gmem(), **teach}, meta, params_teach),
        _save(out_dir, "tma_teach_bad_expect_tx", bad, meta,
              {**params_teach["cases"][0][1], "coords": list(TEACH_CASES[0][2]), "extra_tx": BAD_EXPECT_TX}),
        _save(out_dir, "tma_load_modes", {"gmem": tma_gmem(), **modes,
                                          "random_ok": np.int32(random_ok), "random_total": np.int32(RANDOM_LOADS)},
              meta, {"cases": [[m, i, list(c), o] for m, i, c, o in MODE_CASES],
                     "random": {"n": RANDOM_LOADS, "seed": RANDOM_SEED}}),
        _save(out_dir, "tma_load_oob", {"gmem": oob_gmem(), **oob}, meta,
              {"cases": [[k, a, list(c)] for k, a, c in OOB_CASES]}),
    ]


def record(out_dir, meta) -> list[Path]:
    """Run notebook 01's GPU cells on this GPU and save what they produced."""
    from ..checks.tma import random_cases, validate_cases
    from ..runtime import MbarrierTimeout
    from ..tma import run_teach, run_tma_load
    g = tma_gmem()
    teach = {k: run_teach(g, TensorMap(**a), c) for k, a, c in TEACH_CASES}
    key, args, coords = TEACH_CASES[0]
    t0 = time.perf_counter()
    try:
        run_teach(g, TensorMap(**args), coords, kernel=bad_expect_tx_kernel())
        bad = {"timed_out": np.bool_(False), "message": np.str_("the launch completed"), "barrier": np.str_(""),
               "expected_tx": np.int64(-1), "phase_parity": np.int32(-1), "waited_ms": np.float64(0)}
    except MbarrierTimeout as e:
        bad = {"timed_out": np.bool_(True), "message": np.str_(str(e)), "barrier": np.str_(e.barrier),
               "expected_tx": np.int64(e.expected_tx), "phase_parity": np.int32(e.phase_parity),
               "waited_ms": np.float64(e.waited_ns / 1e6)}
    bad["call_ms"] = np.float64((time.perf_counter() - t0) * 1e3)
    bad["smem_plain_after"] = run_teach(g, TensorMap(**args), coords)  # the GPU is fine afterwards
    modes = {f"smem_{i}": run_tma_load(g, _mode_tmap(m, inner), c, o)
             for i, (m, inner, c, o) in enumerate(MODE_CASES)}
    oob = {k: run_tma_load(oob_gmem(), TensorMap(**a), c) for k, a, c in OOB_CASES}
    try:  # last: a fault here would poison the CUDA context
        random_ok = RANDOM_LOADS - validate_cases(random_cases(RANDOM_LOADS, seed=RANDOM_SEED), say=lambda s: None)
    except Exception:  # noqa: BLE001 - recorded as -1, the notebook says it did not run
        random_ok = -1
    return _files(out_dir, meta, teach, bad, modes, oob, random_ok)


def provisional(out_dir, command: str = "python -c 'from bwlab.checks.record_tma import provisional; "
                                       "provisional(\"docs/results/recordings\")'") -> list[Path]:
    """Model-made stand-ins with the recordings' names and shapes (device says so)."""
    meta = {"device": "MODEL (replace by the H100 recording)", "date": "provisional", "command": command}
    g = tma_gmem()
    teach = {k: tma_load_model(g, TensorMap(**a), c) for k, a, c in TEACH_CASES}
    key, args, coords = TEACH_CASES[0]
    t = TensorMap(**args)
    bar = mbarrier_after(t.box_bytes, BAD_EXPECT_TX)
    bad = {"timed_out": np.bool_(bar.phase == 0), "barrier": np.str_("smem_full"),
           "message": np.str_(f"teach_tma_load: mbarrier 'smem_full' did not complete phase with parity 0 "
                              f"(expected {t.box_bytes + BAD_EXPECT_TX} transaction bytes) — provisional, "
                              "written by the model"),
           "expected_tx": np.int64(t.box_bytes + BAD_EXPECT_TX), "phase_parity": np.int32(0),
           "waited_ms": np.float64(200.0), "call_ms": np.float64(200.0),
           "smem_plain_after": teach[key]}
    modes = {f"smem_{i}": tma_load_model(g, _mode_tmap(m, inner), c, o) for i, (m, inner, c, o) in enumerate(MODE_CASES)}
    oob = {k: tma_load_model(oob_gmem(), TensorMap(**a), c) for k, a, c in OOB_CASES}
    return _files(out_dir, meta, teach, bad, modes, oob, RANDOM_LOADS)


def _all(results, what, source="") -> CheckResult:
    bad = [r for r in results if not r.ok]
    if bad:
        return bad[0]
    return CheckResult("tma", what, sum(r.compared for r in results), 0, unit="byte", source=source)


def replay(rec) -> CheckResult:
    """Recompute the recording with the model now and compare with what the GPU produced."""
    p = rec.params
    if rec.name == "tma_teach_bad_expect_tx":
        t = TensorMap(dtype=p["dtype"], global_shape=tuple(p["global_shape"]), box_shape=tuple(p["box_shape"]))
        bar = mbarrier_after(t.box_bytes, p["extra_tx"])
        expected = np.array([bar.phase == 0, t.box_bytes + p["extra_tx"]], np.int64)
        got = np.array([bool(rec["timed_out"]), int(rec["expected_tx"])], np.int64)
        after = TmaLoad(rec["gmem"] if "gmem" in rec.arrays else tma_gmem(), t, p["coords"]).check(
            rec["smem_plain_after"], source=rec.label)
        from ..case import compare
        r = compare(expected, got, stage="tma", what="bad expect_tx: (phase 0 never completes, tx expected)",
                    source=rec.label)
        return r if not r.ok else after
    g = rec["gmem"]
    out = []
    for c in p["cases"]:
        if rec.name == "tma_load_modes":
            mode, inner, coords, offset = c
            case = TmaLoad(g, _mode_tmap(mode, inner), coords, smem_address=offset)
            key = f"smem_{len(out)}"
        else:
            key, args, coords = c
            args = {k: tuple(v) if isinstance(v, list) else v for k, v in args.items()}
            case = TmaLoad(g, TensorMap(**args), coords)
        out.append(case.check(rec[key], source=rec.label))
    return _all(out, f"{len(out)} recorded loads ({rec.name})", rec.label)
