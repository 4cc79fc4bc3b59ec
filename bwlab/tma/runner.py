"""The TMA load on the GPU: the teaching kernel `cuda_src/teach_tma.cu` and the harness
`cuda_src/tma_load.cu` (kernel `tma_load_dump`).

The only file of the stage that talks to the GPU (CuPy, cuda.bindings; imported inside the
functions, so the model side imports without them). `launch_teach` runs the teaching kernel (or a
learner's edit of it) on one 2D box; `run_tma_load` takes the arguments of `tma_load_model` in the
same order and returns the same bytes; `launch_cases` runs many loads (one CTA each) in one launch,
each into an SMEM window painted with a known background, for the validation.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..hw.mbarrier import MAX_TX_BYTES
from ..runtime import encode_tensor_map
from ..util import round_up
from .model import require_coords, require_modelled, tma_load_window
from .tensor_map import SMEM_ALIGNMENT, TensorMap, TensorMapError

__all__ = ["launch_teach", "require_teach_args", "TEACH_BARRIERS", "TEACH_SMEM_BYTES", "run_tma_load", "launch_cases", "LoadCase", "RunResult", "TMA_CASE_DTYPE", "LOAD_BARRIERS",
           "SMEM_SLACK", "PREFETCH_TENSORMAP", "PREFETCH_BOX", "background"]

# Mirrors struct TmaCase in cuda_src/tma_load.cu (its static_asserts; tests/test_struct_mirrors.py compares).
TMA_CASE_DTYPE = np.dtype({
    "names": ["rank", "coords", "smem_offset", "box_bytes", "window_bytes", "flags", "out_offset"],
    "formats": ["<i4", ("<i4", 5), "<u4", "<u4", "<u4", "<u4", "<u8"],
    "offsets": [0, 4, 24, 28, 32, 36, 40], "itemsize": 48})
LOAD_BARRIERS = {0: "smem_full (phase 0: expect_tx = box bytes)",
                 1: "tx_exact (phase 1: completes only if no bytes beyond expect_tx arrived)"}
SMEM_SLACK = 1024  # the kernel rounds its window up to a 1024-byte boundary
PREFETCH_TENSORMAP, PREFETCH_BOX = 1, 2  # TmaCase.flags bits 0 and 1
TEACH_BARRIERS = {0: "smem_full"}
TEACH_SMEM_BYTES = 16384  # TEACH_SMEM_BYTES in cuda_src/teach_tma.cu


def background(n: int) -> np.ndarray:
    """The bytes tma_load_dump paints its SMEM window with before the load (byte i = 151 i + 89)."""
    return ((np.arange(n, dtype=np.int64) * 151 + 89) & 0xFF).astype(np.uint8)


@dataclass
class LoadCase:
    """One TMA load for the harness kernel: a tensor map over `gmem`, a box position, an SMEM offset.

    `smem_offset` is the destination relative to a 1024-byte aligned window (a multiple of 128);
    `gmem_offset` shifts the tensor's base address by a multiple of 16 from a 256-byte boundary.
    """
    tmap: TensorMap
    gmem: np.ndarray
    coords: tuple
    smem_offset: int = 0
    gmem_offset: int = 0
    prefetch: int = 0  # bit 1: cp.async.bulk.prefetch.tensor of the box first; bit 0: prefetch.tensormap
    zero_background: bool = False  # paint the window with zeros instead of `background`
    expect_tx: int | None = None  # default: tmap.tx_bytes

    @property
    def tx(self) -> int:
        """What the kernel's expect_tx announces."""
        return self.tmap.tx_bytes if self.expect_tx is None else int(self.expect_tx)

    @property
    def window_bytes(self) -> int:
        """SMEM bytes dumped: the destination offset, the box's footprint, then at least 1 KiB of margin."""
        reach = max(self.tx, self.tmap.smem_footprint)
        return round_up(self.smem_offset + reach, 1024) + 1024

    def model_window(self) -> np.ndarray:
        """What the GPU's window should hold: the background with the model's writes on top."""
        bg = np.zeros(self.window_bytes, np.uint8) if self.zero_background else background(self.window_bytes)
        return tma_load_window(self.gmem, self.tmap, self.coords, self.smem_offset, 0, self.window_bytes, bg)


