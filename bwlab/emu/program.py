"""Decoding: a parsed PTX module becomes one flat list of compiled instructions.

Each instruction is turned, once, into a Python closure `run(warp, mask)` that executes it on the
lanes in `mask` with NumPy over the 32 lanes; operand accessors, types, register indices and branch
targets are resolved here, so execution does no parsing. The executor (`bwlab.emu.machine`) owns
the warps, the CTAs and the asynchronous units the closures call into.
"""
from __future__ import annotations

import re

from ..util import round_up
from . import ptx
from .errors import UnsupportedInstruction
from .isa import Code, decode_instruction
from .values import WIDTH

__all__ = ["Program", "Code", "SMEM_RESERVED"]

# The first 1 KB of a CTA's shared window is reserved for the system on sm_80 and later: static shared
# variables start at 0x400 (on the H100 a tile placed at the first 1024-byte boundary of dynamic shared
# memory after a few static barriers sits at 0x800: docs/results/emu_validate_h100.txt, multicast).
SMEM_RESERVED = 1024


def demangle_local(name: str) -> str:
    """`_ZZ14teach_tma_loadE9smem_full` -> 'smem_full' (a function-local static's own name)."""
    m = re.match(r"_ZZ\d+\w*?E(\d+)(\w+)$", name)
    if m:
        n = int(m.group(1))
        return m.group(2)[:n]
    return name


class Program:
    """A PTX module decoded for the emulator. `layout` places module variables: shared ones at
    CTA-relative offsets, global ones in device memory (allocated by the loader)."""

    def __init__(self, text: str, global_address):
        self.module = ptx.parse(text)
        self.files = self.module.files
        self.code: list[Code] = []
        self.entry_pc: dict[str, int] = {}
        self.func_range: dict[str, tuple] = {}
        self.reg_index: dict[tuple, int] = {}
        self.reg_width: list[int] = []
        self.reg_type: list[str] = []
        self.shared: dict[str, int] = {}       # shared variable -> offset
        self.shared_size = 0
        self.shared_vars: list = []            # (offset, size, name)
        self.dynamic_shared = None             # name of the extern shared array, if any
        self.global_addr: dict[str, int] = {}  # module .global/.const variable -> device address
        self.local: dict[tuple, int] = {}      # (func, name) -> offset in the thread's local memory
        self.local_size = 0
        self.callparam: dict[tuple, int] = {}  # (func, name) -> offset in the warp's call-param area
        self.callparam_size = 0
        self.kparams: dict[str, list] = {}     # entry -> [(name, offset, size, type)]
        self.kparam_size: dict[str, int] = {}
        self._layout(global_address)
        self._decode()

    # ---- placing variables -------------------------------------------------------------------
    def _layout(self, global_address):
        off = SMEM_RESERVED
        shared = [v for v in self.module.variables if v.space == "shared" and not v.extern]
        for f in self.module.functions.values():
            shared += [v for v in f.variables if v.space == "shared" and not v.extern]
        for v in shared:
            off = round_up(off, v.align)
            self.shared[v.name] = off
            self.shared_vars.append((off, v.size, demangle_local(v.name)))
            off += v.size
        self.shared_size = off
        ext = [v for v in self.module.variables if v.space == "shared" and v.extern]
        for f in self.module.functions.values():
            ext += [v for v in f.variables if v.space == "shared" and v.extern]
        # dynamic shared memory follows the static variables at its declared alignment (16 at least)
        align = max([16] + [v.align for v in ext])
        self.dynamic_offset = round_up(off, align) if ext else off
        for v in ext:
            self.shared[v.name] = self.dynamic_offset
            self.dynamic_shared = v.name
        self._place_globals(global_address)
        loff = 0
        for f in self.module.functions.values():
            for v in f.variables:
                if v.space == "local":
                    loff = round_up(loff, v.align)
                    self.local[(f.name, v.name)] = loff
                    loff += v.size
        self.local_size = loff
        coff = 0
        for f in self.module.functions.values():
            if f.entry:
                ko, lst = 0, []
                for p in f.params:
                    ko = round_up(ko, p.align)
                    lst.append((p.name, ko, p.size, p.type))
                    ko += p.size
                self.kparams[f.name] = lst
                self.kparam_size[f.name] = ko
                plist = f.rets + f.call_params
            else:
                plist = f.params + f.rets + f.call_params
            for p in plist:
                coff = round_up(coff, 8)
                self.callparam[(f.name, p.name)] = coff
                coff += p.size
        self.callparam_size = max(coff, 8)

    def _place_globals(self, global_address):
        """Allocate the module's .global/.const variables; an initializer that names a function (a table of
        function pointers) or another variable gets that symbol's address, so a variable is placed after
        the variables its initializer names."""
        from .isa.control import func_address
        pending = [v for v in self.module.variables if v.space in ("global", "const")]
        while pending:
            later = []
            for v in pending:
                syms = {s for _, _, s, _ in v.relocs}
                unknown = [s for s in syms if s not in self.module.functions and s not in self.global_addr
                           and s not in {u.name for u in pending}]
                if unknown:
                    raise ptx.PtxError(f"the initializer of {v.name} names {', '.join(sorted(unknown))}, which is "
                                       "neither a function nor a .global/.const variable of this module")
                if any(s not in self.module.functions and s not in self.global_addr for s in syms):
                    later.append(v)
                    continue
                if v.relocs:
                    data = bytearray(v.init)
                    for off, n, sym, add in v.relocs:
                        a = func_address(self, sym) if sym in self.module.functions else self.global_addr[sym]
                        data[off:off + n] = ((a + add) & ((1 << (8 * n)) - 1)).to_bytes(n, "little")
                    v.init = bytes(data)
                self.global_addr[v.name] = global_address(v)
            if len(later) == len(pending):
                raise ptx.PtxError("the initializers of " + ", ".join(v.name for v in later) + " name each other "
                                   "in a cycle; the emulator places a variable after those its initializer names")
            pending = later

    # ---- decoding ------------------------------------------------------------------------------
    def _decode(self):
        self.unsupported = {}     # function name -> the first UnsupportedInstruction in its body
        self.approximate = {}     # function name -> {approximate instruction: its first PTX line}
        for f in self.module.functions.values():
            for name, typ in f.regs.items():
                self.reg_index[(f.name, name)] = len(self.reg_width)
                self.reg_width.append(WIDTH.get(typ, 64))
                self.reg_type.append(typ)
        self.nregs = len(self.reg_width)
        starts = {}
        pc = 0
        for f in self.module.functions.values():
            starts[f.name] = pc
            pc += len(f.body) + 1  # + an implicit 'ret' at the end of the body
        self.func_start = starts
        for f in self.module.functions.values():
            base = starts[f.name]
            self.func_range[f.name] = (base, base + len(f.body) + 1)
            if f.entry:
                self.entry_pc[f.name] = base
            ctx = _Ctx(self, f, base)
            for k, ins in enumerate(f.body):
                if ".approx" in ins.op or ins.op.startswith("div.full"):
                    self.approximate.setdefault(f.name, {}).setdefault(ins.op, ins.line)
                try:
                    self.code.append(decode_instruction(ctx, ins))
                except UnsupportedInstruction as e:
                    # refused where it matters: getting this kernel (its own body), or executing it (a
                    # function it calls); the other kernels of the module still run
                    self.unsupported.setdefault(f.name, e)
                    self.code.append(Code(_refuse(e), ins, f.name))
                except Exception as e:  # pragma: no cover - a decoder bug shows the instruction
                    raise UnsupportedInstruction(
                        f"cannot decode PTX line {ins.line} `{ins.text}`: {type(e).__name__}: {e}") from e
            end = ptx.Instr("ret", [], None, f.body[-1].line if f.body else 0, "ret (end of function)")
            self.code.append(decode_instruction(ctx, end))

    def function_of(self, pc: int) -> str:
        for name, (a, b) in self.func_range.items():
            if a <= pc < b:
                return name
        return "?"

    def shared_name(self, offset: int) -> str:
        """The shared variable holding CTA offset `offset` (with the offset inside it)."""
        for off, size, name in self.shared_vars:
            if off <= offset < off + max(size, 1):
                return name if offset == off else f"{name}+{offset - off}"
        if self.dynamic_shared is not None and offset >= self.dynamic_offset:
            return f"dynamic smem+{offset - self.dynamic_offset}"
        return f"smem 0x{offset:x}"


