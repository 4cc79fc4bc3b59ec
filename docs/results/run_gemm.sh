#!/usr/bin/env bash
# The GEMM ladder on the device machine: small shapes first (a wrong kernel fails fast and bounded),
# then the benchmark with its recording. Usage (repository root): bash docs/results/run_gemm.sh OUTDIR
set -uo pipefail
OUT=${1:-/tmp/gemm_out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 150 python -m bwlab.bench gemm --sizes 512 1024 --skinny 256x768x128 512x256x640 --repeat 3 --warmup 1 \
    --out "$OUT/gemm_small.txt"; echo "small rc=$?"
if [ "${FULL:-1}" = 1 ]; then
  timeout 420 python -m bwlab.bench gemm --record --out "$OUT/gemm_h100.txt"; echo "full rc=$?"
  cp docs/results/recordings/gemm_ladder.npz "$OUT/" 2>/dev/null
fi
