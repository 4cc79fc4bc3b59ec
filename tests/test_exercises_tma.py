"""The graded exercises of notebook 01 (bwlab.tma.exercises): each check passes the right answer, says
"no answer yet" to the placeholder, and names the rule or the mistake for common wrong answers; the
kernel edit compiles, runs on a GPU with TMA (its GPU branch is also driven here with a stand-in runner)
and is modelled elsewhere; the student version of the notebook fails each check with a teaching message."""
import numpy as np
import pytest

from bwlab.exercises import hidden_cases
from bwlab.hw import element_type
from bwlab.tma import TensorMap, TmaLoad
from bwlab.tma import exercises as ex
from bwlab.tma import case as tma_case, runner

from test_exercises_orient import not_yet, run_student_version

RIGHT_RULES = {"a": "swizzle-span", "b": "legal", "c": "box-inner-bytes", "d": "global-stride-multiple",
               "e": "box-dim", "f": "legal", "g": "oob-fill-nan"}


def tx_by_hand(dtype, box_shape, swizzle="none"):
    return int(np.prod(box_shape)) * element_type(dtype).bytes


def offset_by_hand(r, c, elem_bytes, base):
    """PTX ISA 128B swizzle written out: 16-byte chunk bits 4-6 XOR the 128-byte line bits 7-9."""
    addr = base + r * 128 + c * elem_bytes
    return (addr ^ (((addr >> 7) & 7) << 4)) - base


def oob_by_hand(dtype, global_shape, box_shape, coords):
    inside = 1
    for n, b, c in zip(global_shape, box_shape, coords):
        inside *= max(0, min(n, c + b) - max(0, c))
    total = int(np.prod(box_shape))
    return total - inside, total * element_type(dtype).bytes


# ---- 1.1 which rule -----------------------------------------------------------------------------------
def test_rule_right(capsys):
    ex.check_broken_rule(RIGHT_RULES, hidden=hidden_cases("tma_broken_rule"))
    assert "correct: the rule each tensor map breaks" in capsys.readouterr().out.replace("checked: ", "correct: ")


def test_rule_placeholders():
    assert "no answer yet" in not_yet(ex.check_broken_rule, {k: ... for k in ex.RULE_CANDIDATES})
    assert "no answer yet for ['g']" in not_yet(ex.check_broken_rule, {**RIGHT_RULES, "g": ...})


def test_rule_mistakes():
    msg = not_yet(ex.check_broken_rule, {**RIGHT_RULES, "b": "box-inner-bytes"})
    assert "b: TensorMap(" in msg and "is legal" in msg and "multiple of 16 bytes" in msg
    msg = not_yet(ex.check_broken_rule, {**RIGHT_RULES, "f": "swizzle-span"})   # 128 bytes is the span itself
    assert "f: " in msg and "is legal" in msg
    msg = not_yet(ex.check_broken_rule, {**RIGHT_RULES, "d": "box-dim"})
    assert "[global-stride-multiple]" in msg and "(100,)" in msg
    assert "not a rule's name" in not_yet(ex.check_broken_rule, {**RIGHT_RULES, "d": "stride"})


# ---- 1.2 transaction bytes ----------------------------------------------------------------------------
def test_tx_right(capsys):
    ex.check_tx_bytes(tx_by_hand, hidden=hidden_cases("tma_tx_bytes"))
    assert "correct: transaction bytes of a box" in capsys.readouterr().out.replace("checked: ", "correct: ")


def test_tx_placeholder():
    assert "no function yet" in not_yet(ex.check_tx_bytes, None)


def test_tx_mistakes():
    msg = not_yet(ex.check_tx_bytes, lambda d, b, s: int(np.prod(b)))
    assert "returned 512" in msg and "number of elements, not of bytes" in msg

    def footprint(dtype, box, swizzle):   # pads narrow rows to the span, as SMEM holds them
        span = {"none": 0, "32B": 32, "64B": 64, "128B": 128}[swizzle]
        row = max(box[0] * element_type(dtype).bytes, span)
        return row * int(np.prod(box[1:]))
    msg = not_yet(ex.check_tx_bytes, footprint, hidden=hidden_cases("tma_tx_bytes"))
    assert "SMEM footprint" in msg and "counts only the bytes it writes" in msg
    msg = not_yet(ex.check_tx_bytes, lambda d, b, s: b[0] * b[1] * element_type(d).bytes, hidden=hidden_cases("tma_tx_bytes"))
    assert "first two box dimensions" in msg


