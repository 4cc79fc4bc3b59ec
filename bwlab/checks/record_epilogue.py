"""Recordings of notebook 05's GPU cells (stage 5, the epilogue), and their replays against the model.

    python -m bwlab.checks.record epilogue --out DIR

| recording               | what the GPU produced                                                        |
|-------------------------|------------------------------------------------------------------------------|
| epilogue_edge_store     | one TMA store of an edge box: the GMEM buffer (padding column, guard row)    |
| epilogue_gpu_vs_model   | three whole epilogues of the harness kernel (C by TMA load, reduce-add)      |
| teach_store_result      | the teaching kernel teach_store.cu on a 150 x 70 D with edge tiles           |
| teach_store_noswizzle   | teach_store.cu edited to write SMEM unswizzled (the tensor map still 128B)   |
| teach_store_nofence     | teach_store.cu with and without its proxy fence, NOFENCE_RUNS runs each      |
| epilogue_bank_cycles    | st.shared.v4 clock cycles per bank pattern (smem_store_cycles)               |

Every input is rebuilt from the parameters saved with it (seeds, shapes), so `replay(rec)` recomputes
the model now and compares it with the recorded bytes.
"""
from __future__ import annotations

import numpy as np

from ..case import CheckResult, compare

__all__ = ["record", "replay", "edge_store_case", "GPU_VS_MODEL", "epilogue_case", "teach_case",
           "NOFENCE_RUNS", "NOFENCE_KEEP", "nofence_result"]

# The cases are defined once, in the package (notebook 05 builds the same ones).
from ..epilogue.recorded import (GPU_VS_MODEL, NOFENCE_KEEP, NOFENCE_RUNS, edge_store_case,  # noqa: E402
                                 epilogue_case, nofence_result, teach_case)


def record(out_dir, meta) -> list:
    from ..epilogue import bank_patterns, measure_store_cycles, run_teach
    from ..epilogue.recorded import nofence_kernel, noswizzle_kernel
    from ..results import save_recording
    paths = []

    def save(name, arrays, params):
        paths.append(save_recording(out_dir, name, arrays, stage="epilogue", params=params, **meta))

    case = edge_store_case()
    save("epilogue_edge_store", {"gmem": case.run()}, {})

    save("epilogue_gpu_vs_model", {f"d{i}": epilogue_case(i).run() for i in range(len(GPU_VS_MODEL))},
         {"cases": [list(c) for c in GPU_VS_MODEL]})

    save("teach_store_result", {"d": teach_case().run()}, {"M": 150, "N": 70, "seed": 0})
    save("teach_store_noswizzle", {"d": teach_case(kernel=noswizzle_kernel()).run()},
         {"M": 150, "N": 70, "seed": 0})

    case = teach_case(2048, 2048, 3)
    want = case.model()
    nofence = nofence_kernel()
    counts = {True: [], False: []}
    first = None
    for fence in (True, False):
        for _ in range(NOFENCE_RUNS):
            got = run_teach(case.problem, case.acc, case.d_init,
                            kernel=None if fence else nofence)
            bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
            counts[fence].append(bad.size)
            if not fence and bad.size and first is None:
                first = (bad[:NOFENCE_KEEP].astype(np.uint32), got.reshape(-1)[bad[:NOFENCE_KEEP]])
    idx, vals = first if first is not None else (np.zeros(0, np.uint32), np.zeros(0, np.uint32))
    save("teach_store_nofence", {"with_fence": np.array(counts[True]), "without_fence": np.array(counts[False]),
                                 "index": idx, "value": vals},
         {"M": 2048, "N": 2048, "seed": 3, "runs": NOFENCE_RUNS})

    pats = bank_patterns()
    save("epilogue_bank_cycles", {"cycles": np.array([measure_store_cycles(a) for a, _ in pats.values()]),
                                  "wavefronts": np.array([w for _, w in pats.values()])},
         {"patterns": list(pats)})
    return paths


def replay(rec) -> CheckResult:
    """The model computed now against what the GPU produced when `rec` was recorded."""
    from ..epilogue import bank_patterns
    name = rec.name
    if name == "epilogue_edge_store":
        return edge_store_case().check(rec["gmem"], source=rec.label)
    if name == "epilogue_gpu_vs_model":
        results = [epilogue_case(i).check(rec[f"d{i}"], source=rec.label) for i in range(len(GPU_VS_MODEL))]
        return next((r for r in results if not r.ok), results[0])
    if name == "teach_store_result":
        pr = rec.params
        return teach_case(pr["M"], pr["N"], pr["seed"]).check(rec["d"], source=rec.label)
    if name == "teach_store_noswizzle":
        # The model of the edit: the threads write the tile unswizzled, the TMA engine reads it
        # through the map's 128B swizzle.
        from ..epilogue import epilogue_model
        pr = rec.params
        case = teach_case(pr["M"], pr["N"], pr["seed"])
        want = epilogue_model(case.problem, case.acc, None, case.d_init, smem_swizzle="none")
        return case.compare(want, rec["d"], source=rec.label)
    if name == "teach_store_nofence":
        # With the fence every run equals the model; every recorded element of the run without it
        # differs from the model computed now (the recording is of this case, not another).
        _, want, _ = nofence_result(rec)
        still_wrong = want.reshape(-1)[rec["index"]] != rec["value"]
        return compare(np.concatenate([np.zeros(len(rec["with_fence"]), np.int64), np.ones(still_wrong.size, np.int64)]),
                       np.concatenate([rec["with_fence"], still_wrong.astype(np.int64)]),
                       stage="store", what="teach_store: differing runs with the fence, recorded wrong elements without",
                       source=rec.label)
    if name == "epilogue_bank_cycles":
        # The model's wavefronts now; the GPU's cycles per st.shared.v4 rounded down (H100: the
        # wavefront count plus under one cycle of overhead).
        w = np.array([w for _, w in bank_patterns().values()])
        return compare(w, np.floor(rec["cycles"]).astype(np.int64), stage="store",
                       what="st.shared.v4 cycles vs the bank model's wavefronts",
                       where=lambda i: rec.params["patterns"][i[0]], source=rec.label)
    raise ValueError(f"no replay for recording {name!r}")
