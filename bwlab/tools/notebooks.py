"""Build and execute the notebooks.

Each notebook has a source, notebooks/src/NN_name.py, in jupytext's percent format (jupytext.toml at the
top of the repository pairs them, so `jupytext --sync notebooks/NN_name.ipynb` works too):

    # %% [markdown]
    # # Title
    # text ...

    # %% tags=["nbval-ignore-output"]
    cell whose output depends on the machine

    # %% nbgrader={"grade": false, "grade_id": "tma_tx_bytes", "locked": false, "schema_version": 3, "solution": true}
    my_tx_bytes = ...     # the learner's answer, between ### BEGIN SOLUTION / ### END SOLUTION

    # %% nbgrader={"grade": true, "grade_id": "tma_tx_bytes_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
    check(...)            # the graded check (### BEGIN HIDDEN TESTS / ### END HIDDEN TESTS for the hidden part)

The source holds the cells, their tags and their nbgrader metadata and nothing else; it is exactly what
jupytext writes for the stored notebook (`source_text`), and `check-sync` (a test in `make test`) fails
where a source and its notebook disagree. `build` executes a source into its notebook; `sync` writes the
source of a notebook edited in JupyterLab.

`python -m bwlab.tools.notebooks build notebooks/src/01_tma_load.py` writes `notebooks/01_tma_load.ipynb`
and executes it in the emulated tier (BWLAB_BACKEND=emulated: the kernels run in bwlab's PTX emulator,
which is deterministic), so the stored outputs are what strict nbval compares on a CPU-only CI machine.
`execute` re-runs existing .ipynb files in place.

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
* no widget views: each is replaced by one line naming the setting of its controls and saying that they
  need a running kernel; above it stays what the widget drew as built (the picture of the default
  setting). Stored views do not survive in JupyterLab 4 + jupyterlab_widgets 3, checked in a
  real browser (tests/browser/check_lab.py): a notebook that is not trusted (a fresh clone) shows only
  their text repr; and with "save widget state" on (needed so that a learner's save does not leave
  "model not found" behind) restoring stored models marks the notebook modified on open
  (`register_model` -> `setDirty`), and a save rewrites the state without defaults. The metadata
  holds the empty widget state that JupyterLab itself writes, so a save without running changes nothing;
* the kernelspec, language_info and nbformat version exactly as JupyterLab writes them with the kernel
  `make venv` registers, so opening a notebook does not mark it modified.

Headless execution plays no front end for widgets (`headless`). nbclient's default mimics the Output
widget: it keeps the widget's outputs and, from the task that reads IOPub, echoes them to the kernel with a
`comm_msg` on the shell socket while another task awaits the `execute_reply` on that same socket; now and
then the asyncio wake-up of that await was lost and the run stalled until the cell timeout. Without the
double, nothing is sent, and a widget's drawing is an ordinary output of its cell.
"""
from __future__ import annotations

import contextlib
import copy
import os
import re
import sys
from pathlib import Path

from .headless import headless

ROOT = Path(__file__).resolve().parents[2]
NB_DIR = ROOT / "notebooks"

# A markdown heading written as a comment ('# ## 7. Title') in a code cell: the header `# %% [markdown]`
# above it was left out, so the section is missing from the notebook's table of contents.
_HEADING_IN_CODE = re.compile(r"^# #{1,6} \S")

# How a notebook and its source pair (also what `jupytext --sync` and jupytext's JupyterLab extension read,
# from ROOT/jupytext.toml): the source keeps the cells, their tags and their nbgrader metadata, nothing of
# the notebook's own metadata (kernelspec, widget state: the builder writes those).
JUPYTEXT_FORMAT = "py:percent"
JUPYTEXT_CONFIG = {"notebook_metadata_filter": "-all", "cell_metadata_filter": "tags,nbgrader,-all"}


def _config():
    from jupytext.config import JupytextConfiguration
    return JupytextConfiguration(**JUPYTEXT_CONFIG)


def source_of(notebook: Path) -> Path:
    """notebooks/NN_name.ipynb -> notebooks/src/NN_name.py (and a source to itself)."""
    notebook = Path(notebook)
    return notebook if notebook.suffix == ".py" else notebook.parent / "src" / (notebook.stem + ".py")


def notebook_of(src: Path) -> Path:
    """notebooks/src/NN_name.py -> notebooks/NN_name.ipynb."""
    src = Path(src)
    return src if src.suffix == ".ipynb" else src.parent.parent / (src.stem + ".ipynb")


