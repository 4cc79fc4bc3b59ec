"""Results recorded on real GPUs and committed under `docs/results/` (each file starts or ends with
the command that produced it). Notebooks show them where this machine cannot run the stage.

    from bwlab.results import show_recorded
    show_recorded("multicast_validate_h100.txt")
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["RESULTS", "recorded", "show_recorded"]

RESULTS = Path(__file__).resolve().parent.parent / "docs" / "results"


def recorded(name: str) -> str:
    """The text of `docs/results/<name>`."""
    p = RESULTS / name
    if not p.is_file():
        raise FileNotFoundError(f"no recorded result {name!r} under docs/results/")
    return p.read_text()


def show_recorded(name: str) -> None:
    """Print `docs/results/<name>` as it was committed."""
    print(recorded(name))
