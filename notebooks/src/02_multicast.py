# %% [markdown]
# # 02 · Clusters and TMA multicast
#
# In a GEMM every CTA of a row of output tiles needs the same tile of **A**, and every CTA of a column
# the same tile of **B**. On sm_90 and sm_100 a group of CTAs launched together as a **cluster** can
# share those loads: one `cp.async.bulk.tensor ... .multicast::cluster` writes its box into the shared
# memory of *every* CTA named in a 16-bit `ctaMask`, at the same offset, and counts down the mbarrier at
# the same offset in each of them.
#
# **Before this notebook:** [01 · TMA load](01_tma_load.ipynb) — tensor maps and boxes, the swizzle,
# and the mbarrier handshake (`init` → `arrive.expect_tx` → copy → bounded `try_wait`). Everything here
# builds on that handshake.
#
# **Runs on:** any machine. The layouts, masks, plans and models are NumPy. The GPU cells run live on an
# sm_90+ GPU; elsewhere the kernel's sm_90a PTX runs in bwlab's emulator (each such cell says so), and a
# recorded H100 run is shown beside it and compared with the model computed now.
#
# 1. CuTe's layout vocabulary, in five lines
# 2. the cluster as a layout `(V,M,N,K) -> CTA rank`
# 3. `create_tma_multicast_mask`: who receives
# 4. `tma_partition`: who sends which slice, and what each mbarrier expects
# 5. the teaching kernel, run and checked; then broken on purpose
# 6. what multicast saves, derived and measured
#
# This notebook holds **5 graded exercises** (12 points), each right after the section it draws on:
# predict, or write a small function, then run the check below it, which says what is wrong and why.
# Exercise 2.4 edits the teaching kernel and runs it.
# A check prints `correct:` when your answer is right; `checked:` when it agrees on every case tried here
# and the graded version tries more of its own; a wrong answer stops with `NotYet`, the rule and a hint.

# %% tags=["nbval-ignore-output"]
import bwlab
bwlab.banner();

# %%
import matplotlib.pyplot as plt
import numpy as np

from bwlab import multicast as mc
from bwlab.layout import Layout, make_layout, tiled_divide
print("multicast tier here:", bwlab.tier("multicast"))

# %% [markdown]
# ## 1 · CuTe layouts: the vocabulary
#
# CUTLASS describes a cluster's CTAs with a CuTe **layout**, written `shape:stride`. A layout is a
# function: a coordinate inside `shape` maps to the dot product of the coordinate with `stride`.
#
# * `make_layout(shape)` picks **column-major** strides: the leftmost mode is contiguous.
# * A **flat index** `L(i)` is first turned into a coordinate in **colexicographic** order: the
#   *leftmost* coordinate counts fastest (the opposite of C's row-major order).
# * `_` (spelled `None` here) in a coordinate keeps that mode: the result is a **slice**, a smaller layout.
# * `tiled_divide(L, tile)` splits mode 0 into the tile (a new first mode, in parentheses) and the rest.

# %%
L = make_layout((2, 3))
print(L, "             expected (2,3):(1,2)")
print("L(1, 2) =", L(1, 2), "         expected 5  (1*1 + 2*2)")
print("L(3) =", L(3), L.get_flat_coord(3), "      expected 3 (1, 1): index 3 is coordinate (1, 1), left fastest")
print("L(_, 1) =", L(None, 1), "       expected (2):(1), the column n = 1")
print(tiled_divide(make_layout((4, 2)), (2,)), "  expected ((2),2,2):((1),2,4): mode 0 (4) = tile (2) x rest 2")

