"""Low precision, drawn and measured: quantising to MXFP8 / NVFP4, the scale factors' trip into TMEM, and
Hopper FP8's short accumulator with the promotion to f32 that FP8 GEMMs add.

* `plot_quantization(x, fmt)`: one row of values quantised block by block (`blockscaled_case.quantize`): the
  values, what the codes and scales give back, each block's scale, and what the scale choice loses (values
  flushed to zero by a large neighbour, values clipped at the format's largest code).
* `plot_scale_trip()`: one 512-byte scale atom (CUTLASS's layout) as SMEM holds it and as
  `tcgen05.cp.32x128b.warpx4` leaves it in TMEM: each row's four scales in one 32-bit cell of lane r % 32 in
  every lane quarter, column r // 32 (`bwlab.umma.scales`).
* `fp8_promotion_errors(Ns)` / `plot_fp8_promotion()`: a K = 4096 dot-product tile on Hopper's FP8 wgmma
  (`mma_numerics`: F = 13 fraction bits, each instruction's sum cut to e8m13, measured on an H200,
  docs/results/wgmma_fp8_h200.txt) when the kernel chains N instructions in the tensor core's accumulator and
  then adds that partial sum to an f32 register (round to nearest), as CUTLASS's and DeepGEMM's FP8 GEMMs
  promote; the error of each N against the exact sum.
"""
from __future__ import annotations

import numpy as np

from ..hw.dtypes import scale_to_float, to_float
from ..umma.blockscaled_case import FORMATS, dequantize, quantize
from ..umma.numerics import mma_numerics, parse_instr
from ..umma.scales import sf_atom_offset

__all__ = ["plot_quantization", "plot_scale_trip", "fp8_promotion_errors", "plot_fp8_promotion",
           "quantization_losses", "FP8_ACCUMULATOR_MEASURED"]

# What the committed recording docs/results/wgmma_fp8_h200.txt says (tests/test_lowprec.py reads the file and
# compares): where and when Hopper's FP8 accumulator was measured, and how much of it equals bwlab's rule.
FP8_ACCUMULATOR_MEASURED = {
    "gpu": "NVIDIA H200", "date": "2026-11-28", "driver": "580.159.04",
    "instruction": "wgmma.mma_async.m64n64k32.f32.{e4m3,e5m2}.{e4m3,e5m2}",
    "equal": 786432, "accumulators": 786432,
    "rule": "13 fraction bits below the largest exponent of each instruction's terms, the sum cut to e8m13",
    "command": "python3 -m bwlab.checks.wgmma_fp8 --out docs/results/wgmma_fp8_h200.txt",
}


def quantization_losses(x, fmt: str) -> dict:
    """What quantising the rows `x` to `fmt` does: counts of values flushed to zero (nonzero in, zero out),
    clipped (the element's largest code reached before the value), and the largest relative error of the rest."""
    codes, sf = quantize(x, fmt)
    y = dequantize(codes, sf, fmt)
    x = np.asarray(x, np.float64)
    et = FORMATS[fmt][1]
    top = float(np.nanmax(to_float(np.arange(0x80 if et == "e4m3" else 0x8, dtype=np.uint8)[:-1 if et == "e4m3"
                                                                                             else None], et)))
    block = FORMATS[fmt][3]
    scale = np.repeat(scale_to_float(sf, FORMATS[fmt][2]), block, axis=1)
    flushed = (x != 0) & (y == 0)
    clipped = np.abs(x) > top * scale * (1 + 2.0 ** -10)
    rest = ~flushed & ~clipped & (x != 0)
    rel = np.abs(y - x)[rest] / np.abs(x)[rest]
    return {"flushed": int(flushed.sum()), "clipped": int(clipped.sum()),
            "max_rel_error": float(rel.max()) if rel.size else 0.0, "values": int(x.size)}


