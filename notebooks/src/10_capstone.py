# %% [markdown]
# # 10 · The capstone: write the pipeline of a persistent, warp-specialised GEMM
#
# You have taken every piece of a fast GEMM apart: TMA loads and the mbarrier handshake (01), the
# tensor-core instructions (03), TMEM (04), one tile's whole trip (06), and the ladder's kernels that
# put them together (07). Now you write the part that makes the pieces meet: **the pipeline**.
#
# Two kernels in `cuda_src/capstone/`, each a complete GEMM (C = A·Bᵀ, bf16 in, f32 accumulation, bf16
# out) with every line given but the waits, arrivals, `expect_tx`, commits and fences:
#
# * `hopper_ws.cu` — a TMA producer thread, a ring of four SMEM stages with `full` / `empty` mbarriers,
#   two consumer warpgroups computing with `wgmma`, persistent CTAs walking the tiles;
# * `blackwell_ws.cu` — its twin on `tcgen05`: a TMA warp, an MMA warp that releases stages with
#   `tcgen05.commit`, four epilogue warps reading TMEM, and two accumulators handed back and forth
#   through `tmem_full` / `tmem_empty`.
#
# Each `// TODO(name)` region is one exercise's answer: a few C++ statements, written as a string on
# one line (no line break, `#` or `\`: the grader compiles text answers only in that form).
# The check puts them into the kernel, compiles it and runs it in bwlab's **strict PTX emulator**,
# which names the rule your code breaks (a wait that passes before its phase, a missing fence, a
# hang) instead of a GPU's silent wrong answer or fault.
#
# **Before this one:** 01 (mbarrier phases, `expect_tx`), 04 (TMEM, `tcgen05.ld`), 06 (the
# `tcgen05` fences) and 07 (steps 3 and 4 of the ladder, the kernels these skeletons come from).
#
# **Runs on:** any machine: the first code cell says where each part runs here. The grading always
# runs in the emulator; the solved Hopper kernel's run on an H200 is shown as recorded, with its date.
#
# **Exercises:** 5 graded exercises (15 points): 10.1 the producer's acquire and 10.2 the consumers'
# wait and release (Hopper, section 2); 10.3 the SMEM ring, 10.4 the accumulator ring's waits and
# 10.5 its commit and fences (Blackwell, section 4).

# %% tags=["nbval-ignore-output"]
import bwlab
bwlab.banner()
from bwlab import capstone as cap
print(cap.where_it_runs())

# %%
from bwlab.capstone import exercises as cap_ex
from bwlab.lab import TeachingKernel
print(cap.todo_table())

# %% [markdown]
# ## 1. The Hopper skeleton, and how a fill is graded
#
# Read the whole kernel first (the rest is folded: open it). The producer thread counts every k-slice
# it loads over all the tiles of its walk in `it`; slice `it` goes into stage `s = it % STAGES`, as
# that stage's fill number `it / STAGES`. The consumers count the same way. Each barrier's comment in
# the file header says what completes one of its phases.

# %%
TeachingKernel("capstone/hopper_ws.cu").show(head=36)

# %% [markdown]
# An exercise gives the learner's fills of its own regions; every other region gets the lines the
# ladder's step 4 has there, so each exercise is graded on its own. The check compiles the kernel
# (sm_90a or sm_100a, NVRTC) and runs it in the emulator on a problem where every stage of the ring
# is filled again and again (a parity wait that is wrong on the second pass fails there), then
# compares C with the f32 GEMM. The graded version adds other shapes and scheduler seeds.

# %%
for kernel, (M, N, K, sms, seed) in cap_ex.SHOWN.items():
    print(cap.ring_uses(kernel, M, N, K, sms))

# %% [markdown]
# What a miss looks like: here both regions of exercise 10.5 are left empty. The first line is what
# the emulator found (its name for it), then what your text shows, a hint, and where it broke, in
# the lines of your fills:

# %%
try:
    cap_ex.check_acc_handoff("", "")
except AssertionError as e:
    print("\n".join(str(e).splitlines()[:4]))

# %% [markdown]
# ## 2. The Hopper pipeline
#
# Two exercises, one per side of the ring: the producer thread's, then the consumer warpgroups'.

# %% [markdown]
# ### Exercise 10.1 — the producer's acquire (3 points)
#
# Write `producer_acquire`: before the two TMA loads into stage `s`, wait until the consumers have
# released what the stage held before (`mbarrier_wait(bar, parity, BAR_EMPTY, 0)`, which returns false
# when it gives up: then `return`), and announce on `full[s]` the bytes the loads will bring
# (`mbarrier_arrive_expect_tx(bar, bytes)`). Mind the first pass over the ring, where nothing has been
# released yet.

