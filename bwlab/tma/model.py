"""The NumPy model of one TMA load: which bytes land at which SMEM address.

PTX ISA 5.5 "Tensors": the bounding box, the traversal stride, out-of-bounds elements, and the
swizzle as a function of the SMEM address (5.5.7; CuTe Swizzle<B,4,3>, bwlab.hw.swizzle). The
transaction count the mbarrier must expect is `TensorMap.tx_bytes`; the handshake itself is
bwlab.hw.mbarrier's model (`handshake_events`).

Only NumPy and bwlab.hw here: no GPU.
"""
from __future__ import annotations

import numpy as np

from ..hw.banks import wavefronts
from ..hw.dtypes import element_type, tf32_round
from ..hw.mbarrier import Mbarrier
from ..hw.swizzle import SWIZZLES
from ..util import ceil_div, round_up
from .tensor_map import SMEM_ALIGNMENT, TensorMap, TensorMapError, swizzle_width

__all__ = ["tma_load_model", "tma_load_writes", "tma_load_plan", "tma_plan_values", "tma_load_window", "oob_fill_bits",
           "require_modelled",
           "require_coords", "box_targets", "handshake_events", "cta_tiles", "smem_chunks",
           "column_read_addresses", "bank_conflict_table", "TF32_ROUNDS_ON_LOAD"]

# The OOB-NaN written by CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA, as raw bits: read off
# an H100 (docs/results/tma_findings_h100.txt), the 16-bit pattern 0x7FF7 repeated to fill the
# element — a NaN in every float format (f16, bf16, f32, f64).
_OOB_NAN_BITS = {"float16": 0x7FF7, "bfloat16": 0x7FF7, "float32": 0x7FF77FF7, "tf32": 0x7FF77FF7,
                 "float64": 0x7FF77FF77FF77FF7}
# A TFLOAT32 load rounds each 32-bit value to tf32 (10 mantissa bits, nearest even, denormals
# kept, infinities kept) and turns every NaN into 0x7FFFE000 (bwlab.hw.dtypes.tf32_round); seen on
# the H100.
TF32_ROUNDS_ON_LOAD = True


def oob_fill_bits(tmap: TensorMap) -> int:
    """Raw bits of one out-of-bounds element: 0, or the OOB-NaN for oob_fill='nan'."""
    return _OOB_NAN_BITS[tmap.dtype] if tmap.oob_fill == "nan" else 0


def require_modelled(tmap: TensorMap) -> None:
    """Raise unless bwlab's model covers this tensor map: interleaved layouts are validated by
    TensorMap and the driver, but their SMEM image is not modelled."""
    if tmap.interleave != "none":
        raise NotImplementedError("the model covers interleave='none'; interleaved layouts are validated "
                                  "by TensorMap and the driver but their SMEM image is not modelled")


def require_coords(tmap: TensorMap, coords) -> tuple:
    """The box's starting coordinates as ints, checked: one per dimension, signed 32-bit, and the
    box starting on a 16-byte boundary of its row."""
    coords = tuple(int(c) for c in coords)
    if len(coords) != tmap.rank:
        raise TensorMapError("coords", f"a rank-{tmap.rank} load takes {tmap.rank} coordinates, got {coords}")
    for i, c in enumerate(coords):
        if not -(1 << 31) <= c < (1 << 31):
            raise TensorMapError("coords", f"coordinate {i} = {c} is not a signed 32-bit integer")
    if tmap.interleave == "none" and (coords[0] * tmap.elem_bytes) % 16:
        # PTX ISA 5.5.3.1: the bounding box's address must be 16-byte aligned. The H100 enforces it:
        # a box starting mid-way through a 16-byte chunk faults with an illegal instruction.
        raise TensorMapError("coords-inner-alignment",
                             f"coordinate 0 = {coords[0]} starts the box at byte {coords[0] * tmap.elem_bytes} of "
                             f"its row; it must be a multiple of 16 bytes ({16 // tmap.elem_bytes} elements of "
                             f"{tmap.dtype})")
    return coords


