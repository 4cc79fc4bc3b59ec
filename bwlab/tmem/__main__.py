"""`python -m bwlab.tmem header [--check]` writes (or checks) cuda_src/ptx/tcgen05_ldst.cuh;
`python -m bwlab.tmem validate ...` is `python -m bwlab.validate tmem ...`. Both live in bwlab/checks/."""
from ..checks.tmem_header import main

if __name__ == "__main__":
    raise SystemExit(main())
