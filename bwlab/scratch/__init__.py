"""GEMM from scratch: five kernels, each one mechanism more than the last (notebook 00a).

naive -> coalesced -> shared-memory tiling -> register tiling -> `ldmatrix` + `mma.sync` (PTX ISA
9.7.14.5.15 "ldmatrix", 9.7.14.5.8 "mma" m16n8k16), then why TMA (9.7.9.25 "cp.async.bulk.tensor"),
wgmma (9.7.15) and tcgen05 (9.7.16) exist. C = A B with f16 A and B, f32 C, all row-major.

* `steps`    — the steps: file, launch, tile, what each adds; `require_shape`;
* `model`    — C as steps 1-4 add it up (bit for bit), the exact sum and the bound step 5 is held to;
* `memtraffic` — the global-memory bytes each step moves, replayed from its own indexing (NumPy);
* `machine`  — the H100's and H200's peak numbers (datasheets), the roofline's roofs;
* `runner`   — a step on this GPU or in the PTX emulator; `bench` against cuBLAS (CuPy);
* `case`     — `ScratchGemm(step, M, N, K)`: model / run / check / show / results;
* `pictures` — a warp's accesses, the tiles, the roofline.
"""
from .case import ScratchGemm, where_steps_run
from .steps import EMU_SHAPE, STEPS, Step, step

__all__ = ["ScratchGemm", "STEPS", "Step", "step", "EMU_SHAPE", "where_steps_run", "measured", "plot_roofline",
           "plot_warp_loads", "traffic"]
from .pictures import plot_roofline, plot_warp_loads
from .recorded import measured
from .memtraffic import traffic
