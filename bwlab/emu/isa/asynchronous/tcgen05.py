"""tcgen05 under the instructions: Tensor Memory, its allocator, the 5th-generation tensor core.

PTX ISA 9.7.16 ("TensorCore 5th Generation Family Instructions"): tcgen05.alloc / dealloc /
relinquish_alloc_permit (9.7.16.7.1), tcgen05.mma (9.7.16.10), tcgen05.commit (9.7.16.12),
tcgen05.ld / st / wait (9.7.16.8), tcgen05.fence (9.7.16.6.4). CuTe: include/cute/arch/tmem_allocator_sm100.hpp,
include/cute/arch/mma_sm100_umma.hpp, include/cute/arch/copy_sm100.hpp.

Each SM has its TMEM, shared by the CTAs resident on it (`bwlab.emu.residency`): a
`bwlab.tmem.alloc.TensorMemory` (the allocator's rules and the 128 x 512 image). The instructions call the one model of each
mechanism the notebooks use: `TensorMemory.alloc/dealloc` for the allocator, `bwlab.umma.model.tcgen05_mma`
for the MMA (reading A and B through the SM100 descriptors), `bwlab.tmem.model.tcgen05_ld/st` for
the data movement shapes. The MMA is asynchronous: it computes when it completes (after a seeded
latency, in issue order per issuing thread), reading SMEM then; tcgen05.commit arrives on its
mbarrier(s) once every MMA the thread issued before it has completed.

Numerics: Blackwell's accumulation order and rounding have not been measured (no sm_100 hardware);
`tcgen05_mma` rounds each instruction's exact sum once to the D type. Hopper's measured block FMA is
`bwlab.umma.model.wgmma_block_fma`; it is not assumed here.

The protocol, checked on every run (each a `ProtocolError` subclass naming CTA, warp, instruction and
the rule): TMEM still allocated when a CTA exits (`TmemLeak`); an allocation that can never be
satisfied (`TmemAllocHang`); the allocator's rules and a dealloc of columns not allocated
(`TmemAllocError`) or while an MMA still writes them; tcgen05.ld/st outside the warp's lane quarter
(`TmemLaneQuarter`); tcgen05.ld registers read before tcgen05.wait::ld (`machine.inflight_read`);
MMA operands written by generic stores without fence.proxy.async (`ProxyFenceMissing`); tcgen05
operations of two warps ordered by bar.sync / barrier.cluster without tcgen05.fence::before_thread_sync
and ::after_thread_sync (`TcgenFenceMissing`; tcgen05.commit counts as the before-fence); a .cta_group::2
operation while the peer CTA has exited (`PeerExited`); two .cta_group values in one kernel. The
.cta_group::2 allocator instructions are collective: each warp waits for the peer CTA's. The
mbarrier a tcgen05.commit signals must have had its init fenced (`machine.async_uses_mbarrier`).

Block-scaled MMAs and tcgen05.cp: `tcgen05_cp.py` (this module's `_issue_mma` takes their scale operands).
Not modelled: tcgen05.shift, sparse / .ws MMAs (UnsupportedInstruction); TMEM kept across launches (a leak is reported when the CTA exits instead
of as the next launch's hang).
Freeing from another warp than the allocating one is a warning (`Launch.warnings`), as bwlab's allocator
model has it (tables.ALLOC_RULES['dealloc_warp']: the ISA does not require the same warp).
"""
from __future__ import annotations

import warnings

import numpy as np

from ...errors import (EmuError, EmuFault, PeerExited, ProtocolError, TcgenFenceMissing, TmemAllocError,  # noqa: F401
                       TmemAllocHang, TmemLaneQuarter, TmemLeak, TmemStoreNotWaited, UnsupportedInstruction)
from ... import order
from ...residency import WAIT, alloc_waits, sm_tmem, waiting
from ..operands import address, advancing, bits_reader

__all__ = ["alloc", "dealloc", "relinquish_alloc_permit", "mma", "commit", "fence_before", "fence_after", "tmem_of",
           "cta_exits"]

_SEC_ALLOC = "PTX ISA 9.7.16.7.1 tcgen05.alloc/dealloc"
_SEC_ACCESS = "PTX ISA 9.7.16.2.2 Tensor Memory access restrictions"


