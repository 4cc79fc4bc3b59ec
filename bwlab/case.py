"""The one interface every stage speaks.

A stage's *case* holds the parameters of one operation (validated when it is built) and its inputs.
Four verbs, the same on every stage:

* `model()` — what the hardware produces, computed by NumPy (no GPU);
* `run()`   — the same operation on the GPU, returning the same type (raises `UnsupportedGPU` where the
  stage's tier is 'model');
* `check(got=None)` — compares the model with `got` (a learner's answer, a recorded GPU result) or, when
  `got` is None, with `run()`; returns a `CheckResult` that names the first differing byte or element,
  where it sits, what was expected and what came instead;
* `show(ax=None)` — the picture of the case;

and, where the stage's kernel runs or was recorded:

* `result()`  — `Result(array, source)`: `run()` where the stage runs here (this GPU, or the PTX emulator
  in the emulated tier), else the recording of this very case (`bwlab.results`), labelled with where and
  when it was made; `array, source = case.result()` unpacks it;
* `results()` — every result there is for the case (the live one, then the recording), each compared with
  the model: what a notebook prints.

A case built with `kernel=` (a `bwlab.lab.TeachingKernel`; the name of a teaching kernel file, which
means the learner's `%%cuda` version of it if there is one; or the edited text of that file, as a string
or a `pathlib.Path`) runs that kernel in `run()`, `check()`, `result()` and `results()`; without it, the
stage's harness kernel.

`compare()` is the comparison every check, validation and exercise uses.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .results import Result

__all__ = ["Case", "CheckResult", "Mismatch", "compare", "CheckFailed", "Result", "Results", "NoResult",
           "digest"]


class CheckFailed(AssertionError):
    """Raised by `CheckResult.assert_ok()`; the message is the result's report."""


@dataclass(frozen=True)
class Mismatch:
    index: tuple          # index into the compared arrays
    where: str            # that index in the stage's words ("SMEM byte 0x0040 = box row 0, byte 64")
    expected: object
    got: object


def _fmt(v, hexw: int | None) -> str:
    if hexw is not None:
        return f"0x{int(v):0{hexw}x}"
    return repr(v.item() if isinstance(v, np.generic) else v)


@dataclass
class CheckResult:
    """The outcome of comparing a model with a result. True when they agree.

    `str(result)` is a report a learner can act on: how much was compared, how much differs, the first
    difference with its place in the stage's words, and a hint naming the rule most likely broken.
    """

    stage: str
    what: str
    compared: int
    differing: int
    first: Mismatch | None = None
    hint: str = ""
    source: str = ""                      # where `got` came from: 'GPU', 'recorded on an H100', 'you'
    unit: str = "element"
    expected: np.ndarray | None = field(default=None, repr=False)
    got: np.ndarray | None = field(default=None, repr=False)
    error: str = ""                       # the run raised instead (a bounded wait gave up, a fault)
    seconds: float | None = None          # how long that run took
    note: str = ""                        # said after the verdict (e.g. a GPU that got lucky on a broken kernel)

    @property
    def ok(self) -> bool:
        return self.differing == 0 and not self.error

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        head = f"{self.stage}: {self.what}"
        src = f" ({self.source})" if self.source else ""
        if self.error:
            after = f", after {self.seconds:.2f} s" if self.seconds is not None else ""
            return f"{self.source or head}{after}: {self.error}"
        if self.ok:
            return f"{head}: all {self.compared} {self.unit}s equal the model{src}" + (
                f"\n  {self.note}" if self.note else "")
        lines = [f"{head}: {self.differing} of {self.compared} {self.unit}s differ from the model{src}"]
        if self.first is not None:
            lines.append(f"  first difference at {self.first.where}: expected {self.first.expected}, "
                         f"got {self.first.got}")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def assert_ok(self) -> "CheckResult":
        if not self.ok:
            raise CheckFailed(str(self))
        return self


def _rule_broken(error) -> bool:
    """A live run's error that names a broken rule of the ISA (not a fault or a timeout of the machine)."""
    from .emu.errors import DivergenceError, ProtocolError
    return isinstance(error, (ProtocolError, DivergenceError))


