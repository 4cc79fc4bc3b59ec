"""Everything the flow runs on a GPU, in one command:

    python -m bwlab.checks.flow --out DIR

builds both kernels (sm_100a and sm_90a), checks the model against NumPy, runs the flow in the best tier
this GPU offers and compares its trace with the model hop by hop, runs Hopper's native TMA + wgmma
kernel against NumPy, measures its event timeline (%globaltimer, %clock64) and times the kernels, then
writes DIR/flow_h100.txt (this report), DIR/recordings/flow_gpu.npz (copy to docs/results/recordings/)
and DIR/flow_timeline_trace.json (Chrome / Perfetto). Exit 0 when everything agrees, 1 otherwise,
3 when no GPU with TMA is here (the CPU parts still run and are reported).
"""
from __future__ import annotations

import datetime
import shlex
import sys
from pathlib import Path

import numpy as np

from .. import device
from .common import EXIT_NO_GPU, Report, verdict

__all__ = ["main"]


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="python -m bwlab.checks.flow", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="flow_results", help="directory for the report and the recording")
    ap.add_argument("--repeat", type=int, default=50, help="timed repetitions per kernel")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    say = Report()
    failures = 0
    from ..compile import compile_cuda
    from ..flow import Flow, flow_tier, format_ptx_by_hop, kernel_ptx
    from ..flow.timeline import chrome_trace, format_events, measured_segments, model_events
    say(device.banner(print_it=False))
    for src, arch in (("full_flow_sm100", "sm_100a"), ("full_flow_sm90", "sm_90a")):
        r = compile_cuda(src, arch=arch)
        say(f"compiled {src}.cu for {arch}: kernels {', '.join(r.kernels())}")
    flow = Flow(0)
    model = flow.model()
    ok = np.array_equal(model.result, flow.reference())
    failures += not ok
    say(f"model tier: D == NumPy A @ B^T (f32, bit for bit): {ok}")
    say(model.table())
    say("")
    say("model timeline of one tile:")
    say(format_events(model_events(flow.problem)))
    tier = flow_tier()
    if tier == "model" or device.gpu_info() is None:   # the emulated tier is tested in tests/, not here
        say("no GPU with TMA here: the GPU parts were not run")
        say(verdict("flow", failures))
        say.save(out / "flow_h100.txt")
        return EXIT_NO_GPU
    trace = flow.trace(tier)
    check = model.compare(trace)
    failures += not check.ok
    say(f"\n{tier} tier: the trace against the model, hop by hop")
    say(str(check))
    ok = np.array_equal(trace.result, flow.reference())
    failures += not ok
    say(f"{tier} tier: D == NumPy: {ok}")
    info = device.gpu_info()
    segs = []
    if info.has_wgmma:
        from ..flow.runner import run_hopper
        native, stamps = run_hopper(flow.problem, repeat=5)
        ok = np.array_equal(native[:flow.problem.M], flow.reference())
        failures += not ok
        say(f"Hopper native (TMA + wgmma, D in registers): D == NumPy: {ok}; guard row untouched: "
            f"{not native[flow.problem.M:].any()}")
        for clock in ("ns", "cycles"):
            segs_c = measured_segments(stamps, clock)
            say(f"measured timeline (last of 5 launches, {clock} from the first stamp): warp, from -> to, start, end")
            for w, a, b, t0, t1 in segs_c:
                say(f"  warp {w}  {a:>14s} -> {b:<14s} {t0:8d} {t1:8d}")
        segs = measured_segments(stamps, "ns")
    chrome_trace(model_events(flow.problem), segs, info.name, out / "flow_timeline_trace.json")
    say(f"wrote {out / 'flow_timeline_trace.json'}")
    from ..flow.runner import time_kernels
    for name, us in time_kernels(flow.problem, args.repeat).items():
        say(f"time {name:<20s} median {us:8.2f} us (launch to completion, CUDA events, {args.repeat} runs)")
    from . import record_flow
    meta = {"device": info.name, "date": datetime.date.today().isoformat(),
            "command": "python -m bwlab.checks.flow " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))}
    paths = record_flow.record(out / "recordings", meta)
    say(f"recorded {', '.join(str(p) for p in paths)} (copy to docs/results/recordings/)")
    from ..results import load_recording
    rec = load_recording(record_flow.NAME, out / "recordings")
    rep = record_flow.replay(rec)
    failures += not rep.ok
    say(f"recording replays against the model: {rep.ok}")
    say("\nPTX of the Hopper kernel by hop:")
    say(format_ptx_by_hop(kernel_ptx("sm_90a"), width=90))
    say(verdict("flow", failures))
    say(f"\ncommand: {meta['command']}")
    say.save(out / "flow_h100.txt")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
