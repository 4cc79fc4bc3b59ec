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
    out = capsys.readouterr().out.replace("checked: ", "correct: ")
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


# ---- every variant generator: each variant reachable, legal, answered by the key, lost by a neighbour -------
# exercise -> (notebook source, the student's numbers for a token, the variants). Every exercise whose
# numbers come from bwlab.variants.pick is here (test_every_variant_generator_is_covered).
def _varied():
    from bwlab.hw import exercises as orient
    from bwlab.multicast import exercises as mc
    from bwlab.tma import exercises as tma
    from bwlab.tmem import exercises as tmem
    from bwlab.umma import exercises as umma
    return {
        "orient_parity": ("00_orientation", orient.parity_numbers, orient.PARITY_VARIANTS),
        "tma_broken_rule": ("01_tma_load", tma.rule_candidates, tma.RULE_VARIANTS),
        "tma_expect_tx_edit": ("01_tma_load", tma.edit_box, tma.EDIT_BOXES),
        "mc_slice_receivers": ("02_multicast", mc.receiver_rank, mc.RECEIVER_RANKS),
        "mma_teach_sbo": ("03b_umma_mma", umma.teach_sbo_case, umma.TEACH_SBO_VARIANTS),
        "tmem_kernel_columns": ("04_tmem_load", tmem.wide_columns, tmem.WIDE_VARIANTS),
    }


VARIED = ("orient_parity", "tma_broken_rule", "tma_expect_tx_edit", "mc_slice_receivers", "mma_teach_sbo",
          "tmem_kernel_columns")
# where fewer than 10 variants: every legal configuration the exercise has (docs/teaching.md says why)
FEW = {"tmem_kernel_columns": "every .num of tcgen05.ld.32x32b but x8, the unedited kernel's"}
# where the answers are so few that the self-study one is some students' too
FEW_ANSWERS = {"orient_parity": "(phases, parity 0, parity 1) takes three values"}


def _tokens(exercise) -> dict:
    """{variant index: a token that draws it}, every token variant reached."""
    numbers, choices = _varied()[exercise][1:]
    found = {}
    for i in range(20000):
        token = f"{i:016x}"
        found.setdefault(choices.index(numbers(token)), token)
        if len(found) == len(choices) - 1:
            break
    return found


def _cells(exercise):
    from exercise_cells import exercise_cells
    nb = _varied()[exercise][0]
    (sol, grade), = [(s, g) for gid, s, g in exercise_cells(ROOT / "notebooks" / "src" / f"{nb}.py") if gid == exercise]
    return sol, grade


def test_every_variant_generator_is_covered():
    import re
    picked = set()
    for path in (ROOT / "bwlab").rglob("*.py"):
        picked |= set(re.findall(r'variants\.pick\("([a-z0-9_]+)"', path.read_text()))
    assert picked == set(VARIED) == set(_varied())


@pytest.mark.parametrize("exercise", VARIED)
def test_every_variant_is_drawn_by_some_token_and_never_the_self_study_one(exercise):
    numbers, choices = _varied()[exercise][1:]
    assert len(choices) >= 11 or exercise in FEW, f"{exercise}: {len(choices) - 1} variants for the graded students"
    assert len({repr(c) for c in choices}) == len(choices), f"{exercise}: a variant is listed twice"
    assert sorted(_tokens(exercise)) == list(range(1, len(choices)))
    assert numbers(None) == choices[0]


