"""No name is used that nothing defines, in the package and the device scripts. Much of bwlab runs only on a
GPU (the hardware tier of every stage, the GPU runs shown beside a grade), and CI has none: a name lost in a
refactor there would fail first in front of a learner. pyflakes reads the code without running it."""
from pathlib import Path

import pytest

pyflakes_api = pytest.importorskip("pyflakes.api")
from pyflakes import messages, reporter  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


class _Collect(reporter.Reporter):
    def __init__(self):
        self.found = []

    def flake(self, message):
        if isinstance(message, (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)):
            self.found.append(str(message))

    def syntaxError(self, filename, msg, lineno, offset, text):
        self.found.append(f"{filename}:{lineno}: {msg}")

    def unexpectedError(self, filename, msg):
        self.found.append(f"{filename}: {msg}")


def _undefined(paths):
    rep = _Collect()
    for p in paths:
        pyflakes_api.checkPath(str(p), rep)
    return [f.replace(str(ROOT) + "/", "") for f in rep.found]


def test_package_uses_no_undefined_name():
    assert _undefined(sorted((ROOT / "bwlab").rglob("*.py"))) == []


def test_device_scripts_use_no_undefined_name():
    assert _undefined(sorted((ROOT / "docs" / "results").glob("*.py"))) == []


def test_the_check_finds_one(tmp_path):
    bad = tmp_path / "gpu_only.py"
    bad.write_text("def shown_on_a_gpu():\n    m, n, k = SHAPE_FROM_ELSEWHERE\n    return m\n")
    assert _undefined([bad]) == [f"{bad}:2:15: undefined name 'SHAPE_FROM_ELSEWHERE'"]
