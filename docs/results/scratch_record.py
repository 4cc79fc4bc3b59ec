"""Records the from-scratch GEMM on a GPU: every step on the emulator's problem (C kept, compared with
the model) and timed at a large shape beside cupy.matmul (cuBLAS), into recordings/scratch_steps.npz.

    PYTHONPATH=. python docs/results/scratch_record.py OUTDIR [M N K]
"""
import datetime
import sys

import numpy as np


def main(argv):
    import cupy as cp
    from bwlab.device import gpu_info
    from bwlab.results import save_recording
    from bwlab.scratch import EMU_SHAPE, STEPS, ScratchGemm
    from bwlab.scratch import runner
    out = argv[0]
    M, N, K = (int(x) for x in argv[1:4]) if len(argv) >= 4 else (4096, 4096, 4096)
    info = gpu_info()
    dev = cp.cuda.Device()
    driver = cp.cuda.runtime.driverGetVersion()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    today = datetime.date.today().isoformat()
    print(f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}, {info.name}, driver API "
          f"{driver}, cupy {cp.__version__}, {info.sm_count} SMs, max SM clock {props['clockRate'] / 1e6:.2f} GHz")
    arrays, ok = {}, []
    print(f"\neach step on {EMU_SHAPE[0]} x {EMU_SHAPE[1]} x {EMU_SHAPE[2]} (seed 0), compared with the model:")
    for s in STEPS:
        case = ScratchGemm(s, *EMU_SHAPE)
        c = case.run()
        arrays[f"c_{s.name}"] = c
        r = case.check(c, source=info.name)
        ok.append(r.ok)
        print(" ", r)
    res = runner.bench(M, N, K, warmup=2, repeat=5)
    flops = 2 * M * N * K
    names = [s.name for s in STEPS] + ["cublas"]
    ms = np.array([res["ms"][n] for n in names])
    print(f"\n{M} x {N} x {K}, f16 in, f32 accumulate (cuBLAS: cupy.matmul, f16 out); median of 5 launches "
          "after 2 warm-up, CUDA events:")
    for n, t in zip(names, ms):
        err = res["err"].get(n)
        e = f"  max |C - C_f32| / (|A||B|) = {err:.2e}" if err is not None else ""
        print(f"  {n:<20s} {t:10.3f} ms {flops / t / 1e9:9.2f} TFLOP/s  {t / ms[-1]:8.1f} x cuBLAS's time{e}")
    arrays.update(steps=np.array(names), ms=ms, shape=np.array([M, N, K]),
                  err=np.array([res["err"][n] for n in names[:-1]]), check_ok=np.array(ok))
    cmd = "PYTHONPATH=. python docs/results/scratch_record.py " + " ".join(argv)
    save_recording(out, "scratch_steps", arrays, device=info.name, date=today, command=cmd,
                   params={"emu_shape": list(EMU_SHAPE), "bench_shape": [M, N, K], "warmup": 2, "repeat": 5})
    print(f"\n{cmd}")
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
