"""Stage 5 model on the CPU: registers -> SMEM, banks, the proxy fence, bulk groups, alpha/beta.

Expected values are computed independently of bwlab.epilogue (by hand from the bank rule, from the
PTX ISA's swizzle tables, from IEEE rounding done with integer arithmetic).
"""
import numpy as np
import pytest

from bwlab.epilogue import (BulkAsyncGroups, EpilogueOrdering, OrderingError, RegisterStorePlan,
                            SmemTile, epilogue_alpha_beta, smem_bank, wavefronts)
from bwlab.epilogue import bits_to_float32 as from_dtype_bits
from bwlab.epilogue import float32_to_bits as to_dtype_bits


# ---- banks ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("stride,expect", [
    (16, 4),     # 8 lanes x 16 B = 128 contiguous bytes per quarter-warp: 1 wavefront each
    (0, 4),      # every lane the same 16 bytes: the same 4 words, no conflict
    (32, 8),     # 8 lanes span 256 B: each bank holds 2 distinct words per phase
    (64, 16),    # 4 distinct words per bank per phase
    (128, 32),   # every lane of a phase in the same 4 banks: 8-way
    (256, 32),
])
def test_v4_wavefronts_by_stride(stride, expect):
    r = wavefronts(np.arange(32) * stride, 16)
    assert r.wavefronts == expect
    assert r.ideal == 4 and r.conflicts == expect - 4


def test_v4_phases_are_quarter_warps():
    # Lanes 0 and 8 write the same bank but sit in different phases: no conflict.
    addr = np.arange(32) * 16
    addr[8] = 1024  # bank 0 again, in phase 1 where bank 0 is otherwise unused (lane 8 moved)
    assert wavefronts(addr, 16).wavefronts == 4
    # Inside one phase the same move costs a second wavefront.
    addr = np.arange(32) * 16
    addr[1] = 1024  # lane 1 -> banks 0-3, which lane 0 also uses with another word
    assert wavefronts(addr, 16).wavefronts_per_phase == (2, 1, 1, 1)


def test_narrower_widths():
    assert wavefronts(np.arange(32) * 4, 4).wavefronts == 1
    assert wavefronts(np.arange(32) * 128, 4).wavefronts == 32
    assert wavefronts(np.arange(32) * 8, 8).wavefronts == 2
    inactive = -np.ones(32, dtype=np.int64)
    inactive[0] = 0
    assert wavefronts(inactive, 16).wavefronts == 1 and wavefronts(inactive, 16).ideal == 1


def test_bank_rule_input_errors():
    with pytest.raises(ValueError, match="32"):
        wavefronts(np.arange(16) * 16)
    with pytest.raises(ValueError, match="aligned"):
        wavefronts(np.arange(32) * 16 + 4)
    with pytest.raises(ValueError, match="width"):
        wavefronts(np.arange(32) * 16, 12)
    assert list(smem_bank([0, 4, 124, 128, 132])) == [0, 1, 31, 0, 1]


# ---- the SMEM D tile -----------------------------------------------------------------------------
def test_128b_swizzle_matches_ptx_table():
    # PTX ISA 5.5.7, 128-byte swizzle, 1024-byte aligned start: row r holds 16-byte chunk j at
    # position j ^ r (r = 0..7), repeating every 8 rows.
    t = SmemTile(16, 32, "float32", "128B", base=2048)
    for r in range(16):
        for j in range(8):
            pos = (t.address(r, 4 * j) - 2048 - 128 * r) // 16
            assert pos == j ^ (r % 8)


def test_swizzle_base_offset_when_not_1024_aligned():
    # PTX ISA 5.5.7: base offset = (address / 128) % 8 for the 128-byte mode: the pattern starts at
    # row (base/128) % 8 of the table.
    t = SmemTile(8, 32, "float32", "128B", base=1024 + 3 * 128)
    for r in range(8):
        for j in range(8):
            assert (t.address(r, 4 * j) - t.base - 128 * r) // 16 == j ^ ((r + 3) % 8)


def test_64b_and_32b_tables():
    t64 = SmemTile(8, 16, "float32", "64B", base=512)
    for r in range(8):
        for j in range(4):
            assert (t64.address(r, 4 * j) - 512 - 64 * r) // 16 == j ^ ((r // 2) % 4)
    t32 = SmemTile(8, 8, "float32", "32B", base=256)
    for r in range(8):
        for j in range(2):
            assert (t32.address(r, 4 * j) - 256 - 32 * r) // 16 == j ^ ((r // 4) % 2)


def test_box_split_for_swizzled_tiles():
    t = SmemTile(128, 128, "bfloat16", "128B")
    assert (t.box_cols, t.n_boxes, t.box_bytes) == (64, 2, 128 * 128)
    assert t.box_address(1) == 128 * 128
    # element (0, 64) is the first element of the second box
    assert t.address(0, 64) == 128 * 128
    plain = SmemTile(128, 128, "bfloat16")
    assert (plain.box_cols, plain.n_boxes) == (128, 1)


