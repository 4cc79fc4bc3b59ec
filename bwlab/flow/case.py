"""`Flow`: the whole trip as one bwlab case — model(), run(), check(), show() — and `trace(tier)`, which
runs it in the tier asked for and returns the same `Trace` whichever that is.

    flow = Flow(seed=0)
    t = flow.trace("model")          # every hop by the stage models (no GPU)
    t = flow.trace("hybrid")         # sm_90: TMA load and store for real, tcgen05 in the model
    t = flow.trace("hardware")       # sm_100: cuda_src/full_flow_sm100.cu, every hop tapped
    t = flow.trace("emulated")       # no sm_100: the same kernel's sm_100a PTX in bwlab.emu, every hop tapped
    flow.check(t)                    # hop by hop against the model: the first differing byte, named
"""
from __future__ import annotations

import numpy as np

from ..case import Case, compare
from .model import flow_model
from .problem import FlowProblem
from .trace import HOP_NAMES, Trace, TraceCheck

__all__ = ["Flow", "TIERS", "flow_tier"]

TIERS = ("model", "emulated", "hybrid", "hardware")
_GPU_SOURCES = {
    "hybrid": {"gmem": "GPU", "tma_load": "GPU", "mma": "model", "commit": "model", "tmem_ld": "model",
               "st_shared": "GPU", "fence": "GPU", "tma_store": "GPU"},
    "hardware": {h: "GPU" for h in HOP_NAMES},
    "emulated": {h: "emulator" for h in HOP_NAMES},
}


def flow_tier() -> str:
    """The best tier this machine runs the flow in: that of its tcgen05 stage (bwlab.device.tier('umma'))."""
    from .. import device
    return device.tier("umma")


class Flow(Case):
    """The 128 x 128 x 64 GEMM, GMEM -> SMEM -> TMEM -> registers -> SMEM -> GMEM, in one object."""

    stage = "flow"
    what = "trace of the whole trip"

    def __init__(self, seed: int = 0):
        self.problem = FlowProblem(seed)

    def __repr__(self):
        return f"Flow(seed={self.problem.seed})"

    def trace(self, tier: str = "model") -> Trace:
        """Run the trip in `tier` ('model', 'hybrid' or 'hardware'); raises UnsupportedGPU where this
        machine cannot."""
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")
        if tier == "model":
            return flow_model(self.problem)
        from . import runner
        if tier == "hybrid":
            arrays = runner.run_hybrid(self.problem)
        else:
            arrays = runner.run_hardware(self.problem, emulated=tier == "emulated")
        return Trace(tier, self.problem, arrays, _GPU_SOURCES[tier])

    def model(self) -> Trace:
        return self.trace("model")

    def run(self, tier: str | None = None) -> Trace:
        """The trip on this GPU, in the best tier it offers (or `tier`)."""
        from ..device import UnsupportedGPU
        tier = tier or flow_tier()
        if tier == "model":
            raise UnsupportedGPU("no GPU with TMA here (or BWLAB_BACKEND=model): the flow runs in the model tier")
        return self.trace(tier)

    def check(self, got=None, source: str | None = None) -> TraceCheck:
        """Every hop of the model's trace against `got` (a Trace, or D as an array), or against run()."""
        if got is None:
            got = self.run()
        expected = self.model()
        if isinstance(got, Trace):
            return expected.compare(got, source or "")
        res = compare(expected.result, np.asarray(got, np.float32), stage=self.stage, what="D in GMEM",
                      where=lambda i: f"D[{i[0]}][{i[1]}]", source=source or "given")
        return TraceCheck([res], ["tma_store"])

    def reference(self) -> np.ndarray:
        return self.problem.reference()

    def show(self, hop: str = "tma_store", row: int = 0, trace: Trace | None = None, **kw):
        """The picture of where row `row` of D (and what it is made of) is after `hop`."""
        from .pictures import plot_hop
        return plot_hop(trace or self.model(), hop, row, **kw)
