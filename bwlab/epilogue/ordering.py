"""Bulk async-groups and the proxy fence: program-order models of one CTA's epilogue that name the
missing step (PTX ISA 9.7.9.25.2 "Async proxy", 9.7.9.27.2 cp.async.bulk.commit_group / wait_group;
CuTe include/cute/arch/copy_sm90.hpp: tma_store_fence, tma_store_arrive, tma_store_wait<N>).
"""
from __future__ import annotations

import numpy as np

__all__ = ["OrderingError", "BulkAsyncGroups", "EpilogueOrdering", "replay_states"]


class OrderingError(ValueError):
    """An epilogue step that the PTX memory model does not make safe (or a misused instruction)."""


class BulkAsyncGroups:
    """The bulk async-groups of ONE thread (the one that issues the TMA stores).

    * a TMA store joins the thread's currently open group;
    * ``commit_group`` closes it (``cp.async.bulk.commit_group``);
    * ``wait_group_read(N)``: wait until at most N of the most recent committed groups are still
      *reading their SMEM source*; older groups' buffers may be overwritten;
    * ``wait_group(N)``: wait until at most N are pending at all; older groups' GMEM writes are
      done and visible to this thread (PTX ISA 9.7.9.27.2.2).

    Groups belong to the thread: another thread learns nothing from this thread's wait unless a
    barrier follows. An operation that was issued but never committed is in no group, so no
    wait_group covers it: the model says so instead of letting it pass.
    """

    def __init__(self):
        self.open: list = []       # operations issued since the last commit
        self.groups: list = []     # committed: dicts {ops, read_done, complete}

    def issue(self, op):
        self.open.append(op)

    def commit_group(self):
        if not self.open:
            # Legal PTX (an empty group completes at once), but in an epilogue it is a bug sign.
            self.groups.append({"ops": [], "read_done": True, "complete": True})
            return len(self.groups) - 1
        self.groups.append({"ops": list(self.open), "read_done": False, "complete": False})
        self.open.clear()
        return len(self.groups) - 1

    @staticmethod
    def _check_n(n):
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
            raise OrderingError(f"wait_group N: N must be a non-negative integer constant (an "
                                f"immediate in PTX), got {n!r}")

    def _wait(self, n: int, read_only: bool):
        self._check_n(n)
        if self.open:
            what = "wait_group.read" if read_only else "wait_group"
            raise OrderingError(
                f"{len(self.open)} bulk operation(s) issued but not committed ({self.open}): "
                f"{what} {n} waits only for committed groups. Call commit_group first.")
        done = self.groups[:max(0, len(self.groups) - n)]
        for g in done:
            g["read_done"] = True
            if not read_only:
                g["complete"] = True
        return [op for g in done for op in g["ops"]]

    def wait_group_read(self, n: int):
        """Returns the operations whose SMEM reads are now known to be finished."""
        return self._wait(n, True)

    def wait_group(self, n: int):
        """Returns the operations now known to be complete (GMEM written, visible to this thread)."""
        return self._wait(n, False)

    def state_of(self, op) -> str:
        if op in self.open:
            return "issued, not committed"
        for g in self.groups:
            if op in g["ops"]:
                return "complete" if g["complete"] else ("read done" if g["read_done"] else "in flight")
        return "never issued"

    @property
    def pending(self) -> int:
        return sum(1 for g in self.groups if not g["complete"])


