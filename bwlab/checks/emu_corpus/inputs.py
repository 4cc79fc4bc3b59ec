"""The corpus's inputs: explicit edge values (ties, subnormals, NaN payloads, signed zeros, infinities,
INT_MIN/LLONG_MIN), then seeded random ones; a kernel's name seeds its generator."""
from __future__ import annotations

import zlib

import numpy as np


def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def f32(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def f64(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint64).view(np.float64)


F32_EDGES = f32([
    0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3FC00000, 0x40200000, 0xC0200000, 0x3F000000,
    0xBF000000, 0x3DCCCCCD, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x00400000, 0x807FFFFF,
    0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7FC12345, 0xFFC00001, 0x7F800001,
    0x4B000001, 0x4B800000, 0x3EAAAAAB, 0x4EFFFFFF, 0x4F000000, 0xCF000000, 0xCF000001, 0x5F000000,
    0x477FE000, 0x477FF000, 0x33800000, 0x33000000, 0x387FC000, 0x43700000, 0x43E00000, 0x43E80000,
    0x47600000, 0x3F7FFFFF, 0x3F800001, 0xBFC00000, 0x40600000, 0x4F800000, 0xDF000000, 0x3F400000,
    0x40C00000, 0xC0400000, 0x4B3FFFFF, 0x3EFFFFFF, 0x40490FDB, 0xC0490FDB, 0x7F000000, 0x01000000,
])
F32_SMALL = f32([0x00000000, 0x80000000, 0x3F800000, 0xBFC00000, 0x40200000, 0x00000001, 0x807FFFFF,
                 0x00800000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC12345, 0xFFC00001, 0x3EAAAAAB,
                 0x4B800000, 0xCF000000])
F64_EDGES = f64([
    0x0000000000000000, 0x8000000000000000, 0x3FF0000000000000, 0xBFF0000000000000, 0x3FF8000000000000,
    0x4004000000000000, 0xC004000000000000, 0x3FE0000000000000, 0x0000000000000001, 0x800FFFFFFFFFFFFF,
    0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
    0x7FF8000000012345, 0xFFF8000000000001, 0x7FF0000000000001, 0x3FD5555555555555, 0x4330000000000001,
    0x43E0000000000000, 0xC3E0000000000000, 0x41DFFFFFFFC00000, 0x41E0000000000000, 0x36A0000000000000,
    0x36A8000000000000, 0x3E70000000000000, 0x47EFFFFFE0000000, 0x47EFFFFFF0000000, 0x380FFFFFFFFFFFFF,
    0x3810000000000000, 0x409FFE0000000000, 0x40EFFE0000000000, 0x40EFFF0000000000, 0x3E78000000000000,
    0x4040000000000000, 0xC0F86A0000000000, 0x400921FB54442D18,
])
F64_SMALL = f64([0x0000000000000000, 0x8000000000000000, 0x3FF0000000000000, 0xBFF8000000000000,
                 0x0000000000000001, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000,
                 0xFFF0000000000000, 0x7FF8000000012345, 0x3FD5555555555555, 0xC3E0000000000000])
I32_EDGES = np.array([0, 1, -1, 2, -2, 3, -3, 5, 7, -7, 10, 255, 256, -256, 65535, 65536, 0x7FFFFFFF,
                      -0x80000000, -0x7FFFFFFF, 0x55555555, -0x55555556, 0x12345678, 1 << 30, 1000000007,
                      0x00FFFFFF, -0x01000000, 0x00800000, 0x7FFF, -0x8000, 46341], dtype=np.int64).astype(np.int32)
I32_SMALL = np.array([0, 1, -1, 3, -3, 7, 0x7FFFFFFF, -0x80000000, 0x55555555, 65536, -65536, 0x00FFFFFF],
                     dtype=np.int64).astype(np.int32)
I64_EDGES = np.array([0, 1, -1, 2, -2, 3, -3, 7, 10, 0x7FFFFFFF, -0x80000000, 0xFFFFFFFF, 1 << 32,
                      (1 << 63) - 1, -(1 << 63), -(1 << 63) + 1, 0x5555555555555555, 1 << 53, (1 << 53) + 1,
                      -(1 << 53) - 1, 1000000007, 0x123456789ABCDEF, (1 << 62), -(1 << 62), 0xFFFFFFFFFF,
                      (1 << 24) + 1, 9007199254740993, -0x0123456789ABCDE], dtype=object)
I64_EDGES = np.array([int(x) for x in I64_EDGES], dtype=np.int64)
I64_SMALL = np.array([0, 1, -1, 3, -3, (1 << 63) - 1, -(1 << 63), 0x7FFFFFFF, -0x80000000, 1 << 32,
                      0x5555555555555555, 10], dtype=np.int64)


def rand_f32(rng, n, spread=6.0) -> np.ndarray:
    x = rng.standard_normal(n) * 10.0 ** rng.uniform(-spread, spread, n)
    return x.astype(np.float32)


def rand_bits32(rng, n) -> np.ndarray:
    return rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)


