"""The checks of notebook 02's exercises: the A mask of a CTA, who receives a slice, what each barrier
expects, what multicast saves in L2 reads, and the A mask filled in inside the teaching kernel.

Every expected value comes from the stage's model (`create_tma_multicast_mask`, `plan`,
`l2_read_bytes`, `barrier_outcome`, `multicast_model`); the generic checks of `bwlab.exercises` say
what is wrong (`check_function_explained` among them, re-exported here: `check_function` plus a line
that explains the first differing case).
"""
from __future__ import annotations

import contextlib
import io

import numpy as np

from ..exercises import NotYet, check_function_explained, check_result, check_value, course_cases, unanswered
from .case import MulticastLoad
from .cluster import cluster_layout_vmnk, create_tma_multicast_mask, mask_ranks
from .mask_expr import EXPR_RULE, eval_mask_expr
from .model import (TEACH_KERNEL, barrier_outcome, barrier_table, make_operands, masked_multicast_model,
                    teach_config, teach_masks)
from .params import MulticastConfig
from .partition import l2_read_bytes, plan

__all__ = ["check_function_explained", "matching_mistakes", "check_a_mask", "RECEIVER_CONFIG", "RECEIVER_RANK",
           "RECEIVER_RANKS", "receiver_rank",
           "check_slice_receivers",
           "check_expect_tx", "check_l2_saved", "TEACH_MASK_LINE", "mask_kernel", "eval_mask_expr",
           "check_teach_a_mask"]


def _same(got, expected) -> bool:
    if isinstance(got, list):
        got = tuple(got)
    try:
        return bool(got == expected)
    except Exception:
        return False


def matching_mistakes(known, got):
    """The meanings of every (wrong value, meaning) pair in `known` whose value equals `got`, joined
    ("... — or ..." where one wrong value has two readings); None when none matches."""
    hits = [text for value, text in known if _same(got, value)]
    return " — or ".join(dict.fromkeys(hits)) if hits else None


# -- Exercise: the A mask of a CTA ------------------------------------------------------------------
MASK_RULE = ("create_tma_multicast_mask<2> (CuTe): the A tile of CTA (m, n) is needed by every CTA of its "
             "cluster row (same m, every n); bit r of the 16-bit ctaMask is the CTA whose %cluster_ctarank "
             "is r = m + M*n (M = CTAs along M)")


def _a_mask(m, n, cluster_m, cluster_n):
    lay = cluster_layout_vmnk((cluster_m, cluster_n, 1))
    return create_tma_multicast_mask(lay, (0, m, n, 0), (2,))


def _explain_mask(args, got, expected):
    m, n, cm, cn = args
    lay = cluster_layout_vmnk((cm, cn, 1))
    rank = lay(0, m, n, 0)
    b_mask = create_tma_multicast_mask(lay, (0, m, n, 0), (1,))
    if isinstance(got, (list, tuple, set)):
        return "a list of ranks: the mask is one int, the sum of 1 << r over the receiving ranks r"
    if got == rank:
        return f"{got} is CTA ({m}, {n})'s rank, not a mask: its bit is 1 << {rank}"
    if got == 1 << rank:
        return "only this CTA's own bit: the other CTAs of its row would never receive its slice"
    if isinstance(got, int) and got == expected & ~(1 << rank):
        return (f"CTA ({m}, {n})'s own bit (1 << {rank}) is missing: the sender is one of the CTAs that need "
                "the A tile, so its slice must land in its own SMEM too, or its own barrier stays short")
    if isinstance(got, int) and got >> (cm * cn):
        return f"0x{got:04X} sets bits of ranks {cm * cn} and up: a {cm} x {cn} cluster has ranks 0..{cm * cn - 1}"
    if got == b_mask:
        return f"0x{b_mask:04X} is the B mask (same n, every m); A is shared along the row: same m, every n"
    return None


