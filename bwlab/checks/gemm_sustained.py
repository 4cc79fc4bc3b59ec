"""`python -m bwlab.bench gemm --protocol sustained`: the ladder against cuBLAS under
bwlab.gemm.protocol (its docstring states the protocol; the report prints it with the numbers).

For each shape: operand sets enough to exceed 2 x L2, the f32 reference of set 0, the library's C and
every step's C checked against it BEFORE anything is timed (a step that fails is reported and not
timed), a warm-up of library blocks until the SM clock settles, then rounds of alternating sustained
blocks (library, step 1, library, step 2, ..., library) while NVML samples the SM clock, the power and
the throttle reasons.

`--clock-stamps` (Hopper): the clock the SMs count during each step's own blocks. After every sample the
block launches the same step once more, built with -DGEMM_STAMPS on the next operand set, outside the
timed samples but back to back with them (no gap on the GPU), and copies its CTA 0's stamps aside in the
stream; clock64 over %globaltimer of each copy (`timeline.stamp_mhz`) is that SM's clock at that moment.
The report gives their median (and range) beside NVML's reading; `python -m bwlab.timing hopper` takes it
as the rung's clock.
"""
from __future__ import annotations

import json
import time

from ..gemm import protocol as P
from .clocks import ClockLog, summarize

__all__ = ["sustained"]


def _library(sets, torch_ok):
    """(name, [call per operand set], C of set 0 as uint16 CuPy): torch.matmul bf16 (cuBLAS) when
    torch is installed, else cuBLAS gemmEx through CuPy."""
    import cupy as cp
    import numpy as np
    m, k = sets[0][0].shape
    n = sets[0][1].shape[0]
    if torch_ok:
        import torch
        calls, outs = [], []
        for a, b in sets:
            ta = torch.from_dlpack(a).view(torch.bfloat16)
            tb = torch.from_dlpack(b).view(torch.bfloat16)
            tc = torch.empty((m, n), dtype=torch.bfloat16, device=ta.device)
            calls.append(lambda ta=ta, tb=tb, tc=tc: torch.mm(ta, tb.t(), out=tc))
            outs.append(tc)
        c0 = cp.from_dlpack(outs[0].view(torch.int16)).view(cp.uint16)
        return f"torch.matmul bf16 (cuBLAS, torch {torch.__version__})", calls, c0
    from cupy.cuda import cublas
    handle = cp.cuda.device.get_cublas_handle()
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    alpha, beta = np.array(1.0, np.float32), np.array(0.0, np.float32)
    calls, outs = [], []
    for a, b in sets:
        c = cp.empty((m, n), dtype=cp.uint16)

        def call(a=a, b=b, c=c):
            cublas.gemmEx(handle, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, n, m, k, alpha.ctypes.data,
                          b.data.ptr, 14, k, a.data.ptr, 14, k, beta.ctypes.data, c.data.ptr, 14, n, 68, -1)
        calls.append(call)
        outs.append(c)
    return "cuBLAS bf16 (cupy.cuda.cublas.gemmEx)", calls, outs[0]


def time_block(calls, seconds, per_sample, start=0, between=None):
    """Launch calls[(start + i) % len] back to back for `seconds` of host time; CUDA events every
    `per_sample` launches (one chain, no gap between samples). Returns per-launch ms of each sample.
    `between`: called after each sample's closing event and before the next sample's opening one (its
    launches run back to back with the samples but are in none of them)."""
    import cupy as cp
    spans = []   # (opening event, closing event) of each sample
    opening = cp.cuda.Event()
    opening.record()
    i, t0 = start, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(per_sample):
            calls[i % len(calls)]()
            i += 1
        closing = cp.cuda.Event()
        closing.record()
        spans.append((opening, closing))
        if between is not None:
            between()
            opening = cp.cuda.Event()
            opening.record()
        else:
            opening = closing
        if len(spans) > 2:
            spans[-3][1].synchronize()   # stay at most two samples ahead of the GPU
    if spans:
        spans[-1][1].synchronize()
    return [cp.cuda.get_elapsed_time(a, b) / per_sample for a, b in spans]


