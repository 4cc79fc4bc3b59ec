# %% [markdown]
# # 02 · Clusters and TMA multicast
#
# In a GEMM every CTA of a row of output tiles needs the same tile of **A**, and every CTA of a column
# the same tile of **B**. On sm_90 and sm_100 a group of CTAs launched together as a **cluster** can
# share those loads: one `cp.async.bulk.tensor ... .multicast::cluster` writes its box into the shared
# memory of *every* CTA named in a 16-bit `ctaMask`, at the same offset, and counts down the mbarrier at
# the same offset in each of them.
#
# This notebook follows CUTLASS's Blackwell tutorials 03 and 04 (`examples/cute/tutorial/blackwell/`):
#
# 1. the cluster as a CuTe layout `(V,M,N,K) -> CTA rank`;
# 2. `create_tma_multicast_mask`, step by step, and the A, B, C masks of every CTA;
# 3. `tma_partition`: which slice of a tile each CTA issues, where it lands, what each mbarrier expects;
# 4. the kernel (`cuda_src/tma_multicast.cu`) and, on a GPU, every CTA's shared memory compared with the model;
# 5. what multicast saves.
#
# **Runs on:** the line below says which tier the multicast stage runs in here. Everything except the
# GPU check is computed by `bwlab.layout` / `bwlab.multicast` and runs anywhere.

# %% tags=["nbval-ignore-output"]
import bwlab
bwlab.banner();

# %%
import matplotlib.pyplot as plt
import numpy as np

from bwlab import multicast as mc
from bwlab.layout import Layout, make_layout, tiled_divide
from bwlab.results import show_recorded
print("multicast tier here:", bwlab.tier("multicast"))

# %% [markdown]
# ## 1 · A cluster is a layout
#
# CUTLASS describes the CTAs of a cluster with a CuTe layout. Tutorial 03 launches a 4 x 4 cluster
# (`cluster_shape = (4, 4, 1)`, x along M, y along N) and a one-SM MMA, whose `AtomThrID` is `1:0`:
#
# ```c++
# Layout cluster_layout_vmnk = tiled_divide(make_layout(cluster_shape), make_tile(AtomThrID{}));
# ```
#
# `make_layout((4,4,1))` is column-major: CTA rank = x + 4 y, the same formula the hardware uses for
# `%cluster_ctarank`. `tiled_divide` splits the M mode into the MMA's peer CTAs (V) and the rest (M).
# `bwlab.layout` reproduces CuTe's printing; each expected string is CuTe's own output.

# %%
one_sm = mc.cluster_layout_vmnk((4, 4, 1), peers=1)
two_sm = mc.cluster_layout_vmnk((4, 4, 1), peers=2)
print("make_layout((4,4,1))        ", make_layout((4, 4, 1)), "   expected (4,4,1):(1,4,0)")
print("one-SM MMA, AtomThrID 1:0   ", one_sm, "   expected ((1),4,4,1):((0),1,4,0)")
print("two-SM MMA, AtomThrID 2:1   ", two_sm, "   expected ((2),2,4,1):((1),2,4,0)")
assert str(one_sm) == "((1),4,4,1):((0),1,4,0)" and str(two_sm) == "((2),2,4,1):((1),2,4,0)"

# %% [markdown]
# A layout is a function. Called with a coordinate it gives the CTA rank; called with a flat index it
# first walks the coordinates in CuTe's colexicographic order (leftmost fastest). `get_flat_coord`
# goes back from a rank to `(v, m, n, k)`, as the kernels do with `block_rank_in_cluster()`.

# %%
print("one_sm(0, 1, 2, 0) =", one_sm(0, 1, 2, 0), "  expected 9  (m=1, n=2: 1 + 4*2)")
print("two_sm(1, 0, 3, 0) =", two_sm(1, 0, 3, 0), " expected 13 (v=1, m=0, n=3: 1 + 2*0 + 4*3)")
print("two_sm.get_flat_coord(13) =", two_sm.get_flat_coord(13), "  expected (1, 0, 3, 0)")
print("size", two_sm.size(), "cosize", two_sm.cosize(), "  expected 16 16")
print("slice two_sm(1, 0, _, 0) =", two_sm(1, 0, None, 0), "  expected (4):(4)  -- the CTAs along N")

