"""The from-scratch cases a GPU recorded (`bwlab.results`): each step on the emulator's problem."""
from __future__ import annotations

from ..results import Recorded
from .case import ScratchGemm
from .steps import EMU_SHAPE, STEPS

__all__ = ["RECORDED", "RECORDING", "measured"]

RECORDING = "scratch_steps"

RECORDED = tuple(Recorded(RECORDING, f"c_{s.name}", (lambda s=s: ScratchGemm(s, *EMU_SHAPE))) for s in STEPS)


def measured() -> dict:
    """The GPU timings of the recording: {'steps': names (the five steps, then 'cublas'), 'ms', 'tflops',
    'shape' (M, N, K), 'label' (where and when)}. Only a GPU measures speed: the emulator's time is
    virtual."""
    import numpy as np
    from ..results import load_recording
    rec = load_recording("scratch_steps")
    M, N, K = (int(x) for x in rec["shape"])
    ms = np.asarray(rec["ms"], float)
    return {"steps": [str(s) for s in rec["steps"]], "ms": ms, "tflops": 2 * M * N * K / (ms * 1e-3) / 1e12,
            "shape": (M, N, K), "label": rec.label}
