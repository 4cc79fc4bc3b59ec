"""Foundation checks on a real GPU: the compile layer, a bulk-copy round trip, and the promise
that a kernel never hangs (a deliberately wrong expect_tx comes back as MbarrierTimeout quickly,
and the next launch in the same process works).

    python -m bwlab.validate foundation [--out FILE]
"""
from __future__ import annotations

import time

import numpy as np

from .. import device
from ..hello import hello_roundtrip
from ..runtime import MbarrierTimeout
from .common import Command


def validate_main(argv=None) -> int:
    cmd = Command("validate foundation", "Bulk-copy round trips and the bounded-wait timeout on the GPU",
                  stage="tma")
    args, say = cmd.start(argv)
    info = device.gpu_info()
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
    return cmd.finish(failures, "foundation")


if __name__ == "__main__":
    raise SystemExit(validate_main())