# %%
fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
mc.draw_cluster(axes[0], one_sm, title=f"one-SM MMA: {one_sm}")
mc.draw_cluster(axes[1], two_sm, title=f"two-SM MMA: {two_sm}")
fig.tight_layout()
plt.show()

# %% [markdown]
# Same 16 CTAs, same ranks; only the *coordinates* change. With a two-SM MMA, CTAs 2i and 2i+1 along x
# form one MMA (v = 0 is the leader, v = 1 its peer).
#
# ## 2 · `create_tma_multicast_mask`, step by step
#
# CuTe's function (`include/cute/atom/copy_traits_sm90_tma.hpp`) takes the cluster layout, this CTA's
# coordinate and a list of modes:
#
# 1. replace the coordinate's entries in those modes by `_` ("all");
# 2. `slice_and_offset`: the slice is the layout of the CTAs that differ from this one only in those modes;
#    the offset is the layout evaluated at the coordinate with those modes set to 0, the base rank;
# 3. every rank `offset + slice(i)` becomes a bit of the 16-bit mask.
#
# `<2>` (project N) gives the **A** mask: every CTA with this M needs this A tile. `<1>` gives the
# **B** mask. Tutorial 03 ORs `<0,1>` and `<0,2>` into the **C** mask that its MMA completion
# (`umma_arrive_multicast`) signals: every CTA that shares an A or a B tile with this one.
# Tutorial 03's comments give, for CTA m = 1, n = 2: A 0x2222, B 0x0F00, C 0x2F22.

# %%
coord = (0, 1, 2, 0)
steps_a = mc.mask_steps(one_sm, coord, (2,))
print(steps_a)

# %%
steps_b = mc.mask_steps(one_sm, coord, (1,))
print(steps_b)

# %%
m9 = mc.cta_masks(one_sm, one_sm(coord))
for name, got, want in (("A", m9.a, 0x2222), ("B", m9.b, 0x0F00), ("C", m9.c, 0x2F22)):
    print(f"{name}: 0x{got:04X}  expected 0x{want:04X} (tutorial 03)  bits {got:016b}")
    assert got == want

# %% [markdown]
# A tempting slip: for the layout `(2,2,4,1):(8,4,1,0)` and CTA `(0,1,2,0)`, guessing the B mask as
# `0b0000000000110011`. Step 2 says otherwise: the base is `layout(0,0,2,0) = 2`, and the slice along M
# has stride 4.

# %%
seed_layout = Layout((2, 2, 4, 1), (8, 4, 1, 0))
print(mc.mask_steps(seed_layout, (0, 1, 2, 0), (1,)))
print("expected B 0x0044 (CTAs 2 and 6); A:", hex(mc.create_tma_multicast_mask(seed_layout, (0, 1, 2, 0), (2,))),
      " expected 0xf0")

# %% [markdown]
# ### The masks of one CTA, drawn

# %%
mc.draw_masks_of(one_sm, 9)
plt.show()

# %% [markdown]
# ### Every CTA's masks
#
# Each small grid is one CTA (outlined), placed where that CTA sits in the cluster. A masks run along
# rows (same M), B masks along columns (same N), C is their union.

# %%
for kind in "ABC":
    mc.draw_every_mask(one_sm, kind)
    plt.show()

# %% [markdown]
# And as bits (bit r = CTA rank r; the leftmost bit is rank 15):

# %%
print(mc.mask_table(one_sm))

# %% [markdown]
# With a two-SM MMA the V mode is never projected for A and B: the leader and its peer load *different*
# halves of the MMA's tiles, so each multicasts only to CTAs with the same v. The C mask projects V too,
# so it reaches both CTAs of every pair that shares a tile.

