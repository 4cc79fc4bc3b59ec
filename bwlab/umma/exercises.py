"""The checks of notebook 03's exercises: LBO and SBO of a K-major tile, the 64-bit SMEM descriptor,
the 32-bit instruction descriptor, the legal shapes of cta_group::1 and ::2, and the SBO of A filled in
inside the wgmma teaching kernel.

Every expected value comes from the stage's model (`tile_desc`, `make_smem_desc`, `make_instr_desc`,
`require_mma_shape`, `WgmmaCase.model`); the generic checks of `bwlab.exercises` (and
`check_function_explained`, which adds a line about the first differing case) say what is wrong. The
case whose SBO of A goes into the kernel is the student's own (`teach_sbo_case`, from `bwlab.variants`).
"""
from __future__ import annotations

import numpy as np

from ..exercises import NotYet, check_result, course_cases
from ..hw.swizzle import MODES, row_bytes
from ..exercises import check_function_explained
from ..multicast.exercises import matching_mistakes
from .descriptors import (LAYOUT_CODES_SM100, decode_smem_desc, descriptor_addresses, edit_descs, make_smem_desc,
                          tile_desc)
from .idesc import KINDS, make_instr_desc
from .rules import SHAPES, MmaRuleError, require_mma_shape

from .exercises_lowprec import (SCALE_B_TODO, check_bs_idesc, check_mx_scale, check_scale_b_copy,  # noqa: F401
                                check_sf_offset, scale_b_missing_kernel)

__all__ = ["check_lbo_sbo", "check_smem_desc", "check_instr_desc", "check_legal_shape", "TEACH_SBO_CASE",
           "TEACH_SBO_VARIANTS", "teach_sbo_case", "teach_sbo_text", "A_DESC_TEXT", "sbo_kernel", "check_teach_sbo",
           # notebook 09 (low precision): exercises_lowprec.py
           "check_mx_scale", "check_sf_offset", "check_bs_idesc", "check_scale_b_copy", "scale_b_missing_kernel",
           "SCALE_B_TODO"]


# -- Exercise: LBO and SBO of a K-major tile ---------------------------------------------------------
LBO_SBO_RULE = ("K-major, as CuTe's make_umma_desc / make_gmma_desc encode it: SBO = the step between 8-row "
                "groups along M/N (one swizzle atom: 8 rows x W bytes, W = 16/32/64/128 for none/32B/64B/128B); "
                "LBO = the step between the two 16-byte core matrices of one instruction's K: (rows / 8) x 128 B "
                "without a swizzle (the whole column of core matrices along M/N), unused with a swizzle (CuTe "
                "writes 16 B, encoded 1)")


def _lbo_sbo(swizzle, rows):
    d = tile_desc("K", swizzle, "f16", (rows, 64), 0)
    return d.leading_byte_offset, d.stride_byte_offset


def _explain_lbo_sbo(args, got, expected):
    swizzle, rows = args
    lbo, sbo = expected
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return a pair (LBO, SBO) in bytes"
    got = tuple(got)
    if None in got:
        return "no answer yet: compute both LBO and SBO"
    w = row_bytes(swizzle)
    if got == (sbo, lbo):
        return "LBO and SBO swapped: for K-major, SBO steps along M/N (8-row groups), LBO along K"
    if got[1] == w:
        return f"SBO {w} is one row of the atom; SBO jumps a whole 8-row group: 8 x {w} B"
    if got[1] == sbo // 2 or got[0] == lbo // 2 and lbo > 16:
        return "elements, not bytes (an f16 element is 2 bytes)"
    if swizzle != "none" and got[0] == 0:
        return ("the hardware ignores LBO in a swizzled K-major layout, but CuTe (and this exercise) encode "
                "16 B there")
    if swizzle == "none" and got[0] == 128:
        return (f"128 B is one core matrix; LBO jumps over the whole column of core matrices along M/N: "
                f"{rows} / 8 x 128 B")
    return None


LBO_SBO_SHOWN = [("128B", 128), ("none", 64), ("64B", 128), ("32B", 64)]   # every mode: SBO follows the atom


