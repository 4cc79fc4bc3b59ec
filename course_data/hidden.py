"""The hidden cases of the graded exercises: the instructor's course data.

This folder is not in the wheel and not in the grading sandbox: only the grader's own process reads it
(`bwlab.exercises.hidden_cases(exercise)` calls the function named after the exercise's answer cell).
Each function returns what the check's `hidden=` takes beyond the cases the notebook shows: a list of
argument tuples where the check's reference is the stage's own model, (arguments, expected) pairs
where the package holds no general reference for that exercise, or the few numbers a check replays
(seeds, ring sizes, cluster shapes). The repository's copy is public; an instructor who wants cases
no student has seen copies this folder, changes the cases, and points BWLAB_COURSE_DATA at the copy
(docs/teaching.md, "The course data"). `make grade-check` grades the answer key against these.
"""
from __future__ import annotations

import itertools

import numpy as np


# ---- 00 orientation ------------------------------------------------------------------------------
def orient_tier():
    """((stage, cc), tier) for every GPU family and a few more compute capabilities."""
    from bwlab.device import FAMILIES, STAGES
    ccs = [cc for _, cc in FAMILIES] + [(10, 3), (11, 0), (12, 1), (8, 6), (7, 5), (7, 0), (9, 0)]
    out = []
    for cc in ccs:
        for stage, (_, needs, _) in STAGES.items():
            if cc is None or tuple(cc) < (9, 0):
                tier = "emulated"              # no TMA: the kernels run in bwlab's PTX emulator
            elif needs == "tma" or cc[0] in (10, 11):
                tier = "hardware"
            else:
                tier = "hybrid"
            out.append(((stage, cc), tier))
    return out


def orient_hops():
    return ()


