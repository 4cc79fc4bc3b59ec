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
PSEUDO = {"setup": "allocate TMEM, initialise the mbarriers", "teardown": "free TMEM",
          "early_exit": "a wait timed out: free TMEM and return"}
# Hopper's kernel (full_flow_hopper) does the same hops with other instructions: no TMEM, wgmma writes
# D straight into registers, and its completion is a wait on a wgmma group, not an mbarrier.
HOPPER_TITLES = {
    "setup": "initialise the mbarrier (no TMEM to allocate)",
    "mma": "wgmma.fence; {n} x wgmma.mma_async m64n128k16 (2 per K=16 step); "
           "wgmma.commit_group -> D in registers",
    "commit": "wgmma.wait_group 0: the group's MMAs are done, D is complete in registers",
    "st_shared": "st.shared.v2 (registers, wgmma fragment -> swizzled D tile)",
}


def _defining_hop(s: str):
    for h in HOPS:
        if any(s.startswith(prefix) for prefix in h.ptx):
            return h.name
    if s.startswith(SETUP):
        return "setup"
    if s.startswith(TEARDOWN):
        return "teardown"  # ptx_by_hop tells the early exit from the last one
    if s.startswith("st.shared") or s.startswith("tcgen05.ld"):
        return None
    return None


def ptx_by_hop(ptx: str):
    """[(PTX line number, hop name, instruction text)] for the instructions of the data path, in the
    kernel's order: each instruction that does a hop's work names its hop; waits, barriers and fences
    go with the hop under way; `elect.sync` (which thread issues) goes with the hop that follows.
    'setup' and 'teardown' hold TMEM allocation and mbarrier initialisation; a TMEM free met before the
    TMA store (the kernel's way out when a wait times out) is 'early_exit'."""
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
        if hop == "teardown" and current != "tma_store":
            hop = "early_exit"
        if hop not in ("teardown", "early_exit"):
            current = hop
        out.extend((m, hop, t) for m, t in pending)
        pending = []
        out.append((n, hop, s))
    return out


def format_ptx_by_hop(ptx: str, width: int = 110, collapse: bool = True, arch: str | None = None) -> str:
    """The listing grouped under each hop's heading (Hopper's headings for `arch` sm_90a, or, without
    `arch`, for a kernel with no tcgen05 instruction); runs of the same instruction collapsed to one line with a count (32 st.shared.v4 read as
    one line, x32)."""
    rows = ptx_by_hop(ptx)
    hopper = arch.startswith("sm_90") if arch else "tcgen05." not in ptx
    n_wgmma = sum(1 for _, _, t in rows if t.startswith("wgmma.mma_async"))
    lines, last_hop = [], None
    i = 0
    while i < len(rows):
        n, hop, text = rows[i]
        op = text.split()[0]
        j = i
        while collapse and j + 1 < len(rows) and rows[j + 1][1] == hop and rows[j + 1][2].split()[0] == op:
            j += 1
        if hop != last_hop:
            if hopper and hop in HOPPER_TITLES:
                title = HOPPER_TITLES[hop].format(n=n_wgmma)
            else:
                title = PSEUDO[hop] if hop in PSEUDO else next(x for x in HOPS if x.name == hop).title
            if hop == "early_exit":
                lines.append(f"--- early exit ({title})")
            else:
                lines.append(f"--- {'hop ' if hop not in PSEUDO else ''}{hop}: {title}")
            last_hop = hop
        shown = text if len(text) <= width else text[:width - 3] + "..."
        count = f"   (x{j - i + 1}, lines {n}-{rows[j][0]})" if j > i else ""
        lines.append(f"{n:5d}  {shown}{count}")
        i = j + 1
    return "\n".join(lines)
