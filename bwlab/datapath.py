"""The whole Blackwell GEMM data path on one page: GMEM -> SMEM -> TMEM -> RMEM -> SMEM -> GMEM.

Used by notebook 00. Each hop names the PTX instruction that performs it and the notebook that
teaches it; the capacities come from the GPU when there is one, otherwise from B200 public figures
(marked as such) and from the PTX ISA where the ISA fixes them (TMEM geometry).
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HOPS", "Hop", "plot_data_path", "capacities", "B200_PUBLIC"]


@dataclass(frozen=True)
class Hop:
    """One hop of the data path: the memory the data leaves (`src`) and the one it is in afterwards
    (`dst`), the PTX instruction that moves it, who issues it, and the notebook that teaches it. The
    flow's trace (bwlab.flow.trace.HOPS) uses the same type and names its steps: `name`, `title`, the
    trace arrays that hold the bytes afterwards (`keys`) and the PTX mnemonics doing the work (`ptx`)."""

    src: str
    dst: str
    instruction: str
    who: str
    notebook: str = ""
    name: str = ""
    title: str = ""
    keys: tuple = ()
    ptx: tuple = ()

    @property
    def where(self) -> str:
        """Where the data is after the hop (the flow's word for `dst`)."""
        return self.dst


HOPS = (
    Hop("GMEM", "SMEM", "cp.async.bulk.tensor (TMA load)\n+ .multicast::cluster",
        "one thread; mbarrier complete_tx", "01_tma_load, 02_multicast"),
    Hop("SMEM", "TMEM", "tcgen05.mma\n(A, B via SMEM descriptors)", "one thread; tcgen05.commit",
        "03a_umma_descriptors, 03b_umma_mma"),
    Hop("TMEM", "RMEM", "tcgen05.ld\n+ tcgen05.wait::ld", "each warp its lane quarter", "04_tmem_load"),
    Hop("RMEM", "SMEM", "st.shared.v4\n+ fence.proxy.async", "every thread", "05_tma_store"),
    Hop("SMEM", "GMEM", "cp.async.bulk.tensor (TMA store)\n+ commit/wait_group", "one thread",
        "05_tma_store"),
)

# Public B200 figures (NVIDIA specifications, the CUDA programming guide's compute capability 10.0
# table and the PTX ISA), used only when no Blackwell GPU is present to read them from.
B200_PUBLIC = {
    "SMs": ("148", "public specification"),
    "GMEM (HBM3e)": ("192 GB", "public specification"),
    "SMEM per SM": ("228 KB (227 KB usable by one CTA)", "CUDA programming guide, cc 10.0"),
    "RMEM per SM": ("256 KB (64 Ki x 32-bit registers)", "CUDA programming guide, cc 10.0"),
    "TMEM per SM": ("256 KB (128 lanes x 512 columns x 32 bit)", "PTX ISA, tcgen05 Tensor Memory"),
}

from .plotting import MEMORY_COLORS as _STAGE_COLORS  # noqa: E402  (the palette notebook 06 reuses)


def plot_data_path(ax=None):
    """A picture of the five hops with their instructions and notebooks; returns the axes."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
    if ax is None:
        _, ax = plt.subplots(figsize=(13, 3.6))
    names = ["GMEM", "SMEM", "TMEM", "RMEM", "SMEM", "GMEM"]
    xs = [i * 2.6 for i in range(len(names))]
    for x, n in zip(xs, names):
        ax.add_patch(FancyBboxPatch((x - 0.55, -0.35), 1.1, 0.7, boxstyle="round,pad=0.05",
                                    facecolor=_STAGE_COLORS[n], alpha=0.85, edgecolor="black"))
        ax.text(x, 0, n, ha="center", va="center", color="white", fontsize=12, weight="bold")
    for i, hop in enumerate(HOPS):
        x0, x1 = xs[i] + 0.62, xs[i + 1] - 0.62
        ax.add_patch(FancyArrowPatch((x0, 0), (x1, 0), arrowstyle="-|>", mutation_scale=16,
                                     color="black"))
        xm = (x0 + x1) / 2
        ax.text(xm, 0.48, hop.instruction, ha="center", va="bottom", fontsize=8, family="monospace")
        ax.text(xm, -0.5, hop.who, ha="center", va="top", fontsize=7, style="italic")
        ax.text(xm, -0.95, hop.notebook.replace(", ", "\n"), ha="center", va="top", fontsize=7, color="#444444")
    ax.set_xlim(-0.9, xs[-1] + 0.9)
    ax.set_ylim(-1.35, 1.25)
    ax.axis("off")
    ax.set_title("The Blackwell GEMM data path: each hop, its PTX instruction, who issues it, "
                 "and the notebook that teaches it")
    from .plotting import add_legend
    add_legend(ax, [("global memory (HBM)", _STAGE_COLORS["GMEM"]),
                    ("shared memory (per CTA)", _STAGE_COLORS["SMEM"]),
                    ("tensor memory (per SM, sm_100)", _STAGE_COLORS["TMEM"]),
                    ("registers (per thread)", _STAGE_COLORS["RMEM"])], outside=False,
               loc="upper center", ncol=4, bbox_to_anchor=(0.5, -0.02))
    return ax


def capacities():
    """Rows (memory, size, where the number comes from) for this GPU, or B200 public figures."""
    from .device import gpu_info
    info = gpu_info()
    if info is None or not info.has_tcgen05:
        rows = [(k, v, s) for k, (v, s) in B200_PUBLIC.items()]
        title = "B200 (Blackwell, sm_100) — public figures, not read from a device"
        if info is not None:
            title += f"; this machine's {info.name} is listed below"
        out = [("B200", title, "")] + rows
    else:
        out = []
    if info is not None:
        kib = 1024
        out += [
            (info.name, f"{info.sm}, read from the device (cudaGetDeviceProperties)", ""),
            ("SMs", str(info.sm_count), "device"),
            ("GMEM", f"{info.global_mem_bytes / 1024**3:.1f} GiB", "device"),
            ("L2", f"{info.l2_bytes / 1024**2:.0f} MiB", "device"),
            ("SMEM per SM", f"{info.smem_per_sm // kib} KiB ({info.smem_per_block_optin // kib} KiB per CTA)",
             "device"),
            ("RMEM per SM", f"{info.regs_per_sm * 4 // kib} KiB ({info.regs_per_sm} x 32-bit registers)",
             "device"),
            ("TMEM per SM", "256 KiB (128 lanes x 512 columns x 32 bit)" if info.has_tcgen05
             else "none (TMEM exists on sm_100 only)", "PTX ISA"),
        ]
    return out
