"""Hardware validation of the TMA load: random loads on the GPU, every SMEM byte compared with
bwlab.tma's model.

    python -m bwlab.validate tma --cases 1000 --seed 0 [--group 125] [--time-limit 240] [--out FILE]
                                 [--dump FILE.npz] [--probe] [--probe-narrow]
    python -m bwlab.bench tma_copy [--sizes-mib ...] [--repeat N] [--out FILE]   (checks/tma_copy.py)

A GPU fault (illegal instruction, misaligned address) poisons the CUDA context, so the cases run in
child processes (`python -m bwlab.checks.tma group ...`), `--group` per child; a crashed group is
split until the fault is pinned to one case. Each case's whole SMEM window is compared: the box plus
>= 1 KiB of margin painted with a known background first, so a stray byte anywhere shows; and the
transaction count must be exact (a second mbarrier phase must complete with no bytes outstanding).
The random cases and the helpers the diagnosis shares: checks/tma_cases.py; finding what makes a
case fault: checks/tma_diagnose.py.
"""
from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter

import numpy as np

from ..tma.tensor_map import is_narrow_swizzle
from ..tma.runner import LoadCase, launch_cases
from .common import Command
from .tma_cases import child_json, describe_case, diagnose_window, is_oob, random_cases
from .tma_copy import CopyConfig, bench_main, make_tma_copy  # noqa: F401  (python -m bwlab.bench tma_copy)

THIS_MODULE = "bwlab.checks.tma"


def classify(c: LoadCase, w: np.ndarray, done: bool, err) -> tuple:
    """(status, detail) of one case: 'exact', 'mismatch', 'incomplete' (a bounded wait gave up) or
    'refused' (the driver refused a tensor map TensorMap accepted)."""
    if err:
        return "refused", str(err)[:300]
    if not done:
        return "incomplete", "did not complete the handshake"
    want = c.model_window()
    if np.array_equal(w, want):
        return "exact", ""
    diff = np.flatnonzero(w != want)
    return "mismatch", (f"{diff.size} bytes differ (first at window byte {diff[0]}: gpu {w[diff[0]]:#04x} "
                        f"model {want[diff[0]]:#04x}); {diagnose_window(c, w)}")


def run_and_classify(cases, say=None, batch: int = 512, rerun_limit: int = 32):
    """Run `cases` in launches of `batch`; [(status, detail, window)] per case.

    A bounded wait that gives up makes every CTA still waiting give up too (one status record per
    launch), so the unfinished cases are run again one per launch (up to `rerun_limit`) to find
    which of them really fail."""
    out = []
    for start in range(0, len(cases), batch):
        chunk = cases[start:start + batch]
        r = launch_cases(chunk)
        if r.timeout is not None:
            again = [i for i in range(len(chunk)) if not r.done[i] and not r.errors[i]]
            if say:
                say(f"  launch of cases {start}..{start + len(chunk) - 1}: {r.timeout}; re-running "
                    f"{min(len(again), rerun_limit)} of {len(again)} unfinished case(s) one per launch")
            for i in again[:rerun_limit]:
                one = launch_cases([chunk[i]])
                r.windows[i], r.done[i] = one.windows[0], one.done[0]
        for c, w, ok, err in zip(chunk, r.windows, r.done, r.errors):
            out.append(classify(c, w, bool(ok), err) + (w,))
    return out


def validate_cases(cases, say=print, batch: int = 512, dump=None) -> int:
    """Run `cases` on the GPU in this process, compare every SMEM window with the model; return the
    failure count (a GPU fault raises: `validate_isolated` runs cases in child processes instead)."""
    res = run_and_classify(cases, say=say, batch=batch)
    bad = [(k, s, d, w) for k, (s, d, w) in enumerate(res) if s != "exact"]
    for k, s, d, _ in bad[:20]:
        say(f"  case {k}: {s}: {d}: {describe_case(cases[k])}")
    if dump and bad:
        save_dump(dump, cases, [(k, s, w) for k, s, _, w in bad], say)
    return len(bad)



def npy_headers_intact() -> bool:
    """Whether np.save in this process still pads .npy headers with spaces.

    On Python 3.12+ a one-byte bytes literal such as numpy's b' ' is the interpreter's shared
    singleton for that byte; C code that writes into a one-byte bytes buffer made as b" " * 1
    (bwlab.compile does this for an empty NVRTC log) turns it into b'\\x00' for the whole process,
    and every .npy/.npz header written afterwards is padded with NUL bytes that np.load rejects."""
    f = io.BytesIO()
    np.save(f, np.zeros(1, np.uint8), allow_pickle=False)
    raw = f.getvalue()
    return b"\0" not in raw[10:raw.index(b"\n")]