# %% [markdown]
# ## 2 · A cluster is a layout
#
# Tutorial 03 of CUTLASS's Blackwell examples (`examples/cute/tutorial/blackwell/`) launches a 4 x 4
# cluster, x along M and y along N, and builds
#
# ```c++
# Layout cluster_layout_vmnk = tiled_divide(make_layout(cluster_shape), make_tile(AtomThrID{}));
# ```
#
# `make_layout((4,4,1))` gives CTA rank = x + 4 y, the hardware's `%cluster_ctarank`. `tiled_divide`
# splits M into the MMA's peer CTAs **V** and the rest: a one-SM MMA has `AtomThrID = 1:0` (V of size 1),
# a two-SM MMA `2:1` (CTAs 2i and 2i+1 along x form one MMA). Each expected string is CuTe's own print.
#
# > **V, the MMA's peer CTAs, in one paragraph.** On Blackwell one `tcgen05.mma` can span two SMs: CTAs 2i
# > and 2i+1 of a cluster compute one MMA together (notebook 03b teaches it). V counts the CTAs of one MMA:
# > V = 1 means every CTA runs its own MMA, which is all this notebook needs. The two-SM parts below (the
# > second picture, the C mask) are there to recognise when you meet them in CUTLASS; skip them on a first
# > reading. The expected masks come from the comments of CUTLASS's Tutorial 03, quoted where they are used.

# %%
one_sm = mc.cluster_layout_vmnk((4, 4, 1), peers=1)
two_sm = mc.cluster_layout_vmnk((4, 4, 1), peers=2)
print("one-SM MMA ", one_sm, "   expected ((1),4,4,1):((0),1,4,0)")
print("two-SM MMA ", two_sm, "   expected ((2),2,4,1):((1),2,4,0)")
print("one_sm(0, 1, 2, 0) =", one_sm(0, 1, 2, 0), "        expected 9  (m=1, n=2: 1 + 4*2)")
print("two_sm.get_flat_coord(13) =", two_sm.get_flat_coord(13), " expected (1, 0, 3, 0): v=1, m=0, n=3")

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
mc.plot_cluster(axes[0], one_sm, title=f"one-SM MMA: {one_sm}")
mc.plot_cluster(axes[1], two_sm, title=f"two-SM MMA: {two_sm}")
fig.suptitle("Same 16 CTAs, same ranks: only the (v,m,n) coordinates change")
fig.tight_layout()
plt.show()

# %% [markdown]
# ## 3 · `create_tma_multicast_mask`: who receives
#
# CuTe's function (`include/cute/atom/copy_traits_sm90_tma.hpp`) takes the cluster layout, this CTA's
# coordinate and a list of modes:
#
# 1. replace the coordinate's entries in those modes by `_`;
# 2. the **slice** is the CTAs that differ from this one only in those modes; the **offset** (base rank)
#    is the layout at the coordinate with those modes set to 0;
# 3. every rank `offset + slice(i)` becomes a bit of the 16-bit mask.
#
# `<2>` (project N) gives the **A** mask: every CTA with this M needs this A tile. `<1>` gives the **B**
# mask. (Two-SM MMAs only, optional on a first reading: Tutorial 03 ORs `<0,1>` and `<0,2>` into the **C**
# mask, the CTAs its MMA completion signals.) CUTLASS's comments in Tutorial 03 give, for CTA m = 1, n = 2:
# A 0x2222, B 0x0F00, C 0x2F22.

# %%
print(mc.mask_steps(one_sm, (0, 1, 2, 0), (2,)))

# %%
m9 = mc.cta_masks(one_sm, 9)
for name, got, want in (("A", m9.a, 0x2222), ("B", m9.b, 0x0F00), ("C", m9.c, 0x2F22)):
    print(f"{name}: 0x{got:04X}  expected 0x{want:04X} (tutorial 03)  ranks {mc.mask_ranks(got)}")
    assert got == want

# %%
mc.plot_every_mask(one_sm, "A")
plt.show()

# %% [markdown]
# A masks run along rows of the grid (same M), B masks along columns (same N), C is their union. With
# a two-SM MMA the V mode is never projected for A and B: the leader and its peer load *different*
# halves of the MMA's tiles, so each multicasts only to CTAs with the same v (bit r = CTA rank r; the
# leftmost bit is rank 15):

# %%
print(mc.mask_table(two_sm))

