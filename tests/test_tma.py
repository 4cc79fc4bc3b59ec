"""bwlab.tma on the CPU: every tensor-map rule, the load model against independently computed
expectations (NumPy slicing, the PTX ISA swizzle tables), and the transaction byte counts."""
import math
import os

import numpy as np
import pytest

from bwlab import tma
from bwlab.checks import tma as ct
from bwlab.hw.banks import wavefronts
from bwlab.hw.dtypes import element_type, tf32_round
from bwlab.hw.mbarrier import Mbarrier
from bwlab.tma import TensorMap, TensorMapError, TmaLoad, tma_load_model
from bwlab.tma.runner import RunResult, background
from bwlab.runtime import encode_tensor_map


def ok(**kw):
    base = dict(dtype="float16", global_shape=(64, 32), box_shape=(64, 8))
    base.update(kw)
    return TensorMap(**base)


# ---- one test per rule: the error names the rule and the offending values -----------------------
RULES = [
    (dict(dtype="float8"), "dtype", "float8"),
    (dict(global_shape=(), box_shape=()), "rank", "rank must be 1..5"),
    (dict(global_shape=(16,) * 6, box_shape=(16,) * 6), "rank", "has 6"),
    (dict(box_shape=(64,)), "shape-lengths", "(64,)"),
    (dict(element_strides=(1, 1, 1)), "shape-lengths", "(1, 1, 1)"),
    (dict(global_strides=(128, 256)), "shape-lengths", "(128, 256)"),
    (dict(global_shape=(64, 32), box_shape=(64, 8), interleave="16B"), "interleave-rank", "rank 2"),
    (dict(global_shape=(64, 0)), "global-dim", "global_shape[1] = 0"),
    (dict(global_shape=(64, 2**32 + 1)), "global-dim", str(2**32 + 1)),
    (dict(global_shape=(7, 32), box_shape=(8, 8)), "global-stride-multiple", "(14,)"),
    (dict(global_strides=(136,)), "global-stride-multiple", "136"),
    (dict(global_shape=(64, 4, 4), box_shape=(8, 4, 4), interleave="32B", swizzle="32B",
          global_strides=(144, 576)), "global-stride-multiple", "multiple of 32"),
    (dict(global_strides=(2**40,)), "global-stride-limit", str(2**40)),
    (dict(box_shape=(64, 0)), "box-dim", "box_shape[1] = 0"),
    (dict(box_shape=(64, 257)), "box-dim", "257"),
    (dict(box_shape=(4, 8)), "box-inner-bytes", "4 * 2 = 8"),
    (dict(global_shape=(8, 10, 4), box_shape=(4, 4, 2), interleave="16B"), "box-inner-bytes", "4 * 2 = 8"),
    (dict(element_strides=(1, 9)), "element-stride", "element_strides[1] = 9"),
    (dict(element_strides=(1, 0)), "element-stride", "element_strides[1] = 0"),
    (dict(element_strides=(2, 1)), "element-stride-dim0", "element_strides[0] = 2"),
    (dict(swizzle="16B"), "swizzle", "'16B'"),
    (dict(box_shape=(32, 8), swizzle="32B"), "swizzle-span", "32 * 2 = 64 bytes exceeds the 32B"),
    (dict(box_shape=(64, 8), swizzle="64B"), "swizzle-span", "128 bytes exceeds the 64B"),
    (dict(global_shape=(256, 8), box_shape=(128, 8), swizzle="128B"), "swizzle-span", "256 bytes"),
    (dict(global_shape=(64, 4, 4), box_shape=(8, 4, 4), interleave="32B", swizzle="64B"),
     "interleave-swizzle", "swizzle='64B'"),
    (dict(interleave="8B"), "interleave", "'8B'"),
    (dict(l2_promotion="512B"), "l2-promotion", "'512B'"),
    (dict(oob_fill="inf"), "oob-fill", "'inf'"),
    (dict(dtype="int32", global_shape=(64, 32), box_shape=(64, 8), oob_fill="nan"), "oob-fill-nan", "int32"),
    (dict(dtype="uint8", global_shape=(64, 32), box_shape=(64, 8), oob_fill="nan"), "oob-fill-nan", "uint8"),
]


