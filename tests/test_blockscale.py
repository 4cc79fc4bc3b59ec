"""The block-scaled data path (bwlab.umma.blockscale): the instruction descriptor of kind::mxf8f6f4 / mxf4 /
mxf4nvf4 and its rules, CUTLASS's scale-factor layouts, tcgen05.cp into TMEM, the scales' placement rule, the
MMA against mma_numerics; and cuda_src/teach_blockscaled.cu in the emulator, bit for bit with the model, with
the mistakes the emulator names. No GPU (and no sm_100 GPU has run any of it)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from bwlab.emu import EmuError, ProxyFenceMissing
from bwlab.hw.tmem import TmemError, new_image
from bwlab.source import source_text
from bwlab.umma import blockscale as bs
from bwlab.umma import scales as sc
from bwlab.umma.blockscaled_case import BlockScaledCase, dequantize, quantize, run_teach_blockscaled
from bwlab.umma.canonical import canonical_layout
from bwlab.umma.descriptors import make_smem_desc, smem_desc_for_tile
from bwlab.umma.model import CtaState
from bwlab.umma.numerics import mma_numerics
from bwlab.umma.rules import MmaRuleError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# ---- the instruction descriptor ----------------------------------------------------------------------

def _legal():
    for kind, bk in bs.BLOCK_KINDS.items():
        for vec, stypes in bk.vecs.items():
            for st in stypes:
                for a in bk.types:
                    for sid in bs.SF_IDS[vec]:
                        yield kind, a, list(bk.types)[-1], st, vec, sid


@pytest.mark.parametrize("kind,a,b,st,vec,sid", list(_legal()))
def test_every_legal_idesc_decodes_to_its_fields(kind, a, b, st, vec, sid):
    for N in (8, 136, 256):
        idesc = bs.make_block_scaled_idesc(kind, a, b, st, N, scale_vec=vec, sf_a_id=sid, sf_b_id=(3 - sid) if
                                           vec == "1X" else sid, negate_a=True)
        f = bs.decode_block_scaled_idesc(idesc, kind)
        assert (f.a_type, f.b_type, f.scale_type, f.M, f.N, f.sf_a_id, f.negate_a, f.negate_b) == \
            (a, b, st, 128, N, sid, True, False)


def test_idesc_bits_are_the_isa_tables():
    # Table 46: MXFP8 e4m3 x e4m3, N = 128, ue8m0 (bit 23), M = 128 (M >> 7 = 1 at bits 27-28)
    assert bs.make_block_scaled_idesc("mxf8f6f4", "e4m3", "e4m3", "ue8m0", 128) == (16 << 17) | (1 << 23) | (1 << 27)
    # Table 47: NVFP4 e2m1 (code 1) x e2m1, ue4m3 (bit 23 clear), N = 64
    assert bs.make_block_scaled_idesc("mxf4nvf4", "e2m1", "e2m1", "ue4m3", 64) == \
        (1 << 7) | (1 << 10) | (8 << 17) | (1 << 27)
    # scale factor IDs: B at bits 4-5, A at 29-30
    idesc = bs.make_block_scaled_idesc("mxf8f6f4", "e5m2", "e2m1", "ue8m0", 8, sf_a_id=3, sf_b_id=2)
    assert (idesc >> 29) & 3 == 3 and (idesc >> 4) & 3 == 2 and (idesc >> 7) & 7 == 1 and (idesc >> 10) & 7 == 5


ILLEGAL = [
    (dict(kind="mxf8f6f4", st="ue4m3"), r"takes ue8m0 scale factors, got 'ue4m3' \(ue4m3 scales need .scale_vec::4X", "Tables 54 and 55"),
    (dict(kind="mxf4", a="e2m1", b="e2m1", vec="4X"), r"kind::mxf4 takes .scale_vec::2X", "Tables 54 and 55"),
    (dict(kind="mxf4nvf4", a="e2m1", b="e2m1", st="ue4m3", vec="2X"), r"with .scale_vec::2X takes ue8m0", "Tables 54"),
    (dict(kind="mxf4nvf4", a="e2m1", b="e2m1", st="ue8m0", vec=None), r"needs .scale_vec::2X / ::4X .*no default", "Block Scaling"),
    (dict(kind="mxf4nvf4", a="e2m1", b="e2m1", st="ue8m0", vec="2X", sf_a_id=1), r"A ID with .scale_vec::2X is one of \(0, 2\)", "Scale Factor A ID"),
    (dict(kind="mxf4nvf4", a="e2m1", b="e2m1", st="ue4m3", vec="4X", sf_b_id=2), r"B ID with .scale_vec::4X is one of \(0,\)", "Scale Factor A ID"),
    (dict(M=64), r"takes M = 128, got M = 64", "Table 39"),
    (dict(N=12), r"N a multiple of 8 in \[8, 256\], got N = 12", "Table 39"),
    (dict(N=264), r"got N = 264", "Table 39"),
    (dict(kind="mxf4", a="e2m1", b="e2m1", vec="2X", a_major="MN"), r"kind::mxf4 takes no transpose", "take no transpose"),
    (dict(a="e2m1", a_major="MN"), r"A of type e2m1 MN-major", "Instruction descriptor"),
    (dict(b="s8"), r"takes A/B of \['e4m3', 'e5m2', 'e2m3', 'e3m2', 'e2m1'\], got B = 's8'", "Table 46"),
    (dict(kind="mxf4", a="e4m3", b="e2m1", vec="2X"), r"got A = 'e4m3'", "Table 47"),
]


@pytest.mark.parametrize("kw,match,section", ILLEGAL, ids=[m for _, m, _ in ILLEGAL])
def test_illegal_combinations_name_the_rule(kw, match, section):
    args = dict(kind="mxf8f6f4", a="e4m3", b="e4m3", st="ue8m0", vec="1X", M=128, N=64, sf_a_id=0, sf_b_id=0,
                a_major="K", b_major="K")
    args.update(kw)
    with pytest.raises(MmaRuleError, match=match) as e:
        bs.make_block_scaled_idesc(args["kind"], args["a"], args["b"], args["st"], args["N"], args["M"],
                                   args["vec"], args["sf_a_id"], args["sf_b_id"], args["a_major"], args["b_major"])
    assert section in e.value.rule


@pytest.mark.parametrize("kind,idesc,match", [
    ("mxf8f6f4", (1 << 27) | (8 << 17) | (1 << 23) | 1, r"bit 0 .*reserved"),
    ("mxf8f6f4", (1 << 27) | (8 << 17) | (1 << 23) | (1 << 25), r"bit 25 .*reserved"),
    ("mxf8f6f4", (1 << 27) | (8 << 17) | (1 << 23) | (1 << 31), r"bit 31 .*reserved"),
    ("mxf4", (1 << 27) | (8 << 17) | (1 << 23) | (1 << 7) | (1 << 10) | (1 << 12), r"bit 12 .*reserved"),
    ("mxf4nvf4", (1 << 27) | (8 << 17) | (1 << 7) | (1 << 10) | (1 << 31), r"K = 96"),
    ("mxf8f6f4", (1 << 27) | (8 << 17) | (1 << 23) | 4, r"sparse"),
    ("mxf8f6f4", (1 << 27) | (8 << 17) | (1 << 23) | (2 << 7), r"A format code 2 is not a kind::mxf8f6f4 type"),
])
def test_decoding_refuses_reserved_and_unmodelled_bits(kind, idesc, match):
    with pytest.raises(MmaRuleError, match=match):
        bs.decode_block_scaled_idesc(idesc, kind)


@pytest.mark.parametrize("q,vec", [(None, "1X"), ("block32", "1X"), ("scale_vec::1X", "1X")])
def test_scale_vec_aliases(q, vec):
    assert bs.scale_vec_of("mxf8f6f4", q) == vec
    assert bs.scale_vec_of("mxf4nvf4", "block16") == "4X" and bs.scale_vec_of("mxf4nvf4", "block32") == "2X"
    assert bs.scale_vec_of("mxf4", None) == "2X"


# ---- scale factors in GMEM, SMEM and TMEM ---------------------------------------------------------------

def test_the_cutlass_atom():
    # row r, scale j at 16 * (r % 32) + 4 * (r // 32) + j: one word per row, rows r, r+32, r+64, r+96 in 16 bytes
    assert sc.sf_atom_offset(0, 0) == 0 and sc.sf_atom_offset(33, 2) == 22 and sc.sf_atom_offset(127, 3) == 511
    off = sc.sf_atom_offset(*np.meshgrid(np.arange(128), np.arange(4), indexing="ij"))
    assert sorted(off.ravel()) == list(range(512))


@pytest.mark.parametrize("MN,n", [(128, 4), (256, 8), (136, 6), (64, 2)])
def test_gmem_and_smem_layouts_are_bijections_and_round_trip(MN, n):
    rng = np.random.default_rng(MN + n)
    sf = rng.integers(0, 256, (MN, n)).astype(np.uint8)
    for where, offs in (("gmem", sc.sf_gmem_offsets(MN, n)), ("smem", sc.sf_smem_offsets(MN, n))):
        assert len(np.unique(offs)) == MN * n
        assert np.array_equal(sc.sf_from_layout(sc.sf_to_layout(sf, where), MN, n, where), sf)
    g, s = sc.sf_gmem_offsets(256, 8), sc.sf_smem_offsets(256, 8)
    assert g[128, 0] == 1024 and g[0, 4] == 512          # GMEM: K atoms first
    assert s[128, 0] == 512 and s[0, 4] == 1024          # SMEM of one tile: MN atoms first


def _atom_smem(sf, at=4096):
    smem = np.zeros(16384, np.uint8)
    smem[at:at + 512] = sc.sf_to_layout(sf, "smem")
    return smem


def test_cp_32x128b_warpx4_puts_each_rows_scales_where_the_mma_reads_them():
    rng = np.random.default_rng(1)
    sf = rng.integers(0, 256, (128, 4)).astype(np.uint8)
    img, want = new_image(), new_image()
    lanes, cols = sc.tcgen05_cp(_atom_smem(sf), img, 40, make_smem_desc(4096, 0, 128), "32x128b", "warpx4")
    assert list(lanes) == list(range(128)) and list(cols) == [40, 41, 42, 43]
    sc.place_tmem_scales(want, 40, sf)
    assert np.array_equal(img, want)
    for sid in range(4):
        assert np.array_equal(sc.read_tmem_scales(img, 40, 128, 1, sid), sf[:, sid:sid + 1])
    assert np.array_equal(sc.read_tmem_scales(img, 40, 128, 2, 2), sf[:, 2:4])
    assert np.array_equal(sc.read_tmem_scales(img, 40, 64, 4, 0), sf[:64])


def test_cp_shapes_and_multicast_lanes():
    smem = np.arange(16384, dtype=np.uint32).astype(np.uint8)
    desc = make_smem_desc(0, 2048, 128)          # 256-bit rows: the second 16 bytes 2048 B on
    for shape, mc, lanes in [("128x256b", None, range(128)), ("128x128b", None, range(128)),
                             ("64x128b", "warpx2::02_13", range(128)), ("64x128b", "warpx2::01_23", range(128)),
                             ("4x256b", None, range(4, 8))]:
        img = new_image()
        got, cols = sc.tcgen05_cp(smem, img, (4 << 16) if shape == "4x256b" else 0, desc, shape, mc)
        assert list(got) == list(lanes) and len(cols) == sc.CP_SHAPES[shape][1] // 4
    img = new_image()
    sc.tcgen05_cp(smem, img, 0, desc, "64x128b", "warpx2::02_13")
    assert np.array_equal(img[64:96, :4], img[0:32, :4]) and np.array_equal(img[96:128, :4], img[32:64, :4])
    row33 = smem[(33 // 8) * 128 + (33 % 8) * 16:][:16].view("<u4")
    assert np.array_equal(img[33, :4], row33) and np.array_equal(img[97, :4], row33)
    sc.tcgen05_cp(smem, img, 0, desc, "64x128b", "warpx2::01_23")
    assert np.array_equal(img[32:64, :4], img[0:32, :4]) and np.array_equal(img[64:96, :4], img[96:128, :4])
    img = new_image()
    sc.tcgen05_cp(smem, img, 0, desc, "128x256b")
    assert np.array_equal(img[9, 4:8], smem[2048 + 128 + 16:][:16].view("<u4"))   # row 9, bytes 16..31 at LBO


def test_cp_decompresses_padded_sub_byte_elements():
    from bwlab.hw.dtypes import pack_fp4, pack_fp6
    rng = np.random.default_rng(2)
    for fmt, bits, pack in (("b8x16.b6x16_p32", 6, pack_fp6), ("b8x16.b4x16_p64", 4, pack_fp4)):
        codes = rng.integers(0, 1 << bits, (128, 16)).astype(np.uint8)
        p = pack(codes)
        rows = np.zeros((128, 16), np.uint8)
        rows[:, :p.shape[1]] = p
        rows[:, p.shape[1]:] = 0xAB                     # padding: ignored
        smem = np.zeros(4096, np.uint8)
        canonical_layout("K", "none", "e4m3", (128, 16), 0).store(smem, rows)
        img = new_image()
        sc.tcgen05_cp(smem, img, 0, make_smem_desc(0, 2048, 128), "128x128b", src_fmt=fmt)
        assert np.array_equal(img[:, :4].view(np.uint8).reshape(128, 16), codes)


@pytest.mark.parametrize("shape,mc,fmt,taddr,match", [
    ("32x128b", None, None, 0, r"32x128b takes .warpx4, got none"),
    ("128x256b", "warpx4", None, 0, r"takes no multicast"),
    ("128x128b", None, "b6x16_p32", 0, r"decompression is .dst_fmt.src_fmt"),
    ("128x128b", None, None, 32 << 16, r"taddr's lane must be 0"),
    ("128x256b", None, None, 508, r"columns 508..515, past TMEM's 512"),
])
def test_illegal_cp_forms_name_the_rule(shape, mc, fmt, taddr, match):
    with pytest.raises((TmemError, MmaRuleError), match=match):
        sc.tcgen05_cp(np.zeros(8192, np.uint8), new_image(), taddr, make_smem_desc(0, 2048, 128), shape, mc, fmt)


def test_scales_not_duplicated_to_every_quarter_are_refused():
    rng = np.random.default_rng(3)
    sf = rng.integers(0, 256, (128, 4)).astype(np.uint8)
    img = new_image()
    sc.place_tmem_scales(img, 0, sf)
    img[64 + 5, 0] ^= 0x100                             # row 5's copy in quarter 2, byte 1
    sc.read_tmem_scales(img, 0, 128, 1, 0)              # byte 0 is still duplicated
    with pytest.raises(sc.ScaleLayoutError, match=r"scale_A row 5: lanes 5, 37, 69, 101 of column 0 hold different"):
        sc.read_tmem_scales(img, 0, 128, 1, 1)
    img = new_image()                                   # a plain 128-row copy of an atom: rows 32.. are not row 0..
    smem = _atom_smem(sf, 0)
    smem[512:2048] = rng.integers(0, 256, 1536).astype(np.uint8)
    sc.tcgen05_cp(smem, img, 0, make_smem_desc(0, 0, 128), "128x128b")
    with pytest.raises(sc.ScaleLayoutError, match="duplicated to all four 32-lane partitions"):
        sc.read_tmem_scales(img, 0, 128, 4, 0)


# ---- the MMA --------------------------------------------------------------------------------------------

MMAS = [("mxf8f6f4", "e4m3", "e4m3", "ue8m0", "1X", 64, 128, "128B"),
        ("mxf8f6f4", "e5m2", "e4m3", "ue8m0", "1X", 256, 256, "128B"),
        ("mxf8f6f4", "e2m1", "e3m2", "ue8m0", "1X", 64, 64, "none"),
        ("mxf8f6f4", "e2m3", "e2m1", "ue8m0", "1X", 64, 64, "64B"),
        ("mxf4nvf4", "e2m1", "e2m1", "ue4m3", "4X", 64, 256, "128B"),
        ("mxf4nvf4", "e2m1", "e2m1", "ue8m0", "2X", 64, 256, "128B"),
        ("mxf4", "e2m1", "e2m1", "ue8m0", "2X", 136, 256, "128B")]
_BITS = {"e4m3": 8, "e5m2": 8, "e3m2": 6, "e2m3": 6, "e2m1": 4}


def _codes(t, shape, rng):
    c = rng.integers(0, 1 << _BITS[t], shape).astype(np.uint8)
    if t == "e4m3":
        c[(c & 0x7F) == 0x7F] = 0
    if t == "e5m2":
        c[(c & 0x7C) == 0x7C] = 1
    return c


@pytest.mark.parametrize("kind,at,bt,st,vec,N,K,swz", MMAS, ids=[f"{m[0]}-{m[1]}-{m[2]}-{m[3]}-N{m[5]}" for m in MMAS])
def test_block_scaled_mma_through_smem_and_tmem_equals_mma_numerics(kind, at, bt, st, vec, N, K, swz):
    """Operands in their SMEM forms, scales through SMEM atoms and tcgen05.cp.32x128b.warpx4, one instruction per
    K step with its scale factor IDs: D equals mma_numerics over the whole K from the codes and scales."""
    rng = np.random.default_rng(K + N)
    ik, spm = bs.BLOCK_KINDS[kind].K, bs.SCALE_VECS[vec]
    block = ik // spm
    a, b = _codes(at, (128, K), rng), _codes(bt, (N, K), rng)
    lo, hi = (120, 135) if st == "ue8m0" else (0x20, 0x50)
    sfa = rng.integers(lo, hi, (128, K // block)).astype(np.uint8)
    sfb = rng.integers(lo, hi, (N, K // block)).astype(np.uint8)
    cta = CtaState()
    A, B = bs.operand_to_bytes(a, at, kind), bs.operand_to_bytes(b, bt, kind)
    canonical_layout("K", swz, "e4m3", A.shape, 0).store(cta.smem, A)
    canonical_layout("K", swz, "e4m3", B.shape, 65536).store(cta.smem, B)
    sa, sb = sc.sf_to_layout(sfa, "smem"), sc.sf_to_layout(sfb, "smem")
    cta.smem[131072:131072 + sa.size] = sa
    cta.smem[135168:135168 + sb.size] = sb
    for i in range(sa.size // 512):
        sc.tcgen05_cp(cta.smem, cta.tmem, 256 + 4 * i, make_smem_desc(131072 + 512 * i, 0, 128), "32x128b", "warpx4")
    for i in range(sb.size // 512):
        sc.tcgen05_cp(cta.smem, cta.tmem, 320 + 4 * i, make_smem_desc(135168 + 512 * i, 0, 128), "32x128b", "warpx4")
    mb = -(-N // 128)
    for i in range(K // ik):
        atom, sid = (i * spm) // 4, (i * spm) % 4
        idesc = bs.make_block_scaled_idesc(kind, at, bt, st, N, scale_vec=vec, sf_a_id=sid, sf_b_id=sid)
        bs.tcgen05_mma_block_scaled(cta, 0, smem_desc_for_tile("K", swz, "e4m3", A.shape, i, 0),
                                    smem_desc_for_tile("K", swz, "e4m3", B.shape, i, 65536), idesc,
                                    256 + 4 * atom, 320 + 4 * atom * mb, i > 0, kind, vec)
    want = mma_numerics(f"m128n{N}k{ik}.kind::{kind}.block{block}.f32.{at}.{bt}.{st}", a, b,
                        np.zeros((128, N), np.float32), sfa, sfb)
    assert np.array_equal(cta.tmem[:, :N], want.view(np.uint32))
    assert np.abs(want).max() > 0


def test_negate_flips_the_sign_of_d():
    case = BlockScaledCase("mxfp8", 32)
    img, sfa, sfb, atoms, ad, bd, idesc = case.kernel_inputs()
    outs = []
    for neg in (0, 1 << 13):
        cta = CtaState()
        cta.smem[:img.size] = img
        cta.smem[40960:40960 + 512] = sfa
        cta.smem[41472:41472 + 512] = sfb
        sc.tcgen05_cp(cta.smem, cta.tmem, 128, make_smem_desc(40960, 0, 128), "32x128b", "warpx4")
        sc.tcgen05_cp(cta.smem, cta.tmem, 132, make_smem_desc(41472, 0, 128), "32x128b", "warpx4")
        bs.tcgen05_mma_block_scaled(cta, 0, int(ad[0]), int(bd[0]), idesc | neg, 128, 132, False, "mxf8f6f4")
        outs.append(cta.tmem[:, :32].view(np.float32).copy())
    assert np.array_equal(outs[1], -outs[0]) and np.abs(outs[0]).max() > 0


# ---- quantising -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt,tol,lo,hi", [("mxfp8", 2 ** -3, -20, 20), ("nvfp4", 0.25, 0, 8)])
def test_quantize_keeps_each_block_within_its_format(fmt, tol, lo, hi):
    """Each value within tol x its block's largest magnitude, rows scaled by 2^lo..2^hi: ue8m0 covers 2^±127;
    ue4m3 is normal only in [2^-6, 448] (below, its subnormals make coarse scales), which is why NVFP4 tensors
    carry a second, per-tensor f32 scale."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((16, 256)) * np.exp2(rng.integers(lo, hi, (16, 1)))
    codes, sf = quantize(x, fmt)
    y = dequantize(codes, sf, fmt)
    block = 32 if fmt == "mxfp8" else 16
    amax = np.repeat(np.abs(x).reshape(16, -1, block).max(axis=2), block, axis=1)
    assert (np.abs(y - x) <= tol * amax).all()


