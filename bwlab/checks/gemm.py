"""`python -m bwlab.bench gemm`: every step of the GEMM ladder, checked then timed, against the best
library GEMM measured in the same process.

    python -m bwlab.bench gemm [--sizes 4096 8192] [--skinny 512x8192x8192] [--steps s1 s6]
                               [--repeat 20] [--warmup 5] [--record] [--out FILE]
    python -m bwlab.bench gemm --protocol sustained [--block-s 2] [--rounds 2] [--json FILE] [--clock-stamps]

`--protocol sustained` (bwlab.gemm.protocol; default shapes, where neither --sizes nor --skinny is
given: 4096^3, 6144^3, 8192^3, 512x8192x8192, 128x8192x8192) is the protocol every speed in notebook 07 is quoted under; the default `interleaved`
is the older quick figure (single launches, library and step alternately), labelled as such.

For each shape: the libraries first (cuBLAS bf16 through cupy.cuda.cublas.gemmEx, cupy.matmul on
float16 operands of the same shape — CuPy has no bfloat16 type — and torch.matmul bf16 when torch is
installed), then each step: its C is compared with an f32 reference (runner.check states the
tolerance) BEFORE it is timed; a step that fails is reported and not timed. CUDA events, warm-up,
median of repeats; TFLOP/s = 2 M N K / time. The ratio is to the fastest library of the shape, timed
again interleaved with the step (library, step, library, step, ...), so that a GPU warming up or
changing its clocks during the run moves both alike.
`--record` also saves the table and the per-warp stamps of one CTA (4096^3, every step) as the
recording `gemm_ladder` that notebook 07 draws.
"""
from __future__ import annotations

import numpy as np

from .common import EXIT_NO_GPU, Command, NoSuitableGpu

__all__ = ["bench_main"]


def _shape(text: str) -> tuple:
    parts = [int(p) for p in text.lower().split("x")]
    if len(parts) != 3:
        raise ValueError(f"a shape is MxNxK, got {text!r}")
    return tuple(parts)


def library_gemms(a, b, torch_ok: bool):
    """{name: fn() -> None} of the library GEMMs of the same shape (C = A B^T, bf16 or f16 in, f32
    accumulation)."""
    import cupy as cp
    from cupy.cuda import cublas
    m, k = a.shape
    n = b.shape[0]
    out = {}
    c = cp.empty((m, n), dtype=cp.uint16)
    alpha, beta = np.array(1.0, np.float32), np.array(0.0, np.float32)
    handle = cp.cuda.device.get_cublas_handle()
    CUDA_R_16BF, COMPUTE_32F, GEMM_DEFAULT = 14, 68, -1

    def gemm_ex():
        # Row-major C = A B^T is column-major C^T = B A^T: cuBLAS's A is our B (transposed), its B our A.
        cublas.gemmEx(handle, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, n, m, k, alpha.ctypes.data,
                      b.data.ptr, CUDA_R_16BF, k, a.data.ptr, CUDA_R_16BF, k, beta.ctypes.data,
                      c.data.ptr, CUDA_R_16BF, n, COMPUTE_32F, GEMM_DEFAULT)

    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    out["cuBLAS bf16 (cupy.cuda.cublas.gemmEx)"] = (gemm_ex, lambda: c)
    a16 = cp.random.default_rng(1).random((m, k), dtype=cp.float32).astype(cp.float16)
    b16 = cp.random.default_rng(2).random((n, k), dtype=cp.float32).astype(cp.float16)
    out["cupy.matmul f16"] = (lambda: cp.matmul(a16, b16.T), None)
    if torch_ok:
        import torch
        ta = torch.from_dlpack(a).view(torch.bfloat16)
        tb = torch.from_dlpack(b).view(torch.bfloat16)
        out["torch.matmul bf16"] = (lambda: torch.matmul(ta, tb.T), None)
    return out


