"""Where bwlab finds the files it reads besides its code: the CUDA sources and the GPU results.

In a checkout they are the top-level folders `cuda_src/` (the teaching and harness kernels, the PTX
headers) and `docs/results/` (reports and `recordings/`). A wheel carries copies of both under
`bwlab/_data/` (pyproject.toml maps the folders there), found through `importlib.resources`, so an
installed bwlab compiles, replays and shows recordings with no checkout around it.

`BWLAB_CUDA_SRC` names another CUDA source folder (bwlab.compile reads it).
"""
from __future__ import annotations

from importlib import resources
from pathlib import Path

__all__ = ["data_dir", "FOLDERS"]

# name -> where the folder lies in a checkout, relative to the repository root.
FOLDERS = {"cuda_src": ("cuda_src",), "results": ("docs", "results")}


def data_dir(name: str) -> Path:
    """The folder `name` ('cuda_src' or 'results'): the wheel's copy under bwlab/_data/ when bwlab was
    installed from a wheel, else the checkout's folder. A path that does not exist comes back when
    neither is there (the callers' errors name it)."""
    if name not in FOLDERS:
        raise KeyError(f"bwlab ships no data folder {name!r}; it ships {sorted(FOLDERS)}")
    shipped = resources.files("bwlab").joinpath("_data", name)
    if shipped.is_dir():
        if not isinstance(shipped, Path):
            raise RuntimeError(f"bwlab is installed in a form whose files are not on disk ({shipped!r}); "
                               "NVRTC needs a folder of headers: install bwlab from its wheel or a checkout")
        return shipped
    checkout = Path(__file__).resolve().parent.parent.joinpath(*FOLDERS[name])
    return checkout if checkout.is_dir() else Path(str(shipped))
