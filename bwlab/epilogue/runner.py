"""The epilogue on the GPU: the teaching kernel `cuda_src/teach_store.cu` (`launch_teach`, or a learner's
edit of it) and the harness `cuda_src/tma_store.cu` (`run_epilogue`, `run_tma_store`, the bank timing):
the same arguments as the models, the same results. The only file of the package that imports CuPy
(inside the functions).
"""
from __future__ import annotations

import numpy as np

from ..hw.swizzle import MODES
from ..util import round_up
from .problem import EpilogueProblem, teach_problem
from .rules import require_reduce_add_dtype, raw_dtype
from .store import store_op, store_targets, smem_window, store_geometry

__all__ = ["launch_teach", "require_teach_args", "TEACH_EDITS", "run_epilogue", "run_tma_store", "measure_store_cycles", "EPI_FLAGS", "DT_CODES",
           "EPILOGUE_BARRIERS"]

# enum EPI_* and DT_* in cuda_src/tma_store.cu (tests/test_epilogue.py reads them from the source).
EPI_FLAGS = {"EPI_USE_C": 1, "EPI_REDUCE_ADD": 2, "EPI_SKIP_FENCE": 4, "EPI_EXTRA_TX": 8}
EPI_USE_C, EPI_REDUCE_ADD, EPI_SKIP_FENCE, EPI_EXTRA_TX = EPI_FLAGS.values()
DT_CODES = {"DT_F32": 0, "DT_F16": 1, "DT_BF16": 2}
DT_CODE_OF = {"float32": DT_CODES["DT_F32"], "float16": DT_CODES["DT_F16"], "bfloat16": DT_CODES["DT_BF16"]}
EPILOGUE_BARRIERS = {0: "c_full (C tile brought in by TMA load)"}


# Two wrong edits of teach_store.cu that notebook 05 shows and bwlab.checks.record_epilogue records:
# (text to replace, replacement).
TEACH_EDITS = {
    "no fence": ("    fence_proxy_async_shared_cta();\n", ""),
    "no swizzle": ("SWIZZLE_BITS = 3", "SWIZZLE_BITS = 0"),
}


def require_teach_args(p: EpilogueProblem, acc, d_init=None) -> tuple:
    """What teach_store.cu handles: `teach_problem(M, N, ld)` (fp32, 128 x 32 tiles, 128B swizzle,
    D = acc). Returns (acc as float32, the initial D buffer as raw uint32 bits)."""
    if not isinstance(p, EpilogueProblem):
        raise ValueError("p must be an EpilogueProblem (teach_problem(M, N) builds the one teach_store.cu runs)")
    want = teach_problem(p.M, p.N, ld=p.ld)
    off = {f: getattr(p, f) for f in ("dtype", "bm", "bn", "swizzle", "alpha", "beta", "reduce_add",
                                      "smem_offset") if getattr(p, f) != getattr(want, f)}
    if off:
        raise ValueError(f"teach_store.cu stores fp32 128 x 32 tiles through the 128B swizzle, D = acc "
                         f"(teach_problem(M, N)); this problem differs in {off} (run_epilogue runs it)")
    acc = np.ascontiguousarray(acc, dtype=np.float32)
    if acc.shape != p.acc_shape:
        raise ValueError(f"acc must be {p.acc_shape} (whole tiles), got {acc.shape}")
    d0 = np.zeros(p.buffer_shape, np.uint32) if d_init is None else np.ascontiguousarray(d_init)
    if d0.shape != p.buffer_shape or d0.dtype.itemsize != 4:
        raise ValueError(f"the D buffer must be {p.buffer_shape} of 4-byte elements, got {d0.shape} {d0.dtype}")
    return acc, d0.view(np.uint32)


