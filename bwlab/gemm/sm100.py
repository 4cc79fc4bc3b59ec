"""The Blackwell twin of the GEMM ladder: `cuda_src/gemm_sm100/`, its launch, and step 1 in the model tier.

Every step computes C[M x N] = A[M x K] · B[N x K]ᵀ: bf16 in (A and B row-major, K contiguous), f32
accumulation in Tensor Memory, bf16 out (row-major). bf16 arrays are NumPy uint16 holding the raw bits
(`bwlab.hw.dtypes.to_float` / `from_float`); float arrays given to `runner.run_sm100` / `model_step1` are
rounded to bf16 first (cvt.rn).

* `STEPS_SM100`   — one dict per step: step, name, file, what_changed, tile (of C per CTA or CTA pair),
  cta_tile, threads, cluster, smem_bytes (what the launch asks for), stages, tmem_cols, persistent, epilogue.
* `kernel_constants(step)` — the `constexpr` integers a step's file declares, evaluated from its text
  (the tile, the SMEM offsets, IDESC, DESC_HI, the tcgen05.ld width): what the model and the table
  test read, so that they follow the kernel rather than a copy of it.
* `tensor_maps(step, M, N, K)` — the three tensor maps: `runner.run_sm100` encodes them for the GPU,
  `model_step1` hands them to the TMA model.
* `launch_grid(step, M, N, sm_count)` — the grid a step launches with (`runner.run_sm100` launches it on an
  sm_100 GPU: bwlab.gemm.runner is the package's one file that uses CuPy).
* `model_step1(A, B)` — step 1 end to end in the model tier: `bwlab.tma.tma_load_model` builds each
  stage's SMEM image from the tensor maps, `bwlab.umma.tcgen05_mma` multiplies from the kernel's own
  descriptor bits, `bwlab.tmem` allocates and reads the accumulator as the kernel's
  tcgen05.ld.32x32b.x32 does, and each thread's registers are rounded to bf16 (cvt.rn.bf16x2.f32).
  `.check()` compares the result with `reference_bf16(A, B)`.

PTX ISA: cp.async.bulk.tensor, mbarrier, tcgen05.alloc / mma / commit / ld (Instruction descriptor,
Shared Memory Descriptor, Data path layout), cp.async.bulk.tensor (store). CuTe: the Blackwell
tutorial examples/cute/tutorial/blackwell/0[1-5]_*.cu, include/cute/arch/tmem_allocator_sm100.hpp.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..case import CheckResult, compare
from ..compile import CUDA_SRC
from ..hw.dtypes import from_float, to_float
from ..hw.mbarrier import Mbarrier
from ..tma.model import tma_load_model
from ..tma.tensor_map import TensorMap
from ..tmem.alloc import TensorMemory
from ..tmem.forms import TmemAccess
from ..umma.model import CtaState, tcgen05_commit, tcgen05_mma

__all__ = ["STEPS_SM100", "GEMM_BARRIERS", "STAMP_TRACKS", "STAMP_SPANS", "step_info", "kernel_constants",
           "tensor_maps", "require_problem", "launch_grid", "run_sm100_emulated", "EMULATED_SMS", "model_step1",
           "Step1Model", "reference_bf16", "example_inputs", "smem_desc"]

LADDER_HEADER = "gemm_sm100/ladder.cuh"

STEPS_SM100 = [
    dict(step=1, name="s1_one_stage", file="gemm_sm100/s1_one_stage.cu", tile=(128, 256), cta_tile=(128, 256),
         threads=128, cluster=1, smem_bytes=50176, stages=1, tmem_cols=256, persistent=False, epilogue="registers",
         what_changed="one CTA per 128 x 256 tile: TMA loads (128B swizzle), tcgen05.mma into a TMEM "
                 "accumulator, tcgen05.commit -> mbarrier, one stage; tcgen05.ld epilogue straight to C"),
    dict(step=2, name="s2_ring", file="gemm_sm100/s2_ring.cu", tile=(128, 256), cta_tile=(128, 256),
         threads=128, cluster=1, smem_bytes=197632, stages=4, tmem_cols=256, persistent=False, epilogue="registers",
         what_changed="a ring of four SMEM stages with full/empty mbarriers: loads run up to four slices ahead "
                 "of the MMAs (still one thread issuing both)"),
    dict(step=3, name="s3_warp_roles", file="gemm_sm100/s3_warp_roles.cu", tile=(128, 256), cta_tile=(128, 256),
         threads=192, cluster=1, smem_bytes=197632, stages=4, tmem_cols=256, persistent=False, epilogue="registers",
         what_changed="warp specialisation: a TMA warp, an MMA warp and four epilogue warps, each with its own "
                 "loop, meeting only at the barriers"),
    dict(step=4, name="s4_persistent", file="gemm_sm100/s4_persistent.cu", tile=(128, 256), cta_tile=(128, 256),
         threads=192, cluster=1, smem_bytes=197632, stages=4, tmem_cols=512, persistent=True, epilogue="registers",
         what_changed="persistent CTAs (one per SM) walking the tiles in grouped order, two TMEM accumulators: "
                 "the epilogue of one tile overlaps the MMAs of the next"),
    dict(step=5, name="s5_cta_pair", file="gemm_sm100/s5_cta_pair.cu", tile=(256, 256), cta_tile=(128, 256),
         threads=192, cluster=2, smem_bytes=132096, stages=4, tmem_cols=512, persistent=True, epilogue="registers",
         what_changed="the 2-SM MMA: a cluster of two CTAs, tcgen05.mma.cta_group::2 (M = 256) issued by the even "
                 "CTA; each CTA loads half of the shared B tile, the commits are multicast to both"),
    dict(step=6, name="s6_tma_store", file="gemm_sm100/s6_tma_store.cu", tile=(256, 256), cta_tile=(128, 256),
         threads=192, cluster=2, smem_bytes=164864, stages=4, tmem_cols=512, persistent=True, epilogue="tma store",
         what_changed="the epilogue goes through SMEM: bf16 rows into 128B-swizzled 32 x 64 boxes (st.shared), "
                 "fence.proxy.async, TMA stores (tma_c), two boxes per warp in flight"),
]

# The barrier ids of cuda_src/gemm_sm100/ladder.cuh (BAR_*): bwlab.runtime.launch names a timeout with
# them; the kernel's `error` word holds 1 + id.
GEMM_BARRIERS = {0: "full (a stage's TMA bytes)", 1: "empty (tcgen05.commit: a stage's MMAs completed)",
                 2: "mma_done (tcgen05.commit: the tile's MMAs completed)",
                 3: "tmem_full (tcgen05.commit: an accumulator holds a finished tile)",
                 4: "tmem_empty (the epilogue warps have read an accumulator out)"}

# The timeline layout of ladder.cuh: stamps[track][span][edge] (uint64 %globaltimer ns, 0 = not reached).
STAMP_TRACKS = ("tma", "mma", "epilogue lanes 0-31", "epilogue lanes 32-63", "epilogue lanes 64-95",
                "epilogue lanes 96-127")
STAMP_SPANS = 256


def step_info(step) -> dict:
    """The STEPS_SM100 entry of `step`: its number (3), name ('s3_warp_roles') or short name ('s3')."""
    for s in STEPS_SM100:
        if step in (s["step"], s["name"], s["name"].split("_")[0]):
            return s
    raise ValueError(f"no Blackwell ladder step {step!r}; steps: " + ", ".join(s["name"] for s in STEPS_SM100))


# ---- the constants a .cu file declares -----------------------------------------------------------
_DECL = re.compile(r"^\s*constexpr\s+(?:u16|u32|u64|int|unsigned)\s+(.+?);", re.M)
_INT = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b")
_OPS = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.LShift, ast.RShift, ast.BitOr, ast.BitAnd)


def _eval(expr: str, known: dict) -> int:
    tree = ast.parse(_INT.sub(lambda m: str(int(m.group(1), 0)), expr).replace("/", "//"), mode="eval")

    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.Name) and n.id in known:
            return known[n.id]
        if isinstance(n, ast.BinOp) and isinstance(n.op, _OPS):
            return _BINOPS[type(n.op)](ev(n.left), ev(n.right))
        raise ValueError(f"not a constant integer expression bwlab reads: {expr!r}")
    return ev(tree)


_BINOPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b, ast.LShift: lambda a, b: a << b,
           ast.RShift: lambda a, b: a >> b, ast.BitOr: lambda a, b: a | b, ast.BitAnd: lambda a, b: a & b}


def _constants(text: str, known: dict | None = None) -> dict:
    out = dict(known or {})
    text = re.sub(r"//[^\n]*", "", text)
    for decl in _DECL.findall(text):
        for item in decl.split(","):
            name, _, expr = item.partition("=")
            name = name.strip()
            if re.fullmatch(r"[A-Za-z_]\w*", name) and expr.strip():
                try:
                    out[name] = _eval(expr.strip(), out)
                except (ValueError, SyntaxError):
                    pass  # not an integer constant (a type, a function call): not ours to read
    return out


def _source(step_or_path) -> Path:
    if isinstance(step_or_path, (str, Path)) and str(step_or_path).endswith(".cu"):
        p = Path(step_or_path)
        return p if p.is_absolute() else CUDA_SRC / p
    return CUDA_SRC / step_info(step_or_path)["file"]


def kernel_constants(step_or_path) -> dict:
    """Every `constexpr` integer of a step's .cu file (and of ladder.cuh, which it includes), by name:
    BM, BN, STAGES, THREADS, CLUSTER, SMEM_A, SMEM_B, SMEM_BYTES, TMEM_COLS, LD_COLS, IDESC, DESC_HI ...
    `step_or_path` is a step number or name, or the path of a .cu file (an edited copy)."""
    path = _source(step_or_path)
    return _constants(path.read_text(), _constants((CUDA_SRC / LADDER_HEADER).read_text()))


def smem_desc(desc_hi: int, smem_addr: int) -> int:
    """The kernels' SMEM descriptor (ladder.cuh smem_desc): DESC_HI | (address >> 4) in bits 0-13."""
    return int(desc_hi) | ((int(smem_addr) >> 4) & 0x3FFF)


