"""Recordings of notebook 03 (stage 3, UMMA): what wgmma produced on a Hopper GPU.

`tcgen05.mma` needs an sm_100 GPU, and an H100 is sm_90: nothing of the tcgen05 kernels is recorded.
What an H100 can show is the part both instructions share — A and B read from shared memory through
a descriptor, in the canonical layouts — through `wgmma`:

* `umma_wgmma_layouts` — D (64 x N float32) of a few layout cases run by the validation kernel
  cuda_src/wgmma_sm90.cu (`d0`, `d1`, ...; the cases' parameters in `params["cases"]`);
* `umma_teach_wgmma`   — D of the teaching kernel cuda_src/teach_wgmma.cu for its case (`d`) and for
  the descriptor edits the notebook makes (`d_<edit>`; each edit in `params["edits"]`).

    python -m bwlab.checks.record umma --out DIR      (on a Hopper GPU)

`replay(rec)` rebuilds each case and compares the model computed now with the recorded bytes.
"""
from __future__ import annotations

import dataclasses

from ..case import CheckResult
from ..results import save_recording
from ..umma import WgmmaCase
from ..umma.recorded import EDITS, TEACH_CASE, edited_descriptors, layout_cases

__all__ = ["TEACH_CASE", "EDITS", "layout_cases", "edited_descriptors", "record", "record_with", "replay"]

def record_with(out_dir, meta, run_layout, run_teach) -> list:
    """Both recordings, with `run_layout(case)` and `run_teach(case, descriptors)` producing D."""
    meta = dict(meta, stage="umma")
    cases = layout_cases()
    p1 = save_recording(out_dir, "umma_wgmma_layouts", {f"d{i}": run_layout(c) for i, c in enumerate(cases)},
                        params={"cases": [dataclasses.asdict(c) for c in cases]}, **meta)
    case = WgmmaCase(**TEACH_CASE)
    arrays = {"d": run_teach(case, None)}
    arrays.update({f"d_{e}": run_teach(case, edited_descriptors(case, *EDITS[e])) for e in EDITS})
    p2 = save_recording(out_dir, "umma_teach_wgmma", arrays,
                        params={"case": TEACH_CASE, "edits": {e: [op, f] for e, (op, f) in EDITS.items()}}, **meta)
    return [p1, p2]


def record(out_dir, meta) -> list:
    """On a Hopper GPU: the validation kernel and the teaching kernel, run by wgmma."""
    from ..umma import run_teach_wgmma, run_wgmma
    return record_with(out_dir, meta, run_wgmma,
                       lambda case, descs: run_teach_wgmma(case, descriptors=descs))


def replay(rec) -> CheckResult:
    """The model now against every array of the recording; the first disagreement, else the last check."""
    results = []
    if rec.name == "umma_wgmma_layouts":
        for i, p in enumerate(rec.params["cases"]):
            case = WgmmaCase(**p)
            results.append(case.check(rec[f"d{i}"], source=f"{rec.label}, case {i}"))
    else:
        case = WgmmaCase(**rec.params["case"])
        results.append(case.check(rec["d"], source=rec.label))
        for e, (operand, fields) in rec.params["edits"].items():
            descs = edited_descriptors(case, operand, fields)
            results.append(case.compare(case.model(descriptors=descs), rec[f"d_{e}"], f"{rec.label}, edit {e}"))
    return next((r for r in results if not r.ok), results[-1])


if __name__ == "__main__":       # provisional recordings from the model (no GPU): python -m bwlab.checks.record_umma DIR
    import sys
    out = sys.argv[1] if len(sys.argv) > 1 else "docs/results/recordings"
    for p in record_with(out, {"device": "MODEL (replace by the H100 recording)", "date": "provisional",
                               "command": "python -m bwlab.checks.record umma --out DIR"},
                         lambda c: c.model(), lambda c, d: c.model(descriptors=d)):
        print(p)
