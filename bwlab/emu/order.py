"""What each warp has observed: the happens-before order of asynchronous work, and the hazards it names.

PTX ISA, "Memory Consistency Model" (the async proxy, release/acquire through mbarriers and barriers) and
the completion mechanisms of each asynchronous unit: an asynchronous operation that reads shared memory
(a TMA store or bulk copy, `wgmma.mma_async`, `tcgen05.mma`) may read it at any moment until its
completion is *observed*: by `cp.async.bulk.wait_group(.read)` in the issuing thread, by the
`wgmma.wait_group` that retires it, or by a wait on the mbarrier its `tcgen05.commit` arrives on. That
observation travels from thread to thread only through synchronisation: mbarrier arrive -> wait of the
same phase, `bar.sync`, `barrier.cluster`.

The emulator keeps that order explicitly, so a kernel that breaks it fails even when the timing of this
run (or of a GPU) happened to hide the race:

* every warp has a `known` map: completion key -> the highest sequence number it has observed complete
  (keys: ("wgmma", cta, warpgroup), ("tcgen05.mma", cta, thread), ("bulk", cta, thread), and the count of
  ("cluster.arrive", cta, warp) arrivals, for the cluster-exit rule);
* an mbarrier phase, a named barrier and the cluster barrier carry the union of what their arrivers
  knew to the warps that wait on them;
* every in-flight asynchronous read of shared memory is a `Region`; a write to its bytes (a generic
  store, a TMA load or bulk copy landing) by a thread that has not observed its completion is an
  `AsyncReadHazard`, naming both source lines; a CTA that exits while a region of its shared memory is
  not known complete is `AsyncInFlightAtExit`;
* a CTA that a cluster peer reached (a remote mbarrier arrive, a DSMEM access, a commit to its barrier)
  must not exit before that peer's later `barrier.cluster.arrive` is observed (`ClusterPeerMayAccess`);
* a thread whose arrival ended a phase's expected arrivals while the phase still waited for tx-count must
  observe that phase complete before it arrives there again (`MbarrierArrivalUnordered`);
* a warp-collective tcgen05 operation (`tcgen05.ld/st`) is each lane's own: a sync only some lanes reach
  (lane 0's arrive) hands on only theirs, unless the warp met at a `__syncwarp()` after the fence
  (`sync_entry`; the receiving side raises `TcgenFenceMissing`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import (AsyncInFlightAtExit, AsyncReadHazard, AsyncWriteNotObserved, ClusterPeerMayAccess,
                     GenericWriteNotOrdered, MbarrierArrivalUnordered, MbarrierPhaseOverrun)

__all__ = ["Region", "learn", "merge", "snapshot", "add_region", "require_write_ordered", "require_exit_ordered", "completion_hint",
           "PhaseOrder", "phase_of", "signal", "observed", "remote_access", "require_cluster_exit_ordered", "release",
           "record_stores", "require_async_read_ordered", "add_async_write", "landed", "require_read_ordered",
           "require_arrival_ordered", "note_arrival", "require_cpasync_observed", "sync_entry", "tc_lanes_did", "lane_bits", "lanes_of",
           "thread_synced"]

_SEC = "PTX ISA, Memory Consistency Model (async proxy; completion of asynchronous operations)"


@dataclass
class Region:
    lo: int
    hi: int
    key: tuple
    seq: int
    what: str        # "the TMA store", "wgmma.mma_async operand A", ...
    where: str       # the issuing instruction's source line
    who: str         # the issuing thread(s)


def completion_hint(key) -> str:
    kind = key[0]
    if kind == "wgmma":
        return "a wgmma.wait_group that retires it (then release the buffer)"
    if kind == "tcgen05.mma":
        return "a wait on the mbarrier its tcgen05.commit arrives on"
    if kind == "bulk":
        return "cp.async.bulk.wait_group.read (or wait_group) in the issuing thread"
    if kind == "cp.async":
        return "cp.async.wait_group / wait_all in the issuing thread"
    if kind == "tcgen05.ld":
        return "tcgen05.wait::ld in the loading warp"
    return "its completion"


def learn(w, key, seq: int) -> None:
    k = w.known
    if k.get(key, -1) < seq:
        k[key] = seq


def merge(dst: dict, src) -> None:
    for key, seq in src.items():
        if dst.get(key, -1) < seq:
            dst[key] = seq


def snapshot(w) -> dict:
    return dict(w.known)


def knows(known: dict, r: Region) -> bool:
    return known.get(r.key, -1) >= r.seq


# ---------------------------------------------------------------------------------------------
# in-flight asynchronous reads of shared memory
# ---------------------------------------------------------------------------------------------
def add_region(c, lo: int, hi: int, key, seq: int, what: str, where: str, who: str) -> None:
    regions = c.__dict__.setdefault("async_reads", [])
    regions.append(Region(int(lo), int(hi), key, int(seq), what, where, who))
    least = c.__dict__.setdefault("async_reads_min", {})   # key -> the least seq of its regions in the list
    if least.get(key, seq + 1) > seq:
        least[key] = int(seq)
    span = c.__dict__.get("async_reads_span")              # [first byte, last byte + 1) of all the regions
    c.async_reads_span = (int(lo), int(hi)) if span is None else (min(span[0], int(lo)), max(span[1], int(hi)))
    if len(regions) > c.__dict__.get("async_reads_limit", 64):
        _prune(c)


def _prune(c) -> None:
    """Drop the regions every live warp of the CTA knows complete (nothing can race with them any more: every
    check skips a region its warp knows complete, so when the pruning happens changes no result, only the cost)."""
    live = [w for w in c.warps if not w.finished]   # (Warp.finished: every lane exited)
    # every live warp knows r iff the least sequence they know for r.key reaches r.seq: one minimum per key;
    # when no key's minimum reaches its oldest region, nothing goes (the list is left as it is, and the next
    # try waits for 16 more regions: a warp that never learns a key would otherwise make every add try again)
    known = {key: min((w.known.get(key, -1) for w in live), default=None) for key in c.async_reads_min}
    if not any(k is None or k >= c.async_reads_min[key] for key, k in known.items()):
        c.async_reads_limit = len(c.async_reads) + 16
        return
    c.async_reads_limit = 64
    c.async_reads = [r for r in c.async_reads if not (known[r.key] is None or known[r.key] >= r.seq)]
    least = {}
    for r in c.async_reads:
        if least.get(r.key, r.seq + 1) > r.seq:
            least[r.key] = r.seq
    c.async_reads_min = least
    c.async_reads_span = ((min(r.lo for r in c.async_reads), max(r.hi for r in c.async_reads))
                          if c.async_reads else None)


def _hit(lo, hi, n, a, b):
    """The first byte of [a, b) the access touches: [lo, hi) when n is None, else n bytes at each offset in lo."""
    if n is None:
        return max(lo, a) if a < hi and lo < b else None
    sel = (lo + n > a) & (lo < b)
    if not sel.any():
        return None
    return max(int(lo[sel].min()), a)


def require_write_ordered(M, c, lo, hi, known: dict, writer: str, where: str, how: str, n=None, w=None, lanes=None) -> None:
    """A write into shared bytes [lo, hi) of CTA c by `writer` (what it knew: `known`); with `n`, `lo` is an array
    of offsets each written n bytes wide."""
    regions = c.__dict__.get("async_reads")
    if not regions:
        return
    # the bytes the access spans, once: a region outside them is not touched (the common case, checked with ints)
    span_lo, span_hi = (lo, hi) if n is None else (int(lo.min()), int(lo.max()) + n)
    every = c.__dict__.get("async_reads_span")
    if every is not None and (every[1] <= span_lo or every[0] >= span_hi):
        return                                              # outside every region
    for r in regions:
        if r.hi <= span_lo or r.lo >= span_hi or knows(known, r):
            continue
        b = _hit(lo, hi, n, r.lo, r.hi)
        if b is not None and w is not None and lanes is not None and lane_knows(w, lanes, r):
            continue
        if b is not None:
            raise AsyncReadHazard(
                f"{writer} at {where} {how} shared byte 0x{b:x} ({M.prog.shared_name(b)}) of CTA {c.ctaid}, which "
                f"{r.what} issued by {r.who} at {r.where} may still be reading: the writer has not observed that "
                f"operation's completion. Wait for it first — {completion_hint(r.key)} — and let that reach the "
                f"writer through an mbarrier or a barrier ({_SEC})")


def require_exit_ordered(M, c) -> None:
    """CTA c exits: every asynchronous read of its shared memory must be known complete by one of its warps."""
    regions = c.__dict__.get("async_reads")
    if not regions:
        return
    lk = c.__dict__.get("lane_known") or {}
    for r in regions:
        if not any(knows(w.known, r) for w in c.warps) and \
                not any(d.get(r.key, -1) >= r.seq for d in lk.values()):   # one lane's own wait counts too
            raise AsyncInFlightAtExit(
                f"CTA {c.ctaid} exits while {r.what} issued by {r.who} at {r.where} may still read its shared memory: "
                f"no thread of the CTA observed its completion ({completion_hint(r.key)}) before exiting. A CTA's "
                f"shared memory is released when it exits; asynchronous operations that read it must be complete "
                f"({_SEC})")


# ---------------------------------------------------------------------------------------------
# what a synchronisation carries
# ---------------------------------------------------------------------------------------------
class PhaseOrder:
    """What one mbarrier carries: the arrivals of the current phase, and what each completed phase carried
    (by parity, the way waits name phases)."""
    __slots__ = ("known", "tc", "done", "seen", "tried", "ended")

    def __init__(self):
        self.known, self.tc = {}, []
        self.done = {0: ({}, ()), 1: ({}, ())}
        self.seen = {}      # (cta, warp) -> the phase number that warp last observed complete
        self.tried = set()  # (cta, warp) that ever waited on it (a read after a wait that gave up: a clue, not a bug)
        self.ended = {}     # (cta, warp) -> (phase, where, tx) its last arrival was the last one that phase expected


def phase_of(c, off: int) -> PhaseOrder:
    table = c.__dict__.setdefault("mbar_order", {})
    po = table.get(off)
    if po is None:
        po = table[off] = PhaseOrder()
    return po


def signal(c, off: int, bar, known=None, tc_entry=None, act=None) -> None:
    """An arrival, expect_tx or complete_tx on the mbarrier at `off` of CTA c: `act()` performs it on the
    model; what the signaller knew joins the phase, and a phase that completes keeps it for its waiters."""
    po = phase_of(c, off)
    if known:
        merge(po.known, known)
    if tc_entry is not None:
        po.tc.append(tc_entry)
    before = bar.phase
    act()
    if bar.phase != before:
        po.done[before & 1] = (po.known, tuple(po.tc))
        po.known, po.tc = {}, []


def thread_synced(w, entries, barrier, via_mbarrier=False):
    """Warp `w` passed a thread synchronisation; `entries` are the tcgen05 operations other warps issued
    before arriving at it: (warp, who, where, fenced). Each is kept with the barrier that ordered it and
    whether that was an mbarrier wait."""
    # [warp, who, where, fenced before the sync, via an mbarrier, the sync, this warp fenced after it,
    #  (lanes of that warp that executed the operation but did not reach the sync, the arrive's line) or None]
    others = [[e[0], e[1], e[2], e[3], via_mbarrier, barrier, False, e[4] if len(e) > 4 else None]
              for e in entries if e[0] is not w]
    if not others:
        return      # nothing of another warp's tcgen05 work is ordered by it: what was pending stays pending
    w.tc_pending = (w.tc_pending or []) + others


def observed(w, c, off: int, parity: int, barrier: str, bar=None, where: str = "") -> None:
    """Warp w's wait on the phase of parity `parity` of the mbarrier at `off` of CTA c succeeded."""
    po = phase_of(c, off)
    known, tc = po.done[parity & 1]
    merge(w.known, known)
    if tc:
        thread_synced(w, tc, barrier, via_mbarrier=True)
    if bar is None:
        return
    # which phase it saw: the latest completed phase of that parity
    now = bar.phase - 1 if (bar.phase - 1) & 1 == parity & 1 else bar.phase - 2
    learn(w, ("mbarrier", c.linear, off), now)
    key = (w.cta.linear, w.wid)
    last = po.seen.get(key)
    po.seen[key] = now if last is None else max(now, last)
    if last is not None and now >= last + 2:
        raise MbarrierPhaseOverrun(
            f"{w.who()} at {where}: {barrier} (parity {parity & 1}) passes on phase {now}, but the last phase this "
            f"warp observed was {last}: phase {last + 1} completed and the next one began before it waited. A parity "
            f"wait sees only the latest completed phase of that parity, so the barrier ran a whole phase ahead of "
            f"this warp: whoever signals it did not wait for this warp to release the buffer (PTX ISA, mbarrier: "
            f"phase completion and parity; a producer waits on the consumer's 'empty' barrier before reusing a "
            f"stage)")


