"""The emulator's address spaces and its device memory.

Generic addresses (what a pointer holds) are split into windows, as on the GPU:
  GLOBAL_BASE ...      device allocations (cudaMalloc-like), each with a guard gap after it
  SHARED_WINDOW + a    shared memory: `a` is a shared::cluster address (see below)
  PARAM_WINDOW + o     the kernel's parameter space (a `const __grid_constant__` tensor map lives here)
  LOCAL_WINDOW + o     the thread's local memory
A shared::cta address is the byte offset in the CTA's shared memory (static variables from 0,
dynamic shared memory after them at a 1024-byte boundary). A shared::cluster address names the CTA
too: (rank + 1) << 24 | offset; an address without rank bits is the executing CTA's own, so every
shared::cta address is also a valid shared::cluster address of that CTA (PTX ISA 5.1.6.1, `mapa`).
"""
from __future__ import annotations

import bisect

import numpy as np

from .errors import EmuFault

__all__ = ["GLOBAL_BASE", "SHARED_WINDOW", "PARAM_WINDOW", "LOCAL_WINDOW", "WINDOW_SIZE",
           "DeviceMemory", "Allocation", "EmuFault", "device_memory", "is_emu_pointer", "RANK_SHIFT"]

# Far above any address a CPU or a CUDA device hands out (user space ends below 2^47, or 2^56 with
# five-level paging), so an emulator pointer is never mistaken for a real one, nor the reverse.
GLOBAL_BASE = 0x0DE0_0000_0000_0000
SHARED_WINDOW = 0x0DA0_0000_0000_0000
PARAM_WINDOW = 0x0DB0_0000_0000_0000
LOCAL_WINDOW = 0x0DC0_0000_0000_0000
WINDOW_SIZE = 0x0010_0000_0000_0000
RANK_SHIFT = 24
GUARD = 4096          # bytes left unmapped after every allocation
ALLOC_ALIGN = 512     # what cudaMalloc guarantees at least (256) and a bit more
UNWRITTEN = 0xA5      # every byte of emu.empty's memory and of a CTA's shared memory when it starts: not zero,
                      # so that a kernel reading what it never wrote gets visibly wrong values (PTX ISA: undefined)


class Allocation:
    __slots__ = ("base", "size", "buf", "label")

    def __init__(self, base: int, size: int, label: str = ""):
        self.base, self.size, self.label = base, size, label
        self.buf = np.zeros(max(size, 1), np.uint8)

    def __repr__(self):
        return f"<allocation {self.label or ''} 0x{self.base:x}..0x{self.base + self.size:x} ({self.size} B)>"


class DeviceMemory:
    """All device allocations of this process's emulated GPU."""

    def __init__(self):
        self.allocs: list[Allocation] = []
        self.bases: list[int] = []
        self.next = GLOBAL_BASE

    def alloc(self, size: int, label: str = "") -> Allocation:
        size = int(size)
        if size < 0:
            raise ValueError(f"cannot allocate {size} bytes")
        base = self.next
        self.next = base + ((size + GUARD + ALLOC_ALIGN - 1) // ALLOC_ALIGN) * ALLOC_ALIGN
        if self.next >= GLOBAL_BASE + WINDOW_SIZE:
            raise MemoryError("the emulator's global address window is exhausted")
        a = Allocation(base, size, label)
        self.allocs.append(a)
        self.bases.append(base)
        return a

    def free(self, alloc: Allocation) -> None:
        k = bisect.bisect_left(self.bases, alloc.base)
        if k < len(self.bases) and self.bases[k] == alloc.base:
            del self.bases[k]
            del self.allocs[k]

    def find(self, addr: int) -> Allocation | None:
        k = bisect.bisect_right(self.bases, addr) - 1
        if k >= 0:
            a = self.allocs[k]
            if a.base <= addr < a.base + a.size:
                return a
        return None

    def nearest(self, addr: int) -> str:
        k = bisect.bisect_right(self.bases, addr) - 1
        parts = []
        if k >= 0:
            a = self.allocs[k]
            end = a.base + a.size
            parts.append("inside " + repr(a) if addr < end else f"just past the end of {a!r} (its first byte after)"
                         if addr == end else f"{addr - end} bytes past the end of {a!r}")
        if k + 1 < len(self.allocs):
            a = self.allocs[k + 1]
            parts.append(f"{a.base - addr} bytes before {a!r}")
        if addr < 4096:
            parts.insert(0, f"a null pointer or an offset from one (address 0x{addr:x})")
        return "; ".join(parts) or "no allocation exists"

    def span(self, addr: int, nbytes: int, what: str = "access") -> tuple[Allocation, int]:
        """(allocation, offset) of [addr, addr + nbytes), which must lie inside one allocation."""
        a = self.find(addr)
        if a is None or addr + nbytes > a.base + a.size:
            raise EmuFault(f"{what}: global bytes [0x{addr:x}, 0x{addr + nbytes:x}) are not inside one "
                           f"allocation ({self.nearest(addr)})")
        return a, addr - a.base

    def read(self, addr: int, nbytes: int, what: str = "read") -> np.ndarray:
        a, o = self.span(addr, nbytes, what)
        return a.buf[o:o + nbytes]

    def write(self, addr: int, data, what: str = "write") -> None:
        data = np.asarray(data, np.uint8).reshape(-1)
        a, o = self.span(addr, data.size, what)
        a.buf[o:o + data.size] = data


_MEMORY: DeviceMemory | None = None


def device_memory() -> DeviceMemory:
    """The emulated GPU's memory (one per process, like a CUDA context)."""
    global _MEMORY
    if _MEMORY is None:
        _MEMORY = DeviceMemory()
    return _MEMORY


def is_emu_pointer(addr: int) -> bool:
    """True for an address the emulator's allocator handed out."""
    return GLOBAL_BASE <= int(addr) < GLOBAL_BASE + WINDOW_SIZE