# %%
print(mc.mask_table(two_sm))

# %% [markdown]
# ### Try it
#
# Pick a cluster shape, the MMA's peer count and a CTA rank. Invalid choices (more than 16 CTAs, an
# odd M extent with a two-SM MMA, a rank outside the cluster) print the rule they break.

# %% tags=["nbval-ignore-output"]
import ipywidgets as widgets
widgets.interact(mc.explain_cta,
                 cluster_m=widgets.Dropdown(options=[1, 2, 4, 8], value=4, description="cluster M"),
                 cluster_n=widgets.Dropdown(options=[1, 2, 4, 8], value=4, description="cluster N"),
                 peers=widgets.Dropdown(options=[1, 2], value=1, description="V (peers)"),
                 rank=widgets.IntSlider(min=0, max=15, value=9, description="CTA rank"),
                 draw=widgets.fixed(True));

# %% [markdown]
# The same function, called once with fixed arguments (its output is part of the stored notebook):

# %%
mc.explain_cta(2, 4, 2, 5)

# %% [markdown]
# ## 3 · `tma_partition`: who issues what, where it lands
#
# The mask says *who receives*; `tma_partition` says *who sends which part*. For a tile shared by n
# CTAs, CuTe shrinks the TMA box by n, starting with the tile's outermost dimension
# (`make_tma_copy_desc`), and CTA i along the multicast mode issues the i-th such box; it lands at
# byte offset i x (box bytes) in every CTA of the mask. Each CTA therefore receives the whole tile from
# n different senders, and its mbarrier must expect **the whole tile**, not the slice it issued.
#
# Tutorial 03's sizes: A tile 128 x 64 halves, B tile 256 x 64 halves, cluster 4 x 4.

# %%
t3 = mc.MulticastConfig(cluster=(4, 4), tile_m=128, tile_n=256, tile_k=64)
print(t3.describe())
print("expect_tx per CTA:", t3.expect_tx_bytes, "  expected 49152 (tutorial 03: sizeof(tAsA) + sizeof(tBsB))")

# %%
plans = mc.plan(t3)
print("block  rank (v,m,n,k)   issues: operand, mask, box origin (k, row), SMEM offset, bytes")
for p in plans[:6]:
    issues = "; ".join(f"{i.operand} 0x{i.mask:04X} {i.coords} @{i.smem_offset} {i.slice.nbytes}B" for i in p.issues)
    print(f"{str(p.block):7s} {p.rank:3d}  {str(p.coord):12s} {issues}")
print("...")

# %%
mc.draw_landing(t3, block=(1, 2))
plt.show()

# %% [markdown]
# CTA (1, 2) is rank 9: its A area is filled by ranks 1, 5, 9, 13 (the CTAs of its row, one slice each),
# its B area by ranks 8, 9, 10, 11.
#
# With the two-SM MMA of tutorial 04 (cluster 4 x 4, each CTA holding 128 rows of A and half of the
# MMA's 256 rows of B), the loads use the 2-SM form of the sm_100 TMA, `cp.async.bulk.tensor ...
# .cta_group::2` (CuTe's `SM100_TMA_2SM_LOAD`): it sends both peers' `complete_tx` to the **leader's**
# barrier, so the leader expects `size<0>(layout) x` its own bytes and the peer none. An ordinary TMA
# load, on sm_90 or sm_100, signals the barrier of the CTA it writes to: each CTA waits for its own.

# %%
t4 = mc.MulticastConfig(cluster=(4, 4), peers=2, tile_m=128, tile_n=128, tile_k=64)
for p in mc.plan(t4)[:2]:
    role = "leader" if p.coord[0] == 0 else "peer"
    print(f"rank {p.rank} ({role}): own tiles {p.expect_tx} B, two-SM barrier expects {p.expect_tx_2sm} B")
print("expected: leader 65536 B, peer 0 B (tutorial 04: 2 * (16384 + 16384))")

