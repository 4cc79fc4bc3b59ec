"""Build and execute the notebooks.

Notebooks are written as percent-format Python files in `notebooks/src/NN_name.py`:

    # %% [markdown]
    # # Title
    # text ...

    # %%
    import bwlab
    bwlab.banner()

    # %% tags=["nbval-ignore-output"]
    cell whose output depends on the machine

`python -m bwlab.tools.notebooks build notebooks/src/01_tma_load.py` writes `notebooks/01_tma_load.ipynb`
and executes it in the emulated tier (BWLAB_BACKEND=emulated: the TMA-family kernels run in bwlab's
PTX emulator, which is deterministic; the tcgen05 stages in the model), so the stored outputs are what
strict nbval compares on a CPU-only CI machine. `execute` re-runs existing .ipynb files in place.

`python -m bwlab.tools.notebooks run notebooks/src/01_tma_load.py` executes the code cells in order in one
namespace with plain Python, in whatever tier this machine gives (no Jupyter needed: this is how the
notebooks are run on the GPU machines, whose image has no IPython). Figures are drawn with the Agg
backend and closed; a cell that needs IPython/ipywidgets where they are missing is reported as skipped.

`python -m bwlab.tools.notebooks lab [jupyter lab options]` (what `make lab` runs) starts JupyterLab on
notebooks/ with the settings below: widget state saved with the notebook (an override in this
environment's `share/jupyter/lab/settings/overrides.d/`, nothing in the home directory) and `src/` hidden.

`python -m bwlab.tools.notebooks lab --student [--work DIR]` (`make lab STUDENT=1`) copies the student
versions (nbgrader's release, made again where a notebook is newer; a notebook without exercises as it is)
into DIR (default work/), never overwriting a notebook the learner changed (`fill_work_folder`), and starts
JupyterLab there with nbgrader's instructor UI turned off for that launch (`student_lab_config`).

`python -m bwlab.tools.notebooks soak [--runs N] [--timeout S] notebooks/*.ipynb` executes each notebook N
times headless (a temporary copy; nothing is written) and reports how many runs finished.

What is stored, and why:
* no widget views: each is replaced by a static copy, one line saying that the controls need a running
  kernel (with the setting shown) and what its Output widgets showed when built (the picture of the
  default setting). Stored views do not survive in JupyterLab 4 + jupyterlab_widgets 3, checked in a
  real browser (tests/browser/check_lab.py): a notebook that is not trusted (a fresh clone) shows only
  their text repr; and with "save widget state" on (needed so that a learner's save does not leave
  "model not found" behind) restoring stored models marks the notebook modified on open
  (`register_model` -> `setDirty`), and a save rewrites the state without defaults. The metadata
  holds the empty widget state that JupyterLab itself writes, so a save without running changes nothing;
* the kernelspec, language_info and nbformat version exactly as JupyterLab writes them with the kernel
  `make venv` registers, so opening a notebook does not mark it modified.

Headless execution used to stall after widget cells that draw figures: nbclient mimics the Output widget
of a front end and, from the task that reads IOPub, sends a `comm_msg` on the shell socket while another
task awaits the `execute_reply` on that same socket; now and then the asyncio wake-up of that await is
lost (pyzmq's edge-triggered socket FD), the reply sits in the socket until the cell timeout ends the wait
(or forever without one). `_Client` removes the trigger (a headless run needs not echo the Output
widget's outputs back to the kernel) and bounds every wait on a channel to short slices, so a lost
wake-up costs at most `_SLICE_S` seconds.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NB_DIR = ROOT / "notebooks"

# A markdown heading written as a comment ('# ## 7. Title') in a code cell: the header `# %% [markdown]`
# above it was left out, so the section is missing from the notebook's table of contents.
_HEADING_IN_CODE = re.compile(r"^# #{1,6} \S")

_CELL = re.compile(r"^# %%(?P<md> \[markdown\])?(?:\s+tags=\[(?P<tags>[^\]]*)\])?"
                   r"(?P<grader>(?:\s+(?:solution|grade|id=[A-Za-z0-9_.-]+|points=\d+))*)\s*$")


def grader_metadata(spec: str) -> dict | None:
    """nbgrader's cell metadata (schema 3) from a cell header's `solution id=NAME` or
    `grade id=NAME points=N` words; None when the header has neither."""
    words = spec.split()
    if not words:
        return None
    opts = dict(w.split("=", 1) for w in words if "=" in w)
    kinds = [w for w in words if "=" not in w]
    if len(kinds) != 1 or "id" not in opts:
        raise ValueError(f"an exercise cell header needs one of solution/grade and an id=: {spec.strip()!r}")
    if kinds[0] == "solution":
        if "points" in opts:
            raise ValueError(f"points belong on the grade cell, not the solution cell: {spec.strip()!r}")
        return {"grade": False, "solution": True, "locked": False, "grade_id": opts["id"],
                "schema_version": 3}
    if "points" not in opts:
        raise ValueError(f"a grade cell needs points=N: {spec.strip()!r}")
    return {"grade": True, "solution": False, "locked": True, "points": int(opts["points"]),
            "grade_id": opts["id"], "schema_version": 3}


def parse_cells(text: str):
    """Split a percent-format script into (kind, source, tags, nbgrader metadata or None) cells.

    Exercise cells follow nbgrader's conventions: `# %% solution id=NAME` holds the learner's answer
    between `### BEGIN SOLUTION` / `### END SOLUTION`; `# %% grade id=NAME points=N` is the check the
    autograder runs (locked; `### BEGIN HIDDEN TESTS` / `### END HIDDEN TESTS` for the hidden part)."""
    cells, kind, tags, meta, buf = [], None, [], None, []
    seen = set()

    def flush():
        if kind is None:
            return
        lines = list(buf)
        while lines and not lines[-1].strip():
            lines.pop()
        while lines and not lines[0].strip():
            lines.pop(0)
        if kind == "markdown":
            lines = [l[2:] if l.startswith("# ") else ("" if l.strip() == "#" else l) for l in lines]
        else:
            heading = next((l for l in lines if _HEADING_IN_CODE.match(l)), None)
            if heading is not None:
                raise ValueError(f"a markdown heading inside a code cell: {heading!r} (start a markdown cell "
                                 "with '# %% [markdown]' above it)")
        cells.append((kind, "\n".join(lines), tags, meta))

    for line in text.splitlines():
        m = _CELL.match(line)
        if m is None and line.startswith("# %%"):
            raise ValueError(f"cell header not understood: {line!r} (a header is '# %%' or '# %% [markdown]', "
                             "optionally tags=[...], then for an exercise 'solution id=NAME' or "
                             "'grade id=NAME points=N')")
        if m:
            flush()
            kind = "markdown" if m.group("md") else "code"
            tags = [t.strip().strip("'\"") for t in (m.group("tags") or "").split(",") if t.strip()]
            meta = grader_metadata(m.group("grader") or "")
            if meta is not None:
                if kind != "code":
                    raise ValueError(f"exercise cells are code cells: {line!r}")
                if meta["grade_id"] in seen:
                    raise ValueError(f"exercise id used twice: {meta['grade_id']!r}")
                seen.add(meta["grade_id"])
            buf = []
        else:
            buf.append(line)
    flush()
    return cells


def parse_percent(text: str):
    """Split a percent-format script into (kind, source, tags) cells."""
    return [(kind, source, tags) for kind, source, tags, _ in parse_cells(text)]


# What `python -m ipykernel install --sys-prefix --name python3` (make venv) registers, and so what
# JupyterLab writes into a notebook it saves: storing the same keeps an opened notebook unmodified.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
NBFORMAT_MINOR = 5          # JupyterLab 4 writes nbformat 4.5
VIEW_MIME = "application/vnd.jupyter.widget-view+json"
STATE_MIME = "application/vnd.jupyter.widget-state+json"
_SLICE_S = 0.5              # longest single wait on a kernel channel (see _Client)
RAISES = "raises-exception"  # the tag every graded cell carries (see build)


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
    from . import classroom as cls
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
    otherwise the new edition goes to `work/updates/` beside it. Returns one line per notebook."""
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
        else:
            upd = work / UPDATES / name
            upd.parent.mkdir(exist_ok=True)
            shutil.copyfile(src, upd)
            lines.append(f"{name}: kept your work; the new edition is {UPDATES}/{name}")
    record_path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return lines


