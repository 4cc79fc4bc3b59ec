"""Building a notebook from its source and executing it headless in the stored tier; what is stored (no
widget views: one line naming their setting; the kernelspec JupyterLab writes)."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from ..headless import headless

from .sources import NB_DIR, read_source, source_of, source_text


# What `python -m ipykernel install --sys-prefix --name python3` (make venv) registers, and so what
# JupyterLab writes into a notebook it saves: storing the same keeps an opened notebook unmodified.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
NBFORMAT_MINOR = 5          # JupyterLab 4 writes nbformat 4.5
VIEW_MIME = "application/vnd.jupyter.widget-view+json"
STATE_MIME = "application/vnd.jupyter.widget-state+json"

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
