"""Grading a class: each submission run in its own sandbox, its answers scored outside it.

The learner's notebook runs in a sandbox (`sandbox_command`): bubblewrap gives it a private mount,
PID, network, IPC and UTS namespace, where the process runs as uid 65534 with no capabilities,
sees the system's /usr, this Python, the virtual environment and bwlab's package read-only, a
private writable /tmp, and nothing of the course folder (no source/, no gradebook, no release/, no
other submission) nor of the network; memory, processes and CPU time are capped by rlimits and wall
clock from outside, and the whole process tree dies with the sandbox (its PID namespace ends with
it; --die-with-parent when the grader itself dies).

Inside, bwlab.tools.answer_runner executes the learner's code cells (each graded cell reduced to its
imports) and then answers questions: "what is `my_tx_bytes`?", "call `my_smem_offset(3, 5, 2, 0)`".
Every reply is plain data (bwlab.tools.plain). The verdict is computed here, in the grader's process:
each graded cell of the instructor's notebook (source/, hidden tests included) is executed with its
learner-facing names (`my_tx_bytes`, `tiles`, ...) bound to the decoded answers and to proxies that
call the learner's functions in the sandbox. The hidden tests' cases come from the course data
(course_data/, bwlab.exercises.hidden_cases), which the sandbox does not see. Each student's numbers
(bwlab.variants) come from a token computed here from the student id and the course secret: the
sandbox gets it in BWLAB_TOKEN, the checks here under variants.using(token). So monkeypatched checks,
input transformers, exception hooks, objects whose __eq__ always says yes, stack walking, printed
banners, stderr noise and edited files change nothing: none of it reaches this process.

A batch (`grade_all`) survives any submission: one that cannot be read, run or scored is recorded as
FAILED with the reason and graded again on the next run; a result is written (atomically) only when
its grading finished; feedback pages are rebuilt where missing; `jobs` submissions are graded at a
time. results/<student>/<assignment>.json holds everything; grades.csv and exercise_stats.csv are
made from those.
"""
from __future__ import annotations

import ast
import builtins
import contextlib
import csv
import hashlib
import html
import io
import json
import os
import re
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from . import plain
from .. import exercises as _exercises
from .. import variants

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bwlab"
STUDENT_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,63}")   # no leading '-' or '@': safe in shells and CSVs
SANDBOX_UID = 65534
RUN_ENV = "BWLAB_GRADING_RUN"
HIDDEN_MARKERS = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
MAX_REPLY = 32 << 20             # bytes of one line from the sandbox
MAX_OUTPUT = 20_000              # characters of a cell's stdout/stderr kept here (the sandbox's own caps are
MAX_TOTAL = 400_000              # ... and of the whole notebook's: the sandbox's word is not trusted for them)
MAX_NOTEBOOK = 50 << 20          # bytes of a submitted notebook
MAX_CELLS = 2000                 # cells of a submitted notebook


class GradingError(RuntimeError):
    """Grading could not start (no sandbox, a broken course); the message says what to do."""


class SandboxGone(RuntimeError):
    """The sandboxed process ended, or ran past its time, before it answered."""


@dataclass
class Limits:
    cell_timeout: float = 120.0      # s per code cell (then a CellTimeout is raised in it)
    grace: float = 10.0              # s more before a cell that ignores its CellTimeout ends the sandbox
    call_timeout: float = 10.0       # s per call of a learner's function by a check
    total_timeout: float = 900.0     # s for the whole notebook, cells and checks together
    memory_bytes: int = 4 << 30      # address space per process (RLIMIT_AS)
    processes: int = 64              # processes of the sandbox user (RLIMIT_NPROC)
    cpu_s: int = 900                 # CPU seconds per process (RLIMIT_CPU)
    file_bytes: int = 256 << 20      # largest file it may write (RLIMIT_FSIZE)
    tmp_bytes: int = 512 << 20       # size of its private /tmp (a tmpfs: all it may write)
    restarts: int = 2                # times the sandbox is started again after a learner's call killed it
    exercise_calls_s: float | None = None   # s of the learner's calls for one exercise (None: 6 x call_timeout)
    run_every_cell: bool = False     # False: the student version's own cells that nothing needs are not run

    @property
    def exercise_budget(self) -> float:
        return self.exercise_calls_s if self.exercise_calls_s is not None else 6 * self.call_timeout


# ---------------------------------------------------------------------------------------------------
# the sandbox

BWRAP_MISSING = (
    "bubblewrap (bwrap) is not installed, and submissions are never run without a sandbox. Install it "
    "(Debian/Ubuntu: apt-get install -y bubblewrap; `make grade` does that when run as root), or grade "
    "in a container as docs/teaching.md ('Grading in a container') describes and pass --sandbox none "
    "there.")


def sandbox_mode(requested: str = "bwrap") -> str:
    if requested == "none":
        return "none"
    if requested != "bwrap":
        raise GradingError(f"unknown sandbox {requested!r} (bwrap or none)")
    if not shutil.which("bwrap"):
        raise GradingError(BWRAP_MISSING)
    if not shutil.which("setpriv"):
        raise GradingError("setpriv (util-linux) is missing: the sandbox needs it to drop to uid 65534")
    if os.geteuid() != 0:
        raise GradingError("the bwrap sandbox is set up as root (it mounts the read-only views and then "
                           "drops to uid 65534 for the learner's code): run the grader as root, e.g. in "
                           "the grading container of docs/teaching.md")
    return "bwrap"


def _readonly_paths() -> list[Path]:
    """What the sandbox may read besides /usr: this Python's prefix, the venv, bwlab's package and its
    CUDA sources (and docs/results, the recordings some cells show)."""
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.exec_prefix).resolve(),
             Path(sys.executable).resolve().parent.parent, PACKAGE, ROOT / "cuda_src", ROOT / "docs" / "results"}
    return sorted(p for p in paths if p.exists() and str(p) not in ("/", "/usr"))


