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


# ------------------------------------------------------------------------------------------------
# The epilogue's path, the bulk async-groups over time, one store at the matrix edge
# ------------------------------------------------------------------------------------------------
_STEP_LABELS = {"st.shared": "st.shared.v4\ninto {buf}", "fence.proxy.async.shared::cta": "fence.proxy\n.async",
                "bar.sync": "bar.sync", "tma_store": "TMA store\n#{n} of {buf}", "exit": "exit",
                "cp.async.bulk.commit_group": "commit\n_group", "cp.async.bulk.wait_group": "wait_group\n{arg}",
                "cp.async.bulk.wait_group.read": "wait_group\n.read {arg}", "read": "read GMEM\nof {buf}"}
_GROUP_STATES = {   # BulkAsyncGroups.state_of -> (legend, colour)
    "issued, not committed": ("issued, in no group yet (commit_group closes one)", "#c7c7c7"),
    "in flight": ("may still READ its SMEM buffer: do not overwrite it", "#f2b134"),
    "read done": ("SMEM read done (wait_group.read): buffer free, GMEM writes may be in flight", "#9ecae1"),
    "complete": ("complete (wait_group): GMEM written, visible to the issuing thread", "#2ca02c"),
}


def _step_label(step: str, one_line: bool = False) -> str:
    import re
    name, _, arg = step.partition(" ")
    n, buf = (re.findall(r"#(\d+)\((\w+)\)", arg) or [("", "")])[0]
    buf = buf or (re.findall(r"(D\w*)", arg) or [""])[0]
    text = _STEP_LABELS.get(name, step).format(arg=arg, n=n, buf=buf)
    return text.replace("\n.", ".").replace("\n_", "_").replace("\n", " ") if one_line else text


def _patches(entries):
    from matplotlib.patches import Patch
    return [Patch(fc=c, ec="black", lw=0.5, label=label) for label, c in entries]


