"""Benchmarks on the GPU: CUDA events, warm-up, median of repeats, a baseline measured in the same run.

    python -m bwlab.bench tma_copy --out docs/results/tma_copy_bench.txt
    python -m bwlab.bench multicast | tma_store | gemm ...

Each stage's module in `bwlab/checks/` provides a `bench_main(argv) -> int`; this file
only dispatches (argparse subcommands, bwlab.validate.dispatch), so `python -m bwlab.bench NAME --help` shows the stage's own options.
"""
from __future__ import annotations

from .validate import Subcommand, dispatch

COMMANDS = {
    "tma_copy": Subcommand("bwlab.checks.tma", "bench_main", "TMA streaming copy vs cupy's device-to-device copy"),
    "multicast": Subcommand("bwlab.checks.multicast", "bench_main",
                            "multicast vs per-CTA loads, pipeline depths (--ncu-* for Nsight Compute)"),
    "tma_store": Subcommand("bwlab.checks.store", "bench_main",
                            "TMA store vs st.global.v4 and cupy; st.shared bank cycles vs the model"),
    "umma_model": Subcommand("bwlab.checks.umma", "bench_model_main", "the speed of the NumPy tcgen05.mma model (CPU)"),
    "emu": Subcommand("bwlab.checks.emu", "bench_main",
                      "the PTX emulator's speed on the teaching kernels, the full flow and the ladder (CPU)"),
    "gemm": Subcommand("bwlab.checks.gemm", "bench_main",
                       "the GEMM ladder of this GPU, each step checked and timed against the best library GEMM"),
}


def main(argv=None) -> int:
    return dispatch(COMMANDS, argv, __doc__, "python -m bwlab.bench")


if __name__ == "__main__":
    raise SystemExit(main())
