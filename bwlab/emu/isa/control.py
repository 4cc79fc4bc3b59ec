"""Control flow (PTX ISA, "Control Flow Instructions": bra, call, ret, exit) and the miscellaneous
instructions (PTX ISA, "Miscellaneous Instructions": trap, nanosleep, setmaxnreg).

bra/call/ret/exit bodies are control bodies `(warp, group, guarded)` that set the program counters."""
from __future__ import annotations

import numpy as np

from ..errors import EmuError, UnsupportedInstruction
from ..convergence import Frame
from .operands import bits_reader


def bra(ctx, ins, base, mods):
    """Control Flow: bra (lanes whose guard fails fall through).

    A conditional backward branch closing a loop that reads no memory, no clock and calls nothing is
    computation, not a wait: each time it is taken it tells the launch that the kernel is working, so
    a long compute loop is not mistaken for a spin (whose clock jump would fire other warps' timeouts)."""
    target = ctx.label(ins.label)
    here = next(k for k, x in enumerate(ctx.func.body) if x is ins)
    computes = ins.guard is not None and _computing_loop(ctx.func.body[target - ctx.base:here])

    if computes:
        def body(w, group, em):
            w.pc[em] = target
            w.pc[group & ~em] += 1
            if em.any():
                w.machine.progress_step = w.machine.steps
    else:
        def body(w, group, em):
            w.pc[em] = target
            w.pc[group & ~em] += 1
    # for a warp whose lanes all take it or all fall through (decode_instruction's Code.jump)
    body.jump_to = (target, ctx.base + here + 1, computes)
    return body


_WAITS = ("ld", "ldu", "atom", "red", "mbarrier", "cp", "call", "nanosleep", "bar", "barrier", "tcgen05", "wgmma",
          "vote", "shfl", "elect", "activemask", "match", "redux")


def _computing_loop(body) -> bool:
    """True for a loop body of plain computation: something besides branches, and nothing that reads
    memory, the clock or another thread's state (any of which could be a wait)."""
    ops = [x.op.split(".")[0] for x in body]
    if not any(o != "bra" for o in ops):
        return False
    return not any(o in _WAITS for o in ops) and not any("%globaltimer" in x.text or "%clock" in x.text for x in body)


# A function's address (`mov.u64 %rd, func`, a function pointer): FUNC_BASE + 16 * its index in the
# module. Nothing is stored there: only `call` through a register accepts such a value.
FUNC_BASE = 0x7FF0_0000_0000_0000


def func_address(prog, name: str) -> int:
    return FUNC_BASE + 16 * list(prog.module.functions).index(name)


def _callee(prog, name: str):
    """What an activation of function `name` overwrites (saved in its Frame at each call): its
    registers, its call-parameter bytes (parameters, return values, its own calls' parameters) and
    its local depot; each function's are contiguous in the program's layout."""
    cache = prog.__dict__.setdefault("_callees", {})
    if name not in cache:
        f = prog.module.functions[name]
        regs = np.array([prog.reg_index[(name, r)] for r in f.regs], np.int64)
        cps = [(prog.callparam[(name, p.name)], p.size) for p in f.params + f.rets + f.call_params
               if (name, p.name) in prog.callparam]
        cp = (min(o for o, _ in cps), max(o + n for o, n in cps)) if cps else (0, 0)
        locs = [(prog.local[(name, v.name)], v.size) for v in f.variables if (name, v.name) in prog.local]
        loc = (min(o for o, _ in locs), max(o + n for o, n in locs)) if locs else (0, 0)
        cache[name] = (regs, cp, loc)
    return cache[name]


def _linkage(ctx, target, rets, args, ins):
    """The copies of a call: caller's argument params -> callee's params, callee's return params ->
    caller's; the callee's signature must match the call's (a prototype's, for an indirect call)."""
    callee = ctx.prog.module.functions[target]
    if len(args) != len(callee.params) or len(rets) != len(callee.rets):
        raise EmuError(f"PTX line {ins.line} `{ins.text}` calls {target} with {len(args)} argument(s) and "
                       f"{len(rets)} return value(s); it takes {len(callee.params)} and returns {len(callee.rets)} "
                       "(PTX ISA, call: the arguments must match the callee's parameter list)")
    cp = ctx.prog.callparam
    copies_in = [(cp[(ctx.func.name, a[1])], cp[(target, p.name)], p.size) for a, p in zip(args, callee.params)]
    copies_out = [(cp[(target, p.name)], cp[(ctx.func.name, r[1])], p.size) for r, p in zip(rets, callee.rets)]
    return ctx.prog.func_start[target], _callee(ctx.prog, target), copies_in, copies_out


def _enter(w, lanes, ret_pc, link):
    start, callee, copies_in, copies_out = link
    frame = Frame(w, ret_pc, callee, copies_out)    # before the arguments overwrite the callee's params
    for src, dst, n in copies_in:
        w.cparam[lanes, dst:dst + n] = w.cparam[lanes, src:src + n]
    w.push_call(lanes, frame)
    w.pc[lanes] = start


def call(ctx, ins, base, mods):
    """Control Flow: call, direct (`call (r), f, (a)`) or through a register holding a function's
    address (`call (r), %rd, (a), prototype`). Each activation has its own registers (a Frame saves
    the callee's and restores them at its ret), so recursion works; lanes that call different
    functions through one pointer instruction each go to their own."""
    rets, args = ins.args
    target = ins.label
    if target == "vprintf" and target not in ctx.prog.module.functions:   # printf (isa/printf.py)
        from .printf import vprintf
        return vprintf(ctx, ins)
    if target == "__assertfail" and target not in ctx.prog.module.functions:   # assert() (isa/printf.py)
        from .printf import assertfail
        return assertfail(ctx, ins)
    here = ctx.base + next(k for k, x in enumerate(ctx.func.body) if x is ins)
    if target.startswith("%"):
        rt = bits_reader(ctx, ("reg", target), "u64")
        funcs = {func_address(ctx.prog, n): n for n, f in ctx.prog.module.functions.items() if not f.entry}
        links = {}

        def body(w, group, em):
            w.pc[group & ~em] += 1
            if not em.any():
                return
            tv = rt(w)
            for v in np.unique(tv[em]).tolist():
                name = funcs.get(v)
                if name is None:
                    raise EmuError(f"{w.who(em & (tv == v))} at {w.machine.where(ins)} calls through a pointer "
                                   f"holding 0x{v:x}, which is not the address of a function of this module")
                if name not in links:
                    links[name] = _linkage(ctx, name, rets, args, ins)
                _enter(w, em & (tv == v), here + 1, links[name])
        return body
    if target not in ctx.prog.module.functions:
        raise UnsupportedInstruction(f"call to {target}, which this module does not define")
    link = _linkage(ctx, target, rets, args, ins)

    def body(w, group, em):
        w.pc[group & ~em] += 1
        if em.any():
            _enter(w, em, here + 1, link)
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
