"""The checks of notebook 06's graded exercises (conventions: bwlab/exercises.py). Each expected value
comes from bwlab's models, never from a literal; a wrong answer raises `NotYet` naming the quantity,
the learner's value, the model's, the rule, and a recognised mistake.

* `check_hop_bytes(fn)`    — the bytes each hop moves for one tile, a function of the tile's shape and
  types (TMA boxes: bwlab.tma; MMA operand reads: the SMEM descriptors of bwlab.umma; TMEM cells:
  `d_tmem_layout`; the D tile: bwlab.epilogue.SmemTile);
* `check_k_step(step)`     — the kernel edit: the bytes the K loop advances the SMEM descriptors' start
  address by, substituted into cuda_src/full_flow_sm100.cu (and its Hopper twin) and run; see
  `kernel_edit.py`;
* `check_mma_count(fn)`    — tcgen05.mma and wgmma.mma_async instructions of one tile (bwlab.umma's
  shape tables: instruction K = 32 bytes, wgmma M = 64);
* `check_orderings(first_wrong, proxies)` — where a missing ordering point bites (bwlab.flow.ordering's
  worst-case traces) and which proxies the two SMEM hand-offs join;
* `check_l2_reads(fn)`     — L2 bytes per K tile of a grid without and with multicast (bwlab.flow.grid).
"""
from __future__ import annotations

import numbers

from ..epilogue import SmemTile
from ..exercises import NotYet, check_function, course_cases, unanswered
from ..hw.dtypes import element_type
from ..hw.swizzle import row_bytes
from ..tma import TensorMap
from ..umma import require_mma, d_tmem_layout, descriptor_addresses, elem_bytes, instr_k, tile_desc, wgmma_d_fragment
from .grid import TILE_K, FlowGrid
from .kernel_edit import check_k_step, edit_k_step, report, try_k_step  # noqa: F401  (the kernel-edit exercise)
from .model import flow_model
from .ordering import ORDERINGS, PROXIES, trace_without
from .problem import FlowProblem
from .trace import HOP_NAMES, hop_of

__all__ = ["HOP_KEYS", "tile_hop_bytes", "check_hop_bytes", "tile_mma_count", "check_mma_count",
           "first_wrong_hops", "check_orderings", "l2_reads_model", "check_l2_reads", "check_k_step",
           "try_k_step", "edit_k_step"]


def _first_failing(fn, cases, reference):
    """Index of the first case where `fn` differs from `reference` (or raises), or None."""
    for i, args in enumerate(cases):
        try:
            if fn(*args) != reference(*args):
                return i
        except Exception:
            return i
    return None


def _check_cases(name, fn, cases, reference, rule, diagnose=None, hint="", more=""):
    """`check_function`, and for the first differing case what `diagnose(args, got, want)` recognises."""
    cases = list(cases)
    if unanswered(fn) or not callable(fn):
        return check_function(name, fn, cases, reference=reference, rule=rule, hint=hint)
    i = _first_failing(fn, cases, reference)
    if i is None:
        return check_function(name, fn, cases, reference=reference, rule=rule, hint=hint, more=more)
    try:
        check_function(name, fn, cases[:i + 1], reference=reference, rule=rule, hint=hint)
    except NotYet as e:
        extra = []
        if diagnose is not None:
            try:
                extra = diagnose(cases[i], fn(*cases[i]), reference(*cases[i]))
            except Exception:
                extra = []
        raise NotYet("\n".join([str(e), *extra])) from None


# ---- 1. bytes per hop ----------------------------------------------------------------------------------

HOP_KEYS = ("tma_load", "mma", "tmem_ld", "tma_store")
HOP_ROUTES = {"tma_load": "GMEM -> SMEM", "mma": "SMEM -> tensor core -> TMEM", "tmem_ld": "TMEM -> registers",
              "tma_store": "registers -> SMEM -> GMEM"}