@dataclass
class RunResult:
    windows: list          # the raw SMEM window of every case (background + what the TMA wrote)
    done: np.ndarray       # per case: completed both barrier phases
    timeout: object        # the MbarrierTimeout of the launch, if a bounded wait gave up
    errors: list           # per case: the driver's refusal to encode the tensor map, or None


def launch_cases(cases, block: int = 128) -> RunResult:
    """Run many TMA loads in one launch of tma_load_dump, one CTA each.

    A bounded wait that gives up makes bwlab.runtime.launch raise MbarrierTimeout after the
    launch; it is caught here and returned, and `done` says which cases finished. A tensor map
    the driver refuses is reported in `errors` and its CTA does nothing.
    """
    from .. import device
    from ..emu.machine import MAX_SMEM_PER_CTA
    from ..runtime import LaunchConfigError, MbarrierTimeout, backend_for, launch

    be = backend_for("tma")
    cp = be.xp
    info = device.gpu_info()
    optin = MAX_SMEM_PER_CTA if be.emulated or info is None else info.smem_per_block_optin
    where = be.where
    cases = list(cases)
    for c in cases:
        if c.smem_offset % SMEM_ALIGNMENT or c.smem_offset < 0:
            raise TensorMapError("smem-alignment", f"smem_offset {c.smem_offset} must be a multiple of {SMEM_ALIGNMENT}")
        if c.gmem_offset % 16 or not 0 <= c.gmem_offset < 256:
            raise TensorMapError("global-address-alignment", f"gmem_offset {c.gmem_offset} must be a multiple "
                                                             "of 16 in [0, 256)")
        if c.tx > MAX_TX_BYTES:
            raise TensorMapError("box-bytes", f"a box of {c.tx} bytes exceeds the mbarrier's transaction "
                                              f"range ({MAX_TX_BYTES})")
    smem = max(c.window_bytes for c in cases) + SMEM_SLACK
    if smem > optin:
        raise LaunchConfigError(f"the largest case needs {smem} bytes of SMEM; {where} allows "
                                f"{optin} per CTA")
    # One device buffer holds every tensor, each at a 256-byte boundary plus its gmem_offset.
    offs, total = [], 0
    for c in cases:
        offs.append(total + c.gmem_offset)
        total = round_up(total + c.gmem_offset + np.asarray(c.gmem).nbytes, 256)
    host = np.zeros(max(total, 256), np.uint8)
    for c, o in zip(cases, offs):
        b = np.ascontiguousarray(c.gmem).reshape(-1).view(np.uint8)
        host[o:o + b.size] = b
    dev = cp.asarray(host)
    base = dev.data.ptr
    encoded, errors = [], [None] * len(cases)
    for i, (c, o) in enumerate(zip(cases, offs)):
        try:
            encoded.append(encode_tensor_map(c.tmap, base + o))
        except RuntimeError as e:  # the driver refused what TensorMap accepted: report, skip
            errors[i] = str(e)
            encoded.append(bytes(128))
    tmaps = np.frombuffer(b"".join(encoded), np.uint8)
    rec = np.zeros(len(cases), TMA_CASE_DTYPE)
    out_total = 0
    for i, c in enumerate(cases):
        coords = list(require_coords(c.tmap, c.coords)) + [0] * (5 - c.tmap.rank)
        rec[i] = (0 if errors[i] else c.tmap.rank, coords, c.smem_offset, c.tx, c.window_bytes,
                  (int(c.prefetch) & 3) | (4 if c.zero_background else 0), out_total)
        out_total += c.window_bytes
    d_tmaps = cp.asarray(tmaps)
    d_cases = cp.asarray(rec.view(np.uint8))
    d_out = cp.zeros(out_total, np.uint8)
    d_done = cp.zeros(len(cases), np.uint32)
    mod = be.load("tma_load.cu")
    timeout = None
    try:
        launch(mod, "tma_load_dump", (len(cases),), (block,), (d_tmaps, d_cases, d_out, d_done),
               shared_mem=smem, barrier_names=LOAD_BARRIERS)
    except MbarrierTimeout as e:
        timeout = e
    out = cp.asnumpy(d_out)
    done = cp.asnumpy(d_done).astype(bool)
    windows = [out[int(r["out_offset"]):int(r["out_offset"]) + int(r["window_bytes"])] for r in rec]
    return RunResult(windows, done, timeout, errors)


