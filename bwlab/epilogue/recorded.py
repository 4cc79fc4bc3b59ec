"""Which recording holds which of notebook 05's cases (the cases themselves are defined once, in
`demos.py`): `Epilogue(...).result()` / `.results()` and `TmaStore(...).results()` find them here, and
`bwlab/checks/record_epilogue.py` records exactly these.

* `epilogue_edge_store`   — one TMA store of an edge box (`edge_store_case`);
* `epilogue_gpu_vs_model` — three whole epilogues of the harness kernel (`epilogue_case(i)`);
* `teach_store_result`    — the teaching kernel on a 150 x 70 D (`teach_case()`);
* `teach_store_noswizzle` — the teaching kernel edited to write SMEM unswizzled (`noswizzle_kernel()`);
* `epilogue_bank_cycles`  — st.shared.v4 cycles per bank pattern (`bank_cycles()`).
"""
from __future__ import annotations

import numpy as np

from ..results import Recorded
from .demos import GPU_VS_MODEL, edge_store_case, epilogue_case, teach_case
from .runner import TEACH_EDITS

__all__ = ["RECORDED", "TEACH_EDITS", "noswizzle_kernel", "nofence_kernel", "bank_cycles"]


def noswizzle_kernel():
    """teach_store.cu writing its tile unswizzled (the tensor map still 128B)."""
    from ..lab import TeachingKernel
    return TeachingKernel("teach_store.cu").replace(*TEACH_EDITS["no swizzle"])


def nofence_kernel():
    """teach_store.cu without its proxy fence."""
    from ..lab import TeachingKernel
    return TeachingKernel("teach_store.cu").replace(*TEACH_EDITS["no fence"])


def bank_cycles():
    """`Result(cycles per st.shared.v4 for each of bank_patterns(), source)`: measured now where the
    store runs on hardware, else what the H100 recorded (the emulator's clock is virtual)."""
    from .. import device
    from ..case import Result
    from ..results import load_recording
    from ..runtime import runs_on
    from .tile import bank_patterns
    from .runner import measure_store_cycles
    pats = bank_patterns()
    if device.tier("store") == "hardware":
        return Result(np.array([measure_store_cycles(a) for a, _ in pats.values()]), runs_on("store"), True)
    rec = load_recording("epilogue_bank_cycles")
    if rec.params.get("patterns") != list(pats):
        raise ValueError(f"the recorded bank patterns {rec.params.get('patterns')} are not {list(pats)}")
    return Result(rec["cycles"], rec.label, False, rec)


RECORDED = (
    Recorded("epilogue_edge_store", "gmem", edge_store_case),
    *(Recorded("epilogue_gpu_vs_model", f"d{i}", lambda i=i: epilogue_case(i)) for i in range(len(GPU_VS_MODEL))),
    Recorded("teach_store_result", "d", teach_case),
    Recorded("teach_store_noswizzle", "d", lambda: teach_case(kernel=noswizzle_kernel())),
)
