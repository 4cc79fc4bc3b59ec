"""Checks for the notebooks' exercises: they say what is wrong, not just that it is.

An exercise asks the learner to predict a number, write a small function, or edit a teaching kernel.
Its graded cell calls one of the checks below; a wrong answer raises `NotYet` (an AssertionError, so
nbgrader's autograder counts the cell as failed) whose message names the quantity, what the learner
gave, how it differs from the rule (a prediction's right value is not given away: larger or smaller,
which entry differs), the rule itself, and — where a common mistake is recognised — what that mistake
was. A function's check shows expected vs got for the input where it first differs, and a stage's
`CheckResult` the first differing byte and what it holds. A right answer prints one line saying so.

    from bwlab.exercises import check_value, check_function, check_result

    check_value("transaction bytes of the box", tx_bytes, tmap.box_bytes,
                rule="expect_tx counts every byte the TMA writes: box_dim[0] * box_dim[1] * element size",
                mistakes={tmap.box[0] * tmap.box[1]: "that is the number of elements, not of bytes"})

`check_function` calls a learner's function on the shown case and on more (the hidden tests pass
other cases) and reports the first input where it differs. `check_result` turns a stage's
`CheckResult` (from `Case.check(got)`) into a pass or a `NotYet` carrying its report: the first
differing byte, where it sits, expected vs got, and the rule's hint.
"""
from __future__ import annotations

import importlib.util
import inspect
import os
from pathlib import Path
from typing import Callable, Iterable, Mapping

import numpy as np

__all__ = ["NotYet", "render", "family_draws", "check_value", "check_function", "check_function_explained",
           "check_result", "unanswered",
           "hidden_cases", "course_cases", "course_data_dir", "COURSE_DATA_ENV"]

# ---- the hidden cases: the instructor's course data, not this package ---------------------------------
# A graded cell's hidden part asks `hidden_cases(exercise)` for what the check tries beyond the shown
# cases; the answer is computed by course_data/hidden.py, a folder of the repository that is not in the
# wheel and not in the grading sandbox: only the grader's own process (and an instructor's checkout)
# reads it. BWLAB_COURSE_DATA names another folder (an instructor's own cases).
COURSE_DATA_ENV = "BWLAB_COURSE_DATA"
_COURSE_MODULES: dict = {}


def course_data_dir() -> Path | None:
    """The course-data folder: $BWLAB_COURSE_DATA, else the checkout's course_data/, else None."""
    env = os.environ.get(COURSE_DATA_ENV, "").strip()
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent / "course_data"
    return here if (here / "hidden.py").is_file() else None


