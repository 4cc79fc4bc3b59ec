"""The smallest kernel that uses every later notebook's machinery: cuda_src/hello_bulk.cu.

Each CTA bulk-copies (`cp.async.bulk`) a buffer from global memory into shared memory, waits on an
mbarrier with a bounded wait, and writes the buffer back. Notebook 00 runs it; `extra_tx` announces
more bytes than arrive, which turns into `MbarrierTimeout` instead of a hang.
"""
from __future__ import annotations

import numpy as np

from .runtime import backend_for, launch

__all__ = ["hello_roundtrip", "HELLO_BARRIERS"]

HELLO_BARRIERS = {0: "smem_full"}


def hello_roundtrip(nbytes: int = 4096, blocks: int = 2, extra_tx: int = 0):
    """Run cuda_src/hello_bulk.cu: each CTA bulk-copies `nbytes` into SMEM and writes them back."""
    if nbytes % 16 or not 16 <= nbytes <= 16384:
        raise ValueError(f"cp.async.bulk moves a multiple of 16 bytes; this kernel's buffer holds "
                         f"at most 16384, got {nbytes}")
    be = backend_for("tma")   # this GPU, or the PTX emulator where there is none
    cp = be.xp
    mod = be.load("hello_bulk.cu")
    pattern = (np.arange(blocks * nbytes // 4, dtype=np.uint64) * 2654435761) % (1 << 32)
    src = cp.asarray(pattern.astype(np.uint32))
    dst = cp.zeros(src.shape, np.uint32)
    launch(mod, "hello_bulk_roundtrip", (blocks,), (128,),
           (src, dst, np.uint32(nbytes), np.uint32(extra_tx)), barrier_names=HELLO_BARRIERS)
    return cp.asnumpy(src), cp.asnumpy(dst)
