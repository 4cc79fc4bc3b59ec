# %% [markdown]
# # 03b · UMMA, part 2: `tcgen05.mma` and its shapes
#
# The third hop of the data path, run: the 5th-generation tensor core reads A and B from **shared
# memory** through the descriptors of notebook 03a and writes the accumulator D into **Tensor
# Memory**. This notebook covers the instruction itself: the shapes it takes for one CTA and for a
# CTA pair, the K loop, a whole `wgmma` kernel on Hopper whose descriptors you change, the MMA
# computed from TMA-loaded bytes, tf32's own layout, a survey of every layout pair, where D lands in
# TMEM, and a whole `tcgen05.mma` kernel. Everything is executed by bwlab's model from raw bytes,
# checked against NumPy, and — because Hopper's `wgmma` reads SMEM through the same layouts —
# validated bit for bit on an H100.
#
# **Before this notebook:** [03a · UMMA, part 1: descriptors and layouts](03a_umma_descriptors.ipynb)
# (the canonical layouts, the SMEM descriptor's fields, the instruction descriptor), 01 (TMA load:
# tensor maps, mbarrier phases and `expect_tx`) and 02 (multicast: clusters and CTA ranks, used here
# for the CTA pair).
#
# **Runs on:** the line below says which tier the `umma` stage has here. *hardware* = a Blackwell
# sm_100 GPU runs `tcgen05.mma`; *hybrid* = the GPU loads the operands with real TMA and the model
# multiplies them; *model* = no GPU. The `wgmma` cells run on a Hopper GPU (sm_90a) and show what an
# H100 recorded everywhere else. No H100 can run `tcgen05`: its cells show the model and the compiled
# kernel there, never a GPU result.
#
# **Exercises: 2 graded exercises (5 points)**, each right after the section it draws on: predict, or
# supply a number, then run the check below it, which says what is wrong and why. Exercise 3.5 edits
# the `wgmma` teaching kernel and runs it; a worked reading of the SBO field comes before it.

# %% tags=["nbval-ignore-output"]
import bwlab
bwlab.banner();

# %%
import numpy as np
import matplotlib.pyplot as plt
from bwlab import umma
from bwlab.device import tier
print("tier('umma') =", tier("umma"), "| tier('tma') =", tier("tma"))

# %% [markdown]
# ## Why `tcgen05`?
#
# On Hopper, `wgmma.mma_async` is issued by a whole **warpgroup** (128 threads) at once and its
# accumulator lives in those threads' **registers**. On Blackwell, `tcgen05.mma` is issued by **one
# thread**; the accumulator lives in **TMEM** (128 lanes x 512 columns of 32 bits per SM), so it costs
# no registers, can be twice as tall (M = 128 per CTA, 256 per CTA pair), and the threads are free
# while it runs. It is asynchronous: the issuing thread learns it has finished through
# `tcgen05.commit` to an mbarrier. What both share is how they read A and B: from shared memory,
# through a 64-bit descriptor, in one of eight canonical layouts.
#
# The accumulator cost of the largest instruction of each, computed from the fragment layouts below:

# %%
regs = umma.wgmma_d_fragment(256)[1].max() + 1
cols = umma.d_tmem_layout(128, 256).columns
print(f"wgmma m64n256k16 f32 D : {regs} registers in each of 128 threads   (expected 64*256/128 = {64 * 256 // 128})")
print(f"tcgen05.mma 128x256 f32: {cols} TMEM columns x 128 lanes, 0 registers (expected N = 256)")

# %% [markdown]
# ## The shapes
#
# The shapes a dense `tcgen05.mma` takes, per `cta_group` (PTX ISA, tcgen05 "Matrix Shape", as bwlab's
# table `umma.rules.SHAPES` holds them). With `.cta_group::2` M counts the rows of the pair, each CTA
# holding M / 2 of them. CuTe's MMA atoms (`cute/arch/mma_sm100_umma.hpp`) are stricter in one place:
# `SM100_MMA_F16BF16_SS` (one CTA) asks for N a multiple of 16 when M = 128, where the ISA allows
# multiples of 8; its pair atom `SM100_MMA_F16BF16_2x1SM_SS` asks for M = 128 or 256 and N a multiple of
# 16 in [16, 256], as the ISA's row does. The exercise follows the ISA's table.

