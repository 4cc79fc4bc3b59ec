"""Collecting a folder of submissions: student ids, the id map, what is refused and why."""
from __future__ import annotations

import csv
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .common import GradingError, MAX_NOTEBOOK, STUDENT_ID
from .results import assignments, write_result


def load_id_map(path: Path) -> dict[str, str]:
    """An id map: a CSV with the columns `folder` (a learning platform's folder name, a prefix of it up
    to an '_', or one of its '_'-separated parts such as the platform's number) and `student` (the id
    used here)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    if not rows or not {"folder", "student"} <= set(rows[0]):
        raise GradingError(f"{path}: an id map is a CSV with the columns folder,student")
    out = {}
    for n, r in enumerate(rows, 2):
        key, sid = (r.get("folder") or "").strip(), (r.get("student") or "").strip()
        if not key or not STUDENT_ID.fullmatch(sid):
            raise GradingError(f"{path}, line {n}: folder {key!r} -> student {sid!r}: the student id must be "
                               "letters, digits, '_', '.', '@', '-'")
        out[key] = sid
    return out


def student_of(folder: str, id_map: dict[str, str] | None) -> tuple[str | None, str]:
    """(student id, '') for a submission folder's name, or (None, why not)."""
    if id_map:
        parts = folder.split("_")
        hits = {sid for key, sid in id_map.items()
                if folder == key or folder.startswith(key + "_") or key in parts}
        if len(hits) == 1:
            return hits.pop(), ""
        if len(hits) > 1:
            return None, f"the id map gives it more than one student ({', '.join(sorted(hits))})"
    if STUDENT_ID.fullmatch(folder):
        return folder, ""
    return None, ("it is not a student id (letters, digits, '_', '.', '@', '-'); map it with an id map "
                  "(--id-map FILE.csv, columns folder,student)")


@dataclass
class Problem:
    who: str            # student id or folder name
    what: str           # assignment or file
    reason: str

    def __str__(self):
        return printable(f"{self.who} / {self.what}: {self.reason}")


def printable(text: str) -> str:
    """`text` for a terminal or a log: control characters, bidirectional overrides, other invisible format
    characters and lone surrogates (a folder or file name is the learner's) written as escapes, so
    that a name cannot add lines to the report, move the cursor or reorder what is shown."""
    import unicodedata
    out = []
    for ch in str(text):
        out.append(ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch)[0] == "C" else ch)
    return "".join(out)


JUNK = frozenset({"__MACOSX", ".DS_Store", ".ipynb_checkpoints", "Thumbs.db", "desktop.ini"})
MAX_DEPTH = 16           # folders below a student's folder that collecting looks into
MAX_ENTRIES = 5000       # entries of one student's folder, all depths, that collecting looks at


def _notebooks(top: Path) -> tuple[list[Path], list[tuple[str, str]]]:
    """The .ipynb files under a student's folder, found by an iterative walk that follows no link, goes
    at most MAX_DEPTH folders down and looks at no more than MAX_ENTRIES entries; hidden entries,
    __MACOSX and checkpoints are passed over. Also (what, why) for every link and for what was not
    searched."""
    found, problems, todo, seen = [], [], [(top, 0)], 0
    deep = full = False
    while todo:
        d, depth = todo.pop()
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as e:
            problems.append((_short(d, top) + "/", f"not searched: {e.strerror or e}"))
            continue
        for e in entries:
            if e.name.startswith(".") or e.name in JUNK:
                continue
            seen += 1
            if seen > MAX_ENTRIES:
                if not full:
                    problems.append(("(folder)", f"more than {MAX_ENTRIES} files and folders: the rest was not "
                                                 "searched; hand in the notebooks, not a whole tree"))
                full = True
                break
            path = Path(e.path)
            if e.is_symlink():
                if e.name.endswith(".ipynb") or depth < MAX_DEPTH:
                    problems.append((_short(path, top), "ignored: a symbolic link, not a file the student handed in"))
                continue
            if e.is_dir(follow_symlinks=False):
                if depth + 1 > MAX_DEPTH:
                    if not deep:
                        problems.append((_short(path, top), f"not searched: deeper than {MAX_DEPTH} folders "
                                                            "inside the student's folder"))
                    deep = True
                    continue
                todo.append((path, depth + 1))
            elif e.name.endswith(".ipynb"):
                found.append(path)
        if full:
            break
    return sorted(found), problems


