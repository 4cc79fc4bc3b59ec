"""Which GPU is here, which tier each stage of the data path runs in, and the words that say so.

Four tiers, chosen per stage (the course's one statement of them: notebook 00 and the README print
`tier_table()` and `TIER_WORDS`; every other place asks `where(stage)` for its words):

* ``hardware`` — the GPU runs the stage's kernel.
* ``hybrid``   — sm_90+ without tcgen05 (Hopper, consumer Blackwell): the TMA load, multicast and store
  run on the GPU; tcgen05.mma and TMEM are executed by bwlab's NumPy model from the bytes the GPU loaded.
* ``emulated`` — no GPU with TMA (none at all, or one older than sm_90): the stage's kernel itself (its
  PTX, as NVRTC emits it for sm_90a, or sm_100a for UMMA and TMEM) runs in bwlab's PTX emulator
  (`bwlab.emu`), instruction by instruction, on the CPU; time in it is virtual.
* ``model``    — only when asked for (``BWLAB_BACKEND=model``): every stage computed by the NumPy model
  alone, kernels compiled but not run.

``BWLAB_BACKEND=emulated`` runs the emulated tier even where a GPU is present; ``BWLAB_BACKEND=hybrid``
caps tcgen05 stages at hybrid on a Blackwell GPU; ``BWLAB_BACKEND=model`` forces the model tier.
"""
from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass

__all__ = ["GpuInfo", "gpu_info", "backend", "tier", "tiers", "on_gpu", "tiers_for", "tier_table", "banner",
           "native_arch", "where", "TIERS", "TIER_WORDS",
           "has_gpu", "require", "using_backend", "STAGES", "STAGE_ALIASES", "stage_name", "UnsupportedGPU"]

# stage -> (title, what it needs for hardware, notebook)
STAGES = {
    "tma": ("TMA load", "tma", "01_tma_load"),
    "multicast": ("TMA multicast", "tma", "02_multicast"),
    "umma": ("UMMA (tcgen05.mma)", "tcgen05", "03a_umma_descriptors, 03b_umma_mma"),
    "tmem": ("TMEM (tcgen05.ld/st)", "tcgen05", "04_tmem_load"),
    "store": ("TMA store", "tma", "05_tma_store"),
}
# Other names a stage is known by: the TMA store's package is bwlab.epilogue. Accepted everywhere.
STAGE_ALIASES = {"epilogue": "store"}


def stage_name(stage: str) -> str:
    """The stage's name in STAGES (an alias such as 'epilogue' gives 'store'); ValueError if unknown."""
    stage = STAGE_ALIASES.get(stage, stage)
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
    return stage


class UnsupportedGPU(RuntimeError):
    """The GPU here cannot run what was asked for (raised before any driver call)."""


@dataclass(frozen=True)
class GpuInfo:
    name: str
    cc: tuple[int, int]
    sm_count: int
    smem_per_sm: int
    smem_per_block_optin: int
    l2_bytes: int
    global_mem_bytes: int
    regs_per_sm: int
    max_cluster_size_portable: int = 8

    @property
    def sm(self) -> str:
        return f"sm_{self.cc[0]}{self.cc[1]}"

    @property
    def has_tma(self) -> bool:  # cp.async.bulk.tensor, clusters, mbarrier tx-count: sm_90+
        return self.cc >= (9, 0)

    @property
    def has_tcgen05(self) -> bool:  # datacenter Blackwell family (sm_100/101/103, sm_110)
        return self.cc[0] in (10, 11)

    @property
    def has_wgmma(self) -> bool:  # wgmma.mma_async exists on sm_90a only
        return self.cc == (9, 0)


@contextlib.contextmanager
def using_backend(name: str):
    """`with using_backend("emulated"):` sets BWLAB_BACKEND for the block and restores it after."""
    old = os.environ.get("BWLAB_BACKEND")
    os.environ["BWLAB_BACKEND"] = name
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("BWLAB_BACKEND", None)
        else:
            os.environ["BWLAB_BACKEND"] = old


def backend() -> str:
    b = os.environ.get("BWLAB_BACKEND", "auto").strip().lower() or "auto"
    if b not in ("auto", "model", "hybrid", "emulated"):
        raise ValueError(f"BWLAB_BACKEND must be 'auto', 'hybrid', 'emulated' or 'model', got {b!r}")
    return b


