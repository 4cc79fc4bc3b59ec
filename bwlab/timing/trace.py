"""Recording what a launch in the emulator did, for the timing model.

    rec = Recorder()
    c, run = runner.run_step_emulated("s3", a, b, sms=1, timing=rec)   # the emulator calls rec(launch)
    tr = rec.trace                                                      # a Trace

The emulator's own clock is virtual (one tick per warp-instruction): it gives the order of events,
not their duration. The recorder keeps what the duration depends on and drops what it does not:

* per warp, the instructions it executed, in order, each reduced to a class (`alu`, `mma`, `tma_load`,
  `mwait`, ...) and the few numbers its cost needs (bytes, FLOP, which barrier);
* a wait that failed and the loop that polled again (the bounded-wait spin of `mbarrier_wait`): dropped,
  so that the trace holds each wait once, where it succeeded; a blocking instruction the emulator retried
  (`wgmma.wait_group`, `cp.async.bulk.wait_group`) is kept once, where it went on;
* for every mbarrier phase, the events that contributed to it (arrivals, expect-tx, the TMA loads' byte
  completions), and for every successful wait the phase it observed. The timing model completes a phase
  when the last of its contributions has happened in *its* time, whatever order the emulator saw.

How the recorder gets in: `Launch(..., timing=rec)` calls `rec(launch)` once; the recorder then gives
that launch a copy of the program whose instructions are wrapped, and wraps the launch's `schedule`,
`latency` and `sync.mbarrier`. Nothing changes for a launch without a recorder.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Recorder", "Trace", "classify", "wgmma_serialized"]

_SHAPE = re.compile(r"\.m(\d+)n(\d+)k(\d+)")
_WIDTH = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
          "b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8}


def _width(op: str) -> int:
    parts = op.split(".")
    vec = 1
    for p in parts:
        if p in ("v2", "v4", "v8"):
            vec = int(p[1:])
    for p in reversed(parts):
        if p in _WIDTH:
            return vec * _WIDTH[p]
    return 4


def classify(op: str) -> str:
    """The timing class of a PTX instruction (its op text): what resource it costs."""
    if op.startswith("wgmma.mma_async"):
        return "mma"
    if op.startswith("tcgen05.mma"):
        return "umma"
    if op.startswith("tcgen05.commit"):
        return "umma_commit"
    if op.startswith("tcgen05.ld"):
        return "tmem_ld"
    if op.startswith("tcgen05.wait::ld"):
        return "tmem_wait"
    if op.startswith("wgmma.commit_group"):
        return "mma_commit"
    if op.startswith("wgmma.wait_group"):
        return "mma_wait"
    if op.startswith("cp.async.bulk.tensor") or op.startswith("cp.async.bulk.shared") or \
            op.startswith("cp.async.bulk.global"):
        parts = op.split(".")
        dst = parts[5] if op.startswith("cp.async.bulk.tensor") else parts[3]   # cp.async.bulk.tensor.2d.<dst>
        return "tma_store" if dst.startswith("global") else "tma_load"
    if op.startswith("cp.reduce.async.bulk"):
        return "tma_store"
    if op.startswith("cp.async.bulk.commit_group"):
        return "bulk_commit"
    if op.startswith("cp.async.bulk.wait_group"):
        return "bulk_wait_read" if ".read" in op else "bulk_wait"
    if op.startswith(("mbarrier.try_wait", "mbarrier.test_wait")):
        return "mwait"
    if op.startswith("mbarrier.init"):
        return "alu"
    if op.startswith("mbarrier."):
        return "marrive"
    if op.startswith(("bar.sync", "barrier.sync", "bar.red", "barrier.red")) or op == "bar" or op == "barrier":
        return "bar"
    if op.startswith(("bar.arrive", "barrier.arrive")):
        return "bar_arrive"
    if op.startswith("barrier.cluster.arrive"):
        return "carrive"
    if op.startswith("barrier.cluster.wait"):
        return "cwait"
    if op.startswith(("ld.global", "ld.volatile.global", "ld.relaxed.global", "ld.acquire.global",
                      "atom.global", "atom.", "red.global")):
        return "ld_global"
    if op.startswith(("st.global", "st.volatile.global", "st.relaxed.global", "st.release.global")):
        return "st_global"
    if op.startswith(("ld.shared", "ld.volatile.shared")):
        return "ld_shared"
    if op.startswith(("st.shared", "st.volatile.shared")):
        return "st_shared"
    if op in ("exit", "ret") or op.startswith(("exit", "ret")):
        return "exit"
    return "alu"


@dataclass
class Trace:
    """What the timing model replays (see the module's docstring).

    warps: {(cta, warp): [(class, a, b), ...]}; for `mma` a = FLOP of this warp's share; for `tma_load`
    a = op id, b = bytes; for `tma_store` a = op id, b = bytes; for `mwait` a = barrier serial, b = the
    phase index waited for (-1: none); for `marrive` a = 1 when it is on a peer CTA's barrier; for
    `mma_wait` / `bulk_wait*` a = N; for `ld_global` / `st_global` a = bytes, b = 32-byte sectors
    touched; for `ld_shared` / `st_shared` a = bytes;
    for `bar` / `bar_arrive` a = barrier id; for `carrive` / `cwait` a = cluster id.
    ops: {op id: (issuing event, kind, bytes, targets)}; contrib: {(serial, phase): [event, ...]} where an
    event is ('i', (cta, warp), index) or ('c', op id); ctas: {cta: (cluster id, rank, sm)}.
    """
    warps: dict = field(default_factory=dict)
    ops: dict = field(default_factory=dict)
    contrib: dict = field(default_factory=dict)
    ctas: dict = field(default_factory=dict)
    kernel: str = ""
    grid: tuple = ()
    block: tuple = ()
    instructions: int = 0       # warp-instructions the emulator executed
    dropped: int = 0            # of them, the failed waits and their polling loops
    wgmma_serial: bool = False  # ptxas serialized the kernel's wgmma (its C7520 note): each waits for the last

    def counts(self) -> dict:
        out = {}
        for recs in self.warps.values():
            for r in recs:
                out[r[0]] = out.get(r[0], 0) + 1
        return out


_SERIAL = re.compile(r"\(C7520\).*wgmma\.mma_async instructions are serialized.*in the function '([^']+)'")


def wgmma_serialized(log: str, kernel: str) -> bool:
    """Did ptxas serialize `kernel`'s wgmma? Its note C7520 ("wgmma.mma_async instructions are serialized
    due to ...", in the compile log) says it put a `WARPGROUP.DEPBAR.LE gsb0, 0x0` after every HGMMA: each
    wgmma waits for the one before it to finish, whatever wait_group the PTX asks for (step 2's thread-0
    loads inside the math loop do it: 'program dependence on compiler-inserted WG.AR in divergent path')."""
    return any(m.group(1) == kernel for m in map(_SERIAL.search, (log or "").splitlines()) if m)


class _WarpLog:
    __slots__ = ("recs", "marks", "spinning")

    def __init__(self):
        self.recs = []
        self.marks = []          # per record: (pc, lane mask, ran ahead of lanes still behind it)
        self.spinning = 0        # lanes in the polling loop of a wait that failed (a lane mask)


FULL_MASK = (1 << 32) - 1
# records that others wait for or that synchronise: a group's run-ahead records holding one stay where they ran
_SIGNALS = frozenset(("marrive", "tma_load", "tma_store", "bar", "bar_arrive", "carrive", "cwait", "umma",
                      "umma_commit", "mma", "mma_commit", "bulk_commit"))


def _reconverge_order(recs, marks, key, events) -> list:
    """The order of a warp's records as the GPU runs them (old indices). The emulator gives a diverged
    group that waits long a fair turn (bwlab.emu.convergence): the others may then run past the point
    where the paths join and on into the next loop iteration, before the waiting lane's own path. On the
    GPU they meet there first: ptxas brackets the branch with a convergence barrier (BSSY / BSYNC), and
    the lanes that arrive first wait at the BSYNC. So the records a group ran ahead (from the join on)
    go to where the lagging lanes reach that join, unless they hold a signal someone waits for, or the
    lagging lanes never get there (then they stay where the emulator ran them). From the join on, the
    lagging lanes' records of the same instructions are dropped: the warp runs them once."""
    pending = []                 # [mask, join pc, [indices], movable]
    moves, moved = {}, set()
    for i, (pc, mask, ahead) in enumerate(marks):
        for ch in pending[:]:
            if not mask & ch[0] and pc == ch[1]:          # the lagging lanes reach the join
                pending.remove(ch)
                if ch[3]:
                    moves.setdefault(i, []).extend(ch[2])
                    moved.update(ch[2])
                    # from the join on the lanes run together: the lagging lanes' records of the same
                    # instructions are the ones the group ahead ran (kept once)
                    j = i
                    for c in ch[2]:
                        if j >= len(marks) or marks[j][1] != mask or marks[j][0] != marks[c][0] or \
                                recs[j][0] != recs[c][0] or recs[j][0] in _SIGNALS or ("i", key, j) in events:
                            break
                        moved.add(j)
                        j += 1
        ok = recs[i][0] not in _SIGNALS and ("i", key, i) not in events
        ch = next((c for c in pending if c[0] == mask), None)
        if ch is not None:                                # the group ahead goes on with its turn
            ch[2].append(i)
            ch[3] = ch[3] and ok
            continue
        if ahead:
            pending.append([mask, pc, [i], ok])
            continue
        pending = [c for c in pending if not mask & c[0]]   # they run again before the others met them
    if not moves:
        return list(range(len(recs)))
    order = []
    for i in range(len(recs)):
        order.extend(moves.get(i, ()))
        if i not in moved:
            order.append(i)
    return order


class Recorder:
    """Attach to one emulator launch (`Launch(..., timing=Recorder())`) and record its `Trace`."""

    def __init__(self):
        self._trace = Trace()
        self._final = False
        self._logs = {}
        self._bars = {}          # id(bar) -> [serial, bar]
        self._touched = None     # during an event: {id(bar): (bar, state before, cta is remote)}
        self._event = None
        self._nbytes = 0
        self._new_ops = None
        self.launch = None

    @property
    def trace(self) -> Trace:
        """The recorded Trace, each warp's records in the order the GPU runs them (`_reconverge_order`)."""
        if not self._final and self.launch is not None:
            self._finish()
        return self._trace

    def _finish(self):
        self._final = True
        tr = self._trace
        events = set()
        for evs in tr.contrib.values():
            events.update(evs)
        events.update(v[0] for v in tr.ops.values())
        remap = {}
        for key, log in self._logs.items():
            order = _reconverge_order(log.recs, log.marks, key, events)
            if order == list(range(len(log.recs))):
                continue
            tr.dropped += len(log.recs) - len(order)
            log.recs[:] = [log.recs[i] for i in order]
            log.marks[:] = [log.marks[i] for i in order]
            remap.update({("i", key, old): ("i", key, new) for new, old in enumerate(order) if old != new})
        if remap:
            tr.contrib = {k: [remap.get(e, e) for e in evs] for k, evs in tr.contrib.items()}
            tr.ops = {k: (remap.get(v[0], v[0]),) + tuple(v[1:]) for k, v in tr.ops.items()}

    # ---- attaching ----------------------------------------------------------------------------
    def __call__(self, launch):
        if self.launch is not None:
            raise ValueError("a Recorder records one launch; make a new one for the next")
        self.launch = launch
        tr = self._trace
        tr.kernel, tr.grid, tr.block = launch.kernel, launch.grid, launch.block
        tr.wgmma_serial = wgmma_serialized(getattr(getattr(launch.module, "compiled", None), "log", ""), launch.kernel)
        launch.prog = _TracedProgram(launch.prog, self)
        sync = launch.sync
        orig_mbarrier = sync.mbarrier
        orig_async_uses = sync.async_uses_mbarrier

        def mbarrier(w, addr, what, ins, create_count=None):
            c, off, bar = orig_mbarrier(w, addr, what, ins, create_count)
            self._touch(bar, c is not w.cta)
            return c, off, bar

        def async_uses(w, c, off, what, ins):
            bar = c.mbarriers.get(off)
            if bar is not None:
                self._serial(bar)
            return orig_async_uses(w, c, off, what, ins)
        sync.mbarrier = mbarrier
        sync.async_uses_mbarrier = async_uses
        orig_schedule, orig_latency = launch.schedule, launch.latency

        def latency(nbytes=0):
            self._nbytes = int(nbytes)
            return orig_latency(nbytes)

        def schedule(delay, fn, desc):
            box = []

            def done():
                self._completion(box[0], fn)
            op = orig_schedule(delay, done, desc)
            box.append(op)
            self._issued(op, desc)
            return op
        launch.latency = latency
        launch.schedule = schedule

    # ---- barriers -----------------------------------------------------------------------------
    def _serial(self, bar) -> int:
        got = self._bars.get(id(bar))
        if got is None:
            got = self._bars[id(bar)] = [len(self._bars), bar]
        return got[0]

    @staticmethod
    def _state(bar):
        return (bar.phase, bar.pending, bar.tx, bar.count)

    def _touch(self, bar, remote):
        self._serial(bar)
        if self._touched is not None and id(bar) not in self._touched:
            self._touched[id(bar)] = (bar, self._state(bar), remote)

    def _contributions(self, touched, event):
        for bar, before, _ in touched:
            if self._state(bar) != before:
                self._trace.contrib.setdefault((self._serial(bar), before[0]), []).append(event)

    # ---- async operations ---------------------------------------------------------------------
    def _issued(self, op, desc):
        if self._new_ops is None:     # scheduled outside an instruction (cannot happen for the ISA's async ops)
            return
        kind = ("tma_load" if desc.startswith("TMA load") else "tma_store" if desc.startswith(("TMA store", "TMA reduce"))
                else "bulk" if desc.startswith("bulk copy") else "wgmma" if desc.startswith("wgmma") else "other")
        targets = 1
        m = re.search(r"rank\(s\) ([\d,]+)", desc)
        if m:
            targets = len(m.group(1).split(","))
        self._new_ops.append((op, kind, self._nbytes, targets))

    def _completion(self, op, fn):
        before = [(bar, self._state(bar), False) for _, bar in self._bars.values()]
        saved, self._touched = self._touched, None
        try:
            fn()
        finally:
            self._touched = saved
        if op in self._trace.ops:
            self._contributions(before, ("c", op))

    # ---- instructions -------------------------------------------------------------------------
    def wrap(self, pc, code):
        run = code.run
        cls = classify(code.instr.op)
        op = code.instr.op
        width = _width(op)
        shape = _SHAPE.search(op)
        flops = 2 * 16 * int(shape.group(2)) * int(shape.group(3)) if shape else 0   # one warp's 16 rows
        rec = self

        def traced(w, group, *rest):
            key = (w.cta.linear, w.wid)
            log = rec._logs.get(key)
            if log is None:
                log = rec._logs[key] = _WarpLog()
                rec._trace.warps[key] = log.recs
                c = w.cta
                rec._trace.ctas.setdefault(c.linear, (c.cluster.cid, c.rank, c.sm))
            M = w.machine
            sectors = _sectors(code, w, group) if cls in ("ld_global", "st_global") else 0
            prev_info, pc_before = w.wait_info, int(w.pc[group].min()) if group is not None else pc
            if group is None or group.all():
                mark = (pc, FULL_MASK, False)
            else:           # a diverged group: is it ahead of live lanes that still have to come this way?
                others = ~w.exited & ~group
                parked = getattr(w, "parked", None)
                if parked is not None:
                    others &= ~parked        # lanes waiting at a convergence point wait for this group
                ahead = bool(others.any()) and int(w.pc[others].min()) < pc
                mark = (pc, int(np.packbits(group, bitorder="little").view("<u4")[0]), ahead)
            rec._touched, rec._new_ops = {}, []
            try:
                run(w, group, *rest)
            finally:
                touched, ops = rec._touched, rec._new_ops
                rec._touched = rec._new_ops = None
            rec._trace.instructions += 1
            if cls == "mwait":
                failed = w.spin_epoch == M.epoch and w.wait_info is not prev_info
                if failed:
                    log.spinning |= mark[1]
                    rec._trace.dropped += 1
                    return
                log.spinning &= ~mark[1]
            elif log.spinning and not mark[1] & ~log.spinning:    # only lanes that are polling
                rec._trace.dropped += 1
                return
            if w.blocked is None and int(w.pc[group].min()) == pc_before and pc_before == pc and \
                    code.row.kind == "blocking":
                rec._trace.dropped += 1     # a blocking wait that must run again: kept where it goes on
                return
            idx = len(log.recs)
            event = ("i", key, idx)
            lanes = int(np.count_nonzero(group))
            if cls == "mwait":
                bars = list(touched.values())
                if bars:
                    bar = bars[0][0]
                    item = (cls, rec._serial(bar), bar.phase - 1)
                else:
                    item = (cls, -1, -1)
            elif cls == "marrive":
                remote = any(r for _, _, r in touched.values())
                item = (cls, int(remote), 0)
            elif cls == "mma":
                item = (cls, flops, 0)
            elif cls == "umma":
                item = (cls, _umma_flops(code, w, group), 0)
            elif cls == "umma_commit":
                item = (cls, tuple(o[0] for o in ops), 0)
            elif cls in ("tma_load", "tma_store"):
                if ops:
                    for o in ops:
                        rec._trace.ops[o[0]] = (event,) + o[1:]
                    item = (cls, ops[0][0], sum(o[2] for o in ops))
                    if len(ops) > 1:
                        item = (cls, tuple(o[0] for o in ops), sum(o[2] for o in ops))
                else:
                    item = ("alu", 0, 0)
            elif cls in ("mma_wait", "bulk_wait", "bulk_wait_read"):
                item = (cls, _imm(code, w), 0)
            elif cls in ("ld_global", "st_global"):
                item = (cls, width * lanes, sectors)
            elif cls in ("ld_shared", "st_shared"):
                item = (cls, width * lanes, 0)
            elif cls in ("bar", "bar_arrive"):
                item = (cls, _imm(code, w), 0)
            elif cls in ("carrive", "cwait"):
                item = (cls, w.cta.cluster.cid, 0)
            else:
                item = (cls, 0, 0)
            log.recs.append(item)
            log.marks.append(mark)
            if touched and cls not in ("mwait",):
                rec._contributions(touched.values(), event)
            for o in ops:
                if o[0] not in rec._trace.ops:
                    rec._trace.ops[o[0]] = (event,) + o[1:]
        return dataclasses.replace(code, run=traced)


def _umma_flops(code, w, group) -> int:
    """FLOP one SM computes for a tcgen05.mma: M and N from its instruction descriptor (PTX ISA, Instruction
    descriptor: bits 17-22 N >> 3, bits 24-28 M >> 4), K = 32 bytes of operand; cta_group::2 splits M over
    the pair's two SMs."""
    args = code.instr.args
    reg = args[3] if len(args) > 3 else None
    if reg is None or reg[0] not in ("reg", "imm"):
        return 0
    if reg[0] == "imm":
        idesc = int(reg[1], 0)
    else:
        lane = int(np.flatnonzero(group)[0])
        idesc = int(w.R[w.machine.prog.reg_index[(code.func, reg[1])], lane])
    n, m = ((idesc >> 17) & 0x3F) << 3, ((idesc >> 24) & 0x1F) << 4
    k = 32 if ("kind::f8f6f4" in code.instr.op or "kind::i8" in code.instr.op) else 16
    pair = 2 if "cta_group::2" in code.instr.op else 1
    return 2 * (m // pair) * n * k


def _sectors(code, w, group) -> int:
    """The distinct 32-byte sectors a global access of the lanes in `group` touches (its cost in the
    SM's load/store path and the L2 is per sector, not per byte)."""
    for a in code.instr.args:
        if a[0] == "addr":
            base = a[1]
            if base[0] != "reg":
                return 1
            idx = w.machine.prog.reg_index.get((code.func, base[1]))
            if idx is None:
                return 1
            addr = w.R[idx][group].astype(np.int64) + int(a[2] or 0)
            return max(1, len(np.unique(addr >> 5)))
    return 1


def _imm(code, w) -> int:
    """The first operand of an instruction (wait_group N, a barrier id): an immediate, or the register's
    value in the warp's first live lane."""
    args = code.instr.args
    if not args:
        return 0
    kind, val = args[0][0], args[0][1]
    if kind == "imm":
        return int(val, 0)
    if kind == "reg":
        idx = w.machine.prog.reg_index[(code.func, val)]
        lane = int(np.flatnonzero(~w.exited)[0]) if (~w.exited).any() else 0
        return int(w.R[idx, lane])
    return 0


class _TracedProgram:
    """The launch's program with every instruction wrapped by the recorder; everything else passes through."""

    def __init__(self, prog, rec):
        self._prog = prog
        self.code = [c if c is None else rec.wrap(pc, c) for pc, c in enumerate(prog.code)]

    def __getattr__(self, name):
        return getattr(self._prog, name)
