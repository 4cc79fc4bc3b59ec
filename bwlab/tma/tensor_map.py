"""The tensor map: the parameters of one `cuTensorMapEncodeTiled` call, validated on construction.

CUDA driver API "Tensor Map Object Management" (cuTensorMapEncodeTiled) lists the rules; PTX ISA
"Tensors" (5.5: bounding box, traversal stride, swizzle) says what the instruction does with them.
The rules are one table, `bwlab.tma.rules.RULES`; each broken rule raises `TensorMapError`, a
ValueError naming the rule, the values and the limit.

Conventions: shapes and coordinates are innermost-first, as the driver and PTX number them (dim 0
is the contiguous one); `global_strides` are the byte strides of dims 1..rank-1.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..hw.dtypes import element_type
from ..util import ceil_div, round_up
from .rules import (INTERLEAVE_ENUM, L2_ENUM, MAX_BOX, MAX_RANK, OOB_ENUM, SWIZZLE_ENUM, TMAP_DTYPES,  # noqa: F401
                    TensorMapError, require_global_address, require_tensor_map, swizzle_width)

# The SMEM destination of a tiled TMA load must be 128-byte aligned (CUDA programming guide, TMA
# section; the PTX ISA's swizzle base offset formula (dstMem / 128) % N presumes it too).
SMEM_ALIGNMENT = 128

# A swizzled box whose rows are narrower than the swizzle span (legal: cuTensorMapEncodeTiled asks
# only for inner box bytes <= span). Its rows sit one whole span apart in SMEM, the bytes between
# them untouched, and the mbarrier counts only the box bytes. Seen on the H100
# (docs/results/tma_validate_h100.txt): 357 random narrow boxes bit-exact with background-painted
# margins, and in the narrow probe expect_tx = box bytes completed exactly while expect_tx =
# rows x span never completed. The TMA store reads such boxes with the same pitch
# (bwlab.epilogue.smem_box_pitch).
NARROW_SWIZZLE_PITCH = "span"   # 'span' | 'packed'
NARROW_SWIZZLE_TX = "box"       # 'box' (box bytes) | 'footprint' (rows x span)


@dataclass(frozen=True)
class TensorMap:
    """The parameters of one `cuTensorMapEncodeTiled` call, validated on construction.

    dtype           element type name (TMAP_DTYPES: 'float16', 'bfloat16', 'tf32', 'int8', ...;
                    the PTX spellings 'f16', 'bf16', 's8', ... are stored under those names)
    global_shape    elements per dimension, innermost first (1..5 dims, each 1..2^32)
    box_shape       box extent per dimension in elements (each 1..256) — what one load traverses
    global_strides  byte strides of dims 1..rank-1 (default: packed); multiples of 16, < 2^40
    element_strides traversal step per dimension (1..8); the load brings ceil(box/step) elements
    swizzle         'none' | '32B' | '64B' | '128B' (SMEM bank swizzle, a function of the address)
    interleave      'none' | '16B' | '32B' (NC/8HWC8-style layouts; rank >= 3)
    l2_promotion    'none' | '64B' | '128B' | '256B' (L2 fill granularity; no effect on the bytes)
    oob_fill        'zero' | 'nan' (the OOB-NaN of FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA; floats only)
    """

    dtype: str
    global_shape: tuple
    box_shape: tuple
    global_strides: tuple | None = None
    element_strides: tuple | None = None
    swizzle: str = "none"
    interleave: str = "none"
    l2_promotion: str = "none"
    oob_fill: str = "zero"

    def __post_init__(self):
        # The rules of cuTensorMapEncodeTiled, walked in the order of bwlab.tma.rules.RULES.
        d = require_tensor_map(dtype=self.dtype, global_shape=self.global_shape, box_shape=self.box_shape,
                               global_strides=self.global_strides, element_strides=self.element_strides,
                               swizzle=self.swizzle, interleave=self.interleave, l2_promotion=self.l2_promotion,
                               oob_fill=self.oob_fill)
        object.__setattr__(self, "dtype", d.dtype)
        object.__setattr__(self, "global_shape", d.shape)
        object.__setattr__(self, "box_shape", d.box)
        object.__setattr__(self, "global_strides", tuple(d.strides))
        object.__setattr__(self, "element_strides", d.es)

    # ---- derived quantities ---------------------------------------------------------------
    @property
    def element(self):
        """The bwlab.hw.dtypes entry of the element type."""
        return element_type(self.dtype)

    @property
    def rank(self) -> int:
        return len(self.global_shape)

    @property
    def elem_bytes(self) -> int:
        return self.element.bytes

    @property
    def byte_strides(self) -> tuple:
        """Byte stride of every dimension, dim 0 included (= the element size)."""
        return (self.elem_bytes,) + tuple(self.global_strides)

    @property
    def box_counts(self) -> tuple:
        """Elements the load brings per dimension: ceil(box / element stride), innermost first."""
        return tuple(ceil_div(b, e) for b, e in zip(self.box_shape, self.element_strides))

    @property
    def box_elements(self) -> int:
        return math.prod(self.box_counts)

    @property
    def box_bytes(self) -> int:
        """Bytes of box data one load writes to SMEM, out-of-bounds fill included (elements x size)."""
        return self.box_elements * self.elem_bytes

    @property
    def inner_box_bytes(self) -> int:
        return self.box_counts[0] * self.elem_bytes

    @property
    def smem_pitch(self) -> int:
        """Bytes from one box row (a dimension-0 line) to the next in SMEM.

        The inner box bytes, except for a swizzled box narrower than its swizzle span: each of its
        rows then takes a whole span (32, 64 or 128 bytes) and the rest of the span is left alone
        (`NARROW_SWIZZLE_PITCH`; seen on the H100 for loads here and for stores in bwlab.epilogue)."""
        if is_narrow_swizzle(self) and NARROW_SWIZZLE_PITCH == "span":
            return swizzle_width(self.swizzle)
        return self.inner_box_bytes

    @property
    def smem_footprint(self) -> int:
        """SMEM bytes from the destination to the end of the box's last row: rows x `smem_pitch`."""
        return math.prod(self.box_counts[1:]) * self.smem_pitch

    @property
    def tx_bytes(self) -> int:
        """The transaction bytes one load reports to its mbarrier: what `expect_tx` must announce.

        The box bytes (padding rows to the swizzle span adds nothing: `NARROW_SWIZZLE_TX`)."""
        return self.box_bytes if NARROW_SWIZZLE_TX == "box" else self.smem_footprint

    @property
    def smem_shape(self) -> tuple:
        """Shape of the box in SMEM, outermost first (for `.reshape` of the unswizzled bytes)."""
        return tuple(reversed(self.box_counts))

    @property
    def global_extent_bytes(self) -> int:
        """Bytes from the tensor's base address to the end of its last element."""
        return sum((d - 1) * s for d, s in zip(self.global_shape, self.byte_strides)) + self.elem_bytes

    # ---- the driver call ------------------------------------------------------------------
    def encode_args(self, global_address: int) -> dict:
        """The arguments of cuTensorMapEncodeTiled as plain values (enumerator names as strings).

        Checks the base-address rule first: 16-byte aligned (32 with interleave='32B').
        """
        global_address = require_global_address(global_address, self.interleave)
        strides = list(self.global_strides)
        if not strides:
            # Rank 1 has no stride to give, but the driver refuses a NULL array and cuda.bindings
            # turns an empty list into NULL: pass one valid stride it never uses.
            strides = [round_up(self.global_shape[0] * self.elem_bytes, 16)]
        return {
            "tensorDataType": self.element.tmap_enum,
            "tensorRank": self.rank,
            "globalAddress": global_address,
            "globalDim": list(self.global_shape),
            "globalStrides": strides,
            "boxDim": list(self.box_shape),
            "elementStrides": list(self.element_strides),
            "interleave": INTERLEAVE_ENUM[self.interleave],
            "swizzle": SWIZZLE_ENUM[self.swizzle],
            "l2Promotion": L2_ENUM[self.l2_promotion],
            "oobFill": OOB_ENUM[self.oob_fill],
        }

    def describe(self) -> str:
        """The fields of the tensor map as the driver receives them, one per line."""
        a = self.encode_args(1 << 20)
        lines = [f"{'tensorDataType':<15} {a['tensorDataType']}  ({self.elem_bytes} B per element)",
                 f"{'tensorRank':<15} {self.rank}",
                 f"{'globalDim':<15} {a['globalDim']}   (elements, innermost first)",
                 f"{'globalStrides':<15} {a['globalStrides']}   (bytes, dims 1..rank-1)",
                 f"{'boxDim':<15} {a['boxDim']}",
                 f"{'elementStrides':<15} {a['elementStrides']}",
                 f"{'interleave':<15} {a['interleave']}",
                 f"{'swizzle':<15} {a['swizzle']}",
                 f"{'l2Promotion':<15} {a['l2Promotion']}",
                 f"{'oobFill':<15} {a['oobFill']}",
                 f"-> one load brings {' x '.join(map(str, self.smem_shape))} elements = "
                 f"{self.box_bytes} bytes (the expect_tx count is {self.tx_bytes})"
                 + (f"; rows {self.smem_pitch} bytes apart in SMEM, {self.smem_footprint} bytes in all"
                    if self.smem_pitch != self.inner_box_bytes else "")]
        return "\n".join(lines)


def legal_inner_elems(dtype: str, swizzle: str = "none") -> list:
    """The box widths (dim-0 elements) a tensor map of `dtype` under `swizzle` accepts: rows a multiple
    of 16 bytes, at most the swizzle span, at most MAX_BOX elements (the explorer offers only these)."""
    elem = element_type(dtype).bytes
    span = swizzle_width(swizzle) or MAX_BOX * elem
    step = max(1, 16 // elem)
    return [n for n in range(step, MAX_BOX + 1, step) if n * elem <= span]


def is_narrow_swizzle(tmap: TensorMap) -> bool:
    """A swizzled box whose rows are narrower than the swizzle span."""
    span = swizzle_width(tmap.swizzle)
    return tmap.interleave == "none" and bool(span) and tmap.inner_box_bytes < span
