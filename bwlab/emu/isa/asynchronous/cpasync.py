"""Ampere's asynchronous copy (PTX ISA, "Data Movement and Conversion Instructions": cp.async,
cp.async.commit_group, cp.async.wait_group / wait_all, cp.async.mbarrier.arrive).

What CUDA emits it for: `__pipeline_memcpy_async` + `__pipeline_commit` / `__pipeline_wait_prior`
(cuda_pipeline.h), `cuda::memcpy_async` with a `cuda::pipeline` or (when the copy is not one 16-byte
aligned bulk) a `cuda::barrier`, `cooperative_groups::memcpy_async` + `cg::wait`.

The model, per thread, as the ISA states it:

* `cp.async.{ca,cg}.shared.global [dst], [src], cp-size{, src-size}{, ignore-src}` copies cp-size bytes (4, 8
  or 16; `.cg` only 16) from global to the thread's own CTA's shared memory; only src-size bytes are read and the
  rest of the cp-size bytes are zero-filled; a true ignore-src predicate reads none (all zeros). The copy lands
  after a seeded latency (`Launch.schedule`), not at issue: the global bytes are read when it lands.
* every cp.async joins the thread's current, uncommitted group; `cp.async.commit_group` closes that group (an
  empty one too: `__pipeline_commit` in a loop relies on it); `cp.async.wait_group N` waits until all but the N most
  recent committed groups are complete; `cp.async.wait_all` is commit_group + wait_group 0.
* `cp.async.mbarrier.arrive{.noinc}` makes the mbarrier track all of the thread's prior cp.async: one arrive-on
  happens when they have all completed. Without `.noinc` the pending count of the current phase is incremented
  by 1 at issue, so that arrival nets to zero (the `cuda::barrier` pattern: the thread's own arrive still
  counts); with `.noinc` it is not, and the async arrival is one of the arrivals `mbarrier.init` expects.

Ordering (bwlab.emu.order): each copy is an asynchronous write into shared memory, observed complete under the key
("cp.async", CTA, thread) by the issuing thread's wait_group / wait_all, or by a wait on the mbarrier phase its
cp.async.mbarrier.arrive completes. Any other thread learns it only through synchronisation after that
(`__syncthreads`, an mbarrier). A read of the bytes by a thread that has not observed the copy complete is
`AsyncWriteNotObserved`, naming the read and the cp.async, whatever the timing of this run (the CTA keeps, per
shared byte, the latest cp.async that writes it and its thread: `order.require_cpasync_observed`).
"""
from __future__ import annotations

import numpy as np

from ... import order
from ...errors import EmuFault, UnsupportedInstruction
from ..operands import address, bits_reader
from .bulk import older_groups

__all__ = ["copy", "commit_group", "wait_group", "wait_all", "mbarrier_arrive", "WHAT"]

WHAT = "the cp.async"


def _key(c, t: int):
    return ("cp.async", c.linear, t)


def _state(c):
    """Per CTA: thread -> its open (uncommitted) ops, thread -> its committed groups (lists of ops, oldest first),
    op -> the clock time it lands, thread -> the latest op it issued."""
    s = c.__dict__.get("cpa")
    if s is None:
        s = c.cpa = ({}, {}, {}, {})
    return s


def _bytes(c):
    """Per shared byte of c: the latest cp.async that writes it (0: none) and its issuing thread."""
    got = c.__dict__.get("cpa_bytes")
    if got is None:
        got = c.cpa_bytes = (np.zeros(c.smem.size, np.int64), np.zeros(c.smem.size, np.int32))
        c.cpa_info = {}
    return got


