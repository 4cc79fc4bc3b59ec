"""Speed without a GPU: machine descriptions and a timing model over the emulator's trace.

    from bwlab.timing import machine, gemm
    m = machine.load("h100_sxm")
    p = gemm.predict("s6", 8192, 8192, 8192, m, clock_mhz=1350)
    p.ms, p.tflops

Design and validation: docs/timing.md.
"""
