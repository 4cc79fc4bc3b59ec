"""Pictures of the trip: where the data of one row is after each hop, and the widget that moves along it.

Colour rule, the same in every hop (and as notebook 03 colours K chunks): the 16-byte piece q of a
128-byte row (eight f16 of A or B, four f32 of D) is `thread_color(4 q)`; everything that is not the
followed row is faded; warp quarters carry `warp_color`.
"""
from __future__ import annotations

import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.patches import Rectangle

from ..plotting import add_legend, thread_color, warp_color
from ..tma import smem_chunks
from .problem import SMEM_D
from .trace import HOP_NAMES, HOPS, hop_of

__all__ = ["plot_hop", "plot_trip", "trip_widget", "piece_color", "plot_timeline", "plot_grid"]

_GREY = np.array(to_rgba("#e6e6e6"))


def piece_color(q: int):
    """Colour of 16-byte piece q (0..7) of a 128-byte row."""
    return thread_color(4 * (int(q) % 8), 32)


def _piece_rgba(q, fade):
    c = np.array(to_rgba(piece_color(q)))
    return c if not fade else 0.25 * c + 0.75 * _GREY


def _chunk_image(rows, cols, follow):
    """(rows, 8) image of 16-byte chunks: cols[i, j] = piece index (or -1), follow[i, j] = bright."""
    img = np.tile(_GREY, (rows.shape[0], rows.shape[1], 1))
    for i in range(rows.shape[0]):
        for j in range(rows.shape[1]):
            if cols[i, j] >= 0:
                img[i, j] = _piece_rgba(cols[i, j], not follow[i, j])
    return img


def _atom(ax, rows, cols, follow, label, cols_abs=None, label_all=True):
    """An 8-line x 8-chunk swizzle atom with each chunk's content written in it."""
    from ..plotting import draw_grid
    colors = np.empty(rows.shape, dtype=object)
    text = np.empty(rows.shape, dtype=object)
    for i in range(rows.shape[0]):
        for j in range(rows.shape[1]):
            q = cols[i, j]
            colors[i, j] = tuple(_piece_rgba(q, not follow[i, j])) if q >= 0 else tuple(_GREY)
            a = q if cols_abs is None else cols_abs[i, j]
            text[i, j] = "" if not (label_all or follow[i, j]) else label.format(r=rows[i, j], k0=8 * a, k1=8 * a + 7, n0=a, n1=a + 3)
    draw_grid(ax, colors, text, fontsize=6)
    ax.set_yticks(range(rows.shape[0]))
    ax.set_yticklabels([f"row {int(r)}" for r in rows[:, 0]], fontsize=7)


def _mark_row(ax, row, width):
    from matplotlib.patches import Rectangle
    ax.add_patch(Rectangle((-0.5, row - 1.5), width, 3, fill=False, edgecolor="black", linewidth=1.2))
    ax.annotate(f"row {row}", (width - 0.5, row), xytext=(width + 2, row), va="center", fontsize=8,
                annotation_clip=False)


def _quarters(ax, n, axis="y"):
    for w in range(4):
        if axis == "y":
            ax.axhspan(32 * w - 0.5, 32 * w + 31.5, xmin=-0.03, xmax=-0.01, color=warp_color(w), clip_on=False)
        else:
            ax.axvspan(32 * w - 0.5, 32 * w + 31.5, ymin=1.01, ymax=1.03, color=warp_color(w), clip_on=False)


def _legend(ax, what, warps=False):
    add_legend(ax, [(f"{what} {q}", piece_color(q)) for q in range(8)]
               + ([(f"warp {w} (rows {32 * w}-{32 * w + 31})", warp_color(w)) for w in range(4)] if warps else []),
               title="16-byte piece of a row")