def paired(fn_a, fn_b, warmup: int, repeat: int) -> tuple:
    """Median ms of fn_a and of fn_b, timed alternately with CUDA events after `warmup` calls each."""
    import statistics
    from ..runtime import time_ms
    for _ in range(warmup):
        fn_a()
        fn_b()
    times = ([], [])
    for _ in range(repeat):
        times[0].append(time_ms(fn_a))
        times[1].append(time_ms(fn_b))
    return statistics.median(times[0]), statistics.median(times[1])


def default_shapes(protocol: str, sizes, skinny) -> tuple:
    """(square sizes, skinny shapes) to run: what --sizes / --skinny gave, the defaults for the one not
    given (4096 8192 and 512x8192x8192); the sustained protocol's wider set (4096 6144 8192,
    512x8192x8192 128x8192x8192) only where neither was given."""
    if protocol == "sustained" and sizes is None and skinny is None:
        return [4096, 6144, 8192], [(512, 8192, 8192), (128, 8192, 8192)]
    return ([4096, 8192] if sizes is None else list(sizes)), ([(512, 8192, 8192)] if skinny is None else list(skinny))


def bench_main(argv=None) -> int:
    cmd = Command("bench gemm", "The GEMM ladder: each step checked, then timed against library GEMMs")
    cmd.add("--sizes", type=int, nargs="*", default=None,
            help="square sizes M = N = K (none: skinny only; default 4096 8192, sustained 4096 6144 8192)")
    cmd.add("--skinny", type=_shape, nargs="*", default=None,
            help="more MxNxK shapes (default 512x8192x8192, sustained also 128x8192x8192)")
    cmd.add("--steps", nargs="+", default=None, help="steps to run (default: all), e.g. s1 s6")
    cmd.add("--repeat", type=int, default=20)
    cmd.add("--warmup", type=int, default=5)
    cmd.add("--record", action="store_true", help="save the recording gemm_ladder (needs docs/results)")
    cmd.add("--protocol", choices=["interleaved", "sustained"], default="interleaved",
            help="interleaved: single launches, library and step alternately (--warmup, --repeat); "
                 "sustained: bwlab.gemm.protocol (warm-up until the clocks settle, alternating blocks of "
                 "seconds, operands rotated past L2, NVML clocks/power/throttle reasons)")
    cmd.add("--block-s", type=float, default=2.0, help="sustained: seconds per block")
    cmd.add("--rounds", type=int, default=2, help="sustained: rounds of alternating blocks")
    cmd.add("--json", help="sustained: also write every sample and clock reading to this JSON file")
    cmd.add("--clock-stamps", action="store_true",
            help="sustained, Hopper: after every sample one more launch built with -DGEMM_STAMPS, outside the "
                 "timed samples, whose CTA 0 reads the SMs' own clock (clock64 / globaltimer) during the step's blocks")
    args, say = cmd.start(argv)
    args.sizes, args.skinny = default_shapes(args.protocol, args.sizes, args.skinny)
    from .. import device
    info = device.gpu_info()
    if info is None or info.cc[0] not in (9, 10):
        msg = ("bench gemm: the ladders need an sm_90 GPU (TMA + wgmma: cuda_src/gemm_sm90) or an sm_100 GPU "
               "(tcgen05: cuda_src/gemm_sm100); "
               + ("none here" if info is None else f"this is {info.name}, sm_{info.cc[0]}{info.cc[1]}"))
        say(msg)
        say.save(args.out)
        return EXIT_NO_GPU

    import cupy as cp
    from ..gemm import runner
    from ..runtime import bench
    try:
        import torch  # noqa: F401
        torch_ok = True
    except ImportError:
        torch_ok = False
    steps = _steps(info, args.steps)
    shapes = [(s, s, s) for s in args.sizes] + list(args.skinny)
    if args.protocol == "sustained":
        from .gemm_sustained import sustained
        failures = sustained(args, say, info, steps, shapes, torch_ok)
        return cmd.finish(failures, "gemm")
    say(f"GPU {info.name}, {info.sm_count} SMs, CuPy {cp.__version__}"
        + (f", torch {__import__('torch').__version__}" if torch_ok else ", no torch")
        + f"; the {'Hopper (gemm_sm90)' if info.cc[0] == 9 else 'Blackwell (gemm_sm100)'} ladder"
        + f"; protocol 'interleaved': CUDA events, {args.warmup} warm-up, median of {args.repeat} single "
        + "launches, library and step alternately, no clock log (--protocol sustained: the protocol "
        + "notebook 07 quotes)")
    rows, failures = [], 0
    for m, n, k in shapes:
        flop = 2.0 * m * n * k
        a, b = runner.random_operands(m, n, k, seed=m + n + k)
        ref = runner.reference(a, b)
        say(f"\n== {m} x {n} x {k} (C = A B^T, bf16 in, f32 accumulation, bf16 out)")
        libs, lib_fns = {}, library_gemms(a, b, torch_ok)
        for name, (fn, result) in lib_fns.items():
            try:
                r = bench(name, fn, args.warmup, args.repeat)
            except Exception as e:  # a library path missing on this install: say so, go on
                say(f"  {name:<40s} unavailable: {type(e).__name__}: {e}")
                continue
            libs[name] = flop / (r.median_ms * 1e-3) / 1e12
            extra = ""
            if result is not None:
                extra = "  [" + str(runner.check(a, b, result(), "library", ref=ref)).split(": ", 1)[1][:4] + "]"
            say(f"  {name:<40s} {r.median_ms:8.3f} ms  {libs[name]:7.1f} TFLOP/s{extra}")
            rows.append((f"{m}x{n}x{k}", name, r.median_ms, libs[name], float("nan"), float("nan")))
        best_name = max(libs, key=libs.get)
        best = libs[best_name]
        say(f"  best library: {best_name} ({best:.1f} TFLOP/s)")
        for s in steps:
            try:
                launch = s.prepare(a, b)
            except ValueError as e:
                say(f"  {s.name:<24s} skipped: {e}")
                continue
            launch.first()
            res = runner.check(a, b, launch.c, s.name, ref=ref)
            if not res.ok:
                failures += 1
                say(f"  {s.name:<24s} {res}")
                continue
            lib_ms, ms = paired(lib_fns[best_name][0], launch, args.warmup, args.repeat)
            launch.after()
            tf = flop / (ms * 1e-3) / 1e12
            guess = (f"the timing model (H100 SXM) predicts {s.predicted:.2f} at 8192^3" if s.predicted
                     else "no prediction")
            say(f"  {s.name:<24s} {ms:8.3f} ms  {tf:7.1f} TFLOP/s  {lib_ms / ms:5.2f} of best (library "
                f"{flop / (lib_ms * 1e-3) / 1e12:.0f} alongside; {guess})  "
                f"check: worst {res.worst_ratio:.2f} of tolerance")
            rows.append((f"{m}x{n}x{k}", s.name, ms, tf, lib_ms / ms, s.predicted or float("nan")))
        del a, b, ref
        cp.get_default_memory_pool().free_all_blocks()
    if args.record:
        if info.cc[0] != 9:
            say("--record keeps the Hopper ladder's recording (notebook 07 draws it); nothing recorded here")
        else:
            _record([s.step for s in steps], rows, info, say)
    return cmd.finish(failures, "gemm")


