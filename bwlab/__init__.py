"""bwlab: the NVIDIA Blackwell (SM100) GEMM data path, one stage at a time.

Stages (one module each): tma (TMA load), multicast (clusters), umma (tcgen05.mma), tmem
(tcgen05.ld/st), epilogue (TMA store). Shared layers: device (tiers), compile (NVRTC/CuPy),
runtime (bounded launches, benchmarks), plotting (pictures with one colour scheme).
"""
__version__ = "0.1.0"

from .device import banner, tier, tiers, gpu_info  # noqa: F401
