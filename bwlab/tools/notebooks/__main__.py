"""python -m bwlab.tools.notebooks: the command line (bwlab.tools.notebooks.command)."""
from .command import main

if __name__ == "__main__":
    raise SystemExit(main())
