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

__all__ = ["UMMA_BARRIERS", "WGMMA_BARRIERS", "run_umma", "run_wgmma", "launch_wgmma"]

WGMMA_BARRIERS: dict = {}          # the wgmma kernel waits on no mbarrier (wgmma.wait_group)
UMMA_BARRIERS = {0: "mma_done"}


def run_umma(case, module=None) -> np.ndarray:
    """Run `case` (an UmmaCase) on an sm_100 GPU (cuda_src/umma_sm100.cu); returns the TMEM image
    (128 lanes x case.tmem_columns) that tcgen05.ld read back after the K loop."""
    import cupy as cp
    from .. import device
    from ..compile import load_module
    from ..runtime import launch
    device.require("umma")            # raises UnsupportedGPU (before any driver call) off sm_100
    module = module or load_module("umma_sm100")
    img = case.smem_image()
    ad, bd = case.descriptors()
    cols = case.tmem_columns
    out = cp.zeros((LANES, cols), cp.uint32)
    launch(module, "umma_validate", (1,), (128,),
           (cp.asarray(img), np.uint32(img.size), cp.asarray(ad), cp.asarray(bd), np.uint32(case.k_blocks),
            np.uint32(case.idesc), np.uint32(case.kind == "tf32"), np.uint32(case.accumulate),
            cp.asarray(case.tmem_init()), out, np.uint32(cols)),
           shared_mem=img.size + 1024, barrier_names=UMMA_BARRIERS)
    return cp.asnumpy(out)


def launch_wgmma(case, module=None):
    """Run `case` (a WgmmaCase) on a Hopper GPU (cuda_src/wgmma_sm90.cu). Returns (D 64 x N float32,
    the SMEM address where the operand image started)."""
    import cupy as cp
    from .. import device
    from ..compile import load_module
    from ..runtime import launch
    info = device.require("tma")
    if not info.has_wgmma:
        raise device.UnsupportedGPU(f"wgmma.mma_async needs sm_90a (Hopper); this GPU is {info.name} ({info.sm})")
    module = module or load_module("wgmma_sm90")
    img = case.smem_image()
    ad, bd = case.descriptors()
    frag_t, frag_r = wgmma_d_fragment(case.N)
    d0 = case.values()[2].astype(np.float32)
    d_init = np.zeros((128, case.N // 2), np.float32)
    d_init[frag_t, frag_r] = d0
    d_img, d_ad, d_bd = cp.asarray(img), cp.asarray(ad), cp.asarray(bd)
    d_in, d_out = cp.asarray(d_init), cp.zeros((128, case.N // 2), cp.float32)
    base = cp.zeros(1, cp.uint32)
    launch(module, f"wgmma_m64n{case.N}k16_validate", (1,), (128,),
           (d_img, np.uint32(img.size), d_ad, d_bd, np.uint32(case.k_blocks), np.uint32(case.variant),
            np.uint32(case.accumulate), d_in, d_out, base),
           shared_mem=img.size + 1024, barrier_names=WGMMA_BARRIERS)
    regs = cp.asnumpy(d_out)
    return regs[frag_t, frag_r], int(base.get()[0])


def run_wgmma(case, module=None) -> np.ndarray:
    """D (64 x N float32) of `case` run by wgmma on a Hopper GPU: the same array `case.model()` gives."""
    return launch_wgmma(case, module)[0]
