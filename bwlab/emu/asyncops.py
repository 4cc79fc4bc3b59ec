"""The asynchronous units under the instructions: mbarrier, the TMA (cp.async.bulk[.tensor] loads,
multicast, stores, reduce-adds, bulk groups) and the warpgroup MMA (wgmma).

Each unit calls the one model of its mechanism that the notebooks use: `bwlab.hw.Mbarrier` for every
mbarrier, `bwlab.tma.model.tma_load_writes` for the bytes a TMA load puts where,
`bwlab.epilogue.store` for stores and reduce-adds, `bwlab.umma.model.wgmma_mma_async` for wgmma.
Loads and stores complete after a seeded latency; wgmma computes when the fourth warp of the
warpgroup has issued it, and its accumulator registers stay out of bounds until wgmma.wait_group.
"""
from __future__ import annotations

import numpy as np

from .errors import EmuError, EmuFault, ProtocolError, UnsupportedInstruction
from .program import bits_reader
from .values import from_bits, to_bits

__all__ = ["decode"]


def _addr(ctx, op):
    from .isa import _addr_reader
    return _addr_reader(ctx, op)[1]


def _writer(ctx, op, ty):
    from .isa import _writer as w
    return w(ctx, op, ty)


def decode(ctx, ins, base, mods, family):
    if family == "mbarrier":
        return _mbarrier(ctx, ins, mods)
    if family == "wgmma":
        return _wgmma(ctx, ins, mods)
    # cp.*
    if mods[:1] == ["async"] and len(mods) > 1 and mods[1] == "bulk":
        rest = mods[2:]
        if rest[:1] == ["commit_group"]:
            return _bulk_commit(ctx, ins)
        if rest[:1] == ["wait_group"]:
            return _bulk_wait(ctx, ins, "read" in rest)
        if rest[:1] == ["prefetch"]:
            return (lambda w, m: None), "plain"
        if rest[:1] == ["tensor"]:
            if "global" == rest[2] or rest[2].startswith("global"):
                return _tma_store(ctx, ins, mods, reduce=None)
            return _tma_load(ctx, ins, mods)
        return _bulk_copy(ctx, ins, mods)
    if mods[:3] == ["reduce", "async", "bulk"]:
        if "tensor" in mods:
            return _tma_store(ctx, ins, mods, reduce=next(m for m in mods if m in ("add", "min", "max", "inc", "dec",
                                                                                 "and", "or", "xor")))
    raise UnsupportedInstruction(f"the emulator does not execute `{ins.op}` (PTX line {ins.line}: {ins.text})")


