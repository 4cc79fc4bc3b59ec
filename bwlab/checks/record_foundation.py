"""Recordings for notebook 00: the bulk-copy round trip of cuda_src/hello_bulk.cu and what a wrong
expect_tx does (an MbarrierTimeout, then a working launch)."""
from __future__ import annotations

import time

import numpy as np

from ..case import compare
from ..hello import hello_roundtrip, hello_source
from ..results import save_recording
from ..runtime import MbarrierTimeout

__all__ = ["record", "replay", "hello_source"]


def record(out_dir, meta) -> list:
    paths = []
    src, dst = hello_roundtrip(4096, blocks=4)
    paths.append(save_recording(out_dir, "foundation_hello_roundtrip", {"dst": dst}, stage="foundation",
                                params={"nbytes": 4096, "blocks": 4}, **meta))
    t0 = time.perf_counter()
    try:
        hello_roundtrip(4096, blocks=2, extra_tx=16)
        message, seconds = "no exception", time.perf_counter() - t0
    except MbarrierTimeout as e:
        message, seconds = str(e), time.perf_counter() - t0
    _, after = hello_roundtrip(4096, blocks=2)
    paths.append(save_recording(out_dir, "foundation_wrong_expect_tx", {"dst_after": after},
                                stage="foundation", params={"nbytes": 4096, "blocks": 2, "extra_tx": 16,
                                                            "message": message,
                                                            "seconds": round(seconds, 3)}, **meta))
    return paths


def replay(rec):
    """A bulk copy's model is the identity: the destination equals the source pattern."""
    p = rec.params
    key = "dst" if "dst" in rec.arrays else "dst_after"
    return compare(hello_source(p["nbytes"], p["blocks"]), rec[key], stage="foundation",
                   what="bulk round trip", unit="word", source=rec.label)
