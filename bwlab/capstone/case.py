"""What notebook 10 calls besides the graded checks: where the capstone runs, its TODO list, how often a
run reuses each stage and accumulator, and a whole kernel of the learner's run in the emulator.

    print(where_it_runs())
    print(todo_table())
    print(ring_uses("blackwell", 512, 1024, 128, sms=2))
    print(try_kernel("hopper", {"producer_acquire": ..., "consumer_wait": ..., "consumer_release": ...}))
    print(try_kernel("hopper"))         # the %%cuda capstone/hopper_ws.cu version, when a cell kept one
"""
from __future__ import annotations

from dataclasses import dataclass

from ..source import source_text
from .skeleton import Assembled, FillError, KERNELS, assemble, skeleton, todo_regions

__all__ = ["where_it_runs", "todo_table", "ring_uses", "try_kernel", "Tried", "predicted_speed"]


def where_it_runs() -> str:
    """Where the capstone's kernels run on this machine, in bwlab.device's words, and where they are graded."""
    from .. import device
    return "\n".join([device.where("tma"), device.where("umma"),
                      "capstone — graded in bwlab's PTX emulator on every machine (sm_90a and sm_100a PTX): it names "
                      "the rule a fill breaks, where a GPU would hang, fault or quietly compute the wrong C"])


def todo_table() -> str:
    """Every TODO place of both skeletons: kernel, region, its line, and what it asks (wrapped)."""
    import textwrap
    out = []
    for key, sk in KERNELS.items():
        text = source_text(sk.file)
        for name, start, end, _ in todo_regions(text):
            block = text[start:end].splitlines()[1:-1]
            asks = " ".join(x.strip().lstrip("/").strip() for x in block) or "the same code as the place above"
            line = text[:start].count("\n") + 1
            out.append(textwrap.fill(f"{key} {name} (line {line}): {asks}", 110, subsequent_indent="    "))
    return "\n".join(out)


def ring_uses(kernel: str, M: int, N: int, K: int, sms: int = 2) -> str:
    """How a launch walks the ring: tiles per CTA, k-slices per CTA, fills of each stage (and uses of each
    Blackwell accumulator): the evidence that every stage and barrier phase is reused."""
    from .runner import launch_shape, require_problem
    k = require_problem(kernel, M, N, K)
    tiles = (M // k["BM"]) * (N // k["BN"])
    ctas = launch_shape(kernel, M, N, sms)[0][0]
    per_cta = [len(range(c, tiles, ctas)) for c in range(ctas)]
    slices = [t * (K // k["BK"]) for t in per_cta]
    fills = min(s // k["STAGES"] for s in slices)
    text = (f"{kernel} {M} x {N} x {K}: {tiles} tiles on {ctas} persistent CTAs ({min(per_cta)}-{max(per_cta)} each), "
            f"{K // k['BK']} k-slices a tile: each of the {k['STAGES']} stages filled at least {fills} times")
    if "ACC_BUFS" in k:
        text += f", each of the {k['ACC_BUFS']} accumulators used at least {min(per_cta) // k['ACC_BUFS']} times"
    return text


@dataclass
class Tried:
    kernel: str
    source: str          # "your fills" or "your %%cuda version"
    lines: list

    @property
    def ok(self) -> bool:
        return self.lines[0].startswith("ran")

    def __str__(self) -> str:
        return "\n".join(self.lines)


def _kept(kernel: str) -> Assembled | None:
    from ..lab import kept
    k = kept(skeleton(kernel).file)
    if k is None:
        return None
    return Assembled(kernel, k.file, k.text, {}, edited=True)


def try_kernel(kernel: str, fills: dict | None = None, M: int | None = None, N: int | None = None,
               K: int | None = None, sms: int = 2, seed: int = 0) -> Tried:
    """The learner's whole kernel (every region from `fills`, or the kept %%cuda edit of the skeleton's file
    when `fills` is None) run once in the emulator at the graded shape (or M, N, K): what happened, in a few
    lines (never a traceback). Ungraded: the exercises grade each region on its own."""
    from ..compile import CompileError
    from ..gemm.runner import check as check_c
    from ..lab import TeachingKernel
    from .exercises import SHOWN, reason
    from .runner import random_operands, run_emulated
    sk = skeleton(kernel)
    if fills is None:
        asm, source = _kept(kernel), "your %%cuda version"
        if asm is None:
            return Tried(kernel, "", [f"no kernel yet: give try_kernel your fills, or keep a %%cuda {sk.file} cell"])
    else:
        source = "your fills"
        missing = [r for r in sk.regions if fills.get(r) is None or fills.get(r) is Ellipsis]
        if missing:
            return Tried(kernel, source, [f"no fill yet for {', '.join(missing)}: the exercises above first"])
        try:
            asm = assemble(kernel, {r: fills[r] for r in sk.regions})
        except FillError as e:
            return Tried(kernel, source, [str(e)])
    try:
        TeachingKernel(asm.file, asm.text).compile()
    except CompileError as e:
        first = next((f"{kind} on {asm.where(line)}: {msg}" for where, line, kind, msg in e.diagnostics
                      if kind != "warning"), str(e).splitlines()[0])
        return Tried(kernel, source, [f"{source} does not compile: {first}"])
    shape = SHOWN[kernel]
    M, N, K = M or shape[0], N or shape[1], K or shape[2]
    a, b = random_operands(M, N, K, seed)
    try:
        c, _ = run_emulated(asm, a, b, sms=sms, seed=seed)
    except Exception as e:          # the emulator's verdict, told short
        kind, said = reason(e, asm)
        return Tried(kernel, source, [f"{source} stopped in the emulator: {kind}", f"  {said}"])
    got = check_c(a, b, c, kernel)
    verdict = "C within tolerance of the f32 GEMM" if got.ok else f"C differs: {got}"
    return Tried(kernel, source, [f"ran: {source}, {ring_uses(kernel, M, N, K, sms)}; no rule broken; {verdict}"
                                  if got.ok else f"finished, but {verdict}"])



def predicted_speed(kernel: str, fills: dict | None = None, shape=(8192, 8192, 8192)) -> str:
    """How fast the learner's Hopper kernel (every region from `fills`, or the kept %%cuda edit) would run on an
    H100 at `shape`, predicted by bwlab.timing from the emulator's run of it (capstone/speed.py), beside the
    ladder's step 4 predicted the same way. A few lines; never a traceback."""
    from ..timing.gemm import predict as predict_step
    from .speed import predict
    if kernel != "hopper":
        return "no prediction: the timing model describes Hopper GPUs (the Blackwell ladder's ranges: notebook 07)"
    tried = try_kernel(kernel, fills)
    if not tried.ok:
        return f"no prediction yet: the kernel must run right first ({tried.lines[0]})"
    asm = _kept(kernel) if fills is None else assemble(kernel, {r: fills[r] for r in skeleton(kernel).regions})
    mine, s4 = predict(asm, *shape), predict_step("s4", *shape)
    m, n, k = shape
    return (f"predicted for {m} x {n} x {k} on the {mine.machine} description at {mine.clock_mhz:.0f} MHz: "
            f"{mine.ms:.3f} ms, {mine.tflops:.0f} TFLOP/s\n"
            f"the ladder's step 4, predicted the same way: {s4.ms:.3f} ms, {s4.tflops:.0f} TFLOP/s\n"
            "(bwlab.timing: the emulator's run of one SM replayed on the machine description; a prediction, "
            "the same on every computer, not a measurement)")
