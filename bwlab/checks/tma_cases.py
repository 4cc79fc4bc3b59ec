"""The random TMA loads of the validation and the helpers its diagnosis shares with it: building and
describing a case, the layout hypotheses a failed case's SMEM window is checked against, and running a
command of this package in a child process (a GPU fault poisons the CUDA context).

`bwlab.checks.tma` (the validation) and `bwlab.checks.tma_diagnose` (finding what makes a case fault)
both import this module; neither imports the other's helpers.
"""
from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np

from ..hw.dtypes import element_type
from ..hw.swizzle import MODES as SWIZZLE_MODES
from ..hw.swizzle import SWIZZLES
from ..tma.model import tma_load_writes
from ..tma.runner import LoadCase, background
from ..tma.tensor_map import L2_ENUM, TMAP_DTYPES, TensorMap, swizzle_width
from ..util import ceil_div
from .common import padded_strides

__all__ = ["MAX_CASE_BOX_BYTES", "random_case", "random_cases", "describe_case", "is_oob", "variant_window",
           "diagnose_window", "child_json"]

MAX_CASE_BOX_BYTES = 32 * 1024


def random_case(rng: np.random.Generator, dtype: str, rank: int, swizzle: str) -> LoadCase:
    """A random valid TMA load of the given dtype, rank and swizzle.

    Odd global sizes with padded rows, boxes that hang off either edge (now and then entirely
    outside), element strides, NaN fill, every SMEM offset mod 1024 (multiples of 128), base
    addresses at every multiple of 16 mod 256, the four prefetch variants, and random bytes (NaN
    and denormal bit patterns included) as data. Swizzled rows are one span wide or (half the
    time) narrower; unswizzled ones 16..512 bytes.
    """
    elem = element_type(dtype).bytes
    span = swizzle_width(swizzle)
    if span:
        narrow = rng.random() < 0.5
        inner_bytes = 16 * int(rng.integers(1, span // 16)) if narrow else span
    else:
        inner_bytes = 16 * int(rng.integers(1, min(256 * elem, 512) // 16 + 1))
    pitch = span or inner_bytes  # SMEM bytes per box row (smem_pitch)
    box = [inner_bytes // elem]
    budget = int(np.exp(rng.uniform(np.log(pitch), np.log(MAX_CASE_BOX_BYTES))))
    es = [1]
    for _ in range(1, rank):
        e = int(rng.integers(1, 9)) if rng.random() < 0.3 else 1
        room = max(1, budget // (pitch * math.prod(ceil_div(b, s) for b, s in zip(box[1:], es[1:]))))
        n = int(rng.integers(1, min(room, 256) + 1)) if rng.random() < 0.9 else 1
        box.append(min(256, n * e - int(rng.integers(0, e))))  # ceil(box/e) == n, box not always a multiple
        es.append(e)
    shape = []
    for i in range(rank):
        reach = box[i] if i == 0 else box[i]
        hi = max(2, min(2 * reach + 7, 600 if i == 0 else 300))
        shape.append(int(rng.integers(1, hi + 1)))
    # keep the tensor under ~2 MB
    while math.prod(shape) * elem > (2 << 20):
        k = int(np.argmax(shape))
        shape[k] = max(1, shape[k] // 2)
    strides = padded_strides(rng, shape, elem)
    oob = "nan" if element_type(dtype).is_float and rng.random() < 0.3 else "zero"
    tmap = TensorMap(dtype, shape, box, global_strides=strides, element_strides=es, swizzle=swizzle,
                     l2_promotion=str(rng.choice(list(L2_ENUM))), oob_fill=oob)
    coords = []
    inside = rng.random() < 0.4  # the whole box in bounds (where the tensor is large enough)
    for i in range(rank):
        reach = (tmap.box_counts[i] - 1) * es[i] + 1
        r = 0.0 if inside else rng.random()
        if r < 0.3:  # inside
            c = int(rng.integers(0, max(1, shape[i] - reach + 1)))
        elif r < 0.9:  # straddling an edge
            c = int(rng.integers(-reach + 1, shape[i]))
        else:  # possibly entirely outside
            c = int(rng.integers(-reach - 8, shape[i] + 8))
        if i == 0:
            c = (c // (16 // elem)) * (16 // elem)  # the box must start on a 16-byte boundary
        coords.append(c)
    gmem = rng.integers(0, 256, size=tmap.global_extent_bytes, dtype=np.uint8)
    return LoadCase(tmap, gmem, tuple(coords), smem_offset=128 * int(rng.integers(0, 8)) + 1024 * int(rng.integers(0, 2)),
                    gmem_offset=16 * int(rng.integers(0, 16)),
                    prefetch=int(rng.choice(4, p=[0.55, 0.15, 0.15, 0.15])))


def random_cases(n: int, seed: int = 0):
    """`n` random cases covering every (dtype, rank, swizzle) combination in turn."""
    rng = np.random.default_rng(seed)
    combos = [(d, r, s) for d in TMAP_DTYPES for r in range(1, 6) for s in SWIZZLE_MODES]
    order = rng.permutation(len(combos))
    return [random_case(rng, *combos[order[i % len(combos)]]) for i in range(n)]


def describe_case(c: LoadCase) -> str:
    t = c.tmap
    pitch = f" pitch={t.smem_pitch}" if t.smem_pitch != t.inner_box_bytes else ""
    return (f"{t.dtype} shape={t.global_shape} strides={t.global_strides} box={t.box_shape} "
            f"es={t.element_strides} swz={t.swizzle}{pitch} oob={t.oob_fill} l2={t.l2_promotion} "
            f"coords={tuple(c.coords)} smem+{c.smem_offset} gmem+{c.gmem_offset} "
            f"prefetch={int(c.prefetch)} tx={c.tx}")


def is_oob(c: LoadCase) -> bool:
    t = c.tmap
    return any(co < 0 or co + (n - 1) * e >= d for co, n, e, d in
               zip(c.coords, t.box_counts, t.element_strides, t.global_shape))


def variant_window(c: LoadCase, pitch: int, gap_fill=None) -> np.ndarray:
    """The window under another hypothesis about the SMEM layout, for diagnosis: rows `pitch`
    bytes apart and, if `gap_fill` is a byte value, the bytes between rows written with it."""
    bg = np.zeros(c.window_bytes, np.uint8) if c.zero_background else background(c.window_bytes)
    addr, vals = tma_load_writes(c.gmem, c.tmap, c.coords, c.smem_offset, pitch=pitch)
    if gap_fill is not None:
        rows = math.prod(c.tmap.box_counts[1:])
        every = SWIZZLES[c.tmap.swizzle](c.smem_offset + np.arange(rows * pitch, dtype=np.int64))
        every = every[every < bg.size]
        bg[every] = gap_fill
    if addr.size and addr.max() >= bg.size:
        return np.zeros(0, np.uint8)  # this hypothesis writes past the window: it cannot match
    bg[addr] = vals
    return bg


def diagnose_window(c: LoadCase, w: np.ndarray) -> str:
    """Which layout hypothesis the GPU's window does match, if any (for failed cases)."""
    t = c.tmap
    span = swizzle_width(t.swizzle)
    hyp = {"packed rows": (t.inner_box_bytes, None)}
    if span and t.inner_box_bytes < span:
        hyp.update({"rows one span apart, gaps untouched": (span, None),
                    "rows one span apart, gaps zeroed": (span, 0)})
    hits = [name for name, (pitch, fill) in hyp.items() if np.array_equal(variant_window(c, pitch, fill), w)]
    return "matches: " + (", ".join(hits) if hits else "none of " + "; ".join(hyp))


def child_json(cmd: list, timeout: float, module: str = "bwlab.checks.tma") -> dict:
    """Run `python -m MODULE CMD...` in a child; its last JSON line, or why there was none."""
    try:
        p = subprocess.run([sys.executable, "-m", module] + cmd, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"status": "crash", "error": f"child timed out after {timeout:.0f} s"}
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = [ln for ln in p.stderr.strip().splitlines() if ln.strip()]
    return {"status": "crash", "error": (tail or [f"exit {p.returncode}, no output"])[-1][:200]}
