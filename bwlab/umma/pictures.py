"""Pictures and widgets of stage 3: the only place here that imports matplotlib and ipywidgets
(inside the functions). Colours follow `bwlab.plotting`: one colour per thread, per CTA, per warp."""
from __future__ import annotations

import numpy as np

from ..hw.tmem import LANES
from .canonical import LAYOUTS, MAJORS, canonical_layout, elem_bytes, instr_k
from .descriptors import ARCHS, decode_smem_desc, descriptor_addresses, format_fields, tile_desc
from .idesc import decode_instr_desc, kind_of, make_instr_desc
from .model import d_tmem_layout

__all__ = ["smem_chunk_map", "plot_smem_layout", "plot_core_matrices", "plot_k_steps",
           "plot_d_tmem_layout", "plot_case", "descriptor_widget", "instr_desc_widget"]


def smem_chunk_map(major: str, swizzle: str, dtype: str = "f16", tile=(16, 64), base_address: int = 0):
    """For each 16-byte chunk of the tile's SMEM span: the (mn, k) of its first element."""
    lay = canonical_layout(major, swizzle, dtype, tile, base_address)
    addr = lay.addresses()
    n_chunks = lay.nbytes // 16
    first = np.full((n_chunks, 2), -1, np.int64)
    mn, k = np.meshgrid(np.arange(tile[0]), np.arange(tile[1]), indexing="ij")
    chunk = (addr - base_address) // 16
    at_start = (addr % 16) == 0
    first[chunk[at_start], 0] = mn[at_start]
    first[chunk[at_start], 1] = k[at_start]
    return first


def plot_smem_layout(major: str, swizzle: str, dtype: str = "f16", tile=None, ax=None, lines: int = 8,
                     color_by: str = "k"):
    """SMEM as 128-byte lines of eight 16-byte chunks; each chunk says which row and which 16-byte
    piece of the operand it holds, coloured by that piece (K-major: the K chunk; MN-major: the K row),
    so the swizzle shows as a permutation of colours along each line. `color_by="piece"` colours an
    MN-major chunk by its 16-byte piece of the 128-byte MN row instead (where the swizzle moved it from)."""
    import matplotlib.pyplot as plt
    from ..plotting import add_legend, draw_grid, thread_color
    tile = tile or ((16, 64) if major == "K" else (64, 16))
    first = smem_chunk_map(major, swizzle, dtype, tile)
    lines = min(lines, len(first) // 8)
    per16 = 16 // elem_bytes(dtype)
    colors = np.empty((lines, 8), dtype=object)
    text = np.empty((lines, 8), dtype=object)
    for i in range(lines):
        for j in range(8):
            mn, k = first[8 * i + j]
            key = k // per16 if major == "K" else (mn // per16 if color_by == "piece" else k)
            colors[i, j] = thread_color(4 * (key % 8), 32)
            text[i, j] = f"m{mn}\nk{k}"
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 0.45 * lines + 1.2))
    what = "K chunk (16 B of K)" if major == "K" else ("16-byte piece of the MN row" if color_by == "piece"
                                                       else "K row")
    draw_grid(ax, colors, text, fontsize=6, title=f"{major}-major, swizzle {swizzle} ({dtype} {tile[0]}x{tile[1]})",
              xlabel="16-byte chunk of the 128-byte SMEM line", ylabel="SMEM byte",
              xticks=[str(j) for j in range(8)], yticks=[f"{128 * i}" for i in range(lines)])
    label = (lambda c: f"16-byte piece {c} of the 128-byte row") if major == "MN" and color_by == "piece" \
        else (lambda c: f"{what} {c} (mod 8)")
    add_legend(ax, [(label(c), thread_color(4 * c, 32)) for c in range(8)],
               title="chunk holds m=row, k=first K")
    return ax


