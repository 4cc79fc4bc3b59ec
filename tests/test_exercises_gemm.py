"""Notebook 07's exercise checks (bwlab.gemm.exercises): the model answers pass, recognised mistakes are
named, and the parity reference agrees with the ladder's kernels as written."""
import re

import pytest

from bwlab.exercises import hidden_cases
from bwlab.gemm import exercises as ex
from bwlab.gemm import ladder, occupancy
from bwlab.gemm import speed_exercise as speed
from bwlab.hw.mbarrier import Mbarrier
from bwlab.source import source_text
from bwlab.util import ceil_div
from exercise_cells import not_yet


def test_stage_bytes(capsys):
    ex.check_stage_bytes(lambda bm, bn: (bm + bn) * 128, hidden=hidden_cases("gemm_stage_bytes"))
    assert "correct: bytes of one stage" in capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "counts elements" in not_yet(ex.check_stage_bytes, lambda bm, bn: (bm + bn) * 64)
    assert "A slice alone" in ex._explain_stage((128, 256), 128 * 128, None)
    assert ex.stage_bytes(128, 256) == ladder.step("s3").stage_bytes


def by_hand(smem, regs, threads):
    warps = ceil_div(threads, 32)
    per_warp = ceil_div(regs * 32, 256) * 256
    return min(233472 // smem, 65536 // (per_warp * warps), 32, 64 // warps)


def test_ctas_per_sm(capsys):
    ex.check_ctas_per_sm(by_hand, hidden=hidden_cases("gemm_ctas_per_sm"))
    assert "correct: CTAs per SM — 8 cases agree" in capsys.readouterr().out.replace("checked: ", "correct: ")
    # the shown cases are the compiled steps 1 and 2, as the notebook prints them
    assert [by_hand(*c) for c in ex.occupancy_cases()] == [occupancy.ctas_per_sm(n).ctas for n in ("s1", "s2")]
    unrounded = lambda s, r, t: min(233472 // s, 65536 // (r * 32 * ceil_div(t, 32)), 32, 64 // ceil_div(t, 32))  # noqa: E731
    assert "units of 256" in not_yet(ex.check_ctas_per_sm, unrounded, hidden=hidden_cases("gemm_ctas_per_sm"))
    smem_only = lambda s, r, t: 233472 // s  # noqa: E731
    assert "what SMEM allows" in not_yet(ex.check_ctas_per_sm, smem_only)
    no_caps = lambda s, r, t: min(233472 // s, 65536 // (ceil_div(r * 32, 256) * 256 * ceil_div(t, 32)))  # noqa: E731
    assert "at most 32 CTAs and 64 warps" in not_yet(ex.check_ctas_per_sm, no_caps, hidden=hidden_cases("gemm_ctas_per_sm"))


@pytest.mark.parametrize("stages", [2, 3, 4, 6])
def test_producer_parity_is_the_kernels(stages):
    """The reference agrees with step 3's producer, `(kt / STAGES + 1) & 1` for kt >= STAGES (no wait
    before: the parity passes on a fresh barrier), and with step 2's `(prev / STAGES) & 1` for the load
    of slice prev + STAGES."""
    s3 = source_text("gemm_sm90/s3_warp_specialized.cu")
    s2 = source_text("gemm_sm90/s2_pipeline.cu")
    assert "if (kt >= STAGES && !mbarrier_wait(&empty[s], (kt / STAGES + 1) & 1," in s3
    assert re.search(r"mbarrier_wait\(&empty\[ps\], \(prev / STAGES\) & 1,", s2)
    for kt in range(40):
        p = ex.producer_parity(kt, stages)
        if kt >= stages:
            assert p == (kt // stages + 1) & 1
            assert p == ((kt - stages) // stages) & 1          # step 2's form, prev = kt - STAGES
        else:
            assert Mbarrier(1).try_wait_parity(p)


def test_producer_parity_check(capsys):
    ex.check_producer_parity(lambda kt, st: (kt // st + 1) % 2, hidden=hidden_cases("gemm_producer_parity"))
    assert "correct: the producer's parity" in capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "the consumers wait on" in not_yet(ex.check_producer_parity, lambda kt, st: (kt // st) & 1)


def test_flop_per_sm_cycle(capsys):
    ex.check_flop_per_sm_cycle(lambda bm, bn, c, n: n * bm * bn * 2 * 64 / c, hidden=hidden_cases("gemm_flop_per_sm_cycle"))
    ex.check_flop_per_sm_cycle(lambda bm, bn, c, n: (2 * 64) / c * bm * bn * n)     # another order
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct: FLOP per SM cycle") == 2
    msg = not_yet(ex.check_flop_per_sm_cycle, lambda bm, bn, c, n: 2 * bm * bn * 64 / c)
    assert "one CTA's" in msg and "flop_per_sm_cycle" not in msg.split(":")[0]
    assert "2 FLOP" in not_yet(ex.check_flop_per_sm_cycle, lambda bm, bn, c, n: n * bm * bn * 64 / c)
    assert "no answer yet" in not_yet(ex.check_flop_per_sm_cycle, None)


RIGHT = ("(kt / STAGES) & 1", "(kt / STAGES + 1) & 1")


def test_handshake_kernel_edits_the_two_waits():
    k = ex.handshake_kernel("A_FULL", "B_EMPTY")
    assert k.edited and k.text.count("(A_FULL)") == 1 and k.text.count("(B_EMPTY)") == 1
    assert ex.FULL_WAIT not in k.text and ex.EMPTY_WAIT not in k.text
    right = ex.handshake_kernel(*RIGHT)          # the kernel as written, its parities in parentheses
    assert right.text == (right.original
                          .replace(ex.FULL_WAIT, ex.FULL_WAIT.replace(RIGHT[0], f"({RIGHT[0]})"))
                          .replace(ex.EMPTY_WAIT, ex.EMPTY_WAIT.replace(RIGHT[1], f"({RIGHT[1]})")))


def test_eval_c_int_is_c():
    assert ex.eval_c_int("(kt / STAGES + 1) & 1", {"kt": 9, "STAGES": 4}) == 1
    assert ex.eval_c_int("-7 / 2", {}) == -3 and ex.eval_c_int("-7 % 2", {}) == -1    # C truncates
    assert ex.eval_c_int("1u << kt", {"kt": 3}) == 8
    with pytest.raises(ValueError, match="not something the exercise evaluates"):
        ex.eval_c_int("foo(kt)", {"kt": 1})


def test_handshake_model_finds_races_and_stuck_waits():
    assert ex.handshake_problems(*RIGHT) == []
    assert ex.handshake_problems("(kt / STAGES) % 2", "((kt - STAGES) / STAGES) % 2", stages=3) == []
    (p,) = ex.handshake_problems("(kt / STAGES + 1) & 1", RIGHT[1])
    assert "k-slice 0" in p and "before the TMA has landed it" in p
    (p,) = ex.handshake_problems(RIGHT[0], "(kt / STAGES) & 1")
    assert "k-slice 4" in p and "overwrite buffer 0" in p
    # exactly one parity passes at any time: a wrong one passes early, at the first k-slice it differs
    assert ex.handshake_problems("(kt / STAGES + 2) & 1", "(kt / STAGES - 1) & 1") == []
    (p,) = ex.handshake_problems("(kt / 8) & 1", RIGHT[1])       # right for a 4-stage ring's first pass only
    assert "k-slice 4:" in p and "full[0]" in p
    with pytest.raises(ValueError):
        ex.handshake_problems("kt > 3 ? 1 : 0", RIGHT[1])         # not an expression the check takes


def test_check_handshake(model_tier, capsys):
    ex.check_handshake(*RIGHT, hidden=hidden_cases("gemm_handshake"))
    assert "correct: the ring's handshake in the kernel" in capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "no answer yet" in not_yet(ex.check_handshake, None, None)
    assert "no answer yet" in not_yet(ex.check_handshake, RIGHT[0], None)
    assert "a string" in not_yet(ex.check_handshake, 0, RIGHT[1])
    assert "does not compile" in not_yet(ex.check_handshake, "(kt / STAGS) & 1", RIGHT[1])
    msg = not_yet(ex.check_handshake, RIGHT[0], "kt & 1")
    assert "producer's wait on empty" in msg


# ---- 7.6 the shortest ring at full speed (bwlab.timing grades) ---------------------------------------------
def test_ring_kernel_edits_the_depth_alone():
    k = ex.ring_kernel(3)
    assert k.text.count("STAGES = 3,") == 1 and "STAGES = 4," not in k.text
    assert ex.ring_kernel(4).text == k.original                  # the file as written has 4
    assert ex.ring_step(3).smem_bytes == ladder.step("s3").smem_bytes - ladder.step("s3").stage_bytes
    assert ex.ring_deepest() == 4          # a fifth 48 KiB stage takes the CTA past the SM's 228 KiB
    assert occupancy.ctas_per_sm(ex.ring_step(5)).ctas == 0


def test_ring_depth_predictions_and_the_grade(capsys):
    """The model's verdict the grade rests on, at the graded shapes: 2 stages slower by far, 3 as fast as 4
    (within the 1 % the check allows); the answer key passes, a wrong type and a ring too deep are named."""
    for shape in (speed.RING_SHAPE, *hidden_cases("gemm_ring_depth")):
        two, three, four = (ex.ring_prediction(n, shape).ms for n in (2, 3, 4))
        assert two > 1.3 * four and three <= four * (1 + speed.RING_TOLERANCE), shape
    ex.check_ring_depth(3, hidden=hidden_cases("gemm_ring_depth"))
    out = capsys.readouterr().out
    assert out.startswith("correct: the shortest ring at full speed") and "1.89x slower" in out
    assert "an int" in not_yet(ex.check_ring_depth, "3")
    assert "an int" in not_yet(ex.check_ring_depth, 3.0)
    assert "no answer yet" in not_yet(ex.check_ring_depth, None)
    assert "242 KiB" in not_yet(ex.check_ring_depth, 5)
    assert "at least one buffer" in not_yet(ex.check_ring_depth, -1)



def test_ring_depth_on_a_hopper_gpu_shows_the_run(monkeypatch):
    """On a Hopper GPU the check also runs the learner's ring on the GPU and shows its time, ungraded: the
    note's code runs here with the GPU run faked; a run that fails is shown, not raised."""
    from bwlab import lab
    runs = []

    def fake_run_edited(fn, step, m, n, k, kernel=None, limit=None):
        runs.append((step, m, n, k, kernel.text.count("STAGES = 3,")))
        return {"check": "PASS", "ms": 0.125, "ms_original": 0.120}
    monkeypatch.setattr(lab, "run_edited", fake_run_edited)
    note = speed.gpu_note(ex.ring_kernel(3))
    assert runs == [("s3", *ex.HANDSHAKE_SHAPE, 1)]
    assert note == ("\n  on this GPU (shown, not graded), 256 x 512 x 1024: PASS; 0.125 ms, "
                    "the kernel as written 0.120 ms")

    def failing(*a, **k):
        raise RuntimeError("the GPU said no")
    monkeypatch.setattr(lab, "run_edited", failing)
    assert speed.gpu_note(ex.ring_kernel(3)).endswith("the run did not complete: the GPU said no")
