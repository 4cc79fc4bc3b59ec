"""Checks for notebook 05's graded exercises (shared-memory wavefronts of a store pattern, the proxy
fence, bulk async-groups, the swizzled SMEM staging address, and an edit of the teaching kernel
cuda_src/teach_store.cu).

Every expected value comes from the models: `bwlab.hw.banks.wavefronts`, `EpilogueOrdering` (PTX ISA
9.7.9.25.2 "Async proxy", 9.7.9.27.2 bulk async-groups), `SmemTile` (the swizzle of `bwlab.hw.swizzle`),
`epilogue_model` / `tma_store_model` (9.7.9.27.1.2); the checks go through `bwlab.exercises`, so a wrong
answer raises `NotYet` naming the quantity, the learner's value, the model's, the rule and, where it
recognises one, the mistake.
"""
from __future__ import annotations

import ast
import operator
import re

import numpy as np

from ..exercise_mistakes import which_mistake
from ..exercises import NotYet, check_function, check_result, course_cases, unanswered
from ..hw.banks import BANK_RULE, SMEM_BANKS, wavefronts
from ..hw.swizzle import MODES, row_bytes, swizzle_of
from .ordering import EpilogueOrdering, OrderingError
from .rules import PROXY_FENCE_RULE, StoreRuleError
from .tile import SmemTile, bank_patterns

__all__ = ["check_wavefronts", "check_fence", "check_ring_wait", "ring_epilogue", "check_staged_offset",
           "check_store_coords", "FENCE_STEPS", "STORE_LINE"]

FENCE_STEPS = ("st.shared", "fence.proxy.async", "bar.sync")     # exercise 5.2's vocabulary
STORE_LINE = "tma_store_2d(&tmap_d, tile, n0, m0);"                # exercise 5.5 edits this line
RULE_RING = ("cp.async.bulk.wait_group.read N returns once at most the N most recently committed bulk "
             "async-groups may still be reading their SMEM source (PTX ISA 9.7.9.27.2); every older "
             "group has finished reading, so its buffer may be written again (after a barrier tells the "
             "writers)")
RULE_STAGING = ("a tile one swizzle row wide (32, 64 or 128 bytes per row) is stored row after row; the "
                "swizzle XORs the 16-byte chunk index (address bits 4..) with the bits that say which "
                "128-byte line of the pattern the address lies in (bits 7..): 1 bit for 32B, 2 for 64B, 3 "
                "for 128B (CuTe Swizzle<B,4,3>; PTX ISA 5.5.7 'Tensor swizzling modes')")
RULE_COORDS = ("a TMA store takes the coordinates of the box's first element, innermost (contiguous) "
               "dimension first, in elements: here dimension 0 is D's columns, dimension 1 its rows "
               "(PTX ISA 9.7.9.27.1.2; the tensor map of notebook 01); write them from blockIdx.x, "
               "blockIdx.y, BM and BN (not from the kernel's own n0 and m0)")
KERNEL_OWN = ("n0", "m0")      # the kernel's own coordinates: exercise 5.5 asks for them from blockIdx



def _args(cases):
    return [c if isinstance(c, tuple) else (c,) for c in cases]


# ---- Exercise 5.1: wavefronts of one st.shared.v4 ----------------------------------------------

def _wavefronts(addresses) -> int:
    return wavefronts(addresses, 16).wavefronts


def _worst_bank(addresses, lanes, distinct=True, first_word_only=False) -> int:
    """Wrong variants of the bank rule, to recognise a learner's mistake (the rule is BANK_RULE)."""
    words = [int(a) // 4 + k for a in np.asarray(addresses)[list(lanes)]
             for k in ((0,) if first_word_only else range(4))]
    if distinct:
        words = set(words)
    return int(np.bincount([w % SMEM_BANKS for w in words], minlength=SMEM_BANKS).max())


def _wavefront_shown():
    cases = [addr for addr, _ in bank_patterns().values()]
    # one conflicting quarter-warp among three clean ones; every lane writing the same 16 bytes
    cases += [np.concatenate([128 * np.arange(8), 16 * np.arange(8, 32)]), np.full(32, 256)]
    return cases


