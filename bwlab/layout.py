"""A small CuTe-style layout: a function from coordinates to integers, written `shape:stride`.

A layout maps a coordinate inside `shape` to the inner product of that coordinate with `stride`.
Shapes and strides are ints or (nested) tuples of the same profile. A layout takes

* a coordinate congruent with the shape, e.g. `L(0, 1, 2, 0)`, or one flat index `L(5)`, which is
  first turned into a coordinate in CuTe's colexicographic order (the leftmost mode fastest);
* a coordinate with wildcards (`None` or `'_'`, CuTe's `_`): the result is the *slice*, the layout of
  the modes the wildcards keep (`slice_and_offset` also returns the offset of that slice).

Strides left out are CuTe's compact column-major strides, with CuTe's rule for a static mode of size
1: its stride is 0. Printing follows CuTe's `print(layout)` with every integer printed as a dynamic
one, `(2,2,4,1):(8,4,1,0)`; `cute_str(static=True)` adds CuTe's `_` prefix of static integers,
`(_2,_2,_4,_1):(_8,_4,_1,_0)`, which is what CuTe prints for the layouts CUTLASS builds from `Int<N>`.

Mirrors include/cute/layout.hpp (crd2idx, idx2crd, slice_and_offset, get_flat_coord),
include/cute/stride.hpp (compact_major) and the `tiled_divide` of include/cute/layout.hpp, for the
cases bwlab needs: dividing flat modes by contiguous tiles (`n:1`, or `1:0`).
"""
from __future__ import annotations

import math

__all__ = ["Layout", "make_layout", "compact_col_major", "compact_row_major", "tiled_divide",
           "is_wildcard", "format_tuple", "size_of", "flatten"]

_WILDCARDS = (None, "_")


def is_wildcard(x) -> bool:
    """True for CuTe's `_` (spelled `None` or `'_'` here)."""
    return x is None or (isinstance(x, str) and x == "_")


def _normalise(t, what: str):
    """Lists become tuples; leaves must be ints (bool is refused)."""
    if isinstance(t, (list, tuple)):
        return tuple(_normalise(x, what) for x in t)
    if isinstance(t, bool) or not isinstance(t, int):
        try:
            import numpy as np
            if isinstance(t, np.integer):
                return int(t)
        except ImportError:  # pragma: no cover
            pass
        raise ValueError(f"{what} entries must be integers or tuples of integers, got {t!r}")
    return int(t)


def flatten(t) -> tuple:
    """The leaves of an int tuple, left to right (an int becomes a 1-tuple)."""
    if isinstance(t, tuple):
        out = ()
        for x in t:
            out += flatten(x)
        return out
    return (t,)


def size_of(shape) -> int:
    """Product of all the leaves of a shape."""
    return math.prod(flatten(shape))


def _congruent(a, b) -> bool:
    if isinstance(a, tuple) != isinstance(b, tuple):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_congruent(x, y) for x, y in zip(a, b))
    return True


def format_tuple(t, static: bool = False) -> str:
    """CuTe's print of an int tuple: `(2,(4,8))`; `static=True` prints ints as `_2`."""
    if isinstance(t, tuple):
        return "(" + ",".join(format_tuple(x, static) for x in t) + ")"
    if is_wildcard(t):
        return "_"
    return f"_{t}" if static else str(t)


def _compact(shape, current: int, major: str):
    """CuTe compact_major: returns (stride, next current). Static size-1 modes get stride 0."""
    if isinstance(shape, tuple):
        strides = [None] * len(shape)
        order = range(len(shape)) if major == "left" else reversed(range(len(shape)))
        for i in order:
            strides[i], current = _compact(shape[i], current, major)
        return tuple(strides), current
    if shape == 1:
        return 0, current
    return current, current * shape


def compact_col_major(shape):
    """CuTe LayoutLeft strides: the leftmost mode is contiguous; size-1 modes get stride 0."""
    return _compact(_normalise(shape, "shape"), 1, "left")[0]


def compact_row_major(shape):
    """CuTe LayoutRight strides: the rightmost mode is contiguous; size-1 modes get stride 0."""
    return _compact(_normalise(shape, "shape"), 1, "right")[0]


def _idx2crd_colex(idx: int, shape):
    """Flat index -> coordinate of `shape`, leftmost mode fastest (CuTe idx2crd without strides)."""
    if isinstance(shape, tuple):
        out = []
        for s in shape:
            n = size_of(s)
            out.append(_idx2crd_colex(idx % n, s))
            idx //= n
        return tuple(out)
    return idx


