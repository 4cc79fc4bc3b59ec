"""Notebook 02's exercise checks: a right answer passes and says so, the placeholder says "no answer
yet", and the common wrong answers come back as NotYet naming the rule or the mistake. On an sm_90+
GPU the kernel-edit exercise also runs the edited kernel."""
import numpy as np
import pytest

from bwlab.exercises import hidden_cases
from bwlab.exercises import NotYet
from exercise_cells import not_yet as _not_yet
from bwlab.multicast import exercises as ex

SOLUTION_EXPR = "(((1u << (CLUSTER_X * CLUSTER_Y)) - 1) / ((1u << CLUSTER_X) - 1)) << mn.x"


# -- 2.1 the A mask -----------------------------------------------------------------------------------
def a_mask_of(m, n, cluster_m, cluster_n):
    mask = 0
    for j in range(cluster_n):
        mask |= 1 << (m + cluster_m * j)
    return mask


def test_a_mask_right_answer(capsys):
    ex.check_a_mask(a_mask_of)
    ex.check_a_mask(a_mask_of, hidden=hidden_cases("mc_a_mask"))
    out = capsys.readouterr().out.replace("checked: ", "correct: ")
    assert out.count("correct: the A mask") == 2 and "131 cases agree" in out


def test_a_mask_placeholders():
    assert "no function yet" in _not_yet(ex.check_a_mask, None)
    assert "returns no answer yet" in _not_yet(ex.check_a_mask, lambda m, n, cm, cn: None)


@pytest.mark.parametrize("wrong,words", [
    (lambda m, n, cm, cn: m + cm * n, "rank, not a mask"),
    (lambda m, n, cm, cn: 1 << (m + cm * n), "only this CTA's own bit"),
    (lambda m, n, cm, cn: ((1 << cm) - 1) << (cm * n), "is the B mask"),
    (lambda m, n, cm, cn: a_mask_of(m, n, cm, cn) & ~(1 << (m + cm * n)), "own bit (1 << 0) is missing"),
])
def test_a_mask_common_mistakes(wrong, words):
    msg = _not_yet(ex.check_a_mask, wrong)
    assert words in msg and "create_tma_multicast_mask<2>" in msg


def test_a_mask_hidden_shapes_catch_a_fixed_pattern():
    fixed = lambda m, n, cm, cn: 0x1111 << m            # right for 4 x 4 only
    with pytest.raises(NotYet):
        ex.check_a_mask(fixed)                          # the visible 2 x 2 cluster already catches it
    msg = _not_yet(ex.check_a_mask, lambda m, n, cm, cn: a_mask_of(m, n, cm, cn) if (cm, cn) in ((4, 4), (2, 2))
                   else 0x5 << m, hidden=hidden_cases("mc_a_mask"))
    assert "(0, 0, 2, 4)" in msg


# -- 2.2 who receives a slice ---------------------------------------------------------------------------
def test_slice_receivers(capsys):
    ex.check_slice_receivers([4, 5, 6, 7], 3 * 8192)
    ex.check_slice_receivers((7, 6, 5, 4), 24576)       # any order, any sequence
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct:") == 4
    assert "no answer yet" in _not_yet(ex.check_slice_receivers, None, None)
    assert "the A receivers" in _not_yet(ex.check_slice_receivers, [3, 7, 11, 15], 24576)
    assert "list the ranks" in _not_yet(ex.check_slice_receivers, 0xF0, 24576)
    msg = _not_yet(ex.check_slice_receivers, [4, 5, 6], 24576)      # the sender left out
    assert "rank 7 itself is missing" in msg and "lands in its own SMEM" in msg
    assert "sender's m = 3" in _not_yet(ex.check_slice_receivers, [4, 5, 6, 7], 8192)
    assert "start of the tile area" in _not_yet(ex.check_slice_receivers, [4, 5, 6, 7], 16384 + 24576)