_SEC_ARRIVE = ("PTX ISA, mbarrier: an arrive-on operation decrements the pending arrival count of the current phase, "
               "and the pending arrival count stays within [0, 2^20 - 1]")


def require_arrival_ordered(w, c, off: int, bar, where: str, who: str = "") -> None:
    """Warp w arrives on the mbarrier at `off` of CTA c. If its previous arrival there was the last one a phase
    expected and that phase then waited only for its tx-count (bytes of a TMA in flight), this warp must have
    observed that phase complete first: the bytes may land at any time, and had they landed after this arrival, it
    would count in that phase, whose pending arrival count is already 0."""
    po = phase_of(c, off)
    rec = po.ended.get((w.cta.linear, w.wid))
    if rec is None:
        return
    phase, prev, tx = rec
    if w.known.get(("mbarrier", c.linear, off), -1) >= phase:
        del po.ended[(w.cta.linear, w.wid)]
        return
    name = w.machine.prog.shared_name(off)
    raise MbarrierArrivalUnordered(
        f"{who or w.who()} at {where} arrives on mbarrier '{name}' of CTA {c.ctaid} again, but its previous arrival at {prev} "
        f"was the last one phase {phase} expected, and that phase still waited for {tx} bytes of tx-count (an "
        f"asynchronous copy in flight). This thread has not observed phase {phase} complete: if those bytes land "
        f"after this arrival, it counts in phase {phase}, whose pending arrival count is already 0, and the next "
        f"phase misses it. Arrive for the next phase only after the current one is observed complete — a producer "
        f"re-arms a stage after its wait on the consumer's 'empty' barrier ({_SEC_ARRIVE})")