@course_cases("mma_lbo_sbo")
def check_lbo_sbo(fn, hidden=()) -> None:
    """`fn(swizzle, rows)` -> (LBO, SBO) in bytes of a K-major f16 tile of `rows` x 64 (first K slice),
    on one tile of each swizzle mode; `hidden`: more (swizzle, rows), course data."""
    cases = LBO_SBO_SHOWN + [tuple(c) for c in hidden]
    check_function_explained("(LBO, SBO) of a K-major tile", fn, cases, reference=_lbo_sbo, rule=LBO_SBO_RULE,
                             explain=_explain_lbo_sbo, more="" if hidden else "every mode at 16 to 256 rows",
                             hint="the descriptor printed above (128 x 64 f16, 128-byte swizzle): read its LBO and SBO "
                                  "fields, then ask what each one steps over")


# -- Exercise: the 64-bit SM100 SMEM descriptor -------------------------------------------------------
def _desc_rule() -> str:
    codes = ", ".join(f"{k} {v}" for k, v in LAYOUT_CODES_SM100.items())
    return ("SM100 shared-memory descriptor (PTX ISA tcgen05, Shared Memory Descriptor): bits 0-13 start "
            "address >> 4, 16-29 LBO >> 4, 32-45 SBO >> 4, 46-48 the fixed value 0b001, 49-51 base offset "
            f"(0 here), 52 LBO mode (0), 61-63 the swizzling mode ({codes})")


def _smem_desc(start, lbo, sbo, swizzle):
    return make_smem_desc(start, lbo, sbo, swizzle, arch="sm100")


def _explain_desc(args, got, expected):
    start, lbo, sbo, swizzle = args
    if not isinstance(got, (int, np.integer)):
        return f"return the descriptor as one int, got {type(got).__name__}"
    got = int(got)
    plain = start | lbo << 16 | sbo << 32 | 1 << 46 | (expected >> 61) << 61
    known = [(expected ^ (1 << 46), "bits 46-48 must hold 0b001 (the SM100 descriptor's fixed version field)"),
             (_smem_desc(start, sbo, lbo, swizzle), "LBO and SBO swapped: LBO goes to bits 16-29, SBO to 32-45"),
             (plain, "the offsets go in >> 4 (16-byte units): the descriptor keeps bits 4-17 of each")]
    if got & ~(7 << 61) == expected & ~(7 << 61):
        return f"the swizzling mode (bits 61-63) is wrong: {swizzle} is SM100 code {LAYOUT_CODES_SM100[swizzle]}"
    if swizzle in MODES:
        known.append((make_smem_desc(start, lbo, sbo, swizzle, arch="sm90"),
                      "that is the SM90 (wgmma) encoding: 2-bit swizzle code at 62-63, no version bits"))
    return matching_mistakes(known, got)


@course_cases("mma_smem_desc")
def check_smem_desc(fn, hidden=()) -> None:
    """`fn(start, lbo, sbo, swizzle)` -> the 64-bit SM100 descriptor (offsets in bytes, base offset 0);
    `hidden`: more cases, course data."""
    cases = [(0, 16, 1024, "128B"), (256, 4096, 128, "none")] + [tuple(c) for c in hidden]
    check_function_explained("the SM100 SMEM descriptor", fn, cases, reference=_smem_desc, rule=_desc_rule(),
                             explain=_explain_desc, more="" if hidden else "every layout, and start addresses "
                             "and offsets up to the fields' 14 bits",
                             hint="the descriptor the notebook printed for (0, 16, 1024, '128B'): decode it field by field "
                                  "and compare with yours")


# -- Exercise: the 32-bit instruction descriptor -----------------------------------------------------
def _idesc_rule() -> str:
    ab = {t: c for kind in ("f16", "tf32") for t, c in KINDS[kind][0].items()}
    d = KINDS["f16"][1]
    return ("tcgen05.mma instruction descriptor (PTX ISA tcgen05, Instruction descriptor; CuTe make_instr_desc), "
            f"dense: bits 4-5 D format ({', '.join(f'{k} {v}' for k, v in d.items())}), 7-9 A format and 10-12 "
            f"B format ({', '.join(f'{k} {v}' for k, v in ab.items())}), 15 A MN-major, 16 B MN-major, "
            "17-22 N >> 3, 24-28 M >> 4; every other bit 0")


