# %% [markdown]
# # 07 · The GEMM ladder: from the data path to speed
#
# Notebooks 01–06 moved the bytes of one tile through the data path. This one asks how fast a whole
# GEMM can go when those same pieces are put together well, and which piece buys what. The problem is
# the one every step below solves:
#
# **C = A·Bᵀ**, A of M × K, B of N × K, C of M × N, all row-major (A and B are *K-major*: K is the
# contiguous dimension); **bf16** in, **f32** accumulation in registers, bf16 out.
#
# The ladder is six kernels in `cuda_src/gemm_sm90/`, for Hopper (sm_90a: TMA + `wgmma`). Each is the
# one before it plus **one mechanism**: a pipeline, warp specialisation, persistent tiles, a multicast
# cluster, a TMA-store epilogue. All six share `gemm_common.cuh` (the SMEM descriptor, the wgmma
# calls, the tile order, the timeline stamps) and one host side (`bwlab.gemm.runner`: tensor maps,
# launch, check). Each step was checked against an f32 reference and timed on an H100 against the
# best library GEMM of the same shape.
#
# 1. the ladder and how it was measured; 2. the numbers, beside what a timing model predicts;
# 3. each step: what it adds, the change to the kernel, why it helped or did not;
# 4. the measured per-warp timeline of one CTA; 5. running the ladder here; the PTX; then the Blackwell
# twin. (The measurement protocol under the power cap and the rungs past cuBLAS are notebook 08.)
#
# **Before this one:** notebook 01 (TMA loads, the mbarrier handshake, 128B swizzle), 02 (multicast in a
# cluster), 03 (the SMEM descriptors `wgmma` reads, and `wgmma` on Hopper), 05 (the TMA-store epilogue)
# and 06 (one tile's whole trip, and its timeline).
#
# **Runs on:** the numbers, timelines and diffs come from files in the repository and run anywhere. On
# an sm_90 GPU (compute capability 9.x) section 5 runs every step live; elsewhere it
# shows what an H100 printed.
#
# **Exercises:** this notebook holds 6 graded exercises (16 points), each where its topic comes up:
# 7.1 the bytes of one pipeline stage (section 1); in step 2 of section 3, 7.2 how many CTAs share an
# SM, 7.3 where step 2 loses to step 1, 7.4 the parity the producer of a ring waits on, and 7.5 the
# ring's two waits written into step 3's kernel; in step 3, 7.6 makes a kernel faster: the ring depth,
# graded on the emulator's run and the timing model's predicted time.

# %% tags=["nbval-ignore-output"]
import bwlab
from bwlab import device
bwlab.banner()
from bwlab.gemm import GemmCase
print("The ladder runs here:", GemmCase(1, 128, 128, 64).runs_on() or "no (it needs an sm_90 GPU: wgmma)")

# %%
import matplotlib.pyplot as plt
from bwlab import gemm
from bwlab.results import load_recording
from bwlab.source import show_source
from bwlab.util import ceil_div
from bwlab.lab import fold      # a long output: its head, the rest folded

rec = load_recording("gemm_ladder")
print(rec.label)

# %% [markdown]
# ## 1. The ladder
#
# `bwlab.gemm.STEPS` describes each kernel as the host needs it (tile, threads, pipeline stages,
# SMEM, cluster) and says what it adds. The K loop of every step walks **k-slices** of 64 elements
# (128 bytes of a row: one 128B-swizzle row, `BK` in `gemm_common.cuh`); one pipeline stage holds the
# A and B slices of one k-slice.

# %%
print(f"{'step':<22s}{'tile':>10s}{'threads':>9s}{'stages':>8s}{'SMEM KiB':>10s}{'grid':>12s}{'cluster':>9s}")
for s in gemm.STEPS:
    grid = "persistent" if s.persistent else "per tile"
    print(f"{s.name:<22s}{f'{s.bm} x {s.bn}':>10s}{s.threads:>9d}{s.stages:>8d}{s.smem_bytes / 1024:>10.0f}"
          f"{grid:>12s}{s.cluster:>9d}")
print()
for i, s in enumerate(gemm.STEPS, 1):
    print(f"s{i} adds: {s.added}")

# %% [markdown]
# Every step feeds `wgmma` the same way: A and B arrive by TMA in 128B-swizzled SMEM, and a 64-bit
# SMEM descriptor tells `wgmma` where and how they are laid out (notebook 03a). One descriptor describes
# a whole k-slice; the four K = 16 sub-slices inside it are found by adding 32 bytes to its start
# address:

# %%
show_source("gemm_sm90/gemm_common.cuh", kernel="desc_k128")
show_source("gemm_sm90/gemm_common.cuh", kernel="mma_stage")


# %% [markdown]
# ### Exercise 7.1 — the bytes of one pipeline stage (2 points)
#
# Every step from 2 on keeps a ring of stages in SMEM, and how many stages fit decides a great deal below.
# Write `stage_bytes(bm, bn)`: the bytes of one stage of a `bm` × `bn` tile's ring, that is the A slice
# (`bm` rows) and the B slice (`bn` rows) of one k-slice, in bf16. The check tries other tiles too.

# %% nbgrader={"grade": false, "grade_id": "gemm_stage_bytes", "locked": false, "schema_version": 3, "solution": true}
def stage_bytes(bm, bn):
    answer = None
    ### BEGIN SOLUTION
    answer = (bm + bn) * 64 * 2          # BK = 64 bf16 elements of each row, 2 bytes each
    ### END SOLUTION
    return answer


# %% nbgrader={"grade": true, "grade_id": "gemm_stage_bytes_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.gemm import exercises as gemm_ex
gemm_ex.check_stage_bytes(stage_bytes)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
gemm_ex.check_stage_bytes(stage_bytes, hidden=hidden_cases("gemm_stage_bytes"))
### END HIDDEN TESTS

# %% [markdown]
# **How it was measured** (`python -m bwlab.bench gemm`, section 5; the *interleaved* figure — notebook 08
# measures the same kernels under a sustained protocol that states clocks and power): for each shape the library GEMMs
# first (cuBLAS bf16 through `cupy.cuda.cublas.gemmEx`, `cupy.matmul` on f16 operands of the same
# shape, `torch.matmul` bf16), then each step: its C is compared with an f32 reference of the same bf16
# inputs, and only a step that passes is timed. Times are medians of 30 launches after 5 warm-up
# launches, with CUDA events. The **fraction of the best library** is measured by timing the step and
# the fastest library of the shape *alternately* (library, step, library, step, …): an H100 under a
# long GEMM load changes its clock, and interleaving makes both see the same clock.
#
# Beside it, at 8192³ only, is the fraction **predicted by the timing model (H100 SXM description)**
# (`Step.predicted`): `bwlab.timing` runs a few tiles of the step's kernel in the emulator, replays them
# on a description of the H100 (latencies and bandwidths, each with its source) and extrapolates to the
# whole GEMM at the SM clock measured during the step (`docs/timing.md`). No GPU takes part.

# %% [markdown]
# ## 2. The numbers
#
# The recording `gemm_ladder` holds the table the benchmark printed (and, for section 4, the
# timeline stamps of one CTA). Three shapes: 8192³ and 4096³, and a skinny 512 × 8192 × 8192 whose
# M is only four tiles tall.

