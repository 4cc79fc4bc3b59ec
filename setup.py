"""What the wheel holds (the rest of the metadata is in pyproject.toml).

* every `bwlab.*` package found on disk;
* two folders of the repository that bwlab reads at run time, placed under `bwlab/_data/` without moving
  them in the repository (bwlab/package_data.py finds them in either place):
  `cuda_src/` with every subfolder, `.cu` and `.cuh` -> `bwlab/_data/cuda_src/`;
  `docs/results/*.txt` (the reports the notebooks quote) and `docs/results/recordings/*.npz` ->
  `bwlab/_data/results/`;
* `bwlab/bridge/recorded/` (the twin kernels' PTX as recorded, with tool, version and date), in place.

Each data folder is declared as a package of its own so that setuptools maps it explicitly (a folder
carried only as data of its parent would be warned about as an "importable package absent from
`packages`"); their Python files (docs/results/*.py, the scripts that made some reports) are not
modules of bwlab and stay out. tests/test_wheel.py checks that every such file arrives in the wheel.
"""
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent

# (package name in the wheel, folder in the repository, file patterns, include subfolders)
DATA = [
    ("bwlab._data.cuda_src", "cuda_src", ["*.cu", "*.cuh"], True),
    ("bwlab._data.results", "docs/results", ["*.txt"], False),
    ("bwlab._data.results.recordings", "docs/results/recordings", ["*.npz"], False),
    ("bwlab.bridge.recorded", "bwlab/bridge/recorded", ["*.ptx", "*.json"], False),
]


def data_packages():
    package_dir, package_data = {}, {}
    for package, folder, patterns, recursive in DATA:
        root = HERE / folder
        if not root.is_dir():
            raise SystemExit(f"setup.py: the folder {folder}/ that the wheel carries is missing from {HERE}")
        folders = [root] + (sorted(p for p in root.rglob("*") if p.is_dir()) if recursive else [])
        for d in folders:
            if not any(f.is_file() for pattern in patterns for f in d.glob(pattern)):
                continue
            name = ".".join((package, *d.relative_to(root).parts))
            package_dir[name] = d.relative_to(HERE).as_posix()
            package_data[name] = patterns
    return package_dir, package_data


class BuildPy(build_py):
    """setuptools copies every `*.py` of a package as a module; a data folder has none to give."""

    def find_package_modules(self, package, package_dir):
        return [] if package in DATA_PACKAGES else super().find_package_modules(package, package_dir)


package_dir, package_data = data_packages()
DATA_PACKAGES = set(package_dir)
setup(packages=find_packages(include=["bwlab", "bwlab.*"]) + sorted(package_dir),
      package_dir=package_dir, package_data=package_data, cmdclass={"build_py": BuildPy})
