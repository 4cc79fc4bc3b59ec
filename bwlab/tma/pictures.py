"""Pictures and the interactive explorer for notebook 01: the only file of the stage that imports
matplotlib and ipywidgets (inside the functions). Every picture is computed by the model
(bwlab.tma.model) and states its lesson in its title.
"""
from __future__ import annotations

import numpy as np

from ..hw.banks import wavefronts
from ..hw.dtypes import element_type
from ..hw.swizzle import MODES as SWIZZLE_MODES
from .model import (column_read_addresses, cta_tiles, handshake_events, smem_chunks,
                    tma_load_model)
from .tensor_map import TMAP_DTYPES, TensorMap, legal_inner_elems, swizzle_width

__all__ = ["plot_handshake", "plot_cta_tiles", "plot_smem_image", "plot_swizzle_modes", "plot_bank_conflicts",
           "plot_oob_box", "swizzle_explorer", "explorer_caption"]


def _short(action: str, seen) -> str:
    """An event's label in lines of at most ~13 characters, so neighbouring steps never overlap."""
    action = action.replace("  -> phase 0 complete", "")
    for long, short in (("mbarrier.init(", "mbarrier.init\n("), ("arrive.expect_tx(", "arrive.\nexpect_tx\n("),
                        ("cp.async.bulk.tensor (issue)", "cp.async.bulk\n.tensor"),
                        ("complete_tx(", "complete_tx\n("), ("try_wait.parity(0)", "try_wait\n.parity(0)")):
        action = action.replace(long, short)
    return action + (f"\n-> {seen}" if seen is not None else "")


def plot_handshake(box_bytes: int = 8192, pieces: int = 4, extra_tx: int = 0, ax=None):
    """The handshake as a timeline: one lane per actor, the mbarrier's state after each step below."""
    import matplotlib.pyplot as plt

    from ..plotting import add_legend, warp_color
    ev = handshake_events(box_bytes, pieces, extra_tx)
    if ax is None:
        _, ax = plt.subplots(figsize=(11, 4.6))
    lanes = {"thread 0": 3, "TMA engine": 2, "all threads": 1}
    pending_c, zero_c = "#fff2cc", "#e2f0d9"
    for i, (actor, action, pending, tx, phase, seen) in enumerate(ev):
        y = lanes[actor]
        ax.scatter([i], [y], s=80, color=warp_color(list(lanes).index(actor)), edgecolor="black", zorder=3)
        ax.text(i, y + 0.13, _short(action, seen if actor == "all threads" else None), ha="center", va="bottom",
                fontsize=9, linespacing=1.05)
        ax.text(i, 0.05, f"pending {pending}\ntx {tx}\nphase {phase}", ha="center", va="center", fontsize=9,
                bbox=dict(boxstyle="round", fc=pending_c if tx else zero_c, ec="gray"))
    ax.set_yticks([0.05, 1, 2, 3])
    ax.set_yticklabels(["mbarrier\nafter the step", "all threads\n(wait)", "TMA engine", "thread 0"], fontsize=10)
    ax.set_xlim(-0.6, len(ev) - 0.4)
    ax.set_ylim(-0.55, 3.75)
    ax.set_xticks(range(len(ev)))
    ax.set_xlabel("step (order of events, not to scale)")
    ax.grid(axis="y", lw=0.5, alpha=0.4)
    last = ev[-1]
    if not extra_tx:
        lesson = f"expect_tx({box_bytes}) = the box: the last byte completes phase 0, the waiters see True"
    else:
        lesson = (f"expect_tx({box_bytes + extra_tx}) = box + {extra_tx}: tx stays at {last[3]}, "
                  "phase 0 never completes, the wait never sees True")
    ax.set_title(f"mbarrier handshake of one {box_bytes}-byte TMA load\n{lesson}", fontsize=11)
    add_legend(ax, [("tx-count > 0: phase cannot complete", pending_c), ("tx-count 0", zero_c)],
               outside=False, loc="upper right")
    ax.figure.tight_layout()
    return ax


# ---------------------------------------------------------------------------------------------
# Pictures for notebook 01


