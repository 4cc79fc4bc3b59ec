"""GPU runners of stage 3: the only place here that imports CuPy (inside the functions).

* `run_umma(case)`  — cuda_src/umma_sm100.cu on an sm_100 GPU: the TMEM image after the K loop, the
  same array `UmmaCase.model()` returns;
* `run_wgmma(case)` — cuda_src/wgmma_sm90.cu on a Hopper GPU: D (64 x N float32), the same array
  `WgmmaCase.model()` returns. `launch_wgmma` also says at which SMEM address the operand image sat.
"""
from __future__ import annotations

import numpy as np

from ..hw.tmem import LANES
from .model import wgmma_d_fragment

__all__ = ["UMMA_BARRIERS", "WGMMA_BARRIERS", "run_umma", "run_wgmma", "launch_wgmma", "TEACH_SMEM_BYTES",
           "require_teach_wgmma", "require_teach_umma", "run_teach_wgmma", "run_teach_umma"]

WGMMA_BARRIERS: dict = {}          # the wgmma kernel waits on no mbarrier (wgmma.wait_group)
UMMA_BARRIERS = {0: "mma_done"}


def run_umma(case, module=None) -> np.ndarray:
    """Run `case` (an UmmaCase) on an sm_100 GPU (cuda_src/umma_sm100.cu); returns the TMEM image
    (128 lanes x case.tmem_columns) that tcgen05.ld read back after the K loop."""
    from ..runtime import launch
    be = umma_backend()              # raises UnsupportedGPU (before any driver call) off sm_100
    cp = be.xp
    module = module or be.load("umma_sm100.cu", arch="sm_100a")
    img = case.smem_image()
    ad, bd = case.descriptors()
    cols = case.tmem_columns
    out = cp.zeros((LANES, cols), np.uint32)
    launch(module, "umma_validate", (1,), (128,),
           (cp.asarray(img), np.uint32(img.size), cp.asarray(ad), cp.asarray(bd), np.uint32(case.k_blocks),
            np.uint32(case.idesc), np.uint32(case.kind == "tf32"), np.uint32(case.accumulate),
            cp.asarray(case.tmem_init()), out, np.uint32(cols)),
           shared_mem=img.size + 1024, barrier_names=UMMA_BARRIERS)
    return cp.asnumpy(out)