# %%
print(rec.label)
print(gemm.format_table(rec))

# %%
gemm.plot_ladder(rec)
plt.show()

# %% [markdown]
# One row per shape. On the left each bar is a step's TFLOP/s and the black tick over it is the best
# library's TFLOP/s *in the launches interleaved with that step*, not the library's speed at the start of
# the run; on the right, the fraction of that library the step reached. Two things to read before the
# steps:
#
# * **Compare fractions, not TFLOP/s between steps.** The best library's own speed moved during the
#   run (next cell), and so does the SM clock: the stamped launches of section 4 (4096³, separate
#   launches from the timed ones) found CTA 0's SM at the clocks printed below, under the H100's
#   1.98 GHz maximum. A step's TFLOP/s depends on when it ran; its fraction of a library run alongside
#   much less.
# * **The model's largest misses are steps 1 and 2.** At 8192³ steps 3 to 6 are within 0.04 of their
#   predictions; steps 1 and 2 are predicted faster than they ran here (by 0.08 and 0.12 of the
#   library), and step 2, as measured, behind step 1.
#   What the model knows of step 2 it takes from the compiler (section 3 says what): its `wgmma` run
#   one after the other, and between them warp 0 issues the loads and waits. (The predicted column uses
#   the library time and SM clocks of the sustained runs of notebook 08; against those runs the model
#   is within 15 % for 26 of 27 step/shape pairs, `docs/results/timing_hopper.txt`; on an H200, at the
#   clock its SMs counted during each rung's own blocks, all 27 are within 15 % and every measured order is
#   reproduced, `docs/results/timing_h200_stamped.txt`.) Step 6 is level with the
#   library at every shape.

# %%
for shape in gemm.shapes(rec):
    here = [r for r in gemm.rows(rec) if r.shape == shape]
    alone = max(r.tflops for r in here if not r.is_step)
    along = [r.library_alongside for r in here if r.is_step]
    print(f"{shape:>16s}: best library {alone:.0f} TFLOP/s timed alone at the start, "
          f"{min(along):.0f}-{max(along):.0f} TFLOP/s in the launches interleaved with the steps")
clocks = [gemm.step_timeline(rec, s.name).clock_ghz for s in gemm.STEPS]
print(f"SM clock of CTA 0 in the stamped 4096^3 launches: {min(clocks):.2f}-{max(clocks):.2f} GHz")

# %% [markdown]
# ## 3. Step by step
#
# For each step: what it adds, its numbers beside the step before it, and the change to the kernel
# as a unified diff of the code (the header comments left out; lines compared with their indentation
# ignored, so a loop that moved inside another shows only what changed in it). The stamps
# (`stamp(stamps, …)`) compile to nothing unless the kernel is built with `-DGEMM_STAMPS`.
#
# ### Step 1: one warpgroup, one buffer

# %%
kernel_s1 = show_source("gemm_sm90/s1_one_warpgroup.cu", kernel="gemm", print_it=False)
fold(gemm.step_card(rec, 1) + "\n\n" + kernel_s1, summary="the rest of step 1's card, and its kernel")

# %% [markdown]
# Nothing overlaps inside a CTA: thread 0 issues the loads, every thread waits for them, the
# warpgroup issues eight `wgmma` (two 64-row slabs × four K = 16 steps) and waits for them, and a
# `__syncthreads` frees the buffer. CTA 0's stamps (section 4; they were taken at 4096³) split its
# k-slices as the next cell prints: the loads in flight, the `wgmma`, and the rest of the period
# (the `__syncthreads`, thread 0 issuing the next loads). Yet step 1 reached about 0.7 of the library
# at both square shapes, far more than one such CTA alone could give, because **CTA 0 is not alone on its SM**. The SMEM and
# register arithmetic (`bwlab.gemm.occupancy`, from the compiled kernel) says three of these CTAs fit
# on one SM, and while one waits for its loads another one's `wgmma` can run: occupancy builds the
# pipeline that the kernel does not. (The CUDA driver's occupancy calculator said the same on an H100,
# for every kernel of this notebook: `docs/results/gemm_occupancy_h100.txt`.)

# %%
t1 = gemm.step_timeline(rec, "s1")
rest = t1.slice_period - t1.load_to_data - t1.hold
print(f"s1, CTA 0 at 4096^3: {t1.slice_period:.0f} cycles per k-slice = {t1.load_to_data:.0f} loads in flight"
      f" + {t1.hold:.0f} wgmma + {rest:.0f} the rest (medians)")
print(f"the wgmma run {t1.hold / t1.slice_period:.0%} of each k-slice's period")
print(gemm.describe_occupancy("s1"))

# %% [markdown]
# ### Step 2: a ring of buffers, and why it is slower

# %%
fold(gemm.step_card(rec, 2) + "\n\n" + gemm.step_diff(2), summary="the rest of step 2's card, and its diff")


# %% [markdown]
# The ring is the textbook fix for step 1: each stage has a `full` mbarrier (TMA's bytes have landed,
# notebook 01) and an `empty` one (all four warps are done reading it); `wgmma.wait_group 1` leaves one
# k-slice of `wgmma` in flight while thread 0 refills the buffer of the one before. It made the step
# slower at both square shapes (the card above). The ring is paid for in SMEM, and SMEM decides how
# many CTAs share an SM. One stage is (128 + 128) rows × 128 bytes = 32 KiB; the launch asks 1 KiB
# more so that the kernel can align its tiles to 1024 bytes (the 128B swizzle needs it), and each CTA
# also takes its static block (the 1 KiB the system reserves per CTA, plus the mbarriers). An H100 SM
# has 228 KiB.

# %% [markdown]
# ### Exercise 7.2 — how many CTAs share an SM (3 points)
#
# Predict the occupancy before the next cells print it. Write `ctas_per_sm(smem_per_cta, registers,
# threads)`: how many CTAs fit on one H100 SM at once, each taking `smem_per_cta` bytes of SMEM (the
# launch's dynamic SMEM and the static block together), `registers` registers per thread and `threads`
# threads. An H100 SM has 228 KiB of SMEM for CTAs (233472 bytes) and 65536 registers; registers are
# given to each warp in units of 256; an SM holds at most 32 CTAs and 64 warps. The check's cases are
# the compiled kernels of steps 1 and 2 (registers as `ptxas` allocated them, `bwlab.gemm.occupancy`).

