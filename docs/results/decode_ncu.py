"""Launch cuBLAS (torch.matmul) or the decode rung (its table configuration) at M x 8192 x 8192 five times, for
Nsight Compute to profile the fourth: docs/results/decode_ncu_h200.txt (its last line has the ncu command).

    python3 docs/results/decode_ncu.py {cublas|rung|s5x128} M

s5x128: the ladder's step 5 with cuBLAS's 128 x 128 tile and 6 stages (decode_s5_probe.py's edit of the step).
"""
import sys
import cupy as cp
import numpy as np
import torch
what, m = sys.argv[1], int(sys.argv[2])
n = k = 8192
rng = np.random.default_rng(0)
if what == "cublas":
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    for _ in range(5):
        c = a @ b.T
    torch.cuda.synchronize()
elif what == "s5x128":
    sys.path.insert(0, "docs/results")
    from decode_s5_probe import s5_tile
    from bwlab.gemm import runner
    a = cp.asarray(rng.integers(0x3c00, 0x3f80, size=(m, k), dtype=np.uint16))
    b = cp.asarray(rng.integers(0x3c00, 0x3f80, size=(n, k), dtype=np.uint16))
    step, kern = s5_tile(128, 6)
    L = runner.prepare(step, a, b, kernel=kern)
    print(what, m, "grid", L.grid, "block", L.block, "smem", L.smem)
    for _ in range(5):
        L()
    cp.cuda.Device().synchronize()
else:
    from bwlab.gemm import decode
    a = cp.asarray(rng.integers(0x3c00, 0x3f80, size=(m, k), dtype=np.uint16))
    b = cp.asarray(rng.integers(0x3c00, 0x3f80, size=(n, k), dtype=np.uint16))
    L = decode.prepare(decode.SWAP_AB, a, b)
    print(what, m, "grid", L.grid, "block", L.block, "smem", L.smem, "stages", L.stages)
    for _ in range(5):
        L()
    cp.cuda.Device().synchronize()
print("done", what, m)
