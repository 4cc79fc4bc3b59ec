"""The checks of notebook 09's exercises (low precision): MXFP8's scale of a block, where a row's scale sits in
CUTLASS's scale atom, the instruction descriptor of a block-scaled MMA, and the scale_B copy put into the
block-scaled teaching kernel.

Every expected value comes from the models (`blockscaled_case.quantize`, `scales.sf_atom_offset`,
`blockscale.make_block_scaled_idesc`, `BlockScaledCase.model`); the generic checks of `bwlab.exercises` say
what is wrong. The kernel edit runs in the PTX emulator in every tier (no sm_100 GPU is needed: the emulator
executes the sm_100a PTX), so its check is the same everywhere.
"""
from __future__ import annotations

import numpy as np

from ..exercises import NotYet, check_function_explained, course_cases
from .blockscale import make_block_scaled_idesc
from .scales import sf_atom_offset

__all__ = ["check_mx_scale", "check_sf_offset", "check_bs_idesc", "scale_b_missing_kernel", "SCALE_B_TODO",
           "check_scale_b_copy"]


# -- Exercise: MXFP8's scale of a block -----------------------------------------------------------------
MX_SCALE_RULE = ("OCP MX (MXFP8, e4m3 elements): the block's shared scale is 2^(floor(log2(amax)) - 8), 8 being the "
                 "exponent of e4m3's largest power of two (256; its largest value is 448); ue8m0 stores that exponent "
                 "+ 127")


def _mx_code(amax):
    return int(np.floor(np.log2(amax))) - 8 + 127


def _explain_mx(args, got, expected):
    (amax,) = args
    if got is None:
        return "no answer yet: return the ue8m0 code (an integer)"
    e = int(np.floor(np.log2(amax)))
    guesses = {int(np.ceil(np.log2(amax))) - 8 + 127: "ceil where the rule floors: the scale must not exceed amax's "
                                                         "power of two",
               e + 127: "the element's own exponent range is left out: subtract 8 (e4m3's largest power of two)",
               e - 8: "the ue8m0 bias (127) is missing",
               int(np.ceil(np.log2(amax / 448))) + 127: "amax / 448 rounded up is a rule too (it never clips), but "
                                                       "not the OCP MX one: floor(log2(amax)) - 8"}
    return guesses.get(got)


MX_SCALE_SHOWN = [(1.0,), (448.0,), (500.0,), (0.75,), (3e-3,)]


@course_cases("lowp_mx_scale")
def check_mx_scale(fn, hidden=()) -> None:
    """`fn(amax)` -> the ue8m0 scale code MXFP8 gives a block whose largest magnitude is amax."""
    cases = MX_SCALE_SHOWN + [tuple(c) for c in hidden]
    check_function_explained("the ue8m0 code of a block's MXFP8 scale", fn, cases, reference=_mx_code,
                             rule=MX_SCALE_RULE, explain=_explain_mx, more="" if hidden else "amax over 2^±100",
                             hint="the quantised block drawn above: its scale printed with its code")


# -- Exercise: where a row's scale sits in the atom ------------------------------------------------------
SF_OFFSET_RULE = ("CUTLASS's 512-byte scale atom (128 rows x 4 scales): row r, scale j at byte 16 * (r % 32) + "
                  "4 * (r // 32) + j: one 32-bit word per row, and 16 bytes hold rows r, r+32, r+64, r+96, so that "
                  "tcgen05.cp.32x128b.warpx4 puts row r at lane r % 32 of every lane quarter, column r // 32")


