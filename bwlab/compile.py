"""Compile layer: `cuda_src/*.cu` -> PTX + cubin through NVRTC, and -> a CuPy RawModule on a GPU.

Every build goes through NVRTC from `cuda.bindings` (the pip wheel `nvidia-cuda-nvrtc-cu12` or the
CUDA 13 one), so the same call compiles for sm_90a or sm_100a on a machine with no GPU and no driver:
ptxas runs inside NVRTC and rejects invalid PTX, which is what the compile tests rely on.
On a GPU, `load_module` builds a cubin for the device's own architecture with the `a` suffix
(sm_90a, sm_100a: the arch-specific features TMA multicast, wgmma and tcgen05 need it) and loads it
into a `cupy.RawModule`.

Mirrors nothing in CUTLASS; the NVRTC user guide is the reference for the options.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .package_data import data_dir

__all__ = [
    "CUDA_SRC", "CompileError", "Compiled", "compile_cuda", "compile_text", "load_module", "load_text_module", "Module",
    "nvrtc_version", "ptx_excerpt", "sass", "sass_tool", "list_sources", "KEY_INSTRUCTIONS",
]

# The checkout's cuda_src/, or the copy a wheel carries (bwlab.package_data); BWLAB_CUDA_SRC overrides both.
CUDA_SRC = Path(os.environ["BWLAB_CUDA_SRC"]) if os.environ.get("BWLAB_CUDA_SRC") else data_dir("cuda_src")
CACHE_DIR = Path(os.environ.get("BWLAB_CACHE", Path.home() / ".cache" / "bwlab"))

# The instructions a reader of this suite cares about, in the order they appear in the data path.
KEY_INSTRUCTIONS = (
    "mbarrier", "cp.async.bulk", "cp.reduce.async.bulk", "prefetch", "fence", "elect",
    "barrier.cluster", "mapa", "wgmma", "tcgen05", "st.shared.v4", "ld.shared.v4", "%cluster",
    "%globaltimer",
)


_DIAG = re.compile(r"^(?P<file>[^\s()]+)\((?P<line>\d+)\): (?P<kind>error|warning|catastrophic error)"
                   r"(?: #\S+)?: (?P<msg>.*)$")


class CompileError(RuntimeError):
    """NVRTC rejected a source file. `.log` holds the compiler log (ptxas errors included);
    `.diagnostics` the (file, line, kind, message) of each error or warning the log names."""

    def __init__(self, name: str, arch: str, options: tuple[str, ...], log: str, source: str | None = None):
        self.name, self.arch, self.options, self.log = name, arch, options, log
        self.source = source
        self.diagnostics = [(m["file"], int(m["line"]), m["kind"], m["msg"].strip())
                            for m in map(_DIAG.match, log.splitlines()) if m]
        # What a learner sees names files relative to cuda_src/, never this machine's paths.
        shown = " ".join(_shown_path(o) for o in options)
        shown_log = _shown_path(log.strip())
        super().__init__(f"NVRTC failed to compile {name} for {arch}\n"
                         f"options: {shown}\n--- compiler log ---\n{shown_log}"
                         + self._excerpts())

    def _excerpts(self) -> str:
        """Each error in the compiled file itself (in a folder of cuda_src/ too), shown on its source line
        with the three lines before it."""
        if not self.source:
            return ""
        lines = self.source.splitlines()
        out = []
        for file, line, kind, msg in self.diagnostics:
            if kind == "warning" or Path(file).name != Path(self.name).name or not 1 <= line <= len(lines):
                continue
            lo = max(1, line - 3)      # a missing ';' is reported on the next statement, a line or two on
            out.append(f"\n{kind} on line {line}: {msg}")
            for n in range(lo, min(len(lines), line + 1) + 1):
                out.append(f"{'>' if n == line else ' '}{n:4d} | {lines[n - 1]}")
        return ("\n--- where ---" + "\n".join(out)) if out else ""


def _nvrtc():
    try:
        from cuda.bindings import nvrtc  # cuda-bindings >= 12.8
    except ImportError:  # pragma: no cover - very old cuda-python
        try:
            from cuda import nvrtc  # type: ignore
        except ImportError as e:
            raise ImportError(
                "bwlab compiles CUDA through NVRTC from the 'cuda-bindings' package; install bwlab "
                "with its CUDA extra: pip install -e '.[cuda12]' (or '.[cuda13]')") from e
    return nvrtc


def _check(result, what: str):
    err, *rest = result
    if int(err) != 0:
        raise RuntimeError(f"NVRTC call {what} failed: {err}")
    return rest[0] if len(rest) == 1 else rest


def nvrtc_version() -> tuple[int, int]:
    nvrtc = _nvrtc()
    major, minor = _check(nvrtc.nvrtcVersion(), "nvrtcVersion")
    return int(major), int(minor)


def list_sources() -> list[Path]:
    """Every `.cu` file under cuda_src/ (the compile tests build each on its own), except the emulator's corpus
    of ordinary kernels (cuda_src/corpus/: each chapter needs its own options, and tests/test_emu_corpus.py
    compiles it with them)."""
    return sorted(p for p in CUDA_SRC.rglob("*.cu") if "corpus" not in p.relative_to(CUDA_SRC).parts)


def _resolve(source: str | Path) -> Path:
    p = Path(source)
    if not p.suffix:
        p = p.with_suffix(".cu")
    if not p.is_absolute() and not p.exists():
        p = CUDA_SRC / p
    if not p.exists():
        if not CUDA_SRC.is_dir():
            raise FileNotFoundError(f"no CUDA source {source!r}: the CUDA source folder {CUDA_SRC} does not exist "
                                    "(set BWLAB_CUDA_SRC to a cuda_src folder, or reinstall bwlab)")
        raise FileNotFoundError(f"no CUDA source {source!r} (looked in {CUDA_SRC})")
    return p


def _headers_digest(root: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.cuh")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def header_dirs() -> dict:
    """The CUDA headers a kernel may include beyond cuda_src/, where CuPy's RawModule would find them too:
    {"cuda": the directory of cuda_fp16.h and cuda_bf16.h ($CUDA_PATH or $CUDA_HOME /include, /usr/local/cuda/
    include, or a CUDA pip wheel's site-packages/nvidia/<component>/include), "libcudacxx": CuPy's bundled
    libcudacxx (nv/target, cuda/std: cooperative_groups needs them)}; only those found. NVRTC carries none of
    them, so every build passes these with -I."""
    import sys
    out = {}
    cands = [h.parent for sp in sys.path for h in sorted(Path(sp or ".").glob("nvidia/*/include/cuda_fp16.h"))]
    cands += [Path(c) / "include" for c in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda")
              if c and (Path(c) / "include" / "cuda_fp16.h").exists()]

    def major(d):   # the CUDA major version of a header directory (cuda_runtime_api.h's CUDART_VERSION)
        m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", (d / "cuda_runtime_api.h").read_text(errors="replace")
                      if (d / "cuda_runtime_api.h").exists() else "")
        return int(m.group(1)) // 1000 if m else None
    # the headers of NVRTC's own CUDA major first (a CUDA 13 toolkit's cuda_fp8.hpp does not build with NVRTC 12)
    want = nvrtc_version()[0]
    pick = next((d for d in cands if major(d) == want), cands[0] if cands else None)
    if pick is not None:
        out["cuda"] = str(pick)
    try:
        import cupy
        cxx = Path(cupy.__file__).parent / "_core" / "include" / "cupy" / "_cccl" / "libcudacxx"
        if (cxx / "nv" / "target").exists():
            out["libcudacxx"] = str(cxx)
    except ImportError:
        pass
    return out


def _shown_path(text: str) -> str:
    """A compile option or log as a learner sees it: cuda_src/ and the CUDA header directories by name, never this
    machine's paths."""
    text = text.replace(str(CUDA_SRC), "cuda_src")
    for what, d in header_dirs().items():
        text = text.replace(d, f"<{what} headers>")
    return text


def _defines_options(defines: dict | None) -> tuple[str, ...]:
    opts = []
    for k, v in sorted((defines or {}).items()):
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(k)):
            raise ValueError(f"invalid macro name {k!r}")
        if isinstance(v, bool):
            v = int(v)
        opts.append(f"-D{k}" if v is None else f"-D{k}={v}")
    return tuple(opts)


