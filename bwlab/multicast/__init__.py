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
* `runner`    — `run_multicast` over the harness kernel `cuda_src/tma_multicast.cu`, `launch_teach` over
  the teaching kernel `cuda_src/teach_multicast.cu` (CuPy);
* `case`      — `MulticastLoad` (model / run / check / show), `compare_run` and `run_teach`;
* `pictures`  — the `plot_*` pictures and the notebook's widget (matplotlib);
* `exercises` — the checks of notebook 02's graded exercises (`masked_multicast_model` in `model`
  executes a learner's masks).

Validation and the benchmark (`python -m bwlab.validate multicast`, `python -m bwlab.bench
multicast`) live in `bwlab/checks/multicast.py`.

CuTe counterparts: include/cute/atom/copy_traits_sm90_tma.hpp (create_tma_multicast_mask,
tma_partition, make_tma_copy_desc's box truncation), examples/cute/tutorial/blackwell/03_*.cu and
04_*.cu (cluster layout, masks, transaction bytes).
"""

from .case import ClusterRanks, MulticastLoad, run_teach
from .cluster import cluster_layout_vmnk
from .model import multicast_model, teach_config, teach_masks
from .params import MulticastConfig

# What the notebooks, the docs and the command lines use from the package's top, and nothing else
# (tests/test_interface.py reads them).
__all__ = ["barrier_outcome", "barrier_table", "cluster_layout_vmnk", "ClusterRanks", "cta_masks",
           "expected_smem", "explain_cta", "l2_read_bytes", "make_operands", "mask_explorer", "mask_ranks",
           "mask_steps", "mask_table", "multicast_model", "MulticastConfig", "MulticastLoad", "plot_cluster",
           "plot_every_mask", "plot_landing", "plot_savings", "plot_slice_swizzle", "run_teach", "teach_config",
           "teach_masks"]

# The one lazy mechanism: the names of __all__ not imported above, and the other names code written
# against the package's top still reaches, are imported from their module on first use (the
# pictures load matplotlib only then). New code imports a name from its module.
from ..util import names_elsewhere as _names_elsewhere  # noqa: E402

_ELSEWHERE = {
    "bwlab.multicast.case": "compare_run MulticastCheck",
    "bwlab.multicast.cluster": ("create_tma_multicast_mask cta_coord cta_masks CtaMasks format_mask mask_ranks "
                                "mask_steps mask_table MaskSteps MAX_CLUSTER_CTAS MODE_NAMES "
                                "PORTABLE_CLUSTER_CTAS"),
    "bwlab.multicast.model": ("barrier_outcome barrier_table expected_smem FILL_BYTE make_operands "
                              "masked_multicast_model require_teach_config slice_chunks TEACH_KERNEL"),
    "bwlab.multicast.partition": ("block_of_rank CtaPlan Issue l2_read_bytes multicast_box plan plan_arrays "
                                  "TMA_ISSUE_DTYPE tma_partition TmaSlice"),
    "bwlab.multicast.pictures": ("explain_cta explorer_choices mask_explorer plot_cluster plot_every_mask "
                                 "plot_landing plot_mask plot_masks_of plot_ranks plot_savings "
                                 "plot_slice_swizzle plot_smem_check"),
    "bwlab.multicast.runner": "BARRIERS launch_multicast MulticastRun run_multicast TEACH_BARRIERS THREADS",
}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