# %%
for row in umma.SHAPES:
    print(f"kind::{'/'.join(row.kinds):17s} cta_group::{row.cta_group}: M in {row.Ms}, {row.limit}")


# %% [markdown]
# ### Exercise 3.4 — which shapes are legal, for one CTA and for a pair (2 points)
#
# `tcgen05.mma.cta_group::1` runs on one SM; `.cta_group::2` on a CTA pair, each CTA holding half of
# M (see "Where D lands in TMEM" below). Write `legal_shape(M, N, cta_group)`: True when M x N is a
# legal dense `kind::f16` shape for that `cta_group`, else False. Predict first: is 256 x 128 legal for
# one CTA? 128 x 8 for a pair? The check names the rule (PTX ISA, tcgen05 "Matrix Shape") of the
# first case you get wrong.

# %% nbgrader={"grade": false, "grade_id": "mma_legal_shape", "locked": false, "schema_version": 3, "solution": true}
def legal_shape(M, N, cta_group):
    """True when M x N is a legal dense kind::f16 tcgen05.mma shape for cta_group 1 or 2."""
    legal = None   # your answer: True or False
    ### BEGIN SOLUTION
    if cta_group == 1:
        legal = M in (64, 128) and N % 8 == 0 and 8 <= N <= 256
    else:
        legal = M in (128, 256) and N % 16 == 0 and 16 <= N <= 256
    ### END SOLUTION
    return legal


# %% nbgrader={"grade": true, "grade_id": "mma_legal_shape_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.umma import exercises as ex
ex.check_legal_shape(legal_shape)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_legal_shape(legal_shape, hidden=hidden_cases("mma_legal_shape"))
### END HIDDEN TESTS

# %% [markdown]
# ## The K loop
#
# One instruction consumes 32 bytes of K (16 f16). A 64-wide K-major tile in the 128-byte swizzle is
# one atom wide, so the K loop issues four instructions whose descriptors differ **only in the start
# address, by 32 bytes** — even though the swizzle scatters the chunks each step reads across the
# atom. That works because the tensor core applies the swizzle to the full address (start + offset),
# exactly as TMA did when it wrote the tile; the atom must therefore start on a 1024-byte boundary.

# %%
starts = [umma.decode_smem_desc(umma.smem_desc_for_tile("K", "128B", "f16", (128, 64), kb)).start_address for kb in range(4)]
print("start addresses:", starts, "  expected", [32 * kb for kb in range(4)])
umma.plot_k_steps("K", "128B", "f16", (8, 64))
plt.show()

# %% [markdown]
# ## A whole kernel: one `wgmma` chain on Hopper
#
# Hopper cannot run `tcgen05`, but its `wgmma.mma_async` reads A and B from shared memory through
# the same canonical layouts and an SM90 descriptor (same fields, the swizzle code two bits higher).
# That makes it the part of this stage an H100 can run. `cuda_src/teach_wgmma.cu` is the whole
# kernel: copy the operand bytes into SMEM, `fence.proxy.async` (the tensor core reads SMEM through
# the async proxy), `wgmma.fence`, one `wgmma.mma_async.m64n64k16` per 16 of K, `commit_group`,
# `wait_group 0`, registers out. Every layout decision is in the descriptors, built in Python.

# %%
from bwlab.lab import TeachingKernel
TeachingKernel("teach_wgmma.cu").show()

# %% [markdown]
# Its case: A (64 x 64) and B (64 x 64) f16, both K-major in the 128-byte swizzle, B 16 KiB after A.
# The descriptors per K step differ only in the start address (`+2` = 32 bytes, as above):

# %%
case = umma.WgmmaCase("f16", N=64, K=64, a_major="K", a_swizzle="128B", b_major="K", b_swizzle="128B",
                      kernel="teach_wgmma.cu")   # run by the teaching kernel (your %%cuda edit, if any)
ad, bd = case.descriptors()
print("A:", [f"{d:#x}" for d in ad])
print("B:", [f"{d:#x}" for d in bd])
print("the model equals NumPy A @ B.T:", np.array_equal(case.model(), case.reference()), " (expected True)")

# %% [markdown]
# Run it on a Hopper GPU when there is one (or, without a GPU, in bwlab's PTX emulator), and take what
# an H100 produced when it ran this kernel; each compared with the model computed now, element by element:

# %% tags=["nbval-ignore-output"]
print(case.results())