class _Timed:
    """One ladder step ready to launch: `first()` runs it once and raises on a bounded wait that gave
    up; calling it launches it again (for timing); `after()` checks the waits of the timed launches."""

    def __init__(self, call, c, first, after):
        self._call, self.c, self.first, self.after = call, c, first, after

    def __call__(self):
        self._call()


class _LadderStep:
    def __init__(self, name, predicted, prepare, step=None):
        self.name, self.predicted, self._prepare, self.step = name, predicted, prepare, step

    def prepare(self, a, b) -> _Timed:
        return self._prepare(a, b)


def _steps(info, wanted):
    """The ladder of this GPU (Hopper: gemm_sm90; Blackwell: gemm_sm100), as _LadderStep objects."""
    if info.cc[0] == 9:
        from ..gemm import runner
        from ..gemm.ladder import ALL_STEPS, step

        def hopper(s):
            def prepare(a, b):
                launch = runner.prepare(s, a, b)

                def first():
                    runner.clear_status(launch)
                    launch()
                    runner.raise_on_status(launch)
                return _Timed(launch, launch.c, first, lambda: runner.raise_on_status(launch))
            return _LadderStep(s.name, s.predicted, prepare, s)
        return [hopper(s) for s in (ALL_STEPS if not wanted else [step(w) for w in wanted])]
    from ..gemm import sm100
    infos = sm100.STEPS_SM100 if not wanted else [sm100.step_info(w) for w in wanted]
    return [_LadderStep(s["name"], None, lambda a, b, s=s: _prepare_sm100(info, s, a, b)) for s in infos]