def copy(ctx, ins, base, mods):
    """cp.async.{ca,cg}.shared{::cta}.global{.level::cache_hint}{.level::prefetch_size}."""
    args = list(ins.args)
    if "L2::cache_hint" in mods:
        args = args[:-1]        # the cache policy: a hint, no effect on the result
    if len(args) < 3 or args[2][0] != "imm":
        raise UnsupportedInstruction(f"`{ins.op}`: cp-size must be the immediate 4, 8 or 16 (PTX ISA: cp.async)")
    cp = int(args[2][1].rstrip("uU"), 0)
    if cp not in (4, 8, 16):
        raise EmuFault(f"`{ins.op}`: cp-size {cp} is not 4, 8 or 16 (PTX ISA: cp.async)")
    if "cg" in mods and cp != 16:
        raise EmuFault(f"`{ins.op}`: cp.async.cg copies 16 bytes only, not {cp} (PTX ISA: cp.async)")
    dst, src = address(ctx, args[0]), address(ctx, args[1])
    rsrc = rign = None
    rest = args[3:]
    if rest and rest[-1][0] in ("reg", "neg") and (rest[-1][0] == "neg" or ctx.reg_type(rest[-1][1]) == "pred"):
        rign = bits_reader(ctx, rest[-1], "pred")
        rest = rest[:-1]
    if rest:
        rsrc = bits_reader(ctx, rest[0], "u32")

    def body(w, m):
        M = w.machine
        c = w.cta
        d, s = dst(w), src(w)
        ss = rsrc(w) if rsrc is not None else None
        ig = rign(w) if rign is not None else None
        opened, _, due, last = _state(c)
        where = M.where(ins)
        for lane in np.nonzero(m)[0]:
            n = cp if ss is None else int(ss[lane])
            if ig is not None and ig[lane]:
                n = 0
            if n > cp:
                raise EmuFault(f"{w.who(np.arange(32) == lane)} at {where}: src-size {n} is larger than cp-size {cp} "
                               "(PTX ISA: cp.async reads src-size bytes and zero-fills the rest of cp-size)")
            _, off = M.mem.cta_of_cluster_addr(w, int(d[lane]), "the cp.async destination", ins, own=True)
            gaddr = int(s[lane])
            if off % cp or gaddr % cp:
                raise EmuFault(f"{w.who(np.arange(32) == lane)} at {where}: cp.async of {cp} bytes needs both "
                               f"addresses aligned to {cp} bytes (shared 0x{off:x}, global 0x{gaddr:x}); the GPU "
                               "faults with a misaligned address")
            if off + cp > c.smem.size:
                raise EmuFault(f"{w.who(np.arange(32) == lane)} at {where}: the cp.async destination "
                               f"[0x{off:x}, 0x{off + cp:x}) passes the CTA's {c.smem.size} bytes of shared memory")
            if n:
                M.memory.read(gaddr, n, "cp.async source")      # inside an allocation (faults at issue)
            t = int(w.tid[lane])
            who = w.who(np.arange(32) == lane)
            known = order.snapshot(w)

            def land(off=off, gaddr=gaddr, n=n, who=who, known=known):
                if c.exited:
                    M.warnings.append(f"CTA {c.ctaid}: {who} exited with its cp.async issued at {where} in flight")
                    return
                data = np.zeros(cp, np.uint8)
                if n:
                    data[:n] = M.memory.read(gaddr, n, "cp.async source")   # as it is when the copy lands
                if c.__dict__.get("async_reads"):
                    order.require_write_ordered(M, c, off, off + cp, known, f"{WHAT} issued by {who}", where,
                                                "lands in")
                c.smem[off:off + cp] = data
                c.smem_writer[off:off + cp] = -1
            delay = M.latency(cp)
            op = M.schedule(delay, land, f"cp.async of {cp} bytes by {who}")
            due[op] = M.clock + max(1, int(delay))
            opened.setdefault(t, []).append(op)
            last[t] = op
            ops, thr = _bytes(c)
            ops[off:off + cp] = op      # a read of these bytes must know this op complete (order.require_cpasync_observed)
            thr[off:off + cp] = t
            c.cpa_info[op] = (where, who)
        M.note(w, "cp.async")
    return body


