"""The epilogue's cases, speaking `bwlab.case`'s verbs: `model()`, `run()`, `check(got=None)`, `show()`.

* `TmaStore(gmem, tmap, coords, smem, smem_address=0, op='store'|'reduce_add')` — one TMA store or
  reduce-add; the result is the whole GMEM buffer.
* `Epilogue(problem, acc, c_bits=None, d_init=None)` — a whole epilogue; the result is the D buffer.

`check` names the first differing GMEM element by its coordinates in the tensor, says whether it
lies inside the tensor or in its padding, which 16-byte store granule of its row it is in, and
gives a hint naming the rule most likely broken.
"""
from __future__ import annotations

import numpy as np

from ..case import Case, CheckResult, Mismatch, compare, digest
from ..hw.dtypes import element_type
from ..util import round_up
from .model import epilogue_model
from .problem import EpilogueProblem
from .rules import STORE_GRANULE, raw_dtype
from .store import store_op, granule_of, tma_store_model

__all__ = ["TmaStore", "Epilogue", "describe_gmem_byte", "run_teach"]

GRANULE_HINT = ("a TMA store writes dimension 0 in whole 16-byte granules: padding that shares the "
                "granule holding a row's last element is written too (STORE_GRANULE), and nothing "
                "past that granule is")
FENCE_HINT = ("the stored value is not what SMEM held: did every thread that wrote the tile execute "
              "fence.proxy.async.shared::cta and then a barrier before the store was issued? Without "
              "it the TMA engine (async proxy) may read stale SMEM (PROXY_FENCE_RULE)")
NOT_WRITTEN_HINT = ("this element kept its old value: was the store issued at these coordinates, "
                    "committed, and waited for (cp.async.bulk.wait_group, not only .read) before GMEM "
                    "was read?")


def _swizzle_hint(swizzle: str) -> str:
    return (f"the value belongs to another 16-byte chunk of the SMEM tile: the TMA engine reads the "
            f"box through the {swizzle} swizzle of the SMEM address, so the threads must write the "
            "tile through the same swizzle (and a swizzled box narrower than its span takes one "
            "span per row: smem_box_pitch)")


def describe_gmem_byte(tmap, byte_offset: int) -> str:
    """GMEM byte `byte_offset` (from the tensor's base) in the store's words."""
    info = granule_of(tmap, byte_offset)
    if info["coords"] is None:
        return f"GMEM byte {byte_offset}, past the tensor's last element"
    c = info["coords"]
    names = "xyzwv"[:len(c)]
    coords = ", ".join(f"{n}={v}" for n, v in zip(names, c))
    lo, hi = info["granule_bytes"]
    gran = f"16-byte store granule {info['granule']} of its row (row bytes {lo}..{hi})"
    if info["inside"]:
        where = "inside the tensor"
    elif info["written_by_granule"]:
        where = "outside the tensor (row padding sharing the last granule of the row)"
    else:
        where = "outside the tensor"
    return f"element ({coords}) {where}, {gran}"


def _elements(buf, elem: int):
    """A buffer's bytes as raw elements of `elem` bytes when they divide it, else as bytes."""
    b = np.ascontiguousarray(buf).reshape(-1).view(np.uint8)
    if b.size % elem == 0:
        return b.view(f"u{elem}"), elem
    return b, 1


