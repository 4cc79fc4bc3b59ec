"""Launching bwlab kernels safely, and timing them.

Every kernel includes `cuda_src/ptx.cuh`, whose bounded `mbarrier_wait` writes a record into the
module's `bw_status` global when it gives up (after BW_WAIT_TIMEOUT_NS of %globaltimer) instead of
spinning forever. `launch` clears that record, launches, synchronises and turns a record into an
`MbarrierTimeout` naming the barrier, the phase parity and the transaction bytes that were expected.
The kernel returned normally, so the CUDA context stays usable for the next launch.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np

__all__ = ["MbarrierTimeout", "LaunchConfigError", "launch", "bench", "BenchResult", "STATUS_DTYPE",
           "tensor_map_arg", "encode_tensor_map", "Backend", "backend_for", "GPU", "EMULATED", "runs_on"]

# Mirrors struct BwStatus in cuda_src/ptx/common.cuh (its static_asserts; tests/test_struct_mirrors.py compares).
STATUS_DTYPE = np.dtype([
    ("code", "<u4"), ("barrier_id", "<u4"), ("phase_parity", "<u4"), ("expected_tx", "<u4"),
    ("block_x", "<u4"), ("block_y", "<u4"), ("block_z", "<u4"), ("thread", "<u4"),
    ("cta_rank", "<u4"), ("pad", "<u4"), ("waited_ns", "<u8"),
])

PORTABLE_CLUSTER_SIZE = 8


def _default_wait_limit_ns() -> int:
    """BW_WAIT_TIMEOUT_NS as cuda_src/ptx/common.cuh defines it (a build may define another)."""
    import re
    try:
        from .compile import CUDA_SRC
        m = re.search(r"#define\s+BW_WAIT_TIMEOUT_NS\s+(\d+)", (CUDA_SRC / "ptx" / "common.cuh").read_text())
        return int(m.group(1)) if m else 0
    except OSError:
        return 0


class MbarrierTimeout(RuntimeError):
    """A bounded mbarrier wait in a kernel gave up. Fields name the barrier and what it expected.

    `str(e)` holds everything; its first lines (at most 8, `headline`) say which wait gave up, the bytes
    (what the wait names, and, from the emulator, the tx-count the barrier still waited for: the
    announced bytes minus those that arrived, with its sign), and the real timeout; `details` (the
    emulator's report of every waiting thread) follows. In a notebook the headline is shown and the
    details are folded (an HTML <details>)."""

    def __init__(self, kernel: str, barrier: str, record):
        self.kernel, self.barrier = kernel, barrier
        self.phase_parity = int(record["phase_parity"])
        self.expected_tx = int(record["expected_tx"])
        self.block = (int(record["block_x"]), int(record["block_y"]), int(record["block_z"]))
        self.thread = int(record["thread"])
        self.cta_rank = int(record["cta_rank"])
        self.waited_ns = int(record["waited_ns"])
        self.limit_ns = _default_wait_limit_ns()
        self.tx_left = None          # announced - arrived on the barrier, where the emulator knows it
        self.arrivals_left = None
        self.details = ""
        self.emulated = False
        super().__init__(self._message())

    def _message(self) -> str:
        return self.headline + (("\n" + self.details) if self.details else "")

    @property
    def headline(self) -> str:
        """The first lines of the message (at most 8): which wait gave up, the bytes, the timeout."""
        lines = [f"{self.kernel}: the bounded wait on mbarrier '{self.barrier}' (phase parity {self.phase_parity}) "
                 f"gave up — CTA {self.block}, cluster rank {self.cta_rank}, thread {self.thread}."]
        lines.append(f"  bytes: the kernel expected {self.expected_tx} for this phase (the number its code passes to "
                     "mbarrier_wait for this report; what the barrier counted is below)")
        if self.tx_left is not None:
            d = self.tx_left
            what = ("fewer bytes arrived than arrive.expect_tx announced" if d > 0 else
                    "more bytes arrived than were announced (they count against the next phase)" if d < 0 else
                    "every announced byte arrived")
            lines.append(f"  on the barrier: announced − arrived = {d:+d} bytes ({what})"
                         + (f"; {self.arrivals_left} arrival(s) still missing" if self.arrivals_left else ""))
        limit = f"{self.limit_ns / 1e6:.0f} ms" if self.limit_ns else "BW_WAIT_TIMEOUT_NS"
        if self.emulated:
            lines.append(f"  timeout: the wait's limit is {limit} of %globaltimer (BW_WAIT_TIMEOUT_NS); in the "
                         f"emulator time is virtual and jumps once every thread waits, so it gave up at "
                         f"{self.waited_ns / 1e6:.1f} virtual ms")
        else:
            lines.append(f"  timeout: it waited {self.waited_ns / 1e6:.1f} ms (the limit: {limit}, BW_WAIT_TIMEOUT_NS)")
        if self.tx_left is None or (self.tx_left == 0 and not self.arrivals_left):
            lines.append("  Either fewer bytes arrived than expect_tx announced, or an arrival is missing.")
        return "\n".join(lines)

    def with_emulator_report(self, report: str) -> "MbarrierTimeout":
        """Add what the emulator saw when every thread waited: the barrier's tx-count (announced minus
        arrived) and missing arrivals in the headline, the whole report as details."""
        import re
        self.emulated = True
        m = re.search(rf"on '{re.escape(self.barrier.split(' ')[0])}' of CTA rank {self.cta_rank} .*?"
                      r"(\d+) of \d+ arrivals still missing, (-?\d+) transaction bytes still expected", report)
        if m:
            self.arrivals_left, self.tx_left = int(m.group(1)), int(m.group(2))
        self.details = ("In the emulator, when every thread was waiting (before the bounded waits ran out of "
                        "time):\n" + report)
        self.args = (self._message(),)
        return self

    def _render_traceback_(self):
        """In IPython: the headline as the error, the emulator's report folded below it."""
        if self.details:
            try:
                from IPython.display import HTML, display
                from html import escape
                display(HTML(f"<details><summary>what every thread was doing (the emulator's report)</summary>"
                             f"<pre>{escape(self.details)}</pre></details>"))
            except Exception:
                pass
        return [f"MbarrierTimeout: {line}" if i == 0 else line for i, line in enumerate(self.headline.splitlines())]


