# %% [markdown]
# # 00 · Orientation: the Blackwell GEMM data path
#
# bwlab teaches how data moves through an NVIDIA Blackwell (SM100) GEMM, one hop at a time:
# **TMA load → TMA multicast → UMMA (`tcgen05.mma`) → TMEM load (`tcgen05.ld`) → TMA store.**
# Every notebook shows the CUDA source from `cuda_src/`, compiles it, runs it where the GPU can, and
# draws the layouts next to what the GPU (or bwlab's NumPy model) produced.
#
# **Before you start:** CUDA C++ (kernels, threads, blocks, shared memory) and a matrix product. No GPU is
# needed: every notebook runs on a laptop, and shows what an H100 recorded where this machine cannot run a
# stage.
#
# **Runs on:** the line printed below says which *tier* each stage runs in on this machine.
#
# **Exercises:** this notebook holds 4 graded exercises (6 points), each right after the section it asks
# about. Write your answer in the cell marked for it, then run the check below it: a wrong answer says what
# the hardware's rule gives and why.
# A check prints `correct:` when your answer is right; `checked:` when it agrees on every case tried here
# and the graded version tries more of its own; a wrong answer stops with `NotYet`, the rule and a hint.

# %% tags=["nbval-ignore-output"]
import bwlab
bwlab.banner();

# %% [markdown]
# ## The four tiers
#
# This is the one place the course says what runs where; every other notebook prints it with
# `device.where(stage)`, in these words.
#
# | tier | where | what runs |
# |---|---|---|
# | **hardware** | a GPU that has what the stage needs | the stage's kernel, on the GPU |
# | **hybrid** | sm_90+ without tcgen05 (Hopper, consumer Blackwell) | TMA load / multicast / store on the GPU; `tcgen05.mma` and TMEM executed by the NumPy model from the bytes the GPU loaded |
# | **emulated** | no GPU, or one without TMA (Ampere, Ada) | the stage's kernel itself: its PTX, instruction by instruction, in bwlab's PTX emulator on the CPU (time there is virtual) |
# | **model** | only when asked for (`BWLAB_BACKEND=model`) | the NumPy model alone, from the same bytes and descriptors; kernels are compiled, not run |
#
# The emulator and the model are checked bit for bit against an H100 wherever an H100 can run the
# operation (TMA, swizzle, multicast, SMEM operand layouts through `wgmma`), and against the PTX ISA and
# CUTLASS's encoders elsewhere. The outputs stored in these notebooks were made without a GPU, in the
# emulated tier, so they read the same everywhere; where a stage needs a GPU this machine lacks, a
# notebook also shows what an H100 recorded.
#
# The same rules, evaluated for each GPU family (computed by `bwlab.device.tiers_for`, not typed in):

# %%
from bwlab import device
stages = list(device.STAGES)
print(f"{'GPU family':40s} {'arch':7s} " + " ".join(f"{s:>9s}" for s in stages))
for family, sm, t in device.tier_table():
    print(f"{family:40s} {sm:7s} " + " ".join(f"{t[s]:>9s}" for s in stages))


# %% [markdown]
# ### Exercise 0.1 — which tier runs what (2 points)
#
# Write `my_tier(stage, cc)`: the tier (`"hardware"`, `"hybrid"` or `"emulated"`) in which `stage` (one of
# `"tma"`, `"multicast"`, `"umma"`, `"tmem"`, `"store"`) runs on a GPU of compute capability `cc` — a tuple
# such as `(9, 0)` for an H100, or `None` for no GPU. Work from the rules above and from what each stage
# needs (`device.STAGES`: TMA exists from sm_90 on; `tcgen05` and TMEM on sm_100, sm_103 and sm_110), without
# calling `device.tiers_for`. The check compares your function with bwlab's rules on an H100, a B200 and
# an RTX 50 (sm_120: a Blackwell without `tcgen05`); the graded version tries every GPU family (the
# check says which it did not try: passing it is not yet the grade).

