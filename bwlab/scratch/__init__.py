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
from .steps import EMU_SHAPE, STEPS

# What the notebook (00a), the docs and the command lines use from the package's top, and nothing else
# (tests/test_interface.py reads them).
__all__ = ["a_fragment", "EMU_SHAPE", "H100", "measured", "plot_roofline", "plot_warp_loads", "ScratchGemm",
           "STEPS", "traffic", "where_steps_run"]

# The one lazy mechanism: the names of __all__ not imported above, and the other names code written
# against the package's top still reaches, are imported from their module on first use (the pictures
# load matplotlib only then). New code imports a name from its module.
from ..util import names_elsewhere as _names_elsewhere  # noqa: E402

_ELSEWHERE = {
    "bwlab.scratch.fragments": "a_fragment s5_model",
    "bwlab.scratch.machine": "H100 H200",
    "bwlab.scratch.memtraffic": "compulsory_bytes traffic Traffic warp_sectors",
    "bwlab.scratch.model": "gemm_model random_operands reference",
    "bwlab.scratch.pictures": "plot_roofline plot_tiles plot_warp_loads",
    "bwlab.scratch.recorded": "measured RECORDED",
    "bwlab.scratch.runner": "bench emulator_runs run_step",
    "bwlab.scratch.steps": "require_shape step Step",
}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
