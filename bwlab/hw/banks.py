"""Shared-memory banks: how many wavefronts one warp-wide access costs.

One model for every stage: the TMA stage asks what reading a swizzled tile column by column costs,
the epilogue what writing the accumulator into SMEM costs. `BANK_RULE` states the model and its
sources; bwlab measured its predictions on the H100 (docs/results/store_bench_h100.txt: 4/8/16/32
modelled wavefronts -> 4.9/8.3/16.3/32.3 cycles per st.shared.v4).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SMEM_BANKS", "BANK_BYTES", "WARP", "BANK_RULE", "smem_bank", "BankReport", "wavefronts"]

SMEM_BANKS = 32
BANK_BYTES = 4
WARP = 32

BANK_RULE = (
    "Shared memory has 32 banks of 4 bytes (bank = address / 4 mod 32) and serves 128 bytes per "
    "wavefront. A warp's access of W bytes per thread is split into W/4 phases of 128/W consecutive "
    "lanes (4-byte: one phase of 32; 8-byte: two of 16; 16-byte st.shared.v4: four quarter-warps of 8). "
    "A phase costs as many wavefronts as the largest number of distinct 4-byte words it touches in "
    "one bank (the same word twice costs nothing extra). Conflict-free st.shared.v4 = 4 wavefronts. "
    "Sources: the CUDA C++ Programming Guide, 'Shared Memory' (32 banks x 4 B); NVIDIA's Nsight "
    "Compute Profiling Guide (shared-memory wavefronts; 128 B/cycle) and the NVIDIA developer forum "
    "answer 'Unexpected shared memory bank conflict' (forums.developer.nvidia.com/t/77228): an "
    "LDS.128/STS.128 needs 4 requests, one per quarter-warp. It is a model; bwlab measures its "
    "predictions on the GPU (notebook 05, hardware tier).")


def smem_bank(addr):
    """Bank of a byte address: 32 banks of 4 bytes."""
    return (np.asarray(addr, dtype=np.int64) // BANK_BYTES) % SMEM_BANKS


@dataclass(frozen=True)
class BankReport:
    """Cost of one warp-wide shared-memory access under `BANK_RULE`."""

    width: int                  # bytes per thread (4, 8, 16)
    phases: tuple               # lanes of each phase
    words_per_bank: np.ndarray  # (n_phases, 32): distinct 4-byte words each bank serves per phase
    wavefronts_per_phase: tuple

    @property
    def wavefronts(self) -> int:
        return int(sum(self.wavefronts_per_phase))

    @property
    def ideal(self) -> int:
        """Wavefronts without conflicts: one per phase that has an active lane."""
        return int(sum(1 for w in self.wavefronts_per_phase if w))

    @property
    def conflicts(self) -> int:
        """Extra wavefronts caused by bank conflicts."""
        return self.wavefronts - self.ideal

    @property
    def ways(self) -> int:
        """The worst phase's conflict degree (1 = conflict-free)."""
        return int(max(self.wavefronts_per_phase) if self.wavefronts_per_phase else 0)


def wavefronts(addresses, width: int = 16) -> BankReport:
    """Shared-memory wavefronts of one warp instruction in which lane i accesses `width` bytes at
    `addresses[i]` (a negative address marks an inactive lane). See `BANK_RULE`."""
    addresses = np.asarray(addresses, dtype=np.int64).reshape(-1)
    if addresses.size != WARP:
        raise ValueError(f"one address per lane of a warp (32), got {addresses.size}")
    if width not in (4, 8, 16):
        raise ValueError(f"width must be 4, 8 or 16 bytes (st.shared.b32/.v2/.v4), got {width}")
    active = addresses >= 0
    if np.any(addresses[active] % width):
        raise ValueError(f"a {width}-byte shared-memory access must be {width}-byte aligned")
    lanes_per_phase = 128 // width
    phases, words, fronts = [], [], []
    for p in range(WARP // lanes_per_phase):
        lanes = tuple(range(p * lanes_per_phase, (p + 1) * lanes_per_phase))
        phases.append(lanes)
        distinct = set()
        for lane in lanes:
            if active[lane]:
                first = int(addresses[lane]) // BANK_BYTES
                distinct.update(range(first, first + width // BANK_BYTES))
        per_bank = np.zeros(SMEM_BANKS, dtype=np.int64)
        for w in distinct:
            per_bank[w % SMEM_BANKS] += 1
        words.append(per_bank)
        fronts.append(int(per_bank.max()))
    return BankReport(width, tuple(phases), np.array(words), tuple(fronts))
