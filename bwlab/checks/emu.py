"""The PTX emulator checked against the GPU, and timed.

    python -m bwlab.validate emu [--tma N] [--store N] [--quick] [--out FILE]   (on an sm_90a GPU)
    python -m bwlab.bench emu [--out FILE]                                       (anywhere; CPU time)

`validate emu` runs every sm_90a kernel of the suite twice on the same inputs — on this GPU, then in
bwlab.emu (the same PTX, BWLAB_BACKEND=emulated) — and compares what each produced byte for byte: the
TMA harness on random loads (ranks 1-5, every swizzle, out-of-bounds boxes, traversal strides,
prefetches), the multicast harness on every validation cluster shape, the TMA store and reduce-add on
random boxes, random epilogues, every wgmma layout, the teaching kernels, the Hopper full flow, and
each Hopper ladder step at small shapes. A case passes when both produce the same bytes (and the same
MbarrierTimeout, where the case expects one). The emulator is correct when every case passes.

`bench emu` times the emulator on the teaching kernels, the full flow, the ladder and a few ordinary CUDA
kernels a learner writes (a 128^3 SGEMM with shared-memory tiles, a shuffle reduction, a shared-memory
histogram with atomics, a saxpy), each checked against NumPy (one process; NumPy may use more than one
core for the wgmma model's matrix products), and reports warp-instructions per second and their median
over the kernels. Goals: each teaching kernel < 1 s, full_flow_sm90 < 5 s, each ladder step at
256 x 512 x 192 < 20 s, the 128^3 SGEMM < 5 s. Time is virtual inside the emulator; these are the host's
seconds.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

from ..device import using_backend

__all__ = ["validate_main", "bench_main", "compare_all", "ORDINARY_KERNELS", "ordinary_benches"]

# Ordinary CUDA as a learner writes it: no TMA, no tensor cores.
ORDINARY_KERNELS = r"""
#define TILE 16
extern "C" __global__ void sgemm_tiled(const float* A, const float* B, float* C, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        As[ty][tx] = A[row * n + k0 + tx];
        Bs[ty][tx] = B[(k0 + ty) * n + col];
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    C[row * n + col] = acc;
}

extern "C" __global__ void reduce_sum(const float* x, float* out, int n) {
    __shared__ float partial[32];
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (threadIdx.x == 0) out[blockIdx.x] = v;
    }
}

extern "C" __global__ void histogram(const unsigned char* x, unsigned* hist, int n) {
    __shared__ unsigned h[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) h[i] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) atomicAdd(&h[x[i]], 1u);
    __syncthreads();
    for (int i = threadIdx.x; i < 256; i += blockDim.x) atomicAdd(&hist[i], h[i]);
}

