"""Every combination of majors and SMEM layouts for A and B, checked through the model against NumPy
and the tcgen05.mma rule tables (PTX ISA tcgen05 "Transpose and Negate operations" and "Shared Memory
Matrix Layouts"): notebook 03's survey in one call; and `wgmma_cases`, the same coverage as wgmma cases
for the H100 (the validation's set)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..hw.swizzle import MODES, span_bytes
from ..util import round_up
from .canonical import MAJORS, atom_shape, instr_k
from .case import UmmaCase, WgmmaCase
from .idesc import MmaRuleError

# Every layout an operand may sit in: both majors x the four swizzles, and SM100's tf32-only
# 128B-with-32B-atoms layout (MN-major).
OPERAND_LAYOUTS = tuple((m, s) for m in MAJORS for s in MODES) + (("MN", "128B_base32B"),)


@dataclass
class LayoutSurvey:
    """What `layout_survey` found: legal cases per operand type, the legal ones whose model D differs
    from NumPy (ab, a_major, a_swizzle, b_major, b_swizzle), and the refused ones (ab, the rule)."""
    legal: dict = field(default_factory=dict)
    mismatches: list = field(default_factory=list)
    refused: list = field(default_factory=list)


def layout_survey(types=("f16", "bf16", "tf32"), M: int = 128, N: int = 128) -> LayoutSurvey:
    """Build an M x N UmmaCase (f32 D, A at SMEM 1024, B at 65536) for every operand type and every
    pair of operand layouts; a case the rule tables refuse is recorded with its rule, a legal one is
    run through the model (`read_operand`, `tcgen05_mma`) and compared with NumPy bit for bit."""
    out = LayoutSurvey()
    for ab in types:
        for am, asw in OPERAND_LAYOUTS:
            for bm, bsw in OPERAND_LAYOUTS:
                if ab != "tf32" and "128B_base32B" in (asw, bsw):
                    continue                 # the tf32 layout; not modelled for 16-bit operands
                k = max(atom_shape(am, asw, ab)[1], atom_shape(bm, bsw, ab)[1], instr_k(ab))
                try:
                    case = UmmaCase(ab, "f32", M, N, k, am, asw, bm, bsw, 1024, 65536)
                except MmaRuleError as e:
                    out.refused.append((ab, str(e)))
                    continue
                out.legal[ab] = out.legal.get(ab, 0) + 1
                if not np.array_equal(case.d_from_tmem(case.model()), case.reference()):
                    out.mismatches.append((ab, am, asw, bm, bsw))
    return out


def wgmma_cases(seed: int = 0):
    """Every layout x swizzle for A and for B, in f16 and bf16 (128 cases), with N and the number of
    K blocks varied, both tiles at non-zero offsets aligned to their swizzle span; then the
    exploratory cases with tiles off their span boundary (returned separately)."""
    rng = np.random.default_rng(seed)
    regular, n_cycle, k_cycle = [], [256, 8, 64, 16, 128, 32], [64, 128, 32, 16]
    i = 0
    for dtype in ("f16", "bf16"):
        for a_major in MAJORS:
            for a_sw in MODES:
                for b_major in MAJORS:
                    for b_sw in MODES:
                        b_min_n = atom_shape(b_major, b_sw, dtype)[0]
                        n = next(x for x in n_cycle[i % 6:] + n_cycle if x % b_min_n == 0)
                        k_atom = max(atom_shape(a_major, a_sw, dtype)[1], atom_shape(b_major, b_sw, dtype)[1], 16)
                        k = round_up(k_cycle[i % 4], k_atom)
                        span_b = span_bytes(b_sw)
                        a_base = span_bytes(a_sw) * int(rng.integers(1, 4)) if a_sw != "none" \
                            else 16 * int(rng.integers(1, 64))
                        a_end = a_base + 64 * k * 2
                        b_base = round_up(a_end + int(rng.integers(0, 3)) * 1024 + 16 * int(rng.integers(0, 8)), span_b)
                        regular.append(WgmmaCase(dtype, n, k, a_major, a_sw, b_major, b_sw, a_base, b_base,
                                                 accumulate=bool(i % 3 == 1), seed=seed * 1000 + i))
                        i += 1
    exploratory = []
    for j, (sw, major) in enumerate([(s, m) for s in ("128B", "64B", "32B") for m in MAJORS]):
        span = span_bytes(sw)
        shift = 128 * (1 + j % (span // 128 - 1))        # a whole number of 128-byte rows, not of the span
        k = round_up(64, atom_shape(major, sw, "f16")[1])
        a_base = 4096 + shift
        bo = (a_base >> 7) & 7
        for a_bo in (0, bo):
            exploratory.append(WgmmaCase("f16", 64, k, major, sw, "K", "none", a_base,
                                         round_up(a_base + 64 * k * 2, 1024), a_base_offset=a_bo,
                                         seed=seed * 1000 + 500 + j))
    return regular, exploratory
