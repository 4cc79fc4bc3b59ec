"""Comparing a run with the GPU's recording, and reading the recordings."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .manifest import AnyOf, Check, In, Kernel, Out, Printf, RECORDINGS, Sorted, Val, Within
from .running import run_kernel


def _hex(x) -> str:
    a = np.asarray(x)
    return "0x" + a.tobytes()[::-1].hex() if a.dtype.byteorder in "<=|" else "0x" + a.tobytes().hex()


def _first_diff(rec, got) -> str | None:
    if rec.shape != got.shape or rec.dtype != got.dtype:
        return f"shape/dtype {rec.shape} {rec.dtype} vs {got.shape} {got.dtype}"
    rb, gb = rec.view(np.uint8).reshape(len(rec), -1), got.view(np.uint8).reshape(len(got), -1)
    bad = np.nonzero((rb != gb).any(axis=1))[0]
    if len(bad) == 0:
        return None
    i = int(bad[0])
    return f"[{i}] GPU {_hex(rec[i])} emu {_hex(got[i])} ({len(bad)} of {len(rec)} differ)"


def _ulp32(x):
    x = np.abs(np.asarray(x, np.float64))
    e = np.floor(np.log2(np.maximum(x, 2.0 ** -126)))
    return 2.0 ** (e - 23)


def _within(rec, got, w: Within) -> str | None:
    if rec.dtype == np.float16:
        r, g = rec.astype(np.float64), got.astype(np.float64)
        ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(r), 2.0 ** -14))) - 10)
    else:
        r, g = rec.astype(np.float64), got.astype(np.float64)
        ulp = _ulp32(r)
    special = ~np.isfinite(r) | ~np.isfinite(g) | (r == 0) | (g == 0)
    exact_bad = special & ~((np.isnan(r) & np.isnan(g)) | (r == g) & (np.signbit(r) == np.signbit(g)))
    # a zero against a tiny non-zero is judged by the bound, not exactly
    exact_bad &= ~(((r == 0) ^ (g == 0)) & np.isfinite(r) & np.isfinite(g))
    with np.errstate(invalid="ignore"):
        tol = np.maximum.reduce([w.ulp * ulp + 0.5 * ulp, np.full_like(r, w.abs), w.rel * np.abs(r)])
        far = np.isfinite(r) & np.isfinite(g) & (np.abs(r - g) > tol)
    bad = np.nonzero(exact_bad | far)[0]
    if len(bad) == 0:
        return None
    i = int(bad[0])
    return (f"[{i}] GPU {_hex(rec[i])} ({float(r[i]):.9g}) emu {_hex(got[i])} ({float(g[i]):.9g}) beyond "
            f"{w.doc or 'the bound'} ({len(bad)} of {len(rec)})")


def _per_warp(text: str) -> dict:
    lines: dict = {}
    for ln in text.splitlines():
        w = ln.split(" ", 1)[0]
        lines.setdefault(w, []).append(ln)
    return {w: sorted(v) for w, v in lines.items()}


def compare(k: Kernel, rec: dict, got: dict) -> str | None:
    """None when `got` (an emulator run) agrees with the recording in k's comparison kind; else the
    first difference, in words with both values in hex."""
    cmp = k.cmp
    if isinstance(cmp, Printf):
        want, have = _per_warp(rec["printf"]), _per_warp(got["printf"])
        if want == have:
            return None
        for w in sorted(set(want) | set(have)):
            a, b = want.get(w, []), have.get(w, [])
            if a != b:
                extra = [x for x in b if x not in a][:1]
                missing = [x for x in a if x not in b][:1]
                gone, new = (missing[0] if missing else "-"), (extra[0] if extra else "-")
                return (f"warp {w}: GPU printed {len(a)} lines, emu {len(b)}; first GPU line not in emu: {gone!r}; "
                        f"first emu line not on GPU: {new!r}")
    if isinstance(cmp, Check):
        err = cmp.fn(got["outputs"], k)
        return f"{cmp.doc}: {err}" if err else None
    if isinstance(cmp, AnyOf):
        v = int(got["outputs"][0].ravel()[0])
        return None if v in cmp.outcomes else f"result {v} is not one of the outcomes {cmp.outcomes}"
    for j, (r, g) in enumerate(zip(rec["outputs"], got["outputs"])):
        if isinstance(cmp, Sorted) and j in cmp.outputs:
            r, g = np.sort(r), np.sort(g)
        d = _within(r, g, cmp) if isinstance(cmp, Within) else _first_diff(r, g)
        if d:
            return f"output {j}: {d}"
    return None


# ----------------------------------------------------------------------------------------------------
# Recordings.

def load_recording(chapter: str, where: Path = RECORDINGS) -> dict:
    """{kernel: {"outputs": [...], "printf": str, "runs": [...], "digest": str, "error": str|None}}."""
    path = Path(where) / f"{chapter}.npz"
    if not path.exists():
        raise FileNotFoundError(f"no recording {path}: run `python -m bwlab.validate emu-corpus` on a GPU")
    z = np.load(path, allow_pickle=False)
    meta = json.loads(bytes(z["__meta__"]).decode())
    out = {}
    for name, m in meta.items():
        out[name] = {"outputs": [z[f"{name}.{j}"] for j in range(m["n_outputs"])],
                     "printf": m.get("printf", ""), "runs": m.get("runs", []), "digest": m["digest"],
                     "error": m.get("error")}
    return out


def _inputs_of(k: Kernel, detail: str) -> str:
    """For an element-wise kernel (inputs of n elements, outputs of `per` values each): the inputs of
    the first differing element, so that a difference reads as `op(inputs) -> GPU vs emu`."""
    import re
    m = re.match(r"output (\d+): \[(\d+)\]", detail)
    if not m or not k.args or not isinstance(k.args[-1], Val):
        return ""
    n = int(k.args[-1].value)
    outs = k.outputs()
    j, idx = int(m.group(1)), int(m.group(2))
    if j >= len(outs) or not isinstance(outs[j], Out) or n <= 0 or outs[j].n % n:
        return ""
    per = outs[j].n // n
    i = idx // per
    ins = [a.data for a in k.args if isinstance(a, In) and len(a.data) == n]
    if not ins:
        return ""
    return f"; element {i} (result {idx % per} of {per}), inputs " + ", ".join(_hex(x[i]) for x in ins)


def emulator_result(k: Kernel, rec: dict) -> tuple[str, str]:
    """Run k in the emulator against its recording: ("match" | "differ" | "unsupported" | "error" |
    "stale", detail)."""
    from ... import emu
    if rec.get("error"):
        return "error", f"the GPU recording failed: {rec['error'].splitlines()[0]}"
    if rec["digest"] != k.inputs_digest():
        return "stale", "the manifest's inputs changed since the recording: re-record on a GPU"
    seeds = k.cmp.seeds if isinstance(k.cmp, AnyOf) else (0,)
    seen = set()
    for s in seeds:
        try:
            got = run_kernel(k, "emu", seed=s)
        except emu.UnsupportedInstruction as e:
            return "unsupported", str(e).splitlines()[0][:300]
        except Exception as e:  # noqa: BLE001 - any other failure is a difference, named
            return "differ", f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        d = compare(k, rec, got)
        if d:
            return "differ", (f"seed {s}: " if len(seeds) > 1 else "") + d + _inputs_of(k, d)
        if isinstance(k.cmp, AnyOf):
            seen.add(int(got["outputs"][0].ravel()[0]))
    return "match", (f"outcomes over {len(seeds)} seeds: {sorted(seen)}" if seen else "")


