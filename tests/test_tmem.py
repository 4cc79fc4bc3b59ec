"""bwlab.tmem: addresses, access forms, the tcgen05.ld/st model and the TMEM allocator (CPU only)."""
import numpy as np
import pytest

from bwlab import tmem
from bwlab.tmem import TensorMemory, TmemAccess, TmemError, tcgen05_ld, tcgen05_st


# ---- addresses ---------------------------------------------------------------------------------

def test_address_fields():
    assert tmem.encode_address(0, 0) == 0
    assert tmem.encode_address(32, 64) == 0x00200040
    assert tmem.encode_address(127, 511) == (127 << 16) | 511
    assert tmem.decode_address(0x00600100) == (96, 256)
    for lane, col in [(0, 0), (5, 7), (64, 300), (127, 511)]:
        assert tmem.decode_address(tmem.encode_address(lane, col)) == (lane, col)
    assert "lane 32" in tmem.format_address(0x00200040) and "column 64" in tmem.format_address(0x00200040)


@pytest.mark.parametrize("lane,col", [(128, 0), (-1, 0), (0, 512), (0, -1)])
def test_address_out_of_tmem(lane, col):
    with pytest.raises(TmemError, match="lane|column"):
        tmem.encode_address(lane, col)


@pytest.mark.parametrize("taddr", [128 << 16, 512, 1 << 32, -1])
def test_decode_outside_tmem(taddr):
    with pytest.raises(TmemError):
        tmem.decode_address(taddr)


def test_warp_quarters():
    assert tmem.warp_lane_range(0) == (0, 32)
    assert tmem.warp_lane_range(3) == (96, 128)
    assert tmem.warp_lane_range(5) == (32, 64)   # warp 5 of an 8-warp CTA: the second quarter
    with pytest.raises(TmemError, match="warp"):
        tmem.warp_lane_range(32)


# ---- access forms ------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,num,match", [
    ("32x1x32b", 1, "32x32b"),          # a spelling that is not PTX (the shape is .32x32b)
    ("16x64b", 3, "num"),
    ("32x32b", 256, "num"),
    ("16x128b", 128, "256 registers"),
    ("16x256b", 64, "256 registers"),
])
def test_invalid_forms(shape, num, match):
    with pytest.raises(TmemError, match=match):
        TmemAccess(shape, num)


def test_half_split_offset_rules():
    assert TmemAccess("16x32bx2", 8).half_split_off == 8
    assert TmemAccess("16x32bx2", 8, pack16=True).half_split_off == 16
    with pytest.raises(TmemError, match="only .16x32bx2"):
        TmemAccess("16x64b", 1, half_split_off=1)
    with pytest.raises(TmemError, match="non-negative"):
        TmemAccess("16x32bx2", 1, half_split_off=-1)
    with pytest.raises(TmemError, match="past TMEM"):
        TmemAccess("16x32bx2", 128, half_split_off=400)


def test_registers_and_widths():
    assert [TmemAccess(s, 4).registers for s in tmem.SHAPES] == [4, 4, 8, 16, 4]
    assert [TmemAccess(s, 4).width for s in tmem.SHAPES] == [4, 8, 16, 32, 8]
    assert TmemAccess("16x64b", 4, pack16=True).width == 16
    assert TmemAccess("16x64b", 8).ptx("st") == "tcgen05.st.sync.aligned.16x64b.x8.b32"
    assert TmemAccess("16x64b", 8, True).ptx("st") == "tcgen05.st.sync.aligned.16x64b.x8.unpack::16b.b32"
    assert TmemAccess("16x32bx2", 2).wrapper("ld") == "tcgen05_ld_16x32bx2_x2<2>"
    assert len(tmem.all_accesses()) == 74


# ---- the ld/st model ---------------------------------------------------------------------------

def random_image(seed=0):
    return np.random.default_rng(seed).integers(0, 1 << 32, size=(128, 512), dtype=np.uint32)


def test_ld_32x32b_reads_lane_t_column_j():
    img = random_image()
    regs = tcgen05_ld(img, tmem.encode_address(64, 100), "32x32b", 8, warp=2)
    np.testing.assert_array_equal(regs, img[64:96, 100:108])


