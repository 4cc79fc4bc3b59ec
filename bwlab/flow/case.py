"""`Flow`: the whole trip as one bwlab case — model(), run(), check(), show() — and `trace(tier)`, which
runs it in the tier asked for and returns the same `Trace` whichever that is.

    flow = Flow(seed=0)
    t = flow.trace("model")          # every hop by the stage models (no GPU)
    t = flow.trace("hybrid")         # sm_90: TMA load and store for real, tcgen05 in the model
    t = flow.trace("hardware")       # sm_100: cuda_src/full_flow_sm100.cu, every hop tapped
    t = flow.trace("emulated")       # no sm_100: the same kernel's sm_100a PTX in bwlab.emu, every hop tapped
    flow.check(t)                    # hop by hop against the model: the first differing byte, named
    Flow(kernel=mine).check()        # a learner's edit of full_flow_sm100.cu, run here and checked hop by hop

`check()` returns a `TraceCheck`, the flow's form of `bwlab.case.CheckResult` (one result per array).
"""
from __future__ import annotations

import numpy as np

from ..case import Case, compare
from .model import flow_model
from .problem import FlowProblem
from .trace import HOP_NAMES, Trace, TraceCheck

__all__ = ["Flow", "TIERS", "flow_tier"]

TIERS = ("model", "emulated", "hybrid", "hardware")
GPU_SOURCES = {
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
    device_stage = "umma"                  # the flow runs where its tcgen05 stage does
    teaching_file = "full_flow_sm100.cu"

    def __init__(self, seed: int = 0, kernel=None):
        """`kernel`: a `bwlab.lab.TeachingKernel` (an edit of full_flow_sm100.cu), or its file name for
        the learner's %%cuda version: run() launches it (hardware and emulated tiers) instead of the file."""
        self.problem = FlowProblem(seed)
        self._set_kernel(kernel)

    def __repr__(self):
        k = "" if self._kernel is None else f", kernel={self.kernel!r}"
        return f"Flow(seed={self.problem.seed}{k})"

    def identity(self):
        return ("flow", self.problem.seed, self.kernel_identity())

    def trace(self, tier: str = "model") -> Trace:
        """Run the trip in `tier` ('model', 'hybrid' or 'hardware'); raises UnsupportedGPU where this
        machine cannot."""
        if tier not in TIERS:
            raise ValueError(f"tier must be one of {TIERS}, got {tier!r}")
        if tier == "model":
            return flow_model(self.problem)
        from .runner import run_hardware, run_hybrid
        if tier == "hybrid":
            if self._kernel is not None:
                from ..device import UnsupportedGPU
                raise UnsupportedGPU("an edit of full_flow_sm100.cu runs on an sm_100 GPU or in the emulator "
                                     "(BWLAB_BACKEND=emulated); the hybrid tier runs the sm_90 harness")
            arrays = run_hybrid(self.problem)
        else:
            arrays = run_hardware(self.problem, kernel=self.kernel, emulated=tier == "emulated")
        return Trace(tier, self.problem, arrays, GPU_SOURCES[tier])

    def model(self) -> Trace:
        return self.trace("model")

    def runs_on(self) -> str | None:
        """The trip runs on a GPU with TMA in the hybrid tier too (TMA on the GPU, tcgen05 in the model:
        `run_hybrid`), as well as whole on an sm_100 GPU or in the PTX emulator."""
        from ..runtime import runs_on
        return runs_on(self.device_stage)

    def run(self, tier: str | None = None) -> Trace:
        """The trip on this GPU, in the best tier it offers (or `tier`)."""
        from ..device import UnsupportedGPU
        tier = tier or flow_tier()
        if tier == "model":
            raise UnsupportedGPU("no GPU with TMA here (or BWLAB_BACKEND=model): the flow runs in the model tier")
        return self.trace(tier)

    def check(self, got=None, source: str | None = None) -> TraceCheck:
        """Every hop of the model's trace against `got` (a Trace, D as an array, or a `Result` of
        either), or against `result()`: the trip run here, else its recording."""
        from ..case import Result
        if got is None:
            got = self.result()
        if isinstance(got, Result):
            if got.error is not None:
                return super().check(got, source)
            got, source = got.value, source or got.source
        expected = self.model()
        if isinstance(got, Trace):
            return expected.compare(got, source or "")
        res = compare(expected.result, np.asarray(got, np.float32), stage=self.stage, what="D in GMEM",
                      where=lambda i: f"D[{i[0]}][{i[1]}]", source=source or "given")
        return TraceCheck([res], ["tma_store"])

    def reference(self) -> np.ndarray:
        return self.problem.reference()

    def show(self, ax=None, hop: str = "tma_store", row: int = 0, trace: Trace | None = None, **kw):
        """The picture of where row `row` of D (and what it is made of) is after `hop`."""
        from .pictures import plot_hop
        return plot_hop(trace or self.model(), hop, row, ax=ax, **kw)
