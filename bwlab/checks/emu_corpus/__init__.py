"""A corpus of small, ordinary CUDA kernels recorded on a GPU, against which `bwlab.emu` is compared.

    python -m bwlab.validate emu-corpus [--out-dir DIR] [--only NAME ...]     (on a GPU: records)
    python -m bwlab.validate emu-corpus --compare [--against DIR] [--out FILE] (anywhere: the emulator)

The kernels live in `cuda_src/corpus/<chapter>.cu`, written as an outside author writes CUDA (the
math API, cuda_fp16.h/cuda_bf16.h, warp intrinsics, atomics, printf, a little inline PTX where
ordinary code reaches an instruction only that way). This package is their manifest: for each kernel
its chapter, launch shape, inputs (seeded NumPy plus explicit edge values: ties, subnormals, NaN
payloads, signed zeros, infinities, INT_MIN/LLONG_MIN, shift counts past the width, diverged
warps), its outputs, and how a run is compared with the recording:

* `Bytes`     - every output byte for byte;
* `Within`    - an `.approx` result: within the distance measured between the emulator's rule and an
                H200 over every input of the instruction (docs/results/approx_h200.txt; composed for
                a chain of them), special values (NaN, infinities, zero sign) exactly;
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

The package, by concern: `manifest` (chapters, argument and comparison kinds, `Kernel`), `inputs` (edge
values and seeded generators), `arith` and `threads` (the kernels, a group of chapters each), `kernels`
(all of them in order, `KNOWN_DIFFERENCES`), `running` (one run on the GPU or in the emulator),
`recordings` (reading a recording, comparing a run with it) and `command` (the command line).
"""

from .command import compare_all, record, validate_main
from .kernels import BY_NAME, KNOWN_DIFFERENCES
from .manifest import (CHAPTERS, KERNELS, NEEDS_CUDA_HEADERS, RECORDINGS, ROOT, SOURCES, AnyOf, Bytes, Check, In,
                       InOut, Kernel, Out, Printf, Sorted, Val, Within, compiled, cuda_include_dirs)
from .recordings import compare, emulator_result, load_recording
from .running import only_entry, run_kernel
from .threads import _check_exch_chain, _check_float_order  # noqa: F401 - the order checks, tested directly

__all__ = ["KERNELS", "BY_NAME", "CHAPTERS", "KNOWN_DIFFERENCES", "Kernel", "In", "Out", "InOut", "Val",
           "Bytes", "Within", "Printf", "Sorted", "Check", "AnyOf", "RECORDINGS", "run_kernel", "compare",
           "load_recording", "emulator_result", "validate_main", "cuda_include_dirs"]
