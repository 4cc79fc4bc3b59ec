"""`GemmCase`: one step of the Hopper ladder on one problem, speaking the verbs of `bwlab.case.Case`.

    case = GemmCase(1, 128, 128, 64)        # step s1 on C (128 x 128) = A (128 x 64) * B (128 x 64)^T
    case.model()                            # C as bf16 bits: the f32 GEMM, rounded to bf16 as the kernel stores it
    case.check()                            # the step run on this GPU (sm_90a) or in the PTX emulator, compared
    case.results()                          # the same, one line per result

    mine = TeachingKernel("gemm_sm90/s1_one_warpgroup.cu").replace("kt < k_tiles;", "kt < k_tiles - 1;")
    GemmCase(1, 128, 128, 128, kernel=mine).check()   # your edit of the step's kernel, run the same way:
                                                      # here it drops the last K slice, and check() says so

`kernel=` takes an edit of the step's own file: a `bwlab.lab.TeachingKernel`, the file's name (the
`%%cuda gemm_sm90/s1_one_warpgroup.cu` version if a cell changed it), or the edited source itself (text,
or a `pathlib.Path` to a file). In the emulated tier it runs in the PTX emulator (keep the shape small:
a 128 x 128 x 128 problem takes seconds); on a Hopper GPU in a worker process.

A kernel accumulates in f32 in its own order, so its C may differ from the model's rounding by one bf16
ulp where two f32 sums straddle a rounding boundary: `check` allows |C - C_f32| <= 2^-7 |C_f32| +
2^-16 (|A| |B|^T) per element (bwlab.gemm.runner's tolerance) and names the worst element.
"""
from __future__ import annotations

import numpy as np

from ..case import Case, CheckResult, Mismatch, digest
from ..hw.dtypes import from_float, to_float
from .ladder import require_shape, step

__all__ = ["GemmCase"]

REL_TOL = 2.0 ** -7     # one bf16 ulp of C
SUM_TOL = 2.0 ** -16    # f32 accumulation in another order, relative to |A| |B|^T