def _crd2idx(coord, shape, stride, where: str) -> int:
    """Inner product of a (hierarchical) coordinate with the strides, checking every entry's range."""
    if isinstance(shape, tuple):
        if isinstance(coord, tuple):
            if len(coord) != len(shape):
                raise ValueError(f"coordinate {format_tuple(coord)} has {len(coord)} modes where the "
                                 f"shape {format_tuple(shape)}{where} has {len(shape)}")
            return sum(_crd2idx(c, s, d, where) for c, s, d in zip(coord, shape, stride))
        n = size_of(shape)
        if not 0 <= coord < n:
            raise ValueError(f"index {coord} is outside mode {format_tuple(shape)}{where}, which has "
                             f"{n} elements (valid: 0..{n - 1})")
        return _crd2idx(_idx2crd_colex(coord, shape), shape, stride, where)
    if isinstance(coord, tuple):
        raise ValueError(f"coordinate {format_tuple(coord)} is deeper than the mode {shape}{where}")
    if not 0 <= coord < shape:
        raise ValueError(f"coordinate {coord} is outside a mode of size {shape}{where} "
                         f"(valid: 0..{shape - 1})")
    return coord * stride


def _has_wildcard(coord) -> bool:
    if isinstance(coord, tuple):
        return any(_has_wildcard(c) for c in coord)
    return is_wildcard(coord)


def _slice(coord, shape, stride, where: str):
    """CuTe slice_and_offset: the (shape, stride) tuples kept by the wildcards, and the offset of
    the coordinate with every wildcard set to 0."""
    if is_wildcard(coord):
        return (shape,), (stride,), 0
    if isinstance(coord, tuple):
        if not isinstance(shape, tuple) or len(coord) != len(shape):
            raise ValueError(f"coordinate {format_tuple(coord)} does not match the shape "
                             f"{format_tuple(shape)}{where}")
        shapes, strides, offset = (), (), 0
        for c, s, d in zip(coord, shape, stride):
            ks, kd, o = _slice(c, s, d, where)
            shapes, strides, offset = shapes + ks, strides + kd, offset + o
        return shapes, strides, offset
    return (), (), _crd2idx(coord, shape, stride, where)