# ---- the problem, its tensor maps and its grid ------------------------------------------------------
def _bf16_bits(x, what: str) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2:
        raise ValueError(f"{what} must be a 2-D matrix, got shape {x.shape}")
    bits = x if x.dtype == np.uint16 else from_float(x, "bf16")
    return np.ascontiguousarray(bits, dtype=np.uint16)


def _operands(A, B):
    a, b = _bf16_bits(A, "A (M x K)"), _bf16_bits(B, "B (N x K)")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"A is M x K and B is N x K (C = A·Bᵀ): K differs, {a.shape[1]} vs {b.shape[1]}")
    return a, b, a.shape[0], b.shape[0], a.shape[1]


def require_problem(step, M: int, N: int, K: int) -> dict:
    """The step's constants, after checking that M, N, K are whole tiles: the kernels have no edge
    handling (every box is full, every tile complete)."""
    k = kernel_constants(step)
    for name, v, unit, why in (("M", M, k["CLUSTER"] * k["BM"], "tile rows"), ("N", N, k["BN"], "tile columns"),
                               ("K", K, k["BK"], "K per stage")):
        if v <= 0 or v % unit:
            raise ValueError(f"{name} = {v} must be a positive multiple of {unit} ({why} of step "
                             f"{_source(step).name}): the ladder's kernels have no edge handling")
    return k


