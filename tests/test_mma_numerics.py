"""bwlab.umma.numerics against MMA-Sim, bit for bit.

The committed vectors (tests/data/mmasim/vectors.npz, made by tests/data/mmasim/generate.py with mmasim 2.1.1)
cover every instruction the module models: wgmma f16/bf16/tf32/e4m3/e5m2 (f32 and f16 D), tcgen05 kind::f16,
tf32, f8f6f4 (all 25 pairings, f32 and f16 D), mxf8f6f4 (all 25), mxf4 and mxf4nvf4 (ue8m0 / ue4m3 scales,
blocks of 16 and 32), each over wide exponent spreads, cancellation, tiny values (subnormals, the zero
exponent), large C, edge codes (NaN, inf, subnormals, ±0, overflow) and extreme scales. With mmasim
installed, fresh vectors are drawn and compared live.
"""
import importlib.util
import pathlib
import time

import numpy as np
import pytest

from bwlab.hw.dtypes import pack_fp4, pack_fp6, scale_to_float, to_float, unpack_fp4, unpack_fp6
from bwlab.umma import model
from bwlab.umma.numerics import MmaInstr, fused_mma, mma_numerics, parse_instr
from bwlab.umma.rules import MmaRuleError

DATA = pathlib.Path(__file__).parent / "data" / "mmasim"


