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
