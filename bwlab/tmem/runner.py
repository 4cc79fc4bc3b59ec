"""The TMEM round trips on an sm_100-family GPU: cuda_src/tmem_sm100.cu, one kernel instantiation per
tcgen05.ld/st form (NVRTC name expressions). The only file of the stage that talks to CuPy and the
driver (lazily, inside the functions; compiling needs no GPU).
"""
from __future__ import annotations

import numpy as np

from .forms import SHAPE_CODE, TmemAccess, all_accesses, instructions_per_warp
from .model import check_roundtrip

__all__ = ["KERNEL_SOURCE", "kernel_name", "all_kernel_names", "compile_kernels", "run_ld_roundtrip",
           "run_st_roundtrip"]

KERNEL_SOURCE = "tmem_sm100"


def kernel_name(op: str, access: TmemAccess) -> str:
    """The NVRTC name expression of the round-trip kernel for one form, e.g.
    `tmem_ld_roundtrip<1, 8, 0, 0>` (template parameters: shape code, num, pack, half-split offset)."""
    if op not in ("ld", "st"):
        raise ValueError(f"op must be 'ld' or 'st', got {op!r}")
    off = access.half_split_off if access.shape == "16x32bx2" else 0
    return f"tmem_{op}_roundtrip<{SHAPE_CODE[access.shape]}, {access.num}, {int(access.pack16)}, {off}>"


def all_kernel_names(accesses=None) -> list[str]:
    accesses = all_accesses() if accesses is None else accesses
    return [kernel_name(op, a) for a in accesses for op in ("ld", "st")]


def compile_kernels(arch: str = "sm_100a", accesses=None):
    """Build tmem_sm100.cu with every form instantiated (no GPU needed; ptxas checks each one)."""
    from ..compile import compile_cuda
    return compile_cuda(KERNEL_SOURCE, arch=arch, name_expressions=all_kernel_names(accesses))


_MODULE_CACHE = {}


def _module():
    from ..compile import load_module
    if "m" not in _MODULE_CACHE:
        _MODULE_CACHE["m"] = load_module(KERNEL_SOURCE, name_expressions=all_kernel_names())
    return _MODULE_CACHE["m"]


def run_ld_roundtrip(access: TmemAccess, image: np.ndarray, col0: int = 0) -> np.ndarray:
    """Run tmem_ld_roundtrip on an sm_100 GPU; returns what `ld_roundtrip_model` computes:
    uint32 (4 warps, instructions per warp, 32 threads, registers)."""
    from .. import device
    check_roundtrip(access, image, col0)
    device.require("tmem")
    import cupy as cp
    from ..runtime import launch
    img = cp.asarray(image)
    out = cp.zeros((4, instructions_per_warp(access), 32, access.registers), dtype=cp.uint32)
    launch(_module(), kernel_name("ld", access), (1,), (128,), (img, out, np.uint32(col0)))
    return cp.asnumpy(out)


def run_st_roundtrip(access: TmemAccess, image: np.ndarray, regs: np.ndarray,
                     col0: int = 0) -> np.ndarray:
    """Run tmem_st_roundtrip on an sm_100 GPU; returns what `st_roundtrip_model` computes: the
    (128, 512) TMEM image after the stores."""
    from .. import device
    check_roundtrip(access, image, col0, regs, "st")
    device.require("tmem")
    import cupy as cp
    from ..runtime import launch
    img = cp.asarray(image)
    regs_d = cp.asarray(np.ascontiguousarray(regs, dtype=np.uint32))
    out = cp.zeros_like(img)
    launch(_module(), kernel_name("st", access), (1,), (128,), (img, regs_d, out, np.uint32(col0)))
    return cp.asnumpy(out)
