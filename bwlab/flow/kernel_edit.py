"""Notebook 06's kernel-edit exercise: the learner gives the number of bytes the K loop advances the
SMEM descriptors' start address by (`smem_desc_k_sw128(base + SMEM_A + 32 * kb)` in
cuda_src/full_flow_sm100.cu; three such lines in the Hopper twin full_flow_sm90.cu). The value goes
into both kernels' text (bwlab.lab.TeachingKernel.replace, compiled with NVRTC: no GPU needed) and
into the flow model (`FlowProblem.descriptors(k_step_bytes)`), and it runs where the flow runs:

* hardware (sm_100): the edited `full_flow` in a worker process, every hop tapped: a Trace;
* hybrid (sm_90a, Hopper): the edited `full_flow_hopper` (the same K loop on wgmma) in a worker: its D;
* everywhere: the flow model executing the learner's descriptors, hop by hop.

Each is compared with the kernel as written (the model's trace), and the trace check names the first
hop and element that differ. PTX ISA: tcgen05 "Shared Memory Descriptor" (start address >> 4, bits
0-13), "Shared Memory Matrix Layouts" (K-major 128B swizzle); wgmma "Matrix Descriptor Format".
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ..case import compare
from ..exercises import NotYet, course_cases, unanswered
from ..lab import TeachingKernel
from ..umma.canonical import elem_bytes, instr_k
from ..umma.descriptors import decode_smem_desc, descriptor_addresses
from .case import GPU_SOURCES, Flow, flow_tier
from .model import flow_model
from .problem import SMEM_B
from .trace import Trace, TraceCheck

__all__ = ["K_STEP_TEXT", "K_STEP_SITES", "MAX_K_STEP", "edit_k_step", "canonical_k_step", "KStepRun",
           "try_k_step", "check_k_step", "report"]

K_STEP_TEXT = "32 * kb"                                     # the K loop's advance, as both kernels spell it
K_STEP_SITES = {"full_flow_sm100.cu": 2, "full_flow_sm90.cu": 3}   # A and B; Hopper: two halves of A, and B
MAX_K_STEP = 1024                                          # one 8-row swizzle atom: beyond is far off the tiles

K_STEP_RULE = ("a kind::f16 tcgen05.mma (and a wgmma) reads one instruction-K slice (K = 16 elements) of "
               "every row; in a K-major 128B-swizzled tile the next slice follows it along the same row, and "
               "the descriptor's start address counts bytes (stored >> 4; the hardware applies the swizzle "
               "to the address it computes), as CuTe's descriptor iterator advances by the slice's offset")


def report(res) -> str:
    """A CheckResult of the trace, and where its arrays hold raw f32 words (TMEM, registers), the first
    differing pair as numbers too."""
    text = str(res)
    e, g, first = res.expected, res.got, res.first
    if first is not None and e is not None and g is not None and e.dtype == np.uint32 and g.dtype == np.uint32 \
            and e.shape == g.shape:
        x, y = (np.asarray(a[first.index]).view(np.float32) for a in (e, g))
        text += f"\n  as f32: expected {float(x)!r}, got {float(y)!r}"
    return text


def canonical_k_step(flow: Flow | None = None) -> int:
    """The step the model's descriptors take: start address of K block 1 minus that of K block 0."""
    descs = (flow or Flow()).problem.descriptors()
    return decode_smem_desc(descs[1][0]).start_address - decode_smem_desc(descs[0][0]).start_address


def _valid_step(step) -> int:
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise NotYet(f"the K step must be an int number of bytes, got {step!r}.\n  rule: {K_STEP_RULE}")
    step = int(step)
    if step < 0 or step > MAX_K_STEP or step % 16:
        raise NotYet(f"the K step must be a multiple of 16 in [0, {MAX_K_STEP}] bytes, got {step}: the "
                     "descriptor stores the start address >> 4 (16-byte units), and a step beyond one 8-row "
                     f"swizzle atom reads far outside the tiles.\n  rule: {K_STEP_RULE}")
    return step


