"""The PTX of the whole kernel, each instruction tied to the hop it belongs to (no GPU: NVRTC builds the
sm_100a PTX anywhere)."""
from __future__ import annotations

from .trace import HOPS

__all__ = ["kernel_ptx", "ptx_by_hop", "format_ptx_by_hop"]

KERNELS = {"sm_100a": ("full_flow_sm100", "full_flow"), "sm_90a": ("full_flow_sm90", "full_flow_hopper")}


def kernel_ptx(arch: str = "sm_100a") -> str:
    """The PTX of `full_flow` (sm_100a) or `full_flow_hopper` (sm_90a)."""
    from ..compile import compile_cuda
    src, kernel = KERNELS[arch]
    return compile_cuda(src, arch=arch).ptx_of(kernel)


SETUP = ("tcgen05.alloc", "tcgen05.relinquish_alloc_permit", "mbarrier.init", "fence.mbarrier_init")
TEARDOWN = ("tcgen05.dealloc",)
# Synchronisation that belongs to whichever hop is under way (waits, barriers, TMEM ordering fences).
FOLLOWERS = ("mbarrier.try_wait", "bar.sync", "barrier.sync", "tcgen05.fence", "tcgen05.wait")
PSEUDO = {"setup": "allocate TMEM, initialise the mbarriers", "teardown": "free TMEM"}


def _defining_hop(s: str):
    for h in HOPS:
        if any(s.startswith(prefix) for prefix in h.ptx):
            return h.name
    if s.startswith(SETUP):
        return "setup"
    if s.startswith(TEARDOWN):
        return "teardown"
    if s.startswith("st.shared") or s.startswith("tcgen05.ld"):
        return None
    return None


def ptx_by_hop(ptx: str):
    """[(PTX line number, hop name, instruction text)] for the instructions of the data path, in the
    kernel's order: each instruction that does a hop's work names its hop; waits, barriers and fences
    go with the hop under way; `elect.sync` (which thread issues) goes with the hop that follows.
    'setup' and 'teardown' hold TMEM allocation and mbarrier initialisation."""
    out, pending, current = [], [], "setup"
    for n, line in enumerate(ptx.splitlines(), 1):
        s = line.strip().rstrip(";")
        if not s or s.startswith("//"):
            continue
        if s.startswith("elect.sync"):
            pending.append((n, s))
            continue
        hop = _defining_hop(s)
        if hop is None and s.startswith(("tcgen05.ld", "tcgen05.wait::ld")):
            hop = "tmem_ld"
        if hop is None and s.startswith("st.shared"):
            hop = "st_shared" if current in ("tmem_ld", "st_shared", "commit", "mma") else None
        if hop is None and s.startswith(FOLLOWERS):
            hop = current
        if hop is None:
            continue
        if hop != "teardown":
            current = hop
        out.extend((m, hop, t) for m, t in pending)
        pending = []
        out.append((n, hop, s))
    return out


def format_ptx_by_hop(ptx: str, width: int = 110, collapse: bool = True) -> str:
    """The listing grouped under each hop's heading; runs of the same instruction collapsed to one
    line with a count (32 st.shared.v4 read as one line, x32)."""
    rows = ptx_by_hop(ptx)
    lines, last_hop = [], None
    i = 0
    while i < len(rows):
        n, hop, text = rows[i]
        op = text.split()[0]
        j = i
        while collapse and j + 1 < len(rows) and rows[j + 1][1] == hop and rows[j + 1][2].split()[0] == op:
            j += 1
        if hop != last_hop:
            title = PSEUDO[hop] if hop in PSEUDO else next(x for x in HOPS if x.name == hop).title
            lines.append(f"--- {'hop ' if hop not in PSEUDO else ''}{hop}: {title}")
            last_hop = hop
        shown = text if len(text) <= width else text[:width - 3] + "..."
        count = f"   (x{j - i + 1}, lines {n}-{rows[j][0]})" if j > i else ""
        lines.append(f"{n:5d}  {shown}{count}")
        i = j + 1
    return "\n".join(lines)
