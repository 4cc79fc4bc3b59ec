"""Make the recordings the notebooks show on machines without a suitable GPU.

    python -m bwlab.checks.record [STAGE ...] --out DIR

Each stage has `bwlab/checks/record_<stage>.py` with `record(out_dir, meta) -> list[Path]`: it runs its
notebook's GPU cells' cases on this GPU and saves what they produced with `bwlab.results.save_recording`
(inputs and parameters in `meta["params"]`, so that `tests/test_recordings.py` can replay each one
against the model). Copy DIR's files to docs/results/recordings/ and commit them with this command.
"""
from __future__ import annotations

import datetime
import importlib
import pkgutil
import shlex
import sys
from pathlib import Path

from .. import device
from .common import EXIT_NO_GPU, Command, NoSuitableGpu

__all__ = ["stages", "validate_main"]


def stages() -> list[str]:
    """The stages that have a `record_<stage>` module."""
    here = Path(__file__).parent
    return sorted(m.name[len("record_"):] for m in pkgutil.iter_modules([str(here)])
                  if m.name.startswith("record_"))


def validate_main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)   # also named in each recording's meta
    cmd = Command("checks.record", "Record every notebook GPU cell's result on this GPU", stage="tma")
    cmd.add("stages", nargs="*", help=f"stages to record (default: all of {', '.join(stages())})")
    cmd.parser.set_defaults(out=None)
    try:
        args, say = cmd.start(argv)
    except NoSuitableGpu:
        return EXIT_NO_GPU
    out = Path(args.out or "recordings")
    info = device.gpu_info()
    meta = {"device": info.name, "date": datetime.date.today().isoformat(),
            "command": "python -m bwlab.checks.record " + " ".join(shlex.quote(a) for a in argv)}
    failures = 0
    for stage in args.stages or stages():
        mod = importlib.import_module(f"bwlab.checks.record_{stage}")
        try:
            paths = mod.record(out, dict(meta))
            say(f"{stage}: {len(paths)} recording(s): " + ", ".join(p.name for p in paths))
        except Exception as e:  # report and go on with the other stages
            failures += 1
            say(f"{stage}: FAILED: {type(e).__name__}: {e}")
    args.out = None  # --out names the directory here, not a report file
    return cmd.finish(failures, "record")


if __name__ == "__main__":
    sys.exit(validate_main())
