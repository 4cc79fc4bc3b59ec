"""Every combination of majors and SMEM layouts for A and B, checked through the model against NumPy
and the tcgen05.mma rule tables (PTX ISA tcgen05 "Transpose and Negate operations" and "Shared Memory
Matrix Layouts"): notebook 03's survey in one call."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..hw.swizzle import MODES
from .canonical import MAJORS, atom_shape, instr_k
from .case import UmmaCase
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