@dataclass(frozen=True)
class Compiled:
    """The result of one NVRTC build: PTX text, cubin bytes, the log and lowered kernel names."""

    name: str
    arch: str
    ptx: str
    cubin: bytes
    log: str
    options: tuple[str, ...]
    lowered_names: dict = field(default_factory=dict)

    def kernels(self) -> list[str]:
        """Names of the `.entry` kernels in the PTX (mangled for templates)."""
        return re.findall(r"\.entry\s+([A-Za-z0-9_$]+)\s*\(", self.ptx)

    def ptx_of(self, kernel: str | None = None) -> str:
        """The PTX of one kernel (its `.entry` block); the first kernel when `kernel` is None."""
        names = self.kernels()
        if not names:
            return self.ptx
        kernel = self.lowered_names.get(kernel, kernel) if kernel else names[0]
        matches = [n for n in names if n == kernel] or [n for n in names if kernel in n]
        if not matches:
            raise KeyError(f"no kernel {kernel!r} in {self.name}; kernels: {names}")
        start = self.ptx.index(f".entry {matches[0]}")
        # Include the .visible/.weak prefix on the same line.
        start = self.ptx.rfind("\n", 0, start) + 1
        depth, i, opened = 0, start, False
        while i < len(self.ptx):
            c = self.ptx[i]
            if c == "{":
                depth += 1
                opened = True
            elif c == "}":
                depth -= 1
                if opened and depth == 0:
                    return self.ptx[start:i + 1]
            i += 1
        return self.ptx[start:]

    def ptx_excerpt(self, kernel: str | None = None, patterns=KEY_INSTRUCTIONS, first_only: bool = False,
                    width: int | None = None) -> str:
        return ptx_excerpt(self.ptx_of(kernel), patterns, first_only, width)

    def sass(self, kernel: str | None = None) -> str | None:
        return sass(self.cubin, kernel=self.lowered_names.get(kernel, kernel) if kernel else None)


