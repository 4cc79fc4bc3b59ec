"""The approximate instructions measured on every input: cuda_src/approx_probe.cu against bwlab.hw.approx.

    python -m bwlab.checks.approx --record DIR [--out FILE]   # on an sm_90 GPU: sweep, tables, samples
    python -m bwlab.checks.approx                             # no GPU: the NumPy rule against the recordings

On the GPU: every f32 input of each `.approx` f32 instruction (2^32), every high word of the f64 forms (2^32),
and 2^32 hashed operand pairs of each division form, each compared with the emulator's rule computed on the
GPU in double precision (the probe's `wrap`), giving per instruction the share that is bit-identical and a
histogram of the distance in units in the last place; the 16-bit forms recorded for every input (the
emulator's tables); and a sample of inputs with the GPU's and the rule's results, which the CPU side compares
with `bwlab.hw.approx` (the same rule in NumPy) without a GPU.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from ..hw import approx as ap
from .common import gpu_line

# the probe's operation codes (enum Op in cuda_src/approx_probe.cu), in order, with the PTX each one runs
OPS = ("ex2.approx.ftz.f32", "ex2.approx.f32", "lg2.approx.ftz.f32", "lg2.approx.f32",
       "rcp.approx.ftz.f32", "rcp.approx.f32", "rsqrt.approx.ftz.f32", "rsqrt.approx.f32",
       "sqrt.approx.ftz.f32", "sqrt.approx.f32", "sin.approx.ftz.f32", "sin.approx.f32",
       "cos.approx.ftz.f32", "cos.approx.f32", "tanh.approx.f32", "rcp.approx.ftz.f64", "rsqrt.approx.ftz.f64",
       "div.approx.ftz.f32", "div.approx.f32", "div.full.ftz.f32", "div.full.f32")
F64 = ("rcp.approx.ftz.f64", "rsqrt.approx.ftz.f64")
DIV = ("div.approx.ftz.f32", "div.approx.f32", "div.full.ftz.f32", "div.full.f32")
BINS = {0: "equal", 31: ">=31 ulp", 32: "both NaN, other bits", 33: "one NaN", 34: "+0 vs -0",
        35: "GPU above", 36: "GPU below", 37: "f64 low word not 0"}
SAMPLE = 8192
HERE = Path(__file__).resolve().parents[2]
SAMPLES = HERE / "tests" / "data" / "approx" / "samples_h200.npz"


def sample_inputs(seed=33):
    """The sample's inputs: random codes, random exponents, a dense [-150, 150] range and the edges."""
    rng = np.random.default_rng(seed)
    edges = [0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 1, 0x80000001,
             0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7E800000, 0x7E800001,
             0x3F800000, 0xBF800000, 0x42FC0000, 0xC2FC0000, 0xC2FC0001, 0xC2FBFFFF, 0xC3150000,
             0x7FF80000, 0xFFF80000, 0x7FF00001, 0xFFF12345, 0x7FF00000, 0xFFF00000, 0x000FFFFF, 0x7FE077F9,
             0xC0490FDB, 0x40490FDB, 0xBFC90FDA]
    ints = np.arange(-64, 65, dtype=np.float32)
    halves = ints + np.float32(0.5)
    x = np.concatenate([
        np.array(edges, np.uint32), ints.view(np.uint32), halves.view(np.uint32),
        rng.integers(0, 2 ** 32, 4096, dtype=np.uint64).astype(np.uint32),
        (rng.integers(0, 255, 2048).astype(np.uint32) << 23) | rng.integers(0, 2 ** 23, 2048).astype(np.uint32)
        | (rng.integers(0, 2, 2048).astype(np.uint32) << 31),
        rng.uniform(-150, 150, 1024).astype(np.float32).view(np.uint32)])
    x = x[:SAMPLE]
    y = np.concatenate([rng.integers(0, 2 ** 32, SAMPLE // 2, dtype=np.uint64).astype(np.uint32),
                        (rng.integers(0, 255, SAMPLE // 2).astype(np.uint32) << 23)
                        | rng.integers(0, 2 ** 23, SAMPLE // 2).astype(np.uint32)])
    return np.pad(x, (0, SAMPLE - x.size)).astype(np.uint32), y.astype(np.uint32)


def rule(name, x, y=None):
    """bwlab.hw.approx's result for instruction `name` (f32 codes; f64 forms: the high word)."""
    op = name.split(".")[0]
    if name in DIV:
        return ap.div(x, y, full=op == "div" and ".full" in name, ftz=".ftz" in name)
    if name in F64:
        return (ap.f64(op, x.astype(np.uint64) << np.uint64(32)) >> np.uint64(32)).astype(np.uint32)
    return ap.f32(op, x, ftz=".ftz" in name)


def _ordered(b):
    b = b.astype(np.int64)
    return np.where(b & 0x80000000, -(b & 0x7FFFFFFF), b)


def distance(g, r):
    """|ulp distance| of two arrays of f32 codes (or f64 high words), NaN pairs 0 apart."""
    d = np.abs(_ordered(g) - _ordered(r))
    return np.where(g == r, 0, d)


def within(name, gpu, mine, b) -> bool:
    """The GPU's results within the measured bound of the rule's: `ulp`, or for lg2/sin/cos 2 ulp or the
    absolute difference measured beyond 2 ulp (f32 codes; NaN pairs equal)."""
    d = distance(gpu, mine)
    if name.split(".")[0] in ("lg2", "sin", "cos") and b["ulp"] > 2:
        with np.errstate(all="ignore"):
            diff = np.abs(gpu.view(np.float32).astype(np.float64) - mine.view(np.float32).astype(np.float64))
        return bool(np.all((d <= 2) | (diff <= b["abs_beyond_2ulp"])))
    return bool(d.max() <= b["ulp"])


def measure(record: Path, out=sys.stdout) -> int:
    import cupy as cp
    from ..compile import load_module
    mod = load_module("approx_probe.cu")
    dev = cp.cuda.runtime.getDeviceProperties(0)
    print(gpu_line(), file=out)
    print("each instruction against the emulator's rule (bwlab.hw.approx: ptxas's SASS wrapper, exact, around "
          "each MUFU operation taken as the exact function rounded once to nearest); distance in ulp of the result",
          file=out)
    sweep, samp = mod.get_function("sweep"), mod.get_function("sample")
    bounds = {}
    x, y = sample_inputs()
    xs, ys = cp.asarray(x), cp.asarray(y)
    recs = {"x": x, "y": y}
    for op, name in enumerate(OPS):
        bins = cp.zeros(40, cp.uint64)
        worst, worst_abs, worst_rel = (cp.zeros(1, cp.uint64) for _ in range(3))
        sweep((dev["multiProcessorCount"] * 8,), (256,), (np.int32(op), bins, worst, worst_abs, worst_rel))
        cp.cuda.runtime.deviceSynchronize()
        b = cp.asnumpy(bins).astype(np.int64)
        w, wa, wr = (int(cp.asnumpy(v)[0]) for v in (worst, worst_abs, worst_rel))
        f32 = lambda v: float(np.uint32(v >> 32).view(np.float32))
        total = 2 ** 32
        far = [f"{d}:{b[d]}" for d in range(1, 31) if b[d]]
        maxd = w >> 32
        swept = ("2^32 high words" if name in F64 else "2^32 hashed operand pairs" if name in DIV
                 else "all 2^32 inputs")
        extra = ", ".join(f"{BINS[k]} {b[k]}" for k in (31, 32, 33, 34, 37) if b[k])
        print(f"  {name:22s} {swept}: {100 * b[0] / total:8.4f} % bit-identical; |d| {' '.join(far) or '-'}; "
              f"max {maxd} ulp at x = 0x{w & 0xFFFFFFFF:08x}" + (f"; {extra}" if extra else "")
              + (f"; beyond 2 ulp at most {f32(wa):.3g} absolute (x = 0x{wa & 0xFFFFFFFF:08x})" if wa else "")
              + (f"; relative at most {f32(wr):.3g} (x = 0x{wr & 0xFFFFFFFF:08x})" if wr else ""), file=out)
        bounds[name] = {"ulp": int(maxd), "identical": float(b[0] / total), "swept": swept,
                        "abs_beyond_2ulp": f32(wa), "rel": f32(wr), "within_2ulp": int(b[0] + b[1] + b[2] + b[34]),
                        "nan_mismatch": int(b[33]), "nan_bits": int(b[32]), "zero_sign": int(b[34]),
                        "far": int(b[31])}
        g, r = cp.zeros(SAMPLE, cp.uint32), cp.zeros(SAMPLE, cp.uint32)
        samp(((SAMPLE + 255) // 256,), (256,), (np.int32(op), xs, ys, g, r, np.int32(SAMPLE)))
        cp.cuda.runtime.deviceSynchronize()
        recs[f"gpu:{name}"], recs[f"ref:{name}"] = cp.asnumpy(g), cp.asnumpy(r)
    tabs = {k: cp.zeros(65536, cp.uint16) for k in ("ex2_f16", "ex2_bf16", "tanh_f16", "tanh_bf16")}
    mod.get_function("table16")((256,), (256,), tuple(tabs.values()))
    pair = {k: cp.zeros(65536, cp.uint32) for k in ("ex2_f16x2", "tanh_bf16x2")}
    mod.get_function("table16x2")((256,), (256,), tuple(pair.values()))
    cp.cuda.runtime.deviceSynchronize()
    tabs = {k: cp.asnumpy(v) for k, v in tabs.items()}
    i = np.arange(65536, dtype=np.uint32)
    hi = i ^ 0x5A5A
    for k, scalar in (("ex2_f16x2", "ex2_f16"), ("tanh_bf16x2", "tanh_bf16")):
        v = cp.asnumpy(pair[k])
        same = int(((v & 0xFFFF) == tabs[scalar][i]).sum() + ((v >> 16) == tabs[scalar][hi]).sum())
        print(f"  {k.replace('_', '.approx.'):22s} each half equals the scalar form's table: {same} of 131072", file=out)
    record.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(record / "approx16_h200.npz", **tabs)
    np.savez_compressed(record / "samples_h200.npz", **recs)
    (record / "approx_bounds_h200.json").write_text(json.dumps(bounds, indent=1) + "\n")
    return 0


def check(out=sys.stdout) -> int:
    """No GPU: the NumPy rule against the recorded sample (the GPU-side rule bit for bit, the GPU within BOUNDS)."""
    if not SAMPLES.is_file():
        print(f"no recording at {SAMPLES}", file=out)
        return 1
    z = np.load(SAMPLES)
    x, y = z["x"], z["y"]
    bad = 0
    for name in OPS:
        if f"gpu:{name}" not in z:
            continue
        mine = rule(name, x, y)
        same_rule = int((mine == z[f"ref:{name}"]).sum())
        d = distance(z[f"gpu:{name}"], mine)
        b = ap.bounds().get(name)
        ok = same_rule == x.size and b is not None and within(name, z[f"gpu:{name}"], mine, b)
        bad += not ok
        print(f"  {name:22s} NumPy rule = GPU-side rule on {same_rule} of {x.size}; GPU at most "
              f"{int(d.max())} ulp away (bound {b['ulp'] if b else '-'}) {'ok' if ok else 'DIFFERS'}", file=out)
    return 1 if bad else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--record", type=Path, help="on a GPU: write the tables, the sample and the bounds here")
    p.add_argument("--out", help="also write the printout to this file")
    args = p.parse_args(argv)
    import io
    buf = io.StringIO()
    rc = measure(args.record, buf) if args.record else check(buf)
    buf.write("command: python -m bwlab.checks.approx" + (f" --record {args.record}" if args.record else "")
              + (f" --out {args.out}" if args.out else "") + "\n")
    sys.stdout.write(buf.getvalue())
    if args.out:
        Path(args.out).write_text(buf.getvalue())
    return rc


if __name__ == "__main__":
    sys.exit(main())
