"""Every notebook's exercise cells, run with plain Python on their own (no kernel, no nbgrader): the
solution passes its graded cell ("correct: ..."), and the student version of the pair — solution
replaced by nbgrader's stub, hidden tests removed — fails with NotYet "no answer yet", never with a
NameError. (tests/test_classroom.py grades the same through the sandboxed grader, notebook by notebook.)"""
from pathlib import Path

import pytest

from bwlab.exercises import NotYet
from exercise_cells import exercise_cells, student

SOURCES = sorted((Path(__file__).resolve().parent.parent / "notebooks" / "src").glob("[0-9]*.py"))
CASES = [(src.stem, *cell) for src in SOURCES for cell in exercise_cells(src)]


def test_every_stage_notebook_has_exercises():
    have = {nb for nb, *_ in CASES}
    assert {s.stem for s in SOURCES if s.stem < "07"} <= have


@pytest.mark.parametrize("notebook,grade_id,solution,grade", CASES, ids=[c[1] for c in CASES])
def test_solution_passes_and_student_version_says_no_answer_yet(notebook, grade_id, solution, grade, capsys):
    ns = {}
    exec(solution, ns)
    exec(grade, ns)
    assert "correct:" in capsys.readouterr().out, f"{notebook} {grade_id}: the answer key does not pass"
    ns = {}
    exec(student(solution), ns)
    with pytest.raises(NotYet, match="no answer yet"):
        exec(student(grade), ns)
