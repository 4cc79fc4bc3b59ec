# %% [markdown]
# # 04 · TMEM: allocation, addresses, and `tcgen05.ld` as a thread map
#
# The tensor core of stage 3 leaves the accumulator in **Tensor Memory** (TMEM), a per-SM memory of the
# GPUs with `tcgen05` (the PTX ISA lists sm_100a, sm_103a and sm_110a). Before the TMA store of stage 5
# can write D to global memory, the epilogue warps must bring it into registers with **`tcgen05.ld`**.
#
# **Before this notebook:** [03b · UMMA: the MMA and its shapes](03b_umma_mma.ipynb) (the accumulator
# `tcgen05.mma` writes into TMEM, and its layout: `D[m][n]` at lane *m*, column *n*). Warps, warpgroups
# (4 warps) and registers are assumed; mbarriers are not needed here.
#
# This notebook covers:
#
# 1. TMEM as a grid of 128 lanes x 512 columns of 32 bits;
# 2. allocation (`tcgen05.alloc` / `dealloc` / `relinquish_alloc_permit`) and its rules;
# 3. the TMEM address (lane in bits 31-16, column in bits 15-0);
# 4. warp quarters: which lanes a warp may touch;
# 5. **the teaching kernel**: allocate, `tcgen05.st`, `tcgen05.ld`, free, in 60 lines you can change;
# 6. the five `tcgen05.ld` shapes as thread maps, and the registers each thread receives;
# 7. which thread ends up holding `D[r][c]`; the accumulator read out; a widget.
#
# **Graded exercises:** this notebook holds 5 graded exercises (4.1 to 4.5, 8 points), each right after
# the section it practises: the TMEM address of a lane and column, which warp may access which lane, an
# edit of the teaching kernel, the registers of a `tcgen05.ld` form, and the thread and register that
# hold a cell. Each has an answer cell and a check cell; the check says what is wrong, and why.
#
# **Runs on:** TMEM exists only on sm_100-family GPUs; an H100 has none, and no GPU recording of this
# stage exists. Every kernel is compiled for sm_100a (ptxas checks each instruction); the first cell says
# what runs the TMEM stage here, and every result below is compared with the model.

# %% tags=["nbval-ignore-output"]
import bwlab
bwlab.banner()
bwlab.device.where("tmem", print_it=True);

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
#   and deallocate, without saying that the freeing warp must be the allocating one; the model lets
#   another warp free, with a note.)
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
tmem.plot_tmem(tm)
plt.show()

# %% [markdown]
# Where an allocation lands is not something a kernel may assume; it must use the address written to SMEM.
# (The model takes the lowest free range aligned to the allocation's size.) Every rule has an error that
# names it; the exception's full text also cites the PTX ISA section (9.7.16.7.1, "tcgen05.alloc,
# tcgen05.dealloc, tcgen05.relinquish_alloc_permit") or CuTe file it comes from. `tmem.attempt` prints
# the rule alone, and what the sources leave open as a note:

# %%
from bwlab.tmem import attempt

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
# ### Exercise 4.1 — the address of a lane and a column (1 point)
#
# Predict before you run: a warp holds `base`, the address `tcgen05.alloc` wrote to shared memory, and
# wants the cell at lane `lane`, `column` columns into that allocation. Write `my_taddr(base, lane, column)`:
# it returns the 32-bit TMEM address (section 3 has the rule). The check calls it on a few allocations,
# then on many more.

# %% nbgrader={"grade": false, "grade_id": "tmem_address", "locked": false, "schema_version": 3, "solution": true}
def my_taddr(base, lane, column):
    """The TMEM address of lane `lane`, `column` columns into the allocation whose address is `base`."""
    ### BEGIN SOLUTION
    return base + (lane << 16) + column
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "tmem_address_check", "locked": true, "points": 1, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.tmem import exercises as ex
ex.check_address(my_taddr)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_address(my_taddr, hidden=hidden_cases("tmem_address"))
### END HIDDEN TESTS

