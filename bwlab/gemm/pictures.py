"""Pictures of the ladder: the measured table as bars, and CTA 0's per-warp timeline (matplotlib)."""
from __future__ import annotations

import numpy as np

from ..plotting import MEMORY_COLORS, cta_color
from .report import PREDICTED_BY, PREDICTED_SHAPE, rows as report_rows, shapes as report_shapes
from .ladder import STEPS
from .timeline import step_timeline

__all__ = ["plot_ladder", "plot_timelines", "plot_sm100_timelines", "plot_tiles", "plot_tile_orders", "plot_clock_log",
           "plot_decode_roofline", "plot_decode_landing"]

# Each bar has the colour of the memory its warps write into (notebook 06's palette): the producer's
# loads fill SMEM, wgmma accumulates in registers, the epilogue writes C to GMEM.
LANE_COLORS = {"producer": MEMORY_COLORS["SMEM"], "consumer": MEMORY_COLORS["RMEM"], "epilogue": MEMORY_COLORS["GMEM"]}


def _short(name: str) -> str:
    return name.split("_")[0]


def plot_ladder(rec, order=None):
    """One row per recorded shape: on the left the TFLOP/s of each step, each with a tick at the best
    library's TFLOP/s in the launches interleaved with that step (the GPU's clock moves between
    launches, so a step is drawn only against its own library run); on the right the fraction of that
    library each step reached, beside the fraction predicted by the timing model (H100 SXM description;
    only at the shape the predictions were made for, PREDICTED_SHAPE). 10 inches wide, no text under 8 points: legible
    at the ~1000 px a notebook shows."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    shapes = order or sorted(report_shapes(rec), key=lambda s: (s != "8192x8192x8192", s != "4096x4096x4096"))
    fig, axes = plt.subplots(len(shapes), 2, figsize=(10, 2.9 * len(shapes) + 0.9), squeeze=False)
    rows = report_rows(rec)
    x = np.arange(len(STEPS))
    colors = [cta_color(i) for i in range(len(STEPS))]
    for row, shape in enumerate(shapes):
        steps = {r.name: r for r in rows if r.shape == shape and r.is_step}
        left, right = axes[row, 0], axes[row, 1]
        tf = [steps[s.name].tflops if s.name in steps else 0 for s in STEPS]
        lib = [steps[s.name].library_alongside if s.name in steps else 0 for s in STEPS]
        left.bar(x, tf, color=colors, edgecolor="black", linewidth=0.5)
        for i, (v, lv) in enumerate(zip(tf, lib)):
            left.plot([i - 0.42, i + 0.42], [lv, lv], color="black", linewidth=1.6)
            left.text(i, min(v, lv) - 30, f"{v:.0f}", ha="center", va="top", fontsize=8, color="white",
                      fontweight="bold")
        left.set_ylim(0, max(max(tf), max(lib)) * 1.12)
        left.set_title(f"{shape.replace('x', ' x ')}: TFLOP/s", fontsize=10)
        ratio = [steps[s.name].ratio if s.name in steps else 0 for s in STEPS]
        predicted = shape == PREDICTED_SHAPE
        width, shift = (0.4, -0.2) if predicted else (0.7, 0.0)
        right.bar(x + shift, ratio, width, color=colors, edgecolor="black", linewidth=0.5)
        for i, m in enumerate(ratio):
            right.text(i + shift, m + 0.02, f"{m:.2f}", ha="center", fontsize=8)
        if predicted:
            pred = [s.predicted for s in STEPS]
            right.bar(x + 0.2, pred, 0.4, color="white", edgecolor="gray", hatch="//", linewidth=0.8)
            for i, p in enumerate(pred):
                right.text(i + 0.2, p + 0.02, f"{p:.2f}", ha="center", fontsize=8, color="dimgray")
        right.axhline(1.0, color="black", linewidth=0.8)
        right.set_ylim(0, 1.22)
        right.set_title(f"{shape.replace('x', ' x ')}: fraction of the best library", fontsize=10)
        for ax in (left, right):
            ax.set_xticks(x, [_short(s.name) for s in STEPS], fontsize=9)
            ax.tick_params(axis="y", labelsize=8)
    fig.legend(handles=[Line2D([], [], color="black", linewidth=1.6,
                               label="best library, timed alongside the step (left)"),
                        Patch(facecolor=colors[0], edgecolor="black", label="measured fraction (right)"),
                        Patch(facecolor="white", edgecolor="gray", hatch="//",
                              label=f"{PREDICTED_BY} ({PREDICTED_SHAPE.replace('x', ' x ')})")],
               fontsize=8, loc="lower center", ncol=3, frameon=False)
    fig.suptitle(f"The Hopper GEMM ladder, C = A·Bᵀ (bf16 in, f32 accumulation, bf16 out)\n{rec.label}",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0.035, 1, 1))
    return fig


def _lanes(ax, tl, t0, t1, shift, show_slices):
    """Draw one step's four lanes in [t0, t1] (cycles, drawn from `shift`)."""
    ys = {0: 3.0, 1: 2.0, 2: 1.0, 3: 0.0}
    prod, first = tl.bars[0], tl.bars[1]
    for k, (b, e) in enumerate(prod):
        if np.isnan(b) or e < t0 or b > t1:
            continue
        ax.broken_barh([(b - shift, e - b)], (ys[0] - 0.3, 0.6), color=LANE_COLORS["producer"], alpha=0.3)
        ax.plot([e - shift] * 2, [ys[0] - 0.3, ys[0] + 0.3], color=LANE_COLORS["producer"], linewidth=1.5)
        if k < len(first) and not np.isnan(first[k, 0]):   # in flight: issued -> a consumer sees the bytes
            y = ys[0] - 0.42 - 0.07 * (k % 4)
            ax.plot([e - shift, first[k, 0] - shift], [y, y], color="gray", linewidth=0.8)
    for tr in (1, 2):
        for k, (b, e) in enumerate(tl.bars[tr]):
            if np.isnan(b) or e < t0 or b > t1:
                continue
            y = ys[tr] + (0.02 if k % 2 == 0 else -0.38)     # even slices above odd: overlaps stay visible
            ax.broken_barh([(b - shift, e - b)], (y, 0.36), color=LANE_COLORS["consumer"],
                           alpha=0.95 if k % 2 == 0 else 0.6, edgecolor="black", linewidth=0.3)
            if show_slices and tr == 1 and b >= t0 and e - b > 0.012 * (t1 - t0):
                ax.text((b + e) / 2 - shift, y + 0.18, str(k % tl.k_tiles), ha="center", va="center", fontsize=8)
    for tile, cons, b, e in tl.epilogue_bars():
        if e < t0 or b > t1:
            continue
        y = ys[3] + (0.02 if cons == 0 else -0.38)
        ax.broken_barh([(b - shift, e - b)], (y, 0.36), color=LANE_COLORS["epilogue"], edgecolor="black",
                       linewidth=0.3)
        ax.text(e - shift, y + 0.18, f" tile {tile}, WG {cons + 1}: {(e - b) / 1000:.1f}k cycles", ha="left",
                va="center", fontsize=8)
    if len(tl.bars[1]) > tl.k_tiles and t0 <= tl.bars[1][tl.k_tiles, 0] <= t1:
        xb = tl.bars[1][tl.k_tiles, 0] - shift
        ax.axvline(xb, color="black", linestyle=":", linewidth=1)
        ax.text(xb, 3.55, " next tile's first k-slice", fontsize=8, va="center")
    one_wg = tl.step.threads == 128
    ax.set_yticks([3, 2, 1, 0], ["TMA loads issued" + (" (thread 0)" if one_wg else " (producer)"),
                                 "wgmma: math WG" if one_wg else "wgmma: consumer WG 1",
                                 "(no second WG)" if one_wg else "wgmma: consumer WG 2", "epilogue: C out"],
                  fontsize=8)
    ax.set_ylim(-0.6, 3.8)


