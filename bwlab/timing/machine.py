"""A GPU described for the timing model: every number with its value, its range and its source.

    from bwlab.timing import machine
    m = machine.load("h100_sxm")
    m.sms.value, m.dram_bw.source          # 132, 'NVIDIA H100 datasheet ...'
    m.at("lo")                             # every uncertain number at the low end of its range

A `Param` is (value, lo, hi, unit, source). A number a datasheet states has lo == hi == value; a number
nobody publishes for this chip (a latency, an issue rate) carries the range the sources support, and
its `value` is the point the prediction uses. Numbers measured by this project name the file under
docs/results/ that holds the measurement and its command.
"""
from __future__ import annotations

import dataclasses
import importlib
from dataclasses import dataclass

__all__ = ["Param", "Machine", "load", "NAMES"]

NAMES = ("h100_sxm", "h200", "b200")
# the numbers for which more is faster (the others, latencies and costs, are faster when smaller)
FASTER_WHEN_HIGHER = {"sms", "max_clock_mhz", "smem_per_sm", "l2_bytes", "dram_bw", "l2_bw", "sm_l2_port",
                      "smem_bw", "mma_flops", "lsu_queue", "st_l2_bw", "kslice_jitter"}


@dataclass(frozen=True)
class Param:
    value: float
    lo: float
    hi: float
    unit: str
    source: str

    def __post_init__(self):
        if not self.lo <= self.value <= self.hi:
            raise ValueError(f"a machine number must lie in its range: {self.value} not in [{self.lo}, {self.hi}] "
                             f"({self.unit}; {self.source})")
        if not self.source:
            raise ValueError("every machine number names its source")

    @property
    def known(self) -> bool:
        return self.lo == self.hi

    def pick(self, which: str, faster_when_higher: bool = True) -> float:
        """'value', 'lo', 'hi', or 'fast' / 'slow': the end of the range that makes a kernel faster / slower."""
        if which in ("fast", "slow"):
            which = "hi" if (which == "fast") == faster_when_higher else "lo"
        if which not in ("value", "lo", "hi"):
            raise ValueError(f"a machine number is picked by 'value', 'lo', 'hi', 'fast' or 'slow', not {which!r}")
        return {"value": self.value, "lo": self.lo, "hi": self.hi}[which]


def fixed(value, unit, source) -> Param:
    return Param(value, value, value, unit, source)


@dataclass(frozen=True)
class Machine:
    """The numbers the timing model reads. Cycles are SM cycles; bandwidths that the SM clock does not
    scale (DRAM, L2) are in bytes per second, the others in bytes per SM cycle."""
    name: str
    arch: str                 # sm_90a / sm_100a
    sms: Param
    max_clock_mhz: Param
    smem_per_sm: Param        # bytes
    l2_bytes: Param
    dram_bw: Param            # bytes/s, the whole chip (reads; what a streaming kernel reaches)
    l2_bw: Param              # bytes/s, the whole chip (L2 -> SMs, hits; the L2 keeps its clock when the SMs slow down)
    sm_l2_port: Param         # bytes per SM cycle one SM can take in from L2
    smem_bw: Param            # bytes per cycle per SM
    mma_flops: Param          # dense bf16 FLOP per cycle per SM (the tensor pipes of the 4 sub-partitions together)
    mma_latency: Param        # cycles from a wgmma / tcgen05.mma's start to its result
    tma_latency: Param        # cycles from a TMA load's issue to its mbarrier's completion, L2 hit, small box
    tma_issue: Param          # cycles the SM's TMA unit needs between two box loads
    dram_latency: Param       # extra cycles of a miss that goes to DRAM
    mbar_wake: Param          # cycles from an mbarrier phase completing to a waiting warp running again
    mbar_remote: Param        # extra cycles of an arrive on a peer CTA's mbarrier (DSMEM)
    mbar_try: Param           # cycles a try_wait costs its warp when the phase it waits for has already completed
    mbar_arrive: Param        # cycles one mbarrier takes per arrival (arrivals on one barrier are applied one at a time)
    bar_sync: Param           # cycles from the last arrival at bar.sync to the warps running again
    cluster_sync: Param       # the same for barrier.cluster
    alu_cpi: Param            # mean cycles between two instructions of one warp (dependences included)
    smem_latency: Param       # ld.shared, cycles
    gmem_latency: Param       # ld.global L2 hit, cycles
    gst_sector: Param         # cycles of the SM's load/store path per 32-byte sector of a global access (the SM alone)
    st_l2_bw: Param           # bytes/s of 32-byte sectors of direct global stores the L2 takes from all SMs together
    gst_warp: Param           # cycles one warp's global store of one 32-byte sector holds that warp
    lsu_queue: Param          # cycles of queued global-store work before a storing warp stalls
    launch_us: Param          # microseconds a kernel launch adds (grid start and drain)
    kslice_jitter: Param      # spread (sigma) of one k-slice's time as a fraction of it, independent from k-slice to
                              # k-slice: how fast the SMs' tiles drift apart (bwlab.timing.gemm.drift_storing)
    notes: str = ""

    def at(self, which: str = "value") -> dict:
        """{field: number} with every Param at `which`: 'value', 'lo', 'hi', or 'fast' / 'slow' (every
        uncertain number at the end of its range that makes a kernel faster / slower: the prediction's range)."""
        out = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            out[f.name] = v.pick(which, f.name in FASTER_WHEN_HIGHER) if isinstance(v, Param) else v
        return out

    def params(self):
        return [(f.name, getattr(self, f.name)) for f in dataclasses.fields(self)
                if isinstance(getattr(self, f.name), Param)]

    def describe(self) -> str:
        lines = [f"{self.name} ({self.arch})"]
        for name, p in self.params():
            rng = "" if p.known else f" [{p.lo:g} .. {p.hi:g}]"
            lines.append(f"  {name:14s} {p.value:g}{rng} {p.unit}  -- {p.source}")
        return "\n".join(lines)


def load(name: str) -> Machine:
    if name not in NAMES:
        raise KeyError(f"no machine description {name!r}; there are {', '.join(NAMES)}")
    return importlib.import_module(f"{__package__}.machines.{name}").MACHINE