@course_cases("store_wavefronts")
def check_wavefronts(fn, hidden=()) -> None:
    """Exercise 5.1: `fn(addresses)` returns the shared-memory wavefronts of one st.shared.v4 of a
    warp, lane i writing the 16 bytes at addresses[i] (32 addresses, multiples of 16); `hidden`: more
    address vectors, course data."""
    cases = [np.asarray(c, dtype=np.int64) for c in [*_wavefront_shown(), *hidden]]
    phases = [range(p, p + 8) for p in range(0, 32, 8)]
    hint = which_mistake(fn, _args(cases), [
        ("the warp was counted as one phase: a 16-byte access is served in four quarter-warps of 8 lanes, "
         "one after another", lambda a: _worst_bank(a, range(32))),
        ("the phases are served one after another: add their wavefronts, do not take the largest",
         lambda a: max(wavefronts(a, 16).wavefronts_per_phase)),
        ("a 4-byte word written by two lanes of a phase costs one wavefront, not two: count distinct words",
         lambda a: sum(_worst_bank(a, p, distinct=False) for p in phases)),
        ("16 bytes cover 4 consecutive banks, not one", lambda a: sum(_worst_bank(a, p, first_word_only=True)
                                                                     for p in phases)),
        ("one wavefront per lane: lanes of a phase that write different banks share one wavefront; only "
         "distinct words in the same bank queue up", lambda a: 32),
    ])
    check_function("wavefronts of one st.shared.v4", fn, cases, reference=_wavefronts, rule=BANK_RULE,
                   hint=hint, note=f"{len(cases)} address patterns agree",
                   more="" if hidden else "the stores of staged tiles in every swizzle and random addresses")


# ---- Exercise 5.2: where a missing fence bites ------------------------------------------------

def _stale(steps) -> bool:
    """Replay the steps on EpilogueOrdering: may the TMA store that follows them read stale SMEM?"""
    e = EpilogueOrdering(buffers=("D",))
    act = {"st.shared": lambda: e.st_shared("D"), "fence.proxy.async": e.fence_proxy_async,
           "bar.sync": e.bar_sync}
    for s in steps:
        if s not in act:
            raise ValueError(f"a step is one of {FENCE_STEPS}, got {s!r}")
        act[s]()
    try:
        e.tma_store("D")
    except OrderingError:
        return True
    return False


def _after_last_write(steps, what) -> bool:
    last = max(i for i, s in enumerate(steps) if s == "st.shared")
    return what in steps[last + 1:]


@course_cases("store_fence")
def check_fence(fn, hidden=()) -> None:
    """Exercise 5.2: `fn(steps)` says whether the TMA store that follows `steps` (every thread of
    the CTA executes each step; the tile's writes are `st.shared`) may read stale SMEM; `hidden`: more
    step lists, course data."""
    w, f, b = FENCE_STEPS
    cases = [[w, f, b], [w, b], [f, w, b], [w, b, f], [w, f], [w, f, b, w, f, b], [w, f, b, w, b]]
    cases += [list(c) for c in hidden]
    hint = which_mistake(fn, _args(cases), [
        ("a fence anywhere is not enough: one before a write orders nothing written after it",
         lambda s: "fence.proxy.async" not in s),
        ("the fence orders a thread's own writes for the async proxy; the thread that issues the store "
         "must also be ordered after every writer's fence: a barrier after the fences",
         lambda s: not _after_last_write(s, "fence.proxy.async")),
        ("a barrier orders the generic proxy only; the TMA engine reads through the async proxy, so every "
         "writer needs fence.proxy.async after its writes", lambda s: not _after_last_write(s, "bar.sync")),
        ("the order matters: the fence, then the barrier; a fence after the barrier is not ordered before "
         "the issuing thread's store",
         lambda s: not (_after_last_write(s, "fence.proxy.async") and _after_last_write(s, "bar.sync"))),
        ("never stale is too hopeful: st.shared writes through the generic proxy and the TMA store reads "
         "through the async proxy, so without fence.proxy.async after the writes (then a barrier) it may "
         "read what SMEM held before", lambda s: False),
    ])
    check_function("may the TMA store read stale SMEM?", fn, _args(cases), reference=_stale,
                   rule=PROXY_FENCE_RULE, hint=hint, note=f"{len(cases)} step sequences agree",
                   more="" if hidden else "every sequence of up to five steps")


# ---- Exercise 5.3: wait_group.read in a ring of buffers ----------------------------------------

