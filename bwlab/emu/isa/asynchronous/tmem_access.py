"""tcgen05.ld / tcgen05.st / tcgen05.wait (PTX ISA 9.7.16.8): registers <-> Tensor Memory.

The data movement shapes are `bwlab.tmem.model.tcgen05_ld/st` (the one model the notebooks use). A load's
registers are out of bounds until tcgen05.wait::ld (`Warp.inflight`); a store's columns may not be read
(tcgen05.ld, tcgen05.mma) or freed until the storing warp's tcgen05.wait::st (`TmemStoreNotWaited`).
"""
from __future__ import annotations

import numpy as np

from ...errors import EmuError, ProtocolError, TmemAllocError, TmemLaneQuarter, TmemStoreNotWaited, UnsupportedInstruction
from ... import order
from ..operands import address, bits_reader
from .tcgen05 import _SEC_ACCESS, _SEC_ALLOC, _lane0, _ordered, tmem_of

__all__ = ["ld", "st", "wait_ld", "wait_st"]


def ld(ctx, ins, base, mods):
    """tcgen05.ld (`bwlab.tmem.model.tcgen05_ld`): registers valid after tcgen05.wait::ld."""
    return _ldst(ctx, ins, mods, "ld")


def st(ctx, ins, base, mods):
    """tcgen05.st (`bwlab.tmem.model.tcgen05_st`)."""
    return _ldst(ctx, ins, mods, "st")


def wait_ld(ctx, ins, base, mods):
    """tcgen05.wait::ld: the warp's tcgen05.ld registers become readable."""
    return _wait_ld(ctx, ins)


def wait_st(ctx, ins, base, mods):
    """tcgen05.wait::st: the warp's earlier tcgen05.st are complete; until then their columns may not be read
    (tcgen05.ld, tcgen05.mma) or freed."""
    def body(w, m):
        c = w.cta
        pend = c.__dict__.get("tmem_st_pending")
        if pend:
            c.tmem_st_pending = [p for p in pend if p[4] != w.wid]
    return body


# tcgen05.ld / tcgen05.st / tcgen05.wait (PTX ISA 9.7.16.8)
# ---------------------------------------------------------------------------------------------
def _access(ins, mods):
    from ....tmem.forms import TmemAccess
    shape = next((m for m in mods if m in ("32x32b", "16x64b", "16x128b", "16x256b", "16x32bx2")), None)
    num = next((int(m[1:]) for m in mods if m.startswith("x") and m[1:].isdigit()), None)
    if shape is None or num is None:
        raise UnsupportedInstruction(f"`{ins.op}`: no .shape/.num")
    pack = "pack::16b" in mods or "unpack::16b" in mods
    return shape, num, pack