def _legal(exercise, numbers):
    """Each variant against the stage's own rules and models; returns the variant's answer."""
    if exercise == "orient_parity":
        from bwlab.hw.exercises import run_parity_steps
        count, b1, b2, landed = numbers
        assert count in (1, 2) and 0 < landed <= b2 and b1 % 16 == 0 == b2 % 16
        with variants.using(None):
            bar = run_parity_steps([("arrive_expect_tx", b1), ("complete_tx", b1), ("arrive_expect_tx", b2),
                                    ("complete_tx", landed)], count)
        return bar.completed, bar.try_wait_parity(0), bar.try_wait_parity(1)
    if exercise == "tma_broken_rule":
        from collections import Counter
        from bwlab.tma import exercises as tma
        from bwlab.tma.rules import RULES, Draft
        verdicts = {k: tma._verdict(kw)[0] for k, kw in numbers.items()}
        assert sorted(verdicts) == list("abcdefg")
        for k, kw in numbers.items():            # each map breaks one rule at most: the one it is asked for
            broken = [r.name for r in RULES if r.check(Draft(**kw))]
            assert broken in ([], [verdicts[k]]), (k, kw, broken)
        assert Counter(verdicts.values()) == Counter(tma._verdict(kw)[0] for kw in tma.RULE_CANDIDATES.values())
        return verdicts
    if exercise == "tma_expect_tx_edit":
        from bwlab.tma import exercises as tma
        from bwlab.tma.tensor_map import TensorMap
        tmap = TensorMap("bfloat16", tma.EDIT_TMAP.global_shape, numbers)      # raises on a broken rule
        assert all(c + b <= n for c, b, n in zip(tma.EDIT_COORDS, numbers, tmap.global_shape))   # inside
        return tmap.tx_bytes
    if exercise == "mc_slice_receivers":
        assert 0 <= numbers < 16
        return numbers
    if exercise == "mma_teach_sbo":
        from bwlab.umma.case import WgmmaCase
        from bwlab.umma.descriptors import tile_desc
        case = WgmmaCase(**numbers, kernel="teach_wgmma.cu")    # what the kernel runs, in its buffer
        return tile_desc(case.a_major, case.a_swizzle, case.dtype, (case.M, case.K), 0).stride_byte_offset
    if exercise == "tmem_kernel_columns":
        from bwlab.tmem.forms import TmemAccess
        from bwlab.tmem.tables import ALLOC_NCOLS
        TmemAccess("32x32b", numbers)                # a legal .num
        assert numbers != 8                          # the unedited kernel's
        return numbers, min(n for n in ALLOC_NCOLS if n >= numbers)
    raise AssertionError(exercise)


@pytest.mark.parametrize("exercise", VARIED)
def test_every_variant_is_legal_and_the_answer_key_answers_it(exercise, model_tier, capsys):
    """Every variant: legal by the stage's rules; the notebook's answer key, run under a token that draws
    it, passes the graded cell with its hidden part; and no variant's answer is the self-study one."""
    numbers, choices = _varied()[exercise][1:]
    sol, grade = _cells(exercise)
    self_study = _legal(exercise, choices[0])
    for index, token in sorted({0: None, **_tokens(exercise)}.items()):
        answer = _legal(exercise, choices[index])
        assert index == 0 or answer != self_study or exercise in FEW_ANSWERS, \
            f"{exercise}: variant {choices[index]} has the self-study answer"
        with variants.using(token):
            assert numbers() == choices[index]
            ns = {}
            exec(sol, ns)
            exec(grade, ns)
        out = capsys.readouterr().out.replace("checked: ", "correct: ")
        assert "correct:" in out, (exercise, choices[index], out[-500:])


@pytest.mark.parametrize("exercise", VARIED)
def test_a_neighbours_values_lose_the_points(exercise, model_tier, capsys):
    """The answer key's values for one student, graded under another student's numbers: NotYet for every
    variant, with a neighbour's whose answer differs (each variant has one)."""
    from bwlab.exercises import NotYet
    choices = _varied()[exercise][2]
    sol, grade = _cells(exercise)
    tokens = _tokens(exercise)
    answers = {i: _legal(exercise, choices[i]) for i in tokens}
    for mine in sorted(tokens):
        theirs = next(i for i in sorted(tokens) if answers[i] != answers[mine])
        with variants.using(tokens[theirs]):
            ns = {}
            exec(sol, ns)                # the neighbour's key: their values
        with variants.using(tokens[mine]):
            with pytest.raises(NotYet):
                exec(grade, ns)
    capsys.readouterr()


def test_the_teaching_guide_counts_the_variants_as_the_code_has_them():
    """docs/teaching.md's table of exercises: each varied one with its number of variants and answers."""
    import re
    text = (ROOT / "docs" / "teaching.md").read_text()
    for exercise in VARIED:
        choices = _varied()[exercise][2]
        answers = {repr(_legal(exercise, c)) for c in choices[1:]}
        row = re.search(rf"^\| [0-9.]+ `{exercise}` \| a \| (\d+) \((\d+)\) \|", text, re.M)
        assert row, f"docs/teaching.md has no row of class (a) for {exercise}"
        assert (int(row[1]), int(row[2])) == (len(choices) - 1, len(answers)), exercise
    rows = re.findall(r"^\| [0-9.]+ `([a-z0-9_]+)` \| ([abc]) \|", text, re.M)
    assert len(rows) == len({r for r, _ in rows}) >= 39
    assert {r for r, c in rows if c == "a"} == set(VARIED)
