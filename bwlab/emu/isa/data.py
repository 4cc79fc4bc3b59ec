"""Data movement (PTX ISA, "Data Movement and Conversion Instructions"): mov, ld, ldu, st, cvta, prmt,
isspacep, mapa, getctarank."""
from __future__ import annotations

import numpy as np

from ...hw import ints as hw_ints
from ..errors import UnsupportedInstruction
from ..values import WIDTH, from_bits
from .operands import addr_reader, bits_reader, state_space, types, value_dtype, writer

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def mov(ctx, ins, base, mods):
    """Data Movement and Conversion: mov (registers, symbols' addresses, packing and unpacking vectors)."""
    ty = types(mods)[0]
    d, a = ins.args
    if ty == "b128":
        return mov128(ctx, ins, base, mods)
    if a[0] == "sym":
        space, val = ctx.symbol(a[1])
        if space == "const":   # WARP_SZ (a shuffle's width: __shfl_xor_sync(m, v, lane, 8))
            wr = writer(ctx, d, ty)
            v = from_bits(np.full(32, val, np.uint64), ty)
            return (lambda w, m: wr(w, v, m))
        if space == "func":   # a function pointer (control.func_address; `call` through a register)
            from .control import func_address
            val = func_address(ctx.prog, val)
        wr = writer(ctx, d, "u64")
        if space == "shared":
            return (lambda w, m: wr(w, np.full(32, w.cta.shared_base + val, np.uint64), m))
        v = np.full(32, val, np.uint64)
        return (lambda w, m: wr(w, v, m))
    if a[0] == "vec":   # mov.b64 %rd, {%r1, %r2}: pack
        sh = WIDTH[ty] // len(a[1])          # mov.b32 {h0, h1}: 16-bit parts; mov.b64 {r0, r1}: 32-bit
        parts = [bits_reader(ctx, x, {8: "b8", 16: "b16", 32: "b32"}[sh]) for x in a[1]]
        wr = writer(ctx, d, ty)

        def pack(w, m):
            out = np.zeros(32, np.uint64)
            for k, p in enumerate(parts):
                out |= p(w).astype(np.uint64) << np.uint64(sh * k)
            wr(w, from_bits(out, ty), m)
        return pack
    if d[0] == "vec":   # mov.b64 {%r1, %r2}, %rd: unpack
        src = bits_reader(ctx, a, ty)
        n = len(d[1])
        sh = WIDTH[ty] // n
        pty = {16: "b16", 32: "b32", 8: "b8"}[sh]
        wrs = [writer(ctx, x, pty) for x in d[1]]

        def unpack(w, m):
            v = src(w).astype(np.uint64)
            for k, wr in enumerate(wrs):
                wr(w, (v >> np.uint64(sh * k)) & np.uint64((1 << sh) - 1), m)
        return unpack
    src = bits_reader(ctx, a, ty)
    wr = writer(ctx, d, ty)
    return (lambda w, m: wr(w, src(w), m))


def ld(ctx, ins, base, mods):
    """Data Movement and Conversion: ld / ldu (every state space, .v2/.v4/.v8)."""
    tys = types(mods)
    ty = tys[0]
    vec = next((int(m[1:]) for m in mods if m in ("v2", "v4", "v8")), 1)
    space = state_space(mods)
    d, a = ins.args
    sym_space, addr = addr_reader(ctx, a)
    if space == "param" and sym_space in ("kparam", "cparam"):
        space = sym_space
    elif space == "param":
        space = "kparam" if ctx.func.entry else "cparam"
    if ty == "b128":
        if vec != 1 or d[0] == "vec":
            raise UnsupportedInstruction(f"`{ins.op}`: vectors of .b128 are not modelled")
        lo, hi_ = _b128(ctx, d)

        def load128(w, m):
            raw = w.machine.mem.read(w, space, addr(w), 16, m, ins).view(np.uint64).reshape(32, 2)
            w.R[lo][m] = raw[m, 0]
            w.R[hi_][m] = raw[m, 1]
        return load128
    n = WIDTH[ty] // 8
    dst = d[1] if d[0] == "vec" else [d]
    wrs = [writer(ctx, x, ty) for x in dst]
    dt = value_dtype(ty)
    sign = ty[0] == "s"

    fast = n in (1, 2, 4, 8) and space in ("shared", "global")
    own_shared = space == "shared"
    if space == "kparam" and sym_space == "kparam" and vec == 1:
        # a kernel parameter by name: one address for every lane, read once and given to all
        poff = int(addr(None)[0]) if a[1][0] == "sym" else None
        if poff is not None and poff % n == 0:
            key = (poff, n, sign, np.dtype(dt).char)

            def param(w, m):
                M = w.machine
                row = M.param_rows.get(key)   # the launch's parameters do not change: one row per launch
                if row is None:
                    params = M.params
                    if poff + n > params.size:
                        return general(w, m)
                    v = params[poff:poff + n].view(dt)
                    row = M.param_rows[key] = np.full(32, v[0].astype(np.int64) if sign else v[0])
                    row.flags.writeable = False
                wrs[0](w, row, m)
            general = _ld_body(ins, space, addr, n, vec, wrs, dt, sign, False, False)
            return param
    return _ld_body(ins, space, addr, n, vec, wrs, dt, sign, fast, own_shared)


