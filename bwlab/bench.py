"""Benchmarks on the GPU: CUDA events, warm-up, median of repeats, a baseline measured in the same run.

    python -m bwlab.bench tma_copy --out docs/results/tma_copy_bench.txt
    python -m bwlab.bench multicast | tma_store ...

Each stage module provides `bench_main(argv) -> int`; this file
only dispatches, so `python -m bwlab.bench NAME --help` shows the stage's own options.
"""
from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "tma_copy": ("bwlab.tma", "bench_main"),
    "multicast": ("bwlab.multicast", "bench_main"),
    "tma_store": ("bwlab.epilogue", "bench_main"),
    "umma_model": ("bwlab.umma", "main"),
}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print(__doc__)
        print("stages:", ", ".join(COMMANDS))
        return 2
    mod, fn = COMMANDS[argv[0]]
    rest = argv[1:]
    if argv[0] == "umma_model":  # bwlab.umma's command line takes the sub-command name first
        rest = ["bench-model"] + rest
    return int(getattr(importlib.import_module(mod), fn)(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