def _course_module():
    folder = course_data_dir()
    if folder is None:
        return None
    path = (folder / "hidden.py").resolve()
    if not path.is_file():
        raise FileNotFoundError(f"{COURSE_DATA_ENV}={folder}: no hidden.py there (copy course_data/ of the "
                                "repository and edit it)")
    key = (str(path), path.stat().st_mtime_ns)
    if key not in _COURSE_MODULES:
        spec = importlib.util.spec_from_file_location("bwlab_course_hidden", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _COURSE_MODULES[key] = mod
    return _COURSE_MODULES[key]


class _Hidden(tuple):
    """Hidden cases as `hidden_cases` made them from the course data (a check takes no others)."""


_MADE_HERE = object()          # what marks a _Hidden that hidden_cases made
_NO_COURSE_DATA = False        # the grading sandbox's runner sets it before a learner's code runs
_PRELOADED: dict | None = None  # the grader's: exercise -> its hidden cases, read in the grader's own process


def _genuine(hidden) -> bool:
    return isinstance(hidden, _Hidden) and getattr(hidden, "made", None) is _MADE_HERE


def course_cases(exercise: str):
    """A check's decorator. `hidden=` takes only what `hidden_cases(exercise)` returns (or True, which
    asks for it; False, None or an empty sequence: none): the hidden cases are the course data's, which
    only the grader (and an instructor's checkout) has. A visible check called with cases of its
    caller's choosing would tell the caller the expected value of any input; it refuses them."""

    def wrap(check):
        def checked(*args, hidden=(), **kwargs):
            if hidden is True:
                hidden = hidden_cases(exercise)
            elif hidden is False or hidden is None:
                hidden = ()
            elif not _genuine(hidden):
                try:
                    empty = len(hidden) == 0
                except TypeError:
                    empty = False
                if not empty:
                    raise TypeError(f"{check.__name__} takes no cases of its caller's: hidden= is only what "
                                    f"hidden_cases({exercise!r}) returns (the course data, which the grader "
                                    "holds); the visible check tries the cases it shows")
                hidden = ()
            return check(*args, hidden=hidden, **kwargs)
        # the check's name and text, but not the check itself (no __wrapped__: it would take any cases)
        checked.__name__, checked.__qualname__ = check.__name__, check.__qualname__
        checked.__doc__, checked.__module__ = check.__doc__, check.__module__
        checked.__signature__ = inspect.signature(check)           # for help(): a description, not the check
        checked.exercise = exercise
        return checked
    return wrap


def hidden_cases(exercise: str):
    """What the hidden test of `exercise` (its answer cell's id) tries beyond the shown cases, from
    the course data; () with a printed note where no course data is here (an instructor's notebook
    run outside its checkout, or the grading sandbox: only the shown cases ran). The grader refuses to
    start without it, reads it in its own process, and hands the cases to its checks itself."""
    if _PRELOADED is not None and exercise in _PRELOADED:
        return _PRELOADED[exercise]
    mod = None if _NO_COURSE_DATA else _course_module()
    if mod is None:
        print(f"hidden cases of {exercise}: the course data is not on this machine; only the shown cases ran")
        return ()
    make = getattr(mod, exercise, None)
    if make is None:
        raise KeyError(f"the course data ({mod.__file__}) has no hidden cases for {exercise!r}")
    cases = _Hidden(make())
    cases.made = _MADE_HERE
    return cases


class NotYet(AssertionError):
    """A learner's answer is missing or differs from the hardware's rule; the message says how.

    In IPython (a notebook) it shows as a short message, not a traceback (`_render_traceback_`, which
    IPython calls instead of formatting the frames; the error output keeps ename NotYet and the whole
    message as evalue, so nbgrader still scores the cell 0): the first miss of a kind says what is wrong
    and gives the hint; the second miss of the same kind (same quantity, same recognised mistake) in this
    kernel adds the rule and, for a function, the value the rule gives for the differing call (a first
    miss never shows an expected value: the answer would leak). `str(e)` always holds everything (plain
    Python, the grader's logs)."""

    def _render_traceback_(self):
        return render(str(self))


# How often each kind of miss was shown in this process (see NotYet and render()).
_SHOWN: dict = {}
_RED, _BOLD, _RESET = "\x1b[31m", "\x1b[1m", "\x1b[0m"


def parse_message(text: str) -> dict:
    """A NotYet message's parts: 'what' (the unindented lines, then any indented report lines),
    'rule', 'hint', 'diagnosis' and 'expected' (the '  rule:', '  hint:', '  your value:', '  expected:'
    lines)."""
    parts = {"what": [], "rule": None, "hint": None, "diagnosis": None, "expected": None}
    tags = {"rule:": "rule", "hint:": "hint", "your value:": "diagnosis", "expected:": "expected"}
    for line in text.splitlines():
        stripped = line.strip()
        for tag, key in tags.items():
            if line.startswith("  ") and stripped.startswith(tag) and parts[key] is None:
                parts[key] = stripped[len(tag):].strip()
                break
        else:
            parts["what"].append(line)
    return parts


def render(text: str, count: bool = True) -> list[str]:
    """The lines a notebook shows for a NotYet message (see NotYet): what is wrong, the recognised
    mistake and the hint; the rule from the second miss of the same kind on (`count` records this
    showing). An unanswered check shows what to do and the hint."""
    p = parse_message(text)
    what = p["what"] or [""]
    name = what[0].split(":", 1)[0]
    blank = "no answer yet" in what[0]
    key = (name, p["diagnosis"])
    seen = _SHOWN.get(key, 0)
    if count and not blank:
        _SHOWN[key] = seen + 1
    # what is wrong, then the recognised mistake and the hint, then any report lines (a kernel's run, a
    # barrier table): the useful line first, the evidence after it
    lines = [f"{_RED}{_BOLD}Not yet{_RESET}{_RED}: {what[0]}{_RESET}"]
    if p["diagnosis"]:
        lines.append(f"  your value: {p['diagnosis']}")
    if p["hint"]:
        lines.append(f"  hint: {p['hint']}")
    lines += what[1:]
    if p["rule"]:
        if seen >= 1 and not blank:
            lines.append(f"  rule: {p['rule']}")
    if p["expected"] and seen >= 1 and not blank:
        lines.append(f"  expected: {p['expected']}")
    if (p["rule"] or p["expected"]) and seen == 0 and not blank:
        lines.append("  (a second miss of this kind shows the rule" + (" and the expected value)" if p["expected"]
                                                                         else ")"))
    return lines


def unanswered(value) -> bool:
    """True for the placeholders a student notebook starts with (None, ...)."""
    return value is None or value is Ellipsis


def _fmt(v) -> str:
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, np.ndarray):
        return np.array2string(v, threshold=16)
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 256:
        return f"{v} (0x{v:x})"
    return repr(v)