def _idesc(ab, d, M, N, a_major, b_major):
    return make_instr_desc(ab, ab, d, M, N, a_major, b_major)


def _explain_idesc(args, got, expected):
    ab, d, M, N, a_major, b_major = args
    if not isinstance(got, (int, np.integer)):
        return f"return the descriptor as one int, got {type(got).__name__}"
    got = int(got)
    mn = expected & ~((0x1F << 24) | (0x3F << 17))

    def major_bits(a, b):
        return (expected & ~(3 << 15)) | (a == "MN") << 15 | (b == "MN") << 16

    known = [(mn | (M >> 4) << 23 | (N >> 3) << 17, "M >> 4 belongs at bits 24-28 (bit 23 is reserved)"),
             (mn | (M >> 4) << 24 | N << 17, "N goes in as N >> 3 (bits 17-22 hold N / 8)"),
             (mn | M << 24 | (N >> 3) << 17, "M goes in as M >> 4 (bits 24-28 hold M / 16)"),
             (mn | (N >> 3) << 24 | (M >> 4) << 17, "M and N swapped: N >> 3 at bits 17-22, M >> 4 at 24-28"),
             (major_bits(b_major, a_major), "the major bits swapped: bit 15 is A's, bit 16 is B's"),
             (major_bits("MN" if a_major == "K" else "K", "MN" if b_major == "K" else "K"),
              "the major bits inverted: 0 means K-major, 1 MN-major (transposed)")]
    if got & ~0x30 == expected & ~0x30:
        return f"the D format (bits 4-5) is wrong: {d} is code {KINDS['f16'][1][d]}"
    return matching_mistakes(known, got)


IDESC_SHOWN = [("f16", "f32", 128, 256, "K", "K"), ("bf16", "f32", 64, 64, "K", "MN")]


@course_cases("mma_instr_desc")
def check_instr_desc(fn, hidden=()) -> None:
    """`fn(ab, d, M, N, a_major, b_major)` -> the 32-bit instruction descriptor (cta_group::1, dense);
    `hidden`: more cases, course data."""
    check_function_explained("the instruction descriptor", fn, IDESC_SHOWN + [tuple(c) for c in hidden],
                             reference=_idesc, rule=_idesc_rule(), explain=_explain_idesc,
                             more="" if hidden else "f16 and tf32 inputs, an f16 accumulator, every pair of "
                             "majors, N from 8 to 256",
                             hint="CuTe's make_instr_desc<half_t, half_t, float, 128, 256, K, K>, printed in the notebook: "
                                  "decode it field by field and compare with yours")


# -- Exercise: which shapes are legal for cta_group::1 and ::2 ---------------------------------------
def _shape_rule() -> str:
    rows = [r for r in SHAPES if "f16" in r.kinds]
    return (f"{rows[0].section}, kind::f16: " + "; ".join(
        f"cta_group::{r.cta_group} takes M in {r.Ms} and {r.limit}" for r in rows))


def _legal(M, N, cta_group):
    try:
        require_mma_shape("f16", M, N, cta_group)
    except MmaRuleError:
        return False
    return True


def _explain_shape(args, got, expected):
    M, N, g = args
    try:
        require_mma_shape("f16", M, N, g)
    except MmaRuleError as e:
        return f"illegal: {e}"
    row = next(r for r in SHAPES if "f16" in r.kinds and r.cta_group == g)
    return f"legal: cta_group::{g} takes M in {row.Ms} and {row.limit}"


