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
and executes it in the model tier (BWLAB_BACKEND=model), so the stored outputs are what strict nbval
compares on a CPU-only CI machine. `execute` re-runs existing .ipynb files in place.

`python -m bwlab.tools.notebooks run notebooks/src/01_tma_load.py` executes the code cells in order in one
namespace with plain Python, in whatever tier this machine gives (no Jupyter needed: this is how the
notebooks are run on the GPU machines, whose image has no IPython). Figures are drawn with the Agg
backend and closed; a cell that needs IPython/ipywidgets where they are missing is reported as skipped.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NB_DIR = ROOT / "notebooks"

_CELL = re.compile(r"^# %%(?P<md> \[markdown\])?(?:\s+tags=\[(?P<tags>[^\]]*)\])?\s*$")


def parse_percent(text: str):
    """Split a percent-format script into (kind, source, tags) cells."""
    cells, kind, tags, buf = [], None, [], []

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
        cells.append((kind, "\n".join(lines), tags))

    for line in text.splitlines():
        m = _CELL.match(line)
        if m:
            flush()
            kind = "markdown" if m.group("md") else "code"
            tags = [t.strip().strip("'\"") for t in (m.group("tags") or "").split(",") if t.strip()]
            buf = []
        else:
            buf.append(line)
    flush()
    return cells


def build(src: Path, execute: bool = True, timeout: int = 600) -> Path:
    import nbformat
    src = Path(src)
    cells = []
    for kind, source, tags in parse_percent(src.read_text()):
        cell = (nbformat.v4.new_markdown_cell(source) if kind == "markdown"
                else nbformat.v4.new_code_cell(source))
        if tags:
            cell.metadata["tags"] = tags
        cells.append(cell)
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    out = NB_DIR / (src.stem + ".ipynb")
    nbformat.write(nb, out)
    if execute:
        execute_notebook(out, timeout=timeout)
    return out


def _scrub(nb):
    """Make stored outputs deterministic: no execution timestamps, stable cell and widget ids."""
    for i, cell in enumerate(nb.cells):
        cell.metadata.pop("execution", None)
        cell["id"] = f"cell-{i:03d}"
        if cell.get("outputs"):
            # One print can arrive as several stream messages (flush timing): merge neighbours.
            merged = []
            for out in cell["outputs"]:
                if (merged and out.get("output_type") == "stream"
                        and merged[-1].get("output_type") == "stream"
                        and merged[-1].get("name") == out.get("name")):
                    merged[-1]["text"] = "".join(merged[-1]["text"]) + "".join(out["text"])
                else:
                    merged.append(out)
            cell["outputs"] = merged
        for j, out in enumerate(cell.get("outputs", [])):
            out.get("metadata", {}).pop("execution", None)
            view = out.get("data", {}).get("application/vnd.jupyter.widget-view+json")
            if isinstance(view, dict) and "model_id" in view:
                # A random uuid per run; the stored widget state is dropped anyway (no live kernel).
                view["model_id"] = f"{i:03d}{j:03d}".ljust(32, "0")
    nb.metadata.pop("widgets", None)
    return nb


def execute_notebook(path: Path, timeout: int = 600) -> None:
    import nbformat
    from nbclient import NotebookClient
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    env_backup = os.environ.get("BWLAB_BACKEND")
    os.environ["BWLAB_BACKEND"] = "model"
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        if env_backup is None:
            os.environ.pop("BWLAB_BACKEND", None)
        else:
            os.environ["BWLAB_BACKEND"] = env_backup
    nbformat.write(_scrub(nb), path)


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
    if argv and argv[0] == "run":
        failed = 0
        for p in argv[1:]:
            failed += run_cells(Path(p))[1]
        return 1 if failed else 0
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
