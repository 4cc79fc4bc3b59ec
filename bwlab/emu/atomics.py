"""Integer `atom/red.add` on the fast paths of the memory system (`bwlab.emu.memsys.MemorySystem`): the lanes in
lane order, each adding to what the lanes before it left, as one segmented prefix sum (isa.sync's `atom` body
calls these first; None sends it lane by lane). `mem` is the launch's MemorySystem: its checks and views."""
from __future__ import annotations

import numpy as np

from . import order

U64 = np.uint64
_LANES = np.arange(32)
_LOG2 = {1: 0, 2: 1, 4: 2, 8: 3}

__all__ = ["add_own_shared", "add_global"]


def add_own_shared(mem, w, a, vals, m):
    """atom/red.shared.add on integers (vals: the lanes' addends, of the element type): the lanes in
    order, each adding to what the lanes before it left (modulo 2^n). The lanes' old values, or None
    when the general path must do it."""
    n = vals.dtype.itemsize
    off = mem._own_offsets(w, a, m, n)
    if off is None:
        return None
    c = w.cta
    lanes = np.nonzero(m)[0] if m is not mem.FULL else _LANES
    idx = (off[lanes] >> U64(_LOG2[n])).astype(np.intp)
    view = mem.words(c, n).view(vals.dtype)
    old = _add_in_lane_order(view, idx, vals, lanes)
    mem.launch.progress()
    if c.__dict__.get("async_reads"):
        mem._ordered_write(w, c, off[lanes].astype(np.int64), n, lanes)
    byte = off[lanes].astype(np.intp)[:, None] + mem.arange(n)
    c.smem_writer[byte] = w.tid[lanes][:, None]
    c.smem_writer_pc[byte] = int(w.last_pc)
    c.smem_wwarp[byte] = w.wid
    c.smem_wrel[byte] = w.releases
    order.record_lane_stores(c, w, byte, lanes)
    return old

def add_global(mem, w, a, vals, m):
    """atom/red.global.add on integers: as `add_own_shared`, for lanes whose words all lie, aligned, in one
    allocation. The lanes' old values, or None when the general path must do it."""
    n = vals.dtype.itemsize
    got = mem._global_words(w, a, m, n, 1)
    if got is None:
        return None
    view, idx = got
    view = view.view(vals.dtype)
    lanes = np.nonzero(m)[0] if m is not mem.FULL else _LANES
    idx = idx[lanes]
    old = _add_in_lane_order(view, idx, vals, lanes)
    for _ in range(lanes.size):                    # one store per lane, as the lane-by-lane path counts them
        mem.launch.progress()
    return old


def _add_in_lane_order(view, idx, vals, lanes):
    """Add the active lanes' values into view[idx] as if one lane after another in lane order (lanes of one
    address see each other's sums); the old value each lane saw, by lane."""
    perm = np.argsort(idx, kind="stable")          # lanes of one address stay in lane order
    sidx, sv = idx[perm], vals[lanes][perm]
    incl = np.cumsum(sv, dtype=vals.dtype)
    excl = incl - sv
    first = np.r_[True, sidx[1:] != sidx[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(sidx.size), 0))
    old_sorted = view[sidx] + (excl - excl[start])
    view[sidx] = old_sorted + sv                   # the last lane of each address leaves the total
    old = np.zeros(32, vals.dtype)
    old[lanes[perm]] = old_sorted
    return old
