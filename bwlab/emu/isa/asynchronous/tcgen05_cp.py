"""tcgen05.cp and the block-scaled tcgen05.mma: the scale factors' trip from SMEM into Tensor Memory and the MMA
that reads them.

PTX ISA 9.7.16 tcgen05.cp ("tcgen05.cp.cta_group.shape{.multicast}{.dst_src_fmt} [taddr], s-desc": shapes
.128x256b, .4x256b, .128x128b, .64x128b.warpx2::02_13 / ::01_23, .32x128b.warpx4; decompression
.b8x16.b6x16_p32 / .b8x16.b4x16_p64) and tcgen05.mma "Block Scaling" (kind::mxf8f6f4, mxf4, mxf4nvf4 with
.block_scale{.scale_vec::NX | .blockN}, operands [d], a-desc, b-desc, idesc, [scale-A], [scale-B], p).
The models are `bwlab.umma.scales.tcgen05_cp` and `bwlab.umma.blockscale.tcgen05_mma_block_scaled`; this module issues them
through the same machinery as the other tcgen05 operations (`tcgen05.py`):

* both are asynchronous and issued by one thread; they complete in issue order with that thread's MMAs (one
  pipeline per issuing thread, as the ISA orders tcgen05.cp before a later tcgen05.mma of the same thread),
  and a tcgen05.commit arrives once every earlier one of them has completed: SMEM they read may be reused
  only after that commit's mbarrier phase completed, exactly as for the MMA's operands;
* their SMEM source must have been made visible to the async proxy (fence.proxy.async, `ProxyFenceMissing`)
  and be ordered after the writes that produced it;
* tcgen05.cp writes TMEM columns the CTA allocated (`TmemAllocError` otherwise), and a dealloc while it is in
  flight is refused, as for the MMA;
* the block-scaled MMA's scale factors are read when it executes; scales that are not duplicated to the four
  lane quarters, or an idesc that breaks a block-scaled rule, are reported naming the rule.

Only .cta_group::1 is modelled for both (`UnsupportedInstruction` otherwise).
"""
from __future__ import annotations

import numpy as np

from ...errors import EmuError, ProtocolError, TmemAllocError, UnsupportedInstruction
from ... import order
from ..operands import address, bits_reader
from .tcgen05 import _SEC_ALLOC, _cta_group, _issue_mma, _one_issuer, _ordered, _same_group, tmem_of
from .tcgen05 import mma as plain_mma

__all__ = ["cp", "mma_block_scaled", "require_block_scaled_issue", "execute_block_scaled"]

_SHAPES = ("128x256b", "4x256b", "128x128b", "64x128b", "32x128b")


def cp(ctx, ins, base, mods):
    """tcgen05.cp.cta_group::1.shape{.multicast}{.b8x16.bNx16_pM} [taddr], s_desc."""
    from ....umma.scales import CP_FORMATS
    group = _cta_group(mods)
    if group != 1:
        raise UnsupportedInstruction(f"`{ins.op}`: bwlab models tcgen05.cp.cta_group::1 only")
    shape = next((m for m in mods if m in _SHAPES), None)
    if shape is None:
        raise UnsupportedInstruction(f"`{ins.op}`: tcgen05.cp needs one of the shapes {list(_SHAPES)}")
    multicast = next((m for m in mods if m.startswith("warpx")), None)
    fmt = next((f for f in CP_FORMATS if f.split(".")[1] in mods), None)
    if len(ins.args) != 2:
        raise UnsupportedInstruction(f"`{ins.op}` (PTX line {ins.line}): tcgen05.cp takes [taddr], s_desc")
    rt = address(ctx, ins.args[0])
    rd = bits_reader(ctx, ins.args[1], "u64")

    def body(w, m):
        M = w.machine
        t, d = rt(w), rd(w)
        _same_group(w, ins, group)
        _ordered(w, ins, "tcgen05.cp")
        _one_issuer(w, m, ins, "tcgen05.cp")
        for lane in np.nonzero(m)[0]:
            _issue_cp(w, ins, shape, multicast, fmt, int(t[lane]) & 0xFFFFFFFF, int(d[lane]), int(w.tid[lane]))
        M.progress()
    return body


def _source_bytes(smem_size, s_desc, shape):
    from ....umma.scales import CP_SHAPES
    from ....umma.descriptors import decode_smem_desc, descriptor_addresses
    rows, row_bytes = CP_SHAPES[shape]
    flat = np.unique(descriptor_addresses(decode_smem_desc(s_desc, "sm100"), "K", "e4m3", rows, row_bytes))
    return flat[flat < smem_size]