def sandbox_command(python: str, tmp: Path | None, limits: Limits, mode: str,
                    notebook: Path | None = None, token: str | None = None) -> list[str]:
    """The command that runs `python -m bwlab.tools.answer_runner` in the sandbox: its only writable
    place is a private tmpfs /tmp of limits.tmp_bytes (`tmp`, a folder here, only with mode 'none');
    `notebook`, the submission's copy, is there read-only under its own name; `token`, the student's
    (bwlab.variants), in BWLAB_TOKEN."""
    env = {"PYTHONPATH": str(ROOT), "HOME": "/tmp", "TMPDIR": "/tmp", "IPYTHONDIR": "/tmp/.ipython",
           "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/.mpl", "BWLAB_BACKEND": os.environ.get("BWLAB_BACKEND", "model"),
           "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    if token is not None:
        env[variants.TOKEN_ENV] = token
    # Which grading run this sandbox belongs to (the grader's BWLAB_GRADING_RUN, else its process id): the
    # processes of one run can be found, and counted, among other graders' on the same machine.
    env[RUN_ENV] = os.environ.get(RUN_ENV) or f"grader-{os.getpid()}"
    runner = [python, "-m", "bwlab.tools.answer_runner"]
    if mode == "none":
        return ["env", "-i", *(f"{k}={v}" for k, v in {**env, "HOME": str(tmp), "TMPDIR": str(tmp),
                                                          "IPYTHONDIR": str(tmp / ".ipython"),
                                                          "MPLCONFIGDIR": str(tmp / ".mpl")}.items()), *runner]
    cmd = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session", "--clearenv", "--hostname", "sandbox"]
    # the private /tmp first: a checkout (or its venv) that lives under /tmp is bound on top of it below
    cmd += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp"]
    dirs = set()
    for p in _readonly_paths():
        for parent in reversed(p.parents):
            if str(parent) != "/" and parent not in dirs and not str(parent).startswith("/usr"):
                dirs.add(parent)
                cmd += ["--perms", "0755", "--dir", str(parent)]
    cmd += ["--ro-bind", "/usr", "/usr"]
    for link in ("bin", "lib", "lib64", "sbin"):
        target = Path("/") / link
        if target.is_symlink():
            cmd += ["--symlink", os.readlink(target), str(target)]
        elif target.exists():
            cmd += ["--ro-bind", str(target), str(target)]
    for f in ("/etc/ld.so.cache", "/etc/localtime", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group"):
        if Path(f).exists():
            cmd += ["--ro-bind", f, f]
    for p in _readonly_paths():
        cmd += ["--ro-bind", str(p), str(p)]
    cmd += ["--chdir", "/tmp"]
    if notebook is not None:
        cmd += ["--ro-bind", str(notebook), f"/tmp/{Path(notebook).name}"]
    for k, v in env.items():
        cmd += ["--setenv", k, v]
    drop = ["setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all"]
    return cmd + drop + runner


def _limit(limits: Limits):
    def apply():
        os.setsid()
        for what, n in ((resource.RLIMIT_AS, limits.memory_bytes), (resource.RLIMIT_NPROC, limits.processes),
                        (resource.RLIMIT_CPU, limits.cpu_s), (resource.RLIMIT_FSIZE, limits.file_bytes),
                        (resource.RLIMIT_CORE, 0)):
            resource.setrlimit(what, (n, n))
    return apply


def _tree_cpu(pid: int) -> float:
    """CPU seconds (user + system, with those of children they waited for) of `pid`'s descendants, from
    /proc: what the processes in a sandbox used, for the timing figures (bubblewrap's own process,
    `pid`, is counted by the grader's wait)."""
    tick, total, todo, seen = os.sysconf("SC_CLK_TCK"), 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        with contextlib.suppress(OSError, ValueError, IndexError):
            if p != pid:
                fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
                total += sum(int(x) for x in fields[11:15])          # utime stime cutime cstime
            for task in Path(f"/proc/{p}/task").iterdir():
                with contextlib.suppress(OSError, ValueError):
                    todo += [int(c) for c in (task / "children").read_text().split()]
    return total / tick


_NOT_ITS_OWN = ("a line on its reply channel {} (not the runner's report: the notebook's code wrote to the "
                "grader's channel)")


class Sandbox:
    """One learner's notebook running in the sandbox; `get` and `call` ask it for answers."""

    def __init__(self, cells: list[str], limits: Limits, mode: str, deadline: float | None = None,
                 notebook: Path | None = None, token: str | None = None):
        self.limits, self.mode = limits, mode
        # bwrap: a private tmpfs; nothing on this machine to leave behind if the grader is killed
        self.tmp = Path(tempfile.mkdtemp(prefix="bwlab-sandbox-")) if mode == "none" else None
        self.deadline = deadline or time.monotonic() + limits.total_timeout
        self.proc = subprocess.Popen(sandbox_command(sys.executable, self.tmp, limits, mode, notebook, token),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     preexec_fn=_limit(limits), cwd=self.tmp or "/")
        self.buf = b""
        self.events: list[dict] = []
        self.ncells = len(cells)
        self.kept = 0                   # characters of output kept so far (MAX_TOTAL)
        self.asked = 0                  # requests sent; each carries an id its reply must repeat
        self.salt = os.urandom(6).hex()
        self.job = (json.dumps({"cells": cells, "cell_timeout": limits.cell_timeout}) + "\n").encode()

    def run(self) -> list[dict]:
        """Wait for every cell's report ({"index", "stdout", "stderr", "error"}); SandboxGone if the
        notebook ends or overruns first (what ran so far is in self.events)."""
        try:
            self.proc.stdin.write(self.job)
            self.proc.stdin.flush()
        except OSError:                 # it ended before reading its job: bwrap could not start it
            raise SandboxGone(self._why_gone()) from None
        # The cells report in order, then "ready": anything else (a line the learner's code wrote onto
        # the reply channel) is not the runner's, and the notebook's run is not believed.
        while True:
            msg = self._read(self.limits.cell_timeout + self.limits.grace)
            if msg.get("event") == "ready" and len(self.events) == self.ncells:
                return self.events
            if msg.get("event") == "cell" and msg.get("index") == len(self.events) \
                    and type(msg.get("index")) is int and len(self.events) < self.ncells:
                self.events.append(self._capped(msg))
                continue
            self.close()
            raise SandboxGone(_NOT_ITS_OWN.format("was not the report of its next cell"))

    def _capped(self, msg: dict) -> dict:
        """A cell's report with its texts cut to MAX_OUTPUT each and MAX_TOTAL for the notebook."""
        out = dict(msg)
        for k in ("stdout", "stderr"):
            t = str(out.get(k, ""))
            if len(t) > MAX_OUTPUT:
                t = t[:MAX_OUTPUT] + f"\n[... {len(t) - MAX_OUTPUT} more characters]"
            if self.kept + len(t) > MAX_TOTAL:
                t = t[: max(0, MAX_TOTAL - self.kept)] + f"\n[output beyond the notebook's {MAX_TOTAL} characters left out]"
            self.kept += len(t)
            out[k] = t
        err = out.get("error")
        out["error"] = {"ename": str(err.get("ename", ""))[:200], "evalue": str(err.get("evalue", ""))[:MAX_OUTPUT]} \
            if isinstance(err, dict) else None
        return out

    def get(self, name: str) -> dict:
        return self._ask({"op": "get", "name": name}, 10)

    def call(self, name: str, args: tuple[list, dict]) -> dict:
        return self._ask({"op": "call", "name": name, "args": args[0], "kwargs": args[1],
                          "timeout": self.limits.call_timeout}, self.limits.call_timeout + self.limits.grace)

    def _ask(self, req: dict, timeout: float) -> dict:
        self.asked += 1
        rid = f"{self.salt}-{self.asked}"      # a reply written before the question cannot carry it
        try:
            self.proc.stdin.write((json.dumps({**req, "id": rid}) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise SandboxGone(self._why_gone()) from None
        reply = self._read(timeout)
        if reply.get("id") != rid:
            self.close()
            raise SandboxGone(_NOT_ITS_OWN.format("did not answer the grader's question"))
        return reply

    def _read(self, timeout: float) -> dict:
        end = min(time.monotonic() + timeout, self.deadline)
        fd = self.proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self.buf:
                left = end - time.monotonic()
                if left <= 0:
                    whole = end >= self.deadline
                    self.close()
                    raise SandboxGone(f"it ran past the {'notebook' if whole else 'per-step'} time limit "
                                      f"({self.limits.total_timeout if whole else timeout:g} s) and was stopped")
                if not sel.select(left):
                    continue
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    raise SandboxGone(self._why_gone())
                self.buf += chunk
                if len(self.buf) > MAX_REPLY:
                    self.close()
                    raise SandboxGone("it sent more than the grader reads")
        line, self.buf = self.buf.split(b"\n", 1)
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            self.close()
            raise SandboxGone(_NOT_ITS_OWN.format("was not readable")) from None
        if not isinstance(msg, dict):
            self.close()
            raise SandboxGone(_NOT_ITS_OWN.format("was not readable"))
        return msg

    def _why_gone(self) -> str:
        try:
            rc = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            rc = None
        self.close()
        err = (self.stderr_tail or "").strip().splitlines()
        detail = f": {err[-1][:300]}" if err else ""
        if rc is not None and rc < 0:
            return f"its process was ended by signal {-rc} ({signal.Signals(-rc).name}){detail}"
        return f"its process ended (exit status {rc}){detail}"

    stderr_tail = ""

    cpu_s = 0.0          # CPU seconds of the processes inside the sandbox, read as it is stopped

    def close(self) -> None:
        if self.proc.poll() is None:
            self.cpu_s = max(self.cpu_s, _tree_cpu(self.proc.pid))
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                self.proc.kill()
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        with contextlib.suppress(Exception):
            self.stderr_tail = self.proc.stderr.read(20000).decode(errors="replace") if self.proc.stderr else ""
        for f in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(Exception):
                f.close()
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)


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

    def ask(self, op: str, name: str, args=None) -> dict:
        if op == "call" and self.spent > self.limits.exercise_budget:
            raise NotAnAnswer(f"your functions took {self.spent:.0f} s over {self.calls} calls for this exercise, "
                              f"more than the {self.limits.exercise_budget:g} s one exercise may take; the "
                              "checks' cases are small: each call should take well under a second")
        if self.box is None:
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
                self.box = None
                raise self._not_evaluated(f"the sandbox, started again, stopped: {e}") from None
        t0 = time.monotonic()
        try:
            return self.box.get(name) if op == "get" else self.box.call(name, args)
        except SandboxGone as e:
            self.box = None
            raise NotAnAnswer(f"while evaluating `{name}` the sandbox stopped: {e}") from None
        finally:
            if op == "call":
                self.spent += time.monotonic() - t0
                self.calls += 1

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


# ---------------------------------------------------------------------------------------------------
# one submission

def _nbgrader(cell) -> dict:
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(map(str, src)) if isinstance(src, list) else str(src)


@dataclass
class GradedCell:
    grade_id: str
    points: float
    code: str              # the instructor's graded cell, hidden tests included
    imports: str           # the visible part's import statements (what the learner's run gets in its place)
    visible: str = ""      # the part before the hidden tests (what the feedback page shows)


def graded_cells(source_nb: Path) -> list[GradedCell]:
    nb = json.loads(Path(source_nb).read_text())
    out = []
    for c in nb["cells"]:
        m = _nbgrader(c)
        if m.get("grade") and c.get("cell_type") == "code":
            code = "\n".join(l for l in _source(c).splitlines() if l.strip() not in HIDDEN_MARKERS)
            # the sandbox runs the visible part's imports only: the hidden part's names (the course data's
            # loader) mean nothing there
            visible = _visible(_source(c))
            out.append(GradedCell(m["grade_id"], float(m.get("points", 0)), code, _imports(visible), visible))
    return out


@dataclass
class Names:
    answers: set          # names that the notebook's answer cells define: the only ones read from the sandbox
    prelude: dict         # imports and literal constants of its other cells, made here


def course_names(source_nb: Path) -> Names:
    nb = json.loads(Path(source_nb).read_text())
    answers, prelude_code = set(), []
    for c in nb["cells"]:
        if c.get("cell_type") != "code":
            continue
        m = _nbgrader(c)
        try:
            tree = ast.parse(_source(c))
        except SyntaxError:
            continue
        if m.get("solution"):
            answers |= _defined(tree.body)
        elif not m.get("grade"):
            for node in tree.body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    prelude_code.append(ast.unparse(node))
                elif (isinstance(node, ast.Assign) and _literal(node.value)
                      and all(isinstance(n, (ast.Name, ast.Tuple)) for n in node.targets)):
                    prelude_code.append(ast.unparse(node))
    prelude: dict = {}
    for stmt in prelude_code:           # one that fails here (an import of a GPU-only module) is left out
        try:
            exec(compile(stmt, "<instructor's cells>", "exec"), prelude)
        except Exception:
            continue
    prelude.pop("__builtins__", None)
    return Names(answers, {k: v for k, v in prelude.items() if k not in answers})


def _literal(node) -> bool:
    try:
        ast.literal_eval(node)
        return True
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def _defined(body) -> set:
    out = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
        else:
            out |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return out


def _imports(code: str) -> str:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return ""
    return "\n".join(ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))


def read_submission(path: Path) -> dict:
    """The submission as notebook JSON; ValueError saying why it is not one."""
    if Path(path).stat().st_size > MAX_NOTEBOOK:
        raise ValueError(f"the file is {Path(path).stat().st_size >> 20} MiB; a notebook here is under "
                         f"{MAX_NOTEBOOK >> 20} MiB")
    raw = Path(path).read_bytes()
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"the file is not a readable notebook (truncated or not JSON: {e})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("the file is JSON but not a notebook (no list of cells)")
    if not all(isinstance(c, dict) for c in nb["cells"]):
        raise ValueError("the notebook's cells are not readable")
    if len(nb["cells"]) > MAX_CELLS:
        raise ValueError(f"the notebook has {len(nb['cells'])} cells; the student version has under 200, "
                         f"and more than {MAX_CELLS} are not graded")
    return nb


def plan(nb: dict, graded: list[GradedCell], solution_ids: list[str]) -> tuple[list[dict], list[str]]:
    """The cells the sandbox runs (the learner's code cells in their order, each graded cell reduced
    to its imports; the learner's text of a graded cell is not run) and notes on what is odd."""
    by_id = {g.grade_id: g for g in graded}
    cells, notes, seen = [], [], {}
    for c in nb["cells"]:
        gid = _nbgrader(c).get("grade_id")
        if isinstance(gid, str):
            seen[gid] = seen.get(gid, 0) + 1
        if c.get("cell_type") != "code":
            cells.append({"type": "markdown", "source": _source(c), "run": None})
            continue
        if isinstance(gid, str) and gid in by_id:
            cells.append({"type": "graded", "grade_id": gid, "source": by_id[gid].visible,
                          "run": by_id[gid].imports})
        else:
            cells.append({"type": "code", "source": _source(c), "run": _source(c)})
    for sid in solution_ids:
        if sid not in seen:
            notes.append(f"the answer cell {sid!r} is not in the notebook (renamed or deleted?); its answer "
                         "is whatever the rest of the notebook defines")
    for gid, n in seen.items():
        if n > 1:
            notes.append(f"the cell id {gid!r} appears {n} times; every copy ran, the graded cell was scored once")
    return cells, notes


# ---------------------------------------------------------------------------------------------------
# which cells need not run: the student version's own demonstration cells whose results nothing reads

_PURE_BUILTINS = frozenset({"print", "len", "range", "sorted", "zip", "enumerate", "list", "dict", "tuple", "set",
                            "frozenset", "str", "int", "float", "bool", "round", "min", "max", "sum", "abs", "any",
                            "all", "isinstance", "repr", "format", "map", "filter", "reversed", "hex", "bin",
                            "divmod", "type", "chr", "ord"})


_SETTER = re.compile(r"seed|^set|^use|config|enable|disable|force|register|patch|update|reset|^add|^append|"
                     r"^extend|^insert|^pop|^remove|^clear|^sort$|^write|^save|^load|^close|^open")


def _parse(code: str):
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _targets(t) -> set:
    if isinstance(t, ast.Name):
        return {t.id}
    if isinstance(t, (ast.Tuple, ast.List)):
        return set().union(*(_targets(e) for e in t.elts))
    if isinstance(t, ast.Starred):
        return _targets(t.value)
    return set()


def _loads(node) -> set:
    """The names `node` reads, less those its own inner scopes bind where they read them (comprehension
    variables, lambda and function parameters)."""
    if isinstance(node, ast.Name):
        return set() if isinstance(node.ctx, ast.Store) else {node.id}
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        out, local = set(), set()
        for g in node.generators:
            out |= _loads(g.iter) - local
            local |= _targets(g.target)
            for cond in g.ifs:
                out |= _loads(cond) - local
        for e in ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]):
            out |= _loads(e) - local
        return out
    if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        params = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)} | {p.arg for p in (a.vararg, a.kwarg) if p}
        out = set().union(*(_loads(d) for d in (*a.defaults, *(d for d in a.kw_defaults if d is not None))))
        if not isinstance(node, ast.Lambda):
            out = out.union(*(_loads(d) for d in node.decorator_list))
        body = node.body if isinstance(node.body, list) else [node.body]
        return out | (set().union(*(_loads(st) for st in body)) - params)
    return set().union(*(_loads(c) for c in ast.iter_child_nodes(node)))