extern "C" __global__ void saxpy(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def ordinary_benches():
    """[(name, goal in s, run)]: each run launches one ordinary kernel in the emulator and checks it."""
    from .. import emu
    mod = emu.RawModule(code=ORDINARY_KERNELS, name="ordinary.cu")
    rng = np.random.default_rng(0)
    n = 128
    a = rng.random((n, n), dtype=np.float32) - 0.5
    b = rng.random((n, n), dtype=np.float32) - 0.5
    da, db = emu.asarray(a), emu.asarray(b)
    dc = emu.zeros((n, n), np.float32)

    def sgemm():
        mod.get_function("sgemm_tiled")((n // 16, n // 16), (16, 16), (da, db, dc, np.int32(n)))
        if not np.allclose(dc.get(), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4):
            raise AssertionError("sgemm_tiled differs from NumPy")

    m = 1 << 15
    x = rng.random(m, dtype=np.float32)
    dx, dsum = emu.asarray(x), emu.zeros(64, np.float32)

    def reduce():
        mod.get_function("reduce_sum")((64,), (256,), (dx, dsum, np.int32(m)))
        if not np.isclose(float(dsum.get().astype(np.float64).sum()), float(x.astype(np.float64).sum()), rtol=1e-5):
            raise AssertionError("reduce_sum differs from NumPy")

    bytes_ = rng.integers(0, 256, 1 << 14, dtype=np.uint8)
    dbytes, dhist = emu.asarray(bytes_), emu.zeros(256, np.uint32)

    def hist():
        dhist.fill(0)
        mod.get_function("histogram")((16,), (256,), (dbytes, dhist, np.int32(bytes_.size)))
        if not np.array_equal(dhist.get(), np.bincount(bytes_, minlength=256)):
            raise AssertionError("histogram differs from NumPy")

    y = rng.random(m, dtype=np.float32)
    dxs, dys = emu.asarray(x), emu.zeros(m, np.float32)

    def saxpy():
        dys.set(y)
        mod.get_function("saxpy")((m // 256,), (256,), (np.float32(2.0), dxs, dys, np.int32(m)))
        if not np.array_equal(dys.get(), np.float32(2.0) * x + y):
            raise AssertionError("saxpy differs from NumPy")

    return [("sgemm_tiled 128^3 (16 x 16 SMEM tiles)", 5.0, sgemm),
            ("reduce_sum 32768 (shfl_down_sync)", 2.0, reduce),
            ("histogram 16384 bytes (shared atomics)", 2.0, hist),
            ("saxpy 32768", 2.0, saxpy)]




def _both(fn):
    """(GPU result, emulator result) of fn(); an exception is a result too (its type and barrier)."""
    out = []
    for b in ("auto", "emulated"):
        with using_backend(b):
            try:
                out.append(("ok", fn()))
            except Exception as e:  # noqa: BLE001 - the kind of failure is compared
                out.append(("raised", f"{type(e).__name__}" + (f" {getattr(e, 'barrier', '')}" if hasattr(e, "barrier")
                                                                else f": {str(e)[:300]}")))
    return out


def _same(a, b) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "raised":
        return a[1].split(":")[0] == b[1].split(":")[0]
    x, y = a[1], b[1]
    if isinstance(x, tuple):
        return len(x) == len(y) and all(_same(("ok", p), ("ok", q)) for p, q in zip(x, y))
    if isinstance(x, list):
        return len(x) == len(y) and all(_same(("ok", p), ("ok", q)) for p, q in zip(x, y))
    if x is None or isinstance(x, (str, int, float, bool)):
        return x == y
    x, y = np.asarray(x), np.asarray(y)
    return x.shape == y.shape and np.array_equal(x.view(np.uint8) if x.dtype != bool else x,
                                                 y.view(np.uint8) if y.dtype != bool else y)


class Tally:
    def __init__(self, say):
        self.say, self.rows = say, []

    def case(self, group: str, label: str, fn):
        t0 = time.perf_counter()
        gpu, em = _both(fn)
        ok = _same(gpu, em)
        self.rows.append((group, ok))
        if not ok:
            self.say(f"  DIFF {group}: {label}\n       GPU: {str(gpu[1])[:200] if gpu[0] == 'raised' else 'ran'}"
                     f"\n       emulator: {str(em[1])[:300] if em[0] == 'raised' else 'ran'}")
        return ok, time.perf_counter() - t0

    def summary(self):
        groups = {}
        for g, ok in self.rows:
            n, bad = groups.get(g, (0, 0))
            groups[g] = (n + 1, bad + (not ok))
        return groups


def compare_all(say=print, n_tma: int = 1000, n_store: int = 200, quick: bool = False, seed: int = 0) -> int:
    from .. import device
    info = device.gpu_info()
    if info is None or not info.has_wgmma:
        say("validate emu needs an sm_90a GPU to compare with (this machine has "
            f"{'none' if info is None else info.name})")
        return 2
    t = Tally(say)
    t0 = time.perf_counter()

    # TMA loads: the harness, random cases in batches (one CTA each)
    from ..tma.runner import launch_cases
    from .tma import random_cases
    cases = random_cases(n_tma, seed=2026 + seed)
    for i in range(0, len(cases), 50):
        batch = cases[i:i + 50]

        def run(batch=batch):
            r = launch_cases(batch)
            return (r.windows, [bool(x) for x in r.done], [e is None for e in r.errors],
                    None if r.timeout is None else type(r.timeout).__name__)
        gpu, em = _both(run)
        for k in range(len(batch)):
            ok = gpu[0] == em[0] == "ok" and np.array_equal(gpu[1][0][k], em[1][0][k]) and \
                gpu[1][1][k] == em[1][1][k]
            t.rows.append(("TMA load (random harness cases)", ok))
            if not ok:
                say(f"  DIFF TMA case {i + k}")
    say(f"TMA loads: {len(cases)} random cases compared ({time.perf_counter() - t0:.0f} s so far)")

    # the teaching kernel, a wrong expect_tx included
    from ..lab import TeachingKernel
    from ..tma import TensorMap, run_teach
    rng = np.random.default_rng(5 + seed)
    g = rng.integers(0, 2 ** 16, (96, 80), dtype=np.uint16)
    for sw, inner in (("none", 64), ("32B", 16), ("64B", 32), ("128B", 64)):
        tm = TensorMap("uint16", (80, 96), (inner, 24), swizzle=sw)
        for coords in ((8, 5), (16, 80), (0, -3)):
            t.case("teach_tma.cu", f"{sw} {coords}", lambda tm=tm, coords=coords: run_teach(g, tm, coords))
    bad = TeachingKernel("teach_tma.cu").replace("const u32 tx_bytes = box_bytes;", "const u32 tx_bytes = box_bytes + 16;")
    t.case("teach_tma.cu", "expect_tx + 16 (MbarrierTimeout)",
           lambda: run_teach(g, TensorMap("uint16", (80, 96), (64, 24)), (0, 0), kernel=bad))

    # multicast: the harness on every validation shape, the teaching kernel
    from ..multicast import MulticastLoad, make_operands, teach_config
    from ..multicast.case import run_teach as mc_teach
    from ..multicast.runner import launch_multicast
    from .multicast import validation_configs
    for cfg in validation_configs(quick=quick):
        ops = make_operands(cfg, seed=1 + seed)
        t.case("TMA multicast (harness)", str(cfg.cluster),
               lambda cfg=cfg, ops=ops: (launch_multicast(cfg, ops).smem,))
    for cl in ((2, 1), (2, 2), (1, 4), (2, 4)):
        cfg = teach_config(cluster=cl, grid_clusters=(2, 1))
        case = MulticastLoad(cfg, seed=5 + seed)
        t.case("teach_multicast.cu", str(cl), lambda cfg=cfg, case=case: mc_teach(cfg, case.operands))
    say(f"multicast compared ({time.perf_counter() - t0:.0f} s so far)")

    # TMA store / reduce-add (random boxes), epilogues, the teaching kernel
    from ..epilogue.problem import teach_problem
    from ..epilogue.case import run_teach as st_teach
    from ..epilogue.runner import run_epilogue
    from .store import random_epilogue_problem, random_store_cases
    for op in ("store", "reduce_add"):
        for k, c in enumerate(random_store_cases(n_store if op == "store" else n_store // 2, seed=7 + seed, op=op)):
            t.case(f"TMA {op} (random boxes)", str(k), lambda c=c: c.run())
    rng = np.random.default_rng(9 + seed)
    for k in range(10 if quick else 40):
        p = random_epilogue_problem(rng)
        acc = rng.standard_normal(p.acc_shape).astype(np.float32)
        c_bits = None
        if p.use_c:
            from ..epilogue.rules import raw_dtype
            c_bits = rng.integers(0, 2 ** 8, p.buffer_shape).astype(raw_dtype(p.dtype))
        t.case("epilogue_tile (random epilogues)", str(k), lambda p=p, acc=acc, c_bits=c_bits: run_epilogue(p, acc, c_bits))
    for M, N in ((150, 70), (300, 100)):
        p = teach_problem(M, N)
        acc = rng.standard_normal(p.acc_shape).astype(np.float32)
        t.case("teach_store.cu", f"{M}x{N}", lambda p=p, acc=acc: st_teach(p, acc))
    say(f"stores compared ({time.perf_counter() - t0:.0f} s so far)")

    # wgmma: every layout of the validator, the teaching kernel
    from .. import umma
    regular, _ = umma.wgmma_cases(seed=3 + seed)
    for case in regular:
        t.case("wgmma (every layout)", case.label(), lambda case=case: umma.launch_wgmma(case)[0])
    tc = umma.WgmmaCase("f16", 64, 32, "K", "none", "K", "none", seed=1 + seed)
    t.case("teach_wgmma.cu", tc.label(), lambda: umma.run_teach_wgmma(tc))

    # the Hopper full flow and the ladder
    from ..flow import FlowProblem
    from ..flow.runner import run_hopper, run_hybrid
    for fs in (seed, seed + 1):
        p = FlowProblem(fs)
        t.case("full_flow_sm90 (full_flow_hopper)", f"seed {fs}", lambda p=p: run_hopper(p, repeat=1)[0])
        t.case("full_flow_sm90 (load dump + store)", f"seed {fs}",
               lambda p=p: tuple(run_hybrid(p)[k] for k in ("smem_a", "smem_b", "smem_d", "gmem_d")))
    from ..gemm import runner as gr
    from ..gemm.ladder import STEPS
    from ..hw.dtypes import from_float
    shapes = [(256, 512, 192)] + ([] if quick else [(512, 512, 256)])
    for (m, n, k) in shapes:
        rng = np.random.default_rng(m + n + k + seed)
        a = from_float(rng.random((m, k), dtype=np.float32) * 2 - 1, "bf16")
        b = from_float(rng.random((n, k), dtype=np.float32) * 2 - 1, "bf16")
        for s in STEPS:
            def gpu_or_emu(s=s, a=a, b=b):
                if os.environ.get("BWLAB_BACKEND") == "emulated":
                    return gr.run_step_emulated(s.name, a, b)[0]
                import cupy as cp
                return cp.asnumpy(gr.run_step(s.name, cp.asarray(a), cp.asarray(b)))
            t.case(f"gemm_sm90 ladder {m}x{n}x{k}", s.name, gpu_or_emu)
    from ..hello import hello_roundtrip
    t.case("hello_bulk.cu", "3 CTAs", lambda: hello_roundtrip(4096, blocks=3))

    groups = t.summary()
    say("")
    say(f"{'kernel / cases':<44} {'cases':>6} {'differ':>7}")
    total = bad = 0
    for g, (n, b) in groups.items():
        say(f"{g:<44} {n:>6} {b:>7}")
        total, bad = total + n, bad + b
    say(f"{'all':<44} {total:>6} {bad:>7}")
    say(f"GPU vs emulator: {'PASS' if bad == 0 else 'FAIL'} — {total} cases, {bad} differ "
        f"({time.perf_counter() - t0:.0f} s)")
    return 0 if bad == 0 else 1


def _report(out):
    lines = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)
    return say, lines


def validate_main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bwlab.validate emu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--tma", type=int, default=1000, help="random TMA load cases (default 1000)")
    ap.add_argument("--store", type=int, default=200, help="random TMA store cases (and half as many reduce-adds)")
    ap.add_argument("--quick", action="store_true", help="fewer shapes")
    ap.add_argument("--out", help="also write the report here")
    ap.add_argument("--seed", type=int, default=0, help="new inputs (every case's seed plus this) and, for the "
                    "emulator, this scheduler seed (BWLAB_EMU_SEED): other interleavings")
    a = ap.parse_args(argv)
    if a.seed:
        os.environ["BWLAB_EMU_SEED"] = str(a.seed)
    say, lines = _report(a.out)
    from .. import device
    info = device.gpu_info()
    say(f"{info.name if info else 'no GPU'}: every sm_90a kernel on this GPU and in bwlab.emu, byte for byte")
    say(f"inputs seed offset {a.seed}, emulator scheduler seed {os.environ.get('BWLAB_EMU_SEED', '0')}")
    rc = compare_all(say, a.tma, a.store, a.quick, a.seed)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return rc


def bench_main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bwlab.bench emu", description="the emulator's speed (CPU seconds)")
    ap.add_argument("--out", help="also write the report here")
    args = ap.parse_args(argv)
    say, lines = _report(args.out)
    from .. import emu
    from ..runtime import EMULATED
    import platform
    from .sustained import NOT_APPLICABLE
    say(NOT_APPLICABLE)
    say(f"bwlab.emu on {platform.processor() or platform.machine()}, {os.cpu_count()} CPU(s) visible, load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())} at the start; host seconds per launch (module decode "
        "excluded, median of 3; CPU = this process's CPU seconds), warp-instructions per second")
    rows = []

    def timed(name, goal, fn):
        fn()   # compile and decode once
        ts, cs, steps = [], [], 0
        for _ in range(3):
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            ts.append(time.perf_counter() - t0)
            cs.append(time.process_time() - c0)
            steps = emu.last_launch().steps
        t, cpu = sorted(ts)[1], sorted(cs)[1]
        rows.append((name, t, steps, goal, cpu))
        say(f"  {name:<40} {t:7.3f} s  (CPU {cpu:7.3f} s)  {steps:>8} warp-instr  {steps / t:>9.0f}/s  "
            f"{steps / max(cpu, 1e-9):>9.0f}/CPU-s  goal < {goal:g} s  {'ok' if t < goal else 'OVER'}")

    with using_backend("emulated"):
        from ..tma import TensorMap, run_teach
        g = np.arange(96 * 80, dtype=np.uint16).reshape(96, 80)
        timed("teach_tma.cu (64 x 24 box, 128B)", 1.0, lambda: run_teach(g, TensorMap("uint16", (80, 96), (64, 24),
                                                                                         swizzle="128B"), (16, 8)))
        from ..multicast import MulticastLoad, teach_config
        from ..multicast.case import run_teach as mc_teach
        cfg = teach_config(cluster=(2, 2))
        case = MulticastLoad(cfg, seed=5)
        timed("teach_multicast.cu (cluster 2 x 2)", 1.0, lambda: mc_teach(cfg, case.operands))
        from ..epilogue.problem import teach_problem
        from ..epilogue.case import run_teach as st_teach
        p = teach_problem(150, 70)
        acc = np.ones(p.acc_shape, np.float32)
        timed("teach_store.cu (150 x 70)", 1.0, lambda: st_teach(p, acc))
        from .. import umma
        tc = umma.WgmmaCase("f16", 64, 32, "K", "none", "K", "none", seed=1)
        timed("teach_wgmma.cu (m64n64, K = 32)", 1.0, lambda: umma.run_teach_wgmma(tc))
        from ..flow import FlowProblem
        from ..flow.runner import run_hopper
        fp = FlowProblem(0)
        timed("full_flow_sm90 (full_flow_hopper)", 5.0, lambda: run_hopper(fp, repeat=1))
        from ..gemm import runner as gr
        from ..gemm.ladder import STEPS
        from ..hw.dtypes import from_float
        rng = np.random.default_rng(0)
        a = from_float(rng.random((256, 192), dtype=np.float32) * 2 - 1, "bf16")
        b = from_float(rng.random((512, 192), dtype=np.float32) * 2 - 1, "bf16")
        for s in STEPS:
            timed(f"{s.name} 256 x 512 x 192", 20.0, lambda s=s: gr.run_step_emulated(s.name, a, b))
        for name, goal, fn in ordinary_benches():
            timed(name, goal, fn)
    _ = EMULATED
    over = [r for r in rows if r[1] >= r[3]]
    rates = sorted(r[2] / r[1] for r in rows)
    crates = sorted(r[2] / max(r[4], 1e-9) for r in rows)
    say(f"median over the {len(rows)} kernels: {rates[len(rates) // 2]:.0f} warp-instructions/s, "
        f"{crates[len(crates) // 2]:.0f} per CPU second; load average at the end "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    say(f"{len(rows) - len(over)} of {len(rows)} within their goals")
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if not over else 1
