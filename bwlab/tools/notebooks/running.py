"""Running notebooks again: an executed copy against the stored outputs (nbval's rules), soak runs, and the
plain-Python run of a source's code cells (no Jupyter)."""
from __future__ import annotations

import copy
import os
import re
import sys
from pathlib import Path

from .building import _execute, VIEW_MIME
from .sources import NB_DIR, parse_percent


SANITIZE_CFG = NB_DIR / "sanitize.cfg"   # nbval's --nbval-sanitize-with file: volatile text in outputs
# Output keys nbval leaves out of its comparison (without nbdime): per-run metadata, tracebacks (the error's
# name and value are compared), prompt numbers, the widget model ids, and the pixels of raster images.
NBVAL_SKIP_KEYS = ("metadata", "traceback", "prompt_number", "output_type", "name", "execution_count",
                   VIEW_MIME, "image/png", "image/jpeg")


def stored_output_differences(stored, executed, sanitize_cfg: Path | None = SANITIZE_CFG) -> list[str]:
    """Compare an executed copy of a notebook with its stored outputs by the rules of strict nbval (`pytest
    --nbval --nbval-sanitize-with notebooks/sanitize.cfg`), so that one execution of a notebook serves both
    this check and others that need it run (the browser test's Run All). Returns one line per difference,
    empty when they agree.

    Per code cell, with nbval's own tag and comment rules (nbval-ignore-output, nbval-skip, raises-exception,
    # NBVAL_* markers): a cell that raised without raises-exception differs; unless its output is ignored,
    the streams of each name are merged (\\r and \\b applied), the outputs flattened to their keys and MIME
    types less NBVAL_SKIP_KEYS, the sanitize patterns applied to every string, and the values of each key
    compared in order. `stored` and `executed` are nbformat notebooks or paths."""
    import nbformat
    from nbval.plugin import (coalesce_streams, find_comment_markers, find_metadata_tags,
                              get_sanitize_patterns, transform_streams_for_comparison)
    stored, executed = (nb if isinstance(nb, dict) else nbformat.read(str(nb), as_version=4)
                        for nb in (stored, executed))
    patterns = get_sanitize_patterns(Path(sanitize_cfg).read_text()) if sanitize_cfg else []

    def clean(value):
        if isinstance(value, str):
            for regex, replace in patterns:
                value = re.sub(regex, replace, value)
        return value

    def flatten(outputs) -> dict:
        keyed = {}
        for out in transform_streams_for_comparison(coalesce_streams(copy.deepcopy(outputs))):
            for key, value in out.items():
                if key in NBVAL_SKIP_KEYS:
                    continue
                items = value.items() if key == "data" else [(key, value)]
                for k, v in items:
                    if k not in NBVAL_SKIP_KEYS:
                        keyed.setdefault(k, []).append(clean(v))
        return keyed

    want = [c for c in stored.cells if c.cell_type == "code"]
    have = [c for c in executed.cells if c.cell_type == "code"]
    if [c.source for c in want] != [c.source for c in have]:
        return [f"the executed copy's {len(have)} code cells are not the stored notebook's {len(want)}"]
    problems = []
    for n, (ref, test) in enumerate(zip(want, have)):
        options = dict(find_metadata_tags(ref.metadata))
        options.update(find_comment_markers(ref.source))
        if options.get("skip"):
            continue
        where = f"code cell {n}"
        errors = [o for o in test.get("outputs", []) if o.get("output_type") == "error"]
        if errors and not options.get("check_exception"):
            problems.append(f"{where} raised {errors[0].get('ename')}: {str(errors[0].get('evalue'))[:200]}")
            continue
        if ref.get("execution_count") is None:
            if ref.get("outputs"):
                problems.append(f"{where}: the stored cell has outputs but was never run")
            continue
        if test.get("execution_count") is None:
            problems.append(f"{where} did not run")
            continue
        if not options.get("check", True):
            continue
        a, b = flatten(ref.get("outputs", [])), flatten(test.get("outputs", []))
        if set(a) != set(b):
            problems.append(f"{where}: stored output fields {sorted(a)}, executed {sorted(b)}")
            continue
        for key in a:
            if a[key] != b[key]:
                problems.append(f"{where} {key}: stored {_short(a[key])}, executed {_short(b[key])}")
                break
    return problems


def _short(values) -> str:
    text = repr(values[0] if len(values) == 1 else values)
    return text if len(text) <= 300 else text[:297] + "..."


def soak(paths, runs: int = 10, timeout: int = 300, out=sys.stdout) -> dict:
    """Execute every notebook `runs` times headless (nothing is written); returns
    {name: (finished, runs, [seconds of each finished run])} and prints one line per run."""
    import time
    import nbformat
    result = {}
    for p in paths:
        p = Path(p)
        done, times = 0, []
        for r in range(runs):
            nb = nbformat.read(p, as_version=4)
            t0 = time.perf_counter()
            try:
                _execute(nb, p, timeout)
                status = "finished"
                done += 1
                times.append(time.perf_counter() - t0)
            except Exception as e:  # a cell timeout is how a stall shows
                status = f"FAILED {type(e).__name__}: {str(e).strip().splitlines()[-1][:120]}"
            print(f"{p.name} run {r + 1}/{runs}: {status} in {time.perf_counter() - t0:.1f} s",
                  file=out, flush=True)
        result[p.name] = (done, runs, times)
    print("notebook               finished   median s   max s", file=out)
    for name, (done, n, times) in result.items():
        med = sorted(times)[len(times) // 2] if times else float("nan")
        print(f"{name:22s} {done:3d} of {n:<3d}   {med:8.1f}  {max(times, default=float('nan')):6.1f}",
              file=out)
    return result


def run_cells(src: Path, out=sys.stdout) -> tuple[int, int, int]:
    """Execute the code cells of a percent-format notebook source; returns (ok, failed, skipped)."""
    import io
    import contextlib
    import time
    import traceback
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.show = lambda *a, **k: plt.close("all")
    ns = {"__name__": "__main__"}
    try:
        from IPython.display import display  # noqa: F401
    except ImportError:
        ns["display"] = lambda *objs, **kw: [print(repr(o)) for o in objs]
    ok = failed = skipped = 0
    src = Path(src).resolve()
    old_cwd = os.getcwd()
    os.chdir(NB_DIR)
    try:
        for i, (kind, code, tags) in enumerate(parse_percent(src.read_text())):
            if kind != "code":
                continue
            buf = io.StringIO()
            t0 = time.perf_counter()
            status = "ok"
            try:
                with contextlib.redirect_stdout(buf):
                    exec(compile(code, f"{src.name}[cell {i}]", "exec"), ns)
                ok += 1
            except ModuleNotFoundError as e:
                if e.name and e.name.split(".")[0] in ("IPython", "ipywidgets", "ipykernel"):
                    status = f"skipped ({e.name} is not installed here)"
                    skipped += 1
                else:
                    status = "FAILED\n" + traceback.format_exc(limit=4)
                    failed += 1
            except Exception:
                status = "FAILED\n" + traceback.format_exc(limit=4)
                failed += 1
            plt.close("all")
            dt = time.perf_counter() - t0
            print(f">>> {src.name} cell {i} [{dt:.2f} s] {status}", file=out)
            text = buf.getvalue().rstrip()
            if text:
                print(text, file=out)
    finally:
        os.chdir(old_cwd)
    print(f"=== {src.name}: {ok} cells ok, {failed} failed, {skipped} skipped", file=out)
    return ok, failed, skipped