# ---------------------------------------------------------------------------------------------
# mbarrier (PTX ISA 9.7.13.15)
# ---------------------------------------------------------------------------------------------
def _mbarrier(ctx, ins, mods):
    what = mods[0]
    args = ins.args
    if what == "init":
        addr, rc = _addr(ctx, args[0]), bits_reader(ctx, args[1], "u32")

        def body(w, m):
            a, cnt = addr(w), rc(w)
            for lane in np.nonzero(m)[0]:
                w.machine.mbarrier(w, int(a[lane]), "mbarrier.init", ins, create_count=int(cnt[lane]))
            w.machine.progress()
        return body, "plain"
    if what == "inval":
        addr = _addr(ctx, args[0])

        def body(w, m):
            a = addr(w)
            for lane in np.nonzero(m)[0]:
                c, off, _ = w.machine.mbarrier(w, int(a[lane]), "mbarrier.inval", ins)
                del c.mbarriers[off]
        return body, "plain"
    if what in ("arrive", "arrive_drop"):
        expect = "expect_tx" in mods
        drop = what == "arrive_drop"
        state, addr = args[0], _addr(ctx, args[1])
        rest = args[2:]
        rtx = bits_reader(ctx, rest[0], "u32") if expect and rest else None
        rcount = None
        if not expect and rest:
            rcount = bits_reader(ctx, rest[0], "u32")
        wst = _writer(ctx, state, "b64") if state[0] != "sink" else None

        def body(w, m):
            a = addr(w)
            tx = rtx(w) if rtx is not None else None
            cnt = rcount(w) if rcount is not None else None
            out = np.zeros(32, np.uint64)
            for lane in np.nonzero(m)[0]:
                c, off, bar = w.machine.mbarrier(w, int(a[lane]), ins.op, ins)
                out[lane] = bar.phase
                if drop:
                    bar.count -= 1
                if tx is not None:
                    bar.expect_tx(int(tx[lane]))
                bar.arrive(int(cnt[lane]) if cnt is not None else 1)
                w.machine.note(w, f"arrive {w.machine.prog.shared_name(off)}")
            w.machine.progress()
            if wst is not None:
                wst(w, out, m)
        return body, "plain"
    if what in ("expect_tx", "complete_tx"):   # the model's method of the same name, per lane
        addr, rtx = _addr(ctx, args[0]), bits_reader(ctx, args[1], "u32")

        def body(w, m):
            a, tx = addr(w), rtx(w)
            for lane in np.nonzero(m)[0]:
                _, _, bar = w.machine.mbarrier(w, int(a[lane]), ins.op, ins)
                getattr(bar, what)(int(tx[lane]))
            w.machine.progress()
        return body, "plain"
    if what in ("try_wait", "test_wait"):
        parity = "parity" in mods
        d, addr, rp = args[0], _addr(ctx, args[1]), bits_reader(ctx, args[2], "u32" if parity else "u64")
        wd = _writer(ctx, d, "pred")

        def body(w, m):
            a, p = addr(w), rp(w)
            done = np.zeros(32, bool)
            info = None
            for lane in np.nonzero(m)[0]:
                c, off, bar = w.machine.mbarrier(w, int(a[lane]), ins.op, ins)
                ok = bar.try_wait_parity(int(p[lane])) if parity else bar.phase > int(p[lane])
                done[lane] = ok
                if not ok:
                    info = ("mbarrier", c, off, int(p[lane]) if parity else f"state {int(p[lane])}", ins)
            wd(w, done, m)
            if info is not None and not done[m].any():
                w.machine.spin(w, info, m)
        return body, "plain"
    if what == "pending_count":
        d, rs = args[0], bits_reader(ctx, args[1], "u64")
        wd = _writer(ctx, d, "u32")
        return (lambda w, m: wd(w, np.zeros(32, np.uint32), m)), "plain"
    raise UnsupportedInstruction(f"the emulator does not execute `{ins.op}` (PTX line {ins.line})")


# ---------------------------------------------------------------------------------------------
# the TMA (PTX ISA 9.7.9.25-27: cp.async.bulk, cp.async.bulk.tensor, cp.reduce.async.bulk.tensor)
# ---------------------------------------------------------------------------------------------
def _read_tmap(w, ins, tmap_addr: int):
    from .tensormap import decode as tdecode, is_emu_map
    raw = w.machine.mem_read(w, "generic", np.full(32, tmap_addr, np.uint64), 128,
                             np.arange(32) == 0, ins)[0].tobytes()
    if not is_emu_map(raw):
        raise EmuFault(f"{w.who()} at {w.machine.where(ins)}: the tensor map at 0x{tmap_addr:x} is not one the "
                       "emulator encoded (encode it with TensorMap.encode on an emulator pointer; the GPU would "
                       "fault with an illegal instruction on a map that is not valid)")
    return tdecode(raw)


def _gmem_view(w, ins, gaddr: int, extent: int, what: str):
    mem = w.machine.memory
    try:
        alloc, off = mem.span(gaddr, extent, what)
    except EmuFault as e:
        raise EmuFault(f"{w.who()} at {w.machine.where(ins)}: {e} — the tensor map's global_shape and strides "
                       "must describe memory inside one allocation") from None
    return alloc.buf[off:off + extent]


