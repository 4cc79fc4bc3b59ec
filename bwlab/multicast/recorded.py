"""The multicast runs notebook 02 shows, each defined once: the recorder
(`bwlab/checks/record_multicast.py`) runs these cases on a GPU and saves what they produced;
`MulticastLoad(...).result()` / `.results()` find the recording of the very case asked for.

* `multicast_every_cta` — the harness kernel (tma_multicast_tile) on a 2x2 cluster loading A and B tiles
                          with 128B swizzle: every CTA's tile area and its %cluster_ctarank.
* `multicast_teach`     — the teaching kernel (cuda_src/teach_multicast.cu) on its 2x2 cluster.
* `multicast_bad_mask`  — the teaching kernel with CTA 0 left out of every A mask (its MbarrierTimeout).
"""
from __future__ import annotations

import numpy as np

from ..results import Recorded
from .case import ClusterRanks, MulticastLoad
from .model import TEACH_KERNEL, teach_config, teach_masks
from .params import MulticastConfig

__all__ = ["RECORDED", "SEED", "EVERY_CTA", "BAD_MASK_EDIT", "every_cta_config", "bad_mask_kernel", "bad_masks",
           "every_cta_case", "teach_case"]

SEED = 0
EVERY_CTA = dict(cluster=(2, 2), tile_m=32, tile_n=32, tile_k=64, operands="AB", swizzle="128B")
# The deliberate mistake of notebook 02: the kernel clears bit 0 of every A mask (CTA 0 left out).
BAD_MASK_EDIT = ("const u16 a_mask = masks[2 * rank + 0];",
                 "const u16 a_mask = masks[2 * rank + 0] & ~1;  // CTA 0 left out of every A multicast")


def every_cta_config() -> MulticastConfig:
    return MulticastConfig(**EVERY_CTA)


def bad_mask_kernel():
    """teach_multicast.cu with CTA 0 left out of every A mask (the edit notebook 02 makes)."""
    from ..lab import TeachingKernel
    return TeachingKernel(TEACH_KERNEL).replace(*BAD_MASK_EDIT)


def bad_masks(cfg) -> np.ndarray:
    """The same mistake in the masks' terms: bit 0 cleared in every A mask."""
    m = teach_masks(cfg).copy()
    m[:, 0] &= np.uint16(0xFFFE)
    return m


def every_cta_case() -> MulticastLoad:
    return MulticastLoad(every_cta_config(), seed=SEED)


def teach_case(kernel=TEACH_KERNEL) -> MulticastLoad:
    return MulticastLoad(teach_config(), seed=SEED, kernel=kernel)


RECORDED = (
    Recorded("multicast_every_cta", "smem", every_cta_case),
    Recorded("multicast_every_cta", "ranks", lambda: ClusterRanks(every_cta_config(), seed=SEED)),
    Recorded("multicast_teach", "smem", teach_case),
    Recorded("multicast_bad_mask", "message", lambda: teach_case(bad_mask_kernel()), error="MbarrierTimeout"),
)
