"""Small integer helpers used by every stage."""
from __future__ import annotations

__all__ = ["ceil_div", "round_up"]


def ceil_div(x: int, m: int) -> int:
    """The smallest integer >= x / m (for m > 0)."""
    return -(-int(x) // int(m))


def round_up(x: int, m: int) -> int:
    """x rounded up to a multiple of m (for m > 0)."""
    return ceil_div(x, m) * int(m)