@course_cases("mma_legal_shape")
def check_legal_shape(fn, hidden=()) -> None:
    """`fn(M, N, cta_group)` -> True when M x N is a legal dense kind::f16 tcgen05.mma shape; `hidden`:
    more (M, N, cta_group), course data."""
    cases = [(128, 256, 1), (256, 128, 1), (256, 128, 2), (64, 8, 1), (128, 8, 2), (64, 64, 2), (128, 100, 1)]
    cases += [tuple(c) for c in hidden]
    check_function_explained("legal tcgen05.mma shapes", fn, cases, reference=_legal, rule=_shape_rule(),
                             explain=_explain_shape, more="" if hidden else "every M from 32 to 512 with N "
                             "from 0 to 512, both cta_groups",
                             family=lambda rng: (16 * int(rng.integers(2, 33)), 8 * int(rng.integers(0, 65)),
                                                 int(rng.integers(1, 3))),
                             family_text="M 32..512 in steps of 16, N 0..512 in steps of 8, both cta_groups")


# -- Exercise: SBO of A, filled in inside the wgmma teaching kernel ------------------------------------
# The case the exercise runs, the self-study variant: A K-major in the 64-byte swizzle, B K-major in the
# 128-byte swizzle. Every student's case (bwlab.variants): what teach_wgmma.cu runs (m64n64k16 f16, both
# operands K-major), A in another swizzle than the self-study one (its SBO is what the exercise asks), B
# in any, K = 32 .. 128 where both operands' rows hold whole swizzle rows; A at byte 0 and B at 16384 of
# the kernel's 32 KiB buffer.
TEACH_SBO_CASE = dict(dtype="f16", N=64, K=64, a_major="K", a_swizzle="64B", b_major="K", b_swizzle="128B")
TEACH_SBO_VARIANTS = (TEACH_SBO_CASE,) + tuple(
    dict(TEACH_SBO_CASE, K=k, a_swizzle=a_sw, b_swizzle=b_sw)
    for a_sw in ("none", "32B", "128B") for b_sw in MODES for k in (32, 64, 128)
    if (2 * k) % row_bytes(a_sw) == 0 and (2 * k) % row_bytes(b_sw) == 0)
A_DESC_TEXT = "a_descs[kb] + base"


def teach_sbo_case(token: str | None = None) -> dict:
    """This student's case of exercise 3.5: WgmmaCase(**teach_sbo_case())."""
    from .. import variants
    return dict(variants.pick("mma_teach_sbo", TEACH_SBO_VARIANTS, token))


def teach_sbo_text(token: str | None = None) -> str:
    c = teach_sbo_case(token)
    return (f"A {c['a_major']}-major, 64 x {c['K']} {c['dtype']}, swizzle {c['a_swizzle']}; "
            f"B {c['b_major']}-major, {c['N']} x {c['K']}, swizzle {c['b_swizzle']}")


def sbo_kernel(sbo: int):
    """teach_wgmma.cu with the SBO field of every A descriptor set in the kernel from `sbo` (bytes); the
    descriptors from Python then carry SBO 0 for A."""
    from ..lab import TeachingKernel
    field = f"((u64)((({sbo}u) >> 4) & 0x3FFF) << 32)"
    return TeachingKernel("teach_wgmma.cu").replace(A_DESC_TEXT, f"(a_descs[kb] | {field} /* your SBO */) + base")


