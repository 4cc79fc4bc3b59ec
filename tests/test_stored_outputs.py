"""bwlab.tools.notebooks.stored_output_differences: an executed copy of a notebook against its stored outputs,
by strict nbval's rules (what the browser test applies to its Run All, so that CI executes each notebook once).
Each case changes one thing in an executed copy and says whether nbval would call it a difference."""
import copy

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbval")

from bwlab.tools import notebooks as nbt  # noqa: E402

v4 = nbformat.v4


def _stored():
    """A small notebook as the builder stores it: text, an address, a figure, an ignored cell, a check."""
    cells = [
        v4.new_markdown_cell("# title"),
        v4.new_code_cell("print('tiles', 2)\nprint('bytes', 2048)", execution_count=1,
                         outputs=[v4.new_output("stream", name="stdout", text="tiles 2\nbytes 2048\n")]),
        v4.new_code_cell("obj", execution_count=2, outputs=[v4.new_output(
            "execute_result", execution_count=2, data={"text/plain": "<Thing at 0x7f00aa>"})]),
        v4.new_code_cell("plot()", execution_count=3, outputs=[v4.new_output(
            "display_data", data={"image/png": "iVBORw0KGgoA", "text/plain": "<Figure size 640x480 with 1 Axes>"})]),
        v4.new_code_cell("import bwlab; bwlab.banner()", execution_count=4, metadata={"tags": ["nbval-ignore-output"]},
                         outputs=[v4.new_output("stream", name="stdout", text="model tier on this machine\n")]),
        v4.new_code_cell("check(answer)", execution_count=5, metadata={"tags": ["raises-exception"]},
                         outputs=[v4.new_output("error", ename="NotYet", evalue="no answer yet", traceback=["x"])]),
    ]
    return v4.new_notebook(cells=cells)


def _outputs(nb, i):
    return nb.cells[i].outputs


def test_a_faithful_run_agrees():
    stored = _stored()
    run = copy.deepcopy(stored)
    # what differs between runs and nbval leaves out: prompt numbers, output metadata, tracebacks, the
    # address (sanitize.cfg), the pixels, a stream split over two messages, the ignored cell's text
    for c, n in zip(run.cells[1:], range(11, 20)):
        c.execution_count = n
    out = _outputs(run, 2)[0]
    out.execution_count, out.metadata = 12, {"note": 1}
    out.data["text/plain"] = "<Thing at 0x55beef>"
    _outputs(run, 3)[0].data["image/png"] = "iVBORw0KGgoB"
    run.cells[1].outputs = [v4.new_output("stream", name="stdout", text="tiles 2\n"),
                            v4.new_output("stream", name="stdout", text="bytes 2048\n")]
    _outputs(run, 4)[0].text = "emulated tier on this machine\n"
    _outputs(run, 5)[0].traceback = ["another", "traceback"]
    assert nbt.stored_output_differences(stored, run) == []


def _changed(edit):
    stored = _stored()
    run = copy.deepcopy(stored)
    edit(run)
    return nbt.stored_output_differences(stored, run)


def _set(obj, key, value):
    obj[key] = value


@pytest.mark.parametrize("edit,words", [
    (lambda nb: _set(_outputs(nb, 1)[0], "text", "tiles 3\nbytes 2048\n"), "code cell 0 stdout"),
    (lambda nb: _set(_outputs(nb, 2)[0].data, "text/plain", "<Other at 0x7f00aa>"), "code cell 1 text/plain"),
    (lambda nb: _set(_outputs(nb, 3)[0].data, "text/plain", "<Figure size 640x480 with 2 Axes>"),
     "code cell 2 text/plain"),
    (lambda nb: _set(nb.cells[1], "outputs", []), "code cell 0: stored output fields ['stdout'], executed []"),
    (lambda nb: _outputs(nb, 1).append(v4.new_output("stream", name="stderr", text="warning\n")),
     "executed ['stderr', 'stdout']"),
    (lambda nb: _set(_outputs(nb, 5)[0], "evalue", "expected 2048, got 1024"), "code cell 4 evalue"),
    (lambda nb: _set(nb.cells[2], "outputs", [v4.new_output("error", ename="TypeError", evalue="bad",
                                                            traceback=[])]), "code cell 1 raised TypeError: bad"),
    (lambda nb: _set(nb.cells[4], "outputs", [v4.new_output("error", ename="ImportError", evalue="no bwlab",
                                                            traceback=[])]), "code cell 3 raised ImportError"),
    (lambda nb: _set(nb.cells[3], "execution_count", None), "code cell 2 did not run"),
    (lambda nb: nb.cells.append(v4.new_code_cell("extra")), "code cells are not the stored notebook's"),
], ids=["stream", "result-text", "figure-text", "missing-output", "extra-stream", "error-value",
        "unexpected-error", "error-in-ignored-cell", "not-run", "other-cells"])
def test_a_difference_is_named(edit, words):
    found = _changed(edit)
    assert len(found) == 1 and words in found[0], found


def test_without_the_sanitize_file_an_address_differs():
    stored = _stored()
    run = copy.deepcopy(stored)
    _outputs(run, 2)[0].data["text/plain"] = "<Thing at 0x55beef>"
    assert nbt.stored_output_differences(stored, run) == []
    assert nbt.stored_output_differences(stored, run, sanitize_cfg=None) == [
        "code cell 1 text/plain: stored '<Thing at 0x7f00aa>', executed '<Thing at 0x55beef>'"]


def test_nbval_skip_and_comment_markers_as_nbval_reads_them():
    stored = _stored()
    stored.cells[1].source = "# NBVAL_IGNORE_OUTPUT\n" + stored.cells[1].source
    stored.cells[2].metadata["tags"] = ["nbval-skip"]
    run = copy.deepcopy(stored)
    _outputs(run, 1)[0].text = "anything\n"
    run.cells[2].outputs = [v4.new_output("error", ename="RuntimeError", evalue="skipped by nbval", traceback=[])]
    assert nbt.stored_output_differences(stored, run) == []


def test_a_stored_notebook_read_from_disk(tmp_path):
    """Paths work as well as notebooks: the stored side read as nbformat reads it (multi-line text joined)."""
    stored = _stored()
    nbformat.write(stored, tmp_path / "stored.ipynb")
    run = copy.deepcopy(stored)
    _outputs(run, 1)[0].text = "tiles 2\nbytes 4096\n"
    nbformat.write(run, tmp_path / "run.ipynb")
    (found,) = nbt.stored_output_differences(tmp_path / "stored.ipynb", tmp_path / "run.ipynb")
    assert "bytes 4096" in found