def launch_teach(p: EpilogueProblem, acc, d_init=None, kernel=None) -> np.ndarray:
    """Run the teaching kernel `teach_store` (one CTA per 128 x 32 tile) on the GPU and return the D
    buffer afterwards: the same arguments and the same result as `epilogue_model(p, acc, None,
    d_init)`, so `Epilogue(p, acc, None, d_init).check(launch_teach(p, acc, d_init))` compares them.

    `kernel` is a `bwlab.lab.TeachingKernel` (a learner's edit); default: the %%cuda version if there
    is one, else cuda_src/teach_store.cu.
    """
    acc, d0 = require_teach_args(p, acc, d_init)
    from ..lab import edited, isolate, run_edited
    from ..runtime import backend_for, launch, encode_tensor_map, tensor_map_arg
    be = backend_for("store")   # this GPU, or the PTX emulator where there is none
    cp = be.xp
    kernel = kernel or edited("teach_store.cu")
    if not be.emulated and isolate(kernel):
        return run_edited(launch_teach, p, acc, d_init, kernel=kernel)
    d_dev = cp.asarray(d0)
    acc_dev = cp.asarray(acc)
    launch(be.load(kernel), "teach_store", (p.tiles[1], p.tiles[0]), (p.bm,),
           (tensor_map_arg(encode_tensor_map(p.tensor_map(), d_dev.data.ptr)), acc_dev, np.uint32(p.acc_shape[1])))
    return cp.asnumpy(d_dev)


def swizzle_bits(mode: str) -> int:
    """The kernel's swz_bits argument: CuTe Swizzle<B,4,3>'s B, the mode's index in MODES."""
    return MODES.index(mode)


def run_epilogue(p: EpilogueProblem, acc, c_bits=None, d_init=None, fence: bool = True,
                 extra_tx: bool = False) -> np.ndarray:
    """Run `epilogue_tile` on the GPU: the same arguments as `epilogue_model`, the same result.

    `fence=False` leaves out fence.proxy.async.shared::cta (wrong on purpose, for notebook 05);
    `extra_tx=True` announces 16 bytes too many on the C barrier, so the bounded wait gives up
    and MbarrierTimeout is raised (needs beta != 0).
    """
    from ..runtime import backend_for, launch, encode_tensor_map, tensor_map_arg
    be = backend_for("store")   # this GPU, or the PTX emulator where there is none
    cp = be.xp
    raw = raw_dtype(p.dtype)
    acc = np.ascontiguousarray(acc, dtype=np.float32)
    if acc.shape != p.acc_shape:
        raise ValueError(f"acc must be {p.acc_shape} (whole tiles), got {acc.shape}")
    d0 = np.zeros(p.buffer_shape, raw) if d_init is None else np.asarray(d_init, dtype=raw)
    if d0.shape != p.buffer_shape:
        raise ValueError(f"D buffer must be {p.buffer_shape}, got {d0.shape}")
    if extra_tx and not p.use_c:
        raise ValueError("extra_tx exercises the C barrier: it needs beta != 0")
    tmap = p.tensor_map()
    d_dev = cp.asarray(d0)
    c_dev = cp.asarray(np.asarray(c_bits, dtype=raw)) if p.use_c else d_dev
    if p.use_c and c_dev.shape != p.buffer_shape:
        raise ValueError(f"C buffer must be {p.buffer_shape}, got {c_dev.shape}")
    acc_dev = cp.asarray(acc)
    flags = ((EPI_USE_C if p.use_c else 0) | (EPI_REDUCE_ADD if p.reduce_add else 0)
             | (0 if fence else EPI_SKIP_FENCE) | (EPI_EXTRA_TX if extra_tx else 0))
    t = p.tile
    mod = be.load("tma_store.cu")
    launch(mod, "epilogue_tile", (p.tiles[1], p.tiles[0]), (128,),
           (tensor_map_arg(encode_tensor_map(tmap, d_dev.data.ptr)), tensor_map_arg(encode_tensor_map(tmap, c_dev.data.ptr)),
            acc_dev, np.uint32(p.acc_shape[1]), np.float32(p.alpha), np.float32(p.beta),
            np.uint32(flags), np.uint32(DT_CODE_OF[p.dtype]), np.uint32(swizzle_bits(p.swizzle)),
            np.uint32(p.bm), np.uint32(p.bn), np.uint32(t.box_cols), np.uint32(p.smem_offset)),
           shared_mem=p.tile_smem_bytes() + 1024, barrier_names=EPILOGUE_BARRIERS)
    return cp.asnumpy(d_dev)


