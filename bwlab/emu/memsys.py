"""The memory system of a launch: address spaces, bounds, the generic-proxy writers of shared memory.

`Launch.mem` (one per launch). Loads and stores resolve each lane's address to its state space
(global, shared::cta / shared::cluster of a CTA of the cluster, kernel and call parameters, local),
check bounds and alignment as the GPU faults (`EmuFault`), and record which thread last wrote each
shared byte through the generic proxy, so an asynchronous read without `fence.proxy.async` is named
(`ProxyFenceMissing`, PTX ISA "Memory Consistency Model: proxies").
"""
from __future__ import annotations

import numpy as np

from . import order
from .errors import EmuError, EmuFault, ProtocolError, ProxyFenceMissing
from .memory import GLOBAL_BASE, LOCAL_WINDOW, PARAM_WINDOW, RANK_SHIFT, SHARED_WINDOW, WINDOW_SIZE
from .isa.operands import ALL
from .program import SMEM_RESERVED

__all__ = ["MemorySystem"]

U64 = np.uint64
_AR = {}
_LOG2 = {1: 0, 2: 1, 4: 2, 8: 3}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
_LANES = np.arange(32)
_FULL = ALL
_ZERO_WORDS = bytes(32 * 8)
_CVTA_BASE = {"global": U64(0), "shared": U64(SHARED_WINDOW), "param": U64(PARAM_WINDOW),
              "local": U64(LOCAL_WINDOW), "const": U64(0)}
# the offsets of 32 lanes that each take nb bytes right after the previous lane's, from the first one's
_STRIDES = {nb: (np.arange(32, dtype=np.intp) * nb).tobytes() for nb in (1, 2, 4, 8, 16, 32, 64)}


def _view(c, n):
    """CTA c's shared memory as an array of n-byte words (the same memory)."""
    views = c.__dict__.setdefault("smem_views", {})
    v = views.get(n)
    if v is None:
        size = c.smem.size - c.smem.size % n
        v = views[n] = c.smem[:size].view(_UINT[n])
    return v


def _rows(a, k: int):
    """A 1-D array as rows of k elements (the whole rows; a view)."""
    return a[:a.size - a.size % k].reshape(-1, k)


def _ar(n):
    """np.arange(n), made once per size."""
    r = _AR.get(n)
    if r is None:
        r = _AR[n] = np.arange(n)
    return r


