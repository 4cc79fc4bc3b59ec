"""bwlab.capstone: the skeletons hold no pipeline, the answer key (the instructor's edition of notebook 10)
makes both kernels pass in the strict emulator, the graders name typical wrong fills (a missing wait, a
wrong phase, a missing fence or commit) in a few lines, and the student edition holds no answer."""
import re
from pathlib import Path

import numpy as np
import pytest

from bwlab.capstone import exercises as cx
from bwlab.capstone.skeleton import (KERNELS, FillError, assemble, ladder_fill, ladder_fills, skeleton,
                                     todo_regions)
from bwlab.exercises import NotYet
from bwlab.source import source_text
from exercise_cells import student

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "src" / "10_capstone.py"
PIPELINE = ("mbarrier_wait(", "mbarrier_arrive", "expect_tx", "wait(&", "tcgen05_commit(&empty", "tcgen05_commit(&tmem")


def _key() -> dict:
    from bwlab.checks.capstone import answer_key
    return answer_key(NOTEBOOK)


def _not_yet(fn, *args) -> str:
    with pytest.raises(NotYet) as e:
        fn(*args)
    return str(e.value)


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_skeleton_leaves_the_pipeline_out_and_marks_every_region(kernel):
    sk = skeleton(kernel)
    text = source_text(sk.file)
    assert {r[0] for r in todo_regions(text)} == set(sk.regions)
    text = re.sub(r"//[^\n]*", "", text)          # the code: the comments name the calls, they do not make them
    for word in PIPELINE:
        assert word not in text, f"{sk.file} gives away {word!r}"
    assert text.count("tcgen05_commit(") == (1 if kernel == "blackwell" else 0)     # the teardown's, given


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_answer_key_passes_in_the_emulator(kernel, capsys):
    from bwlab.capstone import try_kernel
    key = _key()
    tried = try_kernel(kernel, {r: key[r] for r in skeleton(kernel).regions})
    assert tried.ok, str(tried)
    assert "no rule broken" in str(tried) and "within tolerance" in str(tried)


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_ladder_lines_the_graders_use_are_the_answer_key_too(kernel):
    """Every region the grader fills from the ladder's step 4 holds the same statements as the answer key
    (spaces, comments and barrier-id spellings aside)."""
    key = _key()

    def norm(s):
        s = re.sub(r"//[^\n]*", "", s)
        s = re.sub(r"\bBAR_FULL\b", "1", re.sub(r"\bBAR_EMPTY\b", "2", s)) if kernel == "hopper" else s
        s = s.replace("__any_sync(0xffffffffu, wait(", "wait(").replace(")) != 0;\nif (!ok) break;", ";")
        return re.sub(r"\s+", "", s.replace("(it / STAGES) & 1", "(it/STAGES)&1"))
    for name in skeleton(kernel).regions:
        if name == "epi_acc_wait":       # the ladder wraps the wait in __any_sync (the same protocol)
            assert "tmem_full[buf], acc_phase, BAR_TMEM_FULL" in ladder_fill(kernel, name)
            continue
        want = norm(key[name]).replace("it>=STAGES&&", "")
        assert norm(ladder_fill(kernel, name)).replace("it>=STAGES&&", "") == want, name


def test_assemble_names_the_learners_lines_and_refuses_what_cannot_fit():
    fills = ladder_fills("hopper")
    fills["consumer_wait"] = "// mine\nif (!mbarrier_wait(&full[s], (it / STAGES) & 1, BAR_FULL, STAGE_BYTES)) return;"
    asm = assemble("hopper", fills)
    line = next(n for n, (r, i) in asm.origin.items() if r == "consumer_wait" and i == 2)
    assert "mbarrier_wait(&full[s]" in asm.text.splitlines()[line - 1]
    assert asm.where(line) == "line 2 of your consumer_wait"
    assert sum(1 for r, _ in asm.origin.values() if r == "consumer_release") == 2      # both places
    with pytest.raises(FillError, match="closes every brace"):
        assemble("hopper", {**fills, "consumer_release": "} if (1) {"})
    with pytest.raises(FillError, match="no TODO region 'producer'"):
        assemble("hopper", {**fills, "producer": ""})
    with pytest.raises(FillError, match="a fill is C\\+\\+ statements in a string"):
        assemble("hopper", {**fills, "consumer_wait": 3})


# typical wrong fills: (exercise, fills, the emulator's name for what broke, words of the hint)
WRONG = [
    ("cap_producer", {"producer_acquire": "mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);"},
     "MbarrierArrivalUnordered", "never waits on empty[s]"),                                                # a missing wait
    ("cap_consumer", {"consumer_wait": "if (!mbarrier_wait(&full[s], (it / STAGES + 1) & 1, BAR_FULL, STAGE_BYTES)) "
                                       "return;"}, "MbarrierTimeout", "the phase before"),         # a wrong phase
    ("cap_acc_phases", {"epi_acc_wait": "if (!(ok = wait(&tmem_full[buf], acc_phase, BAR_TMEM_FULL, 0, error))) break;"},
     "TcgenFenceMissing", "fence::after_thread_sync"),                                             # a missing fence
    ("cap_acc_handoff", {"mma_acc_commit": ""}, "MbarrierTimeout", "nothing ever arrives on tmem_full"),  # a missing commit
    ("cap_bw_ring", {"mma_release_stage": "mbarrier_arrive(&empty[s]);"}, "AsyncReadHazard", "runs asynchronously"),
]


