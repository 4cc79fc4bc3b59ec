"""Warp-level instructions (PTX ISA: vote.sync, activemask, elect.sync in "Parallel Synchronization and
Communication Instructions"; shfl.sync in "Data Movement and Conversion Instructions")."""
from __future__ import annotations

import numpy as np

from .operands import LANES, bits_reader, writer


def vote(ctx, ins, base, mods):
    """Parallel Synchronization and Communication: vote.sync (all, any, uni, ballot over the lanes of the mask)."""
    mode = next(m for m in mods if m in ("all", "any", "uni", "ballot"))
    d, a = ins.args[0], ins.args[1]
    ra = bits_reader(ctx, a, "pred")
    wr = writer(ctx, d, "b32" if mode == "ballot" else "pred")

    def body(w, m):
        p = ra(w) & m
        if mode == "ballot":
            v = np.uint32(int(np.sum((p.astype(np.uint64)) << LANES)))
            wr(w, np.full(32, v, np.uint32), m)
        elif mode == "all":
            wr(w, np.full(32, bool(np.all(p[m]))), m)
        elif mode == "any":
            wr(w, np.full(32, bool(np.any(p[m]))), m)
        else:
            wr(w, np.full(32, bool(np.all(p[m]) or not np.any(p[m]))), m)
    return body


def activemask(ctx, ins, base, mods):
    """Parallel Synchronization and Communication: activemask (the lanes executing it)."""
    wr = writer(ctx, ins.args[0], "b32")

    def body(w, m):
        wr(w, np.full(32, np.uint32(int(np.sum(m.astype(np.uint64) << LANES))), np.uint32), m)
    return body


def shfl(ctx, ins, base, mods):
    """Data Movement and Conversion: shfl.sync (up, down, bfly, idx; with the clamp/segment operand c)."""
    mode = next(m for m in mods if m in ("up", "down", "bfly", "idx"))
    d = ins.args[0]
    dp, dq = (d[1][0], d[1][1]) if d[0] == "vec" else (d, None)
    ra, rb, rc = (bits_reader(ctx, x, "b32") for x in ins.args[1:4])
    wr = writer(ctx, dp, "b32")
    wq = writer(ctx, dq, "pred") if dq is not None else None
    lane = np.arange(32, dtype=np.int64)

    def body(w, m):
        a = ra(w)
        bval = rb(w).astype(np.int64) & 0x1F
        c = rc(w).astype(np.int64)
        cval = c & 0x1F
        seg = (c >> 8) & 0x1F
        maxl = (lane & seg) | (cval & ~seg)
        minl = lane & seg
        if mode == "up":
            j = lane - bval
            pv = j >= maxl
        elif mode == "down":
            j = lane + bval
            pv = j <= maxl
        elif mode == "bfly":
            j = lane ^ bval
            pv = j <= maxl
        else:
            j = minl | (bval & ~seg)
            pv = j <= maxl
        j = np.where(pv, j, lane) & 31   # in 0..31 already: a lane takes its own value where pv fails
        wr(w, a[j], m)
        if wq is not None:
            wq(w, pv, m)
    return body


def elect(ctx, ins, base, mods):
    """Parallel Synchronization and Communication: elect.sync (the lowest lane of the mask is the leader)."""
    d = ins.args[0]
    # 'elect.sync d|P, mask': the parser gives the pair as a vector of two destinations
    dd, dp = (d[1][0], d[1][1]) if d[0] == "vec" else (d, ("sink",))
    wr = None if dd[0] == "sink" else writer(ctx, dd, "b32")
    wp = None if dp[0] == "sink" else writer(ctx, dp, "pred")

    def body(w, m):
        leader = int(np.argmax(m))
        if wr is not None:
            wr(w, np.full(32, leader, np.uint32), m)
        if wp is not None:
            wp(w, np.arange(32) == leader, m)
    return body
