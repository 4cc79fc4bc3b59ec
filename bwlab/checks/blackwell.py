"""First contact with a Blackwell GPU: every sm_100a check, hardware beside emulator beside model.

    python -m bwlab.validate blackwell [--out blackwell_report.txt] [--quick]
    python -m bwlab.validate blackwell --emulator-only      (no sm_100 GPU: emulator beside model only)

None of bwlab's tcgen05 kernels has run on silicon: they were written against the PTX ISA and CUTLASS,
executed only in bwlab's PTX emulator. This command is for the first owner of a B200 (sm_100): it runs
each sm_100a check on the GPU — each case in a worker process with a watchdog, so one fault or hang
costs that case and never the report — then the same case in the emulator and in the model, compares
the three byte for byte, and writes one plain-text report to send back (the GPU, the driver, the tree,
the command, and per case what agreed and where the first difference is).

The cases: tcgen05.mma on the validation UmmaCases (f16, bf16, tf32; K- and MN-major; every swizzle; M 64
and 128; an f16 accumulator), the teaching kernels teach_umma.cu and teach_tmem.cu, every tcgen05.ld
shape of tmem_sm100.cu, the whole trip of full_flow_sm100.cu, the block-scaled teaching kernel
teach_blockscaled.cu (MXFP8 and NVFP4: scale factors through SMEM and tcgen05.cp into TMEM, kind::mxf8f6f4 /
kind::mxf4nvf4; its numerics follow MMA-Sim, never measured), each step of the sm_100 GEMM ladder at a
small shape and each pipelined or persistent step (2-6) again at a shape where, in the emulator, every
stage, TMEM accumulator and barrier phase is reused (`reuse_shape`; not with --quick), and each ladder
step with a forced timeout followed by a normal launch (the kernels must free TMEM on their error path,
or the second launch waits in tcgen05.alloc: the watchdog reports that hang).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import subprocess
import time

import numpy as np

from ..device import using_backend

__all__ = ["validate_main", "cases", "run_case"]

HW_LIMIT_S = 60.0     # per case, after the worker's imports: a hang is reported, not waited for


def _umma_cases():
    from .. import umma
    return [umma.UmmaCase("f16", "f32", 128, 256, 64),
            umma.UmmaCase("bf16", "f32", 128, 64, 64, "MN", "128B", "MN", "64B", 1024, 32768, accumulate=True),
            umma.UmmaCase("f16", "f32", 64, 32, 32, "K", "32B", "MN", "none", 2048, 16384),
            umma.UmmaCase("f16", "f16", 128, 16, 64, "K", "none", "K", "64B", 16, 40960),
            umma.UmmaCase("tf32", "f32", 128, 128, 32, "K", "128B", "MN", "128B_base32B", 0, 65536),
            umma.UmmaCase("tf32", "f32", 64, 64, 16, "MN", "128B_base32B", "K", "32B", 512, 16384, accumulate=True)]


def _blockscaled_cases():
    from ..umma.blockscaled_case import BlockScaledCase
    return [BlockScaledCase("mxfp8", 128), BlockScaledCase("nvfp4", 128), BlockScaledCase("mxfp8", 8, seed=2),
            BlockScaledCase("nvfp4", 72, seed=3, swizzle="none")]


def _gemm_inputs(shape=(256, 512, 192)):
    from ..gemm import sm100
    return sm100.example_inputs(*shape, seed=1)


def _pipelined(steps):
    """The ladder steps with a ring of stages or persistent CTAs (2-6): the ones a larger shape reuses."""
    from ..gemm import sm100
    return [s for s in steps if sm100.step_info(s)["stages"] > 1 or sm100.step_info(s)["persistent"]]


def reuse_shape(step) -> tuple:
    """(M, N, K) at which, in the emulator (EMULATED_SMS SMs), every stage, TMEM accumulator and barrier
    phase of the step is reused (bwlab.checks.mutants.reuse_shape)."""
    from . import mutants
    from ..gemm import sm100
    return mutants.reuse_shape(f"sm100/{sm100.step_info(step)['name']}")


def cases(quick: bool = False) -> list:
    """(kind, argument, label) of every case, in the order they run."""
    from ..gemm import sm100
    from ..tmem.forms import all_accesses
    out = [("umma", i, c.label()) for i, c in enumerate(_umma_cases())]
    out += [("teach_umma", 0, "teach_umma.cu, f16 128 x 64 x 64"), ("teach_tmem", 0, "teach_tmem.cu")]
    bsc = _blockscaled_cases()
    out += [("blockscaled", i, bsc[i].label() + f", seed {bsc[i].seed}, {bsc[i].swizzle}")
            for i in (range(2) if quick else range(len(bsc)))]
    acc = all_accesses()
    picks = range(0, len(acc), max(1, len(acc) // 8)) if quick else range(len(acc))
    out += [("tmem_ld", i, f"tcgen05.ld {acc[i].label()}") for i in picks]
    out += [("flow", seed, f"full_flow_sm100.cu, seed {seed}") for seed in ((0,) if quick else (0, 1))]
    steps = [s["step"] for s in sm100.STEPS_SM100]
    out += [("gemm", s, f"gemm_sm100 {sm100.step_info(s)['name']} 256 x 512 x 192") for s in steps]
    out += [("gemm_reuse", s, f"gemm_sm100 {sm100.step_info(s)['name']} {' x '.join(map(str, reuse_shape(s)))} "
                              "(every stage, accumulator and phase reused)") for s in _pipelined(steps) if not quick]
    out += [("timeout_then_again", s, f"gemm_sm100 {sm100.step_info(s)['name']}: forced timeout, then a normal "
                                      "launch") for s in (steps[:2] if quick else steps)]
    return out


def run_case(kind: str, arg):
    """One case in this process, in whatever tier BWLAB_BACKEND selects (GPU or emulator): its bytes."""
    from .. import tmem, umma
    from ..gemm import runner, sm100
    if kind == "umma":
        return _umma_cases()[arg].run()
    if kind == "teach_umma":
        return umma.run_teach_umma(umma.UmmaCase("f16", "f32", M=128, N=64, K=64, b_base=16384))
    if kind == "teach_tmem":
        return tmem.run_teach()
    if kind == "blockscaled":
        return _blockscaled_cases()[arg].run()
    if kind == "tmem_ld":
        from ..tmem import model
        from ..tmem.forms import all_accesses
        from ..tmem.runner import run_ld_roundtrip
        a = all_accesses()[arg]
        return run_ld_roundtrip(a, model.pattern_image(5), 0 if a.width > 256 else 32)
    if kind == "flow":
        from ..flow import Flow
        from ..flow.case import flow_tier
        t = Flow(arg).trace(flow_tier())
        return np.concatenate([np.asarray(v).reshape(-1).view(np.uint8) for v in t.arrays.values()])
    A, B = _gemm_inputs(reuse_shape(arg) if kind == "gemm_reuse" else (256, 512, 192))
    emulated = os.environ.get("BWLAB_BACKEND") == "emulated"

    def step(defines=None):
        if emulated:
            return sm100.run_sm100_emulated(arg, A, B, defines=defines)[0]
        if defines:
            raise ValueError("defines are applied in the emulator only")
        return runner.run_sm100(arg, A, B)
    if kind in ("gemm", "gemm_reuse"):
        return step()
    if kind == "timeout_then_again":
        from ..runtime import MbarrierTimeout
        try:
            if emulated:
                step({"BW_WAIT_TIMEOUT_NS": "0"})
            else:
                _timeout_on_gpu(arg, A, B)
            first = "completed"
        except (MbarrierTimeout, RuntimeError):
            first = "timed out"
        return first, step()
    raise ValueError(f"unknown case kind {kind!r}")


def _timeout_on_gpu(step, A, B):
    """The step built with a zero wait budget, launched once on this GPU (its bounded waits give up)."""
    import cupy as cp
    from ..compile import load_module
    from ..device import gpu_info
    from ..gemm import sm100
    from ..runtime import launch, encode_tensor_map, tensor_map_arg
    s = sm100.step_info(step)
    a, b, M, N, K = sm100._operands(A, B)
    maps = sm100.tensor_maps(step, M, N, K)
    d = [cp.asarray(a), cp.asarray(b), cp.zeros((M, N), cp.uint16)]
    err = cp.zeros(1, cp.uint32)
    mod = load_module(s["file"], defines={"BW_WAIT_TIMEOUT_NS": "0"})
    launch(mod, "gemm", sm100.launch_grid(step, M, N, gpu_info().sm_count), (s["threads"],),
           (*[tensor_map_arg(encode_tensor_map(t, x.data.ptr)) for t, x in zip(maps, d)], d[2], np.int32(M), np.int32(N),
            np.int32(K), err, np.uint64(0)), shared_mem=s["smem_bytes"], barrier_names=sm100.GEMM_BARRIERS,
           cluster=(s["cluster"], 1, 1) if s["cluster"] > 1 else None)
    if int(cp.asnumpy(err)[0]):
        raise RuntimeError("timed out")


def model_of(kind: str, arg):
    """What the model says the case produces (None where the model has no direct counterpart)."""
    from .. import tmem, umma
    from ..gemm import runner, sm100
    if kind == "umma":
        return _umma_cases()[arg].model()
    if kind == "teach_umma":
        return umma.UmmaCase("f16", "f32", M=128, N=64, K=64, b_base=16384).model()
    if kind == "teach_tmem":
        return tmem.teach_case(None).model()
    if kind == "blockscaled":
        return _blockscaled_cases()[arg].model()
    if kind == "tmem_ld":
        from ..tmem import model
        from ..tmem.forms import all_accesses
        a = all_accesses()[arg]
        return model.ld_roundtrip_model(a, model.pattern_image(5), 0 if a.width > 256 else 32)
    if kind == "flow":
        from ..flow import Flow
        t = Flow(arg).model()
        return np.concatenate([np.asarray(v).reshape(-1).view(np.uint8) for v in t.arrays.values()])
    A, B = _gemm_inputs(reuse_shape(arg) if kind == "gemm_reuse" else (256, 512, 192))
    if kind in ("gemm", "gemm_reuse"):
        return sm100.reference_bf16(A, B)
    return "timed out", sm100.reference_bf16(A, B)




def _hardware(kind, arg):
    from ..sandbox import KernelFault, KernelHang, run_isolated
    try:
        return "ok", run_isolated(run_case, kind, arg, name=f"{kind} {arg}", limit=HW_LIMIT_S, start_timeout=300)
    except KernelHang as e:
        return "HANG", str(e)
    except KernelFault as e:
        return "FAULT", str(e)
    except Exception as e:  # noqa: BLE001 - an exception is a result of the case
        return "ERROR", f"{type(e).__name__}: {e}"


def _local(fn, kind, arg, backend):
    t0 = time.perf_counter()
    try:
        with using_backend(backend):
            return "ok", fn(kind, arg), time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001
        return "ERROR", f"{type(e).__name__}: {str(e)[:500]}", time.perf_counter() - t0


def _bytes(x):
    if isinstance(x, tuple):
        return tuple(_bytes(v) for v in x)
    a = np.ascontiguousarray(np.asarray(x))
    return a.view(np.uint8).reshape(-1) if a.dtype.kind not in "US" else a


def _diff(a, b) -> str:
    """'' when equal, else where they first differ."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        if not (isinstance(a, tuple) and isinstance(b, tuple)) or len(a) != len(b):
            return "different kinds of result"
        for k, (x, y) in enumerate(zip(a, b)):
            d = _diff(x, y)
            if d:
                return f"part {k}: {d}"
        return ""
    if isinstance(a, str) or isinstance(b, str) or np.asarray(a).dtype.kind in "US":
        return "" if str(a) == str(b) else f"{a!r} vs {b!r}"
    x, y = _bytes(a), _bytes(b)
    if x.size != y.size:
        return f"{x.size} bytes vs {y.size}"
    bad = np.flatnonzero(x != y)
    return "" if not bad.size else f"{bad.size} of {x.size} bytes differ, the first at byte {int(bad[0])}"


