"""NVIDIA B200 (HGX, 180-192 GB HBM3e), sm_100a. No B200 was measured by this project: every number
the datasheets do not state is a range, and the prediction is given as a range from them.

Sources:
  [DSB]  NVIDIA HGX B200 / DGX B200 datasheets: 8 TB/s HBM3e per GPU, 2.25 PFLOP/s dense FP16/BF16 per GPU
         (4.5 with sparsity).
  [PTX]  PTX ISA 9.x, tcgen05: one tcgen05.mma (cta_group::1) computes up to M=128 x N=256 x K=16 per SM;
         cta_group::2 spans two SMs.
  [GAU]  gau-nernst, "tcgen05 for dummies" / learn-cuda 02e (B200): 148 SMs; the tensor pipe does
         8192 BF16 FLOP per SM-cycle (2x Hopper): 2.25e15 / (148 x 1.86e9).
  [JIA]  microbenchmark papers on Blackwell (e.g. "Dissecting the NVIDIA Blackwell Architecture with
         Microbenchmarks", 2025): L2 ~ 126 MB on B200; latencies of the same order as Hopper's.
  [H]    assumed like Hopper's SM (h100_sxm.py) for want of a measurement, with a wider range.
"""
from ..machine import Machine, Param, fixed

MACHINE = Machine(
    name="B200",
    arch="sm_100a",
    sms=fixed(148, "SMs", "[GAU], [JIA]"),
    max_clock_mhz=Param(1965, 1800, 2000, "MHz", "[JIA]; the datasheet's peak implies ~1.86 GHz sustained"),
    smem_per_sm=fixed(233472, "bytes", "CUDA Programming Guide, compute capability 10.0 (228 KiB)"),
    l2_bytes=Param(126 * 2**20, 100 * 2**20, 128 * 2**20, "bytes", "[JIA]"),
    dram_bw=Param(7.2e12, 6.0e12, 8.0e12, "bytes/s", "[DSB] 8 TB/s peak; streaming reaches ~90 % on HBM parts"),
    l2_bw=Param(10.3e12, 7.0e12, 14.0e12, "bytes/s", "[H] Hopper's calibrated 9.2 TB/s scaled by 148/132 SMs, wide range"),
    sm_l2_port=Param(108, 64, 160, "bytes/SM-cycle", "[H] Hopper's calibrated value"),
    smem_bw=fixed(128, "bytes/SM-cycle", "CUDA Programming Guide: 32 banks x 4 bytes"),
    mma_flops=Param(8192, 7168, 8192, "FLOP/SM-cycle", "[GAU], [DSB]; lo: the datasheet's 2.25 PF at 2.0 GHz"),
    mma_latency=Param(100, 60, 200, "cycles", "[H]"),
    tma_latency=Param(350, 280, 600, "cycles", "[H]"),
    tma_issue=Param(8, 2, 32, "cycles", "[H]"),
    dram_latency=Param(500, 300, 800, "cycles", "[H], [JIA]"),
    mbar_wake=Param(52, 30, 100, "cycles", "[H]"),
    mbar_remote=Param(150, 50, 400, "cycles", "[H]"),
    mbar_try=Param(72, 50, 100, "cycles", "[H]"),
    mbar_arrive=Param(22, 10, 60, "cycles", "[H]"),
    bar_sync=Param(30, 20, 80, "cycles", "[H]"),
    cluster_sync=Param(300, 150, 600, "cycles", "[H]"),
    alu_cpi=Param(4.0, 2.0, 6.0, "cycles/instruction", "[H]"),
    smem_latency=Param(30, 23, 40, "cycles", "[H]"),
    gmem_latency=Param(300, 200, 400, "cycles", "[H], [JIA]"),
    gst_sector=Param(2.0, 1.0, 4.0, "cycles/sector", "[H]"),
    st_l2_bw=Param(2.5e12, 1.5e12, 4.0e12, "bytes/s", "[H] Hopper's measured 2.246e12 scaled by 148/132 SMs, wide range"),
    gst_warp=Param(16.0, 8.0, 24.0, "cycles/sector", "[H]"),
    lsu_queue=Param(256, 64, 1024, "cycles", "[H]"),
    launch_us=Param(2.0, 0.5, 4.0, "us", "[H]"),
    kslice_jitter=Param(0.108, 0.05, 0.2, "of a k-slice", "[H] the H200's measured 0.108 (h100_sxm.py), wide range; "
                        "the sm_100a prediction stores C from TMEM and does not use it"),
)
