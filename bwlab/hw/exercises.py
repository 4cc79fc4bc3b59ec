"""The graded exercises of notebook 00 (orientation): the tiers, the hops of the data path, the bytes
of a tile, and an mbarrier's phases and parity.

Each check computes what is expected for the cases it shows from bwlab's own tables and models
(`bwlab.device.tiers_for`, `bwlab.datapath.HOPS`, `bwlab.hw.dtypes`, `bwlab.hw.mbarrier.Mbarrier`), and
speaks through the generic checks of `bwlab.exercises`. The graded cell's hidden part passes `hidden=`
what the course data (`bwlab.exercises.hidden_cases`, not in this package) gives: for 0.1 and 0.3,
(arguments, expected) pairs beyond the shown ones. 0.4's numbers are the student's own
(`bwlab.variants`): the notebook, this check and the grader all use `parity_numbers()`.

`check_function_explained` (the generic check in `bwlab.exercises`) is re-exported here for the
callers that import it from this module.
"""
from __future__ import annotations

from ..exercises import NotYet, check_function_explained, check_value, course_cases, unanswered
from .dtypes import element_type
from .mbarrier import Mbarrier

__all__ = ["check_function_explained", "check_tier", "check_hops", "check_tile_bytes", "check_mbarrier_parity",
           "HOP_KEYS", "PARITY_VARIANTS", "parity_numbers", "parity_steps", "parity_text", "run_parity_steps"]


def _entries_unanswered(answer: dict, keys) -> list:
    return [k for k in keys if unanswered(answer.get(k))]


# ---- Exercise 0.1: which tier runs what ----------------------------------------------------------
# (stage, compute capability) pairs shown: an H100, a B200 and an RTX 50 (sm_120: Blackwell, but no
# tcgen05), so that a function that ignores cc, or that takes "Blackwell" for "has tcgen05", fails here.
# The hidden cases (the course data) are (args, tier) pairs for every GPU family and more.
TIER_SHOWN_CCS = ((9, 0), (10, 0), (12, 0))


def _tier_table(hidden) -> dict:
    from ..device import STAGES, tiers_for
    table = {(s, cc): tiers_for(cc)[s] for cc in TIER_SHOWN_CCS for s in STAGES}
    table.update({tuple(args): want for args, want in hidden})
    return table


def _explain_tier(args, got, expected):
    from ..device import STAGES
    stage, cc = args
    needs = STAGES[stage][1]
    where = "no GPU" if cc is None else f"sm_{cc[0]}{cc[1]}"
    if got not in ("hardware", "hybrid", "emulated"):
        return ("a tier here is one of 'hardware', 'hybrid', 'emulated' (the model tier is only what "
                "BWLAB_BACKEND=model asks for)" if got == "model" else
                "a tier is one of 'hardware', 'hybrid', 'emulated'")
    if expected == "emulated":
        return (f"{where} has no TMA (cp.async.bulk.tensor, mbarrier tx-counts need sm_90+), so no GPU runs "
                "any stage's kernel here: what runs it then, and where?")
    if needs == "tma":
        return (f"{STAGES[stage][0]} needs only TMA, which {where} has (sm_90+): it runs on hardware; "
                "hybrid is for the tcgen05 stages")
    if expected == "hybrid":
        return (f"{STAGES[stage][0]} needs tcgen05 and TMEM (datacenter Blackwell, sm_100/sm_103/sm_110); "
                f"{where} has TMA but not tcgen05, so the GPU loads the bytes and the model executes the rest: hybrid")
    return f"{where} has tcgen05 and TMEM, so {STAGES[stage][0]} runs on hardware"


@course_cases("orient_tier")
def check_tier(fn, hidden=()) -> None:
    """Exercise 0.1: `fn(stage, cc)` -> 'hardware' | 'hybrid' | 'emulated' (cc = (major, minor) or None).
    `hidden`: the course data's ((stage, cc), tier) pairs, tried after the shown ones."""
    table = _tier_table(hidden)
    check_function_explained(
        "the tier of a stage", fn, list(table), reference=lambda *args: table[args], explain=_explain_tier,
        rule="hardware where the GPU has what the stage needs (TMA: sm_90+; tcgen05/TMEM: sm_100, sm_103, "
             "sm_110); hybrid for a tcgen05 stage on a GPU with TMA but no tcgen05; emulated (the kernel's PTX "
             "in bwlab's emulator) without a GPU with TMA",
        hint="bwlab.device.STAGES says what each stage needs; GpuInfo.has_tma / has_tcgen05 say who has it",
        more="" if hidden else "every GPU family (sm_70 to sm_121, sm_103, sm_110, no GPU)")


# ---- Exercise 0.2: the hops of the data path -------------------------------------------------------
# The learner's keys: a word that names each hop's instruction in bwlab.datapath.HOPS.
HOP_KEYS = ("TMA load", "tcgen05.mma", "tcgen05.ld", "st.shared", "TMA store")


