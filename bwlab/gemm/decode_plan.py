"""The decode rung's plan of segments (Config.plan = T): the last T segments of `seg` stages of every tile's K
may be done by a CTA other than the tile's own, as a plan written before the launches says; each part (the head,
each segment) is summed from zero and the parts are added in K order, so C does not depend on the plan. The
words here are those cuda_src/gemm_sm90/sd_swap_ab.cu reads (its `Work`): a header of 4, per CTA own[i] (its
tile's segments it does itself), off[i] (its list of other tiles' segments, jobs[off[i] .. off[i + 1]), tile x 256
+ segment), per tile and consumer an arrival counter (0 between launches), then per tile and consumer T + 1 parts
of 64 x wgmma's N f32."""
from __future__ import annotations

import numpy as np

__all__ = ["plan_layout", "plan_words", "balanced_plan"]


def plan_layout(tiles: int, consumers: int, t_segs: int, nt: int) -> dict:
    """Word offsets of the workspace's regions and its size (u32 words)."""
    t4 = (tiles + 4) & ~3
    own, off = 4, 4 + t4
    arrivals = off + t4
    jobs = arrivals + t4 * consumers
    parts = jobs + ((tiles * t_segs + 3) & ~3)
    return {"own": own, "off": off, "arrivals": arrivals, "jobs": jobs, "parts": parts,
            "words": parts + tiles * consumers * (t_segs + 1) * 64 * nt}


def plan_words(tiles: int, consumers: int, t_segs: int, nt: int, own=None, jobs=None) -> np.ndarray:
    """The workspace with a plan in it: `own[i]` segments of tile i done by CTA i (default all T), `jobs[i]` the
    (tile, segment) pairs CTA i does for others. Raises ValueError unless every segment is done exactly once."""
    own = [t_segs] * tiles if own is None else [int(x) for x in own]
    jobs = [[] for _ in range(tiles)] if jobs is None else [list(j) for j in jobs]
    if len(own) != tiles or len(jobs) != tiles or not all(0 <= x <= t_segs for x in own):
        raise ValueError(f"a plan gives each of the {tiles} CTAs 0 to {t_segs} segments of its own tile and a list")
    done = {(t, s) for t in range(tiles) for s in range(own[t])}
    for i, js in enumerate(jobs):
        for t, s in js:
            if t == i or not (0 <= t < tiles) or not (own[t] <= s < t_segs) or (t, s) in done:
                raise ValueError(f"plan: CTA {i} takes segment {s} of tile {t}: a segment of another tile past "
                                 f"what its own CTA does, and not taken twice")
            done.add((t, s))
    if len(done) != tiles * t_segs:
        raise ValueError(f"plan: {tiles * t_segs - len(done)} segments are done by nobody")
    lay = plan_layout(tiles, consumers, t_segs, nt)
    w = np.zeros(lay["words"], np.uint32)
    w[lay["own"]:lay["own"] + tiles] = own
    flat = [(t << 8) | s for js in jobs for t, s in js]
    w[lay["off"]:lay["off"] + tiles + 1] = np.concatenate([[0], np.cumsum([len(j) for j in jobs])])
    w[lay["jobs"]:lay["jobs"] + len(flat)] = flat
    return w


def balanced_plan(times, k_iters: int, t_segs: int, seg: int, cost: float = 0.5):
    """A plan from each CTA's measured time for its whole tile (`times`, any unit; CTA i on tile i): while the
    CTA that would finish last can hand its last own segment to the one that would then finish earliest and the
    last finish comes sooner, it does (a moved segment costs its taker `cost` stages more, for the part it
    writes). Returns (own, jobs) for plan_words."""
    rate = np.asarray(k_iters, float) / np.asarray(times, float)   # stages per unit of time
    tiles = len(rate)
    load = np.full(tiles, float(k_iters))
    own = [t_segs] * tiles
    jobs = [[] for _ in range(tiles)]
    for _ in range(tiles * t_segs):
        finish = load / rate
        i = int(np.argmax(finish))
        if own[i] == 0:
            break
        after = (load + seg + cost) / rate
        after[i] = np.inf
        j = int(np.argmin(after))
        if after[j] >= finish[i]:   # the taker would finish no sooner than the giver does now
            break
        own[i] -= 1
        jobs[j].append((i, own[i]))
        load[i] -= seg
        load[j] += seg + cost
    return own, jobs
