"""Stage 3: instruction and SMEM descriptors, canonical layouts — against CUTLASS's own encoders.

The expected values below were printed by a throwaway host program that called CuTe's
UMMA::make_instr_desc, UMMA::make_umma_desc and GMMA::make_gmma_desc (NVIDIA/cutlass commit
7107b05535f8977f5ecb9d01ee203205b1fd9bc4) on tiles built with tile_to_shape(Layout_{K,MN}_*_Atom,
(MN, K)) and sliced per instruction K with local_tile. On the host CuTe cannot convert a pointer to
a shared-memory address, so its start-address field came out 0; the `offsets` column is the byte
offset of each K slice from the tile start (pointer difference), which the descriptor's start field
must carry.
"""
import numpy as np
import pytest

from bwlab import umma
from bwlab.hw.swizzle import MODES, row_bytes, swizzle_address

# dtype major swizzle MN K | SM100 descriptor | SM90 descriptor | byte offset of each K slice
CUTLASS_SMEM_DESCS = """
f16 K none 128 64 0x0000400800800000 0x0000000800800000 0,4096,8192,12288
f16 K 32B 128 64 0xc000401000010000 0xc000001000010000 0,4096,8192,12288
f16 K 64B 128 64 0x8000402000010000 0x8000002000010000 0,32,8192,8224
f16 K 128B 128 64 0x4000404000010000 0x4000004000010000 0,32,64,96
f16 MN none 128 64 0x0000400800800000 0x0000000800800000 0,4096,8192,12288
f16 MN 32B 128 64 0xc000408000100000 0xc000008000100000 0,4096,8192,12288
f16 MN 64B 128 64 0x8000408000200000 0x8000008000200000 0,4096,8192,12288
f16 MN 128B 128 64 0x4000408000400000 0x4000008000400000 0,4096,8192,12288
f16 K none 64 128 0x0000400800400000 0x0000000800400000 0,2048,4096,6144,8192,10240,12288,14336
f16 K 32B 64 128 0xc000401000010000 0xc000001000010000 0,2048,4096,6144,8192,10240,12288,14336
f16 K 64B 64 128 0x8000402000010000 0x8000002000010000 0,32,4096,4128,8192,8224,12288,12320
f16 K 128B 64 128 0x4000404000010000 0x4000004000010000 0,32,64,96,8192,8224,8256,8288
f16 MN none 64 128 0x0000400800400000 0x0000000800400000 0,2048,4096,6144,8192,10240,12288,14336
f16 MN 32B 64 128 0xc000404000100000 0xc000004000100000 0,2048,4096,6144,8192,10240,12288,14336
f16 MN 64B 64 128 0x8000404000200000 0x8000004000200000 0,2048,4096,6144,8192,10240,12288,14336
f16 MN 128B 64 128 0x4000404000000000 0x4000004000000000 0,2048,4096,6144,8192,10240,12288,14336
f16 K none 256 64 0x0000400801000000 0x0000000801000000 0,8192,16384,24576
f16 K 32B 256 64 0xc000401000010000 0xc000001000010000 0,8192,16384,24576
f16 K 64B 256 64 0x8000402000010000 0x8000002000010000 0,32,16384,16416
f16 K 128B 256 64 0x4000404000010000 0x4000004000010000 0,32,64,96
f16 MN none 256 64 0x0000400801000000 0x0000000801000000 0,8192,16384,24576
f16 MN 32B 256 64 0xc000410000100000 0xc000010000100000 0,8192,16384,24576
f16 MN 64B 256 64 0x8000410000200000 0x8000010000200000 0,8192,16384,24576
f16 MN 128B 256 64 0x4000410000400000 0x4000010000400000 0,8192,16384,24576
tf32 K none 128 32 0x0000400800800000 0x0000000800800000 0,4096,8192,12288
tf32 K 32B 128 32 0xc000401000010000 0xc000001000010000 0,4096,8192,12288
tf32 K 64B 128 32 0x8000402000010000 0x8000002000010000 0,32,8192,8224
tf32 K 128B 128 32 0x4000404000010000 0x4000004000010000 0,32,64,96
tf32 MN none 128 32 0x0000400800000000 0x0000000800000000 0,4096,8192,12288
tf32 MN 32B 128 32 0xc000400000100000 0xc000000000100000 0,4096,8192,12288
tf32 MN 64B 128 32 0x8000400000200000 0x8000000000200000 0,4096,8192,12288
tf32 MN 128B 128 32 0x4000400000400000 0x4000000000400000 0,4096,8192,12288
u8 K none 128 128 0x0000400800800000 0x0000000800800000 0,4096,8192,12288
u8 K 32B 128 128 0xc000401000010000 0xc000001000010000 0,4096,8192,12288
u8 K 64B 128 128 0x8000402000010000 0x8000002000010000 0,32,8192,8224
u8 K 128B 128 128 0x4000404000010000 0x4000004000010000 0,32,64,96
u8 MN none 128 128 0x0000400800400000 0x0000000800400000 0,4096,8192,12288
u8 MN 32B 128 128 0xc000404000100000 0xc000004000100000 0,4096,8192,12288
u8 MN 64B 128 128 0x8000404000200000 0x8000004000200000 0,4096,8192,12288
u8 MN 128B 128 128 0x4000404000000000 0x4000004000000000 0,4096,8192,12288
"""

