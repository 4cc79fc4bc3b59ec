"""Pictures of TMEM: the allocation grid, warp quarters, the tcgen05.ld thread maps and who holds each
accumulator element; the interactive map. The only place of the stage that imports matplotlib and
ipywidgets.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgba

from ..hw.tmem import COLUMNS, LANES, TmemError, warp_lane_range
from ..plotting import BYTE_COLORS, add_legend, cta_color, plot_grid, thread_color, warp_color
from .accumulator import accumulator_owners
from .alloc import TensorMemory
from .forms import SHAPES, TmemAccess, legal_nums

__all__ = ["plot_tmem", "plot_warp_quarters", "plot_ld_map", "plot_gallery", "plot_accumulator_owners",
           "ld_widget"]


def plot_tmem(tm: TensorMemory, ax=None, title: str | None = None):
    """TMEM as a 128-lane x 512-column grid, each allocation coloured by the CTA that holds it."""
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3.2))
    owner = tm.owner_map()
    img = np.zeros((LANES, COLUMNS, 4))
    img[:] = to_rgba(BYTE_COLORS["untouched"])
    for a in tm.allocations:
        img[:, a.column:a.column + a.ncols] = to_rgba(cta_color(a.cta))
        ax.text(a.column + a.ncols / 2, LANES / 2,
                f"CTA {a.cta}\n{a.ncols} cols\n{a.taddr:#010x}", ha="center", va="center", fontsize=8)
    ax.imshow(img, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(0, COLUMNS + 1, 64))
    ax.set_yticks([0, 32, 64, 96, 127])
    ax.set_xlabel("column (32 bits each)")
    ax.set_ylabel("lane")
    ax.set_title(title or f"TMEM of one SM: {LANES} lanes x {COLUMNS} columns x 32 bit "
                 f"({COLUMNS - int((owner < 0).sum())} columns allocated)")
    items = [(f"CTA {c}", cta_color(c)) for c in sorted({a.cta for a in tm.allocations})]
    add_legend(ax, items + [("free", BYTE_COLORS["untouched"])], title="owner")
    return ax


def plot_warp_quarters(ax=None, warps: int = 8):
    """Which TMEM lanes each warp of a CTA may touch: lanes 32*(warp % 4) .. +31."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 2.6))
    for q in range(4):
        ax.barh(0, 32, left=32 * q, color=warp_color(q), edgecolor="black")
        names = ", ".join(str(w) for w in range(warps) if w % 4 == q)
        ax.text(32 * q + 16, 0, f"lanes {32 * q}..{32 * q + 31}\nwarps {names}", ha="center",
                va="center", fontsize=10)
    ax.set_xlim(0, LANES)
    ax.set_yticks([])
    ax.set_xlabel("TMEM lane")
    ax.set_title(f"Warp quarters of a CTA with {warps} warps: warp w reaches lanes 32*(w % 4) .. +31")
    return ax


def _thread_legend(ax):
    add_legend(ax, [(f"T{t}", thread_color(t)) for t in range(32)], title="thread", ncol=2)


def plot_ld_map(access: TmemAccess, warp: int = 0, ax=None, legend: bool = True, text=None,
                fontsize: float | None = None):
    """One tcgen05.ld of warp `warp` at its first lane: TMEM lanes x columns, each cell coloured by
    the thread whose register receives it (labels: thread and register)."""
    lo, _ = warp_lane_range(warp)
    m = access.map()
    if not access.pack16:
        m = m[:, :, None, :]
    colors = np.full((access.lanes, access.width), BYTE_COLORS["untouched"], dtype=object)
    labels = np.full((access.lanes, access.width), "", dtype=object)
    show = access.width <= 16 if text is None else text
    one_line = access.lanes == 32 or access.width <= 4
    for t in range(32):
        for j in range(access.registers):
            for h in range(m.shape[2]):
                lane, col = m[t, j, h]
                colors[lane, col] = thread_color(t)
                if show:
                    half = ("lo", "hi")[h] if access.pack16 else ""
                    # 32 lanes x 16 columns still has room for "T<t> r<j>" (register j = column j)
                    labels[lane, col] = (f"T{t}{' ' if one_line else chr(10)}r{j}{half}"
                                         if access.width <= 8 or (one_line and access.width <= 16) else f"{t}")
    if ax is None:
        _, ax = plt.subplots(figsize=(min(11, 3.5 + 0.6 * access.width), 7 if access.lanes == 32 else 5.5))
    if fontsize is None:
        fontsize = 8 if access.width <= 16 else 7     # 32 x 16 cells still fit "T31 r15" at 8 pt
    plot_grid(ax, colors, text=labels if show else None, fontsize=fontsize,
              title=f"tcgen05.ld{access.label()}: warp {warp}, {access.registers} register"
                    f"{'s' if access.registers > 1 else ''}/thread",
              xlabel="column (relative to the address)",
              ylabel=f"lane (from {lo}, warp {warp}'s quarter)",
              xticks=list(range(access.width)) if access.width <= 32 else None)
    ax.tick_params(labelsize=9)
    if legend:
        _thread_legend(ax)
    return ax