# %% [markdown]
# ### Change a descriptor
#
# `umma.edit_descs(descs, arch, field=value)` replaces one field in every descriptor of the K loop.
# First the stride between A's 8-row groups (SBO): 512 bytes instead of 1024. The tensor core then
# reads rows 8-15 of A from the second half of the rows 0-7 atom, and so on: `check()` names the
# first wrong D element, which register of which thread holds it, and which operand to suspect.

# %%
bad = (umma.edit_descs(ad, "sm90", stride_byte_offset=512), bd)
print(case.check(case.model(descriptors=bad), source="the model, given your descriptors"))

# %% [markdown]
# What the kernel does with the same edit (`case.with_descriptors(bad)`: on a Hopper GPU or in the
# emulator now, and as the H100 recorded it). The model predicted it: each D equals the model of the
# edited descriptors, and differs from the correct D where the model said it would.

# %% tags=["nbval-ignore-output"]
res = case.with_descriptors(bad).results()
for r in res.results:
    print(f"{r.source}: D equals the model of the edited descriptors:",
          case.compare(case.model(descriptors=bad), r.value).ok, "  (expected True)")
print(res)

# %% [markdown]
# Two more edits: the wrong swizzle code for A (64-byte instead of 128-byte: rows whose line number
# is not 0 mod 8 read the wrong chunks), and a different LBO for B — which changes nothing, because
# in a swizzled K-major layout the hardware finds K inside the atom's 128-byte row and never uses
# LBO. Try your own: any field of `umma.SmemDesc` (`start_address`, `leading_byte_offset`,
# `stride_byte_offset`, `swizzle`, `base_offset`).

# %% tags=["nbval-ignore-output"]
edits = {"a_swizzle64B": (umma.edit_descs(ad, "sm90", swizzle="64B"), bd),
         "b_lbo4096": (ad, umma.edit_descs(bd, "sm90", leading_byte_offset=4096))}
for name, descs in edits.items():
    res = case.with_descriptors(descs).results()
    for r in res.results:
        print(f"{name}, {r.source}: D equals the model of the edit: "
              f"{case.compare(case.model(descriptors=descs), r.value).ok}  (expected True)")
    print(res, end="\n\n")

# %% [markdown]
# ### Change the kernel
#
# The kernel text is yours to change too: `TeachingKernel(...).replace(old, new)` gives an edited
# copy, and `umma.WgmmaCase(..., kernel=mine)` runs it. (Or put the whole edited file in a cell
# that starts with `%%cuda teach_wgmma.cu` after `%load_ext bwlab.lab`: every later run uses it.)
# A mistake comes back with the line of *your* text it is on:

# %%
from bwlab.compile import CompileError
mine = TeachingKernel("teach_wgmma.cu").replace("wgmma_commit_group();", "wgmma_commit();")
try:
    mine.compile()
except CompileError as e:
    print(str(e).split("--- where ---")[-1].strip())

# %% [markdown]
# ### A worked reading: the SBO field of this case's A
#
# The A descriptor of the first K step of the case above, decoded field by field (the SM90 form). A is
# K-major in the 128-byte swizzle: an atom is 8 rows x 128 bytes, so the next 8-row group starts
# 8 x 128 bytes on, and SBO (bits 32-45) holds that distance >> 4:

# %%
print(umma.format_fields(umma.decode_smem_desc(ad[0], "sm90").fields(), f"A, K step 0: {ad[0]:#018x}"))
sbo_field = (ad[0] >> 32) & 0x3FFF
print(f"SBO field (bits 32-45) = {sbo_field} -> {sbo_field << 4} bytes   expected 8 rows x 128 bytes = {8 * 128}")

# %% [markdown]
# ### Exercise 3.5 — your SBO of A, put into the kernel (3 points)
#
# A new case, your own (printed below): A is K-major, 64 x K f16, in a swizzle of its own (or none), B
# K-major in one of its own. You supply a number, `a_sbo`; the check puts it into the kernel for you. Python
# now hands the kernel A descriptors whose SBO field is 0, and the edited kernel fills it in from your number:
#
# ```c++
# (a_descs[kb] | ((u64)(((YOUR_SBO) >> 4) & 0x3FFF) << 32)) + base
# ```
#
# (`ex.sbo_kernel(sbo)` makes that edit of `teach_wgmma.cu`.) Give `a_sbo` in bytes. The edited kernel is
# compiled; on a Hopper GPU it runs in a worker process, elsewhere the `wgmma` model executes the same
# descriptors. Either way D is compared with `A @ B.T`, and a wrong SBO is named by the first D element
# it spoils, its thread and register. Predict first: which rows of D can a wrong SBO spoil?

