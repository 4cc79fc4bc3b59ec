"""The packed FP8 conversions measured: cuda_src/cvt_fp8_probe.cu against bwlab.hw.floats, bit for bit.

    python -m bwlab.checks.cvt_fp8 [--out FILE]     # on an sm_90 (or later) GPU
    python -m bwlab.checks.cvt_fp8 --model-only     # no GPU: the digests of what bwlab computes

Every form of `cvt` to and from `.e4m3x2` / `.e5m2x2` that Hopper executes, with and without `.relu`:
`cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f32 d, a, b` over a wide f32 sample (every exponent, the
rounding midpoints of both formats and one f32 ulp either side, the saturation boundaries, zeros,
infinities, NaNs with several payloads, f32 subnormals), `cvt.rn.satfinite{.relu}.{e4m3x2,e5m2x2}.f16x2
d, a` over every f16 code in either half, and `cvt.rn{.relu}.f16x2.{e4m3x2,e5m2x2} d, a` over all 65,536
16-bit codes. The expected bits come from the functions the emulator's `cvt` calls
(`bwlab.emu.isa.conversion`: `floats.cvt_x2`, `floats.cvt_from_x2`). The inputs are a pure function of
the seed, so `tests/test_cvt_fp8_recorded.py` recomputes them and compares bwlab's digest with the
GPU's recorded one (docs/results/cvt_fp8_h200.txt).

The sm_100a-only forms (.e2m1x2, .e2m3x2, .e3m2x2, .ue8m0x2) do not run on Hopper: they are checked
against ml_dtypes on the CPU (tests/test_cvt_fp8_recorded.py) and are unmeasured.
"""
from __future__ import annotations

import argparse
import hashlib
import sys

import numpy as np

from ..hw import floats as hf
from .common import gpu_line

SEED = 8
TYPES = ("e4m3", "e5m2")
KINDS = ("f32", "f16x2", "to_f16x2")


def _grid(t):
    """Every finite non-negative value of fp8 type `t` as float64, ascending."""
    v = hf.to_f64(np.arange(0x80, dtype=np.uint8), t)
    v = v[np.isfinite(v)]
    return np.unique(v)


def f32_sample(seed=SEED):
    """(a, b) uint32 f32 bit patterns: the wide sample each f32 form converts (b is a shuffle of a)."""
    rng = np.random.default_rng(seed)
    parts = [rng.integers(0, 1 << 32, 1 << 18, dtype=np.uint64).astype(np.uint32)]      # every bit pattern
    e = rng.integers(-30, 20, 1 << 19)                                                     # the fp8 range and past it
    m = rng.random(1 << 19) + 1.0
    s = rng.choice([-1.0, 1.0], 1 << 19)
    parts.append((s * np.ldexp(m, e)).astype(np.float32).view(np.uint32))
    for t in TYPES:                                                                        # midpoints +- 1 ulp
        g = _grid(t)
        g = np.concatenate([g, [g[-1] * 2 - g[-2]]])                                       # one step past max
        mid = ((g[:-1] + g[1:]) / 2).astype(np.float32)
        for x in (mid, g.astype(np.float32)):
            for d in (-1, 0, 1):
                bits = (x.view(np.uint32).astype(np.int64) + d).astype(np.uint32)
                parts += [bits, bits | np.uint32(0x80000000)]
    special = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF,
                        0xFFFFFFFF, 1, 0x807FFFFF, 0x00400000, 0x7F7FFFFF, 0xFF7FFFFF], np.uint32)
    parts.append(np.tile(special, 64))
    a = np.concatenate(parts).astype(np.uint32)
    b = a[rng.permutation(a.size)]
    return a, b


def f16x2_sample(seed=SEED):
    """uint32 words holding two f16 codes: every code appears in the upper and in the lower half."""
    rng = np.random.default_rng(seed + 1)
    c = np.arange(1 << 16, dtype=np.uint32)
    w1 = (c << np.uint32(16)) | c[rng.permutation(c.size)]
    w2 = (c[rng.permutation(c.size)] << np.uint32(16)) | c
    return np.concatenate([w1, w2]).astype(np.uint32)


def inputs(kind, seed=SEED):
    if kind == "f32":
        return f32_sample(seed)
    if kind == "f16x2":
        return (f16x2_sample(seed),)
    return (np.arange(1 << 16, dtype=np.uint16),)


