# %% [markdown]
# # 05 · The epilogue: registers → SMEM → GMEM with the TMA store
#
# After the MMA (notebook 03b) and `tcgen05.ld` (notebook 04), every epilogue thread holds a row of the
# accumulator tile in registers. This notebook follows those values out to global memory:
#
# 1. **the teaching kernel**, top to bottom, checked against the model;
# 2. **registers → SMEM** with `st.shared.v4` (16 bytes per thread per instruction), and what the
#    shared-memory banks make of it, with and without a swizzled D tile;
# 3. **`fence.proxy.async.shared::cta`**: why the TMA engine may not see those writes without it;
# 4. the TMA store's **bulk async-groups** (`commit_group`, `wait_group.read N`, `wait_group N`);
# 5. **the TMA store** (`cp.async.bulk.tensor ... global.shared::cta`), the inverse of the TMA load;
# 6. **edge tiles**: a store skips the rows of a box that lie past the tensor's edge, but writes
#    dimension 0 in whole 16-byte granules, so row padding next to the last column can be overwritten;
# 7. **D = α·acc + β·C** with C brought in by a TMA load, and the TMA **reduce-add**;
# 8. the GPU beside the model; 9. the store bandwidth beside `st.global` and CuPy; 10. the PTX.
#
# **Graded exercises:** this notebook holds 5 graded exercises (5.1 to 5.5, 11 points), each right after
# the section it practises: the wavefronts of a store pattern, where a missing proxy fence bites,
# `wait_group.read` in a ring of buffers, the swizzled SMEM address of a staged element, and an edit of
# the teaching kernel's TMA store. Each has an answer cell and a check cell; the check says what is
# wrong, and why.
#
# **Before this one:** notebook 01 (the tensor map, its box and swizzle modes, the TMA load that this
# store inverts) and notebook 04 (after `tcgen05.ld .32x32b`, thread *t* of a warp holds row *t* of the
# accumulator, one column per register). Notebook 03a's SMEM swizzle pictures help with section 2.
#
# **Runs on:** the next cell says which tier this notebook runs in here. `hardware` on sm_90+: the TMA
# store is plain Hopper, and on an H100 the accumulators come from GMEM, standing in for `tcgen05.ld`.
# Elsewhere every GPU cell shows what an H100 produced (a recording, labelled) and compares it with the
# model computed now.

# %% tags=["nbval-ignore-output"]
import bwlab
from bwlab import device
bwlab.banner()
print("Runs on:", device.tier("store"))

# %%
import numpy as np
import matplotlib.pyplot as plt
from bwlab import epilogue as E
from bwlab.epilogue import (SmemTile, RegisterStorePlan, EpilogueOrdering, EpilogueProblem,
                            OrderingError, tma_store_model, tma_reduce_add_model, epilogue_model)
from bwlab.tma import TensorMap, tma_load_model
from bwlab.lab import TeachingKernel, CompileError

# %% [markdown]
# ## 1. The kernel, top to bottom
#
# `cuda_src/teach_store.cu` is the whole epilogue of one 128 × 32 fp32 tile per CTA, and nothing else.
# Read it in the order it runs: every thread holds its row of the accumulator in registers, writes it
# into the shared-memory D tile 16 bytes at a time (`st.shared.v4`) through the 128B swizzle, fences,
# and waits at a barrier; then one thread issues the TMA store, closes its bulk async-group and waits
# until the store has finished reading SMEM, because the CTA's shared memory is freed when it exits.
# Each PTX instruction is one named wrapper in `cuda_src/ptx/` (`st_shared_v4_b32`, `swizzle_address`,
# `fence_proxy_async_shared_cta`, `tma_store_2d`, `bulk_commit_group`, `bulk_wait_group_read`).

# %%
k = TeachingKernel("teach_store.cu")
k.show()

# %% [markdown]
# The same path as a picture, for the first eight rows of the tile. Each panel is computed: the
# registers hold row *t* in thread *t*; `SmemTile.address` says where each 16-byte chunk must go (the
# 128B swizzle moves chunk *J* of row *r* to slot *J* ⊕ (*r* mod 8)); `tma_store_model` reads that SMEM
# through the tensor map's swizzle and writes GMEM, where the rows come out in order again. Below, the
# kernel's steps in program order, one lane per actor, replayed by `EpilogueOrdering` (section 3): the
# fence and the barrier are what stand between every thread's writes and the one thread's store.

# %%
E.plot_epilogue_path(SmemTile(128, 32, "float32", "128B"), rows=8)
plt.show()

# %% [markdown]
# `E.teach_problem(M, N)` is the epilogue this kernel performs (fp32 D = acc, 128 × 32 tiles, 128B
# swizzle); `E.Epilogue(..., kernel="teach_store.cu")` is that epilogue run by this kernel: its `run()`
# returns the whole D buffer, like `model()` (`epilogue_model`), so `check()` compares the two. A 150 × 70 D has edge tiles in both directions, and its
# rows are padded to 72 columns (`ld`), with a guard row below, so a stray write would show. Without a
# GPU here the kernel's PTX runs in bwlab's emulator; the cell also compares the model with what an H100
# returned for the same inputs:

