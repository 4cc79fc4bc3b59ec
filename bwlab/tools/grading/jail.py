"""A graded cell's own work, jailed: no learner's text is compiled or evaluated in the grader's process.

Some answers are text that a check compiles (NVRTC: a C expression put into a teaching kernel) or
evaluates (an integer expression in the model). Both can cost without bound: NVRTC's memory grows
quadratically with a long comma expression until LLVM aborts the process, and a Python integer
expression such as `0 * (1 << 5000000) * ...` takes minutes. So `jailed_verdict` runs each graded
cell (`session.verdict`) in a forked child of the grader's process:

* its own cgroup (memory limits.check_memory_bytes, where the host offers one; isolation), and
  RLIMIT_AS where none is (its current size plus that much), RLIMIT_CPU of limits.check_s, no core;
* a user id of its own (isolation.UidSlot), no groups, no new privileges, and the seccomp filter
  that denies the keyring calls and memfd_create: it can read the package, write nothing of the course;
* a wall-clock limit: the learner's calls' budget (limits.exercise_budget, with one call's time and
  grace) plus three times limits.check_s (a busy machine gives the child a fraction of a CPU).

It talks to the learner's sandbox through the grader's pipes and reports back on a pipe of its own
(JSON lines: "asking" before each question, "idle" with the conversation's state after each reply,
"done" with the verdict). When it ends without "done" (aborted, killed for memory, past its time),
that graded cell scores 0 with the reason, and the batch goes on; the sandbox is kept when the
child was between questions, else stopped (and started again for the next graded cell).
"""
from __future__ import annotations

import contextlib
import json
import os
import resource
import selectors
import signal
import sys
import time
from pathlib import Path

from . import isolation
from .common import GradingError, Limits, MAX_REPLY
from .session import Session, verdict

MAX_MESSAGE = 2 * MAX_REPLY + (1 << 20)      # bytes of one line from the child (the sandbox's unread bytes)


def _state(session: Session) -> dict:
    box = session.box
    alive = box is not None and not box.dead
    return {"alive": alive, "asked": box.asked if alive else 0, "buf": box.buf.decode("latin-1") if alive else "",
            "cpu_s": box.cpu_s if box is not None else 0.0, "spent": session.spent, "calls": session.calls,
            "incomplete": session.incomplete}


