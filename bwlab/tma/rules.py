"""The rules of `cuTensorMapEncodeTiled`, as one table.

Each row of `RULES` is one rule: its name (the `.rule` of the `TensorMapError` it raises), the limit in
words, the source that states it (CUDA driver API "Tensor Map Object Management", cuTensorMapEncodeTiled,
by parameter; PTX ISA 5.5 "Tensors" where the instruction adds a rule the driver does not check), the
check, and one legal and one illegal example. `TensorMap` validates itself by walking this table in order
(`require_tensor_map`); `tests/test_tma_rules.py` walks it too: every legal example is accepted and every
illegal one refused with that rule and its limit.

Where bwlab is stricter than the documentation, the row says so in `note`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

from ..hw.dtypes import element_type
from ..hw.swizzle import MODES as SWIZZLE_MODES
from ..hw.swizzle import row_bytes

__all__ = ["Rule", "RULES", "RULES_BY_NAME", "TensorMapError", "require_tensor_map", "require_global_address",
           "TMAP_DTYPES", "MAX_RANK", "MAX_BOX", "MAX_ELEMENT_STRIDE", "MAX_GLOBAL_DIM", "MAX_GLOBAL_STRIDE",
           "SWIZZLE_ENUM", "INTERLEAVE_ENUM", "L2_ENUM", "OOB_ENUM", "swizzle_width", "dtype_name"]

# The element types a tensor map takes, by their NumPy-style names (PTX spellings such as 'f16' are
# accepted too and stored under these names). The facts about each (width, driver enumerator) come
# from bwlab.hw.dtypes; the order is the order the validation's random cases walk them in.
TMAP_DTYPES = ("uint8", "int8", "uint16", "int16", "float16", "bfloat16", "uint32", "int32", "float32",
               "tf32", "uint64", "int64", "float64")
_BY_NAME = {n: element_type(n) for n in TMAP_DTYPES}
_PTX_TO_NAME = {t.name: n for n, t in _BY_NAME.items()}

SWIZZLE_ENUM = {m: f"CU_TENSOR_MAP_SWIZZLE_{m.upper()}" for m in SWIZZLE_MODES}
INTERLEAVE_ENUM = {"none": "CU_TENSOR_MAP_INTERLEAVE_NONE", "16B": "CU_TENSOR_MAP_INTERLEAVE_16B",
                   "32B": "CU_TENSOR_MAP_INTERLEAVE_32B"}
L2_ENUM = {"none": "CU_TENSOR_MAP_L2_PROMOTION_NONE", "64B": "CU_TENSOR_MAP_L2_PROMOTION_L2_64B",
           "128B": "CU_TENSOR_MAP_L2_PROMOTION_L2_128B", "256B": "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"}
OOB_ENUM = {"zero": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE",
            "nan": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"}

MAX_RANK = 5
MAX_BOX = 256
MAX_ELEMENT_STRIDE = 8
MAX_GLOBAL_DIM = 1 << 32
MAX_GLOBAL_STRIDE = 1 << 40  # exclusive

DRIVER = "CUDA driver API, Tensor Map Object Management, cuTensorMapEncodeTiled"
PTX_TENSORS = "PTX ISA 5.5 Tensors"


class TensorMapError(ValueError):
    """A tensor-map parameter breaks a rule of cuTensorMapEncodeTiled (or of the TMA instruction).

    `.rule` is the rule's name, e.g. 'box-inner-bytes'; `.limit` the limit in words (for the rules of
    `RULES`); the message gives the values.
    """

    def __init__(self, rule: str, message: str, limit: str | None = None):
        self.rule = rule
        self.limit = limit
        super().__init__(f"[{rule}] {message}" + (f" (rule: {limit})" if limit else ""))


def swizzle_width(mode: str) -> int:
    """Bytes one box row may take under this swizzle (32/64/128); 0 for 'none' (no limit)."""
    return 0 if mode == "none" else row_bytes(mode)


def dtype_name(name) -> str | None:
    """The tensor-map name of an element type given in either spelling; None if a tensor map has none."""
    if isinstance(name, str) and name in _BY_NAME:
        return name
    key = getattr(name, "name", name)
    return _PTX_TO_NAME.get(key) if isinstance(key, str) else None


def _ints(values):
    """A tuple of ints, or None if `values` is not a sequence of integers."""
    try:
        out = tuple(int(v) for v in values)
    except (TypeError, ValueError):
        return None
    return out if all(v == o for v, o in zip(out, values)) else None


class Draft:
    """The raw arguments of a TensorMap while its rules are checked; each property is read only by
    rules that come after the rules it needs."""

    def __init__(self, dtype, global_shape, box_shape, global_strides=None, element_strides=None,
                 swizzle="none", interleave="none", l2_promotion="none", oob_fill="zero"):
        self.raw = dict(dtype=dtype, global_shape=global_shape, box_shape=box_shape,
                        global_strides=global_strides, element_strides=element_strides)
        self.swizzle, self.interleave, self.l2_promotion, self.oob_fill = swizzle, interleave, l2_promotion, oob_fill

    @cached_property
    def dtype(self) -> str:
        return dtype_name(self.raw["dtype"])

    @cached_property
    def elem(self) -> int:
        return _BY_NAME[self.dtype].bytes

    @cached_property
    def shape(self):
        return _ints(self.raw["global_shape"])

    @property
    def rank(self) -> int:
        return len(self.shape)

    @cached_property
    def box(self):
        return _ints(self.raw["box_shape"])

    @cached_property
    def es(self):
        es = self.raw["element_strides"]
        return (1,) * len(self.shape or ()) if es is None else _ints(es)

    @property
    def packed(self) -> bool:
        return self.raw["global_strides"] is None

    @cached_property
    def strides(self):
        if not self.packed:
            return _ints(self.raw["global_strides"])
        out, acc = [], self.shape[0] * self.elem
        for d in self.shape[1:]:
            out.append(acc)
            acc *= d
        return tuple(out)

    @property
    def stride_align(self) -> int:
        return 32 if self.interleave == "32B" else 16


# ---- the checks: each returns None, or what is wrong with the values ---------------------------------
def _dtype(d):
    if d.dtype is None:
        return f"dtype must be one of {', '.join(TMAP_DTYPES)}; got {d.raw['dtype']!r}"


def _shape_lengths(d):
    for what in ("global_shape", "box_shape"):
        if _ints(d.raw[what]) is None:
            return f"{what} must be a sequence of integers, got {d.raw[what]!r}"
    if len(d.box) != d.rank:
        return f"box_shape {d.box} must have one entry per dimension of global_shape {d.shape} ({d.rank})"
    if d.es is None:
        return f"element_strides must be a sequence of integers, got {d.raw['element_strides']!r}"
    if len(d.es) != d.rank:
        return f"element_strides {d.es} must have {d.rank} entries"
    if not d.packed:
        if d.strides is None:
            return f"global_strides must be a sequence of integers, got {d.raw['global_strides']!r}"
        if d.rank and len(d.strides) != d.rank - 1:
            return (f"global_strides {d.strides} must have rank-1 = {d.rank - 1} entries (the byte strides of "
                    "dims 1..rank-1)")


def _rank(d):
    if not 1 <= d.rank <= MAX_RANK:
        return f"tensor rank must be 1..{MAX_RANK}; global_shape {d.shape} has {d.rank}"


def _enum(name, table):
    def check(d):
        v = getattr(d, name)
        if v not in table:
            return f"{name} must be one of {', '.join(repr(k) for k in table)}; got {v!r}"
    return check


def _interleave_rank(d):
    if d.interleave != "none" and d.rank < 3:
        return (f"interleave={d.interleave!r} needs a tensor of rank >= 3 (NC/8HWC8-style layouts); "
                f"this one has rank {d.rank}")


def _global_dim(d):
    for i, n in enumerate(d.shape):
        if not 1 <= n <= MAX_GLOBAL_DIM:
            return f"global_shape[{i}] = {n} must be in 1..2^32"


def _global_stride_multiple(d):
    if d.packed and any(s % 16 for s in d.strides):
        return (f"the packed byte strides {d.strides} of global_shape {d.shape} ({d.dtype}, {d.elem} B) are not "
                "all multiples of 16; pass global_strides with each row padded to 16 bytes")
    for i, s in enumerate(d.strides, start=1):
        if s <= 0 or s % d.stride_align:
            return (f"global stride of dim {i} = {s} bytes must be a positive multiple of {d.stride_align}"
                    + (" (interleave='32B')" if d.stride_align == 32 else ""))


def _global_stride_limit(d):
    for i, s in enumerate(d.strides, start=1):
        if s >= MAX_GLOBAL_STRIDE:
            return f"global stride of dim {i} = {s} bytes must be < 2^40"


def _box_dim(d):
    for i, b in enumerate(d.box):
        if not 1 <= b <= MAX_BOX:
            return f"box_shape[{i}] = {b} must be in 1..{MAX_BOX}"


def _box_inner_bytes(d):
    if (d.box[0] * d.elem) % 16:
        return (f"box_shape[0] * element size = {d.box[0]} * {d.elem} = {d.box[0] * d.elem} bytes must be a "
                "multiple of 16")


def _element_stride(d):
    for i, e in enumerate(d.es):
        if not 1 <= e <= MAX_ELEMENT_STRIDE:
            return f"element_strides[{i}] = {e} must be in 1..{MAX_ELEMENT_STRIDE}"


def _element_stride_dim0(d):
    if d.interleave == "none" and d.es[0] != 1:
        return (f"element_strides[0] = {d.es[0]}: without interleave the traversal stride of dimension 0 must "
                "be 1 (the driver ignores it)")


def _swizzle_span(d):
    span = swizzle_width(d.swizzle)
    if d.interleave == "none" and span and d.box[0] * d.elem > span:
        return (f"box inner dimension {d.box[0]} * {d.elem} = {d.box[0] * d.elem} bytes exceeds the {d.swizzle} "
                f"swizzle span ({span} bytes): with swizzle the inner box must be <= {span} bytes "
                f"({span // d.elem} elements of {d.dtype})")


def _interleave_swizzle(d):
    if d.interleave == "32B" and d.swizzle != "32B":
        return f"interleave='32B' requires swizzle='32B', got swizzle={d.swizzle!r}"


def _oob_fill_nan(d):
    if d.oob_fill == "nan" and not _BY_NAME[d.dtype].is_float:
        return (f"oob_fill='nan' (FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA) needs a floating-point dtype; "
                f"{d.dtype} is not one")


@dataclass(frozen=True)
class Rule:
    name: str                     # TensorMapError.rule
    limit: str                    # the limit, in words
    source: str                   # where it is stated
    check: Callable = field(repr=False)
    legal: dict = field(repr=False, default_factory=dict)    # changes to BASE_EXAMPLE that obey it
    illegal: dict = field(repr=False, default_factory=dict)  # changes to BASE_EXAMPLE that break only it
    note: str = ""                # where bwlab is stricter than the source, and why


# The example every row's legal/illegal changes apply to: a float16 tensor of 32 rows x 64, box 64 x 8.
BASE_EXAMPLE = dict(dtype="float16", global_shape=(64, 32), box_shape=(64, 8))
_IL = dict(global_shape=(64, 4, 4), box_shape=(8, 4, 4))  # a rank-3 tensor for the interleave rules

RULES = (
    Rule("dtype", f"tensorDataType one of {', '.join(TMAP_DTYPES)}", f"{DRIVER}: tensorDataType", _dtype,
         dict(dtype="bf16"), dict(dtype="float8"),
         note="int8/int16 travel as UINT8/UINT16 (a copy moves bits); the 6/4-bit types are not offered"),
    Rule("shape-lengths", "globalDim, boxDim, elementStrides: one integer per dimension; globalStrides: rank - 1",
         f"{DRIVER}: globalDim, globalStrides, boxDim, elementStrides", _shape_lengths,
         dict(global_strides=(128,), element_strides=(1, 2)), dict(box_shape=(64,))),
    Rule("rank", f"tensorRank in 1..{MAX_RANK}", f"{DRIVER}: tensorRank", _rank,
         dict(global_shape=(16,) * 5, box_shape=(8,) * 5), dict(global_shape=(16,) * 6, box_shape=(16,) * 6)),
    Rule("swizzle", f"swizzle one of {', '.join(SWIZZLE_ENUM)}", f"{DRIVER}: swizzle (CUtensorMapSwizzle)",
         _enum("swizzle", SWIZZLE_ENUM), dict(box_shape=(16, 8), swizzle="32B"), dict(swizzle="16B"),
         note="the 128B_ATOM_* modes of newer drivers (sm_100) are not modelled"),
    Rule("interleave", f"interleave one of {', '.join(INTERLEAVE_ENUM)}", f"{DRIVER}: interleave",
         _enum("interleave", INTERLEAVE_ENUM), dict(_IL, interleave="16B"), dict(interleave="8B")),
    Rule("l2-promotion", f"l2Promotion one of {', '.join(L2_ENUM)}", f"{DRIVER}: l2Promotion",
         _enum("l2_promotion", L2_ENUM), dict(l2_promotion="256B"), dict(l2_promotion="512B")),
    Rule("oob-fill", f"oobFill one of {', '.join(OOB_ENUM)}", f"{DRIVER}: oobFill", _enum("oob_fill", OOB_ENUM),
         dict(oob_fill="nan"), dict(oob_fill="inf")),
    Rule("interleave-rank", "interleave other than none needs tensorRank >= 3", f"{DRIVER}: tensorRank",
         _interleave_rank, dict(_IL, interleave="16B"), dict(interleave="16B")),
    Rule("global-dim", "globalDim[i] in 1..2^32", f"{DRIVER}: globalDim", _global_dim,
         dict(dtype="uint8", global_shape=(2**32, 1), box_shape=(256, 1), global_strides=(2**32,)),
         dict(global_shape=(64, 0))),
    Rule("global-stride-multiple", "globalStrides[i] a positive multiple of 16 bytes (32 with interleave 32B)",
         f"{DRIVER}: globalStrides", _global_stride_multiple, dict(global_strides=(144,)),
         dict(global_strides=(136,))),
    Rule("global-stride-limit", "globalStrides[i] < 2^40 bytes", f"{DRIVER}: globalStrides", _global_stride_limit,
         dict(global_strides=(2**40 - 16,)), dict(global_strides=(2**40,))),
    Rule("box-dim", f"boxDim[i] in 1..{MAX_BOX}", f"{DRIVER}: boxDim", _box_dim,
         dict(global_shape=(64, 300), box_shape=(8, 256)), dict(box_shape=(64, 257))),
    Rule("box-inner-bytes", "boxDim[0] x element size a multiple of 16 bytes", f"{DRIVER}: boxDim", _box_inner_bytes,
         dict(box_shape=(8, 8)), dict(box_shape=(4, 8)),
         note="documented for interleave none; the H100's driver (580) refused an 8-byte inner box with "
              "interleave too, so bwlab asks for it always"),
    Rule("element-stride", f"elementStrides[i] in 1..{MAX_ELEMENT_STRIDE}", f"{DRIVER}: elementStrides",
         _element_stride, dict(element_strides=(1, 8)), dict(element_strides=(1, 9))),
    Rule("element-stride-dim0", "elementStrides[0] = 1 without interleave",
         f"{PTX_TENSORS}, Traversal-Stride (5.5.3.2)", _element_stride_dim0,
         dict(_IL, interleave="16B", element_strides=(2, 1, 1)), dict(element_strides=(2, 1)),
         note="the driver ignores elementStrides[0] without interleave; the PTX ISA says it must be 1"),
    Rule("swizzle-span", "with interleave none and a swizzle, boxDim[0] x element size <= the swizzle span "
         "(32, 64 or 128 bytes)", f"{DRIVER}: swizzle", _swizzle_span,
         dict(box_shape=(32, 8), swizzle="64B"), dict(box_shape=(64, 8), swizzle="64B")),
    Rule("interleave-swizzle", "interleave 32B requires swizzle 32B", f"{DRIVER}: interleave",
         _interleave_swizzle, dict(_IL, interleave="32B", swizzle="32B", global_strides=(128, 512)),
         dict(_IL, interleave="32B", swizzle="64B", global_strides=(128, 512))),
    Rule("oob-fill-nan", "oobFill NAN_REQUEST_ZERO_FMA only for floating-point tensorDataType", f"{DRIVER}: oobFill",
         _oob_fill_nan, dict(dtype="bfloat16", oob_fill="nan"), dict(dtype="int32", oob_fill="nan")),
)
RULES_BY_NAME = {r.name: r for r in RULES}

# Checked when the tensor map is encoded for an address, not on construction.
ADDRESS_RULE = Rule("global-address-alignment", "globalAddress non-zero and 16-byte aligned (32 with interleave 32B)",
                    f"{DRIVER}: globalAddress", None, dict(_address=0x1010), dict(_address=0x1008))


def require_tensor_map(**kwargs) -> Draft:
    """Walk RULES over the arguments of a TensorMap; raise TensorMapError at the first rule broken,
    else return the checked draft (dtype, shape, box, strides, es normalised)."""
    d = Draft(**kwargs)
    for rule in RULES:
        msg = rule.check(d)
        if msg:
            raise TensorMapError(rule.name, msg, rule.limit)
    return d


def require_global_address(address: int, interleave: str) -> int:
    """The ADDRESS_RULE: the tensor's base address as cuTensorMapEncodeTiled accepts it."""
    address = int(address)
    align = 32 if interleave == "32B" else 16
    if address <= 0 or address % align:
        raise TensorMapError(ADDRESS_RULE.name, f"globalAddress 0x{address:x} must be non-zero and {align}-byte aligned",
                             ADDRESS_RULE.limit)
    return address
