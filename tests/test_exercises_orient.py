"""The graded exercises of notebook 00 (bwlab.hw.exercises): each check passes the right answer, says
"no answer yet" to the placeholder, and names the rule or the mistake for common wrong answers; the
student version of the notebook (solutions cleared by nbgrader) fails each check with that message."""
from pathlib import Path

import pytest

from bwlab.exercises import hidden_cases
from bwlab.exercises import NotYet
from bwlab.hw import element_type
from bwlab.hw import exercises as ex

ROOT = Path(__file__).resolve().parents[1]


def tier_by_hand(stage, cc):
    """The tier rules written out from the README's table, not from bwlab.device."""
    if cc is None or tuple(cc) < (9, 0):
        return "emulated"
    if stage in ("tma", "multicast", "store"):
        return "hardware"
    return "hardware" if cc[0] in (10, 11) else "hybrid"


RIGHT_HOPS = {"TMA load": ("GMEM", "SMEM"), "tcgen05.mma": ("SMEM", "TMEM"), "tcgen05.ld": ("TMEM", "RMEM"),
              "st.shared": ("RMEM", "SMEM"), "TMA store": ("SMEM", "GMEM")}


def not_yet(check, answer, hidden=()) -> str:
    with pytest.raises(NotYet) as e:
        check(answer, hidden=hidden)
    return str(e.value)


# ---- 0.1 the tier ----------------------------------------------------------------------------------------
def test_tier_right(capsys):
    ex.check_tier(tier_by_hand, hidden=hidden_cases("orient_tier"))
    assert "correct: the tier of a stage" in capsys.readouterr().out.replace("checked: ", "correct: ")


def test_tier_placeholders():
    assert "no function yet" in not_yet(ex.check_tier, None)

    def stub(stage, cc):
        """returns nothing yet"""
    assert "returns no answer yet" in not_yet(ex.check_tier, stub)


def test_tier_mistakes():
    msg = not_yet(ex.check_tier, lambda stage, cc: "hardware")
    assert "expected: 'hybrid'" in msg and "tcgen05 and TMEM" in msg and "sm_90 has TMA" in msg
    # hybrid on a GPU without TMA: only the hidden tests try an sm_89
    msg = not_yet(ex.check_tier, lambda s, cc: tier_by_hand(s, cc) if cc and cc[0] >= 9 else "hybrid", hidden=hidden_cases("orient_tier"))
    assert "has no TMA" in msg and "what runs it then" in msg
    # sm_120 has TMA but no tcgen05: the visible check tries it (it never says "correct" to this one)
    msg = not_yet(ex.check_tier, lambda s, cc: "hardware" if cc and cc >= (10, 0) else tier_by_hand(s, cc))
    assert "sm_120" in msg and "hybrid" in msg


def test_tier_visible_check_needs_cc():
    # right on an H100 but blind to cc: the visible check's B200 row catches it
    msg = not_yet(ex.check_tier, lambda s, cc: tier_by_hand(s, (9, 0)))
    assert "(10, 0)" in msg and "expected: 'hardware'" in msg and "has tcgen05 and TMEM" in msg


# ---- 0.2 the hops ---------------------------------------------------------------------------------------
def test_hops_right(capsys):
    ex.check_hops(RIGHT_HOPS, hidden=hidden_cases("orient_hops"))
    ex.check_hops({k: list(v) for k, v in RIGHT_HOPS.items()})
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct: the hops of the data path") == 2


def test_hops_placeholders():
    assert "no answer yet" in not_yet(ex.check_hops, {k: ... for k in ex.HOP_KEYS})
    msg = not_yet(ex.check_hops, {**{k: ... for k in ex.HOP_KEYS}, "TMA load": ("GMEM", "SMEM")})
    assert "no answer yet for" in msg and "tcgen05.mma" in msg


def test_hops_mistakes():
    msg = not_yet(ex.check_hops, {**RIGHT_HOPS, "tcgen05.mma": ("SMEM", "RMEM")})
    assert "Hopper's wgmma accumulates (registers)" in msg
    msg = not_yet(ex.check_hops, {**RIGHT_HOPS, "tcgen05.ld": ("RMEM", "TMEM")})
    assert "the other way round" in msg and "tcgen05.ld" in msg


