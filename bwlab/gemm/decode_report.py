"""The decode rung's committed measurement (docs/results/gemm_protocol_decode_h200.txt, made by
docs/results/decode_protocol.py): its rows and the roofline table; bwlab.gemm.decode re-exports them."""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["REPORT", "STAGES", "DecodeRow", "StageRow", "decode_report_rows", "decode_stage_rows", "roofline_table"]

REPORT = "gemm_protocol_decode_h200.txt"
STAGES = "decode_stage_h200.txt"   # docs/results/decode_stage_probe.py: when every stage of every CTA landed


@dataclass(frozen=True)
class DecodeRow:
    """One line of the decode report: a candidate on one shape under the sustained protocol."""
    shape: str            # "MxNxK"
    name: str             # "library (cuBLAS)", "read stream", a rung's name
    us: float             # median time per launch
    tflops: float
    tbps: float           # bytes that must move / time
    roofline: float       # read-stream time / this time (nan where the shape had no stream)
    ratio: float          # library time / this time (1 for the library)
    mib: float            # bytes that must move, MiB
    mhz: float = float("nan")   # median SM clock NVML sampled during this candidate's blocks

    @property
    def m(self) -> int:
        return int(self.shape.split("x")[0])


_D_SHAPE = re.compile(r"^== (\d+) x (\d+) x (\d+) .*must move \(A \+ B \+ C, bf16\): ([\d.]+) MiB")
_D_ROW = re.compile(r"^  (?P<name>\S.*?)\s+(?P<us>[\d.]+) us\s+(?P<tf>[\d.]+)\s+(?P<tb>[\d.]+)\s+(?P<roof>[\d.]+|-)\s+"
                    r"(?P<r>[\d.]+)")


_D_MHZ = re.compile(r"SM (\d+) MHz")


def decode_report_rows(name: str = REPORT) -> list:
    """The rows of a committed decode report (docs/results/NAME, made by docs/results/decode_protocol.py)."""
    from ..results import report_text
    out, shape, mib = [], None, float("nan")
    for line in report_text(name).splitlines():
        m = _D_SHAPE.match(line)
        if m:
            shape, mib = "x".join(m.groups()[:3]), float(m.group(4))
            continue
        m = _D_ROW.match(line)
        if m and shape:
            roof = float("nan") if m["roof"] == "-" else float(m["roof"])
            clock = _D_MHZ.search(line)
            out.append(DecodeRow(shape, m["name"], float(m["us"]), float(m["tf"]), float(m["tb"]), roof,
                                 float(m["r"]), mib, float(clock.group(1)) if clock else float("nan")))
    if not out:
        raise ValueError(f"{name}: no rows of a decode report")
    return out


def roofline_table(rows) -> str:
    """Per decode shape: the bytes that must move, the read stream's bandwidth (the roofline), and each
    candidate's time, fraction of that roofline and ratio to cuBLAS. A row named '... (PDL)' was launched
    with programmatic dependent launch and its fraction is of the read stream launched the same way."""
    out = [f"{'shape':>15s} {'MiB':>7s} {'stream TB/s':>11s} {'roofline us':>11s}   "
           f"{'candidate':<18s} {'us':>7s} {'x roofline':>10s} {'x cuBLAS':>8s}"]
    for shape in dict.fromkeys(r.shape for r in rows):
        here = [r for r in rows if r.shape == shape]
        st = next((r for r in here if r.name == "read stream"), None)
        if st is None:
            continue
        first = True
        for r in here:
            if r.name == "read stream":
                continue
            head = (f"{shape:>15s} {r.mib:7.1f} {st.tbps:11.2f} {st.us:11.2f}" if first else " " * 48)
            out.append(f"{head}   {r.name:<18s} {r.us:7.2f} {r.roofline:10.3f} {r.ratio:8.3f}")
            first = False
    if any(r.name.endswith("(PDL)") for r in rows):
        out.append("(PDL): launched with programmatic dependent launch; 'x roofline' of those rows is against the "
                   "read stream launched the same way, the row 'read stream (PDL)'")
    return "\n".join(out)


@dataclass(frozen=True)
class StageRow:
    """One M of a committed stage recording (docs/results/decode_stage_probe.py): B's bytes landed across the
    GPU per 2 us from the first CTA's start, against the rate of the read stream launched with PDL."""
    m: int
    landed: tuple          # TB/s of B landed in each 2-us bin
    stream_tbps: float     # the read stream launched with PDL, this run
    plateau_tbps: float    # B's rate between 6 us and the first CTA done
    back_to_back_us: float  # the rung launched back to back, unstamped
    bin_us: float = 2.0


_S_HEAD = re.compile(r"^M = +(\d+) .*back to back, unstamped: ([\d.]+) us; the read stream launched with PDL: "
                     r"[\d.]+ us, ([\d.]+) TB/s\)")
_S_LANDED = re.compile(r"^ +B landed per 2 us .*\(TB/s\): ([\d. ]+)$")
_S_PLATEAU = re.compile(r"^ +plateau .*: ([\d.]+) TB/s of B")


def decode_stage_rows(name: str = STAGES) -> list:
    """The rows of a committed stage recording (docs/results/NAME, made by docs/results/decode_stage_probe.py)."""
    from ..results import report_text
    out, head, landed = [], None, None
    for line in report_text(name).splitlines():
        if (m := _S_HEAD.match(line)):
            head, landed = (int(m[1]), float(m[2]), float(m[3])), None
        elif head and (m := _S_LANDED.match(line)):
            landed = tuple(float(x) for x in m[1].split())
        elif head and landed and (m := _S_PLATEAU.match(line)):
            out.append(StageRow(head[0], landed, head[2], float(m[1]), head[1]))
            head = None
    if not out:
        raise ValueError(f"{name}: no rows of a stage recording")
    return out
