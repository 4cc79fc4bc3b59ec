"""The GPU runners: `run_multicast` over the harness kernel cuda_src/tma_multicast.cu
(`tma_multicast_tile`), `launch_teach` over the teaching kernel cuda_src/teach_multicast.cu (or a
learner's edit of it). The only file of the stage that imports CuPy and the CUDA bindings (inside the
functions, so the package imports anywhere).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cluster import PORTABLE_CLUSTER_CTAS
from .model import TEACH_KERNEL, require_smem_address, require_teach_config, teach_masks
from .params import TILE_AREA_ALIGN
from .partition import plan_arrays

__all__ = ["THREADS", "BARRIERS", "MulticastRun", "launch_multicast", "run_multicast", "launch_teach", "TEACH_BARRIERS"]

THREADS = 128                # MC_THREADS in the .cu
BARRIERS = {0: "tile_full"}  # barrier ids of the kernel's bounded waits, for MbarrierTimeout


@dataclass
class MulticastRun:
    """What the GPU produced: every CTA's tile area, and what each CTA said about itself."""

    config: object            # the MulticastConfig
    smem: np.ndarray          # [n_ctas, smem_bytes]
    ranks: np.ndarray         # %cluster_ctarank per CTA
    smem_address: np.ndarray  # where each CTA's tile area sat
    cluster_ctaid: np.ndarray # [n_ctas, 2] %cluster_ctaid.x, .y
    operands: dict


def launch_multicast(cfg, operands: dict, *, extra_tx: int = 0) -> MulticastRun:
    """Launch tma_multicast_tile for `cfg` on this GPU and return everything it reports. `extra_tx`
    > 0 announces more bytes than arrive, on purpose: the bounded wait then raises MbarrierTimeout
    instead of hanging."""
    from ..runtime import backend_for, launch, encode_tensor_map, tensor_map_arg
    if cfg.cluster_size > PORTABLE_CLUSTER_CTAS:
        raise ValueError(f"the GPU runner launches portable clusters of at most {PORTABLE_CLUSTER_CTAS} "
                         f"CTAs; {cfg.cluster} has {cfg.cluster_size}")
    if int(extra_tx) < 0:
        raise ValueError(f"extra_tx must be >= 0, got {extra_tx}")
    be = backend_for("multicast")   # this GPU, or the PTX emulator where there is none
    cp = be.xp
    dev = {op: cp.asarray(np.ascontiguousarray(operands[op])) for op in ("A", "B")}
    maps = {}
    for op in ("A", "B"):
        use = op if op in cfg.operands else cfg.operands[0]
        maps[op] = tensor_map_arg(encode_tensor_map(cfg.tensor_map(use), dev[use].data.ptr))
    issues, tx = plan_arrays(cfg, extra_tx)
    d_issues = cp.asarray(issues.view(np.int32))
    d_tx = cp.asarray(tx)
    out = cp.zeros(cfg.n_ctas * cfg.smem_bytes, dtype=np.uint8)
    info = cp.zeros(cfg.n_ctas * 4, dtype=np.uint32)
    mod = be.load("tma_multicast.cu", defines={"CLUSTER_X": cfg.cluster[0], "CLUSTER_Y": cfg.cluster[1]})
    launch(mod, "tma_multicast_tile", cfg.grid, (THREADS,),
           (maps["A"], maps["B"], d_issues, d_tx, np.uint32(cfg.smem_bytes), out, info),
           shared_mem=cfg.smem_bytes + TILE_AREA_ALIGN, barrier_names=BARRIERS, cluster=cfg.cluster + (1,))
    info = cp.asnumpy(info).reshape(cfg.n_ctas, 4)
    return MulticastRun(cfg, cp.asnumpy(out).reshape(cfg.n_ctas, cfg.smem_bytes), info[:, 0].copy(),
                        info[:, 1].copy(), info[:, 2:4].copy(), operands)


def run_multicast(cfg, operands: dict, smem_address: int = 0, *, extra_tx: int = 0) -> np.ndarray:
    """The GPU's answer to `multicast_model(cfg, operands, smem_address)`: every CTA's tile area,
    uint8 [n_ctas, smem_bytes]. The kernel puts its tile area on a 1024-byte boundary, so
    `smem_address` must be a multiple of 1024 (any such address swizzles alike)."""
    if require_smem_address(smem_address) % TILE_AREA_ALIGN:
        raise ValueError(f"the kernel's tile area starts on a {TILE_AREA_ALIGN}-byte boundary; "
                         f"smem_address 0x{int(smem_address):x} is not one (multicast_model models any "
                         f"128-byte aligned address)")
    return launch_multicast(cfg, operands, extra_tx=extra_tx).smem


TEACH_BARRIERS = {0: "full"}  # teach_multicast.cu's one barrier


def launch_teach(cfg, operands: dict, masks=None, kernel=None) -> np.ndarray:
    """Run the teaching kernel (`kernel`, a bwlab.lab.TeachingKernel, default: the learner's %%cuda
    edit of teach_multicast.cu or the original) for `cfg` (see `teach_config`) and return what
    `multicast_model(cfg, operands)` models: every CTA's tile area, uint8 [n_ctas, smem_bytes].
    `masks` is uint16 [cluster rank][A, B] (default `teach_masks(cfg)`). A CTA whose barrier never
    completes raises bwlab.runtime.MbarrierTimeout naming it."""
    require_teach_config(cfg)
    masks = teach_masks(cfg) if masks is None else np.asarray(masks)
    if masks.shape != (cfg.cluster_size, 2) or masks.min() < 0 or masks.max() >> cfg.cluster_size:
        raise ValueError(f"masks are [cluster rank][A, B], shape {(cfg.cluster_size, 2)}, each naming ranks "
                         f"0..{cfg.cluster_size - 1} only; got shape {masks.shape}")
    if cfg.cluster_size > PORTABLE_CLUSTER_CTAS:
        raise ValueError(f"the teaching kernel launches portable clusters of at most {PORTABLE_CLUSTER_CTAS} CTAs")
    from .. import lab
    if kernel is not None and not isinstance(kernel, lab.TeachingKernel):
        raise ValueError(f"kernel must be a bwlab.lab.TeachingKernel, got {type(kernel).__name__}")
    from ..runtime import backend_for, launch, encode_tensor_map, tensor_map_arg
    be = backend_for("multicast")   # this GPU, or the PTX emulator where there is none
    cp = be.xp
    kernel = kernel or lab.edited(TEACH_KERNEL)
    if not be.emulated and lab.isolate(kernel):
        return lab.run_edited(launch_teach, cfg, operands, masks, kernel=kernel)
    dev = {op: cp.asarray(np.ascontiguousarray(operands[op])) for op in "AB"}
    maps = [tensor_map_arg(encode_tensor_map(cfg.tensor_map(op), dev[op].data.ptr)) for op in "AB"]
    out = cp.zeros(cfg.n_ctas * cfg.smem_bytes, dtype=np.uint8)
    mod = be.load(kernel, defines={"CLUSTER_X": cfg.cluster[0], "CLUSTER_Y": cfg.cluster[1], "TILE_M": cfg.tile_m,
                               "TILE_N": cfg.tile_n, "TILE_K": cfg.tile_k})
    launch(mod, "teach_multicast", cfg.grid, (THREADS,),
           (maps[0], maps[1], cp.asarray(masks.astype(np.uint16)), out),
           barrier_names=TEACH_BARRIERS, cluster=cfg.cluster + (1,))
    return cp.asnumpy(out).reshape(cfg.n_ctas, cfg.smem_bytes)
