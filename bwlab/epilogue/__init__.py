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
`case` (`TmaStore`, `Epilogue`: model / run / check / show), `demos` (notebook 05's GPU cases, on a GPU
or as the H100 recorded them), `pictures`. Validation and benchmarks:
`bwlab.checks.store` (`python -m bwlab.validate store`, `python -m bwlab.bench tma_store`).
"""
from __future__ import annotations

from ..hw.banks import BANK_BYTES, BANK_RULE, SMEM_BANKS, WARP, BankReport, smem_bank, wavefronts
from ..hw.swizzle import SWIZZLES
from .case import Epilogue, TmaStore, describe_gmem_byte
from .demos import (GPU_VS_MODEL, NOFENCE_RUNS, FenceExperiment, edge_store_case, epilogue_case, fence_experiment,
                    gpu_vs_model, teach_case)
from .model import (bits_to_float32, epilogue_alpha_beta, epilogue_model, float32_to_bits,
                    store_coverage)
from .ordering import BulkAsyncGroups, EpilogueOrdering, OrderingError
from .pictures import plot_bank_phases, plot_edge_tiles, plot_store_box, plot_writer_map
from .problem import EpilogueProblem, teach_problem
from .rules import (D_DTYPES, PROXY_FENCE_RULE, REDUCE_ADD_DTYPES, STORE_GRANULE, STORE_RULES,
                    TF32_ROUNDS_ON_STORE, StoreRule, StoreRuleError)
from .runner import (TEACH_EDITS, check_teach_args, measure_store_cycles, run_epilogue, run_teach,
                     run_tma_store)
from .store import (granule_of, smem_box_footprint, smem_box_pitch, tma_reduce_add_model,
                    tma_store_model, tma_store_writes)
from .tile import MAPPINGS, RegisterStorePlan, SmemTile, bank_patterns

__all__ = [
    # the D tile in SMEM, registers -> SMEM, banks (the bank model is bwlab.hw.banks')
    "SmemTile", "MAPPINGS", "RegisterStorePlan", "bank_patterns", "BANK_RULE", "BankReport",
    "wavefronts", "smem_bank", "SMEM_BANKS", "BANK_BYTES", "WARP", "SWIZZLES",
    # the proxy fence and bulk async-groups
    "PROXY_FENCE_RULE", "OrderingError", "BulkAsyncGroups", "EpilogueOrdering",
    # the TMA store and reduce-add
    "STORE_RULES", "StoreRule", "StoreRuleError", "STORE_GRANULE", "REDUCE_ADD_DTYPES", "TF32_ROUNDS_ON_STORE", "smem_box_pitch",
    "smem_box_footprint", "tma_store_writes", "tma_store_model", "tma_reduce_add_model",
    "run_tma_store", "granule_of", "TmaStore",
    # a whole epilogue
    "D_DTYPES", "EpilogueProblem", "epilogue_alpha_beta", "bits_to_float32", "float32_to_bits",
    "epilogue_model", "run_epilogue", "Epilogue", "store_coverage", "describe_gmem_byte",
    # the teaching kernel cuda_src/teach_store.cu
    "teach_problem", "run_teach", "check_teach_args", "TEACH_EDITS",
    # GPU timing of st.shared.v4 (notebook 05's hardware tier)
    "measure_store_cycles",
    # notebook 05's GPU cases (on a GPU now, else the H100's recordings)
    "GPU_VS_MODEL", "NOFENCE_RUNS", "FenceExperiment", "edge_store_case", "epilogue_case", "teach_case",
    "fence_experiment", "gpu_vs_model",
    # pictures
    "plot_bank_phases", "plot_writer_map", "plot_edge_tiles", "plot_store_box",
]