def plot_timelines(rec, steps=("s1", "s3"), where: str = "start", slices: int = 16, title: str = ""):
    """CTA 0 of each step in `steps`, one above the other on the same scale of SM cycles: the TMA
    producer (wait for a free buffer + issue), the consumers (a k-slice from 'its bytes landed' to 'its
    wgmma known finished'; even slices drawn above odd ones) and the epilogue. `where`: 'start' (the
    first `slices` k-slices) or 'boundary' (the end of the first tile, its epilogue, the next tile)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    tls = [step_timeline(rec, s) for s in steps]
    wins = [tl.window(where, slices) for tl in tls]
    span = max(t1 - t0 for t0, t1 in wins)
    # 10 inches wide and no text under 8 points: legible at the ~1000 px a notebook shows
    fig, axes = plt.subplots(len(tls), 1, figsize=(10, 2.7 * len(tls) + 1.4), squeeze=False)
    for ax, tl, (t0, t1) in zip(axes[:, 0], tls, wins):
        _lanes(ax, tl, t0, t1, t0, show_slices=True)
        ax.set_xlim(-0.01 * span, span * 1.01)
        ax.set_title(f"{tl.step.name}: {tl.slice_period:.0f} cycles per k-slice inside a tile, a consumer holds "
                     f"a slice {100 * tl.busy(t0, t1):.0f}% of this window; SM clock {tl.clock_ghz:.2f} GHz",
                     fontsize=9, loc="left", wrap=True)
        first = "the kernel's first stamp" if where == "start" else \
            f"k-slice {tl.k_tiles - slices // 2} (tile 0 has {tl.k_tiles})"
        ax.set_xlabel(f"SM cycles (clock64) from {first}", fontsize=8)
    fig.legend(handles=[Patch(color=LANE_COLORS["producer"], alpha=0.3,
                                     label="producer: waits for a free buffer, issues (dark tick)"),
                               Line2D([], [], color="gray", linewidth=0.8,
                                      label="load in flight until a consumer sees it"),
                               Patch(color=LANE_COLORS["consumer"], label="consumer: slice landed -> its wgmma done"),
                               Patch(color=LANE_COLORS["epilogue"], label="epilogue: one consumer's C")],
               fontsize=8, loc="lower center", ncol=2, frameon=False)
    shape = " x ".join(str(v) for v in rec.params["stamp_shape"])
    fig.suptitle(f"{title}\nCTA 0 of a {shape} GEMM, {rec.label}", fontsize=11, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def plot_sm100_timelines(stamps_by_step: dict, title: str = ""):
    """CTA 0's per-warp timeline of Blackwell ladder steps run in the PTX emulator: for each step (name ->
    stamps, track x span x edge as `sm100.run_sm100_emulated(..., stamps=True)` returns them) one row per
    warp role — the TMA producer, the single MMA issuer, the four epilogue warps (one TMEM lane quarter
    each) — and one bar per piece of work, from when it starts waiting for what it needs to when its work
    is issued. Time is the emulator's virtual %globaltimer: the order of events, not their duration."""
    import matplotlib.pyplot as plt
    from .sm100 import STAMP_TRACKS
    colors = [MEMORY_COLORS["SMEM"], MEMORY_COLORS["TMEM"]] + [MEMORY_COLORS["GMEM"]] * 4
    names = list(stamps_by_step)
    fig, axes = plt.subplots(len(names), 1, figsize=(10, 1.6 + 1.5 * len(names)), squeeze=False)
    for ax, name in zip(axes[:, 0], names):
        st = np.asarray(stamps_by_step[name], dtype=np.int64)
        used = st > 0
        t0 = st[used].min()
        px = 850 / max(1, st[used].max() - t0)      # ~ pixels per ns across the axes at 1000 px
        for tr in range(st.shape[0]):
            for span in np.flatnonzero(used[tr, :, 0] & used[tr, :, 1]):
                b, e = st[tr, span] - t0
                ax.barh(tr, max(e - b, 1), left=b, height=0.6, color=colors[tr], edgecolor="black", linewidth=0.4)
                if (e - b) * px >= 7 * len(str(span)) + 4:     # a number only where it fits in its bar
                    ax.text(b + (e - b) / 2, tr, str(span), ha="center", va="center", fontsize=8)
        ax.set_yticks(range(len(STAMP_TRACKS)), [t.replace("epilogue lanes", "epilogue, lanes") for t in STAMP_TRACKS],
                      fontsize=9)
        ax.invert_yaxis()
        ax.set_title(f"{name}: bars run from 'starts waiting' to 'work issued'; numbers: k-block (TMA, MMA) or tile "
                     "(epilogue), where they fit", fontsize=10, loc="left")
        ax.set_xlabel("virtual ns from the first stamp (the emulator's clock: order, not duration)", fontsize=9)
    fig.suptitle(title or "Blackwell ladder in the PTX emulator: CTA 0 per warp role", fontsize=11, x=0.01,
                 ha="left")
    fig.tight_layout()
    return fig


