"""One block-scaled MMA tile, end to end: quantise, lay out, run cuda_src/teach_blockscaled.cu, compare.

* `quantize(x, fmt)`: float rows -> element codes and per-block scale codes, for "mxfp8" (e4m3 elements, one
  ue8m0 scale per 32: the OCP MX rule, scale = 2^(floor(log2(amax)) - 8), elements rounded to nearest even
  and saturated) and "nvfp4" (e2m1 elements, one ue4m3 scale per 16: scale = amax / 6 rounded to e4m3,
  elements rounded to nearest even and saturated at 6); `dequantize` is the inverse. ue4m3 spans only
  [2^-9, 448]: a block whose amax / 6 falls below it gets scale 0 (all zero), which is why NVFP4 tensors
  carry a second, per-tensor f32 scale (not modelled here: it multiplies D after the MMA).
* `BlockScaledCase(fmt, N, seed)`: A (128 x K) and B (N x K) drawn from a normal distribution with a few
  outliers and quantised; K is 128 (MXFP8: four kind::mxf8f6f4 instructions, one scale atom whose four
  bytes the scale factor IDs 0..3 select) or 256 (NVFP4: four kind::mxf4nvf4 instructions, one atom each).
  `model()` is D as `bwlab.umma.blockscale` computes it from the kernel's own inputs (operand image,
  descriptors, scale atoms, idesc) by replaying the kernel's steps (tcgen05.cp of each atom, the MMAs with
  their scale factor IDs); `reference()` is `mma_numerics` straight from the codes and scales (the two
  must agree: the data path loses nothing); `run()` launches the kernel on an sm_100 GPU or in the emulator.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hw.dtypes import from_float, scale_to_float, to_float
from .blockscale import BLOCK_KINDS, SCALE_VECS, make_block_scaled_idesc, operand_to_bytes, tcgen05_mma_block_scaled
from .scales import SF_ATOM_BYTES, sf_to_layout, tcgen05_cp
from .canonical import canonical_layout
from .descriptors import make_smem_desc, smem_desc_for_tile
from .numerics import mma_numerics

__all__ = ["FORMATS", "quantize", "dequantize", "BlockScaledCase", "run_teach_blockscaled", "run_where_possible",
           "BS_BARRIERS"]

# fmt -> (kind, element type, scale type, block, scale_vec, K of the case)
FORMATS = {"mxfp8": ("mxf8f6f4", "e4m3", "ue8m0", 32, "1X", 128),
           "nvfp4": ("mxf4nvf4", "e2m1", "ue4m3", 16, "4X", 256)}
BS_BARRIERS = {0: "mma_done"}
_EMAX = {"e4m3": 8, "e2m1": 2}          # exponent of the largest power of two below the element's max


def _fmt(fmt):
    if fmt not in FORMATS:
        raise ValueError(f"fmt is one of {list(FORMATS)}, got {fmt!r}")
    return FORMATS[fmt]


def quantize(x, fmt: str):
    """(codes uint8 rows x K, scale codes uint8 rows x K/block) of float rows `x` in `fmt`."""
    kind, et, st, block, _, _ = _fmt(fmt)
    x = np.asarray(x, np.float64)
    if x.ndim != 2 or x.shape[1] % block:
        raise ValueError(f"{fmt} quantises rows whose length is a multiple of {block}, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("quantize takes finite values")
    g = x.reshape(x.shape[0], -1, block)
    amax = np.abs(g).max(axis=2)
    if st == "ue8m0":
        e = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - _EMAX[et], -127)
        sf = np.clip(e + 127, 0, 254).astype(np.uint8)
    else:
        sf = from_float(np.where(amax > 0, amax / 6.0, 0.0), "ue4m3")
    scale = scale_to_float(sf, st)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(scale[..., None] > 0, g / scale[..., None], 0.0)
    codes = from_float(y.reshape(x.shape), et)
    return codes, sf


def dequantize(codes, sf, fmt: str) -> np.ndarray:
    """The values the codes and scales stand for (float64)."""
    kind, et, st, block, _, _ = _fmt(fmt)
    v = to_float(np.asarray(codes, np.uint8), et)
    return v * np.repeat(scale_to_float(sf, st), block, axis=1)


@dataclass(frozen=True)
class BlockScaledCase:
    """One 128 x N tile of teach_blockscaled.cu: `fmt` "mxfp8" or "nvfp4", N a multiple of 8 in [8, 128]."""

    fmt: str = "mxfp8"
    N: int = 64
    seed: int = 0
    swizzle: str = "128B"

    def __post_init__(self):
        _fmt(self.fmt)
        if self.N % 8 or not 8 <= self.N <= 128:
            raise ValueError(f"teach_blockscaled.cu runs N a multiple of 8 in [8, 128], got {self.N}")

    @property
    def kind(self):
        return FORMATS[self.fmt][0]

    @property
    def K(self):
        return FORMATS[self.fmt][5]

    @property
    def n_mma(self):
        return self.K // BLOCK_KINDS[self.kind].K

    @property
    def defines(self):
        return {"BS_NVFP4": "1"} if self.fmt == "nvfp4" else None

    def label(self):
        return f"teach_blockscaled.cu {self.fmt} 128 x {self.N} x {self.K}"

    def floats(self):
        """A (128 x K) and B (N x K) before quantisation: normal values, 1 % of them 30 times larger."""
        rng = np.random.default_rng(self.seed)
        a = rng.standard_normal((128, self.K))
        b = rng.standard_normal((self.N, self.K))
        for x in (a, b):
            x[rng.random(x.shape) < 0.01] *= 30
        return a, b

    def operands(self):
        """(A codes, B codes, scale_A codes, scale_B codes)."""
        a, b = self.floats()
        (qa, sa), (qb, sb) = quantize(a, self.fmt), quantize(b, self.fmt)
        return qa, qb, sa, sb

    def kernel_inputs(self):
        """What the kernel takes: (operand image, scale_A atoms, scale_B atoms, atoms, A descs, B descs, idesc)."""
        kind, et, st, block, vec, _ = FORMATS[self.fmt]
        qa, qb, sa, sb = self.operands()
        A, B = operand_to_bytes(qa, et, kind), operand_to_bytes(qb, et, kind)
        b_base = A.size
        la = canonical_layout("K", self.swizzle, "e4m3", A.shape, 0)
        lb = canonical_layout("K", self.swizzle, "e4m3", B.shape, b_base)
        img = np.zeros(b_base + B.size, np.uint8)
        la.store(img, A)
        lb.store(img, B)
        ad = np.array([smem_desc_for_tile("K", self.swizzle, "e4m3", A.shape, i, 0) for i in range(self.n_mma)],
                      np.uint64)
        bd = np.array([smem_desc_for_tile("K", self.swizzle, "e4m3", B.shape, i, b_base)
                       for i in range(self.n_mma)], np.uint64)
        sfa, sfb = sf_to_layout(sa, "smem"), sf_to_layout(np.pad(sb, ((0, 128 - self.N), (0, 0))), "smem")
        atoms = sfa.size // SF_ATOM_BYTES
        idesc = make_block_scaled_idesc(kind, et, et, st, self.N, scale_vec=vec)
        return img, sfa, sfb, atoms, ad, bd, idesc

    def model(self) -> np.ndarray:
        """D words (128 x N uint32) by replaying the kernel's steps on bwlab's models."""
        from .model import CtaState
        img, sfa, sfb, atoms, ad, bd, idesc = self.kernel_inputs()
        spm = SCALE_VECS[FORMATS[self.fmt][4]]
        cta = CtaState()
        base, sfa_at, sfb_at = 0, 40960, 40960 + 2048     # where the kernel's buffers sit does not change D
        cta.smem[base:base + img.size] = img
        cta.smem[sfa_at:sfa_at + sfa.size] = sfa
        cta.smem[sfb_at:sfb_at + sfb.size] = sfb
        tsfa, tsfb = 128, 128 + 4 * atoms
        for a in range(atoms):
            tcgen05_cp(cta.smem, cta.tmem, tsfa + 4 * a, make_smem_desc(sfa_at + 512 * a, 0, 128), "32x128b", "warpx4")
            tcgen05_cp(cta.smem, cta.tmem, tsfb + 4 * a, make_smem_desc(sfb_at + 512 * a, 0, 128), "32x128b", "warpx4")
        for i in range(self.n_mma):
            s = i * spm
            atom, sid = s // 4, s % 4
            tcgen05_mma_block_scaled(cta, 0, int(ad[i]), int(bd[i]), idesc | (sid << 29) | (sid << 4),
                                     tsfa + 4 * atom, tsfb + 4 * atom, i > 0, self.kind, FORMATS[self.fmt][4])
        return cta.tmem[:, :self.N].copy()

    def reference(self) -> np.ndarray:
        """D words straight from the codes and scales: `mma_numerics` over the whole K (the instructions chained)."""
        kind, et, st, block, _, _ = FORMATS[self.fmt]
        qa, qb, sa, sb = self.operands()
        name = f"m128n{self.N}k{BLOCK_KINDS[kind].K}.kind::{kind}.block{block}.f32.{et}.{et}.{st}"
        return mma_numerics(name, qa, qb, np.zeros((128, self.N), np.float32), sa, sb).view(np.uint32)

    def run(self, kernel=None) -> np.ndarray:
        return run_teach_blockscaled(self, kernel)

    def check(self, got) -> str:
        want = self.model()
        bad = np.argwhere(np.asarray(got) != want)
        if not bad.size:
            return f"{self.label()}: all {want.size} accumulators equal the model bit for bit"
        m, n = bad[0]
        return (f"{self.label()}: {len(bad)} of {want.size} accumulators differ; first D[{m}][{n}]: got "
                f"0x{int(got[m, n]):08x}, model 0x{int(want[m, n]):08x}")


def run_teach_blockscaled(case: BlockScaledCase, kernel=None) -> np.ndarray:
    """Run `case` through cuda_src/teach_blockscaled.cu (or `kernel`, a path or TeachingKernel) on an sm_100
    GPU, or in the emulator in the emulated tier. Returns D words (128 x N uint32), the same array
    `case.model()` gives. Default kernel: the learner's %%cuda version if there is one, else the file."""
    from ..lab import edited, isolate, run_edited
    from ..runtime import launch
    from .runner import umma_backend
    be = umma_backend()
    cp = be.xp
    kernel = kernel or edited("teach_blockscaled.cu")
    if not isinstance(kernel, str) and not be.emulated and isolate(kernel):
        return run_edited(run_teach_blockscaled, case, kernel=kernel)
    module = be.load(kernel, defines=case.defines, arch="sm_100a")
    img, sfa, sfb, atoms, ad, bd, idesc = case.kernel_inputs()
    out = cp.zeros((128, case.N), np.uint32)
    launch(module, "teach_blockscaled", (1,), (128,),
           (cp.asarray(img), np.uint32(img.size), cp.asarray(sfa), cp.asarray(sfb), np.uint32(atoms),
            cp.asarray(ad), cp.asarray(bd), np.uint32(case.n_mma), np.uint32(idesc), out, np.uint32(case.N)),
           barrier_names=BS_BARRIERS)
    return cp.asnumpy(out)


def run_where_possible(case: BlockScaledCase, kernel=None):
    """(D words, where it ran): on the sm_100 GPU where the umma stage runs on hardware, else in bwlab's PTX
    emulator, which executes the same sm_100a PTX (so the kernel runs on every machine)."""
    from ..device import tier, using_backend, where
    here = where("umma")
    if tier("umma") in ("hardware", "emulated"):
        return run_teach_blockscaled(case, kernel), here
    with using_backend("emulated"):
        return run_teach_blockscaled(case, kernel), here + " (this kernel: bwlab's PTX emulator, its sm_100a PTX)"
