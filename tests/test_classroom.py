"""The instructor's workflow (bwlab.tools.classroom on nbgrader): the builder's exercise headers, the
student versions, the autograder's scores, and the exercise table in docs/teaching.md.

The machinery is tested on a small synthetic notebook that the builder makes from a percent-format source
with two exercises (a predicted value, and a function whose hidden tests catch an answer the shown
case lets through). The same checks then run on every notebook in notebooks/ that holds exercise cells;
one without any is skipped, saying so. Every notebook is graded in its own course, as two pretend
students (the answer key pasted into the student version, and the untouched student version), the
notebooks in parallel worker processes, in the model tier, by bwlab.tools.grading (each submission in
a bubblewrap sandbox where this runs as root with bubblewrap installed, else with --sandbox none: the
answers are scored outside the learner's process either way). tests/test_grading_hostile.py grades a
class of hostile submissions.
"""
import json
import re
from pathlib import Path

import pytest

pytest.importorskip("nbgrader")          # the dev extra; GPU images may lack it
import nbformat  # noqa: E402

from bwlab.exercises import NotYet, check_function, check_value  # noqa: E402
from bwlab.tools import classroom as cls  # noqa: E402
from bwlab.tools import notebooks as nbt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = cls.notebooks()
TEACHING = ROOT / "docs" / "teaching.md"

SYNTHETIC = '''\
# %% [markdown]
# # A notebook with two exercises

# %%
from bwlab.util import ceil_div
from bwlab.exercises import check_value, check_function
rows, cols, elem_bytes = 64, 16, 2

# %% [markdown]
# ### Exercise 9.1 — the bytes of a box (1 point)
# Predict the bytes that a 64 x 16 box of 2-byte elements covers.

# %% nbgrader={"grade": false, "grade_id": "syn_box_bytes", "locked": false, "schema_version": 3, "solution": true}
box_bytes = None   # your prediction (an int)
### BEGIN SOLUTION
box_bytes = rows * cols * elem_bytes
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "syn_box_bytes_check", "locked": true, "points": 1, "schema_version": 3, "solution": false} tags=["raises-exception"]
check_value("bytes of the box", box_bytes, rows * cols * elem_bytes, rule="elements times element size",
            mistakes={rows * cols: "that is the number of elements, not of bytes"})

# %% [markdown]
# ### Exercise 9.2 — tiles that cover an extent (2 points)
# Write `tiles(n, t)`: how many tiles of `t` elements cover `n` elements.

# %% nbgrader={"grade": false, "grade_id": "syn_tiles", "locked": false, "schema_version": 3, "solution": true}
def tiles(n, t):
    answer = None
    ### BEGIN SOLUTION
    answer = (n + t - 1) // t
    ### END SOLUTION
    return answer

# %% nbgrader={"grade": true, "grade_id": "syn_tiles_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["nbval-ignore-output", "raises-exception"]
check_function("tiles", tiles, [(100, 64)], reference=ceil_div, rule="ceil(n / t)")
### BEGIN HIDDEN TESTS
check_function("tiles", tiles, [(128, 64), (1, 64), (65, 64)], reference=ceil_div, rule="ceil(n / t)")
### END HIDDEN TESTS

# %%
print("the cells after the exercises run:", ceil_div(100, 64))
'''
# Passes the shown case (100, 64) but not the hidden (128, 64): the hidden tests must cost its points.
PARTIAL_TILES = "def tiles(n, t):\n    return n // t + 1"


def test_every_placeholder_fails_with_no_answer_yet():
    """The student version's stubs (None, a function returning None, one raising NotImplementedError, no
    function at all) must fail the graded cell with NotYet saying 'no answer yet'."""
    def returns_none(n):
        return None

    def not_written(n):
        raise NotImplementedError

    attempts = [lambda: check_value("q", None, 4, rule="r"),
                lambda: check_value("q", ..., 4, rule="r"),
                lambda: check_function("f", None, [(1, 1)], rule="r"),
                lambda: check_function("f", returns_none, [(1, 1)], rule="r"),
                lambda: check_function("f", not_written, [(1, 1)], rule="r")]
    for attempt in attempts:
        with pytest.raises(NotYet, match="no answer yet"):
            attempt()


# ---------------------------------------------------------------------------------------------------
# the checks every notebook's student version and grades must pass

