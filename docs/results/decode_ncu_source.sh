# Nsight Compute's per-instruction warp-stall samples (SASS) of cuBLAS's kernel and step 5 with cuBLAS's tile at
# 256 x 8192 x 8192 (decode_ncu.py's cases), clocks not locked: where each kernel's warps wait.
export PYTHONPATH=$PWD
for w in cublas s5x128; do
  ncu --clock-control none --kernel-name-base demangled -k 'regex:gemm|nvjet' --launch-skip 3 -c 1 \
    --section WarpStateStats --section SourceCounters --metrics smsp__pcsamp_sample_count \
    --page source --print-source sass --csv python3 docs/results/decode_ncu.py $w 256 > $OUT/src_$w.csv 2>&1
  ncu --clock-control none --kernel-name-base demangled -k 'regex:gemm|nvjet' --launch-skip 3 -c 1 \
    --section WarpStateStats --print-details all python3 docs/results/decode_ncu.py $w 256 > $OUT/stall_$w.txt 2>&1
  wc -c $OUT/src_$w.csv; grep -i "stall" $OUT/stall_$w.txt | head -30
done