def _short(path: Path, top: Path) -> str:
    rel = str(Path(path).relative_to(top))
    return rel if len(rel) <= 120 else rel[:50] + f"...({len(rel) - 100} characters)..." + rel[-50:]


def collect(course: Path, folder: Path, id_map: dict[str, str] | None = None) -> tuple[list[Path], list[Problem]]:
    """Copy FOLDER/<student>/**/*.ipynb to submitted/<student>/<assignment>/<assignment>.ipynb (the
    assignment is the one whose name begins the file's name). A folder that maps to no student, a file
    that maps to no notebook, and two files that map to one student's notebook, from one folder or two
    (none is taken: say which to keep), are problems, reported; the rest is copied."""
    course, folder = Path(course), Path(folder)
    known = assignments(course)
    if not known:
        raise GradingError(f"{course / 'source'} holds no notebooks: run `make student` first")
    if not folder.is_dir():
        raise GradingError(f"{folder} is not a folder of submissions (<student>/<notebook>.ipynb)")
    copied, problems = [], []
    files: dict[tuple[str, str], list[Path]] = {}      # (student, assignment) -> files, from every folder
    for d in sorted(folder.iterdir()):
        if d.name in JUNK:
            continue
        if d.is_symlink():
            problems.append(Problem(d.name, "(folder)", "not graded: a symbolic link, not a folder handed in "
                                                        "(a link to a classmate's work is not this student's)"))
            continue
        if not d.is_dir():
            problems.append(Problem(d.name, "(file)", "not graded: not in a student's folder (each student's "
                                                      "notebooks go in a folder of their own)"))
            continue
        if d.name.startswith("."):
            problems.append(Problem(d.name, "(folder)", "not graded: a hidden folder (its name begins with '.'); "
                                                        "rename it to the student's id"))
            continue
        sid, why = student_of(d.name, id_map)
        if sid is None:
            problems.append(Problem(d.name, "(folder)", f"not graded: {why}"))
            continue
        found, walk_problems = _notebooks(d)
        problems += [Problem(sid, what, why) for what, why in walk_problems]
        for nb in found:
            rel = nb.relative_to(d)
            if not nb.is_file():
                problems.append(Problem(sid, str(rel), "ignored: not a regular file"))
                continue
            if nb.stat().st_size > MAX_NOTEBOOK:
                problems.append(Problem(sid, str(rel), f"ignored: {nb.stat().st_size >> 20} MiB; a notebook "
                                                       f"here is under {MAX_NOTEBOOK >> 20} MiB"))
                continue
            hits = [a for a in known if nb.name.startswith(a)]
            if not hits:
                problems.append(Problem(sid, str(rel), f"ignored: its name begins with no notebook's name "
                                                       f"({', '.join(known)})"))
                continue
            files.setdefault((sid, max(hits, key=len)), []).append(nb)
    for (sid, a), found in sorted(files.items()):
        dest = course / "submitted" / sid / a / f"{a}.ipynb"
        if len(found) > 1:
            tops = {p.relative_to(folder).parts[0] for p in found}
            base = folder / tops.pop() if len(tops) == 1 else folder      # one folder: name the files in it
            names = ", ".join(str(p.relative_to(base)) for p in found)
            reason = f"{len(found)} files map to this notebook ({names}); none was graded: keep one"
            problems.append(Problem(sid, a, reason))
            shutil.rmtree(dest.parent, ignore_errors=True)
            write_result(course, sid, a, {"status": "FAILED", "reason": reason, "score": 0.0,
                                          "max_score": None, "exercises": [], "cells": [], "notes": [],
                                          "sha256": "refused"})
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not (dest.exists() and dest.read_bytes() == found[0].read_bytes()):
            shutil.copyfile(found[0], dest)
        copied.append(dest)
    return copied, problems


