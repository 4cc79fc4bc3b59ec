# %% [markdown]
# # 06 · The whole trip: GMEM → SMEM → TMEM → registers → SMEM → GMEM
#
# Notebooks 01–05 each showed one hop. Here they run end to end as one GEMM, D = A·Bᵀ with A and B
# 128 × 64 in f16 and D 128 × 128 in f32, one CTA of four warps, and after every hop we stop and look at
# where the data is:
#
# | hop | instruction | where the data is afterwards | notebook |
# |---|---|---|---|
# | TMA load | `cp.async.bulk.tensor.2d … mbarrier::complete_tx::bytes` | SMEM, 128B swizzle | 01 |
# | MMA | 4 × `tcgen05.mma.cta_group::1.kind::f16` (K = 16 each) | TMEM | 03 |
# | commit | `tcgen05.commit … mbarrier::arrive::one`, then the wait | TMEM, complete | 03 |
# | TMEM load | 4 × `tcgen05.ld.sync.aligned.32x32b.x32.b32` per warp | registers | 04 |
# | st.shared | `st.shared.v4.b32` | SMEM D tile, 128B swizzle | 05 |
# | fence | `fence.proxy.async.shared::cta` + barrier | SMEM, visible to the TMA engine | 05 |
# | TMA store | 4 × `cp.async.bulk.tensor.2d.global.shared::cta` | GMEM | 05 |
#
# **Before this notebook:** 01 (TMA load, swizzle, mbarrier), 02 (multicast: used in the scaled-up part),
# 03 (UMMA descriptors), 04 (TMEM and `tcgen05.ld`), 05 (the epilogue).
#
# **Runs on:** the next cell says what runs the trip here. On an sm_100 GPU `cuda_src/full_flow_sm100.cu`
# runs the whole trip; on a Hopper the TMA load, `st.shared`, fence and TMA store are real and the `tcgen05`
# hops are bwlab's model fed with the bytes the GPU loaded; without a GPU bwlab's PTX emulator runs
# `full_flow_sm100.cu` itself. Whatever runs it, you get the same `Trace` object back.
#
# **Exercises:** this notebook holds 5 graded exercises (12 points), each right after the section it builds
# on: 6.1 the bytes of every hop (section 1), 6.2 an edit of the kernel's K loop, run, and 6.3 the MMA
# instructions of a tile (section 4), 6.4 the ordering points that hold the trip together (section 5),
# 6.5 L2 traffic with and without multicast (section 6).

# %% tags=["nbval-ignore-output"]
import bwlab
bwlab.banner()
bwlab.device.where("umma", print_it=True);   # the trip runs where its tcgen05 stage does

# %%
import numpy as np
import matplotlib.pyplot as plt
from bwlab import flow as F
from bwlab.lab import fold     # a long output: its head, the rest folded
from bwlab.flow import Flow, plot_hop

flow = Flow(seed=0)
p = flow.problem
a, b = p.values()
print("A", a.shape, "B", b.shape, "values: multiples of 1/4 in [-2, 2] -> every sum of products is exact in f32")
print(f"A[0, :6] = {a[0, :6]}")

# %% [markdown]
# ## 1. The whole trip in one call
#
# `flow.trace(tier)` runs every hop and returns a `Trace`: after each hop, the bytes where the data now
# lives. `flow.trace("model")` applies each stage's own model to the previous hop's bytes
# (`bwlab.tma.tma_load_model` → `bwlab.umma.tcgen05_mma` → `bwlab.tmem.tcgen05_ld` → the st.shared
# plan of `bwlab.epilogue` → `bwlab.epilogue.tma_store_model`). Beside each hop's byte count: the count
# expected and where it comes from. The store's 66048 bytes are D (65536) plus a **guard row** of 512 bytes
# that follows D in GMEM: the store must leave it alone, and the trace keeps it so that the check can prove
# it did.

# %%
t = flow.trace("model")
print(t.table())

# %% [markdown]
# The result against plain NumPy (`A @ B.T` in float32): equal bit for bit, because the inputs are exact.

# %%
d = t.result
print("D == A @ B.T:", np.array_equal(d, flow.reference()), "  (expected True)")
print("D[0, :4] =", d[0, :4], "   NumPy:", (a @ b.T)[0, :4])


