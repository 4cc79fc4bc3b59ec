# %% [markdown]
# # 04 · TMEM: allocation, addresses, and `tcgen05.ld` as a thread map
#
# The tensor core of stage 3 leaves the accumulator in **Tensor Memory** (TMEM), a per-SM memory of the
# GPUs with `tcgen05` (the PTX ISA lists sm_100a, sm_103a and sm_110a). Before the TMA store of stage 5
# can write D to global memory, the epilogue warps must bring it into registers with **`tcgen05.ld`**.
# This notebook covers:
#
# 1. TMEM as a grid of 128 lanes x 512 columns of 32 bits;
# 2. allocation (`tcgen05.alloc` / `dealloc` / `relinquish_alloc_permit`) and its rules;
# 3. the TMEM address (lane in bits 31-16, column in bits 15-0);
# 4. warp quarters: which lanes a warp may touch;
# 5. the five `tcgen05.ld` shapes as thread maps, and the registers each thread receives;
# 6. which thread ends up holding `D[r][c]`;
# 7. `tcgen05.wait::ld`; the accumulator read out; a widget; the PTX.
#
# **Runs on:** the first cell says which tier the TMEM stage runs in here. On an sm_100-family GPU the
# round-trip kernels of `cuda_src/tmem_sm100.cu` run for real and are compared with the model; elsewhere
# TMEM is modelled by `bwlab.tmem` (the kernels are still compiled for sm_100a, so ptxas checks them).

# %% tags=["nbval-ignore-output"]
import bwlab
bwlab.banner()
print("TMEM stage tier here:", bwlab.tier("tmem"))

# %%
import numpy as np
import matplotlib.pyplot as plt
from bwlab import tmem
from bwlab.tmem import TensorMemory, TmemAccess, TmemError

# %% [markdown]
# ## 1. TMEM is a 128 x 512 grid of 32-bit cells
#
# One SM has 128 **lanes** (rows) and 512 **columns**; each cell holds 32 bits. A 128 x N f32 accumulator
# of `tcgen05.mma` with M = 128 occupies lanes 0..127 and N columns: one row of D per lane.

# %%
print(f"{tmem.LANES} lanes x {tmem.COLUMNS} columns x 4 bytes = "
      f"{tmem.LANES * tmem.COLUMNS * 4 // 1024} KiB per SM   (expected: 256 KiB)")
print(f"a 128 x 256 f32 accumulator takes {256} columns = half of TMEM")

# %% [markdown]
# ## 2. Allocation
#
# TMEM is handed out in **columns** (every allocated column has all 128 lanes):
#
# * one whole warp executes `tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [smem], ncols`;
#   `ncols` is a power of two in [32, 512]; the TMEM address of the allocation is **written to shared
#   memory**, from where every thread of the CTA reads it (after a `__syncthreads` between tcgen05 fences);
# * the number of columns must not increase from one allocation of a CTA to the next: allocate the
#   largest first;
# * one warp of the CTA allocates, and a warp frees exactly one earlier allocation with `tcgen05.dealloc`;
#   everything must be freed before the CTA exits. (The PTX ISA asks that one warp of the CTA allocate
#   and deallocate; CuTe's allocator asks for the same warp only for repeated allocations. Freeing from
#   the allocating warp is what every source agrees with, so the model lets another warp free but says so.)
# * `tcgen05.relinquish_alloc_permit`: the CTA gives up its right to allocate; a later `tcgen05.alloc` of
#   that CTA is illegal. (The ISA says nothing more about it.)
# * CTAs resident on the same SM share the 512 columns; on hardware an allocation that does not fit
#   *blocks* until someone frees columns.
#
# `TensorMemory` models one SM. Two CTAs allocate; CTA 0 also receives its address in a (modelled) SMEM slot:

# %%
tm = TensorMemory()
smem = np.zeros(16, dtype=np.uint8)          # CTA 0's shared memory (the first 16 bytes of it)
a0 = tm.alloc(cta=0, warp=0, ncols=256, smem=smem, smem_offset=0)
a1 = tm.alloc(cta=1, warp=2, ncols=128)
print(f"CTA 0: {a0:#010x}   written to SMEM bytes 0-3 as {smem[:4].view(np.uint32)[0]:#010x}")
print(f"CTA 1: {a1:#010x}   free columns left: {tm.free_columns}   (expected: 128)")
tmem.draw_tmem(tm)
plt.show()

