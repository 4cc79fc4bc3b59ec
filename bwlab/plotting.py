"""One colour scheme for every picture in bwlab, and small drawing helpers.

Colours mean the same thing in every notebook:
* CTAs (cluster ranks, CTA tiles):     `cta_color(i)`    — 20 distinct colours (a 16-CTA cluster never repeats)
* warps (and TMEM warp quarters):      `warp_color(w)`   — four fixed colours
* threads of a warp / lanes:           `thread_color(t)` — a 32-step hue wheel
* bytes: loaded / out-of-bounds fill / untouched: BYTE_COLORS
* memories (notebook 00's data path; notebook 06 colours each hop by the memory it writes): MEMORY_COLORS
Every picture carries a title and a legend (`add_legend`).
"""
from __future__ import annotations

import colorsys

import numpy as np

__all__ = ["cta_color", "warp_color", "thread_color", "BYTE_COLORS", "MEMORY_COLORS", "add_legend", "plot_grid",
           "new_figure", "figure_at"]

# tab10 first (so small clusters keep the familiar colours), then the lighter tab20 partners.
_CTA_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94",
               "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"]
_WARPS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52"]
MEMORY_COLORS = {"GMEM": "#8c564b", "SMEM": "#1f77b4", "TMEM": "#9467bd", "RMEM": "#2ca02c"}
BYTE_COLORS = {"loaded": "#4c72b0", "oob fill": "#f2b134", "untouched": "#e6e6e6", "mismatch": "#d62728"}


def cta_color(i: int) -> str:
    return _CTA_COLORS[int(i) % len(_CTA_COLORS)]


def warp_color(w: int) -> str:
    return _WARPS[int(w) % 4]


def thread_color(t: int, n: int = 32) -> tuple:
    h = (int(t) % n) / n
    return colorsys.hsv_to_rgb(h, 0.55, 0.95)


def new_figure(w: float = 8, h: float = 4, **kw):
    import matplotlib.pyplot as plt
    return plt.subplots(figsize=(w, h), **kw)


def add_legend(ax, labels_colors, title=None, loc="upper left", outside=True, ncol=1, **kw):
    """A legend from (label, colour) pairs; placed outside the axes by default."""
    from matplotlib.patches import Patch
    handles = [Patch(facecolor=c, edgecolor="black", linewidth=0.5, label=str(l))
               for l, c in labels_colors]
    if outside:
        return ax.legend(handles=handles, title=title, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                         ncol=ncol, fontsize="small", **kw)
    return ax.legend(handles=handles, title=title, loc=loc, ncol=ncol, fontsize="small", **kw)


def plot_grid(ax, colors, text=None, title=None, xlabel=None, ylabel=None, fontsize=7,
              xticks=None, yticks=None):
    """Draw a (rows, cols) grid of coloured cells; `colors` is an array of RGB(A) or colour strings,
    `text` an optional array of labels. Row 0 is at the top, as in a matrix."""
    from matplotlib.colors import to_rgba
    colors = np.asarray(colors, dtype=object)
    rows, cols = colors.shape[:2]
    img = np.zeros((rows, cols, 4))
    for r in range(rows):
        for c in range(cols):
            img[r, c] = to_rgba(colors[r, c])
    ax.imshow(img, interpolation="nearest", aspect="auto")
    ax.set_xticks(np.arange(-0.5, cols, 1), minor=True)
    ax.set_yticks(np.arange(-0.5, rows, 1), minor=True)
    ax.grid(which="minor", color="white", linewidth=0.5)
    ax.tick_params(which="minor", length=0)
    if xticks is not None:
        ax.set_xticks(range(cols))
        ax.set_xticklabels(xticks, fontsize=fontsize)
    if yticks is not None:
        ax.set_yticks(range(rows))
        ax.set_yticklabels(yticks, fontsize=fontsize)
    if text is not None:
        text = np.asarray(text, dtype=object)
        for r in range(rows):
            for c in range(cols):
                if text[r, c] not in (None, ""):
                    ax.text(c, r, str(text[r, c]), ha="center", va="center", fontsize=fontsize)
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    return ax


def figure_at(ax, figsize):
    """For a picture of several panels: a new figure of `figsize`, or, given `ax`, a subfigure that takes
    `ax`'s place in its figure (so `case.show(ax=ax)` works for every case)."""
    import matplotlib.pyplot as plt
    if ax is None:
        return plt.figure(figsize=figsize)
    fig = ax.figure.add_subfigure(ax.get_subplotspec())
    ax.remove()
    return fig
