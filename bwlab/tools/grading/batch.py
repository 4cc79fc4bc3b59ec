"""Grading one submission and a batch of them."""
from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from ... import exercises as _exercises
from ... import variants
from .common import GradingError, Limits, PACKAGE, STUDENT_ID, SandboxGone
from .planning import _nbgrader, _source, course_names, graded_cells, plan, read_submission, skippable
from .results import (_read, _result_path, _sha, assignments, feedback_path, grader_version, write_csv,
                      write_feedback, write_result)
from .collecting import Problem
from .sandbox import sandbox_mode
from .session import Session
from .jail import jailed_verdict


def grade_one(submission: Path, source_nb: Path, release_nb: Path, limits: Limits, mode: str,
              token: str | None = None) -> dict:
    """Grade one submitted notebook; the result as a dict (see the module's docstring). `token` is the
    student's (bwlab.variants.token_for: their numbers, in the sandbox and in the checks here; None:
    the self-study numbers). Never raises for anything the submission does: that ends as status FAILED
    with a reason."""
    t0, cpu0 = time.monotonic(), time.process_time()
    graded, names = graded_cells(source_nb), course_names(source_nb)
    release = json.loads(Path(release_nb).read_text())
    solution_ids = [_nbgrader(c)["grade_id"] for c in release["cells"] if _nbgrader(c).get("solution")]
    result = {"status": "graded", "reason": "", "notes": [], "cells": [],
              "max_score": sum(g.points for g in graded),
              "exercises": [{"grade_id": g.grade_id, "points": 0.0, "max_points": g.points, "passed": False,
                             "message": "not graded"} for g in graded]}
    try:
        nb = read_submission(submission)
    except (OSError, ValueError) as e:
        return _failed(result, str(e), t0)
    cells, result["notes"] = plan(nb, graded, solution_ids)
    if not limits.run_every_cell:
        release_code = {_source(c) for c in release["cells"] if c.get("cell_type") == "code"
                        and not _nbgrader(c).get("solution") and not _nbgrader(c).get("grade")}
        try:
            skip = skippable(cells, release_code, names.answers)
        except (RecursionError, MemoryError):     # a learner's cell nested past what is analysed: run all
            skip = set()
        for i in skip:
            cells[i].update(run=None, skipped=True)
    result["cells"] = cells
    runs = [c["run"] for c in cells if c["run"] is not None]
    try:
        session = Session(runs, limits, mode, Path(submission) if mode == "bwrap" else None, token)
    except SandboxGone as e:
        _attach(cells, getattr(e, "events", []))
        return _failed(result, f"the notebook did not run to its end: {e}", t0)
    try:
        _attach(cells, session.events)
        with variants.using(token), _hidden_preloaded(graded, solution_ids):
            for g, ex in zip(graded, result["exercises"]):
                v = jailed_verdict(g.code, session, names, limits)
                ex.update(v, points=g.points if v["passed"] else 0.0)
    finally:
        session.close()
    if session.incomplete:          # some answers were never asked for: a partial run is not a grade
        return _failed(result, f"not every exercise could be evaluated ({session.incomplete})", t0, keep=True)
    result["score"] = sum(ex["points"] for ex in result["exercises"])
    result["seconds"] = round(time.monotonic() - t0, 2)
    # CPU seconds: the grader's process for this submission, and the processes in its sandboxes
    result["cpu_s"] = {"grader": round(time.process_time() - cpu0, 2), "sandbox": round(session.cpu_s, 2)}
    return result


def _attach(cells: list[dict], events: list[dict]) -> None:
    ran = [c for c in cells if c["run"] is not None]
    for ev in events:
        i = ev.get("index")
        if isinstance(i, int) and 0 <= i < len(ran):
            ran[i]["stdout"], ran[i]["stderr"] = str(ev.get("stdout", "")), str(ev.get("stderr", ""))
            ran[i]["seconds"] = ev.get("seconds") if type(ev.get("seconds")) in (int, float) else None
            err = ev.get("error")
            ran[i]["error"] = {"ename": str(err.get("ename", "")), "evalue": str(err.get("evalue", ""))} \
                if isinstance(err, dict) else None


def _failed(result: dict, reason: str, t0: float, keep: bool = False) -> dict:
    """`result` as FAILED; `keep` leaves each exercise's message (what was found before it stopped)."""
    result.update(status="FAILED", reason=reason, score=0.0, seconds=round(time.monotonic() - t0, 2))
    for ex in result["exercises"]:
        if not keep:
            ex["message"] = f"not graded: {reason}"
        ex["points"] = 0.0
    return result


def _die_with_grader(grader_pid: int) -> None:
    """A pool worker's initializer: end with the grader (Linux PR_SET_PDEATHSIG), so that a grader
    killed mid-batch leaves no worker grading on; each worker's sandbox then ends with it
    (--die-with-parent)."""
    import ctypes
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)     # PR_SET_PDEATHSIG
    if os.getppid() != grader_pid:
        os._exit(1)


