"""bwlab.multicast against CuTe: cluster layouts, multicast masks, tma_partition, the plan, the model,
the MulticastLoad case, the kernel's argument struct; and the benchmark's configuration rules.

CUTE_CLUSTERS records what CuTe itself printed (NVIDIA/cutlass include/cute, commit 7107b0553), once,
as facts: for each cluster shape and peer count, CuTe's
`tiled_divide(make_layout(cluster_shape), make_tile(AtomThrID))` and, for every CTA rank r with
coord = layout.get_flat_coord(r), the masks create_tma_multicast_mask<2>, <1>, <0,1>, <0,2>.
"""
import numpy as np
import pytest

from bwlab import multicast as mc
from bwlab.checks import multicast as mcheck
from bwlab.layout import Layout

# (cluster shape, peers, CuTe's layout, [(A <2>, B <1>, <0,1>, <0,2>) for rank 0, 1, ...])
CUTE_CLUSTERS = [
    ((1, 1, 1), 1, '((_1),_1,_1,_1):((_0),_0,_0,_0)',
     [(0x0001, 0x0001, 0x0001, 0x0001)]),
    ((2, 1, 1), 1, '((_1),_2,_1,_1):((_0),_1,_0,_0)',
     [(0x0001, 0x0003, 0x0003, 0x0001), (0x0002, 0x0003, 0x0003, 0x0002)]),
    ((1, 2, 1), 1, '((_1),_1,_2,_1):((_0),_0,_1,_0)',
     [(0x0003, 0x0001, 0x0001, 0x0003), (0x0003, 0x0002, 0x0002, 0x0003)]),
    ((2, 2, 1), 1, '((_1),_2,_2,_1):((_0),_1,_2,_0)',
     [(0x0005, 0x0003, 0x0003, 0x0005), (0x000a, 0x0003, 0x0003, 0x000a), (0x0005, 0x000c, 0x000c, 0x0005), (0x000a, 0x000c, 0x000c, 0x000a)]),
    ((2, 4, 1), 1, '((_1),_2,_4,_1):((_0),_1,_2,_0)',
     [(0x0055, 0x0003, 0x0003, 0x0055), (0x00aa, 0x0003, 0x0003, 0x00aa), (0x0055, 0x000c, 0x000c, 0x0055), (0x00aa, 0x000c, 0x000c, 0x00aa), (0x0055, 0x0030, 0x0030, 0x0055), (0x00aa, 0x0030, 0x0030, 0x00aa), (0x0055, 0x00c0, 0x00c0, 0x0055), (0x00aa, 0x00c0, 0x00c0, 0x00aa)]),
    ((4, 2, 1), 1, '((_1),_4,_2,_1):((_0),_1,_4,_0)',
     [(0x0011, 0x000f, 0x000f, 0x0011), (0x0022, 0x000f, 0x000f, 0x0022), (0x0044, 0x000f, 0x000f, 0x0044), (0x0088, 0x000f, 0x000f, 0x0088), (0x0011, 0x00f0, 0x00f0, 0x0011), (0x0022, 0x00f0, 0x00f0, 0x0022), (0x0044, 0x00f0, 0x00f0, 0x0044), (0x0088, 0x00f0, 0x00f0, 0x0088)]),
    ((8, 1, 1), 1, '((_1),_8,_1,_1):((_0),_1,_0,_0)',
     [(0x0001, 0x00ff, 0x00ff, 0x0001), (0x0002, 0x00ff, 0x00ff, 0x0002), (0x0004, 0x00ff, 0x00ff, 0x0004), (0x0008, 0x00ff, 0x00ff, 0x0008), (0x0010, 0x00ff, 0x00ff, 0x0010), (0x0020, 0x00ff, 0x00ff, 0x0020), (0x0040, 0x00ff, 0x00ff, 0x0040), (0x0080, 0x00ff, 0x00ff, 0x0080)]),
    ((1, 8, 1), 1, '((_1),_1,_8,_1):((_0),_0,_1,_0)',
     [(0x00ff, 0x0001, 0x0001, 0x00ff), (0x00ff, 0x0002, 0x0002, 0x00ff), (0x00ff, 0x0004, 0x0004, 0x00ff), (0x00ff, 0x0008, 0x0008, 0x00ff), (0x00ff, 0x0010, 0x0010, 0x00ff), (0x00ff, 0x0020, 0x0020, 0x00ff), (0x00ff, 0x0040, 0x0040, 0x00ff), (0x00ff, 0x0080, 0x0080, 0x00ff)]),
    ((4, 4, 1), 1, '((_1),_4,_4,_1):((_0),_1,_4,_0)',
     [(0x1111, 0x000f, 0x000f, 0x1111), (0x2222, 0x000f, 0x000f, 0x2222), (0x4444, 0x000f, 0x000f, 0x4444), (0x8888, 0x000f, 0x000f, 0x8888), (0x1111, 0x00f0, 0x00f0, 0x1111), (0x2222, 0x00f0, 0x00f0, 0x2222), (0x4444, 0x00f0, 0x00f0, 0x4444), (0x8888, 0x00f0, 0x00f0, 0x8888), (0x1111, 0x0f00, 0x0f00, 0x1111), (0x2222, 0x0f00, 0x0f00, 0x2222), (0x4444, 0x0f00, 0x0f00, 0x4444), (0x8888, 0x0f00, 0x0f00, 0x8888), (0x1111, 0xf000, 0xf000, 0x1111), (0x2222, 0xf000, 0xf000, 0x2222), (0x4444, 0xf000, 0xf000, 0x4444), (0x8888, 0xf000, 0xf000, 0x8888)]),
    ((2, 8, 1), 1, '((_1),_2,_8,_1):((_0),_1,_2,_0)',
     [(0x5555, 0x0003, 0x0003, 0x5555), (0xaaaa, 0x0003, 0x0003, 0xaaaa), (0x5555, 0x000c, 0x000c, 0x5555), (0xaaaa, 0x000c, 0x000c, 0xaaaa), (0x5555, 0x0030, 0x0030, 0x5555), (0xaaaa, 0x0030, 0x0030, 0xaaaa), (0x5555, 0x00c0, 0x00c0, 0x5555), (0xaaaa, 0x00c0, 0x00c0, 0xaaaa), (0x5555, 0x0300, 0x0300, 0x5555), (0xaaaa, 0x0300, 0x0300, 0xaaaa), (0x5555, 0x0c00, 0x0c00, 0x5555), (0xaaaa, 0x0c00, 0x0c00, 0xaaaa), (0x5555, 0x3000, 0x3000, 0x5555), (0xaaaa, 0x3000, 0x3000, 0xaaaa), (0x5555, 0xc000, 0xc000, 0x5555), (0xaaaa, 0xc000, 0xc000, 0xaaaa)]),
    ((2, 2, 2), 1, '((_1),_2,_2,_2):((_0),_1,_2,_4)',
     [(0x0005, 0x0003, 0x0003, 0x0005), (0x000a, 0x0003, 0x0003, 0x000a), (0x0005, 0x000c, 0x000c, 0x0005), (0x000a, 0x000c, 0x000c, 0x000a), (0x0050, 0x0030, 0x0030, 0x0050), (0x00a0, 0x0030, 0x0030, 0x00a0), (0x0050, 0x00c0, 0x00c0, 0x0050), (0x00a0, 0x00c0, 0x00c0, 0x00a0)]),
    ((2, 1, 1), 2, '((_2),_1,_1,_1):((_1),_0,_0,_0)',
     [(0x0001, 0x0001, 0x0003, 0x0003), (0x0002, 0x0002, 0x0003, 0x0003)]),
    ((2, 2, 1), 2, '((_2),_1,_2,_1):((_1),_0,_2,_0)',
     [(0x0005, 0x0001, 0x0003, 0x000f), (0x000a, 0x0002, 0x0003, 0x000f), (0x0005, 0x0004, 0x000c, 0x000f), (0x000a, 0x0008, 0x000c, 0x000f)]),
    ((2, 4, 1), 2, '((_2),_1,_4,_1):((_1),_0,_2,_0)',
     [(0x0055, 0x0001, 0x0003, 0x00ff), (0x00aa, 0x0002, 0x0003, 0x00ff), (0x0055, 0x0004, 0x000c, 0x00ff), (0x00aa, 0x0008, 0x000c, 0x00ff), (0x0055, 0x0010, 0x0030, 0x00ff), (0x00aa, 0x0020, 0x0030, 0x00ff), (0x0055, 0x0040, 0x00c0, 0x00ff), (0x00aa, 0x0080, 0x00c0, 0x00ff)]),
    ((4, 2, 1), 2, '((_2),_2,_2,_1):((_1),_2,_4,_0)',
     [(0x0011, 0x0005, 0x000f, 0x0033), (0x0022, 0x000a, 0x000f, 0x0033), (0x0044, 0x0005, 0x000f, 0x00cc), (0x0088, 0x000a, 0x000f, 0x00cc), (0x0011, 0x0050, 0x00f0, 0x0033), (0x0022, 0x00a0, 0x00f0, 0x0033), (0x0044, 0x0050, 0x00f0, 0x00cc), (0x0088, 0x00a0, 0x00f0, 0x00cc)]),
    ((4, 4, 1), 2, '((_2),_2,_4,_1):((_1),_2,_4,_0)',
     [(0x1111, 0x0005, 0x000f, 0x3333), (0x2222, 0x000a, 0x000f, 0x3333), (0x4444, 0x0005, 0x000f, 0xcccc), (0x8888, 0x000a, 0x000f, 0xcccc), (0x1111, 0x0050, 0x00f0, 0x3333), (0x2222, 0x00a0, 0x00f0, 0x3333), (0x4444, 0x0050, 0x00f0, 0xcccc), (0x8888, 0x00a0, 0x00f0, 0xcccc), (0x1111, 0x0500, 0x0f00, 0x3333), (0x2222, 0x0a00, 0x0f00, 0x3333), (0x4444, 0x0500, 0x0f00, 0xcccc), (0x8888, 0x0a00, 0x0f00, 0xcccc), (0x1111, 0x5000, 0xf000, 0x3333), (0x2222, 0xa000, 0xf000, 0x3333), (0x4444, 0x5000, 0xf000, 0xcccc), (0x8888, 0xa000, 0xf000, 0xcccc)]),
    ((8, 2, 1), 2, '((_2),_4,_2,_1):((_1),_2,_8,_0)',
     [(0x0101, 0x0055, 0x00ff, 0x0303), (0x0202, 0x00aa, 0x00ff, 0x0303), (0x0404, 0x0055, 0x00ff, 0x0c0c), (0x0808, 0x00aa, 0x00ff, 0x0c0c), (0x1010, 0x0055, 0x00ff, 0x3030), (0x2020, 0x00aa, 0x00ff, 0x3030), (0x4040, 0x0055, 0x00ff, 0xc0c0), (0x8080, 0x00aa, 0x00ff, 0xc0c0), (0x0101, 0x5500, 0xff00, 0x0303), (0x0202, 0xaa00, 0xff00, 0x0303), (0x0404, 0x5500, 0xff00, 0x0c0c), (0x0808, 0xaa00, 0xff00, 0x0c0c), (0x1010, 0x5500, 0xff00, 0x3030), (0x2020, 0xaa00, 0xff00, 0x3030), (0x4040, 0x5500, 0xff00, 0xc0c0), (0x8080, 0xaa00, 0xff00, 0xc0c0)]),
    ((2, 8, 1), 2, '((_2),_1,_8,_1):((_1),_0,_2,_0)',
     [(0x5555, 0x0001, 0x0003, 0xffff), (0xaaaa, 0x0002, 0x0003, 0xffff), (0x5555, 0x0004, 0x000c, 0xffff), (0xaaaa, 0x0008, 0x000c, 0xffff), (0x5555, 0x0010, 0x0030, 0xffff), (0xaaaa, 0x0020, 0x0030, 0xffff), (0x5555, 0x0040, 0x00c0, 0xffff), (0xaaaa, 0x0080, 0x00c0, 0xffff), (0x5555, 0x0100, 0x0300, 0xffff), (0xaaaa, 0x0200, 0x0300, 0xffff), (0x5555, 0x0400, 0x0c00, 0xffff), (0xaaaa, 0x0800, 0x0c00, 0xffff), (0x5555, 0x1000, 0x3000, 0xffff), (0xaaaa, 0x2000, 0x3000, 0xffff), (0x5555, 0x4000, 0xc000, 0xffff), (0xaaaa, 0x8000, 0xc000, 0xffff)]),
]