# %% [markdown]
# ### Try it
#
# Pick a cluster shape, the MMA's peer count and a CTA rank; the controls offer only legal values
# (at most 16 CTAs, two-SM needs an even M, ranks inside the cluster). The widget needs a live kernel;
# below it, the same picture for one fixed choice.

# %% tags=["nbval-ignore-output"]
mc.mask_explorer(cluster_m=4, cluster_n=4, peers=1, rank=9)

# %%
mc.explain_cta(2, 4, 2, 5)


# %% [markdown]
# ### Exercise 2.1 — the A mask of any CTA (3 points)
#
# Write `a_mask_of(m, n, cluster_m, cluster_n)`: the 16-bit `ctaMask` with which CTA (m, n) of a
# `cluster_m` x `cluster_n` cluster (one-SM MMA, x along M) multicasts its slice of **A**. Rank r =
# m + cluster_m x n has bit r of the mask. Predict first: which bits does CTA (0, 1) of a 2 x 4 cluster
# set? The check tries every CTA of the 4 x 4 and 2 x 2 clusters; the graded run adds other shapes,
# non-powers of two among them (the rule: `create_tma_multicast_mask<2>`, section 3).

# %% nbgrader={"grade": false, "grade_id": "mc_a_mask", "locked": false, "schema_version": 3, "solution": true}
def a_mask_of(m, n, cluster_m, cluster_n):
    """The A ctaMask of CTA (m, n): one bit per CTA that needs the same A tile."""
    mask = None   # your answer: an int
    ### BEGIN SOLUTION
    mask = 0
    for j in range(cluster_n):           # every CTA of row m: same m, every n
        mask |= 1 << (m + cluster_m * j)
    ### END SOLUTION
    return mask


# %% nbgrader={"grade": true, "grade_id": "mc_a_mask_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.multicast import exercises as ex
ex.check_a_mask(a_mask_of)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_a_mask(a_mask_of, hidden=hidden_cases("mc_a_mask"))
### END HIDDEN TESTS

# %% [markdown]
# ## 4 · `tma_partition`: who sends which slice
#
# The mask says *who receives*; `tma_partition` says *who sends which part*. For a tile shared by n
# CTAs, CuTe shrinks the TMA box by n, starting with the tile's outermost dimension, and CTA i along
# the multicast mode issues the i-th such box; it lands at byte offset i x (box bytes) in every CTA of
# the mask. Each CTA therefore receives the whole tile from n senders, and **its mbarrier must expect the
# whole tile**, not the slice it issued. Tutorial 03's sizes: A 128 x 64 halves, B 256 x 64, cluster 4 x 4.

# %%
t3 = mc.MulticastConfig(cluster=(4, 4), tile_m=128, tile_n=256, tile_k=64)
print(t3.describe())
print("expect_tx per CTA:", t3.expect_tx_bytes, "  expected 49152 (tutorial 03: sizeof(tAsA) + sizeof(tBsB))")

# %%
mc.plot_landing(t3, block=(1, 2))
plt.show()

# %% [markdown]
# CTA (1, 2) is rank 9: its A area is filled by ranks 1, 5, 9, 13 (the CTAs of its row), its B area by
# ranks 8, 9, 10, 11. (With tutorial 04's two-SM MMA, sm_100's `.cta_group::2` TMA sends both peers'
# bytes to the **leader's** barrier: the leader expects twice its own bytes, the peer none —
# `mc.plan(cfg)[i].expect_tx_2sm`.)
#
# `multicast_model` follows the plan literally: every issued box (its bytes from `bwlab.tma`'s model,
# swizzle included) is written into every CTA of its mask. `expected_smem` ignores masks and slices and
# loads each CTA's whole tiles in one box. If a mask or a slice were wrong, the two would differ.

# %%
cfg = mc.MulticastConfig(cluster=(2, 4), operands="AB", grid_clusters=(2, 1))
ops = mc.make_operands(cfg, seed=0)
print("multicast_model == expected_smem:", np.array_equal(mc.multicast_model(cfg, ops), mc.expected_smem(cfg, ops)),
      "  expected True")

