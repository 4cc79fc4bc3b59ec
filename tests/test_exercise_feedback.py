"""How a NotYet shows in a notebook: a short message, no traceback; the first miss of a kind says what
is wrong and gives the hint, the second miss of the same kind adds the rule; an unanswered check says
what to do. (The message itself, str(e), keeps every part for plain Python and the grader.)"""
import re

import pytest

from bwlab import exercises as bx
from bwlab.exercises import NotYet, check_value

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture(autouse=True)
def fresh():
    bx._SHOWN.clear()
    yield
    bx._SHOWN.clear()


def shown(exc) -> str:
    return ANSI.sub("", "\n".join(exc._render_traceback_()))


def miss(got, **kw):
    with pytest.raises(NotYet) as e:
        check_value("bytes of the box", got, 2048, rule="elements times element size",
                    hint="what is one element's size?", mistakes={1024: "the number of elements, not of bytes"},
                    **kw)
    return e.value


def test_first_miss_what_and_hint_second_miss_the_rule():
    first = shown(miss(1024))
    assert first.startswith("Not yet: bytes of the box: you have 1024")
    assert "the number of elements, not of bytes" in first and "hint: what is one element's size?" in first
    assert "rule:" not in first and "second miss" in first
    second = shown(miss(1000))              # another kind of miss (no recognised mistake): first again
    assert "rule:" not in second
    third = shown(miss(1024))               # the same kind again: now the rule
    assert "rule: elements times element size" in third and "second miss" not in third
    assert "rule: elements times element size" in str(miss(1024))     # the full message, always


def test_unanswered_says_what_to_do_without_the_rule():
    e = miss(None)
    text = shown(e)
    assert "no answer yet" in text and "hint:" in text and "rule:" not in text
    assert "rule: elements times element size" in str(e)
    assert bx._SHOWN == {}                   # an unanswered check is not a miss


def test_never_the_prediction_itself():
    for got in (1024, 4096, 3):
        assert "2048" not in shown(miss(got)) + str(miss(got))


def test_ipython_shows_the_short_message():
    """IPython (what a notebook's kernel runs) formats a NotYet with _render_traceback_: no frames."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    seen = []
    shell._showtraceback = lambda etype, evalue, stb: seen.append(stb)
    shell.run_cell("from bwlab.exercises import check_value\n"
                   "check_value('bytes of the box', 1024, 2048, rule='r', hint='h')")
    (stb,) = seen
    text = ANSI.sub("", "\n".join(stb))
    assert text.startswith("Not yet: bytes of the box") and "Traceback" not in text and "File " not in text
    assert len(stb) <= 5
