"""Finding what makes a TMA case fault, and probing what the documentation leaves open.

    python -m bwlab.checks.tma_diagnose diagnose [--cases 1000 --seed 0]
    python -m bwlab.checks.tma_diagnose subset --cases N --seed S [--indices i,j] [--prefetch 0..3] [--strip f,g]
    python -m bwlab.checks.tma_diagnose narrow I,J,... box|footprint      (a child of the narrow probe)

A fault (illegal instruction, misaligned address) poisons the CUDA context, so every trial runs in
a child process. `diagnose` runs the random cases with each prefetch mode, then with one feature
taken away from every case (`strip_case`), then bisects to one faulting case and strips that.
The narrow probe (`probe_narrow_main`, `python -m bwlab.validate tma --probe`) asks the GPU how a
swizzled box narrower than its span lands in SMEM and what it counts, with expect_tx = box bytes and
= rows x span.
"""
from __future__ import annotations

import json
import math
import sys

import numpy as np

from ..hw.dtypes import element_type
from ..tma.tensor_map import TensorMap
from ..tma.runner import LoadCase, background, launch_cases
from ..tma.tensor_map import NARROW_SWIZZLE_PITCH, NARROW_SWIZZLE_TX, TMAP_DTYPES, swizzle_width
from ..util import round_up
from ..validate import Subcommand, dispatch
from .tma_cases import child_json, describe_case, diagnose_window, random_cases

THIS_MODULE = "bwlab.checks.tma_diagnose"
_UINT = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}
assert set(_UINT.values()) <= set(TMAP_DTYPES)


STRIPS = ("prefetch", "l2", "gmem_offset", "smem_offset", "coords_inside", "element_strides", "nan_fill",
          "swizzle", "box_le_dims", "dtype_uint", "grow_dims")


