"""The notebook builder/executor: widget views stored as static copies, metadata as JupyterLab writes it,
and headless execution of the widget notebooks that finishes every time (it used to stall)."""
import copy
import json
from pathlib import Path

import pytest

from bwlab.tools import notebooks as nbt

# The builder's tests need the notebook tooling of the dev extra (GPU images may lack it).
pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
WIDGET_NOTEBOOKS = ["01_tma_load", "02_multicast", "03a_umma_descriptors", "04_tmem_load"]


def _ref(model_id):
    return f"IPY_MODEL_{model_id}"


def _state():
    """An `interactive` as nbclient stores it: VBox(Dropdown, Checkbox, Output(figure + text))."""
    def model(name, **state):
        return {"model_name": name, "model_module": "@jupyter-widgets/controls",
                "model_module_version": "2.0.0", "state": {"_model_name": name, **state}}
    return {
        "box": model("VBoxModel", children=[_ref("dd"), _ref("cb"), _ref("out")]),
        "dd": model("DropdownModel", description="shape", index=1, _options_labels=["a", "b"]),
        "cb": model("CheckboxModel", description="pack", value=False),
        "out": model("OutputModel", outputs=[
            {"output_type": "display_data", "metadata": {},
             "data": {"image/png": "iVBOR", "text/plain": "<Figure size 1x1>"}},
            {"output_type": "stream", "name": "stdout", "text": "hello\n"}]),
        "unused": model("LayoutModel"),
    }


def _view_output(model_id="box"):
    return {"output_type": "execute_result", "execution_count": 3, "metadata": {},
            "data": {nbt.VIEW_MIME: {"model_id": model_id, "version_major": 2, "version_minor": 0},
                     "text/plain": "interactive(children=...)"}}


def test_widget_view_becomes_note_and_captured_outputs():
    before = {"output_type": "stream", "name": "stdout", "text": "first\n"}
    outs, n = nbt.widget_fallbacks([before, _view_output()], _state())
    assert n == 1
    assert [o["output_type"] for o in outs] == ["stream", "display_data", "display_data", "stream"]
    note = "".join(outs[1]["data"]["text/plain"])
    assert "shape = b" in note and "pack = False" in note and "running kernel" in note
    assert outs[2]["data"]["image/png"] == "iVBOR" and outs[3]["text"] == "hello\n"
    assert not any(nbt.VIEW_MIME in o.get("data", {}) for o in outs)


def test_scrub_is_deterministic_and_writes_what_jupyterlab_writes():
    import nbformat
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("w")])
    nb.cells[0]["outputs"] = [nbformat.from_dict(_view_output())]
    nb.metadata["widgets"] = {nbt.STATE_MIME: {"state": _state(), "version_major": 2, "version_minor": 0}}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    a = nbformat.writes(nbt._scrub(copy.deepcopy(nb)))
    b = nbformat.writes(nbt._scrub(copy.deepcopy(nb)))
    assert a == b
    out = json.loads(a)
    assert out["metadata"]["kernelspec"]["display_name"] == "Python 3 (ipykernel)"
    assert out["metadata"]["widgets"] == {nbt.STATE_MIME: {"state": {}, "version_major": 2,
                                                           "version_minor": 0}}
    assert out["nbformat_minor"] == nbt.NBFORMAT_MINOR
    assert "nbval-ignore-output" in out["cells"][0]["metadata"]["tags"]
    assert out["cells"][0]["id"] == "cell-000"


@pytest.mark.parametrize("name", ["00_orientation", *WIDGET_NOTEBOOKS, "05_tma_store", "07_gemm_ladder"])
def test_stored_notebooks_have_no_widget_views(name):
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    views = [o for c in nb["cells"] for o in c.get("outputs", []) if nbt.VIEW_MIME in o.get("data", {})]
    assert not views, "a stored widget view shows 'model not found' in JupyterLab: rebuild the notebook"
    assert nb["metadata"]["kernelspec"] == nbt.KERNELSPEC
    assert nb["metadata"]["widgets"][nbt.STATE_MIME]["state"] == {}


