#!/usr/bin/env bash
# One device call: every GPU check of bwlab on a Hopper GPU, after the move to stage packages.
#   tests:    the whole test suite (GPU tests included)
#   validate: every `python -m bwlab.validate ...` command
#   bench:    the benchmarks and every notebook executed in its GPU tier
# Usage (device tool, repository root):  bash docs/results/run_h100.sh tests|validate|bench|classroom|emu|gemm
# Writes NAME.txt files into $OUT (or ./h100_out), each ending with the command that made it.
set -u
part=${1:-validate}
out=${OUT:-$PWD/h100_out}
mkdir -p "$out"
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 MPLBACKEND=Agg BWLAB_CACHE=/tmp/bwlab-cache
commit=${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo "working tree")}  # the device copy's .git may be stale: pass COMMIT
stamp() {  # where and what, appended to each file
  local f=$1; shift
  {
    echo
    echo "# $(date -u +%Y-%m-%d) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null),"
    echo "# Python $(python3 -c 'import sys;print(sys.version.split()[0])'), $(python3 -c 'import cupy,numpy;print("cupy", cupy.__version__, "numpy", numpy.__version__)' 2>/dev/null), tree at $commit"
    echo "# command: $*"
  } >> "$f"
}
run() {  # run NAME CMD...: output to $out/NAME.txt, exit code recorded
  local name=$1; shift
  local t0=$(date +%s)
  "$@" > "$out/$name.txt" 2>&1
  local rc=$?
  echo "# exit code $rc after $(( $(date +%s) - t0 )) s" >> "$out/$name.txt"
  stamp "$out/$name.txt" "$@"
  echo "$name: exit $rc ($(( $(date +%s) - t0 )) s)"
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
case "$part" in
  tests)
    run gpu_tests_h100 python3 -m pytest -q -p no:cacheprovider -rs tests
    ;;
  validate)
    run foundation_h100 python3 -m bwlab.validate foundation
    run tma_validate_h100 python3 -m bwlab.validate tma --cases 1000 --seed 0 --time-limit 150
    run multicast_validate_h100 python3 -m bwlab.validate multicast
    run wgmma_validate_h100 python3 -m bwlab.validate wgmma
    run store_validate_h100 python3 -m bwlab.validate store --cases 500 --seed 0
    run tmem_validate_h100 python3 -m bwlab.validate tmem
    run broken_kernels_h100 python3 -m bwlab.checks.broken --sanitize
    ;;
  emu)
    # the PTX emulator against this GPU: every sm_90a kernel, the same inputs, byte for byte
    run emu_validate_h100 python3 -m bwlab.validate emu --tma ${EMU_TMA:-1000} --store ${EMU_STORE:-200}
    run emu_tests_h100 env BWLAB_BACKEND=emulated python3 -m pytest -q -p no:cacheprovider tests/test_emu.py \
        tests/test_tma_gpu.py tests/test_multicast_gpu.py tests/test_epilogue_gpu.py
    ;;
  classroom)
    # The exercises' GPU paths (the learner's edited kernels in worker processes), the ladder's GPU
    # tests, every notebook executed in its GPU tier with the solutions in place, the broken-kernel gallery.
    run exercises_gpu_h100 python3 -m pytest -q -p no:cacheprovider -rs tests/test_exercises_orient.py \
        tests/test_exercises_tma.py tests/test_exercises_multicast.py tests/test_exercises_umma.py \
        tests/test_exercises_tmem.py tests/test_exercises_store.py tests/test_exercises_flow.py \
        tests/test_gemm_ladder.py tests/test_gemm_sm100.py tests/test_gemm_notebook.py tests/test_sandbox.py tests/test_lab.py
    run notebooks_h100 bash -c 'for f in notebooks/src/0*.py; do python3 -m bwlab.tools.notebooks run $f; done'
    run broken_kernels_h100 python3 -m bwlab.checks.broken --sanitize
    ;;
  gemm)
    # the GEMM ladder and the rungs beyond it under the sustained protocol (see run_gemm_protocol.sh)
    bash docs/results/run_gemm_protocol.sh
    ;;
  bench)
    run tma_copy_bench_h100 python3 -m bwlab.bench tma_copy
    run store_bench_h100 python3 -m bwlab.bench tma_store
    run multicast_bench_h100 python3 -m bwlab.bench multicast
    run notebooks_h100 bash -c 'for f in notebooks/src/0*.py; do python3 -m bwlab.tools.notebooks run $f; done'
    ;;
esac
ls -la "$out"
