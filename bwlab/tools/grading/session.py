"""The verdict, in the grader's process: a graded cell run with its names bound to the learner's answers."""
from __future__ import annotations

import builtins
import contextlib
import io
import re
import time
from pathlib import Path

from .. import plain
from .common import GradingError, Limits, SandboxGone
from .planning import Names
from .sandbox import Sandbox


# ---------------------------------------------------------------------------------------------------
# the verdict, in the grader's process

class NotAnAnswer(Exception):
    """The learner's answer could not be read as plain data (its type, or the sandbox stopped)."""


class _LearnerFunction:
    """Stands for a function the learner defined: each call is made in the sandbox, on plain data."""

    def __init__(self, session: "Session", name: str):
        self.session, self.__name__ = session, name

    def __call__(self, *args, **kwargs):
        try:
            enc = [plain.encode(a) for a in args]
            enc_kw = {str(k): plain.encode(v) for k, v in kwargs.items()}
        except plain.NotPlain as e:
            raise GradingError(f"the check passes {self.__name__} an argument the sandbox cannot receive: {e}")
        reply = self.session.ask("call", self.__name__, (enc, enc_kw))
        return _reply_value(reply, f"{self.__name__}(...)")

    def __repr__(self):
        return f"<your function {self.__name__}>"


def _reply_value(reply: dict, what: str):
    kind = reply.get("kind")
    if kind == "value":
        try:
            value = plain.decode(reply.get("value"))
        except Exception as e:
            raise NotAnAnswer(f"{what}: the reply could not be read ({e})") from None
        bad = _unsafe_text(value)
        if bad is not None:
            raise NotAnAnswer(f"{what}: the text {bad[:80]!r} has a line break, '#' or '\\'; a text answer here "
                              "is one line without them (some are compiled into a kernel by the grader)")
        return value
    if kind == "raised":
        ename = str(reply.get("ename", "Exception"))
        ename = ename if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,60}", ename) else "Exception"
        msg = str(reply.get("evalue", ""))[:2000]
        if ename == "NotImplementedError":
            raise NotImplementedError(msg)
        raise type(ename, (Exception,), {})(msg)
    if kind == "notplain":
        raise NotAnAnswer(f"{what}: {str(reply.get('why', ''))[:500]}")
    if kind == "missing":
        raise NotAnAnswer(f"{what} is not defined after your notebook ran")
    raise NotAnAnswer(f"{what}: no readable reply")


def _unsafe_text(value, depth: int = 0):
    """The first str in `value` that could smuggle a preprocessor line (#include of a course file) into
    a kernel that a check compiles in this process, or None."""
    if isinstance(value, str):
        return value if any(ch in value for ch in "\n\r#\\") else None
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, (list, tuple, set)) and depth < 40:
        for v in value:
            bad = _unsafe_text(v, depth + 1)
            if bad is not None:
                return bad
    return None


class _Names(dict):
    """The names a graded cell reads: its own (the imports it makes), then the instructor's (imports and
    literal constants of the notebook's other cells, run here), then the learner's answers (the names
    the answer cells define), fetched from the sandbox on first use. Python's builtins are never
    fetched; any other name is the course's mistake, reported as such."""

    def __init__(self, session: "Session", course: "Names"):
        super().__init__()
        self.session, self.course = session, course

    def __missing__(self, name):
        if hasattr(builtins, name):
            raise KeyError(name)
        if name in self.course.prelude:
            return self.course.prelude[name]
        if name not in self.course.answers:
            raise GradingError(f"a graded cell reads {name!r}, which no answer cell defines and no import or "
                               "literal of the notebook's other cells gives: it cannot be scored safely")
        reply = self.session.ask("get", name)
        if reply.get("kind") == "function":
            value = _LearnerFunction(self.session, name)
        else:
            value = _reply_value(reply, f"`{name}`")
        self[name] = value
        return value