def plot_epilogue_path(tile=None, rows: int = 8, fig=None):
    """The epilogue's path for the first `rows` rows of a one-box D tile (default: the teaching
    kernel's 128 x 32 fp32 tile, 128B swizzle), each panel computed by `chunk_path` (registers: row t
    in thread t; SMEM: where `SmemTile.pack` puts each 16-byte chunk; GMEM: what `tma_store_model`
    writes from it); below, the kernel's steps in program order, one lane per actor, replayed by
    `EpilogueOrdering` (which must find no hazard): who does what, and which fence and barrier sit
    between the threads' writes and the one thread's store."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle

    from ..plotting import MEMORY_COLORS, plot_grid, thread_color
    from .ordering import EpilogueOrdering
    from .tile import SmemTile, chunk_path
    t = tile if tile is not None else SmemTile(128, 32, "float32", "128B")
    grids = chunk_path(t, rows)
    e = EpilogueOrdering(buffers=("D",))
    e.st_shared("D"); e.fence_proxy_async(); e.bar_sync()
    e.tma_store("D"); e.commit_group(); e.wait_group_read(0); e.exit()
    fig = fig or plt.figure(figsize=(10, 7.4))
    gs = fig.add_gridspec(2, 5, width_ratios=[2.2, 1.75, 2.2, 1.75, 2.2], height_ratios=[3.0, 2.1],
                          hspace=0.55, wspace=0.08, left=0.07, right=0.985, top=0.87, bottom=0.13)
    panels = (("RMEM", "registers (RMEM)\nthread t holds row t", "16-byte chunk of the row", "t{}"),
              ("SMEM", f"SMEM D tile, swizzle {t.swizzle}\n" + ("chunk cJ of row r at slot J ^ (r % 8)"
               if t.swizzle == "128B" else "chunk cJ of row r"), "16-byte slot of the 128-byte line", "+{}"),
              ("GMEM", "GMEM D\nrows in order again", "16-byte chunk of the row", "row {}"))
    for i, (grid, (mem, title, xlabel, ytick)) in enumerate(zip(grids, panels)):
        ax = fig.add_subplot(gs[0, 2 * i])
        plot_grid(ax, np.vectorize(lambda v: thread_color(int(v) // 8), otypes=[object])(grid),
                  np.vectorize(lambda v: f"c{int(v) % 8}", otypes=[object])(grid), fontsize=9, title=title,
                  xlabel=xlabel, xticks=list(range(8)),
                  yticks=[ytick.format(128 * r if mem == "SMEM" else r) for r in range(len(grid))])
        ax.tick_params(labelsize=9)
        ax.title.set_fontsize(10)
        for sp in ax.spines.values():
            sp.set_edgecolor(MEMORY_COLORS[mem]); sp.set_linewidth(2.5)
    hops = (("st.shared.v4\n(every thread,\ngeneric proxy),\nthen fence.proxy\n.async + bar.sync", "SMEM"),
            ("TMA store:\nthread 0 issues,\nthe TMA engine\nreads SMEM (async\nproxy), writes\nGMEM", "GMEM"))
    for i, (text, mem) in enumerate(hops):
        ax = fig.add_subplot(gs[0, 2 * i + 1])
        ax.axis("off")
        ax.add_patch(FancyArrowPatch((0.0, 0.5), (0.62, 0.5), arrowstyle="-|>", mutation_scale=22, lw=2.5,
                                     color=MEMORY_COLORS[mem], transform=ax.transAxes))
        ax.text(0.31, 0.56, text, ha="center", va="bottom", fontsize=9, transform=ax.transAxes)
    lane, n = fig.add_subplot(gs[1, :]), len(e.log)
    for i, step in enumerate(e.log):
        y = 0 if step.split(" ")[0] in ("st.shared", "fence.proxy.async.shared::cta", "bar.sync", "exit") else 1
        lane.add_patch(Rectangle((i + 0.06, y - 0.36), 0.88, 0.72, fc=("#dbe8f5", "#fde2c4")[y], ec="black", lw=0.8))
        lane.text(i + 0.5, y, _step_label(step), ha="center", va="center", fontsize=9)
    issued, read = (next(i for i, s in enumerate(e.log) if s.startswith(k))
                    for k in ("tma_store", "cp.async.bulk.wait_group.read"))
    lane.add_patch(Rectangle((issued + 0.5, 1.7), read - issued, 0.6, fc="#f2b134", ec="black", lw=0.8))
    lane.text((issued + read + 1) / 2, 2, "reads the SMEM tile", ha="center", va="center", fontsize=9)
    lane.add_patch(Rectangle((issued + 0.5, 1.7), n + 1.5 - issued, 0.6, fill=False, ec=MEMORY_COLORS["GMEM"],
                             lw=1.2, ls="--"))
    lane.text(read + 1.05, 2, "GMEM writes finish on their own", va="center", fontsize=9, color=MEMORY_COLORS["GMEM"])
    lane.set(xlim=(0, n + 2), ylim=(2.6, -0.6), yticks=range(3), xticks=[i + 0.5 for i in range(n)])
    lane.set_yticklabels(["every epilogue\nthread", "thread 0\n(issues the store)", "TMA engine\n(async proxy)"],
                         fontsize=9)
    lane.set_xticklabels([f"step {i + 1}" for i in range(n)], fontsize=9)
    lane.set_title("program order (replayed by EpilogueOrdering: " +
                   (f"hazards {e.hazards})" if e.hazards else "no hazard)"), fontsize=10)
    lane.spines[["top", "right"]].set_visible(False)
    fig.suptitle(f"The epilogue's path for rows 0-{len(grids[0]) - 1}: registers -> swizzled SMEM -> GMEM; the "
                 "fence and the barrier\nsit between the threads' writes and the one thread that issues the store",
                 fontsize=11)
    fig.legend(handles=_patches([("colour = the thread whose row it is (cJ = its J-th 16-byte chunk)",
                                  thread_color(1)), ("every epilogue thread", "#dbe8f5"),
                                 ("thread 0 only", "#fde2c4"), ("TMA engine reading SMEM", "#f2b134")]),
               loc="lower center", ncol=2, fontsize=9, frameon=False)
    return fig


def plot_bulk_groups(e, ax=None):
    """The TMA stores of an `EpilogueOrdering` step by step, program order downwards (`replay_states`):
    each store, from the step that issues it, may still be reading its SMEM buffer, has finished
    reading it (a wait_group.read covered its group) or is complete (a wait_group covered it), as the
    issuing thread knows it (the hardware may be earlier, never later). Rejected steps are red."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from ..plotting import MEMORY_COLORS
    from .ordering import replay_states
    snaps, hazards = replay_states(e)
    ops = sorted(snaps[-1][1] if snaps else [], key=lambda op: int(op.split("#")[1].split("(")[0]))
    if not ops:
        raise ValueError("this EpilogueOrdering issues no TMA store: nothing to draw")
    bufs, n = list(e.smem), len(snaps)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 1.8 + 0.26 * n))
    for i, (step, states) in enumerate(snaps):
        for op, state in states.items():
            x = len(bufs) + ops.index(op)
            ax.add_patch(Rectangle((x - 0.4, i), 0.8, 1, fc=_GROUP_STATES[state][1], ec="white", lw=0.5))
            if step == f"tma_store {op}":
                ax.text(x, i + 0.5, "issued", ha="center", va="center", fontsize=9)
        if step.startswith("st.shared -> "):
            b = bufs.index(step.split(" -> ")[1])
            ax.add_patch(Rectangle((b - 0.4, i), 0.8, 1, fc=MEMORY_COLORS["SMEM"], ec="black", lw=0.5))
            ax.text(b, i + 0.5, "written", ha="center", va="center", fontsize=9, color="white")
        if step.startswith("cp.async.bulk.wait_group"):
            ax.axhspan(i, i + 1, color="#000000", alpha=0.07, lw=0)
    for h in hazards:
        k = int(h.split(":")[0].split()[1]) - 1
        ax.axhspan(k, k + 1, color="#d62728", alpha=0.3, lw=0)
    ax.set(ylim=(n, 0), xlim=(-0.6, len(bufs) + len(ops) - 0.4), yticks=[i + 0.5 for i in range(n)],
           xticks=range(len(bufs) + len(ops)))
    ax.set_yticklabels([f"{i + 1:2d}  {_step_label(s, one_line=True)}" for i, (s, _) in enumerate(snaps)], fontsize=9)
    ax.set_xticklabels([f"SMEM\nbuffer {b}" for b in bufs] +
                       [f"store {op.split('#')[1].split('(')[0]}\nfrom {op.split('(')[1][:-1]}" for op in ops],
                       fontsize=9)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for sp in ax.spines.values():
        sp.set_visible(False)
    ax.set_title("Bulk async-groups, step by step (program order downwards): wait_group.read N ends the "
                 "orange,\nso the SMEM buffer may be rewritten; only wait_group N turns a store green "
                 "(GMEM written)" + (f"  [{len(hazards)} rejected step(s), red]" if hazards else ""),
                 fontsize=10, pad=12)
    extra = [("every thread writes the buffer (st.shared)", MEMORY_COLORS["SMEM"]),
             ("a wait step (thread 0 waits there)", "#ededed")] + ([("a step the rules reject", "#f2b5b6")]
                                                                    if hazards else [])
    ax.legend(handles=_patches(list(_GROUP_STATES.values()) + extra), loc="upper center",
              bbox_to_anchor=(0.45, -0.01), ncol=2, fontsize=9, frameon=False)
    return ax