def _gmem_bytes(gmem, tmap: TensorMap) -> np.ndarray:
    gb = np.ascontiguousarray(gmem).reshape(-1).view(np.uint8)
    if gb.size < tmap.global_extent_bytes:
        raise TensorMapError("gmem-extent", f"global_shape {tmap.global_shape} with byte strides "
                                            f"{tmap.byte_strides} spans {tmap.global_extent_bytes} bytes; "
                                            f"the array given has {gb.size}")
    return gb


def box_targets(tmap: TensorMap, coords, smem_address: int = 0, pitch: int | None = None):
    """For every box element, innermost first: its box index j (rank x elements), the global byte
    offset of its first byte, in bounds?, and the unswizzled SMEM byte address of its first byte
    with rows `pitch` bytes apart (default `tmap.smem_pitch`)."""
    n = tmap.box_counts
    pitch = tmap.smem_pitch if pitch is None else pitch
    # j[i] for every box element, element 0 first, dim 0 fastest.
    j = np.indices(n[::-1], dtype=np.int64).reshape(tmap.rank, -1)[::-1]
    g = np.asarray(coords, dtype=np.int64)[:, None] + j * np.asarray(tmap.element_strides, dtype=np.int64)[:, None]
    dims = np.asarray(tmap.global_shape, dtype=np.int64)[:, None]
    inb = np.all((g >= 0) & (g < dims), axis=0)
    goff = (np.where(inb, g, 0) * np.asarray(tmap.byte_strides, dtype=np.int64)[:, None]).sum(axis=0)
    row = np.arange(j.shape[1], dtype=np.int64) // n[0]  # rows of all dims above 0, dim 1 fastest
    start = int(smem_address) + row * pitch + j[0] * tmap.elem_bytes
    return j, goff, inb, start


def tma_load_writes(gmem, tmap: TensorMap, coords, smem_address: int = 0, *, pitch: int | None = None):
    """Every byte one TMA load writes: (SMEM byte addresses, byte values), in box order.

    Element (j0, j1, ...) of the box (j_i < ceil(box_i / elementStride_i)) is global element
    c_i + j_i * elementStride_i; it is in bounds when 0 <= that < global_shape[i] in every
    dimension, otherwise its bytes are the fill. Unswizzled, it sits at byte
    smem_address + r * pitch + elem * j0, where r = j1 + n1 * (j2 + n2 * ...) is its row and the
    pitch is the row's bytes (or a whole swizzle span for narrower swizzled rows: `smem_pitch`);
    the swizzle then permutes 16-byte chunks by the address bits (CuTe Swizzle<B,4,3> on the
    absolute SMEM address). `pitch` overrides the row pitch (to test another layout hypothesis).
    In two steps: `tma_load_plan` (where each byte comes from and goes, from the map and the
    coordinates alone) and `tma_plan_values` (the bytes, read from global memory).
    """
    plan = tma_load_plan(tmap, coords, smem_address, pitch=pitch)
    return plan[0], tma_plan_values(gmem, tmap, plan)


def tma_load_plan(tmap: TensorMap, coords, smem_address: int = 0, *, pitch: int | None = None):
    """(SMEM byte addresses, global byte offset of each byte (elements x element bytes), in-bounds per element,
    fill bytes) of one TMA load: everything `tma_load_writes` needs but the global memory (the emulator's TMA
    unit computes it once per box and reads the bytes when the load lands)."""
    require_modelled(tmap)
    coords = require_coords(tmap, coords)
    smem_address = int(smem_address)
    if smem_address < 0 or smem_address % SMEM_ALIGNMENT:
        raise TensorMapError("smem-alignment", f"the SMEM destination 0x{smem_address:x} must be "
                                               f"{SMEM_ALIGNMENT}-byte aligned")
    elem = tmap.elem_bytes
    _, goff, inb, start = box_targets(tmap, coords, smem_address, pitch)
    gidx = goff[:, None] + np.arange(elem)  # (elements, elem) byte offsets
    fill = np.frombuffer(int(oob_fill_bits(tmap)).to_bytes(elem, "little"), dtype=np.uint8)
    addr = (start[:, None] + np.arange(elem)).reshape(-1)
    return SWIZZLES[tmap.swizzle](addr), gidx, inb, fill