def _tma_load(ctx, ins, mods):
    from ..tma.model import tma_load_writes
    from ..tma.tensor_map import SMEM_ALIGNMENT
    if "im2col" in mods or any(m.startswith("im2col") for m in mods):
        raise UnsupportedInstruction(f"`{ins.op}`: the im2col mode is not modelled (tile mode only)")
    pair = "cta_group::2" in mods   # the mbarrier may sit in the peer CTA of the pair (the leader's)
    multicast = any(m.startswith("multicast") for m in mods)
    args = ins.args
    dst = _addr(ctx, args[0])
    tens = args[1]
    tmap_r = bits_reader(ctx, tens[1], "u64")
    coords_r = [bits_reader(ctx, c, "s32") for c in tens[2]]
    mbar = _addr(ctx, args[2])
    mask_r = bits_reader(ctx, args[3], "u16") if multicast else None

    def body(w, m):
        M = w.machine
        d, t, b = dst(w), tmap_r(w), mbar(w)
        cs = [r(w) for r in coords_r]
        mk = mask_r(w) if mask_r is not None else None
        for lane in np.nonzero(m)[0]:
            tmap, gaddr = _read_tmap(w, ins, int(t[lane]))
            coords = tuple(int(c[lane]) for c in cs)
            if len(coords) != tmap.rank:
                raise EmuError(f"{w.who()} at {M.where(ins)}: a {len(coords)}-d load with a rank-{tmap.rank} "
                               "tensor map (the instruction's .Nd must equal the map's rank)")
            dcta, doff = M.cta_of_cluster_addr(w, int(d[lane]), "TMA destination", ins)
            bcta, boff = M.cta_of_cluster_addr(w, int(b[lane]), "TMA mbarrier", ins)
            M.async_uses_mbarrier(w, bcta, boff, "the TMA load", ins)
            if doff % SMEM_ALIGNMENT:
                raise EmuFault(f"{w.who()} at {M.where(ins)}: the TMA destination 0x{doff:x} is not "
                               f"{SMEM_ALIGNMENT}-byte aligned (PTX ISA: dstMem of a tiled load)")
            try:
                extent = tmap.global_extent_bytes
                gview = _gmem_view(w, ins, gaddr, extent, "the TMA load's tensor")
                addrs, vals = tma_load_writes(gview, tmap, coords, doff)
            except ValueError as e:
                raise EmuFault(f"{w.who()} at {M.where(ins)}: {e}") from None
            if addrs.size and addrs.max() >= dcta.smem.size:
                raise EmuFault(f"{w.who()} at {M.where(ins)}: the box lands at shared bytes up to 0x{int(addrs.max()):x}, "
                               f"past the CTA's {dcta.smem.size} bytes of shared memory")
            if multicast:
                mask = int(mk[lane])
                cl = w.cta.cluster
                if mask >> cl.size:
                    raise EmuError(f"{w.who()} at {M.where(ins)}: ctaMask 0x{mask:x} names CTA ranks beyond the "
                                   f"cluster's {cl.size}")
                targets = [cl.ctas[r] for r in range(cl.size) if mask >> r & 1]
            else:
                if bcta is not dcta and not (pair and bcta.rank == dcta.rank ^ 1):
                    raise EmuError(f"{w.who()} at {M.where(ins)}: the destination is in CTA rank {dcta.rank} but "
                                   f"the mbarrier in rank {bcta.rank}; they must be in the same CTA")
                targets = [dcta]
            if pair and bcta is not dcta:
                if bcta.exited:
                    from .tcgen05 import PeerExited
                    raise PeerExited(f"{w.who()} at {M.where(ins)}: a .cta_group::2 TMA load signals the mbarrier of "
                                     f"CTA rank {bcta.rank}, which has exited")
            nbytes = tmap.tx_bytes
            gsnap = None  # the global bytes are read when the load happens, not when it is issued

            def land(targets=targets, addrs=addrs, tmap=tmap, gaddr=gaddr, coords=coords, boff=boff, w=w,
                     nbytes=nbytes, doff=doff):
                gview = _gmem_view(w, ins, gaddr, tmap.global_extent_bytes, "the TMA load's tensor")
                a2, v2 = tma_load_writes(gview, tmap, coords, doff)
                for c in targets:
                    if c.exited and c is w.cta:
                        # the issuing CTA gave up (a bounded wait timed out) and left with its own load in
                        # flight: the bytes have nowhere to go; noted, not raised, as the GPU reports nothing
                        M.warnings.append(f"CTA {c.ctaid} exited with its TMA load of box {coords} still in "
                                          f"flight (issued at {M.where(ins)})")
                        continue
                    if c.exited:
                        raise ProtocolError(
                            f"a TMA load issued by {w.who()} at {M.where(ins)} writes into cluster rank {c.rank}, "
                            "which has already exited (every CTA a multicast names must still be running when the "
                            "bytes land: it has to wait on its barrier before it exits)")
                    c.smem[a2] = v2
                    c.smem_writer[a2] = -1
                    bc = bcta if pair and not multicast else c
                    if bc.exited:
                        from .tcgen05 import PeerExited
                        raise PeerExited(f"a .cta_group::2 TMA load issued by {w.who()} at {M.where(ins)} completes "
                                         f"on the mbarrier of cluster rank {bc.rank}, which has already exited")
                    bar = bc.mbarriers.get(boff)
                    if bar is None:
                        raise ProtocolError(
                            f"a TMA load issued by {w.who()} at {M.where(ins)} completes on shared offset 0x{boff:x} "
                            f"({M.prog.shared_name(boff)}) of CTA rank {bc.rank}, where no mbarrier is initialised")
                    bar.complete_tx(nbytes)
                    M.note(w, f"TMA bytes land in rank {c.rank}")
            names = ",".join(str(c.rank) for c in targets)
            M.schedule(M.latency(nbytes), land,
                       f"TMA load of {nbytes} bytes from box {coords} to CTA rank(s) {names} "
                       + " ".join(f"@{(bcta if pair and not multicast else c).rank}:{boff}" for c in targets))
            M.note(w, f"TMA load {coords}")
    return body, "plain"