def note_arrival(w, c, off: int, bar, phase_before: int, where: str) -> None:
    """After warp w's arrival on the mbarrier at `off` of CTA c: remember it when it ended the phase's arrivals while
    the phase still waits for tx-count (`require_arrival_ordered`)."""
    key = (w.cta.linear, w.wid)
    po = phase_of(c, off)
    if bar.phase == phase_before and bar.pending == 0 and bar.tx != 0:
        po.ended[key] = (phase_before, where, bar.tx)
    else:
        po.ended.pop(key, None)


# ---------------------------------------------------------------------------------------------
# cluster peers: a CTA must outlive every access its peers make to it
# ---------------------------------------------------------------------------------------------
def remote_access(w, target, what: str, where: str) -> None:
    """Warp w (of another CTA of the cluster) reaches CTA `target`'s shared memory or barriers."""
    if target is w.cta:
        return
    key = ("cluster.arrive", w.cta.linear, w.wid)
    acc = target.__dict__.setdefault("remote_access", {})
    acc[key] = (w.arrivals, w, what, where)


def require_cluster_exit_ordered(M, c) -> None:
    """CTA c exits: every running peer that reached it must have arrived at the cluster barrier after its last
    access, and c must have observed that arrival (barrier.cluster.arrive / wait by both)."""
    acc = c.__dict__.get("remote_access")
    if not acc:
        return
    for key, (n, pw, what, where) in acc.items():
        if pw.finished:         # the warp that reached this CTA is gone: it can reach it no more
            continue
        if not any(x.known.get(key, 0) >= n + 1 for x in c.warps):
            raise ClusterPeerMayAccess(
                f"CTA {c.ctaid} (cluster rank {c.rank}) exits while its cluster peer CTA {pw.cta.ctaid} (rank "
                f"{pw.cta.rank}) may still access it: {pw.who()} {what} at {where}, and no barrier.cluster.arrive of "
                f"that warp after it was observed by this CTA before exiting. PTX ISA (Cluster of CTAs; distributed "
                f"shared memory): a CTA's shared memory and mbarriers must not be accessed after it exits — end the "
                f"kernel with barrier.cluster.arrive + barrier.cluster.wait in every CTA")


