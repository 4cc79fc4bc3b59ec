"""Every student their own numbers (bwlab.variants) and the course data's hidden cases (course_data/).

The token is HMAC(secret, id), found by a notebook in BWLAB_TOKEN or ./bwlab-token.txt, overridden by
the grader's `using`; a token never draws the self-study numbers. The hidden cases are outside the
package and outside the sandbox's view, every exercise has them, and where the course data answers
with (arguments, expected) pairs its answers agree with the stage's model.
"""
import json
from pathlib import Path

import pytest

from bwlab import exercises, variants
from bwlab.tools import grading

ROOT = Path(__file__).resolve().parents[1]


def test_token_is_an_hmac_of_the_id():
    a, b = variants.token_for(b"s" * 32, "alice"), variants.token_for(b"s" * 32, "bob")
    assert len(a) == 16 and a != b and a == variants.token_for(b"s" * 32, "alice")
    assert a != variants.token_for(b"t" * 32, "alice")
    with pytest.raises(variants.TokenError):
        variants.token_for(b"", "alice")


def test_where_a_notebook_finds_its_token(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(variants.TOKEN_ENV, raising=False)
    assert variants.current() is None
    (tmp_path / variants.TOKEN_FILE).write_text("00112233445566AA\n")
    assert variants.current() == "00112233445566aa"
    monkeypatch.setenv(variants.TOKEN_ENV, "ffffffffffffffff")
    assert variants.current() == "ffffffffffffffff"
    with variants.using("0123456789abcdef"):          # the grader's: the environment does not count
        assert variants.current() == "0123456789abcdef"
        with variants.using(None):
            assert variants.current() is None
    monkeypatch.setenv(variants.TOKEN_ENV, "not a token")
    with pytest.raises(variants.TokenError, match="16 hex digits"):
        variants.current()


def test_pick_needs_a_choice_besides_the_self_study_one():
    with pytest.raises(ValueError, match="at least one more"):
        variants.pick("x", [1])
    assert variants.pick("x", [1, 2], "0123456789abcdef") == 2


def test_the_secret_is_made_once_and_kept(tmp_path):
    from bwlab.tools import classroom as cls
    path = cls.ensure_secret(tmp_path)
    first = path.read_bytes()
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    cls.ensure_secret(tmp_path)
    assert path.read_bytes() == first
    rows = cls.tokens(tmp_path, ["alice", "bob"])
    assert rows == [(s, variants.token_for(variants.read_secret(tmp_path), s)) for s in ("alice", "bob")]


def test_the_course_data_is_outside_the_package_and_the_sandbox():
    data = exercises.course_data_dir()
    assert data == ROOT / "course_data"
    assert not data.resolve().is_relative_to(grading.PACKAGE)
    for p in grading._readonly_paths():
        assert not data.resolve().is_relative_to(p), f"the sandbox sees {p}, which holds the course data"
    setup = (ROOT / "setup.py").read_text()
    assert 'find_packages(include=["bwlab", "bwlab.*"])' in setup


def test_every_hidden_test_asks_for_course_data_that_exists():
    """Each graded cell's hidden part passes its check the course data's cases of its exercise
    (`hidden=hidden_cases("<answer cell id>")`, or `hidden=True`, which the check resolves to the same)."""
    seen = 0
    for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")):
        for c in json.loads(nb.read_text())["cells"]:
            src = "".join(c["source"])
            gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            if "### BEGIN HIDDEN TESTS" not in src:
                continue
            name = gid.removesuffix("_check")
            hidden = src.split("### BEGIN HIDDEN TESTS")[1]
            assert f'hidden=hidden_cases("{name}")' in hidden or "hidden=True" in hidden, (nb.name, gid)
            exercises.hidden_cases(name)       # KeyError if the course data lacks it
            seen += 1
    assert seen >= 37


def test_the_course_datas_own_answers_agree_with_the_models():
    from bwlab.device import tiers_for
    from bwlab.hw import element_type
    for (stage, cc), tier in exercises.hidden_cases("orient_tier"):
        assert tiers_for(cc)[stage] == tier, (stage, cc)
    for (rows, cols, dtype), nbytes in exercises.hidden_cases("orient_tile_bytes"):
        assert nbytes * 8 == rows * cols * element_type(dtype).bits


def test_without_course_data_a_check_tries_the_shown_cases_and_says_so(monkeypatch, tmp_path, capsys):
    from bwlab.hw import exercises as ex
    monkeypatch.setattr(exercises, "course_data_dir", lambda: None)
    ex.check_tile_bytes(lambda r, c, d: r * c * 2 if d == "bf16" else r * c // 2, hidden=True)
    out = capsys.readouterr().out
    assert "the course data is not on this machine" in out and "correct: bytes of a tile" in out
    with pytest.raises(grading.GradingError, match="no course data"):
        grading.course_data()


def test_the_package_holds_no_general_reference_for_the_orientation_functions():
    from bwlab.hw import exercises as ex
    for name in ("_tier_reference", "_tile_reference", "_expected_parity"):
        assert not hasattr(ex, name)
    with pytest.raises(KeyError):
        ex._tile_table(())[(128, 256, "f32")]          # a hidden case: not in the package's table


def test_visible_checks_catch_what_the_hidden_ones_would():
    """0.1 sm_120 taken for tcgen05 hardware, 1.4 a formula without `base`, 3.1 SBO 1024 for every
    swizzle: each is caught by the visible check, never told "correct"."""
    from bwlab.exercises import NotYet
    from bwlab.hw import exercises as hw
    from bwlab.tma import exercises as tma
    from bwlab.umma import exercises as umma
    with pytest.raises(NotYet, match="sm_120"):
        hw.check_tier(lambda s, cc: "model" if cc is None or cc < (9, 0) else
                      "hardware" if s in ("tma", "multicast", "store") or cc >= (10, 0) else "hybrid")

    def no_base(r, c, e, base):
        a = r * 128 + c * e
        return a ^ (((a >> 7) & 7) << 4)
    with pytest.raises(NotYet, match="base"):
        tma.check_swizzle_offset(no_base)
    with pytest.raises(NotYet):
        umma.check_lbo_sbo(lambda sw, rows: (16 if sw != "none" else rows // 8 * 128, 1024 if sw != "none" else 128))
