"""Hardware validation: run many random cases on the GPU and compare with the NumPy model.

    python -m bwlab.validate tma --cases 1000 --seed 0 --out docs/results/tma_validate.txt
    python -m bwlab.validate multicast | wgmma | store | tmem | foundation ...

Each stage's module in `bwlab/checks/` provides `validate_main(argv) -> int`; this file only dispatches,
so `python -m bwlab.validate STAGE --help` shows the stage's own options. Exit codes (every command):
0 pass, 1 a case differs, 2 usage, 3 no suitable GPU here.
"""
from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "foundation": ("bwlab.checks.foundation", "validate_main"),
    "tma": ("bwlab.checks.tma", "validate_main"),
    "multicast": ("bwlab.checks.multicast", "validate_main"),
    "wgmma": ("bwlab.checks.umma", "validate_wgmma_main"),
    "tmem": ("bwlab.checks.tmem", "validate_main"),
    "store": ("bwlab.checks.store", "validate_main"),
}


def dispatch(commands: dict, argv, doc: str) -> int:
    """Run `commands[argv[0]]` = (module, function, *leading args) with the rest of argv."""
    from .checks.common import EXIT_NO_GPU, EXIT_PASS, EXIT_USAGE, NoSuitableGpu
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in ("-h", "--help"):
        print(doc)
        print("commands:", ", ".join(commands))
        return EXIT_PASS
    if not argv or argv[0] not in commands:
        print(doc)
        print("commands:", ", ".join(commands))
        return EXIT_USAGE
    mod, fn, *lead = commands[argv[0]]
    try:
        return int(getattr(importlib.import_module(mod), fn)(list(lead) + argv[1:]) or 0)
    except NoSuitableGpu:
        return EXIT_NO_GPU
    except SystemExit as e:  # argparse: --help exits 0, a usage error 2
        return int(e.code or 0)


def main(argv=None) -> int:
    return dispatch(COMMANDS, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
