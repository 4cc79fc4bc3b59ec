"""Foundation checks on a real GPU: the compile layer, a bulk-copy round trip, and the promise
that a kernel never hangs (a deliberately wrong expect_tx comes back as MbarrierTimeout quickly,
and the next launch in the same process works).

    python -m bwlab.validate foundation [--out FILE]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from . import device
from .compile import load_module
from .runtime import MbarrierTimeout, launch, Report

HELLO_BARRIERS = {0: "smem_full"}


def hello_roundtrip(nbytes: int = 4096, blocks: int = 2, extra_tx: int = 0):
    """Run cuda_src/hello_bulk.cu: each CTA bulk-copies `nbytes` into SMEM and writes them back."""
    import cupy as cp
    if nbytes % 16 or not 16 <= nbytes <= 16384:
        raise ValueError(f"cp.async.bulk moves a multiple of 16 bytes; this kernel's buffer holds "
                         f"at most 16384, got {nbytes}")
    device.require("tma")
    mod = load_module("hello_bulk")
    pattern = (np.arange(blocks * nbytes // 4, dtype=np.uint64) * 2654435761) % (1 << 32)
    src = cp.asarray(pattern.astype(np.uint32))
    dst = cp.zeros_like(src)
    launch(mod, "hello_bulk_roundtrip", (blocks,), (128,),
           (src, dst, np.uint32(nbytes), np.uint32(extra_tx)), barrier_names=HELLO_BARRIERS)
    return cp.asnumpy(src), cp.asnumpy(dst)


def validate_main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bwlab.validate foundation")
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args(argv)
    say = Report()

    info = device.gpu_info()
    say(device.banner(print_it=False))
    if info is None:
        say("no GPU: nothing to validate on hardware")
        return 1
    say(f"GPU {info.name} cc {info.cc} SMs {info.sm_count} smem/SM {info.smem_per_sm} "
        f"smem/block(optin) {info.smem_per_block_optin} L2 {info.l2_bytes}")
    failures = 0
    for nbytes in (16, 256, 4096, 16384):
        src, dst = hello_roundtrip(nbytes, blocks=4)
        ok = np.array_equal(src, dst)
        failures += not ok
        say(f"bulk round trip {nbytes:6d} B x 4 CTAs: {'exact' if ok else 'MISMATCH'}")
    t0 = time.perf_counter()
    try:
        hello_roundtrip(4096, blocks=2, extra_tx=16)
        say("deliberately wrong expect_tx: NO EXCEPTION (failure)")
        failures += 1
    except MbarrierTimeout as e:
        dt = time.perf_counter() - t0
        say(f"deliberately wrong expect_tx (+16 B): MbarrierTimeout after {dt:.3f} s")
        say(f"  message: {e}")
        if dt > 1.0:
            failures += 1
            say("  (slower than 1 s: failure)")
    src, dst = hello_roundtrip(4096, blocks=4)
    ok = np.array_equal(src, dst)
    failures += not ok
    say(f"next launch in the same process: {'exact' if ok else 'MISMATCH'}")
    say(f"foundation: {'PASS' if failures == 0 else f'{failures} FAILURE(S)'}")
    say.save(args.out)
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    raise SystemExit(validate_main())
