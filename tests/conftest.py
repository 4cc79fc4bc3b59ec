import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _gpu_reason(min_cc=None, exact_major=None):
    from bwlab import device
    info = device.gpu_info()
    if info is None:
        return "no CUDA GPU here (or BWLAB_BACKEND=model)"
    if min_cc and info.cc < min_cc:
        return f"needs sm_{min_cc[0]}{min_cc[1]}+, this GPU is {info.name} ({info.sm})"
    if exact_major and info.cc[0] not in exact_major:
        return f"needs sm_100 (tcgen05/TMEM), this GPU is {info.name} ({info.sm})"
    return None


def _emulator_runs(item) -> bool:
    """A test marked `emulated` runs in the emulated tier where no GPU would run it."""
    from bwlab import device
    if item.get_closest_marker("not_emulated") is not None:
        return False
    return item.get_closest_marker("emulated") is not None and (
        device.backend() == "emulated" or device.gpu_info() is None)


def pytest_collection_modifyitems(config, items):
    for item in items:
        reason = None
        if _emulator_runs(item):
            item.fixturenames.append("emulated_tier")
            continue
        if item.get_closest_marker("sm100"):
            reason = _gpu_reason(exact_major=(10, 11))
        elif item.get_closest_marker("sm90"):
            reason = _gpu_reason(min_cc=(9, 0))
        elif item.get_closest_marker("gpu"):
            reason = _gpu_reason()
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
    items[:] = _longest_first(items)


# The files that take longest on a machine without a GPU (measured with --durations on 2 cores): the two
# that grade notebooks in bubblewrap sandboxes (their module fixtures take minutes, mostly waiting on the
# sandboxed kernels), then single tests of a minute or half. `make test` hands files to the xdist workers in
# this order (--dist loadfile --no-loadscope-reorder): started last, the grading files alone would keep one
# worker busy minutes after the others have finished.
LONGEST = ("test_classroom.py", "test_grading_hostile.py", "test_emu.py", "test_gemm_ladder.py",
           "test_recordings.py", "test_tma_gpu.py")


def _longest_first(items):
    """LONGEST first, then the other files by their number of tests, most first (what xdist's loadfile
    does by default); the tests of a file stay in their order."""
    files = {}
    for item in items:
        files.setdefault(item.path, []).append(item)
    rank = {name: i for i, name in enumerate(LONGEST)}
    order = sorted(files, key=lambda p: (rank.get(p.name, len(LONGEST)), -len(files[p])))
    return [item for path in order for item in files[path]]


def pytest_terminal_summary(terminalreporter):
    skipped = terminalreporter.stats.get("skipped", [])
    reasons = {}
    for rep in skipped:
        r = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        reasons[r] = reasons.get(r, 0) + 1
    if reasons:
        terminalreporter.write_line("GPU tests skipped:")
        for r, n in sorted(reasons.items()):
            terminalreporter.write_line(f"  {n:3d} x {r}")


@pytest.fixture
def emulated_tier(monkeypatch):
    """Run one test in the emulated tier (BWLAB_BACKEND=emulated): the stage runners execute their
    kernels' PTX in bwlab.emu."""
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")


@pytest.fixture
def model_tier(monkeypatch):
    """Force the model tier (BWLAB_BACKEND=model) for one test."""
    monkeypatch.setenv("BWLAB_BACKEND", "model")