def _explain_offset(args, got, expected):
    r, j = args
    if got is None:
        return "no answer yet: return the byte offset (an integer)"
    if got == 4 * (r % 32) + 16 * (r // 32) + j or got == 4 * r + j:
        return ("4 bytes from one row to the next: rows r and r + 1 are 16 bytes apart (16-byte line r % 32); the "
                "4-byte words of one line are rows r, r+32, r+64, r+96")
    if got == 16 * (r % 32) + 4 * (r // 32) + 128 * j:
        return "the 4 scales of one row are consecutive bytes of one word: + j, not + 128 j"
    return None


SF_OFFSET_SHOWN = [(0, 0), (1, 0), (32, 0), (33, 2), (127, 3)]


@course_cases("lowp_sf_offset")
def check_sf_offset(fn, hidden=()) -> None:
    """`fn(row, j)` -> the byte of row `row`'s scale j inside one 512-byte scale atom."""
    cases = SF_OFFSET_SHOWN + [tuple(c) for c in hidden]
    check_function_explained("the byte of (row, scale) in the scale atom", fn, cases,
                             reference=lambda r, j: int(sf_atom_offset(r, j)), rule=SF_OFFSET_RULE,
                             explain=_explain_offset, more="" if hidden else "every row and scale",
                             hint="the picture of the atom above: which line, which word")


# -- Exercise: the instruction descriptor of a block-scaled MMA ------------------------------------------
IDESC_RULE = ("PTX ISA tcgen05 Instruction descriptor, Table 46 (.kind::mxf8f6f4): bits 4-5 scale factor B ID, "
              "7-9 A format (e4m3 0, e5m2 1), 10-12 B format, 17-22 N >> 3, 23 scale type (ue8m0 1), 27-28 M >> 7, "
              "29-30 scale factor A ID; M = 128")


def _idesc(a, b, N, sfa, sfb):
    return make_block_scaled_idesc("mxf8f6f4", a, b, "ue8m0", N, sf_a_id=sfa, sf_b_id=sfb)


def _explain_idesc(args, got, expected):
    a, b, N, sfa, sfb = args
    if got is None:
        return "no answer yet: return the 32-bit descriptor (an integer)"
    if not isinstance(got, (int, np.integer)):
        return "return an integer"
    got = int(got)
    if not (got >> 27) & 3:
        return "the block-scaled kinds hold M >> 7 at bits 27-28 (M = 128: bit 27), not kind::f16's M >> 4 at 24-28"
    if not (got >> 23) & 1:
        return "bit 23 (the scale type) is 0, which is ue4m3; MXFP8's ue8m0 is 1"
    if (got >> 29) & 3 == sfb and (got >> 4) & 3 == sfa and sfa != sfb:
        return "the two scale factor IDs are swapped: A's at bits 29-30, B's at bits 4-5"
    if (got >> 17) & 0x3F == N & 0x3F and N & 7 == 0 and N != N >> 3:
        return "N must be shifted right by 3 (bits 17-22 hold N >> 3)"
    return None


IDESC_SHOWN = [("e4m3", "e4m3", 128, 0, 0), ("e5m2", "e4m3", 64, 1, 1), ("e4m3", "e5m2", 256, 3, 2)]


@course_cases("lowp_bs_idesc")
def check_bs_idesc(fn, hidden=()) -> None:
    """`fn(a_type, b_type, N, sf_a_id, sf_b_id)` -> the instruction descriptor of
    tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale (M = 128, K-major, ue8m0 scales)."""
    cases = IDESC_SHOWN + [tuple(c) for c in hidden]
    check_function_explained("the instruction descriptor", fn, cases, reference=_idesc, rule=IDESC_RULE,
                             explain=_explain_idesc, more="" if hidden else "every pairing, N and scale factor IDs",
                             hint="the field table printed above")


# -- Exercise: the scale_B copy in the teaching kernel (the answer is the statement, a string) ------------------
SCALE_B_LINE = "                tcgen05_cp_32x128b_warpx4(tsfb + 4 * a, scale_atom_desc(sfb_smem + 32 * a));\n"
SCALE_B_TODO = "                // TODO: copy scale_B's atom a into TMEM\n"


def scale_b_missing_kernel():
    """teach_blockscaled.cu with the tcgen05.cp of scale_B's atoms taken out (a TODO line in its place)."""
    from ..lab import TeachingKernel
    return TeachingKernel("teach_blockscaled.cu").replace(SCALE_B_LINE, SCALE_B_TODO)


@course_cases("lowp_scale_b_copy")
def check_scale_b_copy(line, hidden=()) -> None:
    """`line`: the CUDA statement that goes where `scale_b_missing_kernel()` has its TODO (inside the loop over
    the atoms `a`). Runs an MXFP8 and an NVFP4 tile through the edited kernel in the PTX emulator and compares D
    with the model; `hidden`: more (fmt, N, seed)."""
    from ..device import using_backend
    from ..emu import EmuError
    from ..lab import CompileError
    from .blockscaled_case import BlockScaledCase, run_teach_blockscaled
    if line is None or line is Ellipsis:
        raise NotYet("the scale_B copy: no answer yet — replace None with the statement (a string) that copies "
                     "scale_B's atom a into TMEM\n"
                     "  rule: every scale the MMA reads must be in TMEM first: one tcgen05.cp.32x128b.warpx4 per "
                     "scale_B atom, to tsfb + 4 * a")
    if not isinstance(line, str):
        raise NotYet("the scale_B copy: give the statement as a string, e.g. \"tcgen05_cp_32x128b_warpx4(...);\"")
    kernel = scale_b_missing_kernel().replace(SCALE_B_TODO, "                " + line.strip() + "\n")
    cases = [("mxfp8", 64, 0), ("nvfp4", 32, 1)] + [tuple(c) for c in hidden]
    for fmt, N, seed in cases:
        case = BlockScaledCase(fmt, N, seed)
        try:
            with using_backend("emulated"):
                got = run_teach_blockscaled(case, kernel=kernel)
        except CompileError as e:
            raise NotYet(f"the scale_B copy: the edited kernel does not compile\n"
                         "  hint: one statement ending in ';', e.g. a call of tcgen05_cp_32x128b_warpx4(taddr, desc)\n"
                         f"  {str(e)[:600]}") from None
        except EmuError as e:
            raise NotYet(f"the scale_B copy, {case.label()}: the emulator stopped the edited kernel\n"
                         "  hint: the emulator's report below names the instruction and the rule it breaks\n"
                         f"  {str(e)[:700]}\n"
                         "  rule: the scales are copied with tcgen05.cp.32x128b.warpx4 (every lane quarter gets "
                         "the copy), from SMEM the kernel filled and fenced, to TMEM columns it allocated") from None
        want = case.model()
        bad = np.argwhere(got != want)
        if bad.size:
            m, n = (int(x) for x in bad[0])
            raise NotYet(f"the scale_B copy, {case.label()}: {len(bad)} of {want.size} accumulators differ from "
                         f"the model; first D[{m}][{n}]: got {got[m, n]:#010x} "
                         f"({np.float32(got[m, n:n + 1].view(np.float32)[0]):.6g}), model {want[m, n]:#010x}\n"
                         "  hint: the MMA of atom a reads scale_B at [tsfb + 4 * a]; a column the copy did not write "
                         "holds whatever those columns held before\n"
                         "  rule: every scale the MMA reads must be in TMEM first: scale_B's atom a goes to TMEM "
                         "column tsfb + 4 * a with tcgen05.cp.32x128b.warpx4")
    print(f"correct: the scale_B copy — the edited kernel equals the model bit for bit on {len(cases)} tiles "
          "(MXFP8 and NVFP4)")
