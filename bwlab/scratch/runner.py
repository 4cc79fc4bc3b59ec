"""Runs a step's kernel: on this GPU (CuPy) or in the PTX emulator (the only file here that touches a GPU).

    from bwlab.scratch import runner, model
    a, b = model.random_operands(64, 64, 32)
    c = runner.run_step("s3", a, b)        # f32 C, M x N, from cuda_src/scratch/s3_smem_tiling.cu

`bench(M, N, K)` times every step on a GPU with CUDA events (warm-up launches first) beside
cupy.matmul of the same f16 operands (cuBLAS) in the same process.
"""
from __future__ import annotations

import numpy as np

from .steps import require_shape, step

__all__ = ["run_step", "emulator_runs", "bench"]


def _launch(s, a, b, kernel=None, xp=None, be=None):
    from ..runtime import backend_for, launch
    be = be or backend_for("tma")
    xp = be.xp
    M, K = a.shape
    N = b.shape[1]
    da = xp.asarray(np.ascontiguousarray(a, np.float16).view(np.uint16)) if isinstance(a, np.ndarray) else a
    db = xp.asarray(np.ascontiguousarray(b, np.float16).view(np.uint16)) if isinstance(b, np.ndarray) else b
    dc = xp.zeros((M, N), np.float32)
    mod = be.load(kernel if kernel is not None else s.file)
    args = (da, db, dc, np.int32(M), np.int32(N), np.int32(K))
    launch(mod, "gemm", s.grid(M, N), s.block, args)
    return dc, mod, args


def run_step(which, a, b, kernel=None) -> np.ndarray:
    """C = A B (f32, NumPy) by one step's kernel, or by `kernel` (a learner's edit of that file, a
    `bwlab.lab.TeachingKernel`), on this GPU or in the PTX emulator."""
    s = step(which)
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"A is M x K and B is K x N: got shapes {a.shape} and {b.shape}")
    require_shape(s, a.shape[0], b.shape[1], a.shape[1])
    if kernel is not None and getattr(kernel, "file", s.file) != s.file:
        raise ValueError(f"{s.name} runs {s.file}; got an edit of {kernel.file}")
    dc, _, _ = _launch(s, a, b, kernel)
    from ..runtime import backend_for
    return np.asarray(backend_for("tma").xp.asnumpy(dc))


def emulator_runs(which) -> bool:
    """Whether the PTX emulator executes every instruction of the step's kernel (it decodes the whole
    program when it loads it)."""
    from ..emu.errors import UnsupportedInstruction
    from ..runtime import EMULATED
    try:
        EMULATED.load(step(which).file)
    except UnsupportedInstruction:
        return False
    return True


def bench(M: int, N: int, K: int, warmup: int = 3, repeat: int = 10, seed: int = 0) -> dict:
    """Every step on an M x N x K problem on this GPU, then cupy.matmul (cuBLAS) of the same f16
    operands (its C is f16, accumulated in f32): {name: median ms} and each step's worst error against the f32 matmul
    (relative to |A| |B|, must be <= model.SUM_TOL)."""
    import cupy as cp
    from ..runtime import GPU, bench as time_it
    from .steps import STEPS
    rng = cp.random.default_rng(seed)
    a = (rng.random((M, K), dtype=cp.float32) * 2 - 1).astype(cp.float16)
    b = (rng.random((K, N), dtype=cp.float32) * 2 - 1).astype(cp.float16)
    ref = cp.matmul(a.astype(cp.float32), b.astype(cp.float32))
    scale = cp.matmul(cp.abs(a).astype(cp.float32), cp.abs(b).astype(cp.float32))
    out = {"ms": {}, "err": {}}
    for s in STEPS:
        require_shape(s, M, N, K)
        dc, mod, args = _launch(s, a.view(cp.uint16), b.view(cp.uint16), be=GPU)
        out["err"][s.name] = float(cp.max(cp.abs(dc - ref) / scale))
        fn = mod.get_function("gemm")
        grid, block = s.grid(M, N), s.block
        out["ms"][s.name] = time_it(s.name, lambda: fn(grid, (*block, 1), args), warmup, repeat).median_ms
    out["ms"]["cublas"] = time_it("cupy.matmul", lambda: cp.matmul(a, b), warmup, repeat).median_ms
    return out