# %% [markdown]
# ### Exercise 6.1 — the bytes of every hop, for any tile (2 points)
# The table counts the bytes of this one tile. Write `hop_bytes(m, n, k, ab, d)` that gives them for any tile
# one CTA runs the same way: A (m × k) and B (n × k) of type `ab` (`'f16'`, `'bf16'`, `'tf32'` or `'e4m3'`),
# loaded K-major in 128B-swizzled TMA boxes; the accumulator in f32 in TMEM; D stored to GMEM as `d`
# (`'f32'`, `'f16'` or `'bf16'`, converted in registers after `tcgen05.ld`). Return a dict of bytes:
#
# * `'tma_load'` — what the TMA writes into SMEM (GMEM → SMEM; the load barrier's expect_tx);
# * `'mma'` — what the K loop's `tcgen05.mma` read from SMEM through their descriptors (SMEM → TMEM);
# * `'tmem_ld'` — what `tcgen05.ld` moves from TMEM into registers;
# * `'tma_store'` — what the epilogue writes, registers → SMEM (`st.shared`), then SMEM → GMEM (TMA store).
#
# Predict before you write it: which of the four depend on `ab`, which on `d`, and which on neither? The
# check calls your function on this tile and one more; the grader on other shapes and types.

# %% nbgrader={"grade": false, "grade_id": "flow_hop_bytes", "locked": false, "schema_version": 3, "solution": true}
def hop_bytes(m, n, k, ab="f16", d="f32"):
    """Bytes each hop moves for one m x n x k tile: {'tma_load': ..., 'mma': ..., 'tmem_ld': ..., 'tma_store': ...}."""
    ### BEGIN SOLUTION
    size = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1, "f32": 4}
    operands = (m + n) * k * size[ab]        # A and B, every element once
    return {"tma_load": operands,            # the boxes' transaction bytes
            "mma": operands,                 # each K slice of A and B is read by exactly one MMA
            "tmem_ld": m * n * 4,            # one 32-bit TMEM cell per f32 accumulator element
            "tma_store": m * n * size[d]}    # converted to d in registers: st.shared, then the TMA store
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "flow_hop_bytes_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.flow import exercises as ex
ex.check_hop_bytes(hop_bytes)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_hop_bytes(hop_bytes, hidden=hidden_cases("flow_hop_bytes"))
### END HIDDEN TESTS

# %% [markdown]
# ## 2. Hop by hop
#
# We follow **row 37**: row 37 of A on the way in, row 37 of D on the way out. Every picture colours the
# 16-byte pieces of that row the same way (piece *q* of a 128-byte row, as notebook 03a colours K chunks,
# with *q* written in the chunk where there is room); everything else is faded.
#
# ### Hop 0 → 1: the TMA load
# One elected thread announces 32768 bytes on the mbarrier `full` (`arrive.expect_tx`) and issues two TMA
# loads, one box of 64 × 128 f16 per operand. Each 128-byte row of A is one line of SMEM, and the 128B
# swizzle moves 16-byte piece *q* of row *r* to chunk *q ⊕ (r mod 8)*: within a group of eight lines
# every piece sits in a different bank group.

# %%
plt.close("all")
plot_hop(t, "tma_load", row=37)
plt.show()

# %% [markdown]
# That image **is** the K-major SW128 canonical layout `tcgen05.mma` reads (notebook 03a): the SMEM bytes
# equal those of `UmmaCase('f16', 'f32', 128, 128, 64)`'s operand image, built independently.

# %%
img = p.umma_case.smem_image()
print("SMEM A == canonical layout:", np.array_equal(img[:16384], t.arrays["smem_a"]), "  (expected True)")
print("SMEM B == canonical layout:", np.array_equal(img[16384:32768], t.arrays["smem_b"]), "  (expected True)")

# %% [markdown]
# ### Hop 1 → 2 → 3: the MMA and its commit
# One thread issues four `tcgen05.mma`, each reading one instruction-K slice of every row through an SMEM
# descriptor whose start address moves along K from one instruction to the next (by how many bytes is
# Exercise 6.2's question), and `tcgen05.commit` to the mbarrier `mma_done`.
# D lands in TMEM: lane *m*, column *n* (layout D of the PTX ISA for M = 128), in the 128 columns that
# `tcgen05.alloc` took of the SM's 512. Until the commit's phase completes, nobody may read it. The picture
# shows the whole TMEM and which lane quarter each warp may reach.