# %% nbgrader={"grade": false, "grade_id": "orient_tier", "locked": false, "schema_version": 3, "solution": true}
def my_tier(stage, cc):
    """The tier ('hardware', 'hybrid' or 'emulated') of `stage` on a GPU of compute capability `cc`."""
    ### BEGIN SOLUTION
    if cc is None or tuple(cc) < (9, 0):
        return "emulated"              # no TMA: the kernels run in bwlab's PTX emulator
    if stage in ("tma", "multicast", "store"):
        return "hardware"              # these need TMA only
    return "hardware" if cc[0] in (10, 11) else "hybrid"   # tcgen05 and TMEM: datacenter Blackwell
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "orient_tier_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.hw import exercises as orient_ex
orient_ex.check_tier(my_tier)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
orient_ex.check_tier(my_tier, hidden=hidden_cases("orient_tier"))
### END HIDDEN TESTS

# %% [markdown]
# ## The data path
#
# Five hops. Two are done by the **Tensor Memory Accelerator** (TMA), an engine that copies whole tiles
# between global and shared memory on behalf of one thread; one by the 5th-generation tensor core, which
# reads its operands from shared memory and writes its accumulator into **Tensor Memory** (TMEM), a
# 256 KB per-SM memory of the GPUs with `tcgen05` (the PTX ISA lists sm_100a, sm_103a and sm_110a); and
# two by ordinary threads. (Notebook 06 follows the same trip in finer steps: the commit of the MMA, the
# `st.shared` into the output tile and the proxy fence get hops of their own.)
#
# Two words used from here on. A **proxy** is a path by which memory is accessed: ordinary loads and stores
# go through the *generic* proxy, the TMA engine and the tensor core through the *async* proxy; when one
# proxy must see what the other wrote, a `fence.proxy.async` orders them. An mbarrier's **phase** completes
# again and again; a wait names the phase it waits for by its **parity** (0, 1, 0, 1 ...).

# %% [markdown]
# ### Exercise 0.2 — the hops of the data path (1 point)
#
# From which memory to which does each instruction move the data? Give each a pair of the names `"GMEM"`,
# `"SMEM"`, `"TMEM"`, `"RMEM"` (registers), `(from, to)`. One of them differs from Hopper, where `wgmma` keeps
# its accumulator in registers. Answer from the description above; the figure and the table after the check
# show the whole path.

# %% nbgrader={"grade": false, "grade_id": "orient_hops", "locked": false, "schema_version": 3, "solution": true}
my_hops = {"TMA load": ..., "tcgen05.mma": ..., "tcgen05.ld": ..., "st.shared": ..., "TMA store": ...}
### BEGIN SOLUTION
my_hops = {"TMA load": ("GMEM", "SMEM"), "tcgen05.mma": ("SMEM", "TMEM"), "tcgen05.ld": ("TMEM", "RMEM"),
           "st.shared": ("RMEM", "SMEM"), "TMA store": ("SMEM", "GMEM")}
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "orient_hops_check", "locked": true, "points": 1, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.hw import exercises as orient_ex
orient_ex.check_hops(my_hops)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
orient_ex.check_hops(my_hops, hidden=hidden_cases("orient_hops"))
### END HIDDEN TESTS

# %%
import matplotlib.pyplot as plt
from bwlab.datapath import plot_data_path, HOPS
plot_data_path()
plt.show()

# %%
for h in HOPS:
    print(f"{h.src} -> {h.dst}: {h.instruction.replace(chr(10), ' ')}  [{h.who}]  -> notebook {h.notebook}")

# %% [markdown]
# ## How big is each memory?
#
# Read from the GPU when there is one. Without a Blackwell GPU the B200's rows come from public figures and
# the PTX ISA, and each row says which.

# %% tags=["nbval-ignore-output"]
from bwlab.datapath import capacities
for name, size, source in capacities():
    print(f"{name:14s} {size:58s} {source}")

# %% [markdown]
# ### Exercise 0.3 — the bytes of a tile (1 point)
#
# A GEMM CTA holds its share of A as a tile of 128 rows × 64 columns of bf16 in shared memory, and every
# byte of it is announced to an mbarrier before it arrives. Write `my_tile_bytes(rows, cols, dtype)`: the
# bytes of a `rows` × `cols` tile of element type `dtype`. `element_type(dtype).bits` gives the width in bits.
# The check tries that bf16 tile and a tile of the 4-bit float `e2m1` of block-scaled GEMMs, which packs two
# elements into a byte; the hidden tests try other types (`f32`, `e4m3`, the 6-bit `e3m2`, ...).