def test_ld_16x256b_by_hand():
    # thread 5, register 3 -> lane 1 + 8, column 2*1 + 1 (see ld_fragment_map's docstring)
    img = random_image(1)
    regs = tcgen05_ld(img, tmem.encode_address(16, 40), "16x256b", 1, warp=0)
    assert regs[5, 3] == img[16 + 9, 40 + 3]


def test_pack16_ld_takes_low_halves_of_two_cells():
    img = random_image(2)
    regs = tcgen05_ld(img, 0, "32x32b", 2, warp=0, pack16=True)
    low16 = img[:32, :4] & 0xFFFF      # lane t, columns 0..3
    np.testing.assert_array_equal(regs[:, 0], low16[:, 0] | (low16[:, 1] << 16))
    np.testing.assert_array_equal(regs[:, 1], low16[:, 2] | (low16[:, 3] << 16))


@pytest.mark.parametrize("acc", tmem.all_accesses(), ids=lambda a: a.label())
def test_st_then_ld_round_trip_and_st_touches_only_its_cells(acc):
    rng = np.random.default_rng(acc.registers)
    img = random_image(3)
    before = img.copy()
    lane = 32 if acc.lanes == 32 else 48   # warp 1's quarter (lanes 32..63)
    taddr = tmem.encode_address(lane, 0)
    regs = rng.integers(0, 1 << 32, size=(32, acc.registers), dtype=np.uint32)
    tcgen05_st(img, taddr, regs, acc, warp=1)
    np.testing.assert_array_equal(tcgen05_ld(img, taddr, acc, warp=1), regs)
    changed = img != before
    cells = acc.map().reshape(-1, 2)
    touched = np.zeros_like(changed)
    touched[lane + cells[:, 0], cells[:, 1]] = True
    assert not (changed & ~touched).any(), "st wrote a cell outside its map"
    if acc.pack16:  # unpack::16b: low halves carry the data; the model zeroes the upper halves
        assert (img[touched] >> 16 == 0).all()


def test_warp_may_only_touch_its_quarter():
    img = random_image()
    with pytest.raises(TmemError, match=r"warp 1 may access TMEM lanes 32\.\.63"):
        tcgen05_ld(img, tmem.encode_address(0, 0), "32x32b", 1, warp=1)
    with pytest.raises(TmemError, match="lanes 56..71"):
        tcgen05_ld(img, tmem.encode_address(56, 0), "16x64b", 1, warp=1)
    tcgen05_ld(img, tmem.encode_address(48, 0), "16x64b", 1, warp=5)   # warp 5 -> lanes 32..63
    with pytest.raises(TmemError, match="warp 2"):
        tcgen05_st(img, tmem.encode_address(32, 0), np.zeros((32, 1), np.uint32), "32x32b", 1, warp=2)


def test_columns_past_the_end():
    with pytest.raises(TmemError, match="past column 511"):
        tcgen05_ld(random_image(), tmem.encode_address(0, 500), "32x32b", 16, warp=0)


def test_st_shape_and_overlap_errors():
    img = random_image()
    with pytest.raises(TmemError, match=r"shape \(32, 4\)"):
        tcgen05_st(img, 0, np.zeros((32, 2), np.uint32), "16x64b", 4, warp=0)
    with pytest.raises(TmemError, match="same cells"):
        tcgen05_st(img, 0, np.zeros((32, 4), np.uint32), "16x32bx2", 4, warp=0, half_split_off=2)
    with pytest.raises(TmemError, match="uint32"):
        tcgen05_ld(img.astype(np.int64), 0, "32x32b", 1, warp=0)


# ---- the allocator -----------------------------------------------------------------------------

@pytest.mark.parametrize("ncols", [0, 16, 48, 96, 1024])
def test_alloc_power_of_two_in_range(ncols):
    with pytest.raises(TmemError, match=r"power of two in \[32, 512\]"):
        TensorMemory().alloc(cta=0, warp=0, ncols=ncols)


