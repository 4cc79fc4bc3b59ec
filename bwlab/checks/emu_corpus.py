"""A corpus of small, ordinary CUDA kernels recorded on a GPU, against which `bwlab.emu` is compared.

    python -m bwlab.validate emu-corpus [--out-dir DIR] [--only NAME ...]     (on a GPU: records)
    python -m bwlab.validate emu-corpus --compare [--against DIR] [--out FILE] (anywhere: the emulator)

The kernels live in `cuda_src/corpus/<chapter>.cu`, written as an outside author writes CUDA (the
math API, cuda_fp16.h/cuda_bf16.h, warp intrinsics, atomics, printf, a little inline PTX where
ordinary code reaches an instruction only that way). This module is their manifest: for each kernel
its chapter, launch shape, inputs (seeded NumPy plus explicit edge values: ties, subnormals, NaN
payloads, signed zeros, infinities, INT_MIN/LLONG_MIN, shift counts past the width, diverged
warps), its outputs, and how a run is compared with the recording:

* `Bytes`     - every output byte for byte;
* `Within`    - an `.approx` result: within the bound the CUDA Programming Guide / PTX ISA documents
                for the GPU's instruction (the emulator may compute the exact value), special values
                (NaN, infinities, zero sign) exactly;
* `Printf`    - the same printf lines per warp (lines start with "w<warp> "), in any order across warps;
* `Sorted`    - outputs that are a per-thread view of an order-independent multiset (tickets,
                inc/dec wrap sequences) compared after sorting, the rest byte for byte;
* `Check`     - results that depend on the order of atomics: a function reconstructs an order from
                the threads' old values and checks it is one the hardware allows;
* `AnyOf`     - a racy kernel: under each of several scheduler seeds, the result is one of the listed
                outcomes (the GPU's own runs are checked against the same list).

Inputs are regenerated from this file; the recording stores a hash of them, so an edited input is
noticed ("re-record"). `KNOWN_DIFFERENCES` is the single list of kernels the emulator does not yet
reproduce, each with its reason; `tests/test_emu_corpus.py` checks it strictly, both ways.

Recordings: `tests/data/emu_corpus/<chapter>.npz` and `header.json` (GPU, driver, CUDA, date).
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import hashlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["KERNELS", "BY_NAME", "CHAPTERS", "KNOWN_DIFFERENCES", "Kernel", "In", "Out", "InOut", "Val",
           "Bytes", "Within", "Printf", "Sorted", "Check", "AnyOf", "RECORDINGS", "run_kernel", "compare",
           "load_recording", "emulator_result", "validate_main", "cuda_include_dirs"]

from ..compile import CUDA_SRC  # noqa: E402 - the checkout's cuda_src/ or the wheel's copy

ROOT = Path(__file__).resolve().parents[2]
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
    """Where cuda_fp16.h and cuda_bf16.h are (NVRTC does not carry them): $CUDA_PATH/$CUDA_HOME, then
    /usr/local/cuda. CuPy adds the same directory when it compiles."""
    cands = [os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"]
    for c in cands:
        if c and (Path(c) / "include" / "cuda_fp16.h").exists():
            return [str(Path(c) / "include")]
    for sp in sys.path:  # the CUDA pip wheels: site-packages/nvidia/<component>/include
        for h in sorted(Path(sp or ".").glob("nvidia/*/include/cuda_fp16.h")):
            return [str(h.parent)]
    raise FileNotFoundError("the corpus chapters " + ", ".join(sorted(NEEDS_CUDA_HEADERS)) + " include cuda_fp16.h/"
                            "cuda_bf16.h: set CUDA_PATH to a CUDA toolkit or pip install nvidia-cuda-runtime-cu12 "
                            "(looked in $CUDA_PATH, $CUDA_HOME, /usr/local/cuda, site-packages/nvidia/*/include)")


def compiled(chapter: str):
    """The chapter's NVRTC build for sm_90a (cached by bwlab.compile), shared by the GPU and the emulator."""
    from ..compile import compile_cuda
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


# ----------------------------------------------------------------------------------------------------
# Inputs: explicit edge values, then seeded random ones.