def compare(expected, got, *, stage: str, what: str, unit: str = "element",
            where: Callable[[tuple], str] | None = None, hint: str | Callable[[Mismatch], str] = "",
            mask=None, hex_digits: int | None = None, source: str = "") -> CheckResult:
    """Compare two arrays element by element (bitwise for floats: NaN == NaN, -0 != +0).

    `where(index)` describes an index in the stage's words; `hint` is a string or a function of the
    first mismatch; `mask` (bool, same shape) restricts the comparison to what the hardware defines;
    `hex_digits` prints values in hex of that width.
    """
    e = np.asarray(expected)
    g = np.asarray(got)
    if e.shape != g.shape:
        return CheckResult(stage, what, int(e.size), int(e.size),
                           Mismatch((), "the shape", e.shape, g.shape),
                           f"the result must have shape {e.shape}", source, unit, e, g)
    if e.dtype.kind == "f" and g.dtype.kind == "f" and e.dtype.itemsize == g.dtype.itemsize:
        u = np.dtype(f"u{e.dtype.itemsize}")
        diff = e.view(u) != g.view(u)
    else:
        diff = e != g
    diff = np.asarray(diff)
    if mask is not None:
        m = np.broadcast_to(np.asarray(mask, dtype=bool), e.shape)
        diff = diff & m
        compared = int(m.sum())
    else:
        compared = int(e.size)
    n = int(diff.sum())
    first = None
    text = hint if isinstance(hint, str) else ""
    if n:
        idx = tuple(int(i) for i in np.argwhere(diff)[0])
        place = where(idx) if where else f"index {idx if len(idx) != 1 else idx[0]}"
        first = Mismatch(idx, place, _fmt(e[idx], hex_digits), _fmt(g[idx], hex_digits))
        if callable(hint):
            text = hint(first)
    return CheckResult(stage, what, compared, n, first, text if n else "", source, unit, e, g)


class NoResult(RuntimeError):
    """Neither this machine nor a recording can give the case's result."""


class Results(list):
    """The `CheckResult`s of one case, one per result (live, recorded); prints one per line.
    `.results` holds the `Result`s they compared (the arrays, as the kernel or the recording gave them)."""

    def __init__(self, *args):
        super().__init__(*args)
        self.results: list[Result] = []

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self)

    def __str__(self) -> str:
        return "\n".join(str(r) for r in self)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def digest(*parts) -> str:
    """A short fingerprint of arrays and values (shape, dtype and bytes for arrays), to tell whether a
    case is the one a recording holds."""
    h = hashlib.sha1()
    for x in parts:
        if isinstance(x, np.ndarray) or (hasattr(x, "dtype") and hasattr(x, "shape")):
            a = np.ascontiguousarray(x)
            h.update(f"{a.dtype.str}{a.shape}".encode())
            h.update(a.tobytes())
        else:
            h.update(repr(x).encode())
        h.update(b"|")
    return h.hexdigest()[:16]


def _kernel_of(kernel, teaching_file: str | None):
    """A case's `kernel=` argument, checked: None (the harness), a TeachingKernel, or a teaching file name
    (resolved when the case runs, so a later `%%cuda` edit of it counts); the edited text of the teaching
    file (a string of several lines, or a `pathlib.Path` to a file holding it) becomes a TeachingKernel."""
    if kernel is None:
        return None
    from pathlib import Path
    from .lab import TeachingKernel
    if isinstance(kernel, Path) or (isinstance(kernel, str) and "\n" in kernel):
        if not teaching_file:
            raise ValueError("this case has no teaching kernel to replace with that source")
        return TeachingKernel(teaching_file, kernel.read_text() if isinstance(kernel, Path) else kernel)
    if isinstance(kernel, TeachingKernel):
        if teaching_file and kernel.file != teaching_file:
            raise ValueError(f"this stage's teaching kernel is {teaching_file}; got an edit of {kernel.file}")
        return kernel
    if isinstance(kernel, str):
        name = kernel if kernel.endswith(".cu") else kernel + ".cu"
        if teaching_file and name != teaching_file:
            raise ValueError(f"this stage's teaching kernel is {teaching_file}, got {kernel!r}")
        return name
    raise ValueError(f"kernel must be a bwlab.lab.TeachingKernel, a teaching kernel's file name or its "
                     f"edited source (text, or a pathlib.Path), got {type(kernel).__name__}")