# %% [markdown]
# ## 4. Warp quarters
#
# A warp reaches only one quarter of the lanes: warp *w* of the CTA may access lanes
# **32·(w % 4) .. 32·(w % 4) + 31**. That is why epilogues use a warpgroup (4 warps) to read a 128-lane
# accumulator: each warp reads its own 32 rows.

# %%
tmem.plot_warp_quarters(warps=8)
plt.show()
img = tmem.pattern_image()
attempt("warp 1 loads lane 0", lambda: tmem.tcgen05_ld(img, tmem.encode_address(0, 0), "32x32b", 1, warp=1))
attempt("warp 5 loads lane 32", lambda: tmem.tcgen05_ld(img, tmem.encode_address(32, 0), "32x32b", 1, warp=5))


# %% [markdown]
# ### Exercise 4.2 — which warp may touch which lane (1 point)
#
# Write `my_may_access(warp, lane)`: `True` when warp `warp` of a CTA (any warp index, not only 0..3) may
# access TMEM lane `lane` with `tcgen05.ld`/`st`, else `False`. Predict first: may warp 6 read lane 70?

# %% nbgrader={"grade": false, "grade_id": "tmem_quarter", "locked": false, "schema_version": 3, "solution": true}
def my_may_access(warp, lane):
    """Whether warp `warp` of a CTA may access TMEM lane `lane`."""
    ### BEGIN SOLUTION
    return 32 * (warp % 4) <= lane < 32 * (warp % 4) + 32
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "tmem_quarter_check", "locked": true, "points": 1, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.tmem import exercises as ex
ex.check_quarter(my_may_access)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_quarter(my_may_access, hidden=hidden_cases("tmem_quarter"))
### END HIDDEN TESTS

# %% [markdown]
# ## 5. The teaching kernel
#
# Everything so far fits in one short kernel. One CTA of 128 threads (a warpgroup):
#
# 1. warp 0 allocates `kColumns` columns; the address lands in shared memory; the CTA gives up its
#    permit to allocate again;
# 2. `tcgen05.fence::before_thread_sync`, `__syncthreads`, `tcgen05.fence::after_thread_sync` publish
#    the allocation, and every thread reads the address from SMEM;
# 3. each warp addresses its own quarter: `lane0 = 32 * (warp % 4)`, `taddr = base + (lane0 << 16)`;
# 4. `tcgen05.st.32x32b.x8`: register *j* of thread *t* goes to lane `lane0 + t`, column *j*; each cell
#    receives its own `(lane << 16) | column`, so a value read back says where it was read;
#    `tcgen05.wait::st` before reading the cells back;
# 5. `tcgen05.ld.32x32b.x8` brings the same cells back, `tcgen05.wait::ld`, registers to global memory;
# 6. once every warp is done (fences around a barrier again), warp 0 frees the columns.
#
# Every `tcgen05` instruction here ends in `.sync.aligned`: all 32 threads of a warp execute it
# together. The branches on `warp` are warp-uniform (the warp index is broadcast from lane 0 with
# `__shfl_sync`, so the compiler knows it too). No mbarrier is needed: a warp waits for its own
# `tcgen05.st`/`ld` with `tcgen05.wait`, and the warps share nothing but the address. The whole kernel:

# %%
from bwlab.lab import TeachingKernel
k = TeachingKernel("teach_tmem.cu")
k.show()

# %% [markdown]
# `.32x32b` is the simplest `tcgen05.ld` shape: **thread *t* reads lane *t*** of the 32 lanes the
# address points at, and **register *j* is column *j***. With `.x8` each thread receives 8 registers,
# one row of 8 columns:

# %%
tmem.plot_ld_map(TmemAccess("32x32b", 8), warp=1)
plt.show()

# %% [markdown]
# The model follows the kernel: `tmem.teach_plan` reads `kColumns`, `kNum` and the `lane0` line from its
# text, and `tmem.teach_model` replays it on `TensorMemory` (alloc, relinquish, each warp's st and ld,
# dealloc, exit), with every rule of sections 2-4 checked. Warp 1, thread 3 reads lane 32 + 3 = 35:

# %%
print(tmem.teach_plan(k))
regs = tmem.teach_model(k)           # (warp, load, thread, register)
print("warp 1, thread 3:", " ".join(f"{v:#010x}" for v in regs[1, 0, 3]))
print("expected:        ", " ".join(f"{(35 << 16) | j:#010x}" for j in range(8)),
      "  (lane 35 in bits 31-16, columns 0..7)")

# %% [markdown]
# `tmem.teach_case(k)` is the `.32x32b.x8` load of the stage's model (`TmemLoad`) run by the kernel `k`:
# on an sm_100 GPU (or in the PTX emulator) its `run()` launches the kernel and returns the same array,
# and `check()` / `results()` compare it with the model register by register. Here the model's replay
# of the kernel is checked against that same case, and the kernel is compiled for sm_100a:

# %%
print(tmem.teach_case(k).check(regs, source="the kernel replayed on the model"))
built = k.compile("sm_100a")
print("compiled for sm_100a:", built.kernels(), "  (expected ['teach_tmem'])")

# %% tags=["nbval-ignore-output"]
print(tmem.teach_case(k).results())   # an sm_100 GPU, or the kernel's PTX in bwlab's emulator

# %% [markdown]
# ### Peek under the hood
#
# Each wrapper of `cuda_src/ptx/tcgen05.cuh` and `tcgen05_ldst.cuh` is one PTX instruction; the PTX of
# the kernel, in order:

# %% tags=["nbval-ignore-output"]
print(built.ptx_excerpt("teach_tmem", patterns=("tcgen05", "bar.sync", "shfl")))

# %% [markdown]
# and what ptxas made of it for sm_100a (the SASS, where the tools to print it are installed): `STTM.x8`
# and `LDTM.x8` are the store and the load, each one instruction for the warp; `UTCATOMSWS` appears
# where alloc (`FIND_AND_SET`) and dealloc (`AND`) stand; the address sits in a uniform register (`UR5`),
# one value for the whole warp. The one `tcgen05.alloc` becomes two `FIND_AND_SET`: a first try, then a
# retry loop behind a `NANOSLEEP` that runs until the columns are free. That loop is how an allocation
# that does not fit *blocks* (section 2).

# %% tags=["nbval-ignore-output"]
print(tmem.teach_sass(k) or "(cuobjdump / nvdisasm not installed here: no SASS)")

# %% [markdown]
# ### Change it
#
# `tmem.try_teach(kernel)` does with an edited kernel what a learner wants to know: compiles it for
# sm_100a (errors shown on your line), reads its plan, replays it on the model (or names the rule it
# breaks) and, on an sm_100 GPU, runs it and checks it against the model. Edit with
# `k.replace(old, new)`, or paste the kernel into a cell that starts with `%%cuda teach_tmem.cu`
# (after `%load_ext bwlab.lab`): `tmem.try_teach()` then takes your version.
#
# **A wider load.** `kNum = 16`: each thread now receives 16 registers, 16 columns. The allocation of 32
# columns still holds them:

# %%
wider = k.replace("constexpr int kNum = 8;", "constexpr int kNum = 16;")
_ = tmem.try_teach(wider)
tmem.plot_ld_map(tmem.teach_plan(wider).access, warp=1)
plt.show()

# %% [markdown]
# Predict before you run: `kNum = 64` with `kColumns = 32`, or `kColumns = 48`. (The model refuses
# both; which rule does each break?)
#
# **The wrong quarter.** Shift every warp by one quarter: warp 0 addresses lanes 32..63. The compiler
# cannot know which lanes a warp may reach (the address is a run-time value), so the kernel compiles;
# the model names the rule. On the GPU the ISA leaves the access undefined, so `try_teach` does not
# launch an edit the model refuses:

# %%
_ = tmem.try_teach(k.replace("32 * (warp % 4)", "32 * ((warp + 1) % 4)"))

# %% [markdown]
# **A compile error.** Call the `.x16` wrapper on the 8-register array: the wrappers take a register
# array of exactly the size the instruction fills, so the compiler stops at your line:

# %%
_ = tmem.try_teach(k.replace("tcgen05_ld_32x32b<kNum>(r, taddr);", "tcgen05_ld_32x32b_x16(r, taddr);"))

# %% [markdown]
# ### Exercise 4.3 — your columns per thread: your two numbers go into the teaching kernel (2 points)
#
# An epilogue warp of an f32 accumulator wants the first N columns of each of its lanes in one load, N being
# your own number (printed below: each student has theirs). You do not edit the kernel's text yourself: choose
# `my_kNum`, the `.num` of the kernel's `tcgen05.st` and `tcgen05.ld .32x32b`, and `my_kColumns`,
# the column count of its `tcgen05.alloc`: the smallest allocation that holds those columns.
# Predict before you run what a `.num` larger than the allocation, a `.num` that is not a power of two, or an
# allocation of 96 columns would do.
#
# The check writes your two numbers into `teach_tmem.cu` (`constexpr u32 kColumns = ...;`,
# `constexpr int kNum = ...;`) and compiles it for sm_100a: a compile error shows your line. It then
# replays the kernel on the model, which names any rule your numbers break, and compares every register with
# a `.32x32b` load of your columns, naming the first that differs. On an sm_100 GPU it also runs your kernel,
# in a worker process.

# %% nbgrader={"grade": false, "grade_id": "tmem_kernel_columns", "locked": false, "schema_version": 3, "solution": true}
from bwlab.tmem import exercises as ex
print("your columns per thread:", ex.wide_columns())
my_kNum = None       # the .num of tcgen05.st/ld .32x32b in teach_tmem.cu (an int)
my_kColumns = None   # the column count of its tcgen05.alloc (an int)
### BEGIN SOLUTION
my_kNum = ex.wide_columns()              # one register per column: .x<columns>
my_kColumns = 32                         # the smallest allocation: a power of two, at least 32 ...
while my_kColumns < my_kNum:             # ... that holds every column the loads touch
    my_kColumns *= 2
### END SOLUTION

# %% nbgrader={"grade": true, "grade_id": "tmem_kernel_columns_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["nbval-ignore-output", "raises-exception"]
from bwlab.tmem import exercises as ex
ex.check_wide_load(my_kNum, my_kColumns)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_wide_load(my_kNum, my_kColumns, hidden=hidden_cases("tmem_kernel_columns"))
### END HIDDEN TESTS

# %% [markdown]
# ## 6. The five `tcgen05.ld` shapes
#
# `tcgen05.ld.sync.aligned.<shape>.<num>[.pack::16b].b32 {regs}, [taddr]` is executed by a whole warp.
# The shape says how many lanes one instruction touches and how many bits of each lane (`16x256b`: 16
# lanes x 256 bits = 8 columns); `.16x32bx2` is two half-warps, each over the same 16 lanes x 32 bits.
# `.num` (x1 .. x128) repeats that pattern to the right. Every register is 32 bits, and the 32 threads
# of the warp share the bits evenly. `.pack::16b` puts the low 16 bits of two neighbouring 32-bit cells
# into one register: the instruction's register count stays the same, and it covers twice the columns
# (an f16 accumulator keeps one value per 32-bit cell, so reading a row of it packed takes half the
# registers an unpacked read of the same columns takes).

# %% [markdown]
# ### Exercise 4.4 — registers per thread (1 point)
#
# Write `my_registers(shape, num, pack16=False)`: the 32-bit registers each thread of the warp receives
# from `tcgen05.ld.<shape>.x<num>`, with `.pack::16b` when `pack16`. Work it out from the shape's lanes
# and bits, spread over 32 threads; the table after this exercise lists them. The check calls it on
# every form the ISA allows.