def rng_for(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


def f32(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def f64(bits) -> np.ndarray:
    return np.asarray(bits, dtype=np.uint64).view(np.float64)


F32_EDGES = f32([
    0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3FC00000, 0x40200000, 0xC0200000, 0x3F000000,
    0xBF000000, 0x3DCCCCCD, 0x00000001, 0x80000001, 0x007FFFFF, 0x00800000, 0x00400000, 0x807FFFFF,
    0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7FC12345, 0xFFC00001, 0x7F800001,
    0x4B000001, 0x4B800000, 0x3EAAAAAB, 0x4EFFFFFF, 0x4F000000, 0xCF000000, 0xCF000001, 0x5F000000,
    0x477FE000, 0x477FF000, 0x33800000, 0x33000000, 0x387FC000, 0x43700000, 0x43E00000, 0x43E80000,
    0x47600000, 0x3F7FFFFF, 0x3F800001, 0xBFC00000, 0x40600000, 0x4F800000, 0xDF000000, 0x3F400000,
    0x40C00000, 0xC0400000, 0x4B3FFFFF, 0x3EFFFFFF, 0x40490FDB, 0xC0490FDB, 0x7F000000, 0x01000000,
])
F32_SMALL = f32([0x00000000, 0x80000000, 0x3F800000, 0xBFC00000, 0x40200000, 0x00000001, 0x807FFFFF,
                 0x00800000, 0x7F7FFFFF, 0x7F800000, 0xFF800000, 0x7FC12345, 0xFFC00001, 0x3EAAAAAB,
                 0x4B800000, 0xCF000000])
F64_EDGES = f64([
    0x0000000000000000, 0x8000000000000000, 0x3FF0000000000000, 0xBFF0000000000000, 0x3FF8000000000000,
    0x4004000000000000, 0xC004000000000000, 0x3FE0000000000000, 0x0000000000000001, 0x800FFFFFFFFFFFFF,
    0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000,
    0x7FF8000000012345, 0xFFF8000000000001, 0x7FF0000000000001, 0x3FD5555555555555, 0x4330000000000001,
    0x43E0000000000000, 0xC3E0000000000000, 0x41DFFFFFFFC00000, 0x41E0000000000000, 0x36A0000000000000,
    0x36A8000000000000, 0x3E70000000000000, 0x47EFFFFFE0000000, 0x47EFFFFFF0000000, 0x380FFFFFFFFFFFFF,
    0x3810000000000000, 0x409FFE0000000000, 0x40EFFE0000000000, 0x40EFFF0000000000, 0x3E78000000000000,
    0x4040000000000000, 0xC0F86A0000000000, 0x400921FB54442D18,
])
F64_SMALL = f64([0x0000000000000000, 0x8000000000000000, 0x3FF0000000000000, 0xBFF8000000000000,
                 0x0000000000000001, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x7FF0000000000000,
                 0xFFF0000000000000, 0x7FF8000000012345, 0x3FD5555555555555, 0xC3E0000000000000])
I32_EDGES = np.array([0, 1, -1, 2, -2, 3, -3, 5, 7, -7, 10, 255, 256, -256, 65535, 65536, 0x7FFFFFFF,
                      -0x80000000, -0x7FFFFFFF, 0x55555555, -0x55555556, 0x12345678, 1 << 30, 1000000007,
                      0x00FFFFFF, -0x01000000, 0x00800000, 0x7FFF, -0x8000, 46341], dtype=np.int64).astype(np.int32)
I32_SMALL = np.array([0, 1, -1, 3, -3, 7, 0x7FFFFFFF, -0x80000000, 0x55555555, 65536, -65536, 0x00FFFFFF],
                     dtype=np.int64).astype(np.int32)
I64_EDGES = np.array([0, 1, -1, 2, -2, 3, -3, 7, 10, 0x7FFFFFFF, -0x80000000, 0xFFFFFFFF, 1 << 32,
                      (1 << 63) - 1, -(1 << 63), -(1 << 63) + 1, 0x5555555555555555, 1 << 53, (1 << 53) + 1,
                      -(1 << 53) - 1, 1000000007, 0x123456789ABCDEF, (1 << 62), -(1 << 62), 0xFFFFFFFFFF,
                      (1 << 24) + 1, 9007199254740993, -0x0123456789ABCDE], dtype=object)
I64_EDGES = np.array([int(x) for x in I64_EDGES], dtype=np.int64)
I64_SMALL = np.array([0, 1, -1, 3, -3, (1 << 63) - 1, -(1 << 63), 0x7FFFFFFF, -0x80000000, 1 << 32,
                      0x5555555555555555, 10], dtype=np.int64)


def rand_f32(rng, n, spread=6.0) -> np.ndarray:
    x = rng.standard_normal(n) * 10.0 ** rng.uniform(-spread, spread, n)
    return x.astype(np.float32)


def rand_bits32(rng, n) -> np.ndarray:
    return rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)


def unary_f32(name, n=128, spread=6.0) -> np.ndarray:
    r = rng_for(name)
    x = np.concatenate([F32_EDGES, rand_f32(r, max(n - len(F32_EDGES) - 16, 8), spread),
                        rand_bits32(r, 16).view(np.float32)])
    return x[:n].astype(np.float32)


def pairs(small: np.ndarray, extra_a: np.ndarray, extra_b: np.ndarray):
    a, b = np.meshgrid(small, small, indexing="ij")
    return (np.concatenate([a.ravel(), extra_a]).astype(small.dtype),
            np.concatenate([b.ravel(), extra_b]).astype(small.dtype))


def pairs_f32(name, extra=64, spread=6.0):
    r = rng_for(name)
    return pairs(F32_SMALL, rand_f32(r, extra, spread), rand_f32(r, extra, spread))


def pairs_f64(name, extra=48):
    r = rng_for(name)
    x = lambda: r.standard_normal(extra) * 10.0 ** r.uniform(-30, 30, extra)  # noqa: E731
    return pairs(F64_SMALL, x(), x())


def fma_triples_f32(name, n_rand=96):
    """Random triples, exact subnormal ties (a*b = (2k+1) 2^-150), near-cancellation and specials."""
    r = rng_for(name)
    k = np.arange(1, 33)
    ta = ((2 * k + 1).astype(np.float64) * 2.0 ** -75).astype(np.float32)
    tb = np.full(32, 2.0 ** -75, np.float32)
    tc = (r.integers(-3, 4, 32) * 2.0 ** -149).astype(np.float32)
    ca = rand_f32(r, 32, 2)
    cb = (np.float32(1) / ca).astype(np.float32)
    cc = np.full(32, -1.0, np.float32)
    sa, sb = F32_SMALL, F32_SMALL[::-1].copy()
    sc = np.roll(F32_SMALL, 5)
    ra, rb, rc = rand_f32(r, n_rand), rand_f32(r, n_rand), rand_f32(r, n_rand)
    return (np.concatenate([ta, ca, sa, ra]), np.concatenate([tb, cb, sb, rb]), np.concatenate([tc, cc, sc, rc]))


def pairs_i32(name, extra=64):
    r = rng_for(name)
    return pairs(I32_SMALL, r.integers(-(1 << 31), 1 << 31, extra).astype(np.int32),
                 r.integers(-(1 << 31), 1 << 31, extra).astype(np.int32))


def pairs_i64(name, extra=48):
    r = rng_for(name)
    return pairs(I64_SMALL, r.integers(-(1 << 63), (1 << 63) - 1, extra, dtype=np.int64),
                 r.integers(-(1 << 63), (1 << 63) - 1, extra, dtype=np.int64))


def unary_i32(name, n=128):
    r = rng_for(name)
    return np.concatenate([I32_EDGES, r.integers(-(1 << 31), 1 << 31, n - len(I32_EDGES))]).astype(np.int32)


def unary_i64(name, n=96):
    r = rng_for(name)
    return np.concatenate([I64_EDGES, r.integers(-(1 << 63), (1 << 63) - 1, n - len(I64_EDGES), dtype=np.int64)])


H16_EDGES = np.array([0x0000, 0x8000, 0x3C00, 0xBC00, 0x3E00, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF,
                      0x7C00, 0xFC00, 0x7E00, 0x7E55, 0xFE01, 0x7C01, 0x3555, 0x4200, 0x5BFF, 0x3BFF, 0x3C01,
                      0x4900, 0xC900, 0x6800, 0x0200], dtype=np.uint16)
BF16_EDGES = np.array([0x0000, 0x8000, 0x3F80, 0xBF80, 0x3FC0, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F,
                       0x7F80, 0xFF80, 0x7FC0, 0x7FC5, 0xFFC1, 0x7F81, 0x3EAB, 0x4040, 0x4B00, 0x3F7F, 0x3F81,
                       0x4780, 0xC780, 0x5F00, 0x0040], dtype=np.uint16)


def half_bits(name, edges, n=128, kind="f16"):
    r = rng_for(name)
    if kind == "f16":
        rnd = (r.standard_normal(n) * 10.0 ** r.uniform(-3, 3, n)).astype(np.float16).view(np.uint16)
    else:
        rnd = (np.asarray(r.standard_normal(n) * 10.0 ** r.uniform(-20, 20, n), np.float32).view(np.uint32)
               >> 16).astype(np.uint16)
    return np.concatenate([edges, rnd])[:n]


def half_pairs(name, edges, extra=64, kind="f16"):
    small = edges[::2].copy()
    r = rng_for(name)
    xa, xb = half_bits(name + "a", edges[:0], extra, kind), half_bits(name + "b", edges[:0], extra, kind)
    del r
    return pairs(small, xa, xb)


# ----------------------------------------------------------------------------------------------------
# The kernels, chapter by chapter.

def _integer():
    c = "integer"
    a, b = pairs_i32("int32")
    elem("int_add_sub_s32", c, [a, b], "i4", 2)
    elem("int_mul_s32", c, [a, b], "i4", 3)
    elem("int_mul_wide", c, [a, b], "i8", 2)
    r = rng_for("mad")
    elem("int_mad_s32", c, [a, b, r.integers(-(1 << 31), 1 << 31, len(a)).astype(np.int32)], "i4", 1)
    elem("int_div_rem_s32", c, [a, b], "i4", 2)
    elem("int_div_rem_u32", c, [a.view(np.uint32), b.view(np.uint32)], "u4", 2)
    elem("int_div_edge_asm", c, [a, b], "i4", 4, note="division by zero and INT_MIN/-1: the machine's value")
    x, y = pairs_i64("int64")
    elem("int_div_rem_s64", c, [x, y], "i8", 2)
    elem("int_div_rem_u64", c, [x.view(np.uint64), y.view(np.uint64)], "u8", 2)
    elem("int_div_const", c, [unary_i64("divc")], "i8", 6)
    elem("int_mul_s64", c, [x, y], "i8", 4)
    elem("int_add_sub_s64", c, [x, y], "i8", 3)
    elem("int_mul24", c, [a, b], "i4", 4)
    elem("int_sad", c, [a, b, np.roll(a, 3)], "u4", 2)
    u = unary_i32("bits").view(np.uint32)
    elem("int_bitcount32", c, [u], "i4", 4)
    u64 = unary_i64("bits64").view(np.uint64)
    elem("int_bitcount64", c, [u64], "i8", 4)
    elem("int_bfind", c, [u64], "u4", 6)
    r = rng_for("bfe")
    pl = np.array([p | (ln << 8) for p in (0, 1, 7, 16, 24, 31, 32, 33, 63, 64, 200, 255)
                   for ln in (0, 1, 5, 8, 16, 31, 32, 33, 64, 255)], np.uint32)
    v32 = np.resize(unary_i32("bfe32"), len(pl)).view(np.uint32)
    v64 = np.resize(unary_i64("bfe64"), len(pl)).view(np.uint64)
    elem("int_bfe32", c, [v32, pl], "u4", 2)
    elem("int_bfe64", c, [v64, pl], "u8", 2)
    elem("int_bfi32", c, [v32, np.roll(v32, 7), pl], "u4", 1)
    elem("int_bfi64", c, [v64, np.roll(v64, 7), pl], "u8", 1)
    elem("int_bitfield_c", c, [u], "u4", 3)
    sel = np.concatenate([np.array([0x3210, 0x7654, 0x0123, 0x4567, 0x1111, 0x7777, 0x5140, 0x8888, 0x9ABC,
                                    0xFFFF, 0xF0E1, 0x12345678, 0x0000, 0x6420, 0x7531, 0xBA98], np.uint32),
                          r.integers(0, 1 << 32, 48, dtype=np.uint64).astype(np.uint32)])
    pa = np.resize(u, len(sel)); pb = np.resize(u[::-1], len(sel))
    elem("int_byte_perm", c, [pa, pb, sel], "u4", 1)
    modes = np.resize(np.arange(4, dtype=np.uint32), len(sel)) | (sel & 0xFFFC)
    elem("int_prmt_modes", c, [pa, pb, modes], "u4", 6)
    elem("int_dp4a_dp2a", c, [a, b, np.roll(a, 1)], "i4", 6)
    q = unary_i64("int128", 96).view(np.uint64)
    K("int_int128", c, [In(q), In(np.roll(q, 11)), Out("u8", 8 * 48), Val(np.int32(48))], block=(64, 1, 1))
    aw = np.resize(np.concatenate([np.array([0xFFFFFFFF] * 8 + [0, 1, 0x80000000, 0x7FFFFFFF], np.uint32),
                                   rand_bits32(rng_for("addc"), 116)]), 128)
    K("int_addc_chain", c, [In(aw), In(np.roll(aw, 3) ^ np.uint32(0x1)), Out("u4", 320), Val(np.int32(32))],
      block=(32, 1, 1))
    elem("int_add_sat", c, [a, b], "i4", 2)
    elem("int_simd_video", c, [a.view(np.uint32), b.view(np.uint32)], "u4", 12)
    sh = np.resize(np.array([0, 1, 5, 31, 32, 33, 63, 64, 65, 100, 255, 0xFFFFFFFF, 0x80000000], np.uint32), len(a))
    elem("int_funnel", c, [a.view(np.uint32), b.view(np.uint32), sh], "u4", 4)
    elem("int_shift_wide", c, [np.resize(u64, len(sh)), sh], "u8", 6)
    elem("int_min_max_abs", c, [a, b], "i4", 6)
    elem("int_min_max_s64", c, [x, y], "i8", 5)
    elem("int_hadd_u32", c, [a.view(np.uint32), b.view(np.uint32)], "u4", 2)
    elem("int_collatz", c, [np.arange(1, 65, dtype=np.uint32) * 7919], "u4", 1, block=32)
    elem("int_hash_mix", c, [u], "u4", 1)


def _float():
    c = "float"
    a, b = pairs_f32("f32")
    elem("flt_add_modes", c, [a, b], "f4", 4)
    elem("flt_sub_modes", c, [a, b], "f4", 4)
    elem("flt_mul_modes", c, [a, b], "f4", 4)
    fa, fb, fc = fma_triples_f32("fma")
    elem("flt_fma_modes", c, [fa, fb, fc], "f4", 5)
    elem("flt_fma_contract", c, [fa, fb, fc], "f4", 2)
    elem("flt_div", c, [a, b], "f4", 6)
    u = unary_f32("f32u")
    elem("flt_rcp_modes", c, [u], "f4", 4)
    elem("flt_sqrt", c, [np.abs(u) * np.where(np.arange(len(u)) % 9 == 0, -1, 1).astype(np.float32)], "f4", 5)
    elem("flt_min_max", c, [a, b], "f4", 4)
    elem("flt_min_max_nan_asm", c, [a, b], "f4", 4)
    elem("flt_sign_ops", c, [a, b], "f4", 4)
    elem("flt_nan_results", c, [a, b], "f4", 6)
    elem("flt_fmod_rem", c, [a, b], "f4", 3)
    ex = np.resize(np.array([0, 1, -1, 23, -126, -149, -150, 127, 128, 254, -300, 300], np.int32), len(u))
    elem("flt_frexp_ldexp", c, [u, ex], "f4", 5)
    elem("flt_nextafter_modf", c, [a, b], "f4", 3)
    K("flt_sum_in_order", c, [In(rand_f32(rng_for("sum"), 256, 4)), Out("f4", 32), Val(np.int32(256))])
    elem("flt_poly_horner", c, [rand_f32(rng_for("horner"), 128, 1)], "f4", 1)
    d, e = pairs_f64("f64")
    elem("dbl_add_mul_modes", c, [d, e], "f8", 8)
    r = rng_for("dfma")
    elem("dbl_fma_modes", c, [d, e, r.standard_normal(len(d)) * 10.0 ** r.uniform(-30, 30, len(d))], "f8", 5)
    elem("dbl_div_sqrt", c, [d, e], "f8", 8)
    elem("dbl_min_max_sign", c, [d, e], "f8", 6)
    elem("dbl_nan_results", c, [d, e], "f8", 4)
    elem("dbl_fmod_trunc", c, [d, e], "f8", 3)
    elem("mixed_float_double", c, [u, np.resize(F64_EDGES, len(u))], "f8", 3)
    elem("flt_zero_sign_modes", c, [a, b], "f4", 8)


def _float_ftz():
    c = "float_ftz"
    fa, fb, fc = fma_triples_f32("ftz")
    elem("ftz_arith", c, [fa, fb, fc], "f4", 6)
    a, b = pairs_f32("ftz2")
    elem("ftz_div_sqrt", c, [a, b], "f4", 3)
    elem("ftz_min_max_abs", c, [a, b], "f4", 4)
    elem("ftz_compare", c, [a, b], "i4", 4)
    elem("ftz_convert", c, [unary_f32("ftzc")], "f8", 3)


def _half():
    c = "half"
    a, b = half_pairs("h", H16_EDGES)
    elem("half_arith", c, [a, b], "u2", 6)
    cc = np.roll(a, 17)
    elem("half_fma", c, [a, b, cc], "u2", 4)
    elem("half_minmax", c, [a, b], "u2", 4)
    elem("half_compare", c, [a, b], "u1", 8)
    w = lambda x: np.ascontiguousarray(x[: len(x) // 2 * 2]).view(np.uint32)  # noqa: E731
    elem("half2_arith", c, [w(a), w(b), w(cc)], "u4", 6)
    elem("half2_compare", c, [w(a), w(b)], "u4", 4)
    p, q = half_pairs("bf", BF16_EDGES, kind="bf16")
    pc = np.roll(p, 17)
    elem("bf16_arith", c, [p, q], "u2", 6)
    elem("bf16_fma", c, [p, q, pc], "u2", 3)
    elem("bf16_minmax_compare", c, [p, q], "u2", 6)
    elem("bf162_arith", c, [w(p), w(q), w(pc)], "u4", 5)
    r = rng_for("hdot")
    hv = (r.standard_normal(256) * 4).astype(np.float16).view(np.uint16)
    K("half_dot_float_acc", c, [In(hv), In(np.roll(hv, 9)), Out("f4", 32), Val(np.int32(256))])
    elem("half_math_fns", c, [half_bits("hm", H16_EDGES)], "u2", 4)
    elem("bf16_math_fns", c, [half_bits("bm", BF16_EDGES, kind="bf16")], "u2", 4)


def _conversion():
    c = "conversion"
    u = unary_f32("cvt", 160, spread=10)
    ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 1e10, -1e10, 2147483520.0, 2147483648.0, -2147483648.0,
                     4294967040.0, 4294967296.0, 9.2233715e18, -9.2233715e18, 0.49999997, 8388609.0, 16777217.0],
                    np.float32)
    fu = np.concatenate([ties, u])
    elem("cvt_f2i", c, [fu], "i4", 8)
    elem("cvt_f2ll", c, [fu], "i8", 6)
    du = np.concatenate([F64_EDGES, ties.astype(np.float64) + 0.0, np.array([2.5, -2.5, 4294967295.5, 1e300, -0.5])])
    elem("cvt_d2i", c, [du], "i8", 6)
    elem("cvt_i2f", c, [unary_i64("i2f")], "f4", 12)
    elem("cvt_i2d", c, [unary_i64("i2d")], "f8", 5)
    r = rng_for("d2f")
    dd = np.concatenate([F64_EDGES, r.standard_normal(64) * 10.0 ** r.uniform(-50, 50, 64),
                         f64(np.array([0x36A0000000000001, 0x369FFFFFFFFFFFFF, 0x3810000000000001,
                                       0x47EFFFFFF0000001, 0x3FF0000010000000, 0x3FF0000030000000], np.uint64))])
    elem("cvt_d2f", c, [dd], "f4", 4)
    elem("cvt_f2d_roundtrip", c, [u], "f4", 2)
    elem("cvt_f2h", c, [fu], "u2", 4)
    elem("cvt_f2bf", c, [fu], "u2", 4)
    hd = np.concatenate([dd, f64(np.array([0x3F50020000000001, 0x3F50020000000000, 0x40FFFE0000000001,
                                           0x3E70000000000001, 0x3FF0080000000001, 0x3FF0080000000000,
                                           0x380FF00000000001, 0x3FF0100000000000], np.uint64))])
    elem("cvt_d2h_bf", c, [hd], "u2", 2)
    elem("cvt_h2f_bf2f", c, [np.concatenate([H16_EDGES, BF16_EDGES, rand_bits32(r, 64).astype(np.uint16)])], "f4", 2)
    ii = np.concatenate([unary_i32("i2h"), np.array([2049, 2051, 4097, 65519, 65520, 65535, 257, 259, -257,
                                                     16777217, 0x7FFFFFFF], np.int32)])
    elem("cvt_i2h_bf", c, [ii], "u2", 6)
    elem("cvt_h2i", c, [np.concatenate([H16_EDGES, BF16_EDGES, rand_bits32(r, 64).astype(np.uint16)])], "i4", 6)
    pa, pb = pairs_f32("pack2")
    elem("cvt_pack2", c, [pa, pb], "u4", 2)
    rf = np.concatenate([ties, np.array([-0.0, 0.49999997, -0.49999997, 8388607.5, -8388607.5, 1.0000001, -3.5,
                                         4.5, 5.5, -4.5], np.float32), u])
    elem("cvt_round_fns", c, [rf], "f4", 6)
    elem("cvt_round_fns_f64", c, [np.concatenate([rf.astype(np.float64), F64_EDGES,
                                                   np.array([4503599627370495.5, -4503599627370495.5, 0.5 - 2**-54])])],
         "f8", 6)
    elem("cvt_lround", c, [np.clip(rf, -1e15, 1e15).astype(np.float32)], "i8", 3)
    elem("cvt_saturate", c, [fu], "f4", 2)
    elem("cvt_int_narrow", c, [unary_i64("narrow")], "i4", 5)
    elem("cvt_int_sat_asm", c, [unary_i64("narrowsat")], "i4", 5)
    e8 = np.concatenate([F32_EDGES, np.array([448, 464, 480, 496, 512, -448, -464, 57344, 61440, 65536, 0.001953125,
                                              0.0009765625, 0.00146484375, 1.0625, 1.125, 1.1875, 2 ** -9, 2 ** -10,
                                              2 ** -16, 2 ** -17, 1.5 * 2 ** -16, 1.5 * 2 ** -17, 2 ** -7 * 1.0625,
                                              240.0, 248.0, 256.0, 272.0], np.float32),
                         rand_f32(r, 64, 3)]).astype(np.float32)
    elem("cvt_fp8_from_f32", c, [e8, np.roll(e8, 7)], "u2", 4)
    h2 = np.concatenate([H16_EDGES, rand_bits32(r, 38).astype(np.uint16), np.array([0x5F00, 0x5F40, 0x5F80, 0x5FA0,
                                                                                  0x7800, 0x7B00, 0x1C00, 0x1800,
                                                                                  0x1A00, 0x0100], np.uint16)])
    elem("cvt_fp8_from_f16x2", c, [np.ascontiguousarray(h2[: len(h2) // 2 * 2]).view(np.uint32)], "u2", 3)
    elem("cvt_fp8_to_f16x2", c, [np.arange(0, 65536, 257, dtype=np.uint32).astype(np.uint16)], "u4", 3)
    elem("cvt_f32_to_f16x2_bf16x2_asm", c, [pa, pb], "u4", 4)
    elem("cvt_tf32", c, [np.concatenate([fu, f32(np.array([0x3F801000, 0x3F800FFF, 0x3F803000, 0x7F7FF000,
                                                           0x7F7FFFFF, 0x00001000], np.uint32))])], "u4", 2)
    elem("cvt_bits", c, [fu], "i4", 3)
    elem("cvt_c_casts_specials", c, [fu, np.resize(du, len(fu))], "i8", 8)
    elem("cvt_half2_pairs", c, [pa, pb], "u4", 4)


def _compare():
    c = "compare"
    a, b = pairs_f32("cmp")
    elem("cmp_float_ordered", c, [a, b], "u1", 6)
    elem("cmp_float_unordered_asm", c, [a, b], "u4", 1)
    d, e = pairs_f64("cmpd")
    elem("cmp_double", c, [d, e], "u1", 5)
    elem("cmp_classify", c, [unary_f32("cls")], "i4", 5)
    x, y = pairs_i32("cmpi")
    elem("cmp_int_mixed", c, [x, y], "u1", 6)
    elem("cmp_select", c, [a, b], "f4", 4)
    elem("cmp_selp_asm", c, [x, y], "i4", 2)
    elem("cmp_set_asm", c, [a, b], "u4", 3)
    elem("cmp_pred_logic", c, [x, y], "i4", 1)


def _logic():
    c = "logic"
    r = rng_for("logic")
    u = np.concatenate([np.array([0, 0xFFFFFFFF, 0x80000000, 1, 0x55555555, 0xAAAAAAAA, 0x0F0F0F0F], np.uint32),
                        rand_bits32(r, 121)])
    v, w = np.roll(u, 5) ^ rand_bits32(r, 128), np.roll(u, 11)
    elem("logic_lop3_exprs", c, [u, v, w], "u4", 6)
    elem("logic_lop3_asm", c, [u, v, w], "u4", 4)
    sh = np.resize(np.array([0, 1, 5, 31, 32, 33, 63, 64, 65, 100, 255, 0xFFFFFFFF, 0x80000000, 16], np.uint32), 128)
    elem("logic_shf_asm", c, [u, v, sh], "u4", 4)
    u64 = unary_i64("rot64", 128).view(np.uint64)
    elem("logic_rotate64", c, [u64, sh], "u8", 2)
    pl = np.array([p | (ln << 8) for p in (0, 1, 7, 16, 31, 32, 33, 200) for ln in (0, 1, 5, 16, 31, 32, 33, 64)],
                  np.uint32)
    elem("logic_bmsk_szext", c, [np.resize(u, len(pl)), pl], "u4", 4)
    elem("logic_not_cnot", c, [u], "u4", 3)
    elem("logic_bitset64", c, [u64, sh], "u8", 3)
    elem("logic_gray_parity", c, [u], "u4", 2)


def _memory():
    c = "memory"
    r = rng_for("mem")
    K("mem_vec_float4", c, [In(rand_f32(r, 256, 3)), Out("f4", 256), Val(np.int32(64))], block=(64, 1, 1))
    i4 = r.integers(-(1 << 31), 1 << 31, 256).astype(np.int32)
    l2 = r.integers(-(1 << 63), (1 << 63) - 1, 128, dtype=np.int64)
    K("mem_vec_int4_longlong2", c, [In(i4), In(l2), Out("i4", 256), Out("i8", 128), Val(np.int32(64))],
      block=(64, 1, 1))
    K("mem_vec_double2_short4", c, [In(r.standard_normal(128)), In(r.integers(-32768, 32768, 256).astype(np.int16)),
                                    Out("f8", 128), Out("i2", 256), Val(np.int32(64))], block=(64, 1, 1))
    K("mem_b128_asm", c, [In(l2.view(np.uint64)), Out("u8", 128), Val(np.int32(64))], block=(64, 1, 1))
    K("mem_bytes_signext", c, [In(r.integers(-128, 128, 128).astype(np.int8)),
                               In(r.integers(-32768, 32768, 128).astype(np.int16)), Out("i4", 384),
                               Val(np.int32(128))], block=(64, 1, 1))
    elem("mem_byte_stores", c, [rand_bits32(r, 128)], "u1", 4)
    elem("mem_local_array", c, [unary_i32("loc", 96)], "i4", 1)
    elem("mem_local_struct", c, [rand_f32(r, 96, 1)], "f4", 2)
    K("mem_shared_transpose", c, [In(rand_f32(r, 1024, 2)), Out("f4", 1024)], block=(128, 1, 1))
    K("mem_shared_dynamic", c, [In(r.integers(-1000, 1000, 200).astype(np.int32)), Out("i4", 200), Val(np.int32(200))],
      block=(64, 1, 1), shared=800)
    K("mem_shared_bytes", c, [In(rand_bits32(r, 256)), Out("u4", 256)], block=(256, 1, 1))
    elem("mem_ldg_hints", c, [rand_f32(r, 128, 2)], "f4", 2)
    elem("mem_struct_copy", c, [unary_i32("struct", 96)], "i4", 3)
    elem("mem_globals_const", c, [unary_i32("glob", 64)], "f4", 1)
    K("mem_vec_char4_uchar2", c, [In(r.integers(-128, 128, 256).astype(np.int8)),
                                  In(r.integers(0, 256, 128).astype(np.uint8)), Out("i1", 256), Out("u2", 128),
                                  Val(np.int32(64))], block=(64, 1, 1))


def _control():
    c = "control"
    r = rng_for("ctl")
    K("ctl_fib_recursive", c, [In(np.array(list(range(11)) * 3 + [10] * 5, np.int32)[:32]), Out("i4", 32),
                               Val(np.int32(32))])
    K("ctl_deep_recursion", c, [In(np.arange(32, dtype=np.uint32)), Out("u8", 32), Val(np.int32(32))])
    K("ctl_function_pointers", c, [In(r.integers(0, 4, 64).astype(np.int32)), In(rand_f32(r, 64, 2)), Out("f4", 64),
                                   Val(np.int32(64))], block=(64, 1, 1))
    ia = np.concatenate([np.array([-5, 0, 3, 11, 12, 13, 28, 29, 16, 17, -1, 33], np.int32),
                         r.integers(-20, 200, 52).astype(np.int32)])
    K("ctl_divergent_return", c, [In(ia), Out("i4", 64), Val(np.int32(60))], block=(64, 1, 1))
    elem("ctl_break_continue", c, [unary_i32("brk", 64)], "i4", 1)
    elem("ctl_switch", c, [unary_i32("sw", 96)], "i4", 1)
    elem("ctl_call_many_args", c, [unary_i32("args", 64)], "i8", 1)
    elem("ctl_struct_return", c, [rand_f32(r, 64, 2)], "f8", 1)
    K("ctl_nested_divergence", c, [In(unary_i32("nest", 64)), Out("i4", 64), Val(np.int32(64))], block=(64, 1, 1))
    elem("ctl_goto_loop", c, [unary_i32("goto", 64)], "i4", 1)
    K("ctl_exit_asm", c, [In(unary_i32("exit", 64)), Out("i4", 64), Val(np.int32(64))], block=(64, 1, 1))


def _warp():
    c = "warp"
    r = rng_for("warp")
    v = unary_i32("wv", 64)
    src = np.concatenate([np.array([0, 31, 32, 33, -1, 63, 100, 16, 15, 8, 7, 1], np.int32),
                          r.integers(-40, 80, 52).astype(np.int32)])
    K("warp_shfl_idx", c, [In(v), In(src), Out("i4", 256)], block=(64, 1, 1))
    K("warp_shfl_up_down", c, [In(v), Out("i4", 384)], block=(64, 1, 1))
    K("warp_shfl_xor", c, [In(unary_f32("wx", 64)), Out("f4", 256)], block=(64, 1, 1))
    K("warp_shfl_64bit", c, [In(r.standard_normal(64)), In(unary_i64("w64", 64)), Out("f8", 64), Out("i8", 64)],
      block=(64, 1, 1))
    K("warp_shfl_asm_clamp", c, [In(v), Out("u4", 192)], block=(64, 1, 1))
    bv = r.integers(-3, 10, 64).astype(np.int32)
    bv[[0, 5, 33, 40]] = 7
    K("warp_ballot_in_branch", c, [In(bv), Out("u4", 64)], block=(64, 1, 1))
    K("warp_votes", c, [In(np.concatenate([np.ones(32, np.int32), bv[32:]])), Out("u4", 320)], block=(64, 1, 1))
    K("warp_match", c, [In(r.integers(0, 4, 64).astype(np.int32)),
                        In((r.integers(0, 3, 64).astype(np.int64) << 40) | 5), Out("u4", 256)], block=(64, 1, 1))
    K("warp_redux", c, [In(v), Out("i4", 448)], block=(64, 1, 1))
    K("warp_redux_partial", c, [In(v), Out("i4", 64)], block=(64, 1, 1))
    K("warp_tile_reduce", c, [In(rand_f32(r, 64, 3)), Out("f4", 128)], block=(64, 1, 1))
    K("warp_inclusive_scan", c, [In(v), Out("i4", 64)], block=(64, 1, 1))
    K("warp_partial_shfl", c, [In(v), Out("i4", 64)], block=(64, 1, 1))
    K("warp_block_votes", c, [In(r.integers(-50, 100, 128).astype(np.int32)), Out("i4", 128)], block=(128, 1, 1))
    K("warp_lanemask_elect", c, [In(v), Out("u4", 256)], block=(64, 1, 1))
    ex = r.integers(-5, 20, 64).astype(np.int32)
    ex[[0, 1, 31, 32, 40]] = -1
    K("warp_ballot_after_exit", c, [In(ex), Out("u4", 128)], block=(64, 1, 1))
    K("warp_syncwarp_masks", c, [In(r.integers(-1000, 1000, 128).astype(np.int32)), Out("i4", 128)],
      block=(128, 1, 1))


# -- atomics: the order checks ----------------------------------------------------------------------

def _chain(init, olds, step, final):
    """Is there an order of the threads in which each one's old value is the running value before it,
    starting at `init` and ending at `final`? `step(value, thread) -> next value`. Thread t is the
    edge old[t] -> step(old[t], t); an order is an Euler trail from init to final over all edges
    (in-/out-degrees balanced but at the ends, every edge reachable from init)."""
    key = lambda v: np.asarray(v).tobytes()  # noqa: E731
    deg, adj = {}, {}
    for t in range(len(olds)):
        u, v = key(olds[t:t + 1]), key(step(olds[t:t + 1], t))
        deg[u] = deg.get(u, 0) + 1
        deg[v] = deg.get(v, 0) - 1
        adj.setdefault(u, set()).add(v)
        adj.setdefault(v, set()).add(u)
    a, b = key(init), key(final)
    if not olds.size:
        return a == b
    want = {a: 1, b: -1} if a != b else {}
    if any(d != want.get(n, 0) for n, d in deg.items()) or (a != b and (deg.get(a) != 1 or deg.get(b) != -1)):
        return False
    seen, todo = {a}, [a]
    while todo:
        for m in adj.get(todo.pop(), ()):
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return seen >= set(adj)


def _check_float_order(outs, k):
    acc, old = outs[0], outs[1]
    v = k.args[1].data
    init = k.args[0].data[0:1]
    ok = _chain(init, old, lambda cur, t: (cur + v[t:t + 1]).astype(np.float32), acc[0:1])
    return None if ok else "no order of the float atomicAdds gives these old values and this sum"


def _check_double_order(outs, k):
    acc, old = outs[0], outs[1]
    v = k.args[1].data
    ok = _chain(k.args[0].data[0:1], old, lambda cur, t: cur + v[t:t + 1], acc[0:1])
    return None if ok else "no order of the double atomicAdds gives these old values and this sum"


def _check_exch_chain(outs, k):
    slot, old = outs[0], outs[1]
    init = k.args[0].data[0:1]
    ok = _chain(init, old, lambda cur, t: np.array([t + 100], np.int32), slot[0:1])
    return None if ok else "the exchanged values do not form one chain from the initial value to the final one"


def _check_cas(outs, k):
    counter, seen = outs[0], outs[1]
    vals, x = [], int(k.args[0].data[0])
    for _ in range(len(seen)):
        vals.append(x)
        x = (x * 3 + 1) & 0xFFFFFFFF
    if sorted(int(s) for s in seen) != sorted(vals) or int(counter[0]) != x:
        return "the CAS loop's values are not the chain x -> 3x+1 applied once per thread"
    return None


def _atomics():
    c = "atomics"
    r = rng_for("atom")
    ha = r.integers(-(1 << 31), 1 << 31, 300).astype(np.int32)
    K("atom_histogram", c, [In(ha), InOut(np.zeros(16, np.int32)), Val(np.int32(300))], block=(64, 1, 1),
      grid=(2, 1, 1))
    sv = np.concatenate([F32_SMALL, F32_SMALL[::-1], rand_f32(r, 32, 3)])[:64]
    sd = np.concatenate([F32_SMALL[5:], f32([0x00000003, 0x80000002, 0x00400000, 0x00000001]), F32_SMALL,
                         rand_f32(r, 64, 3)])[:64]
    K("atom_add_float_slots", c, [InOut(sv.copy()), In(sd.astype(np.float32)), Out("f4", 64)], block=(64, 1, 1),
      note="float atomics flush subnormals on the GPU")
    dv = np.concatenate([F64_SMALL, F64_SMALL[::-1], r.standard_normal(40)])[:64]
    K("atom_add_double_slots", c, [InOut(dv.copy()), In(np.roll(dv, 3)), Out("f8", 64)], block=(64, 1, 1))
    hv = np.concatenate([H16_EDGES, H16_EDGES[::-1], half_bits("ah", H16_EDGES[:0], 76)])[:128]
    K("atom_add_half2_slots", c, [InOut(hv.view(np.uint32).copy()), In(np.roll(hv, 5).view(np.uint32)),
                                  Out("u4", 64)], block=(64, 1, 1))
    K("atom_ticket", c, [InOut(np.zeros(1, np.int32)), Out("i4", 128)], block=(64, 1, 1), grid=(2, 1, 1),
      cmp=Sorted((1,)))
    fo = (np.array([1e8, -3e7, 12345.678, 0.001, 7.5, -2.25e6, 3.14159, 1e-3] * 8, np.float32)
          * np.float32(1) + rand_f32(r, 64, 1))
    K("atom_float_order", c, [InOut(np.array([1.0], np.float32)), In(fo.astype(np.float32)), Out("f4", 64)],
      block=(32, 1, 1), grid=(2, 1, 1),
      cmp=Check(_check_float_order, "the old values form one order of the adds, which gives the final sum"))
    K("atom_exch_chain", c, [InOut(np.array([-5], np.int32)), Out("i4", 64)], block=(32, 1, 1), grid=(2, 1, 1),
      cmp=Check(_check_exch_chain, "the exchanged values form one chain"))
    K("atom_cas_increment", c, [InOut(np.array([1], np.uint32)), Out("u4", 64)], block=(64, 1, 1),
      cmp=Check(_check_cas, "each thread applied x -> 3x+1 exactly once"))
    cv = rand_bits32(r, 64).astype(np.uint64) << np.uint64(32) | rand_bits32(r, 64).astype(np.uint64)
    cmpv = np.where(np.arange(64) % 2 == 0, cv, cv ^ np.uint64(1))
    K("atom_cas_edges", c, [InOut(cv.copy()), In(cmpv), In(rand_bits32(r, 64).astype(np.uint64) * np.uint64(3)),
                            Out("u8", 128)], block=(64, 1, 1))
    K("atom_min_max", c, [InOut(np.array([0, 0], np.int32)), InOut(np.array([0xFFFFFFFF, 0], np.uint32)),
                          InOut(np.array([0, 0], np.int64)), InOut(np.array([2 ** 64 - 1, 0], np.uint64)),
                          In(unary_i32("amm", 64))], block=(64, 1, 1))
    K("atom_bitwise", c, [InOut(np.array([0xFFFFFFFF, 0, 0x12345678, 0xFFFFFFFF], np.uint32)),
                          InOut(np.array([0, 0xF0F0], np.uint64)), In(rand_bits32(r, 64))], block=(64, 1, 1))
    K("atom_inc_dec", c, [InOut(np.array([3, 2], np.uint32)), Out("u4", 128)], block=(64, 1, 1),
      cmp=Check(_check_inc_dec, "the old values are the wrap sequences of atomicInc(9) and atomicDec(5)"))
    K("atom_add_u64", c, [InOut(np.array([2 ** 64 - 5, 0, 0], np.uint64)),
                          In(rand_bits32(r, 64).astype(np.uint64) << np.uint64(31))], block=(64, 1, 1))
    K("atom_shared_hist", c, [In(rand_bits32(r, 300).view(np.int32)), Out("i4", 34), Val(np.int32(300))],
      block=(128, 1, 1))
    ev = np.resize(np.array([1, 2, 0.5, 0.25, 3, 4, 1024, 0.125], np.float32), 128)
    K("atom_add_float_sum_exact", c, [InOut(np.array([0.0, 0.0], np.float32)), In(ev)], block=(64, 1, 1),
      grid=(2, 1, 1))
    sub = f32([0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00400000, 0x00800000, 0x80800000, 0x00000003])
    K("atom_shared_float_subnormal", c, [In(np.concatenate([sub, sub[::-1], F32_SMALL, rand_f32(r, 32, 30)])),
                                         Out("f4", 128)], block=(64, 1, 1), note="shared float atomics and .ftz")
    dv2 = np.array([1e16, 1.0, 0.5, -3e15, 2.0 ** -30, 7.25, -1e16, 3.0] * 8) + r.standard_normal(64)
    K("atom_double_order", c, [InOut(np.array([1.0])), In(dv2), Out("f8", 64)], block=(32, 1, 1), grid=(2, 1, 1),
      cmp=Check(_check_double_order, "the old values form one order of the double adds, which gives the final sum"))
    K("atom_block_scope", c, [InOut(np.zeros(2, np.int32)), Out("i4", 128)], block=(64, 1, 1), grid=(2, 1, 1),
      cmp=Sorted((1,)))


def _check_inc_dec(outs, k):
    c, old = outs[0], outs[1]
    inc, dec = [], []
    x, y = int(k.args[0].data[0]), int(k.args[0].data[1])
    for _ in range(len(old) // 2):
        inc.append(x); dec.append(y)  # noqa: E702
        x = 0 if x >= 9 else x + 1
        y = 5 if (y == 0 or y > 5) else y - 1
    if sorted(old[0::2].tolist()) != sorted(inc) or sorted(old[1::2].tolist()) != sorted(dec):
        return "the old values are not the atomicInc/atomicDec wrap sequences"
    if int(c[0]) != x or int(c[1]) != y:
        return f"the final counters are {int(c[0])}, {int(c[1])}; the sequences end at {x}, {y}"
    return None


def _printf():
    c = "printf"
    r = rng_for("printf")
    ia = np.concatenate([I32_EDGES[:20], r.integers(-100000, 100000, 44).astype(np.int32)])
    K("printf_ints", c, [In(ia), In(np.resize(I64_EDGES, 64))], block=(64, 1, 1), cmp=Printf())
    fa = np.concatenate([F32_EDGES[:40], rand_f32(r, 24, 8)])
    K("printf_floats", c, [In(fa), In(np.resize(F64_EDGES, 64))], block=(64, 1, 1), cmp=Printf())
    K("printf_widths_flags", c, [In(ia)], block=(64, 1, 1), cmp=Printf())
    K("printf_strings", c, [In(r.integers(0, 64, 64).astype(np.int32))], block=(64, 1, 1), cmp=Printf())
    K("printf_diverged_warps", c, [In(np.resize(ia, 128))], block=(128, 1, 1),
      cmp=Printf())
    K("printf_special_floats", c, [In(F32_EDGES[:32])], block=(32, 1, 1), cmp=Printf())
    K("printf_more_formats", c, [In(ia), In(np.resize(F64_EDGES, 64))], block=(64, 1, 1), cmp=Printf())


def _mma():
    c = "mma"
    r = rng_for("mma")

    def h(n, spread=3):
        return (r.standard_normal(n) * 2.0 ** r.integers(-spread, spread + 1, n)).astype(np.float16).view(np.uint16)

    def bf(n):
        x = (r.standard_normal(n) * 2.0 ** r.integers(-8, 9, n)).astype(np.float32)
        return (x.view(np.uint32) >> 16).astype(np.uint16)

    cf = (r.standard_normal(128) * 2.0 ** r.integers(-6, 7, 128)).astype(np.float32)
    K("mma_f16_f32_m16n8k16", c, [In(h(256).view(np.uint32)), In(h(128).view(np.uint32)), In(cf), Out("f4", 128)],
      note="accumulation order and rounding of mma.sync, measured")
    K("mma_bf16_f32_m16n8k16", c, [In(bf(256).view(np.uint32)), In(bf(128).view(np.uint32)), In(cf),
                                   Out("f4", 128)])
    K("mma_f16_f16_m16n8k16", c, [In(h(256).view(np.uint32)), In(h(128).view(np.uint32)),
                                  In(h(128).view(np.uint32)), Out("u4", 64)])
    K("mma_f16_f32_m16n8k8", c, [In(h(128).view(np.uint32)), In(h(64).view(np.uint32)), In(cf), Out("f4", 128)])
    tf = (r.standard_normal(256) * 2.0 ** r.integers(-10, 11, 256)).astype(np.float32)
    K("mma_tf32_m16n8k8", c, [In(tf[:128].view(np.uint32)), In(tf[128:192].view(np.uint32)), In(cf), Out("f4", 128)],
      note="tf32 operands given with all 23 mantissa bits: what the unit ignores is measured")
    s8a = r.integers(-128, 128, 512).astype(np.int8)
    s8a[:16] = -128
    s8b = r.integers(-128, 128, 256).astype(np.int8)
    s8b[:16] = -128
    ci = np.concatenate([np.array([0x7FFFFF00, -0x7FFFFF00, 0x7FFFFFFF, -0x80000000], np.int32),
                         r.integers(-(1 << 20), 1 << 20, 124).astype(np.int32)])
    K("mma_s8_s32_m16n8k32", c, [In(s8a.view(np.uint32)), In(s8b.view(np.uint32)), In(ci), Out("i4", 256)])
    rows = r.permutation(32).astype(np.int32)
    K("mma_ldmatrix_forms", c, [In(np.arange(128, dtype=np.uint32) * np.uint32(0x00020002) + np.uint32(0x00010000)),
                                In(rows), Out("u4", 32 * 15)])
    K("mma_ldmatrix_gemm", c, [In(h(256, 2)), In(h(128, 2)), Out("f4", 128)])


# The GPU's documented error bounds for the approximate instructions (CUDA C++ Programming Guide,
# "Intrinsic Functions", and the PTX ISA's .approx instructions). The emulator may compute the exact
# value; the bound is the distance the GPU's answer may have from it (plus half an ulp of rounding).
APPROX_BOUNDS = {
    "apx_exp": Within(ulp=16, doc="__expf: 2 + floor(|1.173 x|) ulp, |x| <= 10 here; exp2f: 2 ulp"),
    "apx_ex2_asm": Within(ulp=3, doc="ex2.approx.f32: max relative error 2^-22.5 (about 2 ulp)"),
    "apx_log": Within(ulp=4, abs=2.0 ** -21, doc="__logf/__log2f/__log10f: 2^-21.41 absolute in [0.5, 2], "
                                                 "3 ulp elsewhere"),
    "apx_sin_cos": Within(abs=2.0 ** -21, doc="__sinf/__cosf: 2^-21.41 absolute in [-pi, pi]"),
    "apx_rsqrt_rcp": Within(ulp=3, doc="rsqrtf 2 ulp; rcp.approx 1 ulp; sqrt.approx relative 2^-23"),
    "apx_fdividef": Within(ulp=3, doc="__fdividef: 2 ulp for |y| in [2^-126, 2^126]"),
    "apx_tanh_asm": Within(rel=2.0 ** -10.9, abs=2.0 ** -20, doc="tanh.approx.f32: relative 2^-10.987"),
    "apx_powf_fast": Within(rel=2.0 ** -12, abs=2.0 ** -20, doc="__powf = exp2(y log2 x): error grows with |y log2 x|"
                                                                "; __tanf from __sinf/__cosf"),
    "apx_half_ex2_tanh": Within(rel=2.0 ** -9, abs=2.0 ** -14, doc="ex2.approx.f16x2 relative 2^-9.9; "
                                                                   "tanh.approx.f16x2 absolute 2^-10.7"),
    "apx_softmax_row": Within(ulp=48, doc="__expf of values <= 0 (|x| < 10) and __fdividef: composed bounds"),
}


def _approx():
    c = "approx"
    r = rng_for("approx")
    sp = f32([0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001])
    x10 = np.concatenate([sp, r.uniform(-10, 10, 122).astype(np.float32)])
    elem("apx_exp", c, [x10], "f4", 2, cmp=APPROX_BOUNDS["apx_exp"])
    elem("apx_ex2_asm", c, [np.concatenate([sp, r.uniform(-20, 20, 122).astype(np.float32)])], "f4", 2,
         cmp=APPROX_BOUNDS["apx_ex2_asm"])
    pos = np.concatenate([sp, np.float32(2.0) ** r.uniform(-30, 30, 90).astype(np.float32),
                          r.uniform(0.5, 2, 32).astype(np.float32)]).astype(np.float32)
    elem("apx_log", c, [pos], "f4", 3, cmp=APPROX_BOUNDS["apx_log"])
    elem("apx_sin_cos", c, [np.concatenate([sp[:2], r.uniform(-np.pi, np.pi, 126).astype(np.float32)])], "f4", 4,
         cmp=APPROX_BOUNDS["apx_sin_cos"])
    elem("apx_rsqrt_rcp", c, [pos], "f4", 3, cmp=APPROX_BOUNDS["apx_rsqrt_rcp"])
    b = np.float32(2.0) ** r.uniform(-60, 60, 128).astype(np.float32) * np.sign(r.standard_normal(128)).astype(
        np.float32)
    elem("apx_fdividef", c, [rand_f32(r, 128, 8), b.astype(np.float32)], "f4", 2, cmp=APPROX_BOUNDS["apx_fdividef"])
    elem("apx_tanh_asm", c, [np.concatenate([sp, r.uniform(-6, 6, 122).astype(np.float32)])], "f4", 1,
         cmp=APPROX_BOUNDS["apx_tanh_asm"])
    elem("apx_powf_fast", c, [r.uniform(0.1, 4, 128).astype(np.float32), r.uniform(-1.5, 1.5, 128).astype(np.float32)],
         "f4", 2, cmp=APPROX_BOUNDS["apx_powf_fast"])
    hx = r.uniform(-4, 4, 256).astype(np.float16).view(np.uint16)
    elem("apx_half_ex2_tanh", c, [hx.view(np.uint32)], "f2", 4, cmp=APPROX_BOUNDS["apx_half_ex2_tanh"])
    K("apx_softmax_row", c, [In(r.uniform(-8, 8, 32).astype(np.float32)), Out("f4", 32)],
      cmp=APPROX_BOUNDS["apx_softmax_row"])


def _sched():
    c = "sched"
    K("sched_warp_spinlock", c, [InOut(np.zeros(1, np.int32)), InOut(np.zeros(1, np.int32)), Out("i4", 32)],
      cmp=Sorted((2,)), note="needs independent thread scheduling inside the warp")
    K("sched_two_block_handshake", c, [InOut(np.zeros(2, np.int32)), InOut(np.zeros(128, np.int32)), Out("i4", 128)],
      grid=(2, 1, 1), block=(64, 1, 1), note="both blocks must be resident together")
    K("sched_cluster_nanosleep", c, [InOut(np.zeros(1, np.int32)), Out("i4", 64)], grid=(2, 1, 1),
      note="a CTA in __nanosleep is waiting for time to pass, not idle")
    K("sched_intra_block_flag", c, [Out("i4", 32)], block=(64, 1, 1))
    K("sched_producer_consumer", c, [In(rng_for("pc").integers(-1000, 1000, 256).astype(np.int32)), Out("i4", 128)],
      block=(128, 1, 1))
    K("sched_racy_increment", c, [InOut(np.zeros(1, np.int32))], block=(64, 1, 1), cmp=AnyOf((1, 2, 3)))
    K("sched_racy_last_writer", c, [InOut(np.zeros(1, np.int32)), Out("i4", 1)], block=(128, 1, 1),
      cmp=AnyOf((1, 2, 3, 4)))


with np.errstate(all="ignore"):  # NaN and infinity edge values are the point
    for _f in (_integer, _float, _float_ftz, _half, _conversion, _compare, _logic, _memory, _control, _warp,
               _atomics, _printf, _mma, _approx, _sched):
        _f()
BY_NAME = {k.name: k for k in KERNELS}

# Kernels today's emulator does not reproduce: kernel -> why. The only such list; the test checks it
# strictly (a listed kernel that now matches fails, so the list only shrinks).
KNOWN_DIFFERENCES: dict[str, str] = {
    'printf_more_formats':
        "differs: after %hd the GPU's printf formatter reads the later arguments at other offsets than "
        "NVRTC's buffer holds them (its line shifts; the emulator prints the arguments)",
}


# ----------------------------------------------------------------------------------------------------
# Running a kernel: on the GPU through CuPy, or in bwlab.emu; the same arguments, the same outputs.

_MODULES: dict = {}


def only_entry(ptx: str, keep: str) -> str:
    """The module's PTX with every `.entry` block but `keep`'s removed (device functions, globals and
    the header stay). The emulator decodes a whole module when it loads it, so one instruction it
    lacks in one kernel would otherwise stop every kernel of the chapter."""
    out, i = [], 0
    while True:
        j = ptx.find(".entry ", i)
        if j < 0:
            out.append(ptx[i:])
            return "".join(out)
        start = ptx.rfind("\n", 0, j) + 1
        name = ptx[j + 7:].split("(", 1)[0].strip()
        depth, k, opened = 0, j, False
        while k < len(ptx):
            ch = ptx[k]
            if ch == "{":
                depth, opened = depth + 1, True
            elif ch == "}":
                depth -= 1
                if opened and depth == 0:
                    break
            k += 1
        out.append(ptx[i:start])
        if name == keep:
            out.append(ptx[start:k + 1])
        i = k + 1


def _module(k: Kernel, backend: str):
    """GPU: the chapter's cubin, loaded once. Emulator: the chapter's PTX with k's entry alone."""
    key = (k.chapter, backend if backend == "gpu" else k.name)
    if key not in _MODULES:
        comp = compiled(k.chapter)
        if backend == "gpu":
            from ..compile import Module
            _MODULES[key] = Module(comp)
        else:
            from .. import emu
            _MODULES[key] = emu.RawModule(ptx=only_entry(comp.ptx, k.name), name=f"{k.chapter}.cu")
    return _MODULES[key]


@contextlib.contextmanager
def _capture_stdout(sink: list):
    """Everything written to file descriptor 1 (the CUDA printf buffer is flushed there by C stdio)
    and to Python's sys.stdout while the block runs."""
    libc = ctypes.CDLL(None)
    sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(1)
    py = io.StringIO()
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            with contextlib.redirect_stdout(py):
                yield
            sys.stdout.flush()
            libc.fflush(None)
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        sink.append(tmp.read().decode(errors="replace") + py.getvalue())


def run_kernel(k: Kernel, backend: str, seed: int | None = None) -> dict:
    """Run `k` once; {"outputs": [arrays], "printf": text}. backend: "gpu" (CuPy) or "emu"."""
    if backend == "gpu":
        import cupy as xp
    else:
        from .. import emu as xp
    fn = _module(k, backend).get_function(k.name)
    args, outs = [], []
    for a in k.args:
        if isinstance(a, In):
            args.append(xp.asarray(np.ascontiguousarray(a.data)))
        elif isinstance(a, InOut):
            d = xp.asarray(np.ascontiguousarray(a.data).copy())
            args.append(d)
            outs.append(d)
        elif isinstance(a, Out):
            host = np.full(a.n * np.dtype(a.dtype).itemsize, 0xA5, np.uint8).view(np.dtype(a.dtype))
            d = xp.asarray(host)
            args.append(d)
            outs.append(d)
        else:
            args.append(a.value)
    text: list = []
    with _capture_stdout(text):
        if backend == "gpu":
            fn(k.grid, k.block, tuple(args), shared_mem=k.shared)  # (seed: the GPU picks its own order)
            xp.cuda.Device().synchronize()
        else:  # the emulator's NumPy warns on NaN/inf lanes; that is not the kernel's business
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                fn(k.grid, k.block, tuple(args), shared_mem=k.shared, seed=seed, max_steps=k.max_steps)
    return {"outputs": [np.asarray(o.get()) for o in outs], "printf": text[0]}


# ----------------------------------------------------------------------------------------------------
# Comparing a run with the recording.

def _hex(x) -> str:
    a = np.asarray(x)
    return "0x" + a.tobytes()[::-1].hex() if a.dtype.byteorder in "<=|" else "0x" + a.tobytes().hex()


def _first_diff(rec, got) -> str | None:
    if rec.shape != got.shape or rec.dtype != got.dtype:
        return f"shape/dtype {rec.shape} {rec.dtype} vs {got.shape} {got.dtype}"
    rb, gb = rec.view(np.uint8).reshape(len(rec), -1), got.view(np.uint8).reshape(len(got), -1)
    bad = np.nonzero((rb != gb).any(axis=1))[0]
    if len(bad) == 0:
        return None
    i = int(bad[0])
    return f"[{i}] GPU {_hex(rec[i])} emu {_hex(got[i])} ({len(bad)} of {len(rec)} differ)"


def _ulp32(x):
    x = np.abs(np.asarray(x, np.float64))
    e = np.floor(np.log2(np.maximum(x, 2.0 ** -126)))
    return 2.0 ** (e - 23)


def _within(rec, got, w: Within) -> str | None:
    if rec.dtype == np.float16:
        r, g = rec.astype(np.float64), got.astype(np.float64)
        ulp = 2.0 ** (np.floor(np.log2(np.maximum(np.abs(r), 2.0 ** -14))) - 10)
    else:
        r, g = rec.astype(np.float64), got.astype(np.float64)
        ulp = _ulp32(r)
    special = ~np.isfinite(r) | ~np.isfinite(g) | (r == 0) | (g == 0)
    exact_bad = special & ~((np.isnan(r) & np.isnan(g)) | (r == g) & (np.signbit(r) == np.signbit(g)))
    # a zero against a tiny non-zero is judged by the bound, not exactly
    exact_bad &= ~(((r == 0) ^ (g == 0)) & np.isfinite(r) & np.isfinite(g))
    with np.errstate(invalid="ignore"):
        tol = np.maximum.reduce([w.ulp * ulp + 0.5 * ulp, np.full_like(r, w.abs), w.rel * np.abs(r)])
        far = np.isfinite(r) & np.isfinite(g) & (np.abs(r - g) > tol)
    bad = np.nonzero(exact_bad | far)[0]
    if len(bad) == 0:
        return None
    i = int(bad[0])
    return (f"[{i}] GPU {_hex(rec[i])} ({float(r[i]):.9g}) emu {_hex(got[i])} ({float(g[i]):.9g}) beyond "
            f"{w.doc or 'the bound'} ({len(bad)} of {len(rec)})")


def _per_warp(text: str) -> dict:
    lines: dict = {}
    for ln in text.splitlines():
        w = ln.split(" ", 1)[0]
        lines.setdefault(w, []).append(ln)
    return {w: sorted(v) for w, v in lines.items()}


def compare(k: Kernel, rec: dict, got: dict) -> str | None:
    """None when `got` (an emulator run) agrees with the recording in k's comparison kind; else the
    first difference, in words with both values in hex."""
    cmp = k.cmp
    if isinstance(cmp, Printf):
        want, have = _per_warp(rec["printf"]), _per_warp(got["printf"])
        if want == have:
            return None
        for w in sorted(set(want) | set(have)):
            a, b = want.get(w, []), have.get(w, [])
            if a != b:
                extra = [x for x in b if x not in a][:1]
                missing = [x for x in a if x not in b][:1]
                gone, new = (missing[0] if missing else "-"), (extra[0] if extra else "-")
                return (f"warp {w}: GPU printed {len(a)} lines, emu {len(b)}; first GPU line not in emu: {gone!r}; "
                        f"first emu line not on GPU: {new!r}")
    if isinstance(cmp, Check):
        err = cmp.fn(got["outputs"], k)
        return f"{cmp.doc}: {err}" if err else None
    if isinstance(cmp, AnyOf):
        v = int(got["outputs"][0].ravel()[0])
        return None if v in cmp.outcomes else f"result {v} is not one of the outcomes {cmp.outcomes}"
    for j, (r, g) in enumerate(zip(rec["outputs"], got["outputs"])):
        if isinstance(cmp, Sorted) and j in cmp.outputs:
            r, g = np.sort(r), np.sort(g)
        d = _within(r, g, cmp) if isinstance(cmp, Within) else _first_diff(r, g)
        if d:
            return f"output {j}: {d}"
    return None


# ----------------------------------------------------------------------------------------------------
# Recordings.

def load_recording(chapter: str, where: Path = RECORDINGS) -> dict:
    """{kernel: {"outputs": [...], "printf": str, "runs": [...], "digest": str, "error": str|None}}."""
    path = Path(where) / f"{chapter}.npz"
    if not path.exists():
        raise FileNotFoundError(f"no recording {path}: run `python -m bwlab.validate emu-corpus` on a GPU")
    z = np.load(path, allow_pickle=False)
    meta = json.loads(bytes(z["__meta__"]).decode())
    out = {}
    for name, m in meta.items():
        out[name] = {"outputs": [z[f"{name}.{j}"] for j in range(m["n_outputs"])],
                     "printf": m.get("printf", ""), "runs": m.get("runs", []), "digest": m["digest"],
                     "error": m.get("error")}
    return out


def _inputs_of(k: Kernel, detail: str) -> str:
    """For an element-wise kernel (inputs of n elements, outputs of `per` values each): the inputs of
    the first differing element, so that a difference reads as `op(inputs) -> GPU vs emu`."""
    import re
    m = re.match(r"output (\d+): \[(\d+)\]", detail)
    if not m or not k.args or not isinstance(k.args[-1], Val):
        return ""
    n = int(k.args[-1].value)
    outs = k.outputs()
    j, idx = int(m.group(1)), int(m.group(2))
    if j >= len(outs) or not isinstance(outs[j], Out) or n <= 0 or outs[j].n % n:
        return ""
    per = outs[j].n // n
    i = idx // per
    ins = [a.data for a in k.args if isinstance(a, In) and len(a.data) == n]
    if not ins:
        return ""
    return f"; element {i} (result {idx % per} of {per}), inputs " + ", ".join(_hex(x[i]) for x in ins)


def emulator_result(k: Kernel, rec: dict) -> tuple[str, str]:
    """Run k in the emulator against its recording: ("match" | "differ" | "unsupported" | "error" |
    "stale", detail)."""
    from .. import emu
    if rec.get("error"):
        return "error", f"the GPU recording failed: {rec['error'].splitlines()[0]}"
    if rec["digest"] != k.inputs_digest():
        return "stale", "the manifest's inputs changed since the recording: re-record on a GPU"
    seeds = k.cmp.seeds if isinstance(k.cmp, AnyOf) else (0,)
    seen = set()
    for s in seeds:
        try:
            got = run_kernel(k, "emu", seed=s)
        except emu.UnsupportedInstruction as e:
            return "unsupported", str(e).splitlines()[0][:300]
        except Exception as e:  # noqa: BLE001 - any other failure is a difference, named
            return "differ", f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        d = compare(k, rec, got)
        if d:
            return "differ", (f"seed {s}: " if len(seeds) > 1 else "") + d + _inputs_of(k, d)
        if isinstance(k.cmp, AnyOf):
            seen.add(int(got["outputs"][0].ravel()[0]))
    return "match", (f"outcomes over {len(seeds)} seeds: {sorted(seen)}" if seen else "")


# ----------------------------------------------------------------------------------------------------
# The command.

def _record_chapter(chapter: str, names: list, out_dir: Path, backend: str = "gpu") -> None:
    """Worker (one process per chapter): record each kernel into out_dir/<name>.npz as it goes;
    a CUDA error leaves the context unusable, so the worker then exits and the parent restarts it."""
    for name in names:
        k = BY_NAME[name]
        (out_dir / f"{name}.started").write_text("")
        meta = {"digest": k.inputs_digest()}
        try:
            res = run_kernel(k, backend)
            if isinstance(k.cmp, AnyOf):
                again = [run_kernel(k, backend, seed=s) for s in range(1, k.cmp.gpu_runs)]
                runs = [int(r["outputs"][0].ravel()[0]) for r in [res] + again]
                meta["runs"] = runs
                bad = [v for v in runs if v not in k.cmp.outcomes]
                if bad:
                    meta["error"] = f"the GPU gave {bad[0]}, not among the allowed outcomes {k.cmp.outcomes}"
            if isinstance(k.cmp, Check):
                err = k.cmp.fn(res["outputs"], k)
                if err:
                    meta["error"] = f"the GPU's own result fails the check: {err}"
        except Exception as e:  # noqa: BLE001
            meta["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            res = {"outputs": [], "printf": ""}
            np.savez(out_dir / f"{name}.npz", __meta__=np.frombuffer(json.dumps(
                dict(meta, n_outputs=0, printf="")).encode(), np.uint8))
            (out_dir / f"{name}.started").unlink()
            if "cuda" in type(e).__module__.lower() or "CUDA" in str(e):
                sys.exit(4)
            continue
        meta.update(n_outputs=len(res["outputs"]), printf=res["printf"])
        np.savez(out_dir / f"{name}.npz", __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                 **{f"o{j}": o for j, o in enumerate(res["outputs"])})
        (out_dir / f"{name}.started").unlink()


def _gpu_header(backend: str) -> dict:
    if backend == "emu":
        from ..compile import nvrtc_version
        return {"gpu": "bwlab.emu (dry run: checks the recorder, not the emulator)", "cc": "-", "nvidia_smi": "",
                "cupy": "-", "nvrtc": list(nvrtc_version()), "arch": "sm_90a",
                "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "numpy": np.__version__}
    import cupy as cp
    props = cp.cuda.runtime.getDeviceProperties(0)
    drv = cp.cuda.runtime.driverGetVersion()
    rt = cp.cuda.runtime.runtimeGetVersion()
    from ..compile import nvrtc_version
    smi = ""
    try:
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return {"gpu": props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"]),
            "cc": f"{props['major']}.{props['minor']}", "nvidia_smi": smi,
            "driver_api": drv, "cuda_runtime": rt, "cupy": cp.__version__, "nvrtc": list(nvrtc_version()),
            "arch": "sm_90a", "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "numpy": np.__version__}


def record(out_dir: Path, names: list | None, say, backend: str = "gpu") -> int:
    """Record every kernel (or `names`) on this GPU into out_dir, one worker process per chapter.
    backend="emu" runs the same path through the emulator: a dry run of the recorder."""
    out_dir.mkdir(parents=True, exist_ok=True)
    header = _gpu_header(backend)
    say(f"recording on {header['gpu']} (cc {header['cc']}, {header['nvidia_smi']}), cupy {header['cupy']}, "
        f"NVRTC {header['nvrtc']}")
    wanted = [k for k in KERNELS if names is None or k.name in names or k.chapter in names]
    failures = 0
    for chapter in CHAPTERS:
        todo = [k.name for k in wanted if k.chapter == chapter]
        if not todo:
            continue
        t0 = time.time()
        with tempfile.TemporaryDirectory() as td:
            tdp = Path(td)
            while todo:
                code = ("import sys; from pathlib import Path; "
                        "from bwlab.checks.emu_corpus import _record_chapter as r; "
                        "r(sys.argv[1], sys.argv[4:], Path(sys.argv[2]), sys.argv[3])")
                p = subprocess.Popen([sys.executable, "-c", code, chapter, td, backend, *todo],
                                     cwd=str(ROOT), env=dict(os.environ, PYTHONPATH=str(ROOT)))
                try:
                    p.wait(timeout=90 if backend == "gpu" else 1200)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                started = [n for n in todo if (tdp / f"{n}.started").exists()]
                for n in started:  # a hang or a crash: that kernel failed on the GPU
                    np.savez(tdp / f"{n}.npz", __meta__=np.frombuffer(json.dumps(
                        {"digest": BY_NAME[n].inputs_digest(), "n_outputs": 0, "printf": "",
                         "error": f"the worker died or hung (exit {p.returncode})"}).encode(), np.uint8))
                    (tdp / f"{n}.started").unlink()
                todo = [n for n in todo if not (tdp / f"{n}.npz").exists()]
            merged, meta = {}, {}
            for k in wanted:
                if k.chapter != chapter:
                    continue
                z = np.load(tdp / f"{k.name}.npz")
                m = json.loads(bytes(z["__meta__"]).decode())
                meta[k.name] = m
                for j in range(m["n_outputs"]):
                    merged[f"{k.name}.{j}"] = z[f"o{j}"]
                if m.get("error"):
                    failures += 1
                    say(f"  GPU FAILED {k.name}: {m['error']}")
            old = {}
            if names is not None and (out_dir / f"{chapter}.npz").exists():  # keep the others' recordings
                z = np.load(out_dir / f"{chapter}.npz")
                old_meta = json.loads(bytes(z["__meta__"]).decode())
                for n, m in old_meta.items():
                    if n not in meta and n in BY_NAME:
                        meta[n] = m
                        for j in range(m["n_outputs"]):
                            old[f"{n}.{j}"] = z[f"{n}.{j}"]
            np.savez_compressed(out_dir / f"{chapter}.npz", __meta__=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                                **old, **merged)
        say(f"  {chapter:<11} {len([k for k in wanted if k.chapter == chapter]):>3} kernels recorded "
            f"in {time.time() - t0:.1f} s")
    header["kernels"] = len(KERNELS)
    (out_dir / "header.json").write_text(json.dumps(header, indent=1) + "\n")
    say(f"{len(wanted)} kernels, {failures} failed on the GPU; recordings in {out_dir}")
    return failures


def _nvrtc() -> tuple:
    from ..compile import nvrtc_version
    return nvrtc_version()


def compare_all(where: Path, names: list | None, say) -> dict:
    """Run every recorded kernel in the emulator; print a table per chapter; {kernel: (status, detail)}."""
    header = json.loads((Path(where) / "header.json").read_text()) if (Path(where) / "header.json").exists() else {}
    say(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: bwlab.emu vs the recordings made on "
        f"{header.get('gpu', '?')} (driver {header.get('nvidia_smi', '?').split(', ')[-1]}, CUDA runtime "
        f"{header.get('cuda_runtime', '?')}, cupy {header.get('cupy', '?')}, NVRTC {header.get('nvrtc', '?')}) on "
        f"{header.get('date', '?')}; emulator side: NVRTC {'.'.join(map(str, _nvrtc()))}, numpy {np.__version__}")
    results = {}
    for chapter in CHAPTERS:
        ks = [k for k in KERNELS if k.chapter == chapter and (names is None or k.name in names or chapter in names)]
        if not ks:
            continue
        rec = load_recording(chapter, where)
        say(f"\n== {chapter}")
        for k in ks:
            t0 = time.perf_counter()
            if k.name not in rec:
                st, detail = "stale", "not recorded: re-record on a GPU"
            else:
                st, detail = emulator_result(k, rec[k.name])
            results[k.name] = (st, detail)
            label = {"match": "match", "differ": "DIFFER", "unsupported": "not modelled", "error": "GPU error",
                     "stale": "stale"}[st]
            known = " (known)" if k.name in KNOWN_DIFFERENCES else ""
            say(f"  {k.name:<30} {label:<12}{known} {time.perf_counter() - t0:5.2f}s  {detail}")
    say("\nper chapter: match / differ / not modelled / other")
    tot = [0, 0, 0, 0]
    for chapter in CHAPTERS:
        sts = [results[k.name][0] for k in KERNELS if k.name in results and k.chapter == chapter]
        if not sts:
            continue
        row = [sts.count("match"), sts.count("differ"), sts.count("unsupported"),
               len(sts) - sts.count("match") - sts.count("differ") - sts.count("unsupported")]
        tot = [a + b for a, b in zip(tot, row)]
        say(f"  {chapter:<11} {row[0]:>4} {row[1]:>4} {row[2]:>4} {row[3]:>4}")
    say(f"  {'total':<11} {tot[0]:>4} {tot[1]:>4} {tot[2]:>4} {tot[3]:>4}   ({len(results)} kernels)")
    return results


def validate_main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bwlab.validate emu-corpus", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", action="store_true", help="run the emulator against the recordings (no GPU)")
    ap.add_argument("--out-dir", default=str(RECORDINGS), help="where recordings are written (recording)")
    ap.add_argument("--against", default=str(RECORDINGS), help="recordings to compare with (--compare)")
    ap.add_argument("--only", nargs="*", help="kernel or chapter names")
    ap.add_argument("--out", help="also write the report to this file")
    ap.add_argument("--dry-run-emulator", action="store_true",
                    help="record through bwlab.emu instead of a GPU (checks the recorder itself, anywhere)")
    args = ap.parse_args(argv)
    from .common import EXIT_MISMATCH, EXIT_NO_GPU, EXIT_PASS, Report
    say = Report()
    unknown = [n for n in (args.only or []) if n not in BY_NAME and n not in CHAPTERS]
    if unknown:
        ap.error(f"--only: {', '.join(unknown)} is neither a corpus kernel nor a chapter")
    if args.compare:
        res = compare_all(Path(args.against), args.only, say)
        unexpected = [n for n, (st, _) in res.items() if (st == "match") == (n in KNOWN_DIFFERENCES)]
        say(f"\n{len(unexpected)} kernels disagree with KNOWN_DIFFERENCES" +
            (": " + ", ".join(unexpected) if unexpected else ""))
        say("command: python -m bwlab.validate emu-corpus " + " ".join(argv if argv is not None else sys.argv[2:]))
        say.save(args.out)
        return EXIT_MISMATCH if unexpected else EXIT_PASS
    if args.dry_run_emulator:
        if Path(args.out_dir).resolve() == RECORDINGS.resolve():
            ap.error("--dry-run-emulator needs --out-dir elsewhere: it must not overwrite the GPU recordings")
        failed = record(Path(args.out_dir), args.only, say, backend="emu")
        say.save(args.out)
        return EXIT_MISMATCH if failed else EXIT_PASS
    from .. import device
    if not device.has_gpu():
        say("emu-corpus records on a GPU; none here (use --compare to run the emulator against the recordings)")
        return EXIT_NO_GPU
    failed = record(Path(args.out_dir), args.only, say)
    say.save(args.out)
    return EXIT_MISMATCH if failed else EXIT_PASS
