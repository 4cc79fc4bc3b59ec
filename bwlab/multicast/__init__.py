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
    "barrier_outcome": "bwlab.multicast.model", "barrier_table": "bwlab.multicast.model",
    "BARRIERS": "bwlab.multicast.runner", "block_of_rank": "bwlab.multicast.partition",
    "compare_run": "bwlab.multicast.case", "create_tma_multicast_mask": "bwlab.multicast.cluster",
    "cta_coord": "bwlab.multicast.cluster", "cta_masks": "bwlab.multicast.cluster",
    "CtaMasks": "bwlab.multicast.cluster", "CtaPlan": "bwlab.multicast.partition",
    "expected_smem": "bwlab.multicast.model", "explain_cta": "bwlab.multicast.pictures",
    "explorer_choices": "bwlab.multicast.pictures", "FILL_BYTE": "bwlab.multicast.model",
    "format_mask": "bwlab.multicast.cluster", "Issue": "bwlab.multicast.partition",
    "l2_read_bytes": "bwlab.multicast.partition", "launch_multicast": "bwlab.multicast.runner",
    "make_operands": "bwlab.multicast.model", "mask_explorer": "bwlab.multicast.pictures",
    "mask_ranks": "bwlab.multicast.cluster", "mask_steps": "bwlab.multicast.cluster",
    "mask_table": "bwlab.multicast.cluster", "masked_multicast_model": "bwlab.multicast.model",
    "MaskSteps": "bwlab.multicast.cluster", "MAX_CLUSTER_CTAS": "bwlab.multicast.cluster",
    "MODE_NAMES": "bwlab.multicast.cluster", "multicast_box": "bwlab.multicast.partition",
    "MulticastCheck": "bwlab.multicast.case", "MulticastRun": "bwlab.multicast.runner",
    "plan": "bwlab.multicast.partition", "plan_arrays": "bwlab.multicast.partition",
    "plot_cluster": "bwlab.multicast.pictures", "plot_every_mask": "bwlab.multicast.pictures",
    "plot_landing": "bwlab.multicast.pictures", "plot_mask": "bwlab.multicast.pictures",
    "plot_masks_of": "bwlab.multicast.pictures", "plot_ranks": "bwlab.multicast.pictures",
    "plot_savings": "bwlab.multicast.pictures", "plot_slice_swizzle": "bwlab.multicast.pictures",
    "plot_smem_check": "bwlab.multicast.pictures", "PORTABLE_CLUSTER_CTAS": "bwlab.multicast.cluster",
    "require_teach_config": "bwlab.multicast.model", "run_multicast": "bwlab.multicast.runner",
    "slice_chunks": "bwlab.multicast.model", "TEACH_BARRIERS": "bwlab.multicast.runner",
    "TEACH_KERNEL": "bwlab.multicast.model", "THREADS": "bwlab.multicast.runner",
    "TMA_ISSUE_DTYPE": "bwlab.multicast.partition", "tma_partition": "bwlab.multicast.partition",
    "TmaSlice": "bwlab.multicast.partition",
}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
