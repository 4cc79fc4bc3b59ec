"""The checks of the from-scratch notebook's graded exercises (conventions: bwlab/exercises.py). Each
expected value comes from bwlab's models of the steps, never from a literal; each visible check tries
a whole family of cases, and the graded version's hidden cases are members of it (`in_family`), so
an answer the visible check accepts is one the graded version accepts.

* `check_warp_sectors(fn)`  — the 32-byte sectors one warp access touches (`memtraffic.warp_sectors`);
* `check_tile_load_bytes(fn)` — the bytes of A and B the SMEM-tiled kernel loads, for any tile T and
  problem (`memtraffic.traffic` of step 3 with a T x T tile);
* `check_attainable(fn)`    — the roofline: what a kernel of given intensity can reach (`machine.Machine`);
* `check_a_fragment(fn)`    — where mma.sync's A fragment elements sit (`fragments.a_fragment`), all
  32 lanes x 8 elements.

`MISTAKES` lists, per exercise, plausible wrong answers with the diagnosis each must get (tests hold
every one to it).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..exercises import check_function_explained, course_cases
from ..exercise_mistakes import which_mistake
from . import fragments, memtraffic
from .machine import Machine
from .steps import STEPS

__all__ = ["check_warp_sectors", "check_tile_load_bytes", "check_attainable", "check_a_fragment", "MISTAKES",
           "family", "in_family", "tile_load_bytes", "attainable"]


# ---- the families the checks try ----------------------------------------------------------------------

def _address_patterns() -> list[tuple]:
    """32 byte addresses of one warp access: contiguous, strided and broadcast, elements of 2, 4 and 8
    bytes at aligned and unaligned starts, and shuffled ones (seeded)."""
    out = []
    for size in (2, 4, 8):
        for stride in (0, 1, 2, 3, 4, 8, 16, 17, 64, 4096):
            for base in (0, size, 32 - size, 96):
                out.append(tuple(int(base + size * stride * i) for i in range(32)))
    rng = np.random.default_rng(1234)
    for _ in range(40):
        out.append(tuple(int(x) for x in rng.choice(4096, 32) * 2))
    return [(p,) for p in out]


def _tile_problems() -> list[tuple]:
    """(M, N, K, T) for tiles of 16 and 32 (the ones whose rows fill whole sectors)."""
    return [(m * t, n * t, k * t, t) for t in (16, 32) for m in (1, 2, 3, 8) for n in (1, 4, 5) for k in (1, 2, 7, 64)]


def _roof_points() -> list[tuple]:
    """(intensity FLOP/B, peak FLOP/s, bandwidth B/s), either side of and at the ridge."""
    out = []
    for peak, bw in ((67e12, 3.35e12), (989.5e12, 3.35e12), (989.5e12, 4.8e12), (19.5e12, 1.555e12)):
        ridge = peak / bw
        for f in (0.01, 0.1, 0.5, 1.0, 2.0, 10.0, 100.0):
            out.append((float(ridge * f), peak, bw))
        out += [(0.0606, peak, bw), (30.1, peak, bw), (1024.0, peak, bw)]
    return out


def _lanes() -> list[tuple]:
    return [(lane, i) for lane in range(32) for i in range(8)]


_FAMILIES = {"scratch_warp_sectors": _address_patterns, "scratch_tile_load_bytes": _tile_problems,
             "scratch_attainable": _roof_points, "scratch_a_fragment": _lanes}


def family(exercise: str) -> list[tuple]:
    """Every case the visible check of `exercise` tries."""
    return _FAMILIES[exercise]()


def _frozen(case):
    """A case as nested tuples (cases may arrive as lists), so that it can be looked up."""
    return tuple(_frozen(x) for x in case) if isinstance(case, (list, tuple)) else case


def in_family(exercise: str, cases) -> bool:
    """Whether every case of `cases` is one the visible check tries (the course data's hidden cases must be)."""
    known = set(family(exercise))
    try:
        return all(_frozen(c) in known for c in cases)
    except TypeError:                      # something unhashable: not a case of the family
        return False


def _cases(exercise, hidden):
    hidden = [_frozen(c) for c in hidden]
    if not in_family(exercise, hidden):
        raise ValueError(f"the hidden cases of {exercise} must come from the family its visible check tries")
    return family(exercise)


# ---- 0a.1 sectors of one warp access ------------------------------------------------------------------

SECTOR_RULE = ("a warp's access moves every 32-byte sector (bytes 32s .. 32s+31) that one of its 32 addresses "
               "falls in, once, however many lanes share it")


def _ref_sectors(addresses):
    return memtraffic.warp_sectors(np.asarray(addresses)[None])


MISTAKES = {
    "scratch_warp_sectors": [
        ("that counts distinct addresses; a sector holds 32 bytes, several neighbouring elements",
         lambda a: len(set(a))),
        ("that counts 128-byte cache lines; the memory system moves 32-byte sectors",
         lambda a: len({x // 128 for x in a})),
        ("that counts one sector per lane; lanes in the same sector share it",
         lambda a: 32),
        ("that assumes the 32 addresses are contiguous (the span divided by 32); a stride leaves gaps "
         "nothing moves", lambda a: (max(a) - min(a)) // 32 + 1),
    ],
    "scratch_tile_load_bytes": [
        ("that is the naive kernel's bytes: every thread loads its own K elements of A and of B; the tile "
         "shares them", lambda M, N, K, T: 2 * M * N * K * 2),
        ("that counts elements; f16 elements are 2 bytes", lambda M, N, K, T: 2 * M * N * K // T),
        ("that divides by T twice; each element of a T x T slice serves T threads (a row of them), not T x T",
         lambda M, N, K, T: 4 * M * N * K // (T * T)),
        ("that is every element of A and B read once; each CTA row reads A again for every tile column",
         lambda M, N, K, T: 2 * (M * K + K * N)),
    ],
    "scratch_attainable": [
        ("that is the larger of the two roofs; a kernel gets the smaller one", lambda x, p, b: max(p, x * b)),
        ("that is the bandwidth roof alone; it cannot pass the compute peak", lambda x, p, b: x * b),
        ("that is the ridge point (peak / bandwidth), an intensity, not a rate", lambda x, p, b: p / b),
        ("bandwidth / intensity: FLOP/s is (FLOP/byte) x (byte/s)", lambda x, p, b: min(p, b / x)),
    ],
    "scratch_a_fragment": [
        ("row and column are swapped", lambda lane, i: fragments.a_fragment(lane, i)[::-1]),
        ("elements 2-3 and 4-5 are swapped: a[1] (elements 2, 3) holds row g + 8, a[2] (elements 4, 5) column "
         "2t + 8", lambda lane, i: (lane // 4 + 8 * (i // 4), 2 * (lane % 4) + i % 2 + 8 * ((i // 2) % 2))),
        ("lanes are numbered along the row (g = lane % 8): four lanes share a row, g = lane // 4",
         lambda lane, i: (lane % 8 + 8 * ((i // 2) % 2), 2 * (lane // 8) + i % 2 + 8 * (i // 4))),
        ("each lane holds two neighbouring columns (2t, 2t + 1), not columns t and t + 4",
         lambda lane, i: (lane // 4 + 8 * ((i // 2) % 2), lane % 4 + 4 * (i % 2) + 8 * (i // 4))),
    ],
}


def _explainer(exercise, fn=None):
    """The diagnosis of a miss: the known wrong formula that agrees with `fn` on the whole family, else
    the first one that gives the learner's value at the case that differs."""
    whole = which_mistake(fn, family(exercise), MISTAKES[exercise]) if fn is not None else ""

    def explain(args, got, want):
        if whole:
            return whole
        for label, wrong in MISTAKES[exercise]:
            try:
                if _same(wrong(*args), got):
                    return label
            except Exception:
                continue
        return None
    return explain


def _same(x, y):
    if isinstance(x, float) or isinstance(y, float):
        return bool(np.isclose(x, y, rtol=1e-9, atol=0))
    return np.array_equal(np.asarray(x), np.asarray(y))


@course_cases("scratch_warp_sectors")
def check_warp_sectors(fn, hidden=()) -> None:
    """Exercise 0a.1: fn(addresses) -> the 32-byte sectors one warp access touches."""
    check_function_explained("sectors of one warp access", fn, _cases("scratch_warp_sectors", hidden),
                             reference=_ref_sectors, explain=_explainer("scratch_warp_sectors", fn),
                             rule=SECTOR_RULE, hint="group the byte addresses by address // 32")


# ---- 0a.2 the bytes the SMEM-tiled kernel loads --------------------------------------------------------

def tile_load_bytes(M: int, N: int, K: int, T: int) -> int:
    """Bytes of A and B step 3 (a T x T tile, K in slices of T) loads, counted by `traffic` from the
    kernel's own indexing."""
    s = dataclasses.replace(STEPS[2], block=(T, T), tile=(T, T), bk=T)
    return memtraffic.traffic(s, M, N, K).load_bytes


TILE_RULE = ("a CTA computes one T x T tile of C; for it, it loads a T x K strip of A and a K x T strip of B, "
             "each f16 element once; there are (M / T) x (N / T) CTAs")


@course_cases("scratch_tile_load_bytes")
def check_tile_load_bytes(fn, hidden=()) -> None:
    """Exercise 0a.2: fn(M, N, K, T) -> bytes of A and B loaded from global memory by step 3's kernel
    with T x T tiles."""
    check_function_explained("bytes step 3 loads", fn, _cases("scratch_tile_load_bytes", hidden),
                             reference=tile_load_bytes, explain=_explainer("scratch_tile_load_bytes", fn),
                             rule=TILE_RULE, hint="count one CTA's bytes, then multiply by the number of CTAs")


# ---- 0a.4 the roofline ---------------------------------------------------------------------------------

def attainable(intensity: float, peak: float, bandwidth: float) -> float:
    return Machine("given", bandwidth, peak, peak, "the exercise").attainable(intensity, "fp32")


ROOF_RULE = ("a kernel that does I FLOP per byte it moves cannot go faster than the memory feeds it (I x "
             "bandwidth) nor faster than the units compute (the peak): the lower of the two")


@course_cases("scratch_attainable")
def check_attainable(fn, hidden=()) -> None:
    """Exercise 0a.4: fn(intensity, peak, bandwidth) -> the attainable FLOP/s (within 1e-9 relative)."""
    ref = lambda x, p, b: _Close(attainable(x, p, b))
    check_function_explained("attainable FLOP/s", fn, _cases("scratch_attainable", hidden), reference=ref,
                             explain=lambda args, got, want: _explainer("scratch_attainable", fn)(args, got, want.v),
                             rule=ROOF_RULE, hint="two ceilings: which one is lower at this intensity?")


class _Close:
    """A float that equals any value within 1e-9 relative (the learner may compute it another way)."""

    def __init__(self, v):
        self.v = float(v)

    def __eq__(self, other):
        try:
            return bool(np.isclose(float(other), self.v, rtol=1e-9, atol=0))
        except (TypeError, ValueError):
            return False

    def __repr__(self):
        return f"{self.v:.6g}"


# ---- 0a.3 the A fragment of mma.sync -------------------------------------------------------------------

FRAG_RULE = ("m16n8k16, .f16 A (PTX ISA 'Matrix Fragments for mma.m16n8k16'): g = lane // 4, t = lane % 4; "
             "elements 0, 1 at row g, columns 2t, 2t+1; elements 2, 3 at row g + 8; elements 4, 5 at row g, "
             "columns 2t + 8, 2t + 9; elements 6, 7 at row g + 8, columns 2t + 8, 2t + 9")


@course_cases("scratch_a_fragment")
def check_a_fragment(fn, hidden=()) -> None:
    """Exercise 0a.3: fn(lane, i) -> (row, column) of A held by element i of lane's fragment."""
    check_function_explained("A fragment of mma.sync", fn, _cases("scratch_a_fragment", hidden),
                             reference=fragments.a_fragment, explain=_explainer("scratch_a_fragment", fn),
                             rule=FRAG_RULE, hint="the four registers are four 8 x 8 blocks of A: which block, "
                             "then where in it (ldmatrix's thread t gets row t // 4)")
