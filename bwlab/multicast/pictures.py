"""Pictures and the widget of notebook 02: the cluster grid, masks, where slices land, GPU vs model,
what multicast saves. The only file of the stage that imports matplotlib (inside the functions)."""
from __future__ import annotations

import numpy as np

from ..layout import Layout, format_tuple
from .cluster import cluster_layout_vmnk, cta_coord, cta_masks, format_mask, mask_steps
from .model import multicast_model, slice_chunks
from .params import MulticastConfig
from .partition import l2_read_bytes, plan
from .runner import MulticastRun

__all__ = ["plot_cluster", "plot_mask", "plot_masks_of", "plot_every_mask", "plot_landing", "plot_ranks", "plot_smem_check",
           "plot_savings", "plot_slice_swizzle", "explain_cta", "explorer_choices", "mask_explorer"]


def _grid_of(layout: Layout):
    """Cluster layout -> (rows = CTAs along x/M, cols = CTAs along y/N), rank at each cell."""
    v, m, n = layout[0].size(), layout[1].size(), layout[2].size()
    rows, cols = v * m, n
    ranks = np.zeros((rows, cols), dtype=int)
    for r in range(layout.size()):
        c = cta_coord(layout, r)
        ranks[c[0] + v * c[1], c[2]] = r
    return ranks


def plot_cluster(ax, layout: Layout, title=None, highlight=None):
    """The cluster as a grid of CTAs: x (M) down, y (N) across; each cell shows rank and (v,m,n)."""
    from ..plotting import add_legend, cta_color, plot_grid
    ranks = _grid_of(layout)
    colors = np.empty(ranks.shape, dtype=object)
    text = np.empty(ranks.shape, dtype=object)
    for (i, j), r in np.ndenumerate(ranks):
        colors[i, j] = cta_color(r)
        c = cta_coord(layout, r)
        text[i, j] = f"rank {r}\n({c[0]},{c[1]},{c[2]})"
    plot_grid(ax, colors, text, title=title or f"cluster {layout}: rank and (v,m,n)",
              xlabel="cluster y = N mode", ylabel="cluster x = (V, M) modes",
              xticks=list(range(ranks.shape[1])), yticks=list(range(ranks.shape[0])), fontsize=9)
    if highlight is not None:
        _outline(ax, ranks, highlight)
    add_legend(ax, [(f"CTA rank {r}", cta_color(r)) for r in range(layout.size())], title="colour = CTA",
               ncol=1 if layout.size() <= 8 else 2)
    return ax


def _outline(ax, ranks, rank):
    from matplotlib.patches import Rectangle
    (i,), (j,) = np.nonzero(ranks == rank)
    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="black", linewidth=3))


def plot_mask(ax, layout: Layout, rank: int, kind: str, legend: bool = True):
    """One CTA's A, B or C mask on the cluster grid: CTAs in the mask coloured, the CTA outlined."""
    from ..plotting import BYTE_COLORS, add_legend, plot_grid
    m = cta_masks(layout, rank)
    mask = {"A": m.a, "B": m.b, "C": m.c}[kind]
    ranks = _grid_of(layout)
    on = {"A": "#4c72b0", "B": "#dd8452", "C": "#55a868"}[kind]
    colors = np.where(np.vectorize(lambda r: bool(mask >> r & 1))(ranks), on, BYTE_COLORS["untouched"])
    text = np.vectorize(lambda r: str(r))(ranks).astype(object)
    plot_grid(ax, colors.astype(object), text, title=f"{kind} mask of rank {rank}: 0x{mask:04X}",
              fontsize=7)
    ax.set_xticks([])
    ax.set_yticks([])
    _outline(ax, ranks, rank)
    if legend:
        add_legend(ax, [(f"in the {kind} mask", on), ("not in it", BYTE_COLORS["untouched"])],
                   title="black box = the CTA")
    return ax