# %% nbgrader={"grade": false, "grade_id": "gemm_ctas_per_sm", "locked": false, "schema_version": 3, "solution": true}
def ctas_per_sm(smem_per_cta, registers, threads):
    answer = None
    ### BEGIN SOLUTION
    warps = (threads + 31) // 32
    per_warp = (registers * 32 + 255) // 256 * 256     # whole units of 256 per warp
    answer = min(233472 // smem_per_cta, 65536 // (per_warp * warps), 32, 64 // warps)
    ### END SOLUTION
    return answer


# %% nbgrader={"grade": true, "grade_id": "gemm_ctas_per_sm_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.gemm import exercises as gemm_ex
gemm_ex.check_ctas_per_sm(ctas_per_sm)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
gemm_ex.check_ctas_per_sm(ctas_per_sm, hidden=hidden_cases("gemm_ctas_per_sm"))
### END HIDDEN TESTS

# %% [markdown]
# What `bwlab.gemm.occupancy` works out for step 2's ring at four depths (and the CUDA driver's answer
# on an H100 beside it):

# %%
for stages in (2, 3, 4, 6):
    print(gemm.describe_occupancy("s2", stages=stages))

# %% [markdown]
# Two stages keep step 1's three CTAs per SM, three stages (the ladder's step 2) leave two, and four
# leave one. A separate run at 8192³ (`docs/results/gemm_explore_h100.txt`, built with
# `-DGEMM_STAGES=N`) timed each depth and step 1, one after the other. These are raw TFLOP/s with no
# library alongside, so differences of a few per cent may be the clock; the last column is each
# against step 1 of the same run:

# %%
explore = {(name, stages): tflops for name, stages, tflops, ok in gemm.explore_rows()}
s1_alone = explore[("s1", None)]
for name, stages, tflops, ok in gemm.explore_rows():
    if name not in ("s1", "s2"):
        continue
    occ = gemm.ctas_per_sm(name, stages=stages)
    what = f"s2, {stages} stages" if stages else "s1, 1 stage"
    print(f"{what:<14s} {occ.ctas} CTA{'s' if occ.ctas > 1 else ' '} per SM: {tflops:6.1f} TFLOP/s"
          f"   (checked: {'PASS' if ok else 'FAIL'})   {tflops / s1_alone:5.2f} of s1")


# %% [markdown]
# What was measured: no depth reaches step 1. With two stages step 2 has as many CTAs per SM as
# step 1 and is still clearly slower, so occupancy alone does not explain step 2. Three stages cost
# a CTA and were a little faster than two; at four, one CTA per SM, the speed falls off a cliff, and
# six are no better than four. The ladder's fractions (interleaved with the library, so free of the
# clock question) say the same for the three-stage step 2: it lost to step 1 at both square shapes.
#
# Why two stages with three CTAs lose to one stage with three CTAs is **reasoning from the code**, not
# measured: in step 2 one thread of warp 0 both issues the loads and, inside the math loop, waits on
# the `empty` barrier of the previous slice until all four warps have arrived. `wgmma` is issued by
# the whole warpgroup together (`.sync.aligned`), so the next slice's `wgmma` wait for that thread,
# and `wgmma.wait_group 1` stops the warpgroup once per slice until the previous slice's `wgmma` are
# done. The math warps carry the load loop's waits; in step 1 the same waits sit in the
# `__syncthreads`, but there two other CTAs' `wgmma` fill the gap. The stamps (4096³) agree with
# the outcome: CTA 0 of step 2 takes about as long per k-slice as step 1's, and the SM holds fewer
# of them.
#
# The compiler says more. Building step 2 prints a note from ptxas: `(C7520) Potential Performance
# Loss: wgmma.mma_async instructions are serialized due to program dependence on compiler-inserted
# WG.AR in divergent path`. Step 2 leaves a slice's `wgmma` in flight (`wait_group 1`) while thread 0
# takes its branch to wait and load; ptxas does not keep them in flight across that branch and puts a
# wait for completion before every `wgmma` instead (`WARPGROUP.DEPBAR` in the SASS). A k-slice's eight
# `wgmma` then run one after the other, each waiting out the tensor pipe's latency: in the timing
# model about 1,100 cycles (8 × (64 in the pipe + ~75 of latency)) of the ~2,100 CTA 0 spends per
# k-slice (section 4's stamps). Step 1 waits for all its `wgmma` before
# its branch, and gets no such note.

# %% [markdown]
# ### Exercise 7.3 — where step 2 loses to step 1 (2 points)
#
# Put the two numbers together. Write `flop_per_sm_cycle(bm, bn, cycles_per_slice, ctas)`: the FLOP an
# SM computes per cycle when each of its `ctas` CTAs finishes the k-slice of a `bm` × `bn` tile every
# `cycles_per_slice` cycles (a k-slice is `ladder.BK` deep). The check's cases are CTA 0's recorded
# cycles per k-slice of steps 1 and 2 with their CTAs per SM; the next cell then compares the two steps.

# %% nbgrader={"grade": false, "grade_id": "gemm_flop_per_sm_cycle", "locked": false, "schema_version": 3, "solution": true}
def flop_per_sm_cycle(bm, bn, cycles_per_slice, ctas):
    answer = None
    ### BEGIN SOLUTION
    answer = ctas * 2 * bm * bn * 64 / cycles_per_slice     # BK = 64: 2 FLOP per product and k
    ### END SOLUTION
    return answer


# %% nbgrader={"grade": true, "grade_id": "gemm_flop_per_sm_cycle_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.gemm import exercises as gemm_ex
gemm_ex.check_flop_per_sm_cycle(flop_per_sm_cycle)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
gemm_ex.check_flop_per_sm_cycle(flop_per_sm_cycle, hidden=hidden_cases("gemm_flop_per_sm_cycle"))
### END HIDDEN TESTS

# %%
for name in ("s1", "s2"):
    tl = gemm.step_timeline(rec, name)
    print(f"{name}: {tl.slice_period:.0f} cycles per k-slice, {gemm.ctas_per_sm(name).ctas} CTAs per SM"
          f" -> {gemm.sm_flop_per_cycle(rec, name):.0f} FLOP per SM cycle")


# %% [markdown]
# Per k-slice, CTA 0 of step 2 is no slower than step 1's; step 2 loses in how many of those CTAs the
# SM holds.

# %% [markdown]
# ### Exercise 7.4 — the parity a producer waits on (3 points)
#
# From step 3 on, a producer thread fills the ring: k-slice `kt` goes into buffer `s = kt % STAGES`,
# and before it overwrites that buffer it waits on the buffer's `empty` mbarrier until the consumers
# have released what the buffer held before (`mbarrier.try_wait.parity`, notebook 00's exercise 0.4 and
# `bwlab.hw.mbarrier`). Each release completes one phase of that barrier. Write `producer_parity(kt,
# stages)`: the parity the producer's wait for k-slice `kt` must pass on. On the first pass over the
# ring nothing needs to be released yet: give the parity that passes on a fresh barrier (step 3 skips
# that wait instead; CUTLASS's producers start on that parity and wait anyway).

# %% nbgrader={"grade": false, "grade_id": "gemm_producer_parity", "locked": false, "schema_version": 3, "solution": true}
def producer_parity(kt, stages):
    answer = None
    ### BEGIN SOLUTION
    answer = (kt // stages + 1) % 2
    ### END SOLUTION
    return answer


# %% nbgrader={"grade": true, "grade_id": "gemm_producer_parity_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.gemm import exercises as gemm_ex
gemm_ex.check_producer_parity(producer_parity)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
gemm_ex.check_producer_parity(producer_parity, hidden=hidden_cases("gemm_producer_parity"))
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 7.5 — the ring's handshake, in the kernel (3 points)
#
# Now write both waits of step 3's ring into its kernel (`cuda_src/gemm_sm90/s3_warp_specialized.cu`;
# step 3 below prints how it differs from step 2), as C expressions of `kt` and `STAGES`:
#
# ```cuda
# // the two consumer warpgroups, for each k-slice kt (s = kt % STAGES):
# if (!mbarrier_wait(&full[s], /* full_parity */, 1, STAGE_BYTES)) return;
# // the producer thread, for each k-slice kt:
# if (kt >= STAGES && !mbarrier_wait(&empty[s], /* empty_parity */, 2, 0)) return;
# ```
#
# `full[s]` completes a phase when the TMA's bytes of a fill have landed, `empty[s]` when every consumer
# warp has released the buffer. The check compiles your kernel (sm_90a), then runs the ring on the
# mbarrier model and names the first wait that would pass before its phase has completed (a race).
# On a Hopper GPU your kernel also runs on a 256 × 512 × 1024 GEMM in a worker process, its C is
# checked against the f32 reference and its time printed beside the kernel as written.

# %% nbgrader={"grade": false, "grade_id": "gemm_handshake", "locked": false, "schema_version": 3, "solution": true}
full_parity = None    # the consumers' wait on full[s] for k-slice kt: a C expression (a string)
empty_parity = None   # the producer's wait on empty[s] for k-slice kt >= STAGES: a C expression (a string)
### BEGIN SOLUTION
full_parity = "(kt / STAGES) & 1"
empty_parity = "(kt / STAGES + 1) & 1"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "gemm_handshake_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["nbval-ignore-output", "raises-exception"]
from bwlab.gemm import exercises as gemm_ex
gemm_ex.check_handshake(full_parity, empty_parity)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
gemm_ex.check_handshake(full_parity, empty_parity, hidden=hidden_cases("gemm_handshake"))
### END HIDDEN TESTS

# %% [markdown]
# The next step takes the loads and their waits off the math warps altogether.
#
# ### Step 3: warp specialisation

# %%
fold(gemm.step_card(rec, 3) + "\n\n" + gemm.step_diff(3), summary="the rest of step 3's card, and its diff")


# %% [markdown]
# Three warpgroups with different jobs. The **producer** (warpgroup 0) hands registers back with
# `setmaxnreg.dec 40`, and one of its threads does nothing but wait for an `empty` buffer and issue the
# two loads into it; it is never stuck behind a `wgmma`. The two **consumers** take the registers
# (`setmaxnreg.inc 232`: 128 f32 accumulators per thread for m64n256k16) and each computes 64 rows of a
# 128 × 256 tile. The wider tile also gets more math out of every byte loaded (next cell: a third
# more FLOP per byte). One CTA per SM (the step table lists the launch's dynamic SMEM; the occupancy
# line adds the static block), and the biggest jump of the ladder (the card above). CTA 0 finishes a
# k-slice of the 128 × 256 tile, twice step 1's work, in about half of step 1's cycles.

# %%
def flop_per_byte(st):
    return 2 * st.bm * st.bn * gemm.BK / st.stage_bytes

s2_, s3_ = gemm.step("s2"), gemm.step("s3")
for st in (s2_, s3_):
    print(f"{st.name}: a k-slice brings {st.stage_bytes / 1024:.0f} KiB for {2 * st.bm * st.bn * gemm.BK / 1e6:.1f}"
          f" MFLOP: {flop_per_byte(st):.1f} FLOP per byte")
print(f"s3 / s2: {flop_per_byte(s3_) / flop_per_byte(s2_):.2f}x the FLOP per byte")
print(gemm.describe_occupancy("s3"))
print(f"cycles per k-slice at 4096^3: s1 {gemm.step_timeline(rec, 's1').slice_period:.0f}, "
      f"s3 {gemm.step_timeline(rec, 's3').slice_period:.0f}")

# %% [markdown]
# ### Exercise 7.6 — speed by doing: the shortest ring at full speed (3 points)
#
# Step 3's ring holds 4 stages of 48 KiB: 192 KiB of the SM's 228. With too few, the producer cannot
# load far enough ahead and the tensor cores wait; each stage more costs 48 KiB that later steps use
# (step 6 stages C in 32 KiB). Set `stages` to the **fewest** stages that the timing model predicts as
# fast as the deepest ring that fits (within 1 %). Try depths first: `gemm_ex.ring_prediction(n)`
# predicts step 3 with a ring of `n` at 8192³ (about 10 s the first time).
#
# The check writes `STAGES = stages` into the kernel, runs it in the emulator on a 128 × 256 × 512 GEMM
# (C checked against A·Bᵀ) and grades the time `bwlab.timing` predicts for it (H100 SXM description):
# the same on every machine, no GPU needed, under a minute. On a Hopper GPU your kernel is also run and
# timed, shown beside the grade.

# %% nbgrader={"grade": false, "grade_id": "gemm_ring_depth", "locked": false, "schema_version": 3, "solution": true}
stages = None   # the ring depth of step 3: an int
### BEGIN SOLUTION
stages = 3
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "gemm_ring_depth_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["nbval-ignore-output", "raises-exception"]
from bwlab.gemm import exercises as gemm_ex
gemm_ex.check_ring_depth(stages)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
gemm_ex.check_ring_depth(stages, hidden=hidden_cases("gemm_ring_depth"))
### END HIDDEN TESTS

# %% [markdown]
# ### Step 4: persistent CTAs

# %%
fold(gemm.step_card(rec, 4) + "\n\n" + gemm.step_diff(4), summary="the rest of step 4's card, and its diff")

# %% [markdown]
# Step 3 launches one CTA per tile (2048 of them at 8192³), and each pays its set-up, fills its
# pipeline from empty and writes its C with the tensor cores idle. Here one CTA per SM walks tiles
# `blockIdx.x, blockIdx.x + gridDim.x, …` in a grouped order (16 tile rows per band, so CTAs running
# at the same time read the same A and B tiles from L2), and the producer runs on into the next tile's
# k-slices while the consumers write C: the ring never drains between tiles. It gains at both square
# shapes (the card above). The epilogue is still long (next cell, from the stamps of section 4), and
# the producer can run only four k-slices ahead of it.
#
# At the skinny shape step 4 gains next to nothing over step 3, and the count of tiles says why: with
# 128 × 256 tiles, 512 × 8192 is fewer tiles than the H100 has SMs, so step 3's grid is already one
# CTA per SM and step 4's persistent CTAs each get one tile, the same work in the same place. The
# same count explains the skinny shape's big jump at step 3 (reasoning, from the occupancy above):
# step 1 and 2's 128 × 128 tiles give the skinny shape fewer than two CTAs per SM, short of the three
# that made step 1's occupancy pipeline, while step 3 needs only one CTA per SM to keep its tensor
# cores busy.

# %%
t4 = gemm.step_timeline(rec, "s4")
print(f"s4 epilogue at 4096^3: {t4.epilogue:.0f} cycles per consumer and tile (median over the tiles CTA 0 wrote)")
for shape in gemm.shapes(rec):
    m, n, k = map(int, shape.split("x"))
    for st in (gemm.step("s1"), gemm.step("s3")):
        tiles = ceil_div(m, st.bm) * ceil_div(n, st.bn)
        print(f"{shape:>16s}, {st.bm} x {st.bn} tiles: {tiles:5d} tiles = {tiles / rec.params['sms']:5.2f} per SM"
              f" ({rec.params['sms']} SMs)")
print("of the best library at 512 x 8192 x 8192:",
      ", ".join(f"{r.name.split('_')[0]} {r.ratio:.2f}" for r in gemm.rows(rec)
                if r.shape == "512x8192x8192" and r.is_step))

# %% [markdown]
# ### Step 5: a cluster sharing B by multicast

# %%
fold(gemm.step_card(rec, 5) + "\n\n" + gemm.step_diff(5), summary="the rest of step 5's card, and its diff")

# %% [markdown]
# Two CTAs of a cluster compute vertically adjacent tiles, so they need the same B slice at every k;
# each loads half of it with one multicast TMA that lands in both CTAs' SMEM (notebook 02), and L2
# serves every B byte once per cluster instead of twice. A buffer may then be refilled only when
# **both** CTAs are done with it, so each consumer warp arrives on its own `empty` barrier and, through
# `mapa`, on its partner's. At these shapes this buys nothing measurable (the card above): step 4's loads were already hidden behind the math, and the cycles per
# k-slice in section 4 are the same.
#
# There is a lesson in how the partner is told. `mbarrier.arrive` takes a memory-ordering semantics
# and a scope, `.release` and `.cta` when left out (PTX ISA, `mbarrier.arrive`). The remote arrive
# here leaves both out, as CUTLASS's `ClusterBarrier::arrive(cta_id)` does:
# `mbarrier.arrive.shared::cluster.b64 _, [addr]`, and the producer's wait is the default one too.
# An earlier run of the same ladder (`docs/results/gemm_h100_release_cluster_arrive.txt`) differed in
# **two** things at once: that arrive was written `mbarrier.arrive.release.cluster…` *and* the
# producer's wait `try_wait…acquire.cluster` (and step 2 had four stages):

# %%
other = {(shape, name): ratio for shape, name, _, _, ratio in
         gemm.report_rows("gemm_h100_release_cluster_arrive.txt")}
print(f"{'':<22s}{'shape':>16s}  {'cluster scope':>14s}  {'defaults (.cta)':>16s}  {'lost':>5s}")
lost = []
for r in gemm.rows(rec):
    if r.name in ("s5_cluster_multicast", "s6_tma_store"):
        lost.append(1 - other[(r.shape, r.name)] / r.ratio)
        print(f"{r.name:<22s}{r.shape:>16s}  {other[(r.shape, r.name)]:14.2f}  {r.ratio:16.2f}  {lost[-1]:5.0%}")
print(f"fraction of the best library lost with the cluster-scope pair: {min(lost):.0%} to {max(lost):.0%}")
print("\nstep 2 with four stages in that run:",
      ", ".join(f"{shape} {ratio:.2f}" for (shape, name), ratio in other.items() if name == "s2_pipeline"))

# %% [markdown]
# Measured: with the cluster-scope pair both steps that use it lost that much of their speed, at every
# shape. Which of the two changes costs how much was not measured: the run changed the arrive and the
# wait together. Why cluster scope can cost is **reasoning**: a release at cluster scope orders all
# of the arriving thread's earlier memory accesses for every thread of the cluster before the arrival
# counts (and an acquire at cluster scope orders the waiter's later ones), and eight consumer warps
# arrive once per k-slice each. What the arrival hands over here needs less: the only earlier accesses
# to the released buffer were the consumer's own `wgmma` reads, already finished by
# `wgmma.wait_group`, and the partner writes the buffer again only with a TMA load it issues after
# seeing the arrival. The ladder therefore does what CUTLASS does, the default `.release.cta` arrive
# and the default wait. (The same run shows step 2's four-stage cliff in the last line above.)
#
# ### Step 6: the epilogue through SMEM and TMA stores

# %%
fold(gemm.step_card(rec, 6) + "\n\n" + gemm.step_diff(6), summary="the rest of step 6's card, and its diff")

# %% [markdown]
# Until now each consumer wrote its 64 × 256 accumulator straight from registers: 64 `st.global` per
# thread, each warp instruction touching 8 rows × 16 bytes, and the consumer is away from the tensor
# cores all that time. Step 6 writes each 64 × 64 piece into a 128B-swizzled SMEM buffer (the chunk
# index XOR the row, so the eight rows a warp writes at once fall in eight different 16-byte chunks:
# no bank conflicts, notebook 05), fences the generic-proxy writes for the async proxy
# (`fence.proxy.async.shared::cta`), and one thread hands the piece to a TMA store that writes whole
# 128-byte lines and runs on by itself. Two buffers per consumer: `cp.async.bulk.wait_group.read 1`
# makes sure the store issued two pieces ago has read its buffer before it is written again. The
# epilogue shrinks several-fold against step 5's (next cell, from the stamps of section 4), and the
# step reaches the library at every shape (the card above).

# %%
t5, t6 = gemm.step_timeline(rec, "s5"), gemm.step_timeline(rec, "s6")
print(f"epilogue at 4096^3, cycles per consumer and tile (median over the tiles CTA 0 wrote): "
      f"s5 {t5.epilogue:.0f} -> s6 {t6.epilogue:.0f} ({t5.epilogue / t6.epilogue:.1f}x shorter)")

# %% [markdown]
# ## 4. The timeline of one CTA
#
# Built with `-DGEMM_STAMPS`, every kernel writes `%clock64` (and `%globaltimer`) for CTA 0 into a
# buffer: the producer when it starts waiting for a free buffer and when its loads are issued, each
# consumer when a k-slice's bytes have landed and when its `wgmma` are known to be finished, the
# epilogue when it starts and ends writing C. The recording holds them for every step at 4096³. The
# times below are SM cycles: `%globaltimer` ticks in steps of tens of nanoseconds, too coarse for one
# k-slice; the clock itself is read off the stamps as cycles per nanosecond.
#
# These stamps come from launches at 4096³, so they explain that shape's fractions in section 2;
# the other shapes were not stamped.
#
# From the stamps, per step: cycles per k-slice inside a tile, and what that means for the SM if every
# CTA on it went as fast as CTA 0 (the CTAs per SM from section 3 × the FLOP of a k-slice ÷ its
# cycles). For a reference point, the next column divides that by the H100's dense bf16 tensor-core
# peak: NVIDIA quotes 989 TFLOP/s for 132 SMs at a 1.83 GHz boost clock, which is 4096 FLOP per SM
# per cycle. Then the epilogue (the median over every tile CTA 0 wrote and both consumers) and, for
# the persistent steps, the median cycles from one tile's epilogue to the next.

# %%
print(rec.label)
print(gemm.timeline_table(rec))
print(f"\ndense bf16 peak: {gemm.H100_PEAK_FLOP_PER_SM_CYCLE:.0f} FLOP per SM cycle (989.4 TFLOP/s / 132 SMs / 1.83 GHz)")

# %% [markdown]
# The column *FLOP per SM cycle* is the ladder in one number: step 1's three CTAs taking turns reach
# about 70% of the peak, step 2's two CTAs about half, and from step 3 on one CTA keeps the tensor
# cores busy at about 95% of it inside a tile. From step 3 on the k-slices go at the same pace, and
# what is left is what happens between tiles: persistent CTAs remove the per-CTA start, and the
# TMA-store epilogue shortens tile to tile (the last column, step 5 → step 6).
#
# First picture: step 1 against step 3 over their first 16 k-slices, on one scale. In step 1 the
# loads (grey lines: from issue until a consumer sees the bytes) and the math take turns; in step 3 the
# producer is always ahead, waiting for a free buffer (the pale bars end at the dark tick where it
# issues), and the two consumers' k-slices follow each other with no gap (even slices drawn above odd
# ones, so that overlapping slices stay visible). The share of the window a consumer holds a slice
# (in each title) counts the wait for the first loads too, so for step 1 it is a little below the
# share of a k-slice's period printed in section 3.

# %%
gemm.plot_timelines(rec, ("s1", "s3"), "start", slices=16,
                    title="Warp specialisation: the loads run ahead while both consumers compute (s1 vs s3)")
plt.show()

# %% [markdown]
# Second picture: step 5 against step 6 (the step that adds the TMA-store epilogue) around the first
# tile boundary: the last eight k-slices of tile 0, its epilogue, the first eight of tile 1. The
# labels give each consumer's epilogue of tile 0 only, so they differ from the table's medians over
# all tiles. In step 5 both consumers write C from registers while the ring stands full (the producer
# has loaded tile 1's first k-slices and waits; a gap in its lane is time between two of its stamps,
# neither waiting nor issuing); in step 6 the consumers are back much sooner, and the TMA stores drain
# on their own.

# %%
saved = gemm.step_timeline(rec, "s5").epilogue - gemm.step_timeline(rec, "s6").epilogue
gemm.plot_timelines(rec, ("s5", "s6"), "boundary", slices=16,
                    title=f"A TMA-store epilogue gives the tensor cores back {saved:,.0f} cycles per consumer and "
                          f"tile (medians; s5 vs s6)")
plt.show()

# %% [markdown]
# ## 5. Run it here
#
# `GemmCase(step, M, N, K)` is one step on one problem: `model()` is the f32 GEMM of the same bf16
# operands rounded to bf16 as the kernel stores C, and `check()` / `results()` compare the step's C with
# it, allowing |C − C_f32| ≤ 2⁻⁷·|C_f32| + 2⁻¹⁶·(|A|·|B|ᵀ) (one bf16 rounding of C plus f32 sums taken in
# another order). On an sm_90 GPU the next cell runs every step on a 1024³ problem; without one (no GPU,
# or one without `wgmma`, such as a Blackwell GPU: the ladder is sm_90a code), in bwlab's PTX emulator, the
# first and the last step run on 256 × 256 × 64 (the emulator takes seconds per step); then the check
# lines the H100 printed at 4096³ when the recording was made.

# %% tags=["nbval-ignore-output"]
hopper = device.on_gpu("tma") and device.gpu_info().has_wgmma   # an sm_90 GPU runs the ladder itself
shape, steps = ((1024, 1024, 1024), gemm.STEPS) if hopper else ((256, 256, 64), gemm.STEPS[::5])
# a GPU without wgmma cannot run sm_90a code: the PTX emulator runs it there, as it does with no GPU
with device.using_backend("emulated" if device.on_gpu("tma") and not hopper else device.backend()):
    for s in steps:
        print(GemmCase(s, *shape, seed=1).results())
print("What the H100 printed at 4096^3 (python -m bwlab.bench gemm):")
for line in gemm.recorded_checks("gemm_h100.txt"):
    print(" ", line)

# %% [markdown]
# **The benchmark.** On an sm_90 GPU, from the repository root:
#
# ```bash
# python -m bwlab.bench gemm                       # 4096^3, 8192^3 and 512x8192x8192: every step checked, then timed
# python -m bwlab.bench gemm --steps s1 s6 --sizes 2048 --skinny   # a subset
# python -m bwlab.bench gemm --record --repeat 30  # also re-make the recording this notebook draws
# python -m bwlab.bench gemm --protocol sustained  # notebook 08: five shapes, sustained blocks, NVML clocks
# ```
#
# It prints the table of section 2 (exit status 0 when every step passed its check, 1 when one failed,
# 3 without an sm_90 GPU). A step whose check fails is reported and not timed.
#
# ## Peek under the hood: the PTX
#
# Each step's kernel compiled for sm_90a by NVRTC (no GPU needed), and how often each instruction
# family appears in its PTX. The new mechanisms show as new rows: the ring's `empty` arrivals and
# `wgmma.wait_group 1` (s2), `setmaxnreg` and the wider `wgmma` (s3), the multicast load, the remote
# arrive and the cluster barrier (s5), the TMA store and the proxy fence in place of `st.global` (s6).
# Step 4 changes only the loops around the same instructions (its one extra `empty` arrival releases
# a tile's last k-slice). A static count: the compiler unrolls loops, so one instruction in a loop can
# appear many times.

# %%
print(gemm.ptx_features())

# %% [markdown]
# And the last step's PTX, the first line of each instruction of interest, in program order (the
# consumers' code comes first, the producer's after `setmaxnreg.dec`):

# %%
from bwlab.compile import compile_cuda
s6 = compile_cuda(gemm.step("s6").path, arch="sm_90a")
print(s6.ptx_excerpt("gemm", patterns=("mbarrier", "cp.async.bulk", "wgmma", "setmaxnreg", "mapa",
                                       "barrier.cluster", "fence.proxy", "bar.sync"), first_only=True, width=110))

# %% [markdown]
# ## 6. Beyond the ladder
#
# How these numbers hold up when the GPU runs at its power cap (a sustained measurement protocol), and
# three rungs past the ladder — the tile order as a Hilbert curve, split-K for skinny shapes, an epilogue
# under the next tile's main loop — are the appendix, notebook `08_gemm_beyond`.

# %% [markdown]
# ## Recap
#
# * **Occupancy is a pipeline too.** Step 1 has no overlap inside a CTA, but three CTAs share each SM
#   and take turns. A ring in a warpgroup that also issues and waits for its own loads did not beat
#   that at any depth measured, and deeper rings cost CTAs (one CTA per SM was a cliff). Count CTAs
#   per SM (SMEM and registers) before adding stages.
# * **Specialise warps.** A producer that only loads and consumers that only compute (with the
#   registers moved to them by `setmaxnreg`) kept one CTA's tensor cores near their peak inside a tile
#   from step 3 on (section 4).
# * **What is left is between tiles.** Persistent CTAs keep the ring full across tiles; a TMA-store
#   epilogue cut each consumer's time away from the math several-fold (section 4) and brought the
#   ladder level with the best library.
# * **Mind the scope of a synchronisation.** An arrive at `.release.cluster` together with a wait at
#   `.acquire.cluster` cost both cluster steps more than 40% of their speed; the ladder uses the
#   defaults (`.release.cta`, as CUTLASS's `ClusterBarrier` does). Which of the two cost what was not
#   measured.
# * **Measure against a library timed alongside**, and predict before measuring: where a timing model
#   misses (step 2), the miss points at what it leaves out.
# * **A model before a GPU.** The timing model predicts a kernel's time from its emulated run and a
#   machine description: within 0.04 of the measured fraction for every step but step 2, and it
#   grades a change for speed (exercise 7.6) on any machine.
#
# ## The Blackwell twin
#
# The same ladder exists for Blackwell in `cuda_src/gemm_sm100/`, for sm_100a, step for step: TMA
# loads into the same swizzled SMEM, but the MMA is `tcgen05.mma`, issued by a single thread, with the
# accumulator in TMEM instead of registers (notebook 03b), read out by the epilogue with `tcgen05.ld`
# (notebook 04) before the same SMEM and TMA-store path (notebook 05). With the accumulator out of the
# registers, the questions this notebook asked on Hopper (how many CTAs fit, who issues the loads, how
# long the epilogue keeps the math waiting) get different answers, measured the same way.
#
# Its six steps, each adding one mechanism (the header of each file says why it should help):

# %%
import textwrap
for st in gemm.STEPS_SM100:
    print(f"{st['name']:<16s} tile {st['tile'][0]:>3d} x {st['tile'][1]:<3d} {st['threads']:>3d} threads"
          f"  cluster {st['cluster']}  SMEM {st['smem_bytes'] // 1024:>3d} KiB  {st['epilogue']}")
    print(textwrap.fill(st["what_changed"], width=100, initial_indent="    ", subsequent_indent="    "))

# %% [markdown]
# No GPU here or on a Hopper can run `tcgen05`: the six kernels are compiled for sm_100a (ptxas checks
# every instruction), and step 1 runs in the NumPy model — the TMA model fills SMEM from the same tensor
# maps, the UMMA model executes each `tcgen05.mma` from the very descriptor and instruction-descriptor
# bits the kernel declares (read from its source), and the TMEM model reads the accumulator back the way
# its `tcgen05.ld.32x32b` does. The operands are multiples of 1/8, so every sum is exact in f32 and the
# model must equal A·Bᵀ bit for bit:

# %%
from bwlab.compile import compile_cuda
for st in gemm.STEPS_SM100:
    compiled = compile_cuda(st["file"], arch="sm_100a")
    print(f"{st['name']:<16s} compiles for sm_100a: {compiled.ptx.count('tcgen05.mma')} tcgen05.mma in its PTX")
A, B = gemm.example_inputs(128, 256, 192, seed=1)
step1 = gemm.model_step1(A, B)
print(f"\nstep 1, 128 x 256 x 192, model tier: {step1.loads} TMA loads, {step1.mmas} tcgen05.mma")
print(step1.check())

# %% [markdown]
# The same step with one wrong bit: the instruction descriptor's N field (bits 17–22 hold N / 8) says 128
# instead of 256, so each `tcgen05.mma` writes only half the accumulator's columns. The check names the
# first element that differs, its TMEM lane and column, and the register of the `tcgen05.ld` that read it:

# %%
k1 = gemm.kernel_constants(1)
wrong = (k1["IDESC"] & ~(0x3F << 17)) | ((128 // 8) << 17)
print(gemm.model_step1(A, B, idesc=wrong).check())

# %% [markdown]
# ### The twin, run: every step's own kernel in the PTX emulator
#
# Without a Blackwell GPU, bwlab's PTX emulator executes each step's sm_100a PTX instruction by instruction:
# the TMA loads, the single thread issuing `tcgen05.mma` into TMEM (the emulator's Tensor Memory, on the
# allocator's rules), `tcgen05.commit` to the mbarriers, the epilogue's `tcgen05.ld`, and it checks the
# tcgen05 protocol on every run (TMEM freed before exit, lane quarters, fences). Its results are the
# emulator's, labelled so: no Blackwell GPU has run these kernels here, and Blackwell's rounding of the
# accumulation is bwlab's model (the operands are multiples of 1/8: every sum is exact either way).

# %%
import numpy as np
A2, B2 = gemm.example_inputs(256, 512, 192, seed=1)
want = gemm.reference_bf16(A2, B2)       # A·Bᵀ, bf16 bits
twin = {}
for st in gemm.STEPS_SM100:
    c, run, stamps = gemm.run_sm100_emulated(st["step"], A2, B2, stamps=True)
    twin[st["name"]] = stamps
    exact = np.array_equal(c, want)
    print(f"{st['name']:<16s} emulated: C == A·Bᵀ bit for bit: {exact} (expected True); "
          f"{run.steps} warp-instructions, no protocol error, warnings: {len(run.warnings)}")

# %% [markdown]
# Each kernel stamps the emulator's virtual `%globaltimer` for CTA 0's warp roles, as it does on a GPU
# (the `stamps` of `cuda_src/gemm_sm100/ladder.cuh`). Virtual time orders the events; it does not
# measure them. Step 1 serialises load and MMA (one buffer); step 3's producer runs ahead of the MMA
# issuer through the ring; step 4's persistent CTA walks two tiles, and the epilogue of tile 0 drains one
# TMEM accumulator while the MMAs of tile 1 fill the other — the Hopper ladder's steps 1, 3 and 4, with the
# accumulator out of the registers (their timelines, measured on an H100, are in section 4: there the
# consumer warpgroups hold the accumulator and write C themselves after the last k-slice).

# %%
gemm.plot_sm100_timelines({k: twin[k] for k in ("s1_one_stage", "s3_warp_roles", "s4_persistent")},
                          title="Blackwell ladder, 256 x 512 x 192, in the PTX emulator: CTA 0 per warp role")
plt.show()

# %% [markdown]
# ### The twin's speed: predicted, not measured
#
# The timing model of section 2 also describes a B200 (`bwlab/timing/machines/b200.py`) and replays
# the emulated sm_100a kernels on it; no B200 ran them. Many B200 numbers are unpublished, so each
# prediction is a range (the uncertain ones, the L2 bandwidth above all, at their fast and slow ends).
# Below: three published ladders, measured by their authors on B200s, each step beside the bwlab step
# it resembles, as fractions of that source's own cuBLAS. The table is read from
# `docs/results/timing_b200.txt` (`python -m bwlab.timing blackwell` takes minutes).

# %%
from bwlab.timing import blackwell
print(blackwell.committed_summary())

# %% [markdown]
# bwlab's steps 1–5 write C from registers, one row per thread (32 memory sectors per store); the model
# finds those stores the bound of steps 2–4, which stay far below the published steps. With the
# TMA-store epilogue, step 6 is predicted at about 0.8 of two sources' cuBLAS (0.6 of Modular's faster
# one), a range that reaches 1.1.

# %% [markdown]
# ### The same step in Gluon and in CuTe DSL
#
# Step 1 of the Blackwell ladder, written in **Gluon** (`triton.experimental.gluon`, from the `triton`
# package: `bwlab/bridge/gluon_gemm_s1.py`) beside `s1_one_stage.cu`. Gluon names the same steps — tensor
# descriptors for TMA, `mbarrier.expect` / `wait`, `allocate_tensor_memory`, `tcgen05_mma`, `tcgen05_commit`, a
# TMEM load — and compiles for sm_100a without a GPU, so both kernels' PTX can be set side by side.

# %%
from bwlab import bridge
bridge.side_by_side("gemm_s1")

# %% tags=["nbval-ignore-output"]
gluon_s1 = bridge.practitioner_ptx("gemm_s1")   # compiled here with triton installed, else the recording
print(gluon_s1.describe())

# %% [markdown]
# The TMA loads as each compiler wrote them. Gluon takes coordinates outermost first (`[m0, kb * BK]`);
# the PTX instruction takes them innermost first, `{k, row}`, which is the order `tma_load_2d(..., kb * BK,
# m0)` passes them in bwlab:

# %%
from bwlab.compile import ptx_excerpt
bwlab_s1 = bridge.bwlab_ptx("gemm_s1")
print("bwlab:\n" + ptx_excerpt(bwlab_s1, patterns=("cp.async.bulk.tensor",)))
print("gluon:\n" + ptx_excerpt(gluon_s1.ptx, patterns=("cp.async.bulk.tensor",)))

# %% [markdown]
# The whole comparison, computed from the two PTX texts: each instruction class of the data path, its
# static count in each kernel (a loop body counts once), *same* / *other spelling* (the same instruction
# with qualifiers that name the same thing) / only in one, and the bwlab wrapper whose inline PTX it is.
# Under it, the `tcgen05.mma` operands followed back to the constants they were built from and decoded
# with `bwlab.umma` (*runtime*: the tile's SMEM address, known only to the running CTA).

# %%
from bwlab.umma import make_instr_desc
s1_cmp = bridge.compare_ptx(bwlab_s1, gluon_s1.ptx, names=("bwlab", "gluon"))
fold(s1_cmp.table() + "\n\n" + s1_cmp.descriptor_table(), summary="the rest of the table, then the descriptors")
idesc_row = next(r for r in s1_cmp.descriptor_rows() if r[0] == "idesc value")
print(f"\nidesc: bwlab {idesc_row[1]}, gluon {idesc_row[2]}; "
      f"make_instr_desc('bf16', 'bf16', 'f32', 128, 256) = {make_instr_desc('bf16', 'bf16', 'f32', 128, 256):#010x}"
      "   (expected: all three equal)")

# %% [markdown]
# What to notice:
#
# * **The K loop is the same handshake**: `mbarrier.arrive.expect_tx` for both boxes, two TMA loads on that
#   barrier, `mbarrier.try_wait.parity` on `full`, four `tcgen05.mma.cta_group::1.kind::f16`, `tcgen05.commit`
#   to `mma_done`, a wait on it before the next loads overwrite the stage. Both flip the parity every slice
#   (`kb & 1` in bwlab, `phase ^= 1` in Gluon), and Gluon's `use_acc=kb > 0` is bwlab's
#   `(kb | k) != 0`: the predicate that makes the tile's first MMA overwrite D.
# * **The same operands**: one instruction descriptor (BF16 × BF16 → F32, M = 128, N = 256, both K-major),
#   SMEM descriptors with the same SBO and 128B swizzle, and a start address that moves the same bytes per
#   MMA along the 128-byte swizzle row. Only LBO differs, a field a K-major SW128 operand does not use.
# * **The same epilogue**: `tcgen05.ld.sync.aligned.32x32b.x32` (thread t ← TMEM lane t), `cvt.rn.bf16x2.f32`
#   on pairs and 16-byte `st.global.v4` stores of each thread's row. Gluon unrolls the eight 32-column
#   slices (its static counts are eight times one slice); bwlab keeps the loop (`#pragma unroll 1`). The
#   `signature()` beside the Gluon kernel tells the compiler that C's pointer and N are multiples of 16,
#   as a launch with such tensors would: that is what allows the 16-byte stores.
# * **What only bwlab has**: the `stamps` of the timeline (`st.global.u64`), the bounded waits, the third
#   barrier `drained` with its own `tcgen05.commit` before TMEM is freed, `__syncthreads_and` so the CTA
#   agrees on the outcome, and the `tcgen05.fence::before_thread_sync` / `after_thread_sync` pairs around
#   the CTA barriers; the Gluon PTX of this step has no tcgen05 fence.

# %% [markdown]
# The same step once more, in **CuTe DSL** (`nvidia-cutlass-dsl`, `cutlass.cute`:
# `bwlab/bridge/cute_gemm_s1.py`). Here the kernel is described with CuTe's layouts and atoms: a tiled MMA
# built from one `tcgen05.mma` shape (128 × 256 × 16, both operands K-major), SMEM layouts derived from it,
# TMA atoms derived from those, a TMEM copy atom for the epilogue; `cute.copy` and `cute.gemm` issue the
# instructions. It also compiles for sm_100a without a GPU, in an interpreter started with
# `CUTE_DSL_ARCH=sm_100a` (fake tensors stand in for A, B and C).

# %%
bridge.side_by_side("gemm_s1", "cute")

# %% tags=["nbval-ignore-output"]
cute_s1 = bridge.practitioner_ptx("gemm_s1", "cute")
print(cute_s1.describe())

# %%
cute_cmp = bridge.compare_ptx(bwlab_s1, cute_s1.ptx, names=("bwlab", "cute"))
fold(cute_cmp.table() + "\n\n" + cute_cmp.descriptor_table(), summary="the rest of the table, then the descriptors")
steps = cute_cmp.start_steps("A")
print(f"\nsteps of A's start address from one MMA to the next (bytes): bwlab {steps[0]}, cute {steps[1]}")

# %% [markdown]
# What to notice:
#
# * **The same instructions, spelt out further.** CuTe writes the defaults bwlab leaves implicit: `.tile`
#   (the TMA load's mode), `.collector::a::discard` (what `tcgen05.mma` does with A's collector buffer), a
#   cache-policy operand (`.L2::cache_hint`), and `.shared` where bwlab writes `.shared::cta`. The last
#   column still finds bwlab's wrapper for each.
# * **Unrolled.** The static counts of the loads, the waits and the MMAs are several times bwlab's: CuTe's
#   compiler unrolled the K loop, and between two k-blocks the unrolled code steps the SMEM descriptors
#   back to the start of the stage.
# * **The instruction descriptor is chosen at run time** among constants that differ only in bits 13 and 14
#   (negate A, negate B): CuTe's tiled MMA carries them as fields that can change while the kernel runs,
#   like `ACCUMULATE`. Every other field is bwlab's. The SMEM descriptors match field for field, LBO
#   included: bwlab encodes the unused LBO as CuTe does.
# * **The same protocol.** `tcgen05.fence::before_thread_sync` / `after_thread_sync` around each CTA barrier
#   (CuTe DSL 4.8.1 exposes them in `cutlass.experimental.primitives`) and `tcgen05.wait::ld` after each TMEM
#   load (`cute.arch.fence_view_async_tmem_load`) are in both. CuTe elects one thread for each TMA copy and
#   MMA it issues (the `elect.sync` count).

# %% [markdown]
# On a B200 (sm_100), `python -m bwlab.bench gemm` measures this ladder instead of the Hopper one, with
# the same checks and the same interleaved timing; `sm100.run_sm100(step, A, B)` runs one step.
