"""The TMA store and the TMA reduce-add, modelled as the inverse of `bwlab.tma`'s load model.

PTX ISA 9.7.9.27.1.2 ``cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group`` and 9.7.9.27.1.3
``cp.reduce.async.bulk.tensor ... .add``; CuTe include/cute/atom/copy_traits_sm90_tma.hpp
(SM90_TMA_STORE, SM90_TMA_REDUCE_ADD). The SMEM byte at address a goes to the GMEM byte that a load
of the same box would have brought to a. Rows and planes of the box outside the tensor are skipped,
but dimension 0 is written in whole 16-byte granules: row padding that shares the granule of a
row's last element is overwritten (`STORE_GRANULE`). A swizzled box narrower than its swizzle span
is read from SMEM one span per row (`smem_box_pitch`). Both were seen on the H100; every rule the
model enforces is a row of `STORE_RULES`.
"""
from __future__ import annotations

import math

import numpy as np

from ..hw.dtypes import element_type
from ..hw.swizzle import SWIZZLES, row_bytes
from ..util import ceil_div, round_up
from .rules import (STORE_GRANULE, TF32_ROUNDS_ON_STORE, bits_to_float32, float32_to_bits, raw_dtype, refuse,
                    require_reduce_add_dtype)

__all__ = ["smem_box_pitch", "smem_box_footprint", "tma_store_writes", "tma_store_model",
           "tma_reduce_add_model", "store_geometry", "STORE_FATES", "store_fates"]


class _Geometry:
    """What the store model needs of a tensor map, computed from its fields."""

    def __init__(self, tmap):
        from ..tma.tensor_map import TensorMap
        if not isinstance(tmap, TensorMap):
            raise ValueError("tmap must be a bwlab.tma.TensorMap")
        self.tmap = tmap
        self.dtype = element_type(tmap.dtype)
        self.elem = self.dtype.bytes
        self.shape = tuple(int(d) for d in tmap.global_shape)
        self.rank = len(self.shape)
        self.byte_strides = (self.elem,) + tuple(int(s) for s in tmap.global_strides)
        # elements per box dimension (ceil(box / traversal stride), as the load counts them)
        self.box = tuple(ceil_div(int(b), int(e)) for b, e in zip(tmap.box_shape, tmap.element_strides))
        self.swizzle = tmap.swizzle
        self.extent = sum((d - 1) * s for d, s in zip(self.shape, self.byte_strides)) + self.elem

    @property
    def row_limit(self) -> int:
        """Elements of dimension 0 a store writes: the extent rounded up to STORE_GRANULE bytes."""
        return round_up(self.shape[0] * self.elem, STORE_GRANULE) // self.elem


def store_geometry(tmap) -> _Geometry:
    return _Geometry(tmap)


def smem_box_pitch(tmap) -> int:
    """Bytes between consecutive rows (dimension-0 lines) of the box in SMEM.

    Without a swizzle the box is packed: the pitch is the box's inner size. With a swizzle every
    row takes a whole swizzle row (32, 64 or 128 bytes) even when the box is narrower: seen on the
    H100, where a store of a narrow swizzled box read its rows at the swizzle span (12 of 12 such
    cases matched byte for byte, and the ones whose padded rows ran past the CTA's shared memory
    faulted with an illegal address; docs/results/store_validate_h100.txt).
    """
    g = _Geometry(tmap)
    inner = g.box[0] * g.elem
    span = 0 if g.swizzle == "none" else row_bytes(g.swizzle)
    return span if span and inner < span else inner


def smem_box_footprint(tmap) -> int:
    """SMEM bytes a TMA store reads for one box: rows x `smem_box_pitch`."""
    return math.prod(_Geometry(tmap).box[1:]) * smem_box_pitch(tmap)