def plot_masks_of(layout: Layout, rank: int):
    """A, B and C masks of one CTA side by side, with the bits in the titles."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from ..plotting import BYTE_COLORS
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, kind in zip(axes, "ABC"):
        plot_mask(ax, layout, rank, kind, legend=False)
        for t in ax.texts:
            t.set_fontsize(9)
    m = cta_masks(layout, rank)
    fig.legend(handles=[Patch(facecolor=c, label=f"in the {k} mask") for k, c in
                        (("A", "#4c72b0"), ("B", "#dd8452"), ("C", "#55a868"))]
               + [Patch(facecolor=BYTE_COLORS["untouched"], label="not in it"),
                  Patch(facecolor="white", edgecolor="black", linewidth=2, label=f"rank {rank} itself")],
               loc="lower center", ncol=5, fontsize=9)
    fig.suptitle(f"rank {rank} = (v,m,n,k) {format_tuple(m.coord)} of {layout}: A reaches the CTAs with its "
                 f"(v,m), B those with its (v,n), C all that share a tile with its MMA", fontsize=11)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def plot_every_mask(layout: Layout, kind: str):
    """Small multiples: the `kind` mask of every CTA, each panel placed where that CTA sits."""
    import matplotlib.pyplot as plt
    from ..plotting import BYTE_COLORS
    ranks = _grid_of(layout)
    rows, cols = ranks.shape
    fig, axes = plt.subplots(rows, cols, figsize=(1.6 * cols + 1.8, 1.35 * rows + 0.9), squeeze=False)
    for (i, j), r in np.ndenumerate(ranks):
        plot_mask(axes[i, j], layout, int(r), kind, legend=False)
        axes[i, j].set_title(f"rank {r}: 0x{getattr(cta_masks(layout, int(r)), kind.lower()):04X}", fontsize=8)
    on = {"A": "#4c72b0", "B": "#dd8452", "C": "#55a868"}[kind]
    from matplotlib.patches import Patch
    fig.legend(handles=[Patch(facecolor=on, label=f"in the {kind} mask"),
                        Patch(facecolor=BYTE_COLORS["untouched"], label="not in it"),
                        Patch(facecolor="white", edgecolor="black", linewidth=2, label="the CTA itself")],
               loc="lower center", ncol=3, fontsize="small")
    fig.suptitle(f"{kind} mask of every CTA of {layout}")
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return fig


def plot_landing(cfg: MulticastConfig, block=(0, 0), ax=None):
    """Where each slice lands in one CTA's tile area, coloured by the rank of the CTA that issued it."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    from ..plotting import add_legend, cta_color
    gx = cfg.grid[0]
    p = plan(cfg)[block[0] + gx * block[1]]
    fig, ax = plt.subplots(figsize=(10, 1.9)) if ax is None else (ax.figure, ax)
    for op, src, off, nbytes in p.receives:
        ax.add_patch(Rectangle((off, 0), nbytes, 1, facecolor=cta_color(src), edgecolor="black"))
        ax.text(off + nbytes / 2, 0.5, f"{op}{src}", ha="center", va="center", fontsize=8)
    ax.set_xlim(0, cfg.smem_bytes)
    ax.set_ylim(0, 1)
    ax.set_yticks([])
    ax.set_xlabel("byte offset in the CTA's tile area")
    ax.set_title(f"CTA {block} (rank {p.rank}): what lands where; label = operand + issuing rank; "
                 f"mbarrier expects {p.expect_tx} B")
    senders = sorted({s for _, s, _, _ in p.receives})
    add_legend(ax, [(f"issued by rank {s}", cta_color(s)) for s in senders], title="colour = issuer")
    fig.tight_layout()
    return fig


def plot_smem_check(run: MulticastRun):
    """Per CTA, per 128-byte line: does the GPU's tile area equal the model's?"""
    import matplotlib.pyplot as plt
    from ..plotting import BYTE_COLORS, add_legend, plot_grid
    cfg = run.config
    model = multicast_model(cfg, run.operands, smem_address=int(run.smem_address[0]))
    lines = cfg.smem_bytes // 128
    ok = (run.smem == model).reshape(cfg.n_ctas, lines, 128).all(axis=2)
    colors = np.where(ok, BYTE_COLORS["loaded"], BYTE_COLORS["mismatch"]).astype(object)
    fig, ax = plt.subplots(figsize=(10, 0.35 * cfg.n_ctas + 1.2))
    plot_grid(ax, colors, title=f"GPU vs model, cluster {cfg.cluster[0]}x{cfg.cluster[1]} {cfg.operands}: "
                                f"{int(ok.sum())}/{ok.size} 128-byte lines equal",
              xlabel="128-byte line of the tile area", ylabel="CTA (linear id)",
              yticks=[f"{i} r{int(run.ranks[i])}" for i in range(cfg.n_ctas)])
    add_legend(ax, [("equal to the model", BYTE_COLORS["loaded"]), ("differs", BYTE_COLORS["mismatch"])])
    fig.tight_layout()
    return fig