class Case:
    """Base of every stage's case: subclasses define `stage`, `model()`, `run()` and `show()`, and may
    override `compare(expected, got, source)` to describe places and give hints in their own words.

    Where a stage has a teaching kernel (`teaching_file`), `kernel=` selects it for `run()`; a stage's
    recordings are matched by `identity()`, the case's parameters and inputs."""

    stage = "stage"
    what = "result"
    teaching_file: str | None = None      # the stage's teaching kernel in cuda_src/
    device_stage: str | None = None       # the stage's name for bwlab.device.tier (default: `stage`)
    _kernel = None

    def model(self):
        raise NotImplementedError

    def run(self):
        raise NotImplementedError

    def show(self, ax=None, **kwargs):
        raise NotImplementedError

    # ---- the kernel the case runs ------------------------------------------------------------------
    @property
    def kernel(self):
        """The teaching kernel `run()` uses (the learner's `%%cuda` version for a file name), or None for
        the harness kernel."""
        return self._teaching()

    def _teaching(self):
        k = self._kernel
        if isinstance(k, str):
            from .lab import edited
            return edited(k)
        return k

    def _set_kernel(self, kernel) -> None:
        object.__setattr__(self, "_kernel", _kernel_of(kernel, self.teaching_file))

    def kernel_identity(self):
        """Which kernel runs, for matching recordings: the harness, or a teaching kernel's text."""
        k = self._teaching()
        return None if k is None else (k.file, digest(k.text))

    def identity(self):
        """The case's parameters and inputs (and kernel): equal for the case a recording holds."""
        raise NotImplementedError(f"{type(self).__name__} has no recordings to match")

    # ---- where results come from ---------------------------------------------------------------------
    def runs_on(self) -> str | None:
        """Where this case's kernel runs here, in words (this GPU, the PTX emulator), or None. A stage in
        the hybrid tier (tcgen05 on a GPU with TMA but without tcgen05: Hopper, sm_120) has no GPU that runs
        its kernel, so None there too: the model answers, beside the recording of the case if one exists."""
        from . import device
        from .runtime import runs_on
        stage = self.device_stage or self.stage
        if device.tier(stage) == "hybrid":
            return None
        return runs_on(stage)

    def recorded(self) -> Result | None:
        """The recording of this very case (same parameters, inputs and kernel), if one was made."""
        from .results import find_recorded
        return find_recorded(self)

    def result(self) -> Result:
        """`run()` where the stage runs here, else the recording of this case; `(value, source)`."""
        live = self.runs_on()
        if live:
            return Result(self.run(), live, True)
        rec = self.recorded()
        if rec is None:
            from . import device
            stage = self.device_stage or self.stage
            raise NoResult(f"{self!r}: its kernel does not run here ({stage} is in the {device.tier(stage)} "
                           "tier) and no recording of this case exists; compare the model with a result "
                           "you have: check(got)")
        return rec

    def results(self, recording: str | None = None) -> Results:
        """Every result of the case, each compared with the model: the live one (this GPU or the PTX
        emulator) where the stage runs here, then the recording of the same case where one exists
        (`recording` picks one where several hold it). A run that raises the errors a kernel can cause
        (a bounded wait giving up, a fault, a hang) gives a CheckResult naming the error."""
        out = Results()
        live = self.runs_on()
        got = [self._run_catching(live)] if live else []
        from .results import find_recorded
        rec = find_recorded(self, recording)
        got += [rec] if rec is not None else []
        for r in got:
            out.append(self.check(r))
            out.results.append(r)
        broke = next((r.error for r in got if r.live and r.error is not None and _rule_broken(r.error)), None)
        if broke is not None:
            for c, r in zip(out, got):
                if not r.live and c.ok:
                    c.note = ("that GPU got lucky: the kernel breaks the rule named above all the same, and "
                              "another run, another GPU or another timing can give a wrong result")
        if not out:
            from . import device
            stage = self.device_stage or self.stage
            out.append(CheckResult(self.stage, self.what, 0, 0, error=(
                f"not run: this machine runs {stage} in the {device.tier(stage)} tier, and no recording "
                "of this case exists")))
        return out

    def _run_catching(self, live: str) -> Result:
        import time
        from .emu.errors import EmuError
        from .runtime import MbarrierTimeout
        from .sandbox import KernelFault, KernelHang
        t0 = time.perf_counter()
        try:
            return Result(self.run(), live, True)
        except (MbarrierTimeout, KernelFault, KernelHang, EmuError) as e:
            return Result(None, live, True, error=e, seconds=time.perf_counter() - t0)

    def compare(self, expected, got, source: str = "") -> CheckResult:
        return compare(expected, got, stage=self.stage, what=self.what, source=source)

    def check(self, got=None, source: str | None = None) -> CheckResult:
        """Compare the model with `got` (an array or a `Result`), or with `result()` when `got` is None:
        the kernel run here, or the recording of this case."""
        if got is None:
            got = self.result()
        if isinstance(got, Result):
            if got.error is not None:
                e = got.error
                text = e if isinstance(e, str) else f"{type(e).__name__}: {e}"
                return CheckResult(self.stage, self.what, 0, 0, source=source or got.source, error=text,
                                   seconds=got.seconds)
            got, src = got.value, got.source
        else:
            src = "given"
        return self.compare(self.model(), got, source if source is not None else src)