def _ldst(ctx, ins, mods, op):
    from ....tmem.forms import TmemAccess
    shape, num, pack = _access(ins, mods)
    args = ins.args
    if op == "ld":
        regs, taddr = args[0], args[1]
    else:
        taddr, regs = args[0], args[-1]
    off_arg = None
    if shape == "16x32bx2":
        off_arg = args[2] if op == "ld" else args[1]
    half = int(off_arg[1], 0) if off_arg is not None else None
    acc = TmemAccess(shape, num, pack, half)
    vec = regs[1] if regs[0] == "vec" else [regs]
    if len(vec) != acc.registers:
        raise EmuError(f"PTX line {ins.line}: {ins.op} takes {acc.registers} registers, got {len(vec)}")
    idx = [ctx.reg(r[1]) for r in vec]
    rt = address(ctx, taddr)
    readers = [bits_reader(ctx, r, "u32") for r in vec] if op == "st" else None

    def body(w, m):
        from ....hw.tmem import TmemError
        from ....tmem.model import tcgen05_ld, tcgen05_st
        M = w.machine
        t = rt(w)
        lane = _lane0(m)
        ta = int(t[lane]) & 0xFFFFFFFF
        if (t[m] & 0xFFFFFFFF != ta).any():
            raise EmuError(f"{w.who(m)} at {M.where(ins)}: tcgen05.{op} with different TMEM addresses in one warp "
                           "(.sync.aligned: every thread passes the same taddr)")
        c = w.cta
        _ordered(w, ins, f"tcgen05.{op}", m)
        tm = tmem_of(c)
        lane0, col0 = ta >> 16, ta & 0xFFFF
        qlo = 32 * (w.wid % 4)
        if lane0 >= 128 or col0 >= 512:   # no tcgen05.alloc returns such an address (lane 0, column < 512)
            raise TmemAllocError(
                f"{w.who()} at {M.where(ins)}: tcgen05.{op}{acc.label()} at TMEM address 0x{ta:08x} (lane {lane0}, "
                f"column {col0}): TMEM has 128 lanes and 512 columns, so no allocation holds it. Was the address "
                "read from shared memory before the warp that allocated wrote it there (a barrier missing after "
                "tcgen05.alloc)? Shared memory starts uninitialised: the emulator fills it with 0xA5 bytes "
                f"({_SEC_ALLOC})")
        if not (qlo <= lane0 and lane0 + acc.lanes <= qlo + 32):
            raise TmemLaneQuarter(
                f"{w.who()} at {M.where(ins)}: tcgen05.{op}{acc.label()} at TMEM lane {lane0} touches lanes "
                f"{lane0}..{lane0 + acc.lanes - 1}, but warp {w.wid} may access lanes {qlo}..{qlo + 31} only "
                f"(warp w reaches lanes 32*(w%4) .. +31; {_SEC_ACCESS})")
        owner = tm.owner_map()[col0:col0 + acc.width]
        if owner.size < acc.width or (owner != c.linear).any():
            raise TmemAllocError(f"{w.who()} at {M.where(ins)}: tcgen05.{op}{acc.label()} touches TMEM columns "
                                 f"{col0}..{col0 + acc.width - 1}, not all allocated by this CTA ({_SEC_ALLOC})")
        for lo, hi, desc in c.tmem_inflight:
            if lo < col0 + acc.width and col0 < hi:
                raise ProtocolError(f"{w.who()} at {M.where(ins)}: tcgen05.{op} of columns {col0}.."
                                    f"{col0 + acc.width - 1} while {desc} still writes columns {lo}..{hi - 1}: wait "
                                    "for its tcgen05.commit's mbarrier, then tcgen05.fence::after_thread_sync "
                                    "(PTX ISA 9.7.16.6: ordering of tcgen05 operations)")
        lo_c, hi_c = col0, col0 + acc.width
        if op == "ld":
            pend = [p for p in c.__dict__.get("tmem_st_pending", ())
                    if p[0] < hi_c and lo_c < p[1] and p[5] < lane0 + acc.lanes and lane0 < p[6]]
            if pend:
                raise TmemStoreNotWaited(
                    f"{w.who()} at {M.where(ins)}: tcgen05.ld of TMEM columns {lo_c}..{hi_c - 1}, which the tcgen05.st of "
                    f"{pend[0][2]} at {pend[0][3]} writes, before that warp's tcgen05.wait::st (PTX ISA 9.7.16.8.5: "
                    "the store is complete only after tcgen05.wait::st)")
        else:
            c.__dict__.setdefault("tmem_st_pending", []).append((lo_c, hi_c, w.who(), M.where(ins), w.wid,
                                                                 lane0, lane0 + acc.lanes))
        try:
            if op == "ld":
                vals = tcgen05_ld(tm.image, ta, acc, warp=w.wid)
                where = M.where(ins)
                for k, ix in enumerate(idx):
                    w.inflight.pop(ix, None)
                    row = w.R[ix]
                    row[m] = vals[m, k]
                    w.inflight[ix] = ("tcgen05.ld", where)
                # the load reads TMEM until this warp's tcgen05.wait::ld: a dealloc must be ordered after that
                seqs = M.__dict__.setdefault("tc_ld_seq", {})
                k = (c.linear, w.wid)
                seqs[k] = seqs.get(k, 0) + 1
                c.__dict__.setdefault("tmem_reads", []).append(
                    (col0, col0 + acc.width, ("tcgen05.ld", c.linear, w.wid), seqs[k], w.who(), where))
            else:
                regs_v = np.stack([r(w) for r in readers], axis=1).astype(np.uint32)
                tcgen05_st(tm.image, ta, regs_v, acc, warp=w.wid)
        except TmemError as e:
            raise EmuError(f"{w.who()} at {M.where(ins)}: {e}") from None
        M.note(w, f"tcgen05.{op} lane {lane0} column {col0}")
    return body


def _wait_ld(ctx, ins):
    def body(w, m):
        for ix in [i for i, v in w.inflight.items() if v[0] == "tcgen05.ld"]:
            del w.inflight[ix]
        n = w.machine.__dict__.get("tc_ld_seq", {}).get((w.cta.linear, w.wid))
        if n:
            order.learn(w, ("tcgen05.ld", w.cta.linear, w.wid), n)
    return body
