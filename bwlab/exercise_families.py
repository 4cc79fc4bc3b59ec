"""Random members of the families an exercise's graded cases come from, for the visible checks'
property tests (`bwlab.exercises.check_function(..., family=)`): drawn fresh each time, never the course
data's hidden cases. The stage exercises keep their small families beside their checks; these are the
ones that would lengthen a stage's exercise file past its limit (tests/test_package_shape.py).
"""
from __future__ import annotations

from .hw.swizzle import MODES as SWIZZLE_MODES

__all__ = ["legal_box", "occupancy_family", "occupancy_formula"]


def legal_box(rng) -> tuple:
    """(dtype, box_shape, swizzle): a random box TensorMap accepts — element types of 1 to 8 bytes,
    rank 1 to 5, every swizzle (exercise 1.2's family)."""
    from .tma.tensor_map import TensorMap
    while True:
        dtype = ("uint8", "bfloat16", "float16", "float32", "int32", "float64")[int(rng.integers(6))]
        swizzle = SWIZZLE_MODES[int(rng.integers(len(SWIZZLE_MODES)))]
        box = tuple(int(rng.integers(1, 33)) * (16 if i == 0 else 1) for i in range(int(rng.integers(1, 6))))
        try:
            TensorMap(dtype, box, box, swizzle=swizzle)
        except Exception:
            continue
        return (dtype, box, swizzle)


def occupancy_family(rng) -> tuple[int, int, int]:
    """A random CTA (SMEM bytes, registers per thread, threads) of the family 7.2's graded cases come
    from: SMEM from 1 KiB to all of an SM's, any register count a kernel may have (16..255), 1 to 32
    warps; one in three a small CTA (up to 8 KiB, 4 warps, 64 registers), where the caps of 32 CTAs
    and 64 warps decide."""
    from .gemm import occupancy as occ
    if rng.integers(3) == 0:
        return (int(rng.integers(1, 9)) * 1024, int(rng.integers(16, 65)), 32 * int(rng.integers(1, 5)))
    return (int(rng.integers(1, occ.SMEM_PER_SM // 1024 + 1)) * 1024 - int(rng.integers(0, 2)) * 512,
            int(rng.integers(16, 256)), 32 * int(rng.integers(1, 33)))


def occupancy_formula(unit=True, caps=True, smem_sm=None):
    """7.2's rule as a function of (smem, registers, threads), or one of its plausible misreadings: no
    register allocation unit, another SMEM size, no caps of CTAs and warps per SM."""
    from .gemm import occupancy as occ
    from .util import ceil_div

    def f(smem, regs, threads):
        warps = ceil_div(threads, 32)
        per_warp = ceil_div(regs * 32, occ.REG_UNIT_PER_WARP) * occ.REG_UNIT_PER_WARP if unit else regs * 32
        n = min((smem_sm or occ.SMEM_PER_SM) // smem, occ.REGS_PER_SM // (per_warp * warps))
        return min(n, occ.MAX_CTAS_PER_SM, occ.MAX_WARPS_PER_SM // warps) if caps else n
    return f