def _reads_first(body, bound=frozenset()) -> tuple[set, set]:
    """(the names a statement list may read before it binds them, the names it surely binds)."""
    bound, reads = set(bound), set()
    for st in body:
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in st.names}
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            reads |= _loads(st) - bound          # what its body reads counts as read here
            bound.add(st.name)
        elif isinstance(st, ast.Assign):
            reads |= _loads(st.value) - bound
            for t in st.targets:
                reads |= _loads(t) - bound       # a.x = ..., d[k] = ... read a, d and k
                bound |= _targets(t)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            reads |= (_loads(st.iter) | _loads(st.target)) - bound
            reads |= _reads_first(st.body, bound | _targets(st.target))[0] | _reads_first(st.orelse, bound)[0]
        elif isinstance(st, ast.If):
            reads |= _loads(st.test) - bound
            (r1, b1), (r2, b2) = _reads_first(st.body, bound), _reads_first(st.orelse, bound)
            reads |= r1 | r2
            bound = b1 & b2
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for it in st.items:
                reads |= _loads(it.context_expr) - bound
                if it.optional_vars is not None:
                    bound |= _targets(it.optional_vars)
            r, bound = _reads_first(st.body, bound)
            reads |= r
        else:                                    # anything else (while, try, del, expressions): all it names
            reads |= _loads(st) - bound
    return reads, bound


