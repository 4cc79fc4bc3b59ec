"""The special registers (PTX ISA, "Special Registers"): %tid, %ctaid, %clusterid, %laneid, %clock64, ...,
as a warp's 32 lanes see them (uint64)."""
from __future__ import annotations

import numpy as np

from .errors import EmuError

__all__ = ["special_value"]

U64 = np.uint64


def special_value(w, name: str) -> np.ndarray:
    """The 32 lanes' value (uint64) of special register `name` for warp `w` (Warp.special keeps the ones that
    do not change during a launch)."""
    c = w.cta
    m = w.machine
    t = w.tid
    bx, by, bz = m.block
    if name.startswith("%tid"):
        ax = name[-1]
        v = {"x": t % bx, "y": (t // bx) % by, "z": t // (bx * by)}[ax]
        return v.astype(U64)
    if name.startswith("%ntid"):
        return np.full(32, m.block["xyz".index(name[-1])], U64)
    if name.startswith("%ctaid"):
        return np.full(32, c.ctaid["xyz".index(name[-1])], U64)
    if name.startswith("%nctaid"):
        return np.full(32, m.grid["xyz".index(name[-1])], U64)
    if name.startswith("%cluster_ctaid"):
        return np.full(32, c.cluster_ctaid["xyz".index(name[-1])], U64)
    if name.startswith("%cluster_nctaid"):
        return np.full(32, m.cluster_dims["xyz".index(name[-1])], U64)
    if name.startswith("%clusterid"):
        return np.full(32, c.cluster.cid["xyz".index(name[-1])], U64)
    if name.startswith("%nclusterid"):
        ax = "xyz".index(name[-1])
        return np.full(32, m.grid[ax] // m.cluster_dims[ax], U64)
    if name == "%cluster_ctarank":
        return np.full(32, c.rank, U64)
    if name == "%cluster_nctarank":
        return np.full(32, c.cluster.size, U64)
    if name == "%is_explicit_cluster":
        return np.full(32, int(m.explicit_cluster), U64)
    if name == "%laneid":
        return np.arange(32, dtype=U64)
    if name == "%warpid":
        return np.full(32, w.wid, U64)
    if name == "%nwarpid":
        return np.full(32, 64, U64)
    if name == "%smid":
        return np.full(32, c.sm, U64)
    if name == "%gridid":
        return np.full(32, c.linear % 132, U64)
    if name == "%nsmid":
        return np.full(32, m.gpu.sms, U64)
    if name in ("%globaltimer", "%clock64"):
        return np.full(32, m.clock + m.time_offset, U64)
    if name == "%globaltimer_lo" or name == "%clock":
        return np.full(32, (m.clock + m.time_offset) & 0xFFFFFFFF, U64)
    if name in ("%globaltimer_hi", "%clock_hi"):
        return np.full(32, (m.clock + m.time_offset) >> 32, U64)
    lane = np.arange(32, dtype=U64)
    if name.startswith("%lanemask"):
        kind = name.split("_")[1]
        one = U64(1) << lane
        return {"eq": one, "lt": one - U64(1), "le": (one << U64(1)) - U64(1),
                "gt": (~((one << U64(1)) - U64(1))) & U64(0xFFFFFFFF),
                "ge": (~(one - U64(1))) & U64(0xFFFFFFFF)}[kind]
    if name == "%dynamic_smem_size":
        return np.full(32, m.dynamic_smem, U64)
    if name in ("%total_smem_size", "%aggr_smem_size"):
        return np.full(32, c.smem.size, U64)
    raise EmuError(f"special register {name} is not modelled")
