"""Build, launch, check and time the Hopper ladder's steps, and launch the Blackwell twin's (`run_sm100`)
on an sm_100 GPU: the only file here that uses CuPy.

    from bwlab.gemm import runner
    a, b = runner.random_operands(4096, 4096, 4096)
    c = runner.run_step("s3", a, b)                 # bf16 bits (uint16), M x N
    print(runner.check(a, b, c))                     # against an f32 reference, the tolerance stated

Operands are CuPy arrays of bf16 bit patterns (uint16; NumPy and CuPy have no bfloat16 type),
row-major: A is M x K, B is N x K (both K-major), C is M x N.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hw.dtypes import from_float
from ..runtime import encode_tensor_map
from ..tma.tensor_map import TensorMap
from .ladder import BK, Step, require_shape, step
from .sm100 import (GEMM_BARRIERS, STAMP_SPANS, STAMP_TRACKS, _operands, launch_grid, step_info,
                    tensor_maps)

__all__ = ["random_operands", "build", "run_step", "reference", "check", "GemmCheck", "Launch",
           "raise_on_status", "clear_status", "prepare", "run_stamps", "try_kernel", "BARRIERS", "run_sm100"]

BARRIERS = {1: "full (a stage's bytes have landed)", 2: "empty (every consumer warp is done with a stage)",
            3: "full_a (a stage of A's own ring has landed: the decode rung)",
            4: "empty_a (every consumer warp is done with a stage of A's own ring: the decode rung)"}
STAMP_SHAPE = (4, 512, 2, 2)   # gemm_common.cuh: [track][event][begin/end][globaltimer ns, clock64]


def _cp():
    import cupy as cp
    return cp


def bf16_bits(x) -> "object":
    """float32 CuPy array -> bf16 bit patterns (round to nearest even, a NaN -> 0x7FFF), as uint16: the
    rounding of bwlab.hw.dtypes.from_float (ml_dtypes), done on the host since CuPy has no bfloat16."""
    cp = _cp()
    return cp.asarray(from_float(cp.asnumpy(cp.asarray(x, dtype=cp.float32)), "bf16"))


def bf16_to_f32(bits) -> "object":
    """bf16 bit patterns -> float32 on the GPU: a bf16 is the high half of an f32 (exact, no rounding)."""
    cp = _cp()
    return (bits.astype(cp.uint32) << 16).view(cp.float32)


def random_operands(m: int, n: int, k: int, seed: int = 0):
    """A (m x k) and B (n x k) with values uniform in [-1, 1), rounded to bf16 (bit patterns)."""
    cp = _cp()
    rng = cp.random.default_rng(seed)
    a = bf16_bits(rng.random((m, k), dtype=cp.float32) * 2 - 1)
    b = bf16_bits(rng.random((n, k), dtype=cp.float32) * 2 - 1)
    return a, b


def build(s: Step, stamps: bool = False, kernel=None):
    """The step's kernel compiled for this GPU and loaded (cached); `kernel`, a learner's edit of it
    (`bwlab.lab.TeachingKernel`), instead of the file when given; None: the %%cuda edit of the step's
    file if one is kept (bwlab.lab.kept), else the file."""
    from ..compile import load_module
    from ..lab import kept
    defines = {"GEMM_STAMPS": 1} if stamps else None
    kernel = kernel if kernel is not None else kept(s.path)   # the learner's %%cuda edit of the step
    if kernel is not None and kernel.edited:
        return kernel.load(defines)
    return load_module(s.path, defines=defines)


@dataclass
class Launch:
    """One step, one shape: the kernel, its arguments and its launch shape, ready to call again."""
    step: Step
    fn: object
    grid: tuple
    block: tuple
    smem: int
    args: tuple
    c: object
    module: object

    def __call__(self):
        self.fn(self.grid, self.block, self.args, shared_mem=self.smem)


def prepare(name, a, b, stamps=None, c=None, kernel=None, splits=None, l2_promotion: str = "none") -> Launch:
    """Check the shapes, encode the tensor maps, load the kernel: everything but the launch (`splits`:
    split-K's piece count instead of ladder.split_count's choice; `l2_promotion`: A's and B's tensor maps'
    L2 promotion, "none", "64B", "128B" or "256B")."""
    cp = _cp()
    from ..device import gpu_info
    from ..runtime import require_launch_config, tensor_map_arg
    s = step(name)
    m, k = a.shape
    n, kb = b.shape
    if kb != k:
        raise ValueError(f"A is {m} x {k} and B is {n} x {kb}: both must have K columns (C = A * B^T)")
    if a.dtype != cp.uint16 or b.dtype != cp.uint16:
        raise TypeError("A and B hold bf16 bit patterns: dtype uint16 (see bf16_bits)")
    require_shape(s, m, n, k)
    a, b = cp.ascontiguousarray(a), cp.ascontiguousarray(b)
    c = cp.empty((m, n), dtype=cp.uint16) if c is None else c
    info = gpu_info()
    grid, block = s.grid(m, n, info.sm_count, k, splits), (s.threads, 1, 1)
    require_launch_config(grid, block, s.smem_bytes, (s.cluster, 1, 1) if s.cluster > 1 else None)
    l2 = l2_promotion
    maps = [encode_tensor_map(TensorMap("bfloat16", (k, m), (BK, s.bm), swizzle="128B", l2_promotion=l2), a.data.ptr),
            encode_tensor_map(TensorMap("bfloat16", (k, n), (BK, s.b_rows), swizzle="128B", l2_promotion=l2),
                              b.data.ptr),
            encode_tensor_map(TensorMap("bfloat16", (n, m), (64, 64), swizzle="128B"), c.data.ptr)]
    module = build(s, stamps=stamps is not None, kernel=kernel)
    fn = module.get_function("gemm")
    fn.max_dynamic_shared_size_bytes = s.smem_bytes
    stamp_ptr = stamps if stamps is not None else 0
    extra, keep = extra_args(s, m, n, k, info.sm_count, lambda shape, dt: cp.zeros(shape, dt), splits)
    args = (*[tensor_map_arg(t) for t in maps], c, np.int32(m), np.int32(n), np.int32(k),
            stamp_ptr if stamps is not None else np.uint64(0), *extra)
    launch = Launch(s, fn, grid, block, s.smem_bytes, args, c, module)
    launch.keep = keep
    return launch


def extra_args(s: Step, m: int, n: int, k: int, sms: int, zeros, splits: int | None = None) -> tuple:
    """The kernel arguments after `stamps` that a step needs beyond the ladder's common signature, and
    the buffers they point to (keep them alive): split-K's f32 workspace, its arrival counters (zero;
    the kernel leaves them zero) and the piece count; the Hilbert step's tile-order table.
    `zeros(shape, dtype)` allocates on the device (CuPy or the emulator)."""
    from .ladder import split_count
    if s.split_k:
        splits = splits or split_count(m, n, k, sms, s.bm, s.bn)
        if not 1 <= splits <= k // BK:
            raise ValueError(f"{s.name}: {splits} pieces of K = {k}: between 1 and K / {BK} = {k // BK}")
        tiles = (m // s.bm) * (n // s.bn)
        partial = zeros((tiles * splits if splits > 1 else 1, s.bm * s.bn), np.float32)
        arrivals = zeros((tiles * 2,), np.uint32)
        return (partial, arrivals, np.int32(splits)), (partial, arrivals)
    if s.tile_order == "hilbert":
        from .order import hilbert_order
        table = hilbert_order(m // (s.bm * s.cluster), n // s.bn)
        dev = zeros(table.shape, np.int32)
        dev.set(table)
        return (dev,), (dev,)
    return (), ()


def raise_on_status(launch: Launch) -> None:
    """Raise MbarrierTimeout if a bounded wait of the last launches gave up."""
    from .. import runtime
    runtime.raise_on_status(launch.module, launch.step.name, BARRIERS)


def clear_status(launch: Launch) -> None:
    """Zero the status record before launches that `raise_on_status` will judge."""
    from .. import runtime
    runtime.clear_status(launch.module)


def run_step(name, a, b, kernel=None):
    """C = A * B^T with one step's kernel (or `kernel`, a learner's edit of it); raises MbarrierTimeout
    if a bounded wait gave up."""
    launch = prepare(name, a, b, kernel=kernel)
    clear_status(launch)
    launch()
    raise_on_status(launch)
    return launch.c


def run_stamps(name, a, b):
    """One launch of the step built with -DGEMM_STAMPS; returns (C, stamps[track, event, begin/end,
    (globaltimer ns, clock64)]) of CTA 0 (zeros where nothing happened)."""
    cp = _cp()
    stamps = cp.zeros(STAMP_SHAPE, dtype=cp.uint64)
    launch = prepare(name, a, b, stamps=stamps)
    clear_status(launch)
    launch()
    raise_on_status(launch)
    return launch.c, cp.asnumpy(stamps)


def reference(a, b):
    """C in f32 from the same bf16 inputs (cuBLAS SGEMM through cupy.matmul; TF32 stays off) and
    S = |A| * |B|^T, the scale of the accumulation's rounding error."""
    cp = _cp()
    fa, fb = bf16_to_f32(a), bf16_to_f32(b)
    return fa @ fb.T, cp.abs(fa) @ cp.abs(fb).T


