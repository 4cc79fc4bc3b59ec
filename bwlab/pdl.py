"""Programmatic dependent launch (PDL): a kernel launched through the driver's cuLaunchKernelEx with the
attribute CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION may start while the kernel before it
in the stream still runs. What it may do before that kernel has finished is up to its own code: PTX's
`griddepcontrol.wait` (sm_90 on) blocks a thread until the grids it depends on have completed and
their memory is visible; `griddepcontrol.launch_dependents` lets the next grid be scheduled before
this one ends. A kernel without either is still correct under PDL only if it reads nothing the
kernel before writes: the attribute alone removes the wait.

    from bwlab import pdl
    go = pdl.launcher(fn, grid, block, args, shared_mem=smem)   # fn: a CuPy kernel (RawKernel or module function)
    go()                                                          # one launch on CuPy's current stream

CuPy launches with cuLaunchKernel, which takes no launch attributes, so this goes to the driver
through cuda.bindings (cuda-python): the CUfunction is CuPy's, the arguments are packed here the way
CuPy packs them (device arrays as their pointers, NumPy scalars and records as their bytes). Where
cuda.bindings or the driver lacks cuLaunchKernelEx or the attribute, `launcher` raises PdlUnavailable
saying which; callers fall back to a plain launch and say so. The PTX emulator runs one grid at a
time and treats griddepcontrol as a no-op, so what it checks is the kernel with the dependency
already met.
"""
from __future__ import annotations

import ctypes

import numpy as np

__all__ = ["PdlUnavailable", "launcher", "pack_args", "driver"]


class PdlUnavailable(RuntimeError):
    """Programmatic dependent launch is not available here (the message says what is missing)."""


def driver():
    """cuda.bindings.driver (cuda-python 12.3 on), or the older cuda.cuda; PdlUnavailable if neither
    has cuLaunchKernelEx and the PDL attribute."""
    try:
        from cuda.bindings import driver as drv
    except ImportError:
        try:
            from cuda import cuda as drv   # cuda-python before 12.3
        except ImportError as e:
            raise PdlUnavailable(f"programmatic dependent launch needs cuda-python (cuda.bindings) for "
                                 f"cuLaunchKernelEx; it is not installed ({e})") from None
    missing = [n for n in ("cuLaunchKernelEx", "CUlaunchConfig", "CUlaunchAttribute") if not hasattr(drv, n)]
    if not missing and not hasattr(drv.CUlaunchAttributeID, "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION"):
        missing.append("CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION")
    if missing:
        raise PdlUnavailable(f"programmatic dependent launch: this cuda-python ({drv.__name__}) lacks "
                             f"{', '.join(missing)} (CUDA 11.8 / cuda-python 11.8 on)")
    return drv


def pack_args(args) -> tuple:
    """Each kernel argument as the bytes the kernel receives: a device array (anything with .data.ptr)
    as its 8-byte pointer, a NumPy scalar or record (a tensor map) as its bytes. Returns (the void**
    array, the buffers it points to): keep both alive while launches may read them."""
    bufs = []
    for i, a in enumerate(args):
        if hasattr(a, "data") and hasattr(a.data, "ptr"):
            raw = np.uint64(a.data.ptr).tobytes()
        elif isinstance(a, np.generic):   # np.int32(...), np.uint64(...), a tensor map's record (np.void)
            raw = a.tobytes()
        else:
            raise TypeError(f"kernel argument {i}: {type(a).__name__}; a PDL launch takes device arrays and NumPy "
                            "scalars or records (np.int32(...), a tensor map), the types CuPy would pass by size")
        bufs.append(ctypes.create_string_buffer(raw, len(raw)))
    ptrs = (ctypes.c_void_p * max(1, len(bufs)))(*[ctypes.addressof(b) for b in bufs])
    return ptrs, bufs


def _function_ptr(fn) -> int:
    """The CUfunction of a CuPy kernel: a RawKernel (compiled on first use) or a module's function."""
    k = getattr(fn, "kernel", fn)
    ptr = getattr(k, "ptr", None)
    if not isinstance(ptr, int) or ptr == 0:
        raise TypeError(f"{type(fn).__name__}: not a CuPy kernel with a CUfunction (.ptr or .kernel.ptr)")
    return ptr


def launcher(fn, grid, block, args, shared_mem: int = 0, stream=None, pdl: bool = True, drv=None):
    """A zero-argument callable that launches `fn` on `stream` (default: CuPy's current stream, read at
    each call) with the programmatic-stream-serialization attribute (`pdl`; False: the same path
    without it). The kernel's compile-time cluster shape applies as in any launch."""
    drv = drv or driver()
    grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
    block = tuple(block) + (1,) * (3 - len(tuple(block)))
    f = drv.CUfunction(_function_ptr(fn))
    ptrs, bufs = pack_args(args)
    conf = drv.CUlaunchConfig()
    conf.gridDimX, conf.gridDimY, conf.gridDimZ = (int(g) for g in grid)
    conf.blockDimX, conf.blockDimY, conf.blockDimZ = (int(b) for b in block)
    conf.sharedMemBytes = int(shared_mem)
    if pdl:
        attr = drv.CUlaunchAttribute()
        attr.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        conf.attrs = [attr]
        conf.numAttrs = 1
    else:
        conf.numAttrs = 0
    address = ctypes.addressof(ptrs)

    last = [None]

    def go():
        if stream is None:
            import cupy as cp
            s = cp.cuda.get_current_stream().ptr
        else:
            s = int(stream)
        if s != last[0]:
            conf.hStream, last[0] = drv.CUstream(s), s
        err = drv.cuLaunchKernelEx(conf, f, address, 0)[0]
        if int(err) != 0:
            try:
                name = drv.cuGetErrorName(err)[1].decode()
            except Exception:   # no driver to name it: the enum's own name
                name = getattr(err, "name", err)
            raise RuntimeError(f"cuLaunchKernelEx{' with programmatic stream serialization' if pdl else ''} "
                               f"failed: {name!r} (grid {grid}, block {block}, {shared_mem} B of SMEM)")

    go.keep = (ptrs, bufs, f, conf)
    go.pdl = pdl
    return go
