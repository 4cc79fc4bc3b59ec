"""The trace of the trip: after each hop, the bytes where the data now lives and the instruction that
moved it. One `Trace` type whichever tier made it (model, hybrid, hardware), so two traces compare
array by array and a recording of one replays against another.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..case import CheckFailed, CheckResult, compare
from ..datapath import Hop
from .problem import SMEM_A, SMEM_B, SMEM_D, FlowProblem

__all__ = ["Hop", "HOPS", "HOP_NAMES", "Trace", "TraceCheck", "hop_of"]


def _hop(name, title, instruction, who, src, dst, keys, ptx) -> Hop:
    return Hop(src, dst, instruction, who, "06_full_flow", name, title, keys, ptx)


HOPS = (
    _hop("gmem", "A and B in global memory", "(host copy)", "the host", "host", "GMEM",
         ("a_gmem", "b_gmem"), ()),
    _hop("tma_load", "TMA load of A and B (128B swizzle)",
         "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes",
         "one elected thread; the TMA engine; every thread waits on the mbarrier", "GMEM", "SMEM",
         ("smem_a", "smem_b"),
         ("mbarrier.arrive.expect_tx", "cp.async.bulk.tensor.2d.shared")),
    _hop("mma", "tcgen05.mma K loop (4 x K=16)", "tcgen05.mma.cta_group::1.kind::f16",
         "one elected thread; the tensor core", "SMEM", "TMEM", ("tmem",),
         ("tcgen05.mma", "wgmma.fence", "wgmma.mma_async", "wgmma.commit_group")),
    _hop("commit", "tcgen05.commit to an mbarrier, and its wait",
         "tcgen05.commit.cta_group::1.mbarrier::arrive::one", "the issuing thread; every thread waits",
         "TMEM", "TMEM (complete)", ("mma_done",), ("tcgen05.commit", "wgmma.wait_group")),
    _hop("tmem_ld", "tcgen05.ld 32x32b (TMEM -> registers)", "tcgen05.ld.sync.aligned.32x32b.x32.b32",
         "every warp, its own lane quarter", "TMEM", "RMEM", ("regs",), ("tcgen05.ld", "tcgen05.wait::ld")),
    _hop("st_shared", "st.shared (registers -> swizzled D tile)", "st.shared.v4.b32",
         "every thread, its own row", "RMEM", "SMEM", ("smem_d",), ("st.shared.v4",)),
    _hop("fence", "fence.proxy.async.shared::cta and a barrier", "fence.proxy.async.shared::cta",
         "every thread that wrote, then bar.sync", "SMEM", "SMEM (visible to the async proxy)", (),
         ("fence.proxy.async",)),
    _hop("tma_store", "TMA store of D (four boxes)", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
         "one elected thread; the TMA engine", "SMEM", "GMEM", ("gmem_d",),
         ("cp.async.bulk.tensor.2d.global", "cp.async.bulk.commit_group", "cp.async.bulk.wait_group")),
)
HOP_NAMES = tuple(h.name for h in HOPS)


def hop_of(name: str) -> Hop:
    for h in HOPS:
        if h.name == name:
            return h
    raise KeyError(f"no hop {name!r}; hops: {', '.join(HOP_NAMES)}")


class TraceCheck(CheckResult):
    """The flow's form of `CheckResult`: array-by-array comparison of two traces, one CheckResult per
    array (`results`, in the order of the trip; `hops[i]` names the hop of `results[i]`). True when all
    agree; `first` is the first difference along the trip; prints one line per array."""

    def __init__(self, results, hops=None, source: str = ""):
        self.results = list(results)
        self.hops = list(hops or [])
        self.stage, self.what, self.unit = "flow", "trace of the whole trip", "element"
        self.source = source or (self.results[0].source if self.results else "")
        self.expected = self.got = None
        self.error, self.seconds = "", None

    @property
    def compared(self) -> int:
        return sum(r.compared for r in self.results)

    @property
    def differing(self) -> int:
        return sum(r.differing for r in self.results)

    @property
    def first(self):
        bad = self.first_difference()
        return None if bad is None else bad[1].first

    @property
    def hint(self) -> str:
        bad = self.first_difference()
        return "" if bad is None else bad[1].hint

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return "\n".join(str(r) for r in self.results)

    def __repr__(self) -> str:
        return f"TraceCheck({len(self.results)} arrays, {self.differing} of {self.compared} differ)"

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))

    def first_difference(self):
        """(hop, CheckResult) of the first array along the trip that differs, or None."""
        for i, r in enumerate(self.results):
            if not r.ok:
                return (self.hops[i] if i < len(self.hops) else None), r
        return None

    def assert_ok(self) -> "TraceCheck":
        if not self.ok:
            raise CheckFailed(str(self))
        return self


@dataclass
class Trace:
    """The bytes after every hop (`arrays`, keyed as `HOPS` says), the tier that produced them and a
    line saying where each hop's bytes came from (`sources`: 'GPU' or 'model' per hop)."""

    tier: str
    problem: FlowProblem
    arrays: dict
    sources: dict = field(default_factory=dict)

    def __post_init__(self):
        missing = [k for h in HOPS for k in h.keys if k not in self.arrays]
        if missing:
            raise ValueError(f"a trace holds every hop's arrays; missing: {missing}")

    # ---- reading it ----------------------------------------------------------------------------
    def at(self, hop: str) -> dict:
        """The arrays where the data is after `hop` (a hop that moves nothing shows the previous one's)."""
        i = HOP_NAMES.index(hop_of(hop).name)
        while not HOPS[i].keys:
            i -= 1
        return {k: self.arrays[k] for k in HOPS[i].keys}

    @property
    def result(self) -> np.ndarray:
        """D (M x N float32) as it reached global memory."""
        return np.asarray(self.arrays["gmem_d"])[:self.problem.M].view(np.float32)

    def sizes(self) -> dict:
        """What each hop's byte count should be, and why: {hop: (bytes, derivation)}."""
        p = self.problem
        ab, d = 2 * p.M * p.K * 2, p.M * p.N * 4
        return {"gmem": (ab, f"2 x {p.M}x{p.K} x 2 (A, B f16)"), "tma_load": (ab, f"2 x {p.M}x{p.K} x 2 (A, B f16)"),
                "mma": (d, f"{p.M}x{p.N} x 4 (D f32)"), "commit": (4, "1 x 4 (the mma_done flag)"),
                "tmem_ld": (d, f"{p.M} threads x {p.N} regs x 4"), "st_shared": (d, f"4 boxes x {p.M}x{p.N // 4} x 4"),
                "fence": (0, "(moves nothing)"), "tma_store": (d + 4 * p.N, f"{p.M}x{p.N} x 4 + {4 * p.N} guard row")}

    def table(self) -> str:
        """One line per hop: where the data is, how many bytes beside the count expected (and why), who
        produced them, the instruction. The store's count includes the guard row after D in GMEM, which
        the check proves the store left alone."""
        out = [f"{'hop':<10s} {'where':<34s} {'bytes':>6s}  {'expected':<36s} {'from':<6s} instruction"]
        sizes = self.sizes()
        for h in HOPS:
            nbytes = sum(np.asarray(self.arrays[k]).nbytes for k in h.keys)
            want, why = sizes[h.name]
            out.append(f"{h.name:<10s} {h.where:<34s} {nbytes:6d}  {f'{want:5d} = {why}':<36s} "
                       f"{self.sources.get(h.name, '-'):<6s} {h.instruction}")
        return "\n".join(out)

    # ---- where one element is --------------------------------------------------------------------
    def locate(self, m: int, n: int) -> list:
        """Where D[m][n] (and what it is made of) sits after each hop: [(hop, place, raw value)]."""
        from ..tma.model import tma_load_writes
        p = self.problem
        m, n = int(m), int(n)
        if not (0 <= m < p.M and 0 <= n < p.N):
            raise ValueError(f"D is {p.M} x {p.N}; ({m}, {n}) is outside it")
        a16, _ = p.gmem_inputs()
        addr, _ = tma_load_writes(a16, p.tmap_a, (0, 0), SMEM_A)
        a_row = sorted(set(int(x) & ~15 for x in addr.reshape(p.M, -1)[m]))
        t = p.d_tile
        d_addr = int(t.address(m, n))
        w = lambda k: np.asarray(self.arrays[k])  # noqa: E731
        return [
            ("gmem", f"A row {m} at GMEM bytes {m * p.K * 2}..{m * p.K * 2 + p.K * 2 - 1}, B row {n} at "
                     f"{n * p.K * 2}..{n * p.K * 2 + p.K * 2 - 1}", None),
            ("tma_load", f"A row {m}: SMEM 16-byte chunks at " + ", ".join(f"0x{c:04x}" for c in a_row)
                         + f" (row {m} of the 128B swizzle: chunk j at j ^ {m % 8})", None),
            ("mma", f"TMEM lane {m}, column {n}", int(w("tmem")[m, n])),
            ("commit", "TMEM lane {m}, column {n}: the MMAs that wrote it have completed".format(m=m, n=n),
             int(w("tmem")[m, n])),
            ("tmem_ld", f"thread {m} (warp {m // 32}, lane {m % 32}), register {n} "
                        f"(load {n // 32}, register {n % 32} of its .x32)", int(w("regs")[m, n])),
            ("st_shared", f"SMEM 0x{d_addr:05x}: box {n // t.box_cols}, row {m}, column {n % t.box_cols} "
                          f"(chunk {(n % t.box_cols) // 4} -> {((n % t.box_cols) // 4) ^ (m % 8)})",
             int(w("smem_d")[d_addr - SMEM_D:d_addr - SMEM_D + 4].view(np.uint32)[0])),
            ("fence", f"the same SMEM 0x{d_addr:05x}, now ordered before the async proxy's reads",
             int(w("smem_d")[d_addr - SMEM_D:d_addr - SMEM_D + 4].view(np.uint32)[0])),
            ("tma_store", f"GMEM D[{m}][{n}] at byte {4 * (m * p.N + n)}",
             int(w("gmem_d").view(np.uint32)[m, n])),
        ]

    # ---- comparing -------------------------------------------------------------------------------
    def _where(self, key: str):
        p = self.problem
        t = p.d_tile

        def smem(base, tmap, gm):
            from ..tma.case import TmaLoad
            case = TmaLoad(gm, tmap, (0, 0), base)
            return lambda idx: case.where(idx)

        a16, b16 = p.gmem_inputs()
        if key == "smem_a":
            return smem(SMEM_A, p.tmap_a, a16)
        if key == "smem_b":
            return smem(SMEM_B, p.tmap_b, b16)
        if key == "tmem":
            return lambda i: f"TMEM lane {i[0]}, column {i[1]} (D[{i[0]}][{i[1]}])"
        if key == "regs":
            return lambda i: (f"thread {i[0]} (warp {i[0] // 32}, lane {i[0] % 32}), register {i[1]} "
                              f"(D[{i[0]}][{i[1]}])")
        if key == "smem_d":
            def d(i):
                r, c = t.chunk_of_address(SMEM_D + (i[0] & ~15))
                return f"SMEM 0x{SMEM_D + i[0]:05x}: D row {int(r)}, columns {int(c)}..{int(c) + 3}"
            return d
        if key == "gmem_d":
            return lambda i: (f"D[{i[0]}][{i[1]}]" if i[0] < p.M else f"guard row, column {i[1]} "
                              "(the store must not write it)")
        return None

    def compare(self, other: "Trace", source: str = "") -> TraceCheck:
        """Every array of `self` (expected) against `other` (got), bitwise, in the hop's words."""
        out, hops = [], []
        for h in HOPS:
            for k in h.keys:
                hops.append(h.name)
                out.append(compare(np.asarray(self.arrays[k]), np.asarray(other.arrays[k]), stage="flow",
                                   what=f"after {h.name} ({h.where}): {k}", where=self._where(k),
                                   unit="byte" if k.startswith("smem") else "element",
                                   source=source or f"{other.tier}: {other.sources.get(h.name, '?')}"))
        return TraceCheck(out, hops)

    # ---- recordings ---------------------------------------------------------------------------------
    def to_arrays(self, prefix: str = "trace.") -> dict:
        return {prefix + k: np.asarray(v) for k, v in self.arrays.items()}

    @classmethod
    def from_arrays(cls, arrays: dict, tier: str, problem: FlowProblem, sources=None,
                    prefix: str = "trace.") -> "Trace":
        got = {k[len(prefix):]: np.asarray(v) for k, v in arrays.items() if k.startswith(prefix)}
        return cls(tier, problem, got, dict(sources or {}))