def launch_wgmma(case, module=None):
    """Run `case` (a WgmmaCase) on a Hopper GPU (cuda_src/wgmma_sm90.cu). Returns (D 64 x N float32,
    the SMEM address where the operand image started)."""
    from ..runtime import launch
    be = wgmma_backend()
    cp = be.xp
    module = module or be.load("wgmma_sm90.cu")
    img = case.smem_image()
    ad, bd = case.descriptors()
    frag_t, frag_r = wgmma_d_fragment(case.N)
    d0 = case.values()[2].astype(np.float32)
    d_init = np.zeros((128, case.N // 2), np.float32)
    d_init[frag_t, frag_r] = d0
    d_img, d_ad, d_bd = cp.asarray(img), cp.asarray(ad), cp.asarray(bd)
    d_in, d_out = cp.asarray(d_init), cp.zeros((128, case.N // 2), np.float32)
    base = cp.zeros(1, np.uint32)
    launch(module, f"wgmma_m64n{case.N}k16_validate", (1,), (128,),
           (d_img, np.uint32(img.size), d_ad, d_bd, np.uint32(case.k_blocks), np.uint32(case.variant),
            np.uint32(case.accumulate), d_in, d_out, base),
           shared_mem=img.size + 1024, barrier_names=WGMMA_BARRIERS)
    regs = cp.asnumpy(d_out)
    return regs[frag_t, frag_r], int(cp.asnumpy(base)[0])


def umma_backend():
    """tcgen05.mma runs on an sm_100 GPU, or in the PTX emulator (its sm_100a PTX) in the emulated tier."""
    from .. import device
    from ..runtime import EMULATED, GPU
    if device.tier("umma") == "emulated":
        return EMULATED
    device.require("umma")
    return GPU


def wgmma_backend():
    """Hopper's wgmma runs on an sm_90a GPU, or in the PTX emulator in the emulated tier."""
    from .. import device
    from ..runtime import EMULATED, GPU
    if device.tier("tma") == "emulated":
        return EMULATED
    info = device.require("tma")
    if not info.has_wgmma:
        raise device.UnsupportedGPU(f"wgmma.mma_async needs sm_90a (Hopper); this GPU is {info.name} ({info.sm})")
    return GPU


def run_wgmma(case, module=None) -> np.ndarray:
    """D (64 x N float32) of `case` run by wgmma on a Hopper GPU: the same array `case.model()` gives."""
    return launch_wgmma(case, module)[0]


# ------------------------------------------------------------------------------------------------
# the teaching kernels
# ------------------------------------------------------------------------------------------------

TEACH_SMEM_BYTES = 32768           # the operand buffer of teach_wgmma.cu and teach_umma.cu


def _teach_descriptors(case, descriptors):
    ad, bd = case.descriptors() if descriptors is None else descriptors
    ad, bd = np.asarray(ad, np.uint64), np.asarray(bd, np.uint64)
    if ad.shape != (case.k_blocks,) or bd.shape != (case.k_blocks,):
        raise ValueError(f"descriptors: one A and one B descriptor per K step ({case.k_blocks} each), "
                         f"got {ad.shape} and {bd.shape}")
    if case.smem_image().size > TEACH_SMEM_BYTES:
        raise ValueError(f"the operands of {case.label()} take {case.smem_image().size} bytes; the teaching "
                         f"kernel's SMEM buffer holds {TEACH_SMEM_BYTES}")
    return ad, bd


def require_teach_wgmma(case, descriptors=None):
    """What teach_wgmma.cu can run (m64n64k16, f16, both operands K-major), before any GPU call;
    returns the descriptors to use."""
    if getattr(case, "teaching_file", None) != "teach_wgmma.cu":   # a WgmmaCase (case.py builds on this file)
        raise TypeError(f"run_teach_wgmma takes a WgmmaCase, got {type(case).__name__}")
    if (case.dtype, case.N, case.a_major, case.b_major, case.accumulate) != ("f16", 64, "K", "K", False):
        raise ValueError("teach_wgmma.cu issues wgmma.mma_async.m64n64k16.f32.f16.f16 with both operands "
                         f"K-major and D starting at zero; got {case.label()}")
    return _teach_descriptors(case, descriptors)


def require_teach_umma(case, descriptors=None, idesc=None):
    """What teach_umma.cu can run (kind::f16, cta_group::1, D starting at zero), before any GPU call;
    returns (descriptors, idesc)."""
    if getattr(case, "teaching_file", None) != "teach_umma.cu":    # an UmmaCase (case.py builds on this file)
        raise TypeError(f"run_teach_umma takes an UmmaCase, got {type(case).__name__}")
    if case.kind != "f16" or case.accumulate:
        raise ValueError("teach_umma.cu issues tcgen05.mma.cta_group::1.kind::f16 with D starting at zero; "
                         f"got {case.label()}")
    idesc = case.idesc if idesc is None else int(idesc)
    if not 0 <= idesc < 1 << 32:
        raise ValueError(f"the instruction descriptor is 32 bits, got {idesc:#x}")
    return _teach_descriptors(case, descriptors), idesc


def run_teach_wgmma(case, kernel=None, descriptors=None) -> np.ndarray:
    """Run `case` (a WgmmaCase: f16, N = 64, both K-major) through the teaching kernel — `kernel` (a
    `bwlab.lab.TeachingKernel`), else the learner's %%cuda edit of teach_wgmma.cu, else the file —
    with the case's descriptors or `descriptors=(a_descs, b_descs)`. Returns D (64 x 64 float32),
    the same array `case.model(descriptors)` gives."""
    ad, bd = require_teach_wgmma(case, descriptors)
    from ..lab import edited, isolate, run_edited
    from ..runtime import launch
    be = wgmma_backend()
    cp = be.xp
    kernel = kernel or edited("teach_wgmma.cu")
    if not be.emulated and isolate(kernel):
        return run_edited(run_teach_wgmma, case, kernel=kernel, descriptors=descriptors)
    module = be.load(kernel)
    img = case.smem_image()
    out = cp.zeros((128, 32), np.float32)
    launch(module, "teach_wgmma", (1,), (128,),
           (cp.asarray(img), np.uint32(img.size), cp.asarray(ad), cp.asarray(bd), np.uint32(case.k_blocks), out),
           barrier_names=WGMMA_BARRIERS)
    thread, reg = wgmma_d_fragment(64)
    return cp.asnumpy(out)[thread, reg]


def run_teach_umma(case, kernel=None, descriptors=None, idesc=None) -> np.ndarray:
    """Run `case` (an UmmaCase of kind::f16) through the teaching kernel teach_umma.cu (or `kernel`,
    or the learner's edit) on an sm_100 GPU. Returns the TMEM image (128 lanes x case.tmem_columns),
    the same array `case.model(descriptors, idesc)` gives."""
    (ad, bd), idesc = require_teach_umma(case, descriptors, idesc)
    from ..lab import edited, isolate, run_edited
    from ..runtime import launch
    be = umma_backend()
    cp = be.xp
    kernel = kernel or edited("teach_umma.cu")
    if not be.emulated and isolate(kernel):
        return run_edited(run_teach_umma, case, kernel=kernel, descriptors=descriptors, idesc=idesc)
    module = be.load(kernel, arch="sm_100a")
    img = case.smem_image()
    cols = case.tmem_columns
    out = cp.zeros((LANES, cols), np.uint32)
    launch(module, "teach_umma", (1,), (128,),
           (cp.asarray(img), np.uint32(img.size), cp.asarray(ad), cp.asarray(bd), np.uint32(case.k_blocks),
            np.uint32(idesc), out, np.uint32(cols)),
           barrier_names=UMMA_BARRIERS)
    return cp.asnumpy(out)
