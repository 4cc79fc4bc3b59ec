"""Records the from-scratch GEMM on a GPU (bwlab.checks.record_scratch): every step on the notebook's
problem (C kept, compared with the model) and timed at a large shape beside cupy.matmul (cuBLAS), into
OUTDIR/scratch_steps.npz; prints the report committed as docs/results/scratch_h200.txt.

    PYTHONPATH=. python docs/results/scratch_record.py OUTDIR [M N K]
"""
import datetime
import sys


def main(argv):
    import cupy as cp
    from bwlab.checks.record_scratch import BENCH_SHAPE, record
    from bwlab.device import gpu_info
    info = gpu_info()
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}, {info.name}, driver API "
          f"{cp.cuda.runtime.driverGetVersion()}, cupy {cp.__version__}, {info.sm_count} SMs, max SM clock "
          f"{props['clockRate'] / 1e6:.2f} GHz\n")
    shape = tuple(int(x) for x in argv[1:4]) if len(argv) >= 4 else BENCH_SHAPE
    cmd = "PYTHONPATH=. python docs/results/scratch_record.py " + " ".join(argv)
    meta = {"device": info.name, "date": datetime.date.today().isoformat(), "command": cmd}
    import numpy as np
    from bwlab.results import load_recording
    path, = record(argv[0], meta, shape)
    ok = bool(np.all(load_recording("scratch_steps", path.parent)["check_ok"]))
    print(f"\n{cmd}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
