# %% [markdown]
# # 01 · The TMA load: tensor maps, the mbarrier handshake, swizzle, out-of-bounds fill
#
# The first hop of the data path: a tile of a matrix goes from global memory (GMEM) to shared memory
# (SMEM). On Hopper and Blackwell one thread asks the **Tensor Memory Accelerator** for a whole *box*
# with one instruction, `cp.async.bulk.tensor`, and carries on; the bytes arrive asynchronously and an
# **mbarrier** in SMEM tells every thread when they are all there.
#
# **Before this notebook:** `00_orientation` — the four tiers, a bulk copy completed through an
# mbarrier, and bounded waits (a wait that gives up raises `MbarrierTimeout` instead of hanging). You
# should know what a CUDA thread block (CTA) and shared memory are.
#
# **Words used here** (from the PTX ISA and CUTLASS's CuTe, so they carry over):
# - *tensor map* — 128 bytes describing a tensor in GMEM, built on the host (`cuTensorMapEncodeTiled`;
#   CuTe builds it in `make_tma_copy`);
# - *box* — the block of the tensor one load copies; its *coordinates* are the element indices of its
#   first element, innermost dimension first (dim 0 is the contiguous one);
# - *mbarrier*, *expect_tx*, *complete_tx* — the barrier in SMEM that counts arrivals and bytes (section 3);
# - *swizzle* — the permutation of 16-byte chunks the TMA applies as it writes SMEM (CuTe writes it
#   `Swizzle<B,M,S>`: XOR B address bits starting at bit M+S into the B bits starting at bit M).
#
# What you will see: the tensor map; how a grid of CTAs covers the matrix one box each; the mbarrier
# handshake step by step; the **teaching kernel** that does it, which you can change and run again; how
# the swizzle scatters chunks over SMEM and why (bank conflicts); what happens to a box that hangs off
# the edge; and the GPU's own SMEM bytes compared with bwlab's model byte for byte.
#
# **Runs on:** any machine. The next cell says what runs the TMA stage here: on an sm_90+ GPU the kernels
# run live; without one, bwlab's PTX emulator runs the same kernels. Beside each result: what an H100
# produced (recorded bytes, labelled with where and when), both compared with the model computed now.
#
# **Exercises:** this notebook holds 5 graded exercises (11 points), each right after the section it asks
# about; one of them edits the teaching kernel and runs it. Write your answer in the cell marked for it, then
# run the check below it: a wrong answer says what the hardware's rule gives and why.
# A check prints `correct:` when your answer is right; `checked:` when it agrees on every case tried here
# and the graded version tries more of its own; a wrong answer stops with `NotYet`, the rule and a hint.

# %% tags=["nbval-ignore-output"]
import bwlab
from bwlab import device
bwlab.banner()
device.where("tma", print_it=True);

# %% [markdown]
# ## 1. The tensor map
#
# `cuTensorMapEncodeTiled` packs the description of a tensor into 128 opaque bytes: the element type,
# the size of each dimension (innermost first: dim 0 is the contiguous one), the byte stride of every
# other dimension, the *box* one load copies, the element strides inside the box, the swizzle, the
# interleave (an older packed layout for convolutions; "none" here), the L2 promotion (how much the load
# asks L2 to fetch around each request) and the out-of-bounds fill. `bwlab.tma.TensorMap` holds the same
# fields and checks every rule of the driver before anything reaches it.
#
# Our example: a bf16 matrix of 48 rows × 80 columns, loaded in boxes of 16 rows × 32 columns.

# %%
import numpy as np
from bwlab import tma
from bwlab.tma import TensorMap, tma_load_model

tmap = TensorMap("bfloat16", global_shape=(80, 48), box_shape=(32, 16))
print(tmap.describe())
print(f"\nbox bytes (expect_tx): {tmap.box_bytes}   expected 32 * 16 * 2 = {32 * 16 * 2}")

