"""Stage 5, the epilogue: accumulators in registers -> SMEM -> GMEM through the TMA store.

The hops, in the order a GEMM kernel performs them:

1. **registers -> SMEM** with ``st.shared.v4.b32`` (PTX ISA 9.7.9.10 ``st``): after ``tcgen05.ld``
   (``.32x32b``: thread t of a warp holds row t of its 32-row quarter, register j = column j) every
   thread writes 16 bytes of its row per instruction. Which bank each 16 bytes lands in decides how
   many shared-memory wavefronts the instruction costs (`RegisterStorePlan`; the bank model
   `wavefronts` / `BANK_RULE` is `bwlab.hw.banks`'); a swizzled D tile (`SmemTile` with
   ``swizzle='128B'``) spreads the 32 rows over all banks.
2. **fence.proxy.async.shared::cta** (PTX ISA 9.7.13.4 ``membar/fence``; 9.7.9.25.2 "Async proxy"):
   ``st.shared`` writes through the generic proxy, the TMA engine reads through the async proxy, and
   only a proxy fence in each writing thread, then a barrier, orders the first before the second
   (`EpilogueOrdering`).
3. **TMA store** ``cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group`` (PTX ISA 9.7.9.27.1.2): the
   inverse of the TMA load (`tma_store_model`). At the tensor's far edges rows and planes stop
   exactly, but dimension 0 is written in whole 16-byte granules, so row padding that shares the
   granule of a row's last element is overwritten; a swizzled box narrower than its swizzle span is
   read from SMEM one span per row (both seen on the H100: `STORE_GRANULE`, `smem_box_pitch`).
   ``cp.reduce.async.bulk.tensor ... .add`` adds instead of writing (`tma_reduce_add_model`, PTX ISA
   9.7.9.27.1.3). `STORE_RULES` is the table of the store's rules, each with its source.
4. **bulk async-groups** ``cp.async.bulk.commit_group`` / ``wait_group.read N`` / ``wait_group N``
   (PTX ISA 9.7.9.27.2): ``.read`` waits until the groups have finished *reading* their SMEM source
   (the buffer may be reused), the plain form until the GMEM writes are done and visible to the
   waiting thread (`BulkAsyncGroups`).
5. **D = alpha * acc + beta * C** with C brought into SMEM by a TMA load (`epilogue_alpha_beta`).

The teaching kernel ``cuda_src/teach_store.cu`` is hops 1-4 for one 128 x 32 fp32 tile per CTA and
nothing else; `run_teach` runs it (or a learner's edit of it, `bwlab.lab`) for a `teach_problem`.

CuTe/CUTLASS counterparts: ``include/cute/atom/copy_traits_sm90_tma.hpp`` (SM90_TMA_STORE,
SM90_TMA_REDUCE_ADD, ``tma_store_fence``, ``tma_store_arrive`` = commit_group, ``tma_store_wait<N>`` =
``wait_group.read N``), ``include/cute/arch/copy_sm90.hpp`` and the SM90/SM100 collective epilogues.

The package: `rules` (element types, the store granule, the proxy-fence rule), `tile` (the SMEM D
tile and the st.shared.v4 plan), `ordering` (bulk groups and the fence, step by step), `store` (the
TMA store / reduce-add model), `problem` + `model` (a whole epilogue), `runner` (the same on the GPU),
`case` (`TmaStore`, `Epilogue`: model / run / check / show), `recorded` (notebook 05's GPU cases, on a
GPU or as the H100 recorded them), `pictures`. Validation and benchmarks:
`bwlab.checks.store` (`python -m bwlab.validate store`, `python -m bwlab.bench tma_store`).
"""
from __future__ import annotations

from .case import Epilogue, run_teach, TmaStore
from .model import epilogue_model
from .ordering import EpilogueOrdering
from .problem import EpilogueProblem, teach_problem
from .store import tma_store_model

# What the notebooks, the docs and the command lines use from the package's top, and nothing else
# (tests/test_interface.py reads them).
__all__ = ["bank_cycles", "bank_patterns", "edge_store_case", "Epilogue", "epilogue_alpha_beta",
           "epilogue_model", "EpilogueOrdering", "EpilogueProblem", "fence_experiment", "gpu_vs_model",
           "OrderingError", "plot_bank_phases", "plot_bulk_groups", "plot_edge_store", "plot_edge_tiles",
           "plot_epilogue_path", "plot_writer_map", "RegisterStorePlan", "run_teach", "smem_box_footprint",
           "smem_box_pitch", "SmemTile", "store_coverage", "STORE_RULES", "teach_problem", "tma_reduce_add_model",
           "tma_store_model", "TmaStore", "wavefronts"]

# The one lazy mechanism: the names of __all__ not imported above, and the other names code written
# against the package's top still reaches, are imported from their module on first use (the
# pictures load matplotlib only then). New code imports a name from its module.
from ..util import names_elsewhere as _names_elsewhere  # noqa: E402

_ELSEWHERE = {
    "bwlab.epilogue.case": "describe_gmem_byte",
    "bwlab.epilogue.model": "bits_to_float32 epilogue_alpha_beta float32_to_bits store_coverage",
    "bwlab.epilogue.ordering": "BulkAsyncGroups OrderingError",
    "bwlab.epilogue.pictures": ("plot_bank_phases plot_bulk_groups plot_edge_store plot_edge_tiles "
                                "plot_epilogue_path plot_store_box plot_writer_map"),
    "bwlab.epilogue.recorded": ("bank_cycles edge_store_case epilogue_case fence_experiment FenceExperiment "
                                "gpu_vs_model GPU_VS_MODEL NOFENCE_RUNS teach_case"),
    "bwlab.epilogue.rules": ("D_DTYPES PROXY_FENCE_RULE REDUCE_ADD_DTYPES STORE_GRANULE STORE_RULES StoreRule "
                             "StoreRuleError TF32_ROUNDS_ON_STORE"),
    "bwlab.epilogue.runner": "measure_store_cycles require_teach_args run_epilogue run_tma_store TEACH_EDITS",
    "bwlab.epilogue.store": ("granule_of smem_box_footprint smem_box_pitch tma_reduce_add_model "
                             "tma_store_writes"),
    "bwlab.epilogue.tile": "bank_patterns MAPPINGS RegisterStorePlan SmemTile",
    "bwlab.hw.banks": "BANK_BYTES BANK_RULE BankReport smem_bank SMEM_BANKS WARP wavefronts",
    "bwlab.hw.swizzle": "SWIZZLES",
}

__getattr__, __dir__ = _names_elsewhere(globals(), _ELSEWHERE)