def run_tma_load(gmem, tmap: TensorMap, coords, smem_address: int = 0, prefetch: int = 0) -> np.ndarray:
    """Load one box on the GPU into zeroed SMEM; the bytes [smem_address, smem_address +
    smem_footprint) it produced (`smem_address` relative to a 1024-byte aligned window).

    The same arguments in the same order as `tma_load_model`, so
    `np.array_equal(run_tma_load(...), tma_load_model(...))` is the whole comparison. `prefetch`
    (PREFETCH_TENSORMAP | PREFETCH_BOX) prefetches first. Raises MbarrierTimeout if the handshake
    did not complete, RuntimeError if the driver refused the tensor map.
    """
    smem_address = int(smem_address)
    case = LoadCase(tmap, np.asarray(gmem), tuple(coords), smem_offset=smem_address, prefetch=prefetch,
                    zero_background=True)
    r = launch_cases([case])
    if r.errors[0]:
        raise RuntimeError(r.errors[0])
    if r.timeout is not None:
        raise r.timeout
    return r.windows[0][smem_address:smem_address + tmap.smem_footprint]


def require_teach_args(gmem, tmap: TensorMap, coords) -> tuple:
    """What the teaching kernel can load: a 2D box whose rows fill their swizzle span (so the box's
    bytes are its whole SMEM image), at most TEACH_SMEM_BYTES. Returns the checked coordinates."""
    require_modelled(tmap)
    if tmap.rank != 2:
        raise TensorMapError("teach-rank", f"teach_tma.cu loads 2D boxes (tma_load_2d); this tensor map has "
                                           f"rank {tmap.rank}: use run_tma_load")
    if tmap.smem_footprint != tmap.box_bytes:
        raise TensorMapError("teach-narrow", f"box rows of {tmap.inner_box_bytes} bytes under {tmap.swizzle} "
                                             f"swizzle sit {tmap.smem_pitch} bytes apart; teach_tma.cu copies "
                                             "out box_bytes only: use run_tma_load")
    if tmap.box_bytes > TEACH_SMEM_BYTES:
        raise TensorMapError("teach-smem", f"a box of {tmap.box_bytes} bytes does not fit teach_tma.cu's "
                                           f"{TEACH_SMEM_BYTES}-byte SMEM buffer")
    return require_coords(tmap, coords)


def launch_teach(gmem, tmap: TensorMap, coords, kernel=None, block: int = 128) -> np.ndarray:
    """Launch the teaching kernel `teach_tma_load` (`kernel`, a `bwlab.lab.TeachingKernel`; default: the
    %%cuda version if there is one, else cuda_src/teach_tma.cu) on one 2D box, on this GPU or in the PTX
    emulator: what `TmaLoad(..., kernel=).run()` does. Raises MbarrierTimeout if the handshake does not
    complete."""
    coords = require_teach_args(gmem, tmap, coords)
    from ..lab import edited, isolate, run_edited
    from ..runtime import backend_for, launch, tensor_map_arg

    be = backend_for("tma")   # this GPU, or the PTX emulator where there is none
    kernel = kernel or edited("teach_tma.cu")
    if not be.emulated and isolate(kernel):
        return run_edited(launch_teach, gmem, tmap, coords, kernel=kernel, block=block)
    xp = be.xp
    d_gmem = xp.asarray(np.ascontiguousarray(gmem))
    d_out = xp.zeros(tmap.box_bytes, np.uint8)
    tmap_arg = tensor_map_arg(encode_tensor_map(tmap, d_gmem.data.ptr))
    launch(be.load(kernel), "teach_tma_load", (1,), (block,),
           (tmap_arg, np.int32(coords[0]), np.int32(coords[1]), np.uint32(tmap.box_bytes), d_out),
           barrier_names=TEACH_BARRIERS)
    return xp.asnumpy(d_out)