# %% nbgrader={"grade": false, "grade_id": "orient_tile_bytes", "locked": false, "schema_version": 3, "solution": true}
from bwlab.hw import element_type

def my_tile_bytes(rows, cols, dtype):
    """Bytes of a rows x cols tile of `dtype` ('bf16', 'f32', 'e4m3', 'e2m1', ...)."""
    ### BEGIN SOLUTION
    return rows * cols * element_type(dtype).bits // 8
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "orient_tile_bytes_check", "locked": true, "points": 1, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.hw import exercises as orient_ex
orient_ex.check_tile_bytes(my_tile_bytes)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
orient_ex.check_tile_bytes(my_tile_bytes, hidden=hidden_cases("orient_tile_bytes"))
### END HIDDEN TESTS

# %% [markdown]
# ## A first kernel: one bulk copy and one mbarrier
#
# `cuda_src/hello_bulk.cu` is the smallest kernel that uses the machinery of every later notebook:
# thread 0 initialises an **mbarrier**, announces how many bytes it expects (`arrive.expect_tx`), and
# starts an asynchronous bulk copy (`cp.async.bulk`) whose bytes, as they land in shared memory, count the
# barrier's transaction count back down (`complete_tx`). When both counts reach zero the barrier's phase
# completes, and every thread's wait returns.

# %%
from bwlab.source import show_source
show_source("hello_bulk.cu")

# %% [markdown]
# The wrappers it calls (`mbarrier_init`, `mbarrier_arrive_expect_tx`, `bulk_load`, `mbarrier_wait`) are
# one-line functions in `cuda_src/ptx/*.cuh`, each named after its PTX instruction. Here is one:

# %%
show_source("ptx/mbarrier.cuh", kernel="mbarrier_arrive_expect_tx")

# %% [markdown]
# ### Peek under the hood: the PTX
#
# NVRTC compiles the same file for Hopper (`sm_90a`) and Blackwell (`sm_100a`) with no GPU present; ptxas
# runs inside NVRTC and would reject any malformed instruction. The excerpt keeps only the lines that matter.

# %% tags=["nbval-ignore-output"]
from bwlab.compile import compile_cuda, nvrtc_version
builds = {arch: compile_cuda("hello_bulk", arch=arch) for arch in ("sm_90a", "sm_100a")}
print("NVRTC", ".".join(map(str, nvrtc_version())))
for arch, b in builds.items():
    print(f"--- {arch}: {len(b.cubin)} bytes of cubin; key PTX lines:")
    print(b.ptx_excerpt("hello_bulk_roundtrip"))

# %% [markdown]
# Whatever the NVRTC version, these instructions must be in both builds:

# %%
expected = ["mbarrier.init.shared::cta.b64", "fence.mbarrier_init.release.cluster",
            "mbarrier.arrive.expect_tx.shared::cta.b64",
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
            "mbarrier.try_wait.parity.shared::cta.b64", "%globaltimer"]
for arch, b in builds.items():
    ptx = b.ptx_of("hello_bulk_roundtrip")
    missing = [e for e in expected if e not in ptx]
    print(f"{arch}: {len(expected) - len(missing)} of {len(expected)} present (expected all)", missing or "")
    assert not missing

# %% [markdown]
# And the machine code (SASS), when `cuobjdump` or `nvdisasm` is installed:

# %% tags=["nbval-ignore-output"]
from bwlab.compile import sass_tool
sass = builds["sm_90a"].sass("hello_bulk_roundtrip")
if sass is None:
    print("No cuobjdump/nvdisasm on this machine: install the CUDA toolkit to see SASS.")
else:
    lines = [l.strip() for l in sass.splitlines() if any(k in l for k in ("SYNCS", "UBLKCP", "UTMA", "EXIT"))]
    from pathlib import Path
    print(f"SASS via {Path(sass_tool()).name}: {len(sass.splitlines())} lines; the bulk-copy and barrier instructions:")
    print("\n".join(lines[:20]))

