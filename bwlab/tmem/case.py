"""The stage's cases: one tcgen05.ld round trip and one tcgen05.st round trip of a warpgroup, with the
four verbs of `bwlab.case.Case` (`model()`, `run()`, `check(got=None)`, `show()`).

A difference is named the way the hardware sees it: which warp, thread and register, which TMEM lane
and column, and the rule most likely broken (the warp quarter rule, the shape's lane/column map, a
missing tcgen05.wait).
"""
from __future__ import annotations

import numpy as np

from ..case import Case, CheckResult, Mismatch, compare, digest
from ..hw.tmem import COLUMNS, LANES, TmemError, warp_lane_range
from .forms import TmemAccess, instructions_per_warp
from .model import require_roundtrip, defined_st_bits, ld_roundtrip_model, st_roundtrip_model
from .runner import require_teach_num, run_ld_roundtrip, run_st_roundtrip
from .teach import address_image, compile_report, teach_kernel, teach_model, teach_plan

__all__ = ["TmemLoad", "TmemStore", "teach_case", "run_teach", "try_teach"]


def _cells_of(access: TmemAccess, warp: int, half: int, col0: int) -> np.ndarray:
    """(32, registers, halves, 2): absolute (lane, column) of every register (16-bit half) of one
    instruction of the round trip."""
    lane0 = 32 * warp + access.lanes * half
    m = access.map()
    if not access.pack16:
        m = m[:, :, None, :]
    return m + np.array([lane0, col0])


def _cell_text(cells) -> str:
    """'TMEM lane 37, column 13' or, for a packed register, both cells it holds."""
    if len(cells) == 1:
        return f"TMEM lane {cells[0][0]}, column {cells[0][1]}"
    (l0, c0), (l1, c1) = cells
    return (f"TMEM lane {l0}, column {c0} (bits 15-0) and lane {l1}, column {c1} (bits 31-16), "
            "low 16 bits of each")


_MAP_HINT = ("the shape's lane/column map (tmem.ld_fragment_map; PTX ISA 'Matrix fragments for "
             "tcgen05.ld/st')")
_QUARTER_HINT = ("the warp quarter rule: warp w reaches only TMEM lanes 32*(w % 4) .. +31 "
                 "(PTX ISA 'Tensor Memory access restrictions')")


class TmemLoad(Case):
    """tmem_ld_roundtrip: a warpgroup fills TMEM from `image`, then every warp loads its lane quarter
    at column `col0` with `access` (twice for a 16-lane shape). The result is every thread's
    registers: uint32 (4 warps, instructions per warp, 32 threads, registers).

    `kernel` — a `bwlab.lab.TeachingKernel` (an edit of teach_tmem.cu) or "teach_tmem.cu" (the
    learner's %%cuda version, else the file) — makes run() launch that teaching kernel instead of the
    harness; it stores `address_image()` and loads it at column 0 with its own .32x32b.x<kNum>
    (`tmem.teach_case(kernel)` builds the matching case)."""

    stage = "tmem"
    teaching_file = "teach_tmem.cu"

    def __init__(self, access: TmemAccess, image: np.ndarray, col0: int = 0, kernel=None):
        require_roundtrip(access, image, col0)
        self.access, self.image, self.col0 = access, image, int(col0)
        self.what = f"tcgen05.ld{access.label()} at column {self.col0}"
        self._set_kernel(kernel)
        if kernel is not None:
            plan = teach_plan(self.kernel)
            if plan.access != access or self.col0 != 0 or not np.array_equal(image, address_image()):
                raise ValueError(f"{self.teaching_file} loads address_image() at column 0 with "
                                 f"tcgen05.ld{plan.access.label()}; this case asks for tcgen05.ld{access.label()} "
                                 f"at column {self.col0}: build it with tmem.teach_case(kernel)")

    def __repr__(self):
        k = "" if self._kernel is None else f", kernel={self.kernel!r}"
        return f"TmemLoad({self.access.label()}, col0={self.col0}{k})"

    def identity(self):
        return ("tmem-ld", self.access.label(), self.col0, digest(self.image), self.kernel_identity())

    def model(self) -> np.ndarray:
        return ld_roundtrip_model(self.access, self.image, self.col0)

    def run(self) -> np.ndarray:
        """The registers after the loads on an sm_100 GPU (or in the PTX emulator): by the teaching
        kernel if the case has one, else by the harness (tmem_sm100.cu)."""
        if self._kernel is not None:
            from .runner import launch_teach
            return launch_teach(self.kernel)
        return run_ld_roundtrip(self.access, self.image, self.col0)

    def cells(self, warp: int, half: int, thread: int, register: int) -> list[tuple[int, int]]:
        """The TMEM cell(s) register `register` of `thread` holds in load `half` of `warp`."""
        c = _cells_of(self.access, warp, half, self.col0)[thread, register]
        return [tuple(int(v) for v in x) for x in c]

    def _where(self, idx) -> str:
        w, h, t, j = idx
        load = f", load {h} (lanes from {32 * w + self.access.lanes * h})" if instructions_per_warp(
            self.access) > 1 else ""
        return f"warp {w}{load}, thread {t}, register {j} = {_cell_text(self.cells(w, h, t, j))}"

    def _hint(self, mis: Mismatch) -> str:
        w, h, t, j = mis.index
        got = int(str(mis.got), 16)
        img = self.image & np.uint32(0xFFFF) if self.access.pack16 else self.image
        key = got & 0xFFFF if self.access.pack16 else got
        found = np.argwhere(img == np.uint32(key))
        if not len(found):
            return ("the value is nowhere in the TMEM image: a register read before tcgen05.wait::ld, "
                    "or the fill of TMEM did not land")
        lane, col = (int(v) for v in found[0])
        lo, hi = warp_lane_range(w)
        if not lo <= lane < hi:
            return f"the value sits at TMEM lane {lane}, column {col}, outside warp {w}'s lanes {lo}..{hi - 1}: " \
                   + _QUARTER_HINT
        return f"the value sits at TMEM lane {lane}, column {col}: " + _MAP_HINT

    def compare(self, expected, got, source: str = "") -> CheckResult:
        return compare(expected, got, stage=self.stage, what=self.what, unit="register",
                       where=self._where, hint=self._hint, hex_digits=8, source=source)

    def show(self, ax=None, warp: int = 0, **kwargs):
        """Which thread and register of `warp` holds which TMEM cell."""
        from .pictures import plot_ld_map
        return plot_ld_map(self.access, warp, ax=ax, **kwargs)