def run_tma_store(gmem, tmap, coords, smem, smem_address: int = 0, window_start=None,
                  op: str = "store", fence: bool = True, gmem_offset: int = 0) -> np.ndarray:
    """One TMA store (op='store') or reduce-add (op='reduce_add') on the GPU, with the arguments of
    `tma_store_model`: threads copy the SMEM bytes in (st.shared.v4), fence, barrier, and one thread
    issues the store. Returns the whole `gmem` buffer afterwards (bytes outside the tensor
    included, so untouched bytes are checked too). On the device the buffer sits between two
    256-byte guard zones, `gmem_offset` (a multiple of 16 below 256) bytes into the first;
    RuntimeError if anything changed in a guard."""
    from ..runtime import backend_for, launch, encode_tensor_map, tensor_map_arg
    be = backend_for("store")   # this GPU, or the PTX emulator where there is none
    cp = be.xp
    op = store_op(op)
    if op == "reduce_add":
        require_reduce_add_dtype(tmap.dtype)
    addr, _, _ = store_targets(tmap, coords, smem_address)
    start = int(smem_address if window_start is None else window_start)
    if start % 128:
        raise ValueError("window_start must be a multiple of 128")
    smem_window(smem, smem_address, window_start, addr)  # checks coverage
    body = np.ascontiguousarray(smem).reshape(-1).view(np.uint8)
    image = np.zeros(round_up(start + body.size, 16), np.uint8)
    image[start:start + body.size] = body
    g = np.ascontiguousarray(gmem)
    gb = g.reshape(-1).view(np.uint8)
    if gb.size < store_geometry(tmap).extent:
        raise ValueError("gmem is smaller than the tensor the map describes")
    if gmem_offset % 16 or not 0 <= gmem_offset < 256:
        raise ValueError(f"gmem_offset must be a multiple of 16 in [0, 256), got {gmem_offset}")
    guard = np.full(256 + gmem_offset + gb.size + 256, 0xA5, np.uint8)
    lo = 256 + gmem_offset
    guard[lo:lo + gb.size] = gb
    buf_dev = cp.asarray(guard)
    g_dev = buf_dev[lo:lo + gb.size]
    img_dev = cp.asarray(image)
    c = list(int(x) for x in coords) + [0] * (5 - len(tmap.global_shape))
    mod = be.load("tma_store.cu")
    launch(mod, "tma_store_box", (1,), (128,),
           (tensor_map_arg(encode_tensor_map(tmap, g_dev.data.ptr)), img_dev, np.uint32(image.size),
            np.uint32(smem_address), np.uint32(len(tmap.global_shape)), *[np.int32(x) for x in c],
            np.uint32((EPI_REDUCE_ADD if op == "reduce_add" else 0) | (0 if fence else EPI_SKIP_FENCE))),
           shared_mem=image.size + 1024)
    after = cp.asnumpy(buf_dev)
    outside = np.concatenate([after[:lo], after[lo + gb.size:]])
    if np.any(outside != 0xA5):
        raise RuntimeError(f"the TMA {op.replace('_', '-')} changed {int(np.sum(outside != 0xA5))} guard bytes outside "
                           "the buffer")
    return after[lo:lo + gb.size].view(g.dtype).reshape(g.shape)


def measure_store_cycles(lane_offsets, iters: int = 256) -> float:
    """Clock cycles per st.shared.v4 (per warp instruction, 4 warps sharing the SM's shared-memory
    pipe) when lane i writes at lane_offsets[i] (+ multiples of 1024, which keep the banks) within
    its warp's 16 KiB region."""
    import cupy as cp

    from .. import device
    from ..compile import load_module
    from ..runtime import launch
    device.require("store")
    off = np.asarray(lane_offsets, dtype=np.int64)
    if off.size != 32 or off.min() < 0 or off.max() > 16384 - 16 or np.any(off % 16):
        raise ValueError("32 lane offsets, multiples of 16 in [0, 16368]")
    d_off = cp.asarray(off.astype(np.uint32))
    d_cyc = cp.zeros(1, np.uint64)
    mod = load_module("tma_store")   # a timing: this GPU only
    launch(mod, "smem_store_cycles", (1,), (128,), (d_off, np.uint32(iters), d_cyc),
           shared_mem=4 * 16384 + 1024)
    return float(cp.asnumpy(d_cyc)[0]) / (iters * 16 * 4)