def test_tx_visible_check_tries_a_swizzle():
    def footprint(dtype, box, swizzle):
        span = {"none": 0, "32B": 32, "64B": 64, "128B": 128}[swizzle]
        return max(box[0] * element_type(dtype).bytes, span) * int(np.prod(box[1:]))
    msg = not_yet(ex.check_tx_bytes, footprint)
    assert "'128B'" in msg and "(1 earlier case agreed)" in msg and "SMEM footprint" in msg


# ---- 1.3 the kernel edit -----------------------------------------------------------------------------------
def test_edit_right_in_the_model(model_tier, capsys):
    assert ex.EDIT_TMAP.tx_bytes == 48 * 8 * 2
    ex.check_expect_tx_edit(768, hidden=hidden_cases("tma_expect_tx_edit"))
    out = capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "correct: expect_tx" in out and "compiles for sm_90a, sm_100a" in out and "last of the 768 bytes" in out


def test_edit_placeholder_and_type(model_tier):
    assert "no answer yet" in not_yet(ex.check_expect_tx_edit, None)
    assert "Python int" in not_yet(ex.check_expect_tx_edit, "box_bytes")
    assert "20 bits" in not_yet(ex.check_expect_tx_edit, 1 << 21)


def test_edit_mistakes_in_the_model(model_tier):
    msg = not_yet(ex.check_expect_tx_edit, 768 + 16)
    assert "tx-count is 16" in msg and "never completes" in msg and "MbarrierTimeout" in msg
    msg = not_yet(ex.check_expect_tx_edit, 384)
    assert "number of elements" in msg and "after only 384 bytes of the box" in msg and "768" not in msg and "race" in msg
    assert "the box of sections 1-5" in not_yet(ex.check_expect_tx_edit, 1024)
    assert "at the arrive itself" in not_yet(ex.check_expect_tx_edit, 0)


def test_edit_is_one_line_of_the_teaching_kernel():
    mine = ex.edit_kernel(784)
    changed = [l for l in mine.diff().splitlines() if l[:1] in "+-" and not l.startswith(("+++", "---"))]
    assert changed == [f"-    {ex.EDIT_LINE}", "+    const u32 tx_bytes = 784;"]
    runner.require_teach_args(np.zeros((48, 80), np.uint16), ex.EDIT_TMAP, ex.EDIT_COORDS)


def test_tx_story_follows_the_mbarrier():
    assert ex.tx_story(768, 768)[0] == 768
    done, bar = ex.tx_story(784, 768)
    assert done is None and (bar.tx, bar.phase) == (16, 0)
    done, bar = ex.tx_story(512, 768)
    assert done == 512 and (bar.tx, bar.phase) == (-256, 1)


def _fake_gpu(monkeypatch, result):
    """Drive the GPU branch without a GPU: tier 'hardware' and run_teach replaced by `result(kernel)`."""
    from bwlab import device
    seen = []

    def fake_run_teach(gmem, tmap, coords, kernel=None, block=128):
        seen.append(kernel)
        assert tmap == ex.EDIT_TMAP and coords == ex.EDIT_COORDS and kernel.edited
        return result(gmem)
    monkeypatch.setattr(device, "tier", lambda stage: "hardware")
    monkeypatch.setattr(tma_case, "run_teach", fake_run_teach)
    return seen


def test_edit_gpu_branch_right(monkeypatch, capsys):
    seen = _fake_gpu(monkeypatch, lambda g: TmaLoad(g, ex.EDIT_TMAP, ex.EDIT_COORDS).model())
    ex.check_expect_tx_edit(768)
    assert "const u32 tx_bytes = 768;" in seen[0].text
    assert "on this GPU (worker process) its 768 SMEM bytes equal the model's" in capsys.readouterr().out.replace("checked: ", "correct: ")


def test_edit_gpu_branch_timeout(monkeypatch):
    from bwlab.runtime import MbarrierTimeout
    record = dict(phase_parity=0, expected_tx=784, block_x=0, block_y=0, block_z=0, thread=0, cta_rank=0,
                  waited_ns=200_000_000)

    def timeout(g):
        raise MbarrierTimeout("teach_tma_load", "smem_full", record)
    _fake_gpu(monkeypatch, timeout)
    msg = not_yet(ex.check_expect_tx_edit, 784)
    assert "on this GPU: MbarrierTimeout" in msg and "'smem_full'" in msg and "tx-count is 16" in msg


def test_edit_gpu_branch_bytes_differ(monkeypatch):
    def corrupt(g):
        got = TmaLoad(g, ex.EDIT_TMAP, ex.EDIT_COORDS).model().copy()
        got[100] ^= 0xFF
        return got
    _fake_gpu(monkeypatch, corrupt)
    msg = not_yet(ex.check_expect_tx_edit, 768)
    assert "768 is right, but the GPU's result differs" in msg and "SMEM byte 0x0064" in msg