def _provenance() -> list:
    from .. import device
    info = device.gpu_info()
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                timeout=5, cwd=os.path.dirname(__file__)).stdout.strip() or "not a checkout"
    except Exception:  # noqa: BLE001
        commit = "not a checkout"
    try:
        drv = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:  # noqa: BLE001
        drv = "nvidia-smi not available"
    return [f"GPU: {info.name + ' (' + info.sm + ')' if info else 'none'}; nvidia-smi: {drv}",
            f"bwlab tree: {commit}; Python {platform.python_version()}; {platform.platform()}",
            f"date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}"]


def validate_main(argv=None) -> int:
    from .common import EXIT_NO_GPU
    ap = argparse.ArgumentParser(prog="python -m bwlab.validate blackwell", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="blackwell_report.txt", help="the report to send back")
    ap.add_argument("--quick", action="store_true",
                    help="a subset of the tcgen05.ld shapes and timeouts, no reuse-shape GEMM steps")
    ap.add_argument("--emulator-only", action="store_true",
                    help="no sm_100 GPU: run the emulator and the model only (a dry run of the report)")
    args = ap.parse_args(argv)
    from .. import device
    info = device.gpu_info()
    on_hw = info is not None and info.has_tcgen05 and not args.emulator_only
    if not on_hw and not args.emulator_only:
        print("validate blackwell needs a datacenter Blackwell GPU (sm_100: tcgen05 and TMEM); this machine has "
              f"{info.name + ' (' + info.sm + ')' if info else 'none'}. --emulator-only runs the emulator and "
              "the model without it.")
        return EXIT_NO_GPU
    lines = ["bwlab first contact with Blackwell: every sm_100a check on " +
             ("this GPU, in the PTX emulator and in the model" if on_hw else "the PTX emulator and the model "
              "(--emulator-only: no hardware column)"), *_provenance(),
             f"command: python -m bwlab.validate blackwell {' '.join(argv or [])}".rstrip(), ""]

    def say(s=""):
        print(s, flush=True)
        lines.append(s)
    for line in lines[:]:
        print(line)
    if on_hw:   # compile everything here first, so that each worker's build is a cache hit
        from ..compile import compile_cuda
        for f in ("teach_umma.cu", "umma_sm100.cu", "teach_tmem.cu", "tmem_sm100.cu", "full_flow_sm100.cu"):
            compile_cuda(f, arch="sm_100a")
    bad = 0
    all_cases = cases(args.quick)
    for kind, arg, label in all_cases:
        emu_state, emu_val, t_emu = _local(run_case, kind, arg, "emulated")
        mod_state, mod_val, _ = _local(model_of, kind, arg, "model")
        cols = []
        if on_hw:
            hw_state, hw_val = _hardware(kind, arg)
            if hw_state != "ok":
                cols.append(f"hardware {hw_state}: {str(hw_val)[:300]}")
            else:
                d = _diff(hw_val, emu_val) if emu_state == "ok" else "the emulator failed"
                cols.append("hardware == emulator" if not d else f"hardware vs emulator: {d}")
                d = _diff(hw_val, mod_val) if mod_state == "ok" else "the model failed"
                cols.append("hardware == model" if not d else f"hardware vs model: {d}")
        if emu_state != "ok":
            cols.append(f"emulator {emu_state}: {emu_val}")
        elif mod_state != "ok":
            cols.append(f"model {mod_state}: {mod_val}")
        else:
            d = _diff(emu_val, mod_val)
            cols.append("emulator == model" if not d else f"emulator vs model: {d}")
        ok = all("==" in c for c in cols)
        bad += not ok
        say(f"{'ok  ' if ok else 'DIFF'} {label:<58s} {'; '.join(cols)}  (emulator {t_emu:.1f} s)")
    say("")
    say(f"{len(all_cases)} cases, {bad} with a difference or a failure: {'PASS' if bad == 0 else 'FAIL'}")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"report written to {args.out}: please send it back with the tree it names")
    return 0 if bad == 0 else 1
