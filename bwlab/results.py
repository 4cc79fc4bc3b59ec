"""Results recorded on real GPUs and committed under `docs/results/`.

Two kinds:

* reports — the text a `python -m bwlab.validate|bench ...` command printed (each file ends with the
  command that produced it): `recorded(name)`, `show_recorded(name)`;
* recordings — the raw bytes a GPU cell of a notebook produced (SMEM windows, GMEM results, registers,
  timings) with the inputs that produced them, in `docs/results/recordings/<name>.npz`. On a machine
  that cannot run the stage, the notebook loads the recording, labels it with where and when it was
  made, and compares it with the model computed now:

      rec = load_recording("tma_load_swizzle128")
      print(rec.label)                       # recorded on an NVIDIA H100 80GB HBM3 on 2026-11-22
      case.check(rec["smem"], source=rec.label)

`python -m bwlab.checks.record --out DIR` makes every recording on a GPU (one module per stage,
`bwlab/checks/record_<stage>.py`), and `tests/test_recordings.py` replays each one against the model.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .package_data import data_dir

__all__ = ["RESULTS", "RECORDINGS", "recorded", "show_recorded", "Recording", "save_recording",
           "load_recording", "recording_names"]

# The checkout's docs/results/, or the copy a wheel carries (bwlab.package_data).
RESULTS = data_dir("results")
RECORDINGS = RESULTS / "recordings"


def recorded(name: str) -> str:
    """The text of `docs/results/<name>`."""
    p = RESULTS / name
    if not p.is_file():
        raise FileNotFoundError(f"no recorded result {name!r} under docs/results/")
    return p.read_text()


def show_recorded(name: str) -> None:
    """Print `docs/results/<name>` as it was committed."""
    print(recorded(name))


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
