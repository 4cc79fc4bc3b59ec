"""One whole epilogue's parameters: D (M x N) = alpha * acc + beta * C, one bm x bn tile per CTA,
validated on construction. The tensor map it implies is `bwlab.tma.TensorMap`'s.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hw.dtypes import from_float
from ..util import ceil_div, round_up
from .rules import d_dtype, raw_dtype
from .tile import SmemTile

__all__ = ["EpilogueProblem", "teach_problem"]


@dataclass(frozen=True)
class EpilogueProblem:
    """D = alpha * acc + beta * C over an M x N matrix, one bm x bn tile per CTA.

    D and C live in GMEM as row-major (M + 1) x ld buffers of raw `dtype` bits: columns N..ld-1 are
    row padding and the last row is a guard row, both outside the tensor, so a stray write shows.
    acc is a float32 (tiles_m * bm) x (tiles_n * bn) array: the accumulator tiles as tcgen05.ld
    would hand them to the epilogue threads (thread t of the CTA holds row t of its tile).
    `reduce_add` makes the kernel issue cp.reduce.async.bulk.tensor .add instead of the store.
    """

    M: int
    N: int
    dtype: str = "float32"
    bm: int = 128
    bn: int = 32
    swizzle: str = "128B"
    alpha: float = 1.0
    beta: float = 0.0
    reduce_add: bool = False
    smem_offset: int = 0
    ld: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "dtype", d_dtype(self.dtype).numpy_name)
        eb = self.elem_bytes
        if self.M < 1 or self.N < 1:
            raise ValueError(f"M and N must be positive, got {self.M} x {self.N}")
        if not 1 <= self.bm <= 128:
            raise ValueError(f"bm must be in [1, 128]: one epilogue thread per row, 128 threads; got {self.bm}")
        if self.smem_offset < 0 or self.smem_offset % 128 or self.smem_offset >= 1024:
            raise ValueError(f"smem_offset must be a multiple of 128 in [0, 1024), got {self.smem_offset}")
        SmemTile(self.bm, self.bn, self.dtype, self.swizzle, base=self.smem_offset)  # validates
        ld = round_up(self.N * eb, 16) // eb if self.ld is None else int(self.ld)
        if ld < self.N or (ld * eb) % 16:
            raise ValueError(f"ld ({ld}) must be at least N ({self.N}) and ld * {eb} B a multiple of "
                             "16 (the TMA global-stride rule)")
        object.__setattr__(self, "ld", ld)
        if self.reduce_add and self.beta != 0:
            raise ValueError("reduce_add adds alpha * acc onto D in GMEM; beta * C is not combined "
                             "with it here (use beta = 0)")
        if self.tile_smem_bytes() > 200 * 1024:
            raise ValueError(f"the D and C tiles need {self.tile_smem_bytes()} B of SMEM; keep it "
                             "under 200 KiB")

    @property
    def elem_bytes(self) -> int:
        return d_dtype(self.dtype).bytes

    @property
    def use_c(self) -> bool:
        return self.beta != 0

    @property
    def tiles(self) -> tuple:
        return (ceil_div(self.M, self.bm), ceil_div(self.N, self.bn))

    @property
    def tile(self) -> SmemTile:
        return SmemTile(self.bm, self.bn, self.dtype, self.swizzle, base=self.smem_offset)

    @property
    def c_tile(self) -> SmemTile:
        return SmemTile(self.bm, self.bn, self.dtype, self.swizzle,
                        base=self.smem_offset + round_up(self.tile.nbytes, 1024))

    @property
    def buffer_shape(self) -> tuple:
        return (self.M + 1, self.ld)

    @property
    def acc_shape(self) -> tuple:
        tm, tn = self.tiles
        return (tm * self.bm, tn * self.bn)

    def tensor_map(self):
        """The D (and C) tensor map: dims (N, M) innermost first, box (box_cols, bm)."""
        from ..tma.tensor_map import TensorMap
        t = self.tile
        return TensorMap(self.dtype, (self.N, self.M), (t.box_cols, self.bm),
                         global_strides=(self.ld * self.elem_bytes,), swizzle=self.swizzle)

    def tile_smem_bytes(self) -> int:
        tile = round_up(self.bm * self.bn * self.elem_bytes, 1024)
        return self.smem_offset + tile * (2 if self.use_c else 1)

    def box_coords(self, tm: int, tn: int):
        t = self.tile
        return [((tn * self.bn + b * t.box_cols, tm * self.bm), t.box_address(b))
                for b in range(t.n_boxes)]

    def random_inputs(self, rng: np.random.Generator):
        """acc, C bits and the initial D buffer, all finite (no NaN/Inf), for tests and validation."""
        acc = (rng.standard_normal(self.acc_shape) * np.exp2(rng.integers(-6, 7, self.acc_shape))
               ).astype(np.float32)
        raw = raw_dtype(self.dtype)

        def finite(shape):
            x = (rng.standard_normal(shape) * 4).astype(np.float32)
            return np.ascontiguousarray(from_float(x, self.dtype)).view(raw)

        c = finite(self.buffer_shape) if self.use_c else None
        d0 = finite(self.buffer_shape)
        return acc, c, d0




def teach_problem(M: int, N: int, ld: int | None = None) -> EpilogueProblem:
    """The epilogue `cuda_src/teach_store.cu` performs: fp32 D = acc, one 128 x 32 tile per CTA (one
    thread per row, 128-byte rows), stored through the 128B swizzle."""
    return EpilogueProblem(M, N, "float32", bm=128, bn=32, swizzle="128B", ld=ld)