class Session:
    """The sandbox of one submission, started again (at most limits.restarts times) when a learner's
    function ended it."""

    def __init__(self, cells: list[str], limits: Limits, mode: str, notebook: Path | None = None,
                 token: str | None = None):
        self.cells, self.limits, self.mode, self.notebook, self.token = cells, limits, mode, notebook, token
        self.restarts = 0
        self.spent, self.calls = 0.0, 0      # seconds and calls of the learner's functions, this exercise
        self.box = Sandbox(cells, limits, mode, notebook=notebook, token=token)
        self.boxes = [self.box]
        self.deadline = self.box.deadline          # restarts share it: one notebook, one time limit
        try:
            self.events = self.box.run()
        except SandboxGone as e:
            e.events = self.box.events
            raise

    incomplete = ""      # why some answer could not be asked for at all (then the result is FAILED)

    def _not_evaluated(self, why: str):
        self.incomplete = self.incomplete or why
        return NotAnAnswer(f"not evaluated: {why}")

    def exercise(self) -> None:
        """A new graded cell begins: its learner calls get limits.exercise_budget seconds in all."""
        self.spent, self.calls = 0.0, 0

    jailed = False       # True in a jailed check (a fork): the sandbox is not started again there
    on_ask = None        # in a jailed check: told "asking" before each question and "idle" after its reply

    def prepare(self) -> None:
        """Before a graded cell: start the sandbox again if an earlier answer stopped it (at most
        limits.restarts times, within the notebook's time); NotAnAnswer (not evaluated) if it cannot be."""
        if self.box is not None:
            return
        if self.restarts >= self.limits.restarts:
            raise self._not_evaluated("the sandbox was stopped too often by earlier answers")
        self.restarts += 1
        if time.monotonic() >= self.deadline:
            raise self._not_evaluated("the notebook's time limit ran out")
        self.box = Sandbox(self.cells, self.limits, self.mode, self.deadline, self.notebook, self.token)
        self.boxes.append(self.box)
        try:
            self.box.run()
        except SandboxGone as e:
            self.box.close()
            self.box = None
            raise self._not_evaluated(f"the sandbox, started again, stopped: {e}") from None

    def ask(self, op: str, name: str, args=None) -> dict:
        if op == "call" and self.spent > self.limits.exercise_budget:
            raise NotAnAnswer(f"your functions took {self.spent:.0f} s over {self.calls} calls for this exercise, "
                              f"more than the {self.limits.exercise_budget:g} s one exercise may take; the "
                              "checks' cases are small: each call should take well under a second")
        if self.box is None:
            if self.jailed:
                raise NotAnAnswer(f"`{name}` was not evaluated: the sandbox had stopped earlier in this exercise")
            self.prepare()
        t0 = time.monotonic()
        if self.on_ask:
            self.on_ask("asking")
        try:
            reply = self.box.get(name) if op == "get" else self.box.call(name, args)
        except SandboxGone as e:
            self.box.close()
            self.box = None
            raise NotAnAnswer(f"while evaluating `{name}` the sandbox stopped: {e}") from None
        finally:
            if op == "call":
                self.spent += time.monotonic() - t0
                self.calls += 1
        if self.on_ask:
            self.on_ask("idle")
        return reply

    @property
    def cpu_s(self) -> float:
        """CPU seconds used in this session's sandboxes (restarts included), read as each was stopped."""
        return sum(b.cpu_s for b in self.boxes)

    def close(self):
        if self.box is not None:
            self.box.close()


def verdict(code: str, session: Session, course: "Names") -> dict:
    """Execute one graded cell's code (the instructor's, hidden tests included) here, its learner names
    bound to the answers in `session`: {passed, message (what it printed, then the error), ename, evalue}."""
    names = _Names(session, course)
    session.exercise()
    out = io.StringIO()
    ename = evalue = ""
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(compile(code, "<graded cell>", "exec"), {"__builtins__": builtins, "__name__": "__graded__"}, names)
    except NameError as e:       # an answer the notebook does not define at all
        ename, evalue = "NotYet", f"{e}: your notebook does not define it (renamed or deleted?)"
    except GradingError:
        raise
    except Exception as e:
        ename, evalue = type(e).__name__, str(e)
    printed = out.getvalue().strip()
    message = "\n".join(x for x in (printed, f"{ename}: {evalue}" if ename else "") if x)
    return {"passed": not ename, "message": message[-6000:], "ename": ename, "evalue": evalue[-4000:]}