# %% [markdown]
# Where an allocation lands is not something a kernel may assume; it must use the address written to SMEM.
# (The model takes the lowest free range aligned to the allocation's size.) Every rule has an error that
# names it and the PTX ISA section it comes from; what the sources leave open comes back as a note:

# %%
import warnings

def attempt(what, fn):
    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always", tmem.TmemNote)
        try:
            fn()
            print(f"{what}: ok")
        except TmemError as e:
            print(f"{what}:\n    {e}")
    for n in notes:
        print(f"    note: {n.message}")

attempt("CTA 2 asks for 96 columns", lambda: tm.alloc(cta=2, warp=0, ncols=96))
attempt("CTA 2 asks for 256 columns", lambda: tm.alloc(cta=2, warp=0, ncols=256))
attempt("CTA 1 asks for 256 columns after its 128", lambda: tm.alloc(cta=1, warp=2, ncols=256))
attempt("CTA 1 allocates from warp 3", lambda: tm.alloc(cta=1, warp=3, ncols=32))
attempt("CTA 1 frees from warp 2", lambda: tm.dealloc(cta=1, warp=2, taddr=a1, ncols=128))
attempt("CTA 1 frees again", lambda: tm.dealloc(cta=1, warp=2, taddr=a1, ncols=128))
tm.relinquish_alloc_permit(cta=1)
attempt("CTA 1 allocates after relinquish_alloc_permit", lambda: tm.alloc(cta=1, warp=2, ncols=32))
attempt("CTA 0 exits without freeing", lambda: tm.exit(cta=0))
attempt("CTA 2 asks for 256 columns again", lambda: tm.alloc(cta=2, warp=0, ncols=256))

# %% [markdown]
# Freeing from another warp than the one that allocated is where the sources differ, so the model frees
# and says what each source asks for:

# %%
tm2 = TensorMemory()
a = tm2.alloc(cta=0, warp=1, ncols=64)
attempt("CTA 0 frees warp 1's allocation from warp 0", lambda: tm2.dealloc(cta=0, warp=0, taddr=a, ncols=64))
print("free columns:", tm2.free_columns, "  (expected: 512)")

# %% [markdown]
# ## 3. The TMEM address
#
# A TMEM address is 32 bits: **lane in bits 31-16, column in bits 15-0**. `tcgen05.alloc` returns lane 0
# and the first column; a warp adds its lane and the column it wants.

# %%
print(tmem.format_address(a0))
print(tmem.format_address(a1))
mine = a0 + (64 << 16) + 8       # warp 2 (lanes 64..95), 8 columns into CTA 0's allocation
print(tmem.format_address(mine))
print("decoded:", tmem.decode_address(mine), "  expected: (64, 8)")

# %% [markdown]
# ## 4. Warp quarters
#
# A warp reaches only one quarter of the lanes: warp *w* of the CTA may access lanes
# **32·(w % 4) .. 32·(w % 4) + 31**. That is why epilogues use a warpgroup (4 warps) to read a 128-lane
# accumulator: each warp reads its own 32 rows.

# %%
tmem.draw_warp_quarters(warps=8)
plt.show()
img = tmem.pattern_image()
attempt("warp 1 loads lane 0", lambda: tmem.tcgen05_ld(img, tmem.encode_address(0, 0), "32x32b", 1, warp=1))
attempt("warp 5 loads lane 32", lambda: tmem.tcgen05_ld(img, tmem.encode_address(32, 0), "32x32b", 1, warp=5))

# %% [markdown]
# ## 5. The five `tcgen05.ld` shapes
#
# `tcgen05.ld.sync.aligned.<shape>.<num>[.pack::16b].b32 {regs}, [taddr]` is executed by a whole warp.
# The shape says how many lanes one instruction touches and how many bits of each lane (`16x256b`: 16
# lanes x 256 bits = 8 columns); `.num` (x1 .. x128) repeats that pattern to the right. Registers per
# thread = num x {1, 1, 2, 4, 1}; at most 128, so `.16x128b` stops at x64 and `.16x256b` at x32
# (ptxas rejects the rest, and so does `TmemAccess`):

# %%
print(f"{'shape':10s}" + "".join(f"{'x' + str(n):>6s}" for n in tmem.NUMS))
for s in tmem.SHAPES:
    row = []
    for n in tmem.NUMS:
        try:
            row.append(str(TmemAccess(s, n).registers))
        except TmemError:
            row.append("-")
    print(f"{s:10s}" + "".join(f"{r:>6s}" for r in row))