def plot_cta_tiles(tmap: TensorMap):
    """The global matrix coloured by the CTA whose box covers each element, next to the CTA grid."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from ..plotting import cta_color
    tiles, owner, (gx, gy) = cta_tiles(tmap)
    (w, h), (bw, bh) = tmap.global_shape, tmap.box_shape
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(11, 4.4), gridspec_kw={"width_ratios": [w / h * 1.2 + 0.2, 1]})
    img = np.array([[plt.matplotlib.colors.to_rgb(cta_color(o)) for o in row] for row in owner])
    a0.imshow(img, interpolation="nearest", aspect="auto", extent=(-0.5, w - 0.5, h - 0.5, -0.5))
    for x, y, (c0, c1) in tiles:
        a0.add_patch(Rectangle((c0 - 0.5, c1 - 0.5), bw, bh, fill=False, lw=1.2, ec="black",
                               ls="-" if c0 + bw <= w and c1 + bh <= h else "--", clip_on=False))
    a0.set_xlim(-0.5, gx * bw - 0.5)
    a0.set_ylim(gy * bh - 0.5, -0.5)
    a0.set_xlabel(f"dim 0 (contiguous), {w} elements; dashed boxes hang off the edge (zero fill)")
    a0.set_ylabel(f"dim 1, {h} rows")
    a0.set_title(f"global {tmap.dtype} tensor {w} x {h}, box {bw} x {bh}: one box per CTA")
    for x, y, (c0, c1) in tiles:
        k = y * gx + x
        a1.add_patch(Rectangle((x, y), 0.95, 0.95, color=cta_color(k)))
        a1.text(x + 0.47, y + 0.47, f"CTA ({x},{y})\ncoords\n({c0}, {c1})", ha="center", va="center", fontsize=8)
    a1.set_xlim(0, gx)
    a1.set_ylim(gy, 0)
    a1.set_xticks([])
    a1.set_yticks([])
    a1.set_title(f"CTA grid {gx} x {gy} (blockIdx.x, blockIdx.y)")
    fig.tight_layout()
    return fig



def plot_smem_image(tmap: TensorMap, smem_address: int = 0, ax=None, title=None, max_lines: int = 16,
                    fontsize: int = 8):
    """SMEM as 128-byte lines x 8 chunks of 16 bytes; each chunk labelled with the box row and the
    16-byte chunk of that row it holds, coloured by its chunk index inside the row."""
    import matplotlib.pyplot as plt

    from ..plotting import add_legend, plot_grid, thread_color
    row, col = smem_chunks(tmap, smem_address)
    lines = min(len(row) // 8, max_lines)
    r, c = row[:lines * 8].reshape(lines, 8), col[:lines * 8].reshape(lines, 8)
    colors = np.empty((lines, 8), dtype=object)
    text = np.empty((lines, 8), dtype=object)
    for i in range(lines):
        for j in range(8):
            colors[i, j] = thread_color(c[i, j] * 4, 32) if r[i, j] >= 0 else "#e6e6e6"
            text[i, j] = f"r{r[i, j]}\nc{c[i, j]}" if r[i, j] >= 0 else ""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.45 * lines + 1.4))
    plot_grid(ax, colors, text, fontsize=fontsize,
              title=title or f"{tmap.swizzle} swizzle, SMEM 0x{smem_address:04x}",
              xlabel="16-byte chunk of the 128-byte SMEM line (4 banks each)", ylabel="SMEM line",
              xticks=[f"{j}" for j in range(8)],
              yticks=[f"0x{smem_address + 128 * i:04x}" for i in range(lines)])
    ncol = max(1, tmap.inner_box_bytes // 16)
    gap = [("not written by the load", "#e6e6e6")] if (r < 0).any() else []
    add_legend(ax, [(f"chunk c{k} of a box row", thread_color(k * 4, 32)) for k in range(min(ncol, 8))] + gap,
               title="rK = box row K")
    return ax


def plot_swizzle_modes(dtype: str = "float16", smem_address: int = 0):
    """One picture per swizzle mode of a box whose rows are as wide as the mode allows, 8 lines."""
    import matplotlib.pyplot as plt
    elem = element_type(dtype).bytes
    fig, axes = plt.subplots(2, 2, figsize=(11, 8.6))
    for ax, mode in zip(axes.flat, SWIZZLE_MODES):
        inner = swizzle_width(mode) or 128
        t = TensorMap(dtype, (inner // elem, 64), (inner // elem, 1024 // inner), swizzle=mode)
        plot_smem_image(t, smem_address, ax=ax, fontsize=8,
                        title=f"{mode}: box {inner // elem} x {1024 // inner} {dtype} ({inner}-byte rows)")
        ax.get_legend().remove()
    from matplotlib.patches import Patch

    from ..plotting import thread_color
    fig.legend(handles=[Patch(facecolor=thread_color(k * 4, 32), edgecolor="black", lw=0.5, label=f"chunk c{k}")
                        for k in range(8)], title="rK cJ: chunk J\nof box row K", loc="center right", fontsize=9)
    fig.suptitle(f"Where each 16-byte chunk of the box lands in SMEM (destination 0x{smem_address:04x}):\n"
                 "the swizzle moves chunk c of a row to chunk c XOR (line mod span/16)", fontsize=12)
    fig.tight_layout(rect=(0, 0, 0.87, 1))
    return fig


def plot_bank_conflicts(dtype: str = "float16", access_bytes: int = 16):
    """Banks touched by a warp's column read of a 128-byte-row box, without and with 128B swizzle."""
    import matplotlib.pyplot as plt

    from ..plotting import add_legend, thread_color
    elem = element_type(dtype).bytes
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
    for ax, swz in zip(axes, ("none", "128B")):
        t = TensorMap(dtype, (128 // elem, 64), (128 // elem, 32), swizzle=swz)
        addr = column_read_addresses(t, 0, access_bytes)
        wf = wavefronts(addr, access_bytes).wavefronts
        for th, a in enumerate(addr):
            b0 = (a // 4) % 32
            ax.barh(th, access_bytes // 4, left=b0, color=thread_color(th), edgecolor="black", lw=0.3)
        ax.set_xlim(0, 32)
        ax.set_ylim(31.5, -0.5)
        ax.set_xlabel("bank (4 bytes each)")
        ax.set_title(f"swizzle {swz}: {wf} wavefronts")
    axes[0].set_ylabel("thread t reads box row t, column 0")
    add_legend(axes[1], [(f"thread {k}", thread_color(k)) for k in (0, 1, 7, 8, 31)], title="colour = thread")
    fig.suptitle(f"A warp reads column 0 of a {dtype} box with 128-byte rows, {access_bytes} bytes per thread:\n"
                 "unswizzled, every row's column 0 sits in the same banks; the swizzle spreads them over all 32")
    fig.tight_layout()
    return fig


def plot_oob_box(tmap: TensorMap, gmem, coords):
    """A 2D box that hangs off the tensor: where it sits, and its SMEM image (loaded vs fill)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    from ..plotting import BYTE_COLORS, add_legend
    if tmap.rank != 2 or tmap.swizzle != "none":
        raise ValueError("plot_oob_box draws unswizzled 2D boxes")
    (w, h), (bw, bh) = tmap.global_shape, tmap.box_counts
    smem = tma_load_model(gmem, tmap, coords).view(tmap.element.storage).reshape(bh, bw)
    c0, c1 = coords
    es1 = tmap.element_strides[1]
    inside = ((np.arange(bw) + c0 >= 0) & (np.arange(bw) + c0 < w))[None, :] & \
             ((np.arange(bh) * es1 + c1 >= 0) & (np.arange(bh) * es1 + c1 < h))[:, None]
    fig, (a0, a1) = plt.subplots(1, 2, figsize=(11, 4.6))
    a0.imshow(np.ones((h, w, 3)) * 0.92, extent=(-0.5, w - 0.5, h - 0.5, -0.5))
    a0.add_patch(Rectangle((-0.5, -0.5), w, h, fill=False, ec="black", lw=1.5))
    a0.add_patch(Rectangle((c0 - 0.5, c1 - 0.5), bw, (bh - 1) * es1 + 1, fill=True, alpha=0.35,
                           color=BYTE_COLORS["loaded"], ec="black"))
    a0.set_xlim(min(-1, c0 - 1), max(w, c0 + bw) + 0.5)
    a0.set_ylim(max(h, c1 + bh * es1) + 0.5, min(-1, c1 - 1))
    a0.set_title(f"tensor {w} x {h} and the box at coordinates {tuple(coords)}")
    a0.set_xlabel("dim 0")
    a0.set_ylabel("dim 1")
    img = np.where(inside[..., None], np.array(plt.matplotlib.colors.to_rgb(BYTE_COLORS["loaded"])),
                   np.array(plt.matplotlib.colors.to_rgb(BYTE_COLORS["oob fill"])))
    a1.imshow(img, interpolation="nearest", aspect="auto")
    for i in range(bh):
        for j in range(bw):
            v = smem[i, j]
            a1.text(j, i, "NaN" if isinstance(v, np.floating) and np.isnan(v) else f"{v:g}",
                    ha="center", va="center", fontsize=9, color="white" if inside[i, j] else "black")
    a1.set_title(f"SMEM image: all {tmap.box_bytes} bytes written, outside ones filled\n"
                 f"(oob_fill={tmap.oob_fill!r}); expect_tx counts the whole box")
    a1.set_xlabel("box column")
    a1.set_ylabel("box row")
    add_legend(a1, [("loaded from the tensor", BYTE_COLORS["loaded"]), ("out-of-bounds fill", BYTE_COLORS["oob fill"])])
    fig.tight_layout()
    return fig


def explorer_caption(t: TensorMap) -> str:
    """The line under the explorer's picture: what expect_tx announces and what SMEM the box takes."""
    return (f"box {t.box_shape[0]} x {t.box_shape[1]} {t.dtype}: {t.box_bytes} bytes, expect_tx({t.tx_bytes}); "
            f"rows {t.smem_pitch} bytes apart in SMEM ({t.smem_footprint} bytes in all)")


def swizzle_explorer(dtype: str = "float16", swizzle: str = "128B", inner_elems: int = 64, rows: int = 8):
    """Controls (element type, swizzle, box width and height, destination) with the SMEM image right
    below them, redrawn by the model. The box width offers only the widths the tensor map accepts for
    the chosen type and swizzle; when a change of either makes the current width illegal, it moves to
    the nearest legal one and the caption says so."""
    import ipywidgets as W
    import matplotlib.pyplot as plt

    style, row = {"description_width": "initial"}, W.Layout(flex_flow="row wrap")
    dt = W.Dropdown(options=list(TMAP_DTYPES), value=dtype, description="dtype", style=style,
                    layout=W.Layout(width="170px"))
    sw = W.Dropdown(options=list(SWIZZLE_MODES), value=swizzle, description="swizzle", style=style,
                    layout=W.Layout(width="150px"))
    inner = W.SelectionSlider(options=legal_inner_elems(dtype, swizzle), value=inner_elems, style=style,
                              description="box width (elements)", continuous_update=False,
                              tooltip="only widths of a multiple of 16 bytes, at most the swizzle span")
    height = W.IntSlider(value=rows, min=1, max=32, description="rows", style=style, continuous_update=False)
    line = W.IntSlider(value=0, min=0, max=7, description="destination / 128 B", style=style,
                       continuous_update=False)
    out = W.Output()
    note = {"text": ""}
    busy = {"on": False}

    def redraw(*_):
        if busy["on"]:
            return
        t = TensorMap(dt.value, (inner.value, 256), (inner.value, height.value), swizzle=sw.value)
        with out:
            out.clear_output(wait=True)
            plot_smem_image(t, line.value * 128, max_lines=16)
            plt.show()
            print(explorer_caption(t) + note["text"])
        note["text"] = ""

    def new_widths(*_):
        legal = legal_inner_elems(dt.value, sw.value)
        old = inner.value
        near = min(legal, key=lambda n: (abs(n - old), n))
        busy["on"] = True
        try:
            inner.options = legal
            inner.value = near
        finally:
            busy["on"] = False
        if near != old:
            note["text"] = (f"\n(box width {old} is not legal for {dt.value} under {sw.value} swizzle: "
                            f"moved to {near}, the nearest legal width)")
        redraw()

    dt.observe(new_widths, "value")
    sw.observe(new_widths, "value")
    for w in (inner, height, line):
        w.observe(redraw, "value")
    redraw()
    return W.VBox([W.HBox([dt, sw, inner, height, line], layout=row), out])


# ---------------------------------------------------------------------------------------------
# Finding what makes a case fault: python -m bwlab.tma diagnose --cases 1000 --seed 0
# A fault (illegal instruction, misaligned address) poisons the CUDA context, so every trial
# runs in a child process (python -m bwlab.tma subset ...).
