"""The TMEM round trips on an sm_100-family GPU: cuda_src/tmem_sm100.cu, one kernel instantiation per
tcgen05.ld/st form (NVRTC name expressions). The only file of the stage that talks to CuPy and the
driver (lazily, inside the functions; compiling needs no GPU).
"""
from __future__ import annotations

import re

import numpy as np

from ..hw.tmem import TmemError
from .forms import SHAPE_CODE, TmemAccess, all_accesses, instructions_per_warp
from .model import require_roundtrip
from .tables import LDST_PACK, require_alloc, require_ldst

__all__ = ["KERNEL_SOURCE", "launch_teach", "kernel_name", "all_kernel_names", "compile_kernels", "run_ld_roundtrip",
           "run_st_roundtrip", "require_configurations", "kernel_allocation_columns", "require_teach_num"]

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


def kernel_allocation_columns() -> int:
    """The columns tmem_sm100.cu allocates (`kTmemColumns`), read from the source."""
    from ..source import source_text
    m = re.search(r"constexpr\s+u32\s+kTmemColumns\s*=\s*(\d+)\s*;", source_text(f"{KERNEL_SOURCE}.cu"))
    if m is None:
        raise TmemError(f"{KERNEL_SOURCE}.cu: no `constexpr u32 kTmemColumns = N;` found")
    return int(m.group(1))


def require_configurations(accesses=None) -> None:
    """Every configuration tmem_sm100.cu is built with, checked against the ISA's tables before it is
    compiled: the tcgen05.alloc/dealloc column count, and each ld and st form under test (its .shape,
    .num, pack/unpack and half-split offset, Table 49) plus the .32x32b.x32 forms that fill and read
    back TMEM."""
    require_alloc("alloc", 1, kernel_allocation_columns())
    require_alloc("dealloc", 1, kernel_allocation_columns())
    require_alloc("relinquish_alloc_permit", 1)
    for op in ("ld", "st"):
        require_ldst(op, "32x32b", 32)
    for a in (all_accesses() if accesses is None else accesses):
        for op in ("ld", "st"):
            require_ldst(op, a.shape, a.num, LDST_PACK[op] if a.pack16 else None,
                         a.half_split_off if a.shape == "16x32bx2" else None)


def compile_kernels(arch: str = "sm_100a", accesses=None):
    """Build tmem_sm100.cu with every form instantiated (no GPU needed; ptxas checks each one), after
    checking every configuration against the ISA's tables."""
    from ..compile import compile_cuda
    require_configurations(accesses)
    return compile_cuda(KERNEL_SOURCE, arch=arch, name_expressions=all_kernel_names(accesses))


_MODULE_CACHE = {}


def _backend():
    """tcgen05.ld/st run on an sm_100 GPU, or in the PTX emulator (the sm_100a PTX) in the emulated tier."""
    from .. import device
    from ..runtime import EMULATED, GPU
    if device.tier("tmem") == "emulated":
        return EMULATED
    device.require("tmem")
    return GPU


def _module(be=None, access=None, op=None):
    """The round-trip module: on a GPU every form at once; in the emulator only the form asked for
    (decoding 2 x 100+ instantiations would take longer than running one)."""
    from ..compile import load_module
    if be is not None and be.emulated:
        require_configurations([access])
        return be.load(f"{KERNEL_SOURCE}.cu", name_expressions=(kernel_name(op, access),), arch="sm_100a")
    if "m" not in _MODULE_CACHE:
        require_configurations()
        _MODULE_CACHE["m"] = load_module(KERNEL_SOURCE, name_expressions=all_kernel_names())
    return _MODULE_CACHE["m"]


def run_ld_roundtrip(access: TmemAccess, image: np.ndarray, col0: int = 0) -> np.ndarray:
    """Run tmem_ld_roundtrip on an sm_100 GPU; returns what `ld_roundtrip_model` computes:
    uint32 (4 warps, instructions per warp, 32 threads, registers)."""
    require_roundtrip(access, image, col0)
    be = _backend()
    cp = be.xp
    from ..runtime import launch
    img = cp.asarray(image)
    out = cp.zeros((4, instructions_per_warp(access), 32, access.registers), dtype=np.uint32)
    launch(_module(be, access, "ld"), kernel_name("ld", access), (1,), (128,), (img, out, np.uint32(col0)))
    return cp.asnumpy(out)


def run_st_roundtrip(access: TmemAccess, image: np.ndarray, regs: np.ndarray,
                     col0: int = 0) -> np.ndarray:
    """Run tmem_st_roundtrip on an sm_100 GPU; returns what `st_roundtrip_model` computes: the
    (128, 512) TMEM image after the stores."""
    require_roundtrip(access, image, col0, regs, "st")
    be = _backend()
    cp = be.xp
    from ..runtime import launch
    img = cp.asarray(image)
    regs_d = cp.asarray(np.ascontiguousarray(regs, dtype=np.uint32))
    out = cp.zeros(image.shape, np.uint32)
    launch(_module(be, access, "st"), kernel_name("st", access), (1,), (128,), (img, regs_d, out, np.uint32(col0)))
    return cp.asnumpy(out)


def require_teach_num(plan) -> None:
    """Refuse a teaching kernel whose kNum is not a .num of tcgen05.ld .32x32b (x1 .. x128)."""
    if not 1 <= plan.num <= 128:
        raise TmemError(f"kNum = {plan.num}: .32x32b takes .num x1 .. x128")


def launch_teach(kernel=None) -> np.ndarray:
    """Run the teaching kernel cuda_src/teach_tmem.cu (or `kernel`: a `bwlab.lab.TeachingKernel` or
    CUDA text; None takes the learner's `%%cuda teach_tmem.cu` version) on an sm_100 GPU: one CTA of
    128 threads. Returns what `teach_model` computes: uint32 (4 warps, 1 load, 32 threads, kNum);
    registers the kernel never wrote read 0xffffffff."""
    from .. import device
    from .teach import teach_kernel, teach_plan
    k = teach_kernel(kernel)
    plan = teach_plan(k)
    require_teach_num(plan)
    be = _backend()
    from ..lab import isolate, run_edited
    if not be.emulated and isolate(k):
        return run_edited(launch_teach, kernel=k)
    cp = be.xp
    from ..runtime import launch
    out = cp.full((4, 1, 32, plan.num), 0xFFFFFFFF, dtype=np.uint32)
    launch(be.load(k, arch="sm_100a"), "teach_tmem", (1,), (128,), (out,))
    return cp.asnumpy(out)
