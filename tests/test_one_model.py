"""One model per hardware mechanism: no stage keeps its own copy of a mechanism that bwlab.hw models.

Each rule names the mechanism, the one file allowed to define it, and how a copy would show itself.
"""
import ast
import re
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "bwlab"
FILES = sorted(p for p in PKG.rglob("*.py"))


def _defs(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            yield node.name


# (mechanism, file that owns it, names that only that file may define)
OWNERS = [
    ("mbarrier", "hw/mbarrier.py", {"Mbarrier", "MbarrierModel", "MbarrierState"}),
    ("shared-memory banks", "hw/banks.py", {"wavefronts", "bank_wavefronts", "smem_bank", "BankReport"}),
    ("TMEM addressing and images", "hw/tmem.py", {"encode_address", "decode_address", "tmem_address",
                                                  "new_tmem", "new_image", "format_address",
                                                  "warp_lane_range"}),
    ("element types", "hw/dtypes.py", {"tf32_round", "_tf32_round", "np_dtype", "from_dtype_bits",
                                       "to_dtype_bits", "decode_values", "encode_values"}),
    ("swizzle", "hw/swizzle.py", {"Swizzle", "swizzle_of", "span_bytes"}),
    ("integer helpers", "util.py", {"round_up", "_round_up", "ceil_div", "_ceil_div"}),
]


@pytest.mark.parametrize("mechanism,owner,names", OWNERS, ids=[o[0] for o in OWNERS])
def test_mechanism_defined_once(mechanism, owner, names):
    where = {}
    for p in FILES:
        for name in _defs(p):
            if name in names:
                where.setdefault(name, []).append(str(p.relative_to(PKG)))
    strays = {n: [f for f in fs if f != owner] for n, fs in where.items()}
    strays = {n: fs for n, fs in strays.items() if fs}
    assert not strays, f"{mechanism} is modelled in {owner}; also defined in {strays}"


def test_one_dtype_table():
    """Only hw/dtypes.py names the driver's tensor-map element types."""
    users = [str(p.relative_to(PKG)) for p in FILES
             if "CU_TENSOR_MAP_DATA_TYPE_" in p.read_text() and p.relative_to(PKG).as_posix() != "hw/dtypes.py"]
    assert not users, f"tensor-map element types named outside bwlab/hw/dtypes.py: {users}"


def test_one_list_of_swizzle_modes():
    pat = re.compile(r"""["']none["']\s*,\s*["']32B["']\s*,\s*["']64B["']\s*,\s*["']128B["']""")
    users = [str(p.relative_to(PKG)) for p in FILES
             if pat.search(p.read_text()) and p.relative_to(PKG).as_posix() != "hw/swizzle.py"]
    assert not users, f"a list of the swizzle modes outside bwlab/hw/swizzle.py: {users}"


def test_no_hand_rolled_ceil_div():
    pat = re.compile(r"-\s*\(\s*-")
    users = [str(p.relative_to(PKG)) for p in FILES
             if pat.search(p.read_text()) and p.relative_to(PKG).as_posix() != "util.py"]
    assert not users, f"-(-x // m) outside bwlab/util.py (use util.ceil_div): {users}"