# ---------------------------------------------------------------------------------------------
# generic stores read by an asynchronous operation: the issuing thread must be ordered after them
# ---------------------------------------------------------------------------------------------
def release(w) -> None:
    """Warp w arrives at a barrier (bar, barrier.cluster, mbarrier): its earlier stores happen before that."""
    w.releases += 1
    learn(w, ("release", w.cta.linear, w.wid), w.releases)


def record_stores(c, off: int, n: int, w) -> None:
    """Warp w stored [off, off+n) of CTA c's shared memory before its next release."""
    c.smem_wwarp[off:off + n] = w.wid
    c.smem_wrel[off:off + n] = w.releases


def require_async_read_ordered(M, c, lo: int, hi: int, known: dict, issuers, what: str, where: str, who: str,
                     flat=None) -> None:
    """An asynchronous read of CTA c's shared bytes [lo, hi) (or the byte list `flat`) issued by warps `issuers`
    (what they knew: `known`): every generic store of another warp to those bytes must be ordered before it by a
    barrier the issuer passed after that warp's release."""
    if flat is None:
        wr, rel = c.smem_wwarp[lo:hi], c.smem_wrel[lo:hi]
        base = lo
    else:
        wr, rel = c.smem_wwarp[flat], c.smem_wrel[flat]
        base = None
    iss = list(issuers)
    bad = (wr >= 0) & ((wr != iss[0]) if len(iss) == 1 else ~np.isin(wr, iss))
    if not bad.any():
        return
    for wid in np.unique(wr[bad]).tolist():
        sel = bad & (wr == wid)
        need = int(rel[sel].max()) + 1
        if known.get(("release", c.linear, wid), 0) < need:
            i = int(np.nonzero(sel)[0][0])
            b = base + i if base is not None else int(flat[i])
            x = c.warps[wid]
            raise GenericWriteNotOrdered(
                f"{what} issued by {who} at {where} reads shared byte 0x{b:x} ({M.prog.shared_name(b)}) of CTA "
                f"{c.ctaid}, which warp {wid} ({x.who()}) stored with no barrier between its store and this issue: "
                f"the stores of other threads must be made visible to the async proxy (fence.proxy.async by the "
                f"writers) and ordered before the asynchronous operation by a barrier both pass (__syncthreads, an "
                f"mbarrier arrive/wait) (PTX ISA, Memory Consistency Model: proxies and synchronisation)")


