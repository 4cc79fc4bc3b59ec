"""The exercise cells of a notebook source, and what nbgrader's student version makes of them — shared
by the tests that run a notebook's own exercise cells with plain Python (no nbgrader, no kernel)."""
import re

import pytest

from bwlab.exercises import NotYet
from bwlab.tools.notebooks import parse_cells


def exercise_cells(path):
    """[(grade_id, solution cell source, grade cell source)] of a percent-format notebook source."""
    cells = [(src, meta) for kind, src, _, meta in parse_cells(path.read_text()) if meta]
    pairs = []
    for (sol, sm), (grade, gm) in zip(cells[::2], cells[1::2]):
        assert sm["solution"] and gm["grade"] and gm["grade_id"] == sm["grade_id"] + "_check"
        pairs.append((sm["grade_id"], sol, grade))
    return pairs


def student(src: str) -> str:
    """What nbgrader's generate_assignment leaves: solutions replaced, hidden tests removed."""
    src = re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION", "# your answer here", src, flags=re.S)
    return re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", "", src, flags=re.S)


def not_yet(check, *args, **kw) -> str:
    """The message of the NotYet that `check(*args, **kw)` must raise."""
    with pytest.raises(NotYet) as e:
        check(*args, **kw)
    return str(e.value)