# %% nbgrader={"grade": false, "grade_id": "mma_teach_sbo", "locked": false, "schema_version": 3, "solution": true}
from bwlab.umma import exercises as ex
print("your case:", ex.teach_sbo_text())
a_sbo = None   # your answer: SBO of A in bytes
### BEGIN SOLUTION
row = {"none": 16, "32B": 32, "64B": 64, "128B": 128}[ex.teach_sbo_case()["a_swizzle"]]   # bytes of one atom row
a_sbo = 8 * row   # the next 8-row group: 8 rows of the atom (of the core matrix, unswizzled) further
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "mma_teach_sbo_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.umma import exercises as ex
ex.check_teach_sbo(a_sbo)

# %% [markdown]
# ## The MMA, computed from SMEM bytes
#
# A (128 x 64) and B (256 x 64) sit row-major in global memory. A TMA load with the 128-byte swizzle
# brings each into shared memory in exactly the K-major SW128 canonical layout — loaded by the real
# TMA engine when this machine has one (the `tma` tier is *hardware*), by bwlab's TMA model otherwise.
# The model then runs the K loop of `tcgen05.mma` from those bytes and the descriptors above, and
# commits to an mbarrier; the result is compared with NumPy's `A @ B.T`.

# %% tags=["nbval-ignore-output"]
r = umma.tma_fed_mma(M=128, N=256, K=64)
print("operand bytes from:", r.source)
print("descriptors (A, B) per K step:", [(f"{a:#x}", f"{b:#x}") for a, b in r.descriptors])

# %%
print("D[0, :4] model:", r.d_model[0, :4], "  NumPy:", r.d_numpy[0, :4])
print("D equals NumPy A @ B.T bit for bit:", r.exact, "  (expected True)")

# %% [markdown]
# ### tf32 operands that are MN-major
#
# One layout is SM100's own: the **128-byte swizzle with 32-byte atomicity** (descriptor swizzle
# code 1, CuTe's `Layout_MN_SW128_32B_Atom`). Its rows are 128 bytes like the 128-byte swizzle's,
# but the pattern moves **32-byte** units: unit u of row r goes to u XOR (r mod 4), a 512-byte
# pattern (CuTe `Swizzle<2,5,2>` on byte addresses). For `.kind::tf32` it is the only layout an
# MN-major (transposed) A or B may use (PTX ISA, tcgen05 "Transpose and Negate operations"); a
# K-major tf32 operand takes the usual four. Side by side for an MN-major tf32 tile:

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 5.5))
umma.plot_smem_layout("MN", "128B", "tf32", ax=axes[0], color_by="piece", legend=False)
umma.plot_smem_layout("MN", "128B_base32B", "tf32", ax=axes[1], color_by="piece", legend=False)
axes[0].set_title("MN-major 128B (refused for tf32): 16-byte chunks move", fontsize=11)
axes[1].set_title("MN-major 128B_base32B: 32-byte units move", fontsize=11)
fig.suptitle("tf32, MN-major: colour = the 16-byte piece of the 128-byte MN row a chunk holds", fontsize=12)
plt.tight_layout()
plt.show()
lay32 = umma.canonical_layout("MN", "128B_base32B", "tf32", (32, 4))
for mn, k in [(0, 0), (0, 1), (8, 1), (0, 3)]:
    plain = 128 * k + 4 * mn
    print(f"(mn={mn}, k={k}) -> byte {int(lay32.address(mn, k)):4d}   expected {plain ^ ((plain >> 2) & 0x60):4d}")

# %% [markdown]
# The same check through every combination of majors and SMEM layouts for A and B, with f16, bf16
# and tf32 operands (the model reads each through `bwlab.umma.read_operand`). Each case is checked
# against the tcgen05.mma rule tables (`bwlab.umma.rules`) when it is built; an illegal one is
# refused with the rule it breaks and never reaches the model or a GPU:

# %%
survey = umma.layout_survey(("f16", "bf16", "tf32"))      # 128 x 128 D, every (A layout, B layout) pair
print(f"legal combinations: {survey.legal}  (expected f16 64, bf16 64, tf32 25 = 5 x 5)")
print(f"mismatches among them: {len(survey.mismatches)}  (expected 0)")
print(f"refused: {len(survey.refused)}, all tf32: {all(ab == 'tf32' for ab, _ in survey.refused)}  "
      "(expected 56 = 81 - 25, True)")
