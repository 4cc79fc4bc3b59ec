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
call the learner's functions in the sandbox. So monkeypatched checks, input transformers, exception
hooks, objects whose __eq__ always says yes, stack walking, printed banners, stderr noise and edited
files change nothing: none of it reaches this process.

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
from dataclasses import dataclass, field, asdict
from pathlib import Path

from . import plain

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "bwlab"
STUDENT_ID = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
SANDBOX_UID = 65534
HIDDEN_MARKERS = ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
MAX_REPLY = 64 << 20             # bytes of one line from the sandbox


class GradingError(RuntimeError):
    """Grading could not start (no sandbox, a broken course); the message says what to do."""


class SandboxGone(RuntimeError):
    """The sandboxed process ended, or ran past its time, before it answered."""


@dataclass
class Limits:
    cell_timeout: float = 120.0      # s per code cell (a CellTimeout is raised in it; +10 s it is killed)
    call_timeout: float = 10.0       # s per call of a learner's function by a check
    total_timeout: float = 900.0     # s for the whole notebook, cells and checks together
    memory_bytes: int = 4 << 30      # address space per process (RLIMIT_AS)
    processes: int = 64              # processes of the sandbox user (RLIMIT_NPROC)
    cpu_s: int = 900                 # CPU seconds per process (RLIMIT_CPU)
    file_bytes: int = 256 << 20      # largest file it may write (RLIMIT_FSIZE), in its private /tmp
    restarts: int = 2                # times the sandbox is started again after a learner's call killed it


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