# %% [markdown]
# The rules live in one table, `bwlab.tma.rules.RULES`: each row has the rule's name, its limit, the
# parameter of `cuTensorMapEncodeTiled` (or the PTX ISA section) that states it, and a check.
# Break a rule and the error names it, with the values and the limit, before any driver call. Three classics:
# a box row that is not a multiple of 16 bytes, a box wider than its swizzle span, and NaN fill on
# an integer type.

# %%
for kwargs in (dict(dtype="bfloat16", global_shape=(80, 48), box_shape=(12, 16)),
               dict(dtype="bfloat16", global_shape=(80, 48), box_shape=(32, 16), swizzle="32B"),
               dict(dtype="int32", global_shape=(80, 48), box_shape=(32, 16), oob_fill="nan")):
    try:
        TensorMap(**kwargs)
    except tma.TensorMapError as e:
        print(e)

# %% [markdown]
# ### Exercise 1.1 — which rule does it break? (2 points)
#
# Seven tensor maps, your own (each student has their own seven). For each, predict the name of the rule
# `TensorMap` refuses it with (the name in square brackets of the errors above, one of the names printed below
# with its limit), or `"legal"`. Work it out from the rules — the element size, the 16-byte multiples, the
# swizzle span, the limits of a box — before you try `TensorMap(**kwargs)`.

# %%
from bwlab.tma import exercises as tma_ex
for key, kwargs in tma_ex.rule_candidates().items():
    print(f"{key}: {kwargs}")
print("\nthe rules, each with its limit:")
for r in tma.RULES:
    print(f"  {r.name:24s} {r.limit}")

# %% nbgrader={"grade": false, "grade_id": "tma_broken_rule", "locked": false, "schema_version": 3, "solution": true}
my_rules = {"a": ..., "b": ..., "c": ..., "d": ..., "e": ..., "f": ..., "g": ...}
### BEGIN SOLUTION
from bwlab.hw import element_type
from bwlab.tma import exercises as tma_ex


def broken_rule(dtype, global_shape, box_shape, swizzle="none", oob_fill="zero"):
    """The rules these maps can break, in the order of the table."""
    t = element_type(dtype)
    if global_shape[0] * t.bytes % 16:
        return "global-stride-multiple"      # the packed stride of a row is the row's bytes
    if not all(1 <= b <= 256 for b in box_shape):
        return "box-dim"
    if box_shape[0] * t.bytes % 16:
        return "box-inner-bytes"
    span = {"none": 0, "32B": 32, "64B": 64, "128B": 128}[swizzle]
    if span and box_shape[0] * t.bytes > span:
        return "swizzle-span"
    if oob_fill == "nan" and not t.is_float:
        return "oob-fill-nan"
    return "legal"


my_rules = {key: broken_rule(**kwargs) for key, kwargs in tma_ex.rule_candidates().items()}
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "tma_broken_rule_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.tma import exercises as tma_ex
tma_ex.check_broken_rule(my_rules)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
tma_ex.check_broken_rule(my_rules, hidden=hidden_cases("tma_broken_rule"))
### END HIDDEN TESTS

# %% [markdown]
# ## 2. One box per CTA
#
# A GEMM gives each CTA one tile. With a 3 × 3 grid, CTA `(blockIdx.x, blockIdx.y)` loads the box at
# coordinates `(32 · x, 16 · y)`. 80 is not a multiple of 32, so the right-hand column of boxes hangs
# 16 columns off the matrix; the TMA fills those with zeros (section 7), so the kernel needs no
# special case for the edge.