def test_nvfp4_scales_underflow_below_ue4m3s_range():
    x = np.full((1, 16), 2.0 ** -14)
    codes, sf = quantize(x, "nvfp4")
    assert sf[0, 0] == 0 and not dequantize(codes, sf, "nvfp4").any()


# ---- the teaching kernel in the emulator --------------------------------------------------------------------

@pytest.fixture
def _emulated(monkeypatch):
    monkeypatch.setenv("BWLAB_BACKEND", "emulated")


@pytest.mark.parametrize("fmt,N", [("mxfp8", 64), ("nvfp4", 64), ("mxfp8", 128), ("nvfp4", 8)])
def test_teach_blockscaled_equals_the_model_in_the_emulator(_emulated, fmt, N):
    case = BlockScaledCase(fmt, N, seed=N)
    want = case.model()
    assert np.array_equal(want, case.reference())             # the data path loses nothing
    got = case.run()
    assert np.array_equal(got, want), case.check(got)


def _edited(old, new, count=1):
    text = source_text("teach_blockscaled.cu")
    assert text.count(old) == count, old
    return SimpleNamespace(text=text.replace(old, new), file="teach_blockscaled.cu")


def test_a_copy_that_does_not_duplicate_the_scales_is_named(_emulated):
    k = _edited("tcgen05_cp_32x128b_warpx4(tsfa + 4 * a, scale_atom_desc(sfa_smem + 32 * a));",
                'asm volatile("tcgen05.cp.cta_group::1.128x128b [%0], %1;" ::"r"(tsfa + 4 * a), '
                '"l"(scale_atom_desc(sfa_smem + 32 * a)) : "memory");')
    with pytest.raises(EmuError, match=r"scale_A row 0: lanes 0, 32, 64, 96 .*duplicated to all four 32-lane partitions"):
        run_teach_blockscaled(BlockScaledCase("mxfp8", 64), kernel=k)