def _ld_body(ins, space, addr, n, vec, wrs, dt, sign, fast, own_shared):
    if fast and vec == 1:   # one element per lane: 32-lane rows throughout
        wr0 = wrs[0]

        def body1(w, m):
            a = addr(w)
            mem = w.machine.mem
            words = mem.load_own_shared1(w, a, n, m) if own_shared else mem.load_global1(w, a, n, m)
            vals = mem.read(w, space, a, n, m, ins).view(dt)[:, 0] if words is None else words.view(dt)
            wr0(w, vals.astype(np.int64) if sign else vals, m)
        return body1

    def body(w, m):
        a = addr(w)
        vals = None
        if fast:
            mem = w.machine.mem
            vals = mem.load_own_shared(w, a, n, vec, m) if own_shared else mem.load_global(w, a, n, vec, m)
        if vals is None:
            vals = w.machine.mem.read(w, space, a, n * vec, m, ins).view(dt).reshape(32, vec)
        else:
            vals = vals.view(dt)
        for k, wr in enumerate(wrs):
            v = vals[:, k]
            wr(w, v.astype(np.int64) if sign else v, m)
    return body


def st(ctx, ins, base, mods):
    """Data Movement and Conversion: st."""
    ty = types(mods)[0]
    vec = next((int(m[1:]) for m in mods if m in ("v2", "v4", "v8")), 1)
    space = state_space(mods)
    a, s = ins.args
    sym_space, addr = addr_reader(ctx, a)
    if space == "param":
        space = sym_space if sym_space in ("kparam", "cparam") else "cparam"
    if ty == "b128":
        if vec != 1 or s[0] == "vec":
            raise UnsupportedInstruction(f"`{ins.op}`: vectors of .b128 are not modelled")
        lo, hi_ = _b128(ctx, s)

        def store128(w, m):
            data = np.stack([w.R[lo], w.R[hi_]], axis=1).astype(np.uint64)
            w.machine.mem.write(w, space, addr(w), data.view(np.uint8).reshape(32, 16), m, ins)
        return store128
    n = WIDTH[ty] // 8
    srcs = [bits_reader(ctx, x, ty) for x in (s[1] if s[0] == "vec" else [s])]
    dt = value_dtype(ty)

    fast = n in (1, 2, 4, 8) and space in ("shared", "global")
    own_shared = space == "shared"

    def body(w, m):
        data = np.empty((32, vec), dt)
        for k, r in enumerate(srcs):
            data[:, k] = r(w)
        a = addr(w)
        if fast:
            mem = w.machine.mem
            words = data.view(_UINT[n])
            if (mem.store_own_shared(w, a, words, n, vec, m) if own_shared else
                    mem.store_global(w, a, words, n, vec, m)):
                return
        w.machine.mem.write(w, space, a, data.view(np.uint8).reshape(32, n * vec), m, ins)
    if not (fast and vec == 1):
        return body
    src0, word = srcs[0], _UINT[n]

    def body1(w, m):   # one element per lane, already of the stored type: no staging array
        v = src0(w)
        if not (isinstance(v, np.ndarray) and v.dtype == dt and v.shape == (32,)):
            return body(w, m)
        a = addr(w)
        mem = w.machine.mem
        words = v.view(word)
        if (mem.store_own_shared(w, a, words[:, None], n, 1, m) if own_shared else
                mem.store_global1(w, a, words, n, m)):
            return
        w.machine.mem.write(w, space, a, np.ascontiguousarray(words).view(np.uint8).reshape(32, n), m, ins)
    return body1