def edit_k_step(step: int) -> tuple:
    """(full_flow_sm100.cu, full_flow_sm90.cu) with the K loop advancing the descriptors `step` bytes."""
    step = _valid_step(step)
    return tuple(TeachingKernel(f).replace(K_STEP_TEXT, f"{step} * kb", count=n) for f, n in K_STEP_SITES.items())


@dataclass
class KStepRun:
    """What a K step did: `model` (the flow model executing it) and, where a GPU ran the edited kernel,
    `gpu`, each against the kernel as written; `gpu_vs_model` says whether the model predicted the GPU."""

    step: int
    tier: str
    model: TraceCheck
    ran: str = ""
    gpu: TraceCheck | None = None
    gpu_vs_model: TraceCheck | None = None
    past_tiles: bool = False     # some MMA reads past the end of B's tile (where SMEM is not written)
    where: str = "this GPU"      # what ran the edited kernel: this GPU, or the PTX emulator

    @property
    def ok(self) -> bool:
        return self.model.ok and (self.gpu is None or self.gpu.ok)

    @staticmethod
    def _first(check: TraceCheck, who: str) -> list:
        first = check.first_difference()
        if first is None:
            return [f"{who}: every hop agrees with the kernel as written"]
        hop, res = first
        before = list(dict.fromkeys(check.hops[:check.hops.index(hop)]))
        return [f"{who}: the first hop that differs is {hop}"
                + (f" ({', '.join(before)} before it agree)" if before else ""),
                "  " + report(res).replace("\n", "\n  ")]

    def summary(self) -> str:
        """One line for a step that works: who agreed."""
        who = ["the flow model executing it"] + ([f"{self.where} running your edit"] if self.gpu is not None else [])
        return f"every hop agrees with the kernel as written ({' and '.join(who)})"

    def __str__(self) -> str:
        lines = [f"K step {self.step} bytes: the K loops now read "
                 f"`smem_desc_k_sw128(base + SMEM_A + {self.step} * kb)` and the same for B (full_flow_sm100.cu; full_flow_sm90.cu: both halves of A, and B), compiled "
                 "for sm_100a and sm_90a"]
        lines += self._first(self.model, "the flow model executing your descriptors")
        if self.ran:
            lines.append(f"{'emulated' if self.where != 'this GPU' else self.tier} tier: {self.ran}")
        w = self.where
        if self.gpu is not None:
            lines += self._first(self.gpu, w)
            if self.gpu_vs_model is not None and self.gpu_vs_model.ok:
                lines.append(f"the model of your step predicted every byte {w} produced")
            elif self.past_tiles:
                lines.append(f"the model of your step and {w} differ where your last MMAs read past the end "
                             "of B's 16 KiB tile: there the kernel finds whatever SMEM held, the model zeros")
            else:
                lines.append(f"the model of your step and {w} differ inside the tiles: a difference between "
                             "bwlab's model and the hardware (please report it):")
                lines += self._first(self.gpu_vs_model, f"{w} against the model of your step")[1:]
        elif self.tier == "model":
            lines.append("model tier: no GPU here runs the flow, so the model executed your step")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):
        p.text(str(self))


