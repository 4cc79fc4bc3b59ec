"""What bounds the TMA streaming copy: one 1 GiB copy by tma_copy_stream (the benchmark's chosen config)
and one by a plain CuPy element-wise copy kernel (8-byte loads/stores by the SMs), each launched 3 times,
for Nsight Compute to read their DRAM bytes, DRAM throughput (% of peak) and L2 hit rate:

    ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct \
        python3 docs/results/copy_ncu_probe.py
"""
import cupy as cp

from bwlab.checks.tma_copy import CopyConfig, make_tma_copy

n = 1 << 30
src = cp.random.default_rng(0).integers(0, 2**31, n // 4, dtype=cp.uint32)
dst = cp.empty_like(src)
run = make_tma_copy(src, dst, CopyConfig(tile_rows=32, stages=4, ctas_per_sm=1))
for _ in range(3):
    run()
cp.cuda.Device().synchronize()
plain = cp.ElementwiseKernel("uint64 a", "uint64 b", "b = a", "copy_u64")
for _ in range(3):
    plain(src.view(cp.uint64), dst.view(cp.uint64))
cp.cuda.Device().synchronize()
print("copy exact:", bool((src == dst).all()))