@pytest.mark.parametrize("shape,peers,layout,masks", CUTE_CLUSTERS,
                         ids=[f"{s[0]}x{s[1]}x{s[2]}-v{p}" for s, p, _, _ in CUTE_CLUSTERS])
def test_masks_match_cute(shape, peers, layout, masks):
    L = mc.cluster_layout_vmnk(shape, peers)
    assert L.cute_str(static=True) == layout
    for rank, (a, b, c01, c02) in enumerate(masks):
        coord = mc.cta_coord(L, rank)
        assert mc.create_tma_multicast_mask(L, coord, (2,)) == a, (rank, coord)
        assert mc.create_tma_multicast_mask(L, coord, (1,)) == b, (rank, coord)
        assert mc.create_tma_multicast_mask(L, coord, (0, 1)) == c01, (rank, coord)
        assert mc.create_tma_multicast_mask(L, coord, (0, 2)) == c02, (rank, coord)
        m = mc.cta_masks(L, rank)
        assert (m.a, m.b, m.c) == (a, b, c01 | c02)


def test_tutorial_03_cta_m1_n2():
    # examples/cute/tutorial/blackwell/03_mma_tma_multicast_sm100.cu, comments for CTA (m=1, n=2)
    L = mc.cluster_layout_vmnk((4, 4, 1), peers=1)
    assert str(L) == "((1),4,4,1):((0),1,4,0)"
    rank = L(0, 1, 2, 0)
    assert rank == 9
    m = mc.cta_masks(L, rank)
    assert (m.a, m.b, m.c) == (0x2222, 0x0F00, 0x2F22)


