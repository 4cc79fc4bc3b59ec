"""The graded exercises of notebook 01 (the TMA load): which rule a tensor map breaks, the transaction bytes
of a box, expect_tx filled into the teaching kernel, an element's SMEM offset under the 128B swizzle, the fill.

Every expected value comes from the stage's own model: `TensorMap` and its rule table
(`bwlab.tma.rules.RULES`), `tma_load_writes` (where each byte lands, PTX ISA 5.5.7 swizzle),
`box_targets` (which box elements are inside the tensor) and `bwlab.hw.mbarrier.Mbarrier` (the
handshake). The graded cell's hidden part passes `hidden=` the course data's cases
(`bwlab.exercises.hidden_cases`; not in this package) where the answer is a function; a predicted value
is checked again, on the student's own numbers (`bwlab.variants`) for 1.1 (`rule_candidates`) and 1.3
(`edit_box`). The kernel edit is compiled (NVRTC, no GPU needed) and, where the TMA stage runs on
hardware, run in a worker process (`run_teach(..., kernel=mine)` -> `bwlab.lab.run_edited`); everywhere
the model runs the learner's value.
"""
from __future__ import annotations

import random
from functools import lru_cache

import numpy as np

from ..exercise_families import legal_box
from ..exercises import NotYet, check_function_explained, check_value, course_cases, unanswered
from ..hw.mbarrier import Mbarrier, MbarrierError
from ..hw.swizzle import SWIZZLES
from .model import box_targets, require_coords, tma_load_writes
from .rules import RULES_BY_NAME
from .tensor_map import TensorMap, TensorMapError

__all__ = ["RULE_CANDIDATES", "RULE_VARIANTS", "rule_candidates", "check_broken_rule", "check_tx_bytes", "EDIT_TMAP",
           "EDIT_COORDS", "EDIT_LINE", "EDIT_BOXES", "edit_box", "edit_tmap", "edit_kernel", "tx_story",
           "check_expect_tx_edit", "check_swizzle_offset", "check_oob_fill"]


# ---- Exercise 1.1: which rule does a tensor map break? ----------------------------------------------
RULE_CANDIDATES = {   # the self-study maps
    "a": dict(dtype="float16", global_shape=(64, 32), box_shape=(64, 8), swizzle="64B"),
    "b": dict(dtype="bfloat16", global_shape=(80, 48), box_shape=(24, 16)),
    "c": dict(dtype="float32", global_shape=(80, 48), box_shape=(6, 8)),
    "d": dict(dtype="uint8", global_shape=(100, 50), box_shape=(32, 8)),
    "e": dict(dtype="bfloat16", global_shape=(80, 300), box_shape=(64, 300)),
    "f": dict(dtype="float32", global_shape=(64, 32), box_shape=(32, 8), swizzle="128B"),
    "g": dict(dtype="int8", global_shape=(64, 64), box_shape=(64, 8), oob_fill="nan")}
LEGAL = "legal"


