"""Hardware validation and the benchmark of the multicast stage.

    python -m bwlab.validate multicast [--quick] [--seed N] [--out FILE]
    python -m bwlab.bench multicast [--clusters 1,2,4,8] [--ctas 32,120] [--depths 4x48,6x32] ...

Validation: for every portable 2D cluster shape, A-style, B-style and both, one-SM and two-SM cluster
layouts, several swizzles and grids, every CTA's tile area after `tma_multicast_tile` is compared byte
for byte with `bwlab.multicast.multicast_model`, and every CTA's %cluster_ctarank / %cluster_ctaid
with the cluster layout (`compare_run`); then a deliberately wrong expect_tx must come back as
MbarrierTimeout and the next launch must work.

Benchmark: `tma_multicast_bench` (cuda_src/tma_multicast.cu), a persistent pipelined loop filling
every CTA with one tile after another, with and without multicast, timed with CUDA events.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from .. import device
from ..hw.mbarrier import MAX_TX_BYTES
from ..multicast import MulticastConfig, compare_run, launch_multicast, make_operands
from ..multicast.case import MulticastCheck
from ..multicast.params import SMEM_PER_CTA
from ..multicast.runner import THREADS
from ..runtime import MbarrierTimeout
from .common import Command, Report

__all__ = ["validation_configs", "check_config", "validate_main", "bench_summary", "BENCH_MODES", "BENCH_BARRIERS",
           "BENCH_STAGES", "BenchConfig", "parse_depth", "run_bench", "ncu_sectors", "bench_main"]


# ---------------------------------------------------------------------------------------------
# Hardware validation: python -m bwlab.validate multicast
# ---------------------------------------------------------------------------------------------
def validation_configs(quick: bool = False) -> list:
    """Every portable 2D cluster shape, A-style, B-style and both, one-SM and two-SM cluster
    layouts, two swizzles, and a grid of several clusters."""
    shapes = [(2, 2), (2, 4), (4, 2)] if quick else [(1, 2), (2, 1), (2, 2), (2, 4), (4, 2), (1, 8), (8, 1)]
    out = []
    for cl in shapes:
        for ops in ("A", "B", "AB"):
            out.append(MulticastConfig(cluster=cl, operands=ops))
        if cl[0] % 2 == 0:
            out.append(MulticastConfig(cluster=cl, peers=2, operands="AB"))
    if not quick:
        out.append(MulticastConfig(cluster=(2, 4), operands="AB", swizzle="none", grid_clusters=(2, 2)))
        out.append(MulticastConfig(cluster=(4, 2), operands="AB", swizzle="64B", tile_k=32, grid_clusters=(3, 1)))
        out.append(MulticastConfig(cluster=(2, 2), operands="AB", dtype="float32", tile_k=32,
                                   tile_m=64, tile_n=256, grid_clusters=(2, 3)))
    return out


def check_config(cfg: MulticastConfig, seed: int = 0) -> MulticastCheck:
    """Run `cfg` on the GPU with random operands and compare every CTA with the model."""
    return compare_run(launch_multicast(cfg, make_operands(cfg, seed)))


def validate_main(argv=None) -> int:
    cmd = Command("validate multicast", "TMA multicast on the GPU: every CTA's tile area and rank "
                  "against the model, and the bounded wait under a cluster", stage="multicast")
    cmd.add("--quick", action="store_true", help="only the 2x2, 2x4 and 4x2 clusters")
    cmd.add("--seed", type=int, default=0)
    args, say = cmd.start(argv)
    failures = 0
    for i, cfg in enumerate(validation_configs(args.quick)):
        res = check_config(cfg, seed=args.seed + i)
        failures += not res.ok
        say(res.line())
    # The bounded wait under a cluster: announce 16 bytes too many in every CTA.
    cfg = MulticastConfig(cluster=(2, 2))
    try:
        launch_multicast(cfg, make_operands(cfg, 0), extra_tx=16)
        say("deliberately wrong expect_tx in a 2x2 cluster: NO EXCEPTION (failure)")
        failures += 1
    except MbarrierTimeout as e:
        say(f"deliberately wrong expect_tx (+16 B) in a 2x2 cluster: MbarrierTimeout: {e}")
    res = check_config(cfg, seed=args.seed)
    failures += not res.ok
    say(f"next launch in the same process: {res.line()}")
    return cmd.finish(failures, "multicast")


# ---------------------------------------------------------------------------------------------
# Benchmark: python -m bwlab.bench multicast
# ---------------------------------------------------------------------------------------------
BENCH_MODES = {0: "own", 1: "multicast", 2: "sync-only", 3: "sync-serial"}
BENCH_BARRIERS = {0: "stage_full", 1: "stage_empty"}
BENCH_STAGES = 3  # default pipeline depth (MC_STAGES in cuda_src/tma_multicast.cu)


@dataclass(frozen=True)
class BenchConfig:
    """Every CTA receives `iters` tiles of `boxes_per_tile` boxes of `box_rows` x 128 B, through a
    pipeline of `stages` buffers. Cluster k reads tile (k + it) % tiles_in_source of a source
    small enough to stay in L2 (8 MB by default, L2 is 50 MB on an H100), so different clusters read
    different tiles and the CTAs of one cluster the same one."""

    cluster: int = 4
    ctas: int = 120
    iters: int = 2000
    box_rows: int = 64
    boxes_per_tile: int = 8
    tiles_in_source: int = 128
    row_bytes: int = 128
    stages: int = BENCH_STAGES

    def __post_init__(self):
        if not 2 <= self.stages <= 8:
            raise ValueError(f"the pipeline has 2..8 stages, got {self.stages}")
        if self.cluster not in (1, 2, 4, 8):
            raise ValueError(f"benchmark clusters are 1, 2, 4 or 8 CTAs (portable), got {self.cluster}")
        if self.ctas % self.cluster:
            raise ValueError(f"{self.ctas} CTAs are not a whole number of {self.cluster}-CTA clusters")
        if self.boxes_per_tile % self.cluster:
            raise ValueError(f"the {self.boxes_per_tile} boxes of a tile must split evenly among "
                             f"{self.cluster} CTAs")
        if not 1 <= self.box_rows <= 256:
            raise ValueError(f"box_rows is a TMA box dimension, 1..256, got {self.box_rows}")
        if self.smem_bytes > SMEM_PER_CTA:
            raise ValueError(f"{self.stages} stages of {self.tile_bytes} B (+1024 for alignment) do not "
                             f"fit in one CTA's {SMEM_PER_CTA} B of SMEM")
        if self.tile_bytes > MAX_TX_BYTES:
            raise ValueError("one mbarrier phase counts at most 2^20 - 1 bytes")

    @property
    def box_bytes(self) -> int:
        return self.box_rows * self.row_bytes

    @property
    def tile_bytes(self) -> int:
        return self.box_bytes * self.boxes_per_tile

    @property
    def smem_bytes(self) -> int:
        return self.stages * self.tile_bytes + 1024

    @property
    def source_bytes(self) -> int:
        return self.tiles_in_source * self.tile_bytes

    def bytes_into_smem(self) -> int:
        """Bytes that land in SMEM over the whole launch (the same with or without multicast)."""
        return self.ctas * self.iters * self.tile_bytes

    def bytes_from_l2(self, mode: int) -> int:
        """Bytes read from L2 by TMA, DERIVED: without multicast every CTA reads the tile; with it,
        each box is read once per cluster and copied on the way to the SMs."""
        if mode not in (0, 1):
            return 0
        per_cluster = self.tile_bytes * (1 if mode == 1 else self.cluster)
        return (self.ctas // self.cluster) * self.iters * per_cluster

    def label(self) -> str:
        return f"{self.stages} x {self.tile_bytes // 1024} KiB"


def parse_depth(text: str, **kw) -> BenchConfig:
    """'4x48' -> a BenchConfig with 4 stages of tiles made of boxes of 48 rows (x 128 B)."""
    try:
        stages, rows = (int(t) for t in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"a pipeline depth is STAGESxBOX_ROWS, e.g. 4x48, got {text!r}") from None
    return BenchConfig(stages=stages, box_rows=rows, **kw)


def _max_active_clusters(fn, cfg: BenchConfig):
    """cuOccupancyMaxActiveClusters for this kernel, or None where the query is unavailable."""
    try:
        from cuda.bindings import driver as drv
        ptr = getattr(getattr(fn, "kernel", fn), "ptr", None)
        if ptr is None:
            return None
        conf = drv.CUlaunchConfig()
        conf.gridDimX, conf.gridDimY, conf.gridDimZ = cfg.ctas, 1, 1
        conf.blockDimX, conf.blockDimY, conf.blockDimZ = THREADS, 1, 1
        conf.sharedMemBytes = cfg.smem_bytes
        err, n = drv.cuOccupancyMaxActiveClusters(drv.CUfunction(ptr), conf)
        return int(n) if int(err) == 0 else None
    except Exception:
        return None


def _bench_setup(cfg: BenchConfig):
    """The benchmark kernel for `cfg`: (module, its source's tensor map argument, the clock buffer, the source:
    a 128B-swizzled uint8 tensor of `tiles_in_source` tiles, which the caller keeps alive while it launches)."""
    import cupy as cp
    from ..compile import load_module
    from ..runtime import encode_tensor_map, tensor_map_arg
    from ..tma import TensorMap
    device.require("multicast")
    rows = cfg.tiles_in_source * cfg.boxes_per_tile * cfg.box_rows
    src = cp.asarray(np.random.default_rng(0).integers(0, 256, size=rows * cfg.row_bytes, dtype=np.uint8))
    tmap = TensorMap("uint8", (cfg.row_bytes, rows), (cfg.row_bytes, cfg.box_rows), swizzle="128B")
    targ = tensor_map_arg(encode_tensor_map(tmap, src.data.ptr))
    mod = load_module("tma_multicast", defines={"CLUSTER_X": cfg.cluster, "CLUSTER_Y": 1,
                                                "MC_STAGES": cfg.stages})
    return mod, targ, cp.zeros(cfg.ctas * 2, dtype=cp.uint64), src


def run_bench(cfg: BenchConfig, modes=(0, 1, 2), warmup: int = 3, repeat: int = 15, single: bool = False):
    """Time each mode with CUDA events (median of `repeat` launches after `warmup`). Returns
    ({mode: (BenchResult, every CTA resident at once)}, max active clusters or None)."""
    import cupy as cp
    from ..runtime import bench, launch
    mod, targ, clocks, src = _bench_setup(cfg)
    results = {}
    for mode in modes:
        args = (targ, np.uint32(mode), np.uint32(cfg.iters), np.uint32(cfg.boxes_per_tile),
                np.uint32(cfg.box_rows), np.uint32(cfg.box_bytes), np.uint32(cfg.tiles_in_source), clocks)

        def go(sync=False):
            launch(mod, "tma_multicast_bench", (cfg.ctas,), (THREADS,), args, shared_mem=cfg.smem_bytes,
                   barrier_names=BENCH_BARRIERS, cluster=(cfg.cluster, 1, 1), sync=sync)
        go(sync=True)  # checks the status record: no wait timed out
        if single:
            results[mode] = None
            continue
        r = bench(f"c={cfg.cluster} {BENCH_MODES[mode]}", go, warmup=warmup, repeat=repeat,
                  bytes_moved=cfg.bytes_into_smem())
        go(sync=True)
        c = cp.asnumpy(clocks).reshape(cfg.ctas, 2).astype(np.int64)
        resident = bool(c[:, 0].max() < c[:, 1].min())  # every CTA started before any finished
        results[mode] = (r, resident)
    occ = _max_active_clusters(mod.get_function("tma_multicast_bench"), cfg)
    return results, occ


def bench_calls(cfg: BenchConfig, modes=(0, 1)) -> dict:
    """{mode: call} launching tma_multicast_bench for `cfg` with no host work beyond the launch (each
    launched once first through bwlab.runtime.launch: a wait that timed out raises MbarrierTimeout;
    `check` re-reads the status record after timed launches)."""
    from ..runtime import raise_on_status, launch
    mod, targ, clocks, src = _bench_setup(cfg)
    fn = mod.get_function("tma_multicast_bench")
    out = {}
    for mode in modes:
        args = (targ, np.uint32(mode), np.uint32(cfg.iters), np.uint32(cfg.boxes_per_tile),
                np.uint32(cfg.box_rows), np.uint32(cfg.box_bytes), np.uint32(cfg.tiles_in_source), clocks)
        launch(mod, "tma_multicast_bench", (cfg.ctas,), (THREADS,), args, shared_mem=cfg.smem_bytes,
               barrier_names=BENCH_BARRIERS, cluster=(cfg.cluster, 1, 1), sync=True)

        fn.max_dynamic_shared_size_bytes = cfg.smem_bytes

        def go(args=args):   # the cluster shape is the kernel's own (__cluster_dims__ from CLUSTER_X)
            fn((cfg.ctas,), (THREADS,), args, shared_mem=cfg.smem_bytes)
        out[mode] = go
    out["keep"] = (src, clocks, mod, fn)
    out["check"] = lambda: raise_on_status(mod, "tma_multicast_bench", BENCH_BARRIERS)
    return out


def _sustained(args, say, clusters, ctas) -> int:
    """own (every CTA loads its tile: the baseline) against multicast, per cluster size, under the
    sustained protocol; the source is L2-resident by design (it measures L2 -> SMEM), so no rotation."""
    import cupy as cp
    from ..gemm import protocol as P
    from .clocks import ClockLog
    from . import sustained as S
    proto = P.Protocol(block_s=args.block_s, rounds=args.rounds)
    clocks = ClockLog(cp.cuda.Device().pci_bus_id).start()
    say(proto.describe().replace("library", "baseline").replace(
        "operands rotated through sets holding >= 2 x L2 of A and B", "source L2-resident by design (not rotated)"))
    say(f"baseline: own (every CTA loads the whole tile itself); candidate: multicast; {ctas} CTAs, "
        f"{args.iters} tiles per CTA; GB/s = bytes landing in SMEM / time; clock log: {clocks.source}")
    failures = 0
    try:
        for c in clusters:
            if c == 1:
                continue   # no multicast in a cluster of one
            cfg = BenchConfig(cluster=c, ctas=ctas, iters=args.iters)
            try:
                calls = bench_calls(cfg)
            except MbarrierTimeout as e:
                failures += 1
                say(f"  c={c} FAILED: {e}")
                continue
            say(f"\n== cluster of {c}")
            S.run(S.Candidate(f"c={c} own", [calls[0]], cfg.bytes_into_smem()),
                  [S.Candidate(f"c={c} multicast", [calls[1]], cfg.bytes_into_smem())], proto, say,
                  clocks=clocks, tag=c)
            try:
                calls["check"]()
            except MbarrierTimeout as e:
                failures += 1
                say(f"  c={c}: a bounded wait gave up during the timed launches: {e}")
    finally:
        clocks.stop()
    return failures


def ncu_sectors(csv_text: str, metric: str = "lts__t_sectors_srcunit_tex_op_read.sum") -> list:
    """The values of one metric for every tma_multicast_bench launch in an `ncu --csv` report."""
    import csv
    rows = [r for r in csv.reader(l for l in csv_text.splitlines() if l.startswith('"'))]
    if not rows:
        return []
    head, out = rows[0], []
    try:
        k, m, v = head.index("Kernel Name"), head.index("Metric Name"), head.index("Metric Value")
    except ValueError:
        return []
    for r in rows[1:]:
        if len(r) > max(k, m, v) and r[k].startswith("tma_multicast_bench") and r[m] == metric:
            out.append(int(r[v].replace(",", "")))
    return out


def _bench_row(cfg: BenchConfig, mode: int, r, resident, occ, own_ms) -> str:
    ms = r.median_ms
    fill = cfg.bytes_into_smem() / (ms * 1e-3) / 1e9 if mode in (0, 1) else 0.0
    l2 = cfg.bytes_from_l2(mode) / (ms * 1e-3) / 1e9
    speed = f"{own_ms / ms:6.2f}x" if mode != 0 else ""
    return (f"{cfg.ctas:4d} {cfg.cluster:2d} {BENCH_MODES[mode]:>11s} {ms:10.4f} {r.min_ms:8.4f} "
            f"{ms * 1e6 / cfg.iters:9.0f} {fill:15.1f} {l2:22.1f} {speed:>7s} {str(resident):>8s} "
            f"{str(occ):>12s}")


BENCH_HEADER = (f"{'ctas':>4s} {'c':>2s} {'mode':>11s} {'median ms':>10s} {'min ms':>8s} {'ns/tile':>9s} "
                f"{'SMEM fill GB/s':>15s} {'L2->SM GB/s (derived)':>22s} {'vs own':>7s} {'resident':>8s} "
                f"{'max clusters':>12s}")




def _bench_command() -> Command:
    cmd = Command("bench multicast", "TMA multicast against every CTA loading its own tile: a pipelined "
                  "loop timed with CUDA events", stage="multicast")
    cmd.add("--clusters", default="1,2,4,8", help="cluster sizes (CTAs) to measure")
    cmd.add("--ctas", default="32,120",
            help="CTA counts (one CTA per SM: 193 KB of SMEM each); 120 = 15 clusters of 8, "
                 "what an H100 holds at once")
    cmd.add("--iters", type=int, default=2000)
    cmd.add("--repeat", type=int, default=15)
    cmd.add("--depths", default="4x48,6x32",
            help="further pipeline depths STAGESxBOX_ROWS (8 boxes a tile) measured with own and "
                 "multicast at the largest CTA count, after the main table ('' for none)")
    cmd.add("--ncu-pass", metavar="PLAN_JSON",
            help="launch own and multicast once each per configuration, untimed, for Nsight "
                 "Compute, and write the launch order to PLAN_JSON")
    cmd.add("--ncu-csv", nargs=2, metavar=("CSV", "PLAN_JSON"),
            help="add the L2 sectors Nsight Compute measured in a --ncu-pass run to the report")
    cmd.add("--protocol", choices=["quick", "sustained"], default="quick",
            help="quick: the tables below (median of --repeat launches, every mode and depth); sustained: "
                 "own vs multicast per cluster size at the largest CTA count under bwlab.gemm.protocol")
    cmd.add("--block-s", type=float, default=2.0, help="sustained: seconds per block")
    cmd.add("--rounds", type=int, default=2, help="sustained: rounds of alternating blocks")
    cmd.add("--skip-timing", action="store_true",
            help="only the Nsight Compute table of --ncu-csv (when the timings were taken by an "
                 "earlier run)")
    return cmd


def bench_main(argv=None) -> int:
    cmd = _bench_command()
    args = cmd.parser.parse_args(argv)  # usage errors and bad configurations before the banner
    if args.skip_timing and not args.ncu_csv:
        cmd.parser.error("--skip-timing only makes sense with --ncu-csv")
    clusters = [int(c) for c in args.clusters.split(",")]
    ctas_list = [int(c) for c in args.ctas.split(",")]
    depths = [parse_depth(d, ctas=max(ctas_list), iters=args.iters) for d in args.depths.split(",") if d]
    for ctas in ctas_list:  # every configuration is checked before the first launch
        for c in clusters:
            BenchConfig(cluster=c, ctas=ctas, iters=args.iters)
            for d in depths:
                BenchConfig(cluster=c, ctas=ctas, iters=args.iters, stages=d.stages, box_rows=d.box_rows)
    args, say = cmd.start(argv)
    if args.ncu_pass:
        launches = []
        for ctas in ctas_list:
            for c in clusters:
                cfg = BenchConfig(cluster=c, ctas=ctas, iters=args.iters)
                run_bench(cfg, modes=(0, 1), single=True)
                launches += [{"ctas": ctas, "cluster": c, "mode": m, "iters": args.iters,
                              "derived_l2_bytes": cfg.bytes_from_l2(m), "smem_bytes": cfg.bytes_into_smem()}
                             for m in (0, 1)]
        with open(args.ncu_pass, "w") as f:
            json.dump(launches, f)
        say(f"ncu pass: {len(launches)} launches written to {args.ncu_pass}")
        return 0
    if args.protocol == "sustained":
        failures = _sustained(args, say, clusters, max(ctas_list))
        say.save(args.out)
        return 0 if failures == 0 else 1
    base = BenchConfig(iters=args.iters)
    if args.skip_timing:
        clusters, depths = [], []
    else:
        say(f"every CTA receives {args.iters} tiles of {base.tile_bytes} B ({base.boxes_per_tile} TMA boxes of "
            f"{base.box_rows} x {base.row_bytes} B, 128B swizzle) through a {base.stages}-stage "
            f"full/empty mbarrier pipeline; cluster k reads tile (k + it) % {base.tiles_in_source} of a "
            f"{base.source_bytes // 2**20} MB source (L2-resident)")
        say("modes: own = every CTA loads the whole tile itself; multicast = each CTA issues 1/c of the boxes "
            "with the whole cluster in the mask; sync-only = the multicast handshake with no data (lane k of "
            "the consumer warp releases CTA k, plain remote arrive, cta-scope waits); sync-serial = the first "
            "version's handshake with no data (one thread, c arrive.release.cluster in a row, cluster-scope "
            "waits)")
        say("ns/tile = median time / tiles per CTA; SMEM fill = bytes landing in SMEM / time (measured time); "
            "L2->SM GB/s is DERIVED from the bytes the design reads (own: c tiles per cluster, multicast: 1), "
            "not measured; 'vs own' = own's median / this row's median")
        say("CUDA events, median of %d launches after 3 warm-up launches; 'resident' = every CTA started "
            "before any finished; 'max clusters' = cuOccupancyMaxActiveClusters" % args.repeat)
        say(BENCH_HEADER)
    failures = 0
    for ctas in ctas_list:
        for c in clusters:
            cfg = BenchConfig(cluster=c, ctas=ctas, iters=args.iters)
            try:
                res, occ = run_bench(cfg, modes=(0, 1, 2, 3), repeat=args.repeat)
            except MbarrierTimeout as e:
                failures += 1
                say(f"{ctas:4d} {c:2d} FAILED: {e}")
                continue
            own_ms = res[0][0].median_ms
            for mode, (r, resident) in res.items():
                say(_bench_row(cfg, mode, r, resident, occ, own_ms))
    if depths:
        say("")
        say(f"pipeline depth: the same measurement (own and multicast) with other stage counts and tile sizes "
            f"at {max(ctas_list)} CTAs; SMEM per CTA = stages x tile + 1024 B")
        say(f"{'depth':>14s} " + BENCH_HEADER)
        for d in [BenchConfig(stages=base.stages, box_rows=base.box_rows)] + depths:
            for c in clusters:
                cfg = BenchConfig(cluster=c, ctas=max(ctas_list), iters=args.iters, stages=d.stages,
                                  box_rows=d.box_rows)
                try:
                    res, occ = run_bench(cfg, modes=(0, 1), repeat=args.repeat)
                except MbarrierTimeout as e:
                    failures += 1
                    say(f"{cfg.label():>14s} {cfg.ctas:4d} {c:2d} FAILED: {e}")
                    continue
                own_ms = res[0][0].median_ms
                for mode, (r, resident) in res.items():
                    say(f"{cfg.label():>14s} " + _bench_row(cfg, mode, r, resident, occ, own_ms))
    if args.ncu_csv:
        _ncu_table(say, *args.ncu_csv)
    # The benchmark's report ends with its tables (no verdict line), as the committed results show.
    say.save(args.out)
    return 0 if failures == 0 else 1


def _ncu_table(say: Report, csv_path: str, plan_path: str) -> None:
    with open(plan_path) as f:
        launches = json.load(f)
    with open(csv_path) as f:
        text = f.read()
    tex = ncu_sectors(text)
    allr = ncu_sectors(text, "lts__t_sectors_op_read.sum")
    say("")
    say("Nsight Compute (MEASURED, one untimed launch each): L2 read sectors (32 B) of the benchmark kernel")
    if len(tex) != len(launches):
        say(f"  ncu reported {len(tex)} launches for {len(launches)} planned: not matched, raw values {tex}")
        return
    say(f"{'ctas':>4s} {'c':>2s} {'mode':>10s} {'iters':>5s} {'derived L2 bytes':>17s} "
        f"{'lts srcunit_tex read B':>23s} {'lts all read B':>15s} {'measured/derived':>16s}")
    for i, (l, t) in enumerate(zip(launches, tex)):
        a = allr[i] * 32 if i < len(allr) else -1
        say(f"{l['ctas']:4d} {l['cluster']:2d} {BENCH_MODES[l['mode']]:>10s} {l['iters']:5d} "
            f"{l['derived_l2_bytes']:17d} {t * 32:23d} {a:15d} {t * 32 / l['derived_l2_bytes']:16.3f}")


if __name__ == "__main__":
    raise SystemExit(validate_main())


def bench_summary(name: str = "multicast_bench_h100.txt", ctas: int = 120) -> str:
    """The key numbers of a committed benchmark report, as a short table: per cluster size c, ns per
    64 KiB tile for `own` and `multicast`, the speed-up, and the L2 bytes Nsight Compute measured
    against the naive count (own: c tiles per cluster; multicast: 1)."""
    from ..results import report_text
    text = report_text(name)
    main = text.split("pipeline depth:")[0]
    ncu = text.split("Nsight Compute")[1] if "Nsight Compute" in text else ""

    def rows(block, ncols):
        for line in block.splitlines():
            f = line.split()
            if len(f) >= ncols and f[0].isdigit() and f[1].isdigit() and int(f[0]) == ctas:
                yield int(f[1]), f[2], f

    ns = {(c, mode): (int(f[5]), float(f[3])) for c, mode, f in rows(main, 8)}
    l2 = {(c, mode): float(f[-1]) for c, mode, f in rows(ncu, 8)}
    out = [f"{ctas} CTAs, 3-stage pipeline of 64 KiB tiles ({name}):",
           f"{'c':>2s} {'own ns/tile':>12s} {'multicast ns/tile':>18s} {'own / multicast':>16s} "
           f"{'L2 read, own':>13s} {'L2 read, multicast':>19s}"]
    for c in sorted({c for c, _ in ns}):
        o, m = ns.get((c, "own")), ns.get((c, "multicast"))
        if o is None or m is None:
            continue
        lo, lm = l2.get((c, "own")), l2.get((c, "multicast"))
        out.append(f"{c:2d} {o[0]:12d} {m[0]:18d} {o[1] / m[1]:15.2f}x {lo if lo is not None else float('nan'):13.3f} "
                   f"{lm if lm is not None else float('nan'):19.3f}")
    out.append("c = CTAs per cluster, all receiving the same tiles; L2 read = bytes the L2 served / the naive count "
               "(c tiles per cluster for own, 1 for multicast)")
    return "\n".join(out)
