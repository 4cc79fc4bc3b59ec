"""Pictures of the trip: where the data of one row is after each hop, the order of events, the grid of
tiles, and the widget that moves along the trip.

Colour rules. In the hop pictures the 16-byte piece q of a 128-byte row (eight f16 of A or B, four f32
of D) is `thread_color(4 q)`, as notebook 03 colours K chunks; everything that is not the followed row is
faded; warp quarters carry `warp_color`. In the timelines a hop has the colour of the memory it writes
into (`MEMORY_COLORS`, notebook 00's data path); a hop that only completes or publishes what is there
(the commit, the fence) is that memory's colour, hatched. Every text is at least 9 pt at the ~1000 px
a notebook shows.
"""
from __future__ import annotations

import numpy as np
from matplotlib import rc_context
from matplotlib.colors import to_rgba
from matplotlib.patches import Patch, Rectangle

from ..plotting import MEMORY_COLORS, cta_color, figure_at, thread_color, warp_color
from ..tma.model import smem_chunks
from .problem import SMEM_D
from .trace import HOP_NAMES, HOPS, hop_of

__all__ = ["plot_hop", "plot_trip", "trip_widget", "piece_color", "plot_timeline", "plot_grid"]

_GREY = np.array(to_rgba("#e6e6e6"))
_RC = {"font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10, "xtick.labelsize": 9, "ytick.labelsize": 9,
       "legend.fontsize": 9, "legend.title_fontsize": 9, "figure.titlesize": 11}


def piece_color(q: int):
    """Colour of 16-byte piece q (0..7) of a 128-byte row."""
    return thread_color(4 * (int(q) % 8), 32)


def _piece_rgba(q, fade):
    c = np.array(to_rgba(piece_color(q)))
    return c if not fade else 0.25 * c + 0.75 * _GREY


def _legend(ax, pairs, title=None, outside=True, **kw):
    """A legend of (label, colour or Patch kwargs) pairs, at 9 pt, outside the axes on the right."""
    handles = [Patch(label=lab, **{"edgecolor": "black", "linewidth": 0.5,
                                   **(c if isinstance(c, dict) else {"facecolor": c})}) for lab, c in pairs]
    where = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0)} if outside else {}
    return ax.legend(handles=handles, title=title, fontsize=9, title_fontsize=9, **where, **kw)


def _atom(ax, rows, cols, follow, label_all=True):
    """An 8-line x 8-chunk swizzle atom; each chunk shows the piece q it holds."""
    img = np.tile(_GREY, (rows.shape[0], rows.shape[1], 1))
    for i in range(rows.shape[0]):
        for j in range(rows.shape[1]):
            q = cols[i, j]
            if q >= 0:
                img[i, j] = _piece_rgba(q, not follow[i, j])
                if label_all or follow[i, j]:
                    ax.text(j, i, str(q), ha="center", va="center", fontsize=10,
                            weight="bold" if follow[i, j] else "normal")
    ax.imshow(img, interpolation="nearest", aspect="auto")
    ax.set_xticks(range(8))
    ax.set_xticks(np.arange(-0.5, 8), minor=True), ax.set_yticks(np.arange(-0.5, rows.shape[0]), minor=True)
    ax.grid(which="minor", color="white", linewidth=0.8)
    ax.tick_params(which="minor", length=0)
    ax.set_yticks(range(rows.shape[0]), [f"line {int(r)}" for r in rows[:, 0]])


def _mark_row(ax, row, x0, width, text):
    """A box around `row` and its label inside the axes, just above it."""
    ax.add_patch(Rectangle((x0 - 0.5, row - 1.5), width, 3, fill=False, edgecolor="black", linewidth=1.4))
    above = row >= 8  # near the top edge the label goes under the row, inside the axes
    ax.text(x0 + 1, row - 3 if above else row + 3, text, va="bottom" if above else "top", ha="left", fontsize=10,
            bbox=dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor="none", alpha=0.9))