def tma_plan_values(gmem, tmap: TensorMap, plan) -> np.ndarray:
    """The bytes a load with `plan` (from `tma_load_plan`) writes, in box order, read from `gmem` now."""
    _, gidx, inb, fill = plan
    gb = _gmem_bytes(gmem, tmap)
    vals = gb[gidx]  # (elements, elem) bytes
    if tmap.dtype == "tf32" and TF32_ROUNDS_ON_LOAD:
        vals = tf32_round(vals.copy().view("<u4").reshape(-1)).view(np.uint8).reshape(-1, tmap.elem_bytes)
    return np.where(inb[:, None], vals, fill[None, :]).reshape(-1)


def tma_load_window(gmem, tmap: TensorMap, coords, smem_address: int, window_start: int,
                    window_len: int, background=None) -> np.ndarray:
    """SMEM bytes [window_start, window_start + window_len) after the load, on top of `background`
    (zeros by default). The hardware validation compares such windows, margins included, so a
    byte written outside the box is caught as well as a wrong one inside it."""
    addr, vals = tma_load_writes(gmem, tmap, coords, smem_address)
    out = np.zeros(window_len, np.uint8) if background is None else np.array(background, np.uint8).copy()
    rel = addr - int(window_start)
    if rel.size and (rel.min() < 0 or rel.max() >= window_len):
        raise ValueError(f"the load writes SMEM [{addr.min()}, {addr.max()}], outside the window "
                         f"[{window_start}, {window_start + window_len})")
    out[rel] = vals
    return out


def tma_load_model(gmem, tmap: TensorMap, coords, smem_address: int = 0) -> np.ndarray:
    """The bytes of the box as they land in SMEM starting at `smem_address`: `smem_footprint`
    bytes (= box_bytes, except for a swizzled box narrower than its span, whose rows sit one span
    apart: the bytes between them are not written by the TMA and are 0 here).

    `gmem` is the whole global tensor (any dtype and shape: its raw bytes are what the tensor map
    addresses, base at byte 0). The swizzle is applied as a function of the absolute SMEM address,
    so the same box looks different at 0x0000 and at 0x0080 unless the swizzle is 'none'.
    `run_tma_load` takes the same arguments and returns the GPU's bytes.
    """
    addr, vals = tma_load_writes(gmem, tmap, coords, smem_address)
    rel = addr - int(smem_address)
    size = tmap.smem_footprint
    # Each row starts at a multiple of its pitch from a 128-byte aligned destination and the
    # swizzle permutes 16-byte chunks inside one span, so the image stays inside the footprint;
    # this guards that invariant.
    if rel.size and (rel.min() < 0 or rel.max() >= size):
        raise TensorMapError(
            "swizzle-image",
            f"with swizzle {tmap.swizzle} at SMEM 0x{int(smem_address):x}, bytes of this {size}-byte box land "
            f"outside [{int(smem_address)}, {int(smem_address) + size}); use tma_load_window to see them")
    out = np.zeros(size, np.uint8)
    out[rel] = vals
    return out


