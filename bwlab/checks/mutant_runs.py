"""Mutation testing, the running half: each mutant in a worker process of its own, at a shape that reuses every
stage, accumulator buffer and barrier phase, classified by how it ended (`bwlab.checks.mutants` lists the classes).

The worker gets a private copy of cuda_src with the one file changed (BWLAB_CUDA_SRC) and a CPU-time limit: a hang
the emulator does not diagnose costs that mutant, never the run.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .mutation import TARGETS, Mutant, Target

__all__ = ["CPU_LIMIT_S", "PHASE_REUSE", "LOUD", "reuse_counts", "reuse_shape", "Outcome", "classify", "run_mutant"]

CPU_LIMIT_S = 60           # per mutant (worker process, imports and NVRTC included)
PHASE_REUSE = 2            # every barrier phase parity completes at least this often: each stage and each
                           # accumulator buffer is used 2 * PHASE_REUSE times per CTA (its ring wraps twice)
LOUD = ("named", "hang")


# ---- shapes that reuse every stage, accumulator buffer and barrier phase -----------------------------
def reuse_counts(target: Target | str, M: int, N: int, K: int, sms: int | None = None) -> dict:
    """At (M, N, K) with the emulator's SM count: the fewest uses any pipeline stage, accumulator buffer
    (sm_100a: a TMEM accumulator; sm_90a: the CTA's registers, one tile at a time) gets in one CTA,
    the fewest tiles (work units) one CTA walks, and the CTAs launched. Computed from the kernel's stages,
    tile counts and launch grid."""
    t = TARGETS[target] if isinstance(target, str) else target
    if t.arch == "sm_90a":
        from ..gemm import runner
        from ..gemm.ladder import BK, split_count, step
        s = step(t.step)
        sms = runner.EMULATED_SMS if sms is None else sms
        tiles = (M // s.bm) * (N // s.bn)
        kb = K // BK
        splits = split_count(M, N, K, sms) if s.split_k else 1
        if not s.persistent:
            units, kb_unit, ctas = 1, kb, tiles
        elif s.split_k:
            ctas = s.grid(M, N, sms, K)[0]
            units, kb_unit = (tiles * splits) // ctas, kb // splits
        else:
            ctas = s.grid(M, N, sms * s.cluster, K)[0]
            units, kb_unit = (tiles // s.cluster) // (ctas // s.cluster), kb
        stages, bufs = s.stages, 1
    else:
        from ..gemm import sm100
        info, k = sm100.step_info(int(t.step)), sm100.kernel_constants(int(t.step))
        sms = sm100.EMULATED_SMS if sms is None else sms
        tiles = (M // (k["CLUSTER"] * k["BM"])) * (N // k["BN"])
        kb_unit = K // k["BK"]
        if info["persistent"]:
            ctas = sm100.launch_grid(int(t.step), M, N, sms * k["CLUSTER"])[0]
            units = tiles // (ctas // k["CLUSTER"])
        else:
            units, ctas = 1, tiles * k["CLUSTER"]
        splits = 1
        stages, bufs = k["STAGES"], k.get("ACC_BUFS", 1)
    return {"stage_uses": (units * kb_unit) // stages, "buffer_uses": units // bufs, "tiles_per_cta": units,
            "stages": stages, "buffers": bufs, "ctas": ctas, "splits": splits}


def reuse_shape(target: Target | str, reuse: int = PHASE_REUSE) -> tuple:
    """The smallest (M, N, K) (fewest multiply-adds) at which, with the emulator's SM count, every
    pipeline stage and accumulator buffer of a pipelined or persistent step is used 2 * `reuse` times in
    each CTA (each barrier phase parity completes `reuse` times), a persistent CTA walks at least two
    tiles, and split-K cuts K in at least two pieces (both the 'not last' and the 'last adds' paths run)."""
    t = TARGETS[target] if isinstance(target, str) else target
    need = 2 * reuse
    if t.arch == "sm_90a":
        from ..gemm.ladder import step
        s = step(t.step)
        m0, n0, persistent, split_k = s.m_multiple, s.bn, s.persistent, s.split_k
    else:
        from ..gemm import sm100
        k = sm100.kernel_constants(int(t.step))
        m0, n0, persistent = k["CLUSTER"] * k["BM"], k["BN"], sm100.step_info(int(t.step))["persistent"]
        split_k = False
    best = None
    for mi in range(1, 9):
        for ni in range(1, 9):
            for ki in range(1, 33):
                M, N, K = m0 * mi, n0 * ni, 64 * ki
                if best is not None and M * N * K >= best[0]:
                    continue
                c = reuse_counts(t, M, N, K)
                if c["stage_uses"] < need or (c["buffers"] > 1 and c["buffer_uses"] < need) or \
                        (persistent and c["tiles_per_cta"] < 2) or (split_k and c["splits"] < 2):
                    continue
                best = (M * N * K, (M, N, K))
    if best is None:
        raise ValueError(f"{t.name}: no shape up to 8 x 8 tiles and K = 2048 reuses every stage {need} times")
    return best[1]


# ---- running one target (in the worker) ------------------------------------------------------------------
def _exact_inputs(M, N, K, seed):
    from ..gemm import sm100
    return sm100.example_inputs(M, N, K, seed=seed)


def _run_sm90_step(t: Target, shape=None):
    import numpy as np
    from ..gemm import runner, sm100
    M, N, K = shape or reuse_shape(t)
    a, b = _exact_inputs(M, N, K, 11)
    c, run = runner.run_step_emulated(t.step, a, b)
    return np.array_equal(c, sm100.reference_bf16(a, b)), run


def _run_sm100_step(t: Target, shape=None):
    import numpy as np
    from ..gemm import sm100
    M, N, K = shape or reuse_shape(t)
    a, b = _exact_inputs(M, N, K, 12)
    c, run = sm100.run_sm100_emulated(int(t.step), a, b)
    return np.array_equal(c, sm100.reference_bf16(a, b)), run


def _run_flow_sm90(t: Target, shape=None):
    """Every kernel of full_flow_sm90.cu: full_flow_hopper, and the hybrid tier's flow_load_dump and
    flow_store_registers (the model's MMA between them)."""
    import numpy as np
    from ..flow import FlowProblem
    from ..flow.case import GPU_SOURCES
    from ..flow.model import flow_model
    from ..flow.runner import run_hopper, run_hybrid
    from ..flow.trace import Trace
    p = FlowProblem(0)
    d, _ = run_hopper(p, repeat=1)
    hybrid = Trace("hybrid", p, run_hybrid(p), GPU_SOURCES["hybrid"])
    return np.array_equal(d[:p.M], p.reference()) and not d[p.M:].any() and \
        flow_model(p).compare(hybrid, "emulator").ok, None


def _run_flow_sm100(t: Target, shape=None):
    from ..flow import runner
    from ..flow.case import GPU_SOURCES
    from ..flow.model import flow_model
    from ..flow.problem import FlowProblem
    from ..flow.trace import Trace
    p = FlowProblem(3)
    got = Trace("hardware", p, runner.run_hardware(p, emulated=True), GPU_SOURCES["hardware"])
    return flow_model(p).compare(got, "emulator").ok, None


def _run_teach_tma(t: Target, shape=None):
    import numpy as np
    from ..tma import TensorMap, run_teach, tma_load_model
    g = np.random.default_rng(7).integers(0, 2 ** 16, (96, 80), dtype=np.uint16)
    tm = TensorMap("uint16", (80, 96), (64, 24), swizzle="128B")
    return np.array_equal(run_teach(g, tm, (8, 5)), tma_load_model(g, tm, (8, 5))), None


def _run_teach_multicast(t: Target, shape=None):
    from .. import multicast as mc
    case = mc.MulticastLoad(mc.teach_config(), kernel="teach_multicast.cu")
    return case.check(case.run()).ok, None


def _run_teach_wgmma(t: Target, shape=None):
    from .. import umma
    case = umma.WgmmaCase("f16", 64, 32, "K", "none", "K", "none", seed=1)
    return case.check(umma.run_teach_wgmma(case)).ok, None


def _run_teach_store(t: Target, shape=None):
    import numpy as np
    from ..epilogue.case import Epilogue
    from ..epilogue.problem import teach_problem
    p = teach_problem(256, 64)
    acc = np.random.default_rng(0).standard_normal(p.acc_shape).astype(np.float32)
    case = Epilogue(p, acc, None, None, kernel="teach_store.cu")
    return case.check(case.run()).ok, None


def _run_teach_umma(t: Target, shape=None):
    from .. import umma
    case = umma.UmmaCase("f16", "f32", 128, 64, 64, b_base=16384)
    return case.check(umma.run_teach_umma(case)).ok, None


def _run_teach_tmem(t: Target, shape=None):
    import numpy as np
    from ..tmem import case, teach
    return np.array_equal(case.run_teach(), teach.teach_model()), None


# ---- classification ----------------------------------------------------------------------------------------
@dataclass
class Outcome:
    mutant: str
    result: str        # named | hang | wrong | pass | limit | error | n/a
    detail: str        # the exception's class and first line, or what differed
    cpu_s: float = 0.0
    rule_breaking: bool = True
    why_not: str = ""
    message: str = ""  # the whole error message (the report keeps its first line, `detail`)


def classify(exc: BaseException | None, ok: bool | None) -> tuple:
    """(result, detail) of a run that raised `exc` or finished with `ok` (its result equals the model)."""
    if exc is None:
        return ("pass", "") if ok else ("wrong", "finished without an error; the result differs from the model")
    from .. import emu as E
    from ..compile import CompileError
    from ..runtime import MbarrierTimeout
    name = type(exc).__name__
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    if isinstance(exc, CompileError):
        return "n/a", f"{name}: {first}"
    if isinstance(exc, (E.EmuHang, E.TmemAllocHang, MbarrierTimeout)):
        return "hang", f"{name}: {first}"
    if isinstance(exc, RuntimeError) and "bounded wait" in str(exc) and "gave up" in str(exc):
        return "hang", f"{name}: {first}"
    if isinstance(exc, (E.EmuTimeout, E.UnsupportedInstruction)):
        return "error", f"{name}: {first}"
    if isinstance(exc, E.EmuError):
        return "named", f"{name}: {first}"
    return "error", f"{name}: {first}"


def _worker(target: str, shape) -> None:
    """In the worker process (BWLAB_CUDA_SRC: the mutated copy): run, classify, print one JSON line."""
    t0 = time.process_time()
    t = TARGETS[target]
    message = ""
    try:
        ok, run = globals()[t.run](t, tuple(shape) if shape else None)
        if run is None:     # a case's runner: what the emulator warned of in its launch
            from ..emu import last_launch
            run = last_launch()
        warnings = list(getattr(run, "warnings", None) or [])
        res, detail = classify(None, ok)
        if res == "pass" and warnings:
            detail = "warnings: " + "; ".join(str(w).splitlines()[0][:200] for w in warnings[:2])
        elif res == "wrong" and warnings:
            detail += "; warnings: " + "; ".join(str(w).splitlines()[0][:200] for w in warnings[:2])
        if warnings:
            message = "\n".join(str(w) for w in warnings)
    except BaseException as e:  # noqa: BLE001 - every exception is a result of the mutant
        res, detail = classify(e, None)
        message = str(e)
    print("\nMUTANT-RESULT " + json.dumps({"result": res, "detail": detail, "cpu_s": time.process_time() - t0,
                                           "message": message[:8000]}), flush=True)


def run_mutant(m: Mutant | None, target: str | None = None, cpu_limit: float = CPU_LIMIT_S, shape=None) -> Outcome:
    """Run one mutant (None: the target unmutated) in a worker process with a CPU-time limit."""
    from ..compile import CUDA_SRC
    import resource
    target = m.target if m is not None else target
    with tempfile.TemporaryDirectory(prefix="bwmut-") as tmp:
        src = Path(tmp) / "cuda_src"
        shutil.copytree(CUDA_SRC, src, ignore=shutil.ignore_patterns("__pycache__"))
        if m is not None:
            (src / m.file).write_text(m.new_text)
        env = dict(os.environ, BWLAB_CUDA_SRC=str(src), BWLAB_BACKEND="emulated")
        root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")

        def limit():
            resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_limit), int(cpu_limit) + 5))
        code = f"from bwlab.checks.mutant_runs import _worker; _worker({target!r}, {list(shape) if shape else None!r})"
        t0 = time.perf_counter()
        try:
            p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                               preexec_fn=limit, timeout=3 * cpu_limit + 60)
            out, err, rc = p.stdout, p.stderr, p.returncode
        except subprocess.TimeoutExpired:
            out, err, rc = "", "", -9
        line = next((x for x in reversed(out.splitlines()) if x.startswith("MUTANT-RESULT ")), None)
        mid = m.id if m is not None else f"{target}:unmutated"
        if line is None:
            why = "CPU-time limit" if rc in (-9, -24, 137, 152) else f"worker exit {rc}"
            tail = err.strip().splitlines()[-1:]
            return Outcome(mid, "limit" if "CPU" in why else "error",
                           f"{why} ({cpu_limit:g} s){': ' + tail[0][:200] if tail else ''}",
                           time.perf_counter() - t0)
        r = json.loads(line[len("MUTANT-RESULT "):])
        return Outcome(mid, r["result"], r["detail"], r["cpu_s"], message=r.get("message", ""))
