"""The graded exercises of notebook 00 (orientation): the tiers, the hops of the data path, the bytes
of a tile, and an mbarrier's phases and parity.

Each check computes what is expected from bwlab's own tables and models (`bwlab.device.tiers_for`,
`bwlab.datapath.HOPS`, `bwlab.hw.dtypes`, `bwlab.hw.mbarrier.Mbarrier`), never from a literal, and
speaks through the generic checks of `bwlab.exercises`. `hidden=True` (the autograder's hidden tests)
checks more cases where the answer is a function; an answer that is one predicted value is checked again.

`check_function_explained` (the generic check in `bwlab.exercises`) is re-exported here for the
callers that import it from this module.
"""
from __future__ import annotations

from ..exercises import NotYet, check_function_explained, check_value, unanswered
from .dtypes import element_type
from .mbarrier import Mbarrier

__all__ = ["check_function_explained", "check_tier", "check_hops", "check_tile_bytes", "check_mbarrier_parity",
           "HOP_KEYS", "PARITY_STEPS", "run_parity_steps"]


def _entries_unanswered(answer: dict, keys) -> list:
    return [k for k in keys if unanswered(answer.get(k))]


# ---- Exercise 0.1: which tier runs what ----------------------------------------------------------
# (stage, compute capability) pairs: the H100 and B200 rows first (shown: a function that ignores cc
# cannot pass both), then every family and a few more.
def _tier_cases(hidden: bool):
    from ..device import FAMILIES, STAGES
    shown = [(s, cc) for cc in ((9, 0), (10, 0)) for s in STAGES]
    if not hidden:
        return shown
    ccs = [cc for _, cc in FAMILIES] + [(10, 3), (11, 0), (12, 1), (8, 6), (7, 5), (9, 0)]
    return shown + [(s, cc) for cc in ccs for s in STAGES]



def _tier_reference(stage, cc):
    from ..device import tiers_for
    return tiers_for(cc)[stage]


def _explain_tier(args, got, expected):
    from ..device import STAGES
    stage, cc = args
    needs = STAGES[stage][1]
    where = "no GPU" if cc is None else f"sm_{cc[0]}{cc[1]}"
    if got not in ("hardware", "hybrid", "model"):
        return "a tier is one of 'hardware', 'hybrid', 'model'"
    if expected == "model":
        return (f"{where} has no TMA (cp.async.bulk.tensor, mbarrier tx-counts need sm_90+), so no stage can "
                "load real bytes: every stage runs in the model tier")
    if needs == "tma":
        return (f"{STAGES[stage][0]} needs only TMA, which {where} has (sm_90+): it runs on hardware; "
                "hybrid is for the tcgen05 stages")
    if expected == "hybrid":
        return (f"{STAGES[stage][0]} needs tcgen05 and TMEM (datacenter Blackwell, sm_100/sm_103/sm_110); "
                f"{where} has TMA but not tcgen05, so the GPU loads the bytes and the model executes the rest: hybrid")
    return f"{where} has tcgen05 and TMEM, so {STAGES[stage][0]} runs on hardware"


def check_tier(fn, hidden: bool = False) -> None:
    """Exercise 0.1: `fn(stage, cc)` -> 'hardware' | 'hybrid' | 'model' (cc = (major, minor) or None)."""
    check_function_explained(
        "the tier of a stage", fn, _tier_cases(hidden), reference=_tier_reference, explain=_explain_tier,
        rule="hardware where the GPU has what the stage needs (TMA: sm_90+; tcgen05/TMEM: sm_100, sm_103, "
             "sm_110); hybrid for a tcgen05 stage on a GPU with TMA but no tcgen05; model without TMA",
        hint="bwlab.device.STAGES says what each stage needs; GpuInfo.has_tma / has_tcgen05 say who has it")


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


def check_hops(answer, hidden: bool = False) -> None:
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
                hint="the picture of the data path above: one arrow per hop, labelled with its instruction",
                note="each hop is one notebook: 01-02, 03, 04, 05, 05")


