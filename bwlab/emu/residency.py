"""Which CTAs of a launch are resident on the emulated GPU at once, and on which SM.

The GPU keeps as many CTAs resident as its SMs can hold and starts the next one when a resident CTA
exits, so CTAs that are resident together interleave (a flag one block sets and another spins on
completes), while a CTA that is not yet resident cannot help one that is (a handshake across "waves"
hangs, on the GPU as here). `GPU` describes the machine (an H100 by default: 132 SMs and its per-SM
limits); `emulated_gpu(...)` changes it for the launches made inside a `with` block.

Per SM a CTA takes its threads (whole warps), one of the CTA slots, its shared memory (the 1 KiB the
system reserves per CTA included) and its registers. Registers are an ESTIMATE: the emulator sees
PTX, whose virtual registers ptxas later allocates; it counts the kernel's declared 32-bit registers
(64-bit ones twice, predicates not at all), rounded up to a multiple of 8 and capped at 255 per thread.
A cluster is placed whole, its CTAs on distinct SMs (the GPC a cluster must fit in is not modelled).
CTAs on one SM share its Tensor Memory (`tmem_of` in `isa.asynchronous.tcgen05`).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

import numpy as np

from .errors import TmemAllocHang
from ..util import ceil_div

__all__ = ["GPU", "H100", "current_gpu", "emulated_gpu", "Placement", "admit", "retire", "not_resident", "sm_tmem",
           "alloc_waits", "tmem_hang", "waiting", "WAIT"]


@dataclass(frozen=True)
class GPU:
    name: str = "H100"
    sms: int = 132
    threads_per_sm: int = 2048
    ctas_per_sm: int = 32
    smem_per_sm: int = 228 * 1024
    smem_per_cta: int = 227 * 1024
    regs_per_sm: int = 64 * 1024
    regs_per_thread: int = 255


H100 = GPU()
_CURRENT = [H100]


def current_gpu() -> GPU:
    return _CURRENT[-1]


@contextlib.contextmanager
def emulated_gpu(gpu: GPU | None = None, **changes):
    """`with emulated_gpu(sms=1): ...` — launches inside run on that machine (H100 limits otherwise)."""
    _CURRENT.append(replace(gpu or current_gpu(), **changes))
    try:
        yield _CURRENT[-1]
    finally:
        _CURRENT.pop()


def register_estimate(prog, kernel: str) -> int:
    """32-bit registers per thread the kernel's PTX declares (see the module's note: an estimate)."""
    f = prog.module.functions[kernel]
    n = 0
    for _, typ in f.regs.items():
        if typ == "pred":
            continue
        n += 2 if typ.endswith("64") else 1
    return n


class Placement:
    """The SMs' free resources during one launch; places clusters whole, releases exited CTAs."""

    def __init__(self, gpu: GPU, threads: int, smem: int, regs_per_thread: int):
        self.gpu = gpu
        warps = ceil_div(threads, 32)
        r = min(gpu.regs_per_thread, ceil_div(max(regs_per_thread, 1), 8) * 8)
        self.need = {"threads": warps * 32, "ctas": 1, "smem": smem, "regs": r * warps * 32}
        self.cap = {"threads": gpu.threads_per_sm, "ctas": gpu.ctas_per_sm, "smem": gpu.smem_per_sm,
                    "regs": gpu.regs_per_sm}
        self._keys = list(self.need)
        self.used = np.zeros((gpu.sms, len(self._keys)), np.int64)   # per SM: threads, ctas, smem, regs in use
        self.regs_per_thread = r
        if self.need["regs"] > self.cap["regs"]:
            # the estimate says one CTA alone would not fit: PTX declares more virtual registers than ptxas
            # allocates, so the estimate is not enforced below one CTA per SM
            self.need["regs"] = self.cap["regs"]
        fits = {k: self.cap[k] // self.need[k] for k in self.need}
        self.per_sm = min(fits.values())
        self.limit = min(fits, key=lambda k: fits[k])

    def _need(self):
        return np.array([self.need[k] for k in self._keys], np.int64)

    def _cap(self):
        return np.array([self.cap[k] for k in self._keys], np.int64)

    def place(self, size: int):
        """SMs for a cluster of `size` CTAs (distinct, least loaded first), or None when it does not fit."""
        need = self._need()
        free = np.nonzero((self.used + need <= self._cap()).all(axis=1))[0]
        if len(free) < size:
            return None
        ctas = self.used[free, self._keys.index("ctas")]
        sms = free[np.argsort(ctas, kind="stable")][:size].tolist()   # stable: equal loads keep SM order
        self.used[sms] += need
        return sms

    def release(self, sm: int):
        self.used[sm] -= self._need()

    def why(self) -> str:
        words = {"threads": f"{self.cap['threads']} threads", "ctas": f"{self.cap['ctas']} CTAs",
                 "smem": f"{self.cap['smem'] // 1024} KiB of shared memory",
                 "regs": f"{self.cap['regs'] // 1024} K registers (estimated {self.regs_per_thread} per thread "
                         "from the PTX)"}
        return f"{self.per_sm} CTA(s) per SM, limited by {words[self.limit]}"


def admit(launch, pending) -> bool:
    """Place waiting clusters, in launch order, while they fit (each CTA on an SM of its own)."""
    CTA, Cluster = launch.CTA, launch.Cluster   # the launch's own classes (this module does not import the machine)
    cx, cy, cz = launch.cluster_dims
    gx, gy, _ = launch.grid
    added = False
    while pending:
        sms = launch.placement.place(cx * cy * cz)
        if sms is None:
            break
        cid = pending.pop()
        cl = Cluster(cid, cx * cy * cz)
        for rz in range(cz):
            for ry in range(cy):
                for rx in range(cx):
                    ctaid = (cid[0] * cx + rx, cid[1] * cy + ry, cid[2] * cz + rz)
                    rank = rx + cx * (ry + cy * rz)
                    linear = ctaid[0] + gx * (ctaid[1] + gy * ctaid[2])
                    cta = CTA(launch, ctaid, linear, cl, rank, (rx, ry, rz))
                    cta.sm = sms[rank]
                    cl.ctas.append(cta)
        launch.resident.append(cl)
        launch.cluster = cl
        added = True
    return added


def retire(launch, pending) -> bool:
    """Clusters whose CTAs have all exited leave their SMs; waiting ones take their place."""
    # only a cluster one of whose CTAs exited since the last look can have finished
    maybe = {id(cl) for cl in launch.exited_clusters}
    launch.exited_clusters.clear()
    if not maybe:
        return False
    done = [cl for cl in launch.resident if id(cl) in maybe and all(c.exited for c in cl.ctas)]
    if not done:
        return False
    for cl in done:
        launch.resident.remove(cl)
        for c in cl.ctas:
            launch.placement.release(c.sm)
    admit(launch, pending)
    return True


def not_resident(pending) -> str:
    """A hang report's note on the clusters still waiting for SMs."""
    return (f"\n  ({len(pending)} cluster(s) of the grid are not resident yet: they start when resident CTAs "
            "finish, so nothing they would do can end these waits)") if pending else ""


# ---- Tensor Memory: one per SM, shared by the CTAs resident there ---------------------------------------
def sm_tmem(c):
    """The TensorMemory of the SM CTA `c` is on (made on first use), with the SM's record of where
    each allocation was made; sets c.tmem, c.tmem_alloc_at, c.tmem_inflight."""
    from ..tmem.alloc import TensorMemory
    per_sm = c.machine.__dict__.setdefault("sm_tmem", {})
    if c.sm not in per_sm:
        per_sm[c.sm] = (TensorMemory(), {})
    c.tmem, c.tmem_alloc_at = per_sm[c.sm]   # column -> where the allocation was made
    c.tmem_inflight = []      # (first column, last column + 1, description) of MMAs not yet complete
    return c.tmem


WAIT = object()   # what an allocation body returns when it must wait


def alloc_waits(w, tm, n: int, ins, section: str) -> bool:
    """A tcgen05.alloc that does not fit: while other CTAs co-resident on the SM hold columns it waits
    (the GPU blocks until one deallocates) and the scheduler reports TmemAllocHang if nothing that
    still runs can free them; if only this CTA holds them it can never fit (False: the caller raises)."""
    others = sorted({x.cta for x in tm.allocations if x.cta != w.cta.linear})
    if not others:
        return False
    M = w.machine
    M.spin(w, ("tmem", f"{w.who()} at {M.where(ins)} waits in tcgen05.alloc of {n} columns: {tm.free_columns} of "
                       f"512 columns are free on SM {w.cta.sm}, the rest held by co-resident CTA(s) "
                       + ", ".join(map(str, others)) + f" ({section})"))
    return True


def waiting(body):
    """A plain body(w, mask) as a control body that leaves the pcs in place when it returns WAIT (the
    warp tries again once something has changed) and advances them otherwise."""
    def run(w, group, em):
        if em.any() and body(w, em) is WAIT:
            return
        w.pc[group] += 1
    return run


def tmem_hang(launch, live, report):
    """A stuck launch in which a warp waits in tcgen05.alloc: TmemAllocHang (nothing can free columns)."""
    tm = [w for w in live if w.wait_info and w.wait_info[0] == "tmem" and w.spin_epoch >= launch.epoch - 1]
    if tm:
        raise TmemAllocHang(f"{launch.kernel}: {tm[0].wait_info[1]}; nothing that still runs can free columns, "
                            f"so it would wait forever (virtual time {launch.clock} ns):\n" + report)