def test_pack_unpack_roundtrip_and_chunk_inverse():
    rng = np.random.default_rng(1)
    for sw in ("none", "32B", "64B", "128B"):
        t = SmemTile(32, 64, "float16", sw, base=128 * 3)
        d = rng.integers(0, 1 << 16, (32, 64)).astype(np.uint16)
        smem = t.pack(d)
        np.testing.assert_array_equal(t.unpack(smem), d)
        # a 16-byte chunk keeps 8 consecutive fp16 columns together
        addr = t.address(5, 24)
        np.testing.assert_array_equal(smem[addr - t.base: addr - t.base + 16].view(np.uint16),
                                      d[5, 24:32])
        r, c = t.chunk_of_address(addr)
        assert (int(r), int(c)) == (5, 24)


@pytest.mark.parametrize("kw,match", [
    (dict(rows=0, cols=32), "rows"),
    (dict(rows=300, cols=32), "256"),
    (dict(rows=8, cols=3), "16 bytes"),
    (dict(rows=8, cols=32, base=64), "128"),
    (dict(rows=8, cols=20, swizzle="128B"), "multiple of 32"),
    (dict(rows=8, cols=32, swizzle="128B", box_cols=16), "exactly 128 bytes"),
    (dict(rows=8, cols=32, dtype="int8"), "dtype"),
    (dict(rows=8, cols=32, swizzle="16B"), "swizzle"),
])
def test_tile_validation(kw, match):
    with pytest.raises(ValueError, match=match):
        SmemTile(**kw)


# ---- registers -> SMEM ---------------------------------------------------------------------------
def test_row_per_thread_plain_is_8_way():
    # 32 fp32 columns = 128-byte rows: every lane of a quarter-warp writes the same 4 banks.
    plan = RegisterStorePlan(SmemTile(128, 32, "float32"), "row_per_thread", warp=2)
    assert plan.steps == 8
    assert all(plan.report(k).wavefronts == 32 for k in range(8))
    assert plan.rows[0, 5] == 69 and plan.cols[3, 5] == 12


def test_row_per_thread_128b_swizzle_is_conflict_free():
    plan = RegisterStorePlan(SmemTile(128, 32, "float32", "128B"), "row_per_thread", warp=0)
    assert plan.total_wavefronts() == plan.ideal_wavefronts() == 32


def test_chunk_per_thread_plain_is_conflict_free():
    plan = RegisterStorePlan(SmemTile(128, 32, "float32"), "chunk_per_thread", warp=0)
    assert plan.total_wavefronts() == 32
    wm = plan.writer_map()
    assert wm[0, 0] == 0 and wm[0, 7] == 7 and wm[1, 0] == 8 and wm[31, 7] == 31
    assert (wm[32:] == -1).all()


def test_writer_map_row_per_thread():
    wm = RegisterStorePlan(SmemTile(64, 64, "bfloat16", "128B"), "row_per_thread", warp=1).writer_map()
    assert (wm[32:64] == np.arange(32)[:, None]).all() and (wm[:32] == -1).all()


def test_plan_errors():
    with pytest.raises(ValueError, match="rows"):
        RegisterStorePlan(SmemTile(32, 32), "row_per_thread", warp=1)
    with pytest.raises(ValueError, match=r"\[0, 4\)"):
        RegisterStorePlan(SmemTile(256, 32), "row_per_thread", warp=4)
    with pytest.raises(ValueError, match="mapping"):
        RegisterStorePlan(SmemTile(32, 32), "diagonal")


# ---- bulk groups and the proxy fence -------------------------------------------------------------
def good_single_buffer(e):
    e.st_shared("D")
    e.fence_proxy_async()
    e.bar_sync()
    e.tma_store("D")
    e.commit_group()


def test_canonical_epilogue_passes():
    e = EpilogueOrdering()
    good_single_buffer(e)
    e.wait_group(0)
    e.read_gmem("D", by="issuer")
    e.exit()
    assert e.hazards == []


def test_missing_fence_is_reported():
    e = EpilogueOrdering()
    e.st_shared("D")
    e.bar_sync()
    with pytest.raises(OrderingError, match="fence.proxy.async"):
        e.tma_store("D")


def test_fence_without_barrier_is_reported():
    e = EpilogueOrdering()
    e.st_shared("D")
    e.fence_proxy_async()
    with pytest.raises(OrderingError, match="barrier"):
        e.tma_store("D")


def test_reuse_needs_wait_group_read_and_barrier():
    e = EpilogueOrdering()
    good_single_buffer(e)
    with pytest.raises(OrderingError, match="write-after-read"):
        e.st_shared("D")
    e = EpilogueOrdering()
    good_single_buffer(e)
    e.wait_group_read(0)
    with pytest.raises(OrderingError, match="read done"):  # the writers have not been told yet
        e.st_shared("D")
    e = EpilogueOrdering()
    good_single_buffer(e)
    e.wait_group_read(0)
    e.bar_sync()
    e.st_shared("D")
    assert e.hazards == []


def test_read_only_wait_does_not_publish_gmem():
    e = EpilogueOrdering()
    good_single_buffer(e)
    e.wait_group_read(0)
    with pytest.raises(OrderingError, match="wait_group \\(without .read\\)"):
        e.read_gmem("D")
    e.wait_group(0)
    e.read_gmem("D", by="issuer")
    with pytest.raises(OrderingError, match="barrier"):
        e.read_gmem("D", by="other")
    e.bar_sync()
    e.read_gmem("D", by="other")


