"""Executing a launch: clusters of CTAs of warps, a seeded scheduler, virtual time, diagnosis.

SIMT as the hardware defines it since Volta: every lane has its own program counter; a warp runs the
lanes that share the lowest program counter among those able to run, so lanes that split at a branch
run apart and meet again where their paths join. A `.aligned` instruction (bar.sync, wgmma.*,
barrier.cluster.*, setmaxnreg) waits until every live lane of the warp has reached it; if the lanes can
only meet at different instructions, the warp is diverged, reported with the lanes and where each is.

Time is virtual: each executed warp-instruction is one nanosecond of `%globaltimer` and one cycle of
`%clock64`. Asynchronous operations (TMA, bulk stores, wgmma) complete after a latency drawn from
the launch's seeded generator, so one seed always gives one interleaving. When every live warp waits
and nothing is in flight, the launch is stuck: the emulator writes down who waits on what, then
moves the clock past every bounded wait's budget so the kernel's own timeout path runs exactly as on
the GPU; a kernel with no such path is reported as a hang (`EmuHang`).
"""
from __future__ import annotations

import gc
import heapq
import itertools

import numpy as np

from ..hw.mbarrier import MbarrierError
from ..util import ceil_div
from . import convergence, order
from .barriers import Synchronisation
from .errors import EmuError, EmuFault, EmuHang, EmuTimeout, ProtocolError
from .isa import Code
from .isa.operands import ALL, all_lanes
from .isa.asynchronous.tcgen05 import cta_exits
from .memory import RANK_SHIFT, UNWRITTEN
from .diagnosis import diagnose
from .memsys import MemorySystem
from .program import SMEM_RESERVED
from .specials import special_value
from .straight import run_straight
from .residency import Placement, admit, current_gpu, not_resident, register_estimate, retire, tmem_hang

__all__ = ["Launch", "MAX_SMEM_PER_CTA", "TIME_JUMP_NS"]

MAX_SMEM_PER_CTA = 227 * 1024      # sm_90 / sm_100 opt-in maximum per CTA
TIME_JUMP_NS = 1 << 32             # ~4.3 s: past every bounded wait's budget
FIRST_JUMP_NS = 201_000_000        # the first move: just past the suite's default budget (200 ms), so a timeout
                                   # reports the time a GPU would; a longer budget gets the next, larger move
MAX_JUMPS = 6
IDLE_STEPS = 50_000                # warp-instructions with no store, arrival, completion or exit: a spin
U64 = np.uint64
_PC_NONE = np.iinfo(np.int64).max
_UNIFORM = {}


def _uniform(pc: int) -> bytes:
    """The bytes of a warp's pc vector with every lane at `pc`."""
    b = _UNIFORM.get(pc)
    if b is None:
        b = _UNIFORM[pc] = np.full(32, pc, np.int64).tobytes()
    return b
_CHANGING_SPECIALS = ("%globaltimer", "%clock")   # the special registers whose value changes during a launch
_FULL_MASK = 0xFFFFFFFF


def _full_masks(c, w) -> bool:
    """Every lane's member mask of a `.sync` instruction names all 32 lanes."""
    return bool(((c.member(w).astype(np.int64) & _FULL_MASK) == _FULL_MASK).all())


def _own_rows(prog, kernel: str):
    """[first, last + 1) of the register rows of `kernel` when it calls nothing (so no other function's
    registers can be touched: the module's other functions' rows are never read), else None."""
    got = prog.__dict__.setdefault("_own_rows", {})
    if kernel not in got:
        f = prog.module.functions[kernel]
        idx = [i for (fn, _), i in prog.reg_index.items() if fn == kernel]
        calls = any(ins.op.split(".")[0] == "call" for ins in f.body)
        got[kernel] = None if calls or not idx or max(idx) - min(idx) + 1 != len(idx) else (min(idx), max(idx) + 1)
    return got[kernel]


