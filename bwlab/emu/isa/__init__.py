"""The instruction set: every PTX instruction decoded once, by its row of the table, into a closure.

    PTX text --ptx.parse--> Instr(op, args, guard, line) --table.lookup(op)--> Row
    Row.decoder(ctx, ins, base, mods) --> body           (a chapter module: operand readers/writers built here)
    decode_instruction wraps the body by Row.kind (guard predicate, pc advance) --> Code(run, converge, member)
    the scheduler (`bwlab.emu.machine`) calls Code.run(warp, group) for the lanes at that pc, after the
    convergence rule of the row (Code.converge) has brought the lanes it needs together.

Chapters: `integer`, `float`, `conversion`, `compare`, `logic`, `data`, `control`, `sync`, `warp`,
`asynchronous.{mbarrier, bulk, wgmma, tcgen05}`; `operands` holds the readers and writers, `arith`
the decoder the arithmetic rows share, `table` the rows.
"""
from __future__ import annotations

import re

from dataclasses import dataclass

from ..errors import UnsupportedInstruction
from .fastalu import fast_body
from .operands import ALL, all_lanes, any_lane, bits_reader, mods_of
from .table import ADVANCING, ROWS, TABLE, construct_of, lookup

__all__ = ["decode_instruction", "Code", "ROWS", "TABLE", "lookup", "unsupported"]

_CONVERGE = {"none": 0, "aligned": 1, "member": 2}


@dataclass
class Code:
    """One decoded instruction."""
    run: object            # callable(warp, mask)
    instr: object          # the parsed ptx.Instr
    func: str
    converge: int = 0      # 0: per-thread; 1: .aligned (whole warp together); 2: .sync with a member mask
    member: object = None  # for converge == 2: callable(warp) -> the 32 lanes' member masks (uint32)
    row: object = None     # its row of the table
    step: object = None    # plain/async rows without a convergence rule: callable(warp) running the whole
                           # (converged, fully live) warp's instruction without touching its pcs (the
                           # scheduler's straight-line path, `Launch._straight`); None for every other row
    jump: object = None    # bra: callable(warp) -> the pc every live lane of a whole warp goes to, or None
                           # when they part (the guard differs between lanes): `Launch._straight` again
    jtarget: int = -1      # bra closing a computing loop: its target (taking it counts as progress)

    def where(self, files) -> str:
        i = self.instr
        src = ""

        def name(k):
            return files[k].replace("\\", "/").rsplit("/", 1)[-1]
        if i.loc and i.loc[0] in files:
            src = f"{name(i.loc[0])}:{i.loc[1]}, "
            if len(i.loc) == 4 and i.loc[2] in files:
                src = f"{name(i.loc[2])}:{i.loc[3]} (in {name(i.loc[0])}:{i.loc[1]}), "
        return f"{src}PTX line {i.line} `{short_text(i.text)}`"


def short_text(text: str, keep: int = 4) -> str:
    """An instruction's text with long register lists cut: `{%f1, %f2, %f3, %f4, ... 128 registers}`."""
    def cut(m):
        regs = [r.strip() for r in m.group(1).split(",")]
        if len(regs) <= keep + 2:
            return m.group(0)
        return "{" + ", ".join(regs[:keep]) + f", ... {len(regs)} registers}}"
    return _REGLIST.sub(cut, text)


_REGLIST = re.compile(r"\{([^{}]*)\}")


def unsupported(ins, why: str = "") -> UnsupportedInstruction:
    """The refusal of instruction `ins`: what, where, and the CUDA construct that emits it if known."""
    what = construct_of(ins.text or ins.op)
    return UnsupportedInstruction(
        f"the emulator does not execute `{ins.op}`" + (f": {why}" if why else "")
        + f" (PTX line {ins.line}: {ins.text})" + (f"; in CUDA this comes from {what}" if what else ""))


def decode_instruction(ctx, ins) -> Code:
    base, mods = mods_of(ins.op)
    row = lookup(ins.op)
    if row is None:
        raise unsupported(ins)
    try:
        body = row.decoder(ctx, ins, base, mods)
    except UnsupportedInstruction as e:
        msg = str(e)
        if msg.startswith(f"`{ins.op}`"):
            msg = "the emulator does not execute " + msg
        if "PTX line" not in msg:
            msg += f" (PTX line {ins.line}: {ins.text})"
        what = construct_of(ins.text or ins.op)
        if what and what not in msg:
            msg += f"; in CUDA this comes from {what}"
        raise UnsupportedInstruction(msg) from None
    if row.kind == "plain":
        fast = fast_body(ctx, ins, base, mods, body)   # the commonest integer forms, straight on the rows
        if fast is not None:
            body = fast
    converge = _CONVERGE[row.converge]
    if converge == 0 and "aligned" in mods:   # `.aligned`: every thread of the warp executes it (PTX ISA)
        converge = 1
    member = None
    if converge == 2:
        r = bits_reader(ctx, ins.args[-1], "u32")
        member = r   # per lane: each lane's own member mask (the scheduler reads them for the lanes at the pc)
    guard = None
    if ins.guard is not None:
        g = bits_reader(ctx, ("reg", ins.guard[0]), "pred")
        guard = (lambda w, g=g: ~g(w)) if ins.guard[1] else g

    step = None
    if row.kind in ADVANCING:
        if converge == 0:
            if guard is None:
                step = (lambda w, body=body: body(w, ALL))
            else:
                def step(w, body=body, guard=guard):
                    em = guard(w) & ALL
                    if any_lane(em):
                        body(w, em)
        if guard is None:
            def run(w, group, body=body):
                if group is ALL:
                    body(w, group)
                    w.pc += 1
                    return
                if any_lane(group):
                    body(w, group)
                w.pc[group] += 1
        else:
            def run(w, group, body=body, guard=guard):
                em = group & guard(w)
                if any_lane(em):
                    body(w, em)
                if group is ALL:
                    w.pc += 1
                else:
                    w.pc[group] += 1
    else:  # the body sees the group and the guarded mask and sets the pcs
        def run(w, group, body=body, guard=guard):
            em = group if guard is None else group & guard(w)
            body(w, group, em)
    jump, jtarget = _jump(body, guard) if converge == 0 else (None, -1)
    return Code(run, ins, ctx.func.name, converge, member, row, step, jump, jtarget)


def _jump(body, guard):
    """(Code.jump, Code.jtarget) of a branch whose body says where it goes (control.bra), else (None, -1)."""
    got = getattr(body, "jump_to", None)
    if got is None:
        return None, -1
    target, fall, computes = got
    if guard is None:
        return (lambda w: target), -1

    def jump(w):
        g = guard(w)
        if all_lanes(g):
            return target
        if not any_lane(g):
            return fall
        return None
    return jump, (target if computes else -1)
