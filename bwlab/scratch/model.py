"""What the five steps compute, by NumPy.

Steps 1-4 each add up C[m][n] = sum_k A[m][k] B[k][n] in f32, k from 0 to K-1, one fused multiply-add
at a time (PTX `fma.rn.f32`). The product of two f16 values is exact in f32 (11 + 11 significant bits
fit in 24), so each FMA is one f32 addition of an exact product, rounded to nearest even: NumPy's f32
`acc + a * b` in the same order gives the same bits. `gemm_model` is that sum; the steps must equal it
bit for bit.

Step 5's `mma.sync` adds each 16-long slice of K inside the tensor core in an order (and with an
internal precision) the PTX ISA leaves to the hardware ("mma"): its C is checked against
the exact sum (`reference`) within a bound instead.
"""
from __future__ import annotations

import numpy as np

from ..hw.dtypes import from_float

__all__ = ["random_operands", "gemm_model", "reference", "within_tolerance", "SUM_TOL"]

SUM_TOL = 2.0 ** -16    # |C - exact| <= SUM_TOL * (|A| |B|): f32 sums in another order, 2^-24 per add


def random_operands(M: int, N: int, K: int, seed: int = 0):
    """A (M x K) and B (K x N) with values uniform in [-1, 1), rounded to f16 (NumPy float16)."""
    rng = np.random.default_rng(seed)
    a = from_float(rng.random((M, K), dtype=np.float32) * 2 - 1, "f16").view(np.float16)
    b = from_float(rng.random((K, N), dtype=np.float32) * 2 - 1, "f16").view(np.float16)
    return a, b


def gemm_model(a, b) -> np.ndarray:
    """C (f32) as steps 1-4 compute it: for each k in turn, acc = fma(A[:, k], B[k, :], acc)."""
    a32, b32 = np.asarray(a).astype(np.float32), np.asarray(b).astype(np.float32)
    if a32.ndim != 2 or b32.ndim != 2 or a32.shape[1] != b32.shape[0]:
        raise ValueError(f"A is M x K and B is K x N: got shapes {a32.shape} and {b32.shape}")
    acc = np.zeros((a32.shape[0], b32.shape[1]), np.float32)
    for k in range(a32.shape[1]):
        acc += a32[:, k, None] * b32[None, k, :]        # the product is exact; one rounding per add
    return acc


def reference(a, b):
    """(the exact sum rounded once to f32, |A| |B|): what an order-free check compares with."""
    fa, fb = np.asarray(a).astype(np.float64), np.asarray(b).astype(np.float64)
    return (fa @ fb).astype(np.float32), np.abs(fa) @ np.abs(fb)


def within_tolerance(a, b, c) -> np.ndarray:
    """|C - exact| / (SUM_TOL |A| |B|) per element: <= 1 passes (NaN counts as failing: inf)."""
    exact, scale = reference(a, b)
    err = np.abs(np.asarray(c, np.float64) - exact)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = err / (SUM_TOL * scale)
    return np.where(np.isnan(r), np.inf, r)