def plot_gallery(num: int = 1, pack16: bool = False):
    """The five shapes side by side for one .num: who reads which cell."""
    accs = [TmemAccess(s, num, pack16) for s in SHAPES]
    widths = [a.width for a in accs]
    fig, axes = plt.subplots(1, 5, figsize=(12, 7.5),
                             gridspec_kw={"width_ratios": [max(1.6, w) for w in widths]})
    for ax, a in zip(axes, accs):
        plot_ld_map(a, 0, ax=ax, legend=False, fontsize=7.5)
        ax.set_title(f".{a.shape}.x{num}\n{a.registers} reg/thread\n{a.lanes} lanes x {a.width} col",
                     fontsize=10)
        ax.set_ylabel("lane" if a is accs[0] else "", fontsize=10)
        ax.set_xlabel("column", fontsize=10)
    fig.suptitle(f"The five tcgen05.ld shapes at .x{num}{' .pack::16b' if pack16 else ''}: "
                 "cell colour and label = the thread (T) and register (r) that receive it", fontsize=11)
    fig.tight_layout()
    return fig


def plot_accumulator_owners(access: TmemAccess, M: int = 128, N: int = 64, highlight=(0, 0)):
    """Left: the M x N accumulator coloured by the warp that ends up holding each element.
    Right: a zoom around `highlight` = (m, n), coloured by thread and labelled with the register."""
    own = accumulator_owners(access, M, N)
    img = np.zeros((M, N, 4))
    for w in range(4):
        img[own[..., 0] == w] = to_rgba(warp_color(w))
    img[own[..., 1] % 2 == 1, :3] *= 0.8
    r, c = highlight
    fig, (ax, zx) = plt.subplots(1, 2, figsize=(12, 6), gridspec_kw={"width_ratios": [1, 1.2]})
    ax.imshow(img, aspect="auto", interpolation="nearest")
    ax.plot(c, r, marker="s", markersize=9, markerfacecolor="none", markeredgecolor="black")
    ax.set_xlabel("n (accumulator column)")
    ax.set_ylabel("m (accumulator row)")
    ax.set_title(f"{M} x {N} D read with tcgen05.ld{access.label()}:\nthe warp holding each element "
                 "(darker: its odd-numbered loads)", fontsize=10)
    add_legend(ax, [(f"warp {w}", warp_color(w)) for w in range(4)], title="held by", outside=False,
               loc="lower right")
    r0 = r // access.lanes * access.lanes
    c0 = c // 8 * 8
    rows, cols = slice(r0, min(M, r0 + access.lanes)), slice(c0, min(N, c0 + 8))
    sub = own[rows, cols]
    colors = np.empty(sub.shape[:2], dtype=object)
    labels = np.empty(sub.shape[:2], dtype=object)
    for i in range(sub.shape[0]):
        for k in range(sub.shape[1]):
            w, _, t, j, h = sub[i, k]
            colors[i, k] = thread_color(t)
            labels[i, k] = f"T{t} r{j}" + (("lo", "hi")[h] if access.pack16 else "")
    plot_grid(zx, colors, text=labels, fontsize=8,
              title=f"zoom: rows {rows.start}..{rows.stop - 1}, columns {cols.start}..{cols.stop - 1} "
                    f"(thread, register)", xlabel="n", ylabel="m",
              xticks=list(range(cols.start, cols.stop)), yticks=list(range(rows.start, rows.stop)))
    zx.tick_params(labelsize=9)
    zx.add_patch(plt.Rectangle((c - c0 - 0.5, r - r0 - 0.5), 1, 1, fill=False, linewidth=2.5,
                               edgecolor="black"))
    zx.set_title(f"zoom: rows {rows.start}..{rows.stop - 1}, columns {cols.start}..{cols.stop - 1}:\n"
                 f"thread (T) and register (r) holding each element; framed: D[{r}][{c}]", fontsize=10)
    fig.tight_layout()
    return fig


def ld_widget():
    """An interactive map: pick the shape, .num (legal values only), pack and the warp; the picture
    sits under the controls."""
    import ipywidgets as W

    style = {"description_width": "initial"}
    shape = W.Dropdown(options=list(SHAPES), value="16x256b", description="shape", style=style,
                       layout=W.Layout(width="170px"))
    num = W.Dropdown(options=[f"x{n}" for n in legal_nums("16x256b")], value="x1", description=".num",
                     style=style, layout=W.Layout(width="120px"),
                     tooltip="only the .num values the ISA allows for this shape (<= 128 registers)")
    pack = W.Checkbox(value=False, description="pack::16b", indent=False, layout=W.Layout(width="110px"))
    warp = W.Dropdown(options=list(range(8)), value=0, description="warp", style=style,
                      layout=W.Layout(width="110px"),
                      tooltip="warps 4..7 reach the same lanes as warps 0..3 (lanes 32*(warp % 4)..+31)")
    out = W.Output()

    def redraw(*_):
        nums = [f"x{n}" for n in legal_nums(shape.value, pack.value)]
        if list(num.options) != nums:
            keep = num.value if num.value in nums else nums[-1]
            num.unobserve(redraw, "value")
            num.options, num.value = nums, keep
            num.observe(redraw, "value")
        acc = TmemAccess(shape.value, int(num.value[1:]), pack.value)
        out.clear_output(wait=True)
        with out:
            ax = plot_ld_map(acc, warp.value)
            lo, hi = warp_lane_range(warp.value)
            ax.set_title(f"{acc.ptx('ld')}\nwarp {warp.value} (lanes {lo}..{hi - 1}): {acc.registers} "
                         f"register{'s' if acc.registers > 1 else ''}/thread, {acc.bytes_per_warp} B per warp",
                         fontsize=10)
            plt.show()

    for w in (shape, num, pack, warp):
        w.observe(redraw, "value")
    box = W.VBox([W.HBox([shape, num, pack, warp], layout=W.Layout(flex_flow="row wrap")), out])
    redraw()
    return box
