"""The ladder's measured numbers and sources, as a reader wants them (NumPy only).

* `rows(rec)` — the recording `gemm_ladder`'s benchmark table as `Row`s (library GEMMs and steps);
* `format_table(rec)` — that table as text, each step's measured fraction of the best library beside
  the fraction predicted by the timing model (H100 SXM description, `Step.predicted`);
* `report_rows(name)` — the step rows of a committed `python -m bwlab.bench gemm` report
  (docs/results/NAME), for the variants that exist only as a report;
* `recorded_checks(name)` — the correctness lines of such a report;
* `step_diff(i)` — what changed between step i-1 and step i, as a unified diff of the kernels' code
  (the header comments left out, indentation ignored); `rung_diff(name)` the same for a rung beyond the
  ladder against the step it builds on;
* `protocol_rows(name)` / `protocol_summary(name)` — a committed `bench gemm --protocol sustained`
  report: each step's ratio to cuBLAS with its round-by-round spread and clocks, and its summary.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

import numpy as np

from .ladder import BK, STEPS, step as _step

__all__ = ["rung_diff", "ProtocolRow", "protocol_rows", "protocol_summary", "predictions", "Row", "rows", "shapes", "format_table", "report_rows", "recorded_checks", "step_diff", "flop_per_sm_cycle",
           "header_comment", "step_card", "explore_rows", "ptx_features", "timeline_table",
           "sm_flop_per_cycle", "H100_PEAK_FLOP_PER_SM_CYCLE", "PREDICTED_SHAPE", "PREDICTED_BY"]


@dataclass(frozen=True)
class Row:
    shape: str            # 'MxNxK'
    name: str
    ms: float
    tflops: float
    ratio: float          # step time vs the best library timed alongside it (NaN for a library row)
    predicted: float      # fraction predicted for 8192^3 (NaN for a library row)

    @property
    def is_step(self) -> bool:
        return not np.isnan(self.ratio)

    @property
    def library_alongside(self) -> float:
        """TFLOP/s of the best library in the launches interleaved with this step's."""
        return self.tflops / self.ratio


def rows(rec) -> list:
    return [Row(str(shape), str(name), *map(float, nums)) for (shape, name), nums in zip(rec["table"], rec["numbers"])]


def shapes(rec) -> list:
    """The recorded shapes, in the recording's order."""
    out = []
    for r in rows(rec):
        if r.shape not in out:
            out.append(r.shape)
    return out


def _pretty(shape: str) -> str:
    m, n, k = shape.split("x")
    return f"{m}^3" if m == n == k else f"{m} x {n} x {k}"


PREDICTED_SHAPE = "8192x8192x8192"   # the shape the predictions (Step.predicted) were made for
PREDICTED_BY = "predicted by the timing model (H100 SXM description)"


def format_table(rec) -> str:
    """The benchmark table; the predicted fraction (`Step.predicted`, predicted by the timing model) is
    printed only in the rows of the shape it was made for (PREDICTED_SHAPE) and left blank at the other
    shapes."""
    lines = []
    for shape in shapes(rec):
        here = [r for r in rows(rec) if r.shape == shape]
        libs = [r for r in here if not r.is_step]
        best = max(libs, key=lambda r: r.tflops)
        lines.append(f"{_pretty(shape)} (M x N x K = {shape.replace('x', ' x ')})")
        head = "predicted" if shape == PREDICTED_SHAPE else ""
        lines.append(f"  {'':<38s} {'ms':>7s} {'TFLOP/s':>8s}   {'of best library':>15s}  {head:>9s}  "
                     f"library alongside")
        for r in libs:
            mark = "  <- best" if r is best else ""
            lines.append(f"  {r.name:<38s} {r.ms:7.3f} {r.tflops:8.1f}{mark}")
        for r in here:
            if r.is_step:
                pred = f"{_step(r.name).predicted:9.2f}" if shape == PREDICTED_SHAPE else f"{'':9s}"
                lines.append(f"  {r.name:<38s} {r.ms:7.3f} {r.tflops:8.1f}   {r.ratio:15.2f}  {pred}  "
                             f"{r.library_alongside:6.0f} TFLOP/s")
        if head:
            lines.append(f"  (predicted: the fraction of the library {PREDICTED_BY}; bwlab.timing)")
        lines.append("")
    return "\n".join(lines).rstrip()


_ROW = re.compile(r"^\s+(?P<name>s\d_\w+)\s+(?P<ms>[\d.]+) ms\s+(?P<tf>[\d.]+) TFLOP/s\s+(?P<ratio>[\d.]+) of best")
_SHAPE = re.compile(r"^== (\d+) x (\d+) x (\d+)")


