"""The TMA and the bulk copies (PTX ISA, "Data Movement and Conversion Instructions": cp.async.bulk,
cp.async.bulk.tensor, cp.reduce.async.bulk.tensor, cp.async.bulk.commit_group / wait_group).

Each unit calls the one model of its mechanism the notebooks use: `bwlab.tma.model.tma_load_writes`
for the bytes a TMA load puts where, `bwlab.epilogue.store` for stores and reduce-adds. Loads and
stores complete after a seeded latency (`Launch.schedule`); the stores join the issuing thread's
bulk groups.
"""
from __future__ import annotations

import numpy as np

from ... import order
from ...errors import EmuError, EmuFault, PeerExited, ProtocolError, UnsupportedInstruction
from ..operands import address, bits_reader

__all__ = ["tensor", "reduce_tensor", "bulk_copy", "commit_group", "wait_group"]


def tensor(ctx, ins, base, mods):
    """cp.async.bulk.tensor: a TMA load (global -> shared::cluster) or store (shared::cta -> global),
    by the direction its state spaces name."""
    rest = mods[2:]
    if rest[2] == "global" or rest[2].startswith("global"):
        return _tma_store(ctx, ins, mods, reduce=None)
    return _tma_load(ctx, ins, mods)


def reduce_tensor(ctx, ins, base, mods):
    """cp.reduce.async.bulk.tensor: the TMA reduce-add (only .add is modelled)."""
    return _tma_store(ctx, ins, mods, reduce=next(m for m in mods if m in ("add", "min", "max", "inc", "dec",
                                                                         "and", "or", "xor")))


def bulk_copy(ctx, ins, base, mods):
    return _bulk_copy(ctx, ins, mods)


def commit_group(ctx, ins, base, mods):
    """cp.async.bulk.commit_group: the thread's bulk stores since the last commit become a group."""
    return _bulk_commit(ctx, ins)


def wait_group(ctx, ins, base, mods):
    """cp.async.bulk.wait_group{.read} N: blocks until at most N of the thread's groups are in flight."""
    return _bulk_wait(ctx, ins, "read" in mods)


