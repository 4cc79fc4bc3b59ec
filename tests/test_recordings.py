"""Recordings and notebook cells stay in step: every recording a notebook loads exists, every recording
is loaded by some notebook, and each one, replayed through its stage's model now, equals what the GPU
produced when it was recorded."""
import importlib
import re
from pathlib import Path

import pytest

from bwlab.results import RECORDINGS, load_recording, recording_names

ROOT = Path(__file__).resolve().parent.parent
NB_SRC = ROOT / "notebooks" / "src"
LOADED = re.compile(r"""load_recording\(\s*["']([A-Za-z0-9_.-]+)["']""")


def _used():
    """Recordings loaded by a notebook, or by a stage package's function a notebook calls (e.g.
    bwlab/epilogue/demos.py); the recorders in bwlab/checks do not count."""
    files = sorted(NB_SRC.glob("*.py")) + sorted(p for p in (ROOT / "bwlab").glob("*/*.py") if p.parent.name != "checks")
    return {m: p.name for p in files for m in LOADED.findall(p.read_text())}


def test_every_recording_a_notebook_loads_exists():
    missing = {name: nb for name, nb in _used().items() if not (RECORDINGS / f"{name}.npz").is_file()}
    assert not missing, f"notebooks load recordings that are not committed: {missing}"


def test_every_recording_is_shown_somewhere():
    unused = sorted(set(recording_names()) - set(_used()))
    assert not unused, f"recordings no notebook loads: {unused}"


@pytest.mark.parametrize("name", recording_names())
def test_recording_replays_exactly(name):
    rec = load_recording(name)
    for key in ("stage", "device", "date", "command", "params"):
        assert key in rec.meta, f"{name}: meta lacks {key!r}"
    replay = importlib.import_module(f"bwlab.checks.record_{rec.meta['stage']}").replay
    result = replay(rec)
    assert result.ok, str(result)


@pytest.mark.parametrize("name", recording_names())
def test_recordings_come_from_a_gpu(name):
    """A notebook labels a recording with where and when it was made: it must be a real GPU run."""
    rec = load_recording(name)
    assert rec.meta["date"] != "provisional" and not rec.meta["device"].startswith("MODEL"), \
        f"{name} is a provisional recording made from the model; record it on a GPU (python -m bwlab.checks.record)"
    assert rec.meta["device"].startswith("NVIDIA"), rec.meta["device"]
