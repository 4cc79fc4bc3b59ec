"""The answer key, and the selfcheck: does the key score full points and an untouched notebook none?"""
from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from .course import autograde, ensure_secret, environment, scores, student, submit
from .exercises import _nbgrader, BLANK, ClassroomError, COURSE_ID, KEYS, read, SOLUTION_MARKERS


def _strip(source: str, markers) -> str:
    return "\n".join(l for l in source.splitlines() if l.strip() not in markers)


def answer_key(solution_nb) -> dict[str, str]:
    """{grade_id: source} of every solution cell, the BEGIN/END SOLUTION marker lines taken out (what a
    learner who wrote the model answer in place of the stub would have)."""
    nb = read(solution_nb) if isinstance(solution_nb, (str, Path)) else solution_nb
    return {_nbgrader(c)["grade_id"]: _strip(c.source, SOLUTION_MARKERS)
            for c in nb.cells if _nbgrader(c).get("solution")}


def fill_in(student_nb, answers: dict[str, str]):
    """A copy of a student notebook whose solution cells hold `answers` (by grade_id)."""
    import copy
    nb = copy.deepcopy(read(student_nb) if isinstance(student_nb, (str, Path)) else student_nb)
    for c in nb.cells:
        gid = _nbgrader(c).get("grade_id")
        if _nbgrader(c).get("solution"):
            if gid not in answers:
                raise ClassroomError(f"no answer for the solution cell {gid!r}")
            c.source = answers[gid]
    return nb


def errors(result: dict) -> list[tuple[int, str | None, bool, str, str]]:
    """(cell index, grade_id or None, is a graded cell, ename, evalue) of every error in a graded
    submission (bwlab.tools.grading's result): a learner's cell that raised in the sandbox, or a graded
    cell whose check failed (its message's last 'Name: ...' line names the error)."""
    verdicts = {e["grade_id"]: e for e in result.get("exercises", [])}
    out = []
    for i, c in enumerate(result.get("cells", [])):
        if c["type"] == "graded":
            v = verdicts.get(c["grade_id"], {})
            if not v.get("passed"):
                out.append((i, c["grade_id"], True, v.get("ename", ""), v.get("evalue", v.get("message", ""))))
        elif c.get("error"):
            out.append((i, None, False, c["error"]["ename"], c["error"]["evalue"]))
    return out


@dataclass
class Check:
    """One notebook graded as pretend students: the answer key under three student ids (three tokens:
    three sets of each student's numbers) and the untouched student version."""
    assignment: str
    course: Path
    solution: Path
    release: Path
    scores: dict                        # student -> Score
    results: dict                       # student -> bwlab.tools.grading's result (dict)

    def problems(self) -> list[str]:
        """What is wrong: the key short of full points or not graded, the untouched version above 0, a
        graded cell of the untouched version that does not fail with NotYet 'no answer yet', any other
        cell that raises."""
        out = []
        blank = self.scores[BLANK]
        for who in (*KEYS, BLANK):
            if self.scores[who].status != "graded":
                out.append(f"{who}: not graded: {self.scores[who].reason}")
        for who in KEYS:
            key = self.scores[who]
            if key.score != key.max_score:
                lost = [g for g, (s, m) in key.cells.items() if s != m]
                out.append(f"the answer key as {who} scores {key.score:g} of {key.max_score:g} (cells "
                           f"{', '.join(lost)})")
            for i, gid, graded, ename, evalue in errors(self.results[who]):
                out.append(f"{who}: cell {i} ({gid or 'not an exercise'}) raises {ename}: {evalue[:200]}")
        if blank.score != 0:
            out.append(f"the untouched student version scores {blank.score:g}, not 0")
        verdicts = {e["grade_id"]: e for e in self.results[BLANK].get("exercises", [])}
        for gid, v in verdicts.items():
            if v["passed"] or v.get("ename") != "NotYet" or "no answer yet" not in v.get("evalue", ""):
                what = "nothing" if v["passed"] else f"{v.get('ename')}: {v.get('evalue', '').splitlines()[0][:200]}"
                out.append(f"{BLANK}: graded cell {gid} fails with {what}, not NotYet 'no answer yet'")
        for i, gid, graded, e, v in errors(self.results[BLANK]):
            if not graded:
                out.append(f"{BLANK}: cell {i} ({gid or 'not an exercise'}) raises {e}: {v[:200]}")
        return out


def empty_gradebook(path) -> Path:
    """An nbgrader gradebook of this course holding nothing yet. nbgrader runs `alembic` (seconds) to
    stamp every new gradebook; courses that start from a copy of this one skip that."""
    from nbgrader.api import Gradebook
    path = Path(path).resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    with environment(), Gradebook(f"sqlite:///{path}", COURSE_ID):
        pass
    return path


def check_notebook(solution: Path, workdir: Path, backend: str | None = "model",
                   gradebook: Path | None = None, sandbox: str | None = None) -> Check:
    """Make a course for one notebook in workdir/<assignment> (from a copy of `gradebook`, an
    empty_gradebook(), when given); grade its answer key and its untouched student version there."""
    import nbformat
    solution = Path(solution)
    course = Path(workdir) / solution.stem
    shutil.rmtree(course, ignore_errors=True)
    course.mkdir(parents=True)
    if gradebook:
        shutil.copyfile(gradebook, course / "gradebook.db")
    release = student(course, [solution])[solution.stem]
    ensure_secret(course)                        # every pretend student on their own numbers
    keyed = course / "key.ipynb"
    nbformat.write(fill_in(release, answer_key(solution)), str(keyed))
    for who in KEYS:
        submit(course, who, keyed, solution.stem)
    from .. import grading
    # the key as learners are graded (the demonstrations that no answer needs are not run); the untouched
    # version with every cell run, since every cell must run cleanly in it
    autograde(course, [solution.stem], backend=backend, sandbox=sandbox or default_sandbox())
    submit(course, BLANK, release, solution.stem)
    autograde(course, [solution.stem], BLANK, backend=backend, sandbox=sandbox or default_sandbox(),
              limits=grading.Limits(run_every_cell=True))
    got = {s.student: s for s in scores(course)}
    res = {who: json.loads(grading._result_path(course, who, solution.stem).read_text())
           for who in (*KEYS, BLANK)}
    return Check(solution.stem, course, solution, release, got, res)


def default_sandbox() -> str:
    """bwrap where it can run (installed, and this is root); else 'none' (the answers are still scored
    outside the learner's process, but nothing isolates that process): for tests and the selfcheck of
    the instructor's own answer key, never for learners' submissions."""
    return "bwrap" if shutil.which("bwrap") and os.geteuid() == 0 else "none"


def check_all(paths, workdir: Path, jobs: int | None = None, backend: str | None = "model",
              sandbox: str | None = None) -> dict[str, Check]:
    """check_notebook for every notebook, `jobs` worker processes at a time (each notebook in its own
    course; the largest notebooks start first)."""
    import multiprocessing
    paths = sorted((Path(p) for p in paths), key=lambda p: -p.stat().st_size)
    if not paths:
        return {}
    gradebook = empty_gradebook(Path(workdir) / "empty_gradebook.db")
    jobs = min(jobs or max(2, os.cpu_count() or 2), len(paths))
    run = partial(check_notebook, workdir=workdir, backend=backend, gradebook=gradebook, sandbox=sandbox)
    if jobs == 1:
        done = [run(p) for p in paths]
    else:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            done = list(pool.map(run, paths))
    return {c.assignment: c for c in sorted(done, key=lambda c: c.assignment)}
