"""The checks of notebook 07's graded exercises (conventions: bwlab/exercises.py), from the ladder's models:

* `check_stage_bytes(fn)`  — the SMEM bytes of one pipeline stage, for any tile (`ladder.Step.stage_bytes`);
* `check_ctas_per_sm(fn)`  — CTAs on one H100 SM from SMEM, registers, threads (`occupancy.fit`; the ladder's cubins);
* `check_producer_parity(fn)` — the parity the producer's wait on a ring buffer's `empty` mbarrier passes on
  (`bwlab.hw.mbarrier`; a test holds it to gemm_sm90/s3_warp_specialized.cu's);
* `check_flop_per_sm_cycle(fn)` — an SM's math per cycle: where step 2 loses to step 1 (`report.flop_per_sm_cycle`);
* `check_handshake(full_parity, empty_parity)` — the kernel edit: step 3's ring-wait parities as C expressions, run
  on the mbarrier model and, on a Hopper GPU, in a worker on a small GEMM (timed);
* `check_ring_depth(stages)` — speed by doing (speed_exercise.py).
"""
from __future__ import annotations

import ast
import dataclasses
import re

import numpy as np

from ..exercise_families import occupancy_family, occupancy_formula as _occ_formula
from ..exercises import NotYet, check_function_explained, course_cases, unanswered
from ..hw.mbarrier import Mbarrier
from ..util import ceil_div
from . import ladder, occupancy
from .report import flop_per_sm_cycle
from .speed_exercise import (HANDSHAKE_SHAPE, check_ring_depth, ring_deepest, ring_kernel, ring_prediction,
                             ring_step)

__all__ = ["stage_bytes", "check_stage_bytes", "check_ctas_per_sm", "producer_parity", "check_producer_parity",
           "check_flop_per_sm_cycle", "occupancy_cases", "ladder_periods", "eval_c_int", "handshake_kernel",
           "handshake_problems", "check_handshake", "ring_step", "ring_kernel", "ring_prediction", "ring_deepest",
           "check_ring_depth"]


# ---- 7.1 the bytes of one stage -----------------------------------------------------------------------

def stage_bytes(bm: int, bn: int) -> int:
    """SMEM bytes of one stage of a bm x bn tile's ring: the A and B slices of one k-slice."""
    return dataclasses.replace(ladder.STEPS[0], bm=bm, bn=bn).stage_bytes


STAGE_RULE = (f"one stage holds the A slice (bm rows) and the B slice (bn rows) of one k-slice: BK = "
              f"{ladder.BK} bf16 elements of each row, 2 bytes each")


def _explain_stage(args, got, want):
    """Every reading of `got` that fits (one value can be two mistakes: with bm = bn the elements of
    both slices are the bytes of one)."""
    bm, bn = args
    said = []
    if got == (bm + bn) * ladder.BK:
        said.append("that counts elements; the buffer holds bytes (bf16: 2 each)")
    if got in (bm * ladder.BK * 2, bn * ladder.BK * 2):
        said.append("that is the A slice alone (or B's): both slices share the stage")
    if got == bm * bn * 2 or got == bm * bn * 4:
        said.append("that is the size of a C tile; a stage holds the operands of one k-slice")
    if got == (bm + bn) * 128 * 2:
        said.append("a row of a k-slice is 128 bytes (64 bf16 elements), not 128 elements")
    return " — or ".join(said) or None


@course_cases("gemm_stage_bytes")
def check_stage_bytes(fn, hidden=()) -> None:
    """Exercise 7.1: fn(bm, bn) -> bytes of one pipeline stage; `hidden`: more (bm, bn), course data."""
    cases = [(128, 128), (64, 256)] + [tuple(c) for c in hidden]
    check_function_explained("bytes of one stage", fn, cases, reference=stage_bytes, explain=_explain_stage,
                             rule=STAGE_RULE, hint="section 1: what one k-slice is, in elements and in bytes",
                             more="" if hidden else "other tile shapes")


# ---- 7.2 CTAs per SM ----------------------------------------------------------------------------------

def occupancy_of(name: str, stages: int | None = None) -> tuple[int, int, int]:
    """(SMEM bytes per CTA, registers per thread, threads) of a ladder step's kernel as compiled."""
    occ = occupancy.ctas_per_sm(name, stages=stages)
    return (occ.smem_per_cta, occ.registers, ladder.step(name).threads)


