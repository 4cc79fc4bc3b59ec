# %% [markdown]
# # 00a · A GEMM from scratch: from one thread per element to the tensor cores
#
# The stage notebooks that follow take apart the data path of a Blackwell GEMM: TMA, multicast,
# `tcgen05.mma`, TMEM. This one asks why that machinery exists. It writes the same matrix product five
# times, each kernel one mechanism more than the one before, and counts what each moves through memory:
#
# **naive → coalesced → shared-memory tiling → register tiling → `ldmatrix` + `mma.sync`**, then what
# it would take to go further, and which hardware unit takes each job off the threads (TMA, `wgmma`,
# `tcgen05`).
#
# The problem: **C = A·B**, A of M × K and B of K × N in **f16**, C of M × N in **f32**, all
# row-major (the layout of NumPy's `A @ B`). The kernels are in `cuda_src/scratch/`, the package is
# `bwlab.scratch`.
#
# **Before this one:** notebook 00 (what a tier is, a first kernel and its PTX). CUDA C++: threads,
# blocks, shared memory, `__syncthreads()`.
#
# **Runs on:** any machine. The first code cell prints where each step's kernel runs here and what is
# shown where it cannot run; speeds come only from a GPU (an H200's, recorded, with its date).
#
# **Exercises:** 4 graded exercises (9 points): 0a.1 the sectors of one warp access (section 2), 0a.2 the
# bytes a tiled kernel loads (section 3), 0a.3 where `mma.sync`'s A fragment lives (section 5) and 0a.4
# the roofline (section 6).

# %% tags=["nbval-ignore-output"]
import bwlab
bwlab.banner()
from bwlab import scratch
print(scratch.where_steps_run())

# %%
import matplotlib.pyplot as plt
from bwlab.scratch import EMU_SHAPE, STEPS, ScratchGemm
from bwlab.source import show_source

M, N, K = EMU_SHAPE      # small enough for the PTX emulator: seconds per step
print(f"the problem every step runs below: C ({M} x {N}) = A ({M} x {K}) * B ({K} x {N})")
for i, s in enumerate(STEPS, 1):
    print(f"step {i} {s.name:<20s} CTA {s.block[0]} x {s.block[1]} threads, C tile {s.tile[0]} x {s.tile[1]}: {s.added}")

# %% [markdown]
# ## 1. Naive: one thread per element of C
#
# Thread (x, y) of the grid computes one C[m][n]: a dot product of row m of A with column n of B, read
# straight from global memory. Here x picks the **row**.

# %%
show_source("scratch/s1_naive.cu", kernel="gemm")

# %% [markdown]
# Every step of this notebook is a `ScratchGemm` case: `model()` is C by NumPy, `results()` the kernel's
# C (run here, and as the H200 recorded it) compared with it. Steps 1-4 add the K products of each
# element in order, one `fma.rn.f32` at a time; the product of two f16 values is exact in f32, so NumPy's
# f32 sum in the same order is the same bits: the check is **bit for bit**.
#
# Every step's file is yours to change: after `%load_ext bwlab.lab`, `%cuda --load scratch/s1_naive.cu`
# gives a `%%cuda` cell holding it; once that cell compiles, every `ScratchGemm` of that step runs your
# version (`%cuda --reset scratch/s1_naive.cu` undoes it).

# %%
s1 = ScratchGemm(1, M, N, K)
print(s1.results())

# %% [markdown]
# ## 2. Coalescing: which way neighbouring threads walk
#
# A warp's 32 threads issue each load together, and the memory system answers in **32-byte sectors**.
# In step 1, neighbouring threads hold neighbouring *rows*: their 32 reads of A[m][k] lie K elements
# apart, 32 sectors for 64 useful bytes. Step 2 only swaps x and y: neighbouring threads take
# neighbouring *columns*, read one A[m][k] together (one sector, broadcast) and 64 contiguous bytes of B.

# %%
scratch.plot_warp_loads((1, 2), M, N, K)
plt.show()

# %%
show_source("scratch/s2_coalesced.cu", kernel="gemm")
print(ScratchGemm(2, M, N, K).results())


