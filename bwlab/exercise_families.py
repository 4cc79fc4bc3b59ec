"""Random members of the families an exercise's graded cases come from, for the visible checks'
property tests (`bwlab.exercises.check_function(..., family=)`): drawn fresh each time, never the course
data's hidden cases. The stage exercises keep their own small families beside their checks; the ones
here are drawn by retrying until a stage's own validation accepts them.
"""
from __future__ import annotations

__all__ = ["legal_box"]


def legal_box(rng) -> tuple:
    """(dtype, box_shape, swizzle): a random box TensorMap accepts — element types of 1 to 8 bytes,
    rank 1 to 5, every swizzle (exercise 1.2's family)."""
    from .tma.tensor_map import TensorMap
    while True:
        dtype = ("uint8", "bfloat16", "float16", "float32", "int32", "float64")[int(rng.integers(6))]
        swizzle = ("none", "32B", "64B", "128B")[int(rng.integers(4))]
        box = tuple(int(rng.integers(1, 33)) * (16 if i == 0 else 1) for i in range(int(rng.integers(1, 6))))
        try:
            TensorMap(dtype, box, box, swizzle=swizzle)
        except Exception:
            continue
        return (dtype, box, swizzle)
