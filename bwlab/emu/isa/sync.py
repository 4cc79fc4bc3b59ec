"""CTA- and cluster-level synchronisation and atomics (PTX ISA, "Parallel Synchronization and
Communication Instructions"): bar / barrier, membar / fence, atom, red."""
from __future__ import annotations

import numpy as np

from ..values import WIDTH
from .. import order
from .operands import addr_reader, bits_reader, state_space, types, value_dtype, writer


def bar_warp_sync(ctx, ins, base, mods):
    """bar.warp.sync membermask: the table's member-mask rule brings the lanes together before it runs; it
    orders the lanes' earlier memory accesses before their later ones (`order.warp_synced`)."""
    return lambda w, m: order.warp_synced(w)


def bar(ctx, ins, base, mods):
    """bar{.cta}.sync / .arrive / .red, barrier{.cta}.*: the CTA's named barriers (`sync.Barriers`)."""
    red = "red" in mods
    arrive = "arrive" in mods
    args = list(ins.args)
    dst = None
    if red:
        dst = args.pop(0)
    rid = bits_reader(ctx, args[0], "u32")
    rcount = bits_reader(ctx, args[1], "u32") if len(args) > (2 if red else 1) else None
    rc = bits_reader(ctx, args[-1], "pred") if red else None
    redop = next((m for m in mods if m in ("popc", "and", "or")), None)
    wd = writer(ctx, dst, "u32" if redop == "popc" else "pred") if red else None

    def body(w, group, em):
        bid = int(rid(w)[em].max()) if em.any() else 0
        count = int(rcount(w)[em].max()) if (rcount is not None and em.any()) else None
        w.machine.sync.cta_barrier(w, group, em, bid, count, arrive, (redop, rc, wd))
    return body


def barrier(ctx, ins, base, mods):
    """barrier.sync / .arrive / .red (bar.* spelled the long way) and barrier.cluster.arrive / .wait."""
    if "cluster" in mods:
        arrive = "arrive" in mods

        def body(w, group, em):
            w.machine.sync.cluster_barrier(w, group, em, arrive, ins)
        return body
    return bar(ctx, ins, base, mods)


def fence(ctx, ins, base, mods):
    """fence.proxy.async (generic-proxy writes made visible to the async proxy), fence.mbarrier_init;
    the other fences and membar order memory, which this sequentially consistent emulator always is."""
    if "proxy" in mods and "async" in mods:
        def body(w, m):
            w.machine.mem.fence_proxy_async(w, m)
            w.machine.sync.fence_mbarrier_init(w)
        return body
    if "mbarrier_init" in mods:
        return lambda w, m: w.machine.sync.fence_mbarrier_init(w)
    return lambda w, m: None


def atom(ctx, ins, base, mods):
    """atom / red: one lane at a time, in lane order (integer add: bwlab.emu.atomics, all lanes at once)."""
    from ..atomics import add_global, add_own_shared   # (at decode: the memory system imports this package)
    space = state_space(mods)
    ty = types(mods)[-1]
    opname = next(m for m in mods if m in ("add", "cas", "exch", "min", "max", "and", "or", "xor", "inc", "dec"))
    red = base == "red"
    args = ins.args
    dst = None if red else args[0]
    a = args[0] if red else args[1]
    _, addr = addr_reader(ctx, a)
    rs = [bits_reader(ctx, x, ty) for x in args[(1 if red else 2):]]
    wr = writer(ctx, dst, ty) if dst is not None else None
    n = WIDTH[ty] // 8
    dt = value_dtype(ty)
    from .float import atomic_add   # float add: the GPU's rounding and subnormal rules (isa/float.py)
    fadd = atomic_add(ty, mods) if opname == "add" and ty in ("f16", "bf16", "f32", "f64", "f16x2", "bf16x2") else None

    fast = opname == "add" and space in ("shared", "global") and ty in ("u32", "s32", "u64", "s64", "b32", "b64")
    shared = space == "shared"

    def body(w, m):
        ad = addr(w)
        vals = [r(w) for r in rs]
        if fast:
            mem = w.machine.mem
            old = (add_own_shared if shared else add_global)(mem, w, ad, vals[0].astype(dt), m)
            if old is not None:
                if wr is not None:
                    wr(w, old, m)
                return
        old_all = np.zeros(32, dt)
        for lane in np.nonzero(m)[0]:
            one = np.zeros(32, bool)
            one[lane] = True
            old = w.machine.mem.read(w, space, ad, n, one, ins)[lane].view(dt)[0]
            b = vals[0][lane]
            with np.errstate(all="ignore"):
                if opname == "add":
                    new = fadd(old, b) if fadd else dt(old + b)
                elif opname == "cas":
                    new = vals[1][lane] if old == b else old
                elif opname == "exch":
                    new = b
                elif opname == "min":
                    new = min(old, b)
                elif opname == "max":
                    new = max(old, b)
                elif opname == "and":
                    new = old & b
                elif opname == "or":
                    new = old | b
                elif opname == "xor":
                    new = old ^ b
                elif opname == "inc":
                    new = dt(0) if old >= b else dt(old + 1)
                else:
                    new = b if (old == 0 or old > b) else dt(old - 1)
            data = np.zeros((32, n), np.uint8)
            data[lane] = np.array([new], dt).view(np.uint8)
            w.machine.mem.write(w, space, ad, data, one, ins)
            old_all[lane] = old
        if wr is not None:
            wr(w, old_all, m)
    return body