def _gen():
    spec = importlib.util.spec_from_file_location("mmasim_generate", DATA / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _bits(d):
    return d.view(np.uint16 if d.dtype == np.float16 else np.uint32)


def _compare(instr, a, b, c, sa, sb, want):
    got = _bits(mma_numerics(instr, a, b, c, sa, sb))
    bad = got != want
    return int(bad.sum()), got, bad


@pytest.fixture(scope="module")
def vectors():
    return np.load(DATA / "vectors.npz")


def test_committed_vectors_cover_every_instruction(vectors):
    gen = _gen()
    index = list(vectors["index"])
    instrs = {s.split("|")[0] for s in index}
    assert instrs == set(gen.INSTRS)
    kinds = {parse_instr(i).kind for i in instrs}
    assert kinds == {None, "f16", "tf32", "f8f6f4", "mxf8f6f4", "mxf4", "mxf4nvf4"}
    assert len([i for i in instrs if ".kind::f8f6f4." in i]) == 50
    assert len([i for i in instrs if ".kind::mxf8f6f4." in i]) == 25


def test_equals_mmasim_on_committed_vectors(vectors):
    index = list(vectors["index"])
    failures, total = [], 0
    for i, name in enumerate(index):
        instr, case = name.split("|")
        sa = vectors[f"{i}_sfa"] if f"{i}_sfa" in vectors.files else None
        sb = vectors[f"{i}_sfb"] if f"{i}_sfb" in vectors.files else None
        want = vectors[f"{i}_d"]
        n, got, bad = _compare(instr, vectors[f"{i}_a"], vectors[f"{i}_b"], vectors[f"{i}_c"], sa, sb, want)
        total += want.size
        if n:
            j = np.argwhere(bad)[0]
            failures.append(f"{name}: {n} of {want.size} differ, first at {tuple(j)}: "
                            f"bwlab 0x{int(got[tuple(j)]):x}, MMA-Sim 0x{int(want[tuple(j)]):x}")
    assert not failures, f"{len(failures)} cases differ:\n" + "\n".join(failures[:20])
    assert total > 300_000


def test_vectors_exercise_the_edges(vectors):
    """The committed D's hold NaN, ±inf, subnormal and zero results: the edge cases are really there."""
    index = list(vectors["index"])
    f32 = np.concatenate([vectors[f"{i}_d"].ravel() for i, s in enumerate(index)
                          if vectors[f"{i}_d"].dtype == np.uint32])
    assert (f32 == 0x7FFFFFFF).any() and (f32 == 0x7F800000).any() and (f32 == 0xFF800000).any()
    assert ((f32 & 0x7F800000) == 0).sum() > 1000 and (f32 == 0).any()


@pytest.mark.skipif(importlib.util.find_spec("mmasim") is None,
                    reason="mmasim is not installed (pip install 'bwlab[mmasim]'): the live comparison needs it")
def test_equals_mmasim_live():
    gen = _gen()
    rng = np.random.default_rng(int(time.time()))
    for instr in gen.INSTRS:
        for case, a, b, c, sa, sb in gen.cases(instr, rng):
            want = gen.mmasim_d(instr, a, b, c, sa, sb)
            n, _, _ = _compare(instr, a, b, c, sa, sb, want)
            assert n == 0, f"{instr} {case}: {n} accumulators differ from MMA-Sim"


# ------------------------------------------------------------------------------------------------
# The rules the module states, checked on values chosen by hand
# ------------------------------------------------------------------------------------------------

def _bf16(x):
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def test_alignment_cuts_to_25_bits_and_rounds_toward_zero():
    # 1 + 2^-30 (as C) + 2^-30: exact sum 1 + 2^-29 — a cut at 25 bits below 2^0 drops both small terms
    a = np.zeros((64, 16), np.uint16)
    b = np.zeros((16, 16), np.uint16)
    a[:, 0], b[:, 0] = _bf16(1.0), _bf16(2.0 ** -30)
    c = np.full((64, 16), 1.0, np.float32)
    d = mma_numerics("m64n16k16.f32.bf16.bf16", a, b, c)
    assert (d == 1.0).all()
    # the same in float64 with a round to nearest keeps the 2^-29: 1.0 rounds there too, so take a case
    # where RZ and RN differ: 1 + 3 * 2^-25 (three terms of 2^-25 survive the cut) -> RZ 1, RN 1 + 2^-23
    a[:, :3], b[:, :3] = _bf16(1.0), _bf16(2.0 ** -25)
    d = mma_numerics("m64n16k16.f32.bf16.bf16", a, b, c)
    assert (d == 1.0).all() and (np.float32(1.0) + np.float32(3 * 2.0 ** -25)) != 1.0


def test_zero_result_is_positive_and_nan_canonical():
    a = np.zeros((128, 16), np.uint16)
    b = np.zeros((16, 16), np.uint16)
    c = np.full((128, 16), -0.0, np.float32)
    d = mma_numerics("m128n16k16.kind::f16.f32.bf16.bf16", a, b, c)
    assert (d.view(np.uint32) == 0).all()
    a[0, 0], b[0, 0] = 0x7F80, 0x0000              # inf * 0 -> NaN
    d = mma_numerics("m128n16k16.kind::f16.f32.bf16.bf16", a, b, c)
    assert d.view(np.uint32)[0, 0] == 0x7FFFFFFF


def test_block_scaled_nvfp4_by_hand():
    # one row and column of ones (e2m1 code 2 = 1.0), ue4m3 scales 2 (0x40) and 0.5 (0x30): every product 1
    a = np.full((128, 64), 2, np.uint8)
    b = np.full((16, 64), 2, np.uint8)
    sfa = np.full((128, 4), 0x40, np.uint8)
    sfb = np.full((16, 4), 0x30, np.uint8)
    d = mma_numerics("m128n16k64.kind::mxf4nvf4.block16.f32.e2m1.e2m1.ue4m3", a, b,
                     np.zeros((128, 16), np.float32), sfa, sfb)
    assert (d == 64.0).all()
    assert scale_to_float(np.array([0x40, 0x30, 0x7F, 0xC0], np.uint8), "ue4m3")[[0, 1, 3]].tolist() == [2, .5, 2]


def test_hopper_fp8_keeps_13_bits():
    # 1 + 2^-14 + 2^-14 + ... : with F = 13 every 2^-14 term is cut; kind::f8f6f4 (F = 25) keeps them
    e4m3_one, e4m3_tiny = 0x38, 0x01                 # 1.0, 2^-9
    a = np.zeros((64, 32), np.uint8)
    b = np.zeros((16, 32), np.uint8)
    a[:, 0], b[:, 0] = e4m3_one, e4m3_one
    a[:, 1:17], b[:, 1:17] = e4m3_tiny, 0x30         # 2^-9 * 0.5 = 2^-10 ... sixteen of them = 2^-6
    c = np.zeros((64, 16), np.float32)
    hop = mma_numerics("m64n16k32.f32.e4m3.e4m3", a, b, c)
    assert (hop == 1 + 2.0 ** -6).all()
    a[:, 1:17], b[:, 1:17] = e4m3_tiny, 0x08          # 2^-9 * 2^-6 = 2^-15 each: below 13 bits, cut
    hop = mma_numerics("m64n16k32.f32.e4m3.e4m3", a, b, c)
    bw = mma_numerics("m128n16k32.kind::f8f6f4.f32.e4m3.e4m3", np.vstack([a, a]), b, np.zeros((128, 16), np.float32))
    assert (hop == 1.0).all() and (bw == 1 + 16 * 2.0 ** -15).all()


@pytest.mark.parametrize("instr, rule", [
    ("m64n16k16.f32.bf16.f16", "one type"),
    ("m64n16k16.f16.bf16.bf16", "f32 only"),
    ("m128n16k16.f32.f16.f16", "M is 64"),
    ("m64n12k16.f32.f16.f16", "multiple of 8"),
    ("m64n16k32.f32.f16.f16", "K = 16"),
    ("m128n16k16.kind::f16.f16.bf16.bf16", "bf16 needs f32 D"),
    ("m128n16k32.kind::f16.f32.f16.f16", "K = 16"),
    ("m128n16k32.kind::f8f6f4.f32.e4m3.s8", "no tcgen05.mma kind multiplies"),
    ("m128n16k32.kind::mxf8f6f4.f32.e4m3.e4m3", "block-scaled"),
    ("m128n16k32.kind::f8f6f4.block32.f32.e4m3.e4m3.ue8m0", "takes no scale"),
    ("m128n16k64.kind::mxf4.block16.f32.e2m1.e2m1.ue8m0", "blocks of \\[32\\]"),
    ("m128n16k64.kind::mxf4nvf4.block32.f32.e2m1.e2m1.ue4m3", "ue8m0 scale"),
    ("m64n16k32.kind::mxf8f6f4.block32.f32.e4m3.e4m3.ue8m0", "M = 128"),
    ("m128n16k64.kind::mxf4.block32.f32.e4m3.e2m1.ue8m0", "multiplies e2m1"),
    ("m128n16k64.kind::mxf4.block32.f16.e2m1.e2m1.ue8m0", "into f32"),
    ("m256n8k16.kind::f16.f32.f16.f16", "multiple of 16"),
    ("m128n16k16.kind::i4.f32.f16.f16", "kind must be one of"),
])
def test_illegal_instructions_name_the_rule(instr, rule):
    with pytest.raises(MmaRuleError, match=rule) as e:
        parse_instr(instr)
    assert "PTX ISA" in str(e.value)


def test_bad_operands_are_refused():
    ins = "m128n16k16.kind::f16.f32.bf16.bf16"
    with pytest.raises(ValueError, match="A must be 128 x 16"):
        mma_numerics(ins, np.zeros((64, 16), np.uint16), np.zeros((16, 16), np.uint16), np.zeros((128, 16), np.float32))
    with pytest.raises(ValueError, match="bf16 codes as uint16"):
        mma_numerics(ins, np.zeros((128, 16), np.float32), np.zeros((16, 16), np.uint16),
                     np.zeros((128, 16), np.float32))
    with pytest.raises(ValueError, match="outside 0..65535"):
        mma_numerics(ins, np.full((128, 16), 1 << 16), np.zeros((16, 16), np.uint16), np.zeros((128, 16), np.float32))
    with pytest.raises(ValueError, match="cannot hold exactly"):
        mma_numerics(ins, np.zeros((128, 16), np.uint16), np.zeros((16, 16), np.uint16), np.full((128, 16), 0.1))
    # other integer containers and exactly representable float64 C are the same instruction
    d0 = mma_numerics(ins, np.full((128, 16), 0x3F80, np.uint16), np.full((16, 16), 0x4000, np.uint16),
                      np.full((128, 16), 0.5, np.float32))
    d1 = mma_numerics(ins, np.full((128, 16), 0x3F80), np.full((16, 16), 0x4000), np.full((128, 16), 0.5))
    assert (d0 == 32.5).all() and (d1.view(np.uint32) == d0.view(np.uint32)).all()
    with pytest.raises(ValueError, match="positive multiple of the instruction's K = 16"):
        mma_numerics(ins, np.zeros((128, 24), np.uint16), np.zeros((16, 24), np.uint16), np.zeros((128, 16), np.float32))
    with pytest.raises(ValueError, match="block-scaled: pass sf_a"):
        mma_numerics("m128n16k64.kind::mxf4.block32.f32.e2m1.e2m1.ue8m0", np.zeros((128, 64), np.uint8),
                     np.zeros((16, 64), np.uint8), np.zeros((128, 16), np.float32))
    with pytest.raises(ValueError, match="e2m1 is a 4-bit type"):
        mma_numerics("m128n16k32.kind::f8f6f4.f32.e2m1.e2m1", np.full((128, 32), 16, np.uint8),
                     np.zeros((16, 32), np.uint8), np.zeros((128, 16), np.float32))


def test_a_large_mma_is_fast():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 0x7F00, (128, 64)).astype(np.uint16)
    b = rng.integers(0, 0x7F00, (256, 64)).astype(np.uint16)
    t = time.perf_counter()
    mma_numerics("m128n256k16.kind::f16.f32.bf16.bf16", a, b, np.zeros((128, 256), np.float32))
    assert time.perf_counter() - t < 1.0


