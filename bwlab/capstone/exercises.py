"""The capstone's graded exercises (notebook 10; conventions: bwlab/exercises.py). Each takes the learner's
fills of some TODO regions (C++ statements, as strings), assembles the kernel with the ladder's lines in
every other region (`skeleton.ladder_fill`: each exercise is graded on its own), compiles it (NVRTC, no
GPU) and runs it in the strict PTX emulator at a shape where every stage of the ring is filled five
times (each parity of its barriers completes twice or more) and, on Blackwell, each accumulator is used
four times; C is then compared with the f32 GEMM. What broke comes back in a few lines: the emulator's
name for it (a ProtocolError subclass, a hang), where, in the learner's lines, and a hint read from the
fill (which barrier, which parity, who arrives, which fence).

* `check_producer(producer_acquire)`                          — 10.1, Hopper: the producer's wait and expect_tx
* `check_consumer(consumer_wait, consumer_release)`           — 10.2, Hopper: the consumers' wait and release
* `check_bw_ring(tma_acquire, mma_wait_full, mma_release_stage)` — 10.3, Blackwell: the SMEM ring, released by a commit
* `check_acc_phases(mma_acc_acquire, epi_acc_wait)`           — 10.4, Blackwell: the accumulator ring's waits
* `check_acc_handoff(mma_acc_commit, epi_acc_release)`        — 10.5, Blackwell: the commit and the fences
"""
from __future__ import annotations

import re

from ..exercises import NotYet, course_cases, unanswered
from .diagnose import RULES, diagnose
from .skeleton import FillError, assemble, ladder_fills

__all__ = ["SHOWN", "grade", "reason", "check_producer", "check_consumer", "check_bw_ring", "check_acc_phases",
           "check_acc_handoff", "EXERCISES"]

# (M, N, K, persistent CTAs, the emulator's scheduler seed) of the visible check. Hopper: 4 tiles of
# 128 x 256, 2 per CTA, 10 k-slices each: 20 slices per CTA, each of the 4 stages filled 5 times, and a
# tile's slice count is not a multiple of 2 * STAGES (a parity counted per tile, not over the CTA's
# walk, goes wrong on the second tile). Blackwell: 16 tiles, 8 per CTA (each accumulator used 4 times),
# 2 k-blocks each: 16 slices per CTA, each stage filled 4 times.
SHOWN = {"hopper": (256, 512, 640, 2, 0), "blackwell": (512, 1024, 128, 2, 0)}

# exercise -> (kernel, its regions, what the learner writes)
EXERCISES = {
    "cap_producer": ("hopper", ("producer_acquire",), "the producer's acquire (Hopper)"),
    "cap_consumer": ("hopper", ("consumer_wait", "consumer_release"), "the consumers' wait and release (Hopper)"),
    "cap_bw_ring": ("blackwell", ("tma_acquire", "mma_wait_full", "mma_release_stage"),
                    "the SMEM ring on Blackwell"),
    "cap_acc_phases": ("blackwell", ("mma_acc_acquire", "epi_acc_wait"), "the accumulator ring's waits"),
    "cap_acc_handoff": ("blackwell", ("mma_acc_commit", "epi_acc_release"), "the accumulator's commit and fences"),
}

_PTX = re.compile(r",? PTX line \d+ `[^`]*`")
_AT = re.compile(r"(?:at )?(hopper_ws|blackwell_ws)\.cu:(\d+)(?: \(in [\w.]+:\d+\))?")


def _shorten(text: str, limit: int = 300) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + " ..."


def reason(e: BaseException, asm) -> tuple[str, str]:
    """(the emulator's name for what broke, one or two short lines saying what and where, in the
    learner's lines): never a traceback."""
    from ..runtime import MbarrierTimeout
    kind = type(e).__name__
    if isinstance(e, MbarrierTimeout):
        head = e.headline.splitlines()
        said = head[0].split(": ", 1)[-1]
        barrier = next((x.strip() for x in head if x.strip().startswith("on the barrier:")), "")
        stall = next((x.strip() for x in (e.details or "").splitlines() if " spins in " in x), "")
        stall = _AT.sub(lambda m: "at " + asm.where(int(m.group(2))), _PTX.sub("", stall))
        lines = [_shorten(said, 200)] + ([_shorten(barrier, 160)] if barrier else [])
        if stall:
            lines.append("first waiting thread: " + _shorten(stall, 200))
        return "a hang (MbarrierTimeout: a bounded wait gave up)", "\n    ".join(lines)
    first = str(e).strip().splitlines()[0] if str(e).strip() else kind
    first = _AT.sub(lambda m: "at " + asm.where(int(m.group(2))), _PTX.sub("", first))
    return kind, _shorten(first)


def _compile_report(err, asm) -> str:
    out = []
    for where, line, kind, msg in err.diagnostics:
        if kind == "warning":
            continue
        if where.replace("\\", "/").endswith(asm.file.rsplit("/", 1)[-1]):
            out.append(f"{kind} on {asm.where(line)}: {msg}")
        else:
            out.append(f"{kind} in {where.rsplit('/', 1)[-1]}, line {line}: {msg}")
    return "\n".join(f"  {x}" for x in out[:4]) or "  " + str(err).splitlines()[0]