def plot_savings(configs):
    """Bars: L2 bytes read per round of tiles, every CTA loading its own tiles vs multicast; each pair
    labelled with own / multicast, the factor multicast saves."""
    import matplotlib.pyplot as plt
    from ..plotting import add_legend
    labels = [f"{c.cluster[0]}x{c.cluster[1]}" + (" 2SM" if c.peers == 2 else "") for c in configs]
    own = [l2_read_bytes(c)["own"] / 1024 for c in configs]
    mc = [l2_read_bytes(c)["multicast"] / 1024 for c in configs]
    x = np.arange(len(configs))
    fig, ax = plt.subplots(figsize=(10, 3.6))
    ax.bar(x - 0.2, own, 0.4, color="#c44e52")
    ax.bar(x + 0.2, mc, 0.4, color="#4c72b0")
    for xi, o, m in zip(x, own, mc):
        ax.text(xi, o, f"{o / m:.2f}x", ha="center", va="bottom", fontsize=10)
    ax.set_xticks(x)
    ax.set_xticklabels(labels, fontsize=10)
    ax.set_ylim(0, max(own) * 1.15)
    ax.set_xlabel("cluster (M x N CTAs)", fontsize=10)
    ax.set_ylabel("KiB read from L2 per cluster", fontsize=10)
    ax.set_title("Multicast reads each shared tile from L2 once per cluster: "
                 "own / multicast = 2MN / (M+N) (label)", fontsize=11)
    add_legend(ax, [("every CTA loads its own tiles", "#c44e52"), ("multicast", "#4c72b0")])
    fig.tight_layout()
    return fig


def explain_cta(cluster_m: int, cluster_n: int, peers: int, rank: int, draw: bool = True,
                steps: bool = False) -> None:
    """One CTA's A, B and C masks: the picture, then a two-line summary (with `steps=True`, CuTe's
    steps for each mask as well). Bad combinations print the ValueError's message (the rule)."""
    try:
        layout = cluster_layout_vmnk((cluster_m, cluster_n, 1), peers)
        coord = cta_coord(layout, rank)
    except ValueError as e:
        print(f"not a valid choice: {e}")
        return
    if draw:
        import matplotlib.pyplot as plt
        plot_masks_of(layout, rank)
        plt.show()
    m = cta_masks(layout, rank)
    print(f"layout {layout}; rank {rank} = (v,m,n,k) {format_tuple(coord)}")
    print(f"A 0x{m.a:04X}  B 0x{m.b:04X}  C 0x{m.c:04X}")
    if steps:
        for title, modes in (("A mask: project N (mode 2)", (2,)), ("B mask: project M (mode 1)", (1,)),
                             ("C mask, part 1: project V and M (modes 0,1)", (0, 1)),
                             ("C mask, part 2: project V and N (modes 0,2)", (0, 2))):
            print(f"-- {title}\n{mask_steps(layout, coord, modes)}")


def explorer_choices(cluster_m: int, peers: int) -> dict:
    """The legal values of the mask explorer's other controls, given cluster M and the peers chosen:
    N with M x N <= 16 CTAs, peers 2 only for an even M, ranks 0 .. M x N - 1 (for the largest N)."""
    ns = [n for n in (1, 2, 4, 8, 16) if cluster_m * n <= 16]
    return {"n": ns, "peers": [1, 2] if cluster_m % 2 == 0 else [1]}


