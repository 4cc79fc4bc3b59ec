"""The shared hardware models (bwlab.hw), the one case interface (bwlab.case), show_source and the
command preamble (bwlab.checks.common)."""
import subprocess
import sys

import numpy as np
import pytest

from bwlab.case import CheckFailed, compare
from bwlab.hw import banks, dtypes, mbarrier, swizzle, tmem
from bwlab.source import function_source, show_source
from bwlab.util import ceil_div, round_up


# ---- mbarrier -------------------------------------------------------------------------------
def test_mbarrier_phase_needs_arrivals_and_bytes():
    bar = mbarrier.Mbarrier(2)
    assert not bar.arrive_expect_tx(100)          # one of two arrivals, 100 bytes outstanding
    assert not bar.arrive()                       # arrivals done, bytes outstanding
    assert not bar.try_wait_parity(0)
    assert bar.complete_tx(100)                   # the last bytes complete phase 0
    assert bar.try_wait_parity(0) and not bar.try_wait_parity(1)
    assert (bar.pending, bar.tx, bar.phase, bar.completed) == (2, 0, 1, 1)


def test_mbarrier_extra_expect_tx_never_completes():
    bar = mbarrier.Mbarrier(1)
    bar.arrive_expect_tx(4096 + 16)
    assert not bar.complete_tx(4096)
    assert not bar.try_wait_parity(0) and bar.tx == 16


def test_mbarrier_rules():
    with pytest.raises(mbarrier.MbarrierError, match="arrival count"):
        mbarrier.Mbarrier(0)
    bar = mbarrier.Mbarrier(1)
    with pytest.raises(mbarrier.MbarrierError, match="20 bits"):
        bar.expect_tx(mbarrier.MAX_TX_BYTES + 1)
    with pytest.raises(mbarrier.MbarrierError, match="expects 1 more"):
        bar.arrive(2)


# ---- banks ----------------------------------------------------------------------------------
@pytest.mark.parametrize("stride,width,expected", [(4, 4, 1), (128, 4, 32), (8, 8, 2), (16, 16, 4),
                                                   (128, 16, 32), (0, 16, 4)])
def test_wavefronts(stride, width, expected):
    assert banks.wavefronts(np.arange(32) * stride, width).wavefronts == expected


# ---- swizzle --------------------------------------------------------------------------------
def test_one_list_of_swizzle_modes():
    assert swizzle.MODES == tuple(swizzle.SWIZZLES) == ("none", "32B", "64B", "128B")
    assert [swizzle.row_bytes(m) for m in swizzle.MODES] == [16, 32, 64, 128]
    assert [swizzle.span_bytes(m) for m in swizzle.MODES] == [16, 256, 512, 1024]
    with pytest.raises(ValueError, match="swizzle must be one of"):
        swizzle.require_mode("16B")
    # 128B: the 16-byte chunk index is XORed with the 128-byte row index (mod 8)
    assert swizzle.swizzle_address("128B", 3 * 128 + 1 * 16) == 3 * 128 + (1 ^ 3) * 16


# ---- TMEM addressing ------------------------------------------------------------------------
def test_tmem_addresses():
    assert tmem.encode_address(32, 64) == 0x00200040
    assert tmem.decode_address(0x00200040) == (32, 64)
    assert tmem.warp_lane_range(5) == (32, 64)
    with pytest.raises(tmem.TmemError, match="column must be in"):
        tmem.encode_address(0, 512)
    with pytest.raises(tmem.TmemError, match="lies outside"):
        tmem.decode_address(128 << 16)
    img = tmem.new_image()
    assert img.shape == (128, 512) and img.dtype == np.uint32 and tmem.require_image(img) is img


# ---- element types --------------------------------------------------------------------------
def test_one_vocabulary_both_spellings():
    assert dtypes.element_type("float16") is dtypes.element_type("f16")
    assert dtypes.element_type("bfloat16").name == "bf16"
    assert dtypes.element_type("int8").tmap_enum.endswith("UINT8")     # the driver has no INT8
    assert dtypes.element_type("tf32").tmap_enum.endswith("TFLOAT32")
    assert [dtypes.element_type(n).bits for n in ("e4m3", "e2m3", "e2m1")] == [8, 6, 4]
    with pytest.raises(ValueError, match="unknown element type"):
        dtypes.element_type("float8")