# %%
import matplotlib.pyplot as plt
tiles, owner, grid = tma.cta_tiles(tmap)
print("CTA grid:", grid, "  expected (ceil(80/32), ceil(48/16)) =", (-(-80 // 32), -(-48 // 16)))
tma.plot_cta_tiles(tmap)
plt.show()

# %% [markdown]
# ## 3. The mbarrier handshake
#
# A load takes four steps:
#
# 1. thread 0: `mbarrier.init(count = 1)` — one arrival completes a phase;
# 2. thread 0: `mbarrier.arrive.expect_tx(box_bytes)` — arrives *and* raises the transaction count (tx);
# 3. thread 0: `cp.async.bulk.tensor.2d ... [smem], [tmap, {c0, c1}], [mbar]` — the TMA engine reports
#    every byte it writes with `complete_tx`, counting tx back down;
# 4. every thread: `mbarrier.try_wait.parity(0)` until phase 0 has completed: pending arrivals **and**
#    tx both zero.
#
# The timeline below is computed by `bwlab.hw.mbarrier.Mbarrier`, a small model of that state machine.
# How finely the hardware splits its `complete_tx` is not architectural; only the total is, so it is
# drawn in four parts.

# %%
tma.plot_handshake(tmap.box_bytes, pieces=4)
plt.show()

# %% [markdown]
# Announce 16 bytes more than the box holds and tx never reaches zero: the phase never completes. In a
# real kernel that is a hang; bwlab's waits are bounded (`mbarrier_wait` gives up after 200 ms and the
# host raises `MbarrierTimeout` naming the barrier). Section 5 makes this mistake in a real kernel.

# %%
tma.plot_handshake(tmap.box_bytes, pieces=4, extra_tx=16)
plt.show()
last = tma.handshake_events(tmap.box_bytes, pieces=4, extra_tx=16)[-1]
print(f"after every byte arrived: tx-count = {last[3]} (expected 16), phase 0 complete: {last[5]} (expected False)")

# %% [markdown]
# ### Exercise 1.2 — the transaction bytes of a box (2 points)
#
# Write `my_tx_bytes(dtype, box_shape, swizzle)`: the bytes `arrive.expect_tx` must announce for one load of
# a box of `box_shape` elements (innermost first, rank 1 to 5) of element type `dtype`, under `swizzle`
# (`"none"`, `"32B"`, `"64B"`, `"128B"`). Use `element_type(dtype).bytes`, not a `TensorMap`. The check tries the
# box of section 1 and a 16 × 8 float16 box under the 128B swizzle; the hidden tests try other types, ranks
# and swizzles.

# %% nbgrader={"grade": false, "grade_id": "tma_tx_bytes", "locked": false, "schema_version": 3, "solution": true}
from bwlab.hw import element_type

def my_tx_bytes(dtype, box_shape, swizzle="none"):
    """Bytes one TMA load of this box reports to its mbarrier (what expect_tx announces)."""
    ### BEGIN SOLUTION
    n = element_type(dtype).bytes
    for b in box_shape:
        n *= b
    return n
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "tma_tx_bytes_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.tma import exercises as tma_ex
tma_ex.check_tx_bytes(my_tx_bytes)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
tma_ex.check_tx_bytes(my_tx_bytes, hidden=hidden_cases("tma_tx_bytes"))
### END HIDDEN TESTS

# %% [markdown]
# ## 4. What lands in SMEM: the model
#
# `tma_load_model(gmem, tmap, coords, smem_address)` returns the bytes of the box as they sit in SMEM.
# Without swizzle that is just the box, row after row — the same as NumPy slicing:

# %%
rng = np.random.default_rng(0)
gmem = rng.integers(0, 2**16, size=(48, 80), dtype=np.uint16)  # bf16 bit patterns, rows = dim 1
smem = tma_load_model(gmem, tmap, (32, 16)).view(np.uint16).reshape(tmap.smem_shape)
print("SMEM image shape:", smem.shape, " expected (16, 32)")
print("equals gmem[16:32, 32:64]:", np.array_equal(smem, gmem[16:32, 32:64]), " expected True")

# %% [markdown]
# ## 5. The kernel
#
# `cuda_src/teach_tma.cu` is the whole load: the four steps of section 3, then every thread copies the
# SMEM box out to GMEM so Python can look at it. The tensor map travels as a kernel parameter marked
# `const __grid_constant__`, so `&tmap` is the address of the parameter itself, not of a local copy
# (the TMA instruction takes a tensor map only in parameter, constant or global memory); each PTX instruction is one named wrapper from `cuda_src/ptx/` (`tma_load_2d`
# is `cp.async.bulk.tensor.2d`, `mbarrier_wait` the bounded `try_wait.parity` loop).

# %%
from bwlab.lab import TeachingKernel
k = TeachingKernel("teach_tma.cu")
k.show("teach_tma_load")   # the kernel function whole (k.show() adds the file's header comment)

# %% [markdown]
# `tma.TmaLoad(gmem, tmap, coords, kernel="teach_tma.cu")` is this load run by the teaching kernel: its
# `run()` encodes the tensor map for a copy of `gmem` on the GPU, launches one CTA of 128 threads and
# returns the bytes, the same array `model()` computes, so `check()` compares them byte by byte. The
# first line below says what runs it on this machine (`device.where`). `results()` gives every result there
# is — the one run here, then what an H100 returned for this very box — each compared with the model
# computed now.

# %% tags=["nbval-ignore-output"]
case = tma.TmaLoad(gmem, tmap, (32, 16), kernel="teach_tma.cu")
device.where("tma", print_it=True)
print(case.results())   # this GPU or the PTX emulator, then the H100's recording of the same box

# %% [markdown]
# ### Change it
#
# `k.replace(old, new)` returns an edited copy; `.compile()` builds it (no GPU needed), and
# `tma.TmaLoad(..., kernel=mine)` runs it. To rewrite the whole kernel instead, run `%load_ext bwlab.lab`
# once, then `%cuda --load teach_tma.cu`: a new cell appears holding `%%cuda teach_tma.cu` and the kernel.
# Change it and run it: it is compiled at once, and a case built with `kernel="teach_tma.cu"` runs it from then on (a compile error
# names the line of that cell, and the previous version stays). `%cuda --diff teach_tma.cu` shows your
# change; `%cuda --reset teach_tma.cu` undoes it. A compile error comes back on the line of your text it
# refers to — here, passing the tensor map itself where the instruction wants its address:

# %%
from bwlab.compile import CompileError
typo = k.replace("tma_load_2d(smem, &tmap,", "tma_load_2d(smem, tmap,")
try:
    typo.compile()
except CompileError as e:
    for file, line, kind, msg in e.diagnostics:
        print(f"{kind} on line {line}: {msg}\n  {line:3d} | {typo.text.splitlines()[line - 1].strip()}")

# %% [markdown]
# The mistake of section 3 compiles cleanly — no compiler can know how many bytes a box holds:

# %%
mine = k.replace("const u32 tx_bytes = box_bytes;", "const u32 tx_bytes = box_bytes + 16;")
print(mine.diff())
for arch in mine.targets:
    mine.compile(arch)
print("compiles for", ", ".join(mine.targets))

# %% [markdown]
# Run it: the TMA brings `box_bytes`, tx stops at 16, phase 0 never completes, and after 200 ms every
# thread's bounded wait gives up; the host raises `MbarrierTimeout` naming the barrier. In the emulator the
# exception also says what a GPU cannot: which warp waited on which barrier, the arrivals and the bytes it
# still expected, and whether anything in flight could still arrive. Below it, the H100's answer to the
# same edit:

# %% tags=["nbval-ignore-output"]
print(tma.TmaLoad(gmem, tmap, (32, 16), kernel=mine).results(), "\n")
print("The original kernel again, after the timeout: the context survived")
print(tma.TmaLoad(gmem, tmap, (32, 16), kernel=k).results(recording="tma_teach_bad_expect_tx"))

# %% [markdown]
# And the model's mbarrier, given the same edit, says why:

# %%
from bwlab.hw.mbarrier import Mbarrier
bar = Mbarrier(1)
bar.arrive_expect_tx(tmap.box_bytes + 16)   # the edited line
bar.complete_tx(tmap.box_bytes)             # every byte of the box has landed
print(bar, "  phase 0 complete:", bar.try_wait_parity(0), "(expected False: tx stays at 16)")

# %% [markdown]
# ### Exercise 1.3 — your expect_tx in the teaching kernel (2 points)
#
# Now a box of your own bf16 tensor map, `TensorMap("bfloat16", (80, 48), box)` (the cell below prints your
# `box`; without a token from your instructor it is 48 × 8), at coordinates `(32, 16)` of the same tensor.
# You supply a number, `my_expect_tx` (a Python int: the bytes thread 0 announces); the check puts it
# into the kernel for you, in place of `box_bytes` in the line `const u32 tx_bytes = box_bytes;` of
# `teach_tma.cu`. It compiles the edited kernel for sm_90a
# and sm_100a; on a GPU with TMA it runs it in a worker process (a timeout or a fault comes back as an
# exception, and this notebook's GPU stays usable) and compares its SMEM bytes with the model's; everywhere,
# `bwlab.hw.mbarrier.Mbarrier` runs your value and says when phase 0 completes, or that it never does.
# Before you answer, predict what 16 bytes too many does, and what half the bytes does; then try them.

# %% nbgrader={"grade": false, "grade_id": "tma_expect_tx_edit", "locked": false, "schema_version": 3, "solution": true}
from bwlab.tma import exercises as tma_ex
print("your box:", tma_ex.edit_box(), "of bfloat16 at", tma_ex.EDIT_COORDS)
my_expect_tx = None   # the bytes thread 0 announces for your box (an int)
### BEGIN SOLUTION
box = tma_ex.edit_box()
my_expect_tx = box[0] * box[1] * 2   # every element of the box, 2 bytes each
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "tma_expect_tx_edit_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["nbval-ignore-output", "raises-exception"]
from bwlab.tma import exercises as tma_ex
tma_ex.check_expect_tx_edit(my_expect_tx)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
tma_ex.check_expect_tx_edit(my_expect_tx, hidden=hidden_cases("tma_expect_tx_edit"))
### END HIDDEN TESTS

# %% [markdown]
# The validation harness (`cuda_src/tma_load.cu`, kernel `tma_load_dump`) runs the same handshake for
# every rank and option, with extra checks; sections 6–8 use it through `tma.run_tma_load`.

# %% [markdown]
# ## 6. Swizzle
#
# With a swizzle, the TMA writes each 16-byte chunk to a different place: chunk bits 4–6 of the SMEM
# address are XORed with bits 7–9 (128B mode, CuTe's `Swizzle<3,4,3>`; 64B and 32B use fewer bits:
# `Swizzle<2,4,3>`, `Swizzle<1,4,3>`). It is a function of the **SMEM address**, so the picture depends
# on where the buffer starts. A box row may be no wider than the mode's span. Each cell below is one
# 16-byte chunk of SMEM; `rK cJ` says it holds chunk J of box row K.

# %%
tma.plot_swizzle_modes("float16")
plt.show()

# %% [markdown]
# The teaching kernel of section 5, given a tensor map with `swizzle="128B"` and a box of 64 bf16 (128-byte
# rows): its `alignas(1024)` buffer starts where the pattern starts, so the GPU's bytes are the model's
# at address 0.

# %% tags=["nbval-ignore-output"]
sw_map = TensorMap("bfloat16", (80, 48), (64, 16), swizzle="128B")
case = tma.TmaLoad(gmem, sw_map, (0, 16), kernel="teach_tma.cu")
print(case.results())
print("SMEM line 1 holds chunks", [int(c) for c in tma.smem_chunks(sw_map, 0)[1][8:16]], "of box row 1, expected",
      [c ^ 1 for c in range(8)])

# %% [markdown]
# The same 128B-swizzled box written at 0x0180 instead of 0x0000: the pattern starts three lines in
# (the PTX ISA's "base offset" (0x180 / 128) % 8 = 3). Code that reads such a buffer must use the same
# address bits, which is why swizzled tiles are placed on 1024-byte boundaries.

# %%
sw = TensorMap("float16", (64, 64), (64, 8), swizzle="128B")
rows, cols = tma.smem_chunks(sw, 0x180)
print("chunk held by SMEM line 0 at 0x0180:", [int(c) for c in cols[:8]], " expected", [c ^ 3 for c in range(8)])
tma.plot_smem_image(sw, 0x180)
plt.show()


# %% [markdown]
# ### Exercise 1.4 — where does element (r, c) land? (3 points)
#
# A box whose rows are exactly 128 bytes (64 bf16, 32 float32, 128 int8 ...) is loaded with
# `swizzle="128B"` to SMEM address `base`, a multiple of 128. Write `my_smem_offset(r, c, elem_bytes, base)`:
# the byte offset from `base` at which the first byte of element `c` of box row `r` lands. Without the swizzle
# it would be `r * 128 + c * elem_bytes`. Write the XOR yourself (no `bwlab.hw.swizzle`). The check tries
# bf16 rows at base 0 and at the 0x180 above (not a multiple of 1024); the graded version also tries other
# element sizes, rows 8–15 and other bases.

# %% nbgrader={"grade": false, "grade_id": "tma_swizzle_offset", "locked": false, "schema_version": 3, "solution": true}
def my_smem_offset(r, c, elem_bytes, base):
    """Byte offset from `base` of element (r, c) of a 128-byte-row box loaded with 128B swizzle to `base`."""
    ### BEGIN SOLUTION
    addr = base + r * 128 + c * elem_bytes
    addr ^= ((addr >> 7) & 7) << 4     # chunk bits 4-6 ^= line bits 7-9 of the address (Swizzle<3,4,3>)
    return addr - base
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "tma_swizzle_offset_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.tma import exercises as tma_ex
tma_ex.check_swizzle_offset(my_smem_offset)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
tma_ex.check_swizzle_offset(my_smem_offset, hidden=hidden_cases("tma_swizzle_offset"))
### END HIDDEN TESTS

# %% [markdown]
# A row *narrower* than the span is legal too (the driver asks only for "at most the span"), but it
# does not pack: each row still takes a whole span of SMEM, and the chunks the row does not fill are
# left alone. The mbarrier still counts only the box's bytes. So a buffer sized `box_bytes` is too small
# for such a box — on the H100 that is an illegal-address fault — and `smem_footprint` is what to
# allocate. (Seen on the H100: `python -m bwlab.validate tma`, docs/results/tma_validate_h100.txt; the TMA
# store reads such boxes with the same pitch, notebook 05.)

# %%
narrow = TensorMap("float16", (64, 64), (16, 8), swizzle="128B")  # 32-byte rows, 128-byte span
print(f"box bytes {narrow.box_bytes} (expect_tx {narrow.tx_bytes}), rows {narrow.smem_pitch} bytes apart "
      f"(expected 128), SMEM footprint {narrow.smem_footprint} (expected 8 * 128 = {8 * 128})")
tma.plot_smem_image(narrow, 0, title="128B swizzle, rows of 32 bytes: one row per 128-byte line")
plt.show()

# %% [markdown]
# ### Why: bank conflicts
#
# SMEM has 32 banks of 4 bytes. A warp that reads one column of a box — thread *t* reads row *t*, the
# access pattern of `ldmatrix` and of tensor-core operand fetches — hits one bank group over and over
# when the rows are 128 bytes apart. The swizzle spreads the rows' chunks over all eight 16-byte chunk
# positions. Wavefronts (bank-serialised steps) for a 32-thread column read, computed by
# `bwlab.hw.banks.wavefronts` from the addresses the model gives:

# %%
print(f"{'mode':5s} {'row bytes':>9s} {'access':>6s} {'no swizzle':>10s} {'expected':>8s} {'swizzled':>8s} {'expected':>8s}")
for mode, row_bytes, access, plain, swizzled in tma.bank_conflict_table("float16"):
    # expected: 32 threads over (128 / row_bytes) rows per SMEM line, or over 8 chunks once swizzled
    print(f"{mode:5s} {row_bytes:9d} {access:5d}B {plain:10d} {32 * row_bytes // 128:8d} {swizzled:8d} {32 // 8:8d}")
tma.plot_bank_conflicts("float16", access_bytes=16)
plt.show()

# %% [markdown]
# ## 7. A box that hangs off the edge
#
# Coordinates are signed 32-bit integers and may point outside the tensor, even below zero; the one
# restriction is that the box starts on a 16-byte boundary of its row (dim-0 coordinate × element size
# a multiple of 16: PTX ISA 5.5.3.1 — the H100 stops the kernel with "illegal instruction" otherwise). Every
# element of the box outside the tensor is filled — with zero, or with a special NaN
# (`FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA`, floating-point types only) — and still counts towards the
# transaction bytes: the mbarrier always expects the whole box.

# %%
small = TensorMap("float32", (20, 12), (8, 6))
g = np.arange(12 * 20, dtype=np.float32).reshape(12, 20)
print("box bytes:", small.box_bytes, " expected 8 * 6 * 4 =", 8 * 6 * 4, "(whether or not it is in bounds)")
tma.plot_oob_box(small, g, (16, 9))
plt.show()

# %%
nanfill = TensorMap("float32", (20, 12), (8, 6), oob_fill="nan")
img = tma_load_model(g, nanfill, (-4, -2)).view(np.float32).reshape(6, 8)
print(img)
print("fill bits:", hex(tma.oob_fill_bits(nanfill)), " expected 0x7ff77ff7 (the 16-bit 0x7FF7 twice, as the H100 wrote it)")
print("NaN count:", int(np.isnan(img).sum()), " expected 8 * 6 - 4 * 4 =", 8 * 6 - 4 * 4)
tma.plot_oob_box(nanfill, g, (-4, -2))
plt.show()

# %% [markdown]
# The GPU fills the same way (`TmaLoad(...)` without `kernel=` runs the harness kernel, here or in the
# emulator; and a recording made on an H100):

# %% tags=["nbval-ignore-output"]
print(tma.TmaLoad(g, small, (16, 9)).results())
print(tma.TmaLoad(g, nanfill, (-4, -2)).results())

# %% [markdown]
# ### Exercise 1.5 — what the fill costs (2 points)
#
# Write `my_oob_fill(dtype, global_shape, box_shape, coords)`: `(elements filled, expect_tx bytes)` for one
# load of a box of `box_shape` at `coords` from a tensor of `global_shape` (all innermost first, any rank;
# coordinates may be negative). The check tries a float32 box of 8 × 6 at `(-4, 8)` in the 20 × 12 tensor
# above; the hidden tests try boxes inside, outside, across corners, and in three dimensions.

# %% nbgrader={"grade": false, "grade_id": "tma_oob_fill", "locked": false, "schema_version": 3, "solution": true}
from bwlab.hw import element_type

def my_oob_fill(dtype, global_shape, box_shape, coords):
    """(box elements outside the tensor, bytes the mbarrier must expect) for one load."""
    ### BEGIN SOLUTION
    inside, total = 1, 1
    for n, b, c in zip(global_shape, box_shape, coords):
        inside *= max(0, min(n, c + b) - max(0, c))
        total *= b
    return total - inside, total * element_type(dtype).bytes
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "tma_oob_fill_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.tma import exercises as tma_ex
tma_ex.check_oob_fill(my_oob_fill)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
tma_ex.check_oob_fill(my_oob_fill, hidden=hidden_cases("tma_oob_fill"))
### END HIDDEN TESTS

# %% [markdown]
# ## 8. The GPU's bytes next to the model's, for every swizzle
#
# `tma.run_tma_load` (or `tma.TmaLoad(...).run()`) runs the validation harness `tma_load_dump`: it clears
# an SMEM window, loads the box, checks that the transaction count was exact (a second phase must
# complete with no bytes outstanding) and copies the raw SMEM out, swizzle and all. The model takes the
# same arguments, so the comparison is one line. Six tensor maps × two positions, the second at SMEM
# offset 384 (three lines into the swizzle pattern); the last two have rows narrower than their swizzle
# span (16 and 48 bytes). `python -m bwlab.validate tma` runs many random loads the same way (every element
# size, rank 1–5, boxes off the edge, element strides, every SMEM offset); the last line says how many of
# 200 such loads came back bit-exact.

# %% tags=["nbval-ignore-output"]
MODES = (("none", 64), ("32B", 16), ("64B", 32), ("128B", 64), ("64B", 8), ("128B", 24))
POSITIONS = (((32, 16), 0), ((64, 40), 384))
for i, ((mode, inner), (coords, offset)) in enumerate((m, p) for m in MODES for p in POSITIONS):
    case = tma.TmaLoad(gmem, TensorMap("bfloat16", (80, 48), (inner, 16), swizzle=mode), coords, smem_address=offset)
    result = case.check()      # run here (this GPU or the emulator), else the H100's recording of this case
    print(f"{mode:5s} box {inner:2d} x 16 at {str(coords):8s} SMEM +{offset:3d}: {result.compared:4d} bytes, "
          f"equal to the model: {result.ok} (expected True)")
print("source:", result.source)
from bwlab.checks.record_tma import random_loads
ok, source = random_loads(200, seed=1)   # on a GPU with TMA now, else the H100's recorded count
print(f"random loads: {ok}/200 bit-exact (expected 200/200; {source})")

# %% [markdown]
# ## 9. Try it
#
# Element type, swizzle, box width and height, destination: the picture is redrawn by the model. The box
# width offers only the widths the tensor map accepts (a multiple of 16 bytes, at most the swizzle span);
# change the type or the swizzle and it moves to the nearest legal width, and says so under the picture.
# The controls need a live Python kernel; the picture stored with the notebook is the default setting.

# %% tags=["nbval-ignore-output"]
try:
    from IPython.display import display
    display(tma.swizzle_explorer())
except ImportError as e:  # running as a plain script
    print("the explorer needs IPython and ipywidgets:", e)

# %% [markdown]
# ## 10. Peek under the hood
#
# The PTX of the teaching kernel (NVRTC, sm_90a), one line per step of section 3: `mbarrier.init`, the
# fence that makes it visible to the async proxy, `arrive.expect_tx`, the `cp.async.bulk.tensor.2d` with
# its tensor map, coordinates and mbarrier, and the bounded wait (`%globaltimer` read around
# `mbarrier.try_wait.parity`).

# %% tags=["nbval-ignore-output"]
print(k.compile("sm_90a").ptx_excerpt("teach_tma_load"))

# %% [markdown]
# ## Recap
#
# - A **tensor map** (built on the host, checked by `TensorMap` before the driver sees it) describes the
#   tensor; one `cp.async.bulk.tensor` instruction copies a **box** of it, given its coordinates.
# - The **mbarrier** handshake: init → `arrive.expect_tx(box bytes)` → the load → bounded wait. The phase
#   completes only when the arrival is in *and* every announced byte has landed; announce a wrong count
#   and the wait never succeeds (`MbarrierTimeout` here, a hang elsewhere).
# - The **swizzle** moves 16-byte chunks by XOR with address bits 7–9, so it depends on the SMEM address
#   (place swizzled tiles on 1024-byte boundaries) and spreads a column read of 16-byte chunks over all 32
#   banks (a column of 4-byte words still takes several wavefronts: the table above).
# - Elements **outside the tensor** are filled (zero or NaN) and still count towards expect_tx.
# - `TmaLoad(...).check(got)` compares any result — the GPU's, a recording, yours — byte by byte with the model.
#
# **Next:** `02_multicast` — a *cluster* of CTAs, and one TMA load whose box lands in the SMEM of several
# CTAs at once.
