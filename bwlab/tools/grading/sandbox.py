"""The sandbox: the command that runs a learner's notebook under bubblewrap, and the conversation with it."""
from __future__ import annotations

import contextlib
import json
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ... import variants
from . import isolation
from .common import (GradingError, Limits, MAX_OUTPUT, MAX_REPLY, MAX_TOTAL, PACKAGE, ROOT, RUN_ENV,
    SANDBOX_UID, SandboxGone)

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
                    notebook: Path | None = None, token: str | None = None, uid: int = SANDBOX_UID,
                    seccomp_fd: int | None = None) -> list[str]:
    """The command that runs `python -m bwlab.tools.answer_runner` in the sandbox: its only writable
    place is a private tmpfs /tmp of limits.tmp_bytes (`tmp`, a folder here, only with mode 'none');
    `notebook`, the submission's copy, is there read-only under its own name; `token`, the student's
    (bwlab.variants), in BWLAB_TOKEN; `uid`, the user id the learner's code runs as (a UidSlot's: no
    other running sandbox has it); `seccomp_fd`, a file descriptor holding isolation.seccomp_program's
    filter, which bubblewrap installs before it starts the runner."""
    env = {"PYTHONPATH": str(ROOT), "HOME": "/tmp", "TMPDIR": "/tmp", "IPYTHONDIR": "/tmp/.ipython",
           "MPLBACKEND": "Agg", "MPLCONFIGDIR": "/tmp/.mpl", "BWLAB_BACKEND": os.environ.get("BWLAB_BACKEND", "model"),
           "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
           "USER": "sandbox", "LOGNAME": "sandbox"}
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
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
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
    drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
            "--inh-caps=-all", "--bounding-set=-all"]
    return cmd + drop + runner


def _limit(limits: Limits, cgroup: "isolation.Cgroup | None" = None):
    def apply():
        os.setsid()
        if cgroup is not None:
            cgroup.join()
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
        self.limits, self.mode, self.owner = limits, mode, os.getpid()
        # bwrap: a private tmpfs; nothing on this machine to leave behind if the grader is killed
        self.tmp = Path(tempfile.mkdtemp(prefix="bwlab-sandbox-")) if mode == "none" else None
        self.deadline = deadline or time.monotonic() + limits.total_timeout
        self.slot = self.cgroup = None
        seccomp_r = None
        try:
            cg = isolation.detect()
            if cg.kind != "none":
                try:
                    self.cgroup = isolation.Cgroup(cg, limits.memory_bytes, limits.processes, limits.cpus)
                except OSError:         # this one could not be made: the limits without a cgroup apply
                    cg = isolation.CgroupMode("none", why="the sandbox's cgroup could not be made")
            uid = SANDBOX_UID
            if mode == "bwrap":
                self.slot = isolation.UidSlot()
                uid = self.slot.uid
                seccomp_r, w = os.pipe()
                os.write(w, isolation.seccomp_program(isolation.denied_calls(cg)))
                os.close(w)
            self.proc = subprocess.Popen(
                sandbox_command(sys.executable, self.tmp, limits, mode, notebook, token, uid, seccomp_r),
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                preexec_fn=_limit(limits, self.cgroup), cwd=self.tmp or "/",
                pass_fds=() if seccomp_r is None else (seccomp_r,))
        except BaseException:
            self._release()
            raise
        finally:
            if seccomp_r is not None:
                os.close(seccomp_r)
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
        if os.getpid() != self.owner:
            self.close()
            return "its process ended"
        try:
            rc = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            rc = None
        self.close()
        err = (self.stderr_tail or "").strip().splitlines()
        detail = f": {err[-1][:300]}" if err else ""
        if self.oom:
            detail += (f" (the sandbox reached its memory limit, {self.limits.memory_bytes >> 20} MiB for all its "
                       "processes, shared memory and files in /tmp included)")
        if rc is not None and rc < 0:
            return f"its process was ended by signal {-rc} ({signal.Signals(-rc).name}){detail}"
        return f"its process ended (exit status {rc}){detail}"

    stderr_tail = ""

    cpu_s = 0.0          # CPU seconds of the processes inside the sandbox, read as it is stopped
    oom = False          # its cgroup's memory limit was reached

    dead = False         # closed (in a jailed check: given up; the grader's process stops it)

    def close(self) -> None:
        self.dead = True
        if os.getpid() != self.owner:       # a jailed check: it has no right to the sandbox's processes
            return
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
        if self.tmp is not None and os.getpid() == self.owner:
            shutil.rmtree(self.tmp, ignore_errors=True)
        self._release()

    owner = os.getpid()

    def _release(self) -> None:
        """Its cgroup emptied and removed, its user id freed: by the process that made the sandbox only
        (a jailed check, a fork, may stop the sandbox but leaves these to the grader)."""
        if os.getpid() != self.owner:
            return
        if self.cgroup is not None:
            self.oom = self.oom or self.cgroup.out_of_memory()
            self.cgroup.destroy()
            self.cgroup = None
        if self.slot is not None:
            self.slot.release()
            self.slot = None


