# %% [markdown]
# # 09 · Low precision: FP8, FP4 and the block-scaled MMA
#
# What Blackwell GEMMs run today is low precision: MXFP8 for training, NVFP4 for inference. Their elements
# are 8 or 4 bits wide, too narrow to hold a tensor's range, so every block of 32 (or 16) elements along K
# carries its own **scale factor**, and the tensor core multiplies by the scales inside the MMA:
# `tcgen05.mma.kind::mxf8f6f4.block_scale` (MXFP8) and `kind::mxf4nvf4.block_scale` (NVFP4). This notebook
# follows one block-scaled MMA end to end: quantising to the formats (what a scale keeps and what it loses),
# the instruction descriptor of the block-scaled kinds, the scale factors' trip GMEM → SMEM → TMEM through
# `tcgen05.cp`, one tile run by a kernel and compared bit for bit with bwlab's model, the output quantised
# again, and Hopper's FP8 `wgmma`, whose short accumulator is why FP8 GEMMs on Hopper promote to f32.
#
# **Before this notebook:** [03b · UMMA, part 2](03b_umma_mma.ipynb) (`tcgen05.mma`, its descriptors and
# the K loop) and [04 · TMEM](04_tmem_load.ipynb) (lanes, columns and lane quarters of Tensor Memory).
#
# **Runs on:** the kernel of this notebook is Blackwell's (sm_100a). The line the kernel cell prints says
# where it ran: on an sm_100 GPU, or in bwlab's PTX emulator, which executes the same PTX. No sm_100 GPU has
# run it yet; its arithmetic follows MMA-Sim's model of Blackwell's tensor core. The Hopper FP8 numbers come
# from a recording made on an H200, named with its date where they are shown.
#
# **Exercises: 4 graded exercises (9 points)**, each right after the section it draws on. Exercise 9.4 edits
# the block-scaled teaching kernel and runs it.

# %% tags=["nbval-ignore-output"]
import bwlab
bwlab.banner();

# %%
import numpy as np
import matplotlib.pyplot as plt
from bwlab.hw.dtypes import to_float
from bwlab import umma
from bwlab import lowprec as lp
from bwlab.umma import BlockScaledCase, quantize, dequantize, run_where_possible
from bwlab.umma import exercises as ex

# %% [markdown]
# ## The formats
#
# Each element type is a tiny float: a sign, a few exponent bits, a few mantissa bits. The scale types
# have no sign: **ue8m0** is a bare power of two (2^(code − 127)), **ue4m3** is e4m3 without its sign. The
# largest finite value and the smallest normal one of each, computed from every code:

# %%
for t, bits in (("e4m3", 8), ("e5m2", 8), ("e3m2", 6), ("e2m3", 6), ("e2m1", 4), ("ue4m3", 7)):
    v = np.abs(to_float(np.arange(1 << bits, dtype=np.uint8), t))
    v = v[np.isfinite(v)]
    normal_min = {"e4m3": 2.0 ** -6, "e5m2": 2.0 ** -14, "e3m2": 2.0 ** -2, "e2m3": 1.0, "e2m1": 1.0,
                  "ue4m3": 2.0 ** -6}[t]
    print(f"{t:6s} {bits} bits: largest {v.max():>8g}, smallest normal {normal_min:g}, "
          f"{len(np.unique(v[v > 0]))} positive values")
print("ue8m0  8 bits: 2^-127 .. 2^127, powers of two only")

# %% [markdown]
# ## Quantising: one scale per block
#
# MXFP8 (the OCP Microscaling format) gives every 32 elements of a row one ue8m0 scale, the power of two
# 2^(floor(log2(amax)) − 8), where amax is the block's largest magnitude and 8 is the exponent of e4m3's
# largest power of two (256); each element is then rounded to e4m3. NVFP4 gives every 16 elements one ue4m3
# scale, amax / 6 (6 is e2m1's largest value), and rounds each element to e2m1, which has only the values
# 0, 0.5, 1, 1.5, 2, 3, 4 and 6. The same row of 64 values, two outliers in it, in both formats:

# %%
rng = np.random.default_rng(0)
x = rng.standard_normal(64)
x[5], x[40] = 40.0, -25.0
fig, axes = plt.subplots(2, 1, figsize=(10, 7))
lp.plot_quantization(x, "mxfp8", ax=axes[0])
lp.plot_quantization(x, "nvfp4", ax=axes[1])
plt.tight_layout()
plt.show()
for fmt in ("mxfp8", "nvfp4"):
    print(fmt, lp.quantization_losses(x.reshape(1, -1), fmt))

# %% [markdown]
# A scale is chosen for the largest value of its block: the outlier is kept, and its neighbours are
# measured in the outlier's units. With e4m3's 3 mantissa bits and exponents down to 2^-9 below the scale,
# MXFP8 keeps them all; e2m1 has nothing between 0 and half the scale's unit, so NVFP4 flushes the outlier's
# small neighbours to zero — one reason its blocks are 16 elements, not 32, and why an NVFP4 tensor also
# carries a second, per-tensor f32 scale (ue4m3 alone spans only 2^-9 .. 448).

# %% [markdown]
# ### Exercise 9.1 — MXFP8's scale of a block (2 points)
#
# Write `mx_scale_code(amax)`: the ue8m0 **code** of the scale MXFP8 gives a block whose largest magnitude
# is `amax` (a positive float). Predict first: which code does a block whose largest value is 448 get — and
# one whose largest value is 500? The check tries a few values of amax and names what differs.

# %% nbgrader={"grade": false, "grade_id": "lowp_mx_scale", "locked": false, "schema_version": 3, "solution": true}
import numpy as np


def mx_scale_code(amax):
    """The ue8m0 code of the MXFP8 scale of a block with largest magnitude amax."""
    code = None   # your answer: an integer 0..254
    ### BEGIN SOLUTION
    code = int(np.floor(np.log2(amax))) - 8 + 127
    ### END SOLUTION
    return code


# %% nbgrader={"grade": true, "grade_id": "lowp_mx_scale_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.umma import exercises as ex
ex.check_mx_scale(mx_scale_code)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_mx_scale(mx_scale_code, hidden=hidden_cases("lowp_mx_scale"))
### END HIDDEN TESTS

# %% [markdown]
# ## The block-scaled instruction
#
# Three kinds of `tcgen05.mma` scale their operands (PTX ISA, tcgen05.mma "Block Scaling", Tables 54 and
# 55): `.scale_vec::1X` gives one scale per row per instruction, `::2X` two and `::4X` four, so the block is
# K / 1, K / 2 or K / 4 elements (`.block32` and `.block16` are the newer names). Only `kind::mxf4nvf4` with
# `::4X` takes ue4m3 scales. bwlab's table, which `ptxas` agrees with form by form:

# %%
for kind, k in umma.BLOCK_KINDS.items():
    for vec, stypes in k.vecs.items():
        print(f"kind::{kind:9s} K = {k.K:2d}  .scale_vec::{vec}: block {umma.block_of(kind, vec):2d}, "
              f"scales {' or '.join(stypes):14s} A/B {', '.join(k.types)}")

# %% [markdown]
# Their 32-bit instruction descriptor is not kind::f16's: bits 4-5 and 29-30 say which byte of each TMEM
# word holds this instruction's scales (the **scale factor IDs** of B and A), bit 23 the scale type, and M
# moves to bits 27-28 as M >> 7 (these kinds take M = 128 per CTA). The descriptor of an MXFP8 MMA,
# 128 × 64, using the third byte of each scale word:

# %%
idesc = umma.make_block_scaled_idesc("mxf8f6f4", "e4m3", "e4m3", "ue8m0", N=64, sf_a_id=2, sf_b_id=2)
print(f"idesc = {idesc:#010x}")
for bits, name, value, meaning in umma.decode_block_scaled_idesc(idesc, "mxf8f6f4").fields():
    print(f"  bits {bits:6s} {name:22s} {value:3d}  {meaning}")