def _pieces_legend(ax, what, extra=()):
    return _legend(ax, [(what(q), piece_color(q)) for q in range(8)] + list(extra),
                   title="16-byte piece q of a row")


def _smem_hop(fig, p, h, row):
    lo = 8 * (row // 8)
    axes = fig.subplots(1, 2)
    for ax, name, tmap, base in ((axes[0], "A", p.tmap_a, 0), (axes[1], "B", p.tmap_b, 0x4000)):
        if h.name == "gmem":
            rows, cols = np.repeat(np.arange(128)[:, None], 8, 1), np.tile(np.arange(8), (128, 1))
        else:
            rows, cols = smem_chunks(tmap, base)
            rows, cols = rows.reshape(-1, 8), cols.reshape(-1, 8)
        rows, cols = rows[lo:lo + 8], cols[lo:lo + 8]
        _atom(ax, rows, cols, (rows == row) if name == "A" else np.ones_like(rows, bool))
        start = (base + 128 * lo) if h.name == "tma_load" else 128 * lo
        ax.set_title(f"{name} in {'SMEM' if h.name == 'tma_load' else 'GMEM'}, bytes "
                     f"0x{start:05x}-0x{start + 1023:05x}")
        ax.set_xlabel("16-byte chunk of the 128-byte line")
    _pieces_legend(axes[1], lambda q: f"piece {q}: k {8 * q}-{8 * q + 7}")
    if h.name == "gmem":
        fig.suptitle(f"In GMEM every row is plain: piece q at chunk q (A row {row} bright; D row {row} needs "
                     "every row of B)")
    else:
        fig.suptitle(f"TMA load, 128B swizzle: piece q of line r lands in chunk q xor (r mod 8) - "
                     f"A row {row} (bright) at q xor {row % 8}")


def _tmem_hop(fig, p, h, row):
    ax = fig.subplots(1, 1)
    cols_total, used = 512, p.N
    img = np.tile(_GREY, (128, cols_total, 1))
    n = np.arange(used)
    for q in range(8):
        sel = np.zeros(cols_total, bool)
        sel[:used] = ((n % 32) // 4) == q
        img[:, sel] = _piece_rgba(q, True)
        img[row, sel] = _piece_rgba(q, False)
    ax.imshow(img, aspect="auto", interpolation="nearest", extent=(-0.5, cols_total - 0.5, 127.5, -0.5))
    for w in range(4):
        ax.add_patch(Rectangle((-40, 32 * w - 0.5), 36, 32, facecolor=warp_color(w), edgecolor="white"))
        ax.text(-22, 32 * w + 15.5, f"warp {w}", rotation=90, ha="center", va="center", fontsize=9, color="white")
    ax.set_xlim(-42, cols_total - 0.5)
    ax.axvline(used - 0.5, color="black", linewidth=1.2)
    ax.text(used + 10, 100, f"columns {used}-{cols_total - 1}: not allocated by this CTA\n"
            f"(tcgen05.alloc took {used} of the SM's {cols_total})", fontsize=10, va="center")
    _mark_row(ax, row, 0, used, f"lane {row} = D row {row}")
    ax.set_xlabel("TMEM column (32 bits each; D column n is column n)")
    ax.set_ylabel("TMEM lane")
    _pieces_legend(ax, lambda q: f"piece {q}: columns 32c+{4 * q}..{4 * q + 3}",
                   [(f"warp {w}: lanes {32 * w}-{32 * w + 31} only", warp_color(w)) for w in range(4)])
    state = "complete: mma_done's phase 0 flipped" if h.name == "commit" else "still being written until the commit"
    fig.suptitle(f"TMEM after the {h.name}: D in lanes 0-127 x columns 0-{used - 1} of {cols_total}, lane m = "
                 f"row m; {state}")


def _regs_hop(fig, p, h, row):
    ax = fig.subplots(1, 1)
    w, lane = row // 32, row % 32
    img = np.zeros((32, 128, 4))
    n = np.arange(128)
    for q in range(8):
        sel = ((n % 32) // 4) == q
        img[:, sel] = _piece_rgba(q, True)
        img[lane, sel] = _piece_rgba(q, False)
    ax.imshow(img, aspect="auto", interpolation="nearest")
    for c in range(4):
        if c:
            ax.axvline(32 * c - 0.5, color="black", linewidth=1.2)
        low = lane < 24
        ax.text(32 * c + 15.5, 30.6 if low else 0.4, f"load {c}: cols {32 * c}-{32 * c + 31}", ha="center",
                va="bottom" if low else "top",
                fontsize=9, bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.85))
    ax.add_patch(Rectangle((-0.5, lane - 0.5), 128, 1, fill=False, edgecolor="black", linewidth=1.4))
    ax.text(1, lane - 1 if lane >= 3 else lane + 1, f"thread {row} (lane {lane}): D row {row}",
            va="bottom" if lane >= 3 else "top", fontsize=10,
            bbox=dict(boxstyle="round,pad=0.2", facecolor="white", edgecolor="none", alpha=0.9))
    ax.set_yticks([0, 8, 16, 24, 31], [f"{32 * w + t} (lane {t})" for t in (0, 8, 16, 24, 31)])
    ax.set_ylabel(f"thread of warp {w}")
    ax.set_xlabel("register 32c + j (load c, register j of its .x32)")
    _pieces_legend(ax, lambda q: f"piece {q}: registers 32c+{4 * q}..{4 * q + 3}",
                   [(f"warp {w} reads TMEM lanes {32 * w}-{32 * w + 31}", warp_color(w))])
    fig.suptitle(f"tcgen05.ld.32x32b.x32: warp {w} reads only lanes {32 * w}-{32 * w + 31}; four loads give "
                 f"thread {row} all 128 columns of row {row}")
    for spine in ax.spines.values():
        spine.set(color=warp_color(w), linewidth=2.5)


def _dtile_hop(fig, p, h, row):
    axes = fig.subplots(1, 4, sharey=True)
    t = p.d_tile
    lo = 8 * (row // 8)
    for b, ax in enumerate(axes):
        addr = SMEM_D + b * t.box_bytes + 128 * lo + 16 * np.arange(64)
        r, c = t.chunk_of_address(addr)
        r, c = r.reshape(8, 8), c.reshape(8, 8)
        _atom(ax, r, (c % 32) // 4, r == row, label_all=False)
        a0 = SMEM_D + b * t.box_bytes + 128 * lo
        ax.set_title(f"box {b}: cols {32 * b}-{32 * b + 31}\nfrom SMEM 0x{a0:05x}", fontsize=10)
        ax.set_xlabel("chunk")
    _pieces_legend(axes[3], lambda q: f"piece {q}: cols 32b+{4 * q}..{4 * q + 3}")
    if h.name == "st_shared":
        fig.suptitle(f"st.shared.v4: thread {row} writes piece q of each box to chunk q xor {row % 8} of line "
                     f"{row} - the loads' swizzle")
    else:
        fig.suptitle("fence.proxy.async + bar.sync: the same bytes, now visible to the TMA engine (async proxy)")


def _gmem_d_hop(fig, p, h, row):
    ax = fig.subplots(1, 1)
    n = np.arange(p.N)
    img = np.zeros((p.M, p.N, 4))
    for q in range(8):
        sel = ((n % 32) // 4) == q
        img[:, sel] = _piece_rgba(q, True)
        img[row, sel] = _piece_rgba(q, False)
    ax.imshow(img, aspect="auto", interpolation="nearest")
    _mark_row(ax, row, 0, p.N, f"D row {row}: columns 0-{p.N - 1} in order")
    for b in range(4):
        if b:
            ax.axvline(32 * b - 0.5, color="black", linewidth=1.2)
        low = row < p.M - 16  # the box names sit at the bottom, or at the top when row is down there
        ax.text(32 * b + 15.5, p.M - 3 if low else 3, f"box {b}", ha="center", va="bottom" if low else "top",
                fontsize=10,
                bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.85))
    ax.set_xlabel("column n of D (four boxes of 32, one TMA store each)")
    ax.set_ylabel("row m of D")
    _pieces_legend(ax, lambda q: f"piece {q}: columns 32b+{4 * q}..{4 * q + 3}")
    fig.suptitle(f"TMA store: the engine un-swizzles each box - D row {row} is row-major again in GMEM")


def plot_hop(trace, hop: str, row: int = 0, ax=None):
    """Where row `row` of A (before the MMA) or of D (after it) lives after `hop`. Returns the figure."""
    import matplotlib.pyplot as plt
    h = hop_of(hop)
    p = trace.problem
    row = int(row)
    if not 0 <= row < p.M:
        raise ValueError(f"row must be in [0, {p.M}), got {row}")
    draw = {"gmem": _smem_hop, "tma_load": _smem_hop, "mma": _tmem_hop, "commit": _tmem_hop, "tmem_ld": _regs_hop,
            "st_shared": _dtile_hop, "fence": _dtile_hop, "tma_store": _gmem_d_hop}[h.name]
    with rc_context(_RC):
        fig = figure_at(ax, (9.6, 4.0))      # several panels: given `ax`, they take its place
        draw(fig, p, h, row)
        _ = fig.tight_layout() if ax is None else None
    return fig


def plot_trip(trace, row: int = 0):
    """One picture per hop, in order: the followed row's bytes (bright) among the rest."""
    return [plot_hop(trace, h.name, row) for h in HOPS]


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


# The memory each hop writes into (None: it writes none of them), and whether it only completes or
# publishes what is already there (drawn hatched).
_MODEL_MEM = {"tma_load": ("SMEM", False), "mma": ("TMEM", False), "commit": ("TMEM", True),
              "tmem_ld": ("RMEM", False), "st_shared": ("SMEM", False), "fence": ("SMEM", True),
              "tma_store": ("GMEM", False)}
_MODEL_NAME = {"setup": "setup", "tma_load": "TMA load", "mma": "MMA", "commit": "commit", "tmem_ld": "tcgen05.ld",
               "st_shared": "st.shared", "fence": "fence", "tma_store": "TMA store", "teardown": "free"}
_RIBBON = {"TMA store": "store"}
# Hopper's kernel, by the event that ends each measured segment: wgmma writes D into registers.
_MEASURED = {"load done": ("TMA load", "SMEM", False), "mma issued": ("wgmma", "RMEM", False),
             "mma done": ("wait_group", "RMEM", True), "st.shared done": ("st.shared", "SMEM", False),
             "fenced": ("fence", "SMEM", True), "store issued": ("TMA store", "GMEM", False),
             "store read": ("TMA store", "GMEM", False)}
_NONE = "#bdbdbd"


def _style(mem, hatched):
    c = MEMORY_COLORS[mem] if mem else _NONE
    if hatched:
        return {"facecolor": 0.45 * np.array(to_rgba(c)) + 0.55, "hatch": "///", "edgecolor": c}
    return {"facecolor": c, "edgecolor": "black"}


def _timeline_model(ax, events, seen):
    actors = list(dict.fromkeys(e.actor for e in events))
    for e in events:
        mem, hatched = _MODEL_MEM.get(e.hop, (None, False))
        seen.setdefault((mem, hatched), {})[_MODEL_NAME[e.hop]] = 1
        ax.barh(actors.index(e.actor), 0.9, left=e.t, linewidth=0.5, **_style(mem, hatched))
        if e.barrier and "completes" in e.action:
            ax.text(e.t + 1.3, actors.index(e.actor), f"{e.barrier}: phase 0 completes", va="center", fontsize=9)
    # The hops along the top; the four tcgen05.ld / st.shared pairs read as one group.
    groups = []
    for e in events:
        name = "ld + st.shared x4" if e.hop in ("tmem_ld", "st_shared") else _MODEL_NAME[e.hop]
        name = _RIBBON.get(name, name)
        if groups and groups[-1][0] == name:
            groups[-1][2] = e.t
        else:
            groups.append([name, e.t, e.t])
    for name, t0, t1 in groups:
        ax.text((t0 + t1) / 2 + 0.45, -1.05, name, ha="center", va="center", fontsize=9)
        if t0:
            ax.axvline(t0 - 0.05, color="#999999", linewidth=0.6, linestyle=":")
    ax.set_yticks(range(len(actors)), actors)
    ax.set_ylim(len(actors) - 0.5, -1.6)
    ax.set_xlim(-0.3, len(events) + 0.2)
    ax.set_xlabel("step of the model (order, not time)")
    ax.set_title("Model, sm_100 kernel: the loads' bytes complete mbarrier full, the commit completes mma_done")


def _timeline_measured(ax, segments, label, seen):
    import textwrap
    span = max(t1 for *_, t1 in segments)
    for w, a, b, t0, t1 in segments:
        name, mem, hatched = _MEASURED.get(b, ("setup" if b == "load issued" else "exit", None, False))
        seen.setdefault((mem, hatched), {})[name + (" (H100)" if name.startswith("w") else "")] = 1
        ax.barh(w, max(t1 - t0, 1), left=t0, linewidth=0.5, **_style(mem, hatched))
        if t1 - t0 > (0.013 * len(name) + 0.02) * span:  # the name fits inside the bar
            ax.text((t0 + t1) / 2, w, name, ha="center", va="center", fontsize=9,
                    color="white" if mem in ("GMEM", "SMEM", "TMEM") and not hatched else "black")
    tot = {w: max(t1 for w_, *_, t1 in segments if w_ == w) for w in {s[0] for s in segments}}
    epi = sum(t1 - t0 for w, a, b, t0, t1 in segments if w == 0 and b in ("st.shared done", "fenced", "store issued",
                                                                           "store read"))
    ax.text(0.995, 0.3, textwrap.fill(label, 26), transform=ax.transAxes, ha="right", va="center", fontsize=9,
            style="italic")
    ax.set_yticks(range(len(tot)), [f"warp {w}" for w in sorted(tot)])
    ax.set_ylim(len(tot) - 0.5, -0.5)
    ax.set_xlim(0, span * 1.01)
    ax.set_xlabel("ns since the first stamp (%globaltimer, lane 0 of each warp)")
    ax.set_title(f"Measured, Hopper kernel: the epilogue (st.shared to TMA store) is {100 * epi / tot[0]:.0f}% "
                 f"of warp 0's {tot[0]} ns")


def plot_timeline(events, segments=None, label: str = "measured"):
    """The model's steps per actor (x: step) and, under it when `segments` (from
    `timeline.measured_segments`) are given, the measured segments per warp (x: ns), labelled `label`.
    Each hop has the colour of the memory it writes (notebook 00's)."""
    import matplotlib.pyplot as plt
    with rc_context(_RC):
        fig, axes = plt.subplots(2 if segments else 1, 1, figsize=(9.6, 7.0 if segments else 3.9), squeeze=False)
        seen = {}
        _timeline_model(axes[0, 0], events, seen)
        if segments:
            _timeline_measured(axes[1, 0], segments, label, seen)
        where = {"GMEM": "writes GMEM", "SMEM": "writes SMEM", "TMEM": "writes TMEM", "RMEM": "writes registers",
                 None: "no memory"}
        pairs = []
        for mem in ("SMEM", "TMEM", "RMEM", "GMEM", None):
            for hatched in (False, True):
                if (mem, hatched) in seen:
                    verb = {"TMEM": "completes TMEM", "RMEM": "completes registers",
                            "SMEM": "publishes SMEM"}.get(mem) if hatched else where[mem]
                    names = ", ".join(seen[(mem, hatched)])
                    pairs.append((f"{verb}:\n  {names}", _style(mem, hatched)))
        _legend(axes[0, 0], pairs, title="colour = memory written", labelspacing=0.6)
        fig.tight_layout()
    return fig


def plot_grid(g, cta=(1, 1)):
    """Top: which CTA computes which tile of D (colour = its rank in its cluster, thick lines =
    clusters). Below: the CTAs that receive CTA `cta`'s A slice and B slice (its multicast masks)."""
    import matplotlib.pyplot as plt
    gm, gn = g.grid
    cm, cn = g.cluster_shape
    ld0 = g.loads(*cta)
    ranks = sorted({ld.rank for ld in g.all_loads()})
    with rc_context(_RC):
        fig = plt.figure(figsize=(9.6, 7.4))
        spec = fig.add_gridspec(2, 2, height_ratios=(1.25, 1))
        axes = [fig.add_subplot(spec[0, :]), fig.add_subplot(spec[1, 0]), fig.add_subplot(spec[1, 1])]
        for k, ax in enumerate(axes):
            mask = ld0.a_mask if k == 1 else ld0.b_mask
            for ld in g.all_loads():
                bx, by = ld.cta
                same = bx // cm == cta[0] // cm and by // cn == cta[1] // cn
                lit = k == 0 or (same and (mask >> ld.rank & 1))
                color = np.array(to_rgba(cta_color(ld.rank)))
                ax.add_patch(Rectangle((by, bx), 1, 1, facecolor=color if lit else 0.2 * color + 0.8 * _GREY,
                                       edgecolor="white", linewidth=0.8))
                txt = f"({bx},{by})\nrank {ld.rank}" if k == 0 else (f"r{ld.rank}" if lit else "")
                ax.text(by + 0.5, bx + 0.5, txt, ha="center", va="center", fontsize=9 if k == 0 else 10,
                        color="white" if lit else "black")
            for x in range(0, gn + 1, cn):
                ax.axvline(x, color="black", linewidth=2)
            for y in range(0, gm + 1, cm):
                ax.axhline(y, color="black", linewidth=2)
            ax.add_patch(Rectangle((cta[1], cta[0]), 1, 1, fill=False, edgecolor="black", linewidth=3.5))
            ax.set_xlim(0, gn)
            ax.set_ylim(gm, 0)
            ax.set_aspect("equal")
            ax.set_xticks(np.arange(gn) + 0.5, [str(i) for i in range(gn)])
            ax.set_yticks(np.arange(gm) + 0.5, [str(i) for i in range(gm)])
            ax.tick_params(length=0)
            ax.set_xlabel("tile column n (N / 128)" if k == 0 else "tile column n")
            ax.set_ylabel("tile row m (M / 128)" if k == 0 else "tile row m")
        axes[0].set_title(f"{g.M}x{g.N}x{g.K}: one CTA per 128x128 tile of D; thick lines: clusters of {cm}x{cn}")
        _legend(axes[0], [(f"rank {r}", cta_color(r)) for r in ranks]
                + [("followed CTA", {"facecolor": "white", "linewidth": 2.5})],
                title="rank in its cluster")

        def lands(mask):
            rs = [str(r) for r in range(16) if mask >> r & 1]
            return f"land only in its own SMEM (rank {rs[0]})" if len(rs) == 1 else f"land in ranks {', '.join(rs)}"

        a0, na = ld0.a_issue
        b0, nb = ld0.b_issue
        axes[1].set_title(f"A rows {a0}-{a0 + na - 1} {lands(ld0.a_mask)}")
        axes[2].set_title(f"B rows {b0}-{b0 + nb - 1} {lands(ld0.b_mask)}")
        lesson = {"1sm": f"One CTA per tile: CTA {cta} loads all 128 rows of its A tile and of its B tile itself",
                  "multicast": f"Multicast cluster {cm}x{cn}: CTA {cta} issues {na} A rows and {nb} B rows; "
                               "each slice lands in every CTA of its mask",
                  "2sm": f"2-SM pair: CTA {cta} and its peer run one M=256 MMA; each loads its {na} A rows and "
                         f"{nb} of the 128 B rows"}[g.variant]
        fig.suptitle(lesson)
        fig.tight_layout()
    return fig