# %% tags=["nbval-ignore-output"]
p = E.teach_problem(150, 70)
acc, _, d0 = p.random_inputs(np.random.default_rng(0))
case = E.Epilogue(p, acc, None, d0, kernel="teach_store.cu")   # the teaching kernel (your %%cuda edit, if any)
print(case.results())   # this GPU or the PTX emulator, then the H100's recording of the same inputs
print("expected: all 10872 elements (151 rows x 72, padding and guard row included) equal the model")

# %% [markdown]
# The harness kernel behind the validation, `epilogue_tile` in `cuda_src/tma_store.cu`, does the same
# for every D type and swizzle, with C brought in by a TMA load and with the reduce-add (section 7).
#
# **Change it.** `k.replace(old, new)` returns an edited copy; `.compile()` builds it (no GPU needed)
# and a compile error comes back on the line of your text it refers to; `E.Epilogue(p, acc, None, d0,
# kernel=mine)` runs your version. (For bigger changes: `%load_ext bwlab.lab`, then a cell starting
# with `%%cuda teach_store.cu` holding your whole kernel; a case built with `kernel="teach_store.cu"`
# then runs it.) A missing semicolon:

# %%
try:
    k.replace("bulk_commit_group();", "bulk_commit_group()").compile()
except CompileError as err:
    print(str(err).split("--- where ---")[-1].strip())

# %% [markdown]
# ## 2. Registers → SMEM: which thread writes which 16 bytes
#
# After `tcgen05.ld.32x32b`, thread *t* of warp *w* holds row 32·w + t, one column per register. With
# `st.shared.v4.b32` each thread writes 16 bytes of its row per instruction: 4 fp32 or 8 bf16 columns.
# So one instruction of a warp writes the **same 16 bytes (4 fp32 or 8 bf16 columns) of 32 different
# rows**.
#
# Shared memory has 32 banks of 4 bytes (byte address *a* is in bank *a*/4 mod 32) and serves 128
# bytes per wavefront. A warp's access of W bytes per thread is served in W/4 phases of 128/W
# consecutive lanes, so a 16-byte `st.shared.v4` goes in four quarter-warps of 8 lanes. A phase costs
# as many wavefronts as the largest number of distinct 4-byte words it needs from one bank: a
# conflict-free `st.shared.v4` costs 4. (Sources: the CUDA C++ Programming Guide, "Shared Memory";
# Nsight Compute's guide on shared-memory wavefronts. `E.BANK_RULE` states the model in full; the GPU
# cells below measure its predictions.) Thirty-two lanes writing 32 consecutive 16-byte chunks:

# %%
r = E.wavefronts(16 * np.arange(32), width=16)
print(f"{len(r.phases)} phases of {len(r.phases[0])} lanes, {r.wavefronts} wavefronts   (expected 4 of 8, 4)")

# %% [markdown]
# A 32-column fp32 tile has 128-byte rows. Without a swizzle, rows 0..7 of one phase all start at a
# multiple of 128 bytes: the eight lanes of every phase hit the **same four banks** with eight different
# words — 8 wavefronts per phase, 32 per instruction instead of 4.

# %%
plain = RegisterStorePlan(SmemTile(128, 32, "float32", "none"), "row_per_thread", warp=0)
plt.close("all")
E.plot_bank_phases(plain, step=0)
plt.show()
print(plain.summary())
print("expected: 8 steps x 32 wavefronts = 256, conflict-free would be 8 x 4 = 32")

# %% [markdown]
# With the **128-byte swizzle** (the layout a `CU_TENSOR_MAP_SWIZZLE_128B` store expects), 16-byte chunk
# *j* of row *r* lives at chunk *j ⊕ (r mod 8)*: the eight rows of a phase land in eight different
# chunks, i.e. all 32 banks. Same registers, same instruction count, an eighth of the wavefronts.

# %%
swz = RegisterStorePlan(SmemTile(128, 32, "float32", "128B"), "row_per_thread", warp=0)
E.plot_bank_phases(swz, step=0)
plt.show()
print(swz.summary())
print("expected: 32 wavefronts (conflict-free)")

# %% [markdown]
# Where each thread's 16 bytes end up, in SMEM address order (the diagonal pattern *is* the swizzle):

# %%
E.plot_writer_map(swz, lines=16)
plt.show()

# %% [markdown]
# The same comparison for other layouts. `chunk_per_thread` (consecutive lanes write consecutive chunks
# of one row) is conflict-free without a swizzle, but the accumulators are not distributed that way
# after `tcgen05.ld`; the swizzle gets the same cost without moving data between threads.

# %%
for tile in (SmemTile(128, 32, "float32", "none"), SmemTile(128, 32, "float32", "128B"),
             SmemTile(128, 64, "bfloat16", "none"), SmemTile(128, 64, "bfloat16", "128B"),
             SmemTile(128, 64, "bfloat16", "64B"), SmemTile(128, 32, "float32", "32B")):
    for mapping in ("row_per_thread", "chunk_per_thread"):
        print(RegisterStorePlan(tile, mapping, warp=1).summary())


