"""Run a capstone kernel: in the PTX emulator (NumPy operands, no GPU) or on a GPU (CuPy).

    from bwlab.capstone.skeleton import assemble
    c, launch = run_emulated(assemble("hopper", fills), a, b)     # a: M x K, b: N x K, bf16 bits (uint16)

The launch is the persistent one of the ladder's step 4: min(sms, tiles) CTAs of the skeleton's threads,
each walking its tiles; in the emulator `sms` is small (2) so that every CTA walks several tiles, every
stage of the ring is filled several times and both accumulators of the Blackwell twin are reused.
"""
from __future__ import annotations

import numpy as np

from ..hw.dtypes import from_float
from ..runtime import encode_tensor_map
from ..tma.tensor_map import TensorMap
from .skeleton import Assembled, skeleton

__all__ = ["constants", "launch_shape", "tensor_maps", "run_emulated", "run_gpu", "random_operands",
           "require_problem"]


def constants(kernel: str) -> dict:
    """The skeleton's constexpr integers (BM, BN, STAGES, STAGE_BYTES ...), read from its text."""
    from ..gemm.sm100 import kernel_constants
    return kernel_constants(skeleton(kernel).file)


def require_problem(kernel: str, M: int, N: int, K: int) -> dict:
    """The kernel's constants, after checking that M, N, K are whole tiles (the kernel has no edge
    handling): ValueError naming the rule otherwise."""
    k = constants(kernel)
    for name, v, unit, why in (("M", M, k["BM"], "tile rows"), ("N", N, k["BN"], "tile columns"),
                               ("K", K, k["BK"], "K per stage")):
        if v <= 0 or v % unit:
            raise ValueError(f"{name} = {v} must be a positive multiple of {unit} ({why} of the {kernel} "
                             "capstone): its kernel computes whole tiles only")
    return k


def launch_shape(kernel: str, M: int, N: int, sms: int) -> tuple[tuple, tuple, int]:
    """(grid, block, dynamic SMEM bytes): min(sms, tiles) persistent CTAs."""
    k = constants(kernel)
    tiles = (M // k["BM"]) * (N // k["BN"])
    return (max(1, min(tiles, int(sms))), 1, 1), (skeleton(kernel).threads, 1, 1), k["STAGES"] * k["STAGE_BYTES"] + 1024


def tensor_maps(kernel: str, M: int, N: int, K: int):
    """A's and B's tensor maps: boxes of 64 (K) x BM / BN rows, 128B swizzle (one box row = one swizzle row)."""
    k = require_problem(kernel, M, N, K)
    return (TensorMap("bfloat16", (K, M), (k["BK"], k["BM"]), swizzle="128B"),
            TensorMap("bfloat16", (K, N), (k["BK"], k["BN"]), swizzle="128B"))


def random_operands(M: int, N: int, K: int, seed: int = 0):
    """A (M x K) and B (N x K) as bf16 bits, uniform in [-1, 1)."""
    rng = np.random.default_rng(seed)
    return (from_float(rng.random((M, K), dtype=np.float32) * 2 - 1, "bf16"),
            from_float(rng.random((N, K), dtype=np.float32) * 2 - 1, "bf16"))


def _teaching(asm: Assembled):
    from ..lab import TeachingKernel
    return TeachingKernel(asm.file, asm.text)


def _args(kernel, maps, ptrs, c, M, N, K, err):
    from ..runtime import tensor_map_arg
    args = [tensor_map_arg(encode_tensor_map(t, p)) for t, p in zip(maps, ptrs)]
    args += [c, np.int32(M), np.int32(N), np.int32(K)]
    return tuple(args + ([err] if kernel == "blackwell" else []))


def run_emulated(asm: Assembled, a, b, sms: int = 2, seed: int = 0, timing=None):
    """C = A * B^T by the assembled kernel in bwlab.emu: (C as bf16 bits, the emulator's Launch). Raises
    what the emulator raises (a ProtocolError naming the rule, EmuHang, MbarrierTimeout) or RuntimeError
    when the Blackwell kernel's error word names a wait that gave up. `timing`: a bwlab.timing Recorder."""
    from .. import emu
    from ..runtime import EMULATED, launch
    a, b = np.ascontiguousarray(a, np.uint16), np.ascontiguousarray(b, np.uint16)
    (M, K), (N, _) = a.shape, b.shape
    sk = skeleton(asm.kernel)
    maps = tensor_maps(asm.kernel, M, N, K)
    da, db, dc = emu.asarray(a), emu.asarray(b), emu.zeros((M, N), np.uint16)
    err = emu.zeros(1, np.uint32)
    module = EMULATED.load(_teaching(asm), arch=sk.arch)
    fn = module.get_function("gemm")
    fn.seed = seed
    grid, block, smem = launch_shape(asm.kernel, M, N, sms)
    run = launch(module, "gemm", grid, block, _args(asm.kernel, maps, (da.data.ptr, db.data.ptr), dc, M, N, K, err),
                 shared_mem=smem, barrier_names=sk.barriers, timing=timing)
    code = int(err.get()[0])
    if code:
        raise RuntimeError(f"a bounded wait on {sk.barriers.get(code - 1, code)} gave up")
    return dc.get(), run


def run_gpu(asm: Assembled, a, b, sms: int | None = None):
    """The same on this GPU (the Hopper kernel needs sm_90a, the Blackwell one sm_100a): C as bf16 bits
    (NumPy). `sms`: the number of persistent CTAs (default: the GPU's SM count)."""
    import cupy as cp
    from ..device import gpu_info
    from ..runtime import launch
    sk = skeleton(asm.kernel)
    a, b = np.ascontiguousarray(a, np.uint16), np.ascontiguousarray(b, np.uint16)
    (M, K), (N, _) = a.shape, b.shape
    maps = tensor_maps(asm.kernel, M, N, K)
    da, db, dc = cp.asarray(a), cp.asarray(b), cp.zeros((M, N), cp.uint16)
    err = cp.zeros(1, cp.uint32)
    module = _teaching(asm).load()
    grid, block, smem = launch_shape(asm.kernel, M, N, sms or gpu_info().sm_count)
    launch(module, "gemm", grid, block, _args(asm.kernel, maps, (da.data.ptr, db.data.ptr), dc, M, N, K, err),
           shared_mem=smem, barrier_names=sk.barriers)
    if int(cp.asnumpy(err)[0]):
        raise RuntimeError(f"a bounded wait on {sk.barriers.get(int(cp.asnumpy(err)[0]) - 1)} gave up")
    return cp.asnumpy(dc)
