"""The TMA store on a real GPU: random stores and reduce-adds, whole epilogues, the bounded wait, a
tf32 probe and the epilogue without its proxy fence, each compared byte for byte with
`bwlab.epilogue`'s model; and the store bandwidth benchmark.

    python -m bwlab.validate store --cases 500 --seed 0 --out FILE
    python -m bwlab.bench tma_store --out FILE

A fault on the GPU (illegal instruction, misaligned address) poisons the CUDA context for the rest
of the process, so the validation cases run in child processes (`python -m bwlab.checks.store cases
...`): a child stops at the first fault, reports it against the case that caused it, and the parent
starts a new child for the cases after it.
"""
from __future__ import annotations

import math

import numpy as np

from ..epilogue import (D_DTYPES, REDUCE_ADD_DTYPES, Epilogue, EpilogueProblem, TmaStore,
                        bank_patterns, epilogue_model, float32_to_bits, measure_store_cycles,
                        run_epilogue, run_tma_store, smem_box_footprint, tma_store_model)
from ..epilogue.store import store_geometry
from ..hw.dtypes import element_type, tf32_round
from ..hw.swizzle import MODES, row_bytes
from ..util import ceil_div, round_up
from .common import EXIT_PASS, Command, padded_strides

STORE_DTYPES = ("uint8", "int8", "uint16", "int16", "float16", "bfloat16", "uint32", "int32",
                "float32", "uint64", "int64", "float64")
MAX_CASE_BOX_BYTES = 32 * 1024


def _finite_bits(rng, dtype: str, n: int) -> np.ndarray:
    """n random finite values of a float dtype as raw bytes (any bits for integer dtypes)."""
    eb = element_type(dtype).bytes
    if dtype in ("float32", "float16", "bfloat16"):
        scale = 8.0 if dtype == "float16" else 2.0 ** 20
        x = (rng.standard_normal(n) * np.exp2(rng.uniform(-12, np.log2(scale), n))).astype(np.float32)
        bits = float32_to_bits(x, dtype)
        return np.ascontiguousarray(bits).view(np.uint8)
    return rng.integers(0, 256, n * eb, dtype=np.uint8)