print("for example:", survey.refused[0][1])

# %% [markdown]
# ### Where D lands in TMEM
#
# The PTX ISA (tcgen05, "Data path layout organization") names each way D can be laid out in TMEM
# with a letter (layout A, layout B, ...); four of them appear here. With M = 128 row m of D
# is TMEM lane m (layout D). With M = 64 the rows are spread 16 per warp quarter (layout F), because
# each warp can reach only its own 32 lanes. A CTA pair (`cta_group::2`) splits M between the two CTAs:
# M = 256 gives each CTA 128 rows (layout A); M = 128 gives each 64 rows, with the two halves of N
# stacked in lanes 0-63 and 64-127 (layout B).

# %%
umma.plot_d_tmem_layouts(N=64)
plt.show()

# %%
for M in (256, 128):
    d, ref = umma.cta_pair_mma(M=M, N=64)
    print(f"cta_group::2, M={M}: D from both CTAs' TMEM equals NumPy: {np.array_equal(d, ref)}  (expected True)")

# %% [markdown]
# ## The layouts on an H100, all of them
#
# The teaching kernel fixes N = 64 and K-major operands. The validation kernel
# (`cuda_src/wgmma_sm90.cu`, not shown: it instantiates every N and both transpose bits) runs any
# layout for A and B at any 1024-byte-aligned offset. A few of those cases, on a Hopper GPU now or as
# an H100 recorded them, each compared with the model. In each label `@832` is the shared-memory byte
# offset at which that operand's tile starts (any 16-byte boundary without a swizzle, the pattern's
# 256/512/1024-byte span with one), and `acc` marks a case that accumulates onto a nonzero D0 (D = D0 +
# A·Bᵀ, the accumulate flag set from the first K step) instead of starting from zero:

# %% tags=["nbval-ignore-output"]
for c in umma.layout_cases():
    result = c.check()            # run here (a Hopper GPU, or the emulator), else the H100's recording
    print(f"{'exact   ' if result else 'MISMATCH'}  {c.label()}")
    if not result:
        print(result)
print("source:", result.source)

# %% [markdown]
# ## A whole kernel: `tcgen05.mma` on Blackwell
#
# `cuda_src/teach_umma.cu` is the same data path on sm_100: warp 0 allocates TMEM columns (the
# address lands in SMEM); **one elected thread** issues the K loop of `tcgen05.mma` and
# `tcgen05.commit`s to the mbarrier `mma_done`; every thread waits for it with a bounded wait,
# orders its TMEM reads after the MMAs with `tcgen05.fence::after_thread_sync`, reads its warp's 32
# lanes with `tcgen05.ld.32x32b` and stores them; warp 0 frees the columns. The `.sync.aligned`
# instructions (`alloc`, `ld`, `wait::ld`, `dealloc`) are executed by whole warps, never behind a
# per-thread condition: that is why the CTA agrees on the wait's outcome (`__syncthreads_or`) first.

# %%
TeachingKernel("teach_umma.cu").show()

# %% [markdown]
# Its case: M = 128, N = 64, K = 64, f16 into f32, both operands K-major in the 128-byte swizzle.
# An H100 cannot run `tcgen05` and there is no recording of it; the cell's first line says what runs it
# here. In bwlab's PTX emulator the accumulation's rounding is bwlab's model, since no Blackwell GPU has
# checked it; on a Hopper GPU the cell says so and the model answers.

# %% tags=["nbval-ignore-output"]
ucase = umma.UmmaCase("f16", "f32", M=128, N=64, K=64, b_base=16384, kernel="teach_umma.cu")
bwlab.device.where("umma", print_it=True)
expected_idesc = (1 << 4) | (128 >> 4 << 24) | (64 >> 3 << 17)   # D f32 (bits 4-5), M>>4 (24-28), N>>3 (17-22)
print(f"idesc {ucase.idesc:#010x}   expected {expected_idesc:#010x} = f32 D 1<<4 | (128>>4)<<24 | (64>>3)<<17; "
      f"f16 A, B (code 0), both K-major (0)")