class EpilogueOrdering:
    """One CTA's epilogue in program order, checked against the PTX rules for SMEM reuse, the proxy
    fence and bulk groups. Every method is one step of the kernel:

    ``st_shared(buf)``        all epilogue threads write buffer `buf` (generic proxy)
    ``fence_proxy_async()``   every writing thread: ``fence.proxy.async.shared::cta``
    ``bar_sync()``            the epilogue threads meet (``bar.sync`` / named barrier)
    ``tma_store(buf)``        the elected thread issues the TMA store (async proxy reads `buf`)
    ``commit_group()``, ``wait_group_read(n)``, ``wait_group(n)``   the elected thread's bulk groups
    ``read_gmem(buf, by)``    a thread reads the GMEM tile stored from `buf` (`by`: 'issuer' | 'other')
    ``exit()``                the CTA ends (its SMEM is released)

    A step that the rules do not make safe raises `OrderingError` naming the missing piece
    (``strict=True``), or is recorded in `hazards` (``strict=False``: for showing a broken
    schedule in full). See `PROXY_FENCE_RULE`.
    """

    def __init__(self, buffers=("D",), strict: bool = True):
        if not buffers:
            raise ValueError("at least one SMEM buffer")
        self.strict = strict
        self.groups = BulkAsyncGroups()
        # per buffer: 'empty' | 'written' (unfenced) | 'fenced' | 'published'
        self.smem = {b: "empty" for b in buffers}
        self.stores = {b: [] for b in buffers}     # store ops issued from each buffer
        self.visible_to_all: set = set()           # store ops complete and published by a barrier
        self.read_free: set = set()                # store ops whose SMEM reads are known to all
        self.hazards: list = []
        self.log: list = []
        self._n = 0

    # -- helpers -------------------------------------------------------------------------------
    def _buf(self, b):
        if b not in self.smem:
            raise ValueError(f"unknown buffer {b!r}; buffers: {list(self.smem)}")
        return b

    def _hazard(self, msg):
        self.hazards.append(f"step {len(self.log)}: {msg}")
        if self.strict:
            raise OrderingError(msg)

    def _busy_stores(self, b):
        """Stores from buffer b that may still be reading it, as far as the writers know."""
        return [op for op in self.stores[b] if op not in self.read_free]

    # -- steps ---------------------------------------------------------------------------------
    def st_shared(self, buf):
        b = self._buf(buf)
        self.log.append(f"st.shared -> {b}")
        busy = self._busy_stores(b)
        if busy:
            states = ", ".join(f"{op}: {self.groups.state_of(op)}" for op in busy)
            self._hazard(f"write-after-read on SMEM buffer {b}: {states}. The issuing thread must "
                         f"wait_group.read until those stores have read {b}, then bar.sync so the "
                         f"writers know, before {b} is overwritten.")
        self.smem[b] = "written"

    def fence_proxy_async(self):
        self.log.append("fence.proxy.async.shared::cta")
        for b, s in self.smem.items():
            if s == "written":
                self.smem[b] = "fenced"

    def bar_sync(self):
        self.log.append("bar.sync")
        for b, s in self.smem.items():
            if s == "fenced":
                self.smem[b] = "published"
        for g in self.groups.groups:
            if g["read_done"]:
                self.read_free.update(g["ops"])
            if g["complete"]:
                self.visible_to_all.update(g["ops"])

    def tma_store(self, buf):
        b = self._buf(buf)
        self._n += 1
        op = f"store#{self._n}({b})"
        self.log.append(f"tma_store {op}")
        s = self.smem[b]
        if s == "written":
            self._hazard(f"{op}: {b} was written with st.shared but no fence.proxy.async.shared::cta "
                         f"followed: the async proxy (TMA) may read stale SMEM.")
        elif s == "fenced":
            self._hazard(f"{op}: the writers fenced {b} but no barrier followed: the issuing thread "
                         f"is not ordered after the other threads' writes and fences.")
        elif s == "empty":
            self._hazard(f"{op}: nothing was written to {b} before it was stored.")
        self.stores[b].append(op)
        self.groups.issue(op)
        return op

    def commit_group(self):
        self.log.append("cp.async.bulk.commit_group")
        return self.groups.commit_group()

    def wait_group_read(self, n: int):
        self.log.append(f"cp.async.bulk.wait_group.read {n}")
        return self.groups.wait_group_read(n)

    def wait_group(self, n: int):
        self.log.append(f"cp.async.bulk.wait_group {n}")
        return self.groups.wait_group(n)

    def read_gmem(self, buf, by: str = "issuer"):
        b = self._buf(buf)
        if by not in ("issuer", "other"):
            raise ValueError("by must be 'issuer' (the thread that issued the stores) or 'other'")
        self.log.append(f"read GMEM tile of {b} ({by})")
        if not self.stores[b]:
            self._hazard(f"no TMA store from {b} was issued; the GMEM tile holds old data.")
            return
        op = self.stores[b][-1]
        state = self.groups.state_of(op)
        if state != "complete":
            hint = (" wait_group.read only says the SMEM source has been read; the GMEM writes need "
                    "wait_group (without .read)." if state == "read done" else "")
            self._hazard(f"{op} is {state}: its GMEM writes are not known to be visible.{hint}")
        elif by == "other" and op not in self.visible_to_all:
            self._hazard(f"{op} completed for the issuing thread only; another thread needs a "
                         f"barrier after the issuer's wait_group.")

    def exit(self):
        self.log.append("exit")
        if self.groups.open:
            self._hazard(f"the CTA exits with uncommitted bulk stores {self.groups.open}.")
        busy = [op for g in self.groups.groups if not g["read_done"] for op in g["ops"]]
        if busy:
            self._hazard(f"the CTA exits while {busy} may still read its SMEM: wait_group.read 0 "
                         f"(CUTLASS: tma_store_wait<0>) before leaving.")




def replay_states(e: EpilogueOrdering) -> tuple[list, list]:
    """Replay `e`'s log step by step (non-strict): ([(step, {store op: state}) after each step],
    hazards), a state being what the issuing thread knows (`BulkAsyncGroups.state_of`): 'issued, not
    committed', 'in flight' (may still read its SMEM), 'read done' or 'complete'."""
    r = EpilogueOrdering(buffers=tuple(e.smem), strict=False)
    snaps = []
    for step in e.log:
        name, _, arg = step.partition(" ")
        if name == "st.shared":
            r.st_shared(arg.split()[-1])
        elif name == "tma_store":
            r.tma_store(arg[arg.index("(") + 1:-1])
        elif name in ("cp.async.bulk.wait_group.read", "cp.async.bulk.wait_group"):
            (r.wait_group_read if name.endswith(".read") else r.wait_group)(int(arg))
        elif name == "read":
            b, by = arg[len("GMEM tile of "):].split(" ")
            r.read_gmem(b, by.strip("()"))
        else:
            {"fence.proxy.async.shared::cta": r.fence_proxy_async, "bar.sync": r.bar_sync, "exit": r.exit,
             "cp.async.bulk.commit_group": r.commit_group}[name]()
        snaps.append((step, {op: r.groups.state_of(op) for b in r.stores for op in r.stores[b]}))
    return snaps, r.hazards
