"""THE instruction table: every PTX instruction the emulator executes, one row each.

A row is `Row(key, decoder, kind, converge, section)`:

* `key` — the instruction's leading words ('add', 'mbarrier.try_wait', 'cp.async.bulk.tensor'); an
  instruction's row is the one with the longest key that starts its text ('mbarrier.arrive.expect_tx.
  shared::cta.b64' -> 'mbarrier.arrive'). A sub-operation has a row of its own where its semantics differ.
* `decoder(ctx, ins, base, mods) -> body` — from a chapter module; runs once per instruction at load.
* `kind` — how the executor treats the body:
    plain     body(warp, mask) computes for the lanes in mask; the lanes' pcs then advance;
    async     the same, and it hands work to an asynchronous unit that completes later;
    branch / call / return / exit / blocking
              body(warp, group, guarded) sets the pcs of `group` itself (a blocking instruction
              leaves them in place until what it waits for has happened).
* `converge` — the PTX ISA's rule on which lanes execute it together:
    none      per thread (`.aligned`, where the instruction takes it, still means: the whole warp);
    aligned   every live lane of the warp executes the same instruction (bar.sync, ...);
    member    every lane of the member mask (the last operand) executes it (shfl.sync, vote.sync, ...).
* `section` — the PTX ISA section that defines it.

An instruction without a row is refused at decode (`UnsupportedInstruction`), naming it, its PTX line
and, from `CUDA_CONSTRUCTS` below, the CUDA code that emits it when that is known.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import compare, control, conversion, data, float as fp, integer, logic, mma_sync, sync, warp, wmma
from .arith import arithmetic
from .asynchronous import bulk, cpasync, mbarrier, tcgen05, tcgen05_cp, tmem_access, wgmma
from .operands import nop

__all__ = ["Row", "ROWS", "TABLE", "KINDS", "CONVERGE", "CUDA_CONSTRUCTS", "lookup", "construct_of", "listing"]

KINDS = ("plain", "async", "branch", "call", "return", "exit", "blocking")
ADVANCING = ("plain", "async")      # the executor advances the pcs after the body
CONVERGE = ("none", "aligned", "member")


@dataclass(frozen=True)
class Row:
    key: str
    decoder: object
    kind: str = "plain"
    converge: str = "none"
    section: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"row {self.key}: kind {self.kind!r} is not one of {KINDS}")
        if self.converge not in CONVERGE:
            raise ValueError(f"row {self.key}: converge {self.converge!r} is not one of {CONVERGE}")


INT = "Integer Arithmetic Instructions"
FLT = "Floating-Point Instructions"
HLF = "Half Precision Floating-Point Instructions"
CMP = "Comparison and Selection Instructions"
LOG = "Logic and Shift Instructions"
DAT = "Data Movement and Conversion Instructions"
CTL = "Control Flow Instructions"
SYN = "Parallel Synchronization and Communication Instructions"
WGM = "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"
TC5 = "TensorCore 5th Generation Family Instructions"
MSC = "Miscellaneous Instructions"
EXT = "Extended-Precision Integer Arithmetic Instructions"
VID = "Video Instructions"
WMM = "Warp Level Matrix Multiply-Accumulate Instructions"

_SHIFT = (None, "u32")

ROWS = [
    # -- integer and floating-point arithmetic ----------------------------------------------------
    Row("add", arithmetic(integer.add, fp.add), section=f"{INT}: add; {FLT}: add; {HLF}: add"),
    Row("sub", arithmetic(integer.sub, fp.sub), section=f"{INT}: sub; {FLT}: sub; {HLF}: sub"),
    Row("mul", arithmetic(integer.mul, fp.mul), section=f"{INT}: mul; {FLT}: mul; {HLF}: mul"),
    Row("mad", arithmetic(integer.mad, fp.mad, src=(None, None, "out")), section=f"{INT}: mad; {FLT}: mad"),
    Row("fma", arithmetic(None, fp.fma), section=f"{FLT}: fma; {HLF}: fma"),
    Row("div", arithmetic(integer.div, fp.div), section=f"{INT}: div; {FLT}: div"),
    Row("rem", arithmetic(integer.rem), section=f"{INT}: rem"),
    Row("min", arithmetic(integer.minimum, fp.minimum), section=f"{INT}: min; {FLT}: min; {HLF}: min"),
    Row("max", arithmetic(integer.maximum, fp.maximum), section=f"{INT}: max; {FLT}: max; {HLF}: max"),
    Row("abs", arithmetic(integer.abs_, fp.abs_), section=f"{INT}: abs; {FLT}: abs; {HLF}: abs"),
    Row("neg", arithmetic(integer.neg, fp.neg), section=f"{INT}: neg; {FLT}: neg; {HLF}: neg"),
    Row("popc", arithmetic(integer.popc), section=f"{INT}: popc"),
    Row("clz", arithmetic(integer.clz), section=f"{INT}: clz"),
    Row("brev", arithmetic(integer.brev), section=f"{INT}: brev"),
    Row("bfe", arithmetic(integer.bfe, src=(None, "u32", "u32")), section=f"{INT}: bfe"),
    Row("bfi", arithmetic(integer.bfi, src=(None, None, "u32", "u32")), section=f"{INT}: bfi"),
    Row("copysign", arithmetic(None, fp.copysign), section=f"{FLT}: copysign"),
    Row("rcp", arithmetic(None, fp.rcp), section=f"{FLT}: rcp"),
    Row("sqrt", arithmetic(None, fp.sqrt), section=f"{FLT}: sqrt"),
    Row("rsqrt", arithmetic(None, fp.rsqrt), section=f"{FLT}: rsqrt"),
    Row("ex2", arithmetic(None, fp.ex2), section=f"{FLT}: ex2"),
    Row("lg2", arithmetic(None, fp.lg2), section=f"{FLT}: lg2"),
    Row("sin", arithmetic(None, fp.sin), section=f"{FLT}: sin"),
    Row("cos", arithmetic(None, fp.cos), section=f"{FLT}: cos"),
    Row("tanh", arithmetic(None, fp.tanh), section=f"{FLT}: tanh"),
    Row("testp", fp.testp, section=f"{FLT}: testp"),
    Row("bfind", integer.bfind, section=f"{INT}: bfind"),
    Row("sad", integer.sad, section=f"{INT}: sad"),
    Row("mul24", integer.mul24, section=f"{INT}: mul24"),
    Row("mad24", integer.mad24, section=f"{INT}: mad24"),
    Row("dp4a", integer.dp4a, section=f"{INT}: dp4a"),
    Row("dp2a", integer.dp2a, section=f"{INT}: dp2a"),
    Row("fns", integer.fns, section=f"{INT}: fns"),
    Row("add.cc", integer.carry, section=f"{EXT}: add.cc"),
    Row("addc", integer.carry, section=f"{EXT}: addc"),
    Row("sub.cc", integer.carry, section=f"{EXT}: sub.cc"),
    Row("subc", integer.carry, section=f"{EXT}: subc"),
    Row("mad.lo.cc", integer.carry, section=f"{EXT}: mad.cc"),
    Row("mad.hi.cc", integer.carry, section=f"{EXT}: mad.cc"),
    Row("madc", integer.carry, section=f"{EXT}: madc"),
    # -- comparison and selection -----------------------------------------------------------------
    Row("setp", compare.setp, section=f"{CMP}: setp"),
    Row("selp", compare.selp, section=f"{CMP}: selp"),
    Row("set", compare.set_, section=f"{CMP}: set"),
    # -- logic and shift ----------------------------------------------------------------------------
    Row("and", arithmetic(logic.and_), section=f"{LOG}: and"),
    Row("or", arithmetic(logic.or_), section=f"{LOG}: or"),
    Row("xor", arithmetic(logic.xor), section=f"{LOG}: xor"),
    Row("not", arithmetic(logic.not_), section=f"{LOG}: not"),
    Row("shl", arithmetic(logic.shl, src=_SHIFT), section=f"{LOG}: shl"),
    Row("shr", arithmetic(logic.shr, src=_SHIFT), section=f"{LOG}: shr"),
    Row("lop3", logic.lop3, section=f"{LOG}: lop3"),
    Row("shf", logic.shf, section=f"{LOG}: shf"),
    Row("cnot", arithmetic(logic.cnot), section=f"{LOG}: cnot"),
    Row("bmsk", logic.bmsk, section=f"{LOG}: bmsk"),
    Row("szext", logic.szext, section=f"{LOG}: szext"),
    *[Row(f"v{op}{n}", logic.video, section=f"{VID}: v{op}2, v{op}4")
      for op in ("add", "sub", "avrg", "absdiff", "min", "max", "set") for n in (2, 4)],
    # -- data movement and conversion ---------------------------------------------------------------
    Row("mov", data.mov, section=f"{DAT}: mov"),
    Row("ld", data.ld, section=f"{DAT}: ld"),
    Row("ldu", data.ld, section=f"{DAT}: ldu"),
    Row("st", data.st, section=f"{DAT}: st"),
    Row("cvta", data.cvta, section=f"{DAT}: cvta"),
    Row("cvt", conversion.cvt, section=f"{DAT}: cvt"),
    Row("prmt", data.prmt, section=f"{DAT}: prmt"),
    Row("isspacep", data.isspacep, section=f"{DAT}: isspacep"),
    Row("mapa", data.mapa, section=f"{DAT}: mapa"),
    Row("getctarank", data.getctarank, section=f"{DAT}: getctarank"),
    Row("shfl.sync", warp.shfl, converge="member", section=f"{DAT}: shfl.sync"),
    Row("prefetch", nop, section=f"{DAT}: prefetch, prefetchu"),
    Row("prefetchu", nop, section=f"{DAT}: prefetch, prefetchu"),
    Row("applypriority", nop, section=f"{DAT}: applypriority"),
    Row("discard", nop, section=f"{DAT}: discard"),
    # -- control flow ---------------------------------------------------------------------------------
    Row("bra", control.bra, "branch", section=f"{CTL}: bra"),
    Row("call", control.call, "call", section=f"{CTL}: call"),
    Row("ret", control.ret, "return", section=f"{CTL}: ret"),
    Row("exit", control.exit_, "exit", section=f"{CTL}: exit"),
    # -- parallel synchronisation and communication -------------------------------------------------
    Row("bar", sync.bar, "blocking", "aligned", f"{SYN}: bar, barrier"),
    Row("bar.warp.sync", sync.bar_warp_sync, converge="member", section=f"{SYN}: bar.warp.sync"),
    Row("barrier", sync.barrier, "blocking", section=f"{SYN}: bar, barrier"),
    Row("barrier.cluster", sync.barrier, "blocking", section=f"{SYN}: barrier.cluster"),
    Row("membar", nop, section=f"{SYN}: membar, fence"),
    Row("fence", sync.fence, section=f"{SYN}: membar, fence"),
    Row("atom", sync.atom, section=f"{SYN}: atom"),
    Row("red", sync.atom, section=f"{SYN}: red"),
    Row("vote.sync", warp.vote, converge="member", section=f"{SYN}: vote.sync"),
    Row("activemask", warp.activemask, section=f"{SYN}: activemask"),
    Row("elect.sync", warp.elect, converge="member", section=f"{SYN}: elect.sync"),
    Row("match", warp.match, converge="member", section=f"{SYN}: match.sync"),
    Row("redux.sync", warp.redux, converge="member", section=f"{SYN}: redux.sync"),
    Row("griddepcontrol", nop, section=f"{SYN}: griddepcontrol"),
    # -- warp-level matrix multiply-accumulate ------------------------------------------------------
    Row("mma.sync", mma_sync.mma, converge="aligned", section=f"{WMM}: mma"),
    Row("ldmatrix", mma_sync.ldmatrix, converge="aligned", section=f"{WMM}: ldmatrix"),
    Row("wmma.load", wmma.load, converge="aligned", section=f"{WMM}: wmma.load"),
    Row("wmma.mma", wmma.mma, converge="aligned", section=f"{WMM}: wmma.mma"),
    Row("wmma.store", wmma.store, converge="aligned", section=f"{WMM}: wmma.store"),
    # -- mbarrier -------------------------------------------------------------------------------------
    Row("mbarrier.init", mbarrier.init, section=f"{SYN}: mbarrier.init"),
    Row("mbarrier.inval", mbarrier.inval, section=f"{SYN}: mbarrier.inval"),
    Row("mbarrier.arrive", mbarrier.arrive, section=f"{SYN}: mbarrier.arrive"),
    Row("mbarrier.arrive_drop", mbarrier.arrive, section=f"{SYN}: mbarrier.arrive_drop"),
    Row("mbarrier.expect_tx", mbarrier.tx, section=f"{SYN}: mbarrier.expect_tx"),
    Row("mbarrier.complete_tx", mbarrier.tx, section=f"{SYN}: mbarrier.complete_tx"),
    Row("mbarrier.try_wait", mbarrier.wait, section=f"{SYN}: mbarrier.test_wait / try_wait"),
    Row("mbarrier.test_wait", mbarrier.wait, section=f"{SYN}: mbarrier.test_wait / try_wait"),
    Row("mbarrier.pending_count", mbarrier.pending_count, section=f"{SYN}: mbarrier.pending_count"),
    # -- Ampere's asynchronous copy (per-thread groups) ---------------------------------------------
    Row("cp.async.ca", cpasync.copy, "async", section=f"{DAT}: cp.async"),
    Row("cp.async.cg", cpasync.copy, "async", section=f"{DAT}: cp.async"),
    Row("cp.async.commit_group", cpasync.commit_group, section=f"{DAT}: cp.async.commit_group"),
    Row("cp.async.wait_group", cpasync.wait_group, "blocking", section=f"{DAT}: cp.async.wait_group"),
    Row("cp.async.wait_all", cpasync.wait_all, "blocking", section=f"{DAT}: cp.async.wait_group"),
    Row("cp.async.mbarrier.arrive", cpasync.mbarrier_arrive, "async",
        section=f"{SYN}: cp.async.mbarrier.arrive"),
    # -- the TMA and bulk copies ----------------------------------------------------------------------
    Row("cp.async.bulk", bulk.bulk_copy, "async", section=f"{DAT}: cp.async.bulk"),
    Row("cp.async.bulk.tensor", bulk.tensor, "async", section=f"{DAT}: cp.async.bulk.tensor"),
    Row("cp.reduce.async.bulk.tensor", bulk.reduce_tensor, "async",
        section=f"{DAT}: cp.reduce.async.bulk.tensor"),
    Row("cp.async.bulk.commit_group", bulk.commit_group, section=f"{DAT}: cp.async.bulk.commit_group"),
    Row("cp.async.bulk.wait_group", bulk.wait_group, "blocking", section=f"{DAT}: cp.async.bulk.wait_group"),
    Row("cp.async.bulk.prefetch", nop, section=f"{DAT}: cp.async.bulk.prefetch"),
    # -- wgmma ------------------------------------------------------------------------------------------
    Row("wgmma.fence", wgmma.fence, section=f"{WGM}: wgmma.fence"),
    Row("wgmma.commit_group", wgmma.commit_group, section=f"{WGM}: wgmma.commit_group"),
    Row("wgmma.wait_group", wgmma.wait_group, "blocking", section=f"{WGM}: wgmma.wait_group"),
    Row("wgmma.mma_async", wgmma.mma_async, "async", section=f"{WGM}: wgmma.mma_async"),
    # -- tcgen05 ------------------------------------------------------------------------------------------
    Row("tcgen05.alloc", tcgen05.alloc, "blocking", section=f"{TC5}: tcgen05.alloc"),
    Row("tcgen05.dealloc", tcgen05.dealloc, "blocking", section=f"{TC5}: tcgen05.dealloc"),
    Row("tcgen05.relinquish_alloc_permit", tcgen05.relinquish_alloc_permit, "blocking",
        section=f"{TC5}: tcgen05.relinquish_alloc_permit"),
    Row("tcgen05.mma", tcgen05_cp.mma, "async", section=f"{TC5}: tcgen05.mma"),
    Row("tcgen05.commit", tcgen05.commit, "async", section=f"{TC5}: tcgen05.commit"),
    Row("tcgen05.cp", tcgen05_cp.cp, "async", section=f"{TC5}: tcgen05.cp"),
    Row("tcgen05.ld", tmem_access.ld, "async", section=f"{TC5}: tcgen05.ld"),
    Row("tcgen05.st", tmem_access.st, "async", section=f"{TC5}: tcgen05.st"),
    Row("tcgen05.wait::ld", tmem_access.wait_ld, section=f"{TC5}: tcgen05.wait"),
    Row("tcgen05.wait::st", tmem_access.wait_st, section=f"{TC5}: tcgen05.wait"),
    Row("tcgen05.fence::before_thread_sync", tcgen05.fence_before, section=f"{TC5}: tcgen05.fence"),
    Row("tcgen05.fence::after_thread_sync", tcgen05.fence_after, section=f"{TC5}: tcgen05.fence"),
    # -- miscellaneous ------------------------------------------------------------------------------------
    Row("trap", control.trap, section=f"{MSC}: trap"),
    Row("nanosleep", control.nanosleep, section=f"{MSC}: nanosleep"),
    Row("setmaxnreg", control.setmaxnreg, converge="aligned", section=f"{MSC}: setmaxnreg"),
]

TABLE = {r.key: r for r in ROWS}
if len(TABLE) != len(ROWS):   # pragma: no cover - a table edit that repeats a key
    raise ValueError("two rows of the emulator's instruction table have the same key")
_LONGEST = max(k.count(".") for k in TABLE) + 1


def lookup(op: str):
    """The row of instruction `op` (its full text before the operands), or None."""
    words = op.split(".")
    for n in range(min(len(words), _LONGEST), 0, -1):
        row = TABLE.get(".".join(words[:n]))
        if row is not None:
            return row
    return None


# The CUDA C++ that emits an instruction the emulator refuses, where it is known: a pattern over the
# instruction's text (with its operands) -> the construct, for the refusal's message.
CUDA_CONSTRUCTS = [
    (r"^add\.rz\.f32", "roundf() / round() (they add 0.5 rounding toward zero)"),
    (r"^add\.r[zmp]\.", "__fadd_rz / __fadd_rd / __fadd_ru (directed-rounding intrinsics)"),
    (r"^(mul|fma|div|sqrt|rcp)\.r[zmp]\.", "a directed-rounding intrinsic (__fmul_rz, __fmaf_rd, __fdiv_ru, ...)"),
    (r"^call.*\bvprintf\b", "printf()"),
    (r"^call", "a call to a function outside this module (printf, malloc, a device library)"),
    (r"^setp\.\w+\.(f16|bf16)", "a cuda_fp16.h / cuda_bf16.h comparison (__hlt, __heq, __hmax, ...)"),
    (r"^bfind", "__clz-based integer log2 (31 - __clz(x)) or __fns"),
    (r"^sad", "__sad / __usad"),
    (r"^mul24", "__mul24 / __umul24 / __mulhi"),
    (r"^dp4a", "__dp4a"),
    (r"^dp2a", "__dp2a_lo / __dp2a_hi"),
    (r"^(addc|subc|add\.cc|sub\.cc|madc|mad\.cc)", "128-bit or multi-word integer arithmetic (__int128)"),
    (r"^match\.", "__match_any_sync / __match_all_sync"),
    (r"^redux\.", "__reduce_add_sync / __reduce_min_sync / ... (cooperative_groups::reduce)"),
    (r"^ldmatrix", "ldmatrix (CUTLASS's SM75_U32x4_LDSM_N, inline PTX)"),
    (r"^(mma|wmma)\.", "nvcuda::wmma or mma.sync (the warp-level tensor-core path)"),
    (r"^v(add|sub|absdiff|min|max|set)", "a SIMD video intrinsic (__vadd4, __vabsdiff4, ...)"),
    (r"^brkpt", "__brkpt()"),
    (r"^pmevent", "__prof_trigger()"),
    (r"^(ld|st)\.\S*b128", "a 128-bit load or store (__int128, a 16-byte struct)"),
    (r"^cvt\.\S*(e4m3|e5m2|e2m1|e2m3|e3m2|ue8m0)", "a cuda_fp8.h / cuda_fp6.h / cuda_fp4.h conversion"),
    (r"^cvt\.rz\.\S*bf16", "__float2bfloat16_rz"),
    (r"^tcgen05\.shift", "tcgen05.shift (CUTLASS's scale-factor shifts)"),
]


def construct_of(text: str):
    """The CUDA construct that emits the instruction `text`, or None."""
    for pattern, what in CUDA_CONSTRUCTS:
        if re.search(pattern, text):
            return what
    return None


def listing() -> str:
    """The table as text: key, kind, convergence, section (docs/emulator.md shows it)."""
    lines = [f"{'instruction':34} {'kind':9} {'converge':8} PTX ISA section", "-" * 100]
    for r in ROWS:
        lines.append(f"{r.key:34} {r.kind:9} {r.converge:8} {r.section}")
    return "\n".join(lines)