# %%
ad, bd = p.descriptors()[0]
print(f"K block 0: a_desc 0x{ad:016x}  b_desc 0x{bd:016x}   (blocks 1..3 differ in the start address only)")
print(f"idesc 0x{p.idesc:08x}   (expected 0x08200010: D f32, A/B f16, K-major, N=128, M=128)")
plot_hop(t, "commit", row=37)
plt.show()
print("TMEM == UmmaCase model:", np.array_equal(t.arrays["tmem"], p.umma_case.model()), "  (expected True)")

# %% [markdown]
# ### Hop 3 → 4: `tcgen05.ld`
# Each warp may touch only its lane quarter. With `.32x32b`, thread *t* of warp *w* reads lane 32·w + t,
# one column per register: four `.x32` loads per warp give every thread its whole row of D in 128 registers.
# The picture zooms on the warp that holds row 37 (warp 1): its 32 threads, their 128 registers.

# %%
plot_hop(t, "tmem_ld", row=37)
plt.show()
print("thread 37 registers 0..3:", t.arrays["regs"][37, :4].view(np.float32), "  D[37, :4]:", d[37, :4])

# %% [markdown]
# ### Hop 4 → 5 → 6: `st.shared`, then the proxy fence
# Thread *m* writes its row 16 bytes at a time into the D tile: four boxes of 128 × 32 f32, each row 128
# bytes, swizzled like the loads. Then `fence.proxy.async.shared::cta` in every writer and a barrier, so
# the TMA engine (async proxy) sees what the threads (generic proxy) wrote.

# %%
plot_hop(t, "st_shared", row=37)
plt.show()

# %% [markdown]
# ### Hop 6 → 7: the TMA store
# One thread stores the four boxes; the TMA engine un-swizzles them into row-major D.

# %%
plot_hop(t, "tma_store", row=37)
plt.show()

# %% [markdown]
# One element, D[37][70], followed through every hop: the first two lines say where the rows it is made of
# sit (A row 37 and B row 70, in GMEM, then in SMEM after the load); the six after them hold the same
# 32 bits of D[37][70] (TMEM, TMEM once complete, a register, SMEM, SMEM after the fence, GMEM).

# %%
places = t.locate(37, 70)
for hop, place, raw in places:
    print(f"{hop:<10s} {place}" + ("" if raw is None else f"   bits 0x{raw:08x}"))
bits = {raw for _, _, raw in places if raw is not None}
want = np.float32(d[37, 70]).view(np.uint32)
print(f"{sum(raw is not None for *_, raw in places)} places, one value: {[hex(x) for x in bits]} = "
      f"{np.uint32(bits.pop()).view(np.float32)}   (expected 6 places, 0x{want:08x} = A[37] . B[70] = {a[37] @ b[70]})")

# %% [markdown]
# ## 3. The same trace from a GPU
#
# On a Hopper the TMA load and the epilogue run for real (`cuda_src/full_flow_sm90.cu`: `flow_load_dump`,
# `flow_store_registers`) and the `tcgen05` hops in the model, from the bytes the GPU loaded. Without a
# GPU, bwlab's PTX emulator runs `cuda_src/full_flow_sm100.cu` itself, every hop tapped (the tcgen05 hops
# executed on the emulator's TMEM and the model's MMA). Where neither runs, the cell shows what was
# recorded on a GPU and checks every hop against the model computed now. The first lines say where each
# hop's bytes came from.

# %% tags=["nbval-ignore-output"]
gpu, where = flow.result()         # run here (a GPU, or the emulator), else the GPU's recording
print(f"the {gpu.tier} tier: {where}")
for src in ("GPU", "emulator", "model"):
    hops = [h for h in F.HOP_NAMES if gpu.sources.get(h) == src]
    if hops:
        print(f"  from the {src:<8s}: " + ", ".join(hops))
print(gpu.table())
print(flow.check(gpu))
if not bwlab.device.on_gpu(flow.device_stage):   # Hopper's own kernel, as an H100 ran it
    rec = flow.recorded().recording
    native = np.asarray(rec["native_d"])[:p.M]
    print("Hopper's own TMA + wgmma kernel (full_flow_hopper), D == NumPy:",
          np.array_equal(native, flow.reference()), "  (expected True)")

# %% [markdown]
# ## 4. The kernel, and its PTX hop by hop
#
# The Blackwell kernel reads top to bottom in the order of the trip:

# %%
from bwlab.source import show_source
kernel_text = show_source("full_flow_sm100.cu", kernel="full_flow", print_it=False)
fold(kernel_text.replace(F.K_STEP_TEXT, "K_STEP * kb"), head=36)   # K_STEP: Exercise 6.2 asks for it

