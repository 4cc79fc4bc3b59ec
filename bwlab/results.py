"""Results recorded on real GPUs and committed under `docs/results/`.

Two kinds:

* reports — the text a `python -m bwlab.validate|bench ...` command printed (each file ends with the
  command that produced it): `report_text(name)`, `show_report(name)`;
* recordings — the raw bytes a GPU cell of a notebook produced (SMEM windows, GMEM results, registers,
  timings) with the inputs that produced them, in `docs/results/recordings/<name>.npz`. On a machine
  that cannot run the stage, the notebook loads the recording, labels it with where and when it was
  made, and compares it with the model computed now:

      rec = load_recording("tma_load_swizzle128")
      print(rec.label)                       # recorded on an NVIDIA H100 80GB HBM3 on 2026-11-22
      case.check(rec["smem"], source=rec.label)

A notebook does not load recordings by name: each stage lists, once, the cases its recordings hold
(`bwlab/<stage>/recorded.py`: `RECORDED`, a tuple of `Recorded(recording, key, build)`), and
`case.result()` / `case.results()` find the recording of the very case asked for (`find_recorded`).
The recorders (`bwlab/checks/record_<stage>.py`) build their inputs from the same list.

`python -m bwlab.checks.record --out DIR` makes every recording on a GPU (one module per stage,
`bwlab/checks/record_<stage>.py`), and `tests/test_recordings.py` replays each one against the model.
"""
from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable

import numpy as np

from .package_data import data_dir

__all__ = ["RESULTS", "RECORDINGS", "report_text", "show_report", "Recording", "save_recording",
           "load_recording", "recording_names", "Recorded", "recorded_cases", "find_recorded",
           "STAGE_PACKAGES", "Result"]

# The checkout's docs/results/, or the copy a wheel carries (bwlab.package_data).
RESULTS = data_dir("results")
RECORDINGS = RESULTS / "recordings"


def report_text(name: str) -> str:
    """The text of the report `docs/results/<name>` (a command's output, ending with the command)."""
    p = RESULTS / name
    if not p.is_file():
        raise FileNotFoundError(f"no recorded result {name!r} under docs/results/")
    return p.read_text()


def show_report(name: str) -> None:
    """Print `docs/results/<name>` as it was committed."""
    print(report_text(name))


@dataclass
class Recording:
    """Arrays a GPU produced, with the inputs and parameters that produced them (`meta`)."""

    name: str
    arrays: dict
    meta: dict

    def __getitem__(self, key: str) -> np.ndarray:
        return self.arrays[key]

    @property
    def params(self) -> dict:
        """The parameters of the recorded case (what its replay needs besides the arrays)."""
        return self.meta.get("params", {})

    @property
    def label(self) -> str:
        """Where and when: 'recorded on an NVIDIA H100 80GB HBM3 on 2026-11-22'."""
        dev = self.meta.get("device", "GPU")
        return f"recorded on an {dev} on {self.meta.get('date', '?')}" if dev.startswith("NVIDIA") \
            else f"recorded on a {dev} on {self.meta.get('date', '?')}"


def save_recording(directory, name: str, arrays: dict, **meta) -> Path:
    """Write `<directory>/<name>.npz`: the arrays plus a JSON `meta` entry (device, date, command,
    params, ...)."""
    p = Path(directory) / f"{name}.npz"
    p.parent.mkdir(parents=True, exist_ok=True)
    blob = {k: np.asarray(v) for k, v in arrays.items()}
    if "meta" in blob:
        raise ValueError("'meta' is reserved for the recording's description")
    np.savez_compressed(p, meta=np.frombuffer(json.dumps(meta, sort_keys=True).encode(), dtype=np.uint8),
                        **blob)
    return p