def plot_hop(trace, hop: str, row: int = 0, ax=None):
    """Where row `row` of A (before the MMA) or of D (after it) lives after `hop`. Returns the figure."""
    import matplotlib.pyplot as plt
    h = hop_of(hop)
    p = trace.problem
    row = int(row)
    if not 0 <= row < p.M:
        raise ValueError(f"row must be in [0, {p.M}), got {row}")
    fig = plt.figure(figsize=(9.6, 3.6))
    title = f"after {h.name}: {h.title}\n{h.instruction}  ->  data in {h.where}"
    if h.name in ("gmem", "tma_load"):
        axes = fig.subplots(1, 2)
        lo = 8 * (row // 8)
        for ax_, name, tmap, base in ((axes[0], "A", p.tmap_a, 0), (axes[1], "B", p.tmap_b, 0x4000)):
            if h.name == "gmem":
                rows = np.repeat(np.arange(128)[:, None], 8, 1)
                cols = np.tile(np.arange(8), (128, 1))
            else:
                rows, cols = smem_chunks(tmap, base)
                rows, cols = rows.reshape(-1, 8), cols.reshape(-1, 8)
            rows, cols = rows[lo:lo + 8], cols[lo:lo + 8]
            follow = (rows == row) if name == "A" else np.ones_like(rows, bool)
            _atom(ax_, rows, cols, follow, "k {k0}-{k1}")
            start = (base + 128 * lo) if h.name == "tma_load" else 128 * lo
            where = "GMEM (row-major, K contiguous)" if h.name == "gmem" else "SMEM (128B swizzle)"
            ax_.set_title(f"{name} in {where}: bytes 0x{start:05x}-0x{start + 1023:05x}\n"
                          f"(lines {lo}-{lo + 7}; the pattern repeats every 8 lines)", fontsize=8)
            ax_.set_xlabel("16-byte chunk of the 128-byte line")
            ax_.set_ylabel("128-byte line")
        _legend(axes[1], "K piece")
        fig.suptitle(title + f"   (D row {row} needs A row {row} and every row of B)", fontsize=9)
    elif h.name in ("mma", "commit", "tmem_ld"):
        ax = fig.subplots(1, 1)
        m, n = np.meshgrid(np.arange(128), np.arange(128), indexing="ij")
        img = np.zeros((128, 128, 4))
        for q in range(8):
            sel = ((n % 32) // 4) == q
            img[sel & (m == row)] = _piece_rgba(q, False)
            img[sel & (m != row)] = _piece_rgba(q, True)
        ax.imshow(img, aspect="auto", interpolation="nearest")
        _mark_row(ax, row, 128)
        _quarters(ax, 128)
        if h.name == "tmem_ld":
            ax.set_xlabel("register (32c + j: load c, register j of tcgen05.ld.32x32b.x32)")
            ax.set_ylabel("thread of the CTA")
            ax.set_title(f"registers: thread {row} (warp {row // 32}, lane {row % 32}) holds D row {row}", fontsize=9)
        else:
            ax.set_xlabel("TMEM column (one f32 of D each)")
            ax.set_ylabel("TMEM lane")
            done = " - complete: the commit's mbarrier phase flipped" if h.name == "commit" else \
                " (asynchronous until the commit)"
            ax.set_title(f"TMEM: D row {row} is lane {row}{done}", fontsize=9)
        _legend(ax, "f32 piece", warps=True)
        fig.suptitle(title, fontsize=9)
    elif h.name in ("st_shared", "fence"):
        axes = fig.subplots(1, 4, sharey=True)
        t = p.d_tile
        lo = 8 * (row // 8)
        for b, ax_ in enumerate(axes):
            addr = SMEM_D + b * t.box_bytes + 128 * lo + 16 * np.arange(64)
            r, c = t.chunk_of_address(addr)
            r, c = r.reshape(8, 8), c.reshape(8, 8)
            _atom(ax_, r, (c % 32) // 4, r == row, "n {n0}-\n{n1}", cols_abs=c, label_all=False)
            a0 = SMEM_D + b * t.box_bytes + 128 * lo
            ax_.set_title(f"box {b} (D columns {32 * b}-{32 * b + 31})\nSMEM 0x{a0:05x}-0x{a0 + 1023:05x}",
                          fontsize=8)
            ax_.set_xlabel("chunk")
        axes[0].set_ylabel("128-byte line")
        _legend(axes[3], "f32 piece")
        extra = ("  (thread m writes row m: chunk q lands at q ^ (m % 8))" if h.name == "st_shared" else
                 "\nthe same bytes, now ordered before the TMA engine's (async proxy) reads")
        fig.suptitle(title + extra, fontsize=9)
    else:
        ax = fig.subplots(1, 1)
        n = np.arange(128)
        img = np.zeros((p.M, p.N, 4))
        for q in range(8):
            sel = ((n % 32) // 4) == q
            img[:, sel] = _piece_rgba(q, True)
            img[row, sel] = _piece_rgba(q, False)
        ax.imshow(img, aspect="auto", interpolation="nearest")
        _mark_row(ax, row, p.N)
        for b in range(1, 4):
            ax.axvline(32 * b - 0.5, color="black", linewidth=0.8)
        ax.set_xlabel("column n of D (four boxes of 32, one TMA store each)")
        ax.set_ylabel("row m of D")
        ax.set_title(f"GMEM: D row {row} back in row-major order, unswizzled by the TMA store", fontsize=9)
        _legend(ax, "f32 piece")
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def plot_trip(trace, row: int = 0):
    """One small picture per hop, left to right: the followed row's bytes (bright) among the rest."""
    figs = [plot_hop(trace, h.name, row) for h in HOPS]
    return figs


def trip_widget(trace, row: int = 37, column: int = 70):
    """A slider over the hops (only the hops that exist), a row and a column; the picture and where
    D[row][column] sits appear under the controls."""
    import ipywidgets as W
    import matplotlib.pyplot as plt
    from IPython.display import display
    hop = W.SelectionSlider(options=list(HOP_NAMES), value="gmem", description="hop",
                            layout=W.Layout(width="420px"), continuous_update=False)
    r = W.IntSlider(value=row, min=0, max=trace.problem.M - 1, description="row m",
                    layout=W.Layout(width="280px"), continuous_update=False)
    c = W.IntSlider(value=column, min=0, max=trace.problem.N - 1, description="column n",
                    layout=W.Layout(width="280px"), continuous_update=False)
    out = W.Output()

    def redraw(*_):
        with out:
            out.clear_output(wait=True)
            plt.close("all")
            plot_hop(trace, hop.value, r.value)
            plt.show()
            for name, place, raw in trace.locate(r.value, c.value):
                if name == hop.value:
                    val = "" if raw is None else f"   raw 0x{raw:08x} = {np.uint32(raw).view(np.float32)}"
                    print(f"D[{r.value}][{c.value}] after {name}: {place}{val}")

    for w in (hop, r, c):
        w.observe(redraw, names="value")
    redraw()
    box = W.VBox([W.HBox([hop, r, c], layout=W.Layout(max_width="1000px")), out])
    display(box)
    return box


_HOP_ORDER = ("setup",) + HOP_NAMES + ("teardown",)


def _hop_color(hop: str):
    from ..plotting import cta_color
    return cta_color(10 + _HOP_ORDER.index(hop)) if hop in _HOP_ORDER else "#7f7f7f"


def plot_timeline(events, segments=None, label: str = "measured"):
    """The model's steps per actor (x: step), and beside it the measured segments per warp (x: ns from
    the first stamp) when `segments` (from `timeline.measured_segments`) are given."""
    import matplotlib.pyplot as plt
    n = 2 if segments else 1
    fig, axes = plt.subplots(1, n, figsize=(9.6, 3.8), squeeze=False)
    ax = axes[0, 0]
    actors = list(dict.fromkeys(e.actor for e in events))
    for e in events:
        y = actors.index(e.actor)
        ax.barh(y, 0.9, left=e.t, color=_hop_color(e.hop), edgecolor="black", linewidth=0.4)
        if e.barrier and e.phase >= 0 and ("completes" in e.action or "-> True" in e.action):
            ax.annotate(f"{e.barrier} phase {e.phase - 1} done", (e.t + 0.45, y), xytext=(e.t + 0.45, y - 0.6),
                        fontsize=6, ha="center", arrowprops=dict(arrowstyle="-", linewidth=0.5))
    ax.set_yticks(range(len(actors)))
    ax.set_yticklabels(actors, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("step (order, not time)")
    ax.set_title("model: one tile on sm_100", fontsize=9)
    hops = list(dict.fromkeys(e.hop for e in events))
    add_legend(axes[0, -1], [(h, _hop_color(h)) for h in hops], title="hop")
    if segments:
        from .timeline import FLOW_EVENTS
        ax = axes[0, 1]
        to_hop = {"load issued": "tma_load", "load done": "tma_load", "mma issued": "mma", "mma done": "commit",
                  "st.shared done": "st_shared", "fenced": "fence", "store issued": "tma_store",
                  "store read": "tma_store", "end": "teardown"}
        for w, a, b, t0, t1 in segments:
            ax.barh(w, max(t1 - t0, 1), left=t0, color=_hop_color(to_hop.get(b, "setup")), edgecolor="black",
                    linewidth=0.4)
        ax.set_yticks(range(4))
        ax.set_yticklabels([f"warp {w}" for w in range(4)], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlabel("ns since the first stamp (%globaltimer)")
        ax.set_title(f"Hopper kernel, {label}", fontsize=8)
        assert FLOW_EVENTS
    fig.tight_layout()
    return fig


def plot_grid(g, cta=(1, 1)):
    """Left: which CTA computes which tile of D (colour = rank in its cluster, thick lines = clusters).
    Right two panels: the CTAs that receive CTA `cta`'s A slice and B slice (its multicast masks)."""
    import matplotlib.pyplot as plt
    from ..plotting import cta_color
    gm, gn = g.grid
    cm, cn = g.cluster_shape
    ld0 = g.loads(*cta)
    fig, axes = plt.subplots(1, 3, figsize=(9.8, 3.6))
    for k, ax in enumerate(axes):
        for ld in g.all_loads():
            bx, by = ld.cta
            same = bx // cm == cta[0] // cm and by // cn == cta[1] // cn
            lit = k == 0 or (same and ((ld0.a_mask if k == 1 else ld0.b_mask) >> ld.rank & 1))
            color = to_rgba(cta_color(ld.rank))
            ax.add_patch(Rectangle(
                (by, bx), 1, 1, facecolor=color if lit else 0.2 * np.array(color) + 0.8 * _GREY,
                edgecolor="white", linewidth=0.8))
            txt = f"({bx},{by})\nr{ld.rank}" if k == 0 else (f"r{ld.rank}" if lit else "")
            ax.text(by + 0.5, bx + 0.5, txt, ha="center", va="center", fontsize=6)
        for x in range(0, gn + 1, cn):
            ax.axvline(x, color="black", linewidth=1.6)
        for y in range(0, gm + 1, cm):
            ax.axhline(y, color="black", linewidth=1.6)
        ax.add_patch(Rectangle(
            (cta[1], cta[0]), 1, 1, fill=False, edgecolor="black", linewidth=2.2))
        ax.set_xlim(0, gn)
        ax.set_ylim(gm, 0)
        ax.set_aspect("equal")
        ax.set_xlabel("tile column (N / 128)")
        ax.set_ylabel("tile row (M / 128)")
    axes[0].set_title(f"{g.variant}: {g.M}x{g.N}x{g.K}, CTA (m, n) and its rank\n"
                      f"cluster {cm}x{cn} (thick lines)", fontsize=8)
    axes[1].set_title(f"CTA {cta}: its A slice (rows {ld0.a_issue[0]}-{sum(ld0.a_issue) - 1})\n"
                      f"lands in mask 0x{ld0.a_mask:04x}", fontsize=8)
    axes[2].set_title(f"CTA {cta}: its B slice (rows {ld0.b_issue[0]}-{sum(ld0.b_issue) - 1})\n"
                      f"lands in mask 0x{ld0.b_mask:04x}", fontsize=8)
    fig.tight_layout()
    return fig