class MemorySystem:
    """Reads, writes and address arithmetic for the warps of one launch."""
    FULL = _FULL                      # the whole-warp mask (atomics.py reads it here)
    words, arange = staticmethod(_view), staticmethod(_ar)

    def __init__(self, launch):
        self.launch = launch
        self._alloc_views = {}     # id(allocation) -> (allocation, {n: its buffer as n-byte words})
        self._whos = {}            # (warp, its exited lanes' bytes) -> Warp.who() of its live lanes

    def cvta(self, space: str, v: np.ndarray, to: bool) -> np.ndarray:
        base = _CVTA_BASE[space]
        if base == 0:      # global and const addresses are generic addresses as they are
            return v.copy()
        return v - base if to else v + base

    def isspacep(self, space, v):
        v = v.astype(U64)
        if space == "global":
            return (v >= U64(GLOBAL_BASE)) & (v < U64(GLOBAL_BASE + WINDOW_SIZE))
        if space.startswith("shared"):
            return (v >= U64(SHARED_WINDOW)) & (v < U64(SHARED_WINDOW + WINDOW_SIZE))
        if space == "local":
            return (v >= U64(LOCAL_WINDOW)) & (v < U64(LOCAL_WINDOW + WINDOW_SIZE))
        if space == "param":
            return (v >= U64(PARAM_WINDOW)) & (v < U64(PARAM_WINDOW + WINDOW_SIZE))
        return np.zeros(32, bool)

    def cta_of_cluster_addr(self, w, addr: int, what: str, ins=None, own: bool = False):
        """(CTA, offset) of a shared address: rank << 24 | offset, as the GPU numbers them (a CTA's own
        shared::cta addresses carry its rank too). `own`: a shared::cta access, which must stay in the
        executing CTA's window."""
        rank = addr >> RANK_SHIFT
        off = addr & ((1 << RANK_SHIFT) - 1)
        cl = w.cta.cluster
        at = f" ({self.launch.where(ins)})" if ins else ""
        if not 0 <= rank < cl.size:
            raise EmuFault(f"{w.who()}: {what} at shared address 0x{addr:x} names CTA rank {rank}, "
                           f"but the cluster has {cl.size} CTAs{at}")
        if own and rank != w.cta.rank:
            raise EmuFault(f"{w.who()}: {what} at shared::cta address 0x{addr:x} is in the window of cluster rank "
                           f"{rank}, not this CTA's ({w.cta.rank}); a peer's shared memory is reached through "
                           f"shared::cluster addresses (mapa){at}")
        if off < SMEM_RESERVED:
            raise EmuFault(f"{w.who()}: {what} at shared offset 0x{off:x}: the first {SMEM_RESERVED} bytes of a "
                           f"CTA's shared window are reserved for the system{at}")
        return cl.ctas[rank], off

    def mapa(self, w, a, rank, generic, m, ins):
        out = np.zeros(32, U64)
        cl = w.cta.cluster
        for lane in np.nonzero(m)[0]:
            r = int(rank[lane])
            if not 0 <= r < cl.size:
                raise EmuFault(f"{w.who(m)}: mapa to CTA rank {r} at {self.launch.where(ins)}, but the cluster has "
                               f"{cl.size} CTAs (ranks 0..{cl.size - 1})")
            x = int(a[lane])
            if generic:
                x -= SHARED_WINDOW
            off = x & ((1 << RANK_SHIFT) - 1)
            v = (r << RANK_SHIFT) | off
            out[lane] = v + SHARED_WINDOW if generic else v
        return out

    def ctarank_of(self, w, a, generic):
        out = np.zeros(32, U64)
        for lane in range(32):
            x = int(a[lane]) - (SHARED_WINDOW if generic else 0)
            out[lane] = x >> RANK_SHIFT
        return out

    def _classify(self, w, space, addr, m):
        """Resolve each lane's address to (kind, value): kind one of 'global', 'shared' (own or
        cluster address), 'kparam', 'cparam', 'local'."""
        if space != "generic":
            if space == "shared":
                return "shared_cta", addr
            if space == "shared::cluster":
                return "shared", addr
            if space == "const":
                return "global", addr
            return space, addr
        a = addr[m]
        if (a >= U64(GLOBAL_BASE)).all() and (a < U64(GLOBAL_BASE + WINDOW_SIZE)).all():
            return "global", addr
        if (a >= U64(SHARED_WINDOW)).all() and (a < U64(SHARED_WINDOW + WINDOW_SIZE)).all():
            return "shared", addr - U64(SHARED_WINDOW)
        if (a >= U64(PARAM_WINDOW)).all() and (a < U64(PARAM_WINDOW + WINDOW_SIZE)).all():
            return "kparam", addr - U64(PARAM_WINDOW)
        if (a >= U64(LOCAL_WINDOW)).all() and (a < U64(LOCAL_WINDOW + WINDOW_SIZE)).all():
            return "local", addr - U64(LOCAL_WINDOW)
        return "mixed", addr

    def _fault(self, w, lane, ins, msg):
        return EmuFault(f"{w.who(np.arange(32) == lane)} at {self.launch.where(ins)}: {msg}")

    def read(self, w, space, addr, n, m, ins) -> np.ndarray:
        kind, a = self._classify(w, space, addr, m)
        out = np.zeros((32, n), np.uint8)
        lanes = np.nonzero(m)[0]
        if kind == "mixed":
            for lane in lanes:
                one = np.arange(32) == lane
                out[lane] = self.read(w, "generic", addr, n, one, ins)[lane]
            return out
        self._aligned(w, a, lanes, n, ins)
        if kind == "global":
            return self._global_rw(w, a, n, m, ins, None)
        if kind in ("shared", "shared_cta"):
            c, off = self._smem_span(w, a, lanes, n, kind == "shared_cta")
            if c is not None:
                self._ordered_read(w, c, off, n)
                out[lanes] = c.smem[off[:, None] + _ar(n)]
                return out
            for lane in lanes:
                c, off = self.cta_of_cluster_addr(w, int(a[lane]), "load", ins, own=kind == "shared_cta")
                self._check_smem(w, c, off, n, lane, ins)
                if c.__dict__.get("async_writes") or c.__dict__.get("cpa_bytes") is not None:
                    order.require_read_ordered(self.launch, c, off, off + n, w.known, w.who(np.arange(32) == lane),
                                     self.launch.where(ins), w=w)
                out[lane] = c.smem[off:off + n]
                if c is not w.cta:
                    order.remote_access(w, c, "loads from its shared memory", self.launch.where(ins))
            return out
        if kind == "kparam":
            params = self.launch.params
            x = a[lanes].astype(np.int64)
            if (x + n <= params.size).all():
                out[lanes] = params[x[:, None] + _ar(n)]
                return out
            for lane in lanes:
                x = int(a[lane])
                if x + n > self.launch.params.size:
                    raise self._fault(w, lane, ins, f"parameter bytes [{x}, {x + n}) are past the kernel's "
                                                    f"{self.launch.params.size} parameter bytes")
                out[lane] = self.launch.params[x:x + n]
            return out
        if kind == "cparam":
            for lane in lanes:
                x = int(a[lane])
                out[lane] = w.cparam[lane, x:x + n]
            return out
        if kind == "local":
            x = a[lanes].astype(np.int64)
            if (x + n <= w.local.shape[1]).all():
                out[lanes] = w.local[lanes[:, None], x[:, None] + _ar(n)]
                return out
            for lane in lanes:
                x = int(a[lane])
                self._check_local(w, x, n, lane, ins)
                out[lane] = w.local[lane, x:x + n]
            return out
        raise EmuError(f"cannot read from {kind}")

    def write(self, w, space, addr, data, m, ins):
        n = data.shape[1]
        kind, a = self._classify(w, space, addr, m)
        lanes = np.nonzero(m)[0]
        if kind == "mixed":
            for lane in lanes:
                one = np.arange(32) == lane
                self.write(w, "generic", addr, data, one, ins)
            return
        self._aligned(w, a, lanes, n, ins)
        self.launch.progress()
        if kind == "global":
            self._global_rw(w, a, n, m, ins, data)
            return
        if kind in ("shared", "shared_cta"):
            pc = int(w.last_pc)
            c, off = self._smem_span(w, a, lanes, n, kind == "shared_cta")
            if c is not None:
                self._ordered_write(w, c, off, n, lanes)
                # lanes write in order: the highest lane wins where two write the same byte
                idx = off[:, None] + _ar(n)
                c.smem[idx] = data[lanes]
                if c is w.cta:
                    c.smem_writer[idx] = w.tid[lanes][:, None]
                    c.smem_writer_pc[idx] = pc
                    c.smem_wwarp[idx] = w.wid
                    c.smem_wrel[idx] = w.releases
                    order.record_lane_stores(c, w, idx, lanes)
                return
            for lane in lanes:
                c, off = self.cta_of_cluster_addr(w, int(a[lane]), "store", ins, own=kind == "shared_cta")
                self._check_smem(w, c, off, n, lane, ins)
                if c.__dict__.get("async_reads"):
                    order.require_write_ordered(self.launch, c, off, off + n, w.known, w.who(np.arange(32) == lane),
                                      self.launch.where(ins), "writes (generic proxy)", w=w, lanes=[lane])
                if c is not w.cta:
                    order.remote_access(w, c, "stores to its shared memory", self.launch.where(ins))
                c.smem[off:off + n] = data[lane]
                if c is w.cta:
                    c.smem_writer[off:off + n] = int(w.tid[lane])
                    c.smem_writer_pc[off:off + n] = pc
                    c.smem_wwarp[off:off + n] = w.wid
                    c.smem_wrel[off:off + n] = w.releases
                    order.record_lane_stores(c, w, slice(off, off + n), lane)
            return
        if kind == "cparam":
            for lane in lanes:
                x = int(a[lane])
                w.cparam[lane, x:x + n] = data[lane]
            return
        if kind == "local":
            x = a[lanes].astype(np.int64)
            if (x + n <= w.local.shape[1]).all():
                w.local[lanes[:, None], x[:, None] + _ar(n)] = data[lanes]
                return
            for lane in lanes:
                x = int(a[lane])
                self._check_local(w, x, n, lane, ins)
                w.local[lane, x:x + n] = data[lane]
            return
        raise self._fault(w, lanes[0], ins, f"a store to the {kind} state space is not allowed")

    # ---- the whole-warp fast paths of ld.shared / st.shared (own CTA, naturally aligned, in bounds) ----
    def _own_offsets(self, w, a, m, nbytes):
        """The lanes' byte offsets in their own CTA's shared memory when every active lane's access is
        aligned to `nbytes`, past the reserved bytes and inside it; None otherwise (the general path then
        reports what is wrong, lane by lane). Inactive lanes get a harmless offset."""
        c = w.cta
        off = a - U64(c.shared_base)            # a lane in another CTA's window wraps to a huge offset
        if m is not _FULL:
            off = np.where(m, off, U64(SMEM_RESERVED))
        if nbytes > 1 and (off & U64(nbytes - 1)).tobytes() != _ZERO_WORDS:
            return None
        lst = off.tolist()
        if min(lst) < SMEM_RESERVED or max(lst) + nbytes > c.smem.size:
            return None
        return off

    def load_own_shared(self, w, a, n, vec, m):
        """ld.shared of `vec` elements of `n` bytes: a (32, vec) array of uint{8n}, or None."""
        off = self._own_offsets(w, a, m, n * vec)
        if off is None:
            return None
        if w.cta.__dict__.get("async_writes") or w.cta.__dict__.get("cpa_bytes") is not None:
            self._ordered_read(w, w.cta, off[m].astype(np.int64), n * vec)
        view = _view(w.cta, n)
        idx = (off >> U64(_LOG2[n])).astype(np.intp)
        return view[idx[:, None] + _ar(vec)] if vec > 1 else view[idx][:, None]

    def load_own_shared1(self, w, a, n, m):
        """`load_own_shared` of one element per lane: 32 uint{8n}, or None."""
        off = self._own_offsets(w, a, m, n)
        if off is None:
            return None
        if w.cta.__dict__.get("async_writes") or w.cta.__dict__.get("cpa_bytes") is not None:
            self._ordered_read(w, w.cta, off[m].astype(np.int64), n)
        return _view(w.cta, n)[(off >> U64(_LOG2[n])).astype(np.intp)]

    def store_own_shared(self, w, a, data, n, vec, m) -> bool:
        """st.shared of `data` ((32, vec) of uint{8n}); False when the general path must do it."""
        if m is not _FULL:
            lanes = np.flatnonzero(m)
            if lanes.size == 1:   # one lane (`if (lane == 0) ...`): its bytes with Python integers
                return self._store_own_shared_lane(w, a, data, n, vec, lanes)
        off = self._own_offsets(w, a, m, n * vec)
        if off is None:
            return False
        c = w.cta
        lanes = np.nonzero(m)[0] if m is not _FULL else _LANES
        view = _view(c, n)
        self.launch.progress()
        if c.__dict__.get("async_reads"):
            self._ordered_write(w, c, off[lanes].astype(np.int64), n * vec, lanes)
        nb = n * vec
        o = off[lanes].astype(np.intp)
        if (o - o[0]).tobytes() == _STRIDES[nb][:8 * lanes.size]:
            # the lanes' bytes follow one another in lane order (the usual layout): one span, no overlap
            lo, hi = int(o[0]), int(o[0]) + nb * lanes.size
            view[lo // n:hi // n] = data[lanes].reshape(-1)
            c.smem_writer[lo:hi].reshape(lanes.size, nb)[:] = w.tid[lanes][:, None]
            c.smem_writer_pc[lo:hi] = int(w.last_pc)
            c.smem_wwarp[lo:hi] = w.wid
            c.smem_wrel[lo:hi] = w.releases
            order.record_span_stores(c, w, lo, hi, lanes)
            return True
        # each lane's piece is one aligned nb-byte row of the shared bytes (_own_offsets checked the alignment):
        # written row by row; lanes write in order, the highest lane wins where two write the same row
        r = o // nb
        _rows(view, vec)[r] = data[lanes]
        _rows(c.smem_writer, nb)[r] = w.tid[lanes][:, None]
        _rows(c.smem_writer_pc, nb)[r] = int(w.last_pc)
        _rows(c.smem_wwarp, nb)[r] = w.wid
        _rows(c.smem_wrel, nb)[r] = w.releases
        order.record_row_stores(c, w, nb, r, lanes)
        return True

    def _store_own_shared_lane(self, w, a, data, n, vec, lanes) -> bool:
        """`store_own_shared` for the one lane in `lanes`: the same checks (aligned, past the reserved bytes,
        inside the CTA's shared memory) and the same bookkeeping, on one span."""
        c = w.cta
        lane = int(lanes[0])
        nb = n * vec
        lo = (int(a[lane]) - c.shared_base) & 0xFFFFFFFFFFFFFFFF   # another CTA's window wraps to a huge offset
        if lo % nb or lo < SMEM_RESERVED or lo + nb > c.smem.size:
            return False
        self.launch.progress()
        if c.__dict__.get("async_reads"):
            self._ordered_write(w, c, np.array([lo], np.int64), nb, lanes)
        hi = lo + nb
        _view(c, n)[lo // n:hi // n] = data[lane]
        c.smem_writer[lo:hi] = w.tid[lane]
        c.smem_writer_pc[lo:hi] = int(w.last_pc)
        c.smem_wwarp[lo:hi] = w.wid
        c.smem_wrel[lo:hi] = w.releases
        order.record_span_stores(c, w, lo, hi, lanes)
        return True

    # ---- the fast paths of ld.global / st.global (every active lane inside one allocation, aligned) ----
    def _global_words(self, w, a, m, n, vec):
        """(allocation's n-byte word view, word indices of the lanes) when every active lane's access of
        n * vec bytes is aligned and inside one allocation; None otherwise (the general path names the
        lane that is not)."""
        nb = n * vec
        act = a if m is _FULL else a[m]
        if nb > 1 and int(np.bitwise_or.reduce(act)) & (nb - 1):   # some lane's address is not aligned
            return None
        lst = act.tolist()
        lo = min(lst)
        al = self.launch.memory.find(lo)
        if al is None or max(lst) + nb > al.base + al.size:
            return None
        views = self._alloc_views.get(id(al))
        if views is None or views[0] is not al:
            views = self._alloc_views[id(al)] = (al, {})
        view = views[1].get(n)
        if view is None:
            size = al.buf.size - al.buf.size % n
            view = views[1][n] = al.buf[:size].view(_UINT[n])
        if m is not _FULL:
            a = np.where(m, a, U64(lo))
        idx = ((a - U64(al.base)) >> U64(_LOG2[n])).astype(np.intp)
        return view, (idx[:, None] + _ar(vec) if vec > 1 else idx)

    def load_global(self, w, a, n, vec, m):
        """ld.global of `vec` elements of `n` bytes: (32, vec) of uint{8n}, or None."""
        got = self._global_words(w, a, m, n, vec)
        if got is None:
            return None
        view, idx = got
        return view[idx] if vec > 1 else view[idx][:, None]

    def load_global1(self, w, a, n, m):
        """`load_global` of one element per lane: 32 uint{8n}, or None."""
        got = self._global_words(w, a, m, n, 1)
        return None if got is None else got[0][got[1]]

    def store_global1(self, w, a, words, n, m) -> bool:
        """`store_global` of one element per lane (`words`: 32 uint{8n})."""
        got = self._global_words(w, a, m, n, 1)
        if got is None:
            return False
        view, idx = got
        self.launch.progress()
        if m is _FULL:
            view[idx] = words
        else:   # lanes write in order: the highest lane wins where two write the same bytes
            lanes = np.nonzero(m)[0]
            view[idx[lanes]] = words[lanes]
        return True

    def store_global(self, w, a, data, n, vec, m) -> bool:
        """st.global of `data` ((32, vec) of uint{8n}); False when the general path must do it."""
        got = self._global_words(w, a, m, n, vec)
        if got is None:
            return False
        view, idx = got
        self.launch.progress()
        lanes = np.nonzero(m)[0] if m is not _FULL else _LANES
        # lanes write in order: the highest lane wins where two write the same bytes
        if vec > 1:
            view[idx[lanes]] = data[lanes]
        else:
            view[idx[lanes]] = data[lanes, 0]
        return True

    # ---- the order of asynchronous work (bwlab.emu.order) on the fast paths ----
    def who(self, w) -> str:
        """w.who() (its live lanes), made once per warp and set of exited lanes."""
        key = (w, w.exited.tobytes())
        got = self._whos.get(key)
        if got is None:
            got = self._whos[key] = w.who()
        return got

    def _here(self, w) -> str:
        return self.launch.where(self.launch.prog.code[w.last_pc].instr)   # cached per instruction

    def _ordered_read(self, w, c, off, n):
        """A thread read of c's shared bytes at `off` (lanes' offsets, n bytes each)."""
        if c.__dict__.get("async_writes") or c.__dict__.get("cpa_bytes") is not None:
            order.require_read_ordered(self.launch, c, off, None, w.known, self.who(w), self._here(w), n=n, w=w)
        if c is not w.cta:
            order.remote_access(w, c, "loads from its shared memory", self._here(w))

    def _ordered_write(self, w, c, off, n, lanes=None):
        """A generic-proxy store to c's shared bytes at `off` (by `lanes`, an index array, when known)."""
        if c.__dict__.get("async_reads"):
            order.require_write_ordered(self.launch, c, off, None, w.known, self.who(w), self._here(w), "writes (generic proxy)", n=n,
                              w=w, lanes=lanes)
        if c is not w.cta:
            order.remote_access(w, c, "stores to its shared memory", self._here(w))

    def _aligned(self, w, a, lanes, n, ins):
        """A misaligned access faults (naturally aligned sizes only); the first such lane is named."""
        if n in (2, 4, 8, 16) and (a[lanes] & U64(n - 1)).any():
            for lane in lanes:
                x = int(a[lane])
                if x % n:
                    raise self._fault(w, lane, ins, f"misaligned {n}-byte access at address 0x{x:x}")

    def _smem_span(self, w, a, lanes, n, own):
        """(CTA, offsets) when every lane's shared address is in one running CTA's window, past the reserved
        bytes and inside its shared memory; (None, None) otherwise (the per-lane path then names the lane)."""
        av = a[lanes]
        rank = av >> U64(RANK_SHIFT)
        r0 = int(rank[0])
        cl = w.cta.cluster
        if (own and r0 != w.cta.rank) or r0 >= cl.size or (rank != rank[0]).any():
            return None, None
        c = cl.ctas[r0]
        off = (av & U64((1 << RANK_SHIFT) - 1)).astype(np.int64)
        if c.exited or (off < SMEM_RESERVED).any() or (off + n > c.smem.size).any():
            return None, None
        return c, off

    def _check_local(self, w, x, n, lane, ins):
        if x + n > w.local.shape[1]:
            raise self._fault(w, lane, ins, f"local bytes [{x}, {x + n}) are past the thread's "
                                            f"{w.local.shape[1]} local bytes")

    def _check_smem(self, w, c, off, n, lane, ins):
        if c.exited:
            raise ProtocolError(f"{w.who(np.arange(32) == lane)} at {self.launch.where(ins)}: accesses the shared memory "
                                f"of cluster rank {c.rank}, which has exited (PTX ISA: a CTA's shared memory must "
                                "not be accessed by its cluster peers after it exits)")
        if off + n > c.smem.size:
            static = self.launch.prog.shared_size - SMEM_RESERVED
            raise self._fault(w, lane, ins, f"shared bytes [{off - SMEM_RESERVED}, {off + n - SMEM_RESERVED}) of "
                                            f"the kernel's window are past its {c.smem.size - SMEM_RESERVED} bytes "
                                            f"({static} static + {self.launch.dynamic_smem} dynamic; address "
                                            f"0x{off:x}, the window starting at 0x{SMEM_RESERVED:x} after the "
                                            "system's reserved bytes)")

    def _global_rw(self, w, a, n, m, ins, data):
        mem = self.launch.memory
        out = np.zeros((32, n), np.uint8) if data is None else None
        lanes = np.nonzero(m)[0]
        first = mem.find(int(a[lanes[0]]))
        if first is not None:
            off = a[lanes].astype(np.int64) - first.base
            if (off >= 0).all() and (off + n <= first.size).all():
                idx = off[:, None] + np.arange(n)
                if data is None:
                    out[lanes] = first.buf[idx]
                    return out
                # lanes write in order: the highest lane wins where two write the same byte
                first.buf[idx] = data[lanes]
                return None
        for lane in lanes:
            x = int(a[lane])
            al = mem.find(x)
            if al is None or x + n > al.base + al.size:
                raise self._fault(w, lane, ins, f"{'load' if data is None else 'store'} of {n} bytes at global "
                                                f"address 0x{x:x} is outside every allocation ({mem.nearest(x)})")
            o = x - al.base
            if data is None:
                out[lane] = al.buf[o:o + n]
            else:
                al.buf[o:o + n] = data[lane]
        return out

    def fence_proxy_async(self, w, m):
        c = w.cta
        tids = w.tid[m]
        if tids.size and int(tids[-1]) - int(tids[0]) == tids.size - 1:   # consecutive threads (the usual case)
            sw = c.smem_writer
            hit = (sw >= tids[0]) & (sw <= tids[-1])
            sw[hit] = -1
        elif c.smem_writer.max() >= 0:
            hit = np.isin(c.smem_writer, tids)
            c.smem_writer[hit] = -1

    def async_reads_smem(self, c, off: int, n: int, what: str, issuer=None):
        """The async proxy reads SMEM [off, off+n) of CTA c: every byte must be fenced."""
        if not self.launch.check_proxy:
            return
        seg = c.smem_writer[off:off + n]
        bad = np.nonzero(seg >= 0)[0]
        if bad.size:
            b = int(bad[0])
            pc = int(c.smem_writer_pc[off + b])
            wi = self.launch.prog.code[pc].where(self.launch.prog.files)
            raise ProxyFenceMissing(
                f"{what} reads shared byte 0x{off + b:x} ({self.launch.prog.shared_name(off + b)}) of CTA {c.ctaid}, "
                f"written by thread {int(seg[b])} with a generic-proxy store at {wi} and not made visible to the "
                f"async proxy: that thread must execute fence.proxy.async.shared::cta after its stores and before "
                f"the async operation is issued (PTX ISA: memory consistency model, proxies)"
                + (f"; issued by {issuer}" if issuer else "") + f" [{bad.size} such bytes]")