def _issue_cp(w, ins, shape, multicast, fmt, taddr, s_desc, tid):
    from ....umma.scales import CP_SHAPES, cp_destination, tcgen05_cp
    M = w.machine
    where = M.where(ins)
    c = w.cta
    tm = tmem_of(c)
    what = f"tcgen05.cp.{shape}" + (f".{multicast}" if multicast else "") + (f".{fmt}" if fmt else "")
    try:   # shape, multicast, address and descriptor checked at issue (the bytes are read when it executes)
        cp_destination(shape, multicast)
        scratch = np.zeros_like(tm.image)
        tcgen05_cp(c.smem, scratch, taddr, s_desc, shape, multicast, fmt)
    except (ValueError, IndexError) as e:
        raise EmuError(f"{w.who()} at {where}: {what} [0x{taddr:08x}], s_desc 0x{s_desc:016x}: {e}") from None
    col0 = taddr & 0xFFFF
    lo, hi = col0, col0 + CP_SHAPES[shape][1] // 4
    owner = tm.owner_map()[lo:hi]
    if owner.size < hi - lo or (owner != c.linear).any():
        raise TmemAllocError(f"{w.who()} at {where}: {what} writes TMEM columns {lo}..{hi - 1}, not all of them "
                             f"allocated by this CTA ({_SEC_ALLOC}: a kernel may use only the TMEM it allocated)")
    flat = _source_bytes(c.smem.size, s_desc, shape)
    if M.check_proxy:
        bad = flat[c.smem_writer[flat] >= 0]
        if bad.size:
            M.mem.async_reads_smem(c, int(bad[0]), 1, f"{what} source at {where}", w.who())
    seqs = M.__dict__.setdefault("tc_seq", {})
    key = ("tcgen05.mma", c.linear, tid)          # one pipeline with the thread's MMAs: commit covers both
    seq = seqs[key] = seqs.get(key, -1) + 1
    who = w.who(w.tid == tid)
    desc = f"{what} of {w.who()} at {where}"
    if flat.size:
        lo_b, hi_b = int(flat.min()), int(flat.max()) + 1
        op = f"{what} source"
        order.require_async_read_ordered(M, c, lo_b, hi_b, w.known, {w.wid}, op, where, who, flat=flat)
        order.require_lane_order(M, c, lo_b, hi_b, w, int(np.nonzero(w.tid == tid)[0][0]), op, where, who, flat=flat)
        order.require_read_ordered(M, c, lo_b, hi_b, w.known, f"{op} of {who}", where)
        order.add_region(c, lo_b, hi_b, key, seq, op, where, who)
    c.__dict__.setdefault("tmem_writes", []).append((lo, hi, key, seq, desc))
    rec = (lo, hi, desc)
    c.tmem_inflight.append(rec)
    pipe = M.__dict__.setdefault("tc_pipe", {})
    pkey = (c.linear, tid)
    due = max(M.clock + M.latency(CP_SHAPES[shape][0] * 4), pipe.get(pkey, 0) + 1)
    pipe[pkey] = due

    def complete():
        if c.exited:
            raise ProtocolError(f"{desc} completes after CTA {c.ctaid} exited: it writes that CTA's TMEM "
                                "(wait for its tcgen05.commit before the CTA exits)")
        tcgen05_cp(c.smem, tmem_of(c).image, taddr, s_desc, shape, multicast, fmt)
        c.tmem_inflight.remove(rec)
    M.schedule(due - M.clock, complete, desc)
    M.note(w, f"{what} -> column {col0}")


# ---------------------------------------------------------------------------------------------
# the block-scaled MMA (issued through tcgen05._issue_mma with `scaled`)
# ---------------------------------------------------------------------------------------------
def mma(ctx, ins, base, mods):
    """tcgen05.mma: the block-scaled kinds here, every other kind in tcgen05.py (the table's one row)."""
    if "block_scale" in mods:
        return mma_block_scaled(ctx, ins, mods, next((m[6:] for m in mods if m.startswith("kind::")), None))
    return plain_mma(ctx, ins, base, mods)


class Scaled(tuple):
    """(scale_A address, scale_B address, scale_vec) of one block-scaled MMA, with the two steps
    tcgen05._issue_mma takes from it: the checks at issue and the arithmetic at completion."""

    def issue(self, state, adesc, bdesc, idesc, kind):
        return require_block_scaled_issue(state, adesc, bdesc, idesc, kind, self)

    def execute(self, state, d_tmem, adesc, bdesc, idesc, accumulate, kind, desc):
        execute_block_scaled(state, d_tmem, adesc, bdesc, idesc, accumulate, kind, self, desc)


