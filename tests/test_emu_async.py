"""The strict asynchronous rules of the emulator (bwlab.emu.order) as a learner meets them: a broken kernel's
error names both source lines, long register lists are cut, and a recording of the same broken kernel that
happened to equal the model is not shown as if it proved the kernel right."""
import numpy as np

from bwlab.case import CheckResult, Result, Results, _rule_broken
from bwlab.emu.errors import AsyncReadHazard, EmuFault, ProtocolError
from bwlab.emu.isa import short_text


def test_long_register_lists_are_cut_short_ones_kept():
    regs = ", ".join(f"%f{i}" for i in range(128))
    text = f"wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {{{regs}}}, %rd1, %rd2, p, 1, 1, 0, 0;"
    short = short_text(text)
    assert "{%f0, %f1, %f2, %f3, ... 128 registers}" in short and "%f100" not in short
    assert short_text("tcgen05.ld.sync.aligned.32x32b.x2.b32 {%r1, %r2}, [%r3];").count("%r") == 3


def test_a_rule_broken_live_marks_a_lucky_recording():
    assert _rule_broken(AsyncReadHazard("x")) and _rule_broken(ProtocolError("x"))
    assert not _rule_broken(EmuFault("out of bounds"))
    ok = CheckResult("epilogue", "a store", 10, 0, source="recorded on an NVIDIA H100")
    ok.note = "that GPU got lucky: the kernel breaks the rule named above all the same"
    text = str(Results([ok]))
    assert text.splitlines()[0].endswith("equal the model (recorded on an NVIDIA H100)")
    assert "got lucky" in text.splitlines()[1]
    assert Result(np.zeros(1), "this GPU", True).live


def test_one_lanes_wait_group_read_before_exit_is_enough(monkeypatch):
    """The TMA store's issuing thread (lane 0) waits with cp.async.bulk.wait_group.read 0 and the CTA exits:
    that lane's own observation covers the exit (no whole-warp wait is needed)."""
    from bwlab.emu.errors import AsyncInFlightAtExit  # noqa: F401  (what a missing wait raises)
    from bwlab.epilogue.model import epilogue_model
    from bwlab.epilogue.problem import EpilogueProblem
    from bwlab.epilogue.runner import run_epilogue
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    p = EpilogueProblem(M=40, N=66, dtype="bfloat16", bm=16, bn=32, swizzle="none", smem_offset=896, ld=80)
    acc = np.random.default_rng(1).standard_normal(p.acc_shape).astype(np.float32)
    got = run_epilogue(p, acc)
    assert np.array_equal(got, epilogue_model(p, acc))



def test_after_a_failed_edit_the_live_error_is_the_result_not_the_unedited_recording(monkeypatch):
    """A %%cuda edit without the proxy fence: results() shows the emulator's error, naming the line that broke
    the rule (the st.shared) and the one it raced with (the TMA store); the recording of the unedited kernel
    (same problem and inputs) is not shown as if it were this kernel's result."""
    from bwlab import lab
    from bwlab.emu.errors import ProxyFenceMissing
    from bwlab.epilogue import TEACH_EDITS
    from bwlab.epilogue.recorded import teach_case
    from bwlab.lab import TeachingKernel
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    assert teach_case().recorded() is not None          # the unedited kernel's recording exists
    lab.EDITS["teach_store.cu"] = TeachingKernel("teach_store.cu").replace(*TEACH_EDITS["no fence"])
    try:
        case = teach_case()
        assert case.recorded() is None
        results = case.results()
    finally:
        lab.reset("teach_store.cu")
    (line,), (got,) = list(results), results.results
    assert isinstance(got.error, ProxyFenceMissing) and got.live
    text = str(line)
    assert not line.ok and "recorded on" not in text and "equal the model" not in text
    raced, broke = text.split("written by")
    assert "the TMA store at teach_store.cu:" in raced and "store at teach_store.cu:" in broke
