"""wgmma (PTX ISA, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions").

The MMA is `bwlab.umma.model.wgmma_mma_async` (Hopper's measured block FMA; `wgmma_mma_async_rs` where A
comes from registers). It is asynchronous: once the four warps of the warpgroup have issued it, it completes
after a seeded latency, reading its operands then (SMEM, and A's fragment registers); until a wgmma.wait_group
retires it, its SMEM operands are an in-flight read (`bwlab.emu.order`: a write into them by a thread that has
not observed the retirement is named), and its accumulator registers and A's fragment registers stay out of
bounds (`Warp.inflight`: PTX ISA, wgmma.wait_group: accessing either before the wait is undefined).
wgmma.fence has no effect here (register dependences are always in order).
"""
from __future__ import annotations

import numpy as np

from ... import order
from ...errors import EmuError, EmuFault, ProtocolError, UnsupportedInstruction, WgmmaFenceMissing
from ...values import from_bits, to_bits
from ..operands import bits_reader

__all__ = ["fence", "commit_group", "wait_group", "mma_async"]


def fence(ctx, ins, base, mods):
    """wgmma.fence: the warp's earlier register accesses are ordered before its next wgmma.mma_async."""
    def body(w, m):
        M = w.machine
        M.__dict__.setdefault("wg_unfenced", {}).pop((w.cta.linear, w.wid), None)
        M.__dict__.setdefault("wg_fenced_once", set()).add((w.cta.linear, w.wid))
    return body


def _require_fence(M, w, d_idx, ins):
    """PTX ISA (wgmma.fence): a wgmma.fence must come before the first wgmma.mma_async of the warp, and between
    other accesses to the accumulator registers and the wgmma.mma_async that uses them. The emulator checks it
    where the warp certainly accessed them: before its first wgmma, and after a wgmma.wait_group that handed
    every accumulator back to ordinary code (at the PTX level the compiler may move register copies across the
    fence; ptxas orders those itself)."""
    key = (w.cta.linear, w.wid)
    unf = M.__dict__.setdefault("wg_unfenced", {})
    if key not in unf and key in M.__dict__.setdefault("wg_fenced_once", set()):
        return
    why = unf.get(key, "before this warp's first wgmma.mma_async")
    raise WgmmaFenceMissing(f"{w.who()} at {M.where(ins)}: wgmma.mma_async with no wgmma.fence {why} (PTX ISA, "
                            "wgmma.fence: required before the first wgmma.mma_async, and between an access to the "
                            "accumulator registers and a wgmma.mma_async that uses them)")


def commit_group(ctx, ins, base, mods):
    """wgmma.commit_group: the warp's wgmma.mma_async since the last commit become a group."""
    def body(w, m):
        w.wg_groups.append(w.wg_open)
        w.wg_open = []
    return body


