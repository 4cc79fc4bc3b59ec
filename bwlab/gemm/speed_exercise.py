"""Notebook 07's exercise 7.6, speed by doing: the fewest stages of step 3's ring that bwlab.timing predicts as
fast as the deepest ring that fits; the learner's kernel is run in the emulator (C checked) and its time predicted.
Re-exported by `bwlab.gemm.exercises` with the other checks of 07."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..exercises import NotYet, unanswered
from . import ladder, occupancy

# M, N, K of a GPU run of an edited step 3 (the handshake and ring exercises): 16 k-slices, four passes over
# a 4-stage ring
HANDSHAKE_SHAPE = (256, 512, 1024)

__all__ = ["ring_step", "ring_kernel", "ring_prediction", "ring_deepest", "check_ring_depth"]


# ---- 7.6 speed by doing: the shortest ring at full speed (the timing model grades) ---------------------

RING_FILE = "gemm_sm90/s3_warp_specialized.cu"
RING_DEFINE = "STAGES = 4,"              # in `constexpr int BM = 128, BN = 256, STAGES = 4, CONSUMERS = 2;`
RING_SHAPE = (8192, 8192, 8192)          # the shape the prediction is graded at (hidden: other shapes)
RING_TOLERANCE = 0.01                    # "as fast": a predicted time within 1 % of the deepest ring's
RING_RULE = ("a ring of STAGES buffers lets the producer load up to STAGES - 1 k-slices ahead of the consumers; "
             "once that covers a load's latency at the rate the tensor cores consume slices, another stage "
             "only takes 48 KiB of SMEM (bwlab.timing predicts the time: docs/timing.md)")


def ring_step(stages: int):
    """Step 3 with a ring of `stages` buffers (its SMEM and launch follow)."""
    return dataclasses.replace(ladder.step("s3"), stages=stages)


def ring_kernel(stages: int):
    """Step 3's kernel with `STAGES = stages`."""
    from ..lab import TeachingKernel
    return TeachingKernel(RING_FILE).replace(RING_DEFINE, f"STAGES = {stages},")


def ring_clock(shape) -> float:
    """The SM clock (MHz) measured during step 3's blocks at `shape` under the sustained protocol (H100)."""
    from ..timing import hopper
    meas = hopper.measured(hopper.RESULTS / hopper.SOURCES["s3"])
    return meas[(ladder.step("s3").name, tuple(shape))].mhz


def ring_prediction(stages: int, shape=RING_SHAPE):
    """Step 3 with a ring of `stages` at `shape`, predicted by the timing model (H100 SXM description) at the
    clock measured during step 3's blocks: emulated on two small problems, replayed, extrapolated."""
    from ..timing import gemm as tgemm
    return tgemm.predict(ring_step(stages), *shape, machine="h100_sxm", clock_mhz=ring_clock(shape),
                         kernel=ring_kernel(stages))


def ring_deepest() -> int:
    """The most stages of step 3 whose CTA fits on an H100 SM."""
    n = 1
    while occupancy.ctas_per_sm(ring_step(n + 1)).ctas > 0:
        n += 1
    return n


def _ring_ms(stages: int, shape) -> float | None:
    """The predicted ms, or None where the ring does not run correctly in the emulator."""
    from ..emu.errors import EmuError
    from ..timing import gemm as tgemm
    try:
        if not tgemm.emulated_check(ring_step(stages), 128, 256, tgemm.K1, kernel=ring_kernel(stages)).ok:
            return None
        return ring_prediction(stages, shape).ms
    except EmuError:
        return None


