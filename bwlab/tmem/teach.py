"""The stage's teaching kernel, cuda_src/teach_tmem.cu, as the model sees it.

The kernel allocates TMEM, has each warp of a warpgroup `tcgen05.st` its lane quarter and
`tcgen05.ld.32x32b` it back, and frees TMEM (PTX ISA "tcgen05.alloc", "tcgen05.st", "tcgen05.ld",
"Tensor Memory access restrictions"). The model follows a learner's edits through three places of the
text, read by `teach_plan`: `kColumns` (the allocation), `kNum` (the .num of the st and ld) and the
line `const u32 lane0 = ...;` (the lane each warp addresses), and replays the kernel on
`TensorMemory`, so an illegal edit comes back as the `TmemError` of the rule it breaks.

`teach_model(kernel)` and `run_teach(kernel)` (case.py; on an sm_100 GPU or in the emulator) return
the same thing: uint32 (4 warps, 1 load, 32 threads, kNum registers), what `TmemLoad(...).model()`
returns for the `.32x32b.x<kNum>` load of `address_image()`; `teach_case(kernel).check(got)` (case.py)
compares them.
"""
from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass

import numpy as np

from ..hw.tmem import COLUMNS, LANES, TmemError
from .alloc import TensorMemory
from .forms import TmemAccess

__all__ = ["TEACH_FILE", "TeachPlan", "teach_plan", "address_image", "teach_model", "teach_kernel",
           "teach_sass", "compile_report"]

TEACH_FILE = "teach_tmem.cu"
_WARPS = 4  # one warpgroup: 128 threads


def teach_kernel(kernel=None):
    """The kernel to use: a `bwlab.lab.TeachingKernel`, CUDA text, or None (or the file's name) for the
    learner's `%%cuda teach_tmem.cu` version (the file itself when nothing was edited)."""
    from .. import lab
    if kernel is None or kernel == TEACH_FILE:
        return lab.edited(TEACH_FILE)
    if isinstance(kernel, str):
        return lab.TeachingKernel(TEACH_FILE, kernel)
    return kernel


@dataclass(frozen=True)
class TeachPlan:
    """What the teaching kernel does, read from its text."""
    columns: int               # tcgen05.alloc / dealloc column count
    num: int                   # .num of tcgen05.st / tcgen05.ld .32x32b
    lane0: tuple | None        # the first lane each warp 0..3 addresses; None if the model cannot follow
    lane0_text: str            # the right-hand side of `const u32 lane0 = ...;`

    @property
    def access(self) -> TmemAccess:
        """The .32x32b.x<num> form (raises TmemError when .num is not an ISA value)."""
        return TmemAccess("32x32b", self.num)

    def __str__(self) -> str:
        lanes = ("lanes " + ", ".join(f"{l}..{l + 31}" for l in self.lane0) if self.lane0
                 else "lanes the model cannot work out")
        return (f"tcgen05.alloc {self.columns} columns; tcgen05.st/ld .32x32b.x{self.num} "
                f"({self.num} registers per thread); lane0 = {self.lane0_text}: warps 0..3 -> {lanes}")


def _constant(text: str, name: str) -> int:
    m = re.search(rf"constexpr\s+\w+\s+{name}\s*=\s*(\d+)[uU]?\s*;", text)
    if m is None:
        raise TmemError(f"{TEACH_FILE}: the model reads `constexpr ... {name} = <number>;` and found none")
    return int(m.group(1))


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
        ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}


def _eval_u32(node, warp: int) -> int:
    """A C integer expression of `warp` (constants, + - * / % << >> & | ^), or ValueError."""
    if isinstance(node, ast.Expression):
        return _eval_u32(node.body, warp)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name) and node.id == "warp":
        return warp
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        try:
            return _OPS[type(node.op)](_eval_u32(node.left, warp), _eval_u32(node.right, warp))
        except ZeroDivisionError as e:
            raise ValueError("division by zero") from e
    raise ValueError(f"cannot evaluate {ast.dump(node)}")