def _bulk_group_add(w, lane, op):
    c = w.cta
    t = int(w.tid[lane])
    c.bulk_open.setdefault(t, []).append(op)


def _bulk_commit(ctx, ins):
    def body(w, m):
        c = w.cta
        for lane in np.nonzero(m)[0]:
            t = int(w.tid[lane])
            c.bulk.setdefault(t, []).append(c.bulk_open.pop(t, []))
    return body, "plain"


def _bulk_wait(ctx, ins, read):
    rn = bits_reader(ctx, ins.args[0], "u32")

    def body(w, group, em):
        c = w.cta
        M = w.machine
        n = int(rn(w)[em].max()) if em.any() else 0
        ok = True
        for lane in np.nonzero(em)[0]:
            t = int(w.tid[lane])
            groups = [g for g in c.bulk.get(t, []) if any(op in M.inflight_ops for op in g)]
            c.bulk[t] = groups
            if len(groups) > n:
                ok = False
        if ok:
            w.pc[group] += 1
        else:
            M.spin(w, ("bulk", f"cp.async.bulk.wait_group{'.read' if read else ''} {n} at {M.where(ins)}: "
                                f"more than {n} bulk groups of this thread are still in flight"), group)
    return body, "control"


def _tma_store(ctx, ins, mods, reduce):
    from ..epilogue.store import add_elements, smem_box_footprint, tma_store_writes
    from ..hw.dtypes import element_type
    tens, src = ins.args[0], ins.args[1]
    tmap_r = bits_reader(ctx, tens[1], "u64")
    coords_r = [bits_reader(ctx, c, "s32") for c in tens[2]]
    src_r = _addr(ctx, src)
    if reduce not in (None, "add"):
        raise UnsupportedInstruction(f"`{ins.op}`: only the .add reduction is modelled")

    def body(w, m):
        M = w.machine
        t, s = tmap_r(w), src_r(w)
        cs = [r(w) for r in coords_r]
        for lane in np.nonzero(m)[0]:
            tmap, gaddr = _read_tmap(w, ins, int(t[lane]))
            coords = tuple(int(c[lane]) for c in cs)
            c, soff = M.cta_of_cluster_addr(w, int(s[lane]), "the TMA store's SMEM source", ins, own=True)
            foot = smem_box_footprint(tmap)
            if soff % 128 or soff + foot > c.smem.size:
                raise EmuFault(f"{w.who()} at {M.where(ins)}: the store's SMEM source [0x{soff:x}, 0x{soff + foot:x}) "
                               f"must be 128-byte aligned and inside the CTA's {c.smem.size} bytes")
            M.async_reads_smem(c, soff, foot, f"the TMA {'reduce-add' if reduce else 'store'} at {M.where(ins)}",
                               w.who())
            try:
                tma_store_writes(tmap, coords, c.smem, soff, 0)   # the rules, checked at issue
            except ValueError as e:
                raise EmuFault(f"{w.who()} at {M.where(ins)}: {e}") from None

            def land(tmap=tmap, gaddr=gaddr, coords=coords, soff=soff, c=c):
                from ..epilogue.store import store_geometry
                # a store writes whole 16-byte granules: the last row's granule may pass the last element
                g = store_geometry(tmap)
                ext = g.extent + (g.row_limit - g.shape[0]) * g.elem
                gview = _gmem_view(w, ins, gaddr, ext, "the TMA store's tensor")
                off, vals = tma_store_writes(tmap, coords, c.smem, soff, 0)
                if reduce is None:
                    gview[off] = vals
                else:
                    eb = element_type(tmap.dtype).bytes
                    from ..epilogue.rules import raw_dtype
                    raw = raw_dtype(tmap.dtype)
                    eo = off.reshape(-1, eb)[:, 0]
                    idx = eo[:, None] + np.arange(eb)
                    old = gview[idx].copy().view(raw).reshape(-1)
                    new = vals.reshape(-1, eb).copy().view(raw).reshape(-1)
                    gview[idx] = add_elements(old, new, tmap.dtype).astype(raw).view(np.uint8).reshape(-1, eb)
            op = M.schedule(M.latency(foot), land, f"TMA {'reduce-add' if reduce else 'store'} of box {coords}")
            _bulk_group_add(w, lane, op)
            M.note(w, f"TMA store {coords}")
    return body, "plain"