@functools.lru_cache(maxsize=1)
def _probe() -> GpuInfo | None:
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() < 1:
            return None
        dev = cp.cuda.Device()
        props = cp.cuda.runtime.getDeviceProperties(dev.id)
        a = dev.attributes
        name = props["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        major, minor = int(props["major"]), int(props["minor"])
        return GpuInfo(
            name=name, cc=(major, minor),
            sm_count=int(props["multiProcessorCount"]),
            smem_per_sm=int(a.get("MaxSharedMemoryPerMultiprocessor", props.get("sharedMemPerMultiprocessor", 0))),
            smem_per_block_optin=int(a.get("MaxSharedMemoryPerBlockOptin", props.get("sharedMemPerBlockOptin", 0))),
            l2_bytes=int(props.get("l2CacheSize", 0)),
            global_mem_bytes=int(props.get("totalGlobalMem", 0)),
            regs_per_sm=int(props.get("regsPerMultiprocessor", 0)),
        )
    except Exception:  # no CuPy, no driver, no device: the model tier
        return None


def gpu_info() -> GpuInfo | None:
    """The current GPU, or None when there is none (or BWLAB_BACKEND=model)."""
    if backend() == "model":
        return None
    return _probe()


def has_gpu() -> bool:
    return gpu_info() is not None


def native_arch() -> str:
    """The NVRTC target for this GPU with the arch-specific suffix, e.g. 'sm_90a'."""
    info = gpu_info()
    if info is None:
        raise UnsupportedGPU("no CUDA GPU is available (or BWLAB_BACKEND=model); use "
                             "bwlab.compile.compile_cuda(..., arch='sm_90a') to compile without one")
    return f"sm_{info.cc[0]}{info.cc[1]}a"


# the stages whose kernels the emulator executes (sm_90a code: TMA, mbarrier, clusters, bulk stores;
# sm_100a code: tcgen05.mma, TMEM and its allocator, bwlab.emu.isa.asynchronous.tcgen05)
EMULATED_STAGES = ("tma", "multicast", "store", "umma", "tmem")


def tier(stage: str) -> str:
    """'hardware', 'hybrid', 'emulated' or 'model' for one stage ('tma', 'multicast', 'umma', 'tmem',
    'store'; 'epilogue' is accepted for 'store')."""
    stage = stage_name(stage)
    b = backend()
    if b == "model":
        return "model"
    if b == "emulated":
        return "emulated" if stage in EMULATED_STAGES else "model"
    info = gpu_info()
    t = tiers_for(None if info is None else info.cc)[stage]
    if t == "hardware" and STAGES[stage][1] == "tcgen05" and b == "hybrid":
        return "hybrid"
    return t


def on_gpu(stage: str) -> bool:
    """Whether this machine's GPU itself runs (part of) `stage`: the hardware and hybrid tiers. Where it
    does not, a notebook shows what a GPU recorded (the emulated and model tiers); timings and
    measurements mean something only where it does."""
    return tier(stage) in ("hardware", "hybrid")


def tiers() -> dict[str, str]:
    return {s: tier(s) for s in STAGES}


def require(stage: str, wanted: str = "hardware") -> GpuInfo:
    """Raise UnsupportedGPU (before any driver call) unless `stage` runs at `wanted` or better."""
    order = {"model": 0, "emulated": 1, "hybrid": 2, "hardware": 3}
    stage = stage_name(stage)
    got = tier(stage)
    if order[got] < order[wanted]:
        info = gpu_info()
        what = "no GPU" if info is None else f"{info.name} ({info.sm})"
        need = {"tma": "sm_90 or newer (TMA, clusters, mbarrier transaction counts)",
                "tcgen05": "sm_100 (datacenter Blackwell: tcgen05 and TMEM)"}[STAGES[stage][1]]
        if backend() == "model":
            what += ", BWLAB_BACKEND=model"
        raise UnsupportedGPU(f"{STAGES[stage][0]} on {wanted} needs {need}; this machine has {what}")
    return gpu_info()


# Representative GPUs of each family, for the tier table in notebook 00 and the README.
FAMILIES = (
    ("Blackwell datacenter (B200, GB200)", (10, 0)),
    ("Hopper (H100, H200)", (9, 0)),
    ("Blackwell consumer (RTX 50xx, sm_120)", (12, 0)),
    ("Ada (L4, RTX 40xx, sm_89)", (8, 9)),
    ("Ampere (A100 sm_80, RTX 30xx sm_86)", (8, 0)),
    ("no GPU", None),
)


def tiers_for(cc) -> dict[str, str]:
    """The tier of every stage on a GPU of compute capability `cc` (None: no GPU), by the rules above
    (BWLAB_BACKEND left at auto)."""
    if cc is None or tuple(cc) < (9, 0):
        return {s: ("emulated" if s in EMULATED_STAGES else "model") for s in STAGES}
    tcgen05 = cc[0] in (10, 11)
    return {s: ("hardware" if STAGES[s][1] == "tma" or tcgen05 else "hybrid") for s in STAGES}


def tier_table():
    """Rows (family, sm, {stage: tier}) for each GPU family."""
    return [(fam, "-" if cc is None else f"sm_{cc[0]}{cc[1]}", tiers_for(cc)) for fam, cc in FAMILIES]


TIERS = ("hardware", "hybrid", "emulated", "model")

# What each tier means for one stage, in the words every notebook and runner uses (`where`).
TIER_WORDS = {
    "hardware": "this GPU ({gpu}) runs the kernel",
    "hybrid": "this GPU ({gpu}) runs the TMA copies; bwlab's NumPy model executes tcgen05.mma and TMEM from the "
              "bytes it loaded",
    "emulated": "bwlab's PTX emulator runs the kernel's own {arch} PTX on the CPU, instruction by instruction "
                "(time there is virtual)",
    "model": "bwlab's NumPy model computes what the kernel would (BWLAB_BACKEND=model); the kernel is compiled, "
             "not run",
}


def where(stage: str | None = None, print_it: bool = False) -> str:
    """What runs `stage` on this machine, in the course's words: '<stage> — <tier>: <what that means>'
    (every stage, one line each, when `stage` is None). The one source of the words a notebook or a
    runner prints about where something runs."""
    if stage is None:
        text = "\n".join(where(s) for s in STAGES)
    else:
        stage = stage_name(stage)
        t = tier(stage)
        info = gpu_info()
        gpu = f"{info.name}, {info.sm}" if info is not None else "no GPU"
        arch = "sm_100a" if STAGES[stage][1] == "tcgen05" else "sm_90a"
        text = f"{STAGES[stage][0]} — {t}: " + TIER_WORDS[t].format(gpu=gpu, arch=arch)
    if print_it:
        print(text)
    return text


def banner(print_it: bool = True) -> str:
    """One line (two with the legend) for the top of every notebook: the GPU and each stage's tier."""
    info = gpu_info()
    t = tiers()
    em = [STAGES[s][0] for s, v in t.items() if v == "emulated"]
    if em:
        why = "BWLAB_BACKEND=emulated" if backend() == "emulated" else "no CUDA GPU with TMA found"
        rest = [STAGES[s][0] for s, v in t.items() if v == "model"]
        text = (f"Emulated tier ({why}): the {', '.join(em)} kernels run in bwlab's PTX emulator on the CPU "
                f"(their sm_90a or sm_100a PTX, instruction by instruction; time is virtual)"
                + (f"; {' and '.join(rest)} run in the NumPy model." if rest else "."))
    elif info is None:
        why = "BWLAB_BACKEND=model" if backend() == "model" else "no CUDA GPU found"
        text = (f"Model tier ({why}): every stage runs in bwlab's NumPy model; "
                "kernels are still compiled for sm_90a/sm_100a through NVRTC.")
    elif not info.has_tma:
        text = (f"{info.name} ({info.sm}): no TMA on this GPU (it needs sm_90+), so every stage runs "
                "in the NumPy model; kernels are compiled through NVRTC.")
    else:
        hw = [STAGES[s][0] for s, v in t.items() if v == "hardware"]
        hy = [STAGES[s][0] for s, v in t.items() if v == "hybrid"]
        text = f"{info.name} ({info.sm}): " + ", ".join(hw) + " on hardware"
        if hy:
            text += "; " + " and ".join(hy) + " modelled (they need sm_100)"
    if print_it:
        print(text)
    return text