def model(kind, t, relu, ins):
    """What bwlab (the emulator's cvt, bwlab.emu.isa.conversion) gives for one form on `ins`."""
    if kind == "f32":
        a, b = ins
        return hf.cvt_x2(a, b, "f32", t, "rn", relu=relu, satfinite=True).astype(np.uint16)
    if kind == "f16x2":
        (v,) = ins
        hi = hf.cvt((v >> np.uint32(16)).astype(np.uint16), "f16", "f32")
        lo = hf.cvt((v & np.uint32(0xFFFF)).astype(np.uint16), "f16", "f32")
        return hf.cvt_x2(hi, lo, "f32", t, "rn", relu=relu, satfinite=True).astype(np.uint16)
    (v,) = ins
    return hf.cvt_from_x2(v, t, "f16", relu=relu).astype(np.uint32)


def kernel_name(kind, t, relu):
    return f"cvt_{kind}_{t}" + ("_relu" if relu else "")


def ptx_form(kind, t, relu):
    r = ".relu" if relu else ""
    if kind == "f32":
        return f"cvt.rn.satfinite{r}.{t}x2.f32 d, a, b"
    if kind == "f16x2":
        return f"cvt.rn.satfinite{r}.{t}x2.f16x2 d, a"
    return f"cvt.rn{r}.f16x2.{t}x2 d, a"


def forms():
    for kind in KINDS:
        for t in TYPES:
            for relu in (False, True):
                yield kind, t, relu


def digest(x: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()[:16]


def run_gpu(kind, t, relu, ins, mod):
    import cupy as cp
    fn = mod.get_function(kernel_name(kind, t, relu))
    n = ins[0].size
    out = cp.zeros(n, cp.uint32 if kind == "to_f16x2" else cp.uint16)
    args = tuple(cp.asarray(x) for x in ins) + (out, np.uint32(n))
    fn(((n + 255) // 256,), (256,), args)
    cp.cuda.runtime.deviceSynchronize()
    return cp.asnumpy(out)


def measure(out=sys.stdout) -> int:
    import cupy as cp
    from ..compile import load_module
    mod = load_module("cvt_fp8_probe.cu")
    print(gpu_line(), file=out)
    print(f"cuda_src/cvt_fp8_probe.cu (one thread per element), inputs from seed {SEED}; each row: the PTX form, "
          "elements, how many equal bwlab.hw.floats bit for bit, sha256[:16] of the GPU's output bytes", file=out)
    total = same = 0
    cache = {}
    for kind, t, relu in forms():
        ins = cache.setdefault(kind, inputs(kind))
        gpu = run_gpu(kind, t, relu, ins, mod)
        ref = model(kind, t, relu, ins)
        eq = int((gpu == ref).sum())
        total, same = total + gpu.size, same + eq
        print(f"  {ptx_form(kind, t, relu):42s} {gpu.size:8d} elements; equal {eq:8d}; gpu {digest(gpu)}", file=out)
        if eq != gpu.size:
            bad = np.nonzero(gpu != ref)[0]
            for i in bad[:4]:
                src = " ".join(f"0x{int(x[i]):0{2 * x.itemsize}x}" for x in ins)
                print(f"    differs at {int(i)}: input {src}: GPU 0x{int(gpu[i]):x}, bwlab 0x{int(ref[i]):x}", file=out)
            print(f"    {bad.size} differences", file=out)
    print(f"total: {same} of {total} conversions equal bwlab bit for bit", file=out)
    return 0 if same == total else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", help="also write the printout to this file")
    p.add_argument("--model-only", action="store_true", help="print bwlab's digests, no GPU")
    args = p.parse_args(argv)
    if args.model_only:
        for kind, t, relu in forms():
            ins = inputs(kind)
            print(f"{ptx_form(kind, t, relu):42s} {digest(model(kind, t, relu, ins))}")
        return 0
    import io
    import time
    t0 = time.time()
    buf = io.StringIO()
    rc = measure(buf)
    buf.write(f"({time.time() - t0:.0f} s wall)\n")
    buf.write("command: PYTHONPATH=. python3 -m bwlab.checks.cvt_fp8" + (f" --out {args.out}" if args.out else "")
              + "\n")
    sys.stdout.write(buf.getvalue())
    if args.out:
        with open(args.out, "w") as f:
            f.write(buf.getvalue())
    return rc


if __name__ == "__main__":
    sys.exit(main())
