# %% [markdown]
# # 03a · UMMA, part 1: descriptors and the canonical SMEM layouts
#
# The third hop of the data path: the 5th-generation tensor core reads A and B from **shared memory**
# and writes the accumulator D into **Tensor Memory** with `tcgen05.mma`. Before the instruction can
# run, three things must be right, and this notebook takes them one at a time: the **canonical
# layouts** the operands must sit in, the two 64-bit **SMEM descriptors** (SM100's and Hopper's SM90
# form) that tell the tensor core where they are, and the 32-bit **instruction descriptor** (idesc)
# that says what to compute; last, the descriptor's **base offset** field, as an H100 pinned it down.
# Every encoding is computed by bwlab's encoders and compared with the value CuTe gives or with the
# fields assembled by hand. Notebook 03b then runs the MMA itself: its shapes, the K loop, `wgmma` on
# Hopper, and where D lands in TMEM.
#
# **Before this notebook:** [01 · TMA load](01_tma_load.ipynb) (the swizzle modes: the tensor core
# reads the same patterns TMA writes). You should know what a warp and a warpgroup (4 warps,
# 128 threads) are.
#
# **Runs on:** any machine. Every cell here is bwlab's layout functions and encoders in Python; no
# kernel is launched. The last section shows what an H100 printed when it validated the descriptors.
#
# **Exercises: 3 graded exercises (8 points)**, each right after the section it draws on: predict, or
# write a small function, then run the check below it, which says what is wrong and why. Exercises 3.2
# and 3.3 ask you to encode a descriptor; a fully worked encoding of another case comes just before each.

# %% tags=["nbval-ignore-output"]
import bwlab
bwlab.banner();

# %%
import matplotlib.pyplot as plt
from bwlab import umma
from bwlab.hw.swizzle import MODES

# %% [markdown]
# ## Core matrices and the eight canonical layouts
#
# The tensor core fetches operands in **core matrices**: 8 rows of 16 bytes (8 f16 values). A
# **K-major** operand has its rows along K (K is contiguous, like a row-major A); an **MN-major** one
# along M or N. Core matrices are grouped into **swizzle atoms** of 8 rows x W bytes (W = 16, 32, 64,
# 128 for no swizzle and the 32/64/128-byte swizzles), and atoms tile the operand along MN first,
# then K. In CuTe's words: a *layout* maps a coordinate (here (m, k)) to an offset; an *atom* is the
# smallest layout that repeats (`Layout_K_SW128_Atom<T>`); `tile_to_shape(atom, shape)` repeats it
# until it covers the tile; `Swizzle<B,M,S>` XORs B bits of the offset, taken S bits higher, into
# the bits from M up (the 128-byte swizzle is `Swizzle<3,4,3>` on byte offsets).

# %%
umma.plot_core_matrices("K", "f16", (16, 32))
plt.show()

# %% [markdown]
# Which element sits at which byte, for a 16 x 64 (K-major) or 64 x 16 (MN-major) f16 tile: each cell
# is a 16-byte chunk of shared memory labelled with the row `m` and the first `k` it holds. Each panel
# shows the first 1024 bytes of the 2048-byte tile, and each layout puts a different half of the tile
# there. Without a swizzle every 128-byte line is one core matrix (8 rows, the same 8 K values), the
# next 8 rows follow 128 bytes on (SBO) and the next 16 bytes of K of a row sit 256 bytes further, two
# lines down (LBO = 256 here); with a swizzle, chunk c of a 128-byte line moves to c XOR (line mod 2, 4
# or 8) — the same pattern TMA writes (notebook 01).

# %%
umma.plot_canonical_layouts("K")
plt.show()

# %% [markdown]
# MN-major, the same four swizzles: now a 16-byte chunk holds 8 consecutive rows (m) of one K.

# %%
umma.plot_canonical_layouts("MN")
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
# The first K slice of a 128 x 64 f16 tile in the 128-byte swizzle, as CuTe's `make_umma_desc`
# (SM100) and `make_gmma_desc` (SM90) encode it:

# %%
for arch, expected in (("sm100", 0x4000404000010000), ("sm90", 0x4000004000010000)):
    d = umma.tile_desc("K", "128B", "f16", (128, 64), 0, 0, arch)
    print(umma.format_fields(d.fields(), f"{arch}: {d.encode():#018x}   expected {expected:#018x}"))
    print()


