"""NVIDIA H200 SXM (141 GB HBM3e), sm_90a: the H100 SXM's GH100 die (same SMs, clocks and L2) with
faster, larger HBM.

Sources: [DS200] NVIDIA H200 Tensor Core GPU datasheet: 141 GB HBM3e at 4.8 TB/s, 989 TFLOP/s dense BF16
(the H100's); [OWN] /work/shared/REFERENCE.md "This H200": 132 SMs, max SM clock 1980 MHz;
everything else as in h100_sxm.py (same SM), [CAL] docs/results/timing_calibrate_h200.txt.
"""
import dataclasses

from ..machine import Param, fixed
from .h100_sxm import MACHINE as H100

MACHINE = dataclasses.replace(
    H100,
    name="H200",
    sms=fixed(132, "SMs", "[DS200]; [OWN] REFERENCE.md (device query)"),
    max_clock_mhz=fixed(1980, "MHz", "[OWN] REFERENCE.md (device query)"),
    dram_bw=Param(4.58e12, 4.3e12, 4.8e12, "bytes/s", "[DS200] 4.8 TB/s peak; [CAL] 4.58 TB/s TMA streaming read"),
)