# %% [markdown]
# Its PTX (built here by NVRTC for sm_100a, no GPU needed), each instruction under the hop it performs.
# Waits and barriers go with the hop under way; `elect.sync` (which thread issues) with the hop it starts.
# The `tcgen05.dealloc` right after the load is the kernel's way out when the load's wait times out (the
# CTA frees its TMEM and returns); the last one is the normal teardown.

# %%
fold(F.format_ptx_by_hop(F.kernel_ptx("sm_100a"), width=100))

# %% [markdown]
# ### Exercise 6.2 — the K step of the descriptors: your value goes into the kernel (3 points)
# The MMA hop's K loop gives each `tcgen05.mma` its own pair of SMEM descriptors, and they differ in one field
# only: the start address, which moves along K by a fixed number of bytes from one instruction to the next
# (`smem_desc_k_sw128(base + SMEM_A + … * kb)`, and the same for B). Derive that number before you look it up:
# how much K one kind::f16 instruction takes, how many bytes that is, and where the next slice of a K-major
# row of 128 bytes begins. Set `k_step_bytes` to it (the listing above shows it as `K_STEP`; you give a
# number, and the check edits the kernel with it).
#
# The check puts your number into the kernel's text (`TeachingKernel("full_flow_sm100.cu").replace(...)`, and
# the same K loop of the Hopper twin `full_flow_sm90.cu`), compiles both (NVRTC, no GPU needed) and runs the
# trip with it: on a Blackwell GPU the edited `full_flow` in a worker process, every hop tapped; on a Hopper the
# edited `full_flow_hopper` (the same descriptors on `wgmma`); everywhere, the flow model executing your
# descriptors (`FlowProblem.descriptors(k_step_bytes)`). Each result is compared with the kernel as written,
# and the report names the first hop and the first element that differ. Here is what a broken step looks like:
# 0, every MMA reading the first K slice again.

# %% tags=["nbval-ignore-output"]
from bwlab.flow import exercises as ex
print(ex.try_k_step(0))

# %% nbgrader={"grade": false, "grade_id": "flow_k_step", "locked": false, "schema_version": 3, "solution": true}
k_step_bytes = None   # bytes the descriptors' start address advances per tcgen05.mma (an int)
### BEGIN SOLUTION
k_step_bytes = 16 * 2   # K = 16 f16 per instruction, 2 bytes each: the next slice of the same 128-byte row
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "flow_k_step_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["nbval-ignore-output", "raises-exception"]
from bwlab.flow import exercises as ex
ex.check_k_step(k_step_bytes)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_k_step(k_step_bytes, hidden=hidden_cases("flow_k_step"))
### END HIDDEN TESTS

# %% [markdown]
# **What tcgen05 changed.** Hopper's own path for the same GEMM (`full_flow_hopper` in
# `cuda_src/full_flow_sm90.cu`) has no TMEM: the whole warpgroup issues eight `wgmma.mma_async` (it is
# m64, so two per K step), D lives in 128 registers per thread in wgmma's fragment layout, completion is
# `wgmma.wait_group` instead of an mbarrier, and there is no `tcgen05.ld` hop. Its listing, under Hopper's
# own headings (the hop names stay, so the two listings line up):

# %%
fold(F.format_ptx_by_hop(F.kernel_ptx("sm_90a"), width=100))


# %% [markdown]
# ### Exercise 6.3 — how many MMA instructions make a tile? (2 points)
# The Blackwell listing issues 4 `tcgen05.mma` for this tile, Hopper's 8 `wgmma.mma_async`. Write
# `mma_count(m, k, ab)` that returns the pair (tcgen05.mma, wgmma.mma_async) of instructions one CTA issues for a
# tile of m rows (64 or 128) and K = k of A/B type `ab` (`'f16'`, `'bf16'`, `'tf32'` or `'e4m3'`); N is at most
# 256, so it never takes a second instruction. Predict first: does a tf32 tile of K = 32 take more
# instructions than an f16 tile of K = 64, or as many?