def test_double_buffer_pipeline_with_wait_read_1():
    e = EpilogueOrdering(buffers=("D0", "D1"))
    for it in range(6):
        b = f"D{it % 2}"
        if it >= 2:
            # the group that read b was committed two iterations ago: one newer group may stay
            e.wait_group_read(1)
            e.bar_sync()
        e.st_shared(b)
        e.fence_proxy_async()
        e.bar_sync()
        e.tma_store(b)
        e.commit_group()
    e.wait_group_read(0)
    e.exit()
    assert e.hazards == []


def test_wait_read_1_is_too_weak_for_single_buffer():
    e = EpilogueOrdering()
    good_single_buffer(e)
    e.wait_group_read(1)  # the only group may still be pending
    e.bar_sync()
    with pytest.raises(OrderingError, match="in flight"):
        e.st_shared("D")


def test_non_strict_collects_every_hazard():
    e = EpilogueOrdering(strict=False)
    e.st_shared("D")
    e.tma_store("D")   # no fence, no barrier
    e.commit_group()
    e.st_shared("D")   # overwrite while in flight
    e.exit()           # leave with the store maybe still reading
    assert len(e.hazards) == 3
    assert "fence" in e.hazards[0] and "write-after-read" in e.hazards[1] and "exits" in e.hazards[2]


def test_bulk_groups_misuse():
    g = BulkAsyncGroups()
    g.issue("s1")
    with pytest.raises(OrderingError, match="not committed"):
        g.wait_group(0)
    g.commit_group()
    g.issue("s2")
    g.commit_group()
    assert g.wait_group_read(1) == ["s1"]
    assert g.state_of("s1") == "read done" and g.state_of("s2") == "in flight"
    assert g.wait_group(0) == ["s1", "s2"] and g.pending == 0
    for bad in (-1, 1.5, True, "0"):
        with pytest.raises(OrderingError, match="non-negative integer"):
            g.wait_group(bad)


def test_unknown_buffer():
    with pytest.raises(ValueError, match="unknown buffer"):
        EpilogueOrdering().st_shared("E")


# ---- D = alpha * acc + beta * C ------------------------------------------------------------------
def bf16_rne_by_integers(f32_bits):
    out = []
    for u in f32_bits:
        u = int(u)
        upper, lower = u >> 16, u & 0xFFFF
        if lower > 0x8000 or (lower == 0x8000 and (upper & 1)):
            upper += 1
        out.append(upper & 0xFFFF)
    return np.array(out, dtype=np.uint16)


def test_bf16_conversion_rounds_to_nearest_even():
    bits = np.array([0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0xBF808000, 0x7F7FFFFF,
                     0x00018000], dtype=np.uint32)
    got = to_dtype_bits(bits.view(np.float32), "bfloat16")
    np.testing.assert_array_equal(got, bf16_rne_by_integers(bits))
    assert got[0] == 0x3F80 and got[1] == 0x3F82 and got[5] == 0x7F80  # the max float rounds to inf
    assert to_dtype_bits(np.float32(np.nan), "bfloat16") == 0x7FFF


def test_f16_conversion_and_back():
    x = np.array([1.0, 65504.0, 65520.0, 2.0 ** -24, 1.0 + 2.0 ** -11], dtype=np.float32)
    got = to_dtype_bits(x, "float16")
    # 65520 is the midpoint above 65504 and rounds to inf; 1 + 2^-11 is a tie and rounds to 1.
    np.testing.assert_array_equal(got, [0x3C00, 0x7BFF, 0x7C00, 0x0001, 0x3C00])
    np.testing.assert_array_equal(from_dtype_bits(np.array([0x3C00, 0x0001], np.uint16), "float16"),
                                  [1.0, 2.0 ** -24])
    assert from_dtype_bits(np.array([0x3F82], np.uint16), "bfloat16")[0] == np.float32(1.015625)


def test_alpha_beta_rounds_each_step():
    # alpha*acc and beta*c rounded separately, then added: differs from one fused operation.
    acc = np.array([1 + 2.0 ** -23], dtype=np.float32)
    c = np.array([np.float32(-1.0).view(np.uint32)], dtype=np.uint32)
    d = epilogue_alpha_beta(acc, alpha=1 + 2.0 ** -23, beta=1.0, c_bits=c).view(np.float32)
    # (1+e)^2 = 1 + 2e + e^2 rounds to 1 + 2e in fp32, minus 1 -> 2e exactly
    assert d[0] == np.float32(2.0 ** -22)


def test_beta_zero_does_not_read_c():
    acc = np.ones(4, np.float32)
    c = np.full(4, 0x7FC00000, np.uint32)  # NaN
    np.testing.assert_array_equal(epilogue_alpha_beta(acc, 2.0, 0.0, c).view(np.float32), 2.0)
    assert np.isnan(epilogue_alpha_beta(acc, 2.0, 1.0, c).view(np.float32)).all()
    with pytest.raises(ValueError, match="needs C"):
        epilogue_alpha_beta(acc, 1.0, 0.5)


def test_alpha_beta_bf16_output():
    acc = np.array([1.0, 3.0], np.float32)
    c = to_dtype_bits(np.array([0.5, -1.0], np.float32), "bfloat16")
    d = epilogue_alpha_beta(acc, 0.5, 2.0, c, "bfloat16")
    np.testing.assert_array_equal(from_dtype_bits(d, "bfloat16"), [1.5, -0.5])


