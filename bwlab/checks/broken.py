"""The broken-kernel gallery on a GPU: each of cuda_src/broken_kernels.cu runs through
`bwlab.sandbox.run_isolated`, and the report says what came back, how fast, and that the calling
process's CUDA context still works afterwards.

    python -m bwlab.checks.broken [--limit S] [--sanitize] [--out FILE]
    python -m bwlab.checks.broken --one oob_store      # one launch in this process (what the sanitizer reruns)
"""
from __future__ import annotations

import sys
import time

import numpy as np

from ..compile import load_module
from ..runtime import MbarrierTimeout, launch
from ..sandbox import KernelFault, KernelHang, run_isolated, where_is_fault
from .common import Command

__all__ = ["GALLERY", "launch_broken", "validate_main"]

# kernel -> (what the learner did, what bwlab should turn it into)
GALLERY = {
    "missing_arrival": ("mbarrier expects 2 arrivals, 1 arrives", "MbarrierTimeout"),
    "oob_store": ("store 16 GiB past the end of a 4 KiB buffer", "KernelFault"),
    "spin_forever": ("spin on a flag nobody sets, no bounded wait", "KernelHang"),
    "divergent_barrier": ("__syncthreads() reached by one warp of four", "whatever the GPU does"),
}


def launch_broken(name: str) -> str:
    """Launch one gallery kernel in this process and wait for it (run it isolated!)."""
    import cupy as cp
    mod = load_module("broken_kernels")
    out = cp.zeros(1024, dtype=cp.uint32)
    args = {"missing_arrival": (out,), "oob_store": (out, np.uint64(1 << 32)),
            "spin_forever": (cp.zeros(1, dtype=cp.uint32), out), "divergent_barrier": (out,)}[name]
    launch(mod, name, (1,), (128,), args, barrier_names={0: "bar (expects 2 arrivals)"})
    cp.cuda.runtime.deviceSynchronize()
    return f"finished; out[:4] = {cp.asnumpy(out[:4]).tolist()}"


def validate_main(argv=None) -> int:
    cmd = Command("checks.broken", "Run the broken-kernel gallery in worker processes", stage="tma")
    cmd.add("--limit", type=float, default=2.0, help="seconds a launch may take before it counts as hung")
    cmd.add("--sanitize", action="store_true", help="rerun a faulting kernel under compute-sanitizer")
    args, say = cmd.start(argv)
    failures = 0
    for name, (did, expect) in GALLERY.items():
        t0 = time.perf_counter()
        try:
            got, text = "returned", run_isolated(launch_broken, name, name=name, limit=args.limit)
        except MbarrierTimeout as e:
            got, text = "MbarrierTimeout", str(e)
        except KernelFault as e:
            got, text = "KernelFault", e.error
            if args.sanitize:
                rep = where_is_fault([sys.executable, "-m", "bwlab.checks.broken", "--one", name])
                text += "\n    " + (rep or "compute-sanitizer not found").replace("\n", "\n    ")
        except KernelHang as e:
            got, text = "KernelHang", str(e).split(".")[0]
        dt = time.perf_counter() - t0
        ok = expect.startswith("whatever") or got == expect
        failures += not ok
        say(f"{name:18s} ({did}): {got} after {dt:.2f} s (worker start-up included); expected {expect}"
            f"{'' if ok else '  <-- UNEXPECTED'}\n    {text}")
    # The calling process never touched the broken kernels: its context must work.
    from ..hello import hello_roundtrip
    src, dst = hello_roundtrip(4096, blocks=2)
    ok = np.array_equal(src, dst)
    failures += not ok
    say(f"a normal launch in this process afterwards: {'exact' if ok else 'MISMATCH'}")
    return cmd.finish(failures, "broken-kernel gallery")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        print(launch_broken(sys.argv[2]))
        raise SystemExit(0)
    raise SystemExit(validate_main())