# Whole formulas a learner may write instead of the A mask, each with what it means (checked over every
# case, so that one case's coincidence, e.g. a row-major A mask equal to CTA (0, 0)'s B mask, is not
# taken for another mistake).
A_MASK_MISTAKES = (
    ("you numbered the ranks row-major (m * cluster_n + n); %cluster_ctarank runs along M first: "
     "r = m + cluster_m * n, so the CTAs of one cluster row are cluster_m ranks apart",
     lambda m, n, cm, cn: sum(1 << (m * cn + j) for j in range(cn))),
    ("that is the B mask (same n, every m): A is shared along the cluster row, same m and every n",
     lambda m, n, cm, cn: sum(1 << (i + cm * n) for i in range(cm))),
    ("only this CTA's own bit: the other CTAs of its row would never receive its slice",
     lambda m, n, cm, cn: 1 << (m + cm * n)),
    ("that is CTA (m, n)'s rank, not a mask: a mask sets bit r for each receiving rank r",
     lambda m, n, cm, cn: m + cm * n),
)


def mask_family(rng) -> tuple[int, int, int, int]:
    """A random CTA of a random cluster of at most 16 CTAs (any M x N, not only squares or powers of
    two): the family 2.1's graded cases come from."""
    while True:
        cm, cn = int(rng.integers(1, 17)), int(rng.integers(1, 17))
        if cm * cn <= 16:
            return (int(rng.integers(cm)), int(rng.integers(cn)), cm, cn)


@course_cases("mc_a_mask")
def check_a_mask(fn, hidden=()) -> None:
    """`fn(m, n, cluster_m, cluster_n)` -> the A ctaMask of CTA (m, n), one-SM MMA, for every CTA of a
    4 x 4 and a 2 x 2 cluster, then (without `hidden`) 300 random CTAs of clusters up to 16 CTAs;
    `hidden`: more cluster shapes (cluster_m, cluster_n), course data."""
    from ..exercise_mistakes import which_mistake
    shapes = [(4, 4), (2, 2)] + [tuple(s) for s in hidden]
    cases = [(m, n, cm, cn) for cm, cn in shapes for n in range(cn) for m in range(cm)]
    whole = which_mistake(fn, cases, A_MASK_MISTAKES)

    def explain(args, got, expected):
        return whole or _explain_mask(args, got, expected)
    check_function_explained("the A mask of CTA (m, n)", fn, cases, reference=_a_mask, rule=MASK_RULE,
                             explain=explain, more="" if hidden else "clusters that are not square, "
                             "1 x 16 to 16 x 1, and one that is not a power of two",
                             family=mask_family, draws=300, family_text="clusters of up to 16 CTAs",
                             hint="tutorial 03's 4 x 4 cluster: CTA (1, 2) has A mask 0x2222 (ranks 1, 5, 9, 13)")


# -- Exercise: who receives a slice, and where it lands ----------------------------------------------
RECEIVER_CONFIG = dict(cluster=(4, 4), tile_m=128, tile_n=256, tile_k=64)   # tutorial 03's sizes
RECEIVER_RANK = 7                                            # the self-study variant
RECEIVER_RANKS = (7,) + tuple(r for r in range(16) if r != 7)   # every student's: one CTA of the cluster


def receiver_rank(token: str | None = None) -> int:
    """The rank whose B slice this student follows (bwlab.variants)."""
    from .. import variants
    return variants.pick("mc_slice_receivers", RECEIVER_RANKS, token)


def _b_issue():
    cfg = MulticastConfig(**RECEIVER_CONFIG)
    rank = receiver_rank()
    p = next(p for p in plan(cfg) if p.rank == rank)
    return cfg, p, next(i for i in p.issues if i.operand == "B")


