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
from ..results import recorded_cases, save_recording
from ..tma import TensorMap, TmaLoad
from ..tma.recorded import (BAD_EXPECT_TX, GMEM_SEED, MODE_CASES, OOB_CASES, TEACH_CASES, bad_expect_tx_kernel,
                            mode_case, mode_tmap, oob_case, oob_gmem, teach_case, tma_gmem)

__all__ = ["record", "replay", "provisional", "GMEM_SEED", "TEACH_CASES", "MODE_CASES", "OOB_CASES",
           "BAD_EXPECT_TX", "bad_expect_tx_kernel", "tma_gmem", "oob_gmem", "mbarrier_after"]

RANDOM_LOADS, RANDOM_SEED = 200, 1
_mode_tmap = mode_tmap


def mbarrier_after(box_bytes: int, extra_tx: int) -> Mbarrier:
    """The model's mbarrier once thread 0 announced box_bytes + extra_tx and the whole box landed."""
    bar = Mbarrier(1)
    bar.arrive_expect_tx(box_bytes + extra_tx)
    bar.complete_tx(box_bytes)
    return bar


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
    teach = {k: teach_case(i).run() for i, (k, _, _) in enumerate(TEACH_CASES)}
    t0 = time.perf_counter()
    try:
        teach_case(0, bad_expect_tx_kernel()).run()
        bad = {"timed_out": np.bool_(False), "message": np.str_("the launch completed"), "barrier": np.str_(""),
               "expected_tx": np.int64(-1), "phase_parity": np.int32(-1), "waited_ms": np.float64(0)}
    except MbarrierTimeout as e:
        bad = {"timed_out": np.bool_(True), "message": np.str_(str(e)), "barrier": np.str_(e.barrier),
               "expected_tx": np.int64(e.expected_tx), "phase_parity": np.int32(e.phase_parity),
               "waited_ms": np.float64(e.waited_ns / 1e6)}
    bad["call_ms"] = np.float64((time.perf_counter() - t0) * 1e3)
    bad["smem_plain_after"] = teach_case(0).run()  # the GPU is fine afterwards
    modes = {f"smem_{i}": mode_case(i).run() for i in range(len(MODE_CASES))}
    oob = {k: oob_case(i).run() for i, (k, _, _) in enumerate(OOB_CASES)}
    try:  # last: a fault here would poison the CUDA context
        random_ok = RANDOM_LOADS - validate_cases(random_cases(RANDOM_LOADS, seed=RANDOM_SEED), say=lambda s: None)
    except Exception:  # noqa: BLE001 - recorded as -1, the notebook says it did not run
        random_ok = -1
    return _files(out_dir, meta, teach, bad, modes, oob, random_ok)


def provisional(out_dir, command: str = "python -c 'from bwlab.checks.record_tma import provisional; "
                                       "provisional(\"docs/results/recordings\")'") -> list[Path]:
    """Model-made stand-ins with the recordings' names and shapes (device says so)."""
    meta = {"device": "MODEL (replace by the H100 recording)", "date": "provisional", "command": command}
    teach = {k: teach_case(i).model() for i, (k, _, _) in enumerate(TEACH_CASES)}
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
    modes = {f"smem_{i}": mode_case(i).model() for i in range(len(MODE_CASES))}
    oob = {k: oob_case(i).model() for i, (k, _, _) in enumerate(OOB_CASES)}
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
    out = [r.case().check(rec[r.key], source=rec.label) for r in recorded_cases("tma", rec.name)
           if rec[r.key].dtype.kind != "U"]
    return _all(out, f"{len(out)} recorded loads ({rec.name})", rec.label)


def random_loads(n: int = RANDOM_LOADS, seed: int = RANDOM_SEED):
    """`Result(count, source)`: how many of `n` random loads (`bwlab.checks.tma.random_cases`) came back
    bit-exact — run now on a GPU with TMA, else the count the H100 recorded with tma_load_modes (the
    emulator would take minutes for them)."""
    from .. import device
    from ..case import NoResult, Result
    from ..results import load_recording
    from ..runtime import runs_on
    if device.tier("tma") == "hardware":
        from .tma import random_cases, validate_cases
        return Result(n - validate_cases(random_cases(n, seed=seed), say=lambda s: None), runs_on("tma"), True)
    rec = load_recording("tma_load_modes")
    if rec.params.get("random") != {"n": n, "seed": seed}:
        raise NoResult(f"no recording of {n} random loads with seed {seed} (recorded: {rec.params.get('random')})")
    return Result(int(rec["random_ok"]), rec.label, False, rec)
