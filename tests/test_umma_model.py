"""Stage 3: the tcgen05.mma and wgmma models, executed from raw SMEM bytes and descriptors, against
plain NumPy (A @ B^T computed from the values, never through the layouts)."""
import numpy as np
import pytest

from bwlab import umma
from bwlab.hw.dtypes import from_float
from bwlab.hw.mbarrier import Mbarrier
from bwlab.hw.swizzle import MODES
from bwlab.hw.tmem import encode_address

LAYOUTS = [(m, s) for m in umma.MAJORS for s in MODES]


def _stage(cta, dtype, major, swizzle, values, base):
    lay = umma.canonical_layout(major, swizzle, dtype, values.shape, base)
    lay.store(cta.smem, from_float(values, dtype))
    return lay


def _mma_case(ab, d, M, N, a_lay, b_lay, accumulate=False, negate=(False, False), seed=1, d_tmem=0):
    """Stage A (M x K) and B (N x K) for one instruction, run the model, return (D from TMEM, NumPy D)."""
    rng = np.random.default_rng(seed)
    ki = umma.instr_k(ab)
    k = max(ki, umma.atom_shape(*a_lay, ab)[1], umma.atom_shape(*b_lay, ab)[1])
    step, lim = (0.25, 8) if d == "f32" else (0.5, 3)
    a = rng.integers(-lim, lim + 1, (M, k)) * step
    b = rng.integers(-lim, lim + 1, (N, k)) * step
    cta = umma.CtaState()
    la = _stage(cta, ab, *a_lay, a, 1024)
    lb = _stage(cta, ab, *b_lay, b, 1024 + (la.nbytes + 1023) // 1024 * 1024)
    lay = umma.d_tmem_layout(M, N)
    lane0, col0 = d_tmem >> 16, d_tmem & 0xFFFF
    d0 = rng.integers(-64, 65, (M, N)) / 16 if accumulate else np.zeros((M, N))
    cta.tmem[lane0 + lay.lane, col0 + lay.column] = umma.words_from_d(d0, d)
    idesc = umma.make_instr_desc(ab, ab, d, M, N, a_lay[0], b_lay[0], *negate)
    kb = 0
    ad = umma.smem_desc_for_tile(a_lay[0], a_lay[1], ab, (M, k), kb, la.base_address)
    bd = umma.smem_desc_for_tile(b_lay[0], b_lay[1], ab, (N, k), kb, lb.base_address)
    umma.tcgen05_mma(cta, d_tmem, ad, bd, idesc, accumulate, umma.kind_of(ab, ab))
    got = umma.d_from_words(cta.tmem[lane0 + lay.lane, col0 + lay.column], d)
    sa, sb = (-1 if negate[0] else 1), (-1 if negate[1] else 1)
    return got, d0 + (sa * a[:, :ki]) @ (sb * b[:, :ki]).T, cta


@pytest.mark.parametrize("a_lay", LAYOUTS, ids=lambda x: "A" + "-".join(x))
def test_every_A_layout(a_lay):
    got, want, _ = _mma_case("f16", "f32", 128, 64, a_lay, ("K", "128B"))
    assert np.array_equal(got, want)


@pytest.mark.parametrize("b_lay", LAYOUTS, ids=lambda x: "B" + "-".join(x))
def test_every_B_layout(b_lay):
    got, want, _ = _mma_case("bf16", "f32", 64, 128, ("MN", "64B"), b_lay)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("ab,d,M,N,a_lay,b_lay", [
    ("tf32", "f32", 128, 32, ("K", "128B"), ("MN", "128B_base32B")),
    ("tf32", "f32", 64, 8, ("MN", "128B_base32B"), ("K", "32B")),
    ("tf32", "f32", 128, 64, ("MN", "128B_base32B"), ("MN", "128B_base32B")),
    ("f16", "f16", 128, 256, ("K", "64B"), ("K", "none")),
    ("f16", "f16", 64, 24, ("MN", "32B"), ("K", "128B")),
])
def test_kinds_and_accumulators(ab, d, M, N, a_lay, b_lay):
    got, want, _ = _mma_case(ab, d, M, N, a_lay, b_lay)
    assert np.array_equal(got, want)


def test_accumulate_negate_and_column_offset():
    got, want, cta = _mma_case("f16", "f32", 128, 16, ("K", "128B"), ("MN", "32B"), accumulate=True,
                               negate=(True, False), d_tmem=encode_address(0, 96))
    assert np.array_equal(got, want)
    assert not cta.tmem[:, :96].any() and not cta.tmem[:, 112:].any()


def test_m64_uses_the_lower_or_upper_half_of_each_warp_quarter():
    got, want, cta = _mma_case("f16", "f32", 64, 8, ("K", "none"), ("K", "none"), d_tmem=encode_address(16, 0))
    assert np.array_equal(got, want)
    used = np.flatnonzero(cta.tmem[:, :8].any(axis=1))
    assert set(used) <= {l for q in range(4) for l in range(32 * q + 16, 32 * q + 32)}


def test_tf32_ignores_the_low_13_mantissa_bits():
    raw = np.array([0x3F800000 | 0x1FFF], dtype=np.uint32)        # 1.0 with junk in the low bits
    assert umma.operand_values(raw, "tf32")[0] == 1.0


@pytest.mark.parametrize("M", [256, 128])
def test_cta_pair(M):
    # cta_group::2: CTA v holds rows [v*M/2, (v+1)*M/2) of A and columns [v*N/2, ...) of B, at the same
    # SMEM addresses; D comes back split by rows (layout A for M = 256, layout B for M = 128).
    N, k = 64, 64
    rng = np.random.default_rng(7)
    a = rng.integers(-8, 9, (M, k)) / 4
    b = rng.integers(-8, 9, (N, k)) / 4
    pair = [umma.CtaState(), umma.CtaState()]
    for v, cta in enumerate(pair):
        _stage(cta, "f16", "K", "128B", a[v * M // 2:(v + 1) * M // 2], 0)
        _stage(cta, "f16", "MN", "64B", b[v * N // 2:(v + 1) * N // 2], 32768)
    idesc = umma.make_instr_desc("f16", "f16", "f32", M, N, "K", "MN", cta_group=2)
    d = np.zeros((M, N))
    lay = umma.d_tmem_layout(M, N, 2)
    bars = [Mbarrier(), Mbarrier()]
    for kb in range(k // 16):
        ad = umma.smem_desc_for_tile("K", "128B", "f16", (M // 2, k), kb, 0)
        bd = umma.smem_desc_for_tile("MN", "64B", "f16", (N // 2, k), kb, 32768)
        umma.tcgen05_mma(pair, 0, ad, bd, idesc, kb > 0, cta_group=2)
    umma.tcgen05_commit(pair[0], *bars)
    assert all(bar.try_wait_parity(0) for bar in bars)
    for v, cta in enumerate(pair):
        sel = lay.cta == v
        d[sel] = umma.d_from_words(cta.tmem[lay.lane[sel], lay.column[sel]], "f32")
    assert np.array_equal(d, a @ b.T)
    with pytest.raises(ValueError, match="runs on 2 CTA"):
        umma.tcgen05_mma(pair[0], 0, ad, bd, idesc, False, cta_group=2)


def test_d_tmem_layouts():
    d = umma.d_tmem_layout(128, 256)
    assert d.name == "D" and d.lane[77, 5] == 77 and d.column[77, 5] == 5 and d.columns == 256
    f = umma.d_tmem_layout(64, 32)
    assert f.name == "F" and [f.lane[m, 0] for m in (0, 15, 16, 31, 63)] == [0, 15, 32, 47, 111]
    a = umma.d_tmem_layout(256, 64, 2)
    assert a.name == "A" and (a.cta[200, 3], a.lane[200, 3], a.column[200, 3]) == (1, 72, 3)
    b = umma.d_tmem_layout(128, 64, 2)
    assert b.name == "B" and b.columns == 32
    assert (b.cta[70, 40], b.lane[70, 40], b.column[70, 40]) == (1, 6 + 64, 8)
    for lay in (d, f, a, b):   # no two elements share a cell
        cells = lay.cta * 10**6 + lay.lane * 1000 + lay.column
        assert np.unique(cells).size == lay.M * lay.N


def test_mbarrier_model_parity():
    bar = Mbarrier(2)
    assert not bar.try_wait_parity(0)
    bar.arrive()
    assert not bar.try_wait_parity(0)
    bar.arrive()
    assert bar.try_wait_parity(0) and not bar.try_wait_parity(1)
    bar.arrive(2)
    assert bar.try_wait_parity(1) and not bar.try_wait_parity(0)
    with pytest.raises(ValueError, match="expects"):
        bar.arrive(3)


def test_model_rules():
    cta = umma.CtaState()
    ad = umma.smem_desc_for_tile("K", "128B", "f16", (128, 64), 0)
    idesc = umma.make_instr_desc("f16", "f16", "f32", 128, 64)
    with pytest.raises(ValueError, match="lane must be 0"):
        umma.tcgen05_mma(cta, encode_address(32, 0), ad, ad, idesc, False)
    with pytest.raises(ValueError, match="TMEM has 512"):
        umma.tcgen05_mma(cta, encode_address(0, 480), ad, ad, idesc, False)
    with pytest.raises(ValueError, match="kind::f16 and kind::tf32"):
        umma.tcgen05_mma(cta, 0, ad, ad, umma.make_instr_desc("s8", "s8", "s32", 128, 64), False, kind="i8")
    with pytest.raises(ValueError, match="0b001"):
        umma.tcgen05_mma(cta, 0, umma.gmma_desc_for_tile("K", "128B", "f16", (128, 64), 0), ad, idesc, False)


def test_umma_case_model_matches_numpy():
    for case in (umma.UmmaCase("f16", "f32", 128, 256, 64),
                 umma.UmmaCase("bf16", "f32", 64, 48, 32, "MN", "32B", "MN", "none", 2048, 16384, accumulate=True),
                 umma.UmmaCase("tf32", "f32", 128, 64, 32, "K", "64B", "MN", "128B_base32B", 0, 65536),
                 umma.UmmaCase("tf32", "f32", 64, 96, 16, "MN", "128B_base32B", "K", "none", 512, 8192),
                 umma.UmmaCase("f16", "f16", 128, 32, 48, "K", "none", "K", "32B", 16, 40960, accumulate=True)):
        tm = case.model()
        assert np.array_equal(case.d_from_tmem(tm), case.reference()), case


def test_wgmma_fragment_layout():
    t, r = umma.wgmma_d_fragment(64)
    # PTX ISA wgmma D fragment figure: thread 0 holds (0,0) (0,1) (8,0) (8,1) (0,8) ...
    assert [(t[m, n], r[m, n]) for m, n in ((0, 0), (0, 1), (8, 0), (8, 1), (0, 8), (0, 2), (1, 0), (16, 0), (63, 63))] == \
        [(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 0), (4, 0), (32, 0), (127, 31)]
    assert np.unique(t * 1000 + r).size == 64 * 64 and r.max() == 31


def test_wgmma_cases_cover_every_layout_and_the_model_reproduces_numpy():
    regular, exploratory = umma.wgmma_cases()
    combos = {(c.dtype, c.a_major, c.a_swizzle, c.b_major, c.b_swizzle) for c in regular}
    assert len(combos) == 2 * 8 * 8
    assert {c.N for c in regular} == set(umma.WGMMA_NS)
    assert {c.k_blocks for c in regular} >= {1, 2, 4, 8}
    assert all(c.a_base > 0 and c.b_base > 0 for c in regular)
    for c in regular:
        assert np.array_equal(c.model(), c.reference()), c.label()
    assert any(c.a_base_offset for c in exploratory)


def test_wgmma_case_rules():
    with pytest.raises(ValueError, match="instantiates N"):
        umma.WgmmaCase("f16", 24, 64, "K", "none", "K", "none")
    with pytest.raises(ValueError, match="swizzle atoms"):
        umma.WgmmaCase("f16", 32, 64, "K", "none", "MN", "128B")
    with pytest.raises(ValueError, match="overlaps"):
        umma.WgmmaCase("f16", 64, 64, "K", "none", "K", "none", a_base=0, b_base=4096)


# ---- the case interface: model() / check() / show() ------------------------------------------------

def test_umma_case_interface():
    case = umma.UmmaCase("f16", "f32", 64, 32, 32, "K", "32B", "MN", "none", 2048, 16384)
    tm = case.model()
    assert tm.dtype == np.uint32 and tm.shape == (128, case.tmem_columns) == (128, 32)
    # D in TMEM equals A @ B^T computed by NumPy from the case's values (exact on their grid), an
    # independent path: no layout, descriptor or TMEM addressing involved
    a, b, d0 = case.values()
    assert not np.any(d0) and np.any(a @ b.T)
    assert np.array_equal(case.d_from_tmem(tm), a @ b.T)
    assert np.array_equal(case.d_from_tmem(tm), case.reference())
    ok = case.check(tm)
    assert ok and ok.compared == 64 * 32 and "equal the model" in str(ok)
    # cells outside D (layout F leaves lanes 16-31 of each quarter free) are not compared
    junk = tm.copy()
    junk[16:32] = 0xDEADBEEF
    assert case.check(junk).ok
    # one wrong word: the report names D's row and column, the TMEM lane and column, the layout
    bad = tm.copy()
    bad[33, 5] ^= 1                               # lane 33 = row 17 in layout F (16 rows per quarter)
    r = case.check(bad)
    assert not r and r.differing == 1
    assert "D[m=17][n=5] (TMEM lane 33, column 5, layout F)" in str(r)
    # a whole column of D wrong points at B
    bad = tm.copy()
    bad[:, 7] ^= 1
    assert "only D columns 7 are wrong" in str(case.check(bad)) and "look at B (MN-major, none" in str(case.check(bad))
    # a whole row wrong points at A
    bad = tm.copy()
    bad[0, :] ^= 1
    assert "only D rows 0 are wrong" in str(case.check(bad)) and "look at A (K-major, 32B" in str(case.check(bad))


def test_wgmma_case_interface():
    case = umma.WgmmaCase("bf16", 32, 64, "MN", "64B", "K", "128B", 1024, 16384, accumulate=True)
    d = case.model()
    assert d.dtype == np.float32 and d.shape == (64, 32)
    a, b, d0 = case.values()                      # D = D0 + A @ B^T by NumPy, exact on the values' grid
    assert np.any(d0) and np.array_equal(d, d0 + a @ b.T) and case.check(d)
    bad = d.copy()
    bad[9, 3] += 1
    r = case.check(bad)
    assert not r and r.differing == 1
    t, reg = umma.wgmma_d_fragment(32)
    assert (t[9, 3], reg[9, 3]) == (4 * 1 + 1, 3)
    assert "D[m=9][n=3] (thread 5 = warp 0 lane 5, register 3)" in str(r)


def test_case_show_draws_the_operands(monkeypatch):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = umma.UmmaCase("f16", "f32", 128, 64, 64).show()
    assert len(fig.axes) >= 3 and fig.axes[0].get_title().startswith("A:")
    plt.close("all")


def test_one_mbarrier_one_tmem_model():
    # The stage keeps no copy of a shared mechanism (bwlab.hw): no MbarrierModel, no TMEM helpers,
    # no dtype or swizzle tables of its own.
    for name in ("MbarrierModel", "tmem_address", "new_tmem", "TMEM_LANES", "encode_values",
                 "decode_values", "SWIZZLE_NAMES", "SWIZZLE_WIDTH", "OPERAND_DTYPES", "_round_up"):
        assert not hasattr(umma, name), name
    from pathlib import Path
    pkg = Path(umma.__file__).parent
    assert not (pkg.parent / "canonical.py").exists() and (pkg / "canonical.py").exists()


# ---- issue 11: the tf32 transpose rule and the 128B-with-32B-atomicity layout ---------------------

@pytest.mark.parametrize("swizzle", MODES)
@pytest.mark.parametrize("operand", ["A", "B"])
def test_tf32_mn_major_needs_128B_base32B(swizzle, operand):
    lays = {"a_major": "K", "a_swizzle": "128B", "b_major": "K", "b_swizzle": "128B"}
    lays[f"{operand.lower()}_major"] = "MN"
    lays[f"{operand.lower()}_swizzle"] = swizzle
    with pytest.raises(umma.MmaRuleError) as e:
        umma.UmmaCase("tf32", "f32", 128, 64, 32, **lays)
    msg = str(e.value)
    assert f"kind::tf32 {operand} MN-major takes the SMEM layouts ['128B_base32B'], got {swizzle}" in msg
    assert "Transpose and Negate" in msg and "32B atomicity" in msg


def test_the_model_refuses_an_illegal_tf32_read():
    # The rule is enforced where the tensor core would read, too: descriptor + idesc.
    cta = umma.CtaState()
    idesc = umma.make_instr_desc("tf32", "tf32", "f32", 128, 64, "K", "MN")
    ad = umma.smem_desc_for_tile("K", "128B", "tf32", (128, 32), 0)
    bd = umma.smem_desc_for_tile("MN", "128B", "tf32", (64, 32), 0, 32768)
    with pytest.raises(umma.MmaRuleError, match="32B atomicity"):
        umma.tcgen05_mma(cta, 0, ad, bd, idesc, False, kind="tf32")


def test_128B_base32B_is_cutes_swizzle_2_5_2():
    # CuTe Layout_MN_SW128_32B_Atom<tf32>: Swizzle<2,5,2> o (32,4):(1,32) elements: 128-byte rows,
    # 4 rows per 512-byte atom; on byte addresses bits 5-6 ^= bits 7-8.
    lay = umma.canonical_layout("MN", "128B_base32B", "tf32", (32, 4), 2048)
    mn, k = np.meshgrid(np.arange(32), np.arange(4), indexing="ij")
    plain = 2048 + k * 128 + mn * 4
    assert np.array_equal(lay.address(mn, k), plain ^ ((plain & 0x180) >> 2))
    assert umma.atom_shape("MN", "128B_base32B", "tf32") == (32, 4)
    assert lay.atom_bytes == 512
    with pytest.raises(ValueError, match="MN-major layout"):
        umma.atom_shape("K", "128B_base32B", "tf32")
    # the descriptor: layout code 1, LBO = next atom along MN, SBO = next 4-row group along K
    d = umma.tile_desc("MN", "128B_base32B", "tf32", (64, 16), 1, 1024)
    assert (d.start_address, d.leading_byte_offset, d.stride_byte_offset, d.layout_type) == (3072, 512, 1024, 1)
    assert umma.smem_desc_for_tile("MN", "128B_base32B", "tf32", (64, 16), 1, 1024) >> 61 == 1


def test_f16_accumulator_compares_only_the_low_16_bits():
    # PTX "Packing formats of D": a 16-bit D element sits in the low half of its 32-bit TMEM word;
    # the upper half is not defined, so a check must not compare it.
    case = umma.UmmaCase("f16", "f16", 128, 16, 64, "K", "none", "K", "64B", 16, 40960)
    tm = case.model()
    assert case.check(tm | np.uint32(0xABCD0000)).ok
    bad = tm.copy()
    bad[3, 2] ^= 1
    r = case.check(bad)
    assert not r and "D[m=3][n=2]" in str(r) and "low 16 bits" in str(r)