def _self_contained(tree, imported: set) -> bool:
    """True when a cell changes nothing but the names it binds: no global, del or augmented assignment,
    no attribute or item stored into an object it did not make, and every call is of a name it made,
    of an imported name (a module, a function of the package) or of a builtin that changes nothing, and
    no call of something else's method that looks like a setting (seed, set_..., update, append...)."""
    own = _defined(tree.body)
    for n in ast.walk(tree):
        if isinstance(n, (ast.Global, ast.Nonlocal, ast.Delete, ast.AugAssign)):
            return False
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.ctx, (ast.Store, ast.Del)):
            root = n
            while isinstance(root, (ast.Attribute, ast.Subscript)):
                root = root.value
            if not (isinstance(root, ast.Name) and root.id in own):
                return False
        if isinstance(n, ast.Call):
            root = n.func
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if not isinstance(root, ast.Name):
                return False
            if root.id not in own and root.id not in imported and root.id not in _PURE_BUILTINS:
                return False
            called = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            if root.id not in own and _SETTER.search(called):
                return False            # np.random.seed(...), plt.rcParams.update(...), a module's set_...
    return True


def skippable(cells: list[dict], release_code: set[str], answers: set[str]) -> set[int]:
    """Indices (into `cells`, plan's list) of the learner's code cells that need not run: each is one of
    the student version's own code cells, unchanged (not an answer cell, not graded), changes nothing
    but the names it binds (_self_contained), and no cell that does run after it reads any of those
    names before binding it again, nor is any an answer. They are the notebook's demonstrations
    (an emulated GEMM, a plot): their output is the same for every student, and no answer depends on
    them. A cell that cannot be parsed (a magic) counts as reading every name."""
    code = [(i, c) for i, c in enumerate(cells) if c["run"] is not None]
    trees = [_parse(c["run"]) for _, c in code]
    imported = set()
    for t in trees:
        for n in (ast.walk(t) if t is not None else ()):
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                imported |= {(a.asname or a.name).split(".")[0] for a in n.names}
    skip: set[int] = set()
    for k in reversed(range(len(code))):
        i, c = code[k]
        t = trees[k]
        if c["type"] != "code" or c["run"] not in release_code or t is None or not _self_contained(t, imported):
            continue
        live = _defined(t.body)
        if live & answers:
            continue
        needed = False
        for j in range(k + 1, len(code)):
            if code[j][0] in skip:
                continue
            if trees[j] is None:
                needed = True
                break
            reads, binds = _reads_first(trees[j].body)
            if reads & live:
                needed = True
                break
            live -= binds
            if not live:
                break
        if not needed:
            skip.add(i)
    return skip


