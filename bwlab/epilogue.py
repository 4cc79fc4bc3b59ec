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
   inverse of the TMA load; elements of the box outside the tensor are not written
   (`tma_store_model`), and ``cp.reduce.async.bulk.tensor ... .add`` adds instead of writing
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

from .swizzle import SWIZZLES, swizzle_of

__all__ = [
    "D_DTYPES", "SmemTile", "RegisterStorePlan", "BankReport", "wavefronts", "smem_bank",
    "OrderingError", "BulkAsyncGroups", "EpilogueOrdering", "epilogue_alpha_beta",
    "to_dtype_bits", "from_dtype_bits", "PROXY_FENCE_RULE", "BANK_RULE",
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