def _prepare_sm100(info, s, a, b) -> _Timed:
    """A Blackwell step launched on device operands (runner.run_sm100 copies from the host each call)."""
    import cupy as cp
    from ..compile import load_module
    from ..gemm import sm100
    from ..runtime import encode_tensor_map, tensor_map_arg
    m, k = a.shape
    n = b.shape[0]
    maps = sm100.tensor_maps(s["name"], m, n, k)
    c, err = cp.zeros((m, n), cp.uint16), cp.zeros(1, cp.uint32)
    args = (*[tensor_map_arg(encode_tensor_map(t, d.data.ptr)) for t, d in zip(maps, (a, b, c))], c, np.int32(m),
            np.int32(n), np.int32(k), err, np.uint64(0))
    fn = load_module(s["file"]).get_function("gemm")
    fn.max_dynamic_shared_size_bytes = s["smem_bytes"]
    grid = sm100.launch_grid(s["name"], m, n, info.sm_count)

    def call():
        fn(grid, (s["threads"], 1, 1), args, shared_mem=s["smem_bytes"])

    def after():
        cp.cuda.Device().synchronize()
        code = int(err.get()[0])
        if code:
            raise RuntimeError(f"{s['name']}: a bounded wait on {sm100.GEMM_BARRIERS.get(code - 1, code)} gave up")

    def first():
        call()
        after()
    return _Timed(call, c, first, after)


def _command(argv) -> str:
    """The command line, less where its report was written (a path on the machine that ran it)."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--out":
            skip = True
        elif not a.startswith("--out="):
            out.append(a)
    return " ".join(["python -m bwlab.bench gemm", *out])


def _record(steps, rows, info, say) -> None:
    """The table and one CTA's stamps of every step at 4096^3, as the recording gemm_ladder."""
    import datetime
    import sys
    from ..gemm import runner
    from ..results import RECORDINGS, save_recording
    a, b = runner.random_operands(4096, 4096, 4096, seed=7)
    ref = runner.reference(a, b)
    stamps = []
    for s in steps:
        c, st = runner.run_stamps(s, a, b)
        res = runner.check(a, b, c, s.name, ref=ref)
        say(f"  stamps of {s.name}: {res}")
        stamps.append(st)
    table = np.array([r[:2] for r in rows])
    nums = np.array([r[2:] for r in rows], dtype=np.float64)
    path = save_recording(RECORDINGS, "gemm_ladder", {"table": table, "numbers": nums,
                                          "steps": np.array([s.name for s in steps]),
                                          "stamps": np.stack(stamps)},
                          stage="gemm", device=info.name, date=datetime.date.today().isoformat(),
                          command=_command(sys.argv[2:]),
                          params={"stamp_shape": [4096, 4096, 4096], "sms": info.sm_count, "columns": ["ms", "TFLOP/s", "ratio",
                                                                                   "predicted"]})
    say(f"recorded {path}")