# %% [markdown]
# ### The model of the whole cluster
#
# `multicast_model` follows the plan literally: every issued box (bytes from `bwlab.tma.tma_load_model`, swizzle
# included) is written into every CTA of its mask. `expected_smem` ignores masks and slices and loads
# each CTA's whole tiles in one box. If a mask or a slice were wrong, the two would differ.

# %%
cfg = mc.MulticastConfig(cluster=(2, 4), operands="AB", grid_clusters=(2, 1))
ops = mc.make_operands(cfg, seed=0)
print(cfg.describe())
print("multicast_model == expected_smem:", np.array_equal(mc.multicast_model(cfg, ops), mc.expected_smem(cfg, ops)),
      "  expected True")

# %% [markdown]
# ### A slice need not start where the swizzle pattern starts
#
# A TMA destination must be 128-byte aligned, nothing more, and the swizzle is a function of the
# shared-memory **address** (bits 4-6 XORed with bits 7-9 for 128B). So a slice may start in the middle
# of the 1024-byte pattern: its rows are swizzled as their addresses say, exactly as the same rows of
# the whole tile would be, and the slices fit together. (The H100 validation of the TMA load,
# `docs/results/tma_validate_h100.txt`, covers swizzled boxes at every multiple of 128 mod 1024.)
#
# Here the A tile has 24 rows of 128 bytes, split among the 4 CTAs along N: 768-byte slices. Slice 1
# lands at byte 0x300, pattern row 6 of 8.

# %%
odd = mc.MulticastConfig(cluster=(2, 4), tile_m=24, operands="A")
print(odd.describe())
ops_odd = mc.make_operands(odd, seed=0)
print("slice offsets:", [odd.slice_of("A", i).smem_offset for i in range(4)], "  expected [0, 768, 1536, 2304]")
print("multicast_model == expected_smem:", np.array_equal(mc.multicast_model(odd, ops_odd), mc.expected_smem(odd, ops_odd)),
      "  expected True")

# %%
mc.draw_slice_swizzle(odd, "A", 1)
plt.show()

# %% [markdown]
# Left: slice 1's first row sits at pattern row 6, so its chunk c lands in chunk c XOR 6; its third row
# starts a new 1024-byte pattern (row 0, no permutation). Right: the same box at a 1024-byte boundary
# would start at row 0. Loading it there and copying it to 0x300 would be wrong; the TMA never does that.

# %% [markdown]
# ## 4 · The kernel
#
# `cuda_src/tma_multicast.cu` runs the plan: the Python side computes each CTA's mask, box coordinates and
# SMEM offset (`plan_arrays`) and passes them as an array; the cluster shape is a compile-time
# `__cluster_dims__` from the macros `CLUSTER_X`, `CLUSTER_Y`. The order of events matters: every
# mbarrier in the cluster must be initialised and published (`fence.mbarrier_init.release.cluster`, then
# a cluster barrier) before any CTA can `complete_tx` on it remotely, and no CTA may exit while a slice it
# sent may still be landing elsewhere.

# %%
from bwlab.compile import compile_cuda
from bwlab.source import show_source
kernel_text = show_source("tma_multicast.cu", kernel="tma_multicast_tile")

# %% [markdown]
# ### Peek under the hood: the PTX
#
# Built here by NVRTC for a 2 x 4 cluster (no GPU needed). The cluster shape is in the kernel's
# `.reqnctapercluster` directive; the mask travels as the last operand of the multicast copy.

# %% tags=["nbval-ignore-output"]
build = compile_cuda("tma_multicast", arch="sm_90a", defines={"CLUSTER_X": 2, "CLUSTER_Y": 4})
print(build.ptx_excerpt("tma_multicast_tile"))

# %%
ptx = build.ptx_of("tma_multicast_tile")
for needle in (".reqnctapercluster 2, 4, 1", "fence.mbarrier_init.release.cluster", "barrier.cluster.arrive",
               "mbarrier.arrive.expect_tx", ".multicast::cluster", "mbarrier.try_wait.parity.acquire.cluster"):
    print(f"{needle:45s} in the PTX: {needle in ptx}")
    assert needle in ptx