def tensor_maps(step, M: int, N: int, K: int):
    """(A, B, C) tensor maps of a step: A and B with boxes of 64 (K) x the rows one CTA loads (BM of A;
    BN of B, half of it for a CTA pair), C with the TMA-store step's 64 x 32 box; all 128B-swizzled."""
    k = require_problem(step, M, N, K)
    return (TensorMap("bfloat16", (K, M), (k["BK"], k["BM"]), swizzle="128B"),
            TensorMap("bfloat16", (K, N), (k["BK"], k["BN"] // k["CLUSTER"]), swizzle="128B"),
            TensorMap("bfloat16", (N, M), (k.get("EPI_COLS", 64), 32), swizzle="128B"))


def launch_grid(step, M: int, N: int, sm_count: int) -> tuple:
    """The grid: one CTA per tile (blockIdx.x along N, .y along M), or for the persistent steps one CTA
    (pair) per SM, at most one per tile."""
    s, k = step_info(step), kernel_constants(step)
    tiles = (M // (k["CLUSTER"] * k["BM"])) * (N // k["BN"])
    if not s["persistent"]:
        return (N // k["BN"], M // k["BM"], 1)
    return (k["CLUSTER"] * max(1, min(tiles, sm_count // k["CLUSTER"])), 1, 1)


EMULATED_SMS = 2     # the "SM count" the emulator launches persistent steps with: each CTA walks several tiles


def run_sm100_emulated(step, A, B, sms: int = EMULATED_SMS, seed: int = 0, trace: bool = False, defines=None,
                       stamps: bool = False, timing=None):
    """Run a step's kernel in bwlab.emu (its sm_100a PTX, instruction by instruction): returns (C as bf16
    bits, the emulator's Launch with its trace, stall reports and warnings), and with `stamps` also the
    kernel's own timeline in virtual %globaltimer ns (track x span x edge, as `runner.run_sm100` returns it). Persistent steps launch
    min(`sms`, tiles) CTAs (pairs), so each walks several tiles and both TMEM accumulators as on the GPU.
    `defines` (e.g. {"BW_WAIT_TIMEOUT_NS": "0"}) are passed to NVRTC. Raises MbarrierTimeout, or
    RuntimeError naming the barrier when the kernel's error word is set."""
    from .. import emu
    from ..runtime import EMULATED, launch, encode_tensor_map, tensor_map_arg
    s = step_info(step)
    a, b, M, N, K = _operands(A, B)
    maps = tensor_maps(step, M, N, K)
    d_a, d_b, d_c = emu.asarray(a), emu.asarray(b), emu.zeros((M, N), np.uint16)
    tmaps = [tensor_map_arg(encode_tensor_map(t, d.data.ptr)) for t, d in zip(maps, (d_a, d_b, d_c))]
    err = emu.zeros(1, np.uint32)
    d_st = emu.zeros(len(STAMP_TRACKS) * STAMP_SPANS * 2, np.uint64) if stamps else None
    from ..lab import kept
    mine = kept(s["file"])   # the learner's %%cuda edit of the step, if one is kept
    module = EMULATED.load(mine if mine is not None else s["file"], defines=defines, arch="sm_100a")
    fn = module.get_function("gemm")
    fn.seed, fn.trace = seed, trace
    run = launch(module, "gemm", launch_grid(step, M, N, sms * s["cluster"]), (s["threads"],),
                 (*tmaps, d_c, np.int32(M), np.int32(N), np.int32(K), err, d_st if stamps else np.uint64(0)),
                 shared_mem=s["smem_bytes"], barrier_names=GEMM_BARRIERS,
                 cluster=(s["cluster"], 1, 1) if s["cluster"] > 1 else None, timing=timing)
    code = int(err.get()[0])
    if code:
        raise RuntimeError(f"step {s['step']}: a bounded wait on {GEMM_BARRIERS.get(code - 1, code)} gave up")
    if stamps:
        return d_c.get(), run, d_st.get().reshape(len(STAMP_TRACKS), STAMP_SPANS, 2)
    return d_c.get(), run


# ---- the reference and inputs -----------------------------------------------------------------------
def reference_bf16(A, B) -> np.ndarray:
    """A·Bᵀ computed in fp32, rounded to bf16 (nearest even): bf16 bits (uint16)."""
    a, b, *_ = _operands(A, B)
    d = to_float(a, "bf16").astype(np.float32) @ to_float(b, "bf16").astype(np.float32).T
    return from_float(d, "bf16")


def example_inputs(M: int, N: int, K: int, seed: int = 0):
    """A (M x K) and B (N x K) as bf16 bits, values k/8 with |k| <= 8: every product is a multiple of
    1/64 and every sum is exact in fp32, so the tensor core, the model and `reference_bf16` agree bit for bit
    whatever order they add in."""
    rng = np.random.default_rng(seed)
    return (from_float(rng.integers(-8, 9, (M, K)) / 8, "bf16"),
            from_float(rng.integers(-8, 9, (N, K)) / 8, "bf16"))


# ---- step 1 in the model tier -----------------------------------------------------------------------
@dataclass
class Step1Model:
    """What `model_step1` computed: C (bf16 bits), the reference, and the bits and counts it used."""

    C: np.ndarray
    reference: np.ndarray
    constants: dict
    idesc: int
    desc_hi: int
    mmas: int
    loads: int

    def check(self) -> CheckResult:
        k = self.constants
        bm, bn, w = k["BM"], k["BN"], k["LD_COLS"]

        def where(idx):
            i, j = idx
            r, c = i % bm, j % bn
            return (f"C[{i}][{j}] (tile ({i // bm}, {j // bn}); TMEM lane {r} = warp {r // 32} thread {r % 32}, "
                    f"column {c} = register {c % w} of its tcgen05.ld #{c // w})")
        return compare(self.reference, self.C, stage="GEMM ladder sm100 step 1",
                       what="C (bf16 bits) vs the reference A·Bᵀ (fp32, rounded to bf16)", where=where,
                       hex_digits=4, source="step 1 run in the model tier",
                       hint=f"the MMAs ran from IDESC {self.idesc:#010x} and DESC_HI {self.desc_hi:#018x}: "
                            "compare them with bwlab.umma.make_instr_desc / smem_desc_for_tile (M, N, "
                            "formats, SBO, swizzle); a wrong one misreads or misplaces operands")


def model_step1(A, B, *, source=None, idesc: int | None = None, desc_hi: int | None = None) -> Step1Model:
    """Step 1 (cuda_src/gemm_sm100/s1_one_stage.cu, or the .cu at `source`) in the model tier, CTA by
    CTA, exactly as the kernel orders it. The tile, SMEM offsets, descriptors and tcgen05.ld width are
    read from the kernel's text; `idesc` / `desc_hi` override the descriptor bits (to see what a wrong
    one does)."""
    k = kernel_constants(source if source is not None else 1)
    idesc = k["IDESC"] if idesc is None else int(idesc)
    hi = k["DESC_HI"] if desc_hi is None else int(desc_hi)
    a, b, M, N, K = _operands(A, B)
    tmap_a, tmap_b, _ = tensor_maps(source if source is not None else 1, M, N, K)
    bm, bn, bk, lds = k["BM"], k["BN"], k["BK"], k["LD_COLS"]
    access = TmemAccess("32x32b", lds)
    C = np.zeros((M, N), np.uint16)
    mmas = loads = 0
    for by in range(M // bm):                      # blockIdx.y
        for bx in range(N // bn):                  # blockIdx.x
            m0, n0 = by * bm, bx * bn
            tm = TensorMemory()
            cta = CtaState(tmem=tm.image)          # the tensor core writes the allocator's image
            tmem = tm.alloc(0, 0, k["TMEM_COLS"])  # warp 0: tcgen05.alloc, relinquish
            tm.relinquish_alloc_permit(0)
            full, mma_done = Mbarrier(1), Mbarrier(1)
            for kb in range(K // bk):
                full.arrive_expect_tx(k["A_BYTES"] + k["B_BYTES"])
                for g, tmap, coords, off in ((a, tmap_a, (kb * bk, m0), k["SMEM_A"]),
                                             (b, tmap_b, (kb * bk, n0), k["SMEM_B"])):
                    image = tma_load_model(g, tmap, coords, off)
                    cta.smem[off:off + image.size] = image
                    full.complete_tx(tmap.tx_bytes)
                    loads += 1
                if not full.try_wait_parity(kb & 1):
                    raise AssertionError(f"tile ({by}, {bx}) slice {kb}: the loads did not complete `full`")
                for j in range(bk // k["UMMA_K"]):
                    tcgen05_mma(cta, tmem, smem_desc(hi, k["SMEM_A"] + 32 * j), smem_desc(hi, k["SMEM_B"] + 32 * j),
                                idesc, accumulate=(kb | j) != 0)
                    mmas += 1
                tcgen05_commit(cta, mma_done)
                if not mma_done.try_wait_parity(kb & 1):
                    raise AssertionError(f"tile ({by}, {bx}) slice {kb}: the commit did not complete `mma_done`")
            for w in range(k["THREADS"] // 32):    # every warp: its lane quarter, LD_COLS columns a load
                for c in range(0, bn, lds):
                    regs = tm.ld(0, w, tmem + ((32 * w) << 16) + c, access)    # (32 threads, lds) words
                    C[m0 + 32 * w:m0 + 32 * w + 32, n0 + c:n0 + c + lds] = from_float(regs.view(np.float32), "bf16")
            tm.dealloc(0, 0, tmem, k["TMEM_COLS"])
            tm.exit(0)
    return Step1Model(C, reference_bf16(a, b), k, idesc, hi, mmas, loads)
