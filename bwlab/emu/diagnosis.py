"""What the emulator writes down when a launch is stuck: who waits on what (`Launch.diagnose`)."""
from __future__ import annotations

__all__ = ["diagnose"]


def diagnose(launch, live, spinning: bool = False) -> str:
    """One line per distinct wait; warps of a CTA that wait on the same thing share the line."""
    lines = _diagnose_lines(launch, live, spinning)
    groups = {}
    for w, text in zip(live, lines):
        groups.setdefault((w.cta.linear, text), []).append(w)
    out = []
    for (_, text), ws in groups.items():
        if len(ws) == 1:
            head = ws[0].who()
        else:
            c = ws[0].cta
            rank = f" (cluster rank {c.rank})" if c.cluster.size > 1 else ""
            first, last = ws[0].tid[0], ws[-1].tid[ws[-1].valid][-1]
            head = f"CTA {c.ctaid}{rank} warps {', '.join(str(w.wid) for w in ws)} (threads {first}..{last})"
        out.append(f"  {head} {text}")
    return "\n".join(out)


def _diagnose_lines(self, live, spinning: bool) -> list:
    lines = []
    for w in live:
        info = w.wait_info
        head = ""
        if spinning and w.blocked is None:
            lines.append(f"{head} loops at {self.prog.code[w.last_pc].where(self.prog.files)}")
            continue
        if w.blocked is not None:
            lines.append(f"{head} waits at {w.blocked}")
            continue
        if info is None:
            lines.append(f"{head} at {self.prog.code[w.last_pc].where(self.prog.files)}")
            continue
        if info[0] == "mbarrier":
            _, c, off, parity, ins = info
            bar = c.mbarriers.get(off)
            name = self.prog.shared_name(off)
            state = _mbarrier_state(bar)
            pend = [d for d in self.inflight_ops.values() if f"@{c.rank}:{off}" in d]
            lines.append(f"{head} spins in mbarrier.try_wait.parity {parity} on '{name}' of CTA rank {c.rank} "
                         f"at {self.where(ins)} — the barrier is in {state}; "
                         + (f"in flight to it: {', '.join(pend)}" if pend else "nothing in flight can arrive on it")
                         + ("" if pend or bar is None else _tx_hint(bar)))
        else:
            lines.append(f"{head} waits: {info[1] if len(info) > 1 else info}")
    return [x.lstrip() for x in lines]



def _mbarrier_state(bar) -> str:
    if bar is None:
        return "never initialised"
    tx = (f"{bar.tx} transaction bytes still expected" if bar.tx >= 0 else
          f"{-bar.tx} transaction bytes more arrived than were expected")
    return (f"phase {bar.phase} (parity {bar.phase & 1}), {bar.pending} of {bar.count} arrivals still missing, "
            f"{tx}")


def _tx_hint(bar) -> str:
    """What a stuck phase's transaction count says about expect_tx (nothing is in flight to the barrier)."""
    if bar.tx > 0:
        return (f". Fewer bytes arrived than expect_tx announced: the copies signalling this barrier delivered "
                f"{bar.tx} bytes less than announced (expect_tx too large, or a copy missing)")
    if bar.tx < 0:
        return (f". More bytes arrived than expect_tx announced: expect_tx is {-bar.tx} bytes too small, so the "
                "transaction count went below zero and the phase cannot complete (announce every byte the copies "
                "deliver)")
    return ""