class StampClock:
    """The SMs' clock during a step's blocks (`--clock-stamps`): call it between samples; `take()` returns
    the MHz of every stamped launch since the last `take` (clock64 / %globaltimer of its CTA 0)."""

    def __init__(self, step, sets, capacity: int = 512):
        import cupy as cp
        from ..gemm import runner
        self.bufs = [cp.zeros(runner.STAMP_SHAPE, dtype=cp.uint64) for _ in sets]
        self.launches = [runner.prepare(step.name, a, b, stamps=buf) for (a, b), buf in zip(sets, self.bufs)]
        self.history = cp.zeros((capacity, *runner.STAMP_SHAPE), dtype=cp.uint64)
        self.n = 0

    def __call__(self):
        j = self.n % len(self.launches)
        self.launches[j]()
        if self.n < len(self.history):
            self.history[self.n][...] = self.bufs[j]   # stream-ordered: after this launch, before the next
        self.n += 1

    def take(self) -> list:
        import cupy as cp
        from ..gemm import runner
        from ..gemm.timeline import stamp_mhz
        cp.cuda.Device().synchronize()
        for launch in self.launches:
            runner.raise_on_status(launch)   # a stamped launch whose bounded wait gave up
        got = [stamp_mhz(h) for h in cp.asnumpy(self.history[:min(self.n, len(self.history))])]
        self.n = 0   # rows past n are never read: each is written before it is read again
        return got


