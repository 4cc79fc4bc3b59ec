"""Benchmarks on the GPU: CUDA events, warm-up, median of repeats, a baseline measured in the same run.

    python -m bwlab.bench tma_copy --out docs/results/tma_copy_bench.txt
    python -m bwlab.bench multicast | tma_store ...

Each stage module provides `bench_main(argv) -> int`; this file
only dispatches, so `python -m bwlab.bench NAME --help` shows the stage's own options.
"""
from __future__ import annotations

from .validate import dispatch

COMMANDS = {
    "tma_copy": ("bwlab.tma", "bench_main"),
    "multicast": ("bwlab.multicast", "bench_main"),
    "tma_store": ("bwlab.epilogue", "bench_main"),
    "umma_model": ("bwlab.umma", "main", "bench-model"),  # bwlab.umma's CLI takes a sub-command
}


def main(argv=None) -> int:
    return dispatch(COMMANDS, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