def plot_edge_store(case, fig=None):
    """One rank-2, unswizzled TMA store at the matrix's edge (a `TmaStore`, e.g. `edge_store_case()`):
    above, the box as it sits in SMEM, each element coloured by what the store does with it (`store_fates`);
    below, the GMEM around the edge after the store (`case.model()`), each cell showing the value
    there, so that with SMEM values 1, 2, 3, ... a number names the box element it came from."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from ..plotting import BYTE_COLORS, plot_grid
    from .store import STORE_FATES, store_fates, store_geometry
    tmap, (x0, y0), g = case.tmap, case.coords, store_geometry(case.tmap)
    if g.rank != 2 or tmap.swizzle != "none":
        raise ValueError("plot_edge_store draws a rank-2 store without a swizzle (the box then sits in "
                         "SMEM as it sits in the picture)")
    fate, goff = store_fates(tmap, case.coords, case.smem_address)
    colours = np.array([BYTE_COLORS["loaded"], BYTE_COLORS["oob fill"], "#f4cccc", "#d9d2e9"], dtype=object)
    pitch = g.byte_strides[1] // g.elem
    smem = np.asarray(case.smem).reshape(-1)[: fate.size].reshape(fate.shape)
    after, before = np.asarray(case.model()).reshape(-1), np.asarray(case.gmem).reshape(-1)
    r0, c0, r1, c1 = max(0, y0 - 2), max(0, x0 - 2), y0 + g.box[1], max(pitch, x0 + g.box[0])
    grid = np.full((r1 - r0, c1 - c0), "white", dtype=object)
    text = np.full(grid.shape, "", dtype=object)
    source = {int(o): f for o, f in zip(goff[fate < 2], fate[fate < 2])}
    for r in range(r0, min(r1, after.size // pitch)):
        for c in range(c0, min(c1, pitch)):
            grid[r - r0, c - c0] = colours[source[i]] if (i := r * pitch + c) in source else BYTE_COLORS["untouched"]
            text[r - r0, c - c0] = f"{after[i]:g}"
    fig = fig or plt.figure(figsize=(10, 9.2))
    gs = fig.add_gridspec(2, 1, height_ratios=[g.box[1] + 1, r1 - r0 + 1], hspace=0.42, left=0.1, right=0.98,
                          top=0.9, bottom=0.16)
    a0, a1 = fig.add_subplot(gs[0]), fig.add_subplot(gs[1])
    plot_grid(a0, colours[fate], np.vectorize(lambda v: f"{v:g}", otypes=[object])(smem), fontsize=9,
              title=f"the box in SMEM ({g.box[0]} x {g.box[1]} {tmap.dtype}), stored at (x, y) = {case.coords}",
              xlabel="box column j -> GMEM column x + j", xticks=[str(x0 + j) for j in range(g.box[0])],
              yticks=[f"row {y0 + j}" for j in range(g.box[1])])
    plot_grid(a1, grid, text, fontsize=9, xlabel="column", xticks=[str(c) for c in range(c0, c1)],
              title=(f"GMEM after the store (tensor {g.shape[0]} x {g.shape[1]}, row pitch {pitch}, "
                     f"{after.size // pitch - g.shape[1]} guard row(s); grey: not written, keeps {before[0]:g})"),
              yticks=[f"row {r}" for r in range(r0, r1)])
    for ax in (a0, a1):
        ax.tick_params(labelsize=9)
        ax.title.set_fontsize(10)
    a1.add_patch(Rectangle((x0 - c0 - 0.5, y0 - r0 - 0.5), g.box[0], g.box[1], fill=False, ls="--", lw=1.5))
    a1.axvline(g.shape[0] - c0 - 0.5, color="black", lw=2)
    a1.axhline(g.shape[1] - r0 - 0.5, color="black", lw=2)
    a1.axvline(g.row_limit - c0 - 0.5, color="#d62728", lw=1.5, ls=":")
    fig.suptitle(f"One TMA store at the matrix's edge: box rows past row {g.shape[1] - 1} are dropped; columns are "
                 f"written up to\nthe end of the row's last 16-byte granule (column {g.row_limit - 1}, padding "
                 "included), the rest dropped", fontsize=11)
    fig.legend(handles=_patches([(STORE_FATES[k], colours[k]) for k in sorted(set(fate.ravel().tolist()))] +
                                [("GMEM the store leaves alone", BYTE_COLORS["untouched"]),
                                 ("dashed: the box over GMEM; white: past the buffer", "white"),
                                 ("black lines: the tensor's last column and row", "black"),
                                 ("dotted red: the end of the last 16-byte granule", "#d62728")]),
               loc="lower center", ncol=2, fontsize=9, frameon=False)
    return fig


__all__ += ["plot_epilogue_path", "plot_bulk_groups", "plot_edge_store"]
