"""The learner's side of grading: run one submitted notebook, then hand out its answers as plain data.

This runs inside the sandbox (bwlab.tools.grading builds it: an unprivileged user, read-only bwlab,
no course folder, no network, limits). It is untrusted by construction: the learner's code runs in
this very process and may change anything here. Nothing it says is believed beyond "this is the
learner's answer": the grader decodes every reply into objects of its own (bwlab.tools.plain) and
scores them with its own copy of the checks, so a learner who tampers with this process can only
misreport their own answers, which is no more than writing different answers.

Protocol, one JSON object per line. The grader writes to this process's stdin; replies go to a
private copy of the original stdout (fd 1 and 2 are pointed at a log file first, so that whatever
the learner's code or its subprocesses print cannot interleave with the replies):

    -> {"cells": [source, ...], "cell_timeout": s}        run these code cells, in order
    <- {"event": "cell", "index": i, "stdout": ..., "stderr": ..., "error": {"ename", "evalue"} | null,
        "seconds": ...}
    <- {"event": "ready"}
    -> {"op": "get", "name": NAME, "id": ID}
    <- {"kind": "value", "value": ENCODED, "id": ID} | {"kind": "function", "id": ID} | {"kind": "missing", ...}
       | {"kind": "notplain", "why": ..., "id": ID}
    -> {"op": "call", "name": NAME, "args": [ENCODED, ...], "kwargs": {NAME: ENCODED}, "timeout": s, "id": ID}
    <- {"kind": "value", "value": ENCODED, "id": ID} | {"kind": "raised", "ename": ..., "evalue": ..., "id": ID} | ...

Every reply repeats its request's ID (fresh for each request), and the cells report in order before
"ready": the grader believes no line that a learner's code wrote onto the reply channel in advance.

A cell or a call that runs past its time gets `CellTimeout` raised in it (a SIGALRM, repeated every
half second); one that ignores it is ended from outside, with the whole sandbox.
"""
from __future__ import annotations

import io
import json
import os
import signal
import sys
import time
import traceback

MAX_OUTPUT = 20_000        # characters of stdout/stderr kept per cell
MAX_TOTAL = 400_000        # ... and for the whole notebook (the results and the feedback page stay small)


class CellTimeout(BaseException):
    """The cell or call ran past the grader's time limit. A BaseException, like KeyboardInterrupt, so
    that `except Exception:` in the learner's code does not swallow it; raised again every half second
    until the cell ends."""


class _Capped(io.TextIOBase):
    def __init__(self):
        self.parts, self.n = [], 0

    def writable(self):
        return True

    def write(self, s):
        s = str(s)
        if self.n < MAX_OUTPUT:
            self.parts.append(s[: MAX_OUTPUT - self.n])
        self.n += len(s)
        return len(s)

    def text(self) -> str:
        out = "".join(self.parts)
        return out + (f"\n[... {self.n - MAX_OUTPUT} more characters]" if self.n > MAX_OUTPUT else "")


def _alarm(signum, frame):
    raise CellTimeout("the grader's time limit for this cell ran out")


def _timer(seconds: float) -> None:
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, max(0.001, float(seconds)), 0.5)


def main() -> int:
    from bwlab.tools import plain
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    requests = os.fdopen(os.dup(0), "r")
    log = os.open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "notebook-output.log"),
                  os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(log, 1)
    os.dup2(log, 2)

    def send(obj) -> None:
        replies.write(json.dumps(obj) + "\n")
        replies.flush()

    job = json.loads(requests.readline())
    # The hidden cases are the grader's: nothing in this process reads course data, wherever
    # BWLAB_COURSE_DATA may point once the learner's code has run.
    import bwlab.exercises
    bwlab.exercises._NO_COURSE_DATA = True
    os.environ.pop("BWLAB_COURSE_DATA", None)
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config
    cfg = Config()
    cfg.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=cfg)
    shell.showtraceback = _plain_traceback(shell)
    kept = 0
    for i, source in enumerate(job["cells"]):
        out, err = _Capped(), _Capped()
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = out, err
        error = None
        t0 = time.monotonic()
        try:
            _timer(job["cell_timeout"])
            res = shell.run_cell(source, store_history=True)
            signal.setitimer(signal.ITIMER_REAL, 0)
            exc = res.error_before_exec or res.error_in_exec
            if exc is not None:
                error = {"ename": type(exc).__name__, "evalue": str(exc)[:MAX_OUTPUT]}
        except BaseException as e:          # a timeout between IPython's own handlers, SystemExit...
            signal.setitimer(signal.ITIMER_REAL, 0)
            error = {"ename": type(e).__name__, "evalue": str(e)[:MAX_OUTPUT]}
        finally:
            sys.stdout, sys.stderr = saved
        texts = [out.text(), err.text()]
        for k, t in enumerate(texts):
            if kept + len(t) > MAX_TOTAL:
                note = f"\n[output beyond the notebook's {MAX_TOTAL} characters left out]"
                texts[k] = t[: max(0, MAX_TOTAL - kept)] + note
            kept += len(texts[k])
        send({"event": "cell", "index": i, "stdout": texts[0], "stderr": texts[1], "error": error,
              "seconds": round(time.monotonic() - t0, 3)})
    send({"event": "ready"})

    for line in requests:
        req = json.loads(line)
        name, rid = req.get("name", ""), req.get("id")
        ns = shell.user_ns
        if name not in ns:
            send({"kind": "missing", "id": rid})
            continue
        value = ns[name]
        if req.get("op") == "get":
            if callable(value) and not isinstance(value, type):
                send({"kind": "function", "id": rid})
                continue
            send({**_encoded(plain, lambda: value), "id": rid})
        elif req.get("op") == "call":
            args = [plain.decode(a, by_value=False) for a in req.get("args", [])]
            kwargs = {str(k): plain.decode(v, by_value=False) for k, v in (req.get("kwargs") or {}).items()}
            send({**_encoded(plain, lambda: value(*args, **kwargs), req.get("timeout", 10)), "id": rid})
    return 0


def _encoded(plain, make, timeout: float | None = None) -> dict:
    out = _Capped()
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = out
    try:
        if timeout:
            _timer(timeout)
        try:
            value = make()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        return {"kind": "value", "value": plain.encode(value)}
    except plain.NotPlain as e:
        return {"kind": "notplain", "why": str(e)}
    except BaseException as e:
        try:
            return {"kind": "raised", "ename": type(e).__name__, "evalue": str(e)[:2000]}
        except BaseException:
            return {"kind": "raised", "ename": "Exception", "evalue": "(its message could not be read)"}
    finally:
        sys.stdout, sys.stderr = saved


def _plain_traceback(shell):
    def show(*args, **kwargs):
        etype, value, tb = sys.exc_info()
        if etype is None:
            return
        print("".join(traceback.format_exception(etype, value, tb)[-6:]), file=sys.stderr)
    return show


if __name__ == "__main__":
    raise SystemExit(main())