def compile_package() -> None:
    """Byte-compile bwlab's package here, once per batch: the sandbox may not write its __pycache__
    (read-only, PYTHONDONTWRITEBYTECODE), so without this every sandbox compiles each bwlab module it
    imports from source again. The files are the grader's own, made from the package's sources; Python
    checks each against its source's time stamp and size, and compiles a stale one in memory."""
    import compileall
    with contextlib.suppress(Exception):
        compileall.compile_dir(str(PACKAGE), quiet=2)


def preflight(limits: Limits, mode: str) -> None:
    """Run an empty notebook in the sandbox: GradingError with the sandbox's own words when it cannot
    start here (rather than every submission FAILED for the same reason)."""
    try:
        Session(["import bwlab"], limits, mode).close()
    except SandboxGone as e:
        raise GradingError(f"the sandbox does not start on this machine: {e}. See docs/teaching.md, "
                           "'The sandbox'.") from None


def _grade_args(args):
    submission, source, release, limits, mode, token = args
    return grade_one(Path(submission), Path(source), Path(release), limits, mode, token)


def _job(args):
    """One submission in a worker: its result; a grader's error on it is its FAILED result."""
    return _guarded(_grade_args, args)


def course_data() -> Path:
    """The course data's folder (the hidden cases: bwlab.exercises.hidden_cases); GradingError where
    there is none, since hidden tests cannot be scored without it."""
    folder = _exercises.course_data_dir()
    if folder is None or not (folder / "hidden.py").is_file():
        raise GradingError("no course data (the hidden cases, course_data/hidden.py of the repository): grade "
                           f"from a checkout of bwlab, or set {_exercises.COURSE_DATA_ENV} to your copy of that "
                           "folder (docs/teaching.md, 'The course data')")
    return folder


@dataclass
class Batch:
    graded: list = field(default_factory=list)       # (student, assignment, result)
    skipped: list = field(default_factory=list)      # (student, assignment): graded before, unchanged
    problems: list = field(default_factory=list)     # Problem
    seconds: float = 0.0
    own_numbers: bool = False                        # each student graded on their own numbers (a course secret)

    @property
    def failed(self):
        return [(s, a, r) for s, a, r in self.graded if r["status"] != "graded"]


def grade_all(course: Path, jobs: int = 1, limits: Limits | None = None, sandbox: str = "bwrap",
              force: bool = False, assignment_ids=None, student_id: str | None = None,
              progress=None) -> Batch:
    """Grade every submission in submitted/ that has no finished result for its current file and the
    current checks (every one, with `force`), `jobs` at a time; write results, feedback, CSVs."""
    course, limits = Path(course).resolve(), limits or Limits()
    mode = sandbox_mode(sandbox)
    data = course_data()
    secret = None                   # no course secret: every student has the self-study numbers
    if variants.secret_file(course).exists():
        try:
            secret = variants.read_secret(course)
        except variants.TokenError as e:
            raise GradingError(f"{e}: every student's numbers come from it (docs/teaching.md, 'Every student "
                               "their own numbers')") from None
    t0, batch = time.monotonic(), Batch(own_numbers=secret is not None)
    known = assignments(course)
    versions = {a: grader_version(course / "source" / a / f"{a}.ipynb", data, secret or b"") for a in known}
    todo = []
    for sub in sorted((course / "submitted").glob("*/*/*.ipynb")):
        a, sid = sub.parent.name, sub.parent.parent.name
        if (assignment_ids and a not in assignment_ids) or (student_id and sid != student_id):
            continue
        if sub.name != f"{a}.ipynb":
            continue
        if a not in known:
            batch.problems.append(Problem(sid, a, "no such notebook in source/: not graded"))
            continue
        if not STUDENT_ID.fullmatch(sid):
            batch.problems.append(Problem(sid, a, "the folder in submitted/ is not a student id: not graded"))
            continue
        if any(p.is_symlink() for p in (sub, sub.parent, sub.parent.parent)) or not sub.is_file():
            batch.problems.append(Problem(sid, a, "submitted/ holds a link or a special file here: not graded"))
            continue
        sha = _sha(sub)
        old = _read(_result_path(course, sid, a))
        if (not force and old and old.get("status") == "graded" and old.get("sha256") == sha
                and old.get("grader") == versions[a]):
            batch.skipped.append((sid, a))
            if not feedback_path(course, sid, a).exists():
                write_feedback(course, old)
            continue
        todo.append((sid, a, sha, (str(sub), str(course / "source" / a / f"{a}.ipynb"),
                                   str(course / "release" / a / f"{a}.ipynb"), limits, mode,
                                   variants.token_for(secret, sid) if secret else None)))

    missing = sorted({a for _, a, _, _ in todo if not (course / "release" / a / f"{a}.ipynb").exists()})
    if missing:
        raise GradingError(f"no student version of {', '.join(missing)} in {course / 'release'}: run "
                           "`make student` (python -m bwlab.tools.classroom student) first")
    if todo:
        compile_package()
        preflight(limits, mode)

    def done(sid, a, sha, result):
        result.update(sha256=sha, grader=versions[a], graded_at=time.strftime("%Y-%m-%dT%H:%M:%S"))
        try:
            write_result(course, sid, a, result)
        except (OSError, ValueError, TypeError) as e:     # the batch goes on; this one is FAILED
            result = {"status": "FAILED", "reason": f"its result could not be written ({type(e).__name__}: {e})",
                      "score": 0.0, "max_score": None, "exercises": [], "cells": [], "notes": []}
            write_result(course, sid, a, result)
        batch.graded.append((sid, a, result))
        if progress:
            progress(sid, a, result)

    # The submissions are graded in worker processes, never in this one: whatever ends a worker ends
    # no more than the submissions it had, each graded again alone and FAILED (named) if that ends too.
    cache = _batch_cache(course) if todo else None
    try:
        with _env(BWLAB_CACHE=str(cache) if cache else None):
            retry = []
            if todo:
                with _pool(jobs) as pool:
                    futs = {pool.submit(_job, args): (sid, a, sha, args) for sid, a, sha, args in todo}
                    for fut in as_completed(futs):
                        sid, a, sha, args = futs[fut]
                        try:
                            done(sid, a, sha, fut.result())
                        except GradingError:
                            raise
                        except Exception as e:          # its worker died (or another's took the pool down)
                            retry.append((sid, a, sha, args, f"{type(e).__name__}: {e}"))
            for sid, a, sha, args, why in retry:
                done(sid, a, sha, _alone(args, why))
    finally:
        write_csv(course)
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
    batch.seconds = time.monotonic() - t0
    return batch


