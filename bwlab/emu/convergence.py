"""Convergence inside a warp and calls: what the scheduler (`bwlab.emu.machine.Launch`) decides per warp.

* Independent thread scheduling (PTX ISA, "Independent Thread Scheduling"; the GPU since Volta): the
  lanes of a warp that took different paths are separate groups, each with its own pc. The scheduler
  runs the lowest-pc group first, so paths that split meet again where they join; but while the warp
  is diverged no group runs more than FAIR_TURN warp-instructions while another waits — then the next
  waiting group (in lane order) has a turn (`take_turns`). So a lock one lane holds while its
  warp-mates spin on it is released, as on the GPU.
* Member masks (`members`): a `.sync` instruction's member mask is read per lane; the lanes at the pc
  whose mask equals that of the lowest lane execute it together, once every lane the mask names is
  there.
* `.aligned` (`aligned_exits`, `release_parked`): every live lane of the warp executes the same
  instruction; lanes that exit or go to another such instruction instead are a diverged warp
  (`DivergentBarrier` / `DivergenceError`).
* Calls (`Frame`): each activation keeps the callee's registers, call parameters and local depot as
  they were before the call and restores them at its `ret`, per lane, so recursion works and lanes of
  one warp may return at different times and depths.
"""
from __future__ import annotations

import numpy as np

from .errors import DivergenceError, DivergentBarrier, EmuError

__all__ = ["Frame", "FAIR_TURN", "take_turns", "members", "aligned_exits", "release_parked", "pop_frames"]

FAIR_TURN = 64    # a diverged group's turn (warp-instructions) before another group of its warp runs


class Frame:
    """One activation of a called function, shared by the lanes that made the call together: the
    return pc, the callee's registers / call-parameter bytes / local depot as they were before the
    call, and the copies that move the callee's return values to the caller's."""
    __slots__ = ("ret_pc", "regs", "saved_r", "cp", "saved_cp", "loc", "saved_loc", "copies_out")

    def __init__(self, w, ret_pc, callee, copies_out):
        regs, cp, loc = callee
        self.ret_pc, self.regs, self.cp, self.loc, self.copies_out = ret_pc, regs, cp, loc, copies_out
        self.saved_r = w.R[regs] if len(regs) else None
        self.saved_cp = w.cparam[:, cp[0]:cp[1]].copy() if cp[1] > cp[0] else None
        self.saved_loc = w.local[:, loc[0]:loc[1]].copy() if loc[1] > loc[0] else None

    def leave(self, w, lanes):
        outs = [(dst, w.cparam[lanes, src:src + n].copy()) for src, dst, n in self.copies_out]
        if self.saved_r is not None:
            w.R[np.ix_(self.regs, lanes)] = self.saved_r[:, lanes]
        if self.saved_cp is not None:
            w.cparam[lanes, self.cp[0]:self.cp[1]] = self.saved_cp[lanes]
        if self.saved_loc is not None:
            w.local[lanes, self.loc[0]:self.loc[1]] = self.saved_loc[lanes]
        for dst, v in outs:
            w.cparam[lanes, dst:dst + v.shape[1]] = v
        w.pc[lanes] = self.ret_pc


def pop_frames(w, lanes):
    """`lanes` return: each goes back to its own innermost caller (lanes of one warp may be at
    different depths: a recursion that ends sooner for some lanes), the return values are
    copied out, and the callee's registers, parameters and local depot are restored to what
    they held before the call (so a recursive activation does not clobber its caller)."""
    fr = w.frames
    idx = np.flatnonzero(lanes)
    if not len(idx):
        return
    if fr is None or any(not fr[lane] for lane in idx):
        raise EmuError(f"{w.who(lanes)}: ret with no caller")
    tops = {}
    for lane in idx:
        f = fr[lane].pop()
        tops.setdefault(id(f), (f, []))[1].append(lane)
    for f, ls in tops.values():
        f.leave(w, np.array(ls, np.int64))


