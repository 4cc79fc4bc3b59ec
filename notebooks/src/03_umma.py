# %% [markdown]
# # 03 · UMMA: `tcgen05.mma`, its descriptors, and the canonical SMEM layouts
#
# The third hop of the data path: the 5th-generation tensor core reads A and B from **shared memory**
# and writes the accumulator D into **Tensor Memory**. This notebook takes the instruction apart:
# the canonical layouts the operands must sit in, the two 64-bit **SMEM descriptors** that tell the
# tensor core where they are, the 32-bit **instruction descriptor** that says what to compute, and
# the K loop. Everything is executed by bwlab's model from raw bytes, checked against NumPy, and —
# because Hopper's `wgmma` reads SMEM through the same layouts — validated bit for bit on an H100.
#
# **Runs on:** the line below says which tier the `umma` stage has here. *hardware* = a Blackwell
# sm_100 GPU runs `tcgen05.mma`; *hybrid* = the GPU loads the operands with real TMA and the model
# multiplies them; *model* = no GPU.

# %% tags=["nbval-ignore-output"]
import bwlab
bwlab.banner();

# %%
import numpy as np
import matplotlib.pyplot as plt
from bwlab import umma
from bwlab.hw.swizzle import MODES
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
# ## Core matrices and the eight canonical layouts
#
# The tensor core fetches operands in **core matrices**: 8 rows of 16 bytes (8 f16 values). A
# **K-major** operand has its rows along K (K is contiguous, like a row-major A); an **MN-major** one
# along M or N. Core matrices are grouped into **swizzle atoms** of 8 rows x W bytes (W = 16, 32, 64,
# 128 for no swizzle and the 32/64/128-byte swizzles), and atoms tile the operand along MN first,
# then K — CuTe's `tile_to_shape(Layout_K_SW128_Atom<T>, ...)`.

# %%
umma.plot_core_matrices("K", "f16", (16, 32))
plt.show()

# %% [markdown]
# Which element sits at which byte, for a 16 x 64 (K-major) or 64 x 16 (MN-major) f16 tile: each cell
# is a 16-byte chunk of shared memory labelled with the row `m` and the first `k` it holds. Without a
# swizzle the chunks of one row are 16 bytes apart in a column; with a swizzle, chunk c of a 128-byte
# line moves to c XOR (line mod 2, 4 or 8) — the same pattern TMA writes (notebook 01).

# %%
fig, axes = plt.subplots(2, 4, figsize=(24, 10))
for i, major in enumerate(umma.MAJORS):
    for j, sw in enumerate(MODES):
        umma.plot_smem_layout(major, sw, ax=axes[i, j])
fig.suptitle("The canonical layouts: SMEM bytes 0-1023 of each")
plt.tight_layout()
plt.show()

# %% [markdown]
# The layout functions are ordinary functions of (m, k). For the K-major 128-byte swizzle, inside the
# first atom, element (m, k) of an f16 tile sits at `128*m + 16*((k//8) XOR m) + 2*(k%8)`:

# %%
lay = umma.canonical_layout("K", "128B", "f16", (128, 64))
for m, k in [(0, 0), (1, 0), (1, 8), (3, 17), (7, 63)]:
    expected = 128 * m + 16 * ((k // 8) ^ m) + 2 * (k % 8)
    print(f"(m={m}, k={k:2d}) -> byte {int(lay.address(m, k)):4d}   expected {expected:4d}")

# %% [markdown]
# ## The SMEM descriptor
#
# A descriptor does not list addresses; it gives the start address, two strides and the swizzle, and
# the tensor core walks the canonical layout from there. For a K-major operand **SBO** (stride byte
# offset) is the distance between 8-row groups along M/N; **LBO** (leading byte offset) the distance
# between the two core matrices of K — used only without a swizzle: in every swizzled K-major layout
# the hardware finds K inside the atom row, LBO is unused and CuTe sets it to 1 (16 bytes). For
# MN-major operands the roles turn around (see `bwlab.umma.descriptors`).
#
# The first K slice of a 128 x 64 f16 tile in the 128-byte swizzle, as CuTe's `make_umma_desc` and
# `make_gmma_desc` encode it (the issue and REFERENCE give 0x4000404000010000 for SM100):

# %%
for arch, expected in (("sm100", 0x4000404000010000), ("sm90", 0x4000004000010000)):
    d = umma.tile_desc("K", "128B", "f16", (128, 64), 0, 0, arch)
    print(umma.format_fields(d.fields(), f"{arch}: {d.encode():#018x}   expected {expected:#018x}"))
    print()

# %% [markdown]
# SM90 and SM100 descriptors differ in three places: SM100 sets the fixed value 0b001 in bits 46-48,
# has a leading-dimension mode bit (52), and keeps a 3-bit swizzle code in bits 61-63 (none 0,
# 128B-with-32B-atoms 1, 128B 2, 64B 4, 32B 6) where SM90 has 2 bits at 62-63 (none 0, 128B 1, 64B 2,
# 32B 3). The two codes set the same top bits for the same swizzle:

# %%
for sw in MODES:
    a = umma.make_smem_desc(0, 16, 1024, sw, arch="sm100")
    b = umma.make_smem_desc(0, 16, 1024, sw, arch="sm90")
    print(f"{sw:5s} sm100 bits 61-63 = {a >> 61}   sm90 bits 62-63 = {b >> 62}   same top byte: {a >> 56 == b >> 56}")

# %% [markdown]
# ### The instruction descriptor
#
# 32 bits: the types of A, B and D, the majors (the "transpose" bits), negation, N >> 3 and M >> 4.
# CuTe's `make_instr_desc<half_t, half_t, float, 128, 256, K, K>` gives 0x08400010:

# %%
idesc = umma.make_instr_desc("f16", "f16", "f32", 128, 256)
print(umma.format_fields(umma.decode_instr_desc(idesc).fields(), f"idesc = {idesc:#010x}   expected 0x08400010"))

# %% [markdown]
# Invalid combinations are refused before anything reaches a GPU, naming the rule:

# %%
for args in [("f16", "f16", "f32", 256, 128), ("bf16", "bf16", "f16", 128, 128), ("f16", "f16", "f32", 128, 100)]:
    try:
        umma.make_instr_desc(*args)
    except ValueError as e:
        print(f"{args}: {e}")

# %% [markdown]
# Try it: pick a layout and see both descriptors, or paste a descriptor to decode it; and build an
# instruction descriptor. (Widgets need a live kernel; the stored notebook shows none.)

# %% tags=["nbval-ignore-output"]
umma.descriptor_widget();

# %% tags=["nbval-ignore-output"]
umma.instr_desc_widget();

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
fig, axes = plt.subplots(1, 2, figsize=(13, 5))
umma.plot_smem_layout("MN", "128B", "tf32", ax=axes[0], color_by="piece")
umma.plot_smem_layout("MN", "128B_base32B", "tf32", ax=axes[1], color_by="piece")
axes[0].set_title("MN-major 128B (refused for tf32)", fontsize=9)
axes[1].set_title("MN-major 128B_base32B: 32-byte units move", fontsize=9)
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
operand_layouts = [(m, s) for m in umma.MAJORS for s in MODES] + [("MN", "128B_base32B")]
legal, bad, refused = {}, [], []
for ab in ("f16", "bf16", "tf32"):
    for am, asw in operand_layouts:
        for bm, bsw in operand_layouts:
            if ab != "tf32" and "128B_base32B" in (asw, bsw):
                continue                     # the tf32 layout; not modelled for 16-bit operands
            k = max(umma.atom_shape(am, asw, ab)[1], umma.atom_shape(bm, bsw, ab)[1], umma.instr_k(ab))
            try:
                case = umma.UmmaCase(ab, "f32", 128, 128, k, am, asw, bm, bsw, 1024, 65536)
            except umma.MmaRuleError as e:
                refused.append((ab, str(e)))
                continue
            legal[ab] = legal.get(ab, 0) + 1
            if not np.array_equal(case.d_from_tmem(case.model()), case.reference()):
                bad.append((ab, am, asw, bm, bsw))
print(f"legal combinations: {legal}  (expected f16 64, bf16 64, tf32 25 = 5 x 5)")
print(f"mismatches among them: {len(bad)}  (expected 0)")
print(f"refused: {len(refused)}, all tf32: {all(ab == 'tf32' for ab, _ in refused)}  "
      "(expected 56 = 81 - 25, True)")
print("for example:", refused[0][1])

# %% [markdown]
# ### Where D lands in TMEM
#
# With M = 128 row m of D is TMEM lane m. With M = 64 the rows are spread 16 per warp quarter (layout
# F), because each warp can reach only its own 32 lanes. A CTA pair (`cta_group::2`) splits M between
# the two CTAs: M = 256 gives each CTA 128 rows (layout A); M = 128 gives each 64 rows, with the two
# halves of N stacked in lanes 0-63 and 64-127 (layout B).

# %%
fig, axes = plt.subplots(1, 4, figsize=(24, 6))
for ax, (M, N, cg) in zip(axes, [(128, 64, 1), (64, 64, 1), (256, 64, 2), (128, 64, 2)]):
    umma.plot_d_tmem_layout(M, N, cg, ax=ax)
plt.tight_layout()
plt.show()

# %%
for M in (256, 128):
    d, ref = umma.cta_pair_mma(M=M, N=64)
    print(f"cta_group::2, M={M}: D from both CTAs' TMEM equals NumPy: {np.array_equal(d, ref)}  (expected True)")

# %% [markdown]
# ## The same layouts on real hardware: wgmma on Hopper
#
# Hopper cannot run `tcgen05`, but its `wgmma` reads shared memory through the same canonical layouts
# and an SM90 descriptor. `cuda_src/wgmma_sm90.cu` runs m64nNk16 on operands that Python laid out; the
# model, given the same bytes and descriptors, must predict every result bit for bit. On an H100 this
# cell runs a few cases; `python -m bwlab.validate wgmma` runs all 128 layout combinations.

# %% tags=["nbval-ignore-output"]
from bwlab import device
info = device.gpu_info()
regular, _ = umma.wgmma_cases()
picked = regular[3::11]
if info is not None and info.has_wgmma:
    for case in picked:
        result = case.check()           # run() on the GPU, model() here, bit for bit
        print(f"{'exact' if result else 'MISMATCH'}  {case.label()}")
        if not result:
            print(result)
else:
    print("No sm_90a GPU here: this cell would run these cases with wgmma and compare with the model:")
    for case in picked:
        print("  ", case.label())

# %% [markdown]
# What the H100 said when the full validation ran (`docs/results/wgmma_validate_h100.txt`, committed with
# the command that produced it):

# %% tags=["nbval-ignore-output"]
from pathlib import Path
res = Path(bwlab.__file__).resolve().parent.parent / "docs" / "results" / "wgmma_validate_h100.txt"
if res.exists():
    text = res.read_text().splitlines()
    print("\n".join(l for l in text if l.startswith(("regular", "exploratory", "wgmma validation", "NVIDIA", "command"))))
else:
    print("not recorded yet:", res)

# %% [markdown]
# ## The real `tcgen05.mma` on Blackwell
#
# `cuda_src/umma_sm100.cu`: warp 0 allocates TMEM, thread 0 issues the K loop of `tcgen05.mma` with
# the descriptors built above and commits to an mbarrier, every thread waits (bounded), fences, reads
# its warp's 32 lanes with `tcgen05.ld.32x32b`, and warp 0 frees the columns. The kernel copies the
# whole TMEM image back, and it is compared with the model's.

# %% tags=["nbval-ignore-output"]
case = umma.UmmaCase("f16", "f32", 128, 256, 64)
if tier("umma") == "hardware":
    hw = case.run()
    print(case.check(hw))
    print("D equals NumPy:", np.array_equal(case.d_from_tmem(hw), case.reference()))
else:
    print(f"tier('umma') is {tier('umma')!r}: tcgen05 needs an sm_100 GPU. On one, this cell runs "
          f"umma_validate with idesc {case.idesc:#010x} and {case.k_blocks} K steps and compares TMEM.")

# %%
from bwlab.source import show_source
text = show_source("umma_sm100.cu")

# %% [markdown]
# ## Peek under the hood: the PTX for sm_100a
#
# Compiled here with NVRTC (no GPU needed); ptxas has checked every `tcgen05` line.

# %%
from bwlab.compile import compile_cuda
ptx = compile_cuda("umma_sm100", arch="sm_100a")
print(ptx.ptx_excerpt("umma_validate", patterns=("tcgen05", "mbarrier", "fence")))

# %% [markdown]
# And the Hopper kernel's `wgmma` lines (sm_90a), for comparison — same descriptors, a warpgroup
# instead of one thread, registers instead of TMEM:

# %%
w = compile_cuda("wgmma_sm90", arch="sm_90a")
lines = w.ptx_excerpt("wgmma_m64n64k16_validate", patterns=("wgmma.", "fence.proxy")).splitlines()
print("\n".join(l[:160] for l in lines[:6]))
