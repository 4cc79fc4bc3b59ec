"""Benchmarks on the GPU: CUDA events, warm-up, median of repeats, a baseline measured in the same run.

    python -m bwlab.bench tma_copy --out docs/results/tma_copy_bench.txt
    python -m bwlab.bench multicast | tma_store | gemm ...

Each stage's module in `bwlab/checks/` provides a `bench_main(argv) -> int`; this file
only dispatches, so `python -m bwlab.bench NAME --help` shows the stage's own options.
"""
from __future__ import annotations

from .validate import dispatch

COMMANDS = {
    "tma_copy": ("bwlab.checks.tma", "bench_main"),
    "multicast": ("bwlab.checks.multicast", "bench_main"),
    "tma_store": ("bwlab.checks.store", "bench_main"),
    "umma_model": ("bwlab.checks.umma", "bench_model_main"),
    "gemm": ("bwlab.checks.gemm", "bench_main"),
}


def main(argv=None) -> int:
    return dispatch(COMMANDS, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
