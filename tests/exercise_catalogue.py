"""The catalogue of plausible wrong answers, per exercise: each with words its first miss must show.

Every entry is (exercise, what the learner wrote, the wrong answer as code, words of the hint it must
get). The answer is code a learner could have written in the exercise's cell (`ans`, built lazily, so
that a catalogue import needs no GPU and compiles nothing). tests/test_exercise_catalogue.py runs the
visible check on each (the graded cell without its hidden part) and asserts what the learner is shown
at a first miss: the hint, never "correct", never the expected value.
"""
from __future__ import annotations

import numpy as np

from bwlab.hw import element_type


def _box():
    from bwlab.tma.exercises import edit_box
    return edit_box()


def _wide():
    from bwlab.tmem.exercises import wide_columns
    return wide_columns()


def _regs(s, n):
    from bwlab.tmem.forms import TmemAccess
    return TmemAccess(s, n).registers


def _cols(s):
    from bwlab.tmem.forms import COLUMNS_PER_NUM
    return COLUMNS_PER_NUM[s]


def _lanes(s):
    from bwlab.tmem.forms import LANES_PER_SHAPE
    return LANES_PER_SHAPE[s]


def _oob(d, g, b, c, kind):
    inside, total = 1, 1
    for n, bb, cc in zip(g, b, c):
        inside *= max(0, min(n, cc + bb) - max(0, cc))
        total *= bb
    if kind == "inside bytes":
        return total - inside, inside * _bytes(d)
    if kind == "inside":
        return inside, total * _bytes(d)
    return total - inside, total


def _bytes(d):
    return element_type(d).bits // 8


def _tier_right(stage, cc):
    from bwlab.device import tiers_for
    return tiers_for(cc)[stage]


def _holder_right(shape, num, lane, column):
    from bwlab.tmem.exercises import _holder
    return _holder(shape, num, lane, column)


def _orient_parity_wrong(kind):
    from bwlab.hw import exercises as orient_ex
    from bwlab.hw.exercises import run_parity_steps
    bar = run_parity_steps()
    right = (bar.completed, bar.try_wait_parity(0), bar.try_wait_parity(1))
    if kind == "swapped":
        return (right[0], right[2], right[1])
    if kind == "both false":
        return (right[0], False, False)
    return (right[0] + 1, right[1], right[2])     # counted the open phase as completed
    del orient_ex


def _rules_wrong(letter_rule):
    from bwlab.tma import exercises as tma_ex
    from bwlab.tma.exercises import _verdict
    right = {k: _verdict(kw)[0] if isinstance(_verdict(kw), tuple) else _verdict(kw)
             for k, kw in tma_ex.rule_candidates().items()}
    return right, letter_rule


HOPS_RIGHT = {"TMA load": ("GMEM", "SMEM"), "tcgen05.mma": ("SMEM", "TMEM"), "tcgen05.ld": ("TMEM", "RMEM"),
              "st.shared": ("RMEM", "SMEM"), "TMA store": ("SMEM", "GMEM")}


def _a_mask_right(m, n, cm, cn):
    return sum(1 << (m + cm * j) for j in range(cn))


def _hop_bytes(m, n, k, ab="f16", d="f32"):
    size = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "f32": 4}
    ops = (m + n) * k * size[ab]
    return {"tma_load": ops, "mma": ops, "tmem_ld": m * n * 4, "tma_store": m * n * size[d]}


