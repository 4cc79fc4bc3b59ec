"""The host side, shaped like CuPy's: modules, kernels, device arrays.

    mod = bwlab.emu.RawModule(code=src, options=("-DX=1",))      # NVRTC -> PTX, decoded once
    k = mod.get_function("teach_tma_load")
    out = bwlab.emu.zeros(4096, np.uint8)
    k((1,), (128,), (tmap_arg, np.int32(0), np.int32(0), np.uint32(4096), out), shared_mem=0)
    out.get()

Arguments are marshalled as CuPy does: device arrays as their pointer, NumPy scalars by their own
type, Python ints as 64-bit integers and floats as doubles, NumPy void records (a 128-byte tensor map
from `bwlab.runtime.tensor_map_arg`) as their bytes; each must have the size of the kernel's
parameter, or the call raises before anything runs.
"""
from __future__ import annotations

import os
import warnings

import numpy as np

from .errors import ApproxNote, EmuError, UnsupportedInstruction
from .machine import Launch
from .memory import UNWRITTEN, device_memory
from .program import Program

__all__ = ["RawModule", "Function", "ndarray", "asarray", "zeros", "empty", "full", "asnumpy", "Global",
           "last_launch"]

_LAST = [None]


def last_launch():
    """The most recent `Launch` (its trace, its stall reports), or None."""
    return _LAST[0]


class _Data:
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


class ndarray:
    """A device array in the emulator's memory (`.data.ptr` like CuPy's). Basic 1-D slices with step
    1 are views that share the memory, as CuPy's are."""

    def __init__(self, shape, dtype, alloc=None, offset: int = 0, owner: bool = True):
        self.dtype = np.dtype(dtype)
        self.shape = tuple(int(s) for s in (shape if isinstance(shape, (tuple, list)) else (shape,)))
        self.size = int(np.prod(self.shape)) if self.shape else 1
        self.nbytes = self.size * self.dtype.itemsize
        self._alloc = alloc or device_memory().alloc(self.nbytes, f"{self.dtype}{list(self.shape)}")
        self._offset = int(offset)
        self._owner = owner and alloc is None
        self.data = _Data(self._alloc.base + self._offset)

    @property
    def ptr(self) -> int:
        return self._alloc.base + self._offset

    def _view(self) -> np.ndarray:
        return self._alloc.buf[self._offset:self._offset + self.nbytes].view(self.dtype).reshape(self.shape)

    def __getitem__(self, key):
        if len(self.shape) != 1 or not isinstance(key, slice) or key.step not in (None, 1):
            raise IndexError("emulator arrays support 1-D slices a[lo:hi] only")
        lo, hi, _ = key.indices(self.shape[0])
        hi = max(hi, lo)
        return ndarray((hi - lo,), self.dtype, self._alloc, self._offset + lo * self.dtype.itemsize, owner=False)

    def get(self) -> np.ndarray:
        return self._view().copy()

    def set(self, arr) -> None:
        self._view()[...] = np.asarray(arr, self.dtype).reshape(self.shape)

    def fill(self, value) -> None:
        self._view()[...] = value

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return ndarray(np.empty(self.shape, np.uint8).reshape(shape).shape, self.dtype, self._alloc, self._offset,
                       owner=False)

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        return f"bwlab.emu.ndarray(shape={self.shape}, dtype={self.dtype}, ptr=0x{self.ptr:x})"

    def __array__(self, dtype=None, copy=None):
        a = self.get()
        return a if dtype is None else a.astype(dtype)

    def __del__(self):
        if getattr(self, "_owner", False):
            try:
                device_memory().free(self._alloc)
            except Exception:  # pragma: no cover - interpreter shutdown
                pass


def asarray(a, dtype=None) -> ndarray:
    if isinstance(a, ndarray):
        return a
    h = np.ascontiguousarray(np.asarray(a, dtype=dtype))
    d = ndarray(h.shape, h.dtype)
    d.set(h)
    return d


def zeros(shape, dtype=np.float32) -> ndarray:
    return ndarray(shape, dtype)