def _read_tmap(w, ins, tmap_addr: int):
    from ...tensormap import decode as tdecode, is_emu_map
    raw = w.machine.mem.read(w, "generic", np.full(32, tmap_addr, np.uint64), 128,
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


# (tensor map, coordinates, destination) -> (tma_load_plan, lowest and highest SMEM byte), and the stores' plans:
# a box's bytes go to the same places every time it is loaded (a k-loop's boxes, the same launch repeated)
_PLANS = {}


def _load_plan(tmap, coords, doff: int):
    from ....tma.model import tma_load_plan
    key = (tmap, coords, doff)
    got = _PLANS.get(key)
    if got is None:
        if len(_PLANS) > 4096:
            _PLANS.clear()
        plan = tma_load_plan(tmap, coords, doff)
        for a in plan:
            a.flags.writeable = False
        a = plan[0]
        got = _PLANS[key] = (plan, int(a.min()) if a.size else -1, int(a.max()) if a.size else -1)
    return got


def _store_plan(tmap, coords, soff: int):
    """(swizzled SMEM address of each box byte, GMEM offsets of the bytes written, which box bytes are written):
    `epilogue.store.store_targets` with its rules, once per (map, coordinates, source)."""
    from ....epilogue.store import store_targets
    key = ("store", tmap, coords, soff)
    got = _PLANS.get(key)
    if got is None:
        if len(_PLANS) > 4096:
            _PLANS.clear()
        addr, gbyte, inb = store_targets(tmap, coords, soff)
        got = (addr, gbyte[inb], inb)
        for a in got:
            a.flags.writeable = False
        _PLANS[key] = got
    return got


def _tma_load(ctx, ins, mods):
    from ....tma.model import tma_plan_values
    from ....tma.tensor_map import SMEM_ALIGNMENT
    if "im2col" in mods or any(m.startswith("im2col") for m in mods):
        raise UnsupportedInstruction(f"`{ins.op}`: the im2col mode is not modelled (tile mode only)")
    pair = "cta_group::2" in mods   # the mbarrier may sit in the peer CTA of the pair (the leader's)
    multicast = any(m.startswith("multicast") for m in mods)
    args = ins.args
    dst = address(ctx, args[0])
    tens = args[1]
    tmap_r = bits_reader(ctx, tens[1], "u64")
    coords_r = [bits_reader(ctx, c, "s32") for c in tens[2]]
    mbar = address(ctx, args[2])
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
            dcta, doff = M.mem.cta_of_cluster_addr(w, int(d[lane]), "TMA destination", ins)
            bcta, boff = M.mem.cta_of_cluster_addr(w, int(b[lane]), "TMA mbarrier", ins)
            M.sync.async_uses_mbarrier(w, bcta, boff, "the TMA load", ins)
            if doff % SMEM_ALIGNMENT:
                raise EmuFault(f"{w.who()} at {M.where(ins)}: the TMA destination 0x{doff:x} is not "
                               f"{SMEM_ALIGNMENT}-byte aligned (PTX ISA: dstMem of a tiled load)")
            try:
                extent = tmap.global_extent_bytes
                _gmem_view(w, ins, gaddr, extent, "the TMA load's tensor")   # inside one allocation
                plan, lo, top = _load_plan(tmap, coords, doff)
            except ValueError as e:
                raise EmuFault(f"{w.who()} at {M.where(ins)}: {e}") from None
            if top >= dcta.smem.size:
                raise EmuFault(f"{w.who()} at {M.where(ins)}: the box lands at shared bytes up to 0x{top:x}, "
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
                    raise PeerExited(f"{w.who()} at {M.where(ins)}: a .cta_group::2 TMA load signals the mbarrier of "
                                     f"CTA rank {bcta.rank}, which has exited")
            nbytes = tmap.tx_bytes
            known = order.snapshot(w)   # what the issuing thread had observed: the load may land at any time after
            who, where = w.who(np.arange(32) == lane), M.where(ins)
            for c in targets:
                if c is not w.cta:
                    order.remote_access(w, c, "multicasts a TMA load into it", where)

            def land(targets=targets, plan=plan, tmap=tmap, gaddr=gaddr, coords=coords, boff=boff, w=w,
                     nbytes=nbytes, doff=doff, known=known, who=who, where=where, op=None):
                gview = _gmem_view(w, ins, gaddr, tmap.global_extent_bytes, "the TMA load's tensor")
                a2, v2 = plan[0], tma_plan_values(gview, tmap, plan)   # the bytes as they are when it lands
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
                    if a2.size and c.__dict__.get("async_reads"):
                        order.require_write_ordered(M, c, int(a2.min()), int(a2.max()) + 1, known, f"the TMA load issued by {who}",
                                          where, "lands in")
                    c.smem[a2] = v2
                    c.smem_writer[a2] = -1
                    bc = bcta if pair and not multicast else c
                    if bc.exited:
                            raise PeerExited(f"a .cta_group::2 TMA load issued by {w.who()} at {M.where(ins)} completes "
                                         f"on the mbarrier of cluster rank {bc.rank}, which has already exited")
                    bar = bc.mbarriers.get(boff)
                    if bar is None:
                        raise ProtocolError(
                            f"a TMA load issued by {w.who()} at {M.where(ins)} completes on shared offset 0x{boff:x} "
                            f"({M.prog.shared_name(boff)}) of CTA rank {bc.rank}, where no mbarrier is initialised")
                    order.landed(c, op, bc, boff, bar.phase)
                    order.signal(bc, boff, bar, known, None, lambda bar=bar: bar.complete_tx(nbytes))
                    M.note(w, f"TMA bytes land in rank {c.rank}")
            names = ",".join(str(c.rank) for c in targets)
            op_box = []
            land0 = land

            def land(land0=land0, op_box=op_box):
                land0(op=op_box[0])
            op = M.schedule(M.latency(nbytes), land,
                       f"TMA load of {nbytes} bytes from box {coords} to CTA rank(s) {names} "
                       + " ".join(f"@{(bcta if pair and not multicast else c).rank}:{boff}" for c in targets))
            op_box.append(op)
            if top >= 0:
                for c in targets:
                    order.add_async_write(c, lo, top + 1, op, "the TMA load", where, who,
                                          bar=(bcta if pair and not multicast else c, boff))
            M.note(w, f"TMA load {coords}")
    return body


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
    return body


def _bulk_wait(ctx, ins, read):
    rn = bits_reader(ctx, ins.args[0], "u32")

    def body(w, group, em):
        c = w.cta
        M = w.machine
        n = int(rn(w)[em].max()) if em.any() else 0
        ok = True
        learned = []
        for lane in np.nonzero(em)[0]:
            t = int(w.tid[lane])
            groups = c.bulk.get(t, [])
            complete, seq, older = older_groups(groups, n, M.inflight_ops)
            if not complete:
                ok = False
                continue
            if seq is not None:
                learned.append((t, seq))
            c.bulk[t] = groups[len(older):]
        if ok:
            for t, seq in learned:   # the waiting thread knows; its warp-mates learn it at a __syncwarp
                order.learn_lanes(w, w.tid == t, ("bulk", c.linear, t), seq)
            w.pc[group] += 1
        else:
            M.spin(w, ("bulk", f"cp.async.bulk.wait_group{'.read' if read else ''} {n} at {M.where(ins)}: "
                                f"more than {n} bulk groups of this thread are still in flight"), group)
    return body


def _tma_store(ctx, ins, mods, reduce):
    from ....epilogue.store import add_elements, smem_box_footprint, smem_window
    from ....hw.dtypes import element_type
    tens, src = ins.args[0], ins.args[1]
    tmap_r = bits_reader(ctx, tens[1], "u64")
    coords_r = [bits_reader(ctx, c, "s32") for c in tens[2]]
    src_r = address(ctx, src)
    if reduce not in (None, "add"):
        raise UnsupportedInstruction(f"`{ins.op}`: only the .add reduction is modelled")

    def body(w, m):
        M = w.machine
        t, s = tmap_r(w), src_r(w)
        cs = [r(w) for r in coords_r]
        for lane in np.nonzero(m)[0]:
            tmap, gaddr = _read_tmap(w, ins, int(t[lane]))
            coords = tuple(int(c[lane]) for c in cs)
            c, soff = M.mem.cta_of_cluster_addr(w, int(s[lane]), "the TMA store's SMEM source", ins, own=True)
            foot = smem_box_footprint(tmap)
            if soff % 128 or soff + foot > c.smem.size:
                raise EmuFault(f"{w.who()} at {M.where(ins)}: the store's SMEM source [0x{soff:x}, 0x{soff + foot:x}) "
                               f"must be 128-byte aligned and inside the CTA's {c.smem.size} bytes")
            M.mem.async_reads_smem(c, soff, foot, f"the TMA {'reduce-add' if reduce else 'store'} at {M.where(ins)}",
                               w.who())
            what = f"the TMA {'reduce-add' if reduce else 'store'}"
            order.require_async_read_ordered(M, c, soff, soff + foot, w.known, {w.wid}, what, M.where(ins),
                                   w.who(np.arange(32) == lane))
            order.require_lane_order(M, c, soff, soff + foot, w, int(lane), what, M.where(ins),
                                   w.who(np.arange(32) == lane))
            order.require_read_ordered(M, c, soff, soff + foot, w.known, f"{what} issued by {w.who(np.arange(32) == lane)}",
                             M.where(ins))
            try:   # the rules, checked at issue (tma_store_writes in two steps: where, then the bytes)
                addr, off, inb = _store_plan(tmap, coords, soff)
                smem_window(c.smem, soff, 0, addr)
            except ValueError as e:
                raise EmuFault(f"{w.who()} at {M.where(ins)}: {e}") from None

            def land(tmap=tmap, gaddr=gaddr, coords=coords, soff=soff, c=c, addr=addr, off=off, inb=inb):
                from ....epilogue.store import store_geometry
                # a store writes whole 16-byte granules: the last row's granule may pass the last element
                g = store_geometry(tmap)
                ext = g.extent + (g.row_limit - g.shape[0]) * g.elem
                gview = _gmem_view(w, ins, gaddr, ext, "the TMA store's tensor")
                vals = smem_window(c.smem, soff, 0, addr)[inb]   # the SMEM bytes as they are when it lands
                if reduce is None:
                    gview[off] = vals
                else:
                    eb = element_type(tmap.dtype).bytes
                    from ....epilogue.rules import raw_dtype
                    raw = raw_dtype(tmap.dtype)
                    eo = off.reshape(-1, eb)[:, 0]
                    idx = eo[:, None] + np.arange(eb)
                    old = gview[idx].copy().view(raw).reshape(-1)
                    new = vals.reshape(-1, eb).copy().view(raw).reshape(-1)
                    gview[idx] = add_elements(old, new, tmap.dtype).astype(raw).view(np.uint8).reshape(-1, eb)
            op = M.schedule(M.latency(foot), land, f"TMA {'reduce-add' if reduce else 'store'} of box {coords}")
            _bulk_group_add(w, lane, op)
            order.add_region(c, soff, soff + foot, ("bulk", c.linear, int(w.tid[lane])), op,
                             f"the TMA {'reduce-add' if reduce else 'store'}", M.where(ins), w.who(np.arange(32) == lane))
            M.note(w, f"TMA store {coords}")
    return body


def _bulk_copy(ctx, ins, mods):
    """cp.async.bulk (no tensor map): global -> shared::cluster with complete_tx, shared::cta ->
    global in a bulk group, shared::cta -> shared::cluster with complete_tx."""
    args = ins.args
    dst, src, rsize = address(ctx, args[0]), address(ctx, args[1]), bits_reader(ctx, args[2], "u32")
    spaces = [m for m in mods if m.startswith("shared") or m == "global"]
    to_global = spaces and spaces[0] == "global"
    mbar = address(ctx, args[3]) if not to_global and len(args) > 3 else None
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
                c, soff = M.mem.cta_of_cluster_addr(w, int(s[lane]), "the bulk copy's SMEM source", ins, own=True)
                M.mem.async_reads_smem(c, soff, nb, f"the bulk copy at {M.where(ins)}", w.who())
                order.require_async_read_ordered(M, c, soff, soff + nb, w.known, {w.wid}, "the bulk copy to global memory",
                                       M.where(ins), w.who(np.arange(32) == lane))
                order.require_lane_order(M, c, soff, soff + nb, w, int(lane), "the bulk copy to global memory",
                                       M.where(ins), w.who(np.arange(32) == lane))
                gaddr = int(d[lane])

                def land(c=c, soff=soff, gaddr=gaddr, nb=nb):
                    M.memory.write(gaddr, c.smem[soff:soff + nb], "bulk copy to global")
                op = M.schedule(M.latency(nb), land, f"bulk copy of {nb} bytes to global")
                _bulk_group_add(w, lane, op)
                order.add_region(c, soff, soff + nb, ("bulk", c.linear, int(w.tid[lane])), op,
                                 "the bulk copy to global memory", M.where(ins), w.who(np.arange(32) == lane))
                continue
            dcta, doff = M.mem.cta_of_cluster_addr(w, int(d[lane]), "bulk copy destination", ins)
            bcta, boff = M.mem.cta_of_cluster_addr(w, int(b[lane]), "bulk copy mbarrier", ins)
            from_shared = "global" not in spaces
            saddr = int(s[lane])
            if from_shared:
                saddr = M.mem.cta_of_cluster_addr(w, saddr, "the bulk copy's SMEM source", ins, own=True)[1]

            known = order.snapshot(w)
            who = w.who(np.arange(32) == lane)

            def land(dcta=dcta, doff=doff, bcta=bcta, boff=boff, nb=nb, saddr=saddr, from_shared=from_shared,
                     known=known, who=who):
                if from_shared:
                    data = w.cta.smem[saddr:saddr + nb].copy()
                else:
                    data = M.memory.read(saddr, nb, "bulk copy from global")
                if dcta.exited:
                    raise ProtocolError(f"a bulk copy issued by {w.who()} at {M.where(ins)} writes into cluster rank "
                                        f"{dcta.rank}, which has exited")
                order.require_write_ordered(M, dcta, doff, doff + nb, known, f"the bulk copy issued by {who}", M.where(ins),
                                  "lands in")
                dcta.smem[doff:doff + nb] = data
                dcta.smem_writer[doff:doff + nb] = -1
                bar = bcta.mbarriers.get(boff)
                if bar is None:
                    raise ProtocolError(f"a bulk copy issued by {w.who()} at {M.where(ins)} completes on shared offset "
                                        f"0x{boff:x}, where no mbarrier is initialised")
                order.signal(bcta, boff, bar, known, None, lambda: bar.complete_tx(nb))
            M.schedule(M.latency(nb), land, f"bulk copy of {nb} bytes @{bcta.rank}:{boff}")
    return body


def older_groups(groups, n, inflight):
    """`wait_group n` of one thread (bulk and cp.async alike): PTX ISA, every group but the n most recent must
    be complete, not merely n groups in flight. (all complete?, the sequence number of the newest operation
    they hold or None, those older groups)."""
    older = groups[:len(groups) - n] if n else groups
    if any(op in inflight for g in older for op in g):
        return False, None, older
    done = [op for g in older for op in g]
    return True, (max(done) if done else None), older
