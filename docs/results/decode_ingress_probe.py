"""How fast do the decode rung's TMA rings fill an SM when it takes in 3 MiB (the K split at M = 256: 1 MiB of B
from DRAM, 2 MiB of A from L2) or 4 MiB (the M split: 2 of B, 2 of A)? decode_ldg_probe.py's TMA ring with
nothing else in it (each stage freed as soon as it lands, no MMA), two 64-row slabs of B per CTA and A's boxes in
each stage, 128 CTAs; for the M split every CTA reads rows of its own (N = 16384: no pair shares them).

    python docs/results/decode_ingress_probe.py [--out F]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    import cupy as cp
    sys.path.insert(0, "docs/results")
    from decode_ldg_probe import SRC
    from decode_protocol import event_ms, write_report
    from bwlab.checks.common import gpu_line
    from bwlab.runtime import encode_tensor_map, tensor_map_arg
    from bwlab.tma.tensor_map import TensorMap
    lines = [gpu_line(), "TMA rings with no MMA, 128 CTAs, two 64-row slabs of B and one box of A (from L2) per stage "
             "of 64 K; CUDA events, 40 launches x 5, median"]
    mod = cp.RawModule(code=SRC + "\nRING(ring_kb1_w2, 1, 2, 384)\n",
                       options=("-std=c++17", "-I" + os.path.join(os.getcwd(), "cuda_src")))
    f = mod.get_function("ring_kb1_w2")
    k = 8192
    rng = cp.random.default_rng(5)
    out = cp.zeros(1, cp.uint32)
    abuf = rng.integers(0, 2**31, 256 * k // 2, dtype=cp.uint32)
    amaps = {r: tensor_map_arg(encode_tensor_map(TensorMap("bfloat16", (k, r), (64, r), swizzle="128B"), abuf.data.ptr))
             for r in (128, 256)}
    for n, split, a_rows, what in ((8192, 2, 256, "the K split's shape (each CTA: 1 MiB of B, 2 MiB of A)"),
                                   (16384, 1, 128, "the M split's bytes (each CTA: 2 MiB of B, 2 MiB of A)"),
                                   (8192, 1, 128, "half the CTAs' worth: 64 CTAs of the M split's bytes")):
        bufs = [rng.integers(0, 2**31, n * k // 2, dtype=cp.uint32) for _ in range(2)]
        maps = [tensor_map_arg(encode_tensor_map(TensorMap("bfloat16", (k, n), (64, 64), swizzle="128B"), b.data.ptr))
                for b in bufs]
        stage = 2 * 8192 + a_rows * 128
        for stages in sorted({min(32, (227 * 1024 - 2048) // stage), 4}):
            f.max_dynamic_shared_size_bytes = stages * stage + 1024
            ctas = n // 128 * split
            calls = [lambda m=m, stages=stages, ctas=ctas, split=split, a_rows=a_rows, n=n, stage=stage:
                     f((ctas,), (384,), (m, amaps[a_rows], np.int32(n), np.int32(k), np.int32(split), np.int32(stages),
                                         np.int32(0), np.int32(a_rows), out), shared_mem=stages * stage + 1024)
                     for m in maps]
            t = event_ms(calls)
            per_cta = (n * k * 2 + ctas * a_rows * (k // split) * 2) / ctas
            lines.append(f"  {what}: {stages} stages of {stage // 1024} KiB, {ctas} CTAs: {t * 1e3:6.1f} us, "
                         f"{per_cta / 2**20:.1f} MiB into each SM at {per_cta / (t * 1e-3) / 1e9:5.1f} GB/s")   # (t in ms)
            print(lines[-1], flush=True)
        del bufs, maps
        cp.get_default_memory_pool().free_all_blocks()
    write_report(lines, "decode_ingress_probe.py", argv, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
