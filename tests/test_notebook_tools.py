"""The notebook builder/executor: widget views stored as static copies, metadata as JupyterLab writes it,
and headless execution of the widget notebooks that finishes every time (it used to stall)."""
import copy
import json
import re
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


def test_widget_view_becomes_one_line_after_what_it_drew():
    drawn = {"output_type": "display_data", "metadata": {},
             "data": {"image/png": "iVBOR", "text/plain": "<Figure size 1x1>"}}
    outs, n = nbt.widget_fallbacks([drawn, _view_output()], _state())
    assert n == 1
    assert [o["output_type"] for o in outs] == ["display_data", "display_data"]
    assert outs[0] == drawn
    note = "".join(outs[1]["data"]["text/plain"])
    assert "shape = b" in note and "pack = False" in note and "running kernel" in note
    assert not any(nbt.VIEW_MIME in o.get("data", {}) for o in outs)


def test_headless_client_plays_no_widget_front_end():
    """nbclient's default answers a widget's comm_open with a double of the Output widget that echoes
    outputs to the kernel (the echo that stalled runs); the headless client answers with nothing."""
    nbclient = pytest.importorskip("nbclient")
    import nbformat
    client = nbt._client_class()(nbformat.v4.new_notebook(), kernel_name="python3")
    msg = {"content": {"comm_id": "c1", "data": {"state": {"_model_module": "@jupyter-widgets/output",
                                                           "_model_name": "OutputModel", "outputs": []}}}}
    assert nbclient.NotebookClient.on_comm_open_jupyter_widget(client, msg) is not None   # the default's double
    assert client.on_comm_open_jupyter_widget(msg) is None


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


SOLUTION = '# %% nbgrader={"grade": false, "grade_id": "a", "locked": false, "schema_version": 3, "solution": true}'
GRADED = ('# %% nbgrader={"grade": true, "grade_id": "a_check", "locked": true, "points": 2, "schema_version": 3, '
          '"solution": false} tags=["raises-exception"]')


def test_builder_refuses_a_markdown_heading_in_a_code_cell():
    with pytest.raises(ValueError, match="markdown heading inside a code cell"):
        nbt.parse_cells("# %%\nx = 1\n\n# ## 7. A section\n# text\n")
    with pytest.raises(ValueError, match="markdown heading inside a code cell"):
        nbt.parse_cells("# %%\nx = 1\n#\n# ### Step 4: more\n")
    # a comment that is not a heading, and the exercise markers, are code
    cells = nbt.parse_cells("# %%\n# rows #1 and #2\n### BEGIN SOLUTION\nx = 1\n### END SOLUTION\n")
    assert cells[0][0] == "code"


def test_parse_cells_reads_jupytext_percent_with_nbgrader_metadata():
    cells = nbt.parse_cells(f"# %% [markdown]\n# # Title\n# text\n\n# %% tags=[\"nbval-ignore-output\"]\nx = 1\n\n"
                            f"{SOLUTION}\nx = None\n\n{GRADED}\ncheck(x)\n")
    assert [(k, s, t) for k, s, t, _ in cells] == [
        ("markdown", "# Title\ntext", []), ("code", "x = 1", ["nbval-ignore-output"]),
        ("code", "x = None", []), ("code", "check(x)", ["raises-exception"])]
    assert cells[2][3]["solution"] and cells[3][3] == {**nbt.GRADE_KEYS, "grade_id": "a_check", "points": 2}


