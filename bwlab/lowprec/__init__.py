"""Notebook 09, low precision: MXFP8 and NVFP4, the block-scaled tcgen05.mma, Hopper's FP8 accumulator.

The models are the UMMA stage's: `bwlab.umma.blockscale` (the block-scaled kinds, their instruction
descriptor and rules, the MMA), `bwlab.umma.scales` (the scale factors' layouts and `tcgen05.cp`) and
`bwlab.umma.blockscaled_case` (quantising, cuda_src/teach_blockscaled.cu); the numerics are
`bwlab.umma.numerics`. This package holds what the notebook draws and computes on top of them:
`pictures` (quantising drawn, the scales' trip drawn, Hopper FP8's error against its promotion interval).
"""

# What notebook 09 uses from the package's top, and nothing else (tests/test_interface.py reads them),
# through the one lazy mechanism: the pictures load matplotlib on first use.
__all__ = ["FP8_ACCUMULATOR_MEASURED", "fp8_promotion_errors", "plot_fp8_promotion", "plot_quantization",
           "plot_scale_trip", "quantization_losses"]

from ..util import names_elsewhere as _names_elsewhere  # noqa: E402

_ELSEWHERE = {
    "bwlab.lowprec.pictures": ("FP8_ACCUMULATOR_MEASURED fp8_promotion_errors plot_fp8_promotion plot_quantization "
                               "plot_scale_trip quantization_losses"),
}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