def test_alloc_writes_the_address_to_smem():
    tm = TensorMemory()
    smem = np.zeros(64, np.uint8)
    a0 = tm.alloc(cta=0, warp=0, ncols=128, smem=smem, smem_offset=8)
    a1 = tm.alloc(cta=0, warp=0, ncols=32, smem=smem, smem_offset=12)
    assert (a0, a1) == (0, 128)
    assert smem[8:16].view(np.uint32).tolist() == [0, 128]
    with pytest.raises(TmemError, match="4-byte aligned"):
        tm.alloc(cta=0, warp=0, ncols=32, smem=smem, smem_offset=6)


def test_ctas_share_the_512_columns():
    tm = TensorMemory()
    assert tm.alloc(cta=0, warp=0, ncols=256) == tmem.encode_address(0, 0)
    assert tm.alloc(cta=1, warp=3, ncols=128) == tmem.encode_address(0, 256)
    assert tm.alloc(cta=2, warp=0, ncols=64) == tmem.encode_address(0, 384)
    assert tm.free_columns == 64
    with pytest.raises(TmemError, match="exhausted.*would block"):
        tm.alloc(cta=3, warp=0, ncols=128)
    tm.dealloc(cta=1, warp=3, taddr=256, ncols=128)
    assert tm.alloc(cta=3, warp=0, ncols=128) == 256
    assert list(tm.owner_map()[[0, 255, 256, 383, 384, 447, 448]]) == [0, 0, 3, 3, 2, 2, -1]


def test_allocation_is_aligned_to_its_size_in_the_model():
    tm = TensorMemory()
    tm.alloc(cta=0, warp=0, ncols=32)
    assert tm.alloc(cta=1, warp=0, ncols=64) == 64       # 32..63 free but not 64-aligned
    assert tm.alloc(cta=2, warp=0, ncols=32) == 32


def test_dealloc_errors():
    tm = TensorMemory()
    a = tm.alloc(cta=0, warp=1, ncols=64)
    with pytest.raises(TmemError, match="free exactly what was allocated"):
        tm.dealloc(cta=0, warp=1, taddr=a, ncols=32)
    with pytest.raises(TmemError, match="CTA 1 holds no allocation"):
        tm.dealloc(cta=1, warp=1, taddr=a, ncols=64)
    with pytest.raises(TmemError, match=r"power of two in \[32, 512\]"):
        tm.dealloc(cta=0, warp=1, taddr=a, ncols=48)
    tm.dealloc(cta=0, warp=1, taddr=a, ncols=64)
    with pytest.raises(TmemError, match="freed twice.*previous allocation.*9.7.16.7.1"):
        tm.dealloc(cta=0, warp=1, taddr=a, ncols=64)


def test_dealloc_from_another_warp_is_a_note_not_an_error():
    # The ISA: one warp of the CTA allocates and deallocates; CuTe: the same warp only for repeated
    # allocations. Neither says the allocating warp must free, so the model frees and says so.
    tm = TensorMemory()
    a = tm.alloc(cta=0, warp=1, ncols=64)
    with pytest.warns(tmem.TmemNote, match=r"warp 0 of the allocation warp 1 made.*one warp of the CTA.*"
                                           r"CuTe asks for the same warp only for repeated allocations"):
        tm.dealloc(cta=0, warp=0, taddr=a, ncols=64)
    assert tm.allocations == [] and len(tm.notes) == 1 and "9.7.16.7.1" in tm.notes[0]
    tm.exit(cta=0)


def test_allocated_columns_must_not_increase_within_a_cta():
    tm = TensorMemory()
    tm.alloc(cta=0, warp=0, ncols=32)
    with pytest.raises(TmemError, match=r"64 columns after an allocation of 32 in CTA 0: the number of columns "
                                        r"allocated must not increase.*9\.7\.16\.7\.1"):
        tm.alloc(cta=0, warp=0, ncols=64)
    tm.alloc(cta=1, warp=0, ncols=64)       # another CTA has its own order
    tm.alloc(cta=1, warp=0, ncols=64)       # equal is not an increase
    tm.alloc(cta=1, warp=0, ncols=32)
    a = tm.allocations[0].taddr
    tm.dealloc(cta=0, warp=0, taddr=a, ncols=32)
    with pytest.raises(TmemError, match="must not increase"):   # any two allocations, freed or not
        tm.alloc(cta=0, warp=0, ncols=128)