def _bulk_copy(ctx, ins, mods):
    """cp.async.bulk (no tensor map): global -> shared::cluster with complete_tx, shared::cta ->
    global in a bulk group, shared::cta -> shared::cluster with complete_tx."""
    args = ins.args
    dst, src, rsize = _addr(ctx, args[0]), _addr(ctx, args[1]), bits_reader(ctx, args[2], "u32")
    spaces = [m for m in mods if m.startswith("shared") or m == "global"]
    to_global = spaces and spaces[0] == "global"
    mbar = _addr(ctx, args[3]) if not to_global and len(args) > 3 else None
    if any(m.startswith("multicast") for m in mods):
        raise UnsupportedInstruction(f"`{ins.op}`: the multicast form of the non-tensor bulk copy is not modelled")

    def body(w, m):
        M = w.machine
        d, s, n = dst(w), src(w), rsize(w)
        b = mbar(w) if mbar is not None else None
        for lane in np.nonzero(m)[0]:
            nb = int(n[lane])
            if nb % 16 or int(d[lane]) % 16 or int(s[lane]) % 16:
                raise EmuFault(f"{w.who()} at {M.where(ins)}: cp.async.bulk needs 16-byte aligned addresses and a "
                               f"size that is a multiple of 16 (got size {nb})")
            if to_global:
                c, soff = M.cta_of_cluster_addr(w, int(s[lane]), "the bulk copy's SMEM source", ins, own=True)
                M.async_reads_smem(c, soff, nb, f"the bulk copy at {M.where(ins)}", w.who())
                gaddr = int(d[lane])

                def land(c=c, soff=soff, gaddr=gaddr, nb=nb):
                    M.memory.write(gaddr, c.smem[soff:soff + nb], "bulk copy to global")
                op = M.schedule(M.latency(nb), land, f"bulk copy of {nb} bytes to global")
                _bulk_group_add(w, lane, op)
                continue
            dcta, doff = M.cta_of_cluster_addr(w, int(d[lane]), "bulk copy destination", ins)
            bcta, boff = M.cta_of_cluster_addr(w, int(b[lane]), "bulk copy mbarrier", ins)
            from_shared = "global" not in spaces
            saddr = int(s[lane])
            if from_shared:
                saddr = M.cta_of_cluster_addr(w, saddr, "the bulk copy's SMEM source", ins, own=True)[1]

            def land(dcta=dcta, doff=doff, bcta=bcta, boff=boff, nb=nb, saddr=saddr, from_shared=from_shared):
                if from_shared:
                    data = w.cta.smem[saddr:saddr + nb].copy()
                else:
                    data = M.memory.read(saddr, nb, "bulk copy from global")
                if dcta.exited:
                    raise ProtocolError(f"a bulk copy issued by {w.who()} at {M.where(ins)} writes into cluster rank "
                                        f"{dcta.rank}, which has exited")
                dcta.smem[doff:doff + nb] = data
                dcta.smem_writer[doff:doff + nb] = -1
                bar = bcta.mbarriers.get(boff)
                if bar is None:
                    raise ProtocolError(f"a bulk copy issued by {w.who()} at {M.where(ins)} completes on shared offset "
                                        f"0x{boff:x}, where no mbarrier is initialised")
                bar.complete_tx(nb)
            M.schedule(M.latency(nb), land, f"bulk copy of {nb} bytes @{bcta.rank}:{boff}")
    return body, "plain"


