#!/usr/bin/env bash
# The GEMM ladder under the sustained protocol, on the device machine (repository root):
#   bash docs/results/run_gemm_protocol.sh [STEPS...]
# First every step's GPU test at small shapes (bounded waits: a wrong kernel fails fast), then
# `python -m bwlab.bench gemm --protocol sustained` with its report and JSON samples in $OUT.
set -uo pipefail
out=${OUT:-$PWD/h100_out}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 MPLBACKEND=Agg BWLAB_CACHE=/tmp/bwlab-cache
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
timeout 240 python3 -m pytest -q -x -p no:cacheprovider -rs tests/test_gemm_ladder.py 2>&1 | tail -5
steps=()
[ $# -gt 0 ] && steps=(--steps "$@")
python3 -m bwlab.bench gemm --protocol sustained "${steps[@]}" --json "$out/gemm_protocol_h100.json" \
    --out "$out/gemm_protocol_h100.txt"
echo "bench rc=$?"
{
  echo
  echo "# $(date -u +%Y-%m-%d) on $(nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader)"
  echo "# command: python -m bwlab.bench gemm --protocol sustained ${steps[*]} --json gemm_protocol_h100.json --out gemm_protocol_h100.txt"
} >> "$out/gemm_protocol_h100.txt"