def cvta(ctx, ins, base, mods):
    """Data Movement and Conversion: cvta (generic <-> state-space addresses)."""
    to = "to" in mods
    space = next(m for m in mods if m in ("global", "shared", "param", "local", "const") or m.startswith("shared"))
    space = "shared" if space.startswith("shared") else space
    ty = types(mods)[0]
    d, a = ins.args
    src = bits_reader(ctx, a, ty)
    wr = writer(ctx, d, ty)

    def body(w, m):
        v = src(w).astype(np.uint64)
        wr(w, w.machine.mem.cvta(space, v, to), m)
    return body


def prmt(ctx, ins, base, mods):
    """Data Movement and Conversion: prmt.b32{.f4e,.b4e,.rc8,.ecl,.ecr,.rc16} (byte permute)."""
    mode = next((m for m in mods if m in ("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")), None)
    d, a, b, c = ins.args
    ra, rb, rc = bits_reader(ctx, a, "b32"), bits_reader(ctx, b, "b32"), bits_reader(ctx, c, "b32")
    wr = writer(ctx, d, "b32")
    return lambda w, m: wr(w, hw_ints.prmt(ra(w), rb(w), rc(w), mode), m)


def _b128(ctx, op):
    """(low, high) register indices of a .b128 register: a register row holds 64 bits per lane, so
    the high half lives in a companion register added to the program at decode."""
    if op[0] != "reg":
        raise UnsupportedInstruction(f"a .b128 operand must be a register, got {op!r}")
    lo = ctx.reg(op[1])
    prog, key = ctx.prog, (ctx.func.name, op[1] + ".b128hi")
    if key not in prog.reg_index:
        prog.reg_index[key] = len(prog.reg_width)
        prog.reg_width.append(64)
        prog.reg_type.append("b64")
        prog.nregs = len(prog.reg_width)
    return lo, prog.reg_index[key]


def mov128(ctx, ins, base, mods):
    """mov.b128: pack {lo, hi} 64-bit registers into a .b128 register, unpack one, or copy one."""
    d, a = ins.args
    if a[0] == "vec":
        lo, hi_ = _b128(ctx, d)
        ra, rb = (bits_reader(ctx, x, "b64") for x in a[1])

        def pack(w, m):
            w.R[lo][m] = ra(w)[m]
            w.R[hi_][m] = rb(w)[m]
        return pack
    slo, shi = _b128(ctx, a)
    if d[0] == "vec":
        wa, wb = (writer(ctx, x, "b64") for x in d[1])
        return lambda w, m: (wa(w, w.R[slo].copy(), m), wb(w, w.R[shi].copy(), m))
    lo, hi_ = _b128(ctx, d)

    def copy(w, m):
        w.R[lo][m] = w.R[slo][m]
        w.R[hi_][m] = w.R[shi][m]
    return copy


def isspacep(ctx, ins, base, mods):
    """Data Movement and Conversion: isspacep."""
    space = mods[0]
    d, a = ins.args
    ra = bits_reader(ctx, a, "u64")
    wr = writer(ctx, d, "pred")
    return (lambda w, m: wr(w, w.machine.mem.isspacep(space, ra(w)), m))


def mapa(ctx, ins, base, mods):
    """Data Movement and Conversion: mapa (a shared address in a peer CTA of the cluster)."""
    ty = types(mods)[-1]
    d, a, b = ins.args
    ra, rb = bits_reader(ctx, a, ty), bits_reader(ctx, b, "u32")
    wr = writer(ctx, d, ty)
    generic = not any(m.startswith("shared") for m in mods)

    def body(w, m):
        wr(w, w.machine.mem.mapa(w, ra(w).astype(np.uint64), rb(w), generic, m, ins), m)
    return body


def getctarank(ctx, ins, base, mods):
    """Data Movement and Conversion: getctarank."""
    ty = types(mods)[-1]
    d, a = ins.args
    ra = bits_reader(ctx, a, ty)
    wr = writer(ctx, d, "u32")
    generic = not any(m.startswith("shared") for m in mods)

    def body(w, m):
        wr(w, w.machine.mem.ctarank_of(w, ra(w).astype(np.uint64), generic), m)
    return body