def test_packing_round_trips():
    rng = np.random.default_rng(0)
    c4 = rng.integers(0, 16, (4, 64)).astype(np.uint8)
    c6 = rng.integers(0, 64, (4, 64)).astype(np.uint8)
    assert (unpack_fp4(pack_fp4(c4)) == c4).all() and pack_fp4(c4).shape == (4, 32)
    assert (unpack_fp6(pack_fp6(c6)) == c6).all() and pack_fp6(c6).shape == (4, 48)
    assert pack_fp4(np.array([0x1, 0xF], np.uint8)).tolist() == [0xF1]
    assert pack_fp6(np.array([0x3F, 0, 0, 0], np.uint8)).tolist() == [0x3F, 0, 0]
    with pytest.raises(ValueError, match="4-bit codes"):
        pack_fp4(np.array([16, 0], np.uint8))
    with pytest.raises(ValueError, match="ue4m3 is unsigned"):
        to_float(np.array([0x80], np.uint8), "ue4m3")


def test_models_use_the_shared_core():
    """wgmma_block_fma and tcgen05_mma are users of fused_mma: same bits on spread bf16 operands."""
    rng = np.random.default_rng(3)
    codes_a = rng.integers(0x3000, 0x5000, (64, 16)).astype(np.uint16) | (rng.integers(0, 2, (64, 16)) << 15).astype(np.uint16)
    codes_b = rng.integers(0x3000, 0x5000, (32, 16)).astype(np.uint16)
    c = rng.standard_normal((64, 32)).astype(np.float32)
    want = mma_numerics("m64n32k16.f32.bf16.bf16", codes_a, codes_b, c)
    got = model.wgmma_block_fma(to_float(codes_a, "bf16"), to_float(codes_b, "bf16"), c)
    assert (got.view(np.uint32) == want.view(np.uint32)).all()
    ins = parse_instr("m64n32k16.kind::f16.f32.bf16.bf16")
    assert isinstance(ins, MmaInstr)
    got = fused_mma(ins, to_float(codes_a, "bf16"), to_float(codes_b, "bf16"), c)
    assert (got.view(np.uint32) == want.view(np.uint32)).all()


