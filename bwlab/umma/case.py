"""The two cases of stage 3, each with the verbs every stage speaks (`bwlab.case.Case`):

* `UmmaCase`  — a K loop of `tcgen05.mma.cta_group::1` on sm_100: `model()` and `run()` return the
  TMEM image (uint32, 128 lanes x `tmem_columns`) after the loop;
* `WgmmaCase` — a K loop of `wgmma.mma_async.m64nNk16` on sm_90: `model()` and `run()` return D
  (float32, 64 x N).

`check(got=None)` compares the model with `got` (or with `run()`) and names the first differing D
element, where it sits (TMEM lane/column or thread/register) and which operand is the likely cause.
The free pairs `umma_model(case)` / `run_umma(case)` and `wgmma_model(case)` / `run_wgmma(case)` say
the same thing.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..case import Case, CheckResult, compare, digest
from ..hw.dtypes import from_float
from ..hw.mbarrier import Mbarrier
from ..hw.tmem import LANES
from ..util import round_up
from .canonical import canonical_layout, instr_k
from .descriptors import SmemDesc, smem_desc_for_tile, tile_desc
from .idesc import kind_of, make_instr_desc
from .rules import require_mma
from .model import (SMEM_BYTES, WGMMA_NS, CtaState, d_from_words, d_tmem_layout, tcgen05_commit,
                    tcgen05_mma, wgmma_d_fragment, wgmma_mma_async, words_from_d)

__all__ = ["UmmaCase", "WgmmaCase", "umma_model", "wgmma_model", "operand_hint"]


def _grid_values(rng, shape, step: float, limit: int) -> np.ndarray:
    """Random multiples of `step` in [-limit*step, limit*step]: sums of products stay exact."""
    return rng.integers(-limit, limit + 1, size=shape).astype(np.float64) * step


def _check_regions(regions, limit=SMEM_BYTES - 1024):
    spans = sorted((lay.base_address, lay.end, name) for name, lay in regions)
    for (s0, e0, n0), (s1, e1, n1) in zip(spans, spans[1:]):
        if s1 < e0:
            raise ValueError(f"operand {n1} at {s1} overlaps operand {n0} ending at {e0}")
    if spans[-1][1] > limit:
        raise ValueError(f"the operands end at byte {spans[-1][1]}; keep them below {limit} "
                         "(227 KiB of SMEM, less the 1 KiB used to align the buffer)")
    return spans[-1][1]


def operand_hint(bad: np.ndarray, case) -> str:
    """Which operand a pattern of wrong D elements points at. D[m][n] uses row m of A and row n of
    B only, so wrong rows with every column wrong point at A, the other way round at B."""
    rows, cols = bad.any(axis=1), bad.any(axis=0)
    a = f"A ({case.a_major}-major, {case.a_swizzle}: its layout, or LBO/SBO/swizzle of its descriptor)"
    b = f"B ({case.b_major}-major, {case.b_swizzle}: its layout, or LBO/SBO/swizzle of its descriptor)"
    if rows.all() and cols.all():
        return ("every row and column has wrong elements: the instruction descriptor (types, M, N, the "
                "major bits), the K loop (accumulate flag of the first step) or both operands")
    if cols.all():
        return f"only D rows {_ranges(rows)} are wrong, in every column: look at {a}"
    if rows.all():
        return f"only D columns {_ranges(cols)} are wrong, in every row: look at {b}"
    return (f"D rows {_ranges(rows)} x columns {_ranges(cols)}: where those rows of {a} or those rows "
            f"of {b} cross an 8-row group or a swizzle atom (SBO, the swizzle's alignment)")


def _ranges(sel: np.ndarray) -> str:
    idx = np.flatnonzero(sel)
    out, start = [], None
    for i, x in enumerate(idx):
        if start is None:
            start = x
        if i + 1 == len(idx) or idx[i + 1] != x + 1:
            out.append(f"{start}" if start == x else f"{start}-{x}")
            start = None
    return ", ".join(out[:6]) + (" ..." if len(out) > 6 else "")


class _OperandCase(Case):
    """What both cases share: A and B in canonical layouts in one SMEM image."""

    stage = "umma"

    @property
    def a_layout(self):
        return canonical_layout(self.a_major, self.a_swizzle, self.dtype, (self.M, self.K), self.a_base)

    @property
    def b_layout(self):
        return canonical_layout(self.b_major, self.b_swizzle, self.dtype, (self.N, self.K), self.b_base)

    @property
    def k_blocks(self) -> int:
        return self.K // instr_k(self.dtype)

    def smem_image(self) -> np.ndarray:
        """The bytes of A and B in their layouts (relative to the 1024-aligned operand buffer)."""
        a, b, _ = self.values()
        end = _check_regions([("A", self.a_layout), ("B", self.b_layout)])
        img = np.zeros(round_up(end, 16), np.uint8)
        self.a_layout.store(img, from_float(a, self.dtype))
        self.b_layout.store(img, from_float(b, self.dtype))
        return img

    def show(self, ax=None, **kw):
        """A and B in their SMEM layouts (several panels: given `ax`, they take its place)."""
        from .pictures import plot_case
        return plot_case(self, ax=ax, **kw)

    def identity(self):
        skip = ("kernel", "descs", "kernel_idesc")      # the kernel, and what run() gives it, come after
        fields = tuple((f, getattr(self, f)) for f in self.__dataclass_fields__ if f not in skip)
        descs, idesc = getattr(self, "descs", None), getattr(self, "kernel_idesc", None)
        return ((type(self).__name__, fields, self.kernel_identity()) + (() if descs is None else (digest(*descs),))
                + (() if idesc is None else (idesc,)))


# ------------------------------------------------------------------------------------------------
# tcgen05.mma on sm_100
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class UmmaCase(_OperandCase):
    """One tcgen05.mma.cta_group::1 run: A (M x K), B (N x K) in canonical layouts, one instruction
    per instruction-K slice, D in TMEM at column 0. `ab` is the A/B type ('f16', 'bf16', 'tf32'),
    `d` the accumulator type ('f32', or 'f16' with f16 inputs)."""

    ab: str
    d: str
    M: int
    N: int
    K: int
    a_major: str = "K"
    a_swizzle: str = "128B"
    b_major: str = "K"
    b_swizzle: str = "128B"
    a_base: int = 0
    b_base: int = 32768
    accumulate: bool = False
    seed: int = 0
    kernel: object = field(default=None, compare=False, repr=False)   # an edit of teach_umma.cu, or its name
    kernel_idesc: int | None = field(default=None, compare=False, repr=False)  # the idesc run() gives the kernel

    what = "TMEM image after the tcgen05.mma K loop"
    teaching_file = "teach_umma.cu"

    def __post_init__(self):
        # Every rule of the tcgen05.mma tables (types, M, N, majors and SMEM layouts), before any
        # layout is built or kernel compiled: an illegal configuration never reaches a GPU.
        require_mma(self.ab, self.ab, self.d, self.M, self.N, 1, self.a_major, self.b_major,
                    self.a_swizzle, self.b_swizzle)
        ki = instr_k(self.ab)
        if self.K % ki or not ki <= self.K <= 16 * ki:
            raise ValueError(f"K must be a multiple of {ki} ({self.ab}: one instruction each), at most 16 of them")
        _check_regions([("A", self.a_layout), ("B", self.b_layout)])
        self._set_kernel(self.kernel)
        if self.kernel_idesc is not None and self.kernel is None:
            raise ValueError("kernel_idesc= is given to the teaching kernel: add kernel='teach_umma.cu'")
        if self.kernel is not None:
            from .runner import require_teach_umma
            require_teach_umma(self, idesc=self.kernel_idesc)

    def with_idesc(self, idesc: int) -> "UmmaCase":
        """The same case, run() giving its kernel the instruction descriptor `idesc` (model(idesc=) predicts it)."""
        import dataclasses
        return dataclasses.replace(self, kernel_idesc=int(idesc))

    @property
    def dtype(self) -> str:
        return self.ab

    @property
    def kind(self) -> str:
        return kind_of(self.ab, self.ab)

    @property
    def idesc(self) -> int:
        return make_instr_desc(self.ab, self.ab, self.d, self.M, self.N, self.a_major, self.b_major)

    @property
    def d_layout(self):
        return d_tmem_layout(self.M, self.N)

    @property
    def tmem_columns(self) -> int:
        """Columns to allocate: a power of two >= 32 covering D."""
        n = 32
        while n < self.d_layout.columns:
            n *= 2
        return n

    def values(self):
        """A (M x K), B (N x K) and the initial D as float64, exact in the element types."""
        rng = np.random.default_rng(self.seed)
        step, lim = (0.25, 8) if self.d == "f32" else (0.5, 3)
        a = _grid_values(rng, (self.M, self.K), step, lim)
        b = _grid_values(rng, (self.N, self.K), step, lim)
        d0 = _grid_values(rng, (self.M, self.N), 1 / 16, 128 if self.d == "f32" else 16) \
            if self.accumulate else np.zeros((self.M, self.N))
        return a, b, d0

    def descriptors(self):
        """SM100 descriptors per K block (start addresses relative to the operand image)."""
        a = [smem_desc_for_tile(self.a_major, self.a_swizzle, self.ab, (self.M, self.K), kb, self.a_base)
             for kb in range(self.k_blocks)]
        b = [smem_desc_for_tile(self.b_major, self.b_swizzle, self.ab, (self.N, self.K), kb, self.b_base)
             for kb in range(self.k_blocks)]
        return np.array(a, np.uint64), np.array(b, np.uint64)

    def tmem_init(self) -> np.ndarray:
        """TMEM image (128 x tmem_columns words) holding D0 where the layout puts it."""
        tm = np.zeros((LANES, self.tmem_columns), np.uint32)
        lay = self.d_layout
        tm[lay.lane, lay.column] = words_from_d(self.values()[2], self.d)
        return tm

    def model(self, descriptors=None, idesc: int | None = None) -> np.ndarray:
        """The TMEM image (128 x tmem_columns) after the K loop, computed by tcgen05_mma — with the
        case's descriptors and idesc, or with edited ones (`descriptors=(a_descs, b_descs)`)."""
        cta = CtaState()
        img = self.smem_image()
        cta.smem[:img.size] = img
        cta.tmem[:, :self.tmem_columns] = self.tmem_init()
        bar = Mbarrier(1)
        idesc = self.idesc if idesc is None else int(idesc)
        for kb, (ad, bd) in enumerate(zip(*(descriptors or self.descriptors()))):
            tcgen05_mma(cta, 0, int(ad), int(bd), idesc, kb > 0 or self.accumulate, self.kind)
        tcgen05_commit(cta, bar)
        assert bar.try_wait_parity(0)
        return cta.tmem[:, :self.tmem_columns].copy()

    def run(self, module=None) -> np.ndarray:
        """The same K loop by tcgen05.mma on an sm_100 GPU (or in the PTX emulator): by the teaching
        kernel if the case has one (`kernel=`), else by the harness (cuda_src/umma_sm100.cu)."""
        from .runner import run_teach_umma, run_umma
        if self._kernel is not None:
            return run_teach_umma(self, kernel=self._teaching(), idesc=self.kernel_idesc)
        return run_umma(self, module)

    def d_from_tmem(self, tmem: np.ndarray) -> np.ndarray:
        lay = self.d_layout
        return d_from_words(tmem[lay.lane, lay.column], self.d)

    def reference(self) -> np.ndarray:
        """Plain NumPy: D0 + A @ B^T (an independent path that never touches the layouts)."""
        a, b, d0 = self.values()
        return d0 + a @ b.T

    def compare(self, expected, got, source: str = "") -> CheckResult:
        """Compare TMEM images where D sits. An f16 D element occupies the low 16 bits of its 32-bit
        word and the upper half is not defined (PTX "Packing formats of D"): only the low half is
        compared then."""
        lay = self.d_layout
        expected, got = np.asarray(expected), np.asarray(got)
        what = self.what
        if self.d == "f16" and expected.shape == got.shape:
            expected, got = expected & np.uint32(0xFFFF), got & np.uint32(0xFFFF)
            what += " (f16 D: the low 16 bits of each word)"
        mask = np.zeros(expected.shape, bool)
        if expected.shape == got.shape:
            mask[lay.lane, lay.column] = True
        m_at = np.full(expected.shape, -1)
        n_at = np.full(expected.shape, -1)
        m_at[lay.lane, lay.column] = np.arange(self.M)[:, None]
        n_at[lay.lane, lay.column] = np.arange(self.N)[None, :]

        def where(idx):
            lane, col = idx
            return f"D[m={m_at[idx]}][n={n_at[idx]}] (TMEM lane {lane}, column {col}, layout {lay.name})"

        def hint(_):
            bad = expected[lay.lane, lay.column] != got[lay.lane, lay.column]
            return operand_hint(bad, self)

        return compare(expected, got, stage=self.stage, what=what, unit="D element", where=where,
                       hint=hint, mask=mask if expected.shape == got.shape else None, hex_digits=8,
                       source=source)

    def label(self) -> str:
        return (f"{self.ab}->{self.d} M={self.M} N={self.N} K={self.K} A {self.a_major}-major {self.a_swizzle} "
                f"@{self.a_base} B {self.b_major}-major {self.b_swizzle} @{self.b_base}"
                + (" acc" if self.accumulate else ""))


