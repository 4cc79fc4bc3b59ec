"""printf from device code: `call vprintf, (format, args)` (CUDA C++ Programming Guide, "Formatted
Output"; the argument buffer NVRTC lays out in the caller's local depot).

The format string is read from the module's global it points to; the argument buffer holds each
argument at the next offset aligned to its size: integers of %d %i %u %x %X %o %c 4 bytes (8 with an
l/ll/z/j/t length), every floating-point conversion an 8-byte double (C's promotion of float), %s
and %p 8-byte pointers. Lines are formatted as C's printf formats them (the CUDA driver formats the
device's buffer on the host): flags `-+ #0`, widths, precisions, `*` not supported (NVRTC passes it,
the emulator refuses it by name), inf/nan/-nan, %a with trailing zeros trimmed.

A warp prints its active lanes' lines in lane order when it executes the call; warps print in the
order the scheduler runs them (an order a GPU could print). The lines collect in the launch's
`printf` list; the host API writes them to stdout when the launch ends (a GPU flushes its printf
buffer at synchronisation).
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..errors import UnsupportedInstruction

__all__ = ["vprintf", "format_c", "parse"]

_SPEC = re.compile(r"%([-+ #0]*)(\*|\d+)?(?:\.(\*|\d*))?(hh|h|ll|l|j|z|t|L)?([diouxXeEfFgGaAcspn%])")


def parse(fmt: str):
    """[(literal text | (flags, width, precision, length, conversion, offset, size))], total bytes."""
    out, off, pos = [], 0, 0
    for m in _SPEC.finditer(fmt):
        out.append(fmt[pos:m.start()])
        pos = m.end()
        flags, width, prec, length, conv = m.groups()
        if conv == "%":
            out.append("%")
            continue
        if width == "*" or prec == "*":
            raise UnsupportedInstruction(f"printf: a '*' width or precision ({m.group(0)!r}) is not modelled")
        if conv == "n":
            raise UnsupportedInstruction("printf: %n is not supported by CUDA's printf")
        if conv in "eEfFgGaA":
            size = 8
        elif conv in "sp":
            size = 8
        else:
            size = 8 if length in ("l", "ll", "j", "z", "t") else 4
        off = (off + size - 1) // size * size
        out.append((flags, width, prec, length, conv, off, size))
        off += size
    out.append(fmt[pos:])
    return out, off


def _hexfloat(x: float, prec, upper: bool) -> str:
    h = float(abs(x)).hex()                       # '0x1.8000000000000p+1'
    mant, exp = h[2:].split("p")
    lead, _, frac = mant.partition(".")
    if prec is None:
        frac = frac.rstrip("0")
    else:
        frac = (frac + "0" * 13)[:max(int(prec), 0)]   # (no rounding: precisions are rare with %a)
    e = int(exp)
    s = "0x" + lead + ("." + frac if frac else "") + f"p{e:+d}"
    return s.upper().replace("0X", "0X") if upper else s


def format_c(spec, raw: int, read_string=None) -> str:
    """One conversion of C's printf for the argument bits `raw` (an int of the argument's size)."""
    flags, width, prec, length, conv, _, size = spec
    width = int(width) if width else 0
    left, plus, space, alt, zero = ("-" in flags, "+" in flags, " " in flags, "#" in flags, "0" in flags)
    if conv in "eEfFgGaA":
        x = float(np.array([raw], np.uint64).view(np.float64)[0])
        neg = math.copysign(1.0, x) < 0
        sign = "-" if neg else "+" if plus else " " if space else ""
        if not math.isfinite(x):
            body = "nan" if math.isnan(x) else "inf"
            body = body.upper() if conv.isupper() else body
            s = sign + body
            return s.ljust(width) if left else s.rjust(width)
        if conv in "aA":
            body = _hexfloat(x, prec if prec not in (None, "") else None, conv == "A")
        else:
            p = 6 if prec is None else int(prec or 0)
            pyflags = "#" if alt else ""
            body = ("%" + pyflags + "." + str(p) + conv) % abs(x)
        if zero and not left:
            return sign + body.rjust(width - len(sign), "0")
        s = sign + body
        return s.ljust(width) if left else s.rjust(width)
    if conv == "c":
        s = chr(raw & 0xFF)
        return s.ljust(width) if left else s.rjust(width)
    if conv == "s":
        s = "(null)" if raw == 0 else read_string(raw)
        if prec not in (None, ""):
            s = s[:int(prec)]
        elif prec == "":
            s = ""
        return s.ljust(width) if left else s.rjust(width)
    if conv == "p":
        s = "(nil)" if raw == 0 else f"0x{raw:x}"
        return s.ljust(width) if left else s.rjust(width)
    bits = size * 8
    if length == "hh":
        bits = 8
    elif length == "h":
        bits = 16
    v = raw & ((1 << bits) - 1)
    if conv in "di":
        if v >> (bits - 1):
            v -= 1 << bits
        neg, digits = v < 0, str(abs(v))
        sign = "-" if neg else "+" if plus else " " if space else ""
        prefix = ""
    else:
        neg, sign = False, ""
        digits = {"u": str(v), "x": f"{v:x}", "X": f"{v:X}", "o": f"{v:o}"}[conv]
        prefix = ""
        if alt and conv in "xX" and v != 0:
            prefix = "0x" if conv == "x" else "0X"
        if alt and conv == "o" and not digits.startswith("0"):
            digits = "0" + digits
    if prec not in (None, ""):
        p = int(prec)
        digits = "" if (p == 0 and v == 0 and not (alt and conv == "o")) else digits.rjust(p, "0")
        zero = False
    elif prec == "":
        digits = "" if v == 0 else digits
        zero = False
    head = sign + prefix
    if zero and not left:
        return head + digits.rjust(width - len(head), "0")
    s = head + digits
    return s.ljust(width) if left else s.rjust(width)


def _lanes(m):
    return [int(x) for x in np.nonzero(m)[0]]


def vprintf(ctx, ins):
    """The body of `call (retval), vprintf, (format, args)`: a control body (warp, group, guarded)."""
    rets, args = ins.args
    if len(args) != 2:
        raise UnsupportedInstruction("vprintf takes two parameters (the format and the argument buffer)")
    cp = ctx.prog.callparam
    fmt_off, buf_off = (cp[(ctx.func.name, a[1])] for a in args)
    ret_off = cp[(ctx.func.name, rets[0][1])] if rets else None
    cache = {}

    def cstring(w, lane, addr, limit=4096):
        one = np.arange(32) == lane
        out = bytearray()
        while len(out) < limit:
            a = np.full(32, addr + len(out), np.uint64)
            b = int(w.machine.mem.read(w, "generic", a, 1, one, ins)[lane, 0])
            if b == 0:
                break
            out.append(b)
        return out.decode("utf-8", errors="replace")

    def body(w, group, em):
        lines = []
        fmts = w.cparam[:, fmt_off:fmt_off + 8].copy().view(np.uint64)[:, 0]
        bufs = w.cparam[:, buf_off:buf_off + 8].copy().view(np.uint64)[:, 0]
        for lane in _lanes(em):
            fa = int(fmts[lane])
            if fa not in cache:
                cache[fa] = parse(cstring(w, lane, fa))
            pieces, total = cache[fa]
            one = np.arange(32) == lane
            buf = bytearray()
            for k in range(0, total, 4):
                a = np.full(32, int(bufs[lane]) + k, np.uint64)
                buf += bytes(w.machine.mem.read(w, "generic", a, 4, one, ins)[lane])
            text = []
            for p in pieces:
                if isinstance(p, str):
                    text.append(p)
                else:
                    raw = int.from_bytes(buf[p[5]:p[5] + p[6]], "little")
                    text.append(format_c(p, raw, lambda addr, lane=lane: cstring(w, lane, addr)))
            lines.append("".join(text))
            if ret_off is not None:
                n = sum(1 for p in pieces if not isinstance(p, str))
                w.cparam[lane, ret_off:ret_off + 4] = np.frombuffer(np.int32(n).tobytes(), np.uint8)
        out = getattr(w.machine, "printf", None)
        if out is None:
            out = w.machine.printf = []
        out.extend(lines)
        w.pc[group] += 1
    return body


def assertfail(ctx, ins):
    """The body of `call __assertfail, (message, file, line, function, charSize)`: what a failed `assert()`
    in device code calls. Like a GPU, each asserting thread's line is printed as CUDA formats it
    ("file:line: function: block: [x,y,z], thread: [x,y,z] Assertion `expr` failed.") and the kernel
    aborts (the GPU's cudaErrorAssert): an EmuError naming the threads and the assertion."""
    rets, args = ins.args
    if len(args) != 5:
        raise UnsupportedInstruction("__assertfail takes five parameters (message, file, line, function, charSize)")
    cp = ctx.prog.callparam
    offs = [cp[(ctx.func.name, a[1])] for a in args]

    def cstring(w, lane, addr, limit=4096):
        one = np.arange(32) == lane
        out = bytearray()
        while len(out) < limit:
            b = int(w.machine.mem.read(w, "generic", np.full(32, addr + len(out), np.uint64), 1, one, ins)[lane, 0])
            if b == 0:
                break
            out.append(b)
        return out.decode("utf-8", errors="replace")

    def body(w, group, em):
        if not em.any():
            w.pc[group] += 1
            return
        ptr = [w.cparam[:, o:o + 8].copy().view(np.uint64)[:, 0] for o in offs]
        lines = []
        tid = [w.special(f"%tid.{a}") for a in "xyz"]
        cta = tuple(w.cta.ctaid)
        for lane in _lanes(em):
            msg, file, func = (cstring(w, lane, int(ptr[k][lane])) for k in (0, 1, 3))
            line = int(ptr[2][lane]) & 0xFFFFFFFF
            t = ",".join(str(int(v[lane])) for v in tid)
            lines.append(f"{file}:{line}: {func}: block: [{','.join(map(str, cta))}], thread: [{t}] "
                         f"Assertion `{msg}` failed.")
        out = getattr(w.machine, "printf", None)
        if out is None:
            out = w.machine.printf = []
        out.extend(ln + "\n" for ln in lines)
        from ..errors import EmuError
        raise EmuError(f"{w.who(em)} at {w.machine.where(ins)}: device-side assert failed (a GPU aborts the "
                       f"kernel: cudaErrorAssert):\n" + "\n".join(lines[:8]) + ("\n..." if len(lines) > 8 else ""))
    return body
