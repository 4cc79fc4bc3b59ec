"""What holds the trip together: the four points where one hop waits for the bytes the previous hop
wrote, which write each one orders before which read, through which proxies, and what the trace
looks like when one of them is missing. NumPy and the flow's model only.

PTX ISA: mbarrier (expect_tx / complete_tx, try_wait: "Memory ordering" of the mbarrier operations),
tcgen05.commit and tcgen05.fence::after_thread_sync ("tcgen05 Memory Consistency Model"),
tcgen05.wait::ld, membar/fence (fence.proxy.async) and 9.7.9.25.2 "Async proxy". CuTe names the same
points `ClusterTransactionBarrier::wait`, `umma_arrive` + `ClusterBarrier::wait`, `fence_view_async_shared`
and `tma_store_fence`.

A missing ordering point is a race: the reader may see any mix of the bytes before and after the
writer's hop. `trace_without(p, name)` takes the worst case, the reader seeing none of the writer's
bytes (the model's fresh, zeroed memory; on a GPU, whatever was there before), and returns the trace
the trip would leave; compared with the model's trace it names the first hop whose bytes go wrong.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import load_model, mma_from_smem, registers_from_tmem, st_shared_model, store_from_smem
from .problem import FlowProblem
from .trace import HOP_NAMES, Trace

__all__ = ["Ordering", "ORDERINGS", "ORDERING_NAMES", "PROXIES", "ordering_of", "trace_without"]

PROXIES = ("generic", "async")


@dataclass(frozen=True)
class Ordering:
    """One ordering point of cuda_src/full_flow_sm100.cu: the writes of hop `writer` (into `memory`)
    are visible to the reads of hop `reader` once it has passed. `proxies` is (writer's, reader's) for
    the two shared-memory hand-offs, None where the memory is TMEM or registers (tcgen05's own
    completion mechanisms order those, not a proxy fence)."""

    name: str
    ptx: str
    writer: str
    reader: str
    memory: str
    proxies: tuple | None
    rule: str


ORDERINGS = (
    Ordering("wait on full", "mbarrier.try_wait.parity(full, 0) after arrive.expect_tx + complete_tx",
             "tma_load", "mma", "SMEM (A and B)", ("async", "async"),
             "the TMA engine writes A and B through the async proxy and signals complete_tx (release) on "
             "`full`; the wait (acquire) orders those writes before the tcgen05.mma the waiting thread "
             "issues next, whose operand reads are async-proxy reads too: one proxy, no proxy fence"),
    Ordering("wait on mma_done", "tcgen05.commit -> mbarrier.try_wait.parity(mma_done, 0); "
             "tcgen05.fence::after_thread_sync", "mma", "tmem_ld", "TMEM (D)", None,
             "tcgen05.mma is asynchronous: only the arrive-on that tcgen05.commit makes once every earlier "
             "MMA has completed says D is in TMEM; the wait, then tcgen05.fence::after_thread_sync, orders "
             "the tcgen05.ld after it"),
    Ordering("tcgen05.wait::ld", "tcgen05.wait::ld.sync.aligned", "tmem_ld", "st_shared", "registers", None,
             "tcgen05.ld is asynchronous too: its destination registers may be read only after "
             "tcgen05.wait::ld, which waits for every earlier tcgen05.ld of the thread"),
    Ordering("fence.proxy.async", "fence.proxy.async.shared::cta in every writer, then bar.sync",
             "st_shared", "tma_store", "SMEM (the D tile)", ("generic", "async"),
             "st.shared writes through the generic proxy, the TMA store reads SMEM through the async proxy: "
             "'accessing the same memory location across multiple proxies needs a cross-proxy fence' "
             "(PTX ISA 9.7.9.25.2); the barrier then orders every writer's fence before the one thread "
             "that issues the store"),
)
ORDERING_NAMES = tuple(o.name for o in ORDERINGS)


def ordering_of(name: str) -> Ordering:
    for o in ORDERINGS:
        if o.name == name:
            return o
    raise KeyError(f"no ordering point {name!r}; the trip has: {', '.join(ORDERING_NAMES)}")


def trace_without(p: FlowProblem, name: str) -> Trace:
    """The trace of the trip with ordering point `name` missing, in the worst case of the race: the
    reading hop sees the memory as it was before the writing hop (zeros here). Every array keeps what
    its own hop wrote; only what the reader took in is stale."""
    o = ordering_of(name)
    a16, b16 = p.gmem_inputs()
    smem_a, smem_b = load_model(p)

    def seen(hop, arr):
        return np.zeros_like(arr) if o.reader == hop else arr

    tmem, done = mma_from_smem(p, seen("mma", smem_a), seen("mma", smem_b))
    regs = registers_from_tmem(p, seen("tmem_ld", tmem))
    smem_d = st_shared_model(p, seen("st_shared", regs))
    gmem_d = store_from_smem(p, seen("tma_store", smem_d))
    arrays = dict(a_gmem=a16.view(np.uint16), b_gmem=b16.view(np.uint16), smem_a=smem_a, smem_b=smem_b,
                  tmem=tmem, mma_done=done, regs=regs, smem_d=smem_d, gmem_d=gmem_d)
    return Trace(f"model without {name}", p, arrays, {h: "model" for h in HOP_NAMES})
