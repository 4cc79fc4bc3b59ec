"""bwlab's kernels and their Gluon twins: sources, PTX (compiled here or recorded), the comparison.

    from bwlab import bridge
    print(bridge.practitioner_source("full_flow"))       # the Gluon kernel
    rec = bridge.practitioner_ptx("full_flow")           # compiled live when triton is installed,
    print(rec.describe())                                # else the recording (tool, version, date)
    print(bridge.compare("full_flow"))                   # instruction classes and descriptors, side by side

Gluon compiles for sm_100a without a GPU: `triton.compile(GluonASTSource(fn, signature, constexprs,
attrs), target=GPUTarget("cuda", 100, 32))` runs the whole pipeline down to PTX (and ptxas to a cubin)
with no driver. bwlab's side is its own .cu compiled by NVRTC for sm_100a (`bwlab.compile`), also
without a GPU. The recordings in `bwlab/bridge/recorded/` are what `python -m bwlab.bridge record`
wrote with the triton version they name; they serve where triton is not installed.
"""
from __future__ import annotations

import datetime
import hashlib
import importlib
import json
from dataclasses import dataclass
from pathlib import Path

from .ptx_compare import PtxComparison, compare_ptx

__all__ = ["BridgeKernel", "KERNELS", "PtxRecord", "RECORDED", "TOOL", "TOOL_VERSION", "tool_version",
           "practitioner_source", "practitioner_ptx", "compile_live", "recorded", "bwlab_ptx", "compare",
           "record"]

HERE = Path(__file__).resolve().parent
RECORDED = HERE / "recorded"
TOOL = "triton"          # the PyPI package that carries Gluon (triton.experimental.gluon)
TOOL_VERSION = "3.9.0"   # the version the recordings were made with (pyproject's `bridge` extra pins it)
TARGET = ("cuda", 100, 32)   # GPUTarget(backend, compute capability 10.0 -> sm_100a, warp size)


@dataclass(frozen=True)
class BridgeKernel:
    name: str            # the key: 'full_flow', 'gemm_s1'
    module: str          # the Gluon file in bwlab/bridge/
    bwlab_source: str    # bwlab's kernel under cuda_src/
    bwlab_kernel: str    # its entry point
    what: str


KERNELS = {
    "full_flow": BridgeKernel("full_flow", "gluon_full_flow", "full_flow_sm100.cu", "full_flow",
                              "the whole trip, one 128 x 128 tile (notebook 06)"),
    "gemm_s1": BridgeKernel("gemm_s1", "gluon_gemm_s1", "gemm_sm100/s1_one_stage.cu", "gemm",
                            "the Blackwell GEMM ladder's step 1: one CTA per 128 x 256 tile, one stage (notebook 07)"),
}


def _kernel(name: str) -> BridgeKernel:
    if name not in KERNELS:
        raise KeyError(f"no bridge kernel {name!r}; there are {sorted(KERNELS)}")
    return KERNELS[name]


def _source_path(name: str) -> Path:
    return HERE / f"{_kernel(name).module}.py"


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def tool_version() -> str | None:
    """The installed triton's version when its Gluon front end imports, else None."""
    try:
        import triton
        import triton.experimental.gluon  # noqa: F401
    except ImportError:
        return None
    return triton.__version__


def practitioner_source(name: str, whole: bool = False) -> str:
    """The Gluon kernel `name` as text (read, not imported: no triton needed): its @gluon.jit function,
    or the whole file with `whole=True`."""
    text = _source_path(name).read_text()
    if whole:
        return text
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("@gluon.jit"))
    end = next(i for i in range(start + 2, len(lines)) if lines[i].startswith(("def ", "@", "class ")))
    while lines[end - 1].strip() == "":
        end -= 1
    return "\n".join(lines[start:end])


@dataclass(frozen=True)
class PtxRecord:
    """A Gluon kernel's PTX and where it came from."""
    kernel: str
    ptx: str
    origin: str          # 'live' (compiled in this process) or 'recorded'
    tool: str
    version: str
    date: str            # the day it was compiled (UTC)
    command: str         # how to make it again
    target: str
    source_sha256: str   # of the Gluon file it was compiled from

    def describe(self) -> str:
        how = "compiled here" if self.origin == "live" else "recorded"
        return (f"{self.kernel}: Gluon PTX for {self.target}, {how} with {self.tool} {self.version} on "
                f"{self.date}, no GPU involved; to make it again: {self.command}")


