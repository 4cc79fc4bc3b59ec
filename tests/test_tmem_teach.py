"""The stage-4 teaching kernel: it compiles for sm_100a, the model follows its text (kColumns, kNum,
lane0), an edit that breaks a rule is refused naming the rule, the runner checks its arguments, the
ld widget offers legal .num values only, and on an sm_100 GPU the kernel equals the model."""
import numpy as np
import pytest

from bwlab import tmem
from bwlab.compile import CompileError
from bwlab.device import UnsupportedGPU, tier
from bwlab.hw.tmem import TmemError
from bwlab.lab import TeachingKernel
from bwlab.tmem import TmemAccess

K = TeachingKernel("teach_tmem.cu")


def test_teaching_kernel_compiles_with_the_data_path_in_order():
    built = K.compile("sm_100a")
    assert built.kernels() == ["teach_tmem"]
    ptx = built.ptx_of("teach_tmem")
    order = ["tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32", "tcgen05.relinquish_alloc_permit",
             "tcgen05.fence::before_thread_sync", "tcgen05.st.sync.aligned.32x32b.x8.b32",
             "tcgen05.wait::st", "tcgen05.ld.sync.aligned.32x32b.x8.b32", "tcgen05.wait::ld",
             "tcgen05.dealloc.cta_group::1.sync.aligned.b32"]
    at = [ptx.index(s) for s in order]
    assert at == sorted(at)
    with pytest.raises(CompileError):
        K.compile("sm_90a")        # no TMEM on Hopper


def test_plan_is_read_from_the_text():
    plan = tmem.teach_plan(K)
    assert (plan.columns, plan.num, plan.lane0) == (32, 8, (0, 32, 64, 96))
    edited = K.replace("constexpr int kNum = 8;", "constexpr int kNum = 16;").replace(
        "constexpr u32 kColumns = 32;", "constexpr u32 kColumns = 64;")
    assert (tmem.teach_plan(edited).num, tmem.teach_plan(edited).columns) == (16, 64)
    assert tmem.teach_plan(K.replace("32 * (warp % 4)", "warp / 4 * 32u")).lane0 == (0, 0, 0, 0)
    assert tmem.teach_plan(K.replace("32 * (warp % 4)", "threadIdx.x")).lane0 is None


def test_model_of_the_kernel_equals_the_stage_model():
    got = tmem.teach_model(K)
    assert got.shape == (4, 1, 32, 8) and got.dtype == np.uint32
    # independently: thread t of warp w holds lane 32w + t, register j column j
    w, t, j = np.meshgrid(np.arange(4), np.arange(32), np.arange(8), indexing="ij")
    assert np.array_equal(got[:, 0], ((32 * w + t) << 16) | j)
    assert np.array_equal(tmem.teach_case(K).model(), got)
    assert tmem.teach_case(K).check(got).ok
    bad = got.copy()
    bad[2, 0, 4, 1] = got[1, 0, 4, 1]
    res = tmem.teach_case(K).check(bad)
    assert not res.ok and "quarter" in str(res)


@pytest.mark.parametrize("old,new,rule", [
    ("32 * (warp % 4)", "32 * ((warp + 1) % 4)", "may access TMEM lanes 0..31 only"),
    ("32 * (warp % 4)", "32 * (warp % 4) + 16", "may access TMEM lanes 0..31 only"),
    ("constexpr u32 kColumns = 32;", "constexpr u32 kColumns = 48;", "power of two"),
    ("constexpr int kNum = 8;", "constexpr int kNum = 64;", "not all allocated"),
    ("constexpr int kNum = 8;", "constexpr int kNum = 3;", ".num must be one of"),
    ("32 * (warp % 4)", "threadIdx.x", "cannot evaluate"),
])
def test_model_names_the_rule_an_edit_breaks(old, new, rule):
    with pytest.raises(TmemError, match=rule.replace(".", r"\.").replace("(", r"\(")):
        tmem.teach_model(K.replace(old, new))


def test_try_teach_shows_compile_errors_on_the_learners_line(capsys):
    tmem.try_teach(K.replace("tcgen05_ld_32x32b<kNum>(r, taddr);", "tcgen05_ld_32x32b_x16(r, taddr);"))
    out = capsys.readouterr().out
    assert "error on line 50" in out and ">  50 |     tcgen05_ld_32x32b_x16(r, taddr);" in out
    assert "/work" not in out


def test_try_teach_reports_model_and_rule(capsys):
    assert tmem.try_teach(K).shape == (4, 1, 32, 8)
    assert tmem.try_teach(K.replace("32 * (warp % 4)", "32 * ((warp + 1) % 4)")) is None
    out = capsys.readouterr().out
    assert "lane 35, columns 0..7" in out and "model: refuses the kernel" in out


def test_run_teach_checks_its_arguments():
    with pytest.raises(TmemError, match="kNum = 256"):
        tmem.run_teach(K.replace("constexpr int kNum = 8;", "constexpr int kNum = 256;"))
    if tier("tmem") == "emulated":      # the kernel itself runs in the PTX emulator
        assert np.array_equal(tmem.run_teach(K), tmem.teach_model(K))
    elif tier("tmem") != "hardware":
        with pytest.raises(UnsupportedGPU):
            tmem.run_teach(K)


def test_widget_offers_legal_nums_only():
    for shape in tmem.SHAPES:
        for pack in (False, True):
            nums = tmem.legal_nums(shape, pack)
            assert nums and all(TmemAccess(shape, n, pack).registers <= 128 for n in nums)
            for n in set(tmem.NUMS) - set(nums):
                with pytest.raises(TmemError):
                    TmemAccess(shape, n, pack)
    assert tmem.legal_nums("16x256b") == [1, 2, 4, 8, 16, 32]


@pytest.mark.sm100
def test_teaching_kernel_on_the_gpu_equals_the_model():
    assert tmem.teach_case(K).check(tmem.run_teach(K)).ok
    wider = K.replace("constexpr int kNum = 8;", "constexpr int kNum = 32;")
    assert tmem.teach_case(wider).check(tmem.run_teach(wider)).ok
