"""The smallest kernel that uses every later notebook's machinery: cuda_src/hello_bulk.cu.

Each CTA bulk-copies (`cp.async.bulk`) a buffer from global memory into shared memory, waits on an
mbarrier with a bounded wait, and writes the buffer back. Notebook 00 runs it; `extra_tx` announces
more bytes than arrive, which turns into `MbarrierTimeout` instead of a hang. `HelloCopy` is the same
round trip as a `bwlab.case.Case` (model: the destination equals the source), so `HelloCopy().results()`
shows it run here (this GPU, or the PTX emulator) and as an H100 recorded it (`RECORDED`).
"""
from __future__ import annotations

import numpy as np

from .case import Case, CheckResult, Result, compare
from .runtime import backend_for, launch

__all__ = ["hello_roundtrip", "hello_source", "HELLO_BARRIERS", "HelloCopy", "RECORDED"]

HELLO_BARRIERS = {0: "smem_full"}


def hello_roundtrip(nbytes: int = 4096, blocks: int = 2, extra_tx: int = 0, kernel=None):
    """Run cuda_src/hello_bulk.cu: each CTA bulk-copies `nbytes` into SMEM and writes them back.
    `kernel`: a `bwlab.lab.TeachingKernel` of the file (None: the %%cuda edit if one is kept, else the file);
    an edit runs in a worker process on a GPU."""
    if nbytes % 16 or not 16 <= nbytes <= 16384:
        raise ValueError(f"cp.async.bulk moves a multiple of 16 bytes; this kernel's buffer holds "
                         f"at most 16384, got {nbytes}")
    be = backend_for("tma")   # this GPU, or the PTX emulator where there is none
    cp = be.xp
    from .lab import isolate, kept, run_edited
    kernel = kernel if kernel is not None else kept("hello_bulk.cu")
    if kernel is not None and not be.emulated and isolate(kernel):
        return run_edited(hello_roundtrip, nbytes, blocks, extra_tx, kernel=kernel)
    mod = be.load(kernel if kernel is not None else "hello_bulk.cu")
    src = cp.asarray(hello_source(nbytes, blocks))
    dst = cp.zeros(src.shape, np.uint32)
    launch(mod, "hello_bulk_roundtrip", (blocks,), (128,),
           (src, dst, np.uint32(nbytes), np.uint32(extra_tx)), barrier_names=HELLO_BARRIERS)
    return cp.asnumpy(src), cp.asnumpy(dst)


def hello_source(nbytes: int, blocks: int) -> np.ndarray:
    """The words hello_roundtrip copies (uint32, a pattern no two neighbours share)."""
    return ((np.arange(blocks * nbytes // 4, dtype=np.uint64) * 2654435761) % (1 << 32)).astype(np.uint32)


class HelloCopy(Case):
    """`blocks` CTAs each bulk-copy `nbytes` into SMEM and back; `extra_tx` bytes too many announced."""

    stage = "bulk copy"
    device_stage = "tma"
    teaching_file = "hello_bulk.cu"

    def __init__(self, nbytes: int = 4096, blocks: int = 2, extra_tx: int = 0):
        self.nbytes, self.blocks, self.extra_tx = int(nbytes), int(blocks), int(extra_tx)
        self.what = f"{self.blocks} CTAs x {self.nbytes} B"

    def __repr__(self):
        return f"HelloCopy({self.nbytes}, blocks={self.blocks}, extra_tx={self.extra_tx})"

    def identity(self):
        return ("hello", self.nbytes, self.blocks, self.extra_tx)

    def model(self) -> np.ndarray:
        return hello_source(self.nbytes, self.blocks)

    def run(self) -> np.ndarray:
        return hello_roundtrip(self.nbytes, self.blocks, self.extra_tx)[1]

    def compare(self, expected, got, source: str = "") -> CheckResult:
        return compare(expected, got, stage=self.stage, what=self.what, unit="word", source=source)

    def show(self, ax=None):
        """The data path the copy takes (GMEM -> SMEM -> GMEM)."""
        from .datapath import plot_data_path
        return plot_data_path(ax=ax)


def _timeout(rec) -> Result:
    p = rec.params
    return Result(None, rec.label, False, rec, error=f"MbarrierTimeout: {p['message']}", seconds=p["seconds"])


def _recorded():
    from .results import Recorded
    return (Recorded("foundation_hello_roundtrip", "dst", lambda: HelloCopy(4096, blocks=4)),
            Recorded("foundation_wrong_expect_tx", "message", lambda: HelloCopy(4096, blocks=2, extra_tx=16),
                     value=_timeout),
            Recorded("foundation_wrong_expect_tx", "dst_after", lambda: HelloCopy(4096, blocks=2)))


RECORDED = _recorded()