def occupancy_cases(hidden=()) -> list[tuple[int, int, int]]:
    """(SMEM bytes per CTA, registers per thread, threads) of the ladder's kernels as compiled (step 1,
    step 2 with 3 stages), then the course data's `hidden` cases."""
    return [occupancy_of("s1"), occupancy_of("s2")] + [tuple(c) for c in hidden]


def _ctas(smem, regs, threads):
    return occupancy.fit(smem, regs, threads)[2]


OCC_RULE = (f"the fewest of: {occupancy.SMEM_PER_SM} bytes of SMEM per SM // SMEM per CTA; "
            f"{occupancy.REGS_PER_SM} registers // (registers per warp, rounded up to a multiple of "
            f"{occupancy.REG_UNIT_PER_WARP}, x warps per CTA); {occupancy.MAX_CTAS_PER_SM} CTAs; "
            f"{occupancy.MAX_WARPS_PER_SM} warps")


def _explain_occupancy(args, got, want):
    smem, regs, threads = args
    warps = ceil_div(threads, 32)
    by_smem, by_regs, _ = occupancy.fit(smem, regs, threads)
    unrounded = occupancy.REGS_PER_SM // (regs * 32 * warps)
    if got == min(by_smem, by_regs):
        return "an SM also holds at most 32 CTAs and 64 warps"
    if got == by_smem:
        return "that is what SMEM allows; another limit is lower"
    if got == by_regs:
        return "that is what the registers allow; another limit is lower"
    if got in (min(by_smem, unrounded), unrounded) and unrounded != by_regs:
        return (f"registers go to a warp in units of {occupancy.REG_UNIT_PER_WARP}: {regs} per thread is "
                f"{regs * 32} per warp, rounded up")
    if got == (228 * 1000) // smem:
        return "228 KiB is 228 x 1024 bytes"
    return None


OCC_MISTAKES = (
    (f"registers go to a warp in units of {occupancy.REG_UNIT_PER_WARP}: round registers x 32 up to a multiple "
     "of it before dividing", _occ_formula(unit=False)),
    ("228 KiB is 228 x 1024 bytes", _occ_formula(smem_sm=228 * 1000)),
    ("an SM also holds at most 32 CTAs and 64 warps", _occ_formula(caps=False)),
)


_OCC_PROBES = [occupancy_family(r) for r in [np.random.default_rng(7)] for _ in range(200)]


@course_cases("gemm_ctas_per_sm")
def check_ctas_per_sm(fn, hidden=()) -> None:
    """Exercise 7.2: fn(smem_per_cta, registers, threads) -> CTAs per SM; `hidden`: more, course data.
    Without `hidden`, 300 random CTAs of the family (occupancy_family) follow the shown cases."""
    from ..exercise_mistakes import which_mistake
    cases = occupancy_cases(hidden)
    # a whole formula first (one case can fit several readings): judged on the shown cases and a fixed
    # sample of the family, which holds cases that tell the mistakes apart
    whole = which_mistake(fn, cases + _OCC_PROBES, OCC_MISTAKES)
    check_function_explained("CTAs per SM", fn, cases, reference=_ctas,
                             explain=lambda *a: whole or _explain_occupancy(*a), rule=OCC_RULE,
                             family=occupancy_family, draws=300,
                             family_text="CTAs of any SMEM size, register count and warp count",
                             more="" if hidden else "other stage counts and CTAs limited by warps, CTAs "
                             "per SM and the register allocation unit",
                             hint="work out each limit on its own, then take the smallest")


# ---- 7.3 the parity a producer waits on ---------------------------------------------------------------

def producer_parity(kt: int, stages: int) -> int:
    """The parity of `try_wait.parity` on buffer kt % stages's `empty` mbarrier that lets the producer
    load k-slice kt: the one that passes once the consumers have released every earlier fill of that
    buffer (kt // stages of them) and not before. For the first fill no release is needed: the parity
    passes on a fresh barrier. Worked out on the mbarrier model."""
    fills = kt // stages
    bar = Mbarrier(1)
    before = None
    for i in range(fills):
        if i == fills - 1:
            before = {p for p in (0, 1) if bar.try_wait_parity(p)}
        bar.arrive()                                   # the consumers release fill i
    passing = {p for p in (0, 1) if bar.try_wait_parity(p)}
    if before is not None:
        passing -= before                              # it must not pass before the last release
    (parity,) = passing
    return parity


PARITY_RULE = ("try_wait.parity(p) passes once the phase with parity p has completed; phase i of a buffer's "
               "`empty` barrier completes when the consumers release the buffer's fill i, and the producer "
               "may refill it only after every earlier fill was released. A fresh barrier is in phase 0, and "
               "parity 1 passes on it at once")


