"""What a learner opens: stored notebooks speak of the hardware and the code, show real GPU results only,
and carry no machine paths or widget views that JupyterLab cannot draw."""
import json
from pathlib import Path

import pytest

NB = sorted((Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb"))
FORBIDDEN = ("provisional", "replace by the H100", "seed document", "REFERENCE.md", "/work/", "/root/",
             "/home/", "/tmp/", "model not found", "application/vnd.jupyter.widget-view+json")


@pytest.mark.parametrize("path", NB, ids=[p.stem for p in NB])
def test_stored_notebook_is_clean(path):
    text = path.read_text()
    found = [w for w in FORBIDDEN if w in text]
    assert not found, f"{path.name} contains {found}"
    nb = json.loads(text)
    errors = [i for i, c in enumerate(nb["cells"]) for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name}: stored error outputs in cells {errors}"


# ---- one tier story ------------------------------------------------------------------------------
SOURCES = sorted((Path(__file__).resolve().parent.parent / "notebooks" / "src").glob("*.py"))
TIER_IN_PROSE = __import__("re").compile(
    r"(?i)\b(hardware|hybrid|emulated|model)[*_`]*\s+tiers?\b|\btiers?\W{1,3}(hardware|hybrid|emulated|model)\b")


def _markdown_outside_the_tier_table(path):
    """The markdown of a notebook source, less notebook 00's section that states the tiers."""
    from bwlab.tools.notebooks import parse_cells
    out, in_table = [], False
    for kind, src, *_ in parse_cells(path.read_text()):
        if kind != "markdown":
            continue
        first = src.lstrip().splitlines()[0] if src.strip() else ""
        if first.startswith("## "):
            in_table = path.stem.startswith("00") and "tiers" in first
        if not in_table:
            out.append(src)
    return "\n".join(out)


@pytest.mark.parametrize("path", SOURCES, ids=[p.stem for p in SOURCES])
def test_no_notebook_names_a_tier_in_prose(path):
    """The tiers are stated once (00's table, the README's); everywhere else what runs where comes from
    `bwlab.device.where`, printed by a code cell, so that the words cannot contradict the banner."""
    hits = [m.group(0) for m in TIER_IN_PROSE.finditer(_markdown_outside_the_tier_table(path))]
    assert not hits, f"{path.name} names tiers in its prose: {hits}"


# ---- short outputs -------------------------------------------------------------------------------
def visible_lines(cell) -> int:
    """The lines a code cell's outputs show before anything is unfolded: stream text, and the text of a
    result (its text/plain; an HTML result that folds with <details> shows its head and one line,
    which is what its text/plain holds). Pictures count nothing."""
    n = 0
    for o in cell.get("outputs", []):
        if o.get("output_type") == "stream":
            n += len("".join(o.get("text", "")).splitlines())
        elif o.get("output_type") == "error":
            n += len(o.get("traceback", []))
        else:
            data = o.get("data", {})
            if "image/png" in data or "image/svg+xml" in data:
                continue
            html = "".join(data.get("text/html", ""))
            if html and "<details" not in html and "text/plain" not in data:
                n += html.count("\n") + 1
            else:
                n += len("".join(data.get("text/plain", "")).splitlines())
    return n


@pytest.mark.parametrize("path", NB, ids=[p.stem for p in NB])
def test_no_output_cell_over_40_lines(path):
    from bwlab.lab import FOLD_AT
    nb = json.loads(path.read_text())
    long = [(i, visible_lines(c)) for i, c in enumerate(nb["cells"])
            if c["cell_type"] == "code" and visible_lines(c) > FOLD_AT]
    assert not long, f"{path.name}: output cells over {FOLD_AT} lines (cell, lines): {long}"


def test_a_folded_output_shows_its_head_and_keeps_the_rest():
    from bwlab.lab import Folded
    text = "\n".join(f"line {i}" for i in range(100))
    f = Folded(text, head=30, summary="70 more lines")
    assert repr(f).count("\n") == 30 and "70 more lines" in repr(f) and str(f) == text
    html = f._repr_html_()
    assert "<details><summary>70 more lines</summary>" in html and "line 99" in html
    assert visible_lines({"outputs": [{"output_type": "display_data",
                                       "data": {"text/plain": repr(f), "text/html": html}}]}) == 31