# ---- 0.3 the bytes of a tile ----------------------------------------------------------------------------
def test_tile_bytes_right(capsys):
    ex.check_tile_bytes(lambda r, c, d: r * c * element_type(d).bits // 8, hidden=hidden_cases("orient_tile_bytes"))
    assert "correct: bytes of a tile" in capsys.readouterr().out.replace("checked: ", "correct: ")


def test_tile_bytes_placeholder():
    assert "no function yet" in not_yet(ex.check_tile_bytes, None)


def test_tile_bytes_mistakes():
    msg = not_yet(ex.check_tile_bytes, lambda r, c, d: r * c)
    assert "returned 8192" in msg and "number of elements, not of bytes" in msg
    msg = not_yet(ex.check_tile_bytes, lambda r, c, d: r * c * element_type(d).bits)
    assert "number of bits" in msg
    # right for every whole-byte type, wrong for the packed 4-bit one
    msg = not_yet(ex.check_tile_bytes, lambda r, c, d: r * c * element_type(d).bytes, hidden=hidden_cases("orient_tile_bytes"))
    assert "e2m1" in msg and "share a byte" in msg
    # ... and the visible check says so too
    msg = not_yet(ex.check_tile_bytes, lambda r, c, d: r * c * element_type(d).bytes)
    assert "e2m1" in msg and "share a byte" in msg and "(1 earlier case agreed)" in msg


# ---- 0.4 phase and parity ---------------------------------------------------------------------------
def test_parity_right(capsys):
    bar = ex.run_parity_steps()
    assert (bar.phase, bar.tx, bar.pending) == (1, 2048, 0)
    ex.check_mbarrier_parity((1, True, False), hidden=hidden_cases("orient_parity"))
    ex.check_mbarrier_parity([1, True, False])
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct: the mbarrier after two loads") == 2


def test_parity_placeholder():
    assert "no answer yet" in not_yet(ex.check_mbarrier_parity, (None, None, None))
    assert "no answer yet" in not_yet(ex.check_mbarrier_parity, None)


def test_parity_mistakes():
    assert "parities swapped" in not_yet(ex.check_mbarrier_parity, (1, False, True))
    msg = not_yet(ex.check_mbarrier_parity, (2, True, True))
    assert "only 2048 of its 4096 bytes" in msg and "tx-count = 2048" in msg
    assert "returns True at once" in not_yet(ex.check_mbarrier_parity, (1, False, False))
    msg = not_yet(ex.check_mbarrier_parity, (1, True, True))
    assert "parity(1) asks about phase 1" in msg and "has not completed" in msg


# ---- the student version ------------------------------------------------------------------------------
def exercise_pairs(notebook: str):
    """(solution source, grade source) of each exercise of a built notebook, as nbgrader's
    generate_assignment leaves them (solutions cleared, hidden tests removed) and as written."""
    nbformat = pytest.importorskip("nbformat")
    pre = pytest.importorskip("nbgrader.preprocessors")
    written = nbformat.read(ROOT / "notebooks" / f"{notebook}.ipynb", as_version=4)
    student, res = pre.ClearSolutions(code_stub={"python": "# your answer here"}).preprocess(
        nbformat.from_dict(written), {})
    student, _ = pre.ClearHiddenTests().preprocess(student, res)
    pairs = []
    for full, cleared in zip(written.cells, student.cells):
        meta = full.metadata.get("nbgrader", {})
        if meta.get("solution"):
            pairs.append([meta["grade_id"], (full.source, cleared.source)])
        elif meta.get("grade"):
            assert meta["grade_id"] == pairs[-1][0] + "_check", "a grade cell follows its solution cell"
            pairs[-1].append((full.source, cleared.source))
    return pairs


def run_student_version(notebook: str, expect: int):
    pairs = exercise_pairs(notebook)
    assert len(pairs) == expect
    for grade_id, (solution, solution_cleared), (grade, grade_cleared) in pairs:
        assert "# your answer here" in solution_cleared and "BEGIN SOLUTION" not in solution_cleared
        assert "HIDDEN" not in grade_cleared and "HIDDEN TESTS" in grade
        ns = {}
        exec(solution_cleared, ns)
        with pytest.raises(NotYet, match="no answer yet|no function yet|returns no answer yet"):
            exec(grade_cleared, ns)
        ns = {}
        exec(solution, ns)
        exec(grade, ns)   # the instructor's version passes, hidden tests included


def test_student_version_of_notebook_00(capsys):
    run_student_version("00_orientation", 4)
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct:") == 8


def test_hops_feedback_never_gives_the_mapping():
    """A miss says which entry is wrong and what to ask oneself, never the right (from, to) of any hop."""
    wrong = {**RIGHT_HOPS, "tcgen05.ld": ("RMEM", "TMEM"), "TMA store": ("GMEM", "SMEM")}
    for bad in (wrong, {**RIGHT_HOPS, "tcgen05.mma": ("SMEM", "RMEM")}, {**RIGHT_HOPS, "st.shared": ("TMEM", "GMEM")}):
        msg = not_yet(ex.check_hops, bad)
        for k, (src, dst) in RIGHT_HOPS.items():
            assert f"{src} -> {dst}" not in msg and f"from {src} to {dst}" not in msg
            assert str((src, dst)) not in msg or bad[k] == (src, dst), f"{k}'s answer in {msg!r}"


# ---- 0.4 every student's numbers ------------------------------------------------------------------------
def _token_for_variant(index: int) -> str:
    """A token whose parity numbers are PARITY_VARIANTS[index] (searched, so every variant is checked)."""
    from bwlab import variants
    for i in range(100000):
        tok = f"{i:016x}"
        if variants.pick("orient_parity", ex.PARITY_VARIANTS, tok) == ex.PARITY_VARIANTS[index]:
            return tok
    raise AssertionError(f"no token gives variant {index}")


def test_every_parity_variant_has_one_answer_the_key_finds(capsys):
    """The answer key's reasoning (count 1: load 0 completes phase 0; the second load completes the next
    phase once every byte landed) agrees with the model for every variant a token can draw; a neighbour's
    answer (the self-study one) is wrong for some of them."""
    from bwlab import variants
    answers = set()
    for index in range(1, len(ex.PARITY_VARIANTS)):
        with variants.using(_token_for_variant(index)):
            count, b1, b2, landed = ex.parity_numbers()
            phases = (count == 1) + (landed == b2)
            key = (phases, phases % 2 == 1, phases % 2 == 0)
            ex.check_mbarrier_parity(key)
            answers.add(key)
    assert answers == {(0, False, True), (1, True, False), (2, False, True)}
    assert capsys.readouterr().out.replace("checked: ", "correct: ").count("correct:") == len(ex.PARITY_VARIANTS) - 1


def test_a_token_never_gets_the_self_study_numbers():
    from bwlab import variants
    picks = {variants.pick("orient_parity", ex.PARITY_VARIANTS, f"{i:016x}") for i in range(500)}
    assert ex.PARITY_VARIANTS[0] not in picks and len(picks) > 40
    assert variants.pick("orient_parity", ex.PARITY_VARIANTS, None) == ex.PARITY_VARIANTS[0]