def test_reference_cluster_layout():
    # REFERENCE.md: (2,2,4,1):(8,4,1,0), CTA (0,1,2,0): B mask 0x0044 (CTAs 2 and 6), A mask 0x00F0
    L = Layout((2, 2, 4, 1), (8, 4, 1, 0))
    assert mc.create_tma_multicast_mask(L, (0, 1, 2, 0), (1,)) == 0x0044
    assert mc.create_tma_multicast_mask(L, (0, 1, 2, 0), (2,)) == 0x00F0
    s = mc.mask_steps(L, (0, 1, 2, 0), (1,))
    # the base of the projected slice is the layout at the coordinate with the mode set to 0
    assert s.offset == L(0, 0, 2, 0) == 2
    assert str(s.slice) == "(2):(4)" and s.ranks == (2, 6)


def test_two_sm_cluster_layout_and_masks():
    L = mc.cluster_layout_vmnk((4, 4), peers=2)
    assert str(L) == "((2),2,4,1):((1),2,4,0)"
    m = mc.cta_masks(L, 1)                     # v=1, m=0, n=0
    assert mc.cta_coord(L, 1) == (1, 0, 0, 0)
    assert (m.a, m.b, m.c) == (0x2222, 0x000A, 0x333F)


def test_mask_without_modes_is_the_cta_itself():
    L = mc.cluster_layout_vmnk((2, 4))
    for r in range(L.size()):
        assert mc.create_tma_multicast_mask(L, mc.cta_coord(L, r), ()) == 1 << r


def test_format_mask():
    assert mc.format_mask(0x2222) == "0x2222 = 0b0010001000100010 (ranks 1, 5, 9, 13)"
    assert mc.mask_ranks(0x0F00) == [8, 9, 10, 11]


# ---- the box truncation and tma_partition -------------------------------------------------------
@pytest.mark.parametrize("tile,n,box", [
    ((64, 128), 1, (64, 128)),
    ((64, 128), 4, (64, 32)),      # tutorial 03's A tile over the 4 CTAs along N
    ((64, 256), 4, (64, 64)),      # its B tile over the 4 CTAs along M
    ((64, 2), 4, (32, 1)),         # the split runs out of rows and continues into the inner dim
    ((64, 4, 2), 4, (64, 2, 1)),
])
def test_multicast_box_follows_cute(tile, n, box):
    assert mc.multicast_box(tile, n) == box


def test_multicast_box_rejects_what_cute_asserts():
    with pytest.raises(ValueError, match="divide one another"):
        mc.multicast_box((64, 6), 4)
    with pytest.raises(ValueError, match="cannot be split"):
        mc.multicast_box((2, 2), 8)


