"""Where split-K's time goes at 128 x 8192 x 8192: sk_split_k with 1, 2, 4, 8 and 16 K pieces (each
checked against the f32 reference first), beside step 4 and torch.matmul bf16 (cuBLAS); operands
rotated through 2 sets; CUDA events around 50 launches, median of 15 such samples after 1 s of
warm-up, each variant in turn, twice. Run on the device machine: python3 docs/results/skinny_probe.py
"""
import statistics
import time

import cupy as cp
import torch

from bwlab.gemm import runner

m, n, k = 128, 8192, 8192
sets = [runner.random_operands(m, n, k, seed=11 + i) for i in range(2)]
ref = runner.reference(*sets[0])


def timed(calls, samples=15, per=50):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 1.0:
        for c in calls:
            c()
    out = []
    for _ in range(samples):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for i in range(per):
            calls[i % len(calls)]()
        e.record()
        e.synchronize()
        out.append(cp.cuda.get_elapsed_time(s, e) / per * 1000)
    return statistics.median(out)


variants = {}
for splits in (1, 2, 4, 8, 16):
    ls = [runner.prepare("sk_split_k", a, b, splits=splits) for a, b in sets]
    ls[0]()
    res = runner.check(*sets[0], ls[0].c, f"sk_split_k splits={splits}", ref=ref)
    print(res)
    variants[f"sk_split_k, {splits} pieces (grid {ls[0].grid[0]})"] = ls
l4 = [runner.prepare("s4_persistent", a, b) for a, b in sets]
variants["s4_persistent"] = l4
tc = [torch.empty((m, n), dtype=torch.bfloat16, device="cuda") for _ in sets]
tv = [(torch.from_dlpack(a).view(torch.bfloat16), torch.from_dlpack(b).view(torch.bfloat16)) for a, b in sets]
variants["torch.matmul bf16 (cuBLAS)"] = [lambda i=i: torch.mm(tv[i][0], tv[i][1].t(), out=tc[i]) for i in range(2)]
for rnd in range(2):
    for name, calls in variants.items():
        us = timed(calls)
        print(f"round {rnd}  {name:<40s} {us:7.1f} us  {2 * m * n * k / us / 1e6:6.1f} TFLOP/s  "
              f"B+A at {2 * (m * k + n * k) / us / 1e6:5.2f} TB/s")