def strip_case(c: LoadCase, what: str) -> LoadCase:
    """The same case with one feature taken away (used to find which one makes it fault)."""
    t = c.tmap
    kw = dict(dtype=t.dtype, global_shape=t.global_shape, box_shape=t.box_shape, global_strides=t.global_strides,
              element_strides=t.element_strides, swizzle=t.swizzle, l2_promotion=t.l2_promotion, oob_fill=t.oob_fill)
    coords, smem, goff, pf = tuple(c.coords), c.smem_offset, c.gmem_offset, c.prefetch
    if what == "prefetch":
        pf = 0
    elif what == "l2":
        kw["l2_promotion"] = "none"
    elif what == "gmem_offset":
        goff = 0
    elif what == "smem_offset":
        smem = 0
    elif what == "coords_inside":
        coords = tuple(max(0, min(co, d - ((n - 1) * e + 1))) for co, n, e, d in
                       zip(coords, t.box_counts, t.element_strides, t.global_shape))
        g0 = 16 // t.elem_bytes
        coords = ((coords[0] // g0) * g0,) + coords[1:]
    elif what == "element_strides":
        kw["element_strides"] = (1,) * t.rank
    elif what == "nan_fill":
        kw["oob_fill"] = "zero"
    elif what == "swizzle":
        kw["swizzle"] = "none"
    elif what == "box_le_dims":
        box = [min(b, d) if i else b for i, (b, d) in enumerate(zip(t.box_shape, t.global_shape))]
        kw["box_shape"] = tuple(box)
    elif what == "dtype_uint":
        kw["dtype"] = _UINT[t.elem_bytes]
        kw["oob_fill"] = "zero"
    elif what == "grow_dims":  # every dim at least as long as the box reaches, rows >= 16 bytes
        shape = [max(d, b * e, 16 // t.elem_bytes if i == 0 else 1) for i, (d, b, e) in
                 enumerate(zip(t.global_shape, t.box_shape, t.element_strides))]
        strides, pitch = [], round_up(shape[0] * t.elem_bytes, 16)
        for d in shape[1:]:
            strides.append(pitch)
            pitch *= d
        kw["global_shape"], kw["global_strides"] = tuple(shape), tuple(strides)
        t2 = TensorMap(**kw)
        return LoadCase(t2, np.zeros(t2.global_extent_bytes, np.uint8), coords, smem_offset=smem,
                        gmem_offset=goff, prefetch=pf)
    else:
        raise ValueError(f"unknown strip {what!r}; one of {STRIPS}")
    return LoadCase(TensorMap(**kw), c.gmem, coords, smem_offset=smem, gmem_offset=goff, prefetch=pf)


def subset_main(argv) -> int:
    """Child: run a subset of the random cases (features stripped, prefetch forced); one JSON line."""
    import argparse
    ap = argparse.ArgumentParser(prog=f"python -m {THIS_MODULE} subset")
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--indices", default="all")
    ap.add_argument("--prefetch", default="asis")
    ap.add_argument("--strip", default="")
    a = ap.parse_args(argv)
    cases = random_cases(a.cases, a.seed)
    idx = list(range(len(cases))) if a.indices == "all" else [int(x) for x in a.indices.split(",") if x]
    sel = []
    for i in idx:
        c = cases[i]
        for s in filter(None, a.strip.split(",")):
            c = strip_case(c, s)
        if a.prefetch != "asis":
            c.prefetch = int(a.prefetch)
        sel.append(c)
    try:
        r = launch_cases(sel)
        bad = [(i, "driver-refused" if err else "incomplete" if not ok else "mismatch")
               for i, c, w, ok, err in zip(idx, sel, r.windows, r.done, r.errors)
               if err or not ok or not np.array_equal(w, c.model_window())]
        kinds = {}
        for _, why in bad:
            kinds[why] = kinds.get(why, 0) + 1
        print(json.dumps({"status": "ok" if not bad else "bad", "bad": [i for i, _ in bad[:50]],
                          "nbad": len(bad), "kinds": kinds}))
        return 0
    except Exception as e:  # noqa: BLE001 - a fault is the result we are looking for
        print(json.dumps({"status": "crash", "error": f"{type(e).__name__}: {str(e).splitlines()[0][:150]}"}))
        return 3


def trial(args) -> dict:
    """`subset ARGS` in a child process: its JSON line, or {'status': 'crash', ...}."""
    return child_json(["subset"] + args, timeout=120, module=THIS_MODULE)


def diagnose_main(argv=None, say=print) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog=f"python -m {THIS_MODULE} diagnose")
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    base = ["--cases", str(a.cases), "--seed", str(a.seed)]
    say("diagnose: all cases with each prefetch mode (0 none, 1 tensormap, 2 box, 3 both), one child each")
    res = {}
    for mode in ("0", "1", "2", "3"):
        res[mode] = trial(base + ["--prefetch", mode])
        say(f"  prefetch={mode}: {res[mode]}")
    if res["0"]["status"] != "crash":
        return 0
    say("diagnose: all cases, prefetch 0, one feature taken away from every case")
    for s in STRIPS[1:]:
        say(f"  without {s:16s}: {trial(base + ['--prefetch', '0', '--strip', s])}")
    cases = random_cases(a.cases, a.seed)
    pool = list(range(a.cases))
    while len(pool) > 1:
        half = pool[:len(pool) // 2]
        if trial(base + ["--prefetch", "0", "--indices", ",".join(map(str, half))])["status"] == "crash":
            pool = half
        else:
            pool = pool[len(pool) // 2:]
    k = pool[0]
    alone = trial(base + ["--prefetch", "0", "--indices", str(k)])
    say(f"  bisected to case {k} (alone: {alone['status']}): {describe_case(cases[k])}")
    for s in STRIPS[1:]:
        say(f"    without {s:16s}: {trial(base + ['--prefetch', '0', '--indices', str(k), '--strip', s])['status']}")
    return 0


# ---- swizzled boxes narrower than the swizzle span ------------------------------------------------
def narrow_probe_cases():
    """Small swizzled boxes whose rows are narrower than the span: every narrow row width of each
    mode, element sizes 1..8, two destinations, one box hanging off an edge, one of rank 1."""
    rng = np.random.default_rng(7)
    out = []
    dts = ("uint8", "float16", "float32", "float64")
    k = 0
    for swz in ("32B", "64B", "128B"):
        span = swizzle_width(swz)
        for inner in range(16, span, 16):
            dt = dts[k % 4]
            elem = element_type(dt).bytes
            k += 1
            shape = (inner // elem * 3, 9)
            t = TensorMap(dt, shape, (inner // elem, 5), swizzle=swz)
            g = rng.integers(0, 256, size=t.global_extent_bytes, dtype=np.uint8)
            for coords, off in (((inner // elem, 2), 0), ((2 * inner // elem, 6), 384)):
                out.append(LoadCase(t, g, coords, smem_offset=off))
    t = TensorMap("uint16", (40,), (8,), swizzle="64B")
    out.append(LoadCase(t, rng.integers(0, 256, size=80, dtype=np.uint8), (16,), smem_offset=128))
    t = TensorMap("float32", (200,), (32,), swizzle="128B")
    out.append(LoadCase(t, rng.integers(0, 256, size=800, dtype=np.uint8), (64,), smem_offset=256))
    t = TensorMap("float32", (10,), (4,))
    out.append(LoadCase(t, rng.integers(0, 256, size=40, dtype=np.uint8), (4,), smem_offset=0))
    return out


def narrow_child(argv) -> int:
    """Child: run narrow_probe_cases() --which (comma list) one per launch with expect_tx = the box
    bytes ('box') or rows x span ('footprint'); one JSON line."""
    which = [int(x) for x in argv[0].split(",")]
    mode = argv[1]
    cases = narrow_probe_cases()
    out = []
    for i in which:
        c = cases[i]
        c.expect_tx = c.tmap.box_bytes if mode == "box" else math.prod(c.tmap.box_counts[1:]) * max(
            swizzle_width(c.tmap.swizzle), c.tmap.inner_box_bytes)
        r = launch_cases([c])
        w = r.windows[0]
        changed = np.flatnonzero(w != background(w.size))
        out.append({"i": i, "done": bool(r.done[0]), "err": r.errors[0],
                    "timeout": str(r.timeout).splitlines()[0][:120] if r.timeout else None,
                    "exact": bool(np.array_equal(w, c.model_window())), "diag": diagnose_window(c, w),
                    "changed": int(changed.size), "last": int(changed.max()) if changed.size else None})
    print(json.dumps({"status": "ran", "results": out}), flush=True)
    return 0


def probe_narrow_main(argv=None, say=print) -> int:
    """Ask the GPU how a swizzled box narrower than its span lands in SMEM and what it counts:
    each case with expect_tx = box bytes and = rows x span, windows with >= 1 KiB of margin,
    one child process per (swizzle, tx) group (a fault costs only that group)."""
    cases = narrow_probe_cases()
    say("probe: swizzled boxes narrower than the swizzle span (and rank 1); model: rows one span apart, "
        f"gaps untouched, tx = box bytes (NARROW_SWIZZLE_PITCH={NARROW_SWIZZLE_PITCH!r}, "
        f"NARROW_SWIZZLE_TX={NARROW_SWIZZLE_TX!r})")
    groups = {}
    for i, c in enumerate(cases):
        groups.setdefault(c.tmap.swizzle, []).append(i)
    got = {}
    for swz, idx in groups.items():
        for mode in ("box", "footprint"):
            r = child_json(["narrow", ",".join(map(str, idx)), mode], timeout=120, module=THIS_MODULE)
            if r.get("status") != "ran":
                say(f"  {swz} cases {idx}, expect_tx = {mode}: the child crashed: {r.get('error')}")
                continue
            for x in r["results"]:
                got[(x["i"], mode)] = x
    for i, c in enumerate(cases):
        t = c.tmap
        say(f"  [{i:2d}] {t.dtype:8s} swizzle {t.swizzle:4s} rows of {t.inner_box_bytes:3d} B x "
            f"{math.prod(t.box_counts[1:])}, coords {tuple(c.coords)}, SMEM +{c.smem_offset}: box {t.box_bytes} B, "
            f"rows x span {math.prod(t.box_counts[1:]) * max(swizzle_width(t.swizzle), t.inner_box_bytes)} B")
        for mode in ("box", "footprint"):
            x = got.get((i, mode))
            if x is None:
                say(f"       expect_tx = {mode:9s}: no result (child crashed)")
                continue
            say(f"       expect_tx = {mode:9s}: handshake done={x['done']}, window == model: {x['exact']}; "
                f"{x['changed']} bytes changed (last at {x['last']}); {x['diag']}"
                + (f"; driver: {x['err']}" if x["err"] else "") + (f"; {x['timeout']}" if x["timeout"] else ""))
    return 0


COMMANDS = {
    "diagnose": Subcommand(THIS_MODULE, "diagnose_main", "random cases per prefetch mode, features stripped, bisected"),
    "subset": Subcommand(THIS_MODULE, "subset_main", "one group of random cases in this process (a child of diagnose)"),
    "narrow": Subcommand(THIS_MODULE, "narrow_child", "narrow swizzled boxes I,J,... box|footprint (a child of the probe)"),
}


def main(argv=None) -> int:
    return dispatch(COMMANDS, argv, __doc__, f"python -m {THIS_MODULE}")


if __name__ == "__main__":
    raise SystemExit(main())
