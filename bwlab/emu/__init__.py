"""bwlab.emu: execute the PTX that NVRTC emits, on a CPU, instruction by instruction.

The emulated tier of the suite: where there is no GPU (or `BWLAB_BACKEND=emulated`), the stage
runners hand the kernel's own PTX to this emulator instead of a GPU. It runs warps of 32 lanes in
NumPy with per-lane program counters, shared/global/param/local memory with bounds, clusters and
distributed shared memory, the mbarrier, the TMA (loads, multicast, stores, reduce-adds, bulk groups),
wgmma, and tcgen05 (Tensor Memory and its allocator, tcgen05.mma/commit/ld/st, sm_100a) on bwlab's own
models of those units — and it reports what hardware cannot: which warp
waits on what when a kernel is stuck, a generic store read by the async proxy without a fence, a
`.aligned` instruction reached by a diverged warp, an accumulator read before its wait, and the tcgen05
protocol (TMEM still allocated at exit, lane quarters, fences around thread syncs, the CTA pair).

What it is not: a performance model. Time is virtual (one nanosecond per warp-instruction, seeded
latencies for the asynchronous units), deterministic for a given seed.
"""
from .errors import (ApproxNote, DivergenceError, DivergentBarrier, EmuError, EmuFault, EmuHang, EmuTimeout, PeerExited, ProtocolError,  # noqa: F401
                     ProxyFenceMissing, TcgenFenceMissing, TmemAllocError, TmemAllocHang, TmemLaneQuarter, TmemLeak,
                     UnsupportedInstruction)
from .host import Function, RawModule, asarray, asnumpy, empty, full, last_launch, ndarray, zeros  # noqa: F401
from .memory import is_emu_pointer  # noqa: F401

__all__ = ["ApproxNote", "RawModule", "Function", "ndarray", "asarray", "asnumpy", "zeros", "empty", "full", "last_launch",
           "is_emu_pointer", "EmuError", "EmuFault", "EmuHang", "EmuTimeout", "DivergenceError", "ProtocolError",
           "ProxyFenceMissing", "UnsupportedInstruction", "TmemLeak", "TmemAllocHang", "TmemAllocError",
           "TmemLaneQuarter", "TcgenFenceMissing", "PeerExited", "DivergentBarrier"]