def read_source(text: str):
    """The notebook (cells and their metadata) of a jupytext percent-format source, checked
    (`validate_cells`)."""
    import jupytext
    nb = jupytext.reads(text, fmt=JUPYTEXT_FORMAT, config=_config())
    validate_cells(nb)
    return nb


def source_text(nb) -> str:
    """The source jupytext writes for `nb` (its outputs and notebook metadata left out): what
    notebooks/src/NN_name.py must hold, byte for byte, for the stored notebook."""
    import copy
    import jupytext
    nb = copy.deepcopy(nb)
    nb.metadata = {}
    for cell in nb.cells:
        # keys sorted as nbformat stores them, so the text is the same from a notebook or from a source
        cell.metadata = {k: (dict(sorted(v.items())) if isinstance(v, dict) else v)
                         for k, v in sorted(cell.metadata.items()) if k in ("tags", "nbgrader")}
    return jupytext.writes(nb, fmt=JUPYTEXT_FORMAT, config=_config())


GRADE_KEYS = {"grade": True, "solution": False, "locked": True, "schema_version": 3}
SOLUTION_KEYS = {"grade": False, "solution": True, "locked": False, "schema_version": 3}


def validate_cells(nb) -> None:
    """Refuse a notebook whose cells the builder and nbgrader would get wrong: a markdown heading in a
    code cell, exercise metadata on a markdown cell or incomplete (a solution cell
    `nbgrader={"grade": false, "grade_id": ..., "locked": false, "schema_version": 3, "solution": true}`,
    a graded cell the same with grade/locked true, solution false, `"points": N` and the tag
    raises-exception), or an exercise id used twice."""
    seen = set()
    for i, cell in enumerate(nb.cells):
        src = cell.source if isinstance(cell.source, str) else "".join(cell.source)
        if cell.cell_type == "code":
            heading = next((l for l in src.splitlines() if _HEADING_IN_CODE.match(l)), None)
            if heading is not None:
                raise ValueError(f"cell {i}: a markdown heading inside a code cell: {heading!r} (start a "
                                 "markdown cell with '# %% [markdown]' above it)")
        meta = cell.metadata.get("nbgrader")
        if meta is None:
            continue
        where = f"cell {i} ({meta.get('grade_id', 'no grade_id')})"
        if cell.cell_type != "code":
            raise ValueError(f"{where}: exercise cells are code cells")
        if not isinstance(meta.get("grade_id"), str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", meta["grade_id"]):
            raise ValueError(f"{where}: an exercise cell needs a grade_id of letters, digits, '_', '.', '-'")
        if meta["grade_id"] in seen:
            raise ValueError(f"{where}: exercise id used twice: {meta['grade_id']!r}")
        seen.add(meta["grade_id"])
        want = GRADE_KEYS if meta.get("grade") else SOLUTION_KEYS
        wrong = {k: meta.get(k) for k, v in want.items() if meta.get(k) != v}
        if wrong:
            raise ValueError(f"{where}: nbgrader metadata {wrong} should be "
                             f"{ {k: want[k] for k in wrong} } for a {'graded' if meta.get('grade') else 'solution'} cell")
        if meta.get("grade"):
            if not isinstance(meta.get("points"), int) or meta["points"] <= 0:
                raise ValueError(f"{where}: a graded cell needs \"points\": N (a positive integer)")
            if RAISES not in cell.metadata.get("tags", []):
                # An unanswered check raises NotYet: with this tag, Run All (JupyterLab sends the cell
                # with stop_on_error false) and nbclient go on past it. nbgrader still scores it 0.
                raise ValueError(f"{where}: a graded cell carries the tag {RAISES!r}")
        elif "points" in meta:
            raise ValueError(f"{where}: points belong on the graded cell, not the solution cell")


def parse_cells(text: str):
    """A percent-format source's cells as (kind, source, tags, nbgrader metadata or None)."""
    return [(c.cell_type, c.source, list(c.metadata.get("tags", [])), c.metadata.get("nbgrader"))
            for c in read_source(text).cells]


def parse_percent(text: str):
    """A percent-format source's cells as (kind, source, tags)."""
    return [(kind, source, tags) for kind, source, tags, _ in parse_cells(text)]


def out_of_sync(notebook: Path) -> str | None:
    """None when notebooks/src/NN_name.py is exactly what jupytext writes for the stored notebook;
    otherwise the first differing line of each, numbered as in the source."""
    import nbformat
    notebook = Path(notebook)
    src = source_of(notebook)
    if not src.exists():
        return f"{src.name}: no source for {notebook.name}"
    want = source_text(nbformat.read(notebook, as_version=4)).splitlines()
    have = src.read_text().splitlines()
    for n, (a, b) in enumerate(zip(have, want), 1):
        if a != b:
            return f"{src.name} line {n}: the source has {a!r}, the notebook {b!r}"
    if len(have) != len(want):
        return (f"{src.name}: the source has {len(have)} lines, the notebook's cells {len(want)} "
                f"(from line {min(len(have), len(want)) + 1} on)")
    return None


def sync_back(notebook: Path) -> Path:
    """Write the source of an edited notebook (cells, tags, nbgrader metadata; outputs are not kept in
    sources): how an edit made in JupyterLab goes back to notebooks/src/. Checks the cells first."""
    import nbformat
    nb = nbformat.read(notebook, as_version=4)
    validate_cells(nb)
    src = source_of(notebook)
    text = source_text(nb)
    if not src.exists() or src.read_text() != text:
        src.write_text(text)
    return src


# What `python -m ipykernel install --sys-prefix --name python3` (make venv) registers, and so what
# JupyterLab writes into a notebook it saves: storing the same keeps an opened notebook unmodified.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
NBFORMAT_MINOR = 5          # JupyterLab 4 writes nbformat 4.5
VIEW_MIME = "application/vnd.jupyter.widget-view+json"
STATE_MIME = "application/vnd.jupyter.widget-state+json"
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


def build(src: Path, execute: bool = True, timeout: int = 600, out_dir: Path | None = None) -> Path:
    """Write `out_dir/NN_name.ipynb` (default notebooks/) from its source notebooks/src/NN_name.py;
    execute it in the STORED_BACKEND tier unless `execute` is False."""
    import nbformat
    src = Path(src)
    nb = read_source(src.read_text())
    nb.nbformat_minor = NBFORMAT_MINOR
    nb.metadata = {"kernelspec": dict(KERNELSPEC),
                   "language_info": {"name": "python"}}   # the kernel's own replaces it on execution
    out = Path(out_dir or NB_DIR) / (src.stem + ".ipynb")
    nbformat.write(_scrub(nb), out)
    if execute:
        execute_notebook(out, timeout=timeout)
        if out_dir is None and source_of(out).resolve() == src.resolve():
            # Executing tags a cell whose widget became a static copy `nbval-ignore-output` (see _scrub):
            # the pair stays in step when the source carries the tag too.
            text = source_text(nbformat.read(out, as_version=4))
            if text != src.read_text():
                src.write_text(text)
                print(f"build: {src.name} now carries the tags the build added (widget cells: nbval-ignore-output)")
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
    """Replace every widget view in `outputs` by one line naming the setting of its controls (what the
    widget drew for that setting is in the outputs before it: a headless run plays no front end, so the
    Output widgets' drawings land in the cell). Returns (new outputs, number of views replaced)."""
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
        line = ("Static copy of the widget: above is what it drew as built"
                + (f" ({', '.join(settings)})" if settings else "")
                + "; its controls need a running kernel: run this cell to use them.")
        new.append(nbformat.v4.new_output("display_data", data={"text/markdown": f"*{line}*",
                                                                "text/plain": line}))
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


def _client_class():
    """nbclient's NotebookClient without a front end for widgets."""
    from nbclient import NotebookClient
    return headless(NotebookClient)


@contextlib.contextmanager
def _kernel_manager():
    """A kernel manager talking to its kernel over Unix sockets in a private folder. Over TCP, jupyter_client
    picks five free ports and the kernel binds them a moment later: with other kernels starting on the same
    machine, a port taken in between ends the run with "Kernel didn't respond" (seen while soaking)."""
    import tempfile
    from jupyter_client import KernelManager
    with tempfile.TemporaryDirectory(prefix="bwlab-kernel-") as d:
        km = KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(d, "kernel"))
        try:
            yield km
        finally:
            if km.has_kernel:          # nbclient leaves a kernel it was given running
                km.shutdown_kernel(now=True)