def random_store_case(rng, dtype: str, rank: int, swizzle: str, op: str = "store") -> TmaStore:
    """A random valid TMA store: odd shapes with padded rows, boxes inside, over the far edges or
    wholly past them, every SMEM offset mod 2048 that is a multiple of 128, base addresses at every
    multiple of 16 mod 256. Stores move random bytes (NaN patterns included); reduce-adds use
    finite values so that the float sums are defined."""
    from ..tma import TensorMap
    elem = element_type(dtype).bytes
    span = 0 if swizzle == "none" else row_bytes(swizzle)
    max_inner = span if span else min(256 * elem, 512)
    inner_bytes = 16 * int(rng.integers(1, max_inner // 16 + 1))
    box = [inner_bytes // elem]
    smem_row = max(inner_bytes, span)  # the SMEM footprint of a row (smem_box_pitch)
    budget = int(np.exp(rng.uniform(np.log(smem_row), np.log(MAX_CASE_BOX_BYTES))))
    for _ in range(1, rank):
        room = max(1, budget // (smem_row * math.prod(box[1:])))
        box.append(int(rng.integers(1, min(room, 256) + 1)) if rng.random() < 0.9 else 1)
    shape = [int(rng.integers(1, max(2, min(2 * b + 7, 600 if i == 0 else 300)) + 1))
             for i, b in enumerate(box)]
    while math.prod(shape) * elem > (1 << 20):
        k = int(np.argmax(shape))
        shape[k] = max(1, shape[k] // 2)
    strides = padded_strides(rng, shape, elem)
    tmap = TensorMap(dtype, shape, box, global_strides=strides, swizzle=swizzle)
    coords = []
    inside = rng.random() < 0.35
    for i in range(rank):
        q = 16 // elem if i == 0 else 1  # dimension 0 starts on a 16-byte boundary
        r = 0.0 if inside else rng.random()
        if r < 0.35 or shape[i] <= 1:
            c = int(rng.integers(0, max(1, shape[i] - box[i] + 1)))
        elif r < 0.93:
            c = int(rng.integers(max(0, shape[i] - box[i]), shape[i]))  # over the far edge
        else:
            c = int(rng.integers(shape[i], shape[i] + 8))  # wholly outside: writes nothing
        coords.append(c // q * q)
    smem_address = 128 * int(rng.integers(0, 16))
    win = round_up(smem_address + smem_box_footprint(tmap), 128)
    n_gmem = store_geometry(tmap).extent + 64  # 64 bytes after the tensor must stay untouched
    if op == "add":
        smem = _finite_bits(rng, dtype, win // elem)
        gmem = _finite_bits(rng, dtype, ceil_div(n_gmem, elem))
    else:
        smem = rng.integers(0, 256, win, dtype=np.uint8)
        gmem = rng.integers(0, 256, n_gmem, dtype=np.uint8)
    return TmaStore(gmem, tmap, tuple(coords), smem, smem_address, op, window_start=0,
                    gmem_offset=16 * int(rng.integers(0, 16)))


def random_store_cases(n: int, seed: int = 0, op: str = "store"):
    rng = np.random.default_rng(seed)
    dts = STORE_DTYPES if op == "store" else REDUCE_ADD_DTYPES
    # Ranks 1-5. (Rank 1 was once left out: TensorMap.encode passed an empty stride list that
    # cuda-bindings turned into NULL, which the driver refused; bwlab.tma fixed that.)
    combos = [(d, r, s) for d in dts for r in range(1, 6) for s in MODES]
    order = rng.permutation(len(combos))
    return [random_store_case(rng, *combos[order[i % len(combos)]], op=op) for i in range(n)]


def random_epilogue_problem(rng) -> EpilogueProblem:
    """A random epilogue: any D dtype and swizzle, tiles of 8..128 rows, sizes that leave partial
    tiles at the far edges, padded row pitches, with or without C, store or reduce-add."""
    dtype = str(rng.choice(list(D_DTYPES)))
    eb = element_type(dtype).bytes
    swizzle = str(rng.choice(list(MODES)))
    if swizzle == "none":
        bn = int(rng.choice([64, 128, 256])) // eb  # one box spanning the whole tile row
    else:
        bn = (row_bytes(swizzle) // eb) * int(rng.integers(1, 5))
    bm = int(rng.choice([8, 16, 32, 64, 96, 128]))  # x 32..128-byte box rows: 128-byte multiples
    M = int(rng.integers(1, 3 * bm + 1))
    N = int(rng.integers(1, 3 * bn + 1))
    reduce_add = bool(rng.random() < 0.25)
    beta = 0.0 if reduce_add or rng.random() < 0.4 else float(rng.choice([0.5, -1.0, 1.25, 3.0]))
    alpha = float(rng.choice([1.0, -0.75, 2.5, 0.1]))
    ld = None
    if rng.random() < 0.5:
        ld = round_up((N + int(rng.integers(1, 20))) * eb, 16) // eb
    return EpilogueProblem(M, N, dtype, bm=bm, bn=bn, swizzle=swizzle, alpha=alpha, beta=beta,
                           reduce_add=reduce_add, smem_offset=128 * int(rng.integers(0, 8)), ld=ld)


_FAULT_MARKERS = ("cudaError", "CUDA_ERROR", "CUDARuntimeError", "CUDADriverError")


def _is_fault(e: Exception) -> bool:
    text = f"{type(e).__name__}: {e}"
    return any(m in text for m in _FAULT_MARKERS)


def _child_cases(kind: str, seed: int, count: int):
    """The cases of one kind: `TmaStore`s for 'store' / 'add', `Epilogue`s for 'epilogue'."""
    if kind == "store":
        return random_store_cases(count, seed, "store")
    if kind == "add":
        return random_store_cases(count, seed + 1, "add")
    rng = np.random.default_rng(seed + 2)
    out = []
    for _ in range(count):
        p = random_epilogue_problem(rng)
        out.append(Epilogue(p, *p.random_inputs(rng)))
    return out


def _child_main(argv) -> int:
    """python -m bwlab.checks.store cases --kind store|add|epilogue --seed S --count N --indices i,j,..
    One JSON line per case: exact / mismatch / refused (the driver would not encode the map) / fault."""
    import argparse
    import json
    ap = argparse.ArgumentParser(prog="python -m bwlab.checks.store cases")
    ap.add_argument("--kind", required=True, choices=["store", "add", "epilogue", "extras"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--indices", default="")
    ap.add_argument("--fence-repeats", type=int, default=30)
    a = ap.parse_args(argv)
    if a.kind == "extras":
        return _extras(a.seed, a.fence_repeats)
    cases = _child_cases(a.kind, a.seed, a.count)
    for i in [int(x) for x in a.indices.split(",") if x]:
        try:
            res = cases[i].check()  # run() on the GPU, compared with model()
            detail = "" if res.ok else str(res).replace("\n", " |")
            rec = {"i": i, "status": "exact" if res.ok else "mismatch", "detail": detail}
        except RuntimeError as e:
            if "cuTensorMapEncodeTiled" in str(e):  # a host-side refusal: the context is fine
                rec = {"i": i, "status": "refused", "detail": f"{type(e).__name__}: {e}"}
            elif _is_fault(e):
                print(json.dumps({"i": i, "status": "fault", "detail": f"{type(e).__name__}: {e}"}), flush=True)
                return 3
            else:
                rec = {"i": i, "status": "error", "detail": f"{type(e).__name__}: {e}"}
        except Exception as e:  # noqa: BLE001 - reported, counted as a failure
            if _is_fault(e):
                print(json.dumps({"i": i, "status": "fault", "detail": f"{type(e).__name__}: {e}"}), flush=True)
                return 3
            rec = {"i": i, "status": "error", "detail": f"{type(e).__name__}: {e}"}
        print(json.dumps(rec), flush=True)
    return 0


def _run_child(args, timeout=240):
    import json
    import subprocess
    import sys
    try:
        r = subprocess.run([sys.executable, "-m", "bwlab.checks.store", "cases", *args], capture_output=True,
                           text=True, timeout=timeout)
        out, err, rc = r.stdout, r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout", -1
    recs = []
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass
    tail = [x for x in err.strip().splitlines() if x.strip()]
    return recs, rc, (tail[-1] if tail else "")


def _run_kind(kind: str, count: int, seed: int, batch: int = 100, max_faults: int = 20) -> dict:
    """Every case of one kind, in children; returns {index: record}."""
    results, pending, faults = {}, list(range(count)), 0
    while pending:
        chunk = pending[:batch]
        recs, rc, last = _run_child(["--kind", kind, "--seed", str(seed), "--count", str(count),
                                     "--indices", ",".join(map(str, chunk))])
        for r in recs:
            results[r["i"]] = r
            faults += r["status"] == "fault"
        done = [i for i in chunk if i in results]
        if rc != 0 and len(done) < len(chunk) and not any(results[i]["status"] == "fault" for i in done):
            # died without naming a case: blame the first case it did not finish
            k = next(i for i in chunk if i not in results)
            results[k] = {"i": k, "status": "fault", "detail": f"child exited {rc}: {last}"}
            faults += 1
        pending = [i for i in pending if i not in results]
        if faults >= max_faults:
            for i in pending:
                results[i] = {"i": i, "status": "not run", "detail": f"stopped after {faults} faults"}
            break
    return results


def _report_kind(label, cases_desc, results, say) -> int:
    from collections import Counter
    st = Counter(r["status"] for r in results.values())
    shown = 0
    for i in sorted(results):
        r = results[i]
        if r["status"] != "exact" and shown < 25:
            say(f"  {label} case {i} {r['status']}: {r['detail']} :: {cases_desc(i)}")
            shown += 1
    run = len(results) - st.get("refused", 0)
    bad = run - st.get("exact", 0)
    say(f"{label}: {st.get('exact', 0)}/{run} run cases bit-exact; {dict(sorted(st.items()))}")
    if st.get("refused"):
        say(f"  ({st['refused']} generated tensor maps were refused by cuTensorMapEncodeTiled and not run)")
    return bad


def _extras(seed: int, fence_repeats: int) -> int:
    """Bounded wait, tf32 probe, the epilogue without the fence: printed as report lines."""
    import json
    import time

    from ..runtime import MbarrierTimeout
    from ..tma import TensorMap

    fails = 0

    def say(s):
        print(json.dumps({"line": s}), flush=True)

    rng = np.random.default_rng(seed + 5)
    p = EpilogueProblem(64, 64, "float32", bm=64, bn=32, swizzle="128B", beta=1.0)
    acc, c, d0 = p.random_inputs(rng)
    t0 = time.perf_counter()
    try:
        run_epilogue(p, acc, c, d0, extra_tx=True)
        say("bounded wait: NO MbarrierTimeout with a wrong expect_tx (failure)")
        fails += 1
    except MbarrierTimeout as e:
        dt = time.perf_counter() - t0
        say(f"bounded wait: expect_tx 16 bytes too high on the C barrier -> MbarrierTimeout after "
            f"{dt:.3f} s (barrier '{e.barrier}', expected {e.expected_tx} B)")
        fails += dt > 1.0
    ok = np.array_equal(run_epilogue(p, acc, c, d0), epilogue_model(p, acc, c, d0))
    fails += not ok
    say(f"  next launch in the same process: {'exact' if ok else 'MISMATCH'}")

    raw_hits = rounded_hits = 0
    def with_dtype(t, dtype):
        return TensorMap(dtype, t.global_shape, t.box_shape, global_strides=t.global_strides,
                         swizzle=t.swizzle)

    probes = [c for c in random_store_cases(48, seed + 4, "store")
              if element_type(c.tmap.dtype).bytes == 4][:12]
    for c in probes:
        t32 = with_dtype(c.tmap, "tf32")
        try:
            got = run_tma_store(c.gmem, t32, c.coords, c.smem, c.smem_address, window_start=0)
        except RuntimeError as e:
            if _is_fault(e) and "cuTensorMapEncodeTiled" not in str(e):
                raise
            continue
        t_u = with_dtype(c.tmap, "uint32")
        raw = tma_store_model(c.gmem, t_u, c.coords, c.smem, c.smem_address, window_start=0)
        rounded = tf32_round(np.ascontiguousarray(c.smem).view("<u4")).view(np.uint8)
        rnd = tma_store_model(c.gmem, t_u, c.coords, rounded, c.smem_address, window_start=0)
        raw_hits += np.array_equal(got, raw)
        rounded_hits += np.array_equal(got, rnd)
    say(f"tf32 probe ({len(probes)} stores of random bits through a TFLOAT32 map): GMEM equals the raw "
        f"SMEM bits in {raw_hits}, the tf32-rounded bits in {rounded_hits} (observation; the model "
        "refuses tf32 stores)")

    p = EpilogueProblem(2048, 2048, "float32", bm=128, bn=32, swizzle="128B", alpha=1.0)
    acc, _, d0 = p.random_inputs(np.random.default_rng(seed + 3))
    want = epilogue_model(p, acc, None, d0)
    for fence in (True, False):
        bad_runs = bad_elems = 0
        for _ in range(fence_repeats):
            got = run_epilogue(p, acc, None, d0, fence=fence)
            n = int(np.sum(got != want))
            bad_runs += n > 0
            bad_elems += n
        say(f"{'with' if fence else 'WITHOUT'} fence.proxy.async: {bad_runs}/{fence_repeats} runs of a "
            f"{p.M}x{p.N} {p.dtype} epilogue ({p.tiles[0] * p.tiles[1]} CTAs) differed from the model "
            f"({bad_elems} elements in all)")
        if fence:
            fails += bad_runs > 0
    say("  (the run without the fence is an observation on this GPU and this kernel, not a guarantee "
        "either way)")
    print(json.dumps({"fails": int(fails)}), flush=True)
    return 0


def validate_main(argv=None) -> int:
    import time
    from collections import Counter

    cmd = Command("validate store", "TMA stores, reduce-adds and whole epilogues on the GPU, "
                                    "GMEM compared byte for byte with bwlab.epilogue's model", stage="store")
    cmd.add("--cases", type=int, default=500, help="random TMA stores")
    cmd.add("--reduce-cases", type=int, default=120, help="random TMA reduce-adds")
    cmd.add("--epilogue-cases", type=int, default=60, help="random whole epilogues")
    cmd.add("--fence-repeats", type=int, default=30,
            help="runs of a 2048 x 2048 epilogue with and without the proxy fence")
    cmd.add("--seed", type=int, default=0)
    args, say = cmd.start(argv)
    total_fail = 0
    by = lambda cs, f: dict(sorted(Counter(f(c) for c in cs).items()))  # noqa: E731
    say("each kind runs in child processes: a GPU fault is reported against its case and the "
        "cases after it run in a fresh process")

    t0 = time.perf_counter()
    cases = random_store_cases(args.cases, args.seed, "store")
    res = _run_kind("store", args.cases, args.seed)
    total_fail += _report_kind("TMA store", lambda i: cases[i].describe(), res, say)
    say(f"  compared: the whole GMEM buffer (tensor, row padding, 64 bytes after it) plus 256-byte "
        f"guards on each side; {time.perf_counter() - t0:.1f} s")
    say(f"  dtypes: {by(cases, lambda c: c.tmap.dtype)}")
    say(f"  ranks: {by(cases, lambda c: len(c.tmap.global_shape))}; swizzles: {by(cases, lambda c: c.tmap.swizzle)}")
    say(f"  SMEM address mod 1024: {by(cases, lambda c: c.smem_address % 1024)}")
    say(f"  edge boxes (over the far edge or wholly outside): {sum(c.edge for c in cases)}; rows not a "
        f"multiple of 16 bytes: {sum(_row_bytes(c.tmap) % 16 != 0 for c in cases)}; "
        f"base address offsets mod 256: {len(by(cases, lambda c: c.gmem_offset))} distinct")

    t0 = time.perf_counter()
    rcases = random_store_cases(args.reduce_cases, args.seed + 1, "add")
    res = _run_kind("add", args.reduce_cases, args.seed)
    total_fail += _report_kind("TMA reduce-add", lambda i: rcases[i].describe(), res, say)
    say(f"  dtypes {by(rcases, lambda c: c.tmap.dtype)}; edge boxes {sum(c.edge for c in rcases)}; "
        f"{time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    probs = [x.problem for x in _child_cases("epilogue", args.seed, args.epilogue_cases)]
    res = _run_kind("epilogue", args.epilogue_cases, args.seed)
    say("whole epilogues: acc -> st.shared.v4 -> fence -> TMA store / reduce-add, C by TMA load:")
    total_fail += _report_kind("epilogue", lambda i: repr(probs[i]), res, say)
    say(f"  dtypes {by(probs, lambda p: p.dtype)}; swizzles {by(probs, lambda p: p.swizzle)}; "
        f"with C {sum(p.use_c for p in probs)}; reduce-add {sum(p.reduce_add for p in probs)}; "
        f"edge tiles in {sum(p.M % p.bm != 0 or p.N % p.bn != 0 for p in probs)} problems; "
        f"{time.perf_counter() - t0:.1f} s")

    recs, rc, last = _run_child(["--kind", "extras", "--seed", str(args.seed),
                                 "--fence-repeats", str(args.fence_repeats)], timeout=400)
    got_fails = None
    for r in recs:
        if "line" in r:
            say(r["line"])
        elif "fails" in r:
            got_fails = r["fails"]
    if got_fails is None:
        say(f"extras (bounded wait, tf32 probe, fence experiment) did not finish: exit {rc}: {last}")
        total_fail += 1
    else:
        total_fail += got_fails
    return cmd.finish(total_fail, "result")


def _row_bytes(tmap) -> int:
    return int(tmap.global_shape[0]) * element_type(tmap.dtype).bytes


STORE_GOAL = 0.95   # TMA store / cupy fill


def store_stream_launch(mod, dst, per_sm: int, sm_count: int):
    """tma_store_stream over all of `dst` (R x C float32): every CTA stores one 32 KiB box (32 fp32 x
    256 rows, 128B swizzle) to every gridDim-th box position. Returns (call, box bytes)."""
    from ..runtime import launch, encode_tensor_map, tensor_map_arg
    from ..tma import TensorMap
    R, C = dst.shape
    box_w, box_h = 32, 256
    tmap = TensorMap("float32", (C, R), (box_w, box_h), swizzle="128B")
    box_bytes = box_w * box_h * 4
    a = (tensor_map_arg(encode_tensor_map(tmap, dst.data.ptr)), np.uint32(box_bytes), np.uint32(box_w), np.uint32(box_h),
         np.uint32(C // box_w), np.uint32((C // box_w) * (R // box_h)))
    grid, smem = sm_count * per_sm, box_bytes + 1024
    launch(mod, "tma_store_stream", (grid,), (128,), a, shared_mem=smem)   # once, bounded waits checked
    fn = mod.get_function("tma_store_stream")
    return lambda: fn((grid,), (128,), a, shared_mem=smem)


def _store_sustained(args, say) -> int:
    """The store rows under the sustained protocol: cupy's fill is the baseline; TMA store at 1 and 2
    CTAs per SM and st.global.v4 (8 x 256 threads per SM) the candidates; each checked before timing."""
    import cupy as cp

    from .. import device
    from ..compile import load_module
    from ..gemm import protocol as P
    from .clocks import ClockLog
    from . import sustained as S
    info = device.gpu_info()
    R, C = args.rows, args.cols
    nbytes = R * C * 4
    proto = P.Protocol(block_s=args.block_s, rounds=args.rounds)
    sets = P.operand_sets(nbytes, info.l2_bytes, proto.l2_multiple, at_least=1)
    clocks = ClockLog(cp.cuda.Device().pci_bus_id).start()
    say(f"GPU {info.name}, {info.sm_count} SMs, L2 {info.l2_bytes >> 20} MiB; D = {R} x {C} float32 = "
        f"{nbytes / 2**20:.0f} MiB, {sets} buffer(s) rotated; clock log: {clocks.source}")
    say(proto.describe().replace("library", "baseline").replace("of A and B", "of D"))
    say("baseline: cupy fill (write only); GB/s counts the bytes written")
    mod = load_module("tma_store")
    dsts = [cp.empty((R, C), cp.float32) for _ in range(sets)]
    fails = 0
    try:
        tma = {}
        for per_sm in (1, 2):
            calls = [store_stream_launch(mod, d, per_sm, info.sm_count) for d in dsts]
            # the kernel writes box-row words (col, row, 1.0f, col ^ 0x5A5A5A5A) from column 4 on
            ok = all(bool(cp.all(d.view(cp.uint32)[0, 4:8] == cp.asarray([1, 0, 0x3F800000, 1 ^ 0x5A5A5A5A],
                                                                          cp.uint32))) for d in dsts)
            say(f"  TMA store {per_sm} CTA/SM: the first box row holds what the kernel wrote: {ok}")
            fails += not ok
            tma[per_sm] = calls
        fn = mod.get_function("st_global_stream")
        n16, grid = np.uint64(nbytes // 16), info.sm_count * 8
        base = S.Candidate("cupy fill", [lambda d=d: d.fill(0.0) for d in dsts], nbytes)
        cands = [S.Candidate(f"TMA store, {k} CTA/SM ({k * info.sm_count} CTAs)", v, nbytes) for k, v in tma.items()]
        cands.append(S.Candidate(f"st.global.v4, 8 x 256-thread CTAs/SM",
                                 [lambda d=d: fn((grid,), (256,), (d, n16)) for d in dsts], nbytes))
        rs = S.run(base, cands, proto, say, clocks=clocks, tag="store")
    finally:
        clocks.stop()
    best = max(r.summary.ratio for r in rs[1:] if r.name.startswith("TMA"))
    say(f"best TMA store / cupy fill {best:.3f} (goal >= {STORE_GOAL}: {'reached' if best >= STORE_GOAL else 'not reached'})")
    say("the epilogue_tile rows and the st.shared cycles: --protocol quick (cycles are clock64 counts inside "
        "one kernel, not a speed against a library: the protocol does not apply to them)")
    return fails


def bench_main(argv=None) -> int:
    cmd = Command("bench tma_store", "TMA store bandwidth vs st.global.v4 and cupy, same run",
                  stage="store")
    cmd.add("--rows", type=int, default=8192)
    cmd.add("--cols", type=int, default=8192)
    cmd.add("--repeat", type=int, default=20)
    cmd.add("--warmup", type=int, default=3)
    cmd.add("--protocol", choices=["sustained", "quick"], default="sustained",
            help="sustained: bwlab.gemm.protocol (warm-up until the SM clock settles, alternating blocks of "
                 "seconds vs cupy fill, NVML clocks); quick: median of --repeat single calls, every row")
    cmd.add("--block-s", type=float, default=2.0, help="sustained: seconds per block")
    cmd.add("--rounds", type=int, default=2, help="sustained: rounds of alternating blocks")
    args, say = cmd.start(argv)
    if args.protocol == "sustained":
        return cmd.finish(_store_sustained(args, say), "tma_store")

    import cupy as cp

    from .. import device
    from ..compile import load_module
    from ..epilogue.runner import EPILOGUE_BARRIERS, DT_CODE_OF, swizzle_bits
    from ..runtime import bench, launch, encode_tensor_map, tensor_map_arg
    from ..tma import TensorMap
    info = device.gpu_info()
    R, C = args.rows, args.cols
    nbytes = R * C * 4
    say(f"GPU {info.name}, {info.sm_count} SMs; D = {R} x {C} float32 = {nbytes / 2**20:.0f} MiB; "
        f"CUDA events, {args.warmup} warm-up, median of {args.repeat}")
    mod = load_module("tma_store")
    dst = cp.empty((R, C), cp.float32)
    src = cp.ones((R, C), cp.float32)
    rows = []

    def run(name, fn, moved):
        r = bench(name, fn, args.warmup, args.repeat, moved)
        rows.append(r)
        say(r.row())

    # TMA store: every CTA stores one 32 KiB box (32 fp32 x 256 rows, 128B swizzle) over and over.
    box_w, box_h = 32, 256
    tmap = TensorMap("float32", (C, R), (box_w, box_h), swizzle="128B")
    arg = tensor_map_arg(encode_tensor_map(tmap, dst.data.ptr))
    boxes_x, boxes_total = C // box_w, (C // box_w) * (R // box_h)
    box_bytes = box_w * box_h * 4
    smem = box_bytes + 1024
    for per_sm in (1, 2, 4):
        grid = info.sm_count * per_sm
        a = (arg, np.uint32(box_bytes), np.uint32(box_w), np.uint32(box_h), np.uint32(boxes_x),
             np.uint32(boxes_total))
        launch(mod, "tma_store_stream", (grid,), (128,), a, shared_mem=smem)
        fn = mod.get_function("tma_store_stream")
        run(f"TMA store, {per_sm} CTA/SM ({grid} CTAs)",
            lambda fn=fn, grid=grid, a=a: fn((grid,), (128,), a, shared_mem=smem), nbytes)
    ok = bool(cp.all(dst.view(cp.uint32)[0, 4:8] == cp.asarray([1, 0, 0x3F800000, 1 ^ 0x5A5A5A5A],
                                                                cp.uint32)))
    say(f"  (check: the first box row holds what the kernel wrote: {ok})")
    fn = mod.get_function("st_global_stream")
    n16 = np.uint64(nbytes // 16)
    for per_sm in (4, 8):
        grid = info.sm_count * per_sm
        run(f"st.global.v4, {per_sm} x 256-thread CTAs/SM", lambda grid=grid: fn((grid,), (256,), (dst, n16)),
            nbytes)
    run("cupy fill (write only)", lambda: dst.fill(0.0), nbytes)
    run("cupy copy (read + write, bytes counted twice)", lambda: cp.copyto(dst, src), 2 * nbytes)
    # A whole epilogue: acc read from GMEM (what tcgen05.ld would hold), D written by TMA store.
    for dtype, bn in (("float32", 32), ("bfloat16", 64)):
        p = EpilogueProblem(R, C, dtype, bm=128, bn=bn, swizzle="128B", alpha=1.0)
        acc = cp.ones(p.acc_shape, cp.float32)
        d = cp.zeros(p.buffer_shape, cp.uint32 if dtype == "float32" else cp.uint16)
        tm = p.tensor_map()
        a = (tensor_map_arg(encode_tensor_map(tm, d.data.ptr)), tensor_map_arg(encode_tensor_map(tm, d.data.ptr)), acc,
             np.uint32(p.acc_shape[1]), np.float32(1.0), np.float32(0.0), np.uint32(0),
             np.uint32(DT_CODE_OF[dtype]), np.uint32(swizzle_bits("128B")), np.uint32(p.bm), np.uint32(p.bn),
             np.uint32(p.tile.box_cols), np.uint32(0))
        g = (p.tiles[1], p.tiles[0])
        launch(mod, "epilogue_tile", g, (128,), a, shared_mem=p.tile_smem_bytes() + 1024,
               barrier_names=EPILOGUE_BARRIERS)
        fe = mod.get_function("epilogue_tile")
        moved = R * C * 4 + R * C * element_type(dtype).bytes
        run(f"epilogue_tile {dtype} D (acc read + D write)",
            lambda fe=fe, g=g, a=a, p=p: fe(g, (128,), a, shared_mem=p.tile_smem_bytes() + 1024), moved)
    say("")
    say("st.shared.v4 cost per warp instruction (4 warps, clock64), beside the bank model:")
    for name, (addr, fronts) in bank_patterns().items():
        cyc = measure_store_cycles(addr)
        say(f"  {name:<46s} model {fronts:3d} wavefronts   measured {cyc:6.2f} cycles")
    say.save(args.out)
    return EXIT_PASS


if __name__ == "__main__":
    import sys as _sys
    if len(_sys.argv) > 1 and _sys.argv[1] == "cases":
        raise SystemExit(_child_main(_sys.argv[2:]))
    print("usage: python -m bwlab.checks.store cases --kind store|add|epilogue|extras ...")
    raise SystemExit(2)