def ring_epilogue(stages: int, n: int, tiles: int | None = None) -> EpilogueOrdering:
    """An epilogue that writes `tiles` tiles through a ring of `stages` SMEM buffers, waiting with
    `wait_group.read n` (then a barrier) before it rewrites a buffer; replayed on EpilogueOrdering
    with `strict=False`, so `.hazards` lists every unsafe step and `.log` the steps."""
    stages, n = int(stages), int(n)
    if stages < 1:
        raise ValueError(f"a ring has at least one buffer, got {stages}")
    e = EpilogueOrdering(buffers=tuple(f"D{i}" for i in range(stages)), strict=False)
    for it in range(2 * stages + 2 if tiles is None else int(tiles)):
        buf = f"D{it % stages}"
        if it >= stages:
            e.wait_group_read(n)
            e.bar_sync()
        e.st_shared(buf); e.fence_proxy_async(); e.bar_sync()
        e.tma_store(buf); e.commit_group()
    e.wait_group_read(0)
    e.exit()
    return e


def _max_read_wait(stages) -> int:
    return max(n for n in range(int(stages) + 2) if not ring_epilogue(stages, n).hazards)


@course_cases("store_wait_ring")
def check_ring_wait(fn, hidden=()) -> None:
    """Exercise 5.3: `fn(stages)` returns the largest N for which `wait_group.read N` before
    rewriting a buffer keeps a ring of `stages` SMEM buffers safe (rings of 1 to 4 buffers; `hidden`:
    more ring sizes, course data)."""
    cases = [1, 2, 3, 4] + [int(c) for c in hidden]
    hint = which_mistake(fn, _args(cases), [
        ("with N = stages the store that last read this buffer may be among the N still reading it: "
         "the write would race with it", lambda s: s),
        ("safe, but wait_group.read 0 waits for every store: none overlaps the next tiles' writes, and "
         "the extra buffers buy nothing", lambda s: 0),
        ("one short of the largest: stages - 2 keeps one group fewer in flight than the ring allows (only "
         "the group that read this buffer must be done), and for a ring of one buffer it gives -1, which is "
         "no N at all: wait_group's N counts groups, 0 or more", lambda s: s - 2),
    ])
    check_function("the largest safe N of wait_group.read in a ring of buffers", fn, cases,
                   reference=_max_read_wait, rule=RULE_RING, hint=hint,
                   note=f"ring sizes {', '.join(map(str, cases))} agree (the model replays each ring)",
                   more="" if hidden else "rings of up to 8 buffers")


# ---- Exercise 5.4: the staging address of an element ------------------------------------------

_DTYPE_OF = {4: "float32", 2: "bfloat16"}