def _child(code: str, session: Session, course, limits: Limits, w: int, uid: int | None,
           cgroup: isolation.Cgroup | None, deny: tuple[str, ...]) -> None:
    """The jailed child's whole life; it never returns."""
    out = os.fdopen(w, "w", buffering=1)

    def send(obj) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()
    try:
        import ctypes
        with contextlib.suppress(Exception):
            ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)           # PR_SET_PDEATHSIG: die with the grader
        if cgroup is not None:
            cgroup.join()
        cpu = max(1, int(limits.check_s + 0.999))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
        if cgroup is None or "memory" not in cgroup.dirs:
            size = int(open("/proc/self/statm").read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            resource.setrlimit(resource.RLIMIT_AS, (size + limits.check_memory_bytes,) * 2)
        os.umask(0o022)          # what it adds to the batch's NVRTC cache, the next check (another uid) reads
        if uid is not None:
            _become(uid)
        elif os.geteuid() == 0:
            isolation.drop_capabilities()
        isolation.install_seccomp(isolation.seccomp_program(deny))
        session.jailed = True
        session.on_ask = lambda what: send({"event": what, **(_state(session) if what == "idle" else {})})
        v = verdict(code, session, course)
        send({"event": "done", "verdict": v, **_state(session)})
    except GradingError as e:
        with contextlib.suppress(Exception):
            send({"event": "grading_error", "message": str(e)})
    except BaseException as e:       # noqa: BLE001 - everything goes back as data
        with contextlib.suppress(Exception):
            send({"event": "crash", "message": f"{type(e).__name__}: {str(e)[:2000]}"})
    finally:
        os._exit(0)


def _become(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)


_OWN_UID: bool | None = None


def own_uid_works() -> bool:
    """Whether a jailed check can run as a user id of its own here: as root, where that user can read
    this Python, the packages and NVRTC (a child drops to such an id and compiles a small kernel). Where
    it cannot (an installation under a folder only root may enter), the jailed checks keep uid 0
    without any capability, under the same limits and seccomp filter."""
    global _OWN_UID
    if _OWN_UID is None:
        _OWN_UID = False
        if os.geteuid() == 0:
            slot = isolation.UidSlot()
            try:
                pid = os.fork()
                if pid == 0:
                    code = 1
                    try:
                        _become(slot.uid)
                        import sysconfig                     # not only imported modules: their folders
                        from ...compile import compile_text
                        for folder in {sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"],
                                       str(Path(__file__).resolve().parents[2]), sys.base_prefix, sys.prefix}:
                            for entry in os.scandir(folder):
                                if entry.name.endswith(".py") and entry.is_file():
                                    open(entry.path, "rb").close()
                                    break
                        compile_text('extern "C" __global__ void probe() {}', "probe.cu", use_cache=False)
                        code = 0
                    except BaseException:            # noqa: BLE001 - any failure means "no"
                        pass
                    os._exit(code)
                _, status = os.waitpid(pid, 0)
                _OWN_UID = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            finally:
                slot.release()
    return _OWN_UID


def _refused(reason: str) -> dict:
    msg = (f"the grader could not finish checking this answer: {reason}. Nothing else of your notebook is "
           "affected; this exercise scores 0")
    return {"passed": False, "message": f"CheckLimit: {msg}", "ename": "CheckLimit", "evalue": msg}


def jailed_verdict(code: str, session: Session, course, limits: Limits) -> dict:
    """`verdict(code, session, course)` in a jailed child (see the module's docstring): its result,
    or a failed verdict that says which limit the check reached. GradingError (the course's own
    mistake) is raised here as it would be unjailed."""
    try:
        session.prepare()
    except Exception as e:                      # NotAnAnswer: the sandbox could not be started again
        return {"passed": False, "message": f"{type(e).__name__}: {e}", "ename": type(e).__name__, "evalue": str(e)}
    session.exercise()
    mode = isolation.detect()
    slot = isolation.UidSlot() if own_uid_works() else None
    cgroup = None
    if mode.kind != "none":
        with contextlib.suppress(OSError):
            cgroup = isolation.Cgroup(mode, limits.check_memory_bytes, 64, 1.0, tag="check")
    deny = isolation.KEYRING_CALLS + isolation.MEMFD_CALLS
    r, w = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        for x in (cgroup, slot):
            if x is not None:
                (x.destroy if x is cgroup else x.release)()
        raise
    if pid == 0:
        os.close(r)
        _child(code, session, course, limits, w, slot.uid if slot else None, cgroup, deny)
    os.close(w)
    wall = 3 * limits.check_s + limits.exercise_budget + limits.call_timeout + limits.grace + 5   # a busy machine
    last, result, why, buf = None, None, "", b""
    end = time.monotonic() + wall
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(r, selectors.EVENT_READ)
            while result is None and not why:
                left = end - time.monotonic()
                if left <= 0:
                    why = (f"it ran past the {3 * limits.check_s:g} s a check may take (besides the "
                           f"{limits.exercise_budget:g} s of your functions' calls) and was stopped")
                    break
                if not sel.select(left):
                    continue
                chunk = os.read(r, 1 << 20)
                if not chunk:
                    break
                buf += chunk
                if len(buf) > MAX_MESSAGE:
                    why = "it sent more than the grader reads"
                    break
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    try:
                        msg = json.loads(line)
                    except ValueError:
                        msg = {"event": "crash", "message": "its report could not be read"}
                    if msg.get("event") == "grading_error":
                        raise GradingError(msg.get("message", ""))
                    if msg.get("event") == "done":
                        result = msg
                    elif msg.get("event") == "crash":
                        why = f"the check itself failed ({msg.get('message', '')})"
                    last = msg
    finally:
        os.close(r)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        oom = cgroup is not None and cgroup.out_of_memory()
        if cgroup is not None:
            cgroup.destroy()
        if slot is not None:
            slot.release()
    if result is None and not why:
        why = _how_it_ended(status, oom, limits)
    elif result is None and oom:
        why += f" (it reached the {limits.check_memory_bytes >> 20} MiB a check may use)"
    _adopt(session, result or last)
    if result is not None and result["verdict"].get("ename") == "MemoryError":     # RLIMIT_AS said no
        return _refused(f"compiling or evaluating it took more memory than the {limits.check_memory_bytes >> 20} "
                        "MiB a check may use (MemoryError)")
    return result["verdict"] if result is not None else _refused(why)


def _how_it_ended(status: int, oom: bool, limits: Limits) -> str:
    mem = f"more memory than the {limits.check_memory_bytes >> 20} MiB a check may use"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        if oom:
            return f"compiling or evaluating it took {mem} (ended by {name})"
        if sig == signal.SIGXCPU:
            return f"it used more than the {limits.check_s:g} s of CPU a check may take"
        if sig == signal.SIGABRT:
            return (f"the compiler or the model aborted ({name}); most often it ran out of memory: {mem}, "
                    "or your answer is far longer than the exercise needs")
        return f"the check's process was ended by {name}"
    return f"the check's process ended (exit status {os.WEXITSTATUS(status)}) without a verdict"


def _adopt(session: Session, state: dict | None) -> None:
    """The conversation's state as the child left it: kept where the child was between questions, the
    sandbox stopped where it was mid-question (its next reply would answer a question of the child's)."""
    box = session.box
    if box is None:
        return
    if state is None:                   # the child asked nothing: the sandbox is as it was
        return
    if state.get("event") == "asking" or not state.get("alive", False):
        box.close()
        session.box = None
    else:
        box.asked, box.buf = int(state["asked"]), str(state["buf"]).encode("latin-1")
    box.cpu_s = max(box.cpu_s, float(state.get("cpu_s") or 0.0))
    session.spent, session.calls = float(state.get("spent", 0.0)), int(state.get("calls", 0))
    session.incomplete = session.incomplete or str(state.get("incomplete") or "")