# a b c M N a_major b_major negate_a negate_b | CuTe UMMA::make_instr_desc
CUTLASS_IDESCS = """
f16 f16 f32 128 256 K K 0 0 0x08400010
f16 f16 f16 128 256 K K 0 0 0x08400000
bf16 bf16 f32 128 128 K MN 0 0 0x08210490
bf16 bf16 f32 64 8 MN K 0 0 0x04028490
tf32 tf32 f32 128 64 MN MN 0 0 0x08118910
tf32 tf32 f32 256 256 K K 0 0 0x10400910
f16 f16 f32 256 16 K MN 1 0 0x10052010
f16 f16 f32 64 248 K K 0 1 0x043e4010
e4m3 e5m2 f32 128 128 K K 0 0 0x08200410
e5m2 e4m3 f16 64 64 MN K 0 0 0x04108080
s8 s8 s32 128 256 K K 0 0 0x084004a0
u8 s8 s32 64 8 K MN 0 0 0x04030420
"""


def _rows(table):
    return [r.split() for r in table.strip().splitlines()]


def test_issue_examples():
    assert umma.make_instr_desc("f16", "f16", "f32", 128, 256) == 0x08400010
    d = umma.smem_desc_for_tile("K", "128B", "f16", (128, 16 * 4), 0, base_address=0)
    assert d >> 16 == 0x4000404000010000 >> 16 and d & 0xFFFF == 0


@pytest.mark.parametrize("row", _rows(CUTLASS_IDESCS), ids=lambda r: "-".join(r[:7]))
def test_instr_desc_matches_cutlass(row):
    a, b, c, M, N, am, bm, na, nb, expected = row
    M, N = int(M), int(N)
    if (bm, N, a) == ("MN", 8, "u8"):
        # CuTe's encoder writes it, but the ISA refuses an MN-major 8-bit B with N = 8 (N % 16):
        # the encoding still matches CuTe's, and make_instr_desc names the rule.
        enc = umma.InstrDesc("i8", a, b, c, M, N, am, bm).encode()
        assert enc == int(expected, 16)
        with pytest.raises(umma.MmaRuleError, match="transposed.*multiple of 16"):
            umma.make_instr_desc(a, b, c, M, N, am, bm)
        return
    got = umma.make_instr_desc(a, b, c, M, N, am, bm, bool(int(na)), bool(int(nb)),
                               cta_group=2 if M == 256 else 1)
    assert got == int(expected, 16), f"{got:#010x} != {expected}"
    f = umma.decode_instr_desc(got, umma.kind_of(a, b))
    assert (f.a_type, f.b_type, f.d_type, f.M, f.N, f.a_major, f.b_major, f.negate_a, f.negate_b) == \
        (a, b, c, M, N, am, bm, bool(int(na)), bool(int(nb)))
    assert f.encode() == got


@pytest.mark.parametrize("row", _rows(CUTLASS_SMEM_DESCS), ids=lambda r: "-".join(r[:5]))
@pytest.mark.parametrize("base", [0, 3072])
def test_smem_desc_matches_cutlass(row, base):
    dt, major, sw, mn, k, d100, d90, offsets = row
    offsets = [int(x) for x in offsets.split(",")]
    for kb, off in enumerate(offsets):
        start_field = (base + off) >> 4
        assert umma.smem_desc_for_tile(major, sw, dt, (int(mn), int(k)), kb, base) == int(d100, 16) | start_field
        assert umma.gmma_desc_for_tile(major, sw, dt, (int(mn), int(k)), kb, base) == int(d90, 16) | start_field
    with pytest.raises(ValueError, match="k_block"):
        umma.smem_desc_for_tile(major, sw, dt, (int(mn), int(k)), len(offsets), base)