# ---- the TMA store and reduce-add models (inverse of bwlab.tma's load model) ---------------------
from bwlab.checks.store import random_epilogue_problem, random_store_cases  # noqa: E402
from bwlab.epilogue import (EpilogueProblem, epilogue_model, tma_reduce_add_model,  # noqa: E402
                            tma_store_model, tma_store_writes)
from bwlab.tma import TensorMap, tma_load_model  # noqa: E402


@pytest.mark.parametrize("swizzle,box_w", [("none", 64), ("32B", 16), ("64B", 32), ("128B", 64)])
@pytest.mark.parametrize("coords", [(0, 0), (64, 50), (96, 69), (104, 0), (8, 70)])
def test_load_then_store_roundtrip(swizzle, box_w, coords):
    rng = np.random.default_rng(7)
    t = TensorMap("float16", (100, 70), (box_w, 40), global_strides=(208,), swizzle=swizzle)
    g = rng.integers(0, 1 << 16, (70, 104)).astype(np.uint16)
    for smem_address in (0, 128, 896):
        smem = tma_load_model(g, t, coords, smem_address)
        sentinel = np.full_like(g, 0xBEEF)
        out = tma_store_model(sentinel, t, coords, smem, smem_address)
        x0, y0 = coords
        want = np.full_like(g, 0xBEEF)
        # the in-bounds part of the box comes back ...
        want[y0:y0 + 40, x0:min(x0 + box_w, 100)] = g[y0:y0 + 40, x0:min(x0 + box_w, 100)]
        # ... and columns 100..103, which share the last 16-byte chunk of each 200-byte row, get the
        # box's bytes for those positions: the load's zero fill (STORE_GRANULE); 104.. stay untouched
        if x0 + box_w > 100 and x0 < 104:
            want[y0:y0 + 40, 100:min(x0 + box_w, 104)] = 0
        np.testing.assert_array_equal(out, want)


def test_store_reads_smem_through_the_swizzle():
    # 128B swizzle at a 1024-aligned address: GMEM row r, 16-byte chunk j comes from SMEM chunk j ^ r.
    t = TensorMap("uint8", (128, 8), (128, 8), swizzle="128B")
    smem = np.repeat(np.arange(64, dtype=np.uint8), 16)  # each 16-byte chunk holds its chunk number
    out = tma_store_model(np.zeros(1024, np.uint8), t, (0, 0), smem, 0).reshape(8, 128)
    for r in range(8):
        for j in range(8):
            assert (out[r, 16 * j:16 * j + 16] == 8 * r + (j ^ r)).all()


def test_wholly_outside_box_writes_nothing_and_3d_edges():
    rng = np.random.default_rng(3)
    t = TensorMap("float32", (20, 6, 5), (16, 4, 4))
    g = rng.integers(0, 1 << 32, 20 * 6 * 5, dtype=np.uint64).astype(np.uint32)
    smem = rng.integers(0, 256, t.box_bytes, dtype=np.uint8)
    np.testing.assert_array_equal(tma_store_model(g, t, (20, 0, 0), smem), g)
    out = tma_store_model(g, t, (8, 3, 2), smem).reshape(5, 6, 20)
    box = smem.view(np.uint32).reshape(4, 4, 16)
    want = g.reshape(5, 6, 20).copy()
    want[2:5, 3:6, 8:20] = box[:3, :3, :12]
    np.testing.assert_array_equal(out, want)


def test_store_writes_list_only_in_bounds_bytes():
    # uint16, 10 columns = 20 bytes per row (pitch 32): dimension 0 is written up to the 16-byte
    # chunk that holds the last column, i.e. columns 0..15; rows stop exactly at the edge.
    t = TensorMap("uint16", (10, 3), (8, 4), global_strides=(32,))
    off, vals = tma_store_writes(t, (8, 1), np.arange(64, dtype=np.uint8))
    assert off.size == 2 * 8 * 2                   # rows 1, 2; all 8 box columns (8..15)
    assert list(off[:4]) == [32 + 16, 32 + 17, 32 + 18, 32 + 19] and off.max() == 2 * 32 + 31
    assert list(vals[:4]) == [0, 1, 2, 3]
    off, _ = tma_store_writes(t, (16, 0), np.zeros(64, np.uint8))  # columns 16.. : nothing
    assert off.size == 0
    t = TensorMap("uint16", (16, 3), (8, 4), global_strides=(32,))  # 32-byte rows: no overhang
    off, _ = tma_store_writes(t, (8, 2), np.zeros(64, np.uint8))
    assert off.size == 8 * 2 and off.min() == 2 * 32 + 16