# %% [markdown]
# ### Exercise 5.1 — the wavefronts of a store pattern (3 points)
#
# Write `my_wavefronts(addresses)`: the shared-memory wavefronts of one `st.shared.v4` of a warp in which
# lane *i* writes the 16 bytes at byte address `addresses[i]` (a NumPy array of 32 multiples of 16, every
# lane active), by the rule at the top of this section. Predict before you run: what does it give for
# rows padded to 36 fp32 columns (lane *i* at `144 * i`), and for all 32 lanes writing the same 16 bytes?
# The check calls it on this section's patterns, then on many more.

# %% nbgrader={"grade": false, "grade_id": "store_wavefronts", "locked": false, "schema_version": 3, "solution": true}
def my_wavefronts(addresses):
    """Wavefronts of one st.shared.v4: lane i writes 16 bytes at addresses[i]."""
    ### BEGIN SOLUTION
    total = 0
    for phase in range(4):                          # four quarter-warps of 8 lanes
        words = set()
        for a in addresses[8 * phase: 8 * phase + 8]:
            words.update(range(int(a) // 4, int(a) // 4 + 4))   # 16 bytes = 4 words, 4 banks
        per_bank = [0] * 32
        for w in words:
            per_bank[w % 32] += 1
        total += max(per_bank)
    return total
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "store_wavefronts_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.epilogue import exercises as ex
ex.check_wavefronts(my_wavefronts)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_wavefronts(my_wavefronts, hidden=hidden_cases("store_wavefronts"))
### END HIDDEN TESTS

# %% [markdown]
# **On the GPU.** `smem_store_cycles` times 16 × `st.shared.v4` per loop in four warps with `clock64`
# for a given lane-address pattern. If the model is right, the cycles per instruction should grow with
# the model's wavefronts.

# %% tags=["nbval-ignore-output"]
patterns = E.bank_patterns()
cycles, source = E.bank_cycles()      # measured on this GPU, else the H100's (the emulator's clock is virtual)
print(f"cycles per st.shared.v4, {source}")
for (name, (addr, fronts)), cyc in zip(patterns.items(), cycles):
    print(f"{name:<46s} model {fronts:3d} wavefronts   measured {cyc:6.2f} cycles")
print("expected: the measured cycles track the wavefronts (on the H100, wavefronts + under one cycle)")

# %% [markdown]
# **Change it: leave the swizzle out.** Set `SWIZZLE_BITS` to 0 and the threads write every row
# unswizzled, while the tensor map still tells the TMA engine to read through the 128B swizzle. It
# compiles, and the bank conflicts it would remove come back; worse, the engine now reads row *r*'s
# chunk *j* from where the threads put chunk *j ⊕ (r mod 8)*. Row 0 (and every eighth row) is still
# right. The model of this edit (`epilogue_model(..., smem_swizzle="none")`: threads write through one
# swizzle, the engine reads through another) and the GPU, each checked against the correct result:

# %%
noswz = k.replace("SWIZZLE_BITS = 3", "SWIZZLE_BITS = 0")
print(noswz.diff())
noswz.compile()
print(case.check(E.epilogue_model(p, acc, None, d0, smem_swizzle="none"), source="the model of this edit"))

# %% tags=["nbval-ignore-output"]
print(E.Epilogue(p, acc, None, d0, kernel=noswz).results())   # compared with the correct result
print("expected: the same first difference as the model of the edit, D[1, 0]")

# %% [markdown]
# ## 3. The proxy fence
#
# `st.shared` writes through the **generic proxy**. The TMA engine reads SMEM through the **async
# proxy**, a different path to the same memory, and a barrier alone orders only generic-proxy accesses.
# The PTX ISA (9.7.9.25.2, "Async proxy"): "accessing the same memory location across multiple proxies
# needs a cross-proxy fence. For the async proxy, `fence.proxy.async` should be used." So:
#
# * every thread that wrote the tile executes `fence.proxy.async.shared::cta` after its writes;
# * then a barrier orders those fences before the one thread that issues the TMA store;
# * the other direction needs nothing: the completion of a bulk operation "is followed by an implicit
#   generic-async proxy fence" (same section).
#
# (`E.PROXY_FENCE_RULE` holds the rule, with its quotes.)

# %% [markdown]
# `EpilogueOrdering` replays an epilogue step by step and checks it against those rules. The
# canonical single-buffer epilogue passes:

# %%
e = EpilogueOrdering(buffers=("D",))
e.st_shared("D"); e.fence_proxy_async(); e.bar_sync()
e.tma_store("D"); e.commit_group(); e.wait_group_read(0)
e.exit()
print(" -> ".join(e.log))
print("hazards:", e.hazards, "(expected [])")

# %% [markdown]
# Leave the fence out and the model names what is missing:

# %%
e = EpilogueOrdering(buffers=("D",))
e.st_shared("D"); e.bar_sync()
try:
    e.tma_store("D")
except OrderingError as err:
    print("OrderingError:", err)

# %% [markdown]
# **Change it: delete the fence.** The kernel still compiles — nothing in the language requires the
# fence — but nothing in the PTX memory model says the TMA engine now sees the values the threads just
# wrote: it may read older SMEM contents (the tile a previous CTA left on this SM, or whatever was there).
# Whether that *happens* in a given run is another matter, so the next cells run the teaching kernel on a
# 2048 × 2048 D (1024 CTAs) 20 times with and 20 times without the fence and count the runs that differ
# from the model. On the H100 all 20 runs without the fence differed (about 330,000 of the 4.2 million
# elements each, the first one in the first tile) and none of the 20 with it. A count of 0 on another
# GPU would not be a licence to drop the fence: the ISA does not promise the order without it. (The
# harness kernel, measured the same way on the H100, differed in 30 of 30 runs without it.)

# %%
nofence = k.replace("    fence_proxy_async_shared_cta();\n", "")
print(nofence.diff())
nofence.compile()
print("compiles: yes")

# %% tags=["nbval-ignore-output"]
# In the emulator, which tracks which thread wrote each SMEM byte through the generic proxy, the TMA
# store reading one that no fence.proxy.async made visible is named (ProxyFenceMissing), with both
# instructions; on a GPU the run may or may not differ; without either, there is no recording of this one.
print(E.Epilogue(p, acc, None, d0, kernel=nofence).results(), "\n")
print(E.fence_experiment(nofence))    # 20 runs each way on a GPU; elsewhere the H100's


# %% [markdown]
# ### Exercise 5.2 — where a missing fence bites (2 points)
#
# Every thread of a CTA executes the same steps, in order, each one of `"st.shared"` (its part of the
# tile), `"fence.proxy.async"` (`.shared::cta`) and `"bar.sync"`; right after the last step, thread 0
# issues the TMA store of the tile. Write `my_stale(steps)`: `True` when the store may read stale
# SMEM (the rules allow the async proxy to miss a write), `False` when every write is
# guaranteed to be seen. Predict first: `["st.shared", "bar.sync", "fence.proxy.async"]`? The check
# calls it on a few sequences, then on every sequence of up to five steps.

# %% nbgrader={"grade": false, "grade_id": "store_fence", "locked": false, "schema_version": 3, "solution": true}
def my_stale(steps):
    """May the TMA store issued after `steps` read stale SMEM?"""
    ### BEGIN SOLUTION
    last_write = max(i for i, s in enumerate(steps) if s == "st.shared")
    after = steps[last_write + 1:]
    if "fence.proxy.async" not in after:
        return True                                 # the last writes are never fenced
    fence = after.index("fence.proxy.async")
    return "bar.sync" not in after[fence + 1:]      # no barrier orders the fences before the store
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "store_fence_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.epilogue import exercises as ex
ex.check_fence(my_stale)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_fence(my_stale, hidden=hidden_cases("store_fence"))
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Bulk async-groups: `wait_group.read` versus `wait_group`
#
# TMA stores complete through the issuing thread's *bulk async-groups*: each store joins the open
# group, `cp.async.bulk.commit_group` closes it, and
#
# * `cp.async.bulk.wait_group.read N` returns once at most N recent groups are still **reading their
#   SMEM source** — the buffer may be overwritten; the GMEM writes may still be in flight;
# * `cp.async.bulk.wait_group N` returns once at most N groups are pending at all — the GMEM writes are
#   done and visible to *this* thread (other threads need a barrier after it).
#
# A double-buffered epilogue overlaps the store of one tile with writing the next: before reusing a
# buffer it needs only the group from two iterations ago to have *read* it, so `wait_group.read 1`.

# %%
e = EpilogueOrdering(buffers=("D0", "D1"))
for it in range(4):
    buf = f"D{it % 2}"
    if it >= 2:
        e.wait_group_read(1); e.bar_sync()
    e.st_shared(buf); e.fence_proxy_async(); e.bar_sync()
    e.tma_store(buf); e.commit_group()
e.wait_group_read(0); e.exit()
print("\n".join(e.log))
print("hazards:", e.hazards, "(expected [])")

# %% [markdown]
# The same ring over time, one column per store, as the issuing thread knows it (the hardware may be
# done earlier, never later). To show the difference between the two waits, this version ends with
# `wait_group 0` and reads D back, instead of `wait_group.read 0` and exit. Orange: the store may still
# read its SMEM buffer, so the buffer may not be written. Each `wait_group.read 1` turns the older
# store light blue: its buffer is free, but its GMEM writes may still be in flight. Only `wait_group 0`
# turns the stores green, and only then may the issuing thread read D.

# %%
ring = EpilogueOrdering(buffers=("D0", "D1"))
for it in range(4):
    buf = f"D{it % 2}"
    if it >= 2:
        ring.wait_group_read(1); ring.bar_sync()
    ring.st_shared(buf); ring.fence_proxy_async(); ring.bar_sync()
    ring.tma_store(buf); ring.commit_group()
ring.wait_group(0); ring.read_gmem("D1"); ring.exit()
E.plot_bulk_groups(ring)
plt.show()
print("hazards:", ring.hazards, "(expected [])")


# %% [markdown]
# The misuses the model catches, each with the rule it breaks:

# %%
def attempt(title, steps):
    e = EpilogueOrdering(buffers=("D",))
    try:
        steps(e)
        print(f"{title}: no hazard")
    except OrderingError as err:
        print(f"{title}:\n    {err}")

def base(e):
    e.st_shared("D"); e.fence_proxy_async(); e.bar_sync(); e.tma_store("D")

attempt("overwrite without waiting", lambda e: (base(e), e.commit_group(), e.st_shared("D")))
attempt("wait without commit", lambda e: (base(e), e.wait_group(0)))
attempt("read GMEM after wait_group.read", lambda e: (base(e), e.commit_group(), e.wait_group_read(0),
                                                      e.read_gmem("D")))
attempt("exit with the store still reading", lambda e: (base(e), e.commit_group(), e.exit()))
attempt("wait_group_read(-1)", lambda e: (base(e), e.commit_group(), e.wait_group_read(-1)))


# %% [markdown]
# ### Exercise 5.3 — `wait_group.read` in a ring of buffers (2 points)
#
# The double-buffered epilogue above generalises to a ring of `stages` SMEM buffers: tile *i* is written
# into buffer *i* % `stages`, stored and committed as one bulk group; before rewriting a buffer, the
# issuing thread executes `cp.async.bulk.wait_group.read N` and the CTA meets at a barrier. Write
# `my_max_read_wait(stages)`: the largest N that is still safe. (A smaller N is safe too, but it keeps
# fewer stores in flight.) The check replays each ring on `EpilogueOrdering`.

# %% nbgrader={"grade": false, "grade_id": "store_wait_ring", "locked": false, "schema_version": 3, "solution": true}
def my_max_read_wait(stages):
    """The largest N of wait_group.read before rewriting a buffer of a ring of `stages`."""
    ### BEGIN SOLUTION
    return stages - 1      # only the group that last read this buffer (stages groups ago) must be done
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "store_wait_ring_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.epilogue import exercises as ex
ex.check_ring_wait(my_max_read_wait)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_ring_wait(my_max_read_wait, hidden=hidden_cases("store_wait_ring"))
### END HIDDEN TESTS

# %% [markdown]
# ## 5. The tile store: the inverse of the load
#
# A TMA store with the same tensor map and coordinates sends every SMEM byte back to the GMEM byte a
# TMA load would have brought to that SMEM address, swizzle included (`tma_store_model` is built that
# way). Load a box, store it into an empty buffer, and exactly the box comes back:

# %%
rng = np.random.default_rng(5)
t = TensorMap("bfloat16", (100, 70), (64, 40), global_strides=(224,), swizzle="128B")
g = rng.integers(0, 1 << 16, (70, 112)).astype(np.uint16)
smem = tma_load_model(g, t, (0, 8), smem_address=1024)
out = tma_store_model(np.zeros_like(g), t, (0, 8), smem, smem_address=1024)
print("box rows 8..47, cols 0..63 restored:", np.array_equal(out[8:48, :64], g[8:48, :64]), "(expected True)")
print("everything else still zero:", int(np.count_nonzero(out)) == 40 * 64, "(expected True)")

# %% [markdown]
# In SMEM the same 16-byte chunk sits at a different place for each swizzle; `SmemTile` computes it
# exactly as the TMA engine does, from the SMEM address:

# %%
for mode in ("none", "32B", "64B", "128B"):
    tile = SmemTile(8, {"none": 64, "32B": 16, "64B": 32, "128B": 64}[mode], "bfloat16", mode, base=1024)
    chunks = [int(tile.address(3, 8 * j) - tile.base - 3 * tile.box_row_bytes) // 16
              for j in range(tile.box_row_bytes // 16)]
    print(f"{mode:5s} row 3: logical chunks 0..{len(chunks) - 1} stored at chunks {chunks}")
print("expected: none and 32B unchanged (a 32-byte row 3 lies in the first 128-byte line, which the 32B "
      "pattern leaves as it is); 64B: j ^ 1; 128B: j ^ 3")


# %% [markdown]
# ### Exercise 5.4 — where a staged element sits (2 points)
#
# A D tile one swizzle row wide (`row_bytes` = 32, 64 or 128 bytes per row: 8, 16 or 32 fp32 columns)
# is staged row after row from a 1024-byte aligned base, through the swizzle the tensor map names. Write
# `my_offset(row, col, elem_bytes, swizzle)`: the byte offset from the base of element (`row`, `col`)
# (`elem_bytes` 4 or 2; `swizzle` `"32B"`, `"64B"` or `"128B"`), without `SmemTile`. Predict first:
# where does element (1, 0) of the teaching kernel's tile (fp32, 128B) sit? The check calls it on a few
# elements, then on many more.

# %% nbgrader={"grade": false, "grade_id": "store_swizzle_offset", "locked": false, "schema_version": 3, "solution": true}
def my_offset(row, col, elem_bytes, swizzle):
    """Byte offset of element (row, col) of a staged tile one swizzle row wide."""
    ### BEGIN SOLUTION
    row_bytes = {"32B": 32, "64B": 64, "128B": 128}[swizzle]
    bits = {"32B": 1, "64B": 2, "128B": 3}[swizzle]
    a = row * row_bytes + col * elem_bytes            # the address before the swizzle
    return a ^ (((a >> 7) & ((1 << bits) - 1)) << 4)  # chunk ^= which 128-byte line (Swizzle<B,4,3>)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "store_swizzle_offset_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.epilogue import exercises as ex
ex.check_staged_offset(my_offset)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_staged_offset(my_offset, hidden=hidden_cases("store_swizzle_offset"))
### END HIDDEN TESTS

# %% [markdown]
# One more thing the H100 showed: with a swizzle, a box narrower than the swizzle span does **not** sit
# packed in SMEM. Each of its rows takes a whole swizzle row (32, 64 or 128 bytes), so a 16-byte-wide box
# with the 128B swizzle occupies 128 bytes per row. `smem_box_pitch` says so, and the model reads the
# box that way:

# %%
narrow = TensorMap("float32", (64, 32), (4, 32), swizzle="128B")
print("box", narrow.box_shape, "=", narrow.box_bytes, "bytes of data; SMEM row pitch",
      E.smem_box_pitch(narrow), "-> footprint", E.smem_box_footprint(narrow), "bytes (expected 128 and 4096)")

# %% [markdown]
# ### Exercise 5.5 — the coordinates of the teaching kernel's store (2 points)
#
# In `teach_store.cu` the line `tma_store_2d(&tmap_d, tile, n0, m0);` becomes
# `tma_store_2d(&tmap_d, tile, X, Y);`. Give `my_store_coords = ("X", "Y")`: two C expressions of
# `blockIdx.x`, `blockIdx.y`, `BM` and `BN` (not the kernel's own `n0` and `m0`: the check refuses the
# line as written) that store each CTA's tile where `D = acc` puts it. Which coordinate comes first, and
# does it count elements, bytes or tiles? Predict before you run what `("blockIdx.y * BM", "blockIdx.x * BN")`
# or `("blockIdx.x", "blockIdx.y")` would write. The check puts your expressions into the kernel and
# compiles it (a compile error shows your line); the model then stores every CTA's tile at your
# coordinates, and D is compared with the epilogue's model, naming the first differing element. On an
# sm_90 GPU the edited kernel also runs, in a worker process.

# %% nbgrader={"grade": false, "grade_id": "store_kernel_coords", "locked": false, "schema_version": 3, "solution": true}
my_store_coords = None   # ("X", "Y"): C expressions for the TMA store's coordinates
### BEGIN SOLUTION
my_store_coords = ("blockIdx.x * BN", "blockIdx.y * BM")
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "store_kernel_coords_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["nbval-ignore-output", "raises-exception"]
from bwlab.epilogue import exercises as ex
ex.check_store_coords(my_store_coords)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_store_coords(my_store_coords, hidden=hidden_cases("store_kernel_coords"))
### END HIDDEN TESTS

# %% [markdown]
# ## 6. Edge tiles
#
# A 20 × 27 fp32 D (108-byte rows, padded to ld = 28) with 8 × 16 tiles: the last tile column and row
# hang over the matrix. The CTAs store whole boxes anyway, and the TMA engine does not write the whole
# box: rows past the tensor's last row (dims 27 × 20 in the tensor map) are skipped exactly. Columns
# are not: on the H100 **dimension 0 is written in whole 16-byte granules** (`E.STORE_GRANULE`), and
# the model follows. Column 27 (bytes 108..111 of a row) shares a granule with columns 24..26, so the
# store overwrites it with whatever the box holds there (hatched below); the row after the matrix is
# left alone. Padding that shares a 16-byte granule with the last column is therefore not safe from a
# TMA store. The colours come from the store model (`store_coverage`), not from a drawing.

# %%
edge_p = EpilogueProblem(20, 27, "float32", bm=8, bn=16, swizzle="none")   # its own name: section 1's p stays
E.plot_edge_tiles(edge_p)
plt.show()
cov = E.store_coverage(edge_p)
print("written elements:", int((cov >= 0).sum()), " expected 20 * 28 = 560 (27 columns + the one sharing their last chunk)")
print("column 27 written:", bool((cov[:20, 27] >= 0).all()), " guard row 20 untouched:", bool((cov[20] < 0).all()))

# %% [markdown]
# The same thing for one store on the GPU: a 16 × 8 box stored at (x, y) = (16, 16) into a buffer filled
# with −1. The box's rows 20..23 lie past the tensor's last row, its columns 27..31 past the last column.
# `TmaStore.run()` stores it (between guard zones that must stay untouched); without a GPU here, the cell
# shows what an H100 wrote:

# %% tags=["nbval-ignore-output"]
edge = E.edge_store_case()
results = edge.results()               # this GPU or the PTX emulator, then the H100's recording
print(results)
got = next(r.value for r in results.results if r.value is not None)   # a live run that raised has none: its recording
print("rows 16..20, columns 23..27 (column 27 is padding, row 20 the guard row):")
print(got[16:21, 23:28])
print("expected: row 16 holds the box's values 8..12 (box row 0, columns 7..11), each next row 16 more; "
      "the padding column 27 is written too (12, 28, 44, 60); the guard row 20 keeps -1")

# %% [markdown]
# That store element by element, from the store model: above, the box as it sits in SMEM (values 1, 2,
# 3, … in box order), each element coloured by what the store does with it; below, GMEM around the edge
# after the store, each cell showing the value written there, so a number names the box element it
# came from: the store writes the box's rows 0..3 up to column 27 (padding included) and drops the
# rest, the columns past column 27's granule and the four rows past row 19.

# %%
edge = E.edge_store_case()
E.plot_edge_store(edge)
plt.show()
after = edge.model()
print("GMEM elements the store writes:", int((after != edge.gmem).sum()), "of the box's", edge.tmap.box_shape[0]
      * edge.tmap.box_shape[1], "(expected 48 of 128: 4 rows x 11 columns inside the tensor, + column 27 of each)")

# %% [markdown]
# `TmaStore` is one store as a case object: `model()` is the GMEM buffer afterwards, `run()` the same
# on the GPU, and `check(got)` compares a result with the model and names the first differing element
# by its coordinates, says whether it lies inside the tensor or in its padding, which 16-byte granule
# of its row it is in, and which rule was most likely broken. Here a result in which the padding
# column was left alone, as if stores stopped at the last column:

# %%
t = TensorMap("float32", (27, 20), (16, 8), global_strides=(112,))
case = E.TmaStore(np.zeros((20, 28), np.float32), t, (16, 8), np.ones(1024, np.float32))
got = case.model()
got[8:16, 27] = 0                                # the padding column untouched
print(case.check(got))

# %% [markdown]
# A store's box must *start* inside the tensor (non-negative coordinates: PTX ISA, restrictions on the
# `.global.shared::cta` direction), and on the H100 it must start on a 16-byte boundary of the row: a
# store from a misaligned start stopped the kernel with an illegal instruction. The model refuses both,
# naming the rule:

# %%
try:
    tma_store_model(np.zeros(64 * 8, np.float32), TensorMap("float32", (64, 8), (32, 8)), (-4, 0),
                    np.zeros(1024, np.uint8))
except ValueError as err:
    print("ValueError:", err)
try:
    tma_store_model(np.zeros(64 * 8, np.float32), TensorMap("float32", (64, 8), (32, 8)), (2, 0),
                    np.zeros(1024, np.uint8))
except ValueError as err:
    print("ValueError:", err)

# %% [markdown]
# Every rule the store model follows or enforces, whatever tensor map encodes the store, is one row of
# `E.STORE_RULES`: where a box may start (at non-negative coordinates, on a 16-byte boundary of the row),
# where its SMEM source must sit (128-byte aligned), how the edge is written (whole 16-byte granules of
# dimension 0), how a narrow swizzled box is laid out, which types a reduce-add takes, and what the
# model covers. Each row names its source — a PTX ISA section, the CUDA guide, a measurement on the
# H100, or `bwlab` for what this model and kernel cover — and every refusal names its row. (The tensor
# map's own rules, from `cuTensorMapEncodeTiled`, live with `TensorMap`.) The rule names and limits:

# %%
for r in E.STORE_RULES.values():
    print(f"{r.name:<21s} {r.limit:<40s} [{r.kind}]")

# %% [markdown]
# ## 7. D = α·acc + β·C, and the reduce-add
#
# With β ≠ 0 the kernel first brings the C tile into SMEM with a TMA load (an mbarrier, a bounded wait),
# reads it back with `ld.shared.v4` through the same swizzle, and computes each element in fp32 with every
# step rounded on its own (`__fmul_rn`, `__fadd_rn`), then converts with `cvt.rn`. The model does the same:

# %%
from bwlab.hw.dtypes import from_float, to_float
acc = np.array([[1.0, 2.5, -3.0, 1e-3]], np.float32)
c = from_float(np.array([[0.5, 0.5, 0.5, 0.5]]), "bfloat16")   # bf16 bits, rounded as cvt.rn does
d = E.epilogue_alpha_beta(acc, alpha=2.0, beta=-1.0, c_bits=c, dtype="bfloat16")
print("D =", to_float(d, "bfloat16"), " expected [1.5, 4.5, -6.5, -0.498...] rounded to bf16")
print("bits:", [hex(x) for x in d.ravel()])

# %% [markdown]
# `cp.reduce.async.bulk.tensor ... .add` adds the SMEM tile onto GMEM instead of overwriting it (split-K
# and stream-K reductions use it). Element types: `.u32 .s32 .u64 .f32 .f16 .bf16`. It covers what the
# store covers: rows past the edge are skipped, and padding that shares the 16-byte granule of a row's
# last element is added to as well.

# %%
t = TensorMap("float32", (6, 2), (4, 2), global_strides=(32,))
g = np.arange(16, dtype=np.float32)               # two rows of 8 (6 in the tensor + 2 padding)
tile = np.full(8, 100.0, np.float32)
print(tma_reduce_add_model(g, t, (4, 0), tile.view(np.uint8)).reshape(2, 8))
print("expected: columns 4..7 of both rows + 100: 6 and 7 are padding (the tensor is 6 wide) but share the "
      "16-byte chunk of columns 4 and 5")

# %% [markdown]
# ## 8. The GPU beside the model
#
# `run_epilogue` takes the same `EpilogueProblem` and inputs as `epilogue_model` and returns the whole D
# buffer (padding and guard row included), so the comparison is one line. Every D type and swizzle,
# with C and without, a reduce-add, all with edge tiles:

# %% tags=["nbval-ignore-output"]
for result in E.gpu_vs_model():          # on the GPU or in the emulator here, beside the H100's recording
    print(result)
print("expected: all equal. The H100 validation (>= 500 random stores and reduce-adds, 60 whole "
      "epilogues): python -m bwlab.validate store --cases 500 --seed 0")

# %% [markdown]
# ## 9. Bandwidth: TMA store versus `st.global.v4` and CuPy
#
# `python -m bwlab.bench tma_store` writes a 256 MiB fp32 matrix with the TMA store (each CTA stores one
# 32 KiB box again and again), with a plain kernel of 16-byte `st.global.v4` stores, and with CuPy's
# fill and copy, in the same run (CUDA events, warm-up, median). Without a GPU here the cell shows the
# H100's report, with the command that made it.

# %% tags=["nbval-ignore-output"]
if device.on_gpu("store"):   # timings need the GPU itself
    from bwlab.checks.store import bench_main
    bench_main(["--protocol", "quick", "--rows", "8192", "--cols", "8192", "--repeat", "10"])
else:
    from bwlab.results import report_text
    report = report_text("store_bench_h100.txt").splitlines()
    print("recorded on an NVIDIA H100 80GB HBM3 (docs/results/store_bench_h100.txt):")
    print("\n".join(report[1:12] + [""] + report[-7:-5]))

# %% [markdown]
# Reading the H100's numbers: the TMA store writes at 2.69–2.71 TB/s whatever the number of CTAs per SM:
# one thread per CTA issuing stores comes within 5–6 % of 256 threads per CTA each storing 16 bytes
# (`st.global.v4`, 2.84–2.86 TB/s) and within 7–8 % of CuPy's fill (2.92). The `epilogue_tile` rows move
# the accumulator in as well as D out, at 1.28 TB/s (fp32 D) — under half of CuPy's copy (2.75 TB/s) for
# the same traffic. That kernel is the validation harness, not a tuned epilogue: each thread reads its own
# row of the accumulator from global memory (the `tcgen05.ld` mapping standing in, so a warp's 32 loads
# fall in 32 different rows), and each CTA does one tile with no overlap between reading, the barrier and
# the store; which of these costs what is not measured here.

# %% [markdown]
# ## 10. Peek under the hood
#
# The PTX of the teaching kernel (NVRTC, sm_90a): eight `st.shared.v4.b32` per thread (the XOR of the
# swizzle is computed before each), `fence.proxy.async.shared::cta`, then (after the barrier) the store
# `cp.async.bulk.tensor.2d.global.shared::cta.bulk_group`, `commit_group` and `wait_group.read 0`.

# %% tags=["nbval-ignore-output"]
print(k.compile("sm_90a").ptx_excerpt("teach_store"))

# %% [markdown]
# ## Recap
#
# * Registers → SMEM: after `tcgen05.ld .32x32b` each thread holds a row; `st.shared.v4` writes 16 bytes
#   of it, and a warp's instruction touches the same 16 bytes (4 fp32 / 8 bf16 columns) of 32 rows. The 128B swizzle spreads those
#   rows over all 32 banks (4 wavefronts instead of 32), and the threads must write through exactly the
#   swizzle the tensor map names, or the store sends chunks to the wrong columns.
# * `fence.proxy.async.shared::cta` in every writing thread, then a barrier, before one thread issues
#   the TMA store: the store reads SMEM through the async proxy.
# * The store is the inverse of the load. Rows past the edge are skipped; dimension 0 is written in whole
#   16-byte granules, so padding that shares a row's last granule is overwritten.
# * `commit_group` closes a bulk async-group; `wait_group.read N` lets the SMEM be reused (or the CTA
#   exit), `wait_group N` waits for the GMEM writes themselves.
#
# **Next:** notebook 06 puts the stages together: TMA loads (with multicast) feed the MMA, the
# accumulator goes from TMEM to registers, and this epilogue writes D.
