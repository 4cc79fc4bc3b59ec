"""Run a learner's kernel where it cannot take the notebook down.

A bounded mbarrier wait turns a missing arrival into `MbarrierTimeout` and the next launch works. Two
failures are worse: an illegal memory access poisons the process's CUDA context (every later launch fails
until the process restarts), and a hang that no mbarrier bounds (a spin loop, a divergent
`__syncthreads`) never returns. `run_isolated(fn, ...)` therefore runs `fn` in a fresh worker process
with its own CUDA context and a wall-clock limit counted from the moment the worker is ready to launch:

* `fn` returns              -> its (picklable) result comes back;
* `fn` raises               -> the same exception type is raised here when it is a bwlab error
                               (MbarrierTimeout, CompileError, ValueError...), with the worker's message;
* a CUDA error in `fn`      -> `KernelFault` naming the kernel and the error; the worker is discarded;
* no result within `limit`  -> `KernelHang`; the worker is killed (the driver ends its kernels with it).

The notebook's own CUDA context is never touched, so it stays usable. Where `compute-sanitizer` is
installed, `where_is_fault(...)` re-runs the failing call under it and returns its report (which kernel,
which thread, which address).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import time

__all__ = ["KernelFault", "KernelHang", "run_isolated", "in_worker", "where_is_fault", "CUDA_ERROR_MARKERS"]

CUDA_ERROR_MARKERS = ("cudaError", "CUDA_ERROR", "CUDARuntimeError", "CUDADriverError", "CUresult")


class KernelFault(RuntimeError):
    """The kernel faulted (e.g. an illegal address); the worker process and its CUDA context are gone.
    Your notebook's GPU context is fine."""

    def __init__(self, kernel: str, error: str, report: str | None = None):
        self.kernel, self.error, self.report = kernel, error, report
        msg = (f"{kernel}: the GPU reported a fault: {error}. It ran in a worker process, which was "
               f"discarded; this notebook's CUDA context is unaffected, so you can fix the kernel and run again.")
        if report:
            msg += "\n" + report
        super().__init__(msg)


class KernelHang(RuntimeError):
    """The kernel did not finish within the limit; the worker process was killed."""

    def __init__(self, kernel: str, limit: float):
        self.kernel, self.limit = kernel, limit
        super().__init__(f"{kernel}: no result {limit:g} s after launch (a wait that nothing bounds: a spin "
                         f"loop, a __syncthreads() not every thread reaches, an mbarrier waited on without "
                         f"bwlab's bounded wait?). The worker process was stopped; this notebook's CUDA "
                         f"context is unaffected.")


def _is_cuda_error(e: BaseException) -> bool:
    text = f"{type(e).__module__}.{type(e).__name__}: {e}"
    return any(m in text for m in CUDA_ERROR_MARKERS)


WORKER_ENV = "BWLAB_SANDBOX_WORKER"


def in_worker() -> bool:
    """True inside a worker process of `run_isolated` (a runner then launches directly)."""
    return os.environ.get(WORKER_ENV) == "1"


def _attrs(e: BaseException) -> dict:
    """The exception's attributes that survive pickling (MbarrierTimeout's barrier, expected_tx ...)."""
    import pickle
    out = {}
    for k, v in vars(e).items():
        try:
            pickle.dumps(v)
            out[k] = v
        except Exception:
            pass
    return out


def _worker(conn, fn, args, kwargs):
    os.environ[WORKER_ENV] = "1"
    try:
        conn.send(("ready", None))
        result = fn(*args, **kwargs)
        conn.send(("ok", result))
    except BaseException as e:  # everything goes back to the parent as data
        kind = "fault" if _is_cuda_error(e) else "error"
        try:
            conn.send((kind, (type(e).__module__, type(e).__name__, str(e), _attrs(e))))
        except Exception:
            conn.send((kind, ("builtins", "RuntimeError", repr(e), {})))
    finally:
        conn.close()


def _rebuild(module: str, name: str, message: str, attrs: dict) -> BaseException:
    """The worker's exception as the same type, with its message and attributes."""
    import importlib
    try:
        cls = getattr(importlib.import_module(module), name)
        if issubclass(cls, BaseException):
            try:
                e = cls.__new__(cls)
                BaseException.__init__(e, message)
                e.__dict__.update(attrs)
                return e
            except Exception:
                pass
    except Exception:
        pass
    return RuntimeError(f"{name}: {message}")


def run_isolated(fn, *args, name: str | None = None, limit: float = 2.0, start_timeout: float = 120.0,
                 **kwargs):
    """`fn(*args, **kwargs)` in a fresh worker process; see the module docstring.

    `limit` counts from the worker's "ready" (imports done, before `fn` runs), so it bounds the launch
    and not Python's start-up. Compile the kernel in the calling process first (NVRTC's disk cache then
    makes the worker's build instant), so that the limit measures the launch. `fn` and its arguments must be picklable (module-level functions,
    NumPy arrays, bwlab parameter objects, a `TeachingKernel`).
    """
    name = name or getattr(fn, "__name__", "kernel")
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_worker, args=(child, fn, args, kwargs), daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(start_timeout):
            raise KernelHang(name, start_timeout)
        try:
            parent.recv()  # "ready"
        except EOFError:
            raise KernelFault(name, f"the worker process ended before running (exit code {proc.exitcode})")
        if not parent.poll(limit):
            raise KernelHang(name, limit)
        try:
            kind, payload = parent.recv()
        except EOFError:
            proc.join(1)
            raise KernelFault(name, f"the worker process died (exit code {proc.exitcode})")
        if kind == "ok":
            return payload
        module, cls, message, attrs = payload
        if kind == "fault":
            raise KernelFault(name, f"{cls}: {message}")
        raise _rebuild(module, cls, message, attrs)
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        parent.close()


def where_is_fault(command: list[str], timeout: float = 120.0) -> str | None:
    """Run `command` (a Python invocation that repeats the failing launch) under compute-sanitizer's
    memcheck and return the lines that say where the fault is; None where compute-sanitizer is absent."""
    import subprocess
    tool = shutil.which("compute-sanitizer") or (
        "/usr/local/cuda/bin/compute-sanitizer" if os.path.exists("/usr/local/cuda/bin/compute-sanitizer") else None)
    if tool is None:
        return None
    t0 = time.perf_counter()
    r = subprocess.run([tool, "--tool", "memcheck", "--print-limit", "4", *command], capture_output=True,
                       text=True, timeout=timeout)
    keep = [l for l in (r.stdout + r.stderr).splitlines()
            if l.startswith("=========") and any(k in l for k in ("Invalid", "at ", "by thread", "Address",
                                                                   "is out of bounds", "ERROR SUMMARY"))]
    return "\n".join(keep[:12]) + f"\n(compute-sanitizer, {time.perf_counter() - t0:.1f} s)"
