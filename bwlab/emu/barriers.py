"""Synchronisation in a launch: the CTA's named barriers (bar / barrier), the cluster barrier
(barrier.cluster) and the mbarriers (`bwlab.hw.mbarrier.Mbarrier`, one per initialised shared slot).

`Launch.sync` (one per launch). A warp that waits at a barrier is `blocked` (the scheduler skips it)
until the barrier completes; then its pcs advance. Whole warps that have exited count as arrived at
CTA barriers, as on the GPU. Passing a barrier is a thread synchronisation for the tcgen05 ordering
rules (`order.thread_synced`).
"""
from __future__ import annotations

import numpy as np

from ..hw.mbarrier import Mbarrier
from . import order
from .errors import EmuError, EmuFault, MbarrierInitNotOrdered, ProtocolError

__all__ = ["Synchronisation"]


class Synchronisation:
    """Named barriers, the cluster barrier and the mbarriers of one launch."""

    def __init__(self, launch):
        self.launch = launch

    def cta_barrier(self, w, group, em, bid, count, arrive_only, red):
        c = w.cta
        if not 0 <= bid < 16:
            raise EmuError(f"{w.who(group)}: barrier id {bid} (PTX ISA: 0..15)")
        if count is not None and (count % 32 or count <= 0):
            raise EmuError(f"{w.who(group)}: bar with thread count {count}: it must be a positive multiple of 32")
        b = c.barriers.setdefault(bid, {"arrived": 0, "expected": None, "waiters": [], "red": [], "warps": []})
        exp = count if count is not None else c.nthreads
        if b["expected"] is not None and b["expected"] != exp and b["arrived"]:
            raise EmuError(f"{w.who(group)}: barrier {bid} is used with thread count {exp} while {b['arrived']} "
                           f"threads arrived expecting {b['expected']}")
        b["expected"] = exp
        b["arrived"] += w.nthreads
        b["warps"].append(w.wid)
        order.warp_synced(w)
        order.release(w)
        order.merge(b.setdefault("known", {}), w.known)
        if w.tc_last is not None:
            b.setdefault("tc", []).append(order.sync_entry(w))
        redop, rc, wd = red
        if redop is not None:
            b["red"].append((w, em, rc(w) & em, wd, redop))
        self.launch.progress()
        self.launch.note(w, f"bar {bid}")
        if arrive_only:
            w.pc[group] += 1
        else:
            w.blocked = f"bar.sync {bid} ({b['arrived']} of {exp} threads arrived)"
            w.wait_info = ("bar", bid)
            b["waiters"].append((w, group))
        self.complete_if_ready(c, bid)

    def complete_if_ready(self, c, bid):
        b = c.barriers.get(bid)
        if b is None:
            return
        exp = b["expected"]
        # whole warps that have exited count as arrived (the hardware counts warps)
        if exp == c.nthreads:
            gone = sum(x.nthreads for x in c.warps if x.finished and x.wid not in b["warps"])   # finished: all exited
        else:
            gone = 0
        if b["arrived"] + gone < exp:
            waiting = f"bar.sync {bid} ({b['arrived']} of {exp} threads arrived)"
            for w, _ in b["waiters"]:
                w.blocked = waiting
            return
        if gone and b["arrived"] < exp:
            self.launch.warnings.append(
                f"CTA {c.ctaid}: barrier {bid} completed with {b['arrived']} of {exp} threads arriving, the rest "
                "counted because their warps had exited (what the GPU does; the PTX ISA leaves a barrier that "
                "not every thread reaches undefined)")
        red = b["red"]
        del c.barriers[bid]
        for w, group in b["waiters"]:
            w.blocked = None
            w.wait_info = None
            w.pc[group] += 1
            order.merge(w.known, b.get("known", {}))
            order.thread_synced(w, b.get("tc", ()), f"bar.sync {bid}")
        if red:
            total = np.concatenate([p[em] for _, em, p, _, _ in red])
            for w, em, p, wd, redop in red:
                if redop == "popc":
                    v = np.full(32, np.uint32(int(total.sum())))
                else:
                    v = np.full(32, bool(total.all()) if redop == "and" else bool(total.any()))
                wd(w, v, em)
        self.launch.progress()

    def cluster_barrier(self, w, group, em, arrive, ins):
        cl = w.cta.cluster
        key = (w.cta.rank, w.wid)
        if arrive:
            if key in cl.bar_arrived:
                raise ProtocolError(f"{w.who(group)} at {self.launch.where(ins)}: barrier.cluster.arrive twice without "
                                    "barrier.cluster.wait in between")
            cl.bar_arrived.add(key)
            w.arrivals += 1
            order.warp_synced(w)
            order.release(w)
            known = cl.__dict__.setdefault("known", {})
            order.merge(known, w.known)
            order.merge(known, {("cluster.arrive", w.cta.linear, w.wid): w.arrivals})
            if w.tc_last is not None:
                cl.__dict__.setdefault("tc", []).append(order.sync_entry(w))
            w.pc[group] += 1
            self.launch.progress()
            self.complete_cluster_if_ready(cl)
            return
        # wait: for the phase this warp arrived in
        if key in cl.bar_arrived:
            need = sum(1 for c in cl.ctas for x in c.warps if not x.finished)
            w.blocked = (f"barrier.cluster.wait ({len(cl.bar_arrived)} of the cluster's {need} running warps had "
                         "arrived when this one began to wait)")
            w.wait_info = ("cluster", group.copy())
            self.complete_cluster_if_ready(cl)
            return
        w.pc[group] += 1

    def complete_cluster_if_ready(self, cl):
        if not cl.bar_arrived:
            return
        need = {(c.rank, x.wid) for c in cl.ctas for x in c.warps if not x.finished}
        if need <= cl.bar_arrived:
            cl.bar_arrived = set()
            tc = cl.__dict__.pop("tc", ())
            known = cl.__dict__.pop("known", {})
            for c in cl.ctas:
                for x in c.warps:
                    if not x.finished:
                        order.merge(x.known, known)
                        order.thread_synced(x, tc, "barrier.cluster")
                    if x.wait_info is not None and x.wait_info[0] == "cluster":
                        x.pc[x.wait_info[1]] += 1
                        x.blocked = None
                        x.wait_info = None
            self.launch.progress()

    def mbarrier(self, w, addr: int, what: str, ins, create_count=None):
        c, off = self.launch.mem.cta_of_cluster_addr(w, addr, what, ins)
        if c.exited:
            raise ProtocolError(f"{w.who()} at {self.launch.where(ins)}: {what} on an mbarrier of cluster rank {c.rank}, "
                                "which has exited")
        if create_count is not None:
            if off % 8:
                raise EmuFault(f"{w.who()} at {self.launch.where(ins)}: mbarrier at shared offset 0x{off:x} is not "
                               "8-byte aligned (PTX ISA: an mbarrier object is a .b64 aligned to 8 bytes)")
            if off + 8 > c.smem.size:
                raise EmuFault(f"{w.who()} at {self.launch.where(ins)}: mbarrier at 0x{off:x} is outside the CTA's "
                               f"{c.smem.size} bytes of shared memory")
            c.mbarriers[off] = Mbarrier(create_count)
            c.mbar_info[off] = (self.launch.where(ins), w.who())
            c.__dict__.setdefault("mbar_init_by", {})[off] = (w.wid, w.releases, self.launch.where(ins), w.who())
            c.mbar_unfenced[off] = (int(w.tid[0]) // 32, self.launch.where(ins))
            return c, off, c.mbarriers[off]
        if c is not w.cta:
            order.remote_access(w, c, f"executes {what} on its mbarrier '{self.launch.prog.shared_name(off)}'",
                                self.launch.where(ins))
        self.init_ordered(w, c, off, what, ins)
        bar = c.mbarriers.get(off)
        if bar is None:
            raise ProtocolError(f"{w.who()} at {self.launch.where(ins)}: {what} on shared offset 0x{off:x} "
                                f"({self.launch.prog.shared_name(off)}) of CTA rank {c.rank}, where no mbarrier was "
                                "initialised (mbarrier.init must come first, made visible by a fence and a barrier)")
        return c, off, bar

    def init_ordered(self, w, c, off: int, what: str, ins):
        """A warp that uses an mbarrier another warp initialised must be ordered after the init: a barrier
        (__syncthreads, barrier.cluster) that the initialising warp arrived at after mbarrier.init."""
        ib = c.__dict__.get("mbar_init_by", {}).get(off)
        if ib is None or (c is w.cta and ib[0] == w.wid):
            return
        wid, rel, where, who = ib
        if w.known.get(("release", c.linear, wid), 0) >= rel + 1:
            return
        raise MbarrierInitNotOrdered(
            f"{w.who()} at {self.launch.where(ins)}: {what} on the mbarrier '{self.launch.prog.shared_name(off)}' of "
            f"CTA {c.ctaid}, which {who} initialised at {where}, with no barrier between the init and this use: "
            "make the init visible (fence.mbarrier_init.release.cluster or fence.proxy.async) and order it before "
            "every other thread's use with __syncthreads (or barrier.cluster for peers) (PTX ISA: mbarrier.init; "
            "memory consistency model)")

    def fence_mbarrier_init(self, w):
        """fence.mbarrier_init / fence.proxy.async by warp w: its mbarrier.init are visible to the async proxy."""
        c = w.cta
        for off in [o for o, (wid, _) in c.mbar_unfenced.items() if wid == w.wid]:
            del c.mbar_unfenced[off]

    def async_uses_mbarrier(self, w, c, off: int, what: str, ins):
        """The async proxy (TMA complete_tx, tcgen05.commit) will signal the mbarrier at `off` of CTA c: its
        initialisation must have been fenced."""
        if c.mbarriers.get(off) is not None:
            self.init_ordered(w, c, off, what, ins)
        if not self.launch.check_proxy or off not in c.mbar_unfenced:
            return
        wid, where = c.mbar_unfenced[off]
        raise ProtocolError(
            f"{w.who()} at {self.launch.where(ins)}: {what} signals the mbarrier '{self.launch.prog.shared_name(off)}' of CTA {c.ctaid}, "
            f"initialised at {where} by warp {wid} without fence.mbarrier_init.release.cluster (or fence.proxy.async) "
            "after it: the async proxy may not see the initialisation (PTX ISA: mbarrier.init, memory consistency "
            "model, proxies)")