def test_scales_without_the_proxy_fence_are_named(_emulated):
    k = _edited("        sfb_smem[i] = sfb_atoms[i];\n    }\n    fence_proxy_async_shared_cta();",
                "        sfb_smem[i] = sfb_atoms[i];\n    }\n")
    with pytest.raises(ProxyFenceMissing):
        run_teach_blockscaled(BlockScaledCase("nvfp4", 64), kernel=k)


def test_a_wrong_scale_factor_id_is_named(_emulated):
    k = _edited("const u32 s = i * BS_SCALES_PER_MMA, atom = s / 4, id = s % 4;",
                "const u32 s = i * BS_SCALES_PER_MMA, atom = s / 4, id = s % 4 + 1;")
    with pytest.raises(EmuError, match=r"scale factor A ID with .scale_vec::4X is one of \(0,\) .*, got 1 .*Scale Factor A ID"):
        run_teach_blockscaled(BlockScaledCase("nvfp4", 64), kernel=k)


# ---- ptxas agrees with the scale_vec table ---------------------------------------------------------------

@pytest.mark.parametrize("kind", list(bs.BLOCK_KINDS))
def test_ptxas_accepts_exactly_the_scale_vec_forms_of_the_table(kind):
    """Each kind with each .scale_vectorsize qualifier (or none): ptxas (sm_100a) assembles it exactly when
    `scale_vec_of` accepts it (PTX ISA Tables 54 and 55; the scale type is in the idesc, not checked here)."""
    from bwlab.compile import CompileError, compile_text
    for q in (None, "scale_vec::1X", "scale_vec::2X", "scale_vec::4X", "block16", "block32"):
        form = f"tcgen05.mma.cta_group::1.kind::{kind}.block_scale" + (f".{q}" if q else "")
        src = ('extern "C" __global__ void k(unsigned t, unsigned long long d, unsigned i, unsigned s, unsigned c) {\n'
               '  asm volatile("{\\n\\t.reg .pred p;\\n\\tsetp.ne.b32 p, %4, 0;\\n\\t' + form +
               ' [%0], %1, %1, %2, [%3], [%3], p;\\n\\t}" :: "r"(t), "l"(d), "r"(i), "r"(s), "r"(c) : "memory");\n}\n')
        try:
            compile_text(src, "forms.cu", arch="sm_100a")
            assembled = True
        except CompileError:
            assembled = False
        try:
            bs.scale_vec_of(kind, q)
            legal = True
        except MmaRuleError:
            legal = False
        assert assembled == legal, form


def test_scale_smem_reused_before_the_commit_is_named_and_after_it_is_fine(_emulated):
    """tcgen05.cp reads its source asynchronously, like the MMA its operands: SMEM it reads may be written
    again only once the commit's mbarrier phase completed and reached the writer."""
    from bwlab.emu.errors import AsyncReadHazard
    reuse = "    if (warp == 1) sfa_smem[lane] = make_uint4(0, 0, 0, 0);  // the scale buffer reused\n"
    wait = "    // 4. Wait for the MMAs, read D back.\n"
    k = _edited(wait, "    __syncthreads();\n" + reuse + wait)
    with pytest.raises(AsyncReadHazard, match=r"tcgen05.cp.32x128b.warpx4 source .* may still be reading"):
        run_teach_blockscaled(BlockScaledCase("mxfp8", 64), kernel=k)
    after = "    const bool mma_complete = __syncthreads_or(done) != 0;\n"
    case = BlockScaledCase("mxfp8", 64)
    assert np.array_equal(run_teach_blockscaled(case, kernel=_edited(after, after + reuse)), case.model())
