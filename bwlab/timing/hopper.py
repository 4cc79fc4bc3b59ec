"""The Hopper ladder's predictions against its sustained-protocol measurements (docs/results/timing_hopper.txt).

    python -m bwlab.timing hopper --out docs/results/timing_hopper.txt
    python -m bwlab.timing hopper --machine h200 --report gemm_protocol_stamped_h200.txt
    python -m bwlab.timing hopper --machine h200 --report gemm_protocol_h200.txt --clocks clock_check_h200.txt

For every rung (s1-s8, split-K) and shape (4096^3, 8192^3, 512 x 8192 x 8192) it predicts the time at the
SM clock NVML measured during that rung's own blocks (the power cap sets it; the prediction is in cycles,
so the clock converts it, and the DRAM and L2 shares per cycle depend on it) and sets it beside the
measured median. The point prediction takes the SMs storing C at once from their drift (`ALIGN`,
`gemm.predict(align="drift")`). The range is the prediction with every uncertain number of the machine description at
the end of its range that makes the kernel faster, and at the end that makes it slower, that one also with
every SM's direct-store epilogue at the same moment (`gemm.predict(align="lockstep")`): a bound of what
the description allows, not a confidence interval.

`clocks` (clock checks, docs/results/clock_check.py) give, per rung and shape, the clock the SMs counted
(clock64 over %globaltimer) as a fraction of the clock NVML reported in the same sustained blocks: on the
H200 at its power cap NVML reads 8-14 % above the SMs' own count (clock_check_h200.txt,
clock_check_shapes_h200.txt). The table then predicts at NVML's clock times that fraction (the clock the
cycles were counted at) and shows the ratio at NVML's clock beside it. A report made with
`bench gemm --protocol sustained --clock-stamps` carries that clock itself, counted in each rung's own
blocks ('SMs ... MHz by clock64'); the table then predicts at it and needs no clock check.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ..gemm import ladder
from . import gemm

ALIGN = "drift"         # the point prediction's alignment of the SMs' tiles (gemm.predict's `align`)

__all__ = ["Measured", "measured", "SHAPES", "SOURCES", "table", "parse_table", "library_ms", "fractions",
           "fractions_module", "FRACTION_SHAPE", "FRACTIONS_FILE", "clock_ratios", "gpu_of"]

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
SHAPES = ((4096, 4096, 4096), (8192, 8192, 8192), (512, 8192, 8192))
# the file each rung's measurement is read from (its first sustained-protocol run)
SOURCES = {"s1": "gemm_protocol_h100.txt", "s2": "gemm_protocol_h100.txt", "s3": "gemm_protocol_h100.txt",
           "s4": "gemm_protocol_h100.txt", "s5": "gemm_protocol_h100.txt", "s6": "gemm_protocol_h100.txt",
           "s7": "gemm_protocol_beyond_h100.txt", "sk": "gemm_protocol_beyond_h100.txt",
           "s8": "gemm_protocol_s8_h100.txt"}
TOLERANCE = 0.15
FRACTION_SHAPE = (8192, 8192, 8192)     # the shape Step.predicted speaks of
FRACTIONS_FILE = ROOT / "bwlab" / "gemm" / "model_fractions.py"
_LIB = re.compile(r"^\s+library\s+([\d.]+) ms")
_HEAD = re.compile(r"^== (\d+) x (\d+) x (\d+) ")
_ROW = re.compile(r"^\s+(s\w+)\s+([\d.]+) ms\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)-\s*([\d.]+)\s+([\d.]+)%\s+[\d.]+\s+SM (\d+) MHz")


@dataclass(frozen=True)
class Measured:
    step: str
    shape: tuple
    ms: float
    mhz: float
    spread: tuple       # the ratio library/step round by round (lo, hi)
    source: str
    sms_mhz: float | None = None   # the SMs' own clock (clock64 / globaltimer) in the rung's blocks, if stamped


def measured(path) -> dict:
    """{(step name, shape): Measured} from a sustained-protocol report (bwlab.bench gemm --protocol sustained)."""
    out = {}
    shape = None
    path = Path(path)
    for line in path.read_text().splitlines():
        h = _HEAD.match(line)
        if h:
            shape = tuple(int(x) for x in h.groups())
            continue
        r = _ROW.match(line)
        if r and shape is not None:
            name = r.group(1)
            sms = _SMS.search(line)
            out[(name, shape)] = Measured(name, shape, float(r.group(2)), float(r.group(8)),
                                          (float(r.group(5)), float(r.group(6))), path.name,
                                          float(sms.group(1)) if sms else None)
    return out


_SMS = re.compile(r"SMs (\d+) MHz by clock64")
_CLOCK_ROW = re.compile(r"^\s+(s\w+)\s+[\d.]+\s+(\d+) \(\s*\d+-\s*\d+\)\s+(\d+) \(\s*\d+-\s*\d+\)\s+([\d.]+)\s")


def _results_path(name) -> Path:
    return Path(name) if Path(name).exists() else RESULTS / name


_GPU = re.compile(r"GPU (NVIDIA [^,]+),")


def gpu_of(path) -> str | None:
    """The GPU a report or clock check names in its first lines ('GPU NVIDIA H200, ...'), or None."""
    for line in _results_path(path).read_text().splitlines()[:5]:
        g = _GPU.search(line)
        if g:
            return g.group(1).strip()
    return None


_CLOCK_SHAPE = re.compile(r"^\s+clock log: .*?; (?:(\d+)\^3|(\d+)x(\d+)x(\d+)), ")


def clock_ratios(paths) -> dict:
    """{(step name, shape): the SMs' clock (clock64 / %globaltimer) over NVML's, measured in the same
    sustained blocks} from one or more clock checks (docs/results/clock_check.py's reports; files in
    docs/results or paths), each table under the 'clock log: ...; <shape>, ...' line that names its shape."""
    out = {}
    for path in ([paths] if isinstance(paths, (str, Path)) else paths):
        path = _results_path(path)
        if not path.exists():
            raise FileNotFoundError(f"no clock check at {path}: run docs/results/clock_check.py on the GPU")
        shape, n = None, 0
        for line in path.read_text().splitlines():
            h = _CLOCK_SHAPE.match(line)
            if h:
                shape = (int(h.group(1)),) * 3 if h.group(1) else tuple(int(x) for x in h.group(2, 3, 4))
                continue
            g = _CLOCK_ROW.match(line)
            if g:
                if shape is None:
                    raise ValueError(f"{path.name}: a clock row before any 'clock log: ...; <shape>,' line "
                                     "names its shape")
                r = float(g.group(4))
                if not 0.5 <= r <= 1.5:
                    raise ValueError(f"{path.name}: {g.group(1)}'s clock64 / NVML ratio {r} is outside 0.5-1.5: "
                                     "not a clock reading")
                out[(g.group(1), shape)] = r
                n += 1
        if not n:
            raise ValueError(f"{path.name} holds no clock check rows (step, ms, NVML MHz, clock64 MHz, ratio)")
    return out


def rows(steps=None, shapes=SHAPES, machine="h100_sxm", report=None, clocks=None, align=None):
    """(Measured, Prediction at 'value', 'fast', 'slow', Prediction at NVML's clock or None) for every rung
    and shape measured: the rungs' sustained-protocol reports (`SOURCES`), or every rung and shape of one
    `report` (a file name under docs/results or a path). With `clocks` (clock checks: one file or several),
    the predictions are at NVML's clock times the rung's clock64 / NVML ratio measured at the same shape,
    the last at NVML's clock. `align`: the point prediction's alignment of the SMs' tiles (default `ALIGN`)."""
    align = align or ALIGN
    out = []
    ratios = clock_ratios(clocks) if clocks is not None else None
    if report is not None:
        path = _results_path(report)
        pairs = [(m, ladder.step(m.step)) for m in measured(path).values()]
        files = [path]
    else:
        cache = {}
        pairs = []
        for short, fname in SOURCES.items():
            if steps is not None and short not in steps:
                continue
            s = ladder.step(short)
            meas = cache.setdefault(fname, measured(RESULTS / fname))
            pairs += [(meas[(s.name, shape)], s) for shape in shapes if (s.name, shape) in meas]
        files = [RESULTS / f for f in sorted(set(cache))]
    if ratios is not None:
        for c in ([clocks] if isinstance(clocks, (str, Path)) else clocks):
            on = gpu_of(c)
            for f in files:
                if gpu_of(f) != on:
                    raise ValueError(f"the clock check {Path(c).name} was measured on {on}, {f.name} on "
                                     f"{gpu_of(f)}: a clock check applies to measurements on the GPU it was made on")
    other_clock = ratios is not None or any(m.sms_mhz is not None for m, _ in pairs)
    for m, s in pairs:
        mhz = m.mhz
        if m.sms_mhz is not None:     # counted in the rung's own blocks: no clock check needed
            mhz = m.sms_mhz
        elif ratios is not None:
            if (s.name, m.shape) not in ratios:
                raise ValueError(f"the clock checks have no row for {s.name} at {'x'.join(map(str, m.shape))}")
            mhz = m.mhz * ratios[(s.name, m.shape)]
        # the range: the machine's uncertain numbers at their fast / slow ends, and the SMs' epilogues at
        # independent phases / all at once (gemm.storing_sms)
        preds = [gemm.predict(s.name, *m.shape, machine=machine, clock_mhz=mhz, which=w, align=al)
                 for w, al in (("value", align), ("fast", align), ("slow", "lockstep"))]
        # at NVML's clock, beside it, wherever another clock is in the table (a row at NVML's already: the same)
        at_nvml = (preds[0] if mhz == m.mhz else
                   gemm.predict(s.name, *m.shape, machine=machine, clock_mhz=m.mhz, align=align)) \
            if other_clock else None
        out.append((m, *preds, at_nvml))
    return out


def table(steps=None, shapes=SHAPES, machine="h100_sxm", report=None, clocks=None, align=None) -> str:
    rs = rows(steps, shapes, machine, report, clocks, align)
    where = f"report {Path(report).name}" if report else "H100 SXM"
    stamped = sum(m.sms_mhz is not None for m, *_ in rs)
    names = ", ".join(Path(c).name for c in ([clocks] if isinstance(clocks, (str, Path)) else clocks or []))
    if stamped:
        how_clock = ("predicted ms = predicted cycles / the SMs' clock counted in the rung's own blocks (clock64 / "
                     f"%globaltimer of CTA 0 in a stamped launch after every sample; {stamped} of {len(rs)} rows"
                     + ((f", the others from {names}" if names else ", the others at NVML's clock")
                        if stamped < len(rs) else "")
                     + "); the last columns: NVML's clock and the ratio predicted at it")
    elif clocks is None:
        how_clock = "predicted ms = predicted cycles / the SM clock NVML measured during the rung's own blocks"
    else:
        how_clock = (f"predicted ms = predicted cycles / the SMs' clock: NVML's during the rung's own blocks (NVML) x "
                     f"the rung's clock64 / NVML ratio measured at the power cap at that shape ({names}); the last "
                     "columns: NVML's clock and the ratio predicted at it")
    lines = [f"Hopper ladder: predicted (bwlab.timing, machine '{machine}') vs measured (sustained protocol, {where})",
             how_clock + "; range: the machine's uncertain numbers at the ends of their ranges (the slow end with "
             "every SM writing C at once)",
             f"{'step':22s} {'shape':>16s} {'MHz':>5s} {'measured':>9s} {'predicted':>9s} {'range':>17s} "
             f"{'pred/meas':>9s}  {'within 15 %':11s} " + ("NVML  at NVML " if clocks is not None or stamped else "")
             + "how",
             ]
    misses = []
    for m, p, lo, hi, at_nvml in rs:
        r = p.ms / m.ms
        a, b = sorted((lo.ms, hi.ms))
        ok = abs(r - 1) <= TOLERANCE
        shape = "x".join(map(str, m.shape))
        nv = f"{m.mhz:4.0f} {at_nvml.ms / m.ms:8.3f} " if at_nvml is not None else ""
        lines.append(f"{m.step:22s} {shape:>16s} {p.clock_mhz:5.0f} {m.ms:9.4f} {p.ms:9.4f} {a:8.4f}-{b:8.4f} "
                     f"{r:9.3f}  {'yes' if ok else 'NO':11s} {nv}{p.parts['how']}")
        if not ok:
            misses.append((m, p, r))
    n_ok = len(rs) - len(misses)
    lines.append(f"\nwithin +-{TOLERANCE:.0%}: {n_ok} of {len(rs)}")
    if clocks is not None or stamped:
        n_nv = sum(abs(x[-1].ms / x[0].ms - 1) <= TOLERANCE for x in rs)
        lines.append(f"within +-{TOLERANCE:.0%} at NVML's clock instead: {n_nv} of {len(rs)}")
    lines.append(order_report(rs))
    lines.append("sources of the measurements: " + ", ".join(sorted({m.source for m, *_ in rs})))
    return "\n".join(lines)


def order_report(rs, margin: float = 0.03) -> str:
    """Pairs of rungs at one shape whose measured times differ by more than `margin` (3 %: the protocol's
    round-to-round spreads are <= 2 %): is the faster one predicted faster?"""
    by_shape = {}
    for m, p, *_ in rs:
        by_shape.setdefault(m.shape, []).append((m, p))
    agree = total = 0
    wrong = []
    for shape, xs in by_shape.items():
        for i in range(len(xs)):
            for j in range(i + 1, len(xs)):
                (m1, p1), (m2, p2) = xs[i], xs[j]
                if abs(m1.ms / m2.ms - 1) <= margin:
                    continue
                total += 1
                if (m1.ms < m2.ms) == (p1.ms < p2.ms):
                    agree += 1
                else:
                    wrong.append(f"{m1.step.split('_')[0]} vs {m2.step.split('_')[0]} at {'x'.join(map(str, shape))}")
    s = f"measured order (pairs differing by > {margin:.0%}): {agree} of {total} reproduced"
    if wrong:
        s += "; reversed: " + ", ".join(wrong)
    return s


def h200_check() -> str:
    """The model on the H200 description against the probe's direct measurements on an H200 (8192^3, 5
    back-to-back launches after one warm-up, CUDA events; SM clock from clock64 / globaltimer of CTA 0)."""
    pat = re.compile(r"^\s+(s\w+)\s+([\d.]+) ms\s+SM clock\s+(\d+) MHz")
    lines = ["Hopper ladder on an H200 (docs/results/timing_probe_h200.txt: 5 launches at 8192^3, not the sustained "
             "protocol) vs bwlab.timing on the 'h200' description at the clock CTA 0 measured",
             f"{'step':22s} {'MHz':>5s} {'measured':>9s} {'predicted':>9s} {'pred/meas':>9s}"]
    for line in (RESULTS / "timing_probe_h200.txt").read_text().splitlines():
        g = pat.match(line)
        if not g:
            continue
        name, ms, mhz = g.group(1), float(g.group(2)), float(g.group(3))
        p = gemm.predict(name, 8192, 8192, 8192, machine="h200", clock_mhz=mhz, align=ALIGN)
        lines.append(f"{name:22s} {mhz:5.0f} {ms:9.4f} {p.ms:9.4f} {p.ms / ms:9.3f}")
    return "\n".join(lines)


def parse_table(text: str) -> dict:
    """{(step, shape): predicted ms} from a table this module wrote."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) > 6 and f[0].startswith("s") and "x" in f[1] and f[1].count("x") == 2:
            try:
                out[(f[0], tuple(int(x) for x in f[1].split("x")))] = float(f[4])
            except ValueError:
                continue
    return out


def library_ms(path) -> dict:
    """{shape: the library's median ms} from a sustained-protocol report."""
    out, shape = {}, None
    for line in Path(path).read_text().splitlines():
        h = _HEAD.match(line)
        if h:
            shape = tuple(int(x) for x in h.groups())
            continue
        r = _LIB.match(line)
        if r and shape is not None:
            out[shape] = float(r.group(1))
    return out


def fractions(text: str | None = None, shape=FRACTION_SHAPE) -> dict:
    """{step name: predicted fraction of the best library} at `shape`: the library's median time in the
    sustained-protocol report the step was measured in, over the step's time predicted by the timing
    model (H100 SXM description) at the SM clock measured during the step's own blocks, read from the
    committed table (docs/results/timing_hopper.txt, or `text`)."""
    text = (RESULTS / "timing_hopper.txt").read_text() if text is None else text
    pred = parse_table(text)
    out = {}
    for short, fname in SOURCES.items():
        name = ladder.step(short).name
        if (name, shape) not in pred:
            raise ValueError(f"the timing table has no row for {name} at {'x'.join(map(str, shape))}: "
                             "run `python -m bwlab.timing hopper --out docs/results/timing_hopper.txt`")
        out[name] = library_ms(RESULTS / fname)[shape] / pred[(name, shape)]
    return out


def fractions_module(text: str | None = None) -> str:
    """The text of bwlab/gemm/model_fractions.py (`python -m bwlab.timing fractions --write`)."""
    fr = fractions(text)
    lines = ['"""Each Hopper ladder rung\'s fraction of the best library GEMM at 8192^3, predicted by the timing model',
             "(H100 SXM description): the library's median time in the rung's sustained-protocol report over the",
             "rung's time that bwlab.timing predicts at the SM clock measured during the rung's own blocks",
             "(docs/results/timing_hopper.txt; docs/timing.md). `ladder.Step.predicted` reads it.",
             "",
             "Written by `python -m bwlab.timing fractions --write`; tests/test_timing.py checks it is what the code",
             'computes from the committed table. Do not edit by hand."""',
             "",
             "FRACTIONS = {"]
    lines += [f'    "{k}": {v:.3f},' for k, v in fr.items()]
    lines += ["}", ""]
    return "\n".join(lines)
