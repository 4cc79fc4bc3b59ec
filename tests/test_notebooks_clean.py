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