def _check_coords(g: _Geometry, coords) -> tuple:
    coords = tuple(int(c) for c in coords)
    if len(coords) != g.rank:
        raise ValueError(f"a rank-{g.rank} store takes {g.rank} coordinates, got {coords}")
    if any(c < 0 for c in coords):
        refuse("box-start", f"coordinates {coords}: a TMA store's box must start at non-negative "
                            "coordinates; only its far side may hang over the tensor's edge")
    if any(c >= (1 << 31) for c in coords):
        raise ValueError(f"coordinates {coords} must be signed 32-bit integers")
    if (coords[0] * g.elem) % 16:
        refuse("box-start-16B", f"coordinate 0 = {coords[0]} puts the box start {coords[0] * g.elem} "
                                "bytes into a row: a TMA store's box must start on a 16-byte boundary "
                                "in dimension 0")
    return coords


def store_targets(tmap, coords, smem_address: int):
    """For every byte of the box: its SMEM address (swizzled), its GMEM byte offset, in bounds?

    The same element order and address arithmetic as bwlab.tma's load, read backwards: box element
    (j0, j1, ...) sits unswizzled at smem_address + j0 * elem + (row index) * pitch and belongs to
    global element coords + j. In bounds means: below the tensor's extent in every dimension, with
    dimension 0's extent rounded up to STORE_GRANULE bytes.
    """
    from ..tma.tensor_map import SMEM_ALIGNMENT
    g = _Geometry(tmap)
    if tmap.interleave != "none":
        refuse("store-model-scope", "the store model covers interleave='none' (as the load model does)")
    if any(int(e) != 1 for e in tmap.element_strides):
        refuse("store-model-scope", f"the store model covers element_strides of 1 only; got "
                                    f"{tmap.element_strides} (traversal strides on stores are not "
                                    "validated on hardware here)")
    coords = _check_coords(g, coords)
    smem_address = int(smem_address)
    if smem_address < 0 or smem_address % SMEM_ALIGNMENT:
        refuse("smem-alignment", f"the SMEM source 0x{smem_address:x} must be {SMEM_ALIGNMENT}-byte aligned")
    elem, n = g.elem, g.box
    j = np.indices(n[::-1], dtype=np.int64).reshape(g.rank, -1)[::-1]
    gi = np.asarray(coords, dtype=np.int64)[:, None] + j
    limit = np.asarray(g.shape, dtype=np.int64).copy()
    limit[0] = g.row_limit
    inb = np.all(gi < limit[:, None], axis=0)
    goff = (gi * np.asarray(g.byte_strides, dtype=np.int64)[:, None]).sum(axis=0)
    gbyte = (goff[:, None] + np.arange(elem)).reshape(-1)
    inb_byte = np.repeat(inb, elem)
    # Row r of the box (all dims above 0 flattened, dim 1 fastest) starts r * pitch bytes in.
    row = (np.ravel_multi_index(j[1:][::-1], n[1:][::-1]) if g.rank > 1
           else np.zeros(j.shape[1], np.int64))
    start = smem_address + row * smem_box_pitch(tmap) + j[0] * elem
    addr = SWIZZLES[g.swizzle]((start[:, None] + np.arange(elem)).reshape(-1))
    return addr, gbyte, inb_byte


def smem_window(smem, smem_address, window_start, addr):
    smem = np.ascontiguousarray(smem).reshape(-1).view(np.uint8)
    start = int(smem_address if window_start is None else window_start)
    rel = addr - start
    if rel.size and (rel.min() < 0 or rel.max() >= smem.size):
        raise ValueError(f"the store reads SMEM [{addr.min()}, {addr.max()}] but the bytes given cover "
                         f"[{start}, {start + smem.size}); with a swizzle the last 128-byte line of the "
                         "box is permuted as a whole: pass the whole line (window_start / longer smem)")
    return smem[rel]


def tma_store_writes(tmap, coords, smem, smem_address: int = 0, window_start=None):
    """(GMEM byte offsets, byte values) that one TMA store writes, in box order.

    `smem` holds the SMEM bytes starting at `window_start` (default: `smem_address`); the box is
    read from `smem_address` through the tensor map's swizzle, exactly where a TMA load of the same
    box would have put each byte; with a swizzle, rows narrower than the swizzle span sit one span
    apart (`smem_box_pitch`). Dimension 0 is written in whole 16-byte granules (STORE_GRANULE, seen
    on the H100): an element just past a row's last column that shares its granule is written (and
    listed here); anything past that granule, and every row or plane outside the tensor, is not.
    docs/results/store_validate_h100.txt checks all of it on every case.
    """
    addr, gbyte, inb = store_targets(tmap, coords, smem_address)
    vals = smem_window(smem, smem_address, window_start, addr)
    return gbyte[inb], vals[inb]