def plot_core_matrices(major: str = "K", dtype: str = "f16", tile=(16, 32), ax=None):
    """The logical operand tile, each element coloured by the core matrix (8 rows x 16 bytes) it
    belongs to: the unit the descriptors' LBO and SBO step between."""
    import matplotlib.pyplot as plt
    from ..plotting import add_legend, draw_grid, cta_color
    per16 = 16 // elem_bytes(dtype)
    mn, k = np.meshgrid(np.arange(tile[0]), np.arange(tile[1]), indexing="ij")
    if major == "K":
        cm = (mn // 8) + (tile[0] // 8) * (k // per16)
    else:
        cm = (mn // per16) + (tile[0] // per16) * (k // 8)
    colors = np.vectorize(cta_color, otypes=[object])(cm)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 0.25 * tile[0] + 1.5))
    draw_grid(ax, colors, None, title=f"{major}-major {dtype} {tile[0]}x{tile[1]} tile: core matrices",
              xlabel="k", ylabel="m (or n)")
    add_legend(ax, [(f"core matrix {i}", cta_color(i)) for i in range(int(cm.max()) + 1)][:10])
    return ax


def plot_k_steps(major: str = "K", swizzle: str = "128B", dtype: str = "f16", tile=(8, 64), ax=None):
    """Which SMEM chunks each instruction of the K loop reads (coloured by K step), with each
    step's descriptor start address: inside a 128-byte swizzle atom the start moves 32 bytes per
    step while the swizzle scatters the chunks it names."""
    import matplotlib.pyplot as plt
    from ..plotting import add_legend, draw_grid, cta_color
    lay = canonical_layout(major, swizzle, dtype, tile)
    ki = instr_k(dtype)
    owner = np.full(lay.nbytes // 16, -1)
    starts = []
    for kb in range(tile[1] // ki):
        d = tile_desc(major, swizzle, dtype, tile, kb)
        starts.append(d.start_address)
        addr = descriptor_addresses(d, major, dtype, tile[0])
        owner[np.unique(addr // 16)] = kb
    lines = len(owner) // 8
    colors = np.vectorize(lambda o: cta_color(o) if o >= 0 else "#e6e6e6", otypes=[object])(owner.reshape(lines, 8))
    text = owner.reshape(lines, 8).astype(object)
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 0.45 * lines + 1.2))
    draw_grid(ax, colors, text, fontsize=7, title=f"K loop over a {major}-major {swizzle} tile: chunks read per step",
              xlabel="16-byte chunk of the 128-byte SMEM line", ylabel="SMEM byte",
              xticks=[str(j) for j in range(8)], yticks=[f"{128 * i}" for i in range(lines)])
    add_legend(ax, [(f"step {kb}: start address {s}", cta_color(kb)) for kb, s in enumerate(starts)],
               title="descriptor of each step")
    return ax


def plot_d_tmem_layout(M: int, N: int, cta_group: int = 1, ax=None):
    """Which TMEM lane and column each accumulator row lands in (coloured by the row's 16-row
    group); lanes a warp cannot reach stay grey."""
    import matplotlib.pyplot as plt
    from ..plotting import add_legend, draw_grid, warp_color
    lay = d_tmem_layout(M, N, cta_group)
    sel = lay.cta == 0
    cols = lay.columns
    grid = np.full((LANES, cols), -1)
    m = np.broadcast_to(np.arange(M)[:, None], (M, N))
    grid[lay.lane[sel], lay.column[sel]] = m[sel]
    step = max(1, cols // 32)
    shown = grid[:, ::step]
    colors = np.vectorize(lambda r: warp_color(r // 32) if r >= 0 else "#e6e6e6", otypes=[object])(shown)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 6))
    draw_grid(ax, colors, None, title=f"D of M={M} N={N} cta_group::{cta_group}: layout {lay.name}"
              + (" (CTA 0 of the pair)" if cta_group == 2 else ""),
              xlabel=f"TMEM column (every {step})" if step > 1 else "TMEM column", ylabel="TMEM lane")
    present = sorted({int(r) // 32 for r in m[sel].ravel()})
    add_legend(ax, [(f"D rows {32 * w}-{32 * w + 31}", warp_color(w)) for w in present]
               + [("not written", "#e6e6e6")], title="which D row")
    return ax


def plot_case(case, lines: int = 8):
    """A case at a glance: where A's and B's first elements sit in SMEM (16-byte chunks, as
    `plot_smem_layout`) and, for a tcgen05.mma case, where D lands in TMEM."""
    import matplotlib.pyplot as plt
    has_tmem = hasattr(case, "d_layout")
    fig, axes = plt.subplots(1, 3 if has_tmem else 2, figsize=(20 if has_tmem else 13, 5.5))
    for ax, op, major, swizzle in ((axes[0], "A", case.a_major, case.a_swizzle),
                                   (axes[1], "B", case.b_major, case.b_swizzle)):
        plot_smem_layout(major, swizzle, case.dtype, ax=ax, lines=lines)
        ax.set_title(f"{op}: {ax.get_title()}", fontsize=9)
    if has_tmem:
        plot_d_tmem_layout(case.M, case.N, ax=axes[2])
    fig.suptitle(case.label() if hasattr(case, "label") else str(case), fontsize=10)
    plt.tight_layout()
    return fig


def descriptor_widget():
    """An ipywidgets encoder/decoder: pick a layout and see both descriptors and their fields; or
    type a 64-bit descriptor and see it decoded."""
    import ipywidgets as w
    from IPython.display import display
    major = w.Dropdown(options=list(MAJORS), value="K", description="major")
    swz = w.Dropdown(options=list(LAYOUTS), value="128B", description="swizzle")
    dt = w.Dropdown(options=["f16", "bf16", "tf32", "e4m3", "s8"], value="f16", description="dtype")
    mn = w.IntText(value=128, description="tile MN")
    kk = w.IntText(value=64, description="tile K")
    kb = w.IntText(value=0, description="k_block")
    base = w.IntText(value=0, description="base addr")
    raw = w.Text(value="0x4000404000010000", description="decode")
    out = w.Output()

    def show(*_):
        out.clear_output()
        with out:
            try:
                for arch in ARCHS:
                    d = tile_desc(major.value, swz.value, dt.value, (mn.value, kk.value), kb.value, base.value, arch)
                    print(format_fields(d.fields(), f"{arch}: {d.encode():#018x}"))
                    print()
            except ValueError as e:
                print(f"ValueError: {e}")
            try:
                v = int(raw.value, 0)
                for arch in ARCHS:
                    try:
                        print(format_fields(decode_smem_desc(v, arch).fields(), f"{v:#018x} read as {arch}"))
                    except ValueError as e:
                        print(f"{v:#018x} as {arch}: ValueError: {e}")
            except ValueError:
                print(f"not a number: {raw.value!r}")

    for c in (major, swz, dt, mn, kk, kb, base, raw):
        c.observe(show, names="value")
    show()
    box = w.VBox([w.HBox([major, swz, dt]), w.HBox([mn, kk, kb, base]), raw, out])
    display(box)
    return box


def instr_desc_widget():
    """An ipywidgets encoder for the instruction descriptor, with the rule broken when invalid."""
    import ipywidgets as w
    from IPython.display import display
    ab = w.Dropdown(options=["f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"], value="f16", description="A, B")
    c = w.Dropdown(options=["f32", "f16", "s32"], value="f32", description="D")
    M = w.Dropdown(options=[64, 128, 256], value=128, description="M")
    N = w.IntText(value=256, description="N")
    am = w.Dropdown(options=["K", "MN"], value="K", description="A major")
    bm = w.Dropdown(options=["K", "MN"], value="K", description="B major")
    cg = w.Dropdown(options=[1, 2], value=1, description="cta_group")
    out = w.Output()

    def show(*_):
        out.clear_output()
        with out:
            try:
                v = make_instr_desc(ab.value, ab.value, c.value, M.value, N.value, am.value, bm.value,
                                    cta_group=cg.value)
                print(format_fields(decode_instr_desc(v, kind_of(ab.value, ab.value)).fields(), f"idesc = {v:#010x}"))
            except ValueError as e:
                print(f"ValueError: {e}")

    for x in (ab, c, M, N, am, bm, cg):
        x.observe(show, names="value")
    show()
    box = w.VBox([w.HBox([ab, c, cg]), w.HBox([M, N, am, bm]), out])
    display(box)
    return box
