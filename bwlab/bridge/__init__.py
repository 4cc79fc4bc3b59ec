"""A bridge to practice: bwlab's kernels beside the same kernels written in Gluon and CuTe DSL, compared in PTX.

`practitioner_source(name, tool)` shows the twin kernel, `practitioner_ptx(name, tool)` compiles it for
sm_100a (no GPU needed; the recording in bwlab/bridge/recorded/ where the tool is not installed),
`bwlab_ptx(name)` compiles bwlab's .cu with NVRTC, and `compare(name, tool)` / `compare_ptx(a, b)` line
the two up: the same tcgen05 / TMA / mbarrier instruction classes, their counts, bwlab's wrapper for
each, and the tcgen05.mma descriptors decoded with bwlab.umma wherever the PTX holds them as constants.

Kernels, each written in Gluon and in CuTe DSL: 'full_flow' (cuda_src/full_flow_sm100.cu, notebook 06)
and 'gemm_s1' (cuda_src/gemm_sm100/s1_one_stage.cu, notebook 07). Tools: 'gluon' (the `triton`
package) and 'cute' (`nvidia-cutlass-dsl`). `python -m bwlab.bridge record` makes the recordings again
(needs `pip install 'bwlab[bridge]'`).
"""
from .kernels import (KERNELS, RECORDED, TOOLS, PtxRecord, Tool, bwlab_ptx, compare, compile_live, practitioner_ptx,
                      practitioner_source, record, recorded, tool_version)
from .ptx_compare import DATA_PATH, PtxComparison, bwlab_wrappers, compare_ptx, instruction_classes, mma_operands
from .show import side_by_side

__all__ = ["DATA_PATH", "PtxComparison", "bwlab_wrappers", "compare_ptx", "instruction_classes", "mma_operands",
           "KERNELS", "RECORDED", "TOOLS", "PtxRecord", "Tool", "bwlab_ptx", "compare", "compile_live",
           "practitioner_ptx", "practitioner_source", "record", "recorded", "tool_version", "side_by_side"]
