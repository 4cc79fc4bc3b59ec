"""bwlab's kernels and their twins in Gluon and CuTe DSL: sources, PTX (compiled here or recorded), the
comparison.

    from bwlab import bridge
    print(bridge.practitioner_source("full_flow"))          # the Gluon kernel
    rec = bridge.practitioner_ptx("gemm_s1", "cute")        # compiled live when the tool is installed,
    print(rec.describe())                                   # else the recording (package, version, date)
    print(bridge.compare("gemm_s1", "cute"))                # instruction classes and descriptors, side by side

Both tools compile for sm_100a without a GPU. Gluon: `triton.compile(GluonASTSource(fn, signature,
constexprs, attrs), target=GPUTarget("cuda", 100, 32))` runs its whole pipeline down to PTX with no
driver. CuTe DSL: `cute.compile(launch, fake tensors...)` in an interpreter started with
CUTE_DSL_ARCH=sm_100a (the architecture is then not probed from a GPU). bwlab's side is its own .cu
compiled by NVRTC for sm_100a (`bwlab.compile`), also without a GPU. The recordings in
`bwlab/bridge/recorded/` are what `python -m bwlab.bridge record` wrote with the versions they name;
they serve where the tools are not installed.
"""
from __future__ import annotations

import datetime
import hashlib
import importlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .ptx_compare import PtxComparison, compare_ptx

__all__ = ["Tool", "TOOLS", "BridgeKernel", "KERNELS", "PtxRecord", "RECORDED", "tool_version",
           "practitioner_source", "practitioner_ptx", "compile_live", "recorded", "bwlab_ptx", "compare",
           "record"]

HERE = Path(__file__).resolve().parent
RECORDED = HERE / "recorded"
SOURCE_END = "# ---- compile without a GPU"   # a twin's file shows the learner everything above this line


@dataclass(frozen=True)
class Tool:
    key: str         # 'gluon', 'cute'
    label: str       # how the notebooks name it
    package: str     # the PyPI package
    version: str     # the version the recordings were made with (pyproject's `bridge` extra pins it)
    front_end: str   # the module that must import for a live compile


TOOLS = {
    "gluon": Tool("gluon", "Gluon", "triton", "3.9.0", "triton.experimental.gluon"),
    "cute": Tool("cute", "CuTe DSL", "nvidia-cutlass-dsl", "4.8.1", "cutlass.cute"),
}


@dataclass(frozen=True)
class BridgeKernel:
    name: str            # the key: 'full_flow', 'gemm_s1'
    bwlab_source: str    # bwlab's kernel under cuda_src/
    bwlab_kernel: str    # its entry point
    what: str
    twins: dict          # tool key -> the file in bwlab/bridge/ that writes the kernel with that tool


KERNELS = {
    "full_flow": BridgeKernel("full_flow", "full_flow_sm100.cu", "full_flow",
                              "the whole trip, one 128 x 128 tile (notebook 06)",
                              {"gluon": "gluon_full_flow", "cute": "cute_full_flow"}),
    "gemm_s1": BridgeKernel("gemm_s1", "gemm_sm100/s1_one_stage.cu", "gemm",
                            "the Blackwell GEMM ladder's step 1: one CTA per 128 x 256 tile, one stage (notebook 07)",
                            {"gluon": "gluon_gemm_s1", "cute": "cute_gemm_s1"}),
}


def bridge_kernel(name: str) -> BridgeKernel:
    """The bridge kernel `name` ('full_flow', 'gemm_s1'); KeyError naming the ones there are."""
    if name not in KERNELS:
        raise KeyError(f"no bridge kernel {name!r}; there are {sorted(KERNELS)}")
    return KERNELS[name]


def twin_stem(name: str, tool: str) -> str:
    """The module name (in bwlab/bridge/) of kernel `name` written with `tool`; KeyError naming what there is."""
    k = bridge_kernel(name)
    if tool not in TOOLS:
        raise KeyError(f"no tool {tool!r}; there are {sorted(TOOLS)}")
    if tool not in k.twins:
        raise KeyError(f"{name!r} is written with {sorted(k.twins)} only, not {tool!r}")
    return k.twins[tool]


