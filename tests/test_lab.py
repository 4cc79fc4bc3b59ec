"""Teaching kernels a learner edits: compile errors point at the learner's line; %%cuda keeps only a
kernel that compiles; recordings round-trip."""
import numpy as np
import pytest

from bwlab import lab
from bwlab.compile import CompileError, compile_text
from bwlab.results import load_recording, save_recording

BROKEN = '#include "ptx.cuh"\nextern "C" __global__ void k(int* p) {\n    int x = 1\n    p[0] = x;\n}\n'


def test_compile_error_names_the_learners_line():
    with pytest.raises(CompileError) as e:
        compile_text(BROKEN, "mine.cu", "sm_90a", use_cache=False)
    assert e.value.diagnostics == [("mine.cu", 4, "error", 'expected a ";"')]
    msg = str(e.value)
    assert "error on line 4" in msg and ">   4 |     p[0] = x;" in msg
    assert "/work" not in msg and "cuda_src" in msg        # no machine paths in what a learner sees


def test_teaching_kernel_replace_and_diff():
    k = lab.TeachingKernel("hello_bulk.cu")
    assert not k.edited and k.targets == ("sm_90a",)
    m = k.replace("mbarrier_init(&smem_full, 1)", "mbarrier_init(&smem_full, 2)")
    assert m.edited and "+        mbarrier_init(&smem_full, 2);" in m.diff()
    assert m.compile().name == "hello_bulk.cu"
    with pytest.raises(ValueError, match="expected 1 occurrence"):
        k.replace("no such text", "x")


def test_cuda_magic_keeps_only_what_compiles(capsys):
    lab.EDITS.clear()
    text = lab.TeachingKernel("hello_bulk.cu").text
    lab._cuda_magic("hello_bulk.cu", text.replace("mbarrier_init(", "mbarrier_initx("))
    assert "NOT kept" in capsys.readouterr().out and "hello_bulk.cu" not in lab.EDITS
    lab._cuda_magic("hello_bulk.cu", text.replace("mbarrier_init(&smem_full, 1)", "mbarrier_init(&smem_full, 1 )"))
    assert lab.edited("hello_bulk").edited
    lab.EDITS.clear()


def test_recording_round_trip(tmp_path):
    save_recording(tmp_path, "demo", {"smem": np.arange(4, dtype=np.uint8)}, stage="tma",
                   device="NVIDIA H100 80GB HBM3", date="2026-11-22", command="x", params={"n": 4})
    rec = load_recording("demo", tmp_path)
    assert rec.label == "recorded on an NVIDIA H100 80GB HBM3 on 2026-11-22"
    assert rec["smem"].tolist() == [0, 1, 2, 3] and rec.params == {"n": 4}
    with pytest.raises(ValueError, match="reserved"):
        save_recording(tmp_path, "bad", {"meta": np.zeros(1)})


def test_module_docstring_example_runs(capsys):
    """The example of help(bwlab.lab), run as written."""
    doc = lab.__doc__.splitlines()
    start = next(i for i, line in enumerate(doc) if "k = TeachingKernel(" in line)
    end = next(i for i, line in enumerate(doc) if "print(mine.diff())" in line)
    code = "\n".join(line[4:] for line in doc[start:end + 1])
    ns = {"TeachingKernel": lab.TeachingKernel}
    exec(code, ns)
    assert ns["mine"].edited and "box_bytes + 16" in capsys.readouterr().out


def test_cuda_magic_errors_count_the_cells_lines(capsys):
    lab.EDITS.clear()
    text = lab.TeachingKernel("hello_bulk.cu").text
    lines = text.splitlines()
    n = next(i for i, line in enumerate(lines, 1) if "mbarrier_init(&smem_full, 1)" in line)
    lab._cuda_magic("hello_bulk.cu", text.replace("mbarrier_init(&smem_full, 1)", "mbarrier_init(&smem_full, 1) x"))
    out = capsys.readouterr().out
    # the %%cuda line is line 1 of the cell, so the text's line n is the cell's line n + 1
    assert f"on line {n + 1} of this cell" in out and f">{n + 1:4d} | " in out and "NOT kept" in out
    assert "hello_bulk.cu" not in lab.EDITS


def test_cuda_magic_load_diff_reset(capsys, monkeypatch):
    try:
        import IPython
        monkeypatch.setattr(IPython, "get_ipython", lambda: None)   # no shell: --load returns the cell's text
    except ImportError:   # (the GPU image has no IPython: there is no shell anyway)
        pass
    lab.EDITS.clear()
    text = lab.TeachingKernel("hello_bulk.cu").text
    assert lab._cuda_magic("--load hello_bulk.cu") == "%%cuda hello_bulk.cu\n" + text.rstrip("\n")
    mine = text.replace("mbarrier_init(&smem_full, 1)", "mbarrier_init(&smem_full, 1 )")
    lab._cuda_magic("hello_bulk.cu", mine)
    assert lab.edited("hello_bulk.cu").edited and "Undo: %cuda --reset hello_bulk.cu" in capsys.readouterr().out
    assert lab._cuda_magic("--load hello_bulk") == "%%cuda hello_bulk.cu\n" + mine.rstrip("\n")
    lab._cuda_magic("--diff hello_bulk.cu")
    assert "+        mbarrier_init(&smem_full, 1 );" in capsys.readouterr().out
    lab._cuda_magic("--reset hello_bulk.cu")
    assert "reset hello_bulk.cu" in capsys.readouterr().out and not lab.edited("hello_bulk.cu").edited
    lab._cuda_magic("--reset hello_bulk.cu")
    assert "nothing to reset" in capsys.readouterr().out
    lab._cuda_magic("hello_bulk.cu", mine)
    assert lab.reset() == ["hello_bulk.cu"] and not lab.EDITS


