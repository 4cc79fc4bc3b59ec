"""Pictures for notebook 05: the banks of one st.shared.v4, who writes which 16 bytes of the SMEM
tile, and which GMEM elements the TMA stores of an epilogue write. The only file of the package that
imports matplotlib (inside the functions). Colours follow `bwlab.plotting`.
"""
from __future__ import annotations

import numpy as np

from ..hw.banks import SMEM_BANKS, WARP
from .model import store_coverage
from .problem import EpilogueProblem
from .tile import RegisterStorePlan

__all__ = ["plot_bank_phases", "plot_writer_map", "plot_edge_tiles", "plot_store_box"]


def _legend_below(ax, entries, title=None, ncol=2, y=-0.18):
    """A legend of (label, facecolour[, hatch]) entries under the axes, so the figure keeps the
    notebook's width (~1000 px) and its text stays at 9 pt."""
    from matplotlib.patches import Patch
    handles = [Patch(fc=e[1], ec="black", lw=0.5, hatch=e[2] if len(e) > 2 else None, label=e[0])
               for e in entries]
    return ax.legend(handles=handles, title=title, loc="upper center", bbox_to_anchor=(0.5, y),
                     ncol=ncol, fontsize=9, title_fontsize=9, frameon=False)


def plot_bank_phases(plan: RegisterStorePlan, step: int = 0, ax=None):
    """One st.shared.v4 of `plan`: a row per phase (8 lanes), a column per bank. A bank one lane
    uses is drawn in that lane's colour; a bank that must serve several different words in one
    phase is red with the number of words (that many wavefronts for the phase)."""
    import matplotlib.pyplot as plt

    from ..plotting import BYTE_COLORS, plot_grid, thread_color
    rep = plan.report(step)
    colors = np.full((4, SMEM_BANKS), BYTE_COLORS["untouched"], dtype=object)
    text = np.full((4, SMEM_BANKS), "", dtype=object)
    for p, lanes in enumerate(rep.phases):
        for lane in lanes:
            a = int(plan.addresses[step, lane])
            if a < 0:
                continue
            for w in range(4):
                bank = (a // 4 + w) % SMEM_BANKS
                if rep.words_per_bank[p, bank] > 1:
                    colors[p, bank] = BYTE_COLORS["mismatch"]
                    text[p, bank] = str(int(rep.words_per_bank[p, bank]))
                else:
                    colors[p, bank] = thread_color(lane)
                    text[p, bank] = str(lane)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 3.2))
    t = plan.tile
    lesson = ("conflict-free" if rep.wavefronts == rep.ideal
              else f"{rep.wavefronts // rep.ideal}x the conflict-free {rep.ideal}")
    plot_grid(ax, colors, text, fontsize=9,
              title=(f"one st.shared.v4 of a warp ({plan.mapping}, {t.dtype}, {t.box_row_bytes}-byte rows, "
                     f"swizzle {t.swizzle}):\n{rep.wavefronts} wavefronts, {lesson}"),
              xlabel="bank", ylabel="phase (8 lanes)", xticks=list(range(SMEM_BANKS)),
              yticks=[f"lanes {8 * p}-{8 * p + 7}" for p in range(4)])
    ax.tick_params(labelsize=9)
    drawn = set(colors.ravel().tolist())
    entries = [("bank used by one lane (number = lane)", thread_color(3))] if any(
        isinstance(c, tuple) for c in drawn) else []
    if BYTE_COLORS["mismatch"] in drawn:
        entries.append(("bank asked for N different words (N = wavefronts)", BYTE_COLORS["mismatch"]))
    if BYTE_COLORS["untouched"] in drawn:
        entries.append(("bank idle", BYTE_COLORS["untouched"]))
    _legend_below(ax, entries, ncol=len(entries), y=-0.28)
    return ax