def _expected_hops() -> dict:
    from ..datapath import HOPS
    out = {}
    for key in HOP_KEYS:
        hops = [h for h in HOPS if key in h.instruction]
        if len(hops) != 1:
            raise RuntimeError(f"bwlab.datapath.HOPS names {key!r} in {len(hops)} hops, expected 1")
        out[key] = (hops[0].src, hops[0].dst)
    return out


def _explain_hops(got):
    expected = _expected_hops()
    if not isinstance(got, dict):
        return "give a dict {instruction: (from, to)}"
    missing = [k for k in HOP_KEYS if k not in got]
    if missing:
        return f"missing key(s) {missing}; the keys are {list(HOP_KEYS)}"
    for k in HOP_KEYS:
        g, e = tuple(got[k]) if isinstance(got[k], (tuple, list)) else got[k], expected[k]
        if g == e:
            continue
        if g == e[::-1]:
            return (f"{k}: those are the two memories it connects, but the other way round: which one does "
                    f"{k} read, which one does it write?")
        if k == "tcgen05.mma" and isinstance(g, tuple) and len(g) == 2 and g[1] == "RMEM":
            return ("tcgen05.mma: that is where Hopper's wgmma accumulates (registers); Blackwell's tcgen05.mma "
                    "keeps its accumulator elsewhere")
        return f"{k}: {g} is not the hop it makes: which memory does {k} read, which one does it write?"
    return None


@course_cases("orient_hops")
def check_hops(answer, hidden=()) -> None:
    """Exercise 0.2: {instruction: (from memory, to memory)} for each hop of the data path."""
    if isinstance(answer, dict):
        open_ = _entries_unanswered(answer, HOP_KEYS)
        if len(open_) == len(HOP_KEYS):
            answer = None
        elif open_:
            raise NotYet(f"the hops of the data path: no answer yet for {open_}")
        else:
            answer = {k: tuple(v) if isinstance(v, list) else v for k, v in answer.items()}
    check_value("the hops of the data path", answer, _expected_hops(), mistakes=_explain_hops,
                rule="a TMA copies a tile between global and shared memory; an MMA reads its operands from shared "
                     "memory and, on Blackwell, accumulates in Tensor Memory; tcgen05.ld brings Tensor Memory "
                     "into the threads' registers; st.shared writes registers to shared memory. The memories "
                     "are 'GMEM', 'SMEM', 'TMEM', 'RMEM'",
                hint="the section 'The data path' above names each hop's memories; the figure after this check draws "
                     "them, one arrow per hop",
                note="each hop is one notebook: 01-02, 03, 04, 05, 05")


# ---- Exercise 0.3: the bytes of a tile -------------------------------------------------------------
# (rows, cols, element type) shown: the first is the one the notebook describes; e2m1 because
# ElementType.bytes would say 1 per element. The hidden cases (course data) are (args, bytes) pairs.
TILE_SHOWN = ((128, 64, "bf16"), (128, 128, "e2m1"))