def mma_block_scaled(ctx, ins, mods, kind):
    """tcgen05.mma.cta_group::1.kind::{mxf8f6f4,mxf4,mxf4nvf4}.block_scale{.scale_vec::NX|.blockN}
    [d], a_desc, b_desc, idesc, [scale_A], [scale_B], enable_input_d."""
    from ....umma.blockscale import BLOCK_KINDS, scale_vec_of
    if kind not in BLOCK_KINDS:
        raise UnsupportedInstruction(f"`{ins.op}`: .block_scale goes with kind::{', kind::'.join(BLOCK_KINDS)}")
    if any(m in ("sp", "ws") or m.startswith("collector") for m in mods):
        raise UnsupportedInstruction(f"`{ins.op}`: sparse, .ws and collector forms are not modelled")
    group = _cta_group(mods)
    if group != 1:
        raise UnsupportedInstruction(f"`{ins.op}`: bwlab models block-scaled tcgen05.mma with cta_group::1 only")
    q = next((m for m in mods if m.startswith("scale_vec::") or m in ("block16", "block32")), None)
    try:
        vec = scale_vec_of(kind, q)
    except ValueError as e:
        raise EmuError(f"`{ins.op}` (PTX line {ins.line}): {e}") from None
    args = ins.args
    if len(args) != 7 or args[1][0] == "addr" or args[4][0] != "addr" or args[5][0] != "addr":
        raise UnsupportedInstruction(f"`{ins.op}` (PTX line {ins.line}): only [d_tmem], a_desc, b_desc, idesc, "
                                     "[scale_A], [scale_B], enable_input_d (A from SMEM) is modelled")
    rd = address(ctx, args[0])
    ra, rb = bits_reader(ctx, args[1], "u64"), bits_reader(ctx, args[2], "u64")
    ri = bits_reader(ctx, args[3], "u32")
    rsa, rsb = address(ctx, args[4]), address(ctx, args[5])
    rp = bits_reader(ctx, args[6], "pred")

    def body(w, m):
        M = w.machine
        d, a, b, i, p, sa, sb = rd(w), ra(w), rb(w), ri(w), rp(w), rsa(w), rsb(w)
        _same_group(w, ins, group)
        _ordered(w, ins, "tcgen05.mma")
        _one_issuer(w, m, ins, "tcgen05.mma")
        for lane in np.nonzero(m)[0]:
            _issue_mma(w, ins, kind, group, int(d[lane]) & 0xFFFFFFFF, int(a[lane]), int(b[lane]), int(i[lane]),
                       bool(p[lane]), int(w.tid[lane]),
                       scaled=Scaled((int(sa[lane]) & 0xFFFFFFFF, int(sb[lane]) & 0xFFFFFFFF, vec)))
        M.progress()
    return body


def require_block_scaled_issue(state, adesc, bdesc, idesc, kind, scaled):
    """At issue: the idesc's fields against the block-scaled rules and the operand addresses. Returns (fields,
    D's TMEM layout, a function giving the SMEM bytes an operand reads)."""
    from ....umma.blockscale import (decode_block_scaled_idesc, operand_bytes, require_block_scaled)
    from ....umma.model import d_tmem_layout
    from ....hw.tmem import decode_address
    sfa, sfb, vec = scaled
    f = decode_block_scaled_idesc(idesc, kind)
    require_block_scaled(kind, f.a_type, f.b_type, f.scale_type, vec, f.M, f.N, f.sf_a_id, f.sf_b_id,
                         f.a_major, f.b_major)
    for name, t in (("scale_A", sfa), ("scale_B", sfb)):
        decode_address(t)
    size = state.smem.size
    for desc, major, mn, name in ((adesc, f.a_major, f.M, "A"), (bdesc, f.b_major, f.N, "B")):
        top = int(operand_bytes(desc, major, mn).max())
        if top >= size:
            raise ValueError(f"operand {name}'s descriptor reads up to byte {top}, past the {size}-byte shared memory")

    def obytes(desc, major, dtype, mn):
        return np.unique(operand_bytes(desc, major, mn).reshape(-1))
    return f, d_tmem_layout(f.M, f.N, 1), obytes


def execute_block_scaled(state, d_tmem, adesc, bdesc, idesc, accumulate, kind, scaled, desc):
    """At completion: read the scales from TMEM and compute D (`bwlab.umma.blockscale`)."""
    from ....umma.blockscale import tcgen05_mma_block_scaled
    sfa, sfb, vec = scaled
    try:
        tcgen05_mma_block_scaled(state, d_tmem, adesc, bdesc, idesc, sfa, sfb, accumulate, kind, vec)
    except ValueError as e:
        raise EmuError(f"{desc}, scale_A [0x{sfa:08x}], scale_B [0x{sfb:08x}]: {e}") from None