def orient_tile_bytes():
    """((rows, cols, dtype), bytes): rows x cols x bits / 8."""
    from bwlab.hw import element_type
    cases = [(128, 256, "f32"), (64, 64, "f16"), (256, 128, "e4m3"), (128, 128, "e2m1"), (128, 64, "e3m2"),
             (8, 16, "f64"), (128, 32, "tf32"), (128, 64, "bfloat16"), (64, 32, "e2m3"), (256, 256, "e5m2")]
    return [(c, c[0] * c[1] * element_type(c[2]).bits // 8) for c in cases]


def orient_parity():
    return ()


# ---- 01 TMA load ---------------------------------------------------------------------------------
def tma_broken_rule():
    return ()


def tma_tx_bytes():
    """(dtype, box_shape, swizzle): other types, ranks 3 and 4, swizzled boxes."""
    return [("float32", (8, 6), "none"), ("uint8", (256, 4), "none"), ("float64", (8, 4, 2), "none"),
            ("bfloat16", (64, 16), "128B"), ("tf32", (8, 32), "32B"), ("int32", (4, 3, 2, 2), "none"),
            ("uint8", (16, 256), "none"), ("float16", (32, 8, 4), "64B")]


def tma_expect_tx_edit():
    return ()


def tma_swizzle_offset():
    """(r, c, elem_bytes, base): other element sizes, rows 8-15, bases across the 1024-byte pattern."""
    return [(9, 33, 2, 0x180), (1, 1, 4, 0x400), (6, 30, 4, 0x400), (15, 31, 4, 0x400), (0, 0, 1, 0x80),
            (7, 127, 1, 0x80), (12, 64, 1, 0x80), (2, 3, 8, 0x300), (10, 15, 8, 0x300), (1, 63, 2, 0x1F80),
            (8, 0, 2, 0), (13, 21, 2, 0x280), (11, 50, 2, 0x680)]


def tma_oob_fill():
    """(dtype, global_shape, box_shape, coords): past every edge, inside, outside, rank 3."""
    return [("float32", (20, 12), (8, 6), (16, 9)), ("bfloat16", (80, 48), (32, 16), (64, 40)),
            ("bfloat16", (80, 48), (32, 16), (32, 16)), ("float32", (20, 12), (8, 6), (100, 100)),
            ("float32", (20, 12), (8, 6), (-8, -6)), ("float16", (16, 8, 4), (8, 4, 2), (8, 6, 3)),
            ("uint8", (64, 10), (32, 4), (-16, 8))]


# ---- 02 multicast --------------------------------------------------------------------------------
def mc_a_mask():
    """(cluster_m, cluster_n): every CTA of each is tried."""
    return [(2, 4), (4, 2), (1, 8), (8, 1), (2, 8), (8, 2), (3, 5), (16, 1), (1, 16)]


def mc_slice_receivers():
    return ()


def mc_expect_tx():
    """(cluster_m, cluster_n, tile_m, tile_n, tile_k)."""
    return [(2, 2, 64, 64, 64), (2, 4, 128, 64, 64), (4, 2, 64, 128, 32), (1, 8, 128, 128, 64),
            (8, 1, 64, 64, 128), (2, 1, 256, 128, 64), (1, 1, 128, 128, 64)]


def mc_l2_saved():
    """(cluster_m, cluster_n, tile_m, tile_n)."""
    return [(1, 1, 128, 128), (4, 2, 128, 64), (1, 8, 128, 128), (8, 2, 64, 64)]


def mc_teach_mask():
    """More cluster shapes (cluster_x, cluster_y) for the edited kernel."""
    return [(4, 2), (1, 4)]


# ---- 03 UMMA -------------------------------------------------------------------------------------
def mma_lbo_sbo():
    """(swizzle, rows): every mode at 16 to 256 rows."""
    from bwlab.hw.swizzle import MODES
    return [(sw, rows) for sw in MODES for rows in (16, 64, 128, 256)]


def mma_smem_desc():
    """(start, lbo, sbo, layout): the corners of the fields and one random case per layout."""
    from bwlab.umma.rules import LAYOUTS
    rng = np.random.default_rng(3)
    cases = [(0, 16, 512, "64B"), (0x3FFF0, 16, 256, "32B"), (1024, 2048, 512, "128B_base32B")]
    for sw in LAYOUTS:
        start, lbo, sbo = (16 * int(x) for x in rng.integers(0, 1 << 14, size=3))
        cases.append((start, lbo, sbo, sw))
    return cases


def mma_instr_desc():
    """(ab, d, M, N, a_major, b_major): every kind and pair of majors, N spread over 8..256."""
    majors = [(a, b) for a in ("K", "MN") for b in ("K", "MN")]
    ns = (8, 16, 24, 72, 128, 200, 256)
    cases = []
    for i, (ab, d) in enumerate([("f16", "f16"), ("f16", "f32"), ("bf16", "f32"), ("tf32", "f32")]):
        for j, M in enumerate((64, 128)):
            for k, (am, bm) in enumerate(majors):
                cases.append((ab, d, M, ns[(i + 2 * j + 3 * k) % len(ns)], am, bm))
    return cases


def mma_legal_shape():
    """(M, N, cta_group): a grid of legal and illegal shapes."""
    return [(M, N, g) for g in (1, 2) for M in (32, 64, 128, 256, 512)
            for N in (0, 4, 8, 12, 16, 24, 48, 120, 128, 136, 248, 256, 264, 512)]


def mma_teach_sbo():
    return ()


# ---- 04 TMEM load --------------------------------------------------------------------------------
def tmem_address():
    """(base, lane, column): random allocations of every size, and two at the edges."""
    from bwlab.hw.tmem import encode_address
    from bwlab.tmem.tables import ALLOC_NCOLS
    rng = np.random.default_rng(41)
    cases = []
    for _ in range(200):
        ncols = int(rng.choice(ALLOC_NCOLS))
        col0 = int(rng.integers(0, 512 // ncols)) * ncols
        cases.append((encode_address(0, col0), int(rng.integers(0, 128)), int(rng.integers(0, ncols))))
    return cases + [(encode_address(0, 32), 96, 100), (encode_address(0, 480), 1, 31)]


def tmem_quarter():
    """(warp, lane): every lane for warps 0..31."""
    return [(w, l) for w in range(32) for l in range(128)]


def tmem_kernel_columns():
    """The edited kernel's PTX must hold one load and one store of the wide form."""
    return ("ptx",)


def tmem_registers():
    """(shape, num, pack16): every legal form."""
    from bwlab.tmem.forms import all_accesses
    return [(a.shape, a.num, a.pack16) for a in all_accesses()]


def tmem_holder():
    """(shape, num, lane, column): 400 random cells of every shape and legal .num."""
    from bwlab.tmem.exercises import HOLDER_SHAPES
    from bwlab.tmem.forms import TmemAccess, legal_nums
    rng = np.random.default_rng(45)
    cases = []
    for _ in range(400):
        s = HOLDER_SHAPES[int(rng.integers(len(HOLDER_SHAPES)))]
        n = int(rng.choice(legal_nums(s)))
        a = TmemAccess(s, n)
        cases.append((s, n, int(rng.integers(a.lanes)), int(rng.integers(a.width))))
    return cases


# ---- 05 TMA store --------------------------------------------------------------------------------
def store_wavefronts():
    """32-address vectors: the first steps of staged tiles' register stores, random and edge patterns."""
    from bwlab.epilogue.tile import RegisterStorePlan, SmemTile
    from bwlab.hw.swizzle import MODES
    tiles = [SmemTile(128, 32, "float32", m) for m in MODES] + \
            [SmemTile(128, 64, "bfloat16", m) for m in MODES] + [SmemTile(128, 36, "float32", "none")]
    cases = []
    for i, tile in enumerate(tiles):
        for mapping in ("row_per_thread", "chunk_per_thread"):
            plan = RegisterStorePlan(tile, mapping, warp=i % 4)
            cases += [plan.addresses[k] for k in range(min(plan.steps, 3))]
    rng = np.random.default_rng(51)
    cases += [16 * rng.integers(0, 256, 32) for _ in range(20)]
    cases += [np.zeros(32, np.int64), np.repeat(16 * np.arange(16), 2), np.tile(16 * np.arange(8), 4) * 8]
    return [np.asarray(c, dtype=np.int64) for c in cases]


def store_fence():
    """Every sequence of up to five steps that writes the tile."""
    from bwlab.epilogue.exercises import FENCE_STEPS
    return [list(s) for n in range(1, 6) for s in itertools.product(FENCE_STEPS, repeat=n) if "st.shared" in s]


def store_wait_ring():
    """Ring sizes beyond the shown 1..4."""
    return [5, 6, 7, 8]


def store_swizzle_offset():
    """(row, col, elem_bytes, swizzle): 300 random elements."""
    from bwlab.hw.swizzle import MODES, row_bytes
    rng = np.random.default_rng(54)
    cases = []
    for _ in range(300):
        mode = MODES[1 + int(rng.integers(3))]
        eb = int(rng.choice((2, 4)))
        cases.append((int(rng.integers(256)), int(rng.integers(row_bytes(mode) // eb)), eb, mode))
    return cases


def store_kernel_coords():
    """(M, N) of one more problem the edited kernel stores."""
    return [(300, 100)]


# ---- 06 full flow --------------------------------------------------------------------------------
def flow_hop_bytes():
    """(m, n, k, ab, d): other tiles and types."""
    return [(64, 128, 128, "f16", "f32"), (128, 64, 32, "tf32", "f32"), (128, 192, 256, "e4m3", "bf16"),
            (64, 256, 192, "bf16", "bf16")]


def flow_k_step():
    """Seeds of other A and B, run in the model tier."""
    return [1]


def flow_mma_count():
    """(m, k, ab)."""
    return [(128, 128, "e4m3"), (64, 256, "f16"), (128, 256, "bf16"), (64, 64, "tf32")]


def flow_orderings():
    """Seeds of other A and B whose worst-case traces are compared too."""
    return [3]


def flow_l2_reads():
    """(M, N, cluster_m, cluster_n)."""
    return [(256, 512, 2, 1), (512, 512, 1, 4), (1024, 1024, 4, 2), (1024, 2048, 4, 4), (512, 1024, 2, 8)]


# ---- 07 GEMM ladder ------------------------------------------------------------------------------
def gemm_stage_bytes():
    """(bm, bn)."""
    return [(128, 256), (64, 128), (256, 128), (64, 64)]


def gemm_ctas_per_sm():
    """(SMEM per CTA, registers per thread, threads): step 2 with 2 and 4 stages, step 3, and CTAs that
    run into the other limits (warps per SM, CTAs per SM, the register allocation unit)."""
    from bwlab.gemm.exercises import occupancy_of
    return [occupancy_of("s2", 2), occupancy_of("s2", 4), occupancy_of("s3"), (8192, 100, 128), (2048, 16, 1024),
            (1024, 16, 32)]


def gemm_flop_per_sm_cycle():
    """(bm, bn, cycles per k-slice, CTAs per SM): step 3 and two made-up CTAs."""
    from bwlab.gemm.exercises import ladder_period
    return [ladder_period("s3"), (64, 256, 1000.0, 2), (128, 64, 512.0, 5)]


def gemm_producer_parity():
    """(kt, stages)."""
    return [(3, 4), (12, 4), (13, 4), (0, 3), (2, 3), (3, 3), (6, 3), (7, 2), (9, 2), (100, 6)]


def gemm_handshake():
    """Ring sizes the model runs the learner's parities on, after 4."""
    return [2, 3, 6]


def gemm_ring_depth():
    """Shapes (M, N, K) the timing model also predicts the learner's ring at, after 8192^3."""
    return [(4096, 4096, 4096), (512, 8192, 8192)]


# ---- 00a GEMM from scratch (each a member of the family the visible check tries: bwlab.scratch.exercises) ----
def scratch_warp_sectors():
    """Warp address patterns, by their place in the visible family."""
    from bwlab.scratch.exercises import family
    f = family("scratch_warp_sectors")
    return [f[i] for i in (7, 45, 83, 121, 130, 141, 159)]


def scratch_tile_load_bytes():
    """(M, N, K, T)."""
    return [(48, 80, 112, 16), (256, 128, 2048, 32), (32, 160, 64, 32)]


def scratch_attainable():
    """(intensity, peak, bandwidth)."""
    from bwlab.scratch.exercises import family
    f = family("scratch_attainable")
    return [f[i] for i in (3, 9, 14, 27, 38)]


def scratch_a_fragment():
    """(lane, element)."""
    return [(31, 7), (5, 3), (18, 4), (9, 6)]


# ---- 09 low precision ------------------------------------------------------------------------------
def lowp_mx_scale():
    """(amax,): powers of two and their neighbours over 2^-100..2^100, and e4m3's edges."""
    rng = np.random.default_rng(9)
    cases = [(2.0 ** e,) for e in (-100, -9, 0, 8, 9, 100)] + [(448.0,), (449.0,), (255.9,), (2.0 ** -3 * 0.999,)]
    return cases + [(float(m * 2.0 ** e),) for m, e in zip(rng.random(20) + 0.5, rng.integers(-100, 100, 20))]


def lowp_sf_offset():
    """(row, j): every row with every scale."""
    return [(r, j) for r in range(128) for j in range(4)]


def lowp_bs_idesc():
    """(a, b, N, sf_a_id, sf_b_id): every e4m3/e5m2 pairing, N over 8..256, every pair of IDs."""
    ns = (8, 16, 72, 128, 200, 256)
    return [(a, b, ns[(i + j) % len(ns)], i, j) for a in ("e4m3", "e5m2") for b in ("e4m3", "e5m2")
            for i in range(4) for j in range(4)]


def lowp_scale_b_copy():
    """(fmt, N, seed) of one more tile each."""
    return [("mxfp8", 128, 7), ("nvfp4", 96, 8)]


# ---- 10 the capstone: (M, N, K, persistent CTAs, the emulator's scheduler seed) beyond the shown run ----
# Each fills every stage of the ring at least four times in every CTA (each parity of its barriers completes
# twice or more), and on Blackwell uses each accumulator four times.
def cap_producer():
    """One CTA walking 2 tiles of 14 k-slices (each stage filled 7 times), another scheduler seed."""
    return [(256, 256, 896, 1, 3)]


def cap_consumer():
    return [(256, 256, 896, 1, 5)]


def cap_bw_ring():
    """One CTA walking 8 tiles of 5 k-blocks (each stage filled 10 times, each accumulator used 4 times)."""
    return [(512, 512, 320, 1, 3)]


def cap_acc_phases():
    return [(512, 512, 320, 1, 5)]


def cap_acc_handoff():
    return [(512, 512, 320, 1, 7)]