@pytest.mark.parametrize("kw,rule,text", RULES, ids=[f"{r}-{i}" for i, (_, r, _) in enumerate(RULES)])
def test_each_rule_raises_a_named_error(kw, rule, text):
    with pytest.raises(TensorMapError) as e:
        ok(**kw)
    assert e.value.rule == rule
    assert f"[{rule}]" in str(e.value) and text in str(e.value)
    assert isinstance(e.value, ValueError)


def test_limits_themselves_are_accepted():
    TensorMap("uint8", (2**32, 1), (256, 1), global_strides=(2**40 - 16,))
    TensorMap("float64", (16,) * 5, (2, 256 // 256, 1, 1, 1))
    TensorMap("float16", (64, 8), (16, 8), swizzle="32B")  # 32 bytes = the 32B span
    TensorMap("float32", (64, 64), (32, 256), swizzle="128B", element_strides=(1, 8))
    TensorMap("float16", (8, 10, 4), (8, 4, 2), interleave="16B", element_strides=(2, 1, 1))  # dim-0 stride allowed
    TensorMap("bfloat16", (64, 8), (64, 8), oob_fill="nan")


def test_encode_rejects_misaligned_base_before_any_driver_call():
    t = ok()
    with pytest.raises(TensorMapError, match=r"\[global-address-alignment\].*0x1008"):
        encode_tensor_map(t, 0x1008)
    with pytest.raises(TensorMapError, match="global-address-alignment"):
        encode_tensor_map(t, 0)
    il = TensorMap("uint16", (16, 4, 4), (16, 4, 4), interleave="32B", swizzle="32B")
    with pytest.raises(TensorMapError, match="32-byte aligned"):
        encode_tensor_map(il, 0x1010)


def test_encode_args_are_what_the_driver_receives():
    t = TensorMap("bfloat16", (100, 30, 3), (64, 16, 1), global_strides=(224, 224 * 30),
                  element_strides=(1, 2, 1), swizzle="128B", l2_promotion="256B", oob_fill="nan")
    a = t.encode_args(0x7f0000001000)
    assert a == {
        "tensorDataType": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", "tensorRank": 3,
        "globalAddress": 0x7f0000001000, "globalDim": [100, 30, 3], "globalStrides": [224, 6720],
        "boxDim": [64, 16, 1], "elementStrides": [1, 2, 1],
        "interleave": "CU_TENSOR_MAP_INTERLEAVE_NONE", "swizzle": "CU_TENSOR_MAP_SWIZZLE_128B",
        "l2Promotion": "CU_TENSOR_MAP_L2_PROMOTION_L2_256B",
        "oobFill": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"}
    # Every enumerator name exists in the bindings.
    from cuda.bindings import driver as drv
    for key, enum in (("tensorDataType", drv.CUtensorMapDataType), ("interleave", drv.CUtensorMapInterleave),
                      ("swizzle", drv.CUtensorMapSwizzle), ("l2Promotion", drv.CUtensorMapL2promotion),
                      ("oobFill", drv.CUtensorMapFloatOOBfill)):
        getattr(enum, a[key])
    for name in tma.TMAP_DTYPES:
        getattr(drv.CUtensorMapDataType, element_type(name).tmap_enum)


def test_packed_strides_default():
    t = TensorMap("float32", (12, 5, 3), (4, 5, 3))
    assert t.global_strides == (48, 240)
    assert t.byte_strides == (4, 48, 240)
    assert t.global_extent_bytes == 12 * 5 * 3 * 4


# ---- transaction bytes ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,box,es,want", [
    ("float16", (64, 8), (1, 1), 64 * 8 * 2),
    ("float32", (16, 5, 3), (1, 2, 1), 16 * 3 * 3 * 4),     # ceil(5/2) = 3
    ("uint8", (32, 7, 1, 9), (1, 3, 1, 8), 32 * 3 * 1 * 2),  # ceil(7/3) = 3, ceil(9/8) = 2
    ("float64", (2, 256), (1, 8), 2 * 32 * 8),
])
def test_box_bytes_is_the_expect_tx_count(dtype, box, es, want):
    t = TensorMap(dtype, tuple(max(b, 16) for b in box[:1]) + tuple(b * e for b, e in zip(box[1:], es[1:])),
                  box, element_strides=es)
    assert t.box_bytes == want
    # ... and that is exactly the number of bytes the model writes, out-of-bounds or not.
    g = np.zeros(t.global_extent_bytes, np.uint8)
    for coords in ((0,) * t.rank, (-1024,) * t.rank):
        addr, vals = tma.tma_load_writes(g, t, coords)
        assert vals.size == want and np.unique(addr).size == want


# ---- the model against NumPy slicing -------------------------------------------------------------
def padded(arr, pads):
    return np.pad(arr, pads, constant_values=0)


@pytest.mark.parametrize("coords", [(8, 4), (0, 0), (40, 30), (-8, -3), (48, 36), (200, 5)])
def test_2d_box_equals_numpy_slice_with_zero_fill(coords):
    rng = np.random.default_rng(1)
    g = rng.integers(0, 2**16, size=(40, 56), dtype=np.uint16)  # rows of 112 bytes
    t = TensorMap("uint16", (56, 40), (16, 8))
    P = 300
    want = padded(g, ((P, P), (P, P)))[coords[1] + P:coords[1] + P + 8, coords[0] + P:coords[0] + P + 16]
    got = tma_load_model(g, t, coords).view(np.uint16).reshape(8, 16)
    np.testing.assert_array_equal(got, want)


def test_5d_box_with_element_strides_equals_strided_slice():
    rng = np.random.default_rng(2)
    shape = (6, 5, 7, 4, 32)  # numpy order: outermost first; the tensor map's is reversed
    g = rng.integers(0, 2**31, size=shape, dtype=np.int32)
    t = TensorMap("int32", shape[::-1], (8, 3, 5, 2, 4), element_strides=(1, 2, 3, 1, 2))
    c = (4, 1, 0, -1, 2)  # innermost first; dim 3 starts at -1 (one plane of fill)
    P = 20
    gp = padded(g, [(P, P)] * 5)
    idx = tuple(slice(c[i] + P, c[i] + P + b, e) for i, b, e in
                reversed(list(zip(range(5), t.box_shape, t.element_strides))))
    want = gp[idx]
    assert want.shape == t.smem_shape == (2, 2, 2, 2, 8)  # ceil(3/2), ceil(5/3), ..., innermost last
    got = tma_load_model(g, t, c).view(np.int32).reshape(t.smem_shape)
    np.testing.assert_array_equal(got, want)


def test_padded_strides_skip_the_padding():
    g = np.arange(10 * 32, dtype=np.uint8).reshape(10, 32)  # 20 real bytes per 32-byte row
    t = TensorMap("uint8", (20, 10), (16, 4), global_strides=(32,))
    got = tma_load_model(g, t, (16, 2)).reshape(4, 16)
    want = np.zeros((4, 16), np.uint8)
    want[:, :4] = g[2:6, 16:20]  # columns 20.. are outside the tensor: zero, not the padding bytes
    np.testing.assert_array_equal(got, want)


def test_nan_fill_and_its_bits():
    g = np.arange(64, dtype=np.float32).reshape(8, 8)
    t = TensorMap("float32", (8, 8), (8, 2), oob_fill="nan")
    got = tma_load_model(g, t, (4, 7)).view(np.float32).reshape(2, 8)
    np.testing.assert_array_equal(got[0, :4], g[7, 4:])
    assert np.isnan(got[0, 4:]).all() and np.isnan(got[1]).all()
    assert tma.oob_fill_bits(t) == got[1].view(np.uint32)[0]
    z = TensorMap("float32", (8, 8), (8, 2))
    assert (tma_load_model(g, z, (4, 7)).view(np.float32).reshape(2, 8)[1] == 0).all()


def test_gmem_too_small_and_bad_coordinates_are_refused():
    t = TensorMap("float16", (64, 32), (64, 8))
    with pytest.raises(TensorMapError, match=r"\[gmem-extent\].*4096 bytes.*4094"):
        tma_load_model(np.zeros(4094, np.uint8), t, (0, 0))
    g = np.zeros(4096, np.uint8)
    with pytest.raises(TensorMapError, match=r"\[coords\].*2 coordinates"):
        tma_load_model(g, t, (0,))
    with pytest.raises(TensorMapError, match=r"\[coords\].*signed 32-bit"):
        tma_load_model(g, t, (0, 2**31))
    with pytest.raises(TensorMapError, match=r"\[smem-alignment\].*0x40"):
        tma_load_model(g, t, (0, 0), smem_address=64)
    # The box must start on a 16-byte boundary of its row (PTX ISA 5.5.3.1; the H100 faults otherwise).
    with pytest.raises(TensorMapError, match=r"\[coords-inner-alignment\].*byte 6 .*8 elements of float16"):
        tma_load_model(g, t, (3, 0))
    with pytest.raises(TensorMapError, match="coords-inner-alignment"):
        tma_load_model(g, t, (-4, 0))
    tma_load_model(g, t, (-8, 0))


# ---- swizzle: the PTX ISA tables (5.5.7), written out independently --------------------------------
PTX_TABLES = {  # row r of the table: which 16-byte chunk of the source row lands in each SMEM chunk
    "32B": [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6]],
    "64B": [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6], [2, 3, 0, 1, 6, 7, 4, 5], [3, 2, 1, 0, 7, 6, 5, 4]],
    "128B": [[c ^ r for c in range(8)] for r in range(8)],
}