# %% [markdown]
# ### Exercise 2.2 — who receives a slice, and where it lands (2 points)
#
# Tutorial 03's configuration again (`t3`: a 4 x 4 cluster, B tiles of 256 rows x 64 halves). One CTA —
# yours, printed by the cell below (without a token from your instructor, **rank 7**) — issues its slice of
# **B**. Predict: which ranks receive it (a list), and at which byte offset *inside their B tile* does it
# land? (The mask says who receives; `tma_partition` says which slice a CTA issues and where it lands, above.)

# %% nbgrader={"grade": false, "grade_id": "mc_slice_receivers", "locked": false, "schema_version": 3, "solution": true}
from bwlab.multicast import exercises as ex
print("your CTA: rank", ex.receiver_rank())
b_receivers = None      # your prediction: a list of cluster ranks
b_slice_offset = None   # your prediction: bytes from the start of the B tile
### BEGIN SOLUTION
m, n = ex.receiver_rank() % 4, ex.receiver_rank() // 4   # rank = m + 4 n in the 4 x 4 cluster
b_receivers = [4 * n + i for i in range(4)]              # B goes to every CTA with the same n
b_slice_offset = m * (256 * 64 * 2 // 4)                 # slice m of 4, each 8192 B
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "mc_slice_receivers_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.multicast import exercises as ex
ex.check_slice_receivers(b_receivers, b_slice_offset)


# %% [markdown]
# ### Exercise 2.3 — what each CTA's barrier expects (2 points)
#
# Write `expect_tx_of(cluster_m, cluster_n, tile_m, tile_n, tile_k)`: the bytes every CTA's mbarrier
# must expect when each CTA holds an A tile of `tile_m` rows and a B tile of `tile_n` rows, `tile_k`
# 16-bit elements per row, shared by multicast as above. Predict first: does the cluster shape change it?
# (Too few, and the wait returns before the other CTAs' slices have landed; too many, and it never
# returns.)

# %% nbgrader={"grade": false, "grade_id": "mc_expect_tx", "locked": false, "schema_version": 3, "solution": true}
def expect_tx_of(cluster_m, cluster_n, tile_m, tile_n, tile_k):
    """Bytes each CTA's mbarrier expects per round of tiles."""
    nbytes = None   # your answer: an int
    ### BEGIN SOLUTION
    nbytes = (tile_m + tile_n) * tile_k * 2   # the whole A and B tiles, whoever sends the slices
    ### END SOLUTION
    return nbytes


# %% nbgrader={"grade": true, "grade_id": "mc_expect_tx_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.multicast import exercises as ex
ex.check_expect_tx(expect_tx_of)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_expect_tx(expect_tx_of, hidden=hidden_cases("mc_expect_tx"))
### END HIDDEN TESTS

# %% [markdown]
# ### A slice need not start where the swizzle pattern starts
#
# A TMA destination must be 128-byte aligned, nothing more, and the swizzle is a function of the
# shared-memory **address** (01 showed it). So a slice may start in the middle of the 1024-byte
# pattern and is swizzled as its address says, exactly as the same rows of the whole tile would be.
# Here an A tile of 24 rows of 128 bytes is split among 4 CTAs: slice 1 lands at 0x300, pattern row 6.

# %%
odd = mc.MulticastConfig(cluster=(2, 4), tile_m=24, operands="A")
print("slice offsets:", [odd.slice_of("A", i).smem_offset for i in range(4)], "  expected [0, 768, 1536, 2304]")
mc.plot_slice_swizzle(odd, "A", 1)
plt.show()

# %% [markdown]
# ## 5 · The teaching kernel
#
# `cuda_src/teach_multicast.cu` is the whole mechanism and nothing else: a 2 x 2 cluster, each CTA
# needing a 64-row A tile and a 64-row B tile (16-bit, 128-byte rows, no swizzle so that only the
# TMA's 128-byte alignment matters). Read it top to bottom; the numbered comments are the order of
# events. The masks come from Python, one pair per cluster rank.

# %%
from bwlab.lab import TeachingKernel
k = TeachingKernel("teach_multicast.cu")
k.show("teach_multicast")   # the kernel function, steps 1-6 (k.show() starts with the file's header comment)

# %% [markdown]
# Two orderings carry the lesson. **Step 2:** a slice from another CTA may land here, and count down
# `full`, as soon as that CTA passes the cluster sync, so every barrier of the cluster must be
# initialised and published (`fence.mbarrier_init.release.cluster`) before anyone issues. **Step 6:** a
# CTA must not exit while its slice may still be landing elsewhere. The masks the kernel reads:

# %%
tcfg = mc.teach_config()           # cluster 2 x 2, A and B tiles of 64 rows x 64 halves
masks = mc.teach_masks(tcfg)       # create_tma_multicast_mask<2> (A) and <1> (B) of every rank
for r, (a, b) in enumerate(masks):
    print(f"rank {r} (m={r % 2}, n={r // 2}): A mask 0x{a:X} ranks {mc.mask_ranks(a)}, B mask 0x{b:X} ranks {mc.mask_ranks(b)}")
print("expected: A masks 0x5 0xA 0x5 0xA (same m), B masks 0x3 0x3 0xC 0xC (same n)")

# %% [markdown]
# ### Run it, and compare every CTA's shared memory with the model
#
# This runs the kernel (your edited version, if you changed it with `%%cuda`); the first line says what
# runs it here. Below it, the recorded H100 run of the same kernel. Either way the model is computed now.

# %% tags=["nbval-ignore-output"]
case = mc.MulticastLoad(tcfg, seed=0, kernel="teach_multicast.cu")   # the teaching kernel (your %%cuda edit, if any)
bwlab.device.where("multicast", print_it=True)
print(case.results())   # this GPU or the PTX emulator, then the H100's recording of the same run

# %% [markdown]
# ### Peek under the hood: the PTX
#
# Built here by NVRTC (no GPU needed). The cluster shape is the kernel's `.reqnctapercluster`; the mask
# is the last operand of each multicast copy.

# %% tags=["nbval-ignore-output"]
build = k.compile("sm_90a")
print(build.ptx_excerpt("teach_multicast"))

# %%
ptx = build.ptx_of("teach_multicast")
for needle in (".reqnctapercluster 2, 2, 1", "fence.mbarrier_init.release.cluster", ".multicast::cluster"):
    print(f"{needle:40s} in the PTX: {needle in ptx}   expected True")

# %% [markdown]
# ### Break it on purpose: a mask that leaves out a CTA
#
# Change the kernel so that every A multicast skips CTA 0 (clear bit 0 of the A mask). It still
# compiles; try your own edits the same way (`k.replace(old, new)`, or a `%%cuda teach_multicast.cu`
# cell after `%load_ext bwlab.lab`). Compile errors come back on the line of your text.

# %%
mine = k.replace("const u16 a_mask = masks[2 * rank + 0];",
                 "const u16 a_mask = masks[2 * rank + 0] & ~1;  // CTA 0 left out of every A multicast")
print(mine.diff())
mine.compile("sm_90a")
print("compiles for sm_90a: yes")

# %% [markdown]
# CTA 0 still expects the whole 16384 bytes but receives only its B slices. The model says which
# barrier never completes (the same edit, in the masks' terms):

# %%
bad = masks.copy()
bad[:, 0] &= 0xFFFE
print(mc.barrier_table(mc.barrier_outcome(tcfg, bad)))

# %% [markdown]
# On a GPU the bounded wait gives up after 200 ms and Python raises `MbarrierTimeout` naming the CTA;
# the next launch works. In the emulator the same exception also lists every waiting warp: the barrier, its
# phase, and the bytes it still expects. Then the recorded H100 run of this edit:

# %% tags=["nbval-ignore-output"]
print(mc.MulticastLoad(tcfg, seed=0, kernel=mine).results(), "\n")
print("the model's stuck CTAs:", [o["rank"] for o in mc.barrier_outcome(tcfg, bad) if not o["completes"]],
      "  (each bounded wait above names the cluster rank that gave up)")

# %% [markdown]
# ### Exercise 2.4 — compute the A mask in the kernel (3 points)
#
# The kernel reads each CTA's A mask from a table Python built. Make it compute the mask itself: write
# the right-hand side of
#
# ```c++
# const u16 a_mask = masks[2 * rank + 0];
# ```
#
# as one C expression of `mn.x` (m), `mn.y` (n), `rank`, `CLUSTER_X` and `CLUSTER_Y`, so that the
# same kernel is right for **every** cluster shape it is compiled for. Your text replaces the table
# lookup (`ex.mask_kernel(expr)` makes the edited kernel) and is compiled; on an sm_90+ GPU the edited
# kernel then runs in a worker process, elsewhere the model executes the same expression for every CTA.
# A mask that leaves a CTA out comes back as that CTA's barrier never completing; one that reaches
# into another row, as bytes of another A tile. The check compiles and runs it for 2 x 2 and 2 x 4
# clusters; the graded run adds 4 x 2 and 1 x 4.
#
# Hint: the bits are m, m + X, m + 2X, ... (X = `CLUSTER_X`): a pattern with every X-th bit set, shifted
# by m. A C expression has no loop, so write that pattern in closed form from `CLUSTER_X` and `CLUSTER_Y`
# (it is the sum of a geometric series in 2^X).

# %% nbgrader={"grade": false, "grade_id": "mc_teach_mask", "locked": false, "schema_version": 3, "solution": true}
a_mask_expr = None   # your C expression, as a string
### BEGIN SOLUTION
a_mask_expr = "(((1u << (CLUSTER_X * CLUSTER_Y)) - 1) / ((1u << CLUSTER_X) - 1)) << mn.x"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "mc_teach_mask_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.multicast import exercises as ex
ex.check_teach_a_mask(a_mask_expr)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_teach_a_mask(a_mask_expr, hidden=hidden_cases("mc_teach_mask"))
### END HIDDEN TESTS

# %% [markdown]
# ### The validation kernel, on one configuration
#
# `cuda_src/tma_multicast.cu` (`tma_multicast_tile`) is the harness `python -m bwlab.validate multicast`
# uses: any cluster shape, one- and two-SM masks, any swizzle, plus a fill byte that shows where nothing
# landed. Here: a 2 x 2 cluster, A and B tiles with the 128-byte swizzle, every CTA's tile area against
# the model. The full H100 validation (29 configurations, all exact) is
# `docs/results/multicast_validate_h100.txt`.

# %% tags=["nbval-ignore-output"]
hcfg = mc.MulticastConfig(cluster=(2, 2), tile_m=32, tile_n=32, operands="AB", swizzle="128B")
hcase = mc.MulticastLoad(hcfg, seed=0)           # no kernel=: the harness kernel
print(hcase.results())
print(mc.ClusterRanks(hcfg, seed=0).results())
print("expected ranks:", [p.rank for p in hcase.plans])

# %% [markdown]
# ## 6 · What multicast saves
#
# Derived from the plan: without multicast every CTA reads its A and B tiles from L2 itself; with it,
# each slice is read once. An M x N cluster reads A tiles M times instead of M x N, and B tiles N times
# instead of M x N: own / multicast = 2MN / (M+N) when A and B tiles are the same size.

# %%
shapes = [mc.MulticastConfig(cluster=c) for c in [(1, 1), (2, 1), (2, 2), (2, 4), (4, 2), (4, 4)]]
print(f"{'cluster':8s} {'own KiB':>8s} {'multicast KiB':>14s} {'own / multicast':>16s}")
for c in shapes:
    b = mc.l2_read_bytes(c)
    print(f"{c.cluster[0]}x{c.cluster[1]:<6d} {b['own'] / 1024:8.0f} {b['multicast'] / 1024:14.0f} {b['ratio']:15.2f}x")
mc.plot_savings(shapes)
plt.show()


# %% [markdown]
# ### Exercise 2.5 — what multicast saves in L2 reads (2 points)
#
# Write `l2_saved_of(cluster_m, cluster_n, tile_m, tile_n)`: the bytes **one cluster** does not read
# from L2 per round of tiles because it multicasts, compared with every CTA loading its own A tile
# (`tile_m` rows) and B tile (`tile_n` rows), each row 64 16-bit elements (128 bytes). Predict first:
# what does a 1 x 1 cluster save?

# %% nbgrader={"grade": false, "grade_id": "mc_l2_saved", "locked": false, "schema_version": 3, "solution": true}
def l2_saved_of(cluster_m, cluster_n, tile_m, tile_n):
    """L2 bytes one cluster saves per round of tiles by multicasting."""
    saved = None   # your answer: an int
    ### BEGIN SOLUTION
    a, b = tile_m * 128, tile_n * 128
    own = cluster_m * cluster_n * (a + b)        # every CTA reads both of its tiles
    multicast = cluster_m * a + cluster_n * b    # each distinct tile once per cluster
    saved = own - multicast
    ### END SOLUTION
    return saved


# %% nbgrader={"grade": true, "grade_id": "mc_l2_saved_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.multicast import exercises as ex
ex.check_l2_saved(l2_saved_of)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_l2_saved(l2_saved_of, hidden=hidden_cases("mc_l2_saved"))
### END HIDDEN TESTS

# %% [markdown]
# What an H100 measured, with a pipelined loop in which every CTA receives 2000 tiles of 64 KiB
# (`python -m bwlab.bench multicast`, L2 bytes from Nsight Compute). The whole report, with how each
# figure was obtained, is `docs/results/multicast_bench_h100.txt`.

# %%
from bwlab.checks.multicast import bench_summary
print(bench_summary(ctas=120))

# %% [markdown]
# Four things to take from it:
#
# * **The L2 really serves a multicast tile once per cluster** (measured / naive = 1.000 for every c).
# * **Plain loads of the same tile are partly merged too**: own's L2 reads fall to 0.3-0.6 of the naive
#   count, so "c times fewer L2 bytes" overstates what multicast saves on this GPU.
# * **Multicast is faster from c = 2 on (1.2-1.7x), slower at c = 1.** The time per tile follows the
#   handshake and the number of boxes each CTA issues more than the bytes; and the release step of the
#   pipeline matters: one lane per CTA with a plain remote `mbarrier.arrive` costs the same at every
#   cluster size, where one thread arriving on each CTA in turn grows with c (the report's `sync-*` rows,
#   which time the handshake alone, with no data).
# * **Own's time per tile halves between c = 2 and c = 4** (962 → 514 ns). In this loop the CTAs of a
#   cluster load the same tile at the same moment, so bigger clusters mean fewer distinct tiles in flight;
#   the L2 served only 0.42 of the naive bytes at c = 4. That reading is an inference from these numbers;
#   no run here separates the two effects.
#
# ## Recap
#
# * A cluster is a CuTe layout `(V,M,N,K) -> rank`; `create_tma_multicast_mask` projects modes of it to
#   name the receivers: A along N, B along M, C both.
# * `tma_partition` splits a shared tile into one box per sender; each slice lands at the same offset in
#   every CTA of its mask, swizzled by its own address.
# * Every CTA expects the **whole** tile; every barrier in the cluster is initialised and published before
#   anyone multicasts; nobody exits while its slices may still land. A mask that leaves out a CTA leaves
#   that CTA's barrier short, and the bounded wait names it.
#
# **Next:** [03a · UMMA: descriptors and layouts](03a_umma_descriptors.ipynb) — the tiles are in shared
# memory; the tensor cores read them through SMEM descriptors.