def test_smem_desc_roundtrip_and_field_names():
    d = umma.make_smem_desc(0x1230, 2048, 1024, "64B", base_offset=3)
    f = umma.decode_smem_desc(d)
    assert (f.start_address, f.leading_byte_offset, f.stride_byte_offset, f.swizzle, f.base_offset,
            f.version, f.lbo_mode) == (0x1230, 2048, 1024, "64B", 3, 1, 0)
    assert (d >> 46) & 7 == 1 and (d >> 61) == 4 and (d >> 49) & 7 == 3
    d90 = umma.make_smem_desc(0x1230, 2048, 1024, "64B", arch="sm90")
    assert d90 >> 62 == 2 and (d90 >> 46) & 7 == 0
    assert umma.decode_smem_desc(d90, "sm90").swizzle == "64B"
    for sw, code in (("none", 0), ("128B_base32B", 1), ("128B", 2), ("64B", 4), ("32B", 6)):
        assert umma.make_smem_desc(0, 16, 16, sw) >> 61 == code
    for sw, code in (("none", 0), ("128B", 1), ("64B", 2), ("32B", 3)):
        assert umma.make_smem_desc(0, 16, 16, sw, arch="sm90") >> 62 == code
    names = [r[1] for r in f.fields()]
    for n in ("matrix start address >> 4", "leading dimension byte offset >> 4",
              "stride dimension byte offset >> 4", "fixed constant (version)", "matrix base offset",
              "leading dimension stride mode", "swizzling mode"):
        assert n in names


def test_smem_desc_rules():
    with pytest.raises(ValueError, match="multiple of 16"):
        umma.make_smem_desc(8, 16, 16)
    with pytest.raises(ValueError, match="3-bit"):
        umma.make_smem_desc(0, 16, 16, "128B", base_offset=8)
    with pytest.raises(ValueError, match="128B_base32B"):
        umma.make_smem_desc(0, 16, 16, "128B_base32B", arch="sm90")
    with pytest.raises(ValueError, match="0b001"):
        umma.decode_smem_desc(umma.make_smem_desc(0, 16, 16, "128B", arch="sm90"), "sm100")
    with pytest.raises(ValueError, match="invalid"):
        umma.decode_smem_desc((1 << 46) | (3 << 61), "sm100")


@pytest.mark.parametrize("args,rule", [
    (("f16", "f16", "f32", 256, 128), "M in \\(64, 128\\)"),
    (("f16", "f16", "f32", 128, 12), "multiple of 8"),
    (("f16", "f16", "f32", 128, 264), "multiple of 8 in \\[8, 256\\]"),
    (("f16", "bf16", "f32", 128, 128), "f16 by f16 or bf16 by bf16"),
    (("bf16", "bf16", "f16", 128, 128), "f16 inputs only"),
    (("tf32", "tf32", "f16", 128, 128), "accumulates into"),
    (("f16", "tf32", "f32", 128, 128), "no tcgen05.mma kind"),
    (("s8", "s8", "s32", 128, 40), "N = 8, 16, 24, 32 or a multiple of 16 in \\[48, 256\\]"),
    (("f16", "f16", "f32", 128, 128, "T"), "a_major"),
])
def test_instr_desc_rules(args, rule):
    with pytest.raises(ValueError, match=rule):
        umma.make_instr_desc(*args)


def test_instr_desc_cta_group2_rules():
    assert umma.make_instr_desc("f16", "f16", "f32", 256, 256, cta_group=2) == 0x10400010
    with pytest.raises(ValueError, match="cta_group::2 takes M in \\(128, 256\\)"):
        umma.make_instr_desc("f16", "f16", "f32", 64, 64, cta_group=2)
    with pytest.raises(ValueError, match="multiple of 16"):
        umma.make_instr_desc("f16", "f16", "f32", 256, 24, cta_group=2)
    with pytest.raises(ValueError, match="not kind::i8"):
        umma.make_instr_desc("s8", "s8", "s32", 128, 128, negate_a=True)


def test_decode_instr_desc_needs_the_kind():
    d = umma.make_instr_desc("e4m3", "e4m3", "f32", 128, 64)
    assert umma.decode_instr_desc(d, "f8f6f4").a_type == "e4m3"
    assert umma.decode_instr_desc(d, "f16").a_type == "f16"   # same code, other kind
    with pytest.raises(ValueError, match="not a kind::tf32 type"):
        umma.decode_instr_desc(d, "tf32")


LAYOUTS = [(m, s) for m in umma.MAJORS for s in MODES] + [("MN", "128B_base32B")]


