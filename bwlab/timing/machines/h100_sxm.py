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
  [PROBE] docs/results/timing_probe_h200.txt, by docs/results/timing_probe.py on the same H200: the ladder's
         direct epilogue stores 4,096 sectors per 128 x 256 tile in 8,178 cycles with one CTA on one SM
         and in 15,221 with one CTA on each of the 132 SMs at once.
  [OWN]  this project's measurements: docs/results/foundation_h100.txt (228 KiB = 233472 bytes per SM),
         docs/results/gemm_protocol_h100.txt (SM clock up to 1980 MHz when not power-capped).
  [CAL]  docs/results/timing_calibrate_h200.txt: measured on an H200 (same GH100 SM, same L2; only the
         HBM differs), by docs/results/timing_calibrate.py (2026-11-28, SM clock 1967-1980 MHz):
         TMA box load, one in flight, L2 hit: 388 / 466 / 615 cycles for 8 / 16 / 32 KiB (a fixed ~310
         plus the bytes at ~108 B/cycle); from DRAM 896 / 1078 / 1184; mbarrier round trip 103 cycles
         (one hop ~52); wgmma m64n256k16: 128.5 cycles each with 1, 2 or 3 warpgroups (4080-4089 FLOP per
         SM-cycle), 203 cycles from issue to wait_group 0 for one alone; TMA streaming of L2-resident
         boxes: 107.8 B/cycle for one SM alone, 36.0 B/cycle per SM with all 132 (9.20 TB/s); DRAM
         streaming 4.58 TB/s (H200).
  [STAMPS] docs/results/recordings/gemm_ladder.npz (H100, 4096^3, -DGEMM_STAMPS): CTA 0's timeline per
         k-slice, clock64 cycles (bwlab.gemm.timeline).
  [WAIT] docs/results/timing_waits_h200.txt, by docs/results/timing_waits.py on an H200 (2026-11-28): what an
         mbarrier wait costs the waiting warp (cuda_src/timing/waits_sm90.cu), with a bare try_wait loop and
         with the ladder's bounded wait: a round trip between two warps 100 / 110 cycles; 4 warps arriving
         together while thread 0 waits 140 / 260; a wait on a phase already complete 72 / 79.
  [DRIFT] docs/results/tile_drift_h200.txt / .npz, by docs/results/tile_drift.py on an H200: every tile's
         start and end (%globaltimer, clock64) in three launches each of steps 3 and 4 at 8192^3 and 4096^3.
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
    dram_bw=Param(3.0e12, 2.8e12, 3.2e12, "bytes/s",
                  "[DS] 3.35 TB/s peak; [OWN] REFERENCE.md: a device-to-device copy reaches ~3.0 TB/s; [CAL] TMA streaming "
                  "reached 4.58 of the H200's 4.8 (95 %): 0.95 x 3.35 = 3.2 is hi"),
    l2_bw=Param(9.0e12, 8.79e12, 9.2e12, "bytes/s",
                "[CAL] 9.20 TB/s (4755 B per SM-cycle at 1980 MHz) with TMA from all SMs; [PROBE] 8.79 TB/s at a "
                "power-capped 1470 MHz (45.6 B per SM-cycle: the L2 keeps its pace when the SMs slow); "
                "[CNC] ~5.5 TB/s with ordinary loads"),
    sm_l2_port=Param(108, 90, 128, "bytes/SM-cycle", "[CAL] 107.8 B/cycle, one SM streaming alone"),
    smem_bw=fixed(128, "bytes/SM-cycle", "[PG] 32 banks x 4 bytes per cycle"),
    mma_flops=fixed(4096, "FLOP/SM-cycle", "[WP], [DS]: 989.4e12 / (132 x 1.83e9)"),
    mma_latency=Param(75, 60, 100, "cycles", "[CAL] 203 cycles issue-to-wait for one m64n256k16, minus its 128 of pipe"),
    tma_latency=Param(310, 280, 380, "cycles", "[CAL] 388 - 8 KiB / 108 B/cycle; [LUO] L2 latency ~260 is the floor"),
    tma_issue=Param(8, 2, 32, "cycles", "not published and not measured; small next to a box's transfer"),
    dram_latency=Param(500, 400, 600, "cycles", "[CAL] DRAM minus L2-hit latency of one box (508, 612, 569); [LUO] ~220-250 for one load"),
    mbar_wake=Param(52, 40, 80, "cycles", "[CAL] half the 103-cycle round trip; [WAIT] round trips of 100 (bare) and 110 (bounded wait)"),
    mbar_remote=Param(150, 50, 400, "cycles", "not published; DSMEM latency ~ L2's order ([LUO] reports ~180 for DSMEM)"),
    mbar_try=Param(79, 72, 79, "cycles", "[WAIT] a wait on a phase already complete: 79 with the ladder's bounded "
                   "wait (mbarrier_wait, what its kernels use), 72 with a bare try_wait loop (lo)"),
    mbar_arrive=Param(22, 22, 52, "cycles", "[WAIT] 4 warps arrive together while thread 0 waits: 140 cycles with a "
                      "bare try_wait loop = 4 x 22 + mbar_wake; 260 with the ladder's bounded wait, 52 per arrival if "
                      "all of the difference were the arrivals' (hi; the bounded wait's round trip costs only 10 more)"),
    bar_sync=Param(30, 20, 80, "cycles", "[LUO]-style microbenchmarks of __syncthreads: tens of cycles"),
    cluster_sync=Param(300, 150, 600, "cycles", "not published; a round trip over DSMEM, ~2 x mbar_remote"),
    alu_cpi=Param(4.0, 2.0, 6.0, "cycles/instruction",
                  "[LUO] dependent ALU latency ~4-6 cycles, independent ~1-2; [STAMPS] thread 0's own path between "
                  "two stamps (loads issued, waits on barriers long complete, the loop: no wgmma, no data to wait "
                  "for): step 1 134-160 and 88-133 cycles, step 2 200, 301 and 412, where the model gives 116, 114 / "
                  "148, 279, 231 at 4 cycles per PTX instruction and 74, 88 / 90, 196, 172 at 2"),
    smem_latency=Param(30, 23, 40, "cycles", "[LUO]"),
    gmem_latency=Param(260, 200, 300, "cycles", "[LUO] L2 hit"),
    gst_sector=fixed(2.0, "cycles/sector",
                     "[PROBE] the ladder's epilogue stores (8 sectors per warp instruction), one SM alone: 2.00 (with "
                     "every SM storing at once the chip's rate, st_l2_bw, bounds each SM's share)"),
    st_l2_bw=Param(2.246e12, 1.80e12, 2.246e12, "bytes/s",
                   "[PROBE] 132 SMs storing the ladder's epilogue at once: 3.72 cycles per sector per SM at 1976 MHz = "
                   "132 x 32 B / 3.72 x 1.976e9 = 2.246e12 B/s of sectors; as the L2's read bandwidth ([PROBE]) it is "
                   "taken to keep its bytes per second when the SMs slow down; lo: if it scaled with the SM clock "
                   "instead, at the ladder's ~1,600 MHz (2.246 x 1600 / 1976)"),
    gst_warp=Param(16.0, 14.0, 21.0, "cycles/sector",
                   "[PROBE] one CTA alone: 8,178 cycles for 64 stores of 8 sectors per warp (8 warps); "
                   "[OWN] GEMM_STAMPS epilogues on the H200 (probe) 8,014-10,744 cycles and on the H100 "
                   "(recordings/gemm_ladder.npz) 9,768-12,644"),
    lsu_queue=Param(256, 64, 1024, "cycles", "not published; a few dozen stores in flight per SM"),
    launch_us=Param(2.0, 0.5, 4.0, "us", "not published; back-to-back launches on one stream overlap their set-up"),
    kslice_jitter=Param(0.108, 0.10, 0.16, "of a k-slice",
                        "[DRIFT] tile_drift_h200.txt (an H200; not measured on an H100): step 3's round starts at "
                        "8192^3 spread as a random walk, sigma^2 growing by (1.01-1.13 us)^2 a round, of a 113-us tile "
                        "of 128 k-slices: 0.101, 0.112, 0.108 of a k-slice in the three logged launches (the median; "
                        "bwlab.timing.phases.measured_kslice_jitter); at 4096^3 0.132-0.159 (hi)"),
)