def grade(exercise: str, fills: dict, cases=None, name: str | None = None) -> list[str]:
    """Run `exercise`'s kernel with the learner's `fills` (its regions) at each (M, N, K, sms, seed) of
    `cases` (default: the shown one); raise NotYet saying what broke, else return one line per case."""
    from ..gemm.runner import check as check_c
    from ..lab import TeachingKernel
    from ..compile import CompileError
    from .runner import random_operands, run_emulated
    kernel, regions, what = EXERCISES[exercise]
    name = name or what
    for region in regions:
        if unanswered(fills.get(region)):
            raise NotYet(f"{name}: no answer yet — write {region} as C++ statements (a string) in the cell above.\n"
                         f"  rule: {RULES[exercise]}")
        text = fills[region]
        if isinstance(text, str) and re.search(r"[\r\n#\\]", text):
            raise NotYet(f"{name}: write {region} on one line (several statements may share it): the grader "
                         "compiles a text answer only without line breaks, '#' or '\\'.\n"
                         f"  rule: {RULES[exercise]}")
    all_fills = {**ladder_fills(kernel), **{r: fills[r] for r in regions}}
    try:
        asm = assemble(kernel, all_fills)
    except FillError as e:
        raise NotYet(f"{name}: {e}\n  rule: {RULES[exercise]}") from None
    try:
        TeachingKernel(asm.file, asm.text).compile()
    except CompileError as e:
        raise NotYet(f"{name}: the kernel with your fills does not compile.\n{_compile_report(e, asm)}") from None
    done = []
    for M, N, K, sms, seed in (cases or [SHOWN[kernel]]):
        run = f"{kernel}, {M} x {N} x {K}, {sms} persistent CTAs, scheduler seed {seed}"
        key = (asm.text, M, N, K, sms, seed)
        if key in _PASSED:                # the emulator is deterministic: the same kernel and launch, the same run
            done.append(_PASSED[key])
            continue
        a, b = random_operands(M, N, K, seed)
        try:
            c, _ = run_emulated(asm, a, b, sms=sms, seed=seed)
        except Exception as e:          # the emulator's verdict: a rule broken, a hang, a fault
            kind, said = reason(e, asm)
            found, hint = diagnose(exercise, fills, kind)
            lines = [f"{name}: the emulator stopped your kernel: {kind}."]
            if found:
                lines.append(f"  your value: {found}")
            lines += [f"  hint: {hint}", f"  what broke: {said}", f"  run: {run}", f"  rule: {RULES[exercise]}"]
            raise NotYet("\n".join(lines)) from None
        got = check_c(a, b, c, kernel)
        if not got.ok:
            found, hint = diagnose(exercise, fills, "wrong C")
            lines = [f"{name}: your kernel finished, but its C differs from the f32 GEMM ({got.bad} of {M * N} "
                     "elements out of tolerance)."]
            if found:
                lines.append(f"  your value: {found}")
            lines += [f"  hint: {hint}", f"  run: {run}", f"  rule: {RULES[exercise]}"]
            raise NotYet("\n".join(lines))
        done.append(f"{run}: C within tolerance, no rule broken")
        _PASSED[key] = done[-1]
    return done


# The launches that passed in this process (an assembled kernel's text and its launch): a graded cell runs
# the shown case in its visible part and again before the hidden ones; the second time is this look-up.
_PASSED: dict = {}


def _finish(exercise: str, fills: dict, hidden) -> None:
    kernel, _, what = EXERCISES[exercise]
    cases = [SHOWN[kernel]] + [tuple(int(x) for x in c) for c in hidden]
    done = grade(exercise, fills, cases)
    note = f"the strict emulator ran {len(done)} launch{'es' if len(done) > 1 else ''} ({done[0].split(':')[0]}" \
           + (", ..." if len(done) > 1 else "") + "): no rule broken, C within tolerance"
    if hidden:
        print(f"correct: {what} — {note}")
    else:       # the graded version runs more: never "correct" here
        print(f"checked: {what} — {note}. Not checked here: other shapes and scheduler seeds; the graded "
              "version tries those")


@course_cases("cap_producer")
def check_producer(producer_acquire, hidden=()) -> None:
    """Exercise 10.1: the Hopper producer's acquire of a stage (its wait on empty[s], its expect_tx)."""
    _finish("cap_producer", {"producer_acquire": producer_acquire}, hidden)


@course_cases("cap_consumer")
def check_consumer(consumer_wait, consumer_release, hidden=()) -> None:
    """Exercise 10.2: the Hopper consumers' wait on full[s] and their release of a stage."""
    _finish("cap_consumer", {"consumer_wait": consumer_wait, "consumer_release": consumer_release}, hidden)


@course_cases("cap_bw_ring")
def check_bw_ring(tma_acquire, mma_wait_full, mma_release_stage, hidden=()) -> None:
    """Exercise 10.3: the Blackwell SMEM ring: the TMA warp's acquire, the MMA warp's wait and its release."""
    _finish("cap_bw_ring", {"tma_acquire": tma_acquire, "mma_wait_full": mma_wait_full,
                            "mma_release_stage": mma_release_stage}, hidden)


@course_cases("cap_acc_phases")
def check_acc_phases(mma_acc_acquire, epi_acc_wait, hidden=()) -> None:
    """Exercise 10.4: the accumulator ring's two waits (MMA warp on tmem_empty, epilogue on tmem_full)."""
    _finish("cap_acc_phases", {"mma_acc_acquire": mma_acc_acquire, "epi_acc_wait": epi_acc_wait}, hidden)


@course_cases("cap_acc_handoff")
def check_acc_handoff(mma_acc_commit, epi_acc_release, hidden=()) -> None:
    """Exercise 10.5: the MMA warp's commit of a finished accumulator, the epilogue's fenced release of it."""
    _finish("cap_acc_handoff", {"mma_acc_commit": mma_acc_commit, "epi_acc_release": epi_acc_release}, hidden)