def test_cuda_magics_in_ipython(capsys):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    lab.EDITS.clear()
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext bwlab.lab")
    text = lab.TeachingKernel("hello_bulk.cu").text.replace("mbarrier_init(&smem_full, 1)",
                                                            "mbarrier_init(&smem_full, 1 )")
    shell.run_cell("%%cuda hello_bulk.cu\n" + text)
    assert lab.edited("hello_bulk.cu").edited
    shell.run_cell("%cuda --reset hello_bulk.cu")
    assert not lab.EDITS
    assert "reset hello_bulk.cu" in capsys.readouterr().out
    shell.run_cell("%cuda --reset hello_bulk.cu")
    assert "nothing to reset" in capsys.readouterr().out


def _broken_hello():
    text = lab.TeachingKernel("hello_bulk.cu").text
    n = next(i for i, line in enumerate(text.splitlines(), 1) if "mbarrier_init(&smem_full, 1)" in line)
    return text.replace("mbarrier_init(&smem_full, 1)", "mbarrier_init(&smem_full, 1) x"), n


def test_cell_errors_html_highlights_the_cells_error_line():
    pytest.importorskip("pygments")
    import re
    text, n = _broken_hello()
    with pytest.raises(CompileError) as e:
        lab.TeachingKernel("hello_bulk.cu", text).compile("sm_90a")
    view = lab.CellErrors(e.value, "hello_bulk.cu")
    assert str(view) == lab.cell_errors(e.value, "hello_bulk.cu")
    html = view._repr_html_()
    assert f"error on line {n + 1} of this cell" in html
    # the marked line is the error's, numbered as in the cell; its neighbours are numbered but not marked
    marked = re.findall(r'<span style="background-color: #[0-9a-f]+"><span[^>]*>\s*(\d+)</span>(.*?)\n', html)
    assert [m[0] for m in marked] == [str(n + 1)]
    assert re.sub(r"<[^>]+>", "", marked[0][1]).strip() == "mbarrier_init(&amp;smem_full, 1) x;"
    # every shown line carries its number in the cell, blank lines included
    rows = re.findall(r'padding-right: 5px;">\s*(\d+)</span>(.*?)\n', html)
    cell = ("\n" + text).splitlines()         # the cell's line k is cell[k - 1] (line 1: the magic)
    assert len(rows) == 5 and all(re.sub(r"<[^>]+>", "", body).replace("&amp;", "&").replace("&quot;", '"')
                                  .replace("&lt;", "<").replace("&gt;", ">").replace("&#39;", "'").rstrip()
                                  == cell[int(k) - 1].rstrip() for k, body in rows)
    assert 'style="color:' in html                  # coloured by the CUDA lexer (inline styles)


def test_cuda_magic_error_in_ipython_counts_the_cells_lines(capsys):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    lab.EDITS.clear()
    shell = InteractiveShell.instance()
    shell.run_cell("%load_ext bwlab.lab")
    text, n = _broken_hello()
    shell.run_cell("%%cuda hello_bulk.cu\n" + text)
    out = capsys.readouterr().out
    assert f"on line {n + 1} of this cell" in out and "NOT kept" in out and not lab.EDITS


def test_cuda_magic_errors_in_a_subfolder_file_count_the_cells_lines(capsys):
    """A ladder step lives in a folder of cuda_src/: its errors are still told on the cell's lines, with
    the lines before the error (a missing ';' is reported on the next statement)."""
    lab.EDITS.clear()
    text = lab.TeachingKernel("gemm_sm90/s1_one_warpgroup.cu").text
    lines = text.splitlines()
    n = next(i for i, l in enumerate(lines) if l.rstrip().endswith(";") and "mbarrier_arrive_expect_tx" in l)
    broken = "\n".join(lines[:n] + [lines[n].rstrip()[:-1]] + lines[n + 1:]) + "\n"
    lab._cuda_magic("s1_one_warpgroup.cu", broken)
    out = capsys.readouterr().out
    assert "of this cell" in out and "gemm_sm90/s1_one_warpgroup.cu" not in lab.EDITS
    assert f"{n + 2:4d} | {lines[n].rstrip()[:-1]}" in out      # the text's line n+1 is the cell's n+2