def test_tma_partition_tutorial_03():
    # A tile 128 x 64 half (K-major), 4 CTAs along N: CTA n issues rows 32n..32n+31, 4096 B at 4096 n
    for n in range(4):
        s = mc.tma_partition((64, 128), 4, n, 2)
        assert (s.box, s.origin, s.smem_offset, s.nbytes) == ((64, 32), (0, 32 * n), 4096 * n, 4096)


def test_tutorial_transaction_bytes():
    # tutorial 03: tma_transaction_bytes = sizeof(tAsA) + sizeof(tBsB) = 128x64 + 256x64 halves
    t3 = mc.MulticastConfig(cluster=(4, 4), tile_m=128, tile_n=256, tile_k=64)
    assert t3.expect_tx_bytes == 49152
    assert all(p.expect_tx == 49152 for p in mc.plan(t3))
    # tutorial 04 (2-SM): size<0>(layout) * (sizeof(tAsA) + sizeof(tBsB)) on the leader, each CTA
    # holding 128 rows of A and half of the MMA's 256 rows of B
    t4 = mc.MulticastConfig(cluster=(4, 4), peers=2, tile_m=128, tile_n=128, tile_k=64)
    for p in mc.plan(t4):
        assert p.expect_tx == 32768
        assert p.expect_tx_2sm == (65536 if p.coord[0] == 0 else 0)


CONFIGS = [mc.MulticastConfig(cluster=c, peers=p, operands=o)
           for c, p, o in [((2, 2), 1, "A"), ((2, 2), 1, "B"), ((2, 4), 1, "AB"), ((4, 2), 1, "AB"),
                           ((4, 2), 2, "AB"), ((1, 8), 1, "AB"), ((8, 1), 2, "B")]]
CONFIGS += [mc.MulticastConfig(cluster=(2, 4), swizzle="none", grid_clusters=(2, 2)),
            mc.MulticastConfig(cluster=(4, 2), swizzle="64B", tile_k=32, grid_clusters=(3, 1)),
            mc.MulticastConfig(cluster=(4, 4), tile_n=256)]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.cluster}-v{c.peers}-{c.operands}-{c.swizzle}-{c.grid}")
def test_plan_covers_every_tile_exactly_once(cfg):
    for p in mc.plan(cfg):
        covered = np.zeros(cfg.smem_bytes, dtype=int)
        for op, src, off, nbytes in p.receives:
            covered[off:off + nbytes] += 1
        for op in cfg.operands:
            base = cfg.smem_base(op)
            assert (covered[base:base + cfg.tile_bytes(op)] == 1).all(), (p.block, op)
        assert p.expect_tx == cfg.expect_tx_bytes == sum(cfg.tile_bytes(op) for op in cfg.operands)
        for iss in p.issues:
            assert iss.mask >> p.rank & 1, "a CTA always receives its own slice"


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"{c.cluster}-v{c.peers}-{c.operands}-{c.swizzle}-{c.grid}")
def test_model_gives_every_cta_its_whole_tile(cfg):
    ops = mc.make_operands(cfg, seed=3)
    model = mc.multicast_model(cfg, ops)
    assert np.array_equal(model, mc.expected_smem(cfg, ops))
    # and the tiles differ between CTAs that should hold different data
    gx = cfg.grid[0]
    if "A" in cfg.operands and gx > 1:
        assert not np.array_equal(model[0, :cfg.tile_bytes("A")], model[1, :cfg.tile_bytes("A")])


def test_wrong_masks_are_caught(monkeypatch):
    # Sending A with the B mask leaves holes: the comparison must see it.
    cfg = mc.MulticastConfig(cluster=(2, 4), operands="A")
    ops = mc.make_operands(cfg)
    good = mc.expected_smem(cfg, ops)
    real = mc.cta_masks
    monkeypatch.setattr("bwlab.multicast.partition.cta_masks",
                        lambda L, r: (lambda m: mc.CtaMasks(m.rank, m.coord, m.b, m.b, m.c))(real(L, r)))
    assert not np.array_equal(mc.multicast_model(cfg, ops), good)