# %% nbgrader={"grade": false, "grade_id": "tmem_registers", "locked": false, "schema_version": 3, "solution": true}
def my_registers(shape, num, pack16=False):
    """Registers per thread of tcgen05.ld.<shape>.x<num>[.pack::16b]; shape like "16x256b"."""
    ### BEGIN SOLUTION
    if shape == "16x32bx2":
        return num                                  # two half-warps, 16 lanes x 32 bits each
    lanes, bits = (int(x) for x in shape[:-1].split("x"))
    return lanes * bits // 32 // 32 * num           # bits of one instruction / 32 threads / 32 bits
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "tmem_registers_check", "locked": true, "points": 1, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.tmem import exercises as ex
ex.check_registers(my_registers)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_registers(my_registers, hidden=hidden_cases("tmem_registers"))
### END HIDDEN TESTS

# %% [markdown]
# The table: registers per thread = num x {1, 1, 2, 4, 1} for the five shapes (`.pack::16b` the same); at
# most 128, so `.16x128b` stops at x64 and `.16x256b` at x32 (ptxas rejects the rest, and so does
# `TmemAccess`):

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
# `SM100_TMEM_LOAD_*` copy traits for every shape, num and pack:
#
# * `.32x32b` — thread *t* reads lane *t*; register *j* is column *j*;
# * `.16x64b` — 16 lanes x 2 columns, 1 register: thread *t* reads lane t/4 + 8·(t%2), column (t/2)%2;
# * `.16x128b` — 16 lanes x 4 columns, 2 registers: register 0 is lane t/4, register 1 lane t/4 + 8,
#   both at column t%4;
# * `.16x256b` — 16 lanes x 8 columns, 4 registers (the `mma.m16n8` accumulator fragment): register *j*
#   is lane t/4 + 8·(j/2), column 2·(t%4) + j%2;
# * `.16x32bx2` — two half-warps over the same 16 lanes; the second half starts an immediate number of
#   columns to the right (`immHalfSplitoff`; here, as in CuTe, right after the first).
#
# With `.xN` the x1 pattern repeats N times to the right: repetition *i* (0 .. N-1) lies *i* x1-widths
# further right, and its registers follow those of the one before (register *j* of repetition *i* is
# register i·R + j, where R is the x1 count above).

# %%
tmem.plot_gallery(num=1)
plt.show()

# %% [markdown]
# `.num` repeats the pattern along the columns, and `.pack::16b` packs two neighbouring cells into each
# register, so the same registers cover twice the columns:

# %%
tmem.plot_ld_map(TmemAccess("16x128b", 2), warp=0)
plt.show()
tmem.plot_ld_map(TmemAccess("16x64b", 2, pack16=True), warp=0)
plt.show()

# %% [markdown]
# ## 7. Who holds `D[r][c]`?
#
# An epilogue warpgroup reads the 128 x N accumulator with one shape: warp *w* covers lanes 32w..32w+31
# (two loads for a 16-lane shape) and the columns in chunks of the instruction's width. The accumulator of
# the UMMA notebook (M = 128, `cta_group::1`) keeps `D[m][n]` at lane *m*, column *n*: layout D of the
# PTX ISA's tcgen05 "Data path layout organization", which names each way an MMA's D can sit in TMEM with
# a letter (`bwlab.umma.d_tmem_layout`). So the thread that holds
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
tmem.plot_accumulator_owners(acc, 128, N, highlight=(r, c))
plt.show()


# %% [markdown]
# ### Exercise 4.5 — which thread and register hold a cell (3 points)
#
# Write `my_holder(shape, num, lane, column)` for the shapes `.32x32b`, `.16x64b`, `.16x128b` and
# `.16x256b` (no pack): after one `tcgen05.ld.<shape>.x<num>`, which thread of the warp, and which of its
# registers, holds the cell at `lane`, `column`, both counted from the address the warp passed
# (`lane` < 32 or 16, `column` < the instruction's width)? Return `(thread, register)`. The rules are
# in section 6; the example above is `my_holder("16x256b", 8, 5, 13) == (22, 5)` (lane 37 is lane 5 of
# warp 1's first 16-lane block). The check calls it on cells of every shape, then on many more with
# every `.num`.