def empty(shape, dtype=np.float32) -> ndarray:
    # deliberately not zero: a kernel that reads what it never wrote shows it
    d = ndarray(shape, dtype)
    d._alloc.buf[:] = UNWRITTEN
    return d


def full(shape, value, dtype=np.float32) -> ndarray:
    d = ndarray(shape, dtype)
    d.fill(value)
    return d


def asnumpy(a) -> np.ndarray:
    return a.get() if isinstance(a, ndarray) else np.asarray(a)


class Global:
    """A module-scope `__device__` variable: `.ptr` is its device address."""

    def __init__(self, alloc):
        self._alloc = alloc
        self.ptr = alloc.base

    def get(self, dtype=np.uint8) -> np.ndarray:
        return self._alloc.buf.view(dtype).copy()


class RawModule:
    """`cupy.RawModule` for the emulator: compile CUDA source with NVRTC for sm_90a (or `arch`),
    decode its PTX once, and hand out kernels that run in the emulator.

    Either `code` (CUDA C++ source) or `ptx` (PTX text) is given. `compiled` takes a
    `bwlab.compile.Compiled` directly (what `bwlab.lab` and the stage runners build)."""

    def __init__(self, code: str | None = None, options=(), name_expressions=(), *, arch: str = "sm_90a",
                 ptx: str | None = None, compiled=None, name: str = "kernel.cu"):
        if compiled is None and ptx is None:
            if code is None:
                raise ValueError("RawModule needs code= (CUDA source) or ptx=")
            from ..compile import compile_text
            defines = {}
            extra = []
            for o in options:
                if o.startswith("-D"):
                    k, _, v = o[2:].partition("=")
                    defines[k] = v if v else None
                else:
                    extra.append(o)
            if "--generate-line-info" not in extra and "-lineinfo" not in extra:
                extra.append("--generate-line-info")
            compiled = compile_text(code, name, arch=arch, defines=defines or None,
                                    name_expressions=tuple(name_expressions), extra_options=tuple(extra))
        self.compiled = compiled
        self.memory = device_memory()
        self._globals = {}
        text = ptx if ptx is not None else compiled.ptx
        self.program = Program(text, self._global_alloc)
        self.lowered = dict(getattr(compiled, "lowered_names", None) or getattr(compiled, "lowered", None) or {})

    def _global_alloc(self, var) -> int:
        a = self.memory.alloc(max(var.size, 1), f"__device__ {var.name}")
        if var.init:
            a.buf[:len(var.init)] = np.frombuffer(var.init, np.uint8)
        self._globals[var.name] = a
        return a.base

    @property
    def kernels(self) -> list:
        return self.program.module.entries

    def get_function(self, name: str) -> "Function":
        name = self.lowered.get(name, name)
        if name not in self.program.entry_pc:
            raise AttributeError(f"the module has no kernel {name!r} (it has {', '.join(self.kernels)})")
        refused = self.program.unsupported.get(name)
        if refused is not None:
            raise UnsupportedInstruction(str(refused))
        _note_approximate(self.program, name)
        return Function(self, name)

    def get_global(self, name: str) -> Global:
        if name not in self._globals:
            raise AttributeError(f"the module has no __device__ variable {name!r}")
        return Global(self._globals[name])


def _reachable(program, name) -> set:
    """The functions kernel `name` may execute: itself and what its calls reach, transitively; a call
    through a register (a function pointer) may reach any function of the module."""
    funcs = program.module.functions
    seen, todo = {name}, [name]
    while todo:
        f = funcs.get(todo.pop())
        for ins in (f.body if f is not None else ()):
            if not ins.op.startswith("call"):
                continue
            target = getattr(ins, "label", None) or ""
            if target.startswith("%"):
                return {n for n, g in funcs.items() if not g.entry} | {name}
            if target in funcs and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def _note_approximate(program, name):
    """Never silently exact: a kernel using approximate instructions (in its body or a function it may
    call) is told, once per kernel and instruction, how close the emulator's results of those are."""
    ops = {}
    reach = _reachable(program, name)
    for fname, found in program.approximate.items():
        if fname in reach:
            for op, line in found.items():
                ops.setdefault(op, line)
    if not ops:
        return
    from ..hw.approx import bound_words
    lines = []
    for op, line in sorted(ops.items()):
        parts = op.split(".")
        lines.append(f"  PTX line {line}: " + bound_words(parts[0], parts[-1], tuple(parts[1:-1])))
    warnings.warn(ApproxNote(f"kernel {name} uses approximate instructions; the emulator computes them as "
                             "bwlab.hw.approx models an H200's multi-function unit:\n" + "\n".join(lines)),
                  stacklevel=3)


