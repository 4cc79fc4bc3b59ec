"""The pictures of the from-scratch GEMM (matplotlib): one warp's first loads, the tiles of C, the roofline."""
from __future__ import annotations

import numpy as np

from ..plotting import add_legend, cta_color, plot_grid, thread_color
from .machine import H100, H200
from .steps import STEPS, step
from .memtraffic import SECTOR, accesses, traffic
from ..util import ceil_div

__all__ = ["plot_warp_loads", "plot_tiles", "plot_roofline"]

_UNUSED, _NONE = "#d9d9d9", "#ffffff"


def _panel(ax, s, operand, M, N, K):
    """Warp 0's first load of `operand` (A or B) in the step: cells coloured by the lane reading them,
    the rest of each sector moved grey."""
    (_, _, addr, size), = [(k, o, a, z) for k, o, a, z in accesses(s, M, N, K) if o == operand and k == "load"]
    first = np.asarray(addr).reshape(-1, addr.shape[-1])[0][:32]
    row_len = K if operand == "A" else N
    elem = first // size
    rows, cols = elem // row_len, elem % row_len
    per_sector = SECTOR // size
    r0, r1 = rows.min(), min(rows.max(), rows.min() + 31)
    c0 = (cols.min() // per_sector) * per_sector
    c1 = min(ceil_div(int(cols.max()) + 1, per_sector) * per_sector, c0 + 64)
    colors = np.full((r1 - r0 + 1, c1 - c0), _NONE, dtype=object)
    text = np.full(colors.shape, "", dtype=object)
    sectors = {(int(r), int(c) // per_sector) for r, c in zip(rows, cols)}
    for r, sec in sectors:
        if r0 <= r <= r1:
            colors[r - r0, sec * per_sector - c0:(sec + 1) * per_sector - c0] = _UNUSED
    for lane, (r, c) in enumerate(zip(rows, cols)):
        if r0 <= r <= r1 and c0 <= c < c1:
            colors[r - r0, c - c0] = thread_color(lane)
    for (r, c) in {(int(r), int(c)) for r, c in zip(rows, cols)}:
        n = int(np.sum((rows == r) & (cols == c)))
        if n > 1 and r0 <= r <= r1 and c0 <= c < c1:
            text[r - r0, c - c0] = f"x{n}"
    plot_grid(ax, colors, text, fontsize=6)
    ax.set_xticks([0, c1 - c0 - 1])
    ax.set_xticklabels([f"col {c0}", f"col {c1 - 1}"], fontsize=7)
    ax.set_yticks([0, r1 - r0])
    ax.set_yticklabels([f"row {r0}", f"row {r1}"], fontsize=7)
    ax.set_title(f"{s.name}: {operand}, one load of warp 0\n{len(sectors)} sector(s) of {SECTOR} B moved for "
                 f"{len(set(elem.tolist())) * size} B used", fontsize=9)
    return len(sectors)


def plot_warp_loads(steps=(1, 2), M: int = 64, N: int = 64, K: int = 32, ax=None):
    """For each step, warp 0's first load of A and of B: which element each lane reads (one colour per
    lane), the rest of the 32-byte sectors those reads move (grey). Lesson: what a warp pays for is
    sectors, and which dimension neighbouring threads walk decides how many."""
    import matplotlib.pyplot as plt
    chosen = [step(x) for x in steps]
    if ax is None:
        fig, axes = plt.subplots(len(chosen), 2, figsize=(10, 3.2 * len(chosen)), squeeze=False)
    else:
        fig, axes = ax.figure, np.array([[ax]])
    for i, s in enumerate(chosen):
        for j, operand in enumerate("AB"):
            if i < axes.shape[0] and j < axes.shape[1]:
                _panel(axes[i, j], s, operand, M, N, K)
    if ax is None:
        add_legend(axes[0, -1], [("read by a lane (one colour per lane)", thread_color(5)),
                                 ("moved with the sector, unused", _UNUSED)])
        fig.suptitle("A warp's load costs the 32-byte sectors it touches", fontsize=11)
        fig.tight_layout()
    return fig


def plot_tiles(which, M: int, N: int, ax=None):
    """The tiles of C and the CTA (blockIdx) that computes each."""
    import matplotlib.pyplot as plt
    s = step(which)
    bm, bn = s.tile
    rows, cols = M // bm, N // bn
    if ax is None:
        fig, ax = plt.subplots(figsize=(min(8, 1 + 0.5 * cols), min(6, 1 + 0.4 * rows)))
    gx, gy = s.grid(M, N)
    colors = np.empty((rows, cols), dtype=object)
    text = np.empty((rows, cols), dtype=object)
    for r in range(rows):
        for c in range(cols):
            bx, by = (r, c) if s.name == "s1_naive" else (c, r)
            colors[r, c] = cta_color(by * gx + bx)
            text[r, c] = f"({bx},{by})" if rows * cols <= 64 else ""
    plot_grid(ax, colors, text, fontsize=7)
    ax.set_title(f"{s.name}: C ({M} x {N}) in {bm} x {bn} tiles, one per CTA (blockIdx.x, .y); "
                 f"{s.threads} threads each", fontsize=9)
    ax.set_xlabel(f"tile column (x {bn} columns of C)")
    ax.set_ylabel(f"tile row (x {bm} rows)")
    return ax.figure


def plot_roofline(M: int = 4096, N: int = 4096, K: int = 4096, machine=H100, measured: dict | None = None,
                  ax=None):
    """Each step at its arithmetic intensity (FLOP per byte it asks of global memory, from its indexing:
    bwlab.scratch.memtraffic) under `machine`'s roofs: HBM bandwidth, FP32 CUDA cores (steps 1-4), f16
    tensor cores (step 5). `measured` (bwlab.scratch.recorded.measured()): the GPU's TFLOP/s, drawn at the
    same intensities, with that GPU's bandwidth roof."""
    import matplotlib.pyplot as plt
    if ax is None:
        fig, ax = plt.subplots(figsize=(10, 5.5))
    x = np.logspace(-2, 3.3, 200)
    for unit, style, label in (("tensor", "-", "f16 tensor cores"), ("fp32", "-", "FP32 CUDA cores")):
        ax.plot(x, [machine.attainable(v, unit) / 1e12 for v in x], style, color="black" if unit == "tensor"
                else "#555555", lw=1.5, label=f"{machine.name} roof: {label} ({machine.peak(unit) / 1e12:.0f} "
                f"TFLOP/s), HBM {machine.dram_bytes_per_s / 1e12:.2f} TB/s")
    if measured is not None:
        other = H200 if "H200" in measured["label"] else machine
        if other is not machine:
            ax.plot(x, x * other.dram_bytes_per_s / 1e12, ":", color="#555555", lw=1,
                    label=f"{other.name} HBM roof ({other.dram_bytes_per_s / 1e12:.1f} TB/s)")
    for i, s in enumerate(STEPS):
        t = traffic(s, M, N, K)
        color = cta_color(i)
        ax.plot(t.intensity, machine.attainable(t.intensity, s.unit) / 1e12, "o", mfc="none", mec=color, ms=10,
                mew=2, label=f"{s.name}: {t.intensity:.3g} FLOP/B, bound {machine.attainable(t.intensity, s.unit) / 1e12:.3g} TFLOP/s")
        if measured is not None and s.name in measured["steps"]:
            got = measured["tflops"][measured["steps"].index(s.name)]
            ax.plot(t.intensity, got, "o", color=color, ms=7)
    if measured is not None and "cublas" in measured["steps"]:
        lib = measured["tflops"][measured["steps"].index("cublas")]
        ax.axhline(lib, color="#2ca02c", lw=1, ls="--", label=f"cuBLAS (cupy.matmul) measured: {lib:.0f} TFLOP/s")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x[0], x[-1])
    ax.set_ylim(0.05, 3000)
    ax.set_xlabel("arithmetic intensity: FLOP per byte asked of global memory (32-byte sectors, no cache)")
    ax.set_ylabel("TFLOP/s")
    where = f"; filled: measured, {measured['label']}" if measured is not None else ""
    ax.set_title(f"{M} x {N} x {K}: each step asks fewer bytes per FLOP; the tensor cores need\nmore reuse "
                 f"than a 64 x 64 tile gives (open: the roof at the step's intensity{where})", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.figure.tight_layout()
    return ax.figure
