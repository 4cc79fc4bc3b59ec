"""Hardware validation: run many random cases on the GPU and compare with the NumPy model.

    python -m bwlab.validate tma --cases 1000 --seed 0 --out docs/results/tma_validate.txt
    python -m bwlab.validate multicast | wgmma | store | tmem | foundation ...

Each stage module provides `validate_main(argv) -> int` (0 when every case is bit-exact); this file
only dispatches, so `python -m bwlab.validate STAGE --help` shows the stage's own options.
"""
from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "foundation": ("bwlab.selfcheck", "validate_main"),
    "tma": ("bwlab.tma", "validate_main"),
    "multicast": ("bwlab.multicast", "validate_main"),
    "wgmma": ("bwlab.umma", "validate_wgmma_main"),
    "tmem": ("bwlab.tmem", "validate_main"),
    "store": ("bwlab.epilogue", "validate_main"),
}


def dispatch(commands: dict, argv, doc: str) -> int:
    """Run `commands[argv[0]]` = (module, function, *leading args) with the rest of argv."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in commands:
        print(doc)
        print("commands:", ", ".join(commands))
        return 2
    mod, fn, *lead = commands[argv[0]]
    return int(getattr(importlib.import_module(mod), fn)(list(lead) + argv[1:]) or 0)


def main(argv=None) -> int:
    return dispatch(COMMANDS, argv, __doc__)


if __name__ == "__main__":
    raise SystemExit(main())