# %% [markdown]
# Each picture below is one instruction of warp 0: TMEM lanes (rows) x columns, each cell coloured by the
# thread whose register receives it (label: thread, register). The maps come from
# `tmem.ld_fragment_map` and agree with the PTX ISA's figures and with CuTe's
# `SM100_TMEM_LOAD_*` copy traits (`tests/test_tmem_maps.py` checks every shape, num and pack):
#
# * `.32x32b` — thread *t* reads lane *t*; register *j* is column *j*;
# * `.16x64b` — 16 lanes x 2 columns: thread *t* reads lane t/4 + 8·(t%2), column (t/2)%2;
# * `.16x128b` — 16 lanes x 4 columns: lanes t/4 and t/4 + 8, column t%4;
# * `.16x256b` — 16 lanes x 8 columns: the `mma.m16n8` accumulator fragment (4 registers per thread);
# * `.16x32bx2` — two half-warps over the same 16 lanes; the second half starts an immediate number of
#   columns to the right (`immHalfSplitoff`; here, as in CuTe, right after the first).

# %%
tmem.draw_gallery(num=1)
plt.show()

# %% [markdown]
# `.num` repeats the pattern along the columns, and `.pack::16b` puts the low 16 bits of two neighbouring
# cells into one register (an f16 accumulator keeps one value per 32-bit cell; packing halves the
# registers the epilogue needs):

# %%
tmem.draw_ld_map(TmemAccess("16x128b", 2), warp=0)
plt.show()
tmem.draw_ld_map(TmemAccess("16x64b", 2, pack16=True), warp=0)
plt.show()

# %% [markdown]
# ## 6. Who holds `D[r][c]`?
#
# An epilogue warpgroup reads the 128 x N accumulator with one shape: warp *w* covers lanes 32w..32w+31
# (two loads for a 16-lane shape) and the columns in chunks of the instruction's width. The accumulator of
# the UMMA notebook (M = 128, `cta_group::1`) keeps `D[m][n]` at lane *m*, column *n* (the PTX data-path
# layout "D"; `bwlab.umma.d_tmem_layout`). So the thread that holds
# `D[r][c]` depends only on the load shape:

# %%
N, r, c = 64, 37, 13
lanes, cols = tmem.accumulator_layout(128, N)
m, n = np.meshgrid(np.arange(128), np.arange(N), indexing="ij")
print(f"D[m][n] at lane m, column n for M = 128: {bool((lanes == m).all() and (cols == n).all())}"
      "   (expected True)")
for acc in [TmemAccess("32x32b", 32), TmemAccess("16x256b", 8), TmemAccess("16x64b", 16)]:
    w, i, t, j, _ = tmem.accumulator_owners(acc, 128, N)[r, c]
    taddr = {(s.warp, s.index): s.taddr for s in tmem.epilogue_loads(acc, N)}[(w, i)]
    print(f"tcgen05.ld{acc.label():10s}: D[{r}][{c}] is in warp {w}, load {i} (taddr {taddr:#010x}), "
          f"thread {t}, register {j}")

# %% [markdown]
# Check one by hand: `.16x256b` thread 22 = 4·5 + 2 reads rows 5 and 5 + 8 of its 16-lane block and columns
# 2·2 = 4, 5 (+8 per 4 registers); register 5 = 4 + 1 is row 5 of the block (lane 32 + 5 = 37) and column
# 8 + 4 + 1 = 13. The model agrees, and the register really holds that element:

# %%
image, D, source = tmem.example_accumulator(N)
acc = TmemAccess("16x256b", 8)
words, regs = tmem.read_accumulator(image, acc, 128, N)
w, i, t, j, _ = tmem.accumulator_owners(acc, 128, N)[r, c]
print(f"owner: warp {w}, load {i}, thread {t}, register {j}     expected: warp 1, load 0, thread 22, register 5")
print(f"that register holds D[{r}][{c}]: {regs[(w, i)][t, j].view(np.float32) == np.float32(D[r, c])}"
      "   (expected True)")
tmem.draw_accumulator_owners(acc, 128, N, highlight=(r, c))
plt.show()

# %% [markdown]
# ## 7. `tcgen05.wait::ld`
#
# `tcgen05.ld` is **asynchronous**: the instruction returns before the registers are filled. A warp must
# execute `tcgen05.wait::ld.sync.aligned` before it reads them (and `tcgen05.wait::st` before relying on
# a `tcgen05.st`). The model's `tcgen05_ld` hands back finished registers, so it cannot show the race; the
# kernel shows the order (the load, then `tcgen05_wait_ld()`, then the registers are used):

