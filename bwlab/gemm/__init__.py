"""The GEMM ladder: from the data path to speed.

Each step of the ladder is one kernel that adds exactly one mechanism of the stage notebooks to the
step before it. `cuda_src/gemm_sm90/` holds the Hopper ladder (TMA + wgmma, runs on an H100/H200);
`cuda_src/gemm_sm100/` holds its Blackwell twin (TMA + tcgen05.mma + TMEM, compile-verified for sm_100a,
runs on a B200). `python -m bwlab.bench gemm` builds, checks and times every step against the best
library GEMM measured in the same process.

* `case`    — `GemmCase(step, M, N, K)`: one step on one problem, model() / run() / check() / show();
* `ladder`  — the steps of both ladders: file, what changed, the tile, the launch shape;
* `runner`  — builds and launches a Hopper step (CuPy; the only file here that touches the GPU for sm_90);
* `sm100`   — the Blackwell twin's launch description and its model-tier check of step 1.
* `occupancy` — how many CTAs of a step fit on an SM, from its cubin's registers and SMEM;
* `timeline` — CTA 0's per-warp stamps in the recording `gemm_ladder`, as bars and rates;
* `report`  — the recorded table, each step's card and diff, the PTX of every step (notebook 07);
* `pictures` — the bar chart of the table and the timeline charts (matplotlib).
"""
from .case import GemmCase
from .ladder import STEPS, Step, step

__all__ = ["GemmCase", "STEPS", "Step", "step"]
