"""The scheduler's straight-line path: a converged, fully live warp runs plain instructions and uniform branches
on one scalar pc (`Launch._run_warp` hands it the warp; `M` below is the Launch)."""
from __future__ import annotations

from ..hw.mbarrier import MbarrierError
from .errors import EmuError, EmuFault, EmuTimeout, ProtocolError
from .isa.operands import ALL

__all__ = ["run_straight"]


def run_straight(M, w, pc: int, left: int):
    """The whole warp, together at `pc`, runs plain instructions and branches that every lane takes
    alike one after another with one scalar pc, as `_run_warp` would run them one by one (the same
    warp-instructions, clock, checks and completions, in the same order), until its quantum is used
    (`left`: what remains after this one), an instruction of another kind comes, the lanes part at a
    branch, or the warp must stop (a failed wait, a sleep, a block). The lanes' pcs are written once,
    at the end. Returns what remains of the quantum; None when the first instruction is a branch the
    lanes part at (`_run_warp` runs it)."""
    code = M.prog.code
    end = len(code)
    c = code[pc]
    npc = -1
    if c.step is None:
        npc = c.jump(w)
        if npc is None:
            return None
    try:
        while True:
            M.steps += 1
            w.steps += 1
            M.clock += 1
            if M.steps > M.max_steps:
                raise EmuTimeout(f"{M.kernel}: more than {M.max_steps} warp-instructions without "
                                 f"finishing (last: {w.who()} at {c.where(M.prog.files)})")
            w.last_pc = pc
            if npc < 0:
                c.step(w)
                pc += 1
            else:
                if npc == c.jtarget:
                    M.progress_step = M.steps   # a computing loop goes round (control.bra)
                pc = npc
            events = M.events
            if events and events[0][0] <= M.clock:
                w.pc.fill(pc)
                M._complete_due()
            if left <= 0 or pc >= end or w.blocked is not None or w.finished or w.spin_epoch == M.epoch \
                    or w.sleep_until > M.clock:
                return left
            c = code[pc]
            if c.step is None:
                if c.jump is None:
                    return left
                npc = c.jump(w)
                if npc is None:
                    return left
            else:
                npc = -1
            left -= 1
    except (EmuError, EmuFault):
        raise
    except MbarrierError as e:
        raise ProtocolError(f"{w.who(ALL)} at {c.where(M.prog.files)}: {e}") from None
    finally:
        w.pc.fill(pc)