def report_rows(name: str) -> list:
    """(shape, step, ms, TFLOP/s, fraction of the best library) of every step row in docs/results/NAME."""
    from ..results import report_text
    out, shape = [], None
    for line in report_text(name).splitlines():
        if m := _SHAPE.match(line):
            shape = "x".join(m.groups())
        elif (m := _ROW.match(line)) and shape:
            out.append((shape, m["name"], float(m["ms"]), float(m["tf"]), float(m["ratio"])))
    if not out:
        raise ValueError(f"docs/results/{name} holds no step rows of `python -m bwlab.bench gemm`")
    return out


def recorded_checks(name: str = "gemm_h100.txt") -> list:
    """The check lines ('s1_one_warpgroup 4096x4096x4096: PASS; ...') a recorded bench run printed."""
    from ..results import report_text
    return [line.split(": ", 1)[1] for line in report_text(name).splitlines() if line.strip().startswith("stamps of ")]


def _split(path: str):
    from ..source import source_text
    lines = source_text(path).splitlines()
    i = 0
    while i < len(lines) and lines[i].startswith("//"):
        i += 1
    return lines[:i], lines[i:]


def header_comment(name) -> str:
    """The comment at the top of a step's kernel (what it does, in its own words)."""
    head, _ = _split(_step(name).path)
    return "\n".join(line[3:] if line.startswith("// ") else line[2:] for line in head[1:])


def step_diff(i: int, context: int = 1) -> str:
    """Step i's kernel against step i-1's: the changed hunks of the code below the header comments,
    lines compared with their indentation and trailing comments ignored (a loop that moved into
    another keeps its body; an unchanged line shows the new step's comment),
    each hunk with `context` unchanged lines around it."""
    if not 2 <= i <= len(STEPS):
        raise ValueError(f"a diff needs a step before it: i in 2..{len(STEPS)}, got {i}")
    return _diff(STEPS[i - 2], STEPS[i - 1], context)


def rung_diff(name: str, context: int = 1) -> str:
    """A rung beyond the ladder (ladder.BEYOND) against the step it builds on (`Step.base`), as step_diff."""
    new = _step(name)
    if not new.base:
        raise ValueError(f"{new.name} is a step of the ladder: use step_diff")
    return _diff(_step(new.base), new, context)


def _diff(old, new, context: int) -> str:
    a, b = _split(old.path)[1], _split(new.path)[1]
    key = lambda lines: [" ".join(line.split("//")[0].split()) for line in lines]  # noqa: E731
    sm = difflib.SequenceMatcher(None, key(a), key(b), autojunk=False)
    out = [f"--- {old.file}", f"+++ {new.file}"]
    for group in sm.get_grouped_opcodes(context):
        a_from, a_to, b_from, b_to = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{a_from + 1},{a_to - a_from} +{b_from + 1},{b_to - b_from} @@")
        for tag, a0, a1, b0, b1 in group:
            if tag == "equal":
                out += [" " + line for line in b[b0:b1]]
                continue
            out += ["-" + line for line in a[a0:a1]]
            out += ["+" + line for line in b[b0:b1]]
    return "\n".join(out)


def _pretty_ratio(rec, name: str) -> str:
    return ", ".join(f"{_pretty(r.shape)} {r.ratio:.2f}" for r in rows(rec) if r.name == name)


def step_card(rec, i: int) -> str:
    """Step i in a few lines: what it adds, its kernel's launch shape, and the fraction of the best
    library it reached at every recorded shape beside the step before it."""
    s = STEPS[i - 1]
    smem = f"{s.smem_bytes / 1024:.0f} KiB dynamic SMEM"
    launch = (f"tile {s.bm} x {s.bn}, {s.threads} threads, {s.stages} stage{'s' if s.stages > 1 else ''} "
              f"({smem}), " + ("one CTA per SM walking tiles" if s.persistent else "one CTA per tile")
              + (f", clusters of {s.cluster}" if s.cluster > 1 else ""))
    out = [f"{s.name}  (cuda_src/{s.path})", f"  adds: {s.added}", f"  {launch}",
           f"  of the best library: {_pretty_ratio(rec, s.name)}"]
    if i > 1:
        out.append(f"  step {i - 1} reached:       {_pretty_ratio(rec, STEPS[i - 2].name)}")
    out.append(f"  {PREDICTED_BY}: {s.predicted:.2f} of the library at 8192^3")
    return "\n".join(out)


