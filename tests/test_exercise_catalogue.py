"""Every exercise, three or more plausible wrong answers (tests/exercise_catalogue.py), each through the
visible check a learner runs (the graded cell without its hidden part): the first miss shows the hint
the catalogue names, never "correct" and never the value the rule gives; a wrong answer the visible
check cannot see (0.1's small GPU list) is told what was not checked, without "correct". And the
right answers of the notebooks' answer key pass."""
import contextlib
import io
import re
from collections import Counter

import pytest

from bwlab import exercises as bx
from exercise_catalogue import CATALOGUE, check_of

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setenv("BWLAB_BACKEND", "model")    # kernel edits are executed by the model: fast, no GPU
    bx._SHOWN.clear()
    yield
    bx._SHOWN.clear()


def _first_miss(exercise, answer):
    """(what the notebook shows for the NotYet or None, what was printed)."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            check_of(exercise)(answer)
    except bx.NotYet as e:
        return ANSI.sub("", "\n".join(e._render_traceback_())), out.getvalue()
    return None, out.getvalue()


def test_every_exercise_has_three_wrong_answers():
    from bwlab.exercises import _course_module
    hidden = _course_module()
    exercises = {name for name in dir(hidden) if not name.startswith("_") and callable(getattr(hidden, name))
                 and name.split("_")[0] in ("orient", "tma", "mc", "mma", "tmem", "store", "flow", "gemm", "lowp", "cap")}
    per = Counter(e for e, *_ in CATALOGUE)
    missing = {e: per.get(e, 0) for e in exercises if per.get(e, 0) < 3}
    assert not missing, f"exercises with fewer than 3 catalogued wrong answers: {missing}"


@pytest.mark.parametrize("exercise,what,make,hint", CATALOGUE, ids=[f"{c[0]}: {c[1]}" for c in CATALOGUE])
def test_a_wrong_answer_gets_its_hint(exercise, what, make, hint):
    shown, printed = _first_miss(exercise, make())
    assert "correct" not in printed.lower(), f"{what}: a visible check said correct:\n{printed}"
    if isinstance(hint, tuple):                      # a case the visible check does not see
        assert shown is None, shown
        assert hint[0] in printed.lower() and all(w in printed for w in hint[1:]), printed
        return
    assert shown is not None, f"{what}: the visible check passed it:\n{printed}"
    assert hint in shown, f"{what}: expected {hint!r} in\n{shown}"
    assert "correct" not in shown.lower()
    assert "\n  expected:" not in shown and "\n  rule:" not in shown     # both wait for a second miss
    if "your value:" in shown:                                           # the useful line first
        assert shown.splitlines()[1].startswith("  your value:"), shown


def test_a_second_miss_shows_the_rule_and_the_expected_value():
    exercise, what, make, hint = next(c for c in CATALOGUE if c[0] == "gemm_stage_bytes")
    first, _ = _first_miss(exercise, make())
    second, _ = _first_miss(exercise, make())
    assert "expected:" not in first and "expected: " in second and "rule: " in second


def test_the_visible_wording_never_says_correct_where_the_graded_version_tries_more(capsys):
    from bwlab.gemm import exercises as gemm
    from bwlab.hw import exercises as orient
    from bwlab.device import tiers_for
    orient.check_tier(lambda stage, cc: tiers_for(cc)[stage])
    out = capsys.readouterr().out
    assert out.startswith("checked: the tier of a stage") and "Not checked here" in out and "correct" not in out

    def right(smem, regs, threads):
        warps = (threads + 31) // 32
        per_warp = (regs * 32 + 255) // 256 * 256
        return min(233472 // smem, 65536 // (per_warp * warps), 32, 64 // warps)
    gemm.check_ctas_per_sm(right)
    out = capsys.readouterr().out
    assert "300 random ones" in out and "correct" not in out
