"""What every validate/bench command shares: the preamble (options, banner, tier), the report that
`--out` saves, the random-case loop, and the exit codes.

Exit codes, the same for every command: 0 every case passed, 1 some case differs (or failed),
2 usage error, 3 no suitable GPU here (nothing was run).
"""
from __future__ import annotations

import argparse
import time

from .. import device
from ..util import round_up

__all__ = ["gpu_line", "probe_header", "EXIT_PASS", "EXIT_MISMATCH", "EXIT_USAGE", "EXIT_NO_GPU", "Report", "Command", "NoSuitableGpu",
           "run_cases", "verdict", "padded_strides"]

EXIT_PASS, EXIT_MISMATCH, EXIT_USAGE, EXIT_NO_GPU = 0, 1, 2, 3


class NoSuitableGpu(RuntimeError):
    """The command needs a GPU tier this machine does not have."""


class Report:
    """What a command prints, kept so that `--out FILE` saves the same text.

    `say = Report(); say("a line"); say.save(path)`.
    """

    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, s=""):
        print(s, flush=True)
        self.lines.append(str(s))

    def save(self, path) -> None:
        if path:
            with open(path, "w") as f:
                f.write("\n".join(self.lines) + "\n")


class Command:
    """The preamble every command shares.

        cmd = Command("validate tma", "Random TMA loads ...", stage="tma")
        cmd.add("--cases", type=int, default=1000)
        args, say = cmd.start(argv)      # parses, prints the banner, checks the tier
        ...
        return cmd.finish(failures)      # prints the verdict, saves --out, returns the exit code
    """

    def __init__(self, name: str, description: str, stage: str | None = None, need: str = "hardware"):
        self.name, self.stage, self.need = name, stage, need
        self.parser = argparse.ArgumentParser(prog=f"python -m bwlab.{name}", description=description)
        self.parser.add_argument("--out", help="also write the report to this file")
        self.args = None
        self.say = Report()

    def add(self, *a, **kw):
        self.parser.add_argument(*a, **kw)
        return self

    def start(self, argv):
        self.args = self.parser.parse_args(argv)
        self.say(device.banner(print_it=False))
        if self.stage is not None:
            have = device.tier(self.stage)
            ok = have == "hardware" if self.need == "hardware" else have in ("hardware", "hybrid")
            if not ok:
                msg = f"{self.name}: stage '{self.stage}' runs in the {have} tier here: nothing to run on a GPU"
                self.say(msg)
                self.say.save(self.args.out)
                raise NoSuitableGpu(msg)
        return self.args, self.say

    def finish(self, failures: int, label: str | None = None) -> int:
        label = label or self.name.split()[-1]
        self.say(verdict(label, failures))
        self.say.save(self.args.out)
        return EXIT_PASS if failures == 0 else EXIT_MISMATCH


def verdict(label: str, failures: int) -> str:
    return f"{label}: {'PASS' if failures == 0 else f'{failures} FAILURE(S)'}"


def run_cases(cases, check, say, describe=str, show_first: int = 25) -> dict:
    """The random-case loop: `check(case)` -> a CheckResult (or anything with `.ok` and `str()`).

    Prints one line per failing case (the first `show_first`) and a count; returns
    {'passed': n, 'failed': [indices], 'seconds': t}.
    """
    t0 = time.perf_counter()
    failed = []
    for i, case in enumerate(cases):
        try:
            res = check(case)
            ok, text = bool(res.ok), str(res)
        except Exception as e:  # a refused or faulting case is a failure of that case, reported
            ok, text = False, f"{type(e).__name__}: {e}"
        if not ok:
            failed.append(i)
            if len(failed) <= show_first:
                say(f"  case {i}: {describe(case)}\n    {text}")
    n = len(cases)
    say(f"{n - len(failed)}/{n} cases equal the model ({time.perf_counter() - t0:.1f} s)")
    return {"passed": n - len(failed), "failed": failed, "seconds": time.perf_counter() - t0}


def padded_strides(rng, shape, elem: int) -> list:
    """Random byte strides of dims 1.. of a tensor for the random-case generators: the row pitch rounded
    up to 16 bytes plus 0-32 bytes of padding, each further dimension padded by 0 or 16 bytes."""
    strides, pitch = [], round_up(shape[0] * elem, 16) + 16 * int(rng.integers(0, 3))
    for i in range(1, len(shape)):
        strides.append(pitch)
        pitch = pitch * shape[i] + 16 * int(rng.integers(0, 2))
    return strides


def gpu_line() -> str:
    """The first line of a measurement's report: the UTC time, the GPU, its driver and CuPy's version."""
    import datetime
    import subprocess
    import cupy as cp
    dev = cp.cuda.runtime.getDeviceProperties(0)
    try:
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        drv = f"(CUDA driver API {cp.cuda.runtime.driverGetVersion()})"
    return (f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, GPU {dev['name'].decode()}, "
            f"driver {drv}, cupy {cp.__version__}")


def probe_header(emulate: bool) -> str:
    """The first line of a probe script's report (docs/results/timing_*.py): in the emulator, that its clock is
    virtual; on a GPU, `gpu_line()`."""
    import datetime
    if emulate:
        return (f"# {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC; bwlab PTX emulator (virtual "
                "clock: the numbers below prove the script, not the GPU)")
    return "# " + gpu_line()
