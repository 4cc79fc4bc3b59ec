"""Results, feedback pages and the CSVs."""
from __future__ import annotations

import csv
import hashlib
import html
import json
import os
from pathlib import Path

from .. import plain
from .common import PACKAGE
from .planning import graded_cells


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def grader_version(source_nb: Path, data: Path | None = None, secret: bytes = b"") -> str:
    """Changes when the notebook's graded cells, any code that scores them, the course data's hidden
    cases or the course secret change (then every submission of it is graded again)."""
    h = hashlib.sha256(Path(source_nb).read_bytes())
    files = [*PACKAGE.glob("*/exercises.py"), PACKAGE / "exercises.py", PACKAGE / "variants.py", *Path(__file__).parent.glob("*.py"),
             PACKAGE / "flow" / "kernel_edit.py",
             Path(plain.__file__), PACKAGE / "tools" / "answer_runner.py"]
    if data is not None:
        files += sorted(Path(data).glob("*.py"))
    for f in sorted(files):
        h.update(f.read_bytes())
    h.update(hashlib.sha256(secret).digest())
    return h.hexdigest()[:16]


def assignments(course: Path) -> list[str]:
    return sorted(p.name for p in (Path(course) / "source").glob("*") if (p / f"{p.name}.ipynb").is_file())


def _result_path(course: Path, student: str, assignment: str) -> Path:
    return Path(course) / "results" / student / f"{assignment}.json"


def feedback_path(course: Path, student: str, assignment: str) -> Path:
    return Path(course) / "feedback" / student / assignment / f"{assignment}.html"


MAX_SOURCE = 20_000          # characters of one cell's source kept in a result (and its feedback page)
MAX_SOURCES = 400_000        # ... and of all its cells' sources


def bounded_cells(cells: list[dict]) -> list[dict]:
    """The cells of a result as they are stored: each source once (what ran is only marked: "run" true
    or false) and cut to MAX_SOURCE characters, MAX_SOURCES in all; outputs are cut where they are read
    (Sandbox._capped)."""
    out, kept = [], 0
    for c in cells:
        c = dict(c)
        src = str(c.get("source", ""))
        if len(src) > MAX_SOURCE:
            src = src[:MAX_SOURCE] + f"\n[... {len(src) - MAX_SOURCE} more characters of this cell]"
        if kept + len(src) > MAX_SOURCES:
            src = src[:max(0, MAX_SOURCES - kept)] + f"\n[sources beyond the notebook's {MAX_SOURCES} characters left out]"
        kept += len(src)
        c["source"] = src
        if "run" in c:
            c["run"] = c["run"] is not None and c["run"] is not False
        out.append(c)
    return out


def write_result(course: Path, student: str, assignment: str, result: dict) -> Path:
    """Atomically (a reader sees the old result or the new one, never half of one)."""
    result = {**result, "student": student, "assignment": assignment,
              "cells": bounded_cells(result.get("cells") or [])}
    path = _result_path(course, student, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1))
    os.replace(tmp, path)
    write_feedback(course, result)
    return path


def read_results(course: Path) -> list[dict]:
    out = []
    for p in sorted((Path(course) / "results").glob("*/*.json")):
        try:
            out.append(json.loads(p.read_text()))
        except ValueError:
            continue
    return out