@course_cases("mma_teach_sbo")
def check_teach_sbo(sbo, hidden=()) -> None:
    """`sbo` (bytes) goes into the SBO field of A's descriptors inside teach_wgmma.cu. On a Hopper GPU the
    edited kernel runs in a worker process; elsewhere the wgmma model executes the same descriptors.
    Either way D is compared with the model of the right descriptors, naming the first differing element.
    One value, so `hidden` adds no case."""
    from .. import device
    from ..lab import CompileError
    from .case import WgmmaCase
    case = WgmmaCase(**teach_sbo_case())
    ad, bd = case.descriptors()
    right = tile_desc(case.a_major, case.a_swizzle, case.dtype, (case.M, case.K), 0)
    want, lbo = right.stride_byte_offset, right.leading_byte_offset
    width = row_bytes(case.a_swizzle)
    name = f"the SBO of A ({case.a_major}-major, {case.a_swizzle} swizzle, {case.M} x {case.K} {case.dtype})"
    atom = (f"one swizzle atom = 8 rows x {width} B here" if case.a_swizzle != "none" else
            f"one core matrix = 8 rows x {width} B here (no swizzle)")
    rule = (f"SBO of a K-major operand: the byte step between its 8-row groups, {atom}; the kernel stores it "
            ">> 4 in bits 32-45")
    mistakes = {}
    rows = "atom rows" if case.a_swizzle != "none" else "core-matrix rows (no swizzle)"
    for value, why in ((8 * row_bytes("128B"), f"the 128-byte swizzle's atom (8 x 128 B); this A's {rows} are "
                                                f"{width} bytes"),
                       (width, "one row; SBO jumps 8 rows"),
                       (lbo, "that is LBO's value" + (" (unused here)" if case.a_swizzle != "none" else
                                                      ": the step along K, between core matrices")),
                       (want >> 4, "the encoded value; the kernel shifts your byte count by 4 itself"),
                       (want // 2, "elements, not bytes")):
        if value != want:
            mistakes.setdefault(value, why)
    if sbo is None or sbo is Ellipsis:
        raise NotYet(f"{name}: no answer yet — replace the placeholder with SBO in bytes.\n  rule: {rule}")
    if isinstance(sbo, bool) or not isinstance(sbo, (int, np.integer)) or not 0 <= int(sbo) < 1 << 32:
        raise NotYet(f"{name}: give SBO as a non-negative int (bytes), got {sbo!r}.\n  rule: {rule}")
    sbo = int(sbo)
    if sbo % 16 or sbo >= 1 << 18:
        raise NotYet(f"{name}: {sbo} cannot be a descriptor offset: the field keeps bits 4-17 of a byte offset, "
                     f"so SBO is a multiple of 16 below 256 KiB (the kernel would read "
                     f"{((sbo >> 4) & 0x3FFF) << 4}).\n"
                     f"  rule: {rule}")
    mine = sbo_kernel(sbo)
    try:
        mine.compile("sm_90a")
    except CompileError as e:
        raise NotYet(f"{name}: the edited kernel does not compile.\n{e}") from None
    a_zero = edit_descs(ad, "sm90", stride_byte_offset=0)      # what Python hands the edited kernel
    a_mine = edit_descs(ad, "sm90", stride_byte_offset=sbo)    # what the kernel makes of them
    last = max(int(descriptor_addresses(decode_smem_desc(int(d), "sm90"), case.a_major, case.dtype, case.M).max())
               for d in a_mine)
    from .runner import TEACH_SMEM_BYTES
    if last + 2 > TEACH_SMEM_BYTES:
        raise NotYet(f"{name}: with SBO = {sbo} the tensor core would read A up to byte {last + 1}, past the "
                     f"kernel's {TEACH_SMEM_BYTES}-byte buffer.\n  rule: {rule}")
    info = device.gpu_info()
    emulated = device.tier("tma") == "emulated"   # no Hopper here: the whole kernel runs in the PTX emulator
    if emulated or (info is not None and info.has_wgmma):
        from ..emu import EmuError
        from ..runtime import MbarrierTimeout
        from ..sandbox import KernelFault, KernelHang
        from .runner import run_teach_wgmma
        try:
            got = run_teach_wgmma(case, kernel=mine, descriptors=(a_zero, bd))
        except (KernelFault, KernelHang, MbarrierTimeout, EmuError) as e:
            raise NotYet(f"{name}: the edited kernel did not finish: {e}\n  rule: {rule}") from None
        source = "your kernel in the PTX emulator" if emulated else f"your kernel on {info.name}"
    else:
        got, source = case.model(descriptors=(a_mine, bd)), "the wgmma model, executing your descriptors"
    result = case.check(got, source=source)
    if result.ok:
        check_result(name, result, note=f"SBO = {sbo} B; {result}")
        return
    diagnosis = mistakes.get(sbo)
    raise NotYet(f"{name}: with SBO = {sbo} B, D is not A @ B^T:\n{result}\n  rule: {rule}"
                 + (f"\n  your value: {diagnosis}" if diagnosis else ""))