class Backend:
    """Where a stage's kernel runs: on this GPU (CuPy) or in the PTX emulator (`bwlab.emu`).

    `xp` is the array module (`asarray`, `zeros`, `asnumpy` and device arrays with `.data.ptr`),
    `load(kernel_or_source, defines)` the module loader, `where` the words a result is labelled with."""

    def __init__(self, name: str):
        self.name = name

    @property
    def emulated(self) -> bool:
        return self.name == "emulated"

    @property
    def xp(self):
        if self.emulated:
            from . import emu
            return emu
        import cupy
        return cupy

    @property
    def where(self) -> str:
        if self.emulated:
            return "the PTX emulator"
        from .device import gpu_info
        info = gpu_info()
        return info.name if info else "the GPU"

    def load(self, kernel, defines: dict | None = None, name_expressions=(), arch: str = "sm_90a"):
        """A loaded module of `kernel` (a `bwlab.lab.TeachingKernel`, or a cuda_src file name). `arch` is
        the target the emulator compiles for (sm_90a, or sm_100a for the tcgen05 kernels); on a GPU the
        module is built for the GPU itself."""
        from .compile import load_module
        if not self.emulated:
            if hasattr(kernel, "load"):
                return kernel.load(defines, name_expressions)
            return load_module(kernel, defines=defines, name_expressions=name_expressions)
        return _emu_module(kernel, defines, tuple(name_expressions), arch)


_EMU_MODULES: dict = {}


def _emu_module(kernel, defines, name_expressions, arch="sm_90a"):
    from . import emu
    from .compile import compile_cuda, compile_text
    text = kernel.text if hasattr(kernel, "text") else None
    name = kernel.file if hasattr(kernel, "file") else str(kernel)
    key = (name, text, tuple(sorted((defines or {}).items())), name_expressions, arch)
    mod = _EMU_MODULES.get(key)
    if mod is None:
        opts = ("--generate-line-info",)
        if text is not None:
            compiled = compile_text(text, name, arch, defines, name_expressions, extra_options=opts)
        else:
            compiled = compile_cuda(kernel, arch, defines, name_expressions, extra_options=opts)
        mod = emu.RawModule(compiled=compiled, name=name)
        if len(_EMU_MODULES) > 64:
            _EMU_MODULES.clear()
        _EMU_MODULES[key] = mod
    return mod


GPU = Backend("gpu")
EMULATED = Backend("emulated")


def backend_for(stage: str) -> Backend:
    """The backend a stage's kernels run on: the GPU in the hardware/hybrid tiers, the emulator in
    the emulated tier; UnsupportedGPU (before any driver call) in the model tier."""
    from . import device
    t = device.tier(stage)
    if t == "emulated":
        return EMULATED
    device.require(stage)
    return GPU