@pytest.mark.parametrize("mode", ["32B", "64B", "128B"])
def test_swizzle_matches_the_ptx_isa_table(mode):
    # A box whose 128-byte SMEM lines hold consecutive 16-byte chunks 0..7 of the unswizzled image,
    # loaded at the pattern's start (1024/512/256-byte boundary) and one pattern later.
    span = {"32B": 32, "64B": 64, "128B": 128}[mode]
    t = TensorMap("uint8", (span, 64), (span, 1024 // span), swizzle=mode)
    g = (np.arange(span * 64) // 16 % 256).astype(np.uint8)  # every byte = its 16-byte chunk number
    for base in (0, 2048):
        smem = tma_load_model(g, t, (0, 0), smem_address=base).reshape(-1, 8, 16)
        assert (smem == smem[:, :, :1]).all()  # chunks stay whole
        chunk = smem[:, :, 0].astype(int)       # source chunk number in each SMEM chunk
        table = PTX_TABLES[mode]
        for line in range(8):
            want = [line * 8 + k for k in table[line % len(table)]]
            assert list(chunk[line]) == want, (mode, base, line)


@pytest.mark.parametrize("mode,offset", [("128B", 128 * 3), ("64B", 128), ("32B", 128)])
def test_swizzle_is_a_function_of_the_address(mode, offset):
    # PTX ISA: away from the pattern boundary the pattern starts at base offset (dst / 128) % N.
    span = {"32B": 32, "64B": 64, "128B": 128}[mode]
    rows = {"32B": 2, "64B": 4, "128B": 8}[mode]
    t = TensorMap("uint8", (span, 64), (span, 1024 // span), swizzle=mode)
    g = (np.arange(span * 64) // 16 % 256).astype(np.uint8)
    smem = tma_load_model(g, t, (0, 0), smem_address=offset).reshape(-1, 8, 16)[:, :, 0].astype(int)
    base_offset = (offset // 128) % rows
    table = PTX_TABLES[mode]
    for line in range(8):
        want = [line * 8 + k for k in table[(line + base_offset) % rows]]
        assert list(smem[line]) == want


def test_swizzle_none_is_the_identity_anywhere():
    g = np.arange(2048, dtype=np.uint16)
    t = TensorMap("uint16", (64, 32), (64, 4))
    for off in (0, 128, 896, 4096):
        np.testing.assert_array_equal(tma_load_model(g, t, (0, 3), smem_address=off).view(np.uint16),
                                      g.reshape(32, 64)[3:7].reshape(-1))


@pytest.mark.parametrize("dtype,swizzle,inner_elems,offset", [
    ("uint8", "128B", 32, 0), ("float16", "64B", 8, 384), ("float32", "32B", 4, 128),
    ("float64", "128B", 6, 640), ("uint16", "64B", 24, 0)])
def test_narrow_swizzled_rows_sit_one_span_apart(dtype, swizzle, inner_elems, offset):
    # A box row narrower than the swizzle span takes a whole span in SMEM; the swizzle then XORs
    # address bits [4, 4+B) with bits [7, 7+B) (B = 1, 2, 3 for 32B, 64B, 128B) as for full rows.
    span = {"32B": 32, "64B": 64, "128B": 128}[swizzle]
    rng = np.random.default_rng(4)
    g = rng.integers(0, 2**63, size=(12, 64), dtype=np.uint64).view(np.uint8).reshape(12, -1)
    elem = element_type(dtype).storage.itemsize
    g = g[:, :64 * elem].copy()
    t = TensorMap(dtype, (64, 12), (inner_elems, 7), swizzle=swizzle)
    row_bytes = inner_elems * elem
    assert t.smem_pitch == span and t.smem_footprint == 7 * span
    assert t.tx_bytes == t.box_bytes == 7 * row_bytes
    coords = (16 // elem * 2, 3)
    got = tma_load_model(g, t, coords, smem_address=offset)
    plain = np.zeros(7 * span, np.uint8)  # unswizzled: row r at r * span, the rest of the span empty
    for r in range(7):
        plain[r * span:r * span + row_bytes] = g[3 + r, coords[0] * elem:coords[0] * elem + row_bytes]
    bits = {"32B": 1, "64B": 2, "128B": 3}[swizzle]
    a = offset + np.arange(plain.size)
    want = np.zeros_like(plain)
    want[(a ^ (((a >> 7) & ((1 << bits) - 1)) << 4)) - offset] = plain
    np.testing.assert_array_equal(got, want)


def test_narrow_swizzle_agrees_with_the_store_model():
    # bwlab.epilogue reads such boxes back with the pitch seen on the H100 for stores: the same one.
    from bwlab.epilogue import smem_box_pitch, tma_store_model
    for dtype, swz, n0 in (("uint8", "64B", 16), ("float32", "128B", 12), ("float16", "32B", 8)):
        t = TensorMap(dtype, (64, 6, 3), (n0, 4, 2), swizzle=swz)
        assert smem_box_pitch(t) == t.smem_pitch
        g = np.random.default_rng(3).integers(0, 256, size=(3, 6, 64 * t.elem_bytes), dtype=np.uint8)
        img = tma_load_model(g, t, (16, 1, 1), smem_address=256)
        back = tma_store_model(np.zeros_like(g), t, (16, 1, 1), img, smem_address=256)
        want = np.zeros_like(g)  # load then store of the same box: exactly the box comes back
        cols = slice(16 * t.elem_bytes, (16 + n0) * t.elem_bytes)
        want[1:3, 1:5, cols] = g[1:3, 1:5, cols]
        np.testing.assert_array_equal(back, want)


def test_interleaved_layouts_are_not_modelled():
    il = TensorMap("uint16", (8, 10, 4), (8, 4, 2), interleave="16B")
    with pytest.raises(NotImplementedError, match="interleave"):
        tma_load_model(np.zeros(640, np.uint8), il, (0, 0, 0))


def test_rank1_passes_one_unused_stride_to_the_driver():
    # cuda.bindings turns [] into NULL, which the driver refuses even though rank 1 reads no stride.
    a = TensorMap("float32", (10,), (4,)).encode_args(0x1000)
    assert a["globalStrides"] == [48] and a["globalDim"] == [10]


def test_tf32_rounding_rule():
    # The H100's answers to `python -m bwlab.validate tma --probe` (docs/results/tma_validate_h100.txt).
    x = np.array([0x3F800FFF, 0x3F801000, 0x3F803000, 0x3F801001, 0x7F7FFFFF, 0x7FC00001, 0xFF800000,
                  0x7F800001, 0x00001FFF, 0x00000001, 0x807FFFFF, 0x12345678, 0x7F801000], np.uint32)
    want = [0x3F800000, 0x3F800000, 0x3F804000, 0x3F802000, 0x7F800000, 0x7FFFE000, 0xFF800000,
            0x7FFFE000, 0x00002000, 0x00000000, 0x80800000, 0x12346000, 0x7FFFE000]
    assert [int(v) for v in tf32_round(x)] == want
    # ... and a TFLOAT32 load applies it on the way in (bwlab.hw.dtypes.tf32_round is the model's).
    t = TensorMap("tf32", (16,), (16,))
    g = np.resize(x, 16).astype(np.uint32)
    assert [int(v) for v in tma_load_model(g, t, (0,)).view(np.uint32)] == [int(v) for v in np.resize(want, 16)]


# ---- the hardware-validation generator ------------------------------------------------------------
def test_random_cases_cover_every_combination_and_are_valid():
    cases = ct.random_cases(260, seed=3)
    combos = {(c.tmap.dtype, c.tmap.rank, c.tmap.swizzle) for c in cases}
    assert len(combos) == 13 * 5 * 4
    assert {c.smem_offset % 1024 for c in cases} == set(range(0, 1024, 128))
    assert any(ct.is_oob(c) for c in cases) and any(not ct.is_oob(c) for c in cases)
    assert any(max(c.tmap.element_strides) > 1 for c in cases)
    assert any(c.tmap.oob_fill == "nan" for c in cases)
    for c in cases[:60]:
        w = c.model_window()
        assert w.size == c.window_bytes and c.window_bytes % 1024 == 0
        assert c.window_bytes >= c.smem_offset + c.tmap.smem_footprint + 1024
    assert any(tma.is_narrow_swizzle(c.tmap) for c in cases)
    assert {(c.tmap.swizzle, tma.is_narrow_swizzle(c.tmap)) for c in cases} >= {
        ("none", False), ("32B", True), ("32B", False), ("64B", True), ("64B", False), ("128B", True), ("128B", False)}
    assert {c.prefetch for c in cases} == {0, 1, 2, 3}
    a = ct.random_cases(5, seed=9)
    b = ct.random_cases(5, seed=9)
    assert [ct.describe_case(x) for x in a] == [ct.describe_case(x) for x in b]


# ---- the mbarrier state machine and the teaching helpers ---------------------------------------------
def test_mbarrier_phase_completes_only_when_count_and_tx_are_zero():
    bar = Mbarrier(2)
    assert not bar.arrive_expect_tx(100)
    assert not bar.complete_tx(100)          # one arrival still pending
    assert not bar.try_wait_parity(0)
    assert bar.arrive() and bar.try_wait_parity(0) and not bar.try_wait_parity(1)
    ev = tma.handshake_events(4096, pieces=4)
    assert ev[-1][-1] is True and ev[-2][4] == 1
    bad = tma.handshake_events(4096, pieces=4, extra_tx=16)
    assert bad[-1][-1] is False and bad[-1][3] == 16  # 16 bytes never arrive: no phase flip


def test_bank_conflicts_of_a_column_read():
    table = {(m, a): (n, s) for m, _, a, n, s in tma.bank_conflict_table("float16")}
    # 128-byte rows: a column lies in one bank group -> 32 wavefronts; swizzled -> 8 distinct chunks.
    assert table[("128B", 4)] == (32, 4)
    assert table[("128B", 16)] == (32, 4)
    assert table[("64B", 4)] == (16, 4)
    assert table[("32B", 4)] == (8, 4)
    assert wavefronts(np.arange(32) * 4, 4).wavefronts == 1


def test_cta_tiles_cover_the_matrix():
    t = TensorMap("float16", (80, 48), (32, 16))
    tiles, owner, grid = tma.cta_tiles(t)
    assert grid == (3, 3) and len(tiles) == 9 and tiles[5] == (2, 1, (64, 16))
    assert owner.shape == (48, 80) and owner[47, 79] == 8 and owner[0, 31] == 0 and owner[0, 32] == 1


def test_describe_lists_the_driver_fields():
    text = TensorMap("float16", (80, 48), (32, 16), swizzle="64B").describe()
    for f in ("tensorDataType", "CU_TENSOR_MAP_SWIZZLE_64B", "globalStrides   [160]", "1024 bytes"):
        assert f in text
    assert math.prod((16, 32)) * 2 == 1024


# ---- the validation's bookkeeping (the GPU replaced by the model) ----------------------------------
def test_validation_pins_a_fault_to_its_case_and_classifies_the_rest(monkeypatch, tmp_path):
    import json
    import tempfile
    n, faulty, wrong = 40, 13, 22
    wrong_case = ct.describe_case(ct.random_cases(n, 0)[wrong])

    def fake_run_cases(cases, block=128):  # the model's windows, one byte flipped in case `wrong`
        wins = [c.model_window() for c in cases]
        for c, w in zip(cases, wins):
            if ct.describe_case(c) == wrong_case:
                w[c.smem_offset] ^= 1
        return RunResult(wins, np.ones(len(cases), bool), None, [None] * len(cases))

    def fake_child(cmd, timeout, module=ct.THIS_MODULE):  # a child that runs in this process (its JSON line collected, not printed)
        idx = [int(x) for x in cmd[cmd.index("--indices") + 1].split(",")]
        if faulty in idx:
            return {"status": "crash", "error": "CUDARuntimeError: cudaErrorIllegalAddress"}
        lines = []
        assert ct.group_main(cmd[1:], emit=lines.append) == 0
        return json.loads(lines[-1])

    made = []

    def mkdtemp(**kw):
        made.append(real_mkdtemp(dir=tmp_path, **kw))
        return made[-1]

    real_mkdtemp = tempfile.mkdtemp
    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(ct, "launch_cases", fake_run_cases)
    monkeypatch.setattr(ct, "child_json", fake_child)
    said = []
    res = ct.validate_isolated(n, 0, say=said.append, group=16, dump=str(tmp_path / "f.npz"))
    assert sorted(res) == list(range(n))
    assert res[faulty][0] == "fault" and "IllegalAddress" in res[faulty][1]
    assert res[wrong][0] == "mismatch" and "1 bytes differ" in res[wrong][1]
    assert all(s == "exact" for k, (s, _) in res.items() if k not in (faulty, wrong))
    assert any("splitting" in s for s in said)
    assert not [s for s in said if "NOT written" in s], said  # see test_nvrtc_compile_leaves_bytes_intact
    dumped = np.load(tmp_path / "f.npz", allow_pickle=False)
    assert sorted(dumped.files) == ["case22", "descriptions"]
    c = ct.random_cases(n, 0)[wrong]
    want = c.model_window()
    want[c.smem_offset] ^= 1
    assert np.array_equal(dumped["case22"], want)  # the window the child saw, byte for byte
    assert len(made) == 1 and not os.path.exists(made[0])  # the children's folder is cleaned up


def test_saved_window_round_trips_and_appears_whole(tmp_path):
    w = background(2048)
    path = str(tmp_path / "case7.bin")
    ct.save_window(path, w)
    assert sorted(os.listdir(tmp_path)) == ["case7.bin"]  # no .part left behind
    assert os.path.getsize(path) == w.size  # raw bytes: no header that numpy could pad wrongly
    back = ct.load_window(path)
    assert back.dtype == np.uint8 and np.array_equal(back, w)


# ---- the case object: model(), check(got) ----------------------------------------------------------
def _case(swizzle="128B", smem_address=0x180, coords=(0, 2), box=(64, 8), shape=(72, 20), oob_fill="zero"):
    rng = np.random.default_rng(12)
    t = TensorMap("float16", shape, box, swizzle=swizzle, oob_fill=oob_fill)
    g = rng.integers(1, 2**15, size=(shape[1], shape[0]), dtype=np.uint16)
    return TmaLoad(g, t, coords, smem_address=smem_address)


def test_tmaload_model_is_the_smem_image():
    c = _case()
    m = c.model()
    assert m.dtype == np.uint8 and m.shape == (c.tmap.smem_footprint,)
    np.testing.assert_array_equal(m, tma_load_model(c.gmem, c.tmap, c.coords, smem_address=0x180))
    r = c.check(m)
    assert r.ok and "all 1024 bytes equal the model" in str(r)


def test_tmaload_check_names_the_box_row_and_element():
    c = _case()
    bad = c.model().copy()
    # The byte that holds byte 1 of element 9 of box row 3 (unswizzled offset 3*128 + 18 + 1).
    from bwlab.hw.swizzle import SWIZZLES
    addr = int(SWIZZLES["128B"](0x180 + 3 * 128 + 19))
    bad[addr - 0x180] ^= 0x40
    r = c.check(bad)
    text = str(r)
    assert not r.ok and r.differing == 1
    assert f"SMEM byte 0x{addr:04x}" in text and "box row 3, element 9, byte 1 of 2" in text, text
    assert "tensor element (9, 5)" in text


def test_tmaload_check_says_swizzle_mismatch():
    c = _case()
    plain = TmaLoad(c.gmem, TensorMap("float16", (72, 20), (64, 8)), c.coords, 0x180).model()
    r = c.check(plain)
    assert not r.ok and "under swizzle 'none', not '128B'" in str(r), str(r)


def test_tmaload_check_names_the_fill_and_the_gap():
    c = _case(swizzle="none", smem_address=0, coords=(16, 16), box=(64, 8))
    bad = c.model().copy()
    bad[7 * 128] = 0x55  # row 7 = tensor row 23: outside the 20-row tensor
    r = c.check(bad)
    assert "out-of-bounds fill 0x0" in str(r) and "only out-of-bounds elements differ" in str(r), str(r)
    n = _case(swizzle="128B", smem_address=0, coords=(0, 0), box=(16, 8))  # 32-byte rows, 128-byte pitch
    bad = n.model().copy()
    bad[64] = 1
    r = n.check(bad)
    assert "in the gap after box row 0" in str(r) and "leaves the rest of each swizzle span alone" in str(r), str(r)


def test_tmaload_check_on_a_wrong_size_and_on_nothing_landed():
    c = _case()
    assert "must have shape (1024,)" in str(c.check(np.zeros(512, np.uint8)))
    assert "expect_tx" in str(c.check(np.zeros(1024, np.uint8)))


def test_model_and_runner_take_the_same_arguments_in_the_same_order():
    import inspect
    from bwlab.tma import run_tma_load
    m = list(inspect.signature(tma_load_model).parameters)
    r = list(inspect.signature(run_tma_load).parameters)
    assert r[:len(m)] == m == ["gmem", "tmap", "coords", "smem_address"]
    assert list(inspect.signature(TmaLoad).parameters) == m + ["kernel"]


def test_tensor_map_takes_both_spellings_of_a_type():
    assert TensorMap("f16", (64, 8), (64, 8)).dtype == "float16"
    assert TensorMap("bf16", (64, 8), (64, 8)) == TensorMap("bfloat16", (64, 8), (64, 8))
    assert TensorMap("s8", (64, 8), (64, 8)).dtype == "int8"
    assert TensorMap("tf32", (16, 8), (16, 8)).element.tmap_enum == "CU_TENSOR_MAP_DATA_TYPE_TFLOAT32"
    with pytest.raises(TensorMapError, match=r"\[dtype\]"):
        TensorMap("e2m1", (64, 8), (64, 8))


# ---- the package's shape ---------------------------------------------------------------------------
def test_one_mbarrier_model():
    import bwlab.hw.mbarrier
    assert not hasattr(tma, "Mbarrier") and not hasattr(tma, "bank_wavefronts") and not hasattr(tma, "DTYPES")
    assert tma.model.Mbarrier is bwlab.hw.mbarrier.Mbarrier
