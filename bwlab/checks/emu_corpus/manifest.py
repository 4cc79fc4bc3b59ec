"""The corpus's manifest shape: its chapters (one .cu file each, compiled with its own options), the
arguments a kernel takes and the ways a run is compared, and `Kernel` with the registry `K` and `elem` add to."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...compile import CUDA_SRC  # the checkout's cuda_src/ or the wheel's copy

ROOT = Path(__file__).resolve().parents[3]
SOURCES = Path(CUDA_SRC) / "corpus"
RECORDINGS = ROOT / "tests" / "data" / "emu_corpus"  # a checkout's; a wheel carries no recordings


# ----------------------------------------------------------------------------------------------------
# Chapters: one .cu file each, compiled once with its own options.

CHAPTERS: dict[str, tuple[str, ...]] = {
    "integer": ("--device-int128",),
    "float": (),
    "float_ftz": ("-ftz=true",),
    "half": (),
    "conversion": (),
    "compare": (),
    "logic": (),
    "memory": (),
    "control": (),
    "warp": (),
    "atomics": (),
    "printf": (),
    "mma": (),
    "approx": (),
    "sched": (),
}


# Chapters that include cuda_fp16.h/cuda_bf16.h: they need a CUDA toolkit's include directory.
NEEDS_CUDA_HEADERS = frozenset({"half", "conversion", "atomics", "approx"})


def cuda_include_dirs() -> list[str]:
    """Where cuda_fp16.h and cuda_bf16.h are (NVRTC does not carry them): bwlab.compile.header_dirs, which every
    build passes already; raises naming where it looked when they are nowhere."""
    from ...compile import header_dirs
    if "cuda" in header_dirs():
        return [header_dirs()["cuda"]]
    raise FileNotFoundError("the corpus chapters " + ", ".join(sorted(NEEDS_CUDA_HEADERS)) + " include cuda_fp16.h/"
                            "cuda_bf16.h: set CUDA_PATH to a CUDA toolkit or pip install nvidia-cuda-runtime-cu12 "
                            "(looked in $CUDA_PATH, $CUDA_HOME, /usr/local/cuda, site-packages/nvidia/*/include)")


def compiled(chapter: str):
    """The chapter's NVRTC build for sm_90a (cached by bwlab.compile), shared by the GPU and the emulator."""
    from ...compile import compile_cuda
    if chapter not in CHAPTERS:
        raise KeyError(f"no corpus chapter {chapter!r} (chapters: {', '.join(CHAPTERS)})")
    opts = (tuple(f"-I{d}" for d in cuda_include_dirs()) if chapter in NEEDS_CUDA_HEADERS else ()) + CHAPTERS[chapter]
    return compile_cuda(SOURCES / f"{chapter}.cu", arch="sm_90a", extra_options=opts)


# ----------------------------------------------------------------------------------------------------
# Arguments and comparisons.

@dataclass(frozen=True)
class In:
    """An input array (copied to the device, not read back)."""
    data: np.ndarray


@dataclass(frozen=True)
class Out:
    """An output array of `n` elements, filled with the byte 0xA5 before the launch."""
    dtype: str
    n: int


@dataclass(frozen=True)
class InOut:
    """An array with initial contents that the kernel updates (atomics' targets); read back."""
    data: np.ndarray


@dataclass(frozen=True)
class Val:
    """A scalar argument (a NumPy scalar of the parameter's exact type)."""
    value: np.generic


@dataclass(frozen=True)
class Bytes:
    doc: str = "byte for byte"


@dataclass(frozen=True)
class Within:
    """|emulator - GPU| <= max(ulp * ulp(GPU), abs, rel * |GPU|) per element; NaN/inf/zero sign exact."""
    ulp: float = 0
    abs: float = 0.0
    rel: float = 0.0
    doc: str = ""


@dataclass(frozen=True)
class Printf:
    doc: str = "the same printf lines per warp; any order across warps"


@dataclass(frozen=True)
class Sorted:
    outputs: tuple = (0,)
    doc: str = "the listed outputs as multisets (sorted), the others byte for byte"


@dataclass(frozen=True)
class Check:
    fn: object
    doc: str


@dataclass(frozen=True)
class AnyOf:
    outcomes: tuple
    seeds: tuple = (0, 1, 2, 3, 4, 5, 6, 7)
    gpu_runs: int = 20
    doc: str = "the first element of the first output is one of the outcomes, under every seed"


@dataclass(frozen=True)
class Kernel:
    name: str
    chapter: str
    args: tuple
    grid: tuple = (1, 1, 1)
    block: tuple = (32, 1, 1)
    shared: int = 0
    cmp: object = field(default_factory=Bytes)
    max_steps: int = 150_000
    note: str = ""

    def outputs(self) -> list:
        return [a for a in self.args if isinstance(a, (Out, InOut))]

    def inputs_digest(self) -> str:
        h = hashlib.sha256(f"{self.grid}{self.block}{self.shared}".encode())
        for a in self.args:
            if isinstance(a, (In, InOut)):
                h.update(a.data.dtype.str.encode() + np.ascontiguousarray(a.data).tobytes())
            elif isinstance(a, Out):
                h.update(f"out{a.dtype}{a.n}".encode())
            else:
                h.update(np.asarray(a.value).tobytes())
        return h.hexdigest()[:16]


KERNELS: list[Kernel] = []


def K(name, chapter, args, **kw) -> Kernel:
    k = Kernel(name, chapter, tuple(args), **kw)
    if any(x.name == name for x in KERNELS):
        raise ValueError(f"corpus kernel {name!r} listed twice")
    KERNELS.append(k)
    return k


def elem(name, chapter, ins, out_dtype, per, block=64, **kw) -> Kernel:
    """The common shape: f(inputs..., out, int n) with `per` outputs per element."""
    n = len(ins[0])
    return K(name, chapter, [In(np.ascontiguousarray(x)) for x in ins] + [Out(out_dtype, per * n), Val(np.int32(n))],
             block=(block, 1, 1), **kw)

