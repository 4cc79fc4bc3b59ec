"""Recognising a common mistake in a learner's function: which known wrong formula it agrees with.

Used by the stage checks that take a learner's function (bwlab.tmem.exercises,
bwlab.epilogue.exercises) to add a diagnosis to `bwlab.exercises.check_function`'s report.
"""
from __future__ import annotations

import numpy as np

__all__ = ["which_mistake"]


def which_mistake(fn, cases, mistakes) -> str:
    """The description of the first wrong formula `(label, wrong_fn)` in `mistakes` that agrees with
    `fn` on every case (each case a tuple of positional arguments), else ''. A formula that raises on
    some case is skipped."""
    if not callable(fn):
        return ""
    for label, wrong in mistakes:
        try:
            if all(np.array_equal(np.asarray(fn(*c)), np.asarray(wrong(*c))) for c in cases):
                return label
        except Exception:
            continue
    return ""