def _tile_table(hidden) -> dict:
    table = {args: args[0] * args[1] * element_type(args[2]).bits // 8 for args in TILE_SHOWN}
    table.update({tuple(args): want for args, want in hidden})
    return table


def _explain_tile(args, got, expected):
    rows, cols, dtype = args
    t = element_type(dtype)
    if t.bits < 8 and got == rows * cols * t.bytes:
        return (f"{t.name} is {t.bits} bits wide, so several elements share a byte: count bits "
                f"(ElementType.bits), not ElementType.bytes, which reports 1 for sub-byte types")
    if got == rows * cols:
        return "that is the number of elements, not of bytes"
    if got == rows * cols * t.bits:
        return "that is the number of bits: divide by 8"
    return None


@course_cases("orient_tile_bytes")
def check_tile_bytes(fn, hidden=()) -> None:
    """Exercise 0.3: `fn(rows, cols, dtype)` -> bytes of a rows x cols tile of that element type.
    `hidden`: the course data's ((rows, cols, dtype), bytes) pairs."""
    table = _tile_table(hidden)
    check_function_explained(
        "bytes of a tile", fn, list(table), reference=lambda *args: table[args], explain=_explain_tile,
        rule="rows x cols x element bits / 8 (bwlab.hw.element_type(dtype).bits: bf16 16, f32 32, e4m3 8, "
             "e2m1 4)", more="" if hidden else "other shapes and types (f32, f16, e4m3, e3m2, f64, tf32)")


# ---- Exercise 0.4: an mbarrier's phase and parity ---------------------------------------------------
# Two loads through one barrier: the first lands whole, the second in part or whole. Each student's
# numbers (bwlab.variants): the init count (1, or 2: a second arrival is still owed), the bytes of each
# load, and how much of the second has landed. The first is the self-study variant, the text's.
PARITY_VARIANTS = ((1, 4096, 4096, 2048),) + tuple(
    (count, b1, b2, landed) for count in (1, 2) for b1 in (2048, 4096, 8192) for b2 in (4096, 8192, 16384)
    for landed in (b2 // 4, b2 // 2, 3 * b2 // 4, b2) if (count, b1, b2, landed) != (1, 4096, 4096, 2048))


def parity_numbers(token: str | None = None) -> tuple:
    """(init count, bytes of load 0, bytes of load 1, bytes of load 1 landed so far) for this student."""
    from .. import variants
    return variants.pick("orient_parity", PARITY_VARIANTS, token)


def parity_steps(token: str | None = None) -> tuple[int, tuple]:
    """(init count, steps): the mbarrier's init count and its four steps, each (method name, bytes)."""
    count, b1, b2, landed = parity_numbers(token)
    return count, (("arrive_expect_tx", b1), ("complete_tx", b1), ("arrive_expect_tx", b2), ("complete_tx", landed))


def parity_text(token: str | None = None) -> str:
    """The student's numbers as the code they stand for (one line)."""
    count, steps = parity_steps(token)
    return f"bar = Mbarrier({count}); " + "; ".join(f"bar.{m}({n})" for m, n in steps)


def run_parity_steps(steps=None, count: int | None = None) -> Mbarrier:
    """The model's mbarrier after `steps` (each (method name, bytes)), init count `count`; by default
    this student's four steps and count (parity_steps)."""
    mine_count, mine = parity_steps()
    bar = Mbarrier(mine_count if count is None else count)
    for method, nbytes in (mine if steps is None else steps):
        getattr(bar, method)(nbytes)
    return bar


def _explain_parity(got):
    if not isinstance(got, tuple) or len(got) != 3:
        return "give three values: (phases completed, try_wait.parity(0), try_wait.parity(1))"
    phases, w0, w1 = got
    count, b1, b2, landed = parity_numbers()
    bar = run_parity_steps()
    if phases == bar.completed + 1 and landed < b2:
        return (f"the second load's phase has not completed: only {landed} of its {b2} bytes have landed, "
                f"so tx-count = {bar.tx}, not 0")
    if phases == bar.completed + 1 and count == 2:
        return ("the barrier was initialised with count 2: a phase needs two arrivals, and each load's "
                "arrive.expect_tx is one")
    if phases == bar.completed - 1 and count == 1:
        return f"the first load's arrival and its {b1} bytes brought both counts to zero: phase 0 completed"
    if phases == bar.completed - 1:
        return "two arrivals (one per load) and every announced byte landed: phase 0 completed"
    if (w0, w1) == (bar.try_wait_parity(1), bar.try_wait_parity(0)):
        return ("parities swapped: try_wait.parity(p) asks 'has the last phase with parity p completed?'; "
                "count the phases completed, then see which parity the current (open) phase has")
    if not w0 and not w1:
        return (f"try_wait.parity(p) does not wait for the current phase: it asks about the last phase with "
                f"parity p; phase {bar.completed - 1 if bar.completed else -1} (parity "
                f"{(bar.completed - 1) % 2}) has completed"
                + ("" if bar.completed else " — on a fresh barrier the phase 'before' phase 0 counts as completed")
                + ", so that wait returns True at once")
    if w0 and w1:
        open_ = bar.completed
        return (f"try_wait.parity({open_ % 2}) asks about phase {open_}, which is still open "
                + (f"(only {landed} of its {b2} bytes have landed, tx-count {bar.tx})" if bar.tx else
                   f"(it still waits for {bar.pending} arrival{'s' if bar.pending != 1 else ''})")
                + ": it has not completed, so that wait returns False")
    return None


@course_cases("orient_parity")
def check_mbarrier_parity(answer, hidden=()) -> None:
    """Exercise 0.4: (phases completed, try_wait.parity(0), try_wait.parity(1)) after this student's
    parity_steps(). `hidden` is unused: the graded version checks the same numbers."""
    if isinstance(answer, list):
        answer = tuple(answer)
    if isinstance(answer, tuple) and all(unanswered(a) for a in answer):
        answer = None
    bar = run_parity_steps()
    check_value("the mbarrier after two loads", answer,
                (bar.completed, bar.try_wait_parity(0), bar.try_wait_parity(1)), mistakes=_explain_parity,
                rule="a phase completes when pending arrivals and tx-count are both zero; try_wait.parity(p) "
                     "is True once the phase with parity p has completed (PTX ISA, mbarrier.test_wait/try_wait)",
                note="a wait with the stale parity returns at once while the next load is still landing: a "
                     "pipeline flips the parity it waits for each time round the same barrier")