def tmem_of(c):
    """The TMEM (allocator + image) of the SM CTA `c` is resident on (`residency.sm_tmem`: shared by
    the CTAs co-resident there, so an allocation may wait for another CTA's dealloc)."""
    tm = getattr(c, "tmem", None)
    if tm is None:
        tm = sm_tmem(c)
    return tm


def _lane0(m):
    return int(np.nonzero(m)[0][0])


def _cta_group(mods):
    return 2 if "cta_group::2" in mods else 1


def _same_group(w, ins, group):
    """PTX ISA 9.7.16.7.1 (tables.ALLOC_RULES['same_cta_group']): all tcgen05 instructions of a kernel use the
    same .cta_group."""
    M = w.machine
    first = M.__dict__.setdefault("tc_group", (group, M.where(ins)))
    if first[0] != group:
        raise ProtocolError(f"{w.who()} at {M.where(ins)}: .cta_group::{group}, but the kernel used .cta_group::"
                            f"{first[0]} at {first[1]}: all tcgen05 instructions of a kernel use the same .cta_group "
                            f"({_SEC_ALLOC})")


def _peer(w, ins, what):
    """The other CTA of a .cta_group::2 pair (cluster ranks 2k and 2k+1), checked to be running."""
    M = w.machine
    cl = w.cta.cluster
    r = w.cta.rank ^ 1
    if r >= cl.size:
        raise EmuError(f"{w.who()} at {M.where(ins)}: {what} with .cta_group::2 needs a CTA pair, but the cluster "
                       f"has {cl.size} CTA (PTX ISA: the pair is cluster ranks 2k and 2k+1)")
    p = cl.ctas[r]
    if p.exited:
        raise PeerExited(f"{w.who()} at {M.where(ins)}: {what} with .cta_group::2 while the peer CTA {p.ctaid} "
                         f"(cluster rank {p.rank}) has exited (PTX ISA 9.7.16: both CTAs of the pair must be running "
                         "while a .cta_group::2 operation involves them)")
    return p