def _visible(code: str) -> str:
    return code.split(HIDDEN_MARKERS[0])[0].rstrip() if HIDDEN_MARKERS[0] in code else code


def grade_one(submission: Path, source_nb: Path, release_nb: Path, limits: Limits, mode: str,
              token: str | None = None) -> dict:
    """Grade one submitted notebook; the result as a dict (see the module's docstring). `token` is the
    student's (bwlab.variants.token_for: their numbers, in the sandbox and in the checks here; None:
    the self-study numbers). Never raises for anything the submission does: that ends as status FAILED
    with a reason."""
    t0, cpu0 = time.monotonic(), time.process_time()
    graded, names = graded_cells(source_nb), course_names(source_nb)
    release = json.loads(Path(release_nb).read_text())
    solution_ids = [_nbgrader(c)["grade_id"] for c in release["cells"] if _nbgrader(c).get("solution")]
    result = {"status": "graded", "reason": "", "notes": [], "cells": [],
              "max_score": sum(g.points for g in graded),
              "exercises": [{"grade_id": g.grade_id, "points": 0.0, "max_points": g.points, "passed": False,
                             "message": "not graded"} for g in graded]}
    try:
        nb = read_submission(submission)
    except (OSError, ValueError) as e:
        return _failed(result, str(e), t0)
    cells, result["notes"] = plan(nb, graded, solution_ids)
    if not limits.run_every_cell:
        release_code = {_source(c) for c in release["cells"] if c.get("cell_type") == "code"
                        and not _nbgrader(c).get("solution") and not _nbgrader(c).get("grade")}
        try:
            skip = skippable(cells, release_code, names.answers)
        except (RecursionError, MemoryError):     # a learner's cell nested past what is analysed: run all
            skip = set()
        for i in skip:
            cells[i].update(run=None, skipped=True)
    result["cells"] = cells
    runs = [c["run"] for c in cells if c["run"] is not None]
    try:
        session = Session(runs, limits, mode, Path(submission) if mode == "bwrap" else None, token)
    except SandboxGone as e:
        _attach(cells, getattr(e, "events", []))
        return _failed(result, f"the notebook did not run to its end: {e}", t0)
    try:
        _attach(cells, session.events)
        with variants.using(token):
            for g, ex in zip(graded, result["exercises"]):
                v = verdict(g.code, session, names)
                ex.update(v, points=g.points if v["passed"] else 0.0)
    finally:
        session.close()
    if session.incomplete:          # some answers were never asked for: a partial run is not a grade
        return _failed(result, f"not every exercise could be evaluated ({session.incomplete})", t0, keep=True)
    result["score"] = sum(ex["points"] for ex in result["exercises"])
    result["seconds"] = round(time.monotonic() - t0, 2)
    # CPU seconds: the grader's process for this submission, and the processes in its sandboxes
    result["cpu_s"] = {"grader": round(time.process_time() - cpu0, 2), "sandbox": round(session.cpu_s, 2)}
    return result


def _attach(cells: list[dict], events: list[dict]) -> None:
    ran = [c for c in cells if c["run"] is not None]
    for ev in events:
        i = ev.get("index")
        if isinstance(i, int) and 0 <= i < len(ran):
            ran[i]["stdout"], ran[i]["stderr"] = str(ev.get("stdout", "")), str(ev.get("stderr", ""))
            ran[i]["seconds"] = ev.get("seconds") if type(ev.get("seconds")) in (int, float) else None
            err = ev.get("error")
            ran[i]["error"] = {"ename": str(err.get("ename", "")), "evalue": str(err.get("evalue", ""))} \
                if isinstance(err, dict) else None


def _failed(result: dict, reason: str, t0: float, keep: bool = False) -> dict:
    """`result` as FAILED; `keep` leaves each exercise's message (what was found before it stopped)."""
    result.update(status="FAILED", reason=reason, score=0.0, seconds=round(time.monotonic() - t0, 2))
    for ex in result["exercises"]:
        if not keep:
            ex["message"] = f"not graded: {reason}"
        ex["points"] = 0.0
    return result


# ---------------------------------------------------------------------------------------------------
# a class: collect, grade in parallel, results, feedback, CSV