# ---------------------------------------------------------------------------------------------
# asynchronous writes into shared memory (TMA loads, bulk copies): read only after their phase is observed
# ---------------------------------------------------------------------------------------------
def add_async_write(c, lo: int, hi: int, op: int, what: str, where: str, who: str, bar=None) -> None:
    """An asynchronous write into [lo, hi) of CTA c; `bar` = (CTA, offset) of the mbarrier it completes on."""
    writes = c.__dict__.setdefault("async_writes", {})
    writes[op] = [int(lo), int(hi), None, what, where, who, bar]   # [2]: (barrier key, phase) once landed
    retire_writes(c)


def landed(c, op: int, bcta, boff: int, phase: int) -> None:
    rec = c.__dict__.get("async_writes", {}).get(op)
    if rec is not None:
        rec[2] = (("mbarrier", bcta.linear, boff), phase)


def require_read_ordered(M, c, lo, hi, known: dict, reader: str, where: str, what: str = "reads", n=None, w=None) -> None:
    """A read of CTA c's shared bytes [lo, hi) by a thread (or the issue of an async read) that knew `known`;
    with `n`, `lo` is an array of offsets each read n bytes wide."""
    if c.__dict__.get("cpa_bytes") is not None:
        require_cpasync_observed(M, c, lo, hi, known, reader, where, what, n)
    writes = c.__dict__.get("async_writes")
    if not writes:
        return
    for op, (a, b, done, wwhat, wwhere, wwho, bar) in list(writes.items()):
        if done is not None and known.get(done[0], -1) >= done[1]:
            continue
        first = _hit(lo, hi, n, a, b)
        if first is not None and w is not None and bar is not None and \
                (w.cta.linear, w.wid) in phase_of(bar[0], bar[1]).tried:
            # the thread did wait on that barrier (and gave up, or the bytes come late): reading what has
            # arrived is how a kernel reports a timeout; noted, not raised
            note = (f"{reader} at {where} reads shared bytes that {wwhat} issued at {wwhere} writes, before the "
                    f"mbarrier phase it completes was observed (after a wait that did not see it)")
            if note not in M.warnings:
                M.warnings.append(note)
            continue
        if first is not None:
            state = ("is still in flight" if done is None else
                     f"landed, but this thread has not observed the completion of the mbarrier phase it completed "
                     f"(phase {done[1]})")
            raise AsyncWriteNotObserved(
                f"{reader} at {where} {what} shared byte 0x{first:x} ({M.prog.shared_name(first)}) of CTA "
                f"{c.ctaid}, which {wwhat} issued by {wwho} at {wwhere} writes and which {state}: wait on its mbarrier "
                f"first (PTX ISA: the bytes of an asynchronous copy are visible only after the mbarrier phase it "
                f"completes is observed)")


