"""Two PTX texts side by side: which data-path instructions each kernel issues, and what its tcgen05.mma
operands hold.

`compare_ptx(a, b)` parses both texts with bwlab's PTX reader (`bwlab.emu.ptx`), sorts every
instruction of the data path into its class — the opcode with all its qualifiers, as the PTX ISA
writes it (`tcgen05.mma.cta_group::1.kind::f16`, `cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::
complete_tx::bytes`, `mbarrier.try_wait.parity.shared::cta.b64`, ...) — and counts each class in each
kernel. The counts are static: an instruction inside a loop counts once, an unrolled one as often as
the compiler wrote it.

Two compilers may spell one instruction differently (`.shared` for `.shared::cta`, a default written
out, a cache hint): such classes share a family and the table says "other spelling". Each class is
labelled with the bwlab wrapper (cuda_src/ptx/*.cuh) whose inline PTX it is, read from the headers.

For every `tcgen05.mma` the descriptors are decoded where the PTX fixes them (`mma_operands`, in
bwlab/bridge/mma_operands.py) and set side by side field by field.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .mma_operands import (IDESC_FIELDS, SMEM_DESC_FIELDS, b_minus_a, mma_k_steps, usual_step, function_of,
                           mma_operands)

__all__ = ["DATA_PATH", "instruction_classes", "mma_operands", "compare_ptx", "PtxComparison",
           "bwlab_wrappers", "SMEM_DESC_FIELDS"]

# The instruction families of the data path (prefixes of the opcode), with the epilogue's bf16 rounding.
# Everything else — integer arithmetic, branches, moves — is the compilers' business, not the lesson.
DATA_PATH = ("tcgen05.", "cp.async.bulk", "cp.reduce.async.bulk", "mbarrier.", "fence.", "elect.sync",
             "bar.", "barrier.", "st.shared", "ld.shared", "st.global", "cvt.rn.bf16x2", "wgmma.")


def _in_families(op: str, families) -> bool:
    return families is None or op.startswith(tuple(families))


def instruction_classes(text: str, kernel: str | None = None, families=DATA_PATH) -> Counter:
    """How often each instruction class appears in the kernel's PTX (static count). `families`:
    opcode prefixes to keep (None keeps every instruction)."""
    fn = function_of(text, kernel)
    return Counter(i.op for i in fn.body if _in_families(i.op, families))


def _classes_and_order(text: str, kernel: str | None, families):
    """The class counts, where each class first appears (a fraction of the kernel's body) and the
    operand count of that first appearance."""
    fn = function_of(text, kernel)
    counts, first, nargs = Counter(), {}, {}
    n = max(1, len(fn.body))
    for i, ins in enumerate(fn.body):
        if _in_families(ins.op, families):
            counts[ins.op] += 1
            first.setdefault(ins.op, i / n)
            nargs.setdefault(ins.op, len(ins.args))
    return counts, first, nargs


# ---- which bwlab wrapper writes each instruction -----------------------------------------------------

def _top_level_operands(rest: str) -> int:
    depth, n, seen = 0, 0, False
    for ch in rest:
        if ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            n += 1
        if not ch.isspace():
            seen = True
    return n + 1 if seen else 0


@lru_cache(maxsize=None)
def _wrapper_table(root: str) -> dict:
    """{opcode: [(wrapper name, operand count)]} from the inline PTX of every wrapper in `root`/*.cuh."""
    table: dict = {}
    for path in sorted(Path(root).glob("*.cuh")):
        text = re.sub(r"//[^\n]*", "", path.read_text())
        for chunk in text.split("__device__")[1:]:
            m = re.match(r"[\w\s:<>,*&]*?\b(\w+)\s*\(", chunk)
            if not m:
                continue
            asm = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', chunk))
            for stmt in re.split(r";|\\n|\\t", asm):
                stmt = re.sub(r"^\s*@!?\w+\s+", "", stmt.strip().lstrip("{}").strip())
                words = stmt.split(None, 1)
                if not words or words[0].startswith((".", "setp", "selp", "mov")) or words[0].endswith(":"):
                    continue
                entry = (m.group(1), _top_level_operands(words[1] if len(words) > 1 else ""))
                if entry not in table.setdefault(words[0], []):
                    table[words[0]].append(entry)
    return table


# What CUDA C++ itself lowers to these instructions (no wrapper of bwlab's writes them).
CUDA_BUILTINS = {"bar.sync": "__syncthreads()", "barrier.sync": "__syncthreads()",
                 "bar.red.or.pred": "__syncthreads_or()", "bar.red.and.pred": "__syncthreads_and()",
                 "bar.warp.sync": "__syncwarp()"}


def bwlab_wrappers(op: str, operands: int | None = None) -> list[str]:
    """The wrapper functions of cuda_src/ptx/*.cuh whose inline PTX is the instruction class `op` (with
    `operands` operands, when given: bar.sync 0 is __syncthreads, bar.sync id, count a named barrier)."""
    from ..compile import CUDA_SRC
    found = _wrapper_table(str(CUDA_SRC / "ptx")).get(op, [])
    return [name for name, n in found if operands is None or n == operands]


def _wrapper_label(op: str, operands: int | None) -> str:
    names = bwlab_wrappers(op, operands)
    if names:
        return " / ".join(names[:2])
    if op in CUDA_BUILTINS and not (op in ("bar.sync", "barrier.sync") and operands == 2):
        return CUDA_BUILTINS[op]
    from ..compile import CUDA_SRC
    fam = _family(op)
    # the same instruction spelt otherwise (a hint may add an operand: counts are not compared here)
    kin = [name for other, entries in _wrapper_table(str(CUDA_SRC / "ptx")).items() if _family(other) == fam
           for name, _ in entries]
    if kin:
        return "like " + " / ".join(kin[:2]) + " (other qualifiers)"
    return "-"


# ---- the comparison ----------------------------------------------------------------------------------

# Qualifiers that spell the same operation two ways: the state space of an address that lies in the
# CTA's own SMEM either way (.shared is .shared::cta, a window of .shared::cluster), the .b/.u/.s of a
# move, defaults written out (.tile, the load mode of cp.async.bulk.tensor; .collector::a::discard, what
# tcgen05.mma does with A's collector buffer unless told otherwise), a cache hint (.L2::cache_hint, one
# operand more), and bar.sync, which the PTX ISA defines as barrier.sync.aligned.
_SPELLING = re.compile(r"^(shared|shared::cta|shared::cluster|[bus](8|16|32|64|128)|aligned|tile|"
                       r"collector::a::discard|L2::cache_hint)$")


def _family(op: str) -> str:
    """The instruction with the qualifiers that only spell it differently removed: two classes of the
    same family do the same thing."""
    if op.startswith("bar.") and not op.startswith(("bar.red", "bar.warp")):
        op = "barrier." + op[4:]
    return ".".join(p for p in op.split(".") if not _SPELLING.match(p))


@dataclass
class Row:
    op: str
    family: str
    counts: tuple
    wrappers: str        # bwlab's wrapper(s) that write it, or the CUDA built-in
    match: str = ""      # 'same', 'other spelling' (the other kernel has it with other qualifiers), 'NAME only'


@dataclass
class PtxComparison:
    names: tuple
    rows: list = field(default_factory=list)
    mmas: tuple = ()

    # -- the instruction table --
    def counts(self, op: str) -> tuple:
        for r in self.rows:
            if r.op == op:
                return r.counts
        return (0, 0)

    def in_both(self) -> list[str]:
        return [r.op for r in self.rows if all(r.counts)]

    def only_in(self, name: str) -> list[str]:
        i = self.names.index(name)
        return [r.op for r in self.rows if r.counts[i] and not r.counts[1 - i]]

    def table(self) -> str:
        """One line per instruction class, in the order the first kernel issues them: the counts in each
        kernel, whether both have it (or the same instruction spelt with other qualifiers), the class,
        and bwlab's wrapper that writes it (cuda_src/ptx/*.cuh; '-' where the compiler writes it)."""
        a, b = self.names
        wa, wb = max(5, len(a)), max(5, len(b))
        wm = max(len(r.match) for r in self.rows) if self.rows else 4
        head = f"{a:>{wa}s} {b:>{wb}s}  {'':<{wm}s}  instruction class -> bwlab wrapper"
        out = [head, "-" * (len(head) + 30)]
        for r in self.rows:
            wr = r.wrappers
            out.append(f"{r.counts[0]:>{wa}d} {r.counts[1]:>{wb}d}  {r.match:<{wm}s}  {r.op} -> {wr}")
        return "\n".join(out)

    # -- the descriptors --
    def descriptor_rows(self) -> list[tuple]:
        """(what, value in the first kernel, value in the second, same?) for the instruction descriptor and
        the A/B SMEM descriptor fields of each kernel's first tcgen05.mma, and the K steps."""
        ma, mb = self.mmas
        if not ma or not mb:
            return []
        rows = []
        ia, ib = ma[0].instr_fields(), mb[0].instr_fields()
        for key in IDESC_FIELDS:
            va = ia[key] if ia else None
            vb = ib[key] if ib else None
            rows.append((f"idesc {key}", va, vb, va == vb and va is not None))
        for which in ("A", "B"):
            fa, fb = ma[0].smem_fields(which), mb[0].smem_fields(which)
            for _, name in SMEM_DESC_FIELDS:
                rows.append((f"{which} desc {name}", fa[name], fb[name], fa[name] == fb[name] and fa[name] is not None))
            sa, sb = usual_step(mma_k_steps(ma, which)), usual_step(mma_k_steps(mb, which))
            rows.append((f"{which} start: step per MMA (bytes)", sa, sb, sa == sb and sa is not None))
        da, db = b_minus_a(ma[0]), b_minus_a(mb[0])
        rows.append(("B start - A start (bytes)", da, db, da == db and da is not None))
        return rows

    def start_steps(self, which: str = "A") -> tuple:
        """Per kernel, the distinct steps (bytes) of the A or B start address from one tcgen05.mma to the
        next, where the PTX relates them (None where it does not)."""
        if which not in ("A", "B"):
            raise ValueError(f"which must be 'A' or 'B', got {which!r}")
        return tuple(None if (st := mma_k_steps(m, which)) is None else sorted(set(st)) for m in self.mmas)

    def descriptor_table(self) -> str:
        a, b = self.names
        rows = self.descriptor_rows()
        if not rows:
            return "(one of the kernels issues no tcgen05.mma)"
        show = lambda v: "runtime" if v is None else str(v)  # noqa: E731
        w = max(len(r[0]) for r in rows)
        wa = max(len(a), *(len(show(r[1])) for r in rows))
        head = f"{'tcgen05.mma operand field':<{w}s}  {a:<{wa}s}  {b:<14s} same"
        out = [head, "-" * len(head)]
        for what, va, vb, same in rows:
            tag = "yes" if same else ("—" if va is None and vb is None else "no")
            out.append(f"{what:<{w}s}  {show(va):<{wa}s}  {show(vb):<14s} {tag}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.table() + "\n\n" + self.descriptor_table()


def compare_ptx(a: str, b: str, names=("bwlab", "gluon"), kernel_a: str | None = None,
                kernel_b: str | None = None, families=DATA_PATH) -> PtxComparison:
    """Compare two PTX texts instruction class by instruction class (see the module docstring).
    `names` label the two kernels in the tables; `kernel_a`/`kernel_b` pick a kernel when a text holds
    several; `families` are the opcode prefixes compared (None: every instruction)."""
    if len(names) != 2 or names[0] == names[1]:
        raise ValueError(f"names must be two different labels, got {names!r}")
    ca, pa, na = _classes_and_order(a, kernel_a, families)
    cb, pb, nb = _classes_and_order(b, kernel_b, families)
    fam_a, fam_b = {_family(op) for op in ca}, {_family(op) for op in cb}
    place_a = {}
    for op in sorted(ca, key=pa.get):
        place_a.setdefault(_family(op), pa[op])

    def order(op):  # the first kernel's order; the second's own classes next to their family in it
        if op in pa:
            return (pa[op], 0, op)
        return (place_a.get(_family(op), pb[op]), 1, op)

    ops = sorted(set(ca) | set(cb), key=order)
    rows = []
    for op in ops:
        counts = (ca.get(op, 0), cb.get(op, 0))
        fam = _family(op)
        if all(counts):
            match = "same"
        elif fam in fam_a and fam in fam_b:
            match = "other spelling"
        else:
            match = names[0 if counts[0] else 1] + " only"
        rows.append(Row(op, fam, counts, _wrapper_label(op, na.get(op, nb.get(op))), match))
    return PtxComparison(tuple(names), rows, (mma_operands(a, kernel_a), mma_operands(b, kernel_b)))
