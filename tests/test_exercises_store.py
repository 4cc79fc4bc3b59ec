"""Notebook 05's graded exercises (bwlab.epilogue.exercises): each check passes the right answer, says
"no answer yet" to the placeholder, and names the rule or the mistake for common wrong answers
(the notebook's own exercise cells: tests/test_exercise_cells.py)."""

import numpy as np

from bwlab.exercises import hidden_cases
from bwlab.epilogue import exercises as ex
from exercise_cells import not_yet as _fails

W, F, B = "st.shared", "fence.proxy.async", "bar.sync"


def words_per_phase(addresses, lanes, distinct=True):
    words = [int(a) // 4 + k for a in np.asarray(addresses)[list(lanes)] for k in range(4)]
    words = set(words) if distinct else words
    return max(np.bincount([w % 32 for w in words], minlength=32))


def wavefronts(addresses):
    """Written from the bank rule's text, independently of bwlab.hw.banks."""
    return sum(words_per_phase(addresses, range(p, p + 8)) for p in range(0, 32, 8))


def test_wavefronts(capsys):
    ex.check_wavefronts(wavefronts, hidden=hidden_cases("store_wavefronts"))
    assert "address patterns agree" in capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "no answer yet" in _fails(ex.check_wavefronts, lambda a: None)
    assert "one phase" in _fails(ex.check_wavefronts, lambda a: words_per_phase(a, range(32)))
    msg = _fails(ex.check_wavefronts, lambda a: sum(words_per_phase(a, range(p, p + 8), distinct=False)
                                                    for p in range(0, 32, 8)))
    assert "count distinct words" in msg and "returned 32, not what" in msg and "expected: 4" in msg


def stale(steps):
    last = max(i for i, s in enumerate(steps) if s == W)
    after = steps[last + 1:]
    return F not in after or B not in after[after.index(F) + 1:]


def test_fence(capsys):
    ex.check_fence(stale, hidden=hidden_cases("store_fence"))
    assert "step sequences agree" in capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "no answer yet" in _fails(ex.check_fence, lambda s: None)
    msg = _fails(ex.check_fence, lambda s: F not in s)
    assert "orders nothing written after it" in msg
    msg = _fails(ex.check_fence, lambda s: F not in s[max(i for i, x in enumerate(s) if x == W):])
    assert "a barrier after the fences" in msg and "generic proxy" in msg   # the rule's text is there too


def test_ring_wait(capsys):
    ex.check_ring_wait(lambda s: s - 1, hidden=hidden_cases("store_wait_ring"))
    assert "ring sizes 1, 2, 3, 4, 5, 6, 7, 8 agree" in capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "no answer yet" in _fails(ex.check_ring_wait, lambda s: None)
    msg = _fails(ex.check_ring_wait, lambda s: s)
    assert "race" in msg and "returned 1, not what" in msg and "expected: 0" in msg
    assert "waits for every store" in _fails(ex.check_ring_wait, lambda s: 0)
    msg = _fails(ex.check_ring_wait, lambda s: s - 2)       # one short, and -1 for a single buffer
    assert "one short of the largest" in msg and "no N at all" in msg and "safe, but one more" not in msg
    # the model behind it: N = stages rewrites a buffer that a store may still be reading
    assert any("write-after-read" in h for h in ex.ring_epilogue(2, 2).hazards)
    assert not ex.ring_epilogue(2, 1).hazards


def offset(row, col, elem_bytes, swizzle):
    row_bytes, bits = {"32B": (32, 1), "64B": (64, 2), "128B": (128, 3)}[swizzle]
    a = row * row_bytes + col * elem_bytes
    return a ^ (((a >> 7) & ((1 << bits) - 1)) << 4)


def test_staged_offset(capsys):
    ex.check_staged_offset(offset, hidden=hidden_cases("store_swizzle_offset"))
    assert "elements agree" in capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "no answer yet" in _fails(ex.check_staged_offset, lambda r, c, e, m: None)
    rb = {"32B": 32, "64B": 64, "128B": 128}
    msg = _fails(ex.check_staged_offset, lambda r, c, e, m: r * rb[m] + c * e)
    assert "before the swizzle" in msg and "returned 128, not what" in msg and "expected: 144" in msg
    bits = {"32B": 1, "64B": 2, "128B": 3}
    by_row = lambda r, c, e, m: r * rb[m] + 16 * ((c * e // 16) ^ (r % (1 << bits[m]))) + c * e % 16
    assert "XORed with the row number" in _fails(ex.check_staged_offset, by_row)


X, Y = "blockIdx.x * BN", "blockIdx.y * BM"


def test_store_coords(capsys):
    ex.check_store_coords((X, Y), hidden=hidden_cases("store_kernel_coords"))
    assert "elements equal the model" in capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "no answer yet" in _fails(ex.check_store_coords, None)
    assert "two C expressions" in _fails(ex.check_store_coords, "n0, m0")
    msg = _fails(ex.check_store_coords, ("n0", "m0"))          # the line as written is not an answer
    assert "kernel's own coordinates" in msg and "blockIdx.x, blockIdx.y, BM and BN" in msg
    msg = _fails(ex.check_store_coords, (Y, X))
    assert "swapped" in msg and "first difference at D[0, 32]" in msg and "fence" not in msg
    msg = _fails(ex.check_store_coords, ("blockIdx.x", "blockIdx.y"))
    assert "tile indices" in msg and "box-start-16B" in msg
    assert "non-negative" in _fails(ex.check_store_coords, (X + " - 4", Y))
    msg = _fails(ex.check_store_coords, (X + " +", Y))
    assert "does not compile" in msg and "blockIdx.x * BN +, blockIdx.y * BM" in msg   # the learner's line
    # right for the shown 150 x 70 D (two tile rows), wrong for the hidden 300 x 100 one (three)
    ex.check_store_coords((X, f"({Y}) % 256"))
    msg = _fails(ex.check_store_coords, (X, f"({Y}) % 256"), hidden=hidden_cases("store_kernel_coords"))
    assert "(300 x 100)" in msg and "D[0, 0] holds acc[256, 0]" in msg and "blockIdx = (0, 2)" in msg