def try_k_step(step: int, tier: str | None = None, seed: int = 0) -> KStepRun:
    """Edit both kernels with `step`, compile them, and run the trip with it in `tier` (default: the
    flow's tier here); every result is compared with the kernel as written."""
    step = _valid_step(step)
    k100, k90 = edit_k_step(step)
    k100.compile("sm_100a")
    k90.compile("sm_90a")
    flow = Flow(seed)
    p = flow.problem
    expected = flow.model()
    descs = p.descriptors(step)
    mine = flow_model(p, descs)
    past = max(int(descriptor_addresses(decode_smem_desc(bd), "K", "f16", p.N).max()) for _, bd in descs)
    run = KStepRun(step, tier or flow_tier(), expected.compare(mine, "the model of your step"),
                   past_tiles=past >= SMEM_B + p.N * p.K * elem_bytes("f16"))
    from . import runner
    if run.tier in ("hardware", "emulated"):
        emulated = run.tier == "emulated"
        got = Trace(run.tier, p, runner.run_hardware(p, kernel=k100, emulated=emulated), GPU_SOURCES[run.tier])
        where = "the PTX emulator" if emulated else "this GPU"
        run.ran = (f"your full_flow_sm100.cu ran in the PTX emulator (its sm_100a PTX), every hop tapped"
                   if emulated else "your full_flow_sm100.cu ran on this GPU (in a worker process), every hop tapped")
        run.gpu, run.gpu_vs_model = expected.compare(got, where), mine.compare(got, where)
        run.where = where
    elif run.tier == "hybrid":
        from .. import device
        info = device.gpu_info()
        if info is None or not info.has_wgmma:
            run.ran = "this GPU has no tcgen05 and no wgmma: only the model executed your step"
            return run
        buf, _ = runner.run_hopper(p, repeat=1, kernel=k90)
        d = buf[:p.M]
        run.ran = ("this GPU has no tcgen05: your full_flow_sm90.cu (full_flow_hopper, the same K loop on "
                   "wgmma) ran on it in a worker process; its D is compared")

        def against(t: Trace):
            return TraceCheck([compare(t.result, d, stage="flow", what="D in GMEM (full_flow_hopper)",
                                       where=lambda i: f"D[{i[0]}][{i[1]}]", source="this GPU")], ["tma_store"])
        run.gpu, run.gpu_vs_model = against(expected), against(mine)
    return run


@course_cases("flow_k_step")
def check_k_step(step, hidden=()) -> None:
    """The kernel-edit exercise: `step` goes into the kernels and the model and runs (see the module).
    `hidden` (course data): seeds of other A and B, run in the model tier."""
    name = "the K step of the MMA descriptors (bytes)"
    if unanswered(step):
        raise NotYet(f"{name}: no answer yet — replace the placeholder with a number of bytes.\n"
                     f"  rule: {K_STEP_RULE}")
    want = canonical_k_step()
    p = Flow().problem
    sbo = decode_smem_desc(p.descriptors()[0][0]).stride_byte_offset
    mistakes = {instr_k("f16"): "K of one instruction in elements; the start address counts bytes",
                want >> 4: "the encoded step (bytes >> 4); the kernel adds bytes, smem_desc_k_sw128 shifts",
                want * 2: "two instruction slices (K = 32): every MMA skips one",
                p.K * elem_bytes("f16"): "a whole 128-byte row (all of K): the next slice is inside the same row",
                sbo: "the SBO, the step between 8-row groups along M, not along K",
                0: "every MMA reads the first K slice again"}
    known = mistakes.get(int(step)) if isinstance(step, numbers.Integral) and not isinstance(step, bool) else None
    try:
        runs = [try_k_step(step, tier="model", seed=int(seed)) for seed in hidden] or [try_k_step(step)]
        run = next((r for r in runs if not r.ok), runs[0])
    except NotYet as e:
        raise NotYet(str(e) + (f"\n  your value: {known}" if known else "")) from None
    if step == want and run.ok:
        print(f"correct: {name} — {step}: {run.summary()}" + (", for other A and B too" if hidden else ""))
        return
    how = (f"the rule gives a {'smaller' if step > want else 'larger'} step" if step != want
           else "that is the rule's step")
    lines = [f"{name}: you have {step}; {how}.", f"  rule: {K_STEP_RULE}"]
    if known:
        lines.append(f"  your value: {known}")
    if step == want:
        lines.append("  your step is right, but what ran differs from the model:")
    lines.append("  what your kernel did:\n    " + str(run).replace("\n", "\n    "))
    raise NotYet("\n".join(lines))
