"""The flow on the GPU: the only file of the package that imports CuPy (inside the functions).

* `run_hardware(p)` — sm_100: cuda_src/full_flow_sm100.cu's `full_flow`, the whole trip, every hop tapped;
* `run_hybrid(p)`   — sm_90: `flow_load_dump` (the real TMA load, SMEM dumped), tcgen05.mma and tcgen05.ld
  in bwlab's model from those bytes, then `flow_store_registers` (the registers uploaded, real st.shared,
  fence and TMA store, the D tile dumped);
* `run_hopper(p)`   — sm_90: `full_flow_hopper`, Hopper's own path (TMA + wgmma, D in registers), with
  %globaltimer / %clock64 stamps per warp and event.
Each returns the arrays of a `Trace` (or D and the stamps) in the same shapes the model gives.
"""
from __future__ import annotations

import numpy as np

from .problem import SMEM_BYTES, THREADS, FlowProblem

__all__ = ["FLOW_BARRIERS", "run_hardware", "run_hybrid", "run_hopper", "N_EVENTS"]

FLOW_BARRIERS = {0: "full (the TMA loads of A and B)", 1: "mma_done (tcgen05.commit)"}
N_EVENTS = 10          # EV_COUNT in cuda_src/full_flow_sm90.cu


def _maps(p: FlowProblem, a_dev, b_dev, d_dev):
    from ..runtime import encode_tensor_map, tensor_map_arg
    return (tensor_map_arg(encode_tensor_map(p.tmap_a, a_dev.data.ptr)), tensor_map_arg(encode_tensor_map(p.tmap_b, b_dev.data.ptr)),
            tensor_map_arg(encode_tensor_map(p.tmap_d, d_dev.data.ptr)))


def _inputs(p: FlowProblem, xp=None):
    if xp is None:
        import cupy as xp
    a16, b16 = p.gmem_inputs()
    return a16, b16, xp.asarray(a16), xp.asarray(b16), xp.zeros(p.epilogue.buffer_shape, np.float32)


def _module(file: str, arch: str, kernel, be=None):
    """The module of cuda_src/`file`, or of a learner's edit of it (`kernel`, a bwlab.lab.TeachingKernel)."""
    from ..compile import load_module, load_text_module
    if be is not None and be.emulated:
        return be.load(kernel if kernel is not None else file + ".cu", arch=arch)
    if kernel is None:
        return load_module(file, arch=arch)
    return load_text_module(kernel.text, kernel.file, arch=arch)


def run_hardware(p: FlowProblem, kernel=None, emulated: bool | None = None) -> dict:
    """The whole trip by `full_flow` on an sm_100 GPU; every hop's bytes read back through its taps.
    `kernel`: a learner's edit of full_flow_sm100.cu (bwlab.lab.TeachingKernel), run in a worker
    process (bwlab.lab.run_edited: a fault or a hang comes back as an exception); None: the %%cuda edit
    of the file if one is kept (bwlab.lab.kept), else the file. `emulated`: run the
    kernel's sm_100a PTX in bwlab.emu (None: where the UMMA stage's tier is 'emulated')."""
    from ..lab import isolate, run_edited
    from ..runtime import launch
    from ..umma.runner import umma_backend
    from ..runtime import EMULATED
    from ..lab import kept
    be = EMULATED if emulated else umma_backend()   # an sm_100 GPU, or the PTX emulator (its sm_100a PTX)
    cp = be.xp
    kernel = kernel if kernel is not None else kept("full_flow_sm100.cu")   # the learner's %%cuda edit
    if kernel is not None and not be.emulated and isolate(kernel):
        return run_edited(run_hardware, p, kernel=kernel, limit=30.0)
    a16, b16, a_dev, b_dev, d_dev = _inputs(p, cp)
    ta, tb, td = _maps(p, a_dev, b_dev, d_dev)
    ab = cp.zeros(2 * 0x4000, np.uint8)
    regs = cp.zeros((THREADS, p.N), np.uint32)
    smem_d = cp.zeros(4 * 0x4000, np.uint8)
    done = cp.zeros(1, np.uint32)
    launch(_module("full_flow_sm100", "sm_100a", kernel, be), "full_flow", (1,), (THREADS,),
           (ta, tb, td, ab, regs, smem_d, done), shared_mem=SMEM_BYTES + 1024, barrier_names=FLOW_BARRIERS)
    ab = cp.asnumpy(ab)
    r = cp.asnumpy(regs)
    # tcgen05.ld.32x32b put lane t, column j of TMEM into thread t, register j: the TMEM image the
    # epilogue saw is the registers read back, so that is what the hardware tier records for TMEM.
    return dict(a_gmem=a16.view(np.uint16), b_gmem=b16.view(np.uint16), smem_a=ab[:0x4000], smem_b=ab[0x4000:],
                tmem=r.copy(), mma_done=cp.asnumpy(done), regs=r, smem_d=cp.asnumpy(smem_d),
                gmem_d=cp.asnumpy(d_dev))