class GemmCase(Case):
    """Step `step` (a number, 's3', or the full name) of the Hopper ladder on an M x N x K problem with
    bf16 A (M x K) and B (N x K) drawn from `seed` (values in [-1, 1)). `kernel`: a learner's edit of the
    step's .cu (see the module), run where the step runs: a Hopper GPU (in a worker process) or the
    PTX emulator."""

    stage = "gemm"
    device_stage = "tma"

    def __init__(self, step_, M: int, N: int, K: int, seed: int = 0, kernel=None):
        self.step = step(step_)
        self.M, self.N, self.K, self.seed = int(M), int(N), int(K), int(seed)
        require_shape(self.step, self.M, self.N, self.K)
        self.teaching_file = self.step.path
        if isinstance(kernel, str) and kernel == self.step.file:   # its name without the folder
            kernel = self.step.path
        self._set_kernel(kernel)
        rng = np.random.default_rng(self.seed)
        self.a = from_float(rng.random((self.M, self.K), dtype=np.float32) * 2 - 1, "bf16")
        self.b = from_float(rng.random((self.N, self.K), dtype=np.float32) * 2 - 1, "bf16")

    @property
    def what(self) -> str:
        return f"C of {self.step.name}, {self.M} x {self.N} x {self.K} (bf16)"

    def __repr__(self):
        k = "" if self._kernel is None else f", kernel={self.kernel!r}"
        return f"GemmCase({self.step.name!r}, {self.M}, {self.N}, {self.K}, seed={self.seed}{k})"

    def identity(self):
        return ("gemm", self.step.name, self.M, self.N, self.K, digest(self.a, self.b), self.kernel_identity())

    def reference(self):
        """(C in f32 from the bf16 inputs, |A| |B|^T): the exact sums, then one rounding to f32."""
        fa, fb = to_float(self.a, "bf16").astype(np.float64), to_float(self.b, "bf16").astype(np.float64)
        return (fa @ fb.T).astype(np.float32), np.abs(fa) @ np.abs(fb).T

    def model(self) -> np.ndarray:
        """C as the kernel stores it: the f32 GEMM rounded to bf16 (round to nearest even), uint16 bits."""
        return from_float(self.reference()[0], "bf16")

    def runs_on(self) -> str | None:
        """The ladder is sm_90a code (wgmma): a Hopper GPU, or the PTX emulator in the emulated tier."""
        from .. import device
        from ..runtime import runs_on
        if device.tier("tma") == "emulated":
            return runs_on("tma")
        info = device.gpu_info()
        return runs_on("tma") if info is not None and info.has_wgmma else None

    def run(self) -> np.ndarray:
        """C (uint16 bf16 bits) from the step's kernel: on a Hopper GPU, or in the PTX emulator (small
        shapes run in seconds there)."""
        from .. import device
        from .runner import run_step_emulated
        if device.tier("tma") == "emulated":
            return run_step_emulated(self.step.name, self.a, self.b, seed=self.seed,
                                            kernel=self._teaching())[0]
        device.require("tma")
        from ..lab import kept
        kernel = self._teaching() or kept(self.step.path)   # without kernel=: the %%cuda edit, if one is kept
        if kernel is not None:
            from ..lab import isolate, run_edited
            if isolate(kernel):
                return run_edited(_run_on_gpu, self.step.name, self.a, self.b, kernel=kernel)
        return _run_on_gpu(self.step.name, self.a, self.b, kernel=kernel)

    def compare(self, expected, got, source: str = "") -> CheckResult:
        e, g = np.asarray(expected), np.asarray(got)
        if e.shape != g.shape:
            return CheckResult(self.stage, self.what, e.size, e.size, Mismatch((), "the shape", e.shape, g.shape),
                               f"C must be {e.shape} (M x N)", source, "element", e, g)
        c32, scale = self.reference()
        err = np.abs(to_float(g.astype(np.uint16), "bf16").astype(np.float64) - c32)
        tol = REL_TOL * np.abs(c32.astype(np.float64)) + SUM_TOL * scale
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = np.where(np.isnan(err / tol), np.inf, err / tol)
        bad = ~(ratio <= 1)
        first, hint = None, ""
        if bad.any():
            r, c = (int(i) for i in np.unravel_index(np.argmax(ratio), ratio.shape))
            first = Mismatch((r, c), f"C[{r}][{c}] (tile ({r // self.step.bm}, {c // self.step.bn}), the worst: "
                                     f"{ratio[r, c]:.3g} x its tolerance)",
                             float(to_float(e[r:r + 1, c:c + 1].astype(np.uint16), "bf16")[0, 0]),
                             float(to_float(g[r:r + 1, c:c + 1].astype(np.uint16), "bf16")[0, 0]))
            rows, cols = bad.any(axis=1), bad.any(axis=0)
            hint = (f"{int(bad.sum())} elements out of tolerance in tile rows "
                    f"{sorted({int(i) for i in np.flatnonzero(rows) // self.step.bm})[:8]} and tile columns "
                    f"{sorted({int(i) for i in np.flatnonzero(cols) // self.step.bn})[:8]}: a whole tile wrong points at its "
                    "coordinates or its K loop; a band of rows or columns at the TMA boxes or the wgmma descriptors")
        return CheckResult(self.stage, self.what + " (within one bf16 ulp + the f32 summation order)", int(e.size),
                           int(bad.sum()), first, hint, source, "element", e, g)

    def show(self, ax=None):
        """The tiles of C and which CTA computes each (the grid of the step's launch)."""
        from .pictures import plot_tiles
        return plot_tiles(self.step, self.M, self.N, ax=ax)


def _run_on_gpu(name, a, b, kernel=None):
    from ..runtime import GPU
    from .runner import run_step
    xp = GPU.xp
    return xp.asnumpy(run_step(name, xp.asarray(a), xp.asarray(b), kernel=kernel))
