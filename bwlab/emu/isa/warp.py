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
    lanes_of = {}   # (b's bits, c's bits) -> (source lane per lane, pv): the same offsets recur (a loop's few)

    def body(w, m):
        a = ra(w)
        b, c = rb(w), rc(w)
        key = (b.tobytes(), c.tobytes())
        got = lanes_of.get(key)
        if got is None:
            if len(lanes_of) > 256:
                lanes_of.clear()
            got = lanes_of[key] = sources(b, c)
        j, pv = got
        wr(w, a[j], m)
        if wq is not None:
            wq(w, pv, m)

    def sources(b, c):
        bval = b.astype(np.int64) & 0x1F
        c = c.astype(np.int64)
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
        j.flags.writeable = pv.flags.writeable = False
        return j, pv
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


def match(ctx, ins, base, mods):
    """Parallel Synchronization and Communication: match.{any,all}.sync.{b32,b64} d{|p}, a, membermask.
    .any: d = the lanes of the mask holding the same value as this lane; .all: d = the mask if all its
    lanes hold the same value (else 0), p = whether they do."""
    mode = "all" if "all" in mods else "any"
    ty = next(m for m in mods if m in ("b32", "b64"))
    d = ins.args[0]
    dd, dp = (d[1][0], d[1][1]) if d[0] == "vec" else (d, None)
    ra = bits_reader(ctx, ins.args[1], ty)
    wr = writer(ctx, dd, "b32")
    wp = writer(ctx, dp, "pred") if dp is not None else None

    def body(w, m):
        v = ra(w)
        same = (v[:, None] == v[None, :]) & m[None, :]          # [lane, other lane]
        bits = (same.astype(np.uint64) << LANES[None, :]).sum(axis=1).astype(np.uint32)
        if mode == "any":
            wr(w, bits, m)
            return
        mask = np.uint32(int(np.sum(m.astype(np.uint64) << LANES)))
        allsame = bool(np.all(v[m] == v[m][0])) if m.any() else True
        wr(w, np.full(32, mask if allsame else 0, np.uint32), m)
        if wp is not None:
            wp(w, np.full(32, allsame), m)
    return body


def redux(ctx, ins, base, mods):
    """Parallel Synchronization and Communication: redux.sync.{add,min,max}.{u32,s32},
    redux.sync.{and,or,xor}.b32 d, a, membermask: the reduction over the mask's lanes (add wraps)."""
    op = next(m for m in mods if m in ("add", "min", "max", "and", "or", "xor"))
    ty = next((m for m in mods if m in ("u32", "s32", "b32")), None)
    if ty is None:
        from ..errors import UnsupportedInstruction
        raise UnsupportedInstruction(f"`{ins.op}`: redux.sync on floats (sm_100a) is not modelled")
    ra = bits_reader(ctx, ins.args[1], ty)
    wr = writer(ctx, ins.args[0], ty)

    def body(w, m):
        v = ra(w)[m]
        if op == "add":
            r = np.uint64(int(v.astype(np.int64).sum()) & 0xFFFFFFFF)
        elif op == "min":
            r = v.min()
        elif op == "max":
            r = v.max()
        elif op == "and":
            r = np.bitwise_and.reduce(v)
        elif op == "or":
            r = np.bitwise_or.reduce(v)
        else:
            r = np.bitwise_xor.reduce(v)
        wr(w, np.full(32, np.asarray(r).astype(np.uint64) & np.uint64(0xFFFFFFFF), np.uint64).astype(np.uint32)
           .view(np.int32) if ty == "s32" else np.full(32, r, np.uint32), m)
    return body