def run_hybrid(p: FlowProblem, kernel=None) -> dict:
    """Real TMA load -> model MMA / commit / tcgen05.ld from the loaded bytes -> real st.shared, fence,
    TMA store from the model's registers (an sm_90 GPU)."""
    from ..runtime import backend_for, launch
    from .model import mma_from_smem, registers_from_tmem
    from ..lab import isolate, kept, run_edited
    be = backend_for("tma")   # this GPU, or the PTX emulator where there is none
    cp = be.xp
    kernel = kernel if kernel is not None else kept("full_flow_sm90.cu")   # the learner's %%cuda edit
    if kernel is not None and not be.emulated and isolate(kernel):
        return run_edited(run_hybrid, p, kernel=kernel, limit=30.0)
    mod = _module("full_flow_sm90", "sm_90a", kernel, be)
    a16, b16, a_dev, b_dev, d_dev = _inputs(p, cp)
    ta, tb, td = _maps(p, a_dev, b_dev, d_dev)
    ab = cp.zeros(2 * 0x4000, np.uint8)
    launch(mod, "flow_load_dump", (1,), (THREADS,), (ta, tb, ab), shared_mem=SMEM_BYTES + 1024,
           barrier_names=FLOW_BARRIERS)
    ab = cp.asnumpy(ab)
    smem_a, smem_b = ab[:0x4000].copy(), ab[0x4000:].copy()
    tmem, done = mma_from_smem(p, smem_a, smem_b)
    regs = registers_from_tmem(p, tmem)
    smem_d = cp.zeros(4 * 0x4000, np.uint8)
    launch(mod, "flow_store_registers", (1,), (THREADS,), (td, cp.asarray(regs), smem_d),
           shared_mem=SMEM_BYTES + 1024)
    return dict(a_gmem=a16.view(np.uint16), b_gmem=b16.view(np.uint16), smem_a=smem_a, smem_b=smem_b,
                tmem=tmem, mma_done=done, regs=regs, smem_d=cp.asnumpy(smem_d), gmem_d=cp.asnumpy(d_dev))


def run_hopper(p: FlowProblem, repeat: int = 5, kernel=None):
    """Hopper's native path (`full_flow_hopper`): returns (the D buffer, stamps uint64 (repeat, 4 warps,
    N_EVENTS, 2) of %globaltimer ns and %clock64, -1 where a warp does not reach an event).
    `kernel`: a learner's edit of full_flow_sm90.cu, run in a worker process (None: the %%cuda edit
    of the file if one is kept, else the file)."""
    from ..lab import isolate, run_edited
    from ..runtime import launch
    from ..umma.runner import wgmma_backend
    from ..lab import kept
    be = wgmma_backend()   # an sm_90a GPU, or the PTX emulator in the emulated tier
    cp = be.xp
    kernel = kernel if kernel is not None else kept("full_flow_sm90.cu")   # the learner's %%cuda edit
    if kernel is not None and not be.emulated and isolate(kernel):
        return run_edited(run_hopper, p, repeat, kernel=kernel, limit=30.0)
    mod = _module("full_flow_sm90", "sm_90a", kernel, be)
    a16, b16, a_dev, b_dev, d_dev = _inputs(p, cp)
    ta, tb, td = _maps(p, a_dev, b_dev, d_dev)
    stamps = []
    for _ in range(max(1, int(repeat))):
        s = cp.full((4, N_EVENTS, 2), np.uint64(0xFFFFFFFFFFFFFFFF), np.uint64)
        launch(mod, "full_flow_hopper", (1,), (THREADS,), (ta, tb, td, s), shared_mem=SMEM_BYTES + 1024,
               barrier_names=FLOW_BARRIERS)
        stamps.append(cp.asnumpy(s))
    return cp.asnumpy(d_dev), np.stack(stamps)


def time_kernels(p: FlowProblem, repeat: int = 50) -> dict:
    """Median launch-to-completion time (CUDA events) of the kernels this GPU runs, in microseconds."""
    import cupy as cp
    from .. import device
    from ..compile import load_module
    from ..runtime import bench
    info = device.require("tma")
    out = {}
    a16, b16, a_dev, b_dev, d_dev = _inputs(p)
    ta, tb, td = _maps(p, a_dev, b_dev, d_dev)
    if info.has_tcgen05:
        mod = load_module("full_flow_sm100", arch="sm_100a")
        fn = mod.get_function("full_flow")
        fn.max_dynamic_shared_size_bytes = SMEM_BYTES + 1024
        z = np.uint64(0)
        r = bench("full_flow (sm_100)", lambda: fn((1,), (THREADS,), (ta, tb, td, z, z, z, z),
                                                   shared_mem=SMEM_BYTES + 1024), repeat=repeat)
        out["full_flow_sm100"] = r.median_ms * 1e3
    if info.has_wgmma:
        mod = load_module("full_flow_sm90", arch="sm_90a")
        fn = mod.get_function("full_flow_hopper")
        fn.max_dynamic_shared_size_bytes = SMEM_BYTES + 1024
        r = bench("full_flow_hopper", lambda: fn((1,), (THREADS,), (ta, tb, td, np.uint64(0)),
                                                 shared_mem=SMEM_BYTES + 1024), repeat=repeat)
        out["full_flow_hopper"] = r.median_ms * 1e3
    a = cp.asarray(p.values()[0].astype(np.float16))
    b = cp.asarray(p.values()[1].astype(np.float16))
    r = bench("cupy.matmul f16 (same GEMM)", lambda: cp.matmul(a, b.T), repeat=repeat)
    out["cupy_matmul"] = r.median_ms * 1e3
    return out
