"""Running nbgrader for a course (in this process, through its NbGraderAPI: the same steps as its command
line, nbgrader's slow import paid once): student versions, tokens, submissions, autograding, feedback,
scores."""
from __future__ import annotations

import filecmp
import os
import shutil
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .exercises import CELL_TIMEOUT_S, ClassroomError, CODE_STUB, COURSE, COURSE_ID, ROOT, with_exercises


def settings(course) -> dict:
    """The course's nbgrader settings: what nbgrader_config.py holds and what every step here runs with."""
    return {
        "CourseDirectory": {"root": str(Path(course).resolve()), "course_id": COURSE_ID},
        # The learner's region between ### BEGIN/END SOLUTION becomes this line; the line before the
        # region leaves the answer as a placeholder, so the student version runs end to end.
        "ClearSolutions": {"code_stub": {"python": CODE_STUB}},
        "Execute": {"timeout": CELL_TIMEOUT_S},
        # nbgrader's autograde steps, its Execute made robust for the notebooks' widgets (HeadlessExecute)
        "Autograde": {"autograde_preprocessors": _autograde_preprocessors()},
    }


def _autograde_preprocessors() -> list[str]:
    from nbgrader.converters import Autograde
    from nbgrader.preprocessors import Execute
    default = Autograde.class_traits()["autograde_preprocessors"].default()
    return ["bwlab.tools.classroom.HeadlessExecute" if p is Execute else f"{p.__module__}.{p.__name__}"
            for p in default]


def config_text(course) -> str:
    """The course's nbgrader_config.py (for plain `nbgrader ...` commands run in the course directory)."""
    lines = ["# Written by `python -m bwlab.tools.classroom`; rewritten on every run (edit classroom.settings).",
             "c = get_config()  # noqa: F821"]
    for section, values in settings(course).items():
        lines += [f"c.{section}.{k} = {v!r}" for k, v in values.items()]
    return "\n".join(lines) + "\n"


@contextmanager
def environment(backend: str | None = None):
    """os.environ for an nbgrader step, restored afterwards: this Python's bin first on PATH (nbgrader
    runs `alembic` when it creates a gradebook), this checkout's bwlab importable in the kernels it
    starts, and BWLAB_BACKEND when a tier is forced."""
    saved = {k: os.environ.get(k) for k in ("PATH", "PYTHONPATH", "BWLAB_BACKEND")}
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), saved["PATH"] or ""])
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([saved["PYTHONPATH"]] if saved["PYTHONPATH"] else []))
    if backend:
        os.environ["BWLAB_BACKEND"] = backend
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _course(course) -> Path:
    course = Path(course or COURSE).resolve()
    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(config_text(course))
    return course


def nbgrader(course, step: str, *args, backend: str | None = None, **kwargs) -> str:
    """`NbGraderAPI(course).<step>(*args, **kwargs)` (generate_assignment, autograde, generate_feedback);
    its log, or ClassroomError with the log's tail and nbgrader's traceback."""
    from traitlets.config import Config
    from nbgrader.apps import NbGraderAPI
    cfg = Config()
    for section, values in settings(course).items():
        for k, v in values.items():
            setattr(getattr(cfg, section), k, v)
    with environment(backend), warnings.catch_warnings():
        # nbgrader's own gradebook code trips SQLAlchemy's autoflush warnings; they are not ours to fix
        warnings.filterwarnings("ignore", message=".*not in session.*")
        res = getattr(NbGraderAPI(config=cfg), step)(*args, **kwargs)
    log = res.get("log", "")
    if not res.get("success"):
        tail = "\n".join((log + res.get("error", "")).splitlines()[-40:])
        raise ClassroomError(f"nbgrader {step} {' '.join(map(str, args))} failed:\n{tail}")
    return log


def ensure_secret(course) -> Path:
    """The course's secret (bwlab.variants: every student's numbers come from it and their id), made
    once, readable by the instructor only; a course keeps it for good (a new one changes every
    student's numbers)."""
    from ... import variants
    path = variants.secret_file(course)
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(variants.new_secret() + b"\n")
    variants.read_secret(course)
    return path


def tokens(course, students) -> list[tuple[str, str]]:
    """(student id, token) for each student: what each one puts in bwlab-token.txt (or BWLAB_TOKEN).
    The first call makes the course secret: from then on `grade` grades every student on their own
    numbers (without one, everyone has the self-study numbers)."""
    from ... import variants
    from ..grading import STUDENT_ID
    ensure_secret(_course(course))
    secret = variants.read_secret(Path(course or COURSE))
    out = []
    for sid in students:
        if not STUDENT_ID.fullmatch(sid):
            raise ClassroomError(f"student id {sid!r}: use letters, digits, '_', '.', '@', '-' (not first)")
        out.append((sid, variants.token_for(secret, sid)))
    return out


def student(course=None, paths=None) -> dict[str, Path]:
    """Copy each notebook that holds exercises to source/<assignment>/ and let nbgrader write the student
    version to release/<assignment>/; returns {assignment: student notebook}."""
    course = _course(course)
    made = {}
    for nb in with_exercises(paths):
        name = nb.stem
        src = course / "source" / name
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir(parents=True)
        shutil.copyfile(nb, src / nb.name)
        nbgrader(course, "generate_assignment", name, force=True, create=True)
        made[name] = course / "release" / name / nb.name
        if not made[name].exists():
            raise ClassroomError(f"nbgrader wrote no {made[name]}")
    return made


def assignments(course=None) -> list[str]:
    return sorted(p.name for p in (Path(course or COURSE) / "source").glob("*") if p.is_dir())


