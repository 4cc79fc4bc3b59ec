"""The sustained protocol (bwlab.gemm.protocol) for the benches that are not GEMMs: TMA copy, TMA store,
multicast. One baseline (the library's copy or fill, or the suite's own reference kernel where no
library does the same thing) and the candidates, each a list of calls that rotate through operand sets:

1. warm-up: baseline windows until two windows' median SM clocks agree (Protocol.settle_mhz);
2. rounds of alternating blocks, baseline, candidate 1, baseline, candidate 2, ..., baseline, each
   `block_s` seconds of back-to-back calls timed by CUDA events around ~`sample_ms` samples;
3. ratio = baseline time / candidate time of the medians of all samples (> 1: the candidate is faster)
   and its range round by round (protocol.compare); the rate (GB/s) from the median time;
4. NVML's SM clock, power and throttle reasons during each block.

`alternate` does steps 1-2 with the block runner passed in, so the order and the statistics are
tested without a GPU (tests/test_gemm_protocol.py); `run` is the GPU side.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from ..gemm import protocol as P
from .clocks import ClockLog, ClockSummary, summarize

__all__ = ["Candidate", "Row", "alternate", "rows", "table", "run", "NOT_APPLICABLE"]

# What the CPU benches print instead: the protocol is about a GPU's clock under its power cap.
NOT_APPLICABLE = ("protocol: the sustained GPU protocol (bwlab.gemm.protocol) does not apply here: this "
                  "bench times CPU code (no GPU clock, no power cap); wall-clock medians of repeats")


@dataclass
class Candidate:
    name: str
    calls: list            # one call per operand set; a block cycles through them
    units: float = 0.0     # bytes (or FLOP) one call moves, for the rate column


@dataclass
class Row:
    name: str
    ms: float
    rate: float            # units per second / 1e9 (GB/s for bytes)
    summary: P.RatioSummary | None   # None for the baseline's own row
    iqr: float
    clock: ClockSummary


def alternate(baseline: Candidate, candidates: list, proto: P.Protocol, block, mark=lambda label: None,
              window=None, now=time.perf_counter, tag=""):
    """Warm-up, then `proto.rounds` rounds of baseline/candidate blocks ending with a baseline block.
    `block(calls, seconds) -> [ms per call, one per sample]`; `mark(label)` names what runs next for
    the clock log (labels carry `tag`, e.g. the size); `window(since) -> [SM MHz sampled since]` (None: no clock reading, minimum warm-up).
    Returns (baseline blocks, {name: [(index of the baseline block before it, samples), ...]},
    warm-up seconds, window medians)."""
    if not candidates:
        raise ValueError("the protocol compares at least one candidate with the baseline")
    names = [c.name for c in candidates]
    if len(set(names)) != len(names) or baseline.name in names:
        raise ValueError(f"every candidate needs its own name (and not the baseline's): {names}")
    t_start, mhz = now(), []
    while True:
        t0 = now()
        mark(("warm-up", tag, baseline.name))
        block(baseline.calls, proto.window_s)
        win = window(t0) if window else []
        if win:
            mhz.append(sorted(win)[len(win) // 2])
        spent = now() - t_start
        if spent >= proto.warmup_max_s or (spent >= proto.warmup_min_s and (not win or P.settled(mhz, proto.settle_mhz))):
            break
    base_blocks, cand_blocks = [], {c.name: [] for c in candidates}
    for r in range(proto.rounds):
        for c in candidates:
            mark(("baseline", tag, r, c.name))
            base_blocks.append(block(baseline.calls, proto.block_s))
            mark((c.name, tag, r))
            cand_blocks[c.name].append((len(base_blocks) - 1, block(c.calls, proto.block_s)))
    mark(("baseline", tag, proto.rounds, "end"))
    base_blocks.append(block(baseline.calls, proto.block_s))
    mark(None)
    return base_blocks, cand_blocks, spent, mhz


def rows(baseline: Candidate, candidates: list, base_blocks: list, cand_blocks: dict, clock_samples=(),
         tag="") -> list:
    """The baseline's row, then one per candidate: its median ms, rate, ratio against the baseline blocks
    on either side of each of its blocks (protocol.compare), IQR and the clocks during its blocks."""
    def clocks(pred):
        return summarize([s for s in clock_samples if s[1] and s[1][1] == tag and pred(s[1])])
    all_base = P.block_stats([x for b in base_blocks for x in b])
    out = [Row(baseline.name, all_base.median, _rate(baseline.units, all_base.median), None, all_base.iqr_rel,
               clocks(lambda lab: lab[0] == "baseline"))]
    for c in candidates:
        blocks = cand_blocks[c.name]
        summ = P.compare([b for _, b in blocks], [base_blocks[i] for i, _ in blocks],
                         [base_blocks[i + 1] for i, _ in blocks])
        st = P.block_stats([x for _, b in blocks for x in b])
        out.append(Row(c.name, summ.candidate_ms, _rate(c.units, summ.candidate_ms), summ, st.iqr_rel,
                       clocks(lambda lab, n=c.name: lab[0] == n)))
    return out


def _rate(units: float, ms: float) -> float:
    return units / (ms * 1e-3) / 1e9 if units and ms > 0 else float("nan")


def table(rs: list, unit: str = "GB/s") -> list:
    """The rows as report lines: name, ms, rate, baseline/candidate with its round range, IQR, clocks."""
    lines = [f"  {'':<44s} {'ms':>9s} {unit:>9s} {'base/cand':>9s} {'rounds':>13s} {'IQR':>5s}  clocks during its blocks"]
    for r in rs:
        if r.summary is None:
            lines.append(f"  {r.name + ' (baseline)':<44s} {r.ms:9.4f} {r.rate:9.1f} {'1':>9s} {'':>13s} "
                         f"{100 * r.iqr:4.1f}%  {r.clock}")
        else:
            lo, hi = r.summary.spread
            lines.append(f"  {r.name:<44s} {r.ms:9.4f} {r.rate:9.1f} {r.summary.ratio:9.3f} {lo:6.3f}-{hi:6.3f} "
                         f"{100 * r.iqr:4.1f}%  {r.clock}")
    return lines


def run(baseline: Candidate, candidates: list, proto: P.Protocol, say, clocks=None, unit: str = "GB/s",
        tag="") -> list:
    """The protocol on this GPU: each call's time measured once to size the samples, then `alternate`
    with CUDA-event blocks (bwlab.checks.gemm_sustained's), NVML clocks logged; prints the table."""
    from .gemm_sustained import time_block, launch_time_ms
    own = clocks is None
    if own:
        import cupy as cp
        clocks = ClockLog(cp.cuda.Device().pci_bus_id).start()
    try:
        per = {c.name: P.samples_per_launch(launch_time_ms(c.calls), proto.sample_ms) for c in [baseline, *candidates]}
        calls_of = {id(c.calls): c.name for c in [baseline, *candidates]}

        def block(calls, seconds):
            return time_block(calls, seconds, per[calls_of[id(calls)]])
        base_blocks, cand_blocks, spent, mhz = alternate(baseline, candidates, proto, block, clocks.mark,
                                                         clocks.window if clocks._read else None, tag=tag)
    finally:
        if own:
            clocks.stop()
    say(f"  warm-up {spent:.1f} s; window medians (MHz): {', '.join(f'{x:.0f}' for x in mhz[-4:]) or 'no clock reading'}"
        f"; clock log: {clocks.source}")
    rs = rows(baseline, candidates, base_blocks, cand_blocks, clocks.samples, tag)
    for line in table(rs, unit):
        say(line)
    return rs