def unary_f32(name, n=128, spread=6.0) -> np.ndarray:
    r = rng_for(name)
    x = np.concatenate([F32_EDGES, rand_f32(r, max(n - len(F32_EDGES) - 16, 8), spread),
                        rand_bits32(r, 16).view(np.float32)])
    return x[:n].astype(np.float32)


def pairs(small: np.ndarray, extra_a: np.ndarray, extra_b: np.ndarray):
    a, b = np.meshgrid(small, small, indexing="ij")
    return (np.concatenate([a.ravel(), extra_a]).astype(small.dtype),
            np.concatenate([b.ravel(), extra_b]).astype(small.dtype))


def pairs_f32(name, extra=64, spread=6.0):
    r = rng_for(name)
    return pairs(F32_SMALL, rand_f32(r, extra, spread), rand_f32(r, extra, spread))


def pairs_f64(name, extra=48):
    r = rng_for(name)
    x = lambda: r.standard_normal(extra) * 10.0 ** r.uniform(-30, 30, extra)  # noqa: E731
    return pairs(F64_SMALL, x(), x())


def fma_triples_f32(name, n_rand=96):
    """Random triples, exact subnormal ties (a*b = (2k+1) 2^-150), near-cancellation and specials."""
    r = rng_for(name)
    k = np.arange(1, 33)
    ta = ((2 * k + 1).astype(np.float64) * 2.0 ** -75).astype(np.float32)
    tb = np.full(32, 2.0 ** -75, np.float32)
    tc = (r.integers(-3, 4, 32) * 2.0 ** -149).astype(np.float32)
    ca = rand_f32(r, 32, 2)
    cb = (np.float32(1) / ca).astype(np.float32)
    cc = np.full(32, -1.0, np.float32)
    sa, sb = F32_SMALL, F32_SMALL[::-1].copy()
    sc = np.roll(F32_SMALL, 5)
    ra, rb, rc = rand_f32(r, n_rand), rand_f32(r, n_rand), rand_f32(r, n_rand)
    return (np.concatenate([ta, ca, sa, ra]), np.concatenate([tb, cb, sb, rb]), np.concatenate([tc, cc, sc, rc]))


def pairs_i32(name, extra=64):
    r = rng_for(name)
    return pairs(I32_SMALL, r.integers(-(1 << 31), 1 << 31, extra).astype(np.int32),
                 r.integers(-(1 << 31), 1 << 31, extra).astype(np.int32))


def pairs_i64(name, extra=48):
    r = rng_for(name)
    return pairs(I64_SMALL, r.integers(-(1 << 63), (1 << 63) - 1, extra, dtype=np.int64),
                 r.integers(-(1 << 63), (1 << 63) - 1, extra, dtype=np.int64))


def unary_i32(name, n=128):
    r = rng_for(name)
    return np.concatenate([I32_EDGES, r.integers(-(1 << 31), 1 << 31, n - len(I32_EDGES))]).astype(np.int32)


def unary_i64(name, n=96):
    r = rng_for(name)
    return np.concatenate([I64_EDGES, r.integers(-(1 << 63), (1 << 63) - 1, n - len(I64_EDGES), dtype=np.int64)])


H16_EDGES = np.array([0x0000, 0x8000, 0x3C00, 0xBC00, 0x3E00, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF,
                      0x7C00, 0xFC00, 0x7E00, 0x7E55, 0xFE01, 0x7C01, 0x3555, 0x4200, 0x5BFF, 0x3BFF, 0x3C01,
                      0x4900, 0xC900, 0x6800, 0x0200], dtype=np.uint16)
BF16_EDGES = np.array([0x0000, 0x8000, 0x3F80, 0xBF80, 0x3FC0, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F,
                       0x7F80, 0xFF80, 0x7FC0, 0x7FC5, 0xFFC1, 0x7F81, 0x3EAB, 0x4040, 0x4B00, 0x3F7F, 0x3F81,
                       0x4780, 0xC780, 0x5F00, 0x0040], dtype=np.uint16)


def half_bits(name, edges, n=128, kind="f16"):
    r = rng_for(name)
    if kind == "f16":
        rnd = (r.standard_normal(n) * 10.0 ** r.uniform(-3, 3, n)).astype(np.float16).view(np.uint16)
    else:
        rnd = (np.asarray(r.standard_normal(n) * 10.0 ** r.uniform(-20, 20, n), np.float32).view(np.uint32)
               >> 16).astype(np.uint16)
    return np.concatenate([edges, rnd])[:n]


def half_pairs(name, edges, extra=64, kind="f16"):
    small = edges[::2].copy()
    r = rng_for(name)
    xa, xb = half_bits(name + "a", edges[:0], extra, kind), half_bits(name + "b", edges[:0], extra, kind)
    del r
    return pairs(small, xa, xb)

