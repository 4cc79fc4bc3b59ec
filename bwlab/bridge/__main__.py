"""python -m bwlab.bridge record [NAME ...] [--tool T] | compare NAME [--tool T]

record: compile the twin kernels (needs the tools: pip install 'bwlab[bridge]') and write
bwlab/bridge/recorded/; compare: print bwlab's kernel and a twin side by side."""
from __future__ import annotations

import argparse
import sys

from . import KERNELS, TOOLS, compare, record


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bwlab.bridge", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="compile the twins and write bwlab/bridge/recorded/")
    r.add_argument("names", nargs="*", help=f"kernels (default: all of {sorted(KERNELS)})")
    r.add_argument("--tool", choices=sorted(TOOLS), default=None, help="one tool (default: every twin)")
    r.add_argument("--out", default=None, help="another folder for the recordings")
    c = sub.add_parser("compare", help="print bwlab's kernel and a twin side by side")
    c.add_argument("name", choices=sorted(KERNELS))
    c.add_argument("--tool", choices=sorted(TOOLS), default="gluon")
    args = ap.parse_args(argv)
    if args.cmd == "record":
        for name in args.names or sorted(KERNELS):
            if name not in KERNELS:
                ap.error(f"no bridge kernel {name!r}; there are {sorted(KERNELS)}")
            for tool in [args.tool] if args.tool else sorted(KERNELS[name].twins):
                if tool in KERNELS[name].twins:
                    print("wrote", record(name, tool, args.out))
        return 0
    print(compare(args.name, args.tool))
    return 0


if __name__ == "__main__":
    sys.exit(main())