def test_conversions_round_to_nearest_even():
    # bf16: 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties to even (1.0); 1 + 3*2^-8 rounds up
    bits = dtypes.from_float(np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, np.nan]), "bf16")
    assert list(bits) == [0x3F80, 0x3F82, dtypes.CANONICAL_NAN16]
    assert list(dtypes.to_float(bits[:2], "bfloat16")) == [1.0, 1 + 2 ** -6]
    assert dtypes.from_float([np.nan], "f16")[0] == dtypes.CANONICAL_NAN16
    t = dtypes.from_float([1 + 2 ** -11, np.nan], "tf32")         # tie -> even
    assert t[0] == 0x3F800000 and t[1] == dtypes.TF32_CANONICAL_NAN
    assert dtypes.to_float(np.uint32(0x3F801FFF), "tf32") == 1.0   # low 13 bits ignored


def test_util():
    assert [ceil_div(x, 8) for x in (0, 1, 8, 9)] == [0, 1, 1, 2]
    assert round_up(129, 128) == 256


# ---- the case interface ---------------------------------------------------------------------
def test_compare_names_the_first_difference():
    e = np.arange(16, dtype=np.uint8).reshape(4, 4)
    g = e.copy()
    g[2, 1] = 0xEE
    g[3, 3] = 0
    r = compare(e, g, stage="demo", what="SMEM", unit="byte", hex_digits=2,
                where=lambda i: f"row {i[0]} byte {i[1]}", hint=lambda m: f"look at {m.where}")
    assert not r and r.differing == 2 and r.compared == 16
    text = str(r)
    assert "2 of 16 bytes differ" in text and "row 2 byte 1: expected 0x09, got 0xee" in text
    assert "hint: look at row 2 byte 1" in text
    with pytest.raises(CheckFailed, match="row 2 byte 1"):
        r.assert_ok()
    assert compare(e, e.copy(), stage="demo", what="SMEM").ok


def test_compare_floats_bitwise_and_masked():
    e = np.array([np.nan, 0.0, 1.0], dtype=np.float32)
    assert compare(e, e.copy(), stage="s", what="x").ok                  # NaN equals NaN bitwise
    assert not compare(e, np.array([np.nan, -0.0, 1.0], np.float32), stage="s", what="x").ok
    g = e.copy()
    g[2] = 5
    assert compare(e, g, stage="s", what="x", mask=[True, True, False]).ok
    bad = compare(e, e[:2], stage="s", what="x")
    assert not bad and "shape" in str(bad)


# ---- show_source ----------------------------------------------------------------------------
def test_show_source_finds_a_definition_with_its_comment():
    text = show_source("ptx/mbarrier.cuh", kernel="mbarrier_arrive_expect_tx", print_it=False)
    assert text.startswith("//") and "mbarrier.arrive.expect_tx" in text and text.rstrip().endswith("}")
    src = "// adds\n__device__ int f(int a) {\n  if (a) { return g(a); }\n  return 0;\n}\nint h() { return f(1); }\n"
    assert function_source(src, "f") == "\n".join(src.splitlines()[:5])
    with pytest.raises(ValueError, match="no definition"):
        function_source(src, "nothing")


# ---- command lines --------------------------------------------------------------------------
@pytest.mark.parametrize("argv,code", [(["bwlab.validate", "--help"], 0), (["bwlab.bench", "--help"], 0),
                                       (["bwlab.validate"], 2), (["bwlab.validate", "nope"], 2),
                                       (["bwlab.validate", "foundation", "--help"], 0)])
def test_command_exit_codes(argv, code):
    r = subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, timeout=120)
    assert r.returncode == code, r.stdout + r.stderr


def test_no_gpu_exit_code(monkeypatch):
    monkeypatch.setenv("BWLAB_BACKEND", "model")
    r = subprocess.run([sys.executable, "-m", "bwlab.validate", "foundation"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 3 and "model tier" in r.stdout