def _explain_parity(args, got, want):
    kt, stages = args
    if got == (kt // stages) & 1:
        return ("that is the parity the consumers wait on (`full`, the fill has landed); the producer waits "
                "for the release of the fill before")
    if got == kt & 1:
        return "a buffer's phases count its own fills (kt // stages), not the k-slices of every buffer"
    if got is None or got not in (0, 1):
        return "a parity is 0 or 1 (for the first fill: the parity that passes on a fresh barrier)"
    return None


PARITY_MISTAKES = (
    ("that is the parity the consumers wait on (`full`, the fill has landed); the producer waits for the "
     "release of the fill before", lambda kt, st: (kt // st) & 1),
    ("a buffer's phases count its own fills (kt // stages), not the k-slices of every buffer",
     lambda kt, st: (kt + 1) & 1),
    ("a buffer's phases count its own fills (kt // stages), not the k-slices of every buffer",
     lambda kt, st: kt & 1),
    ("a constant parity: each fill of a buffer completes one more phase of its `empty` barrier, so the "
     "parity the producer waits on flips each time round the ring", lambda kt, st: 0),
    ("a constant parity: each fill of a buffer completes one more phase of its `empty` barrier, so the "
     "parity the producer waits on flips each time round the ring", lambda kt, st: 1),
)


@course_cases("gemm_producer_parity")
def check_producer_parity(fn, hidden=()) -> None:
    """Exercise 7.3: fn(kt, stages) -> the parity the producer's wait on empty[kt % stages] passes on;
    `hidden`: more (kt, stages), course data."""
    from ..exercise_mistakes import which_mistake
    cases = [(0, 4), (4, 4), (5, 4), (8, 4)] + [tuple(c) for c in hidden]
    whole = which_mistake(fn, cases, PARITY_MISTAKES)     # whole formulas first: one case fits several
    check_function_explained("the producer's parity", fn, cases, reference=producer_parity,
                             family=lambda rng: (int(rng.integers(0, 64)), int(rng.integers(1, 9))), draws=200,
                             family_text="k-slices 0..63 of rings of 1 to 8 stages",
                             more="" if hidden else "rings of 2, 3 and 6 stages and later k-slices",
                             explain=lambda *a: whole or _explain_parity(*a), rule=PARITY_RULE,
                             hint="count the fills of that one buffer, then the phases its `empty` barrier "
                                  "has completed by then")


# ---- 7.4 where step 2 loses to step 1 -----------------------------------------------------------------

def ladder_period(name: str) -> tuple[int, int, float, int]:
    """(bm, bn, CTA 0's cycles per k-slice at 4096^3, CTAs per SM) of a ladder step, from the recording
    and the occupancy of the compiled kernel."""
    from ..results import load_recording
    from .timeline import step_timeline
    s, rec = ladder.step(name), load_recording("gemm_ladder")
    return (s.bm, s.bn, step_timeline(rec, name).slice_period, occupancy.ctas_per_sm(name).ctas)


def ladder_periods(hidden=()) -> list[tuple[int, int, float, int]]:
    """ladder_period of steps 1 and 2, then the course data's `hidden` cases."""
    return [ladder_period("s1"), ladder_period("s2")] + [tuple(c) for c in hidden]


FLOP_RULE = (f"every CTA on the SM computes a bm x bn tile's k-slice, 2 * bm * bn * BK FLOP (BK = "
             f"{ladder.BK}; a multiply and an add per product), in its cycles per k-slice; the SM's FLOP per "
             "cycle adds up its CTAs")


def _explain_flop(args, got, want):
    bm, bn, cycles, ctas = args
    one = 2 * bm * bn * ladder.BK / cycles
    if abs(got - one) <= 1e-6 * one:
        return "that is one CTA's; the SM runs several at once"
    if abs(got - want / 2) <= 1e-6 * want:
        return "a multiply-add is 2 FLOP"
    if abs(got - want / ladder.BK) <= 1e-6 * want:
        return f"a k-slice is BK = {ladder.BK} deep: every product of the tile is summed over {ladder.BK} k"
    return None


@course_cases("gemm_flop_per_sm_cycle")
def check_flop_per_sm_cycle(fn, hidden=()) -> None:
    """Exercise 7.4: fn(bm, bn, cycles_per_slice, ctas_per_sm) -> FLOP per SM cycle; `hidden`: more,
    course data."""
    cases = ladder_periods(hidden)

    def close(a, b):
        return abs(a - b) <= 1e-6 * max(abs(b), 1.0)

    def reference(bm, bn, cycles, ctas):
        return flop_per_sm_cycle(bm, bn, cycles, ctas)

    # compare floats within a relative 1e-6, so that a formula written in another order passes
    def rounded(*args):
        got = fn(*args)
        want = reference(*args)
        return want if isinstance(got, (int, float)) and close(got, want) else got

    rounded.__name__ = getattr(fn, "__name__", "fn")
    check_function_explained("FLOP per SM cycle", rounded if callable(fn) else fn, cases, reference=reference,
                             explain=lambda args, got, want: _explain_flop(args, fn(*args), want),
                             rule=FLOP_RULE, hint="first one CTA's FLOP per cycle, then the SM's",
                             more="" if hidden else "step 3 and CTAs of other shapes")


# ---- 7.5 the ring's handshake, in the kernel ----------------------------------------------------------
# Step 3's two waits; the learner writes each parity as a C expression of kt and STAGES.
HANDSHAKE_FILE = "gemm_sm90/s3_warp_specialized.cu"
FULL_WAIT = "if (!mbarrier_wait(&full[s], (kt / STAGES) & 1, 1, STAGE_BYTES)) return;"
EMPTY_WAIT = "if (kt >= STAGES && !mbarrier_wait(&empty[s], (kt / STAGES + 1) & 1, 2, 0)) return;"
EXPR_RULE = ("a C expression of kt and STAGES (ints) with + - * / % << >> & | ^ ~ and parentheses; / and % "
             "are integer division and remainder")
_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: None, ast.Div: None, ast.Mod: None, ast.LShift: lambda a, b: a << b,
           ast.RShift: lambda a, b: a >> b, ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b,
           ast.BitXor: lambda a, b: a ^ b}


def eval_c_int(expr: str, names: dict) -> int:
    """The value of a small C integer expression (EXPR_RULE) for non-negative `names`; ValueError for
    what it does not take."""
    text = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr)
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise ValueError(f"cannot read {expr!r} as an expression; {EXPR_RULE}") from None

    def ev(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name) and node.id in names:
            return int(names[node.id])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Invert, ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return ~v if isinstance(node.op, ast.Invert) else -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
                if b == 0:
                    raise ValueError(f"{expr!r} divides by zero")
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)      # C truncates
                return q if not isinstance(node.op, ast.Mod) else a - q * b
            return _BINOPS[type(node.op)](a, b)
        raise ValueError(f"{ast.unparse(node)!r} in {expr!r} is not something the exercise evaluates; {EXPR_RULE}")
    return ev(tree.body)


