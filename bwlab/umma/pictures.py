"""Stage 3's pictures and widgets (matplotlib/ipywidgets imported inside the functions; bwlab.plotting colours)."""
from __future__ import annotations

import numpy as np

from ..hw.swizzle import MODES
from ..hw.tmem import LANES
from .canonical import LAYOUTS, MAJORS, canonical_layout, elem_bytes, instr_k
from .descriptors import ARCHS, WHY_UNCHANGED, decode_smem_desc, descriptor_addresses, format_fields, tile_desc
from .idesc import decode_instr_desc, kind_of, make_instr_desc
from .model import d_tmem_layout

__all__ = ["smem_chunk_map", "plot_smem_layout", "plot_canonical_layouts", "plot_core_matrices", "plot_k_steps",
           "plot_d_tmem_layout", "plot_d_tmem_layouts", "plot_case", "descriptor_widget", "instr_desc_widget"]


def smem_chunk_map(major: str, swizzle: str, dtype: str = "f16", tile=(16, 64), base_address: int = 0):
    """For each 16-byte chunk of the tile's SMEM span: the (mn, k) of its first element."""
    lay = canonical_layout(major, swizzle, dtype, tile, base_address)
    addr = lay.addresses()
    first = np.full((lay.nbytes // 16, 2), -1, np.int64)
    mn, k = np.meshgrid(np.arange(tile[0]), np.arange(tile[1]), indexing="ij")
    chunk = (addr - base_address) // 16
    at_start = (addr % 16) == 0
    first[chunk[at_start], 0] = mn[at_start]
    first[chunk[at_start], 1] = k[at_start]
    return first


def plot_smem_layout(major: str, swizzle: str, dtype: str = "f16", tile=None, ax=None, lines: int = 8,
                     color_by: str = "k", legend: bool = True, fontsize: int = 9):
    """SMEM as 128-byte lines of eight 16-byte chunks; each chunk says which row and which 16-byte
    piece of the operand it holds, coloured by that piece (K-major: the K chunk; MN-major: the K row),
    so the swizzle shows as a permutation of colours along each line. `color_by="piece"` colours an
    MN-major chunk by its 16-byte piece of the 128-byte MN row instead (where the swizzle moved it from)."""
    import matplotlib.pyplot as plt
    from ..plotting import add_legend, plot_grid, thread_color
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
        _, ax = plt.subplots(figsize=(7, 0.5 * lines + 1.5))
    plot_grid(ax, colors, text, fontsize=fontsize,
              title=f"{major}-major, swizzle {swizzle} ({dtype} {tile[0]}x{tile[1]})",
              xlabel="16-byte chunk of the 128-byte SMEM line", ylabel="SMEM byte",
              xticks=[str(j) for j in range(8)], yticks=[f"{128 * i}" for i in range(lines)])
    if legend:
        add_legend(ax, _piece_legend(major, color_by), title="chunk holds m=row, k=first K")
    return ax


def _piece_legend(major: str, color_by: str = "k"):
    from ..plotting import thread_color
    what = "K chunk (16 B of K)" if major == "K" else ("16-byte piece of the MN row" if color_by == "piece"
                                                       else "K row")
    label = (lambda c: f"16-byte piece {c} of the 128-byte row") if major == "MN" and color_by == "piece" \
        else (lambda c: f"{what} {c} (mod 8)")
    return [(label(c), thread_color(4 * c, 32)) for c in range(8)]


def _figure_legend(fig, labels_colors, title, ncol):
    """One legend for the whole figure, below the panels."""
    from matplotlib.patches import Patch
    handles = [Patch(facecolor=c, edgecolor="black", linewidth=0.5, label=str(l)) for l, c in labels_colors]
    return fig.legend(handles=handles, title=title, loc="lower center", ncol=ncol, fontsize=10,
                      title_fontsize=10, frameon=False)


_XOR_WITH = {"none": "", "32B": "line mod 2", "64B": "line mod 4", "128B": "line mod 8"}


def plot_canonical_layouts(major: str, dtype: str = "f16"):
    """The four swizzles of one major (2 x 2), one legend: SMEM bytes 0-1023 of each layout (a different
    part of the tile in each), each 16-byte chunk labelled with the row and first K it holds."""
    import matplotlib.pyplot as plt
    from ..plotting import add_legend
    fig, axes = plt.subplots(2, 2, figsize=(12, 9.5))
    for ax, sw in zip(axes.ravel(), MODES):
        plot_smem_layout(major, sw, dtype, ax=ax, legend=False)
        ax.set_title("no swizzle: one core matrix per 128-byte line" if sw == "none" else
                     f"{sw} swizzle: chunk c sits at c XOR ({_XOR_WITH[sw]})", fontsize=11)
    tile = (16, 64) if major == "K" else (64, 16)
    fig.suptitle(f"{major}-major {dtype} {tile[0]}x{tile[1]} tile ({canonical_layout(major, 'none', dtype, tile).nbytes}"
                 " B): SMEM bytes 0-1023 in each layout (each puts a different half of the tile there)", fontsize=12)
    _figure_legend(fig, _piece_legend(major), "colour = the " + ("K chunk" if major == "K" else "K row")
                   + " a 16-byte chunk holds", ncol=4)
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def plot_core_matrices(major: str = "K", dtype: str = "f16", tile=(16, 32), ax=None):
    """The logical operand tile, each element coloured by the core matrix (8 rows x 16 bytes) it
    belongs to: the unit the descriptors' LBO and SBO step between."""
    import matplotlib.pyplot as plt
    from ..plotting import plot_grid, cta_color
    per16 = 16 // elem_bytes(dtype)
    mn, k = np.meshgrid(np.arange(tile[0]), np.arange(tile[1]), indexing="ij")
    if major == "K":
        cm = (mn // 8) + (tile[0] // 8) * (k // per16)
    else:
        cm = (mn // per16) + (tile[0] // per16) * (k // 8)
    colors = np.vectorize(cta_color, otypes=[object])(cm)
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 0.3 * tile[0] + 1.5))
    plot_grid(ax, colors, None, title=f"{major}-major {dtype} {tile[0]}x{tile[1]} tile: {int(cm.max()) + 1} core "
              f"matrices of 8 rows x 16 bytes ({per16} {dtype})", xlabel="k", ylabel="m (or n)")
    for i in range(int(cm.max()) + 1):           # name each core matrix where it sits
        r, c = np.argwhere(cm == i).mean(axis=0)
        ax.text(c, r, f"core matrix {i}", ha="center", va="center", fontsize=10, color="white")
    return ax


def plot_k_steps(major: str = "K", swizzle: str = "128B", dtype: str = "f16", tile=(8, 64), ax=None):
    """Which SMEM chunks each instruction of the K loop reads (coloured by K step), with each
    step's descriptor start address: inside a 128-byte swizzle atom the start moves 32 bytes per
    step while the swizzle scatters the chunks it names."""
    import matplotlib.pyplot as plt
    from ..plotting import add_legend, plot_grid, cta_color
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
        _, ax = plt.subplots(figsize=(8, 0.5 * lines + 1.5))
    plot_grid(ax, colors, text, fontsize=10, title=f"K loop over a {major}-major {swizzle} tile: chunks read per step",
              xlabel="16-byte chunk of the 128-byte SMEM line", ylabel="SMEM byte",
              xticks=[str(j) for j in range(8)], yticks=[f"{128 * i}" for i in range(lines)])
    add_legend(ax, [(f"step {kb}: start address {s}", cta_color(kb)) for kb, s in enumerate(starts)],
               title="descriptor of each step")
    return ax


_TMEM_LESSON = {"D": "row m of D is lane m", "F": "16 rows in each warp's 32 lanes",
                "A": "each CTA holds 128 rows", "B": "each CTA holds 64 rows; the two halves of N are stacked"}


def _lighter(color, amount: float = 0.55):
    from matplotlib.colors import to_rgb
    return tuple(c + (1 - c) * amount for c in to_rgb(color))


def plot_d_tmem_layout(M: int, N: int, cta_group: int = 1, ax=None, legend: bool = True):
    """Which TMEM lane and column each accumulator element D[m][n] lands in: the colour says which
    32 rows of D (dark for the first half of N, light for the second), each block of lanes is
    labelled with the rows and columns of D it holds; lanes no element reaches stay grey."""
    import matplotlib.pyplot as plt
    from ..plotting import add_legend, plot_grid, warp_color
    lay = d_tmem_layout(M, N, cta_group)
    sel = lay.cta == 0
    cols = lay.columns
    m = np.broadcast_to(np.arange(M)[:, None], (M, N))
    n = np.broadcast_to(np.arange(N)[None, :], (M, N))
    row = np.full((LANES, cols), -1)
    col_n = np.full((LANES, cols), -1)
    row[lay.lane[sel], lay.column[sel]] = m[sel]
    col_n[lay.lane[sel], lay.column[sel]] = n[sel]
    half = N // 2
    colors = np.empty((LANES, cols), dtype=object)
    for r in range(LANES):
        for c in range(cols):
            g = row[r, c]
            colors[r, c] = "#e6e6e6" if g < 0 else (warp_color(g // 32) if col_n[r, c] < half
                                                   else _lighter(warp_color(g // 32)))
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 6))
    plot_grid(ax, colors, None, xlabel="TMEM column", ylabel="TMEM lane")
    ax.set_xticks([0, cols // 2, cols - 1])
    ax.set_xticklabels([0, cols // 2, cols - 1], fontsize=9)
    ax.set_yticks([0, 32, 64, 96, 127])
    ax.set_yticklabels([0, 32, 64, 96, 127], fontsize=9)
    for q in (32, 64, 96):                       # the warp quarters: warp q//32 reaches these lanes only
        ax.axhline(q - 0.5, color="black", linewidth=0.8)
    ax.grid(False, which="minor")
    for q in range(0, LANES, 32):                # label each warp quarter with the part of D it holds
        blk = row[q:q + 32] >= 0
        if blk.any():
            lanes = np.flatnonzero(blk.any(axis=1)) + q
            rows, ns = row[q:q + 32][blk], col_n[q:q + 32][blk]
            ax.text(cols / 2 - 0.5, (lanes.min() + lanes.max()) / 2, f"D rows {rows.min()}-{rows.max()}, "
                    f"n {ns.min()}-{ns.max()}", ha="center", va="center", fontsize=10,
                    bbox=dict(facecolor="white", alpha=0.85, edgecolor="none", pad=1.5))
    ax.set_title(f"M={M} N={N} cta_group::{cta_group} (layout {lay.name}"
                 + (", CTA 0 of the pair" if cta_group == 2 else "") + f"):\n{_TMEM_LESSON[lay.name]}", fontsize=11)
    if legend:
        add_legend(ax, _tmem_legend(N), title="which part of D")
    return ax


def _tmem_legend(N: int):
    from ..plotting import warp_color
    half = N // 2
    out = []
    for w in range(4):
        out += [(f"D rows {32 * w}-{32 * w + 31}, n < {half}", warp_color(w)),
                (f"D rows {32 * w}-{32 * w + 31}, n >= {half}", _lighter(warp_color(w)))]
    return out + [("not written", "#e6e6e6")]


def plot_d_tmem_layouts(N: int = 64):
    """Where D lands in TMEM for the four ways one CTA or a CTA pair can hold it (layouts D, F, A, B),
    2 x 2, one shared legend."""
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 2, figsize=(12, 10))
    for ax, (M, cg) in zip(axes.ravel(), [(128, 1), (64, 1), (256, 2), (128, 2)]):
        plot_d_tmem_layout(M, N, cg, ax=ax, legend=False)
    _figure_legend(fig, _tmem_legend(N), "colour = which 32 rows of D this CTA holds (dark: first half of N, "
                   "light: second half); black lines: the 32 lanes each warp can reach", ncol=3)
    fig.suptitle("Where the accumulator D lands in TMEM (128 lanes x columns of 32 bits)", fontsize=13)
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    return fig


def plot_case(case, lines: int = 8, ax=None):
    """A case at a glance: A's and B's first elements in SMEM (16-byte chunks) and, for tcgen05.mma, D in TMEM."""
    from ..plotting import figure_at
    has_tmem = hasattr(case, "d_layout")
    fig = figure_at(ax, (20 if has_tmem else 13, 5.5))
    axes = fig.subplots(1, 3 if has_tmem else 2)
    for a, op, major, swizzle in ((axes[0], "A", case.a_major, case.a_swizzle),
                                  (axes[1], "B", case.b_major, case.b_swizzle)):
        plot_smem_layout(major, swizzle, case.dtype, ax=a, lines=lines)
        a.set_title(f"{op}: {a.get_title()}", fontsize=9)
    if has_tmem:
        plot_d_tmem_layout(case.M, case.N, ax=axes[2])
    fig.suptitle(case.label() if hasattr(case, "label") else str(case), fontsize=10)
    _ = fig.tight_layout() if ax is None else None
    return fig


_DTYPES = ["f16", "bf16", "tf32", "e4m3", "s8"]


def _row(*controls):
    import ipywidgets as w
    return w.HBox(list(controls), layout=w.Layout(flex_flow="row wrap", max_width="980px"))


def _control(kind, description: str, tooltip: str, width: str = "190px", **kw):
    import ipywidgets as w
    return kind(description=description, tooltip=tooltip, style={"description_width": "initial"},
                layout=w.Layout(width=width), **kw)


def descriptor_widget():
    """An ipywidgets encoder/decoder: pick a layout and see both descriptors and their fields (the
    first line says what the last change did, and why when no field moved); below it, type a 64-bit
    descriptor and see it decoded. Every control offers legal values only."""
    import ipywidgets as w
    from IPython.display import display
    from ..hw.swizzle import span_bytes
    from .canonical import atom_shape
    c = _control
    major = c(w.Dropdown, "major", "K-major: K is contiguous; MN-major: M (or N) is", options=list(MAJORS), value="K")
    swz = c(w.Dropdown, "swizzle", "the canonical layout: the swizzle of its atoms", width="200px",
            options=list(LAYOUTS), value="128B")
    dt = c(w.Dropdown, "dtype", WHY_UNCHANGED["dtype"], width="140px",
           options=_DTYPES, value="f16")
    mn = c(w.Dropdown, "tile MN", WHY_UNCHANGED["tile MN"], width="150px", options=[8, 16, 32, 64, 128, 256], value=128)
    kk = c(w.Dropdown, "tile K", WHY_UNCHANGED["tile K"], width="140px", options=[64], value=64)
    kb = c(w.Dropdown, "k_block", "which instruction of the K loop", width="140px", options=[0, 1, 2, 3], value=0)
    base = c(w.Dropdown, "base", "where the tile starts: a multiple of the swizzle pattern (1024 B for 128B)",
             width="150px", options=[0], value=0)
    out = w.Output()
    last = {"fields": None, "busy": False}

    def legal(*_):
        """Only legal values: K, MN multiples of the atom; k_block inside the tile; base on the span."""
        for ctl, opts in ((swz, lambda: [x for x in LAYOUTS if major.value == "MN" or x != "128B_base32B"]),
                          (dt, lambda: ["tf32"] if swz.value == "128B_base32B" else _DTYPES)):
            opts = opts()
            if list(ctl.options) != opts:
                ctl.options, ctl.value = opts, ctl.value if ctl.value in opts else opts[-1]
        amn, ak = atom_shape(major.value, swz.value, dt.value)
        ki = instr_k(dt.value)
        step = max(ak, ki)
        ks = [step * i for i in (1, 2, 4, 8, 16) if step * i <= 256] or [step]
        mns = [x for x in (8, 16, 32, 64, 128, 256) if x % amn == 0] or [amn]
        span = span_bytes(swz.value.replace("_base32B", ""))
        for ctl, opts in ((kk, ks), (mn, mns), (base, [span * i for i in range(4)])):
            if list(ctl.options) != opts:
                keep = ctl.value if ctl.value in opts else opts[min(len(opts) - 1, 1 if ctl is mn else 0)]
                ctl.options, ctl.value = opts, keep
        kbs = list(range(kk.value // ki))
        if list(kb.options) != kbs:
            kb.options, kb.value = kbs, kb.value if kb.value in kbs else 0

    def show(change=None):
        if last["busy"]:                # a menu narrowed by legal(): the outer call redraws
            return
        last["busy"] = True
        legal()
        last["busy"] = False
        out.clear_output()
        with out:
            archs = [a for a in ARCHS if a == "sm100" or swz.value != "128B_base32B"]
            descs = [tile_desc(major.value, swz.value, dt.value, (mn.value, kk.value), kb.value, base.value, a)
                     for a in archs]
            fields = [d.fields() for d in descs]
            if change is not None and last["fields"] is not None:
                name = change["owner"].description
                moved = sorted({r[1] for old, new in zip(last["fields"], fields) for r, q in zip(old, new) if r != q}
                               | ({"(field set)"} if any(len(o) != len(n) for o, n in zip(last["fields"], fields)) else set()))
                print(f"{name} {change['old']} -> {change['new']}: " + (", ".join(moved) + " changed" if moved else
                      "no field changed — " + (WHY_UNCHANGED.get(name) or "this layout encodes the same way")))
            else:
                print("change a control: this line says which fields moved, or why none did")
            last["fields"] = fields
            for arch, d in zip(archs, descs):
                print(format_fields(d.fields(), f"{arch}: {d.encode():#018x}"))
            if len(archs) == 1:
                print("sm90: none — the 128B swizzle with 32-byte atoms exists on SM100 only")

    for ctl in (major, swz, dt, mn, kk, kb, base):
        ctl.observe(show, names="value")
    show()
    raw = c(w.Text, "decode", "any 64-bit descriptor, e.g. 0x4000404000010000, read as SM100 and SM90",
            width="330px", value="0x4000404000010000")
    dec = w.Output()

    def decode(*_):
        dec.clear_output()
        with dec:
            try:
                v = int(raw.value, 0)
            except ValueError:
                print(f"not a number: {raw.value!r}")
                return
            for arch in ARCHS:
                try:
                    print(format_fields(decode_smem_desc(v, arch).fields(), f"{v:#018x} read as {arch}"))
                except ValueError as e:
                    print(f"{v:#018x} as {arch}: {e}")

    raw.observe(decode, names="value")
    decode()
    box = w.VBox([_row(major, swz, dt, mn, kk, kb, base), out, w.HTML("<b>Decode a descriptor</b>"), raw, dec])
    display(box)
    return box


def instr_desc_widget():
    """An ipywidgets encoder for the instruction descriptor. Each menu offers only the values legal
    with the others (D types for the A/B type, M for cta_group, N for M and the type)."""
    import ipywidgets as w
    from IPython.display import display
    c = _control
    ab = c(w.Dropdown, "A, B", "the operand type (both the same here); sets the kind", width="150px",
           options=["f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"], value="f16")
    d = c(w.Dropdown, "D", "the accumulator type: only those legal for this A/B type are offered", width="120px",
          options=["f32", "f16"], value="f32")
    cg = c(w.Dropdown, "cta_group", "1: one CTA; 2: a CTA pair shares the MMA (M spans both)", width="150px",
           options=[1, 2], value=1)
    M = c(w.Dropdown, "M", "the legal M for this cta_group", width="110px", options=[64, 128], value=128)
    N = c(w.Dropdown, "N", "the legal N for this M and type (multiples of 8 or 16 up to 256)", width="120px",
          options=[256], value=256)
    am = c(w.Dropdown, "A major", "the transpose bit of A (bit 15)", width="140px", options=["K", "MN"], value="K")
    bm = c(w.Dropdown, "B major", "the transpose bit of B (bit 16)", width="140px", options=["K", "MN"], value="K")
    out = w.Output()

    def ok(**kw):
        p = dict(a=ab.value, c=d.value, M=M.value, N=N.value, a_major=am.value, b_major=bm.value, cta_group=cg.value)
        p.update(kw)
        try:
            make_instr_desc(p["a"], p["a"], p["c"], p["M"], p["N"], p["a_major"], p["b_major"], cta_group=p["cta_group"])
            return True
        except ValueError:
            return False

    def narrow(ctl, candidates, **fixed):
        opts = [v for v in candidates if ok(**{**fixed, ctl_key[ctl]: v})] or list(ctl.options)
        if list(ctl.options) != opts:
            keep = ctl.value if ctl.value in opts else opts[-1]
            ctl.options, ctl.value = opts, keep

    ctl_key, busy = {d: "c", M: "M", N: "N", am: "a_major", bm: "b_major"}, []

    def show(*_):
        if busy:                        # a menu narrowed below: the outer call redraws
            return
        busy.append(1)
        narrow(d, ["f32", "f16", "s32"], M=128, N=128, a_major="K", b_major="K", cta_group=1)
        narrow(M, [64, 128, 256], N=128, a_major="K", b_major="K")
        narrow(N, list(range(8, 257, 8)), a_major="K", b_major="K")
        narrow(am, ["K", "MN"], b_major="K")
        narrow(bm, ["K", "MN"])
        busy.clear()
        out.clear_output()
        with out:
            try:
                v = make_instr_desc(ab.value, ab.value, d.value, M.value, N.value, am.value, bm.value,
                                    cta_group=cg.value)
                print(format_fields(decode_instr_desc(v, kind_of(ab.value, ab.value)).fields(), f"idesc = {v:#010x}"))
                rows = "all in this CTA's TMEM" if cg.value == 1 else f"{M.value // 2} in each CTA of the pair"
                print(f"cta_group::{cg.value}: no bit of idesc, the instruction's qualifier; M = {M.value} rows, {rows}")
            except ValueError as e:
                print(f"not legal: {e}")

    for x in (ab, d, M, N, am, bm, cg):
        x.observe(show, names="value")
    show()
    box = w.VBox([_row(ab, d, cg, M, N, am, bm), out])
    display(box)
    return box