# %% [markdown]
# ### Run it
#
# On sm_90+ the kernel runs: each CTA copies 4 KB through shared memory and back, and we compare the
# result with the source; without such a GPU, bwlab's PTX emulator runs it. `results()` also shows what an
# H100 produced, compared the same way, now.

# %% tags=["nbval-ignore-output"]
import numpy as np
from bwlab.hello import HelloCopy
print(HelloCopy(4096, blocks=4).results())   # this GPU or the PTX emulator, then an H100's recording

# %% [markdown]
# ### A kernel never hangs
#
# A wrong `expect_tx` is the classic TMA bug: announce more bytes than arrive and the phase never completes,
# so a plain spin-wait hangs the GPU. Every bwlab wait is bounded (`BW_WAIT_TIMEOUT_NS`, 200 ms by default);
# the first thread to give up writes a record that Python turns into an exception naming the barrier.

# %% tags=["nbval-ignore-output"]
print("expect_tx 16 bytes too many:")
print(HelloCopy(4096, blocks=2, extra_tx=16).results())
print("the next launch works:")
print(HelloCopy(4096, blocks=2).results(recording="foundation_wrong_expect_tx"))

# %% [markdown]
# ### Exercise 0.4 — an mbarrier's phase and parity (2 points)
#
# A pipeline reuses one mbarrier for load after load. Thread 0 announces each load's bytes with
# `arrive.expect_tx` (one arrival), and the TMA retires them with `complete_tx` as they land. The cell below
# prints your numbers: the barrier's init count (the arrivals a phase needs) and four steps, a first load
# that has landed whole and a second one that has landed in part or whole, e.g.
#
# ```python
# from bwlab.hw.mbarrier import Mbarrier
# bar = Mbarrier(1)
# bar.arrive_expect_tx(4096); bar.complete_tx(4096)   # load 0: announced, all 4096 bytes landed
# bar.arrive_expect_tx(4096); bar.complete_tx(2048)   # load 1: announced, 2048 bytes landed so far
# ```
#
# The rule: phases are numbered 0, 1, 2, ... and phase *k* has parity *k* mod 2. `try_wait.parity(p)` waits
# (False) exactly while the phase still open has parity *p*, and returns at once (True) otherwise. In the
# example, phase 0 completed and phase 1 is open (2048 bytes missing): `parity(0)` is True, `parity(1)` is
# False. (A fresh barrier: phase 0 open, so `parity(0)` is False and `parity(1)` True.)
#
# For your numbers, predict without running them `(phases completed, try_wait.parity(0), try_wait.parity(1))`
# — the last two as `True`/`False`: would a `try_wait.parity` with that parity return at once? The check
# runs the model on the same numbers. (Each student has their own; with no token from your instructor you
# get the ones above.)

# %% nbgrader={"grade": false, "grade_id": "orient_parity", "locked": false, "schema_version": 3, "solution": true}
from bwlab.hw import exercises as orient_ex
print("your numbers:", orient_ex.parity_text())
my_parity = (None, None, None)   # (phases completed, try_wait.parity(0), try_wait.parity(1))
### BEGIN SOLUTION
count, b1, b2, landed = orient_ex.parity_numbers()
phases = (count == 1) + (landed == b2)   # count 1: load 0 alone completes phase 0; count 2 needs both arrivals
my_parity = (phases, phases % 2 == 1, phases % 2 == 0)   # the open phase's parity fails, the other passes
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "orient_parity_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.hw import exercises as orient_ex
orient_ex.check_mbarrier_parity(my_parity)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
orient_ex.check_mbarrier_parity(my_parity, hidden=hidden_cases("orient_parity"))
### END HIDDEN TESTS

# %% [markdown]
# The model's barrier after those four steps (`bwlab.hw.exercises.run_parity_steps` runs them):

# %%
from bwlab.hw.exercises import run_parity_steps
print(run_parity_steps())