# %% nbgrader={"grade": false, "grade_id": "cap_producer", "locked": false, "schema_version": 3, "solution": true}
producer_acquire = None   # C++ statements on one line, as a string
### BEGIN SOLUTION
producer_acquire = ("if (it >= STAGES && !mbarrier_wait(&empty[s], (it / STAGES + 1) & 1, BAR_EMPTY, 0)) return; "
                    "mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "cap_producer_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.capstone import exercises as cap_ex
cap_ex.check_producer(producer_acquire)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
cap_ex.check_producer(producer_acquire, hidden=hidden_cases("cap_producer"))
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 10.2 — the consumers' wait and release (3 points)
#
# Write `consumer_wait` (before the wgmma of slice `it`: wait until this fill of stage `s` has landed;
# `mbarrier_wait(bar, parity, BAR_FULL, STAGE_BYTES)`) and `consumer_release` (after
# `wgmma_wait_group<1>()` only the newest wgmma may still run: release the stage of slice `it - 1`).
# `empty[s]` was initialised for `CONSUMERS * 4` arrivals. The same `consumer_release` also goes after
# the tile's last `wgmma_wait_group<0>()`.

# %% nbgrader={"grade": false, "grade_id": "cap_consumer", "locked": false, "schema_version": 3, "solution": true}
consumer_wait = None      # C++ statements on one line, as a string
consumer_release = None   # C++ statements on one line, as a string
### BEGIN SOLUTION
consumer_wait = "if (!mbarrier_wait(&full[s], (it / STAGES) & 1, BAR_FULL, STAGE_BYTES)) return;"
consumer_release = "if (laneid() == 0) mbarrier_arrive(&empty[(it - 1) % STAGES]);"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "cap_consumer_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.capstone import exercises as cap_ex
cap_ex.check_consumer(consumer_wait, consumer_release)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
cap_ex.check_consumer(consumer_wait, consumer_release, hidden=hidden_cases("cap_consumer"))
### END HIDDEN TESTS

# %% [markdown]
# Now the whole Hopper pipeline is yours: your three fills together, nothing of the ladder's (ungraded).

# %%
mine = {"producer_acquire": producer_acquire, "consumer_wait": consumer_wait, "consumer_release": consumer_release}
print(cap.try_kernel("hopper", mine))

# %% [markdown]
# How fast would it be? The timing model (`bwlab.timing`, notebook 07) replays the emulator's run of your
# kernel on an H100's machine description and scales one SM's tiles up to a full 8192³ GEMM: a
# prediction, the same on every computer. A pipeline that waits too long or releases too late shows up
# here as a slower time than the ladder's step 4, whose ring yours rebuilds. The model runs it at the
# H100's highest SM clock; under the power cap a GPU holds a lower one at this shape (notebook 08's
# clock log), so compare the prediction with step 4's prediction, not with a measured time.

# %%
print(cap.predicted_speed("hopper", mine))

# %% [markdown]
# Rather write the kernel whole? `%load_ext bwlab.lab`, then `%cuda --load capstone/hopper_ws.cu`
# gives a `%%cuda` cell holding the skeleton; fill the TODOs in place and run the cell: once it
# compiles, `cap.try_kernel("hopper")` runs your version (`%cuda --reset capstone/hopper_ws.cu` undoes it).
#
# ## 3. On an H200
#
# The solved Hopper kernel, run once on an H200 at three shapes and compared with cuBLAS's f32 GEMM of
# the same bf16 operands (`cupy.matmul`), and at the graded shape compared with the emulator's C. The
# file's first line says where and when; its last line the command. How fast a pipeline like this
# one runs on the GPU is what notebook 07 measured on an H100 (its steps 3 and 4).

# %%
from bwlab.results import show_report
show_report("capstone_h200.txt")

# %% [markdown]
# ## 4. The Blackwell twin
#
# The same ring on `tcgen05`, with one more ring behind it: the accumulators. The MMA warp issues
# `tcgen05.mma`, which runs asynchronously, so the issuing thread's program order says nothing about
# when an MMA has read its SMEM stage or written TMEM: **`tcgen05.commit`** arrives on an mbarrier
# once every MMA issued before it has completed. Tile `acc` accumulates into TMEM buffer `acc % 2`
# while the epilogue warps read the other one out; `acc_phase` is the parity of the buffer's current
# use, as `phase` is of a stage's. Between an mbarrier handshake and the `tcgen05` work it orders, each
# side fences (notebook 06): `tcgen05.fence::before_thread_sync` in the thread that arrives,
# `::after_thread_sync` in the one that waits. An arrival made by `tcgen05.commit` needs no fence
# before it: the commit itself tracks the MMAs it follows.

# %%
TeachingKernel("capstone/blackwell_ws.cu").show(head=30)

# %% [markdown]
# ### Exercise 10.3 — the SMEM ring on Blackwell (3 points)
#
# Three regions: `tma_acquire` (the TMA warp: wait until the MMAs of the stage's previous fill have
# completed, `wait(bar, parity, BAR_EMPTY, 0, error)`, which returns false when it gives up: then
# `ok = false` and `break`; then announce the stage's bytes), `mma_wait_full` (the MMA warp: wait for
# this fill, `BAR_FULL` and `STAGE_BYTES`) and `mma_release_stage` (release the stage once the MMAs
# just issued have read it).

# %% nbgrader={"grade": false, "grade_id": "cap_bw_ring", "locked": false, "schema_version": 3, "solution": true}
tma_acquire = None         # C++ statements on one line, as a string
mma_wait_full = None
mma_release_stage = None
### BEGIN SOLUTION
tma_acquire = ("if (!(ok = wait(&empty[s], phase ^ 1, BAR_EMPTY, 0, error))) break; "
               "mbarrier_arrive_expect_tx(&full[s], STAGE_BYTES);")
mma_wait_full = "if (!(ok = wait(&full[s], phase, BAR_FULL, STAGE_BYTES, error))) break;"
mma_release_stage = "tcgen05_commit(&empty[s]);"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "cap_bw_ring_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.capstone import exercises as cap_ex
cap_ex.check_bw_ring(tma_acquire, mma_wait_full, mma_release_stage)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
cap_ex.check_bw_ring(tma_acquire, mma_wait_full, mma_release_stage, hidden=hidden_cases("cap_bw_ring"))
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 10.4 — the accumulator ring's waits (3 points)
#
# `mma_acc_acquire`: the MMA warp, before accumulating tile `acc` into buffer `buf`, waits until the
# epilogue has read out what the buffer held (`BAR_TMEM_EMPTY`), then fences so the MMAs come after
# that wait. `epi_acc_wait`: each epilogue warp waits until buffer `buf` holds this tile
# (`BAR_TMEM_FULL`), then fences so its `tcgen05.ld` comes after. Waits that give up: `ok = false`, `break`.

# %% nbgrader={"grade": false, "grade_id": "cap_acc_phases", "locked": false, "schema_version": 3, "solution": true}
mma_acc_acquire = None     # C++ statements on one line, as a string
epi_acc_wait = None
### BEGIN SOLUTION
mma_acc_acquire = ("if (!(ok = wait(&tmem_empty[buf], acc_phase ^ 1, BAR_TMEM_EMPTY, 0, error))) break; "
                   "tcgen05_fence_after_thread_sync();")
epi_acc_wait = ("if (!(ok = wait(&tmem_full[buf], acc_phase, BAR_TMEM_FULL, 0, error))) break; "
                "tcgen05_fence_after_thread_sync();")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "cap_acc_phases_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.capstone import exercises as cap_ex
cap_ex.check_acc_phases(mma_acc_acquire, epi_acc_wait)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
cap_ex.check_acc_phases(mma_acc_acquire, epi_acc_wait, hidden=hidden_cases("cap_acc_phases"))
### END HIDDEN TESTS

# %% [markdown]
# ### Exercise 10.5 — the accumulator's commit and fences (3 points)
#
# `mma_acc_commit`: once a tile's last MMAs are issued (and `ok`), tell the epilogue that buffer `buf`
# will hold the finished tile. `epi_acc_release`: each epilogue warp, after its last `tcgen05.ld` of
# the tile has completed, hands the buffer back, one arrival per warp (`tmem_empty` counts 4), its
# TMEM reads ordered before that arrival.

# %% nbgrader={"grade": false, "grade_id": "cap_acc_handoff", "locked": false, "schema_version": 3, "solution": true}
mma_acc_commit = None      # C++ statements on one line, as a string
epi_acc_release = None
### BEGIN SOLUTION
mma_acc_commit = "if (ok) tcgen05_commit(&tmem_full[buf]);"
epi_acc_release = "tcgen05_fence_before_thread_sync(); __syncwarp(); if (lane == 0) mbarrier_arrive(&tmem_empty[buf]);"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "cap_acc_handoff_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.capstone import exercises as cap_ex
cap_ex.check_acc_handoff(mma_acc_commit, epi_acc_release)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
cap_ex.check_acc_handoff(mma_acc_commit, epi_acc_release, hidden=hidden_cases("cap_acc_handoff"))
### END HIDDEN TESTS

# %% [markdown]
# And the whole Blackwell pipeline, all seven fills yours (ungraded; `%%cuda capstone/blackwell_ws.cu`
# works as for Hopper):

# %%
mine = {"tma_acquire": tma_acquire, "mma_wait_full": mma_wait_full, "mma_release_stage": mma_release_stage,
        "mma_acc_acquire": mma_acc_acquire, "epi_acc_wait": epi_acc_wait, "mma_acc_commit": mma_acc_commit,
        "epi_acc_release": epi_acc_release}
print(cap.try_kernel("blackwell", mine))

# %% [markdown]
# ## Peek under the hood: the PTX
#
# The skeleton as given, compiled for sm_100a: the synchronisation it already has (barrier set-up, the
# teardown's fences, the last commit) and the asynchronous work your fills order. Your fills add
# `mbarrier.try_wait.parity`, `mbarrier.arrive`, `expect_tx`, more `tcgen05.commit` and `tcgen05.fence`
# lines to this list.

# %%
from bwlab.compile import compile_cuda
bw = compile_cuda("capstone/blackwell_ws.cu", arch="sm_100a")
print(bw.ptx_excerpt("gemm", patterns=("mbarrier", "cp.async.bulk", "tcgen05", "bar.sync"), first_only=True,
                     width=110))