def _lane0(text: str):
    m = re.search(r"const\s+u32\s+lane0\s*=\s*([^;]+);", text)
    if m is None:
        return None, "(no `const u32 lane0 = ...;` line)"
    expr = m.group(1).strip()
    py = re.sub(r"\b(\d+)[uU]\b", r"\1", expr).replace("/", "//")
    try:
        tree = ast.parse(py, mode="eval")
        return tuple(_eval_u32(tree, w) & 0xFFFFFFFF for w in range(_WARPS)), expr
    except (SyntaxError, ValueError):
        return None, expr


def teach_plan(kernel=None) -> TeachPlan:
    """Read kColumns, kNum and lane0 from the (edited) teaching kernel."""
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", teach_kernel(kernel).text, flags=re.S)  # code, not comments
    lane0, expr = _lane0(text)
    return TeachPlan(_constant(text, "kColumns"), _constant(text, "kNum"), lane0, expr)


def address_image() -> np.ndarray:
    """(128, 512) uint32: every cell holds its own (lane << 16) | column, what the teaching kernel
    stores (its allocation starts at column 0 in the model)."""
    lane, col = np.meshgrid(np.arange(LANES, dtype=np.uint32), np.arange(COLUMNS, dtype=np.uint32),
                            indexing="ij")
    return (lane << np.uint32(16)) | col


def teach_model(kernel=None) -> np.ndarray:
    """Replay the teaching kernel on `TensorMemory`: alloc, relinquish, each warp st then ld, dealloc,
    exit. Returns uint32 (4, 1, 32, kNum); raises TmemError naming the rule an edit breaks."""
    plan = teach_plan(kernel)
    if plan.lane0 is None:
        raise TmemError(f"the model cannot evaluate `lane0 = {plan.lane0_text}` (it follows integer "
                        "expressions of `warp`): compile the kernel, run it on an sm_100 GPU")
    acc = plan.access
    tm = TensorMemory()
    base = tm.alloc(cta=0, warp=0, ncols=plan.columns)
    tm.relinquish_alloc_permit(cta=0)
    out = np.zeros((_WARPS, 1, 32, acc.registers), dtype=np.uint32)
    t, j = np.meshgrid(np.arange(32, dtype=np.uint32), np.arange(acc.registers, dtype=np.uint32),
                       indexing="ij")
    for w, lane0 in enumerate(plan.lane0):
        if lane0 + 31 >= LANES:
            raise TmemError(f"warp {w} addresses lanes {lane0}..{lane0 + 31}, past TMEM's last lane "
                            f"{LANES - 1}")
        taddr = base + (lane0 << 16)
        tm.st(0, w, taddr, ((np.uint32(lane0) + t) << np.uint32(16)) | j, acc)
        out[w, 0] = tm.ld(0, w, taddr, acc)
    tm.dealloc(cta=0, warp=0, taddr=base, ncols=plan.columns)
    tm.exit(cta=0)
    return out


def compile_report(err) -> str:
    """A CompileError as a learner reads it: each error on its line of the kernel, else the log."""
    from ..compile import CUDA_SRC
    text = str(err)
    shown = text.split("--- where ---", 1)[1] if "--- where ---" in text else \
        text.split("--- compiler log ---", 1)[-1]
    return shown.replace(str(CUDA_SRC), "cuda_src").strip()


def teach_sass(kernel=None, ops=("STTM", "LDTM", "UTC", "BAR.SYNC", "SHFL", "NANOSLEEP")) -> str | None:
    """The SASS lines of the sm_100a build that carry the TMEM data path (None without cuobjdump)."""
    sass = teach_kernel(kernel).compile("sm_100a").sass("teach_tmem")
    if sass is None:
        return None
    return "\n".join(re.sub(r"\s*/\* 0x[0-9a-f]+ \*/", "", line).strip()
                     for line in sass.splitlines() if any(op in line for op in ops))