def _source_path(name: str, tool: str = "gluon") -> Path:
    return HERE / f"{twin_stem(name, tool)}.py"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def tool_version(tool: str = "gluon") -> str | None:
    """The installed version of the tool's package when its front end imports, else None."""
    t = TOOLS[tool]
    try:
        importlib.import_module(t.front_end)
        from importlib.metadata import version
        return version(t.package)
    except Exception:   # not installed, or installed without what it needs to import
        return None


def practitioner_source(name: str, tool: str = "gluon", whole: bool = False) -> str:
    """The kernel `name` written with `tool`, as text (read, not imported: the tool need not be
    installed): everything from its first decorator to the compile helpers, or the whole file."""
    text = _source_path(name, tool).read_text()
    if whole:
        return text
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("@"))
    end = next(i for i, line in enumerate(lines) if line.startswith(SOURCE_END))
    while lines[end - 1].strip() == "":
        end -= 1
    return "\n".join(lines[start:end])


@dataclass(frozen=True)
class PtxRecord:
    """A twin kernel's PTX and where it came from."""
    kernel: str
    tool: str            # 'gluon', 'cute'
    ptx: str
    origin: str          # 'live' (compiled in this session) or 'recorded'
    package: str
    version: str
    date: str            # the day it was compiled (UTC)
    command: str         # how to make it again
    target: str
    source_sha256: str   # of the file it was compiled from

    def describe(self) -> str:
        how = "compiled here" if self.origin == "live" else "recorded"
        return (f"{self.kernel} in {TOOLS[self.tool].label}: PTX for {self.target}, {how} with {self.package} "
                f"{self.version} on {self.date}, no GPU involved; to make it again: {self.command}")


def _command(name: str, tool: str) -> str:
    t = TOOLS[tool]
    return f"pip install '{t.package}=={t.version}' && python -m bwlab.bridge record {name} --tool {tool}"


def _compile_gluon(module: str) -> str:
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    mod = importlib.import_module(f"{__package__}.{module}")
    sig, constexprs, attrs = mod.signature()
    src = GluonASTSource(getattr(mod, mod.KERNEL), sig, constexprs, attrs)
    with knobs.compilation.scope():
        knobs.compilation.disable_line_info = True   # no paths of this machine in the PTX
        compiled = triton.compile(src, target=GPUTarget(*GLUON_TARGET),
                                  options={"num_warps": mod.NUM_WARPS, "enable_fp_fusion": True})
    return compiled.asm["ptx"]


def _compile_cute(module: str) -> str:
    # CuTe DSL fixes its target architecture when it is imported: compile in a fresh interpreter told
    # to target sm_100a (no GPU is probed then).
    root = str(HERE.parent.parent)
    paths = [root] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = dict(os.environ, CUTE_DSL_ARCH="sm_100a", PYTHONPATH=os.pathsep.join(paths))
    code = f"import sys; from {__package__}.{module} import compile_ptx; sys.stdout.write(compile_ptx())"
    r = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True, text=True,
                       timeout=900)
    if r.returncode != 0 or ".target" not in r.stdout:
        raise RuntimeError(f"CuTe DSL could not compile {module}:\n{r.stderr[-3000:]}")
    return r.stdout


GLUON_TARGET = ("cuda", 100, 32)   # GPUTarget(backend, compute capability 10.0 -> sm_100a, warp size)
CALLS = {
    "gluon": (f"triton.compile(GluonASTSource(fn, *MODULE.signature()), target=GPUTarget{GLUON_TARGET}, "
              "options={'num_warps': 4, 'enable_fp_fusion': True}) with knobs.compilation.disable_line_info = True"),
    "cute": ("CUTE_DSL_ARCH=sm_100a: cute.compile(MODULE.launch, fake A, B, C, options='--keep-ptx "
             "--dump-dir=<a temporary folder>').__ptx__"),
}