# ------------------------------------------------------------------------------------------------
# Through the model's TMEM path and the emulated sm_100a harness kernel
# ------------------------------------------------------------------------------------------------

def _spread_case(ab, d, M, N, K, spread, accumulate=False, **kw):
    from bwlab import umma
    from bwlab.hw.dtypes import from_float

    class SpreadCase(umma.UmmaCase):
        """Operands spread over 2^±spread: sums that are not exact, so the rounding shows."""

        def values(self):
            rng = np.random.default_rng(self.seed)

            def draw(shape, t):
                v = np.ldexp(1 + rng.random(shape), rng.integers(-spread, spread + 1, shape))
                bits = from_float(v * rng.choice([-1.0, 1.0], shape), t)
                return bits.view(np.float16).astype(np.float64) if t == "f16" else to_float(bits, t)
            d0 = draw((self.M, self.N), self.d) if self.accumulate else np.zeros((self.M, self.N))
            return draw((self.M, self.K), self.ab), draw((self.N, self.K), self.ab), d0

    return SpreadCase(ab, d, M, N, K, accumulate=accumulate, **kw)


SPREAD_CASES = [("bf16", "f32", 128, 64, 64, 12, False), ("f16", "f32", 64, 32, 64, 12, True),
                ("f16", "f16", 128, 16, 64, 3, True), ("tf32", "f32", 128, 32, 32, 12, True)]