def runs_on(stage: str) -> str | None:
    """Where a stage's kernel runs here, in words for a result's label: this GPU, the PTX emulator, or
    None in the model tier (a notebook then shows a recording)."""
    from . import device
    stage = device.stage_name(stage)
    t = device.tier(stage)
    if t == "emulated":
        arch = "sm_100a" if stage in ("umma", "tmem") else "sm_90a"
        return f"emulated: the kernel's {arch} PTX run by bwlab.emu on the CPU"
    if t in ("hardware", "hybrid") and stage in device.EMULATED_STAGES:
        info = device.gpu_info()
        return f"this GPU ({info.name})" if info else None
    return None


def _is_emu(module) -> bool:
    from .emu.host import RawModule
    return isinstance(module, RawModule)


class LaunchConfigError(ValueError):
    """A launch configuration that the GPU would reject or that breaks a bwlab rule."""


def tensor_map_arg(encoded: bytes | np.ndarray):
    """A 128-byte CUtensorMap as a kernel argument (received as `const __grid_constant__ TmaDescriptor`)."""
    raw = np.frombuffer(bytes(encoded), dtype=np.uint64)
    if raw.size != 16:
        raise ValueError(f"a CUtensorMap is 128 bytes, got {raw.size * 8}")
    dt = np.dtype({"names": [f"v{i}" for i in range(16)], "formats": [np.uint64] * 16})
    return np.frombuffer(raw.tobytes(), dtype=dt)[0]


def encode_tensor_map(tmap, global_address: int) -> bytes:
    """The 128-byte CUtensorMap of `tmap` (a `bwlab.tma.TensorMap`) for a tensor at `global_address`:
    the emulator's map for an emulator pointer, else cuTensorMapEncodeTiled through cuda.bindings with
    the arguments of `tmap.encode_args` (which refuses an illegal map before any driver call)."""
    from .emu import is_emu_pointer
    if is_emu_pointer(global_address):
        from .emu.tensormap import encode
        return encode(tmap, global_address)
    a = tmap.encode_args(global_address)
    from cuda.bindings import driver as drv
    err, cmap = drv.cuTensorMapEncodeTiled(
        getattr(drv.CUtensorMapDataType, a["tensorDataType"]), a["tensorRank"], a["globalAddress"],
        [drv.cuuint64_t(v) for v in a["globalDim"]], [drv.cuuint64_t(v) for v in a["globalStrides"]],
        [drv.cuuint32_t(v) for v in a["boxDim"]], [drv.cuuint32_t(v) for v in a["elementStrides"]],
        getattr(drv.CUtensorMapInterleave, a["interleave"]), getattr(drv.CUtensorMapSwizzle, a["swizzle"]),
        getattr(drv.CUtensorMapL2promotion, a["l2Promotion"]),
        getattr(drv.CUtensorMapFloatOOBfill, a["oobFill"]))
    if int(err) != 0:
        raise RuntimeError(f"cuTensorMapEncodeTiled rejected {tmap!r}: {err!r}")
    return np.array([int(v) for v in cmap.opaque], dtype=np.uint64).tobytes()


def require_launch_config(grid, block, shared_mem, cluster):
    """Refuse a launch the GPU would refuse (threads per block, cluster size and shape, SMEM); returns
    grid and block as 3-tuples. Raises LaunchConfigError naming the limit."""
    grid = tuple(grid) + (1,) * (3 - len(tuple(grid)))
    block = tuple(block) + (1,) * (3 - len(tuple(block)))
    if any(g < 1 for g in grid) or any(b < 1 for b in block):
        raise LaunchConfigError(f"grid {grid} and block {block} must be positive")
    if block[0] * block[1] * block[2] > 1024:
        raise LaunchConfigError(f"a CTA has at most 1024 threads, got block {block}")
    if cluster is not None:
        cluster = tuple(cluster) + (1,) * (3 - len(tuple(cluster)))
        size = cluster[0] * cluster[1] * cluster[2]
        if size > PORTABLE_CLUSTER_SIZE:
            raise LaunchConfigError(
                f"cluster {cluster} has {size} CTAs; the portable maximum is {PORTABLE_CLUSTER_SIZE}")
        for axis, (g, c) in enumerate(zip(grid, cluster)):
            if g % c:
                raise LaunchConfigError(
                    f"grid dimension {'xyz'[axis]} = {g} is not a multiple of the cluster's {c}")
    from .device import gpu_info
    info = gpu_info()
    if info is not None and shared_mem > info.smem_per_block_optin:
        raise LaunchConfigError(f"{shared_mem} bytes of dynamic shared memory requested; "
                                f"{info.name} allows {info.smem_per_block_optin} per CTA")
    return grid, block