# ---- Exercise 0.3: the bytes of a tile -------------------------------------------------------------
# (rows, cols, element type): the first is the one the notebook shows.
def _tile_cases(hidden: bool):
    shown = [(128, 64, "bf16"), (128, 128, "e2m1")]     # e2m1: ElementType.bytes would say 1 per element
    if not hidden:
        return shown
    return shown + [(128, 256, "f32"), (64, 64, "f16"), (256, 128, "e4m3"), (128, 128, "e2m1"),
                    (128, 64, "e3m2"), (8, 16, "f64"), (128, 32, "tf32"), (128, 64, "bfloat16")]



def _tile_reference(rows, cols, dtype):
    return rows * cols * element_type(dtype).bits // 8


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


def check_tile_bytes(fn, hidden: bool = False) -> None:
    """Exercise 0.3: `fn(rows, cols, dtype)` -> bytes of a rows x cols tile of that element type."""
    check_function_explained(
        "bytes of a tile", fn, _tile_cases(hidden), reference=_tile_reference, explain=_explain_tile,
        rule="rows x cols x element bits / 8 (bwlab.hw.element_type(dtype).bits: bf16 16, f32 32, e4m3 8, "
             "e2m1 4)")


# ---- Exercise 0.4: an mbarrier's phase and parity ---------------------------------------------------
# Two loads through one barrier (init count 1): the first lands whole, the second half.
PARITY_STEPS = (("arrive_expect_tx", 4096), ("complete_tx", 4096),
                ("arrive_expect_tx", 4096), ("complete_tx", 2048))


def run_parity_steps(steps=PARITY_STEPS) -> Mbarrier:
    """The model's mbarrier (init count 1) after `steps`, each (method name, bytes)."""
    bar = Mbarrier(1)
    for method, nbytes in steps:
        getattr(bar, method)(nbytes)
    return bar


def _expected_parity():
    bar = run_parity_steps()
    return (bar.completed, bar.try_wait_parity(0), bar.try_wait_parity(1))


def _explain_parity(got):
    if not isinstance(got, tuple) or len(got) != 3:
        return "give three values: (phases completed, try_wait.parity(0), try_wait.parity(1))"
    phases, w0, w1 = got
    bar = run_parity_steps()
    if phases == bar.completed + 1:
        return (f"the second load's phase has not completed: only 2048 of its 4096 bytes have landed, "
                f"so tx-count = {bar.tx}, not 0")
    if phases == bar.completed - 1:
        return "the first load's arrival and its 4096 bytes brought both counts to zero: phase 0 completed"
    if (w0, w1) == (bar.try_wait_parity(1), bar.try_wait_parity(0)):
        return ("parities swapped: try_wait.parity(p) asks 'has the phase with parity p completed?'; phase 0 "
                "(parity 0) has, phase 1 (parity 1) is still waiting for bytes")
    if phases == bar.completed and w0 and w1:
        return (f"try_wait.parity(1) asks about phase 1, the second load's: its arrival came, but only 2048 of "
                f"its 4096 bytes have landed (tx-count {bar.tx}), so that phase has not completed and the wait "
                "returns False")
    if not w0 and not w1:
        return ("try_wait.parity(0) does not wait for the current phase: it asks about the last phase with "
                "parity 0, which completed, so it returns True at once")
    return None


def check_mbarrier_parity(answer, hidden: bool = False) -> None:
    """Exercise 0.4: (phases completed, try_wait.parity(0), try_wait.parity(1)) after PARITY_STEPS."""
    if isinstance(answer, list):
        answer = tuple(answer)
    if isinstance(answer, tuple) and all(unanswered(a) for a in answer):
        answer = None
    check_value("the mbarrier after two loads", answer, _expected_parity(), mistakes=_explain_parity,
                rule="a phase completes when pending arrivals and tx-count are both zero; try_wait.parity(p) "
                     "is True once the phase with parity p has completed (PTX ISA, mbarrier.test_wait/try_wait)",
                note="a wait with the stale parity returns at once while the next load is still landing: a "
                     "pipeline flips the parity it waits for each time round the same barrier")
