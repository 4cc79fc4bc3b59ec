# %% [markdown]
# # 01 · The TMA load: tensor maps, the mbarrier handshake, swizzle, out-of-bounds fill
#
# The first hop of the data path: a tile of a matrix goes from global memory (GMEM) to shared memory
# (SMEM). On Hopper and Blackwell one thread asks the **Tensor Memory Accelerator** for a whole *box*
# with one instruction, `cp.async.bulk.tensor`, and carries on; the bytes arrive asynchronously and an
# **mbarrier** in SMEM tells every thread when they are all there.
#
# What you will see: the *tensor map* that describes the matrix; how a grid of CTAs covers it one box
# each; the mbarrier handshake step by step; how the *swizzle* scatters 16-byte chunks over SMEM and
# why (bank conflicts); what happens to a box that hangs off the edge; and, on a GPU with TMA, the
# GPU's own SMEM bytes compared with bwlab's model byte for byte.
#
# **Runs on:** the next cell says which tier this notebook runs in here (`hardware` on sm_90+, else `model`).

# %% tags=["nbval-ignore-output"]
import bwlab
from bwlab import device
bwlab.banner()
print("Runs on:", device.tier("tma"))

# %% [markdown]
# ## 1. The tensor map
#
# `cuTensorMapEncodeTiled` packs the description of a tensor into 128 opaque bytes: the element type,
# the size of each dimension (innermost first: dim 0 is the contiguous one), the byte stride of every
# other dimension, the *box* one load copies, the element strides inside the box, the swizzle, the
# interleave, the L2 promotion and the out-of-bounds fill. `bwlab.tma.TensorMap` holds the same
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
# ## 2. One box per CTA
#
# A GEMM gives each CTA one tile. With a 3 × 3 grid, CTA `(blockIdx.x, blockIdx.y)` loads the box at
# coordinates `(32 · x, 16 · y)`. 80 is not a multiple of 32, so the right-hand column of boxes hangs
# 16 columns off the matrix; the TMA fills those with zeros (section 5), so the kernel needs no
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
# The kernel (`cuda_src/tma_load.cu`, kernel `tma_load_dump`) does, in this order:
#
# 1. thread 0: `mbarrier.init(count = 1)` — one arrival completes a phase;
# 2. thread 0: `mbarrier.arrive.expect_tx(box_bytes)` — arrives *and* raises the transaction count;
# 3. thread 0: `cp.async.bulk.tensor.2d ... [smem], [tmap, {c0, c1}], [mbar]` — the TMA engine reports
#    every byte it writes with `complete_tx`, counting the transaction count back down;
# 4. everyone: `mbarrier.try_wait.parity(0)` until phase 0 has completed: pending arrivals **and**
#    transaction count both zero.
#
# The timeline below is computed by `bwlab.hw.mbarrier.Mbarrier`, a small model of that state machine. How finely the
# hardware splits its `complete_tx` is not architectural; only the total is, so it is drawn in four parts.

# %%
tma.plot_handshake(tmap.box_bytes, pieces=4)
plt.show()

# %% [markdown]
# Announce 16 bytes more than the box holds and the count never reaches zero: the phase never
# completes. In a real kernel that is a hang; bwlab's waits are bounded (`mbarrier_wait` gives up
# after 200 ms and the host raises `MbarrierTimeout` naming the barrier).

# %%
tma.plot_handshake(tmap.box_bytes, pieces=4, extra_tx=16)
plt.show()
last = tma.handshake_events(tmap.box_bytes, pieces=4, extra_tx=16)[-1]
print(f"after every byte arrived: tx-count = {last[3]} (expected 16), phase 0 complete: {last[5]} (expected False)")

# %% [markdown]
# The kernel source, top to bottom in the order above:

# %%
from bwlab.source import show_source
kernel_text = show_source("tma_load.cu", kernel="tma_load_dump")

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
# ## 5. Swizzle
#
# With a swizzle, the TMA writes each 16-byte chunk to a different place: chunk bits 4–6 of the SMEM
# address are XORed with bits 7–9 (128B mode; 64B and 32B use fewer bits). It is a function of the
# **SMEM address**, so the picture depends on where the buffer starts. A box row may be no wider than
# the mode's span. Each cell below is one 16-byte chunk of SMEM; `rK cJ` says it holds chunk J of box row K.

# %%
tma.plot_swizzle_modes("float16")
plt.show()

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
# ## 6. A box that hangs off the edge
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
print("fill bits:", hex(tma.oob_fill_bits(nanfill)), " NaN count:", int(np.isnan(img).sum()),
      " expected 8 * 6 - 4 * 4 =", 8 * 6 - 4 * 4)
tma.plot_oob_box(nanfill, g, (-4, -2))
plt.show()

# %% [markdown]
# ## 7. The GPU's bytes next to the model's
#
# On a GPU with TMA, `tma.run_tma_load` (or `tma.TmaLoad(...).run()`) runs `tma_load_dump`: it clears the SMEM window, loads the box, checks the transaction count was exact (a second phase must complete with
# no bytes outstanding) and copies the raw SMEM out, swizzle and all. The model takes the same
# arguments, so the comparison is one line. The last two boxes have rows narrower than their swizzle
# span (16 and 48 bytes). Then 200 random loads (every element size, rank 1–5, every swizzle with full and
# narrow rows, boxes off the edge, element strides, every SMEM offset mod 1024, the prefetch variants)
# go through the same check, with the window painted with a known background so a stray byte shows.

# %% tags=["nbval-ignore-output"]
if device.tier("tma") == "hardware":
    for mode, inner in (("none", 64), ("32B", 16), ("64B", 32), ("128B", 64), ("64B", 8), ("128B", 24)):
        t = TensorMap("bfloat16", (80, 48), (inner, 16), swizzle=mode)
        for coords, offset in (((32, 16), 0), ((64, 40), 384)):
            case = tma.TmaLoad(gmem, t, coords, smem_address=offset)
            gpu = case.run()
            print(f"{mode:5s} box at {coords}, SMEM +{offset:4d}: {gpu.size} bytes, "
                  f"GPU == model: {case.check(gpu).ok} (expected True)")
    from bwlab.checks.tma import random_cases, validate_cases
    report = []
    failures = validate_cases(random_cases(200, seed=1), say=report.append)
    print("\n".join(report))
    print(f"random loads: {200 - failures}/200 bit-exact (expected 200/200)")
else:
    print("No GPU with TMA here (tier 'model'): on an sm_90+ GPU this cell loads six boxes with "
          "tma_load_dump and compares every SMEM byte with tma_load_model, then 200 random loads.")

# %% [markdown]
# ## 8. Try it
#
# Box width and height, element type, swizzle and destination: the picture is redrawn by the model.
# An illegal combination shows the rule it breaks instead.

# %% tags=["nbval-ignore-output"]
try:
    from IPython.display import display
    display(tma.swizzle_explorer())
except ImportError as e:  # running as a plain script
    print("the explorer needs IPython and ipywidgets:", e)

# %% [markdown]
# ## 9. Peek under the hood
#
# The PTX that `tma_load_dump` compiles to (NVRTC, sm_90a): the proxy fence after the background is
# painted, `mbarrier.init`, the L2 prefetch variant, `arrive.expect_tx`, one `cp.async.bulk.tensor` per
# rank (the rank is a run-time value), and the bounded `try_wait` loops.

# %% tags=["nbval-ignore-output"]
from bwlab.compile import compile_cuda
print(compile_cuda("tma_load", arch="sm_90a").ptx_excerpt("tma_load_dump"))