def _staged_offset(row, col, elem_bytes, swizzle) -> int:
    if elem_bytes not in _DTYPE_OF or swizzle not in MODES[1:]:
        raise ValueError(f"elem_bytes is 2 or 4, swizzle one of {MODES[1:]}")
    tile = SmemTile(256, row_bytes(swizzle) // elem_bytes, _DTYPE_OF[elem_bytes], swizzle)
    return int(tile.address(row, col))


STAGING_SHOWN = [(0, 0, 4, "128B"), (1, 0, 4, "128B"), (5, 13, 4, "128B"), (127, 31, 4, "128B"),
                 (3, 8, 2, "128B"), (3, 8, 2, "64B"), (5, 9, 2, "64B"), (6, 4, 4, "32B"), (4, 1, 2, "32B")]


def _row_xor(row, col, eb, mode, bits=None):
    bits = swizzle_of(mode).bits if bits is None else bits
    chunk, within = divmod(col * eb, 16)
    return row * row_bytes(mode) + 16 * (chunk ^ (row % (1 << bits))) + within


def _xor_lines(a: int, bits: int) -> int:
    """The 16-byte chunk bits 4.. XORed with `bits` bits of the 128-byte line (Swizzle<bits,4,3>)."""
    return a ^ (((a >> 7) & ((1 << bits) - 1)) << 4)


@course_cases("store_swizzle_offset")
def check_staged_offset(fn, hidden=()) -> None:
    """Exercise 5.4: `fn(row, col, elem_bytes, swizzle)` returns the SMEM byte offset (from a
    1024-byte aligned base) of element (row, col) of a D tile one swizzle row wide; `hidden`: more
    cases, course data."""
    cases = STAGING_SHOWN + [tuple(c) for c in hidden]
    hint = which_mistake(fn, cases, [
        ("that is the address before the swizzle", lambda r, c, e, m: r * row_bytes(m) + c * e),
        ("the chunk was XORed with the row number; the swizzle XORs it with address bits 7.. (which "
         "128-byte line), and a 32- or 64-byte row is only part of a line", _row_xor),
        ("that is the 128B pattern (chunk ^ row % 8) for every mode; 32B and 64B XOR 1 and 2 bits",
         lambda r, c, e, m: _row_xor(r, c, e, m, bits=3)),
        ("rows of 128 bytes in every mode: a tile one 32B or 64B swizzle row wide has rows of 32 or 64 bytes",
         lambda r, c, e, m: _xor_lines(r * 128 + c * e, 3)),
        ("col counts elements; the offset counts bytes: multiply by elem_bytes",
         lambda r, c, e, m: _xor_lines(r * row_bytes(m) + c, swizzle_of(m).bits)),
    ])
    check_function("the SMEM offset of a staged D element", fn, cases, reference=_staged_offset,
                   rule=RULE_STAGING, hint=hint, note="" if not hidden else f"{len(cases)} elements agree",
                   more="" if hidden else "hundreds of random elements in every swizzle",
                   family=_staged_family, draws=300, family_text="elements of every swizzle")


def _staged_family(rng) -> tuple:
    """A random element (row, col, element bytes, swizzle) of a D tile one swizzle row wide, 256 rows."""
    mode = MODES[1:][int(rng.integers(len(MODES) - 1))]
    eb = (2, 4)[int(rng.integers(2))]
    return (int(rng.integers(0, 256)), int(rng.integers(0, row_bytes(mode) // eb)), eb, mode)


# ---- Exercise 5.5: the coordinates of the teaching kernel's TMA store --------------------------

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
        ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}


def _c_int(expr: str, names: dict) -> int:
    """An integer C expression of `names` (blockIdx.x / .y written as such): constants, + - * / % <<
    >> & | ^ and parentheses. ValueError for anything else."""
    py = re.sub(r"\b(\d+)[uU]\b", r"\1", expr).replace("/", "//")
    py = py.replace("blockIdx.x", "blockIdx_x").replace("blockIdx.y", "blockIdx_y").replace("threadIdx.x", "threadIdx_x")

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name) and node.id in names:
            return names[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -ev(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        known = ", ".join(sorted(n.replace("_", ".") if "Idx" in n else n for n in names))
        raise ValueError(f"the model follows integer expressions of {known}; it cannot evaluate {expr!r}")
    try:
        return int(ev(ast.parse(py, mode="eval")))
    except (SyntaxError, ZeroDivisionError) as e:
        raise ValueError(f"cannot evaluate {expr!r}: {e}") from None


def _names(p, bx: int, by: int) -> dict:
    return {"n0": bx * p.bn, "m0": by * p.bm, "BM": p.bm, "BN": p.bn, "row": 0, "threadIdx_x": 0,
            "blockIdx_x": bx, "blockIdx_y": by, "SWIZZLE_BITS": MODES.index(p.swizzle)}


def _coords_mistake(coords, p) -> str:
    """What a wrong pair of coordinates is, judged at CTA (2, 1) of the grid."""
    nm = _names(p, 2, 1)
    try:
        got = tuple(_c_int(c, nm) for c in coords)
    except ValueError:
        return ""
    n0, m0 = nm["n0"], nm["m0"]
    return {(m0, n0): "the row and column coordinates are swapped: dimension 0 (the first coordinate) is "
                      "the contiguous one, D's columns",
            (2, 1): "those are the tile indices; the TMA takes element coordinates (n0 = blockIdx.x * BN)",
            (n0 * 4, m0): "that counts bytes; TMA coordinates count elements",
            (2 * p.bm, 1 * p.bn): "BM and BN swapped: x counts D's columns, in tiles of BN; y its rows, in tiles "
                                  "of BM"}.get(got, "")


def _origin(p, acc, got, index) -> str:
    """Where the value found at D[index] came from: which accumulator element, so which CTA stored it."""
    r, c = index
    hits = np.argwhere(np.ascontiguousarray(acc).view(np.uint32) == got.view(np.uint32)[r, c])
    if not len(hits):
        return f"D[{r}, {c}] kept its old value: no CTA's store wrote it"
    ar, ac = (int(v) for v in hits[0])
    return (f"D[{r}, {c}] holds acc[{ar}, {ac}], an element of the tile of CTA blockIdx = "
            f"({ac // p.bn}, {ar // p.bm}): that CTA's store landed {r - ar:+d} rows, {c - ac:+d} columns away "
            "from where the element belongs")


def _gpu_line(p, acc, d0, kernel, case) -> tuple[bool, str]:
    from .. import device
    tier = device.tier("store")
    if tier not in ("hardware", "emulated"):
        return True, "GPU: not run here (the TMA store needs an sm_90 GPU; the model ran your coordinates)"
    from .case import run_teach
    where = "the PTX emulator" if tier == "emulated" else device.gpu_info().name
    label = "emulator" if tier == "emulated" else "GPU"
    try:
        res = case.check(run_teach(p, acc, d0, kernel=kernel), source=f"{where}, your kernel")
    except Exception as e:       # a fault or hang (worker or emulator) comes back as an exception
        return False, f"{label}: your kernel failed: {type(e).__name__}: {e}"
    return res.ok, str(res)


@course_cases("store_kernel_coords")
def check_store_coords(coords, hidden=()) -> None:
    """Exercise 5.5: `coords` = (x, y), the C expressions the teaching kernel passes to
    `tma_store_2d(&tmap_d, tile, x, y)`. They are put into teach_store.cu, which is compiled; the
    model stores every CTA's tile at the coordinates they give, on an sm_90 GPU the edited kernel
    runs in a worker process, and each D is compared with the epilogue's model: a 150 x 70 problem,
    then the (M, N) problems that `hidden` (course data) names."""
    from ..compile import CompileError
    from ..lab import TeachingKernel
    from .case import Epilogue
    from .model import epilogue_model
    from .problem import teach_problem
    name = "the coordinates of the teaching kernel's TMA store"
    if unanswered(coords):
        raise NotYet(f"{name}: no answer yet — give my_store_coords as two C expressions (x, y).\n"
                     f"  rule: {RULE_COORDS}")
    if not isinstance(coords, (tuple, list)) or len(coords) != 2 or not all(isinstance(c, str) for c in coords):
        raise NotYet(f"{name}: give two C expressions as strings, e.g. (\"blockIdx.x\", \"0\"); got {coords!r}.\n"
                     f"  rule: {RULE_COORDS}")
    x, y = (c.strip() for c in coords)
    own = [v for v in KERNEL_OWN if re.search(rf"\b{v}\b", x + " " + y)]
    if own:
        raise NotYet(f"{name}: ({x}, {y}) uses {' and '.join(own)}, the kernel's own coordinates, so it "
                     "would only copy the line as written; work out each coordinate from blockIdx.x, "
                     f"blockIdx.y, BM and BN.\n  rule: {RULE_COORDS}")
    kernel = TeachingKernel("teach_store.cu").replace(STORE_LINE, f"tma_store_2d(&tmap_d, tile, {x}, {y});")
    try:
        kernel.compile("sm_90a")
    except CompileError as e:
        where = str(e).split("--- where ---")[-1].strip()
        raise NotYet(f"{name}: your kernel does not compile for sm_90a:\n{where}\n  rule: {RULE_COORDS}") from None
    problems = [(teach_problem(150, 70), 0)] + [(teach_problem(m, n), i + 1) for i, (m, n) in enumerate(hidden)]
    notes = []
    for p, seed in problems:
        acc, _, d0 = p.random_inputs(np.random.default_rng(seed))
        case = Epilogue(p, acc, None, d0)

        def boxes(tm, tn, p=p):
            nm = _names(p, tn, tm)
            return [((_c_int(x, nm), _c_int(y, nm)), p.tile.box_address(0))]
        try:
            got = epilogue_model(p, acc, None, d0, box_coords=boxes)
        except (ValueError, StoreRuleError) as e:
            mistake = _coords_mistake((x, y), p)
            raise NotYet(f"{name}: ({x}, {y}) compiles, but the model refuses the store: {e}\n"
                         f"  rule: {RULE_COORDS}" + (f"\n  your coordinates: {mistake}" if mistake else "")) from None
        res = case.check(got, source="your coordinates, on the model")
        if not res.ok:
            mistake = _coords_mistake((x, y), p)
            # the case's own hint is about fences and swizzles; here only the coordinates changed
            report = "\n".join(l for l in str(res).splitlines() if not l.lstrip().startswith("hint:"))
            raise NotYet(f"{name}: ({x}, {y}) compiles, but D is not what the epilogue must write "
                         f"({p.M} x {p.N}).\n{report}\n  {_origin(p, acc, got, res.first.index)}\n"
                         f"  rule: {RULE_COORDS}" + (f"\n  your coordinates: {mistake}" if mistake else ""))
        ok, gpu = _gpu_line(p, acc, d0, kernel, case)
        if not ok:
            raise NotYet(f"{name}: the model agrees, but the GPU does not.\n{gpu}")
        notes.append(f"{p.M} x {p.N}: {res.compared} elements equal the model; {gpu}")
    check_result(name, res, note=f"({x}, {y}): " + "; ".join(notes))