class Warp:
    __slots__ = ("alive", "full", "finished", "specials",
                 "machine", "cta", "wid", "R", "pc", "exited", "valid", "inflight", "cparam", "local",
                 "frames", "blocked", "spin_epoch", "wait_info", "tid", "nthreads", "parked", "steps",
                 "wg_seq", "wg_groups", "wg_open", "sleep_until", "last_pc", "spin_lanes", "tc_last", "tc_pending",
                 "known", "arrivals", "releases", "favour", "fav_last", "turn", "snap", "aligned_live")

    def __init__(self, machine, cta, wid: int):
        prog = machine.prog
        self.machine, self.cta, self.wid = machine, cta, wid
        rows = machine.kernel_rows
        if rows is None:
            self.R = np.zeros((max(prog.nregs, 1), 32), U64)
        else:   # only the kernel's own registers are ever read or written: only they need zeros
            self.R = np.empty((max(prog.nregs, 1), 32), U64)
            self.R[rows[0]:rows[1]] = 0
        self.pc = np.full(32, machine.entry, np.int64)
        first = wid * 32
        self.tid = np.arange(first, first + 32, dtype=np.int64)
        self.valid = self.tid < cta.nthreads
        self.nthreads = int(self.valid.sum())
        self.exited = ~self.valid
        self.alive = self.valid.copy()            # ~exited, kept by Launch.exit_lanes
        self.full = bool(self.valid.all())        # every lane live
        self.finished = not self.valid.any()      # every lane exited
        self.specials = {}                        # the special registers that do not change, once read
        self.inflight = {}
        self.cparam = np.zeros((32, prog.callparam_size), np.uint8)
        self.local = np.zeros((32, max(prog.local_size, 1)), np.uint8)
        self.frames = None        # per lane: [Frame] of its active calls, innermost last (made at the first call)
        self.blocked = None       # a description while waiting at a CTA/cluster barrier
        self.spin_epoch = -1      # machine.epoch when a wait last failed
        self.spin_lanes = np.zeros(32, bool)   # the lanes whose wait failed at that epoch
        self.wait_info = None
        self.parked = None
        self.steps = 0
        self.wg_seq = 0           # wgmma.mma_async instructions issued by this warp
        self.wg_groups = []       # [[op ids]] committed wgmma groups not yet retired
        self.wg_open = []         # op ids issued since the last commit
        self.sleep_until = 0
        self.last_pc = machine.entry
        self.tc_last = None       # (where, fenced): this warp's latest tcgen05 op since its last thread sync
        self.tc_pending = None    # other warps' tcgen05 ops a sync ordered before this warp's next (tcgen05._ordered)
        self.known = {}           # completion key -> highest sequence observed complete (bwlab.emu.order)
        self.arrivals = 0         # barrier.cluster.arrive executed by this warp
        self.releases = 0         # barrier / mbarrier arrivals of this warp (its stores happen before the next)
        # independent thread scheduling: while the warp is diverged, the lowest-pc group runs (so paths that
        # split meet again), but no group runs more than FAIR_TURN warp-instructions while another waits:
        # then the group of lane `favour` (the next waiting lane after `fav_last`) has a turn of its own
        self.favour = -1
        self.fav_last = -1
        self.turn = 0
        self.snap = None          # (pc, lanes, registers) of the running group, to tell a spin from work
        self.aligned_live = None  # the live lanes when lanes first waited at an .aligned instruction

    # -- lanes ---------------------------------------------------------------------------------
    @property
    def live(self) -> np.ndarray:
        return ~self.exited

    def who(self, mask=None) -> str:
        c = self.cta
        lanes = np.nonzero(mask)[0] if mask is not None else np.nonzero(self.live)[0]
        thr = self.tid[lanes]
        span = (f"thread {thr[0]}" if len(thr) == 1 else
                f"threads {thr[0]}..{thr[-1]}" if len(thr) and thr[-1] - thr[0] + 1 == len(thr) else
                f"threads {', '.join(map(str, thr[:8]))}{'...' if len(thr) > 8 else ''}")
        rank = f" (cluster rank {c.rank})" if c.cluster.size > 1 else ""
        return f"CTA {c.ctaid}{rank} warp {self.wid} {span}"

    def special(self, name: str) -> np.ndarray:
        v = self.specials.get(name)
        if v is None:
            v = self._special(name)
            if not name.startswith(_CHANGING_SPECIALS):
                self.specials[name] = v
        return v

    def _special(self, name: str) -> np.ndarray:
        return special_value(self, name)

    # -- calls ---------------------------------------------------------------------------------
    def push_call(self, lanes, frame):
        """`lanes` enter a call: `frame` keeps what the callee's activation will overwrite."""
        if self.frames is None:
            self.frames = [[] for _ in range(32)]
        for lane in np.flatnonzero(lanes):
            self.frames[lane].append(frame)

    def pop_call(self, lanes):
        """`lanes` return, each to its own innermost caller (convergence.pop_frames)."""
        convergence.pop_frames(self, lanes)


