"""The TMA streaming-copy benchmark: `python -m bwlab.bench tma_copy [--sizes-mib ...] [--repeat N] [--out FILE]`.

`tma_copy_stream` (cuda_src/tma_load.cu) on a persistent grid: TMA load -> SMEM -> TMA store, a few
boxes in flight per CTA, against cupy's device-to-device copy measured in the same process.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tma import TensorMap
from ..tma.runner import SMEM_SLACK
from .common import Command

COPY_ROW_BYTES = 1024  # the buffers are viewed as [rows][256 x uint32]: one box row = one 1 KiB row
COPY_BARRIERS = {s: f"full[{s}]" for s in range(8)}


@dataclass(frozen=True)
class CopyConfig:
    tile_rows: int = 16      # box = 256 uint32 x tile_rows rows = tile_rows KiB per stage
    stages: int = 6          # boxes in flight per CTA
    ctas_per_sm: int = 2
    l2_promotion: str = "256B"

    @property
    def tile_bytes(self) -> int:
        return self.tile_rows * COPY_ROW_BYTES


def make_tma_copy(src, dst, cfg: CopyConfig = CopyConfig()):
    """Prepare a copy of `src` to `dst` (CuPy arrays, same byte size, a multiple of the tile) with
    cuda_src/tma_copy_stream on a persistent grid of sm_count * ctas_per_sm CTAs.

    Runs it once through bwlab.runtime.launch (bounded waits checked, MbarrierTimeout on a stall)
    and returns a function that enqueues further copies with no host work beyond the launch
    itself, for timing; `raise_on_status()` on that function reports a stall in those.
    """
    import cupy as cp

    from .. import device
    from ..compile import load_module
    from ..runtime import STATUS_DTYPE, LaunchConfigError, MbarrierTimeout, encode_tensor_map, launch, tensor_map_arg
    nbytes = src.nbytes
    if dst.nbytes != nbytes or nbytes % cfg.tile_bytes:
        raise ValueError(f"src and dst must have the same size, a multiple of the {cfg.tile_bytes}-byte tile")
    if not 1 <= cfg.stages <= 8:
        raise ValueError(f"stages must be 1..8 (TMA_MAX_STAGES), got {cfg.stages}")
    info = device.require("tma")
    rows = nbytes // COPY_ROW_BYTES
    tmap = TensorMap("uint32", (COPY_ROW_BYTES // 4, rows), (COPY_ROW_BYTES // 4, cfg.tile_rows),
                     l2_promotion=cfg.l2_promotion)
    maps = [encode_tensor_map(tmap, a.data.ptr) for a in (src, dst)]
    tiles = rows // cfg.tile_rows
    smem = cfg.stages * cfg.tile_bytes + SMEM_SLACK
    if smem > info.smem_per_block_optin or (smem + 1024) * cfg.ctas_per_sm > info.smem_per_sm:
        raise LaunchConfigError(f"{cfg} needs {smem} bytes of SMEM per CTA")
    grid = (min(tiles, info.sm_count * cfg.ctas_per_sm),)
    mod = load_module("tma_load")
    args = (tensor_map_arg(maps[0]), tensor_map_arg(maps[1]), np.uint32(1), np.uint32(tiles),
            np.uint32(COPY_ROW_BYTES // 4), np.uint32(cfg.tile_rows), np.uint32(cfg.tile_bytes),
            np.uint32(cfg.stages))
    launch(mod, "tma_copy_stream", grid, (32,), args, shared_mem=smem, barrier_names=COPY_BARRIERS)
    kernel = mod.get_function("tma_copy_stream")

    def run():
        kernel(grid, (32,), args, shared_mem=smem)

    def raise_on_status():
        cp.cuda.Device().synchronize()
        rec = np.zeros(1, dtype=STATUS_DTYPE)
        st = mod.get_global("bw_status")
        cp.cuda.runtime.memcpy(rec.ctypes.data, st.ptr, STATUS_DTYPE.itemsize, cp.cuda.runtime.memcpyDeviceToHost)
        if rec["code"][0]:
            raise MbarrierTimeout("tma_copy_stream", COPY_BARRIERS.get(int(rec["barrier_id"][0]), "?"), rec[0])

    run.raise_on_status = raise_on_status
    return run


def bench_main(argv=None) -> int:
    cmd = Command("bench tma_copy", "TMA streaming copy (load -> SMEM -> store) vs cupy device-to-device copy",
                  stage="tma")
    cmd.add("--sizes-mib", default="256,512,1024,2048,4096")
    cmd.add("--repeat", type=int, default=20, help="quick: timed samples per row")
    cmd.add("--protocol", choices=["sustained", "quick"], default="sustained",
            help="sustained: bwlab.gemm.protocol (warm-up until the SM clock settles, alternating blocks of "
                 "seconds vs cupy, NVML clocks); quick: a configuration sweep, then median of --repeat samples")
    cmd.add("--config", default="32,4,1", help="sustained: tile_rows,stages,ctas_per_sm of the TMA copy")
    cmd.add("--block-s", type=float, default=2.0, help="sustained: seconds per block")
    cmd.add("--rounds", type=int, default=2, help="sustained: rounds of alternating blocks")
    args, say = cmd.start(argv)
    if args.protocol == "sustained":
        return cmd.finish(_sustained(args, say), "tma_copy")

    import cupy as cp

    from .. import device
    from ..runtime import bench
    info = device.gpu_info()
    say(f"GPU: {info.name} ({info.sm}, {info.sm_count} SMs, L2 {info.l2_bytes >> 20} MiB)")
    say("GB/s counts bytes read + bytes written (2 x size) per copy; median of "
        f"{args.repeat} timed samples (each max(1, 2048/size_MiB) back-to-back copies) after 3 warm-ups, "
        "CUDA events; baseline = cupy device-to-device copy (cudaMemcpyAsync) in the same process; "
        "'copy exact' = dst equals src after the first TMA copy")

    def measure(mib, cfgs):
        n = mib << 20
        src = cp.arange(n // 4, dtype=cp.uint32) * cp.uint32(2654435761)
        dst = cp.zeros_like(src)
        inner = max(1, 2048 // mib)  # copies per timed sample, so launch latency stays hidden

        def baseline():
            for _ in range(inner):
                dst.data.copy_from_device_async(src.data, n)
        base = bench("cupy d2d", baseline, repeat=args.repeat, bytes_moved=2 * n * inner)
        res = []
        for cfg in cfgs:
            dst.fill(0)
            copy = make_tma_copy(src, dst, cfg)
            ok = bool(cp.array_equal(src, dst))

            def timed():
                for _ in range(inner):
                    copy()
            r = bench(f"tma {cfg}", timed, repeat=args.repeat, bytes_moved=2 * n * inner)
            copy.raise_on_status()
            res.append((cfg, r, ok))
        return base, res

    sweep = [CopyConfig(t, s, c) for t, s, c in ((16, 4, 2), (16, 6, 2), (32, 3, 2), (32, 6, 1), (8, 8, 3),
                                                (16, 8, 1), (32, 4, 1))]
    say("")
    say("configuration sweep at 1024 MiB (tile = 256 x uint32 x tile_rows, stages in flight per CTA):")
    base, res = measure(1024, sweep)
    cp.get_default_memory_pool().free_all_blocks()
    say(f"  {'tile KiB':>8} {'stages':>6} {'CTAs/SM':>7} {'GB/s':>9} {'vs cupy':>8} {'copy exact':>10}")
    for cfg, r, ok in res:
        say(f"  {cfg.tile_bytes >> 10:8d} {cfg.stages:6d} {cfg.ctas_per_sm:7d} {r.gbps:9.1f} "
            f"{r.gbps / base.gbps:8.3f} {str(ok):>10}")
    say(f"  cupy d2d: {base.gbps:.1f} GB/s")
    best = max((x for x in res if x[2]), key=lambda x: x[1].gbps)[0]
    say(f"chosen: {best}")
    inexact = sum(not ok for _, _, ok in res)  # copies whose dst differs from src
    say("")
    say(f"{'size MiB':>8} {'cupy GB/s':>10} {'TMA GB/s':>9} {'ratio':>6} {'copy exact':>10}")
    worst = None
    for mib in [int(x) for x in args.sizes_mib.split(",")]:
        base, res = measure(mib, [best])
        cp.get_default_memory_pool().free_all_blocks()
        cfg, r, ok = res[0]
        ratio = r.gbps / base.gbps
        inexact += not ok
        worst = ratio if worst is None else min(worst, ratio)
        say(f"{mib:8d} {base.gbps:10.1f} {r.gbps:9.1f} {ratio:6.3f} {str(ok):>10}")
    say(f"lowest ratio {worst:.3f} (goal >= {COPY_GOAL}; quick protocol: single samples, no clock log)")
    return cmd.finish(inexact, "tma_copy")


COPY_GOAL = 0.97   # TMA copy / cupy device-to-device copy


def _sustained(args, say) -> int:
    """Every size under the sustained protocol: cupy's device-to-device copy is the baseline, the TMA copy
    (--config) the candidate; dst checked equal to src before anything is timed."""
    import cupy as cp

    from .. import device
    from ..gemm import protocol as P
    from .clocks import ClockLog
    from . import sustained as S
    info = device.gpu_info()
    proto = P.Protocol(block_s=args.block_s, rounds=args.rounds)
    cfg = CopyConfig(*[int(x) for x in args.config.split(",")])
    clocks = ClockLog(cp.cuda.Device().pci_bus_id).start()
    say(f"GPU: {info.name} ({info.sm}, {info.sm_count} SMs, L2 {info.l2_bytes >> 20} MiB); clock log: {clocks.source}")
    say(proto.describe().replace("library", "baseline").replace("of A and B", "of (src, dst)"))
    say(f"baseline: cupy device-to-device copy (cudaMemcpyAsync); candidate: tma_copy_stream {cfg}; GB/s counts "
        "bytes read + bytes written (2 x size); (src, dst) pairs rotated so that they hold >= 2 x L2")
    inexact, worst = 0, None
    try:
        for mib in [int(x) for x in args.sizes_mib.split(",")]:
            n = mib << 20
            sets = P.operand_sets(2 * n, info.l2_bytes, proto.l2_multiple, at_least=1)
            pairs = []
            for i in range(sets):
                src = cp.arange(n // 4, dtype=cp.uint32) * cp.uint32(2654435761) + cp.uint32(i)
                pairs.append((src, cp.zeros_like(src)))
            copies = [make_tma_copy(s, d, cfg) for s, d in pairs]   # each copies once and checks its waits
            ok = all(bool(cp.array_equal(s, d)) for s, d in pairs)
            inexact += not ok
            say(f"\n== {mib} MiB, {sets} (src, dst) pair(s); the TMA copy exact before timing: {ok}")
            if not ok:
                continue
            base = S.Candidate("cupy d2d", [lambda s=s, d=d: d.data.copy_from_device_async(s.data, n)
                                            for s, d in pairs], 2 * n)
            cand = S.Candidate(f"TMA copy {cfg.tile_bytes >> 10} KiB x {cfg.stages} stages x {cfg.ctas_per_sm} CTA/SM",
                               copies, 2 * n)
            rs = S.run(base, [cand], proto, say, clocks=clocks, tag=mib)
            for c in copies:
                c.raise_on_status()
            r = rs[1].summary.ratio
            worst = r if worst is None else min(worst, r)
            del pairs, copies
            cp.get_default_memory_pool().free_all_blocks()
    finally:
        clocks.stop()
    if worst is not None:
        say(f"\nlowest ratio TMA copy / cupy d2d {worst:.3f} (goal >= {COPY_GOAL}: "
            f"{'reached' if worst >= COPY_GOAL else 'not reached'})")
    return inexact


if __name__ == "__main__":
    raise SystemExit(bench_main())