@course_cases("mc_slice_receivers")
def check_slice_receivers(ranks, offset, hidden=()) -> None:
    """Which ranks receive the B slice that CTA receiver_rank() (this student's) issues, and at which
    byte offset of their B tile it lands. Two predicted values, so `hidden` adds no case."""
    cfg, p, iss = _b_issue()
    RECEIVER_RANK = p.rank
    want_ranks = mask_ranks(iss.mask)
    if isinstance(ranks, (list, tuple, set, np.ndarray)):
        ranks = sorted(int(r) for r in ranks)
    m, n = p.coord[1], p.coord[2]
    a_ranks = mask_ranks(next(i for i in p.issues if i.operand == "A").mask)
    said = io.StringIO()    # the two "correct" lines once both are right: a miss says only what is wrong
    with contextlib.redirect_stdout(said):
        _check_receivers(cfg, p, iss, ranks, want_ranks, a_ranks, RECEIVER_RANK)
        _check_offset(cfg, p, iss, offset, m, n, want_ranks, RECEIVER_RANK)
    print(said.getvalue(), end="")


def _check_offset(cfg, p, iss, offset, m, n, want_ranks, RECEIVER_RANK):
    nbytes = iss.slice.nbytes
    check_value(f"the byte offset of rank {RECEIVER_RANK}'s B slice inside the B tile", offset,
                iss.slice.smem_offset,
                rule="tma_partition: the B tile is split among the CTAs of the column; the CTA with coordinate "
                     "m along M issues slice m, which lands at m x (slice bytes) in every receiver",
                mistakes={n * nbytes: f"that is slice n = {n}; a B slice is numbered by the sender's m = {m}",
                          iss.smem_offset: "that counts from the start of the tile area (A first); asked is "
                                           "the offset inside the B tile",
                          iss.slice.smem_offset // cfg.elem_bytes: "elements, not bytes"},
                note=f"{nbytes} B from rank {RECEIVER_RANK} land at the same offset in ranks {want_ranks}")


def _check_receivers(cfg, p, iss, ranks, want_ranks, a_ranks, RECEIVER_RANK):
    check_value(f"the ranks that receive rank {RECEIVER_RANK}'s B slice", ranks, want_ranks,
                rule="create_tma_multicast_mask<1>: B is shared along the cluster column, by every CTA with "
                     "the same n (every m); each receiver gets the slice at the same SMEM offset",
                mistakes={tuple(a_ranks): "those are the CTAs with the same m: the A receivers",
                          tuple(r for r in want_ranks if r != RECEIVER_RANK):
                              f"rank {RECEIVER_RANK} itself is missing: the sender needs the B tile too, so its "
                              "own bit is set and the slice lands in its own SMEM as well",
                          iss.mask: "that is the mask itself; list the ranks whose bits it sets"})


# -- Exercise: what each CTA's barrier expects --------------------------------------------------------
EXPECT_RULE = ("a CTA's mbarrier counts every byte that lands in it (complete_tx of each slice, whoever sent "
               "it): its whole A tile and its whole B tile, not the slices it issued itself")


def _config(cm, cn, tile_m, tile_n, tile_k=64):
    return MulticastConfig(cluster=(cm, cn), tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, swizzle="none")


def _expect_tx(cm, cn, tile_m, tile_n, tile_k):
    txs = {p.expect_tx for p in plan(_config(cm, cn, tile_m, tile_n, tile_k))}
    assert len(txs) == 1, txs    # every CTA of a cluster holds an A and a B tile of the same size
    return txs.pop()


def _explain_tx(args, got, expected):
    cm, cn, tile_m, tile_n, tile_k = args
    cfg = _config(*args)
    a, b = cfg.tile_bytes("A"), cfg.tile_bytes("B")
    known = [(cfg.slice_of("A", 0).nbytes + cfg.slice_of("B", 0).nbytes,
              "the bytes this CTA issues (its slices); the other slices of its tiles come from its row and column"),
             ((tile_m + tile_n) * tile_k, "elements, not bytes (2 bytes each)"),
             (a, "the A tile only; the same barrier counts the B tile"),
             (b, "the B tile only; the same barrier counts A"),
             ((a + b) * cm * cn, "the whole cluster's bytes; each CTA's barrier counts what lands in that CTA")]
    return matching_mistakes(known, got)


@course_cases("mc_expect_tx")
def check_expect_tx(fn, hidden=()) -> None:
    """`fn(cluster_m, cluster_n, tile_m, tile_n, tile_k)` -> expect_tx of each CTA (16-bit elements);
    `hidden`: more cases, course data."""
    # the first case tells the common mistakes apart (in a 2 x 2 cluster of 64 x 64 tiles several coincide)
    cases = [(2, 4, 256, 64, 64), (4, 4, 128, 256, 64)] + [tuple(c) for c in hidden]
    check_function_explained("expect_tx of each CTA", fn, cases, reference=_expect_tx, rule=EXPECT_RULE,
                             explain=_explain_tx, hint="element size: 2 bytes (float16)",
                             more="" if hidden else "other cluster shapes (1 x 1 to 8 x 1) and tile sizes")


# -- Exercise: L2 reads saved ------------------------------------------------------------------------
L2_RULE = ("without multicast every CTA reads its A and B tiles itself; with it every slice is read once, so "
           "each distinct tile is read once per cluster (M distinct A tiles, N distinct B tiles)")


def _l2_saved(cm, cn, tile_m, tile_n):
    return l2_read_bytes(_config(cm, cn, tile_m, tile_n))["saved"]


def _explain_l2(args, got, expected):
    b = l2_read_bytes(_config(*args))
    known = [(b["own"], "what the cluster reads without multicast; saved = that - what it reads with multicast"),
             (b["multicast"], "what the cluster reads with multicast; saved = without - with"),
             (b["ratio"], "the ratio without / with; asked are the bytes saved"),
             (b["saved"] // (args[0] * args[1]), "per CTA; asked is the whole cluster"),
             (b["saved"] // 2, "elements, not bytes (2 bytes each)")]
    cm, cn, tm, tn = args
    swapped = cm * cn * (tm + tn) * 128 - (cn * tm + cm * tn) * 128
    if swapped != expected:
        known.append((swapped, "the cluster sides swapped: the A tile (tile_m rows) is read once per cluster "
                               "row, cluster_m times; the B tile once per column, cluster_n times"))
    return matching_mistakes(known, got)


@course_cases("mc_l2_saved")
def check_l2_saved(fn, hidden=()) -> None:
    """`fn(cluster_m, cluster_n, tile_m, tile_n)` -> L2 bytes one cluster saves per round of tiles;
    `hidden`: more cases, course data."""
    # the second case is not square: swapping cluster_m and cluster_n changes its answer
    cases = [(2, 2, 128, 128), (2, 4, 64, 128), (4, 4, 128, 256)] + [tuple(c) for c in hidden]
    check_function_explained("L2 bytes saved per cluster", fn, cases, reference=_l2_saved, rule=L2_RULE,
                             explain=_explain_l2, hint="tiles of tile_k = 64 16-bit elements per row (128 B)",
                             more="" if hidden else "a 1 x 1 cluster (nothing saved) and other shapes")


# -- Exercise: the A mask, filled in inside the teaching kernel ---------------------------------------
TEACH_MASK_LINE = "const u16 a_mask = masks[2 * rank + 0];"
def _check_expr_text(expr) -> str:
    if unanswered(expr):
        raise NotYet("the A mask in the kernel: no answer yet — write the mask as a C expression.\n"
                     f"  rule: {EXPR_RULE}")
    if not isinstance(expr, str):
        raise NotYet(f"the A mask in the kernel: give the C expression as a string, got {type(expr).__name__}.\n"
                     f"  rule: {EXPR_RULE}")
    if any(s in expr for s in (";", "\n", "{", "}", "//", "/*")):
        raise NotYet("the A mask in the kernel: one expression on one line, without ';', braces or comments "
                     f"(it replaces the right-hand side of `const u16 a_mask = ...;`), got {expr!r}")
    return expr


def mask_kernel(expr: str):
    """teach_multicast.cu with the A mask computed in the kernel from `expr` instead of read from the table."""
    from ..lab import TeachingKernel
    return TeachingKernel(TEACH_KERNEL).replace(TEACH_MASK_LINE, f"const u16 a_mask = (u16)({expr});  // your A mask")


def _stuck_report(cfg, masks) -> str:
    """The model's barrier table for these masks, and the first CTA that receives an A slice of
    another cluster row (an A tile that is not its own)."""
    lines = [barrier_table(barrier_outcome(cfg, masks))]
    cm = cfg.cluster[0]
    for r in range(cfg.cluster_size):
        foreign = [s for s in range(cfg.cluster_size) if int(masks[s, 0]) >> r & 1 and s % cm != r % cm]
        if foreign:
            lines.append(f"CTA rank {r} (m = {r % cm}) receives A slices from rank(s) {foreign} of another row "
                         f"(m = {foreign[0] % cm}): those bytes belong to another A tile")
            break
    return "\n".join(lines)


# Every cluster shape the kernel compiles for (CLUSTER_X x CLUSTER_Y up to 16 CTAs): the expression is
# evaluated for each rank of each before any kernel runs (the family the graded shapes come from).
FAMILY_SHAPES = tuple((cm, cn) for cm in range(1, 17) for cn in range(1, 17) if cm * cn <= 16)


def _mask_miss(expr: str, shapes):
    """The first (shape, rank, got, expected, why) where `expr` gives another A mask than CuTe's rule,
    over `shapes`, else None; `why` names the mistake where one is recognised. ValueError from the
    evaluator passes through."""
    for cm, cn in shapes:
        for r in range(cm * cn):
            m, n = r % cm, r // cm
            got, want = eval_mask_expr(expr, (cm, cn), r), _a_mask(m, n, cm, cn)
            if got != want:
                why = _explain_mask((m, n, cm, cn), got, want) or (
                    f"compare bit by bit: which ranks need CTA ({m}, {n})'s A tile?")
                return (cm, cn), r, got, want, why
    return None


def _masks_over_family(expr: str) -> None:
    """NotYet, short and naming the mistake, for the first cluster shape of FAMILY_SHAPES (beyond the two
    the kernel runs) where `expr` gives another A mask than CuTe's rule: a formula right for 2 x 2 and
    2 x 4 can be wrong for 4 x 2. The expected mask is a separate line (a notebook shows it from the
    second miss on)."""
    try:
        miss = _mask_miss(expr, [s for s in FAMILY_SHAPES if s not in ((2, 2), (2, 4))])
    except ValueError as e:
        raise NotYet(f"the A mask in the kernel: {e}") from None
    if miss is None:
        return
    (cm, cn), r, got, want, why = miss
    raise NotYet(f"the A mask in the kernel, cluster {cm}x{cn} (a shape beyond the two the kernel runs here): "
                 f"for rank {r} (m = {r % cm}, n = {r // cm}) your expression gives 0x{got:04X}.\n"
                 f"  your value: {why}\n  rule: {MASK_RULE}\n  expected: 0x{want:04X}")


@course_cases("mc_teach_mask")
def check_teach_a_mask(expr, hidden=()) -> None:
    """`expr`, a C expression, replaces the table lookup of the A mask in teach_multicast.cu. The edited
    kernel is compiled for every cluster shape checked; on an sm_90+ GPU it runs in a worker process
    (a barrier that never completes comes back as MbarrierTimeout naming the CTA); elsewhere the model
    executes the same mask (barrier_outcome, masked_multicast_model) and names the CTA whose barrier never
    completes. Either way every CTA's tile area is compared with the model of the right masks.
    `hidden`: more cluster shapes (course data) after the 2 x 2 and 2 x 4 ones."""
    from .. import device
    from ..lab import CompileError
    expr = _check_expr_text(expr)
    mine = mask_kernel(expr)
    shapes = [(2, 2), (2, 4)] + [tuple(x) for x in hidden]
    try:
        shown_right = _mask_miss(expr, shapes[:2]) is None
    except ValueError:
        shown_right = False           # the loop below reports it, after the compiler has had its say
    if shown_right and not hidden:
        _masks_over_family(expr)      # before any "correct": right for the two shapes, wrong for another
    on_gpu = device.tier("multicast") in ("hardware", "emulated")   # the GPU, or the PTX emulator
    runs_on = "in the PTX emulator" if device.tier("multicast") == "emulated" else "on the GPU"
    for shape in shapes:
        what = f"the A mask in the kernel, cluster {shape[0]}x{shape[1]}"
        try:
            mine.compile("sm_90a", defines={"CLUSTER_X": shape[0], "CLUSTER_Y": shape[1]})
        except CompileError as e:
            raise NotYet(f"{what}: the edited kernel does not compile.\n{e}") from None
        cfg = teach_config(cluster=shape)
        masks = teach_masks(cfg)
        try:
            masks[:, 0] = [eval_mask_expr(expr, shape, r) for r in range(cfg.cluster_size)]
        except ValueError as e:
            raise NotYet(f"{what}: {e}") from None
        case = MulticastLoad(cfg, make_operands(cfg, seed=0))
        stray = [r for r in range(cfg.cluster_size) if int(masks[r, 0]) >> cfg.cluster_size]
        if stray:
            raise NotYet(f"{what}: rank {stray[0]}'s mask 0x{int(masks[stray[0], 0]):04X} names CTAs beyond the "
                         f"{cfg.cluster_size} of the cluster (ranks 0..{cfg.cluster_size - 1}).\n  rule: {MASK_RULE}")
        ranks = ", ".join(f"0x{int(a):X}" for a in masks[:, 0])
        miss = _mask_miss(expr, [shape])
        why = f"\n  your value: rank {miss[1]}'s mask 0x{miss[2]:04X}: {miss[4]}" if miss else ""
        if on_gpu:
            from ..runtime import MbarrierTimeout
            from ..sandbox import KernelFault, KernelHang
            from .case import run_teach
            try:
                got, source = run_teach(cfg, case.operands, masks, kernel=mine), f"your kernel {runs_on}"
            except (MbarrierTimeout, KernelFault, KernelHang) as e:
                raise NotYet(f"{what}: your A masks per rank are {ranks}; the kernel did not finish.{why}\n  {e}\n"
                             f"  the model, given the same masks:\n{_stuck_report(cfg, masks)}\n"
                             f"  rule: {MASK_RULE}") from None
        else:
            outcome = barrier_outcome(cfg, masks)
            stuck = [o for o in outcome if not o["completes"]]
            if stuck:
                o = stuck[0]
                raise NotYet(f"{what}: your A masks per rank are {ranks}. CTA rank {o['rank']}'s barrier never "
                             f"completes: it expects {o['expect_tx']} B and receives {o['arrived']} B, so its "
                             f"bounded wait gives up (MbarrierTimeout on a GPU).{why}\n{_stuck_report(cfg, masks)}\n"
                             f"  rule: {MASK_RULE}")
            got, source = masked_multicast_model(cfg, case.operands, masks), "the model, executing your mask"
        result = case.check(got, source=source)
        if not result.ok:
            report = str(result)
            if why:      # the mask's own mistake is named: the byte report's generic hint would mislead
                report = "\n".join(line for line in report.splitlines() if not line.lstrip().startswith("hint:"))
            raise NotYet(f"{what}: your A masks per rank are {ranks}; every barrier completes, but not with the "
                         f"right bytes.{why}\n{report}\n{_stuck_report(cfg, masks)}\n  rule: {MASK_RULE}")
        check_result(what, result, note=f"A masks {ranks}; every barrier completes; {result}")
    if not hidden:
        print(f"checked: the A mask in the kernel — your expression gives CuTe's A mask for every rank of every "
              f"cluster of up to 16 CTAs ({len(FAMILY_SHAPES)} shapes, evaluated as the kernel's u32 arithmetic); "
              "the kernel itself ran the two shapes above")