def _equal(got, expected) -> bool:
    if isinstance(expected, np.ndarray) or isinstance(got, np.ndarray):
        try:
            return np.array_equal(np.asarray(got), np.asarray(expected))
        except Exception:
            return False
    if isinstance(expected, tuple) and isinstance(got, list):
        got = tuple(got)
    try:
        return bool(got == expected)
    except Exception:
        return False


def _ok(name: str, note: str = "", unchecked: str = "", sampled: bool = False) -> None:
    """A right answer. `unchecked`: what the graded version tries beyond this check: then the line says
    what was checked and what was not, and never 'correct' (the graded cases may still fail); `sampled`:
    random members of that family were tried here (the graded version tries its own)."""
    if unchecked:
        print(f"checked: {name}" + (f" — {note}" if note else "")
              + (f"; the graded version tries its own cases of: {unchecked}" if sampled
                 else f". Not checked here: {unchecked}; the graded version tries those"))
        return
    print(f"correct: {name}" + (f" — {note}" if note else ""))


def family_draws(family: Callable, draws: int, seed: int | None = None) -> list:
    """`draws` argument tuples from `family(rng)` (a random member of the family an exercise's cases come
    from), with a fresh random seed unless `seed` is given: a property check over the family, never the
    course data's hidden cases."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(int(draws)):
        args = family(rng)
        out.append(args if isinstance(args, tuple) else (args,))
    return out


def check_value(name: str, got, expected, *, rule: str, hint: str = "",
                mistakes: Mapping | Callable | None = None, note: str = "") -> None:
    """Compare one predicted value with what the rule gives.

    `mistakes` recognises common wrong answers: a mapping {wrong value: what it means} or a function
    (got) -> str | None. `note` is printed with a right answer (what to take away)."""
    if unanswered(got):
        raise NotYet(f"{name}: no answer yet — replace the placeholder with your prediction.\n"
                     f"  rule: {rule}" + (f"\n  hint: {hint}" if hint else ""))
    if _equal(got, expected):
        _ok(name, note)
        return
    lines = [f"{name}: you have {_fmt(got)}; {_how_it_differs(got, expected)}", f"  rule: {rule}"]
    diagnosis = None
    if callable(mistakes):
        diagnosis = mistakes(got)
    elif mistakes:
        try:
            diagnosis = mistakes.get(got if not isinstance(got, list) else tuple(got))
        except TypeError:
            diagnosis = None
    if diagnosis:
        lines.append(f"  your value: {diagnosis}")
    if hint:
        lines.append(f"  hint: {hint}")
    raise NotYet("\n".join(lines))


def _how_it_differs(got, expected) -> str:
    """How a prediction differs from the rule's value, without giving the value away: a graded answer
    must come from the learner (the functions' checks, whose inputs vary, do show expected vs got)."""
    if isinstance(expected, dict) and isinstance(got, dict):
        missing = [k for k in expected if k not in got]
        if missing:
            return f"it has no entry for {missing[0]!r}."
        extra = [k for k in got if k not in expected]
        if extra:
            return f"{extra[0]!r} is not one of the entries asked for."
        wrong = [k for k in expected if not _equal(got[k], expected[k])]
        return f"{len(wrong)} of {len(expected)} entries differ from the rule, the first at {wrong[0]!r}."
    if isinstance(expected, (tuple, list)) and isinstance(got, (tuple, list)):
        if len(got) != len(expected):
            return f"the rule gives {len(expected)} values, you have {len(got)}."
        wrong = [i for i, (g, e) in enumerate(zip(got, expected)) if not _equal(g, e)]
        return (f"{len(wrong)} of {len(expected)} values differ from the rule, the first at position "
                f"{wrong[0]} ({_fmt(got[wrong[0]])}).")
    num = (int, float, np.integer, np.floating)
    if isinstance(got, num) and isinstance(expected, num) and not isinstance(got, bool):
        return f"the rule gives a {'smaller' if got > expected else 'larger'} value."
    return "the rule gives something else."


def _call_text(fname: str, args) -> str:
    args = args if isinstance(args, tuple) else (args,)
    return f"{fname}({', '.join(_fmt(a) for a in args)})"


def check_function(name: str, fn, cases: Iterable, *, rule: str, hint: str = "",
                   reference: Callable | None = None, note: str = "", more: str = "",
                   family: Callable | None = None, draws: int = 200, family_text: str = "",
                   sampled: bool = False, shown: int | None = None) -> None:
    """Call the learner's `fn` on each case and compare with the expected result.

    `cases` holds (args, expected) pairs, or just args when `reference` computes the expected value
    (args is a tuple of positional arguments, or a single argument). The first differing call is
    reported with its arguments and what came back; the expected value is a separate line that a
    notebook shows from the second miss on. `family` (with `reference`): `family(rng)` draws the
    arguments of a random member of the family the graded cases come from; `draws` of them are tried
    after the shown cases (a randomised property check, never the hidden cases). `more` says what the
    graded version tries beyond what was checked here: a right answer then gets 'checked: ...', never
    'correct'."""
    if unanswered(fn) or not callable(fn):
        raise NotYet(f"{name}: no answer yet — no function yet: define it in the cell above.\n  rule: {rule}"
                     + (f"\n  hint: {hint}" if hint else ""))
    fname = getattr(fn, "__name__", name)
    n = 0
    cases = list(cases)
    shown = len(cases) if shown is None else shown
    if family is not None and reference is not None and more:
        cases += family_draws(family, draws)
    for case in cases:
        if reference is not None:
            args, expected = case, reference(*(case if isinstance(case, tuple) else (case,)))
        else:
            args, expected = case
        call = args if isinstance(args, tuple) else (args,)
        try:
            got = fn(*call)
        except NotImplementedError:
            raise NotYet(f"{name}: no answer yet — {fname} is not written yet (it raises NotImplementedError).\n"
                         f"  rule: {rule}") from None
        except Exception as e:
            raise NotYet(f"{name}: {_call_text(fname, args)} raised {type(e).__name__}: {e}\n"
                         f"  rule: {rule}") from None
        if unanswered(got):
            raise NotYet(f"{name}: {_call_text(fname, args)} returned {got!r} — it returns no answer yet: write "
                         f"{fname}'s body in the cell above.\n  rule: {rule}" + (f"\n  hint: {hint}" if hint else ""))
        if not _equal(got, expected):
            drawn = " (a random case of the family)" if n >= shown else ""
            lines = [f"{name}: {_call_text(fname, args)}{drawn} returned {_fmt(got)}, not what the rule gives "
                     f"({n} earlier case{'s' if n != 1 else ''} agreed).", f"  rule: {rule}",
                     f"  expected: {_fmt(expected)}"]
            if hint:
                lines.append(f"  hint: {hint}")
            raise NotYet("\n".join(lines))
        n += 1
    agreed = f"{n} cases agree" if n != 1 else "1 case agrees"
    if n > shown and not note:
        agreed = f"{shown} shown cases and {n - shown} random ones{' of ' + family_text if family_text else ''} agree"
    _ok(name, note or agreed, unchecked=more, sampled=sampled or n > shown)


def check_function_explained(name: str, fn, cases: Iterable, *, reference: Callable, rule: str,
                             explain: Callable | None = None, hint: str = "", note: str = "",
                             more: str = "", family: Callable | None = None, draws: int = 200,
                             family_text: str = "") -> None:
    """`check_function(name, fn, cases, reference=...)`, and where `fn` first differs from `reference`,
    one more line from `explain(args, got, expected)` (a str, or None: nothing to add) naming what the
    learner's value is: the rule that case falls under, or the common mistake it matches (e.g. "the
    number of elements, not of bytes"). `cases` holds argument tuples (or single arguments)."""
    cases = [c if isinstance(c, tuple) else (c,) for c in cases]
    if family is not None and more:        # the same random cases for the check and for the explanation
        cases += family_draws(family, draws)
        note = note or f"{len(cases) - draws} shown cases and {draws} random ones" \
            + (f" of {family_text}" if family_text else "") + " agree"
    try:
        check_function(name, fn, cases, rule=rule, hint=hint, reference=reference, note=note, more=more,
                       sampled=family is not None and bool(more),
                       shown=len(cases) - draws if family is not None and more else None)
    except NotYet as e:
        if explain is None or unanswered(fn) or not callable(fn):
            raise
        for args in cases:
            try:
                got = fn(*args)
            except Exception:
                raise e from None       # check_function has reported the exception
            if unanswered(got):
                raise
            expected = reference(*args)
            if not _equal(got, expected):
                why = explain(args, got, expected)
                if not why:
                    raise
                lines = str(e).split("\n")
                at = next((i + 1 for i, line in enumerate(lines) if line.startswith("  rule:")), len(lines))
                lines.insert(at, f"  your value: {why}")
                raise NotYet("\n".join(lines)) from None
        raise


def check_result(name: str, result, *, note: str = "") -> None:
    """Pass, or raise `NotYet` with the report of a stage's `CheckResult` (first differing byte or
    element, where it sits in the stage's words, expected vs got, the rule's hint)."""
    if result.ok:
        _ok(name, note or str(result))
        return
    raise NotYet(f"{name}: not yet.\n{result}")