class TmemStore(Case):
    """tmem_st_roundtrip: a warpgroup fills TMEM from `image`, every warp stores `regs`
    (4 warps, instructions per warp, 32 threads, registers) with `access` at column `col0`, and the
    whole TMEM is read back: uint32 (128, 512).

    Only what the ISA defines is compared: after unpack::16b the upper 16 bits of the written cells
    are not defined, so only their low halves count."""

    stage = "tmem"

    def __init__(self, access: TmemAccess, image: np.ndarray, regs: np.ndarray, col0: int = 0, kernel=None):
        if kernel is not None:
            raise ValueError("the stage's teaching kernel (teach_tmem.cu) checks its loads: build a "
                             "TmemLoad with kernel= (tmem.teach_case(kernel)); TmemStore runs the harness")
        require_roundtrip(access, image, col0, regs, "st")
        self.access, self.image, self.col0 = access, image, int(col0)
        self.regs = np.asarray(regs, dtype=np.uint32)
        self.what = f"tcgen05.st{access.label().replace('pack', 'unpack')} at column {self.col0}"

    def identity(self):
        return ("tmem-st", self.access.label(), self.col0, digest(self.image, self.regs))

    def model(self) -> np.ndarray:
        return st_roundtrip_model(self.access, self.image, self.regs, self.col0)

    def run(self) -> np.ndarray:
        return run_st_roundtrip(self.access, self.image, self.regs, self.col0)

    def writers(self) -> np.ndarray:
        """int (128, 512, 5): (warp, load, thread, register, 16-bit half) whose store writes each
        cell; -1 where no store writes."""
        own = np.full((LANES, COLUMNS, 5), -1, dtype=np.int64)
        for w in range(4):
            for h in range(instructions_per_warp(self.access)):
                cells = _cells_of(self.access, w, h, self.col0)
                t, j, k = np.meshgrid(*(np.arange(n) for n in cells.shape[:3]), indexing="ij")
                own[cells[..., 0], cells[..., 1]] = np.stack(
                    [np.full_like(t, w), np.full_like(t, h), t, j, k], axis=-1)
        return own

    def _where(self, idx) -> str:
        lane, col = idx
        w, h, t, j, k = (int(v) for v in self.writers()[lane, col])
        if w < 0:
            return f"TMEM lane {lane}, column {col} (no store writes it: it keeps the filled value)"
        half = (" bits 15-0", " bits 31-16")[k] if self.access.pack16 else ""
        load = f", load {h}" if instructions_per_warp(self.access) > 1 else ""
        return f"TMEM lane {lane}, column {col} (written by warp {w}{load}, thread {t}, register {j}{half})"

    def _hint(self, mis: Mismatch) -> str:
        lane, col = mis.index
        if self.writers()[lane, col, 0] < 0:
            return ("a cell outside the stores' cells changed: " + _MAP_HINT + ", or a warp writing "
                    "outside its quarter (" + _QUARTER_HINT + ")")
        got = int(str(mis.got), 16)
        regs = self.regs
        if self.access.pack16:
            halves = np.stack([regs & np.uint32(0xFFFF), regs >> np.uint32(16)], axis=-1)
            found = np.argwhere(halves == np.uint32(got & 0xFFFF))
        else:
            found = np.argwhere(regs == np.uint32(got))
        if len(found):
            w, h, t, j = (int(v) for v in found[0][:4])
            return f"the cell holds what warp {w}, thread {t}, register {j} stored: " + _MAP_HINT
        return ("the cell holds no stored register: the store did not land before the read-back "
                "(tcgen05.wait::st), or " + _QUARTER_HINT)

    def compare(self, expected, got, source: str = "") -> CheckResult:
        e, g = np.asarray(expected), np.asarray(got)
        if e.shape == g.shape == (LANES, COLUMNS):
            e = defined_st_bits(self.access, e.astype(np.uint32), self.col0)
            g = defined_st_bits(self.access, g.astype(np.uint32), self.col0)
        return compare(e, g, stage=self.stage, what=self.what, unit="cell", where=self._where,
                       hint=self._hint, hex_digits=8, source=source)

    def show(self, ax=None, warp: int = 0, **kwargs):
        """Which thread and register of `warp` holds which TMEM cell."""
        from .pictures import plot_ld_map
        return plot_ld_map(self.access, warp, ax=ax, **kwargs)