def _pool(jobs: int) -> ProcessPoolExecutor:
    import multiprocessing
    return ProcessPoolExecutor(max(1, jobs), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_die_with_grader, initargs=(os.getpid(),))


def _alone(args, earlier: str, job=None) -> dict:
    """Grade one submission again in a worker of its own (its pool's worker died); FAILED with the
    reason if this one dies too. (`job`: what grades it, _job unless a test says otherwise.)"""
    try:
        with _pool(1) as pool:
            return pool.submit(job or _job, args).result()
    except GradingError:
        raise
    except Exception as e:
        return {"status": "FAILED", "reason": f"the grader's worker process died while grading it, twice "
                f"({type(e).__name__}: {e}; the first time: {earlier})", "score": 0.0, "max_score": None,
                "exercises": [], "cells": [], "notes": []}


def _batch_cache(course: Path) -> Path:
    """This batch's NVRTC cache, inside the course folder (removed when the batch ends): the kernels
    the checks compile are cached there, never in the grading user's home."""
    d = Path(course) / ".nvrtc-cache" / f"batch-{os.getpid()}-{int(time.time())}"
    d.mkdir(parents=True, exist_ok=True)
    os.chmod(d, 0o1777)          # the jailed checks run as user ids of their own
    return d


@contextlib.contextmanager
def _env(**values):
    """Environment variables set for the workers this starts (None: left as it is)."""
    old = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is not None:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _hidden_preloaded(graded, solution_ids):
    """The hidden cases of this notebook's exercises, read here from the course data before any check
    runs (the jailed checks, under user ids of their own, read no file of the course data)."""
    import re as _re
    ids = set(solution_ids)
    for g in graded:
        ids |= set(_re.findall(r"hidden_cases\(\s*[\"']([A-Za-z0-9_]+)[\"']\s*\)", g.code))
    mod = _exercises._course_module()
    pre = {}
    if mod is not None:
        with contextlib.redirect_stdout(io.StringIO()):
            for i in sorted(ids):
                if callable(getattr(mod, i, None)):
                    try:
                        pre[i] = _exercises.hidden_cases(i)
                    except Exception:           # the check that asks for them fails as it would unjailed
                        continue
    old, _exercises._PRELOADED = _exercises._PRELOADED, pre
    try:
        yield
    finally:
        _exercises._PRELOADED = old


def _guarded(fn, args, earlier: str = ""):
    try:
        return fn(args)
    except GradingError:
        raise
    except Exception as e:
        why = f"the grader failed on it ({type(e).__name__}: {e})" + (f"; before that: {earlier}" if earlier else "")
        return {"status": "FAILED", "reason": why, "score": 0.0, "max_score": None, "exercises": [],
                "cells": [], "notes": []}