def mask_explorer(cluster_m: int = 4, cluster_n: int = 4, peers: int = 1, rank: int = 9):
    """The notebook's widget: cluster M, N, the MMA's peers and a CTA rank; the masks picture sits
    right under the controls. Only legal values are offered: N keeps M x N <= 16, peers 2 needs an
    even M, and the rank slider ends at the cluster's last CTA."""
    import ipywidgets as w
    wide = {"description_width": "initial"}
    m_dd = w.Dropdown(options=[1, 2, 4, 8, 16], value=cluster_m, description="cluster M", style=wide,
                      layout=w.Layout(width="150px"))
    n_dd = w.Dropdown(options=explorer_choices(cluster_m, peers)["n"], value=cluster_n, description="cluster N",
                      style=wide, layout=w.Layout(width="150px"))
    p_dd = w.Dropdown(options=explorer_choices(cluster_m, peers)["peers"], value=peers,
                      description="V (MMA peers)", style=wide, layout=w.Layout(width="170px"),
                      tooltip="2 needs an even cluster M: a two-SM MMA pairs CTAs along M")
    r_sl = w.IntSlider(min=0, max=cluster_m * cluster_n - 1, value=rank, description="CTA rank", style=wide,
                       continuous_update=False, layout=w.Layout(width="320px"))

    out, busy = w.Output(), []

    def redraw(_=None):
        if busy:                       # a menu is being narrowed: the change that started it redraws once
            return
        from ipywidgets.widgets.interaction import show_inline_matplotlib_plots
        out.clear_output(wait=True)
        with out:
            explain_cta(m_dd.value, n_dd.value, p_dd.value, r_sl.value)
            show_inline_matplotlib_plots()

    def follow(_=None):
        if busy:
            return
        busy.append(1)
        try:
            ch = explorer_choices(m_dd.value, p_dd.value)
            n_dd.options, p_dd.options = ch["n"], ch["peers"]   # ipywidgets keeps the value if still legal
            r_sl.max = m_dd.value * n_dd.value - 1
        finally:
            busy.clear()
        redraw()

    m_dd.observe(follow, "value")
    n_dd.observe(follow, "value")
    p_dd.observe(redraw, "value")
    r_sl.observe(redraw, "value")
    redraw()
    return w.VBox([w.HBox([m_dd, n_dd, p_dd, r_sl], layout=w.Layout(flex_flow="row wrap")), out])


def plot_slice_swizzle(cfg: MulticastConfig, op: str = "A", index: int = 1, smem_address: int = 0):
    """One slice's 16-byte chunks as they land, at its real address and, beside it, the same box
    at a 1024-byte boundary: the swizzle follows the SMEM address, so a slice that starts inside the
    pattern's span continues the pattern where the address says instead of starting it again."""
    import matplotlib.pyplot as plt
    from matplotlib import colormaps
    from .model import require_smem_address
    from ..plotting import BYTE_COLORS, add_legend, plot_grid
    s = cfg.slice_of(op, index)
    at = require_smem_address(smem_address) + cfg.smem_base(op) + s.smem_offset
    ramp = colormaps["Blues"]
    chunk_color = {c: ramp(0.15 + 0.07 * c) for c in range(8)}
    lines = len(slice_chunks(cfg, op, index, at))
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.42 * max(lines, 4) + 1.8))
    for ax, (title, addr) in zip(axes, ((f"slice {index} where it lands: 0x{at:05x}", at),
                                       ("the same box at a 1024-byte boundary", at - at % 1024))):
        grid = slice_chunks(cfg, op, index, addr)
        colors = np.array([[chunk_color[c] if c >= 0 else BYTE_COLORS["untouched"] for c in row]
                           for row in grid], dtype=object)
        text = np.array([[f"c{c}" if c >= 0 else "" for c in row] for row in grid], dtype=object)
        lines = [addr + 128 * i for i in range(len(grid))]
        plot_grid(ax, colors, text, title=title, xlabel="16-byte chunk of the 128-byte SMEM line",
                  ylabel="SMEM line: address, row of the 8-line pattern",
                  xticks=list(range(8)), yticks=[f"0x{a:05x}  row {(a >> 7) & 7}" for a in lines], fontsize=8)
    add_legend(axes[1], [(f"chunk {c} of the box row", chunk_color[c]) for c in range(8)],
               title="cN = chunk N of the row")
    fig.suptitle(f"{op} slice {index} of cluster {cfg.cluster[0]}x{cfg.cluster[1]} ({s.nbytes} B, swizzle {cfg.swizzle}): "
                 f"it starts at pattern row {(at >> 7) & 7}, and the swizzle follows the address")
    fig.tight_layout()
    return fig



def plot_ranks(cfg: MulticastConfig, ax=None):
    """The cluster of `cfg`: every CTA's rank and (v, m, n) coordinate."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(4, 3))
    plot_cluster(ax, cfg.layout, title=f"cluster {cfg.cluster[0]}x{cfg.cluster[1]}: the rank of every CTA")
    return ax.figure