@pytest.mark.sm90
def test_edit_on_the_gpu(monkeypatch, capsys):
    monkeypatch.delenv("BWLAB_BACKEND", raising=False)
    ex.check_expect_tx_edit(768)
    assert "on this GPU (worker process)" in capsys.readouterr().out.replace("checked: ", "correct: ")
    msg = not_yet(ex.check_expect_tx_edit, 784)
    assert "on this GPU: MbarrierTimeout" in msg


# ---- 1.4 the swizzled offset --------------------------------------------------------------------------
def test_swizzle_right(capsys):
    ex.check_swizzle_offset(offset_by_hand, hidden=hidden_cases("tma_swizzle_offset"))
    assert "correct: SMEM offset of element (r, c)" in capsys.readouterr().out.replace("checked: ", "correct: ")


def test_swizzle_placeholder():
    def stub(r, c, elem_bytes, base):
        """not written yet"""
    assert "returns no answer yet" in not_yet(ex.check_swizzle_offset, stub)

    def raises(r, c, elem_bytes, base):
        raise NotImplementedError
    assert "not written yet" in not_yet(ex.check_swizzle_offset, raises)


def test_swizzle_mistakes():
    msg = not_yet(ex.check_swizzle_offset, lambda r, c, e, base: offset_by_hand(r, c, e, 0), hidden=hidden_cases("tma_swizzle_offset"))
    assert "0x180" in msg and "forgetting the base offset" in msg and "3 lines in" in msg
    assert "without swizzle" in not_yet(ex.check_swizzle_offset, lambda r, c, e, base: r * 128 + c * e)
    msg = not_yet(ex.check_swizzle_offset, lambda r, c, e, base: offset_by_hand(r, c, e, base) + base, hidden=hidden_cases("tma_swizzle_offset"))
    assert "absolute SMEM address" in msg
    msg = not_yet(ex.check_swizzle_offset, lambda r, c, e, base: offset_by_hand(r, c, 1, base))
    assert "multiply by elem_bytes" in msg

    def wrong_way(r, c, e, base):
        a = base + r * 128 + c * e
        return (a ^ ((a & 0x70) << 3)) - base
    assert "the other way round" in not_yet(ex.check_swizzle_offset, wrong_way)


def test_swizzle_reference_is_the_load_model():
    # bytes placed by tma_load_model: element (r, c) holds its own index, found where the check says
    t = TensorMap("bfloat16", (64, 16), (64, 16), swizzle="128B")
    from bwlab.tma import tma_load_model
    g = np.arange(64 * 16, dtype=np.uint16).reshape(16, 64)
    img = tma_load_model(g, t, (0, 0), 0x180).view(np.uint16)
    for r, c in ((0, 0), (3, 5), (9, 33), (15, 63)):
        assert img[ex._swizzle_reference(r, c, 2, 0x180) // 2] == r * 64 + c


# ---- 1.5 out-of-bounds fill -------------------------------------------------------------------------------
def test_oob_right(capsys):
    ex.check_oob_fill(oob_by_hand, hidden=hidden_cases("tma_oob_fill"))
    assert "correct: out-of-bounds fill" in capsys.readouterr().out.replace("checked: ", "correct: ")


def test_oob_placeholder():
    assert "no function yet" in not_yet(ex.check_oob_fill, ...)


def test_oob_mistakes():
    msg = not_yet(ex.check_oob_fill, lambda d, g, b, c: (oob_by_hand(d, g, b, c)[0],
                                                         (int(np.prod(b)) - oob_by_hand(d, g, b, c)[0]) * 4))
    assert "returned (32, 64)" in msg and "still count towards expect_tx" in msg
    msg = not_yet(ex.check_oob_fill, lambda d, g, b, c: (int(np.prod(b)) - oob_by_hand(d, g, b, c)[0],
                                                         oob_by_hand(d, g, b, c)[1]))
    assert "number of elements inside the tensor" in msg
    msg = not_yet(ex.check_oob_fill, lambda d, g, b, c: (oob_by_hand(d, g, b, c)[0],
                                                         oob_by_hand(d, g, b, c)[0] * element_type(d).bytes))
    assert "returned (32, 128)" in msg and "bytes of the fill alone" in msg and "whole box" in msg


# ---- the student version ------------------------------------------------------------------------------
def test_student_version_of_notebook_01(model_tier, capsys):
    run_student_version("01_tma_load", 5)
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct:") == 10
