"""The GEMM ladder — the stages put together, from the data path to speed (notebooks 07 and 08).

Each step of the ladder is one kernel that adds exactly one mechanism of the stage notebooks to the
step before it. `cuda_src/gemm_sm90/` holds the Hopper ladder (TMA + wgmma, runs on an H100/H200);
`cuda_src/gemm_sm100/` holds its Blackwell twin (TMA + tcgen05.mma + TMEM, compile-verified for sm_100a,
runs on a B200). `python -m bwlab.bench gemm` builds, checks and times every step against the best
library GEMM measured in the same process.

What this package mirrors (each step's kernel composes instructions the stage packages model):
* PTX ISA "Data Movement and Conversion Instructions: cp.async.bulk.tensor" (the TMA loads of A and B
  and, from step 6 on, the store of C; `bwlab.tma`) and "mbarrier" (the ring of full/empty barriers,
  their phases and tx-counts; `bwlab.hw.mbarrier`);
* PTX ISA "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions" (wgmma.mma_async,
  wgmma.fence / commit_group / wait_group: the Hopper ladder) and "TensorCore 5th Generation Family
  Instructions" (tcgen05.alloc / mma / commit / ld, the instruction and shared memory descriptors: the
  Blackwell twin; `bwlab.umma`, `bwlab.tmem`);
* PTX ISA "Special Registers" %globaltimer and %clock64 (the per-warp stamps of `timeline`) and
  "Miscellaneous Instructions: setmaxnreg" (the producer / consumer register split of steps 3 on);
* CUTLASS: include/cutlass/gemm/collective/sm90_mma_tma_gmma_ss_warpspecialized.hpp (the producer /
  consumer ring of steps 3-6), include/cute/arch/mma_sm100_umma.hpp and the Blackwell tutorial
  examples/cute/tutorial/blackwell/ (the sm_100 twin), include/cutlass/gemm/kernel/
  tile_scheduler_params.h (the persistent scheduler's raster order and swizzle: `order`'s counterpart).

The package, file by file:
* `case`      — `GemmCase(step, M, N, K)`: one step on one problem, model() / run() / check() / show();
* `ladder`    — the steps of the Hopper ladder and the rungs beyond it: file, what changed, the tile,
  the launch shape, the written prediction;
* `runner`    — builds, launches, checks and times a Hopper step, and launches a Blackwell step on an sm_100
  GPU (`run_sm100`); the only file here that imports CuPy;
* `sm100`     — the Blackwell twin's steps and launch description, step 1 in the model tier, the
  emulated run;
* `occupancy` — how many CTAs of a step fit on an SM, from its cubin's registers and SMEM;
* `order`     — the persistent steps' tile orders (grouped, Hilbert) and their L2 footprint;
* `timeline`  — CTA 0's per-warp stamps in the recording `gemm_ladder`, as bars and rates;
* `protocol`  — the sustained measurement protocol's rules and statistics (bwlab/checks runs it on a GPU);
* `report`    — the recorded tables, each step's card and diff, the PTX features of every step;
* `pictures`  — the bar chart of the table, the timelines, the tile orders, the clock log (matplotlib);
* `exercises` — the checks of notebook 07's graded exercises (`from bwlab.gemm import exercises`).
Notebooks 07 and 08 reach every name they use at the package's top (`from bwlab import gemm`,
`gemm.STEPS`, `gemm.step_card(rec, 2)`, `gemm.plot_ladder(rec)`); the graded exercises are the module
`exercises`, as in every stage.
"""
from .case import GemmCase
from .decode import (decode_header_comment, decode_report_rows, decode_rung_diff, decode_stage_rows, roofline_table,
                     run_decode_emulated, SWAP_AB)
from .ladder import BK, split_count, step, STEPS
from .occupancy import ctas_per_sm, describe_occupancy
from .order import footprint, grouped_order
from .protocol import SUSTAINED
from .report import (explore_rows, format_table, H100_PEAK_FLOP_PER_SM_CYCLE, header_comment, predictions,
                     protocol_rows, protocol_summary, ptx_features, recorded_checks, report_rows, rows, rung_diff,
                     shapes, sm_flop_per_cycle, step_card, step_diff, timeline_table)
from .timeline import step_timeline

# What the notebooks, the docs and the command lines use from the package's top, and nothing else
# (tests/test_interface.py reads them).
__all__ = ["BK", "check", "ctas_per_sm", "decode_header_comment", "decode_report_rows", "decode_rung_diff",
           "decode_stage_rows", "plot_decode_landing",
           "describe_occupancy", "EMULATED_SMS", "example_inputs", "explore_rows", "footprint", "format_table",
           "GemmCase", "grouped_order", "H100_PEAK_FLOP_PER_SM_CYCLE", "header_comment", "kernel_constants",
           "model_step1", "plot_clock_log", "plot_decode_roofline", "plot_ladder", "plot_sm100_timelines",
           "plot_tile_orders", "plot_timelines", "predictions", "protocol_rows", "protocol_summary", "ptx_features",
           "recorded_checks", "reference_bf16", "report_rows", "roofline_table", "rows", "run_decode_emulated",
           "run_sm100_emulated", "run_step_emulated", "rung_diff", "shapes", "sm_flop_per_cycle", "split_count",
           "step", "step_card", "step_diff", "step_timeline", "STEPS", "STEPS_SM100", "SUSTAINED", "SWAP_AB",
           "timeline_table"]

# The one lazy mechanism: the names of __all__ not imported above (the runners, which load the
# emulator, and the pictures, which load matplotlib) are imported from their module on first use. Code
# inside bwlab imports a name from its module.
from ..util import names_elsewhere as _names_elsewhere  # noqa: E402

_ELSEWHERE = {
    "bwlab.gemm.pictures": "plot_clock_log plot_decode_landing plot_decode_roofline plot_ladder plot_sm100_timelines "
                           "plot_tile_orders plot_timelines",
    "bwlab.gemm.runner": "check EMULATED_SMS run_step_emulated",
    "bwlab.gemm.sm100": "example_inputs kernel_constants model_step1 reference_bf16 run_sm100_emulated STEPS_SM100",
}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