class _Ctx:
    """What the instruction decoder needs to know about the function being decoded."""

    def __init__(self, prog: Program, func: ptx.Function, base: int):
        self.prog, self.func, self.base = prog, func, base

    def reg(self, name: str) -> int:
        try:
            return self.prog.reg_index[(self.func.name, name)]
        except KeyError:
            raise UnsupportedInstruction(f"register {name} is not declared in {self.func.name}") from None

    def reg_type(self, name: str) -> str:
        return self.prog.reg_type[self.reg(name)]

    def label(self, name: str) -> int:
        if name in self.func.labels:
            return self.base + self.func.labels[name]
        raise UnsupportedInstruction(f"branch target {name} is not a label of {self.func.name}")

    def symbol(self, name: str):
        """(space, value) of a symbol operand: ('shared', offset), ('global', address),
        ('kparam', offset), ('cparam', offset), ('local', offset), ('func', name), ('const', value)."""
        if name == "WARP_SZ":   # PTX ISA, "Identifiers": the predefined run-time constant, the warp size
            return "const", 32
        p = self.prog
        if name in p.shared:
            return "shared", p.shared[name]
        if name in p.global_addr:
            return "global", p.global_addr[name]
        if (self.func.name, name) in p.local:
            return "local", p.local[(self.func.name, name)]
        if self.func.entry:
            for pname, off, _, _ in p.kparams[self.func.name]:
                if pname == name:
                    return "kparam", off
        if (self.func.name, name) in p.callparam:
            return "cparam", p.callparam[(self.func.name, name)]
        if name in p.module.functions:
            return "func", name
        raise UnsupportedInstruction(f"symbol {name} is not known in {self.func.name}")


def _refuse(error):
    """The body of an instruction the emulator does not execute: executing it raises the refusal."""
    def run(w, group):
        raise UnsupportedInstruction(str(error))
    return run
