#!/usr/bin/env bash
# One device call per part, for the emulator's correctness and strictness on the merged tree.
#   emu:     every sm_90a kernel of the suite on this GPU and in bwlab.emu, new inputs and a new scheduler seed
#   mutants: every sm_90a / sm_100a kernel with one synchronisation point broken, run in bwlab.emu on this
#            machine's CPU cores (no GPU needed; the device machine has 16 cores)
# Usage (device tool, repository root):  COMMIT=<sha> bash docs/results/run_strict.sh emu|mutants
set -u
part=${1:-emu}
out=${OUT:-$PWD/strict_out}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 MPLBACKEND=Agg BWLAB_CACHE=/tmp/bwlab-cache
commit=${COMMIT:-working tree}
stamp() {
  local f=$1; shift
  {
    echo
    echo "# $(date -u +%Y-%m-%d) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null), $(nproc) CPU cores,"
    echo "# Python $(python3 -c 'import sys;print(sys.version.split()[0])'), $(python3 -c 'import cupy,numpy;print("cupy", cupy.__version__, "numpy", numpy.__version__)' 2>/dev/null), tree at $commit"
    echo "# command: $*"
  } >> "$f"
}
run() {
  local name=$1; shift
  local t0=$(date +%s)
  "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  echo "# exit code $rc after $(( $(date +%s) - t0 )) s" >> "$out/$name.txt"
  stamp "$out/$name.txt" "$@"
  echo "$name: exit $rc ($(( $(date +%s) - t0 )) s)"
}
case "$part" in
  emu)
    run emu_validate_h200 python3 -m bwlab.validate emu --tma 600 --store 120 --seed 11
    ;;
  mutants)
    run mutants_h200cpu python3 -m bwlab.validate mutants --jobs "$(( $(nproc) - 1 ))" --cpu-limit 120 \
        --json "$out/mutants_h200cpu.jsonl"
    ;;
esac