class TmaStore(Case):
    """One TMA store (``op='store'``) or reduce-add (``op='reduce_add'``) of the box at `coords` from
    SMEM bytes `smem` at `smem_address`, into the whole GMEM buffer `gmem` (tensor base at byte 0).

    `window_start` says which SMEM address `smem[0]` sits at (default `smem_address`);
    `gmem_offset` moves the buffer on the GPU (0..240, multiple of 16) to vary its alignment.
    """

    stage = "store"

    def __init__(self, gmem, tmap, coords, smem, smem_address: int = 0, op: str = "store",
                 window_start=None, gmem_offset: int = 0, kernel=None):
        if kernel is not None:
            raise ValueError("the stage's teaching kernel (teach_store.cu) is a whole epilogue: build an "
                             "Epilogue with kernel= (E.teach_case()); TmaStore runs the harness")
        self.gmem, self.tmap, self.coords = gmem, tmap, tuple(int(c) for c in coords)
        self.smem, self.smem_address = smem, int(smem_address)
        self.op, self.window_start, self.gmem_offset = store_op(op), window_start, int(gmem_offset)

    @property
    def what(self) -> str:
        return "TMA reduce-add" if self.op == "reduce_add" else "TMA store"

    def identity(self):
        t = self.tmap
        return ("tma-store", t.dtype, t.global_shape, t.box_shape, t.global_strides, t.swizzle, self.coords,
                self.smem_address, self.op, self.window_start, self.gmem_offset, digest(self.gmem, self.smem))

    def model(self) -> np.ndarray:
        return tma_store_model(self.gmem, self.tmap, self.coords, self.smem, self.smem_address,
                               self.window_start, op=self.op)

    def run(self) -> np.ndarray:
        from .runner import run_tma_store
        return run_tma_store(self.gmem, self.tmap, self.coords, self.smem, self.smem_address,
                             self.window_start, op=self.op, gmem_offset=self.gmem_offset)

    def show(self, ax=None):
        from .pictures import plot_store_box
        return plot_store_box(self.tmap, self.coords, ax=ax)

    @property
    def edge(self) -> bool:
        """The box hangs over the tensor's far edge (or lies wholly past it)."""
        t = self.tmap
        return any(c + b > d for c, b, d in zip(self.coords, t.box_shape, t.global_shape))

    def describe(self) -> str:
        t = self.tmap
        op = "add" if self.op == "reduce_add" else "store"
        return (f"{op} {t.dtype} shape={t.global_shape} strides={t.global_strides} "
                f"box={t.box_shape} swz={t.swizzle} coords={self.coords} smem=0x{self.smem_address:x} "
                f"gmem+{self.gmem_offset}")

    def _hint(self, m: Mismatch, elem: int, e: np.ndarray, g: np.ndarray, old: np.ndarray) -> str:
        (i,) = m.index
        info = granule_of(self.tmap, i * elem)
        if not info["inside"]:
            return GRANULE_HINT
        if g[i] == old[i] and e[i] != old[i]:
            return NOT_WRITTEN_HINT
        smem, _ = _elements(self.smem, elem)
        if self.tmap.swizzle != "none" and np.any(smem == g[i]):
            return _swizzle_hint(self.tmap.swizzle)
        return FENCE_HINT

    def compare(self, expected, got, source: str = "") -> CheckResult:
        elem = element_type(self.tmap.dtype).bytes
        e, unit = _elements(expected, elem)
        g, _ = _elements(got, elem)
        old, _ = _elements(self.gmem, elem)
        if e.shape != g.shape:
            return compare(np.asarray(expected), np.asarray(got), stage=self.stage, what=self.what,
                           source=source)
        return compare(e, g, stage=self.stage, what=self.what, source=source,
                       unit="element" if unit > 1 else "byte", hex_digits=2 * unit,
                       where=lambda idx: describe_gmem_byte(self.tmap, idx[0] * unit),
                       hint=lambda m: self._hint(m, unit, e, g, old))