def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def grader_version(source_nb: Path, data: Path | None = None, secret: bytes = b"") -> str:
    """Changes when the notebook's graded cells, any code that scores them, the course data's hidden
    cases or the course secret change (then every submission of it is graded again)."""
    h = hashlib.sha256(Path(source_nb).read_bytes())
    files = [*PACKAGE.glob("*/exercises.py"), PACKAGE / "exercises.py", PACKAGE / "variants.py", Path(__file__),
             PACKAGE / "flow" / "kernel_edit.py",
             Path(plain.__file__), PACKAGE / "tools" / "answer_runner.py"]
    if data is not None:
        files += sorted(Path(data).glob("*.py"))
    for f in sorted(files):
        h.update(f.read_bytes())
    h.update(hashlib.sha256(secret).digest())
    return h.hexdigest()[:16]


def assignments(course: Path) -> list[str]:
    return sorted(p.name for p in (Path(course) / "source").glob("*") if (p / f"{p.name}.ipynb").is_file())


def load_id_map(path: Path) -> dict[str, str]:
    """An id map: a CSV with the columns `folder` (a learning platform's folder name, a prefix of it up
    to an '_', or one of its '_'-separated parts such as the platform's number) and `student` (the id
    used here)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    if not rows or not {"folder", "student"} <= set(rows[0]):
        raise GradingError(f"{path}: an id map is a CSV with the columns folder,student")
    out = {}
    for n, r in enumerate(rows, 2):
        key, sid = (r.get("folder") or "").strip(), (r.get("student") or "").strip()
        if not key or not STUDENT_ID.fullmatch(sid):
            raise GradingError(f"{path}, line {n}: folder {key!r} -> student {sid!r}: the student id must be "
                               "letters, digits, '_', '.', '@', '-'")
        out[key] = sid
    return out


def student_of(folder: str, id_map: dict[str, str] | None) -> tuple[str | None, str]:
    """(student id, '') for a submission folder's name, or (None, why not)."""
    if id_map:
        parts = folder.split("_")
        hits = {sid for key, sid in id_map.items()
                if folder == key or folder.startswith(key + "_") or key in parts}
        if len(hits) == 1:
            return hits.pop(), ""
        if len(hits) > 1:
            return None, f"the id map gives it more than one student ({', '.join(sorted(hits))})"
    if STUDENT_ID.fullmatch(folder):
        return folder, ""
    return None, ("it is not a student id (letters, digits, '_', '.', '@', '-'); map it with an id map "
                  "(--id-map FILE.csv, columns folder,student)")


@dataclass
class Problem:
    who: str            # student id or folder name
    what: str           # assignment or file
    reason: str

    def __str__(self):
        return printable(f"{self.who} / {self.what}: {self.reason}")


def printable(text: str) -> str:
    """`text` for a terminal or a log: control characters, bidirectional overrides, other invisible format
    characters and lone surrogates (a folder or file name is the learner's) written as escapes, so
    that a name cannot add lines to the report, move the cursor or reorder what is shown."""
    import unicodedata
    out = []
    for ch in str(text):
        out.append(ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch)[0] == "C" else ch)
    return "".join(out)


def collect(course: Path, folder: Path, id_map: dict[str, str] | None = None) -> tuple[list[Path], list[Problem]]:
    """Copy FOLDER/<student>/**/*.ipynb to submitted/<student>/<assignment>/<assignment>.ipynb (the
    assignment is the one whose name begins the file's name). A folder that maps to no student, a file
    that maps to no notebook, and two files that map to one student's notebook, from one folder or two
    (none is taken: say which to keep), are problems, reported; the rest is copied."""
    course, folder = Path(course), Path(folder)
    known = assignments(course)
    if not known:
        raise GradingError(f"{course / 'source'} holds no notebooks: run `make student` first")
    if not folder.is_dir():
        raise GradingError(f"{folder} is not a folder of submissions (<student>/<notebook>.ipynb)")
    copied, problems = [], []
    files: dict[tuple[str, str], list[Path]] = {}      # (student, assignment) -> files, from every folder
    for d in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "__MACOSX"))):
        sid, why = student_of(d.name, id_map)
        if sid is None:
            problems.append(Problem(d.name, "(folder)", f"not graded: {why}"))
            continue
        for nb in sorted(d.rglob("*.ipynb")):
            rel = nb.relative_to(d)
            if any(part.startswith(".") or part == "__MACOSX" for part in rel.parts):
                continue
            if any((d / Path(*rel.parts[:i + 1])).is_symlink() for i in range(len(rel.parts))):
                problems.append(Problem(sid, str(rel), "ignored: a symbolic link, not a file the student handed in"))
                continue
            if not nb.is_file():
                problems.append(Problem(sid, str(rel), "ignored: not a regular file"))
                continue
            if nb.stat().st_size > MAX_NOTEBOOK:
                problems.append(Problem(sid, str(rel), f"ignored: {nb.stat().st_size >> 20} MiB; a notebook "
                                                       f"here is under {MAX_NOTEBOOK >> 20} MiB"))
                continue
            hits = [a for a in known if nb.name.startswith(a)]
            if not hits:
                problems.append(Problem(sid, str(rel), f"ignored: its name begins with no notebook's name "
                                                       f"({', '.join(known)})"))
                continue
            files.setdefault((sid, max(hits, key=len)), []).append(nb)
    for (sid, a), found in sorted(files.items()):
        dest = course / "submitted" / sid / a / f"{a}.ipynb"
        if len(found) > 1:
            tops = {p.relative_to(folder).parts[0] for p in found}
            base = folder / tops.pop() if len(tops) == 1 else folder      # one folder: name the files in it
            names = ", ".join(str(p.relative_to(base)) for p in found)
            reason = f"{len(found)} files map to this notebook ({names}); none was graded: keep one"
            problems.append(Problem(sid, a, reason))
            shutil.rmtree(dest.parent, ignore_errors=True)
            write_result(course, sid, a, {"status": "FAILED", "reason": reason, "score": 0.0,
                                          "max_score": None, "exercises": [], "cells": [], "notes": [],
                                          "sha256": "refused"})
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not (dest.exists() and dest.read_bytes() == found[0].read_bytes()):
            shutil.copyfile(found[0], dest)
        copied.append(dest)
    return copied, problems


def _result_path(course: Path, student: str, assignment: str) -> Path:
    return Path(course) / "results" / student / f"{assignment}.json"


def feedback_path(course: Path, student: str, assignment: str) -> Path:
    return Path(course) / "feedback" / student / assignment / f"{assignment}.html"


def write_result(course: Path, student: str, assignment: str, result: dict) -> Path:
    """Atomically (a reader sees the old result or the new one, never half of one)."""
    result = {**result, "student": student, "assignment": assignment}
    path = _result_path(course, student, assignment)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1))
    os.replace(tmp, path)
    write_feedback(course, result)
    return path


