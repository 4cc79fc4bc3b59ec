#!/usr/bin/env bash
# The GEMM ladder under the sustained protocol, on the device machine (repository root):
#   [NAME=gemm_protocol_h100] [NCU=1] [EXTRA="--sizes --skinny 128x8192x8192"] bash docs/results/run_gemm_protocol.sh [STEPS...]
# First the ladder's GPU tests at small shapes (bounded waits: a wrong kernel fails fast), then
# `python -m bwlab.bench gemm --protocol sustained` with its report and JSON samples in $OUT;
# with NCU=1 also Nsight Compute on the TMA copy (docs/results/copy_ncu_probe.py).
set -uo pipefail
out=${OUT:-$PWD/h100_out}
name=${NAME:-gemm_protocol_h100}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 MPLBACKEND=Agg BWLAB_CACHE=/tmp/bwlab-cache
nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm --format=csv,noheader | tee "$out/gpu.txt"
timeout 240 python3 -m pytest -q -x -p no:cacheprovider -rs tests/test_gemm_ladder.py > "$out/gemm_gpu_tests.txt" 2>&1
echo "tests rc=$?"; tail -3 "$out/gemm_gpu_tests.txt"
steps=()
[ $# -gt 0 ] && steps=(--steps "$@")
python3 -m bwlab.bench gemm --protocol sustained ${EXTRA:-} "${steps[@]}" --json "$out/$name.json" --out "$out/$name.txt"
echo "bench rc=$?"
{
  echo
  echo "# $(date -u +%Y-%m-%d) on $(nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader)"
  echo "# command: python -m bwlab.bench gemm --protocol sustained ${EXTRA:-} ${steps[*]} --json $name.json --out $name.txt"
} >> "$out/$name.txt"
if [ "${NCU:-0}" = 1 ]; then
  m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed
  timeout 200 ncu --clock-control none -k 'regex:tma_copy_stream|copy_u64' --metrics $m \
      python3 docs/results/copy_ncu_probe.py > "$out/copy_ncu_h100.txt" 2>&1
  echo "ncu rc=$?"
  echo "# command: ncu --clock-control none -k 'regex:tma_copy_stream|copy_u64' --metrics $m python3 docs/results/copy_ncu_probe.py" >> "$out/copy_ncu_h100.txt"
fi