def test_lab_settings_and_args(tmp_path):
    path = nbt.install_lab_settings(str(tmp_path))
    assert json.loads(path.read_text()) == {"@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}}
    assert path == tmp_path / "share/jupyter/lab/settings/overrides.d/bwlab.json"
    assert "--ContentsManager.hide_globs=src" in nbt.lab_args()


def test_widget_notebooks_execute_headless_every_time():
    """Two headless runs of each widget notebook (about a minute and a half on 2 cores). Before the
    fix, 1 run in 3 of 01/04 waited for the execute_reply until the cell timeout; a stall now shows
    as a run that reaches the timeout."""
    pytest.importorskip("ipywidgets")
    pytest.importorskip("ipykernel")
    pytest.importorskip("nbclient")
    import io
    timeout = 60
    res = nbt.soak([ROOT / "notebooks" / f"{n}.ipynb" for n in WIDGET_NOTEBOOKS], runs=2,
                   timeout=timeout, out=io.StringIO())
    for name, (done, runs, times) in res.items():
        assert done == runs, name
        assert max(times) < timeout, f"{name}: a run took {max(times):.0f} s (a stalled wait?)"


def test_builder_refuses_a_markdown_heading_in_a_code_cell():
    with pytest.raises(ValueError, match="markdown heading inside a code cell"):
        nbt.parse_cells("# %%\nx = 1\n\n# ## 7. A section\n# text\n")
    with pytest.raises(ValueError, match="markdown heading inside a code cell"):
        nbt.parse_cells("# %%\nx = 1\n#\n# ### Step 4: more\n")
    # a comment that is not a heading, and the exercise markers, are code
    cells = nbt.parse_cells("# %%\n# rows #1 and #2\n### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n")
    assert cells[0][0] == "code"


NOTEBOOK_NAMES = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))


@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_no_code_cell_holds_a_markdown_heading(name):
    """A heading left in a code cell as a comment is missing from the table of contents: every section
    heading of the stored notebooks (and of their sources) is a markdown cell."""
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            assert not nbt._HEADING_IN_CODE.match(line), f"{name}.ipynb cell {i}: {line!r} is a heading"
    nbt.parse_cells((ROOT / "notebooks" / "src" / f"{name}.py").read_text())   # refuses one in the source


# ---------------------------------------------------------------------------------------------------
# the student edition: `make lab STUDENT=1`

def test_grade_cells_carry_raises_exception():
    """Run All goes on past an unanswered check: JupyterLab sends a cell tagged raises-exception with
    stop_on_error false, and nbclient allows its error."""
    cells = nbt.parse_cells("# %% solution id=a_b\nx = None\n\n# %% grade id=a_b_check points=1\ncheck(x)\n")
    assert cells[1][3]["grade"]
    for name in NOTEBOOK_NAMES:
        nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
        for i, cell in enumerate(nb["cells"]):
            if cell["metadata"].get("nbgrader", {}).get("grade"):
                assert nbt.RAISES in cell["metadata"].get("tags", []), f"{name} cell {i}"


def test_work_folder_never_overwrites_a_learners_work(tmp_path):
    rel = tmp_path / "release"
    rel.mkdir()
    (rel / "01_a.ipynb").write_text("edition 1 of a")
    (rel / "02_b.ipynb").write_text("edition 1 of b")
    editions = {p.name: p for p in rel.iterdir()}
    work = tmp_path / "work"
    assert nbt.fill_work_folder(work, editions) == ["01_a.ipynb: copied", "02_b.ipynb: copied"]
    assert (work / "01_a.ipynb").read_text() == "edition 1 of a"
    (work / "01_a.ipynb").write_text("my answers")                  # the learner works on a, not on b
    (rel / "01_a.ipynb").write_text("edition 2 of a")
    (rel / "02_b.ipynb").write_text("edition 2 of b")
    lines = nbt.fill_work_folder(work, editions)
    assert lines == ["01_a.ipynb: kept your work; the new edition is updates/01_a.ipynb",
                     "02_b.ipynb: replaced by the new edition (you had not changed it)"]
    assert (work / "01_a.ipynb").read_text() == "my answers"
    assert (work / "updates" / "01_a.ipynb").read_text() == "edition 2 of a"
    assert (work / "02_b.ipynb").read_text() == "edition 2 of b"
    assert nbt.fill_work_folder(work, editions)[1] == "02_b.ipynb: up to date"
    assert (work / "01_a.ipynb").read_text() == "my answers"      # and again: still kept


def test_student_lab_turns_off_nbgrader_ui(tmp_path):
    """The config directory of `lab --student`, first on JUPYTER_CONFIG_PATH, disables nbgrader's server
    extensions and its labextension for that launch (checked in a fresh interpreter, as Jupyter reads
    them), while the default launch keeps them."""
    pytest.importorskip("jupyterlab_server")
    import subprocess
    import sys
    code = ("from jupyter_server.extension.config import ExtensionConfigManager as M\n"
            "from jupyter_core.paths import jupyter_config_path as p\n"
            "from jupyterlab_server.config import get_page_config\n"
            "on = M(read_config_path=p()).get_jpserver_extensions()\n"
            "print(sorted(k for k, v in on.items() if v and 'nbgrader' in k))\n"
            "print(get_page_config([], None)['disabledExtensions'])\n")
    env = nbt.student_lab_env(nbt.student_lab_config(tmp_path / "cfg"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", repr([nbt.NBGRADER_LABEXTENSION])]
