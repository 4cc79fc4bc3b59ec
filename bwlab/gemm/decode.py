"""The decode rung of the Hopper ladder (cuda_src/gemm_sm90/sd_swap_ab.cu): C = A B^T for M <= 256 rows
of A, where the time is reading B from HBM, not the math.

    from bwlab.gemm import decode, runner
    a, b = runner.random_operands(128, 8192, 8192)
    launch = decode.prepare(decode.SWAP_AB, a, b)        # tensor maps, ring depth, the kernel
    launch(); print(runner.check(a, b, launch.c))

The kernel computes C^T = B A^T (swap-AB): B's rows fill wgmma's 64-row M, A's M rows are wgmma's N
(16, 32, 64, 128 or 256, the smallest that holds M; `Rung.mt`). Each CTA streams its rows of B once
through a TMA ring as deep as the SMEM holds (`Rung.stages`). Its compile-time shape for each MT
(`Rung.table`, a `Config`: consumer warpgroups (1, 2 or 4), K pieces across a cluster of 2 or 4 added
through DSMEM, boxes of 64 K per stage, and at M <= 128 each stage handed back to the producer as soon as
the consumer's own wgmma on it are done, `Config.early`) is the fastest of the variants probed on an H200
(docs/results/decode_probe_h200.txt). It is kept apart from `ladder.ALL_STEPS` (its launch differs) and
measured at decode shapes under the sustained protocol (docs/results/gemm_protocol_decode_h200.txt).

`prepare(..., pdl=True)`: programmatic dependent launch (bwlab.pdl): B for the first pass round the ring
before the grid ahead has finished, A and C after (griddepcontrol.wait); 3-10 % faster on the H200 (the
report's '(PDL)' rows). The emulator runs one grid at a time: griddepcontrol is a no-op there.

The options the table does not take, each measured on the H200 (docs/results/decode_probe_h200.txt):
even rows (`Config.even`, 9: within about 1 % of the tile grid), M split across a cluster of two with
B multicast (`Config.msplit`, cuBLAS's shape at M = 256; 10: 0.65-0.92 of the K split), L2 promotion
(`Config.l2`, 11: no effect), A shared by the pair of a cluster (`Config.a_share`, 16: slower), each cluster
starting its walk along K at its own offset (`Config.stagger`, 17: slightly slower), a tail of K taken by CTAs
done with their own, dynamically or by a plan (27, 29: slower; built and removed), M split across the pair with the
early hand-back and A in a ring of its own (30: still far slower than the K split), producers that wait when ahead of
the grid's mean, B prefetched into L2 while a PDL launch waits, A's ring in finer stages than B's, each CTA's rows
spread over all of N, the split's partials exchanged through mbarriers rather than two cluster barriers, the split's
CTAs taking K's stages in turn (36, 38, 39, 42-44: built, slower or within the run-to-run movement, removed).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..util import ceil_div
from .decode_config import L2_PROMOTIONS, MAX_STAGES, Config  # noqa: F401 - re-exported
from .decode_report import (REPORT, STAGES, DecodeRow, StageRow, decode_report_rows, decode_stage_rows,  # re-exported
                            roofline_table)
from .ladder import BK, SMEM_SLACK, ShapeError
from .runner import Launch

__all__ = ["Config", "Rung", "SWAP_AB", "RUNGS", "rung", "prepare", "PdlLaunch", "run_decode_emulated", "bytes_moved",
           "MAX_M", "DecodeRow", "decode_report_rows", "roofline_table", "decode_rung_diff", "decode_header_comment",
           "StageRow", "decode_stage_rows"]

MAX_M = 256              # wgmma's largest N
MTS = (16, 32, 64, 128, 256)
H100_SMEM_OPTIN = 232448  # dynamic SMEM a CTA may ask for on an H100 / H200 (sm_90)
H100_SMEM_PER_SM = 233472  # SMEM of an SM (228 KiB), of which the system reserves 1 KiB per resident CTA
STAMP_WORDS = 4 * 512 * 2 * 2   # gemm_common.cuh's per-track stamps (TRACKS x EVENTS x begin/end x ns/clock)
CTA_WORDS = 8                    # then per CTA (gemm_common.cuh's cta_stamp): 4 moments, its SM, 2 clock64s, 1 unused
STATIC_SMEM = 2048         # the kernel's static SMEM (1536 B: its barrier arrays and the compiler's), rounded up


@dataclass(frozen=True)
class Rung:
    name: str
    file: str
    added: str
    base: str              # the rung it is measured against (the ladder's skinny rung)
    table: tuple = ()      # (MT, Config) pairs: the configuration chosen for each MT (measured)
    bn: int = 64           # rows of B per consumer warpgroup: wgmma's M
    prediction: str = ""

    @property
    def path(self) -> str:
        return f"gemm_sm90/{self.file}"

    @staticmethod
    def mt(m: int) -> int:
        """wgmma's N for M rows of A: the smallest of 16, 32, 64, 128, 256 that holds them."""
        if not 1 <= m <= MAX_M:
            raise ShapeError(f"the decode rung takes 1 <= M <= {MAX_M} rows of A (wgmma's largest N), got M = {m}")
        return next(x for x in MTS if x >= m)

    def config(self, m: int) -> Config:
        return dict(self.table)[self.mt(m)]

    def with_config(self, consumers: int, split: int, kb: int, regs: tuple = (), minb: int = 1,
                    even: int = 0, msplit: int = 1, l2: str = "none", a_stages: int = 0, a_share: int = 1,
                    stagger: int = 0, early: int = 0) -> "Rung":
        """The same rung with one configuration for every M (the probes' variants)."""
        return replace(self, table=tuple((mt, Config(consumers, split, kb, tuple(regs), minb, even, msplit, l2,
                                                     a_stages, a_share, stagger, early)) for mt in MTS))

    def with_each(self, **changes) -> "Rung":
        """The same rung, every configuration of its table with these fields changed (e.g. early=1)."""
        return replace(self, table=tuple((mt, replace(c, **changes)) for mt, c in self.table))

    def with_l2(self, l2: str) -> "Rung":
        """The same rung, its table's configurations with A's and B's tensor maps at L2 promotion `l2`."""
        return self.with_each(l2=l2)

    def cluster(self, m: int) -> int:
        """CTAs of a cluster: the K pieces times the M halves, or the pair sharing A."""
        c = self.config(m)
        return c.split * c.msplit * c.a_share

    def nt(self, m: int) -> int:
        """wgmma's N in each CTA: its rows of A (MT, or MT / 2 where the cluster splits M)."""
        return self.mt(m) // self.config(m).msplit

    def threads(self, m: int) -> int:
        return 128 * (1 + self.config(m).consumers)

    def build_defines(self, m: int) -> dict:
        """The kernel's compile-time shape: wgmma's N for M, consumers, K split, K boxes per stage."""
        c = self.config(m)
        d = {"DECODE_MT": self.mt(m), "DECODE_CONSUMERS": c.consumers, "DECODE_SPLIT": c.split, "DECODE_KB": c.kb}
        if c.regs:
            d["DECODE_PRODUCER_REGS"], d["DECODE_CONSUMER_REGS"] = c.regs
        if c.minb != 1:
            d["DECODE_MINB"] = c.minb
        if c.msplit != 1:
            d["DECODE_MSPLIT"] = c.msplit
        if c.a_stages:
            d["DECODE_A_STAGES"] = c.a_stages
        if c.a_share != 1:
            d["DECODE_A_SHARE"] = c.a_share
        if c.stagger:
            d["DECODE_STAGGER"] = c.stagger
        if c.early:
            d["DECODE_EARLY_RELEASE"] = c.early
        return d

    def stage_bytes(self, m: int) -> int:
        """One stage of B's ring: B's boxes, and A's too unless A has a ring of its own."""
        c = self.config(m)
        return c.kb * (c.consumers * self.bn + (0 if c.a_stages else self.nt(m))) * BK * 2

    def a_ring_bytes(self, m: int) -> int:
        """A's own ring (0 when A shares B's)."""
        c = self.config(m)
        return c.a_stages * c.kb * self.nt(m) * BK * 2

    def exchange_bytes(self, m: int) -> int:
        """SMEM the split-K exchange reuses from the ring: the columns a CTA stores (1 / split of every
        consumer's accumulator, f32) once from each of the other split - 1 CTAs."""
        c = self.config(m)
        return c.consumers * self.bn * self.mt(m) * 4 * (c.split - 1) // c.split

    def smem_cap(self, m: int, smem_optin: int = H100_SMEM_OPTIN) -> int:
        """The dynamic SMEM a CTA may take: the opt-in limit, or with minb = 2 half the SM less what the
        system reserves per CTA and the kernel's static SMEM (two CTAs per SM)."""
        minb = self.config(m).minb
        if minb == 1:
            return smem_optin
        return min(smem_optin, H100_SMEM_PER_SM // minb - 1024 - STATIC_SMEM)

    def stages(self, m: int, smem_optin: int = H100_SMEM_OPTIN) -> int:
        """The deepest ring the SMEM holds (at most MAX_STAGES)."""
        return min(MAX_STAGES, (self.smem_cap(m, smem_optin) - SMEM_SLACK - 64 - self.a_ring_bytes(m))
                   // self.stage_bytes(m))

    def smem_bytes(self, m: int, stages: int) -> int:
        return max(stages * self.stage_bytes(m) + self.a_ring_bytes(m), self.exchange_bytes(m)) + SMEM_SLACK

    def groups(self, m: int, n: int, sms: int) -> int:
        """The kernel's `groups` argument on a GPU of `sms` SMs: 0 for the tile grid, or G clusters sharing
        N's rows evenly (even rows). Even rows when the configuration asks for them (`Config.even` = E: G
        = E x sms // split) and each cluster's share is more than half and at most all of its 64 x consumers
        rows (G x rows / 2 < N <= G x rows); otherwise the tile grid (more tiles than G: a share would not
        fit a cluster's boxes; a share of half the boxes or less: most of every box read for nothing)."""
        c = self.config(m)
        if not c.even:
            return 0
        g = c.even * sms // (c.split * c.msplit)
        rows = self.bn * c.consumers
        return g if g > 0 and g * rows < 2 * n <= 2 * g * rows else 0

    def grid(self, m: int, n: int, groups: int = 0) -> tuple:
        c = self.config(m)
        return ((groups or n // (self.bn * c.consumers)) * c.split * c.msplit, 1, 1)

    def require_groups(self, m: int, n: int, groups: int) -> None:
        """Raise ValueError naming the rule when G = `groups` clusters cannot share N's rows evenly."""
        rows = self.bn * self.config(m).consumers
        if groups < 0 or (groups and (2 * ceil_div(n // 2, groups) > rows or groups > n // 2)):
            raise ValueError(f"{self.name}: groups = {groups}: G clusters share N = {n} rows in even-aligned "
                             f"shares of at most {rows} rows (64 x consumer warpgroups) and at least 2: "
                             f"G from {ceil_div(n, rows)} to {n // 2}, or 0 for the tile grid")

    def require_shape(self, m: int, n: int, k: int) -> None:
        """Raise ShapeError naming the rule when (m, n, k) is not something this kernel computes."""
        mt = self.mt(m)
        c = self.config(m)
        if mt // 8 < c.split:
            raise ShapeError(f"{self.name}: M = {m} is held by wgmma's N = {mt}: {mt // 8} groups of 8 columns, "
                             f"fewer than the {c.split} CTAs that split K (each stores whole groups); "
                             f"split {c.split} needs M > {4 * c.split}")
        if c.msplit == 2 and mt < 32:
            raise ShapeError(f"{self.name}: M = {m} is held by wgmma's N = {mt}; split across a cluster of 2 "
                             f"each CTA would take {mt // 2} rows of A, fewer than wgmma's N of 16 "
                             "(msplit = 2 needs M > 16)")
        if c.consumers == 4 and mt // c.msplit > 128:
            raise ShapeError(f"{self.name}: M = {m} needs wgmma's N = {mt}, an accumulator of {mt // 2} registers "
                             "per thread; with 4 consumer warpgroups a consumer has 112 (N <= 128, M <= 128)")
        if c.minb == 2 and (c.consumers > 1 or mt > 128):
            raise ShapeError(f"{self.name}: two CTAs per SM leave a thread at most 128 registers (80 with two "
                             f"consumer warpgroups); the accumulator at M = {m} (wgmma's N = {mt}) with "
                             f"{c.consumers} consumer warpgroup(s) needs more: minb = 2 takes one consumer "
                             "warpgroup and M <= 128")
        for name, v, mult, why in (("N", n, self.bn * c.consumers * c.a_share,
                                    f"{self.bn} rows of B x {c.consumers} consumer warpgroups"
                                    + (f" x the {c.a_share} CTAs sharing A" if c.a_share > 1 else "")),
                                   ("K", k, c.kb * BK * c.split, f"{c.kb} boxes of {BK} per stage x {c.split} "
                                                                 "K pieces")):
            if v <= 0 or v % mult:
                raise ShapeError(f"{self.name}: {name} = {v} must be a positive multiple of {mult} ({why}); "
                                 f"next valid: {max(mult, ceil_div(v, mult) * mult)}")


SWAP_AB = Rung(
    "sd_swap_ab", "sd_swap_ab.cu",
    "swap-AB for decode shapes: C^T = B A^T, B's rows fill wgmma's M = 64 and A's M rows are its N; "
    "each CTA streams its rows of B once through a ring as deep as the SMEM holds; at larger M two "
    "consumer warpgroups share each A tile and a cluster of 2 splits K, the partials added through "
    "distributed shared memory; C stored transposed from the registers",
    base="sk_split_k",
    table=((16, Config(1, 1, 4, early=1)), (32, Config(1, 1, 4, early=1)), (64, Config(1, 1, 4, a_stages=3, early=1)),
           (128, Config(2, 2, 2, a_stages=3, early=1)), (256, Config(2, 2, 1, a_stages=5))),
    prediction="written before the first measurement: 128x8192x8192: the time is B's 128 MiB over the read "
               "stream's bandwidth (~4.3-4.4 TB/s on an H200: ~31 us); 128 CTAs with ~200 KiB of ring each "
               "keep far more than the ~4 MiB that latency x bandwidth asks in flight, so >= 0.90 of the "
               "stream, ~1.07 x cuBLAS (which moves 0.84 of it). M = 256: the math (34 GFLOP) takes as long "
               "as the bytes at the power cap; one consumer warpgroup on 128 of 132 SMs: ~0.95-1.0 x cuBLAS.")
RUNGS = [SWAP_AB]


def rung(name) -> Rung:
    if isinstance(name, Rung):
        return name
    for r in RUNGS:
        if name in (r.name, r.name.split("_")[0]):
            return r
    raise KeyError(f"no decode rung {name!r}; they are {', '.join(r.name for r in RUNGS)}")


def bytes_moved(m: int, n: int, k: int) -> int:
    """The bytes a decode GEMM must move at the least: A and B read once, C written once (bf16)."""
    return 2 * (m * k + n * k + m * n)


def _maps(r: Rung, m: int, n: int, k: int, a_ptr: int, b_ptr: int, c_ptr: int):
    from ..runtime import encode_tensor_map
    from ..tma.tensor_map import TensorMap
    l2 = r.config(m).l2
    return [encode_tensor_map(TensorMap("bfloat16", (k, m), (BK, r.nt(m)), swizzle="128B", l2_promotion=l2), a_ptr),
            encode_tensor_map(TensorMap("bfloat16", (k, n), (BK, r.bn), swizzle="128B", l2_promotion=l2), b_ptr),
            encode_tensor_map(TensorMap("bfloat16", (n, m), (64, min(64, r.mt(m))), swizzle="128B"), c_ptr)]


def _check_operands(a, b):
    m, k = a.shape
    n, kb = b.shape
    if kb != k:
        raise ValueError(f"A is {m} x {k} and B is {n} x {kb}: both must have K columns (C = A * B^T)")
    return m, n, k


def _stages(r: Rung, m: int, k: int, stages, optin: int) -> int:
    most = r.stages(m, optin)
    cap = r.smem_cap(m, optin)
    per = f"{cap} bytes per CTA" + (f" with {r.config(m).minb} CTAs per SM" if r.config(m).minb > 1 else "")
    if most < 2:
        a_ring = f" beside A's own ring of {r.a_ring_bytes(m)} bytes" if r.a_ring_bytes(m) else ""
        raise ShapeError(f"{r.name}: a stage of {r.stage_bytes(m)} bytes at M = {m}; the ring needs 2 of them "
                         f"and the SMEM ({per}) holds {max(0, most)}{a_ring}")
    if stages is None:
        return most
    if not 2 <= stages <= most:   # a stage is released only once the next one's wgmma are issued
        raise ValueError(f"{r.name}: a ring of {stages} stages of {r.stage_bytes(m)} bytes; between 2 and "
                         f"{most} fit the SMEM ({per}, at most {MAX_STAGES} barriers)")
    return stages


def prepare(r, a, b, c=None, stages=None, stamps=None, pdl=False, defines=None, groups=None):
    """Check the shapes, encode the tensor maps, load the kernel (with its cluster and K-per-stage
    defines): a `runner.Launch` ready to call. `stages`: the ring depth (default: the deepest that fits).
    `pdl`: launch it with programmatic dependent launch (bwlab.pdl): the kernel reads B for its first
    ring stages before the grid ahead of it in the stream has finished, A and C only after. Where PDL
    is unavailable this warns with the reason and launches plainly; `launch.pdl` says which it got.
    `defines`: more compile-time defines (e.g. {"DECODE_GRID_WAIT": 0}, the negative control of a chain).
    `groups`: the grid's clusters sharing N's rows evenly (0: the tile grid); default `Rung.groups` on
    this GPU's SM count. `launch.stages`, `launch.groups`: what it got."""
    from ..compile import load_module
    from ..device import gpu_info
    from ..runtime import GPU, require_launch_config, tensor_map_arg
    r = rung(r)
    m, n, k = _check_operands(a, b)
    cp = GPU.xp   # CuPy
    if a.dtype != np.uint16 or b.dtype != np.uint16:
        raise TypeError("A and B hold bf16 bit patterns: dtype uint16 (see runner.bf16_bits)")
    r.require_shape(m, n, k)
    a, b = cp.ascontiguousarray(a), cp.ascontiguousarray(b)
    c = cp.empty((m, n), dtype=cp.uint16) if c is None else c
    info = gpu_info()
    stages = _stages(r, m, k, stages, info.smem_per_block_optin)
    smem = r.smem_bytes(m, stages)
    groups = r.groups(m, n, info.sm_count) if groups is None else groups
    r.require_groups(m, n, groups)
    grid, block = r.grid(m, n, groups), (r.threads(m), 1, 1)
    cl = r.cluster(m)
    require_launch_config(grid, block, smem, (cl, 1, 1) if cl > 1 else None)
    maps = _maps(r, m, n, k, a.data.ptr, b.data.ptr, c.data.ptr)
    defines = {**r.build_defines(m), **(defines or {})}
    if stamps is not None:
        need = STAMP_WORDS + CTA_WORDS * grid[0]
        if getattr(stamps, "size", 0) < need or getattr(stamps, "dtype", None) != np.uint64:
            raise ValueError(f"{r.name}: stamps must be a uint64 buffer of at least {need} words (4 tracks x 512 events x "
                             f"2 x 2, then {CTA_WORDS} per CTA for {grid[0]} CTAs); got {getattr(stamps, 'size', '?')} of "
                             f"{getattr(stamps, 'dtype', '?')}")
        defines["GEMM_STAMPS"] = 1
    module = load_module(r.path, defines=defines)
    fn = module.get_function("gemm")
    fn.max_dynamic_shared_size_bytes = smem
    args = (*[tensor_map_arg(t) for t in maps], c, np.int32(m), np.int32(n), np.int32(k),
            stamps if stamps is not None else np.uint64(0), np.int32(stages), np.int32(groups))
    launch = Launch(r, fn, grid, block, smem, args, c, module)
    launch.pdl = False
    if pdl:
        from .. import pdl as P
        try:
            go = P.launcher(fn, grid, block, args, shared_mem=smem)
        except P.PdlUnavailable as e:
            import warnings
            warnings.warn(f"{r.name}: launched without programmatic dependent launch: {e}", stacklevel=2)
        else:
            launch = PdlLaunch(r, fn, grid, block, smem, args, c, module)
            launch.go, launch.pdl = go, True
    launch.keep = (a, b)
    launch.stages, launch.groups = stages, groups
    return launch


class PdlLaunch(Launch):
    """A Launch that goes through cuLaunchKernelEx with programmatic stream serialization (bwlab.pdl)."""

    def __call__(self):
        self.go()


def run_decode_emulated(r, a, b, stages=None, seed: int = 0, trace: bool = False, groups: int = 0,
                        stamps: bool = False):
    """C = A * B^T by the rung's kernel executed in bwlab.emu (its sm_90a PTX): NumPy uint16 operands of
    bf16 bits; returns (C bits, the emulator's Launch). `stages`: the ring depth (a shallow ring makes
    every stage and barrier phase come round several times at a small K). `groups`: G clusters sharing
    N's rows evenly (0: the tile grid; the emulator has no SM count to derive it from). `stamps`: the
    build of docs/results/decode_stage_probe.py (GEMM_STAMPS, DECODE_STAGE_STAMPS), its words in
    `launch.stamps` (NumPy uint64)."""
    from .. import emu
    from ..runtime import EMULATED, launch as run_launch, tensor_map_arg
    from .runner import BARRIERS
    r = rung(r)
    a = np.ascontiguousarray(a, np.uint16)
    b = np.ascontiguousarray(b, np.uint16)
    m, n, k = _check_operands(a, b)
    r.require_shape(m, n, k)
    r.require_groups(m, n, groups)
    stages = _stages(r, m, k, stages, H100_SMEM_OPTIN)
    da, db, dc = emu.asarray(a), emu.asarray(b), emu.zeros((m, n), np.uint16)
    maps = _maps(r, m, n, k, da.data.ptr, db.data.ptr, dc.data.ptr)
    grid = r.grid(m, n, groups)
    st = np.uint64(0)   # stamps: the per-track and per-CTA words, then one per stage of each CTA
    if stamps:
        st = emu.zeros(STAMP_WORDS + CTA_WORDS * grid[0] + grid[0] * (k // (BK * r.config(m).kb * r.config(m).split)),
                       np.uint64)
    module = EMULATED.load(r.path, defines={**r.build_defines(m),
                                            **({"GEMM_STAMPS": 1, "DECODE_STAGE_STAMPS": 1} if stamps else {})})
    fn = module.get_function("gemm")
    fn.seed, fn.trace = seed, trace
    cl = r.cluster(m)
    run = run_launch(module, "gemm", grid, (r.threads(m), 1, 1),
                     (*[tensor_map_arg(t) for t in maps], dc, np.int32(m), np.int32(n), np.int32(k),
                      st, np.int32(stages), np.int32(groups)),
                     shared_mem=r.smem_bytes(m, stages), barrier_names=BARRIERS,
                     cluster=(cl, 1, 1) if cl > 1 else None)
    run.stages = stages
    run.stamps = st.get() if stamps else None
    return dc.get(), run


# ---- the committed measurement: its rows and the roofline table (decode_report.py), the rung's diff ------
def decode_rung_diff(r=SWAP_AB, context: int = 1) -> str:
    """The rung's kernel against its base's (`Rung.base`), as bwlab.gemm.report.rung_diff shows the ladder's."""
    from . import report
    from .ladder import step
    r = rung(r)
    return report._diff(step(r.base), r, context)


def decode_header_comment(r=SWAP_AB) -> str:
    """The comment at the top of the rung's kernel."""
    from ..source import source_text
    lines = source_text(rung(r).path).splitlines()
    head = []
    for line in lines[1:]:
        if not line.startswith("//"):
            break
        head.append(line[3:] if line.startswith("// ") else line[2:])
    return "\n".join(head)
