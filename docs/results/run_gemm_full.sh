export PYTHONPATH=$PWD
timeout 300 python -m bwlab.bench gemm --record --out $OUT/gemm_h100.txt > $OUT/bench.log 2>&1; echo "bench rc=$?"
cp docs/results/recordings/gemm_ladder.npz $OUT/
timeout 150 python docs/results/gemm_explore.py 8192 > $OUT/gemm_explore_h100.txt 2>&1; echo "explore rc=$?"
timeout 120 compute-sanitizer --tool memcheck python -m bwlab.bench gemm --sizes 512 --skinny --repeat 1 --warmup 0 > $OUT/sanitizer.txt 2>&1; echo "sanitizer rc=$?"
tail -5 $OUT/sanitizer.txt; cat $OUT/gemm_explore_h100.txt; grep -v "^  stamps" $OUT/gemm_h100.txt | tail -32
