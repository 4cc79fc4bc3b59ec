"""bwlab: the NVIDIA Blackwell (SM100) GEMM data path, one stage at a time.

Stages (one package each): tma (1, TMA load), multicast (2, clusters), umma (3, tcgen05.mma and
wgmma), tmem (4, tcgen05.ld/st), epilogue (5, TMA store), flow (6, the whole trip), gemm (7, the GEMM
ladder). Below them bwlab.hw (one model per hardware mechanism); beside them bwlab.emu (the PTX
emulator of the emulated tier) and bwlab.bridge (the same kernels in Gluon and CuTe DSL). Shared
layers: device (tiers), compile (NVRTC), runtime (bounded launches, tensor maps, benchmarks), case
(the one interface), results (the recordings), plotting (pictures with one colour scheme). The house
map, with its picture: docs/CONTRIBUTING.md.
"""
__version__ = "0.1.0"

from .device import banner, tier, tiers, gpu_info  # noqa: F401