def _student_source(cell) -> str:
    """What the student version of a cell must hold, worked out here independently of nbgrader: a
    solution region becomes the stub (at the region's indentation), a hidden-test region disappears."""
    meta = cls._nbgrader(cell)
    out, skip = [], False
    for line in cell.source.splitlines():
        text = line.strip()
        if meta.get("solution") and text == "### BEGIN SOLUTION":
            out.append(line[:len(line) - len(line.lstrip())] + cls.CODE_STUB)
            skip = True
        elif meta.get("grade") and text == "### BEGIN HIDDEN TESTS":
            skip = True
        elif text in ("### END SOLUTION", "### END HIDDEN TESTS"):
            skip = False
        elif not skip:
            out.append(line)
    return "\n".join(out).rstrip()


def _regions(cell, begin, end) -> list[str]:
    text = cell.source
    return [m.strip() for m in re.findall(re.escape(begin) + r"(.*?)" + re.escape(end), text, re.S)]


def assert_student_version(solution: Path, release: Path):
    """(a) the student version: every cell as expected, no solution or hidden test text left, no outputs."""
    src, stu = cls.read(solution), cls.read(release)
    assert len(stu.cells) == len(src.cells)
    raw = release.read_text()
    for marker in (*cls.SOLUTION_MARKERS, *cls.HIDDEN_MARKERS):
        assert marker not in raw, f"{release.name} still holds {marker!r}"
    for i, (a, b) in enumerate(zip(src.cells, stu.cells)):
        assert b.source.rstrip() == _student_source(a), f"{release.name} cell {i}"
        assert cls._nbgrader(b).get("grade_id") == cls._nbgrader(a).get("grade_id")
        for hidden in (_regions(a, "### BEGIN SOLUTION", "### END SOLUTION")
                       + _regions(a, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")):
            assert hidden and hidden not in b.source, f"{release.name} cell {i} still holds {hidden!r}"
        assert not b.get("outputs"), f"{release.name} cell {i} keeps the solution's outputs"
    solutions = [c for c in stu.cells if cls._nbgrader(c).get("solution")]
    assert solutions and all(cls.CODE_STUB in c.source for c in solutions)


def assert_untouched_runs(check):
    """(b) the untouched student version, run end to end in the sandbox (a bounded time per cell, model
    tier) and scored outside it: every graded cell fails with NotYet 'no answer yet', nothing else fails."""
    res = check.results[cls.BLANK]
    assert res["status"] == "graded", res["reason"]
    code = [c for c in res["cells"] if c["type"] == "code"]
    assert code and all("stdout" in c for c in code), "the notebook did not run to its end"
    for i, cell in enumerate(res["cells"]):
        if cell["type"] == "graded":
            v = {e["grade_id"]: e for e in res["exercises"]}[cell["grade_id"]]
            assert not v["passed"], f"graded cell {cell['grade_id']} does not fail in the untouched version"
            assert re.search(r"^NotYet: .*no answer yet", v["message"], re.M), f"{cell['grade_id']}: {v['message']}"
        elif cell["type"] == "code":
            assert not cell.get("error"), f"cell {i} (not an exercise) raises {cell['error']}"


def assert_grades(check):
    """(c) the answer key pasted into the student version scores every point; the untouched one none."""
    ids = [e.grade_id for e in cls.exercises(check.solution)]
    points = {e.grade_id: float(e.points) for e in cls.exercises(check.solution)}
    key, blank = check.scores[cls.KEY], check.scores[cls.BLANK]
    assert key.cells == {g: (points[g], points[g]) for g in ids}
    assert blank.cells == {g: (0.0, points[g]) for g in ids}
    assert (key.score, key.max_score) == (sum(points.values()), sum(points.values()))
    assert blank.score == 0
    errs = cls.errors(check.results[cls.KEY])
    assert not errs, f"the answer key raises: {errs}"
    assert check.problems() == []


# ---------------------------------------------------------------------------------------------------
# the synthetic notebook

@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    d = tmp_path_factory.mktemp("synthetic")
    (d / "91_synthetic.py").write_text(SYNTHETIC)
    solution = nbt.build(d / "91_synthetic.py", execute=False, out_dir=d)
    check = cls.check_notebook(solution, d / "courses")
    answers = dict(cls.answer_key(solution), syn_tiles=PARTIAL_TILES)
    partial = d / "partial.ipynb"
    nbformat.write(cls.fill_in(check.release, answers), str(partial))
    cls.submit(check.course, "partial", partial, "91_synthetic")
    cls.autograde(check.course, ["91_synthetic"], student_id="partial", backend="model",
                  sandbox=cls.default_sandbox())
    pages = cls.feedback(check.course)
    return check, pages


def test_synthetic_student_version(synthetic):
    check, _ = synthetic
    assert_student_version(check.solution, check.release)
    # the expected sources spelled out once, so that the helper above is checked too
    cells = {cls._nbgrader(c).get("grade_id"): c.source for c in cls.read(check.release).cells}
    assert cells["syn_box_bytes"] == "box_bytes = None   # your prediction (an int)\n# your answer here"
    assert cells["syn_tiles"] == ("def tiles(n, t):\n    answer = None\n    # your answer here\n"
                                  "    return answer")
    assert cells["syn_tiles_check"].strip().splitlines() == [
        'check_function("tiles", tiles, [(100, 64)], reference=ceil_div, rule="ceil(n / t)")']


def test_synthetic_untouched_runs_and_fails_with_not_yet(synthetic):
    assert_untouched_runs(synthetic[0])


def test_synthetic_answer_key_full_untouched_zero(synthetic):
    assert_grades(synthetic[0])


def test_synthetic_hidden_tests_count(synthetic):
    check, _ = synthetic
    got = {s.student: s for s in cls.scores(check.course)}["partial"]
    assert got.cells == {"syn_box_bytes_check": (1.0, 1.0), "syn_tiles_check": (0.0, 2.0)}
    res = json.loads((check.course / "results" / "partial" / "91_synthetic.json").read_text())
    (_, gid, graded, ename, evalue), = cls.errors(res)
    assert (gid, graded, ename) == ("syn_tiles_check", True, "NotYet")
    assert "tiles(128, 64) returned 3" in evalue and "expected: 2" in evalue   # a hidden case, not the shown one


def test_synthetic_feedback_shows_the_score_and_the_message(synthetic):
    check, pages = synthetic
    by_student = {p.parts[-3]: p.read_text() for p in pages}
    assert set(by_student) == {*cls.KEYS, cls.BLANK, "partial"}
    blank = by_student[cls.BLANK]
    assert "Score: 0 / 3" in blank and "no answer yet" in blank
    assert "Score: 3 / 3" in by_student[cls.KEY]


def test_problems_name_what_is_wrong(synthetic):
    check, _ = synthetic
    swapped = cls.Check(check.assignment, check.course, check.solution, check.release,
                        {**{k: check.scores[cls.BLANK] for k in cls.KEYS}, cls.BLANK: check.scores[cls.KEY]},
                        {**{k: check.results[cls.BLANK] for k in cls.KEYS}, cls.BLANK: check.results[cls.KEY]})
    text = "\n".join(swapped.problems())
    assert "the answer key as answer_key scores 0 of 3" in text and "as answer_key_3 scores 0 of 3" in text
    assert "the untouched student version scores 3, not 0" in text
    assert "answer_key: cell 4 (syn_box_bytes_check) raises NotYet" in text    # fails in the key's run
    assert "untouched: graded cell syn_tiles_check fails with nothing" in text  # passes in the untouched


def test_a_later_cell_that_needs_an_answer_is_caught(synthetic):
    """A cell after an exercise that uses its answer breaks the student version: both the test's
    check and the selfcheck's problems() must say so (the result is doctored here, not re-run)."""
    import copy
    check, _ = synthetic
    res = copy.deepcopy(check.results[cls.BLANK])
    last = res["cells"][-1]
    assert last["type"] == "code" and not last.get("error")
    last["error"] = {"ename": "TypeError", "evalue": "unsupported operand type(s) for +: 'NoneType' and 'int'"}
    broken = cls.Check(check.assignment, check.course, check.solution, check.release, check.scores,
                       {**check.results, cls.BLANK: res})
    assert broken.problems() == [f"untouched: cell {len(res['cells']) - 1} (not an exercise) raises TypeError: "
                                 "unsupported operand type(s) for +: 'NoneType' and 'int'"]
    with pytest.raises(AssertionError, match="not an exercise.*TypeError"):
        assert_untouched_runs(broken)


def test_table_lists_every_exercise(synthetic):
    check, _ = synthetic
    text = cls.table([check.solution])
    assert "| `91_synthetic` | Exercise 9.1 — the bytes of a box (1 point) | `syn_box_bytes_check` | 1 |" in text
    assert "| `91_synthetic` | Exercise 9.2 — tiles that cover an extent (2 points) | `syn_tiles_check` | 2 |" in text
    assert "2 exercises in 1 notebook, 3 points in all." in text


def test_submit_refuses_an_unknown_notebook(synthetic, tmp_path):
    check, _ = synthetic
    stray = tmp_path / "07_other.ipynb"
    stray.write_text(json.dumps(nbformat.v4.new_notebook()))
    with pytest.raises(cls.ClassroomError, match="no assignment of that name .*known: 91_synthetic"):
        cls.submit(check.course, "alice", stray)
    with pytest.raises(cls.ClassroomError, match="student id"):
        cls.submit(check.course, "alice smith", check.release)


# ---------------------------------------------------------------------------------------------------
# the real notebooks

HAVE = [p for p in NOTEBOOKS if cls.exercises(p)]


def _need(path):
    if path not in HAVE:
        pytest.skip(f"notebooks/{path.name} holds no exercise cells yet (no nbgrader metadata): nothing "
                    "to release or grade")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return cls.check_all(HAVE, tmp_path_factory.mktemp("courses"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_student_version(path, graded):
    _need(path)
    assert_student_version(path, graded[path.stem].release)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_untouched_student_version_runs(path, graded):
    _need(path)
    assert_untouched_runs(graded[path.stem])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_answer_key_full_points_untouched_zero(path, graded):
    _need(path)
    assert_grades(graded[path.stem])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_exercise_cells_follow_the_conventions(path):
    """docs/teaching.md, "Adding an exercise": ids, the solution/grade pairing, points 1-3, the title."""
    _need(path)
    nb = cls.read(path)
    meta = [cls._nbgrader(c) for c in nb.cells]
    solutions = [m["grade_id"] for m in meta if m.get("solution")]
    grades = [m["grade_id"] for m in meta if m.get("grade")]
    for sid in solutions:
        assert re.fullmatch(r"[a-z]+_[a-z0-9_]+", sid), f"{sid}: ids are <stage>_<name>, lowercase"
        assert f"{sid}_check" in grades, f"solution {sid} has no grade cell {sid}_check"
    for ex in cls.exercises(path):
        assert 1 <= ex.points <= 3, f"{ex.grade_id}: {ex.points} points (1-3 each)"
        assert ex.title_points in (None, ex.points), \
            f"{ex.grade_id}: the title says {ex.title_points} points, the grade cell {ex.points}"


def test_exercise_ids_are_unique_across_notebooks():
    seen = {}
    for p in NOTEBOOKS:
        for c in cls.read(p).cells:
            gid = cls._nbgrader(c).get("grade_id")
            if gid:
                assert gid not in seen, f"{gid} is used in {seen[gid]} and {p.name}"
                seen[gid] = p.name


def test_committed_table_is_current():
    text = TEACHING.read_text()
    assert text == cls.replace_table(text, cls.table()), (
        "docs/teaching.md's exercise table is not current: run "
        "`python -m bwlab.tools.classroom table --write docs/teaching.md`")


def test_synthetic_run_all_goes_on_past_an_unanswered_check(synthetic):
    """Run All on the untouched student version runs every cell: nbclient, which like JupyterLab stops at
    the first error unless the cell is tagged raises-exception, reaches the last cell; each graded cell
    shows NotYet 'no answer yet'."""
    pytest.importorskip("nbclient")
    from nbclient import NotebookClient
    check, _ = synthetic
    nb = cls.read(check.release)
    graded = [c for c in nb.cells if cls._nbgrader(c).get("grade")]
    assert graded and all(nbt.RAISES in c.metadata.get("tags", []) for c in graded)
    with cls.environment("model"):
        NotebookClient(nb, kernel_name="python3", timeout=120, allow_errors=False).execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code)
    assert "the cells after the exercises run: 2" in "".join(o.get("text", "") for o in code[-1].outputs)
    for c in graded:
        (err,) = [o for o in c.outputs if o.output_type == "error"]
        assert err.ename == "NotYet" and "no answer yet" in err.evalue
        # shown as a short message (NotYet._render_traceback_), not the checker's frames
        shown = "\n".join(err.traceback)
        assert len(err.traceback) <= 4 and "Traceback" not in shown and "check_value(" not in shown, shown
