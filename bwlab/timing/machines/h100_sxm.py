"""NVIDIA H100 SXM5 (80 GB HBM3), sm_90a.

Sources, cited by key in each number:
  [DS]   NVIDIA H100 Tensor Core GPU datasheet (SXM5 column): 132 SMs, 50 MB L2, 3.35 TB/s HBM3,
         989.4 TFLOP/s dense BF16.
  [WP]   NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022): per SM, 4 sub-partitions, each with
         a 4th-generation tensor core; 2x A100's dense MMA rate per SM per clock (A100: 1024 FP16 FMA)
         -> 4096 FLOP per SM-cycle, which with 132 SMs gives the datasheet's 989.4 TFLOP/s at 1830 MHz.
  [PG]   CUDA C++ Programming Guide, compute capability 9.0: 228 KiB SMEM per SM, 32 banks of 4 bytes.
  [LUO]  W. Luo et al., "Benchmarking and Dissecting the Nvidia Hopper GPU Architecture", IPDPS 2024
         (arXiv 2402.13499): pointer-chase latencies on an H800 (same SM): L2 hit ~ 260 cycles, global
         (DRAM) ~ 480-500 cycles, shared ~ 30 cycles.
  [CNC]  Chips and Cheese, "Nvidia's H100: Funny L2, and Tons of Bandwidth" (2023): L2 read bandwidth of
         an H100 PCIe ~ 5.5 TB/s with ordinary loads (a lower bound for TMA).
  [OWN]  this project's measurements: docs/results/foundation_h100.txt (228 KiB = 233472 bytes per SM),
         docs/results/gemm_protocol_h100.txt (SM clock up to 1980 MHz when not power-capped).
  [CAL]  docs/results/timing_calibrate_h200.txt: measured on an H200 (same GH100 SM, same L2; only the
         HBM differs), by docs/results/timing_calibrate.py.
"""
from ..machine import Machine, Param, fixed

CAL = "[CAL] H200 measurement (same SM and L2 as the H100 SXM)"

MACHINE = Machine(
    name="H100 SXM",
    arch="sm_90a",
    sms=fixed(132, "SMs", "[DS]"),
    max_clock_mhz=fixed(1980, "MHz", "[OWN] gemm_protocol_h100.txt, highest SM clock seen"),
    smem_per_sm=fixed(233472, "bytes", "[PG], [OWN] foundation_h100.txt"),
    l2_bytes=fixed(50 * 2**20, "bytes", "[DS]"),
    dram_bw=Param(3.0e12, 2.8e12, 3.35e12, "bytes/s",
                  "[DS] 3.35 TB/s peak; [OWN] REFERENCE.md: a device-to-device copy reaches ~3.0 TB/s"),
    l2_bw=Param(5500, 3000, 8000, "bytes/SM-cycle, chip",
                "[CNC] ~5.5 TB/s (H100 PCIe, ordinary loads) is the low end; TMA reaches more: " + CAL),
    sm_l2_port=Param(64, 32, 128, "bytes/SM-cycle", "not published; " + CAL),
    smem_bw=fixed(128, "bytes/SM-cycle", "[PG] 32 banks x 4 bytes per cycle"),
    mma_flops=fixed(4096, "FLOP/SM-cycle", "[WP], [DS]: 989.4e12 / (132 x 1.83e9)"),
    mma_latency=Param(128, 64, 256, "cycles", "not published; " + CAL),
    tma_latency=Param(700, 400, 1200, "cycles", "not published; [LUO] L2 latency ~260 is the floor; " + CAL),
    tma_issue=Param(16, 4, 64, "cycles", "not published; " + CAL),
    dram_latency=Param(250, 150, 500, "cycles", "[LUO] global minus L2 latency"),
    mbar_wake=Param(60, 20, 200, "cycles", "not published; " + CAL),
    mbar_remote=Param(150, 50, 400, "cycles", "not published; DSMEM latency ~ L2's order ([LUO] reports ~180 for DSMEM)"),
    bar_sync=Param(30, 20, 80, "cycles", "[LUO]-style microbenchmarks of __syncthreads: tens of cycles"),
    cluster_sync=Param(300, 150, 600, "cycles", "not published; a round trip over DSMEM, ~2 x mbar_remote"),
    alu_cpi=Param(2.0, 1.0, 4.0, "cycles/instruction", "[LUO] dependent ALU latency ~4-6 cycles; independent ~1"),
    smem_latency=Param(30, 23, 40, "cycles", "[LUO]"),
    gmem_latency=Param(260, 200, 300, "cycles", "[LUO] L2 hit"),
    launch_us=Param(2.0, 0.5, 4.0, "us", "not published; back-to-back launches on one stream overlap their set-up"),
)
