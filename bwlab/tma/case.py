"""`TmaLoad`: one TMA load as a bwlab case — model(), run(), check(), show().

    case = TmaLoad(gmem, tmap, (32, 16), smem_address=0x180)
    case.model()            # the SMEM bytes, computed by NumPy
    case.check(got)         # names the first differing SMEM byte: box row / element, or gap / fill
    case.check()            # the same against this GPU or the PTX emulator (else the recording of this case)
    TmaLoad(gmem, tmap, (32, 16), kernel=mine).check()   # a learner's teach_tma.cu, run and compared
"""
from __future__ import annotations

import numpy as np

from ..case import Case, CheckResult, compare, digest
from ..hw.swizzle import MODES as SWIZZLE_MODES
from .model import box_targets, require_coords, oob_fill_bits, tma_load_model, tma_load_writes
from .tensor_map import TensorMap

__all__ = ["TmaLoad", "run_teach"]


class TmaLoad(Case):
    """One box of `tmap` at `coords`, loaded to SMEM address `smem_address` (a multiple of 128).

    model() and run() return the same thing: the `tmap.smem_footprint` SMEM bytes from
    `smem_address` on (uint8), swizzle applied. `kernel` — a `bwlab.lab.TeachingKernel` (an edit of
    teach_tma.cu) or "teach_tma.cu" (the learner's %%cuda version, else the file) — makes run() launch
    that teaching kernel (2D boxes whose rows fill their swizzle span, at SMEM address 0); without it,
    run() uses the validation harness (tma_load.cu), which loads any box."""

    stage = "tma"
    what = "SMEM image of one TMA load"
    teaching_file = "teach_tma.cu"

    def __init__(self, gmem, tmap: TensorMap, coords, smem_address: int = 0, kernel=None):
        self.gmem = np.asarray(gmem)
        self.tmap = tmap
        self.coords = require_coords(tmap, coords)
        self.smem_address = int(smem_address)
        self._set_kernel(kernel)
        if kernel is not None:
            from .runner import require_teach_args
            require_teach_args(self.gmem, tmap, self.coords)
            if self.smem_address:
                raise ValueError("teach_tma.cu loads into its own 1024-aligned buffer (SMEM address 0); "
                                 f"got smem_address=0x{self.smem_address:x}: leave kernel= out to use the harness")

    def __repr__(self):
        k = "" if self._kernel is None else f", kernel={self.kernel!r}"
        return f"TmaLoad({self.tmap!r}, coords={self.coords}, smem_address=0x{self.smem_address:x}{k})"

    def identity(self):
        t = self.tmap
        return ("tma", t.dtype, t.global_shape, t.box_shape, t.global_strides, t.element_strides, t.swizzle,
                t.interleave, t.oob_fill, self.coords, self.smem_address, digest(self.gmem), self.kernel_identity())

    def model(self) -> np.ndarray:
        return tma_load_model(self.gmem, self.tmap, self.coords, self.smem_address)

    def run(self) -> np.ndarray:
        """This load on the GPU (or in the PTX emulator): by the teaching kernel if the case has one, else
        by the harness."""
        from .runner import launch_teach, run_tma_load
        if self._kernel is not None:
            return launch_teach(self.gmem, self.tmap, self.coords, kernel=self.kernel)
        return run_tma_load(self.gmem, self.tmap, self.coords, self.smem_address)

    def show(self, ax=None, **kwargs):
        """The SMEM image of the box (which box row and 16-byte chunk sits where)."""
        from .pictures import plot_smem_image
        return plot_smem_image(self.tmap, self.smem_address, ax=ax, **kwargs)

    # ---- describing a place and guessing the cause ------------------------------------------
    def _owners(self):
        """For every byte of the image: (element index in box order or -1, byte in element, in bounds)."""
        t = self.tmap
        addr, _ = tma_load_writes(self.gmem, t, self.coords, self.smem_address)
        _, _, inb, _ = box_targets(t, self.coords, self.smem_address)
        owner = np.full(t.smem_footprint, -1, np.int64)
        rel = addr - self.smem_address
        k = np.arange(addr.size, dtype=np.int64)
        owner[rel] = k
        return owner, inb

    def where(self, index) -> str:
        """SMEM byte `index` of the image in the stage's words."""
        t = self.tmap
        i = int(index[0] if isinstance(index, tuple) else index)
        owner, inb = self._owners()
        head = f"SMEM byte 0x{self.smem_address + i:04x} (+{i})"
        k = int(owner[i])
        if k < 0:
            return (f"{head}, in the gap after box row {i // t.smem_pitch} (rows sit {t.smem_pitch} bytes apart "
                    f"under {t.swizzle} swizzle; the load does not write these bytes)")
        e, b = divmod(k, t.elem_bytes)
        n = t.box_counts
        j, rest = [], e
        for d in n:
            j.append(rest % d)
            rest //= d
        row = e // n[0]
        gidx = tuple(c + jj * s for c, jj, s in zip(self.coords, j, t.element_strides))
        place = (f"{head} = box row {row}, element {j[0]}, byte {b} of {t.elem_bytes} "
                 f"(box index {tuple(j)}, tensor element {gidx}")
        if not inb[e]:
            return place + f": outside the tensor, so out-of-bounds fill 0x{oob_fill_bits(t):x})"
        return place + ")"

    def hint(self, expected: np.ndarray, got: np.ndarray) -> str:
        t = self.tmap
        got = np.asarray(got)
        if not got.any() and expected.any():
            return ("nothing landed: was the mbarrier waited on, and did expect_tx announce the box bytes "
                    f"(tx_bytes = {t.tx_bytes})?")
        for mode in SWIZZLE_MODES:
            if mode == t.swizzle:
                continue
            try:
                other = TmaLoad(self.gmem, TensorMap(t.dtype, t.global_shape, t.box_shape, t.global_strides,
                                                     t.element_strides, mode, t.interleave, t.l2_promotion,
                                                     t.oob_fill), self.coords, self.smem_address).model()
            except ValueError:
                continue
            if other.shape == got.shape and np.array_equal(other, got):
                return (f"the bytes are this box under swizzle {mode!r}, not {t.swizzle!r}: the tensor map "
                        "and the code that reads SMEM must use the same swizzle")
        owner, inb = self._owners()
        diff = np.flatnonzero(expected != got)
        k = owner[diff]
        if (k < 0).all():
            return "only bytes between the rows differ: the load leaves the rest of each swizzle span alone"
        if (k >= 0).all() and not inb[k // t.elem_bytes].any():
            return (f"only out-of-bounds elements differ: they are filled with 0x{oob_fill_bits(t):x} "
                    f"(oob_fill={t.oob_fill!r}), and still count towards expect_tx")
        if t.dtype == "tf32":
            return "a TFLOAT32 load rounds every value to tf32 (10 mantissa bits) on the way in"
        if self.smem_address % 1024 and t.swizzle != "none":
            at0 = tma_load_model(self.gmem, t, self.coords, self.smem_address - self.smem_address % 1024)
            if np.array_equal(at0, got):
                return (f"the bytes are this box swizzled as if it started on a 1024-byte boundary: the swizzle "
                        f"is a function of the SMEM address, and at 0x{self.smem_address:x} the pattern starts "
                        f"{(self.smem_address % 1024) // 128} lines in")
        return ""

    def compare(self, expected, got, source: str = "") -> CheckResult:
        return compare(expected, got, stage=self.stage, what=self.what, unit="byte", where=self.where,
                       hint=lambda m: self.hint(np.asarray(expected), np.asarray(got)), hex_digits=2,
                       source=source)


def run_teach(gmem, tmap: TensorMap, coords, kernel=None, block: int = 128) -> np.ndarray:
    """`TmaLoad(gmem, tmap, coords, kernel=kernel or "teach_tma.cu").run()`: the teaching kernel on one 2D
    box, the `box_bytes` SMEM bytes it loaded (the same as `tma_load_model(gmem, tmap, coords)`). Kept
    for code written against it; a notebook builds the case."""
    if block != 128:
        from .runner import launch_teach
        return launch_teach(gmem, tmap, coords, kernel, block)
    return TmaLoad(gmem, tmap, coords, kernel=kernel or "teach_tma.cu").run()
