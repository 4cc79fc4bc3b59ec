"""What the emulator reports when a kernel breaks a rule, faults or can never finish."""
from __future__ import annotations

__all__ = ["EmuError", "EmuFault", "DivergenceError", "ProtocolError", "ProxyFenceMissing", "EmuHang",
           "UnsupportedInstruction", "EmuTimeout", "TmemLeak", "TmemAllocHang", "TmemAllocError", "TmemLaneQuarter",
           "TcgenFenceMissing", "PeerExited", "DivergentBarrier"]


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

