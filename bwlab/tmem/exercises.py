"""Checks for notebook 04's graded exercises (TMEM addresses, warp quarters, tcgen05.ld thread maps,
and an edit of the teaching kernel cuda_src/teach_tmem.cu).

Every expected value comes from this package's model (`bwlab.hw.tmem` addresses and quarters,
`TmemAccess` register counts, `ld_fragment_map` thread maps, `teach_model` replaying the kernel), and
every check goes through the generic checks of `bwlab.exercises`, so a wrong answer raises `NotYet`
naming the quantity, the learner's value, the model's, the rule (PTX ISA "Tensor Memory",
"Tensor Memory access restrictions", "Matrix fragments for tcgen05.ld/st", "tcgen05.alloc") and,
where it recognises one, the mistake. 4.3's column count is the student's own (`wide_columns`, from
`bwlab.variants`).
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..exercise_mistakes import which_mistake
from ..exercises import NotYet, check_function, check_result, check_value, course_cases, unanswered
from ..hw.tmem import TmemError, decode_address, encode_address, warp_lane_range
from .forms import COLUMNS_PER_NUM, LANES_PER_SHAPE, SHAPES, TmemAccess, ld_fragment_map
from .tables import ALLOC_NCOLS, SEC_ACCESS, SEC_ALLOC, SEC_SHAPE

__all__ = ["check_address", "check_quarter", "check_wide_load", "check_registers", "check_holder",
           "WIDE_COLUMNS", "WIDE_VARIANTS", "wide_columns", "HOLDER_SHAPES"]

RULE_ADDRESS = ("a TMEM address is 32 bits: lane in bits 31-16, column in bits 15-0 (PTX ISA 'Tensor "
                "Memory'); tcgen05.alloc writes lane 0 and the allocation's first column, and a warp "
                "ADDS its lane and its column offset to that address (the ISA does not say where an "
                "allocation lands, so assume nothing about its alignment)")
RULE_QUARTER = (f"warp w of a CTA may access only TMEM lanes 32*(w % 4) .. 32*(w % 4) + 31 ({SEC_ACCESS}): "
                "warps 4..7 reach the same quarters as warps 0..3")
RULE_REGISTERS = (f"one tcgen05.ld.<shape>.x1 moves lanes x bits of TMEM, spread over the 32 threads of the "
                  f"warp in 32-bit registers: .32x32b and .16x64b 1, .16x128b 2, .16x256b 4, .16x32bx2 1 "
                  f"register per thread; .xN repeats that N times; .pack::16b puts two 16-bit cells in one "
                  f"register, so it keeps the count and doubles the columns ({SEC_SHAPE})")
RULE_HOLDER = (f"the thread map of the shape ({SEC_SHAPE}): .32x32b thread t = lane t, register j = column "
               "j; .16x64b thread t reads lane t/4 + 8*(t%2), column (t/2)%2 + 2j; .16x128b lanes t/4 "
               "(j even) and t/4 + 8 (j odd), column t%4 + 4*(j/2); .16x256b lane t/4 + 8*((j/2)%2), "
               "column 2*(t%4) + j%2 + 8*(j/4); .xN repeats the x1 pattern to the right")
WIDE_COLUMNS = 64        # exercise 4.3, the self-study variant: every thread brings back this many columns
# Every student's column count (bwlab.variants): each .num of tcgen05.ld.32x32b (a power of two, x1 ..
# x128) but x8, which the unedited kernel already loads; the first is the self-study one.
WIDE_VARIANTS = (WIDE_COLUMNS, 1, 2, 4, 16, 32, 128)
HOLDER_SHAPES = ("32x32b", "16x64b", "16x128b", "16x256b")



# ---- Exercise 4.1: the TMEM address of (lane, column) -----------------------------------------

def _address(base, lane, column):
    lane0, col0 = decode_address(base)
    return encode_address(lane0 + lane, col0 + column)


ADDRESS_SHOWN = [(0x0, 0, 0), (0x0, 37, 13), (0x100, 64, 8), (0x100, 127, 127), (0x60, 5, 40)]


@course_cases("tmem_address")
def check_address(fn, hidden=()) -> None:
    """Exercise 4.1: `fn(base, lane, column)` returns the TMEM address of `lane` and the column
    `column` columns into the allocation whose address tcgen05.alloc wrote as `base`; `hidden`: more
    (base, lane, column), course data."""
    cases = ADDRESS_SHOWN + [tuple(c) for c in hidden]
    hint = which_mistake(fn, cases, [
        ("lane and column are swapped: the lane goes in bits 31-16, the column in bits 15-0",
         lambda b, l, c: b + (c << 16) + l),
        ("the allocation's base is missing: the column offset counts from the allocation's first column",
         lambda b, l, c: (l << 16) | c),
        ("that is a row-major index lane * 512 + column; the lane sits in its own bit field, bits 31-16",
         lambda b, l, c: b + l * 512 + c),
        ("the fields are ORed into the base: with a base whose column bits overlap the offset that "
         "loses a carry; add them", lambda b, l, c: b | (l << 16) | c),
    ])
    check_function("the TMEM address of (lane, column)", fn, cases, reference=_address, rule=RULE_ADDRESS,
                   hint=hint, note="" if not hidden else f"{len(cases)} addresses agree",
                   more="" if hidden else "allocations of every size, anywhere in the 512 columns",
                   family=_address_family, draws=200, family_text="allocations of every size in the 512 columns")


def _address_family(rng) -> tuple:
    """A random allocation (a power of two of 32..512 columns at a multiple of its size) and a cell in it."""
    ncols = 32 << int(rng.integers(0, 5))
    col0 = ncols * int(rng.integers(0, 512 // ncols))
    return (encode_address(0, col0), int(rng.integers(0, 128)), int(rng.integers(0, ncols)))


# ---- Exercise 4.2: which warp may access which lane --------------------------------------------

def _may_access(warp, lane) -> bool:
    lo, hi = warp_lane_range(warp)
    return lo <= lane < hi


@course_cases("tmem_quarter")
def check_quarter(fn, hidden=()) -> None:
    """Exercise 4.2: `fn(warp, lane)` says whether warp `warp` of a CTA may access TMEM lane `lane`;
    `hidden`: more (warp, lane), course data."""
    cases = [(w, l) for w in range(8) for l in (0, 31, 32, 63, 64, 95, 96, 127)] + [tuple(c) for c in hidden]
    hint = which_mistake(fn, cases, [
        ("you compare the lane's quarter with the warp index itself: warps 4 and up would reach no lane "
         "at all; the quarter is warp % 4", lambda w, l: l // 32 == w),
        ("a warp may not reach every lane: only the 32 lanes of its quarter", lambda w, l: True),
        ("the quarter ends at lane 32*(w % 4) + 31, inclusive", lambda w, l: 32 * (w % 4) <= l < 32 * (w % 4) + 31),
        ("a quarter of TMEM's 128 lanes is 32 lanes (one per thread of the warp), not 16",
         lambda w, l: 16 * (w % 4) <= l < 16 * (w % 4) + 16),
    ])
    check_function("warp quarters (which warp may access which lane)", fn, cases, reference=_may_access,
                   rule=RULE_QUARTER, hint=hint, note="" if not hidden else f"{len(cases)} (warp, lane) pairs agree",
                   more="" if hidden else "every lane for warps 0 to 31",
                   family=lambda rng: (int(rng.integers(0, 32)), int(rng.integers(0, 128))), draws=300,
                   family_text="warps 0..31 and lanes 0..127")


# ---- Exercise 4.3: the teaching kernel, this student's columns per thread -------------------------

def wide_columns(token: str | None = None) -> int:
    """The columns of its lane every thread brings back in exercise 4.3, for this student."""
    from .. import variants
    return variants.pick("tmem_kernel_columns", WIDE_VARIANTS, token)


def _wide_kernel(num, columns):
    from ..lab import TeachingKernel
    from .teach import TEACH_FILE
    return (TeachingKernel(TEACH_FILE)
            .replace("constexpr u32 kColumns = 32;", f"constexpr u32 kColumns = {columns};")
            .replace("constexpr int kNum = 8;", f"constexpr int kNum = {num};"))


def _gpu_line(kernel, case) -> tuple[bool, str]:
    """Run the edited kernel on an sm_100 GPU (in a worker process) and compare it with `case`."""
    from .. import device
    if device.tier("tmem") != "hardware":
        return True, "GPU: not run here (tcgen05 and TMEM need an sm_100-family GPU; the model ran your kernel)"
    from .case import run_teach
    try:
        res = case.check(run_teach(kernel), source=f"{device.gpu_info().name}, your kernel")
    except Exception as e:       # a fault or hang in the worker comes back as an exception
        return False, f"GPU: your kernel failed: {type(e).__name__}: {e}"
    return res.ok, str(res)


@course_cases("tmem_kernel_columns")
def check_wide_load(num, columns, hidden=()) -> None:
    """Exercise 4.3: `num` (kNum) and `columns` (kColumns) make every thread of teach_tmem.cu bring
    back wide_columns() columns of its lane (this student's number, bwlab.variants) with one
    tcgen05.ld.32x32b, from the smallest allocation that holds them. The kernel is edited, compiled
    for sm_100a, replayed on the model (and run on an sm_100 GPU where there is one); the result is
    compared register by register with a .32x32b.x<columns> load. `hidden` (course data) may name
    "ptx": the PTX must then hold exactly one tcgen05.ld and one tcgen05.st of that form."""
    from ..compile import CompileError
    from .alloc import brief
    from .case import TmemLoad
    from .teach import address_image, teach_model, compile_report as _compile_report
    wide = wide_columns()
    name = f"teach_tmem.cu with {wide} column{'s' if wide > 1 else ''} per thread"
    rule = (f"kNum is the .num of tcgen05.ld/st.32x32b: one register per column per thread, a power of two "
            f"x1 .. x128; kColumns is tcgen05.alloc's column count: a power of two in [32, 512] ({SEC_ALLOC}), "
            f"at least the columns the loads touch")
    if unanswered(num) or unanswered(columns):
        raise NotYet(f"{name}: no answer yet — set my_kNum and my_kColumns.\n  rule: {rule}")
    for what, v in (("my_kNum", num), ("my_kColumns", columns)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            raise NotYet(f"{name}: {what} must be an integer, got {v!r}.\n  rule: {rule}")
    num, columns = int(num), int(columns)
    kernel = _wide_kernel(num, columns)
    try:
        built = kernel.compile("sm_100a")
    except CompileError as e:
        raise NotYet(f"{name}: your kernel (kNum = {num}, kColumns = {columns}) does not compile for "
                     f"sm_100a:\n{_compile_report(e)}\n  rule: {rule}") from None
    try:
        got = teach_model(kernel)
    except TmemError as e:
        raise NotYet(f"{name}: the model refuses your kernel (kNum = {num}, kColumns = {columns}): "
                     f"{brief(str(e))}\n  rule: {rule}") from None
    case = TmemLoad(TmemAccess("32x32b", wide), address_image(), 0)
    want = case.model()
    if got.shape[-1] != want.shape[-1]:
        n = min(num, wide)      # the first register one side has and the other lacks
        what = (f"warp 0, thread 0 has no register {n}, the cell at TMEM lane 0, column {n}"
                if num < wide else
                f"warp 0, thread 0 also gets register {n} (lane 0, column {n}), which the task does not ask for")
        raise NotYet(f"{name}: your kernel compiles and the model runs it, but each thread receives {num} "
                     f"registers, columns 0..{num - 1}, not {wide}: {what}.\n  rule: {rule}")
    res = case.compare(want, got, source="your kernel, replayed on the model")
    if not res.ok:
        check_result(name, res)          # raises NotYet naming the first differing register
    ok, gpu = _gpu_line(kernel, case)
    if not ok:
        raise NotYet(f"{name}: not yet.\n{gpu}")
    if "ptx" in hidden:
        ptx = built.ptx_of("teach_tmem")
        for op in ("ld", "st"):
            form = TmemAccess("32x32b", wide).ptx(op)
            if ptx.count(form) != 1:
                raise NotYet(f"{name}: the PTX of your kernel holds {ptx.count(form)} x {form}, expected 1.\n"
                             f"  rule: {rule}")
    smallest = min(n for n in ALLOC_NCOLS if n >= wide)
    check_value(f"{name}: the allocation (the task asks for the smallest that holds the columns)", columns,
                smallest,
                rule=rule + "; the 512 columns are shared by every CTA on the SM, so the task asks for the "
                            "smallest allocation that holds the columns the loads touch",
                mistakes=lambda c: (f"{c} columns is a legal allocation and your kernel works, but it is not "
                                    f"the smallest that holds {wide} columns: the columns no load "
                                    "touches could have gone to another CTA on this SM"
                                    if c > smallest else None),
                note=f"your kernel compiles for sm_100a; {res.compared} registers of the model's replay "
                     f"equal a .32x32b.x{wide} load; {gpu}")


# ---- Exercise 4.4: registers per thread ---------------------------------------------------------

def _registers(shape, num, pack16=False):
    return TmemAccess(shape, num, pack16).registers


@course_cases("tmem_registers")
def check_registers(fn, hidden=()) -> None:
    """Exercise 4.4: `fn(shape, num, pack16=False)` returns the 32-bit registers each thread receives
    from tcgen05.ld.<shape>.x<num>[.pack::16b]; `hidden`: more (shape, num, pack16), course data."""
    cases = [(s, 1, False) for s in SHAPES] + [("16x256b", 8, False), ("16x128b", 64, False),
                                                ("32x32b", 128, False), ("16x64b", 4, True)]
    cases += [tuple(c) for c in hidden]
    cols, lanes = COLUMNS_PER_NUM, LANES_PER_SHAPE      # 32-bit columns of one lane, and lanes, for .x1
    hint = which_mistake(fn, cases, [
        (".pack::16b does not halve the registers: it puts two 16-bit cells into each, so the same "
         "registers cover twice the columns", lambda s, n, p=False: _registers(s, n) // (2 if p else 1)),
        ("that is the 32-bit columns of one lane; a 16-lane shape spreads 16 lanes over 32 threads, so "
         "a thread gets half a lane's columns", lambda s, n, p=False: cols[s] * n),
        ("that is the registers of the whole warp; divide by its 32 threads",
         lambda s, n, p=False: lanes[s] * cols[s] * n),
    ])
    check_function("registers per thread of a tcgen05.ld form", fn, cases, reference=_registers,
                   rule=RULE_REGISTERS, hint=hint, note="" if not hidden else f"{len(cases)} forms agree",
                   more="" if hidden else "every legal shape, .num and .pack::16b",
                   family=_form_family, draws=200, family_text="legal shapes, .num and .pack::16b")


def _form_family(rng) -> tuple:
    """A random legal tcgen05.ld form (shape, .num, .pack::16b)."""
    from .forms import NUMS
    while True:
        shape, num = SHAPES[int(rng.integers(len(SHAPES)))], int(NUMS[int(rng.integers(len(NUMS)))])
        pack = bool(rng.integers(2))
        try:
            TmemAccess(shape, num, pack)
        except Exception:
            continue
        return (shape, num, pack)


# ---- Exercise 4.5: which thread and register hold a cell ---------------------------------------

@lru_cache(maxsize=None)
def _inverse_map(shape: str, num: int) -> dict:
    m = ld_fragment_map(shape, num)
    return {(int(m[t, j, 0]), int(m[t, j, 1])): (t, j) for t in range(32) for j in range(m.shape[1])}


def _holder(shape, num, lane, column):
    return _inverse_map(shape, num)[(lane, column)]


def _holder_shown():
    cases = []
    for s in HOLDER_SHAPES:
        a = TmemAccess(s, 1)
        cases += [(s, 1, 0, 0), (s, 1, a.lanes - 1, a.width - 1), (s, 1, 9 % a.lanes, 1 % a.width),
                  (s, 2, 3, TmemAccess(s, 2).width - 1)]
    cases.append(("16x256b", 8, 5, 13))          # notebook 04's worked example: lane 37 = 32 + 5
    return cases


@course_cases("tmem_holder")
def check_holder(fn, hidden=()) -> None:
    """Exercise 4.5: `fn(shape, num, lane, column)` returns (thread, register): which thread of the
    warp, and which of its registers, holds the cell `lane`, `column` (both counted from the address
    the warp passes) after tcgen05.ld.<shape>.x<num> (no pack). `hidden`: more (shape, num, lane,
    column), course data."""
    cases = _holder_shown() + [tuple(c) for c in hidden]
    hint = which_mistake(fn, cases, [
        ("that is the .32x32b map (thread = lane, register = column) for every shape; a 16-lane shape "
         "spreads its 16 lanes over the 32 threads", lambda s, n, l, c: (l, c)),
        ("(register, thread) is the wrong order: return (thread, register)",
         lambda s, n, l, c: _holder(s, n, l, c)[::-1]),
    ])
    if not hint and callable(fn):
        try:
            # "right for .x1" only when it is: every cell of every shape's .x1 map, not the few shown
            x1 = [(sh, 1, lane, col) for sh in HOLDER_SHAPES for lane in range(TmemAccess(sh, 1).lanes)
                  for col in range(TmemAccess(sh, 1).width)]
            if all(tuple(fn(*c)) == _holder(*c) for c in x1) and \
                    any(tuple(fn(*c)) != _holder(*c) for c in cases if c[1] > 1):
                hint = ("right for .x1; .xN repeats the x1 pattern to the right: each repetition is the "
                        "x1 width further right and its registers follow those of the one before")
        except Exception:
            pass
    if not hint and callable(fn):
        try:
            wrong = [c for c in x1 if tuple(fn(*c)) != _holder(*c)]
            if wrong:
                sh = wrong[0][0]
                n_sh = sum(1 for c in wrong if c[0] == sh)
                hint = (f"{n_sh} of the {TmemAccess(sh, 1).lanes * TmemAccess(sh, 1).width} cells of one "
                        f".{sh}.x1 load differ (e.g. lane {wrong[0][2]}, column {wrong[0][3]}): get .x1 right "
                        "first, cell by cell, from the ISA's figure of the shape")
        except Exception:
            pass
    check_function("the thread and register holding a TMEM cell", fn, cases, reference=_holder,
                   rule=RULE_HOLDER, hint=hint, note="" if not hidden else f"{len(cases)} cells agree",
                   more="" if hidden else "random cells of every shape and legal .num",
                   family=holder_family, draws=300, family_text="cells of every shape and .num")


def holder_family(rng) -> tuple:
    """A random cell of a random shape and legal .num (no pack): the family 4.5's graded cases come from."""
    from .forms import NUMS
    shape = HOLDER_SHAPES[int(rng.integers(len(HOLDER_SHAPES)))]
    nums = []
    for n in NUMS:
        try:
            TmemAccess(shape, n)
            nums.append(n)
        except Exception:
            continue
    a = TmemAccess(shape, int(nums[int(rng.integers(len(nums)))]))
    return (shape, a.num, int(rng.integers(a.lanes)), int(rng.integers(a.width)))