def _lbo_sbo(swizzle, rows):
    width = {"none": 16, "32B": 32, "64B": 64, "128B": 128}[swizzle]
    return ((rows // 8) * 128 if swizzle == "none" else 16), 8 * width


def _desc(start, lbo, sbo, swizzle, code=None, fixed=True):
    code = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}[swizzle] if code is None else code
    d = ((start >> 4) & 0x3FFF) | ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32
    return d | (1 << 46 if fixed else 0) | code << 61


def _idesc(ab, d, M, N, a_major, b_major, m_shift=4, n_shift=3, m_at=24):
    ab_code = {"f16": 0, "bf16": 1, "tf32": 2}[ab]
    v = ({"f16": 0, "f32": 1}[d] << 4) | (ab_code << 7) | (ab_code << 10)
    v |= (a_major == "MN") << 15 | (b_major == "MN") << 16
    return v | (N >> n_shift) << 17 | (M >> m_shift) << m_at


def _ctas(smem, regs, threads, unit=True, caps=True, smem_sm=233472):
    warps = (threads + 31) // 32
    per_warp = (regs * 32 + 255) // 256 * 256 if unit else regs * 32
    n = min(smem_sm // smem, 65536 // (per_warp * warps))
    return min(n, 32, 64 // warps) if caps else n


def _wavefronts(addresses, words_distinct=True, phases=4):
    total = 0
    per = 32 // phases
    for phase in range(phases):
        hits = []
        for a in addresses[per * phase: per * phase + per]:
            hits.extend(range(int(a) // 4, int(a) // 4 + 4))
        words = set(hits) if words_distinct else hits
        banks = [0] * 32
        for w in words:
            banks[w % 32] += 1
        total += max(banks)
    return total


# (exercise, what the learner did, the answer (a callable building it), words its first miss must show;
# ("not checked", words): a small family the visible check does not cover (0.1's GPU list): no miss
# here, and the line says what was not checked, with those words, and never "correct")
CATALOGUE = [
    # ---- 00 -----------------------------------------------------------------------------------------
    ("orient_tier", "Blackwell taken as cc == (10, 0): sm_103 and sm_110 missed",
     lambda: (lambda stage, cc: _tier_right(stage, cc) if cc is None or tuple(cc) != (10, 3)
              else ("hardware" if stage in ("tma", "multicast", "store") else "hybrid")), ("not checked", "sm_103")),
    ("orient_tier", "'Blackwell' taken for 'has tcgen05' (sm_120 too)",
     lambda: (lambda stage, cc: "hardware" if cc is not None and cc[0] >= 10 else _tier_right(stage, cc)),
     "tcgen05"),
    ("orient_tier", "every stage on hardware wherever there is TMA",
     lambda: (lambda stage, cc: _tier_right(stage, cc) if cc is None or tuple(cc) < (9, 0) else "hardware"),
     "tcgen05 and TMEM"),
    ("orient_tier", "a made-up tier name",
     lambda: (lambda stage, cc: "gpu"), "a tier is one of"),
    ("orient_hops", "the hops reversed", lambda: {k: v[::-1] for k, v in HOPS_RIGHT.items()}, "other way round"),
    ("orient_hops", "Hopper's accumulator: tcgen05.mma into registers",
     lambda: {**HOPS_RIGHT, "tcgen05.mma": ("SMEM", "RMEM")}, "wgmma accumulates"),
    ("orient_hops", "a hop left out", lambda: {k: v for k, v in HOPS_RIGHT.items() if k != "st.shared"},
     "no answer yet for ['st.shared']"),
    ("orient_tile_bytes", "elements, not bytes", lambda: (lambda r, c, d: r * c), "number of elements"),
    ("orient_tile_bytes", "bits, not bytes", lambda: (lambda r, c, d: r * c * element_type(d).bits), "divide by 8"),
    ("orient_tile_bytes", "ElementType.bytes for e2m1",
     lambda: (lambda r, c, d: r * c * element_type(d).bytes), "count bits"),
    ("orient_parity", "parities swapped", lambda: _orient_parity_wrong("swapped"), "parities swapped"),
    ("orient_parity", "the open phase counted as completed", lambda: _orient_parity_wrong("open"), "phase"),
    ("orient_parity", "both waits fail", lambda: _orient_parity_wrong("both false"), "does not wait for the current"),
]

CATALOGUE += [
    # ---- 01 -----------------------------------------------------------------------------------------
    ("tma_tx_bytes", "elements, not bytes", lambda: (lambda d, b, s: int(np.prod(b))), "number of elements"),
    ("tma_tx_bytes", "the first two box dimensions only",
     lambda: (lambda d, b, s: b[0] * (b[1] if len(b) > 1 else 1) * _bytes(d)), "first two box dimensions"),
    ("tma_tx_bytes", "the SMEM footprint (rows padded to the swizzle span)",
     lambda: (lambda d, b, s: max(b[0] * _bytes(d), {"none": 0, "32B": 32, "64B": 64, "128B": 128}[s])
              * int(np.prod(b[1:]))), "SMEM footprint"),
    ("tma_expect_tx_edit", "elements of the box, not bytes",
     lambda: __import__("bwlab.tma.exercises", fromlist=["x"]).edit_box()[0]
     * __import__("bwlab.tma.exercises", fromlist=["x"]).edit_box()[1], "number of elements"),
    ("tma_expect_tx_edit", "one 16-byte granule too many", lambda: 2 * _box()[0] * _box()[1] + 16, "tx-count"),
    ("tma_expect_tx_edit", "the box in bits", lambda: 16 * __import__("bwlab.tma.exercises", fromlist=["x"]).edit_box()[0]
     * __import__("bwlab.tma.exercises", fromlist=["x"]).edit_box()[1], "never completes"),
    ("tma_swizzle_offset", "no swizzle", lambda: (lambda r, c, e, base: r * 128 + c * e), "without swizzle"),
    ("tma_swizzle_offset", "c in elements, not bytes",
     lambda: (lambda r, c, e, base: ((base + r * 128 + c) ^ ((((base + r * 128 + c) >> 7) & 7) << 4)) - base),
     "multiply by elem_bytes"),
    ("tma_swizzle_offset", "the absolute address",
     lambda: (lambda r, c, e, base: (base + r * 128 + c * e) ^ ((((base + r * 128 + c * e) >> 7) & 7) << 4)),
     "absolute SMEM address"),
    ("tma_oob_fill", "the fill not counted in expect_tx",
     lambda: (lambda d, g, b, c: _oob(d, g, b, c, "inside bytes")), "still count towards expect_tx"),
    ("tma_oob_fill", "the elements inside, not the fill",
     lambda: (lambda d, g, b, c: _oob(d, g, b, c, "inside")), "inside the tensor"),
    ("tma_oob_fill", "expect_tx in elements", lambda: (lambda d, g, b, c: _oob(d, g, b, c, "elements")),
     "counts bytes, not elements"),
    # ---- 02 -----------------------------------------------------------------------------------------
    ("mc_a_mask", "ranks numbered row-major (m * cluster_n + n)",
     lambda: (lambda m, n, cm, cn: sum(1 << (m * cn + j) for j in range(cn))), "row-major"),
    ("mc_a_mask", "the B mask (same n, every m)",
     lambda: (lambda m, n, cm, cn: sum(1 << (i + cm * n) for i in range(cm))), "B mask"),
    ("mc_a_mask", "the own bit left out",
     lambda: (lambda m, n, cm, cn: _a_mask_right(m, n, cm, cn) & ~(1 << (m + cm * n))), "own bit"),
    ("mc_a_mask", "the rank, not a mask", lambda: (lambda m, n, cm, cn: m + cm * n), "rank, not a mask"),
    ("mc_a_mask", "right for square clusters only (cluster_m used for both)",
     lambda: (lambda m, n, cm, cn: sum(1 << (m + cm * j) for j in range(cm))), "a random case of the family"),
    ("mc_expect_tx", "only this CTA's slices",
     lambda: (lambda cm, cn, tm, tn, tk: (tm // cn + tn // cm) * tk * 2), "the bytes this CTA issues"),
    ("mc_expect_tx", "elements, not bytes", lambda: (lambda cm, cn, tm, tn, tk: (tm + tn) * tk), "elements, not bytes"),
    ("mc_expect_tx", "A alone", lambda: (lambda cm, cn, tm, tn, tk: tm * tk * 2), "the A tile only"),
    ("mc_teach_mask", "right for 2 x 2 and 2 x 4, wrong for 4 x 2", lambda: "(0x55u & ((1u << (CLUSTER_X * CLUSTER_Y)) - 1)) << mn.x",
     "a shape beyond the two"),
    ("mc_teach_mask", "the B mask pattern", lambda: "((1u << CLUSTER_X) - 1) << (CLUSTER_X * mn.y)", "B mask"),
    ("mc_teach_mask", "only the own bit", lambda: "1u << rank", "own bit"),
    ("mc_l2_saved", "the bytes multicast reads, not those saved",
     lambda: (lambda cm, cn, tm, tn: cm * tm * 128 + cn * tn * 128), "with multicast; saved = without - with"),
    ("mc_l2_saved", "elements, not bytes",
     lambda: (lambda cm, cn, tm, tn: cm * cn * (tm + tn) * 64 - (cm * tm + cn * tn) * 64), "elements, not bytes"),
    ("mc_l2_saved", "A and B swapped between the cluster sides",
     lambda: (lambda cm, cn, tm, tn: cm * cn * (tm + tn) * 128 - (cn * tm + cm * tn) * 128), "cluster sides swapped"),
    # ---- 03 -----------------------------------------------------------------------------------------
    ("mma_lbo_sbo", "LBO and SBO swapped", lambda: (lambda s, r: _lbo_sbo(s, r)[::-1]), "swapped"),
    ("mma_lbo_sbo", "SBO one atom row", lambda: (lambda s, r: (_lbo_sbo(s, r)[0], _lbo_sbo(s, r)[1] // 8)),
     "8-row group"),
    ("mma_lbo_sbo", "elements, not bytes", lambda: (lambda s, r: tuple(v // 2 for v in _lbo_sbo(s, r))),
     "elements, not bytes"),
    ("mma_smem_desc", "the fixed 0b001 at bits 46-48 left out",
     lambda: (lambda st, l, sb, sw: _desc(st, l, sb, sw, fixed=False)), "46"),
    ("mma_smem_desc", "Hopper's swizzle codes", lambda: (lambda st, l, sb, sw: _desc(
        st, l, sb, sw, code={"none": 0, "128B_base32B": 1, "128B": 1, "64B": 2, "32B": 3}[sw])), "swizzling mode"),
    ("mma_smem_desc", "offsets not divided by 16",
     lambda: (lambda st, l, sb, sw: _desc(st * 16, l * 16, sb * 16, sw)), "16-byte units"),
    ("mma_instr_desc", "the D format as f16", lambda: (lambda ab, d, M, N, am, bm: _idesc(ab, "f16", M, N, am, bm)),
     "D format"),
    ("mma_instr_desc", "N not divided by 8", lambda: (lambda *a: _idesc(*a, n_shift=0)), "N >> 3"),
    ("mma_instr_desc", "M at bit 23", lambda: (lambda *a: _idesc(*a, m_at=23)), "bits 24-28"),
    ("mma_legal_shape", "M = 256 for one CTA",
     lambda: (lambda M, N, g: M in (64, 128, 256) and N % 8 == 0 and 8 <= N <= 256), "takes M in (64, 128)"),
    ("mma_legal_shape", "N step 8 for a pair", lambda: (lambda M, N, g: (M in (64, 128) if g == 1 else M in (128, 256))
                                                        and N % 8 == 0 and 8 <= N <= 256), "a multiple of 16"),
    ("mma_legal_shape", "Hopper's wgmma M = 64 only", lambda: (lambda M, N, g: M == 64 and N % 8 == 0 and N <= 256), "legal: cta_group::1 takes M in"),
    ("mma_teach_sbo", "one atom row", lambda: {"none": 16, "32B": 32, "64B": 64, "128B": 128}[
        __import__("bwlab.umma.exercises", fromlist=["x"]).teach_sbo_case()["a_swizzle"]], "SBO jumps 8 rows"),
    ("mma_teach_sbo", "elements, not bytes", lambda: 4 * {"none": 16, "32B": 32, "64B": 64, "128B": 128}[
        __import__("bwlab.umma.exercises", fromlist=["x"]).teach_sbo_case()["a_swizzle"]], "elements, not bytes"),
    ("mma_teach_sbo", "a whole tile", lambda: 8192, "past the kernel's"),
    # ---- 04 -----------------------------------------------------------------------------------------
    ("tmem_address", "lane and column swapped", lambda: (lambda b, l, c: b + (c << 16) + l), "swapped"),
    ("tmem_address", "lane in the low bits", lambda: (lambda b, l, c: b + l * 512 + c), "row-major index"),
    ("tmem_address", "base ignored", lambda: (lambda b, l, c: (l << 16) + c), "base is missing"),
    ("tmem_quarter", "warp, not warp % 4", lambda: (lambda w, l: 32 * w <= l < 32 * w + 32), "warp % 4"),
    ("tmem_quarter", "every warp every lane", lambda: (lambda w, l: True), "only the 32 lanes"),
    ("tmem_quarter", "quarters of 16 lanes", lambda: (lambda w, l: 16 * (w % 4) <= l < 16 * (w % 4) + 16), "not 16"),
    ("tmem_registers", ".pack::16b halves the registers", lambda: (lambda s, n, p=False: _regs(s, n) // (2 if p else 1)),
     ".pack::16b does not halve"),
    ("tmem_registers", "a lane's columns", lambda: (lambda s, n, p=False: _cols(s) * n), "32-bit columns of one lane"),
    ("tmem_registers", "the whole warp's", lambda: (lambda s, n, p=False: _lanes(s) * _cols(s) * n), "whole warp"),
    ("tmem_holder", ".32x32b's map for every shape", lambda: (lambda s, n, l, c: (l, c)), ".32x32b map"),
    ("tmem_holder", "(register, thread)", lambda: (lambda s, n, l, c: _holder_right(s, n, l, c)[::-1]), "wrong order"),
    ("tmem_holder", ".16x256b with the register bits swapped",
     lambda: (lambda s, n, l, c: _holder_right(s, n, l, c) if s != "16x256b"
              else (4 * (l % 8) + (c % 8) // 2, 2 * (c % 2) + (l // 8) + 4 * (c // 8))), "of one .16x256b.x1 load differ"),
    ("tmem_kernel_columns", "the allocation not a power of two", lambda: (_wide(), 3 * _wide() // 2),
     "power of two"),
    ("tmem_kernel_columns", "kNum in bytes", lambda: (4 * _wide(), 512), "does not compile"),
    ("tmem_kernel_columns", "an allocation larger than needed", lambda: (_wide(), 512), "not the smallest"),
]

CATALOGUE += [
    # ---- 05 -----------------------------------------------------------------------------------------
    ("store_wavefronts", "every lane's words counted, shared ones twice",
     lambda: (lambda a: _wavefronts(a, words_distinct=False)), "distinct words"),
    ("store_wavefronts", "one phase of 32 lanes", lambda: (lambda a: _wavefronts(a, phases=1)), "four quarter-warps"),
    ("store_wavefronts", "one wavefront per lane", lambda: (lambda a: 32), "one wavefront per lane"),
    ("store_fence", "a fence anywhere is enough",
     lambda: (lambda steps: "fence.proxy.async" not in steps), "a fence anywhere is not enough"),
    ("store_fence", "the barrier alone is enough", lambda: (lambda steps: "bar.sync" not in steps), "async proxy"),
    ("store_fence", "never stale", lambda: (lambda steps: False), "never stale is too hopeful"),
    ("store_wait_ring", "N = stages", lambda: (lambda stages: stages), "race"),
    ("store_wait_ring", "always 0", lambda: (lambda stages: 0), "waits for every store"),
    ("store_wait_ring", "stages - 2", lambda: (lambda stages: stages - 2), "one short of the largest"),
    ("store_swizzle_offset", "no swizzle", lambda: (lambda r, c, e, s: r * {"32B": 32, "64B": 64, "128B": 128}[s] + c * e),
     "before the swizzle"),
    ("store_swizzle_offset", "always 128-byte rows", lambda: (lambda r, c, e, s: (r * 128 + c * e) ^ ((((r * 128 + c * e) >> 7)
                                                                     & 7) << 4)), "rows of 128 bytes"),
    ("store_swizzle_offset", "col in elements", lambda: (lambda r, c, e, s: _staged(r, c, 1, s)), "multiply by elem_bytes"),
    ("store_kernel_coords", "(row, column) order", lambda: ("blockIdx.y * BM", "blockIdx.x * BN"), "swapped"),
    ("store_kernel_coords", "tile indices, not elements", lambda: ("blockIdx.x", "blockIdx.y"), "tile indices"),
    ("store_kernel_coords", "BM and BN swapped", lambda: ("blockIdx.x * BM", "blockIdx.y * BN"), "BM and BN swapped"),
    # ---- 06 -----------------------------------------------------------------------------------------
    ("flow_hop_bytes", "the store in f32 whatever d", lambda: (lambda m, n, k, ab="f16", d="f32":
                                                               {**_hop_bytes(m, n, k, ab, d), "tma_store": m * n * 4}), "converted to"),
    ("flow_hop_bytes", "the MMA reads A once per column of B", lambda: (lambda m, n, k, ab="f16", d="f32":
                                                                       {**_hop_bytes(m, n, k, ab, d), "mma": 0}), "fewer bytes than the rule gives"),
    ("flow_hop_bytes", "elements, not bytes", lambda: (lambda m, n, k, ab="f16", d="f32":
                                                       {h: v // 2 for h, v in _hop_bytes(m, n, k, ab, d).items()}), "elements, not bytes"),
    ("flow_k_step", "elements, not bytes", lambda: 16, "in elements; the start address counts bytes"),
    ("flow_k_step", "a whole 128-byte row", lambda: 128, "inside the same row"),
    ("flow_k_step", "in 16-byte units (the descriptor's)", lambda: 2, "the encoded step"),
    ("flow_mma_count", "K = 16 elements whatever the type",
     lambda: (lambda m, k, ab: (k // 16, (m // 64) * (k // 16))), "steps K by 16 elements"),
    ("flow_mma_count", "wgmma also all rows at once",
     lambda: (lambda m, k, ab: (k * _bytes(ab) // 32, k * _bytes(ab) // 32)), "wgmma is m64"),
    ("flow_mma_count", "one MMA per tile", lambda: (lambda m, k, ab: (1, 1)), "an instruction reads 32 bytes of K"),
    ("flow_orderings", "the fence's bite put on st.shared", lambda: (
        {"wait on full": "mma", "wait on mma_done": "tmem_ld", "tcgen05.wait::ld": "st_shared",
         "fence.proxy.async": "st_shared"}, {"wait on full": ("async", "async"), "fence.proxy.async": ("generic", "async")}),
     "a read of what it wrote"),
    ("flow_orderings", "proxies swapped", lambda: (
        {"wait on full": "mma", "wait on mma_done": "tmem_ld", "tcgen05.wait::ld": "st_shared",
         "fence.proxy.async": "tma_store"}, {"wait on full": ("async", "async"), "fence.proxy.async": ("async", "generic")}),
     "swapped: the first is the proxy that writes"),
    ("flow_orderings", "wait on mma_done bites the MMA", lambda: (
        {"wait on full": "mma", "wait on mma_done": "mma", "tcgen05.wait::ld": "st_shared",
         "fence.proxy.async": "tma_store"}, {"wait on full": ("async", "async"), "fence.proxy.async": ("generic", "async")}),
     "the bytes mma leaves are right"),
    ("flow_l2_reads", "with multicast: one read per cluster", lambda: (lambda M, N, cm, cn: (
        (M // 128) * (N // 128) * 2 * 16384, (M // 128 // cm) * (N // 128 // cn) * 2 * 16384)), "dividing by the cluster size"),
    ("flow_l2_reads", "one operand tile per cluster side", lambda: (lambda M, N, cm, cn: (
        (M // 128) * (N // 128) * 2 * 16384, (M // 128 // cm) * (N // 128 // cn) * max(cm, cn) * 16384)), "one factor for both operands"),
    ("flow_l2_reads", "elements, not bytes", lambda: (lambda M, N, cm, cn: (
        (M // 128) * (N // 128) * 2 * 8192, (M // 128 // cm) * (N // 128 // cn) * (cm + cn) * 8192)), "elements, not bytes"),
    # ---- 07 -----------------------------------------------------------------------------------------
    ("gemm_stage_bytes", "elements, not bytes", lambda: (lambda bm, bn: (bm + bn) * 64), "counts elements"),
    ("gemm_stage_bytes", "A alone", lambda: (lambda bm, bn: bm * 64 * 2), "A slice alone"),
    ("gemm_stage_bytes", "a C tile", lambda: (lambda bm, bn: bm * bn * 2), "C tile"),
    ("gemm_ctas_per_sm", "the 256-register allocation unit left out",
     lambda: (lambda smem, regs, threads: _ctas(smem, regs, threads, unit=False)), "units of 256"),
    ("gemm_ctas_per_sm", "228 KiB as 228 x 1000", lambda: (lambda smem, regs, threads: _ctas(smem, regs, threads,
                                                                                             smem_sm=228000)), "228 x 1024"),
    ("gemm_ctas_per_sm", "no cap of 32 CTAs and 64 warps",
     lambda: (lambda smem, regs, threads: _ctas(smem, regs, threads, caps=False)), "32 CTAs and 64 warps"),
    ("gemm_flop_per_sm_cycle", "one CTA only", lambda: (lambda bm, bn, cyc, ctas: 2 * bm * bn * 64 / cyc), "one CTA"),
    ("gemm_flop_per_sm_cycle", "a multiply-add as 1 FLOP", lambda: (lambda bm, bn, cyc, ctas: ctas * bm * bn * 64 / cyc),
     "2 FLOP"),
    ("gemm_flop_per_sm_cycle", "k-slice depth left out", lambda: (lambda bm, bn, cyc, ctas: ctas * 2 * bm * bn / cyc),
     "BK = 64"),
    ("gemm_producer_parity", "the consumers' parity", lambda: (lambda kt, st: (kt // st) & 1), "consumers wait on"),
    ("gemm_producer_parity", "k-slices, not fills", lambda: (lambda kt, st: (kt + 1) & 1), "its own fills"),
    ("gemm_producer_parity", "always 0", lambda: (lambda kt, st: 0), "a constant parity"),
    ("gemm_handshake", "parities swapped", lambda: ("(kt / STAGES + 1) & 1", "(kt / STAGES) & 1"), "passes before the TMA has landed it"),
    ("gemm_handshake", "k-slices, not fills", lambda: ("kt & 1", "(kt + 1) & 1"), "passes before"),
    ("gemm_handshake", "the same parity for both", lambda: ("(kt / STAGES) & 1", "(kt / STAGES) & 1"), "the producer's wait on empty[0]"),
    ("gemm_ring_depth", "the ring as written", lambda: 4, "a ring one stage shorter is predicted as fast"),
    ("gemm_ring_depth", "two stages", lambda: 2, "cannot stay far enough ahead"),
    ("gemm_ring_depth", "one buffer", lambda: 1, "wrong before it is slow"),
    ("gemm_ring_depth", "one stage more than the file's", lambda: 5, "more than an H100 SM"),
]


def _staged(r, c, e, s):
    row_bytes = {"32B": 32, "64B": 64, "128B": 128}[s]
    bits = {"32B": 1, "64B": 2, "128B": 3}[s]
    a = r * row_bytes + c * e
    return a ^ (((a >> 7) & ((1 << bits) - 1)) << 4)


def check_of(exercise: str):
    """The visible check of `exercise` (its graded cell without the hidden part), taking the answer."""
    from bwlab.capstone import exercises as cap
    from bwlab.epilogue import exercises as store
    from bwlab.flow import exercises as flow
    from bwlab.gemm import exercises as gemm
    from bwlab.hw import exercises as orient
    from bwlab.multicast import exercises as mc
    from bwlab.tma import exercises as tma
    from bwlab.tmem import exercises as tmem
    from bwlab.umma import exercises as umma
    one = {
        "orient_tier": orient.check_tier, "orient_hops": orient.check_hops, "orient_tile_bytes": orient.check_tile_bytes,
        "orient_parity": orient.check_mbarrier_parity, "tma_broken_rule": tma.check_broken_rule,
        "tma_tx_bytes": tma.check_tx_bytes, "tma_expect_tx_edit": tma.check_expect_tx_edit,
        "tma_swizzle_offset": tma.check_swizzle_offset, "tma_oob_fill": tma.check_oob_fill,
        "mc_a_mask": mc.check_a_mask, "mc_expect_tx": mc.check_expect_tx, "mc_teach_mask": mc.check_teach_a_mask,
        "mc_l2_saved": mc.check_l2_saved, "mma_lbo_sbo": umma.check_lbo_sbo, "mma_smem_desc": umma.check_smem_desc,
        "mma_instr_desc": umma.check_instr_desc, "mma_legal_shape": umma.check_legal_shape,
        "mma_teach_sbo": umma.check_teach_sbo, "tmem_address": tmem.check_address, "tmem_quarter": tmem.check_quarter,
        "tmem_registers": tmem.check_registers, "tmem_holder": tmem.check_holder,
        "store_wavefronts": store.check_wavefronts, "store_fence": store.check_fence,
        "store_wait_ring": store.check_ring_wait, "store_swizzle_offset": store.check_staged_offset,
        "store_kernel_coords": store.check_store_coords, "flow_hop_bytes": flow.check_hop_bytes,
        "flow_k_step": flow.check_k_step, "flow_mma_count": flow.check_mma_count, "flow_l2_reads": flow.check_l2_reads,
        "gemm_stage_bytes": gemm.check_stage_bytes, "gemm_ctas_per_sm": gemm.check_ctas_per_sm,
        "gemm_flop_per_sm_cycle": gemm.check_flop_per_sm_cycle, "gemm_producer_parity": gemm.check_producer_parity,
        "gemm_ring_depth": gemm.check_ring_depth,
        "lowp_mx_scale": umma.check_mx_scale, "lowp_sf_offset": umma.check_sf_offset,
        "lowp_bs_idesc": umma.check_bs_idesc, "lowp_scale_b_copy": umma.check_scale_b_copy,
        "cap_producer": cap.check_producer,
    }
    several = {"mc_slice_receivers": mc.check_slice_receivers, "tmem_kernel_columns": tmem.check_wide_load,
               "flow_orderings": flow.check_orderings, "gemm_handshake": gemm.check_handshake,
               "cap_consumer": cap.check_consumer, "cap_bw_ring": cap.check_bw_ring,
               "cap_acc_phases": cap.check_acc_phases, "cap_acc_handoff": cap.check_acc_handoff}
    if exercise in one:
        return one[exercise]
    return lambda answer: several[exercise](*answer)


def _rules(change):
    """This student's right answers of 1.1, with `change(right)` applied."""
    from bwlab.tma import exercises as tma_ex
    right = {k: tma_ex._verdict(kw)[0] for k, kw in tma_ex.rule_candidates().items()}
    return change(right)


def _first(right, legal: bool):
    return next(k for k, v in sorted(right.items()) if (v == "legal") == legal)


def _receivers(kind):
    from bwlab.multicast import exercises as ex
    r = ex.receiver_rank()
    m, n = r % 4, r // 4
    ranks, offset = [4 * n + i for i in range(4)], m * 8192
    if kind == "A receivers":
        return [m + 4 * j for j in range(4)], offset
    if kind == "own missing":
        return [x for x in ranks if x != r], offset
    if kind == "slice n":
        return ranks, n * 8192 if n != m else (m + 1) % 4 * 8192
    return ranks, m * 4096 if m else 8192 * 4     # elements (or past the tile where m = 0)


CATALOGUE += [
    ("tma_broken_rule", "a legal map given a rule", lambda: _rules(
        lambda r: {**r, _first(r, True): "box-inner-bytes"}), "is legal"),
    ("tma_broken_rule", "an illegal map called legal", lambda: _rules(
        lambda r: {**r, _first(r, False): "legal"}), "TensorMap("),
    ("tma_broken_rule", "a rule's name made up", lambda: _rules(lambda r: {**r, _first(r, False): "stride"}),
     "not a rule's name"),
    ("mc_slice_receivers", "the A receivers", lambda: _receivers("A receivers"), "the A receivers"),
    ("mc_slice_receivers", "the sender left out", lambda: _receivers("own missing"), "itself is missing"),
    ("mc_slice_receivers", "the slice numbered by n", lambda: _receivers("slice n"), "numbered by the sender's m"),
    ("mc_slice_receivers", "the offset in elements", lambda: _receivers("elements"), "elements, not bytes"),
]


# ---- 09 low precision -----------------------------------------------------------------------------------
def _bs_idesc(a, b, N, i, j, m_at=27, m_shift=7, st=1, swap=False):
    code = {"e4m3": 0, "e5m2": 1}
    if swap:
        i, j = j, i
    return (j << 4) | (code[a] << 7) | (code[b] << 10) | ((N >> 3) << 17) | (st << 23) | ((128 >> m_shift) << m_at) \
        | (i << 29)


CATALOGUE += [
    ("lowp_mx_scale", "ceil instead of floor", lambda: (lambda a: int(np.ceil(np.log2(a))) - 8 + 127), "ceil where the rule floors"),
    ("lowp_mx_scale", "e4m3's range left out", lambda: (lambda a: int(np.floor(np.log2(a))) + 127), "subtract 8"),
    ("lowp_mx_scale", "no bias", lambda: (lambda a: int(np.floor(np.log2(a))) - 8), "bias (127) is missing"),
    ("lowp_mx_scale", "amax / 448 rounded up", lambda: (lambda a: int(np.ceil(np.log2(a / 448))) + 127), "not the OCP MX one"),
    ("lowp_sf_offset", "row-major", lambda: (lambda r, j: 4 * r + j), "16 bytes apart"),
    ("lowp_sf_offset", "strides swapped", lambda: (lambda r, j: 4 * (r % 32) + 16 * (r // 32) + j), "16 bytes apart"),
    ("lowp_sf_offset", "scales 128 bytes apart", lambda: (lambda r, j: 16 * (r % 32) + 4 * (r // 32) + 128 * j),
     "consecutive bytes of one word"),
    ("lowp_bs_idesc", "M >> 7 at bit 24", lambda: (lambda *a: _bs_idesc(*a, m_at=24)), "bits 27-28"),
    ("lowp_bs_idesc", "scale type ue4m3", lambda: (lambda *a: _bs_idesc(*a, st=0)), "bit 23"),
    ("lowp_bs_idesc", "the IDs swapped", lambda: (lambda *a: _bs_idesc(*a, swap=True)), "swapped"),
    ("lowp_scale_b_copy", "nothing copied", lambda: ";", "whatever those columns held"),
    ("lowp_scale_b_copy", "a plain 128-row copy", lambda: 'asm volatile("tcgen05.cp.cta_group::1.128x128b [%0], %1;" '
     '::"r"(tsfb + 4 * a), "l"(scale_atom_desc(sfb_smem + 32 * a)) : "memory");', "the emulator stopped"),
    ("lowp_scale_b_copy", "over scale_A's columns",
     lambda: "tcgen05_cp_32x128b_warpx4(tsfa + 4 * a, scale_atom_desc(sfb_smem + 32 * a));", "differ from the model"),
    ("lowp_scale_b_copy", "scale_A's atom copied", lambda: "tcgen05_cp_32x128b_warpx4(tsfb + 4 * a, "
     "scale_atom_desc(sfa_smem + 32 * a));", "differ from the model"),
]


# ---- 10 the capstone: one region's fill wrong, the exercise's other regions as the ladder writes them --------
def _cap(exercise, **wrong):
    """The answer of a capstone exercise (its regions' fills, in order) with `wrong` in place of some."""
    from bwlab.capstone.exercises import EXERCISES
    from bwlab.capstone.skeleton import ladder_fills
    kernel, regions, _ = EXERCISES[exercise]
    right = ladder_fills(kernel)
    answer = tuple(wrong.get(r, right[r]) for r in regions)
    return answer[0] if len(answer) == 1 else answer


_H_WAIT = "if (it >= STAGES && !mbarrier_wait(&empty[s], {}, BAR_EMPTY, 0)) return; "
_TX = "mbarrier_arrive_expect_tx(&full[s], {});"
CATALOGUE += [
    ("cap_producer", "the consumers' parity on empty", lambda: _cap("cap_producer", producer_acquire=_H_WAIT.format(
        "(it / STAGES) & 1") + _TX.format("STAGE_BYTES")), "the phase this very use will complete"),
    ("cap_producer", "no wait at all", lambda: _cap("cap_producer", producer_acquire=_TX.format("STAGE_BYTES")),
     "never waits on empty[s]"),
    ("cap_producer", "parity 0 on the first pass, no guard", lambda: _cap("cap_producer", producer_acquire=(
        "if (!mbarrier_wait(&empty[s], (it / STAGES) & 1, BAR_EMPTY, 0)) return; " + _TX.format("STAGE_BYTES"))),
     "of a fresh barrier"),
    ("cap_producer", "A's bytes only", lambda: _cap("cap_producer", producer_acquire=_H_WAIT.format(
        "(it / STAGES + 1) & 1") + _TX.format("A_BYTES")), "A's box alone"),
    ("cap_producer", "an arrive without expect_tx", lambda: _cap("cap_producer", producer_acquire=_H_WAIT.format(
        "(it / STAGES + 1) & 1") + "mbarrier_arrive(&full[s]);"), "without announcing any bytes"),
    ("cap_consumer", "no wait on full", lambda: _cap("cap_consumer", consumer_wait=""), "never wait on full[s]"),
    ("cap_consumer", "the producer's parity", lambda: _cap("cap_consumer", consumer_wait=(
        "if (!mbarrier_wait(&full[s], (it / STAGES + 1) & 1, BAR_FULL, STAGE_BYTES)) return;")), "the phase before"),
    ("cap_consumer", "kt, not it", lambda: _cap("cap_consumer", consumer_wait=(
        "if (!mbarrier_wait(&full[s], (kt / STAGES) & 1, BAR_FULL, STAGE_BYTES)) return;")), "counts kt"),
    ("cap_consumer", "every thread releases", lambda: _cap("cap_consumer", consumer_release=(
        "mbarrier_arrive(&empty[(it - 1) % STAGES]);")), "every thread arrives"),
    ("cap_consumer", "one release per warpgroup", lambda: _cap("cap_consumer", consumer_release=(
        "if (threadIdx.x % 128 == 0) mbarrier_arrive(&empty[(it - 1) % STAGES]);")), "per warpgroup"),
    ("cap_consumer", "the stage still being read", lambda: _cap("cap_consumer", consumer_release=(
        "if (laneid() == 0) mbarrier_arrive(&empty[it % STAGES]);")), "may still be running"),
    ("cap_bw_ring", "this fill's parity for the TMA warp", lambda: _cap("cap_bw_ring", tma_acquire=(
        "if (!(ok = wait(&empty[s], phase, BAR_EMPTY, 0, error))) break; " + _TX.format("STAGE_BYTES"))),
     "of a fresh barrier"),
    ("cap_bw_ring", "the stage released by an arrive", lambda: _cap("cap_bw_ring", mma_release_stage=(
        "mbarrier_arrive(&empty[s]);")), "runs asynchronously"),
    ("cap_bw_ring", "the stage never released", lambda: _cap("cap_bw_ring", mma_release_stage=""),
     "nothing releases stage s"),
    ("cap_bw_ring", "the MMA warp on the producer's parity", lambda: _cap("cap_bw_ring", mma_wait_full=(
        "if (!(ok = wait(&full[s], phase ^ 1, BAR_FULL, STAGE_BYTES, error))) break;")), "the phase before"),
    ("cap_acc_phases", "the MMA warp on this use's parity", lambda: _cap("cap_acc_phases", mma_acc_acquire=(
        "if (!(ok = wait(&tmem_empty[buf], acc_phase, BAR_TMEM_EMPTY, 0, error))) break; "
        "tcgen05_fence_after_thread_sync();")), "of a fresh barrier"),
    ("cap_acc_phases", "the epilogue on the phase before", lambda: _cap("cap_acc_phases", epi_acc_wait=(
        "if (!(ok = wait(&tmem_full[buf], acc_phase ^ 1, BAR_TMEM_FULL, 0, error))) break; "
        "tcgen05_fence_after_thread_sync();")), "the phase before"),
    ("cap_acc_phases", "no fence after the epilogue's wait", lambda: _cap("cap_acc_phases", epi_acc_wait=(
        "if (!(ok = wait(&tmem_full[buf], acc_phase, BAR_TMEM_FULL, 0, error))) break;")), "fence::after_thread_sync"),
    ("cap_acc_phases", "no wait before the MMAs", lambda: _cap("cap_acc_phases",
                                                               mma_acc_acquire="tcgen05_fence_after_thread_sync();"),
     "never waits on tmem_empty"),
    ("cap_acc_handoff", "no commit", lambda: _cap("cap_acc_handoff", mma_acc_commit=""), "nothing ever arrives"),
    ("cap_acc_handoff", "an arrive instead of the commit", lambda: _cap("cap_acc_handoff", mma_acc_commit=(
        "if (ok) mbarrier_arrive(&tmem_full[buf]);")), "not that they completed"),
    ("cap_acc_handoff", "no fence before the release", lambda: _cap("cap_acc_handoff", epi_acc_release=(
        "__syncwarp(); if (lane == 0) mbarrier_arrive(&tmem_empty[buf]);")), "no tcgen05.fence::before_thread_sync"),
    ("cap_acc_handoff", "the after-fence before the release", lambda: _cap("cap_acc_handoff", epi_acc_release=(
        "tcgen05_fence_after_thread_sync(); __syncwarp(); if (lane == 0) mbarrier_arrive(&tmem_empty[buf]);")),
     "the fence is the other one"),
    ("cap_acc_handoff", "every lane releases", lambda: _cap("cap_acc_handoff", epi_acc_release=(
        "tcgen05_fence_before_thread_sync(); __syncwarp(); mbarrier_arrive(&tmem_empty[buf]);")),
     "every thread arrives on tmem_empty"),
]
