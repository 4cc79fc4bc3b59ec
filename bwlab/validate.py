"""Hardware validation: run many random cases on the GPU and compare with the NumPy model.

    python -m bwlab.validate tma --cases 1000 --seed 0 --out docs/results/tma_validate.txt
    python -m bwlab.validate multicast | wgmma | store | tmem | foundation ...

Each stage's module in `bwlab/checks/` provides `validate_main(argv) -> int`; this file only dispatches
(one argparse subcommand per stage, whose arguments go to the stage's own parser untouched), so
`python -m bwlab.validate STAGE --help` shows the stage's own options. Exit codes (every command):
0 pass, 1 a case differs, 2 usage, 3 no suitable GPU here.
"""
from __future__ import annotations

import argparse
import importlib
import sys
from typing import NamedTuple

__all__ = ["Subcommand", "COMMANDS", "command_parser", "dispatch", "main"]


class Subcommand(NamedTuple):
    """One subcommand: `module.function(list(lead) + the arguments after the subcommand's name)`."""

    module: str
    function: str
    help: str
    lead: tuple = ()


COMMANDS = {
    "foundation": Subcommand("bwlab.checks.foundation", "validate_main",
                             "bulk-copy round trips and the bounded-wait timeout"),
    "tma": Subcommand("bwlab.checks.tma", "validate_main", "random TMA loads: GPU SMEM bytes vs the model"),
    "multicast": Subcommand("bwlab.checks.multicast", "validate_main",
                            "every CTA's SMEM after multicast loads, many cluster shapes"),
    "wgmma": Subcommand("bwlab.checks.umma", "validate_wgmma_main",
                        "wgmma on SMEM operands in every canonical layout vs the model"),
    "wgmma_accumulation": Subcommand("bwlab.checks.umma", "validate_accumulation_main",
                                      "how wgmma adds: random operands across exponents vs the block-FMA model"),
    "tmem": Subcommand("bwlab.checks.tmem", "validate_main", "every tcgen05.ld/st form (sm_100 only)"),
    "store": Subcommand("bwlab.checks.store", "validate_main", "random TMA stores, reduce-adds and whole epilogues"),
    "blackwell": Subcommand("bwlab.checks.blackwell", "validate_main",
                            "first contact with a B200: every sm_100a check on the GPU, in the emulator and in "
                            "the model, one report to send back"),
    "emu": Subcommand("bwlab.checks.emu", "validate_main",
                      "every sm_90a kernel on this GPU and in the PTX emulator, compared byte for byte"),
    "mutants": Subcommand("bwlab.checks.mutants", "validate_main",
                          "the emulator's strictness: each kernel with one synchronisation point broken"),
    "emu-corpus": Subcommand("bwlab.checks.emu_corpus", "validate_main",
                             "record the corpus of ordinary CUDA kernels on this GPU; --compare: the emulator vs them"),
    "approx": Subcommand("bwlab.checks.approx", "main",
                         "the .approx instructions on every input vs the emulator's rule (--record DIR on a GPU; "
                         "without it: the rule vs the recordings)"),
}


def command_parser(commands: dict, prog: str, doc: str) -> argparse.ArgumentParser:
    """A parser with one subcommand per entry of `commands`. A subcommand declares no options of its
    own (not even -h): everything after its name is left for the stage's parser."""
    ap = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name, cmd in commands.items():
        sub.add_parser(name, help=cmd.help, add_help=False)
    return ap


def dispatch(commands: dict, argv, doc: str, prog: str = "python -m bwlab.validate") -> int:
    """Run the subcommand `argv[0]` of `commands` with the rest of argv; its exit code."""
    from .checks.common import EXIT_NO_GPU, EXIT_USAGE, NoSuitableGpu
    ap = command_parser(commands, prog, doc)
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args, _ = ap.parse_known_args(argv)
        if args.command is not None and argv[0] != args.command:
            ap.error(f"{argv[0]!r} before the command: options go after it ({args.command} --help)")
    except SystemExit as e:  # --help exits 0, an unknown command 2
        return int(e.code or 0)
    if args.command is None:
        ap.print_help()
        return EXIT_USAGE
    cmd = commands[args.command]
    try:  # what follows the command's name, exactly as given
        return int(getattr(importlib.import_module(cmd.module), cmd.function)(list(cmd.lead) + argv[1:]) or 0)
    except NoSuitableGpu:
        return EXIT_NO_GPU
    except SystemExit as e:  # the stage's argparse: --help exits 0, a usage error 2
        return int(e.code or 0)


def main(argv=None) -> int:
    return dispatch(COMMANDS, argv, __doc__, "python -m bwlab.validate")


if __name__ == "__main__":
    raise SystemExit(main())
