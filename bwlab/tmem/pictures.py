"""Pictures of TMEM: the allocation grid, warp quarters, the tcgen05.ld thread maps and who holds each
accumulator element; the interactive map. The only place of the stage that imports matplotlib and
ipywidgets.
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import to_rgba

from ..hw.tmem import COLUMNS, LANES, TmemError, warp_lane_range
from ..plotting import BYTE_COLORS, add_legend, cta_color, draw_grid, thread_color, warp_color
from .accumulator import accumulator_owners
from .alloc import TensorMemory
from .forms import NUMS, SHAPES, TmemAccess

__all__ = ["draw_tmem", "draw_warp_quarters", "draw_ld_map", "draw_gallery", "draw_accumulator_owners",
           "ld_widget"]


def draw_tmem(tm: TensorMemory, ax=None, title: str | None = None):
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


def draw_warp_quarters(ax=None, warps: int = 8):
    """Which TMEM lanes each warp of a CTA may touch: lanes 32*(warp % 4) .. +31."""
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 3))
    for q in range(4):
        ax.barh(0, 32, left=32 * q, color=warp_color(q), edgecolor="black")
        names = ", ".join(str(w) for w in range(warps) if w % 4 == q)
        ax.text(32 * q + 16, 0, f"lanes {32 * q}..{32 * q + 31}\nwarps {names}", ha="center",
                va="center", fontsize=9)
    ax.set_xlim(0, LANES)
    ax.set_yticks([])
    ax.set_xlabel("TMEM lane")
    ax.set_title(f"Warp quarters of a CTA with {warps} warps: warp w reaches lanes 32*(w % 4) .. +31")
    add_legend(ax, [(f"warp % 4 = {q}", warp_color(q)) for q in range(4)], title="quarter")
    return ax


def _thread_legend(ax):
    add_legend(ax, [(f"T{t}", thread_color(t)) for t in range(32)], title="thread", ncol=2)


def draw_ld_map(access: TmemAccess, warp: int = 0, ax=None, legend: bool = True, text=None):
    """One tcgen05.ld of warp `warp` at its first lane: TMEM lanes x columns, each cell coloured by
    the thread whose register receives it (labels: thread and register)."""
    lo, _ = warp_lane_range(warp)
    m = access.map()
    if not access.pack16:
        m = m[:, :, None, :]
    colors = np.full((access.lanes, access.width), BYTE_COLORS["untouched"], dtype=object)
    labels = np.full((access.lanes, access.width), "", dtype=object)
    show = access.width <= 16 if text is None else text
    for t in range(32):
        for j in range(access.registers):
            for h in range(m.shape[2]):
                lane, col = m[t, j, h]
                colors[lane, col] = thread_color(t)
                if show:
                    half = ("lo", "hi")[h] if access.pack16 else ""
                    sep = " " if access.lanes == 32 else "\n"
                    labels[lane, col] = f"T{t}{sep}r{j}{half}" if access.width <= 8 else f"{t}"
    if ax is None:
        _, ax = plt.subplots(figsize=(min(14, 2 + 0.45 * access.width), 0.32 * access.lanes + 1))
    draw_grid(ax, colors, text=labels if show else None, fontsize=6,
              title=f"tcgen05.ld{access.label()}: warp {warp}, {access.registers} register"
                    f"{'s' if access.registers > 1 else ''}/thread",
              xlabel="column (relative to the address)",
              ylabel=f"lane (from {lo}, warp {warp}'s quarter)",
              xticks=list(range(access.width)) if access.width <= 32 else None)
    if legend:
        _thread_legend(ax)
    return ax


def draw_gallery(num: int = 1, pack16: bool = False):
    """The five shapes side by side for one .num: who reads which cell."""
    accs = [TmemAccess(s, num, pack16) for s in SHAPES]
    widths = [a.width for a in accs]
    fig, axes = plt.subplots(1, 5, figsize=(17, 5.6),
                             gridspec_kw={"width_ratios": [max(2.5, w) for w in widths]})
    for ax, a in zip(axes, accs):
        draw_ld_map(a, 0, ax=ax, legend=False)
        ax.set_title(f".{a.shape}.x{num}\n{a.registers} reg/thread\n{a.lanes} lanes x {a.width} col",
                     fontsize=9)
        ax.set_ylabel("lane" if a is accs[0] else "")
        ax.set_xlabel("column")
    _thread_legend(axes[-1])
    fig.suptitle(f"tcgen05.ld shapes at .x{num}{' .pack::16b' if pack16 else ''}: "
                 "cell colour = the thread that receives it (label: thread, register)")
    fig.tight_layout()
    return fig


def draw_accumulator_owners(access: TmemAccess, M: int = 128, N: int = 64, highlight=(0, 0)):
    """Left: the M x N accumulator coloured by the warp that ends up holding each element.
    Right: a zoom around `highlight` = (m, n), coloured by thread and labelled with the register."""
    own = accumulator_owners(access, M, N)
    img = np.zeros((M, N, 4))
    for w in range(4):
        img[own[..., 0] == w] = to_rgba(warp_color(w))
    img[own[..., 1] % 2 == 1, :3] *= 0.8
    r, c = highlight
    fig, (ax, zx) = plt.subplots(1, 2, figsize=(13, 5.5), gridspec_kw={"width_ratios": [1, 1.3]})
    ax.imshow(img, aspect="auto", interpolation="nearest")
    ax.plot(c, r, marker="s", markersize=9, markerfacecolor="none", markeredgecolor="black")
    ax.set_xlabel("n (accumulator column)")
    ax.set_ylabel("m (accumulator row)")
    ax.set_title(f"{M} x {N} D read with tcgen05.ld{access.label()}:\nthe warp holding each element "
                 "(darker: its odd-numbered loads)", fontsize=10)
    add_legend(ax, [(f"warp {w}", warp_color(w)) for w in range(4)], title="held by", outside=False,
               loc="lower right")
    r0 = r // access.lanes * access.lanes
    c0 = c // 16 * 16
    rows, cols = slice(r0, min(M, r0 + access.lanes)), slice(c0, min(N, c0 + 16))
    sub = own[rows, cols]
    colors = np.empty(sub.shape[:2], dtype=object)
    labels = np.empty(sub.shape[:2], dtype=object)
    for i in range(sub.shape[0]):
        for k in range(sub.shape[1]):
            w, _, t, j, h = sub[i, k]
            colors[i, k] = thread_color(t)
            labels[i, k] = f"{t}\nr{j}" + (("lo", "hi")[h] if access.pack16 else "")
    draw_grid(zx, colors, text=labels, fontsize=5,
              title=f"zoom: rows {rows.start}..{rows.stop - 1}, columns {cols.start}..{cols.stop - 1} "
                    f"(thread, register)", xlabel="n", ylabel="m",
              xticks=list(range(cols.start, cols.stop)), yticks=list(range(rows.start, rows.stop)))
    zx.add_patch(plt.Rectangle((c - c0 - 0.5, r - r0 - 0.5), 1, 1, fill=False, linewidth=2.5,
                               edgecolor="black"))
    add_legend(zx, [(f"T{t}", thread_color(t)) for t in range(0, 32, 4)]
               + [(f"D[{r}][{c}]", "white")], title="thread (every 4th)")
    fig.tight_layout()
    return fig


def ld_widget():
    """An interactive map: pick the shape, .num, pack and the warp."""
    import ipywidgets as W

    def show(shape, num, pack16, warp):
        try:
            acc = TmemAccess(shape, num, pack16)
        except TmemError as e:
            print(e)
            return
        draw_ld_map(acc, warp)
        plt.show()
        lo, hi = warp_lane_range(warp)
        print(f"{acc.ptx('ld')}: {acc.registers} registers per thread, {acc.bytes_per_warp} bytes per "
              f"warp; warp {warp} may use lanes {lo}..{hi - 1}")

    return W.interactive(show, shape=W.Dropdown(options=list(SHAPES), value="16x256b"),
                         num=W.Dropdown(options=list(NUMS), value=1),
                         pack16=W.Checkbox(value=False, description="pack::16b"),
                         warp=W.IntSlider(value=0, min=0, max=7))
