"""The instructor's side of the graded exercises: student versions, autograding, scores (nbgrader).

Every notebook's exercises are nbgrader cells (their metadata is written on the `# %% nbgrader={...}`
lines of `notebooks/src/*.py`, jupytext's cell-metadata syntax; the builder checks it). Nothing here
knows a particular exercise: everything is found from that metadata. docs/teaching.md is the guide.

    python -m bwlab.tools.classroom student            # release/<assignment>/<assignment>.ipynb
    python -m bwlab.tools.classroom tokens ID ...      # each student's token (their numbers), CSV
    python -m bwlab.tools.classroom collect DIR [--id-map FILE.csv]   # DIR/<student>/NN_name.ipynb -> submitted/
    python -m bwlab.tools.classroom submit --student NAME FILE.ipynb ...
    python -m bwlab.tools.classroom autograde [ASSIGNMENT ...] [-j N] [--force] [--sandbox bwrap|none]
    python -m bwlab.tools.classroom feedback                    # feedback/<student>/<assignment>/*.html
    python -m bwlab.tools.classroom scores [--detail]           # from results/
    python -m bwlab.tools.classroom grade [--collect DIR] [-j N]   # collect + autograde + scores, CSV
    python -m bwlab.tools.classroom selfcheck [NOTEBOOK ...]    # the answer key scores full, a blank 0
    python -m bwlab.tools.classroom table [--write FILE | --check FILE]
    python -m bwlab.tools.classroom bench N [-j J] [--workdir DIR]   # grade a made-up class of N: timings

The course directory (default `build/classroom/`, `--course DIR`) is an ordinary nbgrader course: one
assignment per notebook (`01_tma_load` holds `01_tma_load.ipynb`), `source/` the solution notebooks,
`release/` the student versions, `submitted/<student>/<assignment>/` what comes back, `autograded/`,
`results/<student>/<assignment>.json`, `feedback/`, `grades.csv` and `exercise_stats.csv`. nbgrader
(through its NbGraderAPI, with the settings of `settings()`, also written to the course's
`nbgrader_config.py`) makes the student versions; grading is bwlab.tools.grading's: every submission
in its own sandbox, its answers scored outside it by the grader's own copy of the checks.

Exit codes: 0 done, 1 something to look at (a failed nbgrader step, a submission that could not be
graded, a stale table, a failed selfcheck, no exercises found, nothing submitted), 2 usage.
"""
from __future__ import annotations

import argparse
import filecmp
import json
import os
import re
import shutil
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NB_DIR = ROOT / "notebooks"
COURSE = ROOT / "build" / "classroom"
COURSE_ID = "bwlab"
CODE_STUB = "# your answer here"
CELL_TIMEOUT_S = 300          # nbgrader's per-cell limit when it executes a submission
SOLUTION_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")
HIDDEN_MARKERS = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
KEY, BLANK = "answer_key", "untouched"      # the selfcheck's pretend students: the key, the untouched version,
KEYS = (KEY, "answer_key_2", "answer_key_3")  # and the key again under two more ids (other numbers)
TABLE_BEGIN = "<!-- BEGIN exercise table: python -m bwlab.tools.classroom table --write docs/teaching.md -->"
TABLE_END = "<!-- END exercise table -->"
_POINTS_IN_TITLE = re.compile(r"\((\d+(?:\.\d+)?) points?\)")


class ClassroomError(RuntimeError):
    """An nbgrader step failed, or the course directory is not what a step needs; the message says which."""


# ---------------------------------------------------------------------------------------------------
# what the notebooks hold

@dataclass(frozen=True)
class Exercise:
    notebook: str       # the notebook's stem, which is also the assignment's name
    grade_id: str       # the graded cell's id (nbgrader's grade_id)
    points: float
    intro: str          # the first line of the markdown cell that introduces it, without '#'

    @property
    def title_points(self) -> float | None:
        """The points the intro's title announces ('(2 points)'), or None when it names none."""
        m = _POINTS_IN_TITLE.search(self.intro)
        return float(m.group(1)) if m else None


def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {}) or {}


def read(path):
    import nbformat
    return nbformat.read(str(path), as_version=4)