def load_recording(name: str, directory=None) -> Recording:
    """Read `docs/results/recordings/<name>.npz` (or one in `directory`)."""
    p = Path(directory or RECORDINGS) / f"{name}.npz"
    if not p.is_file():
        raise FileNotFoundError(f"no recording {name!r} under docs/results/recordings/")
    with np.load(p) as z:
        arrays = {k: z[k] for k in z.files if k != "meta"}
        meta = json.loads(bytes(z["meta"]).decode())
    return Recording(name, arrays, meta)


def recording_names(directory=None) -> list[str]:
    return sorted(p.stem for p in Path(directory or RECORDINGS).glob("*.npz"))


# ---- which recording holds which case -------------------------------------------------------------
STAGE_PACKAGES = ("hello", "tma", "multicast", "umma", "tmem", "epilogue", "flow", "gemm", "scratch")
# where each lists its recorded cases: a stage package's `recorded` module (bwlab.hello: the module itself)
_RECORDED_IN = {"hello": "bwlab.hello"}


@dataclass(frozen=True)
class Recorded:
    """One array of a recording and the case that produced it: `build()` makes the case (parameters,
    inputs, kernel) — the one definition both the recorder and the notebooks use."""

    recording: str                 # docs/results/recordings/<recording>.npz
    key: str                       # the array in it (a string array: the error the launch raised)
    build: Callable                # () -> bwlab.case.Case
    error: str = ""                # for a string array: the exception it is the message of
    seconds_key: str = ""          # for an error: the array holding how long the call took, in ms
    value: Callable | None = None  # (Recording) -> the case's result (or its Result), where not one array

    def case(self):
        return self.build()


def recorded_cases(stage: str | None = None, recording: str | None = None) -> list[Recorded]:
    """The recorded cases of one stage package (or all), optionally of one recording only."""
    out = []
    for pkg in ([stage] if stage else STAGE_PACKAGES):
        name = _RECORDED_IN.get(pkg, f"bwlab.{pkg}.recorded")
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name != name:
                raise
            continue
        out += [r for r in mod.RECORDED if recording is None or r.recording == recording]
    return out


@lru_cache(maxsize=None)
def _identities(package: str) -> dict:
    out: dict = {}
    for r in recorded_cases(package):
        out.setdefault(r.case().identity(), []).append(r)
    return out


@dataclass
class Result:
    """What a case produced and where: `value` (the array `model()` also returns), `source` in words —
    this GPU, the PTX emulator, or a recording's 'recorded on an NVIDIA H100 ... on DATE' — and `live`
    (run now, here). Unpacks as `(value, source)`; `recording` is the `bwlab.results.Recording` a recorded
    result came from, `error` the exception a live run raised (then `value` is None)."""

    value: object
    source: str
    live: bool
    recording: object = field(default=None, repr=False)
    error: object = None              # the exception (or, recorded, its message) instead of a value
    seconds: float | None = None      # how long the call took (shown with an error)

    def __iter__(self):
        return iter((self.value, self.source))


@lru_cache(maxsize=32)
def _load_cached(name: str) -> Recording:
    return load_recording(name)


def find_recorded(case, recording: str | None = None):
    """The recorded `bwlab.case.Result` of `case` (same parameters, inputs and kernel), or None; where
    several recordings hold the case, the first listed, or the one named `recording`."""
    package = type(case).__module__.split(".")[1]
    found = [r for r in _identities(package).get(case.identity(), ())
             if recording is None or r.recording == recording]
    if not found:
        return None
    r = found[0]
    rec = _load_cached(r.recording)
    if r.value is not None:
        v = r.value(rec)
        return v if isinstance(v, Result) else Result(v, rec.label, False, rec)
    value = rec[r.key]
    if value.dtype.kind == "U":       # the launch raised: the recording holds its message
        secs = float(rec[r.seconds_key]) / 1e3 if r.seconds_key else None
        text = f"{r.error}: {value}" if r.error else str(value)
        return Result(None, rec.label, False, rec, error=text, seconds=secs)
    return Result(value, rec.label, False, rec)