def umma_model(case: UmmaCase) -> np.ndarray:
    """The TMEM image after `case`'s K loop, from the model (same as `case.model()`)."""
    return case.model()


# ------------------------------------------------------------------------------------------------
# wgmma on sm_90
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class WgmmaCase(_OperandCase):
    """One wgmma check: A (64 x K) and B (N x K) stored in canonical layouts at given SMEM offsets,
    one m64nNk16 per 16 of K. `a_base_offset`/`b_base_offset` set the descriptors' base-offset field."""

    dtype: str
    N: int
    K: int
    a_major: str
    a_swizzle: str
    b_major: str
    b_swizzle: str
    a_base: int = 0
    b_base: int = 16384
    accumulate: bool = False
    a_base_offset: int = 0
    b_base_offset: int = 0
    seed: int = 0
    kernel: object = field(default=None, compare=False, repr=False)   # an edit of teach_wgmma.cu, or its name
    descs: object = field(default=None, compare=False, repr=False)    # (A, B) descriptors run() gives the kernel

    M = 64
    what = "D of the wgmma K loop (registers)"
    teaching_file = "teach_wgmma.cu"

    def __post_init__(self):
        if self.dtype not in ("f16", "bf16"):
            raise ValueError(f"the wgmma check runs f16 and bf16, got {self.dtype!r}")
        if self.N not in WGMMA_NS:
            raise ValueError(f"cuda_src/wgmma_sm90.cu instantiates N in {WGMMA_NS}, got {self.N}")
        if self.K % 16 or not 16 <= self.K <= 16 * 16:
            raise ValueError(f"K must be a multiple of 16 (one m64nNk16 each) up to 256, got {self.K}")
        _check_regions([("A", self.a_layout), ("B", self.b_layout)])
        self._set_kernel(self.kernel)
        if self.descs is not None and self.kernel is None:
            raise ValueError("descs= are given to the teaching kernel: add kernel='teach_wgmma.cu'")
        if self.kernel is not None:
            from .runner import require_teach_wgmma
            require_teach_wgmma(self, self.descs)

    def with_descriptors(self, descs) -> "WgmmaCase":
        """The same case, its kernel given edited descriptors `(a_descs, b_descs)`: run() runs them, and
        model() is still what the correct descriptors give (`model(descriptors=descs)` predicts the edit)."""
        import dataclasses
        return dataclasses.replace(self, descs=tuple(np.asarray(d, np.uint64) for d in descs))

    def runs_on(self) -> str | None:
        """wgmma is sm_90a: a Hopper GPU, or the PTX emulator in the emulated tier."""
        from .. import device
        from ..runtime import runs_on
        if device.tier("tma") == "emulated":
            return runs_on("tma")
        info = device.gpu_info()
        return runs_on("tma") if info is not None and info.has_wgmma else None

    @property
    def variant(self) -> int:
        return int(self.dtype == "bf16") | (int(self.a_major == "MN") << 1) | (int(self.b_major == "MN") << 2)

    def values(self):
        """A (64 x K), B (N x K) and the initial D as float64, exact in the element types."""
        rng = np.random.default_rng(self.seed)
        a = _grid_values(rng, (64, self.K), 0.25, 8)
        b = _grid_values(rng, (self.N, self.K), 0.25, 8)
        d0 = _grid_values(rng, (64, self.N), 1 / 16, 128) if self.accumulate else np.zeros((64, self.N))
        return a, b, d0

    def descriptors(self):
        """SM90 descriptors per K block (start addresses relative to the operand image)."""
        def descs(lay, bo):
            out = []
            for kb in range(self.k_blocks):
                d = tile_desc(lay.major, lay.swizzle, lay.dtype, lay.tile, kb, lay.base_address, "sm90")
                out.append(SmemDesc(d.start_address, d.leading_byte_offset, d.stride_byte_offset,
                                    d.swizzle, bo, 0, 1, "sm90").encode())
            return np.array(out, dtype=np.uint64)
        return descs(self.a_layout, self.a_base_offset), descs(self.b_layout, self.b_base_offset)

    def model(self, descriptors=None) -> np.ndarray:
        """What the H100 should return (D, 64 x N float32), from the image bytes and descriptors alone
        — the case's descriptors, or edited ones (`descriptors=(a_descs, b_descs)`)."""
        ad, bd = descriptors or self.descriptors()
        img = np.zeros(SMEM_BYTES, np.uint8)
        raw = self.smem_image()
        img[:raw.size] = raw
        return wgmma_mma_async(img, ad, bd, self.N, self.dtype, self.a_major, self.b_major,
                               self.values()[2], self.accumulate)

    def run(self, module=None) -> np.ndarray:
        """The same K loop by wgmma on a Hopper GPU (or in the PTX emulator): by the teaching kernel if
        the case has one (`kernel=`), else by the harness (cuda_src/wgmma_sm90.cu)."""
        from .runner import run_teach_wgmma, run_wgmma
        if self._kernel is not None:
            return run_teach_wgmma(self, kernel=self._teaching(), descriptors=self.descs)
        return run_wgmma(self, module)

    def reference(self) -> np.ndarray:
        """Plain NumPy: D0 + A @ B^T (an independent path that never touches the layouts)."""
        a, b, d0 = self.values()
        return (d0 + a @ b.T).astype(np.float32)

    def compare(self, expected, got, source: str = "") -> CheckResult:
        thread, reg = wgmma_d_fragment(self.N)

        def where(idx):
            m, n = idx
            t = int(thread[m, n])
            return f"D[m={m}][n={n}] (thread {t} = warp {t // 32} lane {t % 32}, register {int(reg[m, n])})"

        def hint(_):
            e, g = np.asarray(expected, np.float32), np.asarray(got, np.float32)
            return operand_hint(e.view(np.uint32) != g.view(np.uint32), self)

        return compare(expected, got, stage=self.stage, what=self.what, unit="D element", where=where,
                       hint=hint, source=source)

    def label(self) -> str:
        return (f"{self.dtype:4s} N={self.N:<3d} K={self.K:<3d} A {self.a_major:>2s}-major {self.a_swizzle:>4s} "
                f"@{self.a_base:<6d} B {self.b_major:>2s}-major {self.b_swizzle:>4s} @{self.b_base:<6d}"
                + (" acc" if self.accumulate else "")
                + (f" base_offset A{self.a_base_offset}/B{self.b_base_offset}"
                   if self.a_base_offset or self.b_base_offset else ""))


def wgmma_model(case: WgmmaCase) -> np.ndarray:
    """D (64 x N float32) of `case`'s K loop, from the model (same as `case.model()`)."""
    return case.model()