def tile_hop_bytes(m: int, n: int, k: int, ab: str = "f16", d: str = "f32") -> dict:
    """Bytes each hop moves for one m x n x k tile in one CTA: A (m x k) and B (n x k) of type `ab`,
    K-major in 128B-swizzled TMA boxes; an f32 accumulator in TMEM; D stored as `d`.

    tma_load  : what the TMA boxes write into SMEM (their transaction bytes, = expect_tx)
    mma       : what the K loop's tcgen05.mma read from SMEM through their descriptors
    tmem_ld   : what tcgen05.ld moves from TMEM into registers (every 32-bit cell of D)
    tma_store : the D tile the epilogue writes into SMEM and the TMA store copies to GMEM"""
    require_mma(ab, ab, "f32", m, n)
    eb = elem_bytes(ab)
    box_k = row_bytes("128B") // eb              # one 128-byte swizzle row of K per box
    if k % box_k:
        raise ValueError(f"K = {k} must be a whole number of 128-byte rows ({box_k} {ab}) for 128B boxes")
    tmap_type = "u8" if element_type(ab).bits == 8 else ab     # 8-bit floats travel as UINT8 (bwlab.hw.dtypes)
    load = sum(TensorMap(tmap_type, (k, rows), (box_k, rows), swizzle="128B").tx_bytes * (k // box_k)
               for rows in (m, n))
    reads = sum(descriptor_addresses(tile_desc("K", "128B", ab, (rows, k), kb), "K", ab, rows).size * eb
                for kb in range(k // instr_k(ab)) for rows in (m, n))
    cells = d_tmem_layout(m, n).lane.size * element_type("f32").bytes
    return {"tma_load": load, "mma": reads, "tmem_ld": cells, "tma_store": SmemTile(m, n, d, "128B").nbytes}


HOP_BYTES_RULE = ("return {'tma_load': ..., 'mma': ..., 'tmem_ld': ..., 'tma_store': ...} in bytes. The TMA "
                  "load writes A (m x k) and B (n x k) into SMEM; the K loop's tcgen05.mma read each operand "
                  "slice once, through their descriptors; TMEM holds the f32 accumulator, one 32-bit cell "
                  "per element of D, and tcgen05.ld moves every cell; the epilogue converts to D's type in "
                  "registers, then st.shared and the TMA store move the D tile (elements x bytes of d)")


def _diagnose_hop_bytes(args, got, want):
    m, n, k, ab, d = args
    if got is None:
        return []
    if not isinstance(got, dict):
        return [f"  your function returned a {type(got).__name__}; return a dict with the keys {list(HOP_KEYS)}"]
    missing = [h for h in HOP_KEYS if h not in got]
    if missing:
        return [f"  keys missing: {missing} (the keys are the trace's hop names {list(HOP_KEYS)})"]
    eb, db = elem_bytes(ab), element_type(d).bytes
    known = {   # (value, what it means): several may match one value (m = n makes A alone look like elements)
        "tma_load": [((m + n) * k, "elements, not bytes"), (m * k * eb, "only A: the load brings A and B")],
        "mma": [((m + n) * k, "elements, not bytes"),
                (m * n * 4, "the bytes the MMAs write into TMEM; the question is what they read from SMEM"),
                (m * k * eb, "only A: every MMA reads a slice of A and one of B")],
        "tmem_ld": [(m * n, "elements, not bytes"),
                    (m * n * db, f"D's type in GMEM ({d}); TMEM holds the f32 accumulator, one 32-bit cell per "
                                 "element: the conversion happens after tcgen05.ld")],
        "tma_store": [(m * n, "elements, not bytes"),
                      (m * n * 4, f"the f32 accumulator; D is converted to {d} in registers before st.shared")],
    }
    out = []
    for h in HOP_KEYS:
        if got[h] != want[h]:
            why = [r for v, r in known[h] if v == got[h]]
            more = "more" if isinstance(got[h], (int, float)) and got[h] > want[h] else "fewer"
            out.append(f"  {h} ({HOP_ROUTES[h]}): you have {got[h]}, {more} bytes than the rule gives"
                       + (f" — {'; or '.join(why)}" if why else ""))
    return out


@course_cases("flow_hop_bytes")
def check_hop_bytes(fn, hidden=()) -> None:
    """fn(m, n, k, ab, d) -> {hop: bytes}, on the flow's tile and one more; `hidden`: other tiles and
    types, course data."""
    p = FlowProblem()
    cases = [(p.M, p.N, p.K, "f16", "f32"), (128, 256, 64, "bf16", "f16")] + [tuple(c) for c in hidden]
    _check_cases("bytes per hop of one tile", fn, cases, tile_hop_bytes, HOP_BYTES_RULE, _diagnose_hop_bytes,
                 more="" if hidden else "other tile shapes and the tf32 and e4m3 types")


# ---- 2. MMA instructions per tile ------------------------------------------------------------------------

def tile_mma_count(m: int, k: int, ab: str = "f16") -> tuple:
    """(tcgen05.mma, wgmma.mma_async) instructions for one m x k tile of A (any legal N <= 256): one
    tcgen05.mma (cta_group::1, M = 64 or 128) covers every row for one instruction-K slice of 32
    bytes; one wgmma covers 64 rows of it."""
    require_mma(ab, ab, "f32", m, 128)
    ki = instr_k(ab)
    if k % ki:
        raise ValueError(f"K = {k} must be a multiple of one instruction's K ({ki} {ab})")
    wgmma_rows = wgmma_d_fragment(8)[0].shape[0]
    return k // ki, (m // wgmma_rows) * (k // ki)


MMA_COUNT_RULE = ("return (tcgen05.mma count, wgmma.mma_async count). Every dense MMA instruction reads "
                  "32 bytes of K from each row (K = 16 for f16/bf16, 8 for tf32, 32 for 8-bit types: CuTe's "
                  "instruction K); one tcgen05.mma.cta_group::1 covers M = 64 or 128 rows and N <= 256, "
                  "one wgmma.mma_async covers M = 64 rows (m64nNk..)")


def _diagnose_mma_count(args, got, want):
    """What a wrong (tcgen05.mma, wgmma) pair gets wrong: the K count (elements per instruction), the
    factor M / 64 of wgmma, or threads counted instead of instructions; each part judged on its own."""
    m, k, ab = args
    if got is None:
        return []
    if not isinstance(got, tuple) or len(got) != 2:
        return ["  return a pair: (tcgen05.mma instructions, wgmma.mma_async instructions)"]
    tc, wg = got
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in got):
        return ["  return two ints: counts of instructions"]
    ki, rows = instr_k(ab), m // 64

    def times(g, w):
        return g // w if w and g % w == 0 else 0

    if 128 in (times(tc, want[0]), times(wg, want[1])):
        return ["  count instructions, not the threads that execute them"]
    notes = []
    if tc != want[0]:
        if tc == want[0] * rows and rows > 1:
            notes.append("  one tcgen05.mma covers all M rows of the tile (M = 64 or 128): no factor M / 64 for it")
        elif tc > 0 and k % tc == 0:
            notes.append(f"  your tcgen05.mma count steps K by {k // tc} elements; an instruction reads 32 bytes "
                         f"of K: {ki} elements of {ab}" + (" (16 holds for 2-byte types only)" if k // tc == 16 else ""))
    if wg != want[1]:
        if tc > 0 and wg == tc * rows:
            notes.append(f"  your wgmma count is M / 64 = {rows} times your tcgen05.mma count, which is right: "
                         "only the K count differs")
        elif wg == tc and rows > 1:
            notes.append("  wgmma is m64: a tile of more rows takes one instruction per 64 rows and K step")
    return notes


@course_cases("flow_mma_count")
def check_mma_count(fn, hidden=()) -> None:
    """fn(m, k, ab) -> (tcgen05.mma, wgmma.mma_async) count for one tile; `hidden`: more, course data."""
    cases = [(128, 64, "f16"), (64, 128, "bf16"), (128, 32, "tf32")]    # tf32: K / 16 is not the rule
    cases += [tuple(c) for c in hidden]
    _check_cases("MMA instructions of one tile", fn, cases, tile_mma_count, MMA_COUNT_RULE, _diagnose_mma_count,
                 more="" if hidden else "e4m3 and other tile shapes")


# ---- 3. ordering points ------------------------------------------------------------------------------------

def first_wrong_hops(seed: int = 0) -> dict:
    """{ordering point: the first hop whose bytes differ when it is missing}, from the worst-case traces."""
    p = FlowProblem(seed)
    return {o.name: _worst_case(p, o.name)[0] for o in ORDERINGS}


def _answered(x) -> bool:
    return isinstance(x, dict) and any(not unanswered(v) and v != (None, None) for v in x.values())


ORDERING_RULE = ("each ordering point makes one hop's writes visible to the next hop's reads; without it that "
                 "reader may see the memory as it was before (the race's worst case: none of the new bytes). "
                 "Name the first hop of the trace that reads stale data (the hop whose bytes are the first to go "
                 "wrong): " + ", ".join(HOP_NAMES))
PROXY_RULE = ("give (writer's proxy, reader's proxy) of the two shared-memory hand-offs, each 'generic' (the "
              "threads' ld/st.shared) or 'async'; a proxy fence (fence.proxy.async) is needed where they differ "
              "(PTX ISA 9.7.9.25.2 'Async proxy')")
PROXY_FACTS = ("the TMA engine reads and writes SMEM through the async proxy (cp.async.bulk.tensor), and so do "
               "tcgen05.mma's operand reads; st.shared is the generic proxy")


def _worst_case(p: FlowProblem, name: str):
    """(hop, CheckResult) of the first difference of the trip without ordering point `name`."""
    return flow_model(p).compare(trace_without(p, name), f"without {name}, worst case").first_difference()


def _hop_lines(first_wrong, want) -> list:
    """What is wrong with each ordering point's answer, without naming the hop the model finds (the
    learner predicts it)."""
    lines = []
    for o in ORDERINGS:
        got = first_wrong.get(o.name)
        if got == want[o.name]:
            continue
        text = f"  without {o.name!r}: you have {got!r}"
        if got == o.writer:
            text += (f" — the bytes {o.writer} leaves are right (its arrays agree): what goes wrong is a read "
                     f"of what it wrote ({o.memory})")
        elif got in HOP_NAMES and HOP_NAMES.index(got) > HOP_NAMES.index(want[o.name]):
            text += f" — {got} is wrong too, but later: the stale bytes enter at an earlier hop"
        elif got in HOP_NAMES and not hop_of(got).keys:
            text += f" — {got} moves no bytes of its own; name the hop that takes the stale bytes in"
        elif got in HOP_NAMES and HOP_NAMES.index(got) < HOP_NAMES.index(want[o.name]):
            text += f" — the bytes {got} leaves are right: the trace goes wrong at a later hop"
        elif got not in HOP_NAMES:
            text += f" — name a hop of the trace ({', '.join(HOP_NAMES)})"
        else:
            text += " — not the first hop whose bytes go wrong"
        lines.append(text)
    return lines


def _proxy_right(proxies, o) -> bool:
    g = (proxies or {}).get(o.name)
    return (tuple(g) if isinstance(g, (list, tuple)) else g) == o.proxies


def _proxy_lines(proxies) -> list:
    got_p = {k: (tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in (proxies or {}).items()}
    lines = []
    for o in ORDERINGS:
        if not o.proxies:
            continue
        g = got_p.get(o.name)
        if g == o.proxies:
            continue
        text = f"  proxies of {o.name!r} (writer, reader): you have {g!r}"
        if g == tuple(reversed(o.proxies)):
            text += " — swapped: the first is the proxy that writes"
        elif o.name == "wait on full" and g == ("async", "generic"):
            text += " — no thread reads A or B: tcgen05.mma reads them, through the async proxy"
        elif isinstance(g, tuple) and any(x not in PROXIES for x in g):
            text += f" — each is one of {PROXIES}"
        lines.append(text)
    return lines


@course_cases("flow_orderings")
def check_orderings(first_wrong, proxies, hidden=()) -> None:
    """first_wrong: {ordering point: hop name}; proxies: {'wait on full': (writer, reader),
    'fence.proxy.async': (writer, reader)}, each 'generic' or 'async'. `hidden` (course data): the
    seeds of other values whose traces the model compares too (the answer holds for any A and B)."""
    name = "where a missing ordering point bites"
    if not _answered(first_wrong):
        raise NotYet(f"{name}: no answer yet — fill in first_wrong.\n  rule: {ORDERING_RULE}")
    if not _answered(proxies):
        raise NotYet(f"{name}: no answer yet for proxies.\n  rule: {PROXY_RULE}")
    want = first_wrong_hops(0)
    for seed in hidden:             # other A and B: the first hop that differs must be the same
        other = first_wrong_hops(int(seed))
        if _hop_lines(first_wrong, other) and not _hop_lines(first_wrong, want):
            want = other
            break
    lines = _hop_lines(first_wrong, want)
    # one rule line (shown from the second miss on): the general rule, then each missed point's own
    rules = []
    if lines:
        rules.append(ORDERING_RULE)
        rules += [f"{o.name} ({o.ptx}): {o.rule}" for o in ORDERINGS if first_wrong.get(o.name) != want[o.name]]
    plines = _proxy_lines(proxies)
    if plines:
        rules.append(f"{PROXY_RULE}; {PROXY_FACTS}")
    lines += plines
    if lines:
        lines.append("  rule: " + ". ".join(rules))
        right = sum(first_wrong.get(o.name) == want[o.name] for o in ORDERINGS)
        right += sum(_proxy_right(proxies, o) for o in ORDERINGS if o.proxies)
        total = len(ORDERINGS) + sum(1 for o in ORDERINGS if o.proxies)
        raise NotYet("\n".join([f"{name}: not yet — {right} of {total} answers right (the points need all "
                                 f"{total}).", *lines]))
    fenced = [o.name for o in ORDERINGS if o.proxies and o.proxies[0] != o.proxies[1]]
    print(f"correct: {name} — each missing point spoils the hop that reads what the one before wrote; "
          f"only {', '.join(fenced)} joins two proxies")


# ---- 4. L2 reads with and without multicast ----------------------------------------------------------------

def l2_reads_model(M: int, N: int, cluster_m: int, cluster_n: int) -> tuple:
    """(without multicast, with multicast) bytes the TMA engines read from L2 per K tile for the grid."""
    return (FlowGrid(M, N, TILE_K, "1sm").l2_reads_per_k_tile(),
            FlowGrid(M, N, TILE_K, "multicast", (cluster_m, cluster_n)).l2_reads_per_k_tile())


L2_RULE = ("return (without multicast, with multicast) in bytes per K tile of 64 (f16) for the whole grid of "
           "128 x 128 tiles. Without multicast every CTA reads its A tile and its B tile. With multicast a "
           "cluster of cluster_m x cluster_n CTAs reads each A tile it needs once (cluster_n CTAs share it) "
           "and each B tile once (cluster_m CTAs share it)")


def _diagnose_l2(args, got, want):
    M, N, cm, cn = args
    if got is None:
        return []
    if not isinstance(got, tuple) or len(got) != 2:
        return ["  return a pair: (without multicast, with multicast)"]
    without, with_mc = want
    notes = []
    if got[0] != without and got[0] == with_mc:
        notes.append("  without multicast the cluster changes nothing: every CTA still reads its own tiles")
    if got[0] * 2 == without or got[1] * 2 == with_mc:
        notes.append("  elements, not bytes: an f16 element is 2 bytes")
    if got[1] != with_mc and cm * cn > 1 and got[1] * cm * cn == without:
        notes.append(f"  dividing by the cluster size ({cm * cn}) assumes every CTA of the cluster needs the same "
                     "tiles; only a cluster row shares A and only a column shares B")
    if got[1] != with_mc and got[1] in {without // cm, without // cn}:
        notes.append("  one factor for both operands: A is shared by the cluster_n CTAs of a row, B by the "
                     "cluster_m CTAs of a column")
    return notes


@course_cases("flow_l2_reads")
def check_l2_reads(fn, hidden=()) -> None:
    """fn(M, N, cluster_m, cluster_n) -> (without, with multicast) L2 bytes per K tile; `hidden`: more,
    course data."""
    cases = [(512, 1024, 2, 4), (512, 1024, 1, 1)] + [tuple(c) for c in hidden]
    _check_cases("L2 reads per K tile", fn, cases, l2_reads_model, L2_RULE, _diagnose_l2,
                 more="" if hidden else "other grids and cluster shapes")
