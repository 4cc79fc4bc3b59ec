"""Recording of notebook 06's GPU cells: the flow's trace in the best tier this GPU offers (hybrid on
sm_90, hardware on sm_100), and on a Hopper the native TMA + wgmma kernel's D and its stamps.

`record(out_dir, meta)` makes `flow_gpu.npz`; `replay(rec)` compares it with the model now;
`provisional(out_dir)` writes a stand-in made by the model (device 'MODEL (replace by the H100
recording)', date 'provisional', no measured stamps) until a GPU run replaces it.
"""
from __future__ import annotations

import numpy as np

from ..flow import Flow, Trace, TraceCheck, flow_tier
from ..flow.recorded import NAME, SEED, recorded_trace
from ..flow.runner import N_EVENTS
from ..results import save_recording

__all__ = ["record", "replay", "provisional", "NAME"]


def _save(out_dir, trace: Trace, native_d, stamps, meta: dict):
    arrays = trace.to_arrays()
    arrays["native_d"] = native_d
    arrays["stamps"] = stamps
    meta = dict(meta, stage="flow", params={"seed": SEED, "tier": trace.tier, "sources": trace.sources})
    return save_recording(out_dir, NAME, arrays, **meta)


def record(out_dir, meta: dict) -> list:
    from .. import device
    from ..flow import runner
    flow = Flow(SEED)
    trace = flow.trace(flow_tier())
    info = device.gpu_info()
    if device.tier("tma") == "emulated" or (info is not None and info.has_wgmma):
        native_d, stamps = runner.run_hopper(flow.problem)
    else:
        native_d = np.zeros(flow.problem.epilogue.buffer_shape, np.float32)
        stamps = np.full((1, 4, N_EVENTS, 2), np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64)
    return [_save(out_dir, trace, native_d, stamps, meta)]


def provisional(out_dir) -> list:
    flow = Flow(SEED)
    t = flow.model()
    trace = Trace("hybrid", t.problem, t.arrays, {h: "model" for h in t.sources})
    native = np.zeros(flow.problem.epilogue.buffer_shape, np.float32)
    native[:flow.problem.M] = flow.problem.reference()
    stamps = np.full((1, 4, N_EVENTS, 2), np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64)
    meta = {"device": "MODEL (replace by the H100 recording)", "date": "provisional",
            "command": "python -c 'from bwlab.checks.record_flow import provisional; provisional(DIR)' "
                       "(made by the model; `python -m bwlab.checks.flow --out DIR` replaces it on a GPU)"}
    return [_save(out_dir, trace, native, stamps, meta)]


def replay(rec) -> TraceCheck:
    """The recorded trace against the model's, hop by hop; the native D (where recorded) against NumPy."""
    from ..case import compare
    flow = Flow(int(rec.params.get("seed", SEED)))
    check = flow.model().compare(recorded_trace(rec), rec.label)
    native = np.asarray(rec["native_d"])
    if native.any():
        check.results.append(compare(flow.reference(), native[:flow.problem.M], stage="flow",
                                     what="Hopper TMA + wgmma kernel: D against NumPy",
                                     where=lambda i: f"D[{i[0]}][{i[1]}]", source=rec.label))
    return check