@pytest.mark.parametrize("header, words", [
    (SOLUTION.replace('"solution": true', '"solution": true, "points": 2'), "points belong on the graded cell"),
    (GRADED.replace('"points": 2, ', ""), "needs \"points\": N"),
    (GRADED.replace('"points": 2', '"points": "two"'), "needs \"points\": N"),
    (GRADED.replace(' tags=["raises-exception"]', ""), "carries the tag 'raises-exception'"),
    (GRADED.replace('"locked": true', '"locked": false'), "{'locked': False} should be {'locked': True}"),
    (SOLUTION.replace('"grade_id": "a", ', ""), "needs a grade_id"),
    (SOLUTION.replace('# %% ', '# %% [markdown] '), "exercise cells are code cells"),
])
def test_parse_cells_refuses_bad_exercise_metadata(header, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        nbt.parse_cells(f"# %%\nx = 1\n\n{header}\ny = 2\n")


def test_parse_cells_refuses_an_id_used_twice():
    with pytest.raises(ValueError, match="used twice"):
        nbt.parse_cells(f"{SOLUTION}\nx = None\n\n{SOLUTION}\ncheck(x)\n")


def test_jupytext_toml_pairs_as_the_builder_does():
    """`jupytext --sync` and jupytext's JupyterLab extension read jupytext.toml; the builder and
    check-sync use JUPYTEXT_CONFIG: the two must say the same."""
    jupytext_config = pytest.importorskip("jupytext.config")
    cfg = jupytext_config.load_jupytext_configuration_file(str(ROOT / "jupytext.toml"))
    assert cfg.formats in ("notebooks///ipynb,notebooks/src///py:percent",
                           ["notebooks///ipynb,notebooks/src///py:percent"])
    assert {k: getattr(cfg, k) for k in nbt.JUPYTEXT_CONFIG} == nbt.JUPYTEXT_CONFIG


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

@pytest.mark.parametrize("name", NOTEBOOK_NAMES)
def test_source_and_notebook_agree(name):
    """notebooks/src/NN_name.py is exactly what jupytext writes for the stored notebook (cells, tags,
    nbgrader metadata): an edit to one without the other fails here. After editing a source, rebuild
    (`python -m bwlab.tools.notebooks build notebooks/src/NN_name.py`); after editing the notebook in
    JupyterLab, sync (`python -m bwlab.tools.notebooks sync notebooks/NN_name.ipynb`)."""
    assert nbt.out_of_sync(ROOT / "notebooks" / f"{name}.ipynb") is None, nbt.out_of_sync(
        ROOT / "notebooks" / f"{name}.ipynb")


def test_an_edit_in_jupyterlab_syncs_back_and_a_drift_is_caught(tmp_path):
    import nbformat
    (tmp_path / "src").mkdir()
    name = NOTEBOOK_NAMES[0]
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    nb.cells[1].source += "\nprint('edited in JupyterLab')"
    nbformat.write(nb, tmp_path / f"{name}.ipynb")
    (tmp_path / "src" / f"{name}.py").write_text((ROOT / "notebooks" / "src" / f"{name}.py").read_text())
    drift = nbt.out_of_sync(tmp_path / f"{name}.ipynb")
    assert drift and "edited in JupyterLab" in drift
    assert nbt.main(["check-sync", str(tmp_path / f"{name}.ipynb")]) == 1
    src = nbt.sync_back(tmp_path / f"{name}.ipynb")
    assert "print('edited in JupyterLab')" in src.read_text()
    assert nbt.out_of_sync(tmp_path / f"{name}.ipynb") is None
    (tmp_path / "rebuilt").mkdir()
    rebuilt = nbt.build(src, execute=False, out_dir=tmp_path / "rebuilt")
    assert [c.source for c in nbformat.read(rebuilt, as_version=4).cells] == [c.source for c in nb.cells]


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


def test_work_folder_reports_real_updates_only(tmp_path):
    """Run twice with nothing new released: the learner's changed notebooks are not copied to updates/
    as 'new editions'; a later edition is announced once."""
    rel = tmp_path / "release"
    rel.mkdir()
    (rel / "01_a.ipynb").write_text("edition 1 of a")
    editions = {p.name: p for p in rel.iterdir()}
    work = tmp_path / "work"
    nbt.fill_work_folder(work, editions)
    (work / "01_a.ipynb").write_text("edition 1 of a, opened and saved by JupyterLab")
    for _ in range(2):
        assert nbt.fill_work_folder(work, editions) == ["01_a.ipynb: your work (no new edition)"]
    assert not (work / "updates").exists()
    (rel / "01_a.ipynb").write_text("edition 2 of a")
    assert nbt.fill_work_folder(work, editions) == ["01_a.ipynb: kept your work; the new edition is updates/01_a.ipynb"]
    assert nbt.fill_work_folder(work, editions) == ["01_a.ipynb: your work (no new edition)"]


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


def test_a_save_in_jupyterlab_writes_the_source(tmp_path):
    """`make lab` runs JupyterLab with jupytext's contents manager (its server extension is enabled on
    install), which reads jupytext.toml: saving notebooks/NN_name.ipynb writes notebooks/src/NN_name.py,
    the same text `sync` writes."""
    jupytext = pytest.importorskip("jupytext")
    import shutil
    import nbformat
    name = NOTEBOOK_NAMES[0]
    (tmp_path / "notebooks" / "src").mkdir(parents=True)
    shutil.copy(ROOT / "jupytext.toml", tmp_path)
    shutil.copy(ROOT / "notebooks" / f"{name}.ipynb", tmp_path / "notebooks")
    shutil.copy(ROOT / "notebooks" / "src" / f"{name}.py", tmp_path / "notebooks" / "src")
    cm = jupytext.TextFileContentsManager(root_dir=str(tmp_path))
    model = cm.get(f"notebooks/{name}.ipynb")
    model["content"].cells[1].source += "\nprint('saved in JupyterLab')"
    cm.save(model, f"notebooks/{name}.ipynb")
    src = (tmp_path / "notebooks" / "src" / f"{name}.py").read_text()
    assert "print('saved in JupyterLab')" in src
    assert src == nbt.source_text(nbformat.read(tmp_path / "notebooks" / f"{name}.ipynb", as_version=4))
