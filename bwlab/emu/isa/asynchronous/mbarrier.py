"""The mbarrier (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier").

Every operation calls the one model of the mechanism, `bwlab.hw.mbarrier.Mbarrier`, through
`Launch.sync.mbarrier` (which finds the barrier a shared::cluster address names and checks its state).
"""
from __future__ import annotations

import numpy as np

from ... import order
from ..operands import address, bits_reader, writer

__all__ = ["init", "inval", "arrive", "tx", "wait", "pending_count"]


def init(ctx, ins, base, mods):
    """mbarrier.init: a barrier with its arrival count (`hw.Mbarrier`)."""
    args = ins.args
    addr, rc = address(ctx, args[0]), bits_reader(ctx, args[1], "u32")

    def body(w, m):
        a, cnt = addr(w), rc(w)
        for lane in np.nonzero(m)[0]:
            w.machine.sync.mbarrier(w, int(a[lane]), "mbarrier.init", ins, create_count=int(cnt[lane]))
        w.machine.progress()
    return body


def inval(ctx, ins, base, mods):
    """mbarrier.inval."""
    args = ins.args
    addr = address(ctx, args[0])

    def body(w, m):
        a = addr(w)
        for lane in np.nonzero(m)[0]:
            c, off, _ = w.machine.sync.mbarrier(w, int(a[lane]), "mbarrier.inval", ins)
            del c.mbarriers[off]
    return body


def arrive(ctx, ins, base, mods):
    """mbarrier.arrive{.expect_tx} / arrive_drop: returns the phase as the state."""
    what = mods[0]
    args = ins.args
    expect = "expect_tx" in mods
    drop = what == "arrive_drop"
    state, addr = args[0], address(ctx, args[1])
    rest = args[2:]
    rtx = bits_reader(ctx, rest[0], "u32") if expect and rest else None
    rcount = None
    if not expect and rest:
        rcount = bits_reader(ctx, rest[0], "u32")
    wst = writer(ctx, state, "b64") if state[0] != "sink" else None

    def body(w, m):
        a = addr(w)
        tx = rtx(w) if rtx is not None else None
        cnt = rcount(w) if rcount is not None else None
        out = np.zeros(32, np.uint64)
        order.release(w)
        tc_entry = None
        where = w.machine.where(ins)
        if w.tc_last is not None:   # the warp's tcgen05 work, ordered by this arrival (tcgen05.fence rules)
            tc_entry = order.sync_entry(w, m, where)
        for lane in np.nonzero(m)[0]:
            c, off, bar = w.machine.sync.mbarrier(w, int(a[lane]), ins.op, ins)
            out[lane] = bar.phase
            order.require_arrival_ordered(w, c, off, bar, where, w.who(m))
            before = bar.phase

            def act(bar=bar, lane=lane):
                if drop:
                    bar.count -= 1
                if tx is not None:
                    bar.expect_tx(int(tx[lane]))
                bar.arrive(int(cnt[lane]) if cnt is not None else 1)
            order.signal(c, off, bar, w.known, tc_entry, act)
            order.note_arrival(w, c, off, bar, before, where)
            w.machine.note(w, f"arrive {w.machine.prog.shared_name(off)}")
        w.machine.progress()
        if wst is not None:
            wst(w, out, m)
    return body


def tx(ctx, ins, base, mods):
    """mbarrier.expect_tx / complete_tx: the model's method of the same name, per lane."""
    what = mods[0]
    args = ins.args
    addr, rtx = address(ctx, args[0]), bits_reader(ctx, args[1], "u32")

    def body(w, m):
        a, tx = addr(w), rtx(w)
        for lane in np.nonzero(m)[0]:
            c, off, bar = w.machine.sync.mbarrier(w, int(a[lane]), ins.op, ins)
            order.signal(c, off, bar, w.known, None, lambda bar=bar, lane=lane: getattr(bar, what)(int(tx[lane])))
        w.machine.progress()
    return body


def wait(ctx, ins, base, mods):
    """mbarrier.try_wait / test_wait{.parity}: a failed wait marks the lanes as spinning (`Launch.spin`)."""
    args = ins.args
    parity = "parity" in mods
    d, addr, rp = args[0], address(ctx, args[1]), bits_reader(ctx, args[2], "u32" if parity else "u64")
    wd = writer(ctx, d, "pred")

    def body(w, m):
        a, p = addr(w), rp(w)
        done = np.zeros(32, bool)
        info = None
        seen = False
        lanes = np.nonzero(m)[0]
        al, pl = a[lanes], p[lanes]
        uniform = lanes.size > 1 and (al == al[0]).all() and (pl == pl[0]).all()
        # every lane on one barrier and one phase (the usual case): the first lane's wait is every lane's
        for lane in (lanes[:1] if uniform else lanes):
            c, off, bar = w.machine.sync.mbarrier(w, int(a[lane]), ins.op, ins)
            order.phase_of(c, off).tried.add((w.cta.linear, w.wid))
            ok = bar.try_wait_parity(int(p[lane])) if parity else bar.phase > int(p[lane])
            done[lane] = ok
            if ok and not seen:
                seen = True
                order.observed(w, c, off, int(p[lane]) if parity else int(p[lane]) & 1,
                               f"the wait on mbarrier '{w.machine.prog.shared_name(off)}'", bar, w.machine.where(ins))
            if not ok:
                info = ("mbarrier", c, off, int(p[lane]) if parity else f"state {int(p[lane])}", ins)
        if uniform:
            done[lanes] = done[lanes[0]]
        wd(w, done, m)
        if info is not None and not done[m].any():
            w.machine.spin(w, info, m)
    return body


def pending_count(ctx, ins, base, mods):
    """mbarrier.pending_count (reads 0: the count is not kept per state)."""
    args = ins.args
    d, rs = args[0], bits_reader(ctx, args[1], "u64")
    wd = writer(ctx, d, "u32")
    return lambda w, m: wd(w, np.zeros(32, np.uint32), m)
