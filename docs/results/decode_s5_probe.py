"""M = 256 through the ladder's step 5 with cuBLAS's tile: is the kernel cuBLAS runs at 256 x 8192 x 8192 (nvjet
128 x 128, 64 K per stage, 6 stages, clusters of 2 along M, B multicast, K whole; decode_ncu_h200.txt) within reach
of the ladder's own cluster-multicast step once that step takes a 128 x 128 tile? The step's file is compiled with
its tile and ring changed (`BN = 128, STAGES = S`: the learner's-edit path, bwlab.lab.TeachingKernel.replace), so
128 CTAs each compute one 128 x 128 tile over all of K; against the read stream, cuBLAS, the decode rung's table
and the step as it stands (128 x 256: 64 CTAs). Short CUDA-event timings: 40 launches a round, round robin over
the candidates and the library, the median of the rounds; every C checked against the f32 reference first.
(Section 45's 'one MMA warpgroup' rows ran cuda_src/gemm_sm90/sd_tile_128.cu of commit 2061ac2, since removed.)

    python docs/results/decode_s5_probe.py [--m 256] [--stages 5 6 7] [--poll 1 2] [--rounds 7] [--out F]
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace



EARLY = (("                wgmma_wait_group<1>();\n                if (kt > 0) {\n"
          "                    if (lead) stamp(stamps, 1 + c, it - 1, 1);\n                    release(it - 1);\n"
          "                }\n",
          "                wgmma_wait_group<0>();   // (early hand-back) this stage's wgmma done: its slot back now\n"
          "                wgmma_fence();\n                release(it);\n"),
         ("            if (lead) stamp(stamps, 1 + c, it - 1, 1);\n            release(it - 1);\n", ""))


def s5_tile(bn: int, stages: int, poll: int | None = None, early: bool = False):
    """Step 5 with a bn-column tile and a ring of `stages`: (the Step, the edited kernel); `poll`: the kernel built
    with that BW_WAIT_POLL (cuda_src/ptx/mbarrier.cuh's bounded wait); `early`: each stage handed back as soon as
    its own wgmma are done (wait_group 0), as the decode rung's Config.early, not once the next stage's are issued."""
    from bwlab.gemm import ladder
    from bwlab.lab import TeachingKernel
    s5 = ladder.step("s5_cluster_multicast")
    step = replace(s5, bn=bn, stages=stages, b_box_rows=bn // 2)
    kern = TeachingKernel(s5.path).replace("BN = 256, STAGES = 4", f"BN = {bn}, STAGES = {stages}")
    for old, new in (EARLY if early else ()):
        kern = kern.replace(old, new)
    if poll is not None:
        inc = '#include "gemm_sm90/gemm_common.cuh"'
        kern = kern.replace(inc, f"#define BW_WAIT_POLL {poll}\n{inc}")
    return step, kern


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--m", type=int, nargs="*", default=[256])
    ap.add_argument("--stages", type=int, nargs="*", default=[5, 6, 7])
    ap.add_argument("--rounds", type=int, default=7, help="rounds of the round-robin timing")
    ap.add_argument("--l2", nargs="*", default=[], choices=["none", "64B", "128B", "256B"],
                    help="also step 5 at 128 x 128, 6 stages, with A's and B's tensor maps at this L2 promotion")
    ap.add_argument("--poll", type=int, nargs="*", default=[],
                    help="also each BW_WAIT_POLL here (the step at 6 stages, the rung's table at every M)")
    args = ap.parse_args(argv)
    import cupy as cp
    sys.path.insert(0, "docs/results")
    from decode_protocol import event_ms, round_robin, stream_calls, write_report
    from bwlab.checks.common import gpu_line
    from bwlab.checks.gemm_sustained import _library
    from bwlab.device import gpu_info
    from bwlab.gemm import decode, runner
    from bwlab.gemm import protocol as P
    info = gpu_info()
    n = k = 8192
    lines = [gpu_line(), "step 5 (clusters of 2 along M, B multicast) with cuBLAS's 128 x 128 tile at decode M; "
             f"CUDA events, 40 launches per round, {args.rounds} rounds round robin, median"]
    print(lines[0], flush=True)
    for m in args.m:
        nsets = P.operand_sets(2 * (m * k + n * k), info.l2_bytes, 2.0)
        sets = [runner.random_operands(m, n, k, seed=m + i) for i in range(nsets)]
        ref = runner.reference(*sets[0])
        nbytes = decode.bytes_moved(m, n, k)
        st_calls, keep = stream_calls(nbytes, nsets, info.sm_count)
        t_st = event_ms(st_calls)
        lib_name, lib_calls, lib_c = _library(sets, True)
        t_lib = event_ms(lib_calls)
        lines.append(f"== {m}x{n}x{k}: stream {t_st * 1e3:.1f} us; {lib_name} {t_lib * 1e3:.1f} us; "
                     f"{runner.check(*sets[0], lib_c, 'library', ref=ref).ok}")
        print(lines[-1], flush=True)
        cands = [("sd_swap_ab (table)", [decode.prepare(decode.SWAP_AB, a, b) for a, b in sets])]
        for l2 in (args.l2 if m % 256 == 0 else []):
            step, kern = s5_tile(128, 6)
            cands.append((f"s5 128x128, 6 stages, l2 {l2}", [runner.prepare(step, a, b, kernel=kern, l2_promotion=l2)
                                                            for a, b in sets]))
        for poll in args.poll:
            cands.append((f"sd_swap_ab (table), poll {poll}",
                          [decode.prepare(decode.SWAP_AB, a, b, defines={"BW_WAIT_POLL": poll}) for a, b in sets]))
            if m % 256 == 0:
                for early in (False, True):
                    step, kern = s5_tile(128, 6, poll, early)
                    cands.append((f"s5 128x128, 6 stages, poll {poll}" + (", early" if early else ""),
                                  [runner.prepare(step, a, b, kernel=kern) for a, b in sets]))
        from bwlab.gemm import ladder
        try:
            if m % 256:
                raise ValueError(f"M = {m}: step 5 takes M in multiples of 256")
            cands.append(("s5 128x256 (as it stands)", [runner.prepare(ladder.step("s5_cluster_multicast"), a, b)
                                                         for a, b in sets]))
        except ValueError as e:
            lines.append(f"  s5 128x256 not run: {e}")
        for st in (args.stages if m % 256 == 0 else []):
            for early in (False, True):
                step, kern = s5_tile(128, st, early=early)
                label = f"s5 128x128, {st} stages" + (", early" if early else "")
                try:
                    cands.append((label, [runner.prepare(step, a, b, kernel=kern) for a, b in sets]))
                except ValueError as e:
                    lines.append(f"  {label} not run: {e}")
        good = []
        for name, calls in cands:
            calls[0]()
            cp.cuda.Device().synchronize()
            ok = runner.check(*sets[0], calls[0].c, name, ref=ref)
            if not ok.ok:
                lines.append(f"  {name:<28s} {ok}")
            else:
                good.append((name, calls))
        t_lib, ts = round_robin(lib_calls, good, args.rounds)
        lines.append(f"  library, round robin: {t_lib * 1e3:.1f} us")
        for name, calls in good:
            t = ts[name]
            lines.append(f"  {name:<28s} {t * 1e3:6.1f} us  {t_lib / t:.3f} x lib  {t_st / t:.3f} of the stream  "
                         f"{2 * m * n * k / t / 1e9:.0f} TFLOP/s  grid {calls[0].grid[0]}")
            print(lines[-1], flush=True)
        del sets, ref, keep, cands
        cp.get_default_memory_pool().free_all_blocks()
    write_report(lines, "decode_s5_probe.py", argv, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
