"""python -m bwlab.tools.classroom: the command line (bwlab.tools.classroom.command)."""
from .command import main

if __name__ == "__main__":
    raise SystemExit(main())
