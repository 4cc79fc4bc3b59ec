"""Which recording holds which of notebook 03's wgmma cases (an H100 runs wgmma, not tcgen05.mma):

* `umma_wgmma_layouts` — D of a few layout cases run by the validation kernel (`layout_cases()`);
* `umma_teach_wgmma`   — D of the teaching kernel teach_wgmma.cu for its case (`teach_case()`), and for
  the descriptor edits the notebook makes (`EDITS`, `edit_case(edit)`: arrays `d_<edit>` beside it).

`WgmmaCase(...).result()` / `.results()` find these; `bwlab/checks/record_umma.py` records them.
"""
from __future__ import annotations

from ..results import Recorded
from .case import WgmmaCase
from .survey import wgmma_cases

__all__ = ["RECORDED", "TEACH_CASE", "EDITS", "layout_cases", "teach_case", "edited_descriptors", "edit_case"]

# The teaching kernel's case and the edits notebook 03 makes to its descriptors: (operand, fields).
TEACH_CASE = dict(dtype="f16", N=64, K=64, a_major="K", a_swizzle="128B", b_major="K", b_swizzle="128B")
EDITS = {
    "a_sbo512": ("A", {"stride_byte_offset": 512}),        # 8-row groups of A 512 bytes apart, not 1024
    "a_swizzle64B": ("A", {"swizzle": "64B"}),             # the wrong swizzle code for A
    "b_lbo4096": ("B", {"leading_byte_offset": 4096}),     # unused in a swizzled K-major layout
}


def layout_cases():
    """The few validation cases the notebook shows (every 22nd of the 128 regular ones)."""
    return wgmma_cases()[0][3::22]


def teach_case(kernel="teach_wgmma.cu") -> WgmmaCase:
    return WgmmaCase(**TEACH_CASE, kernel=kernel)


def edited_descriptors(case: WgmmaCase, operand: str, fields: dict):
    """The case's (A, B) descriptors with `fields` replaced in those of `operand` ('A' or 'B')."""
    from .descriptors import edit_descs
    ad, bd = case.descriptors()
    return (edit_descs(ad, "sm90", **fields), bd) if operand == "A" else (ad, edit_descs(bd, "sm90", **fields))


def edit_case(edit: str) -> WgmmaCase:
    """The teaching kernel given the descriptors of EDITS[edit]."""
    case = teach_case()
    return case.with_descriptors(edited_descriptors(case, *EDITS[edit]))


RECORDED = (
    *(Recorded("umma_wgmma_layouts", f"d{i}", lambda i=i: layout_cases()[i]) for i in range(len(layout_cases()))),
    Recorded("umma_teach_wgmma", "d", teach_case),
    *(Recorded("umma_teach_wgmma", f"d_{e}", lambda e=e: edit_case(e)) for e in EDITS),
)
