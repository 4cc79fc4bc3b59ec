"""Notebook 04's graded exercises (bwlab.tmem.exercises): each check passes the right answer, says "no
answer yet" to the placeholder, and names the rule or the mistake for common wrong answers
(the notebook's own exercise cells: tests/test_exercise_cells.py)."""
from exercise_cells import not_yet as _fails

from bwlab.exercises import hidden_cases
from bwlab.tmem import exercises as ex


def taddr(base, lane, column):
    return base + (lane << 16) + column


def holder(shape, num, lane, column):
    """Written from the PTX ISA's figures, independently of bwlab.tmem.forms."""
    if shape == "32x32b":
        return lane, column
    if shape == "16x64b":
        return 4 * (lane % 8) + 2 * (column % 2) + lane // 8, column // 2
    if shape == "16x128b":
        return 4 * (lane % 8) + column % 4, lane // 8 + 2 * (column // 4)
    return 4 * (lane % 8) + (column % 8) // 2, column % 2 + 2 * (lane // 8) + 4 * (column // 8)


REGS_X1 = {"32x32b": 1, "16x64b": 1, "16x128b": 2, "16x256b": 4, "16x32bx2": 1}


def test_address(capsys):
    ex.check_address(taddr, hidden=hidden_cases("tmem_address"))
    assert "correct: the TMEM address" in capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "no answer yet" in _fails(ex.check_address, lambda b, l, c: None)
    assert "no function yet" in _fails(ex.check_address, None)
    msg = _fails(ex.check_address, lambda b, l, c: b + (c << 16) + l)
    assert "lane and column are swapped" in msg and "bits 31-16" in msg
    assert "base is missing" in _fails(ex.check_address, lambda b, l, c: (l << 16) | c)
    assert "add them" in _fails(ex.check_address, lambda b, l, c: b | (l << 16) | c)


def test_quarter(capsys):
    ex.check_quarter(lambda w, l: 32 * (w % 4) <= l < 32 * (w % 4) + 32, hidden=hidden_cases("tmem_quarter"))
    assert "correct: warp quarters" in capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "no answer yet" in _fails(ex.check_quarter, lambda w, l: None)
    msg = _fails(ex.check_quarter, lambda w, l: l // 32 == w)
    assert "warp % 4" in msg and "(4, 0) returned False, not what" in msg and "expected: True" in msg
    assert "only the 32 lanes of its quarter" in _fails(ex.check_quarter, lambda w, l: True)


def test_wide_load(capsys):
    ex.check_wide_load(64, 64, hidden=hidden_cases("tmem_kernel_columns"))
    out = capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "correct:" in out and "compiles for sm_100a" in out and ".32x32b.x64" in out
    assert "no answer yet" in _fails(ex.check_wide_load, None, None)
    assert "no answer yet" in _fails(ex.check_wide_load, 64, None)
    msg = _fails(ex.check_wide_load, 64, 32)          # the load runs past the allocation
    assert "model refuses" in msg and "not all allocated" in msg
    msg = _fails(ex.check_wide_load, 64, 96)          # not a power of two
    assert "power of two" in msg
    msg = _fails(ex.check_wide_load, 48, 64)          # no .x48: the wrapper's static_assert, on the kernel's line
    assert "does not compile for sm_100a" in msg and "teach_tmem.cu" in msg
    msg = _fails(ex.check_wide_load, 32, 64)          # runs, but every thread gets half the columns
    assert "no register 32" in msg and "column 32" in msg
    msg = _fails(ex.check_wide_load, 64, 128)         # right load, twice the allocation
    assert "you have 128" in msg and "legal allocation" in msg and "not the smallest" in msg and "another CTA" in msg


def test_registers(capsys):
    ex.check_registers(lambda s, n, p=False: REGS_X1[s] * n, hidden=hidden_cases("tmem_registers"))
    assert "83 forms agree" in capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "no answer yet" in _fails(ex.check_registers, lambda s, n, p=False: None)
    msg = _fails(ex.check_registers, lambda s, n, p=False: REGS_X1[s] * n // (2 if p else 1))
    assert "pack::16b does not halve" in msg
    cols = {"32x32b": 1, "16x64b": 2, "16x128b": 4, "16x256b": 8, "16x32bx2": 1}
    assert "half a lane's columns" in _fails(ex.check_registers, lambda s, n, p=False: cols[s] * n)


def test_holder(capsys):
    ex.check_holder(holder, hidden=hidden_cases("tmem_holder"))
    assert "cells agree" in capsys.readouterr().out.replace("checked: ", "correct: ")
    assert "no answer yet" in _fails(ex.check_holder, lambda s, n, l, c: None)
    assert "the .32x32b map" in _fails(ex.check_holder, lambda s, n, l, c: (l, c))
    assert "wrong order" in _fails(ex.check_holder, lambda s, n, l, c: holder(s, n, l, c)[::-1])
    x1_only = lambda s, n, l, c: holder(s, 1, l, c % (8 if s == "16x256b" else 4 if s == "16x128b"
                                                      else 2 if s == "16x64b" else 1))
    assert "right for .x1" in _fails(ex.check_holder, x1_only)
