"""The operands of each tcgen05.mma, followed back through the PTX to what the compiler fixed.

An instruction descriptor is usually one immediate (or a `selp` among a few); an SMEM descriptor is a
constant (every field but the start address) merged with the tile's SMEM address, which only the running
CTA knows. `mma_operands(ptx)` keeps, bit by bit, what is known before the kernel runs (`Known`), the
constants an operand is chosen from, and where each start address points ("root + N bytes"), so that
`bwlab.umma.decode_smem_desc` / `decode_instr_desc` can name the fields and the K step between MMAs shows.

PTX ISA: 9.7.16.4 (the shared memory descriptor), 9.7.16.4.2 (the instruction descriptor).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from ..emu import ptx as ptxparse

__all__ = ["Known", "MmaOperands", "mma_operands", "SMEM_DESC_FIELDS", "IDESC_FIELDS", "function_of"]


def function_of(text: str, kernel: str | None):
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
    fn = function_of(text, kernel)
    tr = _Tracer(fn)
    out = []
    for i, ins in enumerate(fn.body):
        if not ins.op.startswith("tcgen05.mma") or len(ins.args) < 4:
            continue
        a, b, idesc = ins.args[1], ins.args[2], ins.args[3]
        out.append(MmaOperands(ins.op, ins.line, tr.known(a, i, 64), tr.known(b, i, 64), tr.known(idesc, i, 32),
                               tr.address(a, i), tr.address(b, i), tr.values(idesc, i)))
    return out


def mma_k_steps(mmas: list[MmaOperands], which: str) -> list | None:
    """Bytes between the start addresses of consecutive MMAs (None where they cannot be related)."""
    starts = [m.a_start if which == "A" else m.b_start for m in mmas]
    if not starts or any(s is None for s in starts) or len({s[0] for s in starts}) != 1:
        return None
    return [b[1] - a[1] for a, b in zip(starts, starts[1:])]


def usual_step(steps: list | None) -> int | None:
    """The step between consecutive MMAs that occurs most often (a compiler that unrolls the K loop also
    steps back to the stage's start between k-blocks)."""
    if not steps:
        return None
    counts = Counter(steps)
    return max(counts, key=lambda v: (counts[v], -abs(v)))


def b_minus_a(m: MmaOperands) -> int | None:
    """Bytes from the A tile to the B tile in SMEM, where both start from the same root."""
    if m.a_start is None or m.b_start is None or m.a_start[0] != m.b_start[0]:
        return None
    return m.b_start[1] - m.a_start[1]