def _expected(case):
    from bwlab.hw.dtypes import from_float
    a, b, d0 = case.values()
    ki = {"tf32": 8}.get(case.ab, 16)
    c = d0.astype(np.float16 if case.d == "f16" else np.float32)
    instr = f"m{case.M}n{case.N}k{ki}.kind::{case.kind}.{case.d}.{case.ab}.{case.ab}"
    return mma_numerics(instr, from_float(a, case.ab), from_float(b, case.ab), c)


@pytest.mark.parametrize("spec", SPREAD_CASES, ids=lambda s: "-".join(map(str, s[:5])))
def test_tcgen05_model_equals_mma_numerics_on_spread_operands(spec):
    case = _spread_case(*spec)
    got = case.d_from_tmem(case.model())
    want = _expected(case)
    ft = np.float16 if case.d == "f16" else np.float32
    assert (got.astype(ft).view(want.dtype.str.replace("f", "u")) == _bits(want)).all()
    # and the operands really are spread: the float64 sum rounded once differs somewhere
    a, b, d0 = case.values()
    assert (((a @ b.T) + d0).astype(ft) != want).any()


@pytest.mark.emulated
@pytest.mark.parametrize("spec", SPREAD_CASES[:2], ids=lambda s: "-".join(map(str, s[:5])))
def test_emulated_harness_equals_mma_numerics_on_spread_operands(spec, monkeypatch):
    """cuda_src/umma_sm100.cu in the PTX emulator (no GPU): D in TMEM equals mma_numerics bit for bit."""
    from bwlab import umma
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")
    case = _spread_case(*spec)
    tmem = umma.run_umma(case)
    got = case.d_from_tmem(tmem).astype(np.float32)
    assert (got.view(np.uint32) == _bits(_expected(case))).all()


def test_wgmma_model_reads_fp8_operands_like_the_probe():
    """model.wgmma_mma_async with e4m3 x e5m2 from the probe kernel's SMEM layout (K-major, no swizzle, LBO 128,
    SBO 256; two chained k32 instructions) equals mma_numerics on the same codes."""
    from bwlab.checks.wgmma_fp8 import STEP, make_set, smem_image
    from bwlab.umma.descriptors import make_smem_desc
    k_steps, a, b, c = make_set("chained_k64", "e4m3", "e5m2", np.random.default_rng(5))
    img = np.concatenate([smem_image(a[0], k_steps), smem_image(b[0], k_steps)])
    boff = k_steps * STEP
    ad = [make_smem_desc(s * STEP, 128, 256, "none", arch="sm90") for s in range(k_steps)]
    bd = [make_smem_desc(boff + s * STEP, 128, 256, "none", arch="sm90") for s in range(k_steps)]
    d = model.wgmma_mma_async(img, ad, bd, 64, "e4m3", d_init=c[0], accumulate=True, b_dtype="e5m2")
    want = mma_numerics("m64n64k32.f32.e4m3.e5m2", a[0], b[0], c[0])
    assert (d.view(np.uint32) == want.view(np.uint32)).all()
    with pytest.raises(ValueError, match="K-major only"):
        model.wgmma_mma_async(img, ad, bd, 64, "e4m3", "MN", "K")
    with pytest.raises(MmaRuleError, match="one type"):
        model.wgmma_mma_async(img, ad, bd, 64, "e4m3", b_dtype="bf16")