def exercises(path) -> list[Exercise]:
    """The graded cells of a notebook, in order, each with its points and its intro's first line."""
    nb, stem = read(path), Path(path).stem
    found = []
    for i, cell in enumerate(nb.cells):
        meta = _nbgrader(cell)
        if not meta.get("grade"):
            continue
        intro = ""
        for prev in reversed(nb.cells[:i]):
            if prev.cell_type == "markdown":
                lines = [l for l in prev.source.splitlines() if l.strip()]
                intro = lines[0].lstrip("#").strip() if lines else ""
                break
        pts = float(meta.get("points", 0))
        found.append(Exercise(stem, meta["grade_id"], int(pts) if pts.is_integer() else pts, intro))
    return found


def notebooks(paths=None) -> list[Path]:
    """The notebooks to work on: `paths`, or every notebooks/NN_*.ipynb."""
    return [Path(p) for p in paths] if paths else sorted(NB_DIR.glob("[0-9][0-9]*_*.ipynb"))


def with_exercises(paths=None) -> list[Path]:
    return [p for p in notebooks(paths) if exercises(p)]


def table(paths=None) -> str:
    """A markdown table of every exercise (notebook, title, grade id, points) and the totals."""
    found = [ex for p in notebooks(paths) for ex in exercises(p)]
    if not found:
        return "No notebook holds graded exercises yet.\n"
    rows = ["| notebook | exercise | graded cell | points |", "|---|---|---|---|"]
    rows += [f"| `{ex.notebook}` | {ex.intro.replace('|', chr(92) + '|') or '(no intro)'} | `{ex.grade_id}` | "
             f"{ex.points} |" for ex in found]
    def n(count, word):
        return f"{count} {word}{'s' if count != 1 else ''}"
    total = n(len(found), "exercise"), n(len({ex.notebook for ex in found}), "notebook"), \
        n(sum(ex.points for ex in found), "point")
    return "\n".join(rows) + "\n\n{} in {}, {} in all.\n".format(*total)


def replace_table(text: str, new_table: str) -> str:
    """`text` with the block between TABLE_BEGIN and TABLE_END replaced by `new_table`."""
    if TABLE_BEGIN not in text or TABLE_END not in text:
        raise ClassroomError(f"the file has no exercise-table markers ({TABLE_BEGIN!r} ... {TABLE_END!r})")
    head, rest = text.split(TABLE_BEGIN, 1)
    _, tail = rest.split(TABLE_END, 1)
    return f"{head}{TABLE_BEGIN}\n{new_table.rstrip()}\n{TABLE_END}{tail}"


# ---------------------------------------------------------------------------------------------------
# running nbgrader (in this process, through its NbGraderAPI: the same steps as its command line, but
# nbgrader's slow import is paid once, not once per step)

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


@lru_cache(maxsize=None)
def _headless_execute():
    from nbgrader.preprocessors import Execute
    from .headless import headless
    return headless(Execute)


def __getattr__(name):
    # HeadlessExecute: nbgrader's Execute preprocessor without the lost wake-ups that stall nbclient on
    # the notebooks' Output widgets (bwlab.tools.notebooks.headless); made on first use, since importing
    # nbgrader takes seconds.
    if name == "HeadlessExecute":
        return _headless_execute()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    from .. import variants
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
    from .. import variants
    from .grading import STUDENT_ID
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
    from .grading import STUDENT_ID
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
    from . import grading
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
    from . import grading
    course = _course(course)
    try:
        with environment(backend):
            return grading.grade_all(course, jobs=jobs, limits=limits, sandbox=sandbox, force=force,
                                     assignment_ids=assignment_ids, student_id=student_id, progress=progress)
    except grading.GradingError as e:
        raise ClassroomError(str(e)) from None


def feedback(course=None, assignment_ids=None) -> list[Path]:
    """Write the feedback page of every result again (feedback/<student>/<assignment>/<assignment>.html)."""
    from . import grading
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
    from . import grading
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
        from .grading import printable
        lines += [f"FAILED {r.student} / {r.assignment}: {printable(r.reason)}" for r in failed]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# the answer key, and the selfcheck: does the key score full points and an untouched notebook none?

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
    from . import grading
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