def _read(path: Path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def write_csv(course: Path) -> tuple[Path, Path]:
    """grades.csv: one row per student; per notebook its score (or FAILED) and one column per exercise
    (notebook:grade_id); the total. exercise_stats.csv: per exercise how many were graded, the mean,
    how many got full points, none, or were not graded (FAILED)."""
    course = Path(course)
    results = read_results(course)
    exercises = {}
    for a in assignments(course):
        exercises[a] = [(g.grade_id, g.points) for g in graded_cells(course / "source" / a / f"{a}.ipynb")]
    by = {(r["student"], r["assignment"]): r for r in results}
    students = sorted({r["student"] for r in results})
    header = ["student", "total", "max", "failed"]
    for a, exs in exercises.items():
        header += [a] + [f"{a}:{gid}" for gid, _ in exs]
    grades = Path(course) / "grades.csv"
    with open(grades, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for s in students:
            row, total, failed = [], 0.0, []
            for a, exs in exercises.items():
                r = by.get((s, a))
                if r is None:
                    row += [""] * (1 + len(exs))
                    continue
                if r["status"] != "graded":
                    failed.append(a)
                    row += ["FAILED"] + [""] * len(exs)
                    continue
                pts = {e["grade_id"]: e["points"] for e in r["exercises"]}
                total += r["score"]
                row += [f"{r['score']:g}"] + [f"{pts[g]:g}" if g in pts else "" for g, _ in exs]
            w.writerow([s, f"{total:g}", f"{sum(p for exs in exercises.values() for _, p in exs):g}",
                        " ".join(failed)] + row)
    stats = Path(course) / "exercise_stats.csv"
    with open(stats, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["notebook", "exercise", "points", "graded", "mean", "full_points", "no_points", "failed"])
        for a, exs in exercises.items():
            mine = [r for (s, aa), r in by.items() if aa == a]
            ok = [r for r in mine if r["status"] == "graded"]
            for gid, p in exs:
                got = [e["points"] for r in ok for e in r["exercises"] if e["grade_id"] == gid]
                mean = f"{sum(got) / len(got):.2f}" if got else ""
                w.writerow([a, gid, f"{p:g}", len(got), mean, sum(g == p for g in got), sum(g == 0 for g in got),
                            len(mine) - len(ok)])
    return grades, stats


# ---------------------------------------------------------------------------------------------------
# feedback: one HTML page per submission; everything the learner wrote or printed is escaped

_CSS = """body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;white-space:pre-wrap}
.pass{color:#1a7f37}.fail{color:#b42318}.learner{border-left:4px solid #ccc;padding-left:.6em;margin:1em 0}
.graded{border-left:4px solid #1f6feb;padding-left:.6em;margin:1em 0}.failed{background:#fde8e8;padding:1em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em}"""


def feedback_html(result: dict) -> str:
    e = html.escape
    s, a = result.get("student", ""), result.get("assignment", "")
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(a)} — {e(s)}</title>",
           f"<style>{_CSS}</style></head><body>", f"<h1>{e(a)}: feedback for {e(s)}</h1>"]
    if result.get("status") != "graded":
        out.append(f"<div class='failed'><b>Not graded (FAILED).</b> {e(str(result.get('reason', '')))}<br>"
                   "Your instructor sees this too; nothing was scored, it is not a zero.</div>")
    else:
        out.append(f"<h2>Score: {result['score']:g} / {result['max_score']:g}</h2>")
    for n in result.get("notes", []):
        out.append(f"<p>Note: {e(n)}</p>")
    if result.get("exercises"):
        out.append("<table><tr><th>graded cell</th><th>points</th></tr>")
        for x in result["exercises"]:
            verdict_class = "pass" if x["passed"] else "fail"
            out.append(f"<tr><td><a href='#{e(x['grade_id'])}'>{e(x['grade_id'])}</a></td>"
                       f"<td class='{verdict_class}'>{x['points']:g} / {x['max_points']:g}</td></tr>")
        out.append("</table>")
    verdicts = {x["grade_id"]: x for x in result.get("exercises", [])}
    for c in result.get("cells", []):
        if c["type"] == "markdown":
            out.append(f"<pre>{e(c['source'])}</pre>")
            continue
        if c["type"] == "graded":
            x = verdicts.get(c["grade_id"], {})
            out.append(f"<div class='graded' id='{e(c['grade_id'])}'><b>Graded cell {e(c['grade_id'])} "
                       f"(score: {x.get('points', 0):g} / {x.get('max_points', 0):g})</b>"
                       f"<pre>{e(c['source'])}</pre><pre class='{'pass' if x.get('passed') else 'fail'}'>"
                       f"{e(x.get('message', ''))}</pre></div>")
            continue
        out.append(f"<div class='learner'><pre>{e(c['source'])}</pre>")
        if c.get("skipped"):
            out.append("<p><i>Not run by the grader: the student version's own cell, unchanged, and nothing "
                       "after it reads what it makes (its output is the same for everyone).</i></p>")
        for stream in ("stdout", "stderr"):
            if c.get(stream):
                out.append(f"<pre>{e(c[stream])}</pre>")
        if c.get("error"):
            out.append(f"<pre class='fail'>{e(c['error']['ename'])}: {e(c['error']['evalue'])}</pre>")
        out.append("</div>")
    out.append("</body></html>")
    return "\n".join(out)


def write_feedback(course: Path, result: dict) -> Path:
    path = feedback_path(course, result["student"], result["assignment"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".html.tmp")
    tmp.write_bytes(feedback_html(result).encode("utf-8", "replace"))    # a learner's lone surrogates too
    os.replace(tmp, path)
    return path
