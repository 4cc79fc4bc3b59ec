"""The mbarrier, as a state machine (PTX ISA "Parallel Synchronization and Communication Instructions:
mbarrier"; CuTe include/cute/arch/copy_sm90_desc.hpp ClusterTransactionBarrier).

An mbarrier lives in shared memory and counts two things per *phase*: pending arrivals (reset to the
count given to `mbarrier.init` when a phase completes) and the transaction count (bytes announced
with `expect_tx` and retired by `complete_tx`, which TMA performs as its bytes land). A phase
completes when both are zero; waiters then see it through `try_wait.parity`, which asks "has the
phase with this parity completed?" — the parity of the current phase is the other one.

Every stage uses this one model: the TMA load's `arrive.expect_tx` + `complete_tx`, the multicast
barrier that several CTAs' TMA writes retire, `tcgen05.commit`'s arrive-one.
"""
from __future__ import annotations

__all__ = ["Mbarrier", "MbarrierError", "MAX_TX_BYTES", "MAX_ARRIVALS"]

# The tx-count is a 20-bit quantity: one phase may expect at most 2^20 - 1 bytes
# (PTX ISA, mbarrier "Contents of the mbarrier object": tx-count range [-(2^20 - 1), 2^20 - 1]).
MAX_TX_BYTES = (1 << 20) - 1
# mbarrier.init's count: [1, 2^20 - 1].
MAX_ARRIVALS = (1 << 20) - 1


class MbarrierError(ValueError):
    """An mbarrier operation breaks a rule of the PTX ISA (the message names it)."""


class Mbarrier:
    """One mbarrier: `count` arrivals per phase, a transaction count, the current phase.

    The methods are the PTX operations; the arrive forms return True when this call completed the
    phase. `completed` counts completed phases.
    """

    def __init__(self, count: int = 1):
        count = int(count)
        if not 1 <= count <= MAX_ARRIVALS:
            raise MbarrierError(f"mbarrier.init takes an arrival count in [1, {MAX_ARRIVALS}], got {count}")
        self.count = count
        self.pending = count
        self.tx = 0
        self.phase = 0

    @property
    def completed(self) -> int:
        """Phases completed so far (== the current phase number)."""
        return self.phase

    def _advance(self) -> bool:
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending = self.count
            return True
        return False

    def expect_tx(self, nbytes: int) -> None:
        """`mbarrier.expect_tx`: announce `nbytes` more bytes for the current phase."""
        nbytes = int(nbytes)
        if not 0 <= self.tx + nbytes <= MAX_TX_BYTES:
            raise MbarrierError(f"one phase's tx-count must stay within [0, {MAX_TX_BYTES}] bytes "
                                f"(20 bits); expecting {nbytes} more on top of {self.tx}")
        self.tx += nbytes

    def arrive(self, count: int = 1) -> bool:
        """`mbarrier.arrive` (count arrivals; `tcgen05.commit`'s arrive::one is count 1)."""
        count = int(count)
        if count > self.pending:
            raise MbarrierError(f"{count} arrival(s) on an mbarrier that expects {self.pending} more "
                                f"in this phase (init count {self.count})")
        self.pending -= count
        return self._advance()

    def arrive_expect_tx(self, nbytes: int) -> bool:
        """`mbarrier.arrive.expect_tx`: the expect-tx happens before the arrive-on."""
        self.expect_tx(nbytes)
        return self.arrive()

    def complete_tx(self, nbytes: int) -> bool:
        """What the TMA engine does as `nbytes` land (`mbarrier::complete_tx::bytes`)."""
        self.tx -= int(nbytes)
        return self._advance()

    def try_wait_parity(self, parity: int) -> bool:
        """`mbarrier.try_wait.parity`: True once the phase with this parity has completed."""
        return (self.phase & 1) != (int(parity) & 1)

    def __repr__(self):
        return f"Mbarrier(count={self.count}, pending={self.pending}, tx={self.tx}, phase={self.phase})"