def _rule_set(rng) -> dict:
    """Seven tensor maps, each legal or breaking exactly one rule (RULE_CANDIDATES' mix: two legal, one of
    each of five rules), in a random order, with random types, shapes and swizzles."""
    types = (("float16", 2), ("bfloat16", 2), ("float32", 4), ("uint8", 1), ("uint16", 2), ("float64", 8))
    pick = rng.choice

    def swizzled(verdict):                 # a box row of the swizzle span exactly, or of twice the span
        (dtype, elem), span = pick(types), pick((32, 64, 128))
        inner = span // elem * (2 if verdict == "swizzle-span" else 1)
        return dict(dtype=dtype, global_shape=(inner * pick((1, 2, 4)), pick((32, 48, 64, 96))),
                    box_shape=(inner, pick((4, 8, 16))), swizzle=f"{span}B")

    def plain(verdict):                    # rows of whole 16-byte chunks, but where the verdict says not
        dtype, elem = pick(types)
        rows = 16 // elem * pick((1, 2, 4, 8))
        outer = pick((257, 300, 384, 512, 1024) if verdict == "box-dim" else (8, 16, 32, 64))
        g_inner = rows * pick((2, 3, 4, 5))
        if verdict == "box-inner-bytes":   # the box's rows: a whole number of elements, not of 16 bytes
            rows = pick([r for r in range(1, 256 // max(elem, 2)) if (r * elem) % 16 and r * elem > 4])
            g_inner = (rows + 15) // 16 * 16 * pick((1, 2))
        elif verdict == "global-stride-multiple":     # the tensor's own rows
            g_inner = pick([g for g in range(rows + 1, rows * 4) if (g * elem) % 16])
        return dict(dtype=dtype, global_shape=(g_inner, max(outer, pick((48, 64, 80, 300)))), box_shape=(rows, outer))

    def nan_fill(_):
        dtype, elem = pick((("int8", 1), ("uint8", 1), ("int16", 2), ("uint16", 2), ("int32", 4), ("uint32", 4)))
        rows = 16 // elem * pick((1, 2, 4, 8))
        return dict(dtype=dtype, global_shape=(rows * 2, 64), box_shape=(rows, 8), oob_fill="nan")

    makers = {"swizzle-span": swizzled, "box-inner-bytes": plain, "global-stride-multiple": plain,
              "box-dim": plain, "oob-fill-nan": nan_fill}
    verdicts, legal = list(makers) + [LEGAL, LEGAL], [swizzled, plain]
    for seq in (verdicts, legal):
        rng.shuffle(seq)
    return {key: legal.pop()(v) if v == LEGAL else makers[v](v) for key, v in zip("abcdefg", verdicts)}


# Every student's seven maps (bwlab.variants), after the self-study ones; each map's rule is TensorMap's.
RULE_VARIANTS = (RULE_CANDIDATES,) + tuple(_rule_set(random.Random(f"tma_broken_rule:{i}")) for i in range(40))


def rule_candidates(token: str | None = None) -> dict:
    """This student's seven tensor maps of exercise 1.1: {letter: TensorMap keyword arguments}."""
    from .. import variants
    return variants.pick("tma_broken_rule", RULE_VARIANTS, token)


def _verdict(kwargs) -> tuple:
    """(rule name or LEGAL, what TensorMap said)."""
    try:
        TensorMap(**kwargs)
    except TensorMapError as e:
        return e.rule, str(e)
    return LEGAL, "TensorMap accepts it"


def _explain_rules(got):
    if not isinstance(got, dict):
        return "give a dict {letter: rule name or 'legal'}"
    for key, kwargs in rule_candidates().items():
        want, said = _verdict(kwargs)
        mine = got.get(key)
        if mine == want:
            continue
        if mine != LEGAL and mine not in RULES_BY_NAME:
            return f"{key}: {mine!r} is not a rule's name; the names are {', '.join(RULES_BY_NAME)} (or 'legal')"
        if want == LEGAL:
            return (f"{key}: TensorMap({_args(kwargs)}) is legal — the rule you named, {mine!r}, asks for "
                    f"'{RULES_BY_NAME[mine].limit}', and this map meets it")
        return f"{key}: TensorMap({_args(kwargs)}) -> {said}"
    return None


def _args(kwargs) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())


@course_cases("tma_broken_rule")
def check_broken_rule(answer, hidden=()) -> None:
    """Exercise 1.1: {letter: the first rule TensorMap(**kwargs) breaks, or 'legal'} for this student's
    maps (rule_candidates()). `hidden` is unused: the graded version checks the same answer."""
    candidates = rule_candidates()
    if isinstance(answer, dict):
        open_ = [k for k in candidates if unanswered(answer.get(k))]
        if len(open_) == len(candidates):
            answer = None
        elif open_:
            raise NotYet(f"the rule each tensor map breaks: no answer yet for {open_}")
    expected = {k: _verdict(kw)[0] for k, kw in candidates.items()}
    check_value("the rule each tensor map breaks", answer, expected, mistakes=_explain_rules,
                rule="cuTensorMapEncodeTiled's rules, one row each in bwlab.tma.rules.RULES (name, limit, source)",
                hint="a box row must be a multiple of 16 bytes and, swizzled, at most the span; every box "
                     "dimension 1..256; packed row strides must be multiples of 16 bytes; NaN fill needs a float",
                note="TensorMap checks the rules in the table's order and names the first one broken")


# ---- Exercise 1.2: the transaction bytes of a box -----------------------------------------------------
# shown: the box of section 1, and a swizzled box whose 32-byte rows sit 128 bytes apart in SMEM (the
# footprint is not what the TMA counts); the hidden ones (course data) add other types, ranks, swizzles
TX_SHOWN = [("bfloat16", (32, 16), "none"), ("float16", (16, 8), "128B")]


def _tx_reference(dtype, box_shape, swizzle="none"):
    return TensorMap(dtype, tuple(box_shape), tuple(box_shape), swizzle=swizzle).tx_bytes


def _explain_tx(args, got, expected):
    dtype, box_shape, swizzle = args
    t = TensorMap(dtype, tuple(box_shape), tuple(box_shape), swizzle=swizzle)
    if got == t.box_elements:
        return "that is the number of elements, not of bytes"
    if got == t.box_bytes * 8:
        return "that is the number of bits"
    if got == t.smem_footprint:
        return (f"that is the SMEM footprint: rows of {t.inner_box_bytes} bytes under {swizzle} swizzle sit "
                f"{t.smem_pitch} bytes apart, but the TMA counts only the bytes it writes")
    if t.rank > 2 and got == t.box_counts[0] * t.box_counts[1] * t.elem_bytes:
        return "only the first two box dimensions: a load brings the product of all of them"
    return None


@course_cases("tma_tx_bytes")
def check_tx_bytes(fn, hidden=()) -> None:
    """Exercise 1.2: `fn(dtype, box_shape, swizzle)` -> expect_tx's bytes for one box; `hidden`: course data."""
    check_function_explained(
        "transaction bytes of a box", fn, TX_SHOWN + [tuple(c) for c in hidden], reference=_tx_reference,
        explain=_explain_tx, family=legal_box, family_text="legal boxes of rank 1 to 5",
        more="" if hidden else "other element types, boxes of rank 3 and 4, other swizzles",
        rule="a load's complete_tx reports every byte it writes to SMEM: the product of the box dimensions "
             "x element size, whatever the swizzle (PTX ISA cp.async.bulk.tensor, mbarrier::complete_tx::bytes)",
        hint="bwlab.hw.element_type(dtype).bytes is the element size")


# ---- Exercise 1.3: fill in expect_tx in teach_tma.cu -----------------------------------------------------
EDIT_TMAP = TensorMap("bfloat16", (80, 48), (48, 8))      # the self-study variant
EDIT_COORDS = (32, 16)
# every student's box (bwlab.variants): bf16, inside the tensor, 16-byte rows, never the first's 768 bytes
EDIT_BOXES = ((48, 8),) + tuple((w, h) for w in (8, 16, 24, 32, 40, 48) for h in (4, 8, 12, 16, 24, 32)
                                if w * h != 48 * 8)


def edit_box(token: str | None = None) -> tuple:
    """This student's box for exercise 1.3: (box_dim[0], box_dim[1]) of bf16 at EDIT_COORDS."""
    from .. import variants
    return variants.pick("tma_expect_tx_edit", EDIT_BOXES, token)


def edit_tmap(token: str | None = None) -> TensorMap:
    return TensorMap("bfloat16", EDIT_TMAP.global_shape, edit_box(token))
EDIT_LINE = "const u32 tx_bytes = box_bytes;"
_TX_PIECE = 16   # the model retires the bytes 16 at a time (the split is not architectural, the sum is)


def edit_kernel(tx: int):
    """teach_tma.cu with the learner's expect_tx value in place of `box_bytes`."""
    from ..lab import TeachingKernel
    return TeachingKernel("teach_tma.cu").replace(EDIT_LINE, f"const u32 tx_bytes = {int(tx)};")


def tx_story(tx: int, box_bytes: int):
    """The model's mbarrier when thread 0 announces `tx` and the TMA lands `box_bytes`, reported
    16 bytes at a time: (bytes landed when phase 0 completed, or None; the mbarrier at the end)."""
    bar = Mbarrier(1)
    done_at = 0 if bar.arrive_expect_tx(tx) else None
    landed = 0
    while landed < box_bytes:
        piece = min(_TX_PIECE, box_bytes - landed)
        landed += piece
        if bar.complete_tx(piece) and done_at is None:
            done_at = landed
    return done_at, bar


def _story_text(tx, box, done_at, bar) -> str:
    if done_at == box:
        return f"phase 0 completes as the last of the {box} bytes lands"
    if done_at is None:
        return (f"after every byte of the box landed the tx-count is {bar.tx}, not 0, so phase 0 never completes: "
                "every thread's bounded wait gives up after 200 ms (MbarrierTimeout naming 'smem_full'; with a "
                "plain wait, a hang)")
    when = "at the arrive itself, before any byte has landed" if done_at == 0 else \
        f"after only {done_at} bytes of the box have landed"
    return (f"phase 0 completes {when}: the threads copy out a box the TMA is still writing (a race), and the "
            f"bytes still to land count against phase 1 (tx-count {bar.tx} once they have) — with the bytes "
            f"reported {_TX_PIECE} at a time; how the hardware splits them is not architectural")


def _edit_gmem() -> np.ndarray:
    """The tensor of notebook 01: 48 rows x 80 bf16 bit patterns."""
    return np.random.default_rng(0).integers(0, 2**16, size=(48, 80), dtype=np.uint16)


def _run_edit_on_gpu(mine, tmap) -> tuple:
    """Run the edited kernel in a worker process: (the bytes equal the model's?, what happened)."""
    from ..runtime import MbarrierTimeout
    from ..sandbox import KernelFault, KernelHang
    from .case import TmaLoad
    from .case import run_teach
    gmem = _edit_gmem()
    try:
        got = run_teach(gmem, tmap, EDIT_COORDS, kernel=mine)
    except MbarrierTimeout as e:
        return False, f"MbarrierTimeout: {e}"
    except (KernelFault, KernelHang) as e:
        return False, f"{type(e).__name__}: {e}"
    from .. import device
    where = ("the PTX emulator, your whole kernel" if device.tier("tma") == "emulated"
             else "this GPU, your kernel in a worker process")
    r = TmaLoad(gmem, tmap, EDIT_COORDS).check(got, source=where)
    return r.ok, str(r)


@course_cases("tma_expect_tx_edit")
def check_expect_tx_edit(tx, hidden=()) -> None:
    """Exercise 1.3: `tx` (an int) replaces `box_bytes` in teach_tma.cu's expect_tx line for this
    student's box (edit_tmap()) at EDIT_COORDS; the edit is compiled, run on a GPU with TMA (worker
    process) and by the model's mbarrier everywhere. `hidden` is unused (the same box is checked)."""
    from .. import device
    from ..compile import CompileError
    tmap = edit_tmap()
    name = f"expect_tx for the {' x '.join(map(str, tmap.box_shape))} {tmap.dtype} box"
    box = tmap.tx_bytes
    rule = ("expect_tx must announce every byte the load brings, the whole box: box_dim[0] x box_dim[1] x "
            "element size; phase 0 completes when the arrival is in and the tx-count is back to zero")
    if unanswered(tx):
        check_value(name, tx, box, rule=rule)
    if isinstance(tx, bool) or not isinstance(tx, (int, np.integer)):
        raise NotYet(f"{name}: give the byte count as a Python int (it replaces `box_bytes` in the kernel), "
                     f"got {tx!r}\n  rule: {rule}")
    tx = int(tx)
    try:
        done_at, bar = tx_story(tx, box)
    except MbarrierError as e:
        raise NotYet(f"{name}: {e}\n  rule: {rule}") from None
    mine = edit_kernel(tx)
    try:
        for arch in mine.targets:
            mine.compile(arch)
    except CompileError as e:
        raise NotYet(f"{name}: the edited kernel does not compile:\n{e}") from None
    built = f"the edited kernel compiles for {', '.join(mine.targets)}"
    gpu_ok, gpu = None, None
    emulated = device.tier("tma") == "emulated"
    if device.tier("tma") in ("hardware", "emulated"):
        gpu_ok, gpu = _run_edit_on_gpu(mine, tmap)
    if tx == box and gpu_ok is not False:
        ran = ((f"in the PTX emulator your whole kernel ran and its {box} SMEM bytes equal the model's" if emulated
                else f"on this GPU (worker process) its {box} SMEM bytes equal the model's") if gpu_ok else
               "no GPU with TMA here, so the model's mbarrier ran your value")
        check_value(name, tx, box, rule=rule, note=f"{built}; in the model, {_story_text(tx, box, done_at, bar)}; "
                                                   f"{ran}. In a real kernel write box_bytes: the host passes "
                                                   "the tensor map's box bytes")
        return
    lines = [f"{name}: you have {tx}; the rule gives a {'smaller' if tx > box else 'larger'} value." if tx != box else
             f"{name}: {tx} is right, but the GPU's result differs from the model's.", f"  rule: {rule}"]
    known = {TensorMap("bfloat16", (80, 48), (32, 16)).box_bytes: "the box of sections 1-5 (32 x 16); this one is "
                                                                  f"{tmap.box_shape[0]} x {tmap.box_shape[1]}",
             int(np.prod(tmap.global_shape)) * tmap.elem_bytes: "the whole tensor, not one box",
             tmap.inner_box_bytes: f"the bytes of one box row; the box has {tmap.box_shape[1]} rows",
             box * 8: "the number of bits",
             tmap.box_elements: "the number of elements, not of bytes"}
    if tx in known and tx != box:
        lines.append(f"  your value: {known[tx]}")
    lines.append(f"  what happens: {built}; in the model, {_story_text(tx, box, done_at, bar)}")
    if gpu is not None:
        lines.append(f"  {'in the PTX emulator' if emulated else 'on this GPU'}: {gpu}")
    raise NotYet("\n".join(lines))


# ---- Exercise 1.4: the SMEM offset of element (r, c) under the 128B swizzle ---------------------------
_ELEM_DTYPE = {1: "uint8", 2: "bfloat16", 4: "float32", 8: "float64"}
SWIZZLE_ROWS = 16


@lru_cache(maxsize=None)
def _landing(elem_bytes: int, base: int) -> tuple:
    """Where tma_load_writes puts the first byte of every element of a 128-byte-row box, 128B swizzle."""
    if elem_bytes not in _ELEM_DTYPE:
        raise ValueError(f"elem_bytes must be one of {sorted(_ELEM_DTYPE)}, got {elem_bytes}")
    width = 128 // elem_bytes
    t = TensorMap(_ELEM_DTYPE[elem_bytes], (width, SWIZZLE_ROWS), (width, SWIZZLE_ROWS), swizzle="128B")
    addr, _ = tma_load_writes(np.zeros(t.global_extent_bytes, np.uint8), t, (0, 0), base)
    return tuple(int(a) for a in addr[::elem_bytes])


def _swizzle_reference(r, c, elem_bytes, base):
    width = 128 // elem_bytes
    if not (0 <= r < SWIZZLE_ROWS and 0 <= c < width):
        raise ValueError(f"element ({r}, {c}) is outside the {SWIZZLE_ROWS} x {width} box")
    return _landing(elem_bytes, base)[r * width + c] - base


# shown: bf16 at base 0, and at base 0x180 (three 128-byte lines into the 1024-byte pattern: a
# formula that ignores base fails there); the hidden ones (course data) try other element sizes and bases
SWIZZLE_SHOWN = [(r, c, 2, 0) for r, c in ((0, 0), (0, 9), (1, 0), (1, 8), (2, 13), (5, 40), (7, 63))] + \
    [(0, 0, 2, 0x180), (0, 8, 2, 0x180), (3, 5, 2, 0x180)]


def _explain_swizzle(args, got, expected):
    r, c, e, base = args
    sw = SWIZZLES["128B"]
    lin = r * 128 + c * e
    x = base + lin
    if base and got == expected + base:
        return "that is the absolute SMEM address; return the offset from base"
    forgot = (f"the swizzle is a function of the absolute SMEM address base + offset, and at base 0x{base:x} "
              f"the pattern starts {(base % 1024) // 128} lines in (forgetting the base offset)")
    if got == lin and base and got == int(sw(lin)):
        return f"that is the offset unswizzled, and swizzled as if the box started at 0: {forgot}"
    if got == lin:
        return "that is where the element sits without swizzle: 128B mode XORs chunk bits 4-6 with bits 7-9"
    if base and got == int(sw(lin)):
        return f"you swizzled the offset from the start of the box; {forgot}"
    if e > 1 and got in (r * 128 + c, int(sw(base + r * 128 + c)) - base):
        return "c counts elements; the address counts bytes: multiply by elem_bytes"
    if got == (x ^ ((x & 0x70) << 3)) - base:
        return ("XOR the other way round: the line bits 7-9 change the chunk bits 4-6, not the reverse "
                "(CuTe Swizzle<3,4,3>)")
    if r >= 8 and got == int(sw(base + (r % 8) * 128 + c * e)) - base:
        return "rows 8-15 do not wrap to the start: the pattern repeats every 1024 bytes, the address keeps growing"
    return None


@course_cases("tma_swizzle_offset")
def check_swizzle_offset(fn, hidden=()) -> None:
    """Exercise 1.4: `fn(r, c, elem_bytes, base)` -> the byte offset from `base` of element (r, c) of a box
    with 128-byte rows loaded with swizzle 128B to SMEM address `base` (a multiple of 128); `hidden`:
    more (r, c, elem_bytes, base) cases from the course data."""
    check_function_explained(
        "SMEM offset of element (r, c) under the 128B swizzle", fn, SWIZZLE_SHOWN + [tuple(c) for c in hidden],
        more="" if hidden else "elements of 1, 4 and 8 bytes, rows 8-15 and other bases",
        reference=_swizzle_reference, explain=_explain_swizzle,
        rule="address = base + r x 128 + c x elem_bytes, then bits 4-6 ^= bits 7-9 of that ADDRESS "
             "(PTX ISA 5.5.7 swizzle modes; CuTe Swizzle<3,4,3>); the offset is the result minus base",
        hint="the swizzle acts on the absolute SMEM address, so base matters unless it is a multiple of 1024")


# ---- Exercise 1.5: out-of-bounds fill ---------------------------------------------------------------
OOB_SHOWN = [("float32", (20, 12), (8, 6), (-4, 8))]


def _oob_reference(dtype, global_shape, box_shape, coords):
    t = TensorMap(dtype, tuple(global_shape), tuple(box_shape))
    _, _, inb, _ = box_targets(t, require_coords(t, coords))
    return int((~inb).sum()), t.tx_bytes


def _explain_oob(args, got, expected):
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return two numbers: (elements filled, expect_tx bytes)"
    filled, tx = expected
    t = TensorMap(args[0], tuple(args[1]), tuple(args[2]))
    inside = t.box_elements - filled
    if got[1] == inside * t.elem_bytes and got[1] != tx:
        return "out-of-bounds elements still count towards expect_tx: the mbarrier expects the whole box"
    if got[0] == inside and got[0] != filled:
        return "that is the number of elements inside the tensor; the fill is the rest of the box"
    if got[1] == t.box_elements and got[1] != tx:
        return "expect_tx counts bytes, not elements"
    if filled and got[1] == filled * t.elem_bytes and got[1] != tx:
        return ("that is the bytes of the fill alone; the TMA reports the whole box to the mbarrier, the "
                "elements it read and the ones it filled alike")
    return None


@course_cases("tma_oob_fill")
def check_oob_fill(fn, hidden=()) -> None:
    """Exercise 1.5: `fn(dtype, global_shape, box_shape, coords)` -> (elements filled, expect_tx bytes);
    `hidden`: more cases from the course data."""
    check_function_explained(
        "out-of-bounds fill", fn, OOB_SHOWN + [tuple(c) for c in hidden], reference=_oob_reference,
        explain=_explain_oob, more="" if hidden else "boxes past every edge, wholly inside, wholly outside, rank 3",
        rule="box element j (per dimension) reads tensor element coords + j; it is filled when that is < 0 or "
             ">= global_shape in any dimension (PTX ISA 5.5 bounding box); the transaction bytes are always "
             "the whole box")