class Epilogue(Case):
    """A whole epilogue: D = alpha * acc + beta * C over `problem` (an `EpilogueProblem`), tile by
    tile, into the (M + 1) x ld D buffer `d_init` (zeros when None).

    `kernel` — a `bwlab.lab.TeachingKernel` (an edit of teach_store.cu) or "teach_store.cu" (the
    learner's %%cuda version, else the file) — makes run() launch that teaching kernel (its problems:
    `teach_problem(M, N)`, no C); without it, run() uses the harness (`epilogue_tile`, tma_store.cu)."""

    stage = "store"
    teaching_file = "teach_store.cu"

    def __init__(self, problem: EpilogueProblem, acc, c_bits=None, d_init=None, kernel=None):
        if not isinstance(problem, EpilogueProblem):
            raise ValueError("problem must be an EpilogueProblem")
        self.problem, self.acc, self.c_bits, self.d_init = problem, acc, c_bits, d_init
        self._set_kernel(kernel)
        if kernel is not None:
            from .runner import require_teach_args
            if c_bits is not None:
                raise ValueError("teach_store.cu computes D = acc (no C): leave c_bits out, or kernel= to use "
                                 "the harness")
            require_teach_args(problem, acc, d_init)

    def __repr__(self):
        p = self.problem
        k = "" if self._kernel is None else f", kernel={self.kernel!r}"
        return f"Epilogue({p.M} x {p.N} {p.dtype}, swizzle {p.swizzle}{k})"

    def identity(self):
        return ("epilogue", repr(self.problem), digest(self.acc, self.c_bits, self.d_init), self.kernel_identity())

    @property
    def what(self) -> str:
        p = self.problem
        op = "reduce-add" if p.reduce_add else "store"
        return f"epilogue {p.M} x {p.N} {p.dtype}, {p.bm} x {p.bn} tiles, swizzle {p.swizzle}, TMA {op}"

    def model(self) -> np.ndarray:
        return epilogue_model(self.problem, self.acc, self.c_bits, self.d_init)

    def run(self, fence: bool = True) -> np.ndarray:
        """The D buffer after the epilogue on this GPU (or in the PTX emulator): by the teaching kernel
        if the case has one, else by the harness (`fence=False` leaves the harness's proxy fence out)."""
        from .runner import launch_teach, run_epilogue
        if self._kernel is not None:
            if not fence:
                raise ValueError("fence=False edits the harness; to leave the teaching kernel's fence out, "
                                 "edit it (kernel=k.replace(...))")
            return launch_teach(self.problem, self.acc, self.d_init, kernel=self.kernel)
        return run_epilogue(self.problem, self.acc, self.c_bits, self.d_init, fence=fence)

    def show(self, ax=None):
        from .pictures import plot_edge_tiles
        return plot_edge_tiles(self.problem, ax=ax)

    def where(self, index) -> str:
        p = self.problem
        r, c = (int(i) for i in index)
        eb = p.elem_bytes
        gran = c * eb // STORE_GRANULE
        tile = f"tile ({r // p.bm}, {c // p.bn})"
        if r >= p.M:
            place = "the guard row below the matrix (outside the tensor)"
        elif c >= p.N:
            shares = c * eb < round_up(p.N * eb, STORE_GRANULE)
            place = ("row padding sharing the last 16-byte granule of the row (outside the tensor)"
                     if shares else "row padding (outside the tensor)")
        else:
            place = f"inside the {p.M} x {p.N} matrix, {tile}"
        return f"D[{r}, {c}] (x={c}, y={r}), {place}, 16-byte store granule {gran} of the row"

    def _hint(self, m: Mismatch, e, g, d0) -> str:
        p = self.problem
        r, c = m.index
        if r >= p.M or c >= p.N:
            return GRANULE_HINT
        if d0 is not None and g[r, c] == d0[r, c]:
            return NOT_WRITTEN_HINT
        if p.swizzle != "none":
            c0 = c // p.bn * p.bn                        # the wrong value sits elsewhere in its tile row
            if np.any(e[r, c0:min(c0 + p.bn, p.N)] == g[r, c]):
                return _swizzle_hint(p.swizzle)
        hint = FENCE_HINT
        if p.swizzle != "none":
            hint += (f"; and do the threads write the D tile through the tensor map's {p.swizzle} "
                     "swizzle (st.shared.v4 to swizzle_address)?")
        return hint

    def compare(self, expected, got, source: str = "") -> CheckResult:
        p = self.problem
        raw = raw_dtype(p.dtype)
        e = np.asarray(expected).astype(raw, copy=False)
        g = np.asarray(got)
        g = g.view(raw) if g.dtype.itemsize == raw.itemsize and g.dtype != raw else g
        d0 = (np.zeros(p.buffer_shape, raw) if self.d_init is None
              else np.asarray(self.d_init).astype(raw, copy=False))
        return compare(e, g, stage=self.stage, what=self.what, source=source,
                       hex_digits=2 * raw.itemsize, where=self.where,
                       hint=lambda m: self._hint(m, e, g, d0))


def run_teach(p: EpilogueProblem, acc, d_init=None, kernel=None) -> np.ndarray:
    """`Epilogue(p, acc, None, d_init, kernel=kernel or "teach_store.cu").run()`: the D buffer after the
    teaching kernel. Kept for code written against it; a notebook builds the case."""
    return Epilogue(p, acc, None, d_init, kernel=kernel or "teach_store.cu").run()