def take_turns(w, cand, group):
    """The warp is diverged (or a group has the turn). The running group keeps running while it works;
    once it has run FAIR_TURN warp-instructions while others wait, its state (pc and registers) is
    noted, and if it comes back to that pc with the same registers it is spinning (a loop that waits
    on something its own lanes cannot change): the turn goes to the group of the next waiting lane
    (in lane order, cyclically). So a lock one lane holds while its warp-mates spin is released, as
    under the GPU's independent thread scheduling since Volta, while groups doing real work are not
    interrupted (they meet the others again where their paths join, as the compiler arranges)."""
    others = cand & ~group
    if w.favour >= 0 and (not cand[w.favour] or not others.any()):
        w.favour, w.turn, w.snap = -1, 0, None   # the favoured lanes wait, left, or rejoined the others
    w.turn += 1
    if w.turn <= FAIR_TURN or not others.any():
        return
    lanes = np.flatnonzero(group)
    pc = int(w.pc[lanes[0]])
    snap = w.snap
    if snap is None or not np.array_equal(snap[1], group):
        w.snap = (pc, group.copy(), w.R[:, lanes].copy())
        return
    if snap[0] != pc:
        return
    if not np.array_equal(snap[2], w.R[:, lanes]):
        w.turn, w.snap = 0, None      # the loop's state changed: it works
        return
    idx = np.flatnonzero(others)
    after = idx[idx > w.fav_last]
    w.favour = w.fav_last = int(after[0] if len(after) else idx[0])
    w.turn, w.snap = 0, None


def members(launch, w, c, group, at):
    """The lanes a `.sync` instruction with a member mask needs, and the lanes at the pc that run it
    together. Each lane's own mask is read (PTX ISA: membermask per thread); the lanes at the pc
    whose mask equals that of the group's lowest lane are one execution of it."""
    masks = c.member(w).astype(np.int64) & 0xFFFFFFFF
    lead = int(np.argmax(group))
    mask = int(masks[lead])
    mine = at & (masks == mask)
    members = (mask >> np.arange(32, dtype=np.int64)) & 1 == 1
    missing = members & w.exited & w.valid
    if missing.any():
        raise DivergenceError(
            f"{w.who(mine)} at {c.where(launch.prog.files)}: the member mask 0x{mask:08x} names lanes "
            f"{np.nonzero(missing)[0].tolist()} that have exited (PTX ISA: every lane in membermask must "
            "execute the same .sync instruction)")
    if (mine & ~members).any():
        raise DivergenceError(
            f"{w.who(mine)} at {c.where(launch.prog.files)}: lanes {np.nonzero(mine & ~members)[0].tolist()} "
            f"execute it but are not in their own member mask 0x{mask:08x}")
    return members & ~w.exited, mine

def aligned_exits(launch, w, c):
    """Lanes that were live when their warp-mates began to wait at an `.aligned` instruction and
    exited without reaching it: the warp reached it diverged."""
    gone = w.aligned_live & w.exited & w.valid
    w.aligned_live = None
    if gone.any():
        raise DivergentBarrier(
            f"{w.who(~w.exited)} at {c.where(launch.prog.files)}: lanes {np.nonzero(gone)[0].tolist()} of the "
            f"same warp exited without reaching it — a `bar.sync` / `__syncthreads()` (or other .aligned "
            "instruction) in code that only part of a warp executes, e.g. inside `if (threadIdx.x == 0)`. "
            "PTX ISA: every thread of the warp must execute the same .aligned instruction (else undefined); "
            "move it out of the branch, or use a barrier every thread reaches")

def release_parked(launch, w) -> bool:
    live = ~w.exited
    c0 = launch.prog.code
    pcs = set(w.pc[live].tolist())
    for p in sorted(pcs):
        at = live & (w.pc == p)
        c = c0[p]
        if c.converge == 2:
            need, mine = members(launch, w, c, at, at)
            if not (need & ~mine).any():
                w.parked = None   # this group's lanes are all there: the next pick runs them
                return True
        elif len(pcs) == 1:
            w.parked = None
            return True
    where = "; ".join(f"lanes {np.nonzero(live & (w.pc == p))[0].tolist()} at {c0[p].where(launch.prog.files)}"
                      for p in sorted(pcs))
    err = DivergentBarrier if any(c0[p].converge == 1 for p in pcs) else DivergenceError
    raise err(
        f"{w.who()}: a .sync/.aligned instruction is reached by a diverged warp — {where}. "
        "PTX ISA: all threads of the warp must execute the same .aligned instruction (and every lane of "
        "a .sync instruction's member mask must reach the same one).")
