"""What a learner's fill of a capstone TODO region got wrong, read from its text: which barrier it waits on
and with which parity (evaluated over the ring's slices, as the mbarrier model counts phases), who
arrives and how often, which fence or commit is missing. The emulator decides whether a fill is wrong
(bwlab.capstone.exercises runs it); this module only says why, in the words of the exercise, for the
hint of a first miss. It never gives the right fill.
"""
from __future__ import annotations

import re

from ..gemm.exercises import eval_c_int

__all__ = ["RULES", "HINTS", "diagnose", "calls", "barrier_of"]

STAGES, ACC_BUFS, K_TILES = 4, 2, 10        # the skeletons' ring depths; the shown Hopper run's slices per tile
CONSTANTS = {"BM": 128, "BN": 256, "BK": 64, "STAGES": STAGES, "A_BYTES": 128 * 64 * 2, "B_BYTES": 256 * 64 * 2,
             "STAGE_BYTES": (128 + 256) * 64 * 2, "CONSUMERS": 2, "WG": 128, "ACC_BUFS": ACC_BUFS}

RULES = {
    "cap_producer": "stage s = it % STAGES holds fill it / STAGES; before refilling it the producer waits for the "
                    "consumers' release of the fill before (a parity wait on empty[s]; a fresh barrier treats parity "
                    "1 as completed), then announces on full[s] every byte both TMA loads will write "
                    "(mbarrier_arrive_expect_tx)",
    "cap_consumer": "the consumers wait on full[s] for this fill's phase (parity of it / STAGES, `it` counted over "
                    "every tile), and release a stage once the wgmma that read it has completed: one arrival per "
                    "consumer warp on empty[s] (its init count is CONSUMERS * 4)",
    "cap_bw_ring": "the TMA warp waits on empty[s] for the release of the previous fill and announces the stage's "
                   "bytes; the MMA warp waits on full[s] for this fill; it releases the stage with tcgen05.commit, "
                   "which arrives once the MMAs issued before it have completed (they read SMEM asynchronously)",
    "cap_acc_phases": "accumulator buf = acc % 2 holds tile acc on its (acc / 2)-th use: the MMA warp waits on "
                      "tmem_empty[buf] for the epilogue's release of the use before (a fresh barrier treats parity 1 "
                      "as completed), the epilogue waits on tmem_full[buf] for this use; each wait is followed by "
                      "tcgen05.fence::after_thread_sync before the tcgen05 work it orders",
    "cap_acc_handoff": "the MMA warp hands a finished accumulator over with tcgen05.commit on tmem_full[buf] (it "
                       "arrives when the MMAs have completed); each epilogue warp hands it back with one arrival on "
                       "tmem_empty[buf] (count 4), after tcgen05.wait::ld and tcgen05.fence::before_thread_sync",
}

# The hint when the fill's text shows nothing more specific, by what the emulator said.
HINTS = {
    "hang": "a wait that never passes: check which barrier each wait names, and the parity of the phase it waits for",
    "wrong C": "the kernel ran without breaking a rule but computed something else: check which stage each "
               "wait and release names",
    "other": "read what broke: the barrier or the fence it names belongs to one of your lines",
}


def calls(text: str, fn: str) -> list[list[str]]:
    """The argument lists (top-level commas split, stripped) of every call of `fn` in `text`."""
    out = []
    for m in re.finditer(rf"(?<![\w.]){re.escape(fn)}\s*(?:<[^>]*>)?\s*\(", text):
        depth, i, args, cur = 1, m.end(), [], ""
        while i < len(text) and depth:
            ch = text[i]
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
            if depth == 1 and ch == ",":
                args.append(cur.strip())
                cur = ""
            elif depth:
                cur += ch
            i += 1
        out.append(args + ([cur.strip()] if cur.strip() else []))
    return out


def barrier_of(arg: str) -> str:
    m = re.match(r"&?\s*\(?\s*(\w+)\s*\[", arg or "")
    return m.group(1) if m else ""


def _value(expr: str, names: dict):
    try:
        return eval_c_int(expr, {**CONSTANTS, **names})
    except ValueError:
        return None


