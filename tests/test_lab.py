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
