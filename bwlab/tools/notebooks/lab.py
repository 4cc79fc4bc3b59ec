"""JupyterLab as `make lab` starts it, and the learner's work folder of student versions (`make lab STUDENT=1`)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from .sources import NB_DIR, ROOT


# JupyterLab as `make lab` starts it: the widget manager saves widget state into the notebook (else a
# learner's save leaves "model not found" behind); notebooks/src (the sources) hidden from the browser.
LAB_OVERRIDES = {"@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}}
HIDE_GLOBS = ["__pycache__", "*.pyc", "*.pyo", ".DS_Store", "*~", "*.so", "*.dylib", "src"]


def install_lab_settings(prefix: str = sys.prefix) -> Path:
    """Write LAB_OVERRIDES to {prefix}/share/jupyter/lab/settings/overrides.d/bwlab.json."""
    import json
    path = Path(prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.d" / "bwlab.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(LAB_OVERRIDES, indent=1) + "\n"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


def lab_args(notebook_dir: Path = NB_DIR) -> list[str]:
    """The `jupyter lab` options `make lab` uses (after install_lab_settings)."""
    return [f"--notebook-dir={notebook_dir}"] + [f"--ContentsManager.hide_globs={g}" for g in HIDE_GLOBS]


# `make lab STUDENT=1`: the student versions, copied into a work folder the learner owns, in a JupyterLab
# without nbgrader's instructor UI (its server extensions and its labextension turned off for this launch
# only, through a config directory put first on JUPYTER_CONFIG_PATH).
WORK_DIR = ROOT / "work"
NBGRADER_SERVER_EXTENSIONS = ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.validate_assignment",
                              "nbgrader.server_extensions.assignment_list", "nbgrader.server_extensions.course_list")
NBGRADER_LABEXTENSION = "@jupyter/nbgrader"
_RECORD = ".bwlab-released.json"      # in the work folder: the hash of each notebook as it was copied there
UPDATES = "updates"                   # where a new release goes when the learner changed the old one


def student_lab_config(config_dir: Path) -> Path:
    """Write the config directory that turns nbgrader's UI off (server extensions and labextension)."""
    import json
    config_dir = Path(config_dir)
    (config_dir / "jupyter_server_config.d").mkdir(parents=True, exist_ok=True)
    (config_dir / "labconfig").mkdir(parents=True, exist_ok=True)
    off = {"ServerApp": {"jpserver_extensions": {name: False for name in NBGRADER_SERVER_EXTENSIONS}}}
    (config_dir / "jupyter_server_config.d" / "bwlab-student.json").write_text(json.dumps(off, indent=1) + "\n")
    page = {"disabledExtensions": {NBGRADER_LABEXTENSION: True}}
    (config_dir / "labconfig" / "page_config.json").write_text(json.dumps(page, indent=1) + "\n")
    return config_dir


def student_lab_env(config_dir: Path, environ=None) -> dict:
    """os.environ with `config_dir` first on JUPYTER_CONFIG_PATH (the highest-priority config)."""
    env = dict(os.environ if environ is None else environ)
    env["JUPYTER_CONFIG_PATH"] = os.pathsep.join([str(config_dir)] + ([env["JUPYTER_CONFIG_PATH"]]
                                                                      if env.get("JUPYTER_CONFIG_PATH") else []))
    return env


def _sha(path: Path) -> str:
    import hashlib
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def student_editions(course: Path | None = None) -> dict[str, Path]:
    """{notebook name: its student version}: nbgrader's release of every notebook with exercises (made
    again where a notebook is newer than its release), the notebook itself for one without."""
    from .. import classroom as cls
    course = Path(course or cls.COURSE)
    out, stale = {}, []
    for nb in cls.notebooks():
        if not cls.exercises(nb):
            out[nb.name] = nb
            continue
        rel = course / "release" / nb.stem / nb.name
        if not rel.exists() or rel.stat().st_mtime < nb.stat().st_mtime:
            stale.append(nb)
        out[nb.name] = rel
    if stale:
        cls.student(course, stale)
    return out


def fill_work_folder(work: Path, editions: dict[str, Path]) -> list[str]:
    """Copy the student editions into `work`, never overwriting a learner's work: a notebook is copied
    where there is none, replaced only when it is still byte for byte what was copied last time, and
    otherwise, when the edition is new since the last copy, the new edition goes to `work/updates/`
    beside it (once: a run with nothing new reports nothing new). Returns one line per notebook."""
    import json
    import shutil
    work = Path(work)
    work.mkdir(parents=True, exist_ok=True)
    record_path = work / _RECORD
    record = json.loads(record_path.read_text()) if record_path.exists() else {}
    lines = []
    for name, src in sorted(editions.items()):
        dest, new = work / name, _sha(src)
        if not dest.exists():
            shutil.copyfile(src, dest)
            record[name] = new
            lines.append(f"{name}: copied")
            continue
        mine = _sha(dest)
        if mine == new:
            record[name] = new
            lines.append(f"{name}: up to date")
        elif mine == record.get(name):        # untouched since it was copied: safe to replace
            shutil.copyfile(src, dest)
            record[name] = new
            lines.append(f"{name}: replaced by the new edition (you had not changed it)")
        elif new == record.get(name):         # you changed it, and there is no new edition since
            lines.append(f"{name}: your work (no new edition)")
        elif (work / UPDATES / name).exists() and _sha(work / UPDATES / name) == new:
            lines.append(f"{name}: kept your work; the new edition is still {UPDATES}/{name}")
        else:
            upd = work / UPDATES / name
            upd.parent.mkdir(exist_ok=True)
            shutil.copyfile(src, upd)
            record[name] = new                # announced once: the next run says so only for a newer one
            lines.append(f"{name}: kept your work; the new edition is {UPDATES}/{name}")
    record_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return lines