# ---------------------------------------------------------------------------------------------
# wgmma (PTX ISA 9.7.15: warpgroup-level matrix multiply-accumulate)
# ---------------------------------------------------------------------------------------------
def _wgmma(ctx, ins, mods):
    what = mods[0]
    if what == "fence":
        return (lambda w, m: None), "plain"
    if what == "commit_group":
        def body(w, m):
            w.wg_groups.append(w.wg_open)
            w.wg_open = []
        return body, "plain"
    if what == "wait_group":
        rn = bits_reader(ctx, ins.args[0], "u32")

        def body(w, group, em):
            n = int(rn(w)[0])
            M = w.machine
            key = (w.cta.linear, w.wid // 4)
            done = M.wgmma.get(key, {}).get("done", set())
            while len(w.wg_groups) > n and all(s in done for s in w.wg_groups[0]):
                retired = w.wg_groups.pop(0)
                for idx in [i for i, (s, _) in w.inflight.items() if s in retired]:
                    del w.inflight[idx]
            if len(w.wg_groups) > n:
                M.spin(w, ("wgmma", f"wgmma.wait_group {n} at {M.where(ins)}: a group waits for the other warps "
                                    "of the warpgroup to issue their part of its wgmma.mma_async"), group)
                return
            w.pc[group] += 1
        return body, "control"
    if what != "mma_async":
        raise UnsupportedInstruction(f"`{ins.op}` is not modelled")
    shape = next(m for m in mods if m.startswith("m64n"))
    N = int(shape[4:shape.index("k")])
    types = [m for m in mods if m in ("f32", "f16", "bf16", "tf32", "e4m3", "e5m2", "s32", "u8", "s8")]
    dtype_d, a_t, b_t = types[0], types[1], types[2]
    if dtype_d != "f32" or a_t not in ("f16", "bf16") or a_t != b_t:
        raise UnsupportedInstruction(f"`{ins.op}`: the emulator's wgmma runs f32 += f16/bf16 x f16/bf16")
    args = ins.args
    dvec = args[0]
    if args[1][0] == "vec":
        raise UnsupportedInstruction(f"`{ins.op}`: A from registers is not modelled (A from a SMEM descriptor only)")
    d_idx = [ctx.reg(x[1]) for x in dvec[1]]
    ra, rb = bits_reader(ctx, args[1], "u64"), bits_reader(ctx, args[2], "u64")
    rsd = bits_reader(ctx, args[3], "pred")
    imms = [int(x[1], 0) for x in args[4:8]]
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
        for idx in d_idx:
            w.inflight[idx] = (seq, where)
        w.wg_open.append(seq)
        if len(rec) == 4:
            _wgmma_compute(M, w, rec, N, a_t, tnsp_a, tnsp_b, d_idx, ins)
            st["done"].add(seq)
            del st["issued"][seq]
            M.progress()
    return body, "plain"


_FRAG = {}


def _fragment(N):
    if N not in _FRAG:
        from ..umma.model import wgmma_d_fragment
        _FRAG[N] = wgmma_d_fragment(N)
    return _FRAG[N]


def _wgmma_compute(M, w, rec, N, dtype, tnsp_a, tnsp_b, d_idx, ins):
    from ..umma.descriptors import decode_smem_desc, descriptor_addresses
    from ..umma.model import wgmma_mma_async
    descs = {(r[1], r[2], r[3]) for r in rec.values()}
    if len(descs) != 1:
        raise ProtocolError(f"the four warps of warpgroup {w.wid // 4} of CTA {w.cta.ctaid} issue wgmma.mma_async at "
                            f"{M.where(ins)} with different descriptors or scale-d: {sorted(descs)} (all 128 threads "
                            "must pass the same values)")
    adesc, bdesc, scale_d = descs.pop()
    c = w.cta
    a_major = "MN" if tnsp_a else "K"
    b_major = "MN" if tnsp_b else "K"
    for desc, major, mn, what in ((adesc, a_major, 64, "A"), (bdesc, b_major, N, "B")):
        try:
            addrs = descriptor_addresses(decode_smem_desc(desc, "sm90"), major, dtype, mn)
        except ValueError as e:
            raise EmuError(f"{w.who()} at {M.where(ins)}: the {what} descriptor 0x{desc:016x}: {e}") from None
        lo, hi = int(addrs.min()), int(addrs.max()) + 2
        if hi > c.smem.size:
            raise EmuFault(f"{w.who()} at {M.where(ins)}: the {what} operand reads shared bytes up to 0x{hi:x}, past "
                           f"the CTA's {c.smem.size} bytes (descriptor 0x{desc:016x})")
        flat = np.unique((addrs[..., None] + np.arange(2)).reshape(-1))
        bad = flat[c.smem_writer[flat] >= 0]
        if bad.size and M.check_proxy:
            M.async_reads_smem(c, int(bad[0]), 1, f"wgmma.mma_async operand {what} at {M.where(ins)}", w.who())
    thread, reg = _fragment(N)
    warps = [rec[q][0] for q in range(4)]
    d_in = np.zeros((64, N), np.float32)
    for q, wq in enumerate(warps):
        rows = slice(16 * q, 16 * q + 16)
        t = thread[rows] - 32 * q
        r = reg[rows]
        regs = np.array(d_idx)[r]
        d_in[rows] = from_bits(wq.R[regs, t], "f32")
    d = wgmma_mma_async(c.smem, [adesc], [bdesc], N, dtype, a_major, b_major, d_init=d_in, accumulate=scale_d)
    for q, wq in enumerate(warps):
        rows = slice(16 * q, 16 * q + 16)
        t = thread[rows] - 32 * q
        r = reg[rows]
        regs = np.array(d_idx)[r]
        wq.R[regs, t] = to_bits(d[rows], "f32", 32)