@pytest.mark.parametrize("major,swizzle", LAYOUTS)
@pytest.mark.parametrize("dtype", ["f16", "tf32", "e4m3"])
def test_canonical_layout_is_a_permutation_of_whole_core_matrices(major, swizzle, dtype):
    amn, ak = umma.atom_shape(major, swizzle, dtype)
    lay = umma.canonical_layout(major, swizzle, dtype, (2 * max(amn, 8), 2 * max(ak, 8)), base_address=2048)
    addr = lay.addresses()
    eb = umma.elem_bytes(dtype)
    # every byte of the tile's span is used exactly once
    assert sorted(addr.ravel().tolist()) == list(range(2048, 2048 + lay.nbytes, eb))
    # 16 contiguous bytes of one row (along K for K-major, along MN for MN-major) stay together
    t = 16 // eb
    if major == "K":
        chunk = addr[:, :t]
        assert (np.diff(chunk, axis=1) == eb).all()
    else:
        chunk = addr[:t, :]
        assert (np.diff(chunk, axis=0) == eb).all()


@pytest.mark.parametrize("swizzle", ["32B", "64B", "128B"])
@pytest.mark.parametrize("base", [0, 4096, 4096 + 384])
def test_canonical_layout_is_what_tma_writes(swizzle, base):
    # A TMA box with a W-byte inner dimension lands row after row, each 16-byte chunk moved by the
    # swizzle of its SMEM address: that is the K-major atom (rows along MN) and the MN-major atom
    # (rows along K).
    w = row_bytes(swizzle)
    k_major = umma.canonical_layout("K", swizzle, "f16", (32, w // 2), base)
    mn, k = np.meshgrid(np.arange(32), np.arange(w // 2), indexing="ij")
    assert np.array_equal(k_major.address(mn, k), swizzle_address(swizzle, base + mn * w + k * 2))
    mn_major = umma.canonical_layout("MN", swizzle, "f16", (w // 2, 32), base)
    mn, k = np.meshgrid(np.arange(w // 2), np.arange(32), indexing="ij")
    assert np.array_equal(mn_major.address(mn, k), swizzle_address(swizzle, base + k * w + mn * 2))


@pytest.mark.parametrize("major,swizzle", LAYOUTS)
@pytest.mark.parametrize("dtype,tile", [("f16", (128, 128)), ("tf32", (64, 64)), ("u8", (256, 128))])
def test_descriptor_reader_walks_the_canonical_layout(major, swizzle, dtype, tile):
    # Reading each K slice through its descriptor visits exactly the tile's own addresses.
    lay = umma.canonical_layout(major, swizzle, dtype, tile, base_address=8192)
    full = lay.addresses()
    ki = umma.instr_k(dtype)
    for kb in range(tile[1] // ki):
        for arch in (("sm100",) if swizzle == "128B_base32B" else umma.ARCHS):
            desc = umma.decode_smem_desc(umma.tile_desc(major, swizzle, dtype, tile, kb, 8192, arch).encode(), arch)
            got = umma.descriptor_addresses(desc, major, dtype, tile[0])
            assert np.array_equal(got, full[:, kb * ki:(kb + 1) * ki])


def test_k_loop_advances_32_bytes_inside_a_128B_atom():
    starts = [umma.decode_smem_desc(umma.smem_desc_for_tile("K", "128B", "f16", (128, 64), kb, 1024)).start_address
              for kb in range(4)]
    assert starts == [1024, 1056, 1088, 1120]


def test_layout_rules():
    with pytest.raises(ValueError, match="swizzle atoms"):
        umma.canonical_layout("K", "128B", "f16", (128, 32))
    with pytest.raises(ValueError, match="swizzle atoms"):
        umma.canonical_layout("MN", "64B", "f16", (16, 64))
    with pytest.raises(ValueError, match="16-byte aligned"):
        umma.canonical_layout("K", "none", "f16", (8, 8), base_address=8)
    with pytest.raises(ValueError, match="major"):
        umma.canonical_layout("M", "none", "f16", (8, 8))
    with pytest.raises(ValueError, match="MN-major operands only"):
        umma.descriptor_addresses(umma.decode_smem_desc(umma.make_smem_desc(0, 16, 16, "128B_base32B")), "K", "tf32", 32)
    with pytest.raises(ValueError, match="not modelled"):
        umma.descriptor_addresses(umma.decode_smem_desc(umma.make_smem_desc(0, 16, 16, "128B_base32B", 1)),
                                  "MN", "tf32", 32)


def test_field_tables_fit_a_notebook_at_1000_px():
    """The descriptor tables (notebook 03 and its widgets) keep their lines short enough not to wrap in
    the widget output area of a notebook shown at 1000 px (seen in Chromium: 68 characters fit, 70 wrap)."""
    from bwlab import umma
    tables = [umma.format_fields(umma.decode_smem_desc(0x4000404000010000, arch).fields(), f"x {arch}")
              for arch in ("sm100", "sm90")]
    tables.append(umma.format_fields(umma.decode_instr_desc(0x08400010).fields(), "idesc"))
    assert max(len(line) for t in tables for line in t.splitlines()) <= 68