def test_one_warp_allocates_for_the_cta():
    tm = TensorMemory()
    tm.alloc(cta=0, warp=2, ncols=32)
    with pytest.raises(TmemError, match="allocates from warp 2: one warp of the CTA performs the allocations.*CuTe"):
        tm.alloc(cta=0, warp=0, ncols=32)
    tm.alloc(cta=1, warp=0, ncols=32)   # another CTA picks its own warp


def test_relinquish_then_alloc_is_an_error():
    tm = TensorMemory()
    a = tm.alloc(cta=0, warp=0, ncols=32)
    tm.relinquish_alloc_permit(cta=0)
    with pytest.raises(TmemError, match="relinquish_alloc_permit"):
        tm.alloc(cta=0, warp=0, ncols=32)
    tm.dealloc(cta=0, warp=0, taddr=a, ncols=32)   # freeing is still allowed
    tm.alloc(cta=1, warp=0, ncols=512)             # and another CTA may allocate


def test_exit_with_tmem_held():
    tm = TensorMemory()
    a = tm.alloc(cta=4, warp=0, ncols=32)
    with pytest.raises(TmemError, match="deallocated before the kernel exits"):
        tm.exit(cta=4)
    tm.dealloc(cta=4, warp=0, taddr=a, ncols=32)
    tm.exit(cta=4)


def test_ld_st_through_tensor_memory_check_ownership():
    tm = TensorMemory()
    a = tm.alloc(cta=0, warp=0, ncols=32)
    b = tm.alloc(cta=1, warp=0, ncols=32)
    acc = TmemAccess("32x32b", 32)
    regs = np.arange(32 * 32, dtype=np.uint32).reshape(32, 32)
    tm.st(0, 0, a, regs, acc)
    np.testing.assert_array_equal(tm.ld(0, 0, a, acc), regs)
    with pytest.raises(TmemError, match="not all allocated by CTA 0"):
        tm.ld(0, 0, b, acc)
    with pytest.raises(TmemError, match="not all allocated by CTA 0"):
        tm.ld(0, 0, tmem.encode_address(0, 16), acc)   # runs into CTA 1's columns


# ---- the accumulator read-out --------------------------------------------------------------------

@pytest.mark.parametrize("acc", [a for a in tmem.all_accesses() if a.width <= 64],
                         ids=lambda a: a.label())