# %% nbgrader={"grade": false, "grade_id": "tmem_holder", "locked": false, "schema_version": 3, "solution": true}
def my_holder(shape, num, lane, column):
    """(thread, register) holding cell (lane, column) of one tcgen05.ld.<shape>.x<num>."""
    ### BEGIN SOLUTION
    if shape == "32x32b":
        return lane, column
    if shape == "16x64b":        # lane t/4 + 8*(t%2), column (t/2)%2 + 2j
        return 4 * (lane % 8) + 2 * (column % 2) + lane // 8, column // 2
    if shape == "16x128b":       # lane t/4 + 8*(j%2), column t%4 + 4*(j/2)
        return 4 * (lane % 8) + column % 4, lane // 8 + 2 * (column // 4)
    # 16x256b: lane t/4 + 8*((j/2)%2), column 2*(t%4) + j%2 + 8*(j/4)
    return 4 * (lane % 8) + (column % 8) // 2, column % 2 + 2 * (lane // 8) + 4 * (column // 8)
    ### END SOLUTION


# %% nbgrader={"grade": true, "grade_id": "tmem_holder_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.tmem import exercises as ex
ex.check_holder(my_holder)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_holder(my_holder, hidden=hidden_cases("tmem_holder"))
### END HIDDEN TESTS

# %% [markdown]
# ## 8. The accumulator, read out
#
# `tcgen05.ld` is **asynchronous**: the instruction returns before the registers are filled, and a warp
# must execute `tcgen05.wait::ld` before it reads them (the teaching kernel does, step 5). The model's
# `tcgen05_ld` hands back finished registers, so it cannot show that race.
#
# The accumulator here came from:

# %% tags=["nbval-ignore-output"]
print(source)

# %% [markdown]
# Every 32-bit shape that tiles 64 columns reads it back exactly through the model (each warp issues its
# loads, and every register is put back at the (m, n) it holds). In `.16x32bx2.x32, 32` the `, 32` is
# the instruction's immediate half-split offset: the second half-warp reads 32 columns to the right of
# the first, right after it:

