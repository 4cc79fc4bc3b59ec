"""Side experiments for the ladder (run on the device): s2's ring depth and occupancy."""
import sys
import cupy as cp
from bwlab.gemm import runner
from bwlab.gemm.ladder import step
from bwlab.lab import TeachingKernel
from bwlab.runtime import bench
import dataclasses

m = n = k = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
a, b = runner.random_operands(m, n, k)
ref = runner.reference(a, b)
flop = 2.0 * m * n * k
base = step("s2")
for stages in (2, 3, 4, 6):
    s = dataclasses.replace(base, stages=stages)
    ring = TeachingKernel(s.path).replace("#define GEMM_STAGES 3", f"#define GEMM_STAGES {stages}")
    L = runner.prepare(s, a, b, kernel=ring)
    runner.clear_status(L); L(); runner.raise_on_status(L)
    res = runner.check(a, b, L.c, f"s2 stages={stages}", ref=ref)
    r = bench("x", L, 3, 10)
    occ = cp.cuda.runtime.occupancyMaxActiveBlocksPerMultiprocessor(L.fn.ptr, 128, s.smem_bytes) \
        if hasattr(cp.cuda.runtime, "occupancyMaxActiveBlocksPerMultiprocessor") else "?"
    print(f"s2 stages={stages}: {flop / r.median_ms / 1e9:.1f} TFLOP/s, CTAs/SM {occ}, {res.ok}")
for name in ("s1", "s4", "s5", "s6"):
    L = runner.prepare(name, a, b)
    runner.clear_status(L); L(); runner.raise_on_status(L)
    r = bench("x", L, 3, 10)
    print(f"{name}: {flop / r.median_ms / 1e9:.1f} TFLOP/s {runner.check(a, b, L.c, name, ref=ref).ok}")
