"""Stage 2 — clusters and TMA multicast: cluster layouts, multicast masks, tma_partition.

A *cluster* is a group of up to 8 (portable) or 16 CTAs that run at the same time on one GPC and
can write into each other's shared memory. `cp.async.bulk.tensor...multicast::cluster` (PTX ISA
"Data Movement and Conversion Instructions: cp.async.bulk.tensor") takes a 16-bit `ctaMask`: the box
lands at the same SMEM offset in every CTA whose cluster rank has its bit set, and each of them sees
`complete_tx` on the mbarrier at the same offset (PTX ISA "mbarrier", transaction counts).

In a GEMM, all CTAs of a cluster row need the same A tile and all CTAs of a column the same B tile.
CUTLASS lets each of them issue a *slice* of the shared tile with a mask naming everyone who needs
it, so each tile is read from L2 once per cluster instead of once per CTA.

Files:

* `cluster`   — `cluster_layout_vmnk` (the cluster as a CuTe layout (V,M,N,K) -> CTA rank),
  `create_tma_multicast_mask` and its steps, every CTA's A, B and C masks;
* `partition` — `tma_partition` (which slice of a tile each CTA issues) and `plan` (every CTA's
  issues, what lands in every CTA, what each mbarrier expects), the kernel's argument arrays;
* `params`    — `MulticastConfig`, one experiment, checked on construction;
* `model`     — `multicast_model`, the NumPy image of every CTA's tile area; the teaching kernel's
  configuration, masks and `barrier_outcome` (which CTA's mbarrier completes, given the masks);
* `runner`    — `run_multicast` over the harness kernel `cuda_src/tma_multicast.cu`, `run_teach` over
  the teaching kernel `cuda_src/teach_multicast.cu` (CuPy);
* `case`      — `MulticastLoad` (model / run / check / show) and `compare_run`;
* `pictures`  — the `plot_*` pictures and the notebook's widget (matplotlib);
* `exercises` — the checks of notebook 02's graded exercises (`masked_multicast_model` in `model`
  executes a learner's masks).

Validation and the benchmark (`python -m bwlab.validate multicast`, `python -m bwlab.bench
multicast`) live in `bwlab/checks/multicast.py`.

CuTe counterparts: include/cute/atom/copy_traits_sm90_tma.hpp (create_tma_multicast_mask,
tma_partition, make_tma_copy_desc's box truncation), examples/cute/tutorial/blackwell/03_*.cu and
04_*.cu (cluster layout, masks, transaction bytes).
"""
from .case import ClusterRanks, MulticastCheck, MulticastLoad, compare_run
from .cluster import (MAX_CLUSTER_CTAS, MODE_NAMES, PORTABLE_CLUSTER_CTAS, CtaMasks, MaskSteps,
                      cluster_layout_vmnk, create_tma_multicast_mask, cta_coord, cta_masks, format_mask,
                      mask_ranks, mask_steps, mask_table)
from .model import (FILL_BYTE, TEACH_KERNEL, barrier_outcome, barrier_table, check_teach_config, expected_smem,
                    make_operands, masked_multicast_model, multicast_model, slice_chunks, teach_config, teach_masks)
from .params import MulticastConfig
from .partition import (TMA_ISSUE_DTYPE, CtaPlan, Issue, TmaSlice, block_of_rank, l2_read_bytes,
                        multicast_box, plan, plan_arrays, tma_partition)
from .pictures import (plot_cluster, plot_every_mask, plot_landing, plot_mask, plot_masks_of, plot_savings,
                       plot_slice_swizzle, plot_smem_check, plot_ranks, explain_cta, explorer_choices, mask_explorer)
from .pictures import (draw_cluster, draw_every_mask, draw_landing, draw_mask, draw_masks_of,  # noqa: F401
                       draw_savings, draw_slice_swizzle, draw_smem_check)                   # (deprecated names)
from .runner import BARRIERS, TEACH_BARRIERS, THREADS, MulticastRun, launch_multicast, run_multicast, run_teach

__all__ = [
    # cluster layouts and masks
    "MAX_CLUSTER_CTAS", "PORTABLE_CLUSTER_CTAS", "MODE_NAMES", "cluster_layout_vmnk", "cta_coord",
    "MaskSteps", "mask_steps", "create_tma_multicast_mask", "CtaMasks", "cta_masks", "mask_ranks",
    "format_mask", "mask_table",
    # tma_partition and the plan
    "multicast_box", "TmaSlice", "tma_partition", "MulticastConfig", "Issue", "CtaPlan", "plan",
    "block_of_rank", "TMA_ISSUE_DTYPE", "plan_arrays", "l2_read_bytes",
    # model, GPU run, case
    "FILL_BYTE", "make_operands", "multicast_model", "masked_multicast_model", "expected_smem", "slice_chunks",
    "THREADS", "BARRIERS", "MulticastRun",
    "launch_multicast", "run_multicast", "MulticastLoad", "ClusterRanks", "MulticastCheck", "compare_run",
    # the teaching kernel
    "TEACH_KERNEL", "teach_config", "check_teach_config", "teach_masks", "barrier_outcome", "barrier_table",
    "TEACH_BARRIERS", "run_teach",
    # pictures
    "plot_cluster", "plot_mask", "plot_masks_of", "plot_every_mask", "plot_landing", "plot_smem_check",
    "plot_savings", "plot_slice_swizzle", "explain_cta", "explorer_choices", "mask_explorer",
]