def plot_tile_orders(rows: int, cols: int, wave: int, group: int = 8):
    """Two persistent tile orders on a rows x cols grid of cluster tiles, side by side: each cell
    coloured by the wave of `wave` clusters that computes it (cells of one wave run at the same time)
    and the walk of the first two waves drawn over it; the title of each says how many A row-slabs
    plus B column-slabs a wave touches (bwlab.gemm.order.footprint)."""
    import matplotlib.pyplot as plt
    from .order import footprint, grouped_order, hilbert_order
    fig, axes = plt.subplots(1, 2, figsize=(10, 5.2))
    for ax, (title, order) in zip(axes, (("grouped bands (steps 4-6)", grouped_order(rows, cols, group)),
                                         ("Hilbert curve (step 7)", hilbert_order(rows, cols)))):
        grid = np.zeros((rows, cols))
        grid[order[:, 0], order[:, 1]] = np.arange(len(order)) // wave
        ax.imshow(grid, cmap="tab20", interpolation="nearest", vmin=0, vmax=19)
        first = order[: 2 * wave]
        ax.plot(first[:, 1], first[:, 0], color="black", lw=1.2)
        ax.plot(first[0, 1], first[0, 0], "o", color="black", ms=5)
        f = footprint(order, wave)
        ax.set_title(f"{title}\n{f['mean_slabs']:.1f} slabs per wave of {wave}, {f['total_slabs']} in all",
                     fontsize=10)
        ax.set_xlabel("tile column (B slab)", fontsize=9)
        ax.set_ylabel("cluster row (A slab)", fontsize=9)
        ax.tick_params(labelsize=8)
    fig.suptitle(f"{rows} x {cols} cluster tiles: colour = wave of {wave} clusters; line = the first two waves",
                 fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    return fig


def plot_clock_log(name: str, shape: str, steps=("s6_tma_store",)):
    """What NVML read during one shape of a committed sustained-protocol run (docs/results/NAME.json.gz,
    written by `bench gemm --protocol sustained --json`): the SM clock and the board power against
    time, the warm-up and every block shaded (grey: the library; a colour per step in `steps`; other
    steps' blocks hatched), so a reader sees the clock settle and each block run at the power cap."""
    import gzip
    import json

    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
    from ..results import RESULTS
    data = json.load(gzip.open(RESULTS / f"{name}.json.gz"))
    samples = [c for c in data["clock_samples"] if c[1] and c[1][1] == shape]
    if not samples:
        raise ValueError(f"{name}: no clock samples at {shape}")
    t0 = samples[0][0]
    t = np.array([c[0] - t0 for c in samples])
    fig, ax = plt.subplots(figsize=(10, 3.8))
    ax2 = ax.twinx()
    colors = {s: cta_color(i + 1) for i, s in enumerate(steps)}
    spans, start = [], 0
    for i in range(1, len(samples) + 1):
        if i == len(samples) or samples[i][1] != samples[start][1]:
            spans.append((samples[start][1], t[start], t[i - 1]))
            start = i
    for label, a, b in spans:
        who = label[0]
        if who == "warm-up":
            ax.axvspan(a, b, color="#f2e6c9", lw=0)
        elif who == "library":
            ax.axvspan(a, b, color="#dddddd", lw=0)
        elif who in colors:
            ax.axvspan(a, b, color=colors[who], alpha=0.35, lw=0)
        else:
            ax.axvspan(a, b, facecolor="none", edgecolor="#bbbbbb", hatch="//", lw=0)
    ax.plot(t, [c[2] for c in samples], color="black", lw=1.0)
    ax2.plot(t, [c[3] for c in samples], color="#c0392b", lw=0.8, alpha=0.8)
    ax.set_xlabel("seconds since the warm-up began", fontsize=9)
    ax.set_ylabel("SM clock (MHz), black", fontsize=9)
    ax2.set_ylabel("board power (W), red", fontsize=9, color="#c0392b")
    ax.tick_params(labelsize=8)
    ax2.tick_params(labelsize=8)
    handles = [Patch(color="#f2e6c9", label="warm-up (library)"), Patch(color="#dddddd", label="library block")]
    handles += [Patch(color=c, alpha=0.35, label=f"{s} block") for s, c in colors.items()]
    handles.append(Patch(facecolor="none", edgecolor="#bbbbbb", hatch="//", label="other steps' blocks"))
    ax.legend(handles=handles, fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=len(handles))
    ax.set_title(f"{shape}: NVML every 50 ms during the sustained protocol ({data['gpu']})", fontsize=10)
    fig.tight_layout()
    return fig


def plot_tiles(s, m: int, n: int, ax=None):
    """C (m x n) cut into step `s`'s bm x bn tiles, each coloured and labelled by the CTA of a
    non-persistent launch that computes it (grid x = tile column, y = tile row); a persistent step's
    CTAs walk these tiles in turn."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    from ..plotting import cta_color
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 6 * m / max(n, 1) + 0.8))
    rows, cols = m // s.bm, n // s.bn
    for r in range(rows):
        for c in range(cols):
            i = r * cols + c
            ax.add_patch(Rectangle((c * s.bn, r * s.bm), s.bn, s.bm, facecolor=cta_color(i), edgecolor="black"))
            ax.text((c + 0.5) * s.bn, (r + 0.5) * s.bm, f"({c}, {r})", ha="center", va="center", fontsize=8)
    ax.set_xlim(0, n)
    ax.set_ylim(m, 0)
    ax.set_xlabel("column of C (N)")
    ax.set_ylabel("row of C (M)")
    ax.set_title(f"{s.name}: C {m} x {n} in {s.bm} x {s.bn} tiles; label = the tile's (x, y) in the grid"
                 + (" (persistent: CTAs walk the tiles)" if s.persistent else ""), fontsize=9)
    return ax.figure


def plot_decode_roofline(rows, ax=None):
    """The roofline of the decode shapes: attainable TFLOP/s against arithmetic intensity (FLOP per byte
    that must move), the slope the read stream's bandwidth measured in the same run, the flat roof the
    best square GEMM of that run (the power-capped tensor cores); each shape's candidates as points.
    `rows`: bwlab.gemm.decode.report_rows() of a committed decode report."""
    import math
    import statistics

    import matplotlib.pyplot as plt
    from .decode import SWAP_AB
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 4.6))
    dec = [r for r in rows if not math.isnan(r.roofline)]
    bw = statistics.median(r.tbps for r in dec if r.name == "read stream")      # TB/s
    flat = max((r.tflops for r in rows if r.shape.split("x")[0] == r.shape.split("x")[2]
                and len(set(r.shape.split("x"))) == 1), default=float("nan"))
    ai = lambda r: r.tflops / r.tbps   # noqa: E731 (FLOP per byte)
    xs = [ai(r) for r in dec]
    lo, hi = min(xs) / 1.6, max(max(xs) * 2, (flat / bw if not math.isnan(flat) else 0) * 1.5)
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    roof = [min(bw * x, flat) if not math.isnan(flat) else bw * x for x in grid]
    ax.plot(grid, roof, color="0.3", lw=2, label=f"roofline: read stream {bw:.2f} TB/s, "
                                                  f"square GEMM {flat:.0f} TFLOP/s")
    styles = {"library (cuBLAS)": ("o", "tab:blue"), "sk_split_k": ("s", "tab:orange"),
              SWAP_AB.name: ("D", "tab:green"), SWAP_AB.name + " (PDL)": ("d", "tab:olive")}
    for name, (mk, col) in styles.items():
        pts = [r for r in dec if r.name == name]
        ax.scatter([ai(r) for r in pts], [r.tflops for r in pts], marker=mk, color=col, zorder=3, label=name)
    for r in dec:
        if r.name == "read stream":
            top = min(bw * ai(r), flat) if not math.isnan(flat) else bw * ai(r)
            ax.annotate(f"M = {r.m}", (ai(r), top), textcoords="offset points", xytext=(-8, 8),
                        fontsize=8, ha="right")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity: FLOP per byte that must move (A + B + C)")
    ax.set_ylabel("TFLOP/s")
    ax.set_title("M x 8192 x 8192 (bf16): up to M = 128 the shapes sit on the bandwidth slope")
    ax.legend(fontsize=8, loc="lower right")
    return ax


def plot_decode_landing(rows, ax=None):
    """When the decode rung's bytes of B arrive: per M, B landed across the GPU in each 2 us from the first CTA's
    start (the stage stamps of docs/results/decode_stage_probe.py), beside the rate of the read stream launched
    with PDL in the same run (what the DRAM gives a stream with no ends). `rows`: bwlab.gemm.decode.decode_stage_rows()."""
    import matplotlib.pyplot as plt
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 4.2))
    colors = {16: "tab:blue", 32: "tab:cyan", 64: "tab:green", 128: "tab:orange", 256: "tab:red"}
    for r in rows:
        t = np.arange(len(r.landed) + 1) * r.bin_us
        ax.stairs(r.landed, t, color=colors.get(r.m, "0.4"), lw=2,
                  label=f"M = {r.m}: middle {r.plateau_tbps:.2f} TB/s, launch to launch {r.back_to_back_us:.1f} us")
    stream = float(np.median([r.stream_tbps for r in rows]))
    ax.axhline(stream, color="0.2", ls="--", lw=1.2, label=f"read stream launched with PDL: {stream:.2f} TB/s")
    ax.set_xlabel("us from the first CTA's start (B's stages as they land, per 2 us)")
    ax.set_ylabel("TB/s of B")
    ax.set_ylim(0, max(max(r.landed) for r in rows) * 1.08)
    ax.set_title("In the middle the rung takes B in as fast as the stream (M <= 64); it loses the two ends", fontsize=10)
    ax.legend(fontsize=8, loc="lower center")
    return ax
