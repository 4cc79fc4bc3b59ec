"""The cases notebook 05 runs on a GPU, each defined once so that the notebook, the recorder
(`bwlab/checks/record_epilogue.py`) and the replays build exactly the same inputs, and which recording
holds which: `Epilogue(...).result()` / `.results()` and `TmaStore(...).results()` find them here. On a
machine whose `store` tier is not *hardware*, each returns what an H100 recorded, labelled, compared with
the model computed now.

* `epilogue_edge_store`   — one TMA store of an edge box (`edge_store_case`);
* `epilogue_gpu_vs_model` — three whole epilogues of the harness kernel (`epilogue_case(i)`);
* `teach_store_result`    — the teaching kernel on a 150 x 70 D (`teach_case()`);
* `teach_store_noswizzle` — the teaching kernel edited to write SMEM unswizzled (`noswizzle_kernel()`);
* `teach_store_nofence`   — the experiment without the proxy fence (PTX ISA 9.7.9.25.2, "Async proxy";
                            `fence_experiment`, `nofence_result`);
* `epilogue_bank_cycles`  — st.shared.v4 cycles per bank pattern (`bank_cycles()`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..hw.swizzle import MODES
from ..results import Recorded
from .runner import TEACH_EDITS

__all__ = ["RECORDED", "TEACH_EDITS", "NOFENCE_RUNS", "NOFENCE_KEEP", "GPU_VS_MODEL", "edge_store_case",
           "epilogue_case", "teach_case", "nofence_result", "FenceExperiment", "fence_experiment", "gpu_vs_model",
           "noswizzle_kernel", "nofence_kernel", "bank_cycles"]

NOFENCE_RUNS = 20          # runs with and without the fence
NOFENCE_KEEP = 65536       # differing elements of the first bad run kept (indices and values)
GPU_VS_MODEL = (           # (dtype, swizzle, beta, reduce_add), seed = position in this list
    ("float32", "128B", 0.75, False),
    ("bfloat16", "64B", 0.75, False),
    ("float32", "128B", 0.0, True),
)


def edge_store_case():
    """A 16 x 8 fp32 box stored at (16, 16) into a 27 x 20 tensor (row pitch 28 elements, one guard
    row below): rows 20..23 of the box lie past the last row, columns 27..31 past the last column."""
    from ..tma.tensor_map import TensorMap
    from .case import TmaStore
    t = TensorMap("float32", (27, 20), (16, 8), global_strides=(112,))
    gmem = np.full((21, 28), -1.0, np.float32)
    return TmaStore(gmem, t, (16, 16), np.arange(1, 129, dtype=np.float32))


def _epilogue(dtype, swizzle, beta, reduce_add, M, seed_or_rng, smem_offset):
    from .case import Epilogue
    from .problem import EpilogueProblem
    eb = 4 if dtype == "float32" else 2
    bn = 128 // eb if swizzle in ("none", "128B") else 2 * ({"32B": 32, "64B": 64}[swizzle] // eb)
    p = EpilogueProblem(M, 2 * bn + 5, dtype, bm=64, bn=bn, swizzle=swizzle, alpha=1.25, beta=beta,
                        reduce_add=reduce_add, smem_offset=smem_offset)
    rng = seed_or_rng if isinstance(seed_or_rng, np.random.Generator) else np.random.default_rng(seed_or_rng)
    acc, c, d0 = p.random_inputs(rng)
    return Epilogue(p, acc, c, d0)


def epilogue_case(i: int):
    """Case i of GPU_VS_MODEL: a 70-row epilogue with edge tiles in both directions."""
    dtype, swizzle, beta, reduce_add = GPU_VS_MODEL[i]
    return _epilogue(dtype, swizzle, beta, reduce_add, 70, i, 0 if reduce_add else 384)


def teach_case(M: int = 150, N: int = 70, seed: int = 0, kernel="teach_store.cu"):
    """The teaching kernel's problem (`teach_problem`) with random inputs from `seed`, run by `kernel`
    (default: teach_store.cu, or the learner's %%cuda version of it)."""
    from .case import Epilogue
    from .problem import teach_problem
    p = teach_problem(M, N)
    acc, _, d0 = p.random_inputs(np.random.default_rng(seed))
    return Epilogue(p, acc, None, d0, kernel=kernel)


def nofence_result(rec):
    """(case, model, got): the first run without the fence that differed, rebuilt as the model with
    the recorded wrong elements put in (got is None when no run differed)."""
    pr = rec.params
    case = teach_case(pr["M"], pr["N"], pr["seed"])
    want = case.model()
    if rec["index"].size == 0:
        return case, want, None
    got = want.copy()
    got.reshape(-1)[rec["index"]] = rec["value"]
    return case, want, got


@dataclass
class FenceExperiment:
    """The teaching kernel on a 2048 x 2048 D, NOFENCE_RUNS times with its proxy fence and as many
    without: per run, the number of D elements that differ from the model."""
    source: str
    case: object
    differing: dict = field(default_factory=dict)   # {True: [...] with the fence, False: [...] without}
    first_bad: np.ndarray | None = None              # D of the first run without the fence that differed
    kept: int | None = None                          # a recording keeps only this many of its wrong elements

    def runs_differing(self, fence: bool) -> int:
        return sum(int(n) > 0 for n in self.differing[fence])

    def __str__(self) -> str:
        lines = [self.source]
        for fence in (True, False):
            runs = self.differing[fence]
            lines.append(f"{'with   ' if fence else 'without'} the fence: {self.runs_differing(fence)}/{len(runs)} "
                         f"runs differ from the model ({int(sum(runs))} elements in all)")
        if self.first_bad is not None:
            if self.kept is not None:
                n = next(int(x) for x in self.differing[False] if x)
                lines.append(f"the first run without the fence that differed ({n} wrong elements; the recording "
                             f"keeps the first {min(n, self.kept)} of them, so the check below counts only those):")
            lines.append(str(self.case.check(self.first_bad, source="the first run without the fence that differed")))
        else:
            lines.append("no run without the fence differed here: the fence is still required (PROXY_FENCE_RULE)")
        return "\n".join(lines)


def fence_experiment(nofence_kernel, on_gpu: bool | None = None) -> FenceExperiment:
    """Run the teaching kernel and `nofence_kernel` (it without `fence_proxy_async_shared_cta()`) on
    this GPU when `on_gpu` (default: when the store runs on hardware here; the emulator follows the
    memory model and names the missing fence instead of racing), else take the H100's recording
    `teach_store_nofence`."""
    from .. import device
    if on_gpu is None:
        on_gpu = device.tier("store") == "hardware"
    if on_gpu:
        from .case import run_teach
        case = teach_case(2048, 2048, 3)
        want = case.model()
        fx = FenceExperiment("this GPU", case, {True: [], False: []})
        for fence in (True, False):
            for _ in range(NOFENCE_RUNS):
                d = run_teach(case.problem, case.acc, case.d_init, kernel=None if fence else nofence_kernel)
                fx.differing[fence].append(int(np.sum(d != want)))
                if not fence and fx.differing[fence][-1] and fx.first_bad is None:
                    fx.first_bad = d
        return fx
    from ..results import load_recording
    rec = load_recording("teach_store_nofence")
    case, _, got = nofence_result(rec)
    return FenceExperiment(rec.label, case, {True: list(rec["with_fence"]), False: list(rec["without_fence"])}, got,
                           kept=NOFENCE_KEEP)


def gpu_vs_model(on_gpu: bool | None = None) -> list:
    """Whole epilogues on the GPU beside the model, one CheckResult each. On a GPU (`on_gpu`; default:
    where the store runs here): every D type x swizzle, with and without C (beta 0.75 / 0), plus a
    reduce-add, all with edge tiles. In the emulator: the three cases of GPU_VS_MODEL, each with the
    H100's recording beside it. Elsewhere: those three as the H100 recorded them."""
    from .. import device
    from ..runtime import runs_on
    if on_gpu is None:
        on_gpu = bool(runs_on("store"))
    if on_gpu and device.tier("store") == "emulated":
        # the emulator runs the three recorded cases (the whole set takes ~10 s of CPU), the H100's beside them
        return [r for i in range(len(GPU_VS_MODEL)) for r in epilogue_case(i).results()]
    if on_gpu:
        rng = np.random.default_rng(1)
        cases = [_epilogue(dtype, mode, beta, False, 150, rng, 384)
                 for dtype in ("float32", "float16", "bfloat16") for mode in MODES
                 for beta in (0.0, 0.75)]
        cases.append(_epilogue("float32", "128B", 0.0, True, 100, rng, 0))
        return [c.check(c.run(), source=runs_on("store") or "this GPU") for c in cases]
    return [epilogue_case(i).check(epilogue_case(i).recorded()) for i in range(len(GPU_VS_MODEL))]


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