def handshake_kernel(full_parity: str, empty_parity: str):
    """Step 3's kernel with the learner's parity expressions in its two waits."""
    from ..lab import TeachingKernel
    k = TeachingKernel(HANDSHAKE_FILE)
    k = k.replace(FULL_WAIT, FULL_WAIT.replace("(kt / STAGES) & 1", f"({full_parity})"))
    return k.replace(EMPTY_WAIT, EMPTY_WAIT.replace("(kt / STAGES + 1) & 1", f"({empty_parity})"))


def _completed(n: int) -> Mbarrier:
    """An mbarrier (one arrival per phase) that has completed n phases."""
    bar = Mbarrier(1)
    for _ in range(n):
        bar.arrive()
    return bar


def handshake_problems(full_parity: str, empty_parity: str, stages: int = 4, k_tiles: int = 16) -> list[str]:
    """What the mbarrier model says the ring does with these parities: the first k-slice at which each
    wait would pass before the phase it stands for has completed (a race: the data has not landed, or is
    still being read). At any moment exactly one parity passes, so a parity that does not pass before its
    phase completes passes right after it: a wrong parity is always an early pass, never a stuck wait."""
    out = {}
    for kt in range(k_tiles):
        s, fill = kt % stages, kt // stages
        names = {"kt": kt, "STAGES": stages}
        p = eval_c_int(full_parity, names)
        if "full" not in out and _completed(fill).try_wait_parity(p):
            out["full"] = (f"k-slice {kt}: the consumers' wait on full[{s}] (parity {p}) passes before the TMA "
                           f"has landed it: they would read what buffer {s} held before, a race")
        if kt >= stages and "empty" not in out:
            p = eval_c_int(empty_parity, names)
            if _completed(fill - 1).try_wait_parity(p):
                out["empty"] = (f"k-slice {kt}: the producer's wait on empty[{s}] (parity {p}) passes before the "
                                f"consumers release k-slice {kt - stages}: it would overwrite buffer {s} while they "
                                "may still read it, a race")
    return [out[k] for k in ("full", "empty") if k in out]