def ptx_excerpt(ptx: str, patterns=KEY_INSTRUCTIONS, first_only: bool = False, width: int | None = None) -> str:
    """The lines of `ptx` that contain any of `patterns` (inline-asm markers dropped), numbered.
    `first_only`: only the first line of each instruction (the compiler unrolls loops, so the same
    instruction can repeat many times); `width`: cut each line there (long register lists), marked ' ...'."""
    out, seen = [], set()
    for n, line in enumerate(ptx.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("//"):
            continue
        if any(p in s for p in patterns):
            op = s.split()[0]
            if first_only and op in seen:
                continue
            seen.add(op)
            line = f"{n:5d}  {s}"
            out.append(line if width is None or len(line) <= width else line[:width] + " ...")
    return "\n".join(out)


_MEMO: dict[str, Compiled] = {}


def compile_cuda(source: str | Path, arch: str = "sm_90a", defines: dict | None = None,
                 name_expressions=(), extra_options=(), use_cache: bool = True) -> Compiled:
    """Compile one `cuda_src` file (or a path) with NVRTC for `arch` (e.g. 'sm_90a', 'sm_100a').

    No GPU or driver is needed. Raises CompileError with the full log when NVRTC or ptxas rejects
    the code. Results are cached in memory and on disk, keyed by the source, every header in
    cuda_src/, the options and the NVRTC version.
    """
    path = _resolve(source)
    return _compile(path.read_bytes(), path.name, path.parent, arch, defines, name_expressions,
                    extra_options, use_cache)


def compile_text(text: str, name: str = "kernel.cu", arch: str = "sm_90a", defines: dict | None = None,
                 name_expressions=(), extra_options=(), use_cache: bool = True) -> Compiled:
    """Compile CUDA source text (a teaching kernel a learner edited) as if it were `cuda_src/<name>`:
    it includes `ptx.cuh` and the rest exactly as the files there do. A CompileError shows each error
    on its line of `text`."""
    return _compile(text.encode(), name, CUDA_SRC, arch, defines, name_expressions, extra_options, use_cache)


def _compile(src: bytes, name: str, include_dir: Path, arch: str, defines, name_expressions,
             extra_options, use_cache: bool) -> Compiled:
    if not re.fullmatch(r"sm_\d+[af]?", arch):
        raise ValueError(f"arch must look like 'sm_90a' or 'sm_100a', got {arch!r}")
    options = (f"--gpu-architecture={arch}", "-std=c++17", f"-I{CUDA_SRC}", f"-I{include_dir}",
               *(f"-I{d}" for d in header_dirs().values()),
               "--diag-suppress=177,550") + _defines_options(defines) + tuple(extra_options)
    name_expressions = tuple(name_expressions)
    key = hashlib.sha256(b"\0".join([
        src, _headers_digest(CUDA_SRC).encode(), " ".join(options).encode(),
        "|".join(name_expressions).encode(), repr(nvrtc_version()).encode()])).hexdigest()[:32]
    if use_cache and key in _MEMO:
        return _MEMO[key]
    disk = CACHE_DIR / "nvrtc" / key
    if use_cache and (disk / "kernel.cubin").exists():
        import json
        meta = json.loads((disk / "meta.json").read_text())
        result = Compiled(name, arch, (disk / "kernel.ptx").read_text(),
                          (disk / "kernel.cubin").read_bytes(), meta["log"], options,
                          meta["lowered_names"])
        _MEMO[key] = result
        return result

    nvrtc = _nvrtc()
    prog = _check(nvrtc.nvrtcCreateProgram(src, name.encode(), 0, [], []), "nvrtcCreateProgram")
    try:
        for expr in name_expressions:
            _check(nvrtc.nvrtcAddNameExpression(prog, expr.encode()), "nvrtcAddNameExpression")
        opts = [o.encode() for o in options]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        size = _check(nvrtc.nvrtcGetProgramLogSize(prog), "nvrtcGetProgramLogSize")
        # NVRTC writes into the buffer we pass: it must be a fresh mutable bytearray. (b" " * 1 is
        # CPython's shared one-byte object; writing a NUL into it corrupts b" " process-wide.)
        buf = bytearray(size)
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log = bytes(buf).rstrip(b"\0 ").decode(errors="replace")
        if int(err) != 0:
            raise CompileError(name, arch, options, log, src.decode(errors="replace"))
        size = _check(nvrtc.nvrtcGetPTXSize(prog), "nvrtcGetPTXSize")
        buf = bytearray(size)
        nvrtc.nvrtcGetPTX(prog, buf)
        ptx = bytes(buf).rstrip(b"\0").decode()
        size = _check(nvrtc.nvrtcGetCUBINSize(prog), "nvrtcGetCUBINSize")
        cubin = bytearray(size)
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        lowered = {}
        for expr in name_expressions:
            low = _check(nvrtc.nvrtcGetLoweredName(prog, expr.encode()), "nvrtcGetLoweredName")
            lowered[expr] = low.decode() if isinstance(low, bytes) else str(low)
    finally:
        nvrtc.nvrtcDestroyProgram(prog)

    result = Compiled(name, arch, ptx, bytes(cubin), log, options, lowered)
    if use_cache:
        try:
            import json
            disk.mkdir(parents=True, exist_ok=True)
            # Each file written aside and renamed into place (another process, a parallel test worker,
            # may be reading or writing the same entry); kernel.cubin last: its presence means complete.
            meta = json.dumps({"log": log, "lowered_names": lowered}).encode()
            for fname, data in (("kernel.ptx", ptx.encode()), ("meta.json", meta), ("kernel.cubin", result.cubin)):
                tmp = disk / f"{fname}.{os.getpid()}"
                tmp.write_bytes(data)
                tmp.replace(disk / fname)
        except OSError:
            pass  # a read-only home is fine: we keep the in-memory copy
        _MEMO[key] = result
    return result


def _tool_dirs() -> list[Path]:
    """Where cuobjdump/nvdisasm may live: PATH, the CUDA toolkit, or the pip wheels
    nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm (installed by bwlab's dev extra)."""
    dirs = [Path("/usr/local/cuda/bin")]
    try:
        import nvidia  # namespace package of NVIDIA's pip wheels
        for root in getattr(nvidia, "__path__", []):
            dirs += sorted(Path(root).glob("cu*/bin")) + sorted(Path(root).glob("cuda_*/bin"))
    except ImportError:
        pass
    return dirs


def _find_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for d in _tool_dirs():
        if (d / name).exists():
            return str(d / name)
    return None


def sass_tool() -> str | None:
    """Path of cuobjdump (with nvdisasm beside it or on PATH), or of nvdisasm, or None."""
    if _find_tool("cuobjdump") and _find_tool("nvdisasm"):
        return _find_tool("cuobjdump")
    return _find_tool("nvdisasm")


def sass(cubin: bytes, kernel: str | None = None) -> str | None:
    """SASS of a cubin through cuobjdump/nvdisasm; None when neither tool is installed."""
    tool = sass_tool()
    if tool is None:
        return None
    env = dict(os.environ)
    dis = _find_tool("nvdisasm")
    if dis:
        env["PATH"] = str(Path(dis).parent) + os.pathsep + env.get("PATH", "")
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "k.cubin"
        f.write_bytes(cubin)
        if Path(tool).name == "cuobjdump":
            cmd = [tool, "-sass"] + (["-fun", kernel] if kernel else []) + [str(f)]
        else:
            cmd = [tool, "-c"] + (["-fun", kernel] if kernel else []) + [str(f)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    if r.returncode != 0:
        return f"({Path(tool).name} failed: {r.stderr.strip()})"
    return r.stdout


class Module:
    """A compiled cuda_src file loaded on the current GPU (wraps cupy.RawModule)."""

    def __init__(self, compiled: Compiled):
        import cupy as cp
        self.compiled = compiled
        d = CACHE_DIR / "cubin"
        d.mkdir(parents=True, exist_ok=True)
        f = d / (hashlib.sha256(compiled.cubin).hexdigest()[:32] + ".cubin")
        if not f.exists():
            tmp = f.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(compiled.cubin)
            tmp.replace(f)
        self.raw = cp.RawModule(path=str(f))
        self._kernels = {}

    def get_function(self, name: str):
        """A cupy RawKernel by source name or name expression (templates are looked up lowered)."""
        if name not in self._kernels:
            self._kernels[name] = self.raw.get_function(self.compiled.lowered_names.get(name, name))
        return self._kernels[name]

    def get_global(self, name: str):
        return self.raw.get_global(name)


_MODULES: dict[tuple, Module] = {}


def load_module(source: str | Path, defines: dict | None = None, name_expressions=(),
                arch: str | None = None) -> Module:
    """Compile `source` for this GPU (sm_XXa) and load it. Needs a GPU; cached per build."""
    from . import device
    if arch is None:
        arch = device.native_arch()
    compiled = compile_cuda(source, arch=arch, defines=defines, name_expressions=name_expressions)
    return _module_of(compiled, arch)


def load_text_module(text: str, name: str = "kernel.cu", defines: dict | None = None, name_expressions=(),
                     arch: str | None = None) -> Module:
    """`compile_text` for this GPU, loaded. Needs a GPU; cached per build."""
    from . import device
    if arch is None:
        arch = device.native_arch()
    return _module_of(compile_text(text, name, arch=arch, defines=defines, name_expressions=name_expressions), arch)


def _module_of(compiled: Compiled, arch: str) -> Module:
    key = (compiled.cubin.__hash__(), arch)
    if key not in _MODULES:
        _MODULES[key] = Module(compiled)
    return _MODULES[key]