def test_store_model_refusals():
    t = TensorMap("float32", (64, 8), (32, 8), swizzle="128B")
    smem = np.zeros(t.box_bytes, np.uint8)
    g = np.zeros(64 * 8, np.float32)
    with pytest.raises(ValueError, match="non-negative"):
        tma_store_model(g, t, (-4, 0), smem)
    with pytest.raises(ValueError, match="128-byte aligned"):
        tma_store_model(g, t, (0, 0), smem, 64)
    with pytest.raises(ValueError, match="16-byte boundary"):
        tma_store_model(g, t, (2, 0), smem)  # 8 bytes into the row
    with pytest.raises(ValueError, match="coordinates"):
        tma_store_model(g, t, (0,), smem)
    with pytest.raises(ValueError, match="tf32"):
        tma_store_model(g, TensorMap("tf32", (64, 8), (32, 8)), (0, 0), smem)
    with pytest.raises(ValueError, match="element_strides"):
        tma_store_model(g, TensorMap("float32", (64, 8), (32, 8), element_strides=(1, 2)), (0, 0), smem)
    with pytest.raises(ValueError, match="128-byte line"):
        # 36 rows of 16 B with 128B swizzle: line 4 (rows 32..35) is half a line, and its chunk
        # 0 moves to chunk 0 ^ 4, past the 576 bytes of the box
        t2 = TensorMap("float32", (4, 36), (4, 36), swizzle="128B")
        tma_store_model(np.zeros(144, np.float32), t2, (0, 0), np.zeros(576, np.uint8), 0)
    with pytest.raises(ValueError, match=r"\.add supports"):
        tma_reduce_add_model(np.zeros(64, np.int64), TensorMap("int64", (64,), (16,)), (0,),
                             np.zeros(128, np.uint8))


def test_reduce_add_semantics():
    # integers wrap; floats round to nearest even per element; outside elements untouched
    t = TensorMap("uint32", (6,), (8,))
    g = np.array([1, 2, 0xFFFFFFFF, 4, 5, 6, 77, 88], np.uint32)
    s = np.array([10, 20, 1, 40, 50, 60, 70, 80], np.uint32).view(np.uint8)
    # 6 elements = 24 bytes: elements 6, 7 share the second 16-byte chunk, so they are added too
    np.testing.assert_array_equal(tma_reduce_add_model(g, t, (0,), s), [11, 22, 0, 44, 55, 66, 147, 168])
    np.testing.assert_array_equal(tma_reduce_add_model(g, TensorMap("uint32", (4,), (8,)), (0,), s),
                                  [11, 22, 0, 44, 5, 6, 77, 88])
    tb = TensorMap("bfloat16", (8,), (8,))
    a = to_dtype_bits(np.array([1.0, 256.0, -3.0, 1e-3, 0, 0, 0, 0], np.float32), "bfloat16")
    b = to_dtype_bits(np.array([2.0 ** -8, 1.0, 3.0, 1e-3, 0, 0, 0, 0], np.float32), "bfloat16")
    out = from_dtype_bits(tma_reduce_add_model(a, tb, (0,), b.view(np.uint8)), "bfloat16")
    # 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even -> 1. 256 + 1 = 257 -> tie -> 256.
    assert out[0] == 1.0 and out[1] == 256.0 and out[2] == 0.0
    assert out[3] == from_dtype_bits(to_dtype_bits(np.float32(2e-3), "bfloat16"), "bfloat16")
    th = TensorMap("float16", (8,), (8,))
    h = np.array([2.0 ** -24, 65504.0, 1.0, 0, 0, 0, 0, 0], np.float16).view(np.uint16)
    k = np.array([2.0 ** -24, 8.0, 2.0 ** -11, 0, 0, 0, 0, 0], np.float16).view(np.uint16)
    out = tma_reduce_add_model(h, th, (0,), k.view(np.uint8)).view(np.float16)
    assert out[0] == np.float16(2.0 ** -23)  # subnormals are kept
    assert out[1] == np.float16(65504.0)      # 65512 rounds back down (65520 would overflow)
    assert out[2] == np.float16(1.0)          # 1 + 2^-11 ties to even


def test_random_store_cases_are_valid_and_fast():
    cases = random_store_cases(60, seed=5)
    assert {c.tmap.swizzle for c in cases} == {"none", "32B", "64B", "128B"}
    assert any(c.edge for c in cases) and any(not c.edge for c in cases)
    for c in cases:
        out = c.model()
        assert out.shape == c.gmem.shape


def test_epilogue_model_matches_direct_numpy():
    rng = np.random.default_rng(11)
    p = EpilogueProblem(200, 100, "bfloat16", bm=64, bn=64, swizzle="128B", alpha=1.5, beta=0.5,
                        smem_offset=384)
    acc, c, d0 = p.random_inputs(rng)
    d = epilogue_model(p, acc, c, d0)
    want = d0.copy()
    # 100 bf16 = 200 bytes: columns 100..103 share the last 16-byte chunk and are written too, with
    # C = 0 there (the TMA load of C zero-fills outside the tensor); 104.. and the guard row stay.
    c_seen = c[:200, :104].copy()
    c_seen[:, 100:] = 0
    want[:200, :104] = epilogue_alpha_beta(acc[:200, :104], 1.5, 0.5, c_seen, "bfloat16")
    np.testing.assert_array_equal(d, want)
    p = EpilogueProblem(70, 40, "float32", bm=32, bn=32, swizzle="none", alpha=2.0, reduce_add=True)
    acc, _, d0 = p.random_inputs(rng)
    d = epilogue_model(p, acc, None, d0)
    want = d0.copy()
    want[:70, :40] = (d0[:70, :40].view(np.float32) + np.float32(2.0) * acc[:70, :40]).view(np.uint32)
    np.testing.assert_array_equal(d, want)


def test_random_epilogue_problems_build():
    rng = np.random.default_rng(0)
    for _ in range(30):
        p = random_epilogue_problem(rng)
        assert p.tile.n_boxes >= 1 and p.tensor_map().box_bytes == p.tile.box_bytes


