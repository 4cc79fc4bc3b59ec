"""What the emulator reports when a kernel breaks a rule, faults or can never finish."""
from __future__ import annotations

__all__ = ["EmuError", "EmuFault", "DivergenceError", "ProtocolError", "ProxyFenceMissing", "EmuHang",
           "UnsupportedInstruction", "EmuTimeout", "TmemLeak", "TmemAllocHang", "TmemAllocError", "TmemLaneQuarter",
           "TcgenFenceMissing", "PeerExited", "AsyncReadHazard", "AsyncInFlightAtExit",
           "ClusterPeerMayAccess", "TmemStoreNotWaited", "GenericWriteNotOrdered", "AsyncWriteNotObserved",
           "MbarrierPhaseOverrun", "WgmmaFenceMissing", "MbarrierInitNotOrdered", "DivergentBarrier", "ApproxNote"]


class ApproxNote(UserWarning):
    """A kernel uses approximate instructions (`ex2.approx.f32`, `div.full.f32`, ...): the emulator's results
    of those are not bit-identical to a GPU's; the note says how far they may be (bwlab.hw.approx)."""


class EmuError(RuntimeError):
    """A kernel did something the PTX ISA does not allow; the message names the thread(s), the
    instruction and the rule."""


class EmuFault(EmuError):
    """An access the GPU would fault on (out of bounds, misaligned, unmapped); the message names the
    thread, the instruction, the address and the nearest allocation. An `EmuError`, so a learner sees
    it in the same short form as every other error the emulator reports."""


class DivergenceError(EmuError):
    """A `.sync`/`.aligned` instruction reached by a warp whose lanes are not together."""


class DivergentBarrier(DivergenceError):
    """`bar.sync` / `__syncthreads()` (or another `.aligned` instruction) reached by some lanes of a warp
    while others of that warp go elsewhere or exit without reaching it — e.g. `__syncthreads()` inside
    `if (threadIdx.x == 0)`. The PTX ISA leaves it undefined (every thread of the warp must execute the
    same `.aligned` instruction)."""


class ProtocolError(EmuError):
    """An asynchronous-unit rule broken (mbarrier use before init, registers read before the wait,
    a CTA that exits while its cluster peers still write into it, ...)."""


class ProxyFenceMissing(ProtocolError):
    """Shared memory written by generic-proxy stores and then read by the async proxy (TMA store,
    wgmma operands) with no `fence.proxy.async` by the writing thread in between."""


class EmuHang(EmuError):
    """Every live thread waits and nothing can ever wake it; `.report` names each waiting warp."""

    def __init__(self, message: str, report: str = ""):
        self.report = report
        super().__init__(message + ("\n" + report if report else ""))


class EmuTimeout(EmuError):
    """The kernel ran past the emulator's instruction budget without finishing."""


class UnsupportedInstruction(EmuError):
    """An instruction the emulator does not execute (yet); the message names it, its PTX line and, when
    known, the CUDA construct that emits it (`bwlab.emu.isa.table.CUDA_CONSTRUCTS`)."""


# tcgen05 (PTX ISA, "TensorCore 5th Generation Family Instructions"): bwlab.emu.isa.asynchronous.tcgen05
class TmemLeak(ProtocolError):
    """A CTA exited with TMEM columns still allocated."""


class TmemAllocHang(ProtocolError):
    """A tcgen05.alloc that can never be satisfied (it would block forever on the GPU)."""


class TmemAllocError(ProtocolError):
    """An allocator rule broken: dealloc of columns not allocated, rising nCols, alloc after relinquish."""


class TmemLaneQuarter(ProtocolError):
    """tcgen05.ld/st by a warp outside its lane quarter (warp w may access lanes 32*(w%4) .. +31)."""


class TcgenFenceMissing(ProtocolError):
    """tcgen05 operations of two warps ordered by a thread synchronisation (bar.sync, barrier.cluster) without
    tcgen05.fence::before_thread_sync before it (in the warp that issued the first) or
    tcgen05.fence::after_thread_sync after it (in the warp that issues the second)."""


class PeerExited(ProtocolError):
    """A .cta_group::2 operation while the peer CTA of the pair has exited."""



# the order of asynchronous work (bwlab.emu.order)
class AsyncReadHazard(ProtocolError):
    """Shared memory written (by a generic store, or by a TMA load or bulk copy landing) while an asynchronous
    operation that reads it (TMA store, bulk copy, wgmma, tcgen05.mma) may still be reading it: the writer has
    not observed its completion."""


class AsyncInFlightAtExit(ProtocolError):
    """A CTA exits while an asynchronous operation may still read its shared memory."""


class ClusterPeerMayAccess(ProtocolError):
    """A CTA exits while a cluster peer that reached its shared memory or mbarriers may still do so (no cluster
    barrier after the peer's last access)."""


class TmemStoreNotWaited(ProtocolError):
    """TMEM read (tcgen05.ld, tcgen05.mma) or freed while a tcgen05.st to those columns has not been waited for
    with tcgen05.wait::st."""


class GenericWriteNotOrdered(ProtocolError):
    """An asynchronous operation (TMA store, wgmma, tcgen05.mma) reads shared memory another warp stored with no
    barrier between that store and the issue."""


class AsyncWriteNotObserved(ProtocolError):
    """Shared memory read while a TMA load or bulk copy writing it is in flight, or before the mbarrier phase it
    completed was observed by the reader; or read while a cp.async writing it is not known complete to the reader
    (its cp.async.wait_group / wait_all, or the mbarrier phase of its cp.async.mbarrier.arrive)."""


class MbarrierPhaseOverrun(ProtocolError):
    """A parity wait passes on a phase two or more past the one the waiting warp last observed: the barrier ran a
    phase ahead of it (a producer that did not wait for the consumer's release)."""


class WgmmaFenceMissing(ProtocolError):
    """wgmma.mma_async whose accumulator registers were written since the warp's last wgmma.fence."""


class MbarrierInitNotOrdered(ProtocolError):
    """An mbarrier used by a thread that no barrier orders after the mbarrier.init of another warp."""


class MbarrierArrivalUnordered(ProtocolError):
    """A thread arrives on an mbarrier again before it observed the completion of the phase its previous arrival
    ended (the last expected arrival, the phase still waiting for tx-count): on another schedule this arrival
    counts in that phase, whose pending arrival count is already 0."""