def commit_group(ctx, ins, base, mods):
    """cp.async.commit_group: the thread's cp.async since its last commit become one group (maybe empty)."""
    def body(w, m):
        opened, groups, _, _ = _state(w.cta)
        for lane in np.nonzero(m)[0]:
            t = int(w.tid[lane])
            groups.setdefault(t, []).append(opened.pop(t, []))
    return body


def _wait(ins, w, group, em, n, commit):
    c, M = w.cta, w.machine
    opened, groups, due, _ = _state(c)
    ok = True
    learned = []
    for lane in np.nonzero(em)[0]:
        t = int(w.tid[lane])
        gs = groups.get(t, [])
        if commit and opened.get(t):
            gs = gs + [opened[t]]
        complete, seq, _ = older_groups(gs, n, M.inflight_ops)
        if not complete:
            ok = False
            continue
        if seq is not None:
            learned.append((t, seq))
    if not ok:
        what = "cp.async.wait_all" if commit else f"cp.async.wait_group {n}"
        M.spin(w, ("cp.async", f"{what} at {M.where(ins)}: more than {n} cp.async groups of this thread are "
                               "still in flight"), group)
        return
    for lane in np.nonzero(em)[0]:
        t = int(w.tid[lane])
        gs = groups.get(t, [])
        if commit and opened.get(t):
            gs = gs + [opened.pop(t)]
        for g in gs[:len(gs) - n] if n else gs:
            for op in g:
                due.pop(op, None)
        groups[t] = gs[len(gs) - n:] if n else []
    # the waiting threads know (kept per warp: a lane reading a warp-mate's copy after both waited is not
    # flagged, though the ISA orders it only through __syncwarp; other warps learn it only through a barrier)
    for t, seq in learned:
        order.learn(w, _key(c, t), seq)
    w.pc[group] += 1


def wait_group(ctx, ins, base, mods):
    """cp.async.wait_group N: blocks until at most N of the thread's most recent groups are pending."""
    rn = bits_reader(ctx, ins.args[0], "u32")

    def body(w, group, em):
        n = int(rn(w)[em].max()) if em.any() else 0
        _wait(ins, w, group, em, n, commit=False)
    return body


def wait_all(ctx, ins, base, mods):
    """cp.async.wait_all: cp.async.commit_group then cp.async.wait_group 0."""
    def body(w, group, em):
        _wait(ins, w, group, em, 0, commit=True)
    return body


def mbarrier_arrive(ctx, ins, base, mods):
    """cp.async.mbarrier.arrive{.noinc}.shared{::cta}.b64 [mbar]: an arrive-on once all of the thread's prior
    cp.async have completed."""
    noinc = "noinc" in mods
    addr = address(ctx, ins.args[0])

    def body(w, m):
        M = w.machine
        a = addr(w)
        opened, groups, due, last = _state(w.cta)
        where = M.where(ins)
        for lane in np.nonzero(m)[0]:
            c, off, bar = M.sync.mbarrier(w, int(a[lane]), ins.op, ins)
            if c is not w.cta:
                raise EmuFault(f"{w.who(np.arange(32) == lane)} at {where}: cp.async.mbarrier.arrive names an mbarrier "
                               "of another CTA (its state space is .shared::cta)")
            t = int(w.tid[lane])
            mine = [op for op in opened.get(t, []) + [op for g in groups.get(t, []) for op in g]
                    if op in M.inflight_ops]
            at = max((due[op] for op in mine), default=M.clock)
            if not noinc:
                bar.pending += 1        # PTX ISA: the async arrive-on then nets to zero in this phase
            seq = last.get(t)
            known = {_key(c, t): seq} if seq is not None else {}

            def arrive(c=c, off=off, bar=bar, known=known):
                if c.exited:
                    return
                order.signal(c, off, bar, known, None, lambda: bar.arrive(1))
            M.schedule(max(1, at - M.clock), arrive,
                       f"cp.async.mbarrier.arrive{'.noinc' if noinc else ''} @{c.rank}:{off}")
            M.note(w, f"cp.async.mbarrier.arrive {M.prog.shared_name(off)}")
        M.progress()
    return body
