"""The solved Hopper capstone on this GPU: the answer key's fills put into cuda_src/capstone/hopper_ws.cu,
run at a few shapes, C compared with cuBLAS's f32 GEMM of the same bf16 operands (cupy.matmul, through
bwlab.gemm.runner.check's tolerance), and at the graded shape compared element by element with the PTX
emulator's C. What made docs/results/capstone_h200.txt:

    python -m bwlab.checks.capstone [--out FILE]

The answer key is the instructor's edition of notebook 10 (notebooks/src/10_capstone.py, its
`### BEGIN SOLUTION` blocks): this command runs from a checkout, not from the wheel.
"""
from __future__ import annotations

import argparse
import datetime
import re
import sys
from pathlib import Path

import numpy as np

from .common import EXIT_MISMATCH, EXIT_NO_GPU, EXIT_PASS, Report

SHAPES = ((4096, 4096, 4096), (8192, 8192, 2048), (256, 512, 640))
SOURCE = Path(__file__).resolve().parents[2] / "notebooks" / "src" / "10_capstone.py"


def answer_key(path: Path = SOURCE) -> dict:
    """The fills the instructor's edition of notebook 10 assigns in its solution blocks, by name."""
    ns: dict = {}
    for block in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", path.read_text(), flags=re.S):
        exec(block, ns)
    return {k: v for k, v in ns.items() if isinstance(v, str)}


def _driver() -> str:
    """The NVIDIA driver's version, as nvidia-smi reports it (or the CUDA driver API's)."""
    import subprocess
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout.split()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        import cupy as cp
        v = cp.cuda.runtime.driverGetVersion()
        return f"(CUDA driver API {v // 1000}.{v % 1000 // 10})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bwlab.checks.capstone", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="also save the report to this file")
    opts = ap.parse_args(argv)
    from .. import device
    info = device.gpu_info()
    if info is None or not info.has_wgmma:
        print("the Hopper capstone needs an sm_90 GPU (wgmma); none here")
        return EXIT_NO_GPU
    import cupy as cp
    from ..capstone.runner import random_operands, run_emulated, run_gpu
    from ..capstone.skeleton import assemble, skeleton
    from ..gemm.runner import check
    say = Report()
    say(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, {info.name} ({info.sm}, "
        f"{info.sm_count} SMs), driver {_driver()}, cupy {cp.__version__}")
    fills = answer_key()
    sk = skeleton("hopper")
    asm = assemble("hopper", {r: fills[r] for r in sk.regions})
    say(f"the solved Hopper capstone: {sk.file} with the answer key's fills of {', '.join(sk.regions)}; "
        f"{info.sm_count} persistent CTAs")
    ok = True
    for m, n, k in SHAPES:
        a, b = random_operands(m, n, k, seed=1)
        c = run_gpu(asm, a, b)
        got = check(cp.asarray(a), cp.asarray(b), cp.asarray(c), "capstone hopper")
        ok &= got.ok
        say(f"  {got}")
        if (m, n, k) == SHAPES[-1]:
            try:
                ce, _ = run_emulated(asm, a, b, sms=2, seed=0)
            except Exception as e:      # said, not hidden: the GPU's checks above still stand
                say(f"  the emulator's run of {m}x{n}x{k} failed here: {type(e).__name__}: {e}")
                continue
            same = int(np.count_nonzero(ce != c))
            say(f"  the same {m}x{n}x{k} in bwlab's PTX emulator (2 persistent CTAs): {same} of {m * n} elements "
                "of C differ from the GPU's")
    say("reference: cupy.matmul of the bf16 operands in f32 (cuBLAS SGEMM; TF32 off); no timing taken")
    say(f"command: python -m bwlab.checks.capstone{' --out ' + opts.out if opts.out else ''}")
    say.save(opts.out)
    return EXIT_PASS if ok else EXIT_MISMATCH


if __name__ == "__main__":
    sys.exit(main())
