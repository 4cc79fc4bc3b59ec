"""The order of events of one tile: the model's (which warp issues what, which mbarrier phase completes
when, with transaction counts, computed by `bwlab.hw.mbarrier.Mbarrier`) and the one measured on a
Hopper from `full_flow_hopper`'s %globaltimer / %clock64 stamps; both exportable as Chrome / Perfetto
trace JSON (chrome://tracing, ui.perfetto.dev). NumPy and bwlab.hw only.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..hw.mbarrier import Mbarrier
from .problem import FlowProblem

__all__ = ["Event", "FLOW_EVENTS", "model_events", "format_events", "measured_segments", "chrome_trace"]

# The events full_flow_hopper stamps (enum EV_* in cuda_src/full_flow_sm90.cu, in that order).
FLOW_EVENTS = ("start", "load issued", "load done", "mma issued", "mma done", "st.shared done", "fenced",
               "store issued", "store read", "end")
NO_STAMP = np.uint64(0xFFFFFFFFFFFFFFFF)


@dataclass(frozen=True)
class Event:
    """One step of the model's timeline (`t` counts steps, not time)."""
    t: int
    actor: str
    action: str
    hop: str
    barrier: str = ""
    phase: int = -1          # the barrier's completed phases after this step
    pending: int = -1        # arrivals still expected in its current phase
    tx: int = -1             # transaction bytes still expected


def model_events(p: FlowProblem | None = None) -> list:
    """The Blackwell kernel (cuda_src/full_flow_sm100.cu) of one tile, step by step, with both
    mbarriers' state after every step that touches them."""
    p = p or FlowProblem()
    full, done = Mbarrier(1), Mbarrier(1)
    ev = []

    def add(actor, action, hop, bar=None, name=""):
        b = bar if bar is not None else None
        ev.append(Event(len(ev), actor, action, hop, name, b.phase if b else -1, b.pending if b else -1,
                        b.tx if b else -1))

    add("warp 0", "tcgen05.alloc 128 columns, relinquish_alloc_permit", "setup")
    add("warp 1", "mbarrier.init(full, 1); mbarrier.init(mma_done, 1)", "setup", full, "full")
    add("warps 0-3", "bar.sync (TMEM address and barriers visible)", "setup")
    full.arrive_expect_tx(p.expect_tx)
    add("warp 0 (elected)", f"mbarrier.arrive.expect_tx(full, {p.expect_tx})", "tma_load", full, "full")
    add("warp 0 (elected)", "cp.async.bulk.tensor A, B (2 x 16384 B)", "tma_load", full, "full")
    add("warps 0-3", "mbarrier.try_wait.parity(full, 0) -> false", "tma_load", full, "full")
    for name, nbytes in (("A", p.tmap_a.tx_bytes), ("B", p.tmap_b.tx_bytes)):
        flipped = full.complete_tx(nbytes)
        add("TMA engine", f"{name} lands: complete_tx({nbytes})" + (" -> phase 0 completes" if flipped else ""),
            "tma_load", full, "full")
    add("warps 0-3", f"mbarrier.try_wait.parity(full, 0) -> {full.try_wait_parity(0)}", "tma_load", full, "full")
    for kb in range(p.k_blocks):
        add("warp 1 (elected)", f"tcgen05.mma K block {kb} (accumulate={int(kb > 0)})", "mma")
    add("tensor core", "4 MMAs execute (asynchronously) into TMEM", "mma")
    add("warps 0-3", "mbarrier.try_wait.parity(mma_done, 0) -> false", "commit", done, "mma_done")
    add("warp 1 (elected)", "tcgen05.commit -> arrive::one on mma_done once the MMAs complete", "commit",
        done, "mma_done")
    flipped = done.arrive(1)
    add("tensor core", "MMAs complete: one arrival" + (" -> phase 0 completes" if flipped else ""), "commit",
        done, "mma_done")
    add("warps 0-3", f"mbarrier.try_wait.parity(mma_done, 0) -> {done.try_wait_parity(0)}; "
        "tcgen05.fence::after_thread_sync", "commit", done, "mma_done")
    for c in range(4):
        add("warps 0-3", f"tcgen05.ld.32x32b.x32 columns {32 * c}-{32 * c + 31}; tcgen05.wait::ld", "tmem_ld")
        add("warps 0-3", f"8 x st.shared.v4 into box {c}", "st_shared")
    add("warps 0-3", "fence.proxy.async.shared::cta; bar.sync", "fence")
    add("warp 0 (elected)", "4 x cp.async.bulk.tensor store; commit_group", "tma_store")
    add("TMA engine", "reads the D tile from SMEM, writes GMEM", "tma_store")
    add("warp 0 (elected)", "cp.async.bulk.wait_group.read 0", "tma_store")
    add("warp 0", "tcgen05.dealloc", "teardown")
    return ev


def format_events(events) -> str:
    out = [f"{'t':>3s}  {'actor':<17s} {'hop':<10s} {'barrier':<9s} {'phase':>5s} {'pend':>4s} {'tx':>6s}  action"]
    for e in events:
        st = ("", "", "") if e.phase < 0 else (str(e.phase), str(e.pending), str(e.tx))
        out.append(f"{e.t:3d}  {e.actor:<17s} {e.hop:<10s} {e.barrier:<9s} {st[0]:>5s} {st[1]:>4s} {st[2]:>6s}  "
                   f"{e.action}")
    return "\n".join(out)


def measured_segments(stamps: np.ndarray, clock: str = "ns"):
    """From one launch's stamps (4 warps, len(FLOW_EVENTS), 2: globaltimer ns, clock64): for each warp
    the segments (warp, from event, to event, start, end) between consecutive stamped events, times
    relative to the earliest start, in ns (globaltimer) or cycles (clock='cycles')."""
    s = np.asarray(stamps)
    if s.ndim == 4:
        s = s[-1]
    col = 0 if clock == "ns" else 1
    t = s[..., col]
    valid = t != NO_STAMP
    if not valid.any():
        return []
    t0 = int(t[valid].min())
    segs = []
    for w in range(t.shape[0]):
        idx = [i for i in range(t.shape[1]) if valid[w, i]]
        for a, b in zip(idx, idx[1:]):
            segs.append((w, FLOW_EVENTS[a], FLOW_EVENTS[b], int(t[w, a]) - t0, int(t[w, b]) - t0))
    return segs


def chrome_trace(events=None, segments=None, device: str = "GPU", path=None) -> dict:
    """Chrome / Perfetto trace JSON: the model's steps (1 us per step, process 'model') and the measured
    segments (ns -> us, process `device`). Written to `path` when given."""
    te = []
    for e in events or []:
        te.append({"name": e.action, "cat": e.hop, "ph": "X", "ts": float(e.t), "dur": 1.0, "pid": "model",
                   "tid": e.actor, "args": {"barrier": e.barrier, "phase": e.phase, "tx": e.tx}})
    for w, a, b, t0, t1 in segments or []:
        te.append({"name": f"{a} -> {b}", "cat": b, "ph": "X", "ts": t0 / 1000.0,
                   "dur": max(t1 - t0, 1) / 1000.0, "pid": device, "tid": f"warp {w}"})
    doc = {"traceEvents": te, "displayTimeUnit": "ns"}
    if path:
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
    return doc