# %% nbgrader={"grade": false, "grade_id": "flow_mma_count", "locked": false, "schema_version": 3, "solution": true}
def mma_count(m, k, ab="f16"):
    """(tcgen05.mma, wgmma.mma_async) instructions for a tile of m rows and K = k (N <= 256)."""
    ### BEGIN SOLUTION
    elem = {"f16": 2, "bf16": 2, "tf32": 4, "e4m3": 1}[ab]
    k_steps = k * elem // 32                 # every MMA instruction reads 32 bytes of K from each row
    return k_steps, (m // 64) * k_steps      # tcgen05: all m rows at once; wgmma: 64 rows each
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "flow_mma_count_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.flow import exercises as ex
ex.check_mma_count(mma_count)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_mma_count(mma_count, hidden=hidden_cases("flow_mma_count"))
### END HIDDEN TESTS

# %% [markdown]
# ## 5. The order of events
#
# The model's timeline of one tile: which warp issues what, and the state of both mbarriers (completed
# phases, arrivals pending, transaction bytes pending) after every step that touches them, computed by
# `bwlab.hw.mbarrier.Mbarrier`. In the picture each hop has the colour of the memory it writes into, as in
# notebook 00's data path (SMEM blue, TMEM purple, registers green, GMEM brown); a hop that only completes
# or publishes what is already there (the commit, the fence) is hatched.

# %%
events = F.model_events(p)
print(F.format_events(events))

# %%
F.plot_timeline(events)
plt.show()

# %% [markdown]
# On an H100, `full_flow_hopper` stamps `%globaltimer` and `%clock64` in lane 0 of every warp at each
# event; `python -m bwlab.checks.flow` records them and writes a Chrome/Perfetto trace
# (`chrome_trace(events, segments, path=...)` of `bwlab/flow/timeline.py`; open it in ui.perfetto.dev).
# Under the model's steps, the recorded run in nanoseconds. The Hopper kernel's MMA is `wgmma`, which
# writes D straight into registers (green), and its wait is `wgmma.wait_group`. One tile alone spends
# most of its time in the epilogue: `st.shared` of the wgmma fragments and the TMA store, during which
# the tensor core idles.

# %% tags=["nbval-ignore-output"]
rec = flow.recorded().recording        # the H100's recorded run of this flow, with its stamps
segments = F.measured_segments(rec["stamps"], "ns")
print(f"{len(segments)} measured segments over 4 warps, {rec.label}")
F.plot_timeline(events, segments, rec.label)
plt.show()

# %% [markdown]
# ### Exercise 6.4 — what holds the trip together, and where a missing piece bites (3 points)
# Four points of the kernel make a hop wait for what the hop before it wrote: the wait on `full`, the wait on
# `mma_done` (armed by `tcgen05.commit`), `tcgen05.wait::ld`, and `fence.proxy.async.shared::cta` with the
# barrier after it. Leave one out and the trip races: the next hop may read its memory before the new bytes are
# there. For each, predict the **first hop of the trace that reads stale data** (a name from `F.HOP_NAMES`):
# the hop before it may have left the right bytes, but this one reads them before they are there.
# The check runs the trip without it in the model, in the race's worst case (the reader sees none of the new
# bytes), and compares it with the whole trip hop by hop.
#
# Then, for the two shared-memory hand-offs, say which proxy writes and which reads (`'generic'` or
# `'async'`): that is why only one of them needs a proxy fence.

# %% nbgrader={"grade": false, "grade_id": "flow_orderings", "locked": false, "schema_version": 3, "solution": true}
first_wrong = {"wait on full": None, "wait on mma_done": None, "tcgen05.wait::ld": None, "fence.proxy.async": None}
proxies = {"wait on full": (None, None), "fence.proxy.async": (None, None)}   # (writer's, reader's)
### BEGIN SOLUTION
first_wrong = {"wait on full": "mma", "wait on mma_done": "tmem_ld", "tcgen05.wait::ld": "st_shared",
               "fence.proxy.async": "tma_store"}
proxies = {"wait on full": ("async", "async"), "fence.proxy.async": ("generic", "async")}
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "flow_orderings_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.flow import exercises as ex
ex.check_orderings(first_wrong, proxies)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_orderings(first_wrong, proxies, hidden=hidden_cases("flow_orderings"))
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Scaled up: a grid of tiles, a multicast cluster, a CTA pair
#
# The same trip tiled over 512 × 1024 × 256 (the size CuTe's Blackwell tutorials use): 4 × 8 CTAs, one
# 128 × 128 tile of D each, K in four tiles of 64. In a **multicast cluster** the CTAs of a cluster row
# need the same A tile and those of a column the same B tile, so each issues one slice with a mask
# (notebook 02) and receives the rest from its peers. In the **2-SM** variant two CTAs along M run one
# `tcgen05.mma.cta_group::2` (M = 256): each stages half of A and half of B and keeps its 128 rows of D in
# its own TMEM.

# %%
mc = F.FlowGrid(variant="multicast", cluster=(2, 4))
F.plot_grid(mc, cta=(1, 1))
plt.show()
print(mc.describe(1, 1))
print("L2 reads per K tile (32 CTAs; one tile of A or B = 16384 bytes), from the grid's model:")
for v in ("1sm", "multicast", "2sm"):
    g = F.FlowGrid(variant=v, cluster=(2, 4))
    cm, cn = g.cluster_shape
    print(f"  {v:<9s} cluster {cm}x{cn}: {g.l2_reads_per_k_tile():8d} bytes")


# %% [markdown]
# ### Exercise 6.5 — L2 traffic with and without multicast (2 points)
# Write `l2_reads(M, N, cluster_m, cluster_n)`: the bytes the TMA engines read from L2 for one K tile (64 of f16)
# of an M × N GEMM tiled in 128 × 128 CTAs, as the pair (without multicast, with multicast in clusters of
# cluster_m CTAs along M × cluster_n along N). Predict first: for the 32 CTAs above, which cluster of eight
# saves more, 2 × 4 or 1 × 8?

# %% nbgrader={"grade": false, "grade_id": "flow_l2_reads", "locked": false, "schema_version": 3, "solution": true}
def l2_reads(M, N, cluster_m, cluster_n):
    """(without multicast, with multicast) bytes read from L2 per K tile of 64 f16, 128 x 128 tiles."""
    ### BEGIN SOLUTION
    tile = 128 * 64 * 2                      # one operand tile of one K tile
    ctas_m, ctas_n = M // 128, N // 128
    clusters = (ctas_m // cluster_m) * (ctas_n // cluster_n)
    # without: every CTA its own A and B; with: a cluster reads each of its cluster_m A and cluster_n B tiles once
    return ctas_m * ctas_n * 2 * tile, clusters * (cluster_m + cluster_n) * tile
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "flow_l2_reads_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.flow import exercises as ex
ex.check_l2_reads(l2_reads)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_l2_reads(l2_reads, hidden=hidden_cases("flow_l2_reads"))
### END HIDDEN TESTS

# %%
pair = F.FlowGrid(variant="2sm")
F.plot_grid(pair, cta=(1, 2))
plt.show()
print(pair.describe(0, 2))
print(pair.describe(1, 2))

# %% [markdown]
# Every variant computes the same D. A smaller grid keeps the model quick (each CTA's MMA is the model
# of notebook 03b run on the bytes its loads — or its peers' multicasts — left in its SMEM):

# %%
for v in ("1sm", "multicast", "2sm"):
    g = F.FlowGrid(256, 512, 128, variant=v, cluster=(2, 4))
    d_grid, _ = g.model()
    print(f"{v:<9s} D == NumPy: {np.array_equal(d_grid, g.reference())}   (expected True)")

# %% [markdown]
# ## 7. Move along the trip
#
# Pick a hop, a row and a column: the picture shows where that row is, the line under it where that
# element is and its bits. (The slider offers the hops in order; the pictures above are its stops.)

# %% tags=["nbval-ignore-output"]
try:
    F.trip_widget(t, row=37, column=70)
except ImportError:
    print("ipywidgets is not installed: the static pictures above show every stop")

# %% [markdown]
# ## 8. The same kernel in Gluon and in CuTe DSL
#
# Kernels like this one are usually written in a higher-level tool. **Gluon** (`triton.experimental.gluon`,
# the `triton` package) is Triton's layer for writing them at this level: TMA descriptors, mbarriers,
# Tensor Memory and `tcgen05_mma` are named in the source, as bwlab's wrappers name them. Below is the
# whole trip written with it (`bwlab/bridge/gluon_full_flow.py`) beside `full_flow`. Gluon compiles for
# sm_100a without a GPU (`triton.compile` with an explicit `GPUTarget("cuda", 100, 32)`), so its PTX can be
# set beside NVRTC's PTX of `full_flow_sm100.cu`, instruction class by instruction class.

# %%
from bwlab import bridge
bridge.side_by_side("full_flow", replace={F.K_STEP_TEXT: "K_STEP * kb"})

# %% [markdown]
# Where the Gluon PTX comes from: compiled here when `triton` is installed (`pip install 'bwlab[bridge]'`),
# otherwise the recording kept with bwlab, made with the version and on the date it names (no GPU took
# part in either).

# %% tags=["nbval-ignore-output"]
gluon_ff = bridge.practitioner_ptx("full_flow")
print(gluon_ff.describe())

# %% [markdown]
# The comparison below is computed from the two PTX texts: every instruction of the data path sorted into
# its class (the opcode with all its qualifiers), counted in each kernel (a static count: an instruction in
# a loop counts once, an unrolled one each time the compiler wrote it), in the order `full_flow` issues
# them. *same*: both kernels have the class; *other spelling*: the other kernel has the same instruction
# with qualifiers that name the same thing (`.shared::cta` for `.shared::cluster` on a CTA's own address,
# `.b32` for `.u32`, `barrier.sync` for `bar.sync`). The last column is the bwlab wrapper in
# `cuda_src/ptx/*.cuh` whose inline PTX is that instruction (read from the headers), or the CUDA built-in
# the compiler lowers to it; `-` where plain C++ loads or stores make it.

# %%
ff_cmp = bridge.compare_ptx(bridge.bwlab_ptx("full_flow"), gluon_ff.ptx, names=("bwlab", "gluon"))
fold(ff_cmp.table())

# %% [markdown]
# And the operands of `tcgen05.mma`: each compiler builds the instruction descriptor and the two SMEM
# descriptors right before the instruction; bwlab follows their registers back to the constants they were
# made from and decodes what is known before the kernel runs with `bwlab.umma.decode_instr_desc` /
# `decode_smem_desc` (notebook 03). The start address is the tile's place in SMEM, known only to the running
# CTA (*runtime*); how it moves from one MMA to the next is known, and so is the distance from A's tile to B's.

# %%
print(ff_cmp.descriptor_table())
mma = "tcgen05.mma.cta_group::1.kind::f16"
print(f"\n{mma}: bwlab {ff_cmp.counts(mma)[0]}, gluon {ff_cmp.counts(mma)[1]}   (expected 4 and 4: K = 64 in steps of 16)")
print("descriptor fields that differ:",
      [what for what, a, b, same in ff_cmp.descriptor_rows() if not same and (a, b) != (None, None)])

# %% [markdown]
# What to notice:
#
# * **Every hop is the same instruction.** `tcgen05.alloc` and `relinquish_alloc_permit`, `mbarrier.init`,
#   `mbarrier.arrive.expect_tx` and the TMA loads on one barrier, `mbarrier.try_wait.parity`, four
#   `tcgen05.mma.cta_group::1.kind::f16` (Gluon's `tcgen05_mma` on the K = 64 tile splits into K = 16
#   instructions, as `full_flow`'s loop does), `tcgen05.commit`, `tcgen05.ld.sync.aligned.32x32b.x32` (Gluon's
#   default register layout for a TMEM load is the 32x32b one: thread t ← lane t), 32 × `st.shared.v4.b32`
#   into the swizzled boxes, `fence.proxy.async.shared::cta`, four TMA stores and the bulk-group wait. The
#   names in the last column are the wrappers you have been reading since notebook 01.
# * **The same descriptors.** The instruction descriptor is the same 32-bit constant; the SMEM descriptors
#   agree on SBO (1024 B between 8-row groups), the version bits and the 128B swizzle, and both step the
#   start address by the same number of bytes per MMA. They differ in LBO: bwlab writes 16 B as CuTe does,
#   Gluon 0; for a K-major operand in the 128B swizzle, whose K = 16 slice lies inside one 128-byte swizzle
#   row, that field is not used (notebook 03).
# * **Who issues.** Gluon puts an `elect.sync` in front of each single-thread step (the `elect.sync` count),
#   where `full_flow` elects once per role; Gluon also places more CTA barriers (`bar.sync`) between its
#   steps.
# * **What only bwlab has**, and why: bounded waits — `mbarrier_wait` gives up after a time limit and
#   writes which barrier it was to a status record in GMEM, and `__syncthreads_or` makes the CTA agree on
#   the outcome (the `bar.red` rows); the taps that copy each hop to GMEM for the trace (with the status
#   record, the `st.global` and `ld.shared.v4` rows); and `tcgen05.fence::before_thread_sync` /
#   `after_thread_sync` around the CTA barriers that hand tcgen05 work between threads, as the PTX ISA's
#   tcgen05 memory-consistency rules describe; the Gluon PTX of this kernel holds no tcgen05 fence.
#
# Gluon leaves to its compiler what bwlab writes out — SMEM placement, which thread issues, the register
# layout of the TMEM load — and the PTX shows it chose what `full_flow` chose by hand.
#
# **CuTe DSL** (`nvidia-cutlass-dsl`, `cutlass.cute`: `bwlab/bridge/cute_full_flow.py`) writes the trip in
# CuTe's vocabulary, the one bwlab borrows: a tiled MMA built from one `tcgen05.mma` shape
# (`tcgen05.MmaF16BF16Op`, 128 × 128 × 16), SMEM layouts derived from it, TMA atoms for the loads and the
# store, a TMEM copy atom (`Ld32x32bOp`), and a register-to-SMEM store chosen to match it. It compiles for
# sm_100a without a GPU in an interpreter started with `CUTE_DSL_ARCH=sm_100a`, with fake tensors for A, B
# and D.

# %%
bridge.side_by_side("full_flow", "cute", replace={F.K_STEP_TEXT: "K_STEP * kb"})

# %% tags=["nbval-ignore-output"]
cute_ff = bridge.practitioner_ptx("full_flow", "cute")
print(cute_ff.describe())

# %%
ff_cute = bridge.compare_ptx(bridge.bwlab_ptx("full_flow"), cute_ff.ptx, names=("bwlab", "cute"))
fold(ff_cute.table() + "\n\n" + ff_cute.descriptor_table(), summary="the rest of the table, then the descriptors")

# %% [markdown]
# Hop for hop the same instructions again: the 32 `st.shared.v4.b32` into the swizzled boxes, four
# `tcgen05.ld.32x32b.x32` each followed by `tcgen05.wait::ld`, the proxy fence, four TMA stores, one bulk
# group. CuTe spells out what bwlab leaves implicit (`.tile`, `.collector::a::discard`, a cache-hint operand,
# `.shared` for `.shared::cta`), encodes LBO as bwlab does (16 B: here bwlab follows CuTe), and chooses the
# instruction descriptor at run time among constants that differ only in the negate bits — its tiled MMA
# keeps negate A/B, like `ACCUMULATE`, as fields that can change while the kernel runs.

# %% [markdown]
# ## Recap
#
# * The trip is seven hops; each moves the same bytes with one instruction family and leaves them in one
#   place you can inspect: SMEM (swizzled) → TMEM (lane = row) → registers (thread = row) → SMEM (swizzled)
#   → GMEM (row-major).
# * Two handshakes hold it together: the mbarrier `full` (expect_tx 32768, completed by the TMA engine's
#   bytes) and `mma_done` (one arrival from `tcgen05.commit`); one fence (`fence.proxy.async`) lets the
#   TMA engine see what threads wrote.
# * The same `Trace` comes out of every tier, so the model, a Hopper running half of it and a Blackwell
#   running all of it are compared hop by hop, byte by byte.
#
# ## Where next
#
# This kernel does one tile, one step after another: while the epilogue runs the tensor core idles, and
# while the loads fly nothing else does (the measured timeline above shows it). The rungs of the usual
# speed ladder each remove one of those waits, and each is measured against cuBLAS:
#
# 1. **Pipelining several stages.** K split into many tiles, each in its own SMEM stage with a `full` and an
#    `empty` mbarrier: the TMA fills stage *s + 1* while the MMA reads stage *s*; `tcgen05.commit` to the
#    stage's `empty` barrier hands it back. (Notebook 02's `python -m bwlab.bench multicast` already runs
#    such a full/empty pipeline, for loads alone.)
# 2. **Warp specialisation.** One warp only issues TMA loads, one only issues MMAs, the others only run
#    the epilogue; they meet at mbarriers instead of `__syncthreads`, so no warp waits for work it does
#    not do.
# 3. **Persistent tiles.** One CTA per SM walks many tiles of D; with two accumulators in TMEM (512
#    columns hold four of 128) the epilogue of tile *i* overlaps the MMAs of tile *i + 1*.
# 4. **Clusters at scale.** The multicast and 2-SM variants of section 6 cut L2 traffic once the loads,
#    not the MMAs, set the pace.
#
# Outside bwlab: CUTLASS's `examples/cute/tutorial/blackwell/` builds this notebook's kernel in CuTe one
# mechanism per file, and its `include/cutlass/gemm/kernel/sm100_gemm_tma_warpspecialized.hpp` is a kernel
# with all four rungs in place.