print(f"{ucase.k_blocks} K steps (expected 64 / 16 = 4), {ucase.tmem_columns} TMEM columns (expected N = 64)")
print(ucase.results())     # an sm_100 GPU, or the kernel's sm_100a PTX in bwlab's emulator; no recording exists
print("The model's D equals NumPy:", np.array_equal(ucase.d_from_tmem(ucase.model()), ucase.reference()),
      " (expected True)")

# %% [markdown]
# The instruction descriptor is yours to change as well: say B is MN-major (bit 16) while its bytes
# are K-major. Every element of D is wrong, and `check()` points at the instruction descriptor:

# %%
wrong_idesc = umma.make_instr_desc("f16", "f16", "f32", 128, 64, "K", "MN")
print(f"idesc {wrong_idesc:#010x} instead of {ucase.idesc:#010x}")
print(ucase.check(ucase.model(idesc=wrong_idesc), source="the model, given your idesc"))

# %% [markdown]
# The kernel takes the descriptor as an argument, so the case can hand it yours: `with_idesc` gives the
# same case whose `run()` passes `wrong_idesc` to `teach_umma.cu`. Its D is what the model, given your
# idesc, predicted above, and the comparison with the case's own model fails the same way:

# %% tags=["nbval-ignore-output"]
mine = ucase.with_idesc(wrong_idesc)
print(mine.results())     # an sm_100 GPU, or the kernel's sm_100a PTX in bwlab's emulator

# %% [markdown]
# A deliberately broken kernel: without `tcgen05.commit`, nothing ever arrives on `mma_done`. It
# still compiles (for sm_100a, here, without a GPU); on a GPU the bounded wait gives up after its
# timeout and the launch raises `MbarrierTimeout` naming `mma_done`, instead of hanging. In the
# model the barrier's phase 0 never completes:

# %%
from bwlab.hw.mbarrier import Mbarrier
broken = TeachingKernel("teach_umma.cu").replace("tcgen05_commit(&mma_done);", "")
print("compiles for", broken.targets, "with kernels", broken.compile().kernels())
mma_done = Mbarrier(1)            # mbarrier.init(&mma_done, 1); no tcgen05.commit arrives
print("phase 0 of mma_done complete:", mma_done.try_wait_parity(0), "  (expected False: the GPU's wait times out)")

# %% [markdown]
# ## Peek under the hood: the PTX
#
# Compiled here with NVRTC (no GPU needed); ptxas has checked every line. The `tcgen05` and
# `mbarrier` instructions of the sm_100a kernel, each at its first appearance (the compiler unrolls
# the K loop and the column loop, so `tcgen05.mma` and `tcgen05.ld` repeat):

# %%
ptx = TeachingKernel("teach_umma.cu").compile("sm_100a")
print(ptx.ptx_excerpt("teach_umma", patterns=("tcgen05", "mbarrier"), first_only=True, width=150))

# %% [markdown]
# And the Hopper kernel's `wgmma` lines (sm_90a): same descriptors, a warpgroup instead of one
# thread, registers instead of TMEM:

# %%
w = TeachingKernel("teach_wgmma.cu").compile("sm_90a")
print(w.ptx_excerpt("teach_wgmma", patterns=("wgmma.", "fence.proxy"), first_only=True, width=150))

# %% [markdown]
# ## Recap
#
# - `tcgen05.mma` takes M = 64 or 128 for one CTA and M = 128 or 256 for a CTA pair, N up to 256;
#   invalid shapes are refused with the rule they break.
# - The K loop moves only the descriptors' start address: 32 bytes (16 f16) per instruction.
# - `tcgen05.mma` is issued by one thread, writes D to TMEM and reports completion through
#   `tcgen05.commit` to an mbarrier; `wgmma` is issued by a warpgroup into registers. Both read the
#   same layouts, so the H100 checks bwlab's layout and descriptor model bit for bit.
# - tf32 operands that are MN-major need SM100's 128-byte swizzle with 32-byte atoms.
# - Where D lands in TMEM depends on M and on `cta_group`: one lane per row for M = 128, rows spread
#   over the warp quarters for M = 64, split between the CTAs of a pair.
# - A wrong descriptor shows in D: wrong rows in every column point at A, wrong columns at B, all
#   wrong at the instruction descriptor.
#
# **Next:** [04 · TMEM load](04_tmem_load.ipynb) — how the epilogue's warps read D out of Tensor
# Memory with `tcgen05.ld` (the shapes, the lane quarters, and what the 32x32b load used above does
# among them).