def save_dump(path, cases, bad, say=print):
    if not npy_headers_intact():
        say(f"  failure windows NOT written to {path}: this process's np.save pads headers with NUL bytes "
            f"(the shared b' ' was overwritten, see npy_headers_intact), so np.load could not read them")
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savez_compressed(path, **{f"case{k}": w for k, _, w in bad},
                        descriptions=np.array([f"{k} {s} {describe_case(cases[k])}" for k, s, _ in bad]))


def save_window(path: str, w) -> None:
    """Write one SMEM window as raw bytes (no .npy header, so nothing this process's numpy pads can
    spoil it), whole or not at all: a child killed by its timeout can leave a stray .part, never a
    truncated window for the parent to read."""
    with open(path + ".part", "wb") as f:
        f.write(np.ascontiguousarray(w, dtype=np.uint8).tobytes())
    os.replace(path + ".part", path)


def load_window(path: str) -> np.ndarray:
    return np.fromfile(path, dtype=np.uint8)


def _print_flushed(s: str) -> None:
    print(s, flush=True)  # on the pipe before anything at teardown can kill the child


def group_main(argv, emit=_print_flushed) -> int:
    """Child process: run cases --indices of random_cases(--cases, --seed) in one launch (unfinished
    ones again one by one); `emit` one JSON line (stdout by default, which the parent reads);
    windows of failures go to --out-dir/caseK.bin."""
    import argparse
    ap = argparse.ArgumentParser(prog=f"python -m {THIS_MODULE} group")
    ap.add_argument("--cases", type=int, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--indices", required=True)
    ap.add_argument("--out-dir")
    a = ap.parse_args(argv)
    cases = random_cases(a.cases, a.seed)
    idx = [int(x) for x in a.indices.split(",") if x]
    res = run_and_classify([cases[i] for i in idx])
    out = []
    for k, (s, d, w) in zip(idx, res):
        out.append([k, s, d])
        if s != "exact" and a.out_dir:
            save_window(os.path.join(a.out_dir, f"case{k}.bin"), w)
    emit(json.dumps({"status": "ran", "results": out}))
    return 0


def validate_isolated(n: int, seed: int = 0, say=print, group: int = 125, dump=None,
                      time_limit: float = 240.0, max_faults: int = 8) -> dict:
    """Run random_cases(n, seed) on the GPU in child processes, `group` cases per child, so that a
    GPU fault (which poisons the CUDA context) costs only its own group: a crashed group is split in
    halves and run again until each fault is pinned to one case. Returns {case index: (status,
    detail)} with status 'exact', 'mismatch', 'incomplete', 'refused', 'fault' or 'not run' (after
    `time_limit` seconds, or once `max_faults` faults are pinned)."""
    t0 = time.perf_counter()
    cases = random_cases(n, seed)
    tmp = tempfile.mkdtemp(prefix="bwlab_tma_")
    try:
        todo = [list(range(s, min(s + group, n))) for s in range(0, n, group)]
        result, faults = {}, 0
        while todo:
            idx = todo.pop(0)
            if time.perf_counter() - t0 > time_limit or faults >= max_faults:
                for k in idx:
                    result[k] = ("not run", "time limit" if faults < max_faults else "fault limit")
                continue
            r = child_json(["group", "--cases", str(n), "--seed", str(seed), "--out-dir", tmp,
                             "--indices", ",".join(map(str, idx))], timeout=60)
            if r.get("status") == "ran":
                for k, s, d in r["results"]:
                    result[k] = (s, d)
                continue
            if len(idx) == 1:
                faults += 1
                result[idx[0]] = ("fault", r.get("error", "?"))
                say(f"  case {idx[0]}: GPU fault ({r.get('error')}): {describe_case(cases[idx[0]])}")
                continue
            say(f"  cases {idx[0]}..{idx[-1]} ({len(idx)}): the child crashed ({r.get('error')}); splitting")
            todo[:0] = [idx[:len(idx) // 2], idx[len(idx) // 2:]]
        if dump:
            bad = [(k, s, load_window(os.path.join(tmp, f"case{k}.bin")))
                   for k, (s, _) in sorted(result.items())
                   if s != "exact" and os.path.exists(os.path.join(tmp, f"case{k}.bin"))]
            if bad:
                save_dump(dump, cases, bad, say)
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def coverage_lines(cases) -> list:
    """What a set of cases covers, one line per aspect."""
    by = lambda f: dict(sorted(Counter(f(c) for c in cases).items()))  # noqa: E731
    narrow = [c for c in cases if is_narrow_swizzle(c.tmap)]
    return [
        f"  element bytes: {by(lambda c: c.tmap.elem_bytes)}",
        f"  dtypes: {by(lambda c: c.tmap.dtype)}",
        f"  ranks: {by(lambda c: c.tmap.rank)}",
        f"  swizzles: {by(lambda c: c.tmap.swizzle)}",
        f"  swizzled boxes narrower than the span: {len(narrow)}, by (swizzle, row bytes): "
        f"{dict(sorted(Counter((c.tmap.swizzle, c.tmap.inner_box_bytes) for c in narrow).items()))}",
        f"  SMEM offset mod 1024: {by(lambda c: c.smem_offset % 1024)} (+1024 in {sum(c.smem_offset >= 1024 for c in cases)})",
        f"  base address mod 256: {len(by(lambda c: c.gmem_offset))} distinct multiples of 16",
        f"  prefetch variants (0 none, 1 prefetch.tensormap, 2 box into L2, 3 both): {by(lambda c: int(c.prefetch))}",
        f"  L2 promotion: {by(lambda c: c.tmap.l2_promotion)}",
        f"  boxes out of bounds (partly or wholly): {sum(is_oob(c) for c in cases)}; "
        f"NaN fill: {sum(c.tmap.oob_fill == 'nan' for c in cases)}; "
        f"element strides > 1: {sum(max(c.tmap.element_strides) > 1 for c in cases)}; "
        f"odd global dim 0: {sum(c.tmap.global_shape[0] % 2 == 1 for c in cases)}; "
        f"odd outer dims: {sum(any(d % 2 for d in c.tmap.global_shape[1:]) for c in cases)}",
        f"  box bytes: min {min(c.tmap.box_bytes for c in cases)}, max {max(c.tmap.box_bytes for c in cases)}; "
        f"SMEM footprint max {max(c.tmap.smem_footprint for c in cases)}",
    ]


def validate_main(argv=None) -> int:
    cmd = Command("validate tma", "Random TMA loads on the GPU, SMEM bytes compared with bwlab.tma's model",
                  stage="tma")
    cmd.add("--cases", type=int, default=1000)
    cmd.add("--seed", type=int, default=0)
    cmd.add("--group", type=int, default=125, help="cases per child process (one launch each)")
    cmd.add("--time-limit", type=float, default=240.0, help="stop starting groups after this many seconds")
    cmd.add("--dump", help="save the GPU windows of failing cases to this .npz")
    cmd.add("--probe", action="store_true",
            help="after the validation, probe what the documentation leaves open: how swizzled boxes "
                 "narrower than the span land in SMEM and what they count (the narrow probe of "
                 "checks/tma_diagnose.py; the tf32 rounding and the OOB-NaN bits that an earlier probe read "
                 "off the H100 are checked in every random case)")
    cmd.add("--probe-narrow", action="store_true",
            help="first probe swizzled boxes narrower than the span (the same probe, before the validation)")
    args, say = cmd.start(argv)
    from .tma_diagnose import probe_narrow_main
    if args.probe_narrow:
        probe_narrow_main([], say=say)
    t0 = time.perf_counter()
    cases = random_cases(args.cases, args.seed)
    say(f"validation: {args.cases} random loads (seed {args.seed}), {args.group} per child process "
        "(one launch each; a GPU fault is pinned to its case by splitting its group)")
    res = validate_isolated(args.cases, args.seed, say=say, group=args.group, dump=args.dump,
                            time_limit=args.time_limit)
    t1 = time.perf_counter()
    counts = Counter(s for s, _ in res.values())
    bad = sorted(k for k, (s, _) in res.items() if s != "exact")
    for k in bad[:25]:
        s, d = res[k]
        say(f"  case {k}: {s}: {d}: {describe_case(cases[k])}")
    say(f"cases: {len(cases)} (seed {args.seed}); run and compared in {t1 - t0:.1f} s")
    for line in coverage_lines(cases):
        say(line)
    by_kind = Counter((cases[k].tmap.swizzle, is_narrow_swizzle(cases[k].tmap), res[k][0]) for k in res)
    say("  status by (swizzle, narrower than the span): " +
        ", ".join(f"{sw}{' narrow' if nw else ''} {st} {n}" for (sw, nw, st), n in sorted(by_kind.items())))
    say("  status by rank: " + ", ".join(f"rank {r} {st} {n}" for (r, st), n in
                                        sorted(Counter((cases[k].tmap.rank, res[k][0]) for k in res).items())))
    exact = counts.get("exact", 0)
    say(f"result: {exact}/{len(cases)} bit-exact {dict(sorted(counts.items()))} (SMEM windows incl. >= 1 KiB "
        "margins painted with a known background; expect_tx = the model's tx_bytes, and a second mbarrier "
        "phase must complete with no bytes outstanding)")
    if args.probe:
        probe_narrow_main([], say=say)
    return cmd.finish(len(cases) - exact, "tma")


if __name__ == "__main__":
    if sys.argv[1:2] == ["group"]:
        raise SystemExit(group_main(sys.argv[2:]))
    raise SystemExit(validate_main(sys.argv[1:]))
