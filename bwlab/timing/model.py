"""The timing model: a discrete-event replay of an emulator trace on a machine description.

    tl = model.replay(trace, machine.load("h100_sxm").at(), Env(clock_mhz=1350, active_sms=132, miss=0.2))
    tl.cycles, tl.warp("cta 0 warp 4")          # kernel cycles, one warp's timeline

Every warp replays its recorded instructions in order. An instruction issues when its warp is ready and
its SM sub-partition's scheduler (warp w sits on sub-partition w % 4) has a free issue slot; then:

  alu, fences, arrivals     the warp goes on `alu_cpi` cycles later (an arrival on a peer CTA's mbarrier
                            lands `mbar_remote` cycles later)
  mma (wgmma)               the warp's share (16 rows) queues on its sub-partition's tensor pipe, which
                            does mma_flops / 4 FLOP per cycle; it completes `mma_latency` after its slot;
                            where ptxas serialized the kernel's wgmma (Trace.wgmma_serial), a wgmma waits
                            for the warp's wgmma before it to complete
  mma_commit / mma_wait N   groups of mma; the wait holds the warp until all but the newest N are done
  umma (tcgen05.mma)        the SM's whole tensor pipe (mma_flops per cycle); tcgen05.commit's mbarrier arrival
                            happens when the CTA's earlier tcgen05.mma are done; tcgen05.ld / wait::ld:
                            `smem_latency`
  tma_load                  the SM's TMA unit takes it (one box per `tma_issue` cycles); its bytes queue
                            on the SM's share of L2 bandwidth and, for the fraction `miss` that misses
                            L2, on the SM's share of DRAM bandwidth; it lands `tma_latency` (+ miss x
                            `dram_latency`) after the later of the two
  tma_store, bulk groups    the bytes queue on the SM's share of L2 write bandwidth
  st/ld shared              SMEM bytes on the SM's SMEM port
  st/ld global              each 32-byte sector the warp's lanes touch takes `gst_sector` cycles of the SM's
                            load/store path (a store: or the SM's share of the chip's store rate `st_l2_bw`
                            among the `Env.storing_sms` SMs storing at once, if slower); a store holds its warp `gst_warp` cycles per sector, or longer
                            while the path has more than `lsu_queue` cycles of work queued; a load holds it
                            `gmem_latency`
  mwait (mbarrier wait)     holds the warp until the phase it observed in the emulator has completed here:
                            when the last of the events that contributed to that phase (arrivals,
                            expect-tx, TMA byte completions) has happened, + `mbar_wake`; at least
                            `mbar_try` after the wait was issued (a try_wait's own cost)
  marrive                   an arrival takes effect `mbar_arrive` cycles on its barrier, which applies
                            arrivals one at a time
  bar / barrier.cluster     release `bar_sync` / `cluster_sync` after the last warp of that generation arrives

Shared resources are servers with a next-free time, taken in the order warps reach them (the replay
advances the warp with the earliest time first), so contention between warps, CTAs and the SMs of a
cluster is in the timeline. The rest of the GPU is in `Env`: the SM's bandwidth shares are the chip's
divided by the SMs that run at the same time, `miss` is the fraction of L2 reads that go to DRAM, and
`storing_sms` is how many SMs write C with direct stores at the same moment (their epilogues overlap in
time only as far as the SMs' tiles are aligned: bwlab.timing.gemm's `align`).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field

__all__ = ["Env", "Timeline", "replay", "ModelError", "store_sector_cycles"]


class ModelError(RuntimeError):
    """The replay cannot go on: a wait whose phase no recorded event completes (a trace the model misreads)."""


@dataclass(frozen=True)
class Env:
    clock_mhz: float            # the SM clock the prediction is for (DRAM bytes per cycle depend on it)
    active_sms: int             # SMs running at once, sharing L2 and DRAM bandwidth
    miss: float = 0.0           # fraction of TMA-loaded bytes that come from DRAM
    storing_sms: float = 1.0    # SMs (the simulated one included) whose direct global stores share the chip's
                                # store rate (`st_l2_bw`) at the same moment: 1 alone, active_sms in lockstep

    def __post_init__(self):
        if not self.clock_mhz > 0:
            raise ValueError(f"clock_mhz must be positive, got {self.clock_mhz}")
        if not self.active_sms >= 1:
            raise ValueError(f"active_sms must be at least 1, got {self.active_sms}")
        if not 0.0 <= self.miss <= 1.0:
            raise ValueError(f"miss is a fraction in [0, 1], got {self.miss}")
        if not 1.0 <= self.storing_sms <= self.active_sms:
            raise ValueError(f"storing_sms counts SMs storing at once, the simulated one included: it lies in "
                             f"[1, active_sms = {self.active_sms}], got {self.storing_sms}")


@dataclass
class Timeline:
    cycles: float
    warps: dict = field(default_factory=dict)     # key -> [(record index, class, issue, done)]
    busy: dict = field(default_factory=dict)      # resource -> busy cycles
    sm_of: dict = field(default_factory=dict)     # cta -> simulated SM

    def phases(self, key, classes) -> list:
        """(issue, done) of the records of warp `key` whose class is in `classes`."""
        return [(t0, t1) for _, c, t0, t1 in self.warps[key] if c in classes]


class _Warp:
    __slots__ = ("key", "recs", "i", "t", "open", "groups", "bopen", "bgroups", "bars", "carr", "done", "log", "sm", "sub", "since")

    def __init__(self, key, recs, sm):
        self.key, self.recs, self.sm, self.sub = key, recs, sm, key[1] % 4
        self.i, self.t = 0, 0.0
        self.open, self.groups = [], []
        self.bopen, self.bgroups = [], []
        self.bars, self.carr = {}, 0
        self.done = False
        self.log = []
        self.since = None        # when a parked mbarrier wait was issued


def store_sector_cycles(m: dict, env: Env) -> float:
    """Cycles of the simulated SM's store path per 32-byte sector of a direct global store: `gst_sector` (the
    SM alone), or its share of the chip's store rate `st_l2_bw` when `env.storing_sms` SMs store at once,
    whichever is slower."""
    chip = m["st_l2_bw"] / (env.clock_mhz * 1e6)          # sector bytes per SM cycle, all SMs together
    return max(m["gst_sector"], env.storing_sms * 32.0 / chip)


def replay(trace, m: dict, env: Env, sm_of=None, keep_log: bool = True, cta_start=None) -> Timeline:
    """Replay `trace` (bwlab.timing.trace.Trace) on machine numbers `m` (Machine.at(...)) in `env`.
    `sm_of(cta, cluster_id, rank) -> sm`: where each CTA runs (default: its rank in its cluster, so the
    CTAs of one cluster sit on different SMs and the CTAs of different clusters share them).
    `cta_start`: {cta: cycle} at which that CTA's warps start (default 0: every CTA at once)."""
    if sm_of is None:
        def sm_of(cta, cid, rank):
            return rank
    sms = {c: sm_of(c, cid, rank) for c, (cid, rank, _) in trace.ctas.items()}
    cpi = m["alu_cpi"]
    serial = getattr(trace, "wgmma_serial", False)
    per_sub_flops = m["mma_flops"] / 4.0
    l2_rate = min(m["sm_l2_port"], m["l2_bw"] / (env.clock_mhz * 1e6) / env.active_sms)
    dram_rate = m["dram_bw"] / (env.clock_mhz * 1e6) / env.active_sms
    miss = env.miss
    gst = store_sector_cycles(m, env)
    free = {}                      # resource -> next free cycle
    busy = {}

    def take(res, start, dur):
        s = max(start, free.get(res, 0.0))
        free[res] = s + dur
        busy[res] = busy.get(res, 0.0) + dur
        return s + dur

    # mbarrier phases: how many contributing events are still without a time
    contrib = trace.contrib
    pending = {k: len(v) for k, v in contrib.items()}
    ptime = {k: 0.0 for k in contrib}
    by_event = {}
    for k, evs in contrib.items():
        for e in evs:
            by_event.setdefault(e, []).append(k)
    resolved = {}                  # phase key -> completion time
    parked_phase = {}              # phase key -> [warp]
    # named barriers and the cluster barrier: arrivals per generation
    expected_bar, expected_cl = {}, {}
    for key, recs in trace.warps.items():
        cta = key[0]
        n = {}
        k = 0
        for r in recs:
            if r[0] in ("bar", "bar_arrive"):
                n[r[1]] = n.get(r[1], 0) + 1
                g = (cta, r[1], n[r[1]])
                expected_bar[g] = expected_bar.get(g, 0) + 1
            elif r[0] == "carrive":
                k += 1
                g = (r[1], k)
                expected_cl[g] = expected_cl.get(g, 0) + 1
    bar_state = {}                 # generation -> [arrived, latest time, [parked warps]]
    umma_fin = {}                  # cta -> completion of its latest tcgen05.mma
    cl_state = {}

    warps = {key: _Warp(key, recs, sms[key[0]]) for key, recs in trace.warps.items()}
    for w in warps.values():
        w.t = float((cta_start or {}).get(w.key[0], 0.0))
        if w.t < 0:
            raise ValueError(f"a CTA starts at a cycle >= 0, got {w.t} for CTA {w.key[0]}")
    heap = [(w.t, n, w.key) for n, w in enumerate(warps.values())]
    heapq.heapify(heap)
    seq = len(heap)
    end = 0.0

    def wake(w, t):
        nonlocal seq
        w.t = max(w.t, t)
        seq += 1
        heapq.heappush(heap, (w.t, seq, w.key))

    def event_time(e, t):
        for k in by_event.get(e, ()):
            ptime[k] = max(ptime[k], t)
            pending[k] -= 1
            if pending[k] == 0:
                resolved[k] = ptime[k]
                for x in parked_phase.pop(k, ()):
                    wake(x, ptime[k] + m["mbar_wake"])

    while heap:
        t, _, key = heapq.heappop(heap)
        w = warps[key]
        if w.done or t < w.t:
            continue
        if w.i >= len(w.recs):
            w.done = True
            end = max(end, w.t)
            continue
        idx = w.i
        cls, a, b = w.recs[idx]
        sched = ("issue", w.sm, w.sub)
        ti = max(w.t, free.get(sched, 0.0))
        free[sched] = ti + 1.0
        busy[sched] = busy.get(sched, 0.0) + 1.0
        ev = ("i", key, idx)
        nxt = ti + cpi
        done = nxt
        blocked = False
        if cls == "mma":
            if serial and (w.open or w.groups):
                # ptxas put a wait for the warp's wgmma before (WARPGROUP.DEPBAR) in front of this one,
                # committed or not; the instructions between the two ran meanwhile (Trace.wgmma_serial)
                ti = max(ti, max(w.open + w.groups))
                nxt = ti + cpi
            fin = take(("tensor", w.sm, w.sub), ti, a / per_sub_flops) + m["mma_latency"]
            w.open.append(fin)
            done = fin
        elif cls == "umma":
            # tcgen05.mma: one thread issues it; the SM's whole tensor pipe computes it (each SM of a pair its half)
            fin = take(("tensor", w.sm, "all"), ti, a / m["mma_flops"]) + m["mma_latency"]
            umma_fin[key[0]] = max(umma_fin.get(key[0], 0.0), fin)
            done = fin
        elif cls == "umma_commit":
            # tcgen05.commit: its mbarrier arrival happens when every earlier tcgen05.mma of the CTA is done
            fin = max(umma_fin.get(key[0], ti), ti)
            for op in a:
                event_time(("c", op), fin)
            done = fin
        elif cls == "tmem_ld":
            w.open.append(ti + m["smem_latency"])
        elif cls == "tmem_wait":
            if w.open:
                nxt = max(nxt, max(w.open))
            w.open = []
            done = nxt
        elif cls == "mma_commit":
            w.groups.append(max(w.open) if w.open else ti)
            w.open = []
        elif cls == "mma_wait":
            keep = len(w.groups) - a if a < len(w.groups) else 0
            old = w.groups[:keep] if a else w.groups
            w.groups = w.groups[keep:] if a else []
            if old:
                nxt = max(nxt, max(old))
            done = nxt
        elif cls == "tma_load":
            ops = a if isinstance(a, tuple) else (a,)
            start = take(("tma", w.sm), ti, m["tma_issue"]) - m["tma_issue"]
            l2_done = take(("l2", w.sm), start, b / l2_rate)
            fin = l2_done
            if miss > 0:
                fin = max(fin, take(("dram", w.sm), start, b * miss / dram_rate))
            fin += m["tma_latency"] + miss * m["dram_latency"]
            for op in ops:
                event_time(("c", op), fin)
            done = fin
        elif cls == "tma_store":
            start = take(("tma", w.sm), ti, m["tma_issue"]) - m["tma_issue"]
            read = take(("smem", w.sm), start, b / m["smem_bw"])
            fin = take(("l2w", w.sm), read, b / l2_rate) + m["tma_latency"]
            w.bopen.append((fin, read))
            done = fin
        elif cls == "bulk_commit":
            if w.bopen:
                w.bgroups.append((max(x[0] for x in w.bopen), max(x[1] for x in w.bopen)))
            w.bopen = []
        elif cls in ("bulk_wait", "bulk_wait_read"):
            keep = len(w.bgroups) - a if a < len(w.bgroups) else 0
            old = w.bgroups[:keep] if a else w.bgroups
            w.bgroups = w.bgroups[keep:] if a else []
            j = 1 if cls == "bulk_wait_read" else 0
            if old:
                nxt = max(nxt, max(x[j] for x in old))
            done = nxt
        elif cls == "st_shared":
            take(("smem", w.sm), ti, a / m["smem_bw"])
        elif cls == "ld_shared":
            nxt = max(take(("smem", w.sm), ti, a / m["smem_bw"]), ti + m["smem_latency"])
            done = nxt
        elif cls == "st_global":
            # the SM's load/store path takes a store per 32-byte sector; the warp waits while its own stores
            # drain (gst_warp per sector) and when the SM's path has more than lsu_queue cycles queued
            fin = take(("lsu", w.sm), ti, b * gst)
            nxt = max(nxt, ti + b * m["gst_warp"], fin - m["lsu_queue"])
        elif cls == "ld_global":
            fin = take(("lsu", w.sm), ti, b * m["gst_sector"])
            nxt = max(take(("l2", w.sm), ti, a / l2_rate), fin, ti + m["gmem_latency"])
            done = nxt
        elif cls == "marrive":
            done = ti + (m["mbar_remote"] if a else 1.0)
            keys = by_event.get(ev)
            if keys:          # the barrier applies its arrivals one at a time
                done = take(("mbar", keys[0][0]), done, m["mbar_arrive"])
        elif cls == "mwait":
            k = (a, b)
            if b >= 0 and k in contrib:
                if k in resolved:
                    # the try_wait's own cost, from when it was first issued; a sleeping wait wakes
                    # mbar_wake after the phase completes
                    t0 = ti if w.since is None else w.since
                    w.since = None
                    nxt = max(nxt, t0 + m["mbar_try"], resolved[k] + m["mbar_wake"])
                else:
                    parked_phase.setdefault(k, []).append(w)
                    w.since = ti if w.since is None else w.since
                    blocked = True
            done = nxt
        elif cls in ("bar", "bar_arrive"):
            cta = key[0]
            w.bars[a] = w.bars.get(a, 0) + 1
            g = (cta, a, w.bars[a])
            st = bar_state.setdefault(g, [0, 0.0, []])
            st[0] += 1
            st[1] = max(st[1], ti)
            if cls == "bar":
                st[2].append(w)
                blocked = True
            if st[0] == expected_bar[g]:
                rel = st[1] + m["bar_sync"]
                for x in st[2]:
                    if x is w:
                        continue
                    if keep_log:
                        x.log.append((x.i, "bar", x.t, rel))
                    x.i += 1
                    wake(x, rel)
                if cls == "bar":
                    blocked = False
                    nxt = rel
                    done = rel
                st[2] = []
        elif cls == "carrive":
            w.carr += 1
            g = (a, w.carr)
            st = cl_state.setdefault(g, [0, 0.0, []])
            st[0] += 1
            st[1] = max(st[1], ti)
            if st[0] == expected_cl[g]:
                rel = st[1] + m["cluster_sync"]
                st[1] = rel
                st[0] = -1            # released
                for x in st[2]:
                    if keep_log:
                        x.log.append((x.i, "cwait", x.t, rel))
                    x.i += 1
                    wake(x, rel)
                st[2] = []
        elif cls == "cwait":
            g = (a, w.carr)
            st = cl_state.get(g)
            if st is not None and st[0] == -1:
                nxt = max(nxt, st[1])
            elif st is not None:
                st[2].append(w)
                blocked = True
            done = nxt
        elif cls == "exit":
            done = ti
        if ev in by_event:
            event_time(ev, done if cls == "marrive" else ti)
        if blocked:
            w.t = ti
            continue          # woken later (the waker advances w.i for barriers; phases re-run the record)
        if keep_log:
            w.log.append((idx, cls, ti, done))
        w.i += 1
        w.t = nxt
        end = max(end, ti)
        seq += 1
        heapq.heappush(heap, (w.t, seq, key))
    stuck = [w for w in warps.values() if w.i < len(w.recs)]
    if stuck:
        w = stuck[0]
        raise ModelError(f"the replay stopped with {len(stuck)} warps waiting; the first, CTA {w.key[0]} warp "
                         f"{w.key[1]}, at record {w.i} {w.recs[w.i]}: no recorded event completes what it waits for")
    for w in warps.values():
        for fin, _ in w.bgroups + w.bopen:
            end = max(end, fin)
    return Timeline(end, {k: w.log for k, w in warps.items()}, busy, sms)