# %% [markdown]
# The rules are checked before anything runs, each refusal naming the table it comes from:

# %%
for kw in (dict(kind="mxf8f6f4", a_type="e4m3", b_type="e4m3", scale_type="ue4m3", N=64),
           dict(kind="mxf4nvf4", a_type="e2m1", b_type="e2m1", scale_type="ue4m3", N=64, sf_a_id=2)):
    try:
        umma.make_block_scaled_idesc(**kw)
    except ValueError as e:
        print("refused:", e)


# %% [markdown]
# ### Exercise 9.2 — the instruction descriptor of an MXFP8 MMA (2 points)
#
# Write `mxf8_idesc(a_type, b_type, N, sf_a_id, sf_b_id)`: the descriptor of
# `tcgen05.mma.cta_group::1.kind::mxf8f6f4.block_scale` with M = 128, both operands K-major, ue8m0 scales;
# a_type and b_type are "e4m3" (format code 0) or "e5m2" (code 1). Build it from the fields printed above.

# %% nbgrader={"grade": false, "grade_id": "lowp_bs_idesc", "locked": false, "schema_version": 3, "solution": true}
def mxf8_idesc(a_type, b_type, N, sf_a_id, sf_b_id):
    """The 32-bit instruction descriptor of a kind::mxf8f6f4 block-scaled MMA (M = 128, ue8m0)."""
    desc = None   # your answer: an integer
    ### BEGIN SOLUTION
    code = {"e4m3": 0, "e5m2": 1}
    desc = ((sf_b_id << 4) | (code[a_type] << 7) | (code[b_type] << 10) | ((N >> 3) << 17) | (1 << 23)
            | ((128 >> 7) << 27) | (sf_a_id << 29))
    ### END SOLUTION
    return desc


# %% nbgrader={"grade": true, "grade_id": "lowp_bs_idesc_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.umma import exercises as ex
ex.check_bs_idesc(mxf8_idesc)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_bs_idesc(mxf8_idesc, hidden=hidden_cases("lowp_bs_idesc"))
### END HIDDEN TESTS

# %% [markdown]
# ## The scales' trip: GMEM → SMEM → TMEM
#
# The MMA reads A and B from SMEM, but its scales from **Tensor Memory**. They get there in three steps:
# a copy from global to shared memory (TMA, or plain loads), a `fence.proxy.async` (the tensor core reads
# SMEM through the async proxy), and `tcgen05.cp`, an asynchronous copy from SMEM into TMEM issued by the
# same thread as the MMAs (in issue order with them: no wait between the copy and the MMA that reads it).
#
# CUTLASS stores scales in **atoms** of 512 bytes: the 4 scales (along K) of 128 rows. Row r's 4 scales
# are one 32-bit word at byte 16 · (r % 32) + 4 · (r // 32), so each 16-byte line holds rows r, r+32, r+64,
# r+96. `tcgen05.cp.32x128b.warpx4` copies the atom's 32 lines to lane i of **every** lane quarter, so row
# r's word lands at lane r % 32 of each quarter, column r // 32: the PTX ISA requires the scales duplicated
# to all four quarters, and the MMA's scale factor ID picks the byte.

# %%
lp.plot_scale_trip()
plt.tight_layout()
plt.show()

# %% [markdown]
# The same copy, executed by bwlab's model of `tcgen05.cp` on an atom of codes, then read back where the
# MMA reads it: for each scale factor ID, the byte of every row.

# %%
from bwlab.hw.tmem import new_image
sf = np.arange(512, dtype=np.uint32).reshape(128, 4).astype(np.uint8)     # row r, scale j: 4 r + j (mod 256)
smem = np.zeros(4096, np.uint8)
smem[1024:1536] = umma.sf_to_layout(sf, "smem")
tmem = new_image()
lanes, cols = umma.tcgen05_cp(smem, tmem, 64, umma.make_smem_desc(1024, 0, 128), "32x128b", "warpx4")
print(f"written: lanes {lanes.min()}..{lanes.max()}, columns {cols.tolist()}")
for sid in range(4):
    got = umma.read_tmem_scales(tmem, 64, 128, 1, sid)[:, 0]
    print(f"scale factor ID {sid}: rows 0..4 read {got[:5].tolist()}, equal to scale {sid} of every row: "
          f"{np.array_equal(got, sf[:, sid])}")


