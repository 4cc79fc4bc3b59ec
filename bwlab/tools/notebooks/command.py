"""The command line: python -m bwlab.tools.notebooks build|execute|sync|check-sync|run|soak|lab."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .building import build, execute_notebook
from .lab import (fill_work_folder, install_lab_settings, lab_args, student_editions, student_lab_config,
                  student_lab_env, WORK_DIR)
from .running import run_cells, soak
from .sources import NB_DIR, notebook_of, out_of_sync, ROOT, source_of, sync_back


def _parser():
    import argparse
    ap = argparse.ArgumentParser(prog="python -m bwlab.tools.notebooks",
                                 description="Build, execute, check and open bwlab's notebooks.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("build", help="execute sources notebooks/src/NN_name.py into notebooks/NN_name.ipynb")
    p.add_argument("paths", nargs="+", type=Path)
    p.add_argument("--no-execute", action="store_true", help="write the notebook without running it")
    p = sub.add_parser("execute", help="re-execute stored notebooks in place")
    p.add_argument("paths", nargs="+", type=Path)
    p = sub.add_parser("sync", help="write the source of each notebook (after an edit in JupyterLab)")
    p.add_argument("paths", nargs="+", type=Path)
    p = sub.add_parser("check-sync", help="exit 1 where a source and its notebook disagree")
    p.add_argument("paths", nargs="*", type=Path, help="default: every notebooks/NN_*.ipynb")
    p = sub.add_parser("run", help="execute a source's code cells with plain Python (no Jupyter)")
    p.add_argument("paths", nargs="+", type=Path)
    p = sub.add_parser("soak", help="execute notebooks N times headless; report how many runs finished")
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--timeout", type=int, default=300, help="per-cell timeout, seconds")
    p.add_argument("paths", nargs="+", type=Path)
    p = sub.add_parser("lab", help="JupyterLab on notebooks/ (or, with --student, your copies of the "
                                   "student versions); other options go to jupyter lab")
    p.add_argument("--student", action="store_true")
    p.add_argument("--work", type=Path, default=WORK_DIR)
    return ap


def main(argv=None) -> int:
    ap = _parser()
    a, rest = ap.parse_known_args(sys.argv[1:] if argv is None else argv)
    if rest and a.cmd != "lab":
        ap.error(f"unrecognized arguments: {' '.join(rest)}")
    if a.cmd == "run":
        return 1 if sum(run_cells(p)[1] for p in a.paths) else 0
    if a.cmd == "soak":
        res = soak(a.paths, a.runs, a.timeout)
        return 0 if all(done == n for done, n, _ in res.values()) else 1
    if a.cmd == "lab":
        install_lab_settings()
        exe = str(Path(sys.executable).with_name("jupyter-lab"))
        if not a.student:
            os.execv(exe, [exe, *lab_args(), *rest])
        work = a.work.resolve()
        for line in fill_work_folder(work, student_editions()):
            print(line)
        env = student_lab_env(student_lab_config(ROOT / "build" / "student-lab-config"))
        print(f"JupyterLab on {work} (your copies; the answers stay in notebooks/)", flush=True)
        os.execve(exe, [exe, *lab_args(work), *rest], env)
    if a.cmd == "check-sync":
        paths = a.paths or sorted(NB_DIR.glob("[0-9][0-9]*_*.ipynb"))
        problems = [d for d in (out_of_sync(notebook_of(p)) for p in paths) if d]
        for d in problems:
            print(d)
        print(f"check-sync: {len(paths) - len(problems)} of {len(paths)} sources agree with their notebooks")
        return 1 if problems else 0
    for p in a.paths:
        if a.cmd == "build":
            out = build(source_of(p), execute=not a.no_execute)
        elif a.cmd == "execute":
            execute_notebook(notebook_of(p))
            out = notebook_of(p)
        else:
            out = sync_back(notebook_of(p))
        print(f"{a.cmd}: {out}")
    return 0
