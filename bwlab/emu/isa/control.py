"""Control flow (PTX ISA, "Control Flow Instructions": bra, call, ret, exit) and the miscellaneous
instructions (PTX ISA, "Miscellaneous Instructions": trap, nanosleep, setmaxnreg).

bra/call/ret/exit bodies are control bodies `(warp, group, guarded)` that set the program counters."""
from __future__ import annotations

from ..errors import EmuError, UnsupportedInstruction
from .operands import bits_reader


def bra(ctx, ins, base, mods):
    """Control Flow: bra (lanes whose guard fails fall through)."""
    target = ctx.label(ins.label)

    def body(w, group, em):
        w.pc[em] = target
        w.pc[group & ~em] += 1
    return body


def call(ctx, ins, base, mods):
    """Control Flow: call (parameters copied through the call-parameter area)."""
    rets, args = ins.args
    target = ins.label
    if target == "vprintf" and target not in ctx.prog.module.functions:   # printf (isa/printf.py)
        from .printf import vprintf
        return vprintf(ctx, ins)
    if target not in ctx.prog.module.functions:
        raise UnsupportedInstruction(f"call to {target}, which this module does not define")
    callee = ctx.prog.module.functions[target]
    start = ctx.prog.func_start[target]
    cp = ctx.prog.callparam
    copies_in = []
    for a, p in zip(args, callee.params):
        copies_in.append((cp[(ctx.func.name, a[1])], cp[(target, p.name)], p.size))
    copies_out = []
    for r, p in zip(rets, callee.rets):
        copies_out.append((cp[(target, p.name)], cp[(ctx.func.name, r[1])], p.size))
    here = ctx.base + ctx.func.body.index(ins) if ins in ctx.func.body else None

    def body(w, group, em):
        for src, dst, n in copies_in:
            w.cparam[em, dst:dst + n] = w.cparam[em, src:src + n]
        w.push_call(em, here, copies_out)
        w.pc[em] = start
        w.pc[group & ~em] += 1
    return body


def ret(ctx, ins, base, mods):
    """Control Flow: ret (from an entry: the lanes exit)."""
    entry = ctx.func.entry

    def body(w, group, em):
        if entry:
            w.machine.exit_lanes(w, em)
        else:
            w.pop_call(em)
        w.pc[group & ~em] += 1
    return body


def exit_(ctx, ins, base, mods):
    """Control Flow: exit."""
    def body(w, group, em):
        w.machine.exit_lanes(w, em)
        w.pc[group & ~em] += 1
    return body


def trap(ctx, ins, base, mods):
    """Miscellaneous: trap (the kernel aborts: EmuError)."""
    def body(w, m):
        raise EmuError(f"{w.who(m)} executed `trap` at {w.machine.where(ins)}: the kernel aborted itself")
    return body


def nanosleep(ctx, ins, base, mods):
    """Miscellaneous: nanosleep (the warp sleeps in virtual time)."""
    r = bits_reader(ctx, ins.args[0], "u32")

    def body(w, m):
        w.machine.sleep(w, int(r(w)[m].max()) if m.any() else 0)
    return body


def setmaxnreg(ctx, ins, base, mods):
    """Miscellaneous: setmaxnreg (the count's rule is checked; registers are not limited)."""
    r = bits_reader(ctx, ins.args[0], "u32")

    def body(w, m):
        n = int(r(w)[m].max())
        if not (24 <= n <= 256 and n % 8 == 0):
            raise EmuError(f"{w.who(m)}: setmaxnreg {n} at {w.machine.where(ins)} breaks the rule: the count "
                           "must be a multiple of 8 in [24, 256] (PTX ISA, setmaxnreg)")
    return body