def sandbox_command(python: str, tmp: Path, limits: Limits, mode: str) -> list[str]:
    """The command that runs `python -m bwlab.tools.answer_runner` in the sandbox; `tmp` becomes its
    only writable place (/tmp inside)."""
    env = {"PYTHONPATH": str(ROOT), "HOME": "/tmp", "TMPDIR": "/tmp", "IPYTHONDIR": "/tmp/.ipython",
           "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/.mpl", "BWLAB_BACKEND": os.environ.get("BWLAB_BACKEND", "model"),
           "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    runner = [python, "-m", "bwlab.tools.answer_runner"]
    if mode == "none":
        return ["env", "-i", *(f"{k}={v}" for k, v in {**env, "HOME": str(tmp), "TMPDIR": str(tmp),
                                                          "IPYTHONDIR": str(tmp / ".ipython"),
                                                          "MPLCONFIGDIR": str(tmp / ".mpl")}.items()), *runner]
    cmd = ["bwrap", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session", "--clearenv", "--hostname", "sandbox"]
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
    cmd += ["--proc", "/proc", "--dev", "/dev", "--bind", str(tmp), "/tmp", "--chdir", "/tmp"]
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


class Sandbox:
    """One learner's notebook running in the sandbox; `get` and `call` ask it for answers."""

    def __init__(self, cells: list[str], limits: Limits, mode: str):
        self.limits, self.mode = limits, mode
        self.tmp = Path(tempfile.mkdtemp(prefix="bwlab-sandbox-"))
        os.chmod(self.tmp, 0o777)           # the sandbox user writes here; nothing else is in it
        self.deadline = time.monotonic() + limits.total_timeout
        self.proc = subprocess.Popen(sandbox_command(sys.executable, self.tmp, limits, mode),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     preexec_fn=_limit(limits), cwd=self.tmp)
        self.buf = b""
        self.proc.stdin.write((json.dumps({"cells": cells, "cell_timeout": limits.cell_timeout}) + "\n").encode())
        self.proc.stdin.flush()
        self.events: list[dict] = []

    def run(self) -> list[dict]:
        """Wait for every cell's report ({"index", "stdout", "stderr", "error"}); SandboxGone if the
        notebook ends or overruns first (what ran so far is in self.events)."""
        while True:
            msg = self._read(self.limits.cell_timeout + 10)
            if msg.get("event") == "ready":
                return self.events
            if msg.get("event") == "cell":
                self.events.append(msg)

    def get(self, name: str) -> dict:
        return self._ask({"op": "get", "name": name}, 10)

    def call(self, name: str, args: list) -> dict:
        return self._ask({"op": "call", "name": name, "args": args, "timeout": self.limits.call_timeout},
                         self.limits.call_timeout + 5)

    def _ask(self, req: dict, timeout: float) -> dict:
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise SandboxGone(self._why_gone()) from None
        return self._read(timeout)

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
        except ValueError:
            self.close()
            raise SandboxGone("its reply was not readable") from None
        if not isinstance(msg, dict):
            self.close()
            raise SandboxGone("its reply was not readable")
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

    def close(self) -> None:
        if self.proc.poll() is None:
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
        shutil.rmtree(self.tmp, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------
# the verdict, in the grader's process

class NotAnAnswer(Exception):
    """The learner's answer could not be read as plain data (its type, or the sandbox stopped)."""


class _LearnerFunction:
    """Stands for a function the learner defined: each call is made in the sandbox, on plain data."""

    def __init__(self, session: "Session", name: str):
        self.session, self.__name__ = session, name

    def __call__(self, *args):
        try:
            enc = [plain.encode(a) for a in args]
        except plain.NotPlain as e:
            raise GradingError(f"the check passes {self.__name__} an argument the sandbox cannot receive: {e}")
        reply = self.session.ask("call", self.__name__, enc)
        return _reply_value(reply, f"{self.__name__}(...)")

    def __repr__(self):
        return f"<your function {self.__name__}>"


def _reply_value(reply: dict, what: str):
    kind = reply.get("kind")
    if kind == "value":
        try:
            return plain.decode(reply.get("value"))
        except Exception as e:
            raise NotAnAnswer(f"{what}: the reply could not be read ({e})") from None
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


class _Names(dict):
    """The names a graded cell reads: its own (the imports it makes) first, then the learner's answers,
    fetched from the sandbox on first use. Python's builtins are never fetched."""

    def __init__(self, session: "Session"):
        super().__init__()
        self.session = session

    def __missing__(self, name):
        if hasattr(builtins, name):
            raise KeyError(name)
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

    def __init__(self, cells: list[str], limits: Limits, mode: str):
        self.cells, self.limits, self.mode = cells, limits, mode
        self.restarts = 0
        self.box = Sandbox(cells, limits, mode)
        try:
            self.events = self.box.run()
        except SandboxGone as e:
            e.events = self.box.events
            raise

    def ask(self, op: str, name: str, args=None) -> dict:
        if self.box is None:
            if self.restarts >= self.limits.restarts:
                raise NotAnAnswer("not evaluated: the sandbox was stopped too often by earlier answers")
            self.restarts += 1
            self.box = Sandbox(self.cells, self.limits, self.mode)
            self.box.run()
        try:
            return self.box.get(name) if op == "get" else self.box.call(name, args)
        except SandboxGone as e:
            self.box = None
            raise NotAnAnswer(f"while evaluating `{name}` the sandbox stopped: {e}") from None

    def close(self):
        if self.box is not None:
            self.box.close()


def verdict(code: str, session: Session) -> tuple[bool, str]:
    """Execute one graded cell's code (the instructor's, hidden tests included) here, its learner names
    bound to the answers in `session`; (passed, what it printed or why it failed)."""
    names = _Names(session)
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            exec(compile(code, "<graded cell>", "exec"), {"__builtins__": builtins, "__name__": "__graded__"}, names)
    except NameError as e:       # an answer the notebook does not define at all
        return False, f"{out.getvalue()}NotYet: {e}: your notebook does not define it (renamed or deleted?)"
    except GradingError:
        raise
    except Exception as e:
        return False, f"{out.getvalue()}{type(e).__name__}: {e}"
    return True, out.getvalue().strip()


# ---------------------------------------------------------------------------------------------------
# one submission

def _nbgrader(cell) -> dict:
    meta = cell.get("metadata") if isinstance(cell, dict) else None
    nbg = meta.get("nbgrader") if isinstance(meta, dict) else None
    return nbg if isinstance(nbg, dict) else {}


def _source(cell) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


@dataclass
class GradedCell:
    grade_id: str
    points: float
    code: str              # the instructor's graded cell, hidden tests included
    imports: str           # its import statements (what the learner's run gets in its place)


def graded_cells(source_nb: Path) -> list[GradedCell]:
    nb = json.loads(Path(source_nb).read_text())
    out = []
    for c in nb["cells"]:
        m = _nbgrader(c)
        if m.get("grade") and c.get("cell_type") == "code":
            code = "\n".join(l for l in _source(c).splitlines() if l.strip() not in HIDDEN_MARKERS)
            out.append(GradedCell(m["grade_id"], float(m.get("points", 0)), code, _imports(code)))
    return out


def _imports(code: str) -> str:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return ""
    return "\n".join(ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))


def read_submission(path: Path) -> dict:
    """The submission as notebook JSON; ValueError saying why it is not one."""
    raw = Path(path).read_bytes()
    if len(raw) > 50 << 20:
        raise ValueError(f"the file is {len(raw) >> 20} MiB; a notebook here is well under 50 MiB")
    try:
        nb = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"the file is not a readable notebook (truncated or not JSON: {e})") from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("the file is JSON but not a notebook (no list of cells)")
    if not all(isinstance(c, dict) for c in nb["cells"]):
        raise ValueError("the notebook's cells are not readable")
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
            cells.append({"type": "graded", "grade_id": gid, "source": _visible(by_id[gid].code),
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


def _visible(code: str) -> str:
    return code.split(HIDDEN_MARKERS[0])[0].rstrip() if HIDDEN_MARKERS[0] in code else code


def grade_one(submission: Path, source_nb: Path, release_nb: Path, limits: Limits, mode: str) -> dict:
    """Grade one submitted notebook; the result as a dict (see the module's docstring). Never raises
    for anything the submission does: that ends as status FAILED with a reason."""
    t0 = time.monotonic()
    graded = graded_cells(source_nb)
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
    result["cells"] = cells
    runs = [c["run"] for c in cells if c["run"] is not None]
    try:
        session = Session(runs, limits, mode)
    except SandboxGone as e:
        _attach(cells, getattr(e, "events", []))
        return _failed(result, f"the notebook did not run to its end: {e}", t0)
    try:
        _attach(cells, session.events)
        for g, ex in zip(graded, result["exercises"]):
            passed, message = verdict(g.code, session)
            ex.update(passed=passed, points=g.points if passed else 0.0, message=message[-6000:])
    finally:
        session.close()
    result["score"] = sum(ex["points"] for ex in result["exercises"])
    result["seconds"] = round(time.monotonic() - t0, 2)
    return result


def _attach(cells: list[dict], events: list[dict]) -> None:
    ran = [c for c in cells if c["run"] is not None]
    for ev in events:
        i = ev.get("index")
        if isinstance(i, int) and 0 <= i < len(ran):
            ran[i]["stdout"], ran[i]["stderr"] = str(ev.get("stdout", "")), str(ev.get("stderr", ""))
            err = ev.get("error")
            ran[i]["error"] = {"ename": str(err.get("ename", "")), "evalue": str(err.get("evalue", ""))} \
                if isinstance(err, dict) else None


def _failed(result: dict, reason: str, t0: float) -> dict:
    result.update(status="FAILED", reason=reason, score=0.0, seconds=round(time.monotonic() - t0, 2))
    for ex in result["exercises"]:
        ex["message"] = f"not graded: {reason}"
    return result