def test_every_accumulator_element_has_exactly_one_owner(acc):
    own = tmem.accumulator_owners(acc, 128, 64)
    assert (own >= 0).all()
    flat = {tuple(x) for x in own.reshape(-1, 5)}
    assert len(flat) == 128 * 64
    assert (own[..., 0] == np.arange(128)[:, None] // 32).all(), "warp w holds rows 32w..32w+31"


def test_32x32b_owner_is_thread_m_register_n():
    own = tmem.accumulator_owners(TmemAccess("32x32b", 32), 128, 64)
    m, n = np.meshgrid(np.arange(128), np.arange(64), indexing="ij")
    assert (own[..., 2] == m % 32).all() and (own[..., 3] == n % 32).all()
    assert (own[..., 1] == n // 32).all()


def test_read_accumulator_through_the_model():
    img = random_image(9)
    for acc in [TmemAccess("16x256b", 8), TmemAccess("16x32bx2", 16), TmemAccess("32x32b", 64)]:
        words, regs = tmem.read_accumulator(img, acc, 128, 64)
        np.testing.assert_array_equal(words, img[:, :64])
        assert len(regs) == len(tmem.epilogue_loads(acc, 64)) == 4 * (64 // acc.width) * (32 // acc.lanes)
    words, _ = tmem.read_accumulator(img, TmemAccess("16x128b", 4, pack16=True), 128, 64)
    np.testing.assert_array_equal(words, img[:, :64] & 0xFFFF)


def test_example_accumulator_reads_back():
    img, d, source = tmem.example_accumulator(64)
    words, _ = tmem.read_accumulator(img, TmemAccess("16x256b", 8), 128, 64)
    np.testing.assert_array_equal(words.view(np.float32).astype(np.float64), d)
    assert source


def test_epilogue_loads_rules():
    steps = tmem.epilogue_loads(TmemAccess("16x256b", 4), 64)
    assert len(steps) == 4 * 2 * 2       # 4 warps x 2 lane blocks x 2 column chunks of 32
    assert steps[2].taddr == tmem.encode_address(16, 0) and steps[2].warp == 0
    with pytest.raises(TmemError, match="multiple"):
        tmem.epilogue_loads(TmemAccess("16x256b", 4), 48)
    with pytest.raises(TmemError, match="adjacent"):
        tmem.epilogue_loads(TmemAccess("16x32bx2", 4, half_split_off=8), 64)


def test_pictures_have_titles_and_legends():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    tm = TensorMemory()
    tm.alloc(cta=0, warp=0, ncols=256)
    owners = tmem.plot_accumulator_owners(TmemAccess("16x256b", 8), highlight=(37, 13)).axes
    for ax in [tmem.plot_tmem(tm), tmem.plot_ld_map(TmemAccess("16x64b", 2, pack16=True), warp=1), owners[0]]:
        assert ax.get_title() and ax.get_legend() is not None
    # the zoom and the quarters name what they draw in their cells, so they carry no legend
    assert "thread (T) and register (r)" in owners[1].get_title()
    quarters = tmem.plot_warp_quarters()
    assert quarters.get_title() and sum("warps" in t.get_text() for t in quarters.texts) == 4
    fig = tmem.plot_gallery(1)
    assert fig._suptitle is not None and all(ax.get_title() for ax in fig.axes)
    assert all(fig.get_figwidth() <= 12 for fig in map(plt.figure, plt.get_fignums()))  # ~1000 px
    plt.close("all")


def test_widget_builds():
    pytest.importorskip("ipywidgets", reason="ipywidgets is not installed (e.g. the GPU image)")
    import matplotlib
    matplotlib.use("Agg")
    w = tmem.ld_widget()
    controls, _picture = w.children            # the picture sits right under the controls
    shape, num, pack, warp = controls.children
    assert [c.description for c in controls.children] == ["shape", ".num", "pack::16b", "warp"]
    assert controls.layout.flex_flow == "row wrap"
    assert list(num.options) == [f"x{n}" for n in tmem.legal_nums("16x256b")]
    shape.value = "32x32b"
    num.value = "x128"
    shape.value = "16x256b"                    # x128 is illegal there: the list and the value follow
    assert list(num.options)[-1] == "x32" and num.value == "x32"


def test_accumulator_layout_agrees_with_the_umma_stage():
    # M = 128, cta_group::1: D[m][n] at lane m, column n.
    lanes, cols = tmem.accumulator_layout(128, 64)
    m, n = np.meshgrid(np.arange(128), np.arange(64), indexing="ij")
    assert (lanes == m).all() and (cols == n).all()
    from bwlab import umma
    lay = umma.d_tmem_layout(64, 64, 1)          # layout F: 16 rows per warp quarter
    l64, c64 = tmem.accumulator_layout(64, 64)
    assert (l64 == lay.lane).all() and (c64 == lay.column).all()
    img, d, source = tmem.example_accumulator(64)
    assert source.startswith("bwlab.umma"), "the accumulator comes from the UMMA stage's tcgen05.mma model"
    own = tmem.accumulator_owners(TmemAccess("16x256b", 8), 64, 64)
    assert (own[..., 0] == np.arange(64)[:, None] // 16).all()   # layout F: warp w holds rows 16w..


# ---- the package's shape ---------------------------------------------------------------------------

def test_addresses_and_images_are_the_shared_model():
    from bwlab.hw import tmem as hw
    for name in ("LANES", "COLUMNS", "TmemError", "encode_address", "decode_address", "format_address",
                 "warp_lane_range", "new_image"):
        assert getattr(tmem, name) is getattr(hw, name), name