def build(src: Path, execute: bool = True, timeout: int = 600, out_dir: Path | None = None) -> Path:
    """Write `out_dir/NN_name.ipynb` (default notebooks/) from its percent-format source; execute it in
    the STORED_BACKEND tier unless `execute` is False."""
    import nbformat
    src = Path(src)
    cells = []
    for kind, source, tags, grader in parse_cells(src.read_text()):
        cell = (nbformat.v4.new_markdown_cell(source) if kind == "markdown"
                else nbformat.v4.new_code_cell(source))
        if grader and grader["grade"] and RAISES not in tags:
            # An unanswered check raises NotYet: with this tag, Run All (JupyterLab sends the cell with
            # stop_on_error false) and nbclient go on past it. nbgrader still scores the cell 0.
            tags = [*tags, RAISES]
        if tags:
            cell.metadata["tags"] = tags
        if grader:
            cell.metadata["nbgrader"] = grader
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.nbformat_minor = NBFORMAT_MINOR
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}   # the kernel's own replaces it on execution
    out = Path(out_dir or NB_DIR) / (src.stem + ".ipynb")
    nbformat.write(nb, out)
    if execute:
        execute_notebook(out, timeout=timeout)
    return out


def _widget_refs(obj):
    """Model ids that `obj` (a widget's state or an output) refers to, in order."""
    if isinstance(obj, str):
        if obj.startswith("IPY_MODEL_"):
            yield obj[len("IPY_MODEL_"):]
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k == VIEW_MIME and isinstance(v, dict) and "model_id" in v:
                yield v["model_id"]
            else:
                yield from _widget_refs(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _widget_refs(v)


def _widget_models(model_id, states, seen=None):
    """The models a view shows, depth first from `model_id` (each once)."""
    seen = [] if seen is None else seen
    if model_id in seen:
        return seen
    seen.append(model_id)
    for ref in _widget_refs(states.get(model_id, {}).get("state", {})):
        _widget_models(ref, states, seen)
    return seen


def _control_setting(state):
    """'description = value' of a control's state, or None for what is not a control."""
    label = state.get("description")
    if not label or state.get("_model_name") in ("ButtonModel", "LabelModel", "HTMLModel"):
        return None
    if "value" in state:
        value = state["value"]
    elif state.get("index") is not None and state.get("_options_labels"):
        value = state["_options_labels"][state["index"]]
    else:
        return None
    return f"{label} = {value}"


def widget_fallbacks(outputs, states):
    """Replace every widget view in `outputs` by what it showed when built (the outputs its Output
    widgets captured, for the default setting of its controls) after one line saying so. Returns
    (new outputs, number of views replaced)."""
    import nbformat
    new, replaced = [], 0
    for out in outputs:
        view = out.get("data", {}).get(VIEW_MIME) if out.get("output_type") in (
            "display_data", "execute_result") else None
        if not isinstance(view, dict) or "model_id" not in view:
            new.append(out)
            continue
        replaced += 1
        models = _widget_models(view["model_id"], states)
        settings = [c for c in (_control_setting(states.get(m, {}).get("state", {})) for m in models) if c]
        line = ("Static copy of the widget as built" + (f" ({', '.join(settings)})" if settings else "")
                + ": its controls need a running kernel; run this cell to use them.")
        new.append(nbformat.v4.new_output("display_data", data={"text/markdown": f"*{line}*",
                                                                "text/plain": line}))
        for m in models:
            st = states.get(m, {})
            if st.get("model_name") != "OutputModel":
                continue
            captured = [nbformat.from_dict(o) for o in st.get("state", {}).get("outputs", [])]
            for o in captured:
                if o.get("output_type") == "execute_result":
                    o["output_type"] = "display_data"
                    o.pop("execution_count", None)
            new.extend(widget_fallbacks(captured, states)[0])
    return new, replaced


def _scrub(nb):
    """Make stored outputs deterministic (no execution timestamps, stable cell ids), widget views
    replaced by static copies, and the metadata JupyterLab would write."""
    states = nb.metadata.get("widgets", {}).get(STATE_MIME, {}).get("state", {})
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("execution", None)
        cell["id"] = f"cell-{i:03d}"
        if cell.get("outputs"):
            outputs, replaced = widget_fallbacks(cell["outputs"], states)
            if replaced and "nbval-ignore-output" not in cell.metadata.get("tags", []):
                # A live run shows the widget itself; there is no stored text to compare it with.
                cell.metadata.setdefault("tags", []).append("nbval-ignore-output")
            # One print can arrive as several stream messages (flush timing): merge neighbours.
            merged = []
            for out in outputs:
                if (merged and out.get("output_type") == "stream"
                        and merged[-1].get("output_type") == "stream"
                        and merged[-1].get("name") == out.get("name")):
                    merged[-1]["text"] = "".join(merged[-1]["text"]) + "".join(out["text"])
                else:
                    merged.append(out)
            cell["outputs"] = merged
        for out in cell.get("outputs", []):
            out.get("metadata", {}).pop("execution", None)
    nb.nbformat_minor = NBFORMAT_MINOR
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    # What JupyterLab's widget manager (saveState on) writes for a notebook with no live widgets.
    nb.metadata["widgets"] = {STATE_MIME: {"state": {}, "version_major": 2, "version_minor": 0}}
    return nb


def headless(base):
    """A subclass of `base` (nbclient's NotebookClient, or one built on it such as nbgrader's Execute
    preprocessor) made robust for headless widget notebooks (see the module docstring)."""
    from queue import Empty
    from time import monotonic
    from jupyter_core.utils import run_sync
    from nbclient.output_widget import OutputWidget

    class _QuietOutputWidget(OutputWidget):
        # nbclient sends the captured outputs back to the kernel's Output widget (a comm_msg on the
        # shell socket, from the IOPub task). Nothing headless needs that echo, and sending it while
        # the execute_reply is awaited on the same socket is what lost the reply's wake-up.
        def sync_state(self):
            pass

    def sliced(get_msg):
        async def get(timeout=None):
            deadline = None if timeout is None else monotonic() + timeout
            while True:
                left = _SLICE_S if deadline is None else max(0.0, min(_SLICE_S, deadline - monotonic()))
                try:
                    return await get_msg(timeout=left)
                except Empty:
                    if deadline is not None and monotonic() >= deadline:
                        raise
        return get

    class Headless(base):
        # NotebookClient.__init__ sets the widget registry after resetting the trackers, and nbconvert's
        # preprocess() calls that __init__ again and then resets the trackers: quieten in both places.
        def _quieten(self):
            if hasattr(self, "widget_registry"):
                self.widget_registry["@jupyter-widgets/output"]["OutputModel"] = _QuietOutputWidget

        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self._quieten()

        def reset_execution_trackers(self):
            super().reset_execution_trackers()
            self._quieten()

        async def async_start_new_kernel_client(self):
            kc = await super().async_start_new_kernel_client()
            # A wait that misses its wake-up ends at the slice's final poll(0), which finds the message.
            for ch in (kc.shell_channel, kc.iopub_channel):
                ch.get_msg = sliced(ch.get_msg)
            return kc

        start_new_kernel_client = run_sync(async_start_new_kernel_client)

    Headless.__name__ = Headless.__qualname__ = f"Headless{base.__name__}"
    return Headless


def _client_class():
    """NotebookClient made robust for headless widget notebooks."""
    from nbclient import NotebookClient
    return headless(NotebookClient)


# The tier the stored notebooks are executed in (and nbval compares in): no GPU needed, deterministic.
STORED_BACKEND = "emulated"


def _execute(nb, path: Path, timeout: int | None):
    """Execute `nb` (in place) in the STORED_BACKEND tier with the robust client."""
    env_backup = os.environ.get("BWLAB_BACKEND")
    os.environ["BWLAB_BACKEND"] = STORED_BACKEND
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    try:
        _client_class()(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                        store_widget_state=True,
                        resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    finally:
        if env_backup is None:
            os.environ.pop("BWLAB_BACKEND", None)
        else:
            os.environ["BWLAB_BACKEND"] = env_backup
    return nb


def execute_notebook(path: Path, timeout: int = 600) -> None:
    import nbformat
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("widgets", None)
    nbformat.write(_scrub(_execute(nb, path, timeout)), path)


def soak(paths, runs: int = 10, timeout: int = 300, out=sys.stdout) -> dict:
    """Execute every notebook `runs` times headless (nothing is written); returns
    {name: (finished, runs, [seconds of each finished run])} and prints one line per run."""
    import time
    import nbformat
    result = {}
    for p in paths:
        p = Path(p)
        done, times = 0, []
        for r in range(runs):
            nb = nbformat.read(p, as_version=4)
            t0 = time.perf_counter()
            try:
                _execute(nb, p, timeout)
                status = "finished"
                done += 1
                times.append(time.perf_counter() - t0)
            except Exception as e:  # a cell timeout is how a stall shows
                status = f"FAILED {type(e).__name__}: {str(e).strip().splitlines()[-1][:120]}"
            print(f"{p.name} run {r + 1}/{runs}: {status} in {time.perf_counter() - t0:.1f} s",
                  file=out, flush=True)
        result[p.name] = (done, runs, times)
    print("notebook               finished   median s   max s", file=out)
    for name, (done, n, times) in result.items():
        med = sorted(times)[len(times) // 2] if times else float("nan")
        print(f"{name:22s} {done:3d} of {n:<3d}   {med:8.1f}  {max(times, default=float('nan')):6.1f}",
              file=out)
    return result


def run_cells(src: Path, out=sys.stdout) -> tuple[int, int, int]:
    """Execute the code cells of a percent-format notebook source; returns (ok, failed, skipped)."""
    import io
    import contextlib
    import time
    import traceback
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.show = lambda *a, **k: plt.close("all")
    ns = {"__name__": "__main__"}
    try:
        from IPython.display import display  # noqa: F401
    except ImportError:
        ns["display"] = lambda *objs, **kw: [print(repr(o)) for o in objs]
    ok = failed = skipped = 0
    src = Path(src).resolve()
    old_cwd = os.getcwd()
    os.chdir(NB_DIR)
    try:
        for i, (kind, code, tags) in enumerate(parse_percent(src.read_text())):
            if kind != "code":
                continue
            buf = io.StringIO()
            t0 = time.perf_counter()
            status = "ok"
            try:
                with contextlib.redirect_stdout(buf):
                    exec(compile(code, f"{src.name}[cell {i}]", "exec"), ns)
                ok += 1
            except ModuleNotFoundError as e:
                if e.name and e.name.split(".")[0] in ("IPython", "ipywidgets", "ipykernel"):
                    status = f"skipped ({e.name} is not installed here)"
                    skipped += 1
                else:
                    status = "FAILED\n" + traceback.format_exc(limit=4)
                    failed += 1
            except Exception:
                status = "FAILED\n" + traceback.format_exc(limit=4)
                failed += 1
            plt.close("all")
            dt = time.perf_counter() - t0
            print(f">>> {src.name} cell {i} [{dt:.2f} s] {status}", file=out)
            text = buf.getvalue().rstrip()
            if text:
                print(text, file=out)
    finally:
        os.chdir(old_cwd)
    print(f"=== {src.name}: {ok} cells ok, {failed} failed, {skipped} skipped", file=out)
    return ok, failed, skipped


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if argv and argv[0] == "run":
        failed = 0
        for p in argv[1:]:
            failed += run_cells(Path(p))[1]
        return 1 if failed else 0
    if argv and argv[0] == "lab":
        install_lab_settings()
        exe = str(Path(sys.executable).with_name("jupyter-lab"))
        rest = argv[1:]
        if "--student" not in rest:
            os.execv(exe, [exe, *lab_args(), *rest])
        rest.remove("--student")
        work = WORK_DIR
        if "--work" in rest:
            i = rest.index("--work")
            work = Path(rest[i + 1]).resolve()
            del rest[i:i + 2]
        for line in fill_work_folder(work, student_editions()):
            print(line)
        env = student_lab_env(student_lab_config(ROOT / "build" / "student-lab-config"))
        print(f"JupyterLab on {work} (your copies; the answers stay in notebooks/)", flush=True)
        os.execve(exe, [exe, *lab_args(work), *rest], env)
    if argv and argv[0] == "soak":
        import argparse
        ap = argparse.ArgumentParser(prog="python -m bwlab.tools.notebooks soak")
        ap.add_argument("--runs", type=int, default=10)
        ap.add_argument("--timeout", type=int, default=300, help="per-cell timeout, seconds")
        ap.add_argument("paths", nargs="+")
        a = ap.parse_args(argv[1:])
        res = soak(a.paths, a.runs, a.timeout)
        return 0 if all(done == n for done, n, _ in res.values()) else 1
    if not argv or argv[0] not in ("build", "execute"):
        print(__doc__)
        return 2
    cmd, paths = argv[0], argv[1:]
    for p in paths:
        p = Path(p)
        if cmd == "build":
            out = build(p)
        else:
            execute_notebook(p)
            out = p
        print(f"{cmd}: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