def submit(course, student_id: str, path, assignment: str | None = None) -> Path:
    """Put a learner's notebook where nbgrader looks for it: submitted/<student>/<assignment>/<name>.ipynb
    (the assignment is the one whose name begins the file's name, unless given)."""
    course, path = Path(course or COURSE), Path(path)
    known = assignments(course)
    if assignment is None:
        matches = [a for a in known if path.stem.startswith(a)]
        assignment = max(matches, key=len) if matches else None
    if assignment not in known:
        raise ClassroomError(f"{path.name}: no assignment of that name in {course / 'source'} "
                             f"(known: {', '.join(known) or 'none: run `student` first'})")
    from ..grading import STUDENT_ID
    if not STUDENT_ID.fullmatch(student_id):
        raise ClassroomError(f"student id {student_id!r}: use letters, digits, '_', '.', '@', '-' (not first)")
    dest = course / "submitted" / student_id / assignment / f"{assignment}.ipynb"
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not (dest.exists() and filecmp.cmp(path, dest, shallow=False)):   # unchanged: not graded again
        shutil.copyfile(path, dest)
    return dest


def collect(course, folder, id_map=None) -> tuple[list[Path], list]:
    """Copy FOLDER/<student>/**/*.ipynb into submitted/ (bwlab.tools.grading.collect: learning-platform
    folder names through the id map `id_map`, a CSV path; two files for one notebook refused);
    returns (copied, problems)."""
    from .. import grading
    try:
        ids = grading.load_id_map(id_map) if id_map else None
        copied, problems = grading.collect(_course(course), folder, ids)
    except grading.GradingError as e:
        raise ClassroomError(str(e)) from None
    if not copied and not problems:
        raise ClassroomError(f"{folder}: no <student>/<notebook>.ipynb found")
    return copied, problems


def submitted(course=None) -> list[tuple[str, str]]:
    """(assignment, student) of every submission."""
    return sorted((p.name, p.parent.name) for p in (Path(course or COURSE) / "submitted").glob("*/*")
                  if p.is_dir())


def autograde(course=None, assignment_ids=None, student_id: str | None = None,
              backend: str | None = None, force: bool = False, jobs: int = 1, sandbox: str = "bwrap",
              limits=None, progress=None):
    """Grade the submissions (of these assignments, of this student) that have no finished result for
    their current file (all of them with `force`), each in its own sandbox, `jobs` at a time; returns
    bwlab.tools.grading.Batch (what was graded, what FAILED and why, what was skipped)."""
    from .. import grading
    course = _course(course)
    try:
        with environment(backend):
            return grading.grade_all(course, jobs=jobs, limits=limits, sandbox=sandbox, force=force,
                                     assignment_ids=assignment_ids, student_id=student_id, progress=progress)
    except grading.GradingError as e:
        raise ClassroomError(str(e)) from None


def feedback(course=None, assignment_ids=None) -> list[Path]:
    """Write the feedback page of every result again (feedback/<student>/<assignment>/<assignment>.html)."""
    from .. import grading
    course = _course(course)
    return [grading.write_feedback(course, r) for r in grading.read_results(course)
            if not assignment_ids or r["assignment"] in assignment_ids]


@dataclass
class Score:
    student: str
    assignment: str
    score: float
    max_score: float
    cells: dict = field(default_factory=dict)      # grade_id -> (score, max_score)
    status: str = "graded"                          # or FAILED (then `reason` says why; nothing was scored)
    reason: str = ""


def scores(course=None) -> list[Score]:
    """Every submission's result (results/), each graded cell's score with it."""
    from .. import grading
    course = Path(course or COURSE).resolve()
    results = grading.read_results(course)
    if not results:
        raise ClassroomError(f"{course / 'results'} holds no results: nothing was graded in {course}")
    out = []
    for r in results:
        possible = r.get("max_score")
        if possible is None:
            src = course / "source" / r["assignment"] / f"{r['assignment']}.ipynb"
            possible = sum(g.points for g in grading.graded_cells(src)) if src.exists() else 0.0
        s = Score(r["student"], r["assignment"], float(r.get("score") or 0), float(possible),
                  status=r.get("status", "FAILED"), reason=r.get("reason", ""))
        for e in r.get("exercises", []):
            s.cells[e["grade_id"]] = (float(e["points"]), float(e["max_points"]))
        out.append(s)
    return sorted(out, key=lambda s: (s.student, s.assignment))


def format_scores(rows: list[Score], detail: bool = False) -> str:
    """One line per student: the score of each assignment ('-' where nothing was submitted, which
    counts 0 in the total; FAILED where it could not be graded: see the reasons) and the total out of
    every assignment's points."""
    if not rows:
        return "no graded submissions yet"
    maxes = {r.assignment: r.max_score for r in rows}
    names = sorted(maxes)
    by = {(r.student, r.assignment): r for r in rows}
    lines = ["student".ljust(16) + "".join(n[:16].rjust(18) for n in names) + "total".rjust(12)]
    for st in sorted({r.student for r in rows}):
        mine = [by.get((st, n)) for n in names]
        got = sum(r.score for r in mine if r and r.status == "graded")
        lines.append(st[:16].ljust(16) + "".join(
            ("-" if not r else "FAILED" if r.status != "graded" else f"{r.score:g} / {r.max_score:g}").rjust(18)
            for r in mine) + f"{got:g} / {sum(maxes.values()):g}".rjust(12))
        if detail:
            for r in mine:
                for gid, (s, m) in (r.cells.items() if r else ()):
                    lines.append(f"    {r.assignment:16s} {gid:34s} {s:g} / {m:g}")
    failed = [r for r in rows if r.status != "graded"]
    if failed:
        lines.append("")
        from ..grading import printable
        lines += [f"FAILED {r.student} / {r.assignment}: {printable(r.reason)}" for r in failed]
    return "\n".join(lines)