def _gmem_bytes_copy(gmem, tmap):
    g = np.array(gmem, copy=True)
    gb = np.ascontiguousarray(g).reshape(-1).view(np.uint8)
    extent = _Geometry(tmap).extent
    if gb.size < extent:
        raise ValueError(f"the tensor spans {extent} bytes; the array has {gb.size}")
    return g, gb


def tma_store_model(gmem, tmap, coords, smem, smem_address: int = 0, window_start=None,
                    op: str = "store") -> np.ndarray:
    """GMEM after ``cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group [tmap, coords], [smem]``
    (``op='reduce_add'``: after ``cp.reduce.async.bulk.tensor ... .add``, `tma_reduce_add_model`).

    The inverse of `bwlab.tma.tma_load_model`: the SMEM byte at address a goes to the GMEM byte a
    load of the same box would have brought to a. Outside the tensor, only the padding that shares
    the 16-byte granule of a row's last element is written (STORE_GRANULE); rows and planes past the
    edge are not. The box must start at non-negative coordinates, 16-byte aligned in dimension 0.
    `gmem` is the whole global buffer (any dtype/shape, tensor base at byte 0); a new array of the
    same dtype and shape is returned. tf32 maps are refused until hardware says whether the store
    rounds (TF32_ROUNDS_ON_STORE).
    """
    op = store_op(op)
    if op == "reduce_add":
        return tma_reduce_add_model(gmem, tmap, coords, smem, smem_address, window_start)
    if element_type(tmap.dtype).name == "tf32" and TF32_ROUNDS_ON_STORE is None:
        refuse("tf32-store", "tf32 stores: whether the TMA store rounds to tf32 is not established on "
                             "hardware here; use uint32 or float32 maps for the raw bits")
    g, gb = _gmem_bytes_copy(gmem, tmap)
    off, vals = tma_store_writes(tmap, coords, smem, smem_address, window_start)
    gb[off] = vals
    return g


def store_op(op: str) -> str:
    """'store' or 'reduce_add' ('add' is taken for the latter)."""
    if op in ("add", "reduce_add"):
        return "reduce_add"
    if op != "store":
        raise ValueError(f"op must be 'store' or 'reduce_add', got {op!r}")
    return op


def add_elements(old_bits: np.ndarray, new_bits: np.ndarray, dtype) -> np.ndarray:
    """Element-wise old + new on raw bits, as the .add reduction of that type computes it."""
    t = element_type(dtype)
    if not t.is_float:
        return old_bits + new_bits  # two's complement wrap-around, the same bits for s32 and u32
    if t.name == "f32":
        # a NaN sum is the canonical NaN 0x7FFFFFFF, whatever the inputs' payloads (seen on the H100:
        # docs/results/emu_validate_h100.txt, a random reduce-add case that added onto a NaN)
        with np.errstate(over="ignore", invalid="ignore"):
            s = old_bits.view(np.float32) + new_bits.view(np.float32)
            return np.where(np.isnan(s), np.uint32(0x7FFFFFFF), s.view(np.uint32)).astype(np.uint32)
    # f16 / bf16: the exact sum rounded once to the format. An fp32 sum of two halves (or
    # bfloat16s) rounded to nearest even, then rounded again to the narrow format, is still
    # correctly rounded, because fp32 carries at least 2p+2 bits for p = 11 (and 8).
    a = bits_to_float32(old_bits, t)
    b = bits_to_float32(new_bits, t)
    with np.errstate(over="ignore", invalid="ignore"):
        return float32_to_bits((a + b).astype(np.float32), t)


