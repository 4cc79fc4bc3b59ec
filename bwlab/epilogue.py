"""Stage 5, the epilogue: accumulators in registers -> SMEM -> GMEM through the TMA store.

The hops, in the order a GEMM kernel performs them:

1. **registers -> SMEM** with ``st.shared.v4.b32`` (PTX ISA 9.7.9.10 ``st``): after ``tcgen05.ld``
   (``.32x32b``: thread t of a warp holds row t of its 32-row quarter, register j = column j) every
   thread writes 16 bytes of its row per instruction. Which bank each 16 bytes lands in decides how
   many shared-memory wavefronts the instruction costs (`wavefronts`, `RegisterStorePlan`); a
   swizzled D tile (`SmemTile` with ``swizzle='128B'``) spreads the 32 rows over all banks.
2. **fence.proxy.async.shared::cta** (PTX ISA 9.7.13.4 ``membar/fence``; 9.7.9.25.2 "Async proxy"):
   ``st.shared`` writes through the generic proxy, the TMA engine reads through the async proxy, and
   only a proxy fence in each writing thread, then a barrier, orders the first before the second
   (`EpilogueOrdering`).
3. **TMA store** ``cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group`` (PTX ISA 9.7.9.27.1.2): the
   inverse of the TMA load; elements of the box outside the tensor are not written, except that
   dimension 0 is written in whole 16-byte chunks, and a swizzled box narrower than its swizzle
   span is read from SMEM one span per row (both seen on the H100: `STORE_GRANULE`,
   `smem_box_pitch`) (`tma_store_model`), and ``cp.reduce.async.bulk.tensor ... .add`` adds instead of writing
   (`tma_reduce_add_model`, PTX ISA 9.7.9.27.1.3).
4. **bulk async-groups** ``cp.async.bulk.commit_group`` / ``wait_group.read N`` / ``wait_group N``
   (PTX ISA 9.7.9.27.2): ``.read`` waits until the groups have finished *reading* their SMEM source
   (the buffer may be reused), the plain form until the GMEM writes are done and visible to the
   waiting thread (`BulkAsyncGroups`).
5. **D = alpha * acc + beta * C** with C brought into SMEM by a TMA load (`epilogue_alpha_beta`).

CuTe/CUTLASS counterparts: ``include/cute/atom/copy_traits_sm90_tma.hpp`` (SM90_TMA_STORE,
SM90_TMA_REDUCE_ADD, ``tma_store_fence``, ``tma_store_arrive`` = commit_group, ``tma_store_wait<N>`` =
``wait_group.read N``), ``include/cute/arch/copy_sm90.hpp`` and the SM90/SM100 collective epilogues.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .hw.swizzle import SWIZZLES, swizzle_of
from .runtime import Report

__all__ = [
    "D_DTYPES", "SmemTile", "RegisterStorePlan", "BankReport", "wavefronts", "smem_bank",
    "OrderingError", "BulkAsyncGroups", "EpilogueOrdering", "epilogue_alpha_beta",
    "to_dtype_bits", "from_dtype_bits", "PROXY_FENCE_RULE", "BANK_RULE",
    "tma_store_writes", "tma_store_model", "tma_reduce_add_model", "REDUCE_ADD_DTYPES", "STORE_GRANULE",
    "smem_box_pitch", "smem_box_footprint",
    "EpilogueProblem", "epilogue_model", "run_epilogue", "run_tma_store", "measure_store_cycles",
    "validate_main", "bench_main",
]

# Element types a D (and C) tile can have here: name -> (bytes, numpy dtype of its raw bits).
D_DTYPES = {"float32": (4, np.uint32), "float16": (2, np.uint16), "bfloat16": (2, np.uint16)}

SMEM_BANKS = 32
BANK_BYTES = 4
WARP = 32

BANK_RULE = (
    "Shared memory has 32 banks of 4 bytes (bank = address / 4 mod 32) and serves 128 bytes per "
    "wavefront. A warp's access of W bytes per thread is split into W/4 phases of 128/W consecutive "
    "lanes (4-byte: one phase of 32; 8-byte: two of 16; 16-byte st.shared.v4: four quarter-warps of 8). "
    "A phase costs as many wavefronts as the largest number of distinct 4-byte words it touches in "
    "one bank (the same word twice costs nothing extra). Conflict-free st.shared.v4 = 4 wavefronts. "
    "Sources: the CUDA C++ Programming Guide, 'Shared Memory' (32 banks x 4 B); NVIDIA's Nsight "
    "Compute Profiling Guide (shared-memory wavefronts; 128 B/cycle) and the NVIDIA developer forum "
    "answer 'Unexpected shared memory bank conflict' (forums.developer.nvidia.com/t/77228): an "
    "LDS.128/STS.128 needs 4 requests, one per quarter-warp. It is a model; bwlab measures its "
    "predictions on the GPU (notebook 05, hardware tier).")

PROXY_FENCE_RULE = (
    "st.shared writes through the generic proxy; the TMA store (cp.async.bulk.tensor) reads SMEM "
    "through the async proxy. 'Accessing the same memory location across multiple proxies needs a "
    "cross-proxy fence. For the async proxy, fence.proxy.async should be used' (PTX ISA 9.7.9.25.2). "
    "So every thread that wrote the tile executes fence.proxy.async.shared::cta after its writes, "
    "then a barrier (bar.sync / named barrier) orders those fences before the one thread that issues "
    "the TMA store. In the other direction nothing is needed: the completion of a bulk operation "
    "'is followed by an implicit generic-async proxy fence' (same section).")


def _check_dtype(dtype: str) -> int:
    if dtype not in D_DTYPES:
        raise ValueError(f"dtype must be one of {list(D_DTYPES)} (the D/C element types of this "
                         f"epilogue), got {dtype!r}")
    return D_DTYPES[dtype][0]


# ------------------------------------------------------------------------------------------------
# The D tile in shared memory
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SmemTile:
    """A rows x cols D tile (row-major: N contiguous) as the TMA store will read it from SMEM.

    With a swizzle, a TMA box may be at most one swizzle row wide (32/64/128 bytes of its inner
    dimension: cuTensorMapEncodeTiled's rule), so the tile is kept as `n_boxes` column blocks of
    `box_cols` columns, one after the other in SMEM, each a (rows x box_row_bytes) box that one TMA
    store writes out; CUTLASS lays out its swizzled epilogue tiles the same way. Without a swizzle a
    box can span the whole row (`box_cols` defaults to `cols`, at most 256 elements).

    `base` is the SMEM byte address of the tile. The swizzle is a function of the address (see
    REFERENCE.md), so a base that is not aligned to the swizzle span shifts the pattern, exactly as
    the TMA engine would; the TMA engine itself needs a 128-byte aligned SMEM box.
    """

    rows: int
    cols: int
    dtype: str = "float32"
    swizzle: str = "none"
    base: int = 0
    box_cols: int | None = None

    def __post_init__(self):
        eb = _check_dtype(self.dtype)
        swizzle_of(self.swizzle)
        if not 1 <= self.rows <= 256:
            raise ValueError(f"rows must be in [1, 256] (a TMA box dimension is at most 256 "
                             f"elements), got {self.rows}")
        if self.cols < 1 or (self.cols * eb) % 16:
            raise ValueError(f"a row must be a positive multiple of 16 bytes (st.shared.v4 and the TMA "
                             f"box both move 16-byte units): {self.cols} x {eb} B = {self.cols * eb} B")
        if self.base < 0 or self.base % 128:
            raise ValueError(f"base must be a non-negative multiple of 128 (the TMA engine's SMEM "
                             f"alignment), got {self.base}")
        if self.swizzle != "none":
            width = SWIZZLES[self.swizzle].span // 8  # bytes of one swizzle row: 32, 64, 128
            want = width // eb
            if self.box_cols not in (None, want):
                raise ValueError(f"with swizzle {self.swizzle} a TMA box row is exactly {width} bytes "
                                 f"= {want} {self.dtype} columns here; got box_cols={self.box_cols}")
            if self.cols % want:
                raise ValueError(f"cols ({self.cols}) must be a multiple of {want}: a {self.swizzle} "
                                 f"swizzled box is {width} bytes = {want} {self.dtype} wide")
            object.__setattr__(self, "box_cols", want)
        else:
            bc = self.cols if self.box_cols is None else int(self.box_cols)
            if bc < 1 or self.cols % bc or (bc * eb) % 16 or bc > 256:
                raise ValueError(f"box_cols must divide cols ({self.cols}), be a multiple of 16 bytes "
                                 f"and at most 256 elements; got {bc}")
            object.__setattr__(self, "box_cols", bc)
        if self.n_boxes > 1 and self.box_bytes % 128:
            raise ValueError(f"every box's SMEM address must be 128-byte aligned (TMA): a box of "
                             f"{self.rows} rows x {self.box_row_bytes} B = {self.box_bytes} B is not a "
                             f"multiple of 128, so the next box would start misaligned")

    # -- geometry ------------------------------------------------------------------------------
    @property
    def elem_bytes(self) -> int:
        return D_DTYPES[self.dtype][0]

    @property
    def box_row_bytes(self) -> int:
        return self.box_cols * self.elem_bytes

    @property
    def box_bytes(self) -> int:
        return self.rows * self.box_row_bytes

    @property
    def n_boxes(self) -> int:
        return self.cols // self.box_cols

    @property
    def nbytes(self) -> int:
        return self.rows * self.cols * self.elem_bytes

    def box_address(self, b: int) -> int:
        """SMEM address of column block `b` (what the TMA store of that box is given)."""
        if not 0 <= b < self.n_boxes:
            raise ValueError(f"box index must be in [0, {self.n_boxes}), got {b}")
        return self.base + b * self.box_bytes

    def logical_address(self, row, col):
        """The SMEM byte address of element (row, col) before the swizzle is applied."""
        row = np.asarray(row, dtype=np.int64)
        col = np.asarray(col, dtype=np.int64)
        if np.any((row < 0) | (row >= self.rows)) or np.any((col < 0) | (col >= self.cols)):
            raise ValueError(f"(row, col) outside the {self.rows} x {self.cols} tile")
        b, c = np.divmod(col, self.box_cols)
        return self.base + b * self.box_bytes + row * self.box_row_bytes + c * self.elem_bytes

    def address(self, row, col):
        """The SMEM byte address where element (row, col) lives (swizzle applied)."""
        return swizzle_of(self.swizzle)(self.logical_address(row, col))

    def chunk_of_address(self, addr) -> tuple:
        """Inverse for 16-byte chunks: which (row, first column) the 16 bytes at `addr` hold."""
        addr = np.asarray(addr, dtype=np.int64)
        logical = swizzle_of(self.swizzle)(addr)  # a swizzle is an involution
        off = logical - self.base
        b, rest = np.divmod(off, self.box_bytes)
        row, inner = np.divmod(rest, self.box_row_bytes)
        return row, b * self.box_cols + inner // self.elem_bytes

    def pack(self, d_bits: np.ndarray) -> np.ndarray:
        """The SMEM bytes [base, base + nbytes) holding the rows x cols array of raw element bits."""
        d_bits = np.ascontiguousarray(d_bits).astype(D_DTYPES[self.dtype][1], copy=False)
        if d_bits.shape != (self.rows, self.cols):
            raise ValueError(f"expected a {self.rows} x {self.cols} array, got {d_bits.shape}")
        r, c = np.meshgrid(np.arange(self.rows), np.arange(self.cols), indexing="ij")
        out = np.zeros(self.nbytes, dtype=np.uint8)
        src = d_bits.view(np.uint8).reshape(self.rows, self.cols, self.elem_bytes)
        addr = self.address(r, c) - self.base
        for k in range(self.elem_bytes):
            out[addr + k] = src[..., k]
        return out

    def unpack(self, smem: np.ndarray) -> np.ndarray:
        """Inverse of `pack`: SMEM bytes -> rows x cols raw element bits."""
        smem = np.asarray(smem, dtype=np.uint8)
        if smem.size != self.nbytes:
            raise ValueError(f"expected {self.nbytes} SMEM bytes, got {smem.size}")
        r, c = np.meshgrid(np.arange(self.rows), np.arange(self.cols), indexing="ij")
        addr = self.address(r, c) - self.base
        out = np.zeros((self.rows, self.cols, self.elem_bytes), dtype=np.uint8)
        for k in range(self.elem_bytes):
            out[..., k] = smem[addr + k]
        return out.view(D_DTYPES[self.dtype][1]).reshape(self.rows, self.cols)


# ------------------------------------------------------------------------------------------------
# Banks: how many wavefronts one warp-wide shared-memory access costs
# ------------------------------------------------------------------------------------------------
def smem_bank(addr):
    """Bank of a byte address: 32 banks of 4 bytes."""
    return (np.asarray(addr, dtype=np.int64) // BANK_BYTES) % SMEM_BANKS


@dataclass(frozen=True)
class BankReport:
    """Cost of one warp-wide shared-memory access under `BANK_RULE`."""

    width: int                  # bytes per thread (4, 8, 16)
    phases: tuple               # lanes of each phase
    words_per_bank: np.ndarray  # (n_phases, 32): distinct 4-byte words each bank serves per phase
    wavefronts_per_phase: tuple

    @property
    def wavefronts(self) -> int:
        return int(sum(self.wavefronts_per_phase))

    @property
    def ideal(self) -> int:
        """Wavefronts without conflicts: one per phase that has an active lane."""
        return int(sum(1 for w in self.wavefronts_per_phase if w))

    @property
    def conflicts(self) -> int:
        """Extra wavefronts caused by bank conflicts."""
        return self.wavefronts - self.ideal

    @property
    def ways(self) -> int:
        """The worst phase's conflict degree (1 = conflict-free)."""
        return int(max(self.wavefronts_per_phase) if self.wavefronts_per_phase else 0)


def wavefronts(addresses, width: int = 16) -> BankReport:
    """Shared-memory wavefronts of one warp instruction in which lane i accesses `width` bytes at
    `addresses[i]` (a negative address marks an inactive lane). See `BANK_RULE`."""
    addresses = np.asarray(addresses, dtype=np.int64).reshape(-1)
    if addresses.size != WARP:
        raise ValueError(f"one address per lane of a warp (32), got {addresses.size}")
    if width not in (4, 8, 16):
        raise ValueError(f"width must be 4, 8 or 16 bytes (st.shared.b32/.v2/.v4), got {width}")
    active = addresses >= 0
    if np.any(addresses[active] % width):
        raise ValueError(f"a {width}-byte shared-memory access must be {width}-byte aligned")
    lanes_per_phase = 128 // width
    phases, words, fronts = [], [], []
    for p in range(WARP // lanes_per_phase):
        lanes = tuple(range(p * lanes_per_phase, (p + 1) * lanes_per_phase))
        phases.append(lanes)
        distinct = set()
        for lane in lanes:
            if active[lane]:
                first = int(addresses[lane]) // BANK_BYTES
                distinct.update(range(first, first + width // BANK_BYTES))
        per_bank = np.zeros(SMEM_BANKS, dtype=np.int64)
        for w in distinct:
            per_bank[w % SMEM_BANKS] += 1
        words.append(per_bank)
        fronts.append(int(per_bank.max()))
    return BankReport(width, tuple(phases), np.array(words), tuple(fronts))


# ------------------------------------------------------------------------------------------------
# Registers -> SMEM: which thread writes which 16 bytes
# ------------------------------------------------------------------------------------------------
MAPPINGS = {
    "row_per_thread": "tcgen05.ld .32x32b: thread t of warp w holds row 32*(w%4)+t; step k writes "
                      "bytes [16k, 16k+16) of that row (16/elem_bytes consecutive columns)",
    "chunk_per_thread": "the coalesced alternative: consecutive threads write consecutive 16-byte "
                        "chunks of one row (needs the data re-distributed across the warp first, "
                        "e.g. with shuffles or stmatrix)",
}


@dataclass(frozen=True)
class RegisterStorePlan:
    """Every st.shared.v4 that one warp issues to write its part of `tile`.

    `addresses[k, lane]` is the SMEM byte address lane `lane` writes at step k (-1: idle);
    `rows[k, lane]` and `cols[k, lane]` say which row and first column those 16 bytes hold.
    """

    tile: SmemTile
    mapping: str = "row_per_thread"
    warp: int = 0
    addresses: np.ndarray = field(init=False, repr=False)
    rows: np.ndarray = field(init=False, repr=False)
    cols: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        if self.mapping not in MAPPINGS:
            raise ValueError(f"mapping must be one of {list(MAPPINGS)}, got {self.mapping!r}")
        t = self.tile
        vec = 16 // t.elem_bytes  # columns per st.shared.v4
        chunks_per_row = t.cols // vec
        if not 0 <= self.warp < 4:
            raise ValueError(f"tcgen05.ld .32x32b: warp w reads TMEM lanes 32*(w%4)..+31, so warp "
                             f"must be in [0, 4), got {self.warp}")
        if t.rows < 32 * (self.warp + 1):
            raise ValueError(f"warp {self.warp} owns rows {32 * self.warp}..{32 * self.warp + 31} "
                             f"but the tile has {t.rows} rows")
        lanes = np.arange(WARP)
        if self.mapping == "row_per_thread":
            rows = np.broadcast_to(32 * self.warp + lanes, (chunks_per_row, WARP)).copy()
            cols = np.broadcast_to((np.arange(chunks_per_row) * vec)[:, None],
                                   (chunks_per_row, WARP)).copy()
        else:
            # The same 32 rows, enumerated chunk by chunk along each row: lane = index mod 32.
            idx = np.arange(32 * chunks_per_row).reshape(chunks_per_row, WARP)
            r, ch = np.divmod(idx, chunks_per_row)
            rows, cols = 32 * self.warp + r, ch * vec
        addresses = np.where(rows >= 0, t.address(np.maximum(rows, 0), np.maximum(cols, 0)), -1)
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "cols", cols)
        object.__setattr__(self, "addresses", addresses)

    @property
    def steps(self) -> int:
        return self.addresses.shape[0]

    def report(self, step: int) -> BankReport:
        return wavefronts(self.addresses[step], 16)

    def total_wavefronts(self) -> int:
        return sum(self.report(k).wavefronts for k in range(self.steps))

    def ideal_wavefronts(self) -> int:
        return sum(self.report(k).ideal for k in range(self.steps))

    def writer_map(self) -> np.ndarray:
        """(rows, cols // vec) array: which lane of this warp writes each 16-byte chunk (-1: none)."""
        vec = 16 // self.tile.elem_bytes
        out = -np.ones((self.tile.rows, self.tile.cols // vec), dtype=np.int64)
        for k in range(self.steps):
            for lane in range(WARP):
                if self.rows[k, lane] >= 0:
                    out[self.rows[k, lane], self.cols[k, lane] // vec] = lane
        return out

    def summary(self) -> str:
        return (f"{self.mapping}, {self.tile.dtype} {self.tile.rows}x{self.tile.cols}, swizzle "
                f"{self.tile.swizzle}, warp {self.warp}: {self.steps} x st.shared.v4, "
                f"{self.total_wavefronts()} wavefronts (conflict-free: {self.ideal_wavefronts()})")


# ------------------------------------------------------------------------------------------------
# Bulk async-groups and the proxy fence: program-order models with clear errors
# ------------------------------------------------------------------------------------------------
class OrderingError(ValueError):
    """An epilogue step that the PTX memory model does not make safe (or a misused instruction)."""


class BulkAsyncGroups:
    """The bulk async-groups of ONE thread (the one that issues the TMA stores).

    * a TMA store joins the thread's currently open group;
    * ``commit_group`` closes it (``cp.async.bulk.commit_group``);
    * ``wait_group_read(N)``: wait until at most N of the most recent committed groups are still
      *reading their SMEM source*; older groups' buffers may be overwritten;
    * ``wait_group(N)``: wait until at most N are pending at all; older groups' GMEM writes are
      done and visible to this thread (PTX ISA 9.7.9.27.2.2).

    Groups belong to the thread: another thread learns nothing from this thread's wait unless a
    barrier follows. An operation that was issued but never committed is in no group, so no
    wait_group covers it: the model says so instead of letting it pass.
    """

    def __init__(self):
        self.open: list = []       # operations issued since the last commit
        self.groups: list = []     # committed: dicts {ops, read_done, complete}

    def issue(self, op):
        self.open.append(op)

    def commit_group(self):
        if not self.open:
            # Legal PTX (an empty group completes at once), but in an epilogue it is a bug sign.
            self.groups.append({"ops": [], "read_done": True, "complete": True})
            return len(self.groups) - 1
        self.groups.append({"ops": list(self.open), "read_done": False, "complete": False})
        self.open.clear()
        return len(self.groups) - 1

    @staticmethod
    def _check_n(n):
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
            raise OrderingError(f"wait_group N: N must be a non-negative integer constant (an "
                                f"immediate in PTX), got {n!r}")

    def _wait(self, n: int, read_only: bool):
        self._check_n(n)
        if self.open:
            what = "wait_group.read" if read_only else "wait_group"
            raise OrderingError(
                f"{len(self.open)} bulk operation(s) issued but not committed ({self.open}): "
                f"{what} {n} waits only for committed groups. Call commit_group first.")
        done = self.groups[:max(0, len(self.groups) - n)]
        for g in done:
            g["read_done"] = True
            if not read_only:
                g["complete"] = True
        return [op for g in done for op in g["ops"]]

    def wait_group_read(self, n: int):
        """Returns the operations whose SMEM reads are now known to be finished."""
        return self._wait(n, True)

    def wait_group(self, n: int):
        """Returns the operations now known to be complete (GMEM written, visible to this thread)."""
        return self._wait(n, False)

    def state_of(self, op) -> str:
        if op in self.open:
            return "issued, not committed"
        for g in self.groups:
            if op in g["ops"]:
                return "complete" if g["complete"] else ("read done" if g["read_done"] else "in flight")
        return "never issued"

    @property
    def pending(self) -> int:
        return sum(1 for g in self.groups if not g["complete"])


class EpilogueOrdering:
    """One CTA's epilogue in program order, checked against the PTX rules for SMEM reuse, the proxy
    fence and bulk groups. Every method is one step of the kernel:

    ``st_shared(buf)``        all epilogue threads write buffer `buf` (generic proxy)
    ``fence_proxy_async()``   every writing thread: ``fence.proxy.async.shared::cta``
    ``bar_sync()``            the epilogue threads meet (``bar.sync`` / named barrier)
    ``tma_store(buf)``        the elected thread issues the TMA store (async proxy reads `buf`)
    ``commit_group()``, ``wait_group_read(n)``, ``wait_group(n)``   the elected thread's bulk groups
    ``read_gmem(buf, by)``    a thread reads the GMEM tile stored from `buf` (`by`: 'issuer' | 'other')
    ``exit()``                the CTA ends (its SMEM is released)

    A step that the rules do not make safe raises `OrderingError` naming the missing piece
    (``strict=True``), or is recorded in `hazards` (``strict=False``: for showing a broken
    schedule in full). See `PROXY_FENCE_RULE`.
    """

    def __init__(self, buffers=("D",), strict: bool = True):
        if not buffers:
            raise ValueError("at least one SMEM buffer")
        self.strict = strict
        self.groups = BulkAsyncGroups()
        # per buffer: 'empty' | 'written' (unfenced) | 'fenced' | 'published'
        self.smem = {b: "empty" for b in buffers}
        self.stores = {b: [] for b in buffers}     # store ops issued from each buffer
        self.visible_to_all: set = set()           # store ops complete and published by a barrier
        self.read_free: set = set()                # store ops whose SMEM reads are known to all
        self.hazards: list = []
        self.log: list = []
        self._n = 0

    # -- helpers -------------------------------------------------------------------------------
    def _buf(self, b):
        if b not in self.smem:
            raise ValueError(f"unknown buffer {b!r}; buffers: {list(self.smem)}")
        return b

    def _hazard(self, msg):
        self.hazards.append(f"step {len(self.log)}: {msg}")
        if self.strict:
            raise OrderingError(msg)

    def _busy_stores(self, b):
        """Stores from buffer b that may still be reading it, as far as the writers know."""
        return [op for op in self.stores[b] if op not in self.read_free]

    # -- steps ---------------------------------------------------------------------------------
    def st_shared(self, buf):
        b = self._buf(buf)
        self.log.append(f"st.shared -> {b}")
        busy = self._busy_stores(b)
        if busy:
            states = ", ".join(f"{op}: {self.groups.state_of(op)}" for op in busy)
            self._hazard(f"write-after-read on SMEM buffer {b}: {states}. The issuing thread must "
                         f"wait_group.read until those stores have read {b}, then bar.sync so the "
                         f"writers know, before {b} is overwritten.")
        self.smem[b] = "written"

    def fence_proxy_async(self):
        self.log.append("fence.proxy.async.shared::cta")
        for b, s in self.smem.items():
            if s == "written":
                self.smem[b] = "fenced"

    def bar_sync(self):
        self.log.append("bar.sync")
        for b, s in self.smem.items():
            if s == "fenced":
                self.smem[b] = "published"
        for g in self.groups.groups:
            if g["read_done"]:
                self.read_free.update(g["ops"])
            if g["complete"]:
                self.visible_to_all.update(g["ops"])

    def tma_store(self, buf):
        b = self._buf(buf)
        self._n += 1
        op = f"store#{self._n}({b})"
        self.log.append(f"tma_store {op}")
        s = self.smem[b]
        if s == "written":
            self._hazard(f"{op}: {b} was written with st.shared but no fence.proxy.async.shared::cta "
                         f"followed: the async proxy (TMA) may read stale SMEM.")
        elif s == "fenced":
            self._hazard(f"{op}: the writers fenced {b} but no barrier followed: the issuing thread "
                         f"is not ordered after the other threads' writes and fences.")
        elif s == "empty":
            self._hazard(f"{op}: nothing was written to {b} before it was stored.")
        self.stores[b].append(op)
        self.groups.issue(op)
        return op

    def commit_group(self):
        self.log.append("cp.async.bulk.commit_group")
        return self.groups.commit_group()

    def wait_group_read(self, n: int):
        self.log.append(f"cp.async.bulk.wait_group.read {n}")
        return self.groups.wait_group_read(n)

    def wait_group(self, n: int):
        self.log.append(f"cp.async.bulk.wait_group {n}")
        return self.groups.wait_group(n)

    def read_gmem(self, buf, by: str = "issuer"):
        b = self._buf(buf)
        if by not in ("issuer", "other"):
            raise ValueError("by must be 'issuer' (the thread that issued the stores) or 'other'")
        self.log.append(f"read GMEM tile of {b} ({by})")
        if not self.stores[b]:
            self._hazard(f"no TMA store from {b} was issued; the GMEM tile holds old data.")
            return
        op = self.stores[b][-1]
        state = self.groups.state_of(op)
        if state != "complete":
            hint = (" wait_group.read only says the SMEM source has been read; the GMEM writes need "
                    "wait_group (without .read)." if state == "read done" else "")
            self._hazard(f"{op} is {state}: its GMEM writes are not known to be visible.{hint}")
        elif by == "other" and op not in self.visible_to_all:
            self._hazard(f"{op} completed for the issuing thread only; another thread needs a "
                         f"barrier after the issuer's wait_group.")

    def exit(self):
        self.log.append("exit")
        if self.groups.open:
            self._hazard(f"the CTA exits with uncommitted bulk stores {self.groups.open}.")
        busy = [op for g in self.groups.groups if not g["read_done"] for op in g["ops"]]
        if busy:
            self._hazard(f"the CTA exits while {busy} may still read its SMEM: wait_group.read 0 "
                         f"(CUTLASS: tma_store_wait<0>) before leaving.")


# ------------------------------------------------------------------------------------------------
# D = alpha * acc + beta * C
# ------------------------------------------------------------------------------------------------
def from_dtype_bits(bits: np.ndarray, dtype: str) -> np.ndarray:
    """Raw element bits -> float32 (exact for float16 and bfloat16)."""
    _check_dtype(dtype)
    bits = np.asarray(bits)
    if dtype == "float32":
        return bits.astype(np.uint32).view(np.float32)
    if dtype == "float16":
        return bits.astype(np.uint16).view(np.float16).astype(np.float32)
    return (bits.astype(np.uint32) << 16).view(np.float32)


def to_dtype_bits(x: np.ndarray, dtype: str) -> np.ndarray:
    """float32 -> raw bits of `dtype` rounded to nearest even, as ``cvt.rn.f16.f32`` /
    ``cvt.rn.bf16.f32`` do (PTX ISA 9.7.9.21 cvt); NaN becomes the canonical NaN 0x7fff."""
    _check_dtype(dtype)
    x = np.asarray(x, dtype=np.float32)
    if dtype == "float32":
        return x.view(np.uint32).copy()
    nan = np.isnan(x)
    if dtype == "float16":
        with np.errstate(over="ignore"):
            out = x.astype(np.float16).view(np.uint16)
    else:
        u = x.view(np.uint32).astype(np.uint64)
        out = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(nan, np.uint16(0x7FFF), out).astype(np.uint16)


def epilogue_alpha_beta(acc: np.ndarray, alpha: float, beta: float = 0.0, c_bits=None,
                        dtype: str = "float32") -> np.ndarray:
    """D = alpha * acc + beta * C, in float32 as the kernel computes it, returned as raw `dtype` bits.

    Each operation is rounded to float32 separately (the kernel uses __fmul_rn / __fadd_rn, so no
    fused multiply-add changes the rounding): d = rn(rn(alpha * acc) + rn(beta * c)), then one
    rn conversion to `dtype`. C (raw bits of the same `dtype`) is not read when beta == 0, so a NaN
    in C does not leak into D; CUTLASS skips the C load in that case too.
    """
    acc = np.asarray(acc, dtype=np.float32)
    a = np.float32(alpha)
    b = np.float32(beta)
    with np.errstate(over="ignore", invalid="ignore"):
        d = a * acc
        if b != 0:
            if c_bits is None:
                raise ValueError("beta != 0 needs C (c_bits)")
            c = from_dtype_bits(np.asarray(c_bits), dtype)
            if c.shape != acc.shape:
                raise ValueError(f"C has shape {c.shape}, acc {acc.shape}")
            d = (d + b * c).astype(np.float32)
    return to_dtype_bits(d, dtype)


# ------------------------------------------------------------------------------------------------
# The TMA store and reduce-add: the inverse of bwlab.tma's load model
# ------------------------------------------------------------------------------------------------
# cp.reduce.async.bulk.tensor .add element types (PTX ISA 9.7.9.27.1.3: .u32 .s32 .u64 .f32 .f16
# .bf16), by bwlab.tma dtype name.
REDUCE_ADD_DTYPES = ("uint32", "int32", "uint64", "float32", "float16", "bfloat16")
# The TMA store writes dimension 0 in whole 16-byte chunks: an element past the tensor's last
# column is written when it shares a 16-byte chunk of its row with an element inside the tensor
# (seen on the H100: a bf16 tensor 100 columns wide with a 224-byte row pitch got columns 100..103
# of the box written, and 104..111 left alone; docs/results/store_validate_h100.txt checks it on
# every case). The other dimensions stop exactly at the edge.
STORE_GRANULE = 16


def smem_box_pitch(tmap) -> int:
    """Bytes between consecutive rows (dimension-0 lines) of the box in SMEM.

    Without a swizzle the box is packed: the pitch is the box's inner size. With a swizzle every
    row takes a whole swizzle row (32, 64 or 128 bytes) even when the box is narrower: seen on the
    H100, where a store of a narrow swizzled box read its rows at the swizzle span (12 of 12 such
    cases matched byte for byte, and the ones whose padded rows ran past the CTA's shared memory
    faulted with an illegal address; docs/results/store_validate_h100.txt).
    """
    from .tma import SWIZZLE_BYTES
    inner = tmap.box_counts[0] * tmap.elem_bytes
    span = SWIZZLE_BYTES[tmap.swizzle]
    return span if span and inner < span else inner


def smem_box_footprint(tmap) -> int:
    """SMEM bytes a TMA store reads for one box: rows x `smem_box_pitch`."""
    import math
    return math.prod(tmap.box_counts[1:]) * smem_box_pitch(tmap)
# Whether a TFLOAT32 tensor map rounds on the way out as it does on the way in (bwlab.tma):
# None = not established on hardware, so the model refuses tf32 stores rather than guess.
TF32_ROUNDS_ON_STORE = None


def _store_targets(tmap, coords, smem_address: int):
    """For every byte of the box: its SMEM address (swizzled), its GMEM byte offset, in bounds?

    The same element order and address arithmetic as bwlab.tma.tma_load_writes, read backwards:
    box element (j0, j1, ...) sits unswizzled at smem_address + elem * (j0 + n0 * (j1 + ...)) and
    belongs to global element coords + j. In bounds means: below the tensor's extent in every
    dimension, with dimension 0's extent rounded up to STORE_GRANULE bytes.
    """
    from .tma import SMEM_ALIGNMENT, TensorMap
    if not isinstance(tmap, TensorMap):
        raise ValueError("tmap must be a bwlab.tma.TensorMap")
    if tmap.interleave != "none":
        raise ValueError("the store model covers interleave='none' (as the load model does)")
    if any(e != 1 for e in tmap.element_strides):
        raise ValueError(f"the store model covers element_strides of 1 only; got {tmap.element_strides}"
                         " (traversal strides on stores are not validated on hardware here)")
    coords = tuple(int(c) for c in coords)
    if len(coords) != tmap.rank:
        raise ValueError(f"a rank-{tmap.rank} store takes {tmap.rank} coordinates, got {coords}")
    if any(c < 0 for c in coords):
        raise ValueError(f"coordinates {coords}: a TMA store's box must start at non-negative "
                         "coordinates (PTX ISA 9.7.9.27.1.1, restrictions on the .global.shared::cta "
                         "direction); only its far side may hang over the tensor's edge")
    if any(c >= (1 << 31) for c in coords):
        raise ValueError(f"coordinates {coords} must be signed 32-bit integers")
    if (coords[0] * tmap.elem_bytes) % 16:
        raise ValueError(f"coordinate 0 = {coords[0]} puts the box start {coords[0] * tmap.elem_bytes} bytes "
                         "into a row: a TMA store's box must start on a 16-byte boundary in dimension 0 "
                         "(PTX ISA 5.5.3.1: the bounding box's address must be 16-byte aligned; on the "
                         "H100 a store from a misaligned start stops the kernel with an illegal instruction)")
    smem_address = int(smem_address)
    if smem_address < 0 or smem_address % SMEM_ALIGNMENT:
        raise ValueError(f"the SMEM source 0x{smem_address:x} must be {SMEM_ALIGNMENT}-byte aligned")
    elem = tmap.elem_bytes
    n = tmap.box_counts
    j = np.indices(n[::-1], dtype=np.int64).reshape(tmap.rank, -1)[::-1]
    g = np.asarray(coords, dtype=np.int64)[:, None] + j
    # Written region: dimension 0 ends at the tensor's edge rounded up to 16 bytes (STORE_GRANULE),
    # the other dimensions at the edge itself.
    limit = np.asarray(tmap.global_shape, dtype=np.int64).copy()
    limit[0] = -(-limit[0] * elem // STORE_GRANULE) * STORE_GRANULE // elem
    inb = np.all(g < limit[:, None], axis=0)
    goff = (g * np.asarray(tmap.byte_strides, dtype=np.int64)[:, None]).sum(axis=0)
    gbyte = (goff[:, None] + np.arange(elem)).reshape(-1)
    inb_byte = np.repeat(inb, elem)
    # Row r of the box (all dims above 0 flattened, dim 1 fastest) starts r * pitch bytes in.
    row = (np.ravel_multi_index(j[1:][::-1], n[1:][::-1]) if tmap.rank > 1
           else np.zeros(j.shape[1], np.int64))
    start = smem_address + row * smem_box_pitch(tmap) + j[0] * elem
    addr = SWIZZLES[tmap.swizzle]((start[:, None] + np.arange(elem)).reshape(-1))
    return addr, gbyte, inb_byte


def _window(smem, smem_address, window_start, addr):
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
    apart (`smem_box_pitch`). Elements outside the tensor are not written, so they do not appear
    here, with one exception seen on the H100: dimension 0 is written in whole 16-byte chunks, so
    elements just past the last column that share its 16-byte chunk are written too
    (STORE_GRANULE). docs/results/store_validate_h100.txt checks all of it on every case.
    """
    addr, gbyte, inb = _store_targets(tmap, coords, smem_address)
    vals = _window(smem, smem_address, window_start, addr)
    return gbyte[inb], vals[inb]


def _gmem_bytes_copy(gmem, tmap):
    g = np.array(gmem, copy=True)
    gb = np.ascontiguousarray(g).reshape(-1).view(np.uint8)
    if gb.size < tmap.global_extent_bytes:
        raise ValueError(f"the tensor spans {tmap.global_extent_bytes} bytes; the array has {gb.size}")
    return g, gb


def tma_store_model(gmem, tmap, coords, smem, smem_address: int = 0, window_start=None) -> np.ndarray:
    """GMEM after ``cp.async.bulk.tensor.Nd.global.shared::cta.bulk_group [tmap, coords], [smem]``.

    The inverse of `bwlab.tma.tma_load_model`: the SMEM byte at address a goes to the GMEM byte a
    load of the same box would have brought to a; elements outside the tensor are not written
    (dimension 0 in whole 16-byte chunks: see STORE_GRANULE). The box must start at non-negative
    coordinates, 16-byte aligned in dimension 0.
    `gmem` is the whole global buffer (any dtype/shape, tensor base at byte 0); a new array of the
    same dtype and shape is returned. tf32 maps are refused until hardware says whether the store
    rounds (TF32_ROUNDS_ON_STORE).
    """
    if tmap.dtype == "tf32" and TF32_ROUNDS_ON_STORE is None:
        raise ValueError("tf32 stores: whether the TMA store rounds to tf32 is not established on "
                         "hardware here; use uint32 or float32 maps for the raw bits")
    g, gb = _gmem_bytes_copy(gmem, tmap)
    off, vals = tma_store_writes(tmap, coords, smem, smem_address, window_start)
    gb[off] = vals
    return g


def _add_elements(old_bits: np.ndarray, new_bits: np.ndarray, dtype: str) -> np.ndarray:
    """Element-wise old + new on raw bits, as the .add reduction of that type computes it."""
    if dtype in ("uint32", "int32", "uint64"):
        return old_bits + new_bits  # two's complement wrap-around, the same bits for s32 and u32
    if dtype == "float32":
        with np.errstate(over="ignore", invalid="ignore"):
            return (old_bits.view(np.float32) + new_bits.view(np.float32)).view(np.uint32)
    # float16 / bfloat16: the exact sum rounded once to the format. An fp32 sum of two halves
    # (or bfloat16s) rounded to nearest even, then rounded again to the narrow format, is still
    # correctly rounded, because fp32 carries at least 2p+2 bits for p = 11 (and 8).
    a = from_dtype_bits(old_bits, dtype)
    b = from_dtype_bits(new_bits, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        return to_dtype_bits((a + b).astype(np.float32), dtype)


def tma_reduce_add_model(gmem, tmap, coords, smem, smem_address: int = 0, window_start=None):
    """GMEM after ``cp.reduce.async.bulk.tensor.Nd.global.shared::cta.add.tile.bulk_group``: every
    in-bounds element of the box becomes GMEM + SMEM (PTX ISA 9.7.9.27.1.3: .add takes .u32, .s32,
    .u64, .f32, .f16, .bf16; floats round to nearest even, integers wrap). Elements outside the
    tensor are left alone, as by the store."""
    if tmap.dtype not in REDUCE_ADD_DTYPES:
        raise ValueError(f"cp.reduce.async.bulk.tensor .add supports {REDUCE_ADD_DTYPES} (PTX ISA "
                         f"9.7.9.27.1.3); the tensor map's dtype is {tmap.dtype}")
    g, gb = _gmem_bytes_copy(gmem, tmap)
    off, vals = tma_store_writes(tmap, coords, smem, smem_address, window_start)
    eb = tmap.elem_bytes
    raw = {4: np.uint32, 8: np.uint64, 2: np.uint16}[eb]
    elem_off = off.reshape(-1, eb)[:, 0]
    old = gb[elem_off[:, None] + np.arange(eb)].copy().view(raw).reshape(-1)
    new = vals.reshape(-1, eb).copy().view(raw).reshape(-1)
    out = _add_elements(old, new, tmap.dtype).astype(raw).view(np.uint8).reshape(-1, eb)
    gb[elem_off[:, None] + np.arange(eb)] = out
    return g


# ------------------------------------------------------------------------------------------------
# A whole epilogue: D (M x N) = alpha * acc + beta * C, tile by tile
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EpilogueProblem:
    """D = alpha * acc + beta * C over an M x N matrix, one bm x bn tile per CTA.

    D and C live in GMEM as row-major (M + 1) x ld buffers of raw `dtype` bits: columns N..ld-1 are
    row padding and the last row is a guard row, both outside the tensor, so a stray write shows.
    acc is a float32 (tiles_m * bm) x (tiles_n * bn) array: the accumulator tiles as tcgen05.ld
    would hand them to the epilogue threads (thread t of the CTA holds row t of its tile).
    `reduce_add` makes the kernel issue cp.reduce.async.bulk.tensor .add instead of the store.
    """

    M: int
    N: int
    dtype: str = "float32"
    bm: int = 128
    bn: int = 32
    swizzle: str = "128B"
    alpha: float = 1.0
    beta: float = 0.0
    reduce_add: bool = False
    smem_offset: int = 0
    ld: int | None = None

    def __post_init__(self):
        eb = _check_dtype(self.dtype)
        if self.M < 1 or self.N < 1:
            raise ValueError(f"M and N must be positive, got {self.M} x {self.N}")
        if not 1 <= self.bm <= 128:
            raise ValueError(f"bm must be in [1, 128]: one epilogue thread per row, 128 threads; got {self.bm}")
        if self.smem_offset < 0 or self.smem_offset % 128 or self.smem_offset >= 1024:
            raise ValueError(f"smem_offset must be a multiple of 128 in [0, 1024), got {self.smem_offset}")
        SmemTile(self.bm, self.bn, self.dtype, self.swizzle, base=self.smem_offset)  # validates
        ld = -(-self.N * eb // 16) * 16 // eb if self.ld is None else int(self.ld)
        if ld < self.N or (ld * eb) % 16:
            raise ValueError(f"ld ({ld}) must be at least N ({self.N}) and ld * {eb} B a multiple of "
                             "16 (the TMA global-stride rule)")
        object.__setattr__(self, "ld", ld)
        if self.reduce_add and self.beta != 0:
            raise ValueError("reduce_add adds alpha * acc onto D in GMEM; beta * C is not combined "
                             "with it here (use beta = 0)")
        if self.tile_smem_bytes() > 200 * 1024:
            raise ValueError(f"the D and C tiles need {self.tile_smem_bytes()} B of SMEM; keep it "
                             "under 200 KiB")

    @property
    def elem_bytes(self) -> int:
        return D_DTYPES[self.dtype][0]

    @property
    def use_c(self) -> bool:
        return self.beta != 0

    @property
    def tiles(self) -> tuple:
        return (-(-self.M // self.bm), -(-self.N // self.bn))

    @property
    def tile(self) -> SmemTile:
        return SmemTile(self.bm, self.bn, self.dtype, self.swizzle, base=self.smem_offset)

    @property
    def c_tile(self) -> SmemTile:
        return SmemTile(self.bm, self.bn, self.dtype, self.swizzle,
                        base=self.smem_offset + -(-self.tile.nbytes // 1024) * 1024)

    @property
    def buffer_shape(self) -> tuple:
        return (self.M + 1, self.ld)

    @property
    def acc_shape(self) -> tuple:
        tm, tn = self.tiles
        return (tm * self.bm, tn * self.bn)

    def tensor_map(self):
        """The D (and C) tensor map: dims (N, M) innermost first, box (box_cols, bm)."""
        from .tma import TensorMap
        t = self.tile
        return TensorMap(self.dtype, (self.N, self.M), (t.box_cols, self.bm),
                         global_strides=(self.ld * self.elem_bytes,), swizzle=self.swizzle)

    def tile_smem_bytes(self) -> int:
        tile = -(-self.bm * self.bn * self.elem_bytes // 1024) * 1024
        return self.smem_offset + tile * (2 if self.use_c else 1)

    def box_coords(self, tm: int, tn: int):
        t = self.tile
        return [((tn * self.bn + b * t.box_cols, tm * self.bm), t.box_address(b))
                for b in range(t.n_boxes)]

    def random_inputs(self, rng: np.random.Generator):
        """acc, C bits and the initial D buffer, all finite (no NaN/Inf), for tests and validation."""
        acc = (rng.standard_normal(self.acc_shape) * np.exp2(rng.integers(-6, 7, self.acc_shape))
               ).astype(np.float32)
        raw = D_DTYPES[self.dtype][1]

        def finite(shape):
            x = (rng.standard_normal(shape) * 4).astype(np.float32)
            return to_dtype_bits(x, self.dtype).astype(raw)

        c = finite(self.buffer_shape) if self.use_c else None
        d0 = finite(self.buffer_shape)
        return acc, c, d0


def epilogue_model(p: EpilogueProblem, acc, c_bits=None, d_init=None) -> np.ndarray:
    """The D buffer after the epilogue kernel, computed from the stage models end to end: for every
    tile, C comes in through `bwlab.tma.tma_load_model` (OOB zero-filled), D = `epilogue_alpha_beta`,
    the tile is laid out in SMEM by `SmemTile.pack` (swizzle), and each box leaves through
    `tma_store_model` (or `tma_reduce_add_model`)."""
    from .tma import tma_load_model
    raw = D_DTYPES[p.dtype][1]
    acc = np.asarray(acc, dtype=np.float32)
    if acc.shape != p.acc_shape:
        raise ValueError(f"acc must be {p.acc_shape} (whole tiles), got {acc.shape}")
    d = (np.zeros(p.buffer_shape, raw) if d_init is None else np.array(d_init, dtype=raw, copy=True))
    if d.shape != p.buffer_shape:
        raise ValueError(f"D buffer must be {p.buffer_shape}, got {d.shape}")
    if p.use_c:
        c_bits = np.asarray(c_bits, dtype=raw)
        if c_bits.shape != p.buffer_shape:
            raise ValueError(f"C buffer must be {p.buffer_shape}, got {c_bits.shape}")
    tmap = p.tensor_map()
    tile, ctile = p.tile, p.c_tile
    store = tma_reduce_add_model if p.reduce_add else tma_store_model
    for tm in range(p.tiles[0]):
        for tn in range(p.tiles[1]):
            a = acc[tm * p.bm:(tm + 1) * p.bm, tn * p.bn:(tn + 1) * p.bn]
            c_tile_bits = None
            if p.use_c:
                img = np.zeros(ctile.nbytes, np.uint8)
                for b, ((x, y), _) in enumerate(p.box_coords(tm, tn)):
                    addr = ctile.box_address(b)
                    img[addr - ctile.base: addr - ctile.base + tile.box_bytes] = \
                        tma_load_model(c_bits, tmap, (x, y), addr)
                c_tile_bits = ctile.unpack(img)
            dt = epilogue_alpha_beta(a, p.alpha, p.beta, c_tile_bits, p.dtype)
            img = tile.pack(dt)
            for (x, y), addr in p.box_coords(tm, tn):
                d = store(d, tmap, (x, y), img, addr, window_start=tile.base)
    return d


# ------------------------------------------------------------------------------------------------
# GPU runners (cuda_src/tma_store.cu)
# ------------------------------------------------------------------------------------------------
EPI_USE_C, EPI_REDUCE_ADD, EPI_SKIP_FENCE, EPI_EXTRA_TX = 1, 2, 4, 8
EPILOGUE_BARRIERS = {0: "c_full (C tile brought in by TMA load)"}
_DT_CODE = {"float32": 0, "float16": 1, "bfloat16": 2}
_SWZ_BITS = {"none": 0, "32B": 1, "64B": 2, "128B": 3}


def run_epilogue(p: EpilogueProblem, acc, c_bits=None, d_init=None, fence: bool = True,
                 extra_tx: bool = False) -> np.ndarray:
    """Run `epilogue_tile` on the GPU: the same arguments as `epilogue_model`, the same result.

    `fence=False` leaves out fence.proxy.async.shared::cta (wrong on purpose, for notebook 05);
    `extra_tx=True` announces 16 bytes too many on the C barrier, so the bounded wait gives up
    and MbarrierTimeout is raised (needs beta != 0).
    """
    import cupy as cp

    from . import device
    from .compile import load_module
    from .runtime import launch, tensor_map_arg
    device.require("store")
    raw = D_DTYPES[p.dtype][1]
    acc = np.ascontiguousarray(acc, dtype=np.float32)
    if acc.shape != p.acc_shape:
        raise ValueError(f"acc must be {p.acc_shape} (whole tiles), got {acc.shape}")
    d0 = np.zeros(p.buffer_shape, raw) if d_init is None else np.asarray(d_init, dtype=raw)
    if d0.shape != p.buffer_shape:
        raise ValueError(f"D buffer must be {p.buffer_shape}, got {d0.shape}")
    if extra_tx and not p.use_c:
        raise ValueError("extra_tx exercises the C barrier: it needs beta != 0")
    tmap = p.tensor_map()
    d_dev = cp.asarray(d0)
    c_dev = cp.asarray(np.asarray(c_bits, dtype=raw)) if p.use_c else d_dev
    if p.use_c and c_dev.shape != p.buffer_shape:
        raise ValueError(f"C buffer must be {p.buffer_shape}, got {c_dev.shape}")
    acc_dev = cp.asarray(acc)
    flags = ((EPI_USE_C if p.use_c else 0) | (EPI_REDUCE_ADD if p.reduce_add else 0)
             | (0 if fence else EPI_SKIP_FENCE) | (EPI_EXTRA_TX if extra_tx else 0))
    t = p.tile
    mod = load_module("tma_store")
    launch(mod, "epilogue_tile", (p.tiles[1], p.tiles[0]), (128,),
           (tensor_map_arg(tmap.encode(d_dev.data.ptr)), tensor_map_arg(tmap.encode(c_dev.data.ptr)),
            acc_dev, np.uint32(p.acc_shape[1]), np.float32(p.alpha), np.float32(p.beta),
            np.uint32(flags), np.uint32(_DT_CODE[p.dtype]), np.uint32(_SWZ_BITS[p.swizzle]),
            np.uint32(p.bm), np.uint32(p.bn), np.uint32(t.box_cols), np.uint32(p.smem_offset)),
           shared_mem=p.tile_smem_bytes() + 1024, barrier_names=EPILOGUE_BARRIERS)
    return cp.asnumpy(d_dev)


def run_tma_store(gmem, tmap, coords, smem, smem_address: int = 0, window_start=None,
                  op: str = "store", fence: bool = True, gmem_offset: int = 0) -> np.ndarray:
    """One TMA store (op='store') or reduce-add (op='add') on the GPU, with the arguments of
    `tma_store_model`: threads copy the SMEM bytes in (st.shared.v4), fence, barrier, and one thread
    issues the store. Returns the whole `gmem` buffer afterwards (bytes outside the tensor
    included, so untouched bytes are checked too). On the device the buffer sits between two
    256-byte guard zones, `gmem_offset` (a multiple of 16 below 256) bytes into the first;
    RuntimeError if anything changed in a guard."""
    import cupy as cp

    from . import device
    from .compile import load_module
    from .runtime import launch, tensor_map_arg
    device.require("store")
    if op not in ("store", "add"):
        raise ValueError("op must be 'store' or 'add'")
    if op == "add" and tmap.dtype not in REDUCE_ADD_DTYPES:
        raise ValueError(f"reduce-add supports {REDUCE_ADD_DTYPES}, not {tmap.dtype}")
    addr, _, _ = _store_targets(tmap, coords, smem_address)
    start = int(smem_address if window_start is None else window_start)
    if start % 128:
        raise ValueError("window_start must be a multiple of 128")
    _window(smem, smem_address, window_start, addr)  # checks coverage
    body = np.ascontiguousarray(smem).reshape(-1).view(np.uint8)
    image = np.zeros(-(-(start + body.size) // 16) * 16, np.uint8)
    image[start:start + body.size] = body
    g = np.ascontiguousarray(gmem)
    gb = g.reshape(-1).view(np.uint8)
    if gb.size < tmap.global_extent_bytes:
        raise ValueError("gmem is smaller than the tensor the map describes")
    if gmem_offset % 16 or not 0 <= gmem_offset < 256:
        raise ValueError(f"gmem_offset must be a multiple of 16 in [0, 256), got {gmem_offset}")
    guard = np.full(256 + gmem_offset + gb.size + 256, 0xA5, np.uint8)
    lo = 256 + gmem_offset
    guard[lo:lo + gb.size] = gb
    buf_dev = cp.asarray(guard)
    g_dev = buf_dev[lo:lo + gb.size]
    img_dev = cp.asarray(image)
    c = list(int(x) for x in coords) + [0] * (5 - tmap.rank)
    mod = load_module("tma_store")
    launch(mod, "tma_store_box", (1,), (128,),
           (tensor_map_arg(tmap.encode(g_dev.data.ptr)), img_dev, np.uint32(image.size),
            np.uint32(smem_address), np.uint32(tmap.rank), *[np.int32(x) for x in c],
            np.uint32((EPI_REDUCE_ADD if op == "add" else 0) | (0 if fence else EPI_SKIP_FENCE))),
           shared_mem=image.size + 1024)
    after = cp.asnumpy(buf_dev)
    outside = np.concatenate([after[:lo], after[lo + gb.size:]])
    if np.any(outside != 0xA5):
        raise RuntimeError(f"the TMA {op} changed {int(np.sum(outside != 0xA5))} guard bytes outside "
                           "the buffer")
    return after[lo:lo + gb.size].view(g.dtype).reshape(g.shape)


def measure_store_cycles(lane_offsets, iters: int = 256) -> float:
    """Clock cycles per st.shared.v4 (per warp instruction, 4 warps sharing the SM's shared-memory
    pipe) when lane i writes at lane_offsets[i] (+ multiples of 1024, which keep the banks) within
    its warp's 16 KiB region."""
    import cupy as cp

    from . import device
    from .compile import load_module
    from .runtime import launch
    device.require("store")
    off = np.asarray(lane_offsets, dtype=np.int64)
    if off.size != 32 or off.min() < 0 or off.max() > 16384 - 16 or np.any(off % 16):
        raise ValueError("32 lane offsets, multiples of 16 in [0, 16368]")
    d_off = cp.asarray(off.astype(np.uint32))
    d_cyc = cp.zeros(1, cp.uint64)
    mod = load_module("tma_store")
    launch(mod, "smem_store_cycles", (1,), (128,), (d_off, np.uint32(iters), d_cyc),
           shared_mem=4 * 16384 + 1024)
    return float(cp.asnumpy(d_cyc)[0]) / (iters * 16 * 4)


# ------------------------------------------------------------------------------------------------
# Hardware validation: python -m bwlab.validate store --cases 500 --seed 0 --out FILE
# ------------------------------------------------------------------------------------------------
STORE_DTYPES = ("uint8", "int8", "uint16", "int16", "float16", "bfloat16", "uint32", "int32",
                "float32", "uint64", "int64", "float64")
MAX_CASE_BOX_BYTES = 32 * 1024


@dataclass
class StoreCase:
    """One TMA store (or reduce-add) to compare: the model's arguments plus where the buffer sits."""

    tmap: object
    gmem: np.ndarray
    coords: tuple
    smem: np.ndarray
    smem_address: int
    op: str = "store"
    gmem_offset: int = 0

    def model(self):
        f = tma_reduce_add_model if self.op == "add" else tma_store_model
        return f(self.gmem, self.tmap, self.coords, self.smem, self.smem_address, window_start=0)

    def run(self):
        return run_tma_store(self.gmem, self.tmap, self.coords, self.smem, self.smem_address,
                             window_start=0, op=self.op, gmem_offset=self.gmem_offset)

    def describe(self) -> str:
        t = self.tmap
        return (f"{self.op} {t.dtype} shape={t.global_shape} strides={t.global_strides} "
                f"box={t.box_shape} swz={t.swizzle} coords={self.coords} smem=0x{self.smem_address:x} "
                f"gmem+{self.gmem_offset}")

    @property
    def edge(self) -> bool:
        t = self.tmap
        return any(c + b > d for c, b, d in zip(self.coords, t.box_shape, t.global_shape))


def _finite_bits(rng, dtype: str, n: int) -> np.ndarray:
    """n random finite values of a float dtype as raw bytes (any bits for integer dtypes)."""
    from .tma import DTYPES
    eb = DTYPES[dtype][1]
    if dtype in ("float32", "float16", "bfloat16"):
        scale = 8.0 if dtype == "float16" else 2.0 ** 20
        x = (rng.standard_normal(n) * np.exp2(rng.uniform(-12, np.log2(scale), n))).astype(np.float32)
        bits = to_dtype_bits(x, dtype) if dtype != "float32" else x.view(np.uint32)
        return np.ascontiguousarray(bits).view(np.uint8)
    return rng.integers(0, 256, n * eb, dtype=np.uint8)


def random_store_case(rng, dtype: str, rank: int, swizzle: str, op: str = "store") -> StoreCase:
    """A random valid TMA store: odd shapes with padded rows, boxes inside, over the far edges or
    wholly past them, every SMEM offset mod 2048 that is a multiple of 128, base addresses at every
    multiple of 16 mod 256. Stores move random bytes (NaN patterns included); reduce-adds use
    finite values so that the float sums are defined."""
    import math

    from .tma import DTYPES, SWIZZLE_BYTES, TensorMap
    elem = DTYPES[dtype][1]
    span = SWIZZLE_BYTES[swizzle]
    max_inner = span if span else min(256 * elem, 512)
    inner_bytes = 16 * int(rng.integers(1, max_inner // 16 + 1))
    box = [inner_bytes // elem]
    row_bytes = max(inner_bytes, span)  # the SMEM footprint of a row (smem_box_pitch)
    budget = int(np.exp(rng.uniform(np.log(row_bytes), np.log(MAX_CASE_BOX_BYTES))))
    for _ in range(1, rank):
        room = max(1, budget // (row_bytes * math.prod(box[1:])))
        box.append(int(rng.integers(1, min(room, 256) + 1)) if rng.random() < 0.9 else 1)
    shape = [int(rng.integers(1, max(2, min(2 * b + 7, 600 if i == 0 else 300)) + 1))
             for i, b in enumerate(box)]
    while math.prod(shape) * elem > (1 << 20):
        k = int(np.argmax(shape))
        shape[k] = max(1, shape[k] // 2)
    strides, pitch = [], -(-shape[0] * elem // 16) * 16 + 16 * int(rng.integers(0, 3))
    for i in range(1, rank):
        strides.append(pitch)
        pitch = pitch * shape[i] + 16 * int(rng.integers(0, 2))
    tmap = TensorMap(dtype, shape, box, global_strides=strides, swizzle=swizzle)
    coords = []
    inside = rng.random() < 0.35
    for i in range(rank):
        q = 16 // elem if i == 0 else 1  # dimension 0 starts on a 16-byte boundary
        r = 0.0 if inside else rng.random()
        if r < 0.35 or shape[i] <= 1:
            c = int(rng.integers(0, max(1, shape[i] - box[i] + 1)))
        elif r < 0.93:
            c = int(rng.integers(max(0, shape[i] - box[i]), shape[i]))  # over the far edge
        else:
            c = int(rng.integers(shape[i], shape[i] + 8))  # wholly outside: writes nothing
        coords.append(c // q * q)
    smem_address = 128 * int(rng.integers(0, 16))
    win = -(-(smem_address + smem_box_footprint(tmap)) // 128) * 128
    n_gmem = tmap.global_extent_bytes + 64  # 64 bytes after the tensor must stay untouched
    if op == "add":
        smem = _finite_bits(rng, dtype, win // elem)
        gmem = _finite_bits(rng, dtype, -(-n_gmem // elem))
    else:
        smem = rng.integers(0, 256, win, dtype=np.uint8)
        gmem = rng.integers(0, 256, n_gmem, dtype=np.uint8)
    return StoreCase(tmap, gmem, tuple(coords), smem, smem_address, op,
                     gmem_offset=16 * int(rng.integers(0, 16)))


def random_store_cases(n: int, seed: int = 0, op: str = "store"):
    rng = np.random.default_rng(seed)
    dts = STORE_DTYPES if op == "store" else REDUCE_ADD_DTYPES
    # Ranks 1-5. (Rank 1 was once left out: TensorMap.encode passed an empty stride list that
    # cuda-bindings turned into NULL, which the driver refused; bwlab.tma fixed that.)
    combos = [(d, r, s) for d in dts for r in range(1, 6) for s in ("none", "32B", "64B", "128B")]
    order = rng.permutation(len(combos))
    return [random_store_case(rng, *combos[order[i % len(combos)]], op=op) for i in range(n)]


def random_epilogue_problem(rng) -> EpilogueProblem:
    """A random epilogue: any D dtype and swizzle, tiles of 8..128 rows, sizes that leave partial
    tiles at the far edges, padded row pitches, with or without C, store or reduce-add."""
    dtype = str(rng.choice(list(D_DTYPES)))
    eb = D_DTYPES[dtype][0]
    swizzle = str(rng.choice(["none", "32B", "64B", "128B"]))
    if swizzle == "none":
        bn = int(rng.choice([64, 128, 256])) // eb  # one box spanning the whole tile row
    else:
        bn = (SWIZZLES[swizzle].span // 8 // eb) * int(rng.integers(1, 5))
    bm = int(rng.choice([8, 16, 32, 64, 96, 128]))  # x 32..128-byte box rows: 128-byte multiples
    M = int(rng.integers(1, 3 * bm + 1))
    N = int(rng.integers(1, 3 * bn + 1))
    reduce_add = bool(rng.random() < 0.25)
    beta = 0.0 if reduce_add or rng.random() < 0.4 else float(rng.choice([0.5, -1.0, 1.25, 3.0]))
    alpha = float(rng.choice([1.0, -0.75, 2.5, 0.1]))
    ld = None
    if rng.random() < 0.5:
        ld = -(-(N + int(rng.integers(1, 20))) * eb // 16) * 16 // eb
    return EpilogueProblem(M, N, dtype, bm=bm, bn=bn, swizzle=swizzle, alpha=alpha, beta=beta,
                           reduce_add=reduce_add, smem_offset=128 * int(rng.integers(0, 8)), ld=ld)


# A fault on the GPU (illegal instruction, misaligned address) poisons the CUDA context for the rest
# of the process, so the cases run in child processes (python -m bwlab.epilogue cases ...): a child
# stops at the first fault, reports it against the case that caused it, and the parent starts a new
# child for the cases after it.
_FAULT_MARKERS = ("cudaError", "CUDA_ERROR", "CUDARuntimeError", "CUDADriverError")


def _is_fault(e: Exception) -> bool:
    text = f"{type(e).__name__}: {e}"
    return any(m in text for m in _FAULT_MARKERS)


def _child_cases(kind: str, seed: int, count: int):
    if kind == "store":
        return random_store_cases(count, seed, "store")
    if kind == "add":
        return random_store_cases(count, seed + 1, "add")
    rng = np.random.default_rng(seed + 2)
    out = []
    for _ in range(count):
        p = random_epilogue_problem(rng)
        out.append((p, *p.random_inputs(rng)))
    return out


def _child_main(argv) -> int:
    """python -m bwlab.epilogue cases --kind store|add|epilogue --seed S --count N --indices i,j,..
    One JSON line per case: exact / mismatch / refused (the driver would not encode the map) / fault."""
    import argparse
    import json
    ap = argparse.ArgumentParser(prog="python -m bwlab.epilogue cases")
    ap.add_argument("--kind", required=True, choices=["store", "add", "epilogue", "extras"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=0)
    ap.add_argument("--indices", default="")
    ap.add_argument("--fence-repeats", type=int, default=30)
    a = ap.parse_args(argv)
    if a.kind == "extras":
        return _extras(a.seed, a.fence_repeats)
    cases = _child_cases(a.kind, a.seed, a.count)
    for i in [int(x) for x in a.indices.split(",") if x]:
        try:
            if a.kind == "epilogue":
                p, acc, c, d0 = cases[i]
                ok = np.array_equal(run_epilogue(p, acc, c, d0), epilogue_model(p, acc, c, d0))
                detail = "" if ok else "D buffer differs"
            else:
                c = cases[i]
                got, want = c.run(), c.model()
                diff = np.flatnonzero(got.view(np.uint8).reshape(-1) != want.view(np.uint8).reshape(-1))
                ok = diff.size == 0
                detail = "" if ok else f"{diff.size} bytes differ, first at byte {int(diff[0])}"
            rec = {"i": i, "status": "exact" if ok else "mismatch", "detail": detail}
        except RuntimeError as e:
            if "cuTensorMapEncodeTiled" in str(e):  # a host-side refusal: the context is fine
                rec = {"i": i, "status": "refused", "detail": f"{type(e).__name__}: {e}"}
            elif _is_fault(e):
                print(json.dumps({"i": i, "status": "fault", "detail": f"{type(e).__name__}: {e}"}), flush=True)
                return 3
            else:
                rec = {"i": i, "status": "error", "detail": f"{type(e).__name__}: {e}"}
        except Exception as e:  # noqa: BLE001 - reported, counted as a failure
            if _is_fault(e):
                print(json.dumps({"i": i, "status": "fault", "detail": f"{type(e).__name__}: {e}"}), flush=True)
                return 3
            rec = {"i": i, "status": "error", "detail": f"{type(e).__name__}: {e}"}
        print(json.dumps(rec), flush=True)
    return 0


def _run_child(args, timeout=240):
    import json
    import subprocess
    import sys
    try:
        r = subprocess.run([sys.executable, "-m", "bwlab.epilogue", "cases", *args], capture_output=True,
                           text=True, timeout=timeout)
        out, err, rc = r.stdout, r.stderr, r.returncode
    except subprocess.TimeoutExpired as e:
        out, err, rc = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), "timeout", -1
    recs = []
    for line in out.splitlines():
        if line.startswith("{"):
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass
    tail = [x for x in err.strip().splitlines() if x.strip()]
    return recs, rc, (tail[-1] if tail else "")


def _run_kind(kind: str, count: int, seed: int, batch: int = 100, max_faults: int = 20) -> dict:
    """Every case of one kind, in children; returns {index: record}."""
    results, pending, faults = {}, list(range(count)), 0
    while pending:
        chunk = pending[:batch]
        recs, rc, last = _run_child(["--kind", kind, "--seed", str(seed), "--count", str(count),
                                     "--indices", ",".join(map(str, chunk))])
        for r in recs:
            results[r["i"]] = r
            faults += r["status"] == "fault"
        done = [i for i in chunk if i in results]
        if rc != 0 and len(done) < len(chunk) and not any(results[i]["status"] == "fault" for i in done):
            # died without naming a case: blame the first case it did not finish
            k = next(i for i in chunk if i not in results)
            results[k] = {"i": k, "status": "fault", "detail": f"child exited {rc}: {last}"}
            faults += 1
        pending = [i for i in pending if i not in results]
        if faults >= max_faults:
            for i in pending:
                results[i] = {"i": i, "status": "not run", "detail": f"stopped after {faults} faults"}
            break
    return results


def _report_kind(label, cases_desc, results, say) -> int:
    from collections import Counter
    st = Counter(r["status"] for r in results.values())
    shown = 0
    for i in sorted(results):
        r = results[i]
        if r["status"] != "exact" and shown < 25:
            say(f"  {label} case {i} {r['status']}: {r['detail']} :: {cases_desc(i)}")
            shown += 1
    run = len(results) - st.get("refused", 0)
    bad = run - st.get("exact", 0)
    say(f"{label}: {st.get('exact', 0)}/{run} run cases bit-exact; {dict(sorted(st.items()))}")
    if st.get("refused"):
        say(f"  ({st['refused']} generated tensor maps were refused by cuTensorMapEncodeTiled and not run)")
    return bad


def _extras(seed: int, fence_repeats: int) -> int:
    """Bounded wait, tf32 probe, the epilogue without the fence: printed as report lines."""
    import dataclasses
    import json
    import time

    from .runtime import MbarrierTimeout
    from .tma import _tf32_round

    fails = 0

    def say(s):
        print(json.dumps({"line": s}), flush=True)

    rng = np.random.default_rng(seed + 5)
    p = EpilogueProblem(64, 64, "float32", bm=64, bn=32, swizzle="128B", beta=1.0)
    acc, c, d0 = p.random_inputs(rng)
    t0 = time.perf_counter()
    try:
        run_epilogue(p, acc, c, d0, extra_tx=True)
        say("bounded wait: NO MbarrierTimeout with a wrong expect_tx (failure)")
        fails += 1
    except MbarrierTimeout as e:
        dt = time.perf_counter() - t0
        say(f"bounded wait: expect_tx 16 bytes too high on the C barrier -> MbarrierTimeout after "
            f"{dt:.3f} s (barrier '{e.barrier}', expected {e.expected_tx} B)")
        fails += dt > 1.0
    ok = np.array_equal(run_epilogue(p, acc, c, d0), epilogue_model(p, acc, c, d0))
    fails += not ok
    say(f"  next launch in the same process: {'exact' if ok else 'MISMATCH'}")

    raw_hits = rounded_hits = 0
    probes = [c for c in random_store_cases(48, seed + 4, "store") if c.tmap.elem_bytes == 4][:12]
    for c in probes:
        t32 = dataclasses.replace(c.tmap, dtype="tf32")
        try:
            got = run_tma_store(c.gmem, t32, c.coords, c.smem, c.smem_address, window_start=0)
        except RuntimeError as e:
            if _is_fault(e) and "cuTensorMapEncodeTiled" not in str(e):
                raise
            continue
        t_u = dataclasses.replace(c.tmap, dtype="uint32")
        raw = tma_store_model(c.gmem, t_u, c.coords, c.smem, c.smem_address, window_start=0)
        rounded = _tf32_round(np.ascontiguousarray(c.smem).view("<u4")).view(np.uint8)
        rnd = tma_store_model(c.gmem, t_u, c.coords, rounded, c.smem_address, window_start=0)
        raw_hits += np.array_equal(got, raw)
        rounded_hits += np.array_equal(got, rnd)
    say(f"tf32 probe ({len(probes)} stores of random bits through a TFLOAT32 map): GMEM equals the raw "
        f"SMEM bits in {raw_hits}, the tf32-rounded bits in {rounded_hits} (observation; the model "
        "refuses tf32 stores)")

    p = EpilogueProblem(2048, 2048, "float32", bm=128, bn=32, swizzle="128B", alpha=1.0)
    acc, _, d0 = p.random_inputs(np.random.default_rng(seed + 3))
    want = epilogue_model(p, acc, None, d0)
    for fence in (True, False):
        bad_runs = bad_elems = 0
        for _ in range(fence_repeats):
            got = run_epilogue(p, acc, None, d0, fence=fence)
            n = int(np.sum(got != want))
            bad_runs += n > 0
            bad_elems += n
        say(f"{'with' if fence else 'WITHOUT'} fence.proxy.async: {bad_runs}/{fence_repeats} runs of a "
            f"{p.M}x{p.N} {p.dtype} epilogue ({p.tiles[0] * p.tiles[1]} CTAs) differed from the model "
            f"({bad_elems} elements in all)")
        if fence:
            fails += bad_runs > 0
    say("  (the run without the fence is an observation on this GPU and this kernel, not a guarantee "
        "either way)")
    print(json.dumps({"fails": int(fails)}), flush=True)
    return 0


def validate_main(argv=None) -> int:
    import argparse
    import time
    from collections import Counter

    from . import device
    ap = argparse.ArgumentParser(prog="python -m bwlab.validate store",
                                 description="TMA stores, reduce-adds and whole epilogues on the GPU, "
                                             "GMEM compared byte for byte with bwlab.epilogue's model")
    ap.add_argument("--cases", type=int, default=500, help="random TMA stores")
    ap.add_argument("--reduce-cases", type=int, default=120, help="random TMA reduce-adds")
    ap.add_argument("--epilogue-cases", type=int, default=60, help="random whole epilogues")
    ap.add_argument("--fence-repeats", type=int, default=30,
                    help="runs of a 2048 x 2048 epilogue with and without the proxy fence")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args(argv)
    say = Report()

    say(device.banner(print_it=False))
    if device.tier("store") != "hardware":
        say("the TMA store needs an sm_90+ GPU: nothing to validate here")
        return 1
    total_fail = 0
    by = lambda cs, f: dict(sorted(Counter(f(c) for c in cs).items()))  # noqa: E731
    say("each kind runs in child processes: a GPU fault is reported against its case and the "
        "cases after it run in a fresh process")

    t0 = time.perf_counter()
    cases = random_store_cases(args.cases, args.seed, "store")
    res = _run_kind("store", args.cases, args.seed)
    total_fail += _report_kind("TMA store", lambda i: cases[i].describe(), res, say)
    say(f"  compared: the whole GMEM buffer (tensor, row padding, 64 bytes after it) plus 256-byte "
        f"guards on each side; {time.perf_counter() - t0:.1f} s")
    say(f"  dtypes: {by(cases, lambda c: c.tmap.dtype)}")
    say(f"  ranks: {by(cases, lambda c: c.tmap.rank)}; swizzles: {by(cases, lambda c: c.tmap.swizzle)}")
    say(f"  SMEM address mod 1024: {by(cases, lambda c: c.smem_address % 1024)}")
    say(f"  edge boxes (over the far edge or wholly outside): {sum(c.edge for c in cases)}; rows not a "
        f"multiple of 16 bytes: {sum((c.tmap.global_shape[0] * c.tmap.elem_bytes) % 16 != 0 for c in cases)}; "
        f"base address offsets mod 256: {len(by(cases, lambda c: c.gmem_offset))} distinct")

    t0 = time.perf_counter()
    rcases = random_store_cases(args.reduce_cases, args.seed + 1, "add")
    res = _run_kind("add", args.reduce_cases, args.seed)
    total_fail += _report_kind("TMA reduce-add", lambda i: rcases[i].describe(), res, say)
    say(f"  dtypes {by(rcases, lambda c: c.tmap.dtype)}; edge boxes {sum(c.edge for c in rcases)}; "
        f"{time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    probs = [x[0] for x in _child_cases("epilogue", args.seed, args.epilogue_cases)]
    res = _run_kind("epilogue", args.epilogue_cases, args.seed)
    say("whole epilogues: acc -> st.shared.v4 -> fence -> TMA store / reduce-add, C by TMA load:")
    total_fail += _report_kind("epilogue", lambda i: repr(probs[i]), res, say)
    say(f"  dtypes {by(probs, lambda p: p.dtype)}; swizzles {by(probs, lambda p: p.swizzle)}; "
        f"with C {sum(p.use_c for p in probs)}; reduce-add {sum(p.reduce_add for p in probs)}; "
        f"edge tiles in {sum(p.M % p.bm != 0 or p.N % p.bn != 0 for p in probs)} problems; "
        f"{time.perf_counter() - t0:.1f} s")

    recs, rc, last = _run_child(["--kind", "extras", "--seed", str(args.seed),
                                 "--fence-repeats", str(args.fence_repeats)], timeout=400)
    got_fails = None
    for r in recs:
        if "line" in r:
            say(r["line"])
        elif "fails" in r:
            got_fails = r["fails"]
    if got_fails is None:
        say(f"extras (bounded wait, tf32 probe, fence experiment) did not finish: exit {rc}: {last}")
        total_fail += 1
    else:
        total_fail += got_fails
    say(f"result: {'PASS' if total_fail == 0 else f'{total_fail} FAILURE(S)'}")
    say.save(args.out)
    return 0 if total_fail == 0 else 1


# ------------------------------------------------------------------------------------------------
# Benchmark: python -m bwlab.bench tma_store --out FILE
# ------------------------------------------------------------------------------------------------
def bank_patterns():
    """Named st.shared.v4 lane-address patterns (one warp, offsets from a 1024-aligned base) with
    the model's wavefront count: what notebook 05 and the benchmark compare."""
    pats = {}
    for name, tile, mapping in (
            ("row_per_thread, fp32 32 cols, no swizzle", SmemTile(32, 32, "float32", "none"), "row_per_thread"),
            ("row_per_thread, fp32 32 cols, 128B swizzle", SmemTile(32, 32, "float32", "128B"), "row_per_thread"),
            ("row_per_thread, bf16 64 cols, 64B swizzle", SmemTile(32, 64, "bfloat16", "64B"), "row_per_thread"),
            ("chunk_per_thread, fp32 32 cols, no swizzle", SmemTile(32, 32, "float32", "none"), "chunk_per_thread")):
        plan = RegisterStorePlan(tile, mapping, 0)
        pats[name] = plan.addresses[0]
    for stride in (16, 32, 64, 128):
        pats[f"lane stride {stride} B"] = np.arange(32) * stride
    return {k: (v, wavefronts(v).wavefronts) for k, v in pats.items()}


def bench_main(argv=None) -> int:
    import argparse

    import cupy as cp

    from . import device
    from .compile import load_module
    from .runtime import bench, launch, tensor_map_arg
    from .tma import TensorMap
    ap = argparse.ArgumentParser(prog="python -m bwlab.bench tma_store",
                                 description="TMA store bandwidth vs st.global.v4 and cupy, same run")
    ap.add_argument("--rows", type=int, default=8192)
    ap.add_argument("--cols", type=int, default=8192)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    say = Report()

    say(device.banner(print_it=False))
    if device.tier("store") != "hardware":
        say("needs an sm_90+ GPU")
        return 1
    info = device.gpu_info()
    R, C = args.rows, args.cols
    nbytes = R * C * 4
    say(f"GPU {info.name}, {info.sm_count} SMs; D = {R} x {C} float32 = {nbytes / 2**20:.0f} MiB; "
        f"CUDA events, {args.warmup} warm-up, median of {args.repeat}")
    mod = load_module("tma_store")
    dst = cp.empty((R, C), cp.float32)
    src = cp.ones((R, C), cp.float32)
    rows = []

    def run(name, fn, moved):
        r = bench(name, fn, args.warmup, args.repeat, moved)
        rows.append(r)
        say(r.row())

    # TMA store: every CTA stores one 32 KiB box (32 fp32 x 256 rows, 128B swizzle) over and over.
    box_w, box_h = 32, 256
    tmap = TensorMap("float32", (C, R), (box_w, box_h), swizzle="128B")
    arg = tensor_map_arg(tmap.encode(dst.data.ptr))
    boxes_x, boxes_total = C // box_w, (C // box_w) * (R // box_h)
    smem = tmap.box_bytes + 1024
    for per_sm in (1, 2, 4):
        grid = info.sm_count * per_sm
        a = (arg, np.uint32(tmap.box_bytes), np.uint32(box_w), np.uint32(box_h), np.uint32(boxes_x),
             np.uint32(boxes_total))
        launch(mod, "tma_store_stream", (grid,), (128,), a, shared_mem=smem)
        fn = mod.get_function("tma_store_stream")
        run(f"TMA store, {per_sm} CTA/SM ({grid} CTAs)",
            lambda fn=fn, grid=grid, a=a: fn((grid,), (128,), a, shared_mem=smem), nbytes)
    ok = bool(cp.all(dst.view(cp.uint32)[0, 4:8] == cp.asarray([1, 0, 0x3F800000, 1 ^ 0x5A5A5A5A],
                                                                cp.uint32)))
    say(f"  (check: the first box row holds what the kernel wrote: {ok})")
    fn = mod.get_function("st_global_stream")
    n16 = np.uint64(nbytes // 16)
    for per_sm in (4, 8):
        grid = info.sm_count * per_sm
        run(f"st.global.v4, {per_sm} x 256-thread CTAs/SM", lambda grid=grid: fn((grid,), (256,), (dst, n16)),
            nbytes)
    run("cupy fill (write only)", lambda: dst.fill(0.0), nbytes)
    run("cupy copy (read + write, bytes counted twice)", lambda: cp.copyto(dst, src), 2 * nbytes)
    # A whole epilogue: acc read from GMEM (what tcgen05.ld would hold), D written by TMA store.
    for dtype, bn in (("float32", 32), ("bfloat16", 64)):
        p = EpilogueProblem(R, C, dtype, bm=128, bn=bn, swizzle="128B", alpha=1.0)
        acc = cp.ones(p.acc_shape, cp.float32)
        d = cp.zeros(p.buffer_shape, cp.uint32 if dtype == "float32" else cp.uint16)
        tm = p.tensor_map()
        a = (tensor_map_arg(tm.encode(d.data.ptr)), tensor_map_arg(tm.encode(d.data.ptr)), acc,
             np.uint32(p.acc_shape[1]), np.float32(1.0), np.float32(0.0), np.uint32(0),
             np.uint32(_DT_CODE[dtype]), np.uint32(3), np.uint32(p.bm), np.uint32(p.bn),
             np.uint32(p.tile.box_cols), np.uint32(0))
        g = (p.tiles[1], p.tiles[0])
        launch(mod, "epilogue_tile", g, (128,), a, shared_mem=p.tile_smem_bytes() + 1024,
               barrier_names=EPILOGUE_BARRIERS)
        fe = mod.get_function("epilogue_tile")
        moved = R * C * 4 + R * C * D_DTYPES[dtype][0]
        run(f"epilogue_tile {dtype} D (acc read + D write)",
            lambda fe=fe, g=g, a=a, p=p: fe(g, (128,), a, shared_mem=p.tile_smem_bytes() + 1024), moved)
    say("")
    say("st.shared.v4 cost per warp instruction (4 warps, clock64), beside the bank model:")
    for name, (addr, fronts) in bank_patterns().items():
        cyc = measure_store_cycles(addr)
        say(f"  {name:<46s} model {fronts:3d} wavefronts   measured {cyc:6.2f} cycles")
    say.save(args.out)
    return 0


# ------------------------------------------------------------------------------------------------
# Pictures for notebook 05
# ------------------------------------------------------------------------------------------------
def plot_bank_phases(plan: RegisterStorePlan, step: int = 0, ax=None):
    """One st.shared.v4 of `plan`: a row per phase (8 lanes), a column per bank. A bank one lane
    uses is drawn in that lane's colour; a bank that must serve several different words in one
    phase is red with the number of words (that many wavefronts for the phase)."""
    import matplotlib.pyplot as plt

    from .plotting import BYTE_COLORS, add_legend, draw_grid, thread_color
    rep = plan.report(step)
    colors = np.full((4, SMEM_BANKS), BYTE_COLORS["untouched"], dtype=object)
    text = np.full((4, SMEM_BANKS), "", dtype=object)
    for p, lanes in enumerate(rep.phases):
        for lane in lanes:
            a = int(plan.addresses[step, lane])
            if a < 0:
                continue
            for w in range(4):
                bank = (a // 4 + w) % SMEM_BANKS
                if rep.words_per_bank[p, bank] > 1:
                    colors[p, bank] = BYTE_COLORS["mismatch"]
                    text[p, bank] = str(int(rep.words_per_bank[p, bank]))
                else:
                    colors[p, bank] = thread_color(lane)
                    text[p, bank] = str(lane)
    if ax is None:
        _, ax = plt.subplots(figsize=(12, 2.2))
    t = plan.tile
    draw_grid(ax, colors, text, fontsize=6,
              title=(f"st.shared.v4 step {step}, {plan.mapping}, {t.dtype} rows of {t.box_row_bytes} B, "
                     f"swizzle {t.swizzle}: {rep.wavefronts} wavefronts (conflict-free: {rep.ideal})"),
              xlabel="bank", ylabel="phase (8 lanes)", xticks=list(range(SMEM_BANKS)),
              yticks=[f"lanes {8 * p}-{8 * p + 7}" for p in range(4)])
    add_legend(ax, [("bank used by one lane (number = lane)", thread_color(3)),
                    ("bank asked for N different words (N = wavefronts)", BYTE_COLORS["mismatch"]),
                    ("bank idle", BYTE_COLORS["untouched"])], title="per phase")
    return ax


def plot_writer_map(plan: RegisterStorePlan, lines: int = 16, ax=None):
    """The warp's part of the SMEM tile in address order, 128 bytes (8 chunks of 16 B) per line:
    each chunk coloured by the lane that writes it, labelled lane/step."""
    import matplotlib.pyplot as plt

    from .plotting import BYTE_COLORS, add_legend, draw_grid, thread_color
    t = plan.tile
    first = int(plan.addresses[plan.addresses >= 0].min()) // 128 * 128
    colors = np.full((lines, 8), BYTE_COLORS["untouched"], dtype=object)
    text = np.full((lines, 8), "", dtype=object)
    for k in range(plan.steps):
        for lane in range(WARP):
            a = int(plan.addresses[k, lane])
            r, c = divmod(a - first, 128)
            if a >= 0 and 0 <= r < lines:
                colors[r, c // 16] = thread_color(lane)
                text[r, c // 16] = f"t{lane}/s{k}"
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 0.32 * lines + 1))
    draw_grid(ax, colors, text, fontsize=6,
              title=f"who writes which 16 B: {plan.mapping}, swizzle {t.swizzle}",
              xlabel="16-byte chunk in the 128-byte line (banks 4c..4c+3)",
              ylabel="SMEM line (128 B)", xticks=list(range(8)),
              yticks=[f"+{first - t.base + 128 * i}" for i in range(lines)])
    add_legend(ax, [(f"lane {i}", thread_color(i)) for i in (0, 1, 2, 3, 7)] +
               [("not written by this warp", BYTE_COLORS["untouched"])], title="tN/sK = lane N, step K")
    return ax


def store_coverage(p: EpilogueProblem) -> np.ndarray:
    """(M + 1, ld) array: the index of the tile (CTA) whose TMA stores write each element, -1 where
    nothing is written. Computed from `tma_store_writes`, i.e. from the store model itself."""
    cov = -np.ones(p.buffer_shape, np.int64)
    tmap = p.tensor_map()
    tile = p.tile
    eb = p.elem_bytes
    for tm in range(p.tiles[0]):
        for tn in range(p.tiles[1]):
            for (x, y), addr in p.box_coords(tm, tn):
                off, _ = tma_store_writes(tmap, (x, y), np.zeros(tile.nbytes, np.uint8), addr,
                                          window_start=tile.base)
                cov.reshape(-1)[np.unique(off // eb)] = tm * p.tiles[1] + tn
    return cov


def plot_edge_tiles(p: EpilogueProblem, ax=None):
    """The D buffer element by element: coloured by the CTA whose store writes it, grey where no
    store writes (row padding, guard row); dashed outlines are the full tiles, which hang over the
    matrix's far edges."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from .plotting import BYTE_COLORS, add_legend, cta_color, draw_grid
    cov = store_coverage(p)
    colors = np.where(cov >= 0, np.vectorize(cta_color, otypes=[object])(np.maximum(cov, 0)),
                      BYTE_COLORS["untouched"])
    if ax is None:
        _, ax = plt.subplots(figsize=(0.28 * p.ld + 3, 0.28 * (p.M + 1) + 1))
    draw_grid(ax, colors, title=(f"TMA stores of a {p.M} x {p.N} D ({p.bm} x {p.bn} tiles, ld {p.ld}): "
                                 "out-of-bounds elements are not written"),
              xlabel="column", ylabel="row")
    for tm in range(p.tiles[0]):
        for tn in range(p.tiles[1]):
            ax.add_patch(Rectangle((tn * p.bn - 0.5, tm * p.bm - 0.5), p.bn, p.bm, fill=False,
                                   ls="--", lw=1.2, ec="black"))
    ax.set_xlim(-0.5, max(p.ld, p.tiles[1] * p.bn) - 0.5)
    ax.set_ylim(max(p.M + 1, p.tiles[0] * p.bm) - 0.5, -0.5)
    n = p.tiles[0] * p.tiles[1]
    add_legend(ax, [(f"written by CTA {i}", cta_color(i)) for i in range(min(n, 8))] +
               [("never written (padding, guard row)", BYTE_COLORS["untouched"]),
                ("tile outline (dashed)", "white")])
    return ax


if __name__ == "__main__":
    import sys as _sys
    if len(_sys.argv) > 1 and _sys.argv[1] == "cases":
        raise SystemExit(_child_main(_sys.argv[2:]))
    print("usage: python -m bwlab.epilogue cases --kind store|add|epilogue|extras ...")
    raise SystemExit(2)
