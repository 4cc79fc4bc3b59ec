"""The peak numbers a roofline needs, from NVIDIA's datasheets (dense figures: no 2:4 sparsity).

* H100 SXM5 — NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column): FP32 67 TFLOPS, FP16 Tensor Core
  1,979 TFLOPS *with sparsity* (989.5 dense, half of it; 989.4 TFLOP/s is what NVIDIA quotes in the
  Hopper architecture whitepaper's table), GPU memory bandwidth 3.35 TB/s (HBM3, 80 GB).
* H200 SXM — NVIDIA H200 Tensor Core GPU datasheet: FP32 67 TFLOPS, FP16 Tensor Core 1,979 TFLOPS with
  sparsity (989.5 dense), GPU memory bandwidth 4.8 TB/s (HBM3e, 141 GB). Same SMs and clocks as the
  H100 SXM; only the memory differs.

FP32 is the CUDA cores' fused multiply-add rate (steps 1-4); FP16 Tensor Core the rate of mma.sync,
wgmma and the like with f16 inputs and f32 accumulation (step 5; NVIDIA quotes one figure for f16 and
bf16). A datasheet's peak is at the boost clock; under a long GEMM the H100/H200 often run slower
(docs/results/gemm_protocol*_h100.txt).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Machine", "H100", "H200", "MACHINES"]


@dataclass(frozen=True)
class Machine:
    name: str
    dram_bytes_per_s: float      # HBM bandwidth
    fp32_flops: float            # CUDA cores, FMA counted as 2 FLOP
    f16_tensor_flops: float      # tensor cores, f16 in / f32 accumulate, dense
    source: str

    def peak(self, unit: str) -> float:
        """FLOP/s of 'fp32' (CUDA cores) or 'tensor' (f16 tensor cores)."""
        if unit not in ("fp32", "tensor"):
            raise ValueError(f"unit is 'fp32' or 'tensor', got {unit!r}")
        return self.fp32_flops if unit == "fp32" else self.f16_tensor_flops

    def attainable(self, intensity: float, unit: str) -> float:
        """The roofline: min(peak, intensity x bandwidth), FLOP/s at `intensity` FLOP per byte."""
        return min(self.peak(unit), intensity * self.dram_bytes_per_s)

    def ridge(self, unit: str) -> float:
        """The intensity (FLOP/byte) where the bandwidth roof meets the compute roof."""
        return self.peak(unit) / self.dram_bytes_per_s


H100 = Machine("H100 SXM5", 3.35e12, 67e12, 1979e12 / 2,
               "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM: FP32 67 TFLOPS, FP16 Tensor Core 1,979 "
               "TFLOPS (with sparsity), 3.35 TB/s")
H200 = Machine("H200 SXM", 4.8e12, 67e12, 1979e12 / 2,
               "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM: FP32 67 TFLOPS, FP16 Tensor Core 1,979 "
               "TFLOPS (with sparsity), 4.8 TB/s")
MACHINES = {"H100": H100, "H200": H200}