# %% [markdown]
# ### Exercise 3.1 — LBO and SBO of a K-major tile (2 points)
#
# Write `lbo_sbo_of(swizzle, rows)`: the (LBO, SBO) pair, in bytes, of the first K slice of a
# K-major f16 tile of `rows` x 64 (rows a multiple of 16) in the SMEM layout `swizzle` (`"none"`,
# `"32B"`, `"64B"` or `"128B"`), as CuTe's `make_umma_desc` encodes it. Predict first: which of the
# two depends on `rows`, and for which layout? The pictures of the canonical layouts above show the
# steps. The check tries one tile in each layout; the graded run tries every layout with 16 to 256 rows.

# %% nbgrader={"grade": false, "grade_id": "mma_lbo_sbo", "locked": false, "schema_version": 3, "solution": true}
def lbo_sbo_of(swizzle, rows):
    """(LBO, SBO) in bytes of a K-major f16 tile of rows x 64."""
    lbo_sbo = None   # your answer: a pair of ints (LBO, SBO)
    ### BEGIN SOLUTION
    width = {"none": 16, "32B": 32, "64B": 64, "128B": 128}[swizzle]   # bytes per row of the atom
    sbo = 8 * width                                     # the next 8-row group: one atom further
    lbo = (rows // 8) * 128 if swizzle == "none" else 16   # the next 16 bytes of K; unused if swizzled
    lbo_sbo = (lbo, sbo)
    ### END SOLUTION
    return lbo_sbo


# %% nbgrader={"grade": true, "grade_id": "mma_lbo_sbo_check", "locked": true, "points": 2, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.umma import exercises as ex
ex.check_lbo_sbo(lbo_sbo_of)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_lbo_sbo(lbo_sbo_of, hidden=hidden_cases("mma_lbo_sbo"))
### END HIDDEN TESTS

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
# ### A worked encoding: one SM100 descriptor, field by field
#
# An operand at SMEM byte 4608 with LBO 2048 bytes, SBO 256 bytes, base offset 0 and the 32-byte
# swizzle. Each field is placed by hand below (its bits, its value, the value shifted into place);
# their OR is the expected descriptor, printed beside what `umma.make_smem_desc` encodes:

# %%
start, lbo, sbo, swizzle = 4608, 2048, 256, "32B"
by_hand = [("0-13", "start address >> 4", start >> 4, 0),
           ("16-29", "LBO >> 4", lbo >> 4, 16),
           ("32-45", "SBO >> 4", sbo >> 4, 32),
           ("46-48", "fixed value 0b001", 1, 46),
           ("49-51", "base offset", 0, 49),
           ("52", "LBO mode (relative)", 0, 52),
           ("61-63", f"swizzling mode ({swizzle})", 6, 61)]
expected = 0
for bits, name, value, shift in by_hand:
    expected |= value << shift
    print(f"bits {bits:>5s}  {name:24s} = {value:4d}  -> {value << shift:#018x}")
encoded = umma.make_smem_desc(start, lbo, sbo, swizzle, arch="sm100")
print(f"make_smem_desc: {encoded:#018x}   expected (the OR above) {expected:#018x}   equal: {encoded == expected}")


# %% [markdown]
# ### Exercise 3.2 — encode an SM100 SMEM descriptor (3 points)
#
# Write `sm100_desc_of(start, lbo, sbo, swizzle)`: the 64-bit `tcgen05` descriptor (an int) of an
# operand at SMEM byte address `start` with the byte offsets `lbo` and `sbo`, base offset 0, and the
# layout `swizzle` (`"none"`, `"128B_base32B"`, `"128B"`, `"64B"` or `"32B"`). The field table above is
# the whole rule; do not call `umma.make_smem_desc` — the point is to place the bits yourself.
# Predict first: which bits of `sbo` survive?

# %% nbgrader={"grade": false, "grade_id": "mma_smem_desc", "locked": false, "schema_version": 3, "solution": true}
def sm100_desc_of(start, lbo, sbo, swizzle):
    """The 64-bit SM100 shared-memory descriptor."""
    desc = None   # your answer: an int
    ### BEGIN SOLUTION
    code = {"none": 0, "128B_base32B": 1, "128B": 2, "64B": 4, "32B": 6}[swizzle]
    desc = ((start >> 4) & 0x3FFF) | ((lbo >> 4) & 0x3FFF) << 16 | ((sbo >> 4) & 0x3FFF) << 32
    desc |= 1 << 46          # bits 46-48: the fixed value 0b001
    desc |= code << 61       # bits 61-63: the swizzling mode
    ### END SOLUTION
    return desc


# %% nbgrader={"grade": true, "grade_id": "mma_smem_desc_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.umma import exercises as ex
ex.check_smem_desc(sm100_desc_of)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_smem_desc(sm100_desc_of, hidden=hidden_cases("mma_smem_desc"))
### END HIDDEN TESTS

# %% [markdown]
# ### The instruction descriptor
#
# 32 bits: the types of A, B and D, the majors (the "transpose" bits), negation, N >> 3 and M >> 4.
# CuTe's `make_instr_desc<half_t, half_t, float, 128, 256, K, K>` gives 0x08400010:

# %%
idesc = umma.make_instr_desc("f16", "f16", "f32", 128, 256)
print(umma.format_fields(umma.decode_instr_desc(idesc).fields(), f"idesc = {idesc:#010x}   expected 0x08400010"))

# %% [markdown]
# ### A worked encoding: one instruction descriptor, field by field
#
# bf16 A and B into an f32 D, M = 128, N = 96, A MN-major, B K-major. Each field placed by hand (its
# bits, its value, the value shifted into place); their OR is the expected idesc, printed beside what
# `umma.make_instr_desc` encodes. The fields this case leaves at 0 (sparsity, saturate, negation, the
# `.ws` shift) are listed too:

# %%
M, N = 128, 96
by_hand = [("0-3", "sparsity, saturate (dense)", 0, 0),
           ("4-5", "D format (f32)", 1, 4),
           ("7-9", "A format (bf16)", 1, 7),
           ("10-12", "B format (bf16)", 1, 10),
           ("13-14", "negate A, negate B", 0, 13),
           ("15", "A MN-major", 1, 15),
           ("16", "B MN-major (K-major)", 0, 16),
           ("17-22", "N >> 3", N >> 3, 17),
           ("24-28", "M >> 4", M >> 4, 24),
           ("30-31", "max shift (.ws only)", 0, 30)]
expected = 0
for bits, name, value, shift in by_hand:
    expected |= value << shift
    print(f"bits {bits:>5s}  {name:27s} = {value:3d}  -> {value << shift:#010x}")
encoded = umma.make_instr_desc("bf16", "bf16", "f32", M, N, "MN", "K")
print(f"make_instr_desc: {encoded:#010x}   expected (the OR above) {expected:#010x}   equal: {encoded == expected}")


# %% [markdown]
# ### Exercise 3.3 — the instruction descriptor of an MMA (3 points)
#
# Write `idesc_of(ab, d, M, N, a_major, b_major)`: the 32-bit instruction descriptor of a dense
# `tcgen05.mma.cta_group::1` with A and B of type `ab` (`"f16"`, `"bf16"` or `"tf32"`), D of type `d`
# (`"f16"` or `"f32"`), shape M x N, and each operand `"K"`- or `"MN"`-major. The field table above is
# the rule (type codes: A/B f16 0, bf16 1, tf32 2; D f16 0, f32 1). Predict first: what changes between
# 128 x 256 and 64 x 64, and where? The graded run tries legal shapes, types and majors of its own.

# %% nbgrader={"grade": false, "grade_id": "mma_instr_desc", "locked": false, "schema_version": 3, "solution": true}
def idesc_of(ab, d, M, N, a_major, b_major):
    """The 32-bit tcgen05.mma instruction descriptor (dense, cta_group::1)."""
    idesc_value = None   # your answer: an int
    ### BEGIN SOLUTION
    ab_code = {"f16": 0, "bf16": 1, "tf32": 2}[ab]
    d_code = {"f16": 0, "f32": 1}[d]
    idesc_value = (d_code << 4) | (ab_code << 7) | (ab_code << 10)
    idesc_value |= (a_major == "MN") << 15 | (b_major == "MN") << 16
    idesc_value |= (N >> 3) << 17 | (M >> 4) << 24
    ### END SOLUTION
    return idesc_value


# %% nbgrader={"grade": true, "grade_id": "mma_instr_desc_check", "locked": true, "points": 3, "schema_version": 3, "solution": false} tags=["raises-exception"]
from bwlab.umma import exercises as ex
ex.check_instr_desc(idesc_of)
### BEGIN HIDDEN TESTS
from bwlab.exercises import hidden_cases
ex.check_instr_desc(idesc_of, hidden=hidden_cases("mma_instr_desc"))
### END HIDDEN TESTS

# %% [markdown]
# Invalid combinations are refused before anything reaches a GPU, naming the rule:

# %%
for args in [("f16", "f16", "f32", 256, 128), ("bf16", "bf16", "f16", 128, 128), ("f16", "f16", "f32", 128, 100)]:
    try:
        umma.make_instr_desc(*args)
    except ValueError as e:
        print(f"{args}: {e}")

# %% [markdown]
# Try it: pick a layout and see both descriptors (the first line says which fields your change
# moved, or why none did; hover over a menu for what it controls), or paste a descriptor to decode
# it; and build an instruction descriptor. The menus offer legal values only. The widgets need a
# live kernel: run the cell.

# %% tags=["nbval-ignore-output"]
umma.descriptor_widget();

# %% tags=["nbval-ignore-output"]
umma.instr_desc_widget();

# %% [markdown]
# ## The base offset
#
# The descriptor's **base offset** field (bits 49-51) matters only for a swizzled tile that does not
# start on its pattern's 256/512/1024-byte boundary. The tensor core XORs the 16-byte chunk bits of an
# address with its 128-byte row bits counted from the start of the pattern, ((address >> 7) − base
# offset) mod 2, 4 or 8. So base offset 0 reads such a tile with the pattern TMA wrote at its absolute
# address, and base offset = (start >> 7) & 7 reads it as if the pattern began at the tile
# (`umma.swizzle_with_base_offset`). A 128-byte-swizzled tile starting at byte 640, five rows past a
# 1024-byte boundary: where chunk 1 of its first rows is read from, with both base offsets:

# %%
start = 640
for row in range(3):
    addr = start + 128 * row + 16                   # chunk 1 of the tile's row `row`
    for bo in (0, (start >> 7) & 7):
        chunk = 1 ^ (((addr >> 7) - bo) % 8)        # the chunk bits XOR the row counted from the pattern
        by_hand = (addr & ~0x70) | (chunk << 4)
        got = int(umma.swizzle_with_base_offset("128B", addr, bo))
        print(f"row {row}, base offset {bo}: byte {got:4d}   expected {by_hand:4d}")

# %% [markdown]
# When `python -m bwlab.validate wgmma` ran all 128 combinations of layout and swizzle for A and B
# (f16 and bf16) through `wgmma` on the H100 (Hopper reads SMEM through the same layouts and the SM90
# form of the descriptor), it printed the lines below. The same run also placed swizzled A tiles off
# their pattern boundary, with base offset 0 and with (start >> 7) & 7, to pin this reading down:

# %%
from bwlab.results import report_text
report = report_text("wgmma_validate_h100.txt").splitlines()
print("\n".join(l for l in report if l.startswith(("regular", "wgmma validation", "NVIDIA"))))
off = next(l for l in report if l.startswith("exploratory: model exact on"))
print(f"tiles off their pattern boundary, base offset 0 or (start >> 7) & 7: the model's reading exact on "
      f"{off.split('exact on ')[1].split(';')[0]}  (expected 12/12)")

# %% [markdown]
# ## Recap
#
# - A and B reach the tensor core from SMEM in one of the canonical layouts: core matrices of
#   8 rows x 16 bytes, grouped into swizzle atoms, tiled MN first, then K.
# - A 64-bit SMEM descriptor gives the start address, LBO, SBO, the base offset and the swizzle code;
#   the tensor core walks the layout from there. LBO is unused in swizzled K-major layouts. SM100's
#   form adds the fixed value 0b001 (bits 46-48), the LBO mode bit (52) and a 3-bit swizzle code
#   (61-63) to SM90's.
# - The 32-bit instruction descriptor gives the types, M, N and the major of each operand.
# - The base offset says where a swizzle pattern starts when a tile is not on its boundary.
#
# **Next:** [03b · UMMA, part 2: the MMA and its shapes](03b_umma_mma.ipynb) — the shapes
# `tcgen05.mma` takes, the K loop, whole kernels for `wgmma` (Hopper) and `tcgen05.mma` (Blackwell), and
# where D lands in TMEM.
