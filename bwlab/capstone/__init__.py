"""The capstone: a persistent, warp-specialised GEMM whose pipeline the learner writes (notebook 10).

Two skeletons in cuda_src/capstone/: `hopper_ws.cu` (a TMA producer thread, a full/empty mbarrier ring,
two wgmma consumer warpgroups, a persistent tile loop: the ladder's step 4 of gemm_sm90/) and its
Blackwell twin `blackwell_ws.cu` (a TMA warp, an MMA warp issuing tcgen05.mma and releasing stages with
tcgen05.commit, four epilogue warps reading TMEM with tcgen05.ld, two accumulators handed back and forth
through tmem_full / tmem_empty: gemm_sm100/s4_persistent.cu). Everything is given but the pipeline: the
waits, arrivals, expect_tx, commits and fences are TODO regions.

* `skeleton` — the regions, `assemble(kernel, fills)`, and the ladder's own lines for each region;
* `runner`   — the assembled kernel in the PTX emulator (or on a GPU);
* `case`     — what the notebook calls: where it runs, the TODO list, a ring's reuse, a whole kernel tried
  and its predicted speed (`speed`: bwlab.timing on the emulator's run);
* `diagnose` — what a wrong fill's text shows (the hint of a first miss);
* `exercises` — the graded exercises 10.1-10.5: each region's fill run in the strict emulator at shapes
  where every stage, accumulator and barrier phase is reused, what broke told in a few lines.

PTX ISA: mbarrier (init, arrive, expect_tx, test_wait/try_wait.parity, phase completion),
cp.async.bulk.tensor, wgmma.mma_async / commit_group / wait_group, tcgen05.mma, tcgen05.commit,
tcgen05.ld / wait::ld, tcgen05.fence (the tcgen05 memory consistency model). CuTe: the pipelines of
cutlass/pipeline/sm90_pipeline.hpp (PipelineTmaAsync, PipelineTmaUmmaAsync, PipelineUmmaAsync).
"""
from .case import predicted_speed, ring_uses, todo_table, try_kernel, where_it_runs

__all__ = ["where_it_runs", "todo_table", "ring_uses", "try_kernel", "predicted_speed"]