# ---- the handshake ----------------------------------------------------------------------------
def handshake_events(box_bytes: int, pieces: int = 4, extra_tx: int = 0):
    """Steps of one TMA load's handshake as (actor, action, pending, tx, phase, waiter sees),
    computed by bwlab.hw.mbarrier.Mbarrier.

    The TMA engine's complete_tx is drawn as `pieces` equal parts; how finely the hardware really
    reports bytes is not architectural, only the sum is. `extra_tx` > 0 announces more bytes than
    the box has, which is the classic hang: the phase never completes.
    """
    bar = Mbarrier(1)
    ev = []

    def note(actor, action):
        ev.append((actor, action, bar.pending, bar.tx, bar.phase, bar.try_wait_parity(0)))

    note("thread 0", "mbarrier.init(count=1)")
    note("all threads", "try_wait.parity(0)")
    bar.arrive_expect_tx(box_bytes + extra_tx)
    note("thread 0", f"arrive.expect_tx({box_bytes + extra_tx})")
    note("thread 0", "cp.async.bulk.tensor (issue)")
    step = box_bytes // pieces
    sizes = [step] * (pieces - 1) + [box_bytes - step * (pieces - 1)]
    for s in sizes:
        flipped = bar.complete_tx(s)
        note("TMA engine", f"complete_tx({s})" + ("  -> phase 0 complete" if flipped else ""))
    note("all threads", "try_wait.parity(0)")
    return ev


# ---- what the pictures draw, computed without matplotlib ----------------------------------------
def cta_tiles(tmap: TensorMap):
    """For a 2D tensor map: the CTA grid that covers the tensor with one box per CTA, as a list
    of (blockIdx.x, blockIdx.y, (c0, c1)) and the (rows, cols) owner index of every element."""
    if tmap.rank != 2:
        raise ValueError(f"cta_tiles draws 2D tensor maps; this one has rank {tmap.rank}")
    (w, h), (bw, bh) = tmap.global_shape, tmap.box_shape
    gx, gy = ceil_div(w, bw), ceil_div(h, bh)
    tiles = [(x, y, (x * bw, y * bh)) for y in range(gy) for x in range(gx)]
    owner = (np.arange(h)[:, None] // bh) * gx + (np.arange(w)[None, :] // bw)
    return tiles, owner, (gx, gy)


def smem_chunks(tmap: TensorMap, smem_address: int = 0):
    """Which 16-byte chunk of the box sits in each 16-byte SMEM chunk: arrays (box row, chunk in
    row), one entry per SMEM chunk from smem_address on, after the swizzle. -1 marks none."""
    require_modelled(tmap)
    inner, pitch = tmap.inner_box_bytes, tmap.smem_pitch
    chunk = np.arange(tmap.box_bytes // 16, dtype=np.int64)
    r, k = chunk // (inner // 16), chunk % (inner // 16)  # box row, 16-byte chunk inside the row
    dest = (SWIZZLES[tmap.swizzle](smem_address + r * pitch + k * 16) - smem_address) // 16
    row = np.full(round_up(int(dest.max() + 1), 8), -1)
    col = row.copy()
    row[dest] = r
    col[dest] = k
    return row, col


def column_read_addresses(tmap: TensorMap, column_byte: int, access_bytes: int, smem_address: int = 0):
    """SMEM byte addresses at which thread t of a warp finds `access_bytes` at byte `column_byte` of
    box row t (rows 0..31), given where the TMA put them (the swizzle applied)."""
    rows = np.arange(32, dtype=np.int64)
    lin = rows * tmap.smem_pitch + column_byte
    return SWIZZLES[tmap.swizzle](smem_address + lin)


def bank_conflict_table(dtype: str = "float16"):
    """Wavefronts (bwlab.hw.banks) of a warp reading one column (4- and 16-byte accesses) of 32 box
    rows, for rows as wide as each swizzle mode allows, with that swizzle and without it:
    [(mode, row bytes, access bytes, wavefronts unswizzled, wavefronts swizzled)]."""
    elem = element_type(dtype).bytes
    out = []
    for mode in ("32B", "64B", "128B"):
        inner = swizzle_width(mode)
        for access in (4, 16):
            row = []
            for swz in ("none", mode):
                t = TensorMap(dtype, (inner // elem, 64), (inner // elem, 32), swizzle=swz)
                row.append(wavefronts(column_read_addresses(t, 0, access), access).wavefronts)
            out.append((mode, inner, access, row[0], row[1]))
    return out