# %%
from bwlab.source import show_source
_ = show_source("tmem_sm100.cu", kernel="tmem_ld_roundtrip")

# %% [markdown]
# ## 8. The accumulator, read out
#
# The accumulator here came from:

# %% tags=["nbval-ignore-output"]
print(source)

# %% [markdown]
# Every 32-bit shape that tiles 64 columns reads it back exactly through the model (each warp issues its
# loads, and every register is put back at the (m, n) it holds):

# %%
print(f"{'form':18s} {'loads/warp':>10s} {'regs/thread':>12s}  D read back == D")
for s in tmem.SHAPES:
    acc = TmemAccess(s, N // TmemAccess(s, 1).width)      # the .num whose loads are N columns wide
    words, regs = tmem.read_accumulator(image, acc, 128, N)
    same = np.array_equal(words.view(np.float32).astype(np.float64), D)
    print(f"{acc.label():18s} {len(regs) // 4:10d} {acc.registers:12d}  {same}   (expected True)")

# %% [markdown]
# On an sm_100 GPU the same image goes into real TMEM (`tcgen05.st`) and comes back through each real
# `tcgen05.ld` (`tmem_ld_roundtrip` in `cuda_src/tmem_sm100.cu`), and `TmemLoad.check()` compares it
# register by register with the model. Elsewhere this cell says what it would do.

# %% tags=["nbval-ignore-output"]
if bwlab.tier("tmem") == "hardware":
    for s in tmem.SHAPES:
        print(tmem.TmemLoad(TmemAccess(s, 8), image, 0).check())
else:
    print(f"TMEM tier is '{bwlab.tier('tmem')}': tcgen05 needs an sm_100-family GPU, so the round trip on "
          "the GPU is skipped. There this cell runs tmem.TmemLoad(access, image).check() for each shape (x8): "
          "tmem.run_ld_roundtrip on the GPU, every register compared with tmem.ld_roundtrip_model.")

# %% [markdown]
# ## 9. Try it
#
# Pick a shape, `.num`, pack and a warp (warps 4..7 map to the same quarters as 0..3):

# %% tags=["nbval-ignore-output"]
tmem.ld_widget()

# %% [markdown]
# ## 10. Peek under the hood: the PTX for sm_100a
#
# The wrappers of `cuda_src/ptx/tcgen05_ldst.cuh` (one per shape, num and pack; generated by
# `python -m bwlab.tmem header`) become single PTX instructions. The default instantiation of
# `tmem_ld_roundtrip` loads `.16x256b.x8`, twice per warp:

# %% tags=["nbval-ignore-output"]
from bwlab.compile import compile_cuda
built = compile_cuda("tmem_sm100", arch="sm_100a")
print(built.ptx_excerpt("tmem_ld_roundtrip", patterns=("tcgen05",)))

# %%
ptx = built.ptx_of("tmem_ld_roundtrip")
print("tcgen05.ld.sync.aligned.16x256b.x8.b32:", ptx.count("tcgen05.ld.sync.aligned.16x256b.x8.b32"),
      "  (expected 2: lanes +0 and +16 of the warp's quarter)")
print("tcgen05.wait::ld:", ptx.count("tcgen05.wait::ld"), "  (expected 2: one after each)")

# %% [markdown]
# ## What was checked, and how
#
# * The thread maps of all 74 forms (5 shapes x every num x pack) against CuTe's copy traits, evaluated
#   as layouts, and against the PTX ISA's mma fragment text; each map is a bijection onto the cells the
#   instruction touches (`tests/test_tmem_maps.py`).
# * All 148 round-trip kernels (ld and st, every form) assemble for sm_100a with NVRTC 12.9 and nvcc 13;
#   the forms `TmemAccess` refuses are exactly those ptxas refuses (`tests/test_tmem_kernels.py`).
# * The allocator's rules and errors (`tests/test_tmem.py`).
# * Every row of the ISA's tables for `tcgen05.alloc/dealloc/relinquish`, `tcgen05.ld/st` and
#   `tcgen05.cp` (`tmem.tables`, each row naming its section), and a sample of illegal forms refused with
#   the rule (`tests/test_tmem_tables.py`); the `tcgen05.cp` table agrees with ptxas.
# * Not checked here: the maps on real TMEM. That needs an sm_100-family GPU
#   (`python -m bwlab.validate tmem`, and the `sm100` tests).