def _waits(fill: str, barrier: str) -> list[list[str]]:
    return [a for fn in ("mbarrier_wait", "wait") for a in calls(fill, fn) if a and barrier_of(a[0]) == barrier]


def _counters(i: int, per: int = STAGES) -> dict:
    return {"it": i, "kt": i % K_TILES, "s": i % per, "phase": (i // per) & 1, "acc": i, "buf": i % per,
            "acc_phase": (i // per) & 1, "kb": i % 2}


def _parity(fill: str, barrier: str, producer: bool, per: int, what: str):
    """A sentence about the first use (of 20) where the wait on `barrier` uses another parity than the
    rule's, or None. `producer`: the wait is for the release of the use before (a fresh barrier's parity 1,
    or a guard `>= STAGES`, is right for the first use); else for this use's phase."""
    waits = _waits(fill, barrier)
    if not waits or len(waits[0]) < 2:
        return None
    expr = waits[0][1]
    guard = re.search(r"\b(\w+)\s*>=\s*(STAGES|ACC_BUFS|\d+)", fill)
    for i in range(20):
        names = _counters(i, per)
        use = i // per
        if guard and producer and (_value(guard.group(0).replace(">=", "-"), names) or 0) < 0:
            continue
        p = _value(expr, names)
        if p is None:
            return None
        want = (use + 1) & 1 if producer else use & 1
        if (p & 1) == want:
            continue
        idx = f"{barrier}[{i % per}]"
        if re.search(r"\bkt\b", expr):
            return (f"your parity counts kt, the k-slices of one tile; the ring's {what} are counted over every "
                    "tile this CTA walks (it)")
        if producer and use == 0:
            return (f"the first {what[:-1]} of {idx} waits on parity {p & 1} of a fresh barrier: nothing was "
                    "released yet, so it never passes")
        if producer:
            return (f"at use {use} of {idx} your parity names the phase this very use will complete, not the "
                    "release of the use before: a parity wait on a phase still ahead passes at once (or never)")
        return (f"at use {use} of {idx} your parity names the phase before this one: the wait passes before "
                "this use has completed (or waits for one that never comes)")
    return None


def _arrivals(fill: str, barrier: str, fn: str = "mbarrier_arrive") -> list[str]:
    """The condition guarding each `fn` call on `barrier` ('' when none)."""
    out = []
    for statement in re.split(r";|\n", fill):
        for a in calls(statement, fn):
            if a and barrier_of(a[0]) == barrier:
                m = re.search(r"if\s*\((.*)\)\s*" + fn, statement)
                out.append(m.group(1) if m else "")
    return out


def _per_warp(cond: str) -> str | None:
    """None when `cond` picks one thread per warp, else what it picks."""
    c = cond.replace(" ", "")
    if re.search(r"(laneid\(\)|lane)==0|%32==0|&31\)==0|elect_one_sync", c):
        return None
    if re.search(r"%(128|WG)==0|threadIdx\.x==0", c):
        return "one thread per warpgroup (or per CTA)"
    return "every thread" if not c else None


def _expect_tx(fill: str) -> tuple[str, str] | None:
    ex = calls(fill, "mbarrier_arrive_expect_tx")
    if not ex:
        if any(barrier_of(a[0]) == "full" for a in calls(fill, "mbarrier_arrive") if a):
            return ("you arrive on full[s] without announcing any bytes: the phase completes at once",
                    "full[s] completes when its arrivals AND its tx-count are met: announce the bytes with "
                    "mbarrier_arrive_expect_tx")
        return ("nothing arrives on full[s]: its phase never completes",
                "the producer's arrive.expect_tx is full[s]'s one arrival: announce the bytes with "
                "mbarrier_arrive_expect_tx")
    args = ex[0]
    if barrier_of(args[0]) != "full":
        return (f"you announce the bytes on {barrier_of(args[0]) or args[0]}, not on full[s]",
                "the TMA loads complete_tx on full[s] (their last argument): the bytes are announced there")
    v = _value(args[1], {}) if len(args) > 1 else None
    if v is None or v == CONSTANTS["STAGE_BYTES"]:
        return None
    what = {CONSTANTS["A_BYTES"]: "A's box alone", CONSTANTS["B_BYTES"]: "B's box alone",
            CONSTANTS["STAGE_BYTES"] // 2: "the stage's elements, not its bytes"}.get(v)
    tail = what or ("more than the loads bring: the phase never completes" if v > CONSTANTS["STAGE_BYTES"]
                    else "fewer than the loads bring")
    return (f"you announce {v} bytes on full[s]: {tail}",
            "expect_tx counts every byte both loads of the stage write: A's box (BM rows of BK bf16) and B's box")


def _fence(fill: str, which: str) -> bool:
    return f"tcgen05_fence_{which}_thread_sync" in fill


FENCE_AFTER = ("an mbarrier orders tcgen05 work of two threads only with a tcgen05 fence on each side: "
               "::before_thread_sync in the thread that arrives, ::after_thread_sync in the thread that waits, "
               "between its wait and its tcgen05 work")
FENCE_BEFORE = ("an mbarrier orders tcgen05 work of two threads only with a tcgen05 fence on each side: the "
                "arriving thread's tcgen05 work is ordered before its arrival by the fence made for that side")


def _producer(f: dict):
    p = f["producer_acquire"]
    if not _waits(p, "empty"):
        if _waits(p, "full"):
            return ("your producer waits on full[s], the barrier the consumers wait on",
                    "the producer waits for a free stage: empty[s] completes when every consumer warp released it")
        return ("your producer never waits on empty[s]",
                "without that wait the producer never waits for the consumers: it refills a stage they may still read")
    found = _parity(p, "empty", True, STAGES, "fills")
    if found:
        return (found, "the producer waits for the release of the stage's previous fill: one phase behind the "
                       "consumers' parity (on the first pass over the ring: skip the wait, or parity 1)")
    return _expect_tx(p)


def _consumer(f: dict):
    w, r = f["consumer_wait"], f["consumer_release"]
    if not _waits(w, "full"):
        return ("your consumers never wait on full[s]",
                "the wgmma reads SMEM the TMA is still writing: wait for this fill's phase of full[s] first")
    found = _parity(w, "full", False, STAGES, "fills")
    if found:
        return (found, "the consumers wait for this fill's own phase of full[s]: parity of the fill number, "
                       "counted over the CTA's whole walk")
    conds = _arrivals(r, "empty")
    if not conds:
        return ("your consumers never arrive on empty: the producer waits forever for a free stage",
                "after wgmma_wait_group the stage read by the completed wgmma is free: arrive on its empty barrier")
    who = _per_warp(conds[0])
    if who:
        return (f"{who} arrives on empty; its init count is CONSUMERS * 4 = 8, one arrival per consumer warp",
                "one arrival per consumer warp, not per thread or per warpgroup")
    idx = calls(r, "mbarrier_arrive")[0][0]
    m = re.search(r"\[(.*)\]", idx)
    if m and _value(m.group(1), {"it": 5, "s": 1, "kt": 5}) == 1:
        return ("you release stage it % STAGES, whose wgmma may still be running (wgmma_wait_group<1> leaves "
                "the newest group in flight)", "release the stage of the slice before: its wgmma has completed")
    return None


def _bw_ring(f: dict):
    t, w, r = f["tma_acquire"], f["mma_wait_full"], f["mma_release_stage"]
    if not _waits(t, "empty"):
        return ("your TMA warp never waits on empty[s]",
                "without that wait the TMA warp refills a stage the MMAs may still read")
    found = _parity(t, "empty", True, STAGES, "fills")
    if found:
        return (found, "the TMA warp waits for the release of the stage's previous fill: one phase behind the MMA "
                       "warp's parity (a fresh barrier treats parity 1 as completed)")
    tx = _expect_tx(t)
    if tx:
        return tx
    if not _waits(w, "full"):
        return ("your MMA warp never waits on full[s]",
                "tcgen05.mma reads SMEM the TMA is still writing: wait for this fill's phase of full[s] first")
    found = _parity(w, "full", False, STAGES, "fills")
    if found:
        return (found, "the MMA warp waits for this fill's own phase of full[s], one ahead of the TMA warp's")
    if not any(barrier_of(a[0]) == "empty" for a in calls(r, "tcgen05_commit") if a):
        if _arrivals(r, "empty"):
            return ("an mbarrier_arrive by the MMA thread releases the stage when its MMAs are issued, not when "
                    "they have read it: tcgen05.mma runs asynchronously",
                    "a tcgen05.commit arrives on its mbarrier once every tcgen05.mma issued before it has completed")
        return ("nothing releases stage s to the TMA warp",
                "a tcgen05.commit arrives on its mbarrier once every tcgen05.mma issued before it has completed")
    return None


def _acc_phases(f: dict):
    a, e = f["mma_acc_acquire"], f["epi_acc_wait"]
    if not _waits(a, "tmem_empty"):
        return ("your MMA warp never waits on tmem_empty[buf]",
                "without that wait the MMAs overwrite an accumulator the epilogue may still be reading")
    found = _parity(a, "tmem_empty", True, ACC_BUFS, "uses")
    if found:
        return (found, "the MMA warp waits for the epilogue's release of this accumulator's previous use: one "
                       "phase behind the epilogue's parity (a fresh barrier treats parity 1 as completed)")
    if not _waits(e, "tmem_full"):
        return ("your epilogue never waits on tmem_full[buf]",
                "the tcgen05.ld would read an accumulator the MMAs are still writing: wait for tmem_full first")
    found = _parity(e, "tmem_full", False, ACC_BUFS, "uses")
    if found:
        return (found, "the epilogue waits for this use's own phase of tmem_full[buf]")
    for text, who in ((a, "the MMA warp's"), (e, "the epilogue's")):
        if not _fence(text, "after"):
            return (f"{who} wait is not followed by tcgen05.fence::after_thread_sync", FENCE_AFTER)
    return None


def _acc_handoff(f: dict):
    c, r = f["mma_acc_commit"], f["epi_acc_release"]
    commits = [barrier_of(a[0]) for a in calls(c, "tcgen05_commit") if a]
    if "tmem_full" not in commits:
        if "tmem_empty" in commits:
            return ("you commit to tmem_empty[buf], the barrier the MMA warp itself waits on",
                    "the epilogue waits on tmem_full[buf]: commit there")
        if _arrivals(c, "tmem_full"):
            return ("mbarrier_arrive on tmem_full says the MMAs were issued, not that they completed",
                    "a tcgen05.commit arrives on its mbarrier once every tcgen05.mma issued before it has completed")
        return ("nothing ever arrives on tmem_full: the epilogue waits forever",
                "a tcgen05.commit arrives on its mbarrier once every tcgen05.mma issued before it has completed")
    conds = _arrivals(r, "tmem_empty")
    if not conds:
        return ("your epilogue warps never arrive on tmem_empty: the MMA warp waits forever",
                "each epilogue warp hands the accumulator back with one arrival on tmem_empty[buf]")
    if not _fence(r, "before"):
        if _fence(r, "after"):
            return ("tcgen05_fence_after_thread_sync orders what comes after a synchronisation; before an arrival "
                    "the fence is the other one", FENCE_BEFORE)
        return ("no tcgen05.fence::before_thread_sync before the arrival", FENCE_BEFORE)
    who = _per_warp(conds[0])
    if who:
        return (f"{who} arrives on tmem_empty; its count is 4, one arrival per epilogue warp",
                "one arrival per epilogue warp, once the whole warp is done reading")
    return None


_READERS = {"cap_producer": _producer, "cap_consumer": _consumer, "cap_bw_ring": _bw_ring,
            "cap_acc_phases": _acc_phases, "cap_acc_handoff": _acc_handoff}


def diagnose(exercise: str, fills: dict, kind: str) -> tuple[str | None, str]:
    """(what the fill's text shows, or None; the hint) for a fill the emulator found wrong: `kind` is the
    emulator's name for what broke (or 'wrong C')."""
    found = _READERS[exercise](fills)
    if found:
        return found
    key = "hang" if kind.startswith("a hang") else "wrong C" if kind == "wrong C" else "other"
    return None, HINTS[key]
