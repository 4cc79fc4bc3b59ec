"""Running a corpus kernel: on the GPU through CuPy, or in bwlab.emu; the same arguments, the same outputs."""
from __future__ import annotations

import contextlib
import ctypes
import io
import os
import sys
import tempfile
import warnings

import numpy as np

from .manifest import In, InOut, Kernel, Out, compiled


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
            from ...compile import Module
            _MODULES[key] = Module(comp)
        else:
            from ... import emu
            _MODULES[key] = emu.RawModule(ptx=only_entry(comp.ptx, k.name), name=f"{k.chapter}.cu")
    return _MODULES[key]


@contextlib.contextmanager
def capture_stdout(sink: list):
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
        from ... import emu as xp
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
    with capture_stdout(text):
        if backend == "gpu":
            fn(k.grid, k.block, tuple(args), shared_mem=k.shared)  # (seed: the GPU picks its own order)
            xp.cuda.Device().synchronize()
        else:  # the emulator's NumPy warns on NaN/inf lanes; that is not the kernel's business
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                fn(k.grid, k.block, tuple(args), shared_mem=k.shared, seed=seed, max_steps=k.max_steps)
    return {"outputs": [np.asarray(o.get()) for o in outs], "printf": text[0]}