REL_TOL = 2.0 ** -7     # the bf16 rounding of C: half an ulp is up to 2^-8 relative; one ulp allowed
SUM_TOL = 2.0 ** -16    # f32 accumulation in another order: K * 2^-24 * S at worst, ~sqrt(K) * 2^-24 * S typically


@dataclass
class GemmCheck:
    step: str
    shape: tuple
    max_abs_err: float
    worst: tuple           # (row, col) of the largest error relative to its tolerance
    worst_ratio: float     # that error / its tolerance (<= 1 passes)
    bad: int               # elements over their tolerance (NaN included)

    @property
    def ok(self) -> bool:
        return self.bad == 0

    def __str__(self):
        m, n, k = self.shape
        verdict = "PASS" if self.ok else f"FAIL ({self.bad} of {m * n} elements out of tolerance)"
        return (f"{self.step} {m}x{n}x{k}: {verdict}; max |C - C_f32| = {self.max_abs_err:.3g}, worst at "
                f"{self.worst} = {self.worst_ratio:.2f} of its tolerance "
                f"(|err| <= 2^-7 |C_f32| + 2^-16 (|A||B|^T))")


def check(a, b, c, name: str = "", ref=None) -> GemmCheck:
    """Compare bf16 C with the f32 reference: |C - C_f32| <= 2^-7 |C_f32| + 2^-16 (|A| |B|^T). CuPy
    arrays are compared on the GPU (`ref`: their `reference(a, b)`, if already computed); NumPy arrays
    (an emulated run's) on the host, against the same reference and tolerance."""
    if isinstance(c, np.ndarray):
        return _check_on_host(a, b, c, name)
    cp = _cp()
    c32, scale = reference(a, b) if ref is None else ref
    err = cp.abs(bf16_to_f32(c) - c32)
    tol = REL_TOL * cp.abs(c32) + SUM_TOL * scale
    ratio = err / tol
    ratio = cp.where(cp.isnan(ratio), cp.inf, ratio)
    worst = int(cp.argmax(ratio))
    m, n = c.shape
    return GemmCheck(name, (m, n, a.shape[1]), float(cp.nanmax(err)), divmod(worst, n),
                     float(ratio.ravel()[worst]), int(cp.count_nonzero(~(ratio <= 1))))


