"""Run a percent-format notebook source's code cells with plain Python, for a GPU machine without jupytext:

    python3 docs/results/notebooks_plain_run.py notebooks/src/07_gemm_ladder.py > log.txt

Each code cell in order in one namespace (cwd notebooks/, matplotlib Agg), its time, ok or the traceback,
and what it printed. `python -m bwlab.tools.notebooks run` does the same where jupytext is installed."""
import contextlib
import io
import os
import sys
import time
import traceback
from pathlib import Path


def cells(text):
    out, cur, kind = [], [], None
    for line in text.splitlines():
        if line.startswith("# %%"):
            if kind is not None:
                out.append((kind, "\n".join(cur)))
            kind = "markdown" if "[markdown]" in line else "code"
            cur = []
        else:
            cur.append(line)
    if kind is not None:
        out.append((kind, "\n".join(cur)))
    return out


def main(src):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.show = lambda *a, **k: plt.close("all")
    ns = {"__name__": "__nbrun__", "display": lambda *o, **k: [print(repr(x)) for x in o]}
    src = Path(src).resolve()
    os.chdir(src.parent.parent)   # notebooks/
    ok = failed = 0
    for i, (kind, code) in enumerate(cells(src.read_text())):
        if kind != "code" or not code.strip():
            continue
        buf, t0, status = io.StringIO(), time.perf_counter(), "ok"
        try:
            with contextlib.redirect_stdout(buf):
                exec(compile(code, f"{src.name}[cell {i}]", "exec"), ns)
            ok += 1
        except Exception:
            status = "FAILED\n" + traceback.format_exc(limit=6)
            failed += 1
        plt.close("all")
        print(f">>> {src.name} cell {i} [{time.perf_counter() - t0:.2f} s] {status}", flush=True)
        if buf.getvalue().strip():
            print(buf.getvalue().rstrip()[:4000], flush=True)
    print(f"=== {src.name}: {ok} cells ok, {failed} failed")
    return failed


if __name__ == "__main__":
    sys.exit(1 if main(sys.argv[1]) else 0)