def _command(name: str) -> str:
    return f"pip install '{TOOL}=={TOOL_VERSION}' && python -m bwlab.bridge record {name}"


def compile_live(name: str) -> PtxRecord:
    """Compile the Gluon kernel `name` for sm_100a here (needs triton; no GPU, no driver). Line info is
    left out so that the PTX holds no paths of this machine."""
    version = tool_version()
    if version is None:
        raise ImportError(f"compiling the Gluon kernels needs {TOOL} (pip install 'bwlab[bridge]'); without it "
                          "bwlab.bridge.recorded(name) gives the recorded PTX")
    import triton
    from triton import knobs
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    k = _kernel(name)
    mod = importlib.import_module(f"{__package__}.{k.module}")
    sig, constexprs, attrs = mod.signature()
    src = GluonASTSource(getattr(mod, mod.KERNEL), sig, constexprs, attrs)
    with knobs.compilation.scope():
        knobs.compilation.disable_line_info = True
        compiled = triton.compile(src, target=GPUTarget(*TARGET),
                                  options={"num_warps": mod.NUM_WARPS, "enable_fp_fusion": True})
    return PtxRecord(name, compiled.asm["ptx"], "live", TOOL, version,
                     datetime.datetime.now(datetime.timezone.utc).date().isoformat(), _command(name),
                     "sm_100a", _sha256(_source_path(name).read_text()))


def recorded(name: str) -> PtxRecord:
    """The recorded PTX of the Gluon kernel `name` (bwlab/bridge/recorded/NAME.ptx and NAME.json)."""
    _kernel(name)
    ptx_path, meta_path = RECORDED / f"{name}.ptx", RECORDED / f"{name}.json"
    if not ptx_path.exists() or not meta_path.exists():
        raise FileNotFoundError(f"no recording of {name!r} in {RECORDED}: make it with {_command(name)}")
    meta = json.loads(meta_path.read_text())
    ptx = ptx_path.read_text()
    if _sha256(ptx) != meta["ptx_sha256"]:
        raise ValueError(f"{ptx_path.name} does not match the checksum its {meta_path.name} recorded: "
                         f"record it again ({_command(name)})")
    return PtxRecord(name, ptx, "recorded", meta["tool"], meta["version"], meta["date"], meta["command"],
                     meta["target"], meta["source_sha256"])


def practitioner_ptx(name: str, live: bool | None = None) -> PtxRecord:
    """The Gluon kernel's PTX: compiled here when `live` is True, recorded when False; None compiles
    when triton (the recorded version) is installed and uses the recording otherwise."""
    if live is None:
        live = tool_version() == TOOL_VERSION
    return compile_live(name) if live else recorded(name)


def bwlab_ptx(name: str) -> str:
    """The PTX of bwlab's own kernel for the same job (NVRTC, sm_100a, no GPU)."""
    from ..compile import compile_cuda
    k = _kernel(name)
    return compile_cuda(k.bwlab_source, arch="sm_100a").ptx_of(k.bwlab_kernel)


def compare(name: str, live: bool | None = None) -> PtxComparison:
    """bwlab's kernel and its Gluon twin, instruction class by instruction class (bwlab first)."""
    return compare_ptx(bwlab_ptx(name), practitioner_ptx(name, live).ptx, names=("bwlab", "gluon"))


def record(name: str, out_dir: Path | None = None) -> Path:
    """Compile `name` live and write NAME.ptx and NAME.json (tool, version, date, command, checksums)."""
    rec = compile_live(name)
    out = Path(out_dir) if out_dir is not None else RECORDED
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.ptx").write_text(rec.ptx)
    meta = {"kernel": name, "tool": rec.tool, "version": rec.version, "date": rec.date, "target": rec.target,
            "command": rec.command, "gpu": "none (compiled without a GPU or driver)",
            "call": f"triton.compile(GluonASTSource(fn, *{_kernel(name).module}.signature()), "
                    f"target=GPUTarget{TARGET}, options={{'num_warps': 4, 'enable_fp_fusion': True}}) "
                    "with knobs.compilation.disable_line_info = True",
            "source_sha256": rec.source_sha256, "ptx_sha256": _sha256(rec.ptx)}
    (out / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    return out / f"{name}.ptx"