@pytest.mark.parametrize("exercise,wrong,named,hint", WRONG, ids=[w[3] for w in WRONG])
def test_the_grader_names_a_wrong_fill_in_a_few_lines(exercise, wrong, named, hint):
    kernel, regions, _ = cx.EXERCISES[exercise]
    fills = {**ladder_fills(kernel), **wrong}
    with pytest.raises(NotYet) as e:
        cx.grade(exercise, fills)
    text = str(e.value)
    assert named in text.splitlines()[0] and hint in text
    assert "Traceback" not in text and len(text.splitlines()) <= 8, text
    assert "PTX line" not in text                                  # the PTX text is left out, the learner's line named


def test_a_compile_error_is_told_on_the_learners_line():
    fills = {**ladder_fills("hopper"), "consumer_release": "if (laneid() == 0) mbarrier_arrive(&empty[(it - 1) % STAGES])"}
    text = _not_yet(cx.grade, "cap_consumer", fills)
    assert "does not compile" in text and "your consumer_release" in text


def test_a_fill_on_several_lines_is_refused_as_the_grader_refuses_it():
    text = _not_yet(cx.check_consumer, "if (1)\n;", "")
    assert "on one line" in text and "line breaks, '#' or" in text


def test_an_unanswered_exercise_says_no_answer_yet():
    assert "no answer yet" in _not_yet(cx.check_consumer, None, "")
    assert "no answer yet" in _not_yet(cx.check_producer, ...)


def test_a_kept_percent_cuda_kernel_is_what_try_kernel_runs(capsys):
    from bwlab import lab
    from bwlab.capstone import try_kernel
    broken = assemble("blackwell", {**ladder_fills("blackwell"), "epi_acc_release": ""}).text
    try:
        lab._cuda_magic("capstone/blackwell_ws.cu", broken)
        assert "capstone.try_kernel('blackwell')" in capsys.readouterr().out
        tried = try_kernel("blackwell")
        assert not tried.ok and "MbarrierTimeout" in str(tried) and "your blackwell_ws.cu" in str(tried)
    finally:
        lab.reset("capstone/blackwell_ws.cu")
    assert "no kernel yet" in str(try_kernel("blackwell"))


def test_the_student_edition_holds_no_answer():
    key = _key()
    text = student(NOTEBOOK.read_text())
    for fill in key.values():
        for statement in re.split(r";|\n", fill):
            if len(statement.strip()) > 12:
                assert statement.strip() not in text, statement
    assert "### BEGIN SOLUTION" not in text and "hidden_cases(" not in text


def test_ring_uses_counts_what_the_shown_runs_reuse():
    from bwlab.capstone import ring_uses
    assert "each of the 4 stages filled at least 5 times" in ring_uses("hopper", *cx.SHOWN["hopper"][:3], 2)
    text = ring_uses("blackwell", *cx.SHOWN["blackwell"][:3], 2)
    assert "filled at least 4 times" in text and "each of the 2 accumulators used at least 4 times" in text
    with pytest.raises(ValueError, match="multiple of 256"):
        ring_uses("hopper", 256, 500, 640)


def test_the_h200_record_says_where_when_and_how():
    lines = (ROOT / "docs" / "results" / "capstone_h200.txt").read_text().splitlines()
    assert "H200" in lines[0] and "UTC" in lines[0] and "driver" in lines[0] and "cupy" in lines[0]
    assert lines[-1].startswith("command:") and "bwlab.checks.capstone" in lines[-1]
    assert sum("PASS" in x for x in lines) == 3


def test_hidden_cases_reuse_the_ring():
    """Every graded case fills each stage of the ring at least four times in every CTA (each parity of its
    barriers completes twice or more) and on Blackwell uses each accumulator at least four times."""
    from bwlab.exercises import _course_module
    from bwlab.capstone.runner import constants, launch_shape
    hidden = _course_module()
    for exercise, (kernel, _, _) in cx.EXERCISES.items():
        k = constants(kernel)
        for M, N, K, sms, seed in [cx.SHOWN[kernel], *getattr(hidden, exercise)()]:
            tiles = (M // k["BM"]) * (N // k["BN"])
            ctas = launch_shape(kernel, M, N, sms)[0][0]
            fewest = tiles // ctas
            assert fewest * (K // k["BK"]) >= 4 * k["STAGES"], (exercise, M, N, K, sms)
            if kernel == "blackwell":
                assert fewest >= 4 * k["ACC_BUFS"], (exercise, M, N, K, sms)


def test_the_predicted_speed_of_the_solved_hopper_kernel_is_step_4s():
    """The capstone's Hopper kernel with the ladder's own fills is step 4: bwlab.timing predicts it the same
    (its trace is the same); a kernel that breaks a rule gets no prediction, only the reason."""
    from bwlab import capstone as cap
    from bwlab.capstone.skeleton import assemble, ladder_fills
    from bwlab.capstone.speed import predict
    from bwlab.timing.gemm import predict as predict_step
    fills = ladder_fills("hopper")
    mine = predict(assemble("hopper", fills), 4096, 4096, 4096)
    s4 = predict_step("s4", 4096, 4096, 4096)
    assert mine.cycles == pytest.approx(s4.cycles) and mine.tflops > 100
    assert "not a measurement" in cap.predicted_speed("hopper", fills, shape=(4096, 4096, 4096))
    broken = cap.predicted_speed("hopper", {**fills, "consumer_release": ";"})
    assert broken.startswith("no prediction yet") and "AsyncInFlightAtExit" in broken