# %%
print(f"{'form':18s} {'loads/warp':>10s} {'regs/thread':>12s}  D read back == D")
for s in tmem.SHAPES:
    acc = TmemAccess(s, N // TmemAccess(s, 1).width)      # the .num whose loads are N columns wide
    words, regs = tmem.read_accumulator(image, acc, 128, N)
    same = np.array_equal(words.view(np.float32).astype(np.float64), D)
    print(f"{acc.label():18s} {len(regs) // 4:10d} {acc.registers:12d}  {same}   (expected True)")

# %% [markdown]
# On an sm_100 GPU the validation kernels of `cuda_src/tmem_sm100.cu` (`tmem_ld_roundtrip`, one
# instantiation per form) put this image into real TMEM with `tcgen05.st` and bring it back through each
# real `tcgen05.ld`; `TmemLoad.check()` compares every register with the model. What can be shown here:
# the model's registers for each shape at `.x8`, and the kernels, checked against the ISA's tables and
# compiled for sm_100a (ptxas accepts each form). Register r0 of thread 5 of warp 1 (lanes 32..63) is
# expected at the cell the rules of section 6 give for t = 5, and to hold the bits of D there
# (`, 8` is again the half-split offset):

# %%
t = 5
expect_cell = {"32x32b": (32 + t, 0), "16x64b": (32 + t // 4 + 8 * (t % 2), (t // 2) % 2),
               "16x128b": (32 + t // 4, t % 4), "16x256b": (32 + t // 4, 2 * (t % 4)), "16x32bx2": (32 + t, 0)}
forms = [TmemAccess(s, 8) for s in tmem.SHAPES]
built_rt = tmem.compile_kernels(accesses=forms)
for acc in forms:
    case = tmem.TmemLoad(acc, image, 0)
    got = case.model()
    (lane, col), = case.cells(1, 0, t, 0)
    el, ec = expect_cell[acc.shape]
    n_ld = built_rt.ptx_of(tmem.kernel_name("ld", acc)).count(f"tcgen05.ld.sync.aligned.{acc.shape}.x8.")
    print(f"{acc.label():16s} {str(got.shape):15s} r0 = {got[1, 0, t, 0]:#010x} = lane {lane}, column {col}  "
          f"(expected lane {el}, column {ec}: D[{el}][{ec}] = {np.float32(D[el, ec]).view(np.uint32):#010x}); "
          f"PTX: {n_ld} x tcgen05.ld")

# %% tags=["nbval-ignore-output"]
for acc in forms:
    print(tmem.TmemLoad(acc, image, 0).results())

# %% [markdown]
# The load under test, in the PTX of `tmem_ld_roundtrip` for `.16x256b.x8`: twice per warp (its 16-lane
# shape covers half of the warp's quarter), each followed by `tcgen05.wait::ld`; the `.32x32b.x32` stores
# before them fill TMEM:

# %% tags=["nbval-ignore-output"]
rt = tmem.kernel_name("ld", TmemAccess("16x256b", 8))
print(built_rt.ptx_excerpt(rt, patterns=("tcgen05.ld", "tcgen05.wait", "tcgen05.st")))

# %%
ptx = built_rt.ptx_of(rt)
print("tcgen05.ld.sync.aligned.16x256b.x8.b32:", ptx.count("tcgen05.ld.sync.aligned.16x256b.x8.b32"),
      "  (expected 2: lanes +0 and +16 of the warp's quarter)")
print("tcgen05.wait::ld:", ptx.count("tcgen05.wait::ld"), "  (expected 2: one after each)")

# %% [markdown]
# ## 9. Try it
#
# Pick a shape, `.num` (only the values the ISA allows for that shape), pack and a warp. Warps 4..7 use
# the same lane quarters as 0..3: the picture changes only in the lanes named on its axis.

# %% tags=["nbval-ignore-output"]
tmem.ld_widget()

# %% [markdown]
# ## What was checked, and how
#
# * The thread maps of all 74 forms (5 shapes x every num x pack) agree with CuTe's copy traits, evaluated
#   as layouts, and with the PTX ISA's mma fragment text; each map is a bijection onto the cells the
#   instruction touches.
# * All 148 round-trip kernels (ld and st, every form) assemble for sm_100a; the forms `TmemAccess`
#   refuses are exactly those ptxas refuses.
# * The allocator follows the rules of `tcgen05.alloc/dealloc/relinquish` and names the one an illegal
#   request breaks.
# * The teaching kernel compiles for sm_100a; its replay on the model equals the `.32x32b` load of the
#   stage's model, and edits that break a rule are refused naming it.
# * Every row of the ISA's tables for `tcgen05.alloc/dealloc/relinquish`, `tcgen05.ld/st` and
#   `tcgen05.cp` is in `tmem.tables`, each row naming its section; illegal forms are refused with the
#   rule; the `tcgen05.cp` table agrees with ptxas.
# * Not checked here: the maps on real TMEM. That needs an sm_100-family GPU
#   (`python -m bwlab.validate tmem`, and the `sm100` tests), and so does the teaching kernel's run.

# %% [markdown]
# ## Recap
#
# * TMEM is 128 lanes x 512 columns of 32 bits per SM; one warp allocates a power of two of columns
#   (32..512), the address comes back through shared memory, and one warp of the CTA frees it before the CTA exits
#   (the ISA does not require it to be the warp that allocated).
# * A TMEM address is lane << 16 | column; a warp reaches only lanes 32·(warp % 4) .. +31, so a
#   warpgroup reads a 128-lane accumulator, one quarter per warp.
# * `tcgen05.ld.<shape>.x<num>` is a thread map: `.32x32b` gives thread *t* lane *t*, register *j*
#   column *j*; the 16-lane shapes spread a 16-lane block over the warp as the `mma` fragments do.
# * `tcgen05.ld` and `tcgen05.st` are asynchronous: `tcgen05.wait::ld` / `::st` before the registers /
#   the cells are used; each of them is `.sync.aligned`, executed by the whole warp together.
#
# **Next:** [05 · TMA store](05_tma_store.ipynb) takes the registers the epilogue warps now hold through
# shared memory to global memory with a TMA store.