def warm_up(lib_calls, proto, clocks, shape):
    """The protocol's warm-up: blocks of library launches until two windows' median SM clocks settle (or
    the limit). (seconds spent, the windows' median MHz, the library's launches per sample)."""
    t_start, mhz = time.perf_counter(), []
    per_lib = P.samples_per_launch(launch_time_ms(lib_calls), proto.sample_ms)
    while True:
        t0 = time.perf_counter()
        clocks.mark(("warm-up", shape))
        time_block(lib_calls, proto.window_s, per_lib)
        win = clocks.window(t0)
        if win:
            mhz.append(sorted(win)[len(win) // 2])
        spent = time.perf_counter() - t_start
        if spent >= proto.warmup_max_s or (spent >= proto.warmup_min_s and (not win or P.settled(mhz, proto.settle_mhz))):
            return spent, mhz, per_lib


def launch_time_ms(calls, n=3):
    """Milliseconds per launch of `calls`: one warm-up round, then `n` rounds timed together with CUDA
    events (their mean per launch)."""
    import cupy as cp
    for c in calls:
        c()
    cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for i in range(n * len(calls)):
        calls[i % len(calls)]()
    e.record()
    e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) / (n * len(calls))


def sustained(args, say, info, steps, shapes, torch_ok) -> int:
    import cupy as cp
    from ..gemm import runner
    proto = P.Protocol(block_s=args.block_s, rounds=args.rounds)
    clocks = ClockLog(cp.cuda.Device().pci_bus_id).start()
    say(f"GPU {info.name}, {info.sm_count} SMs, L2 {info.l2_bytes / 2**20:.0f} MiB, CuPy {cp.__version__}; "
        f"clock log: {clocks.source}")
    say(proto.describe())
    failures, table, dump = 0, {}, {"protocol": proto.__dict__, "gpu": info.name, "shapes": {}}
    try:
        for m, n, k in shapes:
            failures += _shape(m, n, k, proto, steps, torch_ok, clocks, say, table, dump, runner,
                               getattr(args, "clock_stamps", False))
            cp.get_default_memory_pool().free_all_blocks()
    finally:
        clocks.stop()
    shape_names = [f"{m}x{n}x{k}" for m, n, k in shapes]
    say("\n== summary: library time / step time (> 1: the step is faster), sustained protocol")
    say(f"  {'step':<22s}" + "".join(f"{s:>22s}" for s in shape_names))
    for s in steps:
        cells = []
        for sh in shape_names:
            r = table.get((s.name, sh))
            cells.append(f"{r:>22s}" if isinstance(r, str) else f"{'-':>22s}")
        say(f"  {s.name:<22s}" + "".join(cells))
    if args.json:
        dump["clock_samples"] = clocks.samples
        with open(args.json, "w") as f:
            json.dump(dump, f)
    return failures


def _shape(m, n, k, proto, steps, torch_ok, clocks, say, table, dump, runner, stamp_clock=False) -> int:
    import cupy as cp
    from ..device import gpu_info
    info = gpu_info()
    flop = 2.0 * m * n * k
    shape = f"{m}x{n}x{k}"
    nsets = P.operand_sets(2 * (m * k + n * k), info.l2_bytes, proto.l2_multiple)
    sets = [runner.random_operands(m, n, k, seed=m + n + k + i) for i in range(nsets)]
    ref = runner.reference(*sets[0])
    say(f"\n== {m} x {n} x {k} (C = A B^T, bf16 in, f32 accumulation, bf16 out); {nsets} operand sets of "
        f"{2 * (m * k + n * k) / 2**20:.0f} MiB (A + B) rotated")
    lib_name, lib_calls, lib_c = _library(sets, torch_ok)
    lib_calls[0]()
    cp.cuda.Device().synchronize()
    say(f"  library: {lib_name}; {runner.check(*sets[0], lib_c, 'library', ref=ref)}")
    failures, cands = 0, []
    for s in steps:
        try:
            timed = [s.prepare(a, b) for a, b in sets]
        except ValueError as e:
            say(f"  {s.name:<22s} not run: {e}")
            table[(s.name, shape)] = "n/a (shape)"
            continue
        for t in timed:
            t.first()
        res = runner.check(*sets[0], timed[0].c, s.name, ref=ref)
        say(f"  check before timing: {res}")
        if not res.ok:
            failures += 1
            table[(s.name, shape)] = "FAIL"
            continue
        cands.append((s, [t for t in timed], res))
    stampers = {s.name: StampClock(s.step, sets) for s, _, _ in cands
                if stamp_clock and getattr(s, "step", None) is not None}
    stamp_clocks = {name: [] for name in stampers}
    del ref
    spent, mhz, per_lib = warm_up(lib_calls, proto, clocks, shape)
    say(f"  warm-up {spent:.1f} s; window medians (MHz): {', '.join(f'{x:.0f}' for x in mhz[-4:]) or 'no clock reading'}")
    per = {s.name: P.samples_per_launch(launch_time_ms(t), proto.sample_ms) for s, t, _ in cands}
    lib_blocks, cand_blocks = [], {s.name: [] for s, _, _ in cands}
    for r in range(proto.rounds):
        for s, timed, _ in cands:
            clocks.mark(("library", shape, r, s.name))
            lib_blocks.append(time_block(lib_calls, proto.block_s, per_lib))
            clocks.mark((s.name, shape, r))
            st = stampers.get(s.name)
            cand_blocks[s.name].append((len(lib_blocks) - 1, time_block(timed, proto.block_s, per[s.name],
                                                                        between=st)))
            if st is not None:
                stamp_clocks[s.name].append(st.take())
        for s, timed, _ in cands:
            timed[0].after()    # a bounded wait that gave up during the timed launches
    clocks.mark(("library", shape, proto.rounds, "end"))
    lib_blocks.append(time_block(lib_calls, proto.block_s, per_lib))
    clocks.mark(None)
    lib_all = [x for blk in lib_blocks for x in blk]
    lib_med = P.block_stats(lib_all)
    lib_clock = summarize([c for c in clocks.samples if c[1] and c[1][0] == "library" and c[1][1] == shape])
    say(f"  {'library':<22s} {lib_med.median:8.4f} ms {flop / lib_med.median / 1e9:7.1f} TFLOP/s  "
        f"(all {len(lib_blocks)} blocks, IQR {100 * lib_med.iqr_rel:.1f} %)  {lib_clock}")
    say(f"  {'step':<22s} {'ms':>8s}    {'TFLOP/s':>7s}  {'lib/step':>8s} {'rounds':>13s}  {'IQR':>5s}  "
        f"{'pred.':>5s}  clocks during the step's blocks")
    shape_dump = {"library": lib_name, "library_blocks": lib_blocks, "steps": {}}
    for s, timed, res in cands:
        blocks = cand_blocks[s.name]
        summ = P.compare([b for _, b in blocks], [lib_blocks[i] for i, _ in blocks],
                         [lib_blocks[i + 1] for i, _ in blocks])
        st = P.block_stats([x for _, b in blocks for x in b])
        ck = summarize([c for c in clocks.samples if c[1] and c[1][0] == s.name and c[1][1] == shape])
        lo, hi = summ.spread
        pred = f"{s.predicted:.2f}" if s.predicted else "-"
        sm = [x for blk in stamp_clocks.get(s.name, []) for x in blk]
        sm_note = (f"; SMs {P.block_stats(sm).median:.0f} MHz by clock64 ({min(sm):.0f}-{max(sm):.0f}, "
                   f"{len(sm)} stamped launches)" if sm else "")
        say(f"  {s.name:<22s} {summ.candidate_ms:8.4f} ms {flop / summ.candidate_ms / 1e9:7.1f}  {summ.ratio:8.3f} "
            f"{lo:6.3f}-{hi:6.3f}  {100 * st.iqr_rel:4.1f}%  {pred:>5s}  {ck}{sm_note}")
        table[(s.name, shape)] = f"{summ.ratio:.3f} ({lo:.3f}-{hi:.3f})"
        shape_dump["steps"][s.name] = {"blocks": [b for _, b in blocks], "ratio": summ.ratio,
                                       "per_round": summ.per_round, "check_worst": res.worst_ratio,
                                       "stamp_mhz": stamp_clocks.get(s.name, [])}
    dump["shapes"][shape] = shape_dump
    return failures