# The tier the stored notebooks are executed in (and nbval compares in): no GPU needed, deterministic.
STORED_BACKEND = "emulated"


def _execute(nb, path: Path, timeout: int | None):
    """Execute `nb` (in place) in the STORED_BACKEND tier with the robust client."""
    env_backup = os.environ.get("BWLAB_BACKEND")
    os.environ["BWLAB_BACKEND"] = STORED_BACKEND
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    try:
        with _kernel_manager() as km:
            _client_class()(nb, km=km, timeout=timeout, record_timing=False, store_widget_state=True,
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


SANITIZE_CFG = NB_DIR / "sanitize.cfg"   # nbval's --nbval-sanitize-with file: volatile text in outputs
# Output keys nbval leaves out of its comparison (without nbdime): per-run metadata, tracebacks (the error's
# name and value are compared), prompt numbers, the widget model ids, and the pixels of raster images.
NBVAL_SKIP_KEYS = ("metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
                   VIEW_MIME, "image/png", "image/jpeg")


def stored_output_differences(stored, executed, sanitize_cfg: Path | None = SANITIZE_CFG) -> list[str]:
    """Compare an executed copy of a notebook with its stored outputs by the rules of strict nbval (`pytest
    --nbval --nbval-sanitize-with notebooks/sanitize.cfg`), so that one execution of a notebook serves both
    this check and others that need it run (the browser test's Run All). Returns one line per difference,
    empty when they agree.

    Per code cell, with nbval's own tag and comment rules (nbval-ignore-output, nbval-skip, raises-exception,
    # NBVAL_* markers): a cell that raised without raises-exception differs; unless its output is ignored,
    the streams of each name are merged (\\r and \\b applied), the outputs flattened to their keys and MIME
    types less NBVAL_SKIP_KEYS, the sanitize patterns applied to every string, and the values of each key
    compared in order. `stored` and `executed` are nbformat notebooks or paths."""
    import nbformat
    from nbval.plugin import (coalesce_streams, find_comment_markers, find_metadata_tags,
                              get_sanitize_patterns, transform_streams_for_comparison)
    stored, executed = (nb if isinstance(nb, dict) else nbformat.read(str(nb), as_version=4)
                        for nb in (stored, executed))
    patterns = get_sanitize_patterns(Path(sanitize_cfg).read_text()) if sanitize_cfg else []

    def clean(value):
        if isinstance(value, str):
            for regex, replace in patterns:
                value = re.sub(regex, replace, value)
        return value

    def flatten(outputs) -> dict:
        keyed = {}
        for out in transform_streams_for_comparison(coalesce_streams(copy.deepcopy(outputs))):
            for key, value in out.items():
                if key in NBVAL_SKIP_KEYS:
                    continue
                items = value.items() if key == "data" else [(key, value)]
                for k, v in items:
                    if k not in NBVAL_SKIP_KEYS:
                        keyed.setdefault(k, []).append(clean(v))
        return keyed

    want = [c for c in stored.cells if c.cell_type == "code"]
    have = [c for c in executed.cells if c.cell_type == "code"]
    if [c.source for c in want] != [c.source for c in have]:
        return [f"the executed copy's {len(have)} code cells are not the stored notebook's {len(want)}"]
    problems = []
    for n, (ref, test) in enumerate(zip(want, have)):
        options = dict(find_metadata_tags(ref.metadata))
        options.update(find_comment_markers(ref.source))
        if options.get("skip"):
            continue
        where = f"code cell {n}"
        errors = [o for o in test.get("outputs", []) if o.get("output_type") == "error"]
        if errors and not options.get("check_exception"):
            problems.append(f"{where} raised {errors[0].get('ename')}: {str(errors[0].get('evalue'))[:200]}")
            continue
        if ref.get("execution_count") is None:
            if ref.get("outputs"):
                problems.append(f"{where}: the stored cell has outputs but was never run")
            continue
        if test.get("execution_count") is None:
            problems.append(f"{where} did not run")
            continue
        if not options.get("check", True):
            continue
        a, b = flatten(ref.get("outputs", [])), flatten(test.get("outputs", []))
        if set(a) != set(b):
            problems.append(f"{where}: stored output fields {sorted(a)}, executed {sorted(b)}")
            continue
        for key in a:
            if a[key] != b[key]:
                problems.append(f"{where} {key}: stored {_short(a[key])}, executed {_short(b[key])}")
                break
    return problems


def _short(values) -> str:
    text = repr(values[0] if len(values) == 1 else values)
    return text if len(text) <= 300 else text[:297] + "..."


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


if __name__ == "__main__":
    raise SystemExit(main())

