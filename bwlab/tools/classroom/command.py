"""The command line: python -m bwlab.tools.classroom (the package's docstring lists its commands)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .bench import bench_class
from .course import autograde, collect, feedback, format_scores, scores, student, submit, submitted, tokens
from .exercises import BLANK, ClassroomError, COURSE, exercises, KEYS, replace_table, table, with_exercises
from .selfcheck import check_all


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
        from .. import grading
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