# %% [markdown]
# ### Exercise 0a.1 — the sectors of one warp access (2 points)
#
# Write `sectors(addresses)`: given the 32 byte addresses of one warp's load (a tuple), how many
# 32-byte sectors does it move? The check tries contiguous, strided, broadcast and scattered accesses
# of 2-, 4- and 8-byte elements.

# %% nbgrader={"grade": false, "grade_id": "scratch_warp_sectors", "locked": false, "schema_version": 3, "solution": true}
def sectors(addresses):
    answer = None
    ### BEGIN SOLUTION
    answer = len({a // 32 for a in addresses})
    ### END SOLUTION
    return answer


# %% nbgrader={"grade": true, "grade_id": "scratch_warp_sectors_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.scratch import exercises as scratch_ex
scratch_ex.check_warp_sectors(sectors)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
scratch_ex.check_warp_sectors(sectors, hidden=hidden_cases("scratch_warp_sectors"))
### END HIDDEN TESTS

# %% [markdown]
# The same count over a whole kernel: `scratch.traffic(step, M, N, K)` replays every global load and
# store of a step's kernel (its own index arithmetic, in NumPy) warp by warp and adds up the sectors,
# with no cache: what the kernel asks of the memory system. At 4096³:

# %%
for s in STEPS:
    print(scratch.traffic(s, 4096, 4096, 4096))

# %% [markdown]
# Coalescing cut the bytes tenfold, yet every element of A is still fetched once for every column of C
# it meets. The next two steps fetch it once and use it many times.
#
# ## 3. Shared-memory tiling
#
# A CTA of 16 × 16 threads computes a 16 × 16 tile of C. It walks K in slices of 16: each thread copies
# one element of A's slice and one of B's into shared memory, the CTA waits at `__syncthreads()`, and
# each thread reads its row and column of the slices from SMEM. One element loaded from global memory
# now serves 16 threads.

# %%
show_source("scratch/s3_smem_tiling.cu", kernel="gemm")
s3 = ScratchGemm(3, M, N, K)
print(s3.results())
s3.show()
plt.show()


# %% [markdown]
# ### Exercise 0a.2 — the bytes a tiled kernel loads (2 points)
#
# Write `tile_load_bytes(M, N, K, T)`: the bytes of A and B that step 3's kernel, built with T × T
# tiles (`-DTILE=T`), loads from global memory for an M × N × K problem (f16 elements; for T = 16 and
# 32 every row it reads fills whole sectors). The check tries both tiles and many problem sizes.

# %% nbgrader={"grade": false, "grade_id": "scratch_tile_load_bytes", "locked": false, "schema_version": 3, "solution": true}
def tile_load_bytes(M, N, K, T):
    answer = None
    ### BEGIN SOLUTION
    answer = (M // T) * (N // T) * (T * K + K * T) * 2
    ### END SOLUTION
    return answer


# %% nbgrader={"grade": true, "grade_id": "scratch_tile_load_bytes_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.scratch import exercises as scratch_ex
scratch_ex.check_tile_load_bytes(tile_load_bytes)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
scratch_ex.check_tile_load_bytes(tile_load_bytes, hidden=hidden_cases("scratch_tile_load_bytes"))
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Register tiling
#
# Step 3 does one FMA per two SMEM reads. Step 4 gives each of 256 threads a 4 × 4 block of a 64 × 64
# tile in registers: per k it reads 4 values of A and 4 of B from SMEM and does 16 FMAs with them. The
# bigger tile also reuses each global element 64 times instead of 16.

# %%
show_source("scratch/s4_register_tiling.cu", kernel="gemm")
print(ScratchGemm(4, M, N, K).results())

# %% [markdown]
# ## 5. The tensor cores: `ldmatrix` and `mma.sync`
#
# Same 64 × 64 tile, same 16-wide slices; four warps each own a 32 × 32 quarter, 2 × 4 accumulators of
# **`mma.sync.m16n8k16`**: one instruction, issued by the whole warp, multiplies a 16 × 16 block of A by a
# 16 × 8 block of B into 16 × 8 floats, four per thread. Each thread holds its part of the operands in
# registers, in the layout the PTX ISA fixes (the *fragments*); **`ldmatrix`** loads them from SMEM in
# that layout, eight 16-byte rows per 8 × 8 matrix, and `.trans` turns B's row-major slice into the
# K-pairs `mma.sync` wants. The wrappers, one per instruction:

# %%
show_source("scratch/scratch_common.cuh", kernel="ldmatrix_x4")
show_source("scratch/scratch_common.cuh", kernel="mma_m16n8k16_f16_f32")

# %%
show_source("scratch/s5_mma_sync.cu", kernel="gemm")

# %% [markdown]
# Who holds what: lane 0 and lane 5 of the A fragment (`bwlab.scratch.fragments` follows the ISA's
# figure; its `s5_model` runs the kernel's whole algorithm with it).

# %%
for lane in (0, 5):
    print(f"lane {lane:2d}: A elements 0-7 at (row, col)", [scratch.a_fragment(lane, i) for i in range(8)])


# %% [markdown]
# ### Exercise 0a.3 — where `mma.sync`'s A fragment lives (3 points)
#
# Write `a_fragment(lane, i)`: the (row, column) of the 16 × 16 A block that element `i` (0-7; two per
# 32-bit register) of `lane`'s fragment holds. The two lanes above are given; the check tries all 32
# lanes and 8 elements. (The ISA's rule: `g = lane // 4` picks a row, `t = lane % 4` a pair of columns,
# and the four registers are the four 8 × 8 quarters of the block.)

# %% nbgrader={"grade": false, "grade_id": "scratch_a_fragment", "locked": false, "schema_version": 3, "solution": true}
def a_fragment(lane, i):
    answer = None
    ### BEGIN SOLUTION
    g, t = lane // 4, lane % 4
    answer = (g + 8 * ((i // 2) % 2), 2 * t + i % 2 + 8 * (i // 4))
    ### END SOLUTION
    return answer


# %% nbgrader={"grade": true, "grade_id": "scratch_a_fragment_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.scratch import exercises as scratch_ex
scratch_ex.check_a_fragment(a_fragment)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
scratch_ex.check_a_fragment(a_fragment, hidden=hidden_cases("scratch_a_fragment"))
### END HIDDEN TESTS

# %% [markdown]
# The tensor core adds the 16 products of one `mma.sync` and the accumulator in its own way, not one FMA
# after another, so step 5's C is held to a bound (2⁻¹⁶ · |A||B| of the exact sum) and compared with
# `fragments.s5_model`, which adds as Hopper's tensor core does (the rule bwlab measured for `wgmma` on an
# H100). Where step 5 cannot run here, its C is the H200's recording:

# %%
s5 = ScratchGemm(5, M, N, K)
print(s5.results())

# %% [markdown]
# Peek under the hood: the instructions of step 5's inner loop, in its PTX.

# %%
from bwlab.compile import compile_cuda
print(compile_cuda("scratch/s5_mma_sync.cu", arch="sm_90a").ptx_excerpt("gemm", patterns=("ldmatrix", "mma.sync")))

# %% [markdown]
# ## 6. The roofline: bytes per FLOP decide the ceiling
#
# A kernel that does *I* FLOP per byte it moves cannot run faster than *I* × the memory bandwidth, nor
# faster than its units compute. Below, each step sits at the intensity its own indexing gives
# (`scratch.traffic`, no cache) under the H100's roofs (NVIDIA's datasheet: `bwlab.scratch.machine`);
# the filled points are what an H200 measured (CUDA events, after warm-up, beside `cupy.matmul`).

# %%
measured = scratch.measured()
print(measured["label"])
scratch.plot_roofline(4096, 4096, 4096, measured=measured)
plt.show()


# %% [markdown]
# Steps 1 and 2 measured *above* their roofs: the L1 and L2 caches catch the repeated reads the count
# charges in full. From step 3 on, the counted bytes are close to what the kernel must fetch, and the
# measured points sit below. Steps 4 and 5 have the same tile and so the same intensity, about 31 FLOP per
# byte: enough for the CUDA cores' roof, a tenth of what the tensor cores need.

# %% [markdown]
# ### Exercise 0a.4 — the roofline (2 points)
#
# Write `attainable(intensity, peak, bandwidth)`: the FLOP/s a kernel of `intensity` FLOP per byte can
# reach on a machine of `peak` FLOP/s and `bandwidth` bytes/s. The check tries intensities on both sides
# of the ridge on four machines.

# %% nbgrader={"grade": false, "grade_id": "scratch_attainable", "locked": false, "schema_version": 3, "solution": true}
def attainable(intensity, peak, bandwidth):
    answer = None
    ### BEGIN SOLUTION
    answer = min(peak, intensity * bandwidth)
    ### END SOLUTION
    return answer


# %% nbgrader={"grade": true, "grade_id": "scratch_attainable_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.scratch import exercises as scratch_ex
scratch_ex.check_attainable(attainable)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
scratch_ex.check_attainable(attainable, hidden=hidden_cases("scratch_attainable"))
### END HIDDEN TESTS

# %% [markdown]
# ## 7. Why TMA, `wgmma` and `tcgen05` exist
#
# The measured numbers (median of 5 launches after 2 warm-ups, 4096³):

# %%
for name, ms, tf in zip(measured["steps"], measured["ms"], measured["tflops"]):
    print(f"{name:<20s} {ms:9.3f} ms {tf:8.1f} TFLOP/s  {ms / measured['ms'][-1]:7.1f} x cuBLAS's time")

# %% [markdown]
# Step 5 is still more than ten times slower than cuBLAS. Its tile is too small: a T × T tile of C reuses each loaded
# element T times, an intensity of about T / 2 FLOP per byte, and the tensor cores need about 295 (the
# ridge below). A bigger tile costs, per CTA, the operands in SMEM and the accumulator in registers:

# %%
from bwlab.scratch import H100
print(f"H100 ridge for the f16 tensor cores: {H100.ridge('tensor'):.0f} FLOP per byte from DRAM")
for T in (64, 128, 256):
    acc_regs = T * T // 128                      # f32 accumulators per thread, four warps per CTA
    print(f"tile {T:3d} x {T:<3d}: ~{T / 2:5.0f} FLOP/byte, {acc_regs:4d} accumulator registers per thread "
          f"with 128 threads (a thread has at most 255)")

# %% [markdown]
# Each limit step 5 runs into is a job the threads do that later hardware takes off them:
#
# * **Moving the tiles**: in step 5 every thread computes addresses and issues 16 loads and 16 SMEM stores
#   per slice (the 64 × 16 and 16 × 64 slices, 128 threads), and waits at `__syncthreads()` for all of them. **TMA** (`cp.async.bulk.tensor`, Hopper)
#   copies a whole tile with one instruction from one thread, swizzled to avoid bank conflicts, and
#   reports to an mbarrier, so loads for the next slices fly while the tensor cores work (notebook 01).
# * **Feeding the tensor cores**: `ldmatrix` moves every operand through registers, one warp and one
#   16 × 16 block at a time. **`wgmma`** (Hopper) reads B (and A, or A from registers) straight from SMEM
#   through descriptors, four warps and up to 64 × 256 × 16 per instruction, asynchronously (notebook 03b).
# * **Holding the accumulator**: a 256 × 256 tile is 512 f32 registers per thread for 128 threads, past
#   the 255 a thread can have. **`tcgen05.mma`** (Blackwell) accumulates in **TMEM**, 256 KB beside the
#   tensor cores, and frees the registers (notebooks 03b and 04); `tcgen05.ld` brings the result out.
# * **Reuse across CTAs**: **multicast** lets one TMA load feed the SMEM of several CTAs of a cluster
#   (notebook 02).
#
# Notebook 07 puts these pieces together on Hopper and reaches cuBLAS.

# %% [markdown]
# ## Recap
#
# * A warp pays in 32-byte sectors: neighbouring threads should read neighbouring addresses.
# * Tiling in SMEM and registers reuses each loaded element T times; intensity grows with the tile.
# * `mma.sync` multiplies 16 × 8 × 16 per warp instruction from operands in a fixed register layout,
#   loaded by `ldmatrix`.
# * The roofline says which ceiling a kernel is under; past a 64 × 64 tile the threads themselves (their
#   registers, their load instructions) are the limit, and TMA, `wgmma` and `tcgen05` remove it.
#
# Next: **01_tma_load** — the tensor map, the box, and what a TMA load writes into shared memory.