# -- 2.3 expect_tx ---------------------------------------------------------------------------------------
def test_expect_tx(capsys):
    right = lambda cm, cn, tm, tn, tk: (tm + tn) * tk * 2
    ex.check_expect_tx(right)
    ex.check_expect_tx(right, hidden=hidden_cases("mc_expect_tx"))
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct: expect_tx") == 2
    assert "returns no answer yet" in _not_yet(ex.check_expect_tx, lambda *a: None)
    assert "the bytes this CTA issues" in _not_yet(ex.check_expect_tx,
                                                   lambda cm, cn, tm, tn, tk: (tm // cn + tn // cm) * tk * 2)
    assert "elements, not bytes" in _not_yet(ex.check_expect_tx, lambda cm, cn, tm, tn, tk: (tm + tn) * tk)
    # the first visible case tells the mistakes apart: one reading each, none joined by "or"
    for wrong, words in ((lambda cm, cn, tm, tn, tk: tm * tk * 2, "the A tile only"),
                         (lambda cm, cn, tm, tn, tk: tn * tk * 2, "the B tile only"),
                         (lambda cm, cn, tm, tn, tk: (tm + tn) * tk * 2 * cm * cn, "the whole cluster's bytes")):
        msg = _not_yet(ex.check_expect_tx, wrong)
        assert words in msg and "(2, 4, 256" in msg and " — or " not in msg


# -- 2.5 L2 bytes saved -------------------------------------------------------------------------------
def test_l2_saved(capsys):
    def right(cm, cn, tm, tn):
        a, b = tm * 128, tn * 128
        return cm * cn * (a + b) - cm * a - cn * b
    ex.check_l2_saved(right)
    ex.check_l2_saved(right, hidden=hidden_cases("mc_l2_saved"))
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct: L2 bytes saved") == 2
    assert "no function yet" in _not_yet(ex.check_l2_saved, ...)
    assert "without multicast" in _not_yet(ex.check_l2_saved, lambda cm, cn, tm, tn: cm * cn * (tm + tn) * 128)
    assert "with multicast; saved" in _not_yet(ex.check_l2_saved, lambda cm, cn, tm, tn: (cm * tm + cn * tn) * 128)
    msg = _not_yet(ex.check_l2_saved, lambda cm, cn, tm, tn: right(cn, cm, tm, tn))   # cluster_m, cluster_n swapped
    assert "(2, 4, 64, 128)" in msg and "(1 earlier case agreed)" in msg


# -- 2.4 the A mask inside the kernel ---------------------------------------------------------------------
def test_mask_expression_evaluates_like_the_kernel():
    for shape in ((2, 2), (2, 4), (4, 2), (1, 4), (3, 5)):
        for r in range(shape[0] * shape[1]):
            assert ex.eval_mask_expr(SOLUTION_EXPR, shape, r) == a_mask_of(r % shape[0], r // shape[0], *shape)
    assert ex.eval_mask_expr("~0u", (2, 2), 0) == 0xFFFF          # u32 arithmetic, low 16 bits kept
    assert ex.eval_mask_expr("mn.x - 1", (2, 2), 0) == 0xFFFF
    assert ex.eval_mask_expr("0x10u >> 2 | rank % 3", (2, 2), 2) == 6
    for bad, words in (("1 << 40", "undefined in C"), ("rank / (mn.x)", "divides by zero"),
                       ("rank == 1", "not something the exercise evaluates"), ("m + n", "not something")):
        with pytest.raises(ValueError, match=words):
            ex.eval_mask_expr(bad, (2, 2), 0)


def test_masked_model_executes_the_masks_it_is_given():
    from bwlab import multicast as mc
    cfg = mc.teach_config()
    ops = mc.make_operands(cfg, 0)
    masks = mc.teach_masks(cfg)
    assert np.array_equal(mc.masked_multicast_model(cfg, ops, masks), mc.multicast_model(cfg, ops))
    masks[:, 0] = 1 << np.arange(4)                 # every CTA keeps its A slice to itself
    img = mc.masked_multicast_model(cfg, ops, masks)
    a = cfg.tile_bytes("A") // 2                     # rank 0 holds A slice 0 only: slice 1 never lands
    right = mc.multicast_model(cfg, ops)
    assert np.all(img[0, a:2 * a] == mc.FILL_BYTE) and np.array_equal(img[0, :a], right[0, :a])
    assert np.array_equal(img[:, 2 * a:], right[:, 2 * a:])     # the B tiles still come by the B masks
    with pytest.raises(ValueError, match="masks are"):
        mc.masked_multicast_model(cfg, ops, np.full((4, 2), 0x10, np.uint16))


def test_mask_kernel_edits_one_line():
    k = ex.mask_kernel("0x5 << mn.x")
    assert k.edited and k.text.count("(u16)(0x5 << mn.x)") == 1 and ex.TEACH_MASK_LINE not in k.text


def test_teach_mask_right_answer(model_tier, capsys):
    ex.check_teach_a_mask(SOLUTION_EXPR, hidden=hidden_cases("mc_teach_mask"))
    out = capsys.readouterr().out.replace("checked: ", "correct: ")
    for shape in ("2x2", "2x4", "4x2", "1x4"):
        assert f"correct: the A mask in the kernel, cluster {shape}" in out
    assert "the model, executing your mask" in out


def test_teach_mask_placeholder_and_bad_text(model_tier):
    assert "no answer yet" in _not_yet(ex.check_teach_a_mask, None)
    assert "as a string" in _not_yet(ex.check_teach_a_mask, 5)
    assert "without ';'" in _not_yet(ex.check_teach_a_mask, "0x5; return")
    msg = _not_yet(ex.check_teach_a_mask, "0x5 << mn.q")
    assert "does not compile" in msg and "(u16)(0x5 << mn.q)" in msg     # the learner's line


def test_teach_mask_names_the_cta_whose_barrier_never_completes(model_tier):
    msg = _not_yet(ex.check_teach_a_mask, "1 << rank")          # every CTA keeps its slice to itself
    assert "CTA rank 0's barrier never completes" in msg and "expects 16384 B and receives 12288 B" in msg
    msg = _not_yet(ex.check_teach_a_mask, "0x5 << mn.x")      # right for 2 x 2, not for the visible 2 x 4
    assert "cluster 2x4" in msg and "CTA rank 4's barrier never completes" in msg


def test_teach_mask_into_another_row(model_tier):
    msg = _not_yet(ex.check_teach_a_mask, "0x3 << (2 * mn.y)")   # the column: A slices of another row
    assert "not with the right bytes" in msg and "of another row" in msg and "first difference at CTA" in msg
    msg = _not_yet(ex.check_teach_a_mask, "0xF")
    assert "completes EARLY" in msg


@pytest.mark.sm90
def test_teach_mask_on_the_gpu(monkeypatch, capsys):
    monkeypatch.setenv("BWLAB_BACKEND", "auto")
    ex.check_teach_a_mask(SOLUTION_EXPR, hidden=hidden_cases("mc_teach_mask"))
    assert "your kernel on the GPU" in capsys.readouterr().out.replace("checked: ", "correct: ")
    msg = _not_yet(ex.check_teach_a_mask, "0x5 << mn.x", hidden=hidden_cases("mc_teach_mask"))
    assert "cluster 2x4" in msg and "did not finish" in msg and "MbarrierTimeout" in msg


@pytest.mark.parametrize("expr", [f"(u16)({SOLUTION_EXPR})", f"(u32)({SOLUTION_EXPR})",
                                  f"(unsigned short)({SOLUTION_EXPR})", f"(unsigned)({SOLUTION_EXPR})"])
def test_teach_mask_takes_a_c_cast(model_tier, capsys, expr):
    """A C cast compiles (NVRTC), so the check takes it: `(u16)(...)` is what the kernel itself writes."""
    ex.check_teach_a_mask(expr)
    assert "correct: the A mask in the kernel, cluster 2x4" in capsys.readouterr().out.replace("checked: ", "correct: ")


def test_eval_mask_expr_casts_keep_their_bits():
    assert ex.eval_mask_expr("(u16)(0x12345)", (2, 2), 0) == 0x2345
    assert ex.eval_mask_expr("(u16)0x12345 >> 4", (2, 2), 0) == 0x234      # a cast binds before >>
    assert ex.eval_mask_expr("(unsigned short) (mn.y + 0x10000)", (2, 2), 3) == 1


def test_teach_mask_in_the_emulator(emulated_tier, capsys):
    """No GPU: the learner's whole edited kernel runs in the PTX emulator, for every cluster shape."""
    ex.check_teach_a_mask(SOLUTION_EXPR)
    assert "your kernel in the PTX emulator" in capsys.readouterr().out.replace("checked: ", "correct: ")
    msg = _not_yet(ex.check_teach_a_mask, "0x5 << mn.x")
    assert "did not finish" in msg and "MbarrierTimeout" in msg and "spins in mbarrier.try_wait" in msg