# %% [markdown]
# ## How to use the suite
#
# | notebook | stage | package | teaching kernel |
# |---|---|---|---|
# | `00a_gemm_from_scratch` | a GEMM from scratch: coalescing, SMEM and register tiling, `mma.sync`, the roofline; why TMA, `wgmma`, `tcgen05` | `bwlab.scratch` | `scratch/s1_naive.cu` … `s5_mma_sync.cu` |
# | `01_tma_load` | TMA load: tensor maps, mbarrier handshake, swizzle, out-of-bounds fill | `bwlab.tma` | `teach_tma.cu` |
# | `02_multicast` | clusters, multicast masks, `tma_partition` | `bwlab.multicast`, `bwlab.layout` | `teach_multicast.cu` |
# | `03a_umma_descriptors` | canonical layouts, SMEM and instruction descriptors | `bwlab.umma` | — |
# | `03b_umma_mma` | `tcgen05.mma` and its shapes (and `wgmma` on Hopper), D in TMEM | `bwlab.umma` | `teach_umma.cu`, `teach_wgmma.cu` |
# | `04_tmem_load` | TMEM allocation, addresses, `tcgen05.ld` shapes | `bwlab.tmem` | `teach_tmem.cu` |
# | `05_tma_store` | registers → SMEM → GMEM, the proxy fence, bulk groups, edge tiles | `bwlab.epilogue` | `teach_store.cu` |
# | `06_full_flow` | the whole trip as one traced GEMM, its Hopper twin, a grid with clusters | `bwlab.flow` | `full_flow_sm100.cu` |
# | `07_gemm_ladder` | one GEMM made fast step by step on Hopper, measured against cuBLAS, with one CTA's timeline | `bwlab.gemm` | `gemm_sm90/s1_one_warpgroup.cu` … `s6_tma_store.cu` |
# | `08_gemm_beyond` | the appendix to 07: a measurement protocol under the power cap, and rungs past cuBLAS (Hilbert order, split-K, an overlapped epilogue) | `bwlab.gemm` | `gemm_sm90/s7_hilbert_order.cu`, `sk_split_k.cu`, `s8_epilogue_overlap.cu` |
# | `09_low_precision` | FP8, FP6, FP4: block scales (MXFP8, NVFP4), the block-scaled `tcgen05.mma`, scale factors into TMEM by `tcgen05.cp`, Hopper FP8's measured accumulator | `bwlab.umma`, `bwlab.lowprec` | `teach_blockscaled.cu` |
# | `10_capstone` | you write the pipeline of a persistent, warp-specialised GEMM (Hopper and Blackwell), graded in the strict emulator | `bwlab.capstone` | `capstone/hopper_ws.cu`, `capstone/blackwell_ws.cu` |
#
# * Each notebook is narrative plus short calls into one `bwlab` package; read the package for the details.
# * Each stage has a short **teaching kernel**, its code shown in the notebook; change it (`%cuda --load teach_tma.cu` after
#   `%load_ext bwlab.lab` gives you a `%%cuda` cell to edit; `%cuda --reset teach_tma.cu` undoes) and run it
#   again. A changed kernel runs in a worker process
#   (`bwlab.sandbox.run_isolated`), so a fault or a hang comes back as an exception and this notebook's GPU
#   stays usable.
# * Values you should check are printed beside what was expected.
# * `python -m bwlab.validate STAGE` runs a stage's random cases on a GPU against the model;
#   `python -m bwlab.bench NAME` measures it. Results from an H100 are in `docs/results/`.

# %% [markdown]
# ## Recap, and where to go next
#
# * Data moves GMEM → SMEM (TMA) → TMEM (`tcgen05.mma`) → registers (`tcgen05.ld`) → SMEM → GMEM (TMA store).
# * Asynchronous copies report to an **mbarrier**: a phase completes when the expected arrivals *and* the
#   announced bytes (`expect_tx`) have arrived; a wait asks for a phase's parity.
# * A wrong byte count hangs a plain wait; bwlab's waits are bounded and come back as an exception.
# * Each stage runs in one of the four tiers above, and the emulator and the model are checked against real GPUs.
#
# Next: **01_tma_load** — the tensor map, the box, and what a TMA load writes into shared memory.