class Layout:
    """`Layout(shape, stride)`: CuTe's layout over ints and nested tuples of ints.

    >>> L = Layout((2, 2, 4, 1), (8, 4, 1, 0))
    >>> L(0, 1, 2, 0), L(1), L.size(), L.cosize()
    (6, 8, 16, 16)
    >>> print(L(0, 1, None, 0))     # the slice along mode 2
    (4):(1)
    """

    __slots__ = ("shape", "stride")

    def __init__(self, shape, stride=None):
        shape = _normalise(shape, "shape")
        if any(s < 1 for s in flatten(shape)):
            raise ValueError(f"every mode of a shape must have size >= 1, got {format_tuple(shape)}")
        stride = compact_col_major(shape) if stride is None else _normalise(stride, "stride")
        if not _congruent(shape, stride):
            raise ValueError(f"shape {format_tuple(shape)} and stride {format_tuple(stride)} must have "
                             "the same nesting (CuTe: congruent)")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "stride", stride)

    def __setattr__(self, name, value):
        raise AttributeError("Layout is immutable")

    # -- queries ---------------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        """Number of top-level modes (1 for an int shape)."""
        return len(self.shape) if isinstance(self.shape, tuple) else 1

    @property
    def depth(self) -> int:
        def d(t):
            return 1 + max((d(x) for x in t), default=0) if isinstance(t, tuple) else 0
        return d(self.shape)

    def size(self) -> int:
        """Number of coordinates in the domain (product of the shape)."""
        return size_of(self.shape)

    def cosize(self) -> int:
        """CuTe cosize: the image of the last coordinate, plus one."""
        return self(self.size() - 1) + 1

    def __getitem__(self, i: int) -> "Layout":
        """Top-level mode `i` as a layout (CuTe `layout<i>(L)`)."""
        if not isinstance(self.shape, tuple):
            if i != 0:
                raise IndexError(f"a rank-1 layout has only mode 0, asked for {i}")
            return self
        if not -len(self.shape) <= i < len(self.shape):
            raise IndexError(f"layout {self} has {len(self.shape)} modes, asked for mode {i}")
        return Layout(self.shape[i], self.stride[i])

    def modes(self) -> list:
        return [self[i] for i in range(self.rank)]

    # -- evaluation ------------------------------------------------------------------------------
    def __call__(self, *coord):
        """L(i) for a flat index, L(c0, c1, ...) or L((c0, c1, ...)) for a coordinate; with a
        wildcard (None or '_') anywhere, the slice (a Layout) instead of an integer."""
        if len(coord) == 1:
            coord = coord[0]
        if isinstance(coord, list):
            coord = tuple(coord)
        if _has_wildcard(coord):
            return self.slice(coord)
        coord = _normalise(coord, "coordinate")
        if isinstance(coord, int):
            n = self.size()
            if not 0 <= coord < n:
                raise ValueError(f"index {coord} is outside layout {self}, which has {n} elements "
                                 f"(valid: 0..{n - 1})")
            coord = _idx2crd_colex(coord, self.shape)
        return _crd2idx(coord, self.shape, self.stride, f" of layout {self}")

    def slice_and_offset(self, coord):
        """CuTe slice_and_offset: (the layout of the wildcard modes, the offset of the rest)."""
        coord = tuple(coord) if isinstance(coord, list) else coord
        if not isinstance(self.shape, tuple) and isinstance(coord, tuple) and len(coord) == 1:
            coord = coord[0]
        shapes, strides, offset = _slice(coord, self.shape, self.stride, f" of layout {self}")
        return Layout(shapes, strides), offset

    def slice(self, coord) -> "Layout":
        return self.slice_and_offset(coord)[0]

    def get_hier_coord(self, index: int):
        """CuTe get_hier_coord: the coordinate whose image is `index`, found mode by mode as
        (index // stride) % shape (meaningful for layouts that are bijections onto 0..size-1)."""
        index = _normalise(index, "index")

        def go(s, d):
            if isinstance(s, tuple):
                return tuple(go(x, y) for x, y in zip(s, d))
            return 0 if d == 0 else (index // d) % s
        return go(self.shape, self.stride)

    def get_flat_coord(self, index: int) -> tuple:
        """CuTe get_flat_coord: `get_hier_coord` with each top-level mode's coordinate turned into
        one colexicographic index inside that mode (rank kept, depth 1), e.g. the (v, m, n, k) of
        a CTA rank in a cluster layout ((V),M,N,K)."""
        hier = self.get_hier_coord(index)
        if not isinstance(self.shape, tuple):
            return (hier,)

        def colex(c, s):
            if isinstance(s, tuple):
                idx, scale = 0, 1
                for ci, si in zip(c, s):
                    idx += colex(ci, si) * scale
                    scale *= size_of(si)
                return idx
            return c
        return tuple(colex(c, s) for c, s in zip(hier, self.shape))

    def values(self) -> list:
        """[L(0), L(1), ..., L(size-1)] in CuTe's colexicographic order."""
        return [self(i) for i in range(self.size())]

    # -- printing and comparison -----------------------------------------------------------------
    def cute_str(self, static: bool = False) -> str:
        return f"{format_tuple(self.shape, static)}:{format_tuple(self.stride, static)}"

    def __str__(self):
        return self.cute_str()

    def __repr__(self):
        return self.cute_str()

    def __eq__(self, other):
        return isinstance(other, Layout) and (self.shape, self.stride) == (other.shape, other.stride)

    def __hash__(self):
        return hash((self.shape, self.stride))


def make_layout(shape, stride=None, major: str = "left") -> Layout:
    """CuTe make_layout: compact column-major ('left', the default) or row-major ('right') strides
    when `stride` is None."""
    if stride is None:
        if major not in ("left", "right"):
            raise ValueError(f"major must be 'left' (column-major) or 'right' (row-major), got {major!r}")
        stride = compact_col_major(shape) if major == "left" else compact_row_major(shape)
    return Layout(shape, stride)


def _tile_size(t) -> int:
    if isinstance(t, Layout):
        if isinstance(t.shape, tuple) or not (t.stride == 1 or (t.shape == 1 and t.stride == 0)):
            raise ValueError(f"tiled_divide here takes contiguous tiles n:1 (or 1:0), got {t}")
        return t.shape
    t = _normalise(t, "tile")
    if not isinstance(t, int) or t < 1:
        raise ValueError(f"a tile is a positive integer or a layout n:1, got {t!r}")
    return t


def tiled_divide(layout: Layout, tiler) -> Layout:
    """CuTe tiled_divide for contiguous tiles of flat modes: mode i of shape s and stride d is split
    into a tile t:d (gathered in the new mode 0) and the rest (s/t):(d*t); modes beyond the tiler stay.

    >>> print(tiled_divide(make_layout((4, 4, 1)), (2,)))      # the two-SM cluster layout
    ((2),2,4,1):((1),2,4,0)
    """
    tiler = tiler if isinstance(tiler, (tuple, list)) else (tiler,)
    if not isinstance(layout.shape, tuple) or len(tiler) > len(layout.shape):
        raise ValueError(f"the tiler {tiler} has more modes than the layout {layout}")
    tile_shape, tile_stride, rest_shape, rest_stride = [], [], [], []
    for i, t in enumerate(tiler):
        n = _tile_size(t)
        s, d = layout.shape[i], layout.stride[i]
        if isinstance(s, tuple):
            raise ValueError(f"tiled_divide here divides flat modes only; mode {i} of {layout} is {s}")
        if s % n:
            raise ValueError(f"a tile of {n} does not divide mode {i} of size {s} in {layout}")
        tile_shape.append(n)
        tile_stride.append(d if n > 1 else 0)
        rest_shape.append(s // n)
        rest_stride.append(d * n if s // n > 1 else 0)
    k = len(tiler)
    return Layout((tuple(tile_shape),) + tuple(rest_shape) + layout.shape[k:],
                  (tuple(tile_stride),) + tuple(rest_stride) + layout.stride[k:])