def require_cpasync_observed(M, c, lo, hi, known: dict, reader: str, where: str, what: str = "reads", n=None) -> None:
    """A read of CTA c's shared bytes [lo, hi) (or n bytes at each offset in the array lo): every cp.async that wrote
    one of them (c.cpa_bytes: the latest op and issuing thread of each byte) must be known complete to the reader."""
    ops, thr = c.cpa_bytes
    idx = slice(lo, hi) if n is None else (lo.reshape(-1, 1) + np.arange(n)).reshape(-1)
    got = ops[idx]
    sel = got > 0
    if not sel.any():
        return
    got, ts = got[sel], thr[idx][sel]
    need = {}
    for t, op in zip(ts.tolist(), got.tolist()):     # (plain Python: a read touches a few dozen bytes)
        if need.get(t, 0) < op:
            need[t] = op
    for t, op in need.items():
        if known.get(("cp.async", c.linear, t), -1) >= op:
            continue
        late = got[(ts == t) & (got > known.get(("cp.async", c.linear, t), -1))]
        op = int(late.min())
        b = int((np.arange(lo, hi) if n is None else idx)[sel][(ts == t) & (got == op)][0])
        cwhere, cwho = c.cpa_info.get(op, ("?", f"thread {t}"))
        raise AsyncWriteNotObserved(
            f"{reader} at {where} {what} shared byte 0x{b:x} ({M.prog.shared_name(b)}) of CTA {c.ctaid}, which the "
            f"cp.async issued by {cwho} at {cwhere} writes, and this thread has not observed that copy complete: the "
            f"copy lands at some time after its issue. Wait first — cp.async.wait_group / wait_all in the issuing "
            f"thread (__pipeline_wait_prior, cg::wait, pipeline.consumer_wait) or the mbarrier phase its "
            f"cp.async.mbarrier.arrive completes (cuda::barrier) — and, when another thread issued it, a barrier "
            f"(__syncthreads) after that wait (PTX ISA: cp.async; its writes are visible only once its completion "
            f"is observed)")