def test_smem_model_uses_the_address_for_the_swizzle():
    """The 128B swizzle XORs a row's 16-byte chunk index with address bits 7-9: moving the tile area by a
    multiple of 1024 changes nothing, by 128/256/512 bytes it permutes each 128-byte row's chunks by
    chunk ^ (row phase at 0) ^ (row phase at the new address). (Comparing 1024 with 0 alone could not
    fail for a model that ignored the address.)"""
    cfg = mc.MulticastConfig(cluster=(2, 2), operands="A")
    ops = mc.make_operands(cfg)
    assert cfg.tensor_map("A").swizzle == "128B" and cfg.tensor_map("A").box_shape[0] * 2 == 128
    at0 = mc.multicast_model(cfg, ops, 0)
    assert np.array_equal(mc.multicast_model(cfg, ops, 1024), at0)
    assert np.array_equal(mc.multicast_model(cfg, ops, 3072), at0)
    rows = at0.reshape(cfg.n_ctas, -1, 8, 16)                    # [cta][128-byte row][chunk][byte]
    row = np.arange(rows.shape[1])[:, None]
    for address in (128, 256, 512, 896):
        moved = mc.multicast_model(cfg, ops, address)
        assert not np.array_equal(moved, at0), address
        chunk = np.arange(8)[None, :] ^ (row & 7) ^ ((row + address // 128) & 7)
        want = rows[:, row, chunk].reshape(at0.shape)
        assert np.array_equal(moved, want), address
    with pytest.raises(ValueError):
        mc.multicast_model(cfg, ops, 64)  # TMA needs a 128-byte aligned destination


def test_plan_arrays_match_plan():
    cfg = mc.MulticastConfig(cluster=(4, 2), operands="AB", grid_clusters=(2, 1))
    issues, tx = mc.plan_arrays(cfg)
    for i, p in enumerate(mc.plan(cfg)):
        a, b = issues[i]
        assert (a["cta_mask"], a["c0"], a["c1"], a["smem_offset"]) == (p.issues[0].mask, *p.issues[0].coords, p.issues[0].smem_offset)
        assert b["cta_mask"] == p.masks.b
        assert tx[i] == p.expect_tx
    assert mc.plan_arrays(cfg, extra_tx=16)[1][0] == tx[0] + 16


@pytest.mark.parametrize("bad,match", [
    (lambda: mc.cluster_layout_vmnk((4, 4), peers=3), "peers"),
    (lambda: mc.cluster_layout_vmnk((3, 2), peers=2), "multiple of peers"),
    (lambda: mc.cluster_layout_vmnk((4, 8)), "at most 16"),
    (lambda: mc.cluster_layout_vmnk((2, 0)), "positive"),
    (lambda: mc.create_tma_multicast_mask(Layout((2, 2), (1, 2)), (0, 1), (3,)), "mode 3"),
    (lambda: mc.create_tma_multicast_mask(Layout((2, 2), (1, 2)), (0, 1, 0), (1,)), "2 entries"),
    (lambda: mc.create_tma_multicast_mask(Layout((4, 8), (1, 4)), (0, 0), (1,)), "ranks 0..15"),
    (lambda: mc.cta_coord(mc.cluster_layout_vmnk((2, 2)), 4), "outside the cluster"),
    (lambda: mc.MulticastConfig(cluster=(2, 2), operands="C"), "operands"),
    (lambda: mc.MulticastConfig(cluster=(1, 8), tile_m=4, operands="A"), "multiples of 128"),  # 64-byte slices
    (lambda: mc.MulticastConfig(tile_m=300), "1..256"),
    (lambda: mc.MulticastConfig(tile_k=128), "swizzle"),          # 256-byte rows under 128B swizzle
    (lambda: mc.MulticastConfig(dtype="float64", tile_k=256, tile_m=256, swizzle="none",
                                operands="A", cluster=(1, 1)), "SMEM"),
    (lambda: mcheck.BenchConfig(cluster=3), "1, 2, 4 or 8"),
    (lambda: mcheck.BenchConfig(cluster=8, ctas=12), "whole number"),
])
def test_bad_input_raises_value_error(bad, match):
    with pytest.raises(ValueError, match=match):
        bad()


def test_runner_refuses_non_portable_clusters_before_the_driver():
    cfg = mc.MulticastConfig(cluster=(4, 4))
    with pytest.raises(ValueError, match="portable"):
        mc.run_multicast(cfg, mc.make_operands(cfg))


def test_ncu_csv_is_read_per_launch():
    head = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",' \
           '"Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"'
    row = '"{i}","1","python3","h","{k}","1","7","(128, 1, 1)","(32, 1, 1)","0","9.0","Command line ' \
          'profiler metrics","{m}","sector","{v}"'
    text = "\n".join(["==PROF== Connected", "some stdout line", head,
                      row.format(i=0, k="tma_multicast_bench", m="lts__t_sectors_srcunit_tex_op_read.sum", v="1,024"),
                      row.format(i=0, k="tma_multicast_bench", m="lts__t_sectors_op_read.sum", v="2,048"),
                      row.format(i=1, k="other_kernel", m="lts__t_sectors_srcunit_tex_op_read.sum", v="7"),
                      row.format(i=2, k="tma_multicast_bench", m="lts__t_sectors_srcunit_tex_op_read.sum", v="256")])
    assert mcheck.ncu_sectors(text) == [1024, 256]
    assert mcheck.ncu_sectors(text, "lts__t_sectors_op_read.sum") == [2048]
    assert mcheck.ncu_sectors("no csv here") == []


def test_bench_bytes_are_derived_from_the_configuration():
    b = mcheck.BenchConfig(cluster=4, ctas=128, iters=10)
    assert b.tile_bytes == 8 * 64 * 128
    assert b.smem_bytes == mcheck.BENCH_STAGES * b.tile_bytes + 1024 <= 227 * 1024
    with pytest.raises(ValueError, match="SMEM"):
        mcheck.BenchConfig(boxes_per_tile=16)
    assert b.bytes_into_smem() == 128 * 10 * b.tile_bytes
    assert b.bytes_from_l2(0) == b.bytes_into_smem()
    assert b.bytes_from_l2(1) * 4 == b.bytes_into_smem()
    assert b.bytes_from_l2(2) == 0


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_kernel_ptx_has_the_cluster_handshake(arch):
    from bwlab.compile import compile_cuda
    r = compile_cuda("tma_multicast", arch=arch, defines={"CLUSTER_X": 2, "CLUSTER_Y": 4})
    ptx = r.ptx_of("tma_multicast_tile")
    assert ".reqnctapercluster 2, 4, 1" in ptx
    order = ["fence.mbarrier_init.release.cluster", "barrier.cluster.arrive", "mbarrier.arrive.expect_tx",
             "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster",
             "mbarrier.try_wait.parity.acquire.cluster"]
    pos = [ptx.index(o) for o in order]
    assert pos == sorted(pos), "init -> fence -> cluster barrier -> expect_tx -> multicast -> wait"
    assert ptx.rindex("barrier.cluster.wait") > pos[-1], "a final cluster barrier after the wait"


def test_pictures_have_titles_and_legends():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    L = mc.cluster_layout_vmnk((2, 4), peers=2)
    fig, ax = plt.subplots()
    mc.plot_cluster(ax, L)
    assert ax.get_title() and ax.get_legend() is not None
    cfg = mc.MulticastConfig(cluster=(2, 2), operands="AB")
    ops = mc.make_operands(cfg)
    smem = mc.multicast_model(cfg, ops)
    smem[1, 100] ^= 0xFF  # one wrong byte in CTA 1
    run = mc.MulticastRun(cfg, smem, np.array([p.rank for p in mc.plan(cfg)]), np.zeros(4, dtype=np.int64),
                          np.array([(b % 2, b // 2) for b in range(4)]), ops)
    check = mc.compare_run(run)
    assert not check.ok and check.bad_ctas == [1] and check.bad_bytes == 1
    for f in (mc.plot_masks_of(L, 3), mc.plot_every_mask(L, "C"), mc.plot_landing(cfg, (1, 1)),
              mc.plot_smem_check(run), mc.plot_savings([cfg])):
        assert f._suptitle is not None or any(a.get_title() for a in f.axes)
        assert f.legends or any(a.get_legend() is not None for a in f.axes)
    plt.close("all")


def test_bench_config_rules():
    from bwlab.checks.multicast import BenchConfig, parse_depth
    cfg = parse_depth("4x48")
    assert (cfg.stages, cfg.box_rows) == (4, 48)
    with pytest.raises(ValueError, match="2..8 stages"):
        BenchConfig(stages=1)
    with pytest.raises(ValueError, match="SMEM"):
        parse_depth("4x64")  # 4 x 64 KiB + alignment exceeds one CTA's 227 KiB
    with pytest.raises(ValueError, match="STAGESxBOX_ROWS"):
        parse_depth("deep")
    with pytest.raises(ValueError, match="1, 2, 4 or 8"):
        BenchConfig(cluster=3)


# ---- the one interface: model / run with the same parameters, the MulticastLoad case ------------
def test_model_and_run_take_the_same_parameters():
    import inspect
    m = list(inspect.signature(mc.multicast_model).parameters)
    r = [n for n, p in inspect.signature(mc.run_multicast).parameters.items() if p.kind != p.KEYWORD_ONLY]
    assert m == r == ["cfg", "operands", "smem_address"]


def test_runner_refuses_a_tile_area_off_the_kernels_boundary():
    cfg = mc.MulticastConfig(cluster=(2, 2))
    with pytest.raises(ValueError, match="1024-byte boundary"):
        mc.run_multicast(cfg, mc.make_operands(cfg), smem_address=128)


def test_case_model_is_the_tile_area_of_every_cta():
    cfg = mc.MulticastConfig(cluster=(2, 4), operands="AB")
    case = mc.MulticastLoad(cfg, seed=5)
    got = case.model()
    assert isinstance(got, np.ndarray) and got.dtype == np.uint8
    assert got.shape == (cfg.n_ctas, cfg.smem_bytes)
    assert np.array_equal(got, mc.expected_smem(cfg, mc.make_operands(cfg, 5)))
    res = case.check(got)
    assert res.ok and "all" in str(res)
    with pytest.raises(ValueError, match="MulticastConfig"):
        mc.MulticastLoad((2, 2))


def test_case_check_names_cta_byte_and_slice():
    cfg = mc.MulticastConfig(cluster=(2, 4), operands="AB")
    case = mc.MulticastLoad(cfg)
    got = case.model()
    # CTA 3 = block (1, 1), rank 3; A slices are 4096 B (the tile's 16 KiB split among 4 CTAs along N):
    # byte 0x1388 sits in slice 1, issued by rank 1 + 2 * 1 = 3.
    got[3, 0x1388] ^= 0x01
    res = case.check(got)
    assert not res.ok and res.differing == 1
    text = str(res)
    assert "CTA 3 (block (1, 1), cluster rank 3), SMEM byte 0x01388" in text
    assert "operand A slice 1, issued by rank 3" in text
    assert "box coordinates" in text


def test_case_hint_for_a_mask_that_leaves_out_a_cta():
    cfg = mc.MulticastConfig(cluster=(2, 4), operands="AB")
    case = mc.MulticastLoad(cfg)
    got = case.model()
    # CTA 2 = block (0, 1) = (m 0, n 1): its B slice 1 comes from rank 3 (m 1, n 1), whose B mask
    # is 0x000C (ranks 2 and 3). Pretend that mask missed rank 2.
    p = case.plans[2]
    op, src, off, n = next(r for r in p.receives if r[0] == "B" and r[1] == 3)
    got[2, off:off + n] = mc.FILL_BYTE
    text = str(case.check(got))
    assert "cluster rank 2" in text and "operand B slice 1, issued by rank 3" in text
    assert "the B mask of rank 3 (0x000C) must include rank 2" in text and "expect_tx" in text


def test_case_hint_for_a_slice_at_the_wrong_offset():
    cfg = mc.MulticastConfig(cluster=(2, 4), operands="A")
    case = mc.MulticastLoad(cfg)
    good = case.model()
    got = good.copy()
    got[0, 0:4096] = good[0, 4096:8192]  # slice 1's bytes where slice 0 belongs
    text = str(case.check(got))
    assert "slice 0, issued by rank 0" in text and "slice offset" in text


def test_case_hint_for_bytes_where_no_slice_lands():
    # A tile 4 x 64 halves = 512 B; B starts at the next 1024-byte boundary: bytes 512..1023 get nothing.
    cfg = mc.MulticastConfig(cluster=(2, 2), operands="AB", tile_m=4, swizzle="none")
    case = mc.MulticastLoad(cfg)
    got = case.model()
    gap = cfg.tile_bytes("A")
    assert cfg.smem_base("B") > gap
    got[0, gap] = 0
    text = str(case.check(got))
    assert "no slice lands there" in text and "slice offsets" in text


def test_case_show_draws_the_landing():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig = mc.MulticastLoad(mc.MulticastConfig(cluster=(2, 2))).show(block=(1, 0))
    assert fig.axes[0].get_title().startswith("CTA (1, 0)")
    plt.close("all")


# ---- the C struct the NumPy record mirrors ----------------------------------------------------------
def _struct_layout(text, struct):
    """(sizeof, {field: offset}) of `struct` as the static_assert lines of a .cu fix it.

    NVRTC has no offsetof, so the .cu asserts sizeof(struct), each field's size and that the sizes
    add up to sizeof (no padding); each field then sits at the sum of the sizes declared before it.
    The declaration order is read from the struct's body."""
    import re
    body = re.search(r"struct\s+" + struct + r"\s*\{(.*?)\};", text, re.S).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    order = [n for decl in body.split(";") if decl.strip()
             for n in re.findall(r"(\w+)\s*(?:,|$)", decl.strip().split(None, 1)[1])]
    size = int(re.search(r"static_assert\(\s*sizeof\(" + struct + r"\)\s*==\s*(\d+)", text).group(1))
    sizes = {m.group(1): int(m.group(2)) for m in
             re.finditer(r"static_assert\(\s*sizeof\(" + struct + r"::(\w+)\)\s*==\s*(\d+)", text)}
    assert sorted(sizes) == sorted(order), f"every field of {struct} needs its size asserted"
    assert re.search(r"sizeof\(" + struct + r"::\w+\)\s*\+[^;]*==\s*sizeof\(" + struct + r"\)", text), \
        f"the .cu must assert that {struct}'s field sizes add up to its size"
    offsets, at = {}, 0
    for name in order:
        offsets[name] = at
        at += sizes[name]
    assert at == size
    return size, offsets


def test_tma_issue_dtype_matches_the_struct_in_the_kernel():
    from bwlab.source import source_text
    size, offsets = _struct_layout(source_text("tma_multicast.cu"), "TmaIssue")
    dt = mc.TMA_ISSUE_DTYPE
    assert size == dt.itemsize == 16
    assert offsets == {name: dt.fields[name][1] for name in dt.names}
    assert list(offsets) == list(dt.names)


# ---- the commands ---------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", ["validate", "bench"])
def test_commands_help_exits_zero(entry, capsys):
    import importlib
    main = importlib.import_module(f"bwlab.{entry}").main
    assert main(["multicast", "--help"]) == 0
    assert "--out" in capsys.readouterr().out


def test_validation_configs_are_valid_and_cover_two_sm():
    full, quick = mcheck.validation_configs(), mcheck.validation_configs(quick=True)
    assert len(full) == 29 and len(quick) == 12
    assert any(c.peers == 2 for c in quick) and {c.swizzle for c in full} == {"none", "64B", "128B"}


def test_validate_report_lines_are_those_recorded_on_the_h100(monkeypatch, capsys):
    """`python -m bwlab.validate multicast` with the GPU replaced by the model prints, line for line,
    what docs/results/multicast_validate_h100.txt recorded (banner and the timeout's message aside)."""
    from bwlab import device
    from bwlab.results import report_text
    from bwlab.runtime import MbarrierTimeout

    def fake_launch(cfg, operands, *, extra_tx=0):
        if extra_tx:
            rec = dict(phase_parity=0, expected_tx=cfg.expect_tx_bytes + extra_tx, block_x=0, block_y=0,
                       block_z=0, thread=0, cta_rank=0, waited_ns=200_000_000)
            raise MbarrierTimeout("tma_multicast_tile", "tile_full", rec)
        plans = mc.plan(cfg)
        return mc.MulticastRun(cfg, mc.multicast_model(cfg, operands, 1024), np.array([p.rank for p in plans]),
                               np.full(cfg.n_ctas, 1024),
                               np.array([(p.block[0] % cfg.cluster[0], p.block[1] % cfg.cluster[1]) for p in plans]),
                               operands)

    monkeypatch.setattr(mcheck, "launch_multicast", fake_launch)
    monkeypatch.setattr(device, "tier", lambda stage: "hardware")
    assert mcheck.validate_main([]) == 0
    def aside(lines):
        """The lines with the timeout's message aside: its first line cut after the kernel's name, its
        further lines (the headline's bytes and timeout) dropped."""
        out, in_timeout = [], False
        for line in lines:
            if in_timeout and line.startswith("  "):
                continue
            in_timeout = "MbarrierTimeout" in line
            out.append(line.split("MbarrierTimeout: tma_multicast_tile:")[0] if in_timeout else line)
        return out
    got = capsys.readouterr().out.splitlines()[1:]
    want = report_text("multicast_validate_h100.txt").split("\n\n# command")[0].splitlines()[1:]
    assert aside(got) == aside(want) and any("MbarrierTimeout: tma_multicast_tile:" in line for line in got)


def test_bench_report_lines_are_those_recorded_on_the_h100(monkeypatch, capsys):
    """`python -m bwlab.bench multicast`, fed the times the H100 measured, prints the recorded tables
    line for line (docs/results/multicast_bench_h100.txt, banner aside)."""
    from types import SimpleNamespace

    from bwlab import device
    from bwlab.results import report_text
    text = report_text("multicast_bench_h100.txt").split("\n\n\nNsight")[0]
    want = text.splitlines()[1:]
    measured = {}
    for line in want:
        f = line.split()
        depth = None
        if "KiB" in f:
            depth, f = " ".join(f[:4]), f[4:]
        if len(f) >= 10 and f[0].isdigit() and f[-2] in ("True", "False"):
            mode = [k for k, v in mcheck.BENCH_MODES.items() if v == f[2]][0]
            measured[(depth, int(f[0]), int(f[1]), mode)] = (float(f[3]), float(f[4]), f[-2] == "True", int(f[-1]))

    def fake_run_bench(cfg, modes=(0, 1, 2), warmup=3, repeat=15, single=False):
        depth = cfg.label() if modes == (0, 1) else None
        res = {}
        for m in modes:
            med, mn, resident, occ = measured[(depth, cfg.ctas, cfg.cluster, m)]
            res[m] = (SimpleNamespace(median_ms=med, min_ms=mn), resident)
        return res, occ

    monkeypatch.setattr(mcheck, "run_bench", fake_run_bench)
    monkeypatch.setattr(device, "tier", lambda stage: "hardware")
    assert mcheck.bench_main([]) == 0
    got = capsys.readouterr().out.splitlines()[1:]
    assert len(measured) == 2 * 4 * 4 + 3 * 4 * 2  # (ctas x clusters x modes) + (depths x clusters x 2)
    assert len(got) == len(want)

    def same(g, w):  # the file's times are rounded, so the columns derived from them may differ a little
        if g == w:
            return True
        if len(g) != len(w) or len(g.split()) != len(w.split()):
            return False
        for a, b in zip(g.split(), w.split()):
            try:
                x, y = float(a.rstrip("x")), float(b.rstrip("x"))
            except ValueError:
                if a != b:
                    return False
                continue
            if abs(x - y) > (1 if "." not in b else 0.01 + 1e-3 * abs(y)):
                return False
        return True

    assert all(same(g, w) for g, w in zip(got, want)), [(g, w) for g, w in zip(got, want) if not same(g, w)][:3]



# ---- slices need 128-byte alignment, not 1024: the swizzle follows the SMEM address ----------------
SLICE_128 = [  # (config, operand): slices that are multiples of 128 bytes but not of 1024
    (mc.MulticastConfig(cluster=(2, 4), tile_m=24, operands="A"), "A"),               # 768-byte slices
    (mc.MulticastConfig(cluster=(1, 8), tile_m=8, operands="A"), "A"),                # 128-byte slices
    (mc.MulticastConfig(cluster=(4, 2), tile_n=40, operands="AB"), "B"),              # 1280-byte slices
    (mc.MulticastConfig(cluster=(2, 2), tile_k=32, tile_m=12, swizzle="64B", operands="A"), "A"),
    (mc.MulticastConfig(cluster=(2, 2), tile_k=16, tile_m=8, swizzle="32B", operands="A"), "A"),
]


@pytest.mark.parametrize("cfg,op", SLICE_128, ids=lambda x: x if isinstance(x, str) else
                         f"{x.cluster}-{x.swizzle}-m{x.tile_m}n{x.tile_n}k{x.tile_k}")
@pytest.mark.parametrize("smem_address", [0, 0x80, 0x2380])
def test_slices_aligned_to_128_bytes_are_accepted_and_modelled_by_address(cfg, op, smem_address):
    from bwlab.tma import tma_load_model
    nbytes = cfg.slice_of(op, 0).nbytes
    assert nbytes % 128 == 0 and nbytes % 1024 != 0
    ops = mc.make_operands(cfg, seed=11)
    model = mc.multicast_model(cfg, ops, smem_address)
    # every slice in every CTA is the TMA load of the same box at that slice's absolute address
    tmap = cfg.tensor_map(op)
    for p in mc.plan(cfg):
        for src_op, src, off, n in p.receives:
            if src_op != op:
                continue
            iss = next(i for q in mc.plan(cfg) if q.rank == src and q.cluster == p.cluster
                       for i in q.issues if i.operand == op)
            want = tma_load_model(ops[op], tmap, iss.coords, smem_address + off)
            gx = cfg.grid[0]
            assert np.array_equal(model[p.block[0] + gx * p.block[1], off:off + n], want)
    # and the slices together are the whole tile loaded in one box at the tile's address
    assert np.array_equal(model, mc.expected_smem(cfg, ops, smem_address))
    if smem_address % 1024 == 0:  # the case models the kernel's tile area, on a 1024-byte boundary
        assert mc.MulticastLoad(cfg, ops).check(model).ok


def test_a_slice_off_the_pattern_start_is_not_the_slice_at_the_pattern_start():
    # The 128B pattern repeats every 1024 bytes: slice 1 of a 768-byte split starts at pattern row 6.
    # Its image is the box swizzled for that address, which differs from the same box at 0.
    from bwlab.tma import tma_load_model
    cfg, op = SLICE_128[0]
    ops = mc.make_operands(cfg)
    s = cfg.slice_of(op, 1)
    assert s.smem_offset == 768 and (s.smem_offset >> 7) & 7 == 6
    at_768 = mc.multicast_model(cfg, ops)[0, 768:768 + s.nbytes]
    box = tma_load_model(ops[op], cfg.tensor_map(op), s.origin, 768)
    assert np.array_equal(at_768, box)
    assert not np.array_equal(at_768, tma_load_model(ops[op], cfg.tensor_map(op), s.origin, 0))


def test_slice_picture_shows_the_pattern_row():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cfg, op = SLICE_128[0]
    grid = mc.slice_chunks(cfg, op, 1)
    assert grid.shape == (6, 8)
    # row r of the slice sits at byte 768 + 128 r, pattern row (6 + r) % 8: chunk c lands at c ^ row
    for r in range(6):
        assert list(grid[r]) == [c ^ ((6 + r) % 8) for c in range(8)]
    fig = mc.plot_slice_swizzle(cfg, op, 1)
    assert fig._suptitle is not None and all(a.get_title() for a in fig.axes)
    assert fig.legends or any(a.get_legend() is not None for a in fig.axes)
    plt.close("all")
