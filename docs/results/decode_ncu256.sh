set -x
export PYTHONPATH=$PWD
for w in cublas s5x128 rung; do
  ncu --clock-control none --kernel-name-base demangled -k 'regex:gemm|nvjet|xmma|cutlass' --launch-skip 3 -c 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
    --section WarpStateStats --section SchedulerStats --section LaunchStats \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,gpu__time_duration.sum,dram__bytes_read.sum,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum \
    python3 docs/results/decode_ncu.py $w 256 > $OUT/ncu_$w.txt 2>&1
  tail -5 $OUT/ncu_$w.txt
done