def retire_writes(c) -> None:
    """Drop the landed writes every live warp of the CTA has observed."""
    writes = c.__dict__.get("async_writes")
    if not writes or len(writes) < 32:
        return
    live = [w for w in c.warps if not w.finished]   # (Warp.finished: every lane exited)
    for op in [op for op, r in writes.items()
               if r[2] is not None and all(w.known.get(r[2][0], -1) >= r[2][1] for w in live)]:
        del writes[op]


# ---------------------------------------------------------------------------------------------
# inside a warp: lanes are ordered by __syncwarp (bar.warp.sync) or a CTA barrier, not by being one warp
# ---------------------------------------------------------------------------------------------
def _syncs(c):
    a = c.__dict__.get("warp_syncs")
    if a is None:
        a = c.warp_syncs = np.zeros(len(c.warps), np.int64)
        c.smem_wlane = np.full(c.smem.size, -1, np.int8)
        c.smem_wsync = np.zeros(c.smem.size, np.int64)
    return a


def warp_synced(w, lanes=None) -> None:
    """bar.warp.sync (or a barrier) by warp w: its lanes' earlier stores and what single lanes learned are
    now the whole warp's."""
    _syncs(w.cta)[w.wid] += 1
    tl = w.cta.__dict__.get("tc_lanes")
    if tl and (w.tc_last is None or w.tc_last[1]):
        # the lanes' tcgen05 work, fenced (tcgen05.fence::before_thread_sync) before this sync, is now ordered
        # before whatever a single lane does next; work not yet fenced stays each lane's own
        tl.pop(w.wid, None)
    lk = w.cta.__dict__.get("lane_known")
    if lk:
        for key in [k for k in lk if k[0] == w.wid]:
            merge(w.known, lk.pop(key))


def record_lane_stores(c, w, byte_idx, lanes) -> None:
    """The lanes `lanes` of warp w stored the bytes `byte_idx` (one row of byte offsets per lane)."""
    syncs = _syncs(c)
    c.smem_wlane[byte_idx] = np.asarray(lanes, np.int8).reshape(-1, 1) if np.ndim(byte_idx) == 2 else lanes
    c.smem_wsync[byte_idx] = syncs[w.wid]


def record_span_stores(c, w, lo: int, hi: int, lanes) -> None:
    """`record_lane_stores` for lanes whose pieces fill shared bytes [lo, hi) exactly, in lane order."""
    syncs = _syncs(c)
    c.smem_wlane[lo:hi].reshape(len(lanes), -1)[:] = np.asarray(lanes, np.int8).reshape(-1, 1)
    c.smem_wsync[lo:hi] = syncs[w.wid]


def record_row_stores(c, w, nb: int, rows, lanes) -> None:
    """`record_lane_stores` for lanes each of which stored row rows[k] of the shared bytes taken nb at a time."""
    syncs = _syncs(c)
    n = c.smem_wlane.size - c.smem_wlane.size % nb
    c.smem_wlane[:n].reshape(-1, nb)[rows] = np.asarray(lanes, np.int8).reshape(-1, 1)
    c.smem_wsync[:n].reshape(-1, nb)[rows] = syncs[w.wid]