class Cluster:
    def __init__(self, cid, size):
        self.cid = cid
        self.size = size
        self.ctas = []
        self.bar_arrived = set()


class CTA:
    def __init__(self, machine, ctaid, linear, cluster, rank, cluster_ctaid):
        self.machine = machine
        self.ctaid, self.linear, self.cluster, self.rank, self.cluster_ctaid = ctaid, linear, cluster, rank, cluster_ctaid
        bx, by, bz = machine.block
        self.nthreads = bx * by * bz
        # a CTA's shared memory holds whatever was there before it started (PTX ISA: not initialized)
        self.smem = np.full(machine.smem_bytes, UNWRITTEN, np.uint8)
        # generic-proxy writers of each SMEM byte not yet fenced for the async proxy: -1 = none
        self.smem_writer = np.full(machine.smem_bytes, -1, np.int32)
        self.smem_writer_pc = np.zeros(machine.smem_bytes, np.int32)
        # the warp that last stored each byte through the generic proxy, and its release count then (order.py)
        self.smem_wwarp = np.full(machine.smem_bytes, -1, np.int16)
        self.smem_wrel = np.zeros(machine.smem_bytes, np.int32)
        self.mbarriers = {}       # offset -> Mbarrier
        self.mbar_info = {}       # offset -> (init line, init who)
        self.mbar_unfenced = {}   # offset -> (initialising warp, line): init not yet fenced for the async proxy
        self.barriers = {}        # named barrier id -> dict
        self.bulk = {}            # thread -> [[op ids]] committed bulk groups not yet complete
        self.bulk_open = {}       # thread -> [op ids]
        self.exited = False
        self.sm = 0               # the SM it is resident on (Launch._admit)
        self.shared_base = rank << RANK_SHIFT   # shared::cta and shared::cluster addresses: rank << 24 | offset
        self.warps = [Warp(machine, self, k) for k in range(ceil_div(self.nthreads, 32))]