_EXPLORE = re.compile(r"^(?P<name>s\d)(?: stages=(?P<stages>\d+))?: (?P<tf>[\d.]+) TFLOP/s.*?(?P<ok>True|False)$")


def explore_rows(name: str = "gemm_explore_h100.txt") -> list:
    """(step, stages or None, TFLOP/s, correct) of docs/results/gemm_explore_h100.txt (8192^3)."""
    from ..results import report_text
    out = []
    for line in report_text(name).splitlines():
        if m := _EXPLORE.match(line.strip()):
            out.append((m["name"], int(m["stages"]) if m["stages"] else None, float(m["tf"]), m["ok"] == "True"))
    return out


# PTX instruction families by what they do, as they appear in the sm_90a PTX of the ladder's kernels.
PTX_FEATURES = (
    ("TMA load (all)", "cp.async.bulk.tensor.2d.shared::cluster.global"),
    ("  .multicast::cluster", ".multicast::cluster"),
    ("mbarrier wait", "mbarrier.try_wait"),
    ("mbarrier arrive (empty)", "mbarrier.arrive.shared::cta.b64 _"),
    ("  remote arrive (mapa)", "mbarrier.arrive.shared::cluster"),
    ("wgmma m64n128k16", "m64n128k16"),
    ("wgmma m64n256k16", "m64n256k16"),
    ("wgmma.wait_group 0", "wgmma.wait_group.sync.aligned 0"),
    ("wgmma.wait_group 1", "wgmma.wait_group.sync.aligned 1"),
    ("setmaxnreg", "setmaxnreg"),
    ("barrier.cluster", "barrier.cluster.wait"),
    ("st.global (C from registers)", "st.global"),
    ("TMA store", "cp.async.bulk.tensor.2d.global.shared::cta"),
    ("fence.proxy.async", "fence.proxy.async"),
)


def ptx_features() -> str:
    """How many times each instruction family appears in each step's PTX (NVRTC, sm_90a; a static
    count: unrolled loops repeat an instruction in the text)."""
    from ..compile import compile_cuda
    ptx = [compile_cuda(s.path, arch="sm_90a").ptx_of("gemm") for s in STEPS]
    head = f"{'':<30s}" + "".join(f"{s.name.split('_')[0]:>6s}" for s in STEPS)
    lines = [head]
    for label, pat in PTX_FEATURES:
        counts = [sum(pat in line for line in p.splitlines()) for p in ptx]
        lines.append(f"{label:<30s}" + "".join(f"{c if c else '.':>6}" for c in counts))
    return "\n".join(lines)


# The H100 SXM's dense bf16 tensor-core peak, per SM and cycle: NVIDIA quotes 989.4 TFLOP/s for
# 132 SMs at a 1.83 GHz boost clock, which is 4096 FLOP per SM per cycle (a datasheet figure).
H100_PEAK_FLOP_PER_SM_CYCLE = 989.4e12 / 132 / 1.83e9


def sm_flop_per_cycle(rec, name) -> float:
    """FLOP per SM cycle if every CTA on CTA 0's SM went as fast as CTA 0 (the recorded shape):
    CTAs per SM x the FLOP of one k-slice / the cycles per k-slice."""
    from .occupancy import ctas_per_sm
    from .timeline import step_timeline
    s, tl = _step(name), step_timeline(rec, name)
    return flop_per_sm_cycle(s.bm, s.bn, tl.slice_period, ctas_per_sm(s).ctas)


def flop_per_sm_cycle(bm: int, bn: int, cycles_per_slice: float, ctas: int) -> float:
    """FLOP per SM cycle of `ctas` CTAs that each finish a k-slice of a bm x bn tile (2 bm bn BK FLOP)
    every `cycles_per_slice` cycles."""
    return ctas * 2 * bm * bn * BK / cycles_per_slice


