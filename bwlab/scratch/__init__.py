"""GEMM from scratch: five kernels, each one mechanism more than the last (notebook 00a).

naive -> coalesced -> shared-memory tiling -> register tiling -> `ldmatrix` + `mma.sync` (PTX ISA,
"ldmatrix" and "mma", the m16n8k16 fragments), then why TMA ("cp.async.bulk.tensor"), wgmma (9.7.15,
"wgmma.mma_async") and tcgen05 (9.7.16) exist. C = A B with f16 A and B, f32 C, all row-major.

* `steps`    — the steps: file, launch, tile, what each adds; `require_shape`;
* `model`    — C as steps 1-4 add it up (bit for bit), the exact sum and the bound step 5 is held to;
* `memtraffic` — the global-memory bytes each step moves, replayed from its own indexing (NumPy);
* `machine`  — the H100's and H200's peak numbers (datasheets), the roofline's roofs;
* `runner`   — a step on this GPU or in the PTX emulator; `bench` against cuBLAS (CuPy);
* `case`     — `ScratchGemm(step, M, N, K)`: model / run / check / show / results;
* `pictures` — a warp's accesses, the tiles, the roofline.
"""
from .case import ScratchGemm, where_steps_run
from .model import gemm_model
from .runner import run_step
from .steps import EMU_SHAPE, STEPS, Step, step

# The teaching names: what notebook 00a reaches for first.
__all__ = ["ScratchGemm", "STEPS", "Step", "step", "EMU_SHAPE", "where_steps_run", "gemm_model", "run_step",
           "traffic", "measured", "plot_roofline", "plot_warp_loads", "plot_tiles"]

# Every other name lives in its module; the package's top still reaches it (the pictures load
# matplotlib only then).
from ..util import names_elsewhere as _names_elsewhere  # noqa: E402

_ELSEWHERE = {
    "bwlab.scratch.memtraffic": "traffic Traffic warp_sectors compulsory_bytes",
    "bwlab.scratch.recorded": "measured RECORDED",
    "bwlab.scratch.pictures": "plot_roofline plot_warp_loads plot_tiles",
    "bwlab.scratch.model": "random_operands reference",
    "bwlab.scratch.fragments": "s5_model a_fragment",
    "bwlab.scratch.machine": "H100 H200",
    "bwlab.scratch.steps": "require_shape",
    "bwlab.scratch.runner": "emulator_runs bench",
}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
