"""Which recording holds notebook 06's trip: `flow_gpu`, the trace of `Flow(SEED)` in the best tier the
recording GPU offered (hybrid on an H100), with the native Hopper kernel's D and its timestamps.
`Flow(...).result()` / `.results()` find it here; `bwlab/checks/record_flow.py` records it.
"""
from __future__ import annotations

from ..results import Recorded
from .case import Flow
from .trace import Trace

__all__ = ["RECORDED", "NAME", "SEED", "recorded_trace"]

NAME = "flow_gpu"
SEED = 0


def recorded_trace(rec) -> Trace:
    """The Trace a recording of the flow holds."""
    flow = Flow(int(rec.params.get("seed", SEED)))
    return Trace.from_arrays(rec.arrays, rec.params.get("tier", "hybrid"), flow.problem, rec.params.get("sources"))


RECORDED = (Recorded(NAME, "trace", lambda: Flow(SEED), value=recorded_trace),)