def launch(module, kernel: str, grid, block, args, shared_mem: int = 0, barrier_names=None,
           cluster=None, sync: bool = True, timing=None):
    """Launch `kernel` of a loaded `bwlab.compile.Module`, then check its mbarrier status record.

    `barrier_names` maps the barrier ids the kernel passes to `mbarrier_wait` to names for the
    error message. `cluster` is the kernel's compile-time cluster shape (checked against the grid).
    `timing`: in the emulator, a `bwlab.timing.trace.Recorder` that records the launch.
    """
    grid, block = require_launch_config(grid, block, shared_mem, cluster)
    fn = module.get_function(kernel)
    if _is_emu(module):
        status = module.get_global("bw_status")
        status._alloc.buf[:STATUS_DTYPE.itemsize] = 0
        fn.max_dynamic_shared_size_bytes = max(shared_mem, fn.max_dynamic_shared_size_bytes)
        run = fn(grid, block, tuple(args), shared_mem=shared_mem, cluster=cluster, timing=timing)
        rec = np.frombuffer(status._alloc.buf[:STATUS_DTYPE.itemsize].tobytes(), STATUS_DTYPE)
        if rec["code"][0] != 0:
            bid = int(rec["barrier_id"][0])
            err = MbarrierTimeout(kernel, (barrier_names or {}).get(bid, f"#{bid}"), rec[0])
            err.emulated = True
            if run.stall_reports:
                err.with_emulator_report(run.stall_reports[0])
            else:
                err.args = (err._message(),)
            raise err
        return run
    if shared_mem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = shared_mem
    clear_status(module)
    fn(grid, block, tuple(args), shared_mem=shared_mem)
    if sync:
        raise_on_status(module, kernel, barrier_names)


def clear_status(module) -> None:
    """Zero the module's `bw_status` record (before launches that `raise_on_status` will judge)."""
    import cupy as cp
    cp.cuda.runtime.memset(module.get_global("bw_status").ptr, 0, STATUS_DTYPE.itemsize)


def raise_on_status(module, kernel: str, barrier_names=None) -> None:
    """Wait for the GPU, then raise MbarrierTimeout if a bounded wait of the module's kernels gave up
    since the record was last cleared."""
    import cupy as cp
    status = module.get_global("bw_status")
    cp.cuda.Device().synchronize()
    rec = np.zeros(1, dtype=STATUS_DTYPE)
    cp.cuda.runtime.memcpy(rec.ctypes.data, status.ptr, STATUS_DTYPE.itemsize,
                           cp.cuda.runtime.memcpyDeviceToHost)
    if rec["code"][0] != 0:
        bid = int(rec["barrier_id"][0])
        name = (barrier_names or {}).get(bid, f"#{bid}")
        raise MbarrierTimeout(kernel, name, rec[0])


@dataclass
class BenchResult:
    name: str
    median_ms: float
    min_ms: float
    max_ms: float
    repeats: int
    bytes_moved: int | None = None

    @property
    def gbps(self) -> float | None:
        return None if self.bytes_moved is None else self.bytes_moved / (self.median_ms * 1e-3) / 1e9

    def row(self) -> str:
        bw = f"{self.gbps:9.1f} GB/s" if self.gbps is not None else ""
        return f"{self.name:<40s} median {self.median_ms:9.4f} ms  (min {self.min_ms:.4f}, max {self.max_ms:.4f}, n={self.repeats}) {bw}"


def time_ms(fn) -> float:
    """Milliseconds of one `fn()` on the current stream, between two CUDA events."""
    import cupy as cp
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop)


def bench(name: str, fn, warmup: int = 3, repeat: int = 20, bytes_moved: int | None = None) -> BenchResult:
    """Time `fn()` on the current stream with CUDA events: `warmup` untimed calls, then the median
    of `repeat` timed ones."""
    import cupy as cp
    for _ in range(warmup):
        fn()
    cp.cuda.Device().synchronize()
    times = [time_ms(fn) for _ in range(repeat)]
    return BenchResult(name, statistics.median(times), min(times), max(times), repeat, bytes_moved)
