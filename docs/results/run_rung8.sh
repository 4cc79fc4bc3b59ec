#!/usr/bin/env bash
# Step 8 and the other benches under the sustained protocol, on the device machine (repository root):
#   OUT=DIR bash docs/results/run_rung8.sh gemm     # the ladder's GPU tests, then s6 and s8 vs cuBLAS
#   OUT=DIR bash docs/results/run_rung8.sh memory   # TMA copy, TMA store, multicast; ncu on the TMA store
#   OUT=DIR bash docs/results/run_rung8.sh probe    # steps 6 and 8: SM cycles per k-slice and per tile (stamps)
# Every step has its own timeout, so a hang cannot take the whole run; each report ends with its command.
set -uo pipefail
out=${OUT:-$PWD/h100_out}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 MPLBACKEND=Agg BWLAB_CACHE=/tmp/bwlab-cache
gpu=$(nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader)
echo "$gpu" | tee "$out/gpu.txt"
stamp() { echo; echo "# $(date -u +%Y-%m-%d) on $gpu, at commit $(cat .commit 2>/dev/null || echo '?')"; echo "# command: $*"; }
case "${1:-gemm}" in
gemm)
  timeout 170 python3 -m pytest -q -x -p no:cacheprovider -rs tests/test_gemm_ladder.py tests/test_gemm_protocol.py \
      > "$out/rung8_gpu_tests_h100.txt" 2>&1
  echo "tests rc=$?"; tail -3 "$out/rung8_gpu_tests_h100.txt"
  stamp "timeout 170 python -m pytest -q -x -rs tests/test_gemm_ladder.py tests/test_gemm_protocol.py" >> "$out/rung8_gpu_tests_h100.txt"
  name=gemm_protocol_s8_h100
  cmd="python -m bwlab.bench gemm --protocol sustained --steps s6 s8 --sizes 4096 6144 8192 --skinny 512x8192x8192 --json $name.json --out $name.txt"
  timeout 400 python3 -m bwlab.bench gemm --protocol sustained --steps s6 s8 --sizes 4096 6144 8192 \
      --skinny 512x8192x8192 --json "$out/$name.json" --out "$out/$name.txt"
  echo "bench rc=$?"
  stamp "$cmd" >> "$out/$name.txt"
  gzip -f "$out/$name.json"
  ;;
memory)
  timeout 130 python3 -m bwlab.bench tma_copy --sizes-mib 256,1024,4096 --out "$out/tma_copy_sustained_h100.txt"
  echo "copy rc=$?"
  stamp "python -m bwlab.bench tma_copy --sizes-mib 256,1024,4096 --out tma_copy_sustained_h100.txt" >> "$out/tma_copy_sustained_h100.txt"
  timeout 80 python3 -m bwlab.bench tma_store --out "$out/store_sustained_h100.txt"
  echo "store rc=$?"
  stamp "python -m bwlab.bench tma_store --out store_sustained_h100.txt" >> "$out/store_sustained_h100.txt"
  timeout 90 python3 -m bwlab.bench multicast --protocol sustained --clusters 2,4 --ctas 120 \
      --out "$out/multicast_sustained_h100.txt"
  echo "multicast rc=$?"
  stamp "python -m bwlab.bench multicast --protocol sustained --clusters 2,4 --ctas 120 --out multicast_sustained_h100.txt" \
      >> "$out/multicast_sustained_h100.txt"
  m=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors_op_write.sum
  timeout 150 ncu --clock-control none -k 'regex:tma_store_stream|st_global_stream|fill' --metrics $m \
      python3 docs/results/store_ncu_probe.py > "$out/store_ncu_h100.txt" 2>&1
  echo "ncu rc=$?"
  stamp "ncu --clock-control none -k 'regex:tma_store_stream|st_global_stream|fill' --metrics $m python3 docs/results/store_ncu_probe.py" \
      >> "$out/store_ncu_h100.txt"
  ;;
probe)
  timeout 240 python3 docs/results/s8_tile_cycles_probe.py > "$out/s8_tile_cycles_h100.txt" 2>&1
  echo "probe rc=$?"; cat "$out/s8_tile_cycles_h100.txt"
  stamp "python docs/results/s8_tile_cycles_probe.py" >> "$out/s8_tile_cycles_h100.txt"
  ;;
esac
