"""Reference vectors for bwlab.umma.numerics, computed by MMA-Sim (`pip install mmasim`, 2.1.1; needs torch).

Run in an environment that has mmasim and torch (bwlab itself is not needed here):

    python tests/data/mmasim/generate.py tests/data/mmasim/vectors.npz

For every instruction in INSTRS and every case of CASES it draws element codes (one code per element, in the
low bits, as bwlab.umma.numerics.mma_numerics takes them), C as raw bits, scale codes where the kind has them,
and stores MMA-Sim's D as raw bits. tests/test_mma_numerics.py compares bwlab's D with them bit for bit, and
(with mmasim installed) draws fresh cases with `cases()` / `mmasim_d()` for a live comparison.
"""
from __future__ import annotations

import sys

import numpy as np

F8F6F4 = ("e5m2", "e4m3", "e3m2", "e2m3", "e2m1")

INSTRS = (
    # Hopper wgmma
    ["m64n8k16.f32.f16.f16", "m64n8k16.f16.f16.f16", "m64n8k16.f32.bf16.bf16", "m64n8k8.f32.tf32.tf32"]
    + [f"m64n8k32.{d}.{a}.{b}" for d in ("f32", "f16") for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")]
    # Blackwell tcgen05
    + ["m128n8k16.kind::f16.f32.f16.f16", "m128n8k16.kind::f16.f16.f16.f16", "m64n8k16.kind::f16.f32.bf16.bf16",
       "m128n8k8.kind::tf32.f32.tf32.tf32"]
    + [f"m64n8k32.kind::f8f6f4.{d}.{a}.{b}" for d in ("f32", "f16") for a in F8F6F4 for b in F8F6F4]
    + [f"m128n8k32.kind::mxf8f6f4.block32.f32.{a}.{b}.ue8m0" for a in F8F6F4 for b in F8F6F4]
    + ["m128n8k64.kind::mxf4.block32.f32.e2m1.e2m1.ue8m0", "m128n8k64.kind::mxf4nvf4.block32.f32.e2m1.e2m1.ue8m0",
       "m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue8m0",
       "m128n8k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3"]
)
CASES = ("wide", "cancel", "tiny", "large_c", "edge", "scale_extremes")

# element type -> (storage, sign bit, special codes: zeros, subnormals, extremes, inf/NaN last)
_TYPES = {
    "f16": (np.uint16, 0x8000, [0x0000, 0x8000, 0x0001, 0x03FF, 0x8001, 0x0400, 0x7BFF, 0xFBFF, 0x3C00],
            [0x7C00, 0xFC00, 0x7E00]),
    "bf16": (np.uint16, 0x8000, [0x0000, 0x8000, 0x0001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x3F80, 0x0100],
             [0x7F80, 0xFF80, 0x7FC0]),
    "tf32": (np.uint32, 0x80000000, [0, 0x80000000, 0x00002000, 0x007FE000, 0x00800000, 0x7F7FE000, 0xFF7FFFFF,
                                     0x3F800FFF], [0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001]),
    "e4m3": (np.uint8, 0x80, [0x00, 0x80, 0x01, 0x07, 0x08, 0x7E, 0xFE, 0x38], [0x7F, 0xFF]),
    "e5m2": (np.uint8, 0x80, [0x00, 0x80, 0x01, 0x03, 0x04, 0x7B, 0xFB, 0x3C], [0x7C, 0xFC, 0x7E]),
    "e3m2": (np.uint8, 0x20, [0x00, 0x20, 0x01, 0x03, 0x04, 0x1F, 0x3F], []),
    "e2m3": (np.uint8, 0x20, [0x00, 0x20, 0x01, 0x07, 0x08, 0x1F, 0x3F], []),
    "e2m1": (np.uint8, 0x8, [0x0, 0x8, 0x1, 0x2, 0x7, 0xF], []),
}
_BITS = {"e3m2": 6, "e2m3": 6, "e2m1": 4}


def parse(instr: str):
    """(M, N, K, kind, d, a, b, block, scale type) of an MMA-Sim instruction name."""
    parts = instr.split(".")
    mnk = parts[0][1:].replace("n", " ").replace("k", " ").split()
    M, N, K = (int(x) for x in mnk)
    if len(parts) == 4:
        return M, N, K, None, *parts[1:], None, None
    kind = parts[1][len("kind::"):]
    if len(parts) == 5:
        return M, N, K, kind, *parts[2:], None, None
    return M, N, K, kind, *parts[3:6], int(parts[2][5:]), parts[6]


def _finite_random(t, shape, rng, lo=-12, hi=12):
    """Random finite codes of type t; 16/32-bit types with exponents spread over 2^[lo, hi]."""
    st, sign, _, _ = _TYPES[t]
    if t in _BITS:
        return rng.integers(0, 1 << _BITS[t], shape).astype(np.uint8)
    if t in ("e4m3", "e5m2"):
        top = 0x7F if t == "e4m3" else 0x7C        # e4m3: 0x7f is NaN; e5m2: 0x7c.. are inf/NaN
        return (rng.integers(0, top, shape) | (rng.integers(0, 2, shape) * sign)).astype(np.uint8)
    e = rng.integers(lo, hi + 1, shape)
    v = np.ldexp(1.0 + rng.random(shape), e) * rng.choice([-1.0, 1.0], shape)
    if t == "f16":
        return v.astype(np.float16).view(np.uint16)
    bits = v.astype(np.float32).view(np.uint32)
    if t == "bf16":
        return (bits >> 16).astype(np.uint16)
    return bits                                   # tf32: the 13 low bits stay random (the tensor core ignores them)


def _special(t, shape, rng, p_nonfinite):
    st, _, specials, nonfinite = _TYPES[t]
    codes = _finite_random(t, shape, rng)
    pick = rng.random(shape) < 0.3
    codes[pick] = rng.choice(np.array(specials, st), int(pick.sum()))
    if nonfinite:
        nf = rng.random(shape) < p_nonfinite
        codes[nf] = rng.choice(np.array(nonfinite, st), int(nf.sum()))
    return codes.astype(st)


def _c(d, shape, rng, how):
    if d == "f16":
        if how == "zero":
            return np.zeros(shape, np.uint16)
        if how == "edge":
            sp = np.array([0x0000, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x3C00], np.uint16)
            return rng.choice(sp, shape)
        lo, hi = (-14, 15) if how == "large" else (-4, 4)
        v = np.ldexp(1.0 + rng.random(shape), rng.integers(lo, hi + 1, shape)) * rng.choice([-1.0, 1.0], shape)
        return v.astype(np.float16).view(np.uint16)
    if how == "zero":
        return np.zeros(shape, np.uint32)
    if how == "edge":
        sp = np.array([0, 0x80000000, 0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000,
                       0xFF800000, 0x7FC00000, 0x3F800000, 0x72800000], np.uint32)
        return rng.choice(sp, shape)
    lo, hi = (-30, 30) if how == "large" else (-4, 4)
    v = np.ldexp(1.0 + rng.random(shape), rng.integers(lo, hi + 1, shape)) * rng.choice([-1.0, 1.0], shape)
    return v.astype(np.float32).view(np.uint32)


def _scales(s, shape, rng, extreme):
    if s is None:
        return None
    if s == "ue8m0":
        if extreme:
            return rng.choice(np.array([0, 1, 2, 60, 127, 200, 253, 254, 255], np.uint8), shape,
                              p=[.14, .1, .1, .1, .12, .12, .1, .14, .08])
        return rng.integers(127 - 20, 127 + 21, shape).astype(np.uint8)
    if extreme:
        return rng.choice(np.array([0x00, 0x01, 0x07, 0x08, 0x38, 0x7E, 0x7F, 0xB8, 0x80], np.uint8), shape,
                          p=[.1, .14, .12, .12, .14, .14, .06, .1, .08])
    return rng.integers(0x08, 0x7F, shape).astype(np.uint8)


def cases(instr: str, rng):
    """Yield (case, a, b, c, sf_a, sf_b): codes as bwlab.umma.numerics.mma_numerics takes them."""
    M, N, K, kind, d, at, bt, block, s = parse(instr)
    chained = 1 if kind == "mxf8f6f4" else 2          # MMA-Sim runs one kind::mxf8f6f4 step per call
    for case in CASES:
        if case == "scale_extremes" and s is None:
            continue
        k = K * (chained if case in ("wide", "edge") else 1)
        a, b = _finite_random(at, (M, k), rng), _finite_random(bt, (N, k), rng)
        cc = _c(d, (M, N), rng, "small")
        if case == "cancel":
            h = k // 2                                 # second half = -(first half): the sum cancels ...
            a[:, h:] = a[:, :h] ^ _TYPES[at][1]
            b[:, h:] = b[:, :h]
            flip = rng.random((M, k)) < 0.04           # ... up to a few perturbed terms
            a[flip] = _finite_random(at, (int(flip.sum()),), rng)
            cc = _c(d, (M, N), rng, "zero")
        elif case == "tiny":
            lo, hi = {"f16": (-24, -6), "bf16": (-80, -55), "tf32": (-80, -55)}.get(at, (-12, 0))
            if at in ("f16", "bf16", "tf32"):
                a, b = _finite_random(at, (M, k), rng, lo, hi), _finite_random(bt, (N, k), rng, lo, hi)
            a[rng.random((M, k)) < 0.3] = 0
            cc = _c(d, (M, N), rng, "zero")
        elif case == "large_c":
            cc = _c(d, (M, N), rng, "large")
        elif case == "edge":
            a, b = _special(at, (M, k), rng, 0.004), _special(bt, (N, k), rng, 0.004)
            cc = _c(d, (M, N), rng, "edge")
            if at == "bf16":                           # products past f32's range: overflow to infinity
                big = rng.random((M, k)) < 0.05
                a[big] = 0x7E00 | (a[big] & 0x8000)
        sf = (None, None) if s is None else (_scales(s, (M, k // block), rng, case == "scale_extremes"),
                                             _scales(s, (N, k // block), rng, case == "scale_extremes"))
        yield case, a, b, cc, sf[0], sf[1]


def mmasim_d(instr: str, a, b, c, sf_a=None, sf_b=None) -> np.ndarray:
    """MMA-Sim's D as raw bits (uint32 for f32 D, uint16 for f16 D), from bwlab-style codes."""
    import torch
    from mmasim.nv_ptx import WGMMA, TCGen05MMA, TCGen05MMABlockScale
    M, N, K, kind, d, at, bt, block, s = parse(instr)

    def operand(codes, t):
        codes = np.ascontiguousarray(codes)
        if t == "f16":
            return torch.from_numpy(codes.view(np.float16).copy())
        if t == "bf16":
            return torch.from_numpy(codes.view(np.int16).copy()).view(torch.bfloat16)
        if t == "tf32":
            return torch.from_numpy(codes.view(np.float32).copy())
        if t in ("e4m3", "e5m2"):
            return torch.from_numpy(codes.copy()).view(torch.float8_e4m3fn if t == "e4m3" else torch.float8_e5m2)
        if kind in ("mxf4", "mxf4nvf4"):                # two per byte, the first element in the high nibble
            return torch.from_numpy(((codes[:, 0::2] << 4) | codes[:, 1::2]).astype(np.uint8))
        if t == "e2m1":                                 # one per byte, in bits 5..2
            return torch.from_numpy((codes << 2).astype(np.uint8))
        return torch.from_numpy(codes.astype(np.uint8))  # fp6: bits 5..0

    A, B = operand(a, at), operand(b, bt).T
    C = torch.from_numpy(np.ascontiguousarray(c).view(np.float16 if d == "f16" else np.float32).copy())
    if kind is None:
        out = WGMMA("Hopper", instr)(A, B, C)
    elif s is None:
        out = TCGen05MMA("Blackwell", instr)(A, B, C)
    else:
        sdt = torch.float8_e8m0fnu if s == "ue8m0" else torch.float8_e4m3fn
        alpha = torch.from_numpy(np.ascontiguousarray(sf_a)).view(sdt)
        beta = torch.from_numpy(np.ascontiguousarray(sf_b)).view(sdt).T
        out = TCGen05MMABlockScale("Blackwell", instr)(A, B, C, alpha, beta)
    if d == "f16":
        return out.view(torch.int16).numpy().view(np.uint16).copy()
    return out.view(torch.int32).numpy().view(np.uint32).copy()


def main(path: str, seed: int = 2026) -> None:
    from importlib.metadata import version
    rng = np.random.default_rng(seed)
    arrays, index = {}, []
    for instr in INSTRS:
        for case, a, b, c, sa, sb in cases(instr, rng):
            i = len(index)
            index.append(f"{instr}|{case}")
            arrays.update({f"{i}_a": a, f"{i}_b": b, f"{i}_c": c, f"{i}_d": mmasim_d(instr, a, b, c, sa, sb)})
            if sa is not None:
                arrays.update({f"{i}_sfa": sa, f"{i}_sfb": sb})
    total = sum(arrays[f"{i}_d"].size for i in range(len(index)))
    np.savez_compressed(path, index=np.array(index), mmasim_version=np.array(version("mmasim")), seed=np.array(seed), **arrays)
    print(f"{len(index)} cases, {total} accumulators -> {path}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "vectors.npz")
