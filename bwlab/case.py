"""The one interface every stage speaks.

A stage's *case* holds the parameters of one operation (validated when it is built) and its inputs.
Four verbs, the same on every stage:

* `model()` — what the hardware produces, computed by NumPy (no GPU);
* `run()`   — the same operation on the GPU, returning the same type (raises `UnsupportedGPU` where the
  stage's tier is 'model');
* `check(got=None)` — compares the model with `got` (a learner's answer, a recorded GPU result) or, when
  `got` is None, with `run()`; returns a `CheckResult` that names the first differing byte or element,
  where it sits, what was expected and what came instead;
* `show()` — the picture of the case.

`compare()` is the comparison every check, validation and exercise uses.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = ["Case", "CheckResult", "Mismatch", "compare", "CheckFailed"]


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

    @property
    def ok(self) -> bool:
        return self.differing == 0

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        head = f"{self.stage}: {self.what}"
        src = f" ({self.source})" if self.source else ""
        if self.ok:
            return f"{head}: all {self.compared} {self.unit}s equal the model{src}"
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


class Case:
    """Base of every stage's case: subclasses define `stage`, `model()`, `run()` and `show()`, and may
    override `compare(expected, got, source)` to describe places and give hints in their own words."""

    stage = "stage"
    what = "result"

    def model(self):
        raise NotImplementedError

    def run(self):
        raise NotImplementedError

    def show(self, *args, **kwargs):
        raise NotImplementedError

    def compare(self, expected, got, source: str = "") -> CheckResult:
        return compare(expected, got, stage=self.stage, what=self.what, source=source)

    def check(self, got=None, source: str | None = None) -> CheckResult:
        """Compare the model with `got`, or with the GPU's `run()` when `got` is None."""
        if got is None:
            got, src = self.run(), "GPU"
        else:
            src = "given"
        return self.compare(self.model(), got, source if source is not None else src)