def test_problem_validation():
    with pytest.raises(ValueError, match="bm"):
        EpilogueProblem(10, 10, bm=256)
    with pytest.raises(ValueError, match="ld"):
        EpilogueProblem(10, 10, "float16", bn=64, swizzle="128B", ld=12)
    with pytest.raises(ValueError, match="beta"):
        EpilogueProblem(10, 10, bn=32, reduce_add=True, beta=1.0)
    with pytest.raises(ValueError, match="smem_offset"):
        EpilogueProblem(10, 10, bn=32, smem_offset=1024)
    p = EpilogueProblem(10, 10, "float16", bn=64)
    assert p.ld == 16 and p.buffer_shape == (11, 16)


def test_narrow_swizzled_box_rows_sit_one_span_apart():
    # 16-byte rows with the 32B swizzle: row r is read from SMEM bytes [32 r, 32 r + 16), permuted by
    # the swizzle (bit 4 ^= bit 7), as the H100 did on every such store (smem_box_pitch).
    from bwlab.epilogue import smem_box_footprint, smem_box_pitch
    t = TensorMap("uint8", (16, 8), (16, 8), swizzle="32B")
    assert smem_box_pitch(t) == 32 and smem_box_footprint(t) == 256 and t.box_bytes == 128
    smem = np.repeat(np.arange(16, dtype=np.uint8), 16)  # 16-byte chunk k holds k
    out = tma_store_model(np.zeros(128, np.uint8), t, (0, 0), smem).reshape(8, 16)
    for r in range(8):
        logical_chunk = 2 * r                      # 32 r / 16
        assert (out[r] == logical_chunk ^ ((r // 4) & 1)).all()
    assert smem_box_pitch(TensorMap("uint8", (16, 8), (16, 8))) == 16  # no swizzle: packed
    with pytest.raises(ValueError, match="128-byte line"):
        tma_store_model(np.zeros(128, np.uint8), t, (0, 0), np.zeros(128, np.uint8))


# ---- the case objects: model / check name the GMEM element, its granule, and the likely rule ----
from bwlab import epilogue as E  # noqa: E402
from bwlab.epilogue import Epilogue, TmaStore  # noqa: E402


def _store_case(swizzle="none"):
    # bf16, 100 columns (200 bytes) in rows of 112 (224 bytes): columns 100..103 share the last
    # 16-byte granule of a row with columns 96..99.
    rng = np.random.default_rng(9)
    t = TensorMap("bfloat16", (100, 70), (64 if swizzle in ("none", "128B") else 16, 8),
                  global_strides=(224,), swizzle=swizzle)
    g = rng.integers(0, 1 << 16, (70, 112)).astype(np.uint16)
    smem = rng.integers(0, 1 << 16, 4096).astype(np.uint16)
    return TmaStore(g, t, (64, 3), smem, smem_address=1024, window_start=1024)


def test_tma_store_case_model_and_check():
    case = _store_case()
    out = case.model()
    assert out.shape == case.gmem.shape and out.dtype == case.gmem.dtype
    np.testing.assert_array_equal(out, tma_store_model(case.gmem, case.tmap, case.coords, case.smem,
                                                       1024, 1024))
    res = case.check(out)
    assert res.ok and bool(res) and "all" in str(res)


def test_tma_store_check_names_the_element_inside_the_tensor():
    case = _store_case()
    got = case.model().copy()
    got[5, 70] ^= 0x0100                      # y = 5, x = 70: inside, byte 140 of the row
    res = case.check(got)
    assert not res.ok and res.differing == 1
    text = str(res)
    assert "element (x=70, y=5) inside the tensor" in text
    assert "16-byte store granule 8 of its row" in text          # 140 // 16
    assert "fence.proxy.async" in text                          # a value SMEM never held


def test_tma_store_check_names_the_granule_padding():
    case = _store_case()
    got = case.model().copy()
    got[4, 101] ^= 1                          # padding column 101 shares granule 12 with 96..99
    text = str(case.check(got))
    assert "element (x=101, y=4) outside the tensor (row padding sharing the last granule" in text
    assert "16-byte granules" in text and "STORE_GRANULE" in text
    got = case.model().copy()
    got[4, 104] ^= 1                          # column 104: past the granule, never written
    text = str(case.check(got))
    assert "element (x=104, y=4) outside the tensor," in text and "granule 13" in text


def test_tma_store_check_hints_not_written_and_swizzle():
    case = _store_case("128B")
    want = case.model()
    got = want.copy()
    got[6, 66] = case.gmem[6, 66]              # as if the store had not reached this element
    assert "kept its old value" in str(case.check(got))
    # the value of another 16-byte chunk of the SMEM tile: the swizzle was not applied
    got = want.copy()
    got[3, 64] = want[3, 72]
    text = str(case.check(got))
    assert "element (x=64, y=3) inside the tensor" in text and "128B swizzle" in text


def test_tma_store_case_reduce_add_and_describe():
    t = TensorMap("uint32", (6,), (8,))
    g = np.array([1, 2, 3, 4, 5, 6, 77, 88], np.uint32)
    case = TmaStore(g, t, (0,), np.full(8, 10, np.uint32), op="reduce_add")
    np.testing.assert_array_equal(case.model(), [11, 12, 13, 14, 15, 16, 87, 98])
    assert case.what == "TMA reduce-add" and case.describe().startswith("add uint32")
    assert TmaStore(g, t, (0,), g, op="add").op == "reduce_add"
    with pytest.raises(ValueError, match="op must be"):
        TmaStore(g, t, (0,), g, op="copy")


def test_epilogue_case_model_and_check():
    p = EpilogueProblem(20, 27, "float32", bm=8, bn=16, swizzle="none", alpha=1.5)
    acc, _, d0 = p.random_inputs(np.random.default_rng(4))
    case = Epilogue(p, acc, None, d0)
    d = case.model()
    assert d.shape == p.buffer_shape and d.dtype == np.uint32
    assert case.check(d).ok
    got = d.copy()
    got[9, 20] ^= 1
    text = str(case.check(got))
    assert "D[9, 20] (x=20, y=9), inside the 20 x 27 matrix, tile (1, 1)" in text
    assert "16-byte store granule 5 of the row" in text and "fence.proxy.async" in text
    got = d.copy()
    got[3, 27] ^= 1                           # column 27 shares the granule of column 24..26
    text = str(case.check(got))
    assert "row padding sharing the last 16-byte granule" in text and "16-byte granules" in text
    got = d.copy()
    got[2, 5] = d0[2, 5]
    assert "kept its old value" in str(case.check(got))


def test_one_bank_model_one_dtype_table():
    # The epilogue uses the shared hardware models; it keeps no copy of its own.
    import bwlab.hw.banks as banks
    import bwlab.hw.swizzle as swz
    assert E.wavefronts is banks.wavefronts and E.BankReport is banks.BankReport
    assert E.BANK_RULE is banks.BANK_RULE and E.SWIZZLES is swz.SWIZZLES
    for name in ("to_dtype_bits", "from_dtype_bits", "_check_dtype", "_SWZ_BITS"):
        assert not hasattr(E, name)


def test_kernel_flags_and_codes_match_the_cuda_source():
    # enum EPI_* / DT_* in tma_store.cu are the numbers the runner passes; read them from the source.
    import re

    from bwlab.epilogue import runner
    from bwlab.hw.swizzle import MODES
    from bwlab.source import source_text
    src = source_text("tma_store.cu")
    found = {m.group(1): int(m.group(2)) for m in re.finditer(r"\b((?:EPI|DT)_[A-Z0-9_]+)\s*=\s*(\d+)u", src)}
    assert {k: found[k] for k in runner.EPI_FLAGS} == runner.EPI_FLAGS
    assert {k: found[k] for k in runner.DT_CODES} == runner.DT_CODES
    assert set(found) == set(runner.EPI_FLAGS) | set(runner.DT_CODES)
    # swizzle_address(addr, bits) takes CuTe's B: 0 none, 1 32B, 2 64B, 3 128B = the index in MODES
    assert [runner.swizzle_bits(m) for m in MODES] == [0, 1, 2, 3]
    assert [E.SWIZZLES[m].bits for m in MODES] == [0, 1, 2, 3]


def test_store_rules_table_walk():
    # Every row of STORE_RULES names its source and kind; every refusing row refuses an illegal sample
    # with an error naming the row and its limit, and accepts the legal neighbour; the behaviour rows
    # are followed by the model.
    from bwlab.epilogue import STORE_RULES, StoreRuleError, smem_box_pitch
    from bwlab.hw.dtypes import ELEMENT_TYPES
    t = TensorMap("float32", (64, 8), (32, 8), swizzle="128B")
    g = np.zeros(64 * 8, np.float32)
    smem = np.zeros(4096, np.uint8)
    t1 = TensorMap("int64", (64,), (16,))
    refusing = {  # rule: (illegal, legal)
        "box-start": (lambda: tma_store_model(g, t, (-4, 0), smem), lambda: tma_store_model(g, t, (0, 0), smem)),
        "box-start-16B": (lambda: tma_store_model(g, t, (2, 0), smem), lambda: tma_store_model(g, t, (4, 0), smem)),
        "smem-alignment": (lambda: tma_store_model(g, t, (0, 0), smem, 64),
                           lambda: tma_store_model(g, t, (0, 0), smem, 128, window_start=0)),
        "reduce-add-dtype": (lambda: tma_reduce_add_model(np.zeros(64, np.int64), t1, (0,), smem),
                             lambda: tma_reduce_add_model(np.zeros(64, np.uint64),
                                                          TensorMap("uint64", (64,), (16,)), (0,), smem)),
        "tf32-store": (lambda: tma_store_model(g, TensorMap("tf32", (64, 8), (32, 8)), (0, 0), smem),
                       lambda: tma_store_model(g, TensorMap("uint32", (64, 8), (32, 8)), (0, 0), smem)),
        "store-model-scope": (lambda: tma_store_model(g, TensorMap("float32", (64, 8), (32, 8),
                                                                   element_strides=(1, 2)), (0, 0), smem),
                              lambda: tma_store_model(g, TensorMap("float32", (64, 8), (32, 8)), (0, 0), smem)),
        "d-dtype": (lambda: SmemTile(8, 32, "int8"), lambda: SmemTile(8, 32, "bf16")),
    }
    behaviours = {"store-granule", "narrow-swizzle-pitch"}
    assert set(refusing) | behaviours == set(STORE_RULES)
    for name, r in STORE_RULES.items():
        assert r.source and r.limit and r.kind in ("PTX ISA", "CUDA guide", "measured (H100)", "bwlab"), name
    for name, (bad, good) in refusing.items():
        with pytest.raises(StoreRuleError) as e:
            bad()
        assert e.value.rule == name and isinstance(e.value, ValueError)
        assert f"rule '{name}'" in str(e.value) and STORE_RULES[name].limit in str(e.value)
        good()
    # reduce-add: the whole element-type table, legal ones accepted and every other one refused
    for et in ELEMENT_TYPES.values():
        if et.numpy_name is None or et.bits < 8:
            continue
        tm = TensorMap(et.numpy_name, (64,), (16,))
        call = lambda: tma_reduce_add_model(np.zeros(64 * et.bytes, np.uint8), tm, (0,), smem)  # noqa: E731
        if et.numpy_name in E.REDUCE_ADD_DTYPES:
            call()
        else:
            with pytest.raises(StoreRuleError, match="reduce-add-dtype"):
                call()
    # store-granule: uint16, 10 columns = 20 bytes -> columns 10..15 share the second granule
    off, _ = tma_store_writes(TensorMap("uint16", (10, 1), (16, 1), global_strides=(64,)), (0, 0),
                              np.zeros(32, np.uint8))
    assert off.max() == 31 and E.STORE_GRANULE == 16
    # narrow-swizzle-pitch: a 16-byte box row with each swizzle takes the swizzle row
    for mode, pitch in (("32B", 32), ("64B", 64), ("128B", 128)):
        assert smem_box_pitch(TensorMap("uint8", (64, 8), (16, 8), swizzle=mode)) == pitch


# ---- the teaching kernel cuda_src/teach_store.cu -------------------------------------------------
def test_teach_problem_and_argument_checks():
    p = E.teach_problem(150, 70)
    assert (p.dtype, p.bm, p.bn, p.swizzle, p.ld, p.tiles) == ("float32", 128, 32, "128B", 72, (2, 3))
    acc = np.zeros(p.acc_shape, np.float32)
    got_acc, d0 = E.require_teach_args(p, acc)
    assert d0.shape == (151, 72) and d0.dtype == np.uint32 and got_acc.dtype == np.float32
    with pytest.raises(ValueError, match="differs in .*'dtype'"):
        E.require_teach_args(E.EpilogueProblem(150, 70, "bfloat16", bn=64), acc)
    with pytest.raises(ValueError, match="differs in .*'alpha'"):
        E.require_teach_args(E.EpilogueProblem(150, 70, "float32", bn=32, alpha=2.0), acc)
    with pytest.raises(ValueError, match="acc must be"):
        E.require_teach_args(p, acc[:, :64])
    with pytest.raises(ValueError, match="D buffer must be"):
        E.require_teach_args(p, acc, np.zeros((150, 72), np.uint32))
    with pytest.raises(ValueError, match="EpilogueProblem"):
        E.require_teach_args("150x70", acc)


def test_teach_kernel_and_its_edits_compile():
    from bwlab.lab import TeachingKernel
    k = TeachingKernel("teach_store.cu")
    assert k.targets == ("sm_90a", "sm_100a")
    for old, new in E.TEACH_EDITS.values():
        mine = k.replace(old, new)
        ptx = mine.compile("sm_90a").ptx
        assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx
    assert "fence.proxy.async" not in k.replace(*E.TEACH_EDITS["no fence"]).compile("sm_90a").ptx
    assert "fence.proxy.async.shared::cta" in k.compile("sm_90a").ptx


def test_swizzle_mismatch_model_and_hint():
    # Threads write unswizzled, the map reads through 128B: rows r % 8 == 0 are still right, row 1
    # gets its chunks pairwise swapped (chunk j from j ^ 1), and check() names the swizzle.
    p = E.teach_problem(16, 32)
    acc = np.arange(p.acc_shape[0] * p.acc_shape[1], dtype=np.float32).reshape(p.acc_shape)
    case = E.Epilogue(p, acc)
    good, bad = case.model(), E.epilogue_model(p, acc, smem_swizzle="none")
    np.testing.assert_array_equal(good[:16].view(np.float32), acc[:16])
    np.testing.assert_array_equal(bad[0], good[0])
    np.testing.assert_array_equal(bad[8], good[8])
    np.testing.assert_array_equal(bad[1].view(np.float32).reshape(8, 4), acc[1].reshape(8, 4)[np.arange(8) ^ 1])
    r = case.check(bad)
    assert not r.ok and r.first.index == (1, 0) and "128B swizzle" in r.hint
    with pytest.raises(ValueError, match="not the same boxes"):
        E.epilogue_model(E.teach_problem(16, 64), np.zeros((128, 64), np.float32), smem_swizzle="64B")


def test_fence_hint_when_the_value_comes_from_elsewhere():
    p = E.teach_problem(16, 32)
    acc = np.arange(128 * 32, dtype=np.float32).reshape(128, 32)
    case = E.Epilogue(p, acc)
    got = case.model().copy()
    got[3, 5] = np.float32(-7.0).view(np.uint32)    # stale: not a value of this tile row
    r = case.check(got)
    assert r.first.index == (3, 5) and "fence.proxy.async" in r.hint
