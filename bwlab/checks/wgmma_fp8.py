"""Hopper's FP8 accumulator measured: cuda_src/wgmma_fp8_probe.cu against bwlab.umma.numerics, bit for bit.

    python -m bwlab.checks.wgmma_fp8 [--out FILE]      # on an sm_90 GPU
    python -m bwlab.checks.wgmma_fp8 --layout-only     # no GPU: the kernel's SMEM layout read back through
                                                       # bwlab's descriptor model (the one the H100 validated)

Each set launches independent 64 x 64 tiles of `wgmma.mma_async.m64n64k32.f32.AT.BT` (AT, BT in e4m3, e5m2),
K = 32 per instruction, chained over 1..4 instructions, K-major operands without swizzle (LBO 128 B, SBO 256 B).
Every D element is compared with three rules: bwlab's Hopper FP8 rule (`mma_numerics`: F = 13, the sum cut to
e8m13), Blackwell's kind::f8f6f4 rule (F = 25, RZ to f32) and the exact sum rounded once to nearest.
Sets: random finite codes, cancelling halves, small values (subnormals and tiny codes with a quarter of full-range
ones in A, zero C), large C (2^±30), chained K (64 and 128).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from ..hw.dtypes import to_float
from ..umma.descriptors import decode_smem_desc, make_smem_desc, read_operand
from ..umma.model import wgmma_d_fragment
from ..umma.numerics import fused_mma, mma_numerics, parse_instr
from .common import gpu_line

PAIRS = (("e4m3", "e4m3"), ("e5m2", "e5m2"), ("e4m3", "e5m2"), ("e5m2", "e4m3"))
STEP = 2048                       # one K step of one operand: 64 rows x 32 bytes
TILES = 8                         # tiles per set and pair (8 x 4096 accumulators)
SETS = ("random", "cancelling", "small", "large_c", "chained_k64", "chained_k128")


def _codes(t, shape, rng, small=False):
    """Random finite fp8 codes (no NaN, no inf); `small`: exponent field <= 3 (subnormals and tiny normals)."""
    if small:
        mag = rng.integers(0, 0x20 if t == "e4m3" else 0x10, shape)
    else:
        mag = rng.integers(0, 0x7F if t == "e4m3" else 0x7C, shape)
    return (mag | (rng.integers(0, 2, shape) << 7)).astype(np.uint8)


def make_set(name, at, bt, rng):
    """(k_steps, A codes (T, 64, K), B codes (T, 64, K), C (T, 64, 64) float32) of one set."""
    k_steps = {"chained_k64": 2, "chained_k128": 4}.get(name, 1)
    K = 32 * k_steps
    a, b = _codes(at, (TILES, 64, K), rng, name == "small"), _codes(bt, (TILES, 64, K), rng, name == "small")
    if name == "small":               # mostly subnormal and tiny codes, a quarter of full range among them
        wide = rng.random(a.shape) < 0.25
        a[wide] = _codes(at, (int(wide.sum()),), rng)
    c = (rng.standard_normal((TILES, 64, 64)) * 4).astype(np.float32)
    if name == "cancelling":          # the second half of K undoes the first, but for a few perturbed terms
        h = K // 2
        a[..., h:] = a[..., :h] ^ np.uint8(0x80)
        b[..., h:] = b[..., :h]
        flip = rng.random(a.shape) < 0.05
        a[flip] = _codes(at, (int(flip.sum()),), rng)
        c[:] = 0
    elif name == "small":
        c[:] = 0
    elif name == "large_c":
        c = (np.ldexp(1 + rng.random((TILES, 64, 64)), rng.integers(-30, 31, (TILES, 64, 64)))
             * rng.choice([-1.0, 1.0], (TILES, 64, 64))).astype(np.float32)
    return k_steps, a, b, c


def smem_image(a_tile: np.ndarray, k_steps: int) -> np.ndarray:
    """What the kernel's copy loop writes for one operand (64 x K bytes): the mirror of fp8_probe_offset."""
    img = np.zeros(k_steps * STEP, np.uint8)
    for r in range(64):
        for s in range(k_steps):
            for h in range(2):
                off = s * STEP + (r // 8) * 256 + h * 128 + (r % 8) * 16
                img[off:off + 16] = a_tile[r, 32 * s + 16 * h: 32 * s + 16 * h + 16]
    return img


def require_probe_layout(rng) -> None:
    """The kernel's layout and descriptor (LBO 128, SBO 256, no swizzle) read back through bwlab's SM90
    descriptor model give the operand's rows and K: the probe feeds wgmma what the model says it reads."""
    k_steps, a, _, _ = make_set("chained_k128", "e4m3", "e4m3", rng)
    img = smem_image(a[0], k_steps)
    for s in range(k_steps):
        desc = decode_smem_desc(make_smem_desc(s * STEP, 128, 256, "none", arch="sm90"), "sm90")
        got = read_operand(img, desc, "K", "e4m3", 64, 32)
        if not (got == a[0][:, 32 * s:32 * s + 32]).all():
            raise RuntimeError(f"K step {s}: the probe's SMEM layout and its descriptor (LBO 128, SBO 256) disagree")


def rules(at, bt, k_steps, a, b, c):
    """D (T, 64, 64) float32 by each rule: hopper (bwlab), f8f6f4 (F = 25 RZ), exact rounded once (RN)."""
    hop, bw, ex = [], [], []
    instr = f"m64n64k32.f32.{at}.{bt}"
    bw_ins = parse_instr(f"m128n64k32.kind::f8f6f4.f32.{at}.{bt}")
    for t in range(a.shape[0]):
        hop.append(mma_numerics(instr, a[t], b[t], c[t]))
        av, bv = to_float(a[t], at), to_float(b[t], bt)
        bw.append(fused_mma(bw_ins, av, bv, c[t]))
        ex.append((av @ bv.T + c[t].astype(np.float64)).astype(np.float32))
    return np.stack(hop), np.stack(bw), np.stack(ex)


def measure(out=sys.stdout, seed=90) -> int:
    import cupy as cp
    from ..compile import load_module
    rng = np.random.default_rng(seed)
    mod = load_module("wgmma_fp8_probe.cu")
    thread, reg = wgmma_d_fragment(64)
    print(gpu_line(), file=out)
    print("wgmma.mma_async.m64n64k32.f32.AT.BT, K-major, no swizzle (LBO 128 B, SBO 256 B); D compared bit for "
          "bit with: bwlab (F = 13, e8m13 RZ) | f8f6f4 rule (F = 25, RZ f32) | exact sum rounded once (RN)", file=out)
    total = same = 0
    for at, bt in PAIRS:
        kern = mod.get_function(f"wgmma_fp8_probe_{at}_{bt}")
        for name in SETS:
            k_steps, a, b, c = make_set(name, at, bt, rng)
            cfrag = np.zeros((TILES, 128, 32), np.float32)
            cfrag[:, thread, reg] = c
            d_dev = cp.zeros((TILES, 128, 32), cp.float32)
            kern((TILES,), (128,), (cp.asarray(a), cp.asarray(b), cp.asarray(cfrag), d_dev, np.uint32(k_steps)))
            cp.cuda.runtime.deviceSynchronize()
            gpu = cp.asnumpy(d_dev)[:, thread, reg]
            hop, bw, ex = rules(at, bt, k_steps, a, b, c)
            g = gpu.view(np.uint32)
            n = g.size
            eq = [(g == x.view(np.uint32)).sum() for x in (hop, bw, ex)]
            total, same = total + n, same + eq[0]
            print(f"  {at}.{bt} {name:13s} K = {32 * k_steps:3d}: {n:6d} accumulators; bwlab {eq[0]:6d}, "
                  f"f8f6f4 rule {eq[1]:6d}, exact+RN {eq[2]:6d}", file=out)
            if eq[0] != n:
                i = np.argwhere(g != hop.view(np.uint32))[0]
                print(f"    first difference at tile/m/n {tuple(int(x) for x in i)}: GPU 0x{int(g[tuple(i)]):08x}, "
                      f"bwlab 0x{int(hop.view(np.uint32)[tuple(i)]):08x}", file=out)
    print(f"total: {same} of {total} accumulators equal bwlab.umma.numerics bit for bit", file=out)
    return 0 if same == total else 1


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", help="also write the printout to this file")
    p.add_argument("--layout-only", action="store_true", help="check the SMEM layout on the CPU only")
    args = p.parse_args(argv)
    require_probe_layout(np.random.default_rng(0))
    print("layout: the probe's SMEM image read through bwlab's SM90 descriptor model = A (4 K steps)")
    if args.layout_only:
        return 0
    import io
    buf = io.StringIO()
    rc = measure(buf)
    buf.write("command: python -m bwlab.checks.wgmma_fp8" + (f" --out {args.out}" if args.out else "") + "\n")
    sys.stdout.write(buf.getvalue())
    if args.out:
        with open(args.out, "w") as f:
            f.write(buf.getvalue())
    return rc


if __name__ == "__main__":
    sys.exit(main())
