"""Ampere's asynchronous copy (cp.async), each CUDA API that emits it, run on a GPU or in bwlab.emu with the same
inputs (tests/cpasync/cpasync.cu). tests/test_emu_cpasync.py compares the emulator with the H200's recording.

    python tests/cpasync/run.py build DIR            # NVRTC (sm_90a): DIR/cpasync.ptx and DIR/cpasync.cubin
    python tests/cpasync/run.py gpu DIR OUT.npz      # CuPy on the GPU: the outputs, and the PTX they ran
    python tests/cpasync/run.py emu DIR OUT.npz      # the same in bwlab.emu (prove the script before a GPU call)
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _inputs():
    rng = np.random.default_rng(29)
    f = lambda n: (rng.integers(-1000, 1000, n) / 8).astype(np.float32)     # exact in f32: sums stay exact
    return {"f640": f(640), "f384": f(384), "i256": rng.integers(-10**6, 10**6, 256).astype(np.int32),
            "f600": f(600)}


def kernels():
    """name -> (grid, block, [("in", array) | ("out", dtype, n) | int])."""
    x = _inputs()
    return {
        "pipe_double": ((1,), (32,), [("in", x["f640"]), ("out", "f4", 640), 5]),
        "zfill_tail": ((1,), (32,), [("in", x["f640"][:101]), ("out", "f4", 128), 101]),
        "barrier_copy": ((1,), (64,), [("in", x["i256"]), ("out", "i4", 256)]),
        "cg_copy": ((2,), (64,), [("in", x["f600"]), ("out", "f4", 600), 300]),
        "noinc_copy": ((1,), (32,), [("in", x["i256"][:128]), ("out", "i4", 128)]),
        "three_groups": ((1,), (32,), [("in", x["f384"]), ("out", "f4", 96)]),
        "pipeline_copy": ((1,), (32,), [("in", x["f384"][:256]), ("out", "f4", 32)]),
    }


# broken kernels: each reads shared memory a cp.async writes before the reader observed the copy complete
BROKEN = {
    "read_early": ((1,), (32,), [("in", _inputs()["f640"][:128]), ("out", "f4", 32)]),
    "read_newest": ((1,), (32,), [("in", _inputs()["f640"][:256]), ("out", "f4", 32)]),
    "read_other": ((1,), (64,), [("in", _inputs()["f640"][:256]), ("out", "f4", 64)]),
}


def build(bdir: Path):
    sys.path.insert(0, str(HERE.parents[1]))
    from bwlab.compile import compile_cuda
    inc = Path(np.__file__).parents[1] / "nvidia/cuda_runtime/include"
    c = compile_cuda(HERE / "cpasync.cu", arch="sm_90a",
                     extra_options=(f"-I{inc}", "-I/usr/local/cuda/include/cccl", "-I/usr/local/cuda/include", "-lineinfo"))
    bdir.mkdir(parents=True, exist_ok=True)
    (bdir / "cpasync.ptx").write_text(c.ptx)
    (bdir / "cpasync.cubin").write_bytes(c.cubin)
    print(f"built: {len(c.ptx)} chars of PTX, {len(c.cubin)} bytes of cubin")


def module(backend: str, bdir: Path):
    if backend == "gpu":
        import cupy
        return cupy, cupy.RawModule(path=str(bdir / "cpasync.cubin"))
    from bwlab import emu
    return emu, emu.RawModule(ptx=(bdir / "cpasync.ptx").read_text(), name="cpasync.cu")


def run_one(xp, mod, name: str, spec, seed=None) -> list:
    grid, block, args = spec
    fn = mod.get_function(name)
    real, outs = [], []
    for a in args:
        if isinstance(a, tuple) and a[0] == "in":
            real.append(xp.asarray(a[1]))
        elif isinstance(a, tuple) and a[0] == "out":
            d = xp.asarray(np.full(a[2], -7, np.dtype(a[1])))
            real.append(d)
            outs.append(d)
        else:
            real.append(np.int32(a))
    if seed is None:
        fn(grid, block, tuple(real))
    else:
        fn(grid, block, tuple(real), seed=seed)
    return [o.get() for o in outs]


def run_all(backend: str, bdir: Path, dest: Path):
    xp, mod = module(backend, bdir)
    rec = {"ptx": np.frombuffer((bdir / "cpasync.ptx").read_bytes(), np.uint8)}
    for name, spec in kernels().items():
        for i, o in enumerate(run_one(xp, mod, name, spec)):
            rec[f"{name}/{i}"] = o
            print(f"{name}/{i}: {o.dtype} {o.shape} sum {o.astype(np.float64).sum():.3f} first {o[:4].tolist()}")
    np.savez_compressed(dest, **rec)
    print(f"wrote {dest} ({len(rec) - 1} outputs)")


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "build":
        build(Path(sys.argv[2]))
    elif cmd in ("gpu", "emu"):
        run_all(cmd, Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        raise SystemExit(__doc__)