def try_kernel(name, m: int, n: int, k: int, kernel=None, repeat: int = 10) -> dict:
    """A learner's edit of a step's kernel (`kernel`) on an m x n x k problem, beside the step as written:
    {'check': its GemmCheck against the f32 reference (str), 'ok', 'ms': its median time, 'ms_original'}.
    Meant for a worker process (`bwlab.lab.run_edited`): a bounded wait that gives up raises
    MbarrierTimeout, which comes back to the notebook."""
    from ..runtime import time_ms
    a, b = random_operands(m, n, k, seed=1)
    got = check(a, b, run_step(name, a, b, kernel=kernel), name=f"{name} (edited)" if kernel else name)
    times = {}
    from ..lab import TeachingKernel
    for label, kern in (("ms", kernel), ("ms_original", TeachingKernel(step(name).path))):   # the file itself
        launch = prepare(name, a, b, kernel=kern)
        launch()
        times[label] = sorted(time_ms(launch) for _ in range(repeat))[repeat // 2]
    return {"check": str(got), "ok": got.ok, **times}


# ------------------------------------------------------------------------------------------------
# the ladder in the PTX emulator (no GPU): the same kernels, NumPy operands, small shapes
# ------------------------------------------------------------------------------------------------
EMULATED_SMS = 2   # the persistent steps launch this many CTAs (clusters) in the emulator, so they loop


def run_step_emulated(name, a, b, sms: int = EMULATED_SMS, seed: int = 0, trace: bool = False,
                      stamps: bool = False, kernel=None, timing=None):
    """C = A * B^T by one step's kernel executed in bwlab.emu (its sm_90a PTX, instruction by
    instruction). `a` (M x K) and `b` (N x K) are NumPy uint16 arrays of bf16 bits; returns (C bits,
    the emulator's Launch: its trace, stall reports and counts). Persistent steps launch
    min(`sms`, tiles) CTAs, so each CTA walks several tiles as it does on the GPU. `kernel`: a learner's
    edit of the step's file (`bwlab.lab.TeachingKernel`) instead of the file."""
    from .. import emu
    from ..runtime import EMULATED, launch as run_launch, tensor_map_arg
    s = step(name)
    a = np.ascontiguousarray(a, np.uint16)
    b = np.ascontiguousarray(b, np.uint16)
    m, k = a.shape
    n, kb = b.shape
    if kb != k:
        raise ValueError(f"A is {m} x {k} and B is {n} x {kb}: both must have K columns (C = A * B^T)")
    require_shape(s, m, n, k)
    da, db, dc = emu.asarray(a), emu.asarray(b), emu.zeros((m, n), np.uint16)
    maps = [encode_tensor_map(TensorMap("bfloat16", (k, m), (BK, s.bm), swizzle="128B"), da.data.ptr),
            encode_tensor_map(TensorMap("bfloat16", (k, n), (BK, s.b_rows), swizzle="128B"), db.data.ptr),
            encode_tensor_map(TensorMap("bfloat16", (n, m), (64, 64), swizzle="128B"), dc.data.ptr)]
    from ..lab import kept
    kernel = kernel if kernel is not None else kept(s.path)   # the learner's %%cuda edit of the step
    if kernel is not None and kernel.file != s.path:
        raise ValueError(f"{s.name} runs {s.path}; got an edit of {kernel.file}")
    module = EMULATED.load(kernel if kernel is not None else s.path, defines={"GEMM_STAMPS": 1} if stamps else None)
    fn = module.get_function("gemm")
    fn.seed, fn.trace = seed, trace
    grid = s.grid(m, n, sms * s.cluster, k)
    st = emu.zeros(STAMP_SHAPE, np.uint64) if stamps else None
    extra, _keep = extra_args(s, m, n, k, sms * s.cluster, lambda shape, dt: emu.zeros(shape, dt))
    run = run_launch(module, "gemm", grid, (s.threads, 1, 1),
                     (*[tensor_map_arg(t) for t in maps], dc, np.int32(m), np.int32(n), np.int32(k),
                      st if stamps else np.uint64(0), *extra),
                     shared_mem=s.smem_bytes, barrier_names=BARRIERS,
                     cluster=(s.cluster, 1, 1) if s.cluster > 1 else None, timing=timing)
    if stamps:
        run.stamps = st.get()
    run.extra = _keep
    return dc.get(), run


def emulated_ladder(m: int = 256, n: int = 512, k: int = 192, steps=None, seed: int = 0):
    """Every step (or `steps`) run in the emulator with -DGEMM_STAMPS: a `bwlab.results.Recording` shaped
    like the GPU recording `gemm_ladder` (steps, stamps, C checked), so `bwlab.gemm.timeline` and
    `pictures.plot_timelines` draw CTA 0's per-warp timeline in virtual time (one nanosecond and one
    clock64 tick per warp-instruction: the order of events, not a performance model)."""
    from ..hw.dtypes import from_float
    from ..results import Recording
    from .ladder import STEPS
    chosen = [x for x in STEPS if steps is None or any(x.name.startswith(str(q)) for q in steps)]
    rng = np.random.default_rng(seed)
    a = from_float(rng.random((m, k), dtype=np.float32) * 2 - 1, "bf16")
    b = from_float(rng.random((n, k), dtype=np.float32) * 2 - 1, "bf16")
    stamps, ok = [], []
    for x in chosen:
        c, run = run_step_emulated(x.name, a, b, stamps=True, seed=seed)
        stamps.append(run.stamps)
        ok.append(check(a, b, c, x.name).ok)
    return Recording("gemm_ladder (emulated)", {"steps": np.array([x.name for x in chosen]),
                                                "stamps": np.stack(stamps), "check_ok": np.array(ok)},
                     {"device": "bwlab.emu (emulated: virtual time, not a performance model)",
                      "date": __import__("datetime").date.today().isoformat(),
                      "params": {"stamp_shape": [m, n, k]}})


def _check_on_host(a, b, c, name: str = "") -> GemmCheck:
    """`check` of NumPy arrays (an emulated run's C): the f32 reference and tolerance on the host."""
    fa = (np.asarray(a, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    fb = (np.asarray(b, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    c32 = (fa @ fb.T).astype(np.float32).astype(np.float64)
    scale = np.abs(fa) @ np.abs(fb).T
    cf = (np.asarray(c, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    err = np.abs(cf - c32)
    tol = REL_TOL * np.abs(c32) + SUM_TOL * scale
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(np.isnan(err / tol), np.inf, err / tol)
    worst = int(np.argmax(ratio))
    m, n = c.shape
    return GemmCheck(name, (m, n, a.shape[1]), float(np.nanmax(err)), divmod(worst, n),
                     float(ratio.ravel()[worst]), int(np.count_nonzero(~(ratio <= 1))))


# ---- the Blackwell twin (bwlab.gemm.sm100 describes it; its step 1 also runs in the model tier there)

def run_sm100(step, A, B, stamps: bool = False):
    """Run a step on an sm_100 GPU: C as bf16 bits (uint16, M x N), and with `stamps` also the timeline
    (uint64 array: track x span x edge, see STAMP_TRACKS). Raises UnsupportedGPU without tcgen05 (the
    model tier runs step 1: `model_step1`), MbarrierTimeout when a bounded wait gave up."""
    from .. import device
    info = device.require("umma")
    import cupy as cp

    from ..compile import load_module
    from ..runtime import launch, encode_tensor_map, tensor_map_arg
    s = step_info(step)
    a, b, M, N, K = _operands(A, B)
    maps = tensor_maps(step, M, N, K)
    d_a, d_b, d_c = cp.asarray(a), cp.asarray(b), cp.zeros((M, N), cp.uint16)
    tmaps = [tensor_map_arg(encode_tensor_map(t, d.data.ptr)) for t, d in zip(maps, (d_a, d_b, d_c))]
    err = cp.zeros(1, cp.uint32)
    d_st = cp.zeros(len(STAMP_TRACKS) * STAMP_SPANS * 2, cp.uint64) if stamps else None
    from ..lab import kept
    mine = kept(s["file"])   # the learner's %%cuda edit of the step, if one is kept
    module = mine.load() if mine is not None else load_module(s["file"])
    launch(module, "gemm", launch_grid(step, M, N, info.sm_count), (s["threads"],),
           (*tmaps, d_c, np.int32(M), np.int32(N), np.int32(K), err, d_st if stamps else np.uint64(0)),
           shared_mem=s["smem_bytes"], barrier_names=GEMM_BARRIERS,
           cluster=(s["cluster"], 1, 1) if s["cluster"] > 1 else None)
    code = int(cp.asnumpy(err)[0])
    if code:
        raise RuntimeError(f"step {s['step']}: a bounded wait on {GEMM_BARRIERS.get(code - 1, code)} gave up")
    c = cp.asnumpy(d_c)
    return (c, cp.asnumpy(d_st).reshape(len(STAMP_TRACKS), STAMP_SPANS, 2)) if stamps else c