class Launch:
    """One kernel launch on the emulated GPU."""

    CTA, Cluster = CTA, Cluster   # what residency.admit builds when clusters become resident

    def __init__(self, module, kernel: str, grid, block, params: bytes, dynamic_smem: int = 0,
                 cluster=None, seed: int = 0, max_steps: int = 20_000_000, trace: bool = False,
                 check_proxy: bool = True, timing=None):
        prog = module.program
        self.module, self.prog, self.kernel = module, prog, kernel
        self.memory = module.memory
        self.entry = prog.entry_pc[kernel]
        self.kernel_rows = _own_rows(prog, kernel)
        self.grid, self.block = tuple(grid), tuple(block)
        f = prog.module.functions[kernel]
        self.explicit_cluster = f.cluster_dims is not None or cluster is not None
        cdims = tuple(f.cluster_dims or cluster or (1, 1, 1))
        self.cluster_dims = cdims + (1,) * (3 - len(cdims))
        self.params = np.frombuffer(bytes(params), np.uint8).copy()
        self.param_rows = {}       # ld.param by name: (offset, size, signed, type) -> the 32 lanes' value (isa.data)
        self.dynamic_smem = int(dynamic_smem)
        self.smem_bytes = (prog.dynamic_offset + self.dynamic_smem) if prog.dynamic_shared else prog.shared_size
        self.smem_bytes = max(self.smem_bytes, prog.shared_size, 16)
        if self.smem_bytes - SMEM_RESERVED > MAX_SMEM_PER_CTA:
            raise EmuError(f"{kernel} needs {self.smem_bytes - SMEM_RESERVED} bytes of shared memory per CTA "
                           f"({prog.shared_size - SMEM_RESERVED} static + {self.dynamic_smem} dynamic); a CTA may have at most "
                           f"{MAX_SMEM_PER_CTA} (sm_90/sm_100)")
        self.rng = np.random.default_rng(seed)
        self.seed = seed
        self.max_steps = max_steps
        self.check_proxy = check_proxy
        self.clock = 0
        self.time_offset = 1_000_000_000   # %globaltimer does not start at 0 on a GPU either
        self.steps = 0
        self.exits = 0             # whole-warp exits (the scheduler drops finished warps when it changes)
        self.finished_warps, self.exited_clusters = [], []   # since the scheduler / residency.retire last looked
        self.epoch = 0
        self.progress_step = 0     # self.steps when something last changed
        self.events = []           # async completions: heap of (due, seq, fn, desc)
        self.seq = itertools.count()
        self.inflight_ops = {}     # op id -> description (for diagnosis)
        self.op_ids = itertools.count(1)
        self.stall_reports = []
        self.warnings = []         # rule breaks the GPU would not report (listed, not raised)
        self.trace_on = trace
        self.trace = []            # (time, cta, warp, what)
        self.wgmma = {}            # (cta linear, warpgroup) -> {seq: [per-warp issue records]}
        self.cluster = None       # the latest cluster placed
        self._where = {}          # id(instruction) -> (instruction, where it is, in words)
        self.gpu = current_gpu()  # the emulated machine (residency.GPU): its SMs hold the resident CTAs
        self.mem = MemorySystem(self)       # address spaces, bounds, proxies
        self.sync = Synchronisation(self)   # named barriers, the cluster barrier, mbarriers
        timing and timing(self)             # bwlab.timing.trace.Recorder: wraps this launch's code (off: no cost)
        self.straight = not timing          # runs of plain instructions bypass Code.run: not while it is wrapped

    # ---- where things are --------------------------------------------------------------------
    def where(self, ins) -> str:
        got = self._where.get(id(ins))
        if got is None or got[0] is not ins:
            got = self._where[id(ins)] = (ins, Code(None, ins, "").where(self.prog.files))
        return got[1]

    def note(self, w, what):
        if self.trace_on:
            self.trace.append((self.clock, w.cta.linear, w.wid, what))

    # ---- running -----------------------------------------------------------------------------
    def run(self):
        # IEEE results, never NumPy's warnings about them: for the whole launch, not per instruction.
        # No cyclic garbage collection during the launch: its passes over the long-lived decoded programs
        # cost up to a tenth of a launch, and the launch itself makes only its own structures' cycles
        # (a few thousand objects, collected after it, when the collector is on again)
        enabled = gc.isenabled()
        gc.disable()
        try:
            with np.errstate(all="ignore"):
                self._run()
        finally:
            if enabled:
                gc.enable()

    def _run(self):
        gx, gy, gz = self.grid
        cx, cy, cz = self.cluster_dims
        for axis, (g, c) in enumerate(zip(self.grid, self.cluster_dims)):
            if g % c:
                raise EmuError(f"grid dimension {'xyz'[axis]} = {g} is not a multiple of the cluster's {c} "
                               "(CUDA launch rule: the grid is made of whole clusters)")
        size = cx * cy * cz
        gpu = self.gpu
        if size > gpu.sms:
            raise EmuError(f"a cluster of {size} CTAs does not fit on the emulated {gpu.name} ({gpu.sms} SMs)")
        bx, by, bz = self.block
        self.placement = Placement(gpu, bx * by * bz, self.smem_bytes, register_estimate(self.prog, self.kernel))
        pending = [(kx, ky, kz) for kz in range(gz // cz) for ky in range(gy // cy) for kx in range(gx // cx)]
        pending.reverse()
        self.resident = []       # clusters on the GPU now
        admit(self, pending)
        if pending:
            n = len(self.resident) * size
            self.warnings.append(
                f"{self.kernel}: the grid has {gx * gy * gz} CTAs but at most {n} are resident at once on the emulated "
                f"{gpu.name} ({gpu.sms} SMs; {self.placement.why()}): the others start as resident ones finish, in "
                "waves — a handshake between CTAs of different waves can hang, as on a GPU")
        self._schedule(pending)
        # bulk stores still in flight complete before the launch is over (the stream syncs)
        while self.events:
            self._complete_next()

    def _schedule(self, pending):
        warps = [w for cl in self.resident for c in cl.ctas for w in c.warps]
        jumps = 0
        progress_at_jump = -1
        n_live = exits = -1
        while True:
            if exits != self.exits:
                if exits < 0:
                    live = [w for w in warps if not w.finished]
                for x in self.finished_warps:   # dropped in place: the same draws pick the same warps
                    try:
                        live.remove(x)
                    except ValueError:          # (not in the list: it had finished before it was made)
                        pass
                self.finished_warps.clear()
                exits = self.exits
                if len(live) != n_live:   # a warp finished: maybe a whole cluster, whose SMs take the next ones
                    n_live = len(live)
                    if retire(self, pending):
                        warps = [w for cl in self.resident for c in cl.ctas for w in c.warps]
                        n_live = exits = -1
                        continue
                    if not live:
                        break
            self._complete_due()
            epoch, clock = self.epoch, self.clock
            w = runnable = None
            if n_live > 16:   # many resident warps: a few random draws find a runnable one without a full scan
                for _ in range(6):
                    x = live[int(self.rng.integers(n_live))]
                    if (x.blocked is None and x.sleep_until <= clock and not x.finished
                            and ((x.parked is None and x.spin_epoch != epoch) or self._ready(x))):
                        w = x
                        break
            if w is None:
                runnable = [w for w in live if w.blocked is None and w.sleep_until <= clock
                            and ((w.parked is None and w.spin_epoch != epoch) or self._ready(w))]
            if w is None and not runnable:
                sleepers = [w for w in live if w.blocked is None and w.sleep_until > self.clock]
                if self.events:
                    self._complete_next()
                    continue
                if sleepers:
                    self.clock = min(w.sleep_until for w in sleepers)
                    continue
                # stuck: everybody waits and nothing is in flight
                report = self.diagnose(live) + not_resident(pending)
                self.stall_reports.append(report)
                if self.epoch == progress_at_jump or jumps >= MAX_JUMPS or all(w.blocked for w in live):
                    tmem_hang(self, live, report)
                    raise EmuHang(f"{self.kernel}: every live thread waits and nothing can wake it "
                                  f"(virtual time {self.clock} ns):", report)
                jumps += 1
                progress_at_jump = self.epoch
                self.clock += FIRST_JUMP_NS if jumps == 1 else TIME_JUMP_NS
                self.epoch += 1   # the clock moved: waits that look at the time may now go on
                continue
            if self.steps - self.progress_step > IDLE_STEPS and not self.events:
                # warps run but nothing changes: loops that poll memory nobody writes
                report = self.diagnose(live, spinning=True) + not_resident(pending)
                self.stall_reports.append(report)
                if jumps >= 1 and self.epoch == progress_at_jump:
                    tmem_hang(self, live, report)
                    raise EmuHang(f"{self.kernel}: for {IDLE_STEPS} warp-instructions no thread stored to memory, "
                                  "arrived on a barrier, finished, or saw an asynchronous operation complete, even "
                                  "after the clock was moved past every bounded wait — a wait nothing bounds:",
                                  report)
                jumps += 1
                self.clock += FIRST_JUMP_NS if jumps == 1 else TIME_JUMP_NS
                self.progress()
                progress_at_jump = self.epoch
                continue
            if w is None:
                w = runnable[int(self.rng.integers(len(runnable)))] if len(runnable) > 1 else runnable[0]
            self._run_warp(w, int(self.rng.integers(4, 33)))

    def _candidates(self, w):
        live = ~w.exited
        cand = live.copy()
        if w.parked is not None:
            cand &= ~w.parked
        if w.spin_epoch == self.epoch:
            cand &= ~w.spin_lanes
        return live, cand

    def _ready(self, w) -> bool:
        if w.parked is None and w.spin_epoch != self.epoch:
            return not w.finished
        live, cand = self._candidates(w)
        if cand.any():
            return True
        # every live lane parked at a convergence point (none spinning): they can be released
        return w.parked is not None and not (live & ~w.parked).any()

    def _run_warp(self, w, quantum: int):
        code = self.prog.code
        left = quantum
        while left > 0:
            left -= 1
            if w.blocked is not None or w.finished or w.sleep_until > self.clock:
                return
            live = w.alive
            pcs = w.pc
            fav = w.favour
            if w.parked is None and w.spin_epoch != self.epoch and fav < 0:
                # the common case: every live lane may run and no diverged group has a turn of its own
                cand = live
                if w.full:
                    # after a whole-warp step the lanes are most likely together at the next pc
                    hint = w.last_pc + 1
                    if pcs.tobytes() == _uniform(hint):
                        pc, group = hint, ALL
                    else:
                        pc = min(pcs.tolist())
                        group = pcs == pc
                        if all_lanes(group):
                            group = ALL
                else:
                    pc = int(np.where(live, pcs, _PC_NONE).min())
                    group = live & (pcs == pc)
            else:
                live, cand = self._candidates(w)
                if not cand.any():
                    if w.parked is not None and not (live & ~w.parked).any():
                        # every live lane is parked at a convergence point: are they together?
                        self._release_parked(w)
                        continue
                    return
                if fav >= 0 and cand[fav]:
                    pc = int(pcs[fav])
                else:
                    pc = int(np.where(cand, pcs, _PC_NONE).min())
                group = cand & (pcs == pc)
            if group is not ALL and (fav >= 0 or (cand & ~group).any()):
                convergence.take_turns(w, cand, group)   # diverged: independent thread scheduling's fair turns
            c = code[pc]
            if group is ALL and self.straight and (c.step is not None or c.jump is not None):
                got = run_straight(self, w, pc, left)
                if got is not None:
                    left = got
                    continue
            if c.converge:
                if group is ALL and (c.converge == 1 or _full_masks(c, w)):
                    # the whole warp is here and every lane's member mask names every lane: nothing to wait for
                    if w.aligned_live is not None:
                        convergence.aligned_exits(self, w, c)
                else:
                    if group is ALL:
                        group = live.copy()
                    together = live & (pcs == pc)
                    if c.converge == 1:
                        need = live
                    else:
                        need, together = self._members(w, c, group, together)
                    if not (need & ~together).any():
                        group = together
                        if w.parked is not None:
                            w.parked &= ~group
                            if not w.parked.any():
                                w.parked = None
                        if c.converge == 1 and w.aligned_live is not None:
                            convergence.aligned_exits(self, w, c)
                    else:
                        if c.converge == 1 and w.aligned_live is None:
                            w.aligned_live = live.copy()
                        w.parked = (w.parked if w.parked is not None else np.zeros(32, bool)) | (group & together)
                        continue
            self.steps += 1
            w.steps += 1
            self.clock += 1
            if self.steps > self.max_steps:
                raise EmuTimeout(f"{self.kernel}: more than {self.max_steps} warp-instructions without finishing "
                                 f"(last: {w.who()} at {c.where(self.prog.files)})")
            w.last_pc = pc
            try:
                c.run(w, group)
            except (EmuError, EmuFault):
                raise
            except MbarrierError as e:
                raise ProtocolError(f"{w.who(group)} at {c.where(self.prog.files)}: {e}") from None
            if self.events and self.events[0][0] <= self.clock:
                self._complete_due()

    def _members(self, w, c, group, at):
        return convergence.members(self, w, c, group, at)

    def _release_parked(self, w) -> bool:
        return convergence.release_parked(self, w)

    # ---- async events --------------------------------------------------------------------------
    def schedule(self, delay: int, fn, desc: str):
        op = next(self.op_ids)
        self.inflight_ops[op] = desc
        heapq.heappush(self.events, (self.clock + max(1, int(delay)), next(self.seq), op, fn))
        return op

    def latency(self, nbytes: int = 0) -> int:
        return 200 + nbytes // 32 + int(self.rng.integers(0, 400))

    def _complete_due(self):
        while self.events and self.events[0][0] <= self.clock:
            self._complete_next()

    def _complete_next(self):
        due, _, op, fn = heapq.heappop(self.events)
        self.clock = max(self.clock, due)
        self.inflight_ops.pop(op, None)
        fn()
        self.progress()

    def progress(self):
        self.epoch += 1
        self.progress_step = self.steps

    def spin(self, w, info, lanes=None):
        """These lanes' wait failed: they run again once something changes."""
        lanes = ~w.exited if lanes is None else lanes
        if w.spin_epoch == self.epoch:
            w.spin_lanes |= lanes
        else:
            w.spin_lanes = lanes.copy()
        w.spin_epoch = self.epoch
        w.wait_info = info

    def sleep(self, w, ns: int):
        w.sleep_until = self.clock + max(1, min(ns, 1_000_000))

    # ---- exits ---------------------------------------------------------------------------------
    def exit_lanes(self, w, m):
        w.exited |= m
        w.alive = ~w.exited
        w.full = False if m.any() else w.full
        w.finished = bool(w.exited.all())
        self.progress()
        self.note(w, "exit")
        if w.finished:
            self.exits += 1
            self.finished_warps.append(w)
            c = w.cta
            # whole-warp exit counts as arrival at pending named barriers (the hardware counts warps)
            for bid in list(c.barriers):
                self.sync.complete_if_ready(c, bid)
            if all(x.finished for x in c.warps):   # (Warp.finished: every lane exited, kept here)
                c.exited = True
                self.exited_clusters.append(c.cluster)
                cta_exits(self, c)            # TMEM first: a leak is the clearer report
                order.require_exit_ordered(self, c)
                order.require_cluster_exit_ordered(self, c)
            self.sync.complete_cluster_if_ready(c.cluster)

    def inflight_read(self, w, idx, write=False):
        seq, line, *what = w.inflight[idx]
        if seq == "tcgen05.ld":
            raise ProtocolError(
                f"{w.who()} at {self.prog.code[w.last_pc].where(self.prog.files)} {'writes' if write else 'reads'} "
                f"a destination register of the tcgen05.ld at {line} before tcgen05.wait::ld (PTX ISA 9.7.16.8.3: "
                "the registers of tcgen05.ld are defined only after tcgen05.wait::ld)")
        raise ProtocolError(
            f"{w.who()} {'writes' if write else 'reads'} {what[0] if what else 'an accumulator register'} of "
            f"wgmma.mma_async #{seq} ({line}) before wgmma.wait_group has retired it (PTX ISA: accessing the "
            f"accumulator registers or A's fragment registers before the wait is undefined behaviour)")

    # ---- diagnosis ---------------------------------------------------------------------------------
    def diagnose(self, live, spinning: bool = False) -> str:
        """One line per distinct wait; warps of a CTA that wait on the same thing share the line."""
        return diagnose(self, live, spinning)

