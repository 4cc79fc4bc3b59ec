"""Two PTX texts side by side: which data-path instructions each kernel issues, and what its tcgen05.mma
operands hold.

`compare_ptx(a, b)` parses both texts with bwlab's PTX reader (`bwlab.emu.ptx`), sorts every
instruction of the data path into its class — the opcode with all its qualifiers, as the PTX ISA
writes it (`tcgen05.mma.cta_group::1.kind::f16`, `cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::
complete_tx::bytes`, `mbarrier.try_wait.parity.shared::cta.b64`, ...) — and counts each class in each
kernel. The counts are static: an instruction inside a loop counts once, an unrolled one as often as
the compiler wrote it.

For every `tcgen05.mma` it then follows the operand registers back to the instructions that built
them and keeps what is known at compile time (bit by bit): the instruction descriptor is usually one
immediate; the SMEM descriptors are a constant (every field but the start address) merged with the
start address of the tile, which only the running CTA knows. The known fields are decoded with
`bwlab.umma.decode_smem_desc` / `decode_instr_desc`, and the start addresses are followed as far as
"the first MMA's address + N bytes", which shows the K step inside the swizzle atom.

PTX ISA: 9.7.16.4 (the shared memory descriptor), 9.7.16.4.2 (the instruction descriptor).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from ..emu import ptx as ptxparse

__all__ = ["DATA_PATH", "instruction_classes", "mma_operands", "compare_ptx", "PtxComparison",
           "bwlab_wrappers", "SMEM_DESC_FIELDS"]

# The instruction families of the data path (prefixes of the opcode). Everything else — integer
# arithmetic, branches, the conversion of the epilogue — is the compilers' business, not the lesson.
DATA_PATH = ("tcgen05.", "cp.async.bulk", "cp.reduce.async.bulk", "mbarrier.", "fence.", "elect.sync",
             "bar.", "barrier.", "st.shared", "ld.shared", "st.global", "cvt.rn.bf16x2", "wgmma.")


def _function(text: str, kernel: str | None):
    mod = ptxparse.parse(text)
    entries = mod.entries
    if not entries:
        raise ValueError("the PTX text holds no .entry kernel")
    if kernel is None:
        if len(entries) != 1:
            raise ValueError(f"the PTX text holds {len(entries)} kernels {entries}: name one with kernel=")
        kernel = entries[0]
    if kernel not in entries:
        raise KeyError(f"no kernel {kernel!r} in this PTX; its kernels: {entries}")
    return mod.functions[kernel]


def _in_families(op: str, families) -> bool:
    return families is None or op.startswith(tuple(families))


def instruction_classes(text: str, kernel: str | None = None, families=DATA_PATH) -> Counter:
    """How often each instruction class appears in the kernel's PTX (static count). `families`:
    opcode prefixes to keep (None keeps every instruction)."""
    fn = _function(text, kernel)
    return Counter(i.op for i in fn.body if _in_families(i.op, families))


def _classes_and_order(text: str, kernel: str | None, families):
    """The class counts, where each class first appears (a fraction of the kernel's body) and the
    operand count of that first appearance."""
    fn = _function(text, kernel)
    counts, first, nargs = Counter(), {}, {}
    n = max(1, len(fn.body))
    for i, ins in enumerate(fn.body):
        if _in_families(ins.op, families):
            counts[ins.op] += 1
            first.setdefault(ins.op, i / n)
            nargs.setdefault(ins.op, len(ins.args))
    return counts, first, nargs


# ---- what the compiler knew: operands followed back, bit by bit --------------------------------------

@dataclass(frozen=True)
class Known:
    """A register's value as far as the instructions that made it fix it: `ones` and `zeros` are the
    bits known to be 1 and 0; the others depend on values only the running kernel has."""
    ones: int
    zeros: int
    width: int

    @property
    def mask(self) -> int:
        return self.ones | self.zeros

    def known(self, lo: int, hi: int) -> bool:
        """Are bits lo..hi (inclusive) all known?"""
        m = ((1 << (hi - lo + 1)) - 1) << lo
        return self.mask & m == m

    @staticmethod
    def const(v: int, width: int) -> "Known":
        full = (1 << width) - 1
        v &= full
        return Known(v, full & ~v, width)

    @staticmethod
    def unknown(width: int) -> "Known":
        return Known(0, 0, width)


def _width(op: str) -> int:
    m = re.search(r"\.[bsu](8|16|32|64)$", op)
    return int(m.group(1)) if m else 32


def _imm(arg) -> int | None:
    if arg[0] != "imm":
        return None
    t = arg[1].strip()
    try:
        if t.lower().startswith(("0x", "-0x")):
            return int(t, 16)
        return int(t, 10)
    except ValueError:
        return None


class _Tracer:
    """Follows a register back to the instruction that last wrote it before a given point (straight-line
    code: the descriptors of an MMA are built right before it)."""

    def __init__(self, fn):
        self.body = fn.body

    def _def(self, reg: str, before: int):
        for j in range(before - 1, -1, -1):
            ins = self.body[j]
            if ins.args and ins.args[0] == ("reg", reg) and not ins.op.startswith(("st.", "bra", "call")):
                return j, ins
        return None, None

    def known(self, arg, before: int, width: int, depth: int = 0) -> Known:
        v = _imm(arg)
        if v is not None:
            return Known.const(v, width)
        if arg[0] != "reg" or depth > 24:
            return Known.unknown(width)
        j, ins = self._def(arg[1], before)
        if ins is None:
            return Known.unknown(width)
        op, a = ins.op, ins.args
        w = _width(op)
        full = (1 << w) - 1
        k = lambda x: self.known(x, j, w, depth + 1)  # noqa: E731
        if op.startswith("mov.") and len(a) == 2:
            if a[1][0] == "vec":
                lo, hi = (self.known(x, j, 32, depth + 1) for x in a[1][1])
                return Known(lo.ones | (hi.ones << 32), lo.zeros | (hi.zeros << 32), 64)
            return k(a[1])
        if op.startswith("or.") and len(a) == 3:
            x, y = k(a[1]), k(a[2])
            return Known(x.ones | y.ones, x.zeros & y.zeros, w)
        if op.startswith("and.") and len(a) == 3:
            x, y = k(a[1]), k(a[2])
            return Known(x.ones & y.ones, (x.zeros | y.zeros) & full, w)
        if op.startswith("shr.u") and len(a) == 3 and _imm(a[2]) is not None:
            n, x = _imm(a[2]), k(a[1])
            top = full & ~(full >> n)
            return Known(x.ones >> n, (x.zeros >> n) | top, w)
        if op.startswith("shl.") and len(a) == 3 and _imm(a[2]) is not None:
            n, x = _imm(a[2]), k(a[1])
            return Known((x.ones << n) & full, ((x.zeros << n) | ((1 << n) - 1)) & full, w)
        if op.startswith("bfe.u") and len(a) == 4 and _imm(a[2]) is not None and _imm(a[3]) is not None:
            pos, ln, x = _imm(a[2]), _imm(a[3]), k(a[1])
            field_ = (1 << ln) - 1
            return Known((x.ones >> pos) & field_, ((x.zeros >> pos) & field_) | (full & ~field_), w)
        if op.startswith("cvt.u64.u32") and len(a) == 2:
            x = self.known(a[1], j, 32, depth + 1)
            return Known(x.ones, x.zeros | (0xFFFFFFFF << 32), 64)
        if op.startswith("add.") and len(a) == 3:
            x, y = k(a[1]), k(a[2])
            if y.mask != full and x.mask == full:
                x, y = y, x
            if y.mask == full and _known_bits_below(x) < w:
                # x < 2^n plus a constant C: the carry out of the low n bits stops at the first 0 bit of C
                # at or above n, so every bit above that one is C's.
                c, n = y.ones, _known_bits_below(x)
                j = n
                while j < w and (c >> j) & 1:
                    j += 1
                high = full & ~((1 << min(w, j + 1)) - 1)
                return Known(c & high, ~c & high, w)
            # Both below 2^n: the sum is below 2^(n+1), so the bits above are known zeros.
            n = max(_known_bits_below(x), _known_bits_below(y))
            if n < w:
                return Known(0, full & ~((1 << (n + 1)) - 1), w)
        return Known.unknown(w)

    def values(self, arg, before: int, depth: int = 0) -> frozenset | None:
        """The few values a register can hold (a `selp` between constants, ORed together), or None."""
        v = _imm(arg)
        if v is not None:
            return frozenset([v & 0xFFFFFFFFFFFFFFFF])
        if arg[0] != "reg" or depth > 24:
            return None
        j, ins = self._def(arg[1], before)
        if ins is None:
            return None
        op, a = ins.op, ins.args
        if op.startswith("mov.") and len(a) == 2 and a[1][0] != "vec":
            return self.values(a[1], j, depth + 1)
        if op.startswith("selp.") and len(a) == 4:
            x, y = self.values(a[1], j, depth + 1), self.values(a[2], j, depth + 1)
            return None if x is None or y is None else x | y
        if op.startswith(("or.", "and.")) and len(a) == 3:
            x, y = self.values(a[1], j, depth + 1), self.values(a[2], j, depth + 1)
            if x is None or y is None or len(x) * len(y) > 16:
                return None
            return frozenset((u | v) if op.startswith("or.") else (u & v) for u in x for v in y)
        return None

    def address(self, arg, before: int, depth: int = 0, scale: int = 16):
        """(root register, byte offset) of a start-address field: follows or/and/mov/cvt, counts the
        immediates added on the way (in 16-byte units until a `shr 4` / `bfe 4` turns units into bytes)."""
        if arg[0] == "sym":
            return (arg[1], 0)  # a variable's address (the SMEM window's start): a root like a register
        if arg[0] != "reg" or depth > 24:
            return None
        j, ins = self._def(arg[1], before)
        if ins is None:
            return (arg[1], 0)
        op, a = ins.op, ins.args
        if op.startswith("mov.") and len(a) == 2:
            return self.address(a[1][1][0] if a[1][0] == "vec" else a[1], j, depth + 1, scale)
        if op.startswith(("or.", "and.")) and len(a) == 3:
            regs = [x for x in a[1:] if _imm(x) is None]
            return self.address(regs[0], j, depth + 1, scale) if len(regs) == 1 else (arg[1], 0)
        if op.startswith("cvt.") and len(a) == 2:
            return self.address(a[1], j, depth + 1, scale)
        if scale == 16 and ((op.startswith("shr.u") and _imm(a[2]) == 4) or
                            (op.startswith("bfe.u") and _imm(a[2]) == 4)):
            return self.address(a[1], j, depth + 1, 1)
        if op.startswith("add.") and len(a) == 3:
            imms = [_imm(x) for x in a[1:]]
            regs = [x for x, v in zip(a[1:], imms) if v is None]
            if len(regs) == 1:
                inner = self.address(regs[0], j, depth + 1, scale)
                if inner is not None:
                    c = next(v for v in imms if v is not None)
                    if scale == 16 and c > 0x3FFF:
                        c &= 0x3FFF   # a descriptor's constant fields plus an offset in its start field
                    return (inner[0], inner[1] + scale * c)
        return (arg[1], 0)


def _known_bits_below(x: Known) -> int:
    """The smallest n with every bit from n up known to be zero."""
    n = x.width
    while n > 0 and (x.zeros >> (n - 1)) & 1:
        n -= 1
    return n


# (bits, name of the field in bwlab.umma.SmemDesc) of an SM100 SMEM descriptor
SMEM_DESC_FIELDS = [((0, 13), "start_address"), ((16, 29), "leading_byte_offset"),
                    ((32, 45), "stride_byte_offset"), ((46, 48), "version"), ((49, 51), "base_offset"),
                    ((52, 52), "lbo_mode"), ((61, 63), "swizzle")]


@dataclass
class MmaOperands:
    """One tcgen05.mma as the compiler wrote it: its class, what is known of its three descriptors, and
    where its A and B start addresses point (root register, bytes added)."""
    op: str
    line: int
    a: Known
    b: Known
    idesc: Known
    a_start: tuple | None
    b_start: tuple | None
    idesc_values: frozenset | None = None   # the constants it is chosen from, where the PTX selects one

    def kind(self) -> str:
        m = re.search(r"kind::(\w+)", self.op)
        return m.group(1) if m else "f16"

    def smem_fields(self, which: str) -> dict:
        """{field: value or None (known only when the kernel runs)} of the A or B SMEM descriptor."""
        from ..umma import decode_smem_desc
        k = self.a if which == "A" else self.b
        d = decode_smem_desc(k.ones, "sm100") if k.known(46, 48) else None
        out = {}
        for (lo, hi), name in SMEM_DESC_FIELDS:
            if name == "version":
                out[name] = (k.ones >> 46) & 7 if k.known(lo, hi) else None
            else:
                out[name] = getattr(d, name) if d is not None and k.known(lo, hi) else None
        return out

    def instr_fields(self) -> dict | None:
        """The decoded instruction descriptor ({field: value}) when the compiler wrote it as a constant, or
        chose it among a few constants (a field they disagree on reads 'A or B')."""
        from ..umma import decode_instr_desc
        vals = sorted({self.idesc.ones}) if self.idesc.known(0, 31) else sorted(self.idesc_values or ())
        if not vals:
            return None
        decoded = [decode_instr_desc(v, self.kind()) for v in vals]
        out = {"value": " or ".join(f"{v:#010x}" for v in vals)}
        for key in IDESC_FIELDS[1:]:
            seen = []
            for d in decoded:
                if getattr(d, key) not in seen:
                    seen.append(getattr(d, key))
            out[key] = seen[0] if len(seen) == 1 else " or ".join(str(x) for x in seen)
        return out


IDESC_FIELDS = ("value", "a_type", "b_type", "d_type", "M", "N", "a_major", "b_major", "negate_a", "negate_b")


def mma_operands(text: str, kernel: str | None = None) -> list[MmaOperands]:
    """Every tcgen05.mma of the kernel, its operands followed back (see the module docstring)."""
    fn = _function(text, kernel)
    tr = _Tracer(fn)
    out = []
    for i, ins in enumerate(fn.body):
        if not ins.op.startswith("tcgen05.mma") or len(ins.args) < 4:
            continue
        a, b, idesc = ins.args[1], ins.args[2], ins.args[3]
        out.append(MmaOperands(ins.op, ins.line, tr.known(a, i, 64), tr.known(b, i, 64), tr.known(idesc, i, 32),
                               tr.address(a, i), tr.address(b, i), tr.values(idesc, i)))
    return out


def _k_steps(mmas: list[MmaOperands], which: str) -> list | None:
    """Bytes between the start addresses of consecutive MMAs (None where they cannot be related)."""
    starts = [m.a_start if which == "A" else m.b_start for m in mmas]
    if not starts or any(s is None for s in starts) or len({s[0] for s in starts}) != 1:
        return None
    return [b[1] - a[1] for a, b in zip(starts, starts[1:])]


def _usual_step(steps: list | None) -> int | None:
    """The step between consecutive MMAs that occurs most often (a compiler that unrolls the K loop also
    steps back to the stage's start between k-blocks)."""
    if not steps:
        return None
    counts = Counter(steps)
    return max(counts, key=lambda v: (counts[v], -abs(v)))


def _b_minus_a(m: MmaOperands) -> int | None:
    """Bytes from the A tile to the B tile in SMEM, where both start from the same root."""
    if m.a_start is None or m.b_start is None or m.a_start[0] != m.b_start[0]:
        return None
    return m.b_start[1] - m.a_start[1]


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
            sa, sb = _usual_step(_k_steps(ma, which)), _usual_step(_k_steps(mb, which))
            rows.append((f"{which} start: step per MMA (bytes)", sa, sb, sa == sb and sa is not None))
        da, db = _b_minus_a(ma[0]), _b_minus_a(mb[0])
        rows.append(("B start - A start (bytes)", da, db, da == db and da is not None))
        return rows

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