def check_ring_depth(stages, hidden=()) -> None:
    """Exercise 7.6: the fewest stages of step 3's ring that the timing model predicts as fast as the deepest
    ring that fits. The answer goes into the kernel (`STAGES = n`), which is compiled (sm_90a), run in the
    emulator on a 128 x 256 x 512 GEMM (C checked against the f32 reference) and timed by bwlab.timing at
    8192^3 (the shapes `hidden` names too); on a Hopper GPU it is also run and timed there (shown, not graded)."""
    from .. import device
    from ..emu.errors import EmuError
    from ..lab import CompileError
    from ..timing import gemm as tgemm
    what = "the shortest ring at full speed"
    if unanswered(stages):
        raise NotYet(f"{what}: no answer yet — set stages to a number of ring buffers (an int).")
    if isinstance(stages, bool) or not isinstance(stages, (int, np.integer)):
        raise NotYet(f"{what}: stages is a number of ring buffers, an int; you have {type(stages).__name__} "
                     f"{stages!r}.")
    stages = int(stages)
    if stages < 1:
        raise NotYet(f"{what}: a ring needs at least one buffer; you have {stages}.")
    occ = occupancy.ctas_per_sm(ring_step(stages))
    if occ.ctas == 0:
        raise NotYet(f"{what}: {stages} stages of {ring_step(stages).stage_bytes // 1024} KiB take "
                     f"{occ.smem_per_cta / 1024:.0f} KiB of SMEM per CTA (with the launch's alignment and the static "
                     f"block), more than an H100 SM's {occupancy.SMEM_PER_SM // 1024} KiB: the launch would fail. "
                     "Rings deeper than the one in the file do not fit.")
    kern = ring_kernel(stages)
    try:
        kern.compile("sm_90a")
    except CompileError as e:
        raise NotYet(f"{what}: the kernel with STAGES = {stages} does not compile.\n{e}") from None
    try:
        ok = tgemm.emulated_check(ring_step(stages), 128, 256, tgemm.K1, kernel=kern)
    except EmuError as e:
        raise NotYet(f"{what}: with STAGES = {stages} the kernel is wrong before it is slow — the emulator stops it "
                     f"on a 128 x 256 x {tgemm.K1} GEMM:\n  {str(e)[:600]}\n  The consumers release a buffer only "
                     "after they have issued the next k-slice's wgmma (wgmma.wait_group 1 keeps one slice in flight), "
                     "so with a single buffer the next slice waits for a release that waits for it: the bounded wait "
                     "gives up and the CTA exits with a wgmma still reading SMEM.") from None
    if not ok.ok:
        raise NotYet(f"{what}: with STAGES = {stages} the emulated C differs from A·Bᵀ:\n  {ok}")
    deepest = ring_deepest()
    shapes = (RING_SHAPE, *(tuple(s) for s in hidden))
    lines = []
    for shape in shapes:
        size = "x".join(map(str, shape))
        mine, best = _ring_ms(stages, shape), _ring_ms(deepest, shape)
        if mine > best * (1 + RING_TOLERANCE):
            raise NotYet(f"{what}: the timing model predicts STAGES = {stages} at {size} in {mine:.3f} ms, "
                         f"{mine / best:.2f}x the time of the deepest ring that fits ({deepest} stages, {best:.3f} ms): "
                         "the producer cannot stay far enough ahead of the consumers.\n  rule: " + RING_RULE)
        shorter = _ring_ms(stages - 1, shape) if stages > 1 else None
        if shorter is not None and shorter <= best * (1 + RING_TOLERANCE):
            fast = ("is the deepest ring that fits" if stages == deepest
                    else f"is predicted as fast as {deepest} stages at {size}")
            raise NotYet(f"{what}: STAGES = {stages} {fast}, but a ring one stage shorter is predicted as fast "
                         f"({shorter:.3f} ms vs {best:.3f} ms): a stage that buys no speed "
                         f"only takes {ring_step(1).stage_bytes // 1024} KiB of SMEM. Try fewer.\n  rule: " + RING_RULE)
        two = _ring_ms(2, shape) if stages != 2 else mine
        lines.append(f"{size}: {mine:.3f} ms predicted ({deepest} stages {best:.3f} ms"
                     + (f"; 2 stages {two:.3f} ms, {two / mine:.2f}x slower)" if two and stages != 2 else ")"))
    note = (f"STAGES = {stages} runs correctly in the emulator, and the timing model (H100 SXM description) predicts "
            f"it as fast as {deepest} stages with {(deepest - stages) * ring_step(1).stage_bytes // 1024} KiB less "
            "SMEM:\n  " + "\n  ".join(lines))
    info = device.gpu_info()
    if device.tier("tma") == "hardware" and info is not None and info.cc[0] == 9:
        note += gpu_note(kern)
    print(f"correct: {what} — {note}"
          + ("" if hidden else "\n  (the graded version also predicts other shapes)"))


def gpu_note(kern) -> str:
    """On a Hopper GPU: the learner's ring run on the GPU at the handshake exercise's shape (four passes over
    a 4-stage ring), in its own process, and its time beside the kernel as written; shown, never graded."""
    from ..lab import run_edited
    from . import runner
    m, n, kk = HANDSHAKE_SHAPE
    try:
        res = run_edited(runner.try_kernel, "s3", m, n, kk, kernel=kern, limit=120)
        return (f"\n  on this GPU (shown, not graded), {m} x {n} x {kk}: {res['check']}; {res['ms']:.3f} ms, "
                f"the kernel as written {res['ms_original']:.3f} ms")
    except Exception as e:       # a GPU run is shown beside the grade, never part of it
        return f"\n  on this GPU (shown, not graded): the run did not complete: {e}"