def compile_live(name: str, tool: str = "gluon") -> PtxRecord:
    """Compile the kernel `name` written with `tool` for sm_100a here (needs the tool; no GPU, no driver)."""
    module = twin_stem(name, tool)
    version = tool_version(tool)
    t = TOOLS[tool]
    if version is None:
        raise ImportError(f"compiling the {t.label} kernels needs {t.package} (pip install 'bwlab[bridge]'); "
                          f"without it bwlab.bridge.recorded({name!r}, {tool!r}) gives the recorded PTX")
    try:
        ptx = _compile_gluon(module) if tool == "gluon" else _compile_cute(module)
    except Exception as err:
        if version == t.version:
            raise
        # Gluon and the CuTe DSL are young and rename their API between releases.
        raise RuntimeError(f"the {t.label} twin {name!r} is written for {t.package} {t.version}; {t.package} "
                           f"{version} is installed and could not compile it ({type(err).__name__}: {err}). "
                           f"pip install '{t.package}=={t.version}', or use bwlab.bridge.recorded({name!r}, "
                           f"{tool!r})") from err
    return PtxRecord(name, tool, ptx, "live", t.package, version,
                     datetime.datetime.now(datetime.timezone.utc).date().isoformat(), _command(name, tool),
                     "sm_100a", _sha256(_source_path(name, tool).read_text()))


def recorded(name: str, tool: str = "gluon") -> PtxRecord:
    """The recorded PTX of the kernel `name` written with `tool` (bwlab/bridge/recorded/<twin>.ptx, .json)."""
    stem = twin_stem(name, tool)
    ptx_path, meta_path = RECORDED / f"{stem}.ptx", RECORDED / f"{stem}.json"
    if not ptx_path.exists() or not meta_path.exists():
        raise FileNotFoundError(f"no recording of {name!r} in {TOOLS[tool].label} in {RECORDED}: make it with "
                                f"{_command(name, tool)}")
    meta = json.loads(meta_path.read_text())
    ptx = ptx_path.read_text()
    if _sha256(ptx) != meta["ptx_sha256"]:
        raise ValueError(f"{ptx_path.name} does not match the checksum its {meta_path.name} recorded: "
                         f"record it again ({_command(name, tool)})")
    return PtxRecord(name, tool, ptx, "recorded", meta["package"], meta["version"], meta["date"], meta["command"],
                     meta["target"], meta["source_sha256"])


def practitioner_ptx(name: str, tool: str = "gluon", live: bool | None = None) -> PtxRecord:
    """The twin's PTX: compiled here when `live` is True, recorded when False; None compiles when the
    tool is installed in the version of the recording and uses the recording otherwise."""
    if live is None:
        live = tool_version(tool) == TOOLS[tool].version
    return compile_live(name, tool) if live else recorded(name, tool)


def bwlab_ptx(name: str) -> str:
    """The PTX of bwlab's own kernel for the same job (NVRTC, sm_100a, no GPU)."""
    from ..compile import compile_cuda
    k = bridge_kernel(name)
    return compile_cuda(k.bwlab_source, arch="sm_100a").ptx_of(k.bwlab_kernel)


def compare(name: str, tool: str = "gluon", live: bool | None = None) -> PtxComparison:
    """bwlab's kernel and its twin written with `tool`, instruction class by instruction class (bwlab first)."""
    return compare_ptx(bwlab_ptx(name), practitioner_ptx(name, tool, live).ptx, names=("bwlab", tool))


def record(name: str, tool: str = "gluon", out_dir: Path | None = None) -> Path:
    """Compile `name` with `tool` live and write <twin>.ptx and <twin>.json (package, version, date, command,
    checksums) into bwlab/bridge/recorded/ (or `out_dir`)."""
    rec = compile_live(name, tool)
    stem = twin_stem(name, tool)
    out = Path(out_dir) if out_dir is not None else RECORDED
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stem}.ptx").write_text(rec.ptx)
    meta = {"kernel": name, "tool": tool, "package": rec.package, "version": rec.version, "date": rec.date,
            "target": rec.target, "command": rec.command, "gpu": "none (compiled without a GPU or driver)",
            "call": CALLS[tool].replace("MODULE", stem), "source_sha256": rec.source_sha256,
            "ptx_sha256": _sha256(rec.ptx)}
    (out / f"{stem}.json").write_text(json.dumps(meta, indent=1) + "\n")
    return out / f"{stem}.ptx"