def wait_group(ctx, ins, base, mods):
    """wgmma.wait_group N: blocks until at most N groups are pending; retired accumulators become readable."""
    rn = bits_reader(ctx, ins.args[0], "u32")

    def body(w, group, em):
        n = int(rn(w)[0])
        M = w.machine
        key = (w.cta.linear, w.wid // 4)
        done = M.wgmma.get(key, {}).get("done", set())
        while len(w.wg_groups) > n and all(s in done for s in w.wg_groups[0]):
            retired = w.wg_groups.pop(0)
            for idx in [i for i, v in w.inflight.items() if v[0] in retired]:
                del w.inflight[idx]
            if retired:   # this warp has observed their completion: its part's SMEM reads are over
                order.learn(w, ("wgmma", w.cta.linear, w.wid), max(retired))
        if not w.wg_groups and not w.wg_open and n == 0:
            M.__dict__.setdefault("wg_unfenced", {})[(w.cta.linear, w.wid)] = (
                f"since the wgmma.wait_group 0 at {M.where(ins)} handed its accumulators back")
        if len(w.wg_groups) > n:
            M.spin(w, ("wgmma", f"wgmma.wait_group {n} at {M.where(ins)}: a group waits for the other warps "
                                "of the warpgroup to issue their part of its wgmma.mma_async"), group)
            return
        w.pc[group] += 1
    return body


def mma_async(ctx, ins, base, mods):
    """wgmma.mma_async: f32 += f16/bf16 x f16/bf16, A and B from SMEM descriptors or A from four fragment
    registers per thread (f16/bf16); computed by `bwlab.umma.model.wgmma_mma_async` (`_rs`) when the fourth warp
    of the warpgroup has issued it."""
    shape = next(m for m in mods if m.startswith("m64n"))
    N = int(shape[4:shape.index("k")])
    types = [m for m in mods if m in ("f32", "f16", "bf16", "tf32", "e4m3", "e5m2", "s32", "u8", "s8")]
    dtype_d, a_t, b_t = types[0], types[1], types[2]
    fp8 = ("e4m3", "e5m2")
    if dtype_d != "f32" or not ((a_t in ("f16", "bf16", "tf32") and a_t == b_t) or (a_t in fp8 and b_t in fp8)):
        raise UnsupportedInstruction(f"`{ins.op}`: the emulator's wgmma runs f32 += f16/bf16/tf32 x the same type, "
                                     "or e4m3/e5m2 x e4m3/e5m2")
    args = ins.args
    dvec = args[0]
    a_idx = None
    if args[1][0] == "vec":   # A from registers: d, {a0..a3}, b-desc, scale-d, imm-scale-a, imm-scale-b, imm-trans-b
        if a_t not in ("f16", "bf16"):
            raise UnsupportedInstruction(f"`{ins.op}`: A from registers is modelled for f16 and bf16")
        a_idx = [ctx.reg(x[1]) for x in args[1][1]]
        if len(a_idx) != 4:
            raise EmuError(f"PTX line {ins.line}: m64nNk16 with A from registers takes four .b32 registers, "
                           f"got {len(a_idx)}")
    d_idx = [ctx.reg(x[1]) for x in dvec[1]]
    ra = (lambda w: (0,)) if a_idx else bits_reader(ctx, args[1], "u64")
    rb = bits_reader(ctx, args[2], "u64")
    rsd = bits_reader(ctx, args[3], "pred")
    imms = [int(x[1], 0) for x in args[4:8]]
    if a_idx:
        imms = imms[:2] + [0] + imms[2:]   # no imm-trans-a: A's fragment has one layout
    scale_a, scale_b, tnsp_a, tnsp_b = imms + [1, 1, 0, 0][len(imms):]
    if scale_a != 1 or scale_b != 1:
        raise UnsupportedInstruction(f"`{ins.op}`: negated operands (imm-scale -1) are not modelled")
    nregs = N // 2
    if len(d_idx) != nregs:
        raise EmuError(f"PTX line {ins.line}: m64n{N} f32 takes {nregs} accumulator registers, got {len(d_idx)}")

    def body(w, m):
        M = w.machine
        key = (w.cta.linear, w.wid // 4)
        st = M.wgmma.setdefault(key, {"issued": {}, "done": set()})
        seq = w.wg_seq
        w.wg_seq += 1
        rec = st["issued"].setdefault(seq, {})
        rec[w.wid % 4] = (w, int(ra(w)[0]), int(rb(w)[0]), bool(rsd(w)[0]))
        where = M.where(ins)
        _require_fence(M, w, d_idx, ins)
        for idx in d_idx:
            w.inflight[idx] = (seq, where)
        for idx in a_idx or ():
            w.inflight[idx] = (seq, where, "an A-fragment register")
        w.wg_open.append(seq)
        if len(rec) == 4:
            # the whole warpgroup has issued it: the tensor core reads A and B from SMEM at some time before it
            # completes (after a seeded latency); until a wait_group retires it, its operands may not change
            del st["issued"][seq]
            ranges = _operand_ranges(M, w, rec, N, a_t, tnsp_a, tnsp_b, ins, b_t, a_regs=bool(a_idx))
            warps = [r[0] for r in rec.values()]
            known = {}
            for x in warps:
                order.merge(known, x.known)
            who = f"warpgroup {w.wid // 4} of CTA {w.cta.ctaid}"
            for lo, hi, what in ranges:
                op = f"wgmma.mma_async operand {what}"
                for x in warps:   # each warp's part may read any of it: each must be ordered after the stores
                    order.require_async_read_ordered(M, w.cta, lo, hi, x.known, {x.wid}, op, where, M.mem.who(x))
                order.require_read_ordered(M, w.cta, lo, hi, known, f"{op} of {who}", where)
                # each warp's part may read until that warp retires it
                for x in warps:
                    order.add_region(w.cta, lo, hi, ("wgmma", w.cta.linear, x.wid), seq, op, where, who)

            def complete(rec=rec, seq=seq, st=st):
                _wgmma_compute(M, w, rec, N, a_t, tnsp_a, tnsp_b, d_idx, ins, b_t, a_idx)
                st["done"].add(seq)
            # the warpgroup's wgmmas execute in issue order (each accumulates onto the previous one's D)
            due = max(M.clock + M.latency(sum(hi - lo for lo, hi, _ in ranges)), st.get("due", 0) + 1)
            st["due"] = due
            M.schedule(due - M.clock, complete, f"wgmma.mma_async #{seq} of warpgroup {w.wid // 4} ({where})")
    return body


_FRAG = {}


def _fragment(N):
    if N not in _FRAG:
        from ....umma.model import wgmma_d_fragment
        _FRAG[N] = wgmma_d_fragment(N)
    return _FRAG[N]


_PARTS = {}


def _fragment_parts(N, d_idx):
    """Per warp q of the warpgroup: (its rows of D, the register index and the lane of each of their elements)."""
    key = (N, tuple(d_idx))
    got = _PARTS.get(key)
    if got is None:
        if len(_PARTS) > 256:
            _PARTS.clear()
        thread, reg = _fragment(N)
        idx = np.array(d_idx)
        got = _PARTS[key] = [(slice(16 * q, 16 * q + 16), idx[reg[16 * q:16 * q + 16]],
                              thread[16 * q:16 * q + 16] - 32 * q) for q in range(4)]
    return got


def _operand_ranges(M, w, rec, N, dtype, tnsp_a, tnsp_b, ins, b_dtype, a_regs=False):
    """[(first byte, last byte + 1, 'A'/'B')] of SMEM the wgmma reads (checked at issue, like the proxy fence)."""
    from ....umma.descriptors import decode_smem_desc, descriptor_addresses
    r = next(iter(rec.values()))
    out = []
    for desc, major, mn, what, dt in ((r[1], "MN" if tnsp_a else "K", 64, "A", dtype),
                                      (r[2], "MN" if tnsp_b else "K", N, "B", b_dtype))[1 if a_regs else 0:]:
        try:
            addrs = descriptor_addresses(decode_smem_desc(desc, "sm90"), major, dt, mn)
        except ValueError as e:
            raise EmuError(f"{w.who()} at {M.where(ins)}: the {what} descriptor 0x{desc:016x}: {e}") from None
        out.append((int(addrs.min()), int(addrs.max()) + _ELEM_BYTES.get(dt, 2), what))
    return out


_ELEM_BYTES = {"tf32": 4, "e4m3": 1, "e5m2": 1}


def _wgmma_compute(M, w, rec, N, dtype, tnsp_a, tnsp_b, d_idx, ins, b_dtype=None, a_idx=None):
    """Compute one wgmma once its warpgroup has issued it: the SMEM operands checked (bounds, the proxy fence),
    D read from and written back to the four warps' accumulator registers. `a_idx`: A from these fragment
    registers (read now: the tensor core may read them at any time until the instruction completes)."""
    from ....umma.descriptors import decode_smem_desc, descriptor_addresses
    from ....umma.model import wgmma_a_fragment, wgmma_mma_async, wgmma_mma_async_rs
    descs = {(r[1], r[2], r[3]) for r in rec.values()}
    if len(descs) != 1:
        raise ProtocolError(f"the four warps of warpgroup {w.wid // 4} of CTA {w.cta.ctaid} issue wgmma.mma_async at "
                            f"{M.where(ins)} with different descriptors or scale-d: {sorted(descs)} (all 128 threads "
                            "must pass the same values)")
    adesc, bdesc, scale_d = descs.pop()
    c = w.cta
    a_major = "MN" if tnsp_a else "K"
    b_major = "MN" if tnsp_b else "K"
    b_dtype = dtype if b_dtype is None else b_dtype
    cache = M.__dict__.setdefault("wgmma_addresses", {})
    operands = ((adesc, a_major, 64, "A", dtype), (bdesc, b_major, N, "B", b_dtype))[1 if a_idx else 0:]
    for desc, major, mn, what, dt in operands:
        eb = _ELEM_BYTES.get(dt, 2)
        key = (desc, major, dt, mn)
        got = cache.get(key)
        if got is None:
            try:
                addrs = descriptor_addresses(decode_smem_desc(desc, "sm90"), major, dt, mn)
            except ValueError as e:
                raise EmuError(f"{w.who()} at {M.where(ins)}: the {what} descriptor 0x{desc:016x}: {e}") from None
            got = cache[key] = (addrs, int(addrs.min()), int(addrs.max()) + eb)
        addrs, lo, hi = got
        if hi > c.smem.size:
            raise EmuFault(f"{w.who()} at {M.where(ins)}: the {what} operand reads shared bytes up to 0x{hi:x}, past "
                           f"the CTA's {c.smem.size} bytes (descriptor 0x{desc:016x})")
        if not (c.smem_writer[lo:hi] >= 0).any():
            continue   # no unfenced generic-proxy byte anywhere in the operand's span
        flat = np.unique((addrs[..., None] + np.arange(eb)).reshape(-1))
        bad = flat[c.smem_writer[flat] >= 0]
        if bad.size and M.check_proxy:
            M.mem.async_reads_smem(c, int(bad[0]), 1, f"wgmma.mma_async operand {what} at {M.where(ins)}", w.who())
    parts = _fragment_parts(N, d_idx)
    warps = [rec[q][0] for q in range(4)]
    d_in = np.zeros((64, N), np.float32)
    for (rows, regs, t), wq in zip(parts, warps):
        d_in[rows] = from_bits(wq.R[regs, t], "f32")
    if a_idx:
        thread, reg, half = wgmma_a_fragment()
        idx = np.array(a_idx)
        words = np.zeros((64, 16), np.uint32)
        for q, wq in enumerate(warps):
            rows = slice(16 * q, 16 * q + 16)
            words[rows] = wq.R[idx[reg[rows]], thread[rows] - 32 * q]
        a_bits = ((words >> (16 * half.astype(np.uint32))) & 0xFFFF).astype(np.uint16)
        d = wgmma_mma_async_rs(c.smem, a_bits, bdesc, N, dtype, b_major, d_init=d_in, accumulate=scale_d)
    else:
        d = wgmma_mma_async(c.smem, [adesc], [bdesc], N, dtype, a_major, b_major, d_init=d_in, accumulate=scale_d,
                            b_dtype=b_dtype)
    for (rows, regs, t), wq in zip(parts, warps):
        wq.R[regs, t] = to_bits(d[rows], "f32", 32)
