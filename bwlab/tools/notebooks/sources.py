"""A notebook and its source (notebooks/src/NN_name.py, jupytext's percent format): how they pair, the checks
on a source's cells and their nbgrader metadata, and writing the source of an edited notebook."""
from __future__ import annotations

import re
from pathlib import Path


ROOT = Path(__file__).resolve().parents[3]
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


RAISES = "raises-exception"  # the tag every graded cell carries (see build)
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