class Function:
    """One kernel; call it as CuPy's RawKernel: `f(grid, block, args, shared_mem=0)`."""

    def __init__(self, module: RawModule, name: str):
        self.module, self.name = module, name
        self.max_dynamic_shared_size_bytes = 48 * 1024
        # the scheduler's seed: 0, or BWLAB_EMU_SEED (validate emu --seed runs the suite under other interleavings)
        self.seed = int(os.environ.get("BWLAB_EMU_SEED", "0"))
        self.trace = False

    def params(self) -> bytes:
        return b""

    def _marshal(self, args) -> bytes:
        plist = self.module.program.kparams[self.name]
        if len(args) != len(plist):
            raise EmuError(f"{self.name} takes {len(plist)} arguments, got {len(args)}")
        buf = bytearray(self.module.program.kparam_size[self.name])
        for k, (a, (pname, off, size, ty)) in enumerate(zip(args, plist)):
            raw = _arg_bytes(a)
            if len(raw) != size:
                raise EmuError(f"{self.name}: argument {k} is {len(raw)} bytes ({type(a).__name__}); the kernel's "
                               f"parameter {k} is .{ty} of {size} bytes — pass a NumPy scalar of the right type")
            buf[off:off + size] = raw
        return bytes(buf)

    def __call__(self, grid, block, args, shared_mem: int = 0, *, cluster=None, seed=None, trace=None,
                 max_steps: int = 20_000_000, timing=None):
        grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
        block = tuple(block) + (1,) * (3 - len(tuple(block)))
        if any(int(g) < 1 for g in grid) or any(int(b) < 1 for b in block):
            raise EmuError(f"grid {grid} and block {block} must be positive")
        if block[0] * block[1] * block[2] > 1024:
            raise EmuError(f"a CTA has at most 1024 threads, got block {block}")
        if shared_mem > 48 * 1024 and shared_mem > self.max_dynamic_shared_size_bytes:
            raise EmuError(f"{shared_mem} bytes of dynamic shared memory need max_dynamic_shared_size_bytes set "
                           "first (cudaFuncSetAttribute), as on the GPU")
        launch = Launch(self.module, self.name, grid, block, self._marshal(tuple(args)), shared_mem, cluster,
                        seed=self.seed if seed is None else seed, trace=self.trace if trace is None else trace,
                        max_steps=max_steps, timing=timing)
        _LAST[0] = launch
        try:
            launch.run()
        finally:   # printf: the device's buffer is flushed at synchronisation (here: the launch's end)
            lines = getattr(launch, "printf", None)
            if lines:
                import sys
                sys.stdout.write("".join(lines))
                sys.stdout.flush()
        return launch


def _arg_bytes(a) -> bytes:
    if isinstance(a, ndarray):
        return int(a.ptr).to_bytes(8, "little")
    if hasattr(a, "data") and hasattr(a.data, "ptr") and not isinstance(a, np.ndarray):
        return int(a.data.ptr).to_bytes(8, "little")
    if isinstance(a, np.void):
        return bytes(a.tobytes())
    if isinstance(a, np.generic):
        return a.tobytes()
    if isinstance(a, bool):
        return bytes([int(a)])
    if isinstance(a, int):
        return int(a & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little")
    if isinstance(a, float):
        return np.float64(a).tobytes()
    if isinstance(a, (bytes, bytearray)):
        return bytes(a)
    raise EmuError(f"cannot pass a {type(a).__name__} to a kernel")