def _pair_collective(body, ins, name):
    """A .cta_group::2 allocator instruction: one warp of each CTA of the pair performs it collectively
    (PTX ISA 9.7.16.7.1). Each warp does its own CTA's part when it arrives, then waits for the peer's warp;
    a peer that exits without arriving is reported (`PeerExited`), one that never arrives is a hang."""
    def run(w, group, em):
        M = w.machine
        _same_group(w, ins, 2)
        p = _peer(w, ins, name)
        if em.any():
            body(w, em)
        rdv = M.__dict__.setdefault("tc_rendezvous", {})
        key = (id(w.cta.cluster), w.cta.rank // 2, name)
        waiting = rdv.setdefault(key, {})
        if p.rank in waiting:
            pw, pgroup = waiting.pop(p.rank)
            pw.blocked = None
            pw.wait_info = None
            pw.pc[pgroup] += 1
            w.pc[group] += 1
            M.progress()
            return
        waiting[w.cta.rank] = (w, group.copy())
        w.blocked = (f"{name}.cta_group::2 at {M.where(ins)} (one warp of each CTA of the pair performs it "
                     f"collectively: waiting for a warp of the peer CTA {p.ctaid})")
        w.wait_info = ("tcgen05", w.blocked)
    return run


# ---------------------------------------------------------------------------------------------
# ordering across a thread synchronisation (PTX ISA 9.7.16.6.4 tcgen05.fence)
# ---------------------------------------------------------------------------------------------
_SEC_FENCE = "PTX ISA 9.7.16.6.4: tcgen05.fence::before_thread_sync / after_thread_sync"


_ALLOCATOR = ("tcgen05.alloc", "tcgen05.dealloc")


def _ordered(w, ins, what, lanes=None):
    """Warp `w` issues tcgen05 operation `what`: if a thread sync ordered it after other warps' tcgen05
    operations, both fences must be there. Then it becomes this warp's latest unfenced operation.

    An mbarrier wait that orders an allocator instruction (dealloc after the wait for the last commit) needs the
    awaited work's completion, which tcgen05.dealloc checks itself; the fences those entries owe stay owed by
    the warp's next asynchronous tcgen05 operation."""
    M = w.machine
    pend = w.tc_pending
    if pend:
        now = [e for e in pend if not (e[4] and what in _ALLOCATOR)]
        later = [e for e in pend if e[4] and what in _ALLOCATOR]
        w.tc_pending = later or None
        apart = [e for e in now if e[7]]
        if apart:
            x, who, where, _, _, by, _, (missing, at) = apart[0]
            raise TcgenFenceMissing(
                f"{w.who()} at {M.where(ins)}: {what} is ordered by {by} after the tcgen05 operation of {who} at "
                f"{where}, but that warp arrived from {x.who(order.lanes_of(~missing))} only, at {at}: "
                f"{x.who(order.lanes_of(missing))} executed the operation too, and no thread synchronisation (__syncwarp, "
                f"a barrier) orders their part before that arrive. A thread's tcgen05.fence::before_thread_sync "
                f"orders its tcgen05 operations before its own later synchronisation only: let the lanes meet at "
                f"__syncwarp() after the fence, then arrive ({_SEC_FENCE})")
        bad = [e for e in now if not e[3]]
        if bad:
            _, who, where, _, _, by, *_ = bad[0]
            raise TcgenFenceMissing(
                f"{w.who()} at {M.where(ins)}: {what} is ordered by {by} after the tcgen05 operation of {who} at "
                f"{where}, which did not execute tcgen05.fence::before_thread_sync before the {by} ({_SEC_FENCE}: "
                "tcgen05 operations are asynchronous; a thread sync orders them only between the two fences)")
        unfenced = [e for e in now if not e[6]]
        if unfenced:
            _, who, where, _, _, by, *_ = unfenced[0]
            raise TcgenFenceMissing(
                f"{w.who()} at {M.where(ins)}: {what} comes after {by}, which orders it after the tcgen05 operation "
                f"of {who} at {where}, but this warp executed no tcgen05.fence::after_thread_sync after the {by} "
                f"({_SEC_FENCE})")
    w.tc_last = (M.where(ins), False)
    if lanes is not None:    # the lanes of a warp-collective operation (tcgen05.ld/st): each thread's share
        order.tc_lanes_did(w, lanes)


def _fence(ins, kind):
    def body(w, m):
        if kind == "before":
            if w.tc_last is not None:
                w.tc_last = (w.tc_last[0], True)
        elif w.tc_pending:
            for e in w.tc_pending:
                e[6] = True
    return body


def alloc(ctx, ins, base, mods):
    """tcgen05.alloc (the allocator's rules: `bwlab.tmem.alloc.TensorMemory`); .cta_group::2 is collective."""
    return _alloc(ctx, ins, mods)


def dealloc(ctx, ins, base, mods):
    """tcgen05.dealloc (refused while an MMA still writes the columns)."""
    return _dealloc(ctx, ins, mods)


def relinquish_alloc_permit(ctx, ins, base, mods):
    """tcgen05.relinquish_alloc_permit."""
    return _relinquish(ctx, ins, mods)


def mma(ctx, ins, base, mods):
    """tcgen05.mma kind::f16 / kind::tf32 (`bwlab.umma.model.tcgen05_mma`), completing after a latency (the
    table's row goes through `tcgen05_cp.mma`, which takes the block-scaled kinds)."""
    return _mma(ctx, ins, mods)


def commit(ctx, ins, base, mods):
    """tcgen05.commit: arrives on the mbarrier(s) once the thread's earlier MMAs have completed."""
    return _commit(ctx, ins, mods)


def fence_before(ctx, ins, base, mods):
    """tcgen05.fence::before_thread_sync."""
    return _fence(ins, "before")


def fence_after(ctx, ins, base, mods):
    """tcgen05.fence::after_thread_sync."""
    return _fence(ins, "after")


# ---------------------------------------------------------------------------------------------
# the allocator (PTX ISA 9.7.16.7.1)
# ---------------------------------------------------------------------------------------------
def _alloc(ctx, ins, mods):
    from ....hw.tmem import TmemError
    group = _cta_group(mods)
    dst, rn = address(ctx, ins.args[0]), bits_reader(ctx, ins.args[1], "u32")

    def body(w, m):
        M = w.machine
        _same_group(w, ins, group)
        lane = _lane0(m)
        a, n = int(dst(w)[lane]), int(rn(w)[lane])
        c, off = M.mem.cta_of_cluster_addr(w, a, "tcgen05.alloc destination", ins, own=True)
        if off % 4 or off + 4 > c.smem.size:
            raise EmuFault(f"{w.who()} at {M.where(ins)}: the tcgen05.alloc destination 0x{off:x} must be a 4-byte "
                           f"aligned slot inside the CTA's {c.smem.size} bytes of shared memory")
        _ordered(w, ins, "tcgen05.alloc")
        tm = tmem_of(w.cta)
        free = tm.free_columns
        try:
            taddr = tm.alloc(w.cta.linear, w.wid, n)
        except TmemError as e:
            msg = str(e)
            if msg.startswith("TMEM exhausted") and group == 1 and alloc_waits(w, tm, n, ins, _SEC_ALLOC):
                return WAIT
            if msg.startswith("TMEM exhausted"):
                raise TmemAllocHang(
                    f"{w.who()} at {M.where(ins)}: tcgen05.alloc of {n} columns can never be satisfied: {free} of "
                    f"512 columns are free on this SM and only this CTA holds the rest "
                    + "; ".join(f"{x.ncols} columns at column {x.column} allocated at "
                                f"{w.cta.tmem_alloc_at.get(x.column, '?')}" for x in tm.allocations)
                    + f". On the GPU tcgen05.alloc blocks until columns are freed: this CTA would hang ({_SEC_ALLOC})"
                ) from None
            raise TmemAllocError(f"{w.who()} at {M.where(ins)}: {msg}") from None
        w.cta.tmem_alloc_at[taddr & 0xFFFF] = M.where(ins)
        # the address is written by the allocator, not by a generic store: other warps may read it only after a
        # barrier orders them after this warp (the allocating warp knows it at once)
        n_alloc = M.__dict__.setdefault("tc_allocs", {}).get((c.linear, w.wid), 0) + 1
        M.tc_allocs[(c.linear, w.wid)] = n_alloc
        akey = ("tmem.alloc", c.linear, w.wid)
        order.learn(w, akey, n_alloc)
        aop = ("alloc", c.linear, w.wid, n_alloc)
        order.add_async_write(c, off, off + 4, aop, "the tcgen05.alloc", M.where(ins), w.who())
        c.async_writes[aop][2] = (akey, n_alloc)
        # the address lands in SMEM (written by the tensor core's allocator, not a generic store)
        c.smem[off:off + 4] = np.frombuffer(np.uint32(taddr).tobytes(), np.uint8)
        c.smem_writer[off:off + 4] = -1
        M.note(w, f"tcgen05.alloc {n} columns at {taddr & 0xFFFF}")
        M.progress()
    if group == 2:
        return _pair_collective(body, ins, "tcgen05.alloc")
    return waiting(body)


def _dealloc(ctx, ins, mods):
    from ....hw.tmem import TmemError
    from ....tmem.alloc import TmemNote
    group = _cta_group(mods)
    ra, rn = bits_reader(ctx, ins.args[0], "u32"), bits_reader(ctx, ins.args[1], "u32")

    def body(w, m):
        M = w.machine
        _same_group(w, ins, group)
        lane = _lane0(m)
        taddr, n = int(ra(w)[lane]), int(rn(w)[lane])
        c = w.cta
        _ordered(w, ins, "tcgen05.dealloc")
        tm = tmem_of(c)
        col = taddr & 0xFFFF
        for lo, hi, desc in c.tmem_inflight:
            if lo < col + n and col < hi:
                raise TmemAllocError(
                    f"{w.who()} at {M.where(ins)}: tcgen05.dealloc of columns {col}..{col + n - 1} while {desc} "
                    f"still writes columns {lo}..{hi - 1}: wait for its tcgen05.commit before freeing the columns "
                    f"({_SEC_ALLOC}: the columns must not be in use)")
        for lo, hi, key, seq, desc in c.__dict__.get("tmem_writes", ()):
            if lo < col + n and col < hi and w.known.get(key, -1) < seq:
                raise TmemAllocError(
                    f"{w.who()} at {M.where(ins)}: tcgen05.dealloc of columns {col}..{col + n - 1}, which {desc} "
                    f"writes (columns {lo}..{hi - 1}), and this warp has not observed its completion: wait on the "
                    f"mbarrier its tcgen05.commit arrives on (directly, or through a barrier after a thread that did) "
                    f"before freeing the columns — the MMA may still be writing them ({_SEC_ALLOC})")
        for lo, hi, sw, where, *_ in c.__dict__.get("tmem_st_pending", ()):
            if lo < col + n and col < hi:
                raise TmemStoreNotWaited(
                    f"{w.who()} at {M.where(ins)}: tcgen05.dealloc of columns {col}..{col + n - 1} while the tcgen05.st "
                    f"of {sw} at {where} to columns {lo}..{hi - 1} has not been waited for (tcgen05.wait::st)")
        for lo, hi, key, seq, rwho, rwhere in c.__dict__.get("tmem_reads", ()):
            if lo < col + n and col < hi and w.known.get(key, -1) < seq:
                raise TmemAllocError(
                    f"{w.who()} at {M.where(ins)}: tcgen05.dealloc of columns {col}..{col + n - 1}, which the tcgen05.ld of "
                    f"{rwho} at {rwhere} reads (columns {lo}..{hi - 1}), and this warp is not ordered after that load's "
                    f"tcgen05.wait::ld: the load may still be reading. Let it finish (tcgen05.wait::ld), then order the "
                    f"dealloc after it: tcgen05.fence::before_thread_sync, a barrier, tcgen05.fence::after_thread_sync "
                    f"({_SEC_ALLOC})")
        c.tmem_writes = [x for x in c.__dict__.get("tmem_writes", ()) if not (x[0] < col + n and col < x[1])]
        c.tmem_reads = [x for x in c.__dict__.get("tmem_reads", ()) if not (x[0] < col + n and col < x[1])]
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always", TmemNote)
            try:
                tm.dealloc(c.linear, w.wid, taddr, n)
            except TmemError as e:
                raise TmemAllocError(f"{w.who()} at {M.where(ins)}: {e}") from None
        for note in notes:
            M.warnings.append(f"{w.who()} at {M.where(ins)}: {note.message}")
        M.note(w, f"tcgen05.dealloc {n} columns at {col}")
        M.progress()
    if group == 2:
        return _pair_collective(body, ins, "tcgen05.dealloc")
    return advancing(body)


def _relinquish(ctx, ins, mods):
    group = _cta_group(mods)

    def body(w, m):
        _same_group(w, ins, group)
        tmem_of(w.cta).relinquish_alloc_permit(w.cta.linear)
    if group == 2:
        return _pair_collective(body, ins, "tcgen05.relinquish_alloc_permit")
    return advancing(body)


def cta_exits(M, c):
    """Called when every thread of CTA `c` has exited: all TMEM it allocated must be free, and no warp of
    its peer may still wait for it in a collective .cta_group::2 allocator instruction."""
    for (cl, pair, name), waiting in M.__dict__.get("tc_rendezvous", {}).items():
        for rank, (pw, _) in waiting.items():
            if cl == id(c.cluster) and rank == c.rank ^ 1:
                raise PeerExited(f"{pw.who()} waits in {name}.cta_group::2, which one warp of each CTA of the pair "
                                 f"performs collectively, but the peer CTA {c.ctaid} (cluster rank {c.rank}) exited "
                                 f"without performing it (PTX ISA 9.7.16.7.1)")
    tm = getattr(c, "tmem", None)
    mine = [a for a in tm.allocations if a.cta == c.linear] if tm is not None else []   # the SM's TMEM is shared
    if not mine:
        return
    held = ", ".join(f"{a.ncols} columns at column {a.column} (allocated by warp {a.warp} at "
                     f"{c.tmem_alloc_at.get(a.column, '?')})" for a in mine)
    timeout = ""
    try:
        status = M.module.get_global("bw_status")._alloc.buf[:4]
        if int(np.frombuffer(status.tobytes(), np.uint32)[0]):
            timeout = (" A bounded mbarrier wait of the kernel had given up (its bw_status record is set): the "
                       "timeout path must free TMEM too.")
    except (AttributeError, KeyError):
        pass
    raise TmemLeak(f"CTA {c.ctaid} (cluster rank {c.rank}) exits with TMEM still allocated: {held}. All TMEM a kernel "
                   "allocates must be freed with tcgen05.dealloc before it exits; the next CTA on this SM would block in "
                   f"tcgen05.alloc forever ({_SEC_ALLOC}).{timeout}")


# ---------------------------------------------------------------------------------------------
# tcgen05.mma and tcgen05.commit (PTX ISA 9.7.16.10, 9.7.16.12)
# ---------------------------------------------------------------------------------------------
def _mma(ctx, ins, mods):
    kind = next((m[6:] for m in mods if m.startswith("kind::")), None)
    if kind not in ("f16", "tf32"):
        raise UnsupportedInstruction(f"`{ins.op}`: bwlab models tcgen05.mma kind::f16 and kind::tf32")
    if any(m in ("sp", "ws", "block_scale") or m.startswith("collector") for m in mods):
        raise UnsupportedInstruction(f"`{ins.op}`: sparse, .ws, block-scaled and collector forms are not modelled")
    group = _cta_group(mods)
    args = ins.args
    if len(args) != 5 or args[1][0] == "addr":
        raise UnsupportedInstruction(f"`{ins.op}` (PTX line {ins.line}): only [d_tmem], a_desc, b_desc, idesc, "
                                     "enable_input_d (A from SMEM) is modelled")
    rd = address(ctx, args[0])
    ra, rb = bits_reader(ctx, args[1], "u64"), bits_reader(ctx, args[2], "u64")
    ri, rp = bits_reader(ctx, args[3], "u32"), bits_reader(ctx, args[4], "pred")

    def body(w, m):
        M = w.machine
        d, a, b, i, p = rd(w), ra(w), rb(w), ri(w), rp(w)
        _same_group(w, ins, group)
        _ordered(w, ins, "tcgen05.mma")
        _one_issuer(w, m, ins, "tcgen05.mma")
        for lane in np.nonzero(m)[0]:
            _issue_mma(w, ins, kind, group, int(d[lane]) & 0xFFFFFFFF, int(a[lane]), int(b[lane]),
                       int(i[lane]), bool(p[lane]), int(w.tid[lane]))
        M.progress()
    return body


def _one_issuer(w, m, ins, what):
    """tcgen05.mma and tcgen05.commit are issued by one thread (CUTLASS elects one); executed by n lanes they
    issue n operations. Legal, so a warning with the count, once per instruction."""
    n = int(m.sum())
    M = w.machine
    seen = M.__dict__.setdefault("tc_multi", set())
    if n > 1 and (id(ins), w.cta.linear) not in seen:
        seen.add((id(ins), w.cta.linear))
        M.warnings.append(f"{w.who(m)} at {M.where(ins)}: {what} executed by {n} threads of the warp issues {n} "
                          f"separate operations (one per thread; PTX ISA 9.7.16.10 issue granularity). Issue it from "
                          "one elected thread (elect.sync), as CUTLASS does")


def _operand_bytes(desc, major, dtype, mn):
    from ....umma.canonical import instr_k
    from ....umma.descriptors import decode_smem_desc, descriptor_addresses, elem_bytes
    addrs = descriptor_addresses(decode_smem_desc(desc, "sm100"), major, dtype, mn, instr_k(dtype))
    eb = elem_bytes(dtype)
    return np.unique((addrs[..., None] + np.arange(eb)).reshape(-1))


def _issue_mma(w, ins, kind, group, d_tmem, adesc, bdesc, idesc, accumulate, tid, scaled=None):
    """`scaled`: a block-scaled MMA's scale operands with its issue and execute steps (tcgen05_cp.Scaled), else None."""
    from ....umma.idesc import decode_instr_desc
    from ....umma.model import CtaState, d_tmem_layout, mma_operands, tcgen05_mma
    M = w.machine
    where = M.where(ins)
    # either CTA of the pair may issue (CUTLASS issues from the even one, a convention); the even CTA holds
    # rows [0, M/2) of A and D and the first half of B's rows, the odd one the rest
    ctas = [w.cta] + ([_peer(w, ins, "tcgen05.mma")] if group == 2 else [])
    ctas.sort(key=lambda c: c.rank)
    try:
        states = [CtaState(smem=c.smem, tmem=tmem_of(c).image) for c in ctas]
        obytes = _operand_bytes
        if scaled is None:
            f = decode_instr_desc(idesc, kind)
            lay = d_tmem_layout(f.M, f.N, group)
            # the operands and shape, checked at issue (the values are read when the MMA executes)
            mma_operands(states, adesc, bdesc, idesc, kind, group)
        else:
            f, lay, obytes = scaled.issue(states[0], adesc, bdesc, idesc, kind)
    except (ValueError, IndexError) as e:
        raise EmuError(f"{w.who()} at {where}: tcgen05.mma idesc 0x{idesc:08x}, a_desc 0x{adesc:016x}, "
                       f"b_desc 0x{bdesc:016x}: {e}") from None
    col0 = d_tmem & 0xFFFF
    lo, hi = col0, col0 + lay.columns
    for c in ctas:
        owner = tmem_of(c).owner_map()[lo:hi]
        if owner.size < hi - lo or (owner != c.linear).any():
            raise TmemAllocError(f"{w.who()} at {where}: tcgen05.mma writes D to TMEM columns {lo}..{hi - 1} of CTA "
                                 f"{c.ctaid}, not all of them allocated by it ({_SEC_ALLOC}: a kernel may use only "
                                 "the TMEM it allocated)")
        if M.check_proxy:
            for desc, major, dt, mn, name in ((adesc, f.a_major, f.a_type, f.M // group, "A"),
                                              (bdesc, f.b_major, f.b_type, f.N // group, "B")):
                flat = obytes(desc, major, dt, mn)
                flat = flat[flat < c.smem.size]
                bad = flat[c.smem_writer[flat] >= 0]
                if bad.size:
                    M.mem.async_reads_smem(c, int(bad[0]), 1, f"tcgen05.mma operand {name} at {where}", w.who())
    desc = f"tcgen05.mma of {w.who()} at {where}"
    seqs = M.__dict__.setdefault("tc_seq", {})
    key = ("tcgen05.mma", w.cta.linear, tid)
    seq = seqs[key] = seqs.get(key, -1) + 1
    who = w.who(w.tid == tid)
    for c in ctas:
        for dsc, major, dt, mn, name in ((adesc, f.a_major, f.a_type, f.M // group, "A"),
                                         (bdesc, f.b_major, f.b_type, f.N // group, "B")):
            flat = obytes(dsc, major, dt, mn)
            flat = flat[flat < c.smem.size]
            if flat.size:
                lo_b, hi_b = int(flat.min()), int(flat.max()) + 1
                op = f"tcgen05.mma operand {name}"
                order.require_async_read_ordered(M, c, lo_b, hi_b, w.known, {w.wid} if c is w.cta else set(), op, where, who,
                                       flat=flat)
                order.require_lane_order(M, c, lo_b, hi_b, w, int(np.nonzero(w.tid == tid)[0][0]), op, where, who,
                                       flat=flat)
                order.require_read_ordered(M, c, lo_b, hi_b, w.known, f"{op} of {who}", where)
                order.add_region(c, lo_b, hi_b, key, seq, op, where, who)
        c.__dict__.setdefault("tmem_writes", []).append((lo, hi, key, seq, desc))
        pend = [p for p in c.__dict__.get("tmem_st_pending", ()) if p[0] < hi and lo < p[1]]
        if pend:
            raise TmemStoreNotWaited(
                f"{w.who()} at {where}: tcgen05.mma {'accumulates into' if accumulate else 'writes'} TMEM columns "
                f"{lo}..{hi - 1}, which the tcgen05.st of {pend[0][2]} at {pend[0][3]} writes, and that warp has not "
                "executed tcgen05.wait::st (PTX ISA 9.7.16.8.5: a tcgen05.st is complete only after tcgen05.wait::st; "
                "then order it before the MMA with tcgen05.fence::before_thread_sync, a thread sync and "
                "tcgen05.fence::after_thread_sync)")
    recs = []
    for c in ctas:
        rec = (lo, hi, desc)
        c.tmem_inflight.append(rec)
        recs.append((c, rec))
    pipe = M.__dict__.setdefault("tc_pipe", {})
    key = (w.cta.linear, tid)
    due = max(M.clock + M.latency(2 * (f.M * 16 + f.N * 16)), pipe.get(key, 0) + 1)
    pipe[key] = due

    def complete(states=states, ctas=ctas, recs=recs):
        for c in ctas:
            if c.exited:
                raise ProtocolError(f"{desc} completes after CTA {c.ctaid} exited: it writes that CTA's TMEM "
                                    "(wait for its tcgen05.commit before the CTA exits)")
        if scaled is None:
            tcgen05_mma(states, d_tmem, adesc, bdesc, idesc, accumulate, kind, group)
        else:
            scaled.execute(states[0], d_tmem, adesc, bdesc, idesc, accumulate, kind, desc)
        for c, rec in recs:
            c.tmem_inflight.remove(rec)
    M.schedule(due - M.clock, complete, desc)
    M.note(w, f"tcgen05.mma -> column {col0}")


def _commit(ctx, ins, mods):
    group = _cta_group(mods)
    multicast = any(m.startswith("multicast") for m in mods)
    addr = address(ctx, ins.args[0])
    rmask = bits_reader(ctx, ins.args[1], "u16") if multicast else None

    def body(w, m):
        M = w.machine
        a = addr(w)
        mk = rmask(w) if rmask is not None else None
        pipe = M.__dict__.setdefault("tc_pipe", {})
        _same_group(w, ins, group)
        _one_issuer(w, m, ins, "tcgen05.commit")
        if w.tc_last is not None:   # tcgen05.commit is an implicit tcgen05.fence::before_thread_sync (PTX ISA)
            w.tc_last = (w.tc_last[0], True)
        for lane in np.nonzero(m)[0]:
            bcta, boff = M.mem.cta_of_cluster_addr(w, int(a[lane]), "tcgen05.commit mbarrier", ins)
            if group == 2:
                _peer(w, ins, "tcgen05.commit")
            cl = w.cta.cluster
            if multicast:
                mask = int(mk[lane])
                if mask >> cl.size:
                    raise EmuError(f"{w.who()} at {M.where(ins)}: ctaMask 0x{mask:x} names CTA ranks beyond the "
                                   f"cluster's {cl.size}")
                targets = [cl.ctas[r] for r in range(cl.size) if mask >> r & 1]
            else:
                targets = [bcta]
            for c in targets:
                M.sync.async_uses_mbarrier(w, c, boff, "tcgen05.commit", ins)
                if c.mbarriers.get(boff) is None:
                    raise ProtocolError(f"{w.who()} at {M.where(ins)}: tcgen05.commit to shared offset 0x{boff:x} "
                                        f"({M.prog.shared_name(boff)}) of CTA rank {c.rank}, where no mbarrier is "
                                        "initialised")
            key = (w.cta.linear, int(w.tid[lane]))
            due = max(M.clock + 1, pipe.get(key, 0) + 1)
            mkey = ("tcgen05.mma",) + key
            last = M.__dict__.setdefault("tc_seq", {}).get(mkey, -1)
            carried = order.snapshot(w)
            if last >= 0:
                order.merge(carried, {mkey: last})   # every MMA this thread issued before the commit
            entry = (w, w.who(), M.where(ins), True)  # a commit is an implicit tcgen05.fence::before_thread_sync
            for c in targets:
                if c is not w.cta:
                    order.remote_access(w, c, "commits to its mbarrier", M.where(ins))

            def arrive(targets=targets, boff=boff, carried=carried, entry=entry):
                for c in targets:
                    if c.exited:
                        raise ProtocolError(f"the tcgen05.commit of {w.who()} at {M.where(ins)} arrives on an mbarrier "
                                            f"of CTA {c.ctaid} (cluster rank {c.rank}), which has already exited "
                                            "(every CTA a commit signals must wait for it before exiting)")
                    bar = c.mbarriers.get(boff)
                    if bar is None:
                        raise ProtocolError(f"the tcgen05.commit of {w.who()} at {M.where(ins)} arrives on shared "
                                            f"offset 0x{boff:x} of CTA rank {c.rank}, where the mbarrier was "
                                            "invalidated")
                    order.signal(c, boff, bar, carried, entry, lambda bar=bar: bar.arrive(1))
            names = " ".join(f"@{c.rank}:{boff}" for c in targets)
            M.schedule(due - M.clock, arrive, f"tcgen05.commit arrival {names}")
            M.note(w, "tcgen05.commit")
        M.progress()
    return body


# ---------------------------------------------------------------------------------------------
