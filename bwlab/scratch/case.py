"""`ScratchGemm`: one step of the from-scratch GEMM on one problem, speaking the verbs of `bwlab.case.Case`.

    case = ScratchGemm(3, 64, 64, 32)     # step 3 (SMEM tiling), C (64 x 64) = A (64 x 32) B (32 x 64)
    case.model()                          # C in f32 as steps 1-4 add it up (bwlab.scratch.model)
    case.results()                        # the kernel run here (this GPU or the PTX emulator), and the
                                          # H200's recording of the same case, each compared with it
    case.show()                           # which CTA computes which tile of C

Every step's file is a teaching kernel: a case runs the learner's `%%cuda scratch/s3_smem_tiling.cu`
version of it where a cell changed it (else the file), and `kernel=` names another edit (a
`bwlab.lab.TeachingKernel`, or the edited text). On a GPU an edited kernel runs in a worker process, so
a fault comes back as an exception.
"""
from __future__ import annotations

import numpy as np

from ..case import Case, CheckResult, Mismatch, compare, digest
from . import model
from .steps import require_shape, step

__all__ = ["ScratchGemm", "where_steps_run"]


class ScratchGemm(Case):
    """Step `which` (1-5, 's3', or the full name) on an M x N x K problem, A and B drawn from `seed`
    (f16, uniform in [-1, 1))."""

    stage = "gemm from scratch"
    device_stage = "tma"

    def __init__(self, which, M: int, N: int, K: int, seed: int = 0, kernel=None):
        self.step = step(which)
        self.M, self.N, self.K, self.seed = M, N, K, seed
        require_shape(self.step, M, N, K)
        self.teaching_file = self.step.file
        self._set_kernel(kernel if kernel is not None else self.step.file)
        self.a, self.b = model.random_operands(M, N, K, seed)

    @property
    def what(self) -> str:
        return f"C of {self.step.name}, {self.M} x {self.N} x {self.K}"

    def __repr__(self):
        k = f", kernel={self.kernel!r}" if self.kernel.edited else ""
        return f"ScratchGemm({self.step.name!r}, {self.M}, {self.N}, {self.K}, seed={self.seed}{k})"

    def identity(self):
        return ("scratch", self.step.name, self.M, self.N, self.K, digest(self.a, self.b), self.kernel_identity())

    def model(self) -> np.ndarray:
        """C as the step adds it up: steps 1-4 in f32, k in order (model.gemm_model); step 5 through the
        mma.sync fragments and Hopper's tensor-core addition (fragments.s5_model)."""
        if self.step.unit == "tensor":
            from .fragments import s5_model
            return s5_model(self.a, self.b)
        return model.gemm_model(self.a, self.b)

    def runs_on(self) -> str | None:
        """Where the step's kernel runs here: this GPU, the PTX emulator (where it executes every
        instruction of the step), or None."""
        from .. import device
        where = super().runs_on()
        if where and device.tier("tma") == "emulated":
            from .runner import emulator_runs
            return where if emulator_runs(self.step) else None
        return where

    def run(self) -> np.ndarray:
        """C (f32) from the step's kernel (the learner's edit of it, if any): this GPU or the PTX emulator."""
        from .. import device
        from ..lab import isolate, run_edited
        from .runner import run_step
        kernel = self._teaching()
        if device.tier("tma") != "emulated" and isolate(kernel):
            return run_edited(run_step, self.step.name, self.a, self.b, kernel=kernel)
        return run_step(self.step, self.a, self.b, kernel=kernel)

    def compare(self, expected, got, source: str = "") -> CheckResult:
        tiles = lambda idx: (f"C[{idx[0]}][{idx[1]}] (CTA tile ({idx[0] // self.step.tile[0]}, "
                             f"{idx[1] // self.step.tile[1]}))")
        if self.step.unit != "tensor":
            return compare(expected, np.asarray(got, np.float32) if np.asarray(got).dtype.kind == "f" else got,
                           stage=self.stage, what=self.what + " (bit for bit: f32, k in order)", where=tiles,
                           source=source, hint=self._hint)
        e, g = np.asarray(expected), np.asarray(got)
        if e.shape != g.shape:
            return CheckResult(self.stage, self.what, e.size, e.size, Mismatch((), "the shape", e.shape, g.shape),
                               f"C must be {e.shape} (M x N)", source, "element", e, g)
        ratio = model.within_tolerance(self.a, self.b, g)
        bad = ~(ratio <= 1)
        first = None
        if bad.any():
            r, c = (int(i) for i in np.unravel_index(np.argmax(ratio), ratio.shape))
            first = Mismatch((r, c), tiles((r, c)) + f", the worst: {ratio[r, c]:.3g} x its tolerance",
                             float(e[r, c]), float(g[r, c]))
        same = int(np.count_nonzero(e.view(np.uint32) == np.asarray(g, np.float32).view(np.uint32)))
        return CheckResult(self.stage, self.what + f" (within 2^-16 |A||B| of the exact sum; {same} of {e.size} "
                           "bit for bit as Hopper's tensor core adds)", int(e.size),
                           int(bad.sum()), first, self._hint(first) if first else "", source, "element", e, g)

    def _hint(self, first: Mismatch) -> str:
        r, c = first.index if len(first.index) == 2 else (0, 0)
        return (f"a wrong value at row {r}, column {c}: a whole tile wrong points at the block's coordinates "
                "(blockIdx to m0, n0), a band of rows or columns at the thread's place in the tile, a small "
                "error everywhere at a missing or extra k (the loop bounds, a __syncthreads)")

    def show(self, ax=None):
        """The tiles of C and which CTA computes each."""
        from .pictures import plot_tiles
        return plot_tiles(self.step, self.M, self.N, ax=ax)


def where_steps_run() -> str:
    """One line per step: where its kernel runs on this machine (this GPU, the PTX emulator), or why it
    does not and what is shown instead (the GPU's recording of the same case)."""
    from .steps import EMU_SHAPE, STEPS
    lines = []
    for s in STEPS:
        where = ScratchGemm(s, *EMU_SHAPE).runs_on()
        if where:
            lines.append(f"{s.name:<20s} runs here: {where}")
        else:
            from .. import device
            why = ("the PTX emulator does not execute its ldmatrix / mma.sync" if device.tier("tma") == "emulated"
                   else "this machine has no GPU that runs it")
            lines.append(f"{s.name:<20s} does not run here ({why}): its GPU recording is shown instead")
    return "\n".join(lines)