# What such a race did on a GPU: step 3 with either wait's parity flipped, 256 x 512 x 1024, on an H100
# (2026-11-25, through runner.try_kernel in a worker process): both launches faulted (illegal instruction;
# unspecified launch failure) instead of finishing with a wrong C.
RACE_ON_H100 = "on an H100, step 3 with either wait's parity flipped faulted (the launch failed); it did not finish"

HANDSHAKE_RULE = ("buffer s's `full` barrier completes one phase per fill (the TMA's bytes), its `empty` barrier "
                  "one per release (every consumer warp arrives); k-slice kt is fill kt / STAGES of buffer "
                  "kt % STAGES. A wait on parity p passes once the phase with that parity has completed: the "
                  "consumers wait for this fill's phase, the producer for the release of the fill before")


def _expr(name: str, expr) -> str:
    what = "the ring's handshake in the kernel"
    if unanswered(expr):
        raise NotYet(f"{what}: no answer yet — write {name} as a C expression (a string).")
    if not isinstance(expr, str):
        raise NotYet(f"{what}: {name} is a C expression, as a string; you have {type(expr).__name__}.\n"
                     f"  rule: {EXPR_RULE}")
    if any(t in expr for t in (";", "\n", "{", "}", "//", "/*")):
        raise NotYet(f"{what}: {name} is one expression on one line, without ';', braces or comments; "
                     f"you have {expr!r}.\n  rule: {EXPR_RULE}")
    return expr


@course_cases("gemm_handshake")
def check_handshake(full_parity, empty_parity, hidden=()) -> None:
    """Exercise 7.5: the parities of step 3's two waits, as C expressions, put into the kernel. It is
    compiled (sm_90a, NVRTC); the mbarrier model then runs the ring with them (4 stages, then the ring
    sizes that `hidden`, course data, names) and names the first wait that would pass before its phase
    completes; on a Hopper
    GPU (tier hardware) the edited kernel also runs on a small GEMM in a worker process, is checked
    against the f32 reference and timed beside the kernel as written."""
    from .. import device
    from ..lab import CompileError, run_edited
    what = "the ring's handshake in the kernel"
    full_parity, empty_parity = _expr("full_parity", full_parity), _expr("empty_parity", empty_parity)
    k = handshake_kernel(full_parity, empty_parity)
    try:
        k.compile("sm_90a")
    except CompileError as e:
        raise NotYet(f"{what}: the edited kernel does not compile.\n{e}") from None
    rings = (4, *(int(n) for n in hidden))
    for stages in rings:
        try:
            problems = handshake_problems(full_parity, empty_parity, stages)
        except ValueError as e:
            raise NotYet(f"{what}: {e}") from None
        if problems:
            raise NotYet(f"{what}: the mbarrier model, running a ring of {stages} stages with your parities, "
                         "finds a wait that passes too early.\n" + "\n".join(f"  {p}" for p in problems)
                         + f"\n  {RACE_ON_H100}\n  rule: {HANDSHAKE_RULE}")
    info = device.gpu_info()
    if device.tier("tma") == "hardware" and info is not None and info.cc[0] == 9:
        from . import runner
        from ..runtime import MbarrierTimeout
        from ..sandbox import KernelFault, KernelHang
        m, n, kk = HANDSHAKE_SHAPE
        try:
            res = run_edited(runner.try_kernel, "s3", m, n, kk, kernel=k, limit=120)
        except (MbarrierTimeout, KernelFault, KernelHang) as e:
            raise NotYet(f"{what}: the model agrees with your parities, but your kernel did not finish on "
                         f"this GPU:\n  {e}") from None
        if not res["ok"]:
            raise NotYet(f"{what}: the model agrees with your parities, but your kernel's C differs on this "
                         f"GPU:\n  {res['check']}")
        print(f"correct: {what} — on this GPU: {res['check']}; {res['ms']:.3f} ms, the kernel as written "
              f"{res['ms_original']:.3f} ms")
        return
    print(f"correct: {what} — compiled for sm_90a; the mbarrier model runs the ring with your parities "
          f"and no wait passes before its phase ({', '.join(map(str, sorted(rings)))} stages)"
          + ("" if hidden else "; the graded version also runs rings of other sizes"))
