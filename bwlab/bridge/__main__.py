"""python -m bwlab.bridge record [NAME ...] | compare NAME — make the Gluon recordings; show a comparison."""
from __future__ import annotations

import argparse
import sys

from . import KERNELS, compare, record


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bwlab.bridge", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("record", help="compile the Gluon kernels (needs triton) and write bwlab/bridge/recorded/")
    r.add_argument("names", nargs="*", help=f"kernels (default: all of {sorted(KERNELS)})")
    r.add_argument("--out", default=None, help="another folder for the recordings")
    c = sub.add_parser("compare", help="print bwlab's kernel and the Gluon one side by side")
    c.add_argument("name", choices=sorted(KERNELS))
    args = ap.parse_args(argv)
    if args.cmd == "record":
        for name in args.names or sorted(KERNELS):
            if name not in KERNELS:
                ap.error(f"no bridge kernel {name!r}; there are {sorted(KERNELS)}")
            print("wrote", record(name, args.out))
        return 0
    print(compare(args.name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