# ---------------------------------------------------------------------------------------------------
# a made-up class, graded against the clock

BENCH_KINDS = ("key", "half", "edits_everything", "blank", "key", "half", "scratch", "key", "half", "key")


def bench_class(n: int, workdir: Path, paths=None, jobs: int = 2, backend: str | None = "model",
                sandbox: str = "bwrap", run_every_cell: bool = False, out=sys.stdout) -> dict:
    """Make a course of `paths` (default every notebook with exercises) in `workdir`, a class of `n`
    students (each hands in every notebook: the answer key, half of it, the untouched version, the key
    with a scratch cell that raises, or the key with every cell of the student version edited so that
    the grader runs each one), grade it `jobs` at a time as `grade --collect` does, and print wall
    time, CPU time and per-submission figures. Returns them as a dict."""
    import nbformat
    import resource
    import time
    from . import grading
    from .. import variants
    workdir = Path(workdir).resolve()
    if workdir.exists() and any(workdir.iterdir()) and not (workdir / "bench.json").exists() \
            and not (workdir / "course" / "nbgrader_config.py").exists():
        raise ClassroomError(f"{workdir} is not empty and holds no earlier bench: give an empty or new --workdir")
    shutil.rmtree(workdir, ignore_errors=True)
    course, subs = workdir / "course", workdir / "submissions"
    released = student(course, paths)
    variants.secret_file(course).write_text(f"bench {os.urandom(32).hex()}\n")
    keys = {a: answer_key(course / "source" / a / f"{a}.ipynb") for a in released}
    for i in range(n):
        sid, kind = f"s{i:03d}", BENCH_KINDS[i % len(BENCH_KINDS)]
        for a, rel in released.items():
            key = keys[a]
            if kind == "blank":
                nb = read(rel)
            elif kind == "half":            # the first half of the answers, the rest as handed out
                untouched = answer_key(rel)
                nb = fill_in(rel, {g: key[g] if i < (len(key) + 1) // 2 else untouched[g] for i, g in enumerate(key)})
            else:
                nb = fill_in(rel, key)
            if kind == "scratch":
                nb.cells.insert(2, nbformat.v4.new_code_cell("scratch = 1 / 0   # a learner's experiment"))
            if kind == "edits_everything":
                for c in nb.cells:
                    if c.cell_type == "code" and not _nbgrader(c).get("grade"):
                        c.source += "\n# mine"
            (subs / sid).mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, str(subs / sid / f"{a}.ipynb"))
    print(f"bench: {n} students x {len(released)} notebooks in {subs}; grading {jobs} at a time", file=out, flush=True)

    def machine_busy() -> float:          # CPU seconds of the whole machine (every core): /proc/stat
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:8]]
        return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")

    collect(course, subs)
    busy0, t0 = machine_busy(), time.monotonic()
    r0 = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    batch = autograde(course, backend=backend, jobs=jobs, sandbox=sandbox,
                      limits=grading.Limits(run_every_cell=run_every_cell))
    wall, busy = time.monotonic() - t0, machine_busy() - busy0
    r1 = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    grader_cpu = sum(b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime for a, b in zip(r0, r1))
    results = [r for _, _, r in batch.graded]
    secs = sorted(r.get("seconds") or 0.0 for r in results)
    cpu = [(r.get("cpu_s") or {}).get("grader", 0.0) + (r.get("cpu_s") or {}).get("sandbox", 0.0) for r in results]
    per_nb: dict = {}
    for (_, a, r), c in zip(batch.graded, cpu):
        per_nb.setdefault(a, []).append((r.get("seconds") or 0.0, c))
    m = len(results)
    sub_cpu = sum(cpu)
    stats = {"students": n, "submissions": m, "jobs": jobs, "run_every_cell": run_every_cell, "wall_s": round(wall, 1),
             "machine_cpu_s": round(busy, 1), "grader_cpu_s": round(grader_cpu, 1),
             "submission_cpu_s": round(sub_cpu, 1), "cpu_per_submission_s": round(sub_cpu / max(m, 1), 2),
             "class_of_100_on_2_idle_cores_min": round(sub_cpu / max(n, 1) * 100 / 2 / 60, 1),
             "wall_per_submission_s": {"median": secs[m // 2] if m else 0, "p90": secs[int(m * 0.9)] if m else 0,
                                       "max": secs[-1] if m else 0},
             "failed": len(batch.failed), "cores": os.cpu_count()}
    print(f"graded {m} submissions of {n} students in {wall:.1f} s wall ({jobs} at a time, {os.cpu_count()} cores)",
          file=out)
    print(f"CPU: {sub_cpu:.1f} s for the submissions ({sub_cpu / max(m, 1):.2f} s each: the grader's process for it "
          f"and the processes in its sandboxes), {grader_cpu:.1f} s of the batch's own processes (the grader, its "
          f"workers, bubblewrap); the whole machine was busy {busy:.1f} CPU-s meanwhile (other work included)",
          file=out)
    print("per submission, wall s (each in its own sandbox): median {median:.2f}, p90 {p90:.2f}, max {max:.2f}"
          .format(**stats["wall_per_submission_s"]), file=out)
    for a, v in sorted(per_nb.items()):
        print(f"  {a:24s} wall mean {sum(w for w, _ in v) / len(v):6.2f} s max {max(w for w, _ in v):6.2f} s   CPU mean "
              f"{sum(c for _, c in v) / len(v):6.2f} s  ({len(v)} graded)", file=out)
    if batch.failed:
        print(f"FAILED: {len(batch.failed)} (" + "; ".join(f"{s}/{a}: {r['reason'][:80]}" for s, a, r in
                                                          batch.failed[:5]) + ")", file=out)
    per_student = wall / max(n, 1)
    print(f"=> {per_student:.1f} s of wall time per student at -j {jobs} here; 100 students: about "
          f"{100 * per_student / 60:.0f} min at this rate. From the CPU time: {sub_cpu / max(n, 1):.1f} CPU-s a student, "
          f"100 students on 2 idle cores about {stats['class_of_100_on_2_idle_cores_min']:.0f} min", file=out, flush=True)
    (workdir / "bench.json").write_text(json.dumps(stats, indent=1))
    return stats


# ---------------------------------------------------------------------------------------------------
# command line

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bwlab.tools.classroom",
                                 description="Student versions, autograding and scores of bwlab's exercises.")
    ap.add_argument("--course", type=Path, default=COURSE, help="the nbgrader course directory (%(default)s)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("student", help="student versions of the notebooks into release/")
    s.add_argument("notebooks", nargs="*", type=Path)
    s = sub.add_parser("tokens", help="each student's token (their numbers): CSV student,token")
    s.add_argument("students", nargs="*", help="student ids (default: one per line on stdin)")
    s = sub.add_parser("submit", help="put learners' notebooks into submitted/<student>/<assignment>/")
    s.add_argument("--student", required=True)
    s.add_argument("files", nargs="+", type=Path)
    s = sub.add_parser("collect", help="submit DIR/<student>/*.ipynb")
    s.add_argument("folder", type=Path)
    s.add_argument("--id-map", type=Path, default=None,
                   help="CSV with columns folder,student: learning-platform folder names -> student ids")
    for name in ("autograde", "grade"):
        s = sub.add_parser(name, help="grade in sandboxes" + (" + scores (after --collect)" if name == "grade" else ""))
        s.add_argument("assignments", nargs="*")
        s.add_argument("--student", default=None)
        s.add_argument("--backend", choices=("model", "hybrid", "auto"), default="model",
                       help="BWLAB_BACKEND for the graded runs (default model: a grade never depends on the "
                            "machine, and no learner's kernel runs on it)")
        s.add_argument("--force", action="store_true", help="grade again what was graded already")
        s.add_argument("-j", "--jobs", type=int, default=1, help="submissions graded at a time (default 1)")
        s.add_argument("--sandbox", choices=("bwrap", "none"), default="bwrap",
                       help="bwrap (default); none only inside a throw-away grading container (docs/teaching.md)")
        s.add_argument("--cell-timeout", type=float, default=None, help="seconds per cell (default 120)")
        s.add_argument("--call-timeout", type=float, default=None,
                       help="seconds per call of a learner's function by a check (default 10)")
        s.add_argument("--grace", type=float, default=None,
                       help="seconds more before a cell that ignores its timeout ends the sandbox (default 10)")
        s.add_argument("--exercise-time", type=float, default=None,
                       help="seconds of a learner's calls for one exercise, all its cases (default 6 call timeouts)")
        s.add_argument("--run-every-cell", action="store_true",
                       help="run the student version's unchanged demonstration cells too, even where no answer needs them")
        s.add_argument("--memory", type=int, default=None,
                       help="MiB of memory for each sandbox, every process, shared memory and /tmp included (default 4096)")
        s.add_argument("--check-time", type=float, default=None,
                       help="seconds (CPU, and wall besides the learner's calls) of one graded cell's own check, "
                            "compiling and evaluating text answers included (default 60)")
        s.add_argument("--check-memory", type=int, default=None,
                       help="MiB of memory one graded cell's check may use (default 2048)")
        if name == "grade":
            s.add_argument("--collect", type=Path, default=None, help="first submit DIR/<student>/*.ipynb")
            s.add_argument("--id-map", type=Path, default=None,
                           help="CSV with columns folder,student: learning-platform folder names -> student ids")
    s = sub.add_parser("feedback", help="write every result's HTML feedback page again")
    s.add_argument("assignments", nargs="*")
    s = sub.add_parser("scores", help="the scores in results/")
    s.add_argument("--detail", action="store_true", help="every graded cell too")
    s = sub.add_parser("selfcheck", help="grade the answer key (full points) and the untouched version (0)")
    s.add_argument("notebooks", nargs="*", type=Path)
    s.add_argument("--backend", choices=("model", "hybrid", "auto"), default="model")
    s.add_argument("--jobs", type=int, default=None)
    s.add_argument("--workdir", type=Path, default=COURSE.parent / "classroom-selfcheck")
    s = sub.add_parser("bench", help="grade a made-up class of N students (every notebook each) and time it")
    s.add_argument("n", type=int)
    s.add_argument("notebooks", nargs="*", type=Path)
    s.add_argument("-j", "--jobs", type=int, default=2)
    s.add_argument("--backend", choices=("model", "hybrid", "auto"), default="model")
    s.add_argument("--sandbox", choices=("bwrap", "none"), default="bwrap")
    s.add_argument("--workdir", type=Path, default=COURSE.parent / "classroom-bench")
    s.add_argument("--run-every-cell", action="store_true", help="grade as --run-every-cell does (for comparison)")
    s = sub.add_parser("table", help="the markdown table of every exercise")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--write", type=Path, help="replace the table between the markers in this file")
    g.add_argument("--check", type=Path, help="exit 1 if this file's table is not current")
    a = ap.parse_args(argv)
    for stream in (sys.stdout, sys.stderr):     # a learner's odd characters never stop the report
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    try:
        return _run(a)
    except ClassroomError as e:
        print(f"classroom {a.cmd}: {e}", file=sys.stderr)
        return 1


def _run(a) -> int:
    if a.cmd == "student":
        made = student(a.course, a.notebooks or None)
        if not made:
            print("no notebook holds graded exercise cells (nbgrader metadata): nothing to release", file=sys.stderr)
            return 1
        for name, path in made.items():
            print(f"{name}: {len(exercises(path))} graded cells -> {path}")
        return 0
    if a.cmd == "tokens":
        ids = a.students or [line.strip() for line in sys.stdin if line.strip()]
        try:
            rows = tokens(a.course, ids)
        except ValueError as e:       # no secret yet (bwlab.variants.TokenError)
            raise ClassroomError(str(e)) from None
        print("student,token")
        for sid, tok in rows:
            print(f"{sid},{tok}")
        return 0
    if a.cmd == "submit":
        for f in a.files:
            print(submit(a.course, a.student, f))
        return 0
    if a.cmd == "collect":
        copied, problems = collect(a.course, a.folder, a.id_map)
        for p in copied:
            print(p)
        for p in problems:
            print(f"PROBLEM {p}", file=sys.stderr)
        return 1 if problems else 0
    if a.cmd in ("autograde", "grade"):
        problems = []
        if a.cmd == "grade" and a.collect:
            copied, problems = collect(a.course, a.collect, a.id_map)
            print(f"collected {len(copied)} notebooks from {a.collect}")
        backend = None if a.backend in (None, "auto") else a.backend
        if not submitted(a.course):
            print(f"no submissions in {Path(a.course) / 'submitted'}", file=sys.stderr)
            return 1
        from . import grading
        limits = grading.Limits(**{k: v for k, v in (("cell_timeout", a.cell_timeout), ("grace", a.grace),
                                                           ("call_timeout", a.call_timeout),
                                                           ("exercise_calls_s", a.exercise_time),
                                                           ("run_every_cell", a.run_every_cell),
                                                           ("memory_bytes", a.memory and a.memory << 20),
                                                           ("check_s", a.check_time),
                                                           ("check_memory_bytes", a.check_memory and a.check_memory << 20))
                                    if v})
        if a.sandbox == "bwrap":
            print(grading.isolation.describe(grading.isolation.detect()), flush=True)

        def progress(student_id, assignment, result):
            print(f"  {student_id}/{assignment}: " + (f"{result['score']:g} / {result['max_score']:g}"
                  if result["status"] == "graded" else f"FAILED ({grading.printable(result['reason'])})"), flush=True)

        batch = autograde(a.course, a.assignments or None, a.student, backend, a.force, a.jobs, a.sandbox,
                          limits, progress)
        problems += batch.problems
        print("every student graded on their own numbers (the course secret)" if batch.own_numbers else
              "every student graded on the self-study numbers (no course secret: `tokens` makes one)")
        print(f"graded {len(batch.graded)} submissions in {batch.seconds:.0f} s ({a.jobs} at a time); "
              f"{len(batch.skipped)} unchanged since they were graded (--force grades them again)")
        print(f"results, feedback, grades.csv and exercise_stats.csv in {Path(a.course)}")
        if a.cmd == "grade":
            print(format_scores(scores(a.course)))
        for p in problems:
            print(f"PROBLEM {p}", file=sys.stderr)
        if a.cmd == "autograde":            # grade's table above ends with every FAILED and its reason
            for s, n, r in batch.failed:
                print(f"FAILED {s} / {n}: {grading.printable(r['reason'])}", file=sys.stderr)
        return 1 if problems or batch.failed else 0
    if a.cmd == "feedback":
        for p in feedback(a.course, a.assignments or None):
            print(p)
        return 0
    if a.cmd == "scores":
        print(format_scores(scores(a.course), a.detail))
        return 0
    if a.cmd == "selfcheck":
        paths = with_exercises(a.notebooks or None)
        if not paths:
            print("no notebook holds graded exercise cells: nothing to check", file=sys.stderr)
            return 1
        bad = 0
        backend = None if a.backend == "auto" else a.backend
        for name, c in check_all(paths, a.workdir, a.jobs, backend).items():
            probs = c.problems()
            bad += bool(probs)
            key = min((c.scores[k] for k in KEYS), key=lambda s: s.score)
            print(f"{name}: answer key {key.score:g} / {key.max_score:g} (the lowest of {len(KEYS)} tokens), untouched "
                  f"{c.scores[BLANK].score:g}: " + ("ok" if not probs else "PROBLEMS"))
            for p in probs:
                print(f"    {p}")
        return 1 if bad else 0
    if a.cmd == "bench":
        if a.n < 1:
            print("bench: N is at least 1", file=sys.stderr)
            return 2
        stats = bench_class(a.n, a.workdir, a.notebooks or None, a.jobs, None if a.backend == "auto" else a.backend,
                            a.sandbox, a.run_every_cell)
        return 1 if stats["failed"] else 0
    if a.cmd == "table":
        text = table()
        if a.write:
            a.write.write_text(replace_table(a.write.read_text(), text))
            print(f"wrote the exercise table into {a.write}")
        elif a.check:
            if replace_table(a.check.read_text(), text) != a.check.read_text():
                print(f"{a.check}: the exercise table is not current; run "
                      f"`python -m bwlab.tools.classroom table --write {a.check}`", file=sys.stderr)
                return 1
            print(f"{a.check}: the exercise table is current")
        else:
            print(text, end="")
        return 0
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
