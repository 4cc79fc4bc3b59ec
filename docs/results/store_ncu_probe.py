"""What bounds the TMA store benchmark: one 256 MiB float32 tensor written by tma_store_stream (1 and 2
CTAs per SM, as bench tma_store times them), by st_global_stream (16-byte stores, 8 x 256-thread CTAs
per SM) and by a CuPy fill with a non-zero value (an element-wise kernel; the benchmark's baseline,
cupy's fill(0), is a cudaMemsetAsync, which Nsight Compute does not profile as a kernel), each launched
3 times, for Nsight Compute to read DRAM bytes, DRAM throughput (% of peak), L2 hit rate and duration:

    ncu --clock-control none -k 'regex:tma_store_stream|st_global_stream|fill' --metrics \
gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,\
lts__t_sector_hit_rate.pct,sm__throughput.avg.pct_of_peak_sustained_elapsed python3 docs/results/store_ncu_probe.py
"""
import cupy as cp
import numpy as np

from bwlab.checks.store import store_stream_launch
from bwlab.compile import load_module

R = C = 8192
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
mod = load_module("tma_store")
dst = cp.empty((R, C), cp.float32)
for per_sm in (1, 2):
    run = store_stream_launch(mod, dst, per_sm, sms)   # launched once inside, checked
    for _ in range(2):
        run()
cp.cuda.Device().synchronize()
fn = mod.get_function("st_global_stream")
for _ in range(3):
    fn((sms * 8,), (256,), (dst, np.uint64(R * C * 4 // 16)))
for _ in range(3):
    dst.fill(1.0)
cp.cuda.Device().synchronize()
print("fill exact:", bool((dst == 1.0).all()))