def teach_case(kernel=None) -> TmemLoad:
    """The case the teaching kernel's result is checked against: its .32x32b.x<kNum> load of
    `address_image()` at column 0 (`.check(run_teach(kernel))`)."""
    return TmemLoad(teach_plan(kernel).access, address_image(), 0, kernel=teach_kernel(kernel))


def run_teach(kernel=None) -> np.ndarray:
    """`tmem.teach_case(kernel).run()`: the registers the teaching kernel loaded. Kept for code written
    against it; a notebook builds the case."""
    require_teach_num(teach_plan(teach_kernel(kernel)))
    return teach_case(kernel).run()


def try_teach(kernel=None, warp: int = 1, thread: int = 3, force: bool = False) -> np.ndarray | None:
    """What an edit of the teaching kernel does here: compile it for sm_100a (errors on your line),
    read its plan, replay it on the model (or name the rule it breaks), and run it where the TMEM stage
    runs here (an sm_100 GPU, or bwlab's PTX emulator) and check it against the model. Returns the
    model's registers (None if the model refuses).

    On the GPU an edit the model refuses is not launched unless `force`: the ISA leaves such an access
    undefined, and a fault loses the CUDA context until the process restarts."""
    from .. import device
    from ..compile import CompileError
    k = teach_kernel(kernel)
    try:
        k.compile("sm_100a")
    except CompileError as e:
        print(compile_report(e))
        print(f"\n{k.file} did not compile for sm_100a: nothing runs.")
        return None
    print(f"{k.file}{' (edited)' if k.edited else ''}: compiles for sm_100a")
    plan = teach_plan(k)
    print("plan:", plan)
    want = None
    try:
        want = teach_model(k)
        r = want[warp, 0, thread]
        shown = ", ".join(f"{v:#010x}" for v in r[:4]) + (", ..." if r.size > 4 else "")
        print(f"model: warp {warp}, thread {thread} holds {r.size} registers [{shown}] = lane "
              f"{r[0] >> 16}, columns {r[0] & 0xFFFF}..{r[-1] & 0xFFFF}")
    except TmemError as e:
        print(f"model: refuses the kernel -- {e}")
    t = device.tier("tmem")
    if t == "emulated":
        print(device.where("tmem"))
        try:
            print(teach_case(k).check(run_teach(k), source="the PTX emulator, your kernel"))
        except Exception as e:      # the emulator names what the ISA leaves undefined
            print(f"the PTX emulator stopped your kernel: {type(e).__name__}: {e}")
    elif t != "hardware":
        print(device.where("tmem"))
    elif want is None and not force:
        print("GPU: not launched, the model refuses it (try_teach(..., force=True) launches it anyway).")
    else:
        print(teach_case(k).check(run_teach(k), source=device.gpu_info().name))
    return want