def require_lane_order(M, c, lo: int, hi: int, w, lane: int, what: str, where: str, who: str, flat=None) -> None:
    """An asynchronous read issued by lane `lane` of warp w: bytes other lanes of w stored must be ordered
    before it by a __syncwarp (or a barrier) after the store."""
    if c is not w.cta or c.__dict__.get("warp_syncs") is None:
        return
    sel = slice(lo, hi) if flat is None else flat
    wr, wl, ws = c.smem_wwarp[sel], c.smem_wlane[sel], c.smem_wsync[sel]
    bad = (wr == w.wid) & (wl >= 0) & (wl != lane) & (ws >= c.warp_syncs[w.wid])
    if bad.any():
        i = int(np.nonzero(bad)[0][0])
        b = lo + i if flat is None else int(flat[i])
        raise GenericWriteNotOrdered(
            f"{what} issued by {who} at {where} reads shared byte 0x{b:x} ({M.prog.shared_name(b)}) of CTA {c.ctaid}, "
            f"which lane {int(wl[i])} of the same warp stored with no __syncwarp() between that store and this issue: "
            f"lanes of a warp are not ordered by being one warp (independent thread scheduling); the issuing lane must "
            f"be ordered after the others' stores (and their fence.proxy.async) by __syncwarp() or a barrier")


def learn_lanes(w, lanes, key, seq: int) -> None:
    """Only the lanes `lanes` of warp w observed this completion (e.g. lane 0's cp.async.bulk.wait_group)."""
    live = ~w.exited
    if not (live & ~lanes).any():
        learn(w, key, seq)
        return
    lk = w.cta.__dict__.setdefault("lane_known", {})
    for lane in np.nonzero(lanes)[0].tolist():
        d = lk.setdefault((w.wid, lane), {})
        if d.get(key, -1) < seq:
            d[key] = seq


def lane_knows(w, lanes, r) -> bool:
    """Every lane in `lanes` (an index array) has observed region r's completion on its own."""
    lk = w.cta.__dict__.get("lane_known")
    if not lk:
        return False
    return all(lk.get((w.wid, int(x)), {}).get(r.key, -1) >= r.seq for x in lanes)


# ---------------------------------------------------------------------------------------------
# tcgen05 work handed to another thread: each lane's share goes only through a sync that lane reaches
# ---------------------------------------------------------------------------------------------
def lanes_of(mask: int):
    return np.array([(mask >> i) & 1 for i in range(32)], bool)


def lane_bits(m) -> int:
    """A lane mask (32 booleans) as an int, bit i for lane i."""
    return int(sum(1 << int(i) for i in np.nonzero(m)[0]))


def tc_lanes_did(w, lanes) -> None:
    """The lanes `lanes` of warp w executed a warp-collective tcgen05 operation (each thread its share)."""
    tl = w.cta.__dict__.setdefault("tc_lanes", {})
    tl[w.wid] = tl.get(w.wid, 0) | lane_bits(lanes)


def sync_entry(w, m=None, where: str = ""):
    """Warp w's latest tcgen05 operation, handed to a thread synchronisation that the lanes `m` reach (None: the
    whole warp, as bar.sync does): (warp, who, where, fenced, parted). `parted` = (the lanes that executed it since
    the warp last synchronised after fencing it and do not reach this sync, the sync's line), or None."""
    tl = w.cta.__dict__.get("tc_lanes")
    did = tl.pop(w.wid, 0) if tl else 0
    missing = did & ~lane_bits(m) if m is not None else 0
    entry = (w, w.who(), *w.tc_last, (missing, where) if missing else None)
    w.tc_last = None
    return entry