def tma_reduce_add_model(gmem, tmap, coords, smem, smem_address: int = 0, window_start=None):
    """GMEM after ``cp.reduce.async.bulk.tensor.Nd.global.shared::cta.add.tile.bulk_group``: every
    in-bounds element of the box becomes GMEM + SMEM (PTX ISA 9.7.9.27.1.3: .add takes .u32, .s32,
    .u64, .f32, .f16, .bf16; floats round to nearest even, integers wrap). It covers what the store
    covers: padding that shares the 16-byte granule of a row's last element is added to as well."""
    require_reduce_add_dtype(tmap.dtype)
    g, gb = _gmem_bytes_copy(gmem, tmap)
    off, vals = tma_store_writes(tmap, coords, smem, smem_address, window_start)
    eb = element_type(tmap.dtype).bytes
    raw = raw_dtype(tmap.dtype)
    elem_off = off.reshape(-1, eb)[:, 0]
    old = gb[elem_off[:, None] + np.arange(eb)].copy().view(raw).reshape(-1)
    new = vals.reshape(-1, eb).copy().view(raw).reshape(-1)
    out = add_elements(old, new, tmap.dtype).astype(raw).view(np.uint8).reshape(-1, eb)
    gb[elem_off[:, None] + np.arange(eb)] = out
    return g


def granule_of(tmap, byte_offset: int) -> dict:
    """Where GMEM byte `byte_offset` (from the tensor's base) sits: its coordinates (the element
    whose bytes would hold it when the strides are followed), whether that element is inside the
    tensor, and which 16-byte store granule of its row it falls in.

    Keys: 'coords' (innermost first) or None past the tensor, 'inside', 'granule',
    'granule_bytes' (first, last byte of that granule in the row), 'written_by_granule' (outside
    the tensor, but sharing a granule with its last column: a store writes it anyway).
    """
    g = _Geometry(tmap)
    off = int(byte_offset)
    if off < 0 or off >= g.extent:
        return {"coords": None, "inside": False, "granule": None, "granule_bytes": None,
                "written_by_granule": False}
    rest, coords = off, [0] * g.rank
    for d in range(g.rank - 1, 0, -1):
        coords[d], rest = divmod(rest, g.byte_strides[d])
    coords[0] = rest // g.elem
    inner = coords[0] * g.elem
    granule = inner // STORE_GRANULE
    upper_ok = all(coords[d] < g.shape[d] for d in range(1, g.rank))
    inside = upper_ok and coords[0] < g.shape[0]
    return {"coords": tuple(coords), "inside": inside, "granule": granule,
            "granule_bytes": (granule * STORE_GRANULE, granule * STORE_GRANULE + STORE_GRANULE - 1),
            "written_by_granule": upper_ok and not inside and coords[0] < g.row_limit}


STORE_FATES = ("written, inside the tensor",
               "written into the row padding: shares the row's last 16-byte granule",
               "dropped: past the last column's granule",
               "dropped: past the tensor's last row (or plane)")


def store_fates(tmap, coords, smem_address: int = 0):
    """What one TMA store does with each element of its box, in box order (dimension 0 fastest):
    (fate, gmem element offset), fate indexing STORE_FATES, computed from the store's own targets
    (`tma_store_writes`' address map); the offset is meaningful where the element is written."""
    g = _Geometry(tmap)
    _, gbyte, inb = store_targets(tmap, coords, smem_address)
    written = inb[::g.elem].reshape(g.box[::-1])
    x = np.asarray(coords[0]) + np.arange(g.box[0])           # broadcasts over the box's last axis
    past_row = np.zeros(written.shape, bool)
    for d in range(1, g.rank):                                # a dropped row: some coordinate > 0 is past
        idx = np.arange(g.box[d]) + coords[d]
        past_row |= (idx >= g.shape[d]).reshape((-1,) + (1,) * d)
    fate = np.where(written, np.where(x < g.shape[0], 0, 1), np.where(past_row, 3, 2))
    return fate, (gbyte[::g.elem] // g.elem).reshape(g.box[::-1])
