"""The command lines: each `[project.scripts]` entry names a function that exists and answers --help with
exit 0, and every `python -m` command line of bwlab has its script. (tests/test_wheel.py runs the scripts
as a wheel installs them.)"""
import contextlib
import importlib
import io
import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
# `python -m` module -> its script; checks/ modules not listed here are internal helpers (a child process
# of a validation, a GPU diagnosis) that a user does not call.
COMMAND_LINES = {
    "bwlab.validate": "bwlab-validate", "bwlab.bench": "bwlab-bench", "bwlab.checks.record": "bwlab-record",
    "bwlab.checks.flow": "bwlab-flow-check", "bwlab.tmem": "bwlab-tmem", "bwlab.tools.notebooks": "bwlab-notebooks",
    "bwlab.tools.classroom": "bwlab-classroom",
}


def _target(spec: str):
    module, func = spec.split(":")
    return getattr(importlib.import_module(module), func)


def test_every_command_line_has_a_script():
    assert set(SCRIPTS) == set(COMMAND_LINES.values())
    for module, script in COMMAND_LINES.items():
        path = ROOT / (module.replace(".", "/") + ".py")
        if not path.exists():
            path = ROOT / module.replace(".", "/") / "__main__.py"
        text = path.read_text()
        assert '__name__ == "__main__"' in text, f"{module} is not runnable with python -m"
        spec_module, func = SCRIPTS[script].split(":")
        # `python -m MODULE` calls the same function as the script.
        assert re.search(rf"\b{func}\(", text.split('__name__ == "__main__"')[1]), \
            f"python -m {module} does not call {SCRIPTS[script]}"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_script_answers_help(script):
    if script == "bwlab-classroom":
        pytest.importorskip("nbgrader")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = _target(SCRIPTS[script])(["--help"])
        except SystemExit as e:  # argparse's --help
            code = e.code
    assert code in (0, None), f"{script} --help exited {code}"
    assert out.getvalue().strip(), f"{script} --help printed nothing"