def read_results(course: Path) -> list[dict]:
    out = []
    for p in sorted((Path(course) / "results").glob("*/*.json")):
        try:
            out.append(json.loads(p.read_text()))
        except ValueError:
            continue
    return out


def _die_with_grader(grader_pid: int) -> None:
    """A pool worker's initializer: end with the grader (Linux PR_SET_PDEATHSIG), so that a grader
    killed mid-batch leaves no worker grading on; each worker's sandbox then ends with it
    (--die-with-parent)."""
    import ctypes
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)     # PR_SET_PDEATHSIG
    if os.getppid() != grader_pid:
        os._exit(1)


def compile_package() -> None:
    """Byte-compile bwlab's package here, once per batch: the sandbox may not write its __pycache__
    (read-only, PYTHONDONTWRITEBYTECODE), so without this every sandbox compiles each bwlab module it
    imports from source again. The files are the grader's own, made from the package's sources; Python
    checks each against its source's time stamp and size, and compiles a stale one in memory."""
    import compileall
    with contextlib.suppress(Exception):
        compileall.compile_dir(str(PACKAGE), quiet=2)


def preflight(limits: Limits, mode: str) -> None:
    """Run an empty notebook in the sandbox: GradingError with the sandbox's own words when it cannot
    start here (rather than every submission FAILED for the same reason)."""
    try:
        Session(["import bwlab"], limits, mode).close()
    except SandboxGone as e:
        raise GradingError(f"the sandbox does not start on this machine: {e}. See docs/teaching.md, "
                           "'The sandbox'.") from None


def _job(args):
    submission, source, release, limits, mode, token = args
    return grade_one(Path(submission), Path(source), Path(release), limits, mode, token)


def course_data() -> Path:
    """The course data's folder (the hidden cases: bwlab.exercises.hidden_cases); GradingError where
    there is none, since hidden tests cannot be scored without it."""
    folder = _exercises.course_data_dir()
    if folder is None or not (folder / "hidden.py").is_file():
        raise GradingError("no course data (the hidden cases, course_data/hidden.py of the repository): grade "
                           f"from a checkout of bwlab, or set {_exercises.COURSE_DATA_ENV} to your copy of that "
                           "folder (docs/teaching.md, 'The course data')")
    return folder


@dataclass
class Batch:
    graded: list = field(default_factory=list)       # (student, assignment, result)
    skipped: list = field(default_factory=list)      # (student, assignment): graded before, unchanged
    problems: list = field(default_factory=list)     # Problem
    seconds: float = 0.0
    own_numbers: bool = False                        # each student graded on their own numbers (a course secret)

    @property
    def failed(self):
        return [(s, a, r) for s, a, r in self.graded if r["status"] != "graded"]


def grade_all(course: Path, jobs: int = 1, limits: Limits | None = None, sandbox: str = "bwrap",
              force: bool = False, assignment_ids=None, student_id: str | None = None,
              progress=None) -> Batch:
    """Grade every submission in submitted/ that has no finished result for its current file and the
    current checks (every one, with `force`), `jobs` at a time; write results, feedback, CSVs."""
    course, limits = Path(course).resolve(), limits or Limits()
    mode = sandbox_mode(sandbox)
    data = course_data()
    secret = None                   # no course secret: every student has the self-study numbers
    if variants.secret_file(course).exists():
        try:
            secret = variants.read_secret(course)
        except variants.TokenError as e:
            raise GradingError(f"{e}: every student's numbers come from it (docs/teaching.md, 'Every student "
                               "their own numbers')") from None
    t0, batch = time.monotonic(), Batch(own_numbers=secret is not None)
    known = assignments(course)
    versions = {a: grader_version(course / "source" / a / f"{a}.ipynb", data, secret or b"") for a in known}
    todo = []
    for sub in sorted((course / "submitted").glob("*/*/*.ipynb")):
        a, sid = sub.parent.name, sub.parent.parent.name
        if (assignment_ids and a not in assignment_ids) or (student_id and sid != student_id):
            continue
        if sub.name != f"{a}.ipynb":
            continue
        if a not in known:
            batch.problems.append(Problem(sid, a, "no such notebook in source/: not graded"))
            continue
        if not STUDENT_ID.fullmatch(sid):
            batch.problems.append(Problem(sid, a, "the folder in submitted/ is not a student id: not graded"))
            continue
        if any(p.is_symlink() for p in (sub, sub.parent, sub.parent.parent)) or not sub.is_file():
            batch.problems.append(Problem(sid, a, "submitted/ holds a link or a special file here: not graded"))
            continue
        sha = _sha(sub)
        old = _read(_result_path(course, sid, a))
        if (not force and old and old.get("status") == "graded" and old.get("sha256") == sha
                and old.get("grader") == versions[a]):
            batch.skipped.append((sid, a))
            if not feedback_path(course, sid, a).exists():
                write_feedback(course, old)
            continue
        todo.append((sid, a, sha, (str(sub), str(course / "source" / a / f"{a}.ipynb"),
                                   str(course / "release" / a / f"{a}.ipynb"), limits, mode,
                                   variants.token_for(secret, sid) if secret else None)))

    missing = sorted({a for _, a, _, _ in todo if not (course / "release" / a / f"{a}.ipynb").exists()})
    if missing:
        raise GradingError(f"no student version of {', '.join(missing)} in {course / 'release'}: run "
                           "`make student` (python -m bwlab.tools.classroom student) first")
    if todo:
        compile_package()
        preflight(limits, mode)

    def done(sid, a, sha, result):
        result.update(sha256=sha, grader=versions[a], graded_at=time.strftime("%Y-%m-%dT%H:%M:%S"))
        try:
            write_result(course, sid, a, result)
        except (OSError, ValueError, TypeError) as e:     # the batch goes on; this one is FAILED
            result = {"status": "FAILED", "reason": f"its result could not be written ({type(e).__name__}: {e})",
                      "score": 0.0, "max_score": None, "exercises": [], "cells": [], "notes": []}
            write_result(course, sid, a, result)
        batch.graded.append((sid, a, result))
        if progress:
            progress(sid, a, result)

    if jobs <= 1 or len(todo) <= 1:
        for sid, a, sha, args in todo:
            done(sid, a, sha, _guarded(_job, args))
    else:
        import multiprocessing
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_die_with_grader, initargs=(os.getpid(),)) as pool:
            futs = {pool.submit(_job, args): (sid, a, sha, args) for sid, a, sha, args in todo}
            for fut in as_completed(futs):
                sid, a, sha, args = futs[fut]
                try:
                    result = fut.result()
                except Exception as e:           # the worker died: grade it here, alone
                    result = _guarded(_job, args, f"{type(e).__name__}: {e}")
                done(sid, a, sha, result)
    write_csv(course)
    batch.seconds = time.monotonic() - t0
    return batch