# %% [markdown]
# ### On the GPU: every CTA's shared memory beside the model
#
# On sm_90+ this launches the kernel for three 2D cluster shapes, with the one-SM and two-SM layouts,
# dumps every CTA's tile area and compares it byte for byte with `multicast_model` (and each CTA's
# `%cluster_ctarank` with the layout). Without such a GPU it prints the committed H100 validation.

# %% tags=["nbval-ignore-output"]
if bwlab.tier("multicast") == "hardware":
    for c in [mc.MulticastConfig(cluster=(2, 2), operands="AB"),
              mc.MulticastConfig(cluster=(2, 4), operands="A"),
              mc.MulticastConfig(cluster=(4, 2), operands="B"),
              mc.MulticastConfig(cluster=(4, 2), peers=2, operands="AB", grid_clusters=(2, 1))]:
        run = mc.launch_multicast(c, mc.make_operands(c, seed=1))
        print(mc.compare_run(run).line())
    mc.draw_smem_check(run)
    plt.show()
else:
    print("no sm_90+ GPU here: the H100 validation committed in docs/results/multicast_validate_h100.txt says\n")
    show_recorded("multicast_validate_h100.txt")

# %% [markdown]
# ## 5 · What multicast saves
#
# Derived from the plan: without multicast every CTA reads its A and B tiles from L2 itself; with it,
# each slice is read once and copied on the way to the SMs. A cluster of M x N CTAs reads A tiles
# M times instead of M x N, and B tiles N times instead of M x N.

# %%
shapes = [mc.MulticastConfig(cluster=c) for c in [(1, 1), (2, 1), (2, 2), (2, 4), (4, 2), (4, 4)]]
print(f"{'cluster':8s} {'own KiB':>8s} {'multicast KiB':>14s} {'ratio':>6s}")
for c in shapes:
    b = mc.l2_read_bytes(c)
    print(f"{c.cluster[0]}x{c.cluster[1]:<6d} {b['own'] / 1024:8.0f} {b['multicast'] / 1024:14.0f} {b['ratio']:6.2f}")
mc.draw_savings(shapes)
plt.show()

# %% [markdown]
# What the H100 measured (`python -m bwlab.bench multicast`, with Nsight Compute's L2 read sectors; the
# notes at the bottom of the file say how each figure was obtained). Three things to take from it:
#
# * the L2 really serves a multicast tile once per cluster (measured/derived close to 1.000);
# * plain loads of the *same* tile by CTAs running at the same time are partly merged before the L2 too,
#   so the naive "c times fewer L2 bytes" overstates what multicast saves on this GPU;
# * the pipeline's release step matters as much as the copies. Each consumer must tell every CTA whose
#   producer wrote into its stage that the stage is free again. Done by one thread, one CTA after another,
#   with `mbarrier.arrive.release.cluster` (a GPU-wide memory barrier before every arrival in the SASS), it
#   grows with the cluster size: the `sync-serial` rows. Done CUTLASS's way, one lane of the consumer warp
#   per CTA with the plain remote `mbarrier.arrive.shared::cluster`, it costs the same for every cluster
#   size: the `sync-only` rows. Compare the `multicast` rows with `own` to see what that buys, and read
#   the notes for what still limits both.

# %% tags=["nbval-ignore-output"]
if bwlab.tier("multicast") == "hardware":
    from bwlab.checks import multicast as bench
    res, occ = bench.run_bench(bench.BenchConfig(cluster=4, ctas=32, iters=500), modes=(0, 1, 2, 3), repeat=5)
    own_ms = res[0][0].median_ms
    for mode, (r, resident) in res.items():
        print(f"c=4, 32 CTAs, {bench.BENCH_MODES[mode]:11s}: median {r.median_ms:.3f} ms, "
              f"own / this = {own_ms / r.median_ms:.2f} (all CTAs resident: {resident})")
show_recorded("multicast_bench_h100.txt")