def plot_writer_map(plan: RegisterStorePlan, lines: int = 16, ax=None):
    """The warp's part of the SMEM tile in address order, 128 bytes (8 chunks of 16 B) per line:
    each chunk coloured by the lane that writes it, labelled lane/step."""
    import matplotlib.pyplot as plt

    from ..plotting import BYTE_COLORS, plot_grid, thread_color
    t = plan.tile
    first = int(plan.addresses[plan.addresses >= 0].min()) // 128 * 128
    colors = np.full((lines, 8), BYTE_COLORS["untouched"], dtype=object)
    text = np.full((lines, 8), "", dtype=object)
    for k in range(plan.steps):
        for lane in range(WARP):
            a = int(plan.addresses[k, lane])
            r, c = divmod(a - first, 128)
            if a >= 0 and 0 <= r < lines:
                colors[r, c // 16] = thread_color(lane)
                text[r, c // 16] = f"t{lane}/s{k}"
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 0.4 * lines + 1.5))
    plot_grid(ax, colors, text, fontsize=9,
              title=(f"who writes which 16 B: {plan.mapping}, swizzle {t.swizzle}\n"
                     "(lane t writes row t; step k is its k-th st.shared.v4)"),
              xlabel="16-byte chunk in the 128-byte line (banks 4c..4c+3)",
              ylabel="SMEM line (128 B)", xticks=list(range(8)),
              yticks=[f"+{first - t.base + 128 * i}" for i in range(lines)])
    ax.tick_params(labelsize=9)
    lanes = sorted({lane for k in range(plan.steps) for lane in range(WARP)
                    if plan.addresses[k, lane] >= 0 and 0 <= (int(plan.addresses[k, lane]) - first) // 128 < lines})
    entries = [(f"lane {lane}", thread_color(lane)) for lane in lanes]
    if BYTE_COLORS["untouched"] in set(colors.ravel().tolist()):
        entries.append(("not written by this warp", BYTE_COLORS["untouched"]))
    _legend_below(ax, entries, title="colour = the lane that writes the chunk; label tN/sK = lane N, step K",
                  ncol=8, y=-0.08)
    return ax


def plot_edge_tiles(p: EpilogueProblem, ax=None):
    """The D buffer element by element, coloured by the CTA whose TMA store writes it (computed from
    the store model): rows stop at the matrix's last row, but the columns run to the end of the
    16-byte granule holding a row's last element, so the padding in that granule is overwritten
    (hatched, outlined in red). Grey: never written (padding past that granule, the guard row). Dashed:
    the full tiles, which hang over the matrix's far edges."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from ..plotting import BYTE_COLORS, cta_color, plot_grid
    cov = store_coverage(p)
    colors = np.where(cov >= 0, np.vectorize(cta_color, otypes=[object])(np.maximum(cov, 0)),
                      BYTE_COLORS["untouched"])
    if ax is None:
        _, ax = plt.subplots(figsize=(10, min(10, 10 * (p.M + 1) / max(p.ld, p.tiles[1] * p.bn) + 1)))
    outside = np.zeros(cov.shape, bool)
    outside[:, p.N:] = True
    outside[p.M:, :] = True
    over = np.argwhere((cov >= 0) & outside)
    cols = sorted({int(c) for _, c in over})
    what = (f"padding column{'s' if len(cols) > 1 else ''} {', '.join(map(str, cols))} IS overwritten "
            "(hatched): it shares the row's last 16-byte granule" if cols
            else "no padding shares a row's last 16-byte granule here")
    plot_grid(ax, colors, title=(f"TMA stores of a {p.M} x {p.N} {p.dtype} D ({p.bm} x {p.bn} tiles, ld {p.ld}): "
                                 f"rows past the edge are skipped,\nbut {what}"),
              xlabel="column", ylabel="row")
    ax.tick_params(labelsize=9)
    for r, c in over:
        ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, hatch="///", ec="black", lw=0.8))
    for tm in range(p.tiles[0]):
        for tn in range(p.tiles[1]):
            ax.add_patch(Rectangle((tn * p.bn - 0.5, tm * p.bm - 0.5), p.bn, p.bm, fill=False,
                                   ls="--", lw=1.2, ec="black"))
    ax.axvline(p.N - 0.5, color="black", lw=1.5)
    ax.set_xlim(-0.5, max(p.ld, p.tiles[1] * p.bn) - 0.5)
    ax.set_ylim(max(p.M + 1, p.tiles[0] * p.bm) - 0.5, -0.5)
    n = p.tiles[0] * p.tiles[1]
    never = (["padding past the last granule"] if ((cov < 0) & outside)[:p.M, p.N:].any() else []) + \
        (["the guard row"] if cov.shape[0] > p.M else [])
    extra = [("padding overwritten: shares the row's last 16-byte granule", "white", "///")] if cols else []
    if never:
        extra.append((f"never written: {' and '.join(never)}", BYTE_COLORS["untouched"]))
    _legend_below(ax, [(f"written by CTA {i}", cta_color(i)) for i in range(min(n, 8))] + extra +
                  [("white: past the buffer; dashed: tile outlines", "white"),
                   (f"black line: the matrix's last column edge (N = {p.N})", "black")], ncol=3, y=-0.1)
    return ax


def plot_store_box(tmap, coords, ax=None):
    """One TMA store's box over its tensor, element by element (rank 1 or 2; for higher ranks the
    plane the box starts in): which GMEM elements the store writes inside the tensor, which padding
    elements it writes because they share a 16-byte granule with the row's last element, and what it
    leaves alone. Computed from `tma_store_writes`."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from ..plotting import BYTE_COLORS, add_legend, plot_grid
    from ..util import round_up
    from .store import smem_box_footprint, store_geometry, tma_store_writes
    g = store_geometry(tmap)
    coords = tuple(int(c) for c in coords)
    pitch = g.byte_strides[1] // g.elem if g.rank > 1 else max(g.row_limit, coords[0] + g.box[0])
    rows = g.shape[1] if g.rank > 1 else 1
    plane = sum(c * s for c, s in zip(coords[2:], g.byte_strides[2:]))
    smem = np.zeros(round_up(smem_box_footprint(tmap), 1024), np.uint8)
    off, _ = tma_store_writes(tmap, coords, smem, 0, window_start=0)
    cols = max(pitch, coords[0] + g.box[0])
    shown_rows = rows + 1
    written = np.zeros((shown_rows, cols), bool)
    rel = (off[::g.elem] - plane)
    rel = rel[(rel >= 0) & (rel < shown_rows * pitch * g.elem)] // g.elem
    r, c = np.divmod(rel, pitch)
    written[r, c] = True
    inside = np.zeros_like(written)
    inside[:rows, :g.shape[0]] = True
    colors = np.full(written.shape, BYTE_COLORS["untouched"], dtype=object)
    colors[written & inside] = BYTE_COLORS["loaded"]
    colors[written & ~inside] = BYTE_COLORS["oob fill"]
    colors[~written & ~inside] = "#f7f7f7"
    if ax is None:
        _, ax = plt.subplots(figsize=(min(0.25 * cols + 3, 16), 0.25 * shown_rows + 1.5))
    plot_grid(ax, colors, title=(f"TMA store of a {tmap.box_shape} box at {coords} into a "
                                 f"{tmap.global_shape} {tmap.dtype} tensor (row pitch {pitch} elements)"),
              xlabel="x (dimension 0)", ylabel="y (dimension 1)")
    ax.add_patch(Rectangle((coords[0] - 0.5, (coords[1] if g.rank > 1 else 0) - 0.5), g.box[0],
                           g.box[1] if g.rank > 1 else 1, fill=False, ls="--", lw=1.2, ec="black"))
    ax.axvline(g.shape[0] - 0.5, color="black", lw=1)
    add_legend(ax, [("written, inside the tensor", BYTE_COLORS["loaded"]),
                    ("written, outside: shares the row's last 16-byte granule", BYTE_COLORS["oob fill"]),
                    ("inside the tensor, not in the box", BYTE_COLORS["untouched"]),
                    ("outside the tensor, left alone", "#f7f7f7"),
                    ("the box (dashed)", "white")])
    return ax