def timeline_table(rec) -> str:
    """Per step, from CTA 0's stamps at the recorded shape: the SM clock, cycles per k-slice inside a
    tile, CTAs per SM (occupancy.ctas_per_sm), the FLOP per SM cycle that implies if every CTA on the
    SM went as fast as CTA 0 (and that as a fraction of the dense bf16 peak), the epilogue (median over
    every tile CTA 0 wrote and both consumers) and the median cycles from one tile's epilogue to the next."""
    from .occupancy import ctas_per_sm
    from .timeline import step_timeline
    lines = [f"{'':<22s}{'clock':>9s}{'cycles per':>12s}{'CTAs':>6s}{'FLOP per':>10s}{'of':>6s}{'epilogue':>10s}"
             f"{'tile to tile':>14s}",
             f"{'':<22s}{'GHz':>9s}{'k-slice':>12s}{'/ SM':>6s}{'SM cycle':>10s}{'peak':>6s}{'cycles':>10s}{'cycles':>14s}"]
    for s in STEPS:
        tl = step_timeline(rec, s.name)
        n = ctas_per_sm(s).ctas
        per_sm = sm_flop_per_cycle(rec, s.name)
        tiles = [b for tile, cons, b, _ in tl.epilogue_bars() if cons == 0]
        between = f"{np.median(np.diff(tiles)):14.0f}" if len(tiles) > 1 else f"{'(one tile)':>14s}"
        lines.append(f"{s.name:<22s}{tl.clock_ghz:9.2f}{tl.slice_period:12.0f}{n:6d}{per_sm:10.0f}"
                     f"{per_sm / H100_PEAK_FLOP_PER_SM_CYCLE:6.2f}"
                     f"{tl.epilogue:10.0f}{between}")
    return "\n".join(lines)


@dataclass(frozen=True)
class ProtocolRow:
    shape: str        # 'MxNxK'
    name: str         # a step, or 'library'
    ms: float
    tflops: float
    ratio: float      # library time / step time (NaN for the library row)
    low: float        # the ratio's range over the rounds
    high: float
    clocks: str       # NVML: SM clock, power, throttle reasons during the blocks


_SHAPE = re.compile(r"^== (\d+) x (\d+) x (\d+) ")
_LIB = re.compile(r"^  library\s+(?P<ms>[\d.]+) ms\s+(?P<tf>[\d.]+) TFLOP/s .*?\)\s+(?P<clk>SM .*)$")
_STEP = re.compile(r"^  (?P<name>s\w+)\s+(?P<ms>[\d.]+) ms\s+(?P<tf>[\d.]+)\s+(?P<r>[\d.]+)\s+(?P<lo>[\d.]+)-\s*"
                   r"(?P<hi>[\d.]+)\s+[\d.]+%\s+\S+\s+(?P<clk>SM .*)$")


def protocol_rows(name: str) -> list:
    """The rows of a committed `python -m bwlab.bench gemm --protocol sustained` report (docs/results/NAME)."""
    from ..results import report_text
    out, shape = [], None
    for line in report_text(name).splitlines():
        m = _SHAPE.match(line)
        if m:
            shape = "x".join(m.groups())
            continue
        m = _LIB.match(line)
        if m and shape:
            out.append(ProtocolRow(shape, "library", float(m["ms"]), float(m["tf"]), float("nan"), float("nan"),
                                   float("nan"), m["clk"]))
            continue
        m = _STEP.match(line)
        if m and shape:
            out.append(ProtocolRow(shape, m["name"], float(m["ms"]), float(m["tf"]), float(m["r"]), float(m["lo"]),
                                   float(m["hi"]), m["clk"]))
    if not out:
        raise ValueError(f"{name}: no rows of a sustained-protocol report")
    return out


def protocol_summary(name: str) -> str:
    """The protocol line, each shape's library (time, TFLOP/s, clocks) and the summary table of a
    committed sustained-protocol report, with the command that made it."""
    from ..results import report_text
    lines = report_text(name).splitlines()
    keep = [x for x in lines if x.startswith("protocol ")]
    keep += [f"library at {r.shape}: {r.ms:.4f} ms, {r.tflops:.1f} TFLOP/s; {r.clocks}"
             for r in protocol_rows(name) if r.name == "library"]
    start = next(i for i, x in enumerate(lines) if x.startswith("== summary"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("gemm:")), len(lines))
    keep += lines[start:end]
    keep += [x for x in lines if x.startswith("# ") and ("command" in x or " on NVIDIA" in x)]
    return "\n".join(keep)


def predictions(names, reports) -> str:
    """Each rung's written prediction beside what the protocol measured (every report that has it)."""
    import textwrap
    out = []
    for n in names:
        s = _step(n)
        out.append(f"{s.name}: predicted before measuring")
        out.append(textwrap.fill(s.prediction, width=100, initial_indent="    ", subsequent_indent="    "))
        for rep in reports:
            got = [r for r in protocol_rows(rep) if r.name == s.name]
            if got:
                out.append(f"  measured ({rep}): " + ", ".join(
                    f"{r.shape} {r.ratio:.3f} ({r.low:.3f}-{r.high:.3f})" for r in got))
    return "\n".join(out)
