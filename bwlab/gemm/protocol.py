"""The sustained measurement protocol behind every GEMM speed that bwlab prints.

An H100 running a large bf16 GEMM sits at its power cap: the SM clock drifts between about 1350 and
1410 MHz and NVML reports "SW power cap" the whole time. A short timing then depends on what ran just
before it (a cool GPU boosts), and a ratio of two kernels moves by several percent with the method.
The protocol fixes the method so that a ratio means one thing:

1. Warm-up: the library GEMM runs in windows of `window_s` until the median SM clock of two
   consecutive windows differs by at most `settle_mhz` (at least `warmup_min_s`, at most
   `warmup_max_s`; without a clock reading, `warmup_min_s`).
2. Sustained blocks, alternating: library, candidate, library, candidate, ..., library; each block
   launches back to back for `block_s` seconds; the whole sequence is repeated `rounds` times.
3. Operands rotate through `operand_sets` copies whose A and B together exceed `l2_multiple` x L2, so
   no launch finds its inputs left in L2 by the launch before.
4. Each block is timed with CUDA events around samples of several launches (about `sample_ms` each);
   its per-launch time is the median of its samples.
5. The ratio is library time / candidate time of the medians of all samples of each (> 1: the
   candidate is faster), and the spread is the range of the same ratio taken round by round, each
   candidate block against the library blocks on either side of it.
6. SM clock, power and the throttle (clock event) reasons are sampled through NVML during every
   block and printed with it.

This module holds the rules and the statistics (no GPU needed, tested in tests/test_gemm_protocol.py);
bwlab/checks/gemm_sustained.py runs the blocks on the GPU, sampling the clocks with bwlab/checks/clocks.py.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

__all__ = ["Protocol", "SUSTAINED", "operand_sets", "samples_per_launch", "settled", "BlockStats",
           "block_stats", "RatioSummary", "compare"]


@dataclass(frozen=True)
class Protocol:
    block_s: float = 2.0        # seconds of back-to-back launches per block
    rounds: int = 2             # library/candidate alternations of every candidate
    window_s: float = 0.5       # warm-up windows
    warmup_min_s: float = 3.0
    warmup_max_s: float = 20.0
    settle_mhz: float = 15.0    # settled: two consecutive windows' median SM clocks this close
    l2_multiple: float = 2.0    # the operand sets together hold this many times L2 in A and B
    sample_ms: float = 5.0      # launches per event pair: enough for about this long

    def __post_init__(self):
        if self.block_s <= 0 or self.window_s <= 0 or self.sample_ms <= 0:
            raise ValueError("block_s, window_s and sample_ms must be positive")
        if self.rounds < 1:
            raise ValueError(f"rounds must be at least 1, got {self.rounds}")
        if not 0 <= self.warmup_min_s <= self.warmup_max_s:
            raise ValueError("warm-up: 0 <= warmup_min_s <= warmup_max_s")
        if self.l2_multiple < 1:
            raise ValueError("the operand sets must hold at least one L2 (l2_multiple >= 1)")

    def describe(self) -> str:
        return (f"protocol 'sustained': warm-up with the library until two {self.window_s:g}-s windows' median "
                f"SM clocks differ by <= {self.settle_mhz:g} MHz ({self.warmup_min_s:g}-{self.warmup_max_s:g} s); "
                f"then {self.rounds} rounds of alternating blocks (library, candidate, ..., library), "
                f"{self.block_s:g} s of back-to-back launches each, CUDA events around ~{self.sample_ms:g} ms "
                f"samples; operands rotated through sets holding >= {self.l2_multiple:g} x L2 of A and B; "
                f"ratio = library / candidate of the medians of all samples (> 1: candidate faster), "
                f"spread = the range of that ratio round by round; SM clock, power and throttle reasons "
                f"sampled by NVML during each block")


SUSTAINED = Protocol()


def operand_sets(bytes_per_set: int, l2_bytes: int, multiple: float = 2.0, at_least: int = 2) -> int:
    """How many copies of (A, B) the launches rotate through so that together they exceed
    `multiple` x L2 (and at least `at_least`, so consecutive launches never share operands)."""
    if bytes_per_set <= 0 or l2_bytes <= 0:
        raise ValueError("operand bytes and L2 bytes must be positive")
    return max(at_least, math.ceil(multiple * l2_bytes / bytes_per_set))


def samples_per_launch(launch_ms: float, sample_ms: float) -> int:
    """Launches between two events: enough that one sample lasts about `sample_ms`."""
    if launch_ms <= 0:
        raise ValueError(f"a launch takes a positive time, got {launch_ms} ms")
    return max(1, round(sample_ms / launch_ms))


def settled(window_mhz: list, settle_mhz: float) -> bool:
    """The clock has settled when the last two windows' median SM clocks differ by <= settle_mhz."""
    return len(window_mhz) >= 2 and abs(window_mhz[-1] - window_mhz[-2]) <= settle_mhz


@dataclass
class BlockStats:
    median: float
    q1: float
    q3: float
    n: int

    @property
    def iqr_rel(self) -> float:
        """The interquartile range relative to the median."""
        return (self.q3 - self.q1) / self.median if self.median else float("nan")


def _quantile(xs: list, q: float) -> float:
    s = sorted(xs)
    pos = q * (len(s) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def block_stats(samples: list) -> BlockStats:
    """Median and quartiles of one block's per-launch times."""
    if not samples:
        raise ValueError("a block without samples")
    return BlockStats(statistics.median(samples), _quantile(samples, 0.25), _quantile(samples, 0.75),
                      len(samples))


@dataclass
class RatioSummary:
    candidate_ms: float          # median of every candidate sample
    library_ms: float            # median of the library samples of the blocks beside the candidate's
    ratio: float                 # library_ms / candidate_ms
    per_round: list = field(default_factory=list)   # the same ratio, round by round

    @property
    def spread(self) -> tuple:
        return (min(self.per_round), max(self.per_round))

    def __str__(self):
        lo, hi = self.spread
        return f"{self.ratio:.3f} (rounds {lo:.3f}-{hi:.3f})"


def compare(candidate_blocks: list, library_before: list, library_after: list) -> RatioSummary:
    """Round r's candidate block (samples in ms per launch) against the library blocks just before and
    just after it. Returns the ratio of the medians of all samples and the per-round ratios."""
    if not candidate_blocks or not (len(candidate_blocks) == len(library_before) == len(library_after)):
        raise ValueError("one candidate block and the library blocks on either side of it, for every round")
    per_round = []
    for cand, before, after in zip(candidate_blocks, library_before, library_after):
        per_round.append(statistics.median(before + after) / statistics.median(cand))
    cand_all = [x for blk in candidate_blocks for x in blk]
    lib_all = [x for blk in library_before + library_after for x in blk]
    cm, lm = statistics.median(cand_all), statistics.median(lib_all)
    return RatioSummary(cm, lm, lm / cm, per_round)