def _guarded(fn, args, earlier: str = ""):
    try:
        return fn(args)
    except GradingError:
        raise
    except Exception as e:
        why = f"the grader failed on it ({type(e).__name__}: {e})" + (f"; before that: {earlier}" if earlier else "")
        return {"status": "FAILED", "reason": why, "score": 0.0, "max_score": None, "exercises": [],
                "cells": [], "notes": []}


def _read(path: Path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def write_csv(course: Path) -> tuple[Path, Path]:
    """grades.csv: one row per student; per notebook its score (or FAILED) and one column per exercise
    (notebook:grade_id); the total. exercise_stats.csv: per exercise how many were graded, the mean,
    how many got full points, none, or were not graded (FAILED)."""
    course = Path(course)
    results = read_results(course)
    exercises = {}
    for a in assignments(course):
        exercises[a] = [(g.grade_id, g.points) for g in graded_cells(course / "source" / a / f"{a}.ipynb")]
    by = {(r["student"], r["assignment"]): r for r in results}
    students = sorted({r["student"] for r in results})
    header = ["student", "total", "max", "failed"]
    for a, exs in exercises.items():
        header += [a] + [f"{a}:{gid}" for gid, _ in exs]
    grades = Path(course) / "grades.csv"
    with open(grades, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for s in students:
            row, total, failed = [], 0.0, []
            for a, exs in exercises.items():
                r = by.get((s, a))
                if r is None:
                    row += [""] * (1 + len(exs))
                    continue
                if r["status"] != "graded":
                    failed.append(a)
                    row += ["FAILED"] + [""] * len(exs)
                    continue
                pts = {e["grade_id"]: e["points"] for e in r["exercises"]}
                total += r["score"]
                row += [f"{r['score']:g}"] + [f"{pts[g]:g}" if g in pts else "" for g, _ in exs]
            w.writerow([s, f"{total:g}", f"{sum(p for exs in exercises.values() for _, p in exs):g}",
                        " ".join(failed)] + row)
    stats = Path(course) / "exercise_stats.csv"
    with open(stats, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["notebook", "exercise", "points", "graded", "mean", "full_points", "no_points", "failed"])
        for a, exs in exercises.items():
            mine = [r for (s, aa), r in by.items() if aa == a]
            ok = [r for r in mine if r["status"] == "graded"]
            for gid, p in exs:
                got = [e["points"] for r in ok for e in r["exercises"] if e["grade_id"] == gid]
                mean = f"{sum(got) / len(got):.2f}" if got else ""
                w.writerow([a, gid, f"{p:g}", len(got), mean, sum(g == p for g in got), sum(g == 0 for g in got),
                            len(mine) - len(ok)])
    return grades, stats


# ---------------------------------------------------------------------------------------------------
# feedback: one HTML page per submission; everything the learner wrote or printed is escaped

_CSS = """body{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;white-space:pre-wrap}
.pass{color:#1a7f37}.fail{color:#b42318}.learner{border-left:4px solid #ccc;padding-left:.6em;margin:1em 0}
.graded{border-left:4px solid #1f6feb;padding-left:.6em;margin:1em 0}.failed{background:#fde8e8;padding:1em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em}"""


def feedback_html(result: dict) -> str:
    e = html.escape
    s, a = result.get("student", ""), result.get("assignment", "")
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{e(a)} — {e(s)}</title>",
           f"<style>{_CSS}</style></head><body>", f"<h1>{e(a)}: feedback for {e(s)}</h1>"]
    if result.get("status") != "graded":
        out.append(f"<div class='failed'><b>Not graded (FAILED).</b> {e(str(result.get('reason', '')))}<br>"
                   "Your instructor sees this too; nothing was scored, it is not a zero.</div>")
    else:
        out.append(f"<h2>Score: {result['score']:g} / {result['max_score']:g}</h2>")
    for n in result.get("notes", []):
        out.append(f"<p>Note: {e(n)}</p>")
    if result.get("exercises"):
        out.append("<table><tr><th>graded cell</th><th>points</th></tr>")
        for x in result["exercises"]:
            verdict_class = "pass" if x["passed"] else "fail"
            out.append(f"<tr><td><a href='#{e(x['grade_id'])}'>{e(x['grade_id'])}</a></td>"
                       f"<td class='{verdict_class}'>{x['points']:g} / {x['max_points']:g}</td></tr>")
        out.append("</table>")
    verdicts = {x["grade_id"]: x for x in result.get("exercises", [])}
    for c in result.get("cells", []):
        if c["type"] == "markdown":
            out.append(f"<pre>{e(c['source'])}</pre>")
            continue
        if c["type"] == "graded":
            x = verdicts.get(c["grade_id"], {})
            out.append(f"<div class='graded' id='{e(c['grade_id'])}'><b>Graded cell {e(c['grade_id'])} "
                       f"(score: {x.get('points', 0):g} / {x.get('max_points', 0):g})</b>"
                       f"<pre>{e(c['source'])}</pre><pre class='{'pass' if x.get('passed') else 'fail'}'>"
                       f"{e(x.get('message', ''))}</pre></div>")
            continue
        out.append(f"<div class='learner'><pre>{e(c['source'])}</pre>")
        if c.get("skipped"):
            out.append("<p><i>Not run by the grader: the student version's own cell, unchanged, and nothing "
                       "after it reads what it makes (its output is the same for everyone).</i></p>")
        for stream in ("stdout", "stderr"):
            if c.get(stream):
                out.append(f"<pre>{e(c[stream])}</pre>")
        if c.get("error"):
            out.append(f"<pre class='fail'>{e(c['error']['ename'])}: {e(c['error']['evalue'])}</pre>")
        out.append("</div>")
    out.append("</body></html>")
    return "\n".join(out)


def write_feedback(course: Path, result: dict) -> Path:
    path = feedback_path(course, result["student"], result["assignment"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".html.tmp")
    tmp.write_bytes(feedback_html(result).encode("utf-8", "replace"))    # a learner's lone surrogates too
    os.replace(tmp, path)
    return path