def plot_quantization(x, fmt: str = "nvfp4", ax=None):
    """One row `x` (a multiple of the block size) quantised to `fmt`: the values, their quantised values, the
    blocks and their scales, the values flushed to zero or clipped."""
    import matplotlib.pyplot as plt
    x = np.asarray(x, np.float64).reshape(1, -1)
    kind, et, st, block, _, _ = FORMATS[fmt]
    codes, sf = quantize(x, fmt)
    y = dequantize(codes, sf, fmt)[0]
    x = x[0]
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3.6))
    idx = np.arange(x.size)
    flushed = (x != 0) & (y == 0)
    ax.axhline(0, color="#999999", linewidth=0.5)
    ax.vlines(idx, np.minimum(x, y), np.maximum(x, y), color="#d62728", linewidth=1, label="error")
    ax.plot(idx, x, "o", color="#4c72b0", markersize=4, label="value")
    ax.plot(idx, y, "_", color="black", markersize=9, label=f"{fmt}: code x its block's scale")
    if flushed.any():
        ax.plot(idx[flushed], x[flushed], "o", markerfacecolor="none", markeredgecolor="#d62728", markersize=9,
                label="flushed to zero")
    scales = scale_to_float(sf[0], st)
    top = np.abs(x).max()
    for b in range(x.size // block):
        if b:
            ax.axvline(b * block - 0.5, color="#999999", linestyle=":", linewidth=1)
        ax.text(b * block + block / 2 - 0.5, top * 1.08, f"scale {scales[b]:.4g}\n({st} 0x{int(sf[0, b]):02x})",
                ha="center", va="bottom", fontsize=8)
    ax.set_ylim(-top * 1.15, top * 1.35)
    ax.set_xlabel(f"element (blocks of {block}, one {st} scale each)")
    ax.set_ylabel("value")
    ax.set_title(f"{fmt}: one scale per {block} values; the largest value of a block sets its scale, "
                 f"so its small neighbours keep few bits", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return ax


def plot_scale_trip(ax=None):
    """One scale atom (128 rows x 4 scales, 512 bytes) in SMEM and in TMEM after tcgen05.cp.32x128b.warpx4,
    each cell coloured by the group of 32 rows it belongs to and labelled with its row."""
    import matplotlib.pyplot as plt
    from ..plotting import add_legend, plot_grid, warp_color
    rows = np.arange(128)
    smem_row = np.zeros((32, 4), int)                 # 16-byte SMEM line i, 4-byte word w: row i + 32 w
    smem_row[rows % 32, rows // 32] = rows
    assert (sf_atom_offset(rows, 0) == 16 * (rows % 32) + 4 * (rows // 32)).all()
    tmem_row = np.zeros((128, 4), int)                # TMEM lane l, column c: row l % 32 + 32 c
    lane, col = np.meshgrid(np.arange(128), np.arange(4), indexing="ij")
    tmem_row[lane, col] = lane % 32 + 32 * col
    if ax is None:
        fig, ax = plt.subplots(1, 2, figsize=(10, 7), gridspec_kw={"width_ratios": [1, 1]})
    shown = 8
    pick_s = np.r_[0:shown]
    pick_t = np.r_[0:4, 32:36, 64:68, 96:100]
    cs = np.vectorize(lambda r: warp_color(r // 32), otypes=[object])(smem_row[pick_s])
    plot_grid(ax[0], cs, smem_row[pick_s].astype(object), fontsize=9,
              title="SMEM (and GMEM): 16-byte line i holds\nthe 4 scales of rows i, i+32, i+64, i+96",
              xlabel="4-byte word of the line (4 scales of one row)", ylabel="16-byte line (first 8 of 32)",
              xticks=["0", "1", "2", "3"], yticks=[str(i) for i in pick_s])
    ct = np.vectorize(lambda r: warp_color(r // 32), otypes=[object])(tmem_row[pick_t])
    plot_grid(ax[1], ct, tmem_row[pick_t].astype(object), fontsize=9,
              title="TMEM after tcgen05.cp.32x128b.warpx4: line i\ngoes to lane i of every lane quarter",
              xlabel="column (from the scale address)", ylabel="lane (4 of each quarter shown)",
              xticks=["+0", "+1", "+2", "+3"], yticks=[str(i) for i in pick_t])
    add_legend(ax[1], [(f"rows {32 * q}..{32 * q + 31}", warp_color(q)) for q in range(4)], title="scale of")
    return ax


def fp8_promotion_errors(Ns=(1, 2, 4, 8, 16, 32, 128), K: int = 4096, N: int = 8, seed: int = 0,
                         dtype: str = "e4m3") -> dict:
    """{n: (median, max) relative error of D} for a 64 x N x K product of random fp8 codes (values spread over
    2^±4) on Hopper's FP8 wgmma: n instructions (K = 32 each) chained in the tensor core's accumulator from
    zero, that partial sum added to an f32 accumulator (round to nearest), K / 32 / n times. n = K / 32 is no
    promotion at all. The error is against the exact sum (float64)."""
    rng = np.random.default_rng(seed)
    mag = rng.integers(0x28, 0x58, (2, max(64, N), K)) if dtype == "e4m3" else rng.integers(0x30, 0x50, (2, max(64, N), K))
    codes = (mag | (rng.integers(0, 2, mag.shape) << 7)).astype(np.uint8)
    a, b = codes[0, :64], codes[1, :N]
    exact = to_float(a, dtype) @ to_float(b, dtype).T
    ins = parse_instr(f"m64n{N}k32.f32.{dtype}.{dtype}")
    out = {}
    steps = K // 32
    for n in Ns:
        if steps % n:
            raise ValueError(f"n = {n} does not divide the {steps} instructions of K = {K}")
        acc = np.zeros((64, N), np.float32)
        for g in range(steps // n):
            part = np.zeros((64, N), np.float32)
            for i in range(g * n, (g + 1) * n):
                part = mma_numerics(ins, a[:, 32 * i:32 * i + 32], b[:, 32 * i:32 * i + 32], part)
            acc = (acc + part).astype(np.float32)        # the FADD of the promotion (f32, round to nearest)
        rel = np.abs(acc.astype(np.float64) - exact) / np.abs(exact).max()
        out[n] = (float(np.median(rel)), float(rel.max()))
    return out


def plot_fp8_promotion(errors: dict | None = None, ax=None, K: int = 4096):
    """`fp8_promotion_errors` against n, log-log; the largest n is no promotion."""
    import matplotlib.pyplot as plt
    errors = fp8_promotion_errors(K=K) if errors is None else errors
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3.6))
    ns = sorted(errors)
    ax.loglog(ns, [errors[n][1] for n in ns], "o-", color="#d62728", label="largest error")
    ax.loglog(ns, [errors[n][0] for n in ns], "s-", color="#4c72b0", label="median error")
    ax.axhline(2.0 ** -24, color="#999999", linestyle=":", linewidth=1)
    ax.text(ns[0], 2.0 ** -24 * 1.3, "f32's precision (2^-24)", fontsize=8, color="#666666")
    ax.set_xticks(ns)
    ax.set_xticklabels([str(n) if n != ns[-1] else f"{n}\n(never)" for n in ns])
    ax.set_xlabel(f"wgmma instructions (K = 32 each) accumulated in the tensor core before adding to f32 "
                  f"(K = {K})")
    ax.set_ylabel("|D - exact| / max |exact|")
    ax.set_title("Hopper FP8: the tensor core keeps 13 fraction bits, so FP8 GEMMs promote to f32 every few "
                 "k-blocks", fontsize=10)
    ax.legend(fontsize="small")
    return ax
