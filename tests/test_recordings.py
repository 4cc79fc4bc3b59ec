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
    """Recordings loaded by a notebook, by a stage package's function a notebook calls (e.g.
    bwlab/epilogue/recorded.py), or holding a case a stage lists in its `recorded.RECORDED` (what
    `case.result()` finds); the recorders in bwlab/checks do not count."""
    from bwlab.results import recorded_cases
    files = sorted(NB_SRC.glob("*.py")) + sorted(p for p in (ROOT / "bwlab").glob("*/*.py") if p.parent.name != "checks")
    used = {m: p.name for p in files for m in LOADED.findall(p.read_text())}
    used.update({r.recording: f"bwlab.{r.build.__module__}" for r in recorded_cases()})
    return used


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


# ---- the same cells in the PTX emulator: its bytes equal the H100's --------------------------------
NOT_DATA = re.compile(r"(message|_ms$|_ns$|^waited|^seconds$|^stamps$|^cycles$|^call)")


def _same_arrays(name, got: dict, rec) -> list:
    import numpy as np
    bad = []
    for key, new in got.items():
        if NOT_DATA.search(key):
            continue
        old = rec[key]
        same = old.shape == new.shape and (np.array_equal(old, new) if old.dtype.kind in "USb" or old.ndim == 0
                                           else np.array_equal(old.view(np.uint8), new.view(np.uint8)))
        if not same:
            bad.append(f"{name}[{key}]")
    return bad


@pytest.mark.parametrize("stage", ["tma", "multicast", "foundation", "umma", "flow"])
def test_gpu_recordings_rerun_in_the_emulator(stage, tmp_path, emulated_tier):
    """Each recorder's GPU cells, run again in bwlab.emu (BWLAB_BACKEND=emulated), give the bytes the H100
    recorded (timings and messages aside: the emulator's time is virtual)."""
    import numpy as np
    mod = importlib.import_module(f"bwlab.checks.record_{stage}")
    files = mod.record(tmp_path, {"device": "bwlab.emu", "date": "now", "command": "tests"})
    assert files
    bad = []
    for f in files:
        name = Path(f).stem
        with np.load(f) as z:
            got = {k: z[k] for k in z.files if not k.startswith("_") and k != "meta"}
        bad += _same_arrays(name, got, load_recording(name))
    assert not bad, f"the emulator differs from the H100 recording in {bad}"


def test_epilogue_recordings_rerun_in_the_emulator(emulated_tier):
    import numpy as np
    from bwlab import emu
    from bwlab.epilogue import TEACH_EDITS, run_teach
    from bwlab.epilogue.recorded import GPU_VS_MODEL, edge_store_case, epilogue_case, teach_case
    from bwlab.lab import TeachingKernel
    bad = _same_arrays("epilogue_edge_store", {"gmem": edge_store_case().run()}, load_recording("epilogue_edge_store"))
    bad += _same_arrays("epilogue_gpu_vs_model", {f"d{i}": epilogue_case(i).run() for i in range(len(GPU_VS_MODEL))},
                        load_recording("epilogue_gpu_vs_model"))
    case = teach_case()
    bad += _same_arrays("teach_store_result", {"d": run_teach(case.problem, case.acc, case.d_init)},
                        load_recording("teach_store_result"))
    noswz = TeachingKernel("teach_store.cu").replace(*TEACH_EDITS["no swizzle"])
    bad += _same_arrays("teach_store_noswizzle", {"d": run_teach(case.problem, case.acc, case.d_init, kernel=noswz)},
                        load_recording("teach_store_noswizzle"))
    assert not bad, bad
    # Without its proxy fence the H100 sometimes stored stale bytes (teach_store_nofence); the emulator
    # names the missing fence instead of depending on luck.
    rec = load_recording("teach_store_nofence")
    assert np.asarray(rec["without_fence"]).any()
    nofence = TeachingKernel("teach_store.cu").replace(*TEACH_EDITS["no fence"])
    with pytest.raises(emu.ProxyFenceMissing, match="fence.proxy.async"):
        run_teach(case.problem, case.acc, case.d_init, kernel=nofence)