# %% [markdown]
# ### Exercise 9.3 — where a row's scale sits in the atom (2 points)
#
# Write `sf_offset(row, j)`: the byte, inside one 512-byte atom, of scale `j` (0..3) of row `row` (0..127).

# %% nbgrader={"grade": false, "grade_id": "lowp_sf_offset", "locked": false, "schema_version": 3, "solution": true}
def sf_offset(row, j):
    """The byte of row `row`'s scale j in CUTLASS's 512-byte scale atom."""
    offset = None   # your answer: an integer 0..511
    ### BEGIN SOLUTION
    offset = 16 * (row % 32) + 4 * (row // 32) + j
    ### END SOLUTION
    return offset


# %% nbgrader={"grade": true, "grade_id": "lowp_sf_offset_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.umma import exercises as ex
ex.check_sf_offset(sf_offset)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_sf_offset(sf_offset, hidden=hidden_cases("lowp_sf_offset"))
### END HIDDEN TESTS

# %% [markdown]
# ## One block-scaled MMA, run
#
# `cuda_src/teach_blockscaled.cu` is the whole trip in one CTA: the operands and the scale atoms into SMEM,
# `tcgen05.alloc`, one thread issuing `tcgen05.cp.32x128b.warpx4` for each atom and then the MMAs (MXFP8:
# four `kind::mxf8f6f4` instructions of K = 32 over K = 128, instruction i using scale factor ID i;
# NVFP4: four `kind::mxf4nvf4` instructions of K = 64 over K = 256, one atom each), `tcgen05.commit`, and
# D read back with `tcgen05.ld`. Its issuing part:

# %%
from bwlab.lab import TeachingKernel
kernel = TeachingKernel("teach_blockscaled.cu")
text = kernel.text
start = text.index("    // 3. One thread")
print(text[start:text.index("    // 4. Wait", start)])

# %% [markdown]
# A and B are random values with a few outliers, quantised as above. The kernel's D, bwlab's model of every
# step it takes (the same inputs through the models of `tcgen05.cp` and the block-scaled MMA), and
# `mma_numerics` straight from the codes and scales:

# %% tags=["nbval-ignore-output"]
results = {}
for fmt in ("mxfp8", "nvfp4"):
    case = BlockScaledCase(fmt, N=64)
    got, where = run_where_possible(case)
    results[fmt] = (case, got)
    print(where)
    print(" ", case.check(got))
    print(f"  model == mma_numerics from the codes: {np.array_equal(case.model(), case.reference())}")

# %% [markdown]
# And how close the low-precision product is to the product of the values before quantising (f64), per
# format: the error comes from quantising A and B, not from the MMA.

# %%
for fmt, (case, got) in results.items():
    a, b = case.floats()
    exact = a @ b.T
    d = got.view(np.float32).astype(np.float64)
    print(f"{fmt}: largest |D - A.B^T| / max|A.B^T| = {np.abs(d - exact).max() / np.abs(exact).max():.3g}")

# %% [markdown]
# The PTX of the copy and of the MMA, as NVRTC compiles the kernel for sm_100a:

# %%
print(kernel.compile("sm_100a").ptx_excerpt("teach_blockscaled", patterns=("tcgen05.cp", "tcgen05.mma"),
                                            first_only=True, width=150))

# %% [markdown]
# ### Exercise 9.4 — copy scale_B into TMEM (3 points)
#
# `ex.scale_b_missing_kernel()` is the teaching kernel with the copy of scale_B's atoms taken out; a line
# `// TODO: copy scale_B's atom a into TMEM` stands in its place, inside the loop over the atoms `a` (printed
# below). Write the statement that goes there, as a string: scale_B's atoms sit in SMEM at `sfb_smem + 32 * a`
# (`sfb_smem` is an array of 16-byte `uint4`), and the MMAs read scale_B at `tsfb + 4 * atom`. The check puts
# your statement in place of the TODO, runs the kernel in the PTX emulator on an MXFP8 and an NVFP4 tile, and
# compares D with the model.

# %%
start = ex.scale_b_missing_kernel()
print(start.text[start.text.index("            for (u32 a = 0"):][:330])

# %% nbgrader={"grade": false, "grade_id": "lowp_scale_b_copy", "locked": false, "schema_version": 3, "solution": true}
copy_line = None   # your answer: the CUDA statement, a string ending in ";"
### BEGIN SOLUTION
copy_line = "tcgen05_cp_32x128b_warpx4(tsfb + 4 * a, scale_atom_desc(sfb_smem + 32 * a));"
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "lowp_scale_b_copy_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.umma import exercises as ex
ex.check_scale_b_copy(copy_line)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_scale_b_copy(copy_line, hidden=hidden_cases("lowp_scale_b_copy"))
### END HIDDEN TESTS

# %% [markdown]
# ## The output, quantised again
#
# A layer's output feeds the next layer's low-precision GEMM, so the epilogue quantises D with fresh scales,
# one per block of its rows. The MXFP8 tile's D to NVFP4, and what that costs:

# %%
case, got = results["mxfp8"]
d = got.view(np.float32).astype(np.float64)
codes, sf = quantize(d, "nvfp4")
back = dequantize(codes, sf, "nvfp4")
print(f"D {d.shape}: {sf.size} ue4m3 scales, {codes.size // 2} bytes of packed e2m1 (f32 D: {d.size * 4} bytes)")
print(f"largest error relative to its block's largest value: "
      f"{(np.abs(back - d) / np.repeat(np.abs(d).reshape(128, -1, 16).max(axis=2), 16, axis=1)).max():.3g}")

# %% [markdown]
# ## Hopper's FP8: a short accumulator, promoted
#
# Hopper has no block scaling; its FP8 `wgmma` (e4m3 and e5m2) keeps fewer bits than f32 while it sums:
# each instruction aligns its 32 products and the incoming accumulator to the largest exponent among them,
# keeps **13** fraction bits below it, and cuts the sum to 13 fraction bits. bwlab's rule was measured on
# an H200 (the recording `docs/results/wgmma_fp8_h200.txt`):

# %%
m = lp.FP8_ACCUMULATOR_MEASURED
print(f"{m['gpu']} (driver {m['driver']}), {m['date']}: {m['instruction']}")
print(f"  {m['equal']} of {m['accumulators']} accumulators equal the rule: {m['rule']}")
print(f"  made by: {m['command']}")

# %% [markdown]
# Chained over a long K, those 13 bits lose the small terms. FP8 GEMMs on Hopper (CUTLASS, DeepGEMM)
# therefore keep only a few instructions in the tensor core's accumulator and then add the partial sum to
# an f32 register: a promotion every N instructions. The error of a 64 × 8 × 4096 product against N,
# computed with the measured rule:

# %%
errors = lp.fp8_promotion_errors()
for n, (med, top) in errors.items():
    print(f"promote every {n:3d} instructions: median error {med:.2e}, largest {top:.2e}")
lp.plot_fp8_promotion(errors)
plt.show()

# %% [markdown]
# ## Recap
#
# * MXFP8 and NVFP4 store a scale per 32 or 16 elements; a block's largest value sets its scale, so an
#   outlier costs its neighbours precision (NVFP4: often everything).
# * The block-scaled `tcgen05.mma` kinds read their scales from TMEM; the instruction descriptor says which
#   byte of each word (scale factor IDs), the scale type and M >> 7.
# * Scales travel GMEM → SMEM → TMEM; `tcgen05.cp.32x128b.warpx4` copies CUTLASS's 512-byte atom so that
#   every lane quarter holds every row's scales, as the PTX ISA requires.
# * Hopper's FP8 accumulator keeps 13 fraction bits; promoting to f32 every few instructions bounds the
#   error.
