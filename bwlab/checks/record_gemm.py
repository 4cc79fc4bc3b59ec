"""The GEMM ladder's recording (`python -m bwlab.bench gemm --record` on an H100): the benchmark
table and one CTA's timeline stamps of every step at 4096^3.

A timing cannot be replayed through a model; `replay` checks what the recording must satisfy if it
came from these kernels: every step of the ladder is in it, each row's TFLOP/s is 2 M N K over its
time, every stamp ends after it begins, and CTA 0 recorded exactly the k-slices and tiles its loops
walk for the recorded shape and grid.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["replay", "ReplayResult", "expected_events"]


@dataclass
class ReplayResult:
    problems: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def __str__(self):
        return "gemm_ladder replays: " + ("consistent" if self.ok else "; ".join(self.problems))


def expected_events(step, m: int, n: int, k: int, sms: int) -> tuple:
    """(k-slices, tiles) that CTA 0 of `step` walks for an m x n x k problem on a GPU with `sms` SMs."""
    from ..gemm.ladder import BK
    tiles = (m // step.bm) * (n // step.bn)
    if not step.persistent:
        return k // BK, 1
    grid = step.grid(m, n, sms)[0]
    units = tiles // step.cluster
    mine = len(range(0, units, grid // step.cluster))
    return mine * (k // BK), mine


def replay(rec) -> ReplayResult:
    from ..gemm.ladder import STEPS, step
    out = ReplayResult()
    names = [str(s) for s in rec["steps"]]
    if names != [s.name for s in STEPS]:
        out.problems.append(f"the recorded steps {names} are not the ladder's {[s.name for s in STEPS]}")
    for (shape, name), (ms, tflops, ratio, predicted) in zip(rec["table"], rec["numbers"]):
        m, n, k = (int(v) for v in str(shape).split("x"))
        if not np.isclose(2.0 * m * n * k / (ms * 1e-3) / 1e12, tflops, rtol=1e-6):
            out.problems.append(f"{shape} {name}: {tflops} TFLOP/s is not 2MNK / {ms} ms")
    m, n, k = rec.params["stamp_shape"]
    sms = int(rec.params.get("sms", 132))
    for name, st in zip(names, rec["stamps"]):
        s = step(name)
        begin, end = st[..., 0, 1].astype(np.int64), st[..., 1, 1].astype(np.int64)
        used = end > 0
        if np.any(end[used] < begin[used]):
            out.problems.append(f"{name}: a stamp ends before it begins")
        slices, tiles = expected_events(s, m, n, k, sms)
        cap = st.shape[1]
        got = int(used[1].sum())
        if got != min(slices, cap):
            out.problems.append(f"{name}: CTA 0's consumer recorded {got} k-slices, its loop walks {slices}")
        epilogues = int(used[3].sum())
        want = tiles * (1 if s.threads == 128 else 2)
        if epilogues != min(want, cap):
            out.problems.append(f"{name}: {epilogues} epilogue stamps, expected {want}")
    return out
